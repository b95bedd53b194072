// SPDX-License-Identifier: GPL-2.0

//! Queues of owned skbs: a FIFO ([`SkbQueue`]) and a queue in departure
//! time order ([`SkbTimeQueue`]).

use super::SkBuff;
use crate::bindings;
use core::{marker::PhantomData, ptr::NonNull};

/// An owner of one skb reference that an [`SkbQueue`] can hold: [`SkBuff`],
/// or a wrapper that stands for more (a qdisc's counted
/// [`Queued`](crate::net::sched::Queued)).
///
/// # Safety
///
/// A value owns one skb as [`SkBuff`] does (a valid `sk_buff`, its
/// metadata, `next` included, used by nobody else); `into_raw` gives up
/// that ownership without freeing the skb, and `from_raw` of the pointer
/// makes the same value again.
pub unsafe trait OwnedSkb {
    /// Gives up ownership: the caller becomes responsible for the reference.
    fn into_raw(self) -> NonNull<bindings::sk_buff>;

    /// Takes ownership of `ptr` back.
    ///
    /// # Safety
    ///
    /// `ptr` must come from [`OwnedSkb::into_raw`] of a value of this type,
    /// whose reference the caller hands over.
    unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self;
}

// SAFETY: `SkBuff::into_raw` and `SkBuff::from_raw` are that pair.
unsafe impl OwnedSkb for SkBuff {
    #[inline]
    fn into_raw(self) -> NonNull<bindings::sk_buff> {
        SkBuff::into_raw(self)
    }

    #[inline]
    unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // SAFETY: By the caller's promise.
        unsafe { SkBuff::from_raw(ptr) }
    }
}

/// Where a qdisc's reset and change put the skbs they drop: freed once
/// RTNL is released (`rtnl_kfree_skbs()`), as C's qdiscs free them, so
/// that however many packets a qdisc holds, the root lock and bottom
/// halves are held for its flows only, not for each packet's free.
///
/// Made only where the stack holds RTNL for `'a` (a qdisc's reset and
/// change); neither `Send` nor `Sync`, so it is used there only. Should
/// RTNL not be held after all (checked once, exactly with lockdep), it
/// warns once and frees at once instead: the list `rtnl_kfree_skbs()`
/// adds to is RTNL's.
///
/// # Invariants
///
/// If `deferred`, the current task holds RTNL for `'a`.
pub struct RtnlFree<'a> {
    deferred: bool,
    _p: PhantomData<(&'a mut (), *mut ())>,
}

impl RtnlFree<'_> {
    /// The frees of the caller's RTNL section.
    ///
    /// # Safety
    ///
    /// The caller is a callback the stack calls with RTNL held, and the
    /// value does not outlive it.
    #[inline]
    pub(crate) unsafe fn new() -> Self {
        // SAFETY: Reads the state of RTNL only.
        let held = unsafe { bindings::rtnl_held_for_free() };
        // INVARIANT: deferred only while RTNL is held (the caller's
        // promise, checked).
        Self {
            deferred: held,
            _p: PhantomData,
        }
    }

    /// Frees `skb` once RTNL is released.
    #[inline]
    pub fn free<S: OwnedSkb>(&mut self, skb: S) {
        let p = skb.into_raw().as_ptr();
        // SAFETY: `p` is ours, a chain of one.
        unsafe { self.free_chain(p, p) };
    }

    /// Frees the skbs from `head` to `tail`, linked by `next`, once RTNL
    /// is released.
    ///
    /// # Safety
    ///
    /// The caller owns every skb of the chain and gives them up; `tail`
    /// is reached from `head` through `next`.
    #[inline]
    unsafe fn free_chain(&mut self, head: *mut bindings::sk_buff, tail: *mut bindings::sk_buff) {
        if self.deferred {
            // SAFETY: RTNL is held (type invariant), which guards the
            // list; the chain is ours (caller) and the list takes it.
            unsafe { bindings::rtnl_kfree_skbs(head, tail) };
        } else {
            // SAFETY: As above; the chain ends at `tail` and is freed
            // here, as `rtnl_unlock()` would free it.
            unsafe {
                set_next(tail, core::ptr::null_mut());
                bindings::kfree_skb_list_reason(
                    head,
                    bindings::skb_drop_reason_SKB_DROP_REASON_NOT_SPECIFIED,
                );
            }
        }
    }
}

