/*
 * The limits every part of flightrec agrees on: how many events, processes
 * and command names one profile can be asked for, and how long a command
 * name or a cgroup path may be.
 *
 * One copy, because each value bounds arrays on both sides of a hand-off:
 * the configuration's sessions feed the consumers and dumps of the
 * recorder, the CLI's options feed requests that the daemon decodes into
 * profile requests. A value over a limit is refused where it comes in (the
 * config file, a request, a command line), with a message naming the
 * limit; nothing past these bounds is ever cut silently further on.
 */
#ifndef FR_CORE_LIMITS_H
#define FR_CORE_LIMITS_H

/* Events of one profile request, session, consumer or dump: each event is
 * a value column of the profile. */
#define FR_LIMIT_EVENTS 8

/* Process ids one request (attach, dump, top) may name. */
#define FR_LIMIT_PIDS 256

/* Process ids of a configured session's targets: fewer than a request, as
 * a configuration holds many sessions and each is copied into every dump
 * request it makes. */
#define FR_LIMIT_SESSION_PIDS 64

/* Command names one request or session may name. */
#define FR_LIMIT_COMMS 16

/* A command name with its NUL: the kernel keeps 15 characters
 * (TASK_COMM_LEN), so a longer name could never match. */
#define FR_LIMIT_COMM_LEN 16

/* A cgroup v2 path with its NUL, as a target names it and as the recorder
 * labels a process with it (longer paths of processes are cut there). */
#define FR_LIMIT_CGROUP_LEN 256

/* Application labels one request or session filters on (key=value, all
 * of them), and a label key or value with its NUL (libflightrec's are
 * shorter: lib/flightrec/labels.h). */
#define FR_LIMIT_LABELS 8
#define FR_LIMIT_LABEL_LEN 64

_Static_assert(FR_LIMIT_SESSION_PIDS <= FR_LIMIT_PIDS, "a session's pids make one dump request");

#endif
