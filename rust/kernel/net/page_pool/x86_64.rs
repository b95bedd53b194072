// SPDX-License-Identifier: GPL-2.0

//! The x86-64 inlines of the recycle path, as the 6.12 x86-64 headers
//! compile them: per-CPU reads and adds relative to `%gs`
//! (`this_cpu_read()`, `this_cpu_add()`, `this_cpu_inc()`) and the release
//! store of `queued_spin_unlock()`. A call into a C helper for each would
//! cost the path more than the work it does (every call and return is a
//! translation-block lookup under TCG, and a call on hardware).
//!
//! Each copy depends on a layout or a configuration; the `const` checks
//! below fail the build where that is not what the copy assumes, and the
//! module is only built for x86-64 SMP kernels (`%gs`-based per-CPU
//! areas).

use crate::bindings;
use core::mem::{offset_of, size_of};

/// The fields of `struct pcpu_hot` read here.
type Hot = bindings::pcpu_hot__bindgen_ty_1__bindgen_ty_1;

/// Offset of `pcpu_hot.preempt_count`.
const PREEMPT_COUNT: usize = offset_of!(
    bindings::pcpu_hot,
    __bindgen_anon_1.__bindgen_anon_1.preempt_count
);
/// Offset of `pcpu_hot.cpu_number`.
const CPU_NUMBER: usize = offset_of!(
    bindings::pcpu_hot,
    __bindgen_anon_1.__bindgen_anon_1.cpu_number
);

// `preempt_count` and `cpu_number` are the `int`s that `pcpu_hot_read()`
// loads as 32 bits: a change of their type fails this coercion.
const _: fn(&Hot) -> (&i32, &i32) = |h| (&h.preempt_count, &h.cpu_number);
const _: () = assert!(
    PREEMPT_COUNT + size_of::<i32>() <= size_of::<bindings::pcpu_hot>()
        && CPU_NUMBER + size_of::<i32>() <= size_of::<bindings::pcpu_hot>(),
    "pcpu_hot: preempt_count and cpu_number must lie inside it"
);

/// Reads the `i32` at `OFFSET` in this CPU's `pcpu_hot` (`this_cpu_read()`).
#[cfg(not(CONFIG_PREEMPT_RT))]
#[inline(always)]
fn pcpu_hot_read<const OFFSET: usize>() -> i32 {
    const { assert!(OFFSET == PREEMPT_COUNT || OFFSET == CPU_NUMBER) };
    let v: i32;
    // SAFETY: `pcpu_hot` is a per-CPU variable and `%gs` the base of this
    // CPU's area, so this one load reads this CPU's copy, as C's
    // `this_cpu_read()` does; `OFFSET` is that of one of its `i32` fields
    // (checked above).
    unsafe {
        core::arch::asm!(
            "mov {v:e}, dword ptr gs:[rip + {hot} + {off}]",
            v = out(reg) v,
            hot = sym bindings::pcpu_hot,
            off = const OFFSET,
            options(nostack, readonly, preserves_flags),
        )
    };
    v
}

/// `in_softirq()`: serving a softirq, or bottom halves disabled
/// (`preempt_count() & SOFTIRQ_MASK`; PREEMPT_RT counts them elsewhere).
#[cfg(not(CONFIG_PREEMPT_RT))]
#[inline(always)]
pub(super) fn in_softirq() -> bool {
    const SOFTIRQ_MASK: i32 = ((1 << bindings::SOFTIRQ_BITS) - 1) << bindings::SOFTIRQ_SHIFT;
    pcpu_hot_read::<PREEMPT_COUNT>() & SOFTIRQ_MASK != 0
}

/// `smp_processor_id()`, read once.
#[cfg(not(CONFIG_PREEMPT_RT))]
#[inline(always)]
pub(super) fn smp_processor_id() -> i32 {
    pcpu_hot_read::<CPU_NUMBER>()
}

/// `this_cpu_add()` of `val` to the `u64` at `field` in a per-CPU area.
///
/// # Safety
///
/// `field` must be a per-CPU pointer (`__percpu`) to a `u64`, valid for the
/// call.
#[cfg(CONFIG_PAGE_POOL_STATS)]
#[inline(always)]
pub(super) unsafe fn this_cpu_add_u64(field: *mut u64, val: u64) {
    // SAFETY: `%gs` is the base of this CPU's area, so this one `add`
    // updates this CPU's copy, safe against preemption and interrupts as a
    // single instruction; the field is valid (caller's promise).
    unsafe {
        core::arch::asm!(
            "add qword ptr gs:[{field}], {val}",
            field = in(reg) field,
            val = in(reg) val,
            options(nostack),
        )
    };
}

/// `this_cpu_inc()` of the `u64` at `OFF` in the per-CPU area `base`.
///
/// # Safety
///
/// `base` must be a per-CPU pointer (`__percpu`) to an object with a `u64`
/// at `OFF`, valid for the call.
#[cfg(CONFIG_PAGE_POOL_STATS)]
#[inline(always)]
pub(super) unsafe fn this_cpu_inc_u64<const OFF: usize>(base: *mut u8) {
    // SAFETY: As for `this_cpu_add_u64()`, at a constant offset.
    unsafe {
        core::arch::asm!(
            "inc qword ptr gs:[{base} + {off}]",
            base = in(reg) base,
            off = const OFF,
            options(nostack),
        )
    };
}

/// The queued spinlock's byte that its owner clears to unlock it.
#[cfg(CONFIG_QUEUED_SPINLOCKS)]
type Qspinlock = bindings::qspinlock__bindgen_ty_1__bindgen_ty_1;

// `locked` is the `u8` at offset 0 of the lock word, as x86's
// `queued_spin_unlock()` stores to it.
#[cfg(CONFIG_QUEUED_SPINLOCKS)]
const _: () = {
    let _: fn(&Qspinlock) -> &u8 = |l| &l.locked;
    assert!(
        offset_of!(
            bindings::qspinlock,
            __bindgen_anon_1.__bindgen_anon_1.locked
        ) == 0
            && size_of::<bindings::qspinlock>() == 4,
        "qspinlock: the locked byte must be the first of a 4-byte lock"
    );
};

/// `queued_spin_unlock()` of x86 without paravirt spinlocks: a release
/// store of 0 to the lock byte.
///
/// # Safety
///
/// `lock` must be a live lock that the caller holds, taken with
/// `spin_lock()` on a kernel where `spin_unlock()` is this store (no lock
/// debugging, no preempt counting).
#[cfg(all(
    not(CONFIG_PREEMPT_RT),
    not(CONFIG_UNINLINE_SPIN_UNLOCK),
    CONFIG_QUEUED_SPINLOCKS,
    not(CONFIG_PARAVIRT_SPINLOCKS),
    not(CONFIG_PREEMPT_COUNT)
))]
#[inline(always)]
pub(super) unsafe fn queued_spin_unlock(lock: *mut bindings::raw_spinlock_t) {
    use core::sync::atomic::{AtomicU8, Ordering};
    // SAFETY: The lock is live and ours (caller's promise); `locked` is the
    // byte of the queued spinlock that its owner clears, with release order,
    // to unlock it (checked above), and the kernel accesses it atomically
    // too.
    unsafe {
        let locked =
            core::ptr::addr_of_mut!((*lock).raw_lock.__bindgen_anon_1.__bindgen_anon_1.locked);
        AtomicU8::from_ptr(locked).store(0, Ordering::Release);
    }
}
