/* Named cursors of attach --since-last (recorder/requests/cursors.h): the set in
 * memory, its file beside the ring, read safely at start and replaced
 * atomically on each move.
 */
#include "recorder/requests/cursors.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/grow.h"
#include "core/util/log.h"
#include "ipc/msg.h"

#define HEADER "flightrec-cursors 1\n"

struct cursor {
	uint32_t uid;
	int busy;  /* a call holds it */
	int saved; /* it has a time (not new) */
	int64_t t_ns;
	char name[FR_IPC_CURSOR_NAME_MAX + 1];
};

struct fr_cursors {
	pthread_mutex_t lock;
	char *dir;  /* the file's directory */
	char *base; /* its name there */
	struct cursor *v;
	uint32_t n, cap;
};

static struct cursor *find(struct fr_cursors *c, uint32_t uid, const char *name)
{
	for (uint32_t i = 0; i < c->n; i++)
		if (c->v[i].uid == uid && strcmp(c->v[i].name, name) == 0)
			return &c->v[i];
	return NULL;
}

static uint32_t count_uid(const struct fr_cursors *c, uint32_t uid)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < c->n; i++)
		k += c->v[i].uid == uid;
	return k;
}

static struct cursor *add(struct fr_cursors *c, uint32_t uid, const char *name)
{
	struct cursor *cur;

	if (FR_GROW(c->v, &c->cap, c->n + 1, 16) < 0)
		return NULL;
	cur = &c->v[c->n++];
	memset(cur, 0, sizeof(*cur));
	cur->uid = uid;
	snprintf(cur->name, sizeof(cur->name), "%s", name);
	return cur;
}

/* One line "UID NAME T_NS" into the set. Returns 0, or -1 when it does
 * not parse, names a cursor twice or goes over the limits. */
static int load_line(struct fr_cursors *c, const char *line)
{
	char name[FR_IPC_CURSOR_NAME_MAX + 2];
	unsigned long uid;
	long long t;
	struct cursor *cur;
	int end = 0;

	if (sscanf(line, "%lu %65s %lld%n", &uid, name, &t, &end) != 3 || line[end] != '\0' ||
	    uid >= UINT32_MAX || t <= 0 || !fr_ipc_cursor_name_ok(name) ||
	    find(c, (uint32_t)uid, name) || c->n >= FR_CURSORS_MAX ||
	    count_uid(c, (uint32_t)uid) >= FR_CURSORS_PER_USER)
		return -1;
	cur = add(c, (uint32_t)uid, name);
	if (!cur)
		return -1;
	cur->saved = 1;
	cur->t_ns = t;
	return 0;
}

/* Reads the file, if any: a regular file of the daemon's user, not
 * through a symbolic link, of bounded size. */
