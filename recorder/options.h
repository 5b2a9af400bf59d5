/* What flightrecd was started with: the command line resolved over the
 * configuration. Read by every wing, set once by main.c. */
#ifndef FR_RECORDER_OPTIONS_H
#define FR_RECORDER_OPTIONS_H

#include <stdint.h>

#include "config/config.h"

struct fr_daemon_options {
	const struct fr_config *config; /* the configuration at start (borrowed) */
	const char *config_path;	/* the file to reload on SIGHUP, or NULL */
	const char *ring_path;		/* resolved */
	const char *socket_path;	/* resolved */
	uint32_t hz;			/* cpu rate */
	int hz_fixed;			/* --hz given: reloads keep it */
	const char *config_source;	/* "embedded default" or the file */
};

#endif
