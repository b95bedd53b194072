// SPDX-License-Identifier: GPL-2.0

//! Fair Queue packet scheduler (per flow pacing), in Rust.
//!
//! A re-creation of Linux 6.12's `net/sched/sch_fq.c` (Eric Dumazet) that
//! registers the same `fq` qdisc, so iproute2 drives it unchanged, with the
//! same attributes, defaults, dumps and statistics. The names follow the C
//! file (flow, credit, quantum, time_next_packet, throttled, gc) so the two
//! read side by side.
//!
//! Flows live in an arena and are named by `u32` indices; where C links
//! flows by pointer, this module links them by index:
//!
//! - per hash bucket, a chain (`hnext`) instead of an rbtree of sockets;
//! - per band, the new and old round-robin lists (`next`), as in C;
//! - the throttled flows in an indexed min-heap on `time_next_packet`
//!   (ties in arrival order) instead of the `q->delayed` rbtree.
//!
//! A flow's packets are a FIFO linked through `skb->next`; a packet whose
//! EDT timestamp is earlier than the tail's is inserted in time order, which
//! gives the order C gets from its per-flow `t_root` tree.
//!
//! Unlike C, a `change` that fails validation applies nothing: all
//! attributes are checked before any is applied.

use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::alloc::{flags, KVVec};
use kernel::c_str;
use kernel::chunk_vec::ChunkVec;
use kernel::net::netlink::{Attrs, ExtAck, NlAttr, NlMsg, Policy, Range};
use kernel::net::sched::{
    self, Incoming, Qdisc, QdiscChange, QdiscInit, QdiscOps, Queued, StatsDump, ToFree, XmitStatus,
};
use kernel::net::skbuff::{tcp_state, DropReason, SkBuff, SkbTimeQueue};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::time::{
    jiffies, jiffies_to_usecs, ktime_get_ns, msecs_to_jiffies, time_after, usecs_to_jiffies,
    Jiffies,
};
use kernel::uapi;

kernel::module_qdisc! {
    type: Fq,
    name: "sch_fq_rs",
    author: "rsnet",
    description: "Fair Queue Packet Scheduler (Rust)",
    license: "GPL",
}

const FQ_BANDS: usize = 3;
/// Slots of the per-band arrays: one spare, so that `band & BAND_MASK`
/// indexes them without a bounds check on the data path.
const BAND_SLOTS: usize = 4;
const BAND_MASK: usize = BAND_SLOTS - 1;
const TC_PRIO_MAX: usize = uapi::TC_PRIO_MAX as usize;
const FQ_MIN_WEIGHT: i32 = 16384;
const NSEC_PER_USEC: u64 = 1000;
const NSEC_PER_SEC: u64 = 1_000_000_000;
/// Limit of flows collected per lookup.
const FQ_GC_MAX: usize = 8;
/// Flows per arena chunk: 2 KiB of 128-byte flows, so a chunk added from
/// enqueue (GFP_ATOMIC) never needs a high-order page, also where KASAN or
/// slub_debug add to each slab object (see `CHUNKVEC_MAX_BYTES`).
const CHUNK: usize = 16;
/// Leaves of the arena's table: at most 64 * 256 * 16 = 262,144 flows.
const ARENA_LEAVES: usize = 64;
/// Throttled-heap entries per chunk (2 KiB).
const HEAP_CHUNK: usize = 512;
/// Leaves of the heap's table: room for 2 * 256 * 512 entries, one per
/// flow the arena can hold.
const HEAP_LEAVES: usize = 2;
const _: () = assert!(
    ChunkVec::<u32, HEAP_CHUNK, HEAP_LEAVES>::MAX_LEN
        >= ChunkVec::<Flow, CHUNK, ARENA_LEAVES>::MAX_LEN
);

/// No flow.
const NIL: u32 = u32::MAX;
/// `next` of a throttled flow (not on a new/old list), C's `&throttled`.
const THROTTLED: u32 = u32::MAX - 1;

/// The hash of a flow key: its low bits pick the chain, so that a chain's
/// flows split by one more bit. `hash_ptr()` keeps a product's top bits;
/// low ones still step evenly for keys in steps (orphan hashes 0, 1, 2, ...,
/// sockets one slab object apart), which crowds a linear-hashing table's
/// chains (seven flows walked per lookup at 100,000 flows where random keys
/// walk 1.5), so higher bits are folded into them.
#[inline]
fn flow_hash(key: usize) -> usize {
    const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;
    let p = (key as u64).wrapping_mul(GOLDEN_RATIO_64);
    ((p ^ (p >> 29)) >> 32) as usize
}

kernel::qdisc_cb! {
    /// `struct fq_skb_cb`: the packet's state in the qdisc control block.
    struct FqSkbCb {
        time_to_send: u64,
        band: u8,
        _pad: [u8; 7],
    }
}

fn time_to_send(skb: &SkBuff) -> u64 {
    skb.qdisc_cb::<FqSkbCb>().time_to_send
}

/// [`time_to_send`] of a queued skb, the key of a flow's queue.
#[inline]
fn time_to_send_q(skb: &Queued<Fq>) -> u64 {
    time_to_send(skb)
}

fn set_time_to_send(skb: &mut SkBuff, t: u64) {
    skb.qdisc_cb_mut::<FqSkbCb>().time_to_send = t;
}

fn skb_band(skb: &SkBuff) -> usize {
    skb.qdisc_cb::<FqSkbCb>().band as usize
}

fn set_skb_band(skb: &mut SkBuff, band: u8) {
    skb.qdisc_cb_mut::<FqSkbCb>().band = band;
}

/// Aligned as C's `____cacheline_aligned_in_smp` flows (128 bytes here):
/// an index becomes an offset by a shift.
#[derive(Zeroable)]
#[repr(align(64))]
struct Flow {
    /// Packets, in time_to_send order (C's `head`/`tail` list and
    /// `t_root` tree).
    queue: SkbTimeQueue<Queued<Fq>>,
    /// Socket address, or `(hash << 1) | 1` for orphans and unconnected
    /// sockets (C's `f->sk`).
    sk: usize,
    /// Jiffies when the flow went idle, valid while `detached`.
    age: Jiffies,
    /// Not on any list: idle and a gc candidate (C's odd `f->age`).
    detached: bool,
    socket_hash: u32,
    qlen: i32,
    credit: i32,
    band: u8,
    /// Next flow in the round-robin list, or `THROTTLED`.
    next: u32,
    /// Next flow in the hash chain (or the free list).
    hnext: u32,
    time_next_packet: u64,
    /// Position in the throttled heap, and arrival order for ties.
    heap_pos: u32,
    throttle_seq: u64,
}

impl Flow {
    fn new() -> Self {
        Flow {
            queue: SkbTimeQueue::new(),
            sk: 0,
            age: 0,
            detached: true,
            socket_hash: 0,
            qlen: 0,
            credit: 0,
            band: 0,
            next: NIL,
            hnext: NIL,
            time_next_packet: 0,
            heap_pos: NIL,
            throttle_seq: 0,
        }
    }

    fn is_throttled(&self) -> bool {
        self.next == THROTTLED
    }
}

/// Words of [`Arena::has_free`]: a bit for each chunk the arena can hold.
const HAS_FREE_WORDS: usize = ARENA_LEAVES * kernel::chunk_vec::CHUNKVEC_LEAF * 64 / (64 * 64);
/// Free masks per chunk of [`Arena::free_mask`] (2 KiB).
const MASK_CHUNK: usize = 512;
/// The free mask of a chunk whose flows are all free.
const ALL_FREE: u32 = ((1u64 << CHUNK) - 1) as u32;
const _: () = assert!(
    CHUNK <= 32
        && HAS_FREE_WORDS * 64 == ARENA_LEAVES * kernel::chunk_vec::CHUNKVEC_LEAF
        && HAS_FREE_WORDS * 8 <= kernel::chunk_vec::CHUNKVEC_MAX_BYTES
        && ChunkVec::<u32, MASK_CHUNK, 1>::MAX_LEN >= HAS_FREE_WORDS * 64
);

