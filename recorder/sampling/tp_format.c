/* Tracepoint format files and oom:mark_victim records (tp_format.h). */
#include "recorder/sampling/tp_format.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int fr_tp_field(const char *line, char *name, size_t nlen, uint32_t *off, uint32_t *size,
		int *data_loc)
{
	const char *decl, *semi, *o, *s, *end, *start;
	unsigned uo, us;

	/* Continuation chunks of the long "print fmt" line never start with
	 * a tab and "field:". */
	if (strncmp(line, "\tfield:", 7) != 0)
		return -EINVAL;
	decl = line + 7;
	semi = strchr(decl, ';');
	o = semi ? strstr(semi, "offset:") : NULL;
	s = semi ? strstr(semi, "size:") : NULL;
	if (!o || !s || sscanf(o, "offset:%u", &uo) != 1 || sscanf(s, "size:%u", &us) != 1)
		return -EINVAL;
	end = semi;
	if (end > decl && end[-1] == ']') /* "char prev_comm[16]" */
		while (end > decl && *end != '[')
			end--;
	start = end;
	while (start > decl && start[-1] != ' ')
		start--;
	if (start == end || nlen == 0)
		return -EINVAL;
	snprintf(name, nlen, "%.*s", (int)(end - start), start);
	*off = uo;
	*size = us;
	*data_loc = strncmp(decl, "__data_loc ", 11) == 0;
	return 0;
}

/* Takes one field into `f` when it is one of those read. */
static void oom_field(struct fr_oom_format *f, const char *name, uint32_t off, uint32_t size,
		      int data_loc, unsigned *rss_found)
{
	static const char *const rss[3] = {"anon_rss", "file_rss", "shmem_rss"};

	if (strcmp(name, "pid") == 0 && size == 4 && !data_loc) {
		f->pid_off = off;
		f->pid_size = size;
	} else if (strcmp(name, "comm") == 0 && ((data_loc && size == 4) || (!data_loc && size))) {
		f->comm_off = off;
		f->comm_size = size;
		f->comm_data_loc = data_loc;
	}
	for (unsigned i = 0; i < 3; i++)
		if (strcmp(name, rss[i]) == 0 && (size == 4 || size == 8) && !data_loc) {
			f->rss_off[i] = off;
			f->rss_size[i] = size;
			*rss_found |= 1u << i;
		}
}

int fr_oom_format_parse(const char *text, size_t len, struct fr_oom_format *f)
{
	unsigned rss_found = 0;
	size_t at = 0;

	memset(f, 0, sizeof(*f));
	while (at < len) {
		char line[FR_TP_LINE_MAX], name[64];
		size_t n = 0;
		uint32_t off, size;
		int data_loc;

		/* One line, cut to the buffer (the rest of a long one is
		 * skipped). */
		while (at < len && text[at] != '\n') {
			if (n + 1 < sizeof(line) && text[at] != '\0')
				line[n++] = text[at];
			at++;
		}
		at++;
		line[n] = '\0';
		if (fr_tp_field(line, name, sizeof(name), &off, &size, &data_loc) < 0)
			continue;
		if (off > FR_TP_RECORD_MAX || size > FR_TP_RECORD_MAX - off)
			return -EPROTO;
		oom_field(f, name, off, size, data_loc, &rss_found);
	}
	if (!f->pid_size)
		return -EPROTO;
	f->has_rss = rss_found == 7;
	f->min_size = f->pid_off + f->pid_size;
	if (f->comm_size && f->comm_off + f->comm_size > f->min_size)
		f->min_size = f->comm_off + f->comm_size;
	for (unsigned i = 0; f->has_rss && i < 3; i++)
		if (f->rss_off[i] + f->rss_size[i] > f->min_size)
			f->min_size = f->rss_off[i] + f->rss_size[i];
	return 0;
}

static uint64_t field_u(const unsigned char *raw, uint32_t off, uint32_t size)
{
	uint32_t v32;
	uint64_t v64;

	if (size == 8) {
		memcpy(&v64, raw + off, sizeof(v64));
		return v64;
	}
	memcpy(&v32, raw + off, sizeof(v32));
	return v32;
}

/* The victim's comm, from a __data_loc (length << 16 | offset) or a fixed
 * array; what does not lie inside the record is left out. */
static void decode_comm(const struct fr_oom_format *f, const unsigned char *raw, uint32_t size,
			struct fr_oom_victim *v)
{
	uint32_t at = f->comm_off, n = f->comm_size, loc;
	size_t i;

	v->comm[0] = '\0';
	if (!f->comm_size)
		return;
	if (f->comm_data_loc) {
		loc = (uint32_t)field_u(raw, f->comm_off, 4);
		at = loc & 0xffff;
		n = loc >> 16;
	}
	if (at > size || n > size - at)
		return;
	for (i = 0; i < n && i + 1 < sizeof(v->comm) && raw[at + i]; i++)
		v->comm[i] = (char)raw[at + i];
	v->comm[i] = '\0';
}

int fr_oom_decode(const struct fr_oom_format *f, const unsigned char *raw, uint32_t size,
		  struct fr_oom_victim *v)
{
	int32_t pid;

	memset(v, 0, sizeof(*v));
	if (!raw || !f->pid_size || size < f->min_size)
		return -EBADMSG;
	memcpy(&pid, raw + f->pid_off, sizeof(pid));
	if (pid <= 0)
		return -EBADMSG;
	v->pid = (uint32_t)pid;
	decode_comm(f, raw, size, v);
	if (f->has_rss) {
		uint64_t kib = 0;

		for (unsigned i = 0; i < 3; i++) {
			uint64_t x = field_u(raw, f->rss_off[i], f->rss_size[i]);

			kib = x > UINT64_MAX - kib ? UINT64_MAX : kib + x;
		}
		v->rss = kib > UINT64_MAX / 1024 ? UINT64_MAX : kib * 1024;
		v->has_rss = 1;
	}
	return 0;
}
