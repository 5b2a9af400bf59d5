/* What the perf_event source files share, private to them:
 * recorder/sampling/perf.c opens sources (attrs, perf_event_open, mmap, the source
 * table) and recorder/sampling/perf_drain.c drains their rings and decodes the
 * records. recorder/sampling/perf.h is the public interface.
 */
#ifndef FR_RECORDER_PERF_INT_H
#define FR_RECORDER_PERF_INT_H

#include <stddef.h>
#include <stdint.h>

#include <linux/perf_event.h>
#if defined(__x86_64__)
#include <asm/perf_regs.h>
#else
/* Only x86-64 unwinds with CFI (the configuration refuses "dwarf"
 * elsewhere); these keep the attr code compiling. */
#define PERF_REG_X86_BP 6
#define PERF_REG_X86_SP 7
#define PERF_REG_X86_IP 8
/* recorder/sampling/perf_tracepoint.c: finds sched:sched_switch, its id
 * for attr.config and its field layout, mounting tracefs first if it is
 * not mounted. Returns 0, or -errno with err set. */
int fr_perf_find_sched_switch(uint64_t *id, struct switch_format *fmt, char *err, size_t errlen);

/* recorder/sampling/perf_pmu.c: the attr of a sampling event (period or frequency
 * mode, precise_ip, the times read_format asks for), and the enabled and
 * running times of each CPU's counter read before its ring is drained. */
void fr_perf_sampling_attr(struct perf_event_attr *attr, const struct fr_perf_config *cfg,
			   uint32_t type, uint64_t config, int hardware);
void fr_perf_read_times(struct fr_perf *p, struct cpu_ring *r);

#endif

#include "core/store/sample.h"
#include "recorder/sampling/bpf_offcpu.h"
#include "recorder/sampling/offcpu.h"
#include "recorder/sampling/perf.h"
#include "recorder/sampling/tp_format.h"
#include "recorder/sampling/wake_class.h"

/* Every source asks for these sample fields, in the kernel's order (but
 * PERIOD in period mode, recorder/sampling/perf_pmu.c says why). TID,
 * TIME and CPU also make up the sample_id trailer (sample_id_all) of every
 * other record, which is how the time-ordered drain finds their time: it is
 * the second of the trailer's three u64s. */
#define SAMPLE_TYPE                                                              \
	(PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | \
	 PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN)

/* A source with a stack copy (fr_perf_config.stack_copy) also asks for
 * these, which the kernel writes after CALLCHAIN and RAW: the user
 * registers the unwinder starts from (rbp, rsp, rip, in the mask's bit
 * order) and the copy of the user stack. */
#define SAMPLE_TYPE_UNWIND (PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define SAMPLE_REGS_UNWIND \
	((1ull << PERF_REG_X86_BP) | (1ull << PERF_REG_X86_SP) | (1ull << PERF_REG_X86_IP))

struct cpu_ring {
	int fd;
	int cpu;
	void *base;	  /* metadata page + data pages */
	size_t data_size; /* power of two */
	/* Drain cursor: from data_tail to the data_head read at its start;
	 * next_time orders the rings of a time-ordered drain. */
	uint64_t tail, head, next_time;
	/* Sampling events: the enabled and running times read at the last
	 * drain, and their growth since the one before, which scales the
	 * weights of the samples this drain reads (multiplexing). */
	uint64_t enabled, running;
	uint64_t d_enabled, d_running;
	int64_t times_read_mono; /* a software event's last read of them */
};

/* Where sched_switch keeps the fields we read, from its format file. */
struct switch_format {
	uint32_t prev_state, prev_state_size;
	uint32_t min_size; /* raw data shorter than this is not a sched_switch */
};

struct fr_perf {
	struct fr_perf_config cfg;
	uint32_t hz;
	uint64_t period; /* period mode: the period in force; 0: frequency mode */
	int sideband_only;
	/* The precise_ip level the kernel accepted and its multiplexing
	 * (the ingest thread writes, status reads: relaxed atomics). */
	struct fr_perf_pmu_stats pmu;
	/* The ring being drained (sampling events), for its times. */
	const struct cpu_ring *cur;
	unsigned ncpus;
	struct cpu_ring *rings;
	size_t page_size;
	/* offcpu sources only: the pairing table and the tracepoint's
	 * layout. */
	struct fr_offcpu *offcpu;
	struct switch_format swfmt;
	/* An OOM kills source (fr_perf_open_oom): mark_victim's layout. */
	int oom;
	struct fr_oom_format oomfmt;
	/* offcpu by eBPF (no rings, no pairing table), or why not. */
	struct fr_bpf_offcpu *bpf;
	char bpf_fallback[256];
	/* What the drain did with the switches (the ingest thread writes,
	 * status reads: relaxed atomics). */
	struct fr_perf_offcpu_stats offcpu_stats;
	/* offcpu and the side band: rings ordered by their next record's
	 * time, for drains merged in time order across CPUs. */
	unsigned *heap;
	/* stack_copy sources: how their user stacks ended (atomics). */
	struct fr_perf_unwind_stats unwind;
	/* Records that wrap around the end of a ring are copied here. */
	unsigned char wrap_buf[65536];
	uint64_t ips[FR_MAX_FRAMES];
};

/* recorder/sampling/perf_tracepoint.c: finds sched:sched_switch, its id
 * for attr.config and its field layout, mounting tracefs first if it is
 * not mounted. Returns 0, or -errno with err set. */
int fr_perf_find_sched_switch(uint64_t *id, struct switch_format *fmt, char *err, size_t errlen);

/* recorder/sampling/perf_tracepoint.c: finds oom:mark_victim, its id and
 * layout (tracefs mounted as for sched_switch). Returns 0, or -errno with
 * err set. */
int fr_perf_find_oom(uint64_t *id, struct fr_oom_format *fmt, char *err, size_t errlen);

/* recorder/sampling/perf_drain.c: an OOM source's sample (its RAW data,
 * `size` bytes, CLOCK_MONOTONIC `time`, the killer's kernel stack in
 * p->ips[0..nr_kernel)) handed over as an FR_EVENT_OOM sample with the
 * application label constraint ("memcg" or "global"), through cb->oom
 * when there is one. */
void fr_perf_oom_sample(struct fr_perf *p, const unsigned char *raw, uint32_t size, uint64_t time,
			uint32_t cpu, uint32_t nr_kernel, const struct fr_perf_handler *cb,
			int64_t clock_offset);

/* recorder/sampling/perf_pmu.c: the attr of a sampling event (period or frequency
 * mode, precise_ip, the times read_format asks for), and the enabled and
 * running times of each CPU's counter read before its ring is drained. */
void fr_perf_sampling_attr(struct perf_event_attr *attr, const struct fr_perf_config *cfg,
			   uint32_t type, uint64_t config, int hardware);
void fr_perf_read_times(struct fr_perf *p, struct cpu_ring *r);

#endif
