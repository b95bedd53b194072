#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Pacing and timer_slack of the Rust fq under pktgen (queue_xmit through
# the qdisc of a veth):
# 1. one flow at maxrate 8mbit is delivered at 1,000,000 B/s within 10 %;
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
	sleep 0.1
done

# 1. One flow at maxrate 8mbit (quantum 30000: 30 ms between bursts, well
# above the emulator's timer latency) leaves the qdisc at 1,000,000 B/s.
# The rate is the least-squares slope of 31 (clock, tx_bytes) samples read
# back to back by one process over 3 s, from 0.5 s after the flow's first
# burst left (IPv6 neighbour discovery also sends on the veth): pktgen's
# setup alone can take seconds in the emulated guest, and a fixed window
# (2-5 s after starting pktgen, counter and clock read by separate
# processes) often began before the traffic (172,144 B/s once). The guest
# can still stall the flow itself: up to three measurements are taken until
# one is within 10 %. A pacing bug (no pacing: pktgen's rate; a stuck flow:
# 0) fails all three.
tc qdisc add dev $DEV root fq maxrate 8mbit quantum 30000
# The sampler starts pktgen itself once it has its first sample, so the
# traffic never starts (or ends) before the measurement does: with pktgen
# started first, a Python start delayed past pktgen's 8 s run saw no burst.
paced_rate() {
	python3 -S - /sys/class/net/$DEV/statistics/tx_bytes $DEV \
		"$HERE/pktgen_flows.sh" $DEV 10.89.0.2 1 8 1000 <<-'EOF'
	import subprocess, sys, time
	def sample():
	    with open(sys.argv[1]) as f:
	        b = int(f.read())
	    return time.monotonic(), b
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
	s = []
	for _ in range(31):
	    s.append(sample())
	    time.sleep(0.1)
	n = len(s)
	mt = sum(t for t, _ in s) / n
	mb = sum(b for _, b in s) / n
	cov = sum((t - mt) * (b - mb) for t, b in s)
	var = sum((t - mt) ** 2 for t, _ in s)
	tx.wait()
	print(int(cov / var), f"{wait:.1f}")
	EOF
}
near_maxrate() { python3 -S -c "import sys; sys.exit(abs($1 - 1000000) > 100000)"; }
read -r rate wait < <(paced_rate)
for _ in 2 3; do
	near_maxrate "$rate" && break
	ktap_print_msg "paced flow: $rate B/s (first burst after $wait s), measuring again"
	read -r rate wait < <(paced_rate)
done
ktap_print_msg "paced flow: $rate B/s at the qdisc (maxrate 1000000 B/s; first burst after $wait s)"
check "a paced flow is delivered at its maxrate within 10%" near_maxrate "$rate"

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
			sleep 0.1
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
