// SPDX-License-Identifier: GPL-2.0

//! A packet's way through a qdisc: the skb an enqueue is given
//! ([`Incoming`]), the status it returns ([`XmitStatus`]), a packet the
//! qdisc holds ([`Queued`]) and the packets it drops ([`ToFree`]).
//!
//! What a qdisc learnt of a packet's socket is part of the packet's type
//! (the last parameter, [`AnySock`] or [`FullOrNoSock`]), so that a fact
//! found once at enqueue is not tested again at dequeue.

use super::{Qdisc, QdiscOps};
use crate::{
    bindings,
    ffi::c_int,
    net::skbuff::{CeMark, DropReason, FullSockRef, OwnedSkb, QdiscCb, SkBuff},
};
use core::{
    marker::PhantomData,
    ops::{Deref, DerefMut},
    ptr::{self, NonNull},
};

/// The result of one enqueue (`NET_XMIT_*`), for the skb it was given.
///
/// There is no constructor: [`Incoming::queue`] (`NET_XMIT_SUCCESS`) and
/// [`ToFree::drop`] (`NET_XMIT_DROP`) make the one status of a call from
/// its one [`Incoming`], so an enqueue reports success exactly when it
/// counted one more packet, as the parents' class accounting (DRR, ETS,
/// HFSC, QFQ activate a class on a success that took the child's `qlen`
/// from 0) requires. `'a` is invariant and only the adapter's call has it:
/// a status cannot be kept and returned by a later call.
pub struct XmitStatus<'a>(
    pub(super) c_int,
    pub(super) PhantomData<fn(&'a ()) -> &'a ()>,
);

mod private {
    pub trait Sealed {}
}

/// What a qdisc knows of the socket of a packet it holds: the last type
/// parameter of [`Incoming`] and [`Queued`], [`AnySock`] or
/// [`FullOrNoSock`].
pub trait SockKnown: private::Sealed {}

/// Nothing: the packet has a socket of any kind (full, request, timewait),
/// or none, as enqueue is given it.
pub enum AnySock {}

/// The packet has no socket, or a full one (`sk_fullsock()`): it went
/// through [`Incoming::classify_sock`], which has every other kind
/// orphaned. Its socket's fields are read with no test of its kind
/// ([`ClassifiedSkb::full_sock`], through the packet's `Deref`).
///
/// The fact holds for as long as the packet is the qdisc's: a socket's
/// kind is fixed for its life ([`FullSockRef`]), and no method of
/// [`SkBuff`] gives a packet a socket ([`SkBuff::orphan`] takes it away).
pub enum FullOrNoSock {}

impl private::Sealed for AnySock {}
impl SockKnown for AnySock {}
impl private::Sealed for FullOrNoSock {}
impl SockKnown for FullOrNoSock {}

/// The skb an enqueue is given, not yet counted by the qdisc: it becomes
/// a [`Queued`] (and the call's success) through [`Incoming::queue`], or
/// is dropped through [`ToFree::drop`].
///
/// Derefs to the [`SkBuff`], so the qdisc reads and edits it first (cb,
/// timestamp, hash). `'a` ties it to the call, like its [`XmitStatus`].
/// `S` is what the qdisc knows of its socket.
pub struct Incoming<'a, T: QdiscOps, S: SockKnown = AnySock> {
    pub(super) skb: SkBuff,
    pub(super) sch: &'a Qdisc<T>,
    pub(super) _p: PhantomData<Invariant<'a>>,
    pub(super) _s: PhantomData<fn() -> S>,
}

/// Makes `'a` invariant.
type Invariant<'a> = fn(&'a ()) -> &'a ();

