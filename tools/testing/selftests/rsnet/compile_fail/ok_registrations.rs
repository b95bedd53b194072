// expect: ok
// Control: module_registrations! registers a TX cache and a sysctl table without unsafe.
use kernel::c_str;
use kernel::net::tcp::{CachedSkb, Sock, TxSkbCache, TxSkbCacheRegistration};
use kernel::prelude::*;
use kernel::sysctl::{Entry, Handler, Registration, Scope};

kernel::module_registrations! {
    type: Cf,
    init: || Ok(()),
    loaded: || pr_info!("loaded\n"),
    registrations: {
        _knobs: Registration<Knobs> = (Scope::Global, c_str!("cf"), &KNOBS, Knobs),
        _cache: TxSkbCacheRegistration<Policy> = (),
    },
    name: "cf",
    authors: ["rsnet"],
    description: "compile-fail case",
    license: "GPL",
}

static KNOBS: [Entry; 1] = [Entry::int(c_str!("x"), 0, 1)];

struct Knobs;

impl Handler for Knobs {}

struct Policy;

impl TxSkbCache for Policy {
    fn get(sk: &Sock) -> Option<CachedSkb> {
        sk.tx_skb_cache_take()
    }

    fn put(_sk: &Sock, skb: CachedSkb) -> core::result::Result<(), CachedSkb> {
        Err(skb)
    }
}
