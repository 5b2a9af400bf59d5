/* perf_event sources against the running kernel, through recorder/perf.h
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
 *   perf_events hardware  cycles, instructions and a raw event either
 *                         sample or fail with the message users are told
 *                         to expect on machines without a PMU (passes
 *                         either way; the message is checked).
 *   perf_events pmu       hardware sampling proper; skipped (77) without a
 *                         PMU.
 *   perf_events retune    fr_perf_set_hz on a frequency-mode (page-faults)
 *                         and a fixed-period (cpu) source: samples drained
 *                         afterwards carry the new rate; page-fault weights
 *                         are the kernel's periods, cpu weights 1e9/hz.
 *   perf_events sideband  the side-band source reports the FORK, exec
 *                         COMM, MMAP2 (with the file's build id) and EXIT
 *                         of a child running /bin/true, and no samples.
 *
 * Exit 0 pass, 1 fail, 77 skip (not root, no perf events, no PMU, no
 * tracefs), with the reason on stderr. Built with frame pointers and
 * without inlining, exporting its symbols so dladdr1() gives the size of
 * fr_test_block_here. */
#include "recorder/perf.h"

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
#include "core/query/symbols.h"
#include "tests/unit/check.h"

#define SKIP 77
#define NS_PER_MS 1000000LL
#define NS_PER_S 1000000000LL

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static int64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static uint32_t gettid_u32(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Drains `p` whenever one of its rings wakes us, for `ms` milliseconds. */
static void drain_for(struct fr_perf *p, const struct fr_perf_handler *h, int ms)
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

/* ---- offcpu ------------------------------------------------------------ */

void fr_test_block_here(long ns);
long fr_test_sleep(long ns);

/* The blocking call. Through glibc's syscall(), a hand-written leaf that
 * keeps the caller's frame pointer, and from a function of its own: the
 * kernel's user stack walk starts at the innermost frame pointer, so the
 * frame it reports first is this function's return into
 * fr_test_block_here, whatever libc was built with. */
__attribute__((noinline)) long fr_test_sleep(long ns)
{
	struct timespec ts = {.tv_sec = ns / NS_PER_S, .tv_nsec = ns % NS_PER_S};
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
	uint64_t lo, hi;         /* [fr_test_block_here, + its size) */
	uint32_t tid;            /* the blocking thread */
	int64_t start_real;      /* bounds for sample times */
	uint64_t in_fn_ns;       /* weights of its samples in fr_test_block_here */
	uint64_t in_fn_samples;
	uint64_t tid_samples;    /* all its samples */
	uint64_t samples, lost, bad;
	int64_t truth_ns;        /* measured around the blocking calls */
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
	    s->weight > 3600 * (uint64_t)NS_PER_S || s->nr_frames > FR_MAX_FRAMES ||
	    s->nr_kernel > s->nr_frames || s->time_ns < off.start_real - 5 * NS_PER_S ||
	    s->time_ns > real_ns() + NS_PER_S) {
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
static void offcpu_round(const struct offcpu_round *r, uint64_t lo, uint64_t hi)
{
	const struct fr_perf_config cfg = {.event = FR_EVENT_OFFCPU, .hz = 0};
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
		CHECK(error > -10 && error < 10,
		      "%s: off-CPU time in fr_test_block_here %.1f ms, truth %.1f ms (%+.1f%%)",
		      r->name, measured, truth, error);
	}
}

static int test_offcpu(void)
{
	static const struct offcpu_round rounds[] = {
		{"long blocks", 20, 50 * NS_PER_MS, 20000},
		{"short blocks", 2000, NS_PER_MS / 2, 700},
	};
	const struct fr_perf_config cfg = {.event = FR_EVENT_OFFCPU, .hz = 0};
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

/* ---- hardware ------------------------------------------------------------ */

struct hw_result {
	uint32_t event, tid, hz;
	uint64_t samples, mine, weight, bad;
};

static struct hw_result hw;

static void on_hw(void *arg, const struct fr_sample *s)
{
	(void)arg;
	if (s->event != hw.event || s->rate_hz != hw.hz || s->weight == 0) {
		hw.bad++;
		return;
	}
	hw.samples++;
	if (s->tid == hw.tid) {
		hw.mine++;
		hw.weight += s->weight;
	}
}

static volatile uint64_t spin_sink;

static void spin_ms(int ms)
{
	int64_t end = mono_ns() + ms * NS_PER_MS;
	uint64_t x = 1;

	while (mono_ns() < end)
		for (int i = 0; i < 10000; i++)
			x = x * 6364136223846793005ull + 1442695040888963407ull;
	spin_sink += x;
}

/* Samples `event` while this thread spins. Returns 0 when it opened (the
 * checks then counted), -errno with `err` set when it did not. */
static int sample_hardware(uint32_t event, char *err, size_t errlen)
{
	const struct fr_perf_config cfg = {.event = event, .hz = 1000};
	const struct fr_perf_handler h = {.sample = on_hw};
	struct fr_perf *p;
	char name[FR_EVENT_NAME_MAX];
	int ret = fr_perf_open(&p, &cfg, err, errlen);

	if (ret < 0)
		return ret;
	memset(&hw, 0, sizeof(hw));
	hw.event = event;
	hw.hz = cfg.hz;
	hw.tid = gettid_u32();
	fr_perf_enable(p, 1);
	spin_ms(400);
	fr_perf_drain(p, &h, fr_perf_clock_offset());
	fr_perf_close(p);
	fr_event_format(event, name, sizeof(name));
	printf("%s: %" PRIu64 " samples, %" PRIu64 " of the spinning thread (weight %" PRIu64
	       ")\n", name, hw.samples, hw.mine, hw.weight);
	CHECK(hw.bad == 0, "%s: %" PRIu64 " samples with a wrong event, rate or weight", name,
	      hw.bad);
	CHECK(hw.mine >= 40, "%s: %" PRIu64 " samples of a thread spinning 400 ms at 1000 Hz",
	      name, hw.mine);
	return 0;
}

/* A PMU-less machine's answer must be the documented sentence. */
static void check_no_pmu_message(uint32_t event, int ret, const char *err)
{
	char name[FR_EVENT_NAME_MAX], want[256];
	const char *ename = ret == -ENOENT ? "ENOENT" : ret == -EOPNOTSUPP ? "EOPNOTSUPP"
				     : ret == -ENODEV ? "ENODEV" : NULL;

	fr_event_format(event, name, sizeof(name));
	CHECK(ename, "%s: failed with %d (%s), not a missing-PMU errno", name, ret, err);
	if (!ename)
		return;
	snprintf(want, sizeof(want),
		 "%s: hardware counters are not available on this machine (perf_event_open: %s)",
		 name, ename);
	CHECK(strcmp(err, want) == 0, "%s says\n  %s\nwant\n  %s", name, err, want);
	printf("%s: \"%s\"\n", name, err);
}

static int test_hardware(void)
{
	const uint32_t events[] = {FR_EVENT_CYCLES, FR_EVENT_INSTRUCTIONS,
				   FR_EVENT_RAW_BASE | 0x3c};
	char err[512];

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		int ret = sample_hardware(events[i], err, sizeof(err));

		if (ret < 0)
			check_no_pmu_message(events[i], ret, err);
	}
	/* Not a PMU question: the rate is checked before the kernel is asked. */
	{
		const struct fr_perf_config cfg = {.event = FR_EVENT_CYCLES, .hz = 0};
		struct fr_perf *p;
		int ret = fr_perf_open(&p, &cfg, err, sizeof(err));

		CHECK(ret == -EINVAL && strstr(err, "cycles: rate must be"),
		      "cycles at 0 Hz: %d (%s)", ret, err);
		if (ret == 0)
			fr_perf_close(p);
	}
	return failures ? 1 : 0;
}

static int test_pmu(void)
{
	char err[512];
	int ret = sample_hardware(FR_EVENT_CYCLES, err, sizeof(err));

	if (ret < 0) {
		fprintf(stderr, "SKIP: no hardware PMU: %s\n", err);
		return SKIP;
	}
	ret = sample_hardware(FR_EVENT_INSTRUCTIONS, err, sizeof(err));
	CHECK(ret == 0, "cycles opened but instructions did not: %s", err);
	return failures ? 1 : 0;
}

/* ---- retune --------------------------------------------------------------- */

struct rate_result {
	uint32_t event, tid, want_hz;
	uint64_t samples, wrong_rate, mine, idle;
	uint64_t min_weight, max_weight, bad_cpu_weight;
};

static struct rate_result rr;

static void on_rate(void *arg, const struct fr_sample *s)
{
	(void)arg;
	if (s->event != rr.event)
		return;
	rr.samples++;
	if (s->tid == 0)
		rr.idle++;
	if (s->rate_hz != rr.want_hz && rr.wrong_rate++ < 3)
		fprintf(stderr, "sample at rate %u, want %u\n", s->rate_hz, rr.want_hz);
	if (s->event == FR_EVENT_CPU && s->weight != 1000000000ull / rr.want_hz &&
	    !rr.bad_cpu_weight)
		rr.bad_cpu_weight = s->weight;
	if (!rr.min_weight || s->weight < rr.min_weight)
		rr.min_weight = s->weight;
	if (s->weight > rr.max_weight)
		rr.max_weight = s->weight;
	if (s->tid == rr.tid)
		rr.mine++;
}

/* Faults in fresh anonymous memory, one per page, for `ms`. */
static void fault_ms(int ms)
{
	const size_t len = 8 << 20;
	int64_t end = mono_ns() + ms * NS_PER_MS;
	long page = sysconf(_SC_PAGESIZE);

	while (mono_ns() < end) {
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);

		if (m == MAP_FAILED)
			return;
		madvise(m, len, MADV_NOHUGEPAGE);
		for (size_t at = 0; at < len; at += (size_t)page)
			m[at] = 1;
		munmap(m, len);
	}
}

