// SPDX-License-Identifier: GPL-2.0

//! Packet schedulers (qdiscs).
//!
//! C headers: [`include/net/sch_generic.h`](srctree/include/net/sch_generic.h),
//! [`include/net/pkt_sched.h`](srctree/include/net/pkt_sched.h)
//!
//! A qdisc is a type implementing [`QdiscOps`]; [`module_qdisc!`] declares
//! the module that registers it with `register_qdisc()` under
//! [`QdiscOps::ID`], so `tc qdisc add ... ID` creates instances. Each
//! instance keeps its state, [`QdiscOps::Data`], in the qdisc's private
//! area next to a `qdisc_watchdog`.
//!
//! # Contexts
//!
//! What a callback may do follows from the context the stack calls it in,
//! and each context has its own handle:
//!
//! - enqueue, dequeue and reset run under the qdisc's root lock (reset also
//!   from `__qdisc_destroy()`, when nothing else can reach the qdisc), and
//!   the adapters take the lock (`sch_tree_lock()`) around dump and
//!   dump_stats. These get a [`Qdisc`] and the state as `&mut Data` or
//!   `&Data`; a `Qdisc` has no way to take the lock, so none of them can
//!   deadlock on it or make a second reference to the state. Reset (under
//!   RTNL too) also gets an [`RtnlFree`], which frees the packets it is
//!   given after RTNL is released, as C's qdiscs free theirs.
//! - init runs once on a qdisc no other context can see yet, before the
//!   state exists: it gets a [`QdiscInit`], which cannot reach the state.
//! - change runs under RTNL without the root lock: it gets a
//!   [`QdiscChange`], whose [`QdiscChange::with_lock`] takes the lock for
//!   the duration of a closure that cannot take it again.
//!
//! # Queue counts
//!
//! The parents of a qdisc keep their active classes by its `qlen`, so the
//! count follows the skbs by type: enqueue gets an [`Incoming`] and
//! returns the [`XmitStatus`] that only [`Incoming::queue`] (counted, a
//! [`Queued`] to keep) or [`ToFree::drop`] (not counted) makes, and
//! dequeue returns a [`Queued`], which its adapter uncounts.

use crate::{
    bindings,
    context::ProcessContext,
    error::{from_result, to_result, Result, VTABLE_DEFAULT_ERROR},
    ffi::c_int,
    net::netlink::{ExtAck, NlAttr, NlMsg},
    net::skbuff::{RtnlFree, SkBuff},
    prelude::*,
    str::CStr,
    sync::atomic::{Atomic, Full},
    types::Opaque,
    ThisModule,
};
use core::{
    marker::PhantomData,
    mem::{size_of, MaybeUninit},
    ptr::{self, NonNull},
};

mod handles;
mod packet;
mod stats;

pub use handles::{QdiscChange, QdiscInit, QdiscLocked};
pub use packet::{
    AnySock, ClassifiedSkb, FullOrNoSock, Incoming, Queued, SockClass, SockKnown, ToFree, ToOrphan,
    XmitStatus,
};
pub use stats::StatsDump;

// Jiffies, rates and times are `unsigned long` in C; these abstractions
// return them as `u64`, which is exact only where `unsigned long` is 64
// bits wide: the module is built for 64-bit kernels only (`net.rs`).
const _: () = assert!(size_of::<core::ffi::c_ulong>() == size_of::<u64>());
// With 64-bit longs `u64_stats_t` is one `long` (`local64_t`) and
// `u64_stats_sync` is empty, so `u64_stats_add()` is the plain add of
// `Qdisc::bstats_update()`; a layout where that is not so fails here.
const _: () = assert!(
    size_of::<bindings::u64_stats_t>() == size_of::<i64>()
        && size_of::<bindings::u64_stats_sync>() == 0
);

/// The attribute that nests a qdisc's options (`TCA_OPTIONS`).
pub const TCA_OPTIONS: u32 = bindings::TCA_OPTIONS;

/// A qdisc instance whose ops are `T`, as its locked callbacks see it.
///
/// # Invariants
///
/// The wrapped qdisc was created from the [`OpsTable`] of `T`, so its
/// private area is a `Priv<T>`. References are made only by the adapters,
/// for the duration of a callback that holds the qdisc's root lock or has
/// the qdisc to itself (reset from destroy): every holder may read and
/// write the qdisc's fields. `Qdisc` is neither `Send` nor `Sync`.
#[repr(transparent)]
pub struct Qdisc<T: QdiscOps>(Opaque<bindings::Qdisc>, PhantomData<T>);

