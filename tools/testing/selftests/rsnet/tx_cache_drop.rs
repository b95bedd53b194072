// SPDX-License-Identifier: GPL-2.0

//! A TX skb cache policy for `tcp_tx_skb_cache.sh` only: it keeps no skb,
//! and drops every skb TCP offers it, in Rust, where the shipped policy
//! hands back what it does not keep. What it shows: a [`CachedSkb`]
//! dropped by a policy is freed as consumed (`skb:consume_skb`), not
//! reported as a drop (`skb:kfree_skb`), since TCP was done with it.
//!
//! `/proc/sys/rsnet/tx_cache_drop/enable` flips the hooks' static key
//! (the shipped module, which owns `net.ipv4.tcp_tx_skb_cache`, must be
//! unloaded); `dropped` counts the skbs it dropped.

use kernel::c_str;
use kernel::net::tcp::{self, CachedSkb, Sock, TxSkbCache, TxSkbCacheRegistration};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sysctl::{Entry, Handler, Registration, Scope};

/// Skbs dropped by the policy.
static DROPPED: Atomic<u64> = Atomic::new(0);

struct DropAll;

impl TxSkbCache for DropAll {
    fn get(_sk: &Sock) -> Option<CachedSkb> {
        None
    }

    fn put(_sk: &Sock, skb: CachedSkb) -> Result<(), CachedSkb> {
        drop(skb);
        DROPPED.add(1, Relaxed);
        Ok(())
    }
}

/// Nothing to do on writes: the entry itself flips the key.
struct Switch;

impl Handler for Switch {}

static ENTRIES: [Entry; 2] = [
    Entry::static_key(c_str!("enable"), tcp::tx_skb_cache_key),
    Entry::counter(c_str!("dropped"), &DROPPED),
];

kernel::module_registrations! {
    type: TxCacheDrop,
    registrations: {
        _switch: Registration<Switch> =
            (Scope::Global, c_str!("rsnet/tx_cache_drop"), &ENTRIES, Switch),
        _cache: TxSkbCacheRegistration<DropAll> = (),
    },
    name: "tx_cache_drop",
    authors: ["rsnet"],
    description: "rsnet test: a TX skb cache policy that drops what it is given",
    license: "GPL",
}
