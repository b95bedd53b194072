// SPDX-License-Identifier: GPL-2.0

#ifdef CONFIG_PAGE_POOL_HOOK
#include <linux/mm.h>
#include <linux/ptr_ring.h>
#include <linux/topology.h>
#include <net/netmem.h>
#include <net/page_pool/helpers.h>
#include <net/page_pool/hook.h>

__rust_helper int rust_helper_page_pool_nid(const struct page_pool *pool)
{
	return READ_ONCE(pool->p.nid);
}

__rust_helper int rust_helper_numa_mem_id(void)
{
	return numa_mem_id();
}

__rust_helper int rust_helper_netmem_page_nid(netmem_ref netmem)
{
	return page_to_nid(netmem_to_page(netmem));
}

/* A hook's page dropped unrecycled: back to the page allocator (or its
 * provider), through the pool that owns it. struct net_iov mirrors
 * struct page up to pp.
 */
__rust_helper void rust_helper_page_pool_netmem_release(netmem_ref netmem)
{
	page_pool_hook_return_netmem(netmem_get_pp(netmem), netmem);
}

/* page_pool_put_netmem_bulk()'s view of one entry: its head, and whether
 * this put dropped the last pool reference to it.
 */
__rust_helper netmem_ref rust_helper_page_pool_bulk_unref(netmem_ref netmem)
{
	netmem = netmem_compound_head(netmem);

	return page_pool_unref_and_test(netmem) ? netmem : 0;
}

__rust_helper struct page_pool *rust_helper_netmem_get_pp(netmem_ref netmem)
{
	return netmem_get_pp(netmem);
}

/* NAPI locality and the ring producer lock, as the C path inlines them. */
__rust_helper bool rust_helper_page_pool_napi_local(const struct page_pool *pool)
{
	return page_pool_napi_local(pool);
}

__rust_helper bool rust_helper_page_pool_producer_lock(struct page_pool *pool)
{
	return page_pool_producer_lock(pool);
}

__rust_helper void rust_helper_page_pool_producer_unlock(struct page_pool *pool,
							 bool in_softirq)
{
	page_pool_producer_unlock(pool, in_softirq);
}

/* The ring steps of the recycle and refill path: under the producer lock,
 * or in the pool's consumer context, as page_pool.c takes them.
 */
__rust_helper int rust_helper___ptr_ring_produce(struct ptr_ring *r, void *ptr)
{
	return __ptr_ring_produce(r, ptr);
}

__rust_helper bool rust_helper___ptr_ring_empty(struct ptr_ring *r)
{
	return __ptr_ring_empty(r);
}

__rust_helper void *rust_helper___ptr_ring_consume(struct ptr_ring *r)
{
	return __ptr_ring_consume(r);
}

/* @stat numbers the u64 fields of struct page_pool_recycle_stats in their
 * order, as kernel::net::page_pool::RecycleStat checks at build time.
 */
__rust_helper void rust_helper_page_pool_recycle_stat_add(struct page_pool *pool,
							  unsigned int stat, u64 val)
{
#ifdef CONFIG_PAGE_POOL_STATS
	u64 __percpu *s = (u64 __percpu *)pool->recycle_stats;

	if (stat < sizeof(*pool->recycle_stats) / sizeof(u64))
		this_cpu_add(s[stat], val);
#endif
}
#endif /* CONFIG_PAGE_POOL_HOOK */
