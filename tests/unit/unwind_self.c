/* See unwind_self.h. */
#include "tests/unit/unwind_self.h"

#include <errno.h>
#include <execinfo.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t self_stack_end;

int self_read_file(const char *path, void **data, size_t *size)
{
	FILE *f = fopen(path, "rb");
	long len;
	void *buf;

	if (!f)
		return -errno;
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -EIO;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		free(buf);
		fclose(f);
		return -EIO;
	}
	fclose(f);
	*data = buf;
	*size = (size_t)len;
	return 0;
}

static void add_map(struct self_maps *m, uint64_t start, uint64_t end, uint64_t off,
		    const char *path)
{
	struct self_map *s = &m->map[m->n++];
	void *data = NULL;
	size_t size = 0;

	*s = (struct self_map){.start = start, .end = end, .offset = off};
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (strcmp(path, "[vdso]") == 0) {
		s->miss = FR_UNWIND_MISS_VDSO;
		return;
	}
	s->miss = FR_UNWIND_MISS_NOCFI;
	if (path[0] != '/' || (s->err = self_read_file(path, &data, &size)) < 0)
		return;
	s->err = fr_cfi_build(data, size, &s->table);
	free(data);
}

int self_maps_load(struct self_maps *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	if (!f)
		return -errno;
	memset(m, 0, sizeof(*m));
	while (fgets(line, sizeof(line), f)) {
		uint64_t start, end, off;
		char perms[8], path[256] = "";

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %255s", &start,
			   &end, perms, &off, path) < 4)
			continue;
		if (strcmp(path, "[stack]") == 0)
			m->stack_end = end;
		if (perms[2] == 'x' && path[0] && m->n < SELF_MAX_MAPS)
			add_map(m, start, end, off, path);
	}
	fclose(f);
	self_stack_end = m->stack_end;
	return m->stack_end ? 0 : -ENOENT;
}

void self_maps_free(struct self_maps *m)
{
	for (int i = 0; i < m->n; i++)
		fr_cfi_free(m->map[i].table);
	m->n = 0;
}

const struct self_map *self_map_of(const struct self_maps *m, uint64_t addr)
{
	for (int i = 0; i < m->n; i++)
		if (addr >= m->map[i].start && addr < m->map[i].end)
			return &m->map[i];
	return NULL;
}

const struct fr_cfi_table *self_find(void *arg, uint64_t addr, uint64_t *vaddr, int *miss)
{
	const struct self_map *s = self_map_of(arg, addr);

	if (!s) {
		*miss = FR_UNWIND_MISS_NOMAP;
		return NULL;
	}
	if (!s->table || fr_cfi_translate(s->table, addr - s->start + s->offset, vaddr) < 0) {
		*miss = s->miss;
		return NULL;
	}
	return s->table;
}

/* The stack as the kernel copies it, redzones of the sanitizers' builds
 * included: byte by byte, without instrumentation (memcpy would be
 * intercepted). */
__attribute__((no_sanitize_address)) static void copy_stack(uint8_t *dst, uint64_t sp, size_t n)
{
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)sp;

	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
}

__attribute__((noinline, noclone)) void self_capture(struct self_snap *s, size_t copy)
{
	uint64_t ip, sp, bp;

	/* One statement, so that rsp is the same at the address taken
	 * (the instruction after the lea) as when it is read. */
	__asm__ volatile("lea 0(%%rip), %0\n\t"
			 "mov %%rsp, %1\n\t"
			 "mov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	s->regs = (struct fr_unwind_regs){.ip = ip, .sp = sp, .bp = bp};
	if (copy > sizeof(s->data))
		copy = sizeof(s->data);
	if (self_stack_end > sp && self_stack_end - sp < copy)
		copy = (size_t)(self_stack_end - sp);
	copy_stack(s->data, sp, copy);
	s->stack = (struct fr_unwind_stack){.sp = sp, .data = s->data, .size = copy};
	s->nbt = backtrace(s->bt, SELF_MAX_BT);
}
