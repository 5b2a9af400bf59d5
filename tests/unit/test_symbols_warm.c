/* Parsed images kept between profiles (core/symbols/symbols_images.c), on
 * real programs the build compiled:
 *
 *   test_symbols_warm INLINE_CALLS PLT_CALLS PLT_CALLS_IBT [PROG STRIPPED DEBUG]
 *
 * - a second profile of the same file parses nothing: the parse counter
 *   stays, the hit counter moves, and it gets the very DWARF object;
 * - a file replaced at its path, or written in place with its mtime set
 *   back, is never named from the image of the old bytes;
 * - idle images are evicted least recently used first, and what stays
 *   fits the limit;
 * - the debug file found by build id in a debug directory is kept with
 *   its image: a second profile of the stripped program names its static
 *   function without a search (when objcopy built PROG, STRIPPED, DEBUG);
 * - threads sharing the table while it evicts name every address right
 *   (run it under the sanitizers: meson setup -Db_sanitize=address,undefined).
 */
#include "core/symbols/symbols.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/dwarf_lines.h"
#include "core/symbols/elf_image.h"
#include "core/util/time.h"
#include "tests/unit/check.h"

#define THREADS 4

/* The debug directories of every profile (NULL: the default). */
static const char *const *debug_dirs;
static size_t ndebug_dirs;
#define ROUNDS 40

/* A program of the build and the function the tests name in it. */
struct prog {
	char path[PATH_MAX]; /* absolute: mappings name files so */
	const char *fn;
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	size_t bid_len;
	uint64_t off; /* the function's file offset */
};

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0) {
		rewind(f);
		buf = malloc((size_t)n);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

static int spew(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) != (ssize_t)len)
		ret = -EIO;
	close(fd);
	return ret;
}

/* The file offset of function `fn` of the ELF64 file `buf`: its .symtab
 * value through the PT_LOAD that covers it. Returns 0 or -ENOENT. */
static int function_offset(const char *buf, size_t len, const char *fn, uint64_t *off)
{
	const Elf64_Ehdr *eh = (const void *)buf;
	const Elf64_Shdr *sh = (const void *)(buf + eh->e_shoff);
	const Elf64_Phdr *ph = (const void *)(buf + eh->e_phoff);
	uint64_t value = 0;

	if (len < sizeof(*eh) || eh->e_shoff + eh->e_shnum * sizeof(*sh) > len)
		return -ENOENT;
	for (size_t i = 0; i < eh->e_shnum && !value; i++) {
		const Elf64_Sym *sym = (const void *)(buf + sh[i].sh_offset);
		const char *str = buf + sh[sh[i].sh_link].sh_offset;

		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (ELF64_ST_TYPE(sym[k].st_info) == STT_FUNC &&
			    strcmp(str + sym[k].st_name, fn) == 0)
				value = sym[k].st_value;
	}
	for (size_t i = 0; value && i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD && value >= ph[i].p_vaddr &&
		    value - ph[i].p_vaddr < ph[i].p_filesz) {
			*off = value - ph[i].p_vaddr + ph[i].p_offset;
			return 0;
		}
	return -ENOENT;
}

static int prog_init(struct prog *p, const char *path, const char *fn)
{
	size_t len = 0;
	char *buf = slurp(path, &len);
	int ret;

	if (!realpath(path, p->path)) {
		CHECK(0, "%s: %s", path, strerror(errno));
		free(buf);
		return -1;
	}
	p->fn = fn;
	ret = fr_elf_build_id(path, p->bid, sizeof(p->bid));
	p->bid_len = ret > 0 ? (size_t)ret : 0;
	CHECK(ret > 0, "%s: build id: %d", path, ret);
	ret = buf ? function_offset(buf, len, fn, &p->off) : -EIO;
	CHECK(ret == 0, "%s: no %s in .symtab", path, fn);
	free(buf);
	return ret == 0 && p->bid_len ? 0 : -1;
}

/* Names p's function at `path` in a profile of its own (a new cache,
 * freed). Returns fr_symbols_user()'s result; the DWARF object in *dwarf
 * when non-NULL. */
