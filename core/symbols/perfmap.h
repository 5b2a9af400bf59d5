/* Names of JIT-compiled code from perf maps: /tmp/perf-PID.map, written by
 * Node (--perf-basic-prof), Java agents and Python 3.12 (-X perf), one
 * "START SIZE NAME" line (hex START and SIZE) per function emitted into
 * anonymous executable memory, which no ELF file names.
 *
 * The file lies in /tmp, which every user writes: it is read as a file
 * its owner controls (core/util/fs.h fr_open_untrusted(): no symlink, no
 * FIFO or device, at most FR_PERFMAP_MAX_SIZE bytes), only when owned by
 * the process's user, and parsed with bounds (FR_PERFMAP_MAX_ENTRIES
 * entries, names cut at FR_PERFMAP_MAX_NAME bytes, malformed lines skipped).
 */
#ifndef FR_CORE_PERFMAP_H
#define FR_CORE_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#define FR_PERFMAP_MAX_SIZE (64ULL << 20)
#define FR_PERFMAP_MAX_ENTRIES (1U << 20)
#define FR_PERFMAP_MAX_NAME 512
/* The perf map bytes one cache (one profile) reads in all: past them, a
 * further process's map is not read (-EFBIG). */
#define FR_PERFMAPS_MAX_TOTAL (256ULL << 20)

/* One parsed perf map. */
struct fr_perfmap;

/* A cache of the perf maps of the processes of one profile. */
struct fr_perfmaps;

/* Whether a mapping named `path` (as the tracker records it) is anonymous
 * memory, where JIT compilers put their code: "//anon", "[anon:NAME]", or
 * a memfd. */
bool fr_perfmap_is_anon(const char *path);

/* Parses `len` bytes of a perf map. Only whole lines count: a last line
 * without its newline (a writer caught in the middle of it) is dropped.
 * Where entries overlap, the one that starts later wins from its start on
 * (the earlier one ends there); of two with the same start, the later line
 * wins (code emitted again where freed code was). Returns 0 with *out
 * (free with fr_perfmap_free(); it may hold no entry), -E2BIG for more than
 * FR_PERFMAP_MAX_ENTRIES well-formed lines (the first ones are not kept
 * either: a map that large is not one to trust), or -ENOMEM. */
int fr_perfmap_parse(const char *buf, size_t len, struct fr_perfmap **out);

/* Reads and parses the first `size` bytes (at most FR_PERFMAP_MAX_SIZE) of
 * the perf map open at `fd`: what was appended after `size` was taken is
 * not read, and fewer bytes (a file truncated meanwhile) are parsed as
 * found. Returns 0 with *out, or -errno. */
int fr_perfmap_load(int fd, uint64_t size, struct fr_perfmap **out);

/* Opens and parses the perf map of process `pid`, whose own pid (in its
 * PID namespace) is `ns_pid` and whose user is `uid`: ROOT/tmp/perf-NSPID.map,
 * with `root` NULL for "/". A file owned by anyone but `uid` is refused
 * (-EPERM). Returns 0 with *out, or -errno (fr_open_untrusted()'s
 * among them). May block on the file system: callers run it on a worker. */
int fr_perfmap_read(const char *root, uint32_t ns_pid, uid_t uid, struct fr_perfmap **out);

/* The name of the entry covering `addr`: 0 with *name (owned by `m`), or
 * -ENOENT. */
int fr_perfmap_lookup(const struct fr_perfmap *m, uint64_t addr, const char **name);

/* The number of entries kept. */
size_t fr_perfmap_count(const struct fr_perfmap *m);

/* Frees a map; accepts NULL. */
void fr_perfmap_free(struct fr_perfmap *m);

/* Creates an empty cache, or NULL on allocation failure. */
struct fr_perfmaps *fr_perfmaps_new(void);

/* Names `addr` in anonymous memory of process `pid` from its perf map,
 * read once per process for the cache's life (a profile), within a
 * deadline on a worker thread (a /tmp on FUSE or a hung mount cannot hold
 * the caller). While the process runs, its user and its pid in its
 * namespace are taken from /proc/PID/status, and the map is looked for
 * under /proc/PID/root unless `same_root` (the process sees "/" as this
 * one does). Once it is gone, `cached` (NULL: none) is the recorder's copy
 * of its map (recorder/tracking/symcache.h), read when owned by root or by this
 * process's user. Returns 0 with *name (owned by the cache), or -ENOENT,
 * -ESRCH (process gone, no copy) or the error the map's reading got. */
int fr_perfmaps_lookup(struct fr_perfmaps *c, uint32_t pid, bool same_root, const char *cached,
		       uint64_t addr, const char **name);

/* Frees the cache and every name it returned; accepts NULL. */
void fr_perfmaps_free(struct fr_perfmaps *c);

/* The effective uid of process `pid` (whose files a perf map must be) and
 * its pid in its own namespace (the PID of its /tmp/perf-PID.map), from
 * /proc/PID/status. Returns 0, or -ESRCH when the process is gone. */
int fr_perfmap_proc_ids(uint32_t pid, uid_t *uid, uint32_t *ns_pid);

#endif
