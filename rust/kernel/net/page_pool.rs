// SPDX-License-Identifier: GPL-2.0

//! Page pools: the recycle and refill hot path.
//!
//! C headers: [`include/net/page_pool/types.h`](srctree/include/net/page_pool/types.h),
//! [`include/net/page_pool/hook.h`](srctree/include/net/page_pool/hook.h)
//!
//! A type implementing [`Hook`] becomes, once registered with
//! [`Registration`], the path by which every page pool of the kernel
//! recycles pages (`page_pool_put_unrefed_netmem()`,
//! `page_pool_put_netmem_bulk()`) and refills its alloc cache from its
//! ptr_ring. The hook works on the pool's own data (alloc cache, ring,
//! statistics), so the C path and the hook can take turns while pools are
//! in use; dropping the registration switches back to C and waits until no
//! hook runs any more.
//!
//! The alloc cache and the alloc statistics belong to the pool's consumer
//! (its NAPI context): only an [`AllocCache`] reaches them, and the hook is
//! given one only where C would touch them.

use crate::{
    bindings,
    error::to_result,
    ffi::c_void,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    types::Opaque,
};
use core::{marker::PhantomData, ptr};

/// No NUMA node preference (`NUMA_NO_NODE`).
pub const NUMA_NO_NODE: i32 = -1;
/// Size of the alloc cache (`PP_ALLOC_CACHE_SIZE`).
pub const PP_ALLOC_CACHE_SIZE: usize = bindings::PP_ALLOC_CACHE_SIZE as usize;
/// How far a refill fills the alloc cache (`PP_ALLOC_CACHE_REFILL`).
pub const PP_ALLOC_CACHE_REFILL: usize = bindings::PP_ALLOC_CACHE_REFILL as usize;

/// The most netmems C's `page_pool_put_netmem_bulk()` takes of one pool.
const XDP_BULK_QUEUE_SIZE: usize = bindings::XDP_BULK_QUEUE_SIZE as usize;

/// Bit of `page->lru.next` (`pp_magic` for pool pages) that marks a
/// pfmemalloc page (`page_is_pfmemalloc()`).
const PFMEMALLOC_BIT: crate::ffi::c_ulong = 1 << 1;

/// Returns the memory node of the current CPU (`numa_mem_id()`).
#[inline]
pub fn numa_mem_id() -> i32 {
    // SAFETY: No precondition; the value may be stale once preemptible,
    // which callers accept (C's refill runs in softirq, where it is stable).
    unsafe { bindings::numa_mem_id() }
}

/// The node whose pages a refill keeps (`pref_nid` in C's
/// `page_pool_refill_alloc_cache()`), for a pool on `pool_nid` in a
/// kernel with (`numa`) or without `CONFIG_NUMA`: the pool's node, or the
/// consumer's (`mem_id()`, called only then) if the pool has none. Without
/// `CONFIG_NUMA` the pool's node is ignored, as in C: every page is on
/// node 0 there, and so is the consumer.
///
/// ```
/// use kernel::net::page_pool::{pref_nid, NUMA_NO_NODE};
///
/// assert_eq!(pref_nid(1, true, || 0), 1);
/// assert_eq!(pref_nid(NUMA_NO_NODE, true, || 2), 2);
/// // A driver's nonzero node means nothing without CONFIG_NUMA.
/// assert_eq!(pref_nid(3, false, || 0), 0);
/// assert_eq!(pref_nid(NUMA_NO_NODE, false, || 0), 0);
/// ```
#[inline]
pub fn pref_nid(pool_nid: i32, numa: bool, mem_id: impl FnOnce() -> i32) -> i32 {
    if numa && pool_nid != NUMA_NO_NODE {
        pool_nid
    } else {
        mem_id()
    }
}

/// A page of a page pool, or a `net_iov` of a memory provider
/// (`netmem_ref`), that the pool's user gave back: whoever holds a
/// `Netmem` recycles it (alloc cache or ring) or releases it
/// ([`PagePool::return_page`]); one dropped is released.
///
/// It lives no longer than the hook call that gave it (`'p`), which sees
/// one pool only: a hook cannot keep a page, nor put it into another
/// pool's cache or ring.
///
/// # Invariants
///
/// `self.0` is a non-zero `netmem_ref` of a page of the pool of the hook
/// call `'p`, on which the holder has the pool's ownership: it is in no
/// alloc cache or ring.
#[must_use = "a page left unrecycled is released on drop"]
pub struct Netmem<'p>(bindings::netmem_ref, PhantomData<&'p PagePool>);

