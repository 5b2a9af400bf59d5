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
#include <stdio.h>
#include <string.h>

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
	/* Application labels (lib/flightrec/labels.h): only samples that
	 * carry every one of these key=value pairs, and, when label_key is
	 * not "", a value for that key. These choose samples, not processes:
	 * fr_targets_given() ignores them. */
	uint32_t nlabels;
	char label_keys[FR_LIMIT_LABELS][FR_LIMIT_LABEL_LEN];
	char label_values[FR_LIMIT_LABELS][FR_LIMIT_LABEL_LEN];
	char label_key[FR_LIMIT_LABEL_LEN];
};

/* Adds "key=value" (split at the first '=') to t's label filter. Returns
 * 0, or -1 when it is not KEY=VALUE with a key and value of at most
 * FR_LIMIT_LABEL_LEN - 1 characters, or t has FR_LIMIT_LABELS already. */
static inline int fr_targets_add_label(struct fr_targets *t, const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t klen = eq ? (size_t)(eq - kv) : 0;

	if (!eq || klen == 0 || klen >= FR_LIMIT_LABEL_LEN ||
	    strlen(eq + 1) >= FR_LIMIT_LABEL_LEN || t->nlabels >= FR_LIMIT_LABELS)
		return -1;
	memcpy(t->label_keys[t->nlabels], kv, klen);
	t->label_keys[t->nlabels][klen] = 0;
	snprintf(t->label_values[t->nlabels], FR_LIMIT_LABEL_LEN, "%s", eq + 1);
	t->nlabels++;
	return 0;
}

/* Sets t's label_key; -1 when it is empty or too long. */
static inline int fr_targets_set_label_key(struct fr_targets *t, const char *key)
{
	if (!key[0] || strlen(key) >= FR_LIMIT_LABEL_LEN)
		return -1;
	snprintf(t->label_key, sizeof(t->label_key), "%s", key);
	return 0;
}

/* Whether t filters on application labels. */
static inline bool fr_targets_labels_given(const struct fr_targets *t)
{
	return t->nlabels || t->label_key[0];
}

/* The processes of `src` alone (its pids and command names) into `dst`,
 * the other kinds left empty: what narrows a timeline. */
static inline void fr_targets_processes(struct fr_targets *dst, const struct fr_targets *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->npids = src->npids;
	memcpy(dst->pids, src->pids, sizeof(dst->pids));
	dst->ncomms = src->ncomms;
	memcpy(dst->comms, src->comms, sizeof(dst->comms));
}

/* Whether any kind of target is given (children alone narrows nothing). */
static inline bool fr_targets_given(const struct fr_targets *t)
{
	return t->npids || t->ncomms || t->cgroup[0] || t->has_uid;
}

#endif
