// SPDX-License-Identifier: GPL-2.0

//! Rust sysctl sample.
//!
//! Registers `/proc/sys/rsnet/sample/` with three entries:
//!
//! - `value`: 0..=1000, default 10; the handler refuses odd values, to show
//!   a handler vetoing a write that the range check let through;
//! - `enabled`: 0 or 1, default 0, the shape of a static-key switch;
//! - `writes`: read-only, the number of writes the handler accepted.

use kernel::c_str;
use kernel::prelude::*;
use kernel::sysctl::{Entry, Handler, Registration, Scope, Values};

const VALUE: usize = 0;
const ENABLED: usize = 1;
const WRITES: usize = 2;

static ENTRIES: [Entry; 3] = [
    Entry::int(c_str!("value"), 0, 1000).initial(10),
    Entry::int(c_str!("enabled"), 0, 1),
    Entry::int(c_str!("writes"), 0, i32::MAX).read_only(),
];

struct Sample;

impl Handler for Sample {
    fn write(&self, values: &Values, index: usize, old: i32, new: i32) -> Result {
        if index == VALUE && new % 2 != 0 {
            pr_info!("value: refusing odd {new}\n");
            return Err(EINVAL);
        }
        if index == ENABLED && old != new {
            pr_info!("enabled: {old} -> {new}\n");
        }
        values.set(WRITES, values.get(WRITES).saturating_add(1));
        Ok(())
    }
}

kernel::module_registrations! {
    type: RustSysctl,
    loaded: || pr_info!("registered /proc/sys/rsnet/sample\n"),
    registrations: {
        _reg: Registration<Sample> = (Scope::Global, c_str!("rsnet/sample"), &ENTRIES, Sample),
    },
    name: "rust_sysctl",
    authors: ["rsnet"],
    description: "Rust sysctl sample",
    license: "GPL",
}
