#!/usr/bin/env bash
# bench-plot.sh RESULTS OUTDIR: draw make bench's plot.tsv (guest-bench.sh)
# as two SVG charts with gnuplot:
#   OUTDIR/bench-ratios.svg  Rust/C cost of each C-vs-Rust row: the median
#                            of the per-round ratios, bars from the lowest
#                            to the highest round (rounds pair C and Rust
#                            measured back to back)
#   OUTDIR/bench-slack.svg   fq watchdog wakeups per second against
#                            timer_slack, C and Rust, median and range
#   OUTDIR/bench-cache.svg   cache misses per packet against flows, C and
#                            Rust (with the cache model)
set -euo pipefail
. "$(dirname "$0")/lib.sh"

res=$1 out=$2
tsv=$res/plot.tsv
[ -s "$tsv" ] || die "no $tsv: the benchmarks wrote no plot data"
command -v gnuplot >/dev/null || die "gnuplot missing (tools/rsnet/bench.sh installs gnuplot-nox)"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# median MIN MAX of the words of a line, in awk.
stats='function stats(s,   v, n, i, j, t) {
	n = split(s, v, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
			t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
		}
	return (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) " " v[1] " " v[n]
}'

# Rows: INDEX "LABEL" MEDIAN MIN MAX of the per-round cost ratios Rust/C
# (ns: Rust/C; packets per second: C/Rust).
awk -F'\t' "$stats"'
$1 == "row" {
	n = split($4, c, " "); split($5, r, " "); s = ""
	for (i = 1; i <= n; i++)
		if (c[i] > 0 && r[i] > 0)
			s = s " " ($3 == "pps" ? c[i] / r[i] : r[i] / c[i])
	if (s != "")
		printf "%d \"%s\" %s\n", k++, $2, stats(s)
}' "$tsv" >"$tmp/rows.dat"

# Slack: US C-MEDIAN C-MIN C-MAX RUST-MEDIAN RUST-MIN RUST-MAX
awk -F'\t' "$stats"'
$1 == "slack" { print $2, stats($3), stats($4) }' "$tsv" >"$tmp/slack.dat"

n=$(wc -l <"$tmp/rows.dat")
if [ "$n" -gt 0 ]; then
	gnuplot <<-EOF
		set terminal svg size 900,$((120 + 28 * n)) dynamic noenhanced font "sans,12" background "white"
		set output "$out/bench-ratios.svg"
		set title "Rust/C cost per benchmark row (median of rounds, bar: lowest to highest round)"
		set xlabel "cost Rust/C (< 1: Rust cheaper)"
		set yrange [-1:$n]
		set ytics nomirror
		set grid xtics
		unset key
		set arrow from 1, graph 0 to 1, graph 1 nohead dashtype 2 lc "gray40"
		plot "$tmp/rows.dat" using 3:1:4:5:ytic(2) with xerrorbars pt 7 ps 1 lc "#1f77b4", \
		     "" using 3:1 with points pt 7 ps 1 lc "#1f77b4"
	EOF
fi
if [ -s "$tmp/slack.dat" ]; then
	gnuplot <<-EOF
		set terminal svg size 900,500 dynamic noenhanced font "sans,12" background "white"
		set output "$out/bench-slack.svg"
		set title "fq watchdog wakeups per second, 1000 flows paced at 400kbit (pktgen)"
		set xlabel "timer_slack (us)"
		set ylabel "NET_TX softirqs per second (log scale)"
		set logscale y
		set grid
		set key top right
		plot "$tmp/slack.dat" using 1:2:3:4 with yerrorlines pt 7 lc "#d62728" title "C sch_fq", \
		     "" using 1:5:6:7 with yerrorlines pt 5 lc "#1f77b4" title "Rust sch_fq_rs"
	EOF
fi
# The cache model (cache-tables.py): misses per packet against flows,
# FLOWS L1-C L1-RUST L2-C L2-RUST LLC-C LLC-RUST.
if [ -s "$res/cache-plot.dat" ]; then
	gnuplot <<-EOF
		set terminal svg size 900,500 dynamic noenhanced font "sans,12" background "white"
		set output "$out/bench-cache.svg"
		set title "fq_bench, burst 64: cache misses per packet (cache model, median of rounds)"
		set xlabel "flows (log scale)"
		set ylabel "misses per packet"
		set logscale x
		set grid
		set key top left
		plot "$res/cache-plot.dat" using 1:2 with linespoints pt 7 dt 1 lc "#d62728" title "L1d C", \
		     "" using 1:3 with linespoints pt 5 dt 1 lc "#1f77b4" title "L1d Rust", \
		     "" using 1:4 with linespoints pt 7 dt 2 lc "#d62728" title "L2 C", \
		     "" using 1:5 with linespoints pt 5 dt 2 lc "#1f77b4" title "L2 Rust", \
		     "" using 1:6 with linespoints pt 7 dt 3 lc "#d62728" title "LLC C", \
		     "" using 1:7 with linespoints pt 5 dt 3 lc "#1f77b4" title "LLC Rust"
	EOF
fi
step "plots in $out: bench-ratios.svg bench-slack.svg$([ -s "$res/cache-plot.dat" ] && echo " bench-cache.svg")"
