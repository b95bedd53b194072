#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# pktgen_flows.sh DEV DST FLOWS SECONDS [PKT_SIZE]
# pktgen through the qdisc of DEV (xmit_mode queue_xmit), as FLOWS UDP flows
# (random source ports, no socket: fq hashes them as orphans), for SECONDS.
# Prints the packets pktgen sent.
set -u
DEV=$1 DST=$2 FLOWS=$3 SECS=$4 SIZE=${5:-1000}
PG=/proc/net/pktgen
[ -d $PG ] || modprobe pktgen
pgset() {
	echo "$2" >"$1" || { echo "pktgen: '$2' > $1 failed" >&2; exit 1; }
}
pgset $PG/kpktgend_0 "rem_device_all"
pgset $PG/kpktgend_0 "add_device $DEV"
D=$PG/$DEV
pgset $D "count 0"
pgset $D "pkt_size $SIZE"
pgset $D "dst $DST"
pgset $D "xmit_mode queue_xmit"
pgset $D "udp_src_min 10000"
pgset $D "udp_src_max $((10000 + FLOWS - 1))"
pgset $D "flag UDPSRC_RND"
(echo start >$PG/pgctrl) &
run=$!
sleep "$SECS"
echo stop >$PG/pgctrl
wait $run
sed -nE 's/^ *pkts-sofar: ([0-9]+).*/\1/p' $D
pgset $PG/kpktgend_0 "rem_device_all"
