// expect: E0423
// A TX cache policy cannot hand TCP an skb that CachedSkb::new() did not check.
use kernel::net::tcp::{CachedSkb, Sock, TxSkbCache};
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

impl TxSkbCache for Cf {
    fn get(sk: &Sock) -> Option<CachedSkb> {
        sk.tx_skb_cache_take().map(|c| CachedSkb(c.into_skb()))
    }

    fn put(_sk: &Sock, skb: CachedSkb) -> core::result::Result<(), CachedSkb> {
        Err(skb)
    }
}
