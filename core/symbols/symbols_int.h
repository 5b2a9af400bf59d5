/* Private to the symbolizer (core/symbols/symbols.c, the caches;
 * core/symbols/symbols_io.c, the file calls they make on a worker under a
 * deadline): the structs both see and the file calls.
 */
#ifndef FR_CORE_SYMBOLS_INT_H
#define FR_CORE_SYMBOLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "core/symbols/elf_image.h"
#include "core/util/htable.h"

struct fr_worker;
struct fr_kallsyms;
struct fr_perfmaps;
struct symbols_py;

#define FILE_DEADLINE_MS 2000
#define FILE_LATE_DEADLINE_MS 50
#define FILE_WAIT_BUDGET_MS 10000

/* A file's parsed image in the process-wide table (symbols_images.c), by
 * on-disk identity. */
struct image {
	struct hnode node; /* first: a struct hnode * is a struct image * */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
	int err; /* < 0: the file is unusable */
	/* The rest is under images_lock. */
	int refs;     /* caches holding it; 0: idle, on the LRU list */
	bool idle;    /* on the LRU list */
	bool orphan;  /* not in the table: freed by its last holder */
	size_t bytes; /* what it holds, its debug file's included */
	struct image *lru_prev, *lru_next;
	int64_t idle_since; /* CLOCK_MONOTONIC ns it went on the LRU list */
	/* The debug file found by build id in the host's debug directory
	 * `debug_dir`, shared by every profile; NULL: none yet. */
	struct fr_elf_image *debug;
	char *debug_dir;
	struct fr_elf_image elf;
};

struct request {
	struct hnode node;   /* first */
	struct image *image; /* NULL when err < 0 */
	/* The symbols of the image's separate debug file: the image's shared
	 * one, or own_debug. NULL: none. */
	const struct fr_elf_image *debug;
	/* A debug file found under this request's root, or by
	 * .gnu_debuglink, for this cache alone. */
	struct fr_elf_image *own_debug;
	int err;
	uint32_t owner; /* fr_symbols_set_owner() when it was resolved */
	size_t root_len;
	size_t path_len;
	size_t bid_len;
	char key[]; /* root '\0' path '\0' build id */
};

struct fr_symbols {
	char *kallsyms;
	char *cache_dir;   /* the recorder's symbol cache; NULL: none */
	char **debug_dirs; /* where separate debug files are looked for */
	size_t ndebug_dirs;
	struct htable requests;
	struct image **held; /* references to shared images, dropped at free */
	size_t nheld, capheld;
	struct request *last;
	struct fr_kallsyms *kernel; /* shared; NULL until the first kernel lookup */
	int64_t waited_ms;	    /* spent on file calls that missed their deadline */
	struct fr_worker *worker;   /* NULL until the first file, or after one hung */
	struct fr_perfmaps *jit;    /* perf maps, from the first JIT frame on */
	struct symbols_py *py;	    /* Python names, from the first Python frame on */
	bool need_build_id;	    /* fr_symbols_require_build_id() */
	uint32_t owner;		    /* fr_symbols_set_owner(); 0: root */
};

/* Frees what fr_symbols_python() read (symbols_python.c). */
void symbols_python_free(struct fr_symbols *s);

/* Frees an image (a struct image's node) and a heap-allocated ELF image
 * (accepts NULL). */
void symbols_image_free(struct hnode *n);
void symbols_elf_free(struct fr_elf_image *e);

/* The image of `file` under `root` (a copy in the symbol cache when
 * `cached`): opened on the worker, then taken from the process-wide
 * table by the file's identity or parsed and put there; held by `s`
 * until fr_symbols_free(). Returns 0 with *out, or -errno (the open's,
 * -ENOMEM). (symbols_images.c) */
int images_get(struct fr_symbols *s, const char *root, const char *file, bool cached,
	       struct image **out);

/* Drops a reference images_get() gave. */
void images_put(struct image *img);

/* The debug file shared with `img`, when it was found in one of the
 * `ndirs` directories `dirs`; NULL otherwise. Valid while `img` is held. */
const struct fr_elf_image *images_debug(struct image *img, char *const *dirs, size_t ndirs);

/* Offers `dbg`, found by build id in the host's debug directory `dir`,
 * to every profile of `img`. Returns true when the image took it (it is
 * the image's now), false when the caller keeps it. */
bool images_set_debug(struct image *img, struct fr_elf_image *dbg, const char *dir);

/* fr_open_untrusted() of `file` under `root` within the deadline; with
 * `touch`, the file's mtime is set to now (a symbol cache entry used).
 * Returns the fd with *st, or -errno (-ETIMEDOUT). */
int symbols_timed_open(struct fr_symbols *s, const char *root, const char *file, bool touch,
		       struct stat *st);

/* Closes `fd` of a file a user may control on the worker. */
void symbols_timed_close(struct fr_symbols *s, int fd);

/* Loads `*imgp` from `fd` (taken) within the deadline; on a timeout *imgp
 * is a new image of the same identity whose err says so. Returns 0 or
 * -ENOMEM. */
int symbols_timed_load(struct fr_symbols *s, struct image **imgp, int fd, const char *file);

/* The symbols of `img`'s separate debug file (the cache's debug
 * directories on the host, then under `root`, then .gnu_debuglink's
 * places for the binary at `file`), within the deadline, into a new image
 * in *out (NULL when there is none), with in *host_dir the index of the
 * debug directory it was found in by build id on the host, or -1 (found
 * elsewhere). Returns 0 or -ENOMEM. */
int symbols_timed_debug(struct fr_symbols *s, const struct image *img, const char *file,
			const char *root, struct fr_elf_image **out, int *host_dir);

#endif
