#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# 2,000 random fq attribute sets (fixed seed; valid and invalid: wrong
# types, lengths and values) through raw rtnetlink, against the Rust fq and
# then the C fq: same errno for each set, an extack message for each
# rejected one, the configuration intact after each rejected change, and the
# same dump after each accepted one. The kernel log is checked by make check.

. "$(dirname "$0")/lib.sh"
DEV=fqz0
N=${FQ_FUZZ_SETS:-2000}
SEED=${FQ_FUZZ_SEED:-20261130}
NL="python3 -S $(dirname "$(readlink -f "$0")")/fq_nl.py"

ktap_print_header
ktap_set_plan 7

fq_unload_all
ip link del $DEV 2>/dev/null
# Left down: each set adds and deletes a root qdisc, and on a device that
# is up each of those grafts waits for an RCU grace period
# (dev_deactivate()); options are parsed and dumped the same either way.
ip link add $DEV type dummy
out=$(mktemp -d)
fq_use_rust
check "Rust fq: $N sets sent" $NL fuzz $DEV "$N" "$SEED" "$out/rust.json"
fq_use_c
check "C fq: the same $N sets sent" $NL fuzz $DEV "$N" "$SEED" "$out/c.json"
while read -r line; do
	case "$line" in
	"ok - "*) ktap_test_pass "${line#ok - }" ;;
	"not ok - "*) ktap_test_fail "${line#not ok - }" ;;
	*) echo "$line" ;;
	esac
done < <($NL compare "$out/rust.json" "$out/c.json")
ip link del $DEV
fq_unload_all
rm -rf "$out"
ktap_finished