impl Drop for Netmem<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: The page is ours (type invariant), and is given back
        // once: `into_raw()` forgets a `Netmem` without dropping it. The
        // helper releases it to its own pool (`page->pp`).
        unsafe { bindings::page_pool_netmem_release(self.0) };
    }
}

impl<'p> Netmem<'p> {
    /// # Invariants
    ///
    /// The caller owns `raw`, a page of the pool of the hook call `'p`
    /// (see the type's invariants).
    #[inline]
    fn owned(raw: bindings::netmem_ref) -> Self {
        Self(raw, PhantomData)
    }

    /// Returns `true` for a `net_iov` of a memory provider (not a page).
    #[inline]
    pub fn is_net_iov(&self) -> bool {
        self.0 & (bindings::NET_IOV as bindings::netmem_ref) != 0
    }

    /// The `struct page` of a netmem that is not a `net_iov`
    /// (`netmem_to_page()`: the same address).
    #[inline]
    fn page(&self) -> *mut bindings::page {
        self.0 as *mut bindings::page
    }

    /// Returns `true` if the pool holds the page's only reference, so it
    /// may reuse it: always for a `net_iov`, whose provider counts.
    #[inline]
    pub fn is_sole_ref(&self) -> bool {
        // SAFETY: A page we own (type invariant) is valid. The count is an
        // `atomic_t` that other CPUs change only atomically: it is read as
        // one, as `page_ref_count()` (`atomic_read()`) does.
        self.is_net_iov()
            || unsafe {
                Atomic::from_ptr(core::ptr::addr_of_mut!((*self.page())._refcount.counter))
            }
            .load(Relaxed)
                == 1
    }

    /// Returns `true` if the page came from the emergency reserves
    /// (`page_is_pfmemalloc()`): it must go back to the page allocator.
    #[inline]
    pub fn is_pfmemalloc(&self) -> bool {
        // SAFETY: A page we own (type invariant) is valid. For page_pool
        // pages `pp_magic` is the word `page_is_pfmemalloc()` reads
        // (`lru.next`), where the page allocator leaves bit 1 set for a
        // pfmemalloc page and page_pool keeps it (see `PP_SIGNATURE`).
        !self.is_net_iov()
            && unsafe {
                core::ptr::read_volatile(&(*self.page()).__bindgen_anon_1.__bindgen_anon_2.pp_magic)
            } & PFMEMALLOC_BIT
                != 0
    }

    /// Returns the NUMA node of the page, `None` for a `net_iov` (whose
    /// provider chose its memory).
    #[inline]
    pub fn nid(&self) -> Option<i32> {
        if self.is_net_iov() {
            return None;
        }
        if bindings::NODES_WIDTH == 0 || cfg!(CONFIG_DEBUG_VM_PGFLAGS) {
            // The node is not in `page->flags`, or C checks the flags
            // first: ask C.
            // SAFETY: A page we own (type invariant) is valid.
            return Some(unsafe { bindings::netmem_page_nid(self.0) });
        }
        // SAFETY: A page we own (type invariant) is valid; its node bits
        // never change (`page_to_nid()`), but other bits of the word are
        // changed atomically by other CPUs, so it is read once, volatile.
        let flags =
            unsafe { core::ptr::read_volatile(core::ptr::addr_of!((*self.page()).flags.f)) };
        let mask = bindings::NODES_MASK as crate::ffi::c_ulong;
        Some(((flags >> bindings::NODES_PGSHIFT) & mask) as i32)
    }

