/* libflightrec (lib/flightrec/labels.h): what a change writes where the
 * recorder reads it (lib/flightrec/labels_abi.h): each thread's record,
 * found as the recorder finds it, from the thread's thread pointer and
 * the registry's tls_offset, for this thread and for others stopped at a
 * barrier. The limits and their markers and counts; push/pop and
 * capture/apply across threads; tokens expiring, and fr_labels_set never;
 * threads starting with their creator's labels; a forked child; many
 * threads over the life of the process. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "flightrec/labels_abi.h"
#include "tests/unit/check.h"

/* The registry the recorder reads: the library's own object, which dlsym
 * on the library's handle gives. */
static const struct fr_labels_registry_abi *reg;

/* The record the recorder finds for the thread whose thread pointer is
 * `tp`. */
static const struct fr_labels_record_abi *record_of(const void *tp)
{
	return *(const struct fr_labels_record_abi *const *)((const char *)tp + reg->tls_offset);
}

static const struct fr_labels_record_abi *my_record(void)
{
	return record_of(__builtin_thread_pointer());
}

#define LABELS_MAX 1024

/* Record `r` as the recorder takes it, "k=v,k=v" ("" for none), or
 * "invalid: WHY" when it breaks the layout. */
static const char *decode(const struct fr_labels_record_abi *r, char *out)
{
	const uint8_t *d, *prev = NULL;
	size_t at = 0, o = 0, prevl = 0;

	out[0] = 0;
	if (!r)
		return out;
	if (r->magic != FR_LABELS_RECORD_MAGIC || r->valid != 1)
		return "invalid: header";
	if (!r->npairs || r->npairs > reg->max_keys || r->size > FR_LABELS_RECORD_DATA_MAX)
		return "invalid: counts";
	d = r->data;
	for (unsigned i = 0; i < r->npairs; i++) {
		size_t kl, vl, c;
		int cmp;

		if (at + 1 > r->size)
			return "invalid: truncated";
		kl = d[at];
		if (!kl || kl >= reg->key_max || at + 2 + kl > r->size)
			return "invalid: key";
		vl = d[at + 1 + kl];
		if (!vl || vl >= reg->value_max || at + 2 + kl + vl > r->size)
			return "invalid: value";
		if (memchr(d + at + 1, 0, kl) || memchr(d + at + 2 + kl, 0, vl))
			return "invalid: NUL";
		if (prev) {
			cmp = memcmp(prev, d + at + 1, prevl < kl ? prevl : kl);
			if (cmp > 0 || (!cmp && prevl >= kl))
				return "invalid: order";
		}
		prev = d + at + 1;
		prevl = kl;
		c = (size_t)snprintf(out + o, LABELS_MAX - o, "%s%.*s=%.*s", i ? "," : "", (int)kl,
				     (const char *)d + at + 1, (int)vl,
				     (const char *)d + at + 2 + kl);
		o += c;
		at += 2 + kl + vl;
	}
	if (at != r->size)
		return "invalid: size";
	return out;
}

/* CHECKs that the thread at `tp` has labels `want`. */
#define CHECK_LABELS(tp, want)                                                            \
	do {                                                                              \
		char got_[LABELS_MAX];                                                    \
		const char *g_ = decode(record_of(tp), got_);                             \
		CHECK(strcmp(g_, (want)) == 0, "labels '%s', expected '%s'", g_, (want)); \
	} while (0)
#define CHECK_MINE(want) CHECK_LABELS(__builtin_thread_pointer(), want)

static void test_registry(void)
{
	CHECK(reg->magic == FR_LABELS_ABI_MAGIC && reg->version == 2 && reg->size == sizeof(*reg),
	      "registry header: magic %llx version %u size %u", (unsigned long long)reg->magic,
	      reg->version, reg->size);
	CHECK(reg->max_keys == FR_LABELS_MAX_KEYS && reg->key_max == FR_LABELS_KEY_MAX &&
		      reg->value_max == FR_LABELS_VALUE_MAX &&
		      reg->record_size == sizeof(struct fr_labels_record_abi),
	      "registry limits");
	CHECK(reg->tls_offset != 0, "tls_offset filled at load");
	/* The pointer at tls_offset from this thread's thread pointer is the
	 * labels just set: the offset is the library's thread-local. */
	CHECK(my_record() == NULL, "no labels before the first change");
	fr_labels_set("endpoint", "/checkout");
	CHECK_MINE("endpoint=/checkout");
	fr_labels_clear();
	CHECK(my_record() == NULL, "no labels after clear");
}