static long max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	long rate = 0;

	if (f) {
		if (fscanf(f, "%ld", &rate) != 1)
			rate = 0;
		fclose(f);
	}
	return rate;
}

static void reset_rate_result(uint32_t hz)
{
	rr.samples = rr.wrong_rate = rr.mine = rr.idle = 0;
	rr.min_weight = rr.max_weight = rr.bad_cpu_weight = 0;
	rr.want_hz = hz;
}

/* One phase at `hz`: what the previous rate left in the rings is drained
 * (and must carry that rate) before the change; then this thread works,
 * draining as it goes, until it has a few samples of its own. Every sample
 * drained after the change must carry `hz`. */
static void rate_phase(struct fr_perf *p, const struct fr_perf_handler *h, uint32_t hz,
		       const char *what)
{
	int64_t start = mono_ns();

	if (hz != fr_perf_hz(p)) {
		int ret;

		fr_perf_drain(p, h, fr_perf_clock_offset());
		CHECK(rr.wrong_rate == 0, "%s: %" PRIu64 " samples drained before the change "
		      "to %u Hz do not carry %u Hz", what, rr.wrong_rate, hz, rr.want_hz);
		ret = fr_perf_set_hz(p, hz);
		CHECK(ret == 0, "%s: fr_perf_set_hz(%u): %s", what, hz, strerror(-ret));
		CHECK(fr_perf_hz(p) == hz, "%s: fr_perf_hz %u after set_hz(%u)", what,
		      fr_perf_hz(p), hz);
	}
	reset_rate_result(hz);
	/* Frequency mode adapts its period from what it saw and may overshoot
	 * for a while: wait for samples rather than assume a number. */
	while (rr.mine < 2 && mono_ns() - start < 10 * NS_PER_S) {
		if (rr.event == FR_EVENT_PAGE_FAULTS)
			fault_ms(100);
		else
			spin_ms(100);
		fr_perf_drain(p, h, fr_perf_clock_offset());
	}
	printf("%s at %u Hz: %" PRIu64 " samples (%" PRIu64 " of this thread) in %.1f s, "
	       "weights %" PRIu64 "..%" PRIu64 "\n", what, hz, rr.samples, rr.mine,
	       (mono_ns() - start) / 1e9, rr.min_weight, rr.max_weight);
	CHECK(rr.mine >= 2, "%s at %u Hz: %" PRIu64 " samples of the working thread in 10 s", what,
	      hz, rr.mine);
	CHECK(rr.wrong_rate == 0, "%s at %u Hz: %" PRIu64 " of %" PRIu64 " samples at another rate",
	      what, hz, rr.wrong_rate, rr.samples);
	/* cpu-clock fires on idle CPUs too; the idle task is never a sample. */
	CHECK(rr.idle == 0, "%s at %u Hz: %" PRIu64 " samples of the idle task", what, hz,
	      rr.idle);
	if (rr.event == FR_EVENT_CPU)
		CHECK(rr.bad_cpu_weight == 0, "cpu at %u Hz: weight %" PRIu64 ", want %u", hz,
		      rr.bad_cpu_weight, 1000000000u / hz);
}

