# shellcheck shell=bash
# Common settings for the rsnet scripts: sourced, not run.

RSNET_TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# Everything built or downloaded lives outside the repository.
RSNET_CACHE=${RSNET_CACHE:-/var/cache/rsnet}
VENV=${RSNET_VENV:-$RSNET_CACHE/venv}
LOGDIR=${RSNET_LOGDIR:-$RSNET_CACHE/logs}
KCONFIG=${KCONFIG:-default}
# The test kernel: Debian's linux-source-7.2 (trixie-backports, pinned so
# that nothing else comes from there; tools/rsnet/deps.sh).
KSRC_PKG=${KSRC_PKG:-linux-source-7.2}
KSRC_TARBALL=${KSRC_TARBALL:-/usr/src/$KSRC_PKG.tar.xz}
# The LLVM the kernel is built with: rustc's major version (Debian's
# clang-22), so that the C helpers can be inlined into Rust
# (CONFIG_RUST_INLINE_HELPERS), and bindgen on its libclang, which needs
# bindgen 0.72.1 or later (the kernel warns of older ones with libclang 22).
BINDGEN_VERSION=0.72.1
RSNET_LLVM=${RSNET_LLVM:--22}
LLVM_VER=${RSNET_LLVM#-}
case $RSNET_LLVM in -*) LLVM_SUFFIX=$RSNET_LLVM ;; *) LLVM_SUFFIX= ;; esac
if [ -d "/usr/lib/llvm-$LLVM_VER/lib" ]; then
	export LIBCLANG_PATH=/usr/lib/llvm-$LLVM_VER/lib
fi
export PATH="$HOME/.cargo/bin:$PATH:/usr/sbin:/sbin"
mkdir -p "$RSNET_CACHE" "$LOGDIR"

step() { printf '[rsnet] %s\n' "$*" >&2; }
# die MESSAGE [LOG]: say what failed and where its full log is.
die() {
	printf '[rsnet] ERROR: %s\n' "$1" >&2
	if [ -n "${2:-}" ]; then
		[ -f "$2" ] && tail -n 25 "$2" | sed 's/^/    | /' >&2
		printf '[rsnet] full log: %s\n' "$2" >&2
	fi
	exit 1
}
# prepare: what every command that boots the VM needs first, in order: the
# Debian packages, Rust tools and venv (deps.sh), the kernel (kernel.sh,
# cached) and the modules (modules.sh). With KDIR set, deps.sh installs
# nothing and kernel.sh builds nothing (the user's tree is used as it is).
prepare() {
	local s
	for s in deps kernel modules; do
		bash "$RSNET_TOP/tools/rsnet/$s.sh" || exit
	done
}
# apt_need PKG...: install the Debian packages of the list that are missing.
apt_need() {
	local p missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -gt 0 ] || return 0
	step "installing Debian packages: ${missing[*]}"
	apt_update
	apt-get install -y -qq "${missing[@]}" >>"$LOGDIR/apt.log" 2>&1 ||
		die "apt-get install ${missing[*]} failed" "$LOGDIR/apt.log"
}
# apt_update: apt-get update, once per run.
apt_update() {
	[ -n "${APT_UPDATED:-}" ] && return 0
	need_root "apt-get update"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >"$LOGDIR/apt.log" 2>&1 || die "apt-get update failed" "$LOGDIR/apt.log"
	APT_UPDATED=1
}
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root: run as root"; }
# The version of the kernel source package, safe in a path (virtme-ng
# refuses some characters, e.g. the '~' of Debian versions).
ksrc_version() {
	local v
	v=$(dpkg-query -W -f='${Version}' "$KSRC_PKG" 2>/dev/null || stat -c %s-%Y "$KSRC_TARBALL")
	echo "${v//[^A-Za-z0-9._-]/_}"
}
# ksrc_unpack: the pristine tree, $RSNET_CACHE/pristine-<version>, unpacked
# from $KSRC_PKG once.
ksrc_unpack() {
	local pristine=$RSNET_CACHE/pristine-$(ksrc_version)
	[ -f "$pristine/Makefile" ] && return 0
	[ -f "$KSRC_TARBALL" ] || die "$KSRC_TARBALL missing (tools/rsnet/deps.sh installs $KSRC_PKG)"
	step "unpacking $KSRC_TARBALL"
	rm -rf "$pristine.tmp" && mkdir -p "$pristine.tmp"
	tar -C "$pristine.tmp" --strip-components=1 -xf "$KSRC_TARBALL"
	mv "$pristine.tmp" "$pristine"
}
# The prepared source tree (patches applied, rust/ overlaid).
ksrc_dir() {
	if [ -n "${KDIR:-}" ]; then echo "${RSNET_KSRC:-$KDIR}"; else echo "$RSNET_CACHE/src-$(ksrc_version)"; fi
}
# The kernel build directory for the chosen variant (KDIR= overrides it).
kbuild_dir() {
	if [ -n "${KDIR:-}" ]; then echo "$KDIR"; else echo "$RSNET_CACHE/build-$KCONFIG"; fi
}
# make_progress NAME LOG CMD...: run the kernel build CMD (a make of a
# build directory called NAME), its output appended to LOG, and print every
# RSNET_PROGRESS_S seconds (default 30) how many build steps (kbuild's
# "  CC  file.o" lines) it has done and, for a build from an empty
# directory, out of how many: the count of the last such build here, or
# else tools/rsnet/build-steps (measured on a cold build). A cold build
# records its count for the next one.
make_progress() {
	local name=$1 log=$2 pid n0 n total= cold=0 start now last rc=0
	shift 2
	local count=$RSNET_CACHE/build-steps-$name
	[ -e "$RSNET_CACHE/$name/vmlinux.o" ] || [ -e "$RSNET_CACHE/$name/vmlinux" ] || cold=1
	if [ $cold = 1 ]; then
		total=$(cat "$count" 2>/dev/null ||
			awk -v n="$name" '$1 == n { print $2 }' "$RSNET_TOP/tools/rsnet/build-steps")
	fi
	n0=$(grep -c '^  [A-Z]' "$log" 2>/dev/null || true)
	start=$(date +%s) last=$start
	"$@" >>"$log" 2>&1 &
	pid=$!
	# shellcheck disable=SC2064 # this build's pid, now
	trap "kill $pid 2>/dev/null" INT TERM
	while kill -0 $pid 2>/dev/null; do
		sleep 1
		now=$(date +%s)
		[ $((now - last)) -ge "${RSNET_PROGRESS_S:-30}" ] || continue
		last=$now
		n=$(( $(grep -c '^  [A-Z]' "$log" || true) - n0 ))
		if [ -n "$total" ] && [ "$total" -gt 0 ]; then
			step "  $name: $n of about $total build steps ($((n * 100 / total)) %), $((now - start)) s"
		else
			step "  $name: $n build steps, $((now - start)) s"
		fi
	done
	wait $pid || rc=$?
	trap - INT TERM
	if [ $rc = 0 ] && [ $cold = 1 ]; then
		echo $(( $(grep -c '^  [A-Z]' "$log" || true) - n0 )) >"$count"
	fi
	return $rc
}

