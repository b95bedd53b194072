// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel tree's own net/sched/sch_fq.c, unchanged, built out of tree
 * as sch_fq.ko on a kernel that builds the Rust fq for CONFIG_NET_SCH_FQ
 * (CONFIG_NET_SCH_FQ_RUST, the series kernel), so that the tests can hold
 * the two against each other there too. tools/rsnet/modules.sh takes its
 * net-sch-fq alias away: tc autoloads the kernel's own fq.
 */
#include <../net/sched/sch_fq.c>
