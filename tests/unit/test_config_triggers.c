/* Config triggers: every accepted form of a signal and how it prints,
 * signals out of range or repeated, cpu_above, exit and pressure triggers
 * with their defaults, the span of window + after, and the limit per session. */
#include "config/config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/time.h"
#include "tests/unit/check.h"
#include "tests/unit/config_check.h"

struct signal_form {
	const char *text;
	int signo;
	const char *printed;
};

/* One written form of a signal: parsed to its number with the window
 * defaults and no cpu fields, printed back in its canonical form. */
static void check_signal_form(const struct signal_form *f)
{
	const struct fr_config_trigger *t;
	struct fr_config cfg;
	char buf[512], quoted[64], *text = NULL;

	snprintf(buf, sizeof(buf), TRIG("[{\"on\":\"signal\",\"signal\":\"%s\"}]"), f->text);
	if (parse_ok(&cfg, buf, &text) < 0)
		return;
	t = &cfg.sessions[0].triggers[0];
	CHECK(cfg.sessions[0].ntriggers == 1 && t->kind == FR_TRIGGER_SIGNAL,
	      "%s: not one signal trigger", f->text);
	CHECK(t->signal == f->signo, "%s: signal %d, want %d", f->text, t->signal, f->signo);
	CHECK(t->window_ns == 60000000000ll && t->after_ns == 0 && t->cooldown_ns == 60000000000ll,
	      "%s: window %lld after %lld cooldown %lld, want 60s 0s 60s", f->text,
	      (long long)t->window_ns, (long long)t->after_ns, (long long)t->cooldown_ns);
	CHECK(t->percent == 0 && t->for_ns == 0, "%s: cpu fields set on a signal trigger", f->text);
	snprintf(quoted, sizeof(quoted), "\"%s\"", f->printed);
	CHECK(text && strstr(text, quoted), "%s: not printed as %s:\n%s", f->text, quoted,
	      text ? text : "(null)");
	CHECK(text && strstr(text, "\"window\":\t\"1m\"") && strstr(text, "\"after\":\t\"0s\"") &&
		      strstr(text, "\"cooldown\":\t\"1m\"") && !strstr(text, "\"percent\"") &&
		      !strstr(text, "\"for\""),
	      "%s: printed trigger:\n%s", f->text, text ? text : "(null)");
	free(text);
	fr_config_fini(&cfg);
}

static void test_trigger_signals(void)
{
	char rtmin3[32], rtmax_2[32], rtmax[32], rtlast[40];
	const struct signal_form forms[] = {
		{"USR1", SIGUSR1, "SIGUSR1"},	      {"SIGUSR1", SIGUSR1, "SIGUSR1"},
		{"usr2", SIGUSR2, "SIGUSR2"},	      {"SIGUSR2", SIGUSR2, "SIGUSR2"},
		{"SigUsr1", SIGUSR1, "SIGUSR1"},      {"RTMIN", SIGRTMIN, "SIGRTMIN"},
		{"SIGRTMIN+0", SIGRTMIN, "SIGRTMIN"}, {"SIGRTMIN+3", SIGRTMIN + 3, rtmin3},
		{"rtmin+03", SIGRTMIN + 3, rtmin3},   {"SIGRTMAX-2", SIGRTMAX - 2, rtmax_2},
		{"RTMAX", SIGRTMAX, rtmax},	      {rtlast, SIGRTMAX, rtmax},
	};

	snprintf(rtmin3, sizeof(rtmin3), "SIGRTMIN+3");
	snprintf(rtmax_2, sizeof(rtmax_2), "SIGRTMIN+%d", SIGRTMAX - 2 - SIGRTMIN);
	snprintf(rtmax, sizeof(rtmax), "SIGRTMIN+%d", SIGRTMAX - SIGRTMIN);
	snprintf(rtlast, sizeof(rtlast), "RTMIN+%d", SIGRTMAX - SIGRTMIN);

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		check_signal_form(&forms[i]);
}

/* One past SIGRTMAX, from either end, and the same real-time signal
 * written two ways, are refused with their messages. */
