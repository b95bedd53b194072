#!/usr/bin/env bash
# Points the oracle-only fq modules (sch_fq_vt.ko: the tree's own
# net/sched/sch_fq.c; sch_fq_rs_vt.ko: net/sched/sch_fq_rs.rs) at the
# virtual clock of fq_vclock.ko: their clock, watchdog and registration
# symbols are renamed in the linked module (llvm-objcopy --redefine-sym),
# so neither source changes. Then every undefined symbol is checked: none
# that reads a clock or arms a timer may be left (a call that escaped the
# redirection), and the redirected ones must be there; and what every
# undefined symbol resolves to in vmlinux must not read the clock
# (clockrefs.py) unless listed below with the reason.
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

# Every module is checked; each failure is a line "vclock: MODULE ...".
failed=0
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
		failed=1
	fi
	for s in fq_vclock_jiffies fq_vclock_ktime_get fq_vclock_watchdog_schedule_range_ns \
		fq_vclock_register_qdisc; do
		if ! grep -qx "$s" <<<"$undef"; then
			echo "vclock: $ko does not use $s (nothing was redirected?)" >&2
			failed=1
		fi
	done
done

# Names can hide a clock (___ratelimit reads jiffies): what each undefined
# symbol resolves to in the kernel is checked too. clockrefs.py follows
# its code in vmlinux, 4 calls deep, to any read of jiffies, jiffies_64 or
# the TSC, or call of a clock or timer function. The symbols below reach
# the clock only for what no observation of the oracle depends on; any
# other that does fails the build, with the calls that get there.
#   allocation and freeing (the slab and page allocators' debugging,
#   kmemleak's object times, fault injection's rate limit, reclaim
#   backoff; pskb_expand_head allocates a header, gnet_stats_copy_app a
#   copy): they give memory, not a time
#   __kmalloc_noprof kfree krealloc_node_align_noprof kvrealloc_node_align_noprof
#   __kvmalloc_node_noprof kvfree kmem_cache_alloc_noprof kmem_cache_free
#   kmem_cache_destroy __kmem_cache_create_args pskb_expand_head gnet_stats_copy_app
#   SkBuff::set_ce_slow (the kernel crate's, out of line): reaches the
#   clock only through pskb_expand_head
#   sk_skb_reason_drop, kfree_skb_list_reason (RtnlFree's fallback
#   without RTNL): free skbs (their dst, through RCU)
#   __skb_get_hash_net: the flow dissector (BPF run statistics) and the
#   hash seed's one-time initialisation: the hash is the packet's and the
#   seed's, not the time's
#   _raw_spin_unlock_bh: runs pending softirqs, other code's
#   net_ratelimit ___ratelimit _printk __nla_parse: rate limiting and
#   printing of warnings (a log line's time stamp): the oracle observes
#   no log (__nla_parse warns of trailing bytes)
clock_ok='^(__kmalloc_noprof|kfree|krealloc_node_align_noprof|kvrealloc_node_align_noprof|__kvmalloc_node_noprof|kvfree|kmem_cache_alloc_noprof|kmem_cache_free|kmem_cache_destroy|__kmem_cache_create_args|pskb_expand_head|gnet_stats_copy_app|_RNv.*6SkBuff11set_ce_slow|sk_skb_reason_drop|kfree_skb_list_reason|__skb_get_hash_net|_raw_spin_unlock_bh|net_ratelimit|___ratelimit|_printk|__nla_parse)$'
vmlinux=$(kbuild_dir)/vmlinux
if [ -f "$vmlinux" ]; then
	refs=$(python3 "$RSNET_TOP/tools/rsnet/clockrefs.py" "llvm-objdump$LLVM_SUFFIX" "$vmlinux" "$@") || {
		echo "vclock: following the modules' symbols in $vmlinux failed" >&2
		exit 1
	}
	bad=$(awk -v ok="$clock_ok" '{s = $2; sub(/:$/, "", s)} s !~ ok' <<<"$refs")
	if [ -n "$bad" ]; then
		for ko in "$@"; do
			awk -v m="${ko##*/}" -v ko="$ko" '$1 == m {sub(/^[^ ]+ /, ""); print "vclock: " ko " resolves to code reading the real clock or arming a timer: " $0}' <<<"$bad" >&2
		done
		failed=1
	fi
else
	echo "vclock: no $vmlinux: what the symbols resolve to is not checked" >&2
fi
exit $failed
