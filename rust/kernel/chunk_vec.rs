// SPDX-License-Identifier: GPL-2.0

//! A growable array in fixed chunks of at most a page.
//!
//! [`ChunkVec`] holds the flows of a qdisc: it grows from atomic context
//! (enqueue) without a high-order allocation and without moving what it
//! holds.

use crate::{
    alloc::{Flags, KBox},
    page::PAGE_SIZE,
    prelude::*,
};
use core::{mem::size_of, ptr};

/// Chunk pointers in one leaf of a [`ChunkVec`]'s table: a page of them.
pub const CHUNKVEC_LEAF: usize = PAGE_SIZE / size_of::<usize>();

/// A growable array of `T` in chunks of `N` elements, for the flows of a
/// qdisc. Growing it, even in atomic context (enqueue), allocates one chunk
/// and, for every [`CHUNKVEC_LEAF`]th chunk, one leaf of the table: neither
/// is larger than a page, so no push needs a high-order allocation, and no
/// push moves or copies an element. The table has two levels: `L` leaf
/// pointers inside the array itself, each leaf a page of chunk pointers, so
/// an element costs as many dependent loads as through a one-level table
/// on the heap. It holds at most [`Self::MAX_LEN`] elements.
///
/// # Invariants
///
/// `N` is a power of two, `[T; N]` fits in a page, `L >= 1` and
/// `chunks <= L * CHUNKVEC_LEAF`. For `k < L`, `top[k]` is null unless
/// `k * CHUNKVEC_LEAF < chunks`, and then came from
/// `KBox::<[*mut T; CHUNKVEC_LEAF]>::into_raw()` of a leaf this array owns.
/// For each chunk `c < chunks`, entry `c % CHUNKVEC_LEAF` of leaf
/// `c / CHUNKVEC_LEAF` is `p.wrapping_sub(c * N)`, where `p` came from
/// `KBox::<[T; N]>::into_raw()` of a chunk this array owns, so element `i`
/// is at that entry of chunk `i / N` `.wrapping_add(i)`, inside the chunk.
pub struct ChunkVec<T, const N: usize, const L: usize> {
    top: [*mut *mut T; L],
    chunks: usize,
}

// SAFETY: It owns its elements, as a `KVec<KBox<[T; N]>>` would.
unsafe impl<T: Send, const N: usize, const L: usize> Send for ChunkVec<T, N, L> {}

// SAFETY: A shared `ChunkVec` gives out shared references to elements only.
unsafe impl<T: Sync, const N: usize, const L: usize> Sync for ChunkVec<T, N, L> {}

impl<T, const N: usize, const L: usize> Default for ChunkVec<T, N, L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize, const L: usize> ChunkVec<T, N, L> {
    const SHAPE_OK: () = assert!(
        N.is_power_of_two()
            && size_of::<[T; N]>() <= PAGE_SIZE
            && L >= 1
            && match L.checked_mul(CHUNKVEC_LEAF) {
                Some(c) => c.checked_mul(N).is_some(),
                None => false,
            },
        "ChunkVec: N a power of two, a chunk at most a page, at least one leaf, \
         L * CHUNKVEC_LEAF * N in a usize"
    );

    /// The most elements the array can hold.
    pub const MAX_LEN: usize = L * CHUNKVEC_LEAF * N;

