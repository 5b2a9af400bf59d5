/* The flightrecd configuration: the embedded default, parsing and strict
 * validation of a JSON file, and printing of the effective result.
 *
 * Validation walks the document once, in a fixed order (top-level keys,
 * limits, ring, socket, dumps, sessions; in a session its name, targets,
 * triggers, events), and stops at the first problem, which it reports as
 * "SOURCE: JSON.PATH: what is wrong, what is accepted". The limits come
 * first because they bound other values (an event's hz); targets come
 * before triggers because an exit trigger needs them. A
 * key that is absent takes its default; a key that is present must be
 * right, and a key nobody knows is an error, so a typo never silently
 * falls back to a default. The result is all or nothing: on any error the
 * struct is left empty.
 *
 * This file reads the text and owns the struct's lifecycle; the walk
 * itself is config/config_parse.c (top level, sessions) and
 * config/config_trigger.c (triggers), on the value readers of
 * config/config_value.c; config/config_json.c prints the result.
 */
#include "config/config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/store/sample.h"

/* Config files are small; this bounds what a mistaken path (a log file, a
 * device) can make the daemon read. */
#define MAX_CONFIG_BYTES (1u << 20)

const char fr_config_default_json[] =
	"{\n"
	"\t\"ring\": {\"size\": \"256MiB\", \"segment\": \"1MiB\", \"sync\": \"1s\"},\n"
	"\t\"limits\": {\"max_rate_hz\": 10000, \"max_clients\": 64, \"memory\": \"512MiB\"},\n"
	"\t\"sessions\": [\n"
	"\t\t{\"name\": \"default\", \"events\": [{\"event\": \"cpu\", \"hz\": 99}, "
	"{\"event\": \"offcpu\"}, {\"event\": \"alloc\", \"mean\": \"512KiB\"}]}\n"
	"\t]\n"
	"}\n";

/* Reports a syntax error at `pos` (a byte offset into text) as a line and
 * column, both counted from 1. */
static int syntax_error(struct config_ctx *c, const char *text, size_t len, size_t skip, size_t pos)
{
	size_t line = 1, col = 1;

	if (pos > len)
		pos = len;
	for (size_t i = skip; i < pos; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	if (pos >= len)
		return config_fail(c, NULL,
				   "line %zu, column %zu: invalid JSON (unexpected end of input)",
				   line, col);
	return config_fail(c, NULL, "line %zu, column %zu: invalid JSON", line, col);
}

int fr_config_parse(struct fr_config *cfg, const char *json, size_t len, const char *source,
		    char *err, size_t errlen)
{
	struct config_ctx c = {.source = source, .err = err, .errlen = errlen};
	const char *end = NULL;
	size_t skip = 0;
	cJSON *root = NULL;
	char *text;
	const char *nul;
	int ret;

	memset(cfg, 0, sizeof(*cfg));
	if (err && errlen)
		err[0] = '\0';

	cfg->ring_size = DEFAULT_RING_SIZE;
	cfg->segment_size = DEFAULT_SEGMENT_SIZE;
	cfg->sync_ns = DEFAULT_SYNC_NS;
	cfg->max_rate_hz = DEFAULT_MAX_RATE_HZ;
	cfg->max_clients = DEFAULT_MAX_CLIENTS;
	cfg->memory = DEFAULT_MEMORY;
	cfg->dumps_keep = DEFAULT_DUMPS_KEEP;
	cfg->dumps_mode = DEFAULT_DUMPS_MODE;
	if (config_symbols_default(cfg) < 0) {
		ret = -ENOMEM;
		config_fail(&c, NULL, "out of memory");
		goto err;
	}

	/* The parser wants a NUL-terminated copy; it is also told to insist
	 * that the terminator follows the value, so trailing text is an
	 * error rather than silently ignored. */
	text = malloc(len + 1);
	if (!text) {
		ret = -ENOMEM;
		config_fail(&c, NULL, "out of memory");
		goto err;
	}
	memcpy(text, json, len);
	text[len] = '\0';

	/* Editors on some systems start UTF-8 files with a byte order mark. */
	if (len >= 3 && memcmp(text, "\xef\xbb\xbf", 3) == 0)
		skip = 3;
	nul = memchr(text + skip, '\0', len - skip);
	if (nul) {
		ret = syntax_error(&c, text, len, skip, (size_t)(nul - text));
		goto err_text;
	}
	root = cJSON_ParseWithLengthOpts(text + skip, len - skip + 1, &end, 1);
	if (!root) {
		/* The position cJSON reports (the same as cJSON_GetErrorPtr,
		 * but per call, so this is safe in threads). */
		size_t pos = end ? (size_t)(end - text) : len;

		ret = syntax_error(&c, text, len, skip, pos);
		goto err_text;
	}

	ret = config_parse_root(&c, root, cfg);
	if (ret < 0) {
		if (ret == -ENOMEM)
			config_fail(&c, NULL, "out of memory");
		goto err_root;
	}
	cJSON_Delete(root);
	free(text);
	return 0;

err_root:
	cJSON_Delete(root);
err_text:
	free(text);
err:
	fr_config_fini(cfg);
	return ret;
}

int fr_config_load(struct fr_config *cfg, const char *path, char *err, size_t errlen)
{
	size_t cap = 4096, len = 0;
	char *buf = NULL;
	int fd, ret;

	memset(cfg, 0, sizeof(*cfg));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return ret;
	}

	buf = malloc(cap);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto out;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			char *grown;

			if (cap >= MAX_CONFIG_BYTES) {
				ret = -EFBIG;
				snprintf(err, errlen,
					 "%s: larger than %u bytes; is this a config file?", path,
					 MAX_CONFIG_BYTES);
				goto out;
			}
			grown = realloc(buf, cap * 2);
			if (!grown) {
				ret = -ENOMEM;
				snprintf(err, errlen, "%s: out of memory", path);
				goto out;
			}
			buf = grown;
			cap *= 2;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	ret = fr_config_parse(cfg, buf, len, path, err, errlen);
out:
	free(buf);
	close(fd);
	return ret;
}

