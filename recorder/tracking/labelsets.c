/* Label sets as read at samples (recorder/tracking/labelsets.h): a table of at
 * most FR_LABELSETS_MAX decoded sets, found by the hash of the raw
 * records through an open-addressed index that is rebuilt when sets are
 * dropped.
 */
#include "recorder/tracking/labelsets.h"

#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/htable.h"
#include "core/util/le.h"
#include "flightrec/labels_abi.h"
#include "recorder/bpf/labels_bpf.h"

#define SLOTS (2 * FR_LABELSETS_MAX)
#define ID_INDEX_BITS 17 /* FR_LABELSETS_MAX < 2^17 */
_Static_assert(FR_LABELSETS_MAX < (1 << ID_INDEX_BITS), "ids hold an index");
/* The tag's bits in an id: bit 31 is left to the caller (FR_LABELSETS_ID_BITS). */
#define ID_TAG_MASK (UINT32_MAX >> (ID_INDEX_BITS + 1))

/* Strings of one set while it is decoded: its pairs' keys and values,
 * NUL-terminated (kept in a buffer of their size). */
#define STRBUF 2048

struct set {
	uint64_t hash, keys_id;
	uint64_t used_gen;
	uint32_t tag; /* generation of the slot, in its ids */
	bool live;
	uint16_t fr_len, otel_len;
	uint8_t *raw; /* fr then otel, as copied, then the strings */
	char *str;
	uint32_t npairs;
	uint16_t key[FR_CHUNK_APP_PAIRS], value[FR_CHUNK_APP_PAIRS]; /* offsets in str */
};

/* A set being decoded. */
struct draft {
	uint32_t npairs, str_len;
	uint16_t key[FR_CHUNK_APP_PAIRS], value[FR_CHUNK_APP_PAIRS];
	char str[STRBUF];
};

struct fr_labelsets {
	struct set *sets; /* [FR_LABELSETS_MAX]; sets[0] is the table-full marker */
	uint32_t nlive;
	uint32_t *free_list, nfree;
	uint32_t *index; /* [SLOTS]: set index + 1; 0 empty */
	uint64_t gen, full;
	/* The generation of the last sweep, and how many there were. */
	uint64_t swept_gen, sweeps;
	uint64_t bytes; /* the tables and every set's bytes (atomic: status reads it) */
	struct draft draft;
};

static uint64_t raw_hash(const uint8_t *fr, size_t fr_len, const uint8_t *otel, size_t otel_len)
{
	static const uint8_t sep = 0xff;
	uint64_t h = fr_fnv1a(FR_FNV_OFFSET, fr, fr_len);

	h = fr_fnv1a(h, &sep, 1);
	return fr_fnv1a(h, otel, otel_len) ^ ((uint64_t)fr_len << 32) ^ otel_len;
}

struct fr_labelsets *fr_labelsets_new(void)
{
	struct fr_labelsets *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->sets = calloc(FR_LABELSETS_MAX, sizeof(*ls->sets));
	ls->index = calloc(SLOTS, sizeof(*ls->index));
	ls->free_list = calloc(FR_LABELSETS_MAX, sizeof(*ls->free_list));
	if (!ls->sets || !ls->index || !ls->free_list) {
		fr_labelsets_free(ls);
		return NULL;
	}
	/* Free slots taken from the lowest; 0 is the marker's. */
	for (uint32_t i = FR_LABELSETS_MAX - 1; i >= 1; i--)
		ls->free_list[ls->nfree++] = i;
	ls->sets[0].str = malloc(72);
	if (!ls->sets[0].str) {
		fr_labelsets_free(ls);
		return NULL;
	}
	memcpy(ls->sets[0].str, "flightrec.labels\0dropped: too many label sets at once", 54);
	ls->sets[0].live = true;
	ls->sets[0].npairs = 1;
	ls->sets[0].key[0] = 0;
	ls->sets[0].value[0] = 17;
	ls->gen = 2;
	ls->bytes = sizeof(*ls) + FR_LABELSETS_MAX * (sizeof(*ls->sets) + sizeof(*ls->free_list)) +
		    SLOTS * sizeof(*ls->index);
	return ls;
}

