/* A program without any CFI (no .eh_frame, no .debug_frame, no libc: its
 * own _start, which clears rbp as the x86-64 ABI says) and with frame
 * pointers, for fp_nocfi.sh: fp_main -> fp_outer -> fp_inner, a busy loop,
 * for as many seconds as its argument says (whole seconds, default 10).
 * The recorder can walk it only by its frame pointers, and the walk
 * reaches _start. GCC gives the leaf fp_inner no frame of its own, so a
 * sample in it has fp_main as its caller, as `perf record --call-graph fp`
 * shows it too. */
#include <stdint.h>
#include <sys/syscall.h>

uint32_t fp_inner(uint32_t h);
uint32_t fp_outer(uint32_t h);
int fp_main(long argc, char **argv);

static long sys3(long n, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(n), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

static int64_t now_s(void)
{
	struct {
		int64_t s, ns;
	} ts;

	sys3(SYS_clock_gettime, 1 /* CLOCK_MONOTONIC */, (long)&ts, 0);
	return ts.s;
}

__attribute__((noinline)) uint32_t fp_inner(uint32_t h)
{
	for (uint32_t k = 0; k < 100000; k++)
		h = (h * 16777619u) ^ k;
	__asm__ volatile("" : "+r"(h));
	return h;
}

__attribute__((noinline)) uint32_t fp_outer(uint32_t h)
{
	h = fp_inner(h) + 1;
	__asm__ volatile("" : "+r"(h));
	return h;
}

__attribute__((noinline, used)) int fp_main(long argc, char **argv)
{
	int64_t secs = 10, end;
	uint32_t h = 1;

	if (argc > 1) {
		secs = 0;
		for (const char *p = argv[1]; *p >= '0' && *p <= '9'; p++)
			secs = secs * 10 + (*p - '0');
	}
	end = now_s() + secs;
	while (now_s() < end)
		h = fp_outer(h);
	return (int)(h & 1);
}

/* rsp at entry points at argc, then argv. */
__asm__(".globl _start\n"
	".type _start, @function\n"
	"_start:\n"
	"	xor %ebp, %ebp\n"
	"	mov (%rsp), %rdi\n"
	"	lea 8(%rsp), %rsi\n"
	"	and $-16, %rsp\n"
	"	call fp_main\n"
	"	mov %eax, %edi\n"
	"	mov $60, %eax\n"
	"	syscall\n");