static int test_retune(void)
{
	const uint32_t events[] = {FR_EVENT_PAGE_FAULTS, FR_EVENT_CPU};
	const struct fr_perf_handler h = {.sample = on_rate};

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		/* Rates high enough that samples come less than two ticks
		 * apart: then the kernel adapts a frequency-mode period at each
		 * sample, not only from the tick, which misjudges it after idle
		 * (seconds between samples on some virtual machines). */
		const struct fr_perf_config cfg = {.event = events[i], .hz = 500};
		struct fr_perf *p;
		char err[512], name[FR_EVENT_NAME_MAX];
		int ret = fr_perf_open(&p, &cfg, err, sizeof(err));

		if (ret < 0) {
			fprintf(stderr, "FAIL: %s\n", err);
			return 1;
		}
		fr_event_format(events[i], name, sizeof(name));
		CHECK(fr_perf_hz(p) == 500, "fr_perf_hz %u after opening at 500", fr_perf_hz(p));
		rr.event = events[i];
		rr.tid = gettid_u32();
		reset_rate_result(500);
		fr_perf_enable(p, 1);
		rate_phase(p, &h, 500, name);
		if (events[i] == FR_EVENT_PAGE_FAULTS)
			/* The weight is the kernel's period, not 1e9/hz: a fresh
			 * frequency-mode event starts at period 1 and adapts. */
			CHECK(rr.min_weight == 1 && rr.max_weight > 1,
			      "page-faults weights %" PRIu64 "..%" PRIu64 ", want the kernel's "
			      "periods from 1 up", rr.min_weight, rr.max_weight);
		rate_phase(p, &h, 250, name);
		rate_phase(p, &h, 1000, name);
		CHECK(fr_perf_set_hz(p, 0) == -EINVAL, "%s: set_hz(0) accepted", name);
		if (events[i] == FR_EVENT_PAGE_FAULTS && max_sample_rate() < 999999) {
			/* Refused by the kernel: no CPU may keep the new rate. */
			ret = fr_perf_set_hz(p, 999999);
			CHECK(ret == -EINVAL, "%s: set_hz above perf_event_max_sample_rate: %d",
			      name, ret);
		}
		CHECK(fr_perf_hz(p) == 1000, "%s: a refused set_hz changed the rate to %u", name,
		      fr_perf_hz(p));
		fr_perf_close(p);
	}
	return failures ? 1 : 0;
}

/* ---- side band ---------------------------------------------------------- */

struct sb_result {
	uint32_t child;
	char exe[4096];
	int fork, exec_comm, mmap_exe, exit;
	int seq, fork_at, exec_at, exit_at; /* delivery order */
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

static void sb_comm(void *arg, uint32_t pid, uint32_t tid, const char *comm, int exec)
{
	(void)arg;
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

static int test_sideband(void)
{
	const struct fr_perf_handler h = {.sample = sb_sample, .comm = sb_comm, .mmap = sb_mmap,
					  .fork = sb_fork, .exit = sb_exit};
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
	printf("side band for child %u: fork %d, exec comm %d, mmap %s %d, exit %d, samples %"
	       PRIu64 "\n", sb.child, sb.fork, sb.exec_comm, sb.exe, sb.mmap_exe, sb.exit,
	       sb.samples);
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
		{"offcpu", test_offcpu},     {"hardware", test_hardware}, {"pmu", test_pmu},
		{"retune", test_retune},     {"sideband", test_sideband},
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s offcpu|hardware|pmu|retune|sideband\n", argv[0]);
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
