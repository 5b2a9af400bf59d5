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

/* Most ranges one fr_proc_vm_readv() reads (the kernel's IOV_MAX). */
#define FR_VM_READV_MAX 1024

/* Reads `n` ranges (at most FR_VM_READV_MAX) of process `pid`'s memory,
 * range i of len[i] bytes at addr[i] into buf[i], in one system call.
 * Returns how many ranges, from the first, were read whole (the kernel
 * stops at the first it cannot read), or -errno. */
int fr_proc_vm_readv(uint32_t pid, size_t n, const uint64_t *addr, const size_t *len, void **buf);

#endif
