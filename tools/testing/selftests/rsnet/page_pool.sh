#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# page_pool's recycle and refill path in Rust (page_pool_rs, hooked in by
# include/net/page_pool/hook.h):
#  1. page_pool_test (a KUnit suite, page_pool_recycle, which runs when the
#     module loads) on the C path, then on the Rust path: each run must get
#     to its end, and the final page_pool statistics of both runs must be
#     identical; KUnit reports each case in the kernel log, and make check
#     counts them from there;
#  2. TCP through a veth pair whose receiver runs an XDP_PASS program (veth
#     then copies each skb into page_pool pages), byte-exact, while
#     page_pool_rs is unloaded and loaded again 50 times;
#  3. after teardown no page pool holds pages (ynl netdev page-pool-get); a
#     page held across its pool's destroy (netdevsim pp_hold) comes back
#     through the Rust path and the pool goes away;
#  4. page_pool_rs unloads.
# It also checks what makes unloading under traffic safe: the kernel is
# preemptible (puts run in preemptible process context too), and only the
# static call trampolines are exported, not the keys that would let any
# module re-point the recycle path around page_pool_hook_unregister().
#
# On the test kernel veth's page pools carry their netdev
# (patches/test/0001-veth-*), so page-pool-get lists them; their statistics
# are read with ethtool -S (rx_pp_*).

. "$(dirname "$0")/lib.sh"
set -u
: "${RSNET_KSRC:?RSNET_KSRC must point at the kernel source}"
HERE=$(dirname "$(readlink -f "$0")")
XFER=(python3 -S "$HERE/tcp_xfer.py")
XDP=(python3 -S "$HERE/xdp_pass.py")
# page-pool-get through the kernel's ynl library: one server a netns (see
# pp_start).
PP_POOLS=(python3 "$HERE/pp_pools.py" serve)
A=rsnet-ppa
B=rsnet-ppb
VA=veth-ppa
VB=veth-ppb
ADDR_A=10.77.0.1
ADDR_B=10.77.0.2
PORT=5311
CYCLES=50
SIZES="1048576 1048576"
NSIM_ID=7311
TMP=$(mktemp -d /tmp/rsnet-pp.XXXXXX)
pids=()
spid=""
server=""
nsim_made=0
nsim_loaded=0
defer_max=""

