#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The sysctl abstraction (rust/kernel/sysctl.rs) through the rust_sysctl
# sample: values read and written, range and parse errors rejected with
# EINVAL leaving the value unchanged, a handler veto, and clean unload.

. "$(dirname "$0")/lib.sh"
D=/proc/sys/rsnet/sample

ktap_print_header
ktap_set_plan 22

modprobe -r rust_sysctl 2>/dev/null
check "no table before load" test ! -e $D
check "modprobe rust_sysctl" modprobe rust_sysctl
expect_eq "value default is 10" 10 "$(cat $D/value 2>&1)"
expect_eq "enabled default is 0" 0 "$(cat $D/enabled 2>&1)"
expect_eq "sysctl(8) reads it" "rsnet.sample.value = 10" "$(sysctl rsnet.sample.value 2>&1)"

sysctl -q -w rsnet.sample.value=500
expect_eq "write 500 through sysctl(8), read back" 500 "$(cat $D/value)"
expect_eq "write enabled=1" OK "$(write_errno $D/enabled 1)"
expect_eq "enabled reads 1" 1 "$(cat $D/enabled)"

# An empty line (what 'echo > file' writes) is invalid input.
bad=$(errno_mismatches $D/value EINVAL 1001 -1 abc $'\n' 99999999999999999999 12x)
expect_eq "invalid writes to value fail with EINVAL" "" "$bad"
expect_eq "value unchanged after invalid writes" 500 "$(cat $D/value)"
bad=$(errno_mismatches $D/enabled EINVAL 2 -1 abc $'\n')
expect_eq "invalid writes to enabled fail with EINVAL, value kept" "1" "$(cat $D/enabled)$bad"

expect_eq "handler refuses odd value with EINVAL" EINVAL "$(write_errno $D/value 7)"
expect_eq "value unchanged after refusal" 500 "$(cat $D/value)"
expect_eq "writes counts accepted writes only" 2 "$(cat $D/writes)"
expect_eq "read-only entry refuses writes" EACCES "$(write_errno $D/writes 5)"

# A write that does not start at offset 0, in each kernel.sysctl_writes_strict
# mode, as C's proc_dointvec_minmax() takes it for vm.swappiness: ignored
# (strict, 1), parsed with a warning (0) or parsed (-1). The same for the
# static-key entry, as C's proc_do_static_key().
strict=$(cat /proc/sys/kernel/sysctl_writes_strict)
swappiness=$(cat /proc/sys/vm/swappiness)
# took: what a write of $2 at offset 1 to $1 did: "ok taken", "ok ignored"
# or dd's error.
took() {
	local before out
	before=$(cat "$1")
	out=$(printf '%s' "$2" | dd of="$1" bs=1 seek=1 conv=notrunc status=none 2>&1) || { echo "$out"; return; }
	if [ "$(cat "$1")" = "$2" ]; then echo "ok taken"; elif [ "$(cat "$1")" = "$before" ]; then echo "ok ignored"; else echo "ok changed to $(cat "$1")"; fi
}
for mode in 1 0 -1; do
	echo "$mode" >/proc/sys/kernel/sysctl_writes_strict
	echo 60 >/proc/sys/vm/swappiness
	echo 500 >$D/value
	echo 1 >$D/enabled
	expect_eq "write at offset 1 (sysctl_writes_strict=$mode): value as C's vm.swappiness" \
		"$(took /proc/sys/vm/swappiness 8)" "$(took $D/value 8)"
	expect_eq "write at offset 1 (sysctl_writes_strict=$mode): static key as C's" \
		"$(took /proc/sys/vm/swappiness 0)" "$(took $D/enabled 0)"
done
echo "$strict" >/proc/sys/kernel/sysctl_writes_strict
echo "$swappiness" >/proc/sys/vm/swappiness

modprobe -r rust_sysctl
check "unload removes the table" test ! -e $D

ktap_finished
