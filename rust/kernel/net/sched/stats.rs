// SPDX-License-Identifier: GPL-2.0

//! A qdisc's private statistics in a dump (`dump_stats`), and the uapi
//! statistics structs that may be dumped: `tc_fq_qd_stats` for `fq`, the
//! one Rust qdisc so far; another qdisc's struct goes here too, since
//! only the kernel crate may say a bindings type is [`AsBytes`].

use crate::{bindings, error::to_result, ffi::c_int, prelude::*, transmute::AsBytes};
use core::{marker::PhantomData, mem::size_of, ptr};

/// Where `dump_stats` writes its private statistics (`struct gnet_dump`).
///
/// # Invariants
///
/// `ptr` is the dump in progress; `copied` is true once `copy_app` was
/// called on it.
pub struct StatsDump<'a> {
    pub(super) ptr: *mut bindings::gnet_dump,
    pub(super) copied: bool,
    pub(super) _p: PhantomData<&'a mut ()>,
}

impl StatsDump<'_> {
    /// Appends `st`, the qdisc's own statistics struct
    /// (`gnet_stats_copy_app()`). Its bytes reach user space, so it must
    /// have no padding or other uninitialised bytes ([`AsBytes`]).
    ///
    /// Once per dump, as C qdiscs do: `gnet_stats_copy_app()` keeps a copy
    /// for the old `TCA_XSTATS` attribute (`kmemdup()`), which a second
    /// call would leak; that fails with `EINVAL`.
    #[inline]
    pub fn copy_app<S: AsBytes>(&mut self, st: &S) -> Result {
        const { assert!(size_of::<S>() <= c_int::MAX as usize) };
        if self.copied {
            return Err(EINVAL);
        }
        self.copied = true;
        // SAFETY: `ptr` is the dump in progress; `st` is readable and fully
        // initialised (`AsBytes`) for its size, and is copied, not kept.
        to_result(unsafe {
            bindings::gnet_stats_copy_app(
                self.ptr,
                ptr::from_ref(st).cast_mut().cast(),
                size_of::<S>() as c_int,
            )
        })
    }
}

// SAFETY: `struct tc_fq_qd_stats` (uapi) is 8 `__u64`/`__s64`, then 4
// `__u32`, then 4 more `__u64` and 3 `__u64` band drops, then 3 `__u32`
// band counts and a `__u32` pad: every byte belongs to a field of integer
// type (checked below: the size is the sum of the fields), so a value has
// no uninitialised bytes, and there is no interior mutability.
unsafe impl AsBytes for crate::uapi::tc_fq_qd_stats {}
const _: () = assert!(size_of::<crate::uapi::tc_fq_qd_stats>() == 15 * 8 + 8 * 4);
