#!/usr/bin/env bash
# Boot the benchmark kernel in a QEMU guest that repeats exactly, for the
# rows of make bench that the cache model measures (the qdisc and the pool
# alone: fq_bench, page_pool_bench):
#
#   detvm.sh OUTDIR ROUNDS BENCH CPUS MARK
#
# runs guest-bench.sh ROUNDS BENCH marked in a guest of CPUS (1 or 2)
# vCPUs, its cache-model regions numbered from MARK, and writes the files
# it leaves in its results directory to OUTDIR, the console to
# OUTDIR/det-console.log. RSNET_PLUGIN loads a TCG plugin (the cache model).
#
# Why not vm.sh: under -icount shift=0 the guest's clock is its instruction
# count, but virtme-ng's root is the host's file system over 9p, whose
# requests QEMU's worker threads complete at host-timed points of the
# guest's instruction stream. Interrupts then land at other places and
# pages are allocated at other physical addresses each run. This guest has
# no device that completes on the host's time: its root is an initramfs
# (busybox, bash, tc, ip, kmod, the modules and the scripts), its output
# goes through two 16550 UARTs (console and data), the RTC counts guest time
# from a fixed date, and the CPU has no RDRAND/RDSEED, so the kernel's
# entropy (boot_id, hash seeds, slab and socket addresses) comes from
# icount-derived timestamps alone. Two boots run the same instructions,
# with the same physical addresses, in the same order.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

out=$1 rounds=$2 bench=$3 cpus=$4 mark=$5
# They go on the kernel's command line, one word each.
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not '$rounds'"
[[ $bench =~ ^[a-z_,]+$ ]] || die "BENCH must be parts separated by commas, not '$bench'"
[[ $mark =~ ^[0-9]+$ ]] || die "MARK must be a number, not '$mark'"
# Two vCPUs, as vm.sh's benchmark VM: 2 sockets, a NUMA node (1 GiB) each,
# for page_pool's cross-CPU and far-node paths. One for the rows that need
# no other CPU: with two, runs long in host time (the cache model slows the
# guest about six times) diverged after some minutes, from the first time
# both vCPUs idled (fqscale's sleep), so something in QEMU's interleaving
# of the two on its one round-robin thread still follows the host's clock;
# with one there is nothing to interleave, and two runs agree.
case $cpus in
1) smp=(-smp 1 -m 2G) ;;
2) smp=(-smp 2,sockets=2,cores=1,threads=1 -m 2G
	-object memory-backend-ram,id=m0,size=1G -object memory-backend-ram,id=m1,size=1G
	-numa node,memdev=m0,cpus=0 -numa node,memdev=m1,cpus=1) ;;
*) die "CPUS must be 1 or 2, not '$cpus'" ;;
esac
build=$(kbuild_dir)
ksrc=$(ksrc_dir)
[ -f "$build/arch/x86/boot/bzImage" ] || die "no kernel image in $build: run 'make kernel'"
moddir=$build/.virtme_mods/lib/modules/0.0.0
[ -f "$moddir/modules.dep" ] && [ -d "$moddir/extra" ] || die "no modules for $build: run modules.sh"
release=$(cat "$build/include/config/kernel.release")
# A directory of this run's own: two runs may overlap.
mkdir -p "$RSNET_CACHE/detvm"
work=$(mktemp -d "$RSNET_CACHE/detvm/run.XXXXXX")
# QEMU's own messages outlive the directory, for a failed run.
trap 'rc=$?; [ $rc -eq 0 ] || { mkdir -p "$out" && cp -f "$log" "$out/det-qemu.log"; } 2>/dev/null; rm -rf "$work"' EXIT
log=$work/qemu.log

# --- the initramfs ------------------------------------------------------
stage=$work/root
mkdir -p "$stage"/{bin,sbin,lib64,proc,sys,dev,tmp,etc/modprobe.d,results}
cp /usr/bin/busybox "$stage/bin/"
for a in sh awk sed grep cat cp mv rm ln mkdir mktemp mkfifo sort tr seq sleep sync \
	head tail tee wc cut printf stty mount poweroff ls uname env id dirname basename; do
	ln -s busybox "$stage/bin/$a"
done
# Real tools where busybox's differ: bash (the scripts'), iproute2's tc
# (every fq option) and ip, kmod's modprobe (modprobe.d "install", which
# fq_use_rust relies on), util-linux's dmesg (-C).
for b in /bin/bash /usr/sbin/tc /usr/sbin/ip /usr/bin/kmod /usr/bin/dmesg /bin/false; do
	[ -x "$b" ] || die "$b is missing (deps.sh installs it)"
	cp "$b" "$stage/bin/"
	ldd "$b" | awk '/not found/ {print "missing:" $1; next} /=> \// {print $3} /^\t\/lib64\// {print $1}'
