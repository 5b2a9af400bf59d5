/* The symbol cache's parts (recorder/tracking/symcache.c, the cache's
 * thread and the asks; symcache_copy.c, a copy on a worker): what they
 * share. Private to them. */
#ifndef FR_RECORDER_SYMCACHE_INT_H
#define FR_RECORDER_SYMCACHE_INT_H

#include <stdint.h>
#include <sys/types.h>

#include "core/symbols/elf_image.h"

enum job_kind { JOB_ELF, JOB_PERFMAP };

struct job {
	struct job *next;
	enum job_kind kind;
	uint32_t pid;
	uint64_t start, end; /* ELF: the mapping */
	int64_t start_ns;    /* PERFMAP: the process's start */
	uid_t uid;	     /* the asking process's user: whose turn it waits for */
	uint8_t bid_len;
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	char path[]; /* ELF: the mapped path */
};

/* One copy, run on a worker; freed by whoever holds it last. */
struct copy_call {
	struct job *job;
	int dirfd; /* a dup of the cache's: the worker may outlive it */
	uint64_t file_max;
	uint64_t bytes; /* result: bytes added to the cache */
	int ret;
};

/* Runs call (a struct copy_call *) on a worker: sets its ret and bytes. */
void symcache_copy_run(void *call);

/* Frees call (a struct copy_call *) and closes its dirfd. */
void symcache_copy_drop(void *call);

#endif
