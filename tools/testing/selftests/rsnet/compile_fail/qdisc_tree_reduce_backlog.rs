// expect: E0624
// no callback can tell the ancestors that packets left: drop_to_limit() does, with the counts of what it dropped.
use kernel::net::netlink::{ExtAck, NlAttr, NlMsg};
use kernel::net::sched::{
    Incoming, Qdisc, QdiscChange, QdiscInit, QdiscOps, Queued, StatsDump, ToFree, XmitStatus,
};
use kernel::net::skbuff::DropReason;
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

struct State {
    n: u32,
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
        Ok(State { n: 0 })
    }
    fn enqueue<'a>(
        sch: &'a Qdisc<Self>,
        _q: &mut State,
        skb: Incoming<'a, Self>,
        f: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        f.drop(skb, DropReason::FlowLimit)
    }
    fn dequeue(sch: &Qdisc<Self>, _q: &mut State) -> Option<Queued<Self>> {
        sch.tree_reduce_backlog(1, 1);
        None
    }
    fn reset(_sch: &Qdisc<Self>, _q: &mut State, _free: &mut kernel::net::skbuff::RtnlFree<'_>) {}
    fn change(_sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &State, _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