impl<'a, T: QdiscOps, S: SockKnown> Incoming<'a, T, S> {
    /// Counts the skb as queued in its qdisc (`sch->q.qlen++` and the
    /// backlog in bytes, `qdisc_qstats_backlog_inc()`) and returns it as a
    /// [`Queued`] for the qdisc to keep, with the call's success.
    #[inline]
    pub fn queue(self) -> (Queued<T, S>, XmitStatus<'a>) {
        let q = self.sch.as_ptr();
        let len = self.skb.qdisc_pkt_len();
        // SAFETY: The qdisc is valid and locked for the call (type
        // invariant of `Qdisc`); place expressions on the two fields. The
        // qdiscs of this trait keep their statistics in the qdisc, not per
        // CPU. Each is written once, as `qdisc_qlen_inc()` and
        // `qstats_backlog_add()` do (`WRITE_ONCE()`), for the readers that
        // do not take the lock.
        unsafe {
            let qlen = ptr::addr_of_mut!((*q).q.qlen);
            ptr::write_volatile(qlen, (*qlen).wrapping_add(1));
            let backlog = ptr::addr_of_mut!((*q).qstats.backlog);
            ptr::write_volatile(backlog, (*backlog).wrapping_add(len));
        }
        (
            Queued(self.skb, PhantomData),
            XmitStatus(bindings::NET_XMIT_SUCCESS as c_int, PhantomData),
        )
    }

    /// The same packet, with `S2` for what is known of its socket.
    #[inline]
    fn retype<S2: SockKnown>(self) -> Incoming<'a, T, S2> {
        Incoming {
            skb: self.skb,
            sch: self.sch,
            _p: PhantomData,
            _s: PhantomData,
        }
    }
}

/// A packet sorted by its socket ([`Incoming::classify_sock`]).
pub enum SockClass<'a, T: QdiscOps> {
    /// No socket, a request or timewait one, or one in a state the qdisc
    /// treats as none: [`ToOrphan::orphan`] detaches it.
    Orphan(ToOrphan<'a, T>),
    /// A full socket in a state the qdisc keeps, and that state
    /// (`sk->sk_state`, as read for the sorting).
    Full(Incoming<'a, T, FullOrNoSock>, u32),
}

/// A packet to be orphaned (`skb_orphan()`), which it is read and edited
/// before (its hash, say) through [`SkBuff`].
pub struct ToOrphan<'a, T: QdiscOps>(Incoming<'a, T>);

impl<'a, T: QdiscOps> ToOrphan<'a, T> {
    /// Detaches the packet from its socket, if any (`skb_orphan()`).
    #[inline]
    pub fn orphan(mut self) -> Incoming<'a, T, FullOrNoSock> {
        self.0.skb.orphan();
        // INVARIANT: No socket now.
        self.0.retype()
    }
}

impl<T: QdiscOps> Deref for ToOrphan<'_, T> {
    type Target = SkBuff;

    #[inline]
    fn deref(&self) -> &SkBuff {
        &self.0.skb
    }
}

impl<T: QdiscOps> DerefMut for ToOrphan<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut SkBuff {
        &mut self.0.skb
    }
}

impl<'a, T: QdiscOps> Incoming<'a, T> {
    /// Reads the state of the packet's socket once and sorts the packet by
    /// it: a full socket in none of the states of `orphan` (a mask of
    /// `TCPF_*` flags, `1 << state`) stays the packet's; a packet of no
    /// socket, of a request or timewait socket, or of a socket in a state
    /// of `orphan` is to be orphaned.
    ///
    /// With `orphan` holding `TCPF_LISTEN`, this is fq's
    /// `!sk || sk_listener_or_tw(sk)`, one test where the flags of the
    /// kinds that are not full and those of `orphan` meet.
    #[inline]
    pub fn classify_sock(self, orphan: u32) -> SockClass<'a, T> {
        let Some(sk) = self.skb.sock() else {
            return SockClass::Orphan(ToOrphan(self));
        };
        let state = sk.state();
        let not_full = bindings::TCPF_TIME_WAIT | bindings::TCPF_NEW_SYN_RECV;
        if 1u32.wrapping_shl(state) & (orphan | not_full) != 0 {
            return SockClass::Orphan(ToOrphan(self));
        }
        // INVARIANT: The state is of a full socket (`sk_fullsock()`), and
        // a socket's kind does not change.
        SockClass::Full(self.retype(), state)
    }
}