static void test_trigger_signals_refused(void)
{
	char rtmax[32], rtlast[40], rtpast[40], want[256];
	struct fr_config cfg;
	char buf[512], err[512];
	int ret;

	snprintf(rtmax, sizeof(rtmax), "SIGRTMIN+%d", SIGRTMAX - SIGRTMIN);
	snprintf(rtlast, sizeof(rtlast), "RTMIN+%d", SIGRTMAX - SIGRTMIN);

	/* One past SIGRTMAX, from either end. */
	snprintf(rtpast, sizeof(rtpast), "SIGRTMIN+%d", SIGRTMAX - SIGRTMIN + 1);
	snprintf(buf, sizeof(buf), TRIG("[{\"on\":\"signal\",\"signal\":\"%s\"}]"), rtpast);
	ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
	snprintf(want, sizeof(want),
		 T0 ".signal: %s is past SIGRTMAX, which is SIGRTMIN+%d here (accepted: " ACC ")",
		 rtpast, SIGRTMAX - SIGRTMIN);
	CHECK(ret == -EINVAL && strcmp(err, want) == 0, "%s:\n  got  %s\n  want %s", rtpast, err,
	      want);
	snprintf(rtpast, sizeof(rtpast), "RTMAX-%d", SIGRTMAX - SIGRTMIN + 1);
	snprintf(buf, sizeof(buf), TRIG("[{\"on\":\"signal\",\"signal\":\"%s\"}]"), rtpast);
	ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
	snprintf(want, sizeof(want),
		 T0 ".signal: SIG%s is past SIGRTMAX, which is SIGRTMIN+%d here (accepted: " ACC
		    ")",
		 rtpast, SIGRTMAX - SIGRTMIN);
	CHECK(ret == -EINVAL && strcmp(err, want) == 0, "%s:\n  got  %s\n  want %s", rtpast, err,
	      want);
	CHECK(is_empty(&cfg), "signal out of range left state behind");

	/* The same real-time signal written two ways is one signal. */
	snprintf(
		buf, sizeof(buf),
		TRIGS("{\"on\":\"signal\",\"signal\":\"RTMAX\"},{\"on\":\"signal\",\"signal\":\"%s\"}"),
		rtlast);
	ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
	snprintf(want, sizeof(want),
		 SRC ": sessions[0].triggers[1].signal: %s is already the signal of triggers[0]",
		 rtmax);
	CHECK(ret == -EINVAL && strcmp(err, want) == 0, "RTMAX twice:\n  got  %s\n  want %s", err,
	      want);
}

/* Distinct signals in one session, and one signal in two sessions. */
static void test_trigger_signals_per_session(void)
{
	struct fr_config cfg;
	if (parse_ok(&cfg,
		     "{\"sessions\":[{\"name\":\"a\",\"triggers\":[{\"on\":\"signal\",\"signal\":"
		     "\"USR1\"},{\"on\":\"signal\",\"signal\":\"USR2\"},{\"on\":\"signal\","
		     "\"signal\":\"RTMIN\"}]},{\"name\":\"b\",\"triggers\":[{\"on\":\"signal\","
		     "\"signal\":\"SIGUSR1\"}]}]}",
		     NULL) == 0) {
		CHECK(cfg.nsessions == 2 && cfg.sessions[0].ntriggers == 3 &&
			      cfg.sessions[1].ntriggers == 1,
		      "triggers per session %u %u", cfg.sessions[0].ntriggers,
		      cfg.sessions[1].ntriggers);
		CHECK(cfg.sessions[0].triggers[0].signal == SIGUSR1 &&
			      cfg.sessions[0].triggers[1].signal == SIGUSR2 &&
			      cfg.sessions[0].triggers[2].signal == SIGRTMIN &&
			      cfg.sessions[1].triggers[0].signal == SIGUSR1,
		      "signals in order");
		fr_config_fini(&cfg);
	}
}