done | sort -u >"$work/libs"
grep '^missing:' "$work/libs" && die "a library of the guest's tools is missing"
while read -r lib; do
	mkdir -p "$stage$(dirname "$lib")"
	cp -L "$lib" "$stage$lib"
done <"$work/libs"
for m in modprobe insmod rmmod lsmod depmod; do ln -s ../bin/kmod "$stage/sbin/$m"; done
mkdir -p "$stage/usr" && ln -s ../bin "$stage/usr/bin" && ln -s ../sbin "$stage/usr/sbin"
# The modules, without debug information (their code is unchanged).
mdst=$stage/lib/modules/$release
mkdir -p "$mdst"
cp "$moddir"/modules.* "$mdst/"
(cd "$moddir" && find -L kernel extra -name '*.ko') | while read -r ko; do
	mkdir -p "$mdst/$(dirname "$ko")"
	"llvm-objcopy$LLVM_SUFFIX" --strip-debug "$moddir/$ko" "$mdst/$ko"
done
# The scripts, at the paths guest-bench.sh expects.
top=$stage/rsnet ks=$stage/ksrc
sel=tools/testing/selftests/rsnet
mkdir -p "$top/tools/rsnet" "$top/$sel" "$ks/tools/testing/selftests/kselftest"
cp "$RSNET_TOP/tools/rsnet/guest-bench.sh" "$top/tools/rsnet/"
cp "$RSNET_TOP/$sel/lib.sh" "$top/$sel/"
cp "$ksrc/tools/testing/selftests/kselftest/ktap_helpers.sh" "$ks/tools/testing/selftests/kselftest/"
cp "$RSNET_TOP/tools/rsnet/guest-det-init" "$stage/init"
# The same bytes each build (times, inode and device numbers, order): the
# kernel's unpacking of it is part of what must repeat.
find "$stage" -exec touch -h -d @0 {} +
(cd "$stage" && find . | LC_ALL=C sort | cpio -o -H newc --reproducible --quiet) \
	>"$work/initramfs.cpio"

# --- the guest ------------------------------------------------------------
mkdir -p "$out"
console=$out/det-console.log data=$work/data.txt
plugin=()
[ -n "${RSNET_PLUGIN:-}" ] && plugin=(-plugin "$RSNET_PLUGIN")
# As vm.sh's benchmark VM: QEMU's "max" CPU without CMPXCHG16B, the TSC as
# the clocksource (vm.sh says why).
set +e
# --foreground: QEMU in this process group, so that Ctrl-C ends it.
timeout --foreground --kill-after=10 "${VM_TIMEOUT:-3000}" qemu-system-x86_64 \
	-machine pc,i8042=off,vmport=off -accel tcg -icount shift=0,sleep=off -nodefaults -no-reboot \
	-display none -monitor none \
	-cpu max,cx16=off,rdrand=off,rdseed=off \
	"${smp[@]}" \
	-rtc base=2026-01-01T00:00:00,clock=vm \
	-kernel "$build/arch/x86/boot/bzImage" -initrd "$work/initramfs.cpio" \
	-append "console=ttyS0 loglevel=5 tsc=reliable nokaslr panic=-1 rsnet.rounds=$rounds rsnet.bench=$bench rsnet.mark=$mark" \
	-serial "file:$console" -serial "file:$data" "${plugin[@]}" >>"$log" 2>&1
rc=$?
set -e
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	die "the deterministic VM timed out after ${VM_TIMEOUT:-3000}s" "$console"
fi
if [ $rc -ne 0 ]; then
	cp "$log" "$out/det-qemu.log"
	die "the deterministic VM failed (QEMU exit $rc)" "$out/det-qemu.log"
fi
# The data UART: "@@@ NAME" starts a file, "@@@ END STATUS" ends them all.
tr -d '\r' <"$data" | awk -v dir="$out" '
	/^@@@ END / { status = $3; done = 1; next }
	/^@@@ / { if (f) close(f); f = dir "/" $2; printf "" >f; next }
	f { print >>f }
	END { exit done ? status : 99 }' || die "the benchmarks in the deterministic VM failed" "$console"
# Every measured run printed its numbers (guest-bench.sh fails when one
# did not; this is the last line of defence).
if awk -F '\t' 'NF != 8 || $6 == "" || $6 == 0 || $7 == ""' "$out/marks.tsv" | grep -q .; then
	die "a measured run of the deterministic VM gave no result" "$out/marks.tsv"
fi
# The console has the kernel's warnings and worse (loglevel=5; the
# benchmarks clear dmesg between runs).
if grep -E -q 'BUG:|WARNING:|Oops|Kernel panic|UBSAN|general protection|KASAN' "$console"; then
	die "the kernel logged a splat in the deterministic VM" "$console"
fi
# The kernel's text symbols: System.map (no KASLR) is /proc/kallsyms's.
awk '$2 ~ /^[tT]$/ && NF == 3' "$build/System.map" >"$out/syms-kernel.txt"
