/* libflightrec's allocation sampling (lib/flightrec/alloc_abi.h), in
 * processes that link the library: each case runs in a child of its own,
 * this program executed again with the environment the case needs (the
 * library reads it at load), and reads its own ring as the recorder
 * would (tests/unit/alloc_reader.h). The count of samples against the
 * volume allocated, the records' sizes and means, FREE records for the
 * sampled blocks freed and only those, realloc chains, the aligned
 * allocators, a block freed by another thread, fork, FLIGHTREC_ALLOC=off,
 * a full ring, stack copies bounded by small thread stacks, more live
 * sampled blocks than the address table holds. With the
 * probe (alloc_probe.c, which does not link the library): LD_PRELOAD,
 * exec, C++ new and delete, and a process that never opted in. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flightrec/labels.h"
#include "tests/unit/alloc_reader.h"
#include "tests/unit/check.h"

/* The compiler may drop a malloc whose block is not used. */
#define USE(p) __asm__ volatile("" : : "r"(p) : "memory")

/* A case whose ring a recorder on the machine claimed before it could:
 * run again (a new process, a new ring). */
#define BUSY 75
#define TRIES 5
static int busy;

#define MAX_RECS (1u << 18)
static struct rd_rec recs[MAX_RECS];
static struct rd rd;

/* A set of addresses (the sampled blocks of a case), with a mark each. */
#define SET_SIZE (1u << 14)
static struct {
	uint64_t addr;
	int mark;
} set[SET_SIZE];

static int *set_find(uint64_t addr, int add)
{
	uint32_t i = (uint32_t)((addr >> 4) * 0x9e3779b97f4a7c15ull >> 50) & (SET_SIZE - 1);

	while (set[i].addr && set[i].addr != addr)
		i = (i + 1) & (SET_SIZE - 1);
	if (!set[i].addr) {
		if (!add)
			return NULL;
		set[i].addr = addr;
	}
	return &set[i].mark;
}

static void *map(size_t n)
{
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	return p;
}

static uint32_t my_tid(void)
{
	return (uint32_t)gettid();
}

/* 64 MiB in 64-byte blocks at a mean of 64 KiB: 1,024 samples expected.
 * Between samples the counts are exponential intervals, so the count is
 * near Poisson: sigma 32; 6 sigma (a false failure far below 1e-6). Then
 * the even blocks freed, then the odd: a FREE for each sampled block, at
 * the right time, and for no other of them. */
static void case_volume(void)
{
	const size_t n = (64u << 20) / 64;
	void **blk = map(n * sizeof(void *));
	size_t got = 0, sampled = 0, frees = 0, even_sampled = 0;

	for (size_t i = 0; i < n; i++) {
		blk[i] = malloc(64);
		if (i % 65536 == 65535 || i == n - 1) {
			size_t k = rd_drain(&rd, recs, MAX_RECS);

			for (size_t j = 0; j < k; j++) {
				if (recs[j].kind != FR_ALLOC_REC_ALLOC || recs[j].size != 64)
					continue;
				got++;
				CHECK(recs[j].mean == 65536, "mean %llu",
				      (unsigned long long)recs[j].mean);
				*set_find(recs[j].addr, 1) = 1;
			}
		}
	}
	CHECK(got >= 1024 - 192 && got <= 1024 + 192, "%zu samples of 64 MiB at mean 64 KiB", got);
	for (size_t i = 0; i < n; i++) {
		int *m = set_find((uintptr_t)blk[i], 0);

		if (m) {
			sampled++;
			if (i % 2 == 0) {
				*m = 2; /* expected to be freed now */
				even_sampled++;
			}
		}
	}
	CHECK(sampled <= got && sampled + 8 >= got, "%zu of %zu samples are the blocks", sampled,
	      got);
	for (size_t i = 0; i < n; i += 2)
		free(blk[i]);
	for (size_t k = rd_drain(&rd, recs, MAX_RECS), j = 0; j < k; j++) {
		int *m = recs[j].kind == FR_ALLOC_REC_FREE ? set_find(recs[j].addr, 0) : NULL;

		if (!m)
			continue;
		CHECK(*m == 2, "FREE of a block not freed (mark %d)", *m);
		*m = 3;
		frees++;
	}
	CHECK(frees == even_sampled, "%zu FREE records for %zu sampled blocks freed", frees,
	      even_sampled);
	for (size_t i = 1; i < n; i += 2)
		free(blk[i]);
	for (size_t k = rd_drain(&rd, recs, MAX_RECS), j = 0; j < k; j++) {
		int *m = recs[j].kind == FR_ALLOC_REC_FREE ? set_find(recs[j].addr, 0) : NULL;

		if (!m)
			continue;
		CHECK(*m == 1, "FREE twice or of a block not freed (mark %d)", *m);
		*m = 3;
		frees++;
	}
	CHECK(frees == sampled, "%zu FREE records for %zu sampled blocks", frees, sampled);
	CHECK(rd.h->untracked == 0 && rd.h->dropped_allocs == 0, "untracked %llu dropped %llu",
	      (unsigned long long)rd.h->untracked, (unsigned long long)rd.h->dropped_allocs);
}

