/* The symbolizer's file calls (see core/symbols/symbols.c): each open, load,
 * debug file search and close of a file a user may control runs on the
 * cache's worker thread (core/util/worker.h), waited for at most
 * FILE_DEADLINE_MS, since a FUSE server that never answers (or a hung
 * network mount) would otherwise hold an attach forever. A call that
 * misses its deadline is left to finish alone and frees what it made.
 */
#include "core/symbols/symbols_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/debuglink.h"
#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/worker.h"

void symbols_image_free(struct hnode *n)
{
	struct image *img = (struct image *)n;

	symbols_elf_free(img->debug);
	free(img->debug_dir);
	fr_elf_image_fini(&img->elf);
	free(img);
}

void symbols_elf_free(struct fr_elf_image *e)
{
	if (e) {
		fr_elf_image_fini(e);
		free(e);
	}
}

/* ---- file calls with a deadline ---- */

enum file_op { FILE_OPEN, FILE_LOAD, FILE_ADD_DEBUG, FILE_CLOSE };

/* One piece of file work, handed to the cache's worker thread. */
struct file_call {
	enum file_op op;
	char *file, *root;	  /* owned copies */
	int fd;			  /* OPEN: result; LOAD: input (owned) */
	struct stat st;		  /* OPEN: result */
	struct image *img;	  /* LOAD: the image filled (owned) */
	struct fr_elf_image *dbg; /* ADD_DEBUG: the debug file's symbols (owned) */
	char **dirs;		  /* ADD_DEBUG: debug directories (owned copies) */
	size_t ndirs;
	bool touch;   /* OPEN: mark the file used (a symbol cache entry) */
	int host_dir; /* ADD_DEBUG: the dirs[] it was found in on the host, or -1 */
	int ret;
};

static void file_call_free(struct file_call *c)
{
	if (c->fd >= 0)
		close(c->fd);
	if (c->img)
		symbols_image_free(&c->img->node);
	symbols_elf_free(c->dbg);
	for (size_t i = 0; i < c->ndirs; i++)
		free(c->dirs[i]);
	free(c->dirs);
	free(c->file);
	free(c->root);
	free(c);
}

/* The debug file of c->dbg: by build id under each debug directory of
 * the host, then of the process's root, then where .gnu_debuglink says. */
static int find_debug(struct file_call *c)
{
	const char *const *dirs = (const char *const *)c->dirs;
	int ret = 0;

	c->host_dir = -1;
	for (size_t i = 0; i < c->ndirs && ret == 0 && c->dbg->debug_missing; i++) {
		ret = fr_elf_debug_load(c->dbg, NULL, dirs[i]);
		if (!c->dbg->debug_missing)
			c->host_dir = (int)i;
	}
	for (size_t i = 0; c->root && i < c->ndirs && ret == 0 && c->dbg->debug_missing; i++)
		ret = fr_elf_debug_load(c->dbg, c->root, dirs[i]);
	if (ret == 0 && c->dbg->debug_missing)
		ret = fr_debuglink_load(c->dbg, c->root, c->file, dirs, c->ndirs);
	return ret;
}

static void file_call_do(struct file_call *c)
{
	int ret;

	switch (c->op) {
	case FILE_OPEN:
		ret = fr_open_untrusted(c->root, c->file, FR_ELF_MAX_SIZE, &c->st);
		c->fd = ret >= 0 ? ret : -1;
		c->ret = ret >= 0 ? 0 : ret;
		/* Least recently used goes first when the recorder evicts; a
		 * cache this reader may not write (a copy) is used as it is. */
		if (ret >= 0 && c->touch)
			(void)futimens(c->fd, NULL);
		break;
	case FILE_LOAD:
		c->ret = fr_elf_image_load(&c->img->elf, c->fd, (uint64_t)c->img->size);
		/* Here too: a close can wait on the file system (FUSE). */
		close(c->fd);
		c->fd = -1;
		break;
	case FILE_CLOSE:
		close(c->fd);
		c->fd = -1;
		c->ret = 0;
		break;
	default: c->ret = find_debug(c); break;
	}
}

static void file_call_run_v(void *c)
{
	file_call_do(c);
}

static void file_call_free_v(void *c)
{
	file_call_free(c);
}

/* Runs `c` on the cache's worker and waits for it within the deadline.
 * Returns 0 with `c` done (the caller frees it), or -ETIMEDOUT, -EAGAIN
 * (too many workers of the process are stuck) or -ENOMEM with `c` no
 * longer the caller's. */
