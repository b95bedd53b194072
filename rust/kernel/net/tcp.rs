// SPDX-License-Identifier: GPL-2.0

//! TCP: the per-socket TX skb cache hook.
//!
//! C header: [`include/net/tcp.h`](srctree/include/net/tcp.h) (the hook,
//! `struct tcp_tx_skb_cache_ops`).
//!
//! `tcp_stream_alloc_skb()` and `tcp_wmem_free_skb()` call a registered
//! [`TxSkbCache`] while the C static key [`tx_skb_cache_key()`] is on. The
//! slot for the cached skb is `struct sock::sk_tx_skb_cache`, which the C
//! side frees when the write queue is purged, so a cached skb never outlives
//! its socket, loaded module or not.
//!
//! What may be cached is decided here, not by the policy: only a
//! [`CachedSkb`], an skb checked to be unshared and free of state that a
//! reuse would corrupt, enters the slot, and the adapter itself puts it back
//! into the state of a freshly allocated skb before TCP reuses it.

mod tx_skb_cache;

pub use tx_skb_cache::{tx_skb_cache_key, CachedSkb, Sock, TxSkbCache, TxSkbCacheRegistration};