mod sealed {
    /// The count's operations, private to this module (nothing outside
    /// can name the trait, so nothing can implement it or call them).
    pub trait Sealed {
        /// No skbs; all zero bytes (`SkbQueue`'s `Zeroable` relies on it).
        const ZERO: Self;
        /// One skb more.
        fn inc(&mut self);
        /// One skb less.
        fn dec(&mut self);
    }

    impl Sealed for u32 {
        const ZERO: Self = 0;
        #[inline]
        fn inc(&mut self) {
            *self = self.wrapping_add(1);
        }
        #[inline]
        fn dec(&mut self) {
            *self = self.wrapping_sub(1);
        }
    }

    impl Sealed for () {
        const ZERO: Self = ();
        #[inline]
        fn inc(&mut self) {}
        #[inline]
        fn dec(&mut self) {}
    }
}
use sealed::Sealed;

/// What an [`SkbQueue`] keeps of its length: `u32` counts its skbs
/// ([`SkbQueue::len`]); `()` keeps no count, for a queue inside a
/// structure that counts its packets itself (a flow of `fq`), two
/// pointers and no padding.
pub trait QueueLen: Sealed + Copy {}

impl QueueLen for u32 {}
impl QueueLen for () {}

/// A FIFO of owned skbs (each an `S`) linked through `skb->next`: no
/// allocation to queue, as the C qdiscs do.
///
/// # Invariants
///
/// `head` owns the first skb (null when empty), each skb's `next` owns the
/// following one and, when the queue is not empty, `tail` points at the
/// last (emptied, it keeps a stale value, as C's queues do: it is read only
/// behind a non-null `head`); every `next` of the last skb is null. Every
/// skb came from [`OwnedSkb::into_raw`] of an `S`. With `L = u32`, `len` is
/// the number of skbs.
pub struct SkbQueue<S: OwnedSkb = SkBuff, L: QueueLen = u32> {
    head: *mut bindings::sk_buff,
    tail: *mut bindings::sk_buff,
    len: L,
    _p: PhantomData<S>,
}

const _: () =
    assert!(core::mem::size_of::<SkbQueue<SkBuff, ()>>() == 2 * core::mem::size_of::<*mut u8>());

// SAFETY: All zeroes is two null pointers and a length of 0 (`L::ZERO` is
// all zero bytes for both of the sealed trait's types): the empty queue,
// which satisfies the invariants. (Lets users zero-initialise arrays of
// structures that embed a queue, in place.)
unsafe impl<S: OwnedSkb, L: QueueLen> pin_init::Zeroable for SkbQueue<S, L> {}

// SAFETY: The queue owns its skbs, as a `KVec<S>` would.
unsafe impl<S: OwnedSkb + Send, L: QueueLen> Send for SkbQueue<S, L> {}

impl<S: OwnedSkb, L: QueueLen> Default for SkbQueue<S, L> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

/// Returns `skb->next` (the anonymous union of `struct sk_buff`).
///
/// # Safety
///
/// `skb` must be valid.
unsafe fn next_of(skb: *mut bindings::sk_buff) -> *mut bindings::sk_buff {
    // SAFETY: By the caller's promise; `next` is the list member.
    unsafe { (*skb).__bindgen_anon_1.__bindgen_anon_1.next }
}

/// Sets `skb->next`.
///
/// # Safety
///
/// `skb` must be valid and owned by the caller.
unsafe fn set_next(skb: *mut bindings::sk_buff, next: *mut bindings::sk_buff) {
    // SAFETY: By the caller's promise.
    unsafe { (*skb).__bindgen_anon_1.__bindgen_anon_1.next = next };
}

