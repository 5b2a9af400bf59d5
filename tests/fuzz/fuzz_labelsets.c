/* Fuzz target for the decoder of application label records
 * (recorder/tracking/labelsets.h): the bytes an eBPF program copied from a
 * process's memory at a sample, libflightrec's record and the
 * OpenTelemetry thread context's, which the process controls entirely.
 *
 * Input: operations on one table (tests/fuzz/fuzz_labelsets.h): interns
 * of arbitrary record bytes (or with their headers made to check), OTel
 * key names, seals, and fills that make the table drop sets and reuse
 * their slots.
 *
 * Promises checked:
 * - a set has at most FR_CHUNK_APP_PAIRS pairs, every key and value a
 *   NUL-terminated string of bounded length (keys non-empty), never a
 *   label of the recorder's own (pid, tid, comm, thread, ...) nor a
 *   "flightrec." key but the library's marker "flightrec.labels";
 * - the pairs are those a reader of the two layouts finds, independently
 *   decoded here (libflightrec_abi.h; OTEP 4947: ids as lowercase hex when
 *   valid and not all zeros, attributes by index, the last of a key
 *   winning, a reader stopping where an entry no longer fits), at most
 *   FR_CHUNK_APP_PAIRS of them; a libflightrec record that does not check
 *   is the single marker "unreadable: bad record", not part of its pairs;
 * - interning the same bytes twice gives the same id; id 0 only for no
 *   pairs, or when the table holds FR_LABELSETS_MAX sets it may not drop;
 * - an id handed out earlier gives its own pairs or none, never another
 *   set's, after any number of drops and reuses.
 */
#include "tests/fuzz/fuzz.h"

#include <stdbool.h>
#include <string.h>

#include "flightrec/labels_abi.h"
#include "recorder/bpf/labels_bpf.h"
#include "recorder/tracking/labelsets.h"
#include "tests/fuzz/fuzz_labelsets.h"

/* Every pair a record can hold: libflightrec's, the two ids and an
 * attribute per key index. */
#define MAX_PAIRS (FR_LABELS_MAX_KEYS + 2 + 256)
#define REMEMBER 64
/* Longer than any key: a name given (FUZZ_LS_KEY_MAX), "otel.attr.255",
 * a libflightrec key. */
#define KEY_MAX 48

struct pair {
	char key[KEY_MAX];
	char value[256];
};

/* The pairs a reader finds in a record (want), or a set's (got). */
struct ref {
	unsigned n;
	struct pair p[MAX_PAIRS];
};

static struct ref want, got;

/* Ids handed out, with their pairs, checked again at the end. */
static struct {
	uint32_t id;
	unsigned n;
	struct pair p[FR_CHUNK_APP_PAIRS];
} seen[REMEMBER];
static unsigned nseen;

static const char *const recorder_labels[] = {
	"pid",	 "tid",	 "comm",  "thread",	"cgroup", "ppid",    "cpu",  "event",
	"state", "wait", "stack", "waiting_ns", "cpu_ns", "creator", "host",
};

static bool reserved(const char *key)
{
	for (size_t i = 0; i < sizeof(recorder_labels) / sizeof(recorder_labels[0]); i++)
		if (strcmp(key, recorder_labels[i]) == 0)
			return true;
	return strncmp(key, "flightrec.", 10) == 0 && strcmp(key, "flightrec.labels") != 0;
}

static void ref_add(struct ref *r, const char *k, size_t kl, const char *v, size_t vl)
{
	struct pair *p;

	if (r->n == MAX_PAIRS)
		return;
	p = &r->p[r->n];
	FUZZ_CHECK(kl < sizeof(p->key) && vl < sizeof(p->value), "reference pair %zu/%zu", kl, vl);
	memcpy(p->key, k, kl);
	p->key[kl] = '\0';
	memcpy(p->value, v, vl);
	p->value[vl] = '\0';
	if (!reserved(p->key))
		r->n++;
}

/* ---- the reference readers ---- */

