// SPDX-License-Identifier: GPL-2.0
//! rsnet's data-cache model for QEMU TCG (`qemu-system-x86_64 -plugin
//! libcacheplugin.so,out=FILE`).
//!
//! Every guest load and store of a vCPU inside a marked region goes
//! through a model of one server core's data caches, per vCPU:
//!
//! - L1d 48 KiB, 12-way (64 sets), as a Golden Cove / Zen 4-class core;
//! - L2 2 MiB, 16-way (2,048 sets), Sapphire Rapids' per-core L2;
//! - LLC 32 MiB, 16-way (32,768 sets): one core's view of a shared L3.
//!
//! 64-byte lines, physical addresses (the guest's, as the hardware would
//! see them), LRU within a set, write-allocate, every level filled on a
//! miss (no back-invalidation). An access that straddles a line touches
//! both. No prefetcher: what is counted is what the code touches, which
//! is what a layout change moves; a prefetcher would hide streams from
//! both implementations alike. Caches keep their contents across
//! regions, as a core's do between packets.
//!
//! Regions are marked by the bench modules (`rsnet_cache_mark.h`): the
//! instruction `nopl 0x52534e42(%rax)` (begin) or `nopl 0x52534e45(%rax)`
//! (end), then a byte load from a page-aligned buffer at offset ID, the
//! region's number (0..4095). The plugin finds the marks as it translates
//! code; executed, a mark makes the vCPU's next access by the instruction
//! after it its id load, which is not counted. (Under icount QEMU delivers
//! interrupts between translation blocks only, so one can come between
//! the two only where the load starts the next block: its accesses count
//! as any others.) At exit the plugin
//! writes, per region number, the times it was entered, the accesses, the
//! stores and the misses of each level, summed over the vCPUs; and, per
//! region, the instructions executed by each translation block started
//! inside it, by the block's address (which function they are in).
//!
//! Under `-icount shift=0` the guest runs the same instructions in the
//! same order in every run, so two runs give the same counts.

use qemu_plugin_sys::{
    qemu_info_t, qemu_plugin_cb_flags, qemu_plugin_get_hwaddr, qemu_plugin_hwaddr_is_io,
    qemu_plugin_hwaddr_phys_addr, qemu_plugin_id_t, qemu_plugin_insn, qemu_plugin_insn_data,
    qemu_plugin_insn_size, qemu_plugin_insn_vaddr, qemu_plugin_mem_is_store, qemu_plugin_mem_rw,
    qemu_plugin_mem_size_shift, qemu_plugin_meminfo_t, qemu_plugin_register_atexit_cb,
    qemu_plugin_register_vcpu_insn_exec_cb, qemu_plugin_register_vcpu_mem_cb,
    qemu_plugin_register_vcpu_tb_exec_cb, qemu_plugin_register_vcpu_tb_trans_cb, qemu_plugin_tb,
    qemu_plugin_tb_get_insn, qemu_plugin_tb_n_insns, qemu_plugin_tb_vaddr, QEMU_PLUGIN_VERSION,
};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void};
use std::io::Write;
use std::ptr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// The plugin API version this plugin is built for (QEMU checks it).
#[path = "../../plugin_common.rs"]
mod plugin_common;
use plugin_common::{out_arg, pack_tb, unpack_tb};

#[no_mangle]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION as c_int;

const LINE_SHIFT: u32 = 6;
const MARK_BEGIN: u32 = 0x5253_4e42;
const MARK_END: u32 = 0x5253_4e45;
/// `nopl disp32(%rax)`: 0f 1f 80, then the displacement.
const NOPL_DISP32: [u8; 3] = [0x0f, 0x1f, 0x80];
const MAX_VCPUS: usize = 64;
const MAX_IDS: usize = 4096;

/// One set-associative cache level, LRU: each set's tags, most recent
/// first.
struct Level {
    sets: usize,
    ways: usize,
    tags: Vec<u64>,
}

impl Level {
    fn new(bytes: usize, ways: usize) -> Self {
        let sets = (bytes >> LINE_SHIFT) / ways;
        assert!(sets.is_power_of_two());
        Self {
            sets,
            ways,
            tags: vec![u64::MAX; sets * ways],
        }
    }

