// expect: E0133
// A TX cache hook (softirq, socket lock) cannot turn the static key off: that sleeps, and only process context can prove it may.
use kernel::context::ProcessContext;
use kernel::net::tcp::{self, CachedSkb, Sock, TxSkbCache};
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
        tcp::tx_skb_cache_key().disable(&ProcessContext::new());
        sk.tx_skb_cache_take()
    }

    fn put(_sk: &Sock, skb: CachedSkb) -> core::result::Result<(), CachedSkb> {
        Err(skb)
    }
}
