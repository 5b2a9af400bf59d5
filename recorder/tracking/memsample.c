/* The memory sampler (memsample.h): a thread that reads /proc once a
 * second, and the queue through which its samples reach the ingest
 * thread.
 *
 * Invariants:
 * - The ingest thread alone touches `noted*` and `handed_mono`; the
 *   sampler's thread alone touches `pids`, `prev`, `batch` and the pressure
 *   baselines; `lock` guards the rest but the atomics.
 * - `lock` is held only to copy or swap fixed arrays: the ingest thread
 *   waits on it for microseconds at most, never for a read of /proc.
 */
#include "recorder/tracking/memsample.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/util/log.h"
#include "core/util/priority.h"
#include "core/util/time.h"
#include "recorder/tracking/cgcpu.h"
#include "recorder/tracking/proc_mem.h"

/* The ingest thread's set of pids seen (open addressing, 0 empty), filled
 * to at most 3/4. */
#define NOTED_SLOTS 1024
#define NOTED_MAX (NOTED_SLOTS * 3 / 4)
#define TICK_NS FR_NS_PER_S
/* How often the ingest thread hands its noted pids over: a process that
 * ran is read at the sampler's next tick, not a tick later. */
#define HAND_NS (100LL * 1000 * 1000)

struct msample {
	int64_t time_ns;
	uint32_t pid, event;
	uint64_t weight;
};

struct fr_memsample {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stop;
	char proc[128];

	/* The ingest thread's. */
	uint32_t noted[NOTED_SLOTS];
	uint32_t nnoted, last_noted;
	int64_t handed_mono;
	struct msample *out; /* FR_MEMSAMPLE_QUEUE, swapped with `queue` */

	/* Under `lock`. */
	uint32_t wanted[NOTED_SLOTS], nwanted; /* a set like `noted`, emptied each tick */
	uint32_t watch[FR_MEMSAMPLE_WATCH_MAX], nwatch;
	struct msample *queue;
	uint32_t nqueue; /* also read without the lock (atomic) */

	/* The sampler thread's. */
	uint32_t pids[2 * NOTED_MAX + FR_MEMSAMPLE_WATCH_MAX], npids, rotate;
	uint32_t prev[NOTED_MAX], nprev; /* the pids handed over for the last tick */
	struct msample batch[FR_MEMSAMPLE_MAX_PIDS + FR_PRESSURE_RESOURCES + FR_CGCPU_READS];
	struct fr_cgcpu *cg; /* NULL: throttling not sampled */
	struct fr_cgcpu_sample cgs[FR_CGCPU_READS];
	char throttle_error[256];
	struct psi_file {
		int have_base, has_full;
		uint64_t some_base, full_base;
		char error[320]; /* under `lock`: status reads it */
		int failed;	 /* atomic */
	} psi[FR_PRESSURE_RESOURCES];
	int64_t psi_mono;	      /* the last tick's read; 0: none */
	struct fr_pressure_tick tick; /* being read */

	/* Under `lock`: the last tick's pressure, for the ingest thread. */
	struct fr_pressure_tick psi_out;
	int psi_new;

	struct fr_memsample_stats st; /* atomics */
};

static void count(uint64_t *c, uint64_t n)
{
	__atomic_add_fetch(c, n, __ATOMIC_RELAXED);
}

/* ---- the ingest thread's side -------------------------------------------- */

/* Adds pid to a set of NOTED_SLOTS (open addressing, 0 empty) holding
 * *n, at most NOTED_MAX. */
static void set_add(uint32_t *set, uint32_t *n, uint32_t pid)
{
	uint32_t i;

	for (i = (pid * 2654435761u) % NOTED_SLOTS; set[i]; i = (i + 1) % NOTED_SLOTS)
		if (set[i] == pid)
			return;
	if (*n >= NOTED_MAX)
		return;
	set[i] = pid;
	(*n)++;
}

