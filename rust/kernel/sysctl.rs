// SPDX-License-Identifier: GPL-2.0

//! Sysctl tables of integer values, counters and static keys.
//!
//! C header: [`include/linux/sysctl.h`](srctree/include/linux/sysctl.h)
//!
//! A [`Registration`] puts a directory of integer entries under `/proc/sys`
//! (made by a module with [`module_registrations!`](crate::module_registrations)).
//! Every write is parsed and range-checked by the kernel's own
//! `proc_dointvec_minmax()`, so malformed, blank or out-of-range input fails
//! with `EINVAL` exactly as for a C sysctl and leaves the value unchanged.
//! A value that passes is then offered to the table's [`Handler`], which may
//! act on it (flip a static key, resize something) or refuse it; only when
//! the handler accepts is the new value stored. Counter entries show a
//! `'static` [`Atomic<u64>`] that the kernel side updates, read-only, and
//! static key entries show and set a [`StaticKeyFalse`].
//!
//! The tables are kernel-wide ([`Scope`]): writing any entry needs
//! `CAP_SYS_ADMIN` in the initial user namespace (`EPERM` otherwise, the
//! value unchanged), whatever the file's mode lets through.
//!
//! # Examples
//!
//! ```
//! use kernel::c_str;
//! use kernel::registration::Register;
//! use kernel::sysctl::{Entry, Handler, Registration, Scope, Values};
//!
//! struct Knobs;
//! impl Handler for Knobs {
//!     fn write(&self, _values: &Values, _index: usize, _old: i32, new: i32) -> Result {
//!         // Refuse odd values; everything else is stored.
//!         if new % 2 != 0 { Err(EINVAL) } else { Ok(()) }
//!     }
//! }
//!
//! static ENTRIES: [Entry; 1] = [Entry::int(c_str!("even"), 0, 100)];
//! // SAFETY: `reg` is dropped at the end of this test, while it runs.
//! let reg = unsafe {
//!     Registration::register((Scope::Global, c_str!("example"), &ENTRIES, Knobs))
//! }?;
//! assert_eq!(reg.values().get(0), 0);
//! // A module registers with `kernel::module_registrations!` instead, which
//! // needs no `unsafe`.
//! # Ok::<(), Error>(())
//! ```
//!
//! Writes reach the table as from user space, through procfs: the kernel's
//! parser and range check first, then the handler. What the parser refuses
//! fails with `EINVAL`, what the handler refuses with the handler's error;
//! either way the value stays as it was. A counter entry shows its counter.
//!
//! ```
//! use kernel::sync::atomic::{Atomic, Relaxed};
//! use kernel::c_str;
//! use kernel::registration::Register;
//! use kernel::sysctl::{Entry, Handler, Registration, Scope, Values};
//! # use kernel::{bindings, error::from_err_ptr, str::CStr};
//! # /// Opens `/proc/<path>` with `flags` in a kernel mount of procfs, as
//! # /// the kernel sets `sysctl.*=` boot parameters, and writes `val` to it
//! # /// at offset `pos` (or, if `val` is `None`, reads it into `buf`):
//! # /// `pwrite(2)` or `read(2)` from user space, with the sysctl core's checks.
//! # fn proc_io(path: &CStr, val: Option<&[u8]>, buf: &mut [u8], pos: i64) -> Result<usize> {
//! #     // SAFETY: The name is a C string.
//! #     let fs = unsafe { bindings::get_fs_type(c_str!("proc").as_char_ptr()) };
//! #     if fs.is_null() {
//! #         return Err(ENOENT);
//! #     }
//! #     // SAFETY: `fs` is a file system type we hold a reference on,
//! #     // dropped right after the mount.
//! #     let mnt = unsafe { bindings::kern_mount(fs) };
//! #     // SAFETY: The reference taken by `get_fs_type()`.
//! #     unsafe { bindings::put_filesystem(fs) };
//! #     let mnt = from_err_ptr(mnt)?;
//! #     // SAFETY: `mnt` is a mount we hold until `kern_unmount()` below.
//! #     let root = bindings::path { mnt, dentry: unsafe { (*mnt).mnt_root } };
//! #     let flags = if val.is_some() { bindings::O_WRONLY } else { bindings::O_RDONLY };
//! #     let flags = flags as i32;
//! #     // SAFETY: `root` is a valid path for the call; `path` a C string.
//! #     let file = unsafe { bindings::file_open_root(&root, path.as_char_ptr(), flags, 0) };
//! #     let ret = from_err_ptr(file).and_then(|file| {
//! #         let mut pos = pos;
//! #         // SAFETY: `file` is open; the buffers are valid for their lengths.
//! #         let n = unsafe {
//! #             match val {
//! #                 Some(v) => bindings::kernel_write(file, v.as_ptr().cast(), v.len(), &mut pos),
//! #                 None => {
//! #                     bindings::kernel_read(file, buf.as_mut_ptr().cast(), buf.len(), &mut pos)
//! #                 }
//! #             }
//! #         };
//! #         // SAFETY: `file` was opened above and is not used after this.
//! #         unsafe { bindings::filp_close(file, core::ptr::null_mut()) };
//! #         usize::try_from(n).map_err(|_| Error::from_errno(n as i32))
//! #     });
//! #     // SAFETY: The mount made above. The file on it is closed; its deferred
//! #     // release holds its own mount reference.
//! #     unsafe { bindings::kern_unmount(mnt) };
//! #     ret
//! # }
//! # let write_at =
//! #     |path: &CStr, val: &str, pos| proc_io(path, Some(val.as_bytes()), &mut [], pos);
//! # let write = |path: &CStr, val: &str| write_at(path, val, 0);
//! # let read = |path: &CStr| -> Result<KVec<u8>> {
//! #     let mut buf = [0u8; 32];
//! #     let n = proc_io(path, None, &mut buf, 0)?;
//! #     let mut v = KVec::new();
//! #     v.extend_from_slice(&buf[..n], GFP_KERNEL)?;
//! #     Ok(v)
//! # };
//!
//! static WRITES: Atomic<u64> = Atomic::new(0);
//! struct Even;
//! impl Handler for Even {
//!     fn write(&self, _values: &Values, _index: usize, _old: i32, new: i32) -> Result {
//!         WRITES.add(1, Relaxed);
//!         if new % 2 != 0 { Err(EINVAL) } else { Ok(()) }
//!     }
//! }
//!
//! static SENT: Atomic<u64> = Atomic::new(0);
//! static ENTRIES: [Entry; 2] = [
//!     Entry::int(c_str!("even"), -10, 100).initial(2),
//!     Entry::counter(c_str!("sent"), &SENT),
//! ];
//! // SAFETY: `reg` is dropped at the end of this test, while it runs.
//! let reg = unsafe {
//!     Registration::register((Scope::Global, c_str!("rsnet_doctest"), &ENTRIES, Even))
//! }?;
//! let even = c_str!("sys/rsnet_doctest/even");
//! assert_eq!(read(even)?, b"2\n");
//!
//! // Accepted by the parser and by the handler: stored.
//! assert_eq!(write(even, "42\n"), Ok(3));
//! assert_eq!(reg.values().get(0), 42);
//! assert_eq!(write(even, "-10"), Ok(3));
//! assert_eq!(read(even)?, b"-10\n");
//!
//! // Refused by the parser (not a number, blank, out of the entry's or
//! // of an int's range) or by the handler (odd): EINVAL, unchanged.
//! for bad in ["x", "\n", "101", "-12", "2147483648", "7", "7\n"] {
//!     assert_eq!(write(even, bad), Err(EINVAL));
//!     assert_eq!(reg.values().get(0), -10);
//! }
//! // As for a C sysctl, a write of nothing, or one past offset 0 (in the
//! // default `kernel.sysctl_writes_strict=1`), succeeds and changes
//! // nothing; the handler does not see it.
//! let writes = WRITES.load(Relaxed);
//! assert_eq!(write(even, ""), Ok(0));
//! assert_eq!(write_at(even, "8", 1), Ok(1));
//! assert_eq!(reg.values().get(0), -10);
//! assert_eq!(WRITES.load(Relaxed), writes);
//!
//! // A counter is read-only, and shows the counter's value.
//! SENT.store(7, Relaxed);
//! assert_eq!(read(c_str!("sys/rsnet_doctest/sent"))?, b"7\n");
//! assert_eq!(write(c_str!("sys/rsnet_doctest/sent"), "0"), Err(EACCES));
//! drop(reg);
//! assert_eq!(read(even), Err(ENOENT));
//! # Ok::<(), Error>(())
//! ```

