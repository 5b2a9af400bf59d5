/* A program that runs machine code it wrote itself, as a JIT compiler
 * does, for jit_maps.sh.
 *
 *   jit_spin SECONDS
 *
 * Maps an anonymous page, writes a busy loop into it, makes it executable
 * and names it jit_spin in /tmp/perf-PID.map as Node, Java agents and
 * Python do. Prints its pid, spins in the page for SECONDS, prints "spun"
 * and waits to be killed: the map is read while the process runs. x86-64
 * only (exits 77 elsewhere). */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
#if defined(__x86_64__)
	/* mov %rdi,%rax; 1: dec %rax; jnz 1b; ret */
	static const uint8_t code[] = {0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3};
#else
	static const uint8_t code[] = {0};
	return 77;
#endif
	struct timespec start, now;
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	void (*spin)(uint64_t);
	char path[64];
	void *page;
	FILE *f;

	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	memcpy(page, code, sizeof(code));
	if (mprotect(page, 4096, PROT_READ | PROT_EXEC) < 0) {
		perror("mprotect");
		return 1;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		return 1;
	}
	fprintf(f, "%lx %zx jit_spin\n", (unsigned long)(uintptr_t)page, sizeof(code));
	fclose(f);
	spin = (void (*)(uint64_t))(uintptr_t)page;
	printf("pid=%d\n", (int)getpid());
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		spin(10000000);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 <
		 seconds);
	printf("spun\n");
	fflush(stdout);
	pause();
	return 0;
}
