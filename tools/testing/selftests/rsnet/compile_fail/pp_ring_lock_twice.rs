// expect: E0499
// A page pool hook cannot take its ring's producer lock twice (a self-deadlock): the second lock would borrow the call's RingProducerLock while the first guard holds it.
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

impl Hook for Cf {
    fn refill_alloc_cache<'a>(
        _pool: &'a PagePool,
        mut cache: AllocCache<'a>,
    ) -> Option<Netmem<'a>> {
        let _ = cache.ring_consume();
        None
    }

    fn put_unrefed<'a>(
        pool: &'a PagePool,
        netmem: Netmem<'a>,
        _dma_sync_size: u32,
        _cache: Option<AllocCache<'a>>,
        mut ring: RingProducerLock<'a>,
    ) {
        let first = ring.lock(pool);
        let second = ring.lock(pool);
        drop(second);
        drop(first);
        let _ = netmem;
    }

    fn put_bulk<'a>(
        _pool: &'a PagePool,
        pages: &mut BulkPages<'a>,
        _cache: Option<AllocCache<'a>>,
        _ring: RingProducerLock<'a>,
    ) {
        let _ = pages.take_next();
        core::mem::forget(pages);
    }
}
