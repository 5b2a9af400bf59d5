/* libflightrec: application labels (lib/flightrec/labels.h), kept where
 * the recorder reads them at each sample (lib/flightrec/labels_abi.h).
 *
 * Each labelled thread owns a state on the heap, allocated at its first
 * change and freed at its exit: two records. The initial-exec
 * thread-local `fr_labels_current` points to the record in force, to one
 * of the constant dropped markers shared by all threads, or is NULL (no
 * labels). The record in force is the thread's labels: a change merges
 * its pair into those pairs, writing the other record, then stores the
 * pointer. Nothing on that path takes a lock, allocates or enters the
 * kernel, and nothing about it is bounded over the life of the process.
 *
 * Tokens (fr_labels_t) name the entries of one table of sets, shared by
 * the process: push and capture put sets in it under a mutex, apply reads
 * an entry without one, under the entry's sequence count. An entry is
 * reused once FR_LABELS_MAX_TOKENS sets were put in the table after its
 * last use; its generation, part of the token, changes then, so the
 * tokens given out before expire rather than name the new set.
 *
 * pthread_create is interposed so that a new thread starts with a copy of
 * its creator's labels. Uses libc only and never calls into the recorder.
 */
#include "flightrec/labels_abi.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>

#define API __attribute__((visibility("default")))
#define MARKER_KEY "flightrec.labels"

_Static_assert(FR_LABELS_MAX_KEYS <= UINT8_MAX && FR_LABELS_KEY_MAX <= UINT8_MAX + 1 &&
		       FR_LABELS_VALUE_MAX <= UINT8_MAX + 1 &&
		       FR_LABELS_RECORD_DATA_MAX <= UINT16_MAX,
	       "a record's counts and lengths fit its fields");

API struct fr_labels_registry_abi fr_labels_registry = {
	.magic = FR_LABELS_ABI_MAGIC,
	.version = FR_LABELS_ABI_VERSION,
	.size = sizeof(struct fr_labels_registry_abi),
	.max_keys = FR_LABELS_MAX_KEYS,
	.key_max = FR_LABELS_KEY_MAX,
	.value_max = FR_LABELS_VALUE_MAX,
	.record_size = sizeof(struct fr_labels_record_abi),
};
/* The library's own copy, whatever a program that names the symbol does:
 * an executable that refers to it gets a copy of its own (a copy
 * relocation) that the recorder never reads. */
extern struct fr_labels_registry_abi registry
	__attribute__((alias("fr_labels_registry"), visibility("hidden")));

/* What the recorder reads, at registry.tls_offset from the thread
 * pointer. Only pointers are thread-local here (16 bytes of static TLS),
 * so a program may dlopen the library although its TLS is initial-exec. */
__thread const struct fr_labels_record_abi *fr_labels_current
	__attribute__((tls_model("initial-exec")));

struct thread {
	struct fr_labels_record_abi rec[2];
	/* The token of the set in force when known (it came from one or was
	 * looked up since it was set), else 0. */
	fr_labels_t token;
};

static __thread struct thread *self __attribute__((tls_model("initial-exec")));

static const char *const reason_words[FR_LABELS_DROP_COUNT] = {
	[FR_LABELS_DROP_TOO_MANY_KEYS] = "dropped: too many keys",
	[FR_LABELS_DROP_KEY_TOO_LONG] = "dropped: key too long",
	[FR_LABELS_DROP_VALUE_TOO_LONG] = "dropped: value too long",
	[FR_LABELS_DROP_TOO_MANY_SETS] = "dropped: too many sets",
	[FR_LABELS_DROP_RESERVED_KEY] = "dropped: reserved key",
	[FR_LABELS_DROP_TOO_MANY_THREADS] = "dropped: too many threads",
	[FR_LABELS_DROP_BAD_ARGUMENT] = "dropped: bad argument",
	[FR_LABELS_DROP_EXPIRED_TOKEN] = "dropped: expired token",
	[FR_LABELS_DROP_NO_MEMORY] = "dropped: no memory",
};

/* markers[r]: the record of a change dropped for reason r, written once
 * at load and only read after. */
static struct fr_labels_record_abi markers[FR_LABELS_DROP_COUNT];

