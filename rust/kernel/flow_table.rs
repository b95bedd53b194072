// SPDX-License-Identifier: GPL-2.0

//! The flows of a flow-queueing qdisc, linked by pointer.
//!
//! [`FlowTable`] owns the flows of a qdisc such as `fq` and every link
//! between them: the hash chains that find a flow by its key, the
//! round-robin lists a dequeue walks, and the min-heap of throttled flows.
//! Safe code reaches a flow only through a handle that holds the table's
//! only mutable borrow, and moves it between lists only through the
//! handle, so the table follows its links as C follows its pointers, with
//! no bounds or liveness check on the way.

use crate::{
    alloc::{Flags, KBox, KVVec},
    bindings,
    chunk_vec::{ChunkVec, CHUNKVEC_MAX_BYTES},
    context::AllocContext,
    prelude::*,
};
use core::{
    mem::size_of,
    ops::{Deref, DerefMut},
    ptr,
};

/// What a [`FlowTable`] needs to know of its flows.
///
/// Both functions only choose (a chain, an order in the heap): a wrong
/// answer makes chains longer or the heap's order wrong, never a memory
/// error.
pub trait FlowItem {
    /// The hash of a flow key; its low bits choose the chain, so that a
    /// chain's flows split by one more bit. It must be a function of the
    /// key: a key that hashes to another chain later is not found there,
    /// and a second flow is made for it.
    fn hash(key: usize) -> usize;

    /// When a throttled flow is due: the key of the throttled heap, read
    /// while the flow is throttled (changing it then misorders the heap).
    fn deadline(&self) -> u64;
}

/// The number of round-robin lists of a [`FlowTable`].
pub const FLOW_LISTS: usize = 8;

/// One of the [`FLOW_LISTS`] round-robin lists of a [`FlowTable`].
///
/// A word, not a byte: the data path computes list numbers from a band's
/// and turns them into addresses, and a word needs no widening for either.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListId(usize);

impl ListId {
    /// List `i % FLOW_LISTS`: any `i` names a list.
    #[inline]
    pub const fn new(i: usize) -> Self {
        Self(i % FLOW_LISTS)
    }

    /// The list's number, below [`FLOW_LISTS`].
    #[inline]
    pub const fn index(self) -> usize {
        self.0 % FLOW_LISTS
    }
}

/// Two lists that a flow-queueing scheduler serves as one, new flows
/// first (C's `new_flows` and `old_flows` of a band): lists `2 * i` and
/// `2 * i + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ListPair(usize);

impl ListPair {
    /// Pair `i % (FLOW_LISTS / 2)`: any `i` names a pair.
    #[inline]
    pub const fn new(i: usize) -> Self {
        Self(i % (FLOW_LISTS / 2))
    }

    /// The list served first.
    #[inline]
    pub const fn new_flows(self) -> ListId {
        ListId::new(2 * self.0)
    }

    /// The list served when the other is empty.
    #[inline]
    pub const fn old_flows(self) -> ListId {
        ListId::new(2 * self.0 + 1)
    }
}

/// Pointers per chunk of the throttled heap and of the chains added by
/// splits: 2 KiB, so that neither ever needs a high-order allocation.
const PTR_CHUNK: usize = 256;
/// Leaves of those arrays' tables: room for 16 * 256 * 256 pointers.
const PTR_LEAVES: usize = 16;
type PtrVec<T> = ChunkVec<*mut Node<T>, PTR_CHUNK, PTR_LEAVES>;

/// `Node::state` of a flow on no list and not throttled.
const DETACHED: u8 = u8::MAX;
/// `Node::state` of a flow in the throttled heap.
const THROTTLED: u8 = u8::MAX - 1;
const _: () = assert!(FLOW_LISTS < THROTTLED as usize);

/// A node's list link or, while it is throttled, its throttle order: a
/// throttled flow is on no list, so one word holds either, and `state`
/// says which (`seq` while it is [`THROTTLED`], `next` otherwise).
#[repr(C)]
union Link<T> {
    /// The next flow on the node's list; null at the tail; meaningless
    /// (never read) while the node is detached.
    next: *mut Node<T>,
    /// Throttle order: the heap's tie breaker.
    seq: u64,
}