void fr_memsample_note_pid(struct fr_memsample *m, uint32_t pid)
{
	if (!m || pid == 0 || pid == m->last_noted)
		return;
	m->last_noted = pid;
	set_add(m->noted, &m->nnoted, pid);
}

/* Hands the pids noted over to the sampler: they join those it reads at
 * its next tick. */
static void hand_over(struct fr_memsample *m)
{
	if (m->nnoted == 0)
		return;
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < NOTED_SLOTS; i++)
		if (m->noted[i])
			set_add(m->wanted, &m->nwanted, m->noted[i]);
	pthread_mutex_unlock(&m->lock);
	memset(m->noted, 0, sizeof(m->noted));
	m->nnoted = 0;
	m->last_noted = 0;
}

uint32_t fr_memsample_take(struct fr_memsample *m, void (*fn)(void *arg, const struct fr_sample *s),
			   void *arg)
{
	static const uint64_t no_frames[1];
	int64_t now;
	uint32_t n;
	struct msample *q;

	if (!m)
		return 0;
	now = fr_now_mono_ns();
	if (now - m->handed_mono >= HAND_NS) {
		m->handed_mono = now;
		hand_over(m);
	}
	if (__atomic_load_n(&m->nqueue, __ATOMIC_ACQUIRE) == 0)
		return 0;
	pthread_mutex_lock(&m->lock);
	q = m->queue;
	m->queue = m->out;
	m->out = q;
	n = m->nqueue;
	__atomic_store_n(&m->nqueue, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->lock);
	for (uint32_t i = 0; i < n; i++) {
		const struct fr_sample s = {
			.time_ns = q[i].time_ns,
			.pid = q[i].pid,
			.tid = q[i].pid,
			.event = q[i].event,
			.weight = q[i].weight,
			.ips = no_frames,
		};

		fn(arg, &s);
	}
	return n;
}

void fr_memsample_lost(struct fr_memsample *m, uint32_t n)
{
	if (m)
		count(&m->st.dropped, n);
}

void fr_memsample_watch_pids(struct fr_memsample *m, const uint32_t *pids, uint32_t n)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->nwatch = n > FR_MEMSAMPLE_WATCH_MAX ? FR_MEMSAMPLE_WATCH_MAX : n;
	memcpy(m->watch, pids, m->nwatch * sizeof(*pids));
	pthread_mutex_unlock(&m->lock);
}

/* ---- the sampler's thread ------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The pids to read this tick, once each: those handed over since the
 * last tick and before it (a process that runs once a second, its samples
 * reaching the ingest thread just after one tick, is still read at each),
 * and those watched. */
static void gather(struct fr_memsample *m)
{
	uint32_t n = m->nprev, nnew = 0;

	memcpy(m->pids, m->prev, m->nprev * sizeof(m->pids[0]));
	pthread_mutex_lock(&m->lock);
	for (uint32_t i = 0; i < NOTED_SLOTS; i++)
		if (m->wanted[i])
			m->prev[nnew++] = m->pids[n++] = m->wanted[i];
	memset(m->wanted, 0, sizeof(m->wanted));
	m->nwanted = 0;
	memcpy(m->pids + n, m->watch, m->nwatch * sizeof(m->pids[0]));
	m->npids = n + m->nwatch;
	pthread_mutex_unlock(&m->lock);
	m->nprev = nnew;
	qsort(m->pids, m->npids, sizeof(m->pids[0]), cmp_u32);
	n = 0;
	for (uint32_t i = 0; i < m->npids; i++)
		if (m->pids[i] && (n == 0 || m->pids[n - 1] != m->pids[i]))
			m->pids[n++] = m->pids[i];
	m->npids = n;
}

const char *fr_pressure_resource_name(uint32_t resource)
{
	static const char *const names[FR_PRESSURE_RESOURCES] = {"memory", "cpu", "io"};

	return resource < FR_PRESSURE_RESOURCES ? names[resource] : "unknown";
}

