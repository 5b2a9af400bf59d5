/* flightrec application labels: say which request, tenant or phase the
 * code running on this thread works for, and the flightrec recorder puts
 * those labels on every sample it takes of the thread at that moment (the
 * shape of Go's pprof.Do / SetGoroutineLabels, for C and anything that
 * can call C).
 *
 * A thread's labels are a set of key=value pairs. The library keeps each
 * thread's current set in the thread's own memory, where the recorder
 * reads it at the instant of each sample (lib/flightrec/labels_abi.h): a
 * sample carries the labels in force at the instruction it interrupted,
 * however often they change. A change costs no system call, no lock and
 * no allocation (after the thread's first, which allocates its state):
 * the pairs are rewritten into a buffer the recorder is not looking at,
 * then one pointer is stored, tens of nanoseconds in all. Nothing is sent
 * anywhere: without a recorder the labels are forgotten.
 *
 * Limits (a change beyond them is dropped, counted by reason, and the
 * samples of the thread until its next accepted change are labelled
 * "flightrec.labels" = "dropped: REASON" rather than with a wrong set;
 * that next change starts from no labels, since the ones the program
 * meant are not known): at most FR_LABELS_MAX_KEYS pairs in a set, keys
 * shorter than FR_LABELS_KEY_MAX bytes, values shorter than
 * FR_LABELS_VALUE_MAX bytes. Keys starting with "flightrec." are the
 * recorder's and are refused, as are the names of the labels the
 * recorder puts on samples itself (pid, tid, comm, thread, cgroup, ppid,
 * cpu, event): a profile's labels never mix the two.
 *
 * Nothing else is bounded over the life of the process: any number of
 * threads, any number of distinct sets, any rate of change. Each labelled
 * thread holds about 1.6 KiB, freed when it exits. The one bounded table
 * is the tokens' (fr_labels_push, fr_labels_capture): it holds the last
 * FR_LABELS_MAX_TOKENS distinct sets used through tokens, and an old token
 * expires (below); fr_labels_set and fr_labels_clear never use it.
 *
 * Threads and processes: a thread started by pthread_create starts with
 * its creator's labels; fr_labels_set after that changes only its own. A
 * forked child keeps its thread's. (libflightrec provides pthread_create,
 * which starts the new thread on a copy of its creator's labels and calls
 * the C library's; that works when libflightrec comes before the C
 * library in the program's symbol search order: it is linked into the
 * program, as a shared library the program names (the normal case) or as
 * the static archive (the program linked fully statically or not). A
 * libflightrec loaded with dlopen does not see the program's
 * pthread_create calls, and its threads start without labels. So do the
 * threads the C library starts without calling pthread_create through
 * the dynamic linker, those of thrd_create for one.)
 *
 * Every function is safe to call from any thread and acts on the calling
 * thread only; none is async-signal-safe (a signal handler must not change
 * the labels of the thread it interrupted).
 */
#ifndef FLIGHTREC_LABELS_H
#define FLIGHTREC_LABELS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FR_LABELS_MAX_KEYS 8
#define FR_LABELS_KEY_MAX 32   /* bytes, with the NUL */
#define FR_LABELS_VALUE_MAX 64 /* bytes, with the NUL */
/* Distinct sets the token table holds at once (fr_labels_t). */
#define FR_LABELS_MAX_TOKENS 4096
/* Limits of version 1 of the library, gone since: kept so that programs
 * naming them still build. Nothing is bounded by them any more. */
#define FR_LABELS_MAX_SETS 4096
#define FR_LABELS_MAX_THREADS 1024

/* Why a change was dropped; fr_labels_*() return the negated value. The
 * values are stable; new reasons are added at the end. */
enum fr_labels_drop {
	FR_LABELS_DROP_TOO_MANY_KEYS = 1,
	FR_LABELS_DROP_KEY_TOO_LONG,
	FR_LABELS_DROP_VALUE_TOO_LONG,
	FR_LABELS_DROP_TOO_MANY_SETS,	 /* version 1 only: never counted now */
	FR_LABELS_DROP_RESERVED_KEY,	 /* "flightrec.*" or a recorder label */
	FR_LABELS_DROP_TOO_MANY_THREADS, /* version 1 only: never counted now */
	FR_LABELS_DROP_BAD_ARGUMENT,	 /* empty key, a token never given out */
	FR_LABELS_DROP_EXPIRED_TOKEN,	 /* a token whose set left the table */
	FR_LABELS_DROP_NO_MEMORY,	 /* none for a thread's state */
	FR_LABELS_DROP_COUNT
};

/* A thread's labels as a value: what fr_labels_push() returns to restore
 * and what fr_labels_capture() hands to another thread. 0 is "no labels",
 * and stays valid forever.
 *
 * Any other token names an entry of the token table, which holds
 * FR_LABELS_MAX_TOKENS distinct sets. A token is used when fr_labels_push
 * or fr_labels_capture returns it and when fr_labels_pop or
 * fr_labels_apply is given it. It stays valid at least until
 * FR_LABELS_MAX_TOKENS sets newer than its last use have been put in the
 * table (a set is put in the table when push or capture returns a token
 * for a set the table does not hold; asking again for a set it holds
 * gives the same token). Only a program using more than
 * FR_LABELS_MAX_TOKENS distinct sets through tokens within that time sees
 * tokens expire sooner, the least recently used first. Applying an expired
 * token is dropped as FR_LABELS_DROP_EXPIRED_TOKEN: never the labels of
 * another set. (A token is an entry and the number of times the entry was
 * reused; the count wraps after 2^20 reuses of one entry, past which a
 * token that old could name a newer set.) */
typedef uint32_t fr_labels_t;

/* Sets `key` to `value` on the calling thread (a NULL or "" value removes
 * the key). Returns 0 or -enum fr_labels_drop. */
int fr_labels_set(const char *key, const char *value);

/* Sets `key` to `value` and returns the labels before, for
 * fr_labels_pop(): the scoped form,
 *     fr_labels_t t = fr_labels_push("endpoint", "/checkout");
 *     ... work ...
 *     fr_labels_pop(t);
 * When the change is dropped the labels are marked as dropped and the
 * token still restores the ones before. Costs a lookup in the token table
 * (under a lock) unless the labels before came from a token. */
fr_labels_t fr_labels_push(const char *key, const char *value);
void fr_labels_pop(fr_labels_t before);

/* The calling thread's labels, to apply on another thread (a thread pool
 * running a task for the submitter): capture at submit, apply when the
 * worker starts the task, and apply the worker's own (captured before)
 * when it is done. Applying a token that is no longer valid (see
 * fr_labels_t) marks the labels as dropped. */
fr_labels_t fr_labels_capture(void);
void fr_labels_apply(fr_labels_t labels);

/* Removes every label of the calling thread. */
void fr_labels_clear(void);

/* How many changes were dropped for `reason` in this process. */
uint64_t fr_labels_dropped(enum fr_labels_drop reason);

#ifdef __cplusplus
}
#endif

#endif
