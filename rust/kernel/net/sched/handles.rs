// SPDX-License-Identifier: GPL-2.0

//! The qdisc as `init` ([`QdiscInit`]), `change` ([`QdiscChange`]) and
//! the closure `change` runs under the root lock ([`QdiscLocked`]) see it.

use super::{Qdisc, QdiscOps};
use crate::{bindings, context::ProcessContext, net::skbuff::RtnlFree};
use core::{marker::PhantomData, ops::Deref};

/// A new qdisc, as `init` sees it: not yet visible to any other context,
/// and without state (`init` returns it).
///
/// # Invariants
///
/// `ptr` is a qdisc made from `T`'s ops, in its `init` callback.
pub struct QdiscInit<'a, T: QdiscOps> {
    pub(super) ptr: *mut bindings::Qdisc,
    pub(super) ctx: ProcessContext,
    pub(super) _p: PhantomData<(&'a (), T)>,
}

impl<T: QdiscOps> QdiscInit<'_, T> {
    /// `init` runs in process context (under RTNL, no lock of the qdisc
    /// held): its allocations may sleep.
    #[inline]
    pub fn process_context(&self) -> &ProcessContext {
        &self.ctx
    }

    /// Returns the device MTU as the qdisc layer sees it (`psched_mtu()`).
    #[inline]
    pub fn psched_mtu(&self) -> u32 {
        // SAFETY: The qdisc and its device are valid (type invariant).
        unsafe { bindings::qdisc_psched_mtu(self.ptr) }
    }

    /// Returns how far ahead of its time the device may be given a paced
    /// packet, in ns (`qdisc_dev(sch)->max_pacing_offload_horizon`): 0 for
    /// a device that does not pace.
    #[inline]
    pub fn max_pacing_offload_horizon(&self) -> u64 {
        // SAFETY: The qdisc and its device are valid (type invariant); the
        // helper reads one field of the device.
        unsafe { bindings::qdisc_dev_max_pacing_offload_horizon(self.ptr) }
    }

    /// Sets the queue limit in packets (`sch->limit`).
    #[inline]
    pub fn set_limit(&mut self, limit: u32) {
        // SAFETY: No other context can see the qdisc yet (type invariant).
        unsafe { (*self.ptr).limit = limit };
    }
}

/// An initialised qdisc, as `change` sees it: under RTNL, not locked.
///
/// # Invariants
///
/// `ptr` is an initialised qdisc made from `T`'s ops, in its `change`
/// callback, whose caller does not hold the root lock.
pub struct QdiscChange<'a, T: QdiscOps> {
    pub(super) ptr: *mut bindings::Qdisc,
    pub(super) ctx: ProcessContext,
    pub(super) _p: PhantomData<(&'a (), T)>,
}

impl<T: QdiscOps> QdiscChange<'_, T> {
    /// `change` runs in process context (under RTNL) outside
    /// [`Self::with_lock`], whose `&mut self` keeps the closure it runs
    /// under the lock from using this.
    #[inline]
    pub fn process_context(&self) -> &ProcessContext {
        &self.ctx
    }

    /// Returns how far ahead of its time the device may be given a paced
    /// packet, in ns (`qdisc_dev(sch)->max_pacing_offload_horizon`): 0 for
    /// a device that does not pace.
    #[inline]
    pub fn max_pacing_offload_horizon(&self) -> u64 {
        // SAFETY: The qdisc and its device are valid (type invariant); the
        // helper reads one field of the device.
        unsafe { bindings::qdisc_dev_max_pacing_offload_horizon(self.ptr) }
    }

    /// Runs `f` with the qdisc's root lock held (`sch_tree_lock()`), with
    /// the locked qdisc and its state.
    ///
    /// `f` cannot take the lock again: `self` is borrowed for the call, and
    /// neither argument can take it.
    pub fn with_lock<R>(&mut self, f: impl FnOnce(&QdiscLocked<'_, T>, &mut T::Data) -> R) -> R {
        // SAFETY: The qdisc is valid; its caller does not hold the lock
        // (type invariant), and `&mut self` keeps us from taking it twice.
        unsafe { bindings::sch_tree_lock(self.ptr) };
        // SAFETY: Locked, in `change` (type invariant: the parent's class
        // exists and `sch_tree_lock()` locked the root, the parent's too);
        // the qdisc is initialised, and the only other references to its
        // state are made by the callbacks that hold the lock, which we now
        // do.
        let r = unsafe {
            f(
                &QdiscLocked(Qdisc::from_raw(self.ptr)),
                Qdisc::<T>::data_mut(self.ptr),
            )
        };
        // SAFETY: Locked above.
        unsafe { bindings::sch_tree_unlock(self.ptr) };
        r
    }
}

/// The qdisc inside [`QdiscChange::with_lock`]: locked, in `change`, so
/// with its parent's class in place. Everything of a locked [`Qdisc`]
/// (through `Deref`), and the drops that tell the ancestors.
pub struct QdiscLocked<'a, T: QdiscOps>(pub(super) &'a Qdisc<T>);

impl<T: QdiscOps> Deref for QdiscLocked<'_, T> {
    type Target = Qdisc<T>;

    #[inline]
    fn deref(&self) -> &Qdisc<T> {
        self.0
    }
}

impl<T: QdiscOps> QdiscLocked<'_, T> {
    /// Drops queued packets, in the order `dequeue` gives them (a packet a
    /// parent peeked first), while more than [`limit`](Self::limit) are
    /// queued, and tells the ancestors how many packets and bytes left
    /// (`qdisc_dequeue_internal()` and `qdisc_tree_reduce_backlog()`, as a
    /// C qdisc's `change` does when its limit is lowered). Returns the
    /// number of packets dropped.
    ///
    /// The counts the ancestors get are those of the skbs dropped here, so
    /// no caller can make them believe fewer packets are queued than are.
    /// Only `change` can call it: there the parent's class still exists and
    /// the parent is locked with this qdisc. A reset may run unlocked while
    /// the qdisc is destroyed after its class was deleted, when telling the
    /// parent would touch a class that is gone (HTB's `qlen_notify` with a
    /// class not found); and from `dequeue` it would recurse.
    pub fn drop_to_limit(&self, q: &mut T::Data) -> u32 {
        // SAFETY: `change` runs under RTNL, and this handle lives inside
        // it; the skbs are freed after `change`, outside the lock, as C's
        // `fq_change()` frees them (`rtnl_kfree_skbs()`).
        let mut free = unsafe { RtnlFree::new() };
        // C counts these in `unsigned int`s, wrapping.
        let (mut n, mut len) = (0u32, 0u32);
        while self.0.qlen() > self.0.limit() {
            let Some(skb) = self
                .0
                .take_peeked()
                .or_else(|| self.0.dequeue_counted_cold(q))
            else {
                break;
            };
            n = n.wrapping_add(1);
            len = len.wrapping_add(skb.qdisc_pkt_len());
            free.free(skb);
        }
        self.0.tree_reduce_backlog(n, len);
        n
    }
}
