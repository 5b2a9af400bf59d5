/*
 * Targets: which processes a profile, a session or a command line is about.
 * One struct for the three, so that a session's targets become a dump
 * request's, and the CLI's options an attach request's, by one assignment.
 *
 * Each kind that is given narrows the set (kinds combine with AND, values
 * of one kind with OR); a kind left empty takes every process. How a
 * profile matches samples against them is written beside
 * struct fr_profile_request (core/query/profile.h). The arrays are bounded by
 * core/util/limits.h; whoever fills them refuses more (a session's pids stop at
 * FR_LIMIT_SESSION_PIDS).
 */
#ifndef FR_CORE_TARGETS_H
#define FR_CORE_TARGETS_H

#include <stdbool.h>
#include <stdint.h>

#include "core/util/limits.h"

struct fr_targets {
	uint32_t npids; /* 0: every process */
	uint32_t pids[FR_LIMIT_PIDS];
	int children;	 /* with pids: also every process descended from
			       * them (by the "ppid" labels of the window's
			       * chunks), however short-lived */
	uint32_t ncomms; /* 0: any command name */
	char comms[FR_LIMIT_COMMS][FR_LIMIT_COMM_LEN];
	char cgroup[FR_LIMIT_CGROUP_LEN]; /* "": any cgroup; else "/a/b" */
	int has_uid;			  /* only processes whose real uid is `uid` */
	uint32_t uid;
};

/* Whether any kind of target is given (children alone narrows nothing). */
static inline bool fr_targets_given(const struct fr_targets *t)
{
	return t->npids || t->ncomms || t->cgroup[0] || t->has_uid;
}

#endif
