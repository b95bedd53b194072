#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 2,000 random fq attribute sets (FQ_FUZZ_SETS; fixed seed; valid and
# invalid: wrong types, lengths and values, unknown and nested attributes)
# through raw rtnetlink as qdisc add, change and replace requests, against
# the Rust fq and then the C fq: same errno for each set, an extack message
# for each rejected one, the configuration intact after each rejected
# change or replace, and the same dump and ack (no extack warning C does
# not give) after each accepted one. Every 50th
# set also becomes the fq of a device that is up, and 64 datagrams go
# through it: each must be sent, queued or dropped. make fuzz runs 50,000
# sets. The kernel log is checked by make check.

. "$(dirname "$0")/lib.sh"
DEV=fqz0
TDEV=fqz1
TADDR=10.199.0.2
N=${FQ_FUZZ_SETS:-2000}
SEED=${FQ_FUZZ_SEED:-20261130}
NL="python3 -S $(dirname "$(readlink -f "$0")")/fq_nl.py"

ktap_print_header
ktap_set_plan 9

fq_unload_all
ip link del $DEV 2>/dev/null
ip link del $TDEV 2>/dev/null
# Left down: each set adds and deletes a root qdisc, and on a device that
# is up each of those grafts waits for an RCU grace period
# (dev_deactivate()); options are parsed and dumped the same either way.
ip link add $DEV type dummy
# The traffic device: up, IPv6 off (no packets of its own through the fq).
ip link add $TDEV type dummy
sysctl -q -w net.ipv6.conf.$TDEV.disable_ipv6=1 2>/dev/null
ip addr add 10.199.0.1/24 dev $TDEV
ip link set $TDEV up
out=$(mktemp -d)
fq_use_rust
check "Rust fq: $N sets sent" $NL fuzz $DEV "$N" "$SEED" "$out/rust.json" $TDEV $TADDR
fq_use_c
check "C fq: the same $N sets sent" $NL fuzz $DEV "$N" "$SEED" "$out/c.json" $TDEV $TADDR
while read -r line; do
	case "$line" in
	"ok - "*) ktap_test_pass "${line#ok - }" ;;
	"not ok - "*) ktap_test_fail "${line#not ok - }" ;;
	*) echo "$line" ;;
	esac
done < <($NL compare "$out/rust.json" "$out/c.json")
ip link del $DEV
ip link del $TDEV
fq_unload_all
rm -rf "$out"
ktap_finished
