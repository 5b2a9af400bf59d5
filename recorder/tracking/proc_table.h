/* A table of processes by pid: command name, cgroup v2 path and real uid,
 * for whoever must name a process after it is gone (the trigger engine's
 * exit triggers). It holds at most FR_PROC_TABLE_MAX processes; when full,
 * the entry put longest ago makes room.
 *
 * The table follows processes through the proc connector's events
 * (fr_proc_table_fork/exec/rename/exited), reading /proc through
 * recorder/tracking/proc.h, and keeps those its owner's `keep` says may matter.
 *
 * Not thread-safe: its owner guards it.
 */
#ifndef FR_RECORDER_PROC_TABLE_H
#define FR_RECORDER_PROC_TABLE_H

#include <stdint.h>

#include "recorder/tracking/proc.h"

#define FR_PROC_TABLE_MAX 65536
/* Cgroup paths as read; longer ones are cut (and then match nothing they
 * would not have matched whole, but for a cut exactly at a configured
 * path's end). */
#define FR_PROC_CGROUP_LEN 4096
/* A process whose uid could not be read. (uid_t)-1 is no one's uid. */
#define FR_PROC_UID_UNKNOWN UINT32_MAX

struct fr_proc_entry {
	uint32_t pid;
	int32_t hnext;	      /* next in its bucket, or in the free list */
	int32_t older, newer; /* insertion order, for eviction */
	char comm[FR_LIMIT_COMM_LEN];
	char *cgroup; /* NULL: unknown */
	uint32_t uid; /* real uid, or FR_PROC_UID_UNKNOWN */
};

struct fr_proc_table {
	struct fr_proc_entry *e;
	uint32_t used, cap;
	int32_t *buckets; /* heads; NULL until the first entry */
	int32_t free_head;
	int32_t oldest, newest;
};

/* Makes `pt` an empty table (nothing allocated yet). */
void fr_proc_table_init(struct fr_proc_table *pt);

/* Frees what the table holds and leaves it empty, as after init. */
void fr_proc_table_fini(struct fr_proc_table *pt);

/* The index in pt->e of `pid`, or -1. An index is valid until the next
 * put or del. */
int32_t fr_proc_table_find(const struct fr_proc_table *pt, uint32_t pid);

/* Inserts or updates `pid` (a copy of `comm`, cut to 15 bytes, and of
 * `cgroup`, NULL or "" when unknown), making it the newest entry.
 * Returns 0 or -ENOMEM (the table is then unchanged). */
int fr_proc_table_put(struct fr_proc_table *pt, uint32_t pid, const char *comm, const char *cgroup,
		      uint32_t uid);

/* Forgets `pid`; nothing when it is not there. */
void fr_proc_table_del(struct fr_proc_table *pt, uint32_t pid);

/* Whether process `pid` (called `comm`, in cgroup `cgroup`, "" when
 * unknown, of real uid `uid`) may matter to the table's owner. */
typedef int (*fr_proc_keep_fn)(void *arg, uint32_t pid, const char *comm, const char *cgroup,
			       uint32_t uid);

/* How the table learns processes. */
struct fr_proc_source {
	const char *proc;     /* proc root: "/proc" */
	int cgroups;	      /* read cgroup paths (otherwise "") */
	fr_proc_keep_fn keep; /* which processes the table keeps */
	void *arg;	      /* for keep */
	const char *who;      /* the owner, in log lines: "exit triggers" */
};

/* What is known of a process as it exits. */
struct fr_proc_last {
	char comm[FR_LIMIT_COMM_LEN];	 /* "" when unknown */
	char cgroup[FR_PROC_CGROUP_LEN]; /* "" when unknown */
	uint32_t uid;			 /* FR_PROC_UID_UNKNOWN when unknown */
};

/* Process `pid` was forked by `parent`: it starts with its parent's name,
 * cgroup and uid, copied from the table without reading /proc when the
 * parent is there (forks are the busiest events), else read from /proc. */
void fr_proc_table_fork(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
			uint32_t parent);

/* Process `pid` exec'ed: what it is called, where it lives and who runs it
 * is read again from /proc. */
void fr_proc_table_exec(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid);

/* Process `pid` renamed itself `comm`; its uid is read again. */
void fr_proc_table_rename(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
			  const char *comm);

/* Learns every process of src->proc (at start and after a reload).
 * Returns the number listed or -errno when src->proc cannot be listed. */
int fr_proc_table_seed(struct fr_proc_table *pt, const struct fr_proc_source *src);

/* Process `pid` exited: fills *last with what its zombie still shows in
 * /proc, else what the table knew, and forgets it. */
void fr_proc_table_exited(struct fr_proc_table *pt, const struct fr_proc_source *src, uint32_t pid,
			  struct fr_proc_last *last);

#endif