/* ---- the token table ---- */

#define TOKEN_SLOT_BITS 12
#define TOKEN_GEN_MAX ((1u << (32 - TOKEN_SLOT_BITS)) - 1)
#define BUCKETS (2 * FR_LABELS_MAX_TOKENS)
_Static_assert(FR_LABELS_MAX_TOKENS == 1u << TOKEN_SLOT_BITS, "a token is (generation, entry)");

/* A token is gen * FR_LABELS_MAX_TOKENS + the entry's index; gen >= 1,
 * so no token is 0. The fields an apply reads (gen, reason, npairs, size,
 * data) change only while seq is odd; `used` is stored without the lock;
 * the rest belongs to the lock's holder. */
struct entry {
	uint32_t seq;
	uint32_t gen;  /* of the set it holds, 0: never used */
	uint64_t used; /* table.created at its last use */
	uint64_t hash;
	uint32_t next;	/* in its bucket's chain: index + 1, 0 ends it */
	uint8_t reason; /* a dropped marker's reason, 0: a set */
	uint8_t npairs;
	uint16_t size;
	uint8_t data[FR_LABELS_RECORD_DATA_MAX];
};

static struct {
	pthread_mutex_t lock;
	uint64_t created; /* sets put in the table so far */
	uint32_t hand;	  /* the next entry considered for reuse */
	uint32_t bucket[BUCKETS];
	struct entry entries[FR_LABELS_MAX_TOKENS];
} table = {.lock = PTHREAD_MUTEX_INITIALIZER};

static pthread_key_t exit_key;
static bool have_exit_key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The record `r` is whole before the pointer to it is stored: the
 * recorder reads it on this CPU while the thread is stopped, never
 * concurrently, so only the compiler could reorder the two. */
static inline void publish(const struct fr_labels_record_abi *r)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(&fr_labels_current, r, __ATOMIC_RELAXED);
}

/* The reason of marker `r`, 0 when `r` is a thread's set. */
static unsigned marker_reason(const struct fr_labels_record_abi *r)
{
	uintptr_t p = (uintptr_t)r, m = (uintptr_t)markers;

	if (p < m || p >= m + sizeof(markers))
		return 0;
	return (unsigned)((p - m) / sizeof(markers[0]));
}

/* A thread's exit frees its state, once the recorder can no longer reach
 * it. The key's destructors run again if the exit calls labels again. */
static void thread_exit(void *arg)
{
	publish(NULL);
	self = NULL;
	free(arg);
}

/* fork() with the table locked, so that the child's copy is whole. The
 * calling thread's state, on the heap and pointed to from its TLS, is the
 * child's thread's as it is. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&table.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&table.lock);
}

static void fork_child(void)
{
	pthread_mutex_init(&table.lock, NULL);
}

static void init(void)
{
	const size_t kl = sizeof(MARKER_KEY) - 1;

	for (unsigned i = 1; i < FR_LABELS_DROP_COUNT; i++) {
		struct fr_labels_record_abi *m = &markers[i];
		size_t vl = strlen(reason_words[i]);

		m->magic = FR_LABELS_RECORD_MAGIC;
		m->valid = 1;
		m->npairs = 1;
		m->data[0] = (uint8_t)kl;
		memcpy(m->data + 1, MARKER_KEY, kl);
		m->data[1 + kl] = (uint8_t)vl;
		memcpy(m->data + 2 + kl, reason_words[i], vl);
		m->size = (uint16_t)(2 + kl + vl);
	}
	registry.tls_offset = (char *)&fr_labels_current - (char *)__builtin_thread_pointer();
	/* Without a key (the process used them all), states leak at exit. */
	have_exit_key = pthread_key_create(&exit_key, thread_exit) == 0;
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

/* At load: the registry is complete before any thread labels itself,
 * and before the allocation sampling's constructor (lib/alloc.c, of the
 * default priority) makes its ring: a recorder that looks the process up
 * when the ring is there finds the labels ready too, rather than looking
 * again while a starved process has run one constructor of two. */
__attribute__((constructor(101))) static void load(void)
{
	pthread_once(&once, init);
}

