// SPDX-License-Identifier: GPL-2.0

#include <net/netlink.h>

__rust_helper void *rust_helper_nla_data(const struct nlattr *nla)
{
	return nla_data(nla);
}

__rust_helper int rust_helper_nla_len(const struct nlattr *nla)
{
	return nla_len(nla);
}

__rust_helper struct nlattr *rust_helper_nla_nest_start_noflag(struct sk_buff *skb,
							       int attrtype)
{
	return nla_nest_start_noflag(skb, attrtype);
}

__rust_helper int rust_helper_nla_nest_end(struct sk_buff *skb, struct nlattr *start)
{
	return nla_nest_end(skb, start);
}

__rust_helper void rust_helper_nla_nest_cancel(struct sk_buff *skb, struct nlattr *start)
{
	nla_nest_cancel(skb, start);
}

__rust_helper int rust_helper_nla_put_u32(struct sk_buff *skb, int attrtype, u32 value)
{
	return nla_put_u32(skb, attrtype, value);
}

__rust_helper int rust_helper_nla_put_u8(struct sk_buff *skb, int attrtype, u8 value)
{
	return nla_put_u8(skb, attrtype, value);
}