    /// Checks that the page may be recycled
    /// (`__page_pool_page_can_be_recycled()`): a `net_iov`, or a page of
    /// which the pool holds the only reference and that is not from the
    /// emergency reserves (pfmemalloc). Hands the page back otherwise: it
    /// must go back to the page allocator ([`PagePool::return_page`]).
    ///
    /// Only a [`Recyclable`] goes into an alloc cache or a ring, so no hook
    /// can recycle a page someone else still uses or a pfmemalloc page.
    #[inline]
    pub fn into_recyclable(self) -> core::result::Result<Recyclable<'p>, Netmem<'p>> {
        if self.is_net_iov() || (self.is_sole_ref() && !self.is_pfmemalloc()) {
            // INVARIANT: Checked just above.
            Ok(Recyclable(self))
        } else {
            Err(self)
        }
    }

    /// Gives up ownership without recycling or releasing.
    #[inline]
    fn into_raw(self) -> bindings::netmem_ref {
        core::mem::ManuallyDrop::new(self).0
    }
}

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
    type S = bindings::page_pool_recycle_stats;
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

/// A [`Netmem`] checked to be recyclable ([`Netmem::into_recyclable`]), or
/// taken from a ring, where only such pages go.
///
/// # Invariants
///
/// The page is a `net_iov`, or the pool holds its only reference and it is
/// not pfmemalloc.
#[must_use = "a page left unrecycled is released on drop"]
pub struct Recyclable<'p>(Netmem<'p>);

impl<'p> Recyclable<'p> {
    /// Gives up the check, e.g. to release the page after all.
    #[inline]
    pub fn into_netmem(self) -> Netmem<'p> {
        self.0
    }
}

impl<'p> core::ops::Deref for Recyclable<'p> {
    type Target = Netmem<'p>;

    #[inline]
    fn deref(&self) -> &Netmem<'p> {
        &self.0
    }
}

/// A page pool (`struct page_pool`), as its hooks see it.
///
/// # Invariants
///
/// A `&PagePool` is only made for a live pool inside a hook call.
#[repr(transparent)]
pub struct PagePool(Opaque<bindings::page_pool>);

impl PagePool {
    /// # Safety
    ///
    /// `ptr` must be a live page pool for `'a`.
    #[inline]
    unsafe fn from_raw<'a>(ptr: *mut bindings::page_pool) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    fn as_ptr(&self) -> *mut bindings::page_pool {
        self.0.get()
    }

    /// Returns the pool's NUMA node, [`NUMA_NO_NODE`] for "the consumer's".
    /// `page_pool_update_nid()` changes it.
    #[inline]
    pub fn nid(&self) -> i32 {
        // SAFETY: The pool is live (type invariant).
        unsafe { bindings::page_pool_nid(self.as_ptr()) }
    }

    /// The node whose pages a refill keeps: [`pref_nid`] of this pool in
    /// this kernel.
    #[inline]
    pub fn refill_nid(&self) -> i32 {
        pref_nid(self.nid(), cfg!(CONFIG_NUMA), numa_mem_id)
    }

    /// Whether we run in the pool's consumer context, so the alloc cache
    /// may be used without being asked to (`page_pool_napi_local()`).
    #[inline]
    fn napi_local(&self) -> bool {
        // SAFETY: The pool is live (type invariant).
        unsafe { bindings::page_pool_napi_local(self.as_ptr()) }
    }

    /// The pool's ptr_ring; producer and consumer ends are guarded by
    /// [`RingProducer`] and [`AllocCache`].
    #[inline]
    fn ring(&self) -> *mut bindings::ptr_ring {
        // SAFETY: The pool is live; we only form the field's address.
        unsafe { ptr::addr_of_mut!((*self.as_ptr()).ring) }
    }

    /// Gives `netmem` back to the page allocator (or its provider),
    /// unmapping it (`page_pool_return_page()`).
    #[inline]
    pub fn return_page(&self, netmem: Netmem<'_>) {
        // SAFETY: The pool is live and the page is ours (invariants); its
        // ownership goes to the call.
        unsafe { bindings::page_pool_hook_return_netmem(self.as_ptr(), netmem.into_raw()) };
    }

    /// Whether the pool syncs recycled pages for the device
    /// (`PP_FLAG_DMA_SYNC_DEV`, until the pool is being destroyed).
    #[inline]
    pub fn dma_sync(&self) -> bool {
        // `has_init_callback:1, dma_map:1, dma_sync:1, ...`: bit 2 of the
        // first bitfield unit, as bindgen's own `dma_sync()` getter reads it.
        const DMA_SYNC_BIT: usize = 2;
        // SAFETY: The pool is live (type invariant). Other CPUs write other
        // fields of it, so no reference to the pool is formed: the unit is
        // copied out with one volatile read, as C reads the flag (plainly;
        // `page_pool_scrub()` clears it, and C rechecks it under RCU).
        let unit = unsafe { ptr::addr_of!((*self.as_ptr())._bitfield_1).read_volatile() };
        unit.get(DMA_SYNC_BIT, 1) != 0
    }

    /// Syncs the first `dma_sync_size` bytes of `netmem` for the device,
    /// if the pool does DMA sync (`page_pool_dma_sync_for_device()`).
    #[inline]
    pub fn dma_sync_for_device(&self, netmem: &Netmem<'_>, dma_sync_size: u32) {
        if !self.dma_sync() {
            return;
        }
        // SAFETY: The pool is live and the page is ours (invariants).
        unsafe {
            bindings::page_pool_hook_dma_sync_for_device(self.as_ptr(), netmem.0, dma_sync_size)
        };
    }

    /// Adds `val` to a recycling statistic (per CPU, any context).
    #[inline]
    pub fn recycle_stat_add(&self, stat: RecycleStat, val: u64) {
        // SAFETY: The pool is live (type invariant) and `stat` the index of
        // a field of its statistics (checked above); the helper compiles to
        // nothing without statistics.
        unsafe { bindings::page_pool_recycle_stat_add(self.as_ptr(), stat as u32, val) };
    }

    /// Counts one event of a recycling statistic.
    #[inline]
    pub fn recycle_stat_inc(&self, stat: RecycleStat) {
        self.recycle_stat_add(stat, 1);
    }
}