/// A flow and its links; one allocation each, of 96 bytes for `fq`
/// (kmalloc-96, against C's 128-byte, cache-aligned `struct fq_flow`).
/// What a chain walk reads of the flows it passes (`state`, `key`,
/// `hnext`) is in the last 24 bytes, which lie in one cache line wherever
/// the slab puts a 96-byte object (at 0 or 32 bytes into a line, without
/// red zones or KASAN): a flow passed costs one line.
#[repr(C)]
struct Node<T> {
    link: Link<T>,
    val: T,
    /// Position in the heap while `state == THROTTLED`.
    heap_pos: u32,
    /// [`DETACHED`], [`THROTTLED`] or the list the node is on.
    state: u8,
    /// The flow's key, fixed when it is made.
    key: usize,
    /// The next flow in the node's hash chain; null at the end.
    hnext: *mut Node<T>,
}

/// A list's ends (C's `struct fq_flow_head`). `last` means something only
/// while `first` is not null.
struct List<T> {
    first: *mut Node<T>,
    last: *mut Node<T>,
}

/// The hash chains of a [`FlowTable`], a linear-hashing table: each flow
/// added beyond one per chain splits the next chain in turn in two, so a
/// chain holds about one flow at any number of flows. The first chains
/// are allocated in process context ([`Chains::new`]); the heads of the
/// chains added by splits come in 2 KiB chunks, and a split that cannot
/// have one is skipped (chains get longer, no flow is refused).
///
/// # Invariants
///
/// `base.len()` is a power of two, `mask + 1` is a multiple of it and
/// `split <= mask`; chain `b < mask + 1 + split` has its head at `base[b]`
/// or `ext[b - base.len()]`, within `ext.len()`. Outside a table, every
/// head is null.
pub struct Chains<T> {
    base: KVVec<*mut Node<T>>,
    ext: PtrVec<T>,
    mask: usize,
    split: usize,
}

// SAFETY: The heads name flows of the table that holds the chains, which
// it owns and which are sent with it; outside a table they are all null.
unsafe impl<T: Send> Send for Chains<T> {}

impl<T: FlowItem> Chains<T> {
    /// `2^log` empty chains, allocated as `ctx` allows; `EINVAL` if `log`
    /// is 32 or more.
    pub fn new(log: u8, ctx: &impl AllocContext) -> Result<Self> {
        let flags = ctx.gfp();
        if log >= 32 {
            return Err(EINVAL);
        }
        let n = 1usize << log;
        Ok(Self {
            base: KVVec::from_elem(ptr::null_mut(), n, flags)?,
            ext: ChunkVec::new(),
            mask: n - 1,
            split: 0,
        })
    }

    /// The number of chains.
    #[inline]
    fn len(&self) -> usize {
        self.mask + 1 + self.split
    }

    /// The head of the chain of flows whose key hashes to `h`.
    #[inline]
    fn head_of(&mut self, h: usize) -> &mut *mut Node<T> {
        let b = h & self.mask;
        // `b < mask + 1`; if `b < split`, `h & (2 * mask + 1)` is `b` or
        // `b + mask + 1 < mask + 1 + split`: a chain either way.
        let b = if b < self.split {
            h & (self.mask << 1 | 1)
        } else {
            b
        };
        self.head(b)
    }

    /// The head of chain `b`; panics if there is no such chain.
    #[inline]
    fn head(&mut self, b: usize) -> &mut *mut Node<T> {
        let n = self.base.len();
        if b < n {
            &mut self.base[b]
        } else {
            self.ext.get_mut(b - n)
        }
    }

    /// Undoes the last split: the last chain's flows join the chain it
    /// was split from. Returns `false` at the first chains. The heads'
    /// chunks past the last chain are freed but one, so that a table
    /// that shrinks and grows by a few flows does not allocate each time.
    ///
    /// # Safety
    ///
    /// Every node in the chains is a live node of the caller's table.
    unsafe fn merge_one(&mut self) -> bool {
        let n = self.base.len();
        if self.split == 0 {
            if self.mask + 1 == n {
                return false;
            }
            self.mask >>= 1;
            self.split = self.mask + 1;
        }
        // INVARIANT: `split <= mask` again, and chain `last` is the one
        // `split_one()` made from chain `split`.
        self.split -= 1;
        let last = self.mask + 1 + self.split;
        let moved = core::mem::replace(self.head(last), ptr::null_mut());
        if !moved.is_null() {
            let mut tail = moved;
            // SAFETY: `moved` heads a chain of live nodes (caller), and we
            // have the table's `&mut`: no reference into one exists.
            unsafe {
                while !(*tail).hnext.is_null() {
                    tail = (*tail).hnext;
                }
                (*tail).hnext = *self.head(self.split);
            }
            *self.head(self.split) = moved;
        }
        // Heads `last..` are null: a chunk that holds only those can go.
        while self.ext.len() >= last.saturating_sub(n) + 2 * PTR_CHUNK {
            drop(self.ext.pop_chunk());
        }
        true
    }

