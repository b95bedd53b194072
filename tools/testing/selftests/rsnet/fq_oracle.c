// SPDX-License-Identifier: GPL-2.0
/*
 * fq_oracle: a differential oracle for the fq qdisc, in virtual time. It
 * plays a seeded pseudo-random script of operations on one of the two
 * oracle-only builds of fq, C's (sch_fq_vt.ko, the tree's own
 * net/sched/sch_fq.c) or Rust's (sch_fq_rs_vt.ko, net/sched/sch_fq_rs.rs),
 * whose clock is fq_vclock.ko's: the script sets the time both read
 * (ktime_get_ns() and jiffies) and fires the watchdog they arm. Everything
 * observable is folded into a hash per seed; fq_oracle.sh loads the module
 * once per implementation and compares the hashes. The script depends only
 * on the seed, so equal hashes mean equal observations.
 *
 *   insmod fq_oracle.ko impl=c|rust dev=D seed=S seeds=N ops=M [verbose=1]
 *   cat /sys/kernel/debug/fq_oracle/report
 *	seed S ops M hash H enq E drops D leaked 0 ms T ...
 *
 * For each seed the module makes a qdisc with the implementation's ops
 * (qdisc_create_dflt(), on D's transmit queue, D down: the root lock is
 * that of D's root), sets a random base configuration, and runs M
 * operations:
 *
 *  - enqueue of one skb, or a burst of up to 32 from one source: orphans
 *    (skb_set_hash() from a small pool, so flows collide under
 *    orphan_mask) or kernel TCP and UDP sockets in ESTABLISHED, LISTEN,
 *    TIME_WAIT or NEW_SYN_RECV (orphaned by fq; the last two stand for
 *    the timewait and request sockets TCP sends from) or CLOSE (hashed
 *    by fq) state, with pacing rates
 *    (sk_pacing_rate from 1 byte/s to 100 Gbit/s) and SO_MAX_PACING_RATE
 *    (sk_max_pacing_rate); pkt_len 1..64 KiB, some GSO, or a quantum
 *    (initial or not), half or a quarter of one; every priority;
 *    EDT tstamps 0, past (some before the clock's zero), now, due within
 *    nanoseconds to seconds, at the horizon's edge, and beyond it, in
 *    CLOCK_MONOTONIC, CLOCK_REALTIME or CLOCK_TAI (tstamp_type), or
 *    monotonic with tstamp_type 0 (as a BPF program may leave it). The packets carry an IPv4 or IPv6
 *    header with an ECN field.
 *  - a run of up to 32 dequeues (as after a transmit), taking a packet
 *    that ->peek() set aside (sch->gso_skb) first, as the stack does;
 *    some runs begin with a ->peek(), some end with one, so that the
 *    next enqueue, change (its drop to a lowered limit) or reset meets a
 *    peeked packet.
 *  - time advances by 1 ns to 10 s, often to just before, at or after a
 *    due time (the armed watchdog's), a jiffy edge or the gc age. The
 *    watchdog fires on the way when the time passes its expiry: at
 *    expiry + slack, or anywhere in between (as hrtimer's range allows,
 *    with another interrupt); the qdisc then dequeues until it returns
 *    NULL, as qdisc_run() does.
 *  - change (under RTNL, as qdisc_change() calls it) of 1..4 attributes:
 *    limit and flow_limit (lowered under backlog), quantum,
 *    initial_quantum, rate_enable, low_rate_threshold, maxrate (0 to line
 *    rate), refill_delay (from 0), orphan_mask, ce_threshold (from 0),
 *    timer_slack (0 to 4 s), horizon (near the tstamps in play),
 *    horizon_drop, priomap, weights, buckets, offload_horizon (D offers a
 *    max_pacing_offload_horizon of 2 s while the module runs, as a NIC
 *    that paces in hardware would); out-of-range values one at a time;
 *    attributes of a wrong length and of unknown type.
 *  - qdisc_reset(); a socket's state, sk_hash, pacing rate or max pacing
 *    rate changed.
 *
 * After every operation it observes: each dequeued skb's id, dequeue time
 * (virtual), tstamp and ECN field; each dropped skb's id and drop reason;
 * the ids change and reset freed; each watchdog request (expiry, slack,
 * whether it rearmed the timer), the timer's state and counts, and each
 * firing's time; the enqueue status, change's errno and options dump;
 * sch->q.qlen, qstats, bstats; every field of tc_fq_qd_stats
 * (time_next_delayed_flow and unthrottle_latency_ns included); each
 * socket's sk_pacing_status.
 *
 * Skbs of connected sockets are often the qdisc's alone (no reference of
 * ours), so that fq may mark them CE; a destructor tells when they are
 * freed. The others carry a reference of ours, so their frees are seen;
 * fq must not write into such a shared skb, so they are never ECN-capable
 * (see "shared" below).
 *
 * gc: C keeps each bucket's flows in an rbtree and collects idle flows met
 * on the search path; sch_fq_rs keeps chains of a linear-hashing table and
 * collects idle flows met on the chain. Which idle flows a lookup collects
 * differs by construction, so the script never looks up a flow that
 * another lookup may have collected: time runs in epochs, and once the
 * clock has moved fq's gc age (3 s) past an epoch's start, a new epoch
 * begins with new sockets and new orphan hashes (orphan_mask keeps its low
 * 10 bits from the second epoch on). Most epochs begin with a resume: a
 * burst of a socket of the previous epoch, whose idle flow may be past the
 * gc age by then. No lookup has run since it could become a gc candidate
 * (the previous epoch's all ran less than the gc age after its start,
 * hence after the flow went idle), and a lookup never collects the flow
 * it looks for: C and Rust must both find it, with its credit,
 * time_next_packet, band and socket hash (a flow made anew instead shows
 * in the flows made). That needs every socket kept until the seed ends:
 * an address reused within a seed could meet a flow that C and Rust
 * collected differently. Until the first epoch ends, and after each rehash
 * (which collects every idle flow in both), flows, inactive_flows and
 * gc_flows are compared as they are; otherwise the active flows (flows -
 * inactive_flows) and the flows made so far (flows + gc_flows + the flows
 * each reset freed) are, and gc_flows must not fall.
 *
 * partial=1 adds changes that carry one invalid value among valid
 * attributes: C's fq_change() applies the valid ones and still drops to
 * the limit before it returns the error; sch_fq_rs applies nothing.
 * shared=1 makes every referenced skb ECN-capable: C marks them in place,
 * sch_fq_rs leaves them unmarked and uncounted (documented difference).
 * verbose=1 writes the observation stream with each operation's hash.
 *
 * ooo=N replaces the seeds by two runs of one flow fed N skbs whose EDTs
 * defeat a walk of the flow's list (see run_ooo()); ooo_rand=M makes the
 * second run, of random EDTs, M skbs (at most N).
 *
 * slackexp=MS replaces the seeds by the timer_slack experiment of Linux's
 * "net_sched: sch_fq: enable use of hrtimer slack": exp_flows paced
 * sockets (1,000 packets/s each, random phases), always backlogged, for
 * MS virtual milliseconds, the watchdog firing at expiry + slack; it
 * reports the firings for timer_slack 0, 10 us and 100 us.
 *
 * Init returns 0 once the report is written (rmmod the module after
 * reading it), or a negative errno.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>
#include <net/gen_stats.h>
#include <net/inet_ecn.h>
#include <net/ipv6.h>
#include <net/netlink.h>
#include <net/sch_generic.h>
#include <net/sock.h>
#include <net/tcp_states.h>
#include "fq_vclock.h"

static char *impl = "c";
module_param(impl, charp, 0444);
MODULE_PARM_DESC(impl, "c (sch_fq_vt) or rust (sch_fq_rs_vt)");

static char *rsmod = "sch_fq_rs_vt";
module_param(rsmod, charp, 0444);
MODULE_PARM_DESC(rsmod, "the module of impl=rust (default sch_fq_rs_vt; fq_mutants.sh: a mutant's)");

static char *dev = "fqo0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "a down device for the qdiscs' transmit queue");

static ulong seed = 1;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "first seed (default 1)");

static uint seeds = 1;
module_param(seeds, uint, 0444);
MODULE_PARM_DESC(seeds, "number of seeds, from seed on (default 1)");

static uint ops = 2000;
module_param(ops, uint, 0444);
MODULE_PARM_DESC(ops, "operations per seed, 1..20000 (default 2000)");

static bool verbose;
module_param(verbose, bool, 0444);
MODULE_PARM_DESC(verbose, "write the observation stream to the report");


static bool partial;
module_param(partial, bool, 0444);
MODULE_PARM_DESC(partial, "also changes with one invalid value among valid ones");

static bool shared;
module_param(shared, bool, 0444);
MODULE_PARM_DESC(shared, "referenced (shared) skbs are ECN-capable too");

static uint ooo;
module_param(ooo, uint, 0444);
MODULE_PARM_DESC(ooo, "instead of seeds: one flow fed this many skbs out of time order");

static uint ooo_rand;
module_param(ooo_rand, uint, 0444);
MODULE_PARM_DESC(ooo_rand, "skbs of the ooo run in random order, at most ooo (default: ooo)");

static uint slackexp;
module_param(slackexp, uint, 0444);
MODULE_PARM_DESC(slackexp, "instead of seeds: the timer_slack experiment, this many virtual ms");

/*
 * New flows of the table limit run after fq's gc age: enough lookups
 * that what they collect (chains walked, the Rust fq's gc sweeps of new
 * flows, a full table's sweeps) shows in the counts fq_mutants.sh
 * compares exactly.
 */
#define OR_FILL_LATER	1000
/* The oracle's device's max_pacing_offload_horizon, in usec: 2 s. */
#define OR_OFFLOAD_MAX_US	2000000U
static uint fill;
module_param(fill, uint, 0444);
MODULE_PARM_DESC(fill, "instead of seeds: packets of this many new flows, then of " __stringify(OR_FILL_LATER) " more after fq's gc age");

static uint exp_flows = 1000;
module_param(exp_flows, uint, 0444);
MODULE_PARM_DESC(exp_flows, "flows of the timer_slack experiment (default 1000)");

