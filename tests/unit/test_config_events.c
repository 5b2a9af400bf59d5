/* Config: the hardware-counter keys of an event. "period" (period mode,
 * instead of "hz"): accepted values, their round trip through
 * fr_config_to_json, and the exact message of each mistake. Raw events
 * with the full config, config1 and config2: kept through the round trip,
 * and a malformed one refused with what is wrong with it. A series the
 * recorder samples by itself (throttled) refused as a session's event.
 * wakeup and runqueue: accepted beside offcpu, refused beside its perf
 * mechanism, with a rate or a min_wait of their own. */
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/sample.h"

#include "tests/unit/check.h"
#include "tests/unit/config_check.h"

#define EV(items) "{\"sessions\":[{\"name\":\"a\",\"events\":[" items "]}]}"
#define E0 SRC ": sessions[0].events[0]"

struct bad {
	const char *json, *msg;
};

static const struct bad bad_events[] = {
	{EV("{\"event\":\"instructions\",\"hz\":99,\"period\":1000}"),
	 E0 ".hz: give either \"hz\" (frequency mode) or \"period\" (period mode), not both"},
	{EV("{\"event\":\"page-faults\",\"period\":0}"),
	 E0 ".period: must be a whole number of events per sample (nanoseconds for cpu), "
	    "1..2^53, got 0"},
	{EV("{\"event\":\"page-faults\",\"period\":-5}"),
	 E0 ".period: must be a whole number of events per sample (nanoseconds for cpu), "
	    "1..2^53, got -5"},
	{EV("{\"event\":\"page-faults\",\"period\":1.5}"),
	 E0 ".period: must be a whole number of events per sample (nanoseconds for cpu), "
	    "1..2^53, got 1.5"},
	{EV("{\"event\":\"page-faults\",\"period\":\"100\"}"),
	 E0 ".period: must be a whole number of events per sample (nanoseconds for cpu), "
	    "1..2^53, got \"100\""},
	{EV("{\"event\":\"cycles\",\"period\":1e17}"),
	 E0 ".period: must be a whole number of events per sample (nanoseconds for cpu), "
	    "1..2^53, got 1e+17"},
	{EV("{\"event\":\"raw:0x1c2,config3=0x1\"}"),
	 E0 ".event: \"raw:0x1c2,config3=0x1\": after the config only config1=0x... and "
	    "config2=0x... may follow"},
	{EV("{\"event\":\"raw:0x1c2,config1=5\"}"),
	 E0 ".event: \"raw:0x1c2,config1=5\": config1 must be 0x and 1 to 16 hex digits, like "
	    "config1=0x3f807f8fff"},
	{EV("{\"event\":\"raw:0x0\"}"),
	 E0 ".event: \"raw:0x0\": a raw event of config 0 counts nothing"},
	{EV("{\"event\":\"offcpu\",\"mechanism\":\"perf\"},{\"event\":\"wakeup\"}"),
	 SRC ": sessions[0].events[1]: wakeup is recorded by offcpu's eBPF program and cannot be "
	     "with \"mechanism\": \"perf\"; leave offcpu's mechanism out"},
	{EV("{\"event\":\"runqueue\",\"hz\":99}"),
	 E0 ".hz: runqueue records every context switch and takes no rate; leave \"hz\" out"},
	{EV("{\"event\":\"wakeup\",\"min_wait\":\"5ms\"}"),
	 E0 ".min_wait: only offcpu takes it; leave it out"},
	{EV("{\"event\":\"throttled\"}"),
	 E0 ".event: throttled is recorded always, not by a session: see it with `flightrec "
	    "timeline --event throttled`; a session dumps at OOM kills with the trigger {\"on\": "
	    "\"oom\"}"},
	{EV("{\"event\":\"offcpu\",\"period\":10}"),
	 E0 ".period: offcpu records every context switch and takes no rate; leave \"period\" "
	    "out"},
};

/* wakeup and runqueue beside offcpu (by eBPF): accepted, kept through the
 * printed configuration. */
static void test_wake_events(void)
{
	struct fr_config cfg;

	if (parse_ok(&cfg,
		     EV("{\"event\":\"offcpu\"},{\"event\":\"wakeup\"},{\"event\":\"runqueue\"}"),
		     NULL) < 0)
		return;
	CHECK(cfg.sessions[0].nevents == 3 && cfg.sessions[0].events[1].event == FR_EVENT_WAKEUP &&
		      cfg.sessions[0].events[2].event == FR_EVENT_RUNQUEUE &&
		      cfg.sessions[0].events[2].hz == 0,
	      "wakeup and runqueue as asked");
	fr_config_fini(&cfg);
}