    /// Back to the first chains, once the caller has emptied every chain
    /// (heads past the last chain were never written: null). The heads
    /// added by splits stay allocated, so that nothing is freed under
    /// the caller's lock.
    fn rewind(&mut self) {
        self.mask = self.base.len() - 1;
        self.split = 0;
    }

    /// Splits the next chain, from enqueue (`gfp` atomic): returns `false`
    /// if no head could be had for the new chain.
    ///
    /// # Safety
    ///
    /// Every node in the chains is a live node of the caller's table.
    unsafe fn split_one(&mut self, gfp: Flags) -> bool {
        let n = self.mask + 1;
        let new = n + self.split;
        if new - self.base.len() >= self.ext.len() {
            if self.ext.is_full() {
                return false;
            }
            let Ok(chunk) = KBox::init(pin_init::zeroed::<[*mut Node<T>; PTR_CHUNK]>(), gfp) else {
                return false;
            };
            if self.ext.push_chunk(chunk, gfp).is_err() {
                return false;
            }
        }
        let wide = self.mask << 1 | 1;
        let (mut keep, mut moved) = (ptr::null_mut(), ptr::null_mut());
        let mut cur = core::mem::replace(self.head(self.split), ptr::null_mut());
        while !cur.is_null() {
            // SAFETY: `cur` is a node of the chain (caller), so live, and
            // we have the table's `&mut` (no reference into it exists).
            let node = unsafe { &mut *cur };
            let next = node.hnext;
            if T::hash(node.key) & wide == new {
                node.hnext = moved;
                moved = cur;
            } else {
                node.hnext = keep;
                keep = cur;
            }
            cur = next;
        }
        *self.head(self.split) = keep;
        // INVARIANT: chain `new` is `mask + 1 + split`, in `ext`'s range
        // (grown above); after the split, `split <= mask` again.
        *self.head(new) = moved;
        self.split += 1;
        if self.split == n {
            self.mask = wide;
            self.split = 0;
        }
        true
    }
}

