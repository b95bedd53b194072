// SPDX-License-Identifier: GPL-2.0
/*
 * fq_oracle: a differential oracle for the fq qdisc. It plays a seeded
 * pseudo-random script of operations on whichever module registered "fq"
 * (the C sch_fq or the Rust sch_fq_rs) and folds everything observable
 * into a hash per seed; fq_oracle.sh loads it once with each implementation
 * and compares the hashes. The script depends only on the seed, so equal
 * hashes mean equal observations.
 *
 *   tc qdisc add dev D root fq		(D down: nothing else uses it)
 *   insmod fq_oracle.ko dev=D seed=S seeds=N ops=M [verbose=1] [perturb=K]
 *   cat /sys/kernel/debug/fq_oracle/report
 *	seed S ops M hash H enq E drops D leaked 0 ms T
 *
 * For each seed the module makes a qdisc of its own with the root's ops
 * (qdisc_create_dflt(), options all default) on D's transmit queue, so the
 * root lock is that of D's root, and sets the time-safe base options
 * below. It then runs M operations:
 *
 *  - enqueue of one skb, or a burst of up to 32 from one source: orphans
 *    (skb->sk NULL, skb_set_hash() from a small pool so flows collide
 *    under orphan_mask) or kernel TCP and UDP sockets in ESTABLISHED,
 *    LISTEN (orphaned by fq) or CLOSE (hashed by fq) state, some UDP ones
 *    with SO_MAX_PACING_RATE (never the fast path); pkt_len 1..64 KiB
 *    (the linear skb is at most 128 bytes: fq only reads qdisc_pkt_len()),
 *    some GSO (gso_segs counts in bstats); skb->priority of every band,
 *    TC_PRIO_CONTROL, and with bits above TC_PRIO_MAX; EDT tstamps 0, in
 *    the past, now, far ahead within the horizon, and beyond it (dropped
 *    or capped, by horizon_drop).
 *  - a run of up to 32 dequeues.
 *  - change (sch->ops->change under RTNL, as qdisc_change() calls it) of
 *    1..4 attributes: limit and flow_limit (lowered under backlog: change
 *    drops to the limit), quantum, initial_quantum, rate_enable,
 *    low_rate_threshold, maxrate (unlimited only), refill_delay, orphan_mask,
 *    ce_threshold, timer_slack, horizon, horizon_drop, priomap, weights,
 *    buckets; out-of-range values one at a time (an invalid attribute
 *    among valid ones only with partial=1, see below); attributes of a
 *    wrong length and of unknown type.
 *  - qdisc_reset() under the root lock; a socket's state or sk_hash
 *    changed (sk_hash: fq takes the socket for a new one).
 *
 * After every operation it observes and hashes: each dequeued skb's id
 * (skb->mark), each dropped skb's id and reason (tc_skb_cb()->drop_reason,
 * as qdisc_drop_reason() sets it, walking the enqueue's to_free list), the
 * ids change and reset freed (each skb carries a reference of ours:
 * the qdisc freed those left with one), the enqueue status, change's
 * errno, sch->q.qlen, sch->qstats, sch->bstats, every field of
 * tc_fq_qd_stats from ->dump_stats but time_next_delayed_flow and
 * unthrottle_latency_ns, each socket's sk_pacing_status, and the options
 * from ->dump (after each change).
 *
 * Time-independent by construction (the two runs happen at different
 * times and speeds; what is left out and why):
 *  - no pacing: maxrate stays unlimited and sockets keep sk_pacing_rate
 *    ~0UL, so no flow gets a time_next_packet from a rate;
 *  - EDT tstamps "ahead" are 100 s to 3000 s ahead, horizons 0 or 1000 s
 *    and more, at least 100 s from every tstamp, so whether a tstamp is
 *    beyond the horizon, where a capped one sorts, and that a throttled
 *    flow never becomes due (fq_check_throttled() never unthrottles) do
 *    not depend on when the script runs; "past" tstamps are before the
 *    seed's start, so they sort before every tstamp-0 packet;
 *  - flow_refill_delay 100 s or more (a refill depends on jiffies);
 *  - no gc: a seed must finish within 3 s (FQ_GC_AGE), checked (the
 *    seed is run again, and reported as "slow" if it never makes it);
 *  - ce_threshold 100 s or more: never marks;
 *  - time_next_delayed_flow and unthrottle_latency_ns are not compared.
 *
 * partial=1 adds changes that carry one invalid value (buckets,
 * rate_enable, priomap, weights) among valid attributes: C's fq_change()
 * applies the valid ones that come before (and most after) the invalid one
 * and still drops to the limit before it returns the error; the other may
 * refuse the whole change. perturb=K folds one extra word into the hash at
 * operation K of every seed (the driver's self-check). verbose=1 writes
 * the observation stream with each operation's hash to the report.
 *
 * ooo=N replaces the seeds by two runs of one flow (a connected UDP
 * socket out of the fast path, flow_limit and limit N) fed N skbs whose
 * EDTs defeat a walk of the flow's list: "late" enqueues one skb with the
 * latest time first and then ascending times below it, "rand" random
 * times. All times are in the past, so a dequeue never waits: each run
 * dequeues everything and reports
 *	ooo late n N deq D unordered U drops X hash H ns0 A ns1 B
 * where U counts dequeued skbs with an EDT below the one before, H folds
 * the dequeued ids, and A and B are the mean enqueue cost (ns) of the
 * first and the last tenth of the skbs.
 *
 * Init returns 0 once the report is written (rmmod the module after
 * reading it), or a negative errno.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
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
#include <net/netlink.h>
#include <net/sch_generic.h>
#include <net/sock.h>
#include <net/tcp_states.h>

static char *dev = "fqo0";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "device whose root qdisc is fq (down)");

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

static uint perturb;
module_param(perturb, uint, 0444);
MODULE_PARM_DESC(perturb, "self-check: perturb the hash at operation K (1-based) of each seed");

static bool partial;
module_param(partial, bool, 0444);
MODULE_PARM_DESC(partial, "also changes with one invalid value among valid ones");

static uint ooo;
module_param(ooo, uint, 0444);
MODULE_PARM_DESC(ooo, "instead of seeds: one flow fed this many skbs out of time order");

#define OR_MAX_OPS	20000
#define OR_BURST	32
#define OR_TCP		6
#define OR_UDP		4
#define OR_SOCKS	(OR_TCP + OR_UDP)
#define OR_HASHES	48
#define OR_LINEAR	128
#define OR_TRIES	3
#define OR_REPORT	(64 << 10)
#define OR_REPORT_V	(8 << 20)
/*
 * No flow can be garbage collected during a seed shorter than FQ_GC_AGE
 * (3 s): fq collects a flow when jiffies > age + 3 s, and a flow's age is
 * set (jiffies | 1) when it goes idle, after the seed started.
 */