static void test_period_errors(void)
{
	char err[512];

	for (size_t i = 0; i < sizeof(bad_events) / sizeof(bad_events[0]); i++) {
		const struct bad *b = &bad_events[i];
		struct fr_config cfg;
		int ret;

		ret = fr_config_parse(&cfg, b->json, strlen(b->json), SRC, err, sizeof(err));
		CHECK(ret == -EINVAL, "%s: returned %d", b->json, ret);
		CHECK(ret == 0 || strcmp(err, b->msg) == 0, "%s:\n  got  %s\n  want %s", b->json,
		      err, b->msg);
		if (ret == 0)
			fr_config_fini(&cfg);
	}
}

/* Period mode beside frequency mode in one session, kept through the
 * printed configuration (parse_ok checks the round trip). */
static void test_period(void)
{
	struct fr_config cfg;
	char *printed = NULL;

	if (parse_ok(&cfg,
		     EV("{\"event\":\"instructions\",\"period\":1000000},"
			"{\"event\":\"page-faults\",\"period\":1},"
			"{\"event\":\"cpu\",\"period\":250000},"
			"{\"event\":\"cycles\",\"hz\":49},"
			"{\"event\":\"context-switches\",\"period\":9007199254740992}"),
		     &printed) < 0)
		return;
	const struct fr_config_event *ev = cfg.sessions[0].events;

	CHECK(cfg.sessions[0].nevents == 5, "%u events", cfg.sessions[0].nevents);
	CHECK(ev[0].event == FR_EVENT_INSTRUCTIONS && ev[0].period == 1000000 && ev[0].hz == 0,
	      "instructions: period %llu hz %u", (unsigned long long)ev[0].period, ev[0].hz);
	CHECK(ev[1].period == 1 && ev[1].hz == 0, "page-faults period %llu",
	      (unsigned long long)ev[1].period);
	CHECK(ev[2].event == FR_EVENT_CPU && ev[2].period == 250000, "cpu period %llu",
	      (unsigned long long)ev[2].period);
	CHECK(ev[3].period == 0 && ev[3].hz == 49, "cycles: period %llu hz %u",
	      (unsigned long long)ev[3].period, ev[3].hz);
	CHECK(ev[4].period == 9007199254740992ull, "2^53: %llu", (unsigned long long)ev[4].period);
	CHECK(printed && strstr(printed, "9007199254740992") && !strstr(printed, "\"hz\":\t0"),
	      "printed: %s", printed ? printed : "(none)");
	free(printed);
	fr_config_fini(&cfg);
}

/* The full 64-bit config with config1 and config2, in period mode and at
 * a rate, beside the short form. */
static void test_raw(void)
{
	const char *full = "raw:0x10000003c,config1=0x3f807f8fff";
	struct fr_config cfg;
	char name[FR_EVENT_NAME_MAX];
	char *printed = NULL;

	if (parse_ok(&cfg,
		     EV("{\"event\":\"raw:0x10000003c,config1=0x3f807f8fff\",\"period\":100003},"
			"{\"event\":\"raw:0x1c2\",\"hz\":9},"
			"{\"event\":\"raw:0x1c2,config2=0x1\"}"),
		     &printed) < 0)
		return;
	const struct fr_config_event *ev = cfg.sessions[0].events;

	CHECK(FR_EVENT_IS_RAWX(ev[0].event) && ev[0].period == 100003 &&
		      strcmp(fr_event_format(ev[0].event, name, sizeof(name)), full) == 0,
	      "full raw event: %#x %s", ev[0].event, name);
	CHECK(ev[1].event == (FR_EVENT_RAW_BASE | 0x1c2) && ev[1].hz == 9, "short raw event %#x",
	      ev[1].event);
	CHECK(FR_EVENT_IS_RAWX(ev[2].event) && ev[2].event != ev[0].event && ev[2].hz == 99,
	      "config2 event %#x at %u Hz", ev[2].event, ev[2].hz);
	CHECK(printed && strstr(printed, full), "printed: %s", printed ? printed : "(none)");
	free(printed);
	fr_config_fini(&cfg);
}

int main(void)
{
	test_period_errors();
	test_period();
	test_raw();
	test_wake_events();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("config_events: all checks passed\n");
	return 0;
}
