/* One thread as a sample of the `flightrec threads` answer, live
 * (recorder/requests/threads.c) and at a past moment
 * (core/query/threads_at_write.c): a gzip'ed pprof of one sample per
 * thread, values threads/count (1) and waiting/nanoseconds, labels pid,
 * tid, thread, state, the caller's own (cpu_ns, wait, syscall, wchan),
 * waiting_ns, creator, and with a stack, stack and the application
 * labels of the row it came from. The stack is a row of a profile value
 * of the window (core/query/profile_value.h), its locations copied with
 * their mappings and function names.
 */
#ifndef FR_CORE_THREAD_SAMPLE_H
#define FR_CORE_THREAD_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/query/profile_value.h"

/* What the answer says of one thread. */
struct fr_thread_sample {
	uint32_t pid, tid;
	const char *thread; /* its name */
	const char *state;
	/* Labels after state, in this order (the live answer's cpu_ns,
	 * wait, syscall, wchan, python). */
	struct fr_profile_label extra[5];
	size_t nextra;
	bool waiting; /* waiting_ns is its value and a label */
	int64_t waiting_ns;
	uint32_t creator;  /* 0: unknown, no label */
	ssize_t row;	   /* its stack: a sample of the stacks value; -1 none */
	const char *stack; /* with a row: "blocked", "runnable" or "on-cpu" */
};

struct fr_thread_answer;

/* Starts an answer written to `fd` (borrowed) whose threads take their
 * stacks from `stacks` (NULL: none; it must outlive the answer), at
 * `time_ns` over `duration_ns`, with one comment. Returns NULL when out
 * of memory. */
struct fr_thread_answer *fr_thread_answer_new(int fd, const struct fr_profile *stacks,
					      int64_t time_ns, int64_t duration_ns,
					      const char *comment);

/* Adds thread `t` as a sample. */
void fr_thread_answer_add(struct fr_thread_answer *a, const struct fr_thread_sample *t);

/* Writes the rest. Returns 0 or the first -errno of the answer (out of
 * memory, or the descriptor's). */
int fr_thread_answer_finish(struct fr_thread_answer *a);

/* Frees the answer (finished or not); accepts NULL. */
void fr_thread_answer_free(struct fr_thread_answer *a);

/* The sample of `p` of thread (pid, tid) with the most of `event`'s value
 * (the first when several tie), or -1: none has any. */
ssize_t fr_thread_best_row(const struct fr_profile *p, uint32_t pid, uint32_t tid, uint32_t event);

#endif
