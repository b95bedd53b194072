#!/usr/bin/env bash
# Prepare and build the rsnet test kernel, incrementally and only when needed.
#
#   pristine  $RSNET_CACHE/pristine-<ver>   $KSRC_PKG as unpacked
#   source    $RSNET_CACHE/src-<ver>        pristine + patches/ + rust/ overlay
#
# patches/*.patch are the series' edits (make series); patches/test/*.patch
# come after them and are the test kernel's own: what the tests need of the
# kernel that the series does not give its users.
#   build     $RSNET_CACHE/build-$KCONFIG   O= build directory
#
# The build directory records the hash of every input (source version,
# patches, overlay, config fragments, toolchain, this script); with the same
# hash nothing is run. When the hash changes only the files that patches/ and
# rust/ touch are rewritten, so make rebuilds what depends on them, not all.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -n "${KDIR:-}" ] && { step "KDIR=$KDIR: using your prepared kernel tree, not building one"; exit 0; }
[ -f "$KSRC_TARBALL" ] || die "$KSRC_TARBALL missing (tools/rsnet/deps.sh installs $KSRC_PKG)"

srcver=$(ksrc_version)
pristine=$RSNET_CACHE/pristine-$srcver
src=$(ksrc_dir)
build=$(kbuild_dir)
frags=("$RSNET_TOP/.config.fragment")
# The test kernels' own options (configs/check.fragment), not the
# benchmark kernel's.
case $KCONFIG in default | kasan) frags+=("$RSNET_TOP/configs/check.fragment") ;; esac
if [ "$KCONFIG" != default ]; then
	[ -f "$RSNET_TOP/configs/$KCONFIG.fragment" ] || die "unknown KCONFIG=$KCONFIG (no configs/$KCONFIG.fragment)"
	frags+=("$RSNET_TOP/configs/$KCONFIG.fragment")
fi
MAKE=(make -C "$src" O="$build" LLVM="$RSNET_LLVM" -j"$(nproc)")

# Every KCONFIG shares one source tree: one kernel.sh at a time (another
# clone of this repository may be building).
exec 9>"$RSNET_CACHE/.kernel.lock"
flock 9

key=$( {
	echo "$srcver $KCONFIG"
	rustc --version; "clang$LLVM_SUFFIX" --version | head -1; bindgen --version; echo "$LIBCLANG_PATH"
	cat "$0" "${frags[@]}"
	cd "$RSNET_TOP" && find patches rust -type f | LC_ALL=C sort | xargs -r sha256sum
} | sha256sum | cut -d' ' -f1)

if [ -f "$build/.rsnet-key" ] && [ "$(cat "$build/.rsnet-key")" = "$key" ] &&
   [ -f "$build/arch/x86/boot/bzImage" ]; then
	step "kernel up to date: $build (key ${key:0:12})"
	exit 0
fi

ksrc_unpack
if [ ! -f "$src/Makefile" ]; then
	rm -rf "$src" && cp -a "$pristine" "$src"
	: >"$src/.rsnet-touched"
fi

# Stage the new versions of every file patches/ or rust/ touch.
stage=$RSNET_CACHE/stage
rm -rf "$stage" && mkdir -p "$stage"
log=$LOGDIR/kernel-prepare.log
: >"$log"
touched=$(mktemp)
for p in "$RSNET_TOP"/patches/*.patch "$RSNET_TOP"/patches/test/*.patch; do
	[ -e "$p" ] || continue
	grep -E '^\+\+\+ ' "$p" | sed -E 's#^\+\+\+ [^/]*/##; s#\t.*##' >>"$touched"
done
(cd "$RSNET_TOP" && find rust -type f) >>"$touched"
while read -r f; do
	[ -z "$f" ] && continue
	mkdir -p "$stage/$(dirname "$f")"
	[ -f "$pristine/$f" ] && cp "$pristine/$f" "$stage/$f"
done < <(sort -u "$touched")
for p in "$RSNET_TOP"/patches/*.patch "$RSNET_TOP"/patches/test/*.patch; do
	[ -e "$p" ] || continue
	echo "== $p" >>"$log"
	patch -d "$stage" -p1 --no-backup-if-mismatch -s <"$p" >>"$log" 2>&1 ||
		die "patch $(basename "$p") does not apply to linux $srcver" "$log"
done
cp -r "$RSNET_TOP/rust/." "$stage/rust/"

# Sync into the source tree, touching only files whose content changed;
# files touched last time but not now go back to pristine.
while read -r f; do
	[ -z "$f" ] && continue
	if [ -f "$stage/$f" ]; then
		if ! cmp -s "$stage/$f" "$src/$f"; then
			mkdir -p "$src/$(dirname "$f")"
			cp "$stage/$f" "$src/$f"
		fi
	elif [ -f "$pristine/$f" ]; then
		cmp -s "$pristine/$f" "$src/$f" || cp "$pristine/$f" "$src/$f"
	else
		rm -f "$src/$f"
	fi
done < <(sort -u "$src/.rsnet-touched" "$touched")
sort -u "$touched" >"$src/.rsnet-touched"
rm -f "$touched"

kconfigure "$src" "$build" "${frags[@]}"

blog=$LOGDIR/kernel-build-$KCONFIG.log
step "building kernel in $build (log: $blog)"
start=$(date +%s)
"${MAKE[@]}" olddefconfig >"$blog" 2>&1 &&
make_progress "$(basename "$build")" "$blog" "${MAKE[@]}" bzImage modules || die "kernel build failed" "$blog"
echo "$key" >"$build/.rsnet-key"
step "kernel built in $(( $(date +%s) - start ))s"
