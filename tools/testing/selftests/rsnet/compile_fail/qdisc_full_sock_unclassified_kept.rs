// expect: E0308
// a packet not classified cannot join the classified ones (whose socket is read as full).
use kernel::net::netlink::{ExtAck, NlAttr, NlMsg};
use kernel::net::sched::{
    FullOrNoSock, Incoming, Qdisc, QdiscChange, QdiscInit, QdiscOps, Queued, StatsDump, ToFree,
    XmitStatus,
};
use kernel::net::skbuff::{DropReason, SkbQueue};
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
    held: SkbQueue<Queued<Cf, FullOrNoSock>>,
    rate: u64,
}

#[vtable]
impl QdiscOps for Cf {
    type Data = State;
    const ID: &'static CStr = kernel::c_str!("cf");

    fn init(
        sch: &mut QdiscInit<'_, Self>,
        _o: Option<&NlAttr>,
        _e: &mut ExtAck<'_>,
    ) -> Result<State> {
        sch.set_limit(100);
        Ok(State {
            n: 0,
            held: SkbQueue::new(),
            rate: 0,
        })
    }
    fn enqueue<'a>(
        sch: &'a Qdisc<Self>,
        q: &mut State,
        skb: Incoming<'a, Self>,
        f: &mut ToFree<'_>,
    ) -> XmitStatus<'a> {
        q.n = q.n.wrapping_add(1);
        if q.held.len() >= sch.limit() {
            return f.drop(skb, DropReason::FlowLimit);
        }
        let (skb, status) = skb.queue();
        q.held.push_back(skb);
        status
    }
    fn dequeue(_sch: &Qdisc<Self>, q: &mut State) -> Option<Queued<Self>> {
        let skb = q.held.pop_front()?;
        if let Some(sk) = skb.full_sock() {
            q.rate = sk.pacing_rate();
        }
        Some(skb.forget_sock())
    }
    fn reset(_sch: &Qdisc<Self>, q: &mut State, _free: &mut kernel::net::skbuff::RtnlFree<'_>) {
        q.n = 0;
        q.held = SkbQueue::new();
    }
    fn change(sch: &mut QdiscChange<'_, Self>, _o: &NlAttr, _e: &mut ExtAck<'_>) -> Result {
        sch.with_lock(|sch, q| {
            sch.set_limit(q.n);
            sch.drop_to_limit(q);
        });
        Ok(())
    }
    fn dump(sch: &Qdisc<Self>, q: &State, m: &mut NlMsg<'_>) -> Result {
        m.nested(kernel::net::sched::TCA_OPTIONS, |m| {
            m.put_u32(1, sch.limit())?;
            m.put_u32(2, q.n)
        })
    }
    fn dump_stats(_sch: &Qdisc<Self>, q: &State, d: &mut StatsDump<'_>) -> Result {
        d.copy_app(&[q.n, 0u32])
    }
}
