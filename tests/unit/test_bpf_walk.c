/* The blocked threads' stack reader alone (recorder/sampling/bpf_walk.h), on this
 * process's own memory: a copy holds the bytes that were at sp, ends where
 * the mapping ends (cut at the page, counted short), is handed to the
 * collector once, and its frames come back from fr_bpf_walk_get for the
 * same (tid, switch-out time) and not for another; the frame-pointer walk
 * follows a chain laid out by hand. No privileges: process_vm_readv of
 * one's own process needs none. */
#include "recorder/sampling/bpf_walk.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/store/sample.h"
#include "tests/unit/check.h"

/* The Python frames fr_bpf_walk_get gives (none here: no CPython). */
static struct fr_bpf_py_rec py;

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

#define PAGE 4096u
#define COPY 8192u

/* What the collector saw. */
struct seen {
	unsigned calls;
	size_t len;
	uint8_t first, last;
	uint64_t sp;
};

/* "Unwinds" a copy: checks nothing itself, remembers it, and answers
 * frames made from the registers so the caller can tell them apart. */
static unsigned fake_unwind(void *arg, const struct fr_bpf_walk_regs *r, const uint8_t *stack,
			    size_t len, uint64_t *ips, unsigned room)
{
	struct seen *s = arg;

	s->calls++;
	s->len = len;
	s->sp = r->sp;
	s->first = len ? stack[0] : 0;
	s->last = len ? stack[len - 1] : 0;
	if (room < 3)
		return 0;
	ips[0] = r->ip;
	ips[1] = r->ip + 1;
	ips[2] = len;
	return 3;
}

/* Waits for the walker's wake-up and collects; returns the copies. */
static uint32_t collect(struct fr_bpf_walk *w, struct seen *s)
{
	struct pollfd p = {.fd = fr_bpf_walk_fd(w), .events = POLLIN};
	uint32_t n = 0;

	for (int i = 0; i < 50 && !n; i++) {
		if (poll(&p, 1, 100) < 0)
			break;
		n = fr_bpf_walk_collect(w, fake_unwind, NULL, s);
	}
	return n;
}

static void test_copies(void)
{
	uint32_t set = 0;
	struct fr_bpf_walk *w = NULL;
	struct fr_bpf_walk_counts c;
	struct seen s = {0};
	uint64_t ips[FR_MAX_FRAMES];
	/* Two pages and a hole after them: a stack that ends there. */
	uint8_t *m =
		mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fr_bpf_walk_regs r = {.pid = (uint32_t)getpid(),
				     .tid = 4242,
				     .start = 77,
				     .ip = 0x1000};
	uint32_t n;

	CHECK(m != MAP_FAILED, "mmap: %s", strerror(errno));
	if (m == MAP_FAILED)
		return;
	munmap(m + 2 * PAGE, PAGE);
	memset(m, 0xa5, 2 * PAGE);
	m[0] = 0x11;
	m[2 * PAGE - 1] = 0x22;
	CHECK(fr_bpf_walk_new(&w, COPY) == 0, "fr_bpf_walk_new");
	if (!w)
		return;
	CHECK(fr_bpf_walk_fd(w) >= 0, "no descriptor to wake the owner");

	/* A whole copy: 8 KiB from the start of the two pages. */
	r.sp = (uint64_t)(uintptr_t)m;
	CHECK(fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py) == 0, "frames before any walk");
	n = collect(w, &s);
	CHECK(n == 1 && s.calls == 1, "collected %u copies in %u calls, want 1", n, s.calls);
	CHECK(s.len == COPY && s.first == 0x11 && s.last == 0x22,
	      "copy of %zu bytes (%#x .. %#x), want %u (0x11 .. 0x22)", s.len, s.first, s.last,
	      COPY);
	n = fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	CHECK(n == 3 && ips[0] == 0x1000 && ips[2] == COPY, "frames %u (%#llx, %llu) after collect",
	      n, (unsigned long long)ips[0], (unsigned long long)ips[2]);
	/* The same thread's next wait (another switch-out time) is not it,
	 * and is copied anew. */
	r.start = 78;
	CHECK(fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py) == 0, "frames of another wait");
	s = (struct seen){0};
	CHECK(collect(w, &s) == 1 && s.len == COPY, "the next wait's copy: %zu bytes", s.len);

	/* A stack whose mapping ends 100 bytes into the second page: the
	 * copy is cut where the readable memory ends, and counted short. */
	s = (struct seen){0};
	r.start = 79;
	r.sp = (uint64_t)(uintptr_t)(m + PAGE + 100);
	fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	n = collect(w, &s);
	CHECK(n == 1 && s.len == PAGE - 100 && s.last == 0x22,
	      "short copy: %u copies, %zu bytes, last %#x; want %u bytes ending 0x22", n, s.len,
	      s.last, PAGE - 100);
	/* Nothing readable at all: an empty copy, still answered. */
	s = (struct seen){0};
	r.start = 80;
	r.sp = (uint64_t)(uintptr_t)(m + 2 * PAGE);
	fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	n = collect(w, &s);
	CHECK(n == 1 && s.len == 0, "unreadable stack: %u copies of %zu bytes", n, s.len);
	fr_bpf_walk_counts(w, &c);
	CHECK(c.asked == 4 && c.done == 4 && c.dropped == 0 && c.short_copies == 2,
	      "counts asked %llu done %llu dropped %llu short %llu, want 4 4 0 2",
	      (unsigned long long)c.asked, (unsigned long long)c.done,
	      (unsigned long long)c.dropped, (unsigned long long)c.short_copies);
	fr_bpf_walk_free(w);
	munmap(m, 2 * PAGE);
}

