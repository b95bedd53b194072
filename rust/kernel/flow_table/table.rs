// SPDX-License-Identifier: GPL-2.0

//! The flow table's lookup, collection, lists and rehash.

use super::{
    Chains, FlowItem, FlowMut, FlowTable, Front, Link, List, ListId, ListPair, Lookup, Node,
    PtrVec, Throttled, DETACHED, LISTED, PTR_CHUNK,
};
use crate::{
    alloc::{Flags, KBox},
    chunk_vec::{ChunkVec, CHUNKVEC_MAX_BYTES},
    context::AllocContext,
    prelude::*,
};
use core::{mem::size_of, ptr};

impl<T: FlowItem> FlowTable<T> {
    /// The most flows a table holds.
    pub const MAX_LEN: u32 = PtrVec::<T>::MAX_LEN as u32;

    /// The bytes of one flow's allocation.
    pub const NODE_SIZE: usize = size_of::<Node<T>>();

    const NODE_OK: () = assert!(
        size_of::<Node<T>>() <= CHUNKVEC_MAX_BYTES,
        "FlowTable: a flow with its links is at most half a page"
    );

    /// An empty table with `chains`, for up to [`Self::MAX_LEN`] flows.
    pub fn new(chains: Chains<T>) -> Self {
        Self::with_max_len(chains, Self::MAX_LEN)
    }