/// Storage of the flows, in fixed chunks so that growing it in atomic
/// context never moves or copies flows. A new flow takes the lowest free
/// slot, so live flows gather in the low chunks; a chunk whose flows gc
/// has all freed goes back to the allocator at once (C frees each flow to
/// its slab), wherever it is, and the top ones give back their indices.
struct Arena {
    chunks: ChunkVec<Flow, CHUNK, ARENA_LEAVES>,
    /// The free flows of each chunk, a bit each; all set for a chunk taken
    /// out.
    free_mask: ChunkVec<u32, MASK_CHUNK, 1>,
    /// The chunks with a free flow, a bit each; allocated with the first
    /// chunk.
    has_free: Option<KBox<[u64; HAS_FREE_WORDS]>>,
    /// No word of `has_free` below this one has a bit set.
    hint: usize,
    /// Chunks in `chunks`, not taken out.
    present: usize,
}

impl Arena {
    fn new() -> Self {
        Arena {
            chunks: ChunkVec::new(),
            free_mask: ChunkVec::new(),
            has_free: None,
            hint: 0,
            present: 0,
        }
    }

    /// Flows the arena has memory for.
    fn capacity(&self) -> usize {
        self.present * CHUNK
    }

    #[inline]
    fn get(&self, i: u32) -> &Flow {
        self.chunks.get(i as usize)
    }

    #[inline]
    fn get_mut(&mut self, i: u32) -> &mut Flow {
        self.chunks.get_mut(i as usize)
    }

    /// Marks chunk `c` as having a free flow or not.
    fn set_has_free(&mut self, c: usize, free: bool) {
        if let Some(words) = self.has_free.as_mut() {
            let (w, bit) = (c / 64, 1u64 << (c % 64));
            if free {
                words[w] |= bit;
                self.hint = self.hint.min(w);
            } else {
                words[w] &= !bit;
            }
        }
    }

    /// The lowest chunk with a free flow, if any.
    fn lowest_free(&mut self) -> Option<usize> {
        let words = self.has_free.as_ref()?;
        let used = self.chunks.len() / CHUNK;
        let w = (self.hint..used.div_ceil(64)).find(|&w| words[w] != 0)?;
        self.hint = w;
        Some(w * 64 + words[w].trailing_zeros() as usize)
    }

    /// Where [`Self::grow`] puts the next chunk: the lowest chunk with a
    /// free flow that [`Self::alloc`] could not use, which was taken out
    /// (`Some`), or past the end (`None`). `ENOMEM` if the arena holds all
    /// the flows it can.
    fn grow_slot(&mut self) -> Result<Option<usize>> {
        match self.lowest_free() {
            Some(c) => Ok(Some(c)),
            None if self.chunks.is_full() => Err(ENOMEM),
            None => Ok(None),
        }
    }

    /// Gives the arena memory for one more free flow (GFP_ATOMIC: called
    /// from enqueue): chunk `back` of [`Self::grow_slot`] comes back, or a
    /// chunk is added.
    fn grow(&mut self, back: Option<usize>) -> Result {
        let gfp = flags::GFP_ATOMIC | flags::__GFP_NOWARN;
        // Zeroed in place: a chunk is too big to build on the stack. Zeroed
        // flows are valid (`Zeroable`) and free; `alloc()` sets each up.
        let chunk = KBox::init(kernel::init::zeroed::<[Flow; CHUNK]>(), gfp)?;
        if let Some(c) = back {
            self.chunks.put_chunk(c, chunk).map_err(|_| EINVAL)?;
            self.present += 1;
            return Ok(());
        }
        let c = self.chunks.len() / CHUNK;
        if self.has_free.is_none() {
            self.has_free = Some(KBox::init(kernel::init::zeroed(), gfp)?);
        }
        if self.free_mask.len() <= c {
            let masks = KBox::init(kernel::init::zeroed::<[u32; MASK_CHUNK]>(), gfp)?;
            self.free_mask.push_chunk(masks, gfp)?;
        }
        self.chunks.push_chunk(chunk, gfp)?;
        self.present += 1;
        *self.free_mask.get_mut(c) = ALL_FREE;
        self.set_has_free(c, true);
        Ok(())
    }

    /// Takes the lowest free flow; `None` if there is none or its chunk
    /// was taken out (then [`Self::grow`] brings it back).
    fn alloc(&mut self) -> Option<u32> {
        let c = self.lowest_free()?;
        if !self.chunks.has_chunk(c) {
            return None;
        }
        let mask = self.free_mask.get_mut(c);
        let slot = mask.trailing_zeros() as usize;
        *mask &= mask.wrapping_sub(1);
        if *mask == 0 {
            self.set_has_free(c, false);
        }
        let i = (c * CHUNK + slot) as u32;
        *self.get_mut(i) = Flow::new();
        Some(i)
    }

    /// Frees flow `i`; its chunk goes if it holds no flow now (but the
    /// first, kept for the next flows), and the top indices that no chunk
    /// holds go with it.
    fn release(&mut self, i: u32) {
        self.get_mut(i).queue = SkbTimeQueue::new();
        let c = i as usize / CHUNK;
        let mask = self.free_mask.get_mut(c);
        let was_full = *mask == 0;
        *mask |= 1 << (i as usize % CHUNK);
        let empty = *mask == ALL_FREE;
        if was_full {
            self.set_has_free(c, true);
        }
        if empty && c > 0 && self.chunks.take_chunk(c).is_some() {
            self.present -= 1;
        }
        loop {
            let top = self.chunks.len() / CHUNK;
            if top <= 1 || self.chunks.has_chunk(top - 1) {
                break;
            }
            self.set_has_free(top - 1, false);
            drop(self.chunks.pop_chunk());
        }
    }
}

#[derive(Clone, Copy)]
struct FlowHead {
    first: u32,
    last: u32,
}

const EMPTY_HEAD: FlowHead = FlowHead {
    first: NIL,
    last: NIL,
};

#[derive(Clone, Copy)]
struct PerBandFlows {
    new_flows: FlowHead,
    old_flows: FlowHead,
    credit: i32,
    /// Weight of the band: 576KB, 192KB, 64KB by default.
    quantum: i32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ListSel {
    New,
    Old,
}

/// A flow that `lookup` found or made: its index, the flow and the
/// configuration, borrowed apart from the rest of the qdisc.
struct Found<'a> {
    fi: u32,
    f: &'a mut Flow,
    cfg: &'a Config,
    /// Made by this lookup.
    created: bool,
}

/// The flow `fq_classify` gives a packet, as [`Found`], and what enqueue
/// must do to it first.
struct Classified<'a> {
    fi: u32,
    f: &'a mut Flow,
    cfg: &'a Config,
    /// Unthrottle the flow: its socket was freed and reallocated.
    unthrottle: bool,
}

/// The tunables, all set by attributes; copied whole so that a change is
/// validated on a copy and applied at once.
#[derive(Clone, Copy)]
struct Config {
    limit: u32,
    quantum: u32,
    initial_quantum: u32,
    flow_refill_delay: Jiffies,
    flow_plimit: u32,
    flow_max_rate: u64,
    ce_threshold: u64,
    horizon: u64,
    orphan_mask: u32,
    low_rate_threshold: u32,
    rate_enable: bool,
    fq_trees_log: u8,
    horizon_drop: u8,
    prio2band: [u8; TC_PRIO_MAX + 1],
    weights: [i32; FQ_BANDS],
    timer_slack: u32,
}