    /// Looks `line` up; returns `true` on a hit. Either way the line is
    /// the set's most recent afterwards (a miss evicts the least recent).
    fn access(&mut self, line: u64) -> bool {
        let set = (line as usize) & (self.sets - 1);
        let s = &mut self.tags[set * self.ways..(set + 1) * self.ways];
        match s.iter().position(|&t| t == line) {
            Some(p) => {
                s[..=p].rotate_right(1);
                true
            }
            None => {
                s.rotate_right(1);
                s[0] = line;
                false
            }
        }
    }
}

#[derive(Clone, Copy, Default)]
struct Counts {
    enters: u64,
    accesses: u64,
    stores: u64,
    l1: u64,
    l2: u64,
    llc: u64,
}

/// A vCPU's caches and the region it is in.
struct Vcpu {
    l1: Level,
    l2: Level,
    llc: Level,
    active: Option<usize>,
    counts: Vec<Counts>,
    /// Misses per (region, instruction address), per level.
    by_pc: HashMap<(usize, u64), [u64; 3]>,
    /// Instructions executed per (region, translation block address).
    ins_by_tb: HashMap<(usize, u64), u64>,
}

impl Vcpu {
    fn new() -> Self {
        Self {
            l1: Level::new(48 << 10, 12),
            l2: Level::new(2 << 20, 16),
            llc: Level::new(32 << 20, 16),
            active: None,
            counts: vec![Counts::default(); MAX_IDS],
            by_pc: HashMap::new(),
            ins_by_tb: HashMap::new(),
        }
    }

    fn touch(&mut self, id: usize, pc: u64, line: u64, store: bool) {
        let c = &mut self.counts[id];
        c.accesses += 1;
        c.stores += u64::from(store);
        if self.l1.access(line) {
            return;
        }
        c.l1 += 1;
        let l2 = !self.l2.access(line);
        let llc = l2 && !self.llc.access(line);
        c.l2 += u64::from(l2);
        c.llc += u64::from(llc);
        let m = self.by_pc.entry((id, pc)).or_default();
        m[0] += 1;
        m[1] += u64::from(l2);
        m[2] += u64::from(llc);
    }
}

struct State {
    out: String,
    vcpus: Vec<Mutex<Option<Vcpu>>>,
    /// Per vCPU: 1 + the region it is in, 0 outside: read without the
    /// lock by every access.
    active: Vec<AtomicUsize>,
    /// Per vCPU: the mark just executed, whose id load comes next
    /// ([`pack_mark`]), or 0.
    pending: Vec<AtomicUsize>,
    /// Marks executed while another's id load was still to come.
    lost: AtomicU64,
    /// Marks whose id load starts the next translation block (an
    /// interrupt may come between them: its accesses count as usual).
    split: AtomicU64,
    /// Blocks translated and marks found in them.
    tbs: AtomicU64,
    marks: AtomicU64,
}

static STATE: OnceLock<State> = OnceLock::new();

fn state() -> &'static State {
    STATE.get().expect("installed")
}

/// The mark an instruction is, if it is one.
///
/// # Safety
///
/// `insn` is an instruction of the block being translated.
unsafe fn mark_kind(insn: *mut qemu_plugin_insn) -> Option<u32> {
    // SAFETY: The instruction is valid during the translation callback.
    if unsafe { qemu_plugin_insn_size(insn) } != 7 {
        return None;
    }
    let mut b = [0u8; 7];
    // SAFETY: As above; QEMU copies at most `b.len()` bytes into `b`.
    let n = unsafe { qemu_plugin_insn_data(insn, b.as_mut_ptr().cast(), b.len()) };
    if n != b.len() || b[..3] != NOPL_DISP32 {
        return None;
    }
    let disp = u32::from_le_bytes([b[3], b[4], b[5], b[6]]);
    (disp == MARK_BEGIN || disp == MARK_END).then_some(disp)
}

