/* The parsed images every struct fr_symbols of the process shares, and
 * keeps between profiles (see symbols.h, "Parsed images kept").
 *
 * One table, by the on-disk identity of the file an image was read from:
 * device, inode, size, mtime and ctime. The identity comes from the
 * fstat() of the file opened for the request (fr_open_untrusted(), on the
 * cache's worker), so a profile still opens each file it names; what the
 * table saves is the read and the parse. ctime is in the key because a
 * user can write a file in place and set its mtime back, but not its
 * ctime: a changed file is a new key, parsed anew.
 *
 * Why not the build id alone: a build id is a note any user can write
 * into a file of their own. Keyed by it, a forged file parsed first would
 * name root's libc for every later profile. Keyed by identity, a file is
 * only ever named by its own bytes, and the symbolizer still serves an
 * image only to a mapping whose build id equals the image's (image_try()).
 *
 * An image some cache holds is in use; once no cache holds it, it stays
 * (idle, on an LRU list) when it has a build id and parsed without error,
 * and is freed otherwise: a file without a build id is parsed again by the
 * next profile, as before. When a profile lets go of its images, idle
 * images are evicted least recently used first while the table's bytes
 * (in use and idle) pass the limit, so what is kept idle fits the limit,
 * and what profiles hold in use is what they held before this table kept
 * anything. Not on a parse: a profile whose files outgrow the limit would
 * then evict, file by file, the very images it is about to ask for next
 * (a scan through an LRU), and a second attach would find none of them.
 *
 * A debug file found by the image's build id in the host's debug
 * directories (root NULL) is the same for every profile: it is attached to
 * the image, counted in its bytes, and kept and evicted with it.
 *
 * Every field of the table and of the images' refs, bytes, LRU links and
 * debug slot is under images_lock. The parsed contents are immutable once
 * in the table (a struct fr_dwarf_lines serializes its own lookups).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/symbols/dwarf_lines.h"
#include "core/symbols/elf_image.h"
#include "core/symbols/symbols.h"
#include "core/symbols/symbols_int.h"
#include "core/util/htable.h"
#include "core/util/log.h"

static pthread_mutex_t images_lock = PTHREAD_MUTEX_INITIALIZER;
static struct htable shared_images;
/* Idle images, most recently used first. */
static struct image *lru_head, *lru_tail;
static uint64_t keep_limit = FR_SYMBOLS_KEEP_DEFAULT;
static struct fr_symbols_stats stats;

