/* libflightrec: application labels (lib/flightrec/labels.h), kept where
 * the recorder can read them (the layout in lib/flightrec/labels_abi.h).
 *
 * Owns the process's set table (each distinct set once, interned without
 * a lock through an open-addressed index filled by compare-and-swap), the
 * thread slots (claimed once per thread, released at its exit) and each
 * thread's change log. Uses libc only and never calls into the recorder.
 * The hot path (a change of a warm thread to a set seen before) reads the
 * vDSO clock and writes one log entry.
 */
#include "flightrec/labels_abi.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define INDEX_SLOTS (2 * FR_LABELS_MAX_SETS)

static struct fr_labels_set_abi sets[FR_LABELS_MAX_SETS];
static uint64_t set_hash[FR_LABELS_MAX_SETS];
static uint32_t set_index[INDEX_SLOTS]; /* set id, 0: empty slot */
static uint32_t slot_tids[FR_LABELS_MAX_THREADS];
static struct fr_labels_thread_abi threads[FR_LABELS_MAX_THREADS];
static uint32_t next_slot;

API struct fr_labels_registry_abi fr_labels_registry = {
	.magic = FR_LABELS_ABI_MAGIC,
	.version = FR_LABELS_ABI_VERSION,
	.size = sizeof(struct fr_labels_registry_abi),
	.max_keys = FR_LABELS_MAX_KEYS,
	.key_max = FR_LABELS_KEY_MAX,
	.value_max = FR_LABELS_VALUE_MAX,
	.max_sets = FR_LABELS_MAX_SETS,
	.max_threads = FR_LABELS_MAX_THREADS,
	.log_len = FR_LABELS_LOG_LEN,
};
/* The library's own copy, whatever a program that names the symbol does:
 * an executable that refers to it gets a copy of its own (a copy
 * relocation) that the recorder never reads. */
extern struct fr_labels_registry_abi registry
	__attribute__((alias("fr_labels_registry"), visibility("hidden")));

/* The calling thread's slot (NULL until its first change) and labels. */
static __thread struct fr_labels_thread_abi *self;
static __thread uint32_t self_set;
static __thread bool self_failed;

/* The changes this thread made lately, (from, key, value) -> to, so a
 * change made before costs two short string compares instead of building
 * and looking up the set. Indexed by the argument pointers, checked by
 * content: `to` is `from` with its pair `idx` set, and sets never change. */
#define CACHE_SLOTS 64
static __thread struct {
	uint32_t from, to, idx;
} cache[CACHE_SLOTS];

