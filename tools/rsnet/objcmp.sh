#!/usr/bin/env bash
# The rsnet series costs nothing with its options off: every C file it
# changes (and every user of a header inline whose body it changes)
# compiles to the same code as on the pristine tree, and struct sock keeps
# its size. Run by series.sh (make series-check) after the series kernel's
# config is made:
#
#   objcmp.sh SERIES_TREE PRISTINE_COMMIT CONFIG
#
# SERIES_TREE is a git checkout of the series whose PRISTINE_COMMIT is
# the pristine tree; CONFIG the series kernel's .config. The options the
# series adds (every "config" line its patches add to a Kconfig) are
# turned off in it; the result is built in the series tree
# ($RSNET_CACHE/build-series-off) and in the pristine one
# ($RSNET_CACHE/build-pristine-off), each a cached O= directory where only
# the compared objects are built. The two configs must be the same but
# for the series' options.
#
# Compared, per object: the disassembly of every executable section
# (llvm-objdump -d -r: instructions, raw bytes and relocations), function
# by function, with section offsets left out (a function that moves is
# not a function that changed, one that changes is named); and the
# defined global symbols with their types and sizes (a new export or
# function shows there). One difference is let through, and logged: an
# immediate that is a source line number (the __LINE__ the kernel passes
# to lockdep_rcu_suspicious() and __might_sleep()), where the pristine
# value is an unchanged line of a file the series changes and the
# series' value is where that line is now (objcmp.py). Not compared: data, __bug_table and the other
# tables whose entries carry source line numbers (the series' added lines
# move those), and debug information (the kernel has none).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

tree=$1 pristine=$2 config=$3
ptree=$RSNET_CACHE/series-base
son=$RSNET_CACHE/build-series-off
pon=$RSNET_CACHE/build-pristine-off
out=$LOGDIR/objcmp
log=$LOGDIR/objcmp.log
: >"$log"
rm -rf "$out" && mkdir -p "$out"
[ "$(git -C "$ptree" rev-parse HEAD)" = "$pristine" ] || die "$ptree is not the pristine commit $pristine"
[ -z "$(git -C "$ptree" status --porcelain)" ] || die "$ptree has changes: it must be the pristine tree"

# The options of the series, off.
opts=$(git -C "$tree" diff "$pristine" HEAD -- '*Kconfig*' | sed -n 's/^+config \([A-Z0-9_]*\).*/\1/p' | sort -u)
[ -n "$opts" ] || die "the series adds no Kconfig option? (git diff of $tree)"
step "object check: options off: $(echo $opts)"
mkdir -p "$son" "$pon"
cp "$config" "$son/.config.new"
for o in $opts; do
	"$tree/scripts/config" --file "$son/.config.new" --disable "$o"
done
# Touch .config only when it changes, so that the builds stay incremental.
cmp -s "$son/.config.new" "$son/.config.in" 2>/dev/null || {
	cp "$son/.config.new" "$son/.config.in"
	cp "$son/.config.new" "$son/.config"
	cp "$son/.config.new" "$pon/.config"
}
rm -f "$son/.config.new"
MK=(make LLVM="$RSNET_LLVM" -j"$(nproc)")
"${MK[@]}" -C "$tree" O="$son" olddefconfig >>"$log" 2>&1 || die "olddefconfig (series, options off) failed" "$log"
"${MK[@]}" -C "$ptree" O="$pon" olddefconfig >>"$log" 2>&1 || die "olddefconfig (pristine) failed" "$log"
for o in $opts; do
	! grep -q "^CONFIG_$o=" "$son/.config" || die "CONFIG_$o is still set with the series' options off (selected by something else?)"
done
if ! diff <(grep -v '^#' "$pon/.config" | grep -v '^$') <(grep -v '^#' "$son/.config" | grep -v '^$') >"$out/config.diff"; then
	sed 's/^/    /' "$out/config.diff" | head -20 >&2
	die "the series with its options off configures differently from the pristine tree ($out/config.diff)"
fi

