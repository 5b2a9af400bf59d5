/* Where the daemon listens: the one place that names the default socket,
 * for the daemon (flightrecd --socket), its configuration ("socket"
 * unset) and the CLI (--socket, $FLIGHTREC_SOCKET). */
#ifndef FR_IPC_PATHS_H
#define FR_IPC_PATHS_H

/* The system daemon's socket (root): systemd's RuntimeDirectory=flightrec. */
#define FR_IPC_SYSTEM_SOCKET "/run/flightrec/flightrec.sock"

/* The daemon's default socket path: FR_IPC_SYSTEM_SOCKET for root,
 * $XDG_RUNTIME_DIR/flightrec.sock (or /tmp/flightrec-UID/...) otherwise.
 * Returns a malloc'd string, or NULL when out of memory. */
char *fr_ipc_default_socket(void);

#endif
