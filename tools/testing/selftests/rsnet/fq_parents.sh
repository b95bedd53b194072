#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# fq as the leaf of the classful and peeking parents users run: htb, hfsc,
# tbf in front of drr and of ets, and tbf alone, each with C's fq and
# with Rust's. The parent shapes to 16kbit, so packets wait in fq: 50
# sockets (udp_many) send two rounds due now (the parent peeks them:
# qdisc_peek_dequeued() moves fq's head packet to the parent-visible
# gso_skb) and one held by an SO_TXTIME departure 300 s away (fq
# throttles each flow once it reaches it). Then, each a step:
#   change    fq's limit to 60, below its backlog: fq drops what it can
#             dequeue and tells its parents (qdisc_tree_reduce_backlog());
#   drain     the due packets leave at the parent's rate;
#   delete    the fq goes, its packets purged;
#   class     (htb, hfsc, drr) a new fq fed again, then its class deleted.
# After each step every qdisc's qlen and backlog are its children's sum
# (an fq's are its own; a peeked qdisc below tbf may hold one packet more,
# in its gso_skb), and at the end every packet offered was sent or
# counted dropped at the root. What does not depend on the guest's speed
# (fq within its new limit, the packets held after the drain, an empty
# root after each deletion) must be C's.

. "$(dirname "$0")/lib.sh"
HERE=$(dirname "$(readlink -f "$0")")
DEV=fqp0
N=50
TMP=$(mktemp -d /tmp/fq_parents.XXXXXX)
RATE=16kbit

cleanup() {
	exec 9>&- 8<&-
	wait 2>/dev/null
	ip link del $DEV 2>/dev/null
	fq_unload_all
	rm -rf "$TMP"
}
trap cleanup EXIT

LAYOUTS="htb hfsc tbf tbf_drr tbf_ets"
ktap_print_header
ktap_set_plan $((3 * 5))
fq_unload_all

ip link add $DEV type dummy &&
	sysctl -qw net.ipv6.conf.$DEV.disable_ipv6=1 &&
	ip addr add 10.89.0.1/24 dev $DEV &&
	ip link set $DEV up
mkfifo "$TMP/hold" "$TMP/sent"
"$HERE/udp_many" 10.89.0.200 9 $N 0 <"$TMP/hold" >"$TMP/sent" &
exec 9>"$TMP/hold" 8<"$TMP/sent"
OFFERED=0
# send MS: one datagram a socket, departing MS ms from now.
send() {
	local line
	echo "send $1" >&9
	read -r -t 60 line <&8 || line=
	OFFERED=$((OFFERED + $(awk '{print $2}' <<<"$line")))
}

FQ="fq limit 1000 horizon 600s"
# layout L: the parent(s) of L on $DEV with an fq leaf 10:; LEAF is where
# it hangs, CLASS the class a step may delete (none for tbf and ets).
layout() {
	CLASS=
	case $1 in
	htb)
		tc qdisc add dev $DEV root handle 1: htb default 1 &&
			tc class add dev $DEV parent 1: classid 1:1 htb rate $RATE burst 1600 quantum 1514 &&
			LEAF=1:1 CLASS=1:1 ;;
	hfsc)
		tc qdisc add dev $DEV root handle 1: hfsc default 1 &&
			tc class add dev $DEV parent 1: classid 1:1 hfsc sc rate $RATE ul rate $RATE &&
			LEAF=1:1 CLASS=1:1 ;;
	tbf)
		tc qdisc add dev $DEV root handle 1: tbf rate $RATE burst 1600 limit 1000000 &&
			LEAF=1:1 ;;
	tbf_drr)
		tc qdisc add dev $DEV root handle 1: tbf rate $RATE burst 1600 limit 1000000 &&
			tc qdisc add dev $DEV parent 1:1 handle 2: drr &&
			tc class add dev $DEV parent 2: classid 2:1 drr &&
			tc filter add dev $DEV parent 2: matchall classid 2:1 &&
			LEAF=2:1 CLASS=2:1 ;;
	tbf_ets)
		tc qdisc add dev $DEV root handle 1: tbf rate $RATE burst 1600 limit 1000000 &&
			tc qdisc add dev $DEV parent 1:1 handle 2: ets bands 1 &&
			LEAF=2:1 ;;
	esac && tc qdisc replace dev $DEV parent $LEAF handle 10: $FQ
}

