// SPDX-License-Identifier: GPL-2.0
/*
 * page_pool_bench: the cost of the page_pool recycle paths, on whichever
 * implementation runs them (the C one, or the Rust page_pool_rs hooked in by
 * include/net/page_pool/hook.h), in the manner of Jesper Dangaard
 * Brouer's bench_page_pool_simple.
 *
 *   modprobe page_pool_bench [loops=N] [cpu=C]
 *	page_pool_bench: path=c fast_ns=X.XX fast_cycles=N ring_ns=X.XX
 *	ring_cycles=N slow_ns=X.XX slow_cycles=N xcpu_ns=X.XX
 *	xcpu_cycles=N	(one line)
 *
 *	fast: alloc + page_pool_recycle_direct(): the alloc cache (XDP_DROP);
 *	ring: alloc + page_pool_put_full_page(pool, page, false): pages come
 *	      back through the ptr_ring and are refilled 64 at a time;
 *	slow: alloc + put of a page that holds an extra reference: every page
 *	      is released and the pool bulk-allocates new ones.
 *	Per loop (one alloc and one put), in ns and in get_cycles() units,
 *	each path on a fresh pool (NUMA_NO_NODE, pool_size 1024, its ring
 *	primed with 64 pages) in a kthread bound to CPU @cpu (default: the
 *	first online CPU), BH disabled in chunks of 4096 loops: only the time
 *	inside the chunks counts.
 *	xcpu: the same pages cross CPUs, as in receive with the application
 *	      on another CPU: CPU @cpu allocates with BH disabled (the NAPI
 *	      side) and hands batches of 256 pages to another online CPU,
 *	      which puts them back from process context (allow_direct false,
 *	      so through the ring, producer and consumer on different CPUs).
 *	      Each side sleeps while it waits for the other, so the time from
 *	      the first allocation until the last page is back is work; per
 *	      page, in ns and in get_cycles() units of the allocating CPU.
 *
 *	With mark=ID the measured loops are regions ID (fast), ID + 1 (ring),
 *	ID + 2 (slow), ID + 3 (xcpu, allocating side) and ID + 4 (xcpu,
 *	putting side) of make bench's cache model (rsnet_cache_mark.h).
 *
 *   modprobe page_pool_bench numa=1 [loops=N]
 *	page_pool_bench: numa path=c local_pct=P.P waive=N
 *
 *	A NUMA_NO_NODE pool whose ring a CPU of node 0 fills with 256 pages;
 *	then a CPU of node 1 does @loops rounds of alloc + put(allow_direct
 *	false). local_pct is the share of the pages handed out that are on
 *	the consumer's node (numa_mem_id()), waive the pages page_pool gave
 *	back for being on another node. With the NUMA rule (C, or Rust's
 *	page_pool_rs; not page_pool_rs_nonuma, built without it) local_pct
 *	is 100.
 *
 * Init returns 0 after printing (remove the module with modprobe -r), or a
 * negative errno: -EINVAL for bad parameters, -ENODEV if numa=1 finds no
 * CPUs on nodes 0 and 1, -ENOMEM if the pool or a page cannot be had. With
 * one online CPU the line has no xcpu fields.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/math64.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/timekeeping.h>
#include <linux/timex.h>
#include <linux/topology.h>
#include <linux/wait.h>
#include <net/page_pool/helpers.h>
#include <net/page_pool/hook.h>

#include "rsnet_cache_mark.h"
#include "run_on_cpu.h"

#ifndef CONFIG_PAGE_POOL_STATS
#error "page_pool_bench reports page_pool statistics: needs CONFIG_PAGE_POOL_STATS"
#endif


/* Which path the loader made current (page_pool_rs loaded or not), for
 * the result line only.
 */
static char *path = "c";
module_param(path, charp, 0444);
MODULE_PARM_DESC(path, "the recycle path the loader made current (c, rust, rust-off)");

static unsigned long loops = 100000;
module_param(loops, ulong, 0444);
MODULE_PARM_DESC(loops, "alloc + put rounds per path (default 100000)");

static int numa;
module_param(numa, int, 0444);
MODULE_PARM_DESC(numa, "1: the far-NUMA scenario instead of the three paths");

static unsigned int mark;
module_param(mark, uint, 0444);
MODULE_PARM_DESC(mark, "first of 5 regions of make bench's cache model: fast, ring, slow, xcpu alloc, xcpu put (default 0)");

