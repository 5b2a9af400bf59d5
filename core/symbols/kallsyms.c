/* The kernel's symbol table, from kallsyms (see kallsyms.h).
 *
 * The file buffer is kept and the names are terminated in place, so
 * parsing 100k+ lines is a single pass with no per-symbol allocation.
 * kernel syms are sorted by address, unique.
 */
#include "core/symbols/kallsyms.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/symbols/search.h"
#include "core/util/time.h"

/* How far past the last text symbol of a module (or of the whole table) an
 * address may lie and still be attributed to it: beyond that it is more
 * likely module data or garbage than a very long function. */
#define KSYM_TAIL_MAX (64 * 1024)

/* Kernel symbol flags. */
#define KSYM_LOCAL 0x1	/* t, w */
#define KSYM_MARKER 0x2 /* section boundary label, not a function */
#define KSYM_END 0x4	/* end of a text section: nothing lies here */

struct ksym {
	uint64_t addr;
	const char *name; /* in kernel.buf */
	uint32_t module;  /* 0: core kernel, else one id per module */
	uint32_t flags;
};

/* A parsed kallsyms, shared read-only by every struct fr_symbols of the
 * process and replaced when older than KERNEL_TTL_NS: reading and parsing
 * /proc/kallsyms costs ~100 ms, too much to pay on every profile, while
 * the table changes only when modules or BPF programs come and go. */
#define KERNEL_TTL_NS (30 * FR_NS_PER_S)

struct fr_kallsyms {
	int refs; /* under kernel_lock */
	char *path;
	int64_t loaded_ns;
	int err;
	char *buf;
	uint64_t *addrs; /* syms[i].addr, dense for the search */
	struct ksym *syms;
	size_t nsyms;
};

static pthread_mutex_t kernel_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fr_kallsyms *kernel_cache;

static int read_whole(const char *path, char **out, size_t *len_out)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = NULL;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		goto err;
	}
	for (;;) {
		ssize_t r;

		if (cap - len < 4096 + 1) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				ret = -ENOMEM;
				goto err;
			}
			buf = nb;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			goto err;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	close(fd);
	*out = buf;
	*len_out = len;
	return 0;
err:
	free(buf);
	close(fd);
	return ret;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

static bool ksym_is_marker(const char *name, bool *is_end)
{
	*is_end = strcmp(name, "_etext") == 0 || strcmp(name, "_einittext") == 0;
	return *is_end || strcmp(name, "_text") == 0 || strcmp(name, "_stext") == 0 ||
	       strcmp(name, "_sinittext") == 0;
}

/* Among aliases at one address: functions before section markers, global
 * before local, public spelling before underscored. */
