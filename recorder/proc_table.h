/* A table of processes by pid: command name, cgroup v2 path and real uid,
 * for whoever must name a process after it is gone (the trigger engine's
 * exit triggers). It holds at most FR_PROC_TABLE_MAX processes; when full,
 * the entry put longest ago makes room.
 *
 * Not thread-safe: its owner guards it.
 */
#ifndef FR_RECORDER_PROC_TABLE_H
#define FR_RECORDER_PROC_TABLE_H

#include <stdint.h>

#include "recorder/proc.h"

#define FR_PROC_TABLE_MAX 65536

struct fr_proc_entry {
	uint32_t pid;
	int32_t hnext;        /* next in its bucket, or in the free list */
	int32_t older, newer; /* insertion order, for eviction */
	char comm[FR_PROC_COMM_LEN];
	char *cgroup;         /* NULL: unknown */
	uint32_t uid;         /* real uid, or whatever the owner uses for unknown */
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
int fr_proc_table_put(struct fr_proc_table *pt, uint32_t pid, const char *comm,
		      const char *cgroup, uint32_t uid);

/* Forgets `pid`; nothing when it is not there. */
void fr_proc_table_del(struct fr_proc_table *pt, uint32_t pid);

#endif
