#!/usr/bin/env bash
# make check: build what is needed, run the rsnet kselftests in the test VM,
# judge their KTAP results and the kernel log, and print one summary line:
#   N passed, N failed[, N skipped]
# Exits non-zero on any failed test, a VM that did not finish, or a kernel
# log with a BUG, WARNING, Oops, KASAN, lockdep or kmemleak report.
#
# TESTS="a.sh b.sh" runs a subset.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -n "${KDIR:-}" ] || bash "$RSNET_TOP/tools/rsnet/deps.sh"
bash "$RSNET_TOP/tools/rsnet/kernel.sh"
bash "$RSNET_TOP/tools/rsnet/modules.sh"

ksft=$RSNET_TOP/tools/testing/selftests/rsnet
if [ -n "${TESTS:-}" ]; then
	read -ra tests <<<"$TESTS"
else
	read -ra tests <<<"$(sed -n 's/^TEST_PROGS *:= *//p' "$ksft/Makefile")"
fi
export RSNET_RESULTS=$RSNET_CACHE/results/check-$$
rm -rf "$RSNET_RESULTS" && mkdir -p "$RSNET_RESULTS"
# Host side: the abstractions' compile-fail cases (about a second).
if [ -z "${TESTS:-}" ] || [[ " $TESTS " == *" compile_fail "* ]]; then
	bash "$RSNET_TOP/tools/rsnet/compile-fail.sh" | tee "$RSNET_RESULTS/ktap-host.log"
	tests=("${tests[@]/compile_fail}")
	read -ra tests <<<"${tests[*]}"
fi
step "booting the test VM for ${#tests[@]} test programs (results: $RSNET_RESULTS)"
start=$(date +%s)
set +e
VM_TIMEOUT=${VM_TIMEOUT:-2400} bash "$RSNET_TOP/tools/rsnet/vm.sh" \
	"$RSNET_TOP/tools/rsnet/guest-check.sh" "${tests[@]}"
vmrc=$?
set -e
step "VM finished in $(( $(date +%s) - start ))s (exit $vmrc)"
cp "$LOGDIR/vm-console.log" "$RSNET_RESULTS/console.log" 2>/dev/null || true

python3 "$RSNET_TOP/tools/rsnet/judge.py" "$RSNET_RESULTS"
