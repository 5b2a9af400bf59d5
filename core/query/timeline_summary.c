/* Timelines from chunk summaries (chunk section 4, core/store/chunk.h). */
#include <errno.h>

#include "core/query/timeline_int.h"

int tl_summary_add(struct tl *tl, const void *buf, size_t len)
{
	(void)tl;
	(void)buf;
	(void)len;
	return -ENOENT;
}
