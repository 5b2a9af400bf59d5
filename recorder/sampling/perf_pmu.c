/* perf_event sources: what a hardware counter changes about sampling.
 *
 * - The attr of a sampling event: a fixed period (period mode, and cpu
 *   always) or the kernel's frequency mode, precise_ip asked for on
 *   hardware events, and the enabled and running times in read_format.
 * - Multiplexing: a PMU has few counters; when more events are enabled
 *   than it has, the kernel rotates them and each counts only part of the
 *   time, so its samples stand for only part of what happened. Before a
 *   ring is drained its counter is read (value, TOTAL_TIME_ENABLED,
 *   TOTAL_TIME_RUNNING); the samples drained are scaled by how much longer
 *   the event was enabled than running since the drain before, the way
 *   `perf stat` scales counts, and counted, so status says so rather than
 *   showing a silently smaller profile.
 * - The precise IP: with precise_ip > 0 (PEBS, IBS) the sample's IP is
 *   the instruction that counted, but the callchain starts where the
 *   interrupt landed, some instructions (or a system call) later. The
 *   leaf is made the precise IP here.
 *
 * The arithmetic (fr_perf_mux_scale, fr_perf_precise_leaf) has no state,
 * so tests/unit/test_pmu_samples.c checks it alone.
 */
#include "recorder/sampling/perf_int.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/util/time.h"

void fr_perf_sampling_attr(struct perf_event_attr *attr, const struct fr_perf_config *cfg,
			   uint32_t type, uint64_t config, int hardware)
{
	attr->type = type;
	attr->config = config;
	if (cfg->period) {
		/* Period mode: every sample stands for exactly `period`
		 * events (ns for cpu), so the record need not say it. Nor
		 * may it: a software event asked for PERF_SAMPLE_PERIOD
		 * with a fixed period makes a sample of every event
		 * (perf_swevent_event), whatever the period. */
		attr->sample_period = cfg->period;
		attr->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	} else if (cfg->event == FR_EVENT_CPU) {
		/* A fixed period: the weight is exactly 1e9/hz ns. */
		attr->sample_period = FR_NS_PER_S / cfg->hz;
	} else {
		/* Counts of unknown rate: the kernel adapts the period
		 * to hit hz samples a second and reports it in each
		 * sample, which is then the sample's weight. */
		attr->freq = 1;
		attr->sample_freq = cfg->hz;
	}
	if (FR_EVENT_IS_RAW(cfg->event) || FR_EVENT_IS_RAWX(cfg->event)) {
		/* All three words of a raw event (core/store/sample_raw.c). */
		struct fr_event_raw raw;

		if (fr_event_raw_get(cfg->event, &raw) == 0) {
			attr->config = raw.config;
			attr->config1 = raw.config1;
			attr->config2 = raw.config2;
		}
	}
	if (hardware)
		attr->precise_ip = 3; /* the least skid the PMU offers */
	/* read() of the counter gives how long it was enabled and how long
	 * it really counted: less when multiplexed. */
	attr->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
}

uint64_t fr_perf_mux_scale(uint64_t weight, uint64_t enabled, uint64_t running)
{
	unsigned __int128 v;

	if (running == 0 || running >= enabled)
		return weight;
	v = (unsigned __int128)weight * enabled / running;
	return v > UINT64_MAX ? UINT64_MAX : (uint64_t)v;
}

void fr_perf_read_times(struct fr_perf *p, struct cpu_ring *r)
{
	uint64_t v[3]; /* value, time enabled, time running */
	ssize_t n;

	r->d_enabled = r->d_running = 0;
	if (r->fd < 0)
		return;
	n = read(r->fd, v, sizeof(v));
	if (n != (ssize_t)sizeof(v) || v[1] < r->enabled || v[2] < r->running) {
		__atomic_add_fetch(&p->pmu.reads_failed, 1, __ATOMIC_RELAXED);
		return;
	}
	r->d_enabled = v[1] - r->enabled;
	r->d_running = v[2] - r->running;
	r->enabled = v[1];
	r->running = v[2];
	__atomic_add_fetch(&p->pmu.enabled_ns, r->d_enabled, __ATOMIC_RELAXED);
	__atomic_add_fetch(&p->pmu.running_ns, r->d_running, __ATOMIC_RELAXED);
}

/* Inserts `ip` at position `at` of the `*n` frames, dropping the root
 * when the stack is full. */
static void insert_frame(uint64_t *ips, uint16_t *n, uint16_t cap, uint16_t at, uint64_t ip)
{
	uint16_t keep = *n < cap ? *n : (uint16_t)(cap - 1);

	if (cap == 0 || at > keep)
		return;
	memmove(ips + at + 1, ips + at, (size_t)(keep - at) * sizeof(*ips));
	ips[at] = ip;
	*n = (uint16_t)(keep + 1);
}

void fr_perf_precise_leaf(uint64_t *ips, uint16_t *nframes, uint16_t *nr_kernel, uint16_t cap,
			  uint64_t ip, int kernel_ip)
{
	uint16_t nk = *nr_kernel, n = *nframes;

	if (!ip)
		return;
	if (kernel_ip) {
		if (nk > 0 && !FR_FRAME_IS_MARK(ips[0])) {
			ips[0] = ip;
			return;
		}
		insert_frame(ips, nframes, cap, 0, ip);
		if (*nr_kernel < *nframes)
			(*nr_kernel)++;
		return;
	}
	/* A user IP: the event happened in user mode; kernel frames are
	 * where the interrupt skidded to (a system call entered after). */
	if (nk > 0) {
		memmove(ips, ips + nk, (size_t)(n - nk) * sizeof(*ips));
		n = (uint16_t)(n - nk);
		*nr_kernel = 0;
	}
	*nframes = n;
	if (n > 0 && !FR_FRAME_IS_MARK(ips[0]))
		ips[0] = ip;
	else
		insert_frame(ips, nframes, cap, 0, ip);
}

int fr_perf_set_period(struct fr_perf *p, uint64_t period)
{
	if (!period || !p->period || p->offcpu || p->sideband_only)
		return -EINVAL;
	for (unsigned i = 0; i < p->ncpus; i++) {
		if (ioctl(p->rings[i].fd, PERF_EVENT_IOC_PERIOD, &period) < 0) {
			int ret = -errno;

			/* Samples carry one period: put back the CPUs changed. */
			while (i-- > 0)
				ioctl(p->rings[i].fd, PERF_EVENT_IOC_PERIOD, &p->period);
			return ret;
		}
	}
	p->period = period;
	return 0;
}

uint64_t fr_perf_period(const struct fr_perf *p)
{
	return p->period;
}

void fr_perf_pmu_stats(const struct fr_perf *p, struct fr_perf_pmu_stats *out)
{
	const struct fr_perf_pmu_stats *in = &p->pmu;

	out->precise_asked = in->precise_asked;
	out->precise_ip = in->precise_ip;
	out->enabled_ns = __atomic_load_n(&in->enabled_ns, __ATOMIC_RELAXED);
	out->running_ns = __atomic_load_n(&in->running_ns, __ATOMIC_RELAXED);
	out->scaled_samples = __atomic_load_n(&in->scaled_samples, __ATOMIC_RELAXED);
	out->reads_failed = __atomic_load_n(&in->reads_failed, __ATOMIC_RELAXED);
}
