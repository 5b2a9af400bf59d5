/* A process that passes for one with libflightrec's allocation ring, and
 * lies in it, for alloc_hostile.sh. It loads LIB (a copy of
 * alloc_forged_lib named libflightrec.so, so the recorder looks it up)
 * and fills its registry according to MODE, for SECONDS:
 *   unsealed  a ring whose memfd is not sealed
 *   size      a sealed ring, the registry's size another
 *   fifo      ring_fd a pipe
 *   dup       a good ring, then a child that keeps its parent's
 *   garbage   a good ring, records of garbage lengths and kinds
 *   records   a good ring, well-formed samples of random registers,
 *             stacks and labels bytes, frees of random addresses
 *   stuck     a good ring, a record reserved and never completed
 *   tailback  a good ring, its tail and head moved back under the reader
 * Prints "ready" once the registry is filled.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "flightrec/alloc_abi.h"

#define DATA (64u << 10)

static struct fr_alloc_registry_abi *reg;
static struct fr_alloc_header_abi *hdr;
static uint8_t *data;

static uint64_t rnd(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint64_t)rand() << 32 | (uint64_t)rand();
	return v;
}

static int64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* A ring of DATA bytes, sealed or not; fills the registry. */
static int make_ring(int seal)
{
	int fd = memfd_create("forged-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	uint64_t id = rnd() | 1;

	if (fd < 0 || ftruncate(fd, FR_ALLOC_HEADER_SIZE + DATA) < 0)
		return -1;
	hdr = mmap(NULL, FR_ALLOC_HEADER_SIZE + DATA, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return -1;
	hdr->magic = FR_ALLOC_RING_MAGIC;
	hdr->version = FR_ALLOC_ABI_VERSION;
	hdr->header_size = FR_ALLOC_HEADER_SIZE;
	hdr->ring_id = id;
	hdr->data_size = DATA;
	data = (uint8_t *)hdr + FR_ALLOC_HEADER_SIZE;
	if (seal && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) < 0)
		return -1;
	reg->magic = FR_ALLOC_ABI_MAGIC;
	reg->version = FR_ALLOC_ABI_VERSION;
	reg->size = sizeof(*reg);
	reg->ring_fd = fd;
	reg->state = FR_ALLOC_STATE_ON;
	reg->ring_size = FR_ALLOC_HEADER_SIZE + DATA;
	reg->ring_id = id;
	return fd;
}

/* Room for len bytes at head (as the library reserves), or 0. */
static struct fr_alloc_rec_abi *reserve(uint32_t len, uint64_t *pos)
{
	uint64_t head = hdr->head, off = head % DATA;

	if (head + len - hdr->tail > DATA)
		return NULL;
	if (off + len > DATA) {
		struct fr_alloc_rec_abi *pad = (void *)(data + off);

		pad->kind = FR_ALLOC_REC_PAD;
		pad->len = (uint32_t)(DATA - off);
		__atomic_store_n(&pad->pos, head, __ATOMIC_RELEASE);
		head += DATA - off;
		off = 0;
		if (head + len - hdr->tail > DATA)
			return NULL;
	}
	*pos = head;
	__atomic_store_n(&hdr->head, head + len, __ATOMIC_RELEASE);
	return (void *)(data + off);
}

static void put_garbage(void)
{
	uint64_t pos;
	struct fr_alloc_rec_abi *r = reserve(64, &pos);

	if (!r)
		return;
	memset(r, 0, 64);
	r->kind = (uint32_t)rnd();
	r->len = (uint32_t)(rnd() % 3 ? rnd() : rnd() % 256);
	__atomic_store_n(&r->pos, pos, __ATOMIC_RELEASE);
}

static void put_record(void)
{
	uint32_t labels = (uint32_t)(rnd() % 800), stack = (uint32_t)(rnd() % 4096) & ~7u;
	uint32_t len = (uint32_t)(sizeof(struct fr_alloc_rec_alloc_abi) + ((labels + 7) & ~7u) +
				  stack + 15) &
		       ~15u;
	uint64_t pos;
	struct fr_alloc_rec_alloc_abi *a;
	struct fr_alloc_rec_free_abi *f;

	if (rnd() % 2) {
		f = (void *)reserve(48, &pos);
		if (!f)
			return;
		*f = (struct fr_alloc_rec_free_abi){.h = {.kind = FR_ALLOC_REC_FREE, .len = 48},
						    .time_ns = mono(),
						    .tid = (uint32_t)rnd(),
						    .addr = rnd()};
		__atomic_store_n(&f->h.pos, pos, __ATOMIC_RELEASE);
		return;
	}
	a = (void *)reserve(len, &pos);
	if (!a)
		return;
	*a = (struct fr_alloc_rec_alloc_abi){.h = {.kind = FR_ALLOC_REC_ALLOC, .len = len},
					     .time_ns = rnd() % 4 ? mono() : (int64_t)rnd(),
					     .tid = (uint32_t)rnd() % 4 ? (uint32_t)getpid()
									: (uint32_t)rnd(),
					     .addr = rnd(),
					     .size = rnd() % 100000 + 1,
					     .mean = rnd() % 1000000 + 1,
					     .ip = rnd(),
					     .sp = rnd(),
					     .bp = rnd(),
					     .labels_len = labels,
					     .stack_len = stack};
	for (uint8_t *p = (uint8_t *)(a + 1), *e = (uint8_t *)a + len; p + 8 <= e; p += 8) {
		uint64_t v = rnd();

		memcpy(p, &v, 8);
	}
	if (labels >= 8) {
		/* A labels record's header, its size often a lie. */
		uint32_t magic = 0x424c5246u;
		uint16_t size = (uint16_t)(rnd() % 3 ? labels - 8 : rnd());

		memcpy(a + 1, &magic, 4);
		((uint8_t *)(a + 1))[4] = 1;
		memcpy((uint8_t *)(a + 1) + 6, &size, 2);
	}
	__atomic_store_n(&a->h.pos, pos, __ATOMIC_RELEASE);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[2] : "";
	time_t end = time(NULL) + (argc > 3 ? atoi(argv[3]) : 5);
	void *lib = argc > 1 ? dlopen(argv[1], RTLD_NOW) : NULL;
	int fds[2];

	if (!lib || !(reg = dlsym(lib, FR_ALLOC_REGISTRY_SYMBOL))) {
		fprintf(stderr, "alloc_forged: cannot load %s: %s\n", argc > 1 ? argv[1] : "?",
			dlerror());
		return 2;
	}
	if (!strcmp(mode, "unsealed")) {
		make_ring(0);
	} else if (!strcmp(mode, "size")) {
		make_ring(1);
		reg->ring_size = FR_ALLOC_HEADER_SIZE + 2 * DATA;
	} else if (!strcmp(mode, "fifo")) {
		make_ring(1);
		if (pipe(fds) < 0)
			return 2;
		reg->ring_fd = fds[0];
	} else if (make_ring(1) < 0) {
		perror("alloc_forged: ring");
		return 2;
	}
	if (!strcmp(mode, "dup")) {
		sleep(1); /* the recorder maps the parent's ring first */
		if (fork() == 0) {
			printf("child %d\n", getpid());
			fflush(stdout);
		}
	}
	printf("ready\n");
	fflush(stdout);
	while (time(NULL) < end) {
		if (!strcmp(mode, "garbage")) {
			put_garbage();
		} else if (!strcmp(mode, "records")) {
			for (int i = 0; i < 20; i++)
				put_record();
		} else if (!strcmp(mode, "stuck")) {
			uint64_t pos;
			struct fr_alloc_rec_abi *r = reserve(64, &pos);

			/* Reserved, never completed: its pos another. */
			if (r)
				r->pos = pos + 1;
		} else if (!strcmp(mode, "tailback")) {
			put_record();
			hdr->tail = 0;
			if (rnd() % 8 == 0)
				hdr->head -= hdr->head > 4096 ? 4096 : 0;
		}
		usleep(2000);
	}
	return 0;
}
