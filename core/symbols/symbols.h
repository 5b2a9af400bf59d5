/* Symbolization: function names for user addresses from the ELF files on
 * disk (.symtab, else .dynsym) and for kernel addresses from
 * /proc/kallsyms. The only file that talks to libelf.
 *
 * A struct fr_symbols caches every file it has read (keyed by path and build
 * id) and the kernel table, so a profile with a thousand frames in libc
 * opens libc once. Not thread-safe: use one per thread. The parsed files
 * behind it are shared by every struct fr_symbols of the process (each
 * holds references until it is freed), so concurrent profiles that name
 * the same files parse and keep them once.
 *
 * Parsed images kept: once no struct fr_symbols holds a parsed file, it
 * stays in memory (its symbols, its DWARF and the lines already looked up
 * in it, and the debug file found for it by build id on the host) for the
 * next profile, when it has a build id, up to fr_symbols_keep_limit()
 * bytes, least recently used evicted first. A later profile still opens
 * the file and finds it by its identity (device, inode, size, mtime,
 * ctime: a file changed in place is parsed anew), and still uses it only
 * for a mapping whose build id is the file's.
 */
#ifndef FR_CORE_SYMBOLS_H
#define FR_CORE_SYMBOLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/symbols/elf_image.h"

struct fr_symbols;

/* Creates an empty cache. `kallsyms` is the kernel symbol file to read on
 * first use (NULL for "/proc/kallsyms"). Returns NULL on allocation failure. */
struct fr_symbols *fr_symbols_new(const char *kallsyms);

/* Where separate debug files are looked for when none is given. */
#define FR_SYMBOLS_DEBUG_DIR "/usr/lib/debug"

/* Where names come from besides the mapped files, copied (call before the
 * first look-up):
 *
 * - `cache_dir` (NULL: none), the recorder's symbol cache
 *   (recorder/tracking/symcache.h): when the file through the process is gone or
 *   has another build id than the mapping's, CACHE_DIR/HEX_BUILD_ID is
 *   used instead, when it carries exactly that build id (a cache entry
 *   without one, or with another, is never used); its mtime is touched,
 *   so the recorder evicts the least recently used first. The perf map of
 *   a process that has exited is CACHE_DIR/perf-PID-START_NS[.uUID].map
 *   (fr_symcache_perfmap_name()).
 * - `debug_dirs` (NULL: FR_SYMBOLS_DEBUG_DIR alone; `ndebug_dirs` 0: none),
 *   searched in order for DIR/.build-id/xx/rest.debug on the host, then
 *   under the process's root, then for the .gnu_debuglink name beside the
 *   binary, in its .debug/ and under DIR + the binary's directory
 *   (core/symbols/debuglink.h). Looked for at each new struct fr_symbols (a
 *   profile): a debug file installed meanwhile is found by the next one.
 *
 * Returns 0 or -ENOMEM (the cache then has no cache_dir and no debug
 * directory). */
int fr_symbols_set_paths(struct fr_symbols *s, const char *cache_dir, const char *const *debug_dirs,
			 size_t ndebug_dirs);

/* The uid of the process the next look-ups are for (as its chunk
 * recorded it): besides the copies of root's files, the symbol cache's
 * copies of files this user owned are used for it, never another user's
 * (a user may write any build id into a file). Not called: root's only. */
void fr_symbols_set_owner(struct fr_symbols *s, uint32_t uid);

/* The symbol cache's name of the copy of an ELF file with build id `bid`
 * whose owner is `owner`: the build id in hex, followed by ".u" and the
 * owner's uid unless root owns it. Returns 0 or -ENAMETOOLONG. */
#define FR_SYMCACHE_NAME_MAX 160
int fr_symcache_elf_name(char *buf, size_t len, const uint8_t *bid, size_t bid_len, uint32_t owner);

/* The symbol cache's name of the perf map of process `pid` started at
 * `start_ns` (Unix ns, as chunks record it) of user `owner` in `dir`
 * (NULL: the name alone), into buf: perf-PID-START_NS.map, with ".u" and
 * the uid before ".map" unless root's (the cache counts its files per
 * owner by their names). Returns 0 or -ENAMETOOLONG. */
int fr_symcache_perfmap_name(char *buf, size_t len, const char *dir, uint32_t pid, int64_t start_ns,
			     uint32_t owner);

/* From now on, names user addresses only from a file whose build id is
 * the mapping's (-ESTALE otherwise, a missing build id on either side
 * included): for a profile of a user who is not privileged, whose
 * mapping's path may lead to a file only root may read. */
void fr_symbols_require_build_id(struct fr_symbols *s);

/* What the process keeps of parsed images by default: 256 MiB. */
#define FR_SYMBOLS_KEEP_DEFAULT (256ULL << 20)

/* Sets how many bytes of parsed images the process keeps (in use and
 * idle together) before it evicts idle ones; 0 keeps none past the
 * profiles that use them. Evicts at once what no longer fits. */
void fr_symbols_keep_limit(uint64_t bytes);

/* Frees the images no profile has used for `idle_ns` or more, so that a
 * daemon idle for a while gives their memory back. Returns their bytes. */
