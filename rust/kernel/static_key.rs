// SPDX-License-Identifier: GPL-2.0

//! Static keys: branches patched in and out of the running code.
//!
//! C header: [`include/linux/jump_label.h`](srctree/include/linux/jump_label.h)
//!
//! The key itself is defined in C (`DEFINE_STATIC_KEY_FALSE`), where the hot
//! path tests it with `static_branch_unlikely()`; Rust code that owns the
//! policy turns it on and off through [`StaticKeyFalse`].

use crate::{
    bindings,
    context::ProcessContext,
    sync::atomic::{Atomic, Relaxed},
    types::Opaque,
};

/// A C `struct static_key_false`: a branch that is off until enabled.
///
/// # Invariants
///
/// The wrapped key is a valid, initialised static key that lives as long as
/// any reference to this wrapper.
#[repr(transparent)]
pub struct StaticKeyFalse(Opaque<bindings::static_key_false>);

// SAFETY: The jump label core serialises enable and disable (jump_label_lock)
// and reads the key's count atomically, so the key may be shared and used
// from any thread.
unsafe impl Sync for StaticKeyFalse {}
// SAFETY: As above; the key is not tied to the thread that created it.
unsafe impl Send for StaticKeyFalse {}

impl StaticKeyFalse {
    /// Wraps a C static key.
    ///
    /// # Safety
    ///
    /// `ptr` must point at an initialised `struct static_key_false` that is
    /// valid for `'a` (normally a `static` defined in C).
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::static_key_false) -> &'a Self {
        // SAFETY: `Self` is a transparent wrapper of the C type, and the
        // caller guarantees that `ptr` is valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn key(&self) -> *mut bindings::static_key {
        // SAFETY: By the type invariant the key is valid; this only computes
        // the address of its `key` field.
        unsafe { core::ptr::addr_of_mut!((*self.0.get()).key) }
    }

    /// Returns whether the branch is on (`static_key_enabled()`): not
    /// while another thread is still turning it on.
    pub fn is_enabled(&self) -> bool {
        // SAFETY: `self.key()` is a valid static key (type invariant), whose
        // `enabled` is an `atomic_t` that the jump label core changes
        // atomically; it is read as one, as `static_key_count()` does.
        let enabled =
            unsafe { Atomic::from_ptr(core::ptr::addr_of_mut!((*self.key()).enabled.counter)) };
        enabled.load(Relaxed) > 0
    }

    /// Turns the branch on (`static_branch_enable()`). Idempotent.
    ///
    /// Sleeps (it takes `cpus_read_lock()` and the jump label mutex to
    /// patch code): only in process context.
    pub fn enable(&self, _ctx: &ProcessContext) {
        // SAFETY: `self.key()` is a valid static key (type invariant), and
        // we may sleep (`_ctx`).
        unsafe { bindings::static_key_enable(self.key()) };
    }

    /// Turns the branch off (`static_branch_disable()`). Idempotent.
    ///
    /// Sleeps, as [`Self::enable`]: only in process context.
    pub fn disable(&self, _ctx: &ProcessContext) {
        // SAFETY: `self.key()` is a valid static key (type invariant), and
        // we may sleep (`_ctx`).
        unsafe { bindings::static_key_disable(self.key()) };
    }
}
