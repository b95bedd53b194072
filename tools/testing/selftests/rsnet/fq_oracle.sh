#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Differential oracle in virtual time: the same seeded pseudo-random script
# of operations (enqueue from orphan hashes and TCP/UDP kernel sockets with
# pacing rates and EDT timestamps, dequeue runs, time advancing 1 ns to
# 10 s with the watchdog firing on the way, change of the attributes under
# backlog, reset; see fq_oracle.c) is played on the oracle-only builds of
# C's net/sched/sch_fq.c (sch_fq_vt) and of sch_fq_rs.rs (sch_fq_rs_vt),
# whose clock and watchdog are fq_vclock's (tools/rsnet/vclock.sh), and
# everything observable is compared after every operation, folded into one
# hash per seed: each dequeued skb with its dequeue time and ECN field,
# each drop and its reason, each watchdog request and firing, the
# counters, tc_fq_qd_stats (time_next_delayed_flow and
# unthrottle_latency_ns included), the options dump, each change's errno.
#
# ORACLE_SEEDS seeds (default 60) from ORACLE_SEED (default 1), of
# ORACLE_OPS operations each (default 1000), in batches of ORACLE_BATCH
# seeds per module load (default 100). make oracle runs 1000 x 1000.
# On a divergence it prints the seed, the shortest prefix of operations
# that diverges (ops=K, found from the per-operation hashes of a verbose
# run and confirmed by runs of K and K-1 operations) and both observation
# streams around it (whether the oracle notices a wrong fq at all is what
# fq_mutants.sh shows). ORACLE_SLACK_MS
# (default 100) is the length in virtual ms of the timer_slack experiment
# (1,000 paced flows at 1M packets/s in all; make oracle runs 10,000).

. "$(dirname "$0")/lib.sh"
DEV=fqo0
DBG=/sys/kernel/debug/fq_oracle/report
SEEDS=${ORACLE_SEEDS:-60}
OPS=${ORACLE_OPS:-1000}
SEED0=${ORACLE_SEED:-1}
BATCH=${ORACLE_BATCH:-100}
SLACK_MS=${ORACLE_SLACK_MS:-100}
TMP=$(mktemp -d /tmp/fq_oracle.XXXXXX)

cleanup() {
	rmmod fq_oracle 2>/dev/null
	ip link del $DEV 2>/dev/null
	modprobe -r sch_fq_vt sch_fq_rs_vt fq_vclock 2>/dev/null
	failslab_task off
	rm -rf "$TMP"
}
trap cleanup EXIT