use crate::{
    alloc::{flags::GFP_KERNEL, KBox, KVec},
    bindings,
    context::ProcessContext,
    error::{from_result, to_result},
    ffi::{c_int, c_ulong, c_void},
    prelude::*,
    static_key::StaticKeyFalse,
    str::CStr,
    sync::{
        atomic::{Atomic, Relaxed},
        Mutex,
    },
};
use core::ptr::{self, NonNull};

/// Description of one entry of a sysctl table.
#[derive(Clone, Copy)]
pub struct Entry {
    name: &'static CStr,
    mode: u16,
    min: i32,
    max: i32,
    initial: i32,
    counter: Option<&'static Atomic<u64>>,
    key: Option<fn() -> &'static StaticKeyFalse>,
}

impl Entry {
    /// A read-write (`0644`) integer entry called `name` that accepts
    /// `min..=max` and starts at `min`.
    pub const fn int(name: &'static CStr, min: i32, max: i32) -> Self {
        Self {
            name,
            mode: 0o644,
            min,
            max,
            initial: min,
            counter: None,
            key: None,
        }
    }

    /// A read-only (`0444`) entry called `name` that shows `counter`.
    pub const fn counter(name: &'static CStr, counter: &'static Atomic<u64>) -> Self {
        Self {
            name,
            mode: 0o444,
            min: 0,
            max: 0,
            initial: 0,
            counter: Some(counter),
            key: None,
        }
    }