static int name_once(const struct prog *p, const char *path, const uint8_t *bid, size_t bid_len,
		     const void **dwarf)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name = NULL;
	int ret;

	if (!s)
		return -ENOMEM;
	fr_symbols_set_paths(s, NULL, debug_dirs, ndebug_dirs);
	ret = fr_symbols_user(s, NULL, path, bid, bid_len, 0x10000, 0, 0x10000 + p->off, &name,
			      NULL);
	if (ret == 0 && strcmp(name, p->fn) != 0) {
		CHECK(0, "%s: named %s, want %s", path, name, p->fn);
		ret = -EINVAL;
	}
	if (dwarf)
		*dwarf = fr_symbols_user_dwarf(s, NULL, path, bid, bid_len);
	fr_symbols_free(s);
	return ret;
}

static void test_reuse(const struct prog *a)
{
	struct fr_symbols_stats st0, st1, st2;
	const void *d1 = NULL, *d2 = NULL;
	int ret;

	fr_symbols_get_stats(&st0);
	ret = name_once(a, a->path, a->bid, a->bid_len, &d1);
	CHECK(ret == 0, "first profile: %d", ret);
	fr_symbols_get_stats(&st1);
	CHECK(st1.parses == st0.parses + 1, "first profile parsed %llu files, want 1",
	      (unsigned long long)(st1.parses - st0.parses));
	CHECK(st1.idle >= 1 && st1.bytes > 0, "nothing kept after the profile");
	ret = name_once(a, a->path, a->bid, a->bid_len, &d2);
	CHECK(ret == 0, "second profile: %d", ret);
	fr_symbols_get_stats(&st2);
	CHECK(st2.parses == st1.parses, "second profile parsed the file again");
	CHECK(st2.hits == st1.hits + 1, "second profile: %llu hits, want 1",
	      (unsigned long long)(st2.hits - st1.hits));
	CHECK(d1 && d1 == d2, "second profile got other DWARF (%p, %p)", d1, d2);
}

/* A file at one path: replaced by another build, then written in place
 * with a forged build id and its mtime set back. Neither is named from
 * the image of the old bytes. */
static void test_other_build(const struct prog *a, const struct prog *b, const char *dir)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	size_t alen = 0, blen = 0;
	char *abuf = slurp(a->path, &alen), *bbuf = slurp(b->path, &blen), *at;
	struct timespec times[2];
	struct stat st;
	int ret;

	snprintf(path, sizeof(path), "%s/prog", dir);
	snprintf(tmp, sizeof(tmp), "%s/prog.new", dir);
	CHECK(abuf && bbuf && spew(path, abuf, alen) == 0, "copying %s", a->path);
	ret = name_once(a, path, a->bid, a->bid_len, NULL);
	CHECK(ret == 0, "copy of A: %d", ret);

	/* Replaced (a new inode): A's build id no longer names anything. */
	CHECK(spew(tmp, bbuf, blen) == 0 && rename(tmp, path) == 0, "replacing with %s", b->path);
	ret = name_once(a, path, a->bid, a->bid_len, NULL);
	CHECK(ret == -ESTALE, "replaced file, old build id: %d, want -ESTALE", ret);
	ret = name_once(b, path, b->bid, b->bid_len, NULL);
	CHECK(ret == 0, "replaced file, its build id: %d", ret);

	/* Back to A, kept; then the same inode rewritten with one byte of the
	 * build id changed, same size, mtime set back: only ctime tells. */
	CHECK(spew(tmp, abuf, alen) == 0 && rename(tmp, path) == 0, "restoring A");
	CHECK(stat(path, &st) == 0, "stat %s", path);
	ret = name_once(a, path, a->bid, a->bid_len, NULL);
	CHECK(ret == 0, "A again: %d", ret);
	at = abuf ? memmem(abuf, alen, a->bid, a->bid_len) : NULL;
	CHECK(at, "build id bytes not found in %s", a->path);
	if (at) {
		at[0] ^= 0x5a;
		usleep(20000); /* a ctime the file system can tell apart */
		CHECK(spew(path, abuf, alen) == 0, "rewriting in place");
		times[0] = st.st_atim;
		times[1] = st.st_mtim;
		CHECK(utimensat(AT_FDCWD, path, times, 0) == 0, "utimensat: %s", strerror(errno));
		ret = name_once(a, path, a->bid, a->bid_len, NULL);
		CHECK(ret == -ESTALE, "rewritten in place, mtime set back: %d, want -ESTALE", ret);
	}
	unlink(path);
	free(abuf);
	free(bbuf);
}

