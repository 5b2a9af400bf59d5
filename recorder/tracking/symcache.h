/* The on-disk symbol cache: what profiles need to name the frames of
 * binaries that are gone (the process exited and the file was deleted,
 * replaced by a deploy, or its container's root went away), kept beside
 * the ring.
 *
 * Layout of the cache directory (0700, the daemon's user's; see
 * fr_dir_open_private()):
 *
 *   HEX_BUILD_ID                  a copy of an ELF file whose GNU build
 *                                 id is HEX_BUILD_ID (lowercase hex),
 *                                 mode 0600: the same size and offsets,
 *                                 every byte but its code and data
 *                                 sections (.text, .rodata, .data...:
 *                                 holes, read as zeros), see
 *                                 fr_elf_symbol_ranges(); root owned
 *                                 the file
 *   HEX_BUILD_ID.uUID             the same of a file user UID owned
 *   perf-PID-START_NS.map         the perf map (/tmp/perf-NSPID.map) of
 *                                 JIT process PID started at START_NS
 *                                 (Unix ns, as chunks record it) of
 *                                 root, 0600
 *   perf-PID-START_NS.uUID.map    the same of a process of user UID
 *   python-PID-START_NS.codes     the Python names of CPython process
 *                                 PID started at START_NS of root: the
 *                                 code objects its samples ran, read
 *                                 from its memory (core/symbols/pycodes.h),
 *                                 0600
 *   python-PID-START_NS.uUID.codes  the same of a process of user UID
 *   .tmp-*                        a copy being written (removed at start)
 *
 * The symbolizer (core/symbols/symbols.h, fr_symbols_set_paths()) reads
 * them; only the recorder writes and evicts. Sparse copies rather than
 * extracted symbol tables: the symbolizer reads a cached file exactly as
 * it reads the original (symbols, PLT stubs, DWARF lines,
 * .gnu_debuglink), with no second format, while code and data, most of a
 * large library and never read to name an address, take no disk. The
 * cost is bounded by `file_max` (the file's size) and `max_bytes` (disk
 * blocks) below.
 *
 * Only files that samples hit are copied: the tracker asks for each
 * mapping a sealed chunk refers to (fr_symcache_want_elf()), so the cache
 * holds what the ring refers to. Asking again refreshes the entry's mtime
 * (at most once a minute), and queries touch it too, so eviction removes
 * what neither the recorder nor a query used for longest, within each
 * owner: a file's owner is the uid in its name (that of the ELF file's
 * owner, or of the JIT process), and over `max_bytes` the least recently
 * used file of the owner most over its fair share goes first
 * (core/util/shares.h): one user's files never push another's, or
 * root's, out below their share.
 *
 * Every source is a file users control: the mapped inode through
 * /proc/PID/map_files/START-END (else the path under /proc/PID/root, then
 * the path, with fr_open_untrusted()), read with pread into private
 * memory on a worker thread under a deadline (core/util/worker.h), its
 * build id checked before and after the copy. Copies are written to an
 * O_EXCL|O_NOFOLLOW temporary file in the directory, fsync'd and renamed
 * into place, so nothing at a cache path (a symlink, a FIFO) is ever
 * followed or opened, and a reader never sees half a file.
 *
 * Thread-safe: the ingest thread asks, a thread of the cache copies.
 */
#ifndef FR_RECORDER_SYMCACHE_H
#define FR_RECORDER_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/symbols/python_exe.h"

struct fr_symcache;

struct fr_symcache_options {
	const char *dir;    /* created (0700) when missing */
	uint64_t max_bytes; /* total size kept */
	uint64_t file_max;  /* larger files are not copied (logged once each) */
	/* A copy that takes longer is given up (0: 60 s). */
	int64_t deadline_ns;
};

/* Opens (creating) the cache directory, removes unfinished copies and
 * starts the copying thread. Returns 0 with *out, or -errno with a
 * message in `err`. */
int fr_symcache_open(struct fr_symcache **out, const struct fr_symcache_options *o, char *err,
		     size_t errlen);

/* Stops the thread (a copy in progress is abandoned to its worker, which
 * cleans up after itself) and frees the cache; accepts NULL. */
void fr_symcache_close(struct fr_symcache *c);

/* A sealed chunk refers to what process `pid` of user `uid` maps at
 * [start, end) from `path`, with build id `bid`: makes sure the cache
 * holds a copy. Never waits: a request beyond FR_SYMCACHE_MAX_PENDING, or
 * beyond a quarter of it for one user other than root (three quarters
 * for all of them), is dropped (asked again at a later seal). Copies are
 * made in turn, one of each user's at a time. */