/* The event a resource's pressure is recorded as. */
static const uint32_t psi_event[FR_PRESSURE_RESOURCES] = {FR_EVENT_MEM_PRESSURE,
							  FR_EVENT_CPU_PRESSURE,
							  FR_EVENT_IO_PRESSURE};

/* A resource's pressure file could not be read (ret < 0): said once, and
 * its baseline forgotten. */
static void psi_failed(struct fr_memsample *m, uint32_t r, int ret)
{
	struct psi_file *f = &m->psi[r];
	char why[320];

	f->have_base = 0;
	if (__atomic_load_n(&f->failed, __ATOMIC_ACQUIRE))
		return;
	snprintf(why, sizeof(why), "cannot read %s/pressure/%s: %s", m->proc,
		 fr_pressure_resource_name(r),
		 ret == -ENOENT ? "this kernel has no PSI (or psi=0)" : strerror(-ret));
	fr_log_warn("%s-pressure is not sampled: %s", fr_pressure_resource_name(r), why);
	pthread_mutex_lock(&m->lock);
	snprintf(f->error, sizeof(f->error), "%s", why);
	pthread_mutex_unlock(&m->lock);
	__atomic_store_n(&f->failed, 1, __ATOMIC_RELEASE);
}

/* The pressure samples of this tick into `out` (room for
 * FR_PRESSURE_RESOURCES): for each resource the "some" stall time since
 * the last tick; the tick's "some" and "full" also into m->tick. A first
 * read only sets the baseline. */
static uint32_t read_pressure(struct fr_memsample *m, struct msample *out)
{
	int64_t now = fr_now_mono_ns();
	uint32_t n = 0;

	memset(&m->tick, 0, sizeof(m->tick));
	m->tick.time_ns = fr_now_real_ns();
	m->tick.mono_ns = now;
	m->tick.interval_ns = m->psi_mono ? now - m->psi_mono : 0;
	m->psi_mono = now;
	for (uint32_t r = 0; r < FR_PRESSURE_RESOURCES; r++) {
		struct psi_file *f = &m->psi[r];
		uint64_t some, full;
		int has_full, ret;

		ret = fr_proc_read_pressure(m->proc, fr_pressure_resource_name(r), &some, &full,
					    &has_full);
		if (ret < 0) {
			psi_failed(m, r, ret);
			continue;
		}
		if (__atomic_load_n(&f->failed, __ATOMIC_ACQUIRE)) {
			fr_log_info("%s-pressure is sampled again", fr_pressure_resource_name(r));
			__atomic_store_n(&f->failed, 0, __ATOMIC_RELEASE);
		}
		if (!f->have_base || some < f->some_base || full < f->full_base ||
		    has_full != f->has_full) {
			f->have_base = 1;
			f->has_full = has_full;
			f->some_base = some;
			f->full_base = full;
			continue;
		}
		m->tick.valid[r] = 1;
		m->tick.has_full[r] = (uint8_t)has_full;
		m->tick.some_ns[r] = some - f->some_base;
		m->tick.full_ns[r] = full - f->full_base;
		out[n++] = (struct msample){
			.time_ns = m->tick.time_ns,
			.pid = 0,
			.event = psi_event[r],
			.weight = some - f->some_base,
		};
		f->some_base = some;
		f->full_base = full;
	}
	count(&m->st.pressure_samples, n);
	return n;
}

/* The throttled samples of this tick's cgroups into `out` (room for
 * FR_CGCPU_READS). */
static uint32_t throttled(struct fr_memsample *m, int64_t deadline, struct msample *out)
{
	uint32_t n;

	if (!m->cg)
		return 0;
	n = fr_cgcpu_tick(m->cg, m->pids, m->npids, deadline, m->cgs, FR_CGCPU_READS);
	for (uint32_t i = 0; i < n; i++)
		out[i] = (struct msample){
			.time_ns = m->cgs[i].time_ns,
			.pid = m->cgs[i].pid,
			.event = FR_EVENT_THROTTLED,
			.weight = m->cgs[i].throttled_ns,
		};
	return n;
}

