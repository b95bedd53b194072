// SPDX-License-Identifier: GPL-2.0

//! Packet schedulers (qdiscs).
//!
//! C headers: [`include/net/sch_generic.h`](srctree/include/net/sch_generic.h),
//! [`include/net/pkt_sched.h`](srctree/include/net/pkt_sched.h)
//!
//! A qdisc is a type implementing [`QdiscOps`]; [`Registration`] registers it
//! with `register_qdisc()` under [`QdiscOps::ID`], so `tc qdisc add ... ID`
//! creates instances. Each instance keeps its state, [`QdiscOps::Data`], in
//! the qdisc's private area next to a `qdisc_watchdog`.
//!
//! Every callback that touches the state runs under the qdisc's root lock:
//! the stack holds it around enqueue, dequeue and reset, and the adapters
//! take it (`sch_tree_lock()`) around dump and dump_stats, as C `sch_fq`
//! does for its statistics. `change` gets the lock with [`Qdisc::lock`], so
//! it can validate and allocate first and apply under the lock. That is why
//! callbacks may have `&mut Data`.

use crate::{
    alloc::{flags::GFP_KERNEL, Flags, KBox, KVec},
    bindings,
    error::{from_result, to_result, Result},
    ffi::c_int,
    net::netlink::{ExtAck, NlAttr, NlMsg},
    net::skbuff::{DropReason, SkBuff},
    prelude::*,
    str::CStr,
    types::Opaque,
    ThisModule,
};
use core::{
    marker::PhantomData,
    mem::{size_of, MaybeUninit},
    ptr::{self, NonNull},
};

/// The attribute that nests a qdisc's options (`TCA_OPTIONS`).
pub const TCA_OPTIONS: u32 = bindings::TCA_OPTIONS;

/// Returns `CLOCK_MONOTONIC` in nanoseconds (`ktime_get_ns()`).
#[inline]
pub fn ktime_get_ns() -> u64 {
    // SAFETY: Reading the clock has no precondition.
    unsafe { bindings::ktime_get() as u64 }
}

/// Returns the current `jiffies`.
#[inline]
pub fn jiffies() -> u64 {
    // SAFETY: `jiffies` is always valid; the timer interrupt updates it,
    // so it is read once, as `READ_ONCE(jiffies)` does.
    unsafe { core::ptr::read_volatile(core::ptr::addr_of!(bindings::jiffies)) as u64 }
}

/// Converts microseconds to jiffies (`usecs_to_jiffies()`).
pub fn usecs_to_jiffies(usecs: u32) -> u64 {
    // SAFETY: Pure computation.
    unsafe { bindings::usecs_to_jiffies(usecs) as u64 }
}

/// Converts jiffies to microseconds (`jiffies_to_usecs()`).
pub fn jiffies_to_usecs(j: u64) -> u32 {
    // SAFETY: Pure computation.
    unsafe { bindings::jiffies_to_usecs(j as _) }
}

/// The result of an enqueue (`NET_XMIT_*`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct XmitStatus(c_int);

impl XmitStatus {
    /// The packet was queued (`NET_XMIT_SUCCESS`).
    pub const SUCCESS: Self = Self(bindings::NET_XMIT_SUCCESS as c_int);
}

/// The list of skbs an enqueue drops, freed by the stack after the qdisc
/// lock is released (`struct sk_buff **to_free`).
pub struct ToFree<'a> {
    ptr: *mut *mut bindings::sk_buff,
    _p: PhantomData<&'a mut ()>,
}

/// A qdisc instance whose ops are `T`.
///
/// # Invariants
///
/// The wrapped qdisc was created from the ops of a [`Registration<T>`], so
/// its private area is a `Priv<T>`. References exist only inside the
/// adapters' callbacks.
#[repr(transparent)]
pub struct Qdisc<T: QdiscOps>(Opaque<bindings::Qdisc>, PhantomData<T>);

#[repr(C)]
struct Priv<T: QdiscOps> {
    watchdog: bindings::qdisc_watchdog,
    // Zeroed by qdisc_alloc(): false until `data` is written.
    initialised: bool,
    data: MaybeUninit<T::Data>,
}

/// The qdisc's state, locked (`sch_tree_lock()`); unlocked on drop.
pub struct TreeGuard<'a, T: QdiscOps> {
    sch: &'a Qdisc<T>,
}

