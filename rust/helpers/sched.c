// SPDX-License-Identifier: GPL-2.0

#include <net/inet_ecn.h>
#include <net/netlink.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include <net/sock.h>

unsigned int rust_helper_qdisc_psched_mtu(struct Qdisc *sch)
{
	return psched_mtu(qdisc_dev(sch));
}

void rust_helper_sch_tree_lock(struct Qdisc *q)
{
	sch_tree_lock(q);
}

void rust_helper_sch_tree_unlock(struct Qdisc *q)
{
	sch_tree_unlock(q);
}

void rust_helper_qdisc_bstats_update(struct Qdisc *sch,
				     const struct sk_buff *skb)
{
	qdisc_bstats_update(sch, skb);
}

int rust_helper_qdisc_drop_reason(struct sk_buff *skb, struct Qdisc *sch,
				  struct sk_buff **to_free,
				  enum skb_drop_reason reason)
{
	return qdisc_drop_reason(skb, sch, to_free, reason);
}

struct sk_buff *rust_helper_qdisc_peek_dequeued(struct Qdisc *sch)
{
	return qdisc_peek_dequeued(sch);
}

/* The part of qdisc_dequeue_internal() that does not call ->dequeue(). */
struct sk_buff *rust_helper_qdisc_dequeue_gso_skb(struct Qdisc *sch)
{
	struct sk_buff *skb = __skb_dequeue(&sch->gso_skb);

	if (skb) {
		sch->q.qlen--;
		qdisc_qstats_backlog_dec(sch, skb);
	}
	return skb;
}

u32 rust_helper_skb_get_hash(struct sk_buff *skb)
{
	return skb_get_hash(skb);
}

void rust_helper_skb_orphan(struct sk_buff *skb)
{
	skb_orphan(skb);
}

int rust_helper_INET_ECN_set_ce(struct sk_buff *skb)
{
	return INET_ECN_set_ce(skb);
}

void *rust_helper_nla_data(const struct nlattr *nla)
{
	return nla_data(nla);
}

int rust_helper_nla_len(const struct nlattr *nla)
{
	return nla_len(nla);
}

struct nlattr *rust_helper_nla_nest_start_noflag(struct sk_buff *skb,
						 int attrtype)
{
	return nla_nest_start_noflag(skb, attrtype);
}

int rust_helper_nla_nest_end(struct sk_buff *skb, struct nlattr *start)
{
	return nla_nest_end(skb, start);
}

void rust_helper_nla_nest_cancel(struct sk_buff *skb, struct nlattr *start)
{
	nla_nest_cancel(skb, start);
}

int rust_helper_nla_put_u32(struct sk_buff *skb, int attrtype, u32 value)
{
	return nla_put_u32(skb, attrtype, value);
}

int rust_helper_nla_put_u8(struct sk_buff *skb, int attrtype, u8 value)
{
	return nla_put_u8(skb, attrtype, value);
}

unsigned long rust_helper_usecs_to_jiffies(unsigned int u)
{
	return usecs_to_jiffies(u);
}

