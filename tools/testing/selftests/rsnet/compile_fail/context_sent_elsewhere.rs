// expect: E0277
// change cannot hand its process context to code that runs in another context: it is neither Send nor Sync.
use kernel::context::Atomic;
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
        f.drop(skb, DropReason::FlowLimit)
    }
    fn dequeue(_sch: &Qdisc<Self>, _q: &mut State) -> Option<Queued<Self>> {
        None
    }
    fn reset(_sch: &Qdisc<Self>, _q: &mut State, _free: &mut kernel::net::skbuff::RtnlFree<'_>) {}
    fn change(sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        // Handed to code that may run on another CPU, in another context.
        fn elsewhere<T: Sync>(_: &T) {}
        elsewhere(sch.process_context());
        Ok(())
    }
    fn dump(_sch: &Qdisc<Self>, _q: &State, _m: &mut NlMsg<'_>) -> Result {
        Ok(())
    }
}
