#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Differential oracle: the same seeded pseudo-random script of operations
# (enqueue from orphan hashes and TCP/UDP kernel sockets, dequeue runs,
# change of the attributes under backlog, reset; see fq_oracle.c) is played
# on C sch_fq and on Rust sch_fq_rs, one after the other in this VM, and
# everything observable is compared: each dequeued and dropped skb (with
# its drop reason), the qdisc's counters, tc_fq_qd_stats, the options
# dump, each change's errno, after every operation, folded into one hash
# per seed.
#
# Only time-independent behaviour is scripted, so that the two runs must
# agree although they run at different times and speeds (fq_oracle.c says
# exactly what is left out and why): no pacing rates (maxrate unlimited,
# sockets' pacing rates unset), no EDT tstamp that becomes due during the
# run (tstamps 0, past, now, or 100 s and more ahead; horizons 0 or 1000 s
# and more), flow_refill_delay 100 s and more, no gc (each seed runs in
# under 3 s, checked), ce_threshold 100 s and more; time_next_delayed_flow
# and unthrottle_latency_ns are not compared.
#
# ORACLE_SEEDS seeds (default 40) from ORACLE_SEED (default 1), of
# ORACLE_OPS operations each (default 1000), in batches of ORACLE_BATCH
# seeds per module load (default 100). make oracle runs 1000 x 1000.
# On a divergence it prints the seed, the shortest prefix of operations
# that diverges (ops=K, found from the per-operation hashes of a verbose
# run and confirmed by runs of K and K-1 operations) and both observation
# streams around it. A self-check perturbs one observation of the Rust run
# and must see it reported at exactly that operation.

. "$(dirname "$0")/lib.sh"
DEV=fqo0
DBG=/sys/kernel/debug/fq_oracle/report
SEEDS=${ORACLE_SEEDS:-40}
OPS=${ORACLE_OPS:-1000}
SEED0=${ORACLE_SEED:-1}
BATCH=${ORACLE_BATCH:-100}
TMP=$(mktemp -d /tmp/fq_oracle.XXXXXX)

cleanup() {
	rmmod fq_oracle 2>/dev/null
	ip link del $DEV 2>/dev/null
	fq_unload_all
	rm -rf "$TMP"
}
trap cleanup EXIT

# use_impl IMPL: IMPL's fq (c or rust) as the root of a fresh down dummy
# device, unless it is so already (switching costs seconds in the VM).
CUR=
use_impl() {
	[ "$CUR" = "$1" ] && return 0
	CUR=
	ip link del $DEV 2>/dev/null
	if [ "$1" = c ]; then fq_use_c; else fq_use_rust; fi
	ip link add $DEV type dummy || return 1
	tc qdisc add dev $DEV root fq || return 1
	CUR=$1
}

# oracle IMPL OUT PARAM...: run the module once on IMPL's fq and append
# its report to OUT; fails with the module's error.
oracle() {
	local impl=$1 out=$2
	shift 2
	use_impl "$impl" || return 1
	# From the module directory of the running kernel, as every test
	# module (a build for another kernel may sit in the source tree).
	if ! modprobe fq_oracle dev=$DEV "$@"; then
		dmesg | grep 'fq_oracle' | tail -5 | sed 's/^/# /'
		return 1
	fi
	cat $DBG >>"$out"
	rmmod fq_oracle
}

# run_all IMPL OUT EXTRA...: every seed, in batches.
run_all() {
	local impl=$1 out=$2 s n
	shift 2
	: >"$out"
	for ((s = SEED0; s < SEED0 + SEEDS; s += BATCH)); do
		n=$((SEED0 + SEEDS - s < BATCH ? SEED0 + SEEDS - s : BATCH))
		oracle "$impl" "$out" seed=$s seeds=$n ops=$OPS "$@" || return 1
	done
}

# hashes FILE: "SEED HASH ENQ DROPS" a line.
hashes() {
	awk '$1 == "seed" && $5 == "hash" {print $2, $6, $8, $10}' "$1"
}

# healthy FILE: every seed ran, in time, and nothing leaked.
healthy() {
	local bad
	bad=$(awk '$1 == "seed" && ($5 != "hash" || $12 != 0 || $15 == "slow")' "$1")
	[ -z "$bad" ] && [ "$(hashes "$1" | wc -l)" = "$SEEDS" ] && return 0
	ktap_print_msg "unhealthy seeds: $(head -3 <<<"$bad" | tr '\n' ';')"
	return 1
}

# first_divergence C_FILE RUST_FILE: the first seed whose lines differ.
first_divergence() {
	join <(hashes "$1") <(hashes "$2") | awk '$2 != $5 || $3 != $6 || $4 != $7 {print $1; exit}'
}

