/* Fuzz target for the perf map parser (core/symbols/perfmap.h), which reads
 * /tmp/perf-PID.map files any user may write.
 *
 * Input: the map's bytes, parsed whole and then every address each line
 * names (and the bytes around it) looked up.
 *
 * Promises: no crash, no memory error; -E2BIG only past
 * FR_PERFMAP_MAX_ENTRIES; a name handed back is a string of at most
 * FR_PERFMAP_MAX_NAME bytes without control characters; lookups agree with
 * the entries' order (an address is named by at most one entry, so the
 * same address always gives the same name).
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "core/symbols/perfmap.h"

static void check_name(const char *name)
{
	size_t len = strlen(name);

	FUZZ_CHECK(len <= FR_PERFMAP_MAX_NAME, "a name of %zu bytes", len);
	for (size_t i = 0; i < len; i++)
		FUZZ_CHECK((unsigned char)name[i] >= 0x20 && name[i] != 0x7f,
			   "control character %#x in a name", (unsigned)(unsigned char)name[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy with a NUL after it, for strtoull() below; the parser gets
	 * exactly `size` bytes. */
	char *text = malloc(size + 1);
	const char *end = text + size;
	struct fr_perfmap *m = NULL;
	int ret;

	FUZZ_CHECK(text != NULL, "malloc");
	memcpy(text, data, size);
	text[size] = '\0';
	ret = fr_perfmap_parse(text, size, &m);
	FUZZ_CHECK(ret == 0 || ret == -E2BIG || ret == -ENOMEM, "parse: %d", ret);
	if (ret < 0) {
		free(text);
		return 0;
	}
	FUZZ_CHECK(fr_perfmap_count(m) <= FR_PERFMAP_MAX_ENTRIES, "%zu entries",
		   fr_perfmap_count(m));
	/* Every line's start, the byte before it and its last byte. */
	for (char *p = text; p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *after;
		uint64_t start = strtoull(p, &after, 16), size_ = strtoull(after, NULL, 16);
		uint64_t probes[] = {start, start - 1, start + size_ - 1, start + size_};

		for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
			const char *a = NULL, *b = NULL;

			if (fr_perfmap_lookup(m, probes[i], &a) == 0) {
				check_name(a);
				FUZZ_CHECK(fr_perfmap_lookup(m, probes[i], &b) == 0 && a == b,
					   "two answers at %#" PRIx64, probes[i]);
			}
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	fr_perfmap_free(m);
	free(text);
	return 0;
}
