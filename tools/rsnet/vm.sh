#!/usr/bin/env bash
# Boot the rsnet test kernel in QEMU through virtme-ng: 2 vCPUs, 2 NUMA
# nodes (one vCPU and 1 GiB each), the host's root file system read-only;
# with RSNET_NET=loop also a pair of virtio-net NICs on one hub.
#
#   vm.sh                 interactive shell
#   vm.sh COMMAND...      run COMMAND (an argv, not a shell string) in the
#                         VM, exit with its status; its kernel console goes
#                         to $RSNET_CONSOLE (default $LOGDIR/vm-console.log)
#
# virtme-ng puts a tmpfs over /var/cache (and /tmp), so the build, source
# and venv directories are passed in explicitly, read-only, at their paths.
# The VM sees the repository at its host path, the kernel source tree at
# $RSNET_KSRC (also exported inside as RSNET_KSRC) and a writable results
# directory at $RSNET_RESULTS. VM_TIMEOUT (seconds) bounds a command run.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

build=$(kbuild_dir)
ksrc=$(ksrc_dir)
results=${RSNET_RESULTS:-$RSNET_CACHE/results}
mkdir -p "$results"
[ -f "$build/arch/x86/boot/bzImage" ] || die "no kernel image in $build: run 'make kernel'"

args=(--run "$build" --user root --cpus 2 --memory 2G
      --numa 1G,cpus=0 --numa 1G,cpus=1 --force-9p
      --rwdir "$results" --cwd "$RSNET_TOP"
      --rodir "$build" --rodir "$ksrc" --rodir "$VENV"
      --append "panic_on_warn=0 nmi_watchdog=0 kmemleak=on")
# The root file system (the host's, read-only in the guest) is cached in the
# guest's page cache (9p cache=loose; virtme-ng mounts it uncached): every
# exec and Python import otherwise goes to the host. Files the host changes
# while the VM runs may be seen late; the guest only reads them.
args+=(--append "rootflags=version=9p2000.L,trans=virtio,access=any,msize=524288,cache=loose")
[ -n "${RSNET_APPEND:-}" ] && args+=(--append "$RSNET_APPEND")
# RSNET_NET=loop: two virtio-net NICs on one QEMU hub (what one sends, the
# other receives), for tests that need a real NIC's transmit path.
[ -n "${RSNET_NET:-}" ] && args+=(--network "$RSNET_NET")
# The KASAN kernel on QEMU's "max" CPU (5-level paging) reports a
# wild-memory-access in rcu_is_watching() from an interrupt during
# identify_boot_cpu(), before any rsnet code runs; with 4-level paging it
# boots clean.
[ "$KCONFIG" = kasan ] && args+=(--append no5lvl)
# TCG by default: this kind of machine has no usable KVM. RSNET_KVM=1 tries it.
# Under TCG the guest CPU has no CMPXCHG16B: QEMU 7.2's emulation of it
# (SLUB's per-CPU free path, `this_cpu_cmpxchg128`) intermittently
# corrupted the guest's flags (double faults in kfree()/kmem_cache_free()
# right after the instruction, with impossible saved EFLAGS, under any
# heavy load: pktgen, 9p writes). Without the feature the kernel uses its
# own this_cpu_cmpxchg16b_emu (irqs off), which TCG runs correctly.
#
# RSNET_ICOUNT=1 (make bench): the guest clock counts executed instructions,
# 1 ns each (-icount shift=0; idle time is skipped, sleep=off). Under plain
# TCG the guest clock is the host's, so guest timers fire whenever the
# emulation gets to them (tens of us late) and every number carries the
# host's load; with icount timers fire on their deadline and a measured ns is
# an executed instruction: the guest is a 1 GHz machine of one instruction
# per cycle, and repeated runs agree. RSNET_ICOUNT_SHIFT=N makes each
# instruction 2^N ns: a guest that runs slower in its own time, to check
# that a test's outcome does not depend on the guest's speed.
#
# The tests' CPU is qemu64 (4-level paging, SSE2): on "max", 5-level page
# tables and AVX2 string functions made each fork+exec 2.6 times as slow
# under TCG (20 runs of /bin/true: 9.7 s against 3.7 s). The benchmarks keep
# "max", the CPU of their published numbers. RSNET_CPU overrides either.
smp="-smp 2,sockets=2,cores=1,threads=1"
cpu=${RSNET_CPU:-qemu64,cx16=off}
[ "${RSNET_ICOUNT:-0}" = 1 ] && cpu=${RSNET_CPU:-max,cx16=off}
tcg="$smp -cpu $cpu"
if [ "${RSNET_KVM:-0}" = 1 ]; then
	args+=(--qemu-opts="$smp")
elif [ "${RSNET_ICOUNT:-0}" = 1 ]; then
	# RSNET_PLUGIN: a TCG plugin and its arguments, e.g. the
	# cache model (tools/rsnet/cacheplugin), "file=LIB,out=FILE".
	args+=(--disable-kvm --qemu-opts="$tcg -icount shift=${RSNET_ICOUNT_SHIFT:-0},sleep=off${RSNET_PLUGIN:+ -plugin $RSNET_PLUGIN}")
	# The TSC as the clocksource, as on a server: under icount every
	# vCPU's TSC is the one instruction clock. Without tsc=reliable Linux
	# assumes that a multi-socket non-Intel machine (QEMU's "max" is
	# AuthenticAMD, without the invariant-TSC flag) has unsynchronized
	# TSCs and falls back to the HPET, a read of which costs ~100
	# instructions more a ktime_get() (fq reads the clock per packet).
	args+=(--append tsc=reliable)
