// SPDX-License-Identifier: GPL-2.0
/*
 * fq_bench: the cost of one enqueue + dequeue of the fq qdisc alone,
 * whichever module registered "fq" (the C sch_fq or the Rust sch_fq_rs).
 * pktgen measures the whole transmit path, of which the qdisc is a small
 * part; this measures the qdisc's own ops, as page_pool_bench does for
 * page_pool.
 *
 *   tc qdisc add dev D root fq [options]	(D down: no other traffic)
 *   modprobe fq_bench dev=D [flows=F] [burst=B] [loops=N] [cpu=C] [sock=1]
 *	[mark=ID]
 *	fq_bench: impl=sch_fq flows=F burst=B sock=S pkts=N ns=X.XX cycles=N
 *
 * Each loop enqueues @burst 64-byte skbs of @flows flows (skb->hash set,
 * so fq hashes them as orphans without the flow dissector) and dequeues
 * them all, under the qdisc root lock with BH disabled, in a kthread bound
 * to CPU @cpu (default: the first online CPU). ns and cycles are per packet
 * (one enqueue and one dequeue). With burst 1 every packet takes fq's fast
 * path; with a burst, packets after the eighth go through the flows
 * (lookup, new/old lists, round robin).
 *
 * More than 1,024 orphan flows need a wider orphan_mask (fq's default keeps
 * 1,024 hashes).
 *
 * With sock=1 each flow is a kernel TCP socket (never connected, its state
 * set to established for the run and back to closed before release) that
 * owns the flow's skbs, without a destructor: fq then classifies by socket
 * as for a connected TCP flow (socket state, hash, full-socket and TCP
 * checks, pacing status), the path of real TCP traffic.
 *
 * The measured loops are a region @mark of make bench's cache model
 * (rsnet_cache_mark.h).
 *
 * D must be down (its transmit queue then runs noop, so only this module
 * calls the qdisc) and the qdisc must not throttle (no maxrate): a packet
 * held back fails the run with -EAGAIN. Init returns 0 after printing
 * (remove the module with modprobe -r), or a negative errno.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/math64.h>
#include <linux/module.h>
#include <linux/net.h>
#include <linux/netdevice.h>
#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <linux/slab.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>
#include <net/sch_generic.h>
#include <net/sock.h>
#include <net/tcp_states.h>

#include "rsnet_cache_mark.h"
#include "run_on_cpu.h"

static char *dev = "fqbench";
module_param(dev, charp, 0444);
MODULE_PARM_DESC(dev, "device whose root qdisc is fq (down)");

static unsigned int flows = 1;
module_param(flows, uint, 0444);
MODULE_PARM_DESC(flows, "flows, 1..1048576 (default 1)");

static unsigned int burst = 1;
module_param(burst, uint, 0444);
MODULE_PARM_DESC(burst, "packets enqueued before dequeueing, 1..64 (default 1)");

static unsigned long loops = 200000;
module_param(loops, ulong, 0444);
MODULE_PARM_DESC(loops, "packets in all (default 200000)");

static bool sock;
module_param(sock, bool, 0444);
MODULE_PARM_DESC(sock, "the flows are TCP sockets, not orphan hashes (default 0)");

static int cpu = -1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "CPU to run on (default: first online)");

static unsigned int mark;
module_param(mark, uint, 0444);
MODULE_PARM_DESC(mark, "region of make bench's cache model, 0..4095 (default 0)");

#define BENCH_MAX_BURST	64
#define BENCH_MAX_FLOWS	(1U << 20)
#define BENCH_CHUNK	4096
#define BENCH_PKT_LEN	64

struct fq_bench {
	struct Qdisc *sch;
	spinlock_t *root_lock;
	struct sk_buff *skb[BENCH_MAX_BURST];
	struct socket **socks;	/* flows of them with sock=1, else NULL */
	u64 ns;
	u64 cycles;
	unsigned long pkts;
};

/*
 * One burst: enqueue all skbs, dequeue them back into the array. A slot is
 * NULL while its skb belongs to the qdisc (or to @to_free).
 */
static int bench_burst(struct fq_bench *b, unsigned int *next_flow,
		       struct sk_buff **to_free)
{
	struct Qdisc *sch = b->sch;
	unsigned int i;

	for (i = 0; i < burst; i++) {
		struct sk_buff *skb = b->skb[i];

		skb->tstamp = 0;
		skb_set_hash(skb, *next_flow, PKT_HASH_TYPE_L4);
		skb->sk = b->socks ? b->socks[*next_flow]->sk : NULL;
		if (++*next_flow == flows)
			*next_flow = 0;
		qdisc_skb_cb(skb)->pkt_len = skb->len;
		qdisc_skb_cb(skb)->pkt_segs = 1;
		b->skb[i] = NULL;
		if (sch->enqueue(skb, sch, to_free) != NET_XMIT_SUCCESS)
			return -ENOSPC;
	}
	for (i = 0; i < burst; i++) {
		struct sk_buff *skb = sch->dequeue(sch);

		if (!skb)
			return -EAGAIN;
		skb_mark_not_on_list(skb);
		b->skb[i] = skb;
	}
	return 0;
}

