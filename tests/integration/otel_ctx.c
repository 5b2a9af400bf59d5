/* A publisher of the OpenTelemetry thread context (OTEP 4947), written
 * from the specification alone, for otel_ctx.sh and otel_hostile.sh: the
 * executable exports the TLS pointer `otel_thread_ctx_v1` in .dynsym
 * (-Wl,--export-dynamic-symbol) and each thread points it at its record
 * (trace id [16], span id [8], valid, trace flags, u16 attribute bytes,
 * then (u8 key index, u8 length, bytes) entries), following the "pointer
 * swap" protocol: a record is complete before the pointer to it is
 * stored, with a compiler fence between.
 *
 *   otel_ctx [SUFFIX]
 *
 * Threads, each burning CPU in a function of its own until the process is
 * killed (a trace id is 16 bytes of one value but the second byte, SUFFIX,
 * a span id 8 bytes of one value):
 *   traced-a   trace 0a, span a1, attribute 0 = "GET /a"
 *   traced-b   trace 0b, span b2, attribute 5 = "tenant b"
 *   switch     two records, swapped every ~50 us of CPU: trace 51, span
 *              11, attribute 1 = "one" while otel_spin_one runs, trace 52,
 *              span 22, "two" in otel_spin_two; a sample carrying the
 *              other record's ids shows in its stack
 *   null       a NULL pointer: no context
 *   invalid    a record with valid = 0 (trace 0d, span d4, attribute 0 =
 *              "invalid"): to be ignored
 *   zero-ids   valid, trace and span all zeros, attribute 2 = "no trace":
 *              an attribute without ids
 *   sleeper    trace 0c, span c3: 1 ms of CPU, then 3 ms asleep, over and
 *              over (its off-CPU waits carry the ids)
 * SUFFIX is a hex byte (default 00), so that two instances have different
 * ids. Prints "TID ROLE" for each thread (main's first), then "ready".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

_Static_assert(sizeof(struct otel_record) == 640, "the specification's record");

/* The specification's symbol; exported by the link (meson.build). */
__thread struct otel_record *otel_thread_ctx_v1;

static struct otel_record rec_a, rec_b, rec_one, rec_two, rec_invalid, rec_zero, rec_sleep;
static uint8_t suffix;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;
/* main and the 7 threads: "ready" once every thread printed its line. */
static pthread_barrier_t started;

/* The pointer swap: the record is whole before the pointer to it. */
static void attach_ctx(struct otel_record *r)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&otel_thread_ctx_v1, r, __ATOMIC_RELAXED);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static void fill(struct otel_record *r, uint8_t trace, uint8_t span, uint8_t valid)
{
	memset(r, 0, sizeof(*r));
	memset(r->trace_id, trace, sizeof(r->trace_id));
	r->trace_id[1] = suffix;
	memset(r->span_id, span, sizeof(r->span_id));
	r->valid = valid;
	r->trace_flags = 1;
}

static void add_attr(struct otel_record *r, uint8_t key, const char *value)
{
	size_t n = strlen(value);

	r->attrs_data[r->attrs_data_size] = key;
	r->attrs_data[r->attrs_data_size + 1] = (uint8_t)n;
	memcpy(r->attrs_data + r->attrs_data_size + 2, value, n);
	r->attrs_data_size = (uint16_t)(r->attrs_data_size + 2 + n);
}

static volatile uint64_t sink;

/* The functions the samples are checked against (noinline, named in the
 * profiles). */
void otel_spin(uint64_t n);
void otel_spin_one(uint64_t n);
void otel_spin_two(uint64_t n);

__attribute__((noinline)) void otel_spin(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += i;
}

/* Both run otel_spin: the same code, so that the two records share the
 * thread's CPU evenly. */
__attribute__((noinline)) void otel_spin_one(uint64_t n)
{
	otel_spin(n);
}

__attribute__((noinline)) void otel_spin_two(uint64_t n)
{
	otel_spin(n);
}

static int64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Iterations of otel_spin per ~50 us, measured once. */
static uint64_t per_50us;

static void calibrate(void)
{
	uint64_t n = 100000;
	int64_t t;

	for (;;) {
		t = cpu_ns();
		otel_spin(n);
		t = cpu_ns() - t;
		if (t > 20000000)
			break;
		n *= 2;
	}
	per_50us = n * 50000 / (uint64_t)t;
	if (!per_50us)
		per_50us = 1;
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

static void *burner(void *arg)
{
	const char *role = arg;

	if (strcmp(role, "traced-a") == 0)
		attach_ctx(&rec_a);
	else if (strcmp(role, "traced-b") == 0)
		attach_ctx(&rec_b);
	else if (strcmp(role, "invalid") == 0)
		attach_ctx(&rec_invalid);
	else if (strcmp(role, "zero-ids") == 0)
		attach_ctx(&rec_zero);
	announce(role);
	for (;;)
		otel_spin(per_50us * 20);
	return NULL;
}

static void *switcher(void *arg)
{
	(void)arg;
	announce("switch");
	for (;;) {
		attach_ctx(&rec_one);
		otel_spin_one(per_50us);
		attach_ctx(&rec_two);
		otel_spin_two(per_50us);
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	const struct timespec nap = {0, 3000000};

	(void)arg;
	attach_ctx(&rec_sleep);
	announce("sleeper");
	for (;;) {
		otel_spin(per_50us * 20);
		nanosleep(&nap, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	static const char *const roles[] = {"traced-a", "traced-b", "null", "invalid", "zero-ids"};
	pthread_t th;

	if (argc > 1)
		suffix = (uint8_t)strtoul(argv[1], NULL, 16);
	fill(&rec_a, 0x0a, 0xa1, 1);
	add_attr(&rec_a, 0, "GET /a");
	fill(&rec_b, 0x0b, 0xb2, 1);
	add_attr(&rec_b, 5, "tenant b");
	fill(&rec_one, 0x51, 0x11, 1);
	add_attr(&rec_one, 1, "one");
	fill(&rec_two, 0x52, 0x22, 1);
	add_attr(&rec_two, 1, "two");
	fill(&rec_invalid, 0x0d, 0xd4, 0);
	add_attr(&rec_invalid, 0, "invalid");
	memset(&rec_zero, 0, sizeof(rec_zero));
	rec_zero.valid = 1;
	add_attr(&rec_zero, 2, "no trace");
	fill(&rec_sleep, 0x0c, 0xc3, 1);
	calibrate();
	pthread_barrier_init(&started, NULL, 8);
	printf("%d main\n", getpid());
	for (size_t i = 0; i < sizeof(roles) / sizeof(roles[0]); i++)
		pthread_create(&th, NULL, burner, (void *)roles[i]);
	pthread_create(&th, NULL, switcher, NULL);
	pthread_create(&th, NULL, sleeper, NULL);
	pthread_barrier_wait(&started);
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
