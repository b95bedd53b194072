// expect: E0423
// no Queued (a counted skb) can be made but by Incoming::queue().
use kernel::net::netlink::{ExtAck, NlAttr, NlMsg};
use kernel::net::sched::{
    Incoming, Qdisc, QdiscChange, QdiscInit, QdiscOps, Queued, ToFree, XmitStatus,
};
use kernel::net::skbuff::{DropReason, SkBuff, SkbQueue};
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
    held: SkbQueue<Queued<Cf>>,
    raw: SkbQueue<SkBuff>,
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
        q: &mut State,
        skb: Incoming<'a, Self>,
        f: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        if let Some(raw) = q.raw.pop_front() {
            q.held.push_back(Queued(raw, core::marker::PhantomData));
        }
        f.drop(skb, DropReason::FlowLimit)
    }
    fn dequeue(_sch: &Qdisc<Self>, q: &mut State) -> Option<Queued<Self>> {
        q.held.pop_front()
    }
    fn reset(_sch: &Qdisc<Self>, q: &mut State, _free: &mut kernel::net::skbuff::RtnlFree<'_>) {
        q.held = SkbQueue::new();
    }
    fn change(_sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &State, _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
