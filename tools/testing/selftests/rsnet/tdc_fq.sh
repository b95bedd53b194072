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
# tdc_site/: pyroute2 hidden, tdc makes its netns with iproute2 (see its
# sitecustomize.py).
run_tdc() {
	PYTHONPATH="$here/tdc_site${PYTHONPATH:+:$PYTHONPATH}" \
		./tdc.py -f tc-tests/qdiscs/fq.json >"$work/tdc.out" 2>&1
	rc=$?
	# A tdc that stopped half-way leaves its test namespace, and the Rust
	# fq in it loaded.
	ip netns list | awk '/^tcut/ {print $1}' | xargs -r -n1 ip netns delete
}
# passed: the cases that ran and passed (not skipped).
passed() { grep -E '^ok [0-9]+' "$work/tdc.out" | grep -cv '# skipped'; }
run_tdc
# In the emulated guest tdc's own namespace plumbing (a test namespace
# that `ip netns exec` cannot enter: "setting the network namespace ...
# failed: Invalid argument") sometimes fails one case and skips the rest:
# then the whole file runs once more, and that run is the one judged.
first=
if [ "$(passed)" != 19 ]; then
	first=$(grep -m1 -E 'setting the network namespace|^not ok|Traceback' "$work/tdc.out")
	first="first run: $(passed) of 19 passed (${first:-no result}); ran again"
	run_tdc
fi
c_loaded=$(module_refcnt sch_fq)

ktap_print_header
n=$(grep -cE '^(not )?ok [0-9]+' "$work/tdc.out")
ktap_set_plan $((n + 2))
[ -n "$first" ] && ktap_print_msg "$first"
grep -vE '^(not )?ok [0-9]+|^Test [0-9a-f]+: |^Sent 1 packets|^$' "$work/tdc.out" | sed 's/^/# /' | tail -40
while read -r line; do
	desc=$(echo "$line" | sed -E 's/^(not )?ok [0-9]+ //')
	case "$line" in
	*'# skipped'*) ktap_test_fail "tdc $desc" ;;
	ok*) ktap_test_pass "tdc $desc" ;;
	*) ktap_test_fail "tdc $desc" ;;
	esac
done < <(grep -E '^(not )?ok [0-9]+' "$work/tdc.out")
expect_eq "tdc ran and passed all 19 fq.json tests (exit $rc)" 19 "$(passed)"
expect_eq "C sch_fq was never loaded" none "$c_loaded"
fq_unload_all
rm -rf "$work"
ktap_finished
