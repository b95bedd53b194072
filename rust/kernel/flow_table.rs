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
//!
//! The types are declared here, so that each file sees their fields; their
//! code is one concern a file: `chains` (the hash chains), `table`
//! (lookup, collection, lists, rehash), `heap` (the throttled flows) and
//! `handles` (what a caller holds of a flow).

use crate::{alloc::KVVec, chunk_vec::ChunkVec};

mod chains;
mod handles;
mod heap;
mod table;

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

/// Leaves of those arrays' tables: room for 16 * 256 * 256 pointers,
/// 128 bytes of leaf pointers in the table each (more would grow the
/// qdisc's private area, and `init`'s stack, by as much again).
const PTR_LEAVES: usize = 16;

type PtrVec<T> = ChunkVec<*mut Node<T>, PTR_CHUNK, PTR_LEAVES>;

/// `Node::state` of a flow on one of the lists (which one, the list's
/// [`Front`] knows: a flow moved between lists keeps its state as it is).
const LISTED: u8 = 0;

/// `Node::state` of a flow on no list and not throttled.
const DETACHED: u8 = u8::MAX;

/// `Node::state` of a flow in the throttled heap.
const THROTTLED: u8 = u8::MAX - 1;

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
    /// [`DETACHED`], [`THROTTLED`] or [`LISTED`].
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
/// - For each list: `first` is null, or following `link.next` from it
///   visits only live nodes with `state == LISTED` and ends at `last`,
///   whose `link.next` is null; every node with `state == LISTED` is
///   visited once, by one list.
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
/// A lookup that makes a flow also sweeps chains for idle flows, as many
/// as a search tree of the table's flows a base chain would be deep
/// ([`FlowTable::gc_sweep_chains`]), from where the last sweep stopped:
/// an idle flow goes even where no lookup's chain passes it.
///
/// ```
/// use kernel::context::Atomic;
/// use kernel::flow_table::{Chains, FlowItem, FlowTable};
///
/// struct F;
/// impl FlowItem for F {
///     fn hash(key: usize) -> usize {
///         key // A chain a flow.
///     }
///     fn deadline(&self) -> u64 {
///         0
///     }
/// }
///
/// // 1,024 base chains and 1,000 flows: a flow a tree, no sweep.
/// let mut t = FlowTable::<F>::new(Chains::new(10, &Atomic)?);
/// for k in 0..1000 {
///     assert!(t.lookup(k, usize::MAX, |_| false, || F, &Atomic).created);
/// }
/// assert_eq!(t.gc_sweep_chains(), 0);
/// // Every flow is idle now; a new one collects on its own chain only.
/// let l = t.lookup(1000, usize::MAX, |_| true, || F, &Atomic);
/// assert!(l.created && l.collected <= 1);
///
/// // One base chain and 1,000 flows: a tree would be 9 levels deep.
/// let mut t = FlowTable::<F>::new(Chains::new(0, &Atomic)?);
/// for k in 0..1000 {
///     t.lookup(k, usize::MAX, |_| false, || F, &Atomic);
/// }
/// assert_eq!(t.gc_sweep_chains(), 9);
/// // A lookup that finds its flow sweeps nothing; one that makes a flow
/// // sweeps 9 chains, a flow each here.
/// let l = t.lookup(7, usize::MAX, |_| true, || F, &Atomic);
/// assert!(!l.created && l.collected == 0);
/// let l = t.lookup(1000, usize::MAX, |_| true, || F, &Atomic);
/// assert!(l.created && l.collected >= 8);
/// // New flows go round the table, collecting as they go.
/// for k in 1001..1400 {
///     t.lookup(k, usize::MAX, |_| true, || F, &Atomic);
/// }
/// assert!(t.len() < 400);
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
    /// The chain the next sweep starts at (a full table's, or gc's).
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
    /// when a flow was to be made, on the chains of a sweep.
    pub collected: u32,
    /// No flow was made because the table holds [`FlowTable::max_len`]
    /// flows (else `flow` is `None` for want of memory).
    pub full: bool,
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
