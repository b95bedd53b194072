// SPDX-License-Identifier: GPL-2.0
/*
 * fq_vclock: the virtual clock of fq_oracle. The oracle-only builds of the
 * fq qdiscs (sch_fq_vt.ko from the tree's net/sched/sch_fq.c, and
 * sch_fq_rs_vt.ko from net/sched/sch_fq_rs.rs) are the ordinary objects
 * with their clock, watchdog and registration symbols renamed after the
 * link (tools/rsnet/vclock.sh, with llvm-objcopy --redefine-sym):
 *
 *	jiffies				-> fq_vclock_jiffies
 *	ktime_get			-> fq_vclock_ktime_get
 *	qdisc_watchdog_schedule_range_ns -> fq_vclock_watchdog_schedule_range_ns
 *	qdisc_watchdog_cancel		-> fq_vclock_watchdog_cancel
 *	register_qdisc, unregister_qdisc -> fq_vclock_register_qdisc, ...
 *
 * so both read the time the oracle sets here, and their watchdog requests
 * arm a virtual hrtimer that the oracle fires, instead of a real one. The
 * qdiscs are not registered with the kernel (both are "fq"): the oracle
 * finds their ops with fq_vclock_get_ops() by module name.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/spinlock.h>
#include <net/pkt_sched.h>
#include <net/sch_generic.h>
#include "fq_vclock.h"

/* Read by the vt qdiscs as they read jiffies; written by the oracle. */
unsigned long fq_vclock_jiffies;
EXPORT_SYMBOL_GPL(fq_vclock_jiffies);

static u64 vclock_ns;
static struct fq_vclock_timer vtimer;
static DEFINE_SPINLOCK(vclock_lock);

#define VCLOCK_OPS_MAX 4
static struct Qdisc_ops *vclock_ops[VCLOCK_OPS_MAX];
static DEFINE_MUTEX(vclock_ops_lock);

ktime_t fq_vclock_ktime_get(void)
{
	return ns_to_ktime(READ_ONCE(vclock_ns));
}
EXPORT_SYMBOL_GPL(fq_vclock_ktime_get);

/*
 * qdisc_watchdog_schedule_range_ns() on the virtual timer: an armed timer
 * whose soft expiry lies in [expires, expires + delta_ns] is left alone,
 * else it is (re)armed, as hrtimer_start_range_ns() would be. Each call is
 * counted; the oracle observes them.
 */
void fq_vclock_watchdog_schedule_range_ns(struct qdisc_watchdog *wd, u64 expires,
					  u64 delta_ns)
{
	unsigned long flags;

	spin_lock_irqsave(&vclock_lock, flags);
	vtimer.requests++;
	vtimer.req_expires = expires;
	vtimer.req_slack = delta_ns;
	vtimer.wd = wd;
	if (vtimer.armed && vtimer.soft - expires <= delta_ns) {
		spin_unlock_irqrestore(&vclock_lock, flags);
		return;
	}
	vtimer.armed = true;
	vtimer.soft = expires;
	/* ktime_add_safe(): the hard expiry saturates. */
	vtimer.hard = expires + delta_ns < expires || expires + delta_ns > KTIME_MAX ?
		      KTIME_MAX : expires + delta_ns;
	vtimer.programs++;
	spin_unlock_irqrestore(&vclock_lock, flags);
}
EXPORT_SYMBOL_GPL(fq_vclock_watchdog_schedule_range_ns);

void fq_vclock_watchdog_cancel(struct qdisc_watchdog *wd)
{
	unsigned long flags;

	spin_lock_irqsave(&vclock_lock, flags);
	if (vtimer.wd == wd || !vtimer.wd) {
		vtimer.armed = false;
		vtimer.cancels++;
	}
	spin_unlock_irqrestore(&vclock_lock, flags);
	/* The real timer was initialised, never started: nothing to stop. */
}
EXPORT_SYMBOL_GPL(fq_vclock_watchdog_cancel);

