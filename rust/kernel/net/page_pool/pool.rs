// SPDX-License-Identifier: GPL-2.0

//! A page pool as its hooks see it: the pool, the producer side of its ring and its alloc cache.

use super::{
    numa_mem_id, pref_nid, AllocStat, Netmem, Recyclable, RecycleStat, PP_ALLOC_CACHE_SIZE,
};
use crate::{bindings, ffi::c_void, types::Opaque};
use core::{marker::PhantomData, ptr};

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
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::page_pool) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    pub(super) fn as_ptr(&self) -> *mut bindings::page_pool {
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
    pub(super) fn napi_local(&self) -> bool {
        // SAFETY: The pool is live (type invariant).
        unsafe { bindings::page_pool_napi_local(self.as_ptr()) }
    }

    /// The pool's ptr_ring; producer and consumer ends are guarded by
    /// [`RingProducer`] and [`AllocCache`].
    #[inline]
    pub(super) fn ring(&self) -> *mut bindings::ptr_ring {
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
    pub(super) _p: PhantomData<(&'a PagePool, *mut ())>,
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
    pub(super) pool: &'a PagePool,
    pub(super) _not_send: PhantomData<*mut ()>,
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