void fr_labelsets_free(struct fr_labelsets *ls)
{
	if (!ls)
		return;
	for (uint32_t i = 0; ls->sets && i < FR_LABELSETS_MAX; i++) {
		free(ls->sets[i].raw);
		if (i == 0)
			free(ls->sets[i].str);
	}
	free(ls->sets);
	free(ls->index);
	free(ls->free_list);
	free(ls);
}

/* ---- decoding ---- */

/* A key or value as the library writes them: n bytes, no NUL. */
static bool clean(const uint8_t *p, size_t n)
{
	return memchr(p, '\0', n) == NULL;
}

/* The recorder's own label names, and its "flightrec." keys: a program's
 * pairs never take them (the library refuses them too; this is for the
 * records it did not write). */
static bool reserved(const char *key)
{
	static const char *const ours[] = {"pid",	 "tid",	  "comm",    "thread", "cgroup",
					   "ppid",	 "cpu",	  "event",   "state",  "wait",
					   "waiting_ns", "stack", "creator", "cpu_ns", "host"};

	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		if (strcmp(key, ours[i]) == 0)
			return true;
	return strncmp(key, "flightrec.", 10) == 0 && strcmp(key, "flightrec.labels") != 0;
}

/* Adds a pair to the draft; `ours`: the recorder's own, never dropped
 * as reserved. */
static bool add_pair_as(struct draft *s, const char *k, size_t klen, const char *v, size_t vlen,
			bool ours)
{
	/* A key given twice: the last wins. */
	for (uint32_t i = 0; i < s->npairs; i++) {
		if (strlen(s->str + s->key[i]) == klen &&
		    memcmp(s->str + s->key[i], k, klen) == 0) {
			memmove(s->key + i, s->key + i + 1, (s->npairs - i - 1) * sizeof(*s->key));
			memmove(s->value + i, s->value + i + 1,
				(s->npairs - i - 1) * sizeof(*s->value));
			s->npairs--;
			break;
		}
	}
	if (s->npairs == FR_CHUNK_APP_PAIRS || s->str_len + klen + vlen + 2 > STRBUF)
		return false;
	s->key[s->npairs] = (uint16_t)s->str_len;
	memcpy(s->str + s->str_len, k, klen);
	s->str_len += (uint32_t)klen;
	s->str[s->str_len++] = '\0';
	s->value[s->npairs] = (uint16_t)s->str_len;
	memcpy(s->str + s->str_len, v, vlen);
	s->str_len += (uint32_t)vlen;
	s->str[s->str_len++] = '\0';
	if (!ours && reserved(s->str + s->key[s->npairs])) {
		s->str_len = s->key[s->npairs];
		return true;
	}
	s->npairs++;
	return true;
}

static bool add_pair(struct draft *s, const char *k, size_t klen, const char *v, size_t vlen)
{
	return add_pair_as(s, k, klen, v, vlen, false);
}

static void mark_bad(struct draft *s)
{
	s->npairs = 0;
	s->str_len = 0;
	add_pair(s, "flightrec.labels", 16, "unreadable: bad record", 22);
}

/* libflightrec's record (lib/flightrec/labels_abi.h). */
static void decode_fr(struct draft *s, const uint8_t *p, size_t len)
{
	struct fr_labels_record_abi h;
	size_t at = 0, size;

	if (len < FR_BPF_LABELS_FR_HEAD) {
		mark_bad(s);
		return;
	}
	memcpy(&h, p, FR_BPF_LABELS_FR_HEAD);
	if (h.magic != FR_LABELS_RECORD_MAGIC || h.valid != 1 || h.npairs > FR_LABELS_MAX_KEYS ||
	    h.size > FR_LABELS_RECORD_DATA_MAX || h.size > len - FR_BPF_LABELS_FR_HEAD) {
		mark_bad(s);
		return;
	}
	p += FR_BPF_LABELS_FR_HEAD;
	size = h.size;
	for (uint32_t i = 0; i < h.npairs; i++) {
		size_t kl, vl;
		const uint8_t *k, *v;

		if (at >= size || (kl = p[at]) == 0 || kl >= FR_LABELS_KEY_MAX ||
		    size - at - 1 < kl)
			goto bad;
		k = p + at + 1;
		at += 1 + kl;
		if (at >= size || (vl = p[at]) >= FR_LABELS_VALUE_MAX || size - at - 1 < vl)
			goto bad;
		v = p + at + 1;
		at += 1 + vl;
		if (!clean(k, kl) || !clean(v, vl))
			goto bad;
		add_pair(s, (const char *)k, kl, (const char *)v, vl);
	}
	return;
bad:
	mark_bad(s);
}