#define OR_MAX_JIFFIES	(3 * HZ)

#define NS		1000000000ULL
#define US		1000000U	/* a second in usec, for attributes */

struct oracle {
	/* the run */
	struct net_device *ndev;
	const struct Qdisc_ops *fq_ops;
	struct Qdisc *sch;
	spinlock_t *root_lock;
	struct socket *socks[OR_SOCKS];
	struct sk_buff *scratch;	/* dumps */
	struct sk_buff **skbs;		/* by id: queued, with our reference */
	u32 nskbs, max_skbs;
	u64 rng;
	u64 hash;
	u64 base;			/* ktime at the seed's start */
	u32 hashes[OR_HASHES];
	u32 op;
	/* counts for the summary line */
	u32 enq, drops;
	/* the report */
	char *buf;
	size_t len, size;
	bool truncated;
};

static struct dentry *or_dir;
static char *or_report;
static size_t or_report_len;

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

static void oracle_skb_destructor(struct sk_buff *skb)
{
	/* Only there for skb_orphan(): the sockets are ours, unreferenced. */
}

/* --- sockets -------------------------------------------------------- */

static const int tcp_states[] = { TCP_ESTABLISHED, TCP_LISTEN, TCP_CLOSE };
static const int udp_states[] = { TCP_ESTABLISHED, TCP_CLOSE };

