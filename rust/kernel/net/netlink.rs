// SPDX-License-Identifier: GPL-2.0

//! Netlink attributes: typed parsing with a policy, extended ACK messages,
//! and writing attributes into a dump.
//!
//! C header: [`include/net/netlink.h`](srctree/include/net/netlink.h)
//!
//! Parsing goes through the kernel's own `__nla_parse()` with a C
//! `struct nla_policy` table built in Rust ([`Policy`]), so types, lengths
//! and ranges are checked exactly as for a C user of the same policy, with
//! the same errors and extack messages. The getters of [`Attrs`] check the
//! length again, so a policy mistake can give a wrong `None`, never an
//! out-of-bounds read.
//!
//! # Examples
//!
//! The attributes nested in one, as a qdisc's `change()` gets them in
//! `TCA_OPTIONS`: values within the policy are read back; a value out of
//! its range, a short attribute or a wrong exact length is refused with
//! the kernel's own errno and extack message.
//!
//! ```
//! use kernel::alloc::{flags::GFP_KERNEL, KVec};
//! use kernel::bindings;
//! use kernel::net::netlink::{ExtAck, NlAttr, Policy, Range};
//! use kernel::str::CStr;
//!
//! static PERCENT: Range = Range::new(0, 100);
//! static POLICY: [Policy; 4] = [
//!     Policy::unspec(),
//!     Policy::u32(),
//!     Policy::u32_range(&PERCENT),
//!     Policy::exact_len(6),
//! ];
//!
//! /// One attribute (type 1) nesting `attrs`, each a type and a payload.
//! fn nest(attrs: &[(u16, &[u8])]) -> Result<KVec<u8>> {
//!     let mut inner = KVec::new();
//!     for &(t, p) in attrs {
//!         inner.extend_from_slice(&(4 + p.len() as u16).to_ne_bytes(), GFP_KERNEL)?;
//!         inner.extend_from_slice(&t.to_ne_bytes(), GFP_KERNEL)?;
//!         inner.extend_from_slice(p, GFP_KERNEL)?;
//!         while inner.len() % 4 != 0 {
//!             inner.push(0, GFP_KERNEL)?;
//!         }
//!     }
//!     let mut a = KVec::new();
//!     a.extend_from_slice(&(4 + inner.len() as u16).to_ne_bytes(), GFP_KERNEL)?;
//!     a.extend_from_slice(&1u16.to_ne_bytes(), GFP_KERNEL)?;
//!     a.extend_from_slice(&inner, GFP_KERNEL)?;
//!     Ok(a)
//! }
//!
//! /// Attributes 1, 2 and 3 (0 for an absent number).
//! type Parsed = (u32, u32, Option<[u8; 6]>);
//!
//! /// Parses `buf` with `POLICY`, or gives the errno and extack message.
//! fn parse(buf: &KVec<u8>) -> core::result::Result<Parsed, (Error, &'static str)> {
//!     let mut raw = bindings::netlink_ext_ack::default();
//!     // SAFETY: `raw` outlives `ext`.
//!     let mut ext = unsafe { ExtAck::from_raw(&mut raw) };
//!     // SAFETY: `buf` holds one whole attribute at a kmalloc address (aligned
//!     // beyond an `nlattr`'s needs) and outlives `attr`.
//!     let attr = unsafe { NlAttr::from_raw(buf.as_ptr().cast()) };
//!     let msg = |raw: &bindings::netlink_ext_ack| {
//!         // SAFETY: The kernel sets `_msg` to a static string or leaves it null.
//!         (!raw._msg.is_null()).then(|| unsafe { CStr::from_char_ptr(raw._msg) })
//!             .and_then(|m| m.to_str().ok())
//!             .unwrap_or("")
//!     };
//!     match attr.parse_nested(&POLICY, &mut ext) {
//!         Ok(a) => Ok((a.u32(1).unwrap_or(0), a.u32(2).unwrap_or(0), a.bytes::<6>(3))),
//!         Err(e) => Err((e, msg(&raw))),
//!     }
//! }
//!
//! let ok = nest(&[(1, &7u32.to_ne_bytes()), (2, &100u32.to_ne_bytes()), (3, b"abcdef")])?;
//! assert_eq!(parse(&ok), Ok((7, 100, Some(*b"abcdef"))));
//! let absent = nest(&[(2, &0u32.to_ne_bytes()), (9, b"unknown")])?;
//! assert_eq!(parse(&absent), Ok((0, 0, None)));
//! let range = nest(&[(2, &101u32.to_ne_bytes())])?;
//! assert_eq!(parse(&range), Err((ERANGE, "integer out of range")));
//! let short = nest(&[(1, &[7, 0])])?;
//! assert_eq!(parse(&short), Err((ERANGE, "Attribute failed policy validation")));
//! let len = nest(&[(3, b"abcde")])?;
//! assert_eq!(parse(&len), Err((ERANGE, "binary attribute size out of range")));
//! # Ok::<(), Error>(())
//! ```