static void hex(char *out, const uint8_t *p, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 15];
	}
}

static bool all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* An OpenTelemetry thread context record (OTEP 4947): trace id [16], span
 * id [8], valid, trace flags, u16 attribute bytes, then (u8 key index, u8
 * length, bytes) entries; the last of a key wins. */
static void decode_otel(struct draft *s, const uint8_t *p, size_t len, const char *const *keys,
			uint32_t nkeys)
{
	char id[33], name[24];
	uint16_t size;
	size_t at = 0;
	struct {
		uint16_t off;
		uint8_t len;
		bool set;
	} last[256] = {{0}};

	if (len < FR_BPF_LABELS_OTEL_HEAD || p[24] != 1)
		return; /* no context, or being written: none */
	memcpy(&size, p + 26, sizeof(size));
	/* A header alone where it claims attributes: their read failed (a
	 * copy that worked holds at least one byte of them). Its ids without
	 * its attributes would be a context the thread never had. */
	if (size && len == FR_BPF_LABELS_OTEL_HEAD) {
		add_pair(s, "flightrec.labels", 16, "unreadable: attributes not readable", 35);
		return;
	}
	if (size > len - FR_BPF_LABELS_OTEL_HEAD)
		size = (uint16_t)(len - FR_BPF_LABELS_OTEL_HEAD);
	if (!all_zero(p, 16) && !all_zero(p + 16, 8)) {
		hex(id, p, 16);
		add_pair(s, "trace_id", 8, id, 32);
		hex(id, p + 16, 8);
		add_pair(s, "span_id", 7, id, 16);
	}
	p += FR_BPF_LABELS_OTEL_HEAD;
	/* A reader stops where a whole entry no longer fits. */
	while (size - at >= 2 && size - at - 2 >= p[at + 1]) {
		last[p[at]] =
			(typeof(last[0])){.off = (uint16_t)(at + 2), .len = p[at + 1], .set = true};
		at += 2 + (size_t)p[at + 1];
	}
	for (unsigned k = 0; k < 256; k++) {
		const char *key = name;
		size_t kl;

		if (!last[k].set || !clean(p + last[k].off, last[k].len))
			continue;
		if (k < nkeys && keys[k] && keys[k][0]) {
			key = keys[k];
		} else {
			snprintf(name, sizeof(name), "otel.attr.%u", k);
		}
		kl = strnlen(key, FR_CHUNK_STRING_MAX);
		add_pair(s, key, kl, (const char *)p + last[k].off, last[k].len);
	}
}

/* ---- the OTel process context's key map ---- */

struct keys {
	char (*keys)[FR_LABELSETS_KEY_LEN];
	uint32_t nkeys, max;
};

/* The next field of a message: its number, and for a length-delimited one
 * its bytes; other wire types skipped. Returns 1 with a field, 0 at the
 * end, -1 for a malformed message. */
static int pb_field(const uint8_t **at, const uint8_t *end, uint32_t *num, const uint8_t **val,
		    size_t *len)
{
	uint64_t tag, v;

	if (*at >= end)
		return 0;
	if (fr_varint_get(at, end, &tag) < 0)
		return -1;
	*num = (uint32_t)(tag >> 3);
	*val = NULL;
	*len = 0;
	switch (tag & 7) {
	case 0: return fr_varint_get(at, end, &v) < 0 ? -1 : 1;
	case 1:
		if (end - *at < 8)
			return -1;
		*at += 8;
		return 1;
	case 5:
		if (end - *at < 4)
			return -1;
		*at += 4;
		return 1;
	case 2:
		if (fr_varint_get(at, end, &v) < 0 || v > (uint64_t)(end - *at))
			return -1;
		*val = *at;
		*len = (size_t)v;
		*at += v;
		return 1;
	default: return -1;
	}
}