/// The right to lock the producer side of the ring of a put call's pool:
/// one per call, and [`RingProducerLock::lock`] borrows it for as long as
/// the lock is held, so a hook cannot take the (non-recursive) lock twice.
/// A refill is not given one: C's refill never takes the producer lock.
///
/// # Invariants
///
/// Exists only inside a put call of a hook (made by `Adapter`), once per call;
/// it cannot leave the call.
pub struct RingProducerLock<'a> {
    _p: PhantomData<(&'a PagePool, *mut ())>,
}

impl<'a> RingProducerLock<'a> {
    /// Locks the producer side of `pool`'s ring
    /// (`page_pool_producer_lock()`); unlocked when the guard drops.
    #[inline]
    pub fn lock<'r>(&'r mut self, pool: &'a PagePool) -> RingProducer<'r, 'a> {
        RingProducer {
            pool,
            // SAFETY: The pool is live (type invariant); no other guard of
            // this call holds its lock (`self` is borrowed by the one made
            // here), and no other call runs on this CPU inside the hook.
            in_softirq: unsafe { bindings::page_pool_producer_lock(pool.as_ptr()) },
            _lock: PhantomData,
        }
    }
}

/// The producer side of a pool's ring, locked; unlocked on drop.
pub struct RingProducer<'r, 'a> {
    pool: &'a PagePool,
    in_softirq: bool,
    _lock: PhantomData<&'r mut RingProducerLock<'a>>,
}

impl<'a> RingProducer<'_, 'a> {
    /// Queues `netmem` in the ring, or hands it back if the ring is full
    /// (`__ptr_ring_produce()`).
    #[inline]
    pub fn produce(&mut self, netmem: Recyclable<'a>) -> core::result::Result<(), Recyclable<'a>> {
        let raw = netmem.into_netmem().into_raw();
        // SAFETY: The pool is live and we hold its producer lock; the entry
        // is a page (not NULL, type invariant), which the ring owns once
        // queued.
        if unsafe { bindings::__ptr_ring_produce(self.pool.ring(), raw as *mut c_void) } == 0 {
            Ok(())
        } else {
            // INVARIANT: Not queued, the page is still ours and recyclable.
            Err(Recyclable(Netmem::owned(raw)))
        }
    }
}

impl Drop for RingProducer<'_, '_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `RingProducerLock::lock` locked it, and the flag says how.
        unsafe { bindings::page_pool_producer_unlock(self.pool.as_ptr(), self.in_softirq) };
    }
}