/* A block realloc'd 200 times, growing by 997 bytes each time (about 20
 * MB in all at 64 KiB: some 300 samples): each sampled size is FREEd
 * before the next sampled one, and the last when the block is freed. */
static void case_realloc(void)
{
	void *p = malloc(1);
	uint64_t live = 0;
	size_t allocs = 0, frees = 0;

	for (size_t i = 1; i <= 200; i++) {
		p = realloc(p, i * 997 * 100 + 3);
		CHECK(p, "realloc");
	}
	free(p);
	for (size_t k = rd_drain(&rd, recs, MAX_RECS), j = 0; j < k; j++) {
		struct rd_rec *r = &recs[j];

		if (r->kind == FR_ALLOC_REC_ALLOC && r->size % 99700 == 3) {
			CHECK(!live, "sampled size %llu while the last one is live",
			      (unsigned long long)r->size);
			live = r->addr;
			allocs++;
		} else if (r->kind == FR_ALLOC_REC_FREE && live && r->addr == live) {
			live = 0;
			frees++;
		}
	}
	CHECK(allocs > 50 && frees == allocs && !live, "%zu samples of the chain, %zu FREE", allocs,
	      frees);
}

/* The record of the ALLOC of `addr` of `size`, or NULL. */
static struct rd_rec *find_rec(size_t k, uint32_t kind, uint64_t addr, uint64_t size)
{
	for (size_t j = 0; j < k; j++)
		if (recs[j].kind == kind && recs[j].addr == addr &&
		    (kind != FR_ALLOC_REC_ALLOC || recs[j].size == size))
			return &recs[j];
	return NULL;
}

/* Mean 1 byte: every allocation sampled. Each aligned allocator's block,
 * its labels and its stack; then its FREE. */
static void case_aligned(void)
{
	void *p[6] = {0};
	const uint64_t sz[6] = {1001, 2002, 3072, 5005, 6006, 7 * 1001};
	size_t k;

	fr_labels_set("job", "aligned");
	p[0] = memalign(64, sz[0]);
	CHECK(!posix_memalign(&p[1], 128, sz[1]), "posix_memalign");
	p[2] = aligned_alloc(256, sz[2]);
	p[3] = valloc(sz[3]);
	p[4] = pvalloc(sz[4]);
	p[5] = calloc(7, 1001);
	fr_labels_clear();
	k = rd_drain(&rd, recs, MAX_RECS);
	for (int i = 0; i < 6; i++) {
		struct rd_rec *r = find_rec(k, FR_ALLOC_REC_ALLOC, (uintptr_t)p[i], sz[i]);

		CHECK(r, "no sample of allocator %d", i);
		if (!r)
			continue;
		CHECK(r->mean == 1 && r->tid == my_tid(), "mean %llu tid %u",
		      (unsigned long long)r->mean, r->tid);
		CHECK(r->stack_len >= 1024, "stack copy %u", r->stack_len);
		CHECK(r->labels_len > 8 && memmem(r->labels, sizeof(r->labels), "aligned", 7),
		      "labels of allocator %d (%u bytes)", i, r->labels_len);
	}
	for (int i = 0; i < 6; i++)
		free(p[i]);
	k = rd_drain(&rd, recs, MAX_RECS);
	for (int i = 0; i < 6; i++)
		CHECK(find_rec(k, FR_ALLOC_REC_FREE, (uintptr_t)p[i], 0), "no FREE of %d", i);
}

/* Blocks allocated on one thread and freed on another. */
#define HANDED 100
static void *handed[HANDED];
static uint32_t tids[2];

static void *alloc_thread(void *arg)
{
	tids[0] = my_tid();
	for (int i = 0; i < HANDED; i++)
		handed[i] = malloc(4321);
	return arg;
}

static void *free_thread(void *arg)
{
	tids[1] = my_tid();
	for (int i = 0; i < HANDED; i++)
		free(handed[i]);
	return arg;
}

