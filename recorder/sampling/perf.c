/* perf_event sources: opening them.
 *
 * One struct fr_perf is one event opened system-wide on every online CPU.
 * Each CPU's descriptor has its own mmap'd ring; the kernel writes records
 * at data_head, the drain (recorder/sampling/perf_drain.c) consumes up to it and
 * publishes data_tail, so a drain never blocks and the kernel never waits
 * for us (when we fall behind, it counts what it dropped in
 * PERF_RECORD_LOST, which we report).
 *
 * Timestamps come from CLOCK_MONOTONIC (use_clockid) so they are immune to
 * wall-clock steps; they are converted to Unix time with an offset taken at
 * drain time, which makes windows mean wall-clock intervals across restarts.
 *
 * Three kinds of source share the rings and the record decoder:
 *  - sampling events (cpu-clock, hardware, raw, software counts), whose
 *    samples are handed over as they are read, CPU ring after CPU ring;
 *  - offcpu: a sample needs two records, a thread's switch-out (the
 *    sched:sched_switch tracepoint, with the stack) and its next switch-in
 *    (a PERF_RECORD_SWITCH_CPU_WIDE record of the same event), often on
 *    different CPUs. Its rings are drained merged in time order, and the
 *    switch-outs waiting for their switch-in are kept in a table allocated
 *    at open (recorder/sampling/offcpu.c);
 *  - the side band: a dummy event that only carries MMAP2/COMM/FORK/EXIT.
 *
 * This file builds their attrs, calls perf_event_open(2) and maps the
 * rings, and changes rates in place; perf_tracepoint.c finds the
 * sched_switch tracepoint.
 */
#include "recorder/sampling/perf_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/time.h"

/* Ring sizes (data pages per CPU, powers of two). A context switch costs
 * offcpu about 0.6 KiB (the tracepoint sample with its callchain and raw
 * data, and two context-switch records), and a busy machine switches tens
 * of thousands of times a second per CPU: 2 MiB holds ~3500 switches, about
 * 100 ms at 35000 a second, and the half-full wakeup (the ingest thread
 * otherwise sleeps up to a second) drains it well before that. The side band carries a few
 * KiB per process started; 512 KiB absorbs a fork storm of ~150 processes
 * per CPU between drains. */
#define OFFCPU_PAGES 512
#define SIDEBAND_PAGES 128
/* OOM kills: a record with its callchain is under 1.5 KiB, and a kill is
 * rare; the ring wakes nobody (drained at least every second). */
#define OOM_PAGES 4

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

int64_t fr_perf_clock_offset(void)
{
	/* Bracket the realtime read between two monotonic reads and use their
	 * midpoint, so the offset error is at most half the bracket; of four
	 * tries, the narrowest bracket. One try's bracket is a few tens of
	 * nanoseconds, unless the thread was interrupted or its vCPU
	 * preempted between the reads: then hundreds of microseconds, and a
	 * sample and its labels' copy converted with two such offsets at two
	 * drains missed each other (the join allows 100 us). */
	int64_t best_width = INT64_MAX, offset = 0;

	for (int i = 0; i < 4; i++) {
		struct timespec m1, r, m2;
		int64_t a, b;

		clock_gettime(CLOCK_MONOTONIC, &m1);
		clock_gettime(CLOCK_REALTIME, &r);
		clock_gettime(CLOCK_MONOTONIC, &m2);
		a = fr_ns_from_timespec(&m1);
		b = fr_ns_from_timespec(&m2);
		if (b - a < best_width) {
			best_width = b - a;
			offset = fr_ns_from_timespec(&r) - (a + (b - a) / 2);
		}
	}
	return offset;
}

/* Kernel type/config for an event id; -ENOENT when the id is not a perf
 * event with a fixed encoding (offcpu is set up elsewhere; FR_EVENT_RAW is
 * only a reserved number) or a raw id whose words are not known. */
