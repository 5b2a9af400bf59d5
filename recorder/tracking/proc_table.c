/* The process table (see proc_table.h for the contract).
 *
 * Entries live in one array that grows by doubling up to
 * FR_PROC_TABLE_MAX; a chained hash on pid (indexes, not pointers, so the
 * array may move) finds them, a free list reuses the slots of deleted
 * ones, and a doubly linked list in insertion order names the oldest
 * entry, which makes room when the table is full.
 *
 * Following processes: the exit event carries only pids and the wait
 * status, so what a process is called, where it lives and who runs it
 * is learned before, at fork, exec and rename, and at exit what the
 * zombie still shows in /proc is preferred to what the table knew.
 */
#include "recorder/tracking/proc_table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/hash.h"
#include "core/util/log.h"
#include "core/util/time.h"

#define BUCKETS 16384
#define LOG_INTERVAL_NS (10 * FR_NS_PER_S)

static uint32_t bucket_of(uint32_t pid)
{
	return fr_hash_u32(pid) % BUCKETS;
}

void fr_proc_table_init(struct fr_proc_table *pt)
{
	memset(pt, 0, sizeof(*pt));
	pt->free_head = pt->oldest = pt->newest = -1;
}

int32_t fr_proc_table_find(const struct fr_proc_table *pt, uint32_t pid)
{
	if (!pt->buckets)
		return -1;
	for (int32_t i = pt->buckets[bucket_of(pid)]; i >= 0; i = pt->e[i].hnext)
		if (pt->e[i].pid == pid)
			return i;
	return -1;
}

static void unlink_age(struct fr_proc_table *pt, int32_t i)
{
	struct fr_proc_entry *x = &pt->e[i];

	if (x->older >= 0)
		pt->e[x->older].newer = x->newer;
	else
		pt->oldest = x->newer;
	if (x->newer >= 0)
		pt->e[x->newer].older = x->older;
	else
		pt->newest = x->older;
	x->older = x->newer = -1;
}

static void link_newest(struct fr_proc_table *pt, int32_t i)
{
	pt->e[i].older = pt->newest;
	pt->e[i].newer = -1;
	if (pt->newest >= 0)
		pt->e[pt->newest].newer = i;
	else
		pt->oldest = i;
	pt->newest = i;
}

void fr_proc_table_del(struct fr_proc_table *pt, uint32_t pid)
{
	int32_t *link, i;

	if (!pt->buckets)
		return;
	for (link = &pt->buckets[bucket_of(pid)]; (i = *link) >= 0; link = &pt->e[i].hnext) {
		if (pt->e[i].pid != pid)
			continue;
		*link = pt->e[i].hnext;
		unlink_age(pt, i);
		free(pt->e[i].cgroup);
		pt->e[i].cgroup = NULL;
		pt->e[i].hnext = pt->free_head;
		pt->free_head = i;
		pt->used--;
		return;
	}
}

