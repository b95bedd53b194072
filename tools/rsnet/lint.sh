#!/usr/bin/env bash
# make lint: rustfmt and clippy under the kernel's own settings and lint set,
# checkpatch on the patches and the C helpers, and the series as made by
# make series.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build=$(kbuild_dir)
src=$(ksrc_dir)
cd "$RSNET_TOP"
fail=0

step "rustfmt --check (kernel .rustfmt.toml)"
mapfile -t rs < <(git ls-files '*.rs')
rustfmt --check --edition 2021 --config-path "$src/.rustfmt.toml" "${rs[@]}" || fail=1

step "clippy: modules (CLIPPY=1, kernel lint set)"
CLIPPY=1 bash "$RSNET_TOP/tools/rsnet/modules.sh" || fail=1

if [ -z "${KDIR:-}" ]; then
	step "clippy: the rust/ overlay (kernel crate, CLIPPY=1)"
	log=$LOGDIR/clippy-kernel.log
	touch "$src/rust/kernel/lib.rs"
	if make -C "$src" O="$build" LLVM="$RSNET_LLVM" CLIPPY=1 rust/kernel.o >"$log" 2>&1 &&
	   ! grep -E '^(warning|error)(\[|:)' "$log" >/dev/null; then
		echo "clean"
	else
		grep -E -A8 '^(warning|error)(\[|:)' "$log" | head -60
		echo "[rsnet] clippy reports above; full log: $log"
		fail=1
	fi
	# Put the normally built crate back so the kernel image matches.
	touch "$src/rust/kernel/lib.rs"
	make -C "$src" O="$build" LLVM="$RSNET_LLVM" -j"$(nproc)" bzImage >>"$log" 2>&1 || fail=1
fi

step "checkpatch: patches/, rust/helpers/*.c, the test modules"
cp=("$src/scripts/checkpatch.pl" --no-tree --quiet --show-types --ignore FILE_PATH_CHANGES,SPDX_LICENSE_TAG,UNKNOWN_COMMIT_ID
	--typedefsfile "$RSNET_TOP/tools/rsnet/checkpatch.typedefs")
# Patches go in on stdin: checkpatch checks a file that git tracks as a
# source file, not as a patch.
for p in patches/*.patch patches/test/*.patch; do
	echo "$p"
	"${cp[@]}" - <"$p" || fail=1
done
"${cp[@]}" -f rust/helpers/*.c tools/testing/selftests/rsnet/*.c || fail=1

step "the series: make series (subjects, bodies, checkpatch --strict)"
bash "$RSNET_TOP/tools/rsnet/series.sh" || fail=1

[ $fail = 0 ] && step "lint clean" || die "lint found problems (see above)"
