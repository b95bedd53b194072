// SPDX-License-Identifier: GPL-2.0

//! Socket buffers.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)
//!
//! [`SkBuff`] is an owned skb; what a qdisc needs of one beyond that is in
//! a file each: why a qdisc drops a packet ([`DropReason`]), the qdisc's
//! per-packet state in the control block ([`QdiscCb`]), the packet's
//! socket ([`SockRef`]), and queues of owned skbs ([`SkbQueue`],
//! [`SkbTimeQueue`]). The clocks of a packet's timestamp are
//! [`skb_clock`], converted from `CLOCK_MONOTONIC` with
//! [`ktime_mono_to_any`].

use crate::{
    bindings,
    sync::atomic::{Atomic, Relaxed},
};
use core::ptr::NonNull;

mod drop_reason;
mod qdisc_cb;
mod queue;
mod sock;

pub use drop_reason::DropReason;
pub use qdisc_cb::{CbField, QdiscCb, QDISC_CB_PRIV_LEN};
pub use queue::{OwnedSkb, QueueLen, RtnlFree, SkbQueue, SkbTimeQueue, TimeQueueFront};
pub use sock::{tcp_state, FullSockRef, SockRef};

/// An owned `struct sk_buff`: the holder of one reference, given back with
/// `kfree_skb()` when dropped (a packet not sent is a drop); the paths that
/// consume packets hand them over with [`SkBuff::into_raw`].
///
/// # Invariants
///
/// `self.0` points at a valid `sk_buff` on which this value owns one
/// reference, and nothing else accesses its data and metadata meanwhile
/// (other users may only hold clones, which share the data read-only).
///
/// No method taking `&self` reads `next`, `prev` or `dev`: an skb in the
/// tree of an [`SkbTimeQueue`] is lent out by reference while its `rbnode`
/// overlays those fields.
pub struct SkBuff(NonNull<bindings::sk_buff>);

// SAFETY: An owned skb may be handed to and freed from any context and
// thread; the kernel does so all the time (e.g. freed in softirq).
unsafe impl Send for SkBuff {}

impl SkBuff {
    /// Takes ownership of `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be a valid `sk_buff` whose reference the caller gives to
    /// the new value, with no other user of its metadata.
    #[inline]
    pub unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // INVARIANT: The caller hands over the reference.
        Self(ptr)
    }

    /// Frees the skb as consumed, not dropped (`consume_skb()`): a packet
    /// that did its job, which drop monitors (`skb:kfree_skb`) do not count.
    #[inline]
    pub fn consume(self) {
        let skb = self.into_raw().as_ptr();
        // SAFETY: We own one reference (type invariant) and give it back.
        #[cfg(CONFIG_TRACEPOINTS)]
        unsafe {
            bindings::consume_skb(skb)
        };
        // Without tracepoints, `consume_skb()` is `kfree_skb()`.
        // SAFETY: As above.
        #[cfg(not(CONFIG_TRACEPOINTS))]
        unsafe {
            bindings::kfree_skb(skb)
        };
    }

    /// Gives up ownership: the caller becomes responsible for the reference.
    #[inline]
    pub fn into_raw(self) -> NonNull<bindings::sk_buff> {
        let ptr = self.0;
        core::mem::forget(self);
        ptr
    }

    #[inline]
    pub(crate) fn as_ptr(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// Returns `true` if the data is shared with a clone (`skb_cloned()`).
    #[inline]
    pub fn is_cloned(&self) -> bool {
        // SAFETY: The pointer is valid (type invariant).
        unsafe { bindings::skb_cloned(self.as_ptr()) }
    }
}

/// What [`SkBuff::set_ce`] did to a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CeMark {
    /// Its ECN field was ECT(0) or ECT(1) and is now CE.
    Marked,
    /// Its ECN field is not one to mark (Not-ECT, already CE, or no IP
    /// header): `INET_ECN_set_ce()` leaves it, in C as here.
    Unchanged,
    /// It is ECN-capable but was not marked: it has other users, or its
    /// shared header could not be made private.
    Refused,
}

