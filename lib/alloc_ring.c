/* libflightrec: the ring through which allocation samples reach the
 * recorder (lib/flightrec/alloc_abi.h), and the records written into it.
 *
 * The ring is a sealed memfd of the process's own, mapped shared: the
 * recorder maps the same file, so a sample costs no system call on either
 * side. Writers (any thread) reserve with a compare-and-swap on `head`
 * and never pass the recorder's `tail`: a full ring drops the record
 * before anything is copied, and counts it. Every record's length is a
 * multiple of 16, so the room left before the end of the data is never
 * too small for a PAD record's header.
 *
 * A sample's registers are taken in fr_alloc_ring_sample itself (noinline,
 * so its frame is one the recorder's CFI unwinding knows), and its stack
 * copied from there up to the thread's stack end, asked once per thread
 * with pthread_getattr_np (a thread whose bounds are not known, or whose
 * stack pointer lies outside them, as on a signal stack, copies none).
 */
#include "flightrec/alloc_int.h"
#include "flightrec/labels_abi.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define REC_ALIGN 16u
#define LABELS_MAX (8u + FR_LABELS_RECORD_DATA_MAX)

extern __thread const struct fr_labels_record_abi *fr_labels_current FR_ALLOC_IE;

static struct {
	struct fr_alloc_header_abi *h; /* NULL: no ring */
	uint8_t *data;
	uint64_t data_size;
	uint64_t map_size;
	int fd;
} ring = {.fd = -1};

struct fr_alloc_header_abi *fr_alloc_ring_header(void)
{
	return ring.h;
}

static uint64_t random_id(void)
{
	uint64_t id = 0;
	struct timespec ts;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != sizeof(id)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		id = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
		     ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&id;
		id *= 0x9e3779b97f4a7c15ull;
	}
	return id ? id : 1;
}

