/* Streaming encoder for pprof's profile.proto.
 *
 * Messages go into a fixed output buffer the moment they are added and the
 * buffer is handed to the gzip stream whenever it fills, so memory holds
 * only the buffer and the intern tables, whatever the size of the profile.
 *
 * The string table is emitted as it grows: a string gets its index when it
 * is first interned, and its string_table entry is written at that moment.
 * Readers number string_table entries by order of appearance, so index and
 * position agree as long as nothing is interned while a message is half
 * written; every encoder below therefore interns all its strings first and
 * writes its message in one piece afterwards.
 *
 * Each message is sized before it is written (varint sizes are cheap to
 * compute), so the length prefix is exact and nothing is encoded twice.
 *
 * Singular fields of Profile (time, duration, period, period_type,
 * default_sample_type) are kept in the struct and written once by
 * fr_pprof_finish(): a message-typed field written twice would be merged by
 * readers, not replaced.
 *
 * Every mapping says has_functions: go tool pprof names the locations of
 * a mapping without it again by opening the file at the mapping's path,
 * which on the machine that reads the profile may be anything (a FIFO
 * there blocks the reader for ever). Writers name every location (an
 * address no symbol covers by its offset in the file, "libfoo.so+0x1a2b").
 *
 * Any allocation or sink failure is remembered in `error`; from then on
 * nothing more is written and fr_pprof_finish() returns it.
 */
#include "core/pprof/pprof.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/pprof/pprof_wire.h"
#include "core/util/hash.h"

/* Bytes collected before a call into zlib. */
#define OUT_SIZE (64 * 1024)

/* Strings are copied into blocks of this size (larger ones get their own). */
#define ARENA_BLOCK (64 * 1024)

#define INITIAL_SLOTS 1024

struct arena_block {
	struct arena_block *next;
	size_t used;
	size_t cap;
	char data[];
};

struct str_entry {
	const char *ptr;
	uint32_t len;
	uint32_t hash;
};

struct func_entry {
	uint32_t name;
	uint32_t system_name;
	uint32_t filename;
	uint32_t start_line;
	uint32_t hash;
};

/* An open-addressing table of 1-based indexes into an entry array; 0 marks
 * an empty slot. Kept at most half full. */
struct index_table {
	uint32_t *slots;
	uint32_t mask;
};

struct label_idx {
	uint64_t key;
	uint64_t value;
	int is_str;
};

struct fr_pprof {
	struct fr_gzip *gz;
	int error;
	int finished;
	uint64_t raw_bytes;

	uint8_t *out;
	size_t out_len;
	size_t out_cap;

	struct arena_block *arena;
	struct str_entry *strs;
	uint32_t nstrs;
	uint32_t strs_cap;
	struct index_table str_index;

	struct func_entry *funcs;
	uint32_t nfuncs;
	uint32_t funcs_cap;
	struct index_table func_index;

	uint64_t nmappings;
	uint64_t nlocations;

	struct label_idx *labels;
	size_t labels_cap;

	int64_t time_ns;
	int64_t duration_ns;
	int64_t period;
	uint64_t period_type;
	uint64_t period_unit;
	uint64_t default_sample_type;
	int has_period_type;
};

static void fail(struct fr_pprof *p, int err)
{
	if (!p->error)
		p->error = err;
}

static int flush_out(struct fr_pprof *p)
{
	int ret;

	if (p->out_len == 0)
		return 0;
	ret = fr_gzip_write(p->gz, p->out, p->out_len);
	p->out_len = 0;
	if (ret < 0)
		fail(p, ret);
	return ret;
}

/* Returns space for exactly `n` more bytes of output, which the caller
 * must fill completely and then commit(); NULL after an error. */
static uint8_t *reserve(struct fr_pprof *p, size_t n)
{
	if (p->error)
		return NULL;
	if (p->out_len + n > p->out_cap) {
		if (flush_out(p) < 0)
			return NULL;
		if (n > p->out_cap) {
			/* A single message larger than the buffer (a very
			 * deep stack or a huge string). */
			uint8_t *grown = realloc(p->out, n);

			if (!grown) {
				fail(p, -ENOMEM);
				return NULL;
			}
			p->out = grown;
			p->out_cap = n;
		}
	}
	return p->out + p->out_len;
}

