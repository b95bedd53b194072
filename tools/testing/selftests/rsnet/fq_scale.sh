#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fq at scale: pktgen sends 65,536 packets from as many IPv4 source
# addresses through fq on a dummy device (orphan_mask 2^20 - 1, so about
# 63,500 distinct orphan flows: 248 chunks of the Rust heap's entries),
# Rust fq and then C fq. (pktgen makes about 450 packets a second in the
# emulated debug kernel, so this takes about 150 s per side.) Flows are created in
# enqueue, in atomic context. While pktgen runs, fail_page_alloc fails
# every allocation of order 1 or more that cannot sleep, made by pktgen's
# thread (task-filter): the one that enqueues. Both must create every flow
# without an allocation error, as C's one slab object per flow does.
# FQ_IMPL=c runs C first.

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
DEV=fqs0
FPA=/sys/kernel/debug/fail_page_alloc
PKTS=65536
MIN_FLOWS=60000

inject_off() {
	[ -d $FPA ] || return 0
	echo 0 >$FPA/probability
	local p
	for p in $(pgrep '^kpktgend_'); do echo 0 >/proc/$p/make-it-fail; done
}
cleanup() {
	inject_off
	ip link del $DEV 2>/dev/null
	modprobe -r pktgen 2>/dev/null
	fq_unload_all
}
trap cleanup EXIT

ktap_print_header
ktap_set_plan 5
fq_unload_all
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
check "fail_page_alloc is available (CONFIG_FAIL_PAGE_ALLOC)" test -d $FPA
modprobe pktgen
# A dummy device frees what it is given: a veth would hand every packet to
# its peer's IP stack, which answers each new source address with an ICMP
# error and an inet_peer entry, hundreds of times slower under emulation.
ip link add $DEV type dummy && ip link set $DEV up

# Fail every order >= 1 allocation without __GFP_DIRECT_RECLAIM (atomic)
# that pktgen's threads make, silently.
inject_on() {
	fail_order1_atomic
	local p
	for p in $(pgrep '^kpktgend_'); do echo 1 >/proc/$p/make-it-fail; done
}

# flows_of IMPL: "FLOWS GC ALLOC_ERRORS SENT" after the run on IMPL's fq.
flows_of() {
	if [ "$1" = c ]; then fq_use_c; else fq_use_rust; fi
	tc qdisc add dev $DEV root fq maxrate 1gbit orphan_mask 1048575 \
		buckets 32768 limit 100000 || { echo "tc failed"; return; }
	inject_on
	local sent st
	sent=$(PG_COUNT=$PKTS PG_SRC="10.90.0.0 10.90.255.255" \
		"$HERE/pktgen_flows.sh" $DEV 10.88.0.2 1 300 60 | tail -1)
	inject_off
	st=$(tc -s qdisc show dev $DEV)
	tc qdisc del dev $DEV root
	echo "$(sed -nE 's/^ *flows ([0-9]+) .*/\1/p' <<<"$st")" \
		"$(sed -nE 's/^ *gc ([0-9]+) .*/\1/p' <<<"$st")" \
		"$(sed -nE 's/.* alloc_errors ([0-9]+).*/\1/p' <<<"$st" | grep . || echo 0)" \
		"${sent:-0}"
}
# created FLOWS GC ERRS SENT: all packets sent, at least MIN_FLOWS flows
# made (live ones plus collected ones), none refused.
created() {
	[ "$4" = $PKTS ] && [ $(($1 + $2)) -ge $MIN_FLOWS ] && [ "$3" = 0 ]
}

if [ "${FQ_IMPL:-rust}" = c ]; then order="c rust"; else order="rust c"; fi
for impl in $order; do
	read -r f g e s < <(flows_of $impl)
	ktap_print_msg "$impl fq: $s packets, flows $f, collected $g, allocation errors $e"
	check "$impl fq makes $MIN_FLOWS+ flows in atomic context with no order>=1 page" \
		created "$f" "$g" "$e" "$s"
	check "$impl fq: qdisc with ${f:-?} flows deleted, module unloads" \
		bash -c "modprobe -r sch_fq_rs 2>/dev/null; modprobe -r sch_fq 2>/dev/null;
			! grep -qE '^sch_fq(_rs)? ' /proc/modules"
done
ktap_finished
