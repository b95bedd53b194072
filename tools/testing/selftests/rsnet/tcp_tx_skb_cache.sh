#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# net.ipv4.tcp_tx_skb_cache (net/ipv4/tcp_tx_skb_cache.rs): the sysctl, the
# cache it gates under real TCP traffic (loopback and veth between netns,
# plain send, MSG_ZEROCOPY, sendfile), toggling under traffic, unload
# while sockets still hold cached skbs, and how a policy's dropped skb is
# freed.

. "$(dirname "$0")/lib.sh"
XFER="python3 -S $(dirname "$(readlink -f "$0")")/tcp_xfer.py"
S=/proc/sys/net/ipv4/tcp_tx_skb_cache
C=/proc/sys/rsnet/tcp_tx_skb_cache
SIZES="1 100 1447 1448 4096 65535 65536 100000 1048576 4194304"
NS1=rsnet-tx1
NS2=rsnet-tx2
pids=()

cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del $NS1 2>/dev/null
	ip netns del $NS2 2>/dev/null
}
trap cleanup EXIT

# serve NS ADDR PORT: a checking server in namespace NS ("" for this one).
serve() {
	if [ -n "$1" ]; then ip netns exec "$1" $XFER serve "$2" "$3" & else $XFER serve "$2" "$3" & fi
	pids+=($!)
	sleep 1
}
ctr() { cat $C/$1; }

ktap_print_header
ktap_set_plan 23

modprobe -r tcp_tx_skb_cache 2>/dev/null
check "modprobe tcp_tx_skb_cache" modprobe tcp_tx_skb_cache
expect_eq "default is 0" 0 "$(cat $S)"

serve "" 127.0.0.1 5201
h0=$(ctr hits)
check "transfers with cache off are byte-exact" $XFER send 127.0.0.1 5201 send 65536 1048576
expect_eq "cache off: no hits" "$h0" "$(ctr hits)"

sysctl -q -w net.ipv4.tcp_tx_skb_cache=1
expect_eq "write 1 enables" 1 "$(cat $S)"

bad=$(errno_mismatches $S EINVAL 2 -1 abc $'\n' 99999999999999999999)
expect_eq "invalid writes (2 -1 abc empty huge) fail with EINVAL" "" "$bad"
expect_eq "value unchanged after invalid writes" 1 "$(cat $S)"

for mode in send zerocopy sendfile; do
	check "loopback $mode, cache on, byte-exact for sizes $SIZES" \
		$XFER send 127.0.0.1 5201 $mode $SIZES
done
hits=$(ctr hits)
puts=$(ctr puts)
ktap_print_msg "after loopback: hits=$hits misses=$(ctr misses) puts=$puts refused=$(ctr refused)"
check "hit counter proves the cache is used" test "$hits" -gt 0
check "put counter moved too" test "$puts" -gt 0

ip netns add $NS1 && ip netns add $NS2
ip link add veth-tx1 netns $NS1 type veth peer name veth-tx2 netns $NS2
ip -n $NS1 addr add 10.99.0.1/24 dev veth-tx1 && ip -n $NS1 link set veth-tx1 up && ip -n $NS1 link set lo up
ip -n $NS2 addr add 10.99.0.2/24 dev veth-tx2 && ip -n $NS2 link set veth-tx2 up && ip -n $NS2 link set lo up
serve $NS2 10.99.0.2 5202
ok=1
for mode in send zerocopy sendfile; do
	ip netns exec $NS1 $XFER send 10.99.0.2 5202 $mode $SIZES >/dev/null || ok=0
done
check "veth between netns, all modes, byte-exact" test $ok = 1
check "hits grew over veth" test "$(ctr hits)" -gt "$hits"

# Toggle the key while a transfer runs.
$XFER send 127.0.0.1 5201 send 4194304 4194304 4194304 4194304 >/dev/null &
tx=$!
for i in $(seq 1 40); do
	echo $((i % 2)) >$S
done
check "toggling under traffic keeps transfers byte-exact" wait $tx
echo 1 >$S

# Unload while sockets hold cached skbs: open idle connections after a
# transfer each (their slot is filled), then remove the module while they
# are still open. The holder says when its transfers are done (ready file)
# and keeps the sockets until told to close them (done file, or 300 s):
# Python's start alone takes seconds in the emulated guest.
puts=$(ctr puts)
hold=$(mktemp -d)
python3 -S - "$hold" <<'PY' &
import os, socket, sys, time
d = sys.argv[1]
srv = socket.create_server(("127.0.0.1", 5299))
pairs = []
for _ in range(8):
    c = socket.create_connection(("127.0.0.1", 5299))
    a, _ = srv.accept()
    c.sendall(b"x" * 100000)
    got = 0
    while got < 100000:
        got += len(a.recv(1 << 16))
    pairs.append((c, a))
open(os.path.join(d, "ready"), "w").close()
end = time.monotonic() + 300
while not os.path.exists(os.path.join(d, "done")) and time.monotonic() < end:
    time.sleep(0.1)
for c, a in pairs:
    c.close()
    a.close()
PY
holder=$!
for _ in $(seq 1 1200); do
	[ -e "$hold/ready" ] || ! kill -0 $holder 2>/dev/null && break
	nap 0.1
done
check "idle sockets took cached skbs before unload" test -e "$hold/ready" -a "$(ctr puts)" -gt "$puts"
check "rmmod with sockets holding cached skbs" modprobe -r tcp_tx_skb_cache
check "sysctl gone after unload" test ! -e $S
touch "$hold/done"
check "sockets close cleanly after unload" wait $holder
rm -rf "$hold"

# A policy that drops every skb it is given (tx_cache_drop, test-only):
# TCP was done with them, so each must be freed as consumed, never
# reported to drop monitors as a drop (skb:kfree_skb, NOT_SPECIFIED is
# what kfree_skb() reports).
T=/sys/kernel/tracing
D=/proc/sys/rsnet/tx_cache_drop
mountpoint -q $T || mount -t tracefs nodev $T
check "modprobe tx_cache_drop (a policy that drops what it is given)" modprobe tx_cache_drop
echo 1 >$D/enable
echo 0 >$T/tracing_on
echo >$T/trace
echo 1 >$T/events/skb/kfree_skb/enable
echo 1 >$T/tracing_on
d0=$(cat $D/dropped)
$XFER send 127.0.0.1 5201 send 4194304 4194304 >/dev/null
echo 0 >$T/tracing_on
echo 0 >$T/events/skb/kfree_skb/enable
echo 0 >$D/enable
dropped=$(( $(cat $D/dropped) - d0 ))
drops=$(grep -c 'reason: NOT_SPECIFIED' $T/trace)
ktap_print_msg "tx_cache_drop dropped $dropped skbs; skb:kfree_skb NOT_SPECIFIED meanwhile: $drops"
# The skbs a transfer frees depend on how TCP sized them (a slower host
# may send fewer, larger ones); a kfree_skb() per dropped skb would make
# the drops at least as many as the dropped skbs.
check "the policy was given skbs to drop" test "$dropped" -gt 20
check "a dropped cached skb is consumed, not counted as a drop" test "$drops" -lt $((dropped / 2))
check "rmmod tx_cache_drop" modprobe -r tx_cache_drop

ktap_finished