static int bench_run(void *arg)
{
	struct fq_bench *b = arg;
	spinlock_t *root_lock = b->root_lock;
	struct sk_buff *to_free = NULL;
	unsigned int next_flow = 0;
	int err = 0;

	while (b->pkts < loops && !err) {
		unsigned int n;
		cycles_t c0;
		u64 t0;

		spin_lock_bh(root_lock);
		t0 = ktime_get_ns();
		c0 = get_cycles();
		rsnet_cache_begin(mark);
		for (n = 0; n < BENCH_CHUNK && !err; n += burst)
			err = bench_burst(b, &next_flow, &to_free);
		rsnet_cache_end(mark);
		b->cycles += get_cycles() - c0;
		b->ns += ktime_get_ns() - t0;
		/* A failed run leaves no skb behind in the qdisc. */
		if (err)
			qdisc_reset(b->sch);
		spin_unlock_bh(root_lock);
		kfree_skb_list(to_free);
		to_free = NULL;
		b->pkts += n;
		cond_resched();
	}
	return err;
}

static void bench_free_socks(struct fq_bench *b)
{
	unsigned int i;

	if (!b->socks)
		return;
	for (i = 0; i < flows && b->socks[i]; i++) {
		b->socks[i]->sk->sk_state = TCP_CLOSE;
		sock_release(b->socks[i]);
	}
	kvfree(b->socks);
}

static int bench_alloc_socks(struct fq_bench *b)
{
	unsigned int i;
	int err;

	b->socks = kvcalloc(flows, sizeof(*b->socks), GFP_KERNEL);
	if (!b->socks)
		return -ENOMEM;
	for (i = 0; i < flows; i++) {
		err = sock_create_kern(&init_net, AF_INET, SOCK_STREAM,
				       IPPROTO_TCP, &b->socks[i]);
		if (err) {
			b->socks[i] = NULL;
			return err;
		}
		/* Nothing else sees these sockets: fq only reads the state. */
		b->socks[i]->sk->sk_state = TCP_ESTABLISHED;
	}
	return 0;
}

static int __init fq_bench_init(void)
{
	struct net_device *ndev;
	struct fq_bench *b;
	unsigned int i;
	int c, err;

	if (!flows || flows > BENCH_MAX_FLOWS || !burst || burst > BENCH_MAX_BURST || !loops)
		return -EINVAL;
	c = cpu < 0 ? cpumask_first(cpu_online_mask) : cpu;
	if (c >= nr_cpu_ids || !cpu_online(c))
		return -EINVAL;

	b = kzalloc_obj(*b, GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	for (i = 0; i < burst; i++) {
		b->skb[i] = alloc_skb(BENCH_PKT_LEN, GFP_KERNEL);
		if (!b->skb[i]) {
			err = -ENOMEM;
			goto free;
		}
		skb_put_zero(b->skb[i], BENCH_PKT_LEN);
	}
	if (sock) {
		err = bench_alloc_socks(b);
		if (err)
			goto free;
	}

	/* RTNL keeps the qdisc from being replaced or freed meanwhile. */
	rtnl_lock();
	ndev = __dev_get_by_name(&init_net, dev);
	err = -ENODEV;
	if (!ndev)
		goto unlock;
	b->sch = rtnl_dereference(ndev->qdisc);
	err = -EINVAL;
	if (netif_running(ndev) || strcmp(b->sch->ops->id, "fq")) {
		pr_err("%s must be down with an fq root\n", dev);
		goto unlock;
	}
	b->root_lock = qdisc_lock(qdisc_root(b->sch));
	err = rsnet_run_on_cpu(c, bench_run, b, "fq_bench/%u");
	if (!err)
		pr_info("impl=%s flows=%u burst=%u sock=%d pkts=%lu ns=%llu.%02llu cycles=%llu\n",
			module_name(b->sch->ops->owner), flows, burst, sock, b->pkts,
			div64_u64(b->ns, b->pkts),
			div64_u64(b->ns * 100, b->pkts) % 100,
			div64_u64(b->cycles, b->pkts));
	else
		pr_err("run failed: %d\n", err);
unlock:
	rtnl_unlock();
free:
	for (i = 0; i < burst; i++) {
		if (b->skb[i])
			b->skb[i]->sk = NULL;
		kfree_skb(b->skb[i]);
	}
	bench_free_socks(b);
	kfree(b);
	return err;
}

static void __exit fq_bench_exit(void)
{
}

module_init(fq_bench_init);
module_exit(fq_bench_exit);
MODULE_DESCRIPTION("rsnet: cost of the fq qdisc's enqueue + dequeue, C or Rust");
MODULE_LICENSE("GPL");