/// The private data of one fq instance (C's `struct fq_sched_data`).
pub struct FqSchedData {
    cfg: Config,
    band_nr: usize,
    band_flows: [PerBandFlows; BAND_SLOTS],
    /// Fast path queue.
    internal: Flow,
    stat_fastpath_packets: u64,
    arena: Arena,
    fq_root: Buckets,
    /// Throttled flows, a binary min-heap of flow indices; `delayed_len`
    /// entries are used, the rest are spare (added with the arena's
    /// chunks, one entry per flow).
    delayed: ChunkVec<u32, HEAP_CHUNK, HEAP_LEAVES>,
    delayed_len: usize,
    throttle_seq: u64,
    time_next_delayed_flow: u64,
    unthrottle_latency_ns: u64,
    gc_age: Jiffies,

    band_pkt_count: [u32; BAND_SLOTS],
    flows: u32,
    inactive_flows: u32,
    throttled_flows: u32,

    stat_throttled: u64,
    stat_gc_flows: u64,
    stat_band_drops: [u64; BAND_SLOTS],
    stat_ce_mark: u64,
    stat_horizon_drops: u64,
    stat_horizon_caps: u64,
    stat_flows_plimit: u64,
    stat_pkts_too_long: u64,
    stat_allocation_errors: u64,
}

/// Chain heads per chunk of [`Buckets::ext`] (2 KiB).
const EXT_CHUNK: usize = 512;
/// Leaves of [`Buckets::ext`]: 2 * 256 * 512 chains, one per flow the
/// arena can hold.
const EXT_LEAVES: usize = 2;

/// The flow chains (C's `fq_root` rbtrees), a linear-hashing table that
/// grows with the flows. It starts with 2^(`log` + 1) chains for
/// `buckets` = 2^`log` (twice C's trees, in the memory of C's `rb_root`
/// array: `u32` heads), allocated in process context. Each flow added
/// beyond one per chain splits the next chain in turn in two, the new
/// chain's head taken from `ext`, which grows by 2 KiB chunks; so a chain
/// holds about one flow at any number of flows (lookup O(1) expected,
/// where C's trees cost O(log n)), and no split needs more than an
/// order-0 allocation. A split that cannot allocate is skipped: chains
/// get longer, no flow is refused.
struct Buckets {
    /// The first chains.
    base: KVVec<u32>,
    /// The chains added by splits: chain `base.len() + i` is `ext[i]`.
    ext: ChunkVec<u32, EXT_CHUNK, EXT_LEAVES>,
    /// `n - 1` for the `n` chains of the current round (a power of two).
    mask: usize,
    /// The next chain to split; chains below it are split this round.
    split: usize,
}

impl Buckets {
    /// 2^(`log` + 1) empty chains (GFP_KERNEL: init and change only).
    fn new(log: u8) -> Result<Self> {
        let n = 1usize << log.wrapping_add(1);
        Ok(Buckets {
            base: KVVec::from_elem(NIL, n, flags::GFP_KERNEL)?,
            ext: ChunkVec::new(),
            mask: n - 1,
            split: 0,
        })
    }

    /// The number of chains.
    fn len(&self) -> usize {
        self.mask + 1 + self.split
    }

    /// The chain of flow key `key`.
    #[inline]
    fn chain_of(&self, key: usize) -> usize {
        let h = flow_hash(key);
        let b = h & self.mask;
        if b < self.split {
            h & (self.mask << 1 | 1)
        } else {
            b
        }
    }

    #[inline]
    fn head(&self, b: usize) -> u32 {
        match self.base.get(b) {
            Some(&h) => h,
            None => *self.ext.get(b - self.base.len()),
        }
    }

    #[inline]
    fn set_head(&mut self, b: usize, fi: u32) {
        match self.base.get_mut(b) {
            Some(h) => *h = fi,
            None => *self.ext.get_mut(b - self.base.len()) = fi,
        }
    }

    /// Back to the first chains, all empty; the extension is freed.
    fn clear(&mut self) {
        self.base.iter_mut().for_each(|h| *h = NIL);
        self.ext = ChunkVec::new();
        self.mask = self.base.len() - 1;
        self.split = 0;
    }

    /// Splits the next chain (GFP_ATOMIC: called from enqueue). Returns
    /// `false` if no chain head could be had.
    fn split_one(&mut self, arena: &mut Arena) -> bool {
        let n = self.mask + 1;
        let new = n + self.split;
        if new - self.base.len() >= self.ext.len() {
            let gfp = flags::GFP_ATOMIC | flags::__GFP_NOWARN;
            if self.ext.is_full() {
                return false;
            }
            let Ok(chunk) = KBox::init(kernel::init::zeroed::<[u32; EXT_CHUNK]>(), gfp) else {
                return false;
            };
            if self.ext.push_chunk(chunk, gfp).is_err() {
                return false;
            }
        }
        let old = self.split;
        let wide = self.mask << 1 | 1;
        let (mut keep, mut moved) = (NIL, NIL);
        let mut cur = self.head(old);
        while cur != NIL {
            let f = arena.get_mut(cur);
            let next = f.hnext;
            if flow_hash(f.sk) & wide == new {
                f.hnext = moved;
                moved = cur;
            } else {
                f.hnext = keep;
                keep = cur;
            }
            cur = next;
        }
        self.set_head(old, keep);
        self.set_head(new, moved);
        self.split += 1;
        if self.split == n {
            self.mask = wide;
            self.split = 0;
        }
        true
    }
}

impl FqSchedData {
    #[inline]
    fn head_mut(&mut self, band: usize, sel: ListSel) -> &mut FlowHead {
        let pband = &mut self.band_flows[band & BAND_MASK];
        match sel {
            ListSel::New => &mut pband.new_flows,
            ListSel::Old => &mut pband.old_flows,
        }
    }

    /// Appends flow `fi` (never the internal one) to a list of its band.
    #[inline]
    fn fq_flow_add_tail(&mut self, fi: u32, sel: ListSel) {
        let f = self.arena.get_mut(fi);
        f.next = NIL;
        let band = f.band as usize;
        self.fq_flow_link_tail(fi, band, sel);
    }

    /// The list part of [`Self::fq_flow_add_tail`], for a caller that has
    /// set the flow's `next` to `NIL` already.
    #[inline]
    fn fq_flow_link_tail(&mut self, fi: u32, band: usize, sel: ListSel) {
        let pband = &mut self.band_flows[band & BAND_MASK];
        let head = match sel {
            ListSel::New => &mut pband.new_flows,
            ListSel::Old => &mut pband.old_flows,
        };
        if head.first == NIL {
            head.first = fi;
        } else {
            self.arena.get_mut(head.last).next = fi;
        }
        head.last = fi;
    }

    // --- the throttled flows: an indexed min-heap -------------------------

    fn heap_key(&self, fi: u32) -> (u64, u64) {
        let f = self.arena.get(fi);
        (f.time_next_packet, f.throttle_seq)
    }

    #[inline]
    fn heap_at(&self, pos: usize) -> u32 {
        *self.delayed.get(pos)
    }

    fn heap_set(&mut self, pos: usize, fi: u32) {
        *self.delayed.get_mut(pos) = fi;
        self.arena.get_mut(fi).heap_pos = pos as u32;
    }

