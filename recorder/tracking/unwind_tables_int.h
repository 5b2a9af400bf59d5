/* The insides of the machine's CFI tables (recorder/tracking/unwind_tables.h),
 * shared by its two files: unwind_tables.c, the ingest thread's side (the
 * entries, their look-up, eviction by fair shares, taking finished
 * builds), and unwind_build.c, the builder thread's (reading files,
 * compiling tables, the builds waiting in one queue per user served in
 * turn). Not for other files.
 */
#ifndef FR_RECORDER_UNWIND_TABLES_INT_H
#define FR_RECORDER_UNWIND_TABLES_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/util/shares.h"
#include "core/util/worker.h"
#include "recorder/tracking/unwind_tables.h"

#define NBUCKETS 4096
#define STOP_WAIT_MS 1000

enum { KEY_BUILD_ID = 1, KEY_INODE, KEY_VDSO };
/* ST_LINKED: a file known by its inode whose build id was read; its
 * table is that of the build id's entry. */
enum { ST_PENDING, ST_READY, ST_FAILED, ST_DROPPED, ST_LINKED };

/* What identifies a file's table; zeroed before it is filled, so that it
 * compares and hashes as bytes. */
struct key {
	uint8_t kind;
	uint8_t len; /* of bid */
	uint8_t bid[FR_BUILD_ID_MAX];
	uint32_t pid; /* KEY_INODE from /proc (no generation): the process */
	uint64_t dev, ino, gen;
	const void *path_id; /* KEY_INODE from /proc: the tracker's path */
};

struct entry {
	struct entry *next;
	struct key key;
	uint32_t hash;
	uint8_t state;
	struct fr_cfi_table *table; /* ST_READY */
	size_t bytes;
	uint64_t last_use;
	struct key link; /* ST_LINKED: the build id's key */
	struct job *job; /* ST_PENDING: its job, until taken */
	bool urgent;	 /* ST_PENDING: a sample waits for it */
	uint32_t owner;	 /* whom its table is counted to (unwind_tables.h) */
};

struct job {
	struct job *next;
	struct entry *entry; /* the ingest thread's; the builder never touches it */
	struct key key;
	uint32_t pid;
	uint32_t uid; /* whose queue it waits in: the asker's */
	uint64_t start, end;
	char *path;
	bool prefetch; /* asked for at the mapping's MMAP2, not by a sample */
	bool taken;    /* by the builder (under lock): pid..path are its now */
	/* The answer: a table, or for a KEY_INODE job the file's build id
	 * (bid_len > 0, no table), or err. */
	struct fr_cfi_table *table;
	uint8_t bid[FR_BUILD_ID_MAX];
	uint8_t bid_len;
	int err;
};

/* The builds one user's processes wait for: a turn each in the builder's
 * round robin, so that a flood of one user's new binaries delays another
 * user's (or root's) builds by at most one build at a time. */
struct queue {
	struct queue *next; /* in the round robin */
	uint32_t uid;
	uint32_t n; /* jobs waiting */
	struct job *head, **tail;
};

struct fr_unwind_tables {
	/* The ingest thread's. */
	struct entry *buckets[NBUCKETS];
	uint32_t nentries;
	uint64_t clock;	 /* look-ups so far: the LRU's time */
	uint64_t budget; /* atomic: fr_unwind_tables_set_budget() */
	/* Shared, under lock. */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* work queued, answer posted, builder gone */
	/* Users with builds waiting, next first; each turn takes one. */
	struct queue *turns, **turns_tail;
	uint32_t user_queued;	 /* jobs waiting of users other than root */
	struct fr_shares shares; /* bytes of ready tables per owner */
	struct job *done, **done_tail;
	unsigned refs; /* the owner's and the builder's */
	bool stop, builder_gone;
	/* The builder's. */
	struct fr_worker *worker;
	/* Counters (atomics). */
	struct fr_unwind_tables_stats st;
};

/* Frees a job and what it holds; accepts NULL. */
void unwind_job_free(struct job *j);

/* Frees `u` once neither its owner nor its builder holds it. */
void unwind_destroy(struct fr_unwind_tables *u);

/* Under lock: the queue of `uid`, with builds waiting; NULL when it has
 * none. */
struct queue *unwind_queue_of(struct fr_unwind_tables *u, uint32_t uid);

/* Under lock: queues `j` in the queue of j->uid: first when a sample waits
 * for it, else last. A new queue is *spare when given (taken), else
 * allocated. Returns 0 or -ENOMEM. */
int unwind_enqueue(struct fr_unwind_tables *u, struct job *j, bool first, struct queue **spare);

/* Under lock: takes the job *pp points at out of queue `q`; a queue left
 * empty leaves the round robin. */
void unwind_unqueue(struct fr_unwind_tables *u, struct queue *q, struct job **pp);

/* The builder thread (its argument is the tables). */
void *unwind_builder_main(void *arg);

#endif
