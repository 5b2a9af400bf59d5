/* A hostile process for offcpu_walk_hang.sh: a thread blocks in read() on
 * a pipe nobody writes, with its frame pointer (and the top of its stack)
 * in memory registered with userfaultfd that nobody serves, so another
 * process reading that memory (process_vm_readv) waits until this one
 * exits. Prints "pid=PID" once the thread is about to block; exits 77
 * when userfaultfd is not available. */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define HALF (64 * 1024)

static int fds[2];
static uint8_t *area;

/* read() with rbp pointing into the served-by-nobody half. */
__attribute__((noinline)) static void read_with_bp(void *bp)
{
	char c;
	long ret;

#if !defined(__x86_64__)
	(void)bp;
	ret = read(fds[0], &c, 1);
#else
	__asm__ volatile("push %%rbp\n\t"
			 "mov %[bp], %%rbp\n\t"
			 "syscall\n\t"
			 "pop %%rbp"
			 : "=a"(ret)
			 : "0"((long)SYS_read), "D"((long)fds[0]), "S"(&c), "d"(1L), [bp] "r"(bp)
			 : "rcx", "r11", "memory");
#endif
	(void)ret;
}

static void *blocker(void *arg)
{
	(void)arg;
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		read_with_bp(area + HALF + 4096);
	return NULL;
}

int main(void)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg;
	pthread_attr_t attr;
	pthread_t t;
	long uffd;

	/* The low half is the thread's stack, the high half (above it, where
	 * a frame-pointer chain climbs) is registered and never served. */
	area = mmap(NULL, 2 * HALF, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (area == MAP_FAILED || uffd < 0 || ioctl((int)uffd, UFFDIO_API, &api) < 0) {
		fprintf(stderr, "uffd_stack: userfaultfd is not available\n");
		return 77;
	}
	reg.range.start = (uintptr_t)(area + HALF);
	reg.range.len = HALF;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl((int)uffd, UFFDIO_REGISTER, &reg) < 0 || pipe(fds) < 0) {
		fprintf(stderr, "uffd_stack: cannot register the area\n");
		return 77;
	}
	pthread_attr_init(&attr);
	pthread_attr_setstack(&attr, area, HALF);
	if (pthread_create(&t, &attr, blocker, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	return 0;
}