static void case_threads(void)
{
	pthread_t t;
	size_t k, ok = 0;

	pthread_create(&t, NULL, alloc_thread, NULL);
	pthread_join(t, NULL);
	pthread_create(&t, NULL, free_thread, NULL);
	pthread_join(t, NULL);
	k = rd_drain(&rd, recs, MAX_RECS);
	for (int i = 0; i < HANDED; i++) {
		struct rd_rec *a = find_rec(k, FR_ALLOC_REC_ALLOC, (uintptr_t)handed[i], 4321);
		struct rd_rec *f = find_rec(k, FR_ALLOC_REC_FREE, (uintptr_t)handed[i], 0);

		ok += a && f && a->tid == tids[0] && f->tid == tids[1] && f > a;
	}
	CHECK(ok == HANDED, "%zu of %d blocks allocated by %u and freed by %u", ok, HANDED, tids[0],
	      tids[1]);
}

/* A child has a ring of its own; the parent's sampled block freed in the
 * child is not reported anywhere; the child's samples stay in its ring. */
static void case_fork(void)
{
	uint64_t id = rd.reg->ring_id;
	void *x = malloc(6666);
	/* Its address, compared after the free (not the freed pointer). */
	uintptr_t xa = (uintptr_t)x;
	size_t k;
	int st;
	pid_t pid;

	k = rd_drain(&rd, recs, MAX_RECS);
	CHECK(find_rec(k, FR_ALLOC_REC_ALLOC, xa, 6666), "the parent's block sampled");
	pid = fork();
	if (!pid) {
		struct rd c;
		void *y;

		failures = 0;
		CHECK(rd.reg->ring_id != id && rd.reg->ring_id &&
			      rd.reg->state == FR_ALLOC_STATE_ON,
		      "the child's ring id %llx (parent %llx)", (unsigned long long)rd.reg->ring_id,
		      (unsigned long long)id);
		CHECK(rd_ring_fds() == 1, "%d rings open in the child", rd_ring_fds());
		switch (rd_open(&c)) {
		case 0: break;
		case -2: _exit(BUSY);
		default: CHECK(0, "the child's ring"); _exit(1);
		}
		free(x);
		y = malloc(5555);
		k = rd_drain(&c, recs, MAX_RECS);
		CHECK(find_rec(k, FR_ALLOC_REC_ALLOC, (uintptr_t)y, 5555), "the child's sample");
		CHECK(!find_rec(k, FR_ALLOC_REC_FREE, xa, 0), "the parent's block FREEd");
		if (c.h->reader_pid != (uint32_t)getpid())
			_exit(BUSY);
		_exit(failures ? 1 : 0);
	}
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st), "the child died");
	busy = WIFEXITED(st) && WEXITSTATUS(st) == BUSY;
	CHECK(busy || (WIFEXITED(st) && !WEXITSTATUS(st)), "the child failed");
	CHECK(rd.reg->ring_id == id, "the parent's ring changed");
	k = rd_drain(&rd, recs, MAX_RECS);
	for (size_t j = 0; j < k; j++)
		CHECK(recs[j].size != 5555 &&
			      !(recs[j].kind == FR_ALLOC_REC_FREE && recs[j].addr == xa),
		      "the child's record in the parent's ring");
	free(x);
	k = rd_drain(&rd, recs, MAX_RECS);
	CHECK(find_rec(k, FR_ALLOC_REC_FREE, xa, 0), "the parent's FREE");
}

/* A ring of 64 KiB never read: samples dropped and counted, nothing
 * overwritten; once read, room again. */
static void case_full(void)
{
	void *p[2000];
	uint64_t sampled;
	size_t k;

	for (int i = 0; i < 2000; i++)
		p[i] = malloc(100);
	CHECK(rd.h->dropped_allocs > 0, "no drop");
	CHECK(rd.h->head - rd.h->tail <= rd.size, "head %llu beyond tail %llu",
	      (unsigned long long)rd.h->head, (unsigned long long)rd.h->tail);
	sampled = rd.h->sampled;
	k = rd_drain(&rd, recs, MAX_RECS);
	CHECK(k > 0 && k < 2000 && rd.bad == 0, "%zu records, %llu bad", k,
	      (unsigned long long)rd.bad);
	for (int i = 0; i < 2000; i++)
		free(p[i]);
	CHECK(rd.h->sampled == sampled && rd.h->frees > 0, "frees written after the read");
	rd_drain(&rd, recs, MAX_RECS);
	p[0] = malloc(100);
	USE(p[0]);
	CHECK(rd.h->sampled == sampled + 1, "no sample after the read");
	free(p[0]);
}

