/* Fuzz target for the memory files the recorder parses: oom:mark_victim's
 * tracepoint format and records (recorder/sampling/tp_format.h),
 * /proc's statm and pressure lines (recorder/tracking/proc_mem.h), and
 * throttling's cpu.stat, /proc/PID/cgroup and mountinfo lines
 * (recorder/tracking/cgcpu.h).
 *
 * Input: the bytes, parsed whole as a format file, as a statm line and as
 * a PSI file; when the format parses, the same bytes decoded as a record
 * of it (and every prefix of them a layout could ask for).
 *
 * Promises: no crash, no memory error, nothing read past the input; a
 * layout parsed has a 4-byte pid inside FR_TP_RECORD_MAX and a min_size
 * that covers it; a decoded victim has a positive pid and a NUL-terminated
 * comm; a record shorter than min_size is refused; a cgroup path found
 * is NUL-terminated, fits and passes fr_cgroup_path_ok; a mount point
 * found is absolute and fits.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "recorder/sampling/tp_format.h"
#include "recorder/tracking/cgcpu.h"
#include "recorder/tracking/proc_mem.h"

static void record(const struct fr_oom_format *f, const uint8_t *data, size_t size)
{
	struct fr_oom_victim v;
	uint32_t n = size > FR_TP_RECORD_MAX ? FR_TP_RECORD_MAX : (uint32_t)size;
	/* An exact copy, so a read past `n` is the sanitizer's to see. */
	unsigned char *raw = malloc(n ? n : 1);

	FUZZ_CHECK(raw != NULL, "malloc");
	memcpy(raw, data, n);
	if (fr_oom_decode(f, raw, n, &v) == 0) {
		FUZZ_CHECK(n >= f->min_size, "a record of %u bytes under %u decoded", n,
			   f->min_size);
		FUZZ_CHECK((int32_t)v.pid > 0, "pid %u", v.pid);
		FUZZ_CHECK(memchr(v.comm, '\0', sizeof(v.comm)) != NULL, "comm without a NUL");
	}
	free(raw);
}

static void cgroup_files(const char *text, size_t size)
{
	char path[FR_LIMIT_CGROUP_LEN], mp[FR_CGCPU_ROOT_MAX], *line = malloc(size + 1);
	struct fr_cpu_stat st;

	FUZZ_CHECK(line != NULL, "malloc");
	(void)fr_cpu_stat_parse(text, size, 0, &st);
	(void)fr_cpu_stat_parse(text, size, 1, &st);
	for (int v1 = 0; v1 < 2; v1++)
		if (fr_proc_cgroup_parse(text, size, v1, path, sizeof(path)) == 0)
			FUZZ_CHECK(memchr(path, '\0', sizeof(path)) && fr_cgroup_path_ok(path),
				   "a cgroup path refused by its own check");
	memcpy(line, text, size);
	line[size] = '\0';
	if (fr_mountinfo_cgroup(line, mp, sizeof(mp)))
		FUZZ_CHECK(mp[0] == '/' && memchr(mp, '\0', sizeof(mp)), "a bad mount point");
	free(line);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);
	struct fr_oom_format f;
	uint64_t v;

	FUZZ_CHECK(text != NULL, "malloc");
	memcpy(text, data, size);
	if (fr_oom_format_parse(text, size, &f) == 0) {
		FUZZ_CHECK(f.pid_size == 4 && f.pid_off + 4 <= FR_TP_RECORD_MAX &&
				   f.min_size >= f.pid_off + 4,
			   "a layout with pid at %u, min_size %u", f.pid_off, f.min_size);
		record(&f, data, size);
	}
	(void)fr_statm_parse(text, size, &v);
	(void)fr_pressure_parse_some(text, size, &v);
	{
		uint64_t some = 0, full = 0;
		int has_full = 0;

		if (fr_pressure_parse(text, size, &some, &full, &has_full) == 0)
			FUZZ_CHECK(has_full || full == 0, "full %llu without a full line",
				   (unsigned long long)full);
	}
	cgroup_files(text, size);
	free(text);
	return 0;
}
