/* flightrecd: the recording daemon.
 *
 * Threads:
 *   ingest (the caller of fr_daemon_run): polls the perf rings, decodes
 *     records, feeds the process tracker and the chunk builder, seals a
 *     chunk at least once a second. Never blocks on disk or clients.
 *   writer: appends sealed chunks to the ring through io_uring and keeps
 *     it synced; the only thread that writes the ring.
 *   ipc: accepts clients; each request runs on its connection's thread and
 *     builds profiles from the ring without stopping ingestion.
 *
 * An attach first asks the ingest thread to seal what it has (a flush
 * barrier) and waits until the writer has stored it, so a window ending
 * "now" contains every sample up to the request.
 */
#ifndef FR_RECORDER_DAEMON_H
#define FR_RECORDER_DAEMON_H

#include "recorder/options.h"

/* Runs the daemon until SIGINT or SIGTERM, then seals the open chunk,
 * stores it and returns 0; returns a non-zero exit status (after printing
 * a one-line reason to stderr) when it cannot start.
 *
 * SIGHUP reloads `config_path`: the rate, ring.sync, ring.max_age and
 * limits.max_rate_hz take effect at once without pausing the recording;
 * changes to the ring's path or geometry, the socket and max_clients take
 * effect at the next start (and are logged as such). A file that does not
 * load or validate is rejected and logged, and the running configuration
 * stays. */
int fr_daemon_run(const struct fr_daemon_options *opts);

#endif