static int drop(enum fr_labels_drop reason)
{
	pthread_once(&once, init);
	__atomic_add_fetch(&registry.dropped[reason], 1, __ATOMIC_RELAXED);
	if (self)
		self->token = 0;
	publish(&markers[reason]);
	return -(int)reason;
}

/* The calling thread's state, allocated at its first change; NULL when
 * out of memory. */
static struct thread *thread_state(void)
{
	struct thread *t = self;

	if (t)
		return t;
	pthread_once(&once, init);
	t = malloc(sizeof(*t));
	if (!t)
		return NULL;
	for (int i = 0; i < 2; i++) {
		t->rec[i].magic = FR_LABELS_RECORD_MAGIC;
		t->rec[i].valid = 1;
		t->rec[i].npairs = 0;
		t->rec[i].size = 0;
	}
	t->token = 0;
	if (have_exit_key)
		pthread_setspecific(exit_key, t);
	self = t;
	return t;
}

/* The record of `t` the recorder cannot be reading. */
static struct fr_labels_record_abi *spare(struct thread *t)
{
	return fr_labels_current == &t->rec[0] ? &t->rec[1] : &t->rec[0];
}

/* The names of the labels the recorder puts on samples itself, and its
 * own "flightrec." keys. */
static bool reserved_key(const char *key, size_t kl)
{
	switch (kl) {
	case 3: return !memcmp(key, "pid", 3) || !memcmp(key, "tid", 3) || !memcmp(key, "cpu", 3);
	case 4: return !memcmp(key, "comm", 4) || !memcmp(key, "ppid", 4);
	case 5: return !memcmp(key, "event", 5);
	case 6: return !memcmp(key, "thread", 6) || !memcmp(key, "cgroup", 6);
	default: return kl >= 10 && !memcmp(key, "flightrec.", 10);
	}
}

/* Sets `key` to `value` (removes it when `value` is NULL or empty) in the
 * labels in force: the pairs before the key, the new pair, the pairs
 * after it, into the spare record. After a dropped change the labels in
 * force are none: the ones the program meant are not known. */
static int change(const char *key, const char *value)
{
	const struct fr_labels_record_abi *cur = fr_labels_current, *from;
	const uint8_t *d;
	struct fr_labels_record_abi *r;
	struct thread *t;
	size_t kl, vl, at = 0, after, size, w;
	unsigned n, i, npairs;
	int c = 1;

	if (!key || !*key)
		return drop(FR_LABELS_DROP_BAD_ARGUMENT);
	kl = strnlen(key, FR_LABELS_KEY_MAX);
	if (kl >= FR_LABELS_KEY_MAX)
		return drop(FR_LABELS_DROP_KEY_TOO_LONG);
	vl = value ? strnlen(value, FR_LABELS_VALUE_MAX) : 0;
	if (vl >= FR_LABELS_VALUE_MAX)
		return drop(FR_LABELS_DROP_VALUE_TOO_LONG);
	if (reserved_key(key, kl))
		return drop(FR_LABELS_DROP_RESERVED_KEY);

	from = cur && !marker_reason(cur) ? cur : NULL;
	n = from ? from->npairs : 0;
	size = from ? from->size : 0;
	d = from ? from->data : NULL;
	/* The key's place: the first pair whose key is not before it. */
	for (i = 0; i < n; i++) {
		size_t pkl = d[at];

		c = memcmp(d + at + 1, key, pkl < kl ? pkl : kl);
		if (!c)
			c = (pkl > kl) - (pkl < kl);
		if (c >= 0)
			break;
		at += 2 + pkl + d[at + 1 + pkl];
	}
	after = at;
	if (i < n && !c) {
		size_t pvl = d[at + 1 + kl];

		if (pvl == vl && !memcmp(d + at + 2 + kl, value, vl) && from == cur)
			return 0;
		after = at + 2 + kl + pvl;
	} else if (!vl && from == cur) {
		return 0;
	}
	npairs = n - (after != at) + (vl != 0);
	if (npairs > FR_LABELS_MAX_KEYS)
		return drop(FR_LABELS_DROP_TOO_MANY_KEYS);
	if (!npairs) {
		publish(NULL);
		return 0;
	}
	t = thread_state();
	if (!t)
		return drop(FR_LABELS_DROP_NO_MEMORY);
	r = spare(t);
	if (at)
		memcpy(r->data, d, at);
	w = at;
	if (vl) {
		r->data[w++] = (uint8_t)kl;
		memcpy(r->data + w, key, kl);
		w += kl;
		r->data[w++] = (uint8_t)vl;
		memcpy(r->data + w, value, vl);
		w += vl;
	}
	if (size > after)
		memcpy(r->data + w, d + after, size - after);
	w += size - after;
	r->npairs = (uint8_t)npairs;
	r->size = (uint16_t)w;
	t->token = 0;
	publish(r);
	return 0;
}

