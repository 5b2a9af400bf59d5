/* What the process tracker's files share (recorder/tracking/tracker.c, the tables
 * and the side band; recorder/tracking/tracker_scan.c, what /proc shows at start):
 * its tables and the helpers that fill them. Owned by the ingest thread,
 * like the tracker.
 */
#ifndef FR_RECORDER_TRACKER_INT_H
#define FR_RECORDER_TRACKER_INT_H

#include <stdint.h>

#include "core/util/limits.h"
#include "recorder/tracking/buildids.h"
#include "recorder/tracking/tracker.h"

struct fr_symcache;

#define NBUCKETS 8192
/* Longest cgroup path kept, with its NUL; longer paths are cut. Kubernetes
 * pod paths, among the longest in use, are under 200 bytes. */
#define CGROUP_LEN FR_LIMIT_CGROUP_LEN

struct path_entry {
	struct path_entry *next;
	uint32_t hash;
	uint8_t bid_state; /* BID_*; bid_len may be 0 when read */
	uint8_t bid_len;
	uint8_t bid[FR_BUILD_ID_MAX];
	char path[];
};

enum { BID_UNREAD, BID_READ, BID_ASKED };

struct map {
	uint64_t start, end, pgoff;
	struct path_entry *path;
	uint8_t bid_len;
	uint8_t inode; /* FR_TRACKER_INODE_* */
	uint8_t bid[FR_BUILD_ID_MAX];
	uint64_t dev, ino, ino_gen; /* when inode is set */
};

struct proc {
	struct proc *next;
	uint32_t pid, uid;
	uint32_t exited_gen; /* 0 while alive */
	int exe_pending;     /* exec seen, executable not mapped yet */
	int64_t start_ns;
	uint32_t ppid; /* 0 when unknown */
	char comm[FR_LIMIT_COMM_LEN];
	char cgroup[CGROUP_LEN]; /* "" when unknown */
	struct path_entry *exe;
	struct map *maps;
	uint32_t nmaps, cap;
};

/* A thread's renames since two seals ago (recorder/tracking/tracker_names.c). */
#define NAME_HIST_MAX 64
struct name_hist {
	char before[FR_LIMIT_COMM_LEN]; /* the name before ch[0] */
	uint32_t n;
	struct {
		int64_t time_ns; /* Unix ns */
		uint32_t gen;	 /* the tracker's gen when it was seen */
		char name[FR_LIMIT_COMM_LEN];
	} ch[NAME_HIST_MAX];
	struct fr_name_change out[NAME_HIST_MAX]; /* handed to a seal */
};

struct thread {
	struct thread *next;
	uint32_t tid, pid;
	uint32_t exited_gen;
	char name[FR_LIMIT_COMM_LEN];
	struct name_hist *hist; /* NULL: no recent rename */
	uint32_t creator;	/* tid that created it (FORK ptid); 0: unknown */
};

struct fr_tracker {
	struct proc *procs[NBUCKETS];
	struct thread *threads[NBUCKETS];
	struct path_entry *paths[NBUCKETS];
	uint32_t nprocs, nthreads;
	uint32_t gen;	 /* seals so far, starting at 1 */
	int64_t boot_ns; /* Unix time of boot, for /proc start times */
	long clk_tck;
	struct fr_chunk_meta_ops ops;
	struct fr_buildids *bids;
	struct fr_symcache *symcache; /* borrowed; NULL: none */
};

/* The path entry of `path`, interned for the machine; NULL: no memory. */
struct path_entry *tracker_intern_path(struct fr_tracker *t, const char *path);
/* Copies a command or thread name, cut to the kernel's 15 characters. */
void tracker_copy_name(char dst[FR_LIMIT_COMM_LEN], const char *src);
/* The process or thread, created when unknown; NULL: no memory. */
struct proc *tracker_get_proc(struct fr_tracker *t, uint32_t pid);
struct thread *tracker_get_thread(struct fr_tracker *t, uint32_t tid, uint32_t pid);
/* Notes that th, named th->name, took `name` at time_ns (before th->name
 * changes); the renames a seal needs, in fr_thread_info; forgetting those
 * two seals old. */
void tracker_name_change(struct fr_tracker *t, struct thread *th, const char *name,
			 int64_t time_ns);
void tracker_names_info(struct thread *th, struct fr_thread_info *out);
void tracker_names_sealed(struct fr_tracker *t, struct thread *th);
/* Adds an executable mapping, replacing what it overlaps. */
void tracker_add_map(struct proc *p, uint64_t start, uint64_t end, uint64_t pgoff,
		     struct path_entry *path, const uint8_t *bid, uint8_t bid_len);
/* The mapping holding `addr`, or NULL. */
const struct map *tracker_lookup_map(const struct proc *p, uint64_t addr);

#endif