    /// A read-write (`0644`) entry called `name` that shows and sets the
    /// static key `key` returns, as C's `proc_do_static_key()` does: a
    /// read shows whether the key is on (`static_key_enabled()`, whoever
    /// turned it on), a write of 1 or 0 turns it on or off. The table's
    /// [`Handler`] sees the write first and may refuse it.
    pub const fn static_key(name: &'static CStr, key: fn() -> &'static StaticKeyFalse) -> Self {
        Self {
            name,
            mode: 0o644,
            min: 0,
            max: 1,
            initial: 0,
            counter: None,
            key: Some(key),
        }
    }

    /// Returns the entry with initial value `value`.
    pub const fn initial(mut self, value: i32) -> Self {
        self.initial = value;
        self
    }

    /// Returns the entry made read-only (`0444`): user space reads it, the
    /// kernel sets it with [`Values::set`].
    pub const fn read_only(mut self) -> Self {
        self.mode = 0o444;
        self
    }
}

/// Where a table is registered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A global directory (`register_sysctl_sz()`), for paths outside `net/`.
    Global,
    /// The initial network namespace (`register_net_sysctl_sz(&init_net, ..)`),
    /// for paths under `net/` such as `net/ipv4`; like the C global tables
    /// there, the entries are seen from the initial namespace only.
    InitNet,
}

/// What a table does when user space writes a valid value.
pub trait Handler: Send + Sync + 'static {
    /// Called for a write of `new` (already parsed and within the entry's
    /// range) to entry `index`, whose value is `old`. Writes to one table
    /// are serialised, so `old` is current. Returning an error rejects the
    /// write with that error and keeps `old`. A write that parses nothing
    /// (empty, or not at offset 0 in the default
    /// `kernel.sysctl_writes_strict=1`) does not reach the handler; in the
    /// other modes a write not at offset 0 is parsed and applied, as C's.
    fn write(&self, values: &Values, index: usize, old: i32, new: i32) -> Result {
        let _ = (values, index, old, new);
        Ok(())
    }
}

