// SPDX-License-Identifier: GPL-2.0

//! The pool's allocation and recycling statistics.

/// An allocation statistic (`struct page_pool_alloc_stats`).
#[derive(Clone, Copy)]
pub enum AllocStat {
    /// Served from the alloc cache.
    Fast,
    /// Served by the page allocator, order 0.
    Slow,
    /// Served by the page allocator, higher order.
    SlowHighOrder,
    /// The ring was empty at a refill.
    Empty,
    /// Served by a refill from the ring.
    Refill,
    /// A page of another node was met in the ring and released.
    Waive,
}

/// A recycling statistic (`struct page_pool_recycle_stats`): the index
/// of its `u64` field, which `rust_helper_page_pool_recycle_stat_add()`
/// adds to (checked at build time below).
#[derive(Clone, Copy)]
pub enum RecycleStat {
    /// Recycled into the alloc cache.
    Cached = 0,
    /// The alloc cache was full.
    CacheFull = 1,
    /// Recycled into the ring.
    Ring = 2,
    /// The ring was full.
    RingFull = 3,
    /// Released because the page was shared or pfmemalloc.
    ReleasedRefcnt = 4,
}

#[cfg(CONFIG_PAGE_POOL_STATS)]
const _: () = {
    use core::mem::{offset_of, size_of};
    type S = crate::bindings::page_pool_recycle_stats;
    let _: fn(&S) -> [&u64; 5] = |s| {
        [
            &s.cached,
            &s.cache_full,
            &s.ring,
            &s.ring_full,
            &s.released_refcnt,
        ]
    };
    assert!(size_of::<S>() == 5 * 8);
    assert!(offset_of!(S, cached) == RecycleStat::Cached as usize * 8);
    assert!(offset_of!(S, cache_full) == RecycleStat::CacheFull as usize * 8);
    assert!(offset_of!(S, ring) == RecycleStat::Ring as usize * 8);
    assert!(offset_of!(S, ring_full) == RecycleStat::RingFull as usize * 8);
    assert!(offset_of!(S, released_refcnt) == RecycleStat::ReleasedRefcnt as usize * 8);
};
