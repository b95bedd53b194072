#!/usr/bin/env bash
# make bench: C against Rust (and on against off) in one VM boot,
# interleaved, medians and ratios. Prints the tables (reStructuredText) and
# saves them in $RSNET_CACHE/results/bench-*/bench.rst; draws the charts
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
if [ "${CACHE:-1}" = 1 ]; then
	step "building the cache model (tools/rsnet/cacheplugin)"
	CARGO_TARGET_DIR=$RSNET_CACHE/cacheplugin cargo build --release --locked \
		--manifest-path "$RSNET_TOP/tools/rsnet/cacheplugin/Cargo.toml" \
		>"$LOGDIR/cacheplugin.log" 2>&1 || die "building the cache plugin failed" "$LOGDIR/cacheplugin.log"
	export RSNET_PLUGIN="file=$RSNET_CACHE/cacheplugin/release/librsnet_cacheplugin.so,out=$RSNET_RESULTS/cache.tsv"
fi
step "booting the test VM for the benchmarks (results: $RSNET_RESULTS)"
VM_TIMEOUT=${VM_TIMEOUT:-3000} bash "$RSNET_TOP/tools/rsnet/vm.sh" \
	"$RSNET_TOP/tools/rsnet/guest-bench.sh" "${ROUNDS:-5}" "${BENCH:-page_pool,tcp,fq,fqscale}"
[ -f "$RSNET_RESULTS/bench.rst" ] || die "benchmarks did not finish" "$LOGDIR/vm-console.log"
if [ -n "${RSNET_PLUGIN:-}" ]; then
	[ -s "$RSNET_RESULTS/cache.tsv" ] || die "the cache model wrote no counts" "$LOGDIR/vm-console.log"
	python3 "$RSNET_TOP/tools/rsnet/cache-tables.py" "$RSNET_RESULTS" | tee -a "$RSNET_RESULTS/bench.rst"
fi
bash "$RSNET_TOP/tools/rsnet/bench-plot.sh" "$RSNET_RESULTS" "$RSNET_TOP/Documentation/rsnet"
