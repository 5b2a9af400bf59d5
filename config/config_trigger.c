/* A session's triggers: what fires each one (a signal, CPU use above a
 * threshold, a failing target, an OOM kill, the machine's pressure) and
 * the window its dump covers; and the
 * names of signals, as triggers accept them and as everything prints
 * them.
 */
#include "config/config_int.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/util/parse.h"

/* Signals a trigger may wait for. The daemon handles HUP, INT, TERM
 * itself, ignores PIPE and reaps with CHLD; KILL and STOP cannot be
 * caught; the others have a default action or a meaning (a fault, job
 * control, a timer) that a dump must not hijack. What is left is what
 * the kernel sets aside for applications: USR1, USR2 and the real-time
 * signals. */
#define ACCEPTED_SIGNALS "USR1, USR2, RTMIN..RTMAX forms"

static const struct {
	const char *name;
	int signo;
} signal_names[] = {
	/* A table, four to a row. */
	/* clang-format off */
	{"HUP", SIGHUP},       {"INT", SIGINT},     {"QUIT", SIGQUIT},   {"ILL", SIGILL},
	{"TRAP", SIGTRAP},     {"ABRT", SIGABRT},   {"IOT", SIGIOT},     {"BUS", SIGBUS},
	{"FPE", SIGFPE},       {"KILL", SIGKILL},   {"USR1", SIGUSR1},   {"SEGV", SIGSEGV},
	{"USR2", SIGUSR2},     {"PIPE", SIGPIPE},   {"ALRM", SIGALRM},   {"TERM", SIGTERM},
#ifdef SIGSTKFLT
	{"STKFLT", SIGSTKFLT},
#endif
	{"CHLD", SIGCHLD},     {"CLD", SIGCHLD},    {"CONT", SIGCONT},   {"STOP", SIGSTOP},
	{"TSTP", SIGTSTP},     {"TTIN", SIGTTIN},   {"TTOU", SIGTTOU},   {"URG", SIGURG},
	{"XCPU", SIGXCPU},     {"XFSZ", SIGXFSZ},   {"VTALRM", SIGVTALRM}, {"PROF", SIGPROF},
	{"WINCH", SIGWINCH},   {"IO", SIGIO},       {"POLL", SIGPOLL},
#ifdef SIGPWR
	{"PWR", SIGPWR},
#endif
	{"SYS", SIGSYS},
	/* clang-format on */
};

static bool signal_accepted(int signo)
{
	return signo == SIGUSR1 || signo == SIGUSR2 || (signo >= SIGRTMIN && signo <= SIGRTMAX);
}

char *fr_config_signal_name(int signo, char *buf, size_t len)
{
	if (signo >= SIGRTMIN && signo <= SIGRTMAX) {
		if (signo == SIGRTMIN)
			snprintf(buf, len, "SIGRTMIN");
		else
			snprintf(buf, len, "SIGRTMIN+%d", signo - SIGRTMIN);
		return buf;
	}
	for (size_t i = 0; i < ARRAY_SIZE(signal_names); i++)
		if (signal_names[i].signo == signo) {
			snprintf(buf, len, "SIG%s", signal_names[i].name);
			return buf;
		}
	snprintf(buf, len, "signal %d", signo);
	return buf;
}

/* Reads "USR1", "SIGUSR1", "sigusr1", "RTMIN", "SIGRTMIN+3", "RTMAX-2"
 * into a signal number and the name to show for it. Returns 0, -ENOENT
 * (no such name) or -ERANGE (a real-time form past the range the C
 * library leaves to applications). */