/* ---- tokens ---- */

static struct entry *token_entry(fr_labels_t tok)
{
	return &table.entries[tok % FR_LABELS_MAX_TOKENS];
}

static fr_labels_t entry_token(const struct entry *e)
{
	return e->gen * FR_LABELS_MAX_TOKENS + (fr_labels_t)(e - table.entries);
}

/* Marks entry `e` used now. The store, a full fence, then the caller's
 * read of e->seq pair with victim()'s odd seq, fence, read of e->used:
 * either the reuse sees this use and skips the entry, or the caller sees
 * the reuse under way. */
static void touch(struct entry *e)
{
	uint64_t now = __atomic_load_n(&table.created, __ATOMIC_RELAXED);

	if (__atomic_load_n(&e->used, __ATOMIC_RELAXED) != now) {
		__atomic_store_n(&e->used, now, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
}

static void begin_write(struct entry *e)
{
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

static void end_write(struct entry *e)
{
	__atomic_store_n(&e->seq, e->seq + 1, __ATOMIC_RELEASE);
}

/* The entry to put a new set in (lock held), being written: one never
 * used, else the first from the hand on not used since
 * FR_LABELS_MAX_TOKENS - 1 sets were put in the table (so the one about to
 * be put is the FR_LABELS_MAX_TOKENS-th after its last use), else, when
 * every entry was used more lately than that, the least recently used. */
static struct entry *victim(void)
{
	struct entry *lru = NULL;
	uint64_t lru_used = UINT64_MAX;

	for (uint32_t n = 0; n < FR_LABELS_MAX_TOKENS; n++) {
		struct entry *e = &table.entries[table.hand];
		uint64_t used;

		table.hand = (table.hand + 1) % FR_LABELS_MAX_TOKENS;
		begin_write(e);
		if (!e->gen)
			return e;
		used = __atomic_load_n(&e->used, __ATOMIC_RELAXED);
		if (table.created + 1 - used >= FR_LABELS_MAX_TOKENS)
			return e;
		end_write(e);
		if (used < lru_used) {
			lru = e;
			lru_used = used;
		}
	}
	begin_write(lru);
	return lru;
}

static void unlink_entry(struct entry *e)
{
	uint32_t idx = (uint32_t)(e - table.entries) + 1;
	uint32_t *link = &table.bucket[e->hash % BUCKETS];

	while (*link && *link != idx)
		link = &table.entries[*link - 1].next;
	if (*link)
		*link = e->next;
}

/* Eight bytes at a time: a byte at a time was most of the cost of a push
 * or capture that looks its set up. */
static uint64_t hash_record(unsigned reason, const struct fr_labels_record_abi *r)
{
	uint64_t h = (0x9e3779b97f4a7c15ull * (reason + 1)) ^ r->size, w;
	size_t i = 0;

	for (; i + 8 <= r->size; i += 8) {
		memcpy(&w, r->data + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, r->data + i, r->size - i);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 32);
}

/* The token of record `r`: the entry holding the same set, or a new one. */
static fr_labels_t intern(const struct fr_labels_record_abi *r)
{
	unsigned reason = marker_reason(r);
	uint64_t h = hash_record(reason, r);
	uint32_t *head = &table.bucket[h % BUCKETS];
	struct entry *e;
	fr_labels_t tok;

	pthread_mutex_lock(&table.lock);
	for (uint32_t i = *head; i; i = e->next) {
		e = &table.entries[i - 1];
		if (e->hash == h && e->reason == reason && e->npairs == r->npairs &&
		    e->size == r->size && !memcmp(e->data, r->data, r->size)) {
			__atomic_store_n(&e->used, table.created, __ATOMIC_RELAXED);
			tok = entry_token(e);
			pthread_mutex_unlock(&table.lock);
			return tok;
		}
	}
	e = victim();
	if (e->gen)
		unlink_entry(e);
	__atomic_store_n(&e->gen, e->gen % TOKEN_GEN_MAX + 1, __ATOMIC_RELAXED);
	e->hash = h;
	e->reason = (uint8_t)reason;
	e->npairs = r->npairs;
	e->size = r->size;
	memcpy(e->data, r->data, r->size);
	__atomic_store_n(&table.created, table.created + 1, __ATOMIC_RELAXED);
	__atomic_store_n(&e->used, table.created, __ATOMIC_RELAXED);
	end_write(e);
	e->next = *head;
	*head = (uint32_t)(e - table.entries) + 1;
	tok = entry_token(e);
	pthread_mutex_unlock(&table.lock);
	return tok;
}

/* Whether `tok` still names its set, as a use of it. */
static bool token_alive(fr_labels_t tok)
{
	struct entry *e = token_entry(tok);
	uint32_t gen = tok / FR_LABELS_MAX_TOKENS;

	if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != gen)
		return false;
	touch(e);
	return !(__atomic_load_n(&e->seq, __ATOMIC_ACQUIRE) & 1) &&
	       __atomic_load_n(&e->gen, __ATOMIC_RELAXED) == gen;
}

/* The token of the calling thread's labels. */
static fr_labels_t current_token(void)
{
	const struct fr_labels_record_abi *cur = fr_labels_current;
	struct thread *t = self;
	fr_labels_t tok;

	if (!cur)
		return 0;
	if (t && t->token && token_alive(t->token))
		return t->token;
	tok = intern(cur);
	if (t)
		t->token = tok;
	return tok;
}

/* Copies the set `tok` names into `r`, or its marker's reason into
 * `*reason`, as the entry was at one instant. Returns 0 or -reason of the
 * drop. */
static int read_token(fr_labels_t tok, struct fr_labels_record_abi *r, unsigned *reason)
{
	struct entry *e = token_entry(tok);
	uint32_t gen = tok / FR_LABELS_MAX_TOKENS, eg = __atomic_load_n(&e->gen, __ATOMIC_RELAXED);

	if (!gen || gen > eg)
		return -FR_LABELS_DROP_BAD_ARGUMENT;
	if (gen != eg)
		return -FR_LABELS_DROP_EXPIRED_TOKEN;
	touch(e);
	for (unsigned spins = 1;; spins++) {
		uint32_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);
		uint16_t size;

		/* Odd: the lock's holder considers the entry for reuse, for
		 * tens of nanoseconds unless it was preempted. */
		if (s & 1) {
			if (spins % 64 == 0)
				sched_yield();
			continue;
		}
		if (__atomic_load_n(&e->gen, __ATOMIC_RELAXED) != gen)
			return -FR_LABELS_DROP_EXPIRED_TOKEN;
		size = e->size;
		*reason = e->reason;
		r->npairs = e->npairs;
		r->size = size;
		if (size <= FR_LABELS_RECORD_DATA_MAX)
			memcpy(r->data, e->data, size);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&e->seq, __ATOMIC_RELAXED) == s)
			return 0;
	}
}

