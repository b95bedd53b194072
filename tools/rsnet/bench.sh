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
# The cache model, a TCG plugin (tools/rsnet/cacheplugin; CACHE=0 leaves
# it out): the guest's measured loops are its regions.
plugin=
if [ "${CACHE:-1}" = 1 ]; then
	step "building the cache model (tools/rsnet/cacheplugin)"
	CARGO_TARGET_DIR=$RSNET_CACHE/cacheplugin cargo build --release --locked \
		--manifest-path "$RSNET_TOP/tools/rsnet/cacheplugin/Cargo.toml" \
		>"$LOGDIR/cacheplugin.log" 2>&1 || die "building the cache plugin failed" "$LOGDIR/cacheplugin.log"
	plugin=file=$RSNET_CACHE/cacheplugin/release/librsnet_cacheplugin.so
fi
rounds=${ROUNDS:-5} bench=${BENCH:-page_pool,tcp,fq,fqscale}
has() { [[ ",$bench," == *",$1,"* ]]; }
# The rows of the qdisc and the pool alone (fq_bench, page_pool_bench), the
# cache model's, in a guest that repeats exactly (detvm.sh); REPEAT=1 runs
# it twice and fails unless both runs counted the same.
if has page_pool || has fq || has fqscale; then
	runs=1
	[ "${REPEAT:-0}" = 1 ] && runs=2
	for run in $(seq $runs); do
		dir=$RSNET_RESULTS
		[ "$run" = 2 ] && dir=$RSNET_RESULTS/repeat
		step "the qdisc and the pool alone, in the deterministic VM${plugin:+, with the cache model} (run $run of $runs)"
		RSNET_PLUGIN=${plugin:+$plugin,out=$dir/cache.tsv} VM_TIMEOUT=${VM_TIMEOUT:-3000} \
			bash "$RSNET_TOP/tools/rsnet/detvm.sh" "$dir" "$rounds" "$bench"
	done
	if [ "$runs" = 2 ]; then
		for f in marks.tsv ${plugin:+cache.tsv}; do
			cmp -s "$RSNET_RESULTS/$f" "$RSNET_RESULTS/repeat/$f" ||
				die "the two runs differ in $f: $(diff "$RSNET_RESULTS/$f" "$RSNET_RESULTS/repeat/$f" | head -3 | tr '\n' ' ')"
		done
		step "two runs, identical counts: marks.tsv (instructions)${plugin:+ and cache.tsv (accesses and misses of $(grep -c '^[0-9]' "$RSNET_RESULTS/cache.tsv") regions)}"
	fi
fi
# The rest (pktgen, XDP, NUMA, iperf3, watchdog wakeups) in the test VM.
if has page_pool || has tcp || has fq; then
	step "booting the test VM for the other benchmarks (results: $RSNET_RESULTS)"
	VM_TIMEOUT=${VM_TIMEOUT:-3000} bash "$RSNET_TOP/tools/rsnet/vm.sh" \
		"$RSNET_TOP/tools/rsnet/guest-bench.sh" "$rounds" "$bench" unmarked
fi
[ -f "$RSNET_RESULTS/bench.rst" ] || die "benchmarks did not finish" "$LOGDIR/vm-console.log"
echo "Reproduce: make bench ROUNDS=$rounds BENCH=$bench (C and Rust, off and on, alternate)." |
	tee -a "$RSNET_RESULTS/bench.rst"
if [ -n "$plugin" ] && [ -s "$RSNET_RESULTS/marks.tsv" ]; then
	[ -s "$RSNET_RESULTS/cache.tsv" ] || die "the cache model wrote no counts" "$RSNET_RESULTS/det-console.log"
	python3 "$RSNET_TOP/tools/rsnet/cache-tables.py" "$RSNET_RESULTS" | tee -a "$RSNET_RESULTS/bench.rst"
fi
bash "$RSNET_TOP/tools/rsnet/bench-plot.sh" "$RSNET_RESULTS" "$RSNET_TOP/Documentation/rsnet"