static int lookup_signal(const char *text, int *signo, char *name, size_t len)
{
	const char *s = text, *rest;
	int base, sign, n = 0;

	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (size_t i = 0; i < ARRAY_SIZE(signal_names); i++)
		if (strcasecmp(s, signal_names[i].name) == 0) {
			*signo = signal_names[i].signo;
			snprintf(name, len, "SIG%s", signal_names[i].name);
			return 0;
		}
	if (strncasecmp(s, "RTMIN", 5) == 0) {
		base = SIGRTMIN;
		sign = 1;
	} else if (strncasecmp(s, "RTMAX", 5) == 0) {
		base = SIGRTMAX;
		sign = -1;
	} else {
		return -ENOENT;
	}
	rest = s + 5;
	if (*rest) {
		if (*rest != (sign > 0 ? '+' : '-') || !rest[1])
			return -ENOENT;
		for (rest++; *rest; rest++) {
			if (*rest < '0' || *rest > '9')
				return -ENOENT;
			if (n < 1000)
				n = n * 10 + (*rest - '0');
		}
	}
	snprintf(name, len, "SIGRT%s%c%d", sign > 0 ? "MIN" : "MAX", sign > 0 ? '+' : '-', n);
	if (n > SIGRTMAX - SIGRTMIN)
		return -ERANGE;
	*signo = base + sign * n;
	return 0;
}

static int get_signal(struct config_ctx *c, const cJSON *item, const char *path,
		      const struct fr_config_session *sess, struct fr_config_trigger *t)
{
	char got[64], name[32];
	int signo, ret;

	if (!cJSON_IsString(item))
		return config_fail(c, path,
				   "must be a signal name like \"USR1\" (accepted: %s), got %s",
				   ACCEPTED_SIGNALS, config_describe(item, got, sizeof(got)));
	ret = lookup_signal(item->valuestring, &signo, name, sizeof(name));
	if (ret == -ERANGE)
		return config_fail(c, path,
				   "%s is past SIGRTMAX, which is SIGRTMIN+%d here (accepted: %s)",
				   name, SIGRTMAX - SIGRTMIN, ACCEPTED_SIGNALS);
	if (ret < 0)
		return config_fail(c, path, "unknown signal %s (accepted: %s)",
				   config_describe(item, got, sizeof(got)), ACCEPTED_SIGNALS);
	if (signo == SIGHUP || signo == SIGINT || signo == SIGTERM || signo == SIGPIPE ||
	    signo == SIGCHLD)
		return config_fail(c, path, "%s is the daemon's own (accepted: %s)", name,
				   ACCEPTED_SIGNALS);
	if (signo == SIGKILL || signo == SIGSTOP)
		return config_fail(c, path, "%s cannot be caught (accepted: %s)", name,
				   ACCEPTED_SIGNALS);
	if (!signal_accepted(signo))
		return config_fail(c, path, "%s cannot be used for triggers (accepted: %s)", name,
				   ACCEPTED_SIGNALS);
	/* One signal, one trigger per session: two would always fire
	 * together and write the same dump twice. */
	for (uint32_t i = 0; i < sess->ntriggers; i++)
		if (sess->triggers[i].kind == FR_TRIGGER_SIGNAL &&
		    sess->triggers[i].signal == signo)
			return config_fail(c, path,
					   "%s is already the signal of triggers[%" PRIu32 "]",
					   fr_config_signal_name(signo, name, sizeof(name)), i);
	t->signal = signo;
	return 0;
}

/* Indexed by enum fr_trigger_kind. */
static const char *const trigger_kinds[] = {"signal", "cpu_above", "exit",
					    "oom",    "crash",	   "pressure"};

const char *fr_config_trigger_kind(uint32_t kind)
{
	return kind < ARRAY_SIZE(trigger_kinds) ? trigger_kinds[kind] : "unknown";
}
#define TRIGGER_KINDS "signal, cpu_above, exit, oom, crash, pressure"

static const char *const signal_keys[] = {"on", "signal", "window", "after", "cooldown"};
static const char *const cpu_keys[] = {"on", "percent", "for", "window", "after", "cooldown"};
static const char *const exit_keys[] = {"on", "window", "after", "cooldown"};
static const char *const oom_keys[] = {"on", "window", "after", "cooldown"};
static const char *const crash_keys[] = {"on", "window", "after", "cooldown"};
static const char *const pressure_keys[] = {"on",     "resource", "above",   "for",
					    "window", "after",	  "cooldown"};

