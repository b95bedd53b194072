// SPDX-License-Identifier: GPL-2.0

#ifdef CONFIG_PAGE_POOL
#include <linux/mm.h>
#include <linux/topology.h>
#include <net/netmem.h>
#include <net/page_pool/helpers.h>
#include <net/page_pool/hook.h>

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

/* A hook's page dropped unrecycled: back to the page allocator (or its
 * provider), through the pool that owns it. struct net_iov mirrors
 * struct page up to pp.
 */
void rust_helper_page_pool_netmem_release(netmem_ref netmem)
{
	struct page_pool *pool = netmem_is_net_iov(netmem) ?
		netmem_to_net_iov(netmem)->pp : netmem_to_page(netmem)->pp;

	page_pool_hook_return_page(pool, netmem);
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
