#!/usr/bin/env bash
# make run: build what is needed, boot the test VM, and show the rsnet
# modules working with the commands a user would type.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

prepare
step "booting the test VM (console log: $LOGDIR/vm-console.log)"
VM_TIMEOUT=${VM_TIMEOUT:-900} bash "$RSNET_TOP/tools/rsnet/vm.sh" "$RSNET_TOP/tools/rsnet/guest-demo.sh"
