/* The configuration's "symbols" object: where separate debug files are
 * looked for, and the on-disk symbol cache of the recorder (its
 * directory and bounds). Read and printed back here, so the key has one
 * owner in config/.
 */
#include "config/config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/parse.h"

int config_symbols_default(struct fr_config *cfg)
{
	config_symbols_fini(cfg);
	cfg->symbols.cache_size = DEFAULT_SYMBOL_CACHE_SIZE;
	cfg->symbols.cache_file_max = DEFAULT_SYMBOL_CACHE_FILE_MAX;
	cfg->symbols.debug_dirs[0] = strdup(DEFAULT_DEBUG_DIR);
	if (!cfg->symbols.debug_dirs[0])
		return -ENOMEM;
	cfg->symbols.ndebug_dirs = 1;
	return 0;
}

void config_symbols_fini(struct fr_config *cfg)
{
	for (uint32_t i = 0; i < cfg->symbols.ndebug_dirs; i++)
		free(cfg->symbols.debug_dirs[i]);
	free(cfg->symbols.cache_dir);
	memset(&cfg->symbols, 0, sizeof(cfg->symbols));
}

/* An absolute directory path: debug files and the cache are looked up
 * from "/", never from the daemon's working directory. */
static int get_abs_dir(struct config_ctx *c, const cJSON *item, const char *path, char **out)
{
	int ret = config_get_path(c, item, path, FR_CONFIG_PATH_MAX - 1, out);

	if (ret < 0)
		return ret;
	if ((*out)[0] != '/') {
		free(*out);
		*out = NULL;
		return config_fail(c, path, "must be an absolute path, got \"%s\"",
				   item->valuestring);
	}
	return 0;
}

static int parse_debug_dirs(struct config_ctx *c, const cJSON *dirs, struct fr_config_symbols *sym)
{
	char path[PATH_MAX_LEN], got[64];
	const cJSON *it;
	int i = 0, ret;

	if (!cJSON_IsArray(dirs))
		return config_fail(c, "symbols.debug_dirs",
				   "must be an array of paths like [\"/usr/lib/debug\"], got %s",
				   config_describe(dirs, got, sizeof(got)));
	if (cJSON_GetArraySize(dirs) > FR_CONFIG_MAX_DEBUG_DIRS)
		return config_fail(c, "symbols.debug_dirs",
				   "must list at most %d directories, got %d",
				   FR_CONFIG_MAX_DEBUG_DIRS, cJSON_GetArraySize(dirs));
	for (uint32_t k = 0; k < sym->ndebug_dirs; k++)
		free(sym->debug_dirs[k]);
	sym->ndebug_dirs = 0;
	cJSON_ArrayForEach(it, dirs) {
		config_join_index(path, "symbols.debug_dirs", i++);
		ret = get_abs_dir(c, it, path, &sym->debug_dirs[sym->ndebug_dirs]);
		if (ret < 0)
			return ret;
		sym->ndebug_dirs++;
	}
	return 0;
}

static int parse_cache(struct config_ctx *c, const cJSON *symbols, struct fr_config_symbols *sym)
{
	const cJSON *it;
	char got[64];
	int ret;

	it = cJSON_GetObjectItemCaseSensitive(symbols, "cache_dir");
	if (it) {
		ret = get_abs_dir(c, it, "symbols.cache_dir", &sym->cache_dir);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(symbols, "cache_size");
	if (it) {
		ret = config_get_size(c, it, "symbols.cache_size", &sym->cache_size);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(symbols, "cache_file_max");
	if (it) {
		ret = config_get_size(c, it, "symbols.cache_file_max", &sym->cache_file_max);
		if (ret < 0)
			return ret;
		if (sym->cache_file_max < 4096 || sym->cache_file_max > MAX_SYMBOL_CACHE_FILE_MAX)
			return config_fail(c, "symbols.cache_file_max",
					   "must be 4KiB..1GiB (the largest ELF file read), got %s",
					   config_describe(it, got, sizeof(got)));
	}
	return 0;
}

int config_parse_symbols(struct config_ctx *c, const cJSON *symbols, struct fr_config *cfg)
{
	static const char *const keys[] = {"debug_dirs", "cache_dir", "cache_size",
					   "cache_file_max"};
	const cJSON *dirs;
	char got[64];
	int ret;

	if (!symbols)
		return 0;
	if (!cJSON_IsObject(symbols))
		return config_fail(c, "symbols",
				   "must be an object like {\"cache_size\": \"1GiB\"}, got %s",
				   config_describe(symbols, got, sizeof(got)));
	ret = config_check_keys(c, symbols, "symbols", keys, ARRAY_SIZE(keys));
	if (ret < 0)
		return ret;
	dirs = cJSON_GetObjectItemCaseSensitive(symbols, "debug_dirs");
	if (dirs) {
		ret = parse_debug_dirs(c, dirs, &cfg->symbols);
		if (ret < 0)
			return ret;
	}
	return parse_cache(c, symbols, &cfg->symbols);
}

/* A size as the config accepts it: the friendly form when it reads back
 * exactly, else plain bytes. */
static const char *size_text(uint64_t bytes, char *buf, size_t len)
{
	uint64_t back;

	fr_format_size(bytes, buf, len);
	if (fr_parse_size(buf, &back) < 0 || back != bytes)
		snprintf(buf, len, "%" PRIu64 "B", bytes);
	return buf;
}

bool config_symbols_json(cJSON *root, const struct fr_config *cfg)
{
	const struct fr_config_symbols *sym = &cfg->symbols;
	cJSON *o = cJSON_AddObjectToObject(root, "symbols");
	cJSON *dirs = o ? cJSON_AddArrayToObject(o, "debug_dirs") : NULL;
	char buf[64];

	if (!dirs)
		return false;
	for (uint32_t i = 0; i < sym->ndebug_dirs; i++) {
		cJSON *s = cJSON_CreateString(sym->debug_dirs[i]);

		if (!s || !cJSON_AddItemToArray(dirs, s)) {
			cJSON_Delete(s);
			return false;
		}
	}
	if (sym->cache_dir && !cJSON_AddStringToObject(o, "cache_dir", sym->cache_dir))
		return false;
	return cJSON_AddStringToObject(o, "cache_size",
				       size_text(sym->cache_size, buf, sizeof(buf))) &&
	       cJSON_AddStringToObject(o, "cache_file_max",
				       size_text(sym->cache_file_max, buf, sizeof(buf)));
}
