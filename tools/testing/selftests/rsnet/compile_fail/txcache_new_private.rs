// expect: E0624
// A TX cache policy cannot make a CachedSkb of an skb TCP did not offer: CachedSkb::new() is private.
// (A dequeued skb is not an fclone of TCP's size; TCP reusing it would corrupt memory.)
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
        sk.tx_skb_cache_take()
            .and_then(|c| CachedSkb::new(c.into_skb()).ok())
    }

    fn put(_sk: &Sock, skb: CachedSkb) -> core::result::Result<(), CachedSkb> {
        Err(skb)
    }
}
