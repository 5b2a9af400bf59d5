/* Cgroup CPU throttling (cgcpu.h): the parsers, then the table of
 * cgroups and the tick that reads them.
 *
 * Invariants: the table is the tick's thread's alone (the stats are
 * atomics); an entry's counters are those of its last read, `have` 0
 * until one succeeded, so a cgroup's first read only sets the baseline
 * and a failed read starts it again (a cgroup removed and made anew under
 * the same name must not give a delta across the two).
 */
#include "recorder/tracking/cgcpu.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"

/* ---- parsers ------------------------------------------------------------ */

/* A decimal number of `p` up to `end`, stopping at a space or newline. */
static int parse_u64(const char *p, const char *end, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EPROTO;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (!digits || (p < end && *p != '\n' && *p != ' '))
		return -EPROTO;
	*out = v;
	return 0;
}

int fr_cpu_stat_parse(const char *buf, size_t len, int v1, struct fr_cpu_stat *out)
{
	const char *p = buf, *end = buf + len, *want = v1 ? "throttled_time " : "throttled_usec ";
	int have = 0;

	memset(out, 0, sizeof(*out));
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end;
		size_t n = (size_t)(eol - p);
		uint64_t v;

		if (n > 11 && memcmp(p, "nr_periods ", 11) == 0) {
			if (parse_u64(p + 11, eol, &out->nr_periods) < 0)
				return -EPROTO;
		} else if (n > 13 && memcmp(p, "nr_throttled ", 13) == 0) {
			if (parse_u64(p + 13, eol, &out->nr_throttled) < 0)
				return -EPROTO;
		} else if (n > 15 && memcmp(p, want, 15) == 0) {
			if (parse_u64(p + 15, eol, &v) < 0)
				return -EPROTO;
			if (!v1 && v > UINT64_MAX / 1000)
				return -EPROTO;
			out->throttled_ns = v1 ? v : v * 1000;
			have = 1;
		}
		p = eol + 1;
	}
	return have ? 0 : -EPROTO;
}

int fr_cgroup_path_ok(const char *path)
{
	size_t len = strnlen(path, FR_LIMIT_CGROUP_LEN);

	if (len == 0 || len >= FR_LIMIT_CGROUP_LEN || path[0] != '/')
		return 0;
	if (len == 1)
		return 1;
	for (const char *c = path; *c; c++) {
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			return 0;
		if (*c != '/')
			continue;
		/* A component: not empty, not "." nor "..". */
		if (c[1] == '/' || c[1] == '\0')
			return 0;
		if (c[1] == '.' && (c[2] == '/' || c[2] == '\0'))
			return 0;
		if (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0'))
			return 0;
	}
	return 1;
}

/* Whether the comma-separated list [p, end) has the token `tok`. */
static int has_token(const char *p, const char *end, const char *tok)
{
	size_t tl = strlen(tok);

	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p)), *e = comma ? comma : end;

		if ((size_t)(e - p) == tl && memcmp(p, tok, tl) == 0)
			return 1;
		p = e + 1;
	}
	return 0;
}

/* The path of a /proc/PID/cgroup line [p, eol) if it is the one sought. */
static int cgroup_line(const char *p, const char *eol, int v1, const char **path)
{
	const char *c1 = memchr(p, ':', (size_t)(eol - p)), *c2;

	if (!c1)
		return 0;
	c2 = memchr(c1 + 1, ':', (size_t)(eol - c1 - 1));
	if (!c2)
		return 0;
	if (!v1 && !(c1 - p == 1 && p[0] == '0' && c2 == c1 + 1))
		return 0;
	if (v1 && (c2 == c1 + 1 || !has_token(c1 + 1, c2, "cpu")))
		return 0;
	*path = c2 + 1;
	return 1;
}

