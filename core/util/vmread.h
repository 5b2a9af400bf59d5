/* Reading another process's memory. */
#ifndef FR_UTIL_VMREAD_H
#define FR_UTIL_VMREAD_H

#include <stddef.h>
#include <stdint.h>

/* Reads `len` bytes at `addr` of process `pid`'s memory
 * (process_vm_readv: it may wait on memory its owner holds back, a FUSE
 * mapping or userfaultfd, so callers that must not wait call it on a
 * thread of its own). Returns 0, -EFAULT for a short read, or -errno. */
int fr_proc_vm_read(uint32_t pid, uint64_t addr, void *buf, size_t len);

#endif
