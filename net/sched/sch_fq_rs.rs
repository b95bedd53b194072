// SPDX-License-Identifier: GPL-2.0

//! Fair Queue packet scheduler (per flow pacing), in Rust.
//!
//! A re-creation of Linux 7.2's `net/sched/sch_fq.c` (Eric Dumazet) that
//! registers the same `fq` qdisc, so iproute2 drives it unchanged, with the
//! same attributes, defaults, dumps and statistics. The names follow the C
//! file (flow, credit, quantum, time_next_packet, throttled, gc) so the two
//! read side by side.
//!
//! The flows, and every link between them, are a [`FlowTable`]: one
//! allocation per flow, as C's slab objects, linked by pointer:
//!
//! - per hash bucket, a chain instead of an rbtree of sockets, in a
//!   linear-hashing table that grows with the flows;
//! - per band, the new and old round-robin lists, as in C;
//! - the throttled flows in a min-heap on `time_next_packet` (ties in
//!   arrival order) instead of the `q->delayed` rbtree.
//!
//! A flow's packets are a FIFO linked through `skb->next`; a packet whose
//! EDT timestamp is earlier than the tail's is inserted in time order, which
//! gives the order C gets from its per-flow `t_root` tree.
//!
//! Unlike C, a `change` that fails validation applies nothing: all
//! attributes are checked before any is applied.

use kernel::c_str;
use kernel::context::Atomic;
use kernel::flow_table::{Chains, FlowItem, FlowMut, FlowTable, ListPair, Lookup};
use kernel::net::netlink::{Attrs, ExtAck, NlAttr, NlMsg, Policy, Range};
use kernel::net::sched::{
    self, ClassifiedSkb, FullOrNoSock, Incoming, Qdisc, QdiscChange, QdiscInit, QdiscOps, Queued,
    SockClass, StatsDump, ToFree, XmitStatus,
};
use kernel::net::skbuff::{
    ktime_mono_to_any, ktime_mono_to_real, net_ratelimit, skb_clock, tcp_state, DropReason,
    FullSockRef, RtnlFree, SkBuff, SkbTimeQueue, TkOffs,
};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::atomic::{self, Relaxed};
use kernel::time::{
    jiffies, jiffies_to_usecs, ktime_get_ns, msecs_to_jiffies, time_after, usecs_to_jiffies,
    Jiffies,
};
use kernel::uapi;