/* The strings of an AnyValue's array_value (field 5: ArrayValue, whose
 * field 1 are AnyValues with string_value, field 1) into j->keys. */
static void pb_key_array(struct keys *j, const uint8_t *p, size_t n)
{
	const uint8_t *at = p, *arr, *val, *s;
	size_t arr_len, val_len, s_len;
	uint32_t num;

	while (pb_field(&at, p + n, &num, &arr, &arr_len) == 1) {
		const uint8_t *a = arr;

		if (num != 5 || !arr)
			continue;
		while (pb_field(&a, arr + arr_len, &num, &val, &val_len) == 1) {
			const uint8_t *v = val;
			char *key;

			if (num != 1 || !val || j->nkeys == j->max)
				continue;
			key = j->keys[j->nkeys++];
			key[0] = '\0';
			while (pb_field(&v, val + val_len, &num, &s, &s_len) == 1)
				if (num == 1 && s && s_len && s_len < FR_LABELSETS_KEY_LEN &&
				    !memchr(s, '\0', s_len)) {
					memcpy(key, s, s_len);
					key[s_len] = '\0';
				}
		}
	}
}

/* threadlocal.attribute_key_map of a ProcessContext payload (field 2:
 * KeyValue {key = 1, value = 2}). */
static void pb_process_context(struct keys *j, const uint8_t *p, size_t n)
{
	static const char name[] = "threadlocal.attribute_key_map";
	const uint8_t *at = p, *kv, *f;
	size_t kv_len, f_len;
	uint32_t num;

	while (pb_field(&at, p + n, &num, &kv, &kv_len) == 1) {
		const uint8_t *k = kv, *value = NULL;
		size_t value_len = 0;
		bool ours = false;

		if (num != 2 || !kv)
			continue;
		while (pb_field(&k, kv + kv_len, &num, &f, &f_len) == 1) {
			if (num == 1 && f && f_len == sizeof(name) - 1 && !memcmp(f, name, f_len))
				ours = true;
			if (num == 2 && f) {
				value = f;
				value_len = f_len;
			}
		}
		if (ours && value) {
			j->nkeys = 0;
			pb_key_array(j, value, value_len);
			return;
		}
	}
}

uint32_t fr_labelsets_key_map(const uint8_t *payload, size_t len,
			      char (*keys)[FR_LABELSETS_KEY_LEN], uint32_t max)
{
	struct keys k = {.keys = keys, .max = max};

	pb_process_context(&k, payload, len);
	return k.nkeys;
}

/* ---- the table ---- */

static uint32_t slot_of(uint64_t h)
{
	return (uint32_t)((h ^ (h >> 31)) % SLOTS);
}

static void reindex(struct fr_labelsets *ls)
{
	memset(ls->index, 0, SLOTS * sizeof(*ls->index));
	for (uint32_t i = 1; i < FR_LABELSETS_MAX; i++) {
		uint32_t k;

		if (!ls->sets[i].live)
			continue;
		for (k = slot_of(ls->sets[i].hash); ls->index[k]; k = (k + 1) % SLOTS)
			;
		ls->index[k] = i + 1;
	}
}

/* Drops the sets no seal used lately. Returns how many. At most once a
 * seal: a set's use only grows within one, so a second sweep would find
 * nothing the first did not, and each walks the whole table. Without
 * this, a table full of sets the last two seals used was walked again for
 * every new set that found it full: a user's threads making thousands of
 * new sets a second cost the ingest thread 16,384 steps each. */