/* More live sampled blocks than the table holds (2^16 slots filled to
 * three quarters): the rest counted untracked; every tracked one FREEd
 * when freed (the table's deletions keep every probe whole), none of the
 * untracked; then the table is empty and tracks again. */
#define MANY 60000
static void case_untracked(void)
{
	void **p = map(MANY * sizeof(void *));
	size_t allocs = 0, frees = 0;
	uint64_t untracked;

	rd.h->stack_copy_wanted = 1024;
	for (size_t i = 0; i < MANY; i++) {
		p[i] = malloc(40);
		if (i % 1000 == 999) {
			size_t k = rd_drain(&rd, recs, MAX_RECS);

			for (size_t j = 0; j < k; j++)
				allocs += recs[j].kind == FR_ALLOC_REC_ALLOC && recs[j].size == 40;
		}
	}
	for (size_t k = rd_drain(&rd, recs, MAX_RECS), j = 0; j < k; j++)
		allocs += recs[j].kind == FR_ALLOC_REC_ALLOC && recs[j].size == 40;
	untracked = rd.h->untracked;
	CHECK(allocs == MANY && untracked >= MANY - 49152 && untracked <= MANY - 49152 + 64,
	      "%zu samples, %llu untracked", allocs, (unsigned long long)untracked);
	for (size_t i = 0; i < MANY; i++) {
		free(p[i]);
		if (i % 1000 == 999 || i == MANY - 1) {
			size_t k = rd_drain(&rd, recs, MAX_RECS);

			for (size_t j = 0; j < k; j++)
				frees += recs[j].kind == FR_ALLOC_REC_FREE;
		}
	}
	CHECK(frees + untracked >= MANY && frees + untracked <= MANY + 64,
	      "%zu FREE records for %zu samples, %llu untracked", frees, allocs,
	      (unsigned long long)untracked);
	p[0] = malloc(40);
	USE(p[0]);
	CHECK(rd.h->untracked == untracked, "untracked after the table emptied");
	free(p[0]);
	CHECK(rd_drain(&rd, recs, MAX_RECS) >= 2 && rd.bad == 0, "the last block's records");
}

/* Threads on 16 KiB stacks between guard pages: a copy past the stack's
 * end would fault; each sample's copy ends at or before it. */
#define SMALL_THREADS 16
#define SMALL_STACK (16u << 10)
static uintptr_t stack_lo[SMALL_THREADS];

static void *small_thread(void *arg)
{
	size_t i = (size_t)(uintptr_t)arg;

	for (int j = 0; j < 8; j++) {
		void *p = malloc(200 + i);

		USE(p);
		free(p);
	}
	return arg;
}

static void case_stacks(void)
{
	uint8_t *m = map((size_t)SMALL_THREADS * (SMALL_STACK + 4096) + 4096);
	size_t k, seen = 0;

	for (size_t i = 0; i < SMALL_THREADS; i++) {
		uint8_t *lo = m + 4096 + i * (SMALL_STACK + 4096);
		pthread_attr_t a;
		pthread_t t;

		mprotect(lo - 4096, 4096, PROT_NONE);
		mprotect(lo + SMALL_STACK, 4096, PROT_NONE);
		stack_lo[i] = (uintptr_t)lo;
		pthread_attr_init(&a);
		pthread_attr_setstack(&a, lo, SMALL_STACK);
		CHECK(!pthread_create(&t, &a, small_thread, (void *)i), "thread %zu", i);
		pthread_join(t, NULL);
		pthread_attr_destroy(&a);
	}
	k = rd_drain(&rd, recs, MAX_RECS);
	for (size_t j = 0; j < k; j++) {
		struct rd_rec *r = &recs[j];
		size_t i = r->size - 200;

		if (r->kind != FR_ALLOC_REC_ALLOC || r->size < 200 || i >= SMALL_THREADS)
			continue;
		seen++;
		CHECK(r->sp >= stack_lo[i] && r->sp + r->stack_len <= stack_lo[i] + SMALL_STACK,
		      "thread %zu: copy [%llx, +%u) outside [%llx, +%u)", i,
		      (unsigned long long)r->sp, r->stack_len, (unsigned long long)stack_lo[i],
		      SMALL_STACK);
		CHECK(r->stack_len > 0 && r->stack_len < FR_ALLOC_STACK_COPY_DEFAULT,
		      "thread %zu: %u bytes of stack", i, r->stack_len);
	}
	CHECK(seen == SMALL_THREADS * 8, "%zu samples of the small threads", seen);
}

