// SPDX-License-Identifier: GPL-2.0

//! The pages of one pool in a bulk put.

use super::{Netmem, PagePool, Recyclable};
use crate::bindings;
use core::marker::PhantomData;

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
    pub(super) pool: &'a PagePool,
    pub(super) data: *mut bindings::netmem_ref,
    pub(super) count: usize,
    pub(super) next: usize,
    pub(super) kept: usize,
    pub(super) drained: usize,
    pub(super) _p: PhantomData<&'a mut [bindings::netmem_ref]>,
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