void fr_symcache_want_elf(struct fr_symcache *c, uint32_t pid, uid_t uid, uint64_t start,
			  uint64_t end, const char *path, const uint8_t *bid, uint8_t bid_len);

/* A sealed chunk holds samples of process `pid` (started at `start_ns`,
 * user `uid`) in anonymous executable memory: copies its perf map, again
 * at most every 5 s while it grows. */
void fr_symcache_want_perfmap(struct fr_symcache *c, uint32_t pid, int64_t start_ns, uid_t uid);

/* A CPython process, as the Python names' asks give it: its interpreter
 * object (recorder/tracking/python_proc.h fr_python_proc_find()) and
 * load bias. */
struct fr_symcache_pyproc {
	uint32_t pid;
	int64_t start_ns; /* Unix ns, as chunks record it */
	uid_t uid;
	struct fr_python_exe x;
	uint64_t bias;
	/* And the code objects on every thread's stack now (read from the
	 * process's thread states): a thread blocked for the process's whole
	 * life is named while it lives, though its wait comes at the end. */
	bool sweep;
};

/* Codes one fr_symcache_want_pycode() asks for, at most. */
#define FR_SYMCACHE_PYCODES_ASK 1024

/* Process `pid` (started at `start_ns`, user `uid`) is a CPython process
 * of release `version` ("3.11.2"; NULL or "" not known) whose Python
 * frames are read (`problem` NULL), or not, and why ("release 3.9 not
 * supported"): writes that in the header of its Python names' file
 * (core/symbols/pycodes.h), keeping the records it holds. Never waits:
 * queued for the cache's thread, in its user's turn; the same status
 * asked again within a minute is not written again. Returns 0 (queued,
 * or nothing to do: `c` NULL included), -EAGAIN (the queue is full,
 * counted), -EINVAL (start_ns not known) or -ENOMEM. */
int fr_symcache_python_status(struct fr_symcache *c, uint32_t pid, int64_t start_ns, uid_t uid,
			      const char *version, const char *problem);

/* Samples of CPython process `p` ran the `n` code objects at `codes`
 * (addresses in the process; at most FR_SYMCACHE_PYCODES_ASK): reads
 * each from the process's memory (fr_py_code_read(), on a worker under
 * the cache's deadline, once the pid is checked to be still the process
 * started at p->start_ns) and writes its Python names' file anew with
 * the records it held and the new ones (a code read again replaces its
 * record). A code that does not read is skipped; records past
 * FR_PYCODES_MAX_CODES or the cache's file_max are dropped; both
 * counted. Never waits: queued in its user's turn (merged into a waiting
 * ask of the same process when there is one) within the bounds of
 * fr_symcache_want_elf(). The caller asks each (process, code) once.
 * Returns 0 (queued; `c` NULL: nothing done), -EAGAIN (the queue is
 * full, counted), -EINVAL (n 0 or too many, start_ns not known) or
 * -ENOMEM. */
int fr_symcache_want_pycode(struct fr_symcache *c, const struct fr_symcache_pyproc *p,
			    const uint64_t *codes, size_t n);

/* What the Python names' copies counted since the cache opened. */
struct fr_symcache_pycounts {
	uint64_t read;	       /* code objects read and written */
	uint64_t unread;       /* code objects that did not read, skipped */
	uint64_t dropped;      /* records past a file's bounds */
	uint64_t asks_dropped; /* asks refused: the queue was full */
};
void fr_symcache_python_counts(struct fr_symcache *c, struct fr_symcache_pycounts *out);

/* Waits until every request so far is done. Returns 0 or -ETIMEDOUT. */
int fr_symcache_wait(struct fr_symcache *c, int timeout_ms);

/* Files and bytes the cache holds now. */
void fr_symcache_usage(struct fr_symcache *c, uint64_t *files, uint64_t *bytes);

/* Changes the total the cache keeps (a reload, or a memory ceiling the
 * cache shares); the cache's thread evicts down to it. */
void fr_symcache_set_budget(struct fr_symcache *c, uint64_t max_bytes);

/* What each owner holds, as of the last count: up to `max` owners into
 * `out`, root first, then by bytes, the rest summed in *rest
 * (fr_shares_list(), core/util/shares.h), and the budget in *budget.
 * Returns the number of owners copied. */
struct fr_share;
size_t fr_symcache_owners(struct fr_symcache *c, struct fr_share *out, size_t max,
			  struct fr_share *rest, uint64_t *budget);

#define FR_SYMCACHE_MAX_PENDING 1024

#endif
