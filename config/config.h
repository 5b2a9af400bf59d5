/* Configuration: the JSON file of flightrecd, validated into a struct.
 *
 * Schema (every key optional; unknown keys are errors):
 *
 *   {
 *     "ring":    {"path": STRING, "size": SIZE, "segment": SIZE, "sync": DURATION|"off",
 *                 "max_age": DURATION},
 *     "socket":  STRING,
 *     "limits":  {"max_rate_hz": 1..100000, "max_clients": 1..1024},
 *     "sessions": [ {"name": STRING,
 *                    "targets": {"pids": [PID...], "comm": [NAME...], "cgroup": PATH},
 *                    "events": [ {"event": EVENT, "hz": 1..max_rate_hz} ]} ]
 *
 *   EVENT is one of FR_EVENT_NAMES (core/sample.h). "offcpu" takes no "hz"
 *   (it records every context switch); other events default to 99 Hz.
 *   "targets" (default: the whole machine) narrows what the session's
 *   profiles hold: pids, command names, a cgroup v2 path (and below).
 *   }
 *
 * Errors name the JSON path and what is accepted, e.g.
 *   "sessions[1].events[0].hz: must be 1..10000, got 0".
 * A config is applied whole or not at all.
 */
#ifndef FR_CONFIG_CONFIG_H
#define FR_CONFIG_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define FR_CONFIG_MAX_SESSIONS 64
#define FR_CONFIG_MAX_EVENTS 16
#define FR_CONFIG_NAME_MAX 64
#define FR_CONFIG_MAX_TARGETS 64
#define FR_CONFIG_MAX_COMMS 16
#define FR_CONFIG_COMM_MAX 16
#define FR_CONFIG_CGROUP_MAX 256

struct fr_config_event {
	uint32_t event; /* event id (core/sample.h) */
	uint32_t hz;    /* 0 for events without a rate (offcpu) */
};

struct fr_config_session {
	char name[FR_CONFIG_NAME_MAX];
	uint32_t npids;
	uint32_t pids[FR_CONFIG_MAX_TARGETS];
	uint32_t ncomms;
	char comms[FR_CONFIG_MAX_COMMS][FR_CONFIG_COMM_MAX];
	char cgroup[FR_CONFIG_CGROUP_MAX]; /* "" : any */
	uint32_t nevents;
	struct fr_config_event events[FR_CONFIG_MAX_EVENTS];
};

struct fr_config {
	char *ring_path;       /* NULL: the default state directory */
	uint64_t ring_size;
	uint64_t segment_size;
	int64_t sync_ns;       /* < 0: never fdatasync */
	int64_t max_age_ns;    /* > 0: samples older than this are dropped */
	char *socket_path;     /* NULL: the default runtime directory */
	uint32_t max_rate_hz;
	uint32_t max_clients;
	uint32_t nsessions;
	struct fr_config_session sessions[FR_CONFIG_MAX_SESSIONS];
};

/* The embedded default configuration, as JSON text. */
extern const char fr_config_default_json[];

/* Parses and validates `len` bytes of JSON into `cfg` (initialized here;
 * release with fr_config_fini). Returns 0, or -EINVAL with
 * "PATH: reason" in `err` (cfg is then left empty). `source` names the
 * input in messages ("/etc/flightrec.json"). */
int fr_config_parse(struct fr_config *cfg, const char *json, size_t len, const char *source,
		    char *err, size_t errlen);

/* Reads and parses a file. Returns 0, -errno when it cannot be read, or
 * -EINVAL with the message in `err`. */
int fr_config_load(struct fr_config *cfg, const char *path, char *err, size_t errlen);

/* Loads the embedded default. Returns 0 (or -ENOMEM). */
int fr_config_default(struct fr_config *cfg);

/* The highest rate any session asks for `event`; 0 when none does. */
uint32_t fr_config_max_hz(const struct fr_config *cfg, uint32_t event);

/* Frees what `cfg` owns; the struct can be parsed into again. */
void fr_config_fini(struct fr_config *cfg);

/* Serializes the effective configuration as JSON (malloc'd string). */
char *fr_config_to_json(const struct fr_config *cfg);

#endif