/// The consumer side of a pool: its alloc cache, the alloc statistics and
/// the consumer end of the ring.
///
/// # Invariants
///
/// Exists only inside a hook call made in the pool's consumer context
/// (the refill, or a put with direct recycling allowed), where nothing
/// else touches these; it cannot leave the call.
pub struct AllocCache<'a> {
    pool: &'a PagePool,
    _not_send: PhantomData<*mut ()>,
}

impl<'a> AllocCache<'a> {
    #[inline]
    fn alloc(&self) -> *mut bindings::pp_alloc_cache {
        // SAFETY: The pool is live; we only form the field's address.
        unsafe { core::ptr::addr_of_mut!((*self.pool.as_ptr()).alloc) }
    }

    /// Returns the number of pages in the alloc cache.
    #[inline]
    pub fn count(&self) -> usize {
        // SAFETY: The consumer context is ours (type invariant).
        unsafe { (*self.alloc()).count as usize }
    }

    /// Puts `netmem` in the alloc cache, or hands it back if full.
    #[inline]
    pub fn push(&mut self, netmem: Recyclable<'a>) -> core::result::Result<(), Recyclable<'a>> {
        let n = self.count();
        if n >= PP_ALLOC_CACHE_SIZE {
            return Err(netmem);
        }
        // SAFETY: The consumer context is ours (type invariant) and `n` is
        // within the array; the cache now owns the page.
        unsafe {
            (*self.alloc()).cache[n] = netmem.into_netmem().into_raw();
            (*self.alloc()).count = n as u32 + 1;
        }
        Ok(())
    }

    /// Takes the most recently cached page.
    #[inline]
    pub fn pop(&mut self) -> Option<Netmem<'a>> {
        let n = self.count().checked_sub(1)?;
        // SAFETY: The consumer context is ours (type invariant); entries
        // below `count` are pages the cache owns, which go to the caller.
        unsafe {
            (*self.alloc()).count = n as u32;
            Some(Netmem::owned((*self.alloc()).cache[n]))
        }
    }

    /// Returns `true` if the ring is empty (`__ptr_ring_empty()`).
    #[inline]
    pub fn ring_is_empty(&self) -> bool {
        // SAFETY: The pool is live and its consumer context ours (type
        // invariant).
        unsafe { bindings::__ptr_ring_empty(self.pool.ring()) }
    }

    /// Takes the oldest page of the ring (`__ptr_ring_consume()`).
    #[inline]
    pub fn ring_consume(&mut self) -> Option<Recyclable<'a>> {
        // SAFETY: The pool is live and its consumer context ours (type
        // invariant); the entry taken is the caller's now.
        let netmem =
            unsafe { bindings::__ptr_ring_consume(self.pool.ring()) } as bindings::netmem_ref;
        // INVARIANT: A non-zero entry is a page the ring owned, and only a
        // `Recyclable` goes into a ring.
        (netmem != 0).then(|| Recyclable(Netmem::owned(netmem)))
    }

    /// Counts one event of an allocation statistic.
    #[inline]
    pub fn alloc_stat_inc(&mut self, stat: AllocStat) {
        #[cfg(CONFIG_PAGE_POOL_STATS)]
        // SAFETY: The alloc statistics belong to the consumer context,
        // which is ours (type invariant).
        unsafe {
            let s = &mut (*self.pool.as_ptr()).alloc_stats;
            let c = match stat {
                AllocStat::Fast => &mut s.fast,
                AllocStat::Slow => &mut s.slow,
                AllocStat::SlowHighOrder => &mut s.slow_high_order,
                AllocStat::Empty => &mut s.empty,
                AllocStat::Refill => &mut s.refill,
                AllocStat::Waive => &mut s.waive,
            };
            *c += 1;
        }
        #[cfg(not(CONFIG_PAGE_POOL_STATS))]
        let _ = stat;
    }
}

