// SPDX-License-Identifier: GPL-2.0

//! Socket buffers.
//!
//! C header: [`include/linux/skbuff.h`](srctree/include/linux/skbuff.h)

use crate::bindings;
use core::ptr::NonNull;

/// An owned `struct sk_buff`: the holder of one reference, given back with
/// `consume_skb()` when dropped.
///
/// # Invariants
///
/// `self.0` points at a valid `sk_buff` on which this value owns one
/// reference, and nothing else accesses its data and metadata meanwhile
/// (other users may only hold clones, which share the data read-only).
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
    pub unsafe fn from_raw(ptr: NonNull<bindings::sk_buff>) -> Self {
        // INVARIANT: The caller hands over the reference.
        Self(ptr)
    }

    /// Gives up ownership: the caller becomes responsible for the reference.
    pub fn into_raw(self) -> NonNull<bindings::sk_buff> {
        let ptr = self.0;
        core::mem::forget(self);
        ptr
    }

    fn as_ptr(&self) -> *mut bindings::sk_buff {
        self.0.as_ptr()
    }

    /// Returns the number of bytes of data (`skb->len`).
    pub fn len(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant).
        unsafe { (*self.as_ptr()).len }
    }

    /// Returns `true` if the skb holds no data.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Returns `true` if the data is shared with a clone (`skb_cloned()`).
    pub fn is_cloned(&self) -> bool {
        // SAFETY: The pointer is valid (type invariant).
        unsafe { bindings::skb_cloned(self.as_ptr()) }
    }

    /// Returns the size of the data buffer (`skb_end_offset()`).
    pub fn end_offset(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant).
        unsafe { bindings::skb_end_offset(self.as_ptr()) }
    }

    /// Returns the bytes free before the data (`skb_headroom()`).
    pub fn headroom(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant).
        unsafe { bindings::skb_headroom(self.as_ptr()) }
    }

    /// Completes and detaches a zerocopy user buffer, if any
    /// (`skb_zcopy_clear()`).
    pub fn zcopy_clear(&mut self, success: bool) {
        // SAFETY: The pointer is valid and we own the metadata (invariant).
        unsafe { bindings::skb_zcopy_clear(self.as_ptr(), success) };
    }

    /// Drops all skb extensions (`skb_ext_reset()`).
    pub fn ext_reset(&mut self) {
        // SAFETY: The pointer is valid and we own the metadata (invariant).
        unsafe { bindings::skb_ext_reset(self.as_ptr()) };
    }

    /// Trims the data to `len` bytes, releasing page fragments beyond it
    /// (`pskb_trim()`).
    pub fn trim(&mut self, len: u32) -> crate::error::Result {
        // SAFETY: The pointer is valid and we own the metadata (invariant).
        crate::error::to_result(unsafe { bindings::pskb_trim(self.as_ptr(), len) })
    }

    /// Empties the skb and gives all of its buffer back as tailroom, the
    /// state `alloc_skb()` returns: no data, no headroom, no fragments.
    pub fn reset_empty(&mut self) -> crate::error::Result {
        self.trim(0)?;
        let skb = self.as_ptr();
        // SAFETY: The pointer is valid and we own the metadata (invariant);
        // after the trim the skb is linear and empty, so moving `data` back
        // to `head` and `tail` to `data` describes the same (empty) buffer.
        unsafe {
            (*skb).data = (*skb).head;
            bindings::skb_reset_tail_pointer(skb);
        }
        Ok(())
    }

    /// Clears the transmit flags of the shared info (timestamping requests,
    /// zerocopy markers): `skb_shinfo(skb)->tx_flags = 0`.
    pub fn clear_tx_flags(&mut self) {
        // SAFETY: The pointer is valid and we own the metadata (invariant);
        // the shared info lives at the end of the buffer of every skb.
        unsafe { (*bindings::skb_shinfo(self.as_ptr())).tx_flags = 0 };
    }

    /// Zeroes the control buffer (`skb->cb`), the per-layer scratch area.
    pub fn clear_cb(&mut self) {
        // SAFETY: The pointer is valid and we own the metadata (invariant).
        unsafe { (*self.as_ptr()).cb = [0; 48] };
    }
}

impl Drop for SkBuff {
    fn drop(&mut self) {
        // SAFETY: We own one reference (type invariant) and give it back.
        unsafe { bindings::consume_skb(self.as_ptr()) };
    }
}
