#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Proves that the differential oracle (fq_oracle.sh) can fail: mutants of
# the Rust fq (tools/testing/selftests/rsnet/mutants/*.mutants), each built
# on the host as an oracle-only module (fqm_NAME.ko in $RSNET_TOP/.mutants,
# tools/rsnet/mutants.sh), are loaded one at a time in place of
# sch_fq_rs_vt and played the same seeded scripts as C's sch_fq_vt
# (fq_oracle rsmod=fqm_NAME). A mutant is killed by the first seed whose
# observations differ from C's, named with the first operation that
# differs (from the per-operation hashes of a verbose run of that seed);
# one that no seed kills goes through the oracle's other runs (the table
# limit, the out-of-order flow, the timer_slack experiment). A mutant that
# survives them all fails, unless its record says why it is equivalent
# (then it must survive: a killed "equivalent" one fails too). One that
# vclock.sh refused at build (fqm_NAME.escape: it reaches the real clock)
# is killed by the escape check.
#
# Seeds come in growing batches (1-2, 3-6, 7-14, 15-30, 31-60, ...) up to
# MUTANT_SEEDS (default 60) of ORACLE_OPS operations (default 1000); C's
# hashes are computed once per batch. The last lines are the table and
# the kill rate, which must be at least 95 % of the mutants not shown
# equivalent.

. "$(dirname "$0")/lib.sh"
DEV=fqm0
DBG=/sys/kernel/debug/fq_oracle/report
MDIR=${RSNET_TOP:-$(cd "$(dirname "$0")/../../../.." && pwd)}/.mutants
SEEDS=${MUTANT_SEEDS:-60}
OPS=${ORACLE_OPS:-1000}
OOO=2000
SLACK_MS=10
TMP=$(mktemp -d /tmp/fq_mutants.XXXXXX)
LOADED=

cleanup() {
	rmmod fq_oracle 2>/dev/null
	[ -n "$LOADED" ] && rmmod "$LOADED" 2>/dev/null
	ip link del $DEV 2>/dev/null
	modprobe -r sch_fq_vt fq_vclock 2>/dev/null
	failslab_task off
	rm -rf "$TMP"
}
trap cleanup EXIT

