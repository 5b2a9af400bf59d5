/* The daemon's memory ceiling (limits.memory): one figure that its caches
 * and its queries share, and memory given back to the system when idle.
 *
 * Shares of a ceiling of M bytes:
 *   - unwind tables: 3/8 M (192 MiB of the default 512), or
 *     limits.unwind_table_memory when set (at most M), their own budget
 *     shared fairly among users (recorder/tracking/unwind_tables.h);
 *   - symbol images kept between profiles: 1/4 M (core/symbols/symbols.h);
 *   - label sets: bounded by their table (recorder/tracking/labelsets.h: 56 MiB at
 *     most, a few MiB in practice);
 *   - queries (attach, dumps, threads, the exporter's batches) and
 *     timelines: what the caches leave, never less than 1/4 M, and at most
 *     1/2 M (256 MiB by default, what limits.query_memory was), or
 *     limits.query_memory when that is set.
 * The caches cannot wait for memory (the unwind tables and label sets grow
 * on the ingest thread), so each keeps within its share; queries reserve
 * through the budget (core/util/budget.h), which knows what the caches
 * hold (daemon_memory_refresh, before each reservation and every ten
 * seconds) and lets a query wait, or refuses it, rather than go over.
 *
 * Giving back: glibc keeps freed memory in each thread's arena, so a
 * storm of queries left the daemon hundreds of MiB larger until something
 * trimmed. Each query or timeline that ends trims (malloc_trim) when none
 * other runs, else at most once a second; caches unused for a minute are
 * dropped (symbol images no profile used, unwind tables no frame used),
 * and the housekeeping thread, which wakes every ten seconds, trims when
 * no query runs (what the table builder and the symbol cache freed after
 * reading files is in their own arenas).
 */
#include "recorder/daemon_int.h"

#include <errno.h>
#include <malloc.h>
#include <string.h>

#include "core/symbols/symbols.h"
#include "core/util/log.h"
#include "core/util/time.h"
#include "ipc/proto.h"

#define IDLE_NS (60 * FR_NS_PER_S)
#define TRIM_GAP_NS FR_NS_PER_S
#define HOUSEKEEPING_NS (10 * FR_NS_PER_S)
#define MMAP_THRESHOLD (256 * 1024)

uint64_t daemon_memory_tables_share(const struct fr_config *cfg)
{
	return cfg->unwind_table_memory ? cfg->unwind_table_memory : cfg->memory / 8 * 3;
}

static uint64_t symbols_share(uint64_t memory)
{
	return memory / 4;
}

static uint64_t query_floor(uint64_t memory)
{
	return memory / 4;
}

/* The query budget's limit: limits.query_memory, else half the ceiling. */
static uint64_t query_limit(const struct fr_config *cfg)
{
	return cfg->query_memory ? cfg->query_memory : cfg->memory / 2;
}

int daemon_memory_init(struct daemon *d, const struct fr_config *cfg)
{
	int ret;

	/* Large blocks (decoded chunks, cell tables, file copies, CFI
	 * tables) mapped on their own and unmapped when freed: glibc's
	 * threshold otherwise rises to 32 MiB after the first such free, and
	 * then they come from the arenas, where small blocks allocated
	 * meanwhile pin them (malloc_trim cannot return a page in use). */
	mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD);
	d->mem.limit = cfg->memory;
	d->mem.query_set = cfg->query_memory != 0;
	ret = fr_budget_init(&d->query_budget, query_limit(cfg));
	if (ret == 0)
		ret = fr_budget_init(&d->users_budget, query_limit(cfg) / 4);
	if (ret < 0)
		return ret;
	fr_budget_set_ceiling(&d->query_budget, cfg->memory, query_floor(cfg->memory));
	fr_symbols_keep_limit(symbols_share(cfg->memory));
	pthread_mutex_init(&d->mem.lock, NULL);
	return fr_mono_cond_init(&d->mem.cond);
}

/* A reload's limits; ingest thread. */
void daemon_memory_reload(struct daemon *d, const struct fr_config *cfg)
{
	__atomic_store_n(&d->mem.limit, cfg->memory, __ATOMIC_RELAXED);
	__atomic_store_n(&d->mem.query_set, cfg->query_memory != 0, __ATOMIC_RELAXED);
	fr_budget_set_limit(&d->query_budget, query_limit(cfg));
	fr_budget_set_limit(&d->users_budget, query_limit(cfg) / 4);
	fr_budget_set_ceiling(&d->query_budget, cfg->memory, query_floor(cfg->memory));
	fr_symbols_keep_limit(symbols_share(cfg->memory));
	if (d->unwind_tables) {
		fr_unwind_tables_set_budget(d->unwind_tables, daemon_memory_tables_share(cfg));
		/* It may have dropped tables the drain's cache points to. */
		fr_ingest_tables_changed(&d->ingest);
	}
	daemon_memory_refresh(d);
}