impl<T: QdiscOps> Deref for Incoming<'_, T> {
    type Target = SkBuff;

    #[inline]
    fn deref(&self) -> &SkBuff {
        &self.skb
    }
}

impl<T: QdiscOps> DerefMut for Incoming<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut SkBuff {
        &mut self.skb
    }
}

impl<T: QdiscOps> Deref for Incoming<'_, T, FullOrNoSock> {
    type Target = ClassifiedSkb;

    #[inline]
    fn deref(&self) -> &ClassifiedSkb {
        ClassifiedSkb::from_ref(&self.skb)
    }
}

impl<T: QdiscOps> DerefMut for Incoming<'_, T, FullOrNoSock> {
    #[inline]
    fn deref_mut(&mut self) -> &mut ClassifiedSkb {
        ClassifiedSkb::from_mut(&mut self.skb)
    }
}

/// The skb of a packet known to have no socket or a full one
/// ([`FullOrNoSock`]), as its [`Incoming`] or [`Queued`] lends it.
///
/// Read through its `Deref` to [`SkBuff`]; edited through its own
/// methods only. A `&mut SkBuff` of it would let `core::mem::swap()` put
/// the skb of a packet not classified (of a request or timewait socket)
/// in its place, whose socket [`Self::full_sock`] would then read as full.
#[repr(transparent)]
pub struct ClassifiedSkb(SkBuff);

impl ClassifiedSkb {
    #[inline]
    fn from_ref(skb: &SkBuff) -> &Self {
        // SAFETY: `ClassifiedSkb` is a transparent `SkBuff`.
        unsafe { &*core::ptr::from_ref(skb).cast::<Self>() }
    }

    #[inline]
    fn from_mut(skb: &mut SkBuff) -> &mut Self {
        // SAFETY: `ClassifiedSkb` is a transparent `SkBuff`; the callers
        // lend only the skbs of `FullOrNoSock` packets.
        unsafe { &mut *core::ptr::from_mut(skb).cast::<Self>() }
    }

    /// Returns the packet's socket, full if any: no test of its kind.
    #[inline]
    pub fn full_sock(&self) -> Option<FullSockRef<'_>> {
        // SAFETY: The skb is of a `FullOrNoSock` packet (only such are
        // lent as a `ClassifiedSkb`, and none can be put in its place):
        // no socket or a full one, which the skb holds while it is
        // borrowed.
        self.0
            .sk_raw()
            .map(|sk| unsafe { FullSockRef::from_raw(sk) })
    }

    /// [`SkBuff::get_hash`].
    #[inline]
    pub fn get_hash(&mut self) -> u32 {
        self.0.get_hash()
    }

    /// [`SkBuff::set_ce`].
    #[inline]
    pub fn set_ce(&mut self) -> CeMark {
        self.0.set_ce()
    }

    /// [`SkBuff::set_tstamp`].
    #[inline]
    pub fn set_tstamp(&mut self, tstamp: u64) {
        self.0.set_tstamp(tstamp)
    }

    /// [`SkBuff::qdisc_cb_mut`].
    #[inline]
    pub fn qdisc_cb_mut<C: QdiscCb>(&mut self) -> &mut C {
        self.0.qdisc_cb_mut()
    }
}

impl Deref for ClassifiedSkb {
    type Target = SkBuff;

    #[inline]
    fn deref(&self) -> &SkBuff {
        &self.0
    }
}

