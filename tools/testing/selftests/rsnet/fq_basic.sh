#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Rust fq (net/sched/sch_fq_rs.rs) registers "fq": the qdisc tc creates
# is the Rust one, it holds the module while in use, and it goes cleanly;
# with no fq loaded, tc autoloads the kernel's own fq and only that one.
# u32 attributes at their maximum behave as in C (flow_limit 2^32-1 never
# drops: C compares the flow's int qlen with it as unsigned).

. "$(dirname "$0")/lib.sh"
DEV=fqb0

ktap_print_header
ktap_set_plan 17

fq_unload_all
ip link del $DEV 2>/dev/null
ip link add $DEV type dummy && sysctl -qw net.ipv6.conf.$DEV.disable_ipv6=1 && ip link set $DEV up
check "modprobe sch_fq_rs" fq_use_rust
check "tc qdisc add ... fq" tc qdisc add dev $DEV root fq
expect_eq "the qdisc is fq" "fq" "$(tc qdisc show dev $DEV | awk '{print $2}')"
expect_eq "it holds the Rust module (refcnt 1)" 1 "$(module_refcnt sch_fq_rs)"
expect_eq "C sch_fq is not loaded" none "$(module_refcnt sch_fq)"
check "rmmod is refused while a qdisc uses it" test "$(modprobe -r sch_fq_rs 2>&1; echo $?)" != 0
expect_eq "module still loaded after refused rmmod" 1 "$(module_refcnt sch_fq_rs)"
tc qdisc del dev $DEV root
check "after qdisc del, rmmod works" modprobe -r sch_fq_rs
expect_eq "module gone" none "$(module_refcnt sch_fq_rs)"

# One fq per kernel: with no fq loaded, tc loads the kernel's own, the one
# module that net-sch-fq resolves to (C's sch_fq on the test kernel, the
# Rust sch_fq_rs with CONFIG_NET_SCH_FQ_RUST), and not the other.
fq_unload_all
own=$(modprobe -R net-sch-fq 2>/dev/null | tr '\n' ' ')
own=${own% }
other=$([ "$own" = sch_fq ] && echo sch_fq_rs || echo sch_fq)
check "net-sch-fq resolves to one module, sch_fq or sch_fq_rs (${own:-none})" \
	test "$own" = sch_fq -o "$own" = sch_fq_rs
check "tc qdisc add ... fq, no fq loaded" tc qdisc add dev $DEV root fq
expect_eq "tc loaded $own (refcnt 1)" 1 "$(module_refcnt "$own")"
expect_eq "and not $other" none "$(module_refcnt "$other")"
tc qdisc del dev $DEV root
fq_unload_all

# flow_limit 4294967295: the same packets through C and Rust fq (maxrate
# set, so no packet takes the fast path around the flow limit). Counters
# that do not depend on timing must match: sent, dropped, flows_plimit.
ip addr add 10.77.0.1/24 dev $DEV
# udp_burst N [SIZE]: N datagrams (of SIZE bytes, default 100) to an
# address behind $DEV.
udp_burst() {
	python3 -S -c "
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(int(sys.argv[1])):
    s.sendto(b'x' * int(sys.argv[2]), ('10.77.0.2', 9))" "$1" "${2:-100}"
}
# fq_counts: 'sent P pkt dropped D flows_plimit F' of the root fq
# (tc prints flows_plimit only when it is not 0).
fq_counts() {
	tc -s qdisc show dev $DEV | python3 -S -c "
import re, sys
t = sys.stdin.read()
m = re.search(r'Sent \d+ bytes (\d+) pkt \(dropped (\d+),', t)
p = re.search(r'flows_plimit (\d+)', t)
print(f'sent {m[1]} pkt dropped {m[2]} flows_plimit {p[1] if p else 0}' if m else 'no stats')"
}
for impl in c rust; do
	if [ $impl = c ]; then fq_use_c; else fq_use_rust; fi
	tc qdisc add dev $DEV root fq flow_limit 4294967295 maxrate 10gbit
	udp_burst 200
	printf -v "counts_$impl" '%s' "$(fq_counts)"
	tc qdisc del dev $DEV root
done
expect_eq "flow_limit 4294967295: C fq sends all 200, drops none" \
	"sent 200 pkt dropped 0 flows_plimit 0" "$counts_c"
expect_eq "flow_limit 4294967295: Rust fq counts as C" "$counts_c" "$counts_rust"

# limit lowered under a backlog: an fq under a tbf that lets one packet of
# 50 out (8bit/s, burst 1600) is changed to limit 10. It drops 39, the one
# the tbf peeked first, and tells its parent: both show 10 packets of 1042
# bytes queued, the tbf 39 dropped; the fq counts as sent all it dequeued
# (1 sent, 1 peeked, 38 dropped). C and Rust must show the same.
# tree_counts: sent packets, dropped, backlog bytes and packets of each
# qdisc on $DEV (not overlimits, which depend on timing).
tree_counts() {
	tc -s qdisc show dev $DEV | python3 -S -c "
import re, sys
out = []
for q in re.split(r'(?m)^qdisc ', sys.stdin.read())[1:]:
    m = re.search(r'Sent (\d+) bytes (\d+) pkt \(dropped (\d+),', q)
    b = re.search(r'backlog (\S+) (\d+)p', q)
    out.append(f'{q.split()[0]}: sent {m[2]} dropped {m[3]} backlog {b[1]} {b[2]}p' if m and b else 'no stats')
print('; '.join(out))"
}
for impl in c rust; do
	if [ $impl = c ]; then fq_use_c; else fq_use_rust; fi
	tc qdisc add dev $DEV root handle 1: tbf rate 8bit burst 1600 limit 1000000
	tc qdisc add dev $DEV parent 1:1 handle 10: fq
	udp_burst 50 1000
	tc qdisc change dev $DEV parent 1:1 handle 10: fq limit 10
	printf -v "tree_$impl" '%s' "$(tree_counts)"
	tc qdisc del dev $DEV root
done
ktap_print_msg "limit 10000 -> 10 with 49 queued, C: $tree_c"
check "C fq: the change leaves 10 queued in the fq and the tbf above it" \
	grep -q 'tbf: sent 1 dropped 39 backlog 10420b 10p; fq: sent 40 dropped 0 backlog 10420b 10p' <<<"$tree_c"
expect_eq "Rust fq: the same counts in the fq and its parent as C" "$tree_c" "$tree_rust"
ip link del $DEV
fq_unload_all
ktap_finished