static void test_set_push_pop(void)
{
	const struct fr_labels_record_abi *a, *b;
	char buf[LABELS_MAX];
	fr_labels_t tok;

	CHECK(fr_labels_set("endpoint", "/checkout") == 0, "set");
	CHECK_MINE("endpoint=/checkout");
	tok = fr_labels_push("tenant", "42");
	CHECK(tok != 0, "a token for labels");
	CHECK_MINE("endpoint=/checkout,tenant=42");
	fr_labels_pop(tok);
	CHECK_MINE("endpoint=/checkout");

	/* Pairs sorted by key bytes, a prefix first. */
	fr_labels_set("b", "2");
	fr_labels_set("ab", "3");
	fr_labels_set("a", "1");
	fr_labels_set("endpoint", "/cart");
	CHECK_MINE("a=1,ab=3,b=2,endpoint=/cart");
	fr_labels_set("ab", NULL);
	fr_labels_set("a", "");
	CHECK_MINE("b=2,endpoint=/cart");
	CHECK(fr_labels_set("never", NULL) == 0, "removing a key not there");
	CHECK_MINE("b=2,endpoint=/cart");

	/* A change writes the record not in force: the one a sample may be
	 * reading keeps its pairs until the pointer moved off it. */
	a = my_record();
	fr_labels_set("endpoint", "/search");
	b = my_record();
	CHECK(a != b, "a change publishes the other record");
	CHECK(strcmp(decode(a, buf), "b=2,endpoint=/cart") == 0, "the record before, intact: %s",
	      buf);
	fr_labels_set("endpoint", "/login");
	CHECK(my_record() == a && strcmp(decode(b, buf), "b=2,endpoint=/search") == 0,
	      "the two records in turn");
	/* The labels in force again: nothing written. */
	fr_labels_set("endpoint", "/login");
	CHECK(my_record() == a, "a change to the labels in force moves nothing");
	fr_labels_set("b", NULL);
	fr_labels_set("endpoint", NULL);
	CHECK(my_record() == NULL, "removing the last key leaves no labels");
}

static void check_marker(const char *words)
{
	char want[128];

	snprintf(want, sizeof(want), "flightrec.labels=dropped: %s", words);
	CHECK_MINE(want);
}

static void test_limits(void)
{
	char key[64], value[128];
	uint64_t before[FR_LABELS_DROP_COUNT];
	static const char *const reserved[] = {"pid",	     "tid",    "comm",
					       "thread",     "cgroup", "ppid",
					       "cpu",	     "event",  "flightrec.labels",
					       "flightrec.x"};

	for (int r = 0; r < FR_LABELS_DROP_COUNT; r++)
		before[r] = fr_labels_dropped(r);
	for (int i = 0; i < FR_LABELS_MAX_KEYS; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK(fr_labels_set(key, "v") == 0, "key %d of %d", i, FR_LABELS_MAX_KEYS);
	}
	CHECK(fr_labels_set("k0", "w") == 0, "replacing in a full set");
	CHECK(fr_labels_set("one-too-many", "v") == -FR_LABELS_DROP_TOO_MANY_KEYS,
	      "a key too many");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_KEYS) ==
		      before[FR_LABELS_DROP_TOO_MANY_KEYS] + 1,
	      "counted");
	CHECK(reg->dropped[FR_LABELS_DROP_TOO_MANY_KEYS] ==
		      before[FR_LABELS_DROP_TOO_MANY_KEYS] + 1,
	      "counted in the registry");
	check_marker("too many keys");
	/* The next accepted change replaces the marker, from no labels: the
	 * ones meant are not known. */
	CHECK(fr_labels_set("after", "drop") == 0, "a change after a drop");
	CHECK_MINE("after=drop");
	fr_labels_set("x", "y");
	fr_labels_set("pid", "1");
	CHECK(fr_labels_set("x", NULL) == 0 && my_record() == NULL,
	      "a removal after a drop leaves no labels, not the marker");

	memset(key, 'k', sizeof(key));
	key[FR_LABELS_KEY_MAX] = 0;
	CHECK(fr_labels_set(key, "v") == -FR_LABELS_DROP_KEY_TOO_LONG, "key too long");
	check_marker("key too long");
	key[FR_LABELS_KEY_MAX - 1] = 0;
	CHECK(fr_labels_set(key, "v") == 0, "longest key");
	memset(value, 'v', sizeof(value));
	value[FR_LABELS_VALUE_MAX] = 0;
	CHECK(fr_labels_set("x", value) == -FR_LABELS_DROP_VALUE_TOO_LONG, "value too long");
	check_marker("value too long");
	value[FR_LABELS_VALUE_MAX - 1] = 0;
	CHECK(fr_labels_set("x", value) == 0, "longest value");
	{
		char want[256];

		snprintf(want, sizeof(want), "x=%s", value);
		CHECK_MINE(want);
	}
	for (size_t i = 0; i < sizeof(reserved) / sizeof(reserved[0]); i++) {
		CHECK(fr_labels_set(reserved[i], "1") == -FR_LABELS_DROP_RESERVED_KEY,
		      "%s is the recorder's", reserved[i]);
		check_marker("reserved key");
	}
	CHECK(fr_labels_set("flightrec", "1") == 0 && fr_labels_set("pids", "1") == 0 &&
		      fr_labels_set("cpu0", "1") == 0,
	      "keys like the recorder's are the program's");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_RESERVED_KEY) ==
		      before[FR_LABELS_DROP_RESERVED_KEY] + 1 +
			      sizeof(reserved) / sizeof(reserved[0]),
	      "reserved keys counted");
	CHECK(fr_labels_set("", "x") == -FR_LABELS_DROP_BAD_ARGUMENT, "empty key");
	check_marker("bad argument");
	CHECK(fr_labels_set(NULL, "x") == -FR_LABELS_DROP_BAD_ARGUMENT, "no key");
	fr_labels_set("ok", "1");
	fr_labels_apply(0xfffff005u);
	check_marker("bad argument");
	fr_labels_apply(5);
	check_marker("bad argument");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_BAD_ARGUMENT) ==
		      before[FR_LABELS_DROP_BAD_ARGUMENT] + 4,
	      "tokens never given out are bad arguments");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_COUNT) == 0 &&
		      fr_labels_dropped((enum fr_labels_drop) - 1) == 0,
	      "no count beyond the reasons");
	fr_labels_clear();
}

