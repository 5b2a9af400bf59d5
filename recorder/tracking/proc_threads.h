/* The per-thread readers of /proc for `flightrec threads`: a thread's
 * state, CPU time and start from /proc/PID/task/TID/stat, what it waits in
 * from wchan and syscall, and names for the states and the common
 * blocking system calls.
 *
 * Like recorder/tracking/proc.h: every reader takes the proc root, reads each file
 * with one read(2), never ptraces or signals anyone, and answers -ENOENT
 * for a thread or process that is gone (they vanish between any two
 * reads). Thread-safe: no state.
 */
#ifndef FR_RECORDER_PROC_THREADS_H
#define FR_RECORDER_PROC_THREADS_H

#include <stddef.h>
#include <stdint.h>

#include "recorder/tracking/proc.h"

/* The longest kernel function name kept from wchan (with NUL). */
#define FR_PROC_WCHAN_LEN 64

/* syscall values that are not a system call number. */
#define FR_PROC_SYSCALL_RUNNING (-1) /* "running": on a CPU, nothing to say */
#define FR_PROC_SYSCALL_NONE (-2)    /* "-1 ...": blocked, not in a syscall */
#define FR_PROC_SYSCALL_UNKNOWN (-3) /* not readable (rights) or malformed */

/* What /proc says about one thread. */
struct fr_proc_thread {
	uint32_t tid;
	char name[FR_LIMIT_COMM_LEN]; /* from stat, cut to 15 bytes */
	char state;		      /* 'R', 'S', 'D', 'T', 't', 'Z', 'X', 'I', ... */
	uint64_t ticks;		      /* utime + stime, clock ticks */
	uint64_t start;		      /* starttime, clock ticks after boot */
	/* The kernel function it sleeps in; "" when running, not known or
	 * hidden (kernels without CONFIG_KALLSYMS say "0"). */
	char wchan[FR_PROC_WCHAN_LEN];
	/* The system call it is in (>= 0) or FR_PROC_SYSCALL_*. */
	int64_t syscall;
};

/* Reads `proc`/PID/task/TID/{stat,wchan,syscall} into *t. stat is
 * needed; wchan and syscall add what they can (syscall needs the rights
 * of a ptrace attach, so root's recorder reads it, a user maybe not).
 * Returns 0, -ENOENT when the thread is gone, -EPROTO for a stat line
 * that is not as the kernel writes it, or another -errno. */
int fr_proc_read_thread(const char *proc, uint32_t pid, uint32_t tid, struct fr_proc_thread *t);

/* Parses the text of a /proc syscall file: "running", "-1 SP PC" (blocked
 * outside a system call) or "NR ARG1 .. ARG6 SP PC". Returns the number
 * or an FR_PROC_SYSCALL_* value. */
int64_t fr_proc_parse_syscall(const char *text);

/* The state letter of stat as a word: running ('R': the kernel does not
 * tell running from runnable), sleeping, uninterruptible, stopped,
 * traced, zombie, dead, idle; "unknown" for anything else. */
const char *fr_proc_state_name(char state);

/* The name of system call `nr` on this architecture for the common
 * blocking ones (read, futex, epoll_wait, nanosleep, ...); NULL for the
 * others. */
const char *fr_proc_syscall_name(int64_t nr);

/* Whether a user (uid, gid) who is not privileged may read process `pid`'s
 * wchan, syscall and stack, by the rule the kernel applies to its /proc
 * files (ptrace_may_access(), PTRACE_MODE_READ_FSCREDS): the process's
 * real, effective, saved and file-system uids (the Uid: line of
 * `proc`/PID/status) are all `uid` and its four gids all `gid`, and it is
 * dumpable, which the owner of its files says (the kernel gives the files
 * of a process that is not dumpable, a set-user-ID one among others, to
 * root). Returns 1, or 0 (it may not, or the process is gone); reads
 * `proc`/PID/status alone. */
int fr_proc_may_read(const char *proc, uint32_t pid, uint32_t uid, uint32_t gid);

/* Calls `fn` for every thread of `pid` (`proc`/PID/task), at most `max`
 * of them. Returns the number of calls, or -errno (-ENOENT: gone). */
int fr_proc_each_tid(const char *proc, uint32_t pid, uint32_t max,
		     void (*fn)(void *arg, uint32_t tid), void *arg);

#endif
