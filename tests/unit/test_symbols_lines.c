/* Source lines and inline frames (core/symbols/dwarf_lines.c) of a real
 * program built with -O2 -g, tests/unit/inline_calls.c: every address of
 * outer_work resolves to that file, lines inside the functions it claims,
 * the always_inline leaf_add as its own frame before outer_work; and, when
 * binutils is installed, to the very frames `addr2line -i -f` gives. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/dwarf_lines.h"
#include "core/symbols/elf_image.h"
#include "tests/unit/check.h"

#define MAX_ADDRS 4096

struct expect {
	int leaf_first, leaf_last, outer_first, outer_last;
	uint64_t outer;
};

static const char *base(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "(null)";
}

static int read_expect(const char *prog, struct expect *e)
{
	char cmd[4200];
	FILE *f;
	int n;

	snprintf(cmd, sizeof(cmd), "'%s' --lines", prog);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	n = fscanf(f, "%d %d %d %d %" SCNx64, &e->leaf_first, &e->leaf_last, &e->outer_first,
		   &e->outer_last, &e->outer);
	pclose(f);
	return n == 5 ? 0 : -EINVAL;
}

/* One address's frames against what the program says of its lines. */
static int check_frames(uint64_t a, const struct fr_dwarf_frame *fr, int n, const struct expect *e)
{
	const struct fr_dwarf_frame *out = &fr[n - 1];

	CHECK(out->function && strcmp(out->function, "outer_work") == 0,
	      "0x%" PRIx64 ": outermost frame %s, want outer_work", a,
	      out->function ? out->function : "(none)");
	CHECK(strcmp(base(out->file), "inline_calls.c") == 0, "0x%" PRIx64 ": file %s", a,
	      base(out->file));
	CHECK(out->line == 0 ||
		      ((int)out->line >= e->outer_first && (int)out->line <= e->outer_last),
	      "0x%" PRIx64 ": outer_work at line %u, outside %d-%d", a, out->line, e->outer_first,
	      e->outer_last);
	if (n < 2)
		return 0;
	CHECK(n == 2, "0x%" PRIx64 ": %d frames, want 2", a, n);
	CHECK(fr[0].function && strcmp(fr[0].function, "leaf_add") == 0,
	      "0x%" PRIx64 ": innermost frame %s, want leaf_add", a,
	      fr[0].function ? fr[0].function : "(none)");
	CHECK((int)fr[0].line >= e->leaf_first && (int)fr[0].line <= e->leaf_last,
	      "0x%" PRIx64 ": leaf_add at line %u, outside %d-%d", a, fr[0].line, e->leaf_first,
	      e->leaf_last);
	return 1;
}

static int isdigit_c(char c)
{
	return c >= '0' && c <= '9';
}

/* Compares with `addr2line -i -f -a`, which prints for each address a line
 * 0xADDR and then FUNCTION and FILE:LINE per frame, innermost first. */