/* One tick: the pressures, then at most FR_MEMSAMPLE_MAX_PIDS processes,
 * starting where the last tick's turn ended, within the budget. */
static uint32_t tick(struct fr_memsample *m)
{
	int64_t t0 = fr_now_mono_ns();
	uint32_t np = read_pressure(m, &m->batch[0]), n = np, done = 0;

	if (np) {
		pthread_mutex_lock(&m->lock);
		m->psi_out = m->tick;
		m->psi_new = 1;
		pthread_mutex_unlock(&m->lock);
	}

	gather(m);
	if (m->rotate >= m->npids)
		m->rotate = 0;
	for (; done < m->npids && done < FR_MEMSAMPLE_MAX_PIDS; done++) {
		uint32_t pid = m->pids[(m->rotate + done) % m->npids];
		uint64_t bytes;

		if (fr_now_mono_ns() - t0 > FR_MEMSAMPLE_BUDGET_NS)
			break;
		/* A kernel thread or a zombie has no memory of its own. */
		if (fr_proc_read_rss(m->proc, pid, &bytes) < 0 || bytes == 0) {
			count(&m->st.gone, 1);
			continue;
		}
		m->batch[n++] = (struct msample){
			.time_ns = fr_now_real_ns(),
			.pid = pid,
			.event = FR_EVENT_RSS,
			.weight = bytes,
		};
	}
	count(&m->st.rss_samples, n - np);
	count(&m->st.skipped, m->npids - done);
	m->rotate += done;
	n += throttled(m, t0 + FR_MEMSAMPLE_BUDGET_NS, &m->batch[n]);
	count(&m->st.busy_ns, (uint64_t)(fr_now_mono_ns() - t0));
	count(&m->st.ticks, 1);
	return n;
}

/* Appends the tick's samples to the queue; what does not fit is dropped. */
static void publish(struct fr_memsample *m, uint32_t n)
{
	uint32_t room, take;

	pthread_mutex_lock(&m->lock);
	room = FR_MEMSAMPLE_QUEUE - m->nqueue;
	take = n < room ? n : room;
	memcpy(m->queue + m->nqueue, m->batch, take * sizeof(m->batch[0]));
	__atomic_store_n(&m->nqueue, m->nqueue + take, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&m->lock);
	if (take < n)
		count(&m->st.dropped, n - take);
}

/* The monotonic time of the next tick: the middle of a wall-clock
 * second, so that a timeline of one-second steps has one read in each
 * step (a tick at a second's edge would fall on either side of it by a
 * millisecond's jitter, leaving one step empty and the next with two);
 * never closer than a quarter of a second to the last. */
static int64_t next_tick(void)
{
	int64_t mono = fr_now_mono_ns(), in = fr_now_real_ns() % TICK_NS;
	int64_t wait = (TICK_NS + TICK_NS / 2 - in) % TICK_NS;

	return mono + (wait < TICK_NS / 4 ? wait + TICK_NS : wait);
}

