/* The ClickHouse exporter (docs/clickhouse.md): a thread of the daemon
 * that ships the ring's samples, batch by batch, to the server of the
 * configuration's "export" block. It reads the ring like attach does
 * (the ring is the spool), keeps its cursor in RING.export, and never
 * holds anything the recording threads wait on.
 */
#ifndef FR_RECORDER_EXPORT_CH_H
#define FR_RECORDER_EXPORT_CH_H

#include <stddef.h>
#include <stdint.h>

struct fr_budget;
struct fr_ipc_status_export;
struct fr_config;
struct fr_exporter;
struct fr_ring;

/* The exporter's context: what it borrows from the recorder, wired
 * before fr_export_start() and kept until fr_export_stop(), and the
 * exporter itself while one runs. */
struct fr_export {
	struct fr_ring *ring;		/* read like attach reads it */
	const char *ring_path;		/* the cursor is RING.export */
	struct fr_budget *query_budget; /* batches reserve their cache from it */
	const char *symcache_dir;	/* NULL: no symbol cache */
	/* Makes sure what was recorded up to now is in the ring (the ingest
	 * thread's flush barrier). Returns 0 or -errno. */
	int (*flush)(void *arg);
	void *flush_arg;
	struct fr_exporter *running; /* NULL: none (atomic: status reads it) */
};

/* Starts the exporter when `cfg` has an "export" block; logs why not
 * when it cannot (recording goes on without it). */
void fr_export_start(struct fr_export *e, const struct fr_config *cfg);

/* A reload's export block (before `n` replaces `old`): starts the
 * exporter, or hands the running one its new settings (taken between
 * batches, keeping the cursor), or idles it when the block is gone.
 * Returns 0, or -errno with why in `why` when the new block cannot be
 * used (its password or CA file): the reload is then refused and the
 * exporter goes on as it was. */
int fr_export_reload(struct fr_export *e, const struct fr_config *old, const struct fr_config *n,
		     char *why, size_t whylen);

/* Stops the exporter (a request in flight is cancelled) and frees it;
 * before the ring goes away. Accepts a context without one. */
void fr_export_stop(struct fr_export *e);

/* Fills the "export" part of a status reply while the exporter runs:
 * returns 1 then, else 0 (`out` untouched). */
int fr_export_status(struct fr_export *e, struct fr_ipc_status_export *out);

/* Nanoseconds of [t0, t1) before the ring's oldest sample `oldest` not
 * yet counted as lost: those past *upto, which moves to their end. So a
 * batch whose start is gone, tried again and again while ClickHouse is
 * away, is counted once. */
int64_t fr_export_lost_span(int64_t *upto, int64_t t0, int64_t t1, int64_t oldest);

#endif