uint64_t fr_symbols_trim_idle(int64_t idle_ns);

/* The process-wide table of parsed images. `bytes` counts what images
 * hold in memory: their tables, the copy of the file their DWARF is read
 * from, libdw's decompressed sections and an upper estimate of what it
 * parses (fr_dwarf_lines_bytes()), the lines cache. */
struct fr_symbols_stats {
	uint64_t parses;       /* files parsed and put in the table */
	uint64_t hits;	       /* images a profile found there */
	uint64_t debug_parses; /* host debug files attached to an image */
	uint64_t debug_hits;   /* ... and used by a later profile */
	uint64_t evictions;    /* idle images freed for the limit */
	uint64_t images;       /* in the table, in use or idle */
	uint64_t idle;	       /* of which no profile holds */
	uint64_t bytes;	       /* held by the images in the table */
	uint64_t limit;	       /* fr_symbols_keep_limit() */
};

/* A snapshot of the table's counters. */
void fr_symbols_get_stats(struct fr_symbols_stats *out);

/* Frees the cache and every name it returned; accepts NULL. */
void fr_symbols_free(struct fr_symbols *s);

/* Resolves a user address of a process.
 *
 * The address `addr` lies in a mapping [map_start, ...) of file `path`
 * mapped at file offset `map_pgoff`. `root` is a directory the path is
 * relative to (e.g. "/proc/1234/root" so files inside containers are
 * found), or NULL; the path itself is tried when the rooted one fails,
 * and then the symbol cache's copy (fr_symbols_set_paths()).
 * When `build_id` is given (len > 0) and the file on disk has another build
 * id, the file is not used (it was replaced since it was mapped).
 *
 * The file is opened with fr_open_untrusted(): a symbolic link, a FIFO or
 * device, or a file over FR_ELF_MAX_SIZE at the path is not used
 * (-ELOOP, -ENOEXEC, -EFBIG).
 *
 * On success returns 0, the function name in *name (owned by the cache),
 * and the file-relative virtual address in *elf_addr when non-NULL.
 * -ENOENT when no symbol covers the address, -ESTALE on a build id
 * mismatch, or -errno when the file cannot be read. */
int fr_symbols_user(struct fr_symbols *s, const char *root, const char *path,
		    const uint8_t *build_id, size_t build_id_len, uint64_t map_start,
		    uint64_t map_pgoff, uint64_t addr, const char **name, uint64_t *elf_addr);

/* Names an address of process `pid` in its anonymous executable mapping
 * `path` ("//anon" and the like: JIT-compiled code) from the process's
 * perf map, /tmp/perf-PID.map (core/symbols/perfmap.h), under its
 * /proc/PID/root unless `same_root`; once the process has exited, from
 * the symbol cache's copy for `pid` started at `start_ns` (0: unknown, no
 * copy). Returns 0 with *name (owned by the cache), -ENOENT (not
 * anonymous memory, or no entry), or the error reading the map got. */
int fr_symbols_jit(struct fr_symbols *s, uint32_t pid, int64_t start_ns, bool same_root,
		   const char *path, uint64_t addr, const char **name);
/* Names a Python frame (FR_FRAME_PY, core/store/sample.h) of process
 * `pid` started at `start_ns`: code object `code`, `offset` bytes into its
 * bytecode (FR_PY_NO_OFFSET: not known), from the symbol cache's Python
 * names of the process (core/symbols/pycodes.h,
 * fr_symcache_python_name()) of the owner fr_symbols_set_owner() set,
 * read once for the life of `s` (at most 256 MiB of such files in all).
 * Returns 0 with its qualified name, file (owned by `s`), line (-1: not
 * known) and first line, or -ENOENT (no file, or the code not in it). */
int fr_symbols_python(struct fr_symbols *s, uint32_t pid, int64_t start_ns, uint64_t code,
		      uint32_t offset, const char **qualname, const char **file, int32_t *line,
		      int32_t *firstline);

/* What the symbol cache says of process `pid` started at `start_ns` as a
 * CPython process: its release ("" not known) and why its Python frames
 * are not read ("" when they are), owned by `s`. Returns 0, or -ENOENT
 * (not known as a Python process). */
int fr_symbols_python_status(struct fr_symbols *s, uint32_t pid, int64_t start_ns,
			     const char **version, const char **problem);

/* The source lines and inline frames (core/symbols/dwarf_lines.h) of the
 * file fr_symbols_user() resolved for the same root, path and build id:
 * the file's own DWARF, else its debug file's. NULL when there is none or
 * the file was not usable. Owned by the cache; lookups on it take
 * link-time addresses (fr_symbols_user()'s *elf_addr). */
struct fr_dwarf_lines *fr_symbols_user_dwarf(struct fr_symbols *s, const char *root,
					     const char *path, const uint8_t *build_id,
					     size_t build_id_len);

/* Resolves a kernel address from kallsyms (modules included). Returns 0 and
 * the symbol name (owned by the cache), or -ENOENT. */
int fr_symbols_kernel(struct fr_symbols *s, uint64_t addr, const char **name);

#endif