static void *sampler_main(void *arg)
{
	struct fr_memsample *m = arg;
	int64_t next = next_tick();

	fr_priority_normal();
	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		struct timespec ts;
		int64_t now = fr_now_mono_ns();

		if (now < next) {
			fr_mono_deadline(&ts, next - now);
			pthread_cond_timedwait(&m->cond, &m->lock, &ts);
			continue;
		}
		/* A late tick (a suspended machine) does not catch up. */
		next = next_tick();
		pthread_mutex_unlock(&m->lock);
		publish(m, tick(m));
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

/* ---- start, stop, status --------------------------------------------------- */

static void memsample_free(struct fr_memsample *m)
{
	free(m->queue);
	free(m->out);
	fr_cgcpu_free(m->cg);
	pthread_cond_destroy(&m->cond);
	pthread_mutex_destroy(&m->lock);
	free(m);
}

int fr_memsample_start(struct fr_memsample **out, const char *proc, unsigned flags, char *err,
		       size_t errlen)
{
	struct fr_memsample *m = calloc(1, sizeof(*m));
	sigset_t all, old;
	int ret;

	*out = NULL;
	if (!m || fr_mono_cond_init(&m->cond) < 0) {
		free(m);
		fr_set_err(err, errlen, "memory samples: out of memory");
		return -ENOMEM;
	}
	fr_mutex_init_pi(&m->lock);
	snprintf(m->proc, sizeof(m->proc), "%s", proc);
	m->queue = calloc(FR_MEMSAMPLE_QUEUE, sizeof(*m->queue));
	m->out = calloc(FR_MEMSAMPLE_QUEUE, sizeof(*m->out));
	m->handed_mono = fr_now_mono_ns();
	if (!m->queue || !m->out) {
		memsample_free(m);
		fr_set_err(err, errlen, "memory samples: out of memory");
		return -ENOMEM;
	}
	if ((flags & FR_MEMSAMPLE_THROTTLE) &&
	    fr_cgcpu_new(&m->cg, proc, m->throttle_error, sizeof(m->throttle_error)) < 0)
		fr_log_warn("throttled is not sampled: %s", m->throttle_error);
	/* Signals are the daemon's: this thread must never receive one. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&m->thread, NULL, sampler_main, m);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret < 0) {
		memsample_free(m);
		fr_set_err(err, errlen, "memory samples: cannot start the thread: %s",
			   strerror(-ret));
		return ret;
	}
	pthread_setname_np(m->thread, "fr-memsample");
	*out = m;
	return 0;
}

void fr_memsample_stop(struct fr_memsample *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	m->stop = 1;
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	pthread_join(m->thread, NULL);
	memsample_free(m);
}

void fr_memsample_stats(const struct fr_memsample *m, struct fr_memsample_stats *out)
{
	const uint64_t *in = (const uint64_t *)&m->st;
	uint64_t *o = (uint64_t *)out;

	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		o[i] = __atomic_load_n(&in[i], __ATOMIC_RELAXED);
	if (m->cg) {
		struct fr_cgcpu_stats cs;

		fr_cgcpu_stats(m->cg, &cs);
		out->cgroups = cs.cgroups;
		out->throttle_reads = cs.reads;
		out->throttle_failures = cs.failures;
		out->throttle_skipped = cs.skipped;
		out->throttled_samples = cs.samples;
	}
}

const char *fr_memsample_throttle_error(const struct fr_memsample *m)
{
	return m->throttle_error;
}

const char *fr_memsample_throttle_where(const struct fr_memsample *m)
{
	return m->cg ? fr_cgcpu_where(m->cg) : "";
}

int fr_memsample_pressure_failed(const struct fr_memsample *m)
{
	return __atomic_load_n(&m->psi[FR_PRESSURE_MEMORY].failed, __ATOMIC_ACQUIRE);
}

int fr_memsample_pressure_error(struct fr_memsample *m, uint32_t resource, char *err, size_t errlen)
{
	int failed;

	if (!m || resource >= FR_PRESSURE_RESOURCES)
		return 0;
	failed = __atomic_load_n(&m->psi[resource].failed, __ATOMIC_ACQUIRE);
	if (failed && err) {
		pthread_mutex_lock(&m->lock);
		snprintf(err, errlen, "%s", m->psi[resource].error);
		pthread_mutex_unlock(&m->lock);
	}
	return failed;
}

int fr_memsample_take_pressure(struct fr_memsample *m, struct fr_pressure_tick *out)
{
	int got;

	if (!m)
		return 0;
	pthread_mutex_lock(&m->lock);
	got = m->psi_new;
	if (got)
		*out = m->psi_out;
	m->psi_new = 0;
	pthread_mutex_unlock(&m->lock);
	return got;
}
