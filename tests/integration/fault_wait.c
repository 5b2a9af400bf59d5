/* A thread that waits in page faults, not in system calls, for
 * offcpu_bpf.sh: it touches PAGES pages of memory registered with
 * userfaultfd, in fr_fault_here(); another thread serves each fault 20 ms
 * after it was raised. At exit it prints "pid=PID blocked_ns=N" (the time
 * measured around the touches). Exits 77 when userfaultfd is not
 * available. Built with frame pointers, so a user stack from the faulting
 * instruction unwinds through fr_fault_here(), which has a frame (a leaf
 * would have none: the fault would be at its first instruction, its
 * caller's frame current). */
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static long uffd;
static char page[PAGE];

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Each fault: 20 ms, then the page. */
static void *server(void *arg)
{
	struct uffd_msg msg;

	(void)arg;
	for (;;) {
		struct pollfd p = {.fd = (int)uffd, .events = POLLIN};
		struct timespec ts = {0, 20000000};
		struct uffdio_copy copy;

		if (poll(&p, 1, -1) < 0 || read((int)uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT)
			continue;
		nanosleep(&ts, NULL);
		copy.dst = msg.arg.pagefault.address & ~(uint64_t)(PAGE - 1);
		copy.src = (uintptr_t)page;
		copy.len = PAGE;
		copy.mode = 0;
		copy.copy = 0;
		ioctl((int)uffd, UFFDIO_COPY, &copy);
	}
	return NULL;
}

static int touched;

__attribute__((noinline)) static void count_touch(void)
{
	touched++;
	__asm__ volatile("" ::: "memory");
}

/* Not a leaf (it calls count_touch), so it has a frame of its own. */
__attribute__((noinline)) void fr_fault_here(volatile char *p);
__attribute__((noinline)) void fr_fault_here(volatile char *p)
{
	(void)*p;
	count_touch();
	__asm__ volatile("" ::: "memory"); /* keep the call from being a tail call */
}

int main(int argc, char **argv)
{
	struct uffdio_api api = {.api = UFFD_API};
	struct uffdio_register reg;
	int pages = argc > 1 ? atoi(argv[1]) : 50;
	int64_t t0, blocked = 0;
	pthread_t t;
	char *area;

	area = mmap(NULL, (size_t)pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (area == MAP_FAILED || uffd < 0 || ioctl((int)uffd, UFFDIO_API, &api) < 0) {
		fprintf(stderr, "fault_wait: userfaultfd is not available\n");
		return 77;
	}
	reg.range.start = (uintptr_t)area;
	reg.range.len = (uint64_t)pages * PAGE;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl((int)uffd, UFFDIO_REGISTER, &reg) < 0) {
		fprintf(stderr, "fault_wait: cannot register the area\n");
		return 77;
	}
	pthread_create(&t, NULL, server, NULL);
	for (int i = 0; i < pages; i++) {
		t0 = now_ns();
		fr_fault_here(area + (size_t)i * PAGE);
		blocked += now_ns() - t0;
	}
	printf("pid=%d blocked_ns=%lld touched=%d\n", (int)getpid(), (long long)blocked, touched);
	return 0;
}
