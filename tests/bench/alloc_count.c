/* An LD_PRELOAD library that only counts the malloc family's calls, with
 * the same interposition as libflightrec's (dlsym(RTLD_NEXT), a static
 * arena for what dlsym allocates first, a thread-local count): the cost
 * of interposing at all, beside which alloc_overhead.sh puts
 * libflightrec's sampling. ALLOC_COUNT_PRINT=1 prints the main thread's
 * count at exit. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define API __attribute__((visibility("default")))

static __thread uint64_t calls __attribute__((tls_model("initial-exec")));
static __thread int resolving __attribute__((tls_model("initial-exec")));

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);

static _Alignas(16) uint8_t boot[16384];
static size_t boot_used;

static void *boot_alloc(size_t n)
{
	size_t at = __atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15, __ATOMIC_RELAXED);

	return at + n <= sizeof(boot) ? boot + at : NULL;
}

#define NEXT(var, name)                              \
	do {                                         \
		void *sym_ = dlsym(RTLD_NEXT, name); \
		memcpy(&(var), &sym_, sizeof(sym_)); \
	} while (0)

static int resolve(void)
{
	if (resolving)
		return 0;
	resolving = 1;
	NEXT(next_calloc, "calloc");
	NEXT(next_realloc, "realloc");
	NEXT(next_free, "free");
	NEXT(next_posix_memalign, "posix_memalign");
	NEXT(next_aligned_alloc, "aligned_alloc");
	NEXT(next_memalign, "memalign");
	NEXT(next_malloc, "malloc");
	resolving = 0;
	return next_malloc != NULL;
}

API void *malloc(size_t n)
{
	if (!next_malloc && !resolve())
		return boot_alloc(n);
	calls++;
	return next_malloc(n);
}

API void free(void *p)
{
	if ((uint8_t *)p >= boot && (uint8_t *)p < boot + sizeof(boot))
		return;
	if (!next_free && !resolve())
		return;
	calls++;
	next_free(p);
}

API void *calloc(size_t k, size_t n)
{
	if (!next_calloc && !resolve())
		return boot_alloc(k * n);
	calls++;
	return next_calloc(k, n);
}

API void *realloc(void *p, size_t n)
{
	if (!next_realloc && !resolve())
		return NULL;
	calls++;
	return next_realloc(p, n);
}

API int posix_memalign(void **out, size_t align, size_t n)
{
	if (!next_posix_memalign && !resolve())
		return ENOMEM;
	calls++;
	return next_posix_memalign(out, align, n);
}

API void *aligned_alloc(size_t align, size_t n)
{
	if (!next_aligned_alloc && !resolve())
		return NULL;
	calls++;
	return next_aligned_alloc(align, n);
}

API void *memalign(size_t align, size_t n)
{
	if (!next_memalign && !resolve())
		return NULL;
	calls++;
	return next_memalign(align, n);
}

__attribute__((destructor)) static void report(void)
{
	const char *v = getenv("ALLOC_COUNT_PRINT");

	if (v && *v == '1')
		fprintf(stderr, "alloc_count: %llu calls on the main thread\n",
			(unsigned long long)calls);
}
