/* A small reader of the allocation ring (lib/flightrec/alloc_abi.h) for the
 * tests: a process reads its own ring, found through the registry that
 * the loaded libflightrec exports, mapped from the registry's descriptor
 * as the recorder maps it. Nothing here allocates, so that draining the
 * ring does not write into it. */
#ifndef FR_TEST_ALLOC_READER_H
#define FR_TEST_ALLOC_READER_H

#include "lib/flightrec/alloc_abi.h"

#include <dlfcn.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct rd {
	const struct fr_alloc_registry_abi *reg;
	struct fr_alloc_header_abi *h;
	uint8_t *data;
	uint64_t size, map_size;
	uint64_t bad; /* records that broke the ABI */
};

/* One record, as the tests look at it. */
struct rd_rec {
	uint32_t kind, tid;
	uint64_t addr, size, mean, sp;
	uint32_t labels_len, stack_len;
	char labels[24]; /* the first bytes of the labels' pairs */
};

static inline const struct fr_alloc_registry_abi *rd_registry(void)
{
	return (const struct fr_alloc_registry_abi *)dlsym(RTLD_DEFAULT, FR_ALLOC_REGISTRY_SYMBOL);
}

/* Maps the process's ring and claims it as its reader (the header's
 * reader_pid, as the recorder does: a recorder running on the machine
 * leaves a ring claimed by a live process alone). Returns 0; -1 when
 * there is no ring or it is wrong; -2 when another process reads it. */
static inline int rd_open(struct rd *r)
{
	const struct fr_alloc_registry_abi *reg = rd_registry();
	uint32_t me = (uint32_t)getpid(), cur = 0;
	void *m;

	memset(r, 0, sizeof(*r));
	if (!reg || reg->magic != FR_ALLOC_ABI_MAGIC || reg->state != FR_ALLOC_STATE_ON ||
	    reg->ring_fd < 0 || reg->ring_size <= FR_ALLOC_HEADER_SIZE)
		return -1;
	m = mmap(NULL, reg->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, reg->ring_fd, 0);
	if (m == MAP_FAILED)
		return -1;
	r->reg = reg;
	r->h = (struct fr_alloc_header_abi *)m;
	r->data = (uint8_t *)m + FR_ALLOC_HEADER_SIZE;
	r->size = r->h->data_size;
	r->map_size = reg->ring_size;
	if (r->h->magic != FR_ALLOC_RING_MAGIC || r->h->ring_id != reg->ring_id ||
	    r->size + FR_ALLOC_HEADER_SIZE != reg->ring_size || (r->size & (r->size - 1)))
		return -1;
	if (!__atomic_compare_exchange_n(&r->h->reader_pid, &cur, me, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE) &&
	    cur != me) {
		munmap(m, r->map_size);
		r->h = NULL;
		return -2;
	}
	/* What a recorder that read the ring before may have left. */
	__atomic_store_n(&r->h->mean_wanted, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&r->h->stack_copy_wanted, 0, __ATOMIC_RELAXED);
	return 0;
}

/* The library's memfds open in this process. */
static inline int rd_ring_fds(void)
{
	char path[64], link[128];
	int n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		ssize_t l;

		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		l = readlink(path, link, sizeof(link) - 1);
		if (l > 0) {
			link[l] = 0;
			n += strstr(link, "memfd:flightrec-alloc") != NULL;
		}
	}
	return n;
}

static inline void rd_close(struct rd *r)
{
	if (r->h)
		munmap(r->h, r->map_size);
	r->h = NULL;
}

/* Reads every complete record up to head into out (at most max; the rest
 * are consumed and not kept). Returns the records kept. */
static inline size_t rd_drain(struct rd *r, struct rd_rec *out, size_t max)
{
	uint64_t tail = __atomic_load_n(&r->h->tail, __ATOMIC_RELAXED);
	uint64_t head = __atomic_load_n(&r->h->head, __ATOMIC_ACQUIRE);
	size_t n = 0;

	while (tail < head) {
		const uint8_t *p = r->data + (tail & (r->size - 1));
		struct fr_alloc_rec_abi rh;
		unsigned spins = 0;

		while (__atomic_load_n((const uint64_t *)p, __ATOMIC_ACQUIRE) != tail) {
			if (++spins > 1000000) { /* a writer gone: skip to head */
				r->bad++;
				tail = head;
				goto out;
			}
			sched_yield();
		}
		memcpy(&rh, p, sizeof(rh));
		if (rh.len < sizeof(rh) || rh.len % 8 ||
		    (tail & (r->size - 1)) + rh.len > r->size) {
			r->bad++;
			tail = head;
			break;
		}
		if (rh.kind == FR_ALLOC_REC_ALLOC && n < max) {
			struct fr_alloc_rec_alloc_abi a;
			struct rd_rec *o = &out[n++];

			memcpy(&a, p, sizeof(a));
			memset(o, 0, sizeof(*o));
			o->kind = rh.kind;
			o->tid = a.tid;
			o->addr = a.addr;
			o->size = a.size;
			o->mean = a.mean;
			o->sp = a.sp;
			o->labels_len = a.labels_len;
			o->stack_len = a.stack_len;
			if (sizeof(a) + ((a.labels_len + 7) & ~7u) + a.stack_len > rh.len)
				r->bad++;
			if (a.labels_len > 8)
				memcpy(o->labels, p + sizeof(a) + 8,
				       a.labels_len - 8 < sizeof(o->labels) - 1
					       ? a.labels_len - 8
					       : sizeof(o->labels) - 1);
		} else if (rh.kind == FR_ALLOC_REC_FREE && n < max) {
			struct fr_alloc_rec_free_abi f;
			struct rd_rec *o = &out[n++];

			memcpy(&f, p, sizeof(f));
			memset(o, 0, sizeof(*o));
			o->kind = rh.kind;
			o->tid = f.tid;
			o->addr = f.addr;
		} else if (rh.kind != FR_ALLOC_REC_PAD && rh.kind != FR_ALLOC_REC_ALLOC &&
			   rh.kind != FR_ALLOC_REC_FREE) {
			r->bad++;
		}
		tail += rh.len;
	}
out:
	__atomic_store_n(&r->h->tail, tail, __ATOMIC_RELEASE);
	return n;
}

#endif
