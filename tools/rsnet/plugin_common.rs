// SPDX-License-Identifier: GPL-2.0
//! What rsnet's two TCG plugins (cacheplugin, profplugin) share: a block's
//! address and size in one callback word, and the `out=FILE` argument.

use std::ffi::{c_char, c_int, CStr};

/// A block's address and instruction count in one word: x86-64 virtual
/// addresses are 48 bits, sign-extended, so the count (at most 512 a
/// block) fits in the top 16 bits.
pub(crate) fn pack_tb(vaddr: u64, n: usize) -> usize {
    ((vaddr & ((1 << 48) - 1)) | ((n as u64) << 48)) as usize
}

/// The address and count [`pack_tb`] packed.
pub(crate) fn unpack_tb(word: usize) -> (u64, u64) {
    let w = word as u64;
    (((w << 16) as i64 >> 16) as u64, w >> 48)
}

/// The file an `out=FILE` argument names, if there is one.
///
/// # Safety
///
/// `argv` holds `argc` valid C strings, as QEMU passes them to
/// `qemu_plugin_install`.
pub(crate) unsafe fn out_arg(argc: c_int, argv: *mut *mut c_char) -> Option<String> {
    let mut out = None;
    for i in 0..argc.max(0) as usize {
        // SAFETY: The caller passes `argc` C strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(i)) }.to_string_lossy();
        if let Some(path) = arg.strip_prefix("out=") {
            out = Some(path.to_owned());
        }
    }
    out
}
