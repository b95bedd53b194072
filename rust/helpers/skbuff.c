// SPDX-License-Identifier: GPL-2.0

#include <linux/rtnetlink.h>
#include <linux/skbuff.h>
#include <net/inet_ecn.h>
#include <net/sock.h>

__rust_helper bool rust_helper_skb_cloned(const struct sk_buff *skb)
{
	return skb_cloned(skb);
}

__rust_helper bool rust_helper_skb_header_cloned(const struct sk_buff *skb)
{
	return skb_header_cloned(skb);
}

__rust_helper void rust_helper_skb_ext_reset(struct sk_buff *skb)
{
	skb_ext_reset(skb);
}

__rust_helper int rust_helper_pskb_trim(struct sk_buff *skb, unsigned int len)
{
	return pskb_trim(skb, len);
}

__rust_helper void rust_helper_skb_reset_tail_pointer(struct sk_buff *skb)
{
	skb_reset_tail_pointer(skb);
}

__rust_helper struct skb_shared_info *rust_helper_skb_shinfo(struct sk_buff *skb)
{
	return skb_shinfo(skb);
}

__rust_helper void rust_helper_kfree_skb(struct sk_buff *skb)
{
	kfree_skb(skb);
}

__rust_helper void rust_helper_skb_orphan(struct sk_buff *skb)
{
	skb_orphan(skb);
}

__rust_helper int rust_helper_INET_ECN_set_ce(struct sk_buff *skb)
{
	return INET_ECN_set_ce(skb);
}

/*
 * Whether INET_ECN_set_ce() would write the packet's ECN field: an IPv4 or
 * IPv6 header within the linear data, marked ECT(0) or ECT(1). Only reads.
 */
__rust_helper bool rust_helper_skb_ecn_settable(const struct sk_buff *skb)
{
	u8 ecn;

	switch (skb_protocol(skb, true)) {
	case cpu_to_be16(ETH_P_IP):
		if (skb_network_header(skb) + sizeof(struct iphdr) > skb_tail_pointer(skb))
			return false;
		ecn = ip_hdr(skb)->tos;
		break;
	case cpu_to_be16(ETH_P_IPV6):
		if (skb_network_header(skb) + sizeof(struct ipv6hdr) > skb_tail_pointer(skb))
			return false;
		ecn = ipv6_get_dsfield(ipv6_hdr(skb));
		break;
	default:
		return false;
	}
	ecn &= INET_ECN_MASK;
	return ecn == INET_ECN_ECT_0 || ecn == INET_ECN_ECT_1;
}

/*
 * kernel::net::skbuff::RtnlFree: whether the caller holds RTNL, which
 * guards the list rtnl_kfree_skbs() adds to. Exact with lockdep; without
 * it, whether RTNL is held at all. Warns once if not.
 */
__rust_helper bool rust_helper_rtnl_held_for_free(void)
{
	return !WARN_ON_ONCE(!rtnl_is_locked() || !lockdep_rtnl_is_held());
}