static uint32_t sweep(struct fr_labelsets *ls)
{
	uint32_t n = 0;

	if (ls->swept_gen == ls->gen)
		return 0;
	ls->swept_gen = ls->gen;
	ls->sweeps++;

	for (uint32_t i = 0; i < FR_LABELSETS_MAX; i++) {
		struct set *s = &ls->sets[i];

		if (i && s->live && s->used_gen + 2 <= ls->gen) {
			s->live = false;
			s->tag++;
			__atomic_sub_fetch(&ls->bytes, malloc_usable_size(s->raw),
					   __ATOMIC_RELAXED);
			free(s->raw);
			s->raw = NULL;
			s->str = NULL;
			ls->free_list[ls->nfree++] = i;
			ls->nlive--;
			n++;
		}
	}
	if (n)
		reindex(ls);
	return n;
}

static uint32_t id_of(const struct fr_labelsets *ls, const struct set *s)
{
	return (uint32_t)((s - ls->sets) + 1) | ((s->tag & ID_TAG_MASK) << ID_INDEX_BITS);
}

/* The set of these raw bytes, or NULL. */
static struct set *find_set(struct fr_labelsets *ls, uint64_t h, uint64_t keys_id,
			    const uint8_t *fr, size_t fr_len, const uint8_t *otel, size_t otel_len)
{
	for (uint32_t k = slot_of(h); ls->index[k]; k = (k + 1) % SLOTS) {
		struct set *s = &ls->sets[ls->index[k] - 1];

		if (s->hash == h && s->keys_id == keys_id && s->fr_len == fr_len &&
		    s->otel_len == otel_len && (!fr_len || memcmp(s->raw, fr, fr_len) == 0) &&
		    (!otel_len || memcmp(s->raw + fr_len, otel, otel_len) == 0)) {
			s->used_gen = ls->gen;
			return s;
		}
	}
	return NULL;
}

/* A new set of the draft's pairs under these raw bytes (a free entry
 * there must be). Returns its id, 0 without memory or pairs. */
static uint32_t store_draft(struct fr_labelsets *ls, uint64_t h, uint64_t keys_id,
			    const uint8_t *fr, size_t fr_len, const uint8_t *otel, size_t otel_len)
{
	struct draft *d = &ls->draft;
	uint32_t k, i;
	struct set *s;

	i = ls->free_list[--ls->nfree];
	s = &ls->sets[i];
	s->raw = malloc(fr_len + otel_len + d->str_len + 1);
	if (!s->raw) {
		ls->free_list[ls->nfree++] = i;
		return 0;
	}
	__atomic_add_fetch(&ls->bytes, malloc_usable_size(s->raw), __ATOMIC_RELAXED);
	if (fr_len)
		memcpy(s->raw, fr, fr_len);
	if (otel_len)
		memcpy(s->raw + fr_len, otel, otel_len);
	s->str = (char *)s->raw + fr_len + otel_len;
	memcpy(s->str, d->str, d->str_len);
	s->npairs = d->npairs;
	memcpy(s->key, d->key, sizeof(s->key));
	memcpy(s->value, d->value, sizeof(s->value));
	s->hash = h;
	s->keys_id = keys_id;
	s->fr_len = (uint16_t)fr_len;
	s->otel_len = (uint16_t)otel_len;
	s->live = true;
	s->used_gen = ls->gen;
	ls->nlive++;
	for (k = slot_of(h); ls->index[k]; k = (k + 1) % SLOTS)
		;
	ls->index[k] = i + 1;
	return s->npairs ? id_of(ls, s) : 0;
}

uint32_t fr_labelsets_intern(struct fr_labelsets *ls, const uint8_t *fr, size_t fr_len,
			     const uint8_t *otel, size_t otel_len, const char *const *keys,
			     uint32_t nkeys, uint64_t keys_id)
{
	struct draft *d = &ls->draft;
	struct set *s;
	uint64_t h;

	if (fr_len > FR_BPF_LABELS_FR_MAX)
		fr_len = FR_BPF_LABELS_FR_MAX;
	if (otel_len > FR_BPF_LABELS_OTEL_MAX)
		otel_len = FR_BPF_LABELS_OTEL_MAX;
	if ((!fr_len || !fr) && (!otel_len || !otel))
		return 0;
	if (!fr)
		fr_len = 0;
	if (!otel)
		otel_len = 0;
	/* The same bytes under another process's key names are another set. */
	if (!otel_len)
		keys_id = 0;
	h = raw_hash(fr, fr_len, otel, otel_len) ^ keys_id;
	s = find_set(ls, h, keys_id, fr, fr_len, otel, otel_len);
	if (s)
		return s->npairs ? id_of(ls, s) : 0;
	if (!ls->nfree && !sweep(ls)) {
		ls->full++;
		return id_of(ls, &ls->sets[0]);
	}
	d->npairs = 0;
	d->str_len = 0;
	if (fr_len)
		decode_fr(d, fr, fr_len);
	if (otel_len)
		decode_otel(d, otel, otel_len, keys, nkeys);
	return store_draft(ls, h, keys_id, fr, fr_len, otel, otel_len);
}