/// The flows of a flow-queueing qdisc (C's `fq_flow` objects with their
/// `fq_root` trees, `new_flows`/`old_flows` lists and `delayed` tree),
/// and every link between them.
///
/// Each flow is a node of its own allocation, made from enqueue with the
/// caller's (atomic) flags: one object of 96 bytes for `fq`, an order-0
/// slab as C's. A flow is found by its key in a [`Chains`]; it is on at
/// most one of [`FLOW_LISTS`] round-robin lists, or throttled in a
/// min-heap on [`FlowItem::deadline`] (ties in the order they were
/// throttled), or detached: idle, on neither, the only state in which it
/// may be collected and freed. The heap has room for every flow, made as
/// flows are added, so throttling never allocates.
///
/// The links are pointers that only this type writes, so following one
/// costs what it costs in C. A flow is reached through a [`FlowMut`],
/// [`Front`] or [`Throttled`] handle, each holding the table's `&mut`
/// borrow for as long as it lives: while a handle exists, no other
/// method of the table can run but the shared ones a [`FlowMut`] lends
/// ([`FlowMut::table`]), so nothing can free the flow it names,
/// and no handle outlives its callback. Flows are freed only inside
/// [`Self::lookup`] (collected), [`Self::rehash`] and [`Self::clear`]
/// (also when the table is dropped), which hold no handle and return none
/// to a freed flow.
///
/// # Invariants
///
/// - `len` nodes are live, each an initialised `Node<T>` in memory from
///   kmalloc that the table owns, each in exactly one chain of `chains`,
///   once; chains end in null, and hold nothing else.
/// - For each list `l`: `first` is null, or following `link.next` from
///   it visits only live nodes with `state == l` and ends at `last`,
///   whose `link.next` is null; every node with `state == l` is visited
///   once.
/// - `heap[..heap_len]` are the nodes with `state == THROTTLED`, each
///   once, each with `heap_pos` its position and its throttle order in
///   `link.seq`.
/// - `heap.len() >= len`, and `len <= max_len <= Self::MAX_LEN`.
///
/// # Examples
///
/// Flows are made by [`Self::lookup`] and found again by key; the
/// round-robin lists give them back in the order they joined.
///
/// ```
/// use kernel::context::Atomic;
/// use kernel::flow_table::{Chains, FlowItem, FlowTable, ListId};
///
/// struct F {
///     id: usize,
///     due: u64,
/// }
/// impl FlowItem for F {
///     fn hash(key: usize) -> usize {
///         key.wrapping_mul(0x9E37_79B9)
///     }
///     fn deadline(&self) -> u64 {
///         self.due
///     }
/// }
///
/// let mut t = FlowTable::<F>::new(Chains::new(1, &Atomic)?);
/// let (new, old) = (ListId::new(0), ListId::new(1));
/// for k in 0..100 {
///     let l = t.lookup(k, 0, |_| false, || F { id: k, due: 0 }, &Atomic);
///     assert!(l.created && l.collected == 0);
///     let mut f = l.flow.expect("memory for a flow");
///     assert!(f.is_detached() && f.key() == k);
///     assert!(f.attach(new) && !f.attach(old));
/// }
/// assert_eq!(t.len(), 100);
/// // The chains split as flows come: one chain or more per flow.
/// assert!(t.chains() >= 100);
/// let l = t.lookup(42, 0, |_| false, || F { id: 0, due: 0 }, &Atomic);
/// assert!(!l.created && l.flow.map(|f| f.id) == Some(42));
///
/// // The front of `new` moves to `old` in turn, then is detached.
/// for k in 0..100 {
///     let f = t.front(new).expect("a flow");
///     assert_eq!((f.id, f.list()), (k, new));
///     f.rotate(old);
/// }
/// assert!(t.list_is_empty(new) && !t.list_is_empty(old));
/// for k in 0..100 {
///     let f = t.front(old).expect("a flow");
///     assert_eq!(f.id, k);
///     f.detach();
/// }
/// assert!(t.front(old).is_none());
/// # Ok::<(), Error>(())
/// ```
///
/// The throttled flows come out by deadline, ties in the order they were
/// throttled; one can be taken out of the heap from the middle, or
/// throttled again to another deadline.
///
/// ```
/// use kernel::context::Atomic;
/// use kernel::flow_table::{Chains, FlowItem, FlowTable, ListId};
///
/// struct F {
///     id: usize,
///     due: u64,
/// }
/// impl FlowItem for F {
///     fn hash(key: usize) -> usize {
///         key
///     }
///     fn deadline(&self) -> u64 {
///         self.due
///     }
/// }
///
/// let mut t = FlowTable::<F>::new(Chains::new(4, &Atomic)?);
/// let l0 = ListId::new(0);
/// // Deadlines 0, 7, 4, 1, 8, 5, ... for flows 0..64.
/// let due = |k: usize| ((k * 7) % 10) as u64;
/// for k in 0..64 {
///     let mut f = t.lookup(k, 0, |_| false, || F { id: k, due: due(k) }, &Atomic).flow.unwrap();
///     f.attach(l0);
///     t.front(l0).expect("the flow just added").throttle();
/// }
/// assert_eq!(t.throttled_len(), 64);
/// // Flow 10 (due 0) leaves from wherever it is in the heap.
/// let mut f = t.lookup(10, 0, |_| false, || F { id: 0, due: 0 }, &Atomic).flow.unwrap();
/// assert!(f.is_throttled() && f.unthrottle(l0) && !f.unthrottle(l0));
/// assert!(!f.rethrottle(|f| f.due = 1));
/// assert_eq!(t.throttled_len(), 63);
/// // Flow 63 (due 1) is due at 9 instead: behind the flows due then.
/// let mut f = t.lookup(63, 0, |_| false, || F { id: 0, due: 0 }, &Atomic).flow.unwrap();
/// assert!(f.rethrottle(|f| f.due = 9) && f.due == 9);
/// assert_eq!(f.table().first_deadline(), Some(0));
/// assert_eq!(t.throttled_len(), 63);
/// let mut last = None;
/// while let Some(f) = t.first_throttled() {
///     let at = Some((f.due, f.id));
///     assert!(at > last);
///     last = at;
///     f.unthrottle(l0);
/// }
/// assert_eq!(last, Some((9, 63)));
/// assert_eq!(t.first_deadline(), None);
/// assert_eq!(t.front(l0).map(|f| f.id), Some(10));
/// # Ok::<(), Error>(())
/// ```
///
/// Idle flows are collected by the lookups that meet them on their chain,
/// and by a rehash; every flow is dropped once, by gc or with the table.
///
/// ```
/// use kernel::sync::atomic::{self, Relaxed};
/// use kernel::context::Atomic;
/// use kernel::flow_table::{Chains, FlowItem, FlowTable, ListId};
///
/// static DROPPED: atomic::Atomic<usize> = atomic::Atomic::new(0);
/// struct F(bool);
/// impl Drop for F {
///     fn drop(&mut self) {
///         DROPPED.add(1, Relaxed);
///     }
/// }
/// impl FlowItem for F {
///     fn hash(_key: usize) -> usize {
///         0 // One chain for all: every lookup meets every flow.
///     }
///     fn deadline(&self) -> u64 {
///         0
///     }
/// }
/// let dropped = || DROPPED.load(Relaxed);
///
/// let mut t = FlowTable::<F>::new(Chains::new(0, &Atomic)?);
/// // Flows 0..20, the even ones idle, the odd ones busy on a list.
/// for k in 0..20 {
///     let mut f = t.lookup(k, 0, |_| false, || F(k % 2 == 0), &Atomic).flow.unwrap();
///     if k % 2 == 1 {
///         f.attach(ListId::new(3));
///     }
/// }
/// // Stale are the idle flows, but only detached ones are collected, at
/// // most 4 per lookup.
/// let l = t.lookup(100, 4, |f| f.0 || true, || F(false), &Atomic);
/// assert!(l.created && l.collected == 4);
/// assert_eq!((t.len(), dropped()), (17, 4));
/// let (old, freed) = t.rehash(Chains::new(3, &Atomic)?, |f| f.0, &Atomic);
/// drop(old);
/// assert_eq!((freed, t.len(), dropped()), (6, 11, 10));
/// // The busy flows are all still there and found.
/// for k in (1..20).step_by(2) {
///     let l = t.lookup(k, 8, |f| f.0, || F(false), &Atomic);
///     assert!(!l.created && l.collected == 0 && l.flow.is_some());
/// }
/// t.clear();
/// assert_eq!((t.len(), dropped()), (0, 21));
/// t.lookup(7, 0, |_| false, || F(false), &Atomic);
/// drop(t);
/// assert_eq!(dropped(), 22);
/// # Ok::<(), Error>(())
/// ```
///
/// The chains follow the flows: they split as flows are made and merge as
/// flows are collected, and their heads' memory goes with them. A table
/// makes no flow past its [`Self::max_len`].
///
/// ```
/// use kernel::context::Atomic;
/// use kernel::flow_table::{Chains, FlowItem, FlowTable};
///
/// struct F;
/// impl FlowItem for F {
///     fn hash(key: usize) -> usize {
///         key % 64 // 64 chains in use: each lookup meets many flows.
///     }
///     fn deadline(&self) -> u64 {
///         0
///     }
/// }
///
/// let mut t = FlowTable::<F>::with_max_len(Chains::new(2, &Atomic)?, 5000);
/// for k in 0..5000 {
///     assert!(t.lookup(k, 0, |_| false, || F, &Atomic).created);
/// }
/// assert!(t.chains() >= 5000 && t.chain_heads() >= 5000);
/// let l = t.lookup(5000, 0, |_| false, || F, &Atomic);
/// assert!(l.full && l.flow.is_none() && !l.created && t.len() == 5000);
/// // Collecting makes room: 8 idle flows go, the new one comes.
/// let l = t.lookup(5000, 8, |_| true, || F, &Atomic);
/// assert!(!l.full && l.created && l.collected == 8);
/// // Each lookup of a new key collects 8 and makes one.
/// let mut k = 5001;
/// while t.len() > 100 {
///     t.lookup(k, 8, |_| true, || F, &Atomic);
///     k += 1;
/// }
/// assert!(t.chains() <= 2 * t.len() as usize);
/// // At most two chunks of 256 heads past the last chain stay.
/// assert!(t.chain_heads() <= t.chains() + 512);
/// # Ok::<(), Error>(())
/// ```
pub struct FlowTable<T: FlowItem> {
    lists: [List<T>; FLOW_LISTS],
    chains: Chains<T>,
    heap: PtrVec<T>,
    heap_len: u32,
    seq: u64,
    len: u32,
    max_len: u32,
    /// The chain a full table's next sweep starts at.
    sweep_at: usize,
}

