/* SPDX-License-Identifier: GPL-2.0 */
/* rsnet's test modules: run a function in a kthread bound to one CPU. */
#ifndef RSNET_RUN_ON_CPU_H
#define RSNET_RUN_ON_CPU_H

#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/err.h>
#include <linux/kthread.h>
#include <linux/sched.h>

struct rsnet_cpu_work {
	int (*fn)(void *arg);
	void *arg;
	int ret;
	struct completion done;
};

static int rsnet_cpu_thread(void *data)
{
	struct rsnet_cpu_work *w = data;

	w->ret = w->fn(w->arg);
	complete(&w->done);
	/* @w is on the caller's stack: wait for kthread_stop(). */
	set_current_state(TASK_INTERRUPTIBLE);
	while (!kthread_should_stop()) {
		schedule();
		set_current_state(TASK_INTERRUPTIBLE);
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/*
 * Start @fn(@arg) in a kthread bound to @cpu, named after @namefmt ("%u" is
 * the CPU); rsnet_finish_on_cpu(@w, @t) waits for it and returns its
 * result. Returns the kthread, or ERR_PTR(-EINVAL) if @cpu is not online,
 * or the error of creating it.
 */
static struct task_struct *rsnet_start_on_cpu(int cpu, int (*fn)(void *),
					      void *arg, const char *namefmt,
					      struct rsnet_cpu_work *w)
{
	struct task_struct *t;

	if (cpu < 0 || cpu >= nr_cpu_ids || !cpu_online(cpu))
		return ERR_PTR(-EINVAL);
	w->fn = fn;
	w->arg = arg;
	w->ret = 0;
	init_completion(&w->done);
	t = kthread_create_on_cpu(rsnet_cpu_thread, w, cpu, namefmt);
	if (!IS_ERR(t))
		wake_up_process(t);
	return t;
}

static int rsnet_finish_on_cpu(struct rsnet_cpu_work *w, struct task_struct *t)
{
	wait_for_completion(&w->done);
	kthread_stop(t);
	return w->ret;
}

/*
 * Run @fn(@arg) in a kthread bound to @cpu, named after @namefmt ("%u" is
 * the CPU), and return its result; -EINVAL if @cpu is not online, or the
 * error of creating the kthread.
 */
static int rsnet_run_on_cpu(int cpu, int (*fn)(void *), void *arg,
			    const char *namefmt)
{
	struct rsnet_cpu_work w;
	struct task_struct *t;

	t = rsnet_start_on_cpu(cpu, fn, arg, namefmt, &w);
	if (IS_ERR(t))
		return PTR_ERR(t);
	return rsnet_finish_on_cpu(&w, t);
}

#endif /* RSNET_RUN_ON_CPU_H */