impl<T: QdiscOps> core::ops::Deref for TreeGuard<'_, T> {
    type Target = T::Data;
    #[inline]
    fn deref(&self) -> &T::Data {
        // SAFETY: We hold the tree lock, and `change` (our only user) runs
        // on an initialised qdisc.
        unsafe { self.sch.data_mut() }
    }
}

impl<T: QdiscOps> core::ops::DerefMut for TreeGuard<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T::Data {
        // SAFETY: As for `deref`; the guard is borrowed mutably.
        unsafe { self.sch.data_mut() }
    }
}

impl<T: QdiscOps> Drop for TreeGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: Locked in `Qdisc::lock`.
        unsafe { bindings::sch_tree_unlock(self.sch.as_ptr()) };
    }
}

impl<T: QdiscOps> Qdisc<T> {
    /// # Safety
    ///
    /// `ptr` must be a qdisc made from `T`'s ops, valid for `'a`.
    #[inline]
    unsafe fn from_raw<'a>(ptr: *mut bindings::Qdisc) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    #[inline]
    fn as_ptr(&self) -> *mut bindings::Qdisc {
        self.0.get()
    }

    #[inline]
    fn priv_ptr(&self) -> *mut Priv<T> {
        // SAFETY: The private area is `privdata`, which follows the qdisc
        // (type invariant); this is `qdisc_priv()`.
        unsafe { core::ptr::addr_of_mut!((*self.as_ptr()).privdata).cast::<Priv<T>>() }
    }

    /// # Safety
    ///
    /// The caller holds the qdisc's root lock (or the qdisc is not live yet
    /// or any more), the data is initialised, and no other reference to it
    /// exists.
    #[allow(clippy::mut_from_ref)]
    #[inline]
    unsafe fn data_mut(&self) -> &mut T::Data {
        // SAFETY: By the caller's promise.
        unsafe { (*self.priv_ptr()).data.assume_init_mut() }
    }

