/* The kernel's symbol table, read from kallsyms (modules included) and
 * shared read-only by every user in the process: reading and parsing
 * /proc/kallsyms costs ~100 ms, too much for every profile, while the
 * table changes only when modules or BPF programs come and go, so a
 * table is reused for 30 s.
 */
#ifndef FR_CORE_KALLSYMS_H
#define FR_CORE_KALLSYMS_H

#include <stdint.h>

struct fr_kallsyms;

/* Returns a reference to the parsed table of `path` (an unreadable file
 * gives a table that names nothing), from the shared cache when it is
 * fresh; NULL on allocation failure. Drop it with fr_kallsyms_put(). */
struct fr_kallsyms *fr_kallsyms_get(const char *path);

/* Drops a reference; accepts NULL. */
void fr_kallsyms_put(struct fr_kallsyms *k);

/* The function holding kernel address `addr`: 0 and its name (valid while
 * the reference is held), or -ENOENT. Accepts NULL. */
int fr_kallsyms_lookup(const struct fr_kallsyms *k, uint64_t addr, const char **name);

#endif
