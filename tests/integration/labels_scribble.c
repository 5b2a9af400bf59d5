/* A libflightrec process that lies to the recorder before it is ever
 * read, for labels_hostile.sh (labels_demo's hostile modes scribble once
 * the process runs, which may be after the recorder looked it up; these
 * break the registry in the executable's constructor, which runs right
 * after the library's, so that the recorder's look-up, retried until the
 * library has set tls_offset, finds them broken):
 *
 *   labels_scribble MODE SECONDS
 *
 *   registry   the registry's magic and version overwritten
 *   odd        tls_offset made odd (no thread-local is there)
 *   wild       tls_offset moved 4096 bytes down: aligned, plausible, and
 *              pointing at whatever the thread has there
 *   forged     the registry left alone; the thread's current record
 *              pointed at a record written here, valid, whose pairs use
 *              the recorder's own label names (pid, tid, comm, thread,
 *              cgroup), a "flightrec." key and one ordinary pair
 *              (forged=yes)
 *
 * Then labels itself victim=MODE (but in forged) and spins SECONDS in
 * scribble_spin. Prints "ready".
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flightrec/labels.h"
#include "flightrec/labels_abi.h"

void scribble_spin(int64_t until);

static volatile uint64_t sink;

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

__attribute__((noinline)) void scribble_spin(int64_t until)
{
	while (now_ns() < until)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i;
}

/* The library's registry, the one the recorder reads: dlsym on the
 * library itself (naming the symbol here would make a copy of it). */
static struct fr_labels_registry_abi *registry(void)
{
	void *h = dlopen("libflightrec.so.1", RTLD_NOW | RTLD_NOLOAD);

	return h ? dlsym(h, FR_LABELS_REGISTRY_SYMBOL) : NULL;
}

static const char *mode;

/* Runs after libflightrec's constructor (which set tls_offset). */
__attribute__((constructor)) static void early(int argc, char **argv)
{
	struct fr_labels_registry_abi *r;

	if (argc != 3)
		return;
	mode = argv[1];
	r = registry();
	if (!r) {
		fprintf(stderr, "labels_scribble: no registry: %s\n", dlerror());
		exit(1);
	}
	if (strcmp(mode, "registry") == 0) {
		r->magic = 0x5245434f52444544ull;
		r->version = 0xbad;
	} else if (strcmp(mode, "odd") == 0) {
		r->tls_offset += 1;
	} else if (strcmp(mode, "wild") == 0) {
		r->tls_offset -= 4096;
	}
}

/* A pair into r's data. */
static void pair(struct fr_labels_record_abi *r, const char *k, const char *v)
{
	size_t kl = strlen(k), vl = strlen(v);

	r->data[r->size] = (uint8_t)kl;
	memcpy(r->data + r->size + 1, k, kl);
	r->data[r->size + 1 + kl] = (uint8_t)vl;
	memcpy(r->data + r->size + 2 + kl, v, vl);
	r->size = (uint16_t)(r->size + 2 + kl + vl);
	r->npairs++;
}

int main(int argc, char **argv)
{
	static struct fr_labels_record_abi forged;
	int64_t until;

	if (argc != 3 || !mode) {
		fprintf(stderr, "usage: labels_scribble registry|odd|wild|forged SECONDS\n");
		return 2;
	}
	until = now_ns() + atoll(argv[2]) * 1000000000;
	if (strcmp(mode, "forged") == 0) {
		struct fr_labels_registry_abi *r = registry();

		/* The library's own checks refuse these keys: written by hand,
		 * in the order the library keeps (sorted). */
		forged.magic = FR_LABELS_RECORD_MAGIC;
		forged.valid = 1;
		pair(&forged, "cgroup", "/forged");
		pair(&forged, "comm", "forged");
		pair(&forged, "flightrec.evil", "yes");
		pair(&forged, "forged", "yes");
		pair(&forged, "pid", "1");
		pair(&forged, "thread", "forged");
		pair(&forged, "tid", "1");
		fr_labels_set("victim", mode); /* the thread's state and pointer exist */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		*(const struct fr_labels_record_abi **)((char *)__builtin_thread_pointer() +
							r->tls_offset) = &forged;
	} else {
		fr_labels_set("victim", mode);
	}
	printf("ready\n");
	fflush(stdout);
	scribble_spin(until);
	return 0;
}