static void ref_fr(struct ref *r, const uint8_t *p, size_t len)
{
	struct ref pairs = {0};
	uint32_t magic;
	uint16_t size;
	unsigned npairs;
	size_t at = 0;

	if (len < FR_BPF_LABELS_FR_HEAD)
		goto bad;
	memcpy(&magic, p, 4);
	npairs = p[5];
	memcpy(&size, p + 6, 2);
	if (magic != FR_LABELS_RECORD_MAGIC || p[4] != 1 || npairs > FR_LABELS_MAX_KEYS ||
	    size > FR_LABELS_RECORD_DATA_MAX || size > len - FR_BPF_LABELS_FR_HEAD)
		goto bad;
	p += FR_BPF_LABELS_FR_HEAD;
	for (unsigned i = 0; i < npairs; i++) {
		size_t kl, vl;
		const uint8_t *k, *v;

		if (at + 1 > size)
			goto bad;
		kl = p[at];
		if (kl == 0 || kl >= FR_LABELS_KEY_MAX || at + 1 + kl > size)
			goto bad;
		k = p + at + 1;
		at += 1 + kl;
		if (at + 1 > size)
			goto bad;
		vl = p[at];
		if (vl >= FR_LABELS_VALUE_MAX || at + 1 + vl > size)
			goto bad;
		v = p + at + 1;
		at += 1 + vl;
		if (memchr(k, 0, kl) || memchr(v, 0, vl))
			goto bad;
		ref_add(&pairs, (const char *)k, kl, (const char *)v, vl);
	}
	for (unsigned i = 0; i < pairs.n; i++)
		ref_add(r, pairs.p[i].key, strlen(pairs.p[i].key), pairs.p[i].value,
			strlen(pairs.p[i].value));
	return;
bad:
	ref_add(r, "flightrec.labels", 16, "unreadable: bad record", 22);
}

