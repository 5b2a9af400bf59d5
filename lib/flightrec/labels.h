/* flightrec application labels: say which request, tenant or phase the
 * code running on this thread works for, and the flightrec recorder puts
 * those labels on every sample it takes of the thread at that moment (the
 * shape of Go's pprof.Do / SetGoroutineLabels, for C and anything that
 * can call C).
 *
 * A thread's labels are a set of key=value pairs. Changing them costs no
 * system call, no lock and, once the set was seen before, no allocation:
 * the library keeps each distinct set once in the process's memory and
 * appends (time, set) to a log of the thread's last changes, which the
 * recorder reads from outside (lib/flightrec/labels_abi.h). Nothing is
 * sent anywhere: without a recorder the labels cost a few nanoseconds and
 * are forgotten.
 *
 * Limits (a change beyond them is dropped, counted by reason, and the
 * samples of the thread until its next accepted change are labelled
 * "flightrec.labels" = "dropped: REASON" rather than with a wrong set):
 * at most FR_LABELS_MAX_KEYS pairs in a set, keys shorter than
 * FR_LABELS_KEY_MAX bytes, values shorter than FR_LABELS_VALUE_MAX bytes,
 * FR_LABELS_MAX_SETS distinct sets in the life of the process,
 * FR_LABELS_MAX_THREADS threads labelled at once (a thread beyond that
 * has no log at all: its samples carry no labels, and only
 * fr_labels_dropped() tells). Keys starting with
 * "flightrec." are the recorder's and are refused, as are the names of the
 * labels the recorder puts on samples itself (pid, tid, comm, thread,
 * cgroup, ppid, cpu, event): a profile's labels never mix the two.
 *
 * Every function is safe to call from any thread; none is async-signal
 * safe on a thread's first call (which registers the thread).
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
#define FR_LABELS_MAX_SETS 4096
#define FR_LABELS_MAX_THREADS 1024

/* Why a change was dropped; fr_labels_*() return the negated value. */
enum fr_labels_drop {
	FR_LABELS_DROP_TOO_MANY_KEYS = 1,
	FR_LABELS_DROP_KEY_TOO_LONG,
	FR_LABELS_DROP_VALUE_TOO_LONG,
	FR_LABELS_DROP_TOO_MANY_SETS,
	FR_LABELS_DROP_RESERVED_KEY, /* "flightrec.*" or a recorder label */
	FR_LABELS_DROP_TOO_MANY_THREADS,
	FR_LABELS_DROP_BAD_ARGUMENT, /* empty key, unknown token */
	FR_LABELS_DROP_COUNT
};

/* A thread's labels as a value: what fr_labels_push() returns to restore
 * and what fr_labels_capture() hands to another thread. 0 is "no labels". */
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
 * token still restores the ones before. */
fr_labels_t fr_labels_push(const char *key, const char *value);
void fr_labels_pop(fr_labels_t before);

/* The calling thread's labels, to apply on another thread (a thread pool
 * running a task for the submitter): capture at submit, apply when the
 * worker starts the task, and apply the worker's own (captured before)
 * when it is done. */
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
