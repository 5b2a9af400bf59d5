/* Seeds of fuzz_labelsets (tests/fuzz/fuzz_labelsets.h): libflightrec's
 * records as this build's library writes them (fr_labels_set, then the
 * record read through the registry's thread-pointer offset, the way the
 * recorder's eBPF program finds it), OpenTelemetry thread context records
 * as the specification lays them out, both together, and broken ones of
 * each; key names, seals, and fills that make the table drop sets.
 */
#include "tests/fuzz/make_seeds.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "core/util/le.h"
#include "flightrec/labels_abi.h"
#include "recorder/bpf/labels_bpf.h"
#include "recorder/tracking/labelsets.h"
#include "tests/fuzz/fuzz_labelsets.h"

static unsigned char buf[65536];
static size_t len;

static void put(const void *p, size_t n)
{
	if (len + n > sizeof(buf))
		die("labelsets seed too long", E2BIG);
	if (n)
		memcpy(buf + len, p, n);
	len += n;
}

static void put8(unsigned v)
{
	unsigned char b = (unsigned char)v;

	put(&b, 1);
}

static void put16(unsigned v)
{
	unsigned char b[2];

	fr_put_le16(b, (uint16_t)v);
	put(b, 2);
}

static void op_intern(unsigned flags, const void *fr, size_t fl, const void *otel, size_t ol)
{
	put8(FUZZ_LS_INTERN | flags);
	put16((unsigned)fl);
	put16((unsigned)ol);
	put(fr, fl);
	put(otel, ol);
}

static void seed(const char *name)
{
	write_seed("labelsets", name, -1, buf, len);
	len = 0;
}

/* ---- libflightrec's records, from the library ---- */

static const struct fr_labels_registry_abi *registry(void)
{
	void *h = dlopen("libflightrec.so.1", RTLD_NOW | RTLD_NOLOAD);
	const struct fr_labels_registry_abi *r = h ? dlsym(h, FR_LABELS_REGISTRY_SYMBOL) : NULL;

	if (!r || !r->tls_offset)
		die("libflightrec's registry", ENOENT);
	return r;
}

/* The calling thread's record, as the eBPF program copies it (header,
 * then `size` bytes); its length in *n. */
static const void *current(size_t *n)
{
	const struct fr_labels_record_abi *rec =
		*(const struct fr_labels_record_abi *const *)((const char *)
								      __builtin_thread_pointer() +
							      registry()->tls_offset);

	if (!rec)
		die("no current labels record", ENOENT);
	*n = FR_BPF_LABELS_FR_HEAD + rec->size;
	return rec;
}

static void lib_record(struct fr_labels_record_abi *out, size_t *n)
{
	const void *rec = current(n);

	memcpy(out, rec, *n);
}

/* ---- OTel records, by the specification ---- */

struct otel {
	unsigned char b[FR_BPF_LABELS_OTEL_MAX];
	size_t n;
};

static void otel_new(struct otel *o, unsigned char trace, unsigned char span, unsigned valid)
{
	memset(o, 0, sizeof(*o));
	memset(o->b, trace, 16);
	memset(o->b + 16, span, 8);
	o->b[24] = (unsigned char)valid;
	o->b[25] = 1;
	o->n = FR_BPF_LABELS_OTEL_HEAD;
}

static void otel_attr(struct otel *o, unsigned key, const char *v, size_t vl)
{
	o->b[o->n] = (unsigned char)key;
	o->b[o->n + 1] = (unsigned char)vl;
	memcpy(o->b + o->n + 2, v, vl);
	o->n += 2 + vl;
	fr_put_le16(o->b + 26, (uint16_t)(o->n - FR_BPF_LABELS_OTEL_HEAD));
}

