/* The process table (see proc_table.h for the contract).
 *
 * Entries live in one array that grows by doubling up to
 * FR_PROC_TABLE_MAX; a chained hash on pid (indexes, not pointers, so the
 * array may move) finds them, a free list reuses the slots of deleted
 * ones, and a doubly linked list in insertion order names the oldest
 * entry, which makes room when the table is full.
 */
#include "recorder/proc_table.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"

#define BUCKETS 16384

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