use crate::{
    bindings,
    error::Error,
    error::{to_result, Result},
    ffi::{c_char, c_int},
    str::{CStr, CStrExt as _},
};
use core::{fmt, marker::PhantomData, ptr};

/// A value range for [`Policy::u32_range`] (`struct netlink_range_validation`).
#[repr(transparent)]
pub struct Range(bindings::netlink_range_validation);

// SAFETY: A `Range` is plain data, only ever read.
unsafe impl Sync for Range {}

impl Range {
    /// The closed range `min..=max`.
    pub const fn new(min: u64, max: u64) -> Self {
        Self(bindings::netlink_range_validation { min, max })
    }
}

/// One entry of a netlink policy (`struct nla_policy`).
#[repr(transparent)]
#[derive(Clone, Copy)]
pub struct Policy(bindings::nla_policy);

// SAFETY: A `Policy` is plain data plus pointers to `'static` `Range`s,
// only ever read.
unsafe impl Sync for Policy {}

impl Policy {
    const fn with(type_: u32, validation_type: u32, len: u16) -> Self {
        Self(bindings::nla_policy {
            type_: type_ as u8,
            validation_type: validation_type as u8,
            len,
            __bindgen_anon_1: bindings::nla_policy__bindgen_ty_1 {
                strict_start_type: 0,
            },
        })
    }

    /// An attribute without a type check (`NLA_UNSPEC`).
    pub const fn unspec() -> Self {
        Self::with(bindings::NLA_UNSPEC, 0, 0)
    }

    /// The policy of attribute 0 when it only carries `strict_start_type`:
    /// attributes of type `start` and above are validated strictly (exact
    /// lengths) even by a liberal parse.
    pub const fn strict_start(start: u16) -> Self {
        let mut p = Self::unspec();
        p.0.__bindgen_anon_1.strict_start_type = start;
        p
    }

    /// A `u8` attribute (`NLA_U8`).
    pub const fn u8() -> Self {
        Self::with(bindings::NLA_U8, 0, 0)
    }

    /// A `u32` attribute (`NLA_U32`).
    pub const fn u32() -> Self {
        Self::with(bindings::NLA_U32, 0, 0)
    }

    /// A `u32` attribute whose value must lie in `range`
    /// (`NLA_POLICY_FULL_RANGE(NLA_U32, range)`).
    pub const fn u32_range(range: &'static Range) -> Self {
        let mut p = Self::with(
            bindings::NLA_U32,
            bindings::nla_policy_validation_NLA_VALIDATE_RANGE_PTR,
            0,
        );
        p.0.__bindgen_anon_1.range = ptr::from_ref(&range.0);
        p
    }

    /// A binary attribute of exactly `len` bytes (`NLA_POLICY_EXACT_LEN`).
    ///
    /// `len` must fit the policy's `s16` bounds; a larger one fails the
    /// build where the policy is a constant.
    pub const fn exact_len(len: u16) -> Self {
        assert!(
            len <= i16::MAX as u16,
            "NLA_POLICY_EXACT_LEN: length above S16_MAX"
        );
        Self::with(
            bindings::NLA_BINARY,
            bindings::nla_policy_validation_NLA_VALIDATE_RANGE,
            0,
        )
        .binary_range(len as i16, len as i16)
    }

    const fn binary_range(mut self, min: i16, max: i16) -> Self {
        self.0.__bindgen_anon_1.__bindgen_anon_1 =
            bindings::nla_policy__bindgen_ty_1__bindgen_ty_1 { min, max };
        self
    }
}

/// An extended ACK: where an error message for user space goes.
///
/// # Invariants
///
/// `ptr` is null or a valid `struct netlink_ext_ack` for `'a`.
pub struct ExtAck<'a> {
    ptr: *mut bindings::netlink_ext_ack,
    _p: PhantomData<&'a mut bindings::netlink_ext_ack>,
}