static void socks_free(struct oracle *o)
{
	int i;

	for (i = 0; i < OR_SOCKS; i++) {
		if (!o->socks[i])
			continue;
		/* Unhashed, never connected: closing does nothing else. */
		o->socks[i]->sk->sk_state = TCP_CLOSE;
		sock_release(o->socks[i]);
		o->socks[i] = NULL;
	}
}

static int socks_alloc(struct oracle *o)
{
	int i, err;

	for (i = 0; i < OR_SOCKS; i++) {
		bool tcp = i < OR_TCP;
		struct sock *sk;

		err = sock_create_kern(&init_net, AF_INET,
				       tcp ? SOCK_STREAM : SOCK_DGRAM,
				       tcp ? IPPROTO_TCP : IPPROTO_UDP,
				       &o->socks[i]);
		if (err) {
			o->socks[i] = NULL;
			return err;
		}
		sk = o->socks[i]->sk;
		/* Nothing else sees these sockets: fq only reads them. */
		sk->sk_state = tcp ? tcp_states[below(o, 3)] : udp_states[below(o, 2)];
		sk->sk_hash = rnd(o);
		/* Out of the fast path, without pacing (sk_pacing_rate stays). */
		if (!tcp && i >= OR_SOCKS - 2)
			sk->sk_max_pacing_rate = 125000;
	}
	return 0;
}

/* --- observing the qdisc ------------------------------------------- */

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
		pacing |= (READ_ONCE(o->socks[i]->sk->sk_pacing_status) & 3) << (2 * i);
	obs(o, 'q', "qlen %llu backlog %llu drops %llu overlimits %llu requeues %llu bytes %llu packets %llu pacing %llx",
	    (u64)qlen, (u64)backlog, (u64)drops, (u64)overlimits,
	    (u64)requeues, bytes, packets, (u64)pacing);
}

static int observe_xstats(struct oracle *o)
{
	struct tc_fq_qd_stats st;
	struct gnet_dump d;
	struct nlattr *nest, *a;
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
		if (nla_type(a) == TCA_STATS_APP && nla_len(a) == sizeof(st)) {
			memcpy(&st, nla_data(a), sizeof(st));
			found = true;
		}
	}
	if (!found)
		return -ENODATA;
	/* Time-dependent: when the first throttled flow is due, EWMA. */
	st.time_next_delayed_flow = 0;
	st.unthrottle_latency_ns = 0;
	fold_bytes(o, &st, sizeof(st));
	if (verbose)
		rep(o, "%u x flows %u inactive %u throttled_flows %u throttled %llu gc %llu fastpath %llu flows_plimit %llu too_long %llu alloc_err %llu ce %llu hdrops %llu hcaps %llu band_drops %llu/%llu/%llu band_pkts %u/%u/%u\n",
		    o->op, st.flows, st.inactive_flows, st.throttled_flows,
		    st.throttled, st.gc_flows, st.fastpath_packets,
		    st.flows_plimit, st.pkts_too_long, st.allocation_errors,
		    st.ce_mark, st.horizon_drops, st.horizon_caps,
		    st.band_drops[0], st.band_drops[1], st.band_drops[2],
		    st.band_pkt_count[0], st.band_pkt_count[1],
		    st.band_pkt_count[2]);
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
	if (!verbose)
		return 0;
	nest = (struct nlattr *)o->scratch->data;
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

/* Skbs the qdisc freed outside enqueue and dequeue (change, reset). */
static void observe_freed(struct oracle *o, char tag)
{
	u32 id;

	for (id = 0; id < o->nskbs; id++) {
		struct sk_buff *skb = o->skbs[id];

		if (!skb || refcount_read(&skb->users) != 1)
			continue;
		obs(o, tag, "freed %llu", (u64)id);
		o->skbs[id] = NULL;
		skb_mark_not_on_list(skb);
		kfree_skb(skb);
	}
}

/* --- operations ------------------------------------------------------ */