/// The state of one entry; `ctl_table::data` points at it.
struct EntryState {
    value: Atomic<i32>,
    counter: Option<&'static Atomic<u64>>,
    key: Option<fn() -> &'static StaticKeyFalse>,
    // `proc_dointvec_minmax()` reads the bounds through `extra1`/`extra2`.
    min: c_int,
    max: c_int,
    index: usize,
}

/// The current values of a table's entries.
pub struct Values {
    entries: KVec<EntryState>,
}

impl Values {
    /// Returns the value of entry `index`.
    ///
    /// # Panics
    ///
    /// Panics if `index` is out of bounds, like slice indexing.
    pub fn get(&self, index: usize) -> i32 {
        self.entries[index].value.load(Relaxed)
    }

    /// Sets entry `index` to `value`, which is not range-checked: the kernel
    /// side is trusted. Meant for read-only entries that report state.
    ///
    /// # Panics
    ///
    /// Panics if `index` is out of bounds, like slice indexing.
    pub fn set(&self, index: usize, value: i32) {
        self.entries[index].value.store(value, Relaxed);
    }
}

/// The write lock of a table. All tables share one lock class, named
/// here: `new_mutex!` in this generic code would take its key from the
/// kernel crate but its name from each crate that instantiates
/// [`Registration`], and lockdep warns when it meets one key under two
/// names (and the name would go away with its module).
#[inline(never)]
fn new_write_lock() -> impl PinInit<Mutex<()>> {
    static NAME: &CStr = crate::c_str!("sysctl::Registration::write_lock");
    Mutex::new((), NAME, crate::static_lock_class!())
}

/// The parts of a registration that the proc handler reaches through
/// `ctl_table::extra1`; pinned because the table points into it.
#[pin_data]
struct Inner<T: Handler> {
    handler: T,
    values: Values,
    #[pin]
    write_lock: Mutex<()>,
}

/// A registered sysctl table; unregistered when dropped.
///
/// # Invariants
///
/// `header` was returned by a successful `register_sysctl_sz()` or
/// `register_net_sysctl_sz()` for `table`, whose entries point at
/// `inner.values` (`data`) and at `inner` (`extra1`); it stays registered
/// until `drop`. `table` and `inner` are heap allocations that are neither
/// moved nor changed while registered.
pub struct Registration<T: Handler> {
    header: NonNull<bindings::ctl_table_header>,
    // Kept alive for the C side, which holds pointers into it.
    #[allow(dead_code)]
    table: KVec<bindings::ctl_table>,
    inner: Pin<KBox<Inner<T>>>,
}

// SAFETY: `Registration` only hands out shared references to `Inner`, which
// is `Sync` (`T: Sync`, atomics and a mutex); the raw pointers it holds are
// used only to unregister, which may happen from any thread.
unsafe impl<T: Handler> Send for Registration<T> {}
// SAFETY: As above; `&Registration` gives access only to `&Values`.
unsafe impl<T: Handler> Sync for Registration<T> {}

impl<T: Handler> crate::registration::Register for Registration<T> {
    type Args = (Scope, &'static CStr, &'static [Entry], T);

