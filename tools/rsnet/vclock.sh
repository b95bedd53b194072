#!/usr/bin/env bash
# Points the oracle-only fq modules (sch_fq_vt.ko: the tree's own
# net/sched/sch_fq.c; sch_fq_rs_vt.ko: net/sched/sch_fq_rs.rs) at the
# virtual clock of fq_vclock.ko: their clock, watchdog and registration
# symbols are renamed in the linked module (llvm-objcopy --redefine-sym),
# so neither source changes. Then every undefined symbol is checked: none
# that reads a clock or arms a timer may be left (a call that escaped the
# redirection), and the redirected ones must be there.
#
#   vclock.sh MODULE.ko...
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# What the qdiscs may reach of time: conversions, and the watchdog's init
# (it only initialises an hrtimer that is never started). ktime_mono_to_any
# converts a packet's timestamp between clocks: it adds the offset of
# CLOCK_REALTIME or CLOCK_TAI to CLOCK_MONOTONIC, which only setting the
# time changes, and reads no clock.
allowed='^(__msecs_to_jiffies|__usecs_to_jiffies|jiffies_to_usecs|jiffies_to_msecs|rust_helper_usecs_to_jiffies|ktime_mono_to_any|qdisc_watchdog_init_clockid|fq_vclock_.*)$'
# Anything else of these names reads a clock or arms a timer.
suspect='jiffies|ktime|clock|hrtimer|timer|watchdog|register_qdisc|netif_schedule'

for ko in "$@"; do
	"llvm-objcopy$LLVM_SUFFIX" \
		--redefine-sym jiffies=fq_vclock_jiffies \
		--redefine-sym ktime_get=fq_vclock_ktime_get \
		--redefine-sym qdisc_watchdog_schedule_range_ns=fq_vclock_watchdog_schedule_range_ns \
		--redefine-sym qdisc_watchdog_cancel=fq_vclock_watchdog_cancel \
		--redefine-sym register_qdisc=fq_vclock_register_qdisc \
		--redefine-sym unregister_qdisc=fq_vclock_unregister_qdisc \
		"$ko"
	undef=$("llvm-nm$LLVM_SUFFIX" -u "$ko" | awk '{print $NF}')
	escaped=$(grep -Ei "$suspect" <<<"$undef" | grep -Ev "$allowed" || true)
	if [ -n "$escaped" ]; then
		echo "vclock: $ko still reaches the real clock or timers:" $escaped >&2
		exit 1
	fi
	for s in fq_vclock_jiffies fq_vclock_ktime_get fq_vclock_watchdog_schedule_range_ns \
		fq_vclock_register_qdisc; do
		if ! grep -qx "$s" <<<"$undef"; then
			echo "vclock: $ko does not use $s (nothing was redirected?)" >&2
			exit 1
		fi
	done
done