int fr_proc_table_put(struct fr_proc_table *pt, uint32_t pid, const char *comm, const char *cgroup,
		      uint32_t uid)
{
	char *cg = NULL;
	int32_t i;

	if (cgroup && cgroup[0]) {
		cg = strdup(cgroup);
		if (!cg)
			return -ENOMEM;
	}
	if (!pt->buckets) {
		pt->buckets = malloc(BUCKETS * sizeof(*pt->buckets));
		if (!pt->buckets)
			goto err_nomem;
		for (uint32_t b = 0; b < BUCKETS; b++)
			pt->buckets[b] = -1;
	}
	i = fr_proc_table_find(pt, pid);
	if (i >= 0) {
		unlink_age(pt, i);
		free(pt->e[i].cgroup);
		goto fill;
	}
	if (pt->used >= FR_PROC_TABLE_MAX)
		fr_proc_table_del(pt, pt->e[pt->oldest].pid);
	if (pt->free_head < 0) {
		uint32_t cap = pt->cap ? pt->cap * 2 : 256;
		struct fr_proc_entry *e;

		if (cap > FR_PROC_TABLE_MAX)
			cap = FR_PROC_TABLE_MAX;
		e = realloc(pt->e, cap * sizeof(*e));
		if (!e)
			goto err_nomem;
		pt->e = e;
		for (uint32_t k = cap; k-- > pt->cap;) {
			e[k].hnext = pt->free_head;
			e[k].cgroup = NULL;
			pt->free_head = (int32_t)k;
		}
		pt->cap = cap;
	}
	i = pt->free_head;
	pt->free_head = pt->e[i].hnext;
	pt->e[i].pid = pid;
	pt->e[i].hnext = pt->buckets[bucket_of(pid)];
	pt->buckets[bucket_of(pid)] = i;
	pt->used++;
fill:
	snprintf(pt->e[i].comm, sizeof(pt->e[i].comm), "%s", comm ? comm : "");
	pt->e[i].cgroup = cg;
	pt->e[i].uid = uid;
	link_newest(pt, i);
	return 0;

err_nomem:
	free(cg);
	return -ENOMEM;
}

void fr_proc_table_fini(struct fr_proc_table *pt)
{
	for (uint32_t i = 0; i < pt->cap; i++)
		free(pt->e[i].cgroup);
	free(pt->e);
	free(pt->buckets);
	fr_proc_table_init(pt);
}

/* ---- following processes ------------------------------------------------ */

/* The name of `pid` up to its first newline, as targets match it. */
static int read_comm(const char *proc, uint32_t pid, char comm[FR_LIMIT_COMM_LEN])
{
	int ret = fr_proc_read_comm(proc, pid, 0, comm, FR_LIMIT_COMM_LEN);

	if (ret == 0)
		comm[strcspn(comm, "\n")] = '\0';
	return ret;
}

/* The real uid of `pid`, or FR_PROC_UID_UNKNOWN. A zombie still shows it. */
static uint32_t read_uid(const char *proc, uint32_t pid)
{
	uint32_t uid;

	return fr_proc_read_uid(proc, pid, &uid) == 0 ? uid : FR_PROC_UID_UNKNOWN;
}

/* Keeps process `pid` (called `comm`, in cgroup `cg`, of `uid`) when it
 * may matter to the owner, else forgets it. */
static void follow(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
		   const char *comm, const char *cg, uint32_t uid)
{
	if (!src->keep(src->arg, pid, comm, cg, uid))
		fr_proc_table_del(pt, pid);
	else if (fr_proc_table_put(pt, pid, comm, cg, uid) < 0)
		fr_log_ratelimited(FR_LOG_WARN, LOG_INTERVAL_NS,
				   "%s: out of memory; process %u (%s) is not followed", src->who,
				   pid, comm);
}

/* Learns what process `pid` is called and where it lives, from /proc or
 * (when it is gone already) from what the table knew of it, else from its
 * parent's, and keeps it when it may matter. A process that execs and
 * dies at once is gone before its exec event is read: the comm event exec
 * sent first (its rename) is then all there is to know. */
static void learn(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
		  uint32_t parent)
{
	char comm[FR_LIMIT_COMM_LEN] = "", cg[FR_PROC_CGROUP_LEN] = "";
	int32_t self = fr_proc_table_find(pt, pid);
	int32_t pi = self >= 0 ? self : parent ? fr_proc_table_find(pt, parent) : -1;
	uint32_t uid = read_uid(src->proc, pid);

	if (uid == FR_PROC_UID_UNKNOWN && (pi >= 0 || parent))
		uid = pi >= 0 ? pt->e[pi].uid : read_uid(src->proc, parent);
	if (read_comm(src->proc, pid, comm) < 0 && (pi >= 0 || parent)) {
		if (pi >= 0)
			snprintf(comm, sizeof(comm), "%s", pt->e[pi].comm);
		else
			(void)read_comm(src->proc, parent, comm);
	}
	if (src->cgroups && fr_proc_read_cgroup(src->proc, pid, cg, sizeof(cg)) < 0 &&
	    (pi >= 0 || parent)) {
		if (pi >= 0 && pt->e[pi].cgroup)
			snprintf(cg, sizeof(cg), "%s", pt->e[pi].cgroup);
		else if (self < 0)
			(void)fr_proc_read_cgroup(src->proc, parent, cg, sizeof(cg));
	}
	follow(pt, src, pid, comm, cg, uid);
}