#define OR_MAX_OPS	20000
#define OR_BURST	32
#define OR_TCP		6
#define OR_UDP		4
#define OR_SOCKS	(OR_TCP + OR_UDP)
#define OR_HASHES	48
#define OR_EPOCHS	21	/* OR_HASHES * OR_EPOCHS orphan hashes < 1024 */
#define OR_LINEAR	128
#define OR_REPORT	(64 << 10)
#define OR_REPORT_V	(8 << 20)
/* A verbose seed of 1,000 operations writes about 0.8 MB. */
#define OR_REPORT_V_SEED	(2 << 20)
#define OR_FIRE_RUN	1024	/* dequeues per watchdog firing, at most */
#define OR_FIRES	100000	/* firings per advance, at most */

#define NS		1000000000ULL
#define US		1000000U	/* a second in usec, for attributes */
#define JIFFY_NS	(NSEC_PER_SEC / HZ)
#define FQ_GC_AGE_J	(3 * HZ)	/* sch_fq.c's FQ_GC_AGE */
#define LINE_RATE	12500000000ULL	/* 100 Gbit/s in bytes/s */

/* o->flags[id] */
#define OR_UNREF	1	/* the qdisc's alone: freed by its destructor */
#define OR_FREED	2	/* that destructor ran */
#define OR_SEEN		4	/* its fate was observed */
#define OR_V6		8

struct oracle {
	/* the run */
	struct net_device *ndev;
	const struct Qdisc_ops *fq_ops;
	struct Qdisc *sch;
	spinlock_t *root_lock;
	struct socket *socks[OR_EPOCHS][OR_SOCKS];
	u32 epoch;
	struct sk_buff *scratch;	/* dumps */
	struct sk_buff **skbs;		/* by id: queued */
	struct sk_buff **clones;	/* by id: a clone sharing its header */
	u8 *flags;			/* by id: OR_* */
	u32 nskbs, max_skbs;
	u64 rng;
	u64 hash;
	u32 hash_hi[OR_HASHES];
	u32 op;
	/* virtual time */
	u64 now, nsbase;
	unsigned long jbase, epoch_j;
	u64 requests;			/* watchdog requests seen */
	/* what the script follows of the configuration (from the dumps) */
	u32 orphan_mask, buckets_log, timer_slack, horizon_us, refill_us;
	u32 quantum, initial_quantum;
	/* gc (see the header) */
	bool gc_exact;
	u64 reset_flows, last_flows, last_gc;
	struct sock *resumed;		/* the source of a resume's enqueue */
	/* counts for the summary line */
	struct {
		u32 enq, drops, fires, advances, epochs;
	} n;
	/* the report */
	char *buf;
	size_t len, size;
	bool truncated;
};

static struct dentry *or_dir;
static char *or_report;
static size_t or_report_len;
/* The run, for the destructor of the qdisc's own skbs. */
static struct oracle *or_cur;

static __printf(2, 3) void rep(struct oracle *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->truncated)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->size - o->len, fmt, ap);
	va_end(ap);
	if (n >= o->size - o->len) {
		o->truncated = true;
		o->buf[o->len] = '\0';
		return;
	}
	o->len += n;
}

