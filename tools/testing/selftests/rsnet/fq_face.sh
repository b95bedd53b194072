#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Same face as C: for every fq attribute, the Rust fq and the C fq print
# the same `tc -s qdisc show` (which is `tc qdisc show` and the statistics)
# after an add and after a change, and reject the same invalid values (tc's
# verdict; the errno is compared by fq_fuzz.sh).
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

# face_batch: the tc commands of the comparison, one per line: for each
# option set, add a qdisc with it and show it (tc -s), then change a qdisc
# to it and show it.
face_batch() {
	local opts
	for opts in "${CMDS[@]}"; do
		echo "qdisc del dev $DEV root"
		echo "qdisc add dev $DEV root handle 1: fq $opts"
		echo "qdisc show dev $DEV"
		echo "qdisc replace dev $DEV root handle 1: fq limit 500"
		echo "qdisc change dev $DEV root handle 1: fq $opts"
		echo "qdisc show dev $DEV"
	done
	echo "qdisc del dev $DEV root"
}

# run_face BATCH OUT: run BATCH with one tc process (tc -s -force -batch;
# a tc per command was about 300 fork+execs per fq, tens of ms each under
# emulation, 80 s per fq) and write its transcript to OUT: each add, change,
# replace and del with "ok" or "failed" (tc's verdict; -force goes on after
# a failure), each show's output (tc -s prints what tc prints, then the
# statistics). tc's error messages go to OUT.err, with their commands.
run_face() {
	tc -s -force -batch "$1" >"$2.tc" 2>"$2.tcerr"
	awk -v out="$2.tc" -v err="$2.tcerr" '
	BEGIN {
		# One chunk per qdisc shown (tc flushes each qdisc it prints).
		while ((getline l < out) > 0) {
			if (l ~ /^qdisc /) n++
			sub(/next_packet_delay [^ ]+/, "", l)
			chunk[n] = chunk[n] l "\n"
		}
		while ((getline l < err) > 0) {
			if (l ~ /^Command failed .*:[0-9]+$/) {
				sub(/.*:/, "", l)
				failed[l] = 1
				msg[l] = first
				first = ""
			} else if (first == "") {
				first = l
			}
		}
	}
	$2 == "show" { printf "%s", (++c in chunk) ? chunk[c] : "(nothing shown)\n"; next }
	{
		print "tc " $0 ": " ((FNR in failed) ? "failed" : "ok")
		if (FNR in failed) print "tc " $0 ": " msg[FNR] >"/dev/stderr"
	}' "$1" >"$2" 2>"$2.err"
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
face_batch >"$out/batch"
fq_use_rust && run_face "$out/batch" "$out/rust.txt"
check "the Rust fq was used for the Rust run" test "$(module_refcnt sch_fq)" = none
fq_use_c && run_face "$out/batch" "$out/c.txt"
check "the C fq was used for the C run" test "$(module_refcnt sch_fq_rs)" = none
ktap_print_msg "errors, C:"
sed 's/^/#   /' "$out/c.txt.err"
ktap_print_msg "errors, Rust:"
sed 's/^/#   /' "$out/rust.txt.err"
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
