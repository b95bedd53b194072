#!/bin/bash
# Runs inside the test VM (started by check.sh through vm.sh): runs the
# rsnet kselftests with the kernel's own kselftest runner, then scans for
# leaks and saves the kernel log for the host to judge.
#
#   guest-check.sh TEST...   (names in tools/testing/selftests/rsnet/)
set -u
: "${RSNET_KSRC:?}" "${RSNET_RESULTS:?}" "${RSNET_TOP:?}"
res=$RSNET_RESULTS
rm -f "$res"/ktap.log "$res"/dmesg.log "$res"/kmemleak.log "$res"/done

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
kml=/sys/kernel/debug/kmemleak
# Forget what boot left behind; only what the tests leak counts.
[ -w $kml ] && echo clear >$kml

# A kselftest BASE_DIR: the 6.12 tree's kselftest/ helpers beside our tests.
base=$(mktemp -d /tmp/ksft.XXXXXX)
ln -s "$RSNET_KSRC/tools/testing/selftests/kselftest" "$base/kselftest"
ln -s "$RSNET_TOP/tools/testing/selftests/rsnet" "$base/rsnet"
export BASE_DIR=$base KSFT_MACHINE_SLOW=yes
cd "$base/rsnet" || exit 1
# runner.sh reads variables it may leave unset.
set +u
# shellcheck source=/dev/null
. "$BASE_DIR/kselftest/runner.sh"
tests=()
for t in "$@"; do tests+=("./$t"); done
# The runner writes the tests' prefixed output to $logfile (its default,
# /dev/stdout, is virtme's console here) and its own lines to stdout: both
# go to the file in append mode, and tail shows it as it comes. tail runs
# outside this shell's jobs, since run_many ends with a plain `wait`.
: >"$res/ktap.log"
(tail -f "$res/ktap.log" & echo $! >"$res/tail.pid")
logfile=$res/ktap.log
run_many "${tests[@]}" >>"$res/ktap.log" 2>&1
sleep 1
kill "$(cat "$res/tail.pid")" 2>/dev/null
rm -f "$res/tail.pid"

if [ -w $kml ]; then
	# kmemleak ignores objects younger than 5 s; two scans settle it.
	sleep 6
	echo scan >$kml; echo scan >$kml
	cat $kml >"$res/kmemleak.log"
fi
dmesg >"$res/dmesg.log"
touch "$res/done"
