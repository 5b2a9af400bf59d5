/* The allocation rings' reader (recorder/sampling/allocs.c, allocs_map.c)
 * over real rings of this process's own (sealed memfds, as libflightrec
 * makes them): what fr_allocs_map refuses (no seals, a size not the
 * registry's, a pipe, a header not the registry's, sampling off or not
 * ready), then a mapped ring drained into samples: an allocation with
 * its size, mean and pid, its free matched with the allocation's stack,
 * an unknown free counted, a live block in a snapshot and freed when its
 * process ends, records written by a liar (garbage lengths, times far
 * off, a record never completed, skipped after a second), the reader's
 * claim on the ring, the mean asked in the header, a second process's
 * ring with the same id refused; a sample whose unwind table is not
 * built yet waits in its ring for it (the oom_kill test once had most of
 * a new process's heap cut short so), at most two seconds, and not once
 * the process ended. */
#include "recorder/sampling/allocs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/util/log.h"
#include "core/util/time.h"
#include "flightrec/alloc_abi.h"
#include "tests/unit/check.h"

#define DATA (64u << 10)

const char *__ubsan_default_options(void);
const char *__ubsan_default_options(void)
{
	return "halt_on_error=1:print_stacktrace=1";
}

struct ring {
	int fd;
	struct fr_alloc_header_abi *h;
	uint8_t *data;
	struct fr_alloc_registry_abi reg;
};

static int make_ring(struct ring *r, int seals, uint64_t id)
{
	r->fd = memfd_create("test-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (r->fd < 0 || ftruncate(r->fd, FR_ALLOC_HEADER_SIZE + DATA) < 0)
		return -1;
	if (seals && fcntl(r->fd, F_ADD_SEALS, seals) < 0)
		return -1;
	r->h = mmap(NULL, FR_ALLOC_HEADER_SIZE + DATA, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd,
		    0);
	if (r->h == MAP_FAILED)
		return -1;
	r->h->magic = FR_ALLOC_RING_MAGIC;
	r->h->version = FR_ALLOC_ABI_VERSION;
	r->h->header_size = FR_ALLOC_HEADER_SIZE;
	r->h->ring_id = id;
	r->h->data_size = DATA;
	r->data = (uint8_t *)r->h + FR_ALLOC_HEADER_SIZE;
	r->reg = (struct fr_alloc_registry_abi){.magic = FR_ALLOC_ABI_MAGIC,
						.version = FR_ALLOC_ABI_VERSION,
						.size = sizeof(r->reg),
						.ring_fd = r->fd,
						.state = FR_ALLOC_STATE_ON,
						.ring_size = FR_ALLOC_HEADER_SIZE + DATA,
						.ring_id = id};
	return 0;
}

static void drop_ring(struct ring *r)
{
	munmap(r->h, FR_ALLOC_HEADER_SIZE + DATA);
	close(r->fd);
}

static int64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Appends a record of len bytes at head; its pos stored unless `torn`. */
static void *put(struct ring *r, uint32_t kind, uint32_t len, int torn)
{
	uint64_t head = r->h->head;
	struct fr_alloc_rec_abi *h = (void *)(r->data + head % DATA);

	memset(h, 0, len);
	h->kind = kind;
	h->len = len;
	h->pos = torn ? head + 1 : head;
	r->h->head = head + len;
	return h;
}

static void put_alloc(struct ring *r, uint64_t addr, uint64_t size, int64_t time)
{
	struct fr_alloc_rec_alloc_abi *a = put(r, FR_ALLOC_REC_ALLOC, 112, 0);

	a->time_ns = time;
	a->tid = 999999; /* not a thread the (absent) tracker knows */
	a->addr = addr;
	a->size = size;
	a->mean = 4096;
	a->ip = 0x401000 + addr;
	a->sp = 0x7ff000;
}

static void put_free(struct ring *r, uint64_t addr)
{
	struct fr_alloc_rec_free_abi *f = put(r, FR_ALLOC_REC_FREE, 48, 0);

	f->time_ns = mono();
	f->addr = addr;
}

struct got {
	unsigned n;
	struct fr_sample s[64];
	uint64_t ip[64];
	uint64_t root[64];   /* the last frame */
	uint64_t lost;	     /* alloc samples said lost */
	uint64_t lost_frees; /* frees of sampled blocks said lost */
};

static void on_lost(void *arg, uint32_t event, uint64_t lost)
{
	struct got *g = arg;

	if (event == FR_EVENT_ALLOC)
		g->lost += lost;
	else if (event == FR_EVENT_ALLOC_FREE)
		g->lost_frees += lost;
}

static void on_sample(void *arg, const struct fr_sample *s)
{
	struct got *g = arg;

	if (g->n < 64) {
		g->s[g->n] = *s;
		g->ip[g->n] = s->nr_frames ? s->ips[0] : 0;
		g->root[g->n] = s->nr_frames ? s->ips[s->nr_frames - 1] : 0;
	}
	g->n++;
}

static unsigned count(const struct got *g, uint32_t event)
{
	unsigned n = 0;

	for (unsigned i = 0; i < g->n && i < 64; i++)
		n += g->s[i].event == event;
	return n;
}

static void refusals(void)
{
	struct fr_alloc_found f;
	struct ring r;
	const char *why;
	int fds[2], ret;

	CHECK(make_ring(&r, 0, 7) == 0, "ring");
	ret = fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why);
	CHECK(ret == -EPROTO && why && strstr(why, "not sealed"), "unsealed: %d %s", ret, why);
	drop_ring(&r);
	CHECK(make_ring(&r, F_SEAL_SHRINK | F_SEAL_GROW, 7) == 0, "ring");
	r.reg.ring_size += DATA;
	ret = fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why);
	CHECK(ret == -EPROTO && strstr(why, "size"), "size: %d %s", ret, why);
	r.reg.ring_size -= DATA;
	r.h->ring_id = 8;
	ret = fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why);
	CHECK(ret == -EPROTO && strstr(why, "header"), "header: %d %s", ret, why);
	r.h->ring_id = 7;
	CHECK(pipe(fds) == 0, "pipe");
	r.reg.ring_fd = fds[0];
	ret = fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why);
	CHECK(ret == -EPROTO && strstr(why, "regular"), "pipe: %d %s", ret, why);
	close(fds[0]);
	close(fds[1]);
	r.reg.ring_fd = r.fd;
	r.reg.state = FR_ALLOC_STATE_OFF;
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why) == -ENOENT, "off");
	r.reg.state = FR_ALLOC_STATE_STARTING;
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why) == -EAGAIN,
	      "starting");
	r.reg.state = FR_ALLOC_STATE_ON;
	r.reg.version = 2;
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why) == -EPROTO,
	      "another version");
	r.reg.version = FR_ALLOC_ABI_VERSION;
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, 8, &f, &why) == -EPROTO, "short registry");
	drop_ring(&r);
}

