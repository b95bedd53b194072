#!/usr/bin/env bash
# Build rsnet's out-of-tree modules against the kernel build directory and
# make them loadable by name (modprobe NAME) in the virtme-ng VM.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build=$(kbuild_dir)
[ -f "$build/Module.symvers" ] || die "$build is not a built kernel tree (no Module.symvers); run 'make kernel' or set KDIR"
log=$LOGDIR/modules.log
# Objects built against another kernel tree (KCONFIG=bench after default,
# or KDIR) must go: Kbuild does not rebuild a Rust module for a new tree,
# and a module built for another configuration misreads every structure.
stamp=$RSNET_TOP/.rsnet-modules-kdir
if [ "$(cat "$stamp" 2>/dev/null)" != "$build" ]; then
	make -C "$build" M="$RSNET_TOP" LLVM="$RSNET_LLVM" clean >"$log" 2>&1 || die "module clean failed" "$log"
	echo "$build" >"$stamp"
fi
step "building modules (log: $log)"
make -C "$build" M="$RSNET_TOP" LLVM="$RSNET_LLVM" -j"$(nproc)" ${CLIPPY:+CLIPPY=1} modules >"$log" 2>&1 ||
	die "module build failed" "$log"
if grep -E '^(warning|error)(\[|:)' "$log" >/dev/null; then
	grep -E -A6 '^(warning|error)(\[|:)' "$log" | head -40 >&2
	die "module build produced warnings (the kernel's Rust lints must be clean)" "$log"
fi

# The oracle-only fq builds read fq_vclock's clock (see vclock.sh).
bash "$RSNET_TOP/tools/rsnet/vclock.sh" \
	"$RSNET_TOP/tools/testing/selftests/rsnet/sch_fq_vt.ko" \
	"$RSNET_TOP/net/sched/sch_fq_rs_vt.ko" >>"$log" 2>&1 ||
	die "redirecting the oracle modules' clock failed" "$log"

# One fq answers tc's request_module("net-sch-fq"): the kernel's own (C's
# sch_fq.ko on the test kernel, the Rust sch_fq_rs.ko on a kernel built
# with NET_SCH_FQ_RUST). The fq modules built here are the other
# implementation and the oracle's: none of them keeps the alias.
python3 "$RSNET_TOP/tools/rsnet/modalias.py" net-sch-fq \
	$(cd "$RSNET_TOP" && find net/sched tools/testing/selftests/rsnet -maxdepth 1 -name '*.ko' -printf "$RSNET_TOP/%p ") \
	>>"$log" 2>&1 || die "taking the net-sch-fq alias off the out-of-tree modules failed" "$log"

# The selftests' user-space helpers, run in the VM from the host's file
# system (it is the VM's root).
zc=$RSNET_TOP/tools/testing/selftests/rsnet/zc_xfer
if [ ! -x "$zc" ] || [ "$zc.c" -nt "$zc" ]; then
	gcc -O2 -Wall -Wextra -Werror -o "$zc" "$zc.c" -luring >>"$log" 2>&1 ||
		die "building $zc failed" "$log"
fi

for um in udp_many udp_sink udp_churn; do
	um=$RSNET_TOP/tools/testing/selftests/rsnet/$um
	if [ ! -x "$um" ] || [ "$um.c" -nt "$um" ]; then
		gcc -O2 -Wall -Wextra -Werror -o "$um" "$um.c" >>"$log" 2>&1 ||
			die "building $um failed" "$log"
	fi
done

# virtme-ng's module directory for this build, with our modules in extra/.
if [ -z "${KDIR:-}" ] || [ -w "$build" ]; then
	moddir=$build/.virtme_mods/lib/modules/0.0.0
	(cd "$build" && "$VENV/bin/virtme-prep-kdir-mods") >>"$log" 2>&1 ||
		die "virtme-prep-kdir-mods failed" "$log"
	rm -rf "$moddir/extra" && mkdir -p "$moddir/extra"
	(cd "$RSNET_TOP" && find . -name '*.ko' -not -path './.git/*' -not -path './.mutants/*') | while read -r ko; do
		cp "$RSNET_TOP/$ko" "$moddir/extra/"
	done
	depmod -ae -F "$build/System.map" -b "$build/.virtme_mods" 0.0.0 >>"$log" 2>&1 ||
		die "depmod failed" "$log"
	# At most one module answers "tc qdisc add ... fq" (none if fq is
	# built in), and it is the kernel's, not one of extra/.
	fqmods=$(awk '$2 == "net-sch-fq" {print $3}' "$moddir/modules.alias")
	case $(echo $fqmods) in
	'' | sch_fq | sch_fq_rs) ;;
	*) die "net-sch-fq: want the kernel's fq alone, modules.alias has: $(echo $fqmods)" ;;
	esac
	[ -z "$fqmods" ] || [ ! -e "$moddir/extra/$fqmods.ko" ] ||
		die "net-sch-fq is the alias of extra/$fqmods.ko, not of the kernel's fq"
fi
step "modules: $(cd "$RSNET_TOP" && find . -name '*.ko' -not -path './.git/*' -not -path './.mutants/*' -printf '%f ' )"
