#!/usr/bin/env bash
# make series: the rsnet series as git format-patch output, made from this
# repository onto the pristine Debian 7.2 tree (see patches/series).
# make series-check: that series applied and built in-tree, patch by patch
# (EACH=1, for x86-64 and arm64; EACH_FROM=N from patch N), the objects
# of the C files it changes compared with the pristine tree's with its
# options off (objcmp.sh), also cross-built for arm64 (ARM64=0 skips that) and for
# 32-bit ARM without jump labels or multiuser support (ARM32=0), and the
# whole suite run on it (SUITE=0 skips the suite).
#
#   $RSNET_CACHE/series-base   git: the pristine tree, one commit
#   $RSNET_CACHE/series-work   git: where the series is made (reset each time)
#   $RSNET_CACHE/series-src    git: the series checked out, the tree built
#   $RSNET_CACHE/build-series  its O= build directory
#   $RSNET_CACHE/build-series-arm64  the same, cross-built for arm64
#   $RSNET_CACHE/build-series-arm32  a small 32-bit ARM kernel with the series
#   $RSNET_CACHE/build-series-off, build-pristine-off  objcmp.sh's builds
#   $SERIES_OUT (default $RSNET_CACHE/series)  a directory a part (patches/parts),
#                each with its patches and cover letter
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-series}
base=$RSNET_CACHE/series-base
work=$RSNET_CACHE/series-work
tree=$RSNET_CACHE/series-src
build=$RSNET_CACHE/build-series
out=${SERIES_OUT:-$RSNET_CACHE/series}
list=$RSNET_TOP/patches/series
log=$LOGDIR/series.log
: >"$log"
git() { command git -c advice.detachedHead=false -c core.autocrlf=false "$@"; }

# The series is authored and signed off by whoever makes it: their git
# identity (user.name, user.email), not the repository's placeholder.
# MAINTAINERS keeps a placeholder entry for them to fill in.
name=$(git -C "$RSNET_TOP" config user.name || true)
email=$(git -C "$RSNET_TOP" config user.email || true)
[ -n "$name" ] && [ -n "$email" ] ||
	die "make series signs the patches as you: set git config user.name and user.email first"
export GIT_AUTHOR_NAME=$name GIT_AUTHOR_EMAIL=$email
export GIT_COMMITTER_NAME=$name GIT_COMMITTER_EMAIL=$email