static const struct {
	const char *const *keys;
	size_t nkeys;
} trigger_keys[] = {
	{signal_keys, ARRAY_SIZE(signal_keys)}, {cpu_keys, ARRAY_SIZE(cpu_keys)},
	{exit_keys, ARRAY_SIZE(exit_keys)},	{oom_keys, ARRAY_SIZE(oom_keys)},
	{crash_keys, ARRAY_SIZE(crash_keys)},	{pressure_keys, ARRAY_SIZE(pressure_keys)},
};

static bool has_key(const char *const *keys, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(keys[i], key) == 0)
			return true;
	return false;
}

/* check_keys for a trigger of `kind`, but a key that belongs to another
 * kind ("percent" on a signal trigger) says which kind takes it: the
 * user has the right key on the wrong trigger, or the wrong "on". */
static int check_trigger_keys(struct config_ctx *c, const cJSON *jt, const char *path,
			      uint32_t kind)
{
	const char *const *keys = trigger_keys[kind].keys;
	size_t nkeys = trigger_keys[kind].nkeys;
	char sub[PATH_MAX_LEN], list[128] = "";
	const cJSON *it;

	for (size_t i = 0; i < nkeys; i++) {
		if (i)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, keys[i], sizeof(list) - strlen(list) - 1);
	}
	cJSON_ArrayForEach(it, jt) {
		uint32_t takers[ARRAY_SIZE(trigger_keys)], n = 0;
		char who[96] = "";

		if (has_key(keys, nkeys, it->string))
			continue;
		for (uint32_t k = 0; k < ARRAY_SIZE(trigger_keys); k++)
			if (has_key(trigger_keys[k].keys, trigger_keys[k].nkeys, it->string))
				takers[n++] = k;
		if (!n)
			continue;
		/* "cpu_above", "cpu_above and pressure", "a, b and c". */
		for (uint32_t i = 0; i < n; i++) {
			if (i)
				strncat(who, i + 1 == n ? " and " : ", ",
					sizeof(who) - strlen(who) - 1);
			strncat(who, trigger_kinds[takers[i]], sizeof(who) - strlen(who) - 1);
		}
		config_join(sub, path, it->string);
		return config_fail(c, sub, "only %s triggers take \"%s\" (accepted for %s: %s)",
				   who, it->string, trigger_kinds[kind], list);
	}
	return config_check_keys(c, jt, path, keys, nkeys);
}

/* "on": which kind of trigger this is. Returns the enum fr_trigger_kind,
 * or -EINVAL with the message set. */
static int trigger_kind(struct config_ctx *c, const cJSON *jt, const char *path)
{
	char sub[PATH_MAX_LEN], got[64];
	const cJSON *on;
	uint32_t kind;

	config_join(sub, path, "on");
	on = cJSON_GetObjectItemCaseSensitive(jt, "on");
	if (!on)
		return config_fail(c, sub,
				   "missing; say what fires the trigger (accepted: " TRIGGER_KINDS
				   ")");
	if (!cJSON_IsString(on))
		return config_fail(c, sub, "must be a string (accepted: " TRIGGER_KINDS "), got %s",
				   config_describe(on, got, sizeof(got)));
	for (kind = 0; kind < ARRAY_SIZE(trigger_kinds); kind++)
		if (strcmp(on->valuestring, trigger_kinds[kind]) == 0)
			return (int)kind;
	return config_fail(c, sub, "unknown trigger %s (accepted: " TRIGGER_KINDS ")",
			   config_describe(on, got, sizeof(got)));
}

/* Indexed by FR_CONFIG_PRESSURE_*. */
static const char *const pressure_resources[] = {"memory", "cpu", "io"};
#define PRESSURE_RESOURCES "memory, cpu, io"
/* In format strings only. */
#define PRESSURE_ABOVE "\"some 10%%\" or \"full 5%%\""

const char *fr_config_pressure_resource(uint32_t resource)
{
	return resource < ARRAY_SIZE(pressure_resources) ? pressure_resources[resource] : "unknown";
}

