/* The offcpu part of perf_events (perf_events.c says what it checks): a
 * thread blocking for a known time in fr_test_block_here(), moved from CPU
 * to CPU, against the offcpu samples whose stacks hold that function. */
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
#include "recorder/sampling/offcpu.h"

void fr_test_block_here(long ns);
long fr_test_sleep(long ns);

/* The blocking call. Through glibc's syscall(), a hand-written leaf that
 * keeps the caller's frame pointer, and from a function of its own: the
 * kernel's user stack walk starts at the innermost frame pointer, so the
 * frame it reports first is this function's return into
 * fr_test_block_here, whatever libc was built with. */
__attribute__((noinline)) long fr_test_sleep(long ns)
{
	struct timespec ts = {.tv_sec = ns / FR_NS_PER_S, .tv_nsec = ns % FR_NS_PER_S};
	long ret = syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);

	__asm__ volatile("" : "+r"(ret)); /* no tail call */
	return ret;
}

__attribute__((noinline)) void fr_test_block_here(long ns)
{
	long ret = fr_test_sleep(ns);

	__asm__ volatile("" : "+r"(ret));
}

/* One round: `blocks` sleeps of `block_ns` in fr_test_block_here, the
 * blocker moved to the next CPU every `move_us`. */
struct offcpu_round {
	const char *name;
	int blocks;
	long block_ns;
	long move_us;
};

struct offcpu_result {
	uint64_t lo, hi;    /* [fr_test_block_here, + its size) */
	uint32_t tid;	    /* the blocking thread */
	int64_t start_real; /* bounds for sample times */
	uint64_t in_fn_ns;  /* weights of its samples in fr_test_block_here */
	uint64_t in_fn_samples;
	uint64_t tid_samples; /* all its samples */
	uint64_t samples, lost, bad;
	int64_t truth_ns; /* measured around the blocking calls */
	int done, moves;
};

static struct offcpu_result off;
static const struct offcpu_round *round_now;
static pthread_t blocker_thread;