impl SkBuff {
    /// Returns the packet priority (`skb->priority`).
    #[inline]
    pub fn priority(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant); `priority` is a
        // plain field of the `headers` group.
        unsafe {
            (*self.as_ptr())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
                .priority
        }
    }

    /// Returns the departure time (`skb->tstamp`), 0 if none.
    #[inline]
    pub fn tstamp(&self) -> u64 {
        // SAFETY: The pointer is valid (type invariant); `tstamp` is the
        // `ktime_t` member of its union.
        unsafe { (*self.as_ptr()).__bindgen_anon_2.tstamp as u64 }
    }

    /// Sets the departure time (`skb->tstamp`).
    #[inline]
    pub fn set_tstamp(&mut self, tstamp: u64) {
        // SAFETY: The pointer is valid and the metadata ours (invariant).
        unsafe { (*self.as_ptr()).__bindgen_anon_2.tstamp = tstamp as bindings::ktime_t };
    }

    /// Returns the clock of [`Self::tstamp`] (`skb->tstamp_type`, one of
    /// [`skb_clock`]; the 2-bit field can also hold 3, which no clock has).
    #[inline]
    pub fn tstamp_type(&self) -> u8 {
        // SAFETY: The pointer is valid (type invariant); `tstamp_type` is a
        // bitfield of the `headers` group.
        unsafe {
            (*self.as_ptr())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_ref()
                .tstamp_type()
        }
    }

    /// Sets the clock of [`Self::tstamp`] (`skb->tstamp_type`); only the
    /// low 2 bits of `tstamp_type` are kept, as C's bitfield keeps them.
    #[inline]
    pub fn set_tstamp_type(&mut self, tstamp_type: u8) {
        // SAFETY: The pointer is valid and the metadata ours (invariant);
        // `tstamp_type` is a bitfield of the `headers` group, whose setter
        // writes only its own 2 bits.
        unsafe {
            (*self.as_ptr())
                .__bindgen_anon_4
                .__bindgen_anon_1
                .as_mut()
                .set_tstamp_type(tstamp_type)
        }
    }

    /// Returns the flow hash, computing it if needed (`skb_get_hash()`).
    #[inline]
    pub fn get_hash(&mut self) -> u32 {
        let skb = self.as_ptr();
        // SAFETY: The pointer is valid and the metadata ours (invariant);
        // `l4_hash`, `sw_hash` and `hash` are plain members of the `headers`
        // group. As `skb_get_hash()` does inline, only an skb without a
        // recorded hash goes to `__skb_get_hash_net()`, which records one
        // (a NULL netns is what `skb_get_hash()` passes).
        unsafe {
            let h = (*skb).__bindgen_anon_4.__bindgen_anon_1.as_ref();
            if h.l4_hash() == 0 && h.sw_hash() == 0 {
                bindings::__skb_get_hash_net(core::ptr::null(), skb);
            }
            (*skb).__bindgen_anon_4.__bindgen_anon_1.as_ref().hash
        }
    }

    /// Detaches the skb from its socket (`skb_orphan()`).
    #[inline]
    pub fn orphan(&mut self) {
        // SAFETY: The pointer is valid and the metadata ours (invariant).
        // Without a destructor `skb_orphan()` has nothing to do.
        unsafe {
            if (*self.as_ptr())
                .__bindgen_anon_3
                .__bindgen_anon_1
                .destructor
                .is_some()
            {
                bindings::skb_orphan(self.as_ptr());
            }
        }
    }

    /// Returns `true` if the skb has other users than its owner
    /// (`skb_shared()`: `skb->users` above 1, e.g. pktgen's `clone_skb`
    /// sending one skb again and again).
    #[inline]
    pub fn is_shared(&self) -> bool {
        // SAFETY: The skb is valid (type invariant).
        unsafe { skb_shared(self.as_ptr()) }
    }

    /// Marks the packet Congestion Experienced if it is ECN-capable
    /// (`INET_ECN_set_ce()`), and says what became of it.
    ///
    /// A header shared with a clone is first made private
    /// (`pskb_expand_head()`, as `skb_ensure_writable()` does); if that
    /// fails the packet is not marked. TCP's clones do not share their
    /// headers (`skb->nohdr`), so they are marked in place, as C does. An
    /// ECN-capable skb with other users (`skb_shared()`), whose header
    /// `pskb_expand_head()` must not replace, is not marked
    /// ([`CeMark::Refused`]); C marks it in place under the other users'
    /// feet.
    #[inline]
    pub fn set_ce(&mut self) -> CeMark {
        // Out of line, with the pointer by value: a caller's data path
        // keeps its skb in a register rather than making room for a
        // reference to it.
        // SAFETY: The skb is valid and ours (type invariant, `&mut self`).
        unsafe { Self::set_ce_slow(self.as_ptr()) }
    }

    /// [`Self::set_ce`]'s work.
    ///
    /// # Safety
    ///
    /// `skb` must be valid and owned by the caller.
    #[inline(never)]
    unsafe fn set_ce_slow(skb: *mut bindings::sk_buff) -> CeMark {
        // SAFETY: `skb` is valid (caller); the helper only reads the
        // header, which other users may read too.
        if !unsafe { bindings::skb_ecn_settable(skb) } {
            // `INET_ECN_set_ce()` would write nothing: no copy, no mark.
            return CeMark::Unchanged;
        }
        // SAFETY: As above.
        if unsafe { skb_shared(skb) } {
            return CeMark::Refused;
        }
        // SAFETY: `skb` is valid and ours (caller).
        if unsafe { bindings::skb_header_cloned(skb) } {
            let gfp = crate::alloc::flags::GFP_ATOMIC.as_raw();
            // SAFETY: As above, and the skb has no other user (checked
            // above): a header shared with clones is replaced by a private
            // copy of the head, the clones keeping the old one.
            if unsafe { bindings::pskb_expand_head(skb, 0, 0, gfp) } != 0 {
                return CeMark::Refused;
            }
        }
        // SAFETY: The pointer is valid and, with the header not shared
        // (checked above), the bytes `INET_ECN_set_ce()` writes (the IP
        // header's ECN field, after checking it lies inside the linear
        // data) are ours.
        if unsafe { bindings::INET_ECN_set_ce(skb) != 0 } {
            CeMark::Marked
        } else {
            CeMark::Unchanged
        }
    }
}