/// The pages of one pool in a `page_pool_put_netmem_bulk()` call, whose
/// last pool reference that call dropped.
///
/// [`BulkPages::take_next`] yields them in order; [`BulkPages::keep`]
/// stores pages to recycle in the ring back into the array, which
/// [`BulkPages::drain_kept`] then yields. Nothing is lost if a hook stops
/// early: on drop, kept pages not drained and entries not taken are
/// released to the page allocator.
///
/// # Invariants
///
/// `data[..count]` are `netmem_ref`s of `pool` that we own; `data[drained..kept]`
/// hold pages kept for the ring, `drained <= kept <= next <= count`, and
/// `data[next..count]` are pages not taken yet.
pub struct BulkPages<'a> {
    pool: &'a PagePool,
    data: *mut bindings::netmem_ref,
    count: usize,
    next: usize,
    kept: usize,
    drained: usize,
    _p: PhantomData<&'a mut [bindings::netmem_ref]>,
}

impl<'a> BulkPages<'a> {
    /// Takes the next page.
    #[inline]
    pub fn take_next(&mut self) -> Option<Netmem<'a>> {
        if self.next == self.count {
            return None;
        }
        // SAFETY: `next < count`: a page not taken yet (type invariant).
        let netmem = unsafe { *self.data.add(self.next) };
        // INVARIANT: Taken once: `next` moves past it.
        self.next += 1;
        Some(Netmem::owned(netmem))
    }

    /// Keeps `netmem` for the ring, in a slot of the caller's array that
    /// [`BulkPages::take_next`] has consumed already; hands the page back
    /// if there is none (more pages kept than taken).
    #[inline]
    pub fn keep(&mut self, netmem: Recyclable<'a>) -> core::result::Result<(), Recyclable<'a>> {
        if self.kept >= self.next {
            return Err(netmem);
        }
        // SAFETY: `kept < next <= count` (checked above, type invariant): a
        // slot of the caller's array whose entry was consumed already.
        unsafe { *self.data.add(self.kept) = netmem.into_netmem().into_raw() };
        // INVARIANT: Still `kept <= next`.
        self.kept += 1;
        Ok(())
    }

    /// Returns the number of kept pages not drained yet.
    #[inline]
    pub fn kept(&self) -> usize {
        self.kept - self.drained
    }

    /// Takes the kept pages back, in order; those the iterator does not
    /// yield stay kept (and are released on drop).
    #[inline]
    pub fn drain_kept<'b>(&'b mut self) -> KeptPages<'b, 'a> {
        KeptPages(self)
    }
}

/// The kept pages of a [`BulkPages`], yielded in order by
/// [`BulkPages::drain_kept`].
pub struct KeptPages<'b, 'a>(&'b mut BulkPages<'a>);

impl<'a> Iterator for KeptPages<'_, 'a> {
    type Item = Recyclable<'a>;

    #[inline]
    fn next(&mut self) -> Option<Recyclable<'a>> {
        let pages = &mut *self.0;
        if pages.drained == pages.kept {
            return None;
        }
        // SAFETY: `drained < kept`: a `netmem_ref` we stored and own.
        let netmem = unsafe { *pages.data.add(pages.drained) };
        // INVARIANT: Yielded once: `drained` moves past it.
        pages.drained += 1;
        // INVARIANT: Only a `Recyclable` is kept.
        Some(Recyclable(Netmem::owned(netmem)))
    }
}

impl Drop for BulkPages<'_> {
    fn drop(&mut self) {
        let pool = self.pool;
        for netmem in self.drain_kept() {
            pool.return_page(netmem.into_netmem());
        }
        while let Some(netmem) = self.take_next() {
            pool.return_page(netmem);
        }
    }
}

/// The recycle and refill path of every page pool.
pub trait Hook: 'static {
    /// Refills the alloc cache from the ring and returns a page, or `None`
    /// to have the pool allocate one (`page_pool_refill_alloc_cache()`).
    /// Called with the alloc cache empty.
    fn refill_alloc_cache<'a>(pool: &'a PagePool, cache: AllocCache<'a>) -> Option<Netmem<'a>>;

    /// Recycles or releases `netmem`, whose last reference the pool's user
    /// dropped (`page_pool_put_unrefed_netmem()`). `cache` is given when
    /// direct recycling into the alloc cache is allowed; `ring` locks the
    /// ring's producer side.
    fn put_unrefed<'a>(
        pool: &'a PagePool,
        netmem: Netmem<'a>,
        dma_sync_size: u32,
        cache: Option<AllocCache<'a>>,
        ring: RingProducerLock<'a>,
    );

    /// Recycles or releases the pages of one pool of a batch
    /// (`page_pool_put_netmem_bulk()`). What the hook leaves in `pages` is
    /// released when it returns.
    fn put_bulk<'a>(
        pool: &'a PagePool,
        pages: &mut BulkPages<'a>,
        cache: Option<AllocCache<'a>>,
        ring: RingProducerLock<'a>,
    );
}