impl ExtAck<'_> {
    /// Wraps the extended ack a netlink request carries (null: none).
    ///
    /// # Safety
    ///
    /// `ptr` must be null or valid for the lifetime of the result.
    pub unsafe fn from_raw(ptr: *mut bindings::netlink_ext_ack) -> Self {
        // INVARIANT: By the caller's promise.
        Self {
            ptr,
            _p: PhantomData,
        }
    }

    /// Returns the raw pointer, for C calls that take the extack.
    pub fn as_ptr(&mut self) -> *mut bindings::netlink_ext_ack {
        self.ptr
    }

    /// Runs `f` with the extack; if it succeeds, the message is put back
    /// as it was before (a success leaves no message of `f`'s).
    fn keep_msg_on_success<R>(&mut self, f: impl FnOnce(&mut Self) -> Result<R>) -> Result<R> {
        // SAFETY: `ptr` is null or valid (type invariant).
        let before = (!self.ptr.is_null()).then(|| unsafe { (*self.ptr)._msg });
        let r = f(self)?;
        if let Some(msg) = before {
            // SAFETY: `ptr` is valid (type invariant, checked above); `msg`
            // is what the field held: null, a static string or the
            // extack's own buffer (NUL-terminated by every writer), valid
            // for as long as the extack.
            unsafe { (*self.ptr)._msg = msg };
        }
        Ok(r)
    }

    /// Sets the message (`NL_SET_ERR_MSG`).
    pub fn set_msg(&mut self, msg: &'static CStr) {
        if !self.ptr.is_null() {
            // SAFETY: `ptr` is valid (type invariant) and `msg` is `'static`.
            unsafe { (*self.ptr)._msg = msg.as_char_ptr() };
        }
    }

    /// Sets a formatted message (`NL_SET_ERR_MSG_FMT`), truncated to the
    /// extack's buffer (80 bytes).
    pub fn set_msg_fmt(&mut self, args: fmt::Arguments<'_>) {
        if self.ptr.is_null() {
            return;
        }
        // SAFETY: `ptr` is valid (type invariant); we fill its message buffer
        // and point `_msg` at it, as `NL_SET_ERR_MSG_FMT` does.
        let ext = unsafe { &mut *self.ptr };
        let mut w = BufWriter {
            buf: &mut ext._msg_buf,
            pos: 0,
        };
        let _ = fmt::write(&mut w, args);
        let end = w.pos;
        ext._msg_buf[end] = 0;
        ext._msg = ext._msg_buf.as_ptr();
    }
}

struct BufWriter<'a> {
    buf: &'a mut [c_char; 80],
    pos: usize,
}

impl fmt::Write for BufWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for &b in s.as_bytes() {
            // Keep one byte for the terminating NUL.
            if self.pos + 1 >= self.buf.len() {
                break;
            }
            self.buf[self.pos] = b as c_char;
            self.pos += 1;
        }
        Ok(())
    }
}

/// A netlink attribute (`struct nlattr`) and its payload.
#[repr(transparent)]
pub struct NlAttr(bindings::nlattr);

impl NlAttr {
    /// Borrows the attribute at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` must be a valid attribute, with its payload, for `'a`.
    pub unsafe fn from_raw<'a>(ptr: *const bindings::nlattr) -> &'a Self {
        // SAFETY: Transparent wrapper; validity is the caller's promise.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Returns the payload.
    pub fn data(&self) -> &[u8] {
        let p = ptr::from_ref(&self.0);
        // SAFETY: An attribute's payload is `nla_len()` bytes after its
        // header, valid as long as the attribute is (`from_raw`).
        unsafe {
            let len = bindings::nla_len(p).max(0) as usize;
            core::slice::from_raw_parts(bindings::nla_data(p).cast::<u8>(), len)
        }
    }

    /// Parses the attributes nested in this one with `policy` (liberal
    /// validation, as `nla_parse_nested_deprecated()`), indexed by type.
    pub fn parse_nested<const N: usize>(
        &self,
        policy: &'static [Policy; N],
        extack: &mut ExtAck<'_>,
    ) -> Result<Attrs<'_, N>> {
        const { assert!(N >= 1, "parse_nested: a policy needs an entry for type 0") };
        let mut tb = [ptr::null_mut::<bindings::nlattr>(); N];
        let p = ptr::from_ref(&self.0);
        // SAFETY: `tb` has room for types `0..N`, the policy has `N`
        // entries, and the nested attributes lie in our payload.
        to_result(unsafe {
            bindings::__nla_parse(
                tb.as_mut_ptr(),
                (N - 1) as c_int,
                bindings::nla_data(p).cast::<bindings::nlattr>(),
                bindings::nla_len(p),
                policy.as_ptr().cast::<bindings::nla_policy>(),
                bindings::netlink_validation_NL_VALIDATE_LIBERAL,
                extack.as_ptr(),
            )
        })?;
        Ok(Attrs {
            tb,
            _p: PhantomData,
        })
    }

    /// As [`Self::parse_nested`], but a successful parse leaves `extack`
    /// as it found it: the only message the parser sets on success is its
    /// warning of trailing bytes ("bytes leftover after parsing
    /// attributes"), which a C qdisc that parses its options without an
    /// extack (`NULL`, as `fq_change()`) does not give. A failed parse sets
    /// the parser's message, where such a C qdisc gives none.
    pub fn parse_nested_quiet<const N: usize>(
        &self,
        policy: &'static [Policy; N],
        extack: &mut ExtAck<'_>,
    ) -> Result<Attrs<'_, N>> {
        extack.keep_msg_on_success(|extack| self.parse_nested(policy, extack))
    }
}