int fr_alloc_ring_open(uint64_t data_size)
{
	uint64_t size = FR_ALLOC_HEADER_SIZE + data_size;
	struct fr_alloc_header_abi *h;
	int fd, err;

	fd = memfd_create("flightrec-alloc", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	h->magic = FR_ALLOC_RING_MAGIC;
	h->version = FR_ALLOC_ABI_VERSION;
	h->header_size = FR_ALLOC_HEADER_SIZE;
	h->ring_id = random_id();
	h->data_size = data_size;
	ring.data = (uint8_t *)h + FR_ALLOC_HEADER_SIZE;
	/* The data are zeros: the record at position 0 would look complete
	 * (its pos is 0) before it is written. */
	memset(ring.data, 0xff, sizeof(uint64_t));
	ring.data_size = data_size;
	ring.map_size = size;
	ring.fd = fd;
	__atomic_store_n(&ring.h, h, __ATOMIC_RELEASE);

	__atomic_store_n(&fr_alloc_reg.ring_fd, fd, __ATOMIC_RELAXED);
	__atomic_store_n(&fr_alloc_reg.ring_size, size, __ATOMIC_RELAXED);
	__atomic_store_n(&fr_alloc_reg.state, FR_ALLOC_STATE_ON, __ATOMIC_RELAXED);
	__atomic_store_n(&fr_alloc_reg.ring_id, h->ring_id, __ATOMIC_RELEASE);
	return 0;
}

void fr_alloc_ring_drop_inherited(void)
{
	if (ring.h)
		munmap(ring.h, ring.map_size);
	if (ring.fd >= 0)
		close(ring.fd);
	ring.h = NULL;
	ring.data = NULL;
	ring.fd = -1;
	fr_alloc_reg.ring_fd = -1;
	fr_alloc_reg.ring_size = 0;
	fr_alloc_reg.ring_id = 0;
}

/* Reserves `len` bytes (a multiple of REC_ALIGN) and returns the record's
 * position, or UINT64_MAX when the recorder has not read enough yet: when
 * the unread bytes would pass `room` (the data's size for a FREE record, a
 * quarter less for a sample, so that a ring a burst of samples filled
 * still takes the frees of blocks it sampled: a lost sample is one sample
 * fewer, a lost FREE a block the heap would keep for ever). The end of the
 * data is skipped with a PAD record when the record would straddle it. */
static uint64_t reserve(struct fr_alloc_header_abi *h, uint32_t len, uint64_t room)
{
	uint64_t size = ring.data_size, head = __atomic_load_n(&h->head, __ATOMIC_RELAXED);
	uint64_t pad;

	for (;;) {
		uint64_t tail = __atomic_load_n(&h->tail, __ATOMIC_ACQUIRE);
		uint64_t off = head & (size - 1);

		pad = off + len > size ? size - off : 0;
		/* A tail beyond head (a confused reader) reads as full. */
		if (head + pad + len - tail > room)
			return UINT64_MAX;
		if (__atomic_compare_exchange_n(&h->head, &head, head + pad + len, true,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	if (pad) {
		struct fr_alloc_rec_abi *r = (void *)(ring.data + (head & (size - 1)));

		r->kind = FR_ALLOC_REC_PAD;
		r->len = (uint32_t)pad;
		__atomic_store_n(&r->pos, head, __ATOMIC_RELEASE);
		head += pad;
	}
	return head;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint32_t self_tid(void)
{
	struct fr_alloc_thread *t = &fr_alloc_self;

	if (!t->tid)
		t->tid = (uint32_t)gettid();
	return t->tid;
}

/* The calling thread's stack, asked once (in_lib set: what
 * pthread_getattr_np allocates goes straight to the allocator). */
static void stack_bounds(struct fr_alloc_thread *t)
{
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if (t->stack_asked)
		return;
	t->stack_asked = 1;
	if (pthread_getattr_np(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &addr, &size) && addr && size) {
		t->stack_lo = (uintptr_t)addr;
		t->stack_hi = (uintptr_t)addr + size;
	}
	pthread_attr_destroy(&attr);
}

static uint32_t stack_copy_len(struct fr_alloc_header_abi *h, uintptr_t sp)
{
	struct fr_alloc_thread *t = &fr_alloc_self;
	uint32_t want = __atomic_load_n(&h->stack_copy_wanted, __ATOMIC_RELAXED);
	uintptr_t room;

	if (want < 1024 || want > FR_ALLOC_STACK_COPY_MAX)
		want = FR_ALLOC_STACK_COPY_DEFAULT;
	want &= ~7u;
	stack_bounds(t);
	if (sp < t->stack_lo || sp >= t->stack_hi)
		return 0;
	room = t->stack_hi - sp;
	return (uint32_t)(room < want ? room & ~(uintptr_t)7 : want);
}

static uint32_t round_up(uint32_t n, uint32_t a)
{
	return (n + a - 1) & ~(a - 1);
}

/* The record of `len` bytes and `kind` reserved at *pos, its common
 * fields filled (all but pos), or NULL when the ring is full (counted in
 * *dropped). */
static void *begin(struct fr_alloc_header_abi *h, uint32_t len, uint32_t kind, uint64_t *dropped,
		   uint64_t *pos)
{
	struct fr_alloc_rec_free_abi *r;

	*pos = reserve(h, len,
		       kind == FR_ALLOC_REC_FREE ? ring.data_size
						 : ring.data_size - ring.data_size / 4);
	if (*pos == UINT64_MAX) {
		__atomic_add_fetch(dropped, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	/* ALLOC and FREE records begin alike (time_ns, tid, flags, addr). */
	r = (void *)(ring.data + (*pos & (ring.data_size - 1)));
	r->h.kind = kind;
	r->h.len = len;
	r->time_ns = now_ns();
	r->tid = self_tid();
	r->flags = 0;
	return r;
}

/* noinline: the registers taken are this function's, at a point its CFI
 * describes, and the recorder drops the library's frames at the leaf. */
__attribute__((noinline)) bool fr_alloc_ring_sample(uint64_t addr, uint64_t size, uint64_t mean)
{
	struct fr_alloc_header_abi *h = __atomic_load_n(&ring.h, __ATOMIC_ACQUIRE);
	const struct fr_labels_record_abi *lr = fr_labels_current;
	struct fr_alloc_rec_alloc_abi *r;
	uint32_t labels_len = 0, stack_len, len;
	uint64_t ip, sp, bp, pos;

#if defined(__x86_64__)
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
#elif defined(__aarch64__)
	__asm__ volatile("adr %0, .\n\tmov %1, sp\n\tmov %2, x29" : "=r"(ip), "=r"(sp), "=r"(bp));
#else
	/* Not made on other machines (alloc.c: state FAILED). */
	return false;
#endif
	if (!h)
		return false;
	if (lr) {
		uint16_t n = lr->size;

		labels_len = 8u + (n < FR_LABELS_RECORD_DATA_MAX ? n : FR_LABELS_RECORD_DATA_MAX);
	}
	stack_len = stack_copy_len(h, (uintptr_t)sp);
	len = round_up((uint32_t)sizeof(*r) + round_up(labels_len, 8) + stack_len, REC_ALIGN);
	r = begin(h, len, FR_ALLOC_REC_ALLOC, &h->dropped_allocs, &pos);
	if (!r)
		return false;
	r->addr = addr;
	r->size = size;
	r->mean = mean;
	r->ip = ip;
	r->sp = sp;
	r->bp = bp;
	r->labels_len = labels_len;
	r->stack_len = stack_len;
	if (labels_len)
		memcpy(r + 1, lr, labels_len);
	memcpy((uint8_t *)(r + 1) + round_up(labels_len, 8), (const void *)(uintptr_t)sp,
	       stack_len);
	__atomic_add_fetch(&h->allocs_seen, fr_alloc_self.allocs, __ATOMIC_RELAXED);
	fr_alloc_self.allocs = 0;
	__atomic_add_fetch(&h->sampled, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->h.pos, pos, __ATOMIC_RELEASE);
	return true;
}

void fr_alloc_ring_free(uint64_t addr)
{
	struct fr_alloc_header_abi *h = __atomic_load_n(&ring.h, __ATOMIC_ACQUIRE);
	uint32_t len = round_up(sizeof(struct fr_alloc_rec_free_abi), REC_ALIGN);
	struct fr_alloc_rec_free_abi *r;
	uint64_t pos;

	if (!h)
		return;
	r = begin(h, len, FR_ALLOC_REC_FREE, &h->dropped_frees, &pos);
	if (!r)
		return;
	r->addr = addr;
	__atomic_add_fetch(&h->frees, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->h.pos, pos, __ATOMIC_RELEASE);
}
