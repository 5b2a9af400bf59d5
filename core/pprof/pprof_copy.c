/* Re-encoding parts of a decoded profile, and two sinks (see pprof_copy.h). */
#include "core/pprof/pprof_copy.h"

#include <errno.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

uint64_t fr_pprof_copy_location(struct fr_pprof_copy *c, size_t i)
{
	const struct fr_pprof_rlocation *loc = &c->pd->locations[i];
	struct fr_pprof_line lines[64];
	uint64_t map = 0;
	size_t n = 0;

	if (c->loc_ids[i])
		return c->loc_ids[i];
	if (loc->mapping >= 0) {
		const struct fr_pprof_rmapping *m = &c->pd->mappings[loc->mapping];

		if (!c->map_ids[loc->mapping])
			c->map_ids[loc->mapping] =
				fr_pprof_mapping(c->p, m->memory_start, m->memory_limit,
						 m->file_offset, m->filename,
						 m->build_id[0] ? m->build_id : NULL, 1);
		map = c->map_ids[loc->mapping];
	}
	for (; n < loc->nline && n < sizeof(lines) / sizeof(lines[0]); n++) {
		const char *name = c->pd->functions[c->pd->line_funcs[loc->line + n]].name;

		lines[n] = (struct fr_pprof_line){fr_pprof_function(c->p, name, NULL, NULL), 0};
	}
	c->loc_ids[i] = fr_pprof_location_lines(c->p, map, loc->address, lines, n);
	return c->loc_ids[i];
}

ssize_t fr_pprof_data_column(const struct fr_pprof_data *pd, const char *type)
{
	for (size_t i = 0; i < pd->ntypes; i++)
		if (strcmp(pd->types[i].type, type) == 0)
			return (ssize_t)i;
	return -1;
}

int fr_membuf_sink(void *arg, const void *buf, size_t len)
{
	struct fr_membuf *m = arg;

	if (m->len + len > m->cap) {
		size_t cap = m->cap ? m->cap : 65536;
		char *p;

		while (cap < m->len + len)
			cap *= 2;
		if (!(p = realloc(m->p, cap)))
			return -ENOMEM;
		m->p = p;
		m->cap = cap;
	}
	memcpy(m->p + m->len, buf, len);
	m->len += len;
	return 0;
}

int fr_fd_sink(void *arg, const void *buf, size_t len)
{
	int fd = *(int *)arg;

	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		buf = (const char *)buf + n;
		len -= (size_t)n;
	}
	return 0;
}

size_t fr_pprof_copy_app_labels(const struct fr_pprof_data *pd, const struct fr_pprof_rsample *s,
				struct fr_pprof_label *out, size_t room)
{
	static const char *const ours[] = {"pid", "tid", "comm", "thread", "cgroup", "cpu", "host"};
	size_t n = 0;

	for (size_t k = 0; k < s->nlabel && n < room; k++) {
		const struct fr_pprof_rlabel *lb = &pd->labels[s->label + k];
		bool own = false;

		if (!lb->str || !lb->key)
			continue;
		for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]) && !own; i++)
			own = strcmp(lb->key, ours[i]) == 0;
		if (!own)
			out[n++] = (struct fr_pprof_label){.key = lb->key, .str = lb->str};
	}
	return n;
}
