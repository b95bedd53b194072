#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Allocation failures injected into rsnet's code paths, one at a time
# (failslab and fail_page_alloc driven by /proc/thread-self/fail-nth, see
# fault_inject.py), the Rust modules and, as the baseline, C's sch_fq:
#
# - qdisc add and change of fq: every allocation point the call passes
#   from the qdisc module's code (the stack-trace filter confines failures
#   to its .text) fails in turn; each ends in an errno with the old
#   configuration intact, or in success.
# - flow creation in enqueue (atomic context, a new connected UDP socket a
#   send, maxrate set so that no packet takes the fast path; the first
#   allocation point of each send fails, but for one flow made half way):
#   every failure is an allocation error fq counts, the packet still
#   sent.
# - module init (sch_fq_rs, tcp_tx_skb_cache with its sysctl table and
#   static key, page_pool_rs with its hook): every allocation point of
#   finit_module fails in turn, the loader's included (the init code is
#   not loaded before the call, so no filter); each load fails cleanly or
#   succeeds, and the module unloads. The .ko is read from shmem: the 9p
#   share's netfs read path underflows a refcount when an allocation in it
#   fails (6.12), which is not rsnet's to test. C's sch_fq is left out
#   here: its kmem_cache_create() leaks the cache's sysfs name when
#   sysfs_slab_add() fails (the slab core's error path).
#
# After each implementation kmemleak is scanned; make check's judge fails
# the run on any splat. Not covered here: page_pool refill and ring (NAPI
# context, where fail-nth, a per-task count, does not reach).

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
FI="python3 -S $HERE/fault_inject.py"
DEV=fqi0
DBG=/sys/kernel/debug
# Load points per module, at most (the loader's are most of them).
MOD_POINTS=${FI_MOD_POINTS:-400}
ULONG_MAX=18446744073709551615
SHM=$(mktemp -d /dev/shm/rsnet-fi.XXXXXX)

inject_reset() {
	local a
	for a in failslab fail_page_alloc; do
		echo 0 >$DBG/$a/probability
		echo 0 >$DBG/$a/require-start
		echo $ULONG_MAX >$DBG/$a/require-end
	done
}
cleanup() {
	[ -d $DBG/failslab ] && inject_reset
	ip link del $DEV 2>/dev/null
	rm -rf "$SHM"
	fq_unload_all
}
trap cleanup EXIT

# inject_setup [START END]: failslab and fail_page_alloc fail whatever
# fail-nth selects, sleeping allocations and order-0 pages included, only
# from code in [START, END) when given; quietly.
inject_setup() {
	local a
	for a in failslab fail_page_alloc; do
		echo N >$DBG/$a/ignore-gfp-wait
		echo 0 >$DBG/$a/verbose
		echo -1 >$DBG/$a/times
		echo 32 >$DBG/$a/stacktrace-depth
		echo "${1:-0}" >$DBG/$a/require-start
		echo "${2:-$ULONG_MAX}" >$DBG/$a/require-end
	done
	echo N >$DBG/fail_page_alloc/ignore-gfp-highmem
	echo 0 >$DBG/fail_page_alloc/min-order
}

# text_range MODULE: "START END" of the loaded module's .text, in decimal
# (START from sysfs, the size from the .ko's section header).
text_range() {
	python3 -S - "$(cat /sys/module/"$1"/sections/.text)" "$(modinfo -n "$1")" <<'PY'
import struct, sys
start = int(sys.argv[1], 16)
d = open(sys.argv[2], "rb").read()
shoff, = struct.unpack_from("<Q", d, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3a)
sec = lambda i: struct.unpack_from("<IIQQQQ", d, shoff + i * shentsize)
stroff = sec(shstrndx)[4]
for i in range(shnum):
    name, _, _, _, _, size = sec(i)
    if d[stroff + name:d.index(b"\0", stroff + name)] == b".text":
        print(start, start + size)
PY
}

# kv NAME TEXT: the value of the "NAME value" line of TEXT.
kv() {
	local k v
	while read -r k v; do [ "$k" = "$1" ] && echo "$v" && return; done <<<"$2"
}
# report WHAT OUTPUT: print OUTPUT as KTAP diagnostics; pass if no "fail:".
report() {
	sed 's/^/# /' <<<"$2"
	if grep -q '^fail:' <<<"$2"; then ktap_test_fail "$1"; else ktap_test_pass "$1"; fi
}