static int cpu = -1;
module_param(cpu, int, 0444);
MODULE_PARM_DESC(cpu, "CPU of the three paths (default: first online)");

#define BENCH_CHUNK	4096
#define BENCH_POOL_SIZE	1024
#define BENCH_PRIME	64
#define NUMA_FILL	256
#define XCPU_BATCH	256
#define XCPU_SLOTS	4

static struct page *bench_pages[NUMA_FILL];

/* Run @fn(@arg) in a kthread bound to @c and return its result. */
static int run_on_cpu(int c, int (*fn)(void *), void *arg)
{
	return rsnet_run_on_cpu(c, fn, arg, "page_pool_bench/%u");
}

static struct page_pool *bench_pool(void)
{
	struct page_pool_params pp = {
		.order = 0,
		.pool_size = BENCH_POOL_SIZE,
		.nid = NUMA_NO_NODE,
		.dma_dir = DMA_FROM_DEVICE,
	};

	return page_pool_create(&pp);
}

/* Allocate @n pages and return them to the ring (allow_direct false). */
static int fill_ring(struct page_pool *pool, int n)
{
	int i, got;

	local_bh_disable();
	for (got = 0; got < n; got++) {
		bench_pages[got] = page_pool_dev_alloc_pages(pool);
		if (!bench_pages[got])
			break;
	}
	for (i = 0; i < got; i++)
		page_pool_put_full_page(pool, bench_pages[i], false);
	local_bh_enable();
	return got == n ? 0 : -ENOMEM;
}

enum bench_path { PATH_FAST, PATH_RING, PATH_SLOW, PATH_NR };

struct bench_run {
	enum bench_path path;
	u64 ns;
	u64 cycles;
};

static int bench_one(void *arg)
{
	struct bench_run *run = arg;
	unsigned long done = 0, chunk, i;
	struct page_pool *pool;
	cycles_t c0, c1;
	struct page *page;
	u64 t0, t1;
	int err;

	pool = bench_pool();
	if (IS_ERR(pool))
		return PTR_ERR(pool);
	err = fill_ring(pool, BENCH_PRIME);
	run->ns = 0;
	run->cycles = 0;
	while (!err && done < loops) {
		chunk = min(loops - done, (unsigned long)BENCH_CHUNK);
		local_bh_disable();
		t0 = ktime_get_ns();
		c0 = get_cycles();
		rsnet_cache_begin(mark + run->path);
		for (i = 0; i < chunk; i++) {
			page = page_pool_dev_alloc_pages(pool);
			if (unlikely(!page)) {
				err = -ENOMEM;
				break;
			}
			switch (run->path) {
			case PATH_FAST:
				page_pool_recycle_direct(pool, page);
				break;
			case PATH_RING:
				page_pool_put_full_page(pool, page, false);
				break;
			default:
				get_page(page);
				page_pool_put_full_page(pool, page, false);
				put_page(page);
				break;
			}
		}
		rsnet_cache_end(mark + run->path);
		c1 = get_cycles();
		t1 = ktime_get_ns();
		local_bh_enable();
		run->ns += t1 - t0;
		run->cycles += c1 - c0;
		done += chunk;
		cond_resched();
	}
	page_pool_destroy(pool);
	return err;
}

/* The xcpu path: batches of pages from the allocating CPU to the other. */
struct xcpu_run {
	struct page_pool *pool;
	struct page *pages[XCPU_SLOTS][XCPU_BATCH];
	unsigned long batches;
	atomic_t ready;		/* batches filled and not yet put back */
	bool stop;		/* the allocating side failed */
	wait_queue_head_t wq;	/* either side waiting for the other */
	u64 ns;
	u64 cycles;
};