static void *blocker(void *arg)
{
	(void)arg;
	__atomic_store_n(&off.tid, gettid_u32(), __ATOMIC_RELEASE);
	usleep(100000); /* let the tid be seen before the first block */
	for (int i = 0; i < round_now->blocks; i++) {
		int64_t a = mono_ns();

		fr_test_block_here(round_now->block_ns);
		off.truth_ns += mono_ns() - a;
	}
	__atomic_store_n(&off.done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Moves the blocker from CPU to CPU, mostly while it sleeps: it then wakes
 * on a CPU other than the one it left, and the two records of a pair lie
 * in two rings. With short blocks one drain holds many pairs of the same
 * thread spread over the rings, which only a drain in time order pairs
 * right. */
static void *mover(void *arg)
{
	long ncpus = sysconf(_SC_NPROCESSORS_ONLN);

	(void)arg;
	for (long k = 0; ncpus >= 2 && !__atomic_load_n(&off.done, __ATOMIC_ACQUIRE); k++) {
		cpu_set_t set;

		usleep((useconds_t)round_now->move_us);
		CPU_ZERO(&set);
		CPU_SET((int)(k % ncpus), &set);
		if (pthread_setaffinity_np(blocker_thread, sizeof(set), &set) == 0)
			off.moves++;
	}
	return NULL;
}

static void on_offcpu(void *arg, const struct fr_sample *s)
{
	(void)arg;
	off.samples++;
	/* tid 0 is the idle task (half of all switch-outs): never a sample. */
	if (s->event != FR_EVENT_OFFCPU || s->rate_hz != 0 || s->weight == 0 || s->tid == 0 ||
	    s->weight > 3600 * (uint64_t)FR_NS_PER_S || s->nr_frames > FR_MAX_FRAMES ||
	    s->nr_kernel > s->nr_frames || s->time_ns < off.start_real - 5 * FR_NS_PER_S ||
	    s->time_ns > real_ns() + FR_NS_PER_S) {
		if (off.bad++ < 5)
			fprintf(stderr,
				"bad offcpu sample: event %u rate %u weight %" PRIu64
				" frames %u/%u time %" PRId64 " tid %u\n",
				s->event, s->rate_hz, s->weight, s->nr_kernel, s->nr_frames,
				s->time_ns, s->tid);
		return;
	}
	if (s->tid != __atomic_load_n(&off.tid, __ATOMIC_ACQUIRE))
		return;
	off.tid_samples++;
	for (unsigned i = s->nr_kernel; i < s->nr_frames; i++) {
		if (s->ips[i] >= off.lo && s->ips[i] < off.hi) {
			off.in_fn_ns += s->weight;
			off.in_fn_samples++;
			return;
		}
	}
}

static void on_lost(void *arg, uint32_t event, uint64_t lost)
{
	(void)arg;
	(void)event;
	off.lost += lost;
}

/* The tracepoint's id file in both places tracefs may be. */
static int tracefs_readable(void)
{
	return access("/sys/kernel/tracing/events/sched/sched_switch/id", R_OK) == 0 ||
	       access("/sys/kernel/debug/tracing/events/sched/sched_switch/id", R_OK) == 0;
}

/* Moves this process into a mount namespace of its own, so mounts made
 * from now on leave the machine's as they are. Must run before any thread
 * starts. */
static int private_mounts(void)
{
	if (unshare(CLONE_NEWNS) < 0) {
		fprintf(stderr, "unshare(CLONE_NEWNS): %s\n", strerror(errno));
		return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
		fprintf(stderr, "making / private: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

/* Runs one round against a fresh offcpu source, drained while the blocker
 * runs as the recorder drains (pairs made across drains and CPUs). */
/* The cost counters status shows agree with what the drain handed over:
 * every sample counted once, each from a switch-out and a switch-in seen,
 * evictions among the losses reported. */
static void check_offcpu_stats(const struct fr_perf *p, const struct offcpu_round *r)
{
	struct fr_perf_offcpu_stats st;

	fr_perf_offcpu_stats(p, &st);
	CHECK(st.samples == off.samples,
	      "%s: status counts %" PRIu64 " offcpu samples, the drain handed over %" PRIu64,
	      r->name, st.samples, off.samples);
	CHECK(st.switch_outs >= st.samples && st.switch_ins >= st.samples &&
		      st.switch_outs >= (uint64_t)r->blocks,
	      "%s: %" PRIu64 " switch-outs and %" PRIu64 " switch-ins for %" PRIu64
	      " samples, %d blocks",
	      r->name, st.switch_outs, st.switch_ins, st.samples, r->blocks);
	CHECK(st.capacity == FR_OFFCPU_ENTRIES && st.waiting <= st.capacity &&
		      st.evicted <= off.lost,
	      "%s: table %u of %u, %" PRIu64 " evicted, %" PRIu64 " lost", r->name, st.waiting,
	      st.capacity, st.evicted, off.lost);
}

static void offcpu_round(const struct offcpu_round *r, uint64_t lo, uint64_t hi)
{
	const struct fr_perf_config cfg = {.event = FR_EVENT_OFFCPU,
					   .hz = 0,
					   .offcpu_mechanism = FR_PERF_OFFCPU_PERF};
	const struct fr_perf_handler h = {.sample = on_offcpu, .lost = on_lost};
	struct fr_perf *p;
	pthread_t move_thread;
	char err[512];
	int ret;

	memset(&off, 0, sizeof(off));
	off.lo = lo;
	off.hi = hi;
	round_now = r;
	ret = fr_perf_open(&p, &cfg, err, sizeof(err));
	CHECK(ret == 0, "opening offcpu: %s", err);
	if (ret < 0)
		return;
	CHECK(fr_perf_set_hz(p, 7) == 0 && fr_perf_hz(p) == 7, "offcpu set_hz does not keep 7");
	off.start_real = real_ns();
	ret = fr_perf_enable(p, 1);
	CHECK(ret == 0, "enable: %s", strerror(-ret));

	ret = pthread_create(&blocker_thread, NULL, blocker, NULL);
	if (ret == 0) {
		ret = pthread_create(&move_thread, NULL, mover, NULL);
		if (ret != 0) {
			__atomic_store_n(&off.done, 1, __ATOMIC_RELEASE);
			pthread_join(blocker_thread, NULL);
		}
	}
	CHECK(ret == 0, "pthread_create: %s", strerror(ret));
	if (ret != 0) {
		fr_perf_close(p);
		return;
	}
	while (!__atomic_load_n(&off.done, __ATOMIC_ACQUIRE))
		drain_for(p, &h, 30);
	pthread_join(blocker_thread, NULL);
	pthread_join(move_thread, NULL);
	/* Its last switch-in is in a ring by now; take it. */
	fr_perf_drain(p, &h, fr_perf_clock_offset());
	fr_perf_enable(p, 0);
	check_offcpu_stats(p, r);
	fr_perf_close(p);

	{
		double measured = off.in_fn_ns / 1e6, truth = off.truth_ns / 1e6;
		double error = truth > 0 ? (measured - truth) / truth * 100 : 100;

		printf("offcpu %s: %.1f ms off-CPU in fr_test_block_here (%" PRIu64
		       " samples of %" PRIu64 " for the thread), truth %.1f ms over %d blocks: "
		       "%+.2f%%; moved between CPUs %d times; %" PRIu64 " offcpu samples in all, "
		       "%" PRIu64 " lost\n",
		       r->name, measured, off.in_fn_samples, off.tid_samples, truth, r->blocks,
		       error, off.moves, off.samples, off.lost);
		CHECK(off.bad == 0, "%s: %" PRIu64 " malformed offcpu samples", r->name, off.bad);
		/* One sample per block, more if it was also preempted in there;
		 * pairs made wrong (a switch-in matched with a switch-out it
		 * does not follow) merge blocks into fewer samples. */
		CHECK(off.in_fn_samples >= (uint64_t)r->blocks * 9 / 10,
		      "%s: only %" PRIu64 " samples in fr_test_block_here for %d blocks", r->name,
		      off.in_fn_samples, r->blocks);
		/* The truth, timed by the thread around each block, also
		 * holds the system call's way in before the switch out and
		 * out after the switch in, on the CPU: up to 100 us a block
		 * on a loaded VM (a suite run measured 79 us over 2,000
		 * blocks of 0.5 ms: -10.15%). */
		CHECK((error > -10 || measured >= truth - r->blocks * 0.1) && error < 10,
		      "%s: off-CPU time in fr_test_block_here %.1f ms, truth %.1f ms (%+.1f%%)",
		      r->name, measured, truth, error);
	}
}

int test_offcpu(void)
{
	static const struct offcpu_round rounds[] = {
		{"long blocks", 20, 50 * NS_PER_MS, 20000},
		{"short blocks", 2000, NS_PER_MS / 2, 700},
	};
	const struct fr_perf_config cfg = {.event = FR_EVENT_OFFCPU,
					   .hz = 0,
					   .offcpu_mechanism = FR_PERF_OFFCPU_PERF};
	struct fr_perf *p = NULL;
	char err[512];
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	uint64_t lo;
	int ret;

	if (!tracefs_readable()) {
		/* A machine that never used tracing: the source mounts tracefs
		 * itself (as perf does). Do it in a mount namespace of our own
		 * so the machine's mounts stay as they are. */
		if (private_mounts() < 0) {
			fprintf(stderr, "SKIP: tracefs is not mounted and no private mount "
					"namespace can be made here\n");
			return SKIP;
		}
		ret = fr_perf_open(&p, &cfg, err, sizeof(err));
		CHECK(ret == 0, "offcpu without tracefs mounted: %d (%s)", ret, err);
		CHECK(tracefs_readable(), "opening offcpu did not mount tracefs");
		if (ret == 0)
			fr_perf_close(p);
		p = NULL;
		printf("offcpu: tracefs was not mounted; opening the source mounted it\n");
	}

	if (!dladdr1((void *)&fr_test_block_here, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym ||
	    sym->st_size == 0) {
		fprintf(stderr, "dladdr1(fr_test_block_here) found no sized symbol: is the test "
				"linked with --export-dynamic?\n");
		return 1;
	}
	lo = (uint64_t)(uintptr_t)info.dli_saddr;
	CHECK(lo == (uint64_t)(uintptr_t)&fr_test_block_here, "dladdr1 gave %#" PRIx64, lo);
	for (size_t i = 0; i < sizeof(rounds) / sizeof(rounds[0]); i++)
		offcpu_round(&rounds[i], lo, lo + sym->st_size);
	return failures ? 1 : 0;
}