    fn heap_up(&mut self, mut pos: usize) {
        let fi = self.heap_at(pos);
        let key = self.heap_key(fi);
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let pi = self.heap_at(parent);
            if self.heap_key(pi) <= key {
                break;
            }
            self.heap_set(pos, pi);
            pos = parent;
        }
        self.heap_set(pos, fi);
    }

    fn heap_down(&mut self, mut pos: usize) {
        let fi = self.heap_at(pos);
        let key = self.heap_key(fi);
        loop {
            let l = 2 * pos + 1;
            if l >= self.delayed_len {
                break;
            }
            let r = l + 1;
            let c = if r < self.delayed_len
                && self.heap_key(self.heap_at(r)) < self.heap_key(self.heap_at(l))
            {
                r
            } else {
                l
            };
            let ci = self.heap_at(c);
            if key <= self.heap_key(ci) {
                break;
            }
            self.heap_set(pos, ci);
            pos = c;
        }
        self.heap_set(pos, fi);
    }

    fn heap_remove(&mut self, fi: u32) {
        let pos = self.arena.get(fi).heap_pos as usize;
        self.delayed_len = self.delayed_len.wrapping_sub(1);
        let last = self.heap_at(self.delayed_len);
        self.arena.get_mut(fi).heap_pos = NIL;
        if pos < self.delayed_len {
            self.heap_set(pos, last);
            self.heap_down(pos);
            let p = self.arena.get(last).heap_pos as usize;
            self.heap_up(p);
        }
    }

    fn fq_flow_unset_throttled(&mut self, fi: u32) {
        self.heap_remove(fi);
        self.throttled_flows = self.throttled_flows.wrapping_sub(1);
        self.fq_flow_add_tail(fi, ListSel::Old);
    }

    fn fq_flow_set_throttled(&mut self, fi: u32) {
        self.throttle_seq = self.throttle_seq.wrapping_add(1);
        let seq = self.throttle_seq;
        let f = self.arena.get_mut(fi);
        f.throttle_seq = seq;
        f.next = THROTTLED;
        let tnp = f.time_next_packet;
        // Room was reserved when the flow's chunk was added.
        let pos = self.delayed_len;
        self.delayed_len = self.delayed_len.wrapping_add(1);
        self.heap_set(pos, fi);
        self.heap_up(pos);
        self.throttled_flows = self.throttled_flows.wrapping_add(1);
        self.stat_throttled = self.stat_throttled.wrapping_add(1);
        if self.time_next_delayed_flow > tnp {
            self.time_next_delayed_flow = tnp;
        }
    }

    // --- flows: lookup, allocation, gc ------------------------------------

    fn fq_gc_candidate(&self, f: &Flow, now_j: Jiffies) -> bool {
        f.detached && time_after(now_j, f.age.wrapping_add(self.gc_age))
    }

    /// Frees flow `fi` (collected) with the heap room the arena no longer
    /// needs: the heap keeps one entry per flow the arena can hold.
    fn fq_flow_free(&mut self, fi: u32) {
        self.arena.release(fi);
        while self.delayed.len() >= self.arena.capacity() + HEAP_CHUNK
            && self.delayed.len() - HEAP_CHUNK >= self.delayed_len
        {
            drop(self.delayed.pop_chunk());
        }
    }

    /// Grows the arena by one chunk, with heap room for all its flows
    /// (GFP_ATOMIC: called from enqueue; each allocation at most a page).
    fn grow(&mut self) -> Result {
        // At its most flows: fail before allocating anything.
        let back = self.arena.grow_slot()?;
        let want = self.arena.capacity() + CHUNK;
        if self.delayed.len() < want {
            let gfp = flags::GFP_ATOMIC | flags::__GFP_NOWARN;
            let chunk = KBox::init(kernel::init::zeroed::<[u32; HEAP_CHUNK]>(), gfp)?;
            self.delayed.push_chunk(chunk, gfp)?;
        }
        self.arena.grow(back)
    }

    /// `fq_classify()` after the orphan handling: find the flow of `key` in
    /// its bucket; if it is not there, or a flow to collect is met on the
    /// way, [`Self::lookup_gc`] does the rest. Returns the flow's index,
    /// the flow (the hit path looks its index up once) and whether it was
    /// created; `None` if a new flow could not be allocated (counted).
    #[inline]
    fn lookup(&mut self, key: usize, own: Option<u32>) -> Option<Found<'_>> {
        let b = self.fq_root.chain_of(key);
        let mut cur = self.fq_root.head(b);
        // jiffies is read only if an idle flow is met, as in C.
        let mut now_j = None;
        while cur != NIL {
            let f = self.arena.get(cur);
            if f.sk == key {
                return Some(self.found(cur, false));
            }
            if f.detached && self.fq_gc_candidate(f, *now_j.get_or_insert_with(jiffies)) {
                break;
            }
            cur = f.hnext;
        }
        self.lookup_gc(key, own, now_j.unwrap_or_else(jiffies))
    }

    /// The rest of [`Self::lookup`]: find or create the flow of `key`,
    /// collecting idle flows met on the way.
    #[inline(never)]
    fn lookup_gc(&mut self, key: usize, own: Option<u32>, now_j: Jiffies) -> Option<Found<'_>> {
        let b = self.fq_root.chain_of(key);
        let mut prev = NIL;
        let mut cur = self.fq_root.head(b);
        let mut collected = 0;
        while cur != NIL {
            let f = self.arena.get(cur);
            let hnext = f.hnext;
            if f.sk == key {
                return Some(self.found(cur, false));
            }
            if collected < FQ_GC_MAX && self.fq_gc_candidate(f, now_j) {
                if prev == NIL {
                    self.fq_root.set_head(b, hnext);
                } else {
                    self.arena.get_mut(prev).hnext = hnext;
                }
                self.fq_flow_free(cur);
                collected += 1;
                // C's u32/u64 counters, wrapping as C's do.
                self.flows = self.flows.wrapping_sub(1);
                self.inactive_flows = self.inactive_flows.wrapping_sub(1);
                self.stat_gc_flows = self.stat_gc_flows.wrapping_add(1);
            } else {
                prev = cur;
            }
            cur = hnext;
        }

        let fi = match self.arena.alloc() {
            Some(fi) => Some(fi),
            None => self.grow().ok().and_then(|()| self.arena.alloc()),
        };
        let Some(fi) = fi else {
            self.stat_allocation_errors = self.stat_allocation_errors.wrapping_add(1);
            return None;
        };
        self.flows = self.flows.wrapping_add(1);
        self.inactive_flows = self.inactive_flows.wrapping_add(1);
        // One chain more per flow beyond one a chain; the new flow is in
        // none yet, and the key's chain is taken after the split.
        let mut b = b;
        if self.flows as usize > self.fq_root.len() && self.fq_root.split_one(&mut self.arena) {
            b = self.fq_root.chain_of(key);
        }
        let head = self.fq_root.head(b);
        self.fq_root.set_head(b, fi);
        let found = self.found(fi, true);
        let f = &mut *found.f;
        f.detached = true;
        f.age = now_j;
        f.sk = key;
        f.socket_hash = own.unwrap_or(0);
        f.credit = found.cfg.initial_quantum as i32;
        f.hnext = head;
        Some(found)
    }

    /// Flow `fi` with the configuration, borrowed apart.
    #[inline]
    fn found(&mut self, fi: u32, created: bool) -> Found<'_> {
        Found {
            fi,
            f: self.arena.get_mut(fi),
            cfg: &self.cfg,
            created,
        }
    }

    /// `fq_fastpath_check()`.
    #[inline]
    fn fq_fastpath_check(&self, sch: &Qdisc<Fq>, skb: &SkBuff, now: u64) -> bool {
        if time_to_send(skb) > now {
            return false;
        }
        if sch.qlen() != 0 {
            // Packets are queued, but the fast path may still be used if
            // none is eligible now (all scheduled later) or fast path ones.
            if self.flows != self.inactive_flows.wrapping_add(self.throttled_flows) {
                return false;
            }
            // Keep Fair Queue mode under pressure.
            if self.internal.qlen >= 8 {
                return false;
            }
            // Delayed flows that are due must go first.
            if self.time_next_delayed_flow <= now {
                return false;
            }
        }
        // A full non-TCP socket with SO_MAX_PACING_RATE: `max_pacing_rate()`
        // is `None` for other than full sockets, and tested first, a TCP
        // socket without the option reads its state once here.
        if let Some(sk) = skb.sock() {
            if matches!(sk.max_pacing_rate(), Some(r) if r != u64::MAX) && !sk.is_tcp() {
                return false;
            }
        }
        self.cfg.flow_max_rate == u64::MAX
    }

    /// `fq_classify()`: the flow of `skb` (index, flow, configuration), or
    /// `None` for the fast path queue (`&q->internal` in C). The flag asks
    /// the caller to unthrottle the flow (its socket was reallocated).
    #[inline]
    fn fq_classify(
        &mut self,
        sch: &Qdisc<Fq>,
        skb: &mut SkBuff,
        now: u64,
    ) -> Option<Classified<'_>> {
        // The state is read once (C reads it twice: `sk_listener()`, then
        // the test for TCP_CLOSE).
        let sock = skb.sock().map(|sk| (sk.addr(), sk.state(), sk.hash()));
        // SYNACKs of request sockets and listeners are not part of a flow
        // yet and must not be rate limited: treat them as orphans. Sockets
        // in TCP_CLOSE (unconnected UDP) send to many destinations: hash.
        // The low bit set keeps these keys apart from socket addresses.
        let (key, own_hash) = match sock {
            None | Some((_, tcp_state::LISTEN | tcp_state::NEW_SYN_RECV, _)) => {
                let hash = skb.get_hash() & self.cfg.orphan_mask;
                skb.orphan();
                (((hash as usize) << 1) | 1, None)
            }
            Some((_, tcp_state::CLOSE, _)) => {
                let hash = skb.get_hash() & self.cfg.orphan_mask;
                (((hash as usize) << 1) | 1, None)
            }
            Some((addr, _, sk_hash)) => (addr, Some(sk_hash)),
        };

        if self.fq_fastpath_check(sch, skb, now) {
            self.stat_fastpath_packets = self.stat_fastpath_packets.wrapping_add(1);
            if own_hash.is_some() && self.cfg.rate_enable {
                if let Some(sk) = skb.sock() {
                    sk.set_pacing_status_fq();
                }
            }
            return None;
        }

        // From here on `f` and `cfg` borrow all of `self`: what needs more
        // is left to the caller (the returned flag).
        let Found {
            fi,
            f,
            cfg,
            created,
        } = self.lookup(key, own_hash)?;
        let mut unthrottle = false;
        if created {
            if own_hash.is_some() && cfg.rate_enable {
                if let Some(sk) = skb.sock() {
                    sk.set_pacing_status_fq();
                }
            }
        } else if let Some(sk_hash) = own_hash {
            // The socket may have been freed and reallocated: if its hash
            // changed, it is a new flow in an old slot.
            if f.socket_hash != sk_hash {
                f.credit = cfg.initial_quantum as i32;
                f.socket_hash = sk_hash;
                if cfg.rate_enable {
                    if let Some(sk) = skb.sock() {
                        sk.set_pacing_status_fq();
                    }
                }
                unthrottle = f.is_throttled();
                // Before the unthrottle, which does not read it (C sets
                // it after).
                f.time_next_packet = 0;
            }
        }
        Some(Classified {
            fi,
            f,
            cfg,
            unthrottle,
        })
    }

    /// `flow_queue_add()`.
    fn flow_queue_add(f: &mut Flow, skb: Queued<Fq>) {
        f.queue.push(skb, time_to_send_q);
    }

    /// `fq_check_throttled()`.
    #[inline]
    fn fq_check_throttled(&mut self, now: u64) {
        if self.time_next_delayed_flow > now {
            return;
        }
        self.fq_unthrottle(now);
    }

    /// Returns the flows due by `now` to the old lists.
    #[inline(never)]
    fn fq_unthrottle(&mut self, now: u64) {
        // Unthrottle latency EWMA: cheap, and helps to diagnose timer
        // problems.
        let sample = now.wrapping_sub(self.time_next_delayed_flow);
        self.unthrottle_latency_ns = self
            .unthrottle_latency_ns
            .wrapping_sub(self.unthrottle_latency_ns >> 3)
            .wrapping_add(sample >> 3);

        self.time_next_delayed_flow = u64::MAX;
        while self.delayed_len > 0 {
            let fi = self.heap_at(0);
            let tnp = self.arena.get(fi).time_next_packet;
            if tnp > now {
                self.time_next_delayed_flow = tnp;
                break;
            }
            self.fq_flow_unset_throttled(fi);
        }
    }

    /// `fq_pband_head_select()`, with the list's first flow.
    #[inline]
    fn fq_pband_head_select(&self, band: usize) -> Option<(ListSel, u32)> {
        let pband = &self.band_flows[band & BAND_MASK];
        if pband.credit <= 0 {
            None
        } else if pband.new_flows.first != NIL {
            Some((ListSel::New, pband.new_flows.first))
        } else if pband.old_flows.first != NIL {
            Some((ListSel::Old, pband.old_flows.first))
        } else {
            None
        }
    }

    /// `fq_dequeue()`.
    #[inline]
    fn fq_dequeue(&mut self, sch: &Qdisc<Fq>) -> Option<Queued<Fq>> {
        if sch.qlen() == 0 {
            return None;
        }
        // The fast path queue goes first.
        if let Some(skb) = self.internal.queue.pop_front(time_to_send_q) {
            self.internal.qlen = self.internal.qlen.wrapping_sub(1);
            sch.bstats_update(&skb);
            return Some(skb);
        }

        let now = ktime_get_ns();
        self.fq_check_throttled(now);
        let mut retry = 0;
        // `q->band_nr`, kept in a register for the loop.
        let mut band = self.band_nr;
        let skb = loop {
            let Some((sel, fi)) = self.fq_pband_head_select(band) else {
                // This band is done: move to the next with credit.
                let mut found = false;
                while {
                    retry += 1;
                    retry <= FQ_BANDS
                } {
                    band += 1;
                    if band == FQ_BANDS {
                        band = 0;
                    }
                    self.band_nr = band;
                    let pband = &mut self.band_flows[band & BAND_MASK];
                    pband.credit =
                        core::cmp::min(pband.credit.wrapping_add(pband.quantum), pband.quantum);
                    if pband.credit > 0 {
                        found = true;
                        break;
                    }
                    retry = 0;
                }
                if found {
                    continue;
                }
                if self.time_next_delayed_flow != u64::MAX {
                    sch.watchdog_schedule_range_ns(
                        self.time_next_delayed_flow,
                        self.cfg.timer_slack as u64,
                    );
                }
                return None;
            };
            retry = 0;
            // One lookup of the flow for all that follows (it is C's `f`).
            let f = self.arena.get_mut(fi);
            let next = f.next;
            if f.credit <= 0 {
                f.credit = f.credit.wrapping_add(self.cfg.quantum as i32);
                f.next = NIL;
                // The old list of the flow's band, which a packet of
                // another priority may have changed (as in C).
                let fband = f.band as usize;
                self.head_mut(band, sel).first = next;
                self.fq_flow_link_tail(fi, fband, ListSel::Old);
                continue;
            }

            let Some(front) = f.queue.peek(time_to_send_q) else {
                // Force a pass through old_flows to prevent starvation.
                if sel == ListSel::New {
                    f.next = NIL;
                    let fband = f.band as usize;
                    self.head_mut(band, sel).first = next;
                    self.fq_flow_link_tail(fi, fband, ListSel::Old);
                } else {
                    f.detached = true;
                    f.age = jiffies();
                    self.head_mut(band, sel).first = next;
                }
                continue;
            };
            let time_next_packet = core::cmp::max(front.key(), f.time_next_packet);
            if now < time_next_packet {
                f.time_next_packet = time_next_packet;
                self.head_mut(band, sel).first = next;
                self.fq_flow_set_throttled(fi);
                continue;
            }
            let Some(mut skb) = f.queue.pop(front) else {
                continue;
            };
            f.qlen = f.qlen.wrapping_sub(1);
            if f.qlen == 0 {
                self.inactive_flows = self.inactive_flows.wrapping_add(1);
            }
            if (now
                .wrapping_sub(time_next_packet)
                .wrapping_sub(self.cfg.ce_threshold) as i64)
                > 0
            {
                skb.set_ce();
                self.stat_ce_mark = self.stat_ce_mark.wrapping_add(1);
            }
            let count = &mut self.band_pkt_count[skb_band(&skb) & BAND_MASK];
            *count = count.wrapping_sub(1);

            let plen = skb.qdisc_pkt_len();
            f.credit = f.credit.wrapping_sub(plen as i32);
            let pband = &mut self.band_flows[band & BAND_MASK];
            pband.credit = pband.credit.wrapping_sub(plen as i32);
            if self.cfg.rate_enable && fq_pace(&self.cfg, f, &skb, plen, now) {
                self.stat_pkts_too_long = self.stat_pkts_too_long.wrapping_add(1);
            }
            break skb;
        };
        sch.bstats_update(&skb);
        Some(skb)
    }

    /// `fq_reset()`: drop all packets and flows; statistics stay (the
    /// adapter zeroes the qdisc's queue counters).
    fn fq_reset(&mut self) {
        self.internal.queue = SkbTimeQueue::new();
        self.internal.qlen = 0;
        // Dropping the arena frees every flow and its packets.
        self.arena = Arena::new();
        self.fq_root.clear();
        for i in 0..FQ_BANDS {
            self.band_flows[i].new_flows = EMPTY_HEAD;
            self.band_flows[i].old_flows = EMPTY_HEAD;
            self.band_pkt_count[i] = 0;
        }
        self.delayed = ChunkVec::new();
        self.delayed_len = 0;
        self.flows = 0;
        self.inactive_flows = 0;
        self.throttled_flows = 0;
    }

    /// `fq_rehash()`: move the flows to `new` buckets, dropping idle ones;
    /// returns the old ones, to be freed outside the lock.
    fn fq_rehash(&mut self, mut new: Buckets, new_log: u8) -> Buckets {
        let now_j = jiffies();
        let mut fcnt: u32 = 0;
        for b in 0..self.fq_root.len() {
            let mut cur = self.fq_root.head(b);
            while cur != NIL {
                let f = self.arena.get(cur);
                let next = f.hnext;
                if self.fq_gc_candidate(f, now_j) {
                    self.fq_flow_free(cur);
                    fcnt = fcnt.wrapping_add(1);
                } else {
                    let nb = new.chain_of(f.sk);
                    self.arena.get_mut(cur).hnext = new.head(nb);
                    new.set_head(nb, cur);
                }
                cur = next;
            }
        }
        self.flows = self.flows.wrapping_sub(fcnt);
        self.inactive_flows = self.inactive_flows.wrapping_sub(fcnt);
        self.stat_gc_flows = self.stat_gc_flows.wrapping_add(u64::from(fcnt));
        core::mem::swap(&mut self.fq_root, &mut new);
        while self.flows as usize > self.fq_root.len() && self.fq_root.split_one(&mut self.arena) {}
        self.cfg.fq_trees_log = new_log;
        new
    }
}

