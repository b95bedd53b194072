#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Same face as C: for every fq attribute, the Rust fq and the C fq print
# the same `tc qdisc show` and `tc -s qdisc show`, and reject the same
# invalid values (tc's exit status; the errno is compared by fq_fuzz.sh).
# Where C answers only "RTNETLINK answers: ...", the Rust fq adds an extack
# message, which tc prints instead: the messages are logged, not compared.

. "$(dirname "$0")/lib.sh"
DEV=fqf0
CMDS=(
	""
	"limit 3000"
	"flow_limit 300"
	"quantum 9000"
	"quantum 100"
	"initial_quantum 900000"
	"initial_quantum 0x80000000"
	"maxrate 100000"
	"maxrate 10gbit"
	"nopacing"
	"pacing"
	"refill_delay 100ms"
	"refill_delay 1"
	"low_rate_threshold 10000"
	"orphan_mask 255"
	"timer_slack 100"
	"timer_slack 10us"
	"timer_slack 0"
	"ce_threshold 100"
	"ce_threshold 4ms"
	"horizon 100"
	"horizon 1s"
	"horizon_cap"
	"horizon_drop"
	"buckets 2048"
	"buckets 4"
	"buckets 1000000"
	"limit 100 flow_limit 10 quantum 3000 initial_quantum 15000 maxrate 1mbit refill_delay 10ms low_rate_threshold 1mbit orphan_mask 1023 timer_slack 20us ce_threshold 2ms horizon 2s horizon_cap buckets 256"
)

# tc_try ARGS...: run tc; print its exit status, and log its error, if any,
# on stderr.
tc_try() {
	local err rc
	err=$(tc "$@" 2>&1)
	rc=$?
	[ $rc != 0 ] && echo "$*: $(echo "$err" | head -1)" >&2
	echo "exit $rc"
}

# run_face: for each option set, add a qdisc, show it, change it, show it.
run_face() {
	local i=0 opts
	for opts in "${CMDS[@]}"; do
		i=$((i + 1))
		tc qdisc del dev $DEV root 2>/dev/null
		echo "== [$i] add fq $opts"
		# shellcheck disable=SC2086
		tc_try qdisc add dev $DEV root handle 1: fq $opts
		tc qdisc show dev $DEV
		tc -s qdisc show dev $DEV | sed -E 's/next_packet_delay [^ ]+//'
		echo "== [$i] change to fq $opts"
		tc qdisc replace dev $DEV root handle 1: fq limit 500
		# shellcheck disable=SC2086
		tc_try qdisc change dev $DEV root handle 1: fq $opts
		tc qdisc show dev $DEV
	done
	tc qdisc del dev $DEV root 2>/dev/null
}

ktap_print_header
ktap_set_plan 3

fq_unload_all
ip link del $DEV 2>/dev/null
ip link add $DEV type dummy
# No IPv6 chatter: the statistics must stay those of an idle device.
sysctl -q -w net.ipv6.conf.$DEV.disable_ipv6=1
ip link set $DEV up
out=$(mktemp -d)
fq_use_rust && run_face >"$out/rust.txt" 2>"$out/rust.err"
check "the Rust fq was used for the Rust run" test "$(module_refcnt sch_fq)" = none
fq_use_c && run_face >"$out/c.txt" 2>"$out/c.err"
check "the C fq was used for the C run" test "$(module_refcnt sch_fq_rs)" = none
ktap_print_msg "errors, C:"
sed 's/^/#   /' "$out/c.err"
ktap_print_msg "errors, Rust:"
sed 's/^/#   /' "$out/rust.err"
if diff -u "$out/c.txt" "$out/rust.txt" >"$out/diff.txt"; then
	ktap_test_pass "tc show, tc -s show and errors identical for ${#CMDS[@]} option sets"
else
	sed 's/^/# /' "$out/diff.txt" | head -60
	ktap_test_fail "tc show, tc -s show and errors identical for ${#CMDS[@]} option sets"
fi
ip link del $DEV
fq_unload_all
rm -rf "$out"
ktap_finished
