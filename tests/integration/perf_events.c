/* perf_event sources against the running kernel, through recorder/sampling/perf.h
 * alone (no daemon): each part is its own meson test.
 *
 *   perf_events offcpu    a thread blocks for a known time in
 *                         fr_test_block_here() (20 x 50 ms, then 2000 x
 *                         0.5 ms), moved from CPU to CPU while it sleeps;
 *                         the offcpu samples whose stacks hold that
 *                         function must add up to the time measured around
 *                         the blocking calls (10%), one sample a block.
 *                         Without tracefs mounted, the source mounts it (in
 *                         a private mount namespace of this test).
 *   perf_events hardware  cycles, instructions, a raw event and one with
 *                         the full config, config1 and config2 either
 *                         sample or fail with the message users are told
 *                         to expect on machines without a PMU (passes
 *                         either way; the message is checked).
 *   perf_events pmu       hardware sampling proper; 36 cycles sources at
 *                         once, more than any PMU has counters: some are
 *                         multiplexed, say so and scale their samples, so
 *                         each counts this spinning thread's cycles within
 *                         a factor of two of the median; each reports the
 *                         precise_ip it got. Skipped (77) without a PMU.
 *   perf_events retune    fr_perf_set_hz on a frequency-mode (page-faults)
 *                         and a fixed-period (cpu) source: samples drained
 *                         afterwards carry the new rate; page-fault weights
 *                         are the kernel's periods, cpu weights 1e9/hz.
 *   perf_events period    period mode on software events: page-faults
 *                         every fault, then (fr_perf_set_period) every 64th,
 *                         each sample weighing exactly the period in force
 *                         at rate 0, this thread's samples accounting for
 *                         the pages it faulted in; cpu every 2 ms weighing
 *                         2 ms at rate 0; the enabled and running times read
 *                         at each drain (equal: software events are never
 *                         multiplexed, nothing scaled); offcpu refuses a
 *                         period, frequency mode refuses set_period.
 *   perf_events sideband  the side-band source reports the FORK, exec
 *                         COMM, MMAP2 (with the file's build id) and EXIT
 *                         of a child running /bin/true, and no samples.
 *
 * Exit 0 pass, 1 fail, 77 skip (not root, no perf events, no PMU, no
 * tracefs), with the reason on stderr. Built with frame pointers and
 * without inlining, exporting its symbols so dladdr1() gives the size of
 * fr_test_block_here. The offcpu part is in perf_offcpu.c, the hardware,
 * pmu and retune parts in perf_hardware.c, the period part in
 * perf_period.c. */
#include "tests/integration/perf_test.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/store/sample.h"
#include "core/symbols/symbols.h"
#include "core/util/time.h"

int failures;

int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * FR_NS_PER_S + ts.tv_nsec;
}

int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * FR_NS_PER_S + ts.tv_nsec;
}

