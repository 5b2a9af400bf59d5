/* A reload from begin to end: SIGHUP, or `flightrec reload` (which raises
 * SIGHUP at its own process and waits for the outcome,
 * recorder/requests/requests_ctl.c), read by the ingest thread, which calls
 * daemon_reload() between two wake-ups.
 *
 * In this order: the file is read and validated; the export block is
 * tried first, so that one that cannot be used (its password or CA file)
 * refuses the whole reload before anything changed; then the sessions'
 * sources, the ring's sync and age, the rate limits, who may do what and
 * the memory limits take effect; the configuration in force is swapped
 * (under config_lock, for the dumps that read it); the triggers and the
 * sessions' reply follow. The outcome is posted for the requests waiting
 * on it. A rejected reload changes nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util/log.h"
#include "core/util/parse.h"
#include "recorder/daemon_int.h"
#include "recorder/requests/peer.h"

static int differs(const char *a, const char *b)
{
	return (a == NULL) != (b == NULL) || (a && strcmp(a, b) != 0);
}

/* Reads and validates the file, and has the exporter take (or refuse)
 * its export block. Returns 0 with the new configuration in *out, or
 * -errno with the reason in `why` (logged, counted). */
static int reload_load(struct daemon *d, struct fr_config **out, char *why, size_t whylen)
{
	const struct fr_daemon_options *o = d->opts;
	struct fr_config *n;
	char err[1024];
	int ret;

	if (!o->config_path) {
		fr_log_info("SIGHUP: running the embedded default; there is no configuration "
			    "file to reload");
		snprintf(why, whylen,
			 "the recorder runs the embedded default configuration; "
			 "there is no file to reload (start it with --config FILE)");
		return -ENOENT;
	}
	n = calloc(1, sizeof(*n));
	ret = n ? fr_config_load(n, o->config_path, err, sizeof(err)) : -ENOMEM;
	if (ret < 0) {
		snprintf(why, whylen, "%s", n ? err : "out of memory");
		free(n);
	} else if ((ret = fr_export_reload(&d->export, d->config, n, why, whylen)) < 0) {
		fr_config_fini(n);
		free(n);
	}
	if (ret < 0) {
		fr_log_err("reload rejected; the running configuration stays: %s", why);
		__atomic_add_fetch(&d->reloads_rejected, 1, __ATOMIC_RELAXED);
		return ret;
	}
	*out = n;
	return 0;
}

/* Says which changes wait for the next start. */
static void warn_next_start(const struct fr_config *old, const struct fr_config *n)
{
	if (differs(n->ring_path, old->ring_path) || n->ring_size != old->ring_size ||
	    n->segment_size != old->segment_size || differs(n->socket_path, old->socket_path) ||
	    n->max_clients != old->max_clients || n->has_socket_group != old->has_socket_group ||
	    n->socket_gid != old->socket_gid)
		fr_log_warn("reload: ring.path, ring.size, ring.segment, socket, socket.group and "
			    "limits.max_clients take effect at the next start");
	if (differs(n->symbols.cache_dir, old->symbols.cache_dir) ||
	    n->symbols.cache_size != old->symbols.cache_size ||
	    n->symbols.cache_file_max != old->symbols.cache_file_max)
		fr_log_warn("reload: symbols.cache_dir, cache_size and cache_file_max take effect "
			    "at the next start; symbols.debug_dirs at once");
}

/* Puts `n` in force: everything that may change while recording. */
static void reload_apply(struct daemon *d, struct fr_config *n)
{
	const struct fr_daemon_options *o = d->opts;
	char sync[32], age[32], rates[256];

	warn_next_start(d->config, n);
	fr_sources_set_sessions(&d->sources, n, o->hz_fixed, o->hz);
	fr_sources_reconcile(&d->sources);
	fr_ring_set_sync_interval(d->ring, n->sync_ns);
	__atomic_store_n(&d->writer.max_age_ns, n->max_age_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&d->max_rate_hz, n->max_rate_hz, __ATOMIC_RELAXED);
	__atomic_store_n(&d->user_max_rate_hz, n->user_max_rate_hz, __ATOMIC_RELAXED);
	fr_peers_set(d->peers, n);
	daemon_memory_reload(d, n);
	pthread_mutex_lock(&d->config_lock);
	if (d->owned_config) {
		fr_config_fini(d->owned_config);
		free(d->owned_config);
	}
	d->owned_config = n;
	d->config = n;
	pthread_mutex_unlock(&d->config_lock);
	if (d->triggers && fr_triggers_set(d->triggers, n) < 0)
		fr_log_err("reload: the new triggers could not be set; the old ones stay");
	daemon_publish_sessions(d, n);
	__atomic_store_n(&d->reloaded_ns, fr_now_real_ns(), __ATOMIC_RELAXED);
	fr_sources_describe(&d->sources, 1, rates, sizeof(rates));
	fr_log_info("reloaded %s: %s%s, ring.sync %s, ring.max_age %s, limits.max_rate_hz %u",
		    o->config_path, rates[0] ? rates : "no events",
		    o->hz_fixed ? " (cpu rate from --hz)" : "",
		    n->sync_ns < 0 ? "off" : fr_format_duration(n->sync_ns, sync, sizeof(sync)),
		    n->max_age_ns > 0 ? fr_format_duration(n->max_age_ns, age, sizeof(age))
				      : "none",
		    n->max_rate_hz);
}

void daemon_reload(struct daemon *d)
{
	char why[1024] = "";
	uint64_t seq = daemon_reload_begin(d);
	struct fr_config *n = NULL;
	int ret = reload_load(d, &n, why, sizeof(why));

	if (ret == 0)
		reload_apply(d, n);
	daemon_reload_end(d, seq, ret, why);
}
