// SPDX-License-Identifier: GPL-2.0

//! tcp_tx_skb_cache: one TX skb per socket, kept for reuse.
//!
//! Linux 5.2 added this (472c2e07eef0 "tcp: add one skb cache for tx",
//! 0b7d7f6b2208 "tcp: add tcp_tx_skb_cache sysctl") and 5.16 removed it
//! (d8b81175e412). This module brings the policy back in Rust on top of the
//! hook of `include/net/tcp.h`: when the write queue frees an skb that nobody
//! else references, keep it in the socket; the next header-only allocation
//! of that socket (`tcp_stream_alloc_skb()`, which only makes those) reuses
//! it instead of going to the slab.
//!
//! `net.ipv4.tcp_tx_skb_cache` (0 or 1, default 0) flips the static key
//! that gates the hooks. `/proc/sys/rsnet/tcp_tx_skb_cache/{hits,misses,
//! puts,refused}` count what the cache did.

use kernel::c_str;
use kernel::net::tcp::{self, CachedSkb, Sock, TxSkbCache, TxSkbCacheRegistration};
use kernel::prelude::*;
use kernel::sync::atomic::{Atomic, Relaxed};
use kernel::sysctl::{Entry, Handler, Registration, Scope};

/// Allocations served from the cache.
static HITS: Atomic<u64> = Atomic::new(0);
/// Allocations that found the cache empty.
static MISSES: Atomic<u64> = Atomic::new(0);
/// Freed skbs kept in the cache.
static PUTS: Atomic<u64> = Atomic::new(0);
/// Freed skbs not kept: slot taken, or the skb not reusable (cloned,
/// destructor, zerocopy or other shared-info state).
static REFUSED: Atomic<u64> = Atomic::new(0);

fn count(counter: &Atomic<u64>) {
    counter.add(1, Relaxed);
}

struct TxCache;

impl TxSkbCache for TxCache {
    fn get(sk: &Sock) -> Option<CachedSkb> {
        // The adapter resets it to what alloc_skb_fclone() returns; the
        // caller then sets truesize, charges memory, reserves MAX_TCP_HEADER
        // and inits the tsorted anchor exactly as for a new skb.
        let skb = sk.tx_skb_cache_take();
        count(if skb.is_some() { &HITS } else { &MISSES });
        skb
    }

    fn put(sk: &Sock, skb: CachedSkb) -> Result<(), CachedSkb> {
        // The adapter has refused a clone still in flight, a destructor or
        // zerocopy state, and released the payload pages: a cached skb is
        // not charged to the socket, so it must not pin memory behind the
        // accounting's back.
        match sk.tx_skb_cache_store(skb) {
            Ok(()) => {
                count(&PUTS);
                Ok(())
            }
            Err(skb) => {
                count(&REFUSED);
                Err(skb)
            }
        }
    }

    fn put_unfit(_sk: &Sock) {
        count(&REFUSED);
    }
}

/// `net.ipv4.tcp_tx_skb_cache`: the entry itself flips the static key
/// (as 5.2's `proc_do_static_key()`, `CAP_SYS_ADMIN` to write); nothing
/// else to do on writes.
struct Switch;

impl Handler for Switch {}

/// The counters are read-only; nothing to do on writes.
struct Stats;

impl Handler for Stats {}

static SWITCH: [Entry; 1] = [Entry::static_key(
    c_str!("tcp_tx_skb_cache"),
    tcp::tx_skb_cache_key,
)];
static STATS: [Entry; 4] = [
    Entry::counter(c_str!("hits"), &HITS),
    Entry::counter(c_str!("misses"), &MISSES),
    Entry::counter(c_str!("puts"), &PUTS),
    Entry::counter(c_str!("refused"), &REFUSED),
];

// Made and dropped in the order listed. Unloading: no more writes to the
// switch, then the hooks are unregistered (key off, running hooks waited
// for). Loading, a write that turns the key on before the cache is
// registered is harmless: the hooks find no ops and do nothing.
kernel::module_registrations! {
    type: TcpTxSkbCacheModule,
    registrations: {
        _switch: Registration<Switch> = (Scope::InitNet, c_str!("net/ipv4"), &SWITCH, Switch),
        _stats: Registration<Stats> =
            (Scope::Global, c_str!("rsnet/tcp_tx_skb_cache"), &STATS, Stats),
        _cache: TxSkbCacheRegistration<TxCache> = (),
    },
    name: "tcp_tx_skb_cache",
    authors: ["rsnet"],
    description: "Per-socket TCP TX skb cache (net.ipv4.tcp_tx_skb_cache)",
    license: "GPL",
}