int fr_config_default(struct fr_config *cfg)
{
	char err[256];
	int ret;

	ret = fr_config_parse(cfg, fr_config_default_json, strlen(fr_config_default_json),
			      "built-in default", err, sizeof(err));
	/* The embedded text is valid; only memory can fail here. */
	return ret == -EINVAL ? -ENOMEM : ret;
}

void fr_config_event_defaults(struct fr_config_event *ev)
{
	/* offcpu's eBPF mechanism copies stacks only for long waits, where the
	 * thread goes back to user space: cheap enough to be the default. */
	if (FR_CONFIG_HAS_DWARF) {
		ev->unwind = FR_CONFIG_UNWIND_DWARF;
		ev->stack_copy = FR_CONFIG_STACK_COPY_DEFAULT;
	} else {
		ev->unwind = FR_CONFIG_UNWIND_FP;
		ev->stack_copy = 0;
	}
	ev->mechanism = FR_CONFIG_OFFCPU_BPF;
	ev->min_wait_ns = ev->event == FR_EVENT_OFFCPU ? FR_CONFIG_MIN_WAIT_DEFAULT : 0;
	ev->mean = ev->event == FR_EVENT_ALLOC ? FR_CONFIG_ALLOC_MEAN_DEFAULT : 0;
}

uint32_t fr_config_max_hz(const struct fr_config *cfg, uint32_t event)
{
	uint32_t hz = 0;

	for (uint32_t s = 0; s < cfg->nsessions; s++)
		for (uint32_t e = 0; e < cfg->sessions[s].nevents; e++)
			if (cfg->sessions[s].events[e].event == event &&
			    cfg->sessions[s].events[e].hz > hz)
				hz = cfg->sessions[s].events[e].hz;
	return hz;
}

void fr_config_fini(struct fr_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->ring_path);
	free(cfg->socket_path);
	free(cfg->dumps_dir);
	config_symbols_fini(cfg);
	config_export_fini(cfg);
	memset(cfg, 0, sizeof(*cfg));
}
