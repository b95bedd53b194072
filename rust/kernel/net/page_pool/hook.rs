// SPDX-License-Identifier: GPL-2.0

//! The recycle and refill hook and its registration.

use super::{AllocCache, BulkPages, Netmem, PagePool, RingProducerLock};
use crate::{bindings, error::to_result, prelude::*};
use core::marker::PhantomData;

/// The most netmems C's `page_pool_put_netmem_bulk()` takes of one pool.
const XDP_BULK_QUEUE_SIZE: usize = bindings::XDP_BULK_QUEUE_SIZE as usize;

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