/*
 * register_qdisc() without the registration (both are "fq"): the ops are
 * kept for fq_vclock_get_ops(). An fq has every operation register_qdisc()
 * would fill in.
 */
int fq_vclock_register_qdisc(struct Qdisc_ops *ops)
{
	int i, rc = -ENOSPC;

	if (!ops->enqueue || !ops->dequeue || !ops->peek)
		return -EINVAL;
	mutex_lock(&vclock_ops_lock);
	for (i = 0; i < VCLOCK_OPS_MAX; i++) {
		if (!vclock_ops[i]) {
			vclock_ops[i] = ops;
			rc = 0;
			break;
		}
	}
	mutex_unlock(&vclock_ops_lock);
	return rc;
}
EXPORT_SYMBOL_GPL(fq_vclock_register_qdisc);

void fq_vclock_unregister_qdisc(struct Qdisc_ops *ops)
{
	int i;

	mutex_lock(&vclock_ops_lock);
	for (i = 0; i < VCLOCK_OPS_MAX; i++)
		if (vclock_ops[i] == ops)
			vclock_ops[i] = NULL;
	mutex_unlock(&vclock_ops_lock);
}
EXPORT_SYMBOL_GPL(fq_vclock_unregister_qdisc);

/* The ops registered by module @name, with a reference on the module. */
const struct Qdisc_ops *fq_vclock_get_ops(const char *name)
{
	const struct Qdisc_ops *found = NULL;
	int i;

	mutex_lock(&vclock_ops_lock);
	for (i = 0; i < VCLOCK_OPS_MAX; i++) {
		struct Qdisc_ops *ops = vclock_ops[i];

		if (ops && ops->owner && !strcmp(module_name(ops->owner), name) &&
		    try_module_get(ops->owner)) {
			found = ops;
			break;
		}
	}
	mutex_unlock(&vclock_ops_lock);
	return found;
}
EXPORT_SYMBOL_GPL(fq_vclock_get_ops);

/* Sets the clock: @ns on CLOCK_MONOTONIC, and jiffies. */
void fq_vclock_set(u64 ns, unsigned long j)
{
	WRITE_ONCE(vclock_ns, ns);
	WRITE_ONCE(fq_vclock_jiffies, j);
}
EXPORT_SYMBOL_GPL(fq_vclock_set);

/* A copy of the virtual timer's state. */
void fq_vclock_timer_read(struct fq_vclock_timer *t)
{
	unsigned long flags;

	spin_lock_irqsave(&vclock_lock, flags);
	*t = vtimer;
	spin_unlock_irqrestore(&vclock_lock, flags);
}
EXPORT_SYMBOL_GPL(fq_vclock_timer_read);

/* The timer fires: it is no longer armed (hrtimer_run_queues()). */
void fq_vclock_timer_fire(void)
{
	unsigned long flags;

	spin_lock_irqsave(&vclock_lock, flags);
	vtimer.armed = false;
	vtimer.fires++;
	spin_unlock_irqrestore(&vclock_lock, flags);
}
EXPORT_SYMBOL_GPL(fq_vclock_timer_fire);

/* A new qdisc: no timer armed, counts from zero. */
void fq_vclock_timer_reset(void)
{
	unsigned long flags;

	spin_lock_irqsave(&vclock_lock, flags);
	memset(&vtimer, 0, sizeof(vtimer));
	spin_unlock_irqrestore(&vclock_lock, flags);
}
EXPORT_SYMBOL_GPL(fq_vclock_timer_reset);

static int __init fq_vclock_init(void)
{
	/* Start where the kernel's jiffies do, 5 minutes before the wrap. */
	fq_vclock_set(NSEC_PER_SEC, INITIAL_JIFFIES);
	return 0;
}

static void __exit fq_vclock_exit(void)
{
}

module_init(fq_vclock_init);
module_exit(fq_vclock_exit);
MODULE_DESCRIPTION("rsnet: the virtual clock of the fq oracle");
MODULE_LICENSE("GPL");
