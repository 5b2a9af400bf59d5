/* libflightrec: allocation sampling (lib/flightrec/alloc_abi.h). A process
 * that loads the library (linked, or LD_PRELOAD) has its malloc family
 * interposed here: each call goes to the next allocator in the symbol
 * search order (the C library's, or a jemalloc or tcmalloc preloaded after
 * this library), found with dlsym(RTLD_NEXT), and counts its bytes down
 * from an exponentially distributed interval. The allocation that takes
 * the count to zero or below is sampled: its stack and labels go into the
 * process's ring (alloc_ring.c) and its address into the tables
 * (alloc_addrs.c), so that its free writes a FREE record.
 *
 * The fast path is a subtraction from a thread-local counter: no lock, no
 * system call, no allocation. free() asks a byte of a filter. The
 * library's own allocations (pthread_getattr_np's, dlsym's) run with a
 * thread-local guard set and are never sampled, so nothing recurses.
 *
 * dlsym may allocate before the next allocator is known: those requests
 * are served from a static bootstrap arena, whose blocks are never freed
 * (their frees are recognized and ignored).
 *
 * FLIGHTREC_ALLOC=off: no ring, nothing sampled (state OFF);
 * FLIGHTREC_ALLOC_MEAN: the mean interval in bytes; FLIGHTREC_ALLOC_RING:
 * the ring's bytes of records. Any failure to make the ring leaves the
 * process running untouched (state FAILED).
 */
#include "flightrec/alloc_int.h"

#include <dlfcn.h>
#include <malloc.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define LIKELY(x) __builtin_expect(!!(x), 1)
#define UNLIKELY(x) __builtin_expect(!!(x), 0)

API struct fr_alloc_registry_abi fr_alloc_registry = {
	.magic = FR_ALLOC_ABI_MAGIC,
	.version = FR_ALLOC_ABI_VERSION,
	.size = sizeof(struct fr_alloc_registry_abi),
	.ring_fd = -1,
	.state = FR_ALLOC_STATE_STARTING,
};
/* The library's own copy, whatever a program naming the symbol gets (a
 * copy relocation of its own, which the recorder never reads). */
extern struct fr_alloc_registry_abi fr_alloc_reg
	__attribute__((alias("fr_alloc_registry"), visibility("hidden")));

__thread struct fr_alloc_thread fr_alloc_self FR_ALLOC_IE;

/* Sampling is on (the ring made); read on every countdown's end. */
static int sampling;
/* FLIGHTREC_ALLOC_MEAN, or the default. */
static uint64_t env_mean = FR_ALLOC_MEAN_DEFAULT;

/* ---- the next allocator ---- */

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);
static void *(*next_valloc)(size_t);
static void *(*next_pvalloc)(size_t);
static size_t (*next_usable_size)(void *);

/* What dlsym allocates before the next allocator is known. */
#define BOOT_SIZE (64u << 10)
static _Alignas(64) uint8_t boot[BOOT_SIZE];
static size_t boot_used;

static bool in_boot(const void *p)
{
	return (const uint8_t *)p >= boot && (const uint8_t *)p < boot + BOOT_SIZE;
}

/* A zeroed block of `n` bytes aligned to `align` (a power of two, at
 * least 16), its size in the 8 bytes before it; NULL when the arena is
 * spent. */