// SAFETY: The table owns its nodes and the `T` in each, as a
// `KVec<KBox<T>>` would, and no pointer to them exists outside it.
unsafe impl<T: FlowItem + Send> Send for FlowTable<T> {}

/// What [`FlowTable::lookup`] found or made.
pub struct Lookup<'t, T: FlowItem> {
    /// The flow of the key; `None` if it had to be made and no memory
    /// could be had.
    pub flow: Option<FlowMut<'t, T>>,
    /// The flow was made by this lookup (it is detached).
    pub created: bool,
    /// Idle flows collected (freed) on the way: on the key's chain, and,
    /// when the table was full, on the chains of the sweep.
    pub collected: u32,
    /// No flow was made because the table holds [`FlowTable::max_len`]
    /// flows (else `flow` is `None` for want of memory).
    pub full: bool,
}

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
    /// that meets none walks the chain once. A new flow that would find
    /// the table full is made room for first: the next
    /// [`Self::SWEEP_CHAINS`] chains are swept for such flows too.
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
        if self.len >= self.max_len {
            self.sweep(max_collect, &mut stale, &mut collected);
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

    /// Collects idle flows (as [`Self::collect`]) on the next
    /// [`Self::SWEEP_CHAINS`] chains.
    fn sweep(
        &mut self,
        max_collect: usize,
        stale: &mut impl FnMut(&T) -> bool,
        collected: &mut usize,
    ) {
        let n = self.chains.len();
        for _ in 0..core::cmp::min(Self::SWEEP_CHAINS, n) {
            // The chains may have been merged since the last sweep.
            let b = if self.sweep_at < n { self.sweep_at } else { 0 };
            self.sweep_at = b + 1;
            let head: *mut *mut Node<T> = self.chains.head(b);
            // SAFETY: `head` is the head of chain `b < n` of this table.
            unsafe { self.collect(head, None, max_collect, stale, collected) };
            if *collected >= max_collect {
                break;
            }
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
    unsafe fn push_tail(&mut self, node: *mut Node<T>, l: ListId) {
        // SAFETY: `node` is live (caller); we hold the table's `&mut` and
        // write link fields only, which no reference covers.
        unsafe {
            (*node).link.next = ptr::null_mut();
            (*node).state = l.index() as u8;
        }
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

    /// The heap key of `node`: deadline, then throttle order.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table in the heap (throttled).
    #[inline]
    unsafe fn heap_key(node: *mut Node<T>) -> (u64, u64) {
        // SAFETY: Live (caller), and no `&mut` to it exists while a table
        // method runs.
        let n = unsafe { &*node };
        // SAFETY: In the heap (caller): `heap_push()` wrote its link as
        // `seq` before it went in, and nothing writes `next` until it is
        // out.
        let seq = unsafe { n.link.seq };
        (n.val.deadline(), seq)
    }

    /// Puts `node` at heap position `pos < heap.len()`.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table.
    #[inline]
    unsafe fn heap_set(&mut self, pos: usize, node: *mut Node<T>) {
        *self.heap.get_mut(pos) = node;
        // SAFETY: Live (caller); a link field, which no reference covers.
        unsafe { (*node).heap_pos = pos as u32 };
    }

    /// Sifts the node at `pos < heap_len` up.
    fn heap_up(&mut self, mut pos: usize) {
        let node = *self.heap.get(pos);
        // SAFETY: `heap[..heap_len]` are live nodes of the heap (type
        // invariant), here and below.
        let key = unsafe { Self::heap_key(node) };
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = *self.heap.get(parent);
            // SAFETY: As above.
            if unsafe { Self::heap_key(p) } <= key {
                break;
            }
            // SAFETY: As above.
            unsafe { self.heap_set(pos, p) };
            pos = parent;
        }
        // SAFETY: As above.
        unsafe { self.heap_set(pos, node) };
    }

    /// Sifts the node at `pos < heap_len` down.
    fn heap_down(&mut self, mut pos: usize) {
        let len = self.heap_len as usize;
        let node = *self.heap.get(pos);
        // SAFETY: `heap[..heap_len]` are live nodes of the heap (type
        // invariant), here and below.
        let key = unsafe { Self::heap_key(node) };
        loop {
            let l = 2 * pos + 1;
            if l >= len {
                break;
            }
            let mut c = l;
            // SAFETY: As above.
            let mut ck = unsafe { Self::heap_key(*self.heap.get(l)) };
            if l + 1 < len {
                // SAFETY: As above.
                let rk = unsafe { Self::heap_key(*self.heap.get(l + 1)) };
                if rk < ck {
                    (c, ck) = (l + 1, rk);
                }
            }
            if key <= ck {
                break;
            }
            let child = *self.heap.get(c);
            // SAFETY: As above.
            unsafe { self.heap_set(pos, child) };
            pos = c;
        }
        // SAFETY: As above.
        unsafe { self.heap_set(pos, node) };
    }

    /// Throttles `node`: into the heap.
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table on no list and not in the heap.
    unsafe fn heap_push(&mut self, node: *mut Node<T>) {
        self.seq = self.seq.wrapping_add(1);
        // SAFETY: Live (caller); link fields only.
        unsafe {
            (*node).link.seq = self.seq;
            (*node).state = THROTTLED;
        }
        // Room for every flow (type invariant), and `node` is not in yet.
        let pos = self.heap_len as usize;
        self.heap_len += 1;
        // SAFETY: Live (caller).
        unsafe { self.heap_set(pos, node) };
        // INVARIANT: sifted into place, the heap holds the throttled nodes.
        self.heap_up(pos);
    }

    /// Takes throttled `node` out of the heap (its state is the caller's
    /// to set).
    ///
    /// # Safety
    ///
    /// `node` is a live node of the table with `state == THROTTLED`.
    unsafe fn heap_remove(&mut self, node: *mut Node<T>) {
        // SAFETY: Live (caller).
        let pos = unsafe { (*node).heap_pos } as usize;
        self.heap_len -= 1;
        let len = self.heap_len as usize;
        if pos < len {
            let last = *self.heap.get(len);
            // SAFETY: `last` was in the heap, so live (type invariant).
            unsafe { self.heap_set(pos, last) };
            self.heap_down(pos);
            // SAFETY: As above.
            let p = unsafe { (*last).heap_pos } as usize;
            self.heap_up(p);
        }
    }

    /// Moves the flows to `new` chains, freeing the detached ones for
    /// which `stale` returns `true` (C's `fq_rehash()`); returns the old
    /// chains, emptied, to be freed outside the qdisc's lock, and the
    /// number of flows freed. Chains are split to one a flow again with
    /// as `ctx` allows (atomic, under the lock).
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
        for b in 0..self.chains.len() {
            let mut cur = core::mem::replace(self.chains.head(b), ptr::null_mut());
            while !cur.is_null() {
                // SAFETY: `cur` was in a chain, so live (type invariant).
                let next = unsafe { (*cur).hnext };
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

/// Implements `Deref` for a handle.
macro_rules! handle_deref {
    ($h:ident) => {
        impl<T: FlowItem> Deref for $h<'_, T> {
            type Target = T;

            #[inline]
            fn deref(&self) -> &T {
                // SAFETY: The handle names a live node (its invariant) and
                // holds the table's `&mut`, so the node's value is
                // referenced through it only.
                unsafe { &(*self.node).val }
            }
        }
    };
}

/// Implements `DerefMut` for a handle.
macro_rules! handle_deref_mut {
    ($h:ident) => {
        impl<T: FlowItem> DerefMut for $h<'_, T> {
            #[inline]
            fn deref_mut(&mut self) -> &mut T {
                // SAFETY: As for `deref()`; `&mut self` makes it exclusive.
                unsafe { &mut (*self.node).val }
            }
        }
    };
}

/// A flow found or made by [`FlowTable::lookup`], in whatever state.
///
/// # Invariants
///
/// `node` is a live node of `table`.
pub struct FlowMut<'t, T: FlowItem> {
    table: &'t mut FlowTable<T>,
    node: *mut Node<T>,
}

handle_deref!(FlowMut);
handle_deref_mut!(FlowMut);

impl<T: FlowItem> FlowMut<'_, T> {
    /// The flow's key.
    #[inline]
    pub fn key(&self) -> usize {
        // SAFETY: Live (type invariant).
        unsafe { (*self.node).key }
    }

    /// Returns `true` if the flow is on no list and not throttled.
    #[inline]
    pub fn is_detached(&self) -> bool {
        // SAFETY: Live (type invariant).
        unsafe { (*self.node).state == DETACHED }
    }

    /// Returns `true` if the flow is throttled.
    #[inline]
    pub fn is_throttled(&self) -> bool {
        // SAFETY: Live (type invariant).
        unsafe { (*self.node).state == THROTTLED }
    }

    /// Appends the flow to list `l` if it is detached (C's
    /// `fq_flow_add_tail()` of a detached flow); `false` if it is not.
    #[inline]
    pub fn attach(&mut self, l: ListId) -> bool {
        if !self.is_detached() {
            return false;
        }
        // SAFETY: Live (type invariant), and detached: on no list and not
        // in the heap.
        unsafe { self.table.push_tail(self.node, l) };
        true
    }

    /// Takes the flow out of the throttled heap to the tail of list `l`
    /// if it is throttled (C's `fq_flow_unset_throttled()`); `false` if
    /// it is not.
    pub fn unthrottle(&mut self, l: ListId) -> bool {
        if !self.is_throttled() {
            return false;
        }
        // SAFETY: Live (type invariant) and throttled; out of the heap, it
        // is on no list.
        unsafe {
            self.table.heap_remove(self.node);
            self.table.push_tail(self.node, l);
        }
        true
    }

    /// Throttles the flow again, if it is throttled, after `f` changed it
    /// (its [`FlowItem::deadline`]): out of the heap, `f`, back in, last
    /// among the flows of its deadline as one throttled now (C's
    /// `rb_erase()` of a flow from `q->delayed`, then its insertion
    /// again). `false`, without calling `f`, if it is not throttled.
    pub fn rethrottle(&mut self, f: impl FnOnce(&mut T)) -> bool {
        if !self.is_throttled() {
            return false;
        }
        // SAFETY: Live (type invariant) and throttled. Out of the heap it
        // is on no list: detached, which its state says while `f` runs.
        unsafe {
            self.table.heap_remove(self.node);
            (*self.node).state = DETACHED;
        }
        f(self);
        // SAFETY: Live, on no list and not in the heap (above); the heap
        // has room for every flow (type invariant).
        unsafe { self.table.heap_push(self.node) };
        true
    }

    /// The table, for its shared methods (such as
    /// [`FlowTable::first_deadline`]) while the flow is held.
    #[inline]
    pub fn table(&self) -> &FlowTable<T> {
        &*self.table
    }
}

/// The first flow of a list (C's `head->first`), from
/// [`FlowTable::front`].
///
/// # Invariants
///
/// `node` is the first node of `table`'s list `list`.
pub struct Front<'t, T: FlowItem> {
    table: &'t mut FlowTable<T>,
    node: *mut Node<T>,
    list: ListId,
}

