/* PLT stubs by name: in programs built for the test (plt_calls, without
 * and with IBT, so both .plt and .plt + .plt.sec are read), every stub
 * address is named NAME@plt as objdump -d names it, and no sized function
 * is named past its end.
 *
 *   test_symbols_plt PLT_CALLS PLT_CALLS_IBT
 *
 * Regression: a stub used to be named after the symbol before it, _init
 * (size 0), which extended over the whole PLT. */
#include "core/symbols/symbols.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/check.h"

#define MAX_SYMS 256

/* A symbol as objdump shows it: a stub of `objdump -d`, or a function of
 * `objdump -t` with its size. */
struct dsym {
	uint64_t addr;
	uint64_t size;
	char name[128];
};

static int load(const char *path, struct fr_elf_image *img)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0 || fstat(fd, &st) < 0) {
		CHECK(0, "%s: %s", path, strerror(errno));
		return -1;
	}
	memset(img, 0, sizeof(*img));
	ret = fr_elf_image_load(img, fd, (uint64_t)st.st_size);
	close(fd);
	CHECK(ret == 0, "%s: load: %d", path, ret);
	return ret;
}

/* Runs objdump with `opts` on `path`: keeps the stubs of -d, or (`sized`)
 * the sized functions of .text of -t. Returns how many, or -1. */
static int objdump_read(const char *opts, const char *path, struct dsym *out, bool sized)
{
	char cmd[4096], line[512];
	int n = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "objdump %s '%s' 2>/dev/null", opts, path);
	f = popen(cmd, "r");
	if (!f)
		return -1;
	while (n < MAX_SYMS && fgets(line, sizeof(line), f)) {
		struct dsym *d = &out[n];
		char flags[16], sec[64];

		/* "<qsort@plt-0x10>": the header of .plt, named by no one. */
		if (!sized && sscanf(line, "%" SCNx64 " <%127[^>]>:", &d->addr, d->name) == 2 &&
		    strlen(d->name) > 4 && strcmp(d->name + strlen(d->name) - 4, "@plt") == 0)
			n++;
		else if (sized &&
			 sscanf(line, "%" SCNx64 " %*c %15s %63s %" SCNx64 " %127s", &d->addr,
				flags, sec, &d->size, d->name) == 5 &&
			 strcmp(flags, "F") == 0 && strcmp(sec, ".text") == 0 && d->size)
			n++;
	}
	return pclose(f) == 0 ? n : -1;
}

static const char *lookup(const struct fr_elf_image *img, uint64_t vaddr)
{
	const char *name = NULL;

	return fr_elf_image_lookup(img, vaddr, &name) == 0 ? name : NULL;
}

/* Each stub objdump names, at its first and its last byte. */
static void check_stubs(const char *path, const struct fr_elf_image *img)
{
	static struct dsym stubs[MAX_SYMS];
	int n = objdump_read("-d", path, stubs, false);
	bool sec = false;

	CHECK(n > 0, "%s: objdump -d lists no stubs", path);
	for (int i = 0; i < n; i++) {
		/* Stubs are 16 bytes, but those of .plt.got without IBT 8. */
		uint64_t last = stubs[i].addr + 7;
		const char *a = lookup(img, stubs[i].addr), *b = lookup(img, last);

		CHECK(a && strcmp(a, stubs[i].name) == 0, "%s %#" PRIx64 ": %s, objdump %s", path,
		      stubs[i].addr, a ? a : "(none)", stubs[i].name);
		CHECK(b && strcmp(b, stubs[i].name) == 0, "%s %#" PRIx64 ": %s, objdump %s", path,
		      last, b ? b : "(none)", stubs[i].name);
		sec |= strcmp(stubs[i].name, "strlen@plt") == 0 && fr_elf_image_in_plt(img, last);
	}
	CHECK(sec, "%s: strlen@plt is not in the PLT read", path);
	/* The header of .plt belongs to no function: not to _init before it. */
	CHECK(!lookup(img, img->plt_start), "%s: PLT header %#" PRIx64 " named %s", path,
	      img->plt_start, lookup(img, img->plt_start));
}

/* The names a program calling strlen, memcpy and qsort must have, read
 * without objdump: every symbol's own address looked up. */