static int event_attr(uint32_t event, uint32_t *type, uint64_t *config)
{
	static const struct {
		uint32_t type;
		uint64_t config;
	} map[FR_EVENT_COUNT] = {
		[FR_EVENT_CPU] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK},
		[FR_EVENT_CYCLES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
		[FR_EVENT_INSTRUCTIONS] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
		[FR_EVENT_CACHE_REFERENCES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
		[FR_EVENT_CACHE_MISSES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
		[FR_EVENT_BRANCH_INSTRUCTIONS] = {PERF_TYPE_HARDWARE,
						  PERF_COUNT_HW_BRANCH_INSTRUCTIONS},
		[FR_EVENT_BRANCH_MISSES] = {PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES},
		[FR_EVENT_PAGE_FAULTS] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS},
		[FR_EVENT_CONTEXT_SWITCHES] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES},
		[FR_EVENT_CPU_MIGRATIONS] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
	};

	if (FR_EVENT_IS_RAW(event) || FR_EVENT_IS_RAWX(event)) {
		/* config1 and config2 go in with the rest of the attr
		 * (fr_perf_sampling_attr); an extended id this process never
		 * looked up has none to give. */
		struct fr_event_raw raw;

		if (fr_event_raw_get(event, &raw) < 0)
			return -ENOENT;
		*type = PERF_TYPE_RAW;
		*config = raw.config;
		return 0;
	}
	/* The memory events come from elsewhere (their map entry would
	 * read as cycles). */
	if (event >= FR_EVENT_COUNT || event == FR_EVENT_OFFCPU || event == FR_EVENT_RAW ||
	    fr_event_is_memory(event))
		return -ENOENT;
	*type = map[event].type;
	*config = map[event].config;
	return 0;
}

static int online_cpus(int **cpus)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	int count = 0;
	FILE *f;
	char buf[4096];

	if (n < 1)
		n = 1;
	*cpus = calloc((size_t)n, sizeof(int));
	if (!*cpus)
		return -ENOMEM;
	f = fopen("/sys/devices/system/cpu/online", "re");
	if (f && fgets(buf, sizeof(buf), f)) {
		/* "0-3,5,7-8" */
		char *p = buf;
		while (*p && *p != '\n') {
			char *end;
			long a = strtol(p, &end, 10), b = a;
			if (end == p)
				break;
			if (*end == '-')
				b = strtol(end + 1, &end, 10);
			for (long c = a; c <= b && count < n; c++)
				(*cpus)[count++] = (int)c;
			p = *end == ',' ? end + 1 : end;
		}
	}
	if (f)
		fclose(f);
	if (count == 0)
		for (count = 0; count < n; count++)
			(*cpus)[count] = count;
	return count;
}

/* Ring data pages for `hz`: about half a second of the deepest stacks
 * (with their stack copies, ~1.1 KiB of record besides), rounded up to a
 * power of two, at least 32 pages and at most 4096 (16 MiB with 4 KiB
 * pages). The ingest thread is woken when a ring is half full, so this
 * holds a quarter of a second of samples beyond the wakeup. With the
 * default 8 KiB copy: 512 KiB per CPU at 99 Hz, 8 MiB at 999 Hz. */
static size_t ring_pages(uint32_t hz, uint32_t stack_copy, size_t page_size)
{
	size_t want = (size_t)hz * (1100 + stack_copy) / 2 / page_size, pages = 32;

	while (pages < want && pages < 4096)
		pages <<= 1;
	return pages;
}

/* offcpu's pages with a stack copy at every switch: OFFCPU_PAGES holds
 * ~3500 switches without one; the same count with copies, up to 4096
 * pages. */
static size_t offcpu_pages(uint32_t stack_copy)
{
	size_t want = (size_t)OFFCPU_PAGES * (600 + stack_copy) / 600, pages = OFFCPU_PAGES;

	while (pages < want && pages < 4096)
		pages <<= 1;
	return pages;
}

/* A stack copy: the user registers (rbp, rsp, rip) and `stack_copy` bytes
 * of the user stack at each sample. The kernel's user callchain is not
 * asked for (the unwinder gives the user frames); kernel frames still
 * come from the callchain. */
static void unwind_attr(struct perf_event_attr *attr, uint32_t stack_copy)
{
	attr->sample_type |= SAMPLE_TYPE_UNWIND;
	attr->sample_regs_user = SAMPLE_REGS_UNWIND;
	attr->sample_stack_user = stack_copy;
	attr->exclude_callchain_user = 1;
}

/* The rate the rings of `cfg` are sized for: in period mode cpu's follows
 * from its period, and a count's is not known: what the consumers asked
 * (cfg->hz) or 99. */