/* splitmix64: the script depends on the seed alone, not on the kernel. */
static u64 rnd(struct oracle *o)
{
	u64 z = (o->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static u32 below(struct oracle *o, u32 n)
{
	return (u32)(((rnd(o) >> 32) * n) >> 32);
}

static bool chance(struct oracle *o, u32 percent)
{
	return below(o, 100) < percent;
}

/* A value spread evenly over the powers of two up to 2^bits. */
static u64 log_uniform(struct oracle *o, u32 bits)
{
	u32 b = below(o, bits + 1);

	return b ? (1ULL << (b - 1)) + (rnd(o) & ((1ULL << (b - 1)) - 1)) : 0;
}

static void fold(struct oracle *o, u64 v)
{
	o->hash = (o->hash ^ (v * 0x9e3779b97f4a7c15ULL));
	o->hash = ((o->hash << 31) | (o->hash >> 33)) * 0xc2b2ae3d27d4eb4fULL;
}

static void fold_bytes(struct oracle *o, const void *p, size_t n)
{
	const u8 *b = p;
	u64 v;

	while (n >= 8) {
		memcpy(&v, b, 8);
		fold(o, v);
		b += 8;
		n -= 8;
	}
	v = 0;
	memcpy(&v, b, n);
	fold(o, v ^ ((u64)n << 56));
}

/* One observation: a tag and values, hashed, and written if verbose. */
#define obs(o, tag, fmt, ...) do {					\
	u64 __v[] = { tag, ##__VA_ARGS__ };				\
	unsigned int __i;						\
									\
	for (__i = 0; __i < ARRAY_SIZE(__v); __i++)			\
		fold(o, __v[__i]);					\
	if (verbose)							\
		rep(o, "%u %c " fmt "\n", (o)->op, tag, ##__VA_ARGS__);	\
} while (0)


/* --- the virtual clock ------------------------------------------------ */

static unsigned long o_jiffies(struct oracle *o, u64 ns)
{
	return o->jbase + (unsigned long)div_u64(ns - o->nsbase, JIFFY_NS);
}

static void clock_set(struct oracle *o, u64 ns)
{
	o->now = ns;
	fq_vclock_set(ns, o_jiffies(o, ns));
}

static u64 rel(struct oracle *o, u64 t)
{
	return t - o->nsbase;
}

/* --- sockets -------------------------------------------------------- */

/*
 * TIME_WAIT and NEW_SYN_RECV on full sockets stand for the timewait and
 * request sockets TCP sends from: fq orphans their packets, as a
 * listener's (sk_listener_or_tw()).
 */
static const int tcp_states[] = { TCP_ESTABLISHED, TCP_LISTEN, TCP_CLOSE,
				  TCP_TIME_WAIT, TCP_NEW_SYN_RECV };

/* fq orphans the packets of these sockets: skb_orphan() runs their destructor. */
static bool fq_orphans(const struct sock *sk)
{
	return (1 << sk->sk_state) & (TCPF_LISTEN | TCPF_TIME_WAIT | TCPF_NEW_SYN_RECV);
}
static const int udp_states[] = { TCP_ESTABLISHED, TCP_CLOSE };

static void oracle_sock_destructor(struct sk_buff *skb)
{
	/* Only there for skb_orphan(): the sockets are ours, unreferenced. */
}

/* The destructor of a skb that is the qdisc's alone: it is being freed. */
static void oracle_track_destructor(struct sk_buff *skb)
{
	struct oracle *o = or_cur;
	u32 id = skb->mark;

	if (o && id < o->nskbs && o->skbs[id] == skb) {
		o->skbs[id] = NULL;
		o->flags[id] |= OR_FREED;
	}
}

static void socks_free(struct oracle *o)
{
	int e, i;

	for (e = 0; e < OR_EPOCHS; e++) {
		for (i = 0; i < OR_SOCKS; i++) {
			struct socket *sock = o->socks[e][i];

			if (!sock)
				continue;
			/* Unhashed, never connected: closing does nothing else. */
			sock->sk->sk_state = TCP_CLOSE;
			sock_release(sock);
			o->socks[e][i] = NULL;
		}
	}
}

static u64 pick_rate(struct oracle *o)
{
	switch (below(o, 6)) {
	case 0:
		return ~0UL;
	case 1:
		return 1 + below(o, 1000);
	case 2:
		return LINE_RATE;
	default:
		return 1 + log_uniform(o, 34) % LINE_RATE;
	}
}

/* Sockets of epoch @e: new addresses, so new flows (see the header). */
static int socks_alloc(struct oracle *o, u32 e)
{
	int i, err;

	for (i = 0; i < OR_SOCKS; i++) {
		bool tcp = i < OR_TCP;
		struct socket *sock;
		struct sock *sk;

		err = sock_create_kern(&init_net, AF_INET,
				       tcp ? SOCK_STREAM : SOCK_DGRAM,
				       tcp ? IPPROTO_TCP : IPPROTO_UDP, &sock);
		if (err)
			return err;
		o->socks[e][i] = sock;
		sk = sock->sk;
		/* Nothing else sees these sockets: fq only reads them. */
		sk->sk_state = tcp ? tcp_states[below(o, ARRAY_SIZE(tcp_states))] :
				     udp_states[below(o, 2)];
		sk->sk_hash = rnd(o);
		if (chance(o, 50))
			sk->sk_pacing_rate = pick_rate(o);
		if (!tcp && chance(o, 30))
			sk->sk_max_pacing_rate = pick_rate(o);
	}
	return 0;
}

static struct sock *sock_of(struct oracle *o, u32 i)
{
	return o->socks[o->epoch][i]->sk;
}

/* --- observing the qdisc ------------------------------------------- */

static void observe_timer(struct oracle *o)
{
	struct fq_vclock_timer t;

	fq_vclock_timer_read(&t);
	obs(o, 't', "armed %llu soft %llu hard %llu requests %llu programs %llu cancels %llu fires %llu",
	    (u64)t.armed, t.armed ? rel(o, t.soft) : 0, t.armed ? rel(o, t.hard) : 0,
	    t.requests, t.programs, t.cancels, t.fires);
}

/* A watchdog request of the last dequeue, if it made one. */
static void observe_request(struct oracle *o)
{
	struct fq_vclock_timer t;

	fq_vclock_timer_read(&t);
	if (t.requests == o->requests)
		return;
	o->requests = t.requests;
	obs(o, 'w', "expires %llu slack %llu armed %llu",
	    rel(o, t.req_expires), t.req_slack,
	    t.armed ? rel(o, t.soft) : 0);
}

static void observe_counters(struct oracle *o)
{
	struct Qdisc *sch = o->sch;
	u64 bytes, packets;
	u32 qlen, backlog, drops, overlimits, requeues;
	u32 pacing = 0;
	int i;

	spin_lock_bh(o->root_lock);
	qlen = sch->q.qlen;
	backlog = sch->qstats.backlog;
	drops = sch->qstats.drops;
	overlimits = sch->qstats.overlimits;
	requeues = sch->qstats.requeues;
	bytes = u64_stats_read(&sch->bstats.bytes);
	packets = u64_stats_read(&sch->bstats.packets);
	spin_unlock_bh(o->root_lock);
	for (i = 0; i < OR_SOCKS; i++)
		pacing |= (READ_ONCE(sock_of(o, i)->sk_pacing_status) & 3) << (2 * i);
	obs(o, 'q', "qlen %llu backlog %llu drops %llu overlimits %llu requeues %llu bytes %llu packets %llu pacing %llx",
	    (u64)qlen, (u64)backlog, (u64)drops, (u64)overlimits,
	    (u64)requeues, bytes, packets, (u64)pacing);
	observe_timer(o);
}

static int read_xstats(struct oracle *o, struct tc_fq_qd_stats *st)
{
	struct nlattr *nest, *a;
	struct gnet_dump d;
	bool found = false;
	int rem, err;

	skb_trim(o->scratch, 0);
	/* Under RTNL, as tc_fill_qdisc(): its sch_tree_lock() asserts it. */
	rtnl_lock();
	err = gnet_stats_start_copy(o->scratch, TCA_STATS2, NULL, &d, TCA_PAD);
	if (!err)
		err = o->sch->ops->dump_stats(o->sch, &d);
	if (!err)
		err = gnet_stats_finish_copy(&d);
	rtnl_unlock();
	if (err)
		return -EMSGSIZE;
	nest = (struct nlattr *)o->scratch->data;
	nla_for_each_nested(a, nest, rem) {
		/* Both dump C's struct, and nothing more. */
		if (nla_type(a) == TCA_STATS_APP && nla_len(a) == sizeof(*st)) {
			memcpy(st, nla_data(a), sizeof(*st));
			found = true;
		}
	}
	return found ? 0 : -ENODATA;
}

static int observe_xstats(struct oracle *o)
{
	struct tc_fq_qd_stats st;
	u64 flows, gc;
	int err;

	err = read_xstats(o, &st);
	if (err)
		return err;
	flows = st.flows;
	gc = st.gc_flows;
	if (gc < o->last_gc)
		obs(o, '?', "gc_flows fell from %llu to %llu", o->last_gc, gc);
	/*
	 * Which idle flows gc has collected may differ (see the header):
	 * gc_flows is compared as the flows made so far, and the flows as
	 * they are only while no flow may have been collected by one
	 * implementation and not the other.
	 */
	st.gc_flows = flows + gc + o->reset_flows;
	if (!o->gc_exact) {
		st.flows = st.flows - st.inactive_flows;
		st.inactive_flows = 0;
	}
	o->last_flows = flows;
	o->last_gc = gc;
	if (verbose)
		rep(o, "%u x flows %u inactive %u throttled_flows %u throttled %llu gc %llu fastpath %llu flows_plimit %llu too_long %llu alloc_err %llu ce %llu hdrops %llu hcaps %llu band_drops %llu/%llu/%llu band_pkts %u/%u/%u next %lld latency %u%s\n",
		    o->op, st.flows, st.inactive_flows, st.throttled_flows,
		    st.throttled, st.gc_flows, st.fastpath_packets,
		    st.flows_plimit, st.pkts_too_long, st.allocation_errors,
		    st.ce_mark, st.horizon_drops, st.horizon_caps,
		    st.band_drops[0], st.band_drops[1], st.band_drops[2],
		    st.band_pkt_count[0], st.band_pkt_count[1],
		    st.band_pkt_count[2], st.time_next_delayed_flow,
		    st.unthrottle_latency_ns, o->gc_exact ? " (gc: compared as made)" :
		    " (gc: compared as active, made)");
	fold_bytes(o, &st, sizeof(st));
	return 0;
}

/* The options as ->dump() writes them (under RTNL, as tc_fill_qdisc()). */
static int observe_options(struct oracle *o)
{
	struct nlattr *nest, *a;
	int rem, len;

	skb_trim(o->scratch, 0);
	len = o->sch->ops->dump(o->sch, o->scratch);
	if (len < 0)
		return -EMSGSIZE;
	fold_bytes(o, o->scratch->data, o->scratch->len);
	nest = (struct nlattr *)o->scratch->data;
	nla_for_each_nested(a, nest, rem) {
		if (nla_len(a) != 4)
			continue;
		switch (nla_type(a)) {
		case TCA_FQ_ORPHAN_MASK:
			o->orphan_mask = nla_get_u32(a);
			break;
		case TCA_FQ_BUCKETS_LOG:
			if (o->buckets_log != nla_get_u32(a))
				/* Rehashed: every idle flow collected, in both. */
				o->gc_exact = true;
			o->buckets_log = nla_get_u32(a);
			break;
		case TCA_FQ_TIMER_SLACK:
			o->timer_slack = nla_get_u32(a);
			break;
		case TCA_FQ_HORIZON:
			o->horizon_us = nla_get_u32(a);
			break;
		case TCA_FQ_FLOW_REFILL_DELAY:
			o->refill_us = nla_get_u32(a);
			break;
		case TCA_FQ_QUANTUM:
			o->quantum = nla_get_u32(a);
			break;
		case TCA_FQ_INITIAL_QUANTUM:
			o->initial_quantum = nla_get_u32(a);
			break;
		}
	}
	if (!verbose)
		return 0;
	rep(o, "%u o", o->op);
	nla_for_each_nested(a, nest, rem) {
		if (nla_len(a) == 4)
			rep(o, " %u=%u", nla_type(a), nla_get_u32(a));
		else if (nla_len(a) == 1)
			rep(o, " %u=%u", nla_type(a), nla_get_u8(a));
		else
			rep(o, " %u=%*phN", nla_type(a), min(nla_len(a), 20),
			    nla_data(a));
	}
	rep(o, "\n");
	return 0;
}

/* The clone that shared skb @id's header: not needed once it is freed. */
static void clone_put(struct oracle *o, u32 id)
{
	kfree_skb(o->clones[id]);
	o->clones[id] = NULL;
}

/* Skbs the qdisc freed outside enqueue and dequeue (change, reset). */
/*
 * The skbs the qdisc has let go of and nobody has observed yet: freed
 * (the qdisc's alone) or down to our reference. Read before RTNL is
 * released, it tells the packets a reset or change freed at once from
 * those it left to rtnl_kfree_skbs(), which frees them after
 * rtnl_unlock(), outside the root lock, as C's fq does.
 */
static u32 count_let_go(struct oracle *o)
{
	u32 id, n = 0;

	for (id = 0; id < o->nskbs; id++) {
		if (o->flags[id] & OR_UNREF)
			n += (o->flags[id] & (OR_FREED | OR_SEEN)) == OR_FREED;
		else
			n += o->skbs[id] && refcount_read(&o->skbs[id]->users) == 1;
	}
	return n;
}

static void observe_freed(struct oracle *o, char tag)
{
	u32 id;

	for (id = 0; id < o->nskbs; id++) {
		struct sk_buff *skb = o->skbs[id];

		if (o->flags[id] & OR_UNREF) {
			if ((o->flags[id] & (OR_FREED | OR_SEEN)) == OR_FREED) {
				obs(o, tag, "freed %llu", (u64)id);
				o->flags[id] |= OR_SEEN;
				clone_put(o, id);
			}
			continue;
		}
		if (!skb || refcount_read(&skb->users) != 1)
			continue;
		obs(o, tag, "freed %llu", (u64)id);
		o->skbs[id] = NULL;
		skb_mark_not_on_list(skb);
		kfree_skb(skb);
	}
}

/* The ECN field of @skb's IP header. */
static u32 skb_ecn(struct sk_buff *skb)
{
	if (skb->protocol == htons(ETH_P_IP))
		return ip_hdr(skb)->tos & INET_ECN_MASK;
	if (skb->protocol == htons(ETH_P_IPV6))
		return ipv6_get_dsfield(ipv6_hdr(skb)) & INET_ECN_MASK;
	return 4;
}

/* @skb, dequeued or dropped: ours again, observed, then freed. */
static void skb_done(struct oracle *o, struct sk_buff *skb)
{
	u32 id = skb->mark;

	skb_mark_not_on_list(skb);
	if (id < o->nskbs && o->skbs[id] == skb) {
		o->flags[id] |= OR_SEEN;
		clone_put(o, id);
		if (!(o->flags[id] & OR_UNREF)) {
			o->skbs[id] = NULL;
			kfree_skb(skb);		/* ours */
		}
	} else {
		/* Not one of ours, or twice: the hash says so. */
		obs(o, '?', "stray %llu", (u64)id);
	}
	kfree_skb(skb);				/* the qdisc's */
}

/* --- operations ------------------------------------------------------ */

/* The qdisc's enqueue and dequeue, under the root lock as the stack calls them. */

/*
 * The control block as __dev_xmit_skb() leaves it for the root qdisc
 * (qdisc_pkt_len_segs_init()): the length tc accounts and the segments
 * bstats count, gso_segs for a GSO packet, else 1.
 */
static void o_cb_init(struct sk_buff *skb, unsigned int len)
{
	qdisc_skb_cb(skb)->pkt_len = len;
	qdisc_skb_cb(skb)->pkt_segs = skb_is_gso(skb) ?
				      skb_shinfo(skb)->gso_segs : 1;
}
static int o_enqueue(struct oracle *o, struct sk_buff *skb, struct sk_buff **to_free)
{
	int ret;

	spin_lock_bh(o->root_lock);
	ret = o->sch->enqueue(skb, o->sch, to_free);
	spin_unlock_bh(o->root_lock);
	return ret;
}

/*
 * A dequeue as the stack makes it: a packet set aside by ->peek() (in
 * sch->gso_skb) first, as dequeue_skb() and qdisc_dequeue_peeked() take it.
 */
static struct sk_buff *o_dequeue(struct oracle *o)
{
	struct sk_buff *skb;

	spin_lock_bh(o->root_lock);
	skb = qdisc_dequeue_peeked(o->sch);
	spin_unlock_bh(o->root_lock);
	return skb;
}

/*
 * ->peek() as a parent qdisc calls it (fq's is qdisc_peek_dequeued(): it
 * dequeues and sets the packet aside in sch->gso_skb, still counted).
 */
static void op_peek(struct oracle *o)
{
	struct sk_buff *skb;

	spin_lock_bh(o->root_lock);
	skb = o->sch->ops->peek(o->sch);
	spin_unlock_bh(o->root_lock);
	observe_request(o);
	obs(o, 'P', "peek %lld", skb ? (s64)skb->mark : -1LL);
}

static u32 pick_len(struct oracle *o)
{
	switch (below(o, 9)) {
	case 8:
		/*
		 * A quantum, half or a quarter of one (initial or not), so
		 * that a flow's credit runs out exactly: to 0, not below.
		 */
		return max((chance(o, 50) ? o->quantum : o->initial_quantum) >> below(o, 3), 1U);
	case 0:
		return 1 + below(o, 64);
	case 1:
		return 65536 - below(o, 2);
	case 2:
	case 3:
		return 1 + below(o, 65536);
	default:
		return 64 + below(o, 1500 - 64 + 1);
	}
}

static u32 pick_prio(struct oracle *o)
{
	switch (below(o, 6)) {
	case 0:
		return TC_PRIO_CONTROL;
	case 1:
		return below(o, 16) | (u32)rnd(o) << 4;
	default:
		return below(o, 16);
	}
}

/*
 * skb->tstamp: 0, past, now, due soon, due later, at the horizon's edge
 * (as the script last saw it), beyond every horizon.
 */
static s64 pick_tstamp(struct oracle *o, u32 *cls)
{
	u64 now = o->now, h = (u64)o->horizon_us * NSEC_PER_USEC;

	*cls = below(o, 20);
	switch (*cls) {
	case 0 ... 7:
		*cls = 0;
		return 0;
	case 8 ... 9:
		*cls = 1;
		/*
		 * Now and then before the clock's zero: a monotonic tstamp
		 * fq must raise to 1 (fq_skb_tstamp_to_mono()).
		 */
		if (chance(o, 10))
			return -(s64)log_uniform(o, 40);
		return now - 1 - log_uniform(o, 30);
	case 10:
		*cls = 2;
		return now;
	case 11 ... 14:
		*cls = 3;
		return now + 1 + log_uniform(o, 24);
	case 15 ... 16:
		*cls = 4;
		return now + 1 + log_uniform(o, 33);
	case 17 ... 18:
		*cls = 5;
		return now + h - 1 + below(o, 3);
	default:
		*cls = 6;
		/* Beyond ~0U usec, the largest horizon. */
		return now + 4400 * NS;
	}
}

static void drop_list(struct oracle *o, struct sk_buff *to_free)
{
	while (to_free) {
		struct sk_buff *skb = to_free;

		to_free = skb->next;
		obs(o, 'd', "id %llu reason %llu", (u64)skb->mark,
		    (u64)tc_skb_cb(skb)->drop_reason);
		o->n.drops++;
		skb_done(o, skb);
	}
}

/* An skb of @len with an IP header whose ECN field is @ecn. */
static struct sk_buff *make_skb(struct oracle *o, u32 len, u32 ecn, bool v6)
{
	struct sk_buff *skb = alloc_skb(OR_LINEAR, GFP_KERNEL);

	if (!skb)
		return NULL;
	skb_put_zero(skb, min_t(u32, len, OR_LINEAR));
	skb_reset_network_header(skb);
	if (v6 && skb->len >= sizeof(struct ipv6hdr)) {
		ip6_flow_hdr(ipv6_hdr(skb), ecn, 0);
		skb->protocol = htons(ETH_P_IPV6);
	} else if (skb->len >= sizeof(struct iphdr)) {
		struct iphdr *iph = ip_hdr(skb);

		iph->version = 4;
		iph->ihl = 5;
		iph->tos = ecn;
		skb->protocol = htons(ETH_P_IP);
	}
	return skb;
}

/* Enqueue @n skbs from one source. */
static int op_enqueue(struct oracle *o, u32 n)
{
	u32 src = o->resumed ? OR_SOCKS + 1 : below(o, 10) < 4 ? OR_SOCKS : below(o, OR_SOCKS);
	u32 prio = pick_prio(o);
	u32 i;

	for (i = 0; i < n; i++) {
		struct sk_buff *skb, *to_free = NULL;
		u32 len, cls, id, hash, ecn, hi;
		struct sock *sk = NULL;
		bool unref, hc;
		s64 tstamp;
		int ret;

		if (o->nskbs == o->max_skbs)
			return 0;
		len = pick_len(o);
		/* A burst is one flow, mostly one priority. */
		if (i == 0 || chance(o, 10))
			prio = pick_prio(o);
		hi = below(o, OR_HASHES);
		/* This epoch's orphan hashes (see the header). */
		hash = o->hash_hi[hi] << 10 | (o->epoch * OR_HASHES + hi);
		tstamp = pick_tstamp(o, &cls);
		if (o->resumed)
			sk = o->resumed;
		else if (src < OR_SOCKS)
			sk = sock_of(o, src);
		/*
		 * fq orphans skbs of listeners: only others may be the
		 * qdisc's alone, with a destructor that tells their free.
		 */
		unref = sk && !fq_orphans(sk) && chance(o, 50);
		ecn = below(o, 4);
		if (!unref && !shared && ecn != INET_ECN_CE)
			ecn = INET_ECN_NOT_ECT;
		skb = make_skb(o, len, ecn, chance(o, 25));
		if (!skb)
			return -ENOMEM;
		if (len > 1500 && chance(o, 30)) {
			skb_shinfo(skb)->gso_size = 1448;
			skb_shinfo(skb)->gso_segs = DIV_ROUND_UP(len, 1448);
			skb_shinfo(skb)->gso_type = SKB_GSO_TCPV4;
		}
		id = o->nskbs++;
		skb->mark = id;
		skb->dev = o->ndev;
		skb->priority = prio;
		skb->tstamp = tstamp;
		/*
		 * The clock of the tstamp: fq converts from each. Type 0
		 * (REALTIME) with a monotonic time is what a BPF program that
		 * sets only the tstamp leaves: fq takes it for monotonic.
		 */
		switch (tstamp ? below(o, 10) : 9) {
		case 0 ... 4:
			skb->tstamp_type = SKB_CLOCK_MONOTONIC;
			break;
		case 5 ... 6:
			skb->tstamp_type = SKB_CLOCK_REALTIME;
			skb->tstamp = ktime_mono_to_real(tstamp);
			break;
		case 7:
			skb->tstamp_type = SKB_CLOCK_TAI;
			skb->tstamp = ktime_mono_to_any(tstamp, TK_OFFS_TAI);
			break;
		default:
			break;
		}
		skb_set_hash(skb, hash, PKT_HASH_TYPE_L4);
		if (sk) {
			skb->sk = sk;
			skb->destructor = unref ? oracle_track_destructor :
						  oracle_sock_destructor;
		}
		o_cb_init(skb, len);
		o->flags[id] = unref ? OR_UNREF : 0;
		o->skbs[id] = unref ? skb : skb_get(skb);
		/*
		 * A third of the skbs that are the qdisc's alone share their
		 * header with a clone (a bridge's flood copy, tc mirred):
		 * C marks that header in place, sch_fq_rs a private copy of
		 * it; the packet it dequeues must read the same.
		 */
		hc = unref && chance(o, 33);
		if (hc) {
			o->clones[id] = skb_clone(skb, GFP_KERNEL);
			hc = o->clones[id];
		}
		o->n.enq++;

		ret = o_enqueue(o, skb, &to_free);
		obs(o, 'e', "id %llu src %llu prio %llx len %llu gso %llu ts %llu ecn %llu unref %llu hc %llu ret %llx",
		    (u64)id, (u64)src, (u64)prio, (u64)len,
		    (u64)skb_shinfo(skb)->gso_segs, (u64)cls, (u64)ecn,
		    (u64)unref, (u64)hc, (u64)ret);
		drop_list(o, to_free);
	}
	return 0;
}

/* Up to @n dequeues; returns how many gave a packet. */
static u32 op_dequeue(struct oracle *o, u32 n)
{
	u32 i;

	if (chance(o, 15))
		op_peek(o);
	for (i = 0; i < n; i++) {
		struct sk_buff *skb;

		skb = o_dequeue(o);
		observe_request(o);
		if (!skb) {
			obs(o, 'n', "after %llu", (u64)i);
			break;
		}
		obs(o, 'D', "id %llu at %llu tstamp %llu ecn %llu",
		    (u64)skb->mark, rel(o, o->now),
		    skb->tstamp ? rel(o, skb->tstamp) : 0, (u64)skb_ecn(skb));
		skb_done(o, skb);
	}
	/* Sometimes a packet stays peeked: enqueue, change and reset meet it. */
	if (chance(o, 10))
		op_peek(o);
	return i;
}

/*
 * The clock moves to @target, firing the watchdog on the way whenever the
 * time reaches an armed timer's hard expiry (or, by the script's choice,
 * a time between its soft and hard expiry): the qdisc then runs.
 */
static void advance_to(struct oracle *o, u64 target)
{
	struct fq_vclock_timer t;
	u32 n;

	for (n = 0; n < OR_FIRES; n++) {
		u64 at;

		fq_vclock_timer_read(&t);
		if (!t.armed || t.soft > target)
			break;
		at = t.hard;
		if (chance(o, 25) && t.hard - t.soft < ~0ULL) {
			u64 r;

			div64_u64_rem(rnd(o), t.hard - t.soft + 1, &r);
			at = t.soft + r;
		}
		if (at > target)
			break;
		if (at < o->now)
			at = o->now;
		clock_set(o, at);
		fq_vclock_timer_fire();
		o->n.fires++;
		obs(o, 'W', "fired at %llu", rel(o, at));
		op_dequeue(o, OR_FIRE_RUN);
	}
	clock_set(o, target);
}

/* A new epoch: new sockets and orphan hashes (see the header). */
static int new_epoch(struct oracle *o, struct sk_buff *m);

/* The clock moves on by 1 ns to 10 s. */
static int op_advance(struct oracle *o, struct sk_buff *m)
{
	struct fq_vclock_timer t;
	u64 d, limit;

	fq_vclock_timer_read(&t);
	switch (below(o, 20)) {
	case 0 ... 4:
		d = 1 + below(o, 1000);
		break;
	case 5 ... 8:
		d = 1000 + log_uniform(o, 24);
		break;
	case 9 ... 11:
		/* Just before, at, just after a due time. */
		d = t.armed && t.soft > o->now ? t.soft - o->now : 1;
		if (t.armed && chance(o, 50) && t.hard > o->now)
			d = t.hard - o->now;
		d = d - 1 + below(o, 3) ?: 1;
		break;
	case 12 ... 13: {
		/* To a jiffy's edge, or by the refill delay. */
		u64 to_edge = JIFFY_NS - (o->now - o->nsbase) % JIFFY_NS;

		d = chance(o, 50) ? to_edge : to_edge + (u64)o->refill_us * NSEC_PER_USEC;
		d = d - 1 + below(o, 3) ?: 1;
		break;
	}
	case 14 ... 16:
		d = 10000000 + log_uniform(o, 30) % NS;
		break;
	case 17 ... 18:
		/* About fq's gc age. */
		d = 3 * NS - 2 * JIFFY_NS + below(o, 4 * JIFFY_NS);
		break;
	default:
		d = 1 + log_uniform(o, 34) % (10 * NS);
		break;
	}
	/* In the last epoch, no flow may reach the gc age. */
	if (o->epoch == OR_EPOCHS - 1) {
		limit = o->nsbase + (u64)(o->epoch_j - o->jbase + FQ_GC_AGE_J) * JIFFY_NS - 1;
		if (o->now + d > limit)
			d = limit > o->now ? limit - o->now : 0;
	}
	obs(o, 'a', "by %llu", d);
	o->n.advances++;
	advance_to(o, o->now + d);
	/* From fq's gc age on, a flow may be idle long enough. */
	if (o_jiffies(o, o->now) - o->jbase >= FQ_GC_AGE_J)
		o->gc_exact = false;
	if (o_jiffies(o, o->now) - o->epoch_j >= FQ_GC_AGE_J && o->epoch < OR_EPOCHS - 1)
		return new_epoch(o, m);
	return 0;
}

static void put_weights(struct sk_buff *m, struct oracle *o, bool bad)
{
	static const s32 dflt[3] = { 9 << 16, 3 << 16, 1 << 16 };
	s32 w[3];
	int i;

	for (i = 0; i < 3; i++)
		w[i] = chance(o, 50) ? FQ_MIN_WEIGHT + (chance(o, 20) ? 0 : below(o, 1 << 20)) :
				       dflt[i];
	if (bad)
		w[below(o, 3)] = chance(o, 50) ? FQ_MIN_WEIGHT - 1 : -1;
	nla_put(m, TCA_FQ_WEIGHTS, sizeof(w), w);
}

static void put_priomap(struct sk_buff *m, struct oracle *o, bool bad)
{
	struct tc_prio_qopt p = { .bands = 3 };
	int i;

	for (i = 0; i <= TC_PRIO_MAX; i++)
		p.priomap[i] = below(o, 3);
	if (bad) {
		if (chance(o, 50))
			p.bands = below(o, 2) ? 2 : 16;
		else
			p.priomap[below(o, TC_PRIO_MAX + 1)] = 3 + below(o, 253);
	}
	nla_put(m, TCA_FQ_PRIOMAP, sizeof(p), &p);
}

/* A time in usec for an attribute: 0, small, about a jiffy, up to ~0U. */
static u32 pick_usecs(struct oracle *o)
{
	switch (below(o, 6)) {
	case 0:
		return 0;
	case 1:
		return below(o, 100);
	case 2:
		return JIFFY_NS / NSEC_PER_USEC - 1 + below(o, 3);
	case 3:
		return log_uniform(o, 22);
	case 4:
		return 2 * US + below(o, 2 * US);
	default:
		return log_uniform(o, 32);
	}
}

/* One valid attribute. */
static void put_valid(struct sk_buff *m, struct oracle *o)
{
	static const u32 masks[] = { 0, 1, 3, 15, 1023, ~0U };

	switch (below(o, 16)) {
	case 14:
		/* Up to the oracle's device's max_pacing_offload_horizon. */
		nla_put_u32(m, TCA_FQ_OFFLOAD_HORIZON, chance(o, 30) ? 0 :
			    chance(o, 10) ? OR_OFFLOAD_MAX_US :
			    min_t(u32, pick_usecs(o), OR_OFFLOAD_MAX_US));
		break;
	case 0:
		nla_put_u32(m, TCA_FQ_PLIMIT, chance(o, 5) ? below(o, 3) :
			    1 + below(o, chance(o, 50) ? 64 : 3000));
		break;
	case 1:
		nla_put_u32(m, TCA_FQ_FLOW_PLIMIT, chance(o, 5) ? 0 :
			    1 + below(o, chance(o, 50) ? 8 : 200));
		break;
	case 2:
		nla_put_u32(m, TCA_FQ_QUANTUM, chance(o, 10) ? below(o, 256) :
			    chance(o, 10) ? (1 << 20) + below(o, 1000) :
			    256 + below(o, 100000));
		break;
	case 3:
		nla_put_u32(m, TCA_FQ_INITIAL_QUANTUM, chance(o, 10) ? 0 :
			    below(o, (1 << 20) + 1));
		break;
	case 4:
		nla_put_u32(m, TCA_FQ_RATE_ENABLE, chance(o, 80));
		break;
	case 5:
		nla_put_u32(m, TCA_FQ_LOW_RATE_THRESHOLD,
			    chance(o, 50) ? log_uniform(o, 32) : rnd(o));
		break;
	case 6:
		nla_put_u32(m, TCA_FQ_FLOW_MAX_RATE,
			    chance(o, 30) ? ~0U : (u32)log_uniform(o, 32));
		break;
	case 7:
		nla_put_u32(m, TCA_FQ_FLOW_REFILL_DELAY, pick_usecs(o));
		break;
	case 8:
		/* Small masks in the first epoch only (see the header). */
		nla_put_u32(m, TCA_FQ_ORPHAN_MASK,
			    o->epoch ? (chance(o, 50) ? (u32)rnd(o) | 1023 :
					masks[4 + below(o, 2)]) :
			    chance(o, 30) ? (u32)rnd(o) :
			    masks[below(o, ARRAY_SIZE(masks))]);
		break;
	case 9:
		nla_put_u32(m, TCA_FQ_CE_THRESHOLD, pick_usecs(o));
		break;
	case 10:
		nla_put_u32(m, TCA_FQ_TIMER_SLACK, chance(o, 20) ? rnd(o) :
			    chance(o, 30) ? 10000 : log_uniform(o, 32));
		break;
	case 11:
		nla_put_u32(m, TCA_FQ_HORIZON, chance(o, 80) ? pick_usecs(o) : ~0U);
		break;
	case 12:
		nla_put_u8(m, TCA_FQ_HORIZON_DROP, chance(o, 20) ? rnd(o) : below(o, 2));
		break;
	case 13:
		if (chance(o, 50))
			put_priomap(m, o, false);
		else
			put_weights(m, o, false);
		break;
	default:
		nla_put_u32(m, TCA_FQ_BUCKETS_LOG, 1 + below(o, 18));
		break;
	}
}

/* One value fq_change() refuses after parsing. */
static void put_invalid(struct sk_buff *m, struct oracle *o)
{
	switch (below(o, 5)) {
	case 4:
		/* Past the device's max_pacing_offload_horizon. */
		nla_put_u32(m, TCA_FQ_OFFLOAD_HORIZON, OR_OFFLOAD_MAX_US + 1 +
			    (chance(o, 50) ? below(o, 1000) : (u32)rnd(o) / 2));
		break;
	case 0:
		nla_put_u32(m, TCA_FQ_BUCKETS_LOG, chance(o, 50) ? 0 : 19 + below(o, 100));
		break;
	case 1:
		nla_put_u32(m, TCA_FQ_RATE_ENABLE, 2 + below(o, 100));
		break;
	case 2:
		put_priomap(m, o, true);
		break;
	default:
		put_weights(m, o, true);
		break;
	}
}

/* One attribute the policy refuses, or ignores. */
static void put_malformed(struct sk_buff *m, struct oracle *o)
{
	u8 junk[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };

	switch (below(o, 5)) {
	case 0:
		/* Short u32 of the old, lenient types. */
		nla_put(m, TCA_FQ_PLIMIT + below(o, TCA_FQ_ORPHAN_MASK), 2, junk);
		break;
	case 1:
		/* Long u32 of a strictly validated type. */
		nla_put(m, TCA_FQ_TIMER_SLACK + below(o, 2), 8, junk);
		break;
	case 2:
		nla_put_u32(m, TCA_FQ_INITIAL_QUANTUM, (1 << 20) + 1 + below(o, 1000));
		break;
	case 3:
		nla_put(m, TCA_FQ_PRIOMAP, below(o, 20), junk);
		break;
	default:
		/* Unknown type. */
		nla_put_u32(m, TCA_FQ_MAX + 1 + below(o, 4), 1);
		break;
	}
}

/*
 * Builds TCA_OPTIONS of 1..4 attributes into @m; *@kind says what it is:
 * 0 one attribute the policy refuses (fq_change() applies nothing), 1 one
 * invalid value alone, 2 one among valid attributes, 3 all valid.
 */
static struct nlattr *build_change(struct oracle *o, struct sk_buff *m, u32 *kind)
{
	struct nlattr *nest = nla_nest_start_noflag(m, TCA_OPTIONS);
	u32 n = 1 + below(o, 4), bad = n, i;
	bool over;

	/* The script may follow the state: it is the same in both runs. */
	spin_lock_bh(o->root_lock);
	over = o->sch->q.qlen > o->sch->limit;
	spin_unlock_bh(o->root_lock);

	*kind = below(o, 20);
	if (*kind == 1 && !partial && over)
		*kind = 0;
	if (*kind == 0) {
		bad = below(o, n);
	} else if (*kind == 1) {
		/*
		 * C's fq_change() applies the valid attributes around an
		 * invalid value and drops to the limit before it fails: only
		 * with partial=1 among valid ones, or with more queued than
		 * the limit (bands count to the limit each).
		 */
		if (!partial)
			n = 1;
		bad = below(o, n);
		*kind = n == 1 ? 1 : 2;
	} else {
		*kind = 3;
	}
	for (i = 0; i < n; i++) {
		if (i != bad)
			put_valid(m, o);
		else if (*kind == 0)
			put_malformed(m, o);
		else
			put_invalid(m, o);
	}
	nla_nest_end(m, nest);
	return nest;
}

static int op_change(struct oracle *o, struct nlattr *opt, u32 kind)
{
	struct netlink_ext_ack extack = {};
	u32 before, early;
	int err, ret;

	rtnl_lock();
	before = count_let_go(o);
	err = o->fq_ops->change(o->sch, opt, &extack);
	ret = observe_options(o);
	early = count_let_go(o) - before;
	/* rtnl_kfree_skbs() frees what change dropped only now. */
	rtnl_unlock();
	obs(o, 'c', "kind %llu err %lld freed under RTNL %llu", (u64)kind, (s64)err, (u64)early);
	if (verbose && extack._msg)
		rep(o, "%u m %s\n", o->op, extack._msg);
	observe_freed(o, 'C');
	return ret;
}

/*
 * The first enqueue of a new epoch, most times: a burst of a socket of the
 * previous epoch, connected if one is, whose idle flow may be past fq's gc
 * age by now (see the header). C and Rust must both find its flow, with
 * the state it had.
 */
static int resume_idle(struct oracle *o)
{
	struct sock *sk = NULL;
	u32 i = 0, tries;
	int err;

	if (!chance(o, 75))
		return 0;
	for (tries = 0; tries < 4; tries++) {
		i = below(o, OR_SOCKS);
		sk = o->socks[o->epoch - 1][i]->sk;
		if (sk->sk_state == TCP_ESTABLISHED)
			break;
	}
	obs(o, 'R', "resume %llu state %llu", (u64)i, (u64)sk->sk_state);
	o->resumed = sk;
	err = op_enqueue(o, 1 + below(o, 8));
	o->resumed = NULL;
	obs(o, 'R', "pacing %llu", (u64)(READ_ONCE(sk->sk_pacing_status) & 3));
	return err;
}

static int new_epoch(struct oracle *o, struct sk_buff *m)
{
	int err;

	/* The epoch begins once its sockets are all there. */
	err = socks_alloc(o, o->epoch + 1);
	if (err)
		return err;
	o->epoch++;
	o->n.epochs++;
	o->epoch_j = o_jiffies(o, o->now);
	obs(o, 'E', "epoch %llu", (u64)o->epoch);
	if ((o->orphan_mask & 1023) != 1023) {
		/* Orphan hashes of this epoch must not meet earlier ones. */
		struct nlattr *nest;

		skb_trim(m, 0);
		nest = nla_nest_start_noflag(m, TCA_OPTIONS);
		nla_put_u32(m, TCA_FQ_ORPHAN_MASK, 1023);
		nla_nest_end(m, nest);
		err = op_change(o, nest, 3);
		if (err)
			return err;
	}
	return resume_idle(o);
}

static void op_reset(struct oracle *o)
{
	u32 before, early;

	o->reset_flows += o->last_flows;
	rtnl_lock();
	before = count_let_go(o);
	spin_lock_bh(o->root_lock);
	qdisc_reset(o->sch);
	spin_unlock_bh(o->root_lock);
	early = count_let_go(o) - before;
	rtnl_unlock();
	obs(o, 'r', "reset, freed under RTNL %llu", (u64)early);
	observe_freed(o, 'R');
}

static void op_sock(struct oracle *o)
{
	u32 i = below(o, OR_SOCKS);
	struct sock *sk = sock_of(o, i);

	switch (below(o, 8)) {
	case 0 ... 1:
		/* A new socket at the same address, as fq sees it. */
		sk->sk_hash = rnd(o);
		obs(o, 'h', "sock %llu hash %llx", (u64)i, (u64)sk->sk_hash);
		break;
	case 2 ... 4:
		sk->sk_pacing_rate = pick_rate(o);
		obs(o, 'p', "sock %llu pacing_rate %llu", (u64)i, (u64)sk->sk_pacing_rate);
		break;
	case 5:
		sk->sk_max_pacing_rate = pick_rate(o);
		obs(o, 'P', "sock %llu max_pacing_rate %llu", (u64)i,
		    (u64)sk->sk_max_pacing_rate);
		break;
	default:
		sk->sk_state = i < OR_TCP ? tcp_states[below(o, ARRAY_SIZE(tcp_states))] :
					    udp_states[below(o, 2)];
		obs(o, 's', "sock %llu state %llu", (u64)i, (u64)sk->sk_state);
		break;
	}
}

/* --- one seed --------------------------------------------------------- */

/* oracle_qdisc_put() - the fq of oracle_qdisc() goes, if there is one. */
static void oracle_qdisc_put(struct oracle *o)
{
	if (!o->sch)
		return;
	rtnl_lock();
	qdisc_put(o->sch);
	rtnl_unlock();
	o->sch = NULL;
}

static void seed_end(struct oracle *o, u32 *leaked)
{
	u32 id;

	oracle_qdisc_put(o);
	*leaked = 0;
	for (id = 0; id < o->nskbs; id++) {
		struct sk_buff *skb = o->skbs[id];

		clone_put(o, id);
		if (o->flags[id] & OR_UNREF) {
			/* Destroying the qdisc must have freed it. */
			if (skb)
				(*leaked)++;
			o->skbs[id] = NULL;
			continue;
		}
		if (!skb)
			continue;
		/* Destroying the qdisc must have freed its reference. */
		if (refcount_read(&skb->users) != 1)
			(*leaked)++;
		else
			kfree_skb(skb);
		o->skbs[id] = NULL;
	}
	socks_free(o);
}

/*
 * oracle_qdisc() - a new fq of the implementation under test on D, in
 * o->sch, with the lock change's sch_tree_lock() takes: that of D's root,
 * which stays while D is held (nothing else changes D's qdisc meanwhile).
 */
static int oracle_qdisc(struct oracle *o)
{
	fq_vclock_timer_reset();
	o->requests = 0;
	rtnl_lock();
	o->sch = qdisc_create_dflt(netdev_get_tx_queue(o->ndev, 0), o->fq_ops,
				   TC_H_ROOT, NULL);
	if (o->sch)
		o->root_lock = qdisc_root_sleeping_lock(o->sch);
	rtnl_unlock();
	return o->sch ? 0 : -ENOMEM;
}

/* The options at the start: some attributes of every kind, valid. */
static int set_base(struct oracle *o, struct sk_buff *m)
{
	struct netlink_ext_ack extack = {};
	struct nlattr *nest;
	u32 i, n = below(o, 6);
	int err;

	skb_trim(m, 0);
	nest = nla_nest_start_noflag(m, TCA_OPTIONS);
	for (i = 0; i < n; i++)
		put_valid(m, o);
	nla_nest_end(m, nest);
	rtnl_lock();
	err = o->fq_ops->change(o->sch, nest, &extack);
	if (!err)
		err = observe_options(o);
	rtnl_unlock();
	return err;
}

static int run_seed(struct oracle *o, u64 s, u32 *leaked, unsigned long *took)
{
	unsigned long t0 = jiffies;
	struct sk_buff *m;
	int err = 0;
	u32 i;

	o->rng = s;
	o->hash = s;
	o->nskbs = 0;
	memset(&o->n, 0, sizeof(o->n));
	o->epoch = 0;
	o->op = 0;
	o->gc_exact = true;
	o->reset_flows = 0;
	o->last_flows = 0;
	o->last_gc = 0;
	o->buckets_log = 0;
	/* Virtual time: about 1000 s after boot; jiffies near their wrap. */
	o->nsbase = 1000 * NS + below(o, NSEC_PER_SEC);
	switch (below(o, 4)) {
	case 0:
		o->jbase = INITIAL_JIFFIES + below(o, 1000);
		break;
	case 1:
		o->jbase = -(unsigned long)below(o, 100 * HZ);
		break;
	default:
		o->jbase = rnd(o);
		break;
	}
	o->epoch_j = o->jbase;
	clock_set(o, o->nsbase);
	for (i = 0; i < OR_HASHES; i++)
		o->hash_hi[i] = rnd(o);
	*leaked = 0;
	m = alloc_skb(1024, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	err = socks_alloc(o, 0);
	if (err)
		goto out;
	err = oracle_qdisc(o);
	if (err)
		goto out;
	err = set_base(o, m);
	if (!err)
		err = observe_xstats(o);

	for (o->op = 1; o->op <= ops && !err; o->op++) {
		u32 r = below(o, 100), kind;

		if (r < 38) {
			err = op_enqueue(o, 1);
		} else if (r < 45) {
			err = op_enqueue(o, 2 + below(o, OR_BURST - 1));
		} else if (r < 66) {
			op_dequeue(o, 1 + below(o, OR_BURST));
		} else if (r < 76) {
			struct nlattr *opt;

			skb_trim(m, 0);
			opt = build_change(o, m, &kind);
			err = op_change(o, opt, kind);
		} else if (r < 77) {
			op_reset(o);
		} else if (r < 84) {
			op_sock(o);
		} else {
			err = op_advance(o, m);
		}
		observe_counters(o);
		if (!err)
			err = observe_xstats(o);
		if (verbose)
			rep(o, "%u = %016llx\n", o->op, o->hash);
		cond_resched();
	}
out:
	seed_end(o, leaked);
	kfree_skb(m);
	*took = jiffies - t0;
	return err;
}

/* --- ooo: one flow, out-of-order EDTs -------------------------------- */

static int ooo_options(struct oracle *o, struct sk_buff *m, u32 n)
{
	struct netlink_ext_ack extack = {};
	struct nlattr *nest;
	int err;

	skb_trim(m, 0);
	nest = nla_nest_start_noflag(m, TCA_OPTIONS);
	nla_put_u32(m, TCA_FQ_PLIMIT, n);
	nla_put_u32(m, TCA_FQ_FLOW_PLIMIT, n);
	nla_put_u32(m, TCA_FQ_HORIZON, 2000 * US);
	nla_nest_end(m, nest);
	rtnl_lock();
	err = o->fq_ops->change(o->sch, nest, &extack);
	rtnl_unlock();
	return err;
}

/*
 * One flow (a connected UDP socket out of the fast path, flow_limit and
 * limit N) fed N skbs whose EDTs defeat a walk of the flow's list: "late"
 * enqueues one skb with the latest time first and then ascending times
 * below it, "rand" random times. All times are in the past, so a dequeue
 * never waits: each run dequeues everything and reports
 *	ooo late n N deq D unordered U drops X hash H ns0 A ns1 B
 * where U counts dequeued skbs with an EDT below the one before, H folds
 * the dequeued ids, and A and B are the mean enqueue cost (ns, real time)
 * of the first and the last tenth of the skbs.
 */
static int run_ooo(struct oracle *o, u32 n, bool rand)
{
	u64 last = 0, cost[2] = {}, t, now;
	u32 i, deq = 0, unordered = 0, tenth = max(n / 10, 1U);
	struct socket *sock = NULL;
	struct sk_buff *m;
	u32 leaked;
	int err;

	o->rng = 1;
	o->hash = 1;
	o->nskbs = 0;
	o->n.drops = 0;
	o->nsbase = 1000 * NS;
	o->jbase = INITIAL_JIFFIES;
	clock_set(o, o->nsbase);
	now = o->now;
	m = alloc_skb(1024, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	err = sock_create_kern(&init_net, AF_INET, SOCK_DGRAM, IPPROTO_UDP, &sock);
	if (err)
		goto out;
	/* Keyed by the socket; out of the fast path, without pacing. */
	sock->sk->sk_state = TCP_ESTABLISHED;
	sock->sk->sk_max_pacing_rate = 125000;
	o->socks[0][0] = sock;
	err = oracle_qdisc(o) ?: ooo_options(o, m, n);

	for (i = 0; i < n && !err; i++) {
		struct sk_buff *skb, *to_free = NULL;

		skb = alloc_skb(OR_LINEAR, GFP_KERNEL);
		if (!skb) {
			err = -ENOMEM;
			break;
		}
		skb_put_zero(skb, 64);
		skb->mark = i;
		skb->dev = o->ndev;
		skb->sk = sock->sk;
		skb->destructor = oracle_sock_destructor;
		if (rand)
			skb->tstamp = now - 1 - below(o, 1U << 30);
		else	/* the latest first, then ascending below it */
			skb->tstamp = i ? now - 2ULL * n + i : now - 1;
		o_cb_init(skb, 64);
		o->flags[o->nskbs] = 0;
		o->skbs[o->nskbs++] = skb_get(skb);

		t = ktime_get_ns();
		o_enqueue(o, skb, &to_free);
		t = ktime_get_ns() - t;
		if (i < tenth)
			cost[0] += t;
		else if (i >= n - tenth)
			cost[1] += t;
		drop_list(o, to_free);
		if (!(i & 1023))
			cond_resched();
	}
	while (!err) {
		struct sk_buff *skb;

		skb = o_dequeue(o);
		if (!skb)
			break;
		deq++;
		if (skb->tstamp < last)
			unordered++;
		last = skb->tstamp;
		fold(o, skb->mark);
		skb_done(o, skb);
		if (!(deq & 1023))
			cond_resched();
	}
	if (!err)
		rep(o, "ooo %s n %u deq %u unordered %u drops %u hash %016llx ns0 %llu ns1 %llu\n",
		    rand ? "rand" : "late", n, deq, unordered, o->n.drops, o->hash,
		    div_u64(cost[0], tenth), div_u64(cost[1], tenth));
out:
	if (sock)
		sock->sk->sk_state = TCP_CLOSE;
	seed_end(o, &leaked);
	kfree_skb(m);
	if (!err && leaked)
		err = -EBADE;
	return err;
}

/* --- the timer_slack experiment ------------------------------------- */

/*
 * exp_flows TCP sockets sending 1,000 packets/s each (1,500 bytes, EDT
 * timestamps 1 ms apart, as TCP's own pacing stamps them), always one
 * packet queued, their first packets due at random phases within 1 ms; the watchdog fires at expiry + slack, as a lone
 * hrtimer does; each firing dequeues all that is due and refills the
 * flows. Reports firings and packets for slack @slack ns over @ms
 * virtual milliseconds.
 */
/* A packet of the experiment's flows into fq, which must keep it. */
static int slack_send(struct oracle *o, struct sk_buff *skb)
{
	struct sk_buff *to_free = NULL;

	o_cb_init(skb, 1500);
	o_enqueue(o, skb, &to_free);
	if (!to_free)
		return 0;
	kfree_skb_list(to_free);
	return -ENOSPC;
}

static int run_slack(struct oracle *o, u32 slack, u32 ms)
{
	struct netlink_ext_ack extack = {};
	struct socket **socks;
	struct sk_buff *m = NULL;
	struct nlattr *nest;
	u64 end, pkts = 0, fires = 0, t0;
	u32 i;
	int err;

	o->rng = 12345;
	o->hash = 1;
	o->nskbs = 0;
	o->nsbase = 1000 * NS;
	o->jbase = INITIAL_JIFFIES;
	clock_set(o, o->nsbase);
	socks = kcalloc(exp_flows, sizeof(*socks), GFP_KERNEL);
	m = alloc_skb(1024, GFP_KERNEL);
	err = -ENOMEM;
	if (!socks || !m)
		goto out;
	for (i = 0; i < exp_flows; i++) {
		err = sock_create_kern(&init_net, AF_INET, SOCK_STREAM, IPPROTO_TCP, &socks[i]);
		if (err)
			goto out;
		socks[i]->sk->sk_state = TCP_ESTABLISHED;
		socks[i]->sk->sk_pacing_rate = 1500 * 1000;
	}
	err = oracle_qdisc(o);
	if (err)
		goto out;
	nest = nla_nest_start_noflag(m, TCA_OPTIONS);
	nla_put_u32(m, TCA_FQ_PLIMIT, 4 * exp_flows);
	nla_put_u32(m, TCA_FQ_QUANTUM, 1500);
	nla_put_u32(m, TCA_FQ_INITIAL_QUANTUM, 0);
	nla_put_u32(m, TCA_FQ_TIMER_SLACK, slack);
	nla_put_u32(m, TCA_FQ_BUCKETS_LOG, 10);
	nla_nest_end(m, nest);
	rtnl_lock();
	err = o->fq_ops->change(o->sch, nest, &extack);
	rtnl_unlock();
	if (err)
		goto out;

	/* A packet a flow, due at a random phase within 1 ms. */
	for (i = 0; i < exp_flows && !err; i++) {
		struct sk_buff *skb = make_skb(o, 1500, INET_ECN_NOT_ECT, false);

		if (!skb) {
			err = -ENOMEM;
			break;
		}
		skb->sk = socks[i]->sk;
		skb->destructor = oracle_sock_destructor;
		skb->mark = i;
		skb->tstamp = o->now + 1 + below(o, NSEC_PER_MSEC);
		err = slack_send(o, skb);
	}
	/* The first run after the enqueues arms the watchdog. */
	end = o->now + (u64)ms * NSEC_PER_MSEC;
	t0 = ktime_get_ns();
	while (!err) {
		struct fq_vclock_timer t;
		u32 run;

		for (run = 0; ; run++) {
			struct sk_buff *skb;

			/* Every flow at most twice a firing. */
			if (run > 2 * exp_flows) {
				err = -ELOOP;
				break;
			}

			skb = o_dequeue(o);
			if (!skb)
				break;
			pkts++;
			/*
			 * The flow's next packet, 1 ms later: TCP stamps its
			 * departure time (EDT). One without a timestamp would
			 * take fq's fast path whenever every other flow waits.
			 */
			skb->tstamp += NSEC_PER_MSEC;
			skb->next = NULL;
			err = slack_send(o, skb);
			if (err)
				break;
		}
		fq_vclock_timer_read(&t);
		if (!t.armed) {
			err = -EPIPE;	/* backlogged flows, no timer */
			break;
		}
		if (t.hard > end)
			break;
		clock_set(o, max(t.hard, o->now));
		fq_vclock_timer_fire();
		fires++;
		if (verbose)
			rep(o, "fire at %llu after %llu packets\n", rel(o, o->now), pkts);
		if (!(fires & 1023))
			cond_resched();
	}
	if (!err)
		rep(o, "slack %u flows %u ms %u fires %llu pkts %llu fires_per_s %llu pkts_per_s %llu real_ms %llu\n",
		    slack, exp_flows, ms, fires, pkts, div_u64(fires * 1000, ms),
		    div_u64(pkts * 1000, ms), div_u64(ktime_get_ns() - t0, NSEC_PER_MSEC));
out:
	oracle_qdisc_put(o);
	for (i = 0; socks && i < exp_flows; i++) {
		if (!socks[i])
			continue;
		socks[i]->sk->sk_state = TCP_CLOSE;
		sock_release(socks[i]);
	}
	kfree(socks);
	kfree_skb(m);
	return err;
}

/* --- the flow table's limit -------------------------------------------- */

/*
 * One packet of each of @n new flows (orphans, one hash each), each
 * dequeued after its enqueue, behind one packet due later, in frozen
 * virtual time so that no flow grows
 * old enough to be collected; then, fq's gc age later, one packet each of
 * OR_FILL_LATER more new flows. C makes a flow for each; once its table is full
 * (4,096 flows in the oracle's build) sch_fq_rs sends a new flow's packet
 * as C sends one whose flow it cannot allocate, from the fast path queue,
 * counted in allocation_errors; once flows are idle, a full table sweeps
 * for them first, so every one of those gets its flow. Reports where
 * the first drop came (none in either) and the counters.
 */
static int fill_one(struct oracle *o, u32 hash, u32 *drops)
{
	struct sk_buff *skb = make_skb(o, 100, INET_ECN_NOT_ECT, false);
	struct sk_buff *to_free = NULL;

	if (!skb)
		return -ENOMEM;
	skb_set_hash(skb, hash, PKT_HASH_TYPE_L4);
	o_cb_init(skb, skb->len);
	o_enqueue(o, skb, &to_free);
	if (to_free) {
		(*drops)++;
		kfree_skb_list(to_free);
		return 0;
	}
	skb = o_dequeue(o);
	if (!skb)
		return -ENODATA;	/* due now, at no rate: it must leave */
	kfree_skb(skb);
	return 0;
}

/*
 * Out of memory for a new flow: every slab allocation of 4 enqueues of a
 * new flow's packet fails (the task's make_it_fail, as
 * /proc/self/make-it-fail sets it, with failslab's task-filter, set by
 * the caller: fq_oracle.sh, fq_mutants.sh; the skb is made before). fq
 * counts an allocation error and queues the packet on the fast path
 * queue, from which it leaves at once. Needs CONFIG_FAILSLAB.
 */
static int run_alloc_fail(struct oracle *o, u32 hash)
{
#ifdef CONFIG_FAILSLAB
	struct tc_fq_qd_stats st;
	u32 i, drops = 0;
	int err = 0;

	for (i = 0; i < 4 && !err; i++) {
		struct sk_buff *skb = make_skb(o, 100, INET_ECN_NOT_ECT, false);
		struct sk_buff *to_free = NULL;

		if (!skb)
			return -ENOMEM;
		skb_set_hash(skb, hash + i, PKT_HASH_TYPE_L4);
		o_cb_init(skb, skb->len);
		current->make_it_fail = 1;
		o_enqueue(o, skb, &to_free);
		current->make_it_fail = 0;
		if (to_free) {
			drops++;
			kfree_skb_list(to_free);
			continue;
		}
		skb = o_dequeue(o);
		if (!skb)
			err = -ENODATA;
		kfree_skb(skb);
	}
	if (!err)
		err = read_xstats(o, &st);
	if (!err)
		rep(o, "alloc_fail new 4 drops %u flows %u allocation_errors %llu\n",
		    drops, st.flows, st.allocation_errors);
	return err;
#else
	rep(o, "alloc_fail skipped (no CONFIG_FAILSLAB)\n");
	return 0;
#endif
}

static int run_fill(struct oracle *o, u32 n)
{
	struct netlink_ext_ack extack = {};
	struct tc_fq_qd_stats st;
	struct sk_buff *m;
	struct nlattr *nest;
	u32 i, drops = 0, first = 0, later = 0;
	int err;

	o->nsbase = 1000 * NS;
	o->jbase = INITIAL_JIFFIES;
	clock_set(o, o->nsbase);
	m = alloc_skb(1024, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	err = oracle_qdisc(o);
	if (err)
		goto out;
	/*
	 * Every hash its own flow; a maxrate keeps packets off the fast
	 * path (fq_fastpath_check()) without delaying a flow's first packet.
	 */
	nest = nla_nest_start_noflag(m, TCA_OPTIONS);
	nla_put_u32(m, TCA_FQ_ORPHAN_MASK, ~0U);
	nla_put_u32(m, TCA_FQ_FLOW_MAX_RATE, ~0U - 1);
	nla_nest_end(m, nest);
	rtnl_lock();
	err = o->fq_ops->change(o->sch, nest, &extack);
	rtnl_unlock();
	/*
	 * A packet due in 5 s, first: with it queued, a dequeue walks the
	 * flows left empty to the end and detaches them (fq_dequeue() returns
	 * at once from an empty qdisc), which makes them gc candidates.
	 */
	if (!err) {
		struct sk_buff *skb = make_skb(o, 100, INET_ECN_NOT_ECT, false);
		struct sk_buff *to_free = NULL;

		err = -ENOMEM;
		if (skb) {
			skb_set_hash(skb, ~0U, PKT_HASH_TYPE_L4);
			o_cb_init(skb, skb->len);
			skb->tstamp = o->now + 5 * NS;
			err = o_enqueue(o, skb, &to_free) == NET_XMIT_SUCCESS ? 0 : -ENOSPC;
			kfree_skb_list(to_free);
		}
	}
	for (i = 0; i < n && !err; i++) {
		u32 d = drops;

		err = fill_one(o, i, &drops);
		if (drops > d && !first)
			first = i + 1;
		if (!(i & 1023))
			cond_resched();
	}
	if (err)
		goto out;
	/* A dequeue that finds nothing due detaches the flows left empty. */
	if (o_dequeue(o)) {
		err = -EEXIST;
		goto out;
	}
	err = read_xstats(o, &st);
	if (err)
		goto out;
	rep(o, "fill %u first_drop %u drops %u flows %u allocation_errors %llu\n",
	    n, first, drops, st.flows, st.allocation_errors);
	/* fq's gc age is 3 s: every flow is idle and stale now. */
	clock_set(o, o->now + 4 * NS);
	for (i = 0; i < OR_FILL_LATER && !err; i++)
		err = fill_one(o, n + i, &later);
	if (!err)
		err = read_xstats(o, &st);
	if (!err)
		rep(o, "after_gc new %u drops %u flows %u gc_flows %llu allocation_errors %llu\n",
		    OR_FILL_LATER, later, st.flows, st.gc_flows, st.allocation_errors);
	if (!err)
		err = run_alloc_fail(o, n + OR_FILL_LATER);
out:
	oracle_qdisc_put(o);
	kfree_skb(m);
	return err;
}

static int oracle_run(struct oracle *o)
{
	unsigned int k;
	u32 leaked;
	int err = 0;

	if (slackexp) {
		static const u32 slacks[] = { 0, 10000, 100000 };

		for (k = 0; k < ARRAY_SIZE(slacks) && !err; k++)
			err = run_slack(o, slacks[k], slackexp);
		return err;
	}
	if (fill)
		return run_fill(o, fill);
	if (ooo) {
		err = run_ooo(o, ooo, false);
		return err ?: run_ooo(o, ooo_rand ? min(ooo_rand, ooo) : ooo, true);
	}
	for (k = 0; k < seeds && !err; k++) {
		u64 s = seed + k;
		unsigned long took = 0;

		if (verbose)
			rep(o, "# seed %llu impl %s\n", s, impl);
		err = run_seed(o, s, &leaked, &took);
		if (err) {
			rep(o, "seed %llu error %d at op %u\n", s, err, o->op);
			break;
		}
		rep(o, "seed %llu ops %u hash %016llx enq %u drops %u leaked %u ms %u fires %u advances %u epochs %u\n",
		    s, ops, o->hash, o->n.enq, o->n.drops, leaked,
		    jiffies_to_msecs(took), o->n.fires, o->n.advances, o->n.epochs);
		if (o->truncated)
			break;
	}
	return err;
}

static ssize_t report_read(struct file *f, char __user *ubuf, size_t n, loff_t *pos)
{
	return simple_read_from_buffer(ubuf, n, pos, or_report, or_report_len);
}

static const struct file_operations report_fops = {
	.owner = THIS_MODULE,
	.read = report_read,
	.llseek = default_llseek,
};

static int __init fq_oracle_init(void)
{
	const char *modname;
	struct oracle *o;
	int err;

	if (!seeds || !ops || ops > OR_MAX_OPS || !exp_flows)
		return -EINVAL;
	if (!strcmp(impl, "c"))
		modname = "sch_fq_vt";
	else if (!strcmp(impl, "rust"))
		modname = rsmod;
	else
		return -EINVAL;
	o = kzalloc_obj(*o, GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	o->max_skbs = max(ops * OR_BURST, ooo);
	o->skbs = kvcalloc(o->max_skbs, sizeof(*o->skbs), GFP_KERNEL);
	o->clones = kvcalloc(o->max_skbs, sizeof(*o->clones), GFP_KERNEL);
	o->flags = kvcalloc(o->max_skbs, sizeof(*o->flags), GFP_KERNEL);
	o->size = verbose ? max_t(size_t, OR_REPORT_V, (size_t)seeds * OR_REPORT_V_SEED) :
			    OR_REPORT + seeds * 128;
	o->buf = kvmalloc(o->size, GFP_KERNEL);
	o->scratch = alloc_skb(NLMSG_GOODSIZE, GFP_KERNEL);
	err = -ENOMEM;
	if (!o->skbs || !o->clones || !o->flags || !o->buf || !o->scratch)
		goto free;
	o->buf[0] = '\0';

	err = -ENOENT;
	o->fq_ops = fq_vclock_get_ops(modname);
	if (!o->fq_ops) {
		pr_err("load %s first: it has no qdisc ops here\n", modname);
		goto free;
	}
	rtnl_lock();
	o->ndev = __dev_get_by_name(&init_net, dev);
	err = -ENODEV;
	if (!o->ndev || netif_running(o->ndev)) {
		rtnl_unlock();
		pr_err("%s must exist and be down\n", dev);
		goto put;
	}
	dev_hold(o->ndev);
	/* What a NIC that paces in hardware offers (no 7.2 driver does). */
	WRITE_ONCE(o->ndev->max_pacing_offload_horizon, OR_OFFLOAD_MAX_US * NSEC_PER_USEC);
	rtnl_unlock();

	or_cur = o;
	err = oracle_run(o);
	or_cur = NULL;
	rtnl_lock();
	WRITE_ONCE(o->ndev->max_pacing_offload_horizon, 0);
	rtnl_unlock();
	dev_put(o->ndev);
	if (o->truncated)
		rep(o, "# report truncated\n");
	if (err)
		goto put;

	or_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("report", 0444, or_dir, NULL, &report_fops);
	or_report = o->buf;
	or_report_len = o->len;
	o->buf = NULL;
put:
	module_put(o->fq_ops->owner);
free:
	if (err && o->buf)
		pr_err("%s", o->buf);
	kvfree(o->buf);
	kfree_skb(o->scratch);
	kvfree(o->flags);
	kvfree(o->clones);
	kvfree(o->skbs);
	kfree(o);
	return err;
}

static void __exit fq_oracle_exit(void)
{
	debugfs_remove(or_dir);
	kvfree(or_report);
}

module_init(fq_oracle_init);
module_exit(fq_oracle_exit);
MODULE_DESCRIPTION("rsnet: differential oracle for the fq qdisc in virtual time, C against Rust");
MODULE_LICENSE("GPL");
