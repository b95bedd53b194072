#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Pacing and timer_slack of the Rust fq under pktgen (queue_xmit through
# the qdisc of a veth):
# 1. one flow at maxrate 8mbit (or a quarter of what pktgen offers, if
#    less) is delivered at that rate within 10 %;
# 2. the qdisc watchdog's hrtimer is armed with timer_slack as its range
#    (default 10us, 0, 10us, 100us, 4s), and C fq arms it the same way.
# FQ_IMPL=c runs the same against the C sch_fq (and compares with Rust).

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
DEV=fqp0

cleanup() {
	ip link del $DEV 2>/dev/null
	modprobe -r pktgen 2>/dev/null
	fq_unload_all
}
trap cleanup EXIT

ktap_print_header
ktap_set_plan 3
fq_unload_all
if [ "${FQ_IMPL:-rust}" = c ]; then fq_use_c; else fq_use_rust; fi
modprobe pktgen
ip link add $DEV type veth peer name ${DEV}p
ip addr add 10.89.0.1/24 dev $DEV && ip link set $DEV up && ip link set ${DEV}p up
# The qdisc runs once linkwatch has activated the device after carrier-on,
# which is asynchronous: wait for operstate up (at most 10 s) so that the
# first pktgen run does not start into a device that drops everything.
for _ in $(seq 100); do
	[ "$(cat /sys/class/net/$DEV/operstate)" = up ] && break
	nap 0.1
done