/* What the caches hold now: unwind tables, symbol images, label sets
 * (with the live sampled blocks of allocation samples). */
struct held {
	uint64_t tables, symbols, labels;
};

static void caches_held(struct daemon *d, struct held *h)
{
	struct fr_unwind_tables_stats ut = {0};
	struct fr_symbols_stats ss;

	if (d->unwind_tables)
		fr_unwind_tables_stats(d->unwind_tables, &ut);
	fr_symbols_get_stats(&ss);
	h->tables = ut.bytes;
	h->symbols = ss.bytes;
	h->labels = fr_applabels_memory(d->applabels) + fr_allocs_memory(d->allocs);
}

void daemon_memory_refresh(struct daemon *d)
{
	struct held h;

	caches_held(d, &h);
	fr_budget_set_held(&d->query_budget, h.tables + h.symbols + h.labels);
}

/* Gives the arenas' free memory back to the system. */
static void trim(struct daemon *d)
{
	__atomic_store_n(&d->mem.trimmed_mono, fr_now_mono_ns(), __ATOMIC_RELAXED);
	malloc_trim(0);
}

void daemon_memory_begin(struct daemon *d)
{
	__atomic_add_fetch(&d->mem.active, 1, __ATOMIC_RELAXED);
}

void daemon_memory_end(struct daemon *d)
{
	uint32_t left = __atomic_sub_fetch(&d->mem.active, 1, __ATOMIC_RELAXED);
	int64_t last = __atomic_load_n(&d->mem.trimmed_mono, __ATOMIC_RELAXED);

	/* With others running, their memory is in use and a trim would
	 * walk every arena for little: once a second at most, and the last
	 * to end trims all. */
	if (left == 0 || fr_now_mono_ns() - last >= TRIM_GAP_NS)
		trim(d);
}

/* Every ten seconds: symbol images idle for a minute go, the budget
 * learns what the caches hold, and, when no query runs, what every
 * thread freed goes back. */
static void *housekeeping(void *arg)
{
	struct daemon *d = arg;
	struct timespec deadline;

	pthread_mutex_lock(&d->mem.lock);
	while (!d->mem.stop) {
		fr_mono_deadline(&deadline, HOUSEKEEPING_NS);
		if (pthread_cond_timedwait(&d->mem.cond, &d->mem.lock, &deadline) != ETIMEDOUT)
			continue;
		pthread_mutex_unlock(&d->mem.lock);
		fr_symbols_trim_idle(IDLE_NS);
		daemon_memory_refresh(d);
		/* Not only what this file freed: the table builder's and the
		 * symbol cache's copies of files, the tracker's churn, all
		 * leave free memory in their threads' arenas. */
		if (__atomic_load_n(&d->mem.active, __ATOMIC_RELAXED) == 0)
			trim(d);
		pthread_mutex_lock(&d->mem.lock);
	}
	pthread_mutex_unlock(&d->mem.lock);
	return NULL;
}

void daemon_memory_start(struct daemon *d)
{
	int ret = pthread_create(&d->mem.thread, NULL, housekeeping, d);

	if (ret != 0)
		fr_log_warn("cannot start the memory housekeeping thread (%s): idle caches "
			    "are not dropped",
			    strerror(ret));
	d->mem.started = ret == 0;
}

void daemon_memory_stop(struct daemon *d)
{
	if (!d->mem.started)
		return;
	pthread_mutex_lock(&d->mem.lock);
	d->mem.stop = true;
	pthread_cond_broadcast(&d->mem.cond);
	pthread_mutex_unlock(&d->mem.lock);
	pthread_join(d->mem.thread, NULL);
	d->mem.started = false;
}

void daemon_memory_fini(struct daemon *d)
{
	fr_budget_destroy(&d->query_budget);
	fr_budget_destroy(&d->users_budget);
	pthread_cond_destroy(&d->mem.cond);
	pthread_mutex_destroy(&d->mem.lock);
}

void daemon_memory_status(struct daemon *d, struct fr_ipc_status_memory *out)
{
	uint64_t queries = fr_budget_used(&d->query_budget);
	uint64_t timelines = __atomic_load_n(&d->mem.timelines, __ATOMIC_RELAXED);
	struct held h;

	caches_held(d, &h);
	fr_budget_set_held(&d->query_budget, h.tables + h.symbols + h.labels);
	queries = queries > timelines ? queries - timelines : 0;
	out->limit = __atomic_load_n(&d->mem.limit, __ATOMIC_RELAXED);
	out->used = queries + timelines + h.tables + h.symbols + h.labels;
	out->queries = queries;
	out->timelines = timelines;
	out->unwind_tables = h.tables;
	out->symbols = h.symbols;
	out->labels = h.labels;
	out->query_room = fr_budget_room(&d->query_budget);
}