static fr_labels_t handed;
static const void *worker_tp;
static char worker_saw[LABELS_MAX];
static pthread_barrier_t pair_barrier;

static void *capture_worker(void *arg)
{
	fr_labels_t own;

	(void)arg;
	fr_labels_set("worker", "own");
	own = fr_labels_capture();
	fr_labels_apply(handed);
	decode(my_record(), worker_saw);
	worker_tp = __builtin_thread_pointer();
	/* The test thread reads this thread's record while it waits. */
	pthread_barrier_wait(&pair_barrier);
	pthread_barrier_wait(&pair_barrier);
	fr_labels_apply(own);
	decode(my_record(), worker_saw);
	return NULL;
}

static void test_capture_apply(void)
{
	pthread_t th;
	fr_labels_t tok, again;

	fr_labels_clear();
	CHECK(fr_labels_capture() == 0, "no labels is token 0");
	fr_labels_set("a", "1");
	fr_labels_apply(0);
	CHECK(my_record() == NULL, "token 0 applies no labels");

	fr_labels_set("request", "r1");
	fr_labels_set("tenant", "acme");
	handed = fr_labels_capture();
	fr_labels_clear();
	fr_labels_set("tenant", "acme");
	fr_labels_set("request", "r1");
	again = fr_labels_capture();
	CHECK(handed == again, "the same set is the same token (%u, %u)", handed, again);
	fr_labels_set("request", "r2");

	pthread_barrier_init(&pair_barrier, NULL, 2);
	pthread_create(&th, NULL, capture_worker, NULL);
	pthread_barrier_wait(&pair_barrier);
	CHECK(strcmp(worker_saw, "request=r1,tenant=acme") == 0, "the worker applied '%s'",
	      worker_saw);
	CHECK_LABELS(worker_tp, "request=r1,tenant=acme");
	CHECK_MINE("request=r2,tenant=acme");
	pthread_barrier_wait(&pair_barrier);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&pair_barrier);
	/* It started with this thread's labels, then set its own. */
	CHECK(strcmp(worker_saw, "request=r2,tenant=acme,worker=own") == 0,
	      "the worker's own back: '%s'", worker_saw);

	/* A push while the labels are dropped restores the marker. */
	fr_labels_set("pid", "1");
	tok = fr_labels_push("a", "1");
	CHECK_MINE("a=1");
	fr_labels_pop(tok);
	check_marker("reserved key");
	/* And a pop after a dropped push restores the labels before. */
	fr_labels_set("a", "1");
	tok = fr_labels_push("cpu", "1");
	check_marker("reserved key");
	fr_labels_pop(tok);
	CHECK_MINE("a=1");
	fr_labels_clear();
}

