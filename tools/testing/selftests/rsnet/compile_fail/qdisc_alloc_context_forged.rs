// expect: E0277
// A module cannot make its own allocation context (one that says GFP_KERNEL) to pass to FlowTable::lookup in enqueue: AllocContext is sealed.
use kernel::alloc::{flags::GFP_KERNEL, Flags};
use kernel::context::{AllocContext, Atomic};
use kernel::flow_table::{Chains, FlowItem, FlowTable};
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

struct F;
impl FlowItem for F {
    fn hash(key: usize) -> usize {
        key
    }
    fn deadline(&self) -> u64 {
        0
    }
}

struct Sleepy;
impl AllocContext for Sleepy {
    fn gfp(&self) -> Flags {
        GFP_KERNEL
    }
}

struct State {
    n: u32,
    t: FlowTable<F>,
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
        Ok(State {
            n: 0,
            t: FlowTable::new(Chains::new(4, &Atomic)?),
        })
    }
    fn enqueue<'a>(
        _sch: &'a Qdisc<Self>,
        q: &mut State,
        skb: Incoming<'a, Self>,
        f: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        let _ = q.t.lookup(1, 0, |_| false, || F, &Sleepy);
        f.drop(skb, DropReason::FlowLimit)
    }
    fn dequeue(_sch: &Qdisc<Self>, _q: &mut State) -> Option<Queued<Self>> {
        None
    }
    fn reset(_sch: &Qdisc<Self>, _q: &mut State, _free: &mut kernel::net::skbuff::RtnlFree<'_>) {}
    fn change(sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        sch.with_lock(|_, q| q.n += 1);
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &State, _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
