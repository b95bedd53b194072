// SPDX-License-Identifier: GPL-2.0

//! Page pools: the recycle and refill hot path.
//!
//! C headers: [`include/net/page_pool/types.h`](srctree/include/net/page_pool/types.h),
//! [`include/net/page_pool/hook.h`](srctree/include/net/page_pool/hook.h)
//!
//! A type implementing [`Hook`] becomes, once registered with
//! [`Registration`], the path by which every page pool of the kernel
//! recycles pages (`page_pool_put_unrefed_netmem()`,
//! `page_pool_put_netmem_bulk()`) and refills its alloc cache from its
//! ptr_ring. The hook works on the pool's own data (alloc cache, ring,
//! statistics), so the C path and the hook can take turns while pools are
//! in use; dropping the registration switches back to C and waits until no
//! hook runs any more.
//!
//! The alloc cache and the alloc statistics belong to the pool's consumer
//! (its NAPI context): only an [`AllocCache`] reaches them, and the hook is
//! given one only where C would touch them.
//!
//! One concern a file: `netmem` (the pages a hook holds), `stats` (the
//! pool's counters), `pool` (the pool, its ring's producer side and its
//! alloc cache), `bulk` (the pages of a bulk put) and `hook` (the trait
//! and its registration).

use crate::bindings;

mod bulk;
mod hook;
mod netmem;
mod pool;
mod stats;

pub use self::{
    bulk::{BulkPages, KeptPages},
    hook::{Hook, Registration},
    netmem::{Netmem, Recyclable},
    pool::{AllocCache, PagePool, RingProducer, RingProducerLock},
    stats::{AllocStat, RecycleStat},
};

/// No NUMA node preference (`NUMA_NO_NODE`).
pub const NUMA_NO_NODE: i32 = -1;
/// Size of the alloc cache (`PP_ALLOC_CACHE_SIZE`).
pub const PP_ALLOC_CACHE_SIZE: usize = bindings::PP_ALLOC_CACHE_SIZE as usize;
/// How far a refill fills the alloc cache (`PP_ALLOC_CACHE_REFILL`).
pub const PP_ALLOC_CACHE_REFILL: usize = bindings::PP_ALLOC_CACHE_REFILL as usize;

/// Returns the memory node of the current CPU (`numa_mem_id()`).
#[inline]
pub fn numa_mem_id() -> i32 {
    // SAFETY: No precondition; the value may be stale once preemptible,
    // which callers accept (C's refill runs in softirq, where it is stable).
    unsafe { bindings::numa_mem_id() }
}

/// The node whose pages a refill keeps (`pref_nid` in C's
/// `page_pool_refill_alloc_cache()`), for a pool on `pool_nid` in a
/// kernel with (`numa`) or without `CONFIG_NUMA`: the pool's node, or the
/// consumer's (`mem_id()`, called only then) if the pool has none. Without
/// `CONFIG_NUMA` the pool's node is ignored, as in C: every page is on
/// node 0 there, and so is the consumer.
///
/// ```
/// use kernel::net::page_pool::{pref_nid, NUMA_NO_NODE};
///
/// assert_eq!(pref_nid(1, true, || 0), 1);
/// assert_eq!(pref_nid(NUMA_NO_NODE, true, || 2), 2);
/// // A driver's nonzero node means nothing without CONFIG_NUMA.
/// assert_eq!(pref_nid(3, false, || 0), 0);
/// assert_eq!(pref_nid(NUMA_NO_NODE, false, || 0), 0);
/// ```
#[inline]
pub fn pref_nid(pool_nid: i32, numa: bool, mem_id: impl FnOnce() -> i32) -> i32 {
    if numa && pool_nid != NUMA_NO_NODE {
        pool_nid
    } else {
        mem_id()
    }
}
