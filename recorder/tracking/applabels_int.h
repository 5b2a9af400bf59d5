/* What recorder/tracking/applabels.c and its look-ups (recorder/tracking/applabels_lookup.c)
 * share: one look-up of a process's labels, made on a deadline worker. */
#ifndef FR_RECORDER_APPLABELS_INT_H
#define FR_RECORDER_APPLABELS_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/symbols/python_exe.h"
#include "recorder/sampling/allocs.h"
#include "recorder/tracking/golabels.h"
#include "recorder/tracking/labelsets.h"

/* An eBPF copy of a thread's labels, made at one of its samples. */
struct fr_al_obs {
	uint32_t tid, set;
	int64_t time; /* Unix ns */
};

/* The set of the copy made for the sample of `tid` at `t`, among
 * obs[0..nobs) sorted by thread and time: the first copy of the thread
 * from 100 us before the sample to 3 ms after it (the copy is made in the
 * sample's interrupt, before or after its time is read, and a virtual
 * machine's vCPU may stop in between; a sample whose copy is missing
 * takes the next one when it is that near), else the last one at most 1
 * ms before it; 0 when none. */
uint32_t fr_al_join(const struct fr_al_obs *obs, size_t nobs, uint32_t tid, int64_t t);

/* The OTel process context's attribute key names, at most. */
#define FR_AL_OTEL_KEYS_MAX 256

/* Where process `pid`'s threads keep their labels, relative to the
 * thread pointer: libflightrec's (its registry, in the library mapped at
 * [start, end) from pgoff, when `lib`) and the OpenTelemetry thread
 * context's (the executable's own thread-local, else a shared library's),
 * with the key names of the process's OTel process context. */
struct fr_al_lookup {
	uint32_t pid;
	int64_t start_ns; /* the process's, so a result for a pid reused since
			   * is not taken for the new process */
	bool stalled;	  /* missed its deadline (the worker kept the call) */
	bool no_worker;	  /* not run: every deadline worker is held by a stuck read */
	bool lib;
	uint64_t start, end, pgoff; /* the libflightrec mapping */
	/* Results: 0 or -errno each (-EAGAIN: the library is not set up
	 * yet; -EPROTO: its registry is not one this recorder reads). */
	int ret_lib, ret_exe;
	int64_t fr_off, otel_off;
	/* A Go program: 0 with go (its release and runtime offsets), else
	 * fr_go_runtime_from_fd's -errno (-ENOENT: not Go). */
	int ret_go;
	struct fr_go_runtime go;
	/* A CPython process: 0 with py (its interpreter) loaded py_bias
	 * bytes from its link-time addresses, from py_path; else
	 * fr_python_proc_find's -errno (-ENOENT: not one). */
	int ret_py;
	struct fr_python_exe py;
	uint64_t py_bias;
	char py_path[256];
	uint32_t nkeys;
	char keys[FR_AL_OTEL_KEYS_MAX][FR_LABELSETS_KEY_LEN];
	/* libflightrec's allocation ring (its fr_alloc_registry): 0 with
	 * alloc mapped (released by whoever frees the look-up unless taken),
	 * else fr_allocs_map's -errno with alloc_why. */
	int ret_alloc;
	const char *alloc_why;
	struct fr_alloc_found alloc;
};

/* Runs look-up `arg` (a struct fr_al_lookup): reads the process's files
 * through /proc/PID/map_files and /proc/PID/exe (regular files only,
 * opened through O_PATH, read with bounded preads) and its memory with
 * process_vm_readv. For fr_worker_call(), with fr_al_lookup_drop. */
void fr_al_lookup_run(void *arg);
void fr_al_lookup_drop(void *arg);

#endif
