// expect: E0521
// A page pool hook cannot keep a page past its call (to recycle it later, perhaps into another pool).
use kernel::c_str;
use kernel::net::page_pool::{AllocCache, BulkPages, Hook, Netmem, PagePool, RingProducerLock};
use kernel::prelude::*;

module! {
    type: Cf,
    name: "cf",
    authors: ["rsnet"],
    description: "compile-fail case",
    license: "GPL",
}

struct Cf;

impl kernel::Module for Cf {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        Ok(Cf)
    }
}

/// Somewhere that outlives the call.
fn keep(netmem: Netmem<'static>) {
    core::mem::forget(netmem);
}

impl Hook for Cf {
    fn refill_alloc_cache<'a>(_pool: &'a PagePool, _cache: AllocCache<'a>) -> Option<Netmem<'a>> {
        None
    }

    fn put_unrefed<'a>(
        _pool: &'a PagePool,
        netmem: Netmem<'a>,
        _dma_sync_size: u32,
        _cache: Option<AllocCache<'a>>,
        _ring: RingProducerLock<'a>,
    ) {
        keep(netmem);
    }

    fn put_bulk<'a>(
        _pool: &'a PagePool,
        _pages: &mut BulkPages<'a>,
        _cache: Option<AllocCache<'a>>,
        _ring: RingProducerLock<'a>,
    ) {
    }
}