static void *boot_alloc(size_t n, size_t align)
{
	size_t at = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start;

	if (align < 16)
		align = 16;
	do {
		start = (at + 8 + align - 1) & ~(align - 1);
		if (start > BOOT_SIZE || n > BOOT_SIZE - start)
			return NULL;
	} while (!__atomic_compare_exchange_n(&boot_used, &at, start + n, false, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	memcpy(boot + start - 8, &n, sizeof(n));
	fr_alloc_addrs_pin((uintptr_t)(boot + start));
	return boot + start;
}

static size_t boot_size(const void *p)
{
	size_t n;

	memcpy(&n, (const uint8_t *)p - 8, sizeof(n));
	return n;
}

/* dlsym hands out a data pointer; a function pointer is copied from it. */
#define NEXT(var, name)                              \
	do {                                         \
		void *sym_ = dlsym(RTLD_NEXT, name); \
		memcpy(&(var), &sym_, sizeof(sym_)); \
	} while (0)

/* glibc's own names, for when dlsym cannot name the next allocator. */
extern void *__libc_malloc(size_t) __attribute__((weak));
extern void *__libc_calloc(size_t, size_t) __attribute__((weak));
extern void *__libc_realloc(void *, size_t) __attribute__((weak));
extern void __libc_free(void *) __attribute__((weak));
extern void *__libc_memalign(size_t, size_t) __attribute__((weak));

static int posix_memalign_libc(void **out, size_t align, size_t n)
{
	void *p;

	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

static void *aligned_alloc_libc(size_t align, size_t n)
{
	return __libc_memalign(align, n);
}

/* Looks the next allocator up, once per thread that finds it unknown
 * (concurrent lookups store the same pointers). Returns whether malloc
 * and free are known. */
static bool resolve(void)
{
	struct fr_alloc_thread *t = &fr_alloc_self;

	if (t->resolving)
		return false;
	t->resolving = 1;
	NEXT(next_calloc, "calloc");
	NEXT(next_realloc, "realloc");
	NEXT(next_posix_memalign, "posix_memalign");
	NEXT(next_aligned_alloc, "aligned_alloc");
	NEXT(next_memalign, "memalign");
	NEXT(next_valloc, "valloc");
	NEXT(next_pvalloc, "pvalloc");
	NEXT(next_usable_size, "malloc_usable_size");
	NEXT(next_free, "free");
	NEXT(next_malloc, "malloc");
	if (!next_malloc || !next_free || !next_calloc || !next_realloc) {
		next_calloc = __libc_calloc;
		next_realloc = __libc_realloc;
		next_free = __libc_free;
		next_malloc = __libc_malloc;
	}
	if (!next_posix_memalign && __libc_memalign)
		next_posix_memalign = posix_memalign_libc;
	if (!next_aligned_alloc && __libc_memalign)
		next_aligned_alloc = aligned_alloc_libc;
	if (!next_memalign)
		next_memalign = __libc_memalign;
	t->resolving = 0;
	return next_malloc && next_free && next_calloc && next_realloc;
}

/* ---- the countdown ---- */

static uint64_t next_random(struct fr_alloc_thread *t)
{
	uint64_t x = t->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* ln(x) for x in (0, 1], to a few parts in 1e9: the exponent, then the
 * series of atanh over the mantissa brought near 1 (no libm). */
static double log_unit(double x)
{
	uint64_t b;
	double m, s, s2;
	int e;

	memcpy(&b, &x, sizeof(b));
	e = (int)((b >> 52) & 0x7ff) - 1023;
	b = (b & ((1ull << 52) - 1)) | (1023ull << 52);
	memcpy(&m, &b, sizeof(m));
	if (m > 1.4142135623730951) {
		m *= 0.5;
		e++;
	}
	s = (m - 1) / (m + 1);
	s2 = s * s;
	return e * 0.6931471805599453 +
	       s * (2 + s2 * (2.0 / 3 +
			      s2 * (2.0 / 5 + s2 * (2.0 / 7 + s2 * (2.0 / 9 + s2 * (2.0 / 11))))));
}

/* An interval of mean `mean` bytes, exponentially distributed: -ln(u) *
 * mean for u uniform in (0, 1]. */
static int64_t draw(struct fr_alloc_thread *t, uint64_t mean)
{
	double u = (double)((next_random(t) >> 11) + 1) * 0x1.0p-53;

	return (int64_t)(-log_unit(u) * (double)mean) + 1;
}

/* The recorder's mean when it asked for one within the bounds, else the
 * environment's; written back as mean_in_use. */
static uint64_t current_mean(struct fr_alloc_header_abi *h)
{
	uint64_t m = __atomic_load_n(&h->mean_wanted, __ATOMIC_RELAXED);

	if (m < FR_ALLOC_MEAN_MIN || m > FR_ALLOC_MEAN_MAX)
		m = env_mean;
	if (__atomic_load_n(&h->mean_in_use, __ATOMIC_RELAXED) != m)
		__atomic_store_n(&h->mean_in_use, m, __ATOMIC_RELAXED);
	return m;
}

static void seed(struct fr_alloc_thread *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t->rng = ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^
		 ((uint64_t)(uintptr_t)t * 0x9e3779b97f4a7c15ull) ^ (uint64_t)gettid() << 40;
	if (!t->rng)
		t->rng = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 4; i++)
		next_random(t);
}

/* The countdown of block `p` of `n` bytes reached zero: sample it, draw
 * the next interval. A thread's first end of the countdown only starts
 * it (its first interval drawn, and `n` taken from it). */
__attribute__((noinline, cold)) static void *countdown_end(void *p, size_t n)
{
	struct fr_alloc_thread *t = &fr_alloc_self;
	struct fr_alloc_header_abi *h;
	uint64_t mean;

	if (t->in_lib || t->resolving || !p)
		return p;
	if (!__atomic_load_n(&sampling, __ATOMIC_ACQUIRE)) {
		/* Before the constructor, keep ending; once off, never. */
		if (__atomic_load_n(&fr_alloc_reg.state, __ATOMIC_RELAXED) >= FR_ALLOC_STATE_OFF)
			t->countdown = INT64_MAX;
		return p;
	}
	h = fr_alloc_ring_header();
	if (!h)
		return p;
	t->in_lib = 1;
	mean = current_mean(h);
	if (!t->rng) {
		seed(t);
		t->countdown += draw(t, mean);
		if (t->countdown > 0) {
			t->in_lib = 0;
			return p;
		}
	}
	t->countdown = draw(t, mean);
	if (fr_alloc_ring_sample((uintptr_t)p, n, mean) && !fr_alloc_addrs_add((uintptr_t)p))
		__atomic_add_fetch(&h->untracked, 1, __ATOMIC_RELAXED);
	t->in_lib = 0;
	return p;
}

/* Takes `n` bytes from the thread's count; true when the count ended. */
static inline bool count_ends(size_t n)
{
	struct fr_alloc_thread *t = &fr_alloc_self;

	t->allocs++;
	t->countdown -= (int64_t)n;
	return UNLIKELY(t->countdown <= 0);
}

/* Block `p` of `n` bytes was allocated: counted, and sampled when it ends
 * the count. */
static inline void *counted(void *p, size_t n)
{
	return count_ends(n) ? countdown_end(p, n) : p;
}

/* Block `p` is being freed (or moved by realloc): its FREE record when it
 * was sampled, before the allocator can hand the address out again. */
static inline void forget(void *p)
{
	if (UNLIKELY(fr_alloc_addrs_maybe((uintptr_t)p)) && fr_alloc_addrs_take((uintptr_t)p))
		fr_alloc_ring_free((uintptr_t)p);
}

/* ---- the interposed functions ---- */

/* malloc past its fast path: the allocator not known yet, or the count
 * ended (`n` already taken from it). */
__attribute__((noinline)) static void *malloc_slow(size_t n, bool ended)
{
	if (UNLIKELY(!next_malloc) && !resolve())
		return boot_alloc(n, 16);
	if (!ended)
		return counted(next_malloc(n), n);
	return countdown_end(next_malloc(n), n);
}

/* The count is taken before the call, so that the common case ends in a
 * jump to the next allocator: no frame of its own. */
API void *malloc(size_t n)
{
	if (LIKELY(next_malloc) && !count_ends(n))
		return next_malloc(n);
	return malloc_slow(n, next_malloc != NULL);
}

/* free past its fast path: NULL, a bootstrap block, a block that may have
 * been sampled, or the allocator not known yet. */
__attribute__((noinline)) static void free_slow(void *p)
{
	if (!p || in_boot(p))
		return;
	forget(p);
	if (UNLIKELY(!next_free) && !resolve())
		return; /* nothing to hand it to: leaked rather than lost */
	next_free(p);
}

/* One bit of the filter read; the bootstrap blocks' bits are set for
 * good, so that they take the slow path too. */
API void free(void *p)
{
	if (LIKELY(!fr_alloc_addrs_maybe((uintptr_t)p)) && LIKELY(next_free != NULL)) {
		next_free(p);
		return;
	}
	free_slow(p);
}

/* C23's sized frees (glibc 2.39 on): a sampled block freed through them
 * must be reported too. Declared here, for C libraries that lack them. */
void free_sized(void *p, size_t n);
void free_aligned_sized(void *p, size_t align, size_t n);

API void free_sized(void *p, size_t n)
{
	free(p);
}

API void free_aligned_sized(void *p, size_t align, size_t n)
{
	free(p);
}

API void *calloc(size_t k, size_t n)
{
	size_t total;

	if (__builtin_mul_overflow(k, n, &total))
		total = SIZE_MAX;
	if (UNLIKELY(!next_calloc) && !resolve())
		return total == SIZE_MAX ? NULL : boot_alloc(total, 16);
	return counted(next_calloc(k, n), total);
}

API void *realloc(void *p, size_t n)
{
	void *q;

	if (!p)
		return malloc(n);
	if (UNLIKELY(in_boot(p))) {
		q = malloc(n);
		if (q)
			memcpy(q, p, boot_size(p) < n ? boot_size(p) : n);
		return q;
	}
	if (UNLIKELY(!next_realloc) && !resolve())
		return NULL;
	/* A failed realloc leaves `p` live, but its FREE is written: the
	 * recorder loses that one block. */
	forget(p);
	q = next_realloc(p, n);
	return q ? counted(q, n) : NULL;
}

API void *reallocarray(void *p, size_t k, size_t n)
{
	size_t total;

	if (__builtin_mul_overflow(k, n, &total)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, total);
}

API int posix_memalign(void **out, size_t align, size_t n)
{
	int err;

	if (UNLIKELY(!next_posix_memalign) && !resolve()) {
		*out = boot_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	err = next_posix_memalign(out, align, n);
	if (!err)
		counted(*out, n);
	return err;
}

API void *aligned_alloc(size_t align, size_t n)
{
	if (UNLIKELY(!next_aligned_alloc) && !resolve())
		return boot_alloc(n, align);
	return counted(next_aligned_alloc(align, n), n);
}

API void *memalign(size_t align, size_t n)
{
	if (UNLIKELY(!next_memalign) && !resolve())
		return boot_alloc(n, align);
	return counted(next_memalign(align, n), n);
}

API void *valloc(size_t n)
{
	if (UNLIKELY(!next_valloc) && !resolve())
		return boot_alloc(n, 4096);
	return counted(next_valloc(n), n);
}

API void *pvalloc(size_t n)
{
	if (UNLIKELY(!next_pvalloc) && !resolve())
		return boot_alloc(n, 4096);
	return counted(next_pvalloc(n), n);
}

API size_t malloc_usable_size(void *p)
{
	if (!p)
		return 0;
	if (in_boot(p))
		return boot_size(p);
	if (UNLIKELY(!next_usable_size) && !resolve())
		return 0;
	return next_usable_size ? next_usable_size(p) : 0;
}

/* ---- load and fork ---- */

/* The bytes of a variable, or `dflt` when unset or not a number. */
static uint64_t env_bytes(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	errno = 0;
	v = strtoull(s, &end, 10);
	return errno || *end || end == s ? dflt : v;
}

static uint64_t ring_bytes(void)
{
	uint64_t n = env_bytes("FLIGHTREC_ALLOC_RING", FR_ALLOC_RING_DEFAULT);

	if (n < FR_ALLOC_RING_MIN || n > FR_ALLOC_RING_MAX || (n & (n - 1)))
		return FR_ALLOC_RING_DEFAULT;
	return n;
}

static void start(void)
{
	struct fr_alloc_thread *t = &fr_alloc_self;
	int err;

	t->in_lib = 1;
	err = fr_alloc_ring_open(ring_bytes());
	t->in_lib = 0;
	if (err < 0) {
		__atomic_store_n(&fr_alloc_reg.state, FR_ALLOC_STATE_FAILED, __ATOMIC_RELEASE);
		return;
	}
	__atomic_store_n(&sampling, 1, __ATOMIC_RELEASE);
}

static void fork_prepare(void)
{
	fr_alloc_addrs_fork_prepare();
}

static void fork_parent(void)
{
	fr_alloc_addrs_fork_parent();
}

/* The child is a process of its own: its ring, its thread ids, its own
 * random sequence; the parent's sampled blocks are not reported. */
static void fork_child(void)
{
	struct fr_alloc_thread *t = &fr_alloc_self;

	fr_alloc_addrs_fork_child();
	t->tid = 0;
	t->rng = 0;
	if (!__atomic_load_n(&sampling, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&sampling, 0, __ATOMIC_RELAXED);
	fr_alloc_ring_drop_inherited();
	start();
}

/* After the allocator is known (resolve first: the ring's making may
 * allocate). */
__attribute__((constructor)) static void alloc_load(void)
{
	const char *mode = getenv("FLIGHTREC_ALLOC");
	uint64_t mean;

	if (!next_malloc)
		resolve();
	if (mode && !strcmp(mode, "off")) {
		__atomic_store_n(&fr_alloc_reg.state, FR_ALLOC_STATE_OFF, __ATOMIC_RELEASE);
		return;
	}
	mean = env_bytes("FLIGHTREC_ALLOC_MEAN", FR_ALLOC_MEAN_DEFAULT);
	if (mean < FR_ALLOC_MEAN_MIN)
		mean = FR_ALLOC_MEAN_MIN;
	if (mean > FR_ALLOC_MEAN_MAX)
		mean = FR_ALLOC_MEAN_MAX;
	env_mean = mean;
#if !defined(__x86_64__) && !defined(__aarch64__)
	/* A sample's registers are taken on these two only. */
	__atomic_store_n(&fr_alloc_reg.state, FR_ALLOC_STATE_FAILED, __ATOMIC_RELEASE);
	return;
#endif
	if (!next_malloc || !next_free) {
		__atomic_store_n(&fr_alloc_reg.state, FR_ALLOC_STATE_FAILED, __ATOMIC_RELEASE);
		return;
	}
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	start();
}
