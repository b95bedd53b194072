// expect: lifetime may not live long enough
// reset cannot keep its RtnlFree for a later callback: what it frees is freed when RTNL is released, and only RTNL's holder may add to that list.
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

#[derive(Default)]
struct State {
    free: Option<&'static mut RtnlFree<'static>>,
}

#[vtable]
impl QdiscOps for Cf {
    type Data = State;
    const ID: &'static CStr = kernel::c_str!("cf");

    fn init(
        _sch: &mut QdiscInit<'_, Self>,
        _o: Option<&NlAttr>,
        _e: &mut ExtAck<'_>,
    ) -> Result<State> {
        Ok(State::default())
    }
    fn enqueue<'a>(
        _sch: &'a Qdisc<Self>,
        _q: &mut State,
        skb: Incoming<'a, Self>,
        f: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        f.drop(skb, DropReason::FlowLimit)
    }
    fn dequeue(_sch: &Qdisc<Self>, _q: &mut State) -> Option<Queued<Self>> {
        None
    }
    fn reset(_sch: &Qdisc<Self>, q: &mut State, free: &mut RtnlFree<'_>) {
        // Kept for enqueue, which runs without RTNL.
        q.free = Some(free);
    }
    fn change(_sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &State, _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
