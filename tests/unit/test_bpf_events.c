/* The black box's records as the recorder decodes them
 * (recorder/sampling/bpf_events.h): each kind's fields, the exit code as
 * wait(2) encodes it, every length checked against the record (a record
 * that lies is refused, never read past), the names of signals and
 * si_codes, and the labels each event carries. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/store/sample.h"
#include "recorder/sampling/bpf_events.h"
#include "tests/unit/check.h"

#define COPY 1024u

/* The value of label `key` among the n pairs of l, or NULL. */
static const char *label(const struct fr_bpf_event_labels *l, uint32_t n, const char *key)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp(l->pairs[i].key, key) == 0)
			return l->pairs[i].value;
	return NULL;
}

static void head(struct fr_bpf_ev_head *h, uint32_t kind)
{
	h->kind = kind;
	h->pid = 100;
	h->tid = 101;
	h->cpu = 1;
	h->time = 5000;
	memcpy(h->comm, "0123456789abcdef", 16); /* no NUL: 16 bytes at most */
}

static void exec_records(void)
{
	struct fr_bpf_ev_exec r;
	struct fr_bpf_event ev;
	struct fr_bpf_event_labels l;
	uint32_t n;

	memset(&r, 0, sizeof(r));
	head(&r.h, FR_BPF_EV_EXEC);
	r.ppid = 7;
	r.old_pid = 101;
	strcpy(r.path, "/usr/bin/true");
	r.path_len = (uint32_t)strlen(r.path);
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0, "an exec record");
	CHECK(ev.event == FR_EVENT_EXEC && ev.pid == 100 && ev.tid == 101 && ev.cpu == 1 &&
		      ev.time_mono == 5000,
	      "exec head: event %u pid %u", ev.event, ev.pid);
	CHECK(strcmp(ev.comm, "0123456789abcdef") == 0, "a comm of 16 bytes, no NUL: %s", ev.comm);
	CHECK(strcmp(ev.path, "/usr/bin/true") == 0 && ev.ppid == 7, "exec path %s", ev.path);
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(n == 3 && strcmp(label(&l, n, "path"), "/usr/bin/true") == 0 &&
		      strcmp(label(&l, n, "ppid"), "7") == 0 &&
		      strcmp(label(&l, n, "old_pid"), "101") == 0,
	      "exec labels: %u", n);
	/* execve by the leader itself: no old_pid. */
	r.old_pid = 100;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0, "exec by the leader");
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(n == 2 && !label(&l, n, "old_pid"), "old_pid only when another thread called execve");
	/* A path shorter than it says: cut at its NUL, never past. */
	r.path_len = 200;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0 &&
		      strcmp(ev.path, "/usr/bin/true") == 0,
	      "a path length past its NUL");
	/* Lies: a length past the array, a record cut short. */
	r.path_len = FR_BPF_EV_PATH_MAX;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == -EINVAL, "path_len past the array");
	r.path_len = 4;
	CHECK(fr_bpf_event_decode(&r, sizeof(r) - 1, COPY, &ev) == -EINVAL, "a short exec record");
	CHECK(fr_bpf_event_decode(&r, 8, COPY, &ev) == -EINVAL, "a record shorter than a head");
	r.h.kind = 0x99;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == -EINVAL, "an unknown kind");
}

/* code as the kernel keeps it (wait(2)'s status) -> the labels. */
static void exit_one(uint32_t code, const char *exit_code, const char *signal, const char *core)
{
	struct fr_bpf_ev_exit r;
	struct fr_bpf_event ev;
	struct fr_bpf_event_labels l;
	uint32_t n;
	const char *v;

	memset(&r, 0, sizeof(r));
	head(&r.h, FR_BPF_EV_EXIT);
	r.code = code;
	r.lifetime_ns = 2000000000ull;
	r.cpu_ns = 1500000000ull;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0, "exit 0x%x", code);
	CHECK(ev.event == FR_EVENT_EXIT && ev.lifetime_ns == 2000000000ull, "exit fields");
	n = fr_bpf_event_labels(&ev, &l);
	v = label(&l, n, "exit_code");
	CHECK(exit_code ? v && strcmp(v, exit_code) == 0 : !v, "0x%x: exit_code %s, want %s", code,
	      v ? v : "(none)", exit_code ? exit_code : "(none)");
	v = label(&l, n, "signal");
	CHECK(signal ? v && strcmp(v, signal) == 0 : !v, "0x%x: signal %s, want %s", code,
	      v ? v : "(none)", signal ? signal : "(none)");
	v = label(&l, n, "core");
	CHECK(core ? v && strcmp(v, core) == 0 : !v, "0x%x: core %s", code, v ? v : "(none)");
	v = label(&l, n, "cpu_ns");
	CHECK(v && strcmp(v, "1500000000") == 0, "cpu_ns %s", v ? v : "(none)");
	CHECK(fr_bpf_event_decode(&r, sizeof(r) - 8, COPY, &ev) == -EINVAL, "a short exit record");
}