static uint64_t image_hash(const struct stat *st)
{
	uint64_t h = FR_FNV_OFFSET;

	h = fr_fnv1a(h, &st->st_dev, sizeof(st->st_dev));
	h = fr_fnv1a(h, &st->st_ino, sizeof(st->st_ino));
	h = fr_fnv1a(h, &st->st_size, sizeof(st->st_size));
	h = fr_fnv1a(h, &st->st_mtim, sizeof(st->st_mtim));
	return fr_fnv1a(h, &st->st_ctim, sizeof(st->st_ctim));
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

static void lru_unlink(struct image *img)
{
	if (!img->idle)
		return;
	if (img->lru_prev)
		img->lru_prev->lru_next = img->lru_next;
	else
		lru_head = img->lru_next;
	if (img->lru_next)
		img->lru_next->lru_prev = img->lru_prev;
	else
		lru_tail = img->lru_prev;
	img->lru_prev = img->lru_next = NULL;
	img->idle = false;
}

static void lru_push(struct image *img)
{
	img->idle_since = fr_now_mono_ns();
	img->lru_prev = NULL;
	img->lru_next = lru_head;
	if (lru_head)
		lru_head->lru_prev = img;
	lru_head = img;
	if (!lru_tail)
		lru_tail = img;
	img->idle = true;
}

/* Takes `img` out of the table. Under images_lock. */
static void table_remove(struct image *img)
{
	lru_unlink(img);
	fr_htable_remove(&shared_images, &img->node);
	stats.bytes -= img->bytes;
	stats.images--;
}

/* Evicts idle images, oldest first, while the table is over the limit;
 * returns them chained by lru_next, to free outside the lock. Under
 * images_lock. */
static struct image *evict_over_limit(void)
{
	struct image *gone = NULL;

	while (lru_tail && stats.bytes > keep_limit) {
		struct image *img = lru_tail;

		table_remove(img);
		stats.evictions++;
		img->lru_next = gone;
		gone = img;
	}
	return gone;
}

static void free_chain(struct image *img)
{
	while (img) {
		struct image *next = img->lru_next;

		symbols_image_free(&img->node);
		img = next;
	}
}

void images_put(struct image *img)
{
	struct image *gone = NULL;
	bool drop;

	pthread_mutex_lock(&images_lock);
	if (--img->refs > 0) {
		pthread_mutex_unlock(&images_lock);
		return;
	}
	/* Not in the table (orphan): only its references counted. */
	drop = img->orphan || img->err < 0 || !img->elf.build_id_len;
	if (!img->orphan) {
		if (drop)
			table_remove(img);
		else
			lru_push(img);
		gone = evict_over_limit();
	}
	pthread_mutex_unlock(&images_lock);
	if (drop)
		symbols_image_free(&img->node);
	free_chain(gone);
}

/* The image of identity `st`, with a reference taken, or NULL. Under
 * images_lock. */
static struct image *table_find(const struct stat *st, uint64_t hash)
{
	for (struct hnode *n = fr_htable_first(&shared_images, hash); n; n = n->next) {
		struct image *img = (struct image *)n;

		if (n->hash == hash && img->dev == st->st_dev && img->ino == st->st_ino &&
		    img->size == st->st_size && same_time(&img->mtime, &st->st_mtim) &&
		    same_time(&img->ctime, &st->st_ctim)) {
			lru_unlink(img);
			img->refs++;
			return img;
		}
	}
	return NULL;
}

/* Keeps the reference `img` for cache `s`. Returns 0, or -ENOMEM having
 * dropped it. */
static int hold(struct fr_symbols *s, struct image *img)
{
	if (s->nheld == s->capheld) {
		size_t cap = s->capheld ? s->capheld * 2 : 64;
		struct image **v = realloc(s->held, cap * sizeof(*v));

		if (!v) {
			images_put(img);
			return -ENOMEM;
		}
		s->held = v;
		s->capheld = cap;
	}
	s->held[s->nheld++] = img;
	return 0;
}

/* Puts the newly parsed `img` (one reference, the caller's) in the table,
 * unless another cache put one of the same file there meanwhile: then
 * the one that worked is kept and *imgp is it. Returns 0 or -ENOMEM. */
static int table_add(struct image **imgp, const struct stat *st)
{
	struct image *img = *imgp, *found, *stale = NULL;
	int ret = 0;

	pthread_mutex_lock(&images_lock);
	found = table_find(st, img->node.hash);
	if (found && found->err < 0 && img->err == 0) {
		/* Out of the table; its holders keep their references and
		 * the last one frees it. */
		table_remove(found);
		if (--found->refs == 0)
			stale = found;
		else
			found->orphan = true;
		found = NULL;
	}
	if (!found) {
		ret = fr_htable_insert(&shared_images, &img->node);
		if (ret == 0) {
			stats.bytes += img->bytes;
			stats.images++;
			stats.parses++;
		}
	}
	pthread_mutex_unlock(&images_lock);
	if (stale)
		symbols_image_free(&stale->node);
	if (found) {
		symbols_image_free(&img->node);
		*imgp = found;
	} else if (ret < 0) {
		symbols_image_free(&img->node);
		return -ENOMEM;
	}
	return 0;
}

int images_get(struct fr_symbols *s, const char *root, const char *file, bool cached,
	       struct image **out)
{
	struct image *img;
	struct stat st;
	uint64_t hash;
	int fd, ret;

	fd = symbols_timed_open(s, root, file, cached, &st);
	if (fd < 0)
		return fd;
	hash = image_hash(&st);
	pthread_mutex_lock(&images_lock);
	img = table_find(&st, hash);
	if (img)
		stats.hits++;
	pthread_mutex_unlock(&images_lock);
	if (img) {
		symbols_timed_close(s, fd);
		ret = hold(s, img);
		if (ret == 0)
			*out = img;
		return ret;
	}
	img = calloc(1, sizeof(*img));
	if (!img) {
		symbols_timed_close(s, fd);
		return -ENOMEM;
	}
	img->node.hash = hash;
	img->dev = st.st_dev;
	img->ino = st.st_ino;
	img->size = st.st_size;
	img->mtime = st.st_mtim;
	img->ctime = st.st_ctim;
	ret = symbols_timed_load(s, &img, fd, file);
	if (ret < 0) {
		symbols_image_free(&img->node);
		return ret;
	}
	if (img->err == -ENOMEM) {
		/* Not cached: the next look-up may have memory to succeed. */
		symbols_image_free(&img->node);
		return -ENOMEM;
	}
	if (img->err < 0)
		fr_log_debug("cannot read symbols of %s: %s", file, strerror(-img->err));
	img->refs = 1;
	img->bytes = sizeof(*img) + fr_elf_image_bytes(&img->elf);
	/* A file this cache gave up on (its deadline, its budget) is this
	 * cache's failure, not everyone's: not in the table. */
	if (img->err == -ETIMEDOUT || img->err == -EAGAIN)
		img->orphan = true;
	else if (table_add(&img, &st) < 0)
		return -ENOMEM;
	ret = hold(s, img);
	if (ret == 0)
		*out = img;
	return ret;
}

/* Whether `dir` is one of the `n` directories `dirs`. */
static bool dir_listed(const char *dir, char *const *dirs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(dirs[i], dir) == 0)
			return true;
	return false;
}

