#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Rust fq under real traffic, on a veth pair between two netns:
# fair sharing behind a bottleneck, flow_limit and
# limit drops, horizon drop and cap, CE marking above ce_threshold, bands
# (priomap and weights sent through ynl) with per-band limits and priority.

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
# Python without site (-S): these helpers use the standard library only,
# and the venv's site setup doubled each start in the emulated guest.
TR="python3 -S $HERE/fq_traffic.py"
NL="python3 -S $HERE/fq_nl.py"
A=rsnet-fqa
B=rsnet-fqb
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	# Servers started in a netns may outlive the shell that started them:
	# end them by name, and do not wait for what is not ours.
	pkill -f "fq_traffic.py tcp-sink" 2>/dev/null
	pkill -f "fq_traffic.py udp-recv" 2>/dev/null
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	fq_unload_all
}
trap cleanup EXIT

inA() { ip netns exec $A "$@"; }
inB() { ip netns exec $B "$@"; }
# kv NAME TEXT: the value of the "NAME value" line of TEXT.
kv() {
	local k v
	while read -r k v; do [ "$k" = "$1" ] && echo "$v" && return; done <<<"$2"
}
# send_counted ARGS...: udp-send ARGS from A, then the fq's counters on
# veth-a, in one Python ("sent N" and "name value" lines).
send_counted() { inA $TR udp-send "$@" --xstats veth-a; }
sent_bytes() { inA tc -s qdisc show dev veth-a | awk '/Sent/ {print $2; exit}'; }
dropped() { inA tc -s qdisc show dev veth-a | sed -nE 's/.*dropped ([0-9]+).*/\1/p' | head -1; }
# setfq OPTS...: a fresh fq (optionally under a tbf bottleneck, see below).
setfq() { inA tc qdisc del dev veth-a root 2>/dev/null; inA tc qdisc add dev veth-a root fq "$@"; }
# setfq_bottleneck RATE OPTS...: tbf at RATE with the fq as its child.
setfq_bottleneck() {
	local rate=$1
	shift
	inA tc qdisc del dev veth-a root 2>/dev/null
	inA tc qdisc add dev veth-a root handle 1: tbf rate "$rate" burst 3000 limit 1000000 &&
	inA tc qdisc add dev veth-a parent 1:1 handle 10: fq "$@"
}

ktap_print_header
ktap_set_plan 11

fq_unload_all
fq_use_rust
modprobe sch_tbf
ip netns add $A && ip netns add $B
ip link add veth-a netns $A type veth peer name veth-b netns $B
inA ip addr add 10.88.0.1/24 dev veth-a && inA ip link set veth-a up && inA ip link set lo up
inB ip addr add 10.88.0.2/24 dev veth-b && inB ip link set veth-b up && inB ip link set lo up
# bg_ready CMD...: start CMD (a fq_traffic.py receiver) in the background
# with --ready and wait until its socket is bound (at most 120 s: Python's
# start takes seconds in the emulated guest); $! is its pid. The loop
# forks nothing (nap), so the CPU goes to CMD's start.
bg_ready() {
	local f
	f=$(mktemp -u /tmp/fq_ready.XXXXXX)
	"$@" --ready "$f" &
	for _ in $(seq 1200); do
		[ -e "$f" ] && break
		kill -0 $! 2>/dev/null || break
		nap 0.1
	done
	rm -f "$f"
}
bg_ready inB $TR tcp-sink 10.88.0.2 7000 >/dev/null
pids+=($!)

# 1. Pacing at maxrate is measured with pktgen in fq_pacing.sh (a
# user-space sender on this emulated debug kernel cannot offer 1 MB/s).

# bottleneck_kbit MAX_KBIT DIVISOR BYTES SECONDS: MAX_KBIT, or less: the
# rate BYTES sent in SECONDS made, divided by DIVISOR, so that the senders
# offer several times what the bottleneck passes however fast the guest
# runs (a slow guest's senders offered less than a fixed bottleneck).
bottleneck_kbit() {
	local k=$(($3 * 8 / $4 / $2 / 1000))
	[ "$k" -lt 1 ] && k=1
	echo $(($1 < k ? $1 : k))
}