# Module parameters of both runs while diagnosing (partial=1).
BOTH=()

# hash_at IMPL SEED K EXTRA...: HASH_AT, the hash of the first K
# operations (not in a subshell: use_impl's CUR must stay right).
hash_at() {
	local impl=$1 s=$2 k=$3 f=$TMP/at
	shift 3
	: >"$f"
	HASH_AT=
	oracle "$impl" "$f" seed="$s" seeds=1 ops="$k" "${BOTH[@]}" "$@" >&2 || return 1
	HASH_AT=$(hashes "$f" | awk '{print $2}')
}

# diagnose SEED RUST_EXTRA...: print the shortest prefix K of SEED's
# operations that diverges and the two streams around it, with BOTH's
# parameters for both runs and RUST_EXTRA for Rust's; sets PREFIX.
diagnose() {
	local s=$1 k lo
	shift
	PREFIX=
	: >"$TMP/v.c"
	: >"$TMP/v.rust"
	oracle c "$TMP/v.c" seed="$s" seeds=1 ops="$OPS" verbose=1 "${BOTH[@]}" || return 1
	oracle rust "$TMP/v.rust" seed="$s" seeds=1 ops="$OPS" verbose=1 "${BOTH[@]}" "$@" || return 1
	# Each operation ends with "K = HASH", the hash of the first K.
	k=$(join <(awk '$2 == "=" {print $1, $3}' "$TMP/v.c") \
		<(awk '$2 == "=" {print $1, $3}' "$TMP/v.rust") |
		awk '$2 != $3 {print $1; exit}')
	if [ -z "$k" ]; then
		ktap_print_msg "seed $s: the verbose runs agree (the divergence is not reproducible)"
		return 1
	fi
	# Confirm: K operations diverge, K - 1 do not (Rust's runs first: the
	# verbose runs left it loaded).
	local r1 r0=x c1 c0=y
	hash_at rust "$s" "$k" "$@" && r1=$HASH_AT
	[ "$k" -gt 1 ] && hash_at rust "$s" $((k - 1)) "$@" && r0=$HASH_AT
	hash_at c "$s" "$k" && c1=$HASH_AT
	[ "$k" -gt 1 ] && hash_at c "$s" $((k - 1)) && c0=$HASH_AT
	if [ -z "$c1" ] || [ "$c1" = "$r1" ]; then
		ktap_print_msg "seed $s: ops=$k does not diverge on its own"
		return 1
	fi
	if [ "$k" -gt 1 ] && [ "$c0" != "$r0" ]; then
		ktap_print_msg "seed $s: ops=$((k - 1)) diverges too"
		return 1
	fi
	PREFIX=$k
	lo=$((k > 3 ? k - 3 : 0))
	ktap_print_msg "DIVERGENCE: seed $s, shortest prefix ops=$k" \
		"(reproduce: insmod fq_oracle.ko seed=$s seeds=1 ops=$k verbose=1 ${BOTH[*]} $*)"
	for impl in c rust; do
		ktap_print_msg "--- $impl, operations $lo..$k:"
		awk -v lo=$lo -v k="$k" '$1 ~ /^[0-9]+$/ && $1 >= lo && $1 <= k' "$TMP/v.$impl" |
			tail -60 | sed 's/^/#   /'
	done
	diff <(awk -v k="$k" '$1 == k' "$TMP/v.c") <(awk -v k="$k" '$1 == k' "$TMP/v.rust") |
		sed 's/^/#   diff: /'
	return 0
}

# known_partial K: operation K of the last diagnosis is a change that
# failed on an invalid value (kind 1 or 2) with the same errno in both.
known_partial() {
	local c r
	c=$(awk -v k="$1" '$1 == k && $2 == "c"' "$TMP/v.c")
	r=$(awk -v k="$1" '$1 == k && $2 == "c"' "$TMP/v.rust")
	[ -n "$c" ] && [ "$c" = "$r" ] && [[ "$c" =~ kind\ [12]\ err\ -[0-9]+$ ]]
}

ktap_print_header
ktap_set_plan 8
fq_unload_all
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
ip link del $DEV 2>/dev/null

