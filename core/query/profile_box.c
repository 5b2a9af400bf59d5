/* The black box in a profile's comments: the crashes and OOM kills of
 * the window (core/query/events.h), of the profile's targets and visible
 * processes, one comment each, so that a profile of the last minutes of
 * a process says how they ended.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof.h"
#include "core/query/events.h"
#include "core/store/chunk.h"
#include "core/query/profile_int.h"

/* Crashes and kills a profile's comments list at most. */
#define BOX_COMMENTS 20

int profile_box_chunk(struct builder *b, const struct fr_chunk *c)
{
	struct fr_events_request req = {
		.t0 = b->req->t0,
		.t1 = b->req->t1,
		.types = 1ull << FR_EVENT_CRASH | 1ull << FR_EVENT_OOM,
		.types_named = 1,
		.targets = b->req->targets,
	};

	if (!b->box) {
		b->box = calloc(1, sizeof(*b->box));
		if (!b->box)
			return -ENOMEM;
		b->box->t0 = req.t0;
		b->box->t1 = req.t1;
		/* Only the first few are told: the rest are counted. */
		b->box->max = BOX_COMMENTS;
	}
	return fr_events_add_chunk(b->box, &req, c, NULL);
}

void profile_box_comments(struct builder *b, struct fr_pprof *p)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0, n = 0;
	FILE *f;

	if (!b->box || !b->box->n || !p)
		return;
	fr_events_sort(b->box);
	f = open_memstream(&text, &len);
	if (!f)
		return;
	fr_events_write(f, b->box, 0);
	if (fclose(f) != 0) {
		free(text);
		return;
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char c[600];

		/* A crash's stack (indented) is not read: flightrec events has it. */
		if (line[0] == ' ')
			continue;
		if (n++ == BOX_COMMENTS)
			break;
		snprintf(c, sizeof(c), "event: %s", line);
		fr_pprof_comment(p, c);
	}
	if (b->box->more) {
		char c[160];

		snprintf(c, sizeof(c),
			 "event: and %" PRIu64 " more crashes and OOM kills (flightrec events)",
			 b->box->more);
		fr_pprof_comment(p, c);
	}
	free(text);
}