ktap_print_header
[ -s "$MDIR/list" ] || ktap_exit_fail_msg "no mutants built ($MDIR/list): tools/rsnet/mutants.sh builds them"
mapfile -t MUTANTS <"$MDIR/list"
ktap_set_plan $((${#MUTANTS[@]} + 1))
ktap_print_msg "${#MUTANTS[@]} mutants (selection: $(cat "$MDIR/seed")), up to $SEEDS seeds x $OPS operations each"

# oracle IMPL OUT PARAM...: one run of fq_oracle, its report appended to
# OUT; on an error, the module's last words (the failing seed and
# operation) are appended instead and it fails.
oracle() {
	local impl=$1 out=$2
	shift 2
	local before
	before=$(dmesg | wc -l)
	if ! modprobe fq_oracle impl="$impl" dev=$DEV "$@" 2>/dev/null; then
		dmesg | tail -n +$((before + 1)) | grep -o 'seed [0-9]* error .*' | tail -1 >>"$out"
		return 1
	fi
	cat $DBG >>"$out"
	rmmod fq_oracle
}

# hashes FILE: "SEED HASH ENQ DROPS" a line.
hashes() {
	awk '$1 == "seed" && $5 == "hash" {print $2, $6, $8, $10}' "$1"
}

# The batches: [start, count] pairs covering 1..SEEDS.
BATCHES=()
s=1 n=2
while [ $s -le "$SEEDS" ]; do
	[ $((s + n - 1)) -gt "$SEEDS" ] && n=$((SEEDS - s + 1))
	BATCHES+=("$s:$n")
	s=$((s + n)) n=$((n * 2))
done

# c_batch S N: C's hashes of seeds S..S+N-1, computed once.
c_batch() {
	local f=$TMP/c.$1
	if [ ! -f "$f" ]; then
		oracle c "$f.tmp" seed="$1" seeds="$2" ops="$OPS" ||
			ktap_exit_fail_msg "C fq fails the oracle at seeds $1+$2: $(tail -1 "$f.tmp")"
		mv "$f.tmp" "$f"
	fi
	echo "$f"
}

# first_op SEED MODULE: the first operation whose running hash differs in
# the verbose streams of C and the module (C's computed once).
first_op() {
	local s=$1 mod=$2
	[ -f "$TMP/v.c.$s" ] || oracle c "$TMP/v.c.$s" seed="$s" seeds=1 ops="$OPS" verbose=1
	: >"$TMP/v.m"
	oracle rust "$TMP/v.m" rsmod="$mod" seed="$s" seeds=1 ops="$OPS" verbose=1
	join --nocheck-order <(awk '$2 == "=" {print $1, $3}' "$TMP/v.c.$s") <(awk '$2 == "=" {print $1, $3}' "$TMP/v.m") |
		awk '$2 != $3 {print $1; exit}'
}

# Every oracle run but the seeds, C's once: the out-of-order flow, the
# timer_slack experiment. (The table limit run's reference is the
# unmutated Rust fq's, made before any mutant is loaded.)
extra_ref() {
	[ -f "$TMP/x.c" ] && return
	oracle c "$TMP/x.c.ooo" ooo=$OOO
	oracle c "$TMP/x.c.slack" slackexp=$SLACK_MS
	touch "$TMP/x.c"
}
firings() { awk '$1 == "slack" {print $2, $8, $10}' "$1"; }

# kill MODULE: VERDICT, what killed the module, or nothing.
kill_mutant() {
	local mod=$1 b s n cf out bad k f
	VERDICT=
	for b in "${BATCHES[@]}"; do
		s=${b%:*} n=${b#*:}
		cf=$(c_batch "$s" "$n")
		out=$TMP/r
		: >"$out"
		if ! oracle rust "$out" rsmod="$mod" seed="$s" seeds="$n" ops="$OPS"; then
			VERDICT="killed by $(tail -1 "$out" || echo "a failed run at seeds $s+$n")"
			return
		fi
		bad=$(join --nocheck-order <(hashes "$cf") <(hashes "$out") | awk '$2 != $5 || $3 != $6 || $4 != $7 {print $1; exit}')
		if [ -z "$bad" ] && [ "$(hashes "$out" | wc -l)" != "$n" ]; then
			VERDICT="killed by a missing seed in seeds $s+$n"
			return
		fi
		if [ -n "$bad" ]; then
			k=$(first_op "$bad" "$mod")
			# No operation differs in the verbose streams when they
			# were cut short (8 MiB): the op lies past their end.
			[ -n "$k" ] || k="? (past op $(awk '$2 == "=" {k = $1} END {print k + 0}' "$TMP/v.m"), the verbose report's end)"
			VERDICT="killed by seed $bad op $k"
			return
		fi
	done
	extra_ref
	f=$TMP/x.m
	: >"$f"
	oracle rust "$f" rsmod="$mod" fill=5000
	if [ "$(grep -E '^(fill|after_gc|alloc_fail) ' "$f")" != "$(grep -E '^(fill|after_gc|alloc_fail) ' "$TMP/x.r.fill")" ]; then
		VERDICT="killed by the table limit run (fill=5000): $(tr '\n' ' ' <"$f")"
		return
	fi
	: >"$f"
	oracle rust "$f" rsmod="$mod" ooo=$OOO
	if [ "$(awk '{print $2, $4, $6, $8, $10, $12}' "$f")" != "$(awk '{print $2, $4, $6, $8, $10, $12}' "$TMP/x.c.ooo")" ]; then
		VERDICT="killed by the out-of-order run (ooo=$OOO)"
		return
	fi
	: >"$f"
	oracle rust "$f" rsmod="$mod" slackexp=$SLACK_MS
	if [ "$(firings "$f")" != "$(firings "$TMP/x.c.slack")" ]; then
		VERDICT="killed by the timer_slack experiment ($SLACK_MS ms)"
		return
	fi
}

fq_unload_all
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
modprobe -r sch_fq_rs_vt 2>/dev/null
ip link del $DEV 2>/dev/null
ip link add $DEV type dummy
if ! modprobe fq_vclock || ! modprobe sch_fq_vt; then
	ktap_exit_fail_msg "the oracle's modules do not load"
fi

# The table limit run of the unmutated Rust fq, against which a mutant's
# is compared, every count (C has no limit; fq_oracle.sh checks these
# counts). Made now: a loaded mutant holds the qdisc's name.
# Its alloc_fail step needs failslab_task on, for every table limit run.
failslab_task on
modprobe sch_fq_rs_vt && oracle rust "$TMP/x.r.fill" fill=5000
modprobe -r sch_fq_rs_vt 2>/dev/null
grep -q '^fill ' "$TMP/x.r.fill" ||
	ktap_exit_fail_msg "the unmutated Rust fq's table limit run gave no counts: $(cat "$TMP/x.r.fill")"

killed=0 equiv=0 total=0
TABLE=()
for row in "${MUTANTS[@]}"; do
	IFS=$'\t' read -r name mod desc why <<<"$row"
	total=$((total + 1))
	t0=$SECONDS
	if [ -f "$MDIR/$mod.escape" ]; then
		# vclock.sh refused it at build: it reaches the real clock.
		VERDICT="killed by the escape check (build): $(grep -m1 -v '^\[' "$MDIR/$mod.escape" | cut -c1-160)"
		if [ -n "$why" ]; then
			ktap_test_fail "mutant $name ($desc): said equivalent ($why) but $VERDICT"
		else
			killed=$((killed + 1))
			ktap_test_pass "mutant $name ($desc): $VERDICT"
		fi
		TABLE+=("$(printf '%-30s %-4s %s' "$name" "0s" "$VERDICT")")
		continue
	fi
	if ! insmod "$MDIR/$mod.ko"; then
		ktap_test_fail "mutant $name: $mod.ko does not load"
		TABLE+=("$(printf '%-30s %s' "$name" "NOT LOADED")")
		continue
	fi
	LOADED=$mod
	kill_mutant "$mod"
	rmmod "$mod"
	LOADED=
	dt=$((SECONDS - t0))
	if [ -n "$VERDICT" ]; then
		if [ -n "$why" ]; then
			ktap_test_fail "mutant $name ($desc): said equivalent ($why) but $VERDICT"
		else
			killed=$((killed + 1))
			ktap_test_pass "mutant $name ($desc): $VERDICT"
		fi
	elif [ -n "$why" ]; then
		equiv=$((equiv + 1))
		VERDICT="survived: equivalent: $why"
		ktap_test_skip "mutant $name ($desc): $VERDICT"
	else
		VERDICT="SURVIVED"
		ktap_test_fail "mutant $name ($desc): survived ${#BATCHES[@]} batches, $SEEDS seeds, fill, ooo, slackexp"
	fi
	TABLE+=("$(printf '%-30s %-4s %s' "$name" "${dt}s" "$VERDICT")")
done

ktap_print_msg "mutant                         time verdict"
for l in "${TABLE[@]}"; do ktap_print_msg "$l"; done
scored=$((total - equiv))
ktap_print_msg "killed $killed of $scored mutants not shown equivalent ($equiv equivalent, $total in all)"
check "kill rate $killed/$scored is at least 95 %" test $((killed * 100)) -ge $((scored * 95))
ktap_finished