    /// Locks the qdisc tree (`sch_tree_lock()`) and gives access to the
    /// state. For `change`, which the stack calls unlocked; calling it from
    /// another callback deadlocks.
    #[inline]
    pub fn lock(&self) -> TreeGuard<'_, T> {
        // SAFETY: The qdisc is valid (type invariant).
        unsafe { bindings::sch_tree_lock(self.as_ptr()) };
        TreeGuard { sch: self }
    }

    /// Returns the queue limit in packets (`sch->limit`).
    #[inline]
    pub fn limit(&self) -> u32 {
        // SAFETY: The qdisc is valid; callbacks run locked or under RTNL.
        unsafe { (*self.as_ptr()).limit }
    }

    /// Sets the queue limit in packets (`sch->limit`).
    #[inline]
    pub fn set_limit(&self, limit: u32) {
        // SAFETY: As for `limit`.
        unsafe { (*self.as_ptr()).limit = limit };
    }

    /// Returns the number of packets queued (`sch->q.qlen`).
    #[inline]
    pub fn qlen(&self) -> u32 {
        // SAFETY: As for `limit`.
        unsafe { (*self.as_ptr()).q.qlen }
    }

    /// Accounts `skb` as queued: `sch->q.qlen++` and the backlog in bytes.
    #[inline]
    pub fn account_enqueue(&self, skb: &SkBuff) {
        let len = skb.qdisc_pkt_len();
        // SAFETY: As for `limit`. The qdiscs of this trait keep their
        // statistics in the qdisc, not per CPU (`qdisc_qstats_backlog_inc()`).
        unsafe {
            (*self.as_ptr()).q.qlen = (*self.as_ptr()).q.qlen.wrapping_add(1);
            (*self.as_ptr()).qstats.backlog = (*self.as_ptr()).qstats.backlog.wrapping_add(len);
        }
    }

    /// Accounts `skb` as no longer queued.
    #[inline]
    pub fn account_dequeue(&self, skb: &SkBuff) {
        let len = skb.qdisc_pkt_len();
        // SAFETY: As for `account_enqueue`.
        unsafe {
            (*self.as_ptr()).q.qlen = (*self.as_ptr()).q.qlen.wrapping_sub(1);
            (*self.as_ptr()).qstats.backlog = (*self.as_ptr()).qstats.backlog.wrapping_sub(len);
        }
    }

    /// Forgets all queued packets in the counters (`reset`).
    #[inline]
    pub fn account_reset(&self) {
        // SAFETY: As for `limit`.
        unsafe {
            (*self.as_ptr()).q.qlen = 0;
            (*self.as_ptr()).qstats.backlog = 0;
        }
    }

    /// Counts `skb` as sent (`qdisc_bstats_update()`).
    #[inline]
    pub fn bstats_update(&self, skb: &SkBuff) {
        #[cfg(CONFIG_64BIT)]
        {
            let bytes = u64::from(skb.qdisc_pkt_len());
            let packets = u64::from(skb.stats_segs());
            // SAFETY: As for `limit`. With 64-bit longs `u64_stats_sync` is
            // empty and `u64_stats_add()` a plain add to the counter
            // (`local64_add()`): the writers of a qdisc's `bstats` are
            // serialised by its root lock, which we hold, and readers use
            // `u64_stats_read()`, a single untorn aligned load, as the
            // volatile store here is.
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
        // SAFETY: As for `limit`; `skb` is valid.
        #[cfg(not(CONFIG_64BIT))]
        unsafe {
            bindings::qdisc_bstats_update(self.as_ptr(), skb.as_ptr())
        };
    }

    /// Returns the device MTU as the qdisc layer sees it (`psched_mtu()`).
    #[inline]
    pub fn psched_mtu(&self) -> u32 {
        // SAFETY: The qdisc and its device are valid.
        unsafe { bindings::qdisc_psched_mtu(self.as_ptr()) }
    }

    /// Arms the watchdog to run the qdisc again at `expires` (ns,
    /// `CLOCK_MONOTONIC`), allowing the timer `slack` ns later to coalesce
    /// wakeups (`qdisc_watchdog_schedule_range_ns()`).
    #[inline]
    pub fn watchdog_schedule_range_ns(&self, expires: u64, slack: u64) {
        // SAFETY: The watchdog was initialised before `init` and lives in
        // the private area as long as the qdisc.
        unsafe {
            bindings::qdisc_watchdog_schedule_range_ns(
                ptr::addr_of_mut!((*self.priv_ptr()).watchdog),
                expires,
                slack,
            )
        };
    }

    /// Takes a packet that `peek` had set aside (`sch->gso_skb`), with its
    /// accounting undone: the first half of `qdisc_dequeue_internal()`.
    #[inline]
    pub fn take_peeked(&self) -> Option<SkBuff> {
        // SAFETY: The qdisc is valid and locked; the skb is ours.
        let skb = unsafe { bindings::qdisc_dequeue_gso_skb(self.as_ptr()) };
        // SAFETY: A dequeued skb is owned by us.
        NonNull::new(skb).map(|p| unsafe { SkBuff::from_raw(p) })
    }

    /// Tells the ancestors that `n` packets of `len` bytes left this qdisc
    /// outside dequeue (`qdisc_tree_reduce_backlog()`).
    #[inline]
    pub fn tree_reduce_backlog(&self, n: u32, len: u32) {
        // SAFETY: The qdisc is valid; called under its lock.
        unsafe { bindings::qdisc_tree_reduce_backlog(self.as_ptr(), n as c_int, len as c_int) };
    }
}

impl ToFree<'_> {
    /// Drops `skb` from an enqueue: counts it in the qdisc's drops and puts
    /// it on the list to free with `reason` (`qdisc_drop_reason()`).
    #[inline]
    pub fn drop<T: QdiscOps>(
        &mut self,
        sch: &Qdisc<T>,
        skb: SkBuff,
        reason: DropReason,
    ) -> XmitStatus {
        // SAFETY: `skb` is ours to give away, `sch` is valid and `ptr` is
        // the enqueue's free list.
        XmitStatus(unsafe {
            bindings::qdisc_drop_reason(
                skb.into_raw().as_ptr(),
                sch.as_ptr(),
                self.ptr,
                reason.as_raw(),
            )
        })
    }
}

/// Where `dump_stats` writes its private statistics (`struct gnet_dump`).
pub struct StatsDump<'a> {
    ptr: *mut bindings::gnet_dump,
    _p: PhantomData<&'a mut ()>,
}

impl StatsDump<'_> {
    /// Appends `st`, the qdisc's own statistics struct
    /// (`gnet_stats_copy_app()`).
    #[inline]
    pub fn copy_app<S: Copy>(&mut self, st: &S) -> Result {
        // SAFETY: `ptr` is the dump in progress; `st` is readable for its
        // size and is copied, not kept.
        to_result(unsafe {
            bindings::gnet_stats_copy_app(
                self.ptr,
                ptr::from_ref(st).cast_mut().cast(),
                size_of::<S>() as c_int,
            )
        })
    }
}

