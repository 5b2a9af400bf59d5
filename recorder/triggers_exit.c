/* Exit triggers: which processes may be targets, and whether an exit
 * fires.
 *
 * The exit event carries only pids and the wait status, so the engine
 * keeps a table of the processes that may be targets (pid -> command
 * name, cgroup, uid; recorder/proc_table.h), seeded from /proc and kept
 * current with the connector's fork, exec and comm events; at exit it
 * prefers what the zombie still shows in /proc. Runs on the engine's
 * thread with its lock held.
 */
#include "recorder/triggers_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "core/log.h"

/* The name of `pid` up to its first newline, as exit triggers match it. */
static int read_comm(const struct fr_triggers *t, uint32_t pid, char comm[COMM_LEN])
{
	int ret = fr_proc_read_comm(t->proc, pid, 0, comm, COMM_LEN);

	if (ret == 0)
		comm[strcspn(comm, "\n")] = '\0';
	return ret;
}

/* The real uid of `pid` (the first of /proc/PID/status "Uid:", as the
 * tracker records it), or UID_UNKNOWN. A zombie still shows it. */
uint32_t trig_read_uid(const struct fr_triggers *t, uint32_t pid)
{
	uint32_t uid;

	return fr_proc_read_uid(t->proc, pid, &uid) == 0 ? uid : UID_UNKNOWN;
}

/* Whether a process may be some exit trigger's target. */
static int may_matter(const struct fr_triggers *t, uint32_t pid, const char *comm,
		      const char *cgroup, uint32_t uid)
{
	for (uint32_t si = 0; si < t->nsessions; si++)
		if (trig_has_kind(&t->sessions[si], FR_TRIGGER_EXIT) &&
		    trig_targets_match(&t->sessions[si], pid, comm, cgroup, uid))
			return 1;
	return 0;
}

/* Keeps process `pid` (called `comm`, in cgroup `cg`, of `uid`) in the
 * table when it may be some exit trigger's target, else forgets it. */
static void follow(struct fr_triggers *t, uint32_t pid, const char *comm, const char *cg,
		   uint32_t uid)
{
	if (!may_matter(t, pid, comm, cg, uid))
		fr_proc_table_del(&t->procs, pid);
	else if (fr_proc_table_put(&t->procs, pid, comm, cg, uid) < 0)
		fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
				   "exit triggers: out of memory; process %u (%s) is not followed",
				   pid, comm);
}

/* Learns what process `pid` is called and where it lives, from /proc or
 * (when it is gone already) from its parent's, and keeps it when it may
 * be a target. */
static void learn(struct fr_triggers *t, uint32_t pid, uint32_t parent)
{
	char comm[COMM_LEN] = "", cg[CG_LEN] = "";
	int32_t pi = parent ? fr_proc_table_find(&t->procs, parent) : -1;
	uint32_t uid = trig_read_uid(t, pid);

	if (uid == UID_UNKNOWN && parent)
		uid = pi >= 0 ? t->procs.e[pi].uid : trig_read_uid(t, parent);
	if (read_comm(t, pid, comm) < 0 && parent) {
		if (pi >= 0)
			snprintf(comm, sizeof(comm), "%s", t->procs.e[pi].comm);
		else
			(void)read_comm(t, parent, comm);
	}
	if (t->track_cgroup && fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg)) < 0 && parent) {
		if (pi >= 0 && t->procs.e[pi].cgroup)
			snprintf(cg, sizeof(cg), "%s", t->procs.e[pi].cgroup);
		else
			(void)fr_proc_read_cgroup(t->proc, parent, cg, sizeof(cg));
	}
	follow(t, pid, comm, cg, uid);
}

static void on_fork(void *arg, uint32_t pid, uint32_t parent)
{
	struct fr_triggers *t = arg;
	int32_t pi = fr_proc_table_find(&t->procs, parent);

	/* A child starts with its parent's name, cgroup and uid: copied from a
	 * parent that is followed, without reading /proc (forks are the
	 * busiest events). A parent not followed did not matter; its child
	 * is read in case the table missed the parent. */
	if (pi >= 0) {
		char comm[COMM_LEN], cg[CG_LEN] = "";

		memcpy(comm, t->procs.e[pi].comm, sizeof(comm));
		if (t->procs.e[pi].cgroup)
			snprintf(cg, sizeof(cg), "%s", t->procs.e[pi].cgroup);
		follow(t, pid, comm, cg, t->procs.e[pi].uid);
		return;
	}
	learn(t, pid, parent);
}

