#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fq's idle flows under socket churn, C's fq and the Rust fq side by side
# (C first, the same script): a server's connected UDP sockets come and
# go (udp_churn: FQ_CHURN_GENS generations of FQ_CHURN_N sockets,
# FQ_CHURN_PERIOD_MS apart, each sending 2 datagrams and closing) through
# fq with maxrate 30gbit on a dummy device. After each generation the
# flows held, the inactive ones and gc_flows are printed for both; after
# the last, the memory fq holds (SUnreclaim given back by deleting it).
# Idle flows past fq's gc age (3 s) are collected by C's tree walks; the
# Rust fq, whose chains hold about one flow, collects them on its chains
# and by the sweep of each new flow (FlowTable::gc_sweep_chains(): as many
# chains as C's trees are deep): it must hold at most C's flows and
# memory, 10 % over at most (memory: and 128 kB, the slab pages' give).
# The memory is what deleting the qdisc gives back to SUnreclaim: slab
# pages, so C's flows, in a cache of their own, count whole, and the Rust
# fq's kmalloc-96 objects only where their pages empty; the flows held
# are the exact measure.
#
# Then FQ_CHURN_RETURN_N sockets send two datagrams each, idle past the gc
# age and send one again: the share of them that come back as new flows (their
# idle flow collected meanwhile) is printed for both, and each must have
# sent every datagram. benchmarks.rst has the long run (8 generations of
# 5,000; 100,000 returning).

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
DEV=fqc0
N=${FQ_CHURN_N:-2000}
GENS=${FQ_CHURN_GENS:-4}
PERIOD_MS=${FQ_CHURN_PERIOD_MS:-4000}
RN=${FQ_CHURN_RETURN_N:-1000}
TMP=$(mktemp -d /tmp/fq_churn.XXXXXX)

cleanup() {
	exec 8<&- 7>&- 2>/dev/null
	ip link del $DEV 2>/dev/null
	fq_unload_all
	rm -rf "$TMP"
}
trap cleanup EXIT

sunreclaim() { awk '/^SUnreclaim:/ {print $2}' /proc/meminfo; }
# field NAME TEXT: the number after NAME in tc -s's fq lines.
field() { sed -nE "s/.*[ (]$1 ([0-9]+).*/\\1/p" <<<"$2" | head -1; }
# counters: "FLOWS INACTIVE GC" of the fq on $DEV.
counters() {
	local st
	st=$(tc -s qdisc show dev $DEV)
	echo "$(field flows "$st") $(field inactive "$st") $(field gc "$st")"
}

ktap_print_header
ktap_set_plan 8
fq_unload_all
ulimit -n $((N + RN + 64)) 2>/dev/null
ip link add $DEV type dummy &&
	sysctl -qw net.ipv6.conf.$DEV.disable_ipv6=1 &&
	ip addr add 10.89.0.1/24 dev $DEV && ip addr add 10.89.0.2/24 dev $DEV &&
	ip link set $DEV up

declare -A flows held share sent
run() {
	local impl=$1 line g c memb memd before after made
	if [ "$impl" = c ]; then fq_use_c; else fq_use_rust; fi
	tc qdisc add dev $DEV root fq maxrate 30gbit || return 1
	sent[$impl]=0
	exec 8< <("$HERE/udp_churn" churn 10.89.0.200 9 "$N" "$GENS" "$PERIOD_MS")
	for ((g = 1; g <= GENS; g++)); do
		read -r -t 300 line <&8 || { ktap_print_msg "$impl: udp_churn stopped"; break; }
		c=($(counters))
		ktap_print_msg "$impl: $line: flows ${c[0]} inactive ${c[1]} gc_flows ${c[2]}"
		[ "$(awk '{print $4}' <<<"$line")" = $((2 * N)) ] && sent[$impl]=$((${sent[$impl]} + 1))
	done
	exec 8<&-
	wait
	flows[$impl]=${c[0]:-0}
	# What fq holds: what deleting it gives back (no packet is queued),
	# once the closed sockets' memory (freed after an RCU grace period)
	# has stopped moving: two reads 0.5 s apart within 16 kB, for 5 s at
	# most.
	local prev t
	memb=$(sunreclaim)
	for t in 1 2 3 4 5 6 7 8 9 10; do
		nap 0.5
		prev=$memb
		memb=$(sunreclaim)
		[ $((memb - prev)) -le 16 ] && [ $((prev - memb)) -le 16 ] && break
		[ $t = 10 ] && ktap_print_msg "$impl: SUnreclaim still moving ($prev, then $memb kB)"
	done
	tc qdisc del dev $DEV root
	sleep 0.5
	memd=$(sunreclaim)
	held[$impl]=$((memb - memd))
	ktap_print_msg "$impl: fq held ${held[$impl]} kB with ${flows[$impl]} flows"

	# Returning sockets, on a new fq.
	tc qdisc add dev $DEV root fq maxrate 30gbit || return 1
	# Its stdin a FIFO this shell holds open both ways: one line lets it
	# send again, once the counters are read.
	mkfifo "$TMP/go.$impl" && exec 7<>"$TMP/go.$impl"
	exec 8< <("$HERE/udp_churn" return 10.89.0.200 9 "$RN" 4000 <"$TMP/go.$impl")
	read -r -t 300 line <&8
	before=($(counters))
	echo go >&7
	read -r -t 300 line <&8
	exec 8<&- 7>&-
	wait
	after=($(counters))
	# Flows made by the second round: the ones there more, and the ones
	# collected on the way.
	made=$((after[0] - before[0] + after[2] - before[2]))
	share[$impl]=$((100 * made / RN))
	ktap_print_msg "$impl: $RN sockets idle 4 s: $line, $made came back as new flows (${share[$impl]} %)," \
		"flows ${before[0]} -> ${after[0]}, gc_flows ${before[2]} -> ${after[2]}"
	[ "$line" = "returned $RN" ] && sent[$impl]=$((${sent[$impl]} + 1))
	tc qdisc del dev $DEV root
}
for impl in c rust; do
	run $impl
	check "$impl fq: every datagram of $GENS generations and of the returning sockets sent" \
		test "${sent[$impl]}" = $((GENS + 1))
	check "$impl fq: module unloads" \
		bash -c "modprobe -r sch_fq_rs 2>/dev/null; modprobe -r sch_fq 2>/dev/null;
			! grep -qE '^sch_fq(_rs)? ' /proc/modules"
done
ktap_print_msg "after $GENS generations of $N sockets: flows C ${flows[c]}, Rust ${flows[rust]};" \
	"memory C ${held[c]} kB, Rust ${held[rust]} kB; returning as new flows: C ${share[c]} %, Rust ${share[rust]} %"
check "C fq holds idle flows of earlier generations (the measure means something)" \
	test "${flows[c]:-0}" -gt 0
check "Rust fq holds at most C's flows, 10 % over at most" \
	test "${flows[rust]:-0}" -gt 0 -a $((10 * ${flows[rust]:-0})) -le $((11 * ${flows[c]:-0}))
check "Rust fq holds at most C's memory, 10 % over at most" \
	test $((10 * ${held[rust]:-0})) -le $((11 * ${held[c]:-0} + 1280))
check "udp_churn is built" test -x "$HERE/udp_churn"
ktap_finished