int fr_proc_cgroup_parse(const char *buf, size_t len, int v1, char *dst, size_t dstlen)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *path;
		size_t n;

		if (!nl)
			break;
		if (cgroup_line(p, nl, v1, &path)) {
			n = (size_t)(nl - path);
			if (n >= dstlen || memchr(path, '\0', n))
				return -EINVAL;
			memcpy(dst, path, n);
			dst[n] = '\0';
			return fr_cgroup_path_ok(dst) ? 0 : -EINVAL;
		}
		p = nl + 1;
	}
	return -ENOENT;
}

int fr_mountinfo_cgroup(const char *line, char *dst, size_t dstlen)
{
	const char *sep = strstr(line, " - "), *p = line, *mp, *fs, *opts;
	size_t n, fl;
	int kind;

	if (!sep)
		return 0;
	/* Fields: id parent major:minor root mountpoint ... */
	for (int i = 0; i < 4; i++) {
		p = strchr(p, ' ');
		if (!p || p >= sep)
			return 0;
		p++;
	}
	mp = p;
	n = strcspn(mp, " ");
	fs = sep + 3;
	fl = strcspn(fs, " ");
	if (fl == 7 && memcmp(fs, "cgroup2", 7) == 0) {
		kind = 2;
	} else if (fl == 6 && memcmp(fs, "cgroup", 6) == 0) {
		/* fstype source super-options; the line may end anywhere. */
		if (fs[fl] != ' ')
			return 0;
		opts = strchr(fs + fl + 1, ' ');
		if (!opts)
			return 0;
		opts++;
		if (!has_token(opts, opts + strcspn(opts, " \n"), "cpu"))
			return 0;
		kind = 1;
	} else {
		return 0;
	}
	if (mp[0] != '/' || n >= FR_CGCPU_ROOT_MAX || n >= dstlen || memchr(mp, '\\', n))
		return 0;
	memcpy(dst, mp, n);
	dst[n] = '\0';
	return kind;
}

/* ---- the table and the tick ---------------------------------------------- */

struct cg_entry {
	uint64_t hash; /* 0: a free slot */
	int64_t seen;  /* the tick it was last asked for */
	uint32_t pid;  /* the process it was last asked for by */
	int64_t read;  /* the tick it was last read */
	int have;      /* `last` holds a read's counters */
	struct fr_cpu_stat last;
	char path[FR_LIMIT_CGROUP_LEN];
};

struct fr_cgcpu {
	char proc[128];
	char root[FR_CGCPU_ROOT_MAX];
	char where[FR_CGCPU_ROOT_MAX + 32];
	int v1;
	int64_t tick;
	uint32_t rotate; /* where the next tick's turn starts in its pids */
	struct cg_entry e[FR_CGCPU_MAX];
	struct fr_cgcpu_stats st; /* atomics */
};

static void count(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

static uint64_t path_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ? h : 1;
}

/* Reads at most `len` - 1 bytes of `path` into buf (NUL-terminated);
 * `flags` added to O_RDONLY | O_CLOEXEC. Returns the bytes or -errno. */
static ssize_t read_bounded(const char *path, int flags, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | flags);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = fr_pread_full(fd, buf, len - 1, 0);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/* Whether the cgroup2 root's cgroup.controllers lists "cpu". */
static int v2_has_cpu(const char *root)
{
	char path[FR_CGCPU_ROOT_MAX + 32], buf[1024];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/cgroup.controllers", root);
	n = read_bounded(path, O_NONBLOCK | O_NOFOLLOW, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	for (char *tok = strtok(buf, " \n"); tok; tok = strtok(NULL, " \n"))
		if (strcmp(tok, "cpu") == 0)
			return 1;
	return 0;
}

/* The mounts of both hierarchies from `proc`/self/mountinfo. */
static void find_mounts(const char *proc, char *v1, char *v2, size_t len)
{
	char path[160], line[4096], mp[FR_CGCPU_ROOT_MAX];
	FILE *f;

	v1[0] = v2[0] = '\0';
	snprintf(path, sizeof(path), "%s/self/mountinfo", proc);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		int kind = fr_mountinfo_cgroup(line, mp, sizeof(mp));

		if (kind == 1 && !v1[0])
			snprintf(v1, len, "%s", mp);
		else if (kind == 2 && !v2[0])
			snprintf(v2, len, "%s", mp);
	}
	fclose(f);
}

