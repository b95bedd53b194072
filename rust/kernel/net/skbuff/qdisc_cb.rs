// SPDX-License-Identifier: GPL-2.0

//! A qdisc's per-packet state in the skb's control block
//! (`qdisc_skb_cb(skb)->data`).

use super::SkBuff;
use crate::bindings;

/// Length of the private part of the qdisc control block
/// (`QDISC_CB_PRIV_LEN`).
pub const QDISC_CB_PRIV_LEN: usize = bindings::QDISC_CB_PRIV_LEN as usize;

/// A qdisc's per-packet state, kept in the private part of the qdisc
/// control block (`qdisc_skb_cb(skb)->data`), as C's qdiscs keep
/// `struct fq_skb_cb` there. Declare one with [`qdisc_cb!`](crate::qdisc_cb).
///
/// # Safety
///
/// The type fits in [`QDISC_CB_PRIV_LEN`] bytes with an alignment of at
/// most 8, every bit pattern of its size is a valid value (the block holds
/// whatever the last user wrote), and a value has no padding (its bytes
/// are read back as such).
pub unsafe trait QdiscCb: Copy {}

/// Integer types and arrays of them: every bit pattern valid, no padding.
/// For the fields of a [`qdisc_cb!`](crate::qdisc_cb) struct.
///
/// # Safety
///
/// As stated: all bit patterns valid, no padding bytes.
pub unsafe trait CbField: Copy {}

macro_rules! cb_fields {
    ($($t:ty),*) => { $(
        // SAFETY: A primitive integer: every bit pattern valid, no padding.
        unsafe impl CbField for $t {}
    )* };
}
cb_fields!(u8, u16, u32, u64, i8, i16, i32, i64);
// SAFETY: An array of such fields has no padding between its elements
// (size is a multiple of alignment) and is valid for every bit pattern.
unsafe impl<T: CbField, const N: usize> CbField for [T; N] {}

/// Declares a `#[repr(C)]` struct of integer fields (or arrays of them) as
/// a [`QdiscCb`](crate::net::skbuff::QdiscCb). The build fails if it has
/// padding (name it, e.g. `_pad: [u8; 7]`) or does not fit in the control
/// block.
///
/// # Examples
///
/// ```ignore
/// kernel::qdisc_cb! {
///     /// `struct fq_skb_cb`.
///     struct FqSkbCb {
///         time_to_send: u64,
///         band: u8,
///         _pad: [u8; 7],
///     }
/// }
/// ```
#[macro_export]
macro_rules! qdisc_cb {
    ($(#[$m:meta])* $vis:vis struct $name:ident {
        $($(#[$fm:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
    }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy)]
        $vis struct $name {
            $($(#[$fm])* $fvis $field: $ty),*
        }

        const _: () = {
            const fn field<T: $crate::net::skbuff::CbField>() -> usize {
                ::core::mem::size_of::<T>()
            }
            assert!(
                ::core::mem::size_of::<$name>() == 0 $(+ field::<$ty>())*,
                "qdisc_cb!: the struct has padding; name it as a field"
            );
            assert!(
                ::core::mem::size_of::<$name>() <= $crate::net::skbuff::QDISC_CB_PRIV_LEN
                    && ::core::mem::align_of::<$name>() <= 8,
                "qdisc_cb!: larger than QDISC_CB_PRIV_LEN or aligned beyond 8"
            );
        };

        // SAFETY: `repr(C)` with fields that are `CbField`s (integers or
        // arrays of them: every bit pattern valid), no padding (the size
        // is the sum of the fields') and within the block's size and
        // alignment, all checked above at build time.
        unsafe impl $crate::net::skbuff::QdiscCb for $name {}
    };
}

impl SkBuff {
    /// Returns the qdisc's per-packet state in the control block.
    #[inline]
    pub fn qdisc_cb<C: QdiscCb>(&self) -> &C {
        // SAFETY: `qdisc_cb_ptr()` is valid for `QDISC_CB_PRIV_LEN` bytes,
        // 8-aligned, for as long as the skb; `C` fits there, is valid for
        // any bytes and aligned to at most 8 (`QdiscCb`).
        unsafe { &*self.qdisc_cb_ptr().cast::<C>() }
    }

    /// Returns the qdisc's per-packet state in the control block, writable.
    #[inline]
    pub fn qdisc_cb_mut<C: QdiscCb>(&mut self) -> &mut C {
        // SAFETY: As for `qdisc_cb`; the metadata is ours (type
        // invariant), and what is written is a `C`, without padding.
        unsafe { &mut *self.qdisc_cb_ptr().cast::<C>() }
    }

    /// `qdisc_skb_cb(skb)->data`: the qdisc's part of `skb->cb`.
    #[inline]
    fn qdisc_cb_ptr(&self) -> *mut u8 {
        const OFFSET: usize = core::mem::offset_of!(bindings::qdisc_skb_cb, data);
        const CB: usize = core::mem::offset_of!(bindings::sk_buff, cb);
        const _: () = assert!(
            OFFSET + QDISC_CB_PRIV_LEN <= core::mem::size_of::<[core::ffi::c_char; 48]>()
                && (CB + OFFSET) % 8 == 0
                && core::mem::align_of::<bindings::sk_buff>() >= 8
        );
        // SAFETY: The pointer is valid (type invariant); `cb` is 48 bytes,
        // which hold a `struct qdisc_skb_cb` (checked above).
        unsafe {
            core::ptr::addr_of_mut!((*self.as_ptr()).cb)
                .cast::<u8>()
                .add(OFFSET)
        }
    }

    /// The length `tc` accounts for the packet (`qdisc_pkt_len()`).
    #[inline]
    pub fn qdisc_pkt_len(&self) -> u32 {
        // SAFETY: The pointer is valid (type invariant); `cb` holds a
        // `struct qdisc_skb_cb` while a qdisc has the packet.
        unsafe {
            (*core::ptr::addr_of!((*self.as_ptr()).cb).cast::<bindings::qdisc_skb_cb>()).pkt_len
        }
    }

    /// The segments `tc` counts the packet for (`qdisc_pkt_segs()`): set
    /// with the length on the way into the root qdisc, `gso_segs` for a GSO
    /// packet, else 1.
    #[inline]
    pub fn qdisc_pkt_segs(&self) -> u32 {
        // SAFETY: As for `qdisc_pkt_len()`.
        let segs = unsafe {
            (*core::ptr::addr_of!((*self.as_ptr()).cb).cast::<bindings::qdisc_skb_cb>()).pkt_segs
        };
        u32::from(segs)
    }
}
