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
# send MS: one datagram a socket, departing MS ms from now. udp_many
# answers "sent COUNT in ...": COUNT is the line's second word. $n, not n,
# in the sum: no answer is an arithmetic error, not 0.
send() {
	local n
	echo "send $1" >&9
	read -r -t 60 _ n _ <&8 || n=
	OFFERED=$((OFFERED + $n))
}

FQ="fq limit 1000 horizon 600s"
# layout L: the parent(s) of L on $DEV with an fq leaf 10:; LEAF is where
# it hangs, CLASS the class a step may delete (none for tbf and ets). One
# tc for all the commands (tc -b: it stops at the first that fails, and
# says which, "Command failed -:LINE"); LEAF and CLASS are set once the
# parent's commands went through, the fq's or not, as they were when each
# command was a tc of its own.
layout() {
	local leaf class="" text line rc=0 failed=0
	local -a cmd
	CLASS=
	case $1 in
	htb)
		cmd=("qdisc add dev $DEV root handle 1: htb default 1"
			"class add dev $DEV parent 1: classid 1:1 htb rate $RATE burst 1600 quantum 1514")
		leaf=1:1 class=1:1 ;;
	hfsc)
		cmd=("qdisc add dev $DEV root handle 1: hfsc default 1"
			"class add dev $DEV parent 1: classid 1:1 hfsc sc rate $RATE ul rate $RATE")
		leaf=1:1 class=1:1 ;;
	tbf)
		cmd=("qdisc add dev $DEV root handle 1: tbf rate $RATE burst 1600 limit 1000000")
		leaf=1:1 ;;
	tbf_drr)
		cmd=("qdisc add dev $DEV root handle 1: tbf rate $RATE burst 1600 limit 1000000"
			"qdisc add dev $DEV parent 1:1 handle 2: drr"
			"class add dev $DEV parent 2: classid 2:1 drr"
			"filter add dev $DEV parent 2: matchall classid 2:1")
		leaf=2:1 class=2:1 ;;
	tbf_ets)
		cmd=("qdisc add dev $DEV root handle 1: tbf rate $RATE burst 1600 limit 1000000"
			"qdisc add dev $DEV parent 1:1 handle 2: ets bands 1")
		leaf=2:1 ;;
	esac
	cmd+=("qdisc replace dev $DEV parent $leaf handle 10: $FQ")
	printf -v text '%s\n' "${cmd[@]}"
	tc -b - <<<"$text" 2>"$TMP/tc.err" || rc=$?
	# What each tc would have said, and which line failed.
	while IFS= read -r line; do
		if [[ $line =~ ^Command\ failed\ -:([0-9]+)$ ]]; then
			failed=${BASH_REMATCH[1]}
		else
			printf '%s\n' "$line" >&2
		fi
	done <"$TMP/tc.err"
	# The fq's command is the last: it failed, or none did.
	if [ $rc = 0 ] || [ "$failed" -ge ${#cmd[@]} ]; then
		LEAF=$leaf CLASS=$class
	fi
	return $rc
}

# snap: the qdiscs of $DEV, one dump read by one awk (a fork and exec
# costs the emulated guest about 0.1 s), as the tree
#	handle parent kind qlen backlog packets drops
# one line a qdisc, backlog as tc prints it (sprint_size(): 13144b, 12Kb).
# QLEN, BACKLOG, SENT and DROPS hold its columns 4 to 7 by handle (one a
# line, if the handle has more than one line); DIFF is nothing if each
# classful qdisc's qlen and backlog are the sum of its children's, else
# what differs. The awk sees the tree as it would a file of it: each line
# read back into $0, its fields compared as input is.
declare -A QLEN BACKLOG SENT DROPS
DIFF=
snap() {
	QLEN=() BACKLOG=() SENT=() DROPS=() DIFF=
	tc -s qdisc show dev $DEV | awk -v qt="'" '
		# S quoted for the shell
		function word(s) {
			gsub(qt, qt "\"" qt "\"" qt, s)
			return qt s qt
		}
		# S without the newlines that end it, as $(...) gives it
		function trim(s) {
			sub(/\n+$/, "", s)
			return s
		}
		# A[KEY]=V, A one of the shell arrays
		function put(a, key, v) {
			printf "%s[%s]=%s\n", a, word(key), word(trim(v))
		}
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
		# the line of the tree of the qdisc read so far
		function row() {
			if (th != "") tree[++rows] = th " " tp " " tk " " tq " " tb " " tn " " td
		}
		$1 == "qdisc" {
			row()
			tk = $2; th = $3; tp = ($4 == "root") ? "root" : $5
		}
		$1 == "Sent" {tn = $4; td = $7; sub(",", "", td)}
		$1 == "backlog" {tb = $2; tq = $3; sub("p", "", tq)}
		END {
			row()
			for (i = 1; i <= rows; i++) {
				$0 = tree[i]
				q[$1] = $4; b[$1] = $5; k[$1] = $3; p[$1] = $2
				if ($1 in c4) {
					c4[$1] = c4[$1] "\n" $4; c5[$1] = c5[$1] "\n" $5
					c6[$1] = c6[$1] "\n" $6; c7[$1] = c7[$1] "\n" $7
				} else {
					c4[$1] = $4; c5[$1] = $5; c6[$1] = $6; c7[$1] = $7
				}
			}
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
					diff = diff sprintf("%s %s qlen %d backlog %s, children %d %s; ", k[h], h, q[h], b[h], sq, size(sb))
			}
			for (h in c4) {
				put("QLEN", h, c4[h]); put("BACKLOG", h, c5[h])
				put("SENT", h, c6[h]); put("DROPS", h, c7[h])
			}
			print "DIFF=" word(trim(diff))
		}' >"$TMP/snap"
	# shellcheck source=/dev/null
	. "$TMP/snap"
}
# consistent STEP: CONS is nothing if each classful qdisc's qlen and
# backlog are the sum of its children's (snap's DIFF), else what differs,
# each line led by "STEP: ". The dump reads the qdiscs one after the other
# while the parent sends, so a mismatch is read again.
consistent() {
	local try
	CONS=
	for ((try = 1; try <= 5; try++)); do
		snap
		[ -z "$DIFF" ] && return 0
	done
	CONS="$1: ${DIFF//$'\n'/$'\n'"$1: "}"
}
# drain: wait until the root holds only the N held packets.
drain() {
	local end=$((SECONDS + 30))
	while [ $SECONDS -lt $end ]; do
		snap
		[ "${QLEN[1:]}" -le $N ] 2>/dev/null && return 0
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
	consistent burst
	bad+=$CONS
	tc qdisc change dev $DEV parent $LEAF handle 10: fq limit 60 || bad+="change; "
	consistent change
	bad+=$CONS
	# The parent sends meanwhile: at most, not exactly, the limit.
	if [ "${QLEN[10:]}" -le 60 ] 2>/dev/null; then
		got+="fq qlen after change <= 60: yes"
	else
		got+="fq qlen after change <= 60: no (${QLEN[10:]})"
	fi
	drain || bad+="drain timed out; "
	consistent drain
	bad+=$CONS
	got+=", held after drain ${QLEN[10:]}"
	tc qdisc del dev $DEV parent $LEAF handle 10: || bad+="delete; "
	consistent delete
	bad+=$CONS
	snap
	got+=", root after delete ${QLEN[1:]}/${BACKLOG[1:]}"
	if [ -n "$CLASS" ]; then
		tc qdisc replace dev $DEV parent $LEAF handle 10: $FQ || bad+="re-add; "
		send 0
		send 300000
		[ "$l" = tbf_drr ] && tc filter del dev $DEV parent 2:
		tc class del dev $DEV classid $CLASS || bad+="class delete; "
		consistent class
		bad+=$CONS
		snap
		got+=", root after class delete ${QLEN[1:]}/${BACKLOG[1:]}"
	fi
	# Everything offered: sent, dropped or still queued at the root.
	snap
	local acc=$((${SENT[1:]} + ${DROPS[1:]} + ${QLEN[1:]}))
	[ "$acc" = "$OFFERED" ] ||
		bad+="root sent ${SENT[1:]} + dropped ${DROPS[1:]} + queued ${QLEN[1:]} != offered $OFFERED; "
	ktap_print_msg "$l/$impl: $got; offered $OFFERED, root sent ${SENT[1:]} dropped ${DROPS[1:]}"
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
