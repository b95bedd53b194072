#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Who may flip rsnet's kernel-wide knobs and set up fq, tried as each
# caller, not as full root: root without CAP_SYS_ADMIN, a process with only
# CAP_NET_ADMIN, an unprivileged user, and root of a user namespace in a
# network namespace of its own (made by root, and by a user). Each answer
# must be C's:
#  - net.ipv4.tcp_tx_skb_cache: 5.2-5.15's proc_do_static_key() (write
#    needs CAP_SYS_ADMIN; the file is init_net's, so absent in another
#    netns), a read shows the key;
#  - rsnet/sample/*: kernel-wide knobs, as C's
#    proc_dointvec_minmax_sysadmin() ones (CAP_SYS_ADMIN to write);
#  - tc qdisc add ... fq: the same for C's sch_fq and the Rust fq
#    (CAP_NET_ADMIN over the device's netns, also in a user namespace).
# After every refusal the value must be the one before.

. "$(dirname "$0")/lib.sh"
TCP=/proc/sys/net/ipv4/tcp_tx_skb_cache
SAMPLE=/proc/sys/rsnet/sample/value
DEV=prv0
NOBODY=65534
CALLERS="root nosysadmin netadmin user userns userns_user"

cleanup() {
	ip link del $DEV 2>/dev/null
	echo 0 >$TCP 2>/dev/null
	modprobe -r tcp_tx_skb_cache rust_sysctl 2>/dev/null
	fq_unload_all
}
trap cleanup EXIT

# as CALLER CMD...: run CMD as CALLER (see the header).
as() {
	local who=$1
	shift
	case $who in
	root) "$@" ;;
	nosysadmin) setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin -- "$@" ;;
	netadmin) setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups \
		--inh-caps=-all,+net_admin --ambient-caps=+net_admin -- "$@" ;;
	user) setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups --inh-caps=-all -- "$@" ;;
	userns) unshare -Urn -- "$@" ;;
	userns_user) setpriv --reuid=$NOBODY --regid=$NOBODY --clear-groups --inh-caps=-all -- \
		unshare -Urn -- "$@" ;;
	esac
}

# write_as CALLER FILE VALUE: the errno name of one write(2) of VALUE to
# FILE by CALLER (OK on success).
write_as() {
	as "$1" python3 -S -c '
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    try:
        os.write(fd, sys.argv[2].encode())
    finally:
        os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
' "$2" "$3"
}

# fq_as CALLER: CALLER adds fq as the root of a dummy device: $DEV in the
# initial netns, or one of its own in a user namespace's netns. Prints OK,
# or the errno tc reports.
fq_as() {
	local out
	case $1 in
	userns*) out=$(as "$1" sh -c 'ip link add d0 type dummy && tc qdisc add dev d0 root fq limit 77 &&
		tc qdisc show dev d0' 2>&1) ;;
	*) out=$(as "$1" tc qdisc add dev $DEV root fq limit 77 2>&1 && tc qdisc show dev $DEV) ;;
	esac
	if grep -q "fq .*limit 77p" <<<"$out"; then
		echo OK
	elif grep -q "not permitted" <<<"$out"; then
		echo EPERM
	else
		echo "ERR($(tr '\n' ' ' <<<"$out"))"
	fi
	tc qdisc del dev $DEV root 2>/dev/null
}

ktap_print_header
ktap_set_plan 9
fq_unload_all
modprobe tcp_tx_skb_cache && modprobe rust_sysctl ||
	ktap_exit_fail_msg "the modules do not load"
ip link add $DEV type dummy

# capeff CALLER: CALLER's effective capabilities, as /proc shows them.
capeff() { as "$1" awk '/^CapEff:/ {print $2}' /proc/self/status; }
# has CALLER CAP: 0 if CALLER has capability number CAP in effect.
has() { local e; e=$(capeff "$1"); [ $((0x$e >> $2 & 1)) = 1 ]; }
SYS_ADMIN=21
NET_ADMIN=12
callers_ok() {
	has root $SYS_ADMIN && has nosysadmin $NET_ADMIN && ! has nosysadmin $SYS_ADMIN &&
		has netadmin $NET_ADMIN && ! has netadmin $SYS_ADMIN && ! has user $NET_ADMIN &&
		[ "$(as user id -u)" = $NOBODY ] && [ "$(as userns id -u)" = 0 ] &&
		[ "$(as userns_user id -u)" = 0 ]
}
check "the callers are what they claim (CapEff, uid)" callers_ok

# The knobs: each caller writes the value that is not there, and after a
# refusal the value read by root is what it was. Expected, C's answers.
declare -A want=(
	[tcp.root]=OK [tcp.nosysadmin]=EPERM [tcp.netadmin]=EPERM [tcp.user]=EACCES
	[tcp.userns]=ENOENT [tcp.userns_user]=ENOENT
	[sample.root]=OK [sample.nosysadmin]=EPERM [sample.netadmin]=EACCES [sample.user]=EACCES
	[sample.userns]=EPERM [sample.userns_user]=EACCES
)
declare -A file=([tcp]=$TCP [sample]=$SAMPLE)
for knob in tcp sample; do
	f=${file[$knob]}
	bad=
	table=
	for who in $CALLERS; do
		before=$(cat "$f")
		case $knob in
		sample) new=$((before + 2)) ;;
		*) new=$((1 - before)) ;;
		esac
		got=$(write_as $who "$f" $new)
		after=$(cat "$f")
		table+=" $who=$got"
		[ "$got" = "${want[$knob.$who]}" ] || bad+=" $who: $got, C: ${want[$knob.$who]};"
		if [ "$got" = OK ]; then
			[ "$after" = "$new" ] || bad+=" $who: accepted, value $after not $new;"
			echo "$before" >"$f"
		elif [ "$after" != "$before" ]; then
			bad+=" $who: refused, value changed $before -> $after;"
		fi
	done
	ktap_print_msg "write $f:$table"
	expect_eq "$f: each caller gets C's answer, a refusal changes nothing" "" "$bad"
done

# Reads need no privilege.
echo 1 >$TCP
expect_eq "an unprivileged user reads tcp_tx_skb_cache (1 while it is on)" \
	1 "$(as user cat $TCP 2>&1)"
echo 0 >$TCP
check "root of a user namespace does not see tcp_tx_skb_cache (the initial netns's)" \
	as userns test ! -e $TCP

# fq: what each caller may do is the same for C's fq and the Rust fq.
declare -A res
declare -A fq=(
	[root]=OK [nosysadmin]=OK [netadmin]=OK [user]=EPERM [userns]=OK [userns_user]=OK
)
for impl in c rust; do
	if [ $impl = c ]; then fq_use_c; else fq_use_rust; fi
	res[$impl]=
	for who in $CALLERS; do
		res[$impl]+=" $who=$(fq_as $who)"
	done
	ktap_print_msg "tc qdisc add ... fq ($impl):${res[$impl]}"
	expect_eq "$impl fq: each caller may add fq as C allows" \
		"$(for who in $CALLERS; do printf ' %s=%s' $who "${fq[$who]}"; done)" "${res[$impl]}"
done
expect_eq "the Rust fq answers every caller as C's sch_fq" "${res[c]}" "${res[rust]}"
check "after the callers, no fq is left on $DEV" test -z "$(tc qdisc show dev $DEV | grep fq)"
ktap_finished
