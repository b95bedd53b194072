// SPDX-License-Identifier: GPL-2.0

#include <net/pkt_sched.h>
#include <net/sch_generic.h>

__rust_helper unsigned int rust_helper_qdisc_psched_mtu(struct Qdisc *sch)
{
	return psched_mtu(qdisc_dev(sch));
}

__rust_helper void rust_helper_sch_tree_lock(struct Qdisc *q)
{
	sch_tree_lock(q);
}

__rust_helper void rust_helper_sch_tree_unlock(struct Qdisc *q)
{
	sch_tree_unlock(q);
}

__rust_helper int rust_helper_qdisc_drop_reason(struct sk_buff *skb, struct Qdisc *sch,
						struct sk_buff **to_free,
						enum qdisc_drop_reason reason)
{
	return qdisc_drop_reason(skb, sch, to_free, reason);
}

__rust_helper struct sk_buff *rust_helper_qdisc_peek_dequeued(struct Qdisc *sch)
{
	return qdisc_peek_dequeued(sch);
}

/* The part of qdisc_dequeue_internal() that does not call ->dequeue(). */
__rust_helper struct sk_buff *rust_helper_qdisc_dequeue_gso_skb(struct Qdisc *sch)
{
	struct sk_buff *skb = __skb_dequeue(&sch->gso_skb);

	if (skb) {
		qdisc_qlen_dec(sch);
		qdisc_qstats_backlog_dec(sch, skb);
	}
	return skb;
}

/* The device's pacing offload horizon, in ns, as sch_fq reads it. */
__rust_helper u64 rust_helper_qdisc_dev_max_pacing_offload_horizon(struct Qdisc *sch)
{
	return qdisc_dev(sch)->max_pacing_offload_horizon;
}