/* Puts `n` sets never seen in the token table, through capture. */
static void intern_new(const char *key, int n)
{
	static unsigned long serial;
	char v[32];

	for (int i = 0; i < n; i++) {
		snprintf(v, sizeof(v), "%lu", serial++);
		fr_labels_set(key, v);
		fr_labels_capture();
	}
}

static void test_token_expiry(void)
{
	const int n = FR_LABELS_MAX_TOKENS;
	uint64_t expired = fr_labels_dropped(FR_LABELS_DROP_EXPIRED_TOKEN);
	fr_labels_t kept, old, used;

	fr_labels_clear();
	fr_labels_set("expiry", "kept");
	kept = fr_labels_capture();
	fr_labels_clear();
	intern_new("n", n - 1);
	fr_labels_apply(kept);
	CHECK_MINE("expiry=kept");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_EXPIRED_TOKEN) == expired,
	      "valid after FR_LABELS_MAX_TOKENS - 1 newer sets");

	fr_labels_set("expiry", "old");
	old = fr_labels_capture();
	fr_labels_clear();
	intern_new("n", 2 * n);
	fr_labels_apply(old);
	check_marker("expired token");
	CHECK(fr_labels_dropped(FR_LABELS_DROP_EXPIRED_TOKEN) == expired + 1, "expiry counted");

	/* Used every half table, a token stays. */
	fr_labels_set("expiry", "used");
	used = fr_labels_capture();
	for (int round = 0; round < 8; round++) {
		fr_labels_clear();
		intern_new("n", n / 2);
		fr_labels_apply(used);
		CHECK_MINE("expiry=used");
	}
	CHECK(fr_labels_dropped(FR_LABELS_DROP_EXPIRED_TOKEN) == expired + 1,
	      "a token in use does not expire");
	fr_labels_clear();
}

/* fr_labels_set never uses the token table: any number of distinct sets
 * in a row, each in the record as set. */
static void test_set_never_expires(void)
{
	uint64_t dropped = 0;
	char v[32], want[64];

	for (int r = 1; r < FR_LABELS_DROP_COUNT; r++)
		dropped += fr_labels_dropped(r);
	fr_labels_set("tenant", "acme");
	for (int i = 0; i < 200000; i++) {
		char got[LABELS_MAX];

		snprintf(v, sizeof(v), "%d", i);
		snprintf(want, sizeof(want), "many=%d,tenant=acme", i);
		if (fr_labels_set("many", v) != 0 || strcmp(decode(my_record(), got), want) != 0) {
			CHECK(0, "set %d of 200000: '%s'", i, got);
			break;
		}
	}
	for (int r = 1; r < FR_LABELS_DROP_COUNT; r++)
		dropped -= fr_labels_dropped(r);
	CHECK(dropped == 0, "nothing dropped");
	fr_labels_clear();
}

/* ---- threads ---- */

struct peer {
	pthread_barrier_t *barrier;
	int id;
	const void *tp;
	char start[LABELS_MAX]; /* the labels it started with */
	char after[LABELS_MAX]; /* after its own change */
};

static void *peer_main(void *arg)
{
	struct peer *p = arg;
	char v[32];

	p->tp = __builtin_thread_pointer();
	decode(my_record(), p->start);
	snprintf(v, sizeof(v), "%d", p->id);
	fr_labels_set("worker", v);
	decode(my_record(), p->after);
	if (p->barrier) {
		pthread_barrier_wait(p->barrier);
		pthread_barrier_wait(p->barrier);
	}
	return NULL;
}

/* Other threads' records, read from this thread while they wait. */
static void test_other_threads(void)
{
	enum { N = 8 };
	struct peer p[N];
	pthread_t th[N];
	pthread_barrier_t b;

	pthread_barrier_init(&b, NULL, N + 1);
	for (int i = 0; i < N; i++) {
		p[i] = (struct peer){.barrier = &b, .id = i};
		pthread_create(&th[i], NULL, peer_main, &p[i]);
	}
	pthread_barrier_wait(&b);
	for (int i = 0; i < N; i++) {
		char want[32];

		snprintf(want, sizeof(want), "worker=%d", i);
		CHECK_LABELS(p[i].tp, want);
	}
	CHECK(my_record() == NULL, "this thread's labels are its own");
	pthread_barrier_wait(&b);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&b);
}