/* The bytes the image of each program takes alone, into size[]. */
static void measure(const struct prog *p, size_t n, uint64_t *size)
{
	struct fr_symbols_stats st;

	for (size_t i = 0; i < n; i++) {
		fr_symbols_keep_limit(0);
		fr_symbols_keep_limit(FR_SYMBOLS_KEEP_DEFAULT);
		CHECK(name_once(&p[i], p[i].path, p[i].bid, p[i].bid_len, NULL) == 0, "%s",
		      p[i].path);
		fr_symbols_get_stats(&st);
		size[i] = st.bytes;
		CHECK(st.images == 1 && st.bytes > 0, "%s: %llu images, %llu bytes kept", p[i].path,
		      (unsigned long long)st.images, (unsigned long long)st.bytes);
	}
}

/* Two programs `a` and `b`, with room for the larger alone. */
static void test_eviction(const struct prog *a, const struct prog *b, uint64_t limit)
{
	struct fr_symbols_stats st, before;

	/* The limit 0 keeps nothing idle. */
	fr_symbols_keep_limit(0);
	fr_symbols_get_stats(&st);
	CHECK(st.images == 0 && st.bytes == 0, "limit 0: %llu images, %llu bytes kept",
	      (unsigned long long)st.images, (unsigned long long)st.bytes);
	CHECK(name_once(a, a->path, a->bid, a->bid_len, NULL) == 0, "limit 0: profile");
	fr_symbols_get_stats(&st);
	CHECK(st.images == 0, "limit 0: %llu images after a profile",
	      (unsigned long long)st.images);

	fr_symbols_keep_limit(limit);
	for (int i = 0; i < 2; i++) {
		const struct prog *p = i ? b : a;

		fr_symbols_get_stats(&before);
		CHECK(name_once(p, p->path, p->bid, p->bid_len, NULL) == 0, "%s", p->path);
		fr_symbols_get_stats(&st);
		CHECK(st.bytes <= st.limit, "kept %llu bytes over the limit %llu",
		      (unsigned long long)st.bytes, (unsigned long long)st.limit);
		CHECK(st.images == 1, "%llu images kept, room for one",
		      (unsigned long long)st.images);
		CHECK(st.evictions == before.evictions + (uint64_t)i, "profile %d evicted %llu", i,
		      (unsigned long long)(st.evictions - before.evictions));
	}
	/* The most recent stays: named again without a parse; the older is
	 * parsed anew. */
	fr_symbols_get_stats(&before);
	name_once(b, b->path, b->bid, b->bid_len, NULL);
	name_once(a, a->path, a->bid, a->bid_len, NULL);
	fr_symbols_get_stats(&st);
	CHECK(st.parses == before.parses + 1 && st.hits == before.hits + 1,
	      "most recent kept, older evicted: %llu parses, %llu hits",
	      (unsigned long long)(st.parses - before.parses),
	      (unsigned long long)(st.hits - before.hits));
}

/* Images idle for a while are freed (the daemon gives their memory back
 * when nothing used them for a minute); younger ones stay. */
static void test_idle(const struct prog *a, const struct prog *b)
{
	struct fr_symbols_stats st;
	uint64_t freed;

	fr_symbols_keep_limit(0);
	fr_symbols_keep_limit(FR_SYMBOLS_KEEP_DEFAULT);
	CHECK(name_once(a, a->path, a->bid, a->bid_len, NULL) == 0, "%s", a->path);
	usleep(50000);
	CHECK(name_once(b, b->path, b->bid, b->bid_len, NULL) == 0, "%s", b->path);
	CHECK(fr_symbols_trim_idle(3600 * FR_NS_PER_S) == 0, "an image idle for an hour");
	/* Idle 25 ms or more: the older only. */
	freed = fr_symbols_trim_idle(25000000LL);
	fr_symbols_get_stats(&st);
	CHECK(freed > 0 && st.images == 1, "idle 50 ms: %llu bytes freed, %llu images left",
	      (unsigned long long)freed, (unsigned long long)st.images);
	freed = fr_symbols_trim_idle(0);
	fr_symbols_get_stats(&st);
	CHECK(freed > 0 && st.images == 0 && st.bytes == 0,
	      "all idle: %llu bytes freed, %llu images, %llu bytes left", (unsigned long long)freed,
	      (unsigned long long)st.images, (unsigned long long)st.bytes);
}

