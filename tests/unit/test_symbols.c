/* Symbolization of the running process: the test binary resolves its own
 * functions and one of libc's through /proc/self/maps, checks build ids
 * against the note the loader mapped, and shares parsed files between
 * caches. Synthetic ELF files and kallsyms are in test_symbols_elf.c,
 * hostile files (FIFOs, sparse, truncated, FUSE, symlinks) in
 * test_symbols_hostile.c. */
#include "core/symbols/symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tests/unit/check.h"
#include "tests/unit/files.h"
#include "tests/unit/symbols_self.h"

/* The build id of the main program from the note the loader mapped:
 * independent of libelf and of the file on disk. */
struct note_search {
	uint8_t id[64];
	size_t len;
	uint64_t bias; /* load address minus link-time address */
};

static int find_note_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct note_search *ns = arg;

	/* The first object is the main program. */
	ns->bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const uint8_t *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			size_t align = ph->p_align == 8 ? 8 : 4;
			size_t namesz = (nh->n_namesz + align - 1) & ~(align - 1);
			size_t descsz = (nh->n_descsz + align - 1) & ~(align - 1);
			const uint8_t *name = p + sizeof(*nh);

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0 && nh->n_descsz <= sizeof(ns->id)) {
				memcpy(ns->id, name + namesz, nh->n_descsz);
				ns->len = nh->n_descsz;
				return 1;
			}
			p += sizeof(*nh) + namesz + descsz;
		}
	}
	return 1;
}

static void test_build_id(void)
{
	struct note_search ns = {.len = 0};
	uint8_t id[64], small[2];
	char hex[129];
	const uint8_t known[] = {0x01, 0xab, 0xff, 0x00};
	int ret;

	CHECK(strcmp(fr_build_id_hex(known, sizeof(known), hex), "01abff00") == 0,
	      "fr_build_id_hex gave %s", hex);
	CHECK(strcmp(fr_build_id_hex(known, 0, hex), "") == 0, "empty build id not empty");

	dl_iterate_phdr(find_note_cb, &ns);
	CHECK(ns.len > 0, "test binary has no mapped build id note");
	ret = fr_elf_build_id("/proc/self/exe", id, sizeof(id));
	CHECK(ret == (int)ns.len, "fr_elf_build_id = %d, want %zu", ret, ns.len);
	if (ret == (int)ns.len)
		CHECK(memcmp(id, ns.id, ns.len) == 0, "build id differs from the mapped note");

	ret = fr_elf_build_id("/proc/self/exe", small, sizeof(small));
	CHECK(ret == -ENOSPC, "small buffer: %d, want -ENOSPC", ret);
	ret = fr_elf_build_id("/nonexistent/flightrec/libnone.so", id, sizeof(id));
	CHECK(ret == -ENOENT, "missing file: %d, want -ENOENT", ret);
	ret = fr_elf_build_id("/proc/self/maps", id, sizeof(id));
	CHECK(ret < 0, "non-ELF file: %d, want < 0", ret);
}