uint32_t gettid_u32(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Drains `p` whenever one of its rings wakes us, for `ms` milliseconds. */
void drain_for(struct fr_perf *p, const struct fr_perf_handler *h, int ms)
{
	unsigned n = fr_perf_nfds(p);
	struct pollfd pfds[1024];
	int64_t end = mono_ns() + ms * NS_PER_MS;

	if (n > 1024)
		n = 1024;
	for (unsigned i = 0; i < n; i++)
		pfds[i] = (struct pollfd){.fd = fr_perf_fd(p, i), .events = POLLIN};
	while (mono_ns() < end) {
		poll(pfds, n, 20);
		fr_perf_drain(p, h, fr_perf_clock_offset());
	}
	fr_perf_drain(p, h, fr_perf_clock_offset());
}

static volatile uint64_t spin_sink;

void spin_ms(int ms)
{
	int64_t end = mono_ns() + ms * NS_PER_MS;
	uint64_t x = 1;

	while (mono_ns() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	spin_sink += x;
}

/* ---- side band ---------------------------------------------------------- */

struct sb_result {
	uint32_t child;
	char exe[4096];
	int fork, exec_comm, mmap_exe, exit;
	int seq, fork_at, exec_at, exit_at;    /* delivery order */
	uint8_t bid[FR_BUILD_ID_MAX], bid_len; /* of the executable's MMAP2 */
	uint64_t samples;
};

static struct sb_result sb;

static void sb_sample(void *arg, const struct fr_sample *s)
{
	(void)arg;
	(void)s;
	sb.samples++;
}

static void sb_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec,
		    int64_t time_ns)
{
	(void)arg;
	(void)time_ns;
	if (pid == sb.child && tid == sb.child && exec && strcmp(comm, "true") == 0) {
		sb.exec_comm++;
		sb.exec_at = ++sb.seq;
	}
}

static void sb_mmap(void *arg, uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
		    uint32_t prot, const char *path, const uint8_t *build_id, uint8_t build_id_len)
{
	(void)arg;
	(void)start;
	(void)len;
	(void)pgoff;
	if (pid == sb.child && (prot & PROT_EXEC) && strcmp(path, sb.exe) == 0) {
		sb.mmap_exe++;
		if (build_id && build_id_len <= sizeof(sb.bid)) {
			memcpy(sb.bid, build_id, build_id_len);
			sb.bid_len = build_id_len;
		}
	}
}

static void sb_fork(void *arg, uint32_t pid, uint32_t ppid, uint32_t tid, uint32_t ptid,
		    int64_t time_ns)
{
	(void)arg;
	(void)ptid;
	(void)time_ns;
	if (pid == sb.child && tid == sb.child && ppid == (uint32_t)getpid()) {
		sb.fork++;
		sb.fork_at = ++sb.seq;
	}
}

static void sb_exit(void *arg, uint32_t pid, uint32_t tid, int64_t time_ns)
{
	(void)arg;
	(void)time_ns;
	if (pid == sb.child && tid == sb.child) {
		sb.exit++;
		sb.exit_at = ++sb.seq;
	}
}

/* Runs this thread on `cpu` only (best effort: a missing CPU leaves it). */
static void pin_cpu(unsigned cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
}

int test_sideband(void)
{
	const struct fr_perf_handler h = {.sample = sb_sample,
					  .comm = sb_comm,
					  .mmap = sb_mmap,
					  .fork = sb_fork,
					  .exit = sb_exit};
	struct fr_perf *p;
	char err[512];
	pid_t child;
	int status, ret;

	if (!realpath("/bin/true", sb.exe)) {
		fprintf(stderr, "SKIP: no /bin/true: %s\n", strerror(errno));
		return SKIP;
	}
	ret = fr_perf_open_sideband(&p, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "FAIL: %s\n", err);
		return 1;
	}
	CHECK(fr_perf_nfds(p) >= 1, "side band on %u CPUs", fr_perf_nfds(p));
	fr_perf_enable(p, 1);
	/* The parent forks on the last CPU and the child execs on the first,
	 * so a drain that read CPU after CPU would see the exec before the
	 * fork; records must come in time order whatever their CPU. */
	pin_cpu(fr_perf_nfds(p) - 1);
	child = fork();
	if (child == 0) {
		pin_cpu(0);
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	CHECK(child > 0, "fork: %s", strerror(errno));
	sb.child = (uint32_t)child;
	if (child > 0)
		waitpid(child, &status, 0);
	spin_ms(50); /* samples a dummy event must not produce */
	fr_perf_drain(p, &h, fr_perf_clock_offset());
	fr_perf_close(p);
	printf("side band for child %u: fork %d, exec comm %d, mmap %s %d, exit %d, samples %" PRIu64
	       "\n",
	       sb.child, sb.fork, sb.exec_comm, sb.exe, sb.mmap_exe, sb.exit, sb.samples);
	CHECK(sb.fork == 1, "%d FORK records for the child", sb.fork);
	CHECK(sb.exec_comm == 1, "%d exec COMM \"true\" records for the child", sb.exec_comm);
	CHECK(sb.mmap_exe >= 1, "no executable MMAP2 of %s for the child", sb.exe);
	CHECK(sb.exit == 1, "%d EXIT records for the child", sb.exit);
	CHECK(sb.samples == 0, "the side band delivered %" PRIu64 " samples", sb.samples);
	CHECK(sb.fork_at < sb.exec_at && sb.exec_at < sb.exit_at,
	      "records out of time order: fork #%d, exec #%d, exit #%d", sb.fork_at, sb.exec_at,
	      sb.exit_at);
	{
		/* Build ids come with MMAP2 since Linux 5.12; before, the
		 * source opens without them and the tracker reads the file. */
		uint8_t file_bid[FR_BUILD_ID_MAX];
		int n = fr_elf_build_id(sb.exe, file_bid, sizeof(file_bid));

		if (sb.bid_len == 0)
			printf("note: the kernel gave no build id with MMAP2\n");
		else if (n > 0)
			CHECK(sb.bid_len == n && memcmp(sb.bid, file_bid, (size_t)n) == 0,
			      "MMAP2 build id of %s (%u bytes) differs from the file's (%d bytes)",
			      sb.exe, sb.bid_len, n);
		printf("build id of %s: %u bytes from the kernel, %d in the file\n", sb.exe,
		       sb.bid_len, n);
	}
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(void);
	} parts[] = {
		{"offcpu", test_offcpu}, {"hardware", test_hardware}, {"pmu", test_pmu},
		{"retune", test_retune}, {"sideband", test_sideband}, {"period", test_period},
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s offcpu|hardware|pmu|retune|sideband|period\n", argv[0]);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "SKIP: system-wide perf events need root\n");
		return SKIP;
	}
	if (access("/proc/sys/kernel/perf_event_paranoid", F_OK) < 0) {
		fprintf(stderr, "SKIP: this kernel has no perf events\n");
		return SKIP;
	}
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		if (strcmp(argv[1], parts[i].name) == 0)
			return parts[i].fn();
	fprintf(stderr, "unknown part %s\n", argv[1]);
	return 2;
}