# The qdiscs of $DEV as "handle parent kind qlen backlog packets drops",
# one a line; backlog as tc prints it (sprint_size(): 13144b, 12Kb).
tree() {
	tc -s qdisc show dev $DEV | awk '
		$1 == "qdisc" {
			if (h != "") print h, p, k, q, b, n, d
			k = $2; h = $3; p = ($4 == "root") ? "root" : $5
		}
		$1 == "Sent" {n = $4; d = $7; sub(",", "", d)}
		$1 == "backlog" {b = $2; q = $3; sub("p", "", q)}
		END {if (h != "") print h, p, k, q, b, n, d}'
}
# consistent: nothing, if each classful qdisc's qlen and backlog are the
# sum of its children's; else what differs. The dump reads the qdiscs one
# after the other while the parent sends, so a mismatch is read again.
consistent() {
	local try out
	for try in 1 2 3 4 5; do
		tree >"$TMP/tree"
		out=$(awk '
			# bytes of a size tc printed; size of bytes as tc prints it
			function bytes(s) {
				if (s ~ /Mb$/) return int(substr(s, 1, length(s) - 2) * 1048576 + 0.5)
				if (s ~ /Kb$/) return int(substr(s, 1, length(s) - 2) * 1024 + 0.5)
				return substr(s, 1, length(s) - 1) + 0
			}
			function size(n) {
				if (n >= 1048576 && (n % 1048576 < 1024 || n % 1048576 > 1047552))
					return sprintf("%gMb", int(n / 1048576 + 0.5))
				if (n >= 1024 && (n % 1024 < 16 || n % 1024 > 1008))
					return sprintf("%gKb", int(n / 1024 + 0.5))
				return n "b"
			}
			{q[$1] = $4; b[$1] = $5; k[$1] = $3; p[$1] = $2}
			END {
				for (h in q) if (k[h] != "fq" && k[h] != "pfifo" && k[h] != "noqueue") {
					sq = 0; sb = 0; n = 0
					for (c in q) if (c != h && substr(p[c], 1, length(h)) == h) {
						sq += q[c]; sb += bytes(b[c]); n++
					}
					# A peeked parent holds one packet of its own
					# (qdisc_peek_dequeued(): its gso_skb).
					d = bytes(b[h]) - sb
					if (n && p[h] != "root" && q[h] == sq + 1 && d > 0 && d <= 1600)
						continue
					if (n && (sq != q[h] || size(sb) != b[h]))
						printf "%s %s qlen %d backlog %s, children %d %s; ", k[h], h, q[h], b[h], sq, size(sb)
				}
			}' "$TMP/tree")
		[ -z "$out" ] && return 0
	done
	echo "$out"
}
# field HANDLE COLUMN: a column of tree() for the qdisc HANDLE.
field() { awk -v h="$1" -v c="$2" '$1 == h {print $c}' "$TMP/tree"; }
# drain: wait until the root holds only the N held packets.
drain() {
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		tree >"$TMP/tree"
		[ "$(field 1: 4)" -le $N ] 2>/dev/null && return 0
		nap 0.3
	done
	return 1
}

run() {
	local l=$1 impl=$2 bad="" got=""
	OFFERED=0
	layout "$l" || bad+="layout; "
	# Due packets first: a flow whose head waits is throttled, and what
	# follows waits with it.
	send 0
	send 0
	send 300000
	bad+=$(consistent | sed 's/^/burst: /')
	tc qdisc change dev $DEV parent $LEAF handle 10: fq limit 60 || bad+="change; "
	bad+=$(consistent | sed 's/^/change: /')
	# The parent sends meanwhile: at most, not exactly, the limit.
	got+="fq qlen after change <= 60: $([ "$(field 10: 4)" -le 60 ] 2>/dev/null && echo yes || echo "no ($(field 10: 4))")"
	drain || bad+="drain timed out; "
	bad+=$(consistent | sed 's/^/drain: /')
	got+=", held after drain $(field 10: 4)"
	tc qdisc del dev $DEV parent $LEAF handle 10: || bad+="delete; "
	bad+=$(consistent | sed 's/^/delete: /')
	tree >"$TMP/tree"
	got+=", root after delete $(field 1: 4)/$(field 1: 5)"
	if [ -n "$CLASS" ]; then
		tc qdisc replace dev $DEV parent $LEAF handle 10: $FQ || bad+="re-add; "
		send 0
		send 300000
		[ "$l" = tbf_drr ] && tc filter del dev $DEV parent 2:
		tc class del dev $DEV classid $CLASS || bad+="class delete; "
		bad+=$(consistent | sed 's/^/class: /')
		tree >"$TMP/tree"
		got+=", root after class delete $(field 1: 4)/$(field 1: 5)"
	fi
	# Everything offered: sent, dropped or still queued at the root.
	tree >"$TMP/tree"
	local acc=$(($(field 1: 6) + $(field 1: 7) + $(field 1: 4)))
	[ "$acc" = "$OFFERED" ] ||
		bad+="root sent $(field 1: 6) + dropped $(field 1: 7) + queued $(field 1: 4) != offered $OFFERED; "
	ktap_print_msg "$l/$impl: $got; offered $OFFERED, root sent $(field 1: 6) dropped $(field 1: 7)"
	[ -z "$bad" ] || ktap_print_msg "$l/$impl: $bad"
	check "$l/$impl: parent and fq agree after burst, change limit, drain, delete; every packet accounted" \
		test -z "$bad"
	res[$l/$impl]=$got
	tc qdisc del dev $DEV root 2>/dev/null
}

# Every layout on C's fq, then on Rust's: one module switch.
declare -A res
for impl in c rust; do
	if [ "$impl" = c ]; then fq_use_c; else fq_use_rust; fi
	for l in $LAYOUTS; do
		run "$l" $impl
	done
done
for l in $LAYOUTS; do
	expect_eq "$l: Rust fq's counts under the parent are C's" "${res[$l/c]}" "${res[$l/rust]}"
done
ktap_finished