/// The pacing part of `fq_dequeue()`: when may flow `f` send again.
/// Returns `true` if the delay was clamped (`stat_pkts_too_long`).
///
/// Always inlined, as in C: an out-of-line call on every dequeued packet
/// cost more than its common exits (credit left, no rate to enforce).
#[inline(always)]
fn fq_pace(cfg: &Config, f: &mut Flow, skb: &SkBuff, mut plen: u32, now: u64) -> bool {
    let mut rate = cfg.flow_max_rate;
    // With an EDT timestamp, time_next_packet only moves if this qdisc
    // enforces a flow max rate.
    if skb.tstamp() == 0 {
        if let Some(sk_rate) = skb.sock().and_then(|sk| sk.pacing_rate()) {
            rate = core::cmp::min(sk_rate, rate);
        }
        if rate <= cfg.low_rate_threshold as u64 {
            f.credit = 0;
        } else {
            plen = core::cmp::max(plen, cfg.quantum);
            if f.credit > 0 {
                return false;
            }
        }
    }
    if rate == u64::MAX {
        return false;
    }
    let mut too_long = false;
    let mut len = plen as u64 * NSEC_PER_SEC;
    // A zero rate leaves `len` as is, as C's `if (likely(rate))`.
    len = len.checked_div(rate).unwrap_or(len);
    // The socket rate can change later: clamp the delay to 1 s.
    if len > NSEC_PER_SEC {
        len = NSEC_PER_SEC;
        too_long = true;
    }
    // Account for schedule/timer drift: time_next_packet was set when the
    // prior packet was sent, and now can be late.
    if f.time_next_packet != 0 {
        len -= core::cmp::min(len / 2, now.wrapping_sub(f.time_next_packet));
    }
    f.time_next_packet = now.wrapping_add(len);
    too_long
}

