#!/bin/bash
# Runs inside a VM for `make bench` (see bench.sh): each measurement
# alternates C and Rust (or off and on) for ROUNDS rounds; the table has
# medians and the ratio. Appends its tables to $RSNET_RESULTS/bench.rst.
#
#   guest-bench.sh ROUNDS BENCH marked|unmarked
#
# marked: the rows the cache model measures (page_pool_bench, fq_bench),
# in detvm.sh's guest, which repeats exactly; unmarked: the others
# (pktgen, XDP, NUMA, iperf3, watchdog wakeups), in vm.sh's.
set -u
ROUNDS=${1:-5}
# Which parts to run (make bench BENCH=page_pool,fq); all by default.
BENCH=${2:-page_pool,tcp,fq,fqscale,fqslack}
ROWS=${3:?marked or unmarked}
want() { [[ ",$BENCH," == *",$1,"* ]]; }
marked() { [ "$ROWS" = marked ]; }
res=$RSNET_RESULTS
SELF=$RSNET_TOP/tools/testing/selftests/rsnet
export BASE_DIR=$RSNET_KSRC/tools/testing/selftests
. "$SELF/lib.sh"
out=$res/bench.rst
say() { echo "$*" | tee -a "$out"; }
# med VALUE...: the median (an empty value, a failed run, fails the
# benchmarks); ratio A B: A/B to three places.
fail=0
med() {
	local v
	for v in "$@"; do [ -n "$v" ] || fail=1; done
	printf '%s\n' "$@" | sort -g |
		awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else printf "%.15g\n", (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b + 0) printf "%.3f\n", a / b; else print "n/a"}'; }
