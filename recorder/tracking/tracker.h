/* Process tracker: what the machine's processes are called and what they
 * have mapped, kept current from perf side-band records (COMM, MMAP2,
 * FORK, EXIT) after an initial /proc scan.
 *
 * The chunk builder asks it, when it seals a chunk, for the processes,
 * threads and mappings the chunk's samples refer to (fr_tracker_ops). A
 * process that exits is kept until two seals later, so samples taken just
 * before its exit are still named and symbolized.
 *
 * Not thread-safe: owned by the ingest thread.
 */
#ifndef FR_RECORDER_TRACKER_H
#define FR_RECORDER_TRACKER_H

#include <stdint.h>

#include "core/store/chunk.h"

struct fr_tracker;

/* Creates an empty tracker. Returns NULL on allocation failure. */
struct fr_tracker *fr_tracker_new(void);

/* Frees the tracker; accepts NULL. */
void fr_tracker_free(struct fr_tracker *t);

/* Adds every process and thread found under `proc` ("/proc"): command
 * names, executable, uid, start time, parent pid, cgroup v2 path and executable
 * mappings. Returns the number of processes found or -errno when `proc`
 * cannot be read. */
int fr_tracker_scan(struct fr_tracker *t, const char *proc);

/* Adds (or refreshes) one process from `proc`/PID. Returns 0 or -ENOENT. */
int fr_tracker_scan_pid(struct fr_tracker *t, const char *proc, uint32_t pid);

/* Side-band records. A FORK gives a new process its parent's cgroup (or
 * the one /proc shows for it); an exec COMM reads it again from /proc. */
void fr_tracker_comm(struct fr_tracker *t, uint32_t pid, uint32_t tid, const char *comm, int exec);
/* As fr_tracker_comm(), for a record taken at `time_ns` (Unix ns; 0:
 * unknown): a thread that had another name is renamed from then on, and
 * the next two chunks sealed say so (names over time, core/store/chunk.h). */
void fr_tracker_comm_at(struct fr_tracker *t, uint32_t pid, uint32_t tid, const char *comm,
			int exec, int64_t time_ns);
void fr_tracker_mmap(struct fr_tracker *t, uint32_t pid, uint64_t start, uint64_t len,
		     uint64_t pgoff, uint32_t prot, const char *path, const uint8_t *build_id,
		     uint8_t build_id_len);
/* With an MMAP2 record that gave the file's inode rather than its build
 * id: the executable mapping of `pid` that starts at `start` is of inode
 * `ino` (generation `ino_generation`) on device `dev`. */
void fr_tracker_mmap_inode(struct fr_tracker *t, uint32_t pid, uint64_t start, uint64_t dev,
			   uint64_t ino, uint64_t ino_generation);
void fr_tracker_fork(struct fr_tracker *t, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		     int64_t time_ns);
void fr_tracker_exit(struct fr_tracker *t, uint32_t pid, uint32_t tid, int64_t time_ns);

/* Called after each seal: forgets processes and threads that exited
 * before the previous seal. */
void fr_tracker_sealed(struct fr_tracker *t);

/* Waits up to `timeout_ms` for the build ids asked for so far to be read
 * (recorder/tracking/buildids.h) and takes them in, so the next seal has them.
 * Returns 0, or -ETIMEDOUT (what was read is still taken). */
int fr_tracker_settle(struct fr_tracker *t, int timeout_ms);

/* Build id reads waiting or in progress, and since when (CLOCK_MONOTONIC
 * ns, 0 when idle) the current one has been reading. */
void fr_tracker_file_state(struct fr_tracker *t, uint32_t *pending, int64_t *busy_since_ns);

/* From now on, each mapping a sealed chunk refers to is handed to the
 * symbol cache `c` (recorder/tracking/symcache.h; borrowed, NULL: none), which
 * must outlive the tracker's use of it. */
struct fr_symcache;
void fr_tracker_set_symcache(struct fr_tracker *t, struct fr_symcache *c);

/* The callbacks for fr_chunk_builder_seal(). */
const struct fr_chunk_meta_ops *fr_tracker_ops(struct fr_tracker *t);

/* An executable mapping as the unwinder's tables need it. Pointers are
 * the tracker's, valid until the next side-band record. */
struct fr_tracker_map {
	uint64_t start, end, pgoff;
	const char *path;	 /* "/usr/lib/...", "[vdso]", "//anon", ... */
	const void *path_id;	 /* the same for every mapping of this path */
	const uint8_t *build_id; /* the kernel's (MMAP2), NULL when it gave none */
	uint8_t build_id_len;
	uint8_t inode; /* FR_TRACKER_INODE_*: where dev/ino come from */
	uint64_t dev, ino, ino_generation;
	uint32_t uid; /* the process's (real) uid: whose caches it fills */
};

enum {
	FR_TRACKER_INODE_NONE = 0,
	FR_TRACKER_INODE_MMAP2, /* an MMAP2 record: with its generation */
	FR_TRACKER_INODE_PROC,	/* /proc/PID/maps: no generation */
};

/* The executable mapping of `pid` that holds `addr`. Returns 0, or
 * -ENOENT when the process or the mapping is not known. Never reads
 * /proc: for the sampling path. */
int fr_tracker_find_map(struct fr_tracker *t, uint32_t pid, uint64_t addr,
			struct fr_tracker_map *out);

/* The first executable mapping of live process `pid` whose file name
 * (after the last '/') starts with `prefix`, lowest address first.
 * Returns 0 or -ENOENT. Never reads /proc. */
int fr_tracker_find_map_named(struct fr_tracker *t, uint32_t pid, const char *prefix,
			      struct fr_tracker_map *out);

/* Number of live processes and threads known. */
uint32_t fr_tracker_nprocs(const struct fr_tracker *t);
uint32_t fr_tracker_nthreads(const struct fr_tracker *t);

#endif