/// The attribute policy, as C's `fq_policy`.
static IQ_RANGE: Range = Range::new(0, 1 << 20);
const TCA_FQ_N: usize = uapi::TCA_FQ_WEIGHTS as usize + 1;
static FQ_POLICY: [Policy; TCA_FQ_N] = {
    let mut p = [Policy::u32(); TCA_FQ_N];
    p[uapi::TCA_FQ_UNSPEC as usize] = Policy::strict_start(uapi::TCA_FQ_TIMER_SLACK as u16);
    p[uapi::TCA_FQ_INITIAL_QUANTUM as usize] = Policy::u32_range(&IQ_RANGE);
    p[uapi::TCA_FQ_HORIZON_DROP as usize] = Policy::u8();
    p[uapi::TCA_FQ_PRIOMAP as usize] =
        Policy::exact_len(core::mem::size_of::<uapi::tc_prio_qopt>() as u16);
    p[uapi::TCA_FQ_WEIGHTS as usize] = Policy::exact_len((FQ_BANDS * 4) as u16);
    p
};

/// Default priority to band map (`sch_default_prio2band`).
const DEFAULT_PRIO2BAND: [u8; TC_PRIO_MAX + 1] = [1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1];

/// Last time the obsolete defrate was warned about, to rate limit it.
static DEFRATE_WARNED: AtomicUsize = AtomicUsize::new(0);

