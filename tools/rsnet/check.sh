#!/usr/bin/env bash
# make check: build what is needed, run the rsnet kselftests in the test
# VM, judge their KTAP results and kernel logs, and print one summary line,
# last:
#   N passed, N failed[, N skipped]
# Exits non-zero on any failed test, a VM that did not finish, or a kernel
# log with a BUG, WARNING, Oops, KASAN, lockdep or kmemleak report.
#
# CHECK_VMS=N runs the programs in N VMs at once (default 2), split by the
# expected durations in tools/testing/selftests/rsnet/durations (split.py);
# a program always runs whole in one VM. Each VM runs its vCPUs on one host
# thread (single-threaded TCG, see vm.sh), so one VM leaves a core of a
# 2-core host idle: two VMs run the suite in about two thirds of the wall
# time of one (each program 1.0-1.4 times as long as alone).
# CHECK_VMS=1 runs them all in one VM.
#
# Every VM has the pair of virtio-net NICs on one hub (vm.sh RSNET_NET=loop)
# that tcp_tx_skb_cache_nic.sh sends through; no other test touches them
# (RSNET_NET= boots without them).
#
# TESTS="a.sh b.sh" runs a subset.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

prepare

ksft=$RSNET_TOP/tools/testing/selftests/rsnet
if [ -n "${TESTS:-}" ]; then
	read -ra tests <<<"$TESTS"
else
	read -ra tests <<<"$(sed -n 's/^TEST_PROGS *:= *//p' "$ksft/Makefile")"
fi
res=$RSNET_CACHE/results/check-$$
rm -rf "$res" && mkdir -p "$res"
# Host side first: the abstractions' compile-fail cases (about a second).
if [ -z "${TESTS:-}" ] || [[ " $TESTS " == *" compile_fail "* ]]; then
	bash "$RSNET_TOP/tools/rsnet/compile-fail.sh" >"$res/host.ktap"
	cat "$res/host.ktap"
	tests=("${tests[@]/compile_fail}")
	read -ra tests <<<"${tests[*]}"
fi
# fq_mutants.sh runs mutants of the Rust fq built here first: all of them
# (make mutants: FQ_MUTANTS=all), a sample of FQ_MUTANTS (default 8)
# drawn from FQ_MUTANTS_SEED (default a fresh seed, printed), or those
# FQ_MUTANTS names.
if [[ " ${tests[*]} " == *" fq_mutants.sh "* ]]; then
	if [ "${FQ_MUTANTS:-8}" = all ]; then
		bash "$RSNET_TOP/tools/rsnet/mutants.sh" all || exit
	elif ! [[ ${FQ_MUTANTS:-8} =~ ^[0-9]+$ ]]; then
		# shellcheck disable=SC2086 # a list of names
		bash "$RSNET_TOP/tools/rsnet/mutants.sh" names $FQ_MUTANTS || exit
	else
		bash "$RSNET_TOP/tools/rsnet/mutants.sh" sample "${FQ_MUTANTS:-8}" ${FQ_MUTANTS_SEED:+"$FQ_MUTANTS_SEED"} || exit
	fi
fi
mapfile -t lanes < <(python3 "$RSNET_TOP/tools/rsnet/split.py" "${CHECK_VMS:-2}" \
	"$ksft/durations" "${tests[@]}")
step "booting ${#lanes[@]} test VMs for ${#tests[@]} test programs (results: $res)"

# Expedited RCU grace periods (synchronize_rcu() no longer waits for the
# tick-driven state machine): adding, changing, grafting and deleting a
# qdisc, and loading and unloading a module, each wait for grace periods,
# and fault_inject.sh and fq_fuzz.sh do thousands of those; they spent
# three quarters of their time idle in those waits. call_rcu() callbacks
# still run after normal grace periods.
#
# tsc=reliable: the qemu64 CPU has no constant_tsc, so the kernel takes a
# 2-socket non-Intel machine's TSCs to be unsynchronized and keeps time
# with the HPET: every clock read (fq reads it per packet) is then an MMIO
# exit to QEMU, and clock_gettime() a system call (4.9 us in the guest
# against 0.9 us through the vDSO with the TSC). Under TCG both vCPUs read
# one counter, QEMU's, derived from the host's TSC: synchronized by
# construction. RSNET_APPEND adds more options.
append="rcupdate.rcu_expedited=1 tsc=reliable${RSNET_APPEND:+ $RSNET_APPEND}"

# lane DIR NUM:TEST...: one VM running those programs, with DIR as its
# results directory and console log; DIR/vm.rc holds vm.sh's exit status
# once the VM is gone. A TERM (check.sh interrupted) ends the VM.
lane() {
	local d=$1 vm rc
	shift
	mkdir -p "$d"
	echo "$@" >"$d/tests"
	RSNET_APPEND="$append" RSNET_RESULTS=$d RSNET_CONSOLE=$d/console.log VM_TIMEOUT=${VM_TIMEOUT:-4500} RSNET_NET=${RSNET_NET-loop} \
		bash "$RSNET_TOP/tools/rsnet/vm.sh" "$RSNET_TOP/tools/rsnet/guest-check.sh" "$@" \
		</dev/null >"$d/vm.out" 2>&1 &
	vm=$!
	trap 'kill -TERM $vm 2>/dev/null' TERM
	rc=0
	wait $vm || rc=$?
	while kill -0 $vm 2>/dev/null; do rc=0; wait $vm || rc=$?; done
	# The host CPU time of the VM (QEMU and vm.sh, all waited for by now):
	# the second line of times, children's user and system time (times
	# itself not in a pipe: that would run it in a child of its own).
	times >"$d/vm.times"
	sed -n 2p "$d/vm.times" >"$d/vm.cpu"
	echo $rc >"$d/vm.rc"
}
pids=()
for i in "${!lanes[@]}"; do
	# shellcheck disable=SC2086 # a lane is a list of NUM:TEST words
	lane "$res/vm$((i + 1))" ${lanes[$i]} &
	pids+=($!)
done
trap 'kill -TERM "${pids[@]}" 2>/dev/null || true; wait' INT TERM EXIT

# The monitor prints each program's start, KTAP and end as the VMs go, and
# once every VM is gone the table of times, the judgements and the summary.
rc=0
python3 "$RSNET_TOP/tools/rsnet/judge.py" "$res" "$ksft/durations" || rc=$?
exit $rc
