// SPDX-License-Identifier: GPL-2.0

#ifdef CONFIG_PAGE_POOL
#include <linux/mm.h>
#include <linux/ptr_ring.h>
#include <linux/topology.h>
#include <net/netmem.h>
#include <net/page_pool/helpers.h>

int rust_helper_page_pool_nid(const struct page_pool *pool)
{
	return READ_ONCE(pool->p.nid);
}

int rust_helper_numa_mem_id(void)
{
	return numa_mem_id();
}

int rust_helper_netmem_page_nid(netmem_ref netmem)
{
	return page_to_nid(netmem_to_page(netmem));
}

bool rust_helper_page_pool_ring_empty(struct page_pool *pool)
{
	return __ptr_ring_empty(&pool->ring);
}

netmem_ref rust_helper_page_pool_ring_consume(struct page_pool *pool)
{
	return (__force netmem_ref)__ptr_ring_consume(&pool->ring);
}

/* Returns 0 when queued, -ENOSPC when the ring is full. */
int rust_helper_page_pool_ring_produce(struct page_pool *pool,
				       netmem_ref netmem)
{
	return __ptr_ring_produce(&pool->ring, (__force void *)netmem);
}

/* page_pool_put_page_bulk()'s view of one entry: its head page, and
 * whether this put dropped the last pool reference to it.
 */
netmem_ref rust_helper_page_pool_bulk_unref(void *data)
{
	netmem_ref netmem = page_to_netmem(virt_to_head_page(data));

	return page_pool_is_last_ref(netmem) ? netmem : 0;
}

void rust_helper_page_pool_recycle_stat_add(struct page_pool *pool,
					    unsigned int stat, u64 val)
{
#ifdef CONFIG_PAGE_POOL_STATS
	struct page_pool_recycle_stats __percpu *s = pool->recycle_stats;

	switch (stat) {
	case 0:
		this_cpu_add(s->cached, val);
		break;
	case 1:
		this_cpu_add(s->cache_full, val);
		break;
	case 2:
		this_cpu_add(s->ring, val);
		break;
	case 3:
		this_cpu_add(s->ring_full, val);
		break;
	case 4:
		this_cpu_add(s->released_refcnt, val);
		break;
	}
#endif
}
#endif /* CONFIG_PAGE_POOL */