char *fr_config_pressure_above(const struct fr_config_trigger *t, char *buf, size_t len)
{
	const char *kind = t->full ? "full" : "some";
	uint32_t w = t->above_bp / 100, f = t->above_bp % 100;

	if (f == 0)
		snprintf(buf, len, "%s %" PRIu32 "%%", kind, w);
	else if (f % 10 == 0)
		snprintf(buf, len, "%s %" PRIu32 ".%" PRIu32 "%%", kind, w, f / 10);
	else
		snprintf(buf, len, "%s %" PRIu32 ".%02" PRIu32 "%%", kind, w, f);
	return buf;
}

/* "some 10%", "full 2.5%": the kind of stall and the share of wall time
 * in hundredths of a percent, 1..10000. Returns 0, or -EINVAL with the
 * message set. */
static int get_pressure_above(struct config_ctx *c, const cJSON *item, const char *path,
			      struct fr_config_trigger *t)
{
	char got[64];
	const char *s, *p;
	uint32_t whole = 0, frac = 0, digits = 0, ndec = 0;

	if (!cJSON_IsString(item))
		return config_fail(c, path, "must be a string like " PRESSURE_ABOVE ", got %s",
				   config_describe(item, got, sizeof(got)));
	s = item->valuestring;
	if (strncmp(s, "some ", 5) == 0)
		t->full = 0;
	else if (strncmp(s, "full ", 5) == 0)
		t->full = 1;
	else
		return config_fail(c, path,
				   "must start with \"some\" (some task stalled) or \"full\" "
				   "(all stalled) and one space, like " PRESSURE_ABOVE ", got %s",
				   config_describe(item, got, sizeof(got)));
	for (p = s + 5; *p >= '0' && *p <= '9'; p++, digits++)
		if (whole <= 1000)
			whole = whole * 10 + (uint32_t)(*p - '0');
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++, ndec++)
			if (ndec < 2)
				frac = frac * 10 + (uint32_t)(*p - '0');
	if (!digits || (p[-1] == '.') || *p != '%' || p[1])
		return config_fail(c, path,
				   "must be \"some\" or \"full\", one space, a share of wall "
				   "time and \"%%\", like " PRESSURE_ABOVE ", got %s",
				   config_describe(item, got, sizeof(got)));
	if (ndec > 2)
		return config_fail(c, path, "at most two decimals, got %s",
				   config_describe(item, got, sizeof(got)));
	if (ndec == 1)
		frac *= 10;
	if (whole > 100 || (whole == 100 && frac) || (whole == 0 && frac == 0))
		return config_fail(c, path,
				   "the share must be 0.01%%..100%% (of wall time), got %s",
				   config_describe(item, got, sizeof(got)));
	t->above_bp = whole * 100 + frac;
	return 0;
}