    /// An empty table with `chains`, for up to `max_len` flows (at most
    /// [`Self::MAX_LEN`]).
    pub fn with_max_len(chains: Chains<T>, max_len: u32) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::NODE_OK;
        Self {
            lists: core::array::from_fn(|_| List {
                first: ptr::null_mut(),
                last: ptr::null_mut(),
            }),
            chains,
            heap: ChunkVec::new(),
            heap_len: 0,
            seq: 0,
            len: 0,
            max_len: core::cmp::min(max_len, Self::MAX_LEN),
            sweep_at: 0,
        }
    }

    /// The most flows the table holds: [`Self::lookup`] makes no flow
    /// past it.
    #[inline]
    pub fn max_len(&self) -> u32 {
        self.max_len
    }

    /// The number of flows (C's `q->flows`).
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Returns `true` if the table holds no flow.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The number of throttled flows (C's `q->throttled_flows`).
    #[inline]
    pub fn throttled_len(&self) -> u32 {
        self.heap_len
    }

    /// The number of hash chains.
    pub fn chains(&self) -> usize {
        self.chains.len()
    }

    /// The number of chain heads allocated (a pointer each): the chains,
    /// and room for a few more.
    pub fn chain_heads(&self) -> usize {
        self.chains.base.len() + self.chains.ext.len()
    }

    /// Returns `true` if list `l` has no flow.
    #[inline]
    pub fn list_is_empty(&self, l: ListId) -> bool {
        self.lists[l.index()].first.is_null()
    }

    /// The first flow of list `l`, if any (C's `head->first`).
    #[inline]
    pub fn front(&mut self, l: ListId) -> Option<Front<'_, T>> {
        let node = self.lists[l.index()].first;
        if node.is_null() {
            return None;
        }
        // INVARIANT: `node` is list `l`'s first.
        Some(Front {
            table: self,
            node,
            list: l,
        })
    }

    /// The first flow of `p`'s new list, else of its old list, if any
    /// (C's `fq_pband_head_select()` of a band with credit).
    #[inline]
    pub fn front_of(&mut self, p: ListPair) -> Option<Front<'_, T>> {
        // The pair's two heads, side by side: the old list's is the new
        // one's neighbour, no second address to keep.
        let new = p.new_flows().index();
        let (node, i) = match &self.lists[new..][..2] {
            [a, _] if !a.first.is_null() => (a.first, 0),
            [_, b] if !b.first.is_null() => (b.first, 1),
            _ => return None,
        };
        // INVARIANT: `node` is the first of the non-empty list `new + i`.
        Some(Front {
            node,
            table: self,
            list: ListId::new(new + i),
        })
    }

    /// The [`FlowItem::deadline`] of the throttled flow due first, if any
    /// (C's `rb_first(&q->delayed)`'s `time_next_packet`).
    #[inline]
    pub fn first_deadline(&self) -> Option<u64> {
        if self.heap_len == 0 {
            return None;
        }
        let node = *self.heap.get(0);
        // SAFETY: `heap[0]` is a live node (type invariant); with `&self`
        // of the table, no `&mut` to its value exists (values are reached
        // mutably only through a handle holding the table's `&mut`).
        Some(unsafe { (*node).val.deadline() })
    }

    /// The throttled flow due first, if any.
    #[inline]
    pub fn first_throttled(&mut self) -> Option<Throttled<'_, T>> {
        if self.heap_len == 0 {
            return None;
        }
        let node = *self.heap.get(0);
        // INVARIANT: `node` is `heap[0]`.
        Some(Throttled { table: self, node })
    }

    /// Finds the flow of `key`, or makes it (detached, its value from
    /// `make`, its memory allocated as `ctx` allows), as C's
    /// `fq_classify()`.
    /// Detached flows met on `key`'s chain for which `stale` returns
    /// `true` are collected, at most `max_collect` of them; a lookup
    /// that meets none walks the chain once. Before a flow is made, the
    /// next [`Self::gc_sweep_chains`] chains are swept for such flows, as
    /// many as a search tree's walk would pass; and a new flow that would
    /// find the table full
    /// is made room for first: the next [`Self::SWEEP_CHAINS`] chains are
    /// swept too.
    #[inline]
    pub fn lookup(
        &mut self,
        key: usize,
        max_collect: usize,
        mut stale: impl FnMut(&T) -> bool,
        make: impl FnOnce() -> T,
        ctx: &impl AllocContext,
    ) -> Lookup<'_, T> {
        let gfp = ctx.gfp();
        let h = T::hash(key);
        let mut cur = *self.chains.head_of(h);
        let mut walked = true;
        while !cur.is_null() {
            // SAFETY: A chain holds live nodes only (type invariant), and
            // with the table's `&mut` no reference to one exists.
            let node = unsafe { &*cur };
            if node.key == key {
                return self.found(cur, 0);
            }
            if max_collect > 0 && node.state == DETACHED && stale(&node.val) {
                walked = false;
                break;
            }
            cur = node.hnext;
        }
        self.lookup_slow(key, h, max_collect, stale, make, gfp, walked)
    }

    /// What [`Self::lookup`] returns for `node`, found in its chain.
    #[inline]
    fn found(&mut self, node: *mut Node<T>, collected: u32) -> Lookup<'_, T> {
        Lookup {
            // INVARIANT: `node` is in a chain, so live.
            flow: Some(FlowMut { table: self, node }),
            created: false,
            collected,
            full: false,
        }
    }

    /// The rest of [`Self::lookup`] of `key`, whose hash is `h`: collect
    /// on the way (if `walked` is `false`), then make the flow.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn lookup_slow(
        &mut self,
        key: usize,
        h: usize,
        max_collect: usize,
        mut stale: impl FnMut(&T) -> bool,
        make: impl FnOnce() -> T,
        gfp: Flags,
        walked: bool,
    ) -> Lookup<'_, T> {
        let mut collected = 0;
        if !walked {
            let head: *mut *mut Node<T> = self.chains.head_of(h);
            // SAFETY: `head` is the head of one of this table's chains.
            let found =
                unsafe { self.collect(head, Some(key), max_collect, &mut stale, &mut collected) };
            if let Some(cur) = found {
                if collected > 0 {
                    self.shrink();
                }
                return self.found(cur, collected as u32);
            }
        }
        let gc = self.gc_sweep_chains();
        if gc > 0 {
            self.sweep(gc, max_collect, &mut stale, &mut collected);
        }
        if self.len >= self.max_len {
            self.sweep(Self::SWEEP_CHAINS, max_collect, &mut stale, &mut collected);
        }
        if collected > 0 {
            self.shrink();
        }
        let full = self.len >= self.max_len;
        let flow = if full {
            None
        } else {
            self.insert(key, h, make, gfp)
        };
        Lookup {
            created: flow.is_some(),
            flow,
            collected: collected as u32,
            full,
        }
    }

    /// Walks the chain at `head`: returns the node of `key` if it is
    /// there, collecting on the way (up to `max_collect` in all, counted
    /// in `collected`) detached flows for which `stale` returns `true`.
    ///
    /// # Safety
    ///
    /// `head` is the head of one of this table's chains.
    unsafe fn collect(
        &mut self,
        head: *mut *mut Node<T>,
        key: Option<usize>,
        max_collect: usize,
        stale: &mut impl FnMut(&T) -> bool,
        collected: &mut usize,
    ) -> Option<*mut Node<T>> {
        let mut link = head;
        loop {
            // SAFETY: `link` is a chain head of this table (the caller's
            // contract) or the `hnext` of a live node of the chain (set
            // below), and nothing else references it.
            let cur = unsafe { *link };
            if cur.is_null() {
                return None;
            }
            // SAFETY: A chain holds live nodes only (type invariant).
            let node = unsafe { &mut *cur };
            if Some(node.key) == key {
                return Some(cur);
            }
            if *collected < max_collect && node.state == DETACHED && stale(&node.val) {
                // SAFETY: As above; the node leaves its chain first.
                unsafe { *link = node.hnext };
                // SAFETY: The node is detached, so on no list and not in
                // the heap, and now in no chain: nothing names it.
                unsafe { self.free(cur) };
                *collected += 1;
            } else {
                link = &mut node.hnext;
            }
        }
    }

    /// The most chains a full table sweeps for idle flows before it
    /// refuses a new flow: a table full of busy flows costs a new flow's
    /// packet this many chains (about as many flows), not the whole
    /// table; each sweep starts where the last stopped, so that idle
    /// flows anywhere are found by the sweeps that follow.
    pub const SWEEP_CHAINS: usize = 64;

    /// The chains a lookup that makes a flow sweeps for idle flows:
    /// `log2(len / base + 1)`, `base` being the chains the table was made
    /// with. A table of `base` search trees (C's `fq_root` of
    /// `fq_trees_log` buckets) walks that many levels to a flow, passing
    /// as many flows that its gc may collect, on every lookup; a chain
    /// holds about one flow, and only a lookup that makes a flow sweeps.
    /// None while the trees would hold one flow each (at most `base`
    /// flows), 6 at 100 flows a tree.
    #[inline]
    pub fn gc_sweep_chains(&self) -> usize {
        let per_base = (self.len as usize) >> self.chains.base.len().trailing_zeros();
        (per_base + 1).ilog2() as usize
    }

    /// Collects idle flows (as [`Self::collect`]) on the next `chains`
    /// chains, from where the last sweep stopped.
    fn sweep(
        &mut self,
        chains: usize,
        max_collect: usize,
        stale: &mut impl FnMut(&T) -> bool,
        collected: &mut usize,
    ) {
        let n = self.chains.len();
        for _ in 0..core::cmp::min(chains, n) {
            if *collected >= max_collect {
                break;
            }
            // The chains may have been merged since the last sweep.
            let b = if self.sweep_at < n { self.sweep_at } else { 0 };
            self.sweep_at = b + 1;
            let head: *mut *mut Node<T> = self.chains.head(b);
            // SAFETY: `head` is the head of chain `b < n` of this table.
            unsafe { self.collect(head, None, max_collect, stale, collected) };
        }
    }

    /// Merges chains while there are more than two a flow, so that the
    /// chains' memory follows the flows as they are collected.
    fn shrink(&mut self) {
        // SAFETY: The chains hold live nodes of this table only (type
        // invariant).
        while self.chains.len() > 2 * self.len as usize && unsafe { self.chains.merge_one() } {}
    }

    /// Makes the flow of `key`, whose hash is `h`, which is not in the
    /// table, which holds fewer than `max_len` flows.
    fn insert(
        &mut self,
        key: usize,
        h: usize,
        make: impl FnOnce() -> T,
        gfp: Flags,
    ) -> Option<FlowMut<'_, T>> {
        // Heap room for the new flow, so that throttling never allocates.
        if self.heap.len() <= self.len as usize {
            let chunk = KBox::init(pin_init::zeroed::<[*mut Node<T>; PTR_CHUNK]>(), gfp).ok()?;
            self.heap.push_chunk(chunk, gfp).ok()?;
        }
        // Allocated first, so that the node is written in place; with
        // kmalloc, as C's `kmem_cache_alloc()`, not through krealloc.
        // SAFETY: Any size and flags may be asked for.
        let node = unsafe { bindings::kmalloc_flow(size_of::<Node<T>>(), gfp.as_raw()) };
        if node.is_null() {
            return None;
        }
        // Its size is a multiple of its alignment, so kmalloc aligns it:
        // at least to the largest power of two that divides the size.
        let node = node.cast::<Node<T>>();
        // SAFETY: `node` is a fresh allocation, large and aligned enough
        // for a `Node<T>` (above), ours.
        unsafe {
            node.write(Node {
                link: Link {
                    next: ptr::null_mut(),
                },
                hnext: ptr::null_mut(),
                key,
                heap_pos: 0,
                state: DETACHED,
                val: make(),
            })
        };
        self.len += 1;
        // One chain more per flow beyond one a chain; a chain is chosen
        // after the split.
        if self.len as usize > self.chains.len() {
            // SAFETY: The chains hold live nodes of this table only (type
            // invariant); the new node is in none yet.
            unsafe { self.chains.split_one(gfp) };
        }
        let head = self.chains.head_of(h);
        // SAFETY: `node` is ours, live, and referenced nowhere else.
        unsafe { (*node).hnext = *head };
        // INVARIANT: the node is in its chain, detached; heap room for it
        // was made above.
        *head = node;
        Some(FlowMut { table: self, node })
    }

    /// Frees `node`, and the heap room it no longer needs.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table that no chain, list, heap entry
    /// or reference names.
    unsafe fn free(&mut self, node: *mut Node<T>) {
        // SAFETY: `node` is live and nothing names it (caller): it is
        // dropped and freed once.
        unsafe { Self::drop_node(node) };
        self.len -= 1;
        // Less than two chunks of spare room (`heap_len <= len`).
        while self.heap.len() >= self.len as usize + 2 * PTR_CHUNK {
            drop(self.heap.pop_chunk());
        }
    }

    /// Drops the value of `node` and frees it.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table that nothing will name again.
    unsafe fn drop_node(node: *mut Node<T>) {
        // SAFETY: The node is live, so initialised, and ours to drop
        // (caller); it came from kmalloc (type invariant), and is freed
        // once.
        unsafe {
            ptr::drop_in_place(node);
            bindings::kfree(node.cast());
        }
    }

    /// Appends `node` to list `l`.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table on no list and not in the heap.
    #[inline]
    pub(super) unsafe fn push_tail(&mut self, node: *mut Node<T>, l: ListId) {
        // SAFETY: `node` is live (caller); we hold the table's `&mut` and
        // write a link field only, which no reference covers.
        unsafe { (*node).state = LISTED };
        // SAFETY: Live, on no list, and listed now.
        unsafe { self.link_tail(node, l) };
    }

    /// Appends `node`, listed but taken off its list, to the tail of `l`
    /// (its state stays [`LISTED`]).
    ///
    /// # Safety
    ///
    /// `node` is a live node of this table, on no list, not in the heap,
    /// whose state is [`LISTED`].
    #[inline]
    pub(super) unsafe fn link_tail(&mut self, node: *mut Node<T>, l: ListId) {
        // SAFETY: `node` is live (caller); we hold the table's `&mut` and
        // write a link field only, which no reference covers.
        unsafe { (*node).link.next = ptr::null_mut() };
        let list = &mut self.lists[l.index()];
        if list.first.is_null() {
            list.first = node;
        } else {
            // SAFETY: `last` of a non-empty list is a live node (type
            // invariant), not `node`, which was on no list.
            unsafe { (*list.last).link.next = node };
        }
        // INVARIANT: `node` is the new tail of `l`, and the state says so.
        list.last = node;
    }

    /// Moves the flows to `new` chains, freeing the detached ones for
    /// which `stale` returns `true` (C's `fq_rehash()`); returns the old
    /// chains, emptied, to be freed outside the qdisc's lock, and the
    /// number of flows freed. Then chains are split until there are as
    /// many as flows again, as far as allocating with `ctx` allows
    /// (atomic, under the lock).
    pub fn rehash(
        &mut self,
        new: Chains<T>,
        mut stale: impl FnMut(&T) -> bool,
        ctx: &impl AllocContext,
    ) -> (Chains<T>, u32) {
        let gfp = ctx.gfp();
        let mut old = core::mem::replace(&mut self.chains, new);
        let mut freed = 0;
        for b in 0..old.len() {
            let mut cur = core::mem::replace(old.head(b), ptr::null_mut());
            while !cur.is_null() {
                // SAFETY: `cur` was in an old chain, so live (type
                // invariant); no reference to it exists.
                let node = unsafe { &mut *cur };
                let next = node.hnext;
                if node.state == DETACHED && stale(&node.val) {
                    // SAFETY: Detached, and out of the old chains (their
                    // heads and links are not followed again).
                    unsafe { self.free(cur) };
                    freed += 1;
                } else {
                    let head = self.chains.head_of(T::hash(node.key));
                    node.hnext = *head;
                    *head = cur;
                }
                cur = next;
            }
        }
        // INVARIANT: every live node moved to the new chains; the old
        // ones are handed back empty.
        old.rewind();
        // SAFETY: The chains hold live nodes of this table only.
        while self.len as usize > self.chains.len() && unsafe { self.chains.split_one(gfp) } {}
        (old, freed)
    }

    /// Frees every flow (C's `fq_reset()`).
    pub fn clear(&mut self) {
        self.clear_with(|_| {});
    }

    /// Frees every flow, calling `f` on each one's value just before it
    /// is dropped (to hand what it holds elsewhere first, as `fq` hands
    /// its packets to [`RtnlFree`](crate::net::skbuff::RtnlFree)).
    pub fn clear_with(&mut self, mut f: impl FnMut(&mut T)) {
        for b in 0..self.chains.len() {
            let mut cur = core::mem::replace(self.chains.head(b), ptr::null_mut());
            while !cur.is_null() {
                // SAFETY: `cur` was in a chain, so live (type invariant).
                let next = unsafe { (*cur).hnext };
                // SAFETY: As above; with the table's `&mut` and the node
                // out of its chain, nothing else references its value.
                f(unsafe { &mut (*cur).val });
                // SAFETY: Each live node is in one chain, once, and the
                // chains, lists and heap are emptied here before any
                // other method runs: nothing will name it.
                unsafe { Self::drop_node(cur) };
                cur = next;
            }
        }
        // INVARIANT: no node is left; everything that named one is reset.
        self.chains.rewind();
        self.chains.ext = ChunkVec::new();
        for l in self.lists.iter_mut() {
            l.first = ptr::null_mut();
        }
        self.heap = ChunkVec::new();
        self.heap_len = 0;
        self.len = 0;
    }
}

impl<T: FlowItem> Drop for FlowTable<T> {
    fn drop(&mut self) {
        self.clear();
    }
}