# kconfigure SRC BUILD FRAGMENT...: BUILD/.config = tinyconfig + fragments,
# replaced only when it changes, so an unchanged configuration does not
# trigger a rebuild. Every option the fragments ask for must survive
# olddefconfig (a later fragment's setting, including "is not set",
# replaces an earlier one), unless KCONFIG_LAX=1: a patch of the series
# that comes before an option's Kconfig entry cannot have it.
kconfigure() {
	local src=$1 build=$2 tmpcfg bad
	shift 2
	local cfglog=$LOGDIR/kernel-config-$(basename "$build").log
	mkdir -p "$build"
	# One of its own: series-check and kernel.sh of another clone may
	# configure at the same time.
	tmpcfg=$(mktemp -d "$RSNET_CACHE/config-tmp.XXXXXX")
	{
		make -C "$src" O="$tmpcfg" LLVM="$RSNET_LLVM" tinyconfig &&
		"$src/scripts/kconfig/merge_config.sh" -m -O "$tmpcfg" "$tmpcfg/.config" "$@" &&
		make -C "$src" O="$tmpcfg" LLVM="$RSNET_LLVM" olddefconfig
	} >"$cfglog" 2>&1 || die "kernel configuration failed" "$cfglog"
	bad=$(cat "$@" |
		sed -nE 's/^# (CONFIG_[A-Z0-9_]+) is not set$/\1=n/p; s/^(CONFIG_[A-Z0-9_]+=.*)$/\1/p' |
		awk -F= '{ last[$1] = $0 } END { for (k in last) print last[k] }' | grep -v '=n$' |
		while read -r l; do grep -qxF "$l" "$tmpcfg/.config" || echo "$l"; done)
	if [ -n "$bad" ] && [ "${KCONFIG_LAX:-0}" != 1 ]; then
		{ echo "options not set as requested (dependency missing?):"; echo "$bad"; } >>"$cfglog"
		if echo "$bad" | grep -q CONFIG_RUST=; then
			make -C "$src" O="$tmpcfg" LLVM="$RSNET_LLVM" rustavailable >>"$cfglog" 2>&1 || true
		fi
		die "kernel config: $(echo "$bad" | tr '\n' ' ')" "$cfglog"
	fi
	cmp -s "$tmpcfg/.config" "$build/.config" || cp "$tmpcfg/.config" "$build/.config"
	rm -rf "$tmpcfg"
}
