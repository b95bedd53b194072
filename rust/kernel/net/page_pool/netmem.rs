// SPDX-License-Identifier: GPL-2.0

//! The pages a hook holds: [`Netmem`] and [`Recyclable`].

use super::PagePool;
use crate::{
    bindings,
    sync::atomic::{Atomic, Relaxed},
};
use core::marker::PhantomData;

/// Bit of `page->lru.next` (`pp_magic` for pool pages) that marks a
/// pfmemalloc page (`page_is_pfmemalloc()`).
const PFMEMALLOC_BIT: crate::ffi::c_ulong = 1 << 1;

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
pub struct Netmem<'p>(pub(super) bindings::netmem_ref, PhantomData<&'p PagePool>);

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
    pub(super) fn owned(raw: bindings::netmem_ref) -> Self {
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
    pub(super) fn into_raw(self) -> bindings::netmem_ref {
        core::mem::ManuallyDrop::new(self).0
    }
}

/// A [`Netmem`] checked to be recyclable ([`Netmem::into_recyclable`]), or
/// taken from a ring, where only such pages go.
///
/// # Invariants
///
/// The page is a `net_iov`, or the pool holds its only reference and it is
/// not pfmemalloc.
#[must_use = "a page left unrecycled is released on drop"]
pub struct Recyclable<'p>(pub(super) Netmem<'p>);

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
