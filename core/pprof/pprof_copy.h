/* Re-encoding parts of a decoded profile (core/pprof/pprof_read.h) into a
 * new one (core/pprof/pprof.h): what `flightrec threads` does to give each
 * thread the stack a window's profile found for it, live
 * (recorder/requests/threads.c) and at a past moment (core/query/threads_at_write.c).
 * And the two sinks those answers are written through.
 */
#ifndef FR_CORE_PPROF_COPY_H
#define FR_CORE_PPROF_COPY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/pprof/pprof.h"
#include "core/pprof/pprof_read.h"

/* Locations, with their mappings and functions, of the decoded profile
 * `pd` added to the encoder `p` on first use. loc_ids and map_ids are the
 * caller's arrays of pd->nlocations and pd->nmappings zeros. */
struct fr_pprof_copy {
	struct fr_pprof *p;
	const struct fr_pprof_data *pd;
	uint64_t *loc_ids; /* by location index; 0: not added yet */
	uint64_t *map_ids; /* by mapping index */
};

/* The id in c->p of location `i` of c->pd, added (with at most 64 lines)
 * the first time. */
uint64_t fr_pprof_copy_location(struct fr_pprof_copy *c, size_t i);

/* The application labels of sample `s` of `pd` (its string labels but
 * the recorder's own: pid, tid, comm, thread, cgroup, cpu, host) into
 * out, at most `room`; the strings are pd's. Returns how many. */
size_t fr_pprof_copy_app_labels(const struct fr_pprof_data *pd, const struct fr_pprof_rsample *s,
				struct fr_pprof_label *out, size_t room);

/* The value column of sample type `type` in `pd`, or -1. */
ssize_t fr_pprof_data_column(const struct fr_pprof_data *pd, const char *type);

/* A growing buffer in memory, and its fr_write_fn. */
struct fr_membuf {
	char *p;
	size_t len, cap;
};
int fr_membuf_sink(void *arg, const void *buf, size_t len);

/* An fr_write_fn that writes everything to the descriptor *(int *)arg
 * (restarting on EINTR): 0 or -errno (-EIO for a write of 0 bytes). */
int fr_fd_sink(void *arg, const void *buf, size_t len);

#endif
