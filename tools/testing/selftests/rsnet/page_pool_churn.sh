#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Page pools destroyed under TCP: every one must be released.
#
# A veth pair between two network namespaces runs an XDP_PASS program on
# both ends, so veth moves every packet into page_pool pages. While one
# iperf3 TCP stream crosses it, the receiving veth's pool is destroyed
# with pages in flight six times: three times the device goes down and
# up, three times its XDP program is detached and attached again. Then
# the stream ends and the veth and both namespaces are deleted.
#
# Every pool destroyed on the way must then be released: the
# page_pool:page_pool_release tracepoint fires at a pool's destroy and at
# each retry while pages are in flight, and a last time with inflight 0
# when the pool is freed. A pool that is not freed within WAIT seconds
# (past tcp_fin_timeout and page_pool's own 60 s warning) fails the test;
# the test then receives a packet on every CPU, which empties that CPU's
# list of deferred skb frees (skb_attempt_defer_free()), and says whether
# that released the pool, naming the holder. Run on the C path, then on
# page_pool_rs.

. "$(dirname "$0")/lib.sh"
set -u
HERE=$(dirname "$(readlink -f "$0")")
XDP=(python3 -S "$HERE/xdp_pass.py")
A=rsnet-pca B=rsnet-pcb VA=veth-pca VB=veth-pcb
ADDR_A=10.78.0.1 ADDR_B=10.78.0.2 PORT=5312
SECS=${PP_CHURN_SECS:-8}
WAIT=${PP_CHURN_WAIT:-75}
T=/sys/kernel/tracing
EV=$T/events/page_pool/page_pool_release
TMP=$(mktemp -d /tmp/rsnet-pc.XXXXXX)
server=""

cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	wait 2>/dev/null
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	[ -e "$EV/enable" ] && echo 0 >"$EV/enable"
	modprobe -r page_pool_rs 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# unreleased: the pools of this run's trace whose last page_pool_release
# event has pages in flight, "POOL INFLIGHT" a line.
unreleased() {
	awk '/page_pool_release:/ {
		for (i = 1; i <= NF; i++) {
			if ($i ~ /^page_pool=/) p = substr($i, 11)
			if ($i ~ /^inflight=/) n = substr($i, 10)
		}
		last[p] = n
	} END { for (p in last) if (last[p] != 0) print p, last[p] }' "$T/trace"
}

# pools: how many pools this run's trace saw.
pools() {
	grep -o 'page_pool=[0-9a-fx]*' "$T/trace" | sort -u | wc -l
}

# rx_every_cpu: receive one packet on each CPU (loopback of a fresh
# namespace): each CPU's net_rx_action() frees its deferred skbs.
rx_every_cpu() {
	local c ns=rsnet-pcrx
	ip netns add $ns && ip -n $ns link set lo up
	for c in $(seq 0 $(($(nproc) - 1))); do
		ip netns exec $ns taskset -c "$c" python3 -S -c '
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(2)
s.bind(("127.0.0.1", 9))
s.sendto(b"x", ("127.0.0.1", 9))
s.recv(1)' 2>/dev/null
	done
	ip netns del $ns
}

# run IMPL: one churn; prints "SENT_BYTES POOLS UNRELEASED SECONDS HOLDER".
run() {
	local impl=$1 i t0 t left bytes holder=none
	if [ "$impl" = rust ]; then modprobe page_pool_rs; else modprobe -r page_pool_rs 2>/dev/null; fi
	echo 0 >"$T/tracing_on"
	: >"$T/trace"
	echo 1 >"$EV/enable"
	echo 1 >"$T/tracing_on"
	ip netns add $A && ip netns add $B &&
		ip link add $VA netns $A type veth peer name $VB netns $B &&
		ip -n $A addr add $ADDR_A/24 dev $VA && ip -n $A link set $VA up &&
		ip -n $B addr add $ADDR_B/24 dev $VB && ip -n $B link set $VB up &&
		ip netns exec $A "${XDP[@]}" attach $VA &&
		ip netns exec $B "${XDP[@]}" attach $VB || { echo "setup-failed"; return; }
	ip netns exec $B iperf3 -s -1 -p $PORT >/dev/null 2>&1 &
	server=$!
	for _ in $(seq 50); do
		ip netns exec $B ss -ltn | grep -q ":$PORT " && break
		nap 0.2
	done
	ip netns exec $A iperf3 -c $ADDR_B -p $PORT -t "$SECS" -J >"$TMP/iperf.json" 2>&1 &
	local client=$!
	# Churn once the data connection is up: a slow guest may take longer
	# to start the client than the first nap lasts.
	for _ in $(seq 100); do
		[ "$(ip netns exec $A ss -Htn state established "dport = :$PORT" | wc -l)" -ge 2 ] && break
		nap 0.2
	done
	for i in 1 2 3 4 5 6; do
		nap "$(awk -v s="$SECS" 'BEGIN { print s / 8 }')"
		if [ $((i % 2)) = 1 ]; then
			ip -n $B link set $VB down && nap 0.2 && ip -n $B link set $VB up
		else
			ip netns exec $B "${XDP[@]}" detach $VB && nap 0.2 &&
				ip netns exec $B "${XDP[@]}" attach $VB
		fi
	done
	wait $client
	wait $server 2>/dev/null
	server=""
	bytes=$(python3 -S -c 'import json, sys
try:
    print(json.load(open(sys.argv[1]))["end"]["sum_received"]["bytes"])
except Exception:
    print(0)' "$TMP/iperf.json")
	ip -n $A link del $VA
	ip netns del $A
	ip netns del $B
	t0=$(date +%s)
	while :; do
		left=$(unreleased | wc -l)
		t=$(($(date +%s) - t0))
		[ "$left" = 0 ] || [ "$t" -ge "$WAIT" ] && break
		nap 1
	done
	if [ "$left" != 0 ]; then
		unreleased | sed "s/^/# $impl: unreleased pool /" >&2
		rx_every_cpu
		nap 3
		if [ "$(unreleased | wc -l)" = 0 ]; then
			holder=defer-list
		else
			holder=unknown
		fi
	fi
	echo 0 >"$EV/enable"
	echo "$bytes $(pools) $left $t $holder"
}

ktap_print_header
[ -e "$EV/enable" ] || mount -t tracefs nodev $T 2>/dev/null
if [ ! -e "$EV/enable" ] || ! command -v iperf3 >/dev/null; then
	ktap_set_plan 1
	ktap_test_skip "no page_pool tracepoints or no iperf3"
	ktap_finished
fi
ktap_set_plan 4
for impl in c rust; do
	read -r bytes npools left secs holder < <(run $impl)
	ktap_print_msg "$impl: iperf3 received ${bytes:-0} bytes; $npools pools destroyed; unreleased after ${secs}s: $left (holder: $holder)"
	check "$impl: the TCP stream crossed the churning veth" [ "${bytes:-0}" -gt 0 ]
	check "$impl: every destroyed page pool released" [ "$left" = 0 ]
done
if dmesg | grep -q 'page_pool_release_retry() stalled pool shutdown'; then
	ktap_print_msg "$(dmesg | grep 'stalled pool shutdown' | tail -3)"
fi
ktap_finished
