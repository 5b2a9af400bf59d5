/* Raw PMU event names (core/store/sample_raw.c): the short form keeps the
 * ids rings were written with; the full 64-bit config with config1 and
 * config2 gets an id in its own range, the same for the same words and
 * named back in full; every malformed name is refused with the reason;
 * an id this process never looked up is still named (raw:id=0x...) and
 * looked up again, but has no words to open; the table of such events is
 * bounded. */
#include "core/store/sample.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tests/unit/check.h"

static void test_short_form(void)
{
	char buf[FR_EVENT_NAME_MAX];
	struct fr_event_raw r;

	CHECK(fr_event_lookup("raw:0x1a2") == (int64_t)(FR_EVENT_RAW_BASE | 0x1a2),
	      "raw:0x1a2 is %lld", (long long)fr_event_lookup("raw:0x1a2"));
	CHECK(fr_event_lookup("raw:0X7fffffff") == (int64_t)(FR_EVENT_RAW_BASE | 0x7fffffff),
	      "raw:0X7fffffff");
	CHECK(strcmp(fr_event_format(FR_EVENT_RAW_BASE | 0x1a2, buf, sizeof(buf)), "raw:0x1a2") ==
		      0,
	      "formatted %s", buf);
	CHECK(fr_event_raw_get(FR_EVENT_RAW_BASE | 0x1a2, &r) == 0 && r.config == 0x1a2 &&
		      !r.config1 && !r.config2,
	      "words of raw:0x1a2");
	CHECK(fr_event_is_hardware(FR_EVENT_RAW_BASE | 0x1a2), "raw is hardware");
	CHECK(fr_event_raw_get(FR_EVENT_CYCLES, &r) == -ENOENT, "cycles has no raw words");
}

static void test_full_form(void)
{
	const char *full = "raw:0x10000003c,config1=0x3f807f8fff,config2=0x1";
	char buf[FR_EVENT_NAME_MAX];
	struct fr_event_raw r;
	int64_t id = fr_event_lookup(full), id2;

	CHECK(id >= 0 && FR_EVENT_IS_RAWX((uint32_t)id) && !FR_EVENT_IS_RAW((uint32_t)id),
	      "%s: id %#llx", full, (long long)id);
	if (id < 0)
		return;
	CHECK(strcmp(fr_event_format((uint32_t)id, buf, sizeof(buf)), full) == 0,
	      "formatted \"%s\", want \"%s\"", buf, full);
	CHECK(fr_event_raw_get((uint32_t)id, &r) == 0 && r.config == 0x10000003cull &&
		      r.config1 == 0x3f807f8fffull && r.config2 == 1,
	      "words %llx %llx %llx", (unsigned long long)r.config, (unsigned long long)r.config1,
	      (unsigned long long)r.config2);
	CHECK(fr_event_is_hardware((uint32_t)id) && fr_event_has_rate((uint32_t)id) &&
		      strcmp(fr_event_unit((uint32_t)id), "count") == 0 &&
		      strcmp(fr_event_name((uint32_t)id), "raw") == 0,
	      "kind of an extended raw event");
	/* The same words in another order and case: the same id. */
	id2 = fr_event_lookup("raw:0X10000003C,config2=0x1,config1=0x3F807F8FFF");
	CHECK(id2 == id, "reordered: %#llx, want %#llx", (long long)id2, (long long)id);
	/* config1 alone; a 64-bit config alone. */
	id2 = fr_event_lookup("raw:0x1c2,config1=0x1");
	CHECK(id2 >= 0 && FR_EVENT_IS_RAWX((uint32_t)id2) && id2 != id, "config1 alone: %#llx",
	      (long long)id2);
	id2 = fr_event_lookup("raw:0xffffffffffffffff");
	CHECK(id2 >= 0 && FR_EVENT_IS_RAWX((uint32_t)id2) &&
		      strcmp(fr_event_format((uint32_t)id2, buf, sizeof(buf)),
			     "raw:0xffffffffffffffff") == 0,
	      "64-bit config: %#llx %s", (long long)id2, buf);
	/* The longest name fits. */
	id2 = fr_event_lookup("raw:0xffffffffffffffff,config1=0xffffffffffffffff,config2="
			      "0xffffffffffffffff");
	CHECK(id2 >= 0 && strlen(fr_event_format((uint32_t)id2, buf, sizeof(buf))) == 76,
	      "longest name \"%s\"", buf);
}