static void test_self(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
	uint64_t elf_addr = 0;
	uint8_t id[64], wrong[64];
	const char *name = NULL, *name2 = NULL;
	struct note_search ns = {.len = 0};
	struct mapping m;
	int ret, idlen;

	fr_test_marker_fn();
	CHECK(s, "fr_symbols_new failed");
	if (!s)
		return;
	if (find_mapping(fn, &m) < 0) {
		CHECK(0, "no mapping of the test function in /proc/self/maps");
		goto out;
	}
	dl_iterate_phdr(find_note_cb, &ns);

	ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, fn + 3, &name, &elf_addr);
	CHECK(ret == 0, "own function: %d (%s)", ret, m.path);
	CHECK(ret == 0 && strcmp(name, "fr_test_marker_fn") == 0, "own function named %s",
	      ret == 0 ? name : "(none)");
	/* Link-time address: runtime minus the load bias (0 when not PIE). */
	CHECK(elf_addr == fn + 3 - ns.bias, "elf_addr %#" PRIx64 ", want %#" PRIx64, elf_addr,
	      fn + 3 - ns.bias);

	/* A second look-up comes from the cache: the same string. */
	ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, fn, &name2, NULL);
	CHECK(ret == 0 && name2 == name, "cached look-up gave %d %p vs %p", ret,
	      (const void *)name2, (const void *)name);

	/* Rooted path, and a root that does not exist falls back to the path. */
	name2 = NULL;
	ret = fr_symbols_user(s, "/proc/self/root", m.path, NULL, 0, m.start, m.pgoff, fn, &name2,
			      NULL);
	CHECK(ret == 0 && name2 && strcmp(name2, "fr_test_marker_fn") == 0, "rooted look-up: %d",
	      ret);
	name2 = NULL;
	ret = fr_symbols_user(s, "/nonexistent-root", m.path, NULL, 0, m.start, m.pgoff, fn, &name2,
			      NULL);
	CHECK(ret == 0 && name2 && strcmp(name2, "fr_test_marker_fn") == 0,
	      "fallback from a missing root: %d", ret);

	/* Build ids: the right one resolves, another one is stale. */
	idlen = fr_elf_build_id(m.path, id, sizeof(id));
	CHECK(idlen > 0, "build id of %s: %d", m.path, idlen);
	if (idlen > 0) {
		ret = fr_symbols_user(s, NULL, m.path, id, (size_t)idlen, m.start, m.pgoff, fn,
				      &name2, NULL);
		CHECK(ret == 0, "matching build id: %d", ret);
		memcpy(wrong, id, (size_t)idlen);
		wrong[0] ^= 0xff;
		ret = fr_symbols_user(s, NULL, m.path, wrong, (size_t)idlen, m.start, m.pgoff, fn,
				      &name2, NULL);
		CHECK(ret == -ESTALE, "wrong build id: %d, want -ESTALE", ret);
		ret = fr_symbols_user(s, "/nonexistent-root", m.path, wrong, (size_t)idlen, m.start,
				      m.pgoff, fn, &name2, NULL);
		CHECK(ret == -ESTALE, "wrong build id via missing root: %d, want -ESTALE", ret);
		ret = fr_symbols_user(s, NULL, m.path, wrong, (size_t)idlen - 1, m.start, m.pgoff,
				      fn, &name2, NULL);
		CHECK(ret == -ESTALE, "truncated build id: %d, want -ESTALE", ret);
	}

	/* The ELF header is mapped but is no function. */
	if (ns.bias && find_mapping(ns.bias, &m) == 0 && m.pgoff == 0) {
		ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, 0, m.start, &name2, NULL);
		CHECK(ret == -ENOENT, "ELF header resolved: %d %s", ret, ret == 0 ? name2 : "");
	}
out:
	fr_symbols_free(s);
}

static void test_libc(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	void *sym = dlsym(RTLD_DEFAULT, "getpid");
	uint64_t addr = (uint64_t)(uintptr_t)sym, elf_addr = 0;
	const char *name = NULL;
	struct timespec t0, t1;
	struct mapping m;
	Dl_info di;
	int ret, resolved = 0;

	CHECK(s && sym, "setup: symbols %p getpid %p", (void *)s, sym);
	if (!s || !sym)
		goto out;
	if (find_mapping(addr, &m) < 0 || !dladdr(sym, &di)) {
		CHECK(0, "no mapping of getpid");
		goto out;
	}
	ret = fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, addr + 1, &name,
			      &elf_addr);
	CHECK(ret == 0 && strstr(name, "getpid"), "getpid in %s: %d %s", m.path, ret,
	      ret == 0 ? name : "");
	CHECK(elf_addr == addr + 1 - (uint64_t)(uintptr_t)di.dli_fbase, "libc elf_addr %#" PRIx64,
	      elf_addr);

	/* Many addresses of one file: parsed once, each look-up cheap. */
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < 200000; i++) {
		uint64_t a = m.start + (i * 2654435761u) % (m.end - m.start);

		if (fr_symbols_user(s, NULL, m.path, NULL, 0, m.start, m.pgoff, a, &name, NULL) ==
		    0)
			resolved++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK(resolved > 0, "no address of libc text resolved");
	printf("200000 libc look-ups, %d resolved, %.1f ns each\n", resolved,
	       ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
		       200000);
out:
	fr_symbols_free(s);
}