static u32 pick_len(struct oracle *o)
{
	switch (below(o, 8)) {
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

/* skb->tstamp: 0, past, now, ahead (within some horizons), beyond all. */
static s64 pick_tstamp(struct oracle *o, u32 *cls)
{
	static const u64 ahead[] = { 100 * NS, 500 * NS, 1500 * NS, 3000 * NS };

	*cls = below(o, 20);
	switch (*cls) {
	case 0 ... 10:
		*cls = 0;
		return 0;
	case 11 ... 12:
		*cls = 1;
		/* Before the seed started: before every tstamp-0 packet. */
		return max_t(s64, 1, o->base - 1 - below(o, 1000000000));
	case 13 ... 14:
		*cls = 2;
		return ktime_get_ns();
	case 15 ... 17:
		*cls = 3;
		return o->base + ahead[below(o, ARRAY_SIZE(ahead))];
	default:
		*cls = 4;
		/* Beyond ~0U usec, the largest horizon. */
		return o->base + 4400 * NS;
	}
}

static void drop_list(struct oracle *o, struct sk_buff *to_free)
{
	while (to_free) {
		struct sk_buff *skb = to_free;
		u32 id = skb->mark;

		to_free = skb->next;
		skb_mark_not_on_list(skb);
		obs(o, 'd', "id %llu reason %llu", (u64)id,
		    (u64)tc_skb_cb(skb)->drop_reason);
		o->drops++;
		kfree_skb(skb);		/* the qdisc's */
		if (id < o->nskbs && o->skbs[id] == skb) {
			o->skbs[id] = NULL;
			kfree_skb(skb);	/* ours */
		} else {
			obs(o, '?', "stray %llu", (u64)id);
		}
	}
}

/* Enqueue @n skbs from one source. */
static int op_enqueue(struct oracle *o, u32 n)
{
	u32 src = below(o, 10) < 4 ? OR_SOCKS : below(o, OR_SOCKS);
	u32 prio = pick_prio(o);
	u32 i;

	for (i = 0; i < n; i++) {
		struct sk_buff *skb, *to_free = NULL;
		u32 len, cls, id, hash;
		s64 tstamp;
		int ret;

		if (o->nskbs == o->max_skbs)
			return 0;
		len = pick_len(o);
		/* A burst is one flow, mostly one priority. */
		if (i == 0 || chance(o, 10))
			prio = pick_prio(o);
		hash = o->hashes[below(o, OR_HASHES)];
		tstamp = pick_tstamp(o, &cls);
		skb = alloc_skb(OR_LINEAR, GFP_KERNEL);
		if (!skb)
			return -ENOMEM;
		skb_put_zero(skb, min_t(u32, len, OR_LINEAR));
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
		skb_set_hash(skb, hash, PKT_HASH_TYPE_L4);
		if (src < OR_SOCKS) {
			skb->sk = o->socks[src]->sk;
			skb->destructor = oracle_skb_destructor;
		}
		qdisc_skb_cb(skb)->pkt_len = len;
		o->skbs[id] = skb_get(skb);
		o->enq++;

		spin_lock_bh(o->root_lock);
		ret = o->sch->enqueue(skb, o->sch, &to_free);
		spin_unlock_bh(o->root_lock);
		obs(o, 'e', "id %llu src %llu prio %llx len %llu gso %llu ts %llu ret %llx",
		    (u64)id, (u64)src, (u64)prio, (u64)len,
		    (u64)skb_shinfo(skb)->gso_segs, (u64)cls, (u64)ret);
		drop_list(o, to_free);
	}
	return 0;
}

static void op_dequeue(struct oracle *o, u32 n)
{
	u32 i;

	for (i = 0; i < n; i++) {
		struct sk_buff *skb;
		u32 id;

		spin_lock_bh(o->root_lock);
		skb = o->sch->dequeue(o->sch);
		spin_unlock_bh(o->root_lock);
		if (!skb) {
			obs(o, 'n', "after %llu", (u64)i);
			return;
		}
		skb_mark_not_on_list(skb);
		id = skb->mark;
		obs(o, 'D', "id %llu", (u64)id);
		if (id < o->nskbs && o->skbs[id] == skb) {
			o->skbs[id] = NULL;
			kfree_skb(skb);
		} else {
			/* Not one of ours, or twice: the hash says so. */
			obs(o, '?', "stray %llu", (u64)id);
		}
		kfree_skb(skb);
	}
}

static void put_weights(struct sk_buff *m, struct oracle *o, bool bad)
{
	static const s32 dflt[3] = { 9 << 16, 3 << 16, 1 << 16 };
	s32 w[3];
	int i;

	for (i = 0; i < 3; i++)
		w[i] = chance(o, 50) ? FQ_MIN_WEIGHT + below(o, 1 << 20) : dflt[i];
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

/* One valid attribute, time-safe (see the header). */
static void put_valid(struct sk_buff *m, struct oracle *o)
{
	static const u32 horizons[] = { 0, 1000 * US, 2000 * US, 4000 * US, ~0U };
	static const u32 masks[] = { 0, 1, 3, 15, 1023, ~0U };

	switch (below(o, 15)) {
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
		nla_put_u32(m, TCA_FQ_RATE_ENABLE, below(o, 2));
		break;
	case 5:
		nla_put_u32(m, TCA_FQ_LOW_RATE_THRESHOLD, rnd(o));
		break;
	case 6:
		/* Unlimited only: a rate would pace, by the clock. */
		nla_put_u32(m, TCA_FQ_FLOW_MAX_RATE, ~0U);
		break;
	case 7:
		nla_put_u32(m, TCA_FQ_FLOW_REFILL_DELAY, 100 * US + below(o, 4000 * US));
		break;
	case 8:
		nla_put_u32(m, TCA_FQ_ORPHAN_MASK, chance(o, 30) ? (u32)rnd(o) :
			    masks[below(o, ARRAY_SIZE(masks))]);
		break;
	case 9:
		nla_put_u32(m, TCA_FQ_CE_THRESHOLD, 100 * US + below(o, ~0U - 100 * US));
		break;
	case 10:
		nla_put_u32(m, TCA_FQ_TIMER_SLACK, rnd(o));
		break;
	case 11:
		nla_put_u32(m, TCA_FQ_HORIZON, horizons[below(o, ARRAY_SIZE(horizons))]);
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
	switch (below(o, 4)) {
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

static int op_change(struct oracle *o, struct sk_buff *m, struct nlattr *opt, u32 kind)
{
	struct netlink_ext_ack extack = {};
	int err, ret;

	rtnl_lock();
	err = o->fq_ops->change(o->sch, opt, &extack);
	ret = observe_options(o);
	/* rtnl_kfree_skbs() frees what change dropped only now. */
	rtnl_unlock();
	obs(o, 'c', "kind %llu err %lld", (u64)kind, (s64)err);
	if (verbose && extack._msg)
		rep(o, "%u m %s\n", o->op, extack._msg);
	observe_freed(o, 'C');
	return ret;
}

static void op_reset(struct oracle *o)
{
	rtnl_lock();
	spin_lock_bh(o->root_lock);
	qdisc_reset(o->sch);
	spin_unlock_bh(o->root_lock);
	rtnl_unlock();
	obs(o, 'r', "reset");
	observe_freed(o, 'R');
}

static void op_sock(struct oracle *o)
{
	u32 i = below(o, OR_SOCKS);
	struct sock *sk = o->socks[i]->sk;

	if (chance(o, 25)) {
		/* A new socket at the same address, as fq sees it. */
		sk->sk_hash = rnd(o);
		obs(o, 'h', "sock %llu hash %llx", (u64)i, (u64)sk->sk_hash);
		return;
	}
	sk->sk_state = i < OR_TCP ? tcp_states[below(o, 3)] : udp_states[below(o, 2)];
	obs(o, 's', "sock %llu state %llu", (u64)i, (u64)sk->sk_state);
}

/* --- one seed --------------------------------------------------------- */

/* Time-safe options before any packet (see the header). */
static int set_base(struct oracle *o, struct sk_buff *m)
{
	struct netlink_ext_ack extack = {};
	struct nlattr *nest;
	int err;

	skb_trim(m, 0);
	nest = nla_nest_start_noflag(m, TCA_OPTIONS);
	nla_put_u32(m, TCA_FQ_FLOW_REFILL_DELAY, 1000 * US);
	nla_put_u32(m, TCA_FQ_HORIZON, 2000 * US);
	nla_put_u8(m, TCA_FQ_HORIZON_DROP, below(o, 2));
	nla_nest_end(m, nest);
	rtnl_lock();
	err = o->fq_ops->change(o->sch, nest, &extack);
	if (!err)
		err = observe_options(o);
	rtnl_unlock();
	return err;
}

static void seed_end(struct oracle *o, u32 *leaked)
{
	u32 id;

	if (o->sch) {
		rtnl_lock();
		qdisc_put(o->sch);
		rtnl_unlock();
		o->sch = NULL;
	}
	*leaked = 0;
	for (id = 0; id < o->nskbs; id++) {
		struct sk_buff *skb = o->skbs[id];

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
	rtnl_lock();
	o->sch = qdisc_create_dflt(netdev_get_tx_queue(o->ndev, 0), o->fq_ops,
				   TC_H_ROOT, NULL);
	if (o->sch)
		o->root_lock = qdisc_root_sleeping_lock(o->sch);
	rtnl_unlock();
	return o->sch ? 0 : -ENOMEM;
}

static int run_seed(struct oracle *o, u64 s, u32 *leaked, unsigned long *took)
{
	struct sk_buff *m;
	unsigned long t0 = jiffies;
	int err = 0;
	u32 i;

	o->rng = s;
	o->hash = s;
	o->nskbs = 0;
	o->enq = 0;
	o->drops = 0;
	o->op = 0;
	o->base = ktime_get_ns();
	*leaked = 0;
	for (i = 0; i < OR_HASHES; i++)
		o->hashes[i] = rnd(o);
	m = alloc_skb(1024, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	err = socks_alloc(o);
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

		if (r < 45) {
			err = op_enqueue(o, 1);
		} else if (r < 53) {
			err = op_enqueue(o, 2 + below(o, OR_BURST - 1));
		} else if (r < 80) {
			op_dequeue(o, 1 + below(o, OR_BURST));
		} else if (r < 92) {
			struct nlattr *opt;

			skb_trim(m, 0);
			opt = build_change(o, m, &kind);
			err = op_change(o, m, opt, kind);
		} else if (r < 93) {
			op_reset(o);
		} else {
			op_sock(o);
		}
		if (perturb && o->op == perturb)
			obs(o, '!', "perturbed");
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

static int run_ooo(struct oracle *o, u32 n, bool rand)
{
	u64 now = ktime_get_ns(), last = 0, cost[2] = {}, t;
	u32 i, deq = 0, unordered = 0, tenth = max(n / 10, 1U);
	struct socket *sock = NULL;
	struct sk_buff *m;
	u32 leaked;
	int err;

	/* Room for the times below now, all after boot. */
	if (now < (1ULL << 31) + 2ULL * n)
		return -EAGAIN;
	o->rng = 1;
	o->hash = 1;
	o->nskbs = 0;
	o->drops = 0;
	m = alloc_skb(1024, GFP_KERNEL);
	if (!m)
		return -ENOMEM;
	err = sock_create_kern(&init_net, AF_INET, SOCK_DGRAM, IPPROTO_UDP, &sock);
	if (err)
		goto out;
	/* Keyed by the socket; out of the fast path, without pacing. */
	sock->sk->sk_state = TCP_ESTABLISHED;
	sock->sk->sk_max_pacing_rate = 125000;
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
		skb->destructor = oracle_skb_destructor;
		if (rand)
			skb->tstamp = now - 1 - below(o, 1U << 30);
		else	/* the latest first, then ascending below it */
			skb->tstamp = i ? now - 2ULL * n + i : now - 1;
		qdisc_skb_cb(skb)->pkt_len = 64;
		o->skbs[o->nskbs++] = skb_get(skb);

		t = ktime_get_ns();
		spin_lock_bh(o->root_lock);
		o->sch->enqueue(skb, o->sch, &to_free);
		spin_unlock_bh(o->root_lock);
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

		spin_lock_bh(o->root_lock);
		skb = o->sch->dequeue(o->sch);
		spin_unlock_bh(o->root_lock);
		if (!skb)
			break;
		skb_mark_not_on_list(skb);
		deq++;
		if (skb->tstamp < last)
			unordered++;
		last = skb->tstamp;
		fold(o, skb->mark);
		if (skb->mark < o->nskbs && o->skbs[skb->mark] == skb) {
			o->skbs[skb->mark] = NULL;
			kfree_skb(skb);
		}
		kfree_skb(skb);
		if (!(deq & 1023))
			cond_resched();
	}
	if (!err)
		rep(o, "ooo %s n %u deq %u unordered %u drops %u hash %016llx ns0 %llu ns1 %llu\n",
		    rand ? "rand" : "late", n, deq, unordered, o->drops, o->hash,
		    div_u64(cost[0], tenth), div_u64(cost[1], tenth));
out:
	if (sock)
		sock->sk->sk_state = TCP_CLOSE;
	o->socks[0] = sock;
	seed_end(o, &leaked);
	kfree_skb(m);
	if (!err && leaked)
		err = -EBADE;
	return err;
}

static int oracle_run(struct oracle *o)
{
	unsigned int k, t;
	u32 leaked;
	int err = 0;

	if (ooo) {
		err = run_ooo(o, ooo, false);
		return err ?: run_ooo(o, ooo, true);
	}
	for (k = 0; k < seeds && !err; k++) {
		u64 s = seed + k;
		unsigned long took = 0;
		size_t mark = o->len;

		for (t = 0; t < OR_TRIES; t++) {
			o->len = mark;
			o->truncated = false;
			if (verbose)
				rep(o, "# seed %llu impl %s\n", s,
				    module_name(o->fq_ops->owner));
			err = run_seed(o, s, &leaked, &took);
			/* Too slow for gc to stay out: run the seed again. */
			if (err || took <= OR_MAX_JIFFIES)
				break;
		}
		if (err) {
			rep(o, "seed %llu error %d at op %u\n", s, err, o->op);
			break;
		}
		rep(o, "seed %llu ops %u hash %016llx enq %u drops %u leaked %u ms %u%s\n",
		    s, ops, o->hash, o->enq, o->drops, leaked,
		    jiffies_to_msecs(took), took <= OR_MAX_JIFFIES ? "" : " slow");
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
	struct oracle *o;
	struct Qdisc *root;
	int err;

	if (!seeds || !ops || ops > OR_MAX_OPS)
		return -EINVAL;
	o = kzalloc(sizeof(*o), GFP_KERNEL);
	if (!o)
		return -ENOMEM;
	o->max_skbs = max(ops * OR_BURST, ooo);
	o->skbs = kvcalloc(o->max_skbs, sizeof(*o->skbs), GFP_KERNEL);
	o->size = verbose ? OR_REPORT_V : OR_REPORT + seeds * 96;
	o->buf = kvmalloc(o->size, GFP_KERNEL);
	o->scratch = alloc_skb(NLMSG_GOODSIZE, GFP_KERNEL);
	err = -ENOMEM;
	if (!o->skbs || !o->buf || !o->scratch)
		goto free;
	o->buf[0] = '\0';

	rtnl_lock();
	o->ndev = __dev_get_by_name(&init_net, dev);
	err = -ENODEV;
	if (!o->ndev) {
		rtnl_unlock();
		goto free;
	}
	root = rtnl_dereference(o->ndev->qdisc);
	err = -EINVAL;
	if (netif_running(o->ndev) || strcmp(root->ops->id, "fq") ||
	    !root->ops->change || !root->ops->dump_stats) {
		rtnl_unlock();
		pr_err("%s must be down with an fq root\n", dev);
		goto free;
	}
	/* D's root holds the ops' module while our qdiscs come and go. */
	o->fq_ops = root->ops;
	dev_hold(o->ndev);
	rtnl_unlock();

	err = oracle_run(o);
	dev_put(o->ndev);
	if (o->truncated)
		rep(o, "# report truncated\n");
	if (err)
		goto free;

	or_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("report", 0444, or_dir, NULL, &report_fops);
	or_report = o->buf;
	or_report_len = o->len;
	o->buf = NULL;
free:
	if (err && o->buf)
		pr_err("%s", o->buf);
	kvfree(o->buf);
	kfree_skb(o->scratch);
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
MODULE_DESCRIPTION("rsnet: differential oracle for the fq qdisc, C against Rust");
MODULE_LICENSE("GPL");
