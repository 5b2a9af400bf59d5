/* The symbol cache's parts (recorder/tracking/symcache.c, the cache's
 * thread and the asks; symcache_copy.c, a copy on a worker): what they
 * share. Private to them. */
#ifndef FR_RECORDER_SYMCACHE_INT_H
#define FR_RECORDER_SYMCACHE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/symbols/elf_image.h"

enum job_kind { JOB_ELF, JOB_PERFMAP, JOB_PYSTATUS, JOB_PYCODES };

struct fr_symcache;
struct job_py;

struct job {
	struct job *next;
	enum job_kind kind;
	uint32_t pid;
	uint64_t start, end; /* ELF: the mapping */
	int64_t start_ns;    /* PERFMAP: the process's start */
	uid_t uid;	     /* the asking process's user: whose turn it waits for */
	uint8_t bid_len;
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	struct job_py *py; /* PYSTATUS, PYCODES: owned (symcache_python.c) */
	char path[];	   /* ELF: the mapped path */
};

/* What a copy of Python names counted, added to the cache's counters. */
struct py_counts {
	uint64_t read, unread, dropped, asks_dropped;
};

/* One copy, run on a worker; freed by whoever holds it last. */
struct copy_call {
	struct job *job;
	int dirfd; /* a dup of the cache's: the worker may outlive it */
	uint64_t file_max;
	uint64_t bytes;	     /* result: bytes added to the cache */
	bool replaced;	     /* result: the file was there (its bytes are the growth) */
	struct py_counts py; /* result: of a Python job */
	int ret;
};

/* Frees a job and what it owns; accepts NULL. */
void symcache_job_free(struct job *j);

/* Queues `j` for its user's turn (symcache.c): when `key` (`keylen`
 * bytes) was not asked within `every_ns`; merged into a job of the same
 * user waiting when `merge` (NULL: never) says it took it. Returns 1 (j
 * taken), 0 (not needed now, or merged: the caller frees j) or -EAGAIN
 * (no room in the queue: the caller frees j). */
int symcache_ask(struct fr_symcache *c, struct job *j, const uint8_t *key, uint8_t keylen,
		 int64_t every_ns, bool (*merge)(struct job *waiting, const struct job *j));

/* Adds `add` to the cache's Python counters (symcache.c). */
void symcache_py_count(struct fr_symcache *c, const struct py_counts *add);

/* Writes the `len` bytes at `buf` as the cache's file `name` (a
 * temporary renamed into place, symcache_copy.c); adds its disk to
 * c->bytes. Returns 0 or -errno (nothing left behind). */
int symcache_write_buf(struct copy_call *c, const void *buf, size_t len, const char *name);

/* Runs a Python job on the worker (symcache_python.c): sets c->ret. */
void symcache_python_run(struct copy_call *c);

/* Runs call (a struct copy_call *) on a worker: sets its ret and bytes. */
void symcache_copy_run(void *call);

/* Frees call (a struct copy_call *) and closes its dirfd. */
void symcache_copy_drop(void *call);

#endif
