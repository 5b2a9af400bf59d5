/* Why a profile came out empty: which of its targets, each alone with
 * the request's events, window and uid, matches no sample
 * (fr_profile_empty_targets()). The daemon's attach replies and
 * `flightrec dump --ring` say so by name instead of writing an empty
 * profile in silence.
 */
#include "core/query/profile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Whether `t` alone (with the request's uid and events) matches a sample
 * of the window: 1, 0, or -errno with a message in `err`. */
static int matches(struct fr_ring *ring, const struct fr_profile_request *preq,
		   const struct fr_targets *t, uint64_t *procs, char *err, size_t errlen)
{
	struct fr_profile_request *q = malloc(sizeof(*q));
	struct fr_profile_result *res = malloc(sizeof(*res));
	int ret = -ENOMEM;

	if (q && res) {
		*q = *preq;
		q->targets = *t;
		q->targets.has_uid = preq->targets.has_uid;
		q->targets.uid = preq->targets.uid;
		ret = fr_profile_count(ring, q, res, procs, err, errlen);
		if (ret == 0)
			ret = res->samples_seen > 0;
	}
	free(q);
	free(res);
	return ret;
}

int fr_profile_empty_targets(struct fr_ring *ring, const struct fr_profile_request *preq,
			     uint32_t *empty, uint64_t *procs, char *err, size_t errlen)
{
	const struct fr_targets *want = &preq->targets;
	struct fr_targets *t = calloc(1, sizeof(*t));
	uint32_t given = 0;
	int ret;

	*empty = 0;
	*procs = 0;
	if (!t)
		return -ENOMEM;
	ret = matches(ring, preq, t, procs, err, errlen);
	if (ret >= 0 && want->npids) {
		memcpy(t->pids, want->pids, sizeof(t->pids));
		t->npids = want->npids;
		t->children = want->children;
		given |= FR_TARGET_PID;
		ret = matches(ring, preq, t, NULL, err, errlen);
		*empty |= ret == 0 ? FR_TARGET_PID : 0;
		memset(t, 0, sizeof(*t));
	}
	if (ret >= 0 && want->ncomms) {
		memcpy(t->comms, want->comms, sizeof(t->comms));
		t->ncomms = want->ncomms;
		given |= FR_TARGET_COMM;
		ret = matches(ring, preq, t, NULL, err, errlen);
		*empty |= ret == 0 ? FR_TARGET_COMM : 0;
		memset(t, 0, sizeof(*t));
	}
	if (ret >= 0 && want->cgroup[0]) {
		memcpy(t->cgroup, want->cgroup, sizeof(t->cgroup));
		given |= FR_TARGET_CGROUP;
		ret = matches(ring, preq, t, NULL, err, errlen);
		*empty |= ret == 0 ? FR_TARGET_CGROUP : 0;
		memset(t, 0, sizeof(*t));
	}
	if (ret >= 0 && fr_targets_labels_given(want)) {
		t->nlabels = want->nlabels;
		memcpy(t->label_keys, want->label_keys, sizeof(t->label_keys));
		memcpy(t->label_values, want->label_values, sizeof(t->label_values));
		memcpy(t->label_key, want->label_key, sizeof(t->label_key));
		given |= FR_TARGET_LABEL;
		ret = matches(ring, preq, t, NULL, err, errlen);
		*empty |= ret == 0 ? FR_TARGET_LABEL : 0;
	}
	if (ret >= 0 && given && !*empty)
		*empty = FR_TARGET_COMBINED;
	free(t);
	return ret < 0 ? ret : 0;
}
