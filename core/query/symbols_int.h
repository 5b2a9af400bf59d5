/* Private to the symbolizer (core/query/symbols.c, the caches;
 * core/query/symbols_io.c, the file calls they make on a worker under a
 * deadline): the structs both see and the file calls.
 */
#ifndef FR_CORE_SYMBOLS_INT_H
#define FR_CORE_SYMBOLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "core/query/elf_image.h"
#include "core/util/htable.h"

struct fr_worker;
struct fr_kallsyms;
struct fr_perfmaps;

#define FILE_DEADLINE_MS 2000
#define FILE_LATE_DEADLINE_MS 50
#define FILE_WAIT_BUDGET_MS 10000

/* A file's parsed image in the process-wide table, by on-disk identity. */
struct image {
	struct hnode node; /* first: a struct hnode * is a struct image * */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int err;  /* < 0: the file is unusable */
	int refs; /* under images_lock, for images in shared_images */
	struct fr_elf_image elf;
};

struct request {
	struct hnode node;   /* first */
	struct image *image; /* NULL when err < 0 */
	/* The symbols of a debug file found under this request's root for an
	 * image that had none; this cache's alone. NULL: none. */
	struct fr_elf_image *debug;
	int err;
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
	bool need_build_id;	    /* fr_symbols_require_build_id() */
};

/* Frees an image (a struct image's node) and a heap-allocated ELF image
 * (accepts NULL). */
void symbols_image_free(struct hnode *n);
void symbols_elf_free(struct fr_elf_image *e);

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
 * in *out (NULL when there is none). Returns 0 or -ENOMEM. */
int symbols_timed_debug(struct fr_symbols *s, const struct image *img, const char *file,
			const char *root, struct fr_elf_image **out);

#endif