int fr_cgcpu_new(struct fr_cgcpu **out, const char *proc, char *err, size_t errlen)
{
	char v1[FR_CGCPU_ROOT_MAX], v2[FR_CGCPU_ROOT_MAX];
	struct fr_cgcpu *c;

	*out = NULL;
	find_mounts(proc, v1, v2, sizeof(v1));
	if (!(v2[0] && v2_has_cpu(v2)) && !v1[0]) {
		snprintf(err, errlen,
			 "no cgroup hierarchy has the cpu controller (%s%s%s, no v1 cpu mount)",
			 v2[0] ? "cgroup2 at " : "no cgroup2", v2,
			 v2[0] ? " does not list cpu in cgroup.controllers" : "");
		return -ENOENT;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(err, errlen, "throttled samples: out of memory");
		return -ENOMEM;
	}
	snprintf(c->proc, sizeof(c->proc), "%s", proc);
	c->v1 = !(v2[0] && v2_has_cpu(v2));
	snprintf(c->root, sizeof(c->root), "%s", c->v1 ? v1 : v2);
	snprintf(c->where, sizeof(c->where), "cgroup %s at %s", c->v1 ? "v1" : "v2", c->root);
	*out = c;
	return 0;
}

void fr_cgcpu_free(struct fr_cgcpu *c)
{
	free(c);
}

const char *fr_cgcpu_where(const struct fr_cgcpu *c)
{
	return c->where;
}

void fr_cgcpu_stats(const struct fr_cgcpu *c, struct fr_cgcpu_stats *out)
{
	const uint64_t *in = (const uint64_t *)&c->st;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

/* The entry of `path`, made if new: a free slot, else one not asked for
 * in FR_CGCPU_FORGET_TICKS, else the one asked for longest ago unless it
 * was this tick. NULL when the table is full of this tick's cgroups. */
static struct cg_entry *entry_of(struct fr_cgcpu *c, const char *path)
{
	uint64_t h = path_hash(path);
	struct cg_entry *free_slot = NULL, *oldest = NULL;

	for (uint32_t i = 0; i < FR_CGCPU_MAX; i++) {
		struct cg_entry *e = &c->e[i];

		if (e->hash == h && strcmp(e->path, path) == 0)
			return e;
		if (e->hash && c->tick - e->seen > FR_CGCPU_FORGET_TICKS) {
			e->hash = 0;
			count(&c->st.cgroups, (uint64_t)-1);
		}
		if (!e->hash && !free_slot)
			free_slot = e;
		if (e->hash && e->seen < c->tick && (!oldest || e->seen < oldest->seen))
			oldest = e;
	}
	if (!free_slot && !oldest)
		return NULL;
	if (!free_slot)
		count(&c->st.cgroups, (uint64_t)-1);
	free_slot = free_slot ? free_slot : oldest;
	memset(free_slot, 0, sizeof(*free_slot));
	free_slot->hash = h;
	free_slot->read = -1;
	snprintf(free_slot->path, sizeof(free_slot->path), "%s", path);
	count(&c->st.cgroups, 1);
	return free_slot;
}

/* Reads entry `e`'s cpu.stat; a sample into *s when throttled time grew
 * since the last read. Returns 1 with a sample, 0 without, -errno. */
static int read_entry(struct fr_cgcpu *c, struct cg_entry *e, uint32_t pid,
		      struct fr_cgcpu_sample *s)
{
	char path[FR_CGCPU_ROOT_MAX + FR_LIMIT_CGROUP_LEN + 16], buf[2048];
	struct fr_cpu_stat now;
	ssize_t n;
	int ret;

	e->read = c->tick;
	snprintf(path, sizeof(path), "%s%s/cpu.stat", c->root, e->path);
	count(&c->st.reads, 1);
	n = read_bounded(path, O_NONBLOCK | O_NOFOLLOW, buf, sizeof(buf));
	ret = n < 0 ? (int)n : fr_cpu_stat_parse(buf, (size_t)n, c->v1, &now);
	if (ret < 0) {
		e->have = 0;
		return ret;
	}
	ret = 0;
	if (e->have && now.throttled_ns > e->last.throttled_ns) {
		*s = (struct fr_cgcpu_sample){
			.time_ns = fr_now_real_ns(),
			.pid = pid,
			.throttled_ns = now.throttled_ns - e->last.throttled_ns,
			.periods = now.nr_throttled > e->last.nr_throttled
					   ? now.nr_throttled - e->last.nr_throttled
					   : 0,
		};
		ret = 1;
	}
	e->last = now;
	e->have = 1;
	return ret;
}

/* The cgroup of `pid` into `dst`: 0, 1 when it is the root (never
 * throttled: not read), -errno. */
static int cgroup_of(const struct fr_cgcpu *c, uint32_t pid, char *dst, size_t len)
{
	char path[160], buf[16384];
	ssize_t n;
	int ret;

	snprintf(path, sizeof(path), "%s/%u/cgroup", c->proc, pid);
	n = read_bounded(path, 0, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	ret = fr_proc_cgroup_parse(buf, (size_t)n, c->v1, dst, len);
	if (ret == 0 && strcmp(dst, "/") == 0)
		return 1;
	return ret;
}

/* One last read of each cgroup asked for and read last tick but not this
 * one: its processes stopped running (or ended, and their cgroup cannot
 * be found from their pid any more) during the last second, in which it
 * may have been throttled too. Its sample goes to the last process it
 * was asked for by. Returns the samples written. */
static uint32_t tails(struct fr_cgcpu *c, uint32_t reads, struct fr_cgcpu_sample *out,
		      uint32_t room)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < FR_CGCPU_MAX && reads < FR_CGCPU_READS && n < room; i++) {
		struct cg_entry *e = &c->e[i];
		int ret;

		if (!e->hash || !e->have || e->seen != c->tick - 1 || e->read != c->tick - 1)
			continue;
		reads++;
		ret = read_entry(c, e, e->pid, &out[n]);
		if (ret < 0)
			count(&c->st.failures, 1);
		else
			n += (uint32_t)ret;
	}
	return n;
}

