# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared helpers for the rsnet kselftests: KTAP output through the kernel's
# own ktap_helpers.sh, and small checks used by several tests.

: "${BASE_DIR:?BASE_DIR must point at tools/testing/selftests}"
. "$BASE_DIR/kselftest/ktap_helpers.sh"

# check DESCRIPTION CMD...: one KTAP result from a command's exit status.
check() {
	local desc=$1
	shift
	if "$@"; then ktap_test_pass "$desc"; else ktap_test_fail "$desc"; fi
}

# failslab_task on|off: every slab allocation fails in a task that sets
# its make_it_fail (failslab's task-filter, probability 100), or
# failslab back to its defaults (nothing fails). fq_oracle's table limit
# run sets make_it_fail around the enqueues of its alloc_fail step.
failslab_task() {
	local f=/sys/kernel/debug/failslab
	[ -d $f ] || return 0
	if [ "$1" = on ]; then
		echo Y >$f/task-filter
		echo N >$f/ignore-gfp-wait
		echo 0 >$f/verbose
		echo 1 >$f/interval
		echo -1 >$f/times
		echo 100 >$f/probability
	else
		echo 0 >$f/probability
		echo 1 >$f/times
		echo 2 >$f/verbose
		echo Y >$f/ignore-gfp-wait
		echo N >$f/task-filter
	fi
}

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then
		ktap_test_pass "$1"
	else
		ktap_print_msg "$1: expected '$2', got '$3'"
		ktap_test_fail "$1"
	fi
}

# nap SECONDS: sleep(1) without a fork, for polling loops: the timeout of
# a read from a FIFO this shell holds open both ways, so nothing arrives.
# A fork and exec costs tens of milliseconds of the emulated guest's CPU.
NAP_FD=
nap() {
	if [ -z "$NAP_FD" ]; then
		sleep "$1"
	else
		read -r -t "$1" -u "$NAP_FD" _
	fi
	return 0
}
if NAP_FIFO=$(mktemp -u /tmp/rsnet_nap.XXXXXX) && mkfifo "$NAP_FIFO"; then
	exec {NAP_FD}<>"$NAP_FIFO"
	rm -f "$NAP_FIFO"
fi

# write_errno FILE VALUE...: write each VALUE to FILE with one write(2) (an
# open, write and close per value) and print the errno name of each (OK on
# success), one a line. printf, not echo, so "" is a 0-byte write. One
# Python for all the values: its start takes seconds in the emulated guest.
write_errno() {
	python3 -S - "$@" <<'PY'
import errno, os, sys
for value in sys.argv[2:]:
    try:
        fd = os.open(sys.argv[1], os.O_WRONLY)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)
        print("OK")
    except OSError as e:
        print(errno.errorcode[e.errno])
PY
}

# errno_mismatches FILE ERRNO VALUE...: write each VALUE to FILE
# (write_errno) and print " [VALUE]->GOT" for each whose errno is not ERRNO;
# nothing if all are.
errno_mismatches() {
	local file=$1 want=$2 i got
	shift 2
	mapfile -t got < <(write_errno "$file" "$@")
	for ((i = 1; i <= $#; i++)); do
		[ "${got[i - 1]}" = "$want" ] || printf ' [%s]->%s' "${!i}" "${got[i - 1]:-nothing}"
	done
}

# C sch_fq must not stand in for the Rust one: refuse to autoload it while
# a test wants the Rust fq (modprobe.d lives in the VM's writable /etc).
FQ_NO_C=/etc/modprobe.d/rsnet-no-c-fq.conf
fq_use_rust() {
	modprobe -r sch_fq 2>/dev/null
	echo "install sch_fq /bin/false" >$FQ_NO_C
	modprobe sch_fq_rs
}
fq_use_c() {
	rm -f $FQ_NO_C
	modprobe -r sch_fq_rs 2>/dev/null
	modprobe sch_fq
}
fq_unload_all() {
	rm -f $FQ_NO_C
	modprobe -r sch_fq_rs 2>/dev/null
	modprobe -r sch_fq 2>/dev/null
}
# module_refcnt NAME: the use count of a loaded module, or "none".
module_refcnt() {
	cat /sys/module/"$1"/refcnt 2>/dev/null || echo none
}

# net_tx_softirqs: NET_TX softirqs run so far, all CPUs. Each expiry of a
# qdisc watchdog schedules its qdisc there; with pktgen's queue_xmit little
# else raises NET_TX, so the count follows the watchdog's wakeups (within
# about 20 % of qdisc_watchdog() expirations counted by the
# timer:hrtimer_expire_entry tracepoint, which is not used: turning it on
# patches kernel text, and QEMU's TCG once ran a stale int3 of such a patch).
net_tx_softirqs() {
	awk '/NET_TX/ {for (i = 2; i <= NF; i++) s += $i} END {print s}' /proc/softirqs
}

# fail_order1_atomic: fail_page_alloc fails, silently, every allocation of
# order 1 or more without __GFP_DIRECT_RECLAIM (atomic) made by a task
# with make-it-fail set; the caller sets that and turns probability off.
fail_order1_atomic() {
	local fpa=/sys/kernel/debug/fail_page_alloc
	echo 1 >$fpa/min-order
	echo Y >$fpa/ignore-gfp-wait
	echo N >$fpa/ignore-gfp-highmem
	echo Y >$fpa/task-filter
	echo 1 >$fpa/interval
	echo -1 >$fpa/times
	echo 0 >$fpa/space
	echo 0 >$fpa/verbose
	echo 100 >$fpa/probability
}
