#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own tc-testing fq tests (tc-tests/qdiscs/fq.json of the test
# kernel's tree, unmodified) against the Rust fq, with C sch_fq barred from
# loading. Each tdc result becomes one KTAP result here.

here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${RSNET_KSRC:?RSNET_KSRC must point at the kernel source tree}"

# tdc writes next to itself: run it from a tree of its own whose files are
# links to the source's (a full copy took 8 s over the guest's 9p).
work=$(mktemp -d)
cp -rs "$RSNET_KSRC/tools/testing/selftests/tc-testing" "$work/"
cd "$work/tc-testing" || exit 1

fq_unload_all
fq_use_rust || { ktap_skip_all "sch_fq_rs does not load"; exit $KSFT_SKIP; }
# tdc_site/: pyroute2 hidden, tdc makes its netns with iproute2, and its
# nsPlugin returns once that netns is ready (see its sitecustomize.py).
#
# The file runs once as a whole. A tdc that fails a case in setup skips
# every later case, and one that dies (an exception its plugins raise)
# prints no result at all; so each case that did not pass there runs on
# its own (-e ID), twice at most, and that run is the one judged (the first
# failure is printed, and the count of cases the whole run passed).
tdc() {
	PYTHONPATH="$here/tdc_site${PYTHONPATH:+:$PYTHONPATH}" \
		./tdc.py -f tc-tests/qdiscs/fq.json "$@" >"$work/case.out" 2>&1
	rc=$?
	# A tdc that stopped half-way leaves its test namespace, and the Rust
	# fq in it loaded.
	ip netns list | awk '/^tcut/ {print $1}' | xargs -r -n1 ip netns delete
}
# case_line ID: ID's result line in case.out; true if it passed.
case_line() {
	line=$(grep -m1 -E "^(not )?ok [0-9]+ $1 - " "$work/case.out")
	[ "${line#ok }" != "$line" ] && [ "${line%# skipped*}" = "$line" ]
}
ids=$(python3 -c 'import json, sys; print(" ".join(t["id"] for t in json.load(open(sys.argv[1]))))' \
	tc-tests/qdiscs/fq.json)
tdc
cp "$work/case.out" "$work/all.out"
: >"$work/tdc.out"
: >"$work/notes"
i=0 whole=0
for id in $ids; do
	i=$((i + 1))
	cp "$work/all.out" "$work/case.out"
	if case_line "$id"; then
		whole=$((whole + 1))
	else
		why=$(grep -m1 -E "setting the network namespace|Error|^not ok [0-9]+ $id " "$work/case.out")
		echo "$id: failed in the whole run (${why:-no result}); run on its own" >>"$work/notes"
		tdc -e "$id"
		if ! case_line "$id"; then
			echo "$id: failed on its own; run again" >>"$work/notes"
			tdc -e "$id"
			case_line "$id"
		fi
		grep -vE '^(not )?ok [0-9]+|^Test [0-9a-f]+: |^Sent 1 packets|^All test results|^1\.\.1$|^ *$|SubPlugin|pyroute2' \
			"$work/case.out" >>"$work/notes"
	fi
	[ -n "$line" ] || line="not ok 1 $id - no result (tdc exit $rc)"
	echo "$line" | sed -E "s/^(not )?ok [0-9]+ /\1ok $i /" >>"$work/tdc.out"
done
# passed: the cases that ran and passed (not skipped).
passed() { grep -E '^ok [0-9]+' "$work/tdc.out" | grep -cv '# skipped\|# SKIP'; }
c_loaded=$(module_refcnt sch_fq)

ktap_print_header
n=$(grep -cE '^(not )?ok [0-9]+' "$work/tdc.out")
ktap_set_plan $((n + 2))
sed 's/^/# /' "$work/notes" | tail -40
ktap_print_msg "the run of the whole file passed $whole of its cases"
while read -r line; do
	desc=$(echo "$line" | sed -E 's/^(not )?ok [0-9]+ //')
	case "$line" in
	*'# skipped'*) ktap_test_fail "tdc $desc" ;;
	ok*) ktap_test_pass "tdc $desc" ;;
	*) ktap_test_fail "tdc $desc" ;;
	esac
done < <(grep -E '^(not )?ok [0-9]+' "$work/tdc.out")
expect_eq "tdc ran and passed all 19 fq.json tests" 19 "$(passed)"
expect_eq "C sch_fq was never loaded" none "$c_loaded"
fq_unload_all
rm -rf "$work"
ktap_finished
