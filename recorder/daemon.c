/* flightrecd: start-up and shutdown (see recorder/daemon.h for the
 * threads). The parts live in files of their own: the ring's writer
 * (recorder/ingest/writer.c), the sources and consumers (recorder/sampling/sources.c), the
 * ingest thread (recorder/ingest/ingest.c), what clients ask
 * (recorder/requests/requests.c, recorder/requests/status.c).
 *
 * Start-up opens the socket before the ring (a live recorder there owns
 * both), then the recording, then starts the writer, the triggers and
 * the socket thread. Shutdown runs the other way round: the socket first,
 * so that no connection thread is left inside a request when what
 * requests use (the trigger engine, the ring, the sources) goes away.
 */
#include "recorder/daemon.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/parse.h"
#include "core/util/priority.h"
#include "fr_version.h"
#include "ipc/client.h"
#include "recorder/daemon_int.h"
#include "recorder/requests/cursors.h"
#include "recorder/requests/peer.h"
#include "recorder/export/export_ch.h"
#include "recorder/tracking/pystacks.h"
#include "recorder/tracking/symcache.h"

/* ---- start and stop ---------------------------------------------------- */

static void print_banner(struct daemon *d)
{
	const struct fr_daemon_options *o = d->opts;
	struct fr_ring_stats st;
	char size[32], seg[32], t0[64];
	char *client_default = fr_ipc_client_socket_path();

	char events[512];

	fr_sources_describe(&d->sources, 0, events, sizeof(events));
	fr_ring_get_stats(d->ring, &st);
	printf("flightrecd %s: recording %s on %u CPUs (kernel+user stacks)\n", FR_VERSION,
	       events[0] ? events : "no events", d->ncpus);
	for (unsigned i = 0; i < d->sources.n; i++)
		if (!d->sources.table[i].perf)
			printf("  not recording: %s\n", d->sources.table[i].error);
	printf("  config: %s\n", o->config_source);
	printf("  ring:   %s (%s, %s segments", fr_ring_path(d->ring),
	       fr_format_size_human(st.file_size, size, sizeof(size)),
	       fr_format_size_human(st.segment_size, seg, sizeof(seg)));
	if (st.chunks)
		printf("; %llu samples kept since %s", (unsigned long long)st.samples,
		       fr_format_time(st.oldest_ns, t0, sizeof(t0)));
	printf(")\n");
	printf("  socket: %s\n", o->socket_path);
	printf("Try, from another terminal:\n");
	if (client_default && strcmp(client_default, o->socket_path) == 0)
		printf("  flightrec attach --window 60s -o incident.pb.gz\n");
	else
		printf("  flightrec attach --socket %s --window 60s -o incident.pb.gz\n",
		       o->socket_path);
	printf("  go tool pprof -top incident.pb.gz\n");
	fflush(stdout);
	free(client_default);
}

static void reload(void *arg)
{
	daemon_reload(arg);
}

/* Allocates the daemon's state, its locks and what other threads read. */
static struct daemon *daemon_new(const struct fr_daemon_options *opts)
{
	struct daemon *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->opts = opts;
	d->config = opts->config;
	/* Without the sources' descriptor, daemon_signals() says why and
	 * stops. */
	fr_ingest_init(&d->ingest, &d->sources);
	d->ingest.writer = &d->writer;
	d->ingest.reload = reload;
	d->ingest.reload_arg = d;
	fr_mutex_init_pi(&d->sessions_lock);
	daemon_publish_sessions(d, opts->config);
	fr_mutex_init_pi(&d->config_lock);
	d->peers = fr_peers_new(opts->config);
	if (!d->peers) {
		free(d);
		return NULL;
	}
	if (daemon_ctl_init(d) < 0) {
		fr_peers_free(d->peers);
		free(d);
		return NULL;
	}
	if (daemon_memory_init(d, opts->config) < 0) {
		daemon_ctl_fini(d);
		fr_peers_free(d->peers);
		free(d);
		return NULL;
	}
	d->start_real = fr_now_real_ns();
	d->start_mono = fr_now_mono_ns();
	fr_writer_init(&d->writer, opts->config->max_age_ns);
	d->max_rate_hz = opts->config->max_rate_hz;
	d->user_max_rate_hz = opts->config->user_max_rate_hz;
	return d;
}

/* Blocks the signals the daemon reads from sig_fd, in every thread to
 * come, and makes its event descriptors. Returns 0 or -1 after saying
 * why. */
