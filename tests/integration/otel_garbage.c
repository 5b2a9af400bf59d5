/* A hostile publisher of the OpenTelemetry thread context, for
 * otel_hostile.sh: it exports `otel_thread_ctx_v1` as the specification
 * says (so the recorder reads it) and then breaks every rule of the
 * record, one thread per way, each burning CPU until the process is
 * killed:
 *
 *   unmapped   the pointer cycles through addresses where nothing is
 *              mapped: a page unmapped again, 0x10, a kernel address, a
 *              non-canonical one, one where the header would wrap past
 *              the top of the address space
 *   absent     pages that are mapped but cannot be read without a fault:
 *              anonymous memory never touched, PROT_NONE
 *   huge       a valid record (trace 71, span 17) claiming 65535 bytes of
 *              attributes, followed by 612 bytes of fixed random ones
 *   end        a valid record (trace 72, span 27) claiming 600 bytes of
 *              attributes whose header ends where its mapping does (a
 *              PROT_NONE page after it), and, every other millisecond,
 *              one whose header itself runs into that page
 *   random     a record rewritten with random bytes all the time, in
 *              place, with no protocol; its trace and span id bytes are
 *              all 0xE0 | (4 random bits), so any id read from it has an
 *              'e' as every other hex digit, however torn
 *   rapid      the pointer swapped as fast as the thread can among two
 *              valid records (trace 73, span 37, attribute 0 = "r1";
 *              trace 74, span 47, attribute 0 = "r2"), NULL, an unmapped
 *              page, a kernel address, and the first record plus one (an
 *              odd address whose "valid" byte is 0)
 *
 * (a trace id here is 16 bytes of the value named, a span id 8.) Prints
 * "TID ROLE" for each thread (main's first), then "ready". What a reader
 * may legitimately get from each is checked by otel_hostile.sh.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

struct otel_record {
	uint8_t trace_id[16];
	uint8_t span_id[8];
	uint8_t valid;
	uint8_t trace_flags;
	uint16_t attrs_data_size;
	uint8_t attrs_data[612];
} __attribute__((packed, aligned(8)));

__thread volatile uintptr_t otel_thread_ctx_v1;

#define HEAD 28

static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t started;
static long page;
static volatile uint64_t sink;

void garbage_spin(uint64_t n);

__attribute__((noinline)) void garbage_spin(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += i;
}

static void announce(const char *role)
{
	pthread_setname_np(pthread_self(), role);
	pthread_mutex_lock(&print_lock);
	printf("%d %s\n", gettid(), role);
	fflush(stdout);
	pthread_mutex_unlock(&print_lock);
	pthread_barrier_wait(&started);
}

static void set_ptr(uintptr_t p)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	otel_thread_ctx_v1 = p;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void fill(struct otel_record *r, uint8_t trace, uint8_t span)
{
	memset(r, 0, sizeof(*r));
	memset(r->trace_id, trace, 16);
	memset(r->span_id, span, 8);
	r->valid = 1;
}

/* A page mapped and unmapped again: nothing there. */
static uintptr_t hole(void)
{
	void *p = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		       0);

	if (p == MAP_FAILED)
		abort();
	munmap(p, (size_t)page);
	return (uintptr_t)p;
}

static void *unmapped(void *arg)
{
	const uintptr_t bad[] = {hole(),
				 0x10,
				 0xffffffff81000000ull,
				 0x0000800000000000ull,
				 0xfffffffffffffff0ull,
				 hole() + 7};

	(void)arg;
	announce("unmapped");
	for (unsigned i = 0;; i++) {
		set_ptr(bad[i % (sizeof(bad) / sizeof(bad[0]))]);
		garbage_spin(20000);
	}
	return NULL;
}

