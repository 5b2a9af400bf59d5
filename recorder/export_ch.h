/* The ClickHouse exporter (docs/clickhouse.md): a thread of the daemon
 * that ships the ring's samples, batch by batch, to the server of the
 * configuration's "export" block. It reads the ring like attach does
 * (the ring is the spool), keeps its cursor in RING.export, and never
 * holds anything the recording threads wait on.
 */
#ifndef FR_RECORDER_EXPORT_CH_H
#define FR_RECORDER_EXPORT_CH_H

#include <cjson/cJSON.h>

struct daemon;
struct fr_exporter;

/* Starts the exporter when the configuration has an "export" block; logs
 * why not when it cannot (recording goes on without it). */
void daemon_start_export(struct daemon *d);

/* Stops the exporter (a request in flight is cancelled) and frees it;
 * before the ring goes away. Accepts a daemon without one. */
void daemon_stop_export(struct daemon *d);

/* Adds the "export" object to a status reply when the exporter runs.
 * Returns 0 out of memory, else 1. */
int daemon_export_status(struct daemon *d, cJSON *r);

#endif