/* Sets made by fr_labelsets_plus are keyed by their pairs' strings, apart
 * from the records' bytes by this keys_id. */
#define PLUS_KEYS_ID 0x2b6c6162656c732bull

uint32_t fr_labelsets_plus(struct fr_labelsets *ls, uint32_t base, const struct fr_app_label *extra,
			   uint32_t n)
{
	struct fr_app_label pairs[FR_CHUNK_APP_PAIRS];
	int nb = base ? fr_labelsets_pairs(ls, base, pairs) : 0;

	return fr_labelsets_plus_pairs(ls, pairs, nb > 0 ? (uint32_t)nb : 0, extra, n);
}

uint32_t fr_labelsets_plus_pairs(struct fr_labelsets *ls, const struct fr_app_label *pairs,
				 uint32_t nb, const struct fr_app_label *extra, uint32_t n)
{
	struct draft *d = &ls->draft;
	struct set *s;
	uint64_t h;

	d->npairs = 0;
	d->str_len = 0;
	for (uint32_t i = 0; i < nb; i++)
		add_pair_as(d, pairs[i].key, strlen(pairs[i].key), pairs[i].value,
			    strlen(pairs[i].value), true);
	for (uint32_t i = 0; i < n; i++)
		if (extra[i].key && extra[i].value && *extra[i].key && *extra[i].value)
			add_pair_as(d, extra[i].key, strlen(extra[i].key), extra[i].value,
				    strlen(extra[i].value), true);
	if (!d->npairs)
		return 0;
	h = raw_hash((const uint8_t *)d->str, d->str_len, NULL, 0) ^ PLUS_KEYS_ID;
	s = find_set(ls, h, PLUS_KEYS_ID, (const uint8_t *)d->str, d->str_len, NULL, 0);
	if (s)
		return s->npairs ? id_of(ls, s) : 0;
	if (!ls->nfree && !sweep(ls)) {
		ls->full++;
		return id_of(ls, &ls->sets[0]);
	}
	return store_draft(ls, h, PLUS_KEYS_ID, (const uint8_t *)d->str, d->str_len, NULL, 0);
}

int fr_labelsets_pairs(struct fr_labelsets *ls, uint32_t id, struct fr_app_label *out)
{
	uint32_t i = (id & ((1u << ID_INDEX_BITS) - 1)) - 1;
	struct set *s;

	if (!id || i >= FR_LABELSETS_MAX)
		return 0;
	s = &ls->sets[i];
	if (!s->live || (s->tag & ID_TAG_MASK) != id >> ID_INDEX_BITS)
		return 0;
	s->used_gen = ls->gen;
	for (uint32_t k = 0; k < s->npairs; k++)
		out[k] = (struct fr_app_label){.key = s->str + s->key[k],
					       .value = s->str + s->value[k]};
	return (int)s->npairs;
}

void fr_labelsets_sealed(struct fr_labelsets *ls)
{
	ls->gen++;
}

uint32_t fr_labelsets_count(const struct fr_labelsets *ls)
{
	return ls->nlive;
}

uint64_t fr_labelsets_bytes(const struct fr_labelsets *ls)
{
	return __atomic_load_n(&ls->bytes, __ATOMIC_RELAXED);
}

uint64_t fr_labelsets_full(const struct fr_labelsets *ls)
{
	return ls->full;
}

uint64_t fr_labelsets_sweeps(const struct fr_labelsets *ls)
{
	return ls->sweeps;
}
