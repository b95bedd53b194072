#!/usr/bin/env bash
# Install what rsnet needs on a fresh Debian 12 machine (run as root).
# Idempotent and quiet when everything is already there.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# KDIR=...: the user prepared the kernel and its tools; install nothing.
[ -n "${KDIR:-}" ] && exit 0

# Debian packages: kernel source, LLVM toolchains (clang-22: rustc's LLVM
# major version, which CONFIG_RUST_INLINE_HELPERS needs), QEMU, kernel build tools,
# and the userspace the tests drive (iproute2, iperf3, ethtool, python venv,
# liburing for the zero-copy sender, ply and GitPython for checkpatch's
# SPDX check of the series).
pkgs=(linux-source-6.12 clang-22 lld-22 llvm-22 libclang-22-dev qemu-system-x86 flex
      bison bc libelf-dev libssl-dev cpio kmod iproute2 iperf3 ethtool
      python3-venv rsync socat busybox-static udev gcc liburing-dev
      python3-ply python3-git)
apt_need "${pkgs[@]}"

# Rust: the kernel builds `core` from source, and generates bindings with a
# pinned bindgen.
command -v rustc >/dev/null || die "rustc not found: install Rust with rustup first"
if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
	step "rustup component add rust-src"
	rustup component add rust-src >"$LOGDIR/rustup.log" 2>&1 || die "rustup component add rust-src failed" "$LOGDIR/rustup.log"
fi
if ! bindgen --version 2>/dev/null | grep -q "bindgen $BINDGEN_VERSION"; then
	step "cargo install --locked bindgen-cli@$BINDGEN_VERSION"
	cargo install --locked "bindgen-cli@$BINDGEN_VERSION" >"$LOGDIR/bindgen.log" 2>&1 ||
		die "cargo install bindgen-cli failed" "$LOGDIR/bindgen.log"
fi

# Python tools (virtme-ng, and ynl/tdc's libraries) in a venv of our own,
# on Debian's python3 (python3-venv above) whatever python3 comes first in
# PATH: the tests' Python runs in the emulated guest, where Debian's
# optimized build started in 0.78 s and pyenv's in 1.17 s.
PY=/usr/bin/python3
want=$(cat "$RSNET_TOP/tools/rsnet/requirements.txt"; echo "# python: $("$PY" --version 2>&1)")
if [ ! -x "$VENV/bin/vng" ] || [ "$want" != "$(cat "$VENV/.requirements" 2>/dev/null)" ]; then
	step "creating Python venv $VENV (virtme-ng, pyyaml, jsonschema)"
	"$PY" -m venv --clear "$VENV" >"$LOGDIR/venv.log" 2>&1 || die "$PY -m venv failed" "$LOGDIR/venv.log"
	"$VENV/bin/pip" install -q -r "$RSNET_TOP/tools/rsnet/requirements.txt" >>"$LOGDIR/venv.log" 2>&1 ||
		die "pip install into $VENV failed" "$LOGDIR/venv.log"
	echo "$want" >"$VENV/.requirements"
fi