static void exit_records(void)
{
	exit_one(0, "0", NULL, NULL);
	exit_one(3 << 8, "3", NULL, NULL);
	exit_one(42 << 8, "42", NULL, NULL);
	exit_one(255 << 8, "255", NULL, NULL);
	exit_one(SIGKILL, NULL, "SIGKILL", NULL);
	exit_one(SIGSEGV | 0x80, NULL, "SIGSEGV", "1");
	exit_one(SIGABRT, NULL, "SIGABRT", NULL);
	exit_one(40, NULL, "40", NULL); /* a real-time signal: its number */
}

/* Who sent the signal a process died of. */
static void exit_senders(void)
{
	struct fr_bpf_ev_exit r;
	struct fr_bpf_event ev;
	struct fr_bpf_event_labels l;
	const char *v;
	uint32_t n;

	memset(&r, 0, sizeof(r));
	head(&r.h, FR_BPF_EV_EXIT);
	r.code = SIGTERM;
	r.flags = FR_BPF_EV_GROUP_EXIT | FR_BPF_EV_SENDER;
	r.sender_pid = 4242;
	r.sender_uid = 1000;
	/* The sender's name is its own to choose: 16 bytes, no NUL, a
	 * control byte. */
	memcpy(r.sender_comm, "kill\x1b[2Jabcdefghi", 16);
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0 && ev.has_sender &&
		      !ev.sender_kernel && ev.sender_pid == 4242 && ev.sender_uid == 1000,
	      "a sender decoded");
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(n == 5, "signal, sender_pid, sender_uid, sender_comm, cpu_ns: %u", n);
	v = label(&l, n, "sender_pid");
	CHECK(v && strcmp(v, "4242") == 0, "sender_pid %s", v ? v : "(none)");
	v = label(&l, n, "sender_uid");
	CHECK(v && strcmp(v, "1000") == 0, "sender_uid %s", v ? v : "(none)");
	v = label(&l, n, "sender_comm");
	CHECK(v && strcmp(v, "kill?[2Jabcdefgh") == 0, "sender_comm cut at 16, printable: %s",
	      v ? v : "(none)");
	/* The kernel sent it (the OOM killer): no process named. */
	r.flags = FR_BPF_EV_GROUP_EXIT | FR_BPF_EV_SENDER_KERNEL | FR_BPF_EV_SENDER;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0 && ev.sender_kernel &&
		      !ev.has_sender,
	      "the kernel as sender");
	n = fr_bpf_event_labels(&ev, &l);
	v = label(&l, n, "sender");
	CHECK(v && strcmp(v, "kernel") == 0 && !label(&l, n, "sender_pid"), "sender kernel");
	/* An exit with a code has no sender, whatever the flags say. */
	r.code = 3 << 8;
	r.flags = FR_BPF_EV_SENDER;
	CHECK(fr_bpf_event_decode(&r, sizeof(r), COPY, &ev) == 0 && !ev.has_sender &&
		      !ev.sender_kernel,
	      "no sender for an exit");
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(!label(&l, n, "sender_pid") && !label(&l, n, "sender"), "no sender labels");
}

static struct fr_bpf_ev_crash *crash_record(size_t *size)
{
	struct fr_bpf_ev_crash *r;

	*size = sizeof(*r) + COPY;
	r = calloc(1, *size);
	if (!r)
		abort();
	head(&r->h, FR_BPF_EV_CRASH);
	r->sig = SIGSEGV;
	r->code = 1;
	r->addr = 0x10;
	r->flags = FR_BPF_EV_HAS_ADDR | FR_BPF_EV_HAS_REGS;
	r->nr_kernel = 3;
	r->nr_user = COPY;
	r->ip = 0x401000;
	r->sp = 0x7ffd0000;
	for (int i = 0; i < 3; i++)
		r->kips[i] = 0xffffffff81000000ull + (uint64_t)i;
	return r;
}