#[repr(C)]
struct Priv<T: QdiscOps> {
    watchdog: bindings::qdisc_watchdog,
    // Zeroed by qdisc_alloc(): false until `data` is written.
    initialised: bool,
    data: MaybeUninit<T::Data>,
}

impl<T: QdiscOps> Qdisc<T> {
    /// # Safety
    ///
    /// `ptr` must be a qdisc made from `T`'s ops, valid for `'a`, and the
    /// caller must hold its root lock (or have it to itself) for `'a`.
    #[inline]
    unsafe fn from_raw<'a>(ptr: *mut bindings::Qdisc) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    fn as_ptr(&self) -> *mut bindings::Qdisc {
        self.0.get()
    }

    /// The private area, `qdisc_priv()`.
    ///
    /// # Safety
    ///
    /// `sch` must be a valid qdisc made from `T`'s ops.
    #[inline]
    unsafe fn priv_of(sch: *mut bindings::Qdisc) -> *mut Priv<T> {
        // SAFETY: The private area is `privdata`, which follows the qdisc
        // and is `priv_size` bytes, the size of `Priv<T>` (`OpsTable`).
        unsafe { core::ptr::addr_of_mut!((*sch).privdata).cast::<Priv<T>>() }
    }

    /// The state.
    ///
    /// # Safety
    ///
    /// `sch` must be a valid, initialised qdisc made from `T`'s ops, whose
    /// root lock the caller holds (or which it has to itself) for `'a`, and
    /// no other reference to the state may exist for `'a`.
    #[inline]
    unsafe fn data_mut<'a>(sch: *mut bindings::Qdisc) -> &'a mut T::Data {
        // SAFETY: By the caller's promise.
        unsafe { (*Self::priv_of(sch)).data.assume_init_mut() }
    }

    /// Returns the queue limit in packets (`sch->limit`).
    #[inline]
    pub fn limit(&self) -> u32 {
        // SAFETY: The qdisc is valid and its fields ours (type invariant).
        unsafe { (*self.as_ptr()).limit }
    }

    /// Sets the queue limit in packets (`sch->limit`).
    #[inline]
    pub fn set_limit(&self, limit: u32) {
        // SAFETY: As for `limit`: the root lock is held (type invariant).
        unsafe { (*self.as_ptr()).limit = limit };
    }

    /// Returns the number of packets queued (`sch->q.qlen`).
    #[inline]
    pub fn qlen(&self) -> u32 {
        // SAFETY: As for `limit`.
        unsafe { (*self.as_ptr()).q.qlen }
    }

    /// `T::dequeue`, with the skb it returns uncounted: `sch->q.qlen--`
    /// and the backlog in bytes. Only the adapters call it, so a qdisc
    /// cannot lower its count for an skb that did not leave.
    ///
    /// `T::dequeue` is called only while the qdisc counts a packet (the
    /// `if (!sch->q.qlen)` C's dequeues begin with), and nothing it can
    /// reach lowers the count: a `Qdisc` has no method that does, and
    /// dropping to a limit needs the handle of `change`. So the count is
    /// at least 1 when the packet it returns leaves, and the decrement
    /// cannot wrap: no parent ever sees a packet leave a qdisc it believes
    /// empty, even from a qdisc that kept a [`Queued`] across a reset (that
    /// one leaves in place of a counted one).
    ///
    /// Inlined into the adapter's `dequeue`, the data path: a call there
    /// costs as much as fq's own bookkeeping of a packet.
    #[inline(always)]
    fn dequeue_counted(&self, q: &mut T::Data) -> Option<SkBuff> {
        if self.qlen() == 0 {
            return None;
        }
        let skb = T::dequeue(self, q)?.0;
        let len = skb.qdisc_pkt_len();
        let p = self.as_ptr();
        // SAFETY: The qdisc is valid and locked (type invariant); place
        // expressions on the two fields, no reference to the whole qdisc,
        // whose `state` other CPUs change atomically meanwhile. Each is
        // written once, as `qdisc_qlen_dec()` and `qstats_backlog_sub()`
        // do (`WRITE_ONCE()`), for the readers that do not take the lock.
        unsafe {
            let qlen = ptr::addr_of_mut!((*p).q.qlen);
            // At least 1 (above): no wrap, and no overflow check to pay.
            ptr::write_volatile(qlen, (*qlen).wrapping_sub(1));
            // The backlog is statistics only: it wraps, as C's does.
            let backlog = ptr::addr_of_mut!((*p).qstats.backlog);
            ptr::write_volatile(backlog, (*backlog).wrapping_sub(len));
        }
        Some(skb)
    }

    /// [`Self::dequeue_counted`] out of line, for the control path
    /// (dropping to a lowered limit), which need not carry a copy of
    /// `T::dequeue`.
    #[inline(never)]
    fn dequeue_counted_cold(&self, q: &mut T::Data) -> Option<SkBuff> {
        self.dequeue_counted(q)
    }

    /// Counts `skb` as sent (`qdisc_bstats_update()`).
    #[inline]
    pub fn bstats_update(&self, skb: &SkBuff) {
        let bytes = u64::from(skb.qdisc_pkt_len());
        let packets = u64::from(skb.qdisc_pkt_segs());
        // SAFETY: As for `limit`. With 64-bit longs (checked at the top of
        // this file) `u64_stats_sync` is empty and `u64_stats_add()` a
        // plain add to the counter (`local64_add()`): the writers of a
        // qdisc's `bstats` are serialised by its root lock, which we hold,
        // and readers use `u64_stats_read()`, a single untorn aligned load,
        // as the volatile store here is.
        unsafe {
            let b = ptr::addr_of_mut!((*self.as_ptr()).bstats);
            let bytes_p = ptr::addr_of_mut!((*b).bytes.v.a.a.counter);
            let packets_p = ptr::addr_of_mut!((*b).packets.v.a.a.counter);
            ptr::write_volatile(
                bytes_p,
                ptr::read_volatile(bytes_p).wrapping_add(bytes as i64),
            );
            ptr::write_volatile(
                packets_p,
                ptr::read_volatile(packets_p).wrapping_add(packets as i64),
            );
        }
    }

    /// Arms the watchdog to run the qdisc again at `expires` (ns,
    /// `CLOCK_MONOTONIC`), allowing the timer `slack` ns later to coalesce
    /// wakeups (`qdisc_watchdog_schedule_range_ns()`).
    #[inline]
    pub fn watchdog_schedule_range_ns(&self, expires: u64, slack: u64) {
        // SAFETY: The watchdog was initialised before `init` and lives in
        // the private area as long as the qdisc; the root lock serialises
        // its users (type invariant).
        unsafe {
            bindings::qdisc_watchdog_schedule_range_ns(
                ptr::addr_of_mut!((*Self::priv_of(self.as_ptr())).watchdog),
                expires,
                slack,
            )
        };
    }

    /// Takes a packet that `peek` had set aside (`sch->gso_skb`), with its
    /// accounting undone: the first half of `qdisc_dequeue_internal()`.
    #[inline]
    fn take_peeked(&self) -> Option<SkBuff> {
        // SAFETY: The qdisc is valid and locked (type invariant).
        let skb = unsafe { bindings::qdisc_dequeue_gso_skb(self.as_ptr()) };
        // SAFETY: A dequeued skb is owned by us.
        NonNull::new(skb).map(|p| unsafe { SkBuff::from_raw(p) })
    }

    /// Tells the ancestors that `n` packets of `len` bytes left this qdisc
    /// outside dequeue (`qdisc_tree_reduce_backlog()`).
    #[inline]
    fn tree_reduce_backlog(&self, n: u32, len: u32) {
        // SAFETY: The qdisc is valid and locked (type invariant). C takes
        // both counts as `int` and so do we, bit for bit.
        unsafe { bindings::qdisc_tree_reduce_backlog(self.as_ptr(), n as c_int, len as c_int) };
    }
}