static void ref_hex(char *out, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static bool zeros(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static void ref_otel(struct ref *r, const uint8_t *p, size_t len, char keys[][FUZZ_LS_KEY_MAX + 1],
		     unsigned nkeys)
{
	int last[256];
	char id[33], name[32];
	size_t size, at = 0;
	uint16_t s16;

	if (len < FR_BPF_LABELS_OTEL_HEAD || p[24] != 1)
		return;
	memcpy(&s16, p + 26, 2);
	size = s16 < len - FR_BPF_LABELS_OTEL_HEAD ? s16 : len - FR_BPF_LABELS_OTEL_HEAD;
	if (!zeros(p, 16) && !zeros(p + 16, 8)) {
		ref_hex(id, p, 16);
		ref_add(r, "trace_id", 8, id, 32);
		ref_hex(id, p + 16, 8);
		ref_add(r, "span_id", 7, id, 16);
	}
	p += FR_BPF_LABELS_OTEL_HEAD;
	for (int k = 0; k < 256; k++)
		last[k] = -1;
	while (at + 2 <= size && at + 2 + p[at + 1] <= size) {
		last[p[at]] = (int)at;
		at += 2 + (size_t)p[at + 1];
	}
	for (unsigned k = 0; k < 256; k++) {
		const uint8_t *v;
		size_t vl;

		if (last[k] < 0)
			continue;
		v = p + last[k] + 2;
		vl = p[last[k] + 1];
		if (memchr(v, 0, vl))
			continue;
		if (k < nkeys && keys[k][0])
			ref_add(r, keys[k], strlen(keys[k]), (const char *)v, vl);
		else {
			snprintf(name, sizeof(name), "otel.attr.%u", k);
			ref_add(r, name, strlen(name), (const char *)v, vl);
		}
	}
}

/* ---- checks ---- */

static bool same_pair(const struct pair *a, const struct fr_app_label *b)
{
	return strcmp(a->key, b->key) == 0 && strcmp(a->value, b->value) == 0;
}

/* The pairs of `id` into got, checked against the promises that hold for
 * any set. */
static void read_set(struct fr_labelsets *ls, uint32_t id)
{
	struct fr_app_label out[FR_CHUNK_APP_PAIRS + 1];
	int n;

	memset(out, 0, sizeof(out));
	n = fr_labelsets_pairs(ls, id, out);
	FUZZ_CHECK(n >= 0 && n <= FR_CHUNK_APP_PAIRS, "%d pairs", n);
	FUZZ_CHECK(out[FR_CHUNK_APP_PAIRS].key == NULL, "a pair past FR_CHUNK_APP_PAIRS written");
	got.n = (unsigned)n;
	for (int i = 0; i < n; i++) {
		size_t kl, vl;

		FUZZ_CHECK(out[i].key && out[i].value, "pair %d: NULL", i);
		kl = strnlen(out[i].key, KEY_MAX);
		vl = strnlen(out[i].value, 256);
		FUZZ_CHECK(kl >= 1 && kl < KEY_MAX, "pair %d: key of %zu bytes", i, kl);
		FUZZ_CHECK(vl <= 255, "pair %d: value of %zu bytes", i, vl);
		FUZZ_CHECK(!reserved(out[i].key), "pair %d: the recorder's key '%s'", i,
			   out[i].key);
		memcpy(got.p[i].key, out[i].key, kl + 1);
		memcpy(got.p[i].value, out[i].value, vl + 1);
	}
}

/* got holds min(n, FR_CHUNK_APP_PAIRS) of want's pairs, each once. */
static void check_against(const struct ref *w)
{
	bool used[MAX_PAIRS] = {false};
	unsigned expect = w->n < FR_CHUNK_APP_PAIRS ? w->n : FR_CHUNK_APP_PAIRS;

	FUZZ_CHECK(got.n == expect, "%u pairs, the reader finds %u", got.n, w->n);
	for (unsigned i = 0; i < got.n; i++) {
		struct fr_app_label l = {got.p[i].key, got.p[i].value};
		unsigned j;

		for (j = 0; j < w->n && (used[j] || !same_pair(&w->p[j], &l)); j++)
			;
		FUZZ_CHECK(j < w->n, "pair %s=%s is not the record's", l.key, l.value);
		used[j] = true;
	}
}

/* Keeps id with the pairs just read (got). */
static void remember(uint32_t id)
{
	unsigned i;

	for (i = 0; i < nseen && seen[i].id != id; i++)
		;
	if (i == nseen) {
		/* The first half kept: the early ids, the ones dropped. */
		if (nseen == REMEMBER)
			i = REMEMBER / 2 + id % (REMEMBER / 2);
		else
			nseen++;
	}
	seen[i].id = id;
	seen[i].n = got.n;
	memcpy(seen[i].p, got.p, got.n * sizeof(got.p[0]));
}

static void intern_checked(struct fr_labelsets *ls, const uint8_t *fr, size_t fr_len,
			   const uint8_t *otel, size_t otel_len, char keys[][FUZZ_LS_KEY_MAX + 1],
			   unsigned nkeys)
{
	const char *names[FUZZ_LS_MAX_KEYS];
	uint32_t id, again;
	uint64_t full;

	for (unsigned i = 0; i < nkeys; i++)
		names[i] = keys[i];
	/* A reader takes no more than one copy holds. */
	want.n = 0;
	if (fr_len)
		ref_fr(&want, fr, fr_len < FR_BPF_LABELS_FR_MAX ? fr_len : FR_BPF_LABELS_FR_MAX);
	if (otel_len)
		ref_otel(&want, otel,
			 otel_len < FR_BPF_LABELS_OTEL_MAX ? otel_len : FR_BPF_LABELS_OTEL_MAX,
			 keys, nkeys);
	full = fr_labelsets_full(ls);
	id = fr_labelsets_intern(ls, fr, fr_len, otel, otel_len, names, nkeys, nkeys);
	if (fr_labelsets_full(ls) != full) {
		/* No room, none to drop: the marker, not the record's pairs. */
		read_set(ls, id);
		FUZZ_CHECK(got.n == 1 && strcmp(got.p[0].key, "flightrec.labels") == 0 &&
				   strcmp(got.p[0].value, "dropped: too many label sets at once") ==
					   0,
			   "a full table gave %u pairs, not its marker", got.n);
		return;
	}
	if (!id) {
		FUZZ_CHECK(want.n == 0 || fr_labelsets_count(ls) == FR_LABELSETS_MAX,
			   "no set for a record with %u pairs, the table holding %u sets", want.n,
			   fr_labelsets_count(ls));
		return;
	}
	again = fr_labelsets_intern(ls, fr, fr_len, otel, otel_len, names, nkeys, nkeys);
	FUZZ_CHECK(again == id, "the same bytes interned as %#x then %#x", id, again);
	read_set(ls, id);
	FUZZ_CHECK(got.n > 0, "id %#x without pairs", id);
	check_against(&want);
	remember(id);
}

/* A valid record of libflightrec with the one pair fill=<k>. */
static size_t fill_record(uint8_t *r, uint32_t k)
{
	char v[16];
	int vl = snprintf(v, sizeof(v), "%u", k);
	uint32_t magic = FR_LABELS_RECORD_MAGIC;
	uint16_t size = (uint16_t)(2 + 4 + vl);

	memcpy(r, &magic, 4);
	r[4] = 1;
	r[5] = 1;
	memcpy(r + 6, &size, 2);
	r[8] = 4;
	memcpy(r + 9, "fill", 4);
	r[13] = (uint8_t)vl;
	memcpy(r + 14, v, (size_t)vl);
	return 8 + size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char keys[FUZZ_LS_MAX_KEYS][FUZZ_LS_KEY_MAX + 1];
	static uint8_t fr[FR_BPF_LABELS_FR_MAX + 64], otel[FR_BPF_LABELS_OTEL_MAX + 64];
	struct fr_labelsets *ls = fr_labelsets_new();
	unsigned nkeys = 0;
	uint32_t filled = 0;
	size_t at = 0;

	FUZZ_CHECK(ls != NULL, "fr_labelsets_new");
	/* The whole input as an OTel process context's payload too: the key
	 * map's protobuf walk reads nothing beyond it, gives at most the
	 * room and NUL-terminated names shorter than FR_LABELSETS_KEY_LEN. */
	{
		static char map[256][FR_LABELSETS_KEY_LEN];
		uint32_t n;

		memset(map, 0x5a, sizeof(map));
		n = fr_labelsets_key_map(data, size, map, 256);
		FUZZ_CHECK(n <= 256, "key map: %u names", n);
		for (uint32_t i = 0; i < n; i++)
			FUZZ_CHECK(memchr(map[i], '\0', FR_LABELSETS_KEY_LEN) != NULL,
				   "key map: name %u not terminated", i);
	}
	nseen = 0;
	while (at < size) {
		uint8_t op = data[at++];

		switch (op & 7) {
		case FUZZ_LS_KEYS: {
			unsigned n = at < size ? data[at++] : 0;

			nkeys = 0;
			for (unsigned i = 0; i < n && at < size; i++) {
				size_t l = data[at++], take;

				if (l > size - at)
					l = size - at;
				take = l < FUZZ_LS_KEY_MAX ? l : FUZZ_LS_KEY_MAX;
				memcpy(keys[nkeys], data + at, take);
				keys[nkeys][take] = '\0';
				nkeys++;
				at += l;
			}
			break;
		}
		case FUZZ_LS_SEAL: fr_labelsets_sealed(ls); break;
		case FUZZ_LS_FILL: {
			uint32_t n = 0;

			/* Enough to fill the table and go on a little, over
			 * the whole input: past a full table each intern
			 * sweeps all of it. */
			if (size - at >= 2)
				n = fr_get_le16(data + at);
			at += size - at >= 2 ? 2 : size - at;
			for (uint32_t i = 0; i < n && filled < FR_LABELSETS_MAX + 64; i++) {
				size_t len = fill_record(fr, filled++);

				/* A buffer, as the recorder always passes. */
				intern_checked(ls, fr, len, otel, 0, keys, nkeys);
			}
			break;
		}
		default: {
			size_t fl = 0, ol = 0;

			if (size - at >= 4) {
				fl = fr_get_le16(data + at);
				ol = fr_get_le16(data + at + 2);
				at += 4;
			} else {
				at = size;
			}
			/* Beyond what a copy holds is cut by the decoder too;
			 * the buffers take a little more. */
			if (fl > sizeof(fr))
				fl = sizeof(fr);
			if (ol > sizeof(otel))
				ol = sizeof(otel);
			if (fl > size - at)
				fl = size - at;
			memcpy(fr, data + at, fl);
			at += fl;
			if (ol > size - at)
				ol = size - at;
			memcpy(otel, data + at, ol);
			at += ol;
			if ((op & FUZZ_LS_FIX_FR) && fl >= FR_BPF_LABELS_FR_HEAD) {
				uint32_t magic = FR_LABELS_RECORD_MAGIC;
				uint16_t s = (uint16_t)(fl - FR_BPF_LABELS_FR_HEAD);

				memcpy(fr, &magic, 4);
				fr[4] = 1;
				memcpy(fr + 6, &s, 2);
			}
			if ((op & FUZZ_LS_FIX_OTEL) && ol >= FR_BPF_LABELS_OTEL_HEAD) {
				uint16_t s = (uint16_t)(ol - FR_BPF_LABELS_OTEL_HEAD);

				otel[24] = 1;
				memcpy(otel + 26, &s, 2);
			}
			intern_checked(ls, fr, fl, otel, ol, keys, nkeys);
			break;
		}
		}
	}
	/* Old ids: their own pairs, or none once dropped. */
	for (unsigned i = 0; i < nseen; i++) {
		read_set(ls, seen[i].id);
		if (!got.n)
			continue;
		want.n = seen[i].n;
		memcpy(want.p, seen[i].p, want.n * sizeof(want.p[0]));
		check_against(&want);
	}
	FUZZ_CHECK(fr_labelsets_count(ls) <= FR_LABELSETS_MAX, "%u sets held",
		   fr_labelsets_count(ls));
	fr_labelsets_free(ls);
	return 0;
}