static void crash_records(void)
{
	struct fr_bpf_event ev;
	struct fr_bpf_event_labels l;
	size_t size;
	struct fr_bpf_ev_crash *r = crash_record(&size);
	uint32_t n;

	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0, "a crash record");
	CHECK(ev.event == FR_EVENT_CRASH && ev.signal == SIGSEGV && ev.has_addr &&
		      ev.addr == 0x10 && ev.has_regs && ev.nr_kernel == 3 &&
		      ev.kips[2] == 0xffffffff81000002ull && ev.nr_user == COPY &&
		      ev.stack == r->stack && !ev.labels,
	      "crash fields");
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(n == 3 && strcmp(label(&l, n, "signal"), "SIGSEGV") == 0 &&
		      strcmp(label(&l, n, "code"), "SEGV_MAPERR") == 0 &&
		      strcmp(label(&l, n, "addr"), "0x10") == 0,
	      "crash labels");
	/* Labels of its own thread are kept, another's are not. */
	r->flags |= FR_BPF_EV_HAS_LABELS;
	r->labels.pid = 100;
	r->labels.tid = 101;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0 && ev.labels == &r->labels,
	      "the crashing thread's labels");
	r->labels.tid = 102;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0 && !ev.labels,
	      "another thread's labels");
	r->labels.tid = 101;
	r->labels.fr_len = FR_BPF_LABELS_FR_MAX + 1;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0 && !ev.labels,
	      "labels longer than their array");
	/* An abort: no address, si_code the sender's. */
	r->sig = SIGABRT;
	r->code = -6;
	r->flags = FR_BPF_EV_HAS_REGS;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0, "an abort");
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(n == 2 && strcmp(label(&l, n, "code"), "SI_TKILL") == 0 && !label(&l, n, "addr"),
	      "abort labels");
	/* An unknown si_code: its number. */
	r->code = 77;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0, "an unknown code");
	n = fr_bpf_event_labels(&ev, &l);
	CHECK(strcmp(label(&l, n, "code"), "77") == 0, "code 77: %s", label(&l, n, "code"));
	/* Without registers: no user stack, whatever nr_user says. */
	r->flags = 0;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == 0 && !ev.has_regs && ev.nr_user == 0,
	      "no registers, no user stack");
	/* Lies: each refused. */
	r->flags = FR_BPF_EV_HAS_REGS;
	r->nr_user = COPY + 8;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == -EINVAL, "nr_user past the copy");
	r->nr_user = 16;
	r->nr_kernel = FR_BPF_FRAMES + 1;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == -EINVAL, "nr_kernel past the array");
	r->nr_kernel = 3;
	CHECK(fr_bpf_event_decode(r, size - 1, COPY, &ev) == -EINVAL,
	      "a record shorter than its stack copy");
	CHECK(fr_bpf_event_decode(r, size, COPY * 2, &ev) == -EINVAL,
	      "a record of another stack_copy");
	r->sig = 0;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == -EINVAL, "signal 0");
	r->sig = 65;
	CHECK(fr_bpf_event_decode(r, size, COPY, &ev) == -EINVAL, "signal 65");
	free(r);
}

static void names(void)
{
	static const struct {
		int sig, code;
		const char *name;
	} codes[] = {
		{SIGSEGV, 1, "SEGV_MAPERR"},  {SIGSEGV, 2, "SEGV_ACCERR"},
		{SIGBUS, 1, "BUS_ADRALN"},    {SIGBUS, 2, "BUS_ADRERR"},
		{SIGILL, 1, "ILL_ILLOPC"},    {SIGFPE, 1, "FPE_INTDIV"},
		{SIGTRAP, 1, "TRAP_BRKPT"},   {SIGSYS, 1, "SYS_SECCOMP"},
		{SIGSEGV, 0x80, "SI_KERNEL"}, {SIGABRT, -6, "SI_TKILL"},
		{SIGSEGV, 0, "SI_USER"},      {SIGQUIT, -1, "SI_QUEUE"},
	};

	CHECK(strcmp(fr_signal_name(SIGSEGV), "SIGSEGV") == 0, "SIGSEGV");
	CHECK(strcmp(fr_signal_name(SIGSYS), "SIGSYS") == 0, "SIGSYS");
	CHECK(strcmp(fr_signal_name(SIGXFSZ), "SIGXFSZ") == 0, "SIGXFSZ");
	CHECK(strcmp(fr_signal_name(SIGKILL), "SIGKILL") == 0, "SIGKILL");
	CHECK(!fr_signal_name(0) && !fr_signal_name(-3) && !fr_signal_name(32) &&
		      !fr_signal_name(1000),
	      "numbers that are no named signal");
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
		const char *got = fr_si_code_name(codes[i].sig, codes[i].code);

		CHECK(got && strcmp(got, codes[i].name) == 0, "signal %d code %d: %s, want %s",
		      codes[i].sig, codes[i].code, got ? got : "(none)", codes[i].name);
	}
	/* A signal's own codes belong to it alone. */
	CHECK(!fr_si_code_name(SIGABRT, 1), "SIGABRT has no code 1");
	CHECK(!fr_si_code_name(SIGSEGV, 99), "SIGSEGV has no code 99");
}

int main(void)
{
	exec_records();
	exit_records();
	exit_senders();
	crash_records();
	names();
	return failures ? 1 : 0;
}