struct Adapter<T: Hook>(PhantomData<T>);

impl<T: Hook> Adapter<T> {
    fn cache(pool: &PagePool, allowed: bool) -> Option<AllocCache<'_>> {
        // INVARIANT: `allowed` is C's `allow_direct`: the consumer context.
        allowed.then_some(AllocCache {
            pool,
            _not_send: PhantomData,
        })
    }

    /// # Safety
    ///
    /// Called by the page_pool core on a live pool, in its consumer
    /// context, with the alloc cache empty.
    unsafe extern "C" fn refill_alloc_cache(
        pool: *mut bindings::page_pool,
    ) -> bindings::netmem_ref {
        // SAFETY: The pool is live for the call.
        let pool = unsafe { PagePool::from_raw(pool) };
        // INVARIANT: The refill runs in the consumer context.
        let cache = AllocCache {
            pool,
            _not_send: PhantomData,
        };
        T::refill_alloc_cache(pool, cache).map_or(0, Netmem::into_raw)
    }

    /// # Safety
    ///
    /// Called by `page_pool_put_unrefed_netmem()` on a live pool with a
    /// page whose last reference was dropped; `allow_direct` says whether
    /// the caller knows it runs in the consumer context.
    unsafe extern "C" fn put_unrefed(
        pool: *mut bindings::page_pool,
        netmem: bindings::netmem_ref,
        dma_sync_size: u32,
        allow_direct: bool,
    ) {
        // SAFETY: The pool is live for the call.
        let pool = unsafe { PagePool::from_raw(pool) };
        // As C: if the caller does not know, the pool's NAPI context decides.
        let allow_direct = allow_direct || pool.napi_local();
        // INVARIANT: The caller gave up its last reference: the page is
        // ours, of this pool, for this call.
        T::put_unrefed(
            pool,
            Netmem::owned(netmem),
            dma_sync_size,
            Self::cache(pool, allow_direct),
            // INVARIANT: One for this call.
            RingProducerLock { _p: PhantomData },
        );
    }

    /// Hands the `n` pages of `pool` in `bulk` to the hook.
    ///
    /// # Safety
    ///
    /// `bulk[..n]` are pages of `pool` whose last pool reference was
    /// dropped, which the caller gives up.
    #[inline(always)]
    unsafe fn put_pool_bulk(
        pool: &PagePool,
        bulk: &mut [bindings::netmem_ref; XDP_BULK_QUEUE_SIZE],
        n: usize,
        allow_direct: bool,
    ) {
        // INVARIANT: `bulk[..n]` are ours (safety requirement); nothing
        // taken or kept yet.
        let mut pages = BulkPages {
            pool,
            data: bulk.as_mut_ptr(),
            count: n.min(XDP_BULK_QUEUE_SIZE),
            next: 0,
            kept: 0,
            drained: 0,
            _p: PhantomData,
        };
        // INVARIANT: One ring lock for this call.
        let ring = RingProducerLock { _p: PhantomData };
        T::put_bulk(pool, &mut pages, Self::cache(pool, allow_direct), ring);
        // What the hook left is released here (`BulkPages::drop`), even if
        // the hook forgot its `&mut`.
        drop(pages);
    }

    /// # Safety
    ///
    /// Called by `page_pool_put_netmem_bulk()` with `count` netmems of page
    /// pools in `data`, on each of which the caller gives up a reference;
    /// we may overwrite `data`.
    unsafe extern "C" fn put_netmem_bulk(data: *mut bindings::netmem_ref, count: u32) {
        let count = count as usize;
        // As C: drop a reference on each, and keep at the front those whose
        // last reference that was.
        let mut bulk_len = 0;
        for i in 0..count {
            // SAFETY: `i < count`: an entry of the caller's array.
            let netmem = unsafe { *data.add(i) };
            // SAFETY: A netmem of a page pool, whose reference the caller
            // gives up; the helper drops it and tells whether it was the last.
            let netmem = unsafe { bindings::page_pool_bulk_unref(netmem) };
            if netmem != 0 {
                // SAFETY: `bulk_len <= i < count`.
                unsafe { *data.add(bulk_len) = netmem };
                bulk_len += 1;
            }
        }
        // As C: one pool at a time, that of the first entry left; the
        // entries of other pools move to the front, in order, for the next
        // round. C's array holds XDP_BULK_QUEUE_SIZE, what every caller
        // passes at most; more go to the hook in several calls.
        let mut count = bulk_len;
        let mut bulk = [0; XDP_BULK_QUEUE_SIZE];
        while count > 0 {
            // SAFETY: `0 < count`: an entry we own.
            let raw_pool = unsafe { bindings::netmem_get_pp(*data) };
            // SAFETY: The pool of a page in flight lives until the page is
            // returned to it.
            let pool = unsafe { PagePool::from_raw(raw_pool) };
            let allow_direct = pool.napi_local();
            let mut n = 0;
            let mut foreign = 0;
            for i in 0..count {
                // SAFETY: `i < count`: an entry we own.
                let netmem = unsafe { *data.add(i) };
                // SAFETY: As above.
                if unsafe { bindings::netmem_get_pp(netmem) } != raw_pool {
                    // SAFETY: `foreign <= i < count`.
                    unsafe { *data.add(foreign) = netmem };
                    foreign += 1;
                    continue;
                }
                bulk[n] = netmem;
                n += 1;
                if n == XDP_BULK_QUEUE_SIZE {
                    // SAFETY: `bulk[..n]` are pages of `pool` we own.
                    unsafe { Self::put_pool_bulk(pool, &mut bulk, n, allow_direct) };
                    n = 0;
                }
            }
            if n > 0 {
                // SAFETY: `bulk[..n]` are pages of `pool` we own.
                unsafe { Self::put_pool_bulk(pool, &mut bulk, n, allow_direct) };
            }
            count = foreign;
        }
    }
}

