/* The memory sampler (recorder/tracking/memsample.h), built from its own
 * sources over core/util alone, on a /proc of the test's making: 600
 * processes noted (more than the 512 read a second, so they take turns),
 * one watched and never noted, one gone, a kernel thread without memory,
 * and a pressure file whose total grows between ticks. Checks what reaches
 * the "ingest thread" (this one): RSS samples of the right bytes for the
 * right pids, at most 512 a second, every noted pid read within two
 * ticks, the watched one too, none of the gone or empty ones, and the
 * pressure as the delta of its total in ns: memory's and cpu's (whose
 * "some" and "full" also reach the pressure triggers' ticks), and io's
 * missing file said, with the reason, and sampled again once it appears. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util/time.h"
#include "recorder/tracking/memsample.h"
#include "tests/unit/check.h"
#include "tests/unit/files.h"

#define NPIDS 600
#define PID0 1000
#define WATCHED 5000
#define EMPTY 5001

static char root[64];
static long page;

static void write_file(const char *path, const char *text)
{
	CHECK(test_write_text(path, text) == 0, "cannot write %s", path);
}

static void make_proc(uint32_t pid, uint64_t resident)
{
	char path[128], line[64];

	snprintf(path, sizeof(path), "%s/%u", root, pid);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/%u/statm", root, pid);
	snprintf(line, sizeof(line), "9999 %" PRIu64 " 1 1 0 1 0\n", resident);
	write_file(path, line);
}

static void set_psi(const char *resource, uint64_t some_us, uint64_t full_us)
{
	char path[128], text[160];

	snprintf(path, sizeof(path), "%s/pressure/%s", root, resource);
	snprintf(text, sizeof(text),
		 "some avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64
		 "\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n",
		 some_us, full_us);
	write_file(path, text);
}

/* memory: some `us`, full 1; cpu: some 2 x `us`, full `us` / 2. */
static void set_pressure(uint64_t us)
{
	set_psi("memory", us, 1);
	set_psi("cpu", 2 * us, us / 2);
}

struct got {
	uint32_t rss, pressure, bad, cpu, io;
	uint64_t pressure_ns, cpu_ns, io_ns;
	struct fr_pressure_tick tick; /* the last with cpu stall */
	uint32_t ticks;
	uint8_t seen[NPIDS];
	int watched, empty;
};

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct got *g = arg;

	if (s->event == FR_EVENT_MEM_PRESSURE) {
		g->pressure++;
		g->pressure_ns += s->weight;
		g->bad += s->pid != 0 || s->nr_frames != 0;
		return;
	}
	if (s->event == FR_EVENT_CPU_PRESSURE || s->event == FR_EVENT_IO_PRESSURE) {
		int cpu = s->event == FR_EVENT_CPU_PRESSURE;

		*(cpu ? &g->cpu : &g->io) += 1;
		*(cpu ? &g->cpu_ns : &g->io_ns) += s->weight;
		g->bad += s->pid != 0 || s->nr_frames != 0;
		return;
	}
	g->rss++;
	g->bad += s->event != FR_EVENT_RSS || s->tid != s->pid || s->nr_frames != 0;
	if (s->pid == WATCHED) {
		g->watched++;
		g->bad += s->weight != 7 * (uint64_t)page;
	} else if (s->pid == EMPTY) {
		g->empty++;
	} else if (s->pid >= PID0 && s->pid < PID0 + NPIDS) {
		g->seen[s->pid - PID0] = 1;
		g->bad += s->weight != (uint64_t)(s->pid - PID0 + 1) * (uint64_t)page;
	} else {
		g->bad++;
	}
}

static uint32_t seen_count(const struct got *g)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < NPIDS; i++)
		n += g->seen[i];
	return n;
}

/* Takes what the sampler read, as the ingest thread does at each of its
 * wake-ups (every 50 ms here), for `ms`. */
static void take_for(struct fr_memsample *m, struct got *g, int ms)
{
	for (int i = 0; i < (ms + 49) / 50; i++) {
		struct fr_pressure_tick k;

		fr_memsample_take(m, on_sample, g);
		if (fr_memsample_take_pressure(m, &k)) {
			g->ticks++;
			if (k.valid[FR_PRESSURE_CPU] && k.some_ns[FR_PRESSURE_CPU])
				g->tick = k;
		}
		usleep(50000);
	}
}

