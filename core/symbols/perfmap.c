/* Perf maps (see core/symbols/perfmap.h): parsing, reading with the care a
 * file in /tmp needs, and the per-profile cache.
 *
 * Invariants: a parsed map's entries are sorted by start, starts unique,
 * each entry's end at most the next one's start (overlaps are cut when
 * parsing), names NUL-terminated in one arena the map owns.
 */
#include "core/symbols/perfmap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/grow.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/worker.h"

/* As long as core/symbols/symbols.c gives an ELF file: a perf map is read
 * whole, and a large one takes a while. */
#define PERFMAP_DEADLINE_MS 2000

struct entry {
	uint64_t start, end;
	uint32_t name; /* offset in the arena */
	uint32_t line; /* for a stable order of equal starts */
};

struct fr_perfmap {
	struct entry *e;
	size_t n;
	char *arena;
};

bool fr_perfmap_is_anon(const char *path)
{
	return strcmp(path, "//anon") == 0 || strncmp(path, "[anon:", 6) == 0 ||
	       strncmp(path, "/memfd:", 7) == 0;
}

/* ---- parsing ---- */

/* Parses a hex number (an optional "0x", at most 16 digits) at *p up to
 * `end`. Returns 0 and moves *p past it, or -EINVAL. */
static int parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, digits++) {
		int d = fr_hex_digit(*s);

		if (d < 0)
			break;
		if (digits == 16)
			return -EINVAL;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return -EINVAL;
	*p = s;
	*out = v;
	return 0;
}

/* Parses one line [s, end) without its newline. Returns 0 with the entry
 * (its name not yet copied: [*name, *name + *name_len)), or -EINVAL. */