/// Parsed attributes, indexed by type.
///
/// # Invariants
///
/// Every non-null entry of `tb` points at an attribute inside the parent
/// attribute, valid for `'a`.
pub struct Attrs<'a, const N: usize> {
    tb: [*mut bindings::nlattr; N],
    _p: PhantomData<&'a NlAttr>,
}

impl<'a, const N: usize> Attrs<'a, N> {
    /// Returns attribute `type_`, if present.
    pub fn get(&self, type_: u32) -> Option<&'a NlAttr> {
        let p = *self.tb.get(type_ as usize)?;
        // SAFETY: Non-null entries are valid for `'a` (type invariant).
        (!p.is_null()).then(|| unsafe { NlAttr::from_raw(p) })
    }

    /// Returns `true` if attribute `type_` is present.
    pub fn has(&self, type_: u32) -> bool {
        self.get(type_).is_some()
    }

    /// Returns attribute `type_` as a `u32`, if present and long enough.
    pub fn u32(&self, type_: u32) -> Option<u32> {
        let d = self.get(type_)?.data();
        Some(u32::from_ne_bytes(d.get(..4)?.try_into().ok()?))
    }

    /// Returns attribute `type_` as a `u8`, if present and long enough.
    pub fn u8(&self, type_: u32) -> Option<u8> {
        self.get(type_)?.data().first().copied()
    }

    /// Returns the payload of attribute `type_` if it is exactly `M` bytes.
    pub fn bytes<const M: usize>(&self, type_: u32) -> Option<[u8; M]> {
        self.get(type_)?.data().try_into().ok()
    }
}

/// A message being filled by a dump (`struct sk_buff` of a netlink reply).
///
/// # Invariants
///
/// `ptr` is a valid skb that the caller of the dump lets us append to.
pub struct NlMsg<'a> {
    ptr: *mut bindings::sk_buff,
    _p: PhantomData<&'a mut bindings::sk_buff>,
}

impl NlMsg<'_> {
    /// Wraps a netlink message being built in `ptr`, to append to.
    ///
    /// # Safety
    ///
    /// `ptr` must be a netlink message skb we may append to for `'a`.
    pub unsafe fn from_raw(ptr: *mut bindings::sk_buff) -> Self {
        // INVARIANT: By the caller's promise.
        Self {
            ptr,
            _p: PhantomData,
        }
    }

    /// Appends a nested attribute `type_` holding what `f` appends
    /// (`nla_nest_start_noflag()`, then `nla_nest_end()`); if `f` fails, the
    /// nest and everything `f` appended are removed (`nla_nest_cancel()`).
    pub fn nested(&mut self, type_: u32, f: impl FnOnce(&mut Self) -> Result) -> Result {
        // SAFETY: `ptr` is a valid message (type invariant).
        let nest = unsafe { bindings::nla_nest_start_noflag(self.ptr, type_ as c_int) };
        if nest.is_null() {
            return Err(Error::from_errno(-(bindings::EMSGSIZE as i32)));
        }
        let r = f(self);
        // SAFETY: `nest` was opened in this message above, and what `f`
        // appended (it had the message, not the nest) lies after it.
        unsafe {
            match r {
                Ok(()) => {
                    bindings::nla_nest_end(self.ptr, nest);
                }
                Err(_) => bindings::nla_nest_cancel(self.ptr, nest),
            }
        }
        r
    }

    /// Appends a `u32` attribute.
    pub fn put_u32(&mut self, type_: u32, value: u32) -> Result {
        // SAFETY: `ptr` is a valid message (type invariant).
        to_result(unsafe { bindings::nla_put_u32(self.ptr, type_ as c_int, value) })
    }

    /// Appends a `u8` attribute.
    pub fn put_u8(&mut self, type_: u32, value: u8) -> Result {
        // SAFETY: `ptr` is a valid message (type invariant).
        to_result(unsafe { bindings::nla_put_u8(self.ptr, type_ as c_int, value) })
    }

    /// Appends a binary attribute with the bytes of `value`; `EMSGSIZE` if
    /// it is longer than an `int` counts (no message has room for it).
    pub fn put_bytes(&mut self, type_: u32, value: &[u8]) -> Result {
        let len = c_int::try_from(value.len())
            .map_err(|_| Error::from_errno(-(bindings::EMSGSIZE as i32)))?;
        // SAFETY: `ptr` is a valid message (type invariant); `value` is
        // readable for `len` bytes.
        to_result(unsafe {
            bindings::nla_put(self.ptr, type_ as c_int, len, value.as_ptr().cast())
        })
    }
}