ktap_print_header
ktap_set_plan 12
fq_unload_all
mountpoint -q $DBG || mount -t debugfs none $DBG
if [ ! -w /proc/self/fail-nth ] || [ ! -w $DBG/failslab/require-start ]; then
	ktap_skip_all "needs CONFIG_FAULT_INJECTION_STACKTRACE_FILTER, FAILSLAB, FAIL_PAGE_ALLOC"
	exit "$KSFT_SKIP"
fi
ip link add $DEV type dummy
# Only the test's packets: no IPv6 autoconfiguration traffic on the device.
sysctl -qw net.ipv6.conf.$DEV.disable_ipv6=1 2>/dev/null

declare -A ADD CHG ERRS INJ
for impl in rust c; do
	mod=$([ $impl = rust ] && echo sch_fq_rs || echo sch_fq)
	if [ $impl = rust ]; then fq_use_rust; else fq_use_c; fi
	# shellcheck disable=SC2046
	inject_setup $(text_range $mod)

	ip link set $DEV down
	out=$($FI qdisc $DEV $([ $impl = c ] && echo baseline) 2>&1)
	report "$impl fq: qdisc add and change fail cleanly at each allocation point" "$out"
	ADD[$impl]=$(kv add_points "$out")
	CHG[$impl]=$(kv change_points "$out")

	ip link set $DEV up
	ip addr add 10.77.0.1/24 dev $DEV 2>/dev/null
	# A maxrate keeps packets off the fast path (no flow there).
	tc qdisc replace dev $DEV root fq maxrate 10gbit
	out=$($FI send $DEV 10.77.0.2 200 2>&1)
	ERRS[$impl]=$(kv allocation_errors "$out")
	INJ[$impl]=$(kv injected "$out")
	sent=$(tc -s qdisc show dev $DEV | awk '/Sent/ {print $4; exit}')
	out+=$'\n'"sent_pkts $sent"
	[ "${INJ[$impl]}" -gt 0 ] && [ "${ERRS[$impl]}" = "${INJ[$impl]}" ] && [ "$sent" = 200 ] ||
		out+=$'\n'"fail: injected ${INJ[$impl]}, allocation_errors ${ERRS[$impl]}, sent $sent of 200"
	report "$impl fq: a failed flow allocation in enqueue is counted and the packet sent" "$out"
	tc qdisc del dev $DEV root
	inject_reset
done

# Module init, every point of the load in turn.
fq_unload_all
inject_setup
declare -A PTS
for mod in sch_fq_rs tcp_tx_skb_cache page_pool_rs; do
	modprobe -r "$mod" 2>/dev/null
	cp "$(modinfo -n $mod)" "$SHM/"
	out=$($FI modload "$SHM/$mod.ko" "$MOD_POINTS" 2>&1)
	PTS[$mod]=$(kv points "$out")
	[ "$(kv complete "$out")" = 1 ] || out+=$'\n'"fail: more than $MOD_POINTS points (FI_MOD_POINTS)"
	report "$mod: an allocation failure at any point of module load fails it cleanly" "$out"
done
inject_reset
for mod in sch_fq_rs tcp_tx_skb_cache page_pool_rs sch_fq; do
	check "$mod loads and unloads after the injections" \
		sh -c "modprobe $mod && modprobe -r $mod"
done
echo scan >$DBG/kmemleak
leaks=$(grep -c '^unreferenced object' $DBG/kmemleak)
expect_eq "kmemleak: no leak after the injections" 0 "$leaks"

ktap_print_msg "allocation points from the qdisc's code: add Rust ${ADD[rust]} C ${ADD[c]}, change Rust ${CHG[rust]} C ${CHG[c]}"
ktap_print_msg "enqueue of 200 new flows: failures injected Rust ${INJ[rust]} C ${INJ[c]}"
ktap_print_msg "module load points: sch_fq_rs ${PTS[sch_fq_rs]} tcp_tx_skb_cache ${PTS[tcp_tx_skb_cache]} page_pool_rs ${PTS[page_pool_rs]}"
ktap_finished