kernel::module_qdisc! {
    type: Fq,
    name: "sch_fq_rs",
    authors: ["rsnet"],
    description: "Fair Queue Packet Scheduler (Rust)",
    license: "GPL",
    // MODULE_ALIAS_NET_SCH("fq"): tc loads the fq the kernel was built with.
    alias: ["net-sch-fq"],
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
/// The most seconds of uptime a `CLOCK_MONOTONIC` time stands for
/// (`TIME_UPTIME_SEC_MAX`, 30 years, as `include/linux/time64.h`).
const TIME_UPTIME_SEC_MAX: i64 = 30 * 365 * 24 * 3600;
/// The most flows a qdisc holds (C has no limit but memory; 100 MB of
/// flows here): a new flow that finds the table full even after a sweep
/// for idle flows is one that could not be made, as where C's allocation
/// fails: its packet takes the fast path queue, counted in
/// `allocation_errors`. No packet is dropped that C would send.
const FQ_MAX_FLOWS: u32 = FlowTable::<Flow>::MAX_LEN;

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

/// A packet fq holds: classified, so it has no socket or a full one.
type FqSkb = Queued<Fq, FullOrNoSock>;

/// A packet being queued, classified.
type FqIncoming<'a> = Incoming<'a, Fq, FullOrNoSock>;

/// [`time_to_send`] of a queued skb, the key of a flow's queue.
#[inline]
fn time_to_send_q(skb: &FqSkb) -> u64 {
    time_to_send(skb)
}

fn set_time_to_send(skb: &mut SkBuff, t: u64) {
    skb.qdisc_cb_mut::<FqSkbCb>().time_to_send = t;
}

fn skb_band(skb: &SkBuff) -> usize {
    skb.qdisc_cb::<FqSkbCb>().band as usize
}

fn set_skb_band(skb: &mut ClassifiedSkb, band: u8) {
    skb.qdisc_cb_mut::<FqSkbCb>().band = band;
}

/// The age of a flow that goes idle now (`fq_flow_set_detached()`):
/// `jiffies | 1`, as C stores it (C's low bit tells an age from a tail
/// pointer), so that refill and gc, which compare with it, act on the same
/// jiffy as C's.
#[inline]
fn detached_age() -> Jiffies {
    jiffies() | 1
}

/// A flow (C's `struct fq_flow` but for its links, which are the
/// [`FlowTable`]'s): 96 bytes with them, against C's 128.
struct Flow {
    /// Packets, in time_to_send order (C's `head`/`tail` list and
    /// `t_root` tree).
    queue: SkbTimeQueue<FqSkb>,
    /// Jiffies when the flow went idle, valid while it is detached.
    age: Jiffies,
    time_next_packet: u64,
    socket_hash: u32,
    qlen: i32,
    credit: i32,
    band: u8,
}
const _: () = assert!(FlowTable::<Flow>::NODE_SIZE == 96);

impl Flow {
    /// A flow gone idle at `age`, of no socket, without credit: the
    /// classifier gives it its socket's hash and `initial_quantum`.
    fn new(age: Jiffies) -> Self {
        Flow {
            queue: SkbTimeQueue::new(),
            age,
            time_next_packet: 0,
            socket_hash: 0,
            qlen: 0,
            credit: 0,
            band: 0,
        }
    }
}

impl FlowItem for Flow {
    #[inline]
    fn hash(key: usize) -> usize {
        flow_hash(key)
    }

    #[inline]
    fn deadline(&self) -> u64 {
        self.time_next_packet
    }
}

#[derive(Clone, Copy)]
struct PerBandFlows {
    credit: i32,
    /// Weight of the band: 576KB, 192KB, 64KB by default.
    quantum: i32,
}

/// The end of `fq_flow_rb_insert()`, once a flow due at
/// `time_next_packet` is in the throttled heap: `q->time_next_delayed_flow`
/// is the earliest deadline there.
#[inline]
fn fq_flow_rb_insert(time_next_delayed_flow: &mut u64, time_next_packet: u64) {
    if *time_next_delayed_flow > time_next_packet {
        *time_next_delayed_flow = time_next_packet;
    }
}

/// `fq_flow_adjust_timer()`: a packet due at `time_to_send`, before
/// `flow->time_next_packet`, joined throttled `flow`: the flow is due then.
/// Due by `now`, it goes to its band's old list; else it is throttled
/// again until `time_to_send`. The flow by value: a reference would keep
/// the handle in memory on every enqueue, for this rare call.
fn fq_flow_adjust_timer(
    time_next_delayed_flow: &mut u64,
    mut flow: FlowMut<'_, Flow>,
    time_to_send: u64,
    now: u64,
) {
    if time_to_send <= now {
        // `fq_flow_unset_throttled()`.
        let band = flow.band as usize;
        flow.unthrottle(ListPair::new(band).old_flows());
        if *time_next_delayed_flow == flow.time_next_packet {
            *time_next_delayed_flow = flow.table().first_deadline().unwrap_or(u64::MAX);
        }
        flow.time_next_packet = time_to_send;
    } else {
        flow.rethrottle(|f| f.time_next_packet = time_to_send);
        fq_flow_rb_insert(time_next_delayed_flow, flow.time_next_packet);
    }
}

/// `fq_packet_beyond_horizon()`: is a packet due at `time_to_send` (ns,
/// `CLOCK_MONOTONIC`) too far in the future?
#[inline]
fn fq_packet_beyond_horizon(time_to_send: i64, cfg: &Config, now: u64) -> bool {
    time_to_send > now.wrapping_add(cfg.horizon) as i64
}

/// `fq_skb_tstamp_to_mono()`: the departure time of a packet whose
/// `tstamp` (not 0) is of clock `tstamp_type`, in `CLOCK_MONOTONIC` ns (at
/// least 1), and whether its `tstamp_type` is to be made
/// `CLOCK_MONOTONIC`. Values in and out, not the skb: a call that took the
/// skb by reference would keep it in memory on every enqueue.
fn fq_skb_tstamp_to_mono(tstamp: i64, tstamp_type: u8) -> (i64, bool) {
    const MONO_MAX: i64 = NSEC_PER_SEC as i64 * TIME_UPTIME_SEC_MAX;

    if tstamp_type == skb_clock::MONOTONIC {
        return (core::cmp::max(tstamp, 1), false);
    }
    if tstamp_type == skb_clock::TAI {
        let offs = ktime_mono_to_any(0, TkOffs::Tai);
        return (core::cmp::max(tstamp.wrapping_sub(offs), 1), false);
    }
    if tstamp > MONO_MAX {
        return (
            core::cmp::max(tstamp.wrapping_sub(ktime_mono_to_real(0)), 1),
            false,
        );
    }
    // A BPF program set `skb->tstamp` but not `tstamp_type`.
    if net_ratelimit() {
        pr_warn!("fq: likely mono tstamp with tstamp_type 0\n");
    }
    (core::cmp::max(tstamp, 1), true)
}

/// `fq_mono_to_skb_tstamp()`: `time_to_send` (ns, `CLOCK_MONOTONIC`) as a
/// `tstamp` of clock `tstamp_type` (values, as [`fq_skb_tstamp_to_mono`]).
fn fq_mono_to_skb_tstamp(tstamp_type: u8, time_to_send: i64) -> u64 {
    if tstamp_type == skb_clock::MONOTONIC {
        time_to_send as u64
    } else if tstamp_type == skb_clock::REALTIME {
        ktime_mono_to_real(time_to_send) as u64
    } else {
        ktime_mono_to_any(time_to_send, TkOffs::Tai) as u64
    }
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
    /// Packets due within it are sent now, for the device to pace (ns).
    offload_horizon: u64,
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
    /// The flows with their chains (C's `fq_root`), lists and `delayed`
    /// heap; its counts are C's `flows` and `throttled_flows`.
    table: FlowTable<Flow>,
    /// The rest, apart so that it can be borrowed beside a flow of the
    /// table (`fq_classify()` returns one).
    st: FqState,
}

/// `struct fq_sched_data` but for the flow table.
struct FqState {
    cfg: Config,
    band_nr: usize,
    band_flows: [PerBandFlows; BAND_SLOTS],
    /// Fast path queue.
    internal: Flow,
    stat_fastpath_packets: u64,
    time_next_delayed_flow: u64,
    unthrottle_latency_ns: u64,
    gc_age: Jiffies,

    band_pkt_count: [u32; BAND_SLOTS],
    inactive_flows: u32,

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

impl FqSchedData {
    /// Counts a throttled flow of `time_next_packet` (the rest of C's
    /// `fq_flow_set_throttled()`, after [`kernel::flow_table::Front::throttle`]).
    #[inline]
    fn fq_flow_throttled(&mut self, time_next_packet: u64) {
        fq_flow_rb_insert(&mut self.st.time_next_delayed_flow, time_next_packet);
        self.st.stat_throttled = self.st.stat_throttled.wrapping_add(1);
    }
}

/// The packet's own socket, if the flow of `key` is its (C's
/// `skb->sk == sk`): not for orphans, nor for the hashed flows of
/// unconnected sockets, whose keys have the low bit set.
#[inline(always)]
fn own_sock<'s>(skb: &'s FqIncoming<'_>, key: usize) -> Option<FullSockRef<'s>> {
    skb.full_sock().filter(|sk| sk.addr() == key)
}

/// Tells the packet's own socket (of the flow of `key`) that fq paces it,
/// if pacing is on; the configuration is read only for a socket, as in C.
#[inline(always)]
fn fq_set_pacing_status(skb: &FqIncoming<'_>, key: usize, cfg: &Config) {
    if let Some(sk) = own_sock(skb, key) {
        if cfg.rate_enable {
            sk.set_pacing_status_fq();
        }
    }
}

/// What [`FqState::fq_classify`] found for a packet.
enum Class<'t> {
    /// The fast path queue (C's `&q->internal`): a packet that needs no
    /// flow, or whose flow could not be made.
    Internal,
    /// The packet's flow.
    Flow(FlowMut<'t, Flow>),
    /// A new flow past the table's limit: the fast path queue too (C's
    /// case of a flow it cannot allocate). A variant of its own: with two,
    /// enqueue compiled to 9 to 13 more instructions a packet on every
    /// fq_bench row, the fast path's included.
    Full,
}

impl FqState {
    /// `fq_fastpath_check()`; `table` is the flows'.
    #[inline]
    fn fq_fastpath_check(
        &self,
        table: &FlowTable<Flow>,
        sch: &Qdisc<Fq>,
        skb: &FqIncoming<'_>,
        now: u64,
    ) -> bool {
        // Due now, or within the pacing offload horizon.
        if time_to_send(skb) > now.wrapping_add(self.cfg.offload_horizon) {
            return false;
        }
        if sch.qlen() != 0 {
            // Packets are queued, but the fast path may still be used if
            // none is eligible now (all scheduled later) or fast path ones.
            let idle = self.inactive_flows.wrapping_add(table.throttled_len());
            if table.len() != idle {
                return false;
            }
            // Keep Fair Queue mode under pressure.
            if self.internal.qlen >= 8 {
                return false;
            }
            // Delayed flows that are due must go first.
            if self.time_next_delayed_flow <= now.wrapping_add(self.cfg.offload_horizon) {
                return false;
            }
        }
        // A non-TCP socket with SO_MAX_PACING_RATE (classified: the socket
        // is full). The rate is tested first: a TCP socket without the
        // option reads one field here.
        if let Some(sk) = skb.full_sock() {
            if sk.max_pacing_rate() != u64::MAX && !sk.is_tcp() {
                return false;
            }
        }
        self.cfg.flow_max_rate == u64::MAX
    }

    /// `fq_classify()`: the flow of `skb` in `table`, found or made, or the
    /// fast path queue; idle flows met on the way are collected. Returns
    /// the packet classified: orphaned unless its socket is full and keeps
    /// it.
    #[inline]
    fn fq_classify<'t, 'a>(
        &mut self,
        table: &'t mut FlowTable<Flow>,
        sch: &Qdisc<Fq>,
        skb: Incoming<'a, Fq>,
        now: u64,
    ) -> (FqIncoming<'a>, Class<'t>) {
        // SYNACKs of request sockets and listeners are not part of a flow
        // yet and must not be rate limited, nor the RSTs and ACKs TCP sends
        // of TIME_WAIT sockets (`sk_listener_or_tw()`): treat them as
        // orphans. The state is read once (C reads it twice: that test,
        // then the one for TCP_CLOSE). Sockets in TCP_CLOSE (unconnected
        // UDP) send to many destinations: hash. The low bit set keeps
        // these keys apart from socket addresses.
        let (skb, key) = match skb.classify_sock(tcp_state::flag(tcp_state::LISTEN)) {
            SockClass::Orphan(mut skb) => {
                let hash = skb.get_hash() & self.cfg.orphan_mask;
                (skb.orphan(), ((hash as usize) << 1) | 1)
            }
            SockClass::Full(mut skb, state) => match skb.full_sock() {
                Some(sk) if state != tcp_state::CLOSE => {
                    let addr = sk.addr();
                    (skb, addr)
                }
                _ => {
                    let hash = skb.get_hash() & self.cfg.orphan_mask;
                    (skb, ((hash as usize) << 1) | 1)
                }
            },
        };
        if self.fq_fastpath_check(table, sch, &skb, now) {
            self.stat_fastpath_packets = self.stat_fastpath_packets.wrapping_add(1);
            fq_set_pacing_status(&skb, key, &self.cfg);
            return (skb, Class::Internal);
        }

        // jiffies is read only if an idle flow is met, as in C. The
        // closures own what they use (`move`): captured by reference, it
        // would be stored on the stack before every lookup, for the rare
        // one that collects or makes a flow. Nothing else is kept across
        // the lookup: what the found flow needs is read again after it
        // (the socket from the skb, the quantum from the configuration),
        // not held in registers that a call would make spill.
        let gc_age = self.gc_age;
        let mut now_j = None;
        let Lookup {
            flow,
            created,
            collected,
            full,
        } = table.lookup(
            key,
            usize::MAX,
            move |f| {
                time_after(
                    *now_j.get_or_insert_with(jiffies),
                    f.age.wrapping_add(gc_age),
                )
            },
            || Flow::new(detached_age()),
            &Atomic,
        );
        // C's u32/u64 counters, wrapping as C's do; most lookups collect
        // nothing and leave them be.
        if collected != 0 {
            self.inactive_flows = self.inactive_flows.wrapping_sub(collected);
            self.stat_gc_flows = self.stat_gc_flows.wrapping_add(u64::from(collected));
        }
        let Some(mut f) = flow else {
            // Out of memory, or of room in the table (`full`): C's case
            // of a flow it cannot allocate, the fast path queue.
            self.stat_allocation_errors = self.stat_allocation_errors.wrapping_add(1);
            if full {
                return (skb, Class::Full);
            }
            return (skb, Class::Internal);
        };
        if created {
            self.inactive_flows = self.inactive_flows.wrapping_add(1);
            f.credit = self.cfg.initial_quantum as i32;
            if let Some(sk) = own_sock(&skb, f.key()) {
                f.socket_hash = sk.hash();
                if self.cfg.rate_enable {
                    sk.set_pacing_status_fq();
                }
            }
        } else if let Some(sk) = own_sock(&skb, f.key()) {
            // The socket may have been freed and reallocated: if its hash
            // changed, it is a new flow in an old slot.
            let sk_hash = sk.hash();
            if f.socket_hash != sk_hash {
                f.credit = self.cfg.initial_quantum as i32;
                f.socket_hash = sk_hash;
                if self.cfg.rate_enable {
                    sk.set_pacing_status_fq();
                }
                let fband = f.band as usize;
                f.unthrottle(ListPair::new(fband).old_flows());
                f.time_next_packet = 0;
            }
        }
        (skb, Class::Flow(f))
    }
}

impl FqSchedData {
    /// `flow_queue_add()`.
    fn flow_queue_add(f: &mut Flow, skb: FqSkb) {
        f.queue.push(skb, time_to_send_q);
    }

    /// Queues `skb` on the fast path queue (`&q->internal` in C): a packet
    /// of no flow, or of a flow that could not be made.
    #[inline]
    fn internal_enqueue<'a>(internal: &mut Flow, skb: FqIncoming<'a>) -> XmitStatus<'a> {
        let (skb, status) = skb.queue();
        internal.qlen = internal.qlen.wrapping_add(1);
        Self::flow_queue_add(internal, skb);
        status
    }

    /// `fq_check_throttled()`.
    #[inline]
    fn fq_check_throttled(&mut self, now: u64) {
        if self.st.time_next_delayed_flow > now.wrapping_add(self.st.cfg.offload_horizon) {
            return;
        }
        self.fq_unthrottle(now);
    }

    /// Returns the flows due by `now` plus the offload horizon to the old
    /// lists.
    #[inline(never)]
    fn fq_unthrottle(&mut self, now: u64) {
        // Unthrottle latency EWMA: cheap, and helps to diagnose timer
        // problems. Only a late wakeup is a sample: with an offload
        // horizon, flows are unthrottled before they are due.
        let sample = now.wrapping_sub(self.st.time_next_delayed_flow);
        if sample as i64 > 0 {
            self.st.unthrottle_latency_ns = self
                .st
                .unthrottle_latency_ns
                .wrapping_sub(self.st.unthrottle_latency_ns >> 3)
                .wrapping_add(sample >> 3);
        }
        let now = now.wrapping_add(self.st.cfg.offload_horizon);

        self.st.time_next_delayed_flow = u64::MAX;
        while let Some(f) = self.table.first_throttled() {
            if f.time_next_packet > now {
                self.st.time_next_delayed_flow = f.time_next_packet;
                break;
            }
            let band = f.band as usize;
            f.unthrottle(ListPair::new(band).old_flows());
        }
    }

    /// `fq_dequeue()`.
    #[inline(always)]
    fn fq_dequeue(&mut self, sch: &Qdisc<Fq>) -> Option<FqSkb> {
        // C's `if (!sch->q.qlen)` is the adapter's: it calls dequeue only
        // while packets are counted. The fast path queue goes first.
        if let Some(skb) = self.st.internal.queue.pop_front(time_to_send_q) {
            self.st.internal.qlen = self.st.internal.qlen.wrapping_sub(1);
            // `fq_dequeue_skb()`: the adapter uncounts the skb from
            // `q.qlen` and the backlog as it returns.
            sch.bstats_update(&skb);
            return Some(skb);
        }

        let now = ktime_get_ns();
        self.fq_check_throttled(now);
        let mut retry = 0;
        // `q->band_nr`, kept in a register for the loop.
        let mut band = self.st.band_nr;
        let skb = loop {
            // `fq_pband_head_select()`.
            let pband = ListPair::new(band);
            let head = if self.st.band_flows[band & BAND_MASK].credit <= 0 {
                None
            } else {
                self.table.front_of(pband)
            };
            let Some(mut f) = head else {
                // This band is done: move to the next with credit.
                let mut found = false;
                while {
                    retry += 1;
                    retry <= FQ_BANDS
                } {
                    band = band.wrapping_add(1);
                    if band == FQ_BANDS {
                        band = 0;
                    }
                    self.st.band_nr = band;
                    let pband = &mut self.st.band_flows[band & BAND_MASK];
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
                if self.st.time_next_delayed_flow != u64::MAX {
                    sch.watchdog_schedule_range_ns(
                        self.st.time_next_delayed_flow,
                        u64::from(self.st.cfg.timer_slack),
                    );
                }
                return None;
            };
            retry = 0;
            let from_new = f.list() == pband.new_flows();
            // C's `f`; the handle `f` moves it between lists.
            let fl: &mut Flow = &mut f;
            if fl.credit <= 0 {
                fl.credit = fl.credit.wrapping_add(self.st.cfg.quantum as i32);
                // The old list of the flow's band, which a packet of
                // another priority may have changed (as in C).
                let fband = fl.band as usize;
                f.rotate(ListPair::new(fband).old_flows());
                continue;
            }

            let Some(head) = fl.queue.peek(time_to_send_q) else {
                // Force a pass through old_flows to prevent starvation.
                if from_new {
                    let fband = fl.band as usize;
                    f.rotate(ListPair::new(fband).old_flows());
                } else {
                    fl.age = detached_age();
                    f.detach();
                }
                continue;
            };
            let time_next_packet = core::cmp::max(head.key(), fl.time_next_packet);
            if now.wrapping_add(self.st.cfg.offload_horizon) < time_next_packet {
                fl.time_next_packet = time_next_packet;
                f.throttle();
                self.fq_flow_throttled(time_next_packet);
                continue;
            }
            let mut skb = head.pop();
            // `fq_dequeue_skb()`: the adapter uncounts the skb from
            // `q.qlen` and the backlog as it returns.
            sch.bstats_update(&skb);
            if (now
                .wrapping_sub(time_next_packet)
                .wrapping_sub(self.st.cfg.ce_threshold) as i64)
                > 0
            {
                // As C, every packet past the threshold counts, whatever
                // set_ce() made of it: marked, not ECN-capable, or left
                // unmarked (shared, or its header copy failed).
                skb.set_ce();
                self.st.stat_ce_mark = self.st.stat_ce_mark.wrapping_add(1);
            }
            fl.qlen = fl.qlen.wrapping_sub(1);
            if fl.qlen == 0 {
                self.st.inactive_flows = self.st.inactive_flows.wrapping_add(1);
            }
            let count = &mut self.st.band_pkt_count[skb_band(&skb) & BAND_MASK];
            *count = count.wrapping_sub(1);

            let plen = skb.qdisc_pkt_len();
            fl.credit = fl.credit.wrapping_sub(plen as i32);
            let pband = &mut self.st.band_flows[band & BAND_MASK];
            pband.credit = pband.credit.wrapping_sub(plen as i32);
            if self.st.cfg.rate_enable && fq_pace(&self.st.cfg, fl, &skb, plen, now) {
                self.st.stat_pkts_too_long = self.st.stat_pkts_too_long.wrapping_add(1);
            }
            break skb;
        };
        Some(skb)
    }

    /// `fq_reset()`: drop all packets and flows; statistics stay (the
    /// adapter zeroes the qdisc's queue counters before, as C's
    /// `WRITE_ONCE()`s here do, and after).
    fn fq_reset(&mut self, free: &mut RtnlFree<'_>) {
        // The packets are freed after RTNL is released, outside the root
        // lock (C's `fq_flow_purge()`); the flows here.
        self.st.internal.queue.free_all(free);
        self.st.internal.qlen = 0;
        self.table.clear_with(|f| f.queue.free_all(free));
        self.st.band_pkt_count = [0; BAND_SLOTS];
        self.st.inactive_flows = 0;
    }

    /// `fq_rehash()`: move the flows to `new` chains, dropping idle ones;
    /// returns the old ones, to be freed outside the lock.
    fn fq_rehash(&mut self, new: Chains<Flow>, new_log: u8) -> Chains<Flow> {
        let now_j = jiffies();
        let gc_age = self.st.gc_age;
        let (old, fcnt) = self.table.rehash(
            new,
            |f| time_after(now_j, f.age.wrapping_add(gc_age)),
            &Atomic,
        );
        self.st.inactive_flows = self.st.inactive_flows.wrapping_sub(fcnt);
        self.st.stat_gc_flows = self.st.stat_gc_flows.wrapping_add(u64::from(fcnt));
        self.st.cfg.fq_trees_log = new_log;
        old
    }
}

/// The pacing part of `fq_dequeue()`: when may flow `f` send again.
/// Returns `true` if the delay was clamped (`stat_pkts_too_long`).
///
/// Always inlined, as in C: an out-of-line call on every dequeued packet
/// cost more than its common exits (credit left, no rate to enforce).
#[inline(always)]
fn fq_pace(cfg: &Config, f: &mut Flow, skb: &FqSkb, mut plen: u32, now: u64) -> bool {
    let mut rate = cfg.flow_max_rate;
    // With an EDT timestamp, time_next_packet only moves if this qdisc
    // enforces a flow max rate.
    if skb.tstamp() == 0 {
        // Classified at enqueue: the socket is full, no test of its kind.
        if let Some(sk) = skb.full_sock() {
            rate = core::cmp::min(sk.pacing_rate(), rate);
        }
        if rate <= u64::from(cfg.low_rate_threshold) {
            f.credit = 0;
        } else {
            if f.credit > 0 {
                return false;
            }
            plen = core::cmp::max(plen, cfg.quantum);
        }
    }
    if rate == u64::MAX {
        return false;
    }
    let mut too_long = false;
    let mut len = u64::from(plen) * NSEC_PER_SEC;
    // A zero rate leaves `len` as is, as C's `if (likely(rate))`.
    len = len.checked_div(rate).unwrap_or(len);
    // The socket rate can change later: clamp the delay to 1 s.
    if len > NSEC_PER_SEC {
        len = NSEC_PER_SEC;
        too_long = true;
    }
    // Account for schedule/timer drift: time_next_packet was set when the
    // prior packet was sent, and now can be late (or early, within the
    // offload horizon: no drift to make up).
    if f.time_next_packet != 0 {
        let drift = now.wrapping_sub(f.time_next_packet) as i64;
        if drift > 0 {
            len -= core::cmp::min(len / 2, drift as u64);
        }
    }
    f.time_next_packet = now.wrapping_add(len);
    too_long
}

/// The attribute policy, as C's `fq_policy`.
static IQ_RANGE: Range = Range::new(0, 1 << 20);
const TCA_FQ_N: usize = uapi::TCA_FQ_OFFLOAD_HORIZON as usize + 1;
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
static DEFRATE_WARNED: atomic::Atomic<usize> = atomic::Atomic::new(0);

/// Validates the attributes in `opt` against `old` and returns the new
/// configuration; applies nothing. `max_offload_horizon` is the device's
/// (`qdisc_dev(sch)->max_pacing_offload_horizon`, ns).
fn fq_parse(
    opt: &NlAttr,
    old: &Config,
    max_offload_horizon: u64,
    extack: &mut ExtAck<'_>,
) -> Result<Config> {
    // C parses without an extack: no parser warning on success (C's
    // too), the parser's message on failure (C gives none).
    let tb: Attrs<'_, TCA_FQ_N> = opt.parse_nested_quiet(&FQ_POLICY, extack)?;
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
        let last = DEFRATE_WARNED.load(Relaxed);
        if last == 0 || time_after(now, last.wrapping_add(msecs_to_jiffies(5000))) {
            DEFRATE_WARNED.store(now, Relaxed);
            pr_warn!("sch_fq: defrate {} ignored.\n", v);
        }
    }
    if let Some(rate) = tb.u32(uapi::TCA_FQ_FLOW_MAX_RATE) {
        c.flow_max_rate = if rate == u32::MAX {
            u64::MAX
        } else {
            u64::from(rate)
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
        c.ce_threshold = NSEC_PER_USEC * u64::from(v);
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_TIMER_SLACK) {
        c.timer_slack = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_HORIZON) {
        c.horizon = NSEC_PER_USEC * u64::from(v);
    }
    if let Some(v) = tb.u8(uapi::TCA_FQ_HORIZON_DROP) {
        c.horizon_drop = v;
    }
    if let Some(v) = tb.u32(uapi::TCA_FQ_OFFLOAD_HORIZON) {
        let offload_horizon = NSEC_PER_USEC * u64::from(v);

        if offload_horizon <= max_offload_horizon {
            c.offload_horizon = offload_horizon;
        } else {
            extack.set_msg(c_str!("sch_fq: invalid offload_horizon"));
            return Err(EINVAL);
        }
    }
    Ok(c)
}

/// The `fq` qdisc.
struct Fq;

impl FqSchedData {
    /// Applies a validated configuration, but for `sch->limit`, which the
    /// caller sets.
    fn apply(&mut self, c: &Config) {
        let log = self.st.cfg.fq_trees_log;
        self.st.cfg = *c;
        // The bucket array is swapped separately (fq_rehash).
        self.st.cfg.fq_trees_log = log;
        for i in 0..FQ_BANDS {
            self.st.band_flows[i].quantum = c.weights[i];
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
            ce_threshold: NSEC_PER_USEC * u64::from(u32::MAX),
            horizon: 10 * NSEC_PER_SEC,
            offload_horizon: 0,
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
            Some(opt) => fq_parse(opt, &defaults, sch.max_pacing_offload_horizon(), extack)?,
            None => defaults,
        };
        let band = PerBandFlows {
            credit: 0,
            quantum: 0,
        };
        let mut q = FqSchedData {
            table: FlowTable::with_max_len(
                Chains::new(cfg.fq_trees_log, sch.process_context())?,
                FQ_MAX_FLOWS,
            ),
            st: FqState {
                cfg,
                band_nr: 0,
                band_flows: [band; BAND_SLOTS],
                internal: Flow::new(0),
                stat_fastpath_packets: 0,
                time_next_delayed_flow: u64::MAX,
                unthrottle_latency_ns: 0,
                gc_age: msecs_to_jiffies(3000),
                band_pkt_count: [0; BAND_SLOTS],
                inactive_flows: 0,
                stat_throttled: 0,
                stat_gc_flows: 0,
                stat_band_drops: [0; BAND_SLOTS],
                stat_ce_mark: 0,
                stat_horizon_drops: 0,
                stat_horizon_caps: 0,
                stat_flows_plimit: 0,
                stat_pkts_too_long: 0,
                stat_allocation_errors: 0,
            },
        };
        q.apply(&cfg);
        q.st.cfg.fq_trees_log = cfg.fq_trees_log;
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
        let band = q.st.cfg.prio2band[skb.priority() as usize & TC_PRIO_MAX];
        if q.st.band_pkt_count[band as usize & BAND_MASK] >= sch.limit() {
            let drops = &mut q.st.stat_band_drops[band as usize & BAND_MASK];
            *drops = drops.wrapping_add(1);
            return to_free.drop(skb, DropReason::BandLimit);
        }

        let now = ktime_get_ns();
        if skb.tstamp() == 0 {
            set_time_to_send(&mut skb, now);
        } else {
            let (mut time_to_send, set_mono) =
                fq_skb_tstamp_to_mono(skb.tstamp() as i64, skb.tstamp_type());
            if set_mono {
                skb.set_tstamp_type(skb_clock::MONOTONIC);
            }

            // Is the timestamp too far in the future?
            if fq_packet_beyond_horizon(time_to_send, &q.st.cfg, now) {
                if q.st.cfg.horizon_drop != 0 {
                    q.st.stat_horizon_drops = q.st.stat_horizon_drops.wrapping_add(1);
                    return to_free.drop(skb, DropReason::HorizonLimit);
                }
                q.st.stat_horizon_caps = q.st.stat_horizon_caps.wrapping_add(1);
                time_to_send = now.wrapping_add(q.st.cfg.horizon) as i64;
                let tstamp = fq_mono_to_skb_tstamp(skb.tstamp_type(), time_to_send);
                skb.set_tstamp(tstamp);
            }
            set_time_to_send(&mut skb, time_to_send as u64);
        }

        let (mut skb, class) = q.st.fq_classify(&mut q.table, sch, skb, now);
        let mut f = match class {
            Class::Flow(f) => f,
            Class::Internal => return FqSchedData::internal_enqueue(&mut q.st.internal, skb),
            Class::Full => return FqSchedData::internal_enqueue(&mut q.st.internal, skb),
        };
        let cfg = &q.st.cfg;

        // C compares `int qlen` with `u32 flow_plimit` as unsigned.
        if f.qlen as u32 >= cfg.flow_plimit {
            q.st.stat_flows_plimit = q.st.stat_flows_plimit.wrapping_add(1);
            return to_free.drop(skb, DropReason::FlowLimit);
        }
        // As in C, a detached flow joins the new list of the band it had (0
        // for a new flow), not of this packet's band.
        if f.is_detached() {
            let old_band = f.band as usize;
            f.attach(ListPair::new(old_band).new_flows());
            if time_after(jiffies(), f.age.wrapping_add(cfg.flow_refill_delay)) {
                f.credit = core::cmp::max(f.credit as u32, cfg.quantum) as i32;
            }
        }
        f.band = band;
        let was_empty = f.qlen == 0;
        f.qlen = f.qlen.wrapping_add(1);
        set_skb_band(&mut skb, band);
        // Read before the skb is queued, C after: the same values.
        let skb_time_to_send = time_to_send(&skb);
        let skb_tstamp = skb.tstamp();
        let (skb, status) = skb.queue();
        FqSchedData::flow_queue_add(&mut f, skb);

        if skb_time_to_send < f.time_next_packet
            && skb_tstamp != 0
            && f.is_throttled()
            && cfg.flow_max_rate == u64::MAX
        {
            fq_flow_adjust_timer(&mut q.st.time_next_delayed_flow, f, skb_time_to_send, now);
        }
        if was_empty {
            q.st.inactive_flows = q.st.inactive_flows.wrapping_sub(1);
        }
        let count = &mut q.st.band_pkt_count[band as usize & BAND_MASK];
        *count = count.wrapping_add(1);
        status
    }

    // Into the adapter's `dequeue` callback, the data path (the control
    // path's drop to a lowered limit keeps a copy).
    #[inline(always)]
    fn dequeue(sch: &Qdisc<Self>, q: &mut FqSchedData) -> Option<Queued<Self>> {
        q.fq_dequeue(sch).map(FqSkb::forget_sock)
    }

    fn reset(_sch: &Qdisc<Self>, q: &mut FqSchedData, free: &mut RtnlFree<'_>) {
        q.fq_reset(free);
    }

    fn change(sch: &mut QdiscChange<'_, Self>, opt: &NlAttr, extack: &mut ExtAck<'_>) -> Result {
        // Validate on a snapshot; nothing is applied if anything is wrong.
        let old = sch.with_lock(|_, q| q.st.cfg);
        let cfg = fq_parse(opt, &old, sch.max_pacing_offload_horizon(), extack)?;
        let new_root = if cfg.fq_trees_log != old.fq_trees_log {
            Some(Chains::new(cfg.fq_trees_log, sch.process_context())?)
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
        let c = &q.st.cfg;
        // TCA_FQ_FLOW_DEFAULT_RATE is not used any more.
        msg.nested(sched::TCA_OPTIONS, |msg| {
            msg.put_u32(uapi::TCA_FQ_PLIMIT, sch.limit())?;
            msg.put_u32(uapi::TCA_FQ_FLOW_PLIMIT, c.flow_plimit)?;
            msg.put_u32(uapi::TCA_FQ_QUANTUM, c.quantum)?;
            msg.put_u32(uapi::TCA_FQ_INITIAL_QUANTUM, c.initial_quantum)?;
            msg.put_u32(uapi::TCA_FQ_RATE_ENABLE, u32::from(c.rate_enable))?;
            msg.put_u32(
                uapi::TCA_FQ_FLOW_MAX_RATE,
                core::cmp::min(c.flow_max_rate, u64::from(u32::MAX)) as u32,
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
            msg.put_u32(uapi::TCA_FQ_BUCKETS_LOG, u32::from(c.fq_trees_log))?;
            msg.put_u32(uapi::TCA_FQ_TIMER_SLACK, c.timer_slack)?;
            msg.put_u32(uapi::TCA_FQ_HORIZON, (c.horizon / NSEC_PER_USEC) as u32)?;
            msg.put_u32(
                uapi::TCA_FQ_OFFLOAD_HORIZON,
                (c.offload_horizon / NSEC_PER_USEC) as u32,
            )?;
            msg.put_u8(uapi::TCA_FQ_HORIZON_DROP, c.horizon_drop)?;
            let mut prio = [0u8; 20];
            prio[..4].copy_from_slice(&(FQ_BANDS as i32).to_ne_bytes());
            prio[4..].copy_from_slice(&c.prio2band);
            msg.put_bytes(uapi::TCA_FQ_PRIOMAP, &prio)?;
            let mut weights = [0u8; 12];
            for i in 0..FQ_BANDS {
                weights[4 * i..4 * i + 4]
                    .copy_from_slice(&q.st.band_flows[i].quantum.to_ne_bytes());
            }
            msg.put_bytes(uapi::TCA_FQ_WEIGHTS, &weights)
        })
    }

    fn dump_stats(_sch: &Qdisc<Self>, q: &FqSchedData, d: &mut StatsDump<'_>) -> Result {
        let st = uapi::tc_fq_qd_stats {
            gc_flows: q.st.stat_gc_flows,
            highprio_packets: 0,
            tcp_retrans: 0,
            throttled: q.st.stat_throttled,
            flows_plimit: q.st.stat_flows_plimit,
            pkts_too_long: q.st.stat_pkts_too_long,
            allocation_errors: q.st.stat_allocation_errors,
            time_next_delayed_flow: q
                .st
                .time_next_delayed_flow
                .wrapping_add(u64::from(q.st.cfg.timer_slack))
                .wrapping_sub(ktime_get_ns()) as i64,
            flows: q.table.len(),
            inactive_flows: q.st.inactive_flows,
            throttled_flows: q.table.throttled_len(),
            unthrottle_latency_ns: core::cmp::min(q.st.unthrottle_latency_ns, u64::from(u32::MAX))
                as u32,
            ce_mark: q.st.stat_ce_mark,
            horizon_drops: q.st.stat_horizon_drops,
            horizon_caps: q.st.stat_horizon_caps,
            fastpath_packets: q.st.stat_fastpath_packets,
            band_drops: core::array::from_fn(|i| q.st.stat_band_drops[i]),
            band_pkt_count: core::array::from_fn(|i| q.st.band_pkt_count[i]),
            pad: 0,
        };
        d.copy_app(&st)
    }
}