uint32_t fr_cgcpu_tick(struct fr_cgcpu *c, const uint32_t *pids, uint32_t npids,
		       int64_t deadline_mono, struct fr_cgcpu_sample *out, uint32_t room)
{
	uint32_t n = 0, reads = 0, i;
	char cg[FR_LIMIT_CGROUP_LEN];

	c->tick++;
	c->rotate = npids ? c->rotate % npids : 0;
	/* Past a bound the turn ends: the next tick starts where it did. */
	for (i = 0; i < npids && i < FR_CGCPU_PIDS; i++) {
		uint32_t pid = pids[(c->rotate + i) % npids];
		struct cg_entry *e;
		int ret;

		if (reads >= FR_CGCPU_READS || n >= room || fr_now_mono_ns() > deadline_mono)
			break;
		ret = cgroup_of(c, pid, cg, sizeof(cg));
		/* Gone (ENOENT, ESRCH) is no failure: the process ended. */
		if (ret == -EINVAL || ret == -EPROTO)
			count(&c->st.failures, 1);
		if (ret != 0)
			continue;
		e = entry_of(c, cg);
		if (!e) {
			count(&c->st.skipped, 1);
			continue;
		}
		e->seen = c->tick;
		e->pid = pid;
		if (e->read == c->tick)
			continue;
		reads++;
		ret = read_entry(c, e, pid, &out[n]);
		if (ret < 0)
			count(&c->st.failures, 1);
		else
			n += (uint32_t)ret;
	}
	count(&c->st.skipped, npids - i);
	c->rotate += i;
	n += tails(c, reads, out + n, room - n);
	count(&c->st.samples, n);
	return n;
}
