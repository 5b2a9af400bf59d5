/* The interrupt-context wake classifier: see recorder/sampling/wake_class.h. */
#include "recorder/sampling/wake_class.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/sample.h"

struct range {
	uint64_t start, end;
	unsigned note;
};

struct fr_wake_class {
	struct range *r;
	uint32_t n;
};

/* Not notes: the functions that say the stack runs in interrupt context
 * (the entries of hardware interrupts and NMIs, and the softirq loop),
 * those of a memory cgroup's charge path (an OOM kill there is the
 * cgroup's), and get_signal (where a crash's stack leaves the tracing). */
enum { CTX_HARDIRQ = 100, CTX_SOFTIRQ, CTX_MEMCG_OOM, CTX_GET_SIGNAL };

/* Names (exact, or a prefix ending in '*') and the note (or context) they
 * give. */
static const struct {
	const char *name;
	unsigned note;
} names[] = {
	{"get_signal", CTX_GET_SIGNAL},
	{"try_charge_memcg", CTX_MEMCG_OOM},
	{"mem_cgroup_out_of_memory", CTX_MEMCG_OOM},
	{"mem_cgroup_oom_synchronize", CTX_MEMCG_OOM},
	{"hrtimer_wakeup", FR_FRAME_NOTE_WAKE_TIMER},
	{"process_timeout", FR_FRAME_NOTE_WAKE_TIMER},
	{"call_timer_fn", FR_FRAME_NOTE_WAKE_TIMER},
	{"__hrtimer_run_queues", FR_FRAME_NOTE_WAKE_TIMER},
	{"hrtimer_interrupt", FR_FRAME_NOTE_WAKE_TIMER},
	{"hrtimer_run_softirq", FR_FRAME_NOTE_WAKE_TIMER},
	{"run_timer_softirq", FR_FRAME_NOTE_WAKE_TIMER},
	{"__run_timers", FR_FRAME_NOTE_WAKE_TIMER},
	{"posix_timer_fn", FR_FRAME_NOTE_WAKE_TIMER},
	{"it_real_fn", FR_FRAME_NOTE_WAKE_TIMER},
	{"timerfd_tmrproc", FR_FRAME_NOTE_WAKE_TIMER},
	{"tick_sched_timer", FR_FRAME_NOTE_WAKE_TIMER},
	{"blk_mq_*", FR_FRAME_NOTE_WAKE_IO},
	{"bio_endio", FR_FRAME_NOTE_WAKE_IO},
	{"blk_update_request", FR_FRAME_NOTE_WAKE_IO},
	{"blk_done_softirq", FR_FRAME_NOTE_WAKE_IO},
	{"blk_complete_reqs", FR_FRAME_NOTE_WAKE_IO},
	{"nvme_*", FR_FRAME_NOTE_WAKE_IO},
	{"scsi_*", FR_FRAME_NOTE_WAKE_IO},
	{"ata_*", FR_FRAME_NOTE_WAKE_IO},
	{"virtblk_*", FR_FRAME_NOTE_WAKE_IO},
	{"net_rx_action", FR_FRAME_NOTE_WAKE_NET},
	{"net_tx_action", FR_FRAME_NOTE_WAKE_NET},
	{"napi_*", FR_FRAME_NOTE_WAKE_NET},
	{"__napi_poll", FR_FRAME_NOTE_WAKE_NET},
	{"__netif_receive_skb*", FR_FRAME_NOTE_WAKE_NET},
	{"netif_receive_skb*", FR_FRAME_NOTE_WAKE_NET},
	{"process_backlog", FR_FRAME_NOTE_WAKE_NET},
	{"tcp_v4_rcv", FR_FRAME_NOTE_WAKE_NET},
	{"tcp_v6_rcv", FR_FRAME_NOTE_WAKE_NET},
	{"udp_rcv", FR_FRAME_NOTE_WAKE_NET},
	{"asm_sysvec_*", CTX_HARDIRQ},
	{"sysvec_*", CTX_HARDIRQ},
	{"__sysvec_*", CTX_HARDIRQ},
	{"asm_common_interrupt", CTX_HARDIRQ},
	{"common_interrupt", CTX_HARDIRQ},
	{"__common_interrupt", CTX_HARDIRQ},
	{"handle_irq_event", CTX_HARDIRQ},
	{"asm_exc_nmi", CTX_HARDIRQ},
	{"exc_nmi", CTX_HARDIRQ},
	{"default_do_nmi", CTX_HARDIRQ},
	{"handle_softirqs", CTX_SOFTIRQ},
	{"__do_softirq", CTX_SOFTIRQ},
	{"do_softirq", CTX_SOFTIRQ},
	{"run_ksoftirqd", CTX_SOFTIRQ},
};

static unsigned note_of(const char *name)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		size_t len = strlen(names[i].name);

		if (names[i].name[len - 1] == '*' ? strncmp(name, names[i].name, len - 1) == 0
						  : strcmp(name, names[i].name) == 0)
			return names[i].note;
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_range(const void *a, const void *b)
{
	return cmp_u64(&((const struct range *)a)->start, &((const struct range *)b)->start);
}

/* The first text address above `a` in the sorted addrs[0..n): where the
 * function at `a` ends (a page on when none). */