unsafe extern "C" fn on_tb(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    // SAFETY: `tb` is valid during the callback.
    let n = unsafe { qemu_plugin_tb_n_insns(tb) };
    state().tbs.fetch_add(1, Ordering::Relaxed);
    let mut mark = None;
    for i in 0..n {
        // The mark's id load is the next instruction, in this block or
        // the next; `on_mem` knows it by its address.
        // SAFETY: `i` is below the block's instruction count.
        let insn = unsafe { qemu_plugin_tb_get_insn(tb, i) };
        // SAFETY: As above; the callbacks are functions of this plugin,
        // the user data a mark kind, not a pointer.
        unsafe {
            mark = mark_kind(insn);
            if let Some(kind) = mark {
                state().marks.fetch_add(1, Ordering::Relaxed);
                qemu_plugin_register_vcpu_insn_exec_cb(
                    insn,
                    Some(on_mark),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    pack_mark(qemu_plugin_insn_vaddr(insn) + 7, kind) as *mut c_void,
                );
            } else {
                // The user data is the instruction's address, for the
                // misses by instruction.
                qemu_plugin_register_vcpu_mem_cb(
                    insn,
                    Some(on_mem),
                    qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
                    qemu_plugin_mem_rw::QEMU_PLUGIN_MEM_RW,
                    qemu_plugin_insn_vaddr(insn) as usize as *mut c_void,
                );
            }
        }
    }
    if mark.is_some() {
        state().split.fetch_add(1, Ordering::Relaxed);
    }
    // SAFETY: As above; the user data is the block's address and size
    // packed into one word, not a pointer.
    unsafe {
        qemu_plugin_register_vcpu_tb_exec_cb(
            tb,
            Some(on_tb_exec),
            qemu_plugin_cb_flags::QEMU_PLUGIN_CB_NO_REGS,
            pack_tb(qemu_plugin_tb_vaddr(tb), n) as *mut c_void,
        );
    }
}

/// A block starts on `vcpu`: inside a region, its instructions count for
/// the function it starts in (a block ends at the first branch, so nearly
/// always in the same function).
unsafe extern "C" fn on_tb_exec(vcpu: c_uint, word: *mut c_void) {
    let st = state();
    let Some(active) = st.active.get(vcpu as usize) else {
        return;
    };
    let id = active.load(Ordering::Relaxed);
    if id == 0 {
        return;
    }
    let (pc, n) = unpack_tb(word as usize);
    let mut g = st.vcpus[vcpu as usize]
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(v) = g.as_mut() {
        *v.ins_by_tb.entry((id - 1, pc)).or_default() += n;
    }
}

/// A mark's id load, by the address of its instruction (the mark's + 7),
/// and the mark's kind, in one non-zero word (as [`pack_tb`]).
fn pack_mark(load_pc: u64, kind: u32) -> usize {
    let k: u64 = if kind == MARK_BEGIN { 1 } else { 2 };
    ((load_pc & ((1 << 48) - 1)) | (k << 48)) as usize
}

/// The instruction address (its low 48 bits) and kind [`pack_mark`]
/// packed.
fn unpack_mark(word: usize) -> (u64, u32) {
    let w = word as u64;
    (
        w & ((1 << 48) - 1),
        if w >> 48 == 1 { MARK_BEGIN } else { MARK_END },
    )
}

