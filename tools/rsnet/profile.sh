#!/usr/bin/env bash
# make profile TESTS="a.sh b.sh": where the guest's instructions go. Runs
# those test programs as make check does (guest-check.sh, one VM, the same
# kernel and boot options), under a TCG plugin that counts the
# instructions each translation block executes (tools/rsnet/profplugin),
# and prints the functions that executed the most, with the shares of
# lockdep, the unwinder, kmemleak and user space. Boot is counted too.
# The plugin slows the guest about threefold; a test's own timing may
# change under it, its instruction counts are what the profile is for.
# TOP=N prints N functions (default 40).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -n "${TESTS:-}" ] || die "TESTS=\"a.sh ...\" names the test programs to profile"
prepare
step "building the profiling plugin (tools/rsnet/profplugin)"
CARGO_TARGET_DIR=$RSNET_CACHE/profplugin cargo build --release --locked \
	--manifest-path "$RSNET_TOP/tools/rsnet/profplugin/Cargo.toml" \
	>"$LOGDIR/profplugin.log" 2>&1 || die "building the profiling plugin failed" "$LOGDIR/profplugin.log"
res=$RSNET_CACHE/results/profile-$$
rm -rf "$res" && mkdir -p "$res"
read -ra tests <<<"$TESTS"
args=()
for i in "${!tests[@]}"; do args+=("$((i + 1)):${tests[$i]}"); done
step "profiling ${tests[*]} in one VM (results: $res)"
# The guest's symbols at the end, modules included (the kernel has no
# KASLR under virtme-ng: its own text is also System.map's).
# shellcheck disable=SC2016 # for the guest's shell
RSNET_RESULTS=$res RSNET_CONSOLE=$res/console.log VM_TIMEOUT=${VM_TIMEOUT:-4500} RSNET_NET=${RSNET_NET-loop} \
	RSNET_APPEND="rcupdate.rcu_expedited=1 tsc=reliable" \
	RSNET_PLUGIN="$RSNET_CACHE/profplugin/release/librsnet_profplugin.so,out=$res/tb.txt" \
	bash "$RSNET_TOP/tools/rsnet/vm.sh" bash -c \
	'"$0" "$@"; cat /proc/kallsyms >"$RSNET_RESULTS/kallsyms"' \
	"$RSNET_TOP/tools/rsnet/guest-check.sh" "${args[@]}" >"$res/vm.out" 2>&1 ||
	die "the profiled VM failed" "$res/vm.out"
[ -s "$res/tb.txt" ] || die "the plugin wrote no counts ($res/tb.txt)" "$res/console.log"
for t in "${tests[@]}"; do
	grep -E '^(not )?ok ' "$res/$t.ktap" | tail -n 1 | sed 's/^/    /'
done
python3 - "$res/tb.txt" "$res/kallsyms" "${TOP:-40}" <<'PY'
import bisect, collections, re, sys
syms = []
for line in open(sys.argv[2]):
    p = line.split()
    if len(p) >= 3 and p[1] in "tTwW":
        syms.append((int(p[0], 16), p[2] + (" " + p[3] if len(p) > 3 else "")))
syms.sort()
addrs = [a for a, _ in syms]
fn = collections.Counter()
for line in open(sys.argv[1]):
    pc, n = line.split()
    pc, n = int(pc, 16), int(n)
    if pc < 0xffff800000000000:
        fn["(user space)"] += n
        continue
    i = bisect.bisect_right(addrs, pc) - 1
    fn[syms[i][1] if i >= 0 else "(unknown)"] += n
total = sum(fn.values())
groups = [
    ("lockdep", r"lock_acquire|lock_release|mark_lock|lockdep|held_lock|lock_is_held|hlock|"
                r"validate_chain|chain_cache|check_(prev|irq|noncircular|deadlock)|__bfs|mark_usage|"
                r"debug_check_no_locks|rcu_is_watching|debug_lockdep_rcu"),
    ("unwinder", r"unwind|stack_trace|stack_walk|deref_stack|kernel_text_address|stack_depot|"
                 r"filter_irq_stacks|mod_find|__module_address|is_module_text|update_stack_state"),
    # Its scans (guest-check.sh's two at the end) too.
    ("kmemleak", r"kmemleak|_object$|mem_pool|scan_block|scan_object|scan_gray_list|"
                 r"pointer_update_refs|update_checksum|update_refs"),
    ("user space", r"^\(user space\)$"),
]
share = collections.Counter()
for f, n in fn.items():
    for g, rx in groups:
        if re.search(rx, f.split()[0] if f[0] != "(" else f):
            share[g] += n
            break
print(f"[rsnet] {total:.3g} guest instructions; shares: " +
      ", ".join(f"{g} {100 * share[g] / total:.1f} %" for g, _ in groups))
for f, n in fn.most_common(int(sys.argv[3])):
    print(f"  {100 * n / total:6.2f} %  {f}")
PY