# A seed must finish within fq's gc age (3 s), or gc could step in and
# the time a seed took would decide what C and Rust see. On a kernel too
# slow for $OPS operations in that time (KASAN, whose instrumentation
# slows the Rust fq more than C's), every seed runs again, on both, with
# half the operations, down to 125: what the kernel managed decides the
# size of the scripts, not a speed assumed for it.
slow_seeds() { awk '$1 == "seed" && $15 == "slow"' "$1" | grep -q .; }
while :; do
	ktap_print_msg "$SEEDS seeds from $SEED0, $OPS operations each, per implementation"
	for impl in c rust; do
		t0=$SECONDS
		run_all $impl "$TMP/$impl"
		ktap_print_msg "$impl: $(hashes "$TMP/$impl" | wc -l) seeds in $((SECONDS - t0)) s" \
			"$(awk '$5 == "hash" {e += $8; d += $10; ms += $14} END {print "(" ms / 1000 " s in the module), " e + 0 " skbs enqueued, " d + 0 " dropped"}' "$TMP/$impl")"
	done
	{ slow_seeds "$TMP/c" || slow_seeds "$TMP/rust"; } && [ "$OPS" -gt 125 ] || break
	OPS=$((OPS / 2))
	ktap_print_msg "a seed took longer than fq's gc age (3 s): all again with $OPS operations a seed"
done
for impl in c rust; do
	check "$impl fq: every seed ran to the end, in time, nothing leaked" healthy "$TMP/$impl"
done

bad=$(first_divergence "$TMP/c" "$TMP/rust")
n=$(join <(hashes "$TMP/c") <(hashes "$TMP/rust") | awk '$2 != $5 || $3 != $6 || $4 != $7' | wc -l)
if [ -z "$bad" ] && [ "$(hashes "$TMP/c" | wc -l)" = "$SEEDS" ]; then
	ktap_test_pass "C and Rust fq observe the same on $SEEDS seeds x $OPS operations"
else
	ktap_print_msg "$n of $SEEDS seeds diverge; the first:"
	[ -n "$bad" ] && diagnose "$bad"
	ktap_test_fail "C and Rust fq observe the same on $SEEDS seeds x $OPS operations"
fi

# Self-check: one observation of the Rust run perturbed at operation 123
# of seed 7 (of 300) must be reported at exactly that prefix.
SELF_OPS=300
OPS=$SELF_OPS diagnose 7 perturb=123 >"$TMP/self.log"
cat "$TMP/self.log"
expect_eq "self-check: a perturbation at operation 123 is found as the shortest prefix" \
	123 "$(sed -n 's/.*DIVERGENCE: seed 7, shortest prefix ops=\([0-9]*\).*/\1/p' "$TMP/self.log")"

# One flow fed OOO skbs out of time order (issue #13's test 3): each
# implementation dequeues all of them in time order, and both give the
# same sequence. The enqueue cost of the first and last tenth is printed,
# not judged here.
OOO=${ORACLE_OOO:-100000}
for impl in c rust; do
	: >"$TMP/ooo.$impl"
	oracle $impl "$TMP/ooo.$impl" ooo=$OOO
	while read -r l; do ktap_print_msg "$impl: $l"; done <"$TMP/ooo.$impl"
	check "$impl fq: one flow of $OOO out-of-order skbs, twice, all dequeued in time order" \
		test "$(awk -v n=$OOO '$1 == "ooo" && $4 == n && $6 == n && $8 == 0 && $10 == 0' "$TMP/ooo.$impl" | wc -l)" = 2
done
expect_eq "C and Rust fq dequeue the out-of-order flow in the same order" \
	"$(awk '{print $2, $12}' "$TMP/ooo.c")" "$(awk '{print $2, $12}' "$TMP/ooo.rust")"

# With partial=1, changes that carry an invalid value among valid ones,
# or more packets queued than the limit (see fq_oracle.c).
PSEEDS=3
POPS=500
: >"$TMP/pc"
: >"$TMP/pr"
oracle c "$TMP/pc" seed=1 seeds=$PSEEDS ops=$POPS partial=1 &&
	oracle rust "$TMP/pr" seed=1 seeds=$PSEEDS ops=$POPS partial=1
bad=$(first_divergence "$TMP/pc" "$TMP/pr")
n=$(join <(hashes "$TMP/pc") <(hashes "$TMP/pr") | awk '$2 != $5 || $3 != $6 || $4 != $7' | wc -l)
desc="partial=1: C and Rust agree on changes that fail halfway ($PSEEDS seeds x $POPS operations)"
if [ -z "$bad" ] && [ "$(hashes "$TMP/pc" | wc -l)" = "$PSEEDS" ]; then
	ktap_test_pass "$desc"
else
	ktap_print_msg "$n of $PSEEDS seeds diverge; the first:"
	BOTH=(partial=1) OPS=$POPS
	if [ -n "$bad" ] && diagnose "$bad" && known_partial "$PREFIX"; then
		# Known: C's fq_change() applies the valid attributes of a
		# change that fails on a value (and drops to the limit);
		# sch_fq_rs applies none. Any other divergence fails.
		ktap_test_skip "$desc: known divergence, C applies part of a failing change, Rust none"
	else
		ktap_test_fail "$desc"
	fi
fi
ktap_finished