# plot.tsv, for bench-plot.sh: one line per C-vs-Rust row,
#   row LABEL<TAB>ns|pps<TAB>C values<TAB>Rust values   (round by round)
# and one per timer_slack point of the wakeup sweep,
#   slack US<TAB>C wakeups/s<TAB>Rust wakeups/s          (round by round)
plot_row() { printf 'row\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$res/plot.tsv"; }
# Odd rounds run C (or off) first, even rounds Rust (or on): whatever
# drifts during a run (host load, the guest's memory) cannot favour a side.
a_first() { (($1 % 2)); }
# The cache model (tools/rsnet/cacheplugin, when bench.sh loads it) counts
# each measured run as a region of its own; marks.tsv says which:
#   ID<TAB>TABLE<TAB>ROW<TAB>IMPL<TAB>ROUND<TAB>PACKETS<TAB>NS<TAB>BYTES/FLOW
# (a row may have several regions a run: page_pool's xcpu has two). The
# numbers start at RSNET_MARK_BASE: each guest of a make bench its own.
MARK=${RSNET_MARK_BASE:-0}
# The measured modules' text symbols, for the cache model's misses by
# function: after each run, while still loaded (they move at every load),
# in syms-ID.txt. The kernel's are detvm.sh's (System.map).
mod_syms() { # ID [COUNT]: the modules' symbols for regions ID..ID+COUNT-1
	local i
	awk '$2 ~ /^[tT]$/ && $4 ~ /^\[(sch_fq|sch_fq_rs|page_pool_rs|fq_bench|page_pool_bench)\]$/' \
		/proc/kallsyms >"$res/syms-$1.txt"
	for ((i = 1; i < ${2:-1}; i++)); do cp "$res/syms-$1.txt" "$res/syms-$(($1 + i)).txt"; done
}
mark_row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$res/marks.tsv"; }

if want page_pool; then
# page_pool_bench prints one line per run, e.g.
# "page_pool_bench: path=c fast_ns=.. fast_cycles=.. ring_ns=.. ..."
pp_run() { # IMPL [PARAMS] -> the module's result line
	local impl=$1
	if [ "$1" = rust ]; then modprobe page_pool_rs; else modprobe -r page_pool_rs 2>/dev/null; fi
	shift
	dmesg -C
	local a m=
	for a in "$@"; do [[ $a == mark=* ]] && m=${a#mark=}; done
	modprobe page_pool_bench path="$impl" "$@" && { [ -n "$m" ] && mod_syms "$m" 5; modprobe -r page_pool_bench; }
	dmesg | sed -n 's/.*page_pool_bench: //p' | tail -1
}
field() { sed -n "s/.*[ ]$1=\([^ ]*\).*/\1/p" <<<"$2"; }
if marked; then
# --- page_pool: recycle paths, C against Rust --------------------------------
# 1,000,000 loops per path: at ~65 ns a fast-path run of the default
# 100,000 lasts 6.5 ms, short enough for one host hiccup to move it 50 %.
PP_LOOPS=1000000
say "page_pool: alloc + put per operation (page_pool_bench, loops=$PP_LOOPS)"
say ""
say "===========  ==========  ==========  ===========  =========  =========="
say "path         C ns        Rust ns     Rust/C ns    C cycles   Rust cycles"
say "===========  ==========  ==========  ===========  =========  =========="
declare -A PC PR
for i in $(seq "$ROUNDS"); do
	# Five regions a run: fast, ring, slow, xcpu's two sides.
	mc=$MARK mr=$((MARK + 5)); MARK=$((MARK + 10))
	if a_first "$i"; then
		lc=$(pp_run c loops=$PP_LOOPS mark=$mc); lr=$(pp_run rust loops=$PP_LOOPS mark=$mr)
	else
		lr=$(pp_run rust loops=$PP_LOOPS mark=$mr); lc=$(pp_run c loops=$PP_LOOPS mark=$mc)
	fi
	echo "# raw pp C: $lc | Rust: $lr" >>"$res/raw.txt"
	[ -n "$lc" ] && [ -n "$lr" ] || fail=1
	for impl in c rust; do
		if [ $impl = c ]; then m=$mc l=$lc; else m=$mr l=$lr; fi
		for p in fast ring slow xcpu xcpu; do
			mark_row "$m" page_pool "$p" $impl "$i" $PP_LOOPS "$(field ${p}_ns "$l")" -
			m=$((m + 1))
		done
	done
	for p in fast ring slow xcpu; do
		PC[$p.ns]+=" $(field ${p}_ns "$lc")"; PR[$p.ns]+=" $(field ${p}_ns "$lr")"
		PC[$p.cy]+=" $(field ${p}_cycles "$lc")"; PR[$p.cy]+=" $(field ${p}_cycles "$lr")"
	done
done
for p in fast ring slow xcpu; do
	plot_row "page_pool $p" ns "${PC[$p.ns]# }" "${PR[$p.ns]# }"
	# shellcheck disable=SC2086
	{ nc=$(med ${PC[$p.ns]}); nr=$(med ${PR[$p.ns]}); cc=$(med ${PC[$p.cy]}); cr=$(med ${PR[$p.cy]}); }
	say "$(printf '%-11s  %-10.1f  %-10.1f  %-11s  %-9.0f  %.0f' "$p" "$nc" "$nr" "$(ratio "$nr" "$nc")" "$cc" "$cr")"
done
say "===========  ==========  ==========  ===========  =========  =========="
say ""
modprobe -r page_pool_rs 2>/dev/null
fi
if ! marked; then
say "page_pool: far NUMA (pool filled on node 0, used from node 1): local pages handed out"
say ""
say "=======================  ===========  ========"
say "path                     local pages  waive"
say "=======================  ===========  ========"
for cfg in c rust rust-off; do
	loc=(); wv=()
	for i in $(seq "$ROUNDS"); do
		case $cfg in
		c) l=$(pp_run c numa=1) ;;
		rust) l=$(pp_run rust numa=1) ;;
		rust-off) modprobe -r page_pool_rs 2>/dev/null
			# Unloaded, the row would measure C's path under its name.
			modprobe page_pool_rs_nonuma || fail=1
			l=$(pp_run rust-off numa=1); modprobe -r page_pool_rs_nonuma ;;
		esac
		loc+=("$(field local_pct "$l")"); wv+=("$(field waive "$l")")
	done
	echo "# raw numa $cfg: local ${loc[*]} waive ${wv[*]}" >>"$res/raw.txt"
	say "$(printf '%-23s  %-11s  %s' "$cfg" "$(med "${loc[@]}")%" "$(med "${wv[@]}")")"