/* Many threads at once: more than the copy buffers, so the walker waits
 * for the collector to give them back, and every one is answered. */
static void test_many(void)
{
	uint32_t set = 0;
	struct fr_bpf_walk *w = NULL;
	struct seen s = {0};
	uint64_t ips[FR_MAX_FRAMES], stack[64] = {0};
	unsigned want = 1000, got = 0;

	CHECK(fr_bpf_walk_new(&w, 512) == 0, "fr_bpf_walk_new");
	if (!w)
		return;
	for (unsigned i = 0; i < want; i++) {
		struct fr_bpf_walk_regs r = {.pid = (uint32_t)getpid(),
					     .tid = 1000 + i,
					     .start = 5,
					     .ip = 0x2000 + i,
					     .sp = (uint64_t)(uintptr_t)stack};

		fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	}
	for (int i = 0; i < 200 && s.calls < want; i++)
		collect(w, &s);
	CHECK(s.calls == want, "collected %u of %u copies", s.calls, want);
	for (unsigned i = 0; i < want; i++) {
		struct fr_bpf_walk_regs r = {.pid = (uint32_t)getpid(),
					     .tid = 1000 + i,
					     .start = 5,
					     .ip = 0x2000 + i,
					     .sp = (uint64_t)(uintptr_t)stack};

		got += fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py) == 3 &&
		       ips[0] == 0x2000 + i;
	}
	CHECK(got == want, "%u of %u threads have their frames", got, want);
	fr_bpf_walk_free(w);
}

/* What the labels callback saw. */
struct seen_labels {
	unsigned calls;
	uint16_t fr_len, otel_len;
	uint32_t magic;
	uint8_t last;
};

static uint32_t fake_labels(void *arg, const struct fr_bpf_labels_rec *r)
{
	struct seen_labels *s = arg;

	s->calls++;
	s->fr_len = r->fr_len;
	s->otel_len = r->otel_len;
	memcpy(&s->magic, r->fr, sizeof(s->magic));
	s->last = r->fr_len ? r->fr[r->fr_len - 1] : 0;
	return 77;
}

static unsigned no_unwind(void *arg, const struct fr_bpf_walk_regs *r, const uint8_t *stack,
			  size_t len, uint64_t *ips, unsigned room)
{
	return 0;
}

/* A blocked thread's labels: the record whose pointer is at tp + offset
 * is copied (its header, then as many bytes as it says, bounded), handed
 * to the labels callback, and its set comes back with the frames; a
 * process without an offset has none; a pointer into nothing gives an
 * empty copy. */