static void check_addr2line(const char *prog, const uint64_t *addrs, size_t n,
			    struct fr_dwarf_frame (*frames)[FR_DWARF_MAX_FRAMES],
			    const int *nframes)
{
	size_t len = strlen(prog) + 64 + n * 20, at, i = SIZE_MAX;
	char *cmd = malloc(len), fn[512], loc[4200];
	int k = 0, compared = 0;
	FILE *f;

	at = (size_t)snprintf(cmd, len, "addr2line -i -f -a -e '%s'", prog);
	for (size_t j = 0; j < n; j++)
		at += (size_t)snprintf(cmd + at, len - at, " 0x%" PRIx64, addrs[j]);
	f = popen(cmd, "r");
	CHECK(f, "popen addr2line");
	while (f && fgets(fn, sizeof(fn), f)) {
		fn[strcspn(fn, "\n")] = '\0';
		if (strncmp(fn, "0x", 2) == 0) {
			if (i != SIZE_MAX && nframes[i] > 0)
				CHECK(k == nframes[i], "0x%" PRIx64 ": %d frames, addr2line %d",
				      addrs[i], nframes[i], k);
			i = i == SIZE_MAX ? 0 : i + 1;
			k = 0;
			continue;
		}
		if (!fgets(loc, sizeof(loc), f) || i >= n)
			break;
		if (nframes[i] > 0 && k < nframes[i] && strstr(loc, ":?") == NULL) {
			const struct fr_dwarf_frame *fr = &frames[i][k];
			char want[4300];

			snprintf(want, sizeof(want), "%s:%u", base(fr->file), fr->line);
			CHECK(strcmp(fr->function ? fr->function : "??", fn) == 0,
			      "0x%" PRIx64 " frame %d: %s, addr2line %s", addrs[i], k,
			      fr->function ? fr->function : "??", fn);
			CHECK(strncmp(base(loc), want, strlen(want)) == 0 &&
				      !isdigit_c(base(loc)[strlen(want)]),
			      "0x%" PRIx64 " frame %d: %s, addr2line %s", addrs[i], k, want,
			      base(loc));
			compared++;
		}
		k++;
	}
	if (i < n && nframes[i] > 0)
		CHECK(k == nframes[i], "0x%" PRIx64 ": %d frames, addr2line %d", addrs[i],
		      nframes[i], k);
	if (f)
		pclose(f);
	CHECK(compared > 0, "addr2line compared no frame");
	free(cmd);
}

int main(int argc, char **argv)
{
	static struct fr_dwarf_frame frames[MAX_ADDRS][FR_DWARF_MAX_FRAMES];
	static uint64_t addrs[MAX_ADDRS];
	static int nframes[MAX_ADDRS];
	struct fr_elf_image img = {0};
	struct expect e;
	struct stat st;
	size_t n = 0;
	int fd, inlined = 0, ret;

	if (argc != 2) {
		fprintf(stderr, "usage: %s INLINE_CALLS\n", argv[0]);
		return 2;
	}
	CHECK(read_expect(argv[1], &e) == 0, "%s --lines", argv[1]);
	fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0 && fstat(fd, &st) == 0, "open %s", argv[1]);
	if (failures)
		return 1;
	ret = fr_elf_image_load(&img, fd, (uint64_t)st.st_size);
	close(fd);
	CHECK(ret == 0, "load: %d", ret);
	CHECK(img.dwarf, "no DWARF read from %s", argv[1]);
	for (uint64_t a = e.outer; img.dwarf && n < MAX_ADDRS; a++) {
		const char *name;

		if (fr_elf_image_lookup(&img, a, &name) < 0 || strcmp(name, "outer_work") != 0)
			break;
		addrs[n] = a;
		nframes[n] = fr_dwarf_lines_lookup(img.dwarf, a, frames[n], FR_DWARF_MAX_FRAMES);
		CHECK(nframes[n] >= 1, "0x%" PRIx64 ": %d", a, nframes[n]);
		if (nframes[n] >= 1)
			inlined += check_frames(a, frames[n], nframes[n], &e);
		n++;
	}
	/* A second round is answered from the cache: the same frames. */
	for (size_t i = 0; i < n; i++) {
		struct fr_dwarf_frame again[FR_DWARF_MAX_FRAMES];
		int k = fr_dwarf_lines_lookup(img.dwarf, addrs[i], again, FR_DWARF_MAX_FRAMES);

		CHECK(k == nframes[i] &&
			      (k <= 0 || memcmp(again, frames[i], (size_t)k * sizeof(*again)) == 0),
		      "0x%" PRIx64 ": a second lookup gives %d frames, the first %d", addrs[i], k,
		      nframes[i]);
	}
	CHECK(n > 0, "outer_work not found at 0x%" PRIx64, e.outer);
	CHECK(inlined > 0, "no address of outer_work has leaf_add inlined");
	if (n && access("/usr/bin/addr2line", X_OK) == 0)
		check_addr2line(argv[1], addrs, n, frames, nframes);
	else
		fprintf(stderr, "addr2line not installed: not compared\n");
	fr_elf_image_fini(&img);
	return failures ? 1 : 0;
}
