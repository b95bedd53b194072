#!/usr/bin/env bash
# Host-side check of `make vm CMD='...'` (run by .ci/run before make check):
# the command reaches the VM's shell exactly as typed (make expands no `$`,
# vm.sh splices no words) and make vm exits with its status. Prints one
# "ok ..."/"not ok ..." line per check on stdout (make check's judge counts
# them, see RSNET_HOST_RESULTS in judge.py) and each make vm's output, and
# a failure's log, on stderr. Exits 1 if a check failed.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
cd "$RSNET_TOP" || exit 1

fail=0
# expect DESCRIPTION EXPECTED_OUTPUT EXPECTED_STATUS CMD: the last line make
# vm CMD=... printed, and the command's exit status. make itself exits 0 or
# 2, so a non-zero status is read from the "[rsnet] command exited with
# status N" line the vm target prints (and make must have failed).
expect() {
	local desc=$1 want=$2 want_rc=$3 cmd=$4 out rc make_rc log
	log=$(mktemp "$LOGDIR/vm-cmd-check.XXXXXX")
	step "make vm CMD='${cmd:0:100}$([ ${#cmd} -le 100 ] || echo "... (${#cmd} bytes)")' (log: $log)"
	RSNET_CONSOLE=$log.console make -s vm CMD="$cmd" >"$log" 2>&1 </dev/null
	make_rc=$?
	rc=$(sed -nE 's/^\[rsnet\] command exited with status ([0-9]+)$/\1/p' "$log" | tail -n 1)
	rc=${rc:-$make_rc}
	[ "$rc" != 0 ] && [ "$make_rc" = 0 ] && rc="$rc (but make exited 0)"
	# The command's last line: not rsnet's steps, nor make's "Error 3".
	out=$(grep -vE '^(\[rsnet\]|make(\[[0-9]+\])?: )' "$log" | tail -n 1 | tr -d '\r')
	if [ "$out" = "$want" ] && [ "$rc" = "$want_rc" ]; then
		echo "ok make vm: $desc"
		rm -f "$log" "$log.console"
	else
		echo "not ok make vm: $desc (expected '$want', exit $want_rc; got '$out', exit $rc; log: $log)"
		tail -n 20 "$log" | sed 's/^/    | /' >&2
		fail=1
	fi
}
# shellcheck disable=SC2016 # the $ are for the VM's shell
expect 'command substitution, $x and $? reach the shell as typed' a0 0 \
	'x=$(echo a); echo "$x$?"'
# shellcheck disable=SC2016
expect '$RSNET_KSRC is the kernel source tree, the exit status is the command'"'"'s' \
	"ksrc $(ksrc_dir) 3" 3 \
	'test -f "$RSNET_KSRC/tools/testing/selftests/kselftest/runner.sh" && echo "ksrc $RSNET_KSRC $((1 + 2))"; exit 3'
# A command longer than the guest's kernel command line (2,048 bytes on
# x86), which virtme-ng would carry there: 4 KiB of it, all of which must
# arrive (the shell counts it).
long=$(printf 'x%.0s' $(seq 4096))
# shellcheck disable=SC2016
expect 'a 4 KiB command arrives whole' 'len 4096' 0 \
	"s='$long'; echo \"len \${#s}\""
exit $fail