/// A packet scheduler.
///
/// Callbacks run in the contexts described in the [module
/// documentation](self). `change` and `dump_stats` are optional: a qdisc
/// without `change` refuses `tc qdisc change` with `EINVAL`, as C's do.
#[vtable]
pub trait QdiscOps: Sized + 'static {
    /// The per-instance state.
    type Data: Send;

    /// The name `tc` knows the qdisc by (at most 15 bytes; longer names
    /// fail the build).
    const ID: &'static CStr;

    /// Creates the state of a new instance from its options.
    fn init(
        sch: &mut QdiscInit<'_, Self>,
        opt: Option<&NlAttr>,
        extack: &mut ExtAck<'_>,
    ) -> Result<Self::Data>;

    /// Queues `skb` ([`Incoming::queue`]), or drops it through `to_free`.
    fn enqueue<'a>(
        sch: &'a Qdisc<Self>,
        q: &mut Self::Data,
        skb: Incoming<'a, Self>,
        to_free: &mut ToFree<'_>,
    ) -> XmitStatus<'a>;

    /// Returns the next packet to send, if one may be sent now. Called
    /// only while the qdisc counts at least one packet (`sch->q.qlen`).
    fn dequeue(sch: &Qdisc<Self>, q: &mut Self::Data) -> Option<Queued<Self>>;

    /// Drops every queued packet (every [`Queued`] the state holds) and
    /// forgets the flows; the adapter zeroes the queue counts before and
    /// after it. Packets given to `free` are freed once RTNL is released
    /// (C's `rtnl_kfree_skbs()`), outside the root lock; the others where
    /// they are dropped.
    fn reset(sch: &Qdisc<Self>, q: &mut Self::Data, free: &mut RtnlFree<'_>);

    /// Applies new options (`tc qdisc change`).
    fn change(_sch: &mut QdiscChange<'_, Self>, _opt: &NlAttr, _extack: &mut ExtAck<'_>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }

    /// Writes the options (`TCA_OPTIONS`) for `tc qdisc show`.
    fn dump(sch: &Qdisc<Self>, q: &Self::Data, msg: &mut NlMsg<'_>) -> Result;

    /// Writes the private statistics for `tc -s qdisc show`.
    fn dump_stats(_sch: &Qdisc<Self>, _q: &Self::Data, _d: &mut StatsDump<'_>) -> Result {
        crate::build_error!(VTABLE_DEFAULT_ERROR)
    }
}

struct Adapter<T: QdiscOps>(PhantomData<T>);

impl<T: QdiscOps> Adapter<T> {
    /// # Safety
    ///
    /// Called by the stack with an skb it gives us, on a qdisc of `T`,
    /// initialised, under its root lock.
    unsafe extern "C" fn enqueue(
        skb: *mut bindings::sk_buff,
        sch: *mut bindings::Qdisc,
        to_free: *mut *mut bindings::sk_buff,
    ) -> c_int {
        // SAFETY: The stack calls enqueue with a qdisc made from our ops,
        // initialised, under its root lock, and gives us the skb.
        let (sch, q, skb) = unsafe {
            (
                Qdisc::<T>::from_raw(sch),
                Qdisc::<T>::data_mut(sch),
                SkBuff::from_raw(NonNull::new_unchecked(skb)),
            )
        };
        let skb = Incoming {
            skb,
            sch,
            _p: PhantomData,
            _s: PhantomData,
        };
        let mut to_free = ToFree {
            ptr: to_free,
            _p: PhantomData,
        };
        T::enqueue(sch, q, skb, &mut to_free).0
    }

    /// # Safety
    ///
    /// Called by the stack on an initialised qdisc of `T`, under its root
    /// lock.
    unsafe extern "C" fn dequeue(sch: *mut bindings::Qdisc) -> *mut bindings::sk_buff {
        // SAFETY: Called under the root lock on an initialised qdisc.
        let (sch, q) = unsafe { (Qdisc::<T>::from_raw(sch), Qdisc::<T>::data_mut(sch)) };
        sch.dequeue_counted(q)
            .map_or(ptr::null_mut(), |skb| skb.into_raw().as_ptr())
    }

    /// # Safety
    ///
    /// Called by the stack once, on a new qdisc of `T` not yet visible to
    /// any other context; `opt` and `extack` are null or valid for the call.
    unsafe extern "C" fn init(
        sch: *mut bindings::Qdisc,
        opt: *mut bindings::nlattr,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `sch` is a new qdisc of our ops; `opt` and `extack`
            // are null or valid for the call.
            let (p, opt, mut extack) = unsafe {
                (
                    Qdisc::<T>::priv_of(sch),
                    (!opt.is_null()).then(|| NlAttr::from_raw(opt)),
                    ExtAck::from_raw(extack),
                )
            };
            // SAFETY: The watchdog lives in the private area; it is set up
            // first so that `destroy` can always cancel it.
            unsafe {
                bindings::qdisc_watchdog_init_clockid(
                    ptr::addr_of_mut!((*p).watchdog),
                    sch,
                    bindings::CLOCK_MONOTONIC as bindings::clockid_t,
                )
            };
            // INVARIANT: In `init`, before the qdisc is visible.
            let mut init = QdiscInit {
                ptr: sch,
                // SAFETY: The stack creates a qdisc in process context
                // (qdisc_create(), qdisc_create_dflt(), under RTNL), as
                // C's fq_init() allocates with GFP_KERNEL, holding none of
                // the qdisc's locks; the value is only lent to `T::init`
                // (`process_context()`), and dropped with `init`.
                ctx: unsafe { ProcessContext::new() },
                _p: PhantomData,
            };
            let data = T::init(&mut init, opt, &mut extack)?;
            // SAFETY: `p` is our private area; nothing else uses it yet.
            unsafe {
                (*p).data.write(data);
                (*p).initialised = true;
            }
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the stack on a qdisc of `T` under RTNL and its root lock,
    /// or under RTNL when nothing else can reach it any more
    /// (`__qdisc_destroy()`).
    unsafe extern "C" fn reset(sch: *mut bindings::Qdisc) {
        // SAFETY: Called under the root lock, or with the qdisc to
        // ourselves; `initialised` is only written under the same rules.
        // RTNL is held for the call, so for the `RtnlFree`, which does not
        // outlive it.
        // The counts are written once each (`WRITE_ONCE()`), for the
        // readers that do not take the lock.
        unsafe {
            let qlen = ptr::addr_of_mut!((*sch).q.qlen);
            let backlog = ptr::addr_of_mut!((*sch).qstats.backlog);
            // Nothing counts as queued while the qdisc drops what it holds
            // (C's `fq_reset()` zeroes the counts first), ...
            ptr::write_volatile(qlen, 0);
            ptr::write_volatile(backlog, 0);
            if (*Qdisc::<T>::priv_of(sch)).initialised {
                // The stack resets a qdisc under RTNL (`qdisc_reset()`
                // from `dev_deactivate()`, `__qdisc_destroy()`, a parent's
                // reset); `RtnlFree` checks it.
                let mut free = RtnlFree::new();
                T::reset(
                    Qdisc::<T>::from_raw(sch),
                    Qdisc::<T>::data_mut(sch),
                    &mut free,
                );
            }
            // ... nor after, whatever `T::reset` left (`qdisc_reset()`
            // zeroes them after it too).
            ptr::write_volatile(qlen, 0);
            ptr::write_volatile(backlog, 0);
        }
    }

    /// # Safety
    ///
    /// Called by the stack once, when the qdisc of `T` is no longer used
    /// (also after a failed `init`).
    unsafe extern "C" fn destroy(sch: *mut bindings::Qdisc) {
        // SAFETY: Called once, when the qdisc is no longer used (also after
        // a failed init, with the watchdog initialised).
        let p = unsafe { Qdisc::<T>::priv_of(sch) };
        // SAFETY: The watchdog was initialised by `init`, which the stack
        // calls before it can call destroy.
        unsafe { bindings::qdisc_watchdog_cancel(ptr::addr_of_mut!((*p).watchdog)) };
        // SAFETY: Nothing uses the data any more; drop it once.
        unsafe {
            if (*p).initialised {
                (*p).initialised = false;
                (*p).data.assume_init_drop();
            }
        }
    }

    /// # Safety
    ///
    /// Called by the stack under RTNL, without the root lock, on an
    /// initialised qdisc of `T`; `opt` and `extack` are null or valid for
    /// the call.
    unsafe extern "C" fn change(
        sch: *mut bindings::Qdisc,
        opt: *mut bindings::nlattr,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `extack` is null or valid for the call.
            let mut extack = unsafe { ExtAck::from_raw(extack) };
            if opt.is_null() {
                return Ok(0);
            }
            // SAFETY: Non-null and valid for the call.
            let opt = unsafe { NlAttr::from_raw(opt) };
            // INVARIANT: In `change`: initialised, not locked.
            let mut change = QdiscChange {
                ptr: sch,
                // SAFETY: `tc qdisc change` runs in process context under
                // RTNL, without the root lock; the value is only lent to
                // `T::change` (`process_context()`), and dropped with
                // `change`. (`with_lock` takes the lock only while it holds
                // `&mut` of `change`: the value is not reachable under it.)
                ctx: unsafe { ProcessContext::new() },
                _p: PhantomData,
            };
            T::change(&mut change, opt, &mut extack)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the stack under RTNL, without the root lock, on an
    /// initialised qdisc of `T`, with the message being built.
    unsafe extern "C" fn dump(sch: *mut bindings::Qdisc, skb: *mut bindings::sk_buff) -> c_int {
        // SAFETY: `sch` is valid and not locked by our caller; the lock
        // makes the state ours until we unlock.
        unsafe { bindings::sch_tree_lock(sch) };
        // SAFETY: Locked, initialised; `skb` is the message being built.
        let r = unsafe {
            T::dump(
                Qdisc::<T>::from_raw(sch),
                Qdisc::<T>::data_mut(sch),
                &mut NlMsg::from_raw(skb),
            )
        };
        // SAFETY: Locked above.
        unsafe { bindings::sch_tree_unlock(sch) };
        match r {
            // SAFETY: `skb` is valid; C dumps return its length.
            Ok(()) => unsafe { (*skb).len as c_int },
            Err(_) => -1,
        }
    }

    /// # Safety
    ///
    /// Called by the stack without the root lock on an initialised qdisc
    /// of `T`, with the dump in progress.
    unsafe extern "C" fn dump_stats(
        sch: *mut bindings::Qdisc,
        d: *mut bindings::gnet_dump,
    ) -> c_int {
        let mut d = StatsDump {
            ptr: d,
            copied: false,
            _p: PhantomData,
        };
        // SAFETY: As in `dump`.
        unsafe { bindings::sch_tree_lock(sch) };
        // SAFETY: Locked and initialised.
        let r =
            unsafe { T::dump_stats(Qdisc::<T>::from_raw(sch), Qdisc::<T>::data_mut(sch), &mut d) };
        // SAFETY: Locked above.
        unsafe { bindings::sch_tree_unlock(sch) };
        match r {
            Ok(()) => 0,
            Err(_) => {
                // The caller abandons the dump without
                // `gnet_stats_finish_copy()`, which would free the copy a
                // successful `copy_app` kept: free it here, as a failing
                // `gnet_stats_copy()` does.
                // SAFETY: `d.ptr` is the dump in progress; its `xstats` is
                // null or `gnet_stats_copy_app()`'s `kmemdup()`, ours to
                // free, and nothing reads it after this.
                unsafe {
                    bindings::kfree((*d.ptr).xstats);
                    (*d.ptr).xstats = ptr::null_mut();
                    (*d.ptr).xstats_len = 0;
                }
                -1
            }
        }
    }
}

/// The `Qdisc_ops` table of `T`, built at compile time, for a `static`.
///
/// It is written by `register_qdisc()` (defaults, list link) and read by
/// every instance, so it lives in writable memory for as long as the
/// module: [`module_qdisc!`] declares it as a static of the module, which
/// cannot be unloaded while an instance holds its reference
/// (`owner`). Registering it once more fails with `EBUSY`.
pub struct OpsTable<T: QdiscOps> {
    ops: Opaque<bindings::Qdisc_ops>,
    registered: Atomic<bool>,
    _p: PhantomData<T>,
}

// SAFETY: C writes the table only in `register_qdisc()` and
// `unregister_qdisc()`, under `qdisc_mod_lock`; we write `owner` only
// before the one registration (`registered` lets one caller through).
unsafe impl<T: QdiscOps> Sync for OpsTable<T> {}

impl<T: QdiscOps> Default for OpsTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QdiscOps> OpsTable<T> {
    const ID_FITS: () = assert!(
        T::ID.to_bytes_with_nul().len() <= 16,
        "qdisc ID longer than 15 bytes"
    );
    /// `Qdisc::privdata` is only cache-line aligned (`L1_CACHE_BYTES`), and
    /// `priv_size` is an `int`.
    const PRIV_FITS: () = assert!(
        core::mem::align_of::<Priv<T>>() <= bindings::L1_CACHE_BYTES as usize
            && size_of::<Priv<T>>() <= c_int::MAX as usize,
        "qdisc private data aligned beyond a cache line, or over INT_MAX bytes"
    );

    /// Builds the table of `T`.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ID_FITS;
        #[allow(clippy::let_unit_value)]
        let () = Self::PRIV_FITS;
        // SAFETY: All zeroes is a valid `Qdisc_ops` (null pointers, `None`
        // callbacks, zero sizes), the state C expects before filling in.
        let mut ops: bindings::Qdisc_ops = unsafe { core::mem::zeroed() };
        let id = T::ID.to_bytes_with_nul();
        let mut i = 0;
        while i < id.len() {
            ops.id[i] = id[i] as crate::ffi::c_char;
            i += 1;
        }
        ops.priv_size = size_of::<Priv<T>>() as c_int;
        ops.enqueue = Some(Adapter::<T>::enqueue);
        ops.dequeue = Some(Adapter::<T>::dequeue);
        ops.peek = Some(bindings::qdisc_peek_dequeued);
        ops.init = Some(Adapter::<T>::init);
        ops.reset = Some(Adapter::<T>::reset);
        ops.destroy = Some(Adapter::<T>::destroy);
        ops.change = if T::HAS_CHANGE {
            Some(Adapter::<T>::change)
        } else {
            None
        };
        ops.dump = Some(Adapter::<T>::dump);
        ops.dump_stats = if T::HAS_DUMP_STATS {
            Some(Adapter::<T>::dump_stats)
        } else {
            None
        };
        Self {
            ops: Opaque::new(ops),
            registered: Atomic::new(false),
            _p: PhantomData,
        }
    }
}

/// A registered qdisc kind; unregistered on drop.
///
/// Dropping it early is harmless: instances made meanwhile keep using the
/// static table and hold the module, so neither goes away under them.
///
/// # Invariants
///
/// `ops` is registered with `register_qdisc()`, owned by the module whose
/// static it is.
pub struct Registration<T: QdiscOps> {
    ops: &'static OpsTable<T>,
}

// SAFETY: The registration only unregisters on drop, which may happen on
// any thread; the ops table is not used through it otherwise.
unsafe impl<T: QdiscOps> Send for Registration<T> {}
// SAFETY: `&Registration` allows nothing.
unsafe impl<T: QdiscOps> Sync for Registration<T> {}

impl<T: QdiscOps> crate::registration::Register for Registration<T> {
    type Args = (&'static OpsTable<T>, &'static ThisModule);

    /// Registers `ops` as the qdisc kind `T::ID`, owned by `module`, whose
    /// static `ops` must be (as [`module_qdisc!`] declares it). `EBUSY` if
    /// the table was registered before.
    unsafe fn register((ops, module): Self::Args) -> Result<Self> {
        if ops.registered.xchg(true, Full) {
            return Err(EBUSY);
        }
        let raw = ops.ops.get();
        // SAFETY: We are the one caller let through above, and C has not
        // seen the table yet, so nobody else reads or writes it.
        unsafe { (*raw).owner = module.as_ptr() };
        // SAFETY: The table is initialised and static.
        to_result(unsafe { bindings::register_qdisc(raw) })?;
        // INVARIANT: Registered above, owned by `module`.
        Ok(Self { ops })
    }
}

impl<T: QdiscOps> Drop for Registration<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant). Instances left keep using
        // the static table and hold the owning module.
        unsafe { bindings::unregister_qdisc(self.ops.ops.get()) };
    }
}