/// The clocks of a packet's timestamp (`enum skb_tstamp_type`), as
/// [`SkBuff::tstamp_type`] returns them.
pub mod skb_clock {
    use crate::bindings;

    /// `SKB_CLOCK_REALTIME` (0: what an skb has unless set otherwise).
    pub const REALTIME: u8 = bindings::skb_tstamp_type_SKB_CLOCK_REALTIME as u8;
    /// `SKB_CLOCK_MONOTONIC`.
    pub const MONOTONIC: u8 = bindings::skb_tstamp_type_SKB_CLOCK_MONOTONIC as u8;
    /// `SKB_CLOCK_TAI`.
    pub const TAI: u8 = bindings::skb_tstamp_type_SKB_CLOCK_TAI as u8;
}

/// A clock's offset from `CLOCK_MONOTONIC` (`enum tk_offsets`), for
/// [`ktime_mono_to_any`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TkOffs {
    /// `CLOCK_REALTIME` (`TK_OFFS_REAL`).
    Real,
    /// `CLOCK_BOOTTIME` (`TK_OFFS_BOOT`).
    Boot,
    /// `CLOCK_TAI` (`TK_OFFS_TAI`).
    Tai,
}

/// Converts `tmono`, a `CLOCK_MONOTONIC` time in ns (`ktime_t`), to the
/// clock of `offs` (`ktime_mono_to_any()`): `tmono` plus the clock's
/// current offset, wrapping as the kernel's `ktime_add()` does. Reads no
/// clock, only the offset, which changes when the time is set.
#[inline]
pub fn ktime_mono_to_any(tmono: i64, offs: TkOffs) -> i64 {
    let offs = match offs {
        TkOffs::Real => bindings::tk_offsets_TK_OFFS_REAL,
        TkOffs::Boot => bindings::tk_offsets_TK_OFFS_BOOT,
        TkOffs::Tai => bindings::tk_offsets_TK_OFFS_TAI,
    };
    // SAFETY: `ktime_mono_to_any()` reads the offset `offs` names, one of
    // the valid `tk_offsets` below `TK_OFFS_MAX`, in any context.
    unsafe { bindings::ktime_mono_to_any(tmono, offs) }
}

/// Converts `tmono`, a `CLOCK_MONOTONIC` time in ns, to `CLOCK_REALTIME`
/// (`ktime_mono_to_real()`).
#[inline]
pub fn ktime_mono_to_real(tmono: i64) -> i64 {
    ktime_mono_to_any(tmono, TkOffs::Real)
}

/// Returns `true` if a message about the networking stack may be printed
/// now (`net_ratelimit()`): the limit all of it shares
/// (`net.core.message_cost`, `net.core.message_burst`). Print with
/// `pr_warn!` when it does, as `net_warn_ratelimited()` does.
#[inline]
pub fn net_ratelimit() -> bool {
    // SAFETY: `net_ratelimit()` may be called in any context.
    unsafe { bindings::net_ratelimit() != 0 }
}

impl Drop for SkBuff {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant) and give it back.
        unsafe { bindings::kfree_skb(self.as_ptr()) };
    }
}

/// `skb_shared()`: whether `skb` has other users.
///
/// # Safety
///
/// `skb` must be valid.
#[inline]
unsafe fn skb_shared(skb: *mut bindings::sk_buff) -> bool {
    // SAFETY: `skb` is valid (caller); `users` is a `refcount_t` (an
    // `atomic_t`) that other holders change only atomically: it is read as
    // one, as `refcount_read()` does.
    let users = unsafe { Atomic::from_ptr(core::ptr::addr_of_mut!((*skb).users.refs.counter)) }
        .load(Relaxed);
    users != 1
}
