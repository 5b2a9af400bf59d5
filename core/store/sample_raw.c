/* Raw PMU events: their names, parsed with clear errors, and the full
 * configuration behind each id (see core/store/sample.h).
 *
 * "raw:0xNNNN" with a config below 2^31 and nothing else has always been
 * the id FR_EVENT_RAW_BASE | config, and stays so: rings written before
 * read the same. Anything more ("raw:0x10000003c,config1=0x1") cannot fit
 * an id, so its id is FR_EVENT_RAWX_BASE | a 29-bit hash of (config,
 * config1, config2), the same in every process, and the triple is kept in
 * a process-wide table filled as names are looked up (the configuration,
 * a client's request). A process that has not seen the name (a dump read
 * back elsewhere) knows only the id and names it "raw:id=0xNNNNNNNN".
 *
 * The table is append-only: a writer takes a spin flag, fills the next
 * entry and publishes the count with release order; readers take the
 * count with acquire order and never lock, so formatting a name from any
 * thread is safe and cheap.
 */
#include "core/store/sample.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util/hash.h"
#include "core/util/parse.h"

#define RAWX_MAX 64

struct rawx_entry {
	uint32_t id;
	struct fr_event_raw raw;
};

static struct rawx_entry rawx[RAWX_MAX];
static uint32_t rawx_count;
static int rawx_lock;

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* FNV-1a over the three words, folded to 29 bits. */
static uint32_t rawx_id(const struct fr_event_raw *r)
{
	const uint64_t w[3] = {r->config, r->config1, r->config2};
	uint64_t h = FR_FNV_OFFSET;

	/* Byte by byte, low byte first, whatever the host's byte order. */
	for (int i = 0; i < 3; i++)
		for (int b = 0; b < 64; b += 8)
			h = fr_fnv1a_step(h, (w[i] >> b) & 0xff);
	return FR_EVENT_RAWX_BASE | (uint32_t)((h ^ (h >> 29) ^ (h >> 58)) & 0x1fffffffu);
}

/* A hex number "0x..." of 1..16 digits at *p, up to a comma or the end;
 * moves *p past it. Returns 0, -EINVAL, or -ERANGE past 16 digits. */
