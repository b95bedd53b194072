// expect: E0080
// A qdisc's control-block struct with padding fails the build: its padding bytes would be read back as data.
use kernel::prelude::*;

kernel::qdisc_cb! {
    struct Cb {
        time_to_send: u64,
        band: u8,
    }
}

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
        let cb = Cb {
            time_to_send: 0,
            band: 0,
        };
        pr_info!("{} {}\n", cb.time_to_send, cb.band);
        Ok(Cf)
    }
}
