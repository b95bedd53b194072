#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The Rust fq (net/sched/sch_fq_rs.rs) registers "fq": the qdisc tc creates
# is the Rust one, it holds the module while in use, and it goes cleanly.

. "$(dirname "$0")/lib.sh"
DEV=fqb0

ktap_print_header
ktap_set_plan 9

fq_unload_all
ip link del $DEV 2>/dev/null
ip link add $DEV type dummy && ip link set $DEV up
check "modprobe sch_fq_rs" fq_use_rust
check "tc qdisc add ... fq" tc qdisc add dev $DEV root fq
expect_eq "the qdisc is fq" "fq" "$(tc qdisc show dev $DEV | awk '{print $2}')"
expect_eq "it holds the Rust module (refcnt 1)" 1 "$(module_refcnt sch_fq_rs)"
expect_eq "C sch_fq is not loaded" none "$(module_refcnt sch_fq)"
check "rmmod is refused while a qdisc uses it" test "$(modprobe -r sch_fq_rs 2>&1; echo $?)" != 0
expect_eq "module still loaded after refused rmmod" 1 "$(module_refcnt sch_fq_rs)"
tc qdisc del dev $DEV root
check "after qdisc del, rmmod works" modprobe -r sch_fq_rs
expect_eq "module gone" none "$(module_refcnt sch_fq_rs)"
ip link del $DEV
fq_unload_all
ktap_finished
