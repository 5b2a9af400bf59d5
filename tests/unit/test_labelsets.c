/* Label sets (recorder/tracking/labelsets.h) when a user makes more distinct sets
 * than the table holds: a table full of sets the last two seals used is
 * walked for sets to drop at most once a seal, however many new sets
 * find it full (each walk is 16,384 steps of the ingest thread); the new
 * sets get the marker and are counted; two seals later the table makes
 * room again. An OpenTelemetry record whose attributes could not be read
 * (a header alone where it claims attributes) is said to be unreadable,
 * not shown as its ids without them; one whose attributes were read, or
 * that claims none, is shown whole. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "flightrec/labels_abi.h"
#include "recorder/bpf/labels_bpf.h"
#include "recorder/tracking/labelsets.h"
#include "tests/unit/check.h"

/* libflightrec's record of the one pair ("k", value). */
static size_t record(uint8_t *out, const char *value)
{
	struct fr_labels_record_abi h = {.magic = FR_LABELS_RECORD_MAGIC, .valid = 1, .npairs = 1};
	size_t vl = strlen(value);

	h.data[0] = 1;
	h.data[1] = 'k';
	h.data[2] = (uint8_t)vl;
	memcpy(h.data + 3, value, vl);
	h.size = (uint16_t)(3 + vl);
	memcpy(out, &h, 8 + h.size);
	return 8 + h.size;
}

static uint32_t intern(struct fr_labelsets *ls, unsigned i)
{
	uint8_t rec[sizeof(struct fr_labels_record_abi)];
	char v[16];

	snprintf(v, sizeof(v), "%u", i);
	return fr_labelsets_intern(ls, rec, record(rec, v), NULL, 0, NULL, 0, 0);
}

static const char *value_of(struct fr_labelsets *ls, uint32_t id, const char *key)
{
	static struct fr_app_label out[FR_CHUNK_APP_PAIRS];
	int n = fr_labelsets_pairs(ls, id, out);

	for (int i = 0; i < n; i++)
		if (strcmp(out[i].key, key) == 0)
			return out[i].value;
	return NULL;
}

static void test_full_table_walked_once_a_seal(void)
{
	struct fr_labelsets *ls = fr_labelsets_new();
	unsigned i, storm = 100000, marked = 0;
	const char *v;
	uint32_t id;

	CHECK(ls, "fr_labelsets_new failed");
	if (!ls)
		return;
	for (i = 0; i < FR_LABELSETS_MAX - 1; i++)
		CHECK(intern(ls, i) != 0, "set %u was not interned", i);
	CHECK(fr_labelsets_count(ls) == FR_LABELSETS_MAX - 1, "%u sets held",
	      fr_labelsets_count(ls));
	/* A storm of new sets within one seal: every one finds the table
	 * full of sets in use. */
	for (i = 0; i < storm; i++) {
		id = intern(ls, FR_LABELSETS_MAX + i);
		v = value_of(ls, id, "flightrec.labels");
		marked += v && strcmp(v, "dropped: too many label sets at once") == 0;
	}
	CHECK(marked == storm, "%u of %u new sets carry the marker", marked, storm);
	CHECK(fr_labelsets_full(ls) == storm, "%llu observations counted full",
	      (unsigned long long)fr_labelsets_full(ls));
	CHECK(fr_labelsets_sweeps(ls) <= 1, "the full table was walked %llu times in one seal",
	      (unsigned long long)fr_labelsets_sweeps(ls));
	/* Two seals on, the old sets may go: a new set has room again. */
	fr_labelsets_sealed(ls);
	fr_labelsets_sealed(ls);
	id = intern(ls, 999999999);
	v = value_of(ls, id, "k");
	CHECK(v && strcmp(v, "999999999") == 0, "a new set after two seals is %s",
	      v ? v : "(none)");
	CHECK(fr_labelsets_sweeps(ls) == 2, "%llu walks of the table",
	      (unsigned long long)fr_labelsets_sweeps(ls));
	CHECK(fr_labelsets_count(ls) < FR_LABELSETS_MAX - 1, "nothing was dropped");
	fr_labelsets_free(ls);
}

/* An OTel header (trace 0x11.., span 0x22.., valid) claiming `size` bytes
 * of attributes, followed by one attribute (key 3, "v") when `with`. */
static size_t otel_record(uint8_t *out, uint16_t size, bool with)
{
	memset(out, 0x11, 16);
	memset(out + 16, 0x22, 8);
	out[24] = 1;
	out[25] = 0;
	memcpy(out + 26, &size, sizeof(size));
	if (!with)
		return FR_BPF_LABELS_OTEL_HEAD;
	out[28] = 3;
	out[29] = 1;
	out[30] = 'v';
	return FR_BPF_LABELS_OTEL_HEAD + 3;
}

static void test_otel_attributes_not_read(void)
{
	struct fr_labelsets *ls = fr_labelsets_new();
	uint8_t rec[FR_BPF_LABELS_OTEL_MAX];
	const char *v;
	uint32_t id;

	CHECK(ls, "fr_labelsets_new failed");
	if (!ls)
		return;
	/* Read whole: ids and attribute. */
	id = fr_labelsets_intern(ls, NULL, 0, rec, otel_record(rec, 3, true), NULL, 0, 0);
	v = value_of(ls, id, "otel.attr.3");
	CHECK(v && strcmp(v, "v") == 0, "the attribute read is %s", v ? v : "(none)");
	CHECK(value_of(ls, id, "trace_id") && !value_of(ls, id, "flightrec.labels"),
	      "a whole record lost its ids or says it is unreadable");
	/* The header copied, the attributes' read failed. */
	id = fr_labelsets_intern(ls, NULL, 0, rec, otel_record(rec, 3, false), NULL, 0, 0);
	v = value_of(ls, id, "flightrec.labels");
	CHECK(v && strcmp(v, "unreadable: attributes not readable") == 0,
	      "a record without its attributes says %s", v ? v : "(nothing)");
	CHECK(!value_of(ls, id, "trace_id") && !value_of(ls, id, "span_id"),
	      "a record without its attributes shows its ids");
	/* A header that claims no attributes is whole. */
	id = fr_labelsets_intern(ls, NULL, 0, rec, otel_record(rec, 0, false), NULL, 0, 0);
	CHECK(value_of(ls, id, "trace_id") && !value_of(ls, id, "flightrec.labels"),
	      "a record with no attributes is not shown whole");
	fr_labelsets_free(ls);
}

