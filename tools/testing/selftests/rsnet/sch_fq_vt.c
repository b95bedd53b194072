// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel tree's own net/sched/sch_fq.c, unchanged, built a second time
 * as the oracle-only module sch_fq_vt.ko; tools/rsnet/vclock.sh then
 * points its clock, watchdog and registration at fq_vclock.ko (see
 * fq_vclock.c).
 */
#include <../net/sched/sch_fq.c>
