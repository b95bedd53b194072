// SPDX-License-Identifier: GPL-2.0
//! A QEMU TCG plugin for `make profile`: the guest instructions executed,
//! counted by the start address of the translation block that ran them.
//! At exit it writes one line per block address, `ADDR COUNT` (hex,
//! decimal), to the file `out=FILE` names; `tools/rsnet/profile.sh` maps
//! the addresses to the guest's symbols.
//!
//! A block ends at the first branch, so its instructions nearly always
//! belong to the function its start address is in.

use qemu_plugin_sys::{
    qemu_info_t, qemu_plugin_cb_flags, qemu_plugin_id_t, qemu_plugin_register_atexit_cb,
    qemu_plugin_register_vcpu_tb_exec_cb, qemu_plugin_register_vcpu_tb_trans_cb, qemu_plugin_tb,
    qemu_plugin_tb_n_insns, qemu_plugin_tb_vaddr, QEMU_PLUGIN_VERSION,
};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::io::Write;
use std::ptr;
use std::sync::{Mutex, OnceLock};

#[path = "../../plugin_common.rs"]
mod plugin_common;
use plugin_common::{out_arg, pack_tb, unpack_tb};

#[no_mangle]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION as c_int;

struct State {
    out: String,
    /// Instructions executed, by block start address.
    ins: Mutex<HashMap<u64, u64>>,
}

static STATE: OnceLock<State> = OnceLock::new();

unsafe extern "C" fn on_tb(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    // SAFETY: `tb` is valid during the translation callback; the callback
    // is a function of this plugin and its user data a packed word, not a
    // pointer.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        qemu_plugin_register_vcpu_tb_exec_cb(
            tb,
            Some(on_tb_exec),
            qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
            pack_tb(qemu_plugin_tb_vaddr(tb), n) as *mut c_void,
        );
    }
}

unsafe extern "C" fn on_tb_exec(_vcpu: c_uint, word: *mut c_void) {
    let (pc, n) = unpack_tb(word as usize);
    let st = STATE.get().expect("installed");
    let mut ins = st.ins.lock().unwrap_or_else(|e| e.into_inner());
    *ins.entry(pc).or_default() += n;
}

unsafe extern "C" fn on_exit(_id: qemu_plugin_id_t, _udata: *mut c_void) {
    let st = STATE.get().expect("installed");
    let ins = st.ins.lock().unwrap_or_else(|e| e.into_inner());
    let mut text = String::with_capacity(ins.len() * 24);
    for (pc, n) in ins.iter() {
        text += &format!("{pc:x} {n}\n");
    }
    if let Ok(mut f) = std::fs::File::create(&st.out) {
        let _ = f.write_all(text.as_bytes());
    }
}

/// Installs the plugin: `out=FILE` names the file written at exit.
///
/// # Safety
///
/// Called by QEMU once, with `argc` valid C strings in `argv`.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: qemu_plugin_id_t,
    _info: *const qemu_info_t,
    argc: c_int,
    argv: *mut *mut c_char,
) -> c_int {
    // SAFETY: QEMU passes `argc` C strings.
    let Some(out) = (unsafe { out_arg(argc, argv) }) else {
        eprintln!("profplugin: out=FILE is required");
        return -1;
    };
    let _ = STATE.set(State {
        out,
        ins: Mutex::new(HashMap::new()),
    });
    // SAFETY: The callbacks are functions of this plugin.
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_tb));
        qemu_plugin_register_atexit_cb(id, Some(on_exit), ptr::null_mut());
    }
    0
}