/* A set plus the recorder's pairs: the base's pairs then the extra ones,
 * names a program may not use ("tid") kept, an extra key of the base's
 * taking its value, empty values left out; the same content is the same
 * set; no base and no pairs is no set. */
static void test_plus(void)
{
	struct fr_labelsets *ls = fr_labelsets_new();
	struct fr_app_label extra[3] = {{"waker_tid", "42"}, {"k", "mine"}, {"empty", ""}};
	struct fr_app_label out[FR_CHUNK_APP_PAIRS];
	uint8_t rec[sizeof(struct fr_labels_record_abi)];
	uint32_t base, a, b;
	int n;

	CHECK(ls, "fr_labelsets_new failed");
	base = fr_labelsets_intern(ls, rec, record(rec, "v1"), NULL, 0, NULL, 0, 0);
	CHECK(base, "base set");
	a = fr_labelsets_plus(ls, base, extra, 1);
	n = fr_labelsets_pairs(ls, a, out);
	CHECK(a && a != base && n == 2 && !strcmp(out[0].key, "k") && !strcmp(out[0].value, "v1") &&
		      !strcmp(out[1].key, "waker_tid") && !strcmp(out[1].value, "42"),
	      "base plus waker_tid: %d pairs", n);
	CHECK(fr_labelsets_plus(ls, base, extra, 1) == a, "the same content, the same set");
	b = fr_labelsets_plus(ls, base, extra, 3);
	n = fr_labelsets_pairs(ls, b, out);
	CHECK(n == 2 && !strcmp(out[0].key, "waker_tid") && !strcmp(out[1].key, "k") &&
		      !strcmp(out[1].value, "mine"),
	      "an extra key replaces the base's, an empty value is left out: %d pairs", n);
	extra[0].key = "tid";
	a = fr_labelsets_plus(ls, 0, extra, 1);
	n = fr_labelsets_pairs(ls, a, out);
	CHECK(n == 1 && !strcmp(out[0].key, "tid"), "the recorder's own names are kept");
	CHECK(fr_labelsets_plus(ls, 0, extra + 2, 1) == 0, "nothing: no set");
	fr_labelsets_free(ls);
}

/* Sets of another table's pairs (the black box's fields on a thread's
 * labels), and ids that leave bit 31 to the caller, through a table made
 * full and swept. */
static void test_plus_pairs_and_id_bits(void)
{
	struct fr_labelsets *app = fr_labelsets_new(), *ev = fr_labelsets_new();
	struct fr_app_label extra[2] = {{"signal", "SIGTERM"}, {"cpu_ns", "7"}};
	struct fr_app_label base[FR_CHUNK_APP_PAIRS], out[FR_CHUNK_APP_PAIRS];
	uint8_t rec[sizeof(struct fr_labels_record_abi)];
	uint32_t a, id, high = 0;
	int nb, n;

	CHECK(app && ev, "fr_labelsets_new failed");
	if (!app || !ev)
		return;
	a = fr_labelsets_intern(app, rec, record(rec, "v1"), NULL, 0, NULL, 0, 0);
	nb = fr_labelsets_pairs(app, a, base);
	id = fr_labelsets_plus_pairs(ev, base, (uint32_t)nb, extra, 2);
	n = fr_labelsets_pairs(ev, id, out);
	CHECK(id && n == 3 && !strcmp(out[0].key, "k") && !strcmp(out[0].value, "v1") &&
		      !strcmp(out[1].key, "signal") && !strcmp(out[2].value, "7"),
	      "another table's pairs plus the fields: %d pairs", n);
	CHECK(fr_labelsets_count(app) == 1, "the first table holds only its own set");
	/* Three tables' worth of distinct sets, sealed as they come, so
	 * that slots are dropped and reused with new tags. */
	for (uint32_t i = 0; i < 3 * FR_LABELSETS_MAX; i++) {
		char v[16];

		snprintf(v, sizeof(v), "%u", i);
		extra[1].value = v;
		id = fr_labelsets_plus_pairs(ev, NULL, 0, extra, 2);
		high |= id & ~FR_LABELSETS_ID_BITS;
		if (i % 4096 == 4095)
			fr_labelsets_sealed(ev);
	}
	CHECK(high == 0, "an id with bit 31 set");
	CHECK(fr_labelsets_sweeps(ev) >= 1, "the table was never full and swept");
	n = fr_labelsets_pairs(ev, id, out);
	CHECK(n == 2 && !strcmp(out[1].value, "49151"), "the last set resolves: %d", n);
	CHECK(fr_labelsets_count(app) == 1 && fr_labelsets_full(app) == 0,
	      "a storm in one table touched the other");
	fr_labelsets_free(app);
	fr_labelsets_free(ev);
}

int main(void)
{
	test_full_table_walked_once_a_seal();
	test_otel_attributes_not_read();
	test_plus();
	test_plus_pairs_and_id_bits();
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	return failures ? 1 : 0;
}