static int daemon_signals(struct daemon *d)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	/* Every signal a trigger may name, also those a later reload may
	 * name: blocked here, before any thread starts, they can only arrive
	 * through sig_fd (never kill a thread that did not block them). */
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		sigaddset(&mask, sig);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->ingest.sig_fd = signalfd(-1, &mask, SFD_CLOEXEC);
	d->ingest.flush_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->ingest.sig_fd < 0 || d->ingest.flush_efd < 0 || d->sources.reconcile_efd < 0) {
		fr_log_err("cannot create event descriptors: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* The named cursors of attach --since-last, RING.cursors. Without them
 * (out of memory) --since-last is refused and the rest works. */
static void daemon_open_cursors(struct daemon *d)
{
	char *path = NULL, err[1024] = "";

	if (asprintf(&path, "%s.cursors", d->opts->ring_path) < 0 ||
	    fr_cursors_open(&d->cursors, path, err, sizeof(err)) < 0)
		fr_log_err("attach --since-last is off: out of memory");
	else if (err[0])
		fr_log_warn("%s", err);
	free(path);
}

/* The socket, then the ring. The socket first: if a live recorder answers
 * there, it owns the ring too, and neither may be touched. Returns 0 or
 * -1 after saying why. */
static int daemon_open_files(struct daemon *d)
{
	const struct fr_daemon_options *opts = d->opts;
	const struct fr_config *cfg = opts->config;
	char err[1024] = "";
	int ret;

	d->dispatch = (struct fr_ipc_dispatch){.h = &daemon_handlers, .arg = d};
	ret = fr_ipc_server_open(&d->server, opts->socket_path, cfg->max_clients, fr_ipc_dispatch,
				 &d->dispatch, err, sizeof(err));
	if (ret == 0 && cfg->has_socket_group)
		ret = fr_ipc_server_share(d->server, (gid_t)cfg->socket_gid, err, sizeof(err));
	if (ret == 0)
		ret = fr_mkdir_parent(opts->ring_path, 0700, err, sizeof(err));
	if (ret < 0) {
		fr_log_err("%s", err);
		return -1;
	}
	ret = fr_ring_open(&d->ring, opts->ring_path, cfg->ring_size, cfg->segment_size,
			   FR_RING_CREATE | FR_RING_JOURNAL, err, sizeof(err));
	if (ret < 0) {
		fr_log_err("%s", err[0] ? err : strerror(-ret));
		return -1;
	}
	if (err[0])
		fr_log_warn("%s", err);
	fr_ring_set_sync_interval(d->ring, cfg->sync_ns);
	daemon_open_cursors(d);
	return 0;
}

/* The names of the Python frames: CPython processes' states and code
 * objects go to the symbol cache, which reads them while they live. */
static void py_status(void *arg, uint32_t pid, int64_t start_ns, uid_t uid, const char *version,
		      const char *problem)
{
	fr_symcache_python_status(arg, pid, start_ns, uid, version, problem);
}

static int py_codes(void *arg, uint32_t pid, int64_t start_ns, uid_t uid,
		    const struct fr_python_exe *x, uint64_t bias, const uint64_t *codes, size_t n,
		    bool sweep)
{
	struct fr_symcache_pyproc p = {.pid = pid,
				       .start_ns = start_ns,
				       .uid = uid,
				       .x = *x,
				       .bias = bias,
				       .sweep = sweep};

	if (!n && sweep)
		return fr_symcache_want_pycode(arg, &p, NULL, 0);

	for (size_t at = 0; at < n; at += FR_SYMCACHE_PYCODES_ASK) {
		size_t k = n - at < FR_SYMCACHE_PYCODES_ASK ? n - at : FR_SYMCACHE_PYCODES_ASK;
		int ret = fr_symcache_want_pycode(arg, &p, codes + at, k);

		if (ret < 0)
			return ret;
	}
	return 0;
}

/* The symbol cache (recorder/tracking/symcache.h), "symbols" beside the ring unless
 * configured elsewhere. Without it the daemon records all the same; its
 * profiles then name only binaries that are still there. */
static void daemon_open_symcache(struct daemon *d)
{
	const struct fr_config_symbols *cfg = &d->opts->config->symbols;
	const char *ring_path = d->opts->ring_path, *slash = strrchr(ring_path, '/');
	struct fr_symcache_options o = {.max_bytes = cfg->cache_size,
					.file_max = cfg->cache_file_max};
	char err[1024];
	int ret;

	if (!cfg->cache_size)
		return;
	if (cfg->cache_dir)
		d->symcache_dir = strdup(cfg->cache_dir);
	else if (asprintf(&d->symcache_dir, "%.*ssymbols", slash ? (int)(slash - ring_path + 1) : 0,
			  ring_path) < 0)
		d->symcache_dir = NULL;
	if (!d->symcache_dir) {
		fr_log_err("the symbol cache is off: out of memory");
		return;
	}
	o.dir = d->symcache_dir;
	ret = fr_symcache_open(&d->symcache, &o, err, sizeof(err));
	if (ret < 0) {
		fr_log_err("the symbol cache %s is off: %s", d->symcache_dir, err);
		free(d->symcache_dir);
		d->symcache_dir = NULL;
		return;
	}
	fr_tracker_set_symcache(d->tracker, d->symcache);
}

/* The tracker, the side band, the sessions' sources and the chunk
 * builder. Returns 0 or -1 after saying why. */
static int daemon_open_recording(struct daemon *d)
{
	char err[1024];
	struct fr_ring_stats st;
	const char *failed;
	size_t max_raw;
	int ret, n;

	d->tracker = fr_tracker_new();
	d->applabels = d->tracker ? fr_applabels_new(d->tracker) : NULL;
	if (!d->tracker || !d->applabels) {
		fr_log_err("out of memory");
		return -1;
	}
	d->sources.labels_prog_fd = fr_applabels_prog_fd(d->applabels);
	d->sources.labels_map_fd = fr_applabels_map_fd(d->applabels);
	fr_applabels_py_map_fds(d->applabels, &d->sources.py_procs_fd, &d->sources.py_threads_fd);
	daemon_open_symcache(d);
	/* After the signals are blocked: its builder thread inherits that. */
	d->unwind_tables = fr_unwind_tables_new(daemon_memory_tables_share(d->opts->config));
	if (!d->unwind_tables)
		fr_log_err("cannot start the unwind table builder (%s); user stacks of "
			   "\"dwarf\" events stop at their first frame",
			   strerror(errno));
	/* Also with the signals blocked; it reads the tables and labels. */
	daemon_memory_start(d);
	n = fr_tracker_scan(d->tracker, "/proc");
	if (n < 0)
		fr_log_warn("cannot scan /proc: %s; processes are learned as they run",
			    strerror(-n));
	ret = fr_sources_open_sideband(&d->sources, err, sizeof(err));
	if (ret < 0) {
		fr_log_err("%s", err);
		return -1;
	}
	d->ncpus = fr_perf_nfds(d->sources.sideband);
	/* The sessions' events: each that cannot be opened is reported and
	 * the others record; with none at all there is nothing to run. */
	fr_sources_set_sessions(&d->sources, d->opts->config, d->opts->hz_fixed, d->opts->hz);
	fr_sources_reconcile(&d->sources);
	failed = fr_sources_all_failed(&d->sources);
	if (failed) {
		fr_log_err("%s", failed);
		return -1;
	}
	/* A chunk holds at most ~1 s of samples on every CPU (with room for
	 * bursts) and must fit comfortably in a segment. */
	max_raw = fr_ring_max_chunk(d->ring) / 2;
	if (max_raw > (1u << 20))
		max_raw = 1u << 20;
	d->ingest.builder = fr_chunk_builder_new(65536, max_raw);
	if (!d->ingest.builder) {
		fr_log_err("out of memory");
		return -1;
	}
	/* The journal's chunks are compressed again when merged. */
	fr_ring_get_stats(d->ring, &st);
	if (st.journal_size)
		fr_chunk_builder_set_level(d->ingest.builder, 1);
	d->ingest.tracker = d->tracker;
	d->ingest.applabels = d->applabels;
	/* Allocation samples: rings found by the labels' look-ups. */
	d->allocs = fr_allocs_new(fr_tracker_ops(d->tracker), &d->ingest.handler);
	if (!d->allocs)
		fr_log_warn("out of memory; allocation samples are not read");
	fr_applabels_set_allocs(d->applabels, d->allocs);
	d->ingest.allocs = d->allocs;
	d->ingest.pystacks = fr_applabels_pystacks(d->applabels);
	if (d->ingest.pystacks && d->symcache)
		fr_pystacks_set_namer(d->ingest.pystacks,
				      &(struct fr_pystacks_namer){py_status, py_codes,
								  d->symcache});
	d->ingest.unwind_tables = d->unwind_tables;
	return 0;
}

/* The trigger engine, writing dumps beside the ring unless configured
 * otherwise. Without it the daemon records all the same. */
static void daemon_start_triggers(struct daemon *d)
{
	const char *ring_path = d->opts->ring_path;
	char err[1024], *slash;
	int ret = -ENOMEM;

	d->dumps_default_dir = malloc(strlen(ring_path) + 8);
	if (d->dumps_default_dir) {
		strcpy(d->dumps_default_dir, ring_path);
		slash = strrchr(d->dumps_default_dir, '/');
		strcpy(slash ? slash + 1 : d->dumps_default_dir, "dumps");
		ret = fr_triggers_start(&d->triggers, d->opts->config, daemon_dump, d, err,
					sizeof(err));
	}
	if (ret < 0)
		fr_log_err("triggers are off: %s", ret == -ENOMEM ? "out of memory" : err);
	d->ingest.triggers = d->triggers;
}

static int export_flush(void *arg)
{
	return fr_ingest_flush(&((struct daemon *)arg)->ingest);
}

/* The exporter reads the ring, reserves its batches' cache from the query
 * memory and flushes through the ingest thread. Without it (no "export"
 * block, or it cannot start) the daemon records all the same. */
static void daemon_start_export(struct daemon *d)
{
	d->export = (struct fr_export){
		.ring = d->ring,
		.ring_path = d->opts->ring_path,
		.query_budget = &d->query_budget,
		.symcache_dir = d->symcache_dir,
		.flush = export_flush,
		.flush_arg = d,
	};
	fr_export_start(&d->export, d->opts->config);
}

/* How long shutdown may take from the signal to exit: storing the open
 * chunk, the journal's group and a sync. Below the unit's
 * TimeoutStopSec=15, after which systemd would kill the recorder without a
 * word of what was lost. */
#define STOP_DEADLINE_S 10

/* The shutdown deadline's state, under stop_lock: the writer is read
 * while it runs (STOP_WRITER); once it is joined the daemon is not read
 * at all, as the main thread frees it (STOP_CLOSING: the ring's last
 * writes and sync, named by the path copied here); STOP_DONE disarms. */
enum { STOP_WRITER, STOP_CLOSING, STOP_DONE };
static pthread_mutex_t stop_lock = PTHREAD_MUTEX_INITIALIZER;
static int stop_state;
static char stop_ring[512];

/* A ring on a frozen or hung disk blocks its writes (and syncs) for as
 * long as the disk says, and a write cannot be interrupted: past the
 * deadline the recorder says what it did not store and leaves with
 * _exit(). The ring keeps what it stored before (a chunk torn by the
 * write in flight fails its crc and is dropped when the ring opens). A
 * thread the kernel holds in the write stays until the disk answers:
 * until then the process is a zombie, the rest of it gone. */
static void *stop_deadline_main(void *arg)
{
	struct daemon *d = arg;
	struct timespec ts;
	char what[256];

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += STOP_DEADLINE_S;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
	pthread_mutex_lock(&stop_lock);
	if (stop_state == STOP_DONE) {
		pthread_mutex_unlock(&stop_lock);
		return NULL;
	}
	if (stop_state == STOP_WRITER)
		fr_writer_describe_pending(&d->writer, what, sizeof(what));
	else
		snprintf(what, sizeof(what),
			 "the journal's last chunks in the segments (they "
			 "stay in the journal) and the final sync");
	fr_log_err("shutdown did not finish within %d s (the disk of %s does not take writes?); "
		   "exiting without storing %s; the ring keeps what was stored before",
		   STOP_DEADLINE_S, stop_ring, what);
	_exit(1);
}

/* Starts the shutdown deadline (above); disarmed by stop_deadline_done(). */
static void stop_deadline_arm(struct daemon *d)
{
	pthread_attr_t attr;
	pthread_t t;
	int ret;

	snprintf(stop_ring, sizeof(stop_ring), "%s", fr_ring_path(d->ring));
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&t, &attr, stop_deadline_main, d);
	pthread_attr_destroy(&attr);
	if (ret)
		fr_log_warn("cannot start the shutdown deadline: %s; shutdown waits for the disk",
			    strerror(ret));
	else
		pthread_setname_np(t, "fr-stop");
}

static void stop_deadline_state(int state)
{
	pthread_mutex_lock(&stop_lock);
	stop_state = state;
	pthread_mutex_unlock(&stop_lock);
}

/* The writer keeps up with the ingest thread: it starts with the raised
 * priority a new thread takes from its creator (core/util/priority.h),
 * and the main thread drops back to the process's at once, so that the
 * threads started after it (triggers, the socket's, export) do not have
 * it. The ingest thread raises itself when its loop starts. */
static int daemon_start_writer(struct daemon *d)
{
	int raised = fr_priority_raise(), ret;

	ret = fr_writer_start(&d->writer, d->ring);
	__atomic_store_n(&d->writer_nice, fr_priority_nice(), __ATOMIC_RELAXED);
	fr_priority_normal();
	if (raised < 0)
		fr_log_warn("cannot raise the writer's and the ingest thread's priority (%s): a "
			    "machine busy with other users' threads may hold them up; give "
			    "flightrecd CAP_SYS_NICE or an RLIMIT_NICE of %d (systemd: LimitNICE=)",
			    strerror(-raised), 20 - (fr_priority_nice() - FR_PRIORITY_RAISE));
	return ret;
}

/* Stops answering before the ring goes away, then lets the writer store
 * everything queued. */
static void daemon_stop(struct daemon *d)
{
	fr_ipc_server_close(d->server);
	d->server = NULL;
	/* Its batches read the ring and flush through the ingest thread. */
	fr_export_stop(&d->export);
	/* After the socket: a manual dump runs on a connection's thread and
	 * locks the trigger engine, so the engine goes only when no
	 * connection is left. A dump in progress finishes while the writer
	 * still runs. */
	fr_triggers_stop(d->triggers);
	d->triggers = NULL;
	fr_writer_stop(&d->writer);
}

static void daemon_free(struct daemon *d)
{
	daemon_memory_stop(d);
	fr_ipc_server_close(d->server);
	fr_ingest_memory_stop(&d->ingest);
	fr_sources_fini(&d->sources);
	fr_ingest_fini(&d->ingest);
	fr_chunk_builder_free(d->ingest.builder);
	fr_applabels_free(d->applabels);
	fr_allocs_free(d->allocs);
	fr_tracker_free(d->tracker);
	fr_symcache_close(d->symcache);
	free(d->symcache_dir);
	fr_unwind_tables_free(d->unwind_tables);
	fr_ring_close(d->ring);
	if (d->ingest.sig_fd >= 0)
		close(d->ingest.sig_fd);
	if (d->ingest.flush_efd >= 0)
		close(d->ingest.flush_efd);
	fr_writer_fini(&d->writer);
	if (d->owned_config) {
		fr_config_fini(d->owned_config);
		free(d->owned_config);
	}
	pthread_mutex_destroy(&d->sessions_lock);
	pthread_mutex_destroy(&d->config_lock);
	daemon_ctl_fini(d);
	fr_peers_free(d->peers);
	daemon_memory_fini(d);
	free(d->dumps_default_dir);
	free(d->sessions);
	fr_cursors_close(d->cursors);
	free(d);
}

int fr_daemon_run(const struct fr_daemon_options *opts)
{
	struct daemon *d = daemon_new(opts);
	int ret, status = 1;

	if (!d) {
		fr_log_err("out of memory");
		return 1;
	}
	fr_priority_init();

	if (daemon_signals(d) < 0 || daemon_open_files(d) < 0 || daemon_open_recording(d) < 0)
		goto out;
	ret = daemon_start_writer(d);
	if (ret < 0) {
		fr_log_err("cannot start the writer thread: %s", strerror(-ret));
		goto out;
	}
	/* Triggers before the socket: a manual dump is then never told that
	 * this recorder runs without them. */
	daemon_start_triggers(d);
	/* The sources every recorder records (OOM kills, RSS, pressure, the
	 * black box's exec, exit and crash) open before the socket: status
	 * never answers while they are not yet listed (the black box loads
	 * its program first). */
	fr_ingest_memory_start(&d->ingest);
	fr_ingest_events_start(&d->ingest);
	ret = fr_ipc_server_start(d->server);
	if (ret < 0) {
		fr_log_err("cannot start the socket thread: %s", strerror(-ret));
		goto out_writer;
	}
	ret = fr_perf_enable(d->sources.sideband, 1);
	if (ret < 0) {
		fr_log_err("cannot enable the side band: %s", strerror(-ret));
		goto out_writer;
	}
	daemon_start_export(d);
	print_banner(d);

	ret = fr_ingest_loop(&d->ingest);
	fr_sources_enable(&d->sources, 0);
	status = ret < 0 ? 1 : 0;
out_writer:
	stop_deadline_arm(d);
	daemon_stop(d);
	stop_deadline_state(STOP_CLOSING);
	if (status == 0)
		fr_log_info("stopped; the ring %s is complete", fr_ring_path(d->ring));
out:
	/* The ring is closed (stored, synced) here too. */
	daemon_free(d);
	stop_deadline_state(STOP_DONE);
	return status;
}
