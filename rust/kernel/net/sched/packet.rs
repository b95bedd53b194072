// SPDX-License-Identifier: GPL-2.0

//! A packet's way through a qdisc: the skb an enqueue is given
//! ([`Incoming`]), the status it returns ([`XmitStatus`]), a packet the
//! qdisc holds ([`Queued`]) and the packets it drops ([`ToFree`]).

use super::{Qdisc, QdiscOps};
use crate::{
    bindings,
    ffi::c_int,
    net::skbuff::{DropReason, OwnedSkb, SkBuff},
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

/// The skb an enqueue is given, not yet counted by the qdisc: it becomes
/// a [`Queued`] (and the call's success) through [`Incoming::queue`], or
/// is dropped through [`ToFree::drop`].
///
/// Derefs to the [`SkBuff`], so the qdisc reads and edits it first (cb,
/// timestamp, hash). `'a` ties it to the call, like its [`XmitStatus`].
pub struct Incoming<'a, T: QdiscOps> {
    pub(super) skb: SkBuff,
    pub(super) sch: &'a Qdisc<T>,
    pub(super) _p: PhantomData<fn(&'a ()) -> &'a ()>,
}

impl<'a, T: QdiscOps> Incoming<'a, T> {
    /// Counts the skb as queued in its qdisc (`sch->q.qlen++` and the
    /// backlog in bytes, `qdisc_qstats_backlog_inc()`) and returns it as a
    /// [`Queued`] for the qdisc to keep, with the call's success.
    #[inline]
    pub fn queue(self) -> (Queued<T>, XmitStatus<'a>) {
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

/// An skb counted in the queue length and backlog of a qdisc of `T`: made
/// only by [`Incoming::queue`], and the only kind of skb `dequeue` can
/// return, so the adapters uncount exactly what was counted.
///
/// Dropping one frees the skb and leaves it counted: the qdisc's reset
/// (whose adapter zeroes the counts after it) is where a qdisc drops what
/// it holds. Anywhere else the count stays above what is queued, and the
/// parents see a qdisc that does not send what it counts (a stall of its
/// class, as with a C qdisc that miscounts), never one that holds more than
/// it counts.
#[repr(transparent)]
pub struct Queued<T: QdiscOps>(pub(super) SkBuff, pub(super) PhantomData<fn() -> T>);

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

// SAFETY: `Queued<T>` is a transparent `SkBuff` that owns its reference;
// `into_raw` gives it up and `from_raw` takes back only what `into_raw` of
// a `Queued<T>` gave (the trait's contract), so no count is made on the
// way. One can be lost: a `Queued<T>` given up by `into_raw` and never
// taken back (or passed to `mem::forget`) leaks its skb, and the qdisc
// then counts a packet it does not hold, which stalls its class (a logic
// error, as with a C qdisc that miscounts), never undefined behaviour.
unsafe impl<T: QdiscOps> OwnedSkb for Queued<T> {
    #[inline]
    fn into_raw(self) -> NonNull<bindings::sk_buff> {
        self.0.into_raw()
    }

    #[inline]
    unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // SAFETY: The caller gives us the reference a `Queued<T>` held.
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
    pub fn drop<'a, T: QdiscOps>(
        &mut self,
        skb: Incoming<'a, T>,
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