static int run_case(const char *name)
{
	const struct fr_alloc_registry_abi *reg = rd_registry();

	if (!strcmp(name, "off")) {
		void *p = malloc(100);

		CHECK(reg && reg->state == FR_ALLOC_STATE_OFF && reg->ring_fd == -1,
		      "state %u fd %d", reg ? reg->state : 99, reg ? reg->ring_fd : -2);
		CHECK(p && rd_ring_fds() == 0, "a ring while off");
		free(p);
		return failures ? 1 : 0;
	}
	switch (rd_open(&rd)) {
	case 0: break;
	case -2: return BUSY;
	default: fprintf(stderr, "test_alloc: %s: no ring\n", name); return 1;
	}
	rd_drain(&rd, recs, MAX_RECS);
	if (!strcmp(name, "volume"))
		case_volume();
	else if (!strcmp(name, "realloc"))
		case_realloc();
	else if (!strcmp(name, "aligned"))
		case_aligned();
	else if (!strcmp(name, "threads"))
		case_threads();
	else if (!strcmp(name, "fork"))
		case_fork();
	else if (!strcmp(name, "full"))
		case_full();
	else if (!strcmp(name, "stacks"))
		case_stacks();
	else if (!strcmp(name, "untracked"))
		case_untracked();
	else
		return 2;
	/* A recorder that took the ring over read records meant for the
	 * case, or changed its mean: the case is run again. */
	if (busy || __atomic_load_n(&rd.h->reader_pid, __ATOMIC_ACQUIRE) != (uint32_t)getpid())
		return BUSY;
	CHECK(rd.bad == 0, "%llu records broke the ABI", (unsigned long long)rd.bad);
	return failures ? 1 : 0;
}

/* Runs `argv` with `env` added to this process's environment; returns its
 * exit status (-1: killed). */
static int run(char *const argv[], const char *const env[])
{
	pid_t pid = fork();
	int st;

	if (!pid) {
		for (int i = 0; env[i]; i += 2)
			setenv(env[i], env[i + 1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

struct one {
	const char *name;
	const char *env[8];
};

int main(int argc, char **argv)
{
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer's runtime comes first in every process it is in
	 * and takes malloc and free for its own: no library after it sees
	 * them (a program built with it is not one to sample). */
	fprintf(stderr, "SKIP: built with AddressSanitizer, whose malloc comes before the "
			"library's\n");
	return 77;
#endif
	static const struct one cases[] = {
		{"volume", {"FLIGHTREC_ALLOC_MEAN", "65536"}},
		{"realloc", {"FLIGHTREC_ALLOC_MEAN", "65536"}},
		{"aligned", {"FLIGHTREC_ALLOC_MEAN", "1"}},
		{"threads", {"FLIGHTREC_ALLOC_MEAN", "1"}},
		{"fork", {"FLIGHTREC_ALLOC_MEAN", "1"}},
		{"full", {"FLIGHTREC_ALLOC_MEAN", "1", "FLIGHTREC_ALLOC_RING", "65536"}},
		{"stacks", {"FLIGHTREC_ALLOC_MEAN", "1", "FLIGHTREC_ALLOC_RING", "16777216"}},
		{"untracked", {"FLIGHTREC_ALLOC_MEAN", "1", "FLIGHTREC_ALLOC_RING", "67108864"}},
		{"off", {"FLIGHTREC_ALLOC", "off"}},
	};
	char self[4096];
	ssize_t l;

	if (argc == 3 && !strcmp(argv[1], "case"))
		return run_case(argv[2]);
	l = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (l <= 0)
		return 2;
	self[l] = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *av[] = {self, "case", (char *)cases[i].name, NULL};
		int rc = BUSY;

		for (int t = 0; t < TRIES && rc == BUSY; t++)
			rc = run(av, cases[i].env);
		CHECK(rc == 0, "case %s: exit %d", cases[i].name, rc);
	}
	/* The probe, which does not link the library: preloaded (then exec
	 * of itself, C++ new and delete), and never opted in. */
	if (argc == 3) {
		char *pre[] = {argv[1], "preload", NULL};
		char *never[] = {argv[1], "never", NULL};
		const char *env_pre[] = {"LD_PRELOAD", argv[2], "FLIGHTREC_ALLOC_MEAN", "1", NULL};
		const char *env_never[] = {"FLIGHTREC_ALLOC_MEAN", "1", NULL};
		int rc = BUSY;

		for (int t = 0; t < TRIES && rc == BUSY; t++)
			rc = run(pre, env_pre);
		CHECK(rc == 0, "the preloaded probe: exit %d", rc);
		CHECK(run(never, env_never) == 0, "the probe without the library");
	}
	if (failures) {
		fprintf(stderr, "test_alloc: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
