/* The hardware, pmu and retune parts of perf_events (perf_events.c says
 * what each checks): hardware events sampled or refused with the
 * documented message, and sources retuned with fr_perf_set_hz. */
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
#include "core/util/time.h"

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
	printf("%s: %" PRIu64 " samples, %" PRIu64 " of the spinning thread (weight %" PRIu64 ")\n",
	       name, hw.samples, hw.mine, hw.weight);
	CHECK(hw.bad == 0, "%s: %" PRIu64 " samples with a wrong event, rate or weight", name,
	      hw.bad);
	CHECK(hw.mine >= 40, "%s: %" PRIu64 " samples of a thread spinning 400 ms at 1000 Hz", name,
	      hw.mine);
	return 0;
}

/* A PMU-less machine's answer must be the documented sentence. */
static void check_no_pmu_message(uint32_t event, int ret, const char *err)
{
	char name[FR_EVENT_NAME_MAX], want[256];
	const char *ename = ret == -ENOENT	 ? "ENOENT"
			    : ret == -EOPNOTSUPP ? "EOPNOTSUPP"
			    : ret == -ENODEV	 ? "ENODEV"
						 : NULL;

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

int test_hardware(void)
{
	/* A raw event with all three words of the attr. */
	const int64_t full = fr_event_lookup("raw:0x10000003c,config1=0x3f807f8fff,config2=0x1");
	const uint32_t events[] = {FR_EVENT_CYCLES, FR_EVENT_INSTRUCTIONS, FR_EVENT_RAW_BASE | 0x3c,
				   (uint32_t)full};
	char err[512];

	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++) {
		int ret = sample_hardware(events[i], err, sizeof(err));

		if (ret < 0 && events[i] == (uint32_t)full && ret == -EINVAL)
			/* A PMU this config means nothing to. */
			CHECK(strncmp(err, "raw:0x10000003c,config1=0x3f807f8fff,config2=0x1: ",
				      50) == 0,
			      "the full raw event's error does not name it: %s", err);
		else if (ret < 0)
			check_no_pmu_message(events[i], ret, err);
	}
	/* An extended raw id this process never looked up has no config to
	 * open with. */
	{
		const struct fr_perf_config cfg = {.event = FR_EVENT_RAWX_BASE | 0x1234567,
						   .hz = 99};
		struct fr_perf *p;
		int ret = fr_perf_open(&p, &cfg, err, sizeof(err));

		CHECK(ret == -EOPNOTSUPP &&
			      strcmp(err, "raw:id=0x21234567: this event cannot be sampled by this "
					  "version") == 0,
		      "an unknown raw id: %d (%s)", ret, err);
		if (ret == 0)
			fr_perf_close(p);
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

/* ---- multiplexing and precise_ip (a PMU only) ---------------------------- */

#define MUX_SOURCES 36 /* more than any PMU has counters */

static uint64_t mux_weight[MUX_SOURCES];
static uint32_t mux_tid;

static void on_mux(void *arg, const struct fr_sample *s)
{
	if (s->tid == mux_tid)
		mux_weight[(uintptr_t)arg] += s->weight;
}

/* More cycles sources than counters: the kernel multiplexes them, and
 * each must say so and scale its samples, so that every source's total
 * for this spinning thread is about the same (within a factor of two of
 * their median), not a fraction of it. Each says what precise_ip it got. */
static void check_multiplexing(void)
{
	const struct fr_perf_config cfg = {.event = FR_EVENT_CYCLES, .hz = 200};
	struct fr_perf *p[MUX_SOURCES];
	struct fr_perf_handler h[MUX_SOURCES];
	uint64_t sorted[MUX_SOURCES], median;
	unsigned n = 0, multiplexed = 0;
	char err[512];

	mux_tid = gettid_u32();
	for (; n < MUX_SOURCES; n++) {
		if (fr_perf_open(&p[n], &cfg, err, sizeof(err)) < 0)
			break;
		h[n] = (struct fr_perf_handler){.sample = on_mux, .arg = (void *)(uintptr_t)n};
		mux_weight[n] = 0;
		fr_perf_enable(p[n], 1);
	}
	CHECK(n >= 8, "only %u cycles sources opened: %s", n, err);
	for (int round = 0; round < 8; round++) {
		spin_ms(100);
		for (unsigned i = 0; i < n; i++)
			fr_perf_drain(p[i], &h[i], fr_perf_clock_offset());
	}
	for (unsigned i = 0; i < n; i++) {
		struct fr_perf_pmu_stats st;

		fr_perf_pmu_stats(p[i], &st);
		CHECK(st.precise_asked == 3 && st.precise_ip <= 3, "precise_ip %u of %u",
		      st.precise_ip, st.precise_asked);
		CHECK(st.enabled_ns > 0 && st.running_ns <= st.enabled_ns && !st.reads_failed,
		      "source %u: running %" PRIu64 " of %" PRIu64 " ns, %" PRIu64 " failed reads",
		      i, st.running_ns, st.enabled_ns, st.reads_failed);
		if (st.running_ns < st.enabled_ns) {
			multiplexed++;
			CHECK(st.scaled_samples > 0 || mux_weight[i] == 0,
			      "source %u multiplexed (%" PRIu64 " of %" PRIu64 " ns) but nothing "
			      "scaled",
			      i, st.running_ns, st.enabled_ns);
		}
		sorted[i] = mux_weight[i];
		if (i == 0)
			printf("cycles: precise_ip %u; ", st.precise_ip);
	}
	for (unsigned i = 1; i < n; i++)
		for (unsigned j = i; j > 0 && sorted[j] < sorted[j - 1]; j--) {
			uint64_t t = sorted[j];

			sorted[j] = sorted[j - 1];
			sorted[j - 1] = t;
		}
	median = n ? sorted[n / 2] : 0;
	printf("%u sources, %u multiplexed; this thread's cycles %" PRIu64 "..%" PRIu64
	       ", median %" PRIu64 "\n",
	       n, multiplexed, n ? sorted[0] : 0, n ? sorted[n - 1] : 0, median);
	CHECK(multiplexed > 0, "%u cycles sources and none multiplexed", n);
	for (unsigned i = 0; i < n; i++)
		CHECK(median && mux_weight[i] >= median / 2 && mux_weight[i] <= median * 2,
		      "source %u counted %" PRIu64 " cycles of this thread, the median %" PRIu64, i,
		      mux_weight[i], median);
	for (unsigned i = 0; i < n; i++)
		fr_perf_close(p[i]);
}

int test_pmu(void)
{
	char err[512];
	int ret = sample_hardware(FR_EVENT_CYCLES, err, sizeof(err));

	if (ret < 0) {
		fprintf(stderr, "SKIP: no hardware PMU: %s\n", err);
		return SKIP;
	}
	ret = sample_hardware(FR_EVENT_INSTRUCTIONS, err, sizeof(err));
	CHECK(ret == 0, "cycles opened but instructions did not: %s", err);
	check_multiplexing();
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
	if (s->event == FR_EVENT_CPU && s->weight != FR_NS_PER_S / rr.want_hz && !rr.bad_cpu_weight)
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
		char *m =
			mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

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
		CHECK(rr.wrong_rate == 0,
		      "%s: %" PRIu64 " samples drained before the change "
		      "to %u Hz do not carry %u Hz",
		      what, rr.wrong_rate, hz, rr.want_hz);
		ret = fr_perf_set_hz(p, hz);
		CHECK(ret == 0, "%s: fr_perf_set_hz(%u): %s", what, hz, strerror(-ret));
		CHECK(fr_perf_hz(p) == hz, "%s: fr_perf_hz %u after set_hz(%u)", what,
		      fr_perf_hz(p), hz);
	}
	reset_rate_result(hz);
	/* Frequency mode adapts its period from what it saw and may overshoot
	 * for a while: wait for samples rather than assume a number. */
	while (rr.mine < 2 && mono_ns() - start < 10 * FR_NS_PER_S) {
		if (rr.event == FR_EVENT_PAGE_FAULTS)
			fault_ms(100);
		else
			spin_ms(100);
		fr_perf_drain(p, h, fr_perf_clock_offset());
	}
	printf("%s at %u Hz: %" PRIu64 " samples (%" PRIu64 " of this thread) in %.1f s, "
	       "weights %" PRIu64 "..%" PRIu64 "\n",
	       what, hz, rr.samples, rr.mine, (mono_ns() - start) / 1e9, rr.min_weight,
	       rr.max_weight);
	CHECK(rr.mine >= 2, "%s at %u Hz: %" PRIu64 " samples of the working thread in 10 s", what,
	      hz, rr.mine);
	CHECK(rr.wrong_rate == 0, "%s at %u Hz: %" PRIu64 " of %" PRIu64 " samples at another rate",
	      what, hz, rr.wrong_rate, rr.samples);
	/* cpu-clock fires on idle CPUs too; the idle task is never a sample. */
	CHECK(rr.idle == 0, "%s at %u Hz: %" PRIu64 " samples of the idle task", what, hz, rr.idle);
	if (rr.event == FR_EVENT_CPU)
		CHECK(rr.bad_cpu_weight == 0, "cpu at %u Hz: weight %" PRIu64 ", want %u", hz,
		      rr.bad_cpu_weight, 1000000000u / hz);
}

int test_retune(void)
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
			      "periods from 1 up",
			      rr.min_weight, rr.max_weight);
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
