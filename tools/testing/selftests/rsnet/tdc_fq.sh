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
PYTHONPATH="$here/tdc_site${PYTHONPATH:+:$PYTHONPATH}" \
	./tdc.py -f tc-tests/qdiscs/fq.json >"$work/tdc.out" 2>&1
rc=$?
c_loaded=$(module_refcnt sch_fq)

ktap_print_header
n=$(grep -cE '^(not )?ok [0-9]+' "$work/tdc.out")
ktap_set_plan $((n + 2))
grep -vE '^(not )?ok [0-9]+' "$work/tdc.out" | sed 's/^/# /' | head -40
while read -r line; do
	desc=$(echo "$line" | sed -E 's/^(not )?ok [0-9]+ //')
	case "$line" in
	ok*) ktap_test_pass "tdc $desc" ;;
	*) ktap_test_fail "tdc $desc" ;;
	esac
done < <(grep -E '^(not )?ok [0-9]+' "$work/tdc.out")
expect_eq "tdc ran all 19 fq.json tests (exit $rc)" 19 "$n"
expect_eq "C sch_fq was never loaded" none "$c_loaded"
fq_unload_all
rm -rf "$work"
ktap_finished