/// A packet scheduler.
pub trait QdiscOps: Sized + 'static {
    /// The per-instance state.
    type Data: Send;

    /// The name `tc` knows the qdisc by (at most 15 bytes).
    const ID: &'static CStr;

    /// Creates the state of a new instance from its options.
    fn init(sch: &Qdisc<Self>, opt: Option<&NlAttr>, extack: &mut ExtAck<'_>)
        -> Result<Self::Data>;

    /// Queues `skb`, or drops it through `to_free`.
    fn enqueue(
        sch: &Qdisc<Self>,
        q: &mut Self::Data,
        skb: SkBuff,
        to_free: &mut ToFree<'_>,
    ) -> XmitStatus;

    /// Returns the next packet to send, if one may be sent now.
    fn dequeue(sch: &Qdisc<Self>, q: &mut Self::Data) -> Option<SkBuff>;

    /// Drops every queued packet and forgets the flows.
    fn reset(sch: &Qdisc<Self>, q: &mut Self::Data);

    /// Applies new options (`tc qdisc change`); takes the lock itself.
    fn change(sch: &Qdisc<Self>, opt: &NlAttr, extack: &mut ExtAck<'_>) -> Result;

    /// Writes the options (`TCA_OPTIONS`) for `tc qdisc show`.
    fn dump(sch: &Qdisc<Self>, q: &Self::Data, msg: &mut NlMsg<'_>) -> Result;

    /// Writes the private statistics for `tc -s qdisc show`.
    fn dump_stats(sch: &Qdisc<Self>, q: &Self::Data, d: &mut StatsDump<'_>) -> Result;
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
        let (sch, skb) = unsafe {
            (
                Qdisc::<T>::from_raw(sch),
                SkBuff::from_raw(NonNull::new_unchecked(skb)),
            )
        };
        // SAFETY: Locked and initialised (see above).
        let q = unsafe { sch.data_mut() };
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
        let sch = unsafe { Qdisc::<T>::from_raw(sch) };
        // SAFETY: As above.
        let q = unsafe { sch.data_mut() };
        T::dequeue(sch, q).map_or(ptr::null_mut(), |skb| skb.into_raw().as_ptr())
    }

    /// # Safety
    ///
    /// Called by the stack once, on a new qdisc of `T` not yet visible to
    /// the data path; `opt` and `extack` are null or valid for the call.
    unsafe extern "C" fn init(
        sch: *mut bindings::Qdisc,
        opt: *mut bindings::nlattr,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `sch` is a new qdisc of our ops, not yet visible to
            // the data path; `opt` and `extack` are null or valid for the call.
            let (sch, opt, mut extack) = unsafe {
                (
                    Qdisc::<T>::from_raw(sch),
                    (!opt.is_null()).then(|| NlAttr::from_raw(opt)),
                    ExtAck::from_raw(extack),
                )
            };
            let p = sch.priv_ptr();
            // SAFETY: The watchdog lives in the private area; it is set up
            // first so that `destroy` can always cancel it.
            unsafe {
                bindings::qdisc_watchdog_init_clockid(
                    ptr::addr_of_mut!((*p).watchdog),
                    sch.as_ptr(),
                    bindings::CLOCK_MONOTONIC as _,
                )
            };
            let data = T::init(sch, opt, &mut extack)?;
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
    /// Called by the stack on a qdisc of `T` under its root lock, or when
    /// it is no longer used.
    unsafe extern "C" fn reset(sch: *mut bindings::Qdisc) {
        // SAFETY: Called under the root lock (or before destroy).
        let sch = unsafe { Qdisc::<T>::from_raw(sch) };
        // SAFETY: `initialised` is only written under the same rules.
        if unsafe { (*sch.priv_ptr()).initialised } {
            // SAFETY: Locked and initialised.
            T::reset(sch, unsafe { sch.data_mut() });
        }
    }

    /// # Safety
    ///
    /// Called by the stack once, when the qdisc of `T` is no longer used
    /// (also after a failed `init`).
    unsafe extern "C" fn destroy(sch: *mut bindings::Qdisc) {
        // SAFETY: Called once, when the qdisc is no longer used (also after
        // a failed init, with the watchdog initialised).
        let sch = unsafe { Qdisc::<T>::from_raw(sch) };
        let p = sch.priv_ptr();
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
    /// Called by the stack under RTNL on an initialised qdisc of `T`;
    /// `opt` and `extack` are null or valid for the call.
    unsafe extern "C" fn change(
        sch: *mut bindings::Qdisc,
        opt: *mut bindings::nlattr,
        extack: *mut bindings::netlink_ext_ack,
    ) -> c_int {
        from_result(|| {
            // SAFETY: `sch` is an initialised qdisc of our ops; `opt` and
            // `extack` are null or valid for the call.
            let (sch, mut extack) =
                unsafe { (Qdisc::<T>::from_raw(sch), ExtAck::from_raw(extack)) };
            if opt.is_null() {
                return Ok(0);
            }
            // SAFETY: Non-null and valid for the call.
            let opt = unsafe { NlAttr::from_raw(opt) };
            T::change(sch, opt, &mut extack)?;
            Ok(0)
        })
    }

    /// # Safety
    ///
    /// Called by the stack under RTNL on an initialised qdisc of `T`, with
    /// the message being built.
    unsafe extern "C" fn dump(sch: *mut bindings::Qdisc, skb: *mut bindings::sk_buff) -> c_int {
        // SAFETY: `sch` is an initialised qdisc of our ops and `skb` the
        // message being built, both valid for the call.
        let (sch, mut msg) = unsafe { (Qdisc::<T>::from_raw(sch), NlMsg::from_raw(skb)) };
        let guard = sch.lock();
        let r = T::dump(sch, &guard, &mut msg);
        drop(guard);
        match r {
            // SAFETY: `skb` is valid; C dumps return its length.
            Ok(()) => unsafe { (*skb).len as c_int },
            Err(_) => -1,
        }
    }

    /// # Safety
    ///
    /// Called by the stack on an initialised qdisc of `T`, with the dump
    /// in progress.
    unsafe extern "C" fn dump_stats(
        sch: *mut bindings::Qdisc,
        d: *mut bindings::gnet_dump,
    ) -> c_int {
        // SAFETY: `sch` is an initialised qdisc of our ops and `d` the dump
        // in progress, both valid for the call.
        let sch = unsafe { Qdisc::<T>::from_raw(sch) };
        let mut d = StatsDump {
            ptr: d,
            _p: PhantomData,
        };
        let guard = sch.lock();
        let r = T::dump_stats(sch, &guard, &mut d);
        drop(guard);
        match r {
            Ok(()) => 0,
            Err(_) => -1,
        }
    }
}

/// A registered qdisc kind; unregistered on drop.
///
/// # Invariants
///
/// `ops` is registered with `register_qdisc()`. Its `owner` is the module
/// that registered it, so no instance can outlive the registration: the
/// module cannot be unloaded while an instance holds its reference.
pub struct Registration<T: QdiscOps> {
    ops: Pin<KBox<Opaque<bindings::Qdisc_ops>>>,
    _p: PhantomData<T>,
}

// SAFETY: The registration only unregisters on drop, which may happen on
// any thread; the ops table is not used through it otherwise.
unsafe impl<T: QdiscOps> Send for Registration<T> {}
// SAFETY: `&Registration` allows nothing.
unsafe impl<T: QdiscOps> Sync for Registration<T> {}

impl<T: QdiscOps> Registration<T> {
    /// Registers `T` as the qdisc kind `T::ID`, owned by `module`.
    #[inline]
    pub fn register(module: &'static ThisModule) -> Result<Self> {
        let id = T::ID.as_bytes();
        if id.len() >= 16 {
            return Err(EINVAL);
        }
        // `register_qdisc()` links the table into its list and writes
        // defaults into it, so it lives in writable, pinned memory.
        let ops = KBox::pin(Opaque::<bindings::Qdisc_ops>::uninit(), GFP_KERNEL)?;
        let raw = ops.get();
        // SAFETY: `raw` points at our allocation; we fully initialise it
        // (zeroes, then the fields we use) before handing it to C.
        unsafe {
            ptr::write_bytes(raw, 0, 1);
            for (i, b) in id.iter().enumerate() {
                (*raw).id[i] = *b as _;
            }
            (*raw).priv_size = size_of::<Priv<T>>() as c_int;
            (*raw).enqueue = Some(Adapter::<T>::enqueue);
            (*raw).dequeue = Some(Adapter::<T>::dequeue);
            (*raw).peek = Some(bindings::qdisc_peek_dequeued);
            (*raw).init = Some(Adapter::<T>::init);
            (*raw).reset = Some(Adapter::<T>::reset);
            (*raw).destroy = Some(Adapter::<T>::destroy);
            (*raw).change = Some(Adapter::<T>::change);
            (*raw).dump = Some(Adapter::<T>::dump);
            (*raw).dump_stats = Some(Adapter::<T>::dump_stats);
            (*raw).owner = module.as_ptr();
        }
        // SAFETY: The table is initialised and pinned for as long as it is
        // registered (until `drop`).
        to_result(unsafe { bindings::register_qdisc(raw) })?;
        // INVARIANT: Registered above, owned by `module`.
        Ok(Self {
            ops,
            _p: PhantomData,
        })
    }
}

impl<T: QdiscOps> Drop for Registration<T> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: Registered (type invariant). No instance exists: each
        // holds a reference on the owning module, which is being unloaded.
        unsafe { bindings::unregister_qdisc(self.ops.get()) };
    }
}

/// Returns the number of bytes `tc` accounts for `skb` (`qdisc_pkt_len()`).
#[inline]
pub fn pkt_len(skb: &SkBuff) -> u32 {
    skb.qdisc_pkt_len()
}

/// A growable array of `T` in chunks of `N` elements, for the flows of a
/// qdisc: growing it, even in atomic context (enqueue), allocates one chunk
/// and never moves or copies an element, and an index costs one load more
/// than in a flat array.
///
/// # Invariants
///
/// `N` is a power of two. For each chunk `c`, `table[c]` is
/// `p.wrapping_sub(c * N)`, where `p` came from `KBox::<[T; N]>::into_raw()`
/// of a chunk this array owns, so element `i` is at
/// `table[i / N].wrapping_add(i)`, inside chunk `i / N`.
pub struct ChunkVec<T, const N: usize> {
    table: KVec<*mut T>,
}

// SAFETY: It owns its elements, as a `KVec<KBox<[T; N]>>` would.
unsafe impl<T: Send, const N: usize> Send for ChunkVec<T, N> {}

// SAFETY: A shared `ChunkVec` gives out shared references to elements only.
unsafe impl<T: Sync, const N: usize> Sync for ChunkVec<T, N> {}

impl<T, const N: usize> Default for ChunkVec<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> ChunkVec<T, N> {
    const N_IS_POWER_OF_TWO: () = assert!(N.is_power_of_two());

    /// Creates an empty array; it allocates nothing.
    pub const fn new() -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::N_IS_POWER_OF_TWO;
        Self { table: KVec::new() }
    }

    /// Returns the number of elements, a multiple of `N`.
    #[inline]
    pub fn len(&self) -> usize {
        self.table.len() * N
    }

    /// Returns `true` if the array has no chunk.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Appends `chunk`: its elements get indices `len()..len() + N`.
    pub fn push_chunk(&mut self, chunk: KBox<[T; N]>, flags: Flags) -> Result {
        let c = self.table.len();
        let p = KBox::into_raw(chunk).cast::<T>();
        if let Err(e) = self.table.push(p.wrapping_sub(c * N), flags) {
            // SAFETY: `p` came from `KBox::into_raw()` just above and was
            // not stored.
            drop(unsafe { KBox::from_raw(p.cast::<[T; N]>()) });
            return Err(e.into());
        }
        Ok(())
    }

    /// The address of element `i`; panics if `i >= len()`, as indexing a
    /// slice does.
    #[inline]
    fn ptr(&self, i: usize) -> *mut T {
        // By the invariant, inside chunk `i / N` (the bounds check of the
        // table is the check of `i`).
        self.table[i / N].wrapping_add(i)
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

impl<T, const N: usize> Drop for ChunkVec<T, N> {
    fn drop(&mut self) {
        for (c, &p) in self.table.iter().enumerate() {
            // SAFETY: By the type invariant, `p.wrapping_add(c * N)` is the
            // pointer `KBox::into_raw()` gave for chunk `c`, which we own
            // and free once, here.
            drop(unsafe { KBox::from_raw(p.wrapping_add(c * N).cast::<[T; N]>()) });
        }
    }
}
