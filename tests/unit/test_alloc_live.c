/* The live sampled blocks' table alone (recorder/sampling/alloc_live.c):
 * blocks found by (pid, address) and only so, their stacks shared and
 * freed with the last block, the oldest block of a process evicted at
 * each bound (per process, in all, in bytes) and counted, a block at an
 * address seen again replacing the first, a process's blocks freed in
 * the order they came, and a table grown through many blocks. */
#include "recorder/sampling/alloc_live.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/check.h"

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

static uint64_t site[2][4] = {{1, 2, 3, 4}, {5, 6, 7, 8}};

static struct fr_alloc_block blk(uint32_t pid, uint64_t addr, int s)
{
	return (struct fr_alloc_block){.pid = pid,
				       .tid = pid + 1,
				       .addr = addr,
				       .size = addr * 2,
				       .mean = 4096,
				       .time_ns = (int64_t)addr,
				       .nframes = 4,
				       .ips = site[s]};
}

struct seen {
	unsigned n;
	uint64_t addrs[64];
	uint64_t bytes;
	int stack_ok;
};

static void note(void *arg, const struct fr_alloc_block *b)
{
	struct seen *s = arg;

	if (s->n < 64)
		s->addrs[s->n] = b->addr;
	s->n++;
	s->bytes += b->size;
	s->stack_ok &= b->nframes == 4 && (b->ips[0] == 1 || b->ips[0] == 5) &&
		       b->size == b->addr * 2 && b->tid == b->pid + 1;
}

static void basics(void)
{
	struct fr_alloc_live_limits lim = {8, 100, 1 << 20};
	struct fr_alloc_live *l = fr_alloc_live_new(&lim);
	struct fr_alloc_live_counts c;
	struct seen s = {.stack_ok = 1};

	for (uint64_t a = 1; a <= 6; a++) {
		struct fr_alloc_block b = blk(10, a, (int)(a & 1));

		CHECK(fr_alloc_live_add(l, &b) == 0, "add %llu", (unsigned long long)a);
	}
	fr_alloc_live_counts(l, &c);
	CHECK(c.blocks == 6 && c.stacks == 2 && c.evicted == 0, "6 blocks on 2 stacks: %llu %llu",
	      (unsigned long long)c.blocks, (unsigned long long)c.stacks);
	CHECK(fr_alloc_live_take(l, 11, 3, note, &s) == -ENOENT && s.n == 0,
	      "another process's address is not this one's");
	CHECK(fr_alloc_live_take(l, 10, 3, note, &s) == 0 && s.n == 1 && s.addrs[0] == 3 &&
		      s.stack_ok,
	      "take gives the block with its stack");
	CHECK(fr_alloc_live_take(l, 10, 3, note, &s) == -ENOENT, "taken once");
	/* The same address again: a free never seen; the first goes. */
	CHECK(fr_alloc_live_add(l, &(struct fr_alloc_block){.pid = 10,
							    .tid = 11,
							    .addr = 2,
							    .size = 4,
							    .mean = 1,
							    .nframes = 4,
							    .ips = site[1]}) == 0,
	      "replace");
	fr_alloc_live_counts(l, &c);
	CHECK(c.blocks == 5, "replaced, not added: %llu", (unsigned long long)c.blocks);
	memset(&s, 0, sizeof(s));
	s.stack_ok = 1;
	fr_alloc_live_drop_proc(l, 10, note, &s);
	CHECK(s.n == 5 && s.addrs[0] == 1 && s.addrs[1] == 4 && s.addrs[4] == 2,
	      "dropped oldest first: %u %llu %llu", s.n, (unsigned long long)s.addrs[0],
	      (unsigned long long)s.addrs[1]);
	fr_alloc_live_counts(l, &c);
	CHECK(c.blocks == 0 && c.stacks == 0, "nothing left: %llu blocks %llu stacks",
	      (unsigned long long)c.blocks, (unsigned long long)c.stacks);
	fr_alloc_live_free(l);
}