/// The table registered for `T`: a constant, promoted to a static of the
/// module, so it lives until the module is unloaded.
struct Ops<T: Hook>(PhantomData<T>);

impl<T: Hook> Ops<T> {
    const OPS: bindings::page_pool_hook_ops = bindings::page_pool_hook_ops {
        refill_alloc_cache: Some(Adapter::<T>::refill_alloc_cache),
        put_unrefed: Some(Adapter::<T>::put_unrefed),
        put_netmem_bulk: Some(Adapter::<T>::put_netmem_bulk),
    };
}

/// A registered [`Hook`]: every page pool recycles through `T` until this
/// is dropped, which switches back to the C path and waits until no CPU and
/// no task runs a hook: every hook call runs inside an RCU read-side critical
/// section, which `synchronize_rcu()` waits out.
///
/// # Invariants
///
/// `ops` is the table registered with `page_pool_hook_register()`.
pub struct Registration<T: Hook> {
    ops: &'static bindings::page_pool_hook_ops,
    _p: PhantomData<T>,
}

// SAFETY: The registration holds a pointer to an immutable static table;
// unregistering may happen on any thread.
unsafe impl<T: Hook> Send for Registration<T> {}
// SAFETY: `&Registration` allows nothing.
unsafe impl<T: Hook> Sync for Registration<T> {}

impl<T: Hook> crate::registration::Register for Registration<T> {
    type Args = ();

    /// Registers `T`; `EBUSY` if another hook is registered.
    #[inline]
    unsafe fn register((): ()) -> Result<Self> {
        let ops: &'static bindings::page_pool_hook_ops = &Ops::<T>::OPS;
        // SAFETY: `ops` is a static table of functions of the calling
        // module, valid until `drop` unregisters it, which our caller
        // promises happens before the module is unloaded.
        to_result(unsafe { bindings::page_pool_hook_register(ops) })?;
        // INVARIANT: Registered above.
        Ok(Self {
            ops,
            _p: PhantomData,
        })
    }
}

impl<T: Hook> Drop for Registration<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant). This switches every pool back
        // to C and returns once no hook runs; pages stay with their pools.
        unsafe { bindings::page_pool_hook_unregister(self.ops) };
    }
}