/* ---- the API ---- */

API int fr_labels_set(const char *key, const char *value)
{
	return change(key, value);
}

API fr_labels_t fr_labels_push(const char *key, const char *value)
{
	fr_labels_t before = current_token();

	change(key, value);
	return before;
}

API void fr_labels_pop(fr_labels_t before)
{
	fr_labels_apply(before);
}

API fr_labels_t fr_labels_capture(void)
{
	return current_token();
}

API void fr_labels_apply(fr_labels_t labels)
{
	struct fr_labels_record_abi *r;
	struct thread *t = self;
	unsigned reason = 0;
	int err;

	if (!labels) {
		publish(NULL);
		return;
	}
	/* The labels in force already: a use of the token all the same. */
	if (t && t->token == labels && fr_labels_current && token_alive(labels))
		return;
	t = thread_state();
	if (!t) {
		drop(FR_LABELS_DROP_NO_MEMORY);
		return;
	}
	r = spare(t);
	err = read_token(labels, r, &reason);
	if (err < 0) {
		drop((enum fr_labels_drop) - err);
		return;
	}
	t->token = labels;
	publish(reason ? &markers[reason] : r);
}

API void fr_labels_clear(void)
{
	publish(NULL);
}

API uint64_t fr_labels_dropped(enum fr_labels_drop reason)
{
	if ((unsigned)reason >= FR_LABELS_DROP_COUNT)
		return 0;
	return __atomic_load_n(&registry.dropped[reason], __ATOMIC_RELAXED);
}