/// Validates the attributes in `opt` against `old` and returns the new
/// configuration; applies nothing.
fn fq_parse(opt: &NlAttr, old: &Config, extack: &mut ExtAck<'_>) -> Result<Config> {
    let tb: Attrs<'_, TCA_FQ_N> = opt.parse_nested(&FQ_POLICY, extack)?;
    let mut c = *old;

    if let Some(nval) = tb.u32(uapi::TCA_FQ_BUCKETS_LOG) {
        if !(1..=18).contains(&nval) {
            extack.set_msg(c_str!("sch_fq: buckets log must be between 1 and 18"));
            return Err(EINVAL);
        }
        c.fq_trees_log = nval as u8;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_PLIMIT) {
        c.limit = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_FLOW_PLIMIT) {
        c.flow_plimit = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_QUANTUM) {
        c.quantum = v.clamp(256, 1 << 20);
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_INITIAL_QUANTUM) {
        c.initial_quantum = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_FLOW_DEFAULT_RATE) {
        let now = jiffies();
        let last = DEFRATE_WARNED.load(Ordering::Relaxed);
        if last == 0 || time_after(now, last.wrapping_add(msecs_to_jiffies(5000))) {
            DEFRATE_WARNED.store(now, Ordering::Relaxed);
            pr_warn!("sch_fq: defrate {} ignored.\n", v);
        }
    }
    if let Some(rate) = tb.u32(uapi::TCA_FQ_FLOW_MAX_RATE) {
        c.flow_max_rate = if rate == u32::MAX {
            u64::MAX
        } else {
            rate as u64
        };
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_LOW_RATE_THRESHOLD) {
        c.low_rate_threshold = v;
    }
    if let Some(enable) = tb.u32(uapi::TCA_FQ_RATE_ENABLE) {
        if enable > 1 {
            extack.set_msg(c_str!("sch_fq: pacing must be 0 or 1"));
            return Err(EINVAL);
        }
        c.rate_enable = enable == 1;
    }
    if let Some(usecs) = tb.u32(uapi::TCA_FQ_FLOW_REFILL_DELAY) {
        c.flow_refill_delay = usecs_to_jiffies(usecs);
    }
    if tb.has(uapi::TCA_FQ_PRIOMAP) {
        let map: [u8; 20] = tb.bytes(uapi::TCA_FQ_PRIOMAP).ok_or(EINVAL)?;
        let bands = i32::from_ne_bytes([map[0], map[1], map[2], map[3]]);
        if bands != FQ_BANDS as i32 {
            extack.set_msg(c_str!("sch_fq: FQ only supports 3 bands"));
            return Err(EINVAL);
        }
        for i in 0..=TC_PRIO_MAX {
            let band = map[4 + i];
            if band as usize >= FQ_BANDS {
                extack.set_msg_fmt(format_args!(
                    "sch_fq: FQ priomap field {} maps to a too high band {}",
                    i, band
                ));
                return Err(EINVAL);
            }
            c.prio2band[i] = band;
        }
    }
    if tb.has(uapi::TCA_FQ_WEIGHTS) {
        let w: [u8; 12] = tb.bytes(uapi::TCA_FQ_WEIGHTS).ok_or(EINVAL)?;
        for i in 0..FQ_BANDS {
            let weight = i32::from_ne_bytes([w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]]);
            if weight < FQ_MIN_WEIGHT {
                extack.set_msg_fmt(format_args!(
                    "sch_fq: Weight {} less that minimum allowed {}",
                    weight, FQ_MIN_WEIGHT
                ));
                return Err(EINVAL);
            }
            c.weights[i] = weight;
        }
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_ORPHAN_MASK) {
        c.orphan_mask = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_CE_THRESHOLD) {
        c.ce_threshold = NSEC_PER_USEC * v as u64;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_TIMER_SLACK) {
        c.timer_slack = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_HORIZON) {
        c.horizon = NSEC_PER_USEC * v as u64;
    }
    if let Some(v) = tb.u8(uapi::TCA_FQ_HORIZON_DROP) {
        c.horizon_drop = v;
    }
    Ok(c)
}

/// The `fq` qdisc.
struct Fq;

impl FqSchedData {
    /// Applies a validated configuration, but for `sch->limit`, which the
    /// caller sets.
    fn apply(&mut self, c: &Config) {
        let log = self.cfg.fq_trees_log;
        self.cfg = *c;
        // The bucket array is swapped separately (fq_rehash).
        self.cfg.fq_trees_log = log;
        for i in 0..FQ_BANDS {
            self.band_flows[i].quantum = c.weights[i];
        }
    }
}

#[vtable]
impl QdiscOps for Fq {
    type Data = FqSchedData;
    const ID: &'static CStr = c_str!("fq");

    fn init(
        sch: &mut QdiscInit<'_, Self>,
        opt: Option<&NlAttr>,
        extack: &mut ExtAck<'_>,
    ) -> Result<FqSchedData> {
        let mtu = sch.psched_mtu().clamp(1, 1 << 20);
        let defaults = Config {
            limit: 10000,
            quantum: (2 * mtu).clamp(256, 1 << 20),
            initial_quantum: core::cmp::min(10 * mtu, 1 << 20),
            flow_refill_delay: msecs_to_jiffies(40),
            flow_plimit: 100,
            flow_max_rate: u64::MAX,
            ce_threshold: NSEC_PER_USEC * u32::MAX as u64,
            horizon: 10 * NSEC_PER_SEC,
            orphan_mask: 1024 - 1,
            low_rate_threshold: 550000 / 8,
            rate_enable: true,
            fq_trees_log: 10,
            horizon_drop: 1,
            prio2band: DEFAULT_PRIO2BAND,
            weights: [9 << 16, 3 << 16, 1 << 16],
            // 10 usec of hrtimer slack.
            timer_slack: 10 * NSEC_PER_USEC as u32,
        };
        let cfg = match opt {
            Some(opt) => fq_parse(opt, &defaults, extack)?,
            None => defaults,
        };
        let band = PerBandFlows {
            new_flows: EMPTY_HEAD,
            old_flows: EMPTY_HEAD,
            credit: 0,
            quantum: 0,
        };
        let mut q = FqSchedData {
            cfg,
            band_nr: 0,
            band_flows: [band; BAND_SLOTS],
            internal: Flow::new(),
            stat_fastpath_packets: 0,
            arena: Arena::new(),
            fq_root: Buckets::new(cfg.fq_trees_log)?,
            delayed: ChunkVec::new(),
            delayed_len: 0,
            throttle_seq: 0,
            time_next_delayed_flow: u64::MAX,
            unthrottle_latency_ns: 0,
            gc_age: msecs_to_jiffies(3000),
            band_pkt_count: [0; BAND_SLOTS],
            flows: 0,
            inactive_flows: 0,
            throttled_flows: 0,
            stat_throttled: 0,
            stat_gc_flows: 0,
            stat_band_drops: [0; BAND_SLOTS],
            stat_ce_mark: 0,
            stat_horizon_drops: 0,
            stat_horizon_caps: 0,
            stat_flows_plimit: 0,
            stat_pkts_too_long: 0,
            stat_allocation_errors: 0,
        };
        q.apply(&cfg);
        q.cfg.fq_trees_log = cfg.fq_trees_log;
        sch.set_limit(cfg.limit);
        Ok(q)
    }

    #[inline]
    fn enqueue<'a>(
        sch: &'a Qdisc<Self>,
        q: &mut FqSchedData,
        mut skb: Incoming<'a, Self>,
        to_free: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        let band = q.cfg.prio2band[skb.priority() as usize & TC_PRIO_MAX];
        if q.band_pkt_count[band as usize & BAND_MASK] >= sch.limit() {
            let drops = &mut q.stat_band_drops[band as usize & BAND_MASK];
            *drops = drops.wrapping_add(1);
            return to_free.drop(skb, DropReason::FqBandLimit);
        }

