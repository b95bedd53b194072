// expect: E0133
// A module cannot register outside module_registrations! (a forgotten registration would outlive the module).
use kernel::net::tcp::{CachedSkb, Sock, TxSkbCache, TxSkbCacheRegistration};
use kernel::prelude::*;
use kernel::registration::Register;

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
        let reg = TxSkbCacheRegistration::<Cf>::register(())?;
        core::mem::forget(reg);
        Ok(Cf)
    }
}

impl TxSkbCache for Cf {
    fn get(sk: &Sock) -> Option<CachedSkb> {
        sk.tx_skb_cache_take()
    }

    fn put(_sk: &Sock, skb: CachedSkb) -> core::result::Result<(), CachedSkb> {
        Err(skb)
    }
}
