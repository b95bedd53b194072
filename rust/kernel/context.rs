// SPDX-License-Identifier: GPL-2.0

//! Proof of the context code runs in.
//!
//! Some kernel functions may sleep (they take a mutex, patch code, wait):
//! called in atomic context (softirq, under a spinlock, inside an RCU
//! read-side critical section) they deadlock or corrupt the scheduler's
//! state. A function that may sleep takes a [`ProcessContext`], which
//! only the code that knows it runs in process context can make: safe
//! code cannot reach such a function from a hook that runs in atomic
//! context.
//!
//! What the token proves, exactly:
//!
//! - It was made where the kernel calls a callback in process context
//!   (a qdisc's `init` and `change`, a sysctl write), and it cannot leave
//!   that call: it is only lent, for the call's duration, and is neither
//!   `Send` nor `Sync`, so no later callback (enqueue, a timer) and no
//!   other thread can hold it.
//! - The locks of this crate's abstractions that a callback can take
//!   (`QdiscChange::with_lock()`) borrow the token's owner mutably: the
//!   closure they run cannot use it.
//! - It does not see a lock the callback takes through another API (a
//!   `SpinLock` guard, an RCU read lock) and then uses the token under:
//!   there, as for any sleeping function the kernel crate offers, the
//!   check is at run time. Every function that takes the token sleeps
//!   through a `might_sleep()` of the kernel (a `GFP_KERNEL` allocation's
//!   `might_alloc()`, `static_key_enable()`'s `cpus_read_lock()`), which a
//!   kernel built with `CONFIG_DEBUG_ATOMIC_SLEEP` reports.

use crate::alloc::{flags, Flags};
use core::marker::PhantomData;

/// Proof that the current task runs in process context and may sleep: no
/// spinlock held, interrupts and bottom halves enabled, outside any RCU
/// read-side critical section.
///
/// It cannot leave the thread that made it (neither `Send` nor `Sync`),
/// and it is only lent (`&ProcessContext`): a function that enters atomic
/// context while holding the loan can take it as `&mut` to keep the
/// closure it runs from using it.
pub struct ProcessContext(PhantomData<*mut ()>);

impl ProcessContext {
    /// Makes the proof.
    ///
    /// # Safety
    ///
    /// The caller runs in process context and may sleep (no spinlock held,
    /// interrupts and bottom halves enabled, outside any RCU read-side
    /// critical section), and lends the value, by reference, only to code
    /// that runs in that same call: it is neither stored nor returned.
    /// What that code does with a lock of its own is outside this
    /// contract (see the module documentation).
    #[inline]
    pub unsafe fn new() -> Self {
        Self(PhantomData)
    }
}

/// Keeps [`AllocContext`] to the contexts of this module: a type of
/// another crate that could implement it would pass `GFP_KERNEL` to an
/// allocation in atomic context.
mod sealed {
    pub trait Sealed {}
    impl Sealed for super::ProcessContext {}
    impl Sealed for super::Atomic {}
}

/// The allocation flags fit for the context a value proves. Sealed: only
/// [`ProcessContext`] and [`Atomic`] implement it.
pub trait AllocContext: sealed::Sealed {
    /// The flags of an allocation made there.
    fn gfp(&self) -> Flags;
}

impl AllocContext for ProcessContext {
    /// `GFP_KERNEL`: the allocation may sleep to reclaim memory.
    #[inline]
    fn gfp(&self) -> Flags {
        flags::GFP_KERNEL
    }
}

/// Any context, atomic included (a qdisc's enqueue, under its root lock):
/// allocations neither sleep nor warn, and the caller copes when they
/// fail. Anyone may use it; [`ProcessContext`] is what it takes to sleep.
pub struct Atomic;

impl AllocContext for Atomic {
    /// `GFP_ATOMIC | __GFP_NOWARN`.
    #[inline]
    fn gfp(&self) -> Flags {
        flags::GFP_ATOMIC | flags::__GFP_NOWARN
    }
}
