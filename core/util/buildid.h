/* The id a file is known by when it has no GNU build id but is a Go
 * executable: Go's linker writes its own note (owner "Go", type 4), whose
 * text is "actionID/contentID/..." of base64 hashes, the last part the hash
 * of the linked file's content. That part is the file's id in the symbol
 * cache, the unwind tables and the ring, as a GNU build id would be
 * (`go build` writes a GNU one only when asked with -ldflags=-B). Shared by
 * the ELF readers of core/symbols and core/unwind, which must agree. */
#ifndef FR_CORE_UTIL_BUILDID_H
#define FR_CORE_UTIL_BUILDID_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define FR_GO_BUILD_ID_NOTE 4

/* Whether a note's owner (`name`, `namesz` bytes with its NUL padding) is
 * Go's. */
static inline int fr_go_note_owner(const char *name, size_t namesz)
{
	return (namesz == 3 || namesz == 4) && memcmp(name, "Go", 3) == 0;
}

/* The id of the Go build id note's text `desc` (`len` bytes) into `out`
 * (capacity `cap`): its last '/'-separated part. Returns its length,
 * -ENOENT for an empty one, -ENOSPC when it does not fit. */
static inline int fr_go_build_id(const uint8_t *desc, size_t len, uint8_t *out, size_t cap)
{
	size_t start = 0;

	while (len && desc[len - 1] == '\0')
		len--;
	for (size_t i = 0; i < len; i++)
		if (desc[i] == '/')
			start = i + 1;
	len -= start;
	if (!len)
		return -ENOENT;
	if (len > cap)
		return -ENOSPC;
	memcpy(out, desc + start, len);
	return (int)len;
}

#endif
