// SPDX-License-Identifier: GPL-2.0
/*
 * page_pool_test: the page_pool recycle and refill path, whichever
 * implementation runs it (the C one of net/core/page_pool.c, or the Rust
 * page_pool_rs hooked in by include/net/page_pool/hook.h), checked
 * against the behaviour and the exact statistics of the 7.2 C code.
 *
 * A KUnit suite, page_pool_recycle, which KUnit runs when the module loads
 * and reports as KTAP in the kernel log. Cases a and b, and the steps of
 * c, d and e (parameterised cases, one result per step), run in turn and
 * share the pools they make. Diagnostic lines say why a step failed, and
 * lines "# stats: " (test d, the sum over its pools) and "# stats <test>: "
 * (a, b, c, e) hold final counter values that must be identical on the C
 * and the Rust path (page_pool.sh compares them); the suite's first line,
 * "# hook: c" or "# hook: rust", names the path.
 *
 * The pools are the test's own (no device, no DMA, .napi NULL); allocation
 * and direct recycling run with BH disabled, and where the CPU matters
 * (NUMA_NO_NODE pools, a per-CPU pool) in a kthread bound to that CPU.
 * Every pool is destroyed, and before that every page it holds in flight
 * must be in its alloc cache, its ring, its frag page or in the test's hands.
 */
#include <kunit/test.h>
#include <kunit/test-bug.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nodemask.h>
#include <linux/ptr_ring.h>
#include <linux/topology.h>
#include <net/page_pool/helpers.h>
#include <net/page_pool/hook.h>
#include <net/xdp.h>

#include "run_on_cpu.h"

#ifndef CONFIG_PAGE_POOL_STATS
#error "page_pool_test checks page_pool statistics: needs CONFIG_PAGE_POOL_STATS"
#endif

#define PPT_MAX_PAGES	256
#define PPT_GFP		(GFP_ATOMIC | __GFP_NOWARN)

/*
 * A diagnostic line in the running case's KTAP; from the kthreads of
 * run_on_cpu(), which run no case of their own, at the same indentation.
 */