static int parse_line(const char *s, const char *end, struct entry *e, const char **name,
		      size_t *name_len)
{
	uint64_t start, size;

	if (end > s && end[-1] == '\r')
		end--;
	if (parse_hex(&s, end, &start) < 0 || s == end || *s != ' ')
		return -EINVAL;
	s++;
	if (parse_hex(&s, end, &size) < 0 || s == end || *s != ' ')
		return -EINVAL;
	s++;
	if (!size || start + size < start || s == end)
		return -EINVAL;
	e->start = start;
	e->end = start + size;
	*name = s;
	*name_len = (size_t)(end - s);
	if (*name_len > FR_PERFMAP_MAX_NAME)
		*name_len = FR_PERFMAP_MAX_NAME;
	return 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Sorts the entries and resolves overlaps (see fr_perfmap_parse()). */
static void resolve_overlaps(struct fr_perfmap *m)
{
	size_t out = 0;

	qsort(m->e, m->n, sizeof(*m->e), entry_cmp);
	for (size_t i = 0; i < m->n; i++) {
		/* Of equal starts, the last line: skip to it. */
		if (i + 1 < m->n && m->e[i + 1].start == m->e[i].start)
			continue;
		if (out && m->e[out - 1].end > m->e[i].start)
			m->e[out - 1].end = m->e[i].start;
		m->e[out++] = m->e[i];
	}
	m->n = out;
}

/* Copies a name into the arena at `at`: bytes that would break a
 * profile's text forms (control characters, which folded stacks and
 * terminals take as structure) become '?'. */
static void copy_name(char *at, const char *name, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		at[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	at[len] = '\0';
}

/* Counts the whole lines of `buf`: an upper bound of the entries. */
static size_t count_lines(const char *buf, size_t len)
{
	size_t n = 0;

	for (const char *p = buf; (p = memchr(p, '\n', len - (size_t)(p - buf))); p++)
		n++;
	return n;
}

int fr_perfmap_parse(const char *buf, size_t len, struct fr_perfmap **out)
{
	struct fr_perfmap *m = calloc(1, sizeof(*m));
	size_t lines = count_lines(buf, len), arena_size = 0;
	const char *p = buf, *end = buf + len, *nl;

	if (!m)
		return -ENOMEM;
	/* Each name is at most its line, so the arena never exceeds the
	 * input (nor 4 GiB: FR_PERFMAP_MAX_SIZE). */
	if (lines > FR_PERFMAP_MAX_ENTRIES)
		lines = FR_PERFMAP_MAX_ENTRIES;
	m->e = calloc(lines ? lines : 1, sizeof(*m->e));
	m->arena = malloc(len + 1);
	if (!m->e || !m->arena)
		goto err_free;
	for (uint32_t line = 0; (nl = memchr(p, '\n', (size_t)(end - p))); p = nl + 1, line++) {
		struct entry e;
		const char *name;
		size_t name_len;

		if (parse_line(p, nl, &e, &name, &name_len) < 0)
			continue;
		if (m->n == lines) {
			fr_perfmap_free(m);
			return -E2BIG;
		}
		e.line = line;
		e.name = (uint32_t)arena_size;
		copy_name(m->arena + arena_size, name, name_len);
		arena_size += name_len + 1;
		m->e[m->n++] = e;
	}
	resolve_overlaps(m);
	*out = m;
	return 0;
err_free:
	fr_perfmap_free(m);
	return -ENOMEM;
}

int fr_perfmap_lookup(const struct fr_perfmap *m, uint64_t addr, const char **name)
{
	size_t lo = 0, hi = m ? m->n : 0;

	/* The last entry starting at or before addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= m->e[lo - 1].end)
		return -ENOENT;
	*name = m->arena + m->e[lo - 1].name;
	return 0;
}

size_t fr_perfmap_count(const struct fr_perfmap *m)
{
	return m ? m->n : 0;
}

void fr_perfmap_free(struct fr_perfmap *m)
{
	if (!m)
		return;
	free(m->e);
	free(m->arena);
	free(m);
}

/* ---- reading ---- */

int fr_perfmap_load(int fd, uint64_t size, struct fr_perfmap **out)
{
	ssize_t got;
	char *buf;
	int ret;

	if (size > FR_PERFMAP_MAX_SIZE)
		return -EFBIG;
	buf = malloc(size ? size : 1);
	if (!buf)
		return -ENOMEM;
	/* A file that shrank is parsed as far as it goes. */
	got = fr_pread_full(fd, buf, (size_t)size, 0);
	ret = got < 0 ? (int)got : fr_perfmap_parse(buf, (size_t)got, out);
	free(buf);
	return ret;
}

/* fr_perfmap_read() of a map of at most `max_size` bytes; *size gets the
 * bytes it read. */
static int read_map(const char *root, uint32_t ns_pid, uid_t uid, uint64_t max_size, uint64_t *size,
		    struct fr_perfmap **out)
{
	char path[64];
	struct stat st;
	int fd, ret;

	*size = 0;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", ns_pid);
	fd = fr_open_untrusted(root, path, max_size, &st);
	if (fd < 0)
		return fd;
	/* Anyone may create /tmp/perf-PID.map before the process does (or
	 * after it exits): only its user's names are taken. Not root's
	 * either, unlike perf (which runs as the user): a process in its own
	 * user and mount namespaces can bind-mount a file only root may read
	 * there, and the daemon reads as root. */
	if (st.st_uid != uid) {
		ret = -EPERM;
	} else {
		*size = (uint64_t)st.st_size;
		ret = fr_perfmap_load(fd, (uint64_t)st.st_size, out);
	}
	close(fd);
	return ret;
}

/* The symbol cache's copy of a perf map (recorder/tracking/symcache.h): written by
 * the recorder, so owned by root or by whoever runs this reader (a copy
 * of the cache taken off the machine); anyone else's file is not used. */
static int read_cached(const char *file, uint64_t max_size, uint64_t *size, struct fr_perfmap **out)
{
	struct stat st;
	int fd, ret;

	*size = 0;
	fd = fr_open_untrusted(NULL, file, max_size, &st);
	if (fd < 0)
		return fd;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		ret = -EPERM;
	} else {
		*size = (uint64_t)st.st_size;
		ret = fr_perfmap_load(fd, (uint64_t)st.st_size, out);
	}
	close(fd);
	return ret;
}

int fr_perfmap_read(const char *root, uint32_t ns_pid, uid_t uid, struct fr_perfmap **out)
{
	uint64_t size;

	return read_map(root, ns_pid, uid, FR_PERFMAP_MAX_SIZE, &size, out);
}

/* ---- the cache ---- */

struct proc_map {
	uint32_t pid;
	int err;
	struct fr_perfmap *map;
};

struct fr_perfmaps {
	struct proc_map *procs;
	size_t n, cap;
	size_t last;
	struct fr_worker *worker;
	bool gave_up;	     /* a read missed its deadline: no more for this cache */
	uint64_t read_bytes; /* of maps read, at most FR_PERFMAPS_MAX_TOTAL */
};

/* One read handed to the worker. */
struct read_call {
	char *cached; /* non-NULL: read this copy (the symbol cache's) instead */
	char root[64];
	uint32_t ns_pid;
	uid_t uid;
	uint64_t max_size, size;
	struct fr_perfmap *map;
	int ret;
};

static void read_call_run(void *arg)
{
	struct read_call *c = arg;

	if (c->cached)
		c->ret = read_cached(c->cached, c->max_size, &c->size, &c->map);
	else
		c->ret = read_map(c->root[0] ? c->root : NULL, c->ns_pid, c->uid, c->max_size,
				  &c->size, &c->map);
}

static void read_call_drop(void *arg)
{
	struct read_call *c = arg;

	fr_perfmap_free(c->map);
	free(c->cached);
	free(c);
}

int fr_perfmap_proc_ids(uint32_t pid, uid_t *uid, uint32_t *ns_pid)
{
	char path[64], line[256];
	int have = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return -ESRCH;
	*ns_pid = pid;
	while (fgets(line, sizeof(line), f)) {
		unsigned int r, e;
		char *last;

		if (sscanf(line, "Uid: %u %u", &r, &e) == 2) {
			*uid = (uid_t)e;
			have = 1;
		} else if (strncmp(line, "NSpid:", 6) == 0 && (last = strrchr(line, '\t'))) {
			*ns_pid = (uint32_t)strtoul(last + 1, NULL, 10);
		}
	}
	fclose(f);
	return have ? 0 : -ESRCH;
}

/* Reads the perf map of `pid` within the deadline. Returns 0 with *map, or
 * -errno. */
static int timed_read(struct fr_perfmaps *c, uint32_t pid, bool same_root, const char *cached,
		      struct fr_perfmap **map)
{
	struct read_call *rc;
	int ret;

	if (c->gave_up)
		return -ETIMEDOUT;
	/* Many processes' maps would otherwise cost a profile their sum. */
	if (c->read_bytes >= FR_PERFMAPS_MAX_TOTAL)
		return -EFBIG;
	rc = calloc(1, sizeof(*rc));
	if (!rc)
		return -ENOMEM;
	if (cached) {
		rc->cached = strdup(cached);
		ret = rc->cached ? 0 : -ENOMEM;
	} else {
		ret = fr_perfmap_proc_ids(pid, &rc->uid, &rc->ns_pid);
	}
	if (ret < 0)
		goto err_free;
	if (!same_root)
		snprintf(rc->root, sizeof(rc->root), "/proc/%u/root", pid);
	rc->max_size = FR_PERFMAPS_MAX_TOTAL - c->read_bytes;
	if (rc->max_size > FR_PERFMAP_MAX_SIZE)
		rc->max_size = FR_PERFMAP_MAX_SIZE;
	ret = fr_worker_call(&c->worker, read_call_run, read_call_drop, rc,
			     (int64_t)PERFMAP_DEADLINE_MS * 1000000);
	if (ret == -ETIMEDOUT) {
		c->gave_up = true;
		fr_log_warn("reading the perf map of pid %u took over %d ms; going on without", pid,
			    PERFMAP_DEADLINE_MS);
		return ret;
	}
	if (ret < 0)
		goto err_free;
	c->read_bytes += rc->size;
	ret = rc->ret;
	*map = rc->map;
	rc->map = NULL;
err_free:
	read_call_drop(rc);
	return ret;
}

/* The cache's entry of `pid`, read when new. Returns it or NULL (ENOMEM). */
static struct proc_map *proc_get(struct fr_perfmaps *c, uint32_t pid, bool same_root,
				 const char *cached)
{
	struct proc_map *pm;

	if (c->n && c->procs[c->last].pid == pid)
		return &c->procs[c->last];
	for (size_t i = 0; i < c->n; i++) {
		if (c->procs[i].pid == pid) {
			c->last = i;
			return &c->procs[i];
		}
	}
	if (FR_GROW(c->procs, &c->cap, c->n + 1, 8) < 0)
		return NULL;
	pm = &c->procs[c->n];
	pm->pid = pid;
	pm->map = NULL;
	pm->err = timed_read(c, pid, same_root, NULL, &pm->map);
	/* The process is gone: its map as the recorder copied it. */
	if (pm->err == -ESRCH && cached && timed_read(c, pid, true, cached, &pm->map) == 0)
		pm->err = 0;
	if (pm->err == -ENOMEM)
		return NULL;
	c->last = c->n++;
	return pm;
}

int fr_perfmaps_lookup(struct fr_perfmaps *c, uint32_t pid, bool same_root, const char *cached,
		       uint64_t addr, const char **name)
{
	struct proc_map *pm;

	if (!c || !name)
		return -EINVAL;
	pm = proc_get(c, pid, same_root, cached);
	if (!pm)
		return -ENOMEM;
	if (pm->err < 0)
		return pm->err;
	return fr_perfmap_lookup(pm->map, addr, name);
}

struct fr_perfmaps *fr_perfmaps_new(void)
{
	return calloc(1, sizeof(struct fr_perfmaps));
}

void fr_perfmaps_free(struct fr_perfmaps *c)
{
	if (!c)
		return;
	fr_worker_free(c->worker);
	for (size_t i = 0; i < c->n; i++)
		fr_perfmap_free(c->procs[i].map);
	free(c->procs);
	free(c);
}
