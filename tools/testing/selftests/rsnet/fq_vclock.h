/* SPDX-License-Identifier: GPL-2.0 */
/* fq_vclock: the virtual clock of fq_oracle (see fq_vclock.c). */
#ifndef _RSNET_FQ_VCLOCK_H
#define _RSNET_FQ_VCLOCK_H

#include <linux/ktime.h>
#include <linux/types.h>

struct Qdisc_ops;
struct qdisc_watchdog;

/* The virtual hrtimer of the qdisc under test, and what was asked of it. */
struct fq_vclock_timer {
	struct qdisc_watchdog *wd;
	bool armed;
	u64 soft, hard;			/* armed: expiry and expiry + slack */
	u64 req_expires, req_slack;	/* the last request */
	u64 requests, programs, cancels, fires;
};

extern unsigned long fq_vclock_jiffies;
ktime_t fq_vclock_ktime_get(void);
void fq_vclock_watchdog_schedule_range_ns(struct qdisc_watchdog *wd, u64 expires,
					  u64 delta_ns);
void fq_vclock_watchdog_cancel(struct qdisc_watchdog *wd);
int fq_vclock_register_qdisc(struct Qdisc_ops *ops);
void fq_vclock_unregister_qdisc(struct Qdisc_ops *ops);

const struct Qdisc_ops *fq_vclock_get_ops(const char *name);
void fq_vclock_set(u64 ns, unsigned long j);
void fq_vclock_timer_read(struct fq_vclock_timer *t);
void fq_vclock_timer_fire(void);
void fq_vclock_timer_reset(void);

#endif