cleanup() {
	local p
	pp_stop $B
	pp_stop ""
	[ -n "$defer_max" ] && sysctl -q -w net.core.skb_defer_max="$defer_max"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del $A 2>/dev/null
	ip netns del $B 2>/dev/null
	[ $nsim_made = 1 ] && echo $NSIM_ID >/sys/bus/netdevsim/del_device 2>/dev/null
	[ $nsim_loaded = 1 ] && modprobe -r netdevsim 2>/dev/null
	modprobe -r page_pool_test 2>/dev/null
	modprobe -r page_pool_rs 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# pp_path: the recycle path now current, as lsmod tells it.
pp_path() { if [ -e /sys/module/page_pool_rs ]; then echo rust; else echo c; fi; }

# run_pp_test NAME: load page_pool_test (KUnit runs its suite as it
# loads), keep the kernel log of this run in $TMP/NAME.ktap (timestamps
# removed), unload it; the modprobe status.
run_pp_test() {
	local out=$TMP/$1.ktap mark="page_pool.sh: page_pool_test $1 $$ $RANDOM" rc
	: >"$out"
	modprobe -r page_pool_test 2>/dev/null
	# Still loaded, a modprobe would not run it: no stale results.
	[ -e /sys/module/page_pool_test ] && return 1
	echo "$mark" >/dev/kmsg
	modprobe page_pool_test path="$(pp_path)"
	rc=$?
	[ $rc = 0 ] || return $rc
	# The suite's lines (its "# hook: " line comes before its header) up
	# to its last, "ok N page_pool_recycle".
	dmesg | sed -n "/$mark/,\$p" | sed '1d; s/^\[[^]]*\] \{0,1\}//' |
		sed -n '1,/^\(not \)\{0,1\}ok [0-9]* page_pool_recycle$/p' >"$out"
	modprobe -r page_pool_test 2>/dev/null
	return 0
}

# report PREFIX FILE: the diagnostic lines of a page_pool_test run as
# messages; fails unless the suite got to its end (its last line).
report() {
	local prefix=$1 file=$2 line
	while IFS= read -r line; do
		[[ $line =~ ^\ *#\ (.*)$ ]] && ktap_print_msg "$prefix: ${BASH_REMATCH[1]}"
	done <"$file"
	tail -n 1 "$file" | grep -Eq '^(not )?ok [0-9]+ page_pool_recycle$'
}

# stats_of FILE: the final statistics lines of a run ("stats ...: ...").
stats_of() { grep -oE '# ([a-z_0-9]+: )?stats( [a-e])?:.*' "$1" | sed -E 's/^# ([a-z_0-9]+: )?//'; }

# pp_start NETNS: a pp_pools.py server in NETNS ("" for this one), asked by
# pp_ask; it keeps NETNS alive until pp_stop. Python's start and the spec's
# load take seconds in the emulated guest: one server answers all of a
# netns's questions.
declare -A pp_w=() pp_r=() pp_pid=()
pp_start() {
	local ns=$1 key=${1:-init} w r
	mkfifo "$TMP/pp-$key.in" "$TMP/pp-$key.out" || return 1
	${ns:+ip netns exec "$ns"} "${PP_POOLS[@]}" <"$TMP/pp-$key.in" \
		>"$TMP/pp-$key.out" 2>>"$TMP/pp-$key.err" &
	pp_pid[$key]=$!
	pids+=("$!")
	exec {w}>"$TMP/pp-$key.in" {r}<"$TMP/pp-$key.out"
	pp_w[$key]=$w
	pp_r[$key]=$r
}
# pp_stop NETNS: ends that server and waits for it (killed: a process
# started since may hold its input open, so it would not see the end).
pp_stop() {
	local key=${1:-init} w r
	[ -n "${pp_pid[$key]:-}" ] || return 0
	w=${pp_w[$key]} r=${pp_r[$key]}
	exec {w}>&- {r}<&-
	kill "${pp_pid[$key]}" 2>/dev/null
	wait "${pp_pid[$key]}" 2>/dev/null
	unset "pp_pid[$key]"
}
# pp_ask NETNS QUESTION...: the server's answer on stdout, its status as
# the return value (1 if the server is gone). The server must have been
# started by this shell: a subshell's pp_start would be lost with it.
pp_ask() {
	local key=${1:-init} line
	if [ -z "${pp_pid[$key]:-}" ]; then
		echo "no pp_pools.py server for netns $key"
		return 1
	fi
	shift
	echo "$*" >&"${pp_w[$key]}" || return 1
	while IFS= read -r line <&"${pp_r[$key]}"; do
		if [[ $line =~ ^rc\ ([0-9]+)$ ]]; then
			return "${BASH_REMATCH[1]}"
		fi
		echo "$line"
	done
	cat "$TMP/pp-$key.err" 2>/dev/null
	return 1
}

# no_busy_pools NETNS IFINDEX...: within 5 s, no page pool listed by
# page-pool-get in NETNS ("" for this one) holds pages that belongs to one of
# the IFINDEXes or was destroyed (a destroyed pool's release is retried once
# a second); otherwise the busy pools are printed.
no_busy_pools() {
	local ns=$1 out line rc=0
	shift
	out=$(pp_ask "$ns" idle 5 "$@") || rc=$?
	[ $rc = 0 ] && return 0
	while IFS= read -r line; do ktap_print_msg "$line"; done <<<"$out"
	return 1
}

# pools_of IFINDEX [NETNS]: "COUNT INFLIGHT DETACHED" of the page pools of
# IFINDEX.
pools_of() {
	pp_ask "${2:-}" of "$1"
}

ktap_print_header
modprobe -r page_pool_rs 2>/dev/null
c_rc=0
run_pp_test c || c_rc=$?
ktap_set_plan 23

# 0. The conditions the unload/load cycles below are meant to hold under.
# preempt_full: full preemption (the dynamic mode, or the built-in one).
preempt_full() {
	local f=/sys/kernel/debug/sched/preempt
	if [ -r $f ]; then grep -q '(full)' $f; else grep -qw PREEMPT <<<"$(uname -v)"; fi
}
check "the kernel preempts fully (CONFIG_PREEMPT)" preempt_full
# The hook's static calls stay inside page_pool.c: nothing of them is
# exported (a __ksymtab_ entry, KALLSYMS_ALL), so a module cannot call one
# and the hook builds without HAVE_STATIC_CALL.
ksyms="$(grep -cE ' __SCT__pp_hook_[a-z_]+$' /proc/kallsyms) $(grep -cE '__ksymtab___SC[KT]__pp_hook_' /proc/kallsyms)"
expect_eq "the hook's 3 static calls: none exported" "3 0" "$ksyms"

# 1. page_pool_test on the C path, then on the Rust path.
expect_eq "modprobe page_pool_test on the C path" 0 "$c_rc"
expect_eq "C run: page_pool_rs not loaded" c \
	"$(sed -n 's/^    # hook: //p' "$TMP/c.ktap")"
check "C run: the KUnit suite page_pool_recycle ran to its end" report c "$TMP/c.ktap"

check "modprobe page_pool_rs" modprobe page_pool_rs
rs_rc=0
run_pp_test rust || rs_rc=$?
expect_eq "modprobe page_pool_test on the Rust path" 0 "$rs_rc"
expect_eq "Rust run: page_pool_rs loaded" rust \
	"$(sed -n 's/^    # hook: //p' "$TMP/rust.ktap")"
check "Rust run: the KUnit suite page_pool_recycle ran to its end" report rust "$TMP/rust.ktap"

stats_of "$TMP/c.ktap" >"$TMP/c.stats"
stats_of "$TMP/rust.ktap" >"$TMP/rust.stats"
if [ -s "$TMP/c.stats" ] && cmp -s "$TMP/c.stats" "$TMP/rust.stats"; then
	ktap_test_pass "page_pool statistics identical on the C and the Rust path"
else
	while IFS= read -r line; do ktap_print_msg "$line"; done \
		< <(diff "$TMP/c.stats" "$TMP/rust.stats")
	ktap_test_fail "page_pool statistics identical on the C and the Rust path"
fi

# 2. TCP over veth with XDP_PASS on the receiver, page_pool_rs cycling.
# An skb read on another CPU than the one it arrived on is freed later on
# that CPU (its defer list, net.core.skb_defer_max): an idle CPU keeps the
# last few and their pages until it next receives, and the pool they came
# from would stay in flight after teardown. Off while this test runs.
defer_max=$(sysctl -n net.core.skb_defer_max)
sysctl -q -w net.core.skb_defer_max=0
setup_veth() {
	ip netns add $A && ip netns add $B &&
	ip link add $VA netns $A type veth peer name $VB netns $B &&
	ip -n $A addr add $ADDR_A/24 dev $VA && ip -n $A link set $VA up &&
	ip -n $A link set lo up &&
	ip -n $B addr add $ADDR_B/24 dev $VB && ip -n $B link set $VB up &&
	ip -n $B link set lo up &&
	ip netns exec $B "${XDP[@]}" attach $VB
}
check "veth pair between two netns, XDP_PASS on the receiver" setup_veth

ip netns exec $B "${XFER[@]}" serve $ADDR_B $PORT &
server=$!
pids+=("$server")
for i in $(seq 1 50); do
	ip netns exec $B ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q . && break
	nap 0.2
done

xfers=0
xfer_bad=0
cyc_bad=0
start_sender() {
	# shellcheck disable=SC2086 # SIZES is a list
	ip netns exec $A "${XFER[@]}" send $ADDR_B $PORT send $SIZES \
		>>"$TMP/xfer.log" 2>&1 &
	spid=$!
	pids+=("$spid")
}
reap_sender() {
	if wait "$spid"; then
		xfers=$((xfers + 1))
	else
		xfer_bad=$((xfer_bad + 1))
	fi
}
# rmmod and insmod: the kernel's unload and load, without modprobe's
# lookups (a tenth of a second each in the emulated guest).
ko=$(modinfo -n page_pool_rs)
start_sender
for i in $(seq 1 $CYCLES); do
	rmmod page_pool_rs || cyc_bad=$((cyc_bad + 1))
	insmod "$ko" || cyc_bad=$((cyc_bad + 1))
	if ! kill -0 "$spid" 2>/dev/null; then
		reap_sender
		start_sender
	fi
done
reap_sender
expect_eq "$CYCLES unload/load cycles of page_pool_rs under traffic" 0 "$cyc_bad"
[ "$xfer_bad" = 0 ] || while IFS= read -r line; do ktap_print_msg "$line"; done \
	< <(grep -v ' OK$' "$TMP/xfer.log" | head -10)
check "TCP over the XDP veth byte-exact during the cycles ($xfers transfers, $xfer_bad bad)" \
	test "$xfer_bad" = 0 -a "$xfers" -gt 0

declare -A pp=()
while read -r key val; do
	pp[${key%:}]=$val
done < <(ip netns exec $B ethtool -S $VB 2>/dev/null | grep -E '^ *rx_pp_')
ktap_print_msg "$VB page pools: alloc fast=${pp[rx_pp_alloc_fast]:--}" \
	"slow=${pp[rx_pp_alloc_slow]:--} empty=${pp[rx_pp_alloc_empty]:--}" \
	"refill=${pp[rx_pp_alloc_refill]:--} waive=${pp[rx_pp_alloc_waive]:--}" \
	"recycle cached=${pp[rx_pp_recycle_cached]:--}" \
	"cache_full=${pp[rx_pp_recycle_cache_full]:--}" \
	"ring=${pp[rx_pp_recycle_ring]:--} ring_full=${pp[rx_pp_recycle_ring_full]:--}" \
	"released_ref=${pp[rx_pp_recycle_released_ref]:--}"
check "the veth page pools handed out pages (rx_pp_alloc_fast + slow > 0)" \
	test $((${pp[rx_pp_alloc_fast]:-0} + ${pp[rx_pp_alloc_slow]:-0})) -gt 0
check "pages came back to the veth page pools (rx_pp_recycle_cached + ring > 0)" \
	test $((${pp[rx_pp_recycle_cached]:-0} + ${pp[rx_pp_recycle_ring]:-0})) -gt 0

ifx_b=$(ip netns exec $B cat /sys/class/net/$VB/ifindex 2>/dev/null)
pp_start $B
read -r cnt infl det < <(pools_of "${ifx_b:-0}" $B)
# Only a veth with patches/test/0001-veth-* gives its pools their netdev
# (the test kernel's; not the series kernel's), and only then are they
# listed, here and after teardown.
if grep -q '\.netdev = rq->dev,' "$RSNET_KSRC/drivers/net/veth.c"; then
	check "ynl page-pool-get lists the receiver's page pools ($cnt pools, $infl pages in flight)" \
		test "${cnt:-0}" -ge 1
else
	ktap_test_skip "ynl page-pool-get lists the receiver's page pools: this veth does not give its pools a netdev"
fi

# Teardown: the sockets go, then XDP (veth destroys its pools), then the
# netns.
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
check "XDP program detached from the receiver" \
	ip netns exec $B "${XDP[@]}" detach $VB
ifx_b=$(ip netns exec $B cat /sys/class/net/$VB/ifindex 2>/dev/null)
ifx_a=$(ip netns exec $A cat /sys/class/net/$VA/ifindex 2>/dev/null)
check "no page pool of the veth pair holds pages after XDP detach (ynl page-pool-get)" \
	no_busy_pools $B "${ifx_b:-0}" "${ifx_a:-0}"
pp_stop $B
ip netns del $A
ip netns del $B
pp_start ""
check "no destroyed page pool holds pages after the netns are gone" \
	no_busy_pools ""

# 3. A page pool netlink can see: netdevsim's, with a page held across the
# pool's destroy and given back through page_pool_rs.
nsim_setup() {
	mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
	if [ ! -d /sys/bus/netdevsim ]; then
		modprobe netdevsim || return 1
		nsim_loaded=1
	fi
	echo "$NSIM_ID 1" >/sys/bus/netdevsim/new_device || return 1
	nsim_made=1
	udevadm settle --timeout=5 2>/dev/null
	nsim_dev=$(ls /sys/bus/netdevsim/devices/netdevsim$NSIM_ID/net/ 2>/dev/null | head -1)
	[ -n "$nsim_dev" ] && ip link set dev "$nsim_dev" up
}
nsim_gone() {
	local i
	for i in $(seq 1 10); do
		read -r cnt infl det < <(pools_of "$nsim_ifx")
		[ "$cnt" = 0 ] && return 0
		nap 0.5
	done
	ktap_print_msg "netdevsim pools: $cnt, inflight $infl, detached $det"
	return 1
}
nsim_dev=""
if nsim_setup; then
	nsim_ifx=$(cat /sys/class/net/"$nsim_dev"/ifindex)
	hold=/sys/kernel/debug/netdevsim/netdevsim$NSIM_ID/ports/0/pp_hold
	ktap_print_msg "netdevsim $nsim_dev (ifindex $nsim_ifx), page_pool_rs refcnt $(module_refcnt page_pool_rs)"
	echo y >"$hold"
	read -r cnt infl det < <(pools_of "$nsim_ifx")
	check "netdevsim: its page pool lists the held page (pools $cnt, inflight $infl)" \
		test "$cnt" -ge 1 -a "$infl" -ge 1
	ip link set dev "$nsim_dev" down
	read -r cnt infl det < <(pools_of "$nsim_ifx")
	check "netdevsim down: the destroyed pool stays, detached, holding 1 page (pools $cnt, inflight $infl, detached $det)" \
		test "$cnt" = 1 -a "$det" = 1 -a "$infl" = 1
	echo n >"$hold"
	check "the page given back through page_pool_rs frees the destroyed pool" nsim_gone
	echo $NSIM_ID >/sys/bus/netdevsim/del_device && nsim_made=0
else
	ktap_print_msg "netdevsim unavailable (CONFIG_NETDEVSIM, debugfs)"
	ktap_test_skip "netdevsim: its page pool lists the held page"
	ktap_test_skip "netdevsim down: the destroyed pool stays, detached, holding 1 page"
	ktap_test_skip "the page given back through page_pool_rs frees the destroyed pool"
fi

# 4.
pp_stop ""
check "modprobe -r page_pool_rs at the end" modprobe -r page_pool_rs
ktap_finished
