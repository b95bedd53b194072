#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel::net::sched::ChunkVec (the Rust fq's flow storage) through the
# chunkvec_test module, whose init runs the checks: each check it prints
# becomes a result here, and the module loads only if all passed.

. "$(dirname "$0")/lib.sh"

CHECKS=21

ktap_print_header
ktap_set_plan $((CHECKS + 2))

modprobe -r chunkvec_test 2>/dev/null
mark="chunkvec.sh: start $$ $RANDOM"
echo "$mark" >/dev/kmsg
check "modprobe chunkvec_test (loads only if every check passed)" modprobe chunkvec_test
# The module's lines after this run's marker: "ok: ..." or "FAILED: ...".
out=$(dmesg | sed -n "/$mark/,\$p" | sed -n 's/.*chunkvec_test: //p')
n=0
while IFS= read -r l; do
	case $l in
	"ok: "*) ktap_test_pass "${l#ok: }"; n=$((n + 1)) ;;
	"FAILED: "*) ktap_test_fail "${l#FAILED: }"; n=$((n + 1)) ;;
	esac
done <<<"$out"
# A check that did not run (an early error) must not go unnoticed.
for ((; n < CHECKS; n++)); do
	ktap_test_fail "check $((n + 1)) of $CHECKS did not report"
done
modprobe -r chunkvec_test 2>/dev/null
check "module unloads" test ! -e /sys/module/chunkvec_test

ktap_finished
