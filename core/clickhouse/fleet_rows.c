/* Fleet query answers' rows into a fleet profile (see fleet_rows.h): the
 * one reader of them, used by tools/fleet/fleet_attach.c and the rowbinary fuzz
 * target alike. */
#include "core/clickhouse/fleet_rows.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

enum field { FUNC, FILE_, MAPPING, BUILD_ID };

static struct fr_fleet_str *field_of(struct fr_fleet_frame *f, enum field which)
{
	switch (which) {
	case FUNC: return &f->func;
	case FILE_: return &f->file;
	case MAPPING: return &f->mapping;
	default: return &f->build_id;
	}
}

/* An Array(String) into one field of each frame; its length must be *n,
 * or sets *n when it is UINT64_MAX (the first array). Frames past
 * FR_FLEET_MAX_FRAMES are read and dropped. */
static int read_strs(struct fr_rb_cur *c, struct fr_fleet_frame *f, enum field which, uint64_t *n)
{
	uint64_t len;
	int ret = fr_rb_len(c, &len);

	if (ret < 0)
		return ret;
	if (*n == UINT64_MAX)
		*n = len;
	if (len != *n)
		return -EBADMSG;
	for (uint64_t i = 0; i < len; i++) {
		const char *s;
		size_t sl;

		ret = fr_rb_str(c, &s, &sl);
		if (ret < 0)
			return ret;
		if (i < FR_FLEET_MAX_FRAMES)
			*field_of(&f[i], which) = (struct fr_fleet_str){s, sl};
	}
	return 0;
}

int fr_fleet_stack_row(void *arg, struct fr_rb_cur *c)
{
	struct fr_fleet_rows *r = arg;
	uint64_t id, n = UINT64_MAX, nl;
	int ret;

	memset(r->frames, 0, sizeof(r->frames));
	if ((ret = fr_rb_uint(c, 8, &id)) < 0 || (ret = read_strs(c, r->frames, FUNC, &n)) < 0 ||
	    (ret = read_strs(c, r->frames, FILE_, &n)) < 0)
		return ret;
	if ((ret = fr_rb_len(c, &nl)) < 0)
		return ret;
	if (nl != n)
		return -EBADMSG;
	for (uint64_t i = 0; i < nl; i++) {
		uint64_t line;

		if ((ret = fr_rb_uint(c, 4, &line)) < 0)
			return ret;
		if (i < FR_FLEET_MAX_FRAMES)
			r->frames[i].line = line;
	}
	if ((ret = read_strs(c, r->frames, MAPPING, &n)) < 0 ||
	    (ret = read_strs(c, r->frames, BUILD_ID, &n)) < 0)
		return ret;
	return fr_fleet_pprof_stack(r->fp, id, r->frames,
				    n < FR_FLEET_MAX_FRAMES ? (size_t)n : FR_FLEET_MAX_FRAMES);
}

int fr_fleet_sample_row(void *arg, struct fr_rb_cur *c)
{
	struct fr_fleet_rows *r = arg;
	struct fr_fleet_str host;
	uint64_t id, count, value;
	int ret;

	if ((ret = fr_rb_str(c, &host.s, &host.len)) < 0 || (ret = fr_rb_uint(c, 8, &id)) < 0 ||
	    (ret = fr_rb_uint(c, 8, &count)) < 0 || (ret = fr_rb_uint(c, 8, &value)) < 0)
		return ret;
	return fr_fleet_pprof_sample(r->fp, host, id, count, value);
}