# The manifest: every patch of patches/ once, and every file the kernel
# tree gets from this repository (rust/, the modules, the sample) once.
# patches/test/ is not the series: the test kernel's own edits
# (tools/rsnet/kernel.sh applies them after the series').
entries=$(grep -vE '^(#|$)' "$list")
want=$( { (cd "$RSNET_TOP/patches" && ls ./*.patch | sed 's#^\./##');
	(cd "$RSNET_TOP" && find rust -type f; ls net/*/*.rs samples/rust/*.rs) |
	grep -vxF -e net/sched/sch_fq_rs_vt.rs -e net/core/page_pool_rs_nonuma.rs; } | LC_ALL=C sort)
have=$(echo "$entries" | tr -s ' \t' '\n\n' | grep -v '^$' | LC_ALL=C sort)
if [ "$want" != "$have" ]; then
	diff <(echo "$want") <(echo "$have") | sed 's/^</missing from patches\/series:/; s/^>/not in this repository:/' |
		grep -v '^[0-9]' >&2 || true
	die "patches/series does not list each patch and each added file exactly once"
fi

# The pristine tree as a git repository, once.
if [ ! -d "$base/.git" ]; then
	ksrc_unpack
	step "making $base from the pristine tree"
	rm -rf "$base.tmp" && cp -a "$RSNET_CACHE/pristine-$(ksrc_version)" "$base.tmp"
	# Debian's top-level .gitignore ignores everything at the top: -f.
	(cd "$base.tmp" && git init -q -b pristine && git add -f -A . &&
		GIT_AUTHOR_DATE="2000-01-01 00:00:00 +0000" GIT_COMMITTER_DATE="2000-01-01 00:00:00 +0000" git commit -q -m "Linux $(ksrc_version) ($KSRC_PKG)") >>"$log" 2>&1 ||
		die "making the pristine git tree failed" "$log"
	mv "$base.tmp" "$base"
fi
[ -d "$work/.git" ] || git clone -q --shared "$base" "$work" >>"$log" 2>&1
pristine=$(git -C "$base" rev-parse HEAD)

step "making the series on $(git -C "$base" log -1 --format=%s)"
(
	cd "$work"
	git am --abort >/dev/null 2>&1 || true
	git checkout -q -f -B rsnet "$pristine"
	git clean -q -fdx
	# Dates: the first patch's, a minute later for each next one, author
	# and committer alike: the same inputs, the same commits, in order.
	t0=$(date -d "$(sed -n 's/^Date: //p' "$RSNET_TOP/patches/$(echo "$entries" | head -1 | cut -d' ' -f1)" | head -1)" +%s)
	i=0
	echo "$entries" | while read -r patch files; do
		export GIT_AUTHOR_DATE="@$((t0 + 60 * i)) +0000" GIT_COMMITTER_DATE="@$((t0 + 60 * i)) +0000"
		i=$((i + 1))
		git am -q "$RSNET_TOP/patches/$patch" ||
			{ echo "git am $patch failed"; exit 1; }
		for f in $files; do
			mkdir -p "$(dirname "$f")"
			cp --remove-destination "$RSNET_TOP/$f" "$f"
			git add -f "$f"
		done
		# Authored and signed off by the maker (the patches carry the
		# placeholder rsnet <rsnet@localhost>).
		msg=$(git log -1 --format=%B)
		msg=${msg//"Signed-off-by: rsnet <rsnet@localhost>"/"Signed-off-by: $name <$email>"}
		printf '%s\n' "$msg" | git commit -q --amend --reset-author -F -
		git log -1 --format=%B | grep -qxF "Signed-off-by: $name <$email>" ||
			{ echo "$patch: no Signed-off-by of $name <$email>"; exit 1; }
	done
) >>"$log" 2>&1 || die "the series does not apply" "$log"

# The parts (patches/parts): one thread an audience, each with its cover
# letter, covering the patches once, in order.
n=$(git -C "$work" rev-list --count "$pristine..rsnet")
mapfile -t commits < <(git -C "$work" rev-list --reverse "$pristine..rsnet")
parts=$(grep -vE '^(#|$)' "$RSNET_TOP/patches/parts")
next=1
while read -r part first last prefix; do
	[ "$first" = "$next" ] && [ "$last" -ge "$first" ] ||
		die "patches/parts: part $part starts at $first, not at patch $next"
	[ -f "$RSNET_TOP/patches/cover-letter.$part" ] || die "no patches/cover-letter.$part"
	next=$((last + 1))
done <<<"$parts"
[ "$next" = $((n + 1)) ] || die "patches/parts covers patches 1 to $((next - 1)), not 1 to $n"

rm -rf "$out" && mkdir -p "$out"
while read -r part first last prefix; do
	from=$pristine
	[ "$first" = 1 ] || from=${commits[first - 2]}
	git -C "$work" format-patch -q --cover-letter --no-signature --subject-prefix="PATCH $prefix" \
		-o "$out/$part" "$from..${commits[last - 1]}" >>"$log" 2>&1 ||
		die "git format-patch of $part failed" "$log"
	# The cover letter: patches/cover-letter.PART (subject, then body),
	# with the benchmark tables of Documentation/rsnet/benchmarks.rst
	# whose series-table marker names a @TABLE NAME@ in it.
	python3 - "$out/$part/0000-cover-letter.patch" "$RSNET_TOP/patches/cover-letter.$part" \
		"$RSNET_TOP/Documentation/rsnet/benchmarks.rst" <<'PY' || die "the cover letter of $part"
import re, sys
path, tmpl, bench = sys.argv[1:4]
subject, _, body = open(tmpl).read().partition('\n\n')
rst = open(bench).read()
blocks = re.findall(r'^\.\. series-table-start (\S+)\n(.*?)^\.\. series-table-end\n', rst, re.S | re.M)
def plain(block):
    out = []
    for line in block.strip('\n').split('\n'):
        line = line[2:] if line.startswith('  ') else line
        out.append(re.sub(r'::$', ':', line).replace('``', ''))
    return '\n'.join(out)
def table(m):
    found = [plain(b) for name, b in blocks if name == m.group(1)]
    if not found:
        sys.exit('benchmarks.rst has no series-table-start %s' % m.group(1))
    return '\n\n'.join(found)
body = re.sub(r'@TABLE (\S+)@', table, body)
s = open(path).read()
s = s.replace('*** SUBJECT HERE ***', subject.strip()).replace('*** BLURB HERE ***', body.rstrip())
open(path, 'w').write(s)
PY
done <<<"$parts"

# Each patch: a subject of at most 75 characters, a body that says why,
# and checkpatch --strict clean.
fails=0 i=0
for c in "${commits[@]}"; do
	i=$((i + 1))
	# Its part, and its number there.
	read -r part first _ < <(awk -v i=$i '$2 <= i && i <= $3' <<<"$parts")
	p=$(ls "$out/$part/$(printf %04d $((i - first + 1)))"-*.patch)
	subj=$(git -C "$work" log -1 --format=%s "$c")
	body=$(git -C "$work" log -1 --format=%b "$c" | grep -v '^Signed-off-by:' | grep -c . || true)
	[ ${#subj} -le 75 ] || { echo "$(basename "$p"): subject of ${#subj} characters" >&2; fails=$((fails + 1)); }
	[ "$body" -ge 2 ] || { echo "$(basename "$p"): no body" >&2; fails=$((fails + 1)); }
	# Quiet, it prints nothing for a clean patch. Its SPDX check runs
	# python3 from PATH, and needs Debian's (with ply and GitPython).
	# The pristine tree is one commit, without the history that the
	# upstream commits the messages cite are in: their ids are not
	# looked up (UNKNOWN_COMMIT_ID); their form is still checked.
	if ! (cd "$work" && PATH=/usr/bin:$PATH ./scripts/checkpatch.pl --strict --quiet --show-types \
		--ignore UNKNOWN_COMMIT_ID --typedefsfile "$RSNET_TOP/tools/rsnet/checkpatch.typedefs" "$p") >"$p.checkpatch" 2>&1 ||
		[ -s "$p.checkpatch" ]; then
		echo "$(basename "$p"): checkpatch --strict:" >&2
		sed 's/^/    /' "$p.checkpatch" | head -20 >&2
		fails=$((fails + 1))
	fi
	rm -f "$p.checkpatch"
done
rm -f "$work"/.checkpatch-camelcase.*
# What the series exports is for GPL modules only, as the Rust modules of
# the series are.
exports=$(git -C "$work" diff "$pristine" rsnet | grep -E '^\+.*\bEXPORT_SYMBOL(_NS)?\(' || true)
if [ -n "$exports" ]; then
	echo "exports that are not EXPORT_SYMBOL_GPL:" >&2
	echo "$exports" | sed 's/^/    /' >&2
	fails=$((fails + 1))
fi
[ "$fails" = 0 ] || die "$fails patch(es) of the series are not clean"
step "series: $n patches in $(wc -l <<<"$parts") parts, each with a cover letter, in $out/PART (git am them onto linux 7.2, part by part)"
[ "$mode" = check ] || exit 0

# The series as a kernel tree. Moving its checkout from the last series
# to this one rewrites only the files that differ, so the build stays
# incremental.
[ -d "$tree/.git" ] || git clone -q --shared "$base" "$tree" >>"$log" 2>&1
git -C "$tree" fetch -q "$work" rsnet >>"$log" 2>&1
git -C "$tree" checkout -q -f --detach FETCH_HEAD
frags=("$RSNET_TOP/.config.fragment" "$RSNET_TOP/configs/series.fragment")
MAKE=(make -C "$tree" O="$build" LLVM="$RSNET_LLVM" -j"$(nproc)")
blog=$LOGDIR/kernel-build-series.log
: >"$blog"
abuild=$RSNET_CACHE/build-series-arm64
AMAKE=(make -C "$tree" O="$abuild" ARCH=arm64 LLVM="$RSNET_LLVM" -j"$(nproc)")
ablog=$LOGDIR/kernel-build-series-arm64.log
: >"$ablog"

# Each build below depends only on the tree it builds (a git tree id:
# the series' content, patch by patch), the configuration fragments, the
# toolchain and these scripts. One that passed is recorded under that key,
# on this machine ($okdir) and in the repository (tools/rsnet/series-built,
# one line a build: what, tree, toolchain-and-scripts key, when), and a
# build whose key is recorded is not run again: what it proved holds for
# the same content, on a fresh machine too. Any change to the series, the
# fragments, the toolchain or these scripts is a new key, built anew.
# RECHECK=1 runs every build anyway.
okdir=$RSNET_CACHE/series-ok
record=$RSNET_TOP/tools/rsnet/series-built
mkdir -p "$okdir"
toolkey=$( {
	rustc --version; "clang$LLVM_SUFFIX" --version | head -1; bindgen --version; echo "$RSNET_LLVM"
	cd "$RSNET_TOP" && cat tools/rsnet/series.sh tools/rsnet/lib.sh tools/rsnet/objcmp.sh \
		tools/rsnet/objcmp.py .config.fragment configs/series.fragment configs/arm32.fragment
} | sha256sum | cut -c1-16)
# passed_before WHAT COMMIT: WHAT (x86, arm64, arm32, each-x86-NN,
# each-arm64-NN for patch NN) passed on COMMIT's tree before, here or
# where the record was made; says so, with when.
passed_before() {
	local key when
	key="$1 $(git -C "$tree" rev-parse "$2^{tree}") $toolkey"
	[ "${RECHECK:-0}" != 1 ] || return 1
	when=$(cat "$okdir/${key// /-}" 2>/dev/null ||
		awk -v k="$key" '$1 " " $2 " " $3 == k { print $4; exit }' "$record" 2>/dev/null)
	[ -n "$when" ] || return 1
	step "  $1: passed on this tree at $when (a recorded result of the same content)"
	summary+=("$1 recorded")
}
passed() {
	local key when
	key="$1 $(git -C "$tree" rev-parse "$2^{tree}") $toolkey"
	when=$(date -u +%FT%TZ)
	echo "$when" >"$okdir/${key// /-}"
	# The record keeps the results of the current series only: a line
	# for another tree or key of the same build goes.
	{ grep -v "^$1 " "$record" 2>/dev/null || true; echo "$key $when"; } | LC_ALL=C sort -k1,1 -s >"$record.tmp"
	mv "$record.tmp" "$record"
	summary+=("$1 built")
}
summary=()
final=$(git -C "$tree" rev-parse HEAD)
if [ "${EACH:-0}" = 1 ]; then
	# Every patch builds on its own, in order, as git rebase --exec would
	# build them (the options a patch does not know yet are left out),
	# for x86-64 (unless EACH_X86=0) and (unless ARM64=0) for arm64.
	# EACH_FROM=N starts at patch N (the ones before built already).
	i=$((${EACH_FROM:-1} - 1))
	for c in $(git -C "$tree" rev-list --reverse "$pristine..$final" | tail -n +"${EACH_FROM:-1}"); do
		i=$((i + 1)) nn=$(printf %02d $i)
		git -C "$tree" checkout -q -f --detach "$c"
		what=$(git -C "$tree" log -1 --format='%h %s' "$c")
		step "building patch $what"
		if [ "${EACH_X86:-1}" = 1 ] && ! passed_before "each-x86-$nn" "$c"; then
			start=$(date +%s)
			KCONFIG_LAX=1 kconfigure "$tree" "$build" "${frags[@]}"
			make_progress build-series "$blog" "${MAKE[@]}" olddefconfig bzImage modules ||
				die "patch $what does not build" "$blog"
			passed "each-x86-$nn" "$c"
			step "  built in $(( $(date +%s) - start ))s"
		fi
		[ "${ARM64:-1}" = 1 ] || continue
		passed_before "each-arm64-$nn" "$c" && continue
		start=$(date +%s)
		ARCH=arm64 KCONFIG_LAX=1 kconfigure "$tree" "$abuild" "${frags[@]}"
		make_progress build-series-arm64 "$ablog" "${AMAKE[@]}" olddefconfig Image modules ||
			die "patch $what does not build for arm64" "$ablog"
		passed "each-arm64-$nn" "$c"
		step "  built for arm64 in $(( $(date +%s) - start ))s"
	done
	git -C "$tree" checkout -q -f --detach "$final"
fi
# The three kernels are built at once, each in the background: a
# kernel build spends minutes with one core busy (the Rust crates, which
# rustc builds one at a time before any C file, and the final links), and
# the others fill the other core. Each records its result here once all
# are done; the first that failed says why.
x86() {
	kconfigure "$tree" "$build" "${frags[@]}"
	step "building the series kernel in $build (log: $blog)"
	start=$(date +%s)
	make_progress build-series "$blog" "${MAKE[@]}" olddefconfig bzImage modules || die "the series kernel does not build" "$blog"
	step "series kernel built in $(( $(date +%s) - start ))s"
	for m in net/sched/sch_fq_rs.ko net/core/page_pool_rs.ko net/ipv4/tcp_tx_skb_cache.ko samples/rust/rust_sysctl.ko; do
		[ -f "$build/$m" ] || die "the series kernel has no in-tree $m" "$blog"
	done
	# One fq per kernel: NET_SCH_FQ_RUST builds the Rust one for
	# NET_SCH_FQ, not C's, and the one built is what tc's
	# request_module("net-sch-fq") loads.
	! grep -qx 'net/sched/sch_fq.o' "$build/modules.order" ||
		die "the series kernel with NET_SCH_FQ_RUST built C's sch_fq too"
	modinfo -F alias "$build/net/sched/sch_fq_rs.ko" | grep -qx net-sch-fq ||
		die "the series kernel's sch_fq_rs.ko has no net-sch-fq alias: tc would not load it"
	# With the series' options off, its C changes compile to nothing.
	bash "$RSNET_TOP/tools/rsnet/objcmp.sh" "$tree" "$pristine" "$build/.config"
}
# The same tree for arm64 (cross, with LLVM; built, not booted): without
# CFI it has no HAVE_STATIC_CALL, so the page_pool hook's static calls are
# the generic indirect ones there. ARM64=0 skips it.
arm64() {
	# The x86 options of the test kernel do not exist there: lax, then
	# each rsnet option checked by hand.
	ARCH=arm64 KCONFIG_LAX=1 kconfigure "$tree" "$abuild" "${frags[@]}"
	for o in CONFIG_RUST=y CONFIG_NET_SCH_FQ_RUST=y CONFIG_PAGE_POOL_RUST=m \
		CONFIG_TCP_TX_SKB_CACHE=m CONFIG_SAMPLE_RUST_SYSCTL=m; do
		grep -qxF "$o" "$abuild/.config" || die "arm64 config: $o not set (dependency missing?)" "$LOGDIR/kernel-config-build-series-arm64.log"
	done
	! grep -q '^CONFIG_HAVE_STATIC_CALL=y' "$abuild/.config" ||
		die "the arm64 config has HAVE_STATIC_CALL: the generic static calls are not built"
	step "building the series kernel for arm64 in $abuild (log: $ablog)"
	start=$(date +%s)
	make_progress build-series-arm64 "$ablog" "${AMAKE[@]}" olddefconfig Image modules ||
		die "the series kernel does not build for arm64" "$ablog"
	for m in net/sched/sch_fq_rs.ko net/core/page_pool_rs.ko net/ipv4/tcp_tx_skb_cache.ko; do
		[ -f "$abuild/$m" ] || die "the arm64 series kernel has no in-tree $m" "$ablog"
	done
	step "series kernel built for arm64 in $(( $(date +%s) - start ))s"
}
# A 32-bit kernel, without jump labels or multiuser support
# (configs/arm32.fragment): the crate and the modules built where
# unsigned long is 32 bits and static_key_enable() and capable() are
# inline. ARM32=0 skips it.
arm32() {
	local a32=$RSNET_CACHE/build-series-arm32 a32log=$LOGDIR/kernel-build-series-arm32.log
	ARCH=arm kconfigure "$tree" "$a32" "$RSNET_TOP/configs/arm32.fragment"
	step "building the series kernel for 32-bit ARM in $a32 (log: $a32log)"
	start=$(date +%s)
	: >"$a32log"
	make_progress build-series-arm32 "$a32log" make -C "$tree" O="$a32" ARCH=arm LLVM="$RSNET_LLVM" -j"$(nproc)" olddefconfig zImage modules ||
		die "the series kernel does not build for 32-bit ARM" "$a32log"
	for m in net/core/page_pool_rs.ko net/ipv4/tcp_tx_skb_cache.ko samples/rust/rust_sysctl.ko; do
		[ -f "$a32/$m" ] || die "the 32-bit ARM series kernel has no $m" "$a32log"
	done
	step "series kernel built for 32-bit ARM in $(( $(date +%s) - start ))s"
}
builds=() pids=()
# The suite runs on the x86-64 build: it must be there, not only its result.
if [ "${SUITE:-1}" != 0 ] || ! passed_before x86 "$final"; then
	builds+=(x86)
fi
[ "${ARM64:-1}" = 1 ] && ! passed_before arm64 "$final" && builds+=(arm64)
[ "${ARM32:-1}" = 1 ] && ! passed_before arm32 "$final" && builds+=(arm32)
for j in "${builds[@]}"; do
	"$j" &
	pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null' INT TERM
failed=
for i in "${!builds[@]}"; do
	if wait "${pids[$i]}"; then
		passed "${builds[$i]}" "$final"
	else
		failed+=" ${builds[$i]}"
	fi
done
trap - INT TERM
[ -z "$failed" ] || die "series builds that failed:$failed (each said why above)"
# One line of what was built and what a result of the same tree stood
# for (.ci/run quotes it).
step "series builds: $(printf '%s, ' "${summary[@]}" | sed 's/, $//')"
[ "${SUITE:-1}" = 0 ] && exit 0
step "the suite on the series kernel (KDIR=$build)"
KDIR=$build RSNET_KSRC=$tree bash "$RSNET_TOP/tools/rsnet/check.sh"