handle_deref!(Front);
handle_deref_mut!(Front);

impl<'t, T: FlowItem> Front<'t, T> {
    /// The list the flow heads.
    #[inline]
    pub fn list(&self) -> ListId {
        self.list
    }

    /// Takes the flow off the front of its list.
    #[inline]
    fn pop(&mut self) {
        // SAFETY: The first node of a list is live (type invariant), and
        // on a list, so its link is `next`.
        let next = unsafe { (*self.node).link.next };
        // INVARIANT: the list now starts at the flow's successor; the
        // flow's state is the caller's to set.
        self.table.lists[self.list.index()].first = next;
    }

    /// Moves the flow to the tail of list `to` (which may be its own).
    #[inline]
    pub fn rotate(mut self, to: ListId) {
        self.pop();
        // SAFETY: Live, off its list, and not in the heap (it was listed).
        unsafe { self.table.push_tail(self.node, to) };
    }

    /// Takes the flow off its list: it becomes detached, idle.
    #[inline]
    pub fn detach(mut self) {
        self.pop();
        // SAFETY: Live (type invariant); a link field.
        // INVARIANT: on no list and not in the heap: detached.
        unsafe { (*self.node).state = DETACHED };
    }

    /// Takes the flow off its list into the throttled heap, by its
    /// [`FlowItem::deadline`] as it is now.
    #[inline]
    pub fn throttle(mut self) {
        self.pop();
        // SAFETY: Live, off its list, not in the heap (it was listed).
        unsafe { self.table.heap_push(self.node) };
    }
}

/// The throttled flow due first, from [`FlowTable::first_throttled`]. It
/// derefs to a shared flow only: its deadline is its place in the heap.
///
/// # Invariants
///
/// `node` is `table`'s `heap[0]`.
pub struct Throttled<'t, T: FlowItem> {
    table: &'t mut FlowTable<T>,
    node: *mut Node<T>,
}

handle_deref!(Throttled);

impl<T: FlowItem> Throttled<'_, T> {
    /// Takes the flow out of the heap to the tail of list `l`.
    pub fn unthrottle(self, l: ListId) {
        // SAFETY: `heap[0]` is live and throttled (type invariants); out
        // of the heap it is on no list.
        unsafe {
            self.table.heap_remove(self.node);
            self.table.push_tail(self.node, l);
        }
    }
}