static void test_missing(void)
{
	struct fr_symbols *s = fr_symbols_new(NULL);
	char link_path[] = "/tmp/fr-test-symbols-XXXXXX";
	const char *name = NULL;
	char exe[4096];
	ssize_t n;
	int ret, fd;

	CHECK(s, "fr_symbols_new failed");
	if (!s)
		return;
	ret = fr_symbols_user(s, NULL, "/nonexistent/flightrec/libnone.so", NULL, 0, 0x1000, 0,
			      0x1234, &name, NULL);
	CHECK(ret == -ENOENT, "missing file: %d, want -ENOENT", ret);
	ret = fr_symbols_user(s, "/proc/self/root", "/nonexistent/flightrec/libnone.so", NULL, 0,
			      0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ENOENT, "missing rooted file: %d, want -ENOENT", ret);
	ret = fr_symbols_user(s, NULL, "[vdso]", NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret < 0, "[vdso] resolved: %d", ret);
	ret = fr_symbols_user(s, NULL, "/proc/self/maps", NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret < 0 && ret != -ENOMEM, "non-ELF file: %d", ret);
	ret = fr_symbols_user(s, NULL, "/dev/null", NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret < 0, "/dev/null resolved: %d", ret);

	/* A file missing at the first look-up stays missing for this cache:
	 * it is not reopened for every address. A new cache sees it. */
	fd = mkstemp(link_path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		goto out;
	close(fd);
	unlink(link_path);
	ret = fr_symbols_user(s, NULL, link_path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
	CHECK(ret == -ENOENT, "not yet created: %d", ret);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	CHECK(n > 0, "readlink /proc/self/exe");
	if (n > 0) {
		exe[n] = '\0';
		CHECK(symlink(exe, link_path) == 0, "symlink: %s", strerror(errno));
		ret = fr_symbols_user(s, NULL, link_path, NULL, 0, 0x1000, 0, 0x1234, &name, NULL);
		CHECK(ret == -ENOENT, "negative result not cached: %d", ret);
		fr_symbols_free(s);
		s = fr_symbols_new(NULL);
		CHECK(s, "fr_symbols_new failed");
		if (s) {
			uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
			struct mapping m;

			if (find_mapping(fn, &m) == 0) {
				/* A mapped path is what the kernel resolved; a
				 * symlink there was put by someone since, and
				 * is not followed. */
				ret = fr_symbols_user(s, NULL, link_path, NULL, 0, m.start, m.pgoff,
						      fn, &name, NULL);
				CHECK(ret == -ELOOP, "symlink followed: %d, want -ELOOP", ret);
				unlink(link_path);
				CHECK(test_copy_file(exe, link_path, 0600) == 0, "copy %s: %s", exe,
				      strerror(errno));
				fr_symbols_free(s);
				s = fr_symbols_new(NULL);
				CHECK(s, "fr_symbols_new failed");
				ret = s ? fr_symbols_user(s, NULL, link_path, NULL, 0, m.start,
							  m.pgoff, fn, &name, NULL)
					: -ENOMEM;
				CHECK(ret == 0 && strcmp(name, "fr_test_marker_fn") == 0,
				      "the file in a new cache: %d", ret);
			}
		}
		unlink(link_path);
	}
out:
	fr_symbols_free(s);
}

struct share_arg {
	struct mapping m;
	uint64_t fn;
	const char *name; /* what this thread's cache returned */
	int ret;
};

static void *share_main(void *p)
{
	struct share_arg *a = p;
	struct fr_symbols *s = fr_symbols_new(NULL);

	a->ret = -ENOMEM;
	if (!s)
		return NULL;
	for (int i = 0; i < 200; i++)
		a->ret = fr_symbols_user(s, NULL, a->m.path, NULL, 0, a->m.start, a->m.pgoff, a->fn,
					 &a->name, NULL);
	/* The name lives as long as a cache holds the image: compare it
	 * before this cache lets go. */
	a->name = a->name ? strdup(a->name) : NULL;
	fr_symbols_free(s);
	return NULL;
}

/* Regression: each request parsed its own copy of every file, so 16
 * concurrent attaches held 16 copies of libc's symbol table. Caches now
 * share one parsed image per file: two caches hand back the very same
 * name, and threads resolving at once all get it right. */
static void test_shared_images(void)
{
	struct share_arg args[4];
	pthread_t th[4];
	struct fr_symbols *s1 = fr_symbols_new(NULL), *s2 = fr_symbols_new(NULL);
	const char *n1 = NULL, *n2 = NULL;
	struct mapping m;
	uint64_t fn = (uint64_t)(uintptr_t)&fr_test_marker_fn;
	int r1, r2;

	CHECK(s1 && s2 && find_mapping(fn, &m) == 0, "set-up");
	if (!s1 || !s2)
		goto out;
	r1 = fr_symbols_user(s1, NULL, m.path, NULL, 0, m.start, m.pgoff, fn, &n1, NULL);
	r2 = fr_symbols_user(s2, NULL, m.path, NULL, 0, m.start, m.pgoff, fn, &n2, NULL);
	CHECK(r1 == 0 && r2 == 0 && n1 && n1 == n2,
	      "two caches did not share the parsed file: %d %d, %p %p", r1, r2, (void *)n1,
	      (void *)n2);
	for (int i = 0; i < 4; i++) {
		args[i] = (struct share_arg){.m = m, .fn = fn};
		CHECK(pthread_create(&th[i], NULL, share_main, &args[i]) == 0, "pthread_create");
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(args[i].ret == 0 && args[i].name &&
			      strcmp(args[i].name, "fr_test_marker_fn") == 0,
		      "thread %d: %d %s", i, args[i].ret, args[i].name ? args[i].name : "(null)");
		free((char *)args[i].name);
	}
out:
	fr_symbols_free(s1);
	fr_symbols_free(s2);
}

int main(void)
{
	test_build_id();
	test_self();
	test_libc();
	test_missing();
	test_shared_images();
	fr_symbols_free(NULL);
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	return 0;
}
