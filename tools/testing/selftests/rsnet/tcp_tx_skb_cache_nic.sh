#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The TX skb cache with zero-copy sends through a real NIC transmit path:
# two virtio-net NICs on one QEMU hub (vm.sh boots them for make check),
# one of them in a netns with the receiver. With the cache on, TCP is sent
# with io_uring SEND_ZC from a registered (fixed) buffer, whose skbs carry
# SKBFL_MANAGED_FRAG_REFS (their frags hold no page references of their
# own), and with MSG_ZEROCOPY. Every round must arrive byte-exact with every
# completion, and the kernel must report no Bad rss-counter, Bad page,
# refcount or BUG line: a cache that put such an skb's frag pages frees the
# sender's pages while they are mapped, which shows when the sender exits.
#
# Loopback and veth cannot show it: local delivery copies zero-copy frags
# (skb_orphan_frags_rx()), taking real page references before the sender
# frees the skb.
#
# ZC_ROUNDS (default 5) io_uring rounds of ZC_BYTES (default 64 MiB) each,
# from a buffer of ZC_BUF bytes (default 1 MiB). A cache that put managed
# frags showed a report in about half of such rounds here (3 of 6), and in
# none of 6 rounds of 32 MiB, so five rounds miss it about once in 30 runs.

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
ZC=$HERE/zc_xfer
S=/proc/sys/net/ipv4/tcp_tx_skb_cache
C=/proc/sys/rsnet/tcp_tx_skb_cache
NS=rsnet-zc
ROUNDS=${ZC_ROUNDS:-5}
BYTES=${ZC_BYTES:-67108864}
BUF=${ZC_BUF:-1048576}
TMP=$(mktemp -d)

cleanup() {
	pkill -f "$ZC recv" 2>/dev/null
	ip netns del $NS 2>/dev/null
	sysctl -q -w net.ipv4.tcp_tx_skb_cache=0 2>/dev/null
	modprobe -r tcp_tx_skb_cache 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
ctr() { cat $C/$1; }

ktap_print_header
ktap_set_plan 9

# The virtio-net NICs, in the order the kernel named them.
nics=()
for d in /sys/class/net/*; do
	[ "$(basename "$(readlink -f "$d/device/driver" 2>/dev/null)")" = virtio_net ] &&
		nics+=("$(basename "$d")")
done
if [ ${#nics[@]} -lt 2 ]; then
	ktap_print_msg "found ${#nics[@]} virtio-net NICs (${nics[*]}); vm.sh boots two with RSNET_NET=loop"
	ktap_exit_fail_msg "needs two virtio-net NICs on one hub"
fi
A=${nics[0]} B=${nics[1]}
ip netns add $NS
ip link set "$B" netns $NS
ip addr add 192.0.2.1/24 dev "$A" && ip link set "$A" up
ip -n $NS addr add 192.0.2.2/24 dev "$B" && ip -n $NS link set "$B" up && ip -n $NS link set lo up

# transfer MODE PORT [BYTES]: one transfer over the NIC pair; prints the
# sender's and receiver's lines; fails unless both ends succeeded, every
# byte arrived in order and every zero-copy completion was received.
transfer() {
	local mode=$1 port=$2 rx out BYTES=${3:-$BYTES}
	nsenter --net=/run/netns/$NS "$ZC" recv 192.0.2.2 "$port" "$BUF" >"$TMP/rx" 2>&1 &
	rx=$!
	for _ in $(seq 300); do
		grep -q listening "$TMP/rx" && break
		kill -0 $rx 2>/dev/null || break
		nap 0.1
	done
	out=$("$ZC" send "$mode" 192.0.2.2 "$port" "$BYTES" "$BUF" 2>&1) || { echo "sender: $out"; kill $rx; return 1; }
	wait $rx || { echo "sender: $out; receiver: $(cat "$TMP/rx")"; return 1; }
	echo "$out; $(tail -n 1 "$TMP/rx")"
	grep -q "received $BYTES bytes, byte-exact" "$TMP/rx" &&
		[[ "$out" =~ ^sent\ $BYTES\ bytes\ in\ ([0-9]+)\ sends,\ ([0-9]+)\ of\ ([0-9]+)\ notifications$ ]] &&
		[ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[3]}" ] &&
		{ [ "$mode" = copy ] || [ "${BASH_REMATCH[2]}" -gt 0 ]; }
}

# The kernel's memory-state reports, since the marker written to kmsg.
BAD='Bad rss-counter|Bad page|refcount_t|BUG:|WARNING:|list_del corruption|KASAN'
reports_since() {
	dmesg | sed -n "/rsnet-zc: $1\$/,\$p" | grep -E "$BAD"
}

line=$(transfer copy 7300 1048576)
ok=$?
ktap_print_msg "copy, cache off: $line"
check "the NIC pair carries TCP ($A -> $B in netns $NS)" test $ok = 0

modprobe -r tcp_tx_skb_cache 2>/dev/null
modprobe tcp_tx_skb_cache && sysctl -q -w net.ipv4.tcp_tx_skb_cache=1
check "cache on" test "$(cat $S)" = 1
hits=$(ctr hits) refused=$(ctr refused)

# Rounds per mode: io_uring's fixed buffers are what the bug needs
# (MSG_ZEROCOPY and non-fixed SEND_ZC frags hold page references of their
# own); one MSG_ZEROCOPY round shows that path intact too.
port=7300
for mode in uring-fixed msg; do
	rounds=$ROUNDS
	[ $mode = msg ] && rounds=1
	ok=1 bad_rounds=0
	for r in $(seq "$rounds"); do
		port=$((port + 1))
		echo "rsnet-zc: $mode $r" >/dev/kmsg
		line=$(transfer $mode $port) || ok=0
		# The sender has exited: a page put behind its back shows now.
		n=$(reports_since "$mode $r" | wc -l)
		[ "$n" = 0 ] || bad_rounds=$((bad_rounds + 1))
		ktap_print_msg "$mode round $r: $line; kernel reports: $n"
	done
	check "$mode over the NIC pair, cache on: $rounds rounds of $BYTES bytes byte-exact, every completion received" \
		test $ok = 1
	bad=$(reports_since "$mode 1" | head -n 5)
	[ -z "$bad" ] || ktap_print_msg "kernel reports ($bad_rounds of $rounds rounds): $bad"
	check "$mode: no Bad rss-counter, Bad page, refcount or BUG report" test -z "$bad"
done

ktap_print_msg "cache: hits $hits -> $(ctr hits), refused $refused -> $(ctr refused)"
check "the cache served the senders' allocations (hits grew)" test "$(ctr hits)" -gt "$hits"
check "the cache refused the zero-copy skbs (refused grew)" test "$(ctr refused)" -gt "$refused"

# A copying transfer still works with the cache after the zero-copy rounds.
port=$((port + 1))
line=$(transfer copy $port 8388608)
ok=$?
ktap_print_msg "copy: $line"
check "a copying send afterwards arrives byte-exact" test $ok = 0

ktap_finished
