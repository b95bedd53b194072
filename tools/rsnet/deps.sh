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
# The test kernel's source comes from trixie-backports and iproute2 6.15 (tc
# with offload_horizon, weights, priomap) from bookworm-backports. Both
# suites are added with a pin that admits only those packages, so nothing
# else on the Debian 12 host changes; apt checks the signatures.
backports_setup() {
	local list=/etc/apt/sources.list.d/rsnet-backports.sources
	local pref=/etc/apt/preferences.d/rsnet-backports
	local want_list want_pref
	want_list="Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie-backports bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
	want_pref="Package: *
Pin: release n=trixie-backports
Pin-Priority: -1

Package: $KSRC_PKG
Pin: release n=trixie-backports
Pin-Priority: 500

Package: *
Pin: release n=bookworm-backports
Pin-Priority: 100

Package: iproute2
Pin: release n=bookworm-backports
Pin-Priority: 500"
	if [ "$(cat "$list" 2>/dev/null)" != "$want_list" ] || [ "$(cat "$pref" 2>/dev/null)" != "$want_pref" ]; then
		need_root "adding the backports sources"
		step "adding trixie-backports ($KSRC_PKG only) and bookworm-backports (iproute2 only) to apt"
		echo "$want_list" >"$list"
		echo "$want_pref" >"$pref"
		APT_UPDATED=
	fi
}
backports_setup
# Backports keep only the newest kernel of a line: say what there is
# instead of failing somewhere in the build.
if ! dpkg-query -W -f='${Status}' "$KSRC_PKG" 2>/dev/null | grep -q 'ok installed'; then
	apt_update
	if ! apt-cache show "$KSRC_PKG" >/dev/null 2>&1; then
		found=$(apt-cache search --names-only '^linux-source-[0-9.]+$' | cut -d' ' -f1 | sort -V | tr '\n' ' ')
		die "$KSRC_PKG is not in the Debian archive any more; found: ${found:-none}. Set KSRC_PKG= to one of them (rsnet is held against 7.2's C)."
	fi
fi
iproute_ver=$(dpkg-query -W -f='${Version}' iproute2 2>/dev/null || true)
if [ -z "$iproute_ver" ] || dpkg --compare-versions "$iproute_ver" lt 6.15; then
	apt_update
	step "installing iproute2 from bookworm-backports (6.15: offload_horizon, weights, priomap)"
	apt-get install -y -qq iproute2 >>"$LOGDIR/apt.log" 2>&1 || die "apt-get install iproute2 failed" "$LOGDIR/apt.log"
fi

# QEMU from bookworm-backports (10.0): the machine image may carry its
# qemu-utils already, which Debian 12's qemu-system 7.2 cannot sit beside.
if ! dpkg-query -W -f='${Status}' qemu-system-x86 2>/dev/null | grep -q 'ok installed'; then
	apt_update
	step "installing qemu-system-x86 from bookworm-backports"
	apt-get install -y -qq -t bookworm-backports qemu-system-x86 >>"$LOGDIR/apt.log" 2>&1 ||
		die "apt-get install qemu-system-x86 failed" "$LOGDIR/apt.log"
fi

pkgs=("$KSRC_PKG" clang-22 lld-22 llvm-22 libclang-22-dev flex
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
	step "creating Python venv $VENV (virtme-ng, pyyaml, jsonschema, scapy)"
	"$PY" -m venv --clear "$VENV" >"$LOGDIR/venv.log" 2>&1 || die "$PY -m venv failed" "$LOGDIR/venv.log"
	"$VENV/bin/pip" install -q -r "$RSNET_TOP/tools/rsnet/requirements.txt" >>"$LOGDIR/venv.log" 2>&1 ||
		die "pip install into $VENV failed" "$LOGDIR/venv.log"
	echo "$want" >"$VENV/.requirements"
fi
# Every module of the venv byte-compiled here: the guest sees the venv
# read-only and cannot cache what it compiles, and pip left scapy (built
# from its sdist) without bytecode, so each `import scapy.all` in the guest
# (tdc's scapy plugin) compiled its 332 files again: 37 to 42 s under TCG
# against 9 to 13 s from bytecode. Checks only timestamps when up to date.
"$VENV/bin/python" -m compileall -q -j 0 "$VENV/lib" >>"$LOGDIR/venv.log" 2>&1 ||
	die "byte-compiling $VENV failed" "$LOGDIR/venv.log"
