/* Named cursors: `flightrec attach --since-last NAME` gets exactly the
 * samples after the previous call with the same NAME. A cursor is the end
 * (Unix ns) of the last window handed out under its name; the next window
 * starts there, so windows tile time as --follow's do, and every sample
 * is in exactly one of them.
 *
 * Cursors are per user: the key is (uid of the asker, NAME), the uid from
 * the socket's credentials, so no user can read or move another's.
 * Names are 1..FR_CURSOR_NAME_MAX characters of [A-Za-z0-9_.-]
 * (fr_ipc_cursor_name_ok(), ipc/msg.h). Bounded: FR_CURSORS_PER_USER per
 * uid and FR_CURSORS_MAX in all; a new name beyond them is refused.
 *
 * Persisted in one file beside the ring (RING.cursors), rewritten whole on
 * each move: a new file created O_EXCL|O_NOFOLLOW with mode 0600 under a
 * random name in the same directory, written, fsync'ed, renamed over the
 * old one, and the directory fsync'ed; so a crash (kill -9 included)
 * leaves either the old or the new file, never a mix. Read at start with
 * O_NOFOLLOW, as a regular file owned by the daemon's user of at most
 * FR_CURSORS_FILE_MAX bytes; lines that do not parse are skipped (and
 * counted in the log). Format, text:
 *
 *   flightrec-cursors 1
 *   UID NAME T_NS
 *   ...
 *
 * Thread-safe: one mutex over the set. A call holds its cursor from
 * take to release, so a second call with the same name at the same time
 * is refused (-EBUSY) rather than handed the same window.
 */
#ifndef FR_RECORDER_CURSORS_H
#define FR_RECORDER_CURSORS_H

#include <stddef.h>
#include <stdint.h>

#define FR_CURSORS_PER_USER 32
#define FR_CURSORS_MAX 4096
#define FR_CURSORS_FILE_MAX ((size_t)1 << 20)

struct fr_cursors;

/* Opens the cursors of the file `path` (missing: none yet). A file that
 * cannot be read safely is left alone, with the reason in `err` (a
 * warning: the set starts empty and the next move replaces the file).
 * Returns 0, or -ENOMEM. */
int fr_cursors_open(struct fr_cursors **out, const char *path, char *err, size_t errlen);
void fr_cursors_close(struct fr_cursors *c);

/* Takes cursor (uid, name) for one call: *t_ns is its time, or 0 and
 * *exists 0 when it is new. Returns 0, or -EBUSY (another call holds
 * it), -ENOSPC (the user's or the recorder's limit on cursors), -EINVAL
 * (a bad name), with a one-line message in `err`. */
int fr_cursor_take(struct fr_cursors *c, uint32_t uid, const char *name, int64_t *t_ns, int *exists,
		   char *err, size_t errlen);

/* Ends the call that took (uid, name): with `commit`, the cursor moves to
 * `t_ns` and the file is rewritten; without, it stays (a new one is
 * forgotten). Returns 0, or the file's -errno with a message in `err`
 * (the cursor moved all the same, until the recorder restarts). */
int fr_cursor_release(struct fr_cursors *c, uint32_t uid, const char *name, int commit,
		      int64_t t_ns, char *err, size_t errlen);

/* How many cursors there are (for tests and status). */
uint32_t fr_cursors_count(struct fr_cursors *c);

#endif