void make_labelsets_seeds(void)
{
	struct fr_labels_record_abi one, eight, dropped, bad;
	char k[FR_LABELS_KEY_MAX], v[FR_LABELS_VALUE_MAX];
	size_t n_one, n_eight, n_dropped;
	struct otel o;

	clean_dir("labelsets");
	fr_labels_clear();
	fr_labels_set("req", "a");
	lib_record(&one, &n_one);
	fr_labels_clear();
	for (int i = 0; i < FR_LABELS_MAX_KEYS; i++) {
		memset(k, 'k', sizeof(k) - 1);
		k[sizeof(k) - 1] = '\0';
		k[0] = (char)('a' + i);
		memset(v, '0' + i, sizeof(v) - 1);
		v[sizeof(v) - 1] = '\0';
		fr_labels_set(k, v);
	}
	lib_record(&eight, &n_eight);
	fr_labels_clear();
	fr_labels_set("long", "");
	{
		char longv[FR_LABELS_VALUE_MAX + 1];

		memset(longv, 'x', sizeof(longv) - 1);
		longv[sizeof(longv) - 1] = '\0';
		fr_labels_set("long", longv); /* dropped: the library's marker */
	}
	lib_record(&dropped, &n_dropped);
	fr_labels_clear();

	op_intern(0, &one, n_one, NULL, 0);
	seed("fr-one");
	op_intern(0, &eight, n_eight, NULL, 0);
	seed("fr-eight-longest");
	op_intern(0, &dropped, n_dropped, NULL, 0);
	seed("fr-dropped-marker");
	/* Cut short where a copy could end. */
	op_intern(0, &eight, n_eight / 2, NULL, 0);
	op_intern(0, &eight, FR_BPF_LABELS_FR_HEAD - 1, NULL, 0);
	seed("fr-cut");
	/* Broken headers and pairs. */
	bad = one;
	bad.magic ^= 1;
	op_intern(0, &bad, n_one, NULL, 0);
	bad = one;
	bad.valid = 2;
	op_intern(0, &bad, n_one, NULL, 0);
	bad = one;
	bad.npairs = FR_LABELS_MAX_KEYS + 1;
	op_intern(0, &bad, n_one, NULL, 0);
	bad = one;
	bad.size = FR_LABELS_RECORD_DATA_MAX + 1;
	op_intern(0, &bad, n_one, NULL, 0);
	bad = one;
	bad.npairs = 2;
	op_intern(0, &bad, n_one, NULL, 0);
	seed("fr-bad-header");
	/* Pairs only the recorder's check stops: made to check by the fix-up. */
	{
		static const unsigned char pairs[] = {
			3,   'p', 'i', 'd', 1,	 '7', /* the recorder's */
			11,  'f', 'l', 'i', 'g', 'h', 't',
			'r', 'e', 'c', '.', 'x', 1,   'y', /* reserved */
			3,   'o', 'k', 'k', 0,		   /* empty value */
			2,   'n', 0,   2,   'v', 'v',	   /* a NUL */
		};

		memcpy(&bad, &one, FR_BPF_LABELS_FR_HEAD);
		memcpy(bad.data, pairs, sizeof(pairs));
		bad.npairs = 3;
		op_intern(FUZZ_LS_FIX_FR, &bad, FR_BPF_LABELS_FR_HEAD + sizeof(pairs) - 6, NULL, 0);
		bad.npairs = 4;
		op_intern(FUZZ_LS_FIX_FR, &bad, FR_BPF_LABELS_FR_HEAD + sizeof(pairs), NULL, 0);
		bad.npairs = 1;
		bad.data[0] = 0; /* an empty key */
		op_intern(FUZZ_LS_FIX_FR, &bad, FR_BPF_LABELS_FR_HEAD + 8, NULL, 0);
		bad.data[0] = FR_LABELS_KEY_MAX;
		op_intern(FUZZ_LS_FIX_FR, &bad, FR_BPF_LABELS_FR_HEAD + FR_LABELS_KEY_MAX + 4, NULL,
			  0);
		/* A value running past the record's size. */
		bad.data[0] = 3;
		op_intern(FUZZ_LS_FIX_FR, &bad, FR_BPF_LABELS_FR_HEAD + 5, NULL, 0);
		/* Nothing copied at all. */
		op_intern(0, NULL, 0, NULL, 0);
	}
	seed("fr-bad-pairs");

	otel_new(&o, 0x0a, 0xa1, 1);
	otel_attr(&o, 0, "GET /a", 6);
	otel_attr(&o, 7, "tenant b", 8);
	op_intern(0, NULL, 0, o.b, o.n);
	seed("otel-valid");
	op_intern(0, &one, n_one, o.b, o.n);
	seed("both");
	otel_new(&o, 0x0d, 0xd4, 0);
	otel_attr(&o, 0, "invalid", 7);
	op_intern(0, NULL, 0, o.b, o.n);
	otel_new(&o, 0x0d, 0xd4, 0xff);
	op_intern(0, NULL, 0, o.b, o.n);
	seed("otel-not-valid");
	otel_new(&o, 0, 0, 1);
	otel_attr(&o, 2, "no trace", 8);
	op_intern(0, NULL, 0, o.b, o.n);
	otel_new(&o, 0x0a, 0, 1);
	op_intern(0, NULL, 0, o.b, o.n);
	seed("otel-zero-ids");
	/* The last of a key wins; a value with a NUL is no value. */
	otel_new(&o, 0x0b, 0xb2, 1);
	otel_attr(&o, 1, "first", 5);
	otel_attr(&o, 1, "last", 4);
	otel_attr(&o, 3, "a\0b", 3);
	op_intern(0, NULL, 0, o.b, o.n);
	seed("otel-duplicates");
	/* An entry cut by its record's end; a size past the copy. */
	otel_new(&o, 0x0c, 0xc3, 1);
	otel_attr(&o, 4, "whole", 5);
	otel_attr(&o, 5, "cut", 3);
	op_intern(0, NULL, 0, o.b, o.n - 1);
	fr_put_le16(o.b + 26, 0xffff);
	op_intern(0, NULL, 0, o.b, FR_BPF_LABELS_OTEL_MAX);
	op_intern(0, NULL, 0, o.b, FR_BPF_LABELS_OTEL_HEAD - 1);
	seed("otel-cut");
	/* Longer than a copy: the decoder reads what one holds. */
	{
		static unsigned char longer[FR_BPF_LABELS_FR_MAX + 40];

		memcpy(longer, &eight, n_eight);
		op_intern(0, longer, sizeof(longer), NULL, 0);
		otel_new(&o, 0x0a, 0xa1, 1);
		memcpy(longer, o.b, o.n);
		op_intern(0, NULL, 0, longer, FR_BPF_LABELS_OTEL_MAX + 60);
	}
	seed("longer-than-a-copy");
	/* More attributes than a set holds pairs. */
	otel_new(&o, 0x0e, 0xe5, 1);
	for (unsigned i = 0; i < 40; i++)
		otel_attr(&o, i * 6, "v", 1);
	op_intern(0, &eight, n_eight, o.b, o.n);
	seed("otel-many");
	/* Key names: one the recorder's, one empty, one ordinary. */
	put8(FUZZ_LS_KEYS);
	put8(3);
	put8(3);
	put("pid", 3);
	put8(0);
	put8(11);
	put("http.method", 11);
	otel_new(&o, 0x0f, 0xf6, 1);
	otel_attr(&o, 0, "1", 1);
	otel_attr(&o, 1, "2", 1);
	otel_attr(&o, 2, "GET", 3);
	otel_attr(&o, 3, "4", 1);
	op_intern(0, NULL, 0, o.b, o.n);
	seed("otel-key-names");
	/* Sets dropped once the table is full and they went unused for two
	 * seals; their slots taken by new sets; their ids then name nothing. */
	op_intern(0, &one, n_one, NULL, 0);
	otel_new(&o, 0x0a, 0xa1, 1);
	op_intern(0, NULL, 0, o.b, o.n);
	put8(FUZZ_LS_SEAL);
	put8(FUZZ_LS_SEAL);
	put8(FUZZ_LS_FILL);
	put16(0xffff); /* more than FR_LABELSETS_MAX: the table full */
	op_intern(0, &one, n_one, NULL, 0);
	seed("fill-drop-reuse");
	/* A full table whose sets were all used since the last seal. */
	put8(FUZZ_LS_FILL);
	put16(0xffff); /* more than FR_LABELSETS_MAX: the table full */
	op_intern(0, &eight, n_eight, NULL, 0);
	seed("fill-full");
	/* A process context's payload whose key map names "http.route" (the
	 * whole input is also read as one; its opcodes are skipped). */
	{
		static const unsigned char map[] = {0x12, 0x31, 0x0a, 0x1d, 't',  'h',	'r',  'e',
						    'a',  'd',	'l',  'o',  'c',  'a',	'l',  '.',
						    'a',  't',	't',  'r',  'i',  'b',	'u',  't',
						    'e',  '_',	'k',  'e',  'y',  '_',	'm',  'a',
						    'p',  0x12, 0x10, 0x2a, 0x0e, 0x0a, 0x0c, 0x0a,
						    0x0a, 'h',	't',  't',  'p',  '.',	'r',  'o',
						    'u',  't',	'e'};

		put(map, sizeof(map));
		seed("process-context-key-map");
	}
}
