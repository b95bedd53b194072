#!/bin/bash
# Runs inside a test VM (started by check.sh through vm.sh): runs rsnet
# kselftests with the kernel's own kselftest runner, one program at a time,
# then scans for leaks and saves the kernel log for the host to judge.
#
#   guest-check.sh NUM:TEST...   (TEST in tools/testing/selftests/rsnet/,
#                                 NUM its number in the whole run)
#
# In $RSNET_RESULTS it leaves, for check.sh's monitor (judge.py) on the
# host, which reads them while the VM runs:
#   progress      one line per event: "boot UPTIME", "start NUM TEST",
#                 "end NUM TEST SECONDS", "scan SECONDS"
#   TEST.ktap     the runner's KTAP for that program ("ok NUM selftests: ...")
#   boot.log      the kernel log at the start, with KUnit's results of
#                 the built-in suites (the kernel crate's doctests)
#   dmesg.log, kmemleak.log, done   at the end
set -u
: "${RSNET_KSRC:?}" "${RSNET_RESULTS:?}" "${RSNET_TOP:?}"
res=$RSNET_RESULTS
rm -f "$res"/*.ktap "$res"/progress "$res"/boot.log "$res"/dmesg.log "$res"/kmemleak.log "$res"/done
echo "boot $(cut -d' ' -f1 /proc/uptime)" >>"$res/progress"
dmesg >"$res/boot.log"
echo "rsnet: boot log saved" >/dev/kmsg

mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
kml=/sys/kernel/debug/kmemleak
# Forget what boot left behind; only what the tests leak counts. The
# periodic scan (first at 60 s after boot, then every 600 s) is turned off:
# on the debug kernel under TCG it takes a vCPU for tens of seconds in the
# middle of whatever test runs then. The two scans at the end find every
# leak it would.
if [ -w $kml ]; then
	echo clear >$kml
	echo scan=off >$kml
fi

# A kselftest BASE_DIR: the test kernel tree's kselftest/ helpers beside our tests.
base=$(mktemp -d /tmp/ksft.XXXXXX)
ln -s "$RSNET_KSRC/tools/testing/selftests/kselftest" "$base/kselftest"
ln -s "$RSNET_TOP/tools/testing/selftests/rsnet" "$base/rsnet"
export BASE_DIR=$base KSFT_MACHINE_SLOW=yes
cd "$base/rsnet" || exit 1
# runner.sh reads variables it may leave unset.
set +u
# shellcheck source=/dev/null
. "$BASE_DIR/kselftest/runner.sh"
# What run_many does, one program at a time, so that each program's KTAP
# (the runner's own lines and the program's prefixed output, in order) is
# a file of its own and its wall time is known.
DIR=${PWD#"$BASE_DIR"/}
# secs_since T0: seconds since T0 (microseconds, from EPOCHREALTIME), 0.1 s.
secs_since() {
	local us=$((${EPOCHREALTIME/./} - $1))
	printf '%d.%d' $((us / 1000000)) $((us % 1000000 / 100000))
}
for arg in "$@"; do
	num=${arg%%:*} t=${arg#*:}
	echo "start $num $t" >>"$res/progress"
	t0=${EPOCHREALTIME/./}
	logfile=$res/$t.ktap
	: >"$logfile"
	run_one "$DIR" "./$t" "$num" >>"$logfile" 2>&1
	echo "end $num $t $(secs_since "$t0")" >>"$res/progress"
done

t0=${EPOCHREALTIME/./}
if [ -w $kml ]; then
	# kmemleak reports an object in a scan that finds it unreferenced,
	# unchanged since the scan before and at least 5 s old. The first
	# scan, at once, takes every object's checksum; the second, 6 s after
	# the last program ended, reports what that program leaked too.
	echo scan >$kml
	wait_us=$((6000000 - (${EPOCHREALTIME/./} - t0)))
	[ $wait_us -gt 0 ] && sleep "$((wait_us / 1000000)).$(printf %06d $((wait_us % 1000000)))"
	echo scan >$kml
	cat $kml >"$res/kmemleak.log"
fi
dmesg >"$res/dmesg.log"
echo "scan $(secs_since "$t0")" >>"$res/progress"
touch "$res/done"
