#!/bin/bash
# Runs inside the test VM for `make run`: a short tour of what rsnet adds,
# each step shown as the command a user types and what it printed.
set -u
fail=0
# run CMD...: show and run a command; a failure makes the tour fail.
run() {
	printf '\n$ %s\n' "$*"
	if ! "$@" 2>&1; then echo "  (failed)"; fail=1; fi
}
# run_err CMD...: show a command that is meant to be refused.
run_err() {
	printf '\n$ %s\n' "$*"
	if "$@" 2>&1; then echo "  (unexpectedly accepted)"; fail=1; fi
}

echo "== rsnet test kernel: $(uname -r), $(nproc) CPUs, NUMA nodes: $(ls -d /sys/devices/system/node/node* | wc -l)"

echo
echo "== sysctl abstraction (samples/rust/rust_sysctl.rs)"
run modprobe rust_sysctl
run sysctl rsnet.sample
run sysctl -w rsnet.sample.value=42
run_err sysctl -w rsnet.sample.value=5000
run_err sysctl -w rsnet.sample.value=7
run sysctl rsnet.sample
run modprobe -r rust_sysctl
dmesg | grep -E 'rust_sysctl' | sed 's/^/  dmesg: /'

echo
if [ $fail = 0 ]; then echo "== rsnet: all steps behaved as expected"; else echo "== rsnet: some steps FAILED"; fi
exit $fail