impl<S: OwnedSkb> SkbQueue<S> {
    /// Returns the number of skbs queued.
    #[inline]
    pub fn len(&self) -> u32 {
        self.len
    }
}

impl<S: OwnedSkb, L: QueueLen> SkbQueue<S, L> {
    /// An empty queue.
    #[inline]
    pub const fn new() -> Self {
        Self {
            head: core::ptr::null_mut(),
            tail: core::ptr::null_mut(),
            len: L::ZERO,
            _p: PhantomData,
        }
    }

    /// Returns `true` if nothing is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.head.is_null()
    }

    /// The first skb, or null; it stays the queue's.
    #[inline]
    fn head_ptr(&self) -> *mut bindings::sk_buff {
        self.head
    }

    /// Calls `f` with the last skb, if any.
    #[inline]
    pub fn with_back<R>(&self, f: impl FnOnce(&S) -> R) -> Option<R> {
        if self.head.is_null() {
            return None;
        }
        Self::with_skb(self.tail, f)
    }

    #[inline]
    fn with_skb<R>(p: *mut bindings::sk_buff, f: impl FnOnce(&S) -> R) -> Option<R> {
        let p = NonNull::new(p)?;
        // SAFETY: `p` is an skb the queue owns, from an `S` (type
        // invariant); the temporary `S` is never dropped, so ownership
        // stays with us.
        let skb = core::mem::ManuallyDrop::new(unsafe { S::from_raw(p) });
        Some(f(&skb))
    }

    /// Appends `skb`.
    #[inline]
    pub fn push_back(&mut self, skb: S) {
        let p = OwnedSkb::into_raw(skb).as_ptr();
        // SAFETY: `p` is now owned by the queue; `tail`, if any, is ours.
        unsafe {
            set_next(p, core::ptr::null_mut());
            if self.head.is_null() {
                self.head = p;
            } else {
                set_next(self.tail, p);
            }
        }
        self.tail = p;
        self.len.inc();
    }

    /// Inserts `skb` after every queued skb whose `key` is not greater
    /// than its own: a stable sorted insertion when the queue is sorted.
    #[inline]
    pub fn insert_sorted_by_key(&mut self, skb: S, key: impl Fn(&S) -> u64) {
        let k = key(&skb);
        let mut prev: *mut bindings::sk_buff = core::ptr::null_mut();
        let mut cur = self.head;
        while let Some(r) = Self::with_skb(cur, &key) {
            if r > k {
                break;
            }
            prev = cur;
            // SAFETY: `cur` is an skb of the queue.
            cur = unsafe { next_of(cur) };
        }
        let p = OwnedSkb::into_raw(skb).as_ptr();
        // SAFETY: `p` is now ours; `prev` and `cur` are skbs of the queue
        // (or null), adjacent, and we link `p` between them.
        unsafe {
            set_next(p, cur);
            if prev.is_null() {
                self.head = p;
            } else {
                set_next(prev, p);
            }
        }
        if cur.is_null() {
            self.tail = p;
        }
        self.len.inc();
    }

    /// Empties the queue into `free`, its skbs freed once RTNL is
    /// released: the whole chain at once, as C's `rtnl_kfree_skbs(head,
    /// tail)`.
    #[inline]
    pub fn free_all(&mut self, free: &mut RtnlFree<'_>) {
        if self.head.is_null() {
            return;
        }
        // SAFETY: The queue owns the chain from `head` to `tail` (type
        // invariant) and gives it up: it is empty after.
        unsafe { free.free_chain(self.head, self.tail) };
        self.head = core::ptr::null_mut();
        self.len = L::ZERO;
    }

    /// Removes and returns the first skb.
    #[inline]
    pub fn pop_front(&mut self) -> Option<S> {
        let p = NonNull::new(self.head)?;
        // SAFETY: `p` is the queue's first skb.
        Some(unsafe { self.unlink_head(p) })
    }

    /// Unlinks the first skb, `p`, and hands it over.
    ///
    /// # Safety
    ///
    /// `p` is the queue's first skb (`head`).
    #[inline]
    unsafe fn unlink_head(&mut self, p: NonNull<bindings::sk_buff>) -> S {
        // SAFETY: By the caller's promise `p` is our first skb: the queue
        // starts at its successor, and its ownership goes to the caller
        // with `next` cleared; `tail` is left as it is (type invariant).
        unsafe {
            self.head = next_of(p.as_ptr());
            set_next(p.as_ptr(), core::ptr::null_mut());
            self.len.dec();
            S::from_raw(p)
        }
    }
}