int main(void)
{
	struct fr_memsample *m = NULL;
	struct fr_memsample_stats st;
	struct got g;
	char err[256], path[128];
	uint32_t watch[2] = {WATCHED, 4999 /* no such process */};
	uint32_t seen = 0;

	page = sysconf(_SC_PAGESIZE);
	snprintf(root, sizeof(root), "/tmp/fr-memsample.XXXXXX");
	if (!mkdtemp(root))
		return 1;
	for (uint32_t i = 0; i < NPIDS; i++)
		make_proc(PID0 + i, i + 1);
	make_proc(WATCHED, 7);
	make_proc(EMPTY, 0);
	snprintf(path, sizeof(path), "%s/pressure", root);
	mkdir(path, 0700);
	set_pressure(1000);

	memset(&g, 0, sizeof(g));
	CHECK(fr_memsample_start(&m, root, 0, err, sizeof(err)) == 0, "start: %s", err);
	if (!m)
		return 1;
	fr_memsample_watch_pids(m, watch, 2);
	/* Noted as samples are added: each pid many times, plus pid 0 (never
	 * read) and one that is gone. */
	for (int rep = 0; rep < 3; rep++)
		for (uint32_t i = 0; i < NPIDS; i++)
			fr_memsample_note_pid(m, PID0 + i);
	fr_memsample_note_pid(m, 0);
	fr_memsample_note_pid(m, 4242);
	fr_memsample_note_pid(m, EMPTY);
	/* The first tick sets the pressure's baseline; then 2.5 ms stalled. */
	for (int i = 0; i < 100; i++) {
		take_for(m, &g, 50);
		fr_memsample_stats(m, &st);
		if (st.ticks >= 1)
			break;
	}
	set_pressure(3500);
	/* io's file is missing: said, with the reason. */
	{
		char why[320] = "";

		CHECK(fr_memsample_pressure_error(m, FR_PRESSURE_IO, why, sizeof(why)) == 1 &&
			      strstr(why, "/pressure/io") && strstr(why, "no PSI"),
		      "io's missing file: \"%s\"", why);
		CHECK(fr_memsample_pressure_error(m, FR_PRESSURE_CPU, why, sizeof(why)) == 0 &&
			      fr_memsample_pressure_error(m, FR_PRESSURE_MEMORY, NULL, 0) == 0,
		      "cpu or memory said to fail");
	}
	/* Until every noted process was read (the same pids noted again for
	 * each hand-over, as samples keep coming), 10 s at most. */
	for (int i = 0; i < 200 && seen_count(&g) < NPIDS; i++) {
		for (uint32_t k = 0; k < NPIDS; k++)
			fr_memsample_note_pid(m, PID0 + k);
		fr_memsample_note_pid(m, EMPTY);
		take_for(m, &g, 50);
	}
	take_for(m, &g, 1100);
	/* io appears: a baseline, then 700 us stalled; it reads again. */
	set_psi("io", 100, 0);
	take_for(m, &g, 1100);
	set_psi("io", 800, 0);
	for (int i = 0; i < 40 && g.io_ns == 0; i++)
		take_for(m, &g, 100);
	CHECK(g.io >= 1 && g.io_ns == 700 * 1000 &&
		      fr_memsample_pressure_error(m, FR_PRESSURE_IO, NULL, 0) == 0,
	      "io once its file appeared: %u samples, %" PRIu64 " ns (want 0.7 ms)", g.io, g.io_ns);
	fr_memsample_stats(m, &st);
	fr_memsample_stop(m);

	seen = seen_count(&g);
	CHECK(g.bad == 0, "%u samples of the wrong pid, bytes or shape", g.bad);
	CHECK(seen == NPIDS, "%u of the %d noted processes read", seen, NPIDS);
	CHECK(g.watched >= 1, "the watched process was not read");
	CHECK(g.empty == 0, "a process without memory got %d samples", g.empty);
	CHECK(st.ticks >= 3 && g.rss <= st.ticks * FR_MEMSAMPLE_MAX_PIDS,
	      "%u rss samples in %" PRIu64 " ticks: over the bound", g.rss, st.ticks);
	CHECK(st.skipped > 0, "600 processes, none skipped: no bound");
	CHECK(st.rss_samples == g.rss && st.dropped == 0,
	      "stats: %" PRIu64 " read, %u taken, %" PRIu64 " dropped", st.rss_samples, g.rss,
	      st.dropped);
	CHECK(g.pressure >= 1 && g.pressure_ns == 2500 * 1000,
	      "pressure: %u samples, %" PRIu64 " ns (want 2.5 ms)", g.pressure, g.pressure_ns);
	CHECK(st.gone >= 1, "the empty process was not counted");
	CHECK(g.cpu >= 1 && g.cpu_ns == 5000 * 1000,
	      "cpu pressure: %u samples, %" PRIu64 " ns (want 5 ms)", g.cpu, g.cpu_ns);
	CHECK(g.ticks >= 2 && g.tick.valid[FR_PRESSURE_CPU] && g.tick.has_full[FR_PRESSURE_CPU] &&
		      g.tick.some_ns[FR_PRESSURE_CPU] == 5000 * 1000 &&
		      g.tick.full_ns[FR_PRESSURE_CPU] == 1250 * 1000 &&
		      g.tick.valid[FR_PRESSURE_MEMORY] &&
		      g.tick.some_ns[FR_PRESSURE_MEMORY] == 2500 * 1000 &&
		      g.tick.full_ns[FR_PRESSURE_MEMORY] == 0 && !g.tick.valid[FR_PRESSURE_IO] &&
		      g.tick.interval_ns > FR_NS_PER_S / 2 && g.tick.interval_ns < 3 * FR_NS_PER_S,
	      "the triggers' tick: %u ticks, cpu %d/%d %" PRIu64 "/%" PRIu64 ", interval %" PRId64,
	      g.ticks, g.tick.valid[FR_PRESSURE_CPU], g.tick.has_full[FR_PRESSURE_CPU],
	      g.tick.some_ns[FR_PRESSURE_CPU], g.tick.full_ns[FR_PRESSURE_CPU], g.tick.interval_ns);

	/* The tree goes. */
	for (uint32_t i = 0; i < NPIDS + 2; i++) {
		uint32_t pid = i < NPIDS ? PID0 + i : i == NPIDS ? WATCHED : EMPTY;

		snprintf(path, sizeof(path), "%s/%u/statm", root, pid);
		unlink(path);
		snprintf(path, sizeof(path), "%s/%u", root, pid);
		rmdir(path);
	}
	for (int r = 0; r < FR_PRESSURE_RESOURCES; r++) {
		snprintf(path, sizeof(path), "%s/pressure/%s", root, fr_pressure_resource_name(r));
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/pressure", root);
	rmdir(path);
	rmdir(root);
	if (failures)
		fprintf(stderr, "%d failures\n", failures);
	return failures != 0;
}