# 2. Fairness: 4 TCP flows behind a bottleneck get equal shares. The
# bottleneck (4mbit at most) is a third of what the four flows deliver in
# the same 5 s without one, so every flow waits in the fq.
setfq
offered=$(inA $TR tcp-flows 10.88.0.2 7000 5 4 | awk '{for (i = 2; i <= NF; i++) s += $i} END {print s + 0}')
kbit=$(bottleneck_kbit 4000 3 "$offered" 5)
setfq_bottleneck ${kbit}kbit
out=$(inA $TR tcp-flows 10.88.0.2 7000 5 4)
ktap_print_msg "4 flows behind ${kbit}kbit ($offered bytes in 5 s without it): $out"
# jain "bytes N N ...": 0 if the shares' Jain index is at least 0.9.
jain() {
	awk '{ for (i = 2; i <= NF; i++) { s += $i; q += $i * $i }
	       exit !(NF > 1 && q > 0 && s * s / ((NF - 1) * q) >= 0.9) }' <<<"$1"
}
check "4 flows share fairly (Jain index >= 0.9)" jain "$out"

# 3. flow_limit: one UDP flow bursting into fq loses what exceeds it. The
# packets depart 30 s after they are sent (SO_TXTIME), so none leaves
# during the burst, however slowly the guest sends: exactly the excess is
# dropped.
setfq flow_limit 20 horizon 60s
out=$(send_counted 10.88.0.2 7001 300 1000 --txtime-in 30000000000)
plim=$(kv flows_plimit "$out")
ktap_print_msg "flow_limit 20, 300 packets held: flows_plimit=$plim dropped=$(dropped)"
expect_eq "flow_limit drops the 280 packets beyond 20 in the flow" 280 "$plim"

# 4. limit: many flows, each under flow_limit, together above limit (held
# as in 3.).
setfq limit 100 flow_limit 1000 horizon 60s
out=$(send_counted 10.88.0.2 7001 30 1000 --socks 20 --txtime-in 30000000000)
bd=$(kv band_drops1 "$out")
ktap_print_msg "limit 100, 20 flows x 30 held: band_drops1=$bd dropped=$(dropped)"
expect_eq "limit drops the 500 packets beyond 100" 500 "$bd"

# 5. horizon: departure times 10 s ahead, horizon 100 ms.
setfq horizon 100ms
out=$(send_counted 10.88.0.2 7002 10 500 --txtime-in 10000000000)
expect_eq "horizon_drop: 10 packets beyond the horizon dropped" 10 "$(kv horizon_drops "$out")"
setfq horizon 100ms horizon_cap
bg_ready inB $TR udp-recv 10.88.0.2 7002 4 >"/tmp/fq_h.$$"
rx=$!
out=$(send_counted 10.88.0.2 7002 10 500 --txtime-in 10000000000)
expect_eq "horizon_cap: 10 packets capped" 10 "$(kv horizon_caps "$out")"
wait $rx
expect_eq "capped packets are delivered within the horizon" 10 \
	"$(kv packets "$(cat "/tmp/fq_h.$$")")"

# 6. ce_threshold: ECT packets queued behind a bottleneck get CE.
setfq_bottleneck 1mbit ce_threshold 2ms
bg_ready inB $TR udp-recv 10.88.0.2 7003 6 >"/tmp/fq_ce.$$"
rx=$!
inA $TR udp-send 10.88.0.2 7003 100 1000 --tos 2 >/dev/null
wait $rx
ce_rx=$(kv ce "$(cat "/tmp/fq_ce.$$")")
ce_q=$(inA tc -s qdisc show dev veth-a | sed -nE 's/.*ce_mark ([0-9]+).*/\1/p' | head -1)
ktap_print_msg "ce_threshold 2ms behind 1mbit: ce_mark=$ce_q, CE seen by receiver=$ce_rx"
check "ce_threshold marks CE, and the receiver sees it" test "${ce_q:-0}" -gt 0 -a "${ce_rx:-0}" -gt 0

# 7. Bands through ynl: priority 3 -> band 0, 5 -> band 2, the rest band 1;
# weights 9:3:1 and a per-band limit of 50. One fq for both checks below:
# the tbf above it changes rate, the fq keeps what ynl set.
ynl_fq() {
	local ifindex
	ifindex=$(inA cat /sys/class/net/veth-a/ifindex)
	inA python3 "$HERE/ynl_fast.py" --no-schema \
		--spec "$RSNET_KSRC/Documentation/netlink/specs/tc.yaml" "$@" \
		--json "{\"family\": 0, \"ifindex\": $ifindex, \"handle\": 655360, \"parent\": 65537, \"info\": 0,
		  \"kind\": \"fq\", \"options\": {\"plimit\": 50, \"horizon\": 60000000,
		  \"priomap\": {\"bands\": 3, \"priomap\": \"01010100010201010101010101010101\"},
		  \"weights\": \"000009000000030000000100\"}}"
}
# tbf_rate RATE: the bottleneck above the fq at RATE, the fq left as it is.
tbf_rate() { inA tc qdisc change dev veth-a root handle 1: tbf rate "$1" burst 3000 limit 1000000; }
# fq_backlog: packets queued in the fq under the tbf.
fq_backlog() { inA tc -s qdisc show dev veth-a parent 1:1 | sed -nE 's/^ *backlog [^ ]+ ([0-9]+)p.*/\1/p' | head -1; }
setfq_bottleneck 1mbit
out=$(ynl_fq --do newqdisc --replace --create 2>&1)
rc=$?
[ $rc = 0 ] || ktap_print_msg "ynl: $out"
pm=$(inA tc qdisc show dev veth-a | grep -o 'fq .*')
ktap_print_msg "after ynl: $pm"
check "ynl sets plimit, priomap and weights (exit 0, tc shows limit 50p)" \
	test $rc = 0 -a -n "$(grep -o 'limit 50p' <<<"$pm")"