static void on_exec(void *arg, uint32_t pid)
{
	learn(arg, pid, 0);
}

static void on_comm(void *arg, uint32_t pid, const char *comm)
{
	struct fr_triggers *t = arg;
	int32_t i = fr_proc_table_find(&t->procs, pid);
	char cg[CG_LEN] = "";
	/* A rename is the moment a process may start to look like a
	 * target, so its uid is read fresh rather than trusted from a
	 * fork long ago (a setuid since). */
	uint32_t uid = trig_read_uid(t, pid);

	if (i >= 0 && t->procs.e[i].cgroup)
		snprintf(cg, sizeof(cg), "%s", t->procs.e[i].cgroup);
	else if (i < 0 && t->track_cgroup)
		(void)fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg));
	if (uid == UID_UNKNOWN && i >= 0)
		uid = t->procs.e[i].uid;
	follow(t, pid, comm, cg, uid);
}

static void on_exit_event(void *arg, uint32_t pid, uint32_t tgid, uint32_t exit_code,
			  uint32_t exit_signal)
{
	struct fr_triggers *t = arg;
	int status = (int)exit_code;
	char comm[COMM_LEN] = "", cg[CG_LEN] = "", reason[256], what[64];
	uint32_t uid = UID_UNKNOWN;
	struct fr_proc_stat ps;
	int32_t i;

	(void)tgid;
	(void)exit_signal;
	if (status == 0) {
		fr_proc_table_del(&t->procs, pid);
		return;
	}
	/* While the parent has not reaped it, the zombie still shows its name,
	 * cgroup and uid, fresher than the table (a move without exec, a
	 * setuid); a live process under that pid would be a new one. */
	if (fr_proc_read_stat(t->proc, pid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X')) {
		snprintf(comm, sizeof(comm), "%s", ps.comm);
		if (t->track_cgroup)
			(void)fr_proc_read_cgroup(t->proc, pid, cg, sizeof(cg));
		uid = trig_read_uid(t, pid);
	}
	i = fr_proc_table_find(&t->procs, pid);
	if (i >= 0) {
		if (!comm[0])
			snprintf(comm, sizeof(comm), "%s", t->procs.e[i].comm);
		if (!cg[0] && t->procs.e[i].cgroup)
			snprintf(cg, sizeof(cg), "%s", t->procs.e[i].cgroup);
		if (uid == UID_UNKNOWN)
			uid = t->procs.e[i].uid;
		fr_proc_table_del(&t->procs, pid);
	}

	if (WIFSIGNALED(status)) {
		char sig[32];

		fr_config_signal_name(WTERMSIG(status), sig, sizeof(sig));
		snprintf(what, sizeof(what), "killed by %s%s", sig,
			 WCOREDUMP(status) ? " (core dumped)" : "");
	} else {
		snprintf(what, sizeof(what), "exited with status %d", WEXITSTATUS(status));
	}
	if (comm[0])
		snprintf(reason, sizeof(reason), "pid %u (%s) %s", pid, comm, what);
	else
		snprintf(reason, sizeof(reason), "pid %u %s", pid, what);

	for (uint32_t si = 0; si < t->nsessions; si++) {
		const struct fr_config_session *s = &t->sessions[si];

		if (!trig_has_kind(s, FR_TRIGGER_EXIT) || !trig_targets_match(s, pid, comm, cg, uid))
			continue;
		for (uint32_t ti = 0; ti < s->ntriggers; ti++)
			if (s->triggers[ti].kind == FR_TRIGGER_EXIT)
				trig_fire(t, si, ti, reason, pid);
	}
}

static void seed_one(void *arg, uint32_t pid)
{
	learn(arg, pid, 0);
}

void trig_seed_procs(struct fr_triggers *t)
{
	int ret = fr_proc_each_pid(t->proc, seed_one, t);

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
