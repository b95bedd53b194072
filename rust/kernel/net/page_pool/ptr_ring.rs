// SPDX-License-Identifier: GPL-2.0

//! The ptr_ring steps of the recycle path, as `include/linux/ptr_ring.h`
//! (6.12) inlines them: `__ptr_ring_produce()`, `__ptr_ring_empty()` and
//! `__ptr_ring_consume()` with its batched `__ptr_ring_discard_one()`.
//! The callers hold what C's callers hold: the producer lock, or the
//! consumer context of the pool.
//!
//! The fields are bindgen's, so a field that changes name or type fails
//! the build; the algorithm (a NULL slot is free, the consumer gives slots
//! back a batch at a time, newest first) is 6.12's and is what this module
//! must be checked against when the header changes.

use crate::{bindings, ffi::c_void};
use core::ptr::{self, addr_of, addr_of_mut};

// The indices are the `int`s that the arithmetic below keeps within
// `0..=size`.
const _: fn(&bindings::ptr_ring) -> [&i32; 5] = |r| {
    [
        &r.producer,
        &r.consumer_head,
        &r.consumer_tail,
        &r.size,
        &r.batch,
    ]
};

/// `smp_wmb()`: x86-64 does not reorder stores with stores, so C's is a
/// compiler barrier; elsewhere a release fence orders at least as much.
#[inline(always)]
fn smp_wmb() {
    #[cfg(CONFIG_X86_64)]
    core::sync::atomic::compiler_fence(core::sync::atomic::Ordering::SeqCst);
    #[cfg(not(CONFIG_X86_64))]
    core::sync::atomic::fence(core::sync::atomic::Ordering::Release);
}

/// Queues `entry` (not NULL) in `r`; `false` if the ring is full
/// (`__ptr_ring_produce()`).
///
/// # Safety
///
/// `r` must be a live ring whose producer lock the caller holds.
#[inline(always)]
pub(super) unsafe fn produce(r: *mut bindings::ptr_ring, entry: *mut c_void) -> bool {
    // SAFETY: The ring is live and we hold the producer lock (caller's
    // promise), so the producer index is ours and `queue` has `size` slots;
    // a slot is free when NULL. As in C, the entry is published after the
    // barrier, with the store the consumer reads once.
    unsafe {
        let size = (*r).size;
        let producer = (*r).producer;
        let slot = (*r).queue.add(producer as usize);
        if size == 0 || !slot.read_volatile().is_null() {
            return false;
        }
        smp_wmb();
        slot.write_volatile(entry);
        // Indices stay below `size`, an `i32`: no overflow.
        let next = producer.wrapping_add(1);
        (*r).producer = if next >= size { 0 } else { next };
    }
    true
}

/// Returns `true` if `r` is empty (`__ptr_ring_empty()`).
///
/// # Safety
///
/// `r` must be a live ring whose consumer end is the caller's.
#[inline(always)]
pub(super) unsafe fn is_empty(r: *mut bindings::ptr_ring) -> bool {
    // SAFETY: The consumer end is ours (caller's promise), so the consumer
    // index is, and it is within the `size` slots of `queue`.
    unsafe {
        let size = (*r).size;
        let head = addr_of!((*r).consumer_head).read_volatile();
        size == 0 || (*r).queue.add(head as usize).read_volatile().is_null()
    }
}

/// Takes the oldest entry of `r`, NULL if it is empty
/// (`__ptr_ring_consume()`).
///
/// # Safety
///
/// `r` must be a live ring whose consumer end is the caller's.
#[inline(always)]
pub(super) unsafe fn consume(r: *mut bindings::ptr_ring) -> *mut c_void {
    // SAFETY: The consumer end is ours (caller's promise): we read the
    // oldest slot once (its entry was written before it was published, see
    // `produce()`), and hand slots back to the producer a batch at a time,
    // zeroing them newest first and moving `consumer_tail`, as
    // `__ptr_ring_discard_one()` does.
    unsafe {
        let size = (*r).size;
        if size == 0 {
            return ptr::null_mut();
        }
        let queue = (*r).queue;
        let mut head = (*r).consumer_head;
        let entry = queue.add(head as usize).read_volatile();
        if entry.is_null() {
            return entry;
        }
        // Indices stay within `0..=size`, an `i32`: no overflow.
        let mut consumer_head = head.wrapping_add(1);
        let tail = (*r).consumer_tail;
        if consumer_head.wrapping_sub(tail) >= (*r).batch || consumer_head >= size {
            while head >= tail {
                // The producer reads the slot under its own lock, not ours:
                // a single volatile store, never a torn one.
                queue.add(head as usize).write_volatile(ptr::null_mut());
                head = head.wrapping_sub(1);
            }
            (*r).consumer_tail = consumer_head;
        }
        if consumer_head >= size {
            consumer_head = 0;
            (*r).consumer_tail = 0;
        }
        addr_of_mut!((*r).consumer_head).write_volatile(consumer_head);
        entry
    }
}
