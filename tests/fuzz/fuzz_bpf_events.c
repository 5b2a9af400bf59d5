/* Fuzz target for the decoding of the black box's records
 * (recorder/sampling/bpf_events.h): what its eBPF program writes in the
 * ring buffer. The kernel writes them, but the decoder trusts no length
 * it reads there.
 *
 * Input: byte 0 chooses the stack copy the program was loaded with (0 to
 * 248 bytes, a multiple of 8); the rest is one record, copied into a
 * buffer of exactly its size.
 *
 * Promises: no crash, nothing read past the record; a record decoded is
 * one of exec, exit, crash with a NUL-terminated comm and path; a crash's
 * kernel frames, user stack and labels lie inside the record, its user
 * stack no longer than the copy; the labels of an event are at most
 * FR_BPF_EVENT_LABELS pairs of known keys, each value NUL-terminated;
 * signal and si_code names are asked of any numbers.
 */
#include "tests/fuzz/fuzz.h"

#include <errno.h>
#include <string.h>

#include "core/store/sample.h"
#include "recorder/sampling/bpf_events.h"

static int inside(const void *p, size_t len, const uint8_t *rec, size_t size)
{
	const uint8_t *b = p;

	return b >= rec && len <= size && b - rec <= (ptrdiff_t)(size - len);
}

static void labels(const struct fr_bpf_event *ev)
{
	static const char *const keys[] = {"path", "ppid",   "old_pid", "exit_code", "signal",
					   "core", "cpu_ns", "code",	"addr"};
	struct fr_bpf_event_labels l;
	uint32_t n = fr_bpf_event_labels(ev, &l);

	FUZZ_CHECK(n <= FR_BPF_EVENT_LABELS, "%u labels", n);
	for (uint32_t i = 0; i < n; i++) {
		int known = 0;

		for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
			known |= strcmp(l.pairs[i].key, keys[k]) == 0;
		FUZZ_CHECK(known, "label key %s", l.pairs[i].key);
		FUZZ_CHECK(memchr(l.pairs[i].value, '\0', sizeof(l.values[0])) != NULL,
			   "a value not NUL-terminated");
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fr_bpf_event ev;
	uint32_t copy;
	uint8_t *rec;
	int32_t a = 0, b = 0;

	if (size < 1)
		return 0;
	copy = (uint32_t)(data[0] & 31) * 8;
	size--;
	rec = malloc(size ? size : 1);
	FUZZ_CHECK(rec != NULL, "malloc");
	memcpy(rec, data + 1, size);
	if (size >= 8) {
		memcpy(&a, rec, 4);
		memcpy(&b, rec + 4, 4);
	}
	(void)fr_signal_name(a);
	(void)fr_si_code_name(a, b);
	if (fr_bpf_event_decode(rec, size, copy, &ev) == 0) {
		FUZZ_CHECK(ev.event == FR_EVENT_EXEC || ev.event == FR_EVENT_EXIT ||
				   ev.event == FR_EVENT_CRASH,
			   "event %u", ev.event);
		FUZZ_CHECK(memchr(ev.comm, '\0', sizeof(ev.comm)) != NULL, "comm");
		FUZZ_CHECK(memchr(ev.path, '\0', sizeof(ev.path)) != NULL, "path");
		if (ev.event == FR_EVENT_CRASH) {
			FUZZ_CHECK(ev.nr_kernel <= FR_BPF_FRAMES &&
					   inside(ev.kips, ev.nr_kernel * 8, rec, size),
				   "%u kernel frames outside the record", ev.nr_kernel);
			FUZZ_CHECK(ev.nr_user <= copy && inside(ev.stack, ev.nr_user, rec, size),
				   "a stack of %u bytes outside the record (copy %u)", ev.nr_user,
				   copy);
			FUZZ_CHECK(!ev.labels || inside(ev.labels, sizeof(*ev.labels), rec, size),
				   "labels outside the record");
			if (ev.labels)
				FUZZ_CHECK(ev.labels->fr_len <= FR_BPF_LABELS_FR_MAX &&
						   ev.labels->otel_len <= FR_BPF_LABELS_OTEL_MAX &&
						   ev.labels->go_n <= FR_BPF_LABELS_GO_PAIRS,
					   "labels' lengths past their arrays");
		}
		labels(&ev);
	}
	free(rec);
	return 0;
}