else
	# One host thread runs both vCPUs (thread=single): with a thread per
	# vCPU, QEMU 7.2 let a vCPU run a stale int3 of a text_poke_bp() that
	# the other had finished (an "Oops: int3" at a static call site in
	# skb_free_head() while page_pool.sh re-pointed the static calls).
	# RSNET_PLUGIN here too: make profile's instruction counter.
	args+=(--disable-kvm --qemu-opts="$tcg -accel tcg,thread=single${RSNET_PLUGIN:+ -plugin $RSNET_PLUGIN}")
fi

# The guest runs no udev. virtme-ng-init starts the host's systemd-udevd and
# waits for its coldplug, which under TCG took 170 of the 200 s from boot to
# the first command (each rule a fork and exec on the debug kernel). The
# guest needs only the /dev/virtio-ports/ links of virtme's command I/O;
# guest-udevd makes those. It is bound over udevd and udevadm in a mount
# namespace of QEMU's own, whose 9p server exports that view of the host's
# root to the guest; the host itself is untouched. RSNET_UDEV=1 keeps udev.
vng=("$VENV/bin/vng")
if [ "${RSNET_UDEV:-0}" != 1 ] && unshare --mount true 2>/dev/null; then
	udev_bins=$(for f in /usr/lib/systemd/systemd-udevd /lib/systemd/systemd-udevd \
			"$(command -v udevadm || true)"; do
		[ -e "$f" ] && readlink -f "$f"
	done | sort -u | tr '\n' ' ')
	# shellcheck disable=SC2016 # expanded by the inner shell
	vng=(unshare --mount --propagation private sh -c \
		'for f in $1; do mount --bind "$0" "$f" || exit 1; done; shift; exec "$@"' \
		"$RSNET_TOP/tools/rsnet/guest-udevd" "$udev_bins" "${vng[@]}")
fi

export PATH="$VENV/bin:$PATH"
if [ $# -eq 0 ]; then
	exec "${vng[@]}" "${args[@]}"
fi
# The guest's shell gets the command as one string: every word quoted, so
# that it runs exactly the argv given here ("bash -c 'x=$(echo a)'" stays
# that, and make vm CMD='...' passes its shell command that way).
guest_cmd=$(printf 'export RSNET_KSRC=%q RSNET_RESULTS=%q RSNET_TOP=%q RSNET_VENV=%q PATH=%q:"$PATH";' \
	"$ksrc" "$results" "$RSNET_TOP" "$VENV" "$VENV/bin")
# The tests' own knobs, set on the host, reach them in the guest.
for v in ZC_ROUNDS ZC_BYTES ZC_BUF FQ_FUZZ_SETS FQ_FUZZ_SEED ORACLE_SEEDS ORACLE_PSEEDS ORACLE_OPS ORACLE_SEED ORACLE_BATCH ORACLE_OOO ORACLE_OOO_RAND ORACLE_SLACK_MS MUTANT_SEEDS FQ_SOCKETS FQ_SOCKETS_DELAY_MS FQ_CHURN_N FQ_CHURN_GENS FQ_CHURN_PERIOD_MS FQ_CHURN_RETURN_N kselftest_override_timeout; do
	[ -n "${!v:-}" ] && guest_cmd+=$(printf ' export %s=%q;' "$v" "${!v}")
done
guest_cmd+=$(printf ' %q' "$@")
# virtme-ng carries --exec's command base64-encoded on the guest's kernel
# command line (2,048 bytes on x86, shared with the options above): a
# longer one is cut there and the guest fails to mount its root. The
# command goes in a file of the results directory instead, which the guest
# sees at the same path, and the command line carries only its name.
cmdfile=$(mktemp "$results/.vm-cmd.XXXXXX")
printf '%s\n' "$guest_cmd" >"$cmdfile"
trap 'rm -f "$cmdfile"' EXIT
console=${RSNET_CONSOLE:-$LOGDIR/vm-console.log}
set +e
# In the background, so that a TERM or INT (Ctrl-C, check.sh ending a VM)
# can be passed on: timeout runs in a process group of its own, which the
# terminal's signals do not reach, and ends QEMU when told to.
timeout --kill-after=10 "${VM_TIMEOUT:-1800}" "${vng[@]}" "${args[@]}" --verbose \
	--exec "exec bash $(printf %q "$cmdfile")" 2>"$console" <&0 &
vm=$!
trap 'kill -TERM $vm 2>/dev/null' INT TERM
wait $vm
rc=$?
# A signal ends the wait early: the status is timeout's, once it is done.
while kill -0 $vm 2>/dev/null; do
	wait $vm
	rc=$?
done
trap - INT TERM
set -e
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	echo "[rsnet] ERROR: VM timed out after ${VM_TIMEOUT:-1800}s; console log: $console" >&2
elif [ $rc -ne 0 ] && ! grep -q 'Run /init\|virtme-ng-init' "$console"; then
	echo "[rsnet] ERROR: VM did not boot (exit $rc); console log: $console" >&2
	tail -n 20 "$console" | sed 's/^/    | /' >&2
fi
exit $rc