# 1. One flow paced at maxrate leaves the qdisc at that rate: 8mbit
# (1,000,000 B/s, quantum 30000: 30 ms between bursts, well above the
# emulator's timer latency), or a quarter of what pktgen offers if that is
# less. pktgen's rate is the kernel's speed: under KASAN it offered about
# 80,000 B/s, and a maxrate above what is offered paces nothing and
# measures the sender. So one pktgen run (one flow) first goes through an
# fq without maxrate, where its rate is measured; then maxrate is set
# (tc qdisc change, the same run) to min(1,000,000, offered / 4) and the
# paced rate measured. Each rate is the least-squares slope of (clock,
# tx_bytes) samples read back to back by one process every 0.1 s (16
# over 1.5 s for the offered rate, 31 over 3 s for the paced one), from
# 0.5 s after the flow's first burst left (IPv6 neighbour discovery also
# sends on the veth) or after the change: pktgen's setup alone can take
# seconds in the emulated guest (20 under KASAN), and a fixed window often
# began before the traffic (172,144 B/s once). The sampler starts pktgen
# itself once it has its first sample, and stops it once it has measured,
# so the traffic neither starts nor ends inside a window whatever the
# kernel's speed. The guest can still stall the flow itself: up to three
# paced measurements are taken until one is within 10 %. A pacing bug (no
# pacing: pktgen's rate, four times the target; a stuck flow: 0) fails all
# three.
tc qdisc add dev $DEV root fq quantum 30000
# paced_rate: "OFFERED TARGET WAIT RATE..." (B/s, s, B/s per measurement).
paced_rate() {
	python3 -S - /sys/class/net/$DEV/statistics/tx_bytes $DEV \
		"$HERE/pktgen_flows.sh" $DEV 10.89.0.2 1 300 1000 <<-'EOF'
	import subprocess, sys, time
	def sample():
	    with open(sys.argv[1]) as f:
	        b = int(f.read())
	    return time.monotonic(), b
	def slope(n):
	    s = []
	    for _ in range(n):
	        s.append(sample())
	        time.sleep(0.1)
	    mt = sum(t for t, _ in s) / n
	    mb = sum(b for _, b in s) / n
	    cov = sum((t - mt) * (b - mb) for t, b in s)
	    var = sum((t - mt) ** 2 for t, _ in s)
	    return int(cov / var)
	def snapshot():
	    # Where the packets are when none leave: in the qdisc
	    # (backlog), dropped by the veth, or never sent by pktgen.
	    dev = sys.argv[2]
	    n = "/sys/class/net/" + dev
	    for cmd in (["tc", "-s", "qdisc", "show", "dev", dev],
	                ["cat", "/proc/net/pktgen/kpktgend_0",
	                 "/proc/net/pktgen/" + dev, n + "/operstate",
	                 n + "/carrier", n + "/statistics/tx_dropped",
	                 n + "/statistics/tx_packets"]):
	        r = subprocess.run(cmd, capture_output=True, text=True)
	        for l in (" ".join(cmd) + "\n" + r.stdout + r.stderr).splitlines():
	            print("# no traffic after 5 s:", l, file=sys.stderr)
	t0, b0 = sample()
	tx = subprocess.Popen(sys.argv[3:], stdout=subprocess.DEVNULL)
	snap = False
	while sample()[1] - b0 < 15000 and time.monotonic() - t0 < 60:
	    if not snap and time.monotonic() - t0 > 5:
	        snap = True
	        snapshot()
	    time.sleep(0.05)
	wait = time.monotonic() - t0
	time.sleep(0.5)
	offered = slope(16)
	target = min(1000000, offered // 4)
	rates = []
	if target >= 1000:
	    subprocess.run(["tc", "qdisc", "change", "dev", sys.argv[2], "root", "fq",
	                    "maxrate", f"{target * 8}bit"], check=True)
	    time.sleep(0.5)
	    for _ in range(3):
	        rates.append(slope(31))
	        if abs(rates[-1] - target) <= target / 10:
	            break
	tx.terminate()
	tx.wait()
	print(offered, target, f"{wait:.1f}", *rates)
	EOF
}
read -r offered target wait rates < <(paced_rate)
rate=${rates##* }
ktap_print_msg "pktgen offered $offered B/s (first burst after $wait s); paced at maxrate $target B/s: ${rates:-not measured} B/s at the qdisc"
near_maxrate() { python3 -S -c "import sys; sys.exit(not ($2 >= 1000 and abs($1 - $2) <= $2 / 10))"; }
check "a paced flow is delivered at its maxrate within 10%" near_maxrate "${rate:-0}" "${target:-0}"

# 2. timer_slack is the range of the watchdog's hrtimer: every arming of
# the watchdog asks for [time_next_delayed_flow, + timer_slack], which
# /proc/timer_list shows as "expires at SOFT-HARD". One UDP socket sends 8
# datagrams of 1000 bytes into a flow paced at 8kbit (1000 B/s, below
# low_rate_threshold, so each packet is paced): the first leaves at once
# and the watchdog stays armed for about 7 s, re-armed once a second.
# 4s checks the full u32 range of the attribute (above INT_MAX ns). The
# same ranges on C fq hold the expected values to C itself. How often the
# watchdog then wakes is a speed figure, measured by make bench.
SLACKS="- 0 10us 100us 4s"
EXPECT="-:10000 0:0 10us:10000 100us:100000 4s:4000000000"
ip neigh replace 10.89.0.2 lladdr "$(cat /sys/class/net/${DEV}p/address)" \
	dev $DEV nud permanent
# watchdog_ranges SLACK...: "SLACK:RANGE..." with RANGE in ns (all armed
# qdisc watchdogs, normally one) or "none"; SLACK "-" leaves the attribute
# out (the default).
watchdog_ranges() {
	local s r out=
	for s in "$@"; do
		tc qdisc del dev $DEV root 2>/dev/null
		if [ "$s" = - ]; then
			tc qdisc add dev $DEV root fq maxrate 8kbit
		else
			tc qdisc add dev $DEV root fq maxrate 8kbit timer_slack "$s"
		fi
		{
			for _ in 1 2 3 4 5 6 7 8; do printf '%1000s' x; done
		} >/dev/udp/10.89.0.2/9
		r=
		for _ in $(seq 50); do
			r=$(awk '/, qdisc_watchdog,/ { getline; split($4, e, "-");
				printf "%s%.0f", n++ ? "," : "", e[2] - e[1] }' /proc/timer_list)
			[ -n "$r" ] && break
			nap 0.1
		done
		out+=" $s:${r:-none}"
	done
	tc qdisc del dev $DEV root 2>/dev/null
	echo $out
}
got=$(watchdog_ranges $SLACKS)
ktap_print_msg "watchdog hrtimer range (ns) per timer_slack, ${FQ_IMPL:-rust}: $got"
check "the watchdog's hrtimer range is timer_slack (default 10us, 0, 10us, 100us, 4s)" \
	test "$got" = "$EXPECT"
if [ "${FQ_IMPL:-rust}" = c ]; then fq_use_rust; other=rust; else fq_use_c; other=c; fi
ref=$(watchdog_ranges $SLACKS)
ktap_print_msg "the same on $other fq: $ref"
check "$other fq arms its watchdog with the same ranges" test "$got" = "$ref"
ktap_finished
