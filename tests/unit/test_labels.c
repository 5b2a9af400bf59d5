/* libflightrec (lib/flightrec/labels.h): what a change writes where the
 * recorder reads it (lib/flightrec/labels_abi.h), read here in the same
 * process through the library's own registry; the limits and their drop
 * counts; push/pop, capture/apply across threads; a forked child. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flightrec/labels_abi.h"
#include "tests/unit/check.h"

/* The registry the recorder reads: the library's own object, which dlsym
 * on the library's handle gives. */
static const struct fr_labels_registry_abi *reg;

/* This thread's slot, or NULL. */
static const struct fr_labels_thread_abi *my_slot(void)
{
	const struct fr_labels_thread_abi *th = (const void *)(uintptr_t)reg->threads;
	uint32_t tid = (uint32_t)gettid();

	for (uint32_t i = 0; i < reg->max_threads; i++)
		if (th[i].tid == tid && th[i].state == 1)
			return &th[i];
	return NULL;
}

/* The set id of this thread's latest change. */
static uint32_t last_set(void)
{
	const struct fr_labels_thread_abi *t = my_slot();

	if (!t || !t->head)
		return UINT32_MAX;
	return t->log[(t->head - 1) % FR_LABELS_LOG_LEN].set;
}

/* The value of `key` in set `id` as the recorder would read it. */
static const char *set_value(uint32_t id, const char *key)
{
	const struct fr_labels_set_abi *sets = (const void *)(uintptr_t)reg->sets;

	if (id == 0 || id > reg->nsets)
		return NULL;
	for (uint32_t k = 0; k < sets[id - 1].npairs; k++)
		if (strcmp(sets[id - 1].pairs[k].key, key) == 0)
			return sets[id - 1].pairs[k].value;
	return NULL;
}

static void test_set_push_pop(void)
{
	const struct fr_labels_thread_abi *t;
	int64_t before, after;
	struct timespec ts;
	fr_labels_t tok;
	uint32_t id;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	before = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	CHECK(fr_labels_set("endpoint", "/checkout") == 0, "set");
	clock_gettime(CLOCK_MONOTONIC, &ts);
	after = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	t = my_slot();
	CHECK(t && t->head == 1, "one change logged");
	if (!t)
		return;
	CHECK(t->log[0].seq == 1, "seq of change 0 is %u", t->log[0].seq);
	CHECK(t->log[0].time_ns >= before && t->log[0].time_ns <= after,
	      "the change is stamped with CLOCK_MONOTONIC");
	id = last_set();
	CHECK(set_value(id, "endpoint") && strcmp(set_value(id, "endpoint"), "/checkout") == 0,
	      "the set says endpoint=/checkout");

	tok = fr_labels_push("tenant", "42");
	CHECK(tok == id, "push returns the labels before");
	CHECK(set_value(last_set(), "tenant") && set_value(last_set(), "endpoint"),
	      "pushed set has both keys");
	fr_labels_pop(tok);
	CHECK(last_set() == id, "pop restores the set before");
	/* The same set again is the same id, and changing to the labels in
	 * force logs nothing. */
	CHECK(fr_labels_set("endpoint", "/checkout") == 0 && t->head == 3, "no-op change logged");
	CHECK(fr_labels_set("endpoint", NULL) == 0 && last_set() == 0, "removing the last key");
	fr_labels_clear();
}

/* A change seen before is taken from the thread's cache, found by the
 * argument pointers: the same buffer holding another value is another
 * set. */
static void test_cache_by_content(void)
{
	char buf[8] = "a";
	uint32_t a, b;

	fr_labels_set("cached", buf);
	a = last_set();
	fr_labels_clear();
	strcpy(buf, "b");
	fr_labels_set("cached", buf);
	b = last_set();
	CHECK(a != b && set_value(b, "cached") && strcmp(set_value(b, "cached"), "b") == 0,
	      "the same buffer with another value gave set %u (%s)", b,
	      set_value(b, "cached") ? set_value(b, "cached") : "-");
	fr_labels_clear();
	strcpy(buf, "a");
	fr_labels_set("cached", buf);
	CHECK(last_set() == a, "set a again is %u, not %u", last_set(), a);
	fr_labels_clear();
}

