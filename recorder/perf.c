/* perf_event sources.
 *
 * One struct fr_perf is one event opened system-wide on every online CPU.
 * Each CPU's descriptor has its own mmap'd ring; the kernel writes records
 * at data_head, we consume up to it and publish data_tail, so a drain never
 * blocks and the kernel never waits for us (when we fall behind, it counts
 * what it dropped in PERF_RECORD_LOST, which we report).
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
 *    at open;
 *  - the side band: a dummy event that only carries MMAP2/COMM/FORK/EXIT.
 *
 * Nothing on the drain path allocates.
 */
#include "recorder/perf.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/log.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

/* Every source asks for these sample fields, in the kernel's order. TID,
 * TIME and CPU also make up the sample_id trailer (sample_id_all) of every
 * other record, which is how the time-ordered drain finds their time: it is
 * the second of the trailer's three u64s. */
#define SAMPLE_TYPE                                                                 \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |   \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

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

/* The offcpu table: threads switched out and waiting to be switched in.
 * OFFCPU_ENTRIES bounds how many threads are tracked at once (a machine
 * rarely has that many that ran since the recorder started); the index is
 * twice as large so linear probing stays short. */
#define OFFCPU_ENTRIES 65536u
#define OFFCPU_INDEX (2 * OFFCPU_ENTRIES)
/* A pair further apart than this is not believed (a record lost in
 * between, or a thread asleep for so long its stack no longer matters). */
#define OFFCPU_MAX_GAP_NS (3600LL * 1000000000LL)
/* When the table is full, the oldest of this many consecutive entries is
 * dropped (an approximation of least recently switched out). */
#define OFFCPU_EVICT_SCAN 8

/* prev_state bits of a task that is exiting: it will never be switched in
 * again, so its switch-out is not kept. These are EXIT_DEAD ("X") and
 * EXIT_ZOMBIE ("Z") as the tracepoint's print format names them; their
 * values have been stable since Linux 4.14. */
#define SCHED_STATE_EXITING 0x30u

struct cpu_ring {
	int fd;
	int cpu;
	void *base;       /* metadata page + data pages */
	size_t data_size; /* power of two */
	/* Drain cursor: from data_tail to the data_head read at its start;
	 * next_time orders the rings of a time-ordered drain. */
	uint64_t tail, head, next_time;
};

/* Where sched_switch keeps the fields we read, from its format file. */
struct switch_format {
	uint32_t prev_state, prev_state_size;
	uint32_t min_size; /* raw data shorter than this is not a sched_switch */
};

struct offcpu_entry {
	uint32_t tid;        /* the key */
	uint8_t switched_in; /* 0: a switch-out with its stack; 1: a switch-in
			      * seen before its switch-out (time only) */
	uint16_t nr_kernel, nr_frames;
	uint32_t pid, cpu;   /* of the switch-out, as samples name them */
	uint64_t time;          /* CLOCK_MONOTONIC ns of the switch */
	uint64_t ips[FR_MAX_FRAMES];
};

struct offcpu {
	struct switch_format fmt;
	/* Open addressing with linear probing: entry number + 1, 0 empty.
	 * Removal shifts later members of the cluster back (no tombstones). */
	uint32_t *index;
	/* mmap'd untouched, so memory is used only as entries are (about
	 * 1 KiB each); freed entries are reused last-in first-out so the
	 * pages in use stay few. */
	struct offcpu_entry *entries;
	uint32_t *free_list;
	uint32_t nfree, used, hand;
	uint64_t evicted; /* entries dropped since the last drain */
};

struct fr_perf {
	struct fr_perf_config cfg;
	uint32_t hz;
	int sideband_only;
	unsigned ncpus;
	struct cpu_ring *rings;
	size_t page_size;
	struct offcpu *offcpu; /* offcpu sources only */
	/* offcpu and the side band: rings ordered by their next record's
	 * time, for drains merged in time order across CPUs. */
	unsigned *heap;
	/* Records that wrap around the end of a ring are copied here. */
	unsigned char wrap_buf[65536];
	uint64_t ips[FR_MAX_FRAMES];
};

/* A sample record decoded; its frames are in fr_perf.ips. */
struct sample_view {
	uint32_t pid, tid, cpu;
	uint64_t time, period;
	uint16_t nr_kernel, nr_frames;
	const unsigned char *raw; /* PERF_SAMPLE_RAW data, when asked for */
	uint32_t raw_size;
};

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group,
			    unsigned long flags)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, group, flags);
}