impl<S: OwnedSkb, L: QueueLen> Drop for SkbQueue<S, L> {
    #[inline]
    fn drop(&mut self) {
        while let Some(skb) = self.pop_front() {
            drop(skb);
        }
    }
}

/// The skb of an [`SkbTimeQueue`] to go next, as [`SkbTimeQueue::peek`]
/// found it (C's `fq_peek()`): its key, and [`Self::pop`] takes it out
/// without looking again, as `fq_dequeue()` erases the skb it peeked.
///
/// # Invariants
///
/// `skb` is `queue`'s next skb: its tree's first if `in_tree`, else its
/// FIFO's first. The handle borrows the queue, so that stays true.
pub struct TimeQueueFront<'a, S: OwnedSkb> {
    queue: &'a mut SkbTimeQueue<S>,
    skb: NonNull<bindings::sk_buff>,
    in_tree: bool,
    key: u64,
}

impl<S: OwnedSkb> TimeQueueFront<'_, S> {
    /// The skb's key.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }

    /// Removes and returns the skb (C's `fq_erase_head()`).
    #[inline]
    pub fn pop(self) -> S {
        // SAFETY: `skb` is the next skb of the part `in_tree` names (type
        // invariant).
        unsafe {
            if self.in_tree {
                self.queue.take_tree_skb(self.skb.as_ptr())
            } else {
                self.queue.list.unlink_head(self.skb)
            }
        }
    }
}

/// Offset of `rbnode` in `struct sk_buff`.
const RBNODE_OFFSET: usize = core::mem::offset_of!(bindings::sk_buff, __bindgen_anon_1.rbnode);

/// The skb whose `rbnode` is `node` (C's `rb_to_skb()`).
#[inline]
fn rb_to_skb(node: *mut bindings::rb_node) -> *mut bindings::sk_buff {
    node.wrapping_byte_sub(RBNODE_OFFSET).cast()
}

/// `&skb->rbnode`.
#[inline]
fn skb_rbnode(skb: *mut bindings::sk_buff) -> *mut bindings::rb_node {
    skb.wrapping_byte_add(RBNODE_OFFSET).cast()
}

/// A queue of owned skbs in the order of a `u64` key (a departure time),
/// held as C's sch_fq holds a flow's packets: a FIFO through `skb->next`
/// for the skbs that come in key order, O(1) each, and an rbtree through
/// `skb->rbnode` for those that come with a key below the FIFO's tail,
/// O(log n) each, however long the queue.
///
/// The key is read by the closure each operation is given. It must give
/// the same key for an skb as long as the skb is queued, or the order is
/// lost; memory safety does not depend on it.
///
/// # Invariants
///
/// `list` holds the FIFO part. `root` is an rbtree whose nodes are each
/// the `rbnode` of an skb that came from [`OwnedSkb::into_raw`] of an
/// `S` and is owned by this queue; `rbnode` overlays `next`, `prev` and
/// `dev`, and every skb in the tree had `skb->dev == dev` when it was
/// inserted.
pub struct SkbTimeQueue<S: OwnedSkb = SkBuff> {
    list: SkbQueue<S, ()>,
    root: bindings::rb_root,
    dev: *mut bindings::net_device,
}