# The objects: every .c the series changes (outside rust/, whose crate and
# helpers exist only with CONFIG_RUST), and every .c that uses a header
# inline function whose body the series changes.
cfiles=$(git -C "$tree" diff --name-only --diff-filter=M "$pristine" HEAD -- '*.c' ':!rust' ':!samples' ':!tools')
inlines=$(git -C "$tree" diff -W "$pristine" HEAD -- '*.h' ':!rust' | python3 -c '
import re, sys
fn, changed = None, set()
for line in sys.stdin:
    if line.startswith(("diff ", "@@", "---", "+++")):
        fn = None
        continue
    body = line[1:]
    m = re.match(r"(static\s+(inline|__always_inline)\b.*?)\b(\w+)\s*\(", body)
    if m:
        fn = m.group(3)
    if fn and line[0] in "+-":
        changed.add(fn)
    if body.startswith("}"):
        fn = None
print("\n".join(sorted(changed)))
')
users=
for f in $inlines; do
	users+=" $(git -C "$tree" grep -lw -e "$f" -- '*.c' ':!rust' ':!samples' ':!tools' || true)"
done
srcs=$(printf '%s\n' $cfiles $users | sort -u)
objs=$(for s in $srcs; do echo "${s%.c}.o"; done)
step "object check: $(echo $srcs | wc -w) files (changed: $(echo $cfiles); users of $(echo $inlines))"
# Build those that the full series build built (the others are not in
# this config).
built=
for o in $objs; do
	if [ -f "$RSNET_CACHE/build-series/$o" ]; then
		built+=" $o"
	else
		echo "not in this config: $o" >>"$log"
	fi
done
start=$(date +%s)
# Both at once: before its first object each build prepares the tree,
# whose Rust crates (CONFIG_RUST stays on) one rustc at a time builds.
"${MK[@]}" -C "$tree" O="$son" $built >"$log.son" 2>&1 &
sonpid=$!
pon_rc=0
"${MK[@]}" -C "$ptree" O="$pon" $built >"$log.pon" 2>&1 || pon_rc=$?
son_rc=0
wait $sonpid || son_rc=$?
cat "$log.son" "$log.pon" >>"$log"
rm -f "$log.son" "$log.pon"
[ $son_rc = 0 ] || die "building the objects (series, options off) failed" "$log"
[ $pon_rc = 0 ] || die "building the objects (pristine) failed" "$log"
step "object check: built $(echo $built | wc -w) objects twice in $(( $(date +%s) - start ))s"

# One object as text: each executable section's functions, instructions
# and relocations, without the offsets (llvm-objdump prints the branch
# targets as <function+offset> too); then the global symbols.
dump() {
	"llvm-objdump$LLVM_SUFFIX" -d -r --no-leading-addr "$1" | sed -E '
		1,/file format/d
		s/^[[:space:]]*[0-9a-f]+: (R_)/\1/
		s/[0-9a-f]+ (<[^>]*>)/\1/g'
	echo "== global symbols"
	"llvm-nm$LLVM_SUFFIX" -S --defined-only --extern-only "$1" | awk '{ if (NF == 4) print $2, $3, $4; else print $2, $3 }' | sort
}
# Where each line of the files the series changes moved to (objcmp.py).
git -C "$tree" diff -U0 "$pristine" HEAD -- '*.c' '*.h' ':!rust' >"$out/lines.diff"
fails=0
for o in $built; do
	n=${o//\//_}
	dump "$pon/$o" >"$out/$n.pristine"
	dump "$son/$o" >"$out/$n.series"
	if cmp -s "$out/$n.pristine" "$out/$n.series"; then
		echo "same: $o" >>"$log"
		continue
	fi
	if fns=$(python3 "$RSNET_TOP/tools/rsnet/objcmp.py" "$out/lines.diff" "$out/$n.pristine" "$out/$n.series" 2>"$out/$n.note"); then
		echo "same but for source line numbers ($(cat "$out/$n.note")): $o" >>"$log"
		continue
	fi
	fails=$((fails + 1))
	echo "object check: $o differs from the pristine build in:" $fns >&2
	echo "    diff -u $out/$n.pristine $out/$n.series" >&2
done

# struct sock's size, as the compiler sees it in each tree: one line
# compiled with net/core/sock.o's own command.
sock_size() {
	local b=$1 cmd
	cmd=$(sed -n 's/^savedcmd_net\/core\/sock.o := //p' "$b/net/core/.sock.o.cmd" | sed 's/;.*//')
	[ -n "$cmd" ] || die "no command line for net/core/sock.o in $b"
	printf '#include <net/sock.h>\nchar rsnet_sizeof_sock[sizeof(struct sock)];\n' >"$b/rsnet-sizeof.c"
	cmd=${cmd%% -c -o *}
	(cd "$b" && eval "${cmd/-Wp,-MMD,net\/core\/.sock.o.d/} -c -o rsnet-sizeof.o rsnet-sizeof.c") >>"$log" 2>&1 ||
		die "compiling sizeof(struct sock) in $b failed" "$log"
	local hex
	hex=$("llvm-nm$LLVM_SUFFIX" -S "$b/rsnet-sizeof.o" | awk '$4 == "rsnet_sizeof_sock" {print $2}')
	[ -n "$hex" ] || die "no rsnet_sizeof_sock in $b/rsnet-sizeof.o"
	echo $((16#$hex))
}
if [ -f "$son/net/core/.sock.o.cmd" ]; then
	ps=$(sock_size "$pon")
	ss=$(sock_size "$son")
	if [ "$ps" != "$ss" ]; then
		echo "object check: sizeof(struct sock) is $ss with the series' options off, $ps without the series" >&2
		fails=$((fails + 1))
	else
		step "object check: sizeof(struct sock) = $ss in both"
	fi
fi
[ "$fails" = 0 ] || die "with its options off the series changes the kernel ($fails difference(s), dumps in $out)" "$log"
step "object check: $(echo $built | wc -w) objects identical to the pristine build with the options off"