static void commit(struct fr_pprof *p, const uint8_t *start, const uint8_t *end, size_t n)
{
	assert((size_t)(end - start) == n);
	(void)start;
	(void)end;
	p->out_len += n;
	p->raw_bytes += n;
}

static uint32_t mix32(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return (uint32_t)h;
}

/* A fast non-cryptographic hash, eight bytes per step. */
static uint32_t hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
	uint64_t w;

	while (len >= 8) {
		memcpy(&w, s, 8);
		h = fr_fnv1a_step(h, w);
		h ^= h >> 29;
		s += 8;
		len -= 8;
	}
	w = 0;
	memcpy(&w, s, len);
	h = fr_fnv1a_step(h, w);
	return mix32(h);
}

static int index_init(struct index_table *t)
{
	t->slots = calloc(INITIAL_SLOTS, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->mask = INITIAL_SLOTS - 1;
	return 0;
}

/* Doubles the table when `count` entries would fill more than half of it;
 * `hash_of` gives the stored hash of a 1-based entry. */
static int index_grow(struct index_table *t, uint32_t count, const void *entries, size_t entry_size,
		      size_t hash_offset)
{
	uint32_t new_size, new_mask, i, j, h;
	uint32_t *slots;

	if ((uint64_t)count * 2 <= (uint64_t)t->mask + 1)
		return 0;
	if (t->mask >= UINT32_MAX / 2)
		return -ENOMEM;
	new_size = (t->mask + 1) * 2;
	new_mask = new_size - 1;
	slots = calloc(new_size, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i <= t->mask; i++) {
		uint32_t id = t->slots[i];

		if (!id)
			continue;
		memcpy(&h, (const char *)entries + (size_t)(id - 1) * entry_size + hash_offset,
		       sizeof(h));
		for (j = h & new_mask; slots[j]; j = (j + 1) & new_mask)
			;
		slots[j] = id;
	}
	free(t->slots);
	t->slots = slots;
	t->mask = new_mask;
	return 0;
}

static char *arena_copy(struct fr_pprof *p, const char *s, size_t len)
{
	struct arena_block *b = p->arena;
	char *dst;

	if (!b || b->cap - b->used < len + 1) {
		size_t cap = len + 1 > ARENA_BLOCK ? len + 1 : ARENA_BLOCK;

		b = malloc(sizeof(*b) + cap);
		if (!b)
			return NULL;
		b->used = 0;
		b->cap = cap;
		/* A block made for one large string goes behind the
		 * current one, which may still have room for small ones. */
		if (p->arena && cap > ARENA_BLOCK) {
			b->next = p->arena->next;
			p->arena->next = b;
		} else {
			b->next = p->arena;
			p->arena = b;
		}
	}
	dst = b->data + b->used;
	memcpy(dst, s, len);
	dst[len] = '\0';
	b->used += len + 1;
	return dst;
}

/* Doubles an entry array; returns the new array, or NULL (leaving the
 * old one and *cap untouched). */
static void *grow_array(void *arr, uint32_t *cap, size_t elem)
{
	uint32_t new_cap = *cap ? *cap * 2 : 1024;
	void *grown;

	if (*cap >= UINT32_MAX / 2)
		return NULL;
	grown = realloc(arr, (size_t)new_cap * elem);
	if (grown)
		*cap = new_cap;
	return grown;
}

/* Writes a string_table entry. */
static void emit_string(struct fr_pprof *p, const char *s, size_t len)
{
	size_t n = len_field_size(len);
	uint8_t *start = reserve(p, n), *w;

	if (!start)
		return;
	w = put_len_header(start, PROFILE_STRING_TABLE, len);
	memcpy(w, s, len);
	commit(p, start, w + len, n);
}

static uint32_t intern(struct fr_pprof *p, const char *s, size_t len)
{
	uint32_t h, i, id;
	struct str_entry *e;
	char *copy;

	h = hash_bytes(s, len);
	for (i = h & p->str_index.mask; (id = p->str_index.slots[i]);
	     i = (i + 1) & p->str_index.mask) {
		e = &p->strs[id - 1];
		if (e->hash == h && e->len == len && memcmp(e->ptr, s, len) == 0)
			return id - 1;
	}
	/* New string: from here on a failure leaves the table unchanged and
	 * the profile marked broken; "" stands in for the lost string. */
	if (p->error)
		return 0;
	if (len > UINT32_MAX) {
		fail(p, -E2BIG);
		return 0;
	}
	if (p->nstrs == p->strs_cap) {
		struct str_entry *grown = grow_array(p->strs, &p->strs_cap, sizeof(*grown));

		if (!grown)
			goto err_nomem;
		p->strs = grown;
	}
	copy = arena_copy(p, s, len);
	if (!copy)
		goto err_nomem;
	e = &p->strs[p->nstrs];
	e->ptr = copy;
	e->len = (uint32_t)len;
	e->hash = h;
	p->str_index.slots[i] = ++p->nstrs;
	emit_string(p, s, len);
	if (index_grow(&p->str_index, p->nstrs, p->strs, sizeof(*p->strs),
		       offsetof(struct str_entry, hash)) < 0)
		goto err_nomem;
	return p->nstrs - 1;
err_nomem:
	fail(p, -ENOMEM);
	return 0;
}

static uint32_t intern_cstr(struct fr_pprof *p, const char *s)
{
	if (!s || !*s)
		return 0;
	return intern(p, s, strlen(s));
}

struct fr_pprof *fr_pprof_new(int gzip_level, fr_write_fn sink, void *arg)
{
	struct fr_pprof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->gz = fr_gzip_new(gzip_level, sink, arg);
	p->out = malloc(OUT_SIZE);
	if (!p->gz || !p->out)
		goto err;
	p->out_cap = OUT_SIZE;
	if (index_init(&p->str_index) < 0 || index_init(&p->func_index) < 0)
		goto err;
	p->strs = grow_array(NULL, &p->strs_cap, sizeof(*p->strs));
	if (!p->strs)
		goto err;
	/* Index 0 is "", stored in the table so lookups of "" find it. */
	p->strs[0] = (struct str_entry){.ptr = "", .len = 0, .hash = hash_bytes("", 0)};
	p->str_index.slots[p->strs[0].hash & p->str_index.mask] = 1;
	p->nstrs = 1;
	emit_string(p, "", 0);
	return p;
err:
	fr_pprof_free(p);
	return NULL;
}

void fr_pprof_free(struct fr_pprof *p)
{
	struct arena_block *b, *next;

	if (!p)
		return;
	for (b = p->arena; b; b = next) {
		next = b->next;
		free(b);
	}
	fr_gzip_free(p->gz);
	free(p->out);
	free(p->strs);
	free(p->str_index.slots);
	free(p->funcs);
	free(p->func_index.slots);
	free(p->labels);
	free(p);
}

int64_t fr_pprof_string(struct fr_pprof *p, const char *s)
{
	return intern_cstr(p, s);
}

/* Writes a ValueType message as field `field` of Profile. */
static void emit_value_type(struct fr_pprof *p, unsigned field, uint64_t type, uint64_t unit)
{
	size_t body = varint_field_size(type) + varint_field_size(unit);
	size_t n = len_field_size(body);
	uint8_t *start = reserve(p, n), *w;

	if (!start)
		return;
	w = put_len_header(start, field, body);
	w = put_varint_field(w, VALUE_TYPE_TYPE, type);
	w = put_varint_field(w, VALUE_TYPE_UNIT, unit);
	commit(p, start, w, n);
}

/* Writes a top-level varint field of Profile. */
static void emit_varint(struct fr_pprof *p, unsigned field, uint64_t v)
{
	size_t n = varint_field_size(v);
	uint8_t *start, *w;

	if (!n)
		return;
	start = reserve(p, n);
	if (!start)
		return;
	w = put_varint_field(start, field, v);
	commit(p, start, w, n);
}

void fr_pprof_sample_type(struct fr_pprof *p, const char *type, const char *unit)
{
	uint32_t t = intern_cstr(p, type);
	uint32_t u = intern_cstr(p, unit);

	emit_value_type(p, PROFILE_SAMPLE_TYPE, t, u);
}

void fr_pprof_period(struct fr_pprof *p, const char *type, const char *unit, int64_t period)
{
	p->period_type = intern_cstr(p, type);
	p->period_unit = intern_cstr(p, unit);
	p->has_period_type = 1;
	p->period = period;
}

void fr_pprof_time(struct fr_pprof *p, int64_t time_ns, int64_t duration_ns)
{
	p->time_ns = time_ns;
	p->duration_ns = duration_ns;
}

void fr_pprof_default_sample_type(struct fr_pprof *p, const char *type)
{
	p->default_sample_type = intern_cstr(p, type);
}

void fr_pprof_comment(struct fr_pprof *p, const char *text)
{
	/* comment is a repeated int64; readers accept it unpacked, which
	 * lets each line be written on its own. An empty comment is index
	 * 0, which must still be written to count as a line. */
	uint32_t idx = intern_cstr(p, text);
	size_t n = 1 + varint_size(idx);
	uint8_t *start = reserve(p, n), *w;

	if (!start)
		return;
	*start = tag(PROFILE_COMMENT, WIRE_VARINT);
	w = put_varint(start + 1, idx);
	commit(p, start, w, n);
}

uint64_t fr_pprof_mapping(struct fr_pprof *p, uint64_t start_addr, uint64_t limit, uint64_t offset,
			  const char *file, const char *build_id, int flags)
{
	uint64_t id = ++p->nmappings;
	uint32_t f = intern_cstr(p, file);
	uint32_t b = intern_cstr(p, build_id);
	size_t body, n;
	uint8_t *start, *w;

	/* No reader may open the file to name its locations (see the top) */
	flags |= FR_PPROF_HAS_FUNCTIONS;
	/* one key byte and a 1 per has_* field set; 0 is omitted */
	body = varint_field_size(id) + varint_field_size(start_addr) + varint_field_size(limit) +
	       varint_field_size(offset) + varint_field_size(f) + varint_field_size(b) +
	       2 * (size_t)__builtin_popcount((unsigned)flags & 0xf);
	n = len_field_size(body);
	start = reserve(p, n);
	if (!start)
		return id;
	w = put_len_header(start, PROFILE_MAPPING, body);
	w = put_varint_field(w, MAPPING_ID, id);
	w = put_varint_field(w, MAPPING_MEMORY_START, start_addr);
	w = put_varint_field(w, MAPPING_MEMORY_LIMIT, limit);
	w = put_varint_field(w, MAPPING_FILE_OFFSET, offset);
	w = put_varint_field(w, MAPPING_FILENAME, f);
	w = put_varint_field(w, MAPPING_BUILD_ID, b);
	w = put_varint_field(w, MAPPING_HAS_FUNCTIONS, !!(flags & FR_PPROF_HAS_FUNCTIONS));
	w = put_varint_field(w, MAPPING_HAS_FILENAMES, !!(flags & FR_PPROF_HAS_FILENAMES));
	w = put_varint_field(w, MAPPING_HAS_LINE_NUMBERS, !!(flags & FR_PPROF_HAS_LINE_NUMBERS));
	w = put_varint_field(w, MAPPING_HAS_INLINE_FRAMES, !!(flags & FR_PPROF_HAS_INLINE_FRAMES));
	commit(p, start, w, n);
	return id;
}

static void emit_function(struct fr_pprof *p, uint64_t id, const struct func_entry *f)
{
	size_t body = varint_field_size(id) + varint_field_size(f->name) +
		      varint_field_size(f->system_name) + varint_field_size(f->filename) +
		      (f->start_line ? varint_field_size(f->start_line) : 0);
	size_t n = len_field_size(body);
	uint8_t *start = reserve(p, n), *w;

	if (!start)
		return;
	w = put_len_header(start, PROFILE_FUNCTION, body);
	w = put_varint_field(w, FUNCTION_ID, id);
	w = put_varint_field(w, FUNCTION_NAME, f->name);
	w = put_varint_field(w, FUNCTION_SYSTEM_NAME, f->system_name);
	w = put_varint_field(w, FUNCTION_FILENAME, f->filename);
	if (f->start_line)
		w = put_varint_field(w, FUNCTION_START_LINE, f->start_line);
	commit(p, start, w, n);
}

uint64_t fr_pprof_function(struct fr_pprof *p, const char *name, const char *system_name,
			   const char *filename)
{
	return fr_pprof_function_at(p, name, system_name, filename, 0);
}

uint64_t fr_pprof_function_at(struct fr_pprof *p, const char *name, const char *system_name,
			      const char *filename, uint32_t start_line)
{
	struct func_entry key, *e;
	uint32_t i, id;

	key.name = intern_cstr(p, name);
	key.system_name = intern_cstr(p, system_name);
	key.filename = intern_cstr(p, filename);
	key.start_line = start_line;
	key.hash = mix32(((uint64_t)key.name * 0x9e3779b97f4a7c15ULL) ^
			 ((uint64_t)key.system_name << 32 | key.filename) ^
			 ((uint64_t)start_line * 0xff51afd7ed558ccdULL));
	for (i = key.hash & p->func_index.mask; (id = p->func_index.slots[i]);
	     i = (i + 1) & p->func_index.mask) {
		e = &p->funcs[id - 1];
		if (e->hash == key.hash && e->name == key.name &&
		    e->system_name == key.system_name && e->filename == key.filename &&
		    e->start_line == key.start_line)
			return id;
	}
	if (p->error)
		return 0;
	if (p->nfuncs == p->funcs_cap) {
		struct func_entry *grown = grow_array(p->funcs, &p->funcs_cap, sizeof(*grown));

		if (!grown)
			goto err_nomem;
		p->funcs = grown;
	}
	p->funcs[p->nfuncs] = key;
	p->func_index.slots[i] = ++p->nfuncs;
	id = p->nfuncs;
	emit_function(p, id, &key);
	if (index_grow(&p->func_index, p->nfuncs, p->funcs, sizeof(*p->funcs),
		       offsetof(struct func_entry, hash)) < 0)
		goto err_nomem;
	return id;
err_nomem:
	fail(p, -ENOMEM);
	return 0;
}

static size_t line_body_size(const struct fr_pprof_line *l)
{
	return varint_field_size(l->function_id) + (l->line ? varint_field_size(l->line) : 0);
}

uint64_t fr_pprof_location_lines(struct fr_pprof *p, uint64_t mapping_id, uint64_t address,
				 const struct fr_pprof_line *lines, size_t nlines)
{
	uint64_t id = ++p->nlocations;
	size_t body =
		varint_field_size(id) + varint_field_size(mapping_id) + varint_field_size(address);
	size_t n, i;
	uint8_t *start, *w;

	for (i = 0; i < nlines; i++)
		body += len_field_size(line_body_size(&lines[i]));
	n = len_field_size(body);
	start = reserve(p, n);
	if (!start)
		return id;
	w = put_len_header(start, PROFILE_LOCATION, body);
	w = put_varint_field(w, LOCATION_ID, id);
	w = put_varint_field(w, LOCATION_MAPPING_ID, mapping_id);
	w = put_varint_field(w, LOCATION_ADDRESS, address);
	for (i = 0; i < nlines; i++) {
		w = put_len_header(w, LOCATION_LINE, line_body_size(&lines[i]));
		w = put_varint_field(w, LINE_FUNCTION_ID, lines[i].function_id);
		if (lines[i].line)
			w = put_varint_field(w, LINE_LINE, lines[i].line);
	}
	commit(p, start, w, n);
	return id;
}

uint64_t fr_pprof_location(struct fr_pprof *p, uint64_t mapping_id, uint64_t address,
			   uint64_t function_id)
{
	struct fr_pprof_line line = {.function_id = function_id};

	return fr_pprof_location_lines(p, mapping_id, address, &line, function_id ? 1 : 0);
}

static size_t label_body_size(const struct label_idx *l)
{
	return varint_field_size(l->key) + varint_field_size(l->value);
}

void fr_pprof_sample(struct fr_pprof *p, const uint64_t *locations, size_t nlocations,
		     const int64_t *values, size_t nvalues, const struct fr_pprof_label *labels,
		     size_t nlabels)
{
	size_t loc_len = 0, val_len = 0, body = 0, n, i;
	uint8_t *start, *w;

	if (p->error)
		return;
	/* Labels are interned before anything is written (see the top). */
	if (nlabels > p->labels_cap) {
		struct label_idx *grown = realloc(p->labels, nlabels * sizeof(*grown));

		if (!grown) {
			fail(p, -ENOMEM);
			return;
		}
		p->labels = grown;
		p->labels_cap = nlabels;
	}
	for (i = 0; i < nlabels; i++) {
		struct label_idx *l = &p->labels[i];

		l->key = intern_cstr(p, labels[i].key);
		l->is_str = labels[i].str != NULL;
		l->value = l->is_str ? intern_cstr(p, labels[i].str) : (uint64_t)labels[i].num;
		body += len_field_size(label_body_size(l));
	}
	for (i = 0; i < nlocations; i++)
		loc_len += varint_size(locations[i]);
	for (i = 0; i < nvalues; i++)
		val_len += varint_size((uint64_t)values[i]);
	if (nlocations)
		body += len_field_size(loc_len);
	if (nvalues)
		body += len_field_size(val_len);
	n = len_field_size(body);

	start = reserve(p, n);
	if (!start)
		return;
	w = put_len_header(start, PROFILE_SAMPLE, body);
	if (nlocations) {
		w = put_len_header(w, SAMPLE_LOCATION_ID, loc_len);
		for (i = 0; i < nlocations; i++)
			w = put_varint(w, locations[i]);
	}
	if (nvalues) {
		w = put_len_header(w, SAMPLE_VALUE, val_len);
		for (i = 0; i < nvalues; i++)
			w = put_varint(w, (uint64_t)values[i]);
	}
	for (i = 0; i < nlabels; i++) {
		const struct label_idx *l = &p->labels[i];

		w = put_len_header(w, SAMPLE_LABEL, label_body_size(l));
		w = put_varint_field(w, LABEL_KEY, l->key);
		w = put_varint_field(w, l->is_str ? LABEL_STR : LABEL_NUM, l->value);
	}
	commit(p, start, w, n);
}

int fr_pprof_finish(struct fr_pprof *p)
{
	int ret;

	if (p->finished)
		return p->error;
	p->finished = 1;
	emit_varint(p, PROFILE_TIME_NANOS, (uint64_t)p->time_ns);
	emit_varint(p, PROFILE_DURATION_NANOS, (uint64_t)p->duration_ns);
	if (p->has_period_type)
		emit_value_type(p, PROFILE_PERIOD_TYPE, p->period_type, p->period_unit);
	emit_varint(p, PROFILE_PERIOD, (uint64_t)p->period);
	emit_varint(p, PROFILE_DEFAULT_SAMPLE_TYPE, p->default_sample_type);
	if (p->error)
		return p->error;
	if (flush_out(p) < 0)
		return p->error;
	ret = fr_gzip_finish(p->gz);
	if (ret < 0)
		fail(p, ret);
	return p->error;
}

uint64_t fr_pprof_raw_bytes(const struct fr_pprof *p)
{
	return p->raw_bytes;
}