// SAFETY: All zeroes is an empty FIFO and an empty tree (null root),
// which satisfies the invariants.
unsafe impl<S: OwnedSkb> pin_init::Zeroable for SkbTimeQueue<S> {}

// SAFETY: The queue owns its skbs, as a `KVec<S>` would; `dev` is a plain
// value put back into skbs, never dereferenced here.
unsafe impl<S: OwnedSkb + Send> Send for SkbTimeQueue<S> {}

impl<S: OwnedSkb> Default for SkbTimeQueue<S> {
    #[inline]
    fn default() -> Self {
        Self::new()
    }
}

impl<S: OwnedSkb> SkbTimeQueue<S> {
    /// An empty queue.
    #[inline]
    pub const fn new() -> Self {
        Self {
            list: SkbQueue::new(),
            root: bindings::rb_root {
                rb_node: core::ptr::null_mut(),
            },
            dev: core::ptr::null_mut(),
        }
    }

    /// Adds `skb` (C's `flow_queue_add()`): at the FIFO's tail if the FIFO
    /// is empty or `skb` does not sort before its tail, else into the tree.
    #[inline]
    pub fn push(&mut self, skb: S, key: impl Fn(&S) -> u64) {
        let k = key(&skb);
        match self.list.with_back(&key) {
            Some(tail) if k < tail => self.insert_tree(skb, k, key),
            _ => self.list.push_back(skb),
        }
    }

    /// The out-of-order part of [`Self::push`].
    #[inline(never)]
    fn insert_tree(&mut self, skb: S, k: u64, key: impl Fn(&S) -> u64) {
        let p = OwnedSkb::into_raw(skb).as_ptr();
        // SAFETY: `p` is ours, not yet in the tree: `dev` is still its own.
        let dev = unsafe { (*p).__bindgen_anon_1.__bindgen_anon_1.__bindgen_anon_1.dev };
        if !self.root.rb_node.is_null() && dev != self.dev {
            // The tree keeps one `dev` to put back; an skb of another
            // device (never one qdisc's case) is sorted into the FIFO.
            // SAFETY: `p` came from `into_raw()` of an `S` just above.
            let skb = unsafe { S::from_raw(NonNull::new_unchecked(p)) };
            self.list.insert_sorted_by_key(skb, key);
            return;
        }
        self.dev = dev;
        let mut parent: *mut bindings::rb_node = core::ptr::null_mut();
        let mut link: *mut *mut bindings::rb_node = &mut self.root.rb_node;
        // SAFETY: Every node reached from `root` is the `rbnode` of an skb
        // this queue owns (type invariant); `link` always points at a child
        // pointer of such a node or at `root.rb_node`. The new node gets
        // C's `rb_link_node()` (parent, no children) and is then balanced
        // in by `rb_insert_color()` on our root.
        unsafe {
            while !(*link).is_null() {
                parent = *link;
                let aux = Self::with_skb(rb_to_skb(parent), &key);
                link = if k >= aux {
                    &mut (*parent).rb_right
                } else {
                    &mut (*parent).rb_left
                };
            }
            let node = skb_rbnode(p);
            (*node).__rb_parent_color = parent as usize as crate::ffi::c_ulong;
            (*node).rb_left = core::ptr::null_mut();
            (*node).rb_right = core::ptr::null_mut();
            *link = node;
            bindings::rb_insert_color(node, &mut self.root);
        }
    }

    /// The key of the skb at `p`, which this queue owns.
    ///
    /// # Safety
    ///
    /// `p` is an skb of this queue.
    #[inline]
    unsafe fn with_skb(p: *mut bindings::sk_buff, key: impl Fn(&S) -> u64) -> u64 {
        // SAFETY: `p` is an skb the queue owns, from an `S` (caller, type
        // invariant); the temporary `S` is never dropped, so ownership
        // stays with us. `&S` reads no field `rbnode` overlays (see
        // [`SkBuff`]).
        let skb = core::mem::ManuallyDrop::new(unsafe { S::from_raw(NonNull::new_unchecked(p)) });
        key(&skb)
    }

