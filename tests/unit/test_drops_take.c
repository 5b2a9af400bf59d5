/* The per-CPU drop counters of the off-CPU eBPF program as the recorder
 * takes them at each drain (fr_drops_take, recorder/sampling/bpf_offcpu.h):
 * every drop once, into the open chunk's losses. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "recorder/sampling/bpf_offcpu.h"
#include "tests/unit/check.h"

/* Per-CPU drop counters (an eBPF program's) taken at each drain: each
 * drop is counted once, in the drain that first sees it, and a counter
 * that starts again (a program reloaded) takes nothing and starts over. */
struct cpu_counts {
	uint64_t switches, drops, other;
};

static void drops_taken(void)
{
	struct cpu_counts c[3] = {{0}};
	uint64_t seen = 0, taken = 0, made = 0;

	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 0,
	      "nothing dropped yet");
	for (int drain = 0; drain < 20; drain++) {
		for (int cpu = 0; cpu < 3; cpu++) {
			uint64_t n = (uint64_t)((drain * 7 + cpu * 3) % 5);

			c[cpu].drops += n;
			c[cpu].switches += 1000; /* other fields are not drops */
			c[cpu].other = UINT64_MAX;
			made += n;
		}
		taken += fr_drops_take(&seen, c, 3, sizeof(c[0]),
				       offsetof(struct cpu_counts, drops));
		CHECK(taken == made, "drain %d: %llu taken of %llu dropped", drain,
		      (unsigned long long)taken, (unsigned long long)made);
	}
	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 0,
	      "a drop taken twice");
	memset(c, 0, sizeof(c));
	c[1].drops = 4;
	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 0,
	      "counters that started again");
	c[1].drops = 6;
	CHECK(fr_drops_take(&seen, c, 3, sizeof(c[0]), offsetof(struct cpu_counts, drops)) == 2,
	      "after the counters started again");
}

int main(void)
{
	drops_taken();
	return failures ? 1 : 0;
}