static int file_call_run(struct fr_symbols *s, struct file_call *c)
{
	int deadline_ms = s->waited_ms >= FILE_WAIT_BUDGET_MS ? FILE_LATE_DEADLINE_MS
							      : FILE_DEADLINE_MS;
	char name[256];
	int ret;

	/* Copied first: past a deadline `c` is the abandoned worker's. */
	snprintf(name, sizeof(name), "%s", c->file);
	ret = fr_worker_call(&s->worker, file_call_run_v, file_call_free_v, c,
			     (int64_t)deadline_ms * 1000000);
	if (ret == -ETIMEDOUT) {
		s->waited_ms += deadline_ms;
		fr_log_warn("reading %s took over %d ms; going on without its symbols", name,
			    deadline_ms);
	} else if (ret < 0) {
		file_call_free(c);
	}
	return ret;
}

static struct file_call *file_call_new(enum file_op op, const char *file, const char *root)
{
	struct file_call *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->op = op;
	c->fd = -1;
	c->file = strdup(file);
	c->root = root ? strdup(root) : NULL;
	if (!c->file || (root && !c->root)) {
		free(c->file);
		free(c->root);
		free(c);
		return NULL;
	}
	return c;
}

/* fr_open_untrusted() of `file` under `root` within the deadline.
 * Returns the fd with *st, or -errno (-ETIMEDOUT). */
int symbols_timed_open(struct fr_symbols *s, const char *root, const char *file, bool touch,
		       struct stat *st)
{
	struct file_call *c = file_call_new(FILE_OPEN, file, root);
	int ret;

	if (!c)
		return -ENOMEM;
	c->touch = touch;
	ret = file_call_run(s, c);
	if (ret < 0)
		return ret;
	ret = c->ret < 0 ? c->ret : c->fd;
	*st = c->st;
	c->fd = -1;
	file_call_free(c);
	return ret;
}

/* Closes `fd` of a file a user may control on the worker: on FUSE a close
 * waits for the server's answer to FLUSH. */
void symbols_timed_close(struct fr_symbols *s, int fd)
{
	struct file_call *c = file_call_new(FILE_CLOSE, "(close)", NULL);

	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	if (file_call_run(s, c) == 0)
		file_call_free(c);
}

/* image_load() of `*imgp` from `fd` (taken) within the deadline. The
 * image travels with the call: it comes back in *imgp with its err set,
 * or on a timeout *imgp is a new image of the same identity whose err
 * says so (the old one is freed by the call when it ends). Returns 0, or
 * -ENOMEM. */
int symbols_timed_load(struct fr_symbols *s, struct image **imgp, int fd, const char *file)
{
	struct image *img = *imgp, *copy = calloc(1, sizeof(*copy));
	struct file_call *c = file_call_new(FILE_LOAD, file, NULL);
	int ret;

	if (!c || !copy) {
		close(fd);
		free(copy);
		if (c)
			file_call_free(c);
		return -ENOMEM;
	}
	copy->node.hash = img->node.hash;
	copy->dev = img->dev;
	copy->ino = img->ino;
	copy->size = img->size;
	copy->mtime = img->mtime;
	c->img = img;
	c->fd = fd;
	ret = file_call_run(s, c);
	if (ret < 0) {
		copy->err = ret == -ENOMEM ? -ENOMEM : -ETIMEDOUT;
		*imgp = copy;
		return 0;
	}
	free(copy);
	img->err = c->ret;
	c->img = NULL;
	file_call_free(c);
	return 0;
}

/* Reads the symbols of `img`'s debug file under `root`, within the
 * deadline (a file that misses it is gone without), into a new image in
 * *out (NULL when there is none). Returns 0 or -ENOMEM. */
int symbols_timed_debug(struct fr_symbols *s, const struct image *img, const char *file,
			const char *root, struct fr_elf_image **out, int *host_dir)
{
	struct fr_elf_image *dbg = calloc(1, sizeof(*dbg));
	struct file_call *c = file_call_new(FILE_ADD_DEBUG, file, root);
	int ret;

	if (!c || !dbg) {
		free(dbg);
		if (c)
			file_call_free(c);
		return -ENOMEM;
	}
	memcpy(dbg->build_id, img->elf.build_id, sizeof(dbg->build_id));
	dbg->build_id_len = img->elf.build_id_len;
	dbg->arm = img->elf.arm;
	memcpy(dbg->debuglink, img->elf.debuglink, sizeof(dbg->debuglink));
	dbg->debuglink_crc = img->elf.debuglink_crc;
	dbg->debug_missing = true;
	c->dbg = dbg;
	if (s->ndebug_dirs) {
		c->dirs = calloc(s->ndebug_dirs, sizeof(*c->dirs));
		for (size_t i = 0; c->dirs && i < s->ndebug_dirs; i++, c->ndirs++)
			if (!(c->dirs[i] = strdup(s->debug_dirs[i])))
				break;
		if (c->ndirs < s->ndebug_dirs) {
			file_call_free(c);
			return -ENOMEM;
		}
	}
	if (file_call_run(s, c) < 0)
		return 0;
	ret = c->ret;
	if (ret == 0 && !dbg->debug_missing) {
		*out = dbg;
		*host_dir = c->host_dir;
		c->dbg = NULL;
	}
	file_call_free(c);
	return ret;
}