static uint64_t end_of(const uint64_t *addrs, uint32_t n, uint64_t a)
{
	uint32_t lo = 0, hi = n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addrs[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n ? addrs[lo] : a + 4096;
}

/* One line into its address, type and name; 0 when it does not parse. */
static int parse_line(char *line, uint64_t *addr, char *type, char **name)
{
	char *end, *sp;

	*addr = strtoull(line, &end, 16);
	if (end == line || *end != ' ' || !end[1] || end[2] != ' ')
		return 0;
	*type = end[1];
	*name = end + 3;
	sp = strpbrk(*name, " \t\n");
	if (sp)
		*sp = '\0';
	return **name != '\0';
}

/* Keeps a range per matched name. Returns 0 or -1 (no memory). */
static int collect(FILE *f, uint64_t **addrs, uint32_t *naddrs, struct range **r, uint32_t *nr)
{
	uint32_t cap = 0, rcap = 0;
	char line[512];

	while (fgets(line, sizeof(line), f) && *naddrs < FR_WAKE_CLASS_SYMS_MAX) {
		uint64_t a;
		char type, *name;
		unsigned note;

		if (!parse_line(line, &a, &type, &name) || (type != 't' && type != 'T') || !a)
			continue;
		if (*naddrs == cap) {
			uint64_t *n = realloc(*addrs, (cap ? cap * 2 : 4096) * sizeof(*n));

			if (!n)
				return -1;
			*addrs = n;
			cap = cap ? cap * 2 : 4096;
		}
		(*addrs)[(*naddrs)++] = a;
		note = note_of(name);
		if (!note)
			continue;
		if (*nr == rcap) {
			struct range *n = realloc(*r, (rcap ? rcap * 2 : 64) * sizeof(*n));

			if (!n)
				return -1;
			*r = n;
			rcap = rcap ? rcap * 2 : 64;
		}
		(*r)[(*nr)++] = (struct range){.start = a, .note = note};
	}
	return 0;
}

struct fr_wake_class *fr_wake_class_load(FILE *f)
{
	struct fr_wake_class *c = calloc(1, sizeof(*c));
	uint64_t *addrs = NULL;
	uint32_t naddrs = 0;

	if (!c)
		return NULL;
	if (f && collect(f, &addrs, &naddrs, &c->r, &c->n) < 0) {
		free(addrs);
		fr_wake_class_free(c);
		return NULL;
	}
	/* Nothing read (no file, or none of the names): empty arrays. */
	if (naddrs)
		qsort(addrs, naddrs, sizeof(*addrs), cmp_u64);
	for (uint32_t i = 0; i < c->n; i++)
		c->r[i].end = end_of(addrs, naddrs, c->r[i].start);
	if (c->n)
		qsort(c->r, c->n, sizeof(*c->r), cmp_range);
	free(addrs);
	return c;
}

struct fr_wake_class *fr_wake_class_open(void)
{
	FILE *f = fopen("/proc/kallsyms", "re");
	struct fr_wake_class *c = fr_wake_class_load(f);

	if (f)
		fclose(f);
	return c;
}

static pthread_once_t machine_once = PTHREAD_ONCE_INIT;
static struct fr_wake_class *machine;

static void machine_load(void)
{
	machine = fr_wake_class_open();
}

const struct fr_wake_class *fr_wake_class_machine(void)
{
	pthread_once(&machine_once, machine_load);
	return machine;
}

void fr_wake_class_free(struct fr_wake_class *c)
{
	if (!c)
		return;
	free(c->r);
	free(c);
}

uint32_t fr_wake_class_ranges(const struct fr_wake_class *c)
{
	return c ? c->n : 0;
}

/* The note of the range holding `ip`, 0 for none. */
static unsigned lookup(const struct fr_wake_class *c, uint64_t ip)
{
	uint32_t lo = 0, hi = c->n;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (c->r[mid].start <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && ip < c->r[lo - 1].end ? c->r[lo - 1].note : 0;
}

unsigned fr_wake_class_note(const struct fr_wake_class *c, const uint64_t *kips, uint32_t n,
			    int hardirq)
{
	for (uint32_t i = 0; c && i < n; i++) {
		unsigned note = lookup(c, kips[i]);

		if (note && note < CTX_HARDIRQ)
			return note;
	}
	return hardirq ? FR_FRAME_NOTE_WAKE_IRQ : FR_FRAME_NOTE_WAKE_SOFTIRQ;
}

int fr_wake_class_context(const struct fr_wake_class *c, const uint64_t *kips, uint32_t n)
{
	for (uint32_t i = 0; c && i < n; i++) {
		unsigned note = lookup(c, kips[i]);

		if (note == CTX_HARDIRQ)
			return FR_WAKE_HARDIRQ;
		if (note == CTX_SOFTIRQ)
			return FR_WAKE_SOFTIRQ;
	}
	return FR_WAKE_TASK;
}

int fr_wake_class_memcg_oom(const struct fr_wake_class *c, const uint64_t *kips, uint32_t n)
{
	for (uint32_t i = 0; c && i < n; i++)
		if (lookup(c, kips[i]) == CTX_MEMCG_OOM)
			return 1;
	return 0;
}

uint32_t fr_wake_class_tracing_frames(const struct fr_wake_class *c, const uint64_t *kips,
				      uint32_t n)
{
	for (uint32_t i = 0; c && i < n; i++)
		if (lookup(c, kips[i]) == CTX_GET_SIGNAL)
			return i;
	return 0;
}