static void *absent(void *arg)
{
	char *never = mmap(NULL, 16 * (size_t)page, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *none = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (never == MAP_FAILED || none == MAP_FAILED)
		abort();
	announce("absent");
	for (unsigned i = 0;; i++) {
		set_ptr(i % 2 ? (uintptr_t)none : (uintptr_t)(never + (i % 16) * page));
		garbage_spin(20000);
	}
	return NULL;
}

static struct otel_record huge_rec;

static void *huge(void *arg)
{
	uint64_t s = 42;

	(void)arg;
	fill(&huge_rec, 0x71, 0x17);
	huge_rec.attrs_data_size = 0xffff;
	for (size_t i = 0; i < sizeof(huge_rec.attrs_data); i++)
		huge_rec.attrs_data[i] = (uint8_t)rng(&s);
	set_ptr((uintptr_t)&huge_rec);
	announce("huge");
	for (;;)
		garbage_spin(1000000);
	return NULL;
}

static void *end(void *arg)
{
	char *m = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	struct otel_record *at_end, *across;

	(void)arg;
	if (m == MAP_FAILED)
		abort();
	/* The header's last byte is the page's: its attributes are past it. */
	at_end = (struct otel_record *)(m + page - HEAD);
	memset(at_end->trace_id, 0x72, 16);
	memset(at_end->span_id, 0x27, 8);
	at_end->valid = 1;
	at_end->trace_flags = 1;
	at_end->attrs_data_size = 600;
	/* A header cut by the end of the page (its "valid" byte is past it). */
	across = (struct otel_record *)(m + page - 20);
	mprotect(m + page, (size_t)page, PROT_NONE);
	announce("end");
	for (int64_t i = 0;; i++) {
		set_ptr((uintptr_t)(i % 2 ? across : at_end));
		garbage_spin(200000);
	}
	return NULL;
}

static struct otel_record random_rec;

static void *random_bytes(void *arg)
{
	static const uint8_t valid[] = {0, 1, 1, 1, 2, 0xff};
	uint8_t *b = (uint8_t *)&random_rec;
	uint64_t s = rng_state;

	(void)arg;
	set_ptr((uintptr_t)&random_rec);
	announce("random");
	for (;;) {
		for (size_t i = 0; i < sizeof(random_rec); i++) {
			uint8_t x = (uint8_t)rng(&s);

			if (i < 24)
				x = 0xe0 | (x & 0x0f);
			else if (i == 24)
				x = valid[x % sizeof(valid)];
			b[i] = x;
		}
		garbage_spin(1000);
	}
	return NULL;
}

static struct otel_record rapid_1, rapid_2;

static void *rapid(void *arg)
{
	uintptr_t ptrs[] = {
		(uintptr_t)&rapid_1,   (uintptr_t)&rapid_2,	0, hole(),
		0xffffffff81000000ull, (uintptr_t)&rapid_1 + 1,
	};

	(void)arg;
	fill(&rapid_1, 0x73, 0x37);
	rapid_1.attrs_data[0] = 0;
	rapid_1.attrs_data[1] = 2;
	memcpy(rapid_1.attrs_data + 2, "r1", 2);
	rapid_1.attrs_data_size = 4;
	rapid_1.trace_flags = 0; /* the "valid" byte seen at rapid_1 + 1 */
	fill(&rapid_2, 0x74, 0x47);
	rapid_2.attrs_data[0] = 0;
	rapid_2.attrs_data[1] = 2;
	memcpy(rapid_2.attrs_data + 2, "r2", 2);
	rapid_2.attrs_data_size = 4;
	announce("rapid");
	for (unsigned i = 0;; i++) {
		set_ptr(ptrs[i % (sizeof(ptrs) / sizeof(ptrs[0]))]);
		sink += i;
	}
	return NULL;
}

int main(void)
{
	void *(*const fns[])(void *) = {unmapped, absent, huge, end, random_bytes, rapid};
	const size_t n = sizeof(fns) / sizeof(fns[0]);
	pthread_t th;

	page = sysconf(_SC_PAGESIZE);
	rng_state ^= (uint64_t)time(NULL);
	pthread_barrier_init(&started, NULL, (unsigned)n + 1);
	printf("%d main\n", getpid());
	fflush(stdout);
	for (size_t i = 0; i < n; i++)
		pthread_create(&th, NULL, fns[i], NULL);
	pthread_barrier_wait(&started);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
