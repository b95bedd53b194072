// SPDX-License-Identifier: GPL-2.0

//! A growable array in fixed chunks of at most half a page.
//!
//! [`ChunkVec`] holds a qdisc's per-flow arrays (a
//! [`FlowTable`](crate::flow_table::FlowTable)'s heap of throttled flows
//! and the heads of its chains): it grows from atomic context
//! (enqueue) without a high-order allocation and without moving what it
//! holds.

use crate::{
    alloc::{Flags, KBox},
    page::PAGE_SIZE,
    prelude::*,
};
use core::{mem::size_of, ptr};

/// The largest allocation a [`ChunkVec`] makes: half a page. A slab
/// object of a whole page needs order-1 slabs where the kernel adds a
/// redzone and metadata to each object (KASAN, `slub_debug`), and an
/// order-1 allocation in atomic context is what the array exists to avoid;
/// half a page with those additions still fits an order-0 slab.
pub const CHUNKVEC_MAX_BYTES: usize = PAGE_SIZE / 2;

/// Chunk pointers in one leaf of a [`ChunkVec`]'s table: half a page of
/// them.
pub const CHUNKVEC_LEAF: usize = CHUNKVEC_MAX_BYTES / size_of::<usize>();

/// A growable array of `T` in chunks of `N` elements, for per-flow arrays
/// of a qdisc. Growing it, even in atomic context (enqueue), allocates one chunk
/// and, for every [`CHUNKVEC_LEAF`]th chunk, one leaf of the table: neither
/// is larger than [`CHUNKVEC_MAX_BYTES`], so no push needs a high-order
/// allocation, not even on a debugging kernel, and no push moves or copies
/// an element. The table has two levels: `L` leaf pointers inside the array
/// itself, each leaf half a page of chunk pointers, so an element costs as
/// many dependent loads as through a one-level table on the heap. It holds
/// at most [`Self::MAX_LEN`] elements.
///
/// A chunk in the middle can be taken out ([`Self::take_chunk`]) to give
/// its memory back while later chunks stay, and put back later
/// ([`Self::put_chunk`]); its indices stay reserved meanwhile, and
/// reaching one of its elements panics, as an index past the end does.
///
/// # Invariants
///
/// `N` is a power of two, `[T; N]` fits in [`CHUNKVEC_MAX_BYTES`], `L >= 1`
/// and `chunks <= L * CHUNKVEC_LEAF`. For `k < L`, `top[k]` is null unless
/// `k * CHUNKVEC_LEAF < chunks`, and then came from
/// `KBox::<[*mut T; CHUNKVEC_LEAF]>::into_raw()` of a leaf this array owns.
/// For each chunk `c < chunks`, entry `c % CHUNKVEC_LEAF` of leaf
/// `c / CHUNKVEC_LEAF` is null (the chunk was taken) or `p.wrapping_sub(c *
/// N)` for a pointer `p` from `KBox::<[T; N]>::into_raw()` of a chunk this
/// array owns, whose element `j` is element `c * N + j` of the array: the
/// entry plus an element's index is the element's address.
///
/// # Examples
///
/// Elements keep their index and their address as the array grows; the
/// elements of a chunk are adjacent.
///
/// ```
/// use kernel::alloc::{flags::GFP_KERNEL, KBox};
/// use kernel::chunk_vec::ChunkVec;
///
/// let mut v = ChunkVec::<usize, 4, 2>::new();
/// assert!(v.is_empty());
/// for c in 0..5 {
///     v.push_chunk(KBox::new(core::array::from_fn(|j| c * 4 + j), GFP_KERNEL)?, GFP_KERNEL)?;
///     assert_eq!(v.len(), (c + 1) * 4);
/// }
/// assert!(!v.is_empty() && !v.is_full());
/// assert!((0..20).all(|i| *v.get(i) == i));
/// let adjacent = |i: usize| {
///     let (a, b) = (v.get(i) as *const usize, v.get(i + 1) as *const usize);
///     b as usize - a as usize == core::mem::size_of::<usize>()
/// };
/// assert!((0..19).filter(|i| (i + 1) % 4 != 0).all(adjacent));
///
/// // A push moves no element, and the new chunk holds the next indices.
/// let before = v.get(19) as *const usize;
/// v.push_chunk(KBox::new(core::array::from_fn(|j| 20 + j), GFP_KERNEL)?, GFP_KERNEL)?;
/// assert!(core::ptr::eq(before, v.get(19)));
/// assert!((0..24).all(|i| *v.get(i) == i));
///
/// // get_mut() writes its element only.
/// for i in (0..24).step_by(3) {
///     *v.get_mut(i) += 1000;
/// }
/// assert!((0..24).all(|i| *v.get(i) == if i % 3 == 0 { i + 1000 } else { i }));
/// # Ok::<(), Error>(())
/// ```
///
/// A chunk taken from the middle gives its memory back; the others keep
/// their indices, and it can be put back in its place only.
///
/// ```
/// use kernel::alloc::{flags::GFP_KERNEL, KBox};
/// use kernel::chunk_vec::ChunkVec;
///
/// let mut v = ChunkVec::<usize, 4, 1>::new();
/// for c in 0..4 {
///     v.push_chunk(KBox::new(core::array::from_fn(|j| c * 4 + j), GFP_KERNEL)?, GFP_KERNEL)?;
/// }
/// let taken = v.take_chunk(2).expect("chunk 2 is there");
/// assert_eq!(taken[0], 8);
/// assert!(!v.has_chunk(2) && v.has_chunk(1) && v.has_chunk(3));
/// assert_eq!(v.len(), 16);
/// assert!((0..16).filter(|i| i / 4 != 2).all(|i| *v.get(i) == i));
/// // A taken or absent chunk cannot be taken; a present one is not replaced.
/// assert!(v.take_chunk(2).is_none() && v.take_chunk(4).is_none());
/// let other = KBox::new([100; 4], GFP_KERNEL)?;
/// assert!(matches!(v.put_chunk(1, other), Err(c) if c[0] == 100));
/// assert_eq!(*v.get(7), 7);
/// // Put back, its elements have their indices again.
/// assert!(v.put_chunk(2, taken).is_ok());
/// assert!(v.has_chunk(2) && (0..16).all(|i| *v.get(i) == i));
/// # Ok::<(), Error>(())
/// ```
///
/// Every element is dropped exactly once: with its chunk, or with the
/// array.
///
/// ```
/// use kernel::sync::atomic::{Atomic, Relaxed};
/// use kernel::alloc::{flags::GFP_KERNEL, KBox};
/// use kernel::chunk_vec::ChunkVec;
///
/// static DROPPED: Atomic<usize> = Atomic::new(0);
/// struct Elem(#[allow(dead_code)] u8);
/// impl Drop for Elem {
///     fn drop(&mut self) {
///         DROPPED.add(1, Relaxed);
///     }
/// }
/// let dropped = || DROPPED.load(Relaxed);
///
/// drop(ChunkVec::<Elem, 8, 1>::new());
/// assert_eq!(dropped(), 0);
/// let mut v = ChunkVec::<Elem, 8, 1>::new();
/// for _ in 0..6 {
///     v.push_chunk(KBox::new(core::array::from_fn(|_| Elem(0)), GFP_KERNEL)?, GFP_KERNEL)?;
/// }
/// drop(v.take_chunk(3));
/// assert_eq!(dropped(), 8);
/// drop(v);
/// assert_eq!(dropped(), 48);
///
/// // A refused push drops the chunk it was given.
/// let mut w = ChunkVec::<Elem, 1, 1>::new();
/// while !w.is_full() {
///     w.push_chunk(KBox::new([Elem(0)], GFP_KERNEL)?, GFP_KERNEL)?;
/// }
/// assert!(w.push_chunk(KBox::new([Elem(1)], GFP_KERNEL)?, GFP_KERNEL).is_err());
/// assert_eq!(dropped(), 49);
/// drop(w);
/// assert_eq!(dropped(), 49 + ChunkVec::<Elem, 1, 1>::MAX_LEN);
/// # Ok::<(), Error>(())
/// ```
///
/// Full at [`Self::MAX_LEN`], across leaves of the table: a push past it
/// fails and drops its chunk, and leaves the array as it was; pops return
/// the last chunks in turn (the second leaf is freed) and pushes fill the
/// array again.
///
/// ```
/// use kernel::alloc::{flags::GFP_KERNEL, KBox};
/// use kernel::chunk_vec::{ChunkVec, CHUNKVEC_LEAF};
///
/// type V = ChunkVec<usize, 1, 2>;
/// let max = V::MAX_LEN;
/// assert_eq!(max, 2 * CHUNKVEC_LEAF);
/// let mut v = V::new();
/// for i in 0..max {
///     assert!(!v.is_full());
///     v.push_chunk(KBox::new([i], GFP_KERNEL)?, GFP_KERNEL)?;
/// }
/// assert!(v.is_full() && v.len() == max && (0..max).all(|i| *v.get(i) == i));
/// let more = v.push_chunk(KBox::new([max], GFP_KERNEL)?, GFP_KERNEL);
/// assert!(matches!(more, Err(e) if e == ENOMEM));
/// assert!(v.len() == max && (0..max).all(|i| *v.get(i) == i));
///
/// let keep = CHUNKVEC_LEAF - 1;
/// for i in (keep..max).rev() {
///     assert!(matches!(v.pop_chunk(), Some(c) if c[0] == i));
///     assert_eq!(v.len(), i);
/// }
/// for i in keep..max {
///     v.push_chunk(KBox::new([i], GFP_KERNEL)?, GFP_KERNEL)?;
/// }
/// assert!(v.is_full() && (0..max).all(|i| *v.get(i) == i));
/// while v.pop_chunk().is_some() {}
/// assert!(v.is_empty() && v.pop_chunk().is_none());
/// # Ok::<(), Error>(())
/// ```
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
            && size_of::<[T; N]>() <= CHUNKVEC_MAX_BYTES
            && L >= 1
            && match L.checked_mul(CHUNKVEC_LEAF) {
                Some(c) => c.checked_mul(N).is_some(),
                None => false,
            },
        "ChunkVec: N a power of two, a chunk at most half a page, at least one leaf, \
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
            let leaf = KBox::init(pin_init::zeroed::<[*mut T; CHUNKVEC_LEAF]>(), flags)?;
            self.top[k] = KBox::into_raw(leaf).cast::<*mut T>();
        }
        let entry = Self::entry_of(c, chunk).map_err(|_| ENOMEM)?;
        // SAFETY: Leaf `k` exists (made above, or for an earlier chunk:
        // `k * LEAF < chunks`), is ours, and `e < LEAF` is inside it.
        // INVARIANT: the entry of chunk `c` names the chunk, now ours.
        unsafe { self.slot(c).write(entry) };
        self.chunks = c + 1;
        Ok(())
    }

    /// Removes the last chunk and returns it (its elements had indices
    /// `len() - N..len()`), freeing its leaf of the table if it was the
    /// leaf's first; `None` if the array is empty or the last chunk was
    /// taken (its indices are gone all the same). It allocates nothing.
    pub fn pop_chunk(&mut self) -> Option<KBox<[T; N]>> {
        let c = self.chunks.checked_sub(1)?;
        let chunk = self.take_chunk(c);
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
        chunk
    }

    /// Returns `true` if chunk `c` (indices `c * N..(c + 1) * N`) is in
    /// the array: `c < len() / N` and it was not taken.
    #[inline]
    pub fn has_chunk(&self, c: usize) -> bool {
        // SAFETY: `c < chunks`, checked first.
        c < self.chunks && !unsafe { self.slot(c).read() }.is_null()
    }

    /// Takes chunk `c` out of the array and returns it; its indices stay
    /// reserved, and reaching its elements panics until
    /// [`Self::put_chunk`]. `None` if `c >= len() / N` or it was taken
    /// already. It allocates nothing.
    pub fn take_chunk(&mut self, c: usize) -> Option<KBox<[T; N]>> {
        if !self.has_chunk(c) {
            return None;
        }
        // SAFETY: `c < chunks` (`has_chunk()`), so the slot exists.
        // INVARIANT: the entry becomes null as the chunk leaves.
        let entry = unsafe { self.slot(c).replace(ptr::null_mut()) };
        let p = entry.wrapping_add(c * N);
        // SAFETY: The entry was non-null (`has_chunk()`), so `p` is the
        // pointer `KBox::into_raw()` gave for a chunk we own (invariant);
        // it is no longer in the table, so it is handed over once.
        Some(unsafe { KBox::from_raw(p.cast::<[T; N]>()) })
    }

    /// Puts `chunk` in the place of chunk `c`, taken earlier: its elements
    /// get indices `c * N..(c + 1) * N`. Gives `chunk` back if `c` is not
    /// a taken chunk of the array, or if the chunk's address is `c * N`
    /// elements (an address no allocator gives). It allocates nothing.
    pub fn put_chunk(
        &mut self,
        c: usize,
        chunk: KBox<[T; N]>,
    ) -> core::result::Result<(), KBox<[T; N]>> {
        if c >= self.chunks || self.has_chunk(c) {
            return Err(chunk);
        }
        let entry = Self::entry_of(c, chunk)?;
        // SAFETY: `c < chunks`, checked above, so the slot exists.
        // INVARIANT: its entry was null; it now names the chunk, ours.
        unsafe { self.slot(c).write(entry) };
        Ok(())
    }

    /// The table entry of `chunk` as chunk `c`: its address less `c * N`
    /// elements, so that adding an element's index gives the element. The
    /// chunk is given back if that entry is null (an absent chunk's).
    #[inline]
    fn entry_of(c: usize, chunk: KBox<[T; N]>) -> core::result::Result<*mut T, KBox<[T; N]>> {
        let p = KBox::into_raw(chunk).cast::<T>();
        let entry = p.wrapping_sub(c * N);
        if entry.is_null() {
            // SAFETY: `p` came from `KBox::into_raw()` just above.
            return Err(unsafe { KBox::from_raw(p.cast::<[T; N]>()) });
        }
        Ok(entry)
    }

    /// The table slot of chunk `c`.
    ///
    /// # Safety
    ///
    /// `c < self.chunks`, or `c == self.chunks < L * CHUNKVEC_LEAF` with
    /// leaf `c / CHUNKVEC_LEAF` made.
    #[inline]
    unsafe fn slot(&self, c: usize) -> *mut *mut T {
        // SAFETY: `c < L * LEAF` either way (caller, invariant), so
        // `c / LEAF < L`; that leaf exists (invariant: `c / LEAF * LEAF <
        // chunks`, or made, says the caller), of `LEAF` entries,
        // `c % LEAF` among them.
        unsafe {
            self.top
                .get_unchecked(c / CHUNKVEC_LEAF)
                .add(c % CHUNKVEC_LEAF)
        }
    }

    /// The address of element `i`; panics if `i >= len()` or its chunk was
    /// taken, as indexing a slice past its end does.
    #[inline]
    fn ptr(&self, i: usize) -> *mut T {
        let c = i / N;
        assert!(c < self.chunks, "ChunkVec index out of bounds");
        // SAFETY: `c < chunks`, checked above.
        let entry = unsafe { self.slot(c).read() };
        assert!(!entry.is_null(), "ChunkVec index in a taken chunk");
        // Element `i` of chunk `c` (invariant): `i - c * N < N`, so the
        // result is in the chunk.
        entry.wrapping_add(i)
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
            drop(self.take_chunk(c));
        }
        for &leaf in self.top.iter().filter(|l| !l.is_null()) {
            // SAFETY: A non-null leaf came from `KBox::into_raw()` of a
            // leaf we own (type invariant); freed once, here, after the
            // chunks it named.
            drop(unsafe { KBox::from_raw(leaf.cast::<[*mut T; CHUNKVEC_LEAF]>()) });
        }
    }
}