unsafe extern "C" fn on_mark(vcpu: c_uint, word: *mut c_void) {
    let st = state();
    if let Some(p) = st.pending.get(vcpu as usize) {
        if p.swap(word as usize, Ordering::Relaxed) != 0 {
            st.lost.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The id load after a mark: enters or leaves region `vaddr % MAX_IDS`.
fn mark_load(st: &State, vcpu: usize, kind: u32, vaddr: u64) {
    let mut g = st.vcpus[vcpu].lock().unwrap_or_else(|e| e.into_inner());
    let v = g.get_or_insert_with(Vcpu::new);
    let id = (vaddr & (MAX_IDS as u64 - 1)) as usize;
    if kind == MARK_BEGIN {
        v.active = Some(id);
        v.counts[id].enters += 1;
        st.active[vcpu].store(id + 1, Ordering::Relaxed);
    } else {
        v.active = None;
        st.active[vcpu].store(0, Ordering::Relaxed);
    }
}

unsafe extern "C" fn on_mem(
    vcpu: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    pc: *mut c_void,
) {
    let st = state();
    let Some(active) = st.active.get(vcpu as usize) else {
        return;
    };
    // The pending mark's id load, if this is its instruction; any other
    // access (an interrupt's, between a mark ending a block and its load
    // starting the next) counts as usual.
    let pending = st.pending[vcpu as usize].load(Ordering::Relaxed);
    if pending != 0 {
        let (load_pc, kind) = unpack_mark(pending);
        if pc as u64 & ((1 << 48) - 1) == load_pc {
            st.pending[vcpu as usize].store(0, Ordering::Relaxed);
            mark_load(st, vcpu as usize, kind, vaddr);
            return;
        }
    }
    let id = active.load(Ordering::Relaxed);
    if id == 0 {
        return;
    }
    // SAFETY: `info` is valid during the callback; the handle too.
    let (pa, size, store) = unsafe {
        let hw = qemu_plugin_get_hwaddr(info, vaddr);
        if !hw.is_null() && qemu_plugin_hwaddr_is_io(hw) {
            return;
        }
        let pa = if hw.is_null() {
            vaddr
        } else {
            qemu_plugin_hwaddr_phys_addr(hw)
        };
        (
            pa,
            1u64 << qemu_plugin_mem_size_shift(info),
            qemu_plugin_mem_is_store(info),
        )
    };
    let mut g = st.vcpus[vcpu as usize]
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let Some(v) = g.as_mut() else {
        return;
    };
    for line in (pa >> LINE_SHIFT)..=((pa + size - 1) >> LINE_SHIFT) {
        v.touch(id - 1, pc as usize as u64, line, store);
    }
}

unsafe extern "C" fn on_exit(_id: qemu_plugin_id_t, _udata: *mut c_void) {
    let st = state();
    let mut sum = vec![Counts::default(); MAX_IDS];
    let mut by_pc: HashMap<(usize, u64), [u64; 3]> = HashMap::new();
    let mut ins_by_tb: HashMap<(usize, u64), u64> = HashMap::new();
    for slot in &st.vcpus {
        let g = slot.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = g.as_ref() {
            for (s, c) in sum.iter_mut().zip(&v.counts) {
                s.enters += c.enters;
                s.accesses += c.accesses;
                s.stores += c.stores;
                s.l1 += c.l1;
                s.l2 += c.l2;
                s.llc += c.llc;
            }
            for (k, m) in &v.by_pc {
                let e = by_pc.entry(*k).or_default();
                for l in 0..3 {
                    e[l] += m[l];
                }
            }
            for (k, n) in &v.ins_by_tb {
                *ins_by_tb.entry(*k).or_default() += n;
            }
        }
    }
    let mut text = String::from(
        "# rsnet cacheplugin: L1d 48KiB/12w L2 2MiB/16w LLC 32MiB/16w, 64B lines, LRU, phys\n\
         # id enters accesses stores l1_misses l2_misses llc_misses\n",
    );
    for (id, c) in sum.iter().enumerate().filter(|(_, c)| c.enters > 0) {
        text += &format!(
            "{id} {} {} {} {} {} {}\n",
            c.enters, c.accesses, c.stores, c.l1, c.l2, c.llc
        );
    }
    // Per region, the instructions with the most L1 misses (kernel
    // addresses: cache-tables.py names their functions).
    text += "# pc id address l1_misses l2_misses llc_misses\n";
    let mut pcs: Vec<_> = by_pc.into_iter().collect();
    // Ties by address: the file is the same bytes whenever the counts are.
    pcs.sort_by_key(|&((id, pc), m)| (id, std::cmp::Reverse(m[0]), pc));
    let mut last = (usize::MAX, 0);
    for ((id, pc), m) in pcs {
        if last.0 != id {
            last = (id, 0);
        }
        last.1 += 1;
        if last.1 <= 64 {
            text += &format!("pc {id} {pc:x} {} {} {}\n", m[0], m[1], m[2]);
        }
    }
    // Per region, every block's instructions (cache-tables.py sums them
    // by function).
    text += "# ins id block_address instructions\n";
    let mut tbs: Vec<_> = ins_by_tb.into_iter().collect();
    tbs.sort_unstable();
    for ((id, pc), n) in tbs {
        text += &format!("ins {id} {pc:x} {n}\n");
    }
    text += &format!(
        "lost {}\nsplit {}\ntbs {}\nmarks {}\n",
        st.lost.load(Ordering::Relaxed),
        st.split.load(Ordering::Relaxed),
        st.tbs.load(Ordering::Relaxed),
        st.marks.load(Ordering::Relaxed)
    );
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
        eprintln!("cacheplugin: out=FILE is required");
        return -1;
    };
    let _ = STATE.set(State {
        out,
        vcpus: (0..MAX_VCPUS).map(|_| Mutex::new(None)).collect(),
        active: (0..MAX_VCPUS).map(|_| AtomicUsize::new(0)).collect(),
        pending: (0..MAX_VCPUS).map(|_| AtomicUsize::new(0)).collect(),
        lost: AtomicU64::new(0),
        split: AtomicU64::new(0),
        tbs: AtomicU64::new(0),
        marks: AtomicU64::new(0),
    });
    // SAFETY: The callbacks are functions of this plugin.
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, Some(on_tb));
        qemu_plugin_register_atexit_cb(id, Some(on_exit), ptr::null_mut());
    }
    0
}
