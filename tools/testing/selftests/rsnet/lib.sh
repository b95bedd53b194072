# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
# Shared helpers for the rsnet kselftests: KTAP output through the kernel's
# own ktap_helpers.sh, and small checks used by several tests.

: "${BASE_DIR:?BASE_DIR must point at tools/testing/selftests}"
. "$BASE_DIR/kselftest/ktap_helpers.sh"

# check DESCRIPTION CMD...: one KTAP result from a command's exit status.
check() {
	local desc=$1
	shift
	if "$@"; then ktap_test_pass "$desc"; else ktap_test_fail "$desc"; fi
}

# expect_eq DESCRIPTION EXPECTED ACTUAL
expect_eq() {
	if [ "$2" = "$3" ]; then
		ktap_test_pass "$1"
	else
		ktap_print_msg "$1: expected '$2', got '$3'"
		ktap_test_fail "$1"
	fi
}

# write_errno FILE VALUE: write VALUE to FILE with one write(2) and print
# the errno name (OK on success). printf, not echo, so "" is a 0-byte write.
write_errno() {
	python3 - "$1" "$2" <<'PY'
import errno, os, sys
try:
    fd = os.open(sys.argv[1], os.O_WRONLY)
    try:
        os.write(fd, sys.argv[2].encode())
    finally:
        os.close(fd)
    print("OK")
except OSError as e:
    print(errno.errorcode[e.errno])
PY
}