/* A pressure trigger's "resource", "above" and "for". */
static int parse_pressure(struct config_ctx *c, const cJSON *jt, const char *path,
			  const struct fr_config_session *sess, struct fr_config_trigger *t)
{
	char sub[PATH_MAX_LEN], got[64];
	const cJSON *it;
	uint32_t r;
	int ret;

	config_join(sub, path, "resource");
	it = cJSON_GetObjectItemCaseSensitive(jt, "resource");
	if (!it)
		return config_fail(c, sub,
				   "missing; name the resource whose pressure fires the trigger "
				   "(accepted: " PRESSURE_RESOURCES ")");
	if (!cJSON_IsString(it))
		return config_fail(c, sub,
				   "must be a string (accepted: " PRESSURE_RESOURCES "), got %s",
				   config_describe(it, got, sizeof(got)));
	for (r = 0; r < ARRAY_SIZE(pressure_resources); r++)
		if (strcmp(it->valuestring, pressure_resources[r]) == 0)
			break;
	if (r == ARRAY_SIZE(pressure_resources))
		return config_fail(c, sub, "unknown resource %s (accepted: " PRESSURE_RESOURCES ")",
				   config_describe(it, got, sizeof(got)));
	t->resource = r;
	config_join(sub, path, "above");
	it = cJSON_GetObjectItemCaseSensitive(jt, "above");
	if (!it)
		return config_fail(c, sub,
				   "missing; give the share of time stalled that fires the "
				   "trigger, like " PRESSURE_ABOVE);
	ret = get_pressure_above(c, it, sub, t);
	if (ret < 0)
		return ret;
	/* The kernel writes a "full" line for cpu since 5.13, but for the
	 * whole machine it is always 0: some CPU always runs a task. A
	 * cgroup's is its own (none of its tasks ran while some waited). */
	if (t->full && r == FR_CONFIG_PRESSURE_CPU && !sess->targets.cgroup[0])
		return config_fail(c, sub,
				   "\"full\" CPU pressure is always 0 for the machine (some "
				   "task runs whenever one waits for a CPU); use \"some\", or "
				   "a cgroup target, whose own is not");
	t->for_ns = FR_NS_PER_S;
	it = cJSON_GetObjectItemCaseSensitive(jt, "for");
	if (it) {
		config_join(sub, path, "for");
		return config_get_duration(c, it, sub, FR_NS_PER_S, "\"5s\" or \"1m\"", &t->for_ns);
	}
	return 0;
}

/* What fires a trigger of t->kind: its signal, its threshold, or (exit)
 * the session's targets, which must exist. */
static int parse_cause(struct config_ctx *c, const cJSON *jt, const char *path,
		       const struct fr_config_session *sess, struct fr_config_trigger *t)
{
	char sub[PATH_MAX_LEN];
	const cJSON *it;
	int ret;

	switch (t->kind) {
	case FR_TRIGGER_SIGNAL:
		config_join(sub, path, "signal");
		it = cJSON_GetObjectItemCaseSensitive(jt, "signal");
		if (!it)
			return config_fail(c, sub,
					   "missing; name the signal that fires the trigger "
					   "(accepted: " ACCEPTED_SIGNALS ")");
		return get_signal(c, it, sub, sess, t);
	case FR_TRIGGER_CPU_ABOVE:
		config_join(sub, path, "percent");
		it = cJSON_GetObjectItemCaseSensitive(jt, "percent");
		if (!it)
			return config_fail(c, sub,
					   "missing; give the CPU use that fires the trigger, "
					   "1..100 (percent of all CPUs)");
		ret = config_get_uint(c, it, sub, 1, 100, &t->percent);
		if (ret < 0)
			return ret;
		t->for_ns = DEFAULT_TRIGGER_FOR_NS;
		it = cJSON_GetObjectItemCaseSensitive(jt, "for");
		if (it) {
			config_join(sub, path, "for");
			return config_get_duration(c, it, sub, FR_NS_PER_S, "\"10s\" or \"1m\"",
						   &t->for_ns);
		}
		return 0;
	case FR_TRIGGER_EXIT:
		/* Without targets every process of the machine would count,
		 * and some process fails all the time (a grep that found
		 * nothing exits with 1). The message names "on", as the
		 * trigger's kind is what asks for targets. */
		config_join(sub, path, "on");
		if (!fr_targets_given(&sess->targets))
			return config_fail(
				c, sub,
				"an exit trigger needs the session's targets (pids, "
				"comm, cgroup or uid): without them any failing process of the "
				"machine would fire it");
		return 0;
	case FR_TRIGGER_OOM:
		/* Unlike exits, a kill is rare and always news: without
		 * targets any kill on the machine fires it. */
		return 0;
	case FR_TRIGGER_CRASH:
		/* As oom: a crash is news, any process's without targets. */
		return 0;
	case FR_TRIGGER_PRESSURE:
		/* The machine's pressure, or a cgroup target's own. */
		return parse_pressure(c, jt, path, sess, t);
	}
	return 0;
}

/* "window", "after" and "cooldown": what the dump covers and how often
 * it may be written. */