static void test_labels(void)
{
	struct fr_bpf_walk *w = NULL;
	struct seen_labels s = {0};
	uint64_t ips[FR_MAX_FRAMES], stack[8] = {0}, tls[4] = {0};
	uint8_t rec[FR_BPF_LABELS_FR_MAX] = {0};
	uint32_t set = 0, magic = 0x424c5246u;
	uint16_t size = 20;
	struct fr_bpf_walk_regs r = {.pid = (uint32_t)getpid(),
				     .tid = 99,
				     .start = 1,
				     .ip = 0x3000,
				     .sp = (uint64_t)(uintptr_t)stack,
				     .tp = (uint64_t)(uintptr_t)tls,
				     .fr_off = 8};

	memcpy(rec, &magic, sizeof(magic));
	memcpy(rec + 6, &size, sizeof(size));
	rec[8 + 19] = 0x5a;
	tls[1] = (uint64_t)(uintptr_t)rec;
	CHECK(fr_bpf_walk_new(&w, 512) == 0, "fr_bpf_walk_new");
	if (!w)
		return;
	fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	for (int i = 0; i < 50 && !s.calls; i++) {
		struct pollfd p = {.fd = fr_bpf_walk_fd(w), .events = POLLIN};

		poll(&p, 1, 100);
		fr_bpf_walk_collect(w, no_unwind, fake_labels, &s);
	}
	CHECK(s.calls == 1 && s.fr_len == 28 && s.magic == magic && s.last == 0x5a &&
		      s.otel_len == 0,
	      "labels copy: %u calls, %u bytes (%#x, last %#x), otel %u", s.calls, s.fr_len,
	      s.magic, s.last, s.otel_len);
	fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	CHECK(set == 77, "the set of its labels: %u", set);
	/* The pointer leads nowhere: nothing copied. */
	s = (struct seen_labels){0};
	tls[1] = 8;
	r.start = 2;
	fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	for (int i = 0; i < 50 && !s.calls; i++) {
		struct pollfd p = {.fd = fr_bpf_walk_fd(w), .events = POLLIN};

		poll(&p, 1, 100);
		fr_bpf_walk_collect(w, no_unwind, fake_labels, &s);
	}
	CHECK(s.calls == 1 && s.fr_len == 0, "a pointer into nothing: %u calls, %u bytes", s.calls,
	      s.fr_len);
	fr_bpf_walk_free(w);
}

/* Without a stack copy: the walker follows frame pointers itself. */
static void test_frame_pointers(void)
{
	uint32_t set = 0;
	struct fr_bpf_walk *w = NULL;
	uint64_t ips[FR_MAX_FRAMES], chain[8] = {0};
	struct fr_bpf_walk_regs r = {.pid = (uint32_t)getpid(), .tid = 7, .start = 1, .ip = 0x100};
	uint32_t n = 0;

	/* Two frames: bp -> chain[0] (saved bp -> chain[4], ra 0x200),
	 * chain[4] (saved bp 0, ra 0x300). */
	chain[0] = (uint64_t)(uintptr_t)&chain[4];
	chain[1] = 0x200;
	chain[4] = 0;
	chain[5] = 0x300;
	r.sp = (uint64_t)(uintptr_t)chain;
	r.bp = (uint64_t)(uintptr_t)chain;
	CHECK(fr_bpf_walk_new(&w, 0) == 0, "fr_bpf_walk_new");
	if (!w)
		return;
	CHECK(fr_bpf_walk_fd(w) < 0, "a frame-pointer walker has no descriptor");
	fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	for (int i = 0; i < 500 && !n; i++) {
		usleep(2000);
		n = fr_bpf_walk_get(w, &r, ips, FR_MAX_FRAMES, &set, &py);
	}
	CHECK(n == 3 && ips[0] == 0x100 && ips[1] == 0x200 && ips[2] == 0x300,
	      "frame-pointer walk: %u frames", n);
	fr_bpf_walk_free(w);
}

int main(void)
{
	test_copies();
	test_many();
	test_frame_pointers();
	test_labels();
	return failures ? 1 : 0;
}
