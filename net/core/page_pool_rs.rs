// SPDX-License-Identifier: GPL-2.0

//! page_pool_rs: the page_pool recycle and refill path in Rust.
//!
//! Loaded, it becomes the path by which every page pool recycles pages and
//! refills its alloc cache (the hook of `include/net/page_pool/hook.h`);
//! unloaded, the C path of `net/core/page_pool.c` takes over again, with
//! the same alloc caches, rings and statistics, so pages in flight are
//! never lost.
//!
//! The rule of upstream "page_pool: Don't recycle non-reusable pages": a
//! page is recycled only if the pool holds its sole reference and it is not
//! pfmemalloc (allocated from the emergency reserves), and a refill hands
//! out pages of the pool's NUMA node only: a page of another node met in the
//! ring is released (`waive`) and the pool allocates a local one. Statistics
//! move exactly as in C.

use kernel::net::page_pool::{
    self, AllocCache, AllocStat, BulkPages, Hook, Netmem, PagePool, Recyclable, RecycleStat,
    RingProducerLock, PP_ALLOC_CACHE_REFILL,
};
use kernel::prelude::*;

/// Whether a refill releases pages of a node other than the pool's: C's
/// rule, always. A constant, so that a build without the rule (to measure
/// what it buys) differs from this one in this line only.
const NUMA_CHECK: bool = true;

struct RustPath;

impl RustPath {
    /// The check of `__page_pool_put_page()`: `Some` if `netmem` may be
    /// recycled, else it is released here.
    #[inline(always)]
    fn recyclable<'a>(pool: &'a PagePool, netmem: Netmem<'a>) -> Option<Recyclable<'a>> {
        // `__page_pool_page_can_be_recycled()`: the pool holds the only
        // reference and the page is not from the emergency reserves.
        match netmem.into_recyclable() {
            Ok(netmem) => Some(netmem),
            Err(netmem) => {
                // Shared (the user kept a reference) or pfmemalloc: back to
                // the page allocator.
                pool.recycle_stat_inc(RecycleStat::ReleasedRefcnt);
                pool.return_page(netmem);
                None
            }
        }
    }

    /// The rest of `__page_pool_put_page()` for a synced page: into the
    /// alloc cache if allowed and not full, else handed back for the ring.
    #[inline(always)]
    fn recycle_direct<'a>(
        pool: &'a PagePool,
        netmem: Recyclable<'a>,
        cache: Option<&mut AllocCache<'a>>,
    ) -> Option<Recyclable<'a>> {
        let Some(cache) = cache else {
            return Some(netmem);
        };
        match cache.push(netmem) {
            Ok(()) => {
                pool.recycle_stat_inc(RecycleStat::Cached);
                None
            }
            Err(netmem) => {
                pool.recycle_stat_inc(RecycleStat::CacheFull);
                Some(netmem)
            }
        }
    }

    /// `__page_pool_put_page()`: recycles `netmem` into the alloc cache if
    /// allowed, releases it if it cannot be reused, or returns it for the
    /// ring.
    #[inline(always)]
    fn put_page<'a>(
        pool: &'a PagePool,
        netmem: Netmem<'a>,
        dma_sync_size: u32,
        cache: Option<&mut AllocCache<'a>>,
    ) -> Option<Recyclable<'a>> {
        let netmem = Self::recyclable(pool, netmem)?;
        pool.dma_sync_for_device(&netmem, dma_sync_size);
        Self::recycle_direct(pool, netmem, cache)
    }

    /// Recycles a synced page: alloc cache, else ring.
    #[inline(always)]
    fn recycle<'a>(
        pool: &'a PagePool,
        netmem: Recyclable<'a>,
        mut cache: Option<AllocCache<'a>>,
        mut ring: RingProducerLock<'a>,
    ) {
        if let Some(netmem) = Self::recycle_direct(pool, netmem, cache.as_mut()) {
            Self::recycle_in_ring(pool, netmem, &mut ring);
        }
    }

    /// Syncs, then recycles. Out of line, so that a pool without DMA sync
    /// (most software devices, XDP_DROP) recycles without saving registers
    /// for the call.
    #[inline(never)]
    fn sync_and_recycle<'a>(
        pool: &'a PagePool,
        netmem: Recyclable<'a>,
        dma_sync_size: u32,
        cache: Option<AllocCache<'a>>,
        ring: RingProducerLock<'a>,
    ) {
        pool.dma_sync_for_device(&netmem, dma_sync_size);
        Self::recycle(pool, netmem, cache, ring);
    }

    /// `page_pool_recycle_in_ring()`, or the page allocator if the ring is
    /// full. Out of line: the lock code would otherwise cost the direct
    /// recycle path its registers.
    #[inline(never)]
    fn recycle_in_ring<'a>(
        pool: &'a PagePool,
        netmem: Recyclable<'a>,
        lock: &mut RingProducerLock<'a>,
    ) {
        let mut ring = lock.lock(pool);
        match ring.produce(netmem) {
            Ok(()) => {
                pool.recycle_stat_inc(RecycleStat::Ring);
                drop(ring);
            }
            Err(netmem) => {
                drop(ring);
                // Ring full: give the page back to the page allocator.
                pool.recycle_stat_inc(RecycleStat::RingFull);
                pool.return_page(netmem.into_netmem());
            }
        }
    }
}