# oracle IMPL OUT PARAM...: run the module once on IMPL's fq (c or rust)
# and append its report to OUT; fails with the module's error.
oracle() {
	local impl=$1 out=$2
	shift 2
	# From the module directory of the running kernel, as every test
	# module (a build for another kernel may sit in the source tree).
	if ! modprobe fq_oracle impl="$impl" dev=$DEV "$@"; then
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

# healthy FILE: every seed ran and nothing leaked.
healthy() {
	local bad
	bad=$(awk '$1 == "seed" && ($5 != "hash" || $12 != 0)' "$1")
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
# operations.
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
# parameters for both runs and RUST_EXTRA for Rust's; sets PREFIX. With
# VERBOSE_C and VERBOSE_RUST, the verbose reports of a run of several
# seeds that holds SEED, its streams are taken from those (the same
# streams a run of SEED alone writes: each seed starts from nothing)
# instead of being made again.
diagnose() {
	local s=$1 k lo
	shift
	PREFIX=
	: >"$TMP/v.c"
	: >"$TMP/v.rust"
	if [ -n "${VERBOSE_C:-}" ]; then
		seed_stream "$VERBOSE_C" "$s" >"$TMP/v.c"
		seed_stream "$VERBOSE_RUST" "$s" >"$TMP/v.rust"
	else
		oracle c "$TMP/v.c" seed="$s" seeds=1 ops="$OPS" verbose=1 "${BOTH[@]}" || return 1
		oracle rust "$TMP/v.rust" seed="$s" seeds=1 ops="$OPS" verbose=1 "${BOTH[@]}" "$@" || return 1
	fi
	# Each operation ends with "K = HASH", the hash of the first K.
	k=$(join <(awk '$2 == "=" {print $1, $3}' "$TMP/v.c") \
		<(awk '$2 == "=" {print $1, $3}' "$TMP/v.rust") |
		awk '$2 != $3 {print $1; exit}')
	if [ -z "$k" ]; then
		ktap_print_msg "seed $s: the verbose runs agree (the divergence is not reproducible)"
		return 1
	fi
	# Confirm: K operations diverge, K - 1 do not (CONFIRM=0: not
	# confirmed, the verbose streams' first difference is taken).
	local r1 r0=x c1 c0=y
	if [ "${CONFIRM:-1}" = 0 ]; then
		r1=y c1=x r0=z c0=z
	else
		hash_at rust "$s" "$k" "$@" && r1=$HASH_AT
		[ "$k" -gt 1 ] && hash_at rust "$s" $((k - 1)) "$@" && r0=$HASH_AT
		hash_at c "$s" "$k" && c1=$HASH_AT
		[ "$k" -gt 1 ] && hash_at c "$s" $((k - 1)) && c0=$HASH_AT
	fi
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
		"(reproduce: modprobe fq_oracle impl=c|rust dev=$DEV seed=$s seeds=1 ops=$k verbose=1 ${BOTH[*]} $*)"
	for impl in c rust; do
		ktap_print_msg "--- $impl, operations $lo..$k:"
		awk -v lo=$lo -v k="$k" '$1 ~ /^[0-9]+$/ && $1 >= lo && $1 <= k' "$TMP/v.$impl" |
			tail -60 | sed 's/^/#   /'
	done
	diff <(awk -v k="$k" '$1 == k' "$TMP/v.c") <(awk -v k="$k" '$1 == k' "$TMP/v.rust") |
		sed 's/^/#   diff: /'
	return 0
}

# seed_stream REPORT SEED: SEED's part of a verbose report of several
# seeds, from its "# seed SEED" line to the next seed's.
seed_stream() {
	awk -v s="$2" '$1 == "#" && $2 == "seed" {on = ($3 == s)} on' "$1"
}

# known_partial K: operation K of the last diagnosis is a change that
# failed on an invalid value (kind 1 or 2) with the same errno in both,
# and Rust applied nothing of it: its options, counters, timer and fq
# statistics after K are those before K, and it freed no packet. (C
# applied the valid attributes: what differs in C is what that explains.)
known_partial() {
	local c r tag
	c=$(awk -v k="$1" '$1 == k && $2 == "c"' "$TMP/v.c")
	r=$(awk -v k="$1" '$1 == k && $2 == "c"' "$TMP/v.rust")
	[ -n "$c" ] && [ "$c" = "$r" ] &&
		[[ "$c" =~ kind\ [12]\ err\ -[0-9]+\ freed\ under\ RTNL\ 0$ ]] || return 1
	if [ -n "$(awk -v k="$1" '$1 == k && $2 == "C"' "$TMP/v.rust")" ]; then
		ktap_print_msg "partial: Rust freed packets in the refused change at operation $1"
		return 1
	fi
	for tag in o q t x; do
		if [ "$(last_before "$TMP/v.rust" "$1" $tag)" != "$(last_before "$TMP/v.rust" $(($1 + 1)) $tag)" ]; then
			ktap_print_msg "partial: Rust's '$tag' changed in the refused change at operation $1"
			return 1
		fi
	done
}
# last_before FILE K TAG: the last observation TAG before operation K,
# without its operation number.
last_before() {
	awk -v k="$2" -v t="$3" '$1 ~ /^[0-9]+$/ && $1 < k && $2 == t {l = $0} END {sub(/^[0-9]+ /, "", l); print l}' "$1"
}

# known_shared K: operation K of the last diagnosis differs only in that
# C dequeued skbs marked CE that Rust left ECN-capable (a shared skb);
# both counted them in ce_mark, as C counts every packet past the
# threshold.
op_lines() {
	awk -v k="$2" '$1 == k && $2 != "="' "$1"
}
known_shared() {
	local strip='s/ ecn [0-9]+//; s/ ce [0-9]+//' marked cd rd
	[ "$(op_lines "$TMP/v.c" "$1" | sed -E "$strip")" = \
		"$(op_lines "$TMP/v.rust" "$1" | sed -E "$strip")" ] || return 1
	marked=$(paste -d' ' <(op_lines "$TMP/v.c" "$1") <(op_lines "$TMP/v.rust" "$1") |
		awk '$2 == "D" {n = NF / 2; if ($(n) != $(NF)) { if ($(n) == 3 && ($(NF) == 1 || $(NF) == 2)) m++; else bad = 1 } }
		     END {print bad ? -1 : m + 0}')
	cd=$(op_lines "$TMP/v.c" "$1" | awk '$2 == "x" {for (i = 3; i < NF; i++) if ($i == "ce") print $(i + 1)}')
	rd=$(op_lines "$TMP/v.rust" "$1" | awk '$2 == "x" {for (i = 3; i < NF; i++) if ($i == "ce") print $(i + 1)}')
	ktap_print_msg "shared skbs marked CE by C alone at operation $1: $marked; ce_mark C $cd, Rust $rd"
	[ "$marked" -gt 0 ] && [ -n "$cd" ] && [ "$cd" = "$rd" ]
}

ktap_print_header
ktap_set_plan 18
fq_unload_all
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
ip link del $DEV 2>/dev/null
ip link add $DEV type dummy
modprobe fq_vclock && modprobe sch_fq_vt && modprobe sch_fq_rs_vt ||
	ktap_exit_fail_msg "the oracle's modules do not load"

ktap_print_msg "$SEEDS seeds from $SEED0, $OPS operations each, per implementation"
for impl in c rust; do
	t0=$SECONDS
	run_all $impl "$TMP/$impl"
	ktap_print_msg "$impl: $(hashes "$TMP/$impl" | wc -l) seeds in $((SECONDS - t0)) s" \
		"$(awk '$5 == "hash" {e += $8; d += $10; f += $16; a += $18; p += $20} END {print e + 0 " skbs enqueued, " d + 0 " dropped, " a + 0 " clock advances, " f + 0 " watchdog firings, " p + 0 " gc epochs"}' "$TMP/$impl")"
done
for impl in c rust; do
	check "$impl fq: every seed ran to the end, nothing leaked" healthy "$TMP/$impl"
done
# Time must have been in play: firings and gc epochs in the scripts.
check "the scripts fired the watchdog and reached fq's gc age" \
	awk '$5 == "hash" {f += $16; p += $20} END {exit !(f > 0 && p > 0)}' "$TMP/c"

# same C_FILE RUST_FILE N: both ran the same N seeds (each seed once in
# each) and no seed diverges. A seed missing from either (a batch that did
# not run, a report cut short) is not "the same".
same() {
	[ "$(hashes "$1" | awk '{print $1}' | sort -u | wc -l)" = "$3" ] &&
		[ "$(hashes "$1" | awk '{print $1}')" = "$(hashes "$2" | awk '{print $1}')" ] &&
		[ -z "$(first_divergence "$1" "$2")" ]
}
differs() { ! same "$@"; }
# The comparison must fail without a Rust batch (the first seed cut from
# its report) and with one Rust seed's observations changed (its hash).
awk -v s="$SEED0" '!($1 == "seed" && $2 == s)' "$TMP/rust" >"$TMP/rust.cut"
awk -v s="$SEED0" '$1 == "seed" && $2 == s {$6 = "0"} {print}' "$TMP/rust" >"$TMP/rust.bad"
check "self-check: a Rust seed missing from the report is a divergence" \
	differs "$TMP/c" "$TMP/rust.cut" "$SEEDS"
check "self-check: a Rust seed's hash changed is a divergence" \
	differs "$TMP/c" "$TMP/rust.bad" "$SEEDS"
bad=$(first_divergence "$TMP/c" "$TMP/rust")
n=$(join <(hashes "$TMP/c") <(hashes "$TMP/rust") | awk '$2 != $5 || $3 != $6 || $4 != $7' | wc -l)
if same "$TMP/c" "$TMP/rust" "$SEEDS"; then
	ktap_test_pass "C and Rust fq observe the same on $SEEDS seeds x $OPS operations in virtual time"
else
	ktap_print_msg "$n of $SEEDS seeds diverge; the first:"
	[ -n "$bad" ] && diagnose "$bad"
	ktap_test_fail "C and Rust fq observe the same on $SEEDS seeds x $OPS operations in virtual time"
fi

# One flow fed OOO skbs out of time order: each implementation dequeues
# all of them in time order, and both give the same sequence. The enqueue
# cost of the first and last tenth is printed, not judged here. The late
# pattern (the latest first, then ascending below it: a walk of the flow's
# list would pass every skb) runs with OOO skbs, past 65,536 so that a
# 16-bit count of a flow's packets would show; the random pattern with
# OOO_RAND (make oracle: 100,000 both).
OOO=${ORACLE_OOO:-100000}
OOO_RAND=${ORACLE_OOO_RAND:-20000}
[ "$OOO_RAND" -le "$OOO" ] || OOO_RAND=$OOO
for impl in c rust; do
	: >"$TMP/ooo.$impl"
	oracle $impl "$TMP/ooo.$impl" ooo=$OOO ooo_rand=$OOO_RAND
	while read -r l; do ktap_print_msg "$impl: $l"; done <"$TMP/ooo.$impl"
done
check "C and Rust fq: one flow of $OOO (late) and $OOO_RAND (random) out-of-order skbs, all dequeued in time order" \
	test "$(cat "$TMP/ooo.c" "$TMP/ooo.rust" | awk -v n="$OOO" -v r="$OOO_RAND" \
		'$1 == "ooo" && $4 == ($2 == "late" ? n : r) && $6 == $4 && $8 == 0 && $10 == 0' | wc -l)" = 4
expect_eq "C and Rust fq dequeue the out-of-order flow in the same order" \
	"$(awk '{print $2, $12}' "$TMP/ooo.c")" "$(awk '{print $2, $12}' "$TMP/ooo.rust")"

# Documented differences, each run on its own (see sch_fq.rst): the first
# divergence of each run must be exactly that. (What follows it in that
# seed is not compared: the state differs from there on.)
# partial=1: changes that carry an invalid value among valid ones. C's
# fq_change() applies the valid attributes of a change that fails on a
# value (and drops to the limit); sch_fq_rs applies none.
# shared=1: ECN-capable skbs with other users. C marks them in place;
# sch_fq_rs leaves them; both count them in ce_mark.
PSEEDS=${ORACLE_PSEEDS:-3}
POPS=500
for extra in partial shared; do
	: >"$TMP/pc"
	: >"$TMP/pr"
	# Verbose: most of these seeds diverge, and each is diagnosed from
	# its streams here (verbose writes what is hashed, it changes nothing).
	oracle c "$TMP/pc" seed=1 seeds="$PSEEDS" ops=$POPS $extra=1 verbose=1 &&
		oracle rust "$TMP/pr" seed=1 seeds="$PSEEDS" ops=$POPS $extra=1 verbose=1
	desc="$extra=1: C and Rust differ only as documented ($PSEEDS seeds x $POPS operations)"
	if same "$TMP/pc" "$TMP/pr" "$PSEEDS"; then
		ktap_test_pass "$desc (no difference met)"
		continue
	fi
	# Every seed that diverges must diverge first as documented.
	BOTH=("$extra=1") OPS=$POPS
	ok=1 found=
	if [ "$(hashes "$TMP/pc" | awk '{print $1}')" != "$(hashes "$TMP/pr" | awk '{print $1}')" ]; then
		ktap_print_msg "$extra=1: the two runs did not report the same seeds"
		ok=0
	fi
	for bad in $(join --nocheck-order <(hashes "$TMP/pc") <(hashes "$TMP/pr") |
		awk '$2 != $5 || $3 != $6 || $4 != $7 {print $1}'); do
		if CONFIRM=0 VERBOSE_C=$TMP/pc VERBOSE_RUST=$TMP/pr diagnose "$bad" && known_$extra "$PREFIX"; then
			found+=" seed $bad op $PREFIX"
		else
			ok=0
		fi
	done
	if [ $ok = 1 ]; then
		ktap_test_skip "$desc:$found"
	else
		ktap_test_fail "$desc"
	fi
	BOTH=()
done

# The flow table's limit: packets of 5,000 new flows in frozen time
# (behind one flow's packet due later), then of 1,000 more after fq's gc
# age. C makes every flow; sch_fq_rs_vt, whose table holds 4,096 flows
# (the production build: 1,048,576), sends the packets of new flows past
# that as C sends one whose flow it cannot allocate: from the fast path
# queue, each counted in allocation_errors, none dropped. Once the flows
# are idle, the lookups of new flows collect them first (their chains,
# the gc sweep of 2 chains a new flow at 4,096 flows on 1,024 buckets,
# and a full table's sweep): all 1,000 get their flow.
failslab_task on
for impl in c rust; do
	: >"$TMP/fill.$impl"
	oracle $impl "$TMP/fill.$impl" fill=5000
	while read -r l; do ktap_print_msg "$impl: $l"; done <"$TMP/fill.$impl"
done
failslab_task off
expect_eq "C fq makes a flow for each of 5,000 new flows" \
	"fill 5000 first_drop 0 drops 0 flows 5001 allocation_errors 0" "$(grep '^fill' "$TMP/fill.c")"
expect_eq "Rust fq at its table limit sends each new flow's packet, drops none, as C's failed allocation" \
	"fill 5000 first_drop 0 drops 0 flows 4096 allocation_errors 905" "$(grep '^fill' "$TMP/fill.rust")"
# Every flow is idle past the gc age by then: each lookup of a new flow
# collects the stale flows it meets (C: all on its search path; Rust: all
# of its chain's and of its sweeps), so the 1,000 lookups collect more
# than 1,000 in C, and at least as many as they make room for in Rust,
# which takes every new flow (no allocation error past the fill's 905).
check "Rust fq, full of idle flows, takes every new flow, collecting to make room" \
	awk '$1 == "after_gc" && $3 == 1000 && $5 == 0 && $7 <= 4096 && $9 >= 1000 && $11 == 905 {ok = 1} END {exit !ok}' "$TMP/fill.rust"
check "C fq collects more than one idle flow a lookup once all are stale" \
	awk '$1 == "after_gc" && $3 == 1000 && $5 == 0 && $9 > 1000 {ok = 1} END {exit !ok}' "$TMP/fill.c"
# Then 4 new flows whose allocations fail (failslab_task): each
# packet is counted as an allocation error and sent from the fast path
# queue, no flow made, in both.
expect_eq "C and Rust fq count a new flow whose allocation fails, and send its packet" \
	"alloc_fail new 4 drops 0 allocation_errors 4" \
	"$(awk '$1 == "alloc_fail" {print $1, $2, $3, $4, $5, $8, $9}' "$TMP/fill.c")"
expect_eq "... the same in Rust (after the 905 of the table's limit)" \
	"alloc_fail new 4 drops 0 allocation_errors 909" \
	"$(awk '$1 == "alloc_fail" {print $1, $2, $3, $4, $5, $8, $9}' "$TMP/fill.rust")"

# The timer_slack experiment: 1,000 paced flows, 1M packets/s in all, for
# SLACK_MS virtual ms; the watchdog firings must be the same for C and
# Rust at every slack.
for impl in c rust; do
	: >"$TMP/slack.$impl"
	oracle $impl "$TMP/slack.$impl" slackexp="$SLACK_MS"
	while read -r l; do ktap_print_msg "$impl: $l"; done <"$TMP/slack.$impl"
done
# firings: SLACK FIRES PACKETS of each slack, or nothing unless all three ran.
firings() { awk '$1 == "slack" {print $2, $8, $10}' "$1" | awk '{l[NR] = $0} END {if (NR == 3) for (i = 1; i <= 3; i++) print l[i]}'; }
fc=$(firings "$TMP/slack.c")
check "timer_slack experiment: C ran at slack 0, 10 us and 100 us" test -n "$fc"
expect_eq "timer_slack experiment ($SLACK_MS virtual ms): Rust fires the watchdog as C at slack 0, 10 us, 100 us" \
	"$fc" "$(firings "$TMP/slack.rust")"
ktap_finished