/// An skb counted in the queue length and backlog of a qdisc of `T`: made
/// only by [`Incoming::queue`], and the only kind of skb `dequeue` can
/// return, so the adapters uncount exactly what was counted.
///
/// Dropping one frees the skb and leaves it counted: the qdisc's reset
/// (whose adapter zeroes the counts after it) is where a qdisc drops what
/// it holds. Anywhere else the count stays above what is queued, and the
/// parents see a qdisc that does not send what it counts (a stall of its
/// class, as with a C qdisc that miscounts). One kept across a reset
/// leaves, when it does, in place of a counted packet, which then waits
/// for the next: either way no packet leaves a qdisc that counts none
/// (dequeue is called only while one is counted).
///
/// `S` is what the qdisc knows of its socket, as its [`Incoming`] did.
#[repr(transparent)]
pub struct Queued<T: QdiscOps, S: SockKnown = AnySock>(
    pub(super) SkBuff,
    pub(super) PhantomData<fn() -> (T, S)>,
);

impl<T: QdiscOps> Queued<T, FullOrNoSock> {
    /// The same packet, as dequeue returns it.
    #[inline]
    pub fn forget_sock(self) -> Queued<T> {
        Queued(self.0, PhantomData)
    }
}

impl<T: QdiscOps> Deref for Queued<T> {
    type Target = SkBuff;

    #[inline]
    fn deref(&self) -> &SkBuff {
        &self.0
    }
}

impl<T: QdiscOps> DerefMut for Queued<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut SkBuff {
        &mut self.0
    }
}

impl<T: QdiscOps> Deref for Queued<T, FullOrNoSock> {
    type Target = ClassifiedSkb;

    #[inline]
    fn deref(&self) -> &ClassifiedSkb {
        ClassifiedSkb::from_ref(&self.0)
    }
}

impl<T: QdiscOps> DerefMut for Queued<T, FullOrNoSock> {
    #[inline]
    fn deref_mut(&mut self) -> &mut ClassifiedSkb {
        ClassifiedSkb::from_mut(&mut self.0)
    }
}

// SAFETY: `Queued<T, S>` is a transparent `SkBuff` that owns its
// reference; `into_raw` gives it up and `from_raw` takes back only what
// `into_raw` of a `Queued<T, S>` gave (the trait's contract), so no count
// is made on the way and the skb is the one `S` speaks of. One can be
// lost: a `Queued` given up by `into_raw` and never taken back (or passed
// to `mem::forget`) leaks its skb, and the qdisc then counts a packet it
// does not hold, which stalls its class (a logic error, as with a C qdisc
// that miscounts), never undefined behaviour.
unsafe impl<T: QdiscOps, S: SockKnown> OwnedSkb for Queued<T, S> {
    #[inline]
    fn into_raw(self) -> NonNull<bindings::sk_buff> {
        self.0.into_raw()
    }

    #[inline]
    unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // SAFETY: The caller gives us the reference a `Queued<T, S>` held.
        Self(unsafe { SkBuff::from_raw(ptr) }, PhantomData)
    }
}

/// The list of skbs an enqueue drops, freed by the stack after the qdisc
/// lock is released (`struct sk_buff **to_free`).
pub struct ToFree<'a> {
    pub(super) ptr: *mut *mut bindings::sk_buff,
    pub(super) _p: PhantomData<&'a mut ()>,
}

impl ToFree<'_> {
    /// Drops `skb`, the enqueue's packet: counts it in the qdisc's drops
    /// and puts it on the list to free with `reason`
    /// (`qdisc_drop_reason()`). Returns the call's `NET_XMIT_DROP`.
    #[inline]
    pub fn drop<'a, T: QdiscOps, S: SockKnown>(
        &mut self,
        skb: Incoming<'a, T, S>,
        reason: DropReason,
    ) -> XmitStatus<'a> {
        // SAFETY: `skb` is ours to give away, its qdisc is valid and locked
        // and `ptr` is the enqueue's free list.
        let r = unsafe {
            bindings::qdisc_drop_reason(
                skb.skb.into_raw().as_ptr(),
                skb.sch.as_ptr(),
                self.ptr,
                reason.as_raw(),
            )
        };
        XmitStatus(r, PhantomData)
    }
}