/* The NAPI side: allocate each batch with BH disabled, hand it over. */
static int xcpu_alloc(void *arg)
{
	struct xcpu_run *x = arg;
	cycles_t c0 = get_cycles();
	u64 t0 = ktime_get_ns();
	unsigned long b;
	int i, err = 0;

	for (b = 0; b < x->batches; b++) {
		struct page **slot = x->pages[b % XCPU_SLOTS];

		wait_event(x->wq, atomic_read_acquire(&x->ready) < XCPU_SLOTS);
		local_bh_disable();
		rsnet_cache_begin(mark + PATH_NR);
		for (i = 0; i < XCPU_BATCH; i++) {
			slot[i] = page_pool_dev_alloc_pages(x->pool);
			if (unlikely(!slot[i]))
				break;
		}
		rsnet_cache_end(mark + PATH_NR);
		local_bh_enable();
		if (unlikely(i < XCPU_BATCH)) {
			while (i--)
				page_pool_put_full_page(x->pool, slot[i], false);
			err = -ENOMEM;
			/* After the batches handed over, for xcpu_put(). */
			smp_store_release(&x->stop, true);
			wake_up(&x->wq);
			break;
		}
		atomic_inc_return_release(&x->ready);
		wake_up(&x->wq);
	}
	/* Done when the other side has put back every page. */
	wait_event(x->wq, !atomic_read_acquire(&x->ready));
	x->cycles = get_cycles() - c0;
	x->ns = ktime_get_ns() - t0;
	return err;
}

static bool xcpu_ready_or_stop(struct xcpu_run *x)
{
	/* Acquire: pairs with the release stores of ready and stop. */
	return atomic_read_acquire(&x->ready) || smp_load_acquire(&x->stop);
}

/* The application side: put each batch back, BH enabled. */
static int xcpu_put(void *arg)
{
	struct xcpu_run *x = arg;
	unsigned long b;
	int i;

	for (b = 0; b < x->batches; b++) {
		struct page **slot = x->pages[b % XCPU_SLOTS];

		wait_event(x->wq, xcpu_ready_or_stop(x));
		if (!atomic_read_acquire(&x->ready))
			break;
		rsnet_cache_begin(mark + PATH_NR + 1);
		for (i = 0; i < XCPU_BATCH; i++)
			page_pool_put_full_page(x->pool, slot[i], false);
		rsnet_cache_end(mark + PATH_NR + 1);
		atomic_dec_return_release(&x->ready);
		wake_up(&x->wq);
	}
	return 0;
}

/* Runs the xcpu path from CPU @c to another online CPU. */
static int bench_xcpu(int c, u64 *ns, u64 *cycles)
{
	struct rsnet_cpu_work w;
	struct task_struct *t;
	struct xcpu_run *x;
	int c2, err, err2;

	for_each_online_cpu(c2)
		if (c2 != c)
			break;
	if (c2 >= nr_cpu_ids || c2 == c) {
		pr_err("xcpu needs a second online CPU\n");
		return -ENODEV;
	}
	x = kzalloc(sizeof(*x), GFP_KERNEL);
	if (!x)
		return -ENOMEM;
	x->batches = DIV_ROUND_UP(loops, XCPU_BATCH);
	atomic_set(&x->ready, 0);
	init_waitqueue_head(&x->wq);
	x->pool = bench_pool();
	if (IS_ERR(x->pool)) {
		err = PTR_ERR(x->pool);
		goto out;
	}
	t = rsnet_start_on_cpu(c2, xcpu_put, x, "page_pool_bench/%u", &w);
	if (IS_ERR(t)) {
		err = PTR_ERR(t);
		goto out_pool;
	}
	err = run_on_cpu(c, xcpu_alloc, x);
	if (err) {
		/* After what xcpu_alloc() handed over, for xcpu_put(). */
		smp_store_release(&x->stop, true);
		wake_up(&x->wq);
	}
	err2 = rsnet_finish_on_cpu(&w, t);
	err = err ?: err2;
	*ns = div64_u64(x->ns * 100, x->batches * XCPU_BATCH);
	*cycles = div64_u64(x->cycles, x->batches * XCPU_BATCH);
out_pool:
	page_pool_destroy(x->pool);
out:
	kfree(x);
	return err;
}

/* Per loop, in hundredths. */
static u64 per_loop_x100(u64 total)
{
	return div64_u64(total * 100, loops);
}

