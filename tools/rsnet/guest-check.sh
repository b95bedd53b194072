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
# shellcheck source=/dev/null
. "$BASE_DIR/kselftest/runner.sh"
tests=()
for t in "$@"; do tests+=("./$t"); done
type run_many >/dev/null || { echo "runner.sh not loaded from $BASE_DIR"; ls -la "$BASE_DIR" "$BASE_DIR/kselftest/"; }
run_many "${tests[@]}" 2>&1 | tee "$res/ktap.log"

if [ -w $kml ]; then
	# kmemleak ignores objects younger than 5 s; two scans settle it.
	sleep 6
	echo scan >$kml; echo scan >$kml
	cat $kml >"$res/kmemleak.log"
fi
dmesg >"$res/dmesg.log"
touch "$res/done"
