/* Separate debug files named by a binary's .gnu_debuglink (a file name and
 * the CRC-32 of the debug file), where distributions and `objcopy
 * --add-gnu-debuglink` put them: beside the binary, in its .debug/
 * subdirectory, and under each debug directory plus the binary's directory.
 */
#ifndef FR_CORE_DEBUGLINK_H
#define FR_CORE_DEBUGLINK_H

#include "core/symbols/elf_image.h"

/* Takes the name and CRC-32 of the contents `len` bytes at `sec` of a
 * .gnu_debuglink section (a NUL-terminated file name, padding to 4 bytes,
 * the CRC in the file's byte order: big-endian when `msb`) into
 * img->debuglink and img->debuglink_crc. A name that is empty, not a plain
 * file name ('/', "." or ".."), too long or without its NUL or CRC leaves
 * img->debuglink empty. */
void fr_debuglink_parse(struct fr_elf_image *img, const void *sec, size_t len, bool msb);

/* Fills `dbg` (as for fr_elf_debug_load(): build id, arm, debuglink and
 * debuglink_crc filled, debug_missing set) with the .symtab of the first
 * debug file named by dbg->debuglink, for the binary at `file`, found
 * under `root` (a process's root, or NULL for "/"): beside it, in its
 * .debug/, then under each of the `ndirs` debug directories `dirs`
 * ("/usr/lib/debug" + the binary's directory). Each is opened with
 * fr_open_untrusted() and used only when its CRC-32 is dbg->debuglink_crc
 * and it has no build id other than the binary's. Clears
 * dbg->debug_missing when one is used. Returns 0 (also when there is
 * none) or -ENOMEM. A candidate of another build id than the binary's is
 * passed over unread; one that may be its debug file is read whole once
 * (its CRC, then its symbols and DWARF from that copy): run on a worker. */
int fr_debuglink_load(struct fr_elf_image *dbg, const char *root, const char *file,
		      const char *const *dirs, size_t ndirs);

#endif