void fr_proc_table_fork(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
			uint32_t parent)
{
	int32_t pi = fr_proc_table_find(pt, parent);

	/* A parent not followed did not matter; its child is read in case
	 * the table missed the parent. */
	if (pi >= 0) {
		char comm[FR_LIMIT_COMM_LEN], cg[FR_PROC_CGROUP_LEN] = "";

		memcpy(comm, pt->e[pi].comm, sizeof(comm));
		if (pt->e[pi].cgroup)
			snprintf(cg, sizeof(cg), "%s", pt->e[pi].cgroup);
		follow(pt, src, pid, comm, cg, pt->e[pi].uid);
		return;
	}
	learn(pt, src, pid, parent);
}

void fr_proc_table_exec(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid)
{
	learn(pt, src, pid, 0);
}

void fr_proc_table_rename(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
			  const char *comm)
{
	int32_t i = fr_proc_table_find(pt, pid);
	char cg[FR_PROC_CGROUP_LEN] = "";
	/* A rename is the moment a process may start to look like a
	 * target, so its uid is read fresh rather than trusted from a
	 * fork long ago (a setuid since). */
	uint32_t uid = read_uid(src->proc, pid);

	if (i >= 0 && pt->e[i].cgroup)
		snprintf(cg, sizeof(cg), "%s", pt->e[i].cgroup);
	else if (i < 0 && src->cgroups)
		(void)fr_proc_read_cgroup(src->proc, pid, cg, sizeof(cg));
	if (uid == FR_PROC_UID_UNKNOWN && i >= 0)
		uid = pt->e[i].uid;
	follow(pt, src, pid, comm, cg, uid);
}

struct seed {
	struct fr_proc_table *pt;
	const struct fr_proc_source *src;
};

static void seed_one(void *arg, uint32_t pid)
{
	struct seed *sd = arg;

	learn(sd->pt, sd->src, pid, 0);
}

int fr_proc_table_seed(struct fr_proc_table *pt, const struct fr_proc_source *src)
{
	struct seed sd = {.pt = pt, .src = src};

	return fr_proc_each_pid(src->proc, seed_one, &sd);
}

void fr_proc_table_exited(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
			  struct fr_proc_last *last)
{
	struct fr_proc_stat ps;
	int32_t i;

	memset(last, 0, sizeof(*last));
	last->uid = FR_PROC_UID_UNKNOWN;
	/* While the parent has not reaped it, the zombie still shows its name,
	 * cgroup and uid, fresher than the table (a move without exec, a
	 * setuid); a live process under that pid would be a new one. */
	if (fr_proc_read_stat(src->proc, pid, &ps) == 0 && (ps.state == 'Z' || ps.state == 'X')) {
		snprintf(last->comm, sizeof(last->comm), "%s", ps.comm);
		if (src->cgroups)
			(void)fr_proc_read_cgroup(src->proc, pid, last->cgroup,
						  sizeof(last->cgroup));
		last->uid = read_uid(src->proc, pid);
	}
	i = fr_proc_table_find(pt, pid);
	if (i < 0)
		return;
	if (!last->comm[0])
		snprintf(last->comm, sizeof(last->comm), "%s", pt->e[i].comm);
	if (!last->cgroup[0] && pt->e[i].cgroup)
		snprintf(last->cgroup, sizeof(last->cgroup), "%s", pt->e[i].cgroup);
	if (last->uid == FR_PROC_UID_UNKNOWN)
		last->uid = pt->e[i].uid;
	fr_proc_table_del(pt, pid);
}