static void check_names(const char *path, const struct fr_elf_image *img)
{
	static const char *const want[] = {"strlen@plt", "memcpy@plt", "qsort@plt"};

	for (size_t w = 0; w < sizeof(want) / sizeof(*want); w++) {
		bool found = false;

		for (size_t i = 0; i < img->nsyms && !found; i++) {
			const char *name = lookup(img, img->addrs[i]);

			found = name && strcmp(name, want[w]) == 0 &&
				fr_elf_image_in_plt(img, img->addrs[i]);
		}
		CHECK(found, "%s: no %s", path, want[w]);
	}
}

/* A function with a size names its last byte, not the one past it
 * (unless another symbol starts there). */
static void check_sized(const char *path, const struct fr_elf_image *img)
{
	static struct dsym fns[MAX_SYMS];
	int n = objdump_read("-t", path, fns, true), checked = 0;

	for (int i = 0; i < n; i++) {
		uint64_t end = fns[i].addr + fns[i].size;
		const char *own = lookup(img, fns[i].addr), *past;
		bool starts = false;

		for (int j = 0; j < n; j++)
			starts |= fns[j].addr == end;
		CHECK(own && lookup(img, end - 1) && strcmp(lookup(img, end - 1), own) == 0,
		      "%s: last byte of %s is not named after it", path, fns[i].name);
		past = lookup(img, end);
		if (starts || !own)
			continue;
		CHECK(!past || strcmp(past, own) != 0, "%s %#" PRIx64 ": one past %s named %s",
		      path, end, fns[i].name, past);
		checked++;
	}
	CHECK(n < 0 || checked > 0, "%s: no sized function checked", path);
}

/* A stripped copy of `path` inside a root, with its debug file under the
 * root's /usr/lib/debug/.build-id: the debug file's .symtab is asked
 * first, but its PLT has no contents and its _init (size 0) would cover
 * the stubs; `stub` (the address of strlen@plt) is still named from the
 * file. Regression: it was named _init. */
static void check_debug_root(const char *path, uint64_t stub)
{
	char root[] = "/tmp/fr-plt-XXXXXX", cmd[4096], hex[2 * FR_ELF_BUILD_ID_MAX + 1];
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	const char *name = NULL;
	int len = fr_elf_build_id(path, bid, sizeof(bid)), ret;
	struct fr_symbols *s;
	uint64_t vaddr = 0;

	CHECK(len >= 2, "%s: no build id: %d", path, len);
	if (len < 2 || !mkdtemp(root))
		return;
	fr_build_id_hex(bid, (size_t)len, hex);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/bin %s/usr/lib/debug/.build-id/%.2s && strip -o %s/bin/prog '%s' && "
		 "objcopy --only-keep-debug '%s' %s/usr/lib/debug/.build-id/%.2s/%s.debug",
		 root, root, hex, root, path, path, root, hex, hex + 2);
	CHECK(system(cmd) == 0, "%s", cmd);
	s = fr_symbols_new(NULL);
	/* Mapped whole at 0x10000000: its .plt lies at the same file offset
	 * as its address (elf_addr checks it). */
	ret = fr_symbols_user(s, root, "/bin/prog", bid, (size_t)len, 0x10000000, 0,
			      0x10000000 + stub, &name, &vaddr);
	CHECK(ret == 0 && vaddr == stub && strcmp(name, "strlen@plt") == 0,
	      "%s stripped, with its debug file: %#" PRIx64 " -> %d %#" PRIx64 " %s", path, stub,
	      ret, vaddr, ret == 0 ? name : "");
	fr_symbols_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK(system(cmd) == 0, "%s", cmd);
}

static void check_program(const char *path)
{
	struct fr_elf_image img;

	if (load(path, &img) < 0)
		return;
	check_names(path, &img);
	if (system("objdump --version >/dev/null 2>&1") == 0) {
		check_stubs(path, &img);
		check_sized(path, &img);
		for (size_t i = 0; i < img.nsyms; i++) {
			const char *name = lookup(&img, img.addrs[i]);

			if (name && strcmp(name, "strlen@plt") == 0)
				check_debug_root(path, img.addrs[i]);
		}
	} else {
		printf("no objdump: %s checked against its own reading only\n", path);
	}
	fr_elf_image_fini(&img);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s PLT_CALLS PLT_CALLS_IBT\n", argv[0]);
		return 2;
	}
	check_program(argv[1]);
	check_program(argv[2]);
	return failures ? 1 : 0;
}