static void bounds(void)
{
	struct fr_alloc_live_limits lim = {4, 6, 1 << 20};
	struct fr_alloc_live *l = fr_alloc_live_new(&lim);
	struct fr_alloc_live_counts c;
	struct seen s = {.stack_ok = 1};
	int ret;

	for (uint64_t a = 1; a <= 4; a++)
		fr_alloc_live_add(l, &(struct fr_alloc_block){1, 2, a, a * 2, 4096, 0, 4, site[0]});
	ret = fr_alloc_live_add(l, &(struct fr_alloc_block){1, 2, 5, 10, 4096, 0, 4, site[0]});
	CHECK(ret == 1, "per process: the oldest evicted (%d)", ret);
	fr_alloc_live_each(l, note, &s);
	CHECK(s.n == 4 && s.addrs[0] == 2 && s.addrs[3] == 5, "block 1 went: %u %llu", s.n,
	      (unsigned long long)s.addrs[0]);
	fr_alloc_live_add(l, &(struct fr_alloc_block){7, 8, 1, 2, 4096, 0, 4, site[1]});
	fr_alloc_live_add(l, &(struct fr_alloc_block){7, 8, 2, 4, 4096, 0, 4, site[1]});
	/* Six in all: pid 9's first block takes the place of the oldest of
	 * pid 1, which holds the most. */
	ret = fr_alloc_live_add(l, &(struct fr_alloc_block){9, 10, 1, 2, 4096, 0, 4, site[1]});
	CHECK(ret == 1, "a full table: the largest process gives up its oldest (%d)", ret);
	CHECK(fr_alloc_live_take(l, 1, 2, NULL, NULL) == -ENOENT, "pid 1's oldest went");
	ret = fr_alloc_live_add(l, &(struct fr_alloc_block){7, 8, 3, 6, 4096, 0, 4, site[1]});
	CHECK(ret == 1 && fr_alloc_live_take(l, 1, 3, NULL, NULL) == -ENOENT,
	      "pid 1 (3 blocks) gives up its oldest again (%d)", ret);
	/* Now pid 7 holds the most (3): its own oldest goes. */
	ret = fr_alloc_live_add(l, &(struct fr_alloc_block){7, 8, 4, 8, 4096, 0, 4, site[1]});
	CHECK(ret == 1 && fr_alloc_live_take(l, 7, 1, NULL, NULL) == -ENOENT,
	      "pid 7 gives up its own oldest (%d)", ret);
	fr_alloc_live_counts(l, &c);
	CHECK(c.blocks == 6 && c.evicted == 4, "6 blocks, 4 evicted: %llu %llu",
	      (unsigned long long)c.blocks, (unsigned long long)c.evicted);
	CHECK(fr_alloc_live_take(l, 9, 1, NULL, NULL) == 0 &&
		      fr_alloc_live_take(l, 1, 4, NULL, NULL) == 0,
	      "the smaller processes kept theirs");
	fr_alloc_live_free(l);

	/* Bytes: a block costs more than 64 bytes; a budget of about 10. */
	lim = (struct fr_alloc_live_limits){1000, 1000, 0};
	l = fr_alloc_live_new(&lim);
	fr_alloc_live_counts(l, &c);
	lim.bytes = c.bytes + 1200;
	fr_alloc_live_free(l);
	l = fr_alloc_live_new(&lim);
	for (uint64_t a = 1; a <= 100; a++)
		fr_alloc_live_add(l, &(struct fr_alloc_block){3, 4, a, 2, 4096, 0, 4, site[0]});
	fr_alloc_live_counts(l, &c);
	CHECK(c.bytes <= lim.bytes && c.blocks > 0 && c.blocks < 20 && c.evicted == 100 - c.blocks,
	      "the bytes bound: %llu blocks, %llu bytes of %llu", (unsigned long long)c.blocks,
	      (unsigned long long)c.bytes, (unsigned long long)lim.bytes);
	fr_alloc_live_free(l);
}

static void many(void)
{
	struct fr_alloc_live_limits lim = {1 << 20, 1 << 20, 1ull << 30};
	struct fr_alloc_live *l = fr_alloc_live_new(&lim);
	struct fr_alloc_live_counts c;
	uint64_t ips[3];
	unsigned missing = 0;

	for (uint64_t i = 0; i < 50000; i++) {
		ips[0] = i % 97;
		ips[1] = 1;
		ips[2] = 2;
		fr_alloc_live_add(l, &(struct fr_alloc_block){(uint32_t)(i % 13), 1, i * 16, 16,
							      4096, 0, 3, ips});
	}
	fr_alloc_live_counts(l, &c);
	CHECK(c.blocks == 50000 && c.stacks == 97, "50000 blocks, 97 stacks: %llu %llu",
	      (unsigned long long)c.blocks, (unsigned long long)c.stacks);
	for (uint64_t i = 0; i < 50000; i += 2)
		missing += fr_alloc_live_take(l, (uint32_t)(i % 13), i * 16, NULL, NULL) != 0;
	CHECK(missing == 0, "%u blocks not found after growth", missing);
	fr_alloc_live_counts(l, &c);
	CHECK(c.blocks == 25000, "half taken: %llu", (unsigned long long)c.blocks);
	fr_alloc_live_free(l);
}

int main(void)
{
	basics();
	bounds();
	many();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures != 0;
}