    /// Registers `entries` as the directory `path` (`/`-separated, e.g.
    /// `net/ipv4` or `rsnet/sample`) with `handler` for writes.
    unsafe fn register((scope, path, entries, handler): Self::Args) -> Result<Self> {
        let mut states = KVec::with_capacity(entries.len(), GFP_KERNEL)?;
        for (index, e) in entries.iter().enumerate() {
            let writable = e.mode & 0o222 != 0;
            if e.min > e.max
                || e.initial < e.min
                || e.initial > e.max
                || (e.counter.is_some() && writable)
            {
                return Err(EINVAL);
            }
            states.push(
                EntryState {
                    value: Atomic::new(e.initial),
                    counter: e.counter,
                    key: e.key,
                    min: e.min,
                    max: e.max,
                    index,
                },
                GFP_KERNEL,
            )?;
        }
        let inner = KBox::pin_init(
            pin_init!(Inner {
                handler,
                values: Values { entries: states },
                write_lock <- new_write_lock(),
            }),
            GFP_KERNEL,
        )?;
        let inner_ptr: *const Inner<T> = &*inner;

        let mut table = KVec::with_capacity(entries.len(), GFP_KERNEL)?;
        for (e, state) in entries.iter().zip(inner.values.entries.iter()) {
            table.push(
                bindings::ctl_table {
                    procname: e.name.as_char_ptr(),
                    data: ptr::from_ref(state).cast_mut().cast::<c_void>(),
                    maxlen: core::mem::size_of::<c_int>() as c_int,
                    mode: e.mode,
                    proc_handler: Some(proc_handler::<T>),
                    poll: ptr::null_mut(),
                    extra1: inner_ptr.cast_mut().cast::<c_void>(),
                    extra2: ptr::null_mut(),
                },
                GFP_KERNEL,
            )?;
        }

        let header = match scope {
            // SAFETY: `path` and every `procname` are `'static` C strings;
            // `table` holds `table.len()` initialised entries whose pointers
            // (into `inner` and the module's handler code) stay valid until
            // the matching unregister in `drop`, which our caller promises
            // happens before the module is unloaded.
            Scope::Global => unsafe {
                bindings::register_sysctl_sz(path.as_char_ptr(), table.as_mut_ptr(), table.len())
            },
            // SAFETY: As above; `init_net` is the initial network namespace,
            // which is never freed.
            Scope::InitNet => unsafe {
                bindings::register_net_sysctl_sz(
                    ptr::addr_of_mut!(bindings::init_net),
                    path.as_char_ptr(),
                    table.as_mut_ptr(),
                    table.len(),
                )
            },
        };
        let header = NonNull::new(header).ok_or(ENOMEM)?;
        // INVARIANT: registered above for `table`, which points into `inner`.
        Ok(Self {
            header,
            table,
            inner,
        })
    }
}

impl<T: Handler> Registration<T> {
    /// Returns the entries' current values.
    pub fn values(&self) -> &Values {
        &self.inner.values
    }
}

impl<T: Handler> Drop for Registration<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant `header` is registered. Unregistering
        // waits for handlers that are running, so `table` and `inner` (freed
        // after this) are no longer used once it returns.
        unsafe { bindings::unregister_sysctl_table(self.header.as_ptr()) };
    }
}