/* cpu_above with its defaults, and with everything given. */
static void test_cpu_above_triggers(void)
{
	struct fr_config cfg;
	const struct fr_config_trigger *t;
	char *text = NULL;

	if (parse_ok(&cfg, TRIGS("{\"on\":\"cpu_above\",\"percent\":90}"), &text) == 0) {
		t = &cfg.sessions[0].triggers[0];
		CHECK(t->kind == FR_TRIGGER_CPU_ABOVE && t->percent == 90 &&
			      t->for_ns == 10 * FR_NS_PER_S && t->signal == 0,
		      "cpu_above defaults: percent %u for %lld signal %d", t->percent,
		      (long long)t->for_ns, t->signal);
		CHECK(t->window_ns == 60000000000ll && t->after_ns == 0 &&
			      t->cooldown_ns == 60000000000ll,
		      "cpu_above window defaults");
		CHECK(text && strstr(text, "\"on\":\t\"cpu_above\"") &&
			      strstr(text, "\"percent\":\t90") &&
			      strstr(text, "\"for\":\t\"10s\"") && !strstr(text, "\"signal\""),
		      "cpu_above printed:\n%s", text ? text : "(null)");
		free(text);
		text = NULL;
		fr_config_fini(&cfg);
	}
	if (parse_ok(
		    &cfg,
		    TRIGS("{\"cooldown\":\"10m\",\"on\":\"cpu_above\",\"percent\":1,\"for\":\"1s\","
			  "\"window\":\"2m\",\"after\":\"15s\"},"
			  "{\"on\":\"cpu_above\",\"percent\":100,\"for\":\"1.5s\",\"cooldown\":\"1s\"}"),
		    NULL) == 0) {
		t = &cfg.sessions[0].triggers[0];
		CHECK(t->percent == 1 && t->for_ns == FR_NS_PER_S &&
			      t->window_ns == 120000000000ll && t->after_ns == 15000000000ll &&
			      t->cooldown_ns == 600000000000ll,
		      "cpu_above given: %u %lld %lld %lld %lld", t->percent, (long long)t->for_ns,
		      (long long)t->window_ns, (long long)t->after_ns, (long long)t->cooldown_ns);
		t = &cfg.sessions[0].triggers[1];
		CHECK(t->percent == 100 && t->for_ns == 1500000000ll &&
			      t->cooldown_ns == FR_NS_PER_S,
		      "second cpu_above: %u %lld %lld", t->percent, (long long)t->for_ns,
		      (long long)t->cooldown_ns);
		fr_config_fini(&cfg);
	}
}

/* A pressure trigger as written: its resource, kind and share parsed,
 * and printed back in its canonical form (which parses to the same). */
struct pressure_form {
	const char *json; /* the trigger's keys after "on" */
	uint32_t resource, full, above_bp;
	int64_t for_ns;
	const char *printed_above;
};

static void check_pressure_form(const struct pressure_form *f)
{
	const struct fr_config_trigger *t;
	struct fr_config cfg, again;
	char buf[512], want[64], *text = NULL, *text2 = NULL;

	snprintf(buf, sizeof(buf), TRIG("[{\"on\":\"pressure\",%s}]"), f->json);
	if (parse_ok(&cfg, buf, &text) < 0)
		return;
	t = &cfg.sessions[0].triggers[0];
	CHECK(t->kind == FR_TRIGGER_PRESSURE && t->resource == f->resource && t->full == f->full &&
		      t->above_bp == f->above_bp && t->for_ns == f->for_ns && t->percent == 0,
	      "%s: kind %u resource %u full %u above %u for %lld", f->json, t->kind, t->resource,
	      t->full, t->above_bp, (long long)t->for_ns);
	snprintf(want, sizeof(want), "\"above\":\t\"%s\"", f->printed_above);
	CHECK(text && strstr(text, "\"on\":\t\"pressure\"") && strstr(text, want) &&
		      strstr(text, "\"resource\":\t\"") && strstr(text, "\"for\":\t\"") &&
		      !strstr(text, "\"percent\""),
	      "%s: printed (want %s):\n%s", f->json, want, text ? text : "(null)");
	/* What --check-config prints is itself a configuration. */
	if (text && parse_ok(&again, text, &text2) == 0) {
		const struct fr_config_trigger *u = &again.sessions[0].triggers[0];

		CHECK(u->kind == t->kind && u->resource == t->resource && u->full == t->full &&
			      u->above_bp == t->above_bp && u->for_ns == t->for_ns,
		      "%s: printed form parses differently", f->json);
		fr_config_fini(&again);
	}
	free(text2);
	free(text);
	fr_config_fini(&cfg);
}