const struct fr_elf_image *images_debug(struct image *img, char *const *dirs, size_t ndirs)
{
	const struct fr_elf_image *dbg = NULL;

	pthread_mutex_lock(&images_lock);
	if (img->debug && dir_listed(img->debug_dir, dirs, ndirs)) {
		dbg = img->debug;
		stats.debug_hits++;
	}
	pthread_mutex_unlock(&images_lock);
	return dbg;
}

bool images_set_debug(struct image *img, struct fr_elf_image *dbg, const char *dir)
{
	char *copy = strdup(dir);
	bool taken = false;

	if (!copy)
		return false;
	pthread_mutex_lock(&images_lock);
	/* The first debug file found stays: a profile may be naming from it. */
	if (!img->debug && !img->orphan) {
		size_t bytes = sizeof(*dbg) + fr_elf_image_bytes(dbg);

		img->debug = dbg;
		img->debug_dir = copy;
		img->bytes += bytes;
		stats.bytes += bytes;
		stats.debug_parses++;
		taken = true;
	}
	pthread_mutex_unlock(&images_lock);
	if (!taken)
		free(copy);
	return taken;
}

void fr_symbols_keep_limit(uint64_t bytes)
{
	struct image *gone;

	pthread_mutex_lock(&images_lock);
	keep_limit = bytes;
	gone = evict_over_limit();
	pthread_mutex_unlock(&images_lock);
	free_chain(gone);
}

uint64_t fr_symbols_trim_idle(int64_t idle_ns)
{
	int64_t cutoff = fr_now_mono_ns() - idle_ns;
	struct image *gone = NULL;
	uint64_t freed = 0;

	pthread_mutex_lock(&images_lock);
	/* The tail is the image idle longest: stop at the first younger. */
	while (lru_tail && lru_tail->idle_since <= cutoff) {
		struct image *img = lru_tail;

		freed += img->bytes;
		table_remove(img);
		stats.evictions++;
		img->lru_next = gone;
		gone = img;
	}
	pthread_mutex_unlock(&images_lock);
	free_chain(gone);
	return freed;
}

void fr_symbols_get_stats(struct fr_symbols_stats *out)
{
	pthread_mutex_lock(&images_lock);
	*out = stats;
	out->limit = keep_limit;
	out->idle = 0;
	for (struct image *img = lru_head; img; img = img->lru_next)
		out->idle++;
	pthread_mutex_unlock(&images_lock);
}
