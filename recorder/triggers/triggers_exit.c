/* Exit triggers: which processes may be targets, and whether an exit
 * fires.
 *
 * The exit event carries only pids and the wait status, so the engine
 * keeps a table of the processes that may be targets (pid -> command
 * name, cgroup, uid; recorder/tracking/proc_table.h, which follows them through
 * the connector's fork, exec and comm events and /proc). This file
 * decides which processes the table keeps and which exits fire. Runs on
 * the engine's thread with its lock held.
 */
#include "recorder/triggers/triggers_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/util/log.h"

/* Whether a process may be some exit trigger's target (fr_proc_keep_fn). */
static int may_matter(void *arg, uint32_t pid, const char *comm, const char *cgroup, uint32_t uid)
{
	const struct fr_triggers *t = arg;

	for (uint32_t si = 0; si < t->nsessions; si++)
		if (trig_has_kind(&t->sessions[si], FR_TRIGGER_EXIT) &&
		    trig_targets_match(&t->sessions[si], pid, comm, cgroup, uid))
			return 1;
	return 0;
}

/* How the engine's process table learns processes. */
static struct fr_proc_source source(struct fr_triggers *t)
{
	return (struct fr_proc_source){
		.proc = t->proc,
		.cgroups = t->track_cgroup,
		.keep = may_matter,
		.arg = t,
		.who = "exit triggers",
	};
}

static void on_fork(void *arg, uint32_t pid, uint32_t parent)
{
	struct fr_triggers *t = arg;
	struct fr_proc_source src = source(t);

	fr_proc_table_fork(&t->procs, &src, pid, parent);
}

static void on_exec(void *arg, uint32_t pid)
{
	struct fr_triggers *t = arg;
	struct fr_proc_source src = source(t);

	fr_proc_table_exec(&t->procs, &src, pid);
}

static void on_comm(void *arg, uint32_t pid, const char *comm)
{
	struct fr_triggers *t = arg;
	struct fr_proc_source src = source(t);

	fr_proc_table_rename(&t->procs, &src, pid, comm);
}

static void on_exit_event(void *arg, uint32_t pid, uint32_t tgid, uint32_t exit_code,
			  uint32_t exit_signal)
{
	struct fr_triggers *t = arg;
	struct fr_proc_source src = source(t);
	int status = (int)exit_code;
	struct fr_proc_last last;
	char reason[256], what[64];

	(void)tgid;
	(void)exit_signal;
	if (status == 0) {
		fr_proc_table_del(&t->procs, pid);
		return;
	}
	fr_proc_table_exited(&t->procs, &src, pid, &last);

	if (WIFSIGNALED(status)) {
		char sig[32];

		fr_config_signal_name(WTERMSIG(status), sig, sizeof(sig));
		snprintf(what, sizeof(what), "killed by %s%s", sig,
			 WCOREDUMP(status) ? " (core dumped)" : "");
	} else {
		snprintf(what, sizeof(what), "exited with status %d", WEXITSTATUS(status));
	}
	if (last.comm[0])
		snprintf(reason, sizeof(reason), "pid %u (%s) %s", pid, last.comm, what);
	else
		snprintf(reason, sizeof(reason), "pid %u %s", pid, what);

	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!trig_has_kind(s, FR_TRIGGER_EXIT) ||
		    !trig_targets_match(s, pid, last.comm, last.cgroup, last.uid))
			continue;
		for (uint32_t ti = 0; ti < s->ntriggers; ti++)
			if (s->triggers[ti].kind == FR_TRIGGER_EXIT)
				trig_fire(t, si, ti, reason, pid);
	}
}

void trig_seed_procs(struct fr_triggers *t)
{
	struct fr_proc_source src = source(t);
	int ret = fr_proc_table_seed(&t->procs, &src);

	if (ret < 0)
		fr_log_warn("exit triggers: cannot list %s: %s", t->proc, strerror(-ret));
}

void trig_exit_handlers(struct fr_triggers *t, struct fr_procwatch_handler *h)
{
	*h = (struct fr_procwatch_handler){
		.exit = on_exit_event,
		.fork = on_fork,
		.exec = on_exec,
		.comm = on_comm,
		.arg = t,
	};
}