        let now = ktime_get_ns();
        let tstamp = skb.tstamp();
        if tstamp == 0 {
            set_time_to_send(&mut skb, now);
        } else {
            // Is the timestamp too far in the future?
            if tstamp as i64 > now.wrapping_add(q.cfg.horizon) as i64 {
                if q.cfg.horizon_drop != 0 {
                    q.stat_horizon_drops = q.stat_horizon_drops.wrapping_add(1);
                    return to_free.drop(skb, DropReason::FqHorizonLimit);
                }
                q.stat_horizon_caps = q.stat_horizon_caps.wrapping_add(1);
                skb.set_tstamp(now.wrapping_add(q.cfg.horizon));
            }
            let t = skb.tstamp();
            set_time_to_send(&mut skb, t);
        }

        let Some(Classified {
            fi,
            mut f,
            mut cfg,
            unthrottle,
        }) = q.fq_classify(sch, &mut skb, now)
        else {
            let (skb, status) = skb.queue();
            q.internal.qlen = q.internal.qlen.wrapping_add(1);
            FqSchedData::flow_queue_add(&mut q.internal, skb);
            return status;
        };
        if unthrottle {
            q.fq_flow_unset_throttled(fi);
            Found { f, cfg, .. } = q.found(fi, false);
        }
        // C compares `int qlen` with `u32 flow_plimit` as unsigned.
        if f.qlen as u32 >= cfg.flow_plimit {
            q.stat_flows_plimit = q.stat_flows_plimit.wrapping_add(1);
            return to_free.drop(skb, DropReason::FqFlowLimit);
        }
        // As in C, a detached flow joins the new list of the band it had (0
        // for a new flow), not of this packet's band.
        let old_band = f.band as usize;
        let detached = f.detached;
        if detached {
            f.detached = false;
            f.next = NIL;
            if time_after(jiffies(), f.age.wrapping_add(cfg.flow_refill_delay)) {
                f.credit = core::cmp::max(f.credit as u32, cfg.quantum) as i32;
            }
        }
        f.band = band;
        let was_empty = f.qlen == 0;
        f.qlen = f.qlen.wrapping_add(1);
        set_skb_band(&mut skb, band);
        let (skb, status) = skb.queue();
        FqSchedData::flow_queue_add(f, skb);
        if was_empty {
            q.inactive_flows = q.inactive_flows.wrapping_sub(1);
        }
        if detached {
            q.fq_flow_link_tail(fi, old_band, ListSel::New);
        }
        let count = &mut q.band_pkt_count[band as usize & BAND_MASK];
        *count = count.wrapping_add(1);
        status
    }

    #[inline]
    fn dequeue(sch: &Qdisc<Self>, q: &mut FqSchedData) -> Option<Queued<Self>> {
        q.fq_dequeue(sch)
    }

    fn reset(_sch: &Qdisc<Self>, q: &mut FqSchedData) {
        q.fq_reset();
    }

    fn change(sch: &mut QdiscChange<'_, Self>, opt: &NlAttr, extack: &mut ExtAck<'_>) -> Result {
        // Validate on a snapshot; nothing is applied if anything is wrong.
        let old = sch.with_lock(|_, q| q.cfg);
        let cfg = fq_parse(opt, &old, extack)?;
        let new_root = if cfg.fq_trees_log != old.fq_trees_log {
            Some(Buckets::new(cfg.fq_trees_log)?)
        } else {
            None
        };

        let old_root = sch.with_lock(|sch, q| {
            q.apply(&cfg);
            sch.set_limit(cfg.limit);
            let old_root = new_root.map(|root| q.fq_rehash(root, cfg.fq_trees_log));
            sch.drop_to_limit(q);
            old_root
        });
        // The old bucket array is freed outside the lock.
        drop(old_root);
        Ok(())
    }

    fn dump(sch: &Qdisc<Self>, q: &FqSchedData, msg: &mut NlMsg<'_>) -> Result {
        let c = &q.cfg;
        // TCA_FQ_FLOW_DEFAULT_RATE is not used any more.
        msg.nested(sched::TCA_OPTIONS, |msg| {
            msg.put_u32(uapi::TCA_FQ_PLIMIT, sch.limit())?;
            msg.put_u32(uapi::TCA_FQ_FLOW_PLIMIT, c.flow_plimit)?;
            msg.put_u32(uapi::TCA_FQ_QUANTUM, c.quantum)?;
            msg.put_u32(uapi::TCA_FQ_INITIAL_QUANTUM, c.initial_quantum)?;
            msg.put_u32(uapi::TCA_FQ_RATE_ENABLE, c.rate_enable as u32)?;
            msg.put_u32(
                uapi::TCA_FQ_FLOW_MAX_RATE,
                core::cmp::min(c.flow_max_rate, u32::MAX as u64) as u32,
            )?;
            msg.put_u32(
                uapi::TCA_FQ_FLOW_REFILL_DELAY,
                jiffies_to_usecs(c.flow_refill_delay),
            )?;
            msg.put_u32(uapi::TCA_FQ_ORPHAN_MASK, c.orphan_mask)?;
            msg.put_u32(uapi::TCA_FQ_LOW_RATE_THRESHOLD, c.low_rate_threshold)?;
            msg.put_u32(
                uapi::TCA_FQ_CE_THRESHOLD,
                (c.ce_threshold / NSEC_PER_USEC) as u32,
            )?;
            msg.put_u32(uapi::TCA_FQ_BUCKETS_LOG, c.fq_trees_log as u32)?;
            msg.put_u32(uapi::TCA_FQ_TIMER_SLACK, c.timer_slack)?;
            msg.put_u32(uapi::TCA_FQ_HORIZON, (c.horizon / NSEC_PER_USEC) as u32)?;
            msg.put_u8(uapi::TCA_FQ_HORIZON_DROP, c.horizon_drop)?;
            let mut prio = [0u8; 20];
            prio[..4].copy_from_slice(&(FQ_BANDS as i32).to_ne_bytes());
            prio[4..].copy_from_slice(&c.prio2band);
            msg.put_bytes(uapi::TCA_FQ_PRIOMAP, &prio)?;
            let mut weights = [0u8; 12];
            for i in 0..FQ_BANDS {
                weights[4 * i..4 * i + 4].copy_from_slice(&q.band_flows[i].quantum.to_ne_bytes());
            }
            msg.put_bytes(uapi::TCA_FQ_WEIGHTS, &weights)
        })
    }

    fn dump_stats(_sch: &Qdisc<Self>, q: &FqSchedData, d: &mut StatsDump<'_>) -> Result {
        let st = uapi::tc_fq_qd_stats {
            gc_flows: q.stat_gc_flows,
            highprio_packets: 0,
            tcp_retrans: 0,
            throttled: q.stat_throttled,
            flows_plimit: q.stat_flows_plimit,
            pkts_too_long: q.stat_pkts_too_long,
            allocation_errors: q.stat_allocation_errors,
            time_next_delayed_flow: q
                .time_next_delayed_flow
                .wrapping_add(q.cfg.timer_slack as u64)
                .wrapping_sub(ktime_get_ns()) as i64,
            flows: q.flows,
            inactive_flows: q.inactive_flows,
            throttled_flows: q.throttled_flows,
            unthrottle_latency_ns: core::cmp::min(q.unthrottle_latency_ns, u32::MAX as u64) as u32,
            ce_mark: q.stat_ce_mark,
            horizon_drops: q.stat_horizon_drops,
            horizon_caps: q.stat_horizon_caps,
            fastpath_packets: q.stat_fastpath_packets,
            band_drops: core::array::from_fn(|i| q.stat_band_drops[i]),
            band_pkt_count: core::array::from_fn(|i| q.band_pkt_count[i]),
            pad: 0,
        };
        d.copy_app(&st)
    }
}