static int parse_times(struct config_ctx *c, const cJSON *jt, const char *path,
		       struct fr_config_trigger *t)
{
	char sub[PATH_MAX_LEN], a[32], b[32];
	const cJSON *it, *after;
	int ret;

	it = cJSON_GetObjectItemCaseSensitive(jt, "window");
	if (it) {
		config_join(sub, path, "window");
		ret = config_get_duration(c, it, sub, FR_NS_PER_S, "\"60s\" or \"2m\"",
					  &t->window_ns);
		if (ret < 0)
			return ret;
	}
	after = cJSON_GetObjectItemCaseSensitive(jt, "after");
	if (after) {
		config_join(sub, path, "after");
		ret = config_get_duration(c, after, sub, 0, "\"10s\" (\"0s\" for none)",
					  &t->after_ns);
		if (ret < 0)
			return ret;
	}
	it = cJSON_GetObjectItemCaseSensitive(jt, "cooldown");
	if (it) {
		config_join(sub, path, "cooldown");
		ret = config_get_duration(c, it, sub, FR_NS_PER_S, "\"60s\" or \"10m\"",
					  &t->cooldown_ns);
		if (ret < 0)
			return ret;
	}
	/* The dump is read from the ring, and the tail is waited for: both
	 * bounded so that one trigger cannot ask for hours of either. Blame
	 * "after" when it was given, as it is the part added to the window. */
	if (t->window_ns > MAX_TRIGGER_SPAN_NS ||
	    t->after_ns > MAX_TRIGGER_SPAN_NS - t->window_ns) {
		config_join(sub, path, after ? "after" : "window");
		return config_fail(c, sub, "window + after must be at most 1h, got %s + %s",
				   config_duration_text(t->window_ns, a, sizeof(a)),
				   config_duration_text(t->after_ns, b, sizeof(b)));
	}
	return 0;
}

static int parse_trigger(struct config_ctx *c, const cJSON *jt, const char *path,
			 struct fr_config_session *sess)
{
	struct fr_config_trigger *t = &sess->triggers[sess->ntriggers];
	char got[64];
	int kind, ret;

	if (!cJSON_IsObject(jt))
		return config_fail(
			c, path,
			"must be an object like {\"on\": \"signal\", \"signal\": \"USR1\"}, got %s",
			config_describe(jt, got, sizeof(got)));
	kind = trigger_kind(c, jt, path);
	if (kind < 0)
		return kind;
	ret = check_trigger_keys(c, jt, path, (uint32_t)kind);
	if (ret < 0)
		return ret;

	memset(t, 0, sizeof(*t));
	t->kind = (uint32_t)kind;
	t->window_ns = DEFAULT_TRIGGER_WINDOW_NS;
	t->after_ns = 0;
	t->cooldown_ns = DEFAULT_TRIGGER_COOLDOWN_NS;
	ret = parse_cause(c, jt, path, sess, t);
	if (ret < 0)
		return ret;
	ret = parse_times(c, jt, path, t);
	if (ret < 0)
		return ret;
	sess->ntriggers++;
	return 0;
}

int config_parse_triggers(struct config_ctx *c, const cJSON *triggers, const char *path,
			  struct fr_config_session *sess)
{
	char sub[PATH_MAX_LEN], got[64];
	const cJSON *jt;
	int n, i, ret;

	if (!cJSON_IsArray(triggers))
		return config_fail(
			c, path,
			"must be an array like [{\"on\": \"signal\", \"signal\": \"USR1\"}], "
			"got %s",
			config_describe(triggers, got, sizeof(got)));
	n = cJSON_GetArraySize(triggers);
	if (n > FR_CONFIG_MAX_TRIGGERS)
		return config_fail(c, path, "at most %d triggers per session, got %d",
				   FR_CONFIG_MAX_TRIGGERS, n);
	i = 0;
	cJSON_ArrayForEach(jt, triggers) {
		config_join_index(sub, path, i++);
		ret = parse_trigger(c, jt, sub, sess);
		if (ret < 0)
			return ret;
	}
	return 0;
}