static pthread_barrier_t late_barrier;
static char late_saw[LABELS_MAX];

static void *late_reader(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&late_barrier);
	decode(my_record(), late_saw);
	return NULL;
}

static char grandchild_saw[LABELS_MAX];

static void *grandchild(void *arg)
{
	(void)arg;
	decode(my_record(), grandchild_saw);
	return NULL;
}

static void *labelled_parent(void *arg)
{
	pthread_t th;

	(void)arg;
	fr_labels_set("level", "child");
	pthread_create(&th, NULL, grandchild, NULL);
	pthread_join(th, NULL);
	return NULL;
}

static void *unlabelled_parent(void *arg)
{
	pthread_t th;
	struct peer *p = arg;

	pthread_create(&th, NULL, peer_main, p);
	pthread_join(th, NULL);
	return NULL;
}

static void test_inherit(void)
{
	struct peer p = {.id = 1};
	pthread_t th;

	fr_labels_set("tenant", "acme");
	pthread_create(&th, NULL, peer_main, &p);
	pthread_join(th, NULL);
	CHECK(strcmp(p.start, "tenant=acme") == 0, "a new thread starts with '%s'", p.start);
	CHECK(strcmp(p.after, "tenant=acme,worker=1") == 0, "then changes its own: '%s'", p.after);
	CHECK_MINE("tenant=acme");

	/* By value, at creation: the creator's change after does not reach
	 * the new thread. */
	pthread_barrier_init(&late_barrier, NULL, 2);
	pthread_create(&th, NULL, late_reader, NULL);
	fr_labels_set("tenant", "other");
	pthread_barrier_wait(&late_barrier);
	pthread_join(th, NULL);
	pthread_barrier_destroy(&late_barrier);
	CHECK(strcmp(late_saw, "tenant=acme") == 0, "the labels at creation: '%s'", late_saw);

	/* Down the generations, each from its own creator. */
	pthread_create(&th, NULL, labelled_parent, NULL);
	pthread_join(th, NULL);
	CHECK(strcmp(grandchild_saw, "level=child,tenant=other") == 0,
	      "a thread's thread starts with '%s'", grandchild_saw);

	/* A dropped marker is inherited as such. */
	fr_labels_set("tid", "1");
	p = (struct peer){.id = 2};
	pthread_create(&th, NULL, peer_main, &p);
	pthread_join(th, NULL);
	CHECK(strcmp(p.start, "flightrec.labels=dropped: reserved key") == 0,
	      "a marker is inherited: '%s'", p.start);
	CHECK(strcmp(p.after, "worker=2") == 0, "and replaced: '%s'", p.after);

	/* A thread created by an unlabelled thread has none. */
	fr_labels_clear();
	p = (struct peer){.id = 3};
	strcpy(p.start, "unset");
	pthread_create(&th, NULL, unlabelled_parent, &p);
	pthread_join(th, NULL);
	CHECK(strcmp(p.start, "") == 0, "no labels from an unlabelled creator: '%s'", p.start);
}

/* ---- fork ---- */

static volatile int churn_stop;

/* Puts sets in the token table as fast as it can, so that a fork often
 * happens with its lock held. */
static void *churn_tokens(void *arg)
{
	char v[32];

	(void)arg;
	for (unsigned long i = 0; !churn_stop; i++) {
		snprintf(v, sizeof(v), "%lu", i);
		fr_labels_set("churn", v);
		fr_labels_capture();
	}
	return NULL;
}

static int fork_child_checks(void)
{
	char got[LABELS_MAX];
	struct peer p = {.id = 7};
	pthread_t th;
	fr_labels_t tok;

	/* A hang in the token table's lock ends the child. */
	alarm(10);
	if (strcmp(decode(my_record(), got), "before=fork") != 0)
		return 1;
	tok = fr_labels_push("in", "child");
	if (strcmp(decode(my_record(), got), "before=fork,in=child") != 0)
		return 2;
	if (pthread_create(&th, NULL, peer_main, &p) != 0)
		return 3;
	pthread_join(th, NULL);
	if (strcmp(p.start, "before=fork,in=child") != 0)
		return 4;
	fr_labels_pop(tok);
	if (strcmp(decode(my_record(), got), "before=fork") != 0)
		return 5;
	return 0;
}

