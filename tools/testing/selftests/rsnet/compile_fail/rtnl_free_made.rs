// expect: E0624
// a qdisc cannot make an RtnlFree of its own (in enqueue, without RTNL): only the reset and change adapters, under RTNL, make one.
use kernel::net::netlink::{ExtAck, NlAttr, NlMsg};
use kernel::net::sched::{
    Incoming, Qdisc, QdiscChange, QdiscInit, QdiscOps, Queued, ToFree, XmitStatus,
};
use kernel::net::skbuff::{DropReason, RtnlFree};
use kernel::prelude::*;
use kernel::str::CStr;

kernel::module_qdisc! {
    type: Cf,
    name: "cf",
    authors: ["rsnet"],
    description: "compile-fail case",
    license: "GPL",
}

struct Cf;

#[vtable]
impl QdiscOps for Cf {
    type Data = ();
    const ID: &'static CStr = kernel::c_str!("cf");

    fn init(
        _sch: &mut QdiscInit<'_, Self>,
        _o: Option<&NlAttr>,
        _e: &mut ExtAck<'_>,
    ) -> Result<()> {
        Ok(())
    }
    fn enqueue<'a>(
        _sch: &'a Qdisc<Self>,
        _q: &mut (),
        skb: Incoming<'a, Self>,
        _f: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        // SAFETY: wrong: enqueue does not hold RTNL.
        let mut free = unsafe { RtnlFree::new() };
        let (s, st) = skb.queue();
        free.free(s);
        let _ = DropReason::FlowLimit;
        st
    }
    fn dequeue(_sch: &Qdisc<Self>, _q: &mut ()) -> Option<Queued<Self>> {
        None
    }
    fn reset(_sch: &Qdisc<Self>, _q: &mut (), _free: &mut RtnlFree<'_>) {}
    fn change(_sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &(), _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
