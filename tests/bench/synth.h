/* A synthetic, realistic sample stream for benchmarks: a few hundred
 * distinct stacks 10 to 40 frames deep (a quarter with kernel frames on
 * top), spread over processes and threads with a skewed popularity, as a
 * busy server machine produces. Deterministic for a given seed. */
#ifndef FR_BENCH_SYNTH_H
#define FR_BENCH_SYNTH_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/chunk.h"
#include "core/store/ring.h"
#include "core/store/sample.h"
#include "core/util/time.h"

#define SYNTH_STACKS 400
#define SYNTH_PROCS 24

struct synth {
	uint64_t rng;
	uint64_t frames[SYNTH_STACKS][40];
	uint16_t depth[SYNTH_STACKS], nkernel[SYNTH_STACKS];
	uint32_t pid[SYNTH_STACKS];
};

static inline uint64_t synth_next(struct synth *s)
{
	s->rng ^= s->rng << 13;
	s->rng ^= s->rng >> 7;
	s->rng ^= s->rng << 17;
	return s->rng;
}

static inline void synth_init(struct synth *s, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->rng = seed | 1;
	for (int i = 0; i < SYNTH_STACKS; i++) {
		int depth = 10 + (int)(synth_next(s) % 31);
		int nk = synth_next(s) % 4 == 0 ? 3 + (int)(synth_next(s) % 6) : 0;
		s->depth[i] = (uint16_t)depth;
		s->nkernel[i] = (uint16_t)nk;
		s->pid[i] = 1000 + (uint32_t)(synth_next(s) % SYNTH_PROCS);
		/* Stacks share their roots (main, the event loop) like real ones. */
		for (int j = 0; j < depth; j++) {
			if (j < nk)
				s->frames[i][j] =
					0xffffffff81000000ull + (synth_next(s) % 0x800000);
			else if (j >= depth - 6)
				s->frames[i][j] =
					0x555555554000ull + 0x1000 + (uint64_t)(depth - j) * 0x40;
			else if (j % 3 == 0)
				s->frames[i][j] = 0x7ffff7c00000ull + (synth_next(s) % 0x180000);
			else
				s->frames[i][j] = 0x555555554000ull + (synth_next(s) % 0x200000);
		}
	}
}

/* Fills `out` with the next sample at `time_ns` (ips borrowed from s). */
static inline void synth_sample(struct synth *s, struct fr_sample *out, int64_t time_ns,
				uint32_t cpu, uint32_t hz)
{
	/* Skewed: a few hot stacks take most samples. */
	uint64_t r = synth_next(s);
	int i = (int)((r % SYNTH_STACKS) * (r % SYNTH_STACKS) / SYNTH_STACKS);

	out->time_ns = time_ns;
	out->pid = s->pid[i];
	out->tid = s->pid[i] + (uint32_t)(synth_next(s) % 4);
	out->cpu = cpu;
	out->event = FR_EVENT_CPU;
	out->weight = FR_NS_PER_S / hz;
	out->rate_hz = hz;
	out->nr_kernel = s->nkernel[i];
	out->nr_frames = s->depth[i];
	out->ips = s->frames[i];
}

/* Meta callbacks: every pid has a binary and libc mapped; names fixed. */
static inline int synth_proc(void *arg, uint32_t pid, struct fr_proc_info *out)
{
	static char comm[32];
	(void)arg;
	memset(out, 0, sizeof(*out));
	snprintf(comm, sizeof(comm), "server-%u", pid % 100);
	out->pid = pid;
	out->comm = comm;
	out->exe = "/usr/bin/server";
	return 0;
}

static inline int synth_thread(void *arg, uint32_t tid, struct fr_thread_info *out)
{
	static char name[32];
	(void)arg;
	snprintf(name, sizeof(name), "worker-%u", tid % 4);
	out->tid = tid;
	out->pid = tid - tid % 4;
	out->name = name;
	return 0;
}

static inline int synth_mapping(void *arg, uint32_t pid, uint64_t addr, struct fr_map_info *out)
{
	(void)arg;
	(void)pid;
	memset(out, 0, sizeof(*out));
	if (addr >= 0x7ffff7c00000ull && addr < 0x7ffff7e00000ull) {
		out->start = 0x7ffff7c00000ull;
		out->end = 0x7ffff7e00000ull;
		out->path = "/usr/lib/x86_64-linux-gnu/libc.so.6";
	} else if (addr >= 0x555555554000ull && addr < 0x555555854000ull) {
		out->start = 0x555555554000ull;
		out->end = 0x555555854000ull;
		out->path = "/usr/bin/server";
	} else {
		return -ENOENT;
	}
	out->build_id_len = 20;
	memset(out->build_id, 0xab, 20);
	return 0;
}

static const struct fr_chunk_meta_ops synth_ops = {
	.proc = synth_proc,
	.thread = synth_thread,
	.mapping = synth_mapping,
	.arg = NULL,
};

/* Appends the stream from `t` to `end` to `ring` at `hz` on each of `cpus`
 * CPUs (one sample each `step` ns, CPUs in turn from *n, which counts the
 * samples), one chunk per second as the recorder seals them. Returns 0,
 * or the first fr_ring_append() error (the rest is still tried). */
static inline int synth_fill(struct synth *s, struct fr_chunk_builder *b, struct fr_ring *ring,
			     int64_t t, int64_t end, int64_t step, uint32_t hz, uint32_t cpus,
			     uint64_t *n)
{
	int first = 0, ret;

	for (int64_t sec_end = t + FR_NS_PER_S; t < end; sec_end += FR_NS_PER_S) {
		void *chunk;
		size_t len;

		for (; t < sec_end && t < end; t += step, (*n)++) {
			struct fr_sample smp;

			synth_sample(s, &smp, t, (uint32_t)(*n % cpus), hz);
			fr_chunk_builder_add(b, &smp);
		}
		if (fr_chunk_builder_seal(b, &synth_ops, 0, &chunk, &len) == 0) {
			ret = fr_ring_append(ring, chunk, len);
			if (ret < 0 && !first)
				first = ret;
			free(chunk);
		}
	}
	return first;
}

#endif