    /// Empties the queue into `free`, its skbs freed once RTNL is
    /// released (C's `fq_flow_purge()`).
    pub fn free_all(&mut self, free: &mut RtnlFree<'_>) {
        loop {
            let t = self.tree_first();
            if t.is_null() {
                break;
            }
            // SAFETY: `t` is the first skb of our tree.
            free.free(unsafe { self.take_tree_skb(t) });
        }
        self.list.free_all(free);
    }

    /// The tree's first skb, or null.
    #[inline]
    fn tree_first(&self) -> *mut bindings::sk_buff {
        if self.root.rb_node.is_null() {
            return core::ptr::null_mut();
        }
        // SAFETY: `root` is a valid tree (type invariant).
        rb_to_skb(unsafe { bindings::rb_first(&self.root) })
    }

    /// The next skb (C's `fq_peek()`): the tree's first if its key is
    /// below the FIFO head's, else the FIFO head; and whether it is the
    /// tree's.
    #[inline]
    fn front(&self, key: &impl Fn(&S) -> u64) -> Option<(*mut bindings::sk_buff, bool)> {
        let head = self.list.head_ptr();
        let t = self.tree_first();
        if t.is_null() {
            return (!head.is_null()).then_some((head, false));
        }
        if head.is_null() {
            return Some((t, true));
        }
        // SAFETY: Both are skbs of this queue.
        let tree_first = unsafe { Self::with_skb(t, key) < Self::with_skb(head, key) };
        Some(if tree_first { (t, true) } else { (head, false) })
    }

    /// Removes and returns the skb to go next (C's `fq_erase_head()`).
    #[inline]
    pub fn pop_front(&mut self, key: impl Fn(&S) -> u64) -> Option<S> {
        Some(self.peek(key)?.pop())
    }

    /// The skb to go next (the smallest key; on a tie the FIFO's), with
    /// its key, to look at and then take ([`TimeQueueFront::pop`]) or
    /// leave (C's `fq_peek()`).
    #[inline]
    pub fn peek(&mut self, key: impl Fn(&S) -> u64) -> Option<TimeQueueFront<'_, S>> {
        let (p, in_tree) = self.front(&key)?;
        // SAFETY: `p` is an skb of this queue (`front()`).
        let k = unsafe { Self::with_skb(p, &key) };
        // INVARIANT: `front()` gives the next skb and the part it is in.
        Some(TimeQueueFront {
            // SAFETY: `front()` gives a non-null skb.
            skb: unsafe { NonNull::new_unchecked(p) },
            queue: self,
            in_tree,
            key: k,
        })
    }

    /// Unlinks `p` from the tree and returns it as an `S`.
    ///
    /// # Safety
    ///
    /// `p` is an skb in this queue's tree.
    #[inline]
    unsafe fn take_tree_skb(&mut self, p: *mut bindings::sk_buff) -> S {
        // SAFETY: By the caller's promise `p`'s `rbnode` is a node of
        // `root`. Once erased, the fields it overlaid are the skb's again:
        // `dev` gets the value it had (type invariant), `next` and `prev`
        // are cleared as `skb_mark_not_on_list()` would.
        unsafe {
            bindings::rb_erase(skb_rbnode(p), &mut self.root);
            let l = &mut (*p).__bindgen_anon_1.__bindgen_anon_1;
            l.next = core::ptr::null_mut();
            l.prev = core::ptr::null_mut();
            l.__bindgen_anon_1.dev = self.dev;
            S::from_raw(NonNull::new_unchecked(p))
        }
    }
}

impl<S: OwnedSkb> Drop for SkbTimeQueue<S> {
    fn drop(&mut self) {
        loop {
            let t = self.tree_first();
            if t.is_null() {
                break;
            }
            // SAFETY: `t` is the first skb of our tree.
            drop(unsafe { self.take_tree_skb(t) });
        }
        // The FIFO drops its own.
    }
}
