#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pktgen_flows.sh DEV DST FLOWS SECONDS [PKT_SIZE]
# pktgen through the qdisc of DEV (xmit_mode queue_xmit), as FLOWS UDP flows
# (random source ports, no socket: fq hashes them as orphans), for SECONDS.
# Prints the packets pktgen sent.
#
# PG_SRC="MIN MAX" takes IPv4 source addresses MIN..MAX in turn (one new
# address per packet: as many flows as addresses); PG_COUNT=N stops after
# N packets (or SECONDS, whichever comes first); PG_DST_MAC sets the
# destination MAC address (default: zero); PG_FRAGS=N puts the payload in
# N page fragments (a nonlinear skb). Without PG_COUNT, SIGTERM
# stops pktgen before SECONDS (and the script still prints its count).
set -u
DEV=$1 DST=$2 FLOWS=$3 SECS=$4 SIZE=${5:-1000}
PG=/proc/net/pktgen
[ -d $PG ] || modprobe pktgen
T=$PG/kpktgend_0
pgset() {
	echo "$2" >"$1" || { echo "pktgen: '$2' > $1 failed" >&2; exit 1; }
}
# rem_device_all only flags the thread, which removes its devices when it
# next runs (the write waits 125 ms for that, which the emulated guest can
# miss) and, in the same pass, after starting the devices of a pending
# "start": a flag still pending at the next add_device and start would
# remove the device just added. So flag only a thread that has devices,
# and wait until they are gone.
rem_all() {
	local i
	grep -qE '^(Running|Stopped): *[^ ]' $T || return 0
	pgset $T "rem_device_all"
	for i in $(seq 100); do
		grep -qE '^(Running|Stopped): *[^ ]' $T || return 0
		sleep 0.1
	done
	echo "pktgen: $T still has devices after rem_device_all" >&2
	exit 1
}
rem_all
pgset $T "add_device $DEV"
D=$PG/$DEV
pgset $D "count ${PG_COUNT:-0}"
pgset $D "pkt_size $SIZE"
pgset $D "dst $DST"
pgset $D "xmit_mode queue_xmit"
pgset $D "udp_src_min 10000"
pgset $D "udp_src_max $((10000 + FLOWS - 1))"
pgset $D "flag UDPSRC_RND"
[ -n "${PG_DST_MAC:-}" ] && pgset $D "dst_mac $PG_DST_MAC"
[ -n "${PG_FRAGS:-}" ] && pgset $D "frags $PG_FRAGS"
if [ -n "${PG_SRC:-}" ]; then
	read -r lo hi <<<"$PG_SRC"
	pgset $D "src_min $lo"
	pgset $D "src_max $hi"
fi
(echo start >$PG/pgctrl) &
run=$!
if [ -n "${PG_COUNT:-}" ]; then
	# "start" returns when the count is sent; stop at SECONDS in any case.
	# The timer's output is not ours (a caller reading ours to the end
	# would wait for its sleep), and it takes its sleep down when killed.
	(
		trap 'kill $s 2>/dev/null; exit' TERM
		sleep "$SECS" &
		s=$!
		wait $s && echo stop >$PG/pgctrl
	) >/dev/null 2>&1 &
	timer=$!
	wait $run
	# "start" also returns when the thread has not started the device
	# within its 125 ms (an emulated guest under load can miss that):
	# wait for the count while the timer runs.
	while [ "$(sed -nE 's/^ *pkts-sofar: ([0-9]+).*/\1/p' $D)" -lt "$PG_COUNT" ] 2>/dev/null &&
		kill -0 $timer 2>/dev/null; do
		sleep 0.2
	done
	kill $timer 2>/dev/null
else
	# SIGTERM ends the run before SECONDS (a caller that has measured
	# what it needs stops it): the sleep is waited for, so the trap runs
	# at once.
	sleep "$SECS" &
	s=$!
	trap 'kill $s 2>/dev/null' TERM
	wait $s
	trap - TERM
	echo stop >$PG/pgctrl
	wait $run
fi
sed -nE 's/^ *pkts-sofar: ([0-9]+).*/\1/p' $D
rem_all