/* An id seen only as a number (a ring read by another process). */
static void test_unknown_id(void)
{
	const uint32_t id = FR_EVENT_RAWX_BASE | 0x1234567;
	char buf[FR_EVENT_NAME_MAX];
	struct fr_event_raw r;

	CHECK(strcmp(fr_event_format(id, buf, sizeof(buf)), "raw:id=0x21234567") == 0,
	      "unknown id named \"%s\"", buf);
	CHECK(fr_event_lookup("raw:id=0x21234567") == id, "raw:id= looked up");
	CHECK(fr_event_raw_get(id, &r) == -ENOENT, "an unknown id has words");
	CHECK(fr_event_lookup("raw:id=0x1a2") == -ENOENT, "raw:id= of a short id");
	CHECK(fr_event_lookup("raw:id=0x2123456789") == -ENOENT, "raw:id= above 32 bits");
}

struct bad {
	const char *name, *msg;
};

static const struct bad bad_names[] = {
	{"raw:1c2", "\"raw:1c2\": the config must be 0x and 1 to 16 hex digits, like raw:0x1c2"},
	{"raw:0x", "\"raw:0x\": the config must be 0x and 1 to 16 hex digits, like raw:0x1c2"},
	{"raw:0xZZ", "\"raw:0xZZ\": the config must be 0x and 1 to 16 hex digits, like raw:0x1c2"},
	{"raw:0x1c2 ",
	 "\"raw:0x1c2 \": the config must be 0x and 1 to 16 hex digits, like raw:0x1c2"},
	{"raw:0x10000000000000000", "\"raw:0x10000000000000000\": the config must be 0x and 1 "
				    "to 16 hex digits, like raw:0x1c2"},
	{"raw:", "\"raw:\": the config must be 0x and 1 to 16 hex digits, like raw:0x1c2"},
	{"raw:0x1c2,config3=0x1", "\"raw:0x1c2,config3=0x1\": after the config only "
				  "config1=0x... and config2=0x... may follow"},
	{"raw:0x1c2,", "\"raw:0x1c2,\": after the config only config1=0x... and config2=0x... "
		       "may follow"},
	{"raw:0x1c2,config1=0x1,config1=0x2",
	 "\"raw:0x1c2,config1=0x1,config1=0x2\": config1 is given twice"},
	{"raw:0x1c2,config2=12", "\"raw:0x1c2,config2=12\": config2 must be 0x and 1 to 16 hex "
				 "digits, like config1=0x3f807f8fff"},
	{"raw:0x1c2,config1=", "\"raw:0x1c2,config1=\": config1 must be 0x and 1 to 16 hex "
			       "digits, like config1=0x3f807f8fff"},
	{"raw:0x0", "\"raw:0x0\": a raw event of config 0 counts nothing"},
	{"cycles", "\"cycles\" is not a raw event (raw:0xCONFIG)"},
};

static void test_errors(void)
{
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		const struct bad *b = &bad_names[i];
		struct fr_event_raw r;
		char err[256] = "";

		CHECK(fr_event_raw_parse(b->name, &r, err, sizeof(err)) == -EINVAL, "\"%s\" parsed",
		      b->name);
		CHECK(strcmp(err, b->msg) == 0, "%s:\n  got  %s\n  want %s", b->name, err, b->msg);
		if (strncmp(b->name, "raw:", 4) == 0)
			CHECK(fr_event_lookup(b->name) == -ENOENT, "\"%s\" looked up", b->name);
	}
	/* Config 0 with config1 is a real event (the words say it). */
	CHECK(fr_event_lookup("raw:0x0,config1=0x5") >= 0, "raw:0x0,config1=0x5 refused");
}

/* At most 64 extended events; then a reason, and the ones known still
 * work. */
static void test_table_full(void)
{
	struct fr_event_raw r = {.config = 0x1c2};
	char err[256] = "";
	int64_t ret = 0;
	int added = 0;

	for (uint64_t i = 1; i <= 100 && ret >= 0; i++) {
		r.config1 = 0x1000 + i;
		ret = fr_event_raw_id(&r, err, sizeof(err));
		added += ret >= 0;
	}
	CHECK(ret == -ENOSPC, "a full table: %lld", (long long)ret);
	CHECK(strcmp(err, "more than 64 distinct raw events with config1, config2 or a config "
			  "above 0x7fffffff") == 0,
	      "full: %s", err);
	CHECK(added > 0 && added <= 64, "%d added", added);
	CHECK(fr_event_lookup("raw:0x10000003c,config1=0x3f807f8fff,config2=0x1") >= 0,
	      "a known event lost when the table filled");
	/* The short form needs no entry. */
	CHECK(fr_event_lookup("raw:0x3c") == (int64_t)(FR_EVENT_RAW_BASE | 0x3c),
	      "short form when the table is full");
}

int main(void)
{
	test_short_form();
	test_full_form();
	test_unknown_id();
	test_errors();
	test_table_full();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("sample_raw: all checks passed\n");
	return 0;
}