static void drain(void)
{
	struct got got = {0};
	struct fr_perf_handler h = {.sample = on_sample, .lost = on_lost, .arg = &got};
	struct fr_allocs *a = fr_allocs_new(NULL, &h);
	struct fr_allocs_stats st;
	struct fr_alloc_found f, dup;
	struct ring r;
	const char *why;
	int64_t now = mono(), off = fr_now_real_ns() - now;

	CHECK(a && make_ring(&r, F_SEAL_SHRINK | F_SEAL_GROW, 42) == 0, "set up");
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why) == 0, "map: %s",
	      why ? why : "");
	CHECK(fr_allocs_adopt(a, &f) == 0, "adopt");
	CHECK(r.h->reader_pid == (uint32_t)getpid(), "the reader's claim: %u", r.h->reader_pid);
	CHECK(fr_allocs_mapped(a, (uint32_t)getpid()), "mapped");
	/* Another process with the same ring id: a child before its own. */
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &dup, &why) == 0,
	      "map again");
	dup.pid = 1;
	CHECK(fr_allocs_adopt(a, &dup) == -EAGAIN, "a second pid with the same ring id");

	fr_allocs_set_mean(a, 8192);
	/* What the library dropped before and since: lost alloc samples, and
	 * lost frees (no room, a block not tracked) apart. */
	r.h->dropped_allocs = 4;
	r.h->dropped_frees = 1;
	r.h->untracked = 2;
	put_alloc(&r, 0x1000, 100, now);
	put_alloc(&r, 0x2000, 200, now);
	put_free(&r, 0x1000);
	put_free(&r, 0x9999);
	put_alloc(&r, 0x3000, 300, now - 3600 * FR_NS_PER_S); /* an hour ago: a lie */
	fr_allocs_drain(a, off);
	CHECK(count(&got, FR_EVENT_ALLOC) == 2 && count(&got, FR_EVENT_ALLOC_FREE) == 1,
	      "2 allocs and 1 free: %u %u (%u)", count(&got, FR_EVENT_ALLOC),
	      count(&got, FR_EVENT_ALLOC_FREE), got.n);
	CHECK(got.s[0].pid == (uint32_t)getpid() && got.s[0].tid == (uint32_t)getpid() &&
		      got.s[0].weight == 100 && got.s[0].rate_hz == 4096 &&
		      got.s[0].time_ns == now + off && got.ip[0] == 0x402000,
	      "the sample: pid %u tid %u weight %llu rate %u ip %#llx", got.s[0].pid, got.s[0].tid,
	      (unsigned long long)got.s[0].weight, got.s[0].rate_hz, (unsigned long long)got.ip[0]);
	CHECK(got.s[2].event == FR_EVENT_ALLOC_FREE && got.s[2].weight == 100 &&
		      got.ip[2] == 0x402000,
	      "the free has the allocation's size and stack");
	CHECK(r.h->tail == r.h->head, "tail stored: %llu of %llu", (unsigned long long)r.h->tail,
	      (unsigned long long)r.h->head);
	CHECK(r.h->mean_wanted == 8192, "mean asked: %llu", (unsigned long long)r.h->mean_wanted);
	CHECK(got.lost == 4 && got.lost_frees == 3,
	      "the library's 4 samples and 3 frees said lost: %llu %llu",
	      (unsigned long long)got.lost, (unsigned long long)got.lost_frees);
	/* A process's lie counts at most 65,536 a drain; one back, nothing. */
	r.h->dropped_allocs = 1ull << 40;
	fr_allocs_drain(a, off);
	CHECK(got.lost == 4 + 65536, "a lie bounded: %llu", (unsigned long long)got.lost);
	r.h->dropped_allocs = 2;
	fr_allocs_drain(a, off);
	r.h->dropped_allocs = 3;
	fr_allocs_drain(a, off);
	CHECK(got.lost == 4 + 65536 + 1 && got.lost_frees == 3,
	      "a count gone back starts again: %llu", (unsigned long long)got.lost);
	fr_allocs_stats(a, &st);
	CHECK(st.samples == 2 && st.frees_matched == 1 && st.frees_unmatched == 1 &&
		      st.bad_records == 1 && st.live_blocks == 1 && st.procs == 1,
	      "stats: %llu %llu %llu %llu %llu", (unsigned long long)st.samples,
	      (unsigned long long)st.frees_matched, (unsigned long long)st.frees_unmatched,
	      (unsigned long long)st.bad_records, (unsigned long long)st.live_blocks);

	/* The first seal writes a snapshot: the one live block. */
	got.n = 0;
	fr_allocs_seal(a, off);
	CHECK(got.n == 1 && got.s[0].event == FR_EVENT_HEAP_LIVE && got.s[0].weight == 200,
	      "snapshot: %u samples", got.n);

	/* Garbage: a length that is not one; the reader goes on at head. */
	got.n = 0;
	((struct fr_alloc_rec_abi *)put(&r, FR_ALLOC_REC_ALLOC, 48, 0))->len = 0x7ffffff8;
	put_alloc(&r, 0x4000, 400, mono());
	fr_allocs_drain(a, off);
	fr_allocs_stats(a, &st);
	CHECK(st.bad_records == 2 && r.h->tail == r.h->head && got.n == 0,
	      "a bad length skips to head: %llu", (unsigned long long)st.bad_records);

	/* A record never completed: held, then skipped after a second. */
	put(&r, FR_ALLOC_REC_ALLOC, 112, 1);
	put_alloc(&r, 0x5000, 500, mono());
	fr_allocs_drain(a, off);
	CHECK(r.h->tail != r.h->head && got.n == 0, "an incomplete record holds the reader");
	usleep(1100 * 1000);
	fr_allocs_drain(a, off);
	fr_allocs_drain(a, off);
	fr_allocs_stats(a, &st);
	CHECK(r.h->tail == r.h->head && st.skipped_bytes == 224,
	      "skipped after a second: %llu bytes", (unsigned long long)st.skipped_bytes);

	/* The process ends: its live block is freed then, the ring goes. */
	got.n = 0;
	fr_allocs_gone(a, off, (uint32_t)getpid(), 12345);
	CHECK(got.n == 1 && got.s[0].event == FR_EVENT_ALLOC_FREE && got.s[0].weight == 200 &&
		      got.s[0].time_ns == 12345,
	      "freed at the end: %u", got.n);
	CHECK(!fr_allocs_mapped(a, (uint32_t)getpid()) && r.h->reader_pid == 0,
	      "the ring given back");
	fr_allocs_free(a);
	drop_ring(&r);
}

