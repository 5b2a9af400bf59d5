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

int fr_proc_vm_readv(uint32_t pid, size_t n, const uint64_t *addr, const size_t *len, void **buf)
{
	struct iovec local[FR_VM_READV_MAX], remote[FR_VM_READV_MAX];
	size_t done = 0;
	ssize_t got;

	if (!n)
		return 0;
	if (n > FR_VM_READV_MAX)
		n = FR_VM_READV_MAX;
	for (size_t i = 0; i < n; i++) {
		local[i] = (struct iovec){.iov_base = buf[i], .iov_len = len[i]};
		remote[i] =
			(struct iovec){.iov_base = (void *)(uintptr_t)addr[i], .iov_len = len[i]};
	}
	got = process_vm_readv((pid_t)pid, local, n, remote, n, 0);
	if (got < 0)
		return -errno;
	/* The kernel stops at the first range it cannot read. */
	while (done < n && (size_t)got >= len[done])
		got -= (ssize_t)len[done++];
	return (int)done;
}