static int parse_hex(const char **p, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X'))
		return -EINVAL;
	for (s += 2; *s && *s != ','; s++, digits++) {
		int d = fr_hex_digit(*s);

		if (d < 0)
			return -EINVAL;
		if (digits == 16)
			return -ERANGE;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return -EINVAL;
	*out = v;
	*p = s;
	return 0;
}

int fr_event_raw_parse(const char *name, struct fr_event_raw *out, char *err, size_t errlen)
{
	const char *p = name + 4;
	int have1 = 0, have2 = 0, ret;

	memset(out, 0, sizeof(*out));
	if (strncmp(name, "raw:", 4) != 0) {
		set_err(err, errlen, "\"%s\" is not a raw event (raw:0xCONFIG)", name);
		return -EINVAL;
	}
	ret = parse_hex(&p, &out->config);
	if (ret < 0) {
		set_err(err, errlen,
			"\"%s\": the config must be 0x and 1 to 16 hex digits, like raw:0x1c2",
			name);
		return -EINVAL;
	}
	while (*p == ',') {
		uint64_t *field;
		int *seen;

		p++;
		if (strncmp(p, "config1=", 8) == 0) {
			field = &out->config1;
			seen = &have1;
		} else if (strncmp(p, "config2=", 8) == 0) {
			field = &out->config2;
			seen = &have2;
		} else {
			set_err(err, errlen,
				"\"%s\": after the config only config1=0x... and config2=0x... "
				"may follow",
				name);
			return -EINVAL;
		}
		if (*seen) {
			set_err(err, errlen, "\"%s\": %.7s is given twice", name, p);
			return -EINVAL;
		}
		*seen = 1;
		p += 8;
		if (parse_hex(&p, field) < 0) {
			set_err(err, errlen,
				"\"%s\": %.7s must be 0x and 1 to 16 hex digits, like "
				"config1=0x3f807f8fff",
				name, p - 8);
			return -EINVAL;
		}
	}
	if (*p) {
		set_err(err, errlen,
			"\"%s\": unexpected \"%s\" (raw:0xCONFIG[,config1=0x...]"
			"[,config2=0x...])",
			name, p);
		return -EINVAL;
	}
	if (!out->config && !out->config1 && !out->config2) {
		set_err(err, errlen, "\"%s\": a raw event of config 0 counts nothing", name);
		return -EINVAL;
	}
	return 0;
}

/* The entry of `id`, or NULL. Any thread. */
static const struct rawx_entry *rawx_find(uint32_t id)
{
	uint32_t n = __atomic_load_n(&rawx_count, __ATOMIC_ACQUIRE);

	for (uint32_t i = 0; i < n; i++)
		if (rawx[i].id == id)
			return &rawx[i];
	return NULL;
}

int64_t fr_event_raw_id(const struct fr_event_raw *r, char *err, size_t errlen)
{
	const struct rawx_entry *e;
	uint32_t id;
	int64_t ret;

	if (r->config <= 0x7fffffff && !r->config1 && !r->config2)
		return (int64_t)(FR_EVENT_RAW_BASE | (uint32_t)r->config);
	id = rawx_id(r);
	while (__atomic_exchange_n(&rawx_lock, 1, __ATOMIC_ACQUIRE))
		;
	e = rawx_find(id);
	if (e && memcmp(&e->raw, r, sizeof(*r)) == 0) {
		ret = id;
	} else if (e) {
		set_err(err, errlen,
			"raw:0x%llx,config1=0x%llx,config2=0x%llx has the same id as "
			"raw:0x%llx,config1=0x%llx,config2=0x%llx; record one of them",
			(unsigned long long)r->config, (unsigned long long)r->config1,
			(unsigned long long)r->config2, (unsigned long long)e->raw.config,
			(unsigned long long)e->raw.config1, (unsigned long long)e->raw.config2);
		ret = -EEXIST;
	} else if (rawx_count == RAWX_MAX) {
		set_err(err, errlen,
			"more than %d distinct raw events with config1, config2 or a "
			"config above 0x7fffffff",
			RAWX_MAX);
		ret = -ENOSPC;
	} else {
		rawx[rawx_count] = (struct rawx_entry){.id = id, .raw = *r};
		__atomic_store_n(&rawx_count, rawx_count + 1, __ATOMIC_RELEASE);
		ret = id;
	}
	__atomic_store_n(&rawx_lock, 0, __ATOMIC_RELEASE);
	return ret;
}

int fr_event_raw_get(uint32_t event, struct fr_event_raw *out)
{
	const struct rawx_entry *e;

	memset(out, 0, sizeof(*out));
	if (FR_EVENT_IS_RAW(event)) {
		out->config = FR_EVENT_RAW_CODE(event);
		return 0;
	}
	if (!FR_EVENT_IS_RAWX(event) || !(e = rawx_find(event)))
		return -ENOENT;
	*out = e->raw;
	return 0;
}

void fr_event_raw_format(uint32_t event, char *buf, size_t len)
{
	struct fr_event_raw r;
	int n;

	if (fr_event_raw_get(event, &r) < 0) {
		snprintf(buf, len, "raw:id=0x%x", event);
		return;
	}
	n = snprintf(buf, len, "raw:0x%llx", (unsigned long long)r.config);
	if (r.config1 && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, ",config1=0x%llx",
			      (unsigned long long)r.config1);
	if (r.config2 && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, ",config2=0x%llx",
			 (unsigned long long)r.config2);
}

int64_t fr_event_raw_lookup(const char *name)
{
	struct fr_event_raw r;
	const char *p = name + 7;
	uint64_t id;

	/* "raw:id=0x..." names an extended raw id seen only as a number. */
	if (strncmp(name, "raw:id=", 7) == 0) {
		if (parse_hex(&p, &id) < 0 || *p || id > UINT32_MAX ||
		    !FR_EVENT_IS_RAWX((uint32_t)id))
			return -ENOENT;
		return (int64_t)id;
	}
	if (fr_event_raw_parse(name, &r, NULL, 0) < 0)
		return -ENOENT;
	id = (uint64_t)fr_event_raw_id(&r, NULL, 0);
	return (int64_t)id < 0 ? -ENOENT : (int64_t)id;
}