int64_t fr_perf_clock_offset(void)
{
	/* Bracket the realtime read between two monotonic reads and use their
	 * midpoint, so the offset error is at most half the bracket. */
	struct timespec m1, r, m2;

	clock_gettime(CLOCK_MONOTONIC, &m1);
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m2);
	int64_t mono = ((int64_t)m1.tv_sec * 1000000000 + m1.tv_nsec +
			(int64_t)m2.tv_sec * 1000000000 + m2.tv_nsec) / 2;
	return (int64_t)r.tv_sec * 1000000000 + r.tv_nsec - mono;
}

/* Kernel type/config for an event id; -ENOENT when the id is not a perf
 * event with a fixed encoding (offcpu is set up elsewhere; FR_EVENT_RAW is
 * only a reserved number). */
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
		[FR_EVENT_CONTEXT_SWITCHES] = {PERF_TYPE_SOFTWARE,
					       PERF_COUNT_SW_CONTEXT_SWITCHES},
		[FR_EVENT_CPU_MIGRATIONS] = {PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS},
	};

	if (FR_EVENT_IS_RAW(event)) {
		*type = PERF_TYPE_RAW;
		*config = FR_EVENT_RAW_CODE(event);
		return 0;
	}
	if (event >= FR_EVENT_COUNT || event == FR_EVENT_OFFCPU || event == FR_EVENT_RAW)
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

/* Ring data pages for `hz`: about half a second of the deepest stacks,
 * rounded up to a power of two, at least 32 pages. */
static size_t ring_pages(uint32_t hz, size_t page_size)
{
	size_t want = (size_t)hz * 1100 / 2 / page_size, pages = 32;

	while (pages < want && pages < 4096)
		pages <<= 1;
	return pages;
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
			   "(perf_event_open: %s)", name, fr_errno_name(e));
	else if (e == EACCES || e == EPERM)
		fr_set_err(err, errlen,
			   "%s: not permitted to sample the whole machine (perf_event_open: %s); "
			   "run flightrecd as root or with CAP_PERFMON", name, fr_errno_name(e));
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

static void free_offcpu(struct offcpu *o)
{
	if (!o)
		return;
	if (o->entries)
		munmap(o->entries, OFFCPU_ENTRIES * sizeof(*o->entries));
	free(o->index);
	free(o->free_list);
	free(o);
}

static struct fr_perf *perf_new(const struct fr_perf_config *cfg)
{
	struct fr_perf *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->cfg = *cfg;
	p->hz = cfg->hz;
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
	free_offcpu(p->offcpu);
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
			fr_set_err(err, errlen, "%s: cannot map the perf ring of cpu %d (%zu KiB): %s",
				   name, cpus[i], r->data_size / 1024, strerror(errno));
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

/* ---- the sched_switch tracepoint ------------------------------------- */

/* tracefs where it is mounted today, then where older systems had it. */
static const char *const tracefs_roots[] = {
	"/sys/kernel/tracing",
	"/sys/kernel/debug/tracing",
};

/* Reads one line of a small file; returns 0 or -errno. */
static int read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		ret = ferror(f) ? -EIO : -ENODATA;
	fclose(f);
	return ret;
}

/* Finds prev_state in the tracepoint's format file ("\tfield:long
 * prev_state;\toffset:40;\tsize:8;\tsigned:1;" lines): the layout differs
 * between kernel versions and configurations, so offsets are never assumed.
 * The task leaving is the sample's own tid, so nothing else is needed. */
static int read_switch_format(const char *path, struct switch_format *fmt)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int found = 0;

	if (!f)
		return -errno;
	memset(fmt, 0, sizeof(*fmt));
	while (fgets(line, sizeof(line), f)) {
		const char *decl = strstr(line, "\tfield:"), *semi, *name, *end, *o, *s;
		unsigned off, size;
		size_t nlen;

		/* Continuation chunks of the long "print fmt" line never start
		 * with a tab and "field:". */
		if (decl != line)
			continue;
		semi = strchr(decl, ';');
		o = semi ? strstr(semi, "offset:") : NULL;
		s = semi ? strstr(semi, "size:") : NULL;
		if (!o || !s || sscanf(o, "offset:%u", &off) != 1 ||
		    sscanf(s, "size:%u", &size) != 1)
			continue;
		end = semi;
		if (end > decl && end[-1] == ']') /* "char prev_comm[16]" */
			while (end > decl && *end != '[')
				end--;
		name = end;
		while (name > decl && name[-1] != ' ')
			name--;
		nlen = (size_t)(end - name);
		if (nlen == 10 && memcmp(name, "prev_state", 10) == 0 && (size == 4 || size == 8)) {
			fmt->prev_state = off;
			fmt->prev_state_size = size;
			fmt->min_size = off + size;
			found = 1;
		}
	}
	fclose(f);
	return found ? 0 : -EPROTO;
}