/// The `proc_handler` of every entry of a `Registration<T>`.
///
/// # Safety
///
/// Called by the sysctl core for an entry of a table built by
/// [`Register::register`](crate::registration::Register::register), with
/// `buffer`, `lenp` and `ppos` as for any `proc_handler`.
unsafe extern "C" fn proc_handler<T: Handler>(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    from_result(|| {
        // SAFETY: `table` is an entry built by `register`: its
        // `data` points at an `EntryState` inside the `Inner<T>` that `extra1`
        // points at, and both live until the registration is dropped, which
        // waits for this handler to return.
        let (mut tmp_table, state, inner) = unsafe {
            (
                *table,
                &*(*table).data.cast::<EntryState>(),
                &*(*table).extra1.cast::<Inner<T>>(),
            )
        };
        // Every table here is kernel-wide (global, or the initial
        // namespace's): a write needs CAP_SYS_ADMIN in the initial user
        // namespace, as C's proc_do_static_key() asks for its keys. The
        // file's mode alone would let a CAP_NET_ADMIN holder write a
        // `net/` entry (net_ctl_permissions()), and root of a user
        // namespace whose uid 0 is the host's write any.
        // SAFETY: `capable()` only reads the current task's credentials.
        if write != 0 && !unsafe { bindings::capable(bindings::CAP_SYS_ADMIN as c_int) } {
            return Err(EPERM);
        }
        if let Some(counter) = state.counter {
            // Read-only (checked at registration, enforced by the mode).
            // `unsigned long` is 32 bits wide on 32-bit architectures: a
            // count past it shows as its maximum there.
            let mut tmp = c_ulong::try_from(counter.load(Relaxed)).unwrap_or(c_ulong::MAX);
            tmp_table.data = ptr::from_mut(&mut tmp).cast::<c_void>();
            tmp_table.maxlen = core::mem::size_of::<c_ulong>() as c_int;
            tmp_table.extra1 = ptr::null_mut();
            tmp_table.extra2 = ptr::null_mut();
            // SAFETY: `tmp_table` describes one `unsigned long` at `tmp`,
            // alive for the call; the other arguments come from the core.
            return to_result(unsafe {
                bindings::proc_doulongvec_minmax(&tmp_table, 0, buffer, lenp, ppos)
            })
            .map(|()| 0);
        }
        let key = state.key.map(|key| key());
        let current = || match key {
            Some(key) => c_int::from(key.is_enabled()),
            None => state.value.load(Relaxed),
        };
        let mut tmp: c_int = current();
        // Let the C parser work on a copy, so the value is only stored once
        // both the parser and the handler accept it.
        tmp_table.data = ptr::from_mut(&mut tmp).cast::<c_void>();
        tmp_table.extra1 = ptr::from_ref(&state.min).cast_mut().cast::<c_void>();
        tmp_table.extra2 = ptr::from_ref(&state.max).cast_mut().cast::<c_void>();

        if write == 0 {
            // SAFETY: `tmp_table` is a valid `ctl_table` for one `c_int` at
            // `tmp`, alive for the call; the other arguments come from the
            // sysctl core unchanged.
            return to_result(unsafe {
                bindings::proc_dointvec_minmax(&tmp_table, 0, buffer, lenp, ppos)
            })
            .map(|()| 0);
        }
        let _guard = inner.write_lock.lock();
        // SAFETY: The sysctl core passes valid `lenp` and `ppos` pointers.
        let (len, pos) = unsafe { (*lenp, *ppos) };
        // Whether C's parser takes a write that does not start at offset 0
        // depends on `kernel.sysctl_writes_strict` (ignored in the default
        // strict mode, parsed in the others), which is not exported: parse
        // into two copies that start apart, from the same kernel buffer. A
        // parsed write leaves both at the value written, an ignored one
        // leaves them apart; an empty write is ignored in every mode.
        let mut other: c_int = 0;
        tmp = current();
        if len != 0 && pos != 0 {
            other = if tmp == 0 { 1 } else { 0 };
            let mut other_table = tmp_table;
            other_table.data = ptr::from_mut(&mut other).cast::<c_void>();
            // SAFETY: As below, for the copy at `other`; `len` and `pos` are
            // restored after it, so the second parse reads the same input.
            let ret =
                unsafe { bindings::proc_dointvec_minmax(&other_table, write, buffer, lenp, ppos) };
            // SAFETY: The sysctl core passes valid `lenp` and `ppos` pointers.
            unsafe { (*lenp, *ppos) = (len, pos) };
            to_result(ret)?;
        }
        // SAFETY: `tmp_table` is a valid `ctl_table` for one `c_int` at
        // `tmp` with bounds at `extra1`/`extra2`, all alive for the call; the
        // other arguments come from the sysctl core unchanged.
        to_result(unsafe {
            bindings::proc_dointvec_minmax(&tmp_table, write, buffer, lenp, ppos)
        })?;
        let parses = len != 0 && (pos == 0 || other == tmp);
        if parses {
            let old = current();
            inner.handler.write(&inner.values, state.index, old, tmp)?;
            if let Some(key) = key {
                // SAFETY: A proc handler runs in process context (a read()
                // or write() of the file), holding only the table's
                // `write_lock`; the value is lent to the two calls below
                // only.
                let ctx = unsafe { ProcessContext::new() };
                if tmp != 0 {
                    key.enable(&ctx);
                } else {
                    key.disable(&ctx);
                }
            }
            state.value.store(tmp, Relaxed);
        }
        Ok(0)
    })
}