/* STRIPPED names PROG's static function only from DEBUG, found in a
 * debug directory by build id; the second profile finds it kept. */
static void test_debug_kept(const char *prog, const char *stripped, const char *debug,
			    const char *dir)
{
	char path[PATH_MAX + 64], hex[2 * FR_ELF_BUILD_ID_MAX + 1];
	const char *dirs[] = {dir};
	struct fr_symbols_stats st0, st1, st2;
	size_t len = 0;
	char *buf = slurp(debug, &len);
	struct prog p;

	if (prog_init(&p, prog, "fr_debuglink_marker") < 0 || !buf) {
		CHECK(0, "%s, %s: unusable", prog, debug);
		free(buf);
		return;
	}
	fr_build_id_hex(p.bid, p.bid_len, hex);
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, hex);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
	CHECK(spew(path, buf, len) == 0, "writing %s", path);
	/* A copy away from the debug file beside it, which .gnu_debuglink
	 * would find. */
	free(buf);
	buf = slurp(stripped, &len);
	snprintf(p.path, sizeof(p.path), "%s/stripped", dir);
	CHECK(buf && spew(p.path, buf, len) == 0, "copying %s", stripped);
	fr_symbols_keep_limit(FR_SYMBOLS_KEEP_DEFAULT);
	debug_dirs = dirs;
	ndebug_dirs = 1;
	fr_symbols_get_stats(&st0);
	CHECK(name_once(&p, p.path, p.bid, p.bid_len, NULL) == 0, "stripped, first profile");
	fr_symbols_get_stats(&st1);
	CHECK(st1.debug_parses == st0.debug_parses + 1, "debug file not kept with its image");
	CHECK(name_once(&p, p.path, p.bid, p.bid_len, NULL) == 0, "stripped, second profile");
	fr_symbols_get_stats(&st2);
	CHECK(st2.debug_parses == st1.debug_parses && st2.debug_hits == st1.debug_hits + 1,
	      "second profile: %llu debug parses, %llu debug hits",
	      (unsigned long long)(st2.debug_parses - st1.debug_parses),
	      (unsigned long long)(st2.debug_hits - st1.debug_hits));
	/* A profile whose debug directories do not hold it searches anew. */
	debug_dirs = dirs;
	ndebug_dirs = 0;
	CHECK(name_once(&p, p.path, p.bid, p.bid_len, NULL) == -ENOENT,
	      "named from a debug directory the profile does not have");
	debug_dirs = NULL;
	unlink(path);
	unlink(p.path);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", dir, hex);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/.build-id", dir);
	rmdir(path);
	free(buf);
}

/* One profile naming all `n` programs, in order. */
static void name_all(const struct prog *p, size_t n)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	const char *name;

	CHECK(s, "fr_symbols_new");
	for (size_t i = 0; s && i < n; i++)
		CHECK(fr_symbols_user(s, NULL, p[i].path, p[i].bid, p[i].bid_len, 0x10000, 0,
				      0x10000 + p[i].off, &name, NULL) == 0,
		      "%s", p[i].path);
	fr_symbols_free(s);
}

/* Profiles whose files outgrow the limit by one: the next profile parses
 * that one again and finds the others kept; a parse never evicts an image
 * the same profile is about to ask for. */
static void test_scan(const struct prog *p, size_t n, const uint64_t *size)
{
	struct fr_symbols_stats st, before;
	uint64_t all = 0;

	for (size_t i = 0; i < n; i++)
		all += size[i];
	fr_symbols_keep_limit(0);
	fr_symbols_keep_limit(all - 1);
	name_all(p, n);
	fr_symbols_get_stats(&before);
	CHECK(before.images == n - 1 && before.bytes <= before.limit,
	      "after a profile over the limit: %llu images, %llu bytes",
	      (unsigned long long)before.images, (unsigned long long)before.bytes);
	name_all(p, n);
	fr_symbols_get_stats(&st);
	CHECK(st.hits == before.hits + n - 1 && st.parses == before.parses + 1,
	      "second profile over the limit: %llu hits, %llu parses, want %zu and 1",
	      (unsigned long long)(st.hits - before.hits),
	      (unsigned long long)(st.parses - before.parses), n - 1);
}

