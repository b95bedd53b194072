#!/usr/bin/env bash
# make bench: C against Rust (and on against off), interleaved, medians
# and ratios, in two VM boots: the qdisc and the pool alone (with the cache
# model) in detvm.sh's guest, which repeats exactly, the rest in vm.sh's.
# Prints the tables (reStructuredText) and saves them in
# $RSNET_CACHE/results/bench-*/bench.rst; draws the charts
# Documentation/rsnet/bench-ratios.svg and bench-slack.svg (bench-plot.sh).
set -euo pipefail
# The benchmark kernel (configs/bench.fragment: no lockdep, no kmemleak) and
# an instruction-counting guest clock (vm.sh), unless told otherwise.
export KCONFIG=${KCONFIG:-bench} RSNET_ICOUNT=${RSNET_ICOUNT:-1}
. "$(dirname "$0")/lib.sh"

prepare
# The charts are drawn on the host (bench-plot.sh).
apt_need gnuplot-nox
export RSNET_RESULTS=$RSNET_CACHE/results/bench-$$
rm -rf "$RSNET_RESULTS" && mkdir -p "$RSNET_RESULTS"
rounds=${ROUNDS:-5} bench=${BENCH:-page_pool,tcp,fq,fqscale,fqslack}
has() { [[ ",$bench," == *",$1,"* ]]; }
# The rows of the qdisc and the pool alone (fq_bench, page_pool_bench), the
# cache model's, run in a guest that repeats exactly (detvm.sh); the rest
# (pktgen, XDP, NUMA, iperf3, watchdog wakeups) in the test VM.
marked=0 unmarked=0
{ has page_pool || has fq || has fqscale; } && marked=1
{ has page_pool || has tcp || has fq || has fqslack; } && unmarked=1
[ $marked = 1 ] || [ $unmarked = 1 ] || die "BENCH=$bench names no part (page_pool, tcp, fq, fqscale, fqslack)"
# The cache model, a TCG plugin (tools/rsnet/cacheplugin; CACHE=0 leaves
# it out): the guest's measured loops are its regions.
plugin=
if [ "${CACHE:-1}" = 1 ] && [ $marked = 1 ]; then
	step "building the cache model (tools/rsnet/cacheplugin)"
	CARGO_TARGET_DIR=$RSNET_CACHE/cacheplugin cargo build --release --locked \
		--manifest-path "$RSNET_TOP/tools/rsnet/cacheplugin/Cargo.toml" \
		>"$LOGDIR/cacheplugin.log" 2>&1 || die "building the cache plugin failed" "$LOGDIR/cacheplugin.log"
	plugin=file=$RSNET_CACHE/cacheplugin/release/librsnet_cacheplugin.so
fi
# The deterministic guests: page_pool's rows on two vCPUs (its cross-CPU
# path), fq's on one (detvm.sh says why), each its own boot, its regions
# numbered apart. REPEAT=1 runs each twice and fails unless both runs
# counted the same.
boots=()
has page_pool && boots+=("page_pool 2 0")
fqparts=$(for p in fq fqscale; do if has $p; then printf "%s," $p; fi; done)
[ -n "$fqparts" ] && boots+=("${fqparts%,} 1 1000")
runs=1
if [ "${REPEAT:-0}" = 1 ]; then
	runs=2
	[ $marked = 1 ] || step "REPEAT=1: BENCH=$bench has no row of the deterministic guest to repeat"
fi
for run in $(seq $runs); do
	for b in "${boots[@]}"; do
		read -r parts cpus mark <<<"$b"
		dir=$RSNET_RESULTS/det$run-${parts%%,*}
		step "${parts//,/ and } alone, deterministic VM ($cpus vCPU)${plugin:+, cache model}, run $run of $runs"
		RSNET_PLUGIN=${plugin:+$plugin,out=$dir/cache.tsv} VM_TIMEOUT=${VM_TIMEOUT:-3000} \
			bash "$RSNET_TOP/tools/rsnet/detvm.sh" "$dir" "$rounds" "$parts" "$cpus" "$mark"
	done
done
for b in "${boots[@]}"; do
	read -r parts _ <<<"$b"
	d1=$RSNET_RESULTS/det1-${parts%%,*} d2=$RSNET_RESULTS/det2-${parts%%,*}
	# The runs' files side by side, as if from one guest.
	for f in bench.rst marks.tsv plot.tsv raw.txt ${plugin:+cache.tsv}; do
		[ -f "$d1/$f" ] && cat "$d1/$f" >>"$RSNET_RESULTS/$f"
	done
	cp "$d1"/syms-*.txt "$RSNET_RESULTS/"
	[ "$runs" = 2 ] || continue
	# All but the plugin's count of translated blocks, which is QEMU's
	# (it retranslates a few blocks more or fewer), not the guest's.
	for f in marks.tsv ${plugin:+cache.tsv}; do
		cmp -s <(grep -v '^tbs ' "$d1/$f") <(grep -v '^tbs ' "$d2/$f") ||
			die "the two runs of $parts differ in $f: $(diff "$d1/$f" "$d2/$f" | head -3 | tr '\n' ' ')"
	done
	step "$parts, two runs, identical counts: marks.tsv (instructions)${plugin:+ and cache.tsv (accesses and misses of $(grep -c '^[0-9]' "$d1/cache.tsv") regions)}"
done
if [ $unmarked = 1 ]; then
	step "booting the test VM for the other benchmarks (results: $RSNET_RESULTS)"
	VM_TIMEOUT=${VM_TIMEOUT:-3000} bash "$RSNET_TOP/tools/rsnet/vm.sh" \
		"$RSNET_TOP/tools/rsnet/guest-bench.sh" "$rounds" "$bench" unmarked ||
		die "the benchmarks in the test VM failed" "$LOGDIR/vm-console.log"
fi
echo "Reproduce: make bench ROUNDS=$rounds BENCH=$bench${CACHE:+ CACHE=$CACHE}${REPEAT:+ REPEAT=$REPEAT} (C and Rust, off and on, alternate)." |
	tee -a "$RSNET_RESULTS/bench.rst"
if [ -n "$plugin" ]; then
	[ -s "$RSNET_RESULTS/cache.tsv" ] || die "the cache model wrote no counts" "$RSNET_RESULTS/det-console.log"
	python3 "$RSNET_TOP/tools/rsnet/cache-tables.py" "$RSNET_RESULTS" | tee -a "$RSNET_RESULTS/bench.rst"
fi
bash "$RSNET_TOP/tools/rsnet/bench-plot.sh" "$RSNET_RESULTS" "$RSNET_TOP/Documentation/rsnet"
