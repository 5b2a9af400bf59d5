/* A program labelled with libflightrec, for labels.sh.
 *
 *   labels_demo split SECONDS   two kinds of work, phase=a 30% and
 *                               phase=b 70% of the CPU time: one thread
 *                               alternates 3 ms of a and 7 ms of b; another
 *                               hands the same to a pool thread (capture on
 *                               the submitter, apply on the worker) and
 *                               waits for it.
 *   labels_demo slots SECONDS   one thread renames its labels every 10 ms:
 *                               slot=K, par=even|odd, and spins in
 *                               fr_demo_even or fr_demo_odd to match, so a
 *                               sample labelled with another moment's set
 *                               shows in its stack.
 *   labels_demo threads N SECONDS [off]
 *                               N threads, each changing its labels every
 *                               millisecond (slot=K) around 1 ms of CPU
 *                               (tests/bench/labels_cost.sh); "off" makes
 *                               the same without labels.
 *   labels_demo hostile MODE SECONDS
 *                               labels a thread, then scribbles over the
 *                               memory the recorder reads while spinning
 *                               (MODE: magic, the registry's magic and
 *                               version; pointers, the thread's record
 *                               pointer aimed at nothing; tids, the
 *                               registry's tls_offset; logs, the record's
 *                               header; sets, the record's pairs; churn,
 *                               labels changing as fast as they can;
 *                               stall, the record pointer into a mapping
 *                               of $LABELS_STALL_FILE, whose pages never
 *                               come in): the recorder must neither hang
 *                               nor crash, nor trust it.
 * Prints "ready" once labelled.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "flightrec/labels.h"
#include "flightrec/labels_abi.h"

/* Named in the profiles the test reads. */
void fr_demo_spin(int64_t ns);
void fr_demo_even(int64_t until);
void fr_demo_odd(int64_t until);

static int64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static volatile uint64_t sink;

/* Spins until this thread used `ns` more of CPU time. */
__attribute__((noinline)) void fr_demo_spin(int64_t ns)
{
	int64_t end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ns;

	while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 7;
}

__attribute__((noinline)) void fr_demo_even(int64_t until)
{
	while (now_ns(CLOCK_MONOTONIC) < until)
		sink++;
}

__attribute__((noinline)) void fr_demo_odd(int64_t until)
{
	while (now_ns(CLOCK_MONOTONIC) < until)
		sink--;
}

static int64_t stop_at;

/* ---- split ---- */

