// expect: E0624
// no callback can tell the ancestors that packets left: drop_to_limit() does, with the counts of what it dropped.
use kernel::net::netlink::{ExtAck, NlAttr, NlMsg};
use kernel::net::sched::{Qdisc, QdiscChange, QdiscInit, QdiscOps, StatsDump, ToFree, XmitStatus};
use kernel::net::skbuff::{DropReason, SkBuff};
use kernel::prelude::*;
use kernel::str::CStr;

kernel::module_qdisc! {
    type: Cf,
    name: "cf",
    author: "rsnet",
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
    fn enqueue(sch: &Qdisc<Self>, _q: &mut State, skb: SkBuff, f: &mut ToFree<'_>) -> XmitStatus {
        f.drop(sch, skb, DropReason::FqFlowLimit)
    }
    fn dequeue(sch: &Qdisc<Self>, _q: &mut State) -> Option<SkBuff> {
        sch.tree_reduce_backlog(1, 1);
        None
    }
    fn reset(_sch: &Qdisc<Self>, _q: &mut State) {}
    fn change(_sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &State, _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