/* ---- threads started with their creator's labels ---- */

/* What a new thread starts with: the user's function, and its creator's
 * labels by value (a marker by its address: markers never change). */
struct start {
	void *(*fn)(void *);
	void *arg;
	const struct fr_labels_record_abi *marker;
	uint8_t npairs;
	uint16_t size;
	uint8_t data[];
};

/* The first thing a thread started by pthread_create does: take the
 * labels its creator had, then run the program's function. */
static void *start_labelled(void *arg)
{
	struct start *s = arg;
	void *(*fn)(void *) = s->fn;
	void *fn_arg = s->arg;
	struct thread *t;

	if (s->marker) {
		publish(s->marker);
	} else if ((t = thread_state())) {
		struct fr_labels_record_abi *r = spare(t);

		r->npairs = s->npairs;
		r->size = s->size;
		memcpy(r->data, s->data, s->size);
		publish(r);
	} else {
		drop(FR_LABELS_DROP_NO_MEMORY);
	}
	free(s);
	return fn(fn_arg);
}

/* glibc's own name for its pthread_create, for a program linked fully
 * statically, where dlsym cannot name the next pthread_create. Weak: a
 * dynamic C library does not export it. In a static link, the object
 * defining it comes in with thrd_create's, which refers to it and which
 * this library refers to for that alone (a dynamic C library exports
 * thrd_create, so the reference costs nothing there). */
extern int __pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*fn)(void *),
			    void *arg) __attribute__((weak));
__attribute__((used)) static int (*const pull_pthread_create)(thrd_t *, thrd_start_t,
							      void *) = thrd_create;

/* The C library's pthread_create (whatever comes after this one in the
 * symbol search order), never this one. */
static int (*next_create(void))(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *)
{
	static int (*next)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*f)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		__atomic_load_n(&next, __ATOMIC_ACQUIRE);
	void *sym;

	if (f)
		return f;
	sym = dlsym(RTLD_NEXT, "pthread_create");
	memcpy(&f, &sym, sizeof(f));
	if (!f || f == pthread_create)
		f = __pthread_create;
	if (f)
		__atomic_store_n(&next, f, __ATOMIC_RELEASE);
	return f;
}

/* Interposes the C library's: when the caller has labels, the thread
 * starts on start_labelled with a copy of them; else the call goes
 * through untouched. Out of memory for the copy, the thread starts
 * without labels (counted as FR_LABELS_DROP_NO_MEMORY) rather than not at
 * all. */
API int pthread_create(pthread_t *restrict thread, const pthread_attr_t *restrict attr,
		       void *(*fn)(void *), void *restrict arg)
{
	int (*create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		next_create();
	const struct fr_labels_record_abi *cur = fr_labels_current;
	struct start *s;
	int err;

	if (!create)
		return ENOSYS;
	if (!cur)
		return create(thread, attr, fn, arg);
	s = malloc(sizeof(*s) + (marker_reason(cur) ? 0 : cur->size));
	if (!s) {
		__atomic_add_fetch(&registry.dropped[FR_LABELS_DROP_NO_MEMORY], 1,
				   __ATOMIC_RELAXED);
		return create(thread, attr, fn, arg);
	}
	if (marker_reason(cur)) {
		s->marker = cur;
	} else {
		s->marker = NULL;
		s->npairs = cur->npairs;
		s->size = cur->size;
		memcpy(s->data, cur->data, cur->size);
	}
	s->fn = fn;
	s->arg = arg;
	err = create(thread, attr, start_labelled, s);
	if (err)
		free(s);
	return err;
}