impl RustPath {
    /// Moves pages from the ring to the alloc cache, up to the refill mark;
    /// with `CHECK_NID`, stops at a page of a node other than `pref_nid`,
    /// which it releases.
    #[inline(always)]
    fn fill_from_ring<'a, const CHECK_NID: bool>(
        pool: &'a PagePool,
        cache: &mut AllocCache<'a>,
        pref_nid: i32,
    ) {
        // Checking the mark first lets the compiler see that each push
        // fits, as C's loop knows.
        while cache.count() < PP_ALLOC_CACHE_REFILL {
            let Some(netmem) = cache.ring_consume() else {
                return;
            };
            if CHECK_NID && netmem.nid().is_some_and(|nid| nid != pref_nid) {
                // Foreign node: release one page (a dropped page goes back
                // to the page allocator) and let the pool allocate a local
                // one, which keeps the page allocator's load low.
                drop(netmem);
                cache.alloc_stat_inc(AllocStat::Waive);
                return;
            }
            if let Err(netmem) = cache.push(netmem) {
                // Cannot happen: below the refill mark the cache has room.
                // Do not lose the page.
                pool.return_page(netmem.into_netmem());
                return;
            }
        }
    }
}

impl Hook for RustPath {
    fn refill_alloc_cache<'a>(pool: &'a PagePool, mut cache: AllocCache<'a>) -> Option<Netmem<'a>> {
        // Quicker fallback, no work when the ring is empty.
        if cache.ring_is_empty() {
            cache.alloc_stat_inc(AllocStat::Empty);
            return None;
        }
        // The refill runs where the consumer runs (softirq): the node of
        // this CPU is stable and is where the pages will be used.
        let pref_nid = pool.refill_nid();
        Self::fill_from_ring::<NUMA_CHECK>(pool, &mut cache, pref_nid);
        let netmem = cache.pop()?;
        cache.alloc_stat_inc(AllocStat::Refill);
        Some(netmem)
    }

    #[inline]
    fn put_unrefed<'a>(
        pool: &'a PagePool,
        netmem: Netmem<'a>,
        dma_sync_size: u32,
        cache: Option<AllocCache<'a>>,
        ring: RingProducerLock<'a>,
    ) {
        let Some(netmem) = Self::recyclable(pool, netmem) else {
            return;
        };
        if pool.dma_sync() {
            Self::sync_and_recycle(pool, netmem, dma_sync_size, cache, ring);
        } else {
            Self::recycle(pool, netmem, cache, ring);
        }
    }

    fn put_bulk<'a>(
        pool: &'a PagePool,
        pages: &mut BulkPages<'a>,
        mut cache: Option<AllocCache<'a>>,
        mut lock: RingProducerLock<'a>,
    ) {
        while let Some(netmem) = pages.take_next() {
            if let Some(netmem) = Self::put_page(pool, netmem, u32::MAX, cache.as_mut()) {
                // Each taken page frees a slot, so keeping one cannot fail;
                // were it to, the page would still go to the ring alone.
                if let Err(netmem) = pages.keep(netmem) {
                    Self::recycle_in_ring(pool, netmem, &mut lock);
                }
            }
        }
        if pages.kept() == 0 {
            return;
        }
        // Bulk into the ring under one lock; what does not fit is released
        // after unlocking, since freeing pages can be slow.
        let mut ring = lock.lock(pool);
        let mut queued = 0;
        let mut kept = pages.drain_kept();
        let mut overflow = None;
        for netmem in kept.by_ref() {
            match ring.produce(netmem) {
                Ok(()) => queued += 1,
                Err(netmem) => {
                    pool.recycle_stat_inc(RecycleStat::RingFull);
                    overflow = Some(netmem);
                    break;
                }
            }
        }
        pool.recycle_stat_add(RecycleStat::Ring, queued);
        drop(ring);
        for netmem in Iterator::chain(overflow.into_iter(), kept) {
            pool.return_page(netmem.into_netmem());
        }
    }
}

// Dropping the hook sends every pool back to C, running hooks waited for.
kernel::module_registrations! {
    type: PagePoolModule,
    loaded: || pr_info!("page_pool recycling now runs in Rust\n"),
    registrations: {
        _hook: page_pool::Registration<RustPath> = (),
    },
    name: "page_pool_rs",
    authors: ["rsnet"],
    description: "page_pool recycle and refill path (Rust)",
    license: "GPL",
}

impl Drop for PagePoolModule {
    fn drop(&mut self) {
        pr_info!("page_pool recycling goes back to C\n");
    }
}