static uint32_t period_ring_hz(const struct fr_perf_config *cfg)
{
	if (!cfg->period)
		return cfg->hz;
	if (cfg->event == FR_EVENT_CPU)
		return cfg->period >= FR_NS_PER_S ? 1 : (uint32_t)(FR_NS_PER_S / cfg->period);
	return cfg->hz && cfg->hz <= 1000000 ? cfg->hz : 99;
}

/* The kernel's current ceiling on sample_freq, or 0 when unknown. */
static unsigned long max_sample_rate(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned long rate = 0;

	if (f) {
		if (fscanf(f, "%lu", &rate) != 1)
			rate = 0;
		fclose(f);
	}
	return rate;
}

static void describe_open_error(char *err, size_t errlen, const char *name, int hardware,
				const struct perf_event_attr *attr, int e)
{
	unsigned long max_rate;

	if (hardware && (e == ENOENT || e == EOPNOTSUPP || e == ENODEV))
		fr_set_err(err, errlen,
			   "%s: hardware counters are not available on this machine "
			   "(perf_event_open: %s)",
			   name, fr_errno_name(e));
	else if (e == EACCES || e == EPERM)
		fr_set_err(err, errlen,
			   "%s: not permitted to sample the whole machine (perf_event_open: %s); "
			   "run flightrecd as root or with CAP_PERFMON",
			   name, fr_errno_name(e));
	else if (e == EINVAL && attr->freq && (max_rate = max_sample_rate()) &&
		 attr->sample_freq > max_rate)
		fr_set_err(err, errlen,
			   "%s: %llu Hz is above the kernel's limit of %lu samples per second "
			   "(perf_event_open: EINVAL; see "
			   "/proc/sys/kernel/perf_event_max_sample_rate)",
			   name, (unsigned long long)attr->sample_freq, max_rate);
	else
		fr_set_err(err, errlen, "%s: cannot open the perf event (perf_event_open: %s: %s)",
			   name, fr_errno_name(e), strerror(e));
}

/* Opens `attr` on one CPU, adapting it to what the kernel refuses:
 * precise_ip steps down from its value to 0 on EOPNOTSUPP or EINVAL (how
 * PMUs say "not this skid level"), and build ids in MMAP2 records are
 * dropped when they alone are the EINVAL (kernels before 5.12). The attr
 * is left as it was accepted, for the other CPUs. Returns the fd or
 * -errno of the last attempt. */