/* The unwinder's look-up: a table not built yet until `ready`. */
static int table_ready;
static const struct fr_cfi_table *find_pending(void *arg, uint32_t pid, uint64_t addr,
					       uint64_t *vaddr, int *miss)
{
	*miss = table_ready ? FR_UNWIND_MISS_NOCFI : FR_UNWIND_MISS_PENDING;
	return NULL;
}

static void table_wait(void)
{
	struct got got = {0};
	struct fr_perf_handler h = {.sample = on_sample,
				    .lost = on_lost,
				    .unwind_find = find_pending,
				    .arg = &got};
	struct fr_allocs *a = fr_allocs_new(NULL, &h);
	struct fr_alloc_found f;
	struct ring r;
	const char *why;
	int64_t off = fr_now_real_ns() - mono();

	CHECK(a && make_ring(&r, F_SEAL_SHRINK | F_SEAL_GROW, 43) == 0, "set up");
	CHECK(fr_allocs_map((uint32_t)getpid(), &r.reg, sizeof(r.reg), &f, &why) == 0 &&
		      fr_allocs_adopt(a, &f) == 0,
	      "map and adopt: %s", why ? why : "");
	fr_allocs_set_mean(a, 8192);
	table_ready = 0;
	put_alloc(&r, 0x1000, 100, mono());
	put_free(&r, 0x1000);
	fr_allocs_drain(a, off);
	CHECK(got.n == 0 && r.h->tail != r.h->head,
	      "a sample whose table is not ready waits in the ring: %u taken", got.n);
	table_ready = 1;
	fr_allocs_drain(a, off);
	CHECK(count(&got, FR_EVENT_ALLOC) == 1 && count(&got, FR_EVENT_ALLOC_FREE) == 1 &&
		      got.root[0] == FR_FRAME_MARK_ADDR(FR_UNWIND_NO_CFI) && r.h->tail == r.h->head,
	      "taken once the look-up says more than 'not built yet': %u samples", got.n);

	/* Never built: taken cut short after two seconds. */
	got.n = 0;
	table_ready = 0;
	put_alloc(&r, 0x2000, 200, mono());
	fr_allocs_drain(a, off);
	CHECK(got.n == 0, "waits");
	usleep(2100 * 1000);
	fr_allocs_drain(a, off);
	CHECK(got.n == 1 && got.root[0] == FR_FRAME_MARK_ADDR(FR_UNWIND_PENDING),
	      "taken cut short after two seconds: %u samples", got.n);

	/* The table still not built: the next records do not wait again. */
	got.n = 0;
	put_alloc(&r, 0x2800, 250, mono());
	fr_allocs_drain(a, off);
	CHECK(got.n == 1, "a table that never comes costs one wait, not one a record: %u", got.n);

	/* Built, then another not built: a new wait, which the process's end
	 * ends. */
	table_ready = 1;
	put_alloc(&r, 0x2900, 260, mono());
	fr_allocs_drain(a, off);
	table_ready = 0;
	got.n = 0;
	put_alloc(&r, 0x3000, 300, mono());
	fr_allocs_drain(a, off);
	CHECK(got.n == 0, "waits again");
	fr_allocs_gone(a, off, (uint32_t)getpid(), fr_now_real_ns());
	CHECK(count(&got, FR_EVENT_ALLOC) == 1, "taken when its process ends: %u",
	      count(&got, FR_EVENT_ALLOC));
	fr_allocs_free(a);
	drop_ring(&r);
}

int main(void)
{
	refusals();
	drain();
	table_wait();
	if (failures)
		fprintf(stderr, "%d checks failed\n", failures);
	return failures != 0;
}
