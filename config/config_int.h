/* Private to config/: the defaults, the bounds of the schema and the
 * helpers every part of the parser shares.
 *
 * The parser is one walk over the document (config/config.c reads the text
 * and starts it; config/config_parse.c takes the top level and the
 * sessions; config/config_trigger.c the triggers of a session). Every step
 * reads values with the config_get_* helpers of config/config_value.c and
 * reports the first problem with config_fail(), which writes
 * "SOURCE: JSON.PATH: message" and returns -EINVAL, so a step can simply
 * `return config_fail(...)`.
 */
#ifndef FR_CONFIG_CONFIG_INT_H
#define FR_CONFIG_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "config/config.h"
#include "core/util/time.h"

/* What an absent key means. fr_config_default_json spells out the same
 * values; the unit test checks that parsing "{}" and the default agree. */
#define DEFAULT_RING_SIZE (256ull << 20)
#define DEFAULT_SEGMENT_SIZE (1ull << 20)
#define DEFAULT_SYNC_NS FR_NS_PER_S
#define DEFAULT_MAX_RATE_HZ 10000
#define DEFAULT_MAX_CLIENTS 64
#define DEFAULT_USER_MAX_RATE_HZ 99
#define DEFAULT_MEMORY (512ull << 20)
/* The label table alone may take 56 MiB (recorder/tracking/labelsets.h). */
#define MIN_MEMORY (64ull << 20)
#define MIN_QUERY_MEMORY (1ull << 20)
/* The unwind tables' budget (recorder/tracking/unwind_tables.h). */
#define MIN_UNWIND_TABLE_MEMORY (1ull << 20)
#define DEFAULT_SESSION "default"
#define DEFAULT_HZ 99
#define DEFAULT_DUMPS_KEEP 50
#define DEFAULT_DUMPS_MODE 0600
#define DEFAULT_DEBUG_DIR "/usr/lib/debug"
#define DEFAULT_SYMBOL_CACHE_SIZE (1ull << 30)
#define DEFAULT_SYMBOL_CACHE_FILE_MAX (256ull << 20)
#define MAX_SYMBOL_CACHE_FILE_MAX (1ull << 30)
#define DEFAULT_TRIGGER_WINDOW_NS (60 * FR_NS_PER_S)
#define DEFAULT_TRIGGER_COOLDOWN_NS (60 * FR_NS_PER_S)
#define DEFAULT_TRIGGER_FOR_NS (10 * FR_NS_PER_S)

#define MAX_RATE_HZ_LIMIT 100000
#define MAX_CLIENTS_LIMIT 1024
#define MIN_SEGMENT_SIZE (64ull << 10)
#define SEGMENT_ALIGN 4096ull
#define MAX_DUMPS_KEEP 100000
/* A trigger's window plus its tail: what one dump may span. */
#define MAX_TRIGGER_SPAN_NS (3600 * FR_NS_PER_S)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Where messages go: the input's name and the caller's buffer. */
struct config_ctx {
	const char *source;
	char *err;
	size_t errlen;
};

/* Path of a JSON value, "sessions[1].events[0].hz". Long enough for any
 * path this schema has plus a user's (truncated) unknown key. */
#define PATH_MAX_LEN 192

/* Writes "SOURCE: PATH: message" into c->err. Returns -EINVAL. */
int config_fail(struct config_ctx *c, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* out = parent.key, or parent[i]; out holds PATH_MAX_LEN bytes. */
void config_join(char *out, const char *parent, const char *key);
void config_join_index(char *out, const char *parent, int i);

/* Renders a value for "got ..." in messages: its JSON text, shortened.
 * Returns buf. */
const char *config_describe(const cJSON *item, char *buf, size_t len);

/* Rejects keys outside `accepted` and keys given twice. Returns 0 or
 * -EINVAL with the message set. */
int config_check_keys(struct config_ctx *c, const cJSON *obj, const char *path,
		      const char *const *accepted, size_t naccepted);

/* The readers of one value: each returns 0 with the value in `out`, or
 * -EINVAL with a message naming `path` and what is accepted (-ENOMEM out
 * of memory). */
int config_get_uint(struct config_ctx *c, const cJSON *item, const char *path, uint32_t min,
		    uint32_t max, uint32_t *out);
int config_get_size(struct config_ctx *c, const cJSON *item, const char *path, uint64_t *out);
/* A non-empty string of at most `max` bytes, strdup'ed into *out. */
int config_get_path(struct config_ctx *c, const cJSON *item, const char *path, size_t max,
		    char **out);
/* A user (group != 0: a group) of this machine, by name or number. */
int config_get_id(struct config_ctx *c, const cJSON *item, const char *path, int group,
		  uint32_t *out);
/* A duration of at least `min_ns`; `like` shows examples in messages. */
int config_get_duration(struct config_ctx *c, const cJSON *item, const char *path, int64_t min_ns,
			const char *like, int64_t *out);

/* A duration as the config accepts it; plain ns when the friendly form
 * would not read back exactly. Returns buf. */
char *config_duration_text(int64_t ns, char *buf, size_t len);

/* The document's top level (an object) into cfg, which holds the
 * defaults. Returns 0, -EINVAL with the message set, or -ENOMEM. */
int config_parse_root(struct config_ctx *c, const cJSON *root, struct fr_config *cfg);

/* "sessions" into cfg (config/config_session.c): the default session when
 * there is none. Returns 0, -EINVAL with the message set, or -ENOMEM. */
int config_parse_sessions(struct config_ctx *c, const cJSON *sessions, struct fr_config *cfg);

/* "symbols" into cfg->symbols, which holds the defaults
 * (config/config_symbols.c). Returns 0, -EINVAL with the message set, or
 * -ENOMEM. */
int config_parse_symbols(struct config_ctx *c, const cJSON *symbols, struct fr_config *cfg);

/* "export" into cfg->export (config/config_export.c). Returns 0 or
 * -EINVAL with the message set (-ENOMEM). */
int config_parse_export(struct config_ctx *c, const cJSON *exp, struct fr_config *cfg);

/* Frees what cfg->export owns. */
void config_export_fini(struct fr_config *cfg);

/* Adds "export" to the printed configuration when it is enabled. Returns
 * false out of memory. */
bool config_export_json(cJSON *root, const struct fr_config *cfg);

/* Sets cfg->symbols to the defaults. Returns 0 or -ENOMEM. */
int config_symbols_default(struct fr_config *cfg);

/* Frees what cfg->symbols owns. */
void config_symbols_fini(struct fr_config *cfg);

/* Adds "symbols" to the printed configuration. Returns false out of
 * memory. */
bool config_symbols_json(cJSON *root, const struct fr_config *cfg);

/* "triggers" of a session whose targets are already parsed. Returns 0 or
 * -EINVAL with the message set. */
int config_parse_triggers(struct config_ctx *c, const cJSON *triggers, const char *path,
			  struct fr_config_session *sess);

#endif