#define ppt_diag(fmt, ...)							\
	do {									\
		struct kunit *__t = kunit_get_current_test();			\
										\
		if (__t)							\
			kunit_info(__t, fmt, ##__VA_ARGS__);			\
		else								\
			pr_info(KUNIT_SUBTEST_INDENT KUNIT_SUBTEST_INDENT	\
				"# " fmt "\n", ##__VA_ARGS__);			\
	} while (0)

/* The counters of struct page_pool_stats, in page_pool_ethtool_stats_get()
 * order.
 */
enum {
	S_FAST, S_SLOW, S_SLOW_HO, S_EMPTY, S_REFILL, S_WAIVE,
	S_CACHED, S_CACHE_FULL, S_RING, S_RING_FULL, S_RELEASED, S_NR
};


/* Which path the loader made current (page_pool_rs loaded or not), for
 * the log only.
 */
static char *path = "c";
module_param(path, charp, 0444);
MODULE_PARM_DESC(path, "the recycle path the loader made current (c, rust)");

static const char * const stat_names[S_NR] = {
	"fast", "slow", "slow_high_order", "empty", "refill", "waive",
	"cached", "cache_full", "ring", "ring_full", "released_refcnt",
};

static void stats_to_array(const struct page_pool_stats *s, u64 *v)
{
	v[S_FAST] = s->alloc_stats.fast;
	v[S_SLOW] = s->alloc_stats.slow;
	v[S_SLOW_HO] = s->alloc_stats.slow_high_order;
	v[S_EMPTY] = s->alloc_stats.empty;
	v[S_REFILL] = s->alloc_stats.refill;
	v[S_WAIVE] = s->alloc_stats.waive;
	v[S_CACHED] = s->recycle_stats.cached;
	v[S_CACHE_FULL] = s->recycle_stats.cache_full;
	v[S_RING] = s->recycle_stats.ring;
	v[S_RING_FULL] = s->recycle_stats.ring_full;
	v[S_RELEASED] = s->recycle_stats.released_refcnt;
}

static void stats_read(const struct page_pool *pool, u64 *v)
{
	struct page_pool_stats s = {};

	page_pool_get_stats(pool, &s);
	stats_to_array(&s, v);
}

/* An expected change of the counters, e.g.
 * DELTA(.alloc_stats.fast = 63, .recycle_stats.ring = 1)
 */
#define DELTA(...) (&(const struct page_pool_stats){ __VA_ARGS__ })
static const struct page_pool_stats no_change;

/* A pool under test, the pages the test holds from it (a stack), and the
 * counter values seen at the last check.
 */
struct tpool {
	struct page_pool *pool;
	int held;
	u64 seen[S_NR];
	u64 final[S_NR];
	struct page *pg[PPT_MAX_PAGES];
};

static struct tpool tp_a, tp_b, tp_c, tp_d0, tp_d1, tp_f, tp_q, tp_e;
static netmem_ref bulk_data[PPT_MAX_PAGES];

static bool tp_init(struct tpool *tp, int nid, unsigned int order,
		    unsigned int pool_size, int cpuid)
{
	struct page_pool_params pp = {
		.order = order,
		.pool_size = pool_size,
		.nid = nid,
		.dma_dir = DMA_FROM_DEVICE,
	};
	struct page_pool *pool;

	memset(tp, 0, sizeof(*tp));
	if (cpuid < 0)
		pool = page_pool_create(&pp);
	else
		pool = page_pool_create_percpu(&pp, cpuid);
	if (IS_ERR(pool)) {
		ppt_diag("page_pool_create: error %ld", PTR_ERR(pool));
		return false;
	}
	tp->pool = pool;
	stats_read(pool, tp->seen);
	return true;
}

/* Compare the change of every counter since the last check with @delta. */
static bool tp_expect(struct tpool *tp, const char *what,
		      const struct page_pool_stats *delta)
{
	u64 now[S_NR], want[S_NR];
	bool ok = true;
	int i;

	stats_read(tp->pool, now);
	stats_to_array(delta, want);
	for (i = 0; i < S_NR; i++) {
		s64 moved = now[i] - tp->seen[i];

		if ((u64)moved != want[i]) {
			ppt_diag("%s: %s moved by %lld, expected %llu", what,
				 stat_names[i], moved, want[i]);
			ok = false;
		}
		tp->seen[i] = now[i];
	}
	return ok;
}

/* Allocate @n pages onto the test's stack. */
static bool tp_alloc(struct tpool *tp, int n)
{
	struct page *page;
	int i;

	if (tp->held + n > PPT_MAX_PAGES) {
		ppt_diag("test bug: %d + %d pages held", tp->held, n);
		return false;
	}
	local_bh_disable();
	for (i = 0; i < n; i++) {
		page = page_pool_dev_alloc_pages(tp->pool);
		if (!page)
			break;
		tp->pg[tp->held++] = page;
	}
	local_bh_enable();
	if (i < n) {
		ppt_diag("allocation %d of %d failed", i + 1, n);
		return false;
	}
	return true;
}

enum put_how {
	PUT_DIRECT,		/* allow_direct true, BH disabled */
	PUT_RING,		/* allow_direct false, BH disabled */
	PUT_RING_PROCESS,	/* allow_direct false, BH enabled */
};

/* Give back the last @n pages of the stack with page_pool_put_full_page(). */
static void tp_put(struct tpool *tp, int n, enum put_how how)
{
	struct page *page;

	n = min(n, tp->held);
	if (how != PUT_RING_PROCESS)
		local_bh_disable();
	while (n--) {
		page = tp->pg[--tp->held];
		page_pool_put_full_page(tp->pool, page, how == PUT_DIRECT);
	}
	if (how != PUT_RING_PROCESS)
		local_bh_enable();
}

/* Give back the last page of the stack while holding an extra reference:
 * page_pool must release it, not recycle it.
 */
static void tp_put_extra_ref(struct tpool *tp, enum put_how how)
{
	struct page *page;

	if (!tp->held)
		return;
	page = tp->pg[--tp->held];
	get_page(page);
	local_bh_disable();
	page_pool_put_full_page(tp->pool, page, how == PUT_DIRECT);
	local_bh_enable();
	put_page(page);
}

/*
 * page_pool_put_netmem_bulk() of @n pages, BH disabled, in calls of at most
 * XDP_BULK_QUEUE_SIZE as xdp_flush_frame_bulk() makes them: C's bulk keeps
 * the netmems of one pool in an array of that size on its stack.
 */
static void tp_bulk(struct tpool *tp, struct page **pg, int n)
{
	int i, k;

	for (i = 0; i < n; i += k) {
		k = min(n - i, XDP_BULK_QUEUE_SIZE);
		for (int j = 0; j < k; j++)
			bulk_data[j] = page_to_netmem(pg[i + j]);
		local_bh_disable();
		page_pool_put_netmem_bulk(bulk_data, k);
		local_bh_enable();
	}
}

static void tp_bulk_top(struct tpool *tp, int n)
{
	n = min(n, tp->held);
	tp->held -= n;
	tp_bulk(tp, &tp->pg[tp->held], n);
}

static void tp_update_nid(struct tpool *tp, int nid)
{
	local_bh_disable();
	page_pool_update_nid(tp->pool, nid);
	local_bh_enable();
}

/* Pages held from index @from on that are (@on) or are not (!@on) on @nid. */
static int tp_count_nid(struct tpool *tp, int from, int nid, bool on)
{
	int i, n = 0;

	for (i = from; i < tp->held; i++)
		if ((page_to_nid(tp->pg[i]) == nid) == on)
			n++;
	return n;
}

static bool tp_all_on(struct tpool *tp, int from, int nid, const char *what)
{
	int off = tp_count_nid(tp, from, nid, false);

	if (off)
		ppt_diag("%s: %d of %d pages not on node %d", what, off,
			 tp->held - from, nid);
	return !off;
}

static bool tp_none_on(struct tpool *tp, int from, int nid, const char *what)
{
	int on = tp_count_nid(tp, from, nid, true);

	if (on)
		ppt_diag("%s: %d of %d pages on node %d", what, on,
			 tp->held - from, nid);
	return !on;
}

/* Live entries of the pool's ptr_ring: the non-NULL slots less those
 * consumed but not yet zeroed (consumer_tail..consumer_head).
 */
static int ring_count(struct page_pool *pool)
{
	struct ptr_ring *r = &pool->ring;
	int i, n = 0;

	for (i = 0; i < r->size; i++)
		if (r->queue[i])
			n++;
	return n - (r->consumer_head - r->consumer_tail);
}

/* Every page the pool counts in flight is in its alloc cache, its ring, its
 * frag page or held by the test: no page lost, none returned twice.
 */
static bool tp_accounted(struct tpool *tp, const char *what)
{
	struct page_pool *pool = tp->pool;
	s32 inflight = (s32)(READ_ONCE(pool->pages_state_hold_cnt) -
			     (u32)atomic_read(&pool->pages_state_release_cnt));
	int cache = pool->alloc.count, ring = ring_count(pool);
	int frag = pool->frag_page ? 1 : 0;

	if (inflight == cache + ring + frag + tp->held)
		return true;
	ppt_diag("%s: %d pages in flight, but cache %d + ring %d + frag %d + held %d",
		 what, inflight, cache, ring, frag, tp->held);
	return false;
}

static void tp_snapshot(struct tpool *tp)
{
	stats_read(tp->pool, tp->final);
}

static void stats_line(const char *label, struct tpool **tps, int n)
{
	static char buf[512];
	u64 sum[S_NR] = {};
	int i, j, len = 0;

	for (i = 0; i < n; i++)
		for (j = 0; j < S_NR; j++)
			sum[j] += tps[i]->final[j];
	for (j = 0; j < S_NR; j++)
		len += scnprintf(buf + len, sizeof(buf) - len, " %s=%llu",
				 stat_names[j], sum[j]);
	ppt_diag("%s:%s", label, buf);
}

/* Give back what the test holds (to the ring), check the accounting, and
 * destroy the pool.
 */
static bool tp_done(struct tpool *tp, const char *what)
{
	bool ok;

	if (!tp->pool)
		return false;
	tp_put(tp, tp->held, PUT_RING);
	ok = tp_accounted(tp, what);
	page_pool_destroy(tp->pool);
	tp->pool = NULL;
	return ok;
}

/* Run @fn(@arg) in a kthread bound to @cpu and return its result. */
struct ppt_call {
	bool (*fn)(void *arg);
	void *arg;
};

static int ppt_call_fn(void *data)
{
	struct ppt_call *c = data;

	return c->fn(c->arg) ? 0 : 1;
}

static bool run_on_cpu(int cpu, bool (*fn)(void *), void *arg)
{
	struct ppt_call c = { .fn = fn, .arg = arg };
	int ret = rsnet_run_on_cpu(cpu, ppt_call_fn, &c, "page_pool_test/%u");

	if (ret < 0)
		ppt_diag("cannot run on cpu %d: error %d", cpu, ret);
	return ret == 0;
}

/* The first online CPU of @nid, if @nid has memory too; else -1. */
static int cpu_of_node(int nid)
{
	int cpu;

	if (nid >= MAX_NUMNODES || !node_state(nid, N_MEMORY))
		return -1;
	for_each_online_cpu(cpu)
		if (cpu_to_node(cpu) == nid)
			return cpu;
	return -1;
}

static bool node1_has_memory(void)
{
	return MAX_NUMNODES > 1 && node_state(1, N_MEMORY);
}

/*
 * a: a pool of node 1 moved to node 0: the node-1 pages in its ring are
 * waived (one per refill, which then falls back to a bulk allocation on
 * node 0) and none is handed out.
 */
static void a_update_nid_0_waives_node_1_pages(struct kunit *test)
{
	struct tpool *tp = &tp_a;
	bool ok;

	if (!node1_has_memory())
		kunit_skip(test, "no memory on node 1");
	ok = tp_init(tp, 1, 0, 256, -1);
	if (!ok)
		goto out;
	/* ring empty: empty, then one bulk of 64 (slow) and 63 fast */
	ok &= tp_alloc(tp, 64);
	ok &= tp_expect(tp, "a: 64 pages", DELTA(.alloc_stats.empty = 1,
						 .alloc_stats.slow = 1,
						 .alloc_stats.fast = 63));
	ok &= tp_all_on(tp, 0, 1, "a: precondition, pool of node 1");
	tp_update_nid(tp, 0);
	tp_put(tp, 64, PUT_RING);
	ok &= tp_expect(tp, "a: 64 into the ring",
			DELTA(.recycle_stats.ring = 64));
	/*
	 * Two refills: each consumes one node-1 page, waives it, and the
	 * allocation goes to the page allocator (a bulk of 64 on node 0).
	 */
	ok &= tp_alloc(tp, 128);
	ok &= tp_expect(tp, "a: 128 after update_nid(0)",
			DELTA(.alloc_stats.waive = 2, .alloc_stats.slow = 2,
			      .alloc_stats.fast = 126));
	ok &= tp_none_on(tp, 0, 1, "a: handed out after update_nid(0)");
	ok &= tp_accounted(tp, "a");
	tp_snapshot(tp);
	stats_line("stats a", &tp, 1);
out:
	ok &= tp_done(tp, "a: at destroy");
	KUNIT_EXPECT_TRUE_MSG(test, ok,
			      "a: NUMA refill: after update_nid(0) node-1 ring pages are waived, none handed out");
}

/*
 * b: a pool of node 0 moved to node 1: from the next refill on, every page
 * handed out is on node 1.
 */
static void b_update_nid_1_refills_on_node_1(struct kunit *test)
{
	struct tpool *tp = &tp_b;
	bool ok;

	if (!node1_has_memory())
		kunit_skip(test, "no memory on node 1");
	ok = tp_init(tp, 0, 0, 256, -1);
	if (!ok)
		goto out;
	ok &= tp_alloc(tp, 32);
	ok &= tp_expect(tp, "b: 32 pages", DELTA(.alloc_stats.empty = 1,
						 .alloc_stats.slow = 1,
						 .alloc_stats.fast = 31));
	ok &= tp_all_on(tp, 0, 0, "b: precondition, pool of node 0");
	tp_put(tp, 32, PUT_RING);
	ok &= tp_expect(tp, "b: 32 into the ring",
			DELTA(.recycle_stats.ring = 32));
	/* update_nid() releases the 32 pages left in the alloc cache. */
	tp_update_nid(tp, 1);
	ok &= tp_expect(tp, "b: update_nid(1)", &no_change);
	if (tp->pool->alloc.count) {
		ppt_diag("b: %u pages left in the alloc cache by update_nid()",
			 tp->pool->alloc.count);
		ok = false;
	}
	ok &= tp_alloc(tp, 100);
	ok &= tp_expect(tp, "b: 100 after update_nid(1)",
			DELTA(.alloc_stats.waive = 2, .alloc_stats.slow = 2,
			      .alloc_stats.fast = 98));
	ok &= tp_all_on(tp, 0, 1, "b: handed out after update_nid(1)");
	ok &= tp_accounted(tp, "b");
	tp_snapshot(tp);
	stats_line("stats b", &tp, 1);
out:
	ok &= tp_done(tp, "b: at destroy");
	KUNIT_EXPECT_TRUE_MSG(test, ok,
			      "b: after update_nid(1) every page from the next refill on is on node 1");
}

/*
 * c: a page marked pfmemalloc (bit 1 of pp_magic, which page_is_pfmemalloc()
 * reads) is released to the page allocator by every put, never recycled.
 * Once released the page is gone: only its address is compared.
 */
static void mark_pfmemalloc(struct page *page)
{
	page->pp_magic |= BIT(1);
}

static bool c_released(struct tpool *tp, const char *what, u32 cache,
		       int ring)
{
	bool ok = tp_expect(tp, what, DELTA(.recycle_stats.released_refcnt = 1));

	if (tp->pool->alloc.count != cache || ring_count(tp->pool) != ring) {
		ppt_diag("%s: cache %u ring %d, expected cache %u ring %d", what,
			 tp->pool->alloc.count, ring_count(tp->pool), cache,
			 ring);
		ok = false;
	}
	ok &= tp_accounted(tp, what);
	return ok;
}

/* The alloc cache's count when c1 began: c1..c3 leave it there. */
static u32 c_cache;

static bool step_c1(void)
{
	struct tpool *tp = &tp_c;
	struct page *page;
	bool ok;

	if (!tp_init(tp, 0, 0, 256, -1))
		return false;
	ok = tp_alloc(tp, 4);
	ok &= tp_expect(tp, "c: 4 pages", DELTA(.alloc_stats.empty = 1,
						.alloc_stats.slow = 1,
						.alloc_stats.fast = 3));
	if (tp->held != 4) {
		tp_done(tp, "c: at destroy");
		return false;
	}
	c_cache = tp->pool->alloc.count;
	page = tp->pg[--tp->held];
	mark_pfmemalloc(page);
	if (!page_is_pfmemalloc(page)) {
		ppt_diag("c1: page_is_pfmemalloc() does not see the mark");
		ok = false;
	}
	local_bh_disable();
	page_pool_put_full_page(tp->pool, page, true);
	local_bh_enable();
	ok &= c_released(tp, "c1", c_cache, 0);
	/* The alloc cache must not hand it out: the top is another page. */
	ok &= tp_alloc(tp, 1);
	if (tp->held && tp->pg[tp->held - 1] == page) {
		ppt_diag("c1: the released page came back from the alloc cache");
		ok = false;
	}
	tp_put(tp, 1, PUT_DIRECT);
	ok &= tp_expect(tp, "c1: next page", DELTA(.alloc_stats.fast = 1,
						   .recycle_stats.cached = 1));
	return ok;
}

static bool step_c2(void)
{
	struct tpool *tp = &tp_c;
	struct page *page = tp->pg[--tp->held];

	mark_pfmemalloc(page);
	local_bh_disable();
	page_pool_put_full_page(tp->pool, page, false);
	local_bh_enable();
	return c_released(tp, "c2", c_cache, 0);
}

static bool step_c3(void)
{
	struct tpool *tp = &tp_c;
	struct page *page = tp->pg[--tp->held];
	bool ok;

	mark_pfmemalloc(page);
	tp_bulk(tp, &page, 1);
	ok = c_released(tp, "c3", c_cache, 0);
	tp_snapshot(tp);
	stats_line("stats c", &tp, 1);
	ok &= tp_done(tp, "c: at destroy");
	return ok;
}

/*
 * A step of a parameterised case: runs @fn here, or @on_cpu on qcpu (d);
 * fails unpaired if the pool @tp that earlier steps make is missing, and is
 * skipped if @skip gives a reason.
 */
struct pp_step {
	const char *name;
	bool (*fn)(void);
	bool (*on_cpu)(void *arg);
	struct tpool *tp;
	const char *(*skip)(void);
};

static int qcpu;

static void run_step(struct kunit *test, const struct pp_step *s)
{
	const char *why = s->skip ? s->skip() : NULL;
	bool ok;

	if (why)
		kunit_skip(test, "%s", why);
	if (s->tp && !s->tp->pool) {
		KUNIT_FAIL(test, "%.3s: not run, its pool is missing", s->name);
		return;
	}
	if (s->fn)
		ok = s->fn();
	else
		ok = run_on_cpu(qcpu, s->on_cpu, NULL);
	KUNIT_EXPECT_TRUE_MSG(test, ok, "%s", s->name);
}

static const char *no_node1_memory(void)
{
	return node1_has_memory() ? NULL : "no memory on node 1";
}

static const struct pp_step c_steps[] = {
	{
		.name = "c1: pfmemalloc page put with allow_direct true is released, not cached",
		.fn = step_c1,
	},
	{
		.name = "c2: pfmemalloc page put with allow_direct false is released, not put in the ring",
		.fn = step_c2,
		.tp = &tp_c,
	},
	{
		.name = "c3: pfmemalloc page in a bulk put is released, not put in the ring",
		.fn = step_c3,
		.tp = &tp_c,
	},
};

KUNIT_ARRAY_PARAM_DESC(c_steps, c_steps, name);

static void c_pfmemalloc_pages_released(struct kunit *test)
{
	run_step(test, test->param_value);
}

/*
 * d: a fixed sequence of allocations and puts that moves every counter,
 * each step checked for the exact change of all eleven counters, derived
 * from net/core/page_pool.c (7.2): an order-0 slow allocation takes a bulk
 * of PP_ALLOC_CACHE_REFILL (64) pages from the page allocator, counts slow
 * once and leaves 63 in the alloc cache (PP_ALLOC_CACHE_SIZE 128); a refill
 * takes up to 64 pages from the ring; ptr_ring of pool_size 64 holds 64.
 *
 * Pool 0 (order 0, pool_size 64, node 0): d1..d17, state after each step
 * as C (alloc cache), R (ring), H (pages the test holds).
 * Pool 1 (order 1): d18. Pool F (frags): d19..d21. Pool Q (per-CPU, run on
 * its CPU, so that page_pool_napi_local() allows direct recycling from
 * softirq context): d22..d27.
 */
static bool step_d01(void)
{
	struct tpool *tp = &tp_d0;
	bool ok;

	if (!tp_init(tp, 0, 0, 64, -1))
		return false;
	/* C63 H1 */
	ok = tp_alloc(tp, 1);
	ok &= tp_expect(tp, "d1", DELTA(.alloc_stats.empty = 1,
					.alloc_stats.slow = 1));
	return ok;
}

static bool step_d02(void)
{
	/* C0 H64 */
	bool ok = tp_alloc(&tp_d0, 63);

	ok &= tp_expect(&tp_d0, "d2", DELTA(.alloc_stats.fast = 63));
	return ok;
}

static bool step_d03(void)
{
	struct tpool *tp = &tp_d0;
	bool ok;

	/* bulks at the 1st, 65th and 129th: C32 H224 */
	ok = tp_alloc(tp, 160);
	ok &= tp_expect(tp, "d3", DELTA(.alloc_stats.empty = 3,
					.alloc_stats.slow = 3,
					.alloc_stats.fast = 157));
	ok &= tp_all_on(tp, 0, 0, "d3: precondition for the refill of d12");
	return ok;
}

static bool step_d04(void)
{
	/* C128 H128 */
	tp_put(&tp_d0, 96, PUT_DIRECT);
	return tp_expect(&tp_d0, "d4", DELTA(.recycle_stats.cached = 96));
}

static bool step_d05(void)
{
	/* C128 R1 H127 */
	tp_put(&tp_d0, 1, PUT_DIRECT);
	return tp_expect(&tp_d0, "d5", DELTA(.recycle_stats.cache_full = 1,
					     .recycle_stats.ring = 1));
}

static bool step_d06(void)
{
	/* C128 R64 H64 */
	bool ok;

	tp_put(&tp_d0, 63, PUT_RING);
	ok = tp_expect(&tp_d0, "d6", DELTA(.recycle_stats.ring = 63));
	ok &= tp_accounted(&tp_d0, "d6");
	return ok;
}

static bool step_d07(void)
{
	/* H63, the page released */
	tp_put(&tp_d0, 1, PUT_DIRECT);
	return tp_expect(&tp_d0, "d7", DELTA(.recycle_stats.cache_full = 1,
					     .recycle_stats.ring_full = 1));
}

static bool step_d08(void)
{
	/* H62 */
	tp_put(&tp_d0, 1, PUT_RING);
	return tp_expect(&tp_d0, "d8", DELTA(.recycle_stats.ring_full = 1));
}

static bool step_d09(void)
{
	/* H61 */
	tp_put_extra_ref(&tp_d0, PUT_DIRECT);
	return tp_expect(&tp_d0, "d9",
			 DELTA(.recycle_stats.released_refcnt = 1));
}

static bool step_d10(void)
{
	/* H60 */
	bool ok;

	tp_put_extra_ref(&tp_d0, PUT_RING);
	ok = tp_expect(&tp_d0, "d10",
		       DELTA(.recycle_stats.released_refcnt = 1));
	ok &= tp_accounted(&tp_d0, "d10");
	return ok;
}

static bool step_d11(void)
{
	/* C0 R64 H188 */
	bool ok = tp_alloc(&tp_d0, 128);

	ok &= tp_expect(&tp_d0, "d11", DELTA(.alloc_stats.fast = 128));
	return ok;
}

static bool step_d12(void)
{
	struct tpool *tp = &tp_d0;
	bool ok;

	/* the refill takes all 64 (node 0) from the ring: C63 R0 H189 */
	ok = tp_alloc(tp, 1);
	ok &= tp_expect(tp, "d12", DELTA(.alloc_stats.refill = 1));
	if (tp->pool->alloc.count != 63 || ring_count(tp->pool)) {
		ppt_diag("d12: cache %u ring %d after the refill, expected 63 and 0",
			 tp->pool->alloc.count, ring_count(tp->pool));
		ok = false;
	}
	return ok;
}

static bool step_d13(void)
{
	/* C63 R40 H149 */
	tp_bulk_top(&tp_d0, 40);
	return tp_expect(&tp_d0, "d13", DELTA(.recycle_stats.ring = 40));
}

static bool step_d14(void)
{
	struct tpool *tp = &tp_d0;
	struct page *pg[30], *kept;
	bool ok;

	/*
	 * 30 pages: the first with an extra page reference (released), the
	 * second with an extra pp reference (not the last user: skipped,
	 * still ours), 28 plain ones of which 24 fit the ring; the ring
	 * overflow counts ring_full once, the other 4 are released.
	 * C63 R64 H120 (the kept page on top).
	 */
	if (tp->held < 30)
		return false;
	tp->held -= 30;
	memcpy(pg, &tp->pg[tp->held], sizeof(pg));
	get_page(pg[0]);
	page_pool_ref_page(pg[1]);
	kept = pg[1];
	tp_bulk(tp, pg, 30);
	put_page(pg[0]);
	tp->pg[tp->held++] = kept;
	ok = tp_expect(tp, "d14", DELTA(.recycle_stats.released_refcnt = 1,
					.recycle_stats.ring = 24,
					.recycle_stats.ring_full = 1));
	ok &= tp_accounted(tp, "d14");
	return ok;
}

static bool step_d15(void)
{
	/* its last pp reference: C64 R64 H119 */
	tp_put(&tp_d0, 1, PUT_DIRECT);
	return tp_expect(&tp_d0, "d15", DELTA(.recycle_stats.cached = 1));
}

static bool step_d16(void)
{
	struct tpool *tp = &tp_d0;
	int from = tp->held;
	bool ok;

	/* update_nid() releases the 64 cached pages; the refill then
	 * waives the node-0 page at the head of the ring and the page
	 * comes from a bulk on node 1: C63 R63 H120.
	 */
	tp_update_nid(tp, 1);
	ok = tp_expect(tp, "d16: update_nid(1)", &no_change);
	ok &= tp_alloc(tp, 1);
	ok &= tp_expect(tp, "d16", DELTA(.alloc_stats.waive = 1,
					 .alloc_stats.slow = 1));
	ok &= tp_all_on(tp, from, 1, "d16");
	return ok;
}

static bool step_d17(void)
{
	struct tpool *tp = &tp_d0;
	bool ok = tp_accounted(tp, "d17: before cleanup");

	tp_snapshot(tp);
	ok &= tp_done(tp, "d17: at destroy");
	return ok;
}

static bool step_d18(void)
{
	struct tpool *tp = &tp_d1;
	struct page *page;
	bool ok;

	if (!tp_init(tp, 0, 1, 64, -1))
		return false;
	/* order > 0 allocates one page, no bulk: slow_high_order */
	ok = tp_alloc(tp, 1);
	ok &= tp_expect(tp, "d18: alloc", DELTA(.alloc_stats.empty = 1,
						.alloc_stats.slow_high_order = 1));
	if (!ok)
		goto out;
	page = tp->pg[0];
	if (compound_order(page) != 1) {
		ppt_diag("d18: compound order %u", compound_order(page));
		ok = false;
	}
	tp_put(tp, 1, PUT_DIRECT);
	ok &= tp_expect(tp, "d18: direct put", DELTA(.recycle_stats.cached = 1));
	ok &= tp_alloc(tp, 1);
	ok &= tp_expect(tp, "d18: realloc", DELTA(.alloc_stats.fast = 1));
	tp_put(tp, 1, PUT_RING);
	ok &= tp_expect(tp, "d18: ring put", DELTA(.recycle_stats.ring = 1));
	/* refill: one page in the ring, then the ring is empty */
	ok &= tp_alloc(tp, 1);
	ok &= tp_expect(tp, "d18: refill", DELTA(.alloc_stats.refill = 1));
	if (tp->held != 1 || tp->pg[0] != page) {
		ppt_diag("d18: the refill did not return the recycled page");
		ok = false;
	}
	tp_put_extra_ref(tp, PUT_DIRECT);
	ok &= tp_expect(tp, "d18: extra ref",
			DELTA(.recycle_stats.released_refcnt = 1));
out:
	tp_snapshot(tp);
	ok &= tp_done(tp, "d18: at destroy");
	return ok;
}

static struct page *f_page[2];

static bool step_d19(void)
{
	struct tpool *tp = &tp_f;
	unsigned int off[4];
	struct page *page;
	bool ok = true;
	int i;

	f_page[0] = NULL;
	f_page[1] = NULL;
	if (!tp_init(tp, 0, 0, 64, -1))
		return false;
	/*
	 * four 1 KiB frags: the first allocates (empty, slow); the other three
	 * are carved from its page, which 7.2 does not count (6.12: fast)
	 */
	local_bh_disable();
	for (i = 0; i < 4; i++) {
		page = page_pool_alloc_frag(tp->pool, &off[i], 1024, PPT_GFP);
		if (!page || (f_page[0] && page != f_page[0]) ||
		    off[i] != i * 1024)
			ok = false;
		if (!f_page[0])
			f_page[0] = page;
	}
	local_bh_enable();
	if (!ok)
		ppt_diag("d19: frags not 0, 1024, 2048, 3072 of one page");
	ok &= tp_expect(tp, "d19", DELTA(.alloc_stats.empty = 1,
					 .alloc_stats.slow = 1));
	return ok;
}

static bool step_d20(void)
{
	struct tpool *tp = &tp_f;
	unsigned int off;
	bool ok;

	/* the page is full: a new page from the alloc cache (fast) */
	local_bh_disable();
	f_page[1] = page_pool_alloc_frag(tp->pool, &off, 1024, PPT_GFP);
	local_bh_enable();
	ok = f_page[1] && f_page[1] != f_page[0] && off == 0;
	if (!ok)
		ppt_diag("d20: the fifth frag is not at 0 of a new page");
	ok &= tp_expect(tp, "d20", DELTA(.alloc_stats.fast = 1));
	return ok;
}

static bool step_d21(void)
{
	struct tpool *tp = &tp_f;
	bool ok = true;
	int i;

	if (!f_page[0])
		goto out;
	/* three frag puts are not the last user */
	local_bh_disable();
	for (i = 0; i < 3; i++)
		page_pool_put_page(tp->pool, f_page[0], -1, true);
	local_bh_enable();
	ok &= tp_expect(tp, "d21: 3 of 4 frags", &no_change);
	/* the last one recycles the page into the alloc cache */
	local_bh_disable();
	page_pool_put_page(tp->pool, f_page[0], -1, true);
	local_bh_enable();
	ok &= tp_expect(tp, "d21: last frag", DELTA(.recycle_stats.cached = 1));
	ok &= tp_alloc(tp, 1);
	if (!tp->held || tp->pg[0] != f_page[0]) {
		ppt_diag("d21: the recycled page is not on top of the cache");
		ok = false;
	}
	tp_put(tp, 1, PUT_DIRECT);
	ok &= tp_expect(tp, "d21: realloc", DELTA(.alloc_stats.fast = 1,
						  .recycle_stats.cached = 1));
	/* the fifth frag: the pool's frag page keeps it until destroy */
	if (!f_page[1])
		goto out;
	local_bh_disable();
	page_pool_put_page(tp->pool, f_page[1], -1, true);
	local_bh_enable();
	ok &= tp_expect(tp, "d21: frag of the pool's frag page", &no_change);
out:
	tp_snapshot(tp);
	ok &= tp_done(tp, "d21: at destroy");
	return ok;
}

static bool step_d22(void *arg)
{
	struct tpool *tp = &tp_q;
	bool ok;

	if (!tp_init(tp, cpu_to_node(qcpu), 0, 64, qcpu))
		return false;
	/* four bulks: C56 H200 */
	ok = tp_alloc(tp, 200);
	ok &= tp_expect(tp, "d22", DELTA(.alloc_stats.empty = 4,
					 .alloc_stats.slow = 4,
					 .alloc_stats.fast = 196));
	return ok;
}

static bool step_d23(void *arg)
{
	/* allow_direct false, but softirq context on the pool's CPU:
	 * C66 H190
	 */
	tp_put(&tp_q, 10, PUT_RING);
	return tp_expect(&tp_q, "d23", DELTA(.recycle_stats.cached = 10));
}

static bool step_d24(void *arg)
{
	/* process context: R2 H188 */
	tp_put(&tp_q, 2, PUT_RING_PROCESS);
	return tp_expect(&tp_q, "d24", DELTA(.recycle_stats.ring = 2));
}

static bool step_d25(void *arg)
{
	/* 62 fill the cache, 2 to the ring: C128 R4 H124 */
	tp_bulk_top(&tp_q, 64);
	return tp_expect(&tp_q, "d25", DELTA(.recycle_stats.cached = 62,
					     .recycle_stats.cache_full = 2,
					     .recycle_stats.ring = 2));
}

static bool step_d26(void *arg)
{
	/* 60 fill the ring, 4 released, ring_full once: R64 H60 */
	bool ok;

	tp_bulk_top(&tp_q, 64);
	ok = tp_expect(&tp_q, "d26", DELTA(.recycle_stats.cache_full = 64,
					   .recycle_stats.ring = 60,
					   .recycle_stats.ring_full = 1));
	ok &= tp_accounted(&tp_q, "d26");
	return ok;
}

static bool step_d27(void *arg)
{
	/* nothing fits: all 60 released, ring_full once a call (4): H0 */
	bool ok;

	tp_bulk_top(&tp_q, 60);
	ok = tp_expect(&tp_q, "d27", DELTA(.recycle_stats.cache_full = 60,
					   .recycle_stats.ring_full = 4));
	ok &= tp_accounted(&tp_q, "d27");
	return ok;
}

static const struct pp_step d_steps[] = {
	{
		.name =
			"d1: first allocation: ring empty, one bulk from the page allocator (empty, slow)",
		.fn = step_d01,
	},
	{
		.name = "d2: the alloc cache serves 63 (fast)",
		.fn = step_d02,
		.tp = &tp_d0,
	},
	{
		.name = "d3: 160 more: three more bulks (empty, slow, fast)",
		.fn = step_d03,
		.tp = &tp_d0,
	},
	{
		.name = "d4: direct puts fill the alloc cache (cached)",
		.fn = step_d04,
		.tp = &tp_d0,
	},
	{
		.name = "d5: direct put into a full cache goes to the ring (cache_full, ring)",
		.fn = step_d05,
		.tp = &tp_d0,
	},
	{
		.name = "d6: ring puts fill the ring (ring)",
		.fn = step_d06,
		.tp = &tp_d0,
	},
	{
		.name = "d7: direct put, cache and ring full: released (cache_full, ring_full)",
		.fn = step_d07,
		.tp = &tp_d0,
	},
	{
		.name = "d8: ring put, ring full: released (ring_full)",
		.fn = step_d08,
		.tp = &tp_d0,
	},
	{
		.name = "d9: direct put of a page with an extra reference (released_refcnt)",
		.fn = step_d09,
		.tp = &tp_d0,
	},
	{
		.name = "d10: ring put of a page with an extra reference (released_refcnt)",
		.fn = step_d10,
		.tp = &tp_d0,
	},
	{
		.name = "d11: 128 allocations empty the alloc cache (fast)",
		.fn = step_d11,
		.tp = &tp_d0,
	},
	{
		.name = "d12: the next allocation refills 64 pages from the ring (refill)",
		.fn = step_d12,
		.tp = &tp_d0,
	},
	{
		.name = "d13: bulk put of 40 into the ring (ring)",
		.fn = step_d13,
		.tp = &tp_d0,
	},
	{
		.name =
			"d14: bulk put of 30: extra page ref released, extra pp ref kept, ring_full counted once",
		.fn = step_d14,
		.tp = &tp_d0,
	},
	{
		.name = "d15: the last pp reference of the kept page recycles it (cached)",
		.fn = step_d15,
		.tp = &tp_d0,
	},
	{
		.name =
			"d16: after update_nid(1) the node-0 page at the head of the ring is waived (waive, slow)",
		.fn = step_d16,
		.tp = &tp_d0,
		.skip = no_node1_memory,
	},
	{
		.name = "d17: pool 0 accounts for every page in flight, destroyed",
		.fn = step_d17,
		.tp = &tp_d0,
	},
	{
		.name =
			"d18: order-1 pool: slow_high_order, cached, fast, ring, refill, released_refcnt",
		.fn = step_d18,
	},
	{
		.name = "d19: frag pool: four 1 KiB frags of one page (empty, slow)",
		.fn = step_d19,
	},
	{
		.name = "d20: frag pool: the fifth frag starts a new page (fast)",
		.fn = step_d20,
		.tp = &tp_f,
	},
	{
		.name = "d21: frag pool: the last frag put recycles the page (cached)",
		.fn = step_d21,
		.tp = &tp_f,
	},
	{
		.name = "d22: per-CPU pool on its CPU: 200 allocations (empty, slow, fast)",
		.on_cpu = step_d22,
	},
	{
		.name =
			"d23: per-CPU pool: allow_direct false from softirq on its CPU recycles directly (cached)",
		.on_cpu = step_d23,
		.tp = &tp_q,
	},
	{
		.name = "d24: per-CPU pool: put from process context goes to the ring (ring)",
		.on_cpu = step_d24,
		.tp = &tp_q,
	},
	{
		.name = "d25: per-CPU pool: napi-local bulk put fills the cache, then the ring",
		.on_cpu = step_d25,
		.tp = &tp_q,
	},
	{
		.name = "d26: per-CPU pool: bulk overflow: ring_full once, the rest released",
		.on_cpu = step_d26,
		.tp = &tp_q,
	},
	{
		.name =
			"d27: per-CPU pool: bulk into full cache and ring: all released, ring_full once a call",
		.on_cpu = step_d27,
		.tp = &tp_q,
	},
};

KUNIT_ARRAY_PARAM_DESC(d_steps, d_steps, name);

static void d_counters_exact(struct kunit *test)
{
	struct tpool *pools[] = { &tp_d0, &tp_d1, &tp_f, &tp_q };
	const struct pp_step *s = test->param_value;
	bool ok;

	if (s == d_steps) {
		qcpu = cpu_of_node(0);
		if (qcpu < 0)
			qcpu = cpumask_first(cpu_online_mask);
	}
	run_step(test, s);
	if (s != &d_steps[ARRAY_SIZE(d_steps) - 1])
		return;
	ok = !tp_q.pool;
	if (tp_q.pool) {
		tp_snapshot(&tp_q);
		ok = tp_done(&tp_q, "d: per-CPU pool at destroy");
	}
	KUNIT_EXPECT_TRUE_MSG(test, ok, "d: the per-CPU pool accounts for every page at destroy");
	stats_line("stats", pools, ARRAY_SIZE(pools));
}

/*
 * e: a NUMA_NO_NODE pool follows its consumer's node (numa_mem_id()): pages
 * that were recycled on node 0 are waived when the consumer runs on node 1,
 * and the other way round; a refill stops at the first page of another
 * node, waives it, and hands out what it gathered before it.
 */
static bool e_fill(void *arg)
{
	struct tpool *tp = &tp_e;
	bool ok;

	ok = tp_alloc(tp, 64);
	ok &= tp_expect(tp, "e1: 64 on node 0", DELTA(.alloc_stats.empty = 1,
						      .alloc_stats.slow = 1,
						      .alloc_stats.fast = 63));
	ok &= tp_all_on(tp, 0, numa_mem_id(), "e1: precondition, on node 0");
	tp_put(tp, 64, PUT_RING);
	ok &= tp_expect(tp, "e1: ring", DELTA(.recycle_stats.ring = 64));
	return ok;
}

static bool e_far(void *arg)
{
	struct tpool *tp = &tp_e;
	bool ok;

	if (numa_mem_id() != 1) {
		ppt_diag("e1: numa_mem_id() is %d on node 1", numa_mem_id());
		return false;
	}
	ok = tp_alloc(tp, 64);
	ok &= tp_expect(tp, "e1: 64 on node 1", DELTA(.alloc_stats.waive = 1,
						      .alloc_stats.slow = 1,
						      .alloc_stats.fast = 63));
	ok &= tp_all_on(tp, 0, 1, "e1: handed out on node 1");
	tp_put(tp, 64, PUT_RING);
	ok &= tp_expect(tp, "e1: ring", DELTA(.recycle_stats.ring = 64));
	return ok;
}

static bool e_back(void *arg)
{
	struct tpool *tp = &tp_e;
	bool ok;

	/* ring: 63 node-0 pages, then 64 node-1 pages */
	ok = tp_alloc(tp, 63);
	ok &= tp_expect(tp, "e2: 63 back on node 0",
			DELTA(.alloc_stats.waive = 1, .alloc_stats.refill = 1,
			      .alloc_stats.fast = 62));
	ok &= tp_all_on(tp, 0, 0, "e2: handed out on node 0");
	tp_put(tp, 63, PUT_RING);
	ok &= tp_expect(tp, "e2: ring", DELTA(.recycle_stats.ring = 63));
	return ok;
}

static bool step_e1(void)
{
	struct tpool *tp = &tp_e;
	bool ok;

	ppt_diag("numa: node 0 cpu %d, node 1 cpu %d", cpu_of_node(0),
		 cpu_of_node(1));
	if (!tp_init(tp, NUMA_NO_NODE, 0, 256, -1))
		return false;
	ok = run_on_cpu(cpu_of_node(0), e_fill, NULL);
	ok &= run_on_cpu(cpu_of_node(1), e_far, NULL);
	ok &= tp_accounted(tp, "e1");
	return ok;
}

static bool step_e2(void)
{
	struct tpool *tp = &tp_e;
	bool ok;

	ok = run_on_cpu(cpu_of_node(0), e_back, NULL);
	ok &= tp_accounted(tp, "e2");
	tp_snapshot(tp);
	stats_line("stats e", &tp, 1);
	ok &= tp_done(tp, "e2: at destroy");
	return ok;
}

static const char *no_numa_cpus(void)
{
	if (cpu_of_node(0) < 0 || cpu_of_node(1) < 0)
		return "needs online CPUs on nodes 0 and 1";
	return NULL;
}

static const struct pp_step e_steps[] = {
	{
		.name = "e1: NUMA_NO_NODE pool, consumer on node 1: node-0 pages waived, node-1 pages handed out",
		.fn = step_e1,
		.skip = no_numa_cpus,
	},
	{
		.name = "e2: back on node 0: the refill stops at the first node-1 page (waive and refill in one call)",
		.fn = step_e2,
		.tp = &tp_e,
		.skip = no_numa_cpus,
	},
};

KUNIT_ARRAY_PARAM_DESC(e_steps, e_steps, name);

static void e_no_node_pool_follows_consumer(struct kunit *test)
{
	run_step(test, test->param_value);
}

static int page_pool_test_suite_init(struct kunit_suite *suite)
{
	kunit_log(KERN_INFO, suite, KUNIT_SUBTEST_INDENT "# hook: %s", path);
	kunit_log(KERN_INFO, suite,
		  KUNIT_SUBTEST_INDENT "# numa: online nodes %d, node 1 memory %s",
		  num_online_nodes(), node1_has_memory() ? "yes" : "no");
	return 0;
}

/* A case that failed half-way leaves its pool: destroy what is left. */
static void page_pool_test_suite_exit(struct kunit_suite *suite)
{
	struct tpool *pools[] = {
		&tp_a, &tp_b, &tp_c, &tp_d0, &tp_d1, &tp_f, &tp_q, &tp_e,
	};
	int i;

	for (i = 0; i < ARRAY_SIZE(pools); i++)
		if (pools[i]->pool)
			tp_done(pools[i], "cleanup");
}

static struct kunit_case page_pool_test_cases[] = {
	KUNIT_CASE(a_update_nid_0_waives_node_1_pages),
	KUNIT_CASE(b_update_nid_1_refills_on_node_1),
	KUNIT_CASE_PARAM(c_pfmemalloc_pages_released, c_steps_gen_params),
	KUNIT_CASE_PARAM(d_counters_exact, d_steps_gen_params),
	KUNIT_CASE_PARAM(e_no_node_pool_follows_consumer, e_steps_gen_params),
	{}
};

static struct kunit_suite page_pool_test_suite = {
	.name = "page_pool_recycle",
	.suite_init = page_pool_test_suite_init,
	.suite_exit = page_pool_test_suite_exit,
	.test_cases = page_pool_test_cases,
};
kunit_test_suite(page_pool_test_suite);

MODULE_DESCRIPTION("page_pool recycle and refill path tests, C or Rust (KUnit)");
MODULE_LICENSE("GPL");