static void test_fork(void)
{
	pthread_t churner;
	int status = 0;

	fr_labels_set("before", "fork");
	pthread_create(&churner, NULL, churn_tokens, NULL);
	for (int i = 0; i < 20; i++) {
		pid_t pid = fork();

		if (pid == 0)
			_exit(fork_child_checks());
		waitpid(pid, &status, 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			break;
	}
	churn_stop = 1;
	pthread_join(churner, NULL);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a forked child keeps its thread's labels (status %#x)", status);
	CHECK_MINE("before=fork");
	fr_labels_clear();
}

/* ---- many threads ---- */

/* 10,000 threads over the life of the process, 2,000 at once, each with
 * its own labels, read from here while they wait. */
static void test_many_threads(void)
{
	enum { AT_ONCE = 2000, ROUNDS = 5 };
	struct peer *p = calloc(AT_ONCE, sizeof(*p));
	pthread_t *th = calloc(AT_ONCE, sizeof(*th));
	pthread_barrier_t b;
	pthread_attr_t attr;
	int bad = 0, started;

	if (!p || !th) {
		CHECK(0, "out of memory");
		return;
	}
	fr_labels_clear();
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int round = 0; round < ROUNDS && !bad; round++) {
		pthread_barrier_init(&b, NULL, AT_ONCE + 1);
		for (started = 0; started < AT_ONCE; started++) {
			p[started] = (struct peer){.barrier = &b, .id = round * AT_ONCE + started};
			if (pthread_create(&th[started], &attr, peer_main, &p[started]) != 0)
				break;
		}
		if (started < AT_ONCE) {
			/* Fewer threads than the machine allows: the rest are
			 * released by threads that are not there. */
			CHECK(0, "only %d threads started", started);
			exit(1);
		}
		pthread_barrier_wait(&b);
		for (int i = 0; i < AT_ONCE && bad < 5; i++) {
			char want[32], got[LABELS_MAX];

			snprintf(want, sizeof(want), "worker=%d", p[i].id);
			if (strcmp(decode(record_of(p[i].tp), got), want) != 0) {
				CHECK(0, "thread %d has '%s'", p[i].id, got);
				bad++;
			}
		}
		pthread_barrier_wait(&b);
		for (int i = 0; i < AT_ONCE; i++)
			pthread_join(th[i], NULL);
		pthread_barrier_destroy(&b);
	}
	pthread_attr_destroy(&attr);
	free(p);
	free(th);
}

/* ---- thread exit ---- */

static pthread_key_t later_key;
static const void *at_exit_record = (const void *)1;

/* A key created after the library's: its destructor runs after the
 * library's, when the thread's record must be gone. */
static void later_destructor(void *arg)
{
	(void)arg;
	at_exit_record = my_record();
}

static void *exiting(void *arg)
{
	(void)arg;
	fr_labels_set("exiting", "yes");
	pthread_setspecific(later_key, (void *)1);
	return NULL;
}

static void test_thread_exit(void)
{
	pthread_t th;

	pthread_key_create(&later_key, later_destructor);
	pthread_create(&th, NULL, exiting, NULL);
	pthread_join(th, NULL);
	CHECK(at_exit_record == NULL,
	      "an exiting thread's record is unpublished before it is freed");
	pthread_key_delete(later_key);
}

/* Regression: a program that names the registry gets a copy of it (a
 * copy relocation), and a library that wrote through the exported symbol
 * wrote that copy, leaving the one the recorder reads empty. The library
 * writes its own, whatever the program does. */
extern struct fr_labels_registry_abi fr_labels_registry;

static void test_registry_copy_relocation(void)
{
	volatile uint32_t program_copy = fr_labels_registry.version;
	uint64_t before = reg->dropped[FR_LABELS_DROP_RESERVED_KEY];

	(void)program_copy;
	fr_labels_set("pid", "1");
	CHECK(reg->tls_offset != 0 && reg->dropped[FR_LABELS_DROP_RESERVED_KEY] == before + 1,
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
	test_registry();
	test_set_push_pop();
	test_limits();
	test_capture_apply();
	test_token_expiry();
	test_set_never_expires();
	test_other_threads();
	test_inherit();
	test_fork();
	test_many_threads();
	test_thread_exit();
	test_registry_copy_relocation();
	CHECK(fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_SETS) == 0 &&
		      fr_labels_dropped(FR_LABELS_DROP_TOO_MANY_THREADS) == 0,
	      "no set or thread limit any more");
	if (failures) {
		fprintf(stderr, "test_labels: %d failure(s)\n", failures);
		return 1;
	}
	return 0;
}
