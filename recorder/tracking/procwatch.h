/* Process lifecycle events from the kernel's netlink proc connector
 * (NETLINK_CONNECTOR, group CN_IDX_PROC): exits with their wait status,
 * and the forks, execs and renames that let a reader know what a process
 * was called (and where it lived) by the time it is gone.
 *
 * Listening needs CAP_NET_ADMIN on older kernels (recent ones let any user
 * listen), and the kernel only answers listeners in its initial pid and
 * user namespaces (not from inside most containers).
 * Events are multicast to a socket buffer: when the reader falls behind,
 * the kernel drops them and the next read reports an overrun (ENOBUFS),
 * which is counted and logged, never fatal.
 *
 * The only file that speaks the proc connector.
 */
#ifndef FR_RECORDER_PROCWATCH_H
#define FR_RECORDER_PROCWATCH_H

#include <stddef.h>
#include <stdint.h>

struct fr_procwatch;

/* Called for each PROC_EVENT_EXIT of a thread-group leader (pid == tgid:
 * the process, not one of its other threads). `exit_code` is the raw wait
 * status as the kernel gives it (WIFEXITED/WEXITSTATUS/WIFSIGNALED/
 * WTERMSIG/WCOREDUMP apply); `exit_signal` is the signal the parent is
 * sent (SIGCHLD for ordinary children), not the signal that killed it. */
typedef void (*fr_procwatch_exit_fn)(void *arg, uint32_t pid, uint32_t tgid, uint32_t exit_code,
				     uint32_t exit_signal);

/* Every event kind a reader may follow; NULL members are skipped. */
struct fr_procwatch_handler {
	fr_procwatch_exit_fn exit;
	/* A new process (not a thread): `pid` was forked by `parent_tgid`. */
	void (*fork)(void *arg, uint32_t pid, uint32_t parent_tgid);
	/* Process `pid` executed a new program (its name is in
	 * /proc/PID/comm, if it still lives). */
	void (*exec)(void *arg, uint32_t pid);
	/* Process `pid` renamed itself (prctl PR_SET_NAME or a write to
	 * /proc/PID/comm by its main thread) to `comm`. */
	void (*comm)(void *arg, uint32_t pid, const char *comm);
	void *arg;
};

/* Opens a non-blocking, close-on-exec netlink socket, subscribes to the
 * proc connector and waits (at most about a second) for the kernel to
 * acknowledge. Returns 0, or -errno with the reason in `err`, e.g.
 *   "proc connector: listening to process exits needs root
 *    (CAP_NET_ADMIN) (bind: EPERM)"                         (-EPERM),
 *   "proc connector: the kernel did not acknowledge the subscription;
 *    it answers only in the initial pid and user namespaces, and needs
 *    CONFIG_PROC_EVENTS"                                    (-ETIMEDOUT),
 *   "proc connector: not available in this kernel
 *    (socket: EPROTONOSUPPORT)"                             (other -errno). */
int fr_procwatch_open(struct fr_procwatch **out, char *err, size_t errlen);

/* The descriptor to poll for POLLIN. */
int fr_procwatch_fd(const struct fr_procwatch *w);

/* Reads the events queued now, without blocking, calling the members of
 * `h` for the kinds it asks for. Returns the number of events delivered
 * (0: nothing queued), or -errno when the socket failed. An overrun
 * (events the kernel dropped) is counted, logged (rate-limited) and reading
 * goes on. At most a bounded number of messages is read per call, so a
 * storm of forks does not starve the caller; the descriptor stays readable
 * while more are queued. */
int fr_procwatch_read_events(struct fr_procwatch *w, const struct fr_procwatch_handler *h);

/* Overruns so far (reads that found events dropped by the kernel). */
uint64_t fr_procwatch_overruns(const struct fr_procwatch *w);

/* Unsubscribes and closes; accepts NULL. */
void fr_procwatch_close(struct fr_procwatch *w);

#endif