/* pressure: each resource, some and full, shares with decimals, "for". */
static void test_pressure_triggers(void)
{
	static const struct pressure_form forms[] = {
		{"\"resource\":\"memory\",\"above\":\"some 10%\"", FR_CONFIG_PRESSURE_MEMORY, 0,
		 1000, FR_NS_PER_S, "some 10%"},
		{"\"resource\":\"memory\",\"above\":\"full 5%\",\"for\":\"5s\"",
		 FR_CONFIG_PRESSURE_MEMORY, 1, 500, 5 * FR_NS_PER_S, "full 5%"},
		{"\"resource\":\"cpu\",\"above\":\"some 2.5%\"", FR_CONFIG_PRESSURE_CPU, 0, 250,
		 FR_NS_PER_S, "some 2.5%"},
		{"\"resource\":\"cpu\",\"above\":\"some 0.01%\",\"for\":\"1m\"",
		 FR_CONFIG_PRESSURE_CPU, 0, 1, 60 * FR_NS_PER_S, "some 0.01%"},
		{"\"resource\":\"io\",\"above\":\"full 100%\"", FR_CONFIG_PRESSURE_IO, 1, 10000,
		 FR_NS_PER_S, "full 100%"},
		{"\"resource\":\"io\",\"above\":\"some 33.33%\"", FR_CONFIG_PRESSURE_IO, 0, 3333,
		 FR_NS_PER_S, "some 33.33%"},
		{"\"resource\":\"io\",\"above\":\"some 007.50%\"", FR_CONFIG_PRESSURE_IO, 0, 750,
		 FR_NS_PER_S, "some 7.5%"},
	};
	struct fr_config cfg;

	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		check_pressure_form(&forms[i]);
	/* A cgroup's full CPU pressure is its own: accepted with a cgroup
	 * target. */
	if (parse_ok(&cfg,
		     "{\"sessions\":[{\"name\":\"a\",\"targets\":{\"cgroup\":\"/db\"},"
		     "\"triggers\":[{\"on\":\"pressure\",\"resource\":\"cpu\","
		     "\"above\":\"full 5%\"}]}]}",
		     NULL) == 0) {
		const struct fr_config_trigger *t = &cfg.sessions[0].triggers[0];

		CHECK(t->kind == FR_TRIGGER_PRESSURE && t->full && t->above_bp == 500,
		      "a cgroup's full cpu: %u %u", t->full, t->above_bp);
		fr_config_fini(&cfg);
	}
	/* The times every trigger takes, and no targets needed. */
	if (parse_ok(&cfg,
		     TRIGS("{\"on\":\"pressure\",\"resource\":\"memory\",\"above\":\"some 10%\","
			   "\"window\":\"30s\",\"after\":\"5s\",\"cooldown\":\"2m\"}"),
		     NULL) == 0) {
		const struct fr_config_trigger *t = &cfg.sessions[0].triggers[0];

		CHECK(t->window_ns == 30 * FR_NS_PER_S && t->after_ns == 5 * FR_NS_PER_S &&
			      t->cooldown_ns == 120 * FR_NS_PER_S,
		      "pressure times: %lld %lld %lld", (long long)t->window_ns,
		      (long long)t->after_ns, (long long)t->cooldown_ns);
		fr_config_fini(&cfg);
	}
}

/* exit, with each kind of target. */
static void test_exit_triggers(void)
{
	struct fr_config cfg;
	const struct fr_config_trigger *t;
	char *text;
	static const char *const targets[] = {
		"{\"pids\":[42]}",
		"{\"comm\":[\"postgres\"]}",
		"{\"cgroup\":\"/system.slice/pg.service\"}",
	};

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		char j[256];

		snprintf(j, sizeof(j),
			 "{\"sessions\":[{\"name\":\"pg\",\"targets\":%s,\"triggers\":[{\"on\":"
			 "\"exit\",\"after\":\"5s\"}]}]}",
			 targets[i]);
		text = NULL;
		if (parse_ok(&cfg, j, &text) < 0)
			continue;
		t = &cfg.sessions[0].triggers[0];
		CHECK(cfg.sessions[0].ntriggers == 1 && t->kind == FR_TRIGGER_EXIT &&
			      t->after_ns == 5000000000ll && t->window_ns == 60000000000ll &&
			      t->cooldown_ns == 60000000000ll && t->signal == 0 &&
			      t->percent == 0 && t->for_ns == 0,
		      "exit trigger with %s", targets[i]);
		CHECK(text && strstr(text, "\"on\":\t\"exit\"") && strstr(text, "\"5s\"") &&
			      !strstr(text, "\"signal\"") && !strstr(text, "\"percent\""),
		      "exit printed:\n%s", text ? text : "(null)");
		free(text);
		fr_config_fini(&cfg);
	}
}

