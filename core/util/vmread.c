/* Reading another process's memory: one process_vm_readv, whole or not at
 * all. */
#include "core/util/vmread.h"

#include <errno.h>
#include <sys/types.h>
#include <sys/uio.h>

int fr_proc_vm_read(uint32_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = len};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = len};
	ssize_t n = process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? 0 : n < 0 ? -errno : -EFAULT;
}