struct worker_arg {
	const struct prog *progs;
	size_t n;
	int failures;
};

/* Profiles that share the table: each names every program, with the
 * DWARF of the first looked up, while the others evict. */
static void *worker(void *v)
{
	struct worker_arg *w = v;

	for (int r = 0; r < ROUNDS; r++) {
		struct fr_symbols *s = fr_symbols_new(NULL);

		if (!s) {
			w->failures++;
			continue;
		}
		for (size_t k = 0; k < w->n; k++) {
			const struct prog *p = &w->progs[(k + (size_t)r) % w->n];
			const char *name = NULL;
			struct fr_dwarf_frame fr[FR_DWARF_MAX_FRAMES];
			struct fr_dwarf_lines *d;
			uint64_t vaddr = 0;

			if (fr_symbols_user(s, NULL, p->path, p->bid, p->bid_len, 0x10000, 0,
					    0x10000 + p->off, &name, &vaddr) != 0 ||
			    strcmp(name, p->fn) != 0) {
				w->failures++;
				continue;
			}
			d = fr_symbols_user_dwarf(s, NULL, p->path, p->bid, p->bid_len);
			if (d && fr_dwarf_lines_lookup(d, vaddr, fr, FR_DWARF_MAX_FRAMES) > 0 &&
			    (!fr[0].function && !fr[0].file))
				w->failures++;
		}
		fr_symbols_free(s);
	}
	return NULL;
}

static void test_threads(const struct prog *p, size_t n, uint64_t limit)
{
	struct worker_arg w[THREADS];
	pthread_t t[THREADS];
	struct fr_symbols_stats st;

	/* Room for the largest image alone: eviction all along. */
	fr_symbols_keep_limit(limit);
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker_arg){.progs = p, .n = n};
		CHECK(pthread_create(&t[i], NULL, worker, &w[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		CHECK(w[i].failures == 0, "thread %d: %d wrong names", i, w[i].failures);
	}
	fr_symbols_get_stats(&st);
	CHECK(st.images == st.idle, "%llu images, %llu idle, with no profile running",
	      (unsigned long long)st.images, (unsigned long long)st.idle);
	CHECK(st.bytes <= st.limit, "kept %llu bytes over the limit %llu",
	      (unsigned long long)st.bytes, (unsigned long long)st.limit);
	fr_symbols_keep_limit(0);
	fr_symbols_get_stats(&st);
	CHECK(st.images == 0 && st.bytes == 0, "limit 0 after the threads: %llu images, %llu bytes",
	      (unsigned long long)st.images, (unsigned long long)st.bytes);
}

int main(int argc, char **argv)
{
	char dir[] = "/tmp/fr-test-warm-XXXXXX";
	uint64_t size[3];
	struct prog p[3];

	if (argc < 4) {
		fprintf(stderr, "usage: %s INLINE_CALLS PLT_CALLS PLT_CALLS_IBT\n", argv[0]);
		return 2;
	}
	if (prog_init(&p[0], argv[1], "outer_work") < 0 || prog_init(&p[1], argv[2], "main") < 0 ||
	    prog_init(&p[2], argv[3], "main") < 0)
		return 1;
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_reuse(&p[0]);
	test_other_build(&p[0], &p[1], dir);
	measure(p, 3, size);
	test_eviction(&p[1], &p[2], size[1] > size[2] ? size[1] : size[2]);
	test_scan(p, 3, size);
	test_threads(p, 3, size[0] > size[1] ? size[0] : size[1]);
	test_idle(&p[1], &p[2]);
	if (argc >= 7)
		test_debug_kept(argv[4], argv[5], argv[6], dir);
	else
		fprintf(stderr,
			"no stripped program and debug file: debug files kept not tested\n");
	rmdir(dir);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures ? 1 : 0;
}