/* A crash trigger: no targets needed (any crash is news), printed back. */
static void test_crash_triggers(void)
{
	struct fr_config cfg;
	const struct fr_config_trigger *t;
	char *text = NULL;

	if (parse_ok(&cfg,
		     "{\"sessions\":[{\"name\":\"c\",\"events\":[{\"event\":\"cpu\",\"hz\":99}],"
		     "\"triggers\":[{\"on\":\"crash\",\"window\":\"10s\"}]}]}",
		     &text) < 0)
		return;
	t = &cfg.sessions[0].triggers[0];
	CHECK(cfg.sessions[0].ntriggers == 1 && t->kind == FR_TRIGGER_CRASH &&
		      t->window_ns == 10000000000ll && t->after_ns == 0 &&
		      t->cooldown_ns == 60000000000ll && t->signal == 0 && t->percent == 0,
	      "crash trigger");
	CHECK(text && strstr(text, "\"on\":\t\"crash\"") && strstr(text, "\"10s\""),
	      "crash printed:\n%s", text ? text : "(null)");
	free(text);
	fr_config_fini(&cfg);
}

/* How long a trigger may span, and how many a session may hold. */
static void test_trigger_limits(void)
{
	struct fr_config cfg;
	const struct fr_config_trigger *t;
	char err[512], *text = NULL;
	char buf[4096];
	size_t n;
	int ret;

	/* window + after: exactly 1h is accepted, in either share. */
	if (parse_ok(
		    &cfg,
		    TRIGS("{\"on\":\"signal\",\"signal\":\"USR1\",\"window\":\"1h\",\"after\":\"0s\"},"
			  "{\"on\":\"signal\",\"signal\":\"USR2\",\"window\":\"1s\",\"after\":\"3599s\"},"
			  "{\"on\":\"cpu_above\",\"percent\":50,\"window\":\"59m\",\"after\":\"1m\"}"),
		    NULL) == 0) {
		for (uint32_t i = 0; i < 3; i++) {
			t = &cfg.sessions[0].triggers[i];
			CHECK(t->window_ns + t->after_ns == 3600000000000ll,
			      "trigger %u spans %lld", i, (long long)(t->window_ns + t->after_ns));
		}
		fr_config_fini(&cfg);
	}

	/* No triggers at all, written out. */
	if (parse_ok(&cfg, TRIG("[]"), &text) == 0) {
		CHECK(cfg.sessions[0].ntriggers == 0, "[] gives %u triggers",
		      cfg.sessions[0].ntriggers);
		CHECK(text && !strstr(text, "\"triggers\""), "empty triggers printed:\n%s",
		      text ? text : "(null)");
		free(text);
		text = NULL;
		fr_config_fini(&cfg);
	}

	/* FR_CONFIG_MAX_TRIGGERS per session, not one more. */
	n = (size_t)snprintf(buf, sizeof(buf), "{\"sessions\":[{\"name\":\"a\",\"triggers\":[");
	for (int i = 0; i < FR_CONFIG_MAX_TRIGGERS; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n,
				      "%s{\"on\":\"signal\",\"signal\":\"RTMIN+%d\"}", i ? "," : "",
				      i);
	snprintf(buf + n, sizeof(buf) - n, "]}]}");
	if (parse_ok(&cfg, buf, NULL) == 0) {
		CHECK(cfg.sessions[0].ntriggers == FR_CONFIG_MAX_TRIGGERS, "%u triggers",
		      cfg.sessions[0].ntriggers);
		CHECK(cfg.sessions[0].triggers[FR_CONFIG_MAX_TRIGGERS - 1].signal ==
			      SIGRTMIN + FR_CONFIG_MAX_TRIGGERS - 1,
		      "last trigger's signal");
		fr_config_fini(&cfg);
	}
	snprintf(buf + n, sizeof(buf) - n, ",{\"on\":\"cpu_above\",\"percent\":5}]}]}");
	ret = fr_config_parse(&cfg, buf, strlen(buf), SRC, err, sizeof(err));
	CHECK(ret == -EINVAL &&
		      strcmp(err, SRC
			     ": sessions[0].triggers: at most 8 triggers per session, got 9") == 0,
	      "9 triggers: %s", err);
	CHECK(is_empty(&cfg), "9 triggers left state behind");
}

int main(void)
{
	test_crash_triggers();
	test_trigger_signals();
	test_trigger_signals_refused();
	test_trigger_signals_per_session();
	test_cpu_above_triggers();
	test_exit_triggers();
	test_pressure_triggers();
	test_trigger_limits();
	if (failures) {
		fprintf(stderr, "%d check(s) failed\n", failures);
		return 1;
	}
	printf("config_triggers: all checks passed\n");
	return 0;
}