static void *alternate(void *arg)
{
	(void)arg;
	while (now_ns(CLOCK_MONOTONIC) < stop_at) {
		fr_labels_t t = fr_labels_push("phase", "a");

		fr_demo_spin(3000000);
		fr_labels_pop(t);
		t = fr_labels_push("phase", "b");
		fr_demo_spin(7000000);
		fr_labels_pop(t);
	}
	return NULL;
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int have_task, task_done, quit;
static fr_labels_t task_labels;
static int64_t task_ns;

static void *pool_worker(void *arg)
{
	fr_labels_t own = fr_labels_capture();

	(void)arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!have_task && !quit)
			pthread_cond_wait(&cv, &mu);
		if (quit)
			break;
		have_task = 0;
		pthread_mutex_unlock(&mu);
		fr_labels_apply(task_labels);
		fr_demo_spin(task_ns);
		fr_labels_apply(own);
		pthread_mutex_lock(&mu);
		task_done = 1;
		pthread_cond_broadcast(&cv);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void submit(const char *phase, int64_t ns)
{
	fr_labels_t t = fr_labels_push("phase", phase);

	pthread_mutex_lock(&mu);
	task_labels = fr_labels_capture();
	task_ns = ns;
	have_task = 1;
	task_done = 0;
	pthread_cond_broadcast(&cv);
	while (!task_done)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	fr_labels_pop(t);
}

static int split(int seconds)
{
	pthread_t a, w;

	stop_at = now_ns(CLOCK_MONOTONIC) + (int64_t)seconds * 1000000000;
	pthread_create(&a, NULL, alternate, NULL);
	pthread_create(&w, NULL, pool_worker, NULL);
	printf("ready\n");
	fflush(stdout);
	while (now_ns(CLOCK_MONOTONIC) < stop_at) {
		submit("a", 3000000);
		submit("b", 7000000);
	}
	pthread_mutex_lock(&mu);
	quit = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(a, NULL);
	pthread_join(w, NULL);
	return 0;
}

/* ---- slots ---- */

static int slots(int seconds)
{
	int64_t t0;
	char slot[32];

	/* The recorder finds a process's labels some milliseconds after it
	 * loaded the library (recorder/tracking/applabels.h): the slots start once it
	 * had the time, so every sample of theirs can carry its moment's. */
	usleep(200000);
	t0 = now_ns(CLOCK_MONOTONIC);
	stop_at = t0 + (int64_t)seconds * 1000000000;
	printf("ready\n");
	fflush(stdout);
	for (int64_t k = 0; t0 + k * 10000000 < stop_at; k++) {
		snprintf(slot, sizeof(slot), "%lld", (long long)k);
		fr_labels_set("slot", slot);
		if (k % 2 == 0) {
			fr_labels_set("par", "even");
			fr_demo_even(t0 + (k + 1) * 10000000);
		} else {
			fr_labels_set("par", "odd");
			fr_demo_odd(t0 + (k + 1) * 10000000);
		}
	}
	return 0;
}

/* ---- threads ---- */

static int labels_off;

static void *churner(void *arg)
{
	char v[32];

	for (long k = (long)(intptr_t)arg * 1000000; now_ns(CLOCK_MONOTONIC) < stop_at; k++) {
		snprintf(v, sizeof(v), "%ld", k % 1000);
		if (!labels_off)
			fr_labels_set("slot", v);
		fr_demo_spin(1000000);
	}
	return NULL;
}

static int many_threads(int n, int seconds, int off)
{
	pthread_t th[256];

	if (n < 1 || n > 256)
		return 2;
	labels_off = off;
	stop_at = now_ns(CLOCK_MONOTONIC) + (int64_t)seconds * 1000000000;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, churner, (void *)(intptr_t)i);
	printf("ready\n");
	fflush(stdout);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

/* ---- hostile ---- */

/* The library's registry, the one the recorder reads: dlsym on the
 * library itself (naming the symbol here would make a copy of it). */
static struct fr_labels_registry_abi *registry(void)
{
	void *h = dlopen("libflightrec.so.1", RTLD_NOW | RTLD_NOLOAD);

	return h ? dlsym(h, FR_LABELS_REGISTRY_SYMBOL) : NULL;
}

/* Where the recorder finds this thread's record. */
static const struct fr_labels_record_abi **current_slot(struct fr_labels_registry_abi *r)
{
	return (const struct fr_labels_record_abi **)((char *)__builtin_thread_pointer() +
						      r->tls_offset);
}

static void scribble(struct fr_labels_registry_abi *r, const char *mode, uint64_t round)
{
	/* Unmapped, kernel, wrapping and odd addresses in turn. */
	static const uint64_t bad[] =
		{0, 8, 0xffffffffffff0000ull, 0xffff800000000000ull, 0x7ffffffff000ull, 1ull << 47};
	static const struct fr_labels_record_abi **slot;
	static struct fr_labels_record_abi *rec;
	static int64_t tls_offset;

	if (!slot) {
		tls_offset = r->tls_offset;
		slot = current_slot(r);
		rec = (struct fr_labels_record_abi *)*slot;
	}
	if (strcmp(mode, "magic") == 0) {
		r->magic = round;
		r->version = (uint32_t)round;
	} else if (strcmp(mode, "pointers") == 0) {
		*slot = (const void *)(uintptr_t)bad[round % 6];
	} else if (strcmp(mode, "tids") == 0) {
		/* Offsets to nowhere, off by one, elsewhere in the thread's
		 * memory, and to the record itself (its header as a pointer). */
		const int64_t offsets[] = {(int64_t)bad[round % 6], tls_offset + 1,
					   tls_offset - 4096, -(int64_t)(round << 20),
					   (char *)rec - (char *)__builtin_thread_pointer()};

		r->tls_offset = offsets[round % 5];
	} else if (strcmp(mode, "logs") == 0) {
		rec->magic = round % 3 ? FR_LABELS_RECORD_MAGIC : (uint32_t)round;
		rec->valid = (uint8_t)(round % 4 ? 1 : round);
		rec->npairs = (uint8_t)(round * 37);
		rec->size = (uint16_t)(round * 4099);
	} else if (strcmp(mode, "sets") == 0) {
		/* Lengths past the record, zero lengths, NULs, keys out of
		 * order or twice. */
		rec->magic = FR_LABELS_RECORD_MAGIC;
		rec->valid = 1;
		rec->npairs = 2;
		rec->size = (uint16_t)(round % 2 ? 10 : sizeof(rec->data));
		memset(rec->data, (int)(round & 0xff), sizeof(rec->data));
		if (round % 3 == 0)
			memcpy(rec->data, "\001b\001x\001a\001y", 8);
		else if (round % 3 == 1)
			memcpy(rec->data, "\001a\001x\001a\001y", 8);
	} else if (strcmp(mode, "stall") == 0 && round == 1) {
		/* Mapped, never touched here: only a reader's fault waits. */
		const char *path = getenv("LABELS_STALL_FILE");
		int fd = path ? open(path, O_RDONLY) : -1;
		void *m = fd < 0 ? MAP_FAILED : mmap(NULL, 65536, PROT_READ, MAP_PRIVATE, fd, 0);

		if (m == MAP_FAILED) {
			fprintf(stderr, "labels_demo: cannot map %s\n", path ? path : "(unset)");
			exit(1);
		}
		*slot = m;
	} else if (strcmp(mode, "churn") == 0) {
		/* Valid layout, labels changing as fast as it can. */
		char v[16];

		for (int i = 0; i < 1000; i++) {
			snprintf(v, sizeof(v), "%d", i);
			fr_labels_set("churn", v);
		}
	}
}

static int hostile(const char *mode, int seconds)
{
	struct fr_labels_registry_abi *r = registry();

	if (!r) {
		fprintf(stderr, "labels_demo: no registry: %s\n", dlerror());
		return 1;
	}
	stop_at = now_ns(CLOCK_MONOTONIC) + (int64_t)seconds * 1000000000;
	fr_labels_set("victim", mode);
	printf("ready\n");
	fflush(stdout);
	for (uint64_t round = 1; now_ns(CLOCK_MONOTONIC) < stop_at; round++) {
		scribble(r, mode, round);
		fr_demo_spin(1000000);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "split") == 0)
		return split(atoi(argv[2]));
	if (argc == 3 && strcmp(argv[1], "slots") == 0)
		return slots(atoi(argv[2]));
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "threads") == 0)
		return many_threads(atoi(argv[2]), atoi(argv[3]),
				    argc == 5 && strcmp(argv[4], "off") == 0);
	if (argc == 4 && strcmp(argv[1], "hostile") == 0)
		return hostile(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: labels_demo split|slots SECONDS | threads N SECONDS [off] | "
			"hostile MODE SECONDS\n");
	return 2;
}
