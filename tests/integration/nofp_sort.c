/* A program built the way Debian builds its packages (-O2, no frame
 * pointers), for unwind_nofp.sh: its CPU goes to a chain
 *
 *   main -> outer_a -> sort_phase -> qsort (libc) -> ... -> cmp
 *
 * that only CFI unwinding can walk, since neither this program nor libc
 * keeps frame pointers.
 *
 *   nofp_sort SECONDS [vdso|jit]
 *
 * With "vdso" the work is a loop on clock_gettime() instead, whose time
 * is spent in the vDSO (no file: its CFI comes from the kernel's image):
 * main -> outer_a -> clock_loop -> clock_gettime -> [vdso]. With "jit" it
 * is a loop in code this program writes into anonymous memory, as a JIT
 * compiler does: no CFI, and rbp cleared (as code that keeps no frame
 * pointers leaves it), so nothing tells who called it. x86-64 only.
 * Prints its pid first. */
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline, noclone)) static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	/* Some work per comparison, so that cmp is a hot leaf too. */
	for (int i = 0; i < 8; i++) {
		x = x * 2654435761u + 1;
		y = y * 2654435761u + 1;
	}
	return x < y ? -1 : x > y;
}

__attribute__((noinline, noclone)) static void sort_phase(unsigned *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (unsigned)random();
	qsort(v, n, sizeof(*v), cmp);
	sink += v[n / 2];
}

__attribute__((noinline, noclone)) static void clock_loop(void)
{
	struct timespec t;

	for (int i = 0; i < 100000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t);
		sink += t.tv_nsec;
	}
}

/* push %rbp; xor %ebp,%ebp; mov %rdi,%rax; 1: dec %rax; jnz 1b;
 * pop %rbp; ret */
static const unsigned char jit_code[] = {0x55, 0x31, 0xed, 0x48, 0x89, 0xf8, 0x48,
					 0xff, 0xc8, 0x75, 0xfb, 0x5d, 0xc3};
static void (*jit_spin)(unsigned long);

static int jit_init(void)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (page == MAP_FAILED)
		return -1;
	memcpy(page, jit_code, sizeof(jit_code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) < 0)
		return -1;
	jit_spin = (void (*)(unsigned long))(uintptr_t)page;
	return 0;
}

enum { WORK_SORT, WORK_VDSO, WORK_JIT };

__attribute__((noinline, noclone)) static void outer_a(unsigned *v, size_t n, int work)
{
	if (work == WORK_VDSO)
		clock_loop();
	else if (work == WORK_JIT)
		jit_spin(10000000);
	else
		sort_phase(v, n);
	sink++;
}

int main(int argc, char **argv)
{
	struct timespec start, now;
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	int work = argc < 3			  ? WORK_SORT
		   : strcmp(argv[2], "vdso") == 0 ? WORK_VDSO
		   : strcmp(argv[2], "jit") == 0  ? WORK_JIT
						  : WORK_SORT;
	size_t n = 20000;
	unsigned *v = malloc(n * sizeof(*v));

	if (!v)
		return 1;
#if !defined(__x86_64__)
	if (work == WORK_JIT)
		return 77;
#endif
	if (work == WORK_JIT && jit_init() < 0) {
		perror("jit");
		return 1;
	}
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		outer_a(v, n, work);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
		 seconds);
	free(v);
	return 0;
}