static int bench_paths(void)
{
	struct bench_run run[PATH_NR] = {
		{ .path = PATH_FAST }, { .path = PATH_RING }, { .path = PATH_SLOW },
	};
	u64 ns[PATH_NR], cyc[PATH_NR], xns, xcyc;
	char xcpu[64] = "";
	int c = cpu, i, err;

	if (c < 0)
		c = cpumask_first(cpu_online_mask);
	for (i = 0; i < PATH_NR; i++) {
		err = run_on_cpu(c, bench_one, &run[i]);
		if (err) {
			pr_err("path %d on cpu %d: error %d\n", i, c, err);
			return err;
		}
		ns[i] = per_loop_x100(run[i].ns);
		cyc[i] = div64_u64(run[i].cycles, loops);
	}
	err = bench_xcpu(c, &xns, &xcyc);
	if (err && err != -ENODEV) {
		pr_err("xcpu from cpu %d: error %d\n", c, err);
		return err;
	}
	/* One CPU: no xcpu fields. */
	if (!err)
		snprintf(xcpu, sizeof(xcpu), " xcpu_ns=%llu.%02llu xcpu_cycles=%llu",
			 xns / 100, xns % 100, xcyc);
	pr_info("path=%s fast_ns=%llu.%02llu fast_cycles=%llu ring_ns=%llu.%02llu ring_cycles=%llu slow_ns=%llu.%02llu slow_cycles=%llu%s\n",
		path,
		ns[PATH_FAST] / 100, ns[PATH_FAST] % 100, cyc[PATH_FAST],
		ns[PATH_RING] / 100, ns[PATH_RING] % 100, cyc[PATH_RING],
		ns[PATH_SLOW] / 100, ns[PATH_SLOW] % 100, cyc[PATH_SLOW],
		xcpu);
	return 0;
}

struct numa_run {
	struct page_pool *pool;
	u64 local;
};

/* On node 0: NUMA_FILL pages of this node into the ring. */
static int numa_fill(void *arg)
{
	struct numa_run *run = arg;

	return fill_ring(run->pool, NUMA_FILL);
}

/* On node 1: @loops rounds of alloc + put(allow_direct false). */
static int numa_consume(void *arg)
{
	struct numa_run *run = arg;
	unsigned long done = 0, chunk, i;
	int nid = numa_mem_id();
	struct page *page;
	int err = 0;

	run->local = 0;
	while (!err && done < loops) {
		chunk = min(loops - done, (unsigned long)BENCH_CHUNK);
		local_bh_disable();
		for (i = 0; i < chunk; i++) {
			page = page_pool_dev_alloc_pages(run->pool);
			if (unlikely(!page)) {
				err = -ENOMEM;
				break;
			}
			if (page_to_nid(page) == nid)
				run->local++;
			page_pool_put_full_page(run->pool, page, false);
		}
		local_bh_enable();
		done += chunk;
		cond_resched();
	}
	return err;
}

static int first_cpu_of_node(int nid)
{
	int c;

	if (nid >= MAX_NUMNODES || !node_state(nid, N_MEMORY))
		return -1;
	for_each_online_cpu(c)
		if (cpu_to_node(c) == nid)
			return c;
	return -1;
}

static int bench_numa(void)
{
	int cpu0 = first_cpu_of_node(0), cpu1 = first_cpu_of_node(1);
	struct page_pool_stats before = {}, after = {};
	struct numa_run run = {};
	u64 pct10;
	int err;

	if (cpu0 < 0 || cpu1 < 0) {
		pr_err("numa=1 needs online CPUs on nodes 0 and 1 with memory\n");
		return -ENODEV;
	}
	run.pool = bench_pool();
	if (IS_ERR(run.pool))
		return PTR_ERR(run.pool);
	err = run_on_cpu(cpu0, numa_fill, &run);
	if (!err) {
		page_pool_get_stats(run.pool, &before);
		err = run_on_cpu(cpu1, numa_consume, &run);
		page_pool_get_stats(run.pool, &after);
	}
	page_pool_destroy(run.pool);
	if (err) {
		pr_err("numa: error %d\n", err);
		return err;
	}
	pct10 = div64_u64(run.local * 1000, loops);
	pr_info("numa path=%s local_pct=%llu.%llu waive=%llu\n",
		path, pct10 / 10, pct10 % 10,
		after.alloc_stats.waive - before.alloc_stats.waive);
	return 0;
}

static int __init page_pool_bench_init(void)
{
	if (!loops)
		return -EINVAL;
	return numa ? bench_numa() : bench_paths();
}
module_init(page_pool_bench_init);

static void __exit page_pool_bench_exit(void)
{
}
module_exit(page_pool_bench_exit);

MODULE_DESCRIPTION("page_pool recycle path benchmark, C or Rust");
MODULE_LICENSE("GPL");