static int open_adapting(struct perf_event_attr *attr, int cpu)
{
	for (;;) {
		long fd = perf_event_open(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		int e = errno;

		if (fd >= 0)
			return (int)fd;
		if (e == EINVAL && attr->build_id) {
			attr->build_id = 0;
			fd = perf_event_open(attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
			if (fd >= 0)
				return (int)fd;
			/* Build ids were not the problem (or not the only one). */
			e = errno;
			attr->build_id = 1;
		}
		if ((e == EOPNOTSUPP || e == EINVAL) && attr->precise_ip > 0) {
			attr->precise_ip--;
			continue;
		}
		return -e;
	}
}

static struct fr_perf *perf_new(const struct fr_perf_config *cfg)
{
	struct fr_perf *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cfg = *cfg;
	p->hz = cfg->hz;
	p->period = cfg->event == FR_EVENT_OFFCPU ? 0 : cfg->period;
	if (p->period && cfg->event == FR_EVENT_CPU)
		/* cpu's rate follows from its period (ns). */
		p->hz = p->period >= FR_NS_PER_S ? 1 : (uint32_t)(FR_NS_PER_S / p->period);
	p->page_size = (size_t)sysconf(_SC_PAGESIZE);
	return p;
}

void fr_perf_close(struct fr_perf *p)
{
	if (!p)
		return;
	for (unsigned i = 0; i < p->ncpus; i++) {
		if (p->rings[i].base)
			munmap(p->rings[i].base, p->rings[i].data_size + p->page_size);
		close(p->rings[i].fd);
	}
	free(p->rings);
	free(p->heap);
	fr_offcpu_free(p->offcpu);
	fr_bpf_offcpu_close(p->bpf);
	free(p);
}

/* Opens `attr` on every online CPU and maps a ring of `pages` data pages
 * for each. The first CPU decides what the kernel accepts (open_adapting);
 * the others get the same. On failure explains in `err` under `name`. */
static int open_rings(struct fr_perf *p, struct perf_event_attr *attr, size_t pages,
		      const char *name, int hardware, char *err, size_t errlen)
{
	int *cpus = NULL, n, ret;

	n = online_cpus(&cpus);
	if (n < 0)
		return n;
	p->rings = calloc((size_t)n, sizeof(*p->rings));
	if (!p->rings) {
		ret = -ENOMEM;
		goto err_cpus;
	}
	attr->watermark = 1;
	attr->wakeup_watermark = (uint32_t)(pages * p->page_size / 2);
	for (int i = 0; i < n; i++) {
		struct cpu_ring *r = &p->rings[i];
		int fd;

		if (i == 0) {
			fd = open_adapting(attr, cpus[i]);
		} else {
			long lfd = perf_event_open(attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
			fd = lfd < 0 ? -errno : (int)lfd;
		}
		if (fd < 0) {
			ret = fd;
			describe_open_error(err, errlen, name, hardware, attr, -fd);
			goto err_cpus;
		}
		r->fd = fd;
		r->cpu = cpus[i];
		r->data_size = pages * p->page_size;
		r->base = mmap(NULL, r->data_size + p->page_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, r->fd, 0);
		if (r->base == MAP_FAILED) {
			ret = -errno;
			fr_set_err(err, errlen,
				   "%s: cannot map the perf ring of cpu %d (%zu KiB): %s", name,
				   cpus[i], r->data_size / 1024, strerror(errno));
			r->base = NULL;
			close(r->fd);
			goto err_cpus;
		}
		p->ncpus++;
	}
	free(cpus);
	return 0;

err_cpus:
	free(cpus);
	return ret;
}

/* ---- opening ---------------------------------------------------------- */

/* What every source's attr shares: the sample layout decode_sample reads
 * (also the sample_id trailer of the other records), CLOCK_MONOTONIC
 * times, opened disabled. */
static void base_attr(struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->sample_type = SAMPLE_TYPE;
	attr->disabled = 1;
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->sample_id_all = 1;
}

/* Makes fr_perf_drain read the CPUs' rings merged in time order: for
 * records whose order across CPUs matters (a switch-out and its switch-in;
 * a fork, then the child's exec). */
static int drain_in_time_order(struct fr_perf *p)
{
	p->heap = calloc(p->ncpus, sizeof(*p->heap));
	return p->heap ? 0 : -ENOMEM;
}

/* The attr of an offcpu source: sched:sched_switch with its raw fields
 * (whose layout goes to p->swfmt), and the pairing table it needs. */
static int offcpu_attr(struct fr_perf *p, struct perf_event_attr *attr, char *err, size_t errlen)
{
	uint64_t config = 0;
	int ret;

	ret = fr_perf_find_sched_switch(&config, &p->swfmt, err, errlen);
	if (ret < 0)
		return ret;
	ret = fr_offcpu_new(&p->offcpu, FR_OFFCPU_ENTRIES);
	if (ret < 0)
		return ret;
	/* Every switch: a sample is a pair of them, so none may be
	 * skipped; the raw fields say how the thread left.
	 *
	 * The switch-in comes from context_switch records, not from
	 * the tracepoint's next_pid: the tracepoint fires in the
	 * context of the task leaving, and some kernels (seen on a
	 * 6.18 VM) drop every perf record made in the idle task of
	 * some CPUs, so the switch from idle to a waking thread, the
	 * most common switch-in of all, went missing there. The
	 * SWITCH_CPU_WIDE "in" record is written by the thread
	 * coming in, never by the idle task we skip anyway. */
	attr->type = PERF_TYPE_TRACEPOINT;
	attr->config = config;
	attr->sample_period = 1;
	attr->sample_type |= PERF_SAMPLE_RAW;
	attr->context_switch = 1;
	return 0;
}

/* The application labels program on every CPU's event: it copies the
 * sampled thread's labels just before each sample (recorder/tracking/applabels.h).
 * A kernel that refuses it leaves the samples without labels, said once. */
static void attach_labels(struct fr_perf *p, int prog_fd, const char *name)
{
	for (unsigned i = 0; i < p->ncpus; i++) {
		if (ioctl(p->rings[i].fd, PERF_EVENT_IOC_SET_BPF, prog_fd) < 0) {
			fr_log_ratelimited(FR_LOG_WARN, 60 * FR_NS_PER_S,
					   "%s: cannot attach the application labels program (%s); "
					   "its samples carry no application labels",
					   name, strerror(errno));
			return;
		}
	}
}

/* Whether cfg (its event named `name`) can be opened as asked: its kernel
 * type and config into *type and *config. Returns 0, or -EOPNOTSUPP or
 * -EINVAL with err set. */
static int check_config(const struct fr_perf_config *cfg, const char *name, uint32_t *type,
			uint64_t *config, char *err, size_t errlen)
{
	if (cfg->event != FR_EVENT_OFFCPU) {
		if (event_attr(cfg->event, type, config) < 0) {
			fr_set_err(err, errlen, "%s: this event cannot be sampled by this version",
				   name);
			return -EOPNOTSUPP;
		}
		if (!cfg->period && (cfg->hz == 0 || cfg->hz > 1000000)) {
			fr_set_err(err, errlen, "%s: rate must be 1..1000000 Hz, got %u", name,
				   cfg->hz);
			return -EINVAL;
		}
		if (cfg->period > INT64_MAX) {
			fr_set_err(err, errlen, "%s: period must be 1..2^63-1, got %llu", name,
				   (unsigned long long)cfg->period);
			return -EINVAL;
		}
	} else if (cfg->period) {
		fr_set_err(err, errlen, "offcpu: records every context switch and takes no period");
		return -EINVAL;
	}
	if (cfg->stack_copy && (cfg->stack_copy % 8 || cfg->stack_copy > 65528)) {
		fr_set_err(err, errlen,
			   "%s: stack copy must be a multiple of 8 up to 65528, got %u", name,
			   cfg->stack_copy);
		return -EINVAL;
	}
	return 0;
}

int fr_perf_open(struct fr_perf **out, const struct fr_perf_config *cfg, char *err, size_t errlen)
{
	struct fr_perf *p;
	struct perf_event_attr attr;
	char name[FR_EVENT_NAME_MAX];
	uint32_t type = 0;
	uint64_t config = 0;
	size_t pages;
	int hardware = fr_event_is_hardware(cfg->event), ret;

	if (err && errlen)
		err[0] = '\0';
	fr_event_format(cfg->event, name, sizeof(name));
	ret = check_config(cfg, name, &type, &config, err, errlen);
	if (ret < 0)
		return ret;
	p = perf_new(cfg);
	if (!p)
		return -ENOMEM;
	/* offcpu by eBPF when asked and possible, else by perf, saying why
	 * (status shows it). */
	if (cfg->event == FR_EVENT_OFFCPU && cfg->offcpu_mechanism == FR_PERF_OFFCPU_BPF) {
		if (fr_bpf_offcpu_open(&p->bpf, cfg->min_wait_ns, cfg->stack_copy,
				       cfg->offcpu_extra,
				       cfg->labels_map_fd > 0 ? cfg->labels_map_fd : -1,
				       cfg->py_procs_fd > 0 ? cfg->py_procs_fd : -1,
				       cfg->py_threads_fd > 0 ? cfg->py_threads_fd : -1,
				       p->bpf_fallback, sizeof(p->bpf_fallback)) == 0) {
			*out = p;
			return 0;
		}
		fr_log_warn("%s; recording offcpu with the perf mechanism%s", p->bpf_fallback,
			    cfg->offcpu_extra ? ", and no wakeup or runqueue (they need the eBPF "
						"program)"
					      : "");
	}

	base_attr(&attr);
	if (cfg->event == FR_EVENT_OFFCPU) {
		ret = offcpu_attr(p, &attr, err, errlen);
		if (ret < 0)
			goto err_close;
		pages = cfg->stack_copy ? offcpu_pages(cfg->stack_copy) : OFFCPU_PAGES;
	} else {
		fr_perf_sampling_attr(&attr, cfg, type, config, hardware);
		pages = ring_pages(period_ring_hz(cfg), cfg->stack_copy, p->page_size);
	}
	if (cfg->stack_copy)
		unwind_attr(&attr, cfg->stack_copy);
	ret = open_rings(p, &attr, pages, name, hardware, err, errlen);
	/* What the kernel accepted after open_adapting's fallbacks. */
	p->pmu.precise_asked = hardware ? 3 : 0;
	p->pmu.precise_ip = attr.precise_ip;
	if (ret == 0 && p->offcpu)
		ret = drain_in_time_order(p);
	if (ret < 0)
		goto err_close;
	if (!p->offcpu && cfg->labels_prog_fd > 0)
		attach_labels(p, cfg->labels_prog_fd, name);
	*out = p;
	return 0;

err_close:
	if (ret == -ENOMEM && err && errlen && !err[0])
		fr_set_err(err, errlen, "%s: out of memory", name);
	fr_perf_close(p);
	return ret;
}

int fr_perf_can_open(uint32_t event, char *err, size_t errlen)
{
	struct fr_perf_config cfg = {.event = event, .hz = 1};
	struct perf_event_attr attr;
	char name[FR_EVENT_NAME_MAX];
	uint32_t type = 0;
	uint64_t config = 0;
	int fd;

	if (err && errlen)
		err[0] = '\0';
	fr_event_format(event, name, sizeof(name));
	/* offcpu, wakeup and runqueue (a tracepoint or an eBPF program) and
	 * what is not a perf event: nothing to try without setting it up */
	if (event_attr(event, &type, &config) < 0 ||
	    (type == PERF_TYPE_HARDWARE && !fr_event_is_hardware(event)))
		return 0;
	base_attr(&attr);
	fr_perf_sampling_attr(&attr, &cfg, type, config, fr_event_is_hardware(event));
	/* Disabled, no ring mapped, closed at once: it never counts */
	attr.disabled = 1;
	fd = open_adapting(&attr, 0);
	if (fd < 0) {
		describe_open_error(err, errlen, name, fr_event_is_hardware(event), &attr, -fd);
		return fd;
	}
	close(fd);
	return 0;
}

int fr_perf_open_sideband(struct fr_perf **out, char *err, size_t errlen)
{
	const struct fr_perf_config cfg = {.event = FR_EVENT_CPU, .hz = 0};
	struct perf_event_attr attr;
	struct fr_perf *p;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	p = perf_new(&cfg);
	if (!p)
		return -ENOMEM;
	p->sideband_only = 1;
	/* The dummy event never counts, so it never samples; it exists for
	 * the records its attr asks for. The sample fields only shape the
	 * sample_id trailer of those records. */
	base_attr(&attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.sample_period = 1;
	attr.mmap = 1;
	attr.mmap2 = 1;
	attr.comm = 1;
	attr.comm_exec = 1;
	attr.task = 1;
	attr.build_id = 1;
	ret = open_rings(p, &attr, SIDEBAND_PAGES, "side band", 0, err, errlen);
	/* A short-lived process's FORK (on its parent's CPU) and exec COMM (on
	 * its own) often arrive in one drain; read CPU after CPU, the COMM can
	 * come first and name a process not yet known. */
	if (ret == 0)
		ret = drain_in_time_order(p);
	if (ret < 0) {
		if (ret == -ENOMEM && err && errlen && !err[0])
			fr_set_err(err, errlen, "side band: out of memory");
		fr_perf_close(p);
		return ret;
	}
	*out = p;
	return 0;
}

int fr_perf_open_oom(struct fr_perf **out, char *err, size_t errlen)
{
	const struct fr_perf_config cfg = {.event = FR_EVENT_OOM, .hz = 0};
	struct perf_event_attr attr;
	uint64_t id = 0;
	struct fr_perf *p;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	p = perf_new(&cfg);
	if (!p)
		return -ENOMEM;
	p->oom = 1;
	ret = fr_perf_find_oom(&id, &p->oomfmt, err, errlen);
	if (ret == 0) {
		/* Every kill; the raw fields name the victim (the sample's
		 * own pid is the task that ran the OOM killer). */
		base_attr(&attr);
		attr.type = PERF_TYPE_TRACEPOINT;
		attr.config = id;
		attr.sample_period = 1;
		attr.sample_type |= PERF_SAMPLE_RAW;
		ret = open_rings(p, &attr, OOM_PAGES, "oom", 0, err, errlen);
	}
	if (ret < 0) {
		fr_perf_close(p);
		return ret;
	}
	*out = p;
	return 0;
}

int fr_perf_enable(struct fr_perf *p, int enable)
{
	if (p->bpf)
		return fr_bpf_offcpu_enable(p->bpf, enable);
	for (unsigned i = 0; i < p->ncpus; i++)
		if (ioctl(p->rings[i].fd, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
			  0) < 0)
			return -errno;
	return 0;
}

int fr_perf_set_hz(struct fr_perf *p, uint32_t hz)
{
	uint64_t arg;

	if (p->offcpu || p->bpf || p->sideband_only) {
		/* Nothing is sampled at a rate: keep the number for callers. */
		p->hz = hz;
		return 0;
	}
	if (hz == 0 || hz > 1000000 || p->period)
		return -EINVAL; /* a period-mode source: fr_perf_set_period */
	/* The ioctl's argument is the period of a fixed-period event and the
	 * frequency of a frequency-mode one (attr.freq). */
	arg = p->cfg.event == FR_EVENT_CPU ? FR_NS_PER_S / hz : hz;
	for (unsigned i = 0; i < p->ncpus; i++) {
		if (ioctl(p->rings[i].fd, PERF_EVENT_IOC_PERIOD, &arg) < 0) {
			int ret = -errno;
			uint64_t old = p->cfg.event == FR_EVENT_CPU ? FR_NS_PER_S / p->hz : p->hz;

			/* Samples carry one rate: put back the CPUs changed. */
			while (i-- > 0)
				ioctl(p->rings[i].fd, PERF_EVENT_IOC_PERIOD, &old);
			return ret;
		}
	}
	p->hz = hz;
	return 0;
}

uint32_t fr_perf_hz(const struct fr_perf *p)
{
	return p->hz;
}

uint32_t fr_perf_stack_copy(const struct fr_perf *p)
{
	return p->cfg.stack_copy;
}

int fr_perf_rings_too_small(const struct fr_perf *p, uint32_t hz)
{
	if (!p->cfg.stack_copy || p->offcpu || p->sideband_only || !p->ncpus)
		return 0;
	return ring_pages(hz, p->cfg.stack_copy, p->page_size) * p->page_size >
	       p->rings[0].data_size;
}

void fr_perf_unwind_stats(const struct fr_perf *p, struct fr_perf_unwind_stats *out)
{
	const uint64_t *in = (const uint64_t *)&p->unwind;
	uint64_t *o = (uint64_t *)out;

	if (p->bpf) {
		fr_bpf_offcpu_unwind_stats(p->bpf, out);
		return;
	}
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
}

void fr_perf_offcpu_stats(const struct fr_perf *p, struct fr_perf_offcpu_stats *out)
{
	const struct fr_perf_offcpu_stats *in = &p->offcpu_stats;

	memset(out, 0, sizeof(*out));
	if (p->bpf) {
		fr_bpf_offcpu_stats(p->bpf, out);
		return;
	}
	out->switch_outs = __atomic_load_n(&in->switch_outs, __ATOMIC_RELAXED);
	out->switch_ins = __atomic_load_n(&in->switch_ins, __ATOMIC_RELAXED);
	out->samples = __atomic_load_n(&in->samples, __ATOMIC_RELAXED);
	out->evicted = __atomic_load_n(&in->evicted, __ATOMIC_RELAXED);
	out->waiting = __atomic_load_n(&in->waiting, __ATOMIC_RELAXED);
	out->capacity = p->offcpu ? FR_OFFCPU_ENTRIES : 0;
	out->mechanism = FR_PERF_OFFCPU_PERF;
}

unsigned fr_perf_nfds(const struct fr_perf *p)
{
	return p->bpf ? fr_bpf_offcpu_nfds(p->bpf) : p->ncpus;
}

int fr_perf_fd(const struct fr_perf *p, unsigned i)
{
	return p->bpf ? fr_bpf_offcpu_fd(p->bpf, i) : p->rings[i].fd;
}

const char *fr_perf_offcpu_fallback(const struct fr_perf *p)
{
	return p->bpf_fallback[0] ? p->bpf_fallback : NULL;
}