# One UDP sender floods band 0 (priority 3) and band 2 (priority 5) on two
# sockets behind a bottleneck (2mbit at most, a quarter of what the sender
# offers without one), so both bands stay backlogged (each at its limit
# of 50). Weights are bytes per turn (589824:65536): one turn of both
# takes 2.6 s at 2mbit, and a window of at least two turns (6 s at 2mbit)
# from the queues' filling on sees band 0 get about 9x band 2.
tbf_rate 1gbit
bg_ready inB $TR udp-recv 10.88.0.2 7010 3 --ports 2 >/dev/null
rx=$!
sent=$(inA $TR udp-send 10.88.0.2 7010 1000000 1400 --socks 2 --ports 2 --prio 3,5 --for 2 | awk '/sent/ {print $2}')
wait $rx
kbit=$(bottleneck_kbit 2000 4 $((${sent:-0} * 1400)) 2)
win=$((655360 * 8 * 22 / 10 / (kbit * 1000) + 1))
[ $win -lt 6 ] && win=6
tbf_rate ${kbit}kbit
bg_ready inB $TR udp-recv 10.88.0.2 7010 $win --ports 2 --skip 2 >"/tmp/fq_w.$$"
rx=$!
inA $TR udp-send 10.88.0.2 7010 1000000 1400 --socks 2 --ports 2 --prio 3,5 --for $((win + 8)) >/dev/null &
tx=$!
wait $rx
kill $tx 2>/dev/null
wait $tx 2>/dev/null
read -r _ b0 b2 < <(grep port_bytes "/tmp/fq_w.$$")
ktap_print_msg "band 0 vs band 2 (weights 9:1) behind ${kbit}kbit ($sent datagrams in 2 s without it), $win s: bytes $b0 $b2"
check "band 0 gets at least 3x the bytes of band 2, band 2 is not starved" \
	test "${b0:-0}" -ge $((3 * ${b2:-0})) -a "${b2:-0}" -gt 0

# 200 packets into band 0 and 200 into band 2, each departing 30 s after
# it is sent (SO_TXTIME; the horizon is 60 s), so none leaves during the
# bursts however slowly the guest sends: a global limit of 50 would accept
# 50 of the 400, per-band limits accept exactly 50 per band. The counters
# are taken as differences, after what the flood left has drained.
for _ in $(seq 100); do [ "$(fq_backlog)" = 0 ] && break; nap 0.1; done
st0=$(inA $NL xstats veth-a)
inA $TR udp-send 10.88.0.2 7004 200 1000 --prio 3 --txtime-in 30000000000 >/dev/null
st=$(send_counted 10.88.0.2 7004 200 1000 --prio 5 --txtime-in 30000000000)
declare -A d=()
for k in band_drops0 band_drops1 band_drops2; do
	d[$k]=$(($(kv $k "$st") - $(kv $k "$st0")))
done
ktap_print_msg "per-band limit 50, 200 packets held in band 0 and 200 in band 2: band drops ${d[band_drops0]}/${d[band_drops1]}/${d[band_drops2]}"
expect_eq "each band holds its own limit of 50 (150 dropped in band 0 and in band 2)" \
	"150 0 150" "${d[band_drops0]} ${d[band_drops1]} ${d[band_drops2]}"

# The timer_slack comparison (1000 pktgen flows) is in fq_pacing.sh.

inA tc qdisc del dev veth-a root
kill "${pids[@]}" 2>/dev/null
pkill -f "fq_traffic.py tcp-sink" 2>/dev/null
ip netns del $A
ip netns del $B
check "after traffic: qdisc gone, sch_fq_rs unloads" modprobe -r sch_fq_rs
rm -f /tmp/fq_h.$$ /tmp/fq_ce.$$ /tmp/fq_w.$$
ktap_finished