static int load(struct fr_cursors *c, const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	char *buf = NULL, *line, *save = NULL;
	unsigned bad = 0;
	ssize_t len;

	if (fd < 0) {
		if (errno != ENOENT)
			fr_set_err(err, errlen, "cannot open %s: %s; starting without cursors",
				   path, strerror(errno));
		return 0;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (size_t)st.st_size > FR_CURSORS_FILE_MAX) {
		fr_set_err(err, errlen,
			   "%s is not a regular file of this user of at most %zu bytes; starting "
			   "without cursors",
			   path, FR_CURSORS_FILE_MAX);
		close(fd);
		return 0;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	len = fr_pread_full(fd, buf, (size_t)st.st_size, 0);
	close(fd);
	if (len < 0 || strncmp(buf, HEADER, strlen(HEADER)) != 0) {
		fr_set_err(err, errlen, "%s is not a cursors file; starting without cursors", path);
		free(buf);
		return 0;
	}
	buf[len] = '\0';
	for (line = strtok_r(buf + strlen(HEADER), "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		bad += load_line(c, line) < 0;
	if (bad)
		fr_set_err(err, errlen, "%s: %u lines that are not cursors were skipped", path,
			   bad);
	free(buf);
	return 0;
}

int fr_cursors_open(struct fr_cursors **out, const char *path, char *err, size_t errlen)
{
	struct fr_cursors *c = calloc(1, sizeof(*c));
	const char *slash = strrchr(path, '/');
	int ret;

	err[0] = '\0';
	*out = NULL;
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->lock, NULL);
	c->dir = slash ? strndup(path, (size_t)(slash - path + (slash == path))) : strdup(".");
	c->base = strdup(slash ? slash + 1 : path);
	if (!c->dir || !c->base || !c->base[0]) {
		fr_cursors_close(c);
		return -ENOMEM;
	}
	ret = load(c, path, err, errlen);
	if (ret < 0) {
		fr_cursors_close(c);
		return ret;
	}
	*out = c;
	return 0;
}

void fr_cursors_close(struct fr_cursors *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->lock);
	free(c->dir);
	free(c->base);
	free(c->v);
	free(c);
}

uint32_t fr_cursors_count(struct fr_cursors *c)
{
	uint32_t n = 0;

	pthread_mutex_lock(&c->lock);
	for (uint32_t i = 0; i < c->n; i++)
		n += c->v[i].saved;
	pthread_mutex_unlock(&c->lock);
	return n;
}

int fr_cursor_take(struct fr_cursors *c, uint32_t uid, const char *name, int64_t *t_ns, int *exists,
		   char *err, size_t errlen)
{
	struct cursor *cur;
	int ret = 0;

	if (!fr_ipc_cursor_name_ok(name)) {
		fr_set_err(err, errlen, "%s", FR_IPC_CURSOR_NAME_RULE);
		return -EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	cur = find(c, uid, name);
	if (cur && cur->busy) {
		fr_set_err(err, errlen,
			   "cursor \"%s\" is in use by another call; poll with one call at a time",
			   name);
		ret = -EBUSY;
	} else if (!cur && count_uid(c, uid) >= FR_CURSORS_PER_USER) {
		fr_set_err(err, errlen, "at most %d cursors per user; reuse one of your names",
			   FR_CURSORS_PER_USER);
		ret = -ENOSPC;
	} else if (!cur && c->n >= FR_CURSORS_MAX) {
		fr_set_err(err, errlen, "this recorder keeps at most %d cursors", FR_CURSORS_MAX);
		ret = -ENOSPC;
	} else if (!cur && !(cur = add(c, uid, name))) {
		fr_set_err(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	if (ret == 0) {
		cur->busy = 1;
		*exists = cur->saved;
		*t_ns = cur->saved ? cur->t_ns : 0;
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* The set as the file's text; NULL when out of memory. Under the lock. */
static char *format(const struct fr_cursors *c, size_t *len)
{
	size_t cap = strlen(HEADER) + (size_t)c->n * (10 + FR_IPC_CURSOR_NAME_MAX + 24) + 1;
	char *buf = malloc(cap);
	size_t off;

	if (!buf)
		return NULL;
	off = (size_t)snprintf(buf, cap, "%s", HEADER);
	for (uint32_t i = 0; i < c->n; i++)
		if (c->v[i].saved)
			off += (size_t)snprintf(buf + off, cap - off,
						"%" PRIu32 " %s %" PRId64 "\n", c->v[i].uid,
						c->v[i].name, c->v[i].t_ns);
	*len = off;
	return buf;
}

/* Writes `buf` to a new file beside the old one and renames it over it.
 * Returns 0 or -errno with the reason in `err`. */
static int save(const struct fr_cursors *c, const char *buf, size_t len, char *err, size_t errlen)
{
	int ret = fr_replace_file(c->dir, c->base, buf, len, 0600);

	if (ret < 0)
		fr_set_err(err, errlen, "cannot write %s/%s: %s", c->dir, c->base, strerror(-ret));
	return ret;
}

int fr_cursor_release(struct fr_cursors *c, uint32_t uid, const char *name, int commit,
		      int64_t t_ns, char *err, size_t errlen)
{
	struct cursor *cur;
	char *buf = NULL;
	size_t len = 0;
	int ret = 0;

	pthread_mutex_lock(&c->lock);
	cur = find(c, uid, name);
	if (cur) {
		cur->busy = 0;
		if (commit) {
			cur->saved = 1;
			cur->t_ns = t_ns;
		} else if (!cur->saved) {
			*cur = c->v[--c->n];
		}
	}
	if (cur && commit) {
		buf = format(c, &len);
		ret = buf ? save(c, buf, len, err, errlen) : -ENOMEM;
		if (!buf)
			fr_set_err(err, errlen, "out of memory");
	}
	pthread_mutex_unlock(&c->lock);
	free(buf);
	return ret;
}