static int ksym_cmp(const void *pa, const void *pb)
{
	const struct ksym *a = pa, *b = pb;
	unsigned ua, ub;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if ((a->flags & KSYM_MARKER) != (b->flags & KSYM_MARKER))
		return (a->flags & KSYM_MARKER) ? 1 : -1;
	if ((a->flags & KSYM_LOCAL) != (b->flags & KSYM_LOCAL))
		return (a->flags & KSYM_LOCAL) ? 1 : -1;
	ua = fr_leading_underscores(a->name);
	ub = fr_leading_underscores(b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* Parses "ADDR TYPE NAME[\t[MODULE]]\n" lines, keeping text symbols. Names
 * and module names are terminated in place in `buf`. */
/* One line of /proc/kallsyms ("ADDR TYPE NAME[\t[MODULE]]"), cut in place:
 * its address, type, name and module (NULL: the kernel's own). Returns 0
 * for a text symbol, -1 for any other line. */
static int parse_line(char *q, uint64_t *addr, unsigned char *type, char **name, char **mod)
{
	int h, digits = 0;

	*addr = 0;
	*mod = NULL;
	while ((h = hexval((unsigned char)*q)) >= 0) {
		*addr = *addr << 4 | (unsigned)h;
		q++;
		digits++;
	}
	if (!digits || digits > 16 || q[0] != ' ' || !q[1] || q[2] != ' ')
		return -1;
	*type = (unsigned char)q[1];
	if (*type != 't' && *type != 'T' && *type != 'w' && *type != 'W')
		return -1;
	*name = q + 3;
	q = *name;
	while (*q && *q != '\t' && *q != ' ')
		q++;
	if (*q) {
		*q++ = '\0';
		while (*q == '\t' || *q == ' ')
			q++;
		if (*q == '[') {
			*mod = ++q;
			q = strchr(q, ']');
			if (q)
				*q = '\0';
		}
	}
	return (*name)[0] ? 0 : -1;
}

static int kernel_parse(struct fr_kallsyms *k, char *buf, size_t len)
{
	const char *prev_mod = NULL;
	char *p = buf, *end = buf + len;
	size_t cap = 0, n = 0;
	uint32_t module = 0;
	bool nonzero = false;
	struct ksym *v = NULL;

	while (p < end) {
		char *line_end = memchr(p, '\n', (size_t)(end - p));
		char *name, *mod, *line = p;
		uint64_t addr;
		unsigned char type;
		struct ksym *e;
		bool is_end;

		if (!line_end)
			line_end = end;
		*line_end = '\0';
		p = line_end + 1;
		if (parse_line(line, &addr, &type, &name, &mod) < 0)
			continue;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16384;
			struct ksym *nv = realloc(v, nc * sizeof(*nv));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		/* kallsyms lists each module's symbols together. */
		if (!mod) {
			prev_mod = NULL;
		} else if (!prev_mod || strcmp(prev_mod, mod) != 0) {
			module++;
			prev_mod = mod;
		}
		e = &v[n++];
		e->addr = addr;
		e->name = name;
		e->module = mod ? module : 0;
		e->flags = (type == 't' || type == 'w') ? KSYM_LOCAL : 0;
		if (!mod && ksym_is_marker(name, &is_end))
			e->flags |= KSYM_MARKER | (is_end ? KSYM_END : 0);
		if (addr)
			nonzero = true;
	}
	if (!nonzero) {
		/* kptr_restrict hides every address: nothing can be resolved. */
		free(v);
		return -ENOENT;
	}
	qsort(v, n, sizeof(*v), ksym_cmp);
	k->nsyms = 0;
	for (size_t i = 0; i < n; i++) {
		if (k->nsyms && v[k->nsyms - 1].addr == v[i].addr)
			continue;
		v[k->nsyms++] = v[i];
	}
	k->addrs = malloc((k->nsyms ? k->nsyms : 1) * sizeof(*k->addrs));
	if (!k->addrs) {
		free(v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k->nsyms; i++)
		k->addrs[i] = v[i].addr;
	k->syms = v;
	return 0;
}

static void kernel_free(struct fr_kallsyms *k)
{
	free(k->addrs);
	free(k->syms);
	free(k->buf);
	free(k->path);
	free(k);
}

void fr_kallsyms_put(struct fr_kallsyms *k)
{
	int last;

	if (!k)
		return;
	pthread_mutex_lock(&kernel_lock);
	last = --k->refs == 0;
	pthread_mutex_unlock(&kernel_lock);
	if (last)
		kernel_free(k);
}

struct fr_kallsyms *fr_kallsyms_get(const char *path)
{
	int64_t now = fr_now_mono_ns();
	struct fr_kallsyms *k, *old = NULL;
	size_t len = 0;
	int ret;

	pthread_mutex_lock(&kernel_lock);
	k = kernel_cache;
	if (k && strcmp(k->path, path) == 0 && now - k->loaded_ns < KERNEL_TTL_NS) {
		k->refs++;
		pthread_mutex_unlock(&kernel_lock);
		return k;
	}
	pthread_mutex_unlock(&kernel_lock);

	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->path = strdup(path);
	if (!k->path) {
		free(k);
		return NULL;
	}
	k->loaded_ns = now;
	ret = read_whole(path, &k->buf, &len);
	if (ret == 0)
		ret = kernel_parse(k, k->buf, len);
	if (ret < 0) {
		fr_log_debug("no kernel symbols from %s: %s", path, strerror(-ret));
		free(k->buf);
		k->buf = NULL;
		k->err = ret;
	}

	pthread_mutex_lock(&kernel_lock);
	old = kernel_cache;
	kernel_cache = k;
	k->refs = 2; /* the cache's and the caller's */
	pthread_mutex_unlock(&kernel_lock);
	fr_kallsyms_put(old); /* the cache's reference to the table it replaced */
	return k;
}

int fr_kallsyms_lookup(const struct fr_kallsyms *k, uint64_t addr, const char **name)
{
	const struct ksym *e;
	size_t lo;

	if (!k || k->err < 0 || !k->nsyms)
		return -ENOENT;
	lo = fr_count_le(k->addrs, k->nsyms, addr);
	if (!lo)
		return -ENOENT;
	e = &k->syms[lo - 1];
	/* Past _etext or _einittext lies no function of the core kernel. */
	if (e->flags & KSYM_END)
		return -ENOENT;
	if ((lo == k->nsyms || k->syms[lo].module != e->module) && addr - e->addr >= KSYM_TAIL_MAX)
		return -ENOENT;
	*name = e->name;
	return 0;
}