static void test_limits(void)
{
	char key[64], value[128];
	uint64_t keys = fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_KEYS);

	for (int i = 0; i < FR_LABELS_MAX_KEYS; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(fr_labels_set(key, "v") == 0, "key %d of %d", i, FR_LABELS_MAX_KEYS);
	}
	CHECK(fr_labels_set("one-too-many", "v") == -FR_LABELS_DROP_TOO_MANY_KEYS,
	      "a key too many");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_KEYS) == keys + 1, "counted");
	CHECK(last_set() == FR_LABELS_SET_DROPPED + FR_LABELS_DROP_TOO_MANY_KEYS,
	      "the log says the labels are dropped, not the old set");
	/* Replacing a key of a full set is fine. */
	CHECK(fr_labels_set("k0", "w") == 0, "replacing in a full set");
	fr_labels_clear();

	memset(key, 'k', sizeof(key));
	key[FR_LABELS_KEY_MAX] = 0;
	CHECK(fr_labels_set(key, "v") == -FR_LABELS_DROP_KEY_TOO_LONG, "key too long");
	key[FR_LABELS_KEY_MAX - 1] = 0;
	CHECK(fr_labels_set(key, "v") == 0, "longest key");
	fr_labels_clear();
	memset(value, 'v', sizeof(value));
	value[FR_LABELS_VALUE_MAX] = 0;
	CHECK(fr_labels_set("x", value) == -FR_LABELS_DROP_VALUE_TOO_LONG, "value too long");
	value[FR_LABELS_VALUE_MAX - 1] = 0;
	CHECK(fr_labels_set("x", value) == 0, "longest value");
	CHECK(fr_labels_set("pid", "1") == -FR_LABELS_DROP_RESERVED_KEY, "pid is the recorder's");
	CHECK(fr_labels_set("flightrec.labels", "x") == -FR_LABELS_DROP_RESERVED_KEY,
	      "flightrec.* is the recorder's");
	CHECK(fr_labels_set("", "x") == -FR_LABELS_DROP_BAD_ARGUMENT, "empty key");
	fr_labels_apply(123456789);
	CHECK(last_set() == FR_LABELS_SET_DROPPED + FR_LABELS_DROP_BAD_ARGUMENT,
	      "an unknown token applies no set");
	fr_labels_clear();
}

static void test_too_many_sets(void)
{
	char v[32];
	int dropped = 0;

	for (int i = 0; i < FR_LABELS_MAX_SETS + 10; i++) {
		snprintf(v, sizeof(v), "%d", i);
		dropped += fr_labels_set("many", v) == -FR_LABELS_DROP_TOO_MANY_SETS;
	}
	CHECK(dropped > 0 && reg->nsets == FR_LABELS_MAX_SETS, "%d dropped, %u sets", dropped,
	      reg->nsets);
	CHECK(fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_SETS) >= (uint64_t)dropped, "counted");
	fr_labels_clear();
}

static fr_labels_t handed;
static uint32_t seen_set;

static void *worker(void *arg)
{
	fr_labels_t own = fr_labels_capture();

	(void)arg;
	fr_labels_apply(handed);
	seen_set = last_set();
	fr_labels_apply(own);
	return NULL;
}

static void test_capture_apply(void)
{
	pthread_t th;

	fr_labels_set("request", "r1");
	handed = fr_labels_capture();
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	CHECK(seen_set == handed && set_value(seen_set, "request"),
	      "the worker logged the captured set");
	fr_labels_clear();
}

static void test_fork(void)
{
	pid_t pid;
	int status = 0;

	fr_labels_set("before", "fork");
	pid = fork();
	if (pid == 0) {
		const struct fr_labels_thread_abi *t = my_slot();
		const uint32_t *tids = (const void *)(uintptr_t)reg->tids;
		uint32_t n = 0;

		for (uint32_t i = 0; i < reg->max_threads; i++)
			n += tids[i] != 0;
		/* The child's only thread has its slot, under its own tid. */
		_exit(t && n == 1 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child's slots");
	fr_labels_clear();
}

/* Regression: a program that names the registry gets a copy of it (a
 * copy relocation), and a library that wrote through the exported symbol
 * wrote that copy, leaving the one the recorder reads empty. The library
 * writes its own, whatever the program does. */
extern struct fr_labels_registry_abi fr_labels_registry;

static void test_registry_copy_relocation(void)
{
	volatile uint32_t program_copy = fr_labels_registry.version;

	(void)program_copy;
	fr_labels_set("copy", "relocation");
	CHECK(reg->sets && reg->tids && reg->threads && reg->nsets > 0,
	      "the library's own registry is filled (the program's copy is at %p, the "
	      "library's at %p)",
	      (void *)&fr_labels_registry, (const void *)reg);
	fr_labels_clear();
}

int main(void)
{
	void *h = dlopen("libflightrec.so.1", RTLD_NOW | RTLD_NOLOAD);

	reg = h ? dlsym(h, FR_LABELS_REGISTRY_SYMBOL) : NULL;
	if (!reg) {
		fprintf(stderr, "test_labels: no registry in libflightrec.so.1\n");
		return 1;
	}
	CHECK(reg->magic == FR_LABELS_ABI_MAGIC && reg->version == FR_LABELS_ABI_VERSION &&
		      reg->size == sizeof(*reg),
	      "registry header");
	test_set_push_pop();
	test_cache_by_content();
	test_limits();
	test_capture_apply();
	test_fork();
	test_too_many_sets();
	test_registry_copy_relocation();
	if (failures) {
		fprintf(stderr, "test_labels: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