done
say "=======================  ===========  ========"
say "(rust-off: page_pool_rs_nonuma, page_pool_rs built without the rule)"
say ""

# --- page_pool: real traffic, pktgen into a veth with XDP ----------------------
# veth copies each skb pktgen sends (1500 B, payload in a page fragment: a
# nonlinear skb) into a page of its page pool for the XDP program of the
# peer (more than half a page with XDP's headroom: one whole page, one
# alloc and one put per packet), in the peer's NAPI on CPU 0. XDP_DROP
# recycles the pages into the alloc cache there; with XDP_PASS the packets
# reach a UDP socket that udp_sink reads on CPU 1, where the skbs are freed
# (skb_defer_max 0: no deferral to CPU 0), so their pages come back through
# the ring.
ip netns add ppx
ip link add ppxa type veth peer name ppxb netns ppx
ip addr add 10.67.0.1/24 dev ppxa
ip link set ppxa up
ip -n ppx addr add 10.67.0.2/24 dev ppxb
ip -n ppx link set ppxb up
ppx_mac=$(ip -n ppx -o link show ppxb | sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
defer_max=$(sysctl -n net.core.skb_defer_max)
sysctl -q -w net.core.skb_defer_max=0
ppx_stat() { ip netns exec ppx ethtool -S ppxb | awk -v k="$1:" '$1 == k {s += $2} END {print s + 0}'; }
xdp_pps() { # IMPL ACTION -> "pps ring-share-%"
	local impl=$1 action=$2 sink="" n r0 c0 r1 c1
	if [ "$impl" = rust ]; then modprobe page_pool_rs; else modprobe -r page_pool_rs 2>/dev/null; fi
	if [ "$action" = pass ]; then
		ip netns exec ppx taskset -c 1 "$SELF/udp_sink" 10.67.0.2 9 >"$res/sink.out" &
		sink=$!
		for _ in $(seq 300); do grep -q ready "$res/sink.out" && break; sleep 0.1; done
		grep -q ready "$res/sink.out" || echo "# udp_sink not ready after 30 s" >>"$res/raw.txt"
	fi
	r0=$(ppx_stat rx_pp_recycle_ring); c0=$(ppx_stat rx_pp_recycle_cached)
	n=$(PG_DST_MAC=$ppx_mac PG_FRAGS=1 "$SELF/pktgen_flows.sh" ppxa 10.67.0.2 1 3 1500 | tail -1)
	r1=$(ppx_stat rx_pp_recycle_ring); c1=$(ppx_stat rx_pp_recycle_cached)
	if [ -n "$sink" ]; then
		kill "$sink"; wait "$sink"
		echo "# raw xdp $impl $action: udp_sink $(grep "^read " "$res/sink.out")" >>"$res/raw.txt"
	fi
	echo "# raw xdp $impl $action: sent $n ring $((r1 - r0)) cached $((c1 - c0))" >>"$res/raw.txt"
	python3 -c "import sys; n,r,c=map(int,sys.argv[1:]); print(n//3, f'{100*r/max(r+c,1):.0f}')" \
		"$n" $((r1 - r0)) $((c1 - c0))
}
say "page_pool: pktgen (1500 B in a fragment, 3 s, CPU 0) into a veth whose peer runs XDP"
say "(packets per second; cost ratio Rust/C = pps C / pps Rust; ring: share"
say "of the recycled pages that came back through the ring; $ROUNDS rounds)"
say ""
say "===============================  ==========  ==========  ===========  ======"
say "XDP program                      C pps       Rust pps    cost Rust/C  ring"
say "===============================  ==========  ==========  ===========  ======"
for action in drop pass; do
	ip netns exec ppx python3 -S "$SELF/xdp_pass.py" attach ppxb $([ $action = drop ] && echo drop)
	c=(); r=(); rs=()
	for i in $(seq "$ROUNDS"); do
		for impl in $(a_first "$i" && echo c rust || echo rust c); do
			read -r n ring < <(xdp_pps $impl $action)
			if [ $impl = c ]; then c+=("$n"); else r+=("$n"); rs+=("$ring"); fi
		done
	done
	ip netns exec ppx python3 -S "$SELF/xdp_pass.py" detach ppxb
	label=$([ $action = drop ] && echo "XDP_DROP" || echo "XDP_PASS, udp_sink on CPU 1")
	mc=$(med "${c[@]}"); mr=$(med "${r[@]}")
	say "$(printf '%-31s  %-10.0f  %-10.0f  %-11s  %s%%' "$label" "$mc" "$mr" "$(ratio "$mc" "$mr")" "$(med "${rs[@]}")")"
	echo "# raw xdp $action C: ${c[*]} Rust: ${r[*]} ring%: ${rs[*]}" >>"$res/raw.txt"
	plot_row "page_pool veth $label" pps "${c[*]}" "${r[*]}"
done
say "===============================  ==========  ==========  ===========  ======"
say ""
sysctl -q -w net.core.skb_defer_max="$defer_max"
ip netns del ppx
modprobe -r page_pool_rs 2>/dev/null

fi
fi

if want tcp && ! marked; then
# --- tcp_tx_skb_cache: loopback throughput and skb allocations ------------------
modprobe tcp_tx_skb_cache
slab=/sys/kernel/slab/skbuff_fclone_cache
allocs() { echo $(($(awk '{print $1}' $slab/alloc_fastpath) + $(awk '{print $1}' $slab/alloc_slowpath))); }
iperf3 -s -D -1 >/dev/null 2>&1 || true
tput() { # ON FLOWS -> "Mbit/s allocs_per_MB"
	sysctl -q -w net.ipv4.tcp_tx_skb_cache="$1"
	iperf3 -s -D -1 -p 5299 >/dev/null 2>&1
	sleep 0.5
	local a0 a1 j
	a0=$(allocs)
	j=$(iperf3 -c 127.0.0.1 -p 5299 -t 4 -P "$2" -J 2>/dev/null)
	a1=$(allocs)
	python3 -c "
import json,sys
d=json.loads(sys.argv[1]); e=d['end']['sum_sent']
mb=e['bytes']/1e6
print(f\"{e['bits_per_second']/1e6:.1f} {(int(sys.argv[2])-int(sys.argv[3]))/mb:.2f}\")" "$j" "$a1" "$a0"
}
say "tcp_tx_skb_cache: iperf3 over loopback, cache off vs on"
say "(throughput ratio on/off; skbuff_fclone_cache slab allocations per MB sent)"
say ""
say "=====  ==========  ==========  ======  ==============  =============="
say "flows  off Mbit/s  on Mbit/s   on/off  off allocs/MB   on allocs/MB"
say "=====  ==========  ==========  ======  ==============  =============="
for flows in 1 2; do
	off=(); on=(); aoff=(); aon=()
	for i in $(seq "$ROUNDS"); do
		for on_ in $(a_first "$i" && echo 0 1 || echo 1 0); do
			read -r t a <<<"$(tput "$on_" $flows)"
			if [ "$on_" = 1 ]; then on+=("$t"); aon+=("$a"); else off+=("$t"); aoff+=("$a"); fi
		done
	done
	echo "# raw flows $flows off: ${off[*]} on: ${on[*]} allocs off: ${aoff[*]} on: ${aon[*]}" >>"$res/raw.txt"
	moff=$(med "${off[@]}"); mon=$(med "${on[@]}")
	say "$(printf '%-5s  %-10s  %-10s  %-6s  %-14s  %s' "$flows" "$moff" "$mon" "$(ratio "$mon" "$moff")" \
		"$(med "${aoff[@]}")" "$(med "${aon[@]}")")"
done
say "=====  ==========  ==========  ======  ==============  =============="
sysctl -q -w net.ipv4.tcp_tx_skb_cache=0
modprobe -r tcp_tx_skb_cache
say ""

fi

fq_impl() { if [ "$1" = rust ]; then fq_use_rust; else fq_use_c; fi; }

if want fq || want fqslack; then
if ! marked; then
ip link add fqbench type dummy && ip link set fqbench up
ip addr add 10.66.0.1/24 dev fqbench
fi

if want fq && ! marked; then
# --- sch_fq: per-packet cost with pktgen ---------------------------------
pps() { # IMPL FLOWS OPTS...
	local impl=$1 flows=$2
	shift 2
	fq_impl "$impl"
	tc qdisc add dev fqbench root fq "$@"
	local n
	n=$("$SELF/pktgen_flows.sh" fqbench 10.66.0.2 "$flows" 3 64 | tail -1)
	tc qdisc del dev fqbench root
	echo $((n / 3))
}
say "sch_fq: pktgen (queue_xmit, 64 B) into a dummy device with an fq root"
say "(packets per second; cost ratio Rust/C = pps C / pps Rust; $ROUNDS rounds)"
say ""
say "=========  ===============  ==========  ==========  ============="
say "flows      fq options       C pps       Rust pps    cost Rust/C"
say "=========  ===============  ==========  ==========  ============="
for flows in 1 1000; do
	for opts in "" "maxrate 30gbit"; do
		c=(); r=()
		for i in $(seq "$ROUNDS"); do
			for impl in $(a_first "$i" && echo c rust || echo rust c); do
				# shellcheck disable=SC2086
				n=$(pps $impl "$flows" $opts)
				if [ $impl = c ]; then c+=("$n"); else r+=("$n"); fi
			done
		done
		mc=$(med "${c[@]}"); mr=$(med "${r[@]}")
		say "$(printf '%-9s  %-15s  %-10.0f  %-10.0f  %s' "$flows" "${opts:-default}" "$mc" "$mr" "$(ratio "$mc" "$mr")")"
		echo "# raw C: ${c[*]} Rust: ${r[*]}" >>"$res/raw.txt"
		plot_row "pktgen $flows flows${opts:+ $opts}" pps "${c[*]}" "${r[*]}"
	done
done
say "=========  ===============  ==========  ==========  ============="
say ""

fi
if want fq && marked; then
# --- sch_fq: the qdisc alone (fq_bench) ----------------------------------
# fq_bench calls the root qdisc's enqueue and dequeue of a down device
# directly: the cost of fq itself, which the pktgen table dilutes in the
# whole transmit path.
ip link add fqb0 type dummy
FQB_LOOPS=1000000
fqb() { # IMPL FLOWS BURST SOCK MARK -> "ns-per-packet packets"
	fq_impl "$1"
	tc qdisc add dev fqb0 root fq
	dmesg -C
	modprobe fq_bench dev=fqb0 flows="$2" burst="$3" sock="$4" loops=$FQB_LOOPS mark="$5" &&
		{ mod_syms "$5"; modprobe -r fq_bench; }
	tc qdisc del dev fqb0 root
	dmesg | sed -n 's/.*fq_bench: .* pkts=\([0-9]*\) ns=\([0-9.]*\).*/\2 \1/p' | tail -1
}
say "sch_fq: enqueue + dequeue per packet, the qdisc alone (fq_bench, $FQB_LOOPS packets, default options)"
say ""
say "=================================  ==========  ==========  ==========="
say "case                               C ns        Rust ns     Rust/C"
say "=================================  ==========  ==========  ==========="
# Orphan flows (hashes, as pktgen's), then flows that are TCP sockets (the
# socket checks of classify and the fast path, as for real TCP traffic).
for cs in "1 1 0 fast path (1 flow, burst 1)" "1 64 0 1 flow, burst 64" \
	"1000 64 0 1000 flows, burst 64" "1 1 1 TCP socket, fast path" \
	"1000 64 1 1000 TCP sockets, burst 64"; do
	read -r flows burst sock label <<<"$cs"
	c=(); r=()
	for i in $(seq "$ROUNDS"); do
		for impl in $(a_first "$i" && echo c rust || echo rust c); do
			read -r n pk <<<"$(fqb $impl "$flows" "$burst" "$sock" $MARK)"
			mark_row $MARK fq "$label" $impl "$i" "$pk" "$n" -
			MARK=$((MARK + 1))
			if [ $impl = c ]; then c+=("$n"); else r+=("$n"); fi
		done
	done
	echo "# raw fq_bench $flows/$burst/sock=$sock C: ${c[*]} Rust: ${r[*]}" >>"$res/raw.txt"
	plot_row "fq_bench $label" ns "${c[*]}" "${r[*]}"
	mc=$(med "${c[@]}"); mr=$(med "${r[@]}")
	say "$(printf '%-33s  %-10.1f  %-10.1f  %s' "$label" "$mc" "$mr" "$(ratio "$mr" "$mc")")"
done
say "=================================  ==========  ==========  ==========="
say ""
ip link del fqb0
fi

if want fqslack && ! marked; then
# --- sch_fq: watchdog wakeups with many paced flows ------------------------
# Wakeups are NET_TX softirqs (net_tx_softirqs in lib.sh says why). All
# hrtimer interrupts, 1000 Hz ticks included, are shown for reference.
timer_irqs() { awk '/nr_events/ {s += $3} END {print s}' /proc/timer_list; }
wakeups() { # IMPL SLACK -> "NET_TX/s hrtimer-irqs/s"
	fq_impl "$1"
	tc qdisc add dev fqbench root fq maxrate 400kbit timer_slack "$2"
	local n0 n1 e0 e1
	n0=$(net_tx_softirqs); e0=$(timer_irqs)
	"$SELF/pktgen_flows.sh" fqbench 10.66.0.2 1000 3 1000 >/dev/null
	n1=$(net_tx_softirqs); e1=$(timer_irqs)
	tc qdisc del dev fqbench root
	echo "$(((n1 - n0) / 3)) $(((e1 - e0) / 3))"
}
say "sch_fq: watchdog wakeups per second (NET_TX softirqs), 1000 flows paced at 400kbit (pktgen)"
say ""
say "=====  ========  ========  ==========  ==========  ==========  =========="
say "slack  C wake/s  Rust/s    C vs 0      Rust vs 0   C irq/s     Rust irq/s"
say "=====  ========  ========  ==========  ==========  ==========  =========="
declare -A MC MR
# 0 to 200 us: the range bench-plot.sh draws, C and Rust on one chart.
for slack in 0 10us 25us 50us 100us 150us 200us; do
	c=(); r=(); ci=(); ri=()
	for i in $(seq "$ROUNDS"); do
		for impl in $(a_first "$i" && echo c rust || echo rust c); do
			read -r w e <<<"$(wakeups $impl $slack)"
			if [ $impl = c ]; then c+=("$w"); ci+=("$e"); else r+=("$w"); ri+=("$e"); fi
		done
	done
	MC[$slack]=$(med "${c[@]}"); MR[$slack]=$(med "${r[@]}")
	echo "# raw slack $slack C: ${c[*]} Rust: ${r[*]} irqs C: ${ci[*]} Rust: ${ri[*]}" >>"$res/raw.txt"
	printf 'slack\t%s\t%s\t%s\n' "${slack%us}" "${c[*]}" "${r[*]}" >>"$res/plot.tsv"
	say "$(printf '%-5s  %-8.0f  %-8.0f  %-10s  %-10s  %-10.0f  %.0f' "$slack" "${MC[$slack]}" "${MR[$slack]}" \
		"$(ratio "${MC[$slack]}" "${MC[0]}")" "$(ratio "${MR[$slack]}" "${MR[0]}")" \
		"$(med "${ci[@]}")" "$(med "${ri[@]}")")"
done
say "=====  ========  ========  ==========  ==========  ==========  =========="
say ""
fi
if ! marked; then
ip link del fqbench
fi
fq_unload_all
fi

# --- sch_fq at scale: the qdisc alone, up to 100,000 flows -----------------
# fq_bench with bursts of 64 over 1,000 to 100,000 flows (orphan hashes under
# a wide orphan_mask, and TCP sockets), each flow met about ten times, its
# first packet creating it. Bytes per flow: what the qdisc holds after the
# run (SUnreclaim, slab and kmalloc; the qdisc is deleted afterwards) over
# the flows it made.
if want fqscale && marked; then
ip link add fqb1 type dummy
sunreclaim() { awk '/^SUnreclaim:/ {print $2}' /proc/meminfo; }
# settle: time for RCU to free what the run left (a few grace periods).
# In the deterministic guest a busy second, not a sleep: with the cache
# model, runs diverged after the idle CPU's thousand ticks of each
# "sleep 1" (QEMU's icount warps an idle guest's clock in its main loop).
settle() {
	if marked; then
		local end=$((${EPOCHREALTIME/./} + 1000000))
		while ((${EPOCHREALTIME/./} < end)); do :; done
	else
		sleep 1
	fi
}
fqs() { # IMPL FLOWS SOCK MARK [fq options] -> "ns bytes-per-flow packets"
	local impl=$1 flows=$2 sock=$3 mark=$4 m0 m1 ns pk loops=$(($2 * 10))
	shift 4
	[ $loops -lt 1000000 ] && loops=1000000
	fq_impl "$impl"
	sync
	m0=$(sunreclaim)
	tc qdisc add dev fqb1 root fq orphan_mask 1048575 "$@"
	dmesg -C
	modprobe fq_bench dev=fqb1 flows="$flows" burst=64 sock="$sock" loops=$loops mark="$mark" &&
		{ mod_syms "$mark"; modprobe -r fq_bench; }
	settle
	m1=$(sunreclaim)
	tc qdisc del dev fqb1 root
	ns=$(dmesg | sed -n 's/.*fq_bench: .* ns=\([0-9.]*\).*/\1/p' | tail -1)
	pk=$(dmesg | sed -n 's/.*fq_bench: .* pkts=\([0-9]*\).*/\1/p' | tail -1)
	echo "${ns:-0} $(((m1 - m0) * 1024 / flows)) ${pk:-0}"
}
say "sch_fq at scale: enqueue + dequeue per packet, the qdisc alone (fq_bench, burst 64,"
say "each flow about ten times, orphan_mask 1048575), and bytes held per flow after the run"
say ""
say "===================================  ========  ========  ======  ==========  =========="
say "case                                 C ns      Rust ns   Rust/C  C B/flow    Rust B/flow"
say "===================================  ========  ========  ======  ==========  =========="
for cs in "1000 0 - 1,000 flows" "10000 0 - 10,000 flows" "100000 0 - 100,000 flows" \
	"10000 0 16384 10,000 flows, buckets 16384" "100000 0 16384 100,000 flows, buckets 16384" \
	"10000 1 - 10,000 TCP sockets"; do
	read -r flows sock buckets label <<<"$cs"
	opts=(); [ "$buckets" != - ] && opts=(buckets "$buckets")
	c=(); r=(); cb=(); rb=()
	for i in $(seq "$ROUNDS"); do
		for impl in $(a_first "$i" && echo c rust || echo rust c); do
			read -r n b pk <<<"$(fqs $impl "$flows" "$sock" $MARK "${opts[@]}")"
			[ "$pk" != 0 ] || fail=1
			mark_row $MARK fqscale "$label" $impl "$i" "$pk" "$n" "$b"
			MARK=$((MARK + 1))
			if [ $impl = c ]; then c+=("$n"); cb+=("$b"); else r+=("$n"); rb+=("$b"); fi
		done
	done
	echo "# raw fq_bench scale $flows/sock=$sock/buckets=$buckets C: ${c[*]} Rust: ${r[*]} B/flow C: ${cb[*]} Rust: ${rb[*]}" >>"$res/raw.txt"
	plot_row "fq_bench $label" ns "${c[*]}" "${r[*]}"
	mc=$(med "${c[@]}"); mr=$(med "${r[@]}")
	say "$(printf '%-35s  %-8.1f  %-8.1f  %-6s  %-10s  %s' "$label" "$mc" "$mr" "$(ratio "$mr" "$mc")" \
		"$(med "${cb[@]}")" "$(med "${rb[@]}")")"
done
say "===================================  ========  ========  ======  ==========  =========="
say ""
ip link del fqb1
fq_unload_all
fi

# A run that printed no result has failed the benchmarks.
exit $fail
