// expect: ok
// Control: a qdisc using each context as allowed compiles (so the others fail for their reason).
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
        sch: &mut QdiscInit<'_, Self>,
        _o: Option<&NlAttr>,
        _e: &mut ExtAck<'_>,
    ) -> Result<State> {
        sch.set_limit(100);
        Ok(State { n: 0 })
    }
    fn enqueue(sch: &Qdisc<Self>, q: &mut State, skb: SkBuff, f: &mut ToFree<'_>) -> XmitStatus {
        q.n = q.n.wrapping_add(1);
        f.drop(sch, skb, DropReason::FqFlowLimit)
    }
    fn dequeue(_sch: &Qdisc<Self>, _q: &mut State) -> Option<SkBuff> {
        None
    }
    fn reset(_sch: &Qdisc<Self>, q: &mut State) {
        q.n = 0;
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