static unsigned cache_slot(uint32_t from, const char *key, const char *value)
{
	uint64_t h = ((uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull) ^
		     ((uint64_t)(uintptr_t)value * 0xc2b2ae3d27d4eb4full) ^ from;

	return (unsigned)((h ^ (h >> 29)) % CACHE_SLOTS);
}

static pthread_key_t exit_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void drop(enum fr_labels_drop reason)
{
	__atomic_add_fetch(&registry.dropped[reason], 1, __ATOMIC_RELAXED);
}

/* A thread's exit frees its slot; the log stays readable until a new
 * thread takes the slot, as late as possible (slots are taken in turn). */
static void thread_exit(void *arg)
{
	struct fr_labels_thread_abi *t = arg;

	__atomic_store_n(&t->state, 2, __ATOMIC_RELEASE);
}

/* A forked child has one thread, the caller: the other slots are the
 * parent's threads, which the child does not have. */
static void after_fork_child(void)
{
	for (uint32_t i = 0; i < FR_LABELS_MAX_THREADS; i++) {
		if (&threads[i] == self)
			continue;
		threads[i].state = 0;
		threads[i].tid = 0;
		slot_tids[i] = 0;
	}
	if (self) {
		self->tid = (uint32_t)gettid();
		slot_tids[self - threads] = self->tid;
	}
}

/* At load: the registry is complete before any thread labels itself, so
 * a reader never sees it half filled. */
__attribute__((constructor)) static void registry_init(void)
{
	registry.sets = (uint64_t)(uintptr_t)sets;
	registry.tids = (uint64_t)(uintptr_t)slot_tids;
	registry.threads = (uint64_t)(uintptr_t)threads;
}

static void init_once(void)
{
	pthread_key_create(&exit_key, thread_exit);
	pthread_atfork(NULL, NULL, after_fork_child);
}

/* The first change of a thread takes a free slot (or one of an exited
 * thread), in turn after the last one taken. */
static struct fr_labels_thread_abi *thread_slot(void)
{
	if (self || self_failed)
		return self;
	pthread_once(&once, init_once);
	for (uint32_t n = 0; n < FR_LABELS_MAX_THREADS; n++) {
		uint32_t i =
			__atomic_fetch_add(&next_slot, 1, __ATOMIC_RELAXED) % FR_LABELS_MAX_THREADS;
		struct fr_labels_thread_abi *t = &threads[i];
		uint32_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);

		if (st == 1 || !__atomic_compare_exchange_n(&t->state, &st, 3, false,
							    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		/* A reader that sees the new tid also sees the emptied log:
		 * it checks the tid again after reading the head. */
		__atomic_store_n(&t->tid, 0, __ATOMIC_RELEASE);
		__atomic_store_n(&t->head, 0, __ATOMIC_RELEASE);
		for (uint32_t k = 0; k < FR_LABELS_LOG_LEN; k++)
			t->log[k].seq = 0;
		__atomic_store_n(&t->tid, (uint32_t)gettid(), __ATOMIC_RELEASE);
		__atomic_store_n(&slot_tids[i], t->tid, __ATOMIC_RELEASE);
		__atomic_store_n(&t->state, 1, __ATOMIC_RELEASE);
		pthread_setspecific(exit_key, t);
		self = t;
		return t;
	}
	self_failed = true;
	drop(FR_LABELS_DROP_TOO_MANY_THREADS);
	return NULL;
}

/* Appends a change to the calling thread's log. */
static void log_change(uint32_t set)
{
	struct fr_labels_thread_abi *t = thread_slot();
	struct fr_labels_entry_abi *e;
	struct timespec ts;
	uint64_t n;

	self_set = set;
	if (!t)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = t->head;
	e = &t->log[n % FR_LABELS_LOG_LEN];
	__atomic_store_n(&e->seq, 0, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	e->time_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	e->set = set;
	__atomic_store_n(&e->seq, (uint32_t)(n + 1), __ATOMIC_RELEASE);
	__atomic_store_n(&t->head, n + 1, __ATOMIC_RELEASE);
}

static bool reserved_key(const char *key)
{
	static const char *const ours[] = {"pid",    "tid",  "comm", "thread",
					   "cgroup", "ppid", "cpu",  "event"};

	if (strncmp(key, "flightrec.", 10) == 0)
		return true;
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (strcmp(key, ours[i]) == 0)
			return true;
	return false;
}

static uint64_t hash_set(const struct fr_labels_set_abi *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (uint32_t i = 0; i < s->npairs; i++) {
		for (const unsigned char *c = (const unsigned char *)s->pairs[i].key; *c; c++)
			h = (h ^ *c) * 0x100000001b3ull;
		h = (h ^ 0xff) * 0x100000001b3ull;
		for (const unsigned char *c = (const unsigned char *)s->pairs[i].value; *c; c++)
			h = (h ^ *c) * 0x100000001b3ull;
		h = (h ^ 0xfe) * 0x100000001b3ull;
	}
	return h;
}

static bool same_set(const struct fr_labels_set_abi *a, const struct fr_labels_set_abi *b)
{
	if (a->npairs != b->npairs)
		return false;
	for (uint32_t i = 0; i < a->npairs; i++)
		if (strcmp(a->pairs[i].key, b->pairs[i].key) != 0 ||
		    strcmp(a->pairs[i].value, b->pairs[i].value) != 0)
			return false;
	return true;
}

/* The id of set `s` (npairs > 0), added to the table when new: a new id
 * is taken, the set written, published (ready), then linked into the
 * index. Two threads adding the same set at once may both add it; the
 * copies are equal, so either id labels the same. */
static int64_t intern(const struct fr_labels_set_abi *s)
{
	uint64_t h = hash_set(s);
	uint32_t nid = 0;

	for (uint32_t n = 0, i = (uint32_t)h % INDEX_SLOTS; n < INDEX_SLOTS;
	     n++, i = (i + 1) % INDEX_SLOTS) {
		uint32_t id = __atomic_load_n(&set_index[i], __ATOMIC_ACQUIRE);

		if (!id && !nid) {
			nid = __atomic_add_fetch(&registry.nsets, 1, __ATOMIC_ACQ_REL);
			if (nid > FR_LABELS_MAX_SETS) {
				__atomic_store_n(&registry.nsets, FR_LABELS_MAX_SETS,
						 __ATOMIC_RELAXED);
				return -FR_LABELS_DROP_TOO_MANY_SETS;
			}
			sets[nid - 1] = *s;
			sets[nid - 1].ready = 0;
			set_hash[nid - 1] = h;
			__atomic_store_n(&sets[nid - 1].ready, 1, __ATOMIC_RELEASE);
		}
		/* Another thread may link a set into the slot first. */
		if (!id && __atomic_compare_exchange_n(&set_index[i], &id, nid, false,
						       __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return nid;
		if (set_hash[id - 1] == h && same_set(&sets[id - 1], s))
			return id;
	}
	return -FR_LABELS_DROP_TOO_MANY_SETS;
}

/* The set `from` with `key` set to `value` (removed when value is empty),
 * pairs kept sorted by key. Returns its id or -reason. */
static int64_t with_pair(uint32_t from, const char *key, const char *value)
{
	struct fr_labels_set_abi s;
	size_t kl, vl;
	uint32_t i, n = 0, replace;
	int c = 1;

	if (!key || !*key)
		return -FR_LABELS_DROP_BAD_ARGUMENT;
	kl = strnlen(key, FR_LABELS_KEY_MAX);
	vl = value ? strnlen(value, FR_LABELS_VALUE_MAX) : 0;
	if (kl >= FR_LABELS_KEY_MAX)
		return -FR_LABELS_DROP_KEY_TOO_LONG;
	if (vl >= FR_LABELS_VALUE_MAX)
		return -FR_LABELS_DROP_VALUE_TOO_LONG;
	if (reserved_key(key))
		return -FR_LABELS_DROP_RESERVED_KEY;
	if (from && from <= FR_LABELS_MAX_SETS)
		n = sets[from - 1].npairs;
	/* Copy the pairs before key, then key, then those after. */
	s.npairs = 0;
	for (i = 0; i < n && (c = strcmp(sets[from - 1].pairs[i].key, key)) < 0; i++)
		s.pairs[s.npairs++] = sets[from - 1].pairs[i];
	replace = i < n && c == 0;
	if (vl) {
		if (n - replace + 1 > FR_LABELS_MAX_KEYS)
			return -FR_LABELS_DROP_TOO_MANY_KEYS;
		memcpy(s.pairs[s.npairs].key, key, kl + 1);
		memcpy(s.pairs[s.npairs].value, value, vl + 1);
		s.npairs++;
	}
	i += replace;
	for (; i < n; i++)
		s.pairs[s.npairs++] = sets[from - 1].pairs[i];
	return s.npairs ? intern(&s) : 0;
}

static int change(const char *key, const char *value)
{
	uint32_t from = self_set >= FR_LABELS_SET_DROPPED ? 0 : self_set;
	unsigned c = 0;
	int64_t id;

	if (key && value && *value) {
		c = cache_slot(from, key, value);
		if (cache[c].to && cache[c].from == from) {
			const struct fr_labels_pair_abi *p =
				&sets[cache[c].to - 1].pairs[cache[c].idx];

			if (strcmp(p->key, key) == 0 && strcmp(p->value, value) == 0) {
				if (cache[c].to != self_set)
					log_change(cache[c].to);
				return 0;
			}
		}
	}
	id = with_pair(from, key, value);
	if (id > 0 && key && value && *value) {
		const struct fr_labels_set_abi *to = &sets[id - 1];

		for (uint32_t i = 0; i < to->npairs; i++) {
			if (strcmp(to->pairs[i].key, key) == 0) {
				cache[c].from = from;
				cache[c].to = (uint32_t)id;
				cache[c].idx = i;
			}
		}
	}

	if (id < 0) {
		drop((enum fr_labels_drop) - id);
		log_change(FR_LABELS_SET_DROPPED + (uint32_t)-id);
		return (int)id;
	}
	if ((uint32_t)id != self_set)
		log_change((uint32_t)id);
	return 0;
}

API int fr_labels_set(const char *key, const char *value)
{
	return change(key, value);
}

API fr_labels_t fr_labels_push(const char *key, const char *value)
{
	fr_labels_t before = self_set;

	change(key, value);
	return before;
}

/* A token is a set id this process gave out (or a dropped marker). */
static bool valid(fr_labels_t l)
{
	return l <= __atomic_load_n(&registry.nsets, __ATOMIC_ACQUIRE) ||
	       (l > FR_LABELS_SET_DROPPED && l < FR_LABELS_SET_DROPPED + FR_LABELS_DROP_COUNT);
}

API void fr_labels_pop(fr_labels_t before)
{
	fr_labels_apply(before);
}

API fr_labels_t fr_labels_capture(void)
{
	return self_set;
}

API void fr_labels_apply(fr_labels_t labels)
{
	if (!valid(labels)) {
		drop(FR_LABELS_DROP_BAD_ARGUMENT);
		labels = FR_LABELS_SET_DROPPED + FR_LABELS_DROP_BAD_ARGUMENT;
	}
	if (labels != self_set)
		log_change(labels);
}

API void fr_labels_clear(void)
{
	if (self_set != 0)
		log_change(0);
}

API uint64_t fr_labels_dropped(enum fr_labels_drop reason)
{
	if ((unsigned)reason >= FR_LABELS_DROP_COUNT)
		return 0;
	return __atomic_load_n(&registry.dropped[reason], __ATOMIC_RELAXED);
}