    /// Creates an empty array; it allocates nothing.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::SHAPE_OK;
        Self {
            top: [ptr::null_mut(); L],
            chunks: 0,
        }
    }

    /// Returns the number of elements, a multiple of `N`.
    #[inline]
    pub fn len(&self) -> usize {
        self.chunks * N
    }

    /// Returns `true` if the array has no chunk.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.chunks == 0
    }

    /// Returns `true` if the array holds [`Self::MAX_LEN`] elements: a
    /// push would fail.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.chunks == L * CHUNKVEC_LEAF
    }

    /// Appends `chunk`: its elements get indices `len()..len() + N`.
    /// Fails with `ENOMEM` (and drops `chunk`) if the array holds
    /// [`Self::MAX_LEN`] elements already or a new leaf cannot be had.
    pub fn push_chunk(&mut self, chunk: KBox<[T; N]>, flags: Flags) -> Result {
        if self.is_full() {
            return Err(ENOMEM);
        }
        let c = self.chunks;
        let (k, e) = (c / CHUNKVEC_LEAF, c % CHUNKVEC_LEAF);
        if e == 0 {
            // Leaf `k` is null (invariant: `k * LEAF == chunks`).
            let leaf = KBox::init(crate::init::zeroed::<[*mut T; CHUNKVEC_LEAF]>(), flags)?;
            self.top[k] = KBox::into_raw(leaf).cast::<*mut T>();
        }
        let p = KBox::into_raw(chunk).cast::<T>();
        // SAFETY: Leaf `k` exists (made above, or for an earlier chunk:
        // `k * LEAF < chunks`), is ours, and `e < LEAF` is inside it.
        unsafe { self.top[k].add(e).write(p.wrapping_sub(c * N)) };
        self.chunks = c + 1;
        Ok(())
    }

    /// Removes the last chunk and returns it (its elements had indices
    /// `len() - N..len()`), freeing its leaf of the table if it was the
    /// leaf's first; `None` if the array is empty. It allocates nothing.
    pub fn pop_chunk(&mut self) -> Option<KBox<[T; N]>> {
        let c = self.chunks.checked_sub(1)?;
        // SAFETY: `c < chunks`. By the type invariant, the entry plus
        // `c * N` is the pointer `KBox::into_raw()` gave for chunk `c`,
        // which we own; it leaves the array below, so it is handed over once.
        let chunk = unsafe { KBox::from_raw(self.entry(c).wrapping_add(c * N).cast::<[T; N]>()) };
        self.chunks = c;
        if c % CHUNKVEC_LEAF == 0 {
            let k = c / CHUNKVEC_LEAF;
            let leaf = core::mem::replace(&mut self.top[k], ptr::null_mut());
            // SAFETY: Leaf `k` held chunk `c` only, so it is non-null and
            // came from `KBox::into_raw()` of a leaf we own (invariant);
            // INVARIANT: it is freed once, here, and `top[k]` is null now
            // that `k * LEAF == chunks`.
            drop(unsafe { KBox::from_raw(leaf.cast::<[*mut T; CHUNKVEC_LEAF]>()) });
        }
        Some(chunk)
    }

    /// The table entry of chunk `c`.
    ///
    /// # Safety
    ///
    /// `c < self.chunks`.
    #[inline]
    unsafe fn entry(&self, c: usize) -> *mut T {
        // SAFETY: `c < chunks <= L * LEAF` (caller, invariant), so
        // `c / LEAF < L`, and leaf `c / LEAF` exists and holds entry
        // `c % LEAF` (invariant).
        unsafe {
            self.top
                .get_unchecked(c / CHUNKVEC_LEAF)
                .add(c % CHUNKVEC_LEAF)
                .read()
        }
    }

    /// The address of element `i`; panics if `i >= len()`, as indexing a
    /// slice does.
    #[inline]
    fn ptr(&self, i: usize) -> *mut T {
        let c = i / N;
        assert!(c < self.chunks, "ChunkVec index out of bounds");
        // SAFETY: `c < chunks`, checked above. By the invariant the result
        // is inside chunk `c`.
        unsafe { self.entry(c) }.wrapping_add(i)
    }

    /// Returns element `i`; panics if `i >= len()`.
    #[inline]
    pub fn get(&self, i: usize) -> &T {
        // SAFETY: `ptr()` is element `i` of a chunk we own (type
        // invariant), initialised, and `&self` keeps it shared.
        unsafe { &*self.ptr(i) }
    }

    /// Returns element `i` mutably; panics if `i >= len()`.
    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        // SAFETY: As for `get()`; `&mut self` makes the access exclusive.
        unsafe { &mut *self.ptr(i) }
    }
}

impl<T, const N: usize, const L: usize> Drop for ChunkVec<T, N, L> {
    fn drop(&mut self) {
        for c in 0..self.chunks {
            // SAFETY: `c < chunks`. By the type invariant, the entry plus
            // `c * N` is the pointer `KBox::into_raw()` gave for chunk `c`,
            // which we own and free once, here.
            drop(unsafe { KBox::from_raw(self.entry(c).wrapping_add(c * N).cast::<[T; N]>()) });
        }
        for &leaf in self.top.iter().filter(|l| !l.is_null()) {
            // SAFETY: A non-null leaf came from `KBox::into_raw()` of a
            // leaf we own (type invariant); freed once, here, after the
            // chunks it named.
            drop(unsafe { KBox::from_raw(leaf.cast::<[*mut T; CHUNKVEC_LEAF]>()) });
        }
    }
}
