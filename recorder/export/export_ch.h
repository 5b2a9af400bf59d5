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

struct daemon;
struct fr_exporter;

/* Starts the exporter when the configuration has an "export" block; logs
 * why not when it cannot (recording goes on without it). */
void daemon_start_export(struct daemon *d);

/* A reload's export block (ingest thread, before `n` replaces `old`):
 * starts the exporter, or hands the running one its new settings (taken
 * between batches, keeping the cursor), or idles it when the block is
 * gone. Returns 0, or -errno with why in `why` when the new block cannot
 * be used (its password or CA file): the reload is then refused and the
 * exporter goes on as it was. */
struct fr_config;
int daemon_reload_export(struct daemon *d, const struct fr_config *old, const struct fr_config *n,
			 char *why, size_t whylen);

/* Stops the exporter (a request in flight is cancelled) and frees it;
 * before the ring goes away. Accepts a daemon without one. */
void daemon_stop_export(struct daemon *d);

/* Fills the "export" part of a status reply while the exporter runs:
 * returns 1 then, else 0 (`out` untouched). */
struct fr_ipc_status_export;
int daemon_export_status(struct daemon *d, struct fr_ipc_status_export *out);

/* Nanoseconds of [t0, t1) before the ring's oldest sample `oldest` not
 * yet counted as lost: those past *upto, which moves to their end. So a
 * batch whose start is gone, tried again and again while ClickHouse is
 * away, is counted once. */
int64_t fr_export_lost_span(int64_t *upto, int64_t t0, int64_t t1, int64_t oldest);

#endif