/* Mounts tracefs at its usual place when nothing is mounted there (as
 * perf does): a machine that never used tracing has the directory but not
 * the file system. Returns 0 when it mounted it, -errno otherwise. */
static int mount_tracefs(void)
{
	struct stat st;

	if (stat("/sys/kernel/tracing/events", &st) == 0)
		return -EEXIST; /* mounted; the tracepoint is missing */
	if (mount("tracefs", "/sys/kernel/tracing", "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  NULL) < 0)
		return -errno;
	fr_log_info("mounted tracefs at /sys/kernel/tracing for the sched:sched_switch tracepoint");
	return 0;
}

static int find_sched_switch_once(uint64_t *id, struct switch_format *fmt, char *err,
				  size_t errlen);

/* Finds sched:sched_switch: its id for attr.config and its field layout,
 * mounting tracefs first if it is not mounted. */
static int find_sched_switch(uint64_t *id, struct switch_format *fmt, char *err, size_t errlen)
{
	int ret = find_sched_switch_once(id, fmt, err, errlen), m;

	if (ret != -ENOENT)
		return ret;
	m = mount_tracefs();
	if (m == 0)
		return find_sched_switch_once(id, fmt, err, errlen);
	if (m != -EEXIST)
		fr_set_err(err, errlen,
			   "offcpu: the sched:sched_switch tracepoint is not available (tracefs is not "
			   "mounted and mounting it at /sys/kernel/tracing failed: %s)",
			   fr_errno_name(-m));
	return ret;
}

static int find_sched_switch_once(uint64_t *id, struct switch_format *fmt, char *err,
				  size_t errlen)
{
	char path[128], buf[64], first[128] = "";
	int first_err = 0;

	for (size_t i = 0; i < sizeof(tracefs_roots) / sizeof(tracefs_roots[0]); i++) {
		char *end;
		int ret;

		snprintf(path, sizeof(path), "%s/events/sched/sched_switch/id", tracefs_roots[i]);
		ret = read_line(path, buf, sizeof(buf));
		if (ret < 0) {
			/* The first place is where tracefs belongs; say that. */
			if (!first_err) {
				first_err = -ret;
				snprintf(first, sizeof(first), "%s", path);
			}
			continue;
		}
		*id = strtoull(buf, &end, 10);
		if (end == buf) {
			fr_set_err(err, errlen, "offcpu: %s does not hold a tracepoint id", path);
			return -EPROTO;
		}
		snprintf(path, sizeof(path), "%s/events/sched/sched_switch/format",
			 tracefs_roots[i]);
		ret = read_switch_format(path, fmt);
		if (ret < 0) {
			fr_set_err(err, errlen,
				   "offcpu: cannot read the layout of sched:sched_switch from %s (%s)",
				   path, ret == -EPROTO ? "prev_state missing"
							: fr_errno_name(-ret));
			return ret;
		}
		return 0;
	}
	fr_set_err(err, errlen,
		   "offcpu: the sched:sched_switch tracepoint is not available "
		   "(cannot read %s: %s)", first, fr_errno_name(first_err));
	return -first_err;
}

static int offcpu_new(struct offcpu **out)
{
	struct offcpu *o = calloc(1, sizeof(*o));

	if (!o)
		return -ENOMEM;
	o->index = calloc(OFFCPU_INDEX, sizeof(*o->index));
	o->free_list = calloc(OFFCPU_ENTRIES, sizeof(*o->free_list));
	o->entries = mmap(NULL, OFFCPU_ENTRIES * sizeof(*o->entries), PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (o->entries == MAP_FAILED)
		o->entries = NULL;
	if (!o->index || !o->free_list || !o->entries) {
		free_offcpu(o);
		return -ENOMEM;
	}
	*out = o;
	return 0;
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

int fr_perf_open(struct fr_perf **out, const struct fr_perf_config *cfg, char *err,
		 size_t errlen)
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
	if (cfg->event != FR_EVENT_OFFCPU) {
		if (event_attr(cfg->event, &type, &config) < 0) {
			fr_set_err(err, errlen, "%s: this event cannot be sampled by this version",
				   name);
			return -EOPNOTSUPP;
		}
		if (cfg->hz == 0 || cfg->hz > 1000000) {
			fr_set_err(err, errlen, "%s: rate must be 1..1000000 Hz, got %u", name,
				   cfg->hz);
			return -EINVAL;
		}
	}
	p = perf_new(cfg);
	if (!p)
		return -ENOMEM;

	base_attr(&attr);
	if (cfg->event == FR_EVENT_OFFCPU) {
		struct switch_format fmt;

		ret = find_sched_switch(&config, &fmt, err, errlen);
		if (ret < 0)
			goto err_close;
		ret = offcpu_new(&p->offcpu);
		if (ret < 0)
			goto err_close;
		p->offcpu->fmt = fmt;
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
		attr.type = PERF_TYPE_TRACEPOINT;
		attr.config = config;
		attr.sample_period = 1;
		attr.sample_type |= PERF_SAMPLE_RAW;
		attr.context_switch = 1;
		pages = OFFCPU_PAGES;
	} else {
		attr.type = type;
		attr.config = config;
		if (cfg->event == FR_EVENT_CPU) {
			/* A fixed period: the weight is exactly 1e9/hz ns. */
			attr.sample_period = 1000000000ull / cfg->hz;
		} else {
			/* Counts of unknown rate: the kernel adapts the period
			 * to hit hz samples a second and reports it in each
			 * sample, which is then the sample's weight. */
			attr.freq = 1;
			attr.sample_freq = cfg->hz;
		}
		if (hardware)
			attr.precise_ip = 3; /* the least skid the PMU offers */
		pages = ring_pages(cfg->hz, p->page_size);
	}
	ret = open_rings(p, &attr, pages, name, hardware, err, errlen);
	if (ret == 0 && p->offcpu)
		ret = drain_in_time_order(p);
	if (ret < 0)
		goto err_close;
	*out = p;
	return 0;

err_close:
	if (ret == -ENOMEM && err && errlen && !err[0])
		fr_set_err(err, errlen, "%s: out of memory", name);
	fr_perf_close(p);
	return ret;
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


int fr_perf_enable(struct fr_perf *p, int enable)
{
	for (unsigned i = 0; i < p->ncpus; i++)
		if (ioctl(p->rings[i].fd, enable ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE,
			  0) < 0)
			return -errno;
	return 0;
}

int fr_perf_set_hz(struct fr_perf *p, uint32_t hz)
{
	uint64_t arg;

	if (p->offcpu || p->sideband_only) {
		/* Nothing is sampled at a rate: keep the number for callers. */
		p->hz = hz;
		return 0;
	}
	if (hz == 0 || hz > 1000000)
		return -EINVAL;
	/* The ioctl's argument is the period of a fixed-period event and the
	 * frequency of a frequency-mode one (attr.freq). */
	arg = p->cfg.event == FR_EVENT_CPU ? 1000000000ull / hz : hz;
	for (unsigned i = 0; i < p->ncpus; i++) {
		if (ioctl(p->rings[i].fd, PERF_EVENT_IOC_PERIOD, &arg) < 0) {
			int ret = -errno;
			uint64_t old = p->cfg.event == FR_EVENT_CPU ? 1000000000ull / p->hz : p->hz;

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

unsigned fr_perf_nfds(const struct fr_perf *p)
{
	return p->ncpus;
}

int fr_perf_fd(const struct fr_perf *p, unsigned i)
{
	return p->rings[i].fd;
}

/* ---- decoding ----------------------------------------------------------- */

/* Decodes a sample record: IP, TID, TIME, CPU, PERIOD, CALLCHAIN and, when
 * the source asked for it, RAW, in this order. Frames go to p->ips, kernel
 * frames first, then user frames, each leaf first. Returns 0, 1 for a
 * sample of tid 0 (the idle task, a CPU with nothing to run, or a task
 * outside the recorder's pid namespace, which no record would name): not
 * recorded, so its callchain is not read; or -EBADMSG when the record is
 * shorter than its fields say. */
static int decode_sample(struct fr_perf *p, const struct perf_event_header *h,
			 struct sample_view *v)
{
	const struct {
		uint64_t ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period;
		uint64_t nr;
	} *s = (const void *)(h + 1);
	const uint64_t *chain = (const uint64_t *)(s + 1);
	const char *end = (const char *)h + h->size;
	uint64_t context = PERF_CONTEXT_KERNEL;
	uint16_t nk = 0, nu = 0, nframes;
	uint64_t user[FR_MAX_FRAMES];

	if ((const char *)(s + 1) > end || s->nr > (uint64_t)(end - (const char *)chain) / 8)
		return -EBADMSG;
	if (s->tid == 0)
		return 1;
	v->pid = s->pid;
	v->tid = s->tid;
	v->time = s->time;
	v->cpu = s->cpu;
	v->period = s->period;
	v->raw = NULL;
	v->raw_size = 0;
	if (p->offcpu) {
		const char *raw = (const char *)(chain + s->nr);
		uint32_t size;

		if (raw + sizeof(size) > end)
			return -EBADMSG;
		memcpy(&size, raw, sizeof(size));
		if (size > (size_t)(end - raw) - sizeof(size))
			return -EBADMSG;
		v->raw = (const unsigned char *)raw + sizeof(size);
		v->raw_size = size;
	}

	/* The callchain interleaves context markers with addresses. */
	for (uint64_t i = 0; i < s->nr; i++) {
		uint64_t ip = chain[i];
		if (ip >= (uint64_t)PERF_CONTEXT_MAX) {
			context = ip;
			continue;
		}
		if (context == PERF_CONTEXT_KERNEL) {
			if (nk < FR_MAX_FRAMES)
				p->ips[nk++] = ip;
		} else if (context == PERF_CONTEXT_USER) {
			if (nu < FR_MAX_FRAMES)
				user[nu++] = ip;
		}
	}
	if (nk == 0 && nu == 0 && s->ip) {
		/* No callchain (e.g. a kernel that could not walk): the IP alone. */
		if (h->misc & PERF_RECORD_MISC_KERNEL)
			p->ips[nk++] = s->ip;
		else
			user[nu++] = s->ip;
	}
	nframes = nk;
	for (uint16_t i = 0; i < nu && nframes < FR_MAX_FRAMES; i++)
		p->ips[nframes++] = user[i];
	v->nr_kernel = nk;
	v->nr_frames = nframes;
	return 0;
}

static void handle_sample(struct fr_perf *p, const struct sample_view *v,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	struct fr_sample out;

	out.time_ns = (int64_t)v->time + clock_offset;
	out.pid = v->pid;
	out.tid = v->tid;
	out.cpu = v->cpu;
	out.event = p->cfg.event;
	/* cpu: the period field keeps reporting the period the event was
	 * opened with after PERF_EVENT_IOC_PERIOD, so weight by the rate we
	 * set. Frequency mode: the period is what the kernel chose for this
	 * sample, the count it stands for. */
	out.weight = p->cfg.event == FR_EVENT_CPU ? 1000000000ull / p->hz : v->period;
	out.rate_hz = p->hz;
	out.nr_kernel = v->nr_kernel;
	out.nr_frames = v->nr_frames;
	out.ips = p->ips;
	cb->sample(cb->arg, &out);
}

/* ---- offcpu: pairing switch-outs with switch-ins ------------------------ */

static uint32_t hash_tid(uint32_t tid)
{
	return fr_hash_u32(tid) & (OFFCPU_INDEX - 1);
}

/* The index slot holding `key`, or -1. */
static long index_find(const struct offcpu *o, uint32_t key)
{
	for (uint32_t i = hash_tid(key);; i = (i + 1) & (OFFCPU_INDEX - 1)) {
		uint32_t e = o->index[i];

		if (!e)
			return -1;
		if (o->entries[e - 1].tid == key)
			return i;
	}
}

/* Frees the entry in index slot `slot`: later members of its probe
 * cluster that hash at or before the hole move back into it. */
static void index_remove(struct offcpu *o, uint32_t slot)
{
	const uint32_t mask = OFFCPU_INDEX - 1;
	uint32_t hole = slot;

	o->free_list[o->nfree++] = o->index[slot] - 1;
	for (uint32_t j = (slot + 1) & mask; o->index[j]; j = (j + 1) & mask) {
		uint32_t home = hash_tid(o->entries[o->index[j] - 1].tid);

		/* j may move to the hole unless its home lies cyclically in
		 * (hole, j]: then the hole is before where it may live. */
		if (((j - home) & mask) >= ((j - hole) & mask)) {
			o->index[hole] = o->index[j];
			hole = j;
		}
	}
	o->index[hole] = 0;
}

/* A free entry, filed under `key` (which must not be in the index). When
 * every entry is in use, the oldest of a few is dropped and counted. */
static struct offcpu_entry *entry_add(struct offcpu *o, uint32_t key)
{
	uint32_t n, i;

	if (o->nfree == 0 && o->used < OFFCPU_ENTRIES) {
		n = o->used++;
	} else {
		if (o->nfree == 0) {
			/* More threads switched out than we can follow. */
			uint32_t victim = o->hand;

			for (uint32_t k = 1; k < OFFCPU_EVICT_SCAN; k++) {
				uint32_t c = (o->hand + k) % OFFCPU_ENTRIES;
				if (o->entries[c].time < o->entries[victim].time)
					victim = c;
			}
			o->hand = (o->hand + OFFCPU_EVICT_SCAN) % OFFCPU_ENTRIES;
			index_remove(o, (uint32_t)index_find(o, o->entries[victim].tid));
			o->evicted++;
		}
		n = o->free_list[--o->nfree];
	}
	for (i = hash_tid(key); o->index[i]; i = (i + 1) & (OFFCPU_INDEX - 1))
		;
	o->index[i] = n + 1;
	o->entries[n].tid = key;
	return &o->entries[n];
}

/* Hands over one offcpu sample: the time it was switched out, stamped
 * with the time it came back. */
static void offcpu_emit(const struct fr_perf_handler *cb, int64_t clock_offset, uint64_t in_time,
			uint64_t out_time, uint32_t pid, uint32_t tid, uint32_t cpu,
			const uint64_t *ips, uint16_t nr_kernel, uint16_t nr_frames)
{
	struct fr_sample s = {
		.time_ns = (int64_t)in_time + clock_offset,
		.pid = pid,
		.tid = tid,
		.cpu = cpu,
		.event = FR_EVENT_OFFCPU,
		.weight = in_time - out_time,
		.rate_hz = 0,
		.nr_kernel = nr_kernel,
		.nr_frames = nr_frames,
		.ips = ips,
	};

	cb->sample(cb->arg, &s);
}

static int pair_believable(uint64_t out_time, uint64_t in_time)
{
	return in_time > out_time && in_time - out_time <= (uint64_t)OFFCPU_MAX_GAP_NS;
}

/* Thread v->tid left the CPU at v->time with the stack in p->ips. */
static void switched_out(struct fr_perf *p, const struct sample_view *v, uint64_t state,
			 const struct fr_perf_handler *cb, int64_t clock_offset)
{
	struct offcpu *o = p->offcpu;
	long slot = index_find(o, v->tid);
	struct offcpu_entry *e = slot >= 0 ? &o->entries[o->index[slot] - 1] : NULL;

	if (state & SCHED_STATE_EXITING) {
		/* Its last switch: nothing will pair with it. */
		if (e)
			index_remove(o, (uint32_t)slot);
		return;
	}
	if (e && e->switched_in) {
		/* The switch-in was read first (it happened on a CPU whose
		 * ring was read earlier). It pairs with this switch-out only
		 * if it came after it; one before belongs to an earlier
		 * switch-out that was lost. */
		if (pair_believable(v->time, e->time)) {
			offcpu_emit(cb, clock_offset, e->time, v->time, v->pid, v->tid, v->cpu,
				    p->ips, v->nr_kernel, v->nr_frames);
			index_remove(o, (uint32_t)slot);
			return;
		}
	} else if (e && e->time > v->time) {
		return; /* a newer switch-out is already waiting */
	}
	/* An older switch-out still waiting lost its switch-in: replace it. */
	if (!e)
		e = entry_add(o, v->tid);
	e->switched_in = 0;
	e->time = v->time;
	e->pid = v->pid;
	e->cpu = v->cpu;
	e->nr_kernel = v->nr_kernel;
	e->nr_frames = v->nr_frames;
	memcpy(e->ips, p->ips, v->nr_frames * sizeof(e->ips[0]));
}

/* Thread `key` came back to a CPU at `time`. */
static void switched_in(struct fr_perf *p, uint64_t time, uint32_t key,
			const struct fr_perf_handler *cb, int64_t clock_offset)
{
	struct offcpu *o = p->offcpu;
	long slot = index_find(o, key);
	struct offcpu_entry *e = slot >= 0 ? &o->entries[o->index[slot] - 1] : NULL;

	if (e && !e->switched_in) {
		if (pair_believable(e->time, time)) {
			offcpu_emit(cb, clock_offset, time, e->time, e->pid, e->tid, e->cpu,
				    e->ips, e->nr_kernel, e->nr_frames);
			index_remove(o, (uint32_t)slot);
		} else if (time > e->time) {
			index_remove(o, (uint32_t)slot); /* too long ago to believe */
		}
		/* A switch-in before the waiting switch-out belongs to an
		 * earlier switch-out that was lost: the waiting one stays. */
		return;
	}
	/* Read before its switch-out: remember when, the newest one wins. */
	if (!e)
		e = entry_add(o, key);
	else if (e->time > time)
		return;
	e->switched_in = 1;
	e->time = time;
	e->nr_kernel = e->nr_frames = 0;
}

static uint64_t raw_field(const unsigned char *raw, uint32_t off, uint32_t size)
{
	uint32_t v32;
	uint64_t v64;

	if (size == 8) {
		memcpy(&v64, raw + off, sizeof(v64));
		return v64;
	}
	memcpy(&v32, raw + off, sizeof(v32));
	return v32;
}

/* A sched_switch sample: its task (the sample's tid) leaves the CPU. */
static void handle_switch(struct fr_perf *p, const struct sample_view *v,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	const struct switch_format *f = &p->offcpu->fmt;

	if (!v->raw || v->raw_size < f->min_size)
		return;
	switched_out(p, v, raw_field(v->raw, f->prev_state, f->prev_state_size), cb,
		     clock_offset);
}

/* ---- records ------------------------------------------------------------ */

static void handle_record(struct fr_perf *p, const struct perf_event_header *h,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	const char *body = (const char *)(h + 1);
	const char *end = (const char *)h + h->size;

	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		struct sample_view v;

		if (!cb->sample || p->sideband_only || decode_sample(p, h, &v) != 0)
			break;
		if (p->offcpu)
			handle_switch(p, &v, cb, clock_offset);
		else
			handle_sample(p, &v, cb, clock_offset);
		break;
	}
	case PERF_RECORD_MMAP2: {
		const struct {
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			union {
				struct {
					uint32_t maj, min;
					uint64_t ino, ino_generation;
				};
				struct {
					uint8_t build_id_size, reserved1;
					uint16_t reserved2;
					uint8_t build_id[20];
				};
			};
			uint32_t prot, flags;
			char filename[];
		} *m = (const void *)body;
		char path[4096];
		size_t maxlen;
		uint8_t bid_len = 0;

		if (!cb->mmap || (const char *)(m + 1) >= end)
			break;
		maxlen = (size_t)(end - m->filename);
		if (maxlen >= sizeof(path))
			maxlen = sizeof(path) - 1;
		memcpy(path, m->filename, maxlen);
		path[maxlen] = '\0';
		if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID)
			bid_len = m->build_id_size <= 20 ? m->build_id_size : 20;
		cb->mmap(cb->arg, m->pid, m->addr, m->len, m->pgoff, m->prot, path,
			 bid_len ? m->build_id : NULL, bid_len);
		break;
	}
	case PERF_RECORD_COMM: {
		const struct {
			uint32_t pid, tid;
			char comm[];
		} *c = (const void *)body;
		char comm[17];
		size_t maxlen;

		if (!cb->comm || (const char *)(c + 1) >= end)
			break;
		maxlen = (size_t)(end - c->comm);
		if (maxlen > 16)
			maxlen = 16;
		memcpy(comm, c->comm, maxlen);
		comm[maxlen] = '\0';
		cb->comm(cb->arg, c->pid, c->tid, comm, !!(h->misc & PERF_RECORD_MISC_COMM_EXEC));
		break;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		const struct {
			uint32_t pid, ppid, tid, ptid;
			uint64_t time;
		} *f = (const void *)body;

		if ((const char *)(f + 1) > end)
			break;
		if (h->type == PERF_RECORD_FORK && cb->fork)
			cb->fork(cb->arg, f->pid, f->ppid, f->tid, f->ptid,
				 (int64_t)f->time + clock_offset);
		else if (h->type == PERF_RECORD_EXIT && cb->exit)
			cb->exit(cb->arg, f->pid, f->tid, (int64_t)f->time + clock_offset);
		break;
	}
	case PERF_RECORD_LOST: {
		const struct {
			uint64_t id, lost;
		} *l = (const void *)body;

		if ((const char *)(l + 1) <= end && cb->lost)
			cb->lost(cb->arg, p->cfg.event, l->lost);
		break;
	}
	case PERF_RECORD_THROTTLE:
		if (cb->throttle)
			cb->throttle(cb->arg, p->cfg.event);
		break;
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		/* next_prev_pid/tid, then the sample_id trailer (TID, TIME,
		 * CPU) of the task running when it was written: for an "in"
		 * record, the task switched in. */
		const struct {
			uint32_t next_prev_pid, next_prev_tid;
			uint32_t pid, tid;
			uint64_t time;
			uint32_t cpu, res;
		} *sw = (const void *)body;

		if (!p->offcpu || !cb->sample || (h->misc & PERF_RECORD_MISC_SWITCH_OUT) ||
		    (const char *)(sw + 1) > end || sw->tid == 0)
			break;
		switched_in(p, sw->time, sw->tid, cb, clock_offset);
		break;
	}
	default:
		break;
	}
}

/* The record at `tail` of ring `r`, or NULL when what is there cannot be
 * framed. A record that wraps around the end of the ring is copied to
 * p->wrap_buf (records are at most 64 KiB); the header itself never wraps,
 * as records are 8-byte aligned and the ring a multiple of 8 bytes. */
static const struct perf_event_header *ring_record(struct fr_perf *p, const struct cpu_ring *r,
						   uint64_t tail, uint64_t head)
{
	unsigned char *data = (unsigned char *)r->base + p->page_size;
	uint64_t mask = r->data_size - 1;
	const struct perf_event_header *hdr = (const void *)&data[tail & mask];
	size_t size = hdr->size, first = r->data_size - (tail & mask);

	if (size < sizeof(*hdr) || size > head - tail) {
		fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
				   "cpu %d: malformed perf record of %zu bytes; skipping %llu bytes",
				   r->cpu, size, (unsigned long long)(head - tail));
		return NULL;
	}
	if (size > first) {
		memcpy(p->wrap_buf, hdr, first);
		memcpy(p->wrap_buf + first, data, size - first);
		hdr = (const void *)p->wrap_buf;
	}
	return hdr;
}

/* The time of the record at r->tail without copying it: a sample's TIME
 * field, or the TIME of another record's sample_id trailer. Both are
 * 8-byte aligned, so neither straddles the end of the ring. Records too
 * short to carry one sort first. */
static uint64_t ring_record_time(const struct fr_perf *p, const struct cpu_ring *r)
{
	const unsigned char *data = (const unsigned char *)r->base + p->page_size;
	uint64_t mask = r->data_size - 1, pos, t;
	const struct perf_event_header *hdr = (const void *)&data[r->tail & mask];

	if (hdr->size < sizeof(*hdr) + 3 * sizeof(uint64_t))
		return 0;
	if (hdr->type == PERF_RECORD_SAMPLE)
		pos = r->tail + sizeof(*hdr) + 2 * sizeof(uint64_t); /* after IP, TID */
	else
		pos = r->tail + hdr->size - 2 * sizeof(uint64_t); /* TID, [TIME], CPU */
	memcpy(&t, &data[pos & mask], sizeof(t));
	return t;
}

static int ring_before(const struct fr_perf *p, unsigned a, unsigned b)
{
	return p->rings[a].next_time < p->rings[b].next_time;
}

static void heap_down(struct fr_perf *p, unsigned n, unsigned i)
{
	unsigned *h = p->heap;

	for (;;) {
		unsigned l = 2 * i + 1, r = l + 1, m = i, tmp;

		if (l < n && ring_before(p, h[l], h[m]))
			m = l;
		if (r < n && ring_before(p, h[r], h[m]))
			m = r;
		if (m == i)
			return;
		tmp = h[i];
		h[i] = h[m];
		h[m] = tmp;
		i = m;
	}
}

/* Gives the space up to r->tail back to the kernel. */
static void publish_tail(struct cpu_ring *r)
{
	struct perf_event_mmap_page *meta = r->base;

	__atomic_store_n(&meta->data_tail, r->tail, __ATOMIC_RELEASE);
}

/* Drains all rings merged by time (a k-way merge over a heap of rings).
 * Each ring is in time order on its own; merged, a thread's switch-in on
 * one CPU comes after its switch-out on another, and a process's exec
 * after its fork, whatever order the rings are in. Only records written between the first and the last head read
 * can still come out of order, which the pairing tolerates. */
static uint64_t drain_ordered(struct fr_perf *p, const struct fr_perf_handler *h,
			      int64_t clock_offset)
{
	uint64_t records = 0;
	unsigned n = 0;

	for (unsigned i = 0; i < p->ncpus; i++) {
		struct cpu_ring *r = &p->rings[i];
		struct perf_event_mmap_page *meta = r->base;

		r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		r->tail = meta->data_tail;
		if (r->tail < r->head) {
			r->next_time = ring_record_time(p, r);
			p->heap[n++] = i;
		}
	}
	for (unsigned i = n / 2; i-- > 0;)
		heap_down(p, n, i);
	while (n > 0) {
		struct cpu_ring *r = &p->rings[p->heap[0]];
		const struct perf_event_header *hdr = ring_record(p, r, r->tail, r->head);

		if (hdr) {
			handle_record(p, hdr, h, clock_offset);
			records++;
			r->tail += hdr->size;
		} else {
			r->tail = r->head;
		}
		if (r->tail < r->head) {
			r->next_time = ring_record_time(p, r);
		} else {
			publish_tail(r);
			p->heap[0] = p->heap[--n];
		}
		heap_down(p, n, 0);
	}
	if (p->offcpu && p->offcpu->evicted && h->lost) {
		/* Switch-outs dropped from a full table: samples lost. */
		h->lost(h->arg, p->cfg.event, p->offcpu->evicted);
		p->offcpu->evicted = 0;
	}
	return records;
}

uint64_t fr_perf_drain(struct fr_perf *p, const struct fr_perf_handler *h, int64_t clock_offset)
{
	uint64_t records = 0;

	if (p->heap)
		return drain_ordered(p, h, clock_offset);
	for (unsigned i = 0; i < p->ncpus; i++) {
		struct cpu_ring *r = &p->rings[i];
		struct perf_event_mmap_page *meta = r->base;

		r->head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		r->tail = meta->data_tail;
		while (r->tail < r->head) {
			const struct perf_event_header *hdr = ring_record(p, r, r->tail, r->head);

			if (!hdr) {
				r->tail = r->head;
				break;
			}
			handle_record(p, hdr, h, clock_offset);
			r->tail += hdr->size;
			records++;
		}
		publish_tail(r);
	}
	return records;
}
