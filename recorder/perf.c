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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

struct cpu_ring {
	int fd;
	int cpu;
	void *base;       /* metadata page + data pages */
	size_t data_size; /* power of two */
};

struct fr_perf {
	struct fr_perf_config cfg;
	uint32_t hz;
	unsigned ncpus;
	struct cpu_ring *rings;
	size_t page_size;
	/* Records that wrap around the end of a ring are copied here. */
	unsigned char wrap_buf[65536];
	uint64_t ips[FR_MAX_FRAMES];
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

/* Kernel type/config for an event id; -ENOENT when the id is not a
 * fixed perf event (offcpu and raw are set up elsewhere). */
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

static const char *errno_name(int e)
{
	switch (e) {
	case ENOENT: return "ENOENT";
	case EOPNOTSUPP: return "EOPNOTSUPP";
	case EACCES: return "EACCES";
	case EPERM: return "EPERM";
	case EINVAL: return "EINVAL";
	case EMFILE: return "EMFILE";
	case ENODEV: return "ENODEV";
	case EBUSY: return "EBUSY";
	default: return "error";
	}
}

static void describe_open_error(char *err, size_t errlen, uint32_t event, uint32_t type, int e)
{
	const char *name = fr_event_name(event);

	if (type == PERF_TYPE_HARDWARE && (e == ENOENT || e == EOPNOTSUPP || e == ENODEV))
		snprintf(err, errlen,
			 "%s: hardware counters are not available on this machine "
			 "(perf_event_open: %s)", name, errno_name(e));
	else if (e == EACCES || e == EPERM)
		snprintf(err, errlen,
			 "%s: not permitted to sample the whole machine (perf_event_open: %s); "
			 "run flightrecd as root or with CAP_PERFMON", name, errno_name(e));
	else
		snprintf(err, errlen, "%s: cannot open the perf event (perf_event_open: %s: %s)",
			 name, errno_name(e), strerror(e));
}

int fr_perf_open(struct fr_perf **out, const struct fr_perf_config *cfg, char *err,
		 size_t errlen)
{
	struct fr_perf *p;
	struct perf_event_attr attr;
	uint32_t type;
	uint64_t config;
	int *cpus = NULL, n, ret;
	size_t pages;

	err[0] = '\0';
	if (cfg->hz == 0 || cfg->hz > 1000000) {
		snprintf(err, errlen, "%s: rate must be 1..1000000 Hz, got %u",
			 fr_event_name(cfg->event), cfg->hz);
		return -EINVAL;
	}
	if (event_attr(cfg->event, &type, &config) < 0) {
		snprintf(err, errlen, "%s: this event cannot be sampled by this version",
			 fr_event_name(cfg->event));
		return -EOPNOTSUPP;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->cfg = *cfg;
	p->hz = cfg->hz;
	p->page_size = (size_t)sysconf(_SC_PAGESIZE);
	n = online_cpus(&cpus);
	if (n < 0) {
		ret = n;
		goto err_free;
	}
	p->rings = calloc((size_t)n, sizeof(*p->rings));
	if (!p->rings) {
		ret = -ENOMEM;
		goto err_free;
	}
	pages = ring_pages(cfg->hz, p->page_size);

	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = type;
	attr.config = config;
	if (cfg->event == FR_EVENT_CPU) {
		attr.sample_period = 1000000000ull / cfg->hz;
	} else {
		attr.freq = 1;
		attr.sample_freq = cfg->hz;
	}
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
	attr.disabled = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	attr.sample_id_all = 1;
	attr.watermark = 1;
	attr.wakeup_watermark = (uint32_t)(pages * p->page_size / 2);
	if (cfg->sideband) {
		attr.mmap = 1;
		attr.mmap2 = 1;
		attr.comm = 1;
		attr.comm_exec = 1;
		attr.task = 1;
		attr.build_id = 1;
	}

	for (int i = 0; i < n; i++) {
		struct cpu_ring *r = &p->rings[i];
		long fd = perf_event_open(&attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);

		if (fd < 0 && errno == EINVAL && attr.build_id) {
			/* Kernels before 5.12 have no build ids in MMAP2. */
			attr.build_id = 0;
			fd = perf_event_open(&attr, -1, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		}
		if (fd < 0) {
			ret = -errno;
			describe_open_error(err, errlen, cfg->event, type, errno);
			goto err_close;
		}
		r->fd = (int)fd;
		r->cpu = cpus[i];
		r->data_size = pages * p->page_size;
		r->base = mmap(NULL, r->data_size + p->page_size, PROT_READ | PROT_WRITE,
			       MAP_SHARED, r->fd, 0);
		if (r->base == MAP_FAILED) {
			ret = -errno;
			snprintf(err, errlen, "%s: cannot map the perf ring of cpu %d (%zu KiB): %s",
				 fr_event_name(cfg->event), cpus[i], r->data_size / 1024,
				 strerror(errno));
			r->base = NULL;
			close(r->fd);
			goto err_close;
		}
		p->ncpus++;
	}
	free(cpus);
	*out = p;
	return 0;

err_close:
	fr_perf_close(p);
	free(cpus);
	return ret;
err_free:
	free(cpus);
	free(p->rings);
	free(p);
	return ret;
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
	free(p);
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
	uint64_t period;

	if (hz == 0)
		return -EINVAL;
	period = p->cfg.event == FR_EVENT_CPU ? 1000000000ull / hz : hz;
	for (unsigned i = 0; i < p->ncpus; i++)
		if (ioctl(p->rings[i].fd, PERF_EVENT_IOC_PERIOD, &period) < 0)
			return -errno;
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

static void handle_sample(struct fr_perf *p, const struct perf_event_header *h,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	/* IP, TID, TIME, CPU, PERIOD, CALLCHAIN in this order. */
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
	struct fr_sample out;
	uint64_t context = PERF_CONTEXT_KERNEL;
	uint16_t nk = 0, nu = 0, nframes = 0;
	uint64_t user[FR_MAX_FRAMES];

	if ((const char *)(s + 1) > end || (const char *)(chain + s->nr) > end)
		return;
	if (s->pid == 0 && s->tid == 0)
		return; /* the idle task: a CPU with nothing to run */

	/* The callchain interleaves context markers with addresses; keep
	 * kernel frames first, then user frames, each leaf first. */
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

	out.time_ns = (int64_t)s->time + clock_offset;
	out.pid = s->pid;
	out.tid = s->tid;
	out.cpu = s->cpu;
	out.event = p->cfg.event;
	/* The period field keeps reporting the period the event was opened
	 * with after PERF_EVENT_IOC_PERIOD, so weight by the rate we set. */
	out.weight = p->cfg.event == FR_EVENT_CPU ? 1000000000ull / p->hz : s->period;
	out.rate_hz = p->hz;
	out.nr_kernel = nk;
	out.nr_frames = nframes;
	out.ips = p->ips;
	cb->sample(cb->arg, &out);
}

static void handle_record(struct fr_perf *p, const struct perf_event_header *h,
			  const struct fr_perf_handler *cb, int64_t clock_offset)
{
	const char *body = (const char *)(h + 1);
	const char *end = (const char *)h + h->size;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (cb->sample)
			handle_sample(p, h, cb, clock_offset);
		break;
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
	default:
		break;
	}
}

uint64_t fr_perf_drain(struct fr_perf *p, const struct fr_perf_handler *h, int64_t clock_offset)
{
	uint64_t records = 0;

	for (unsigned i = 0; i < p->ncpus; i++) {
		struct cpu_ring *r = &p->rings[i];
		struct perf_event_mmap_page *meta = r->base;
		unsigned char *data = (unsigned char *)r->base + p->page_size;
		uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = meta->data_tail;
		uint64_t mask = r->data_size - 1;

		while (tail < head) {
			const struct perf_event_header *hdr = (const void *)&data[tail & mask];
			size_t size = hdr->size, first;

			if (size < sizeof(*hdr) || size > head - tail) {
				/* A record we cannot frame: skip what is there. */
				fr_log_ratelimited(FR_LOG_WARN, 10000000000LL,
						   "cpu %d: malformed perf record of %zu bytes; "
						   "skipping %llu bytes", r->cpu, size,
						   (unsigned long long)(head - tail));
				tail = head;
				break;
			}
			first = r->data_size - (tail & mask);
			if (size > first) {
				/* The record wraps around the end of the ring. */
				if (size > sizeof(p->wrap_buf)) {
					tail += size;
					continue;
				}
				memcpy(p->wrap_buf, hdr, first);
				memcpy(p->wrap_buf + first, data, size - first);
				hdr = (const void *)p->wrap_buf;
			}
			handle_record(p, hdr, h, clock_offset);
			tail += size;
			records++;
		}
		__atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
	}
	return records;
}