/// Declares a kernel module that registers the qdisc `type` (a
/// [`QdiscOps`]) for as long as it is loaded; the other fields are those of
/// [`module!`](crate::prelude::module).
///
/// # Examples
///
/// ```ignore
/// kernel::module_qdisc! {
///     type: Fq,
///     name: "sch_fq_rs",
///     authors: ["rsnet"],
///     description: "Fair Queue Packet Scheduler (Rust)",
///     license: "GPL",
/// }
/// ```
#[macro_export]
macro_rules! module_qdisc {
    (type: $type:ty, $($f:tt)*) => {
        struct Module {
            _reg: $crate::net::sched::Registration<$type>,
        }

        $crate::prelude::module! {
            type: Module,
            $($f)*
        }

        const _: () = {
            static OPS: $crate::net::sched::OpsTable<$type> = $crate::net::sched::OpsTable::new();

            impl $crate::Module for Module {
                fn init(module: &'static $crate::ThisModule) -> $crate::error::Result<Self> {
                    // SAFETY: The registration is the module struct's only
                    // field, dropped by the module's exit before the
                    // module's memory is freed. A second call of this safe
                    // `init` (the module's code may make one) gets `EBUSY`:
                    // `OPS` registers once and is never reset.
                    let reg = unsafe {
                        <$crate::net::sched::Registration<$type> as
                            $crate::registration::Register>::register((&OPS, module))
                    }?;
                    Ok(Module { _reg: reg })
                }
            }
        };
    };
}
