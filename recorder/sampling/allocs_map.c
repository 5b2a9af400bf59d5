/* Mapping a process's allocation ring (recorder/sampling/allocs.h,
 * fr_allocs_map): everything about it is the process's to choose, so
 * every property the reader relies on is checked here, on the mapping's
 * own descriptor, before the ingest thread ever reads it. */
#include "recorder/sampling/allocs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "flightrec/alloc_abi.h"

#ifndef F_GET_SEALS
#define F_GET_SEALS 1034
#endif
#ifndef F_SEAL_SHRINK
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW 0x0004
#endif

static int pidfd_open_(uint32_t pid)
{
	return (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
}

static int pidfd_getfd_(int pidfd, int fd)
{
	return (int)syscall(SYS_pidfd_getfd, pidfd, fd, 0);
}

/* The registry: the ring it names, or why not. */
static int check_registry(const void *bytes, size_t len, struct fr_alloc_registry_abi *reg,
			  const char **why)
{
	if (len < sizeof(*reg)) {
		*why = "registry too short";
		return -EPROTO;
	}
	memcpy(reg, bytes, sizeof(*reg));
	if (reg->magic != FR_ALLOC_ABI_MAGIC || reg->version != FR_ALLOC_ABI_VERSION ||
	    reg->size != sizeof(*reg)) {
		*why = "not a registry this recorder reads";
		return -EPROTO;
	}
	if (reg->state == FR_ALLOC_STATE_OFF || reg->state == FR_ALLOC_STATE_FAILED)
		return -ENOENT;
	/* Starting, or on with the ring not published yet (ring_id last). */
	if (reg->state != FR_ALLOC_STATE_ON || reg->ring_fd < 0 || !reg->ring_id)
		return reg->state <= FR_ALLOC_STATE_ON ? -EAGAIN : -EPROTO;
	if (reg->ring_size < FR_ALLOC_HEADER_SIZE + FR_ALLOC_RING_MIN ||
	    reg->ring_size > FR_ALLOC_HEADER_SIZE + FR_ALLOC_RING_MAX) {
		*why = "ring size out of bounds";
		return -EPROTO;
	}
	return 0;
}

/* The memfd `fd`, checked and mapped into *out. */
static int map_fd(int fd, const struct fr_alloc_registry_abi *reg, struct fr_alloc_found *out,
		  const char **why)
{
	struct fr_alloc_header_abi h;
	struct stat st;
	uint64_t data;
	int seals;
	void *m;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		*why = "ring descriptor is not a regular file";
		return -EPROTO;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		*why = "ring not sealed against shrinking and growing";
		return -EPROTO;
	}
	if ((uint64_t)st.st_size != reg->ring_size) {
		*why = "ring size is not the registry's";
		return -EPROTO;
	}
	data = reg->ring_size - FR_ALLOC_HEADER_SIZE;
	if (data & (data - 1)) {
		*why = "ring data size not a power of two";
		return -EPROTO;
	}
	m = mmap(NULL, reg->ring_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		*why = "ring cannot be mapped";
		return -errno;
	}
	memcpy(&h, m, sizeof(h));
	if (h.magic != FR_ALLOC_RING_MAGIC || h.version != FR_ALLOC_ABI_VERSION ||
	    h.header_size != FR_ALLOC_HEADER_SIZE || h.data_size != data ||
	    h.ring_id != reg->ring_id) {
		munmap(m, reg->ring_size);
		*why = "ring header does not match its registry";
		return -EPROTO;
	}
	out->map = m;
	out->map_len = reg->ring_size;
	out->ring_id = reg->ring_id;
	return 0;
}

int fr_allocs_map(uint32_t pid, const void *reg_bytes, size_t reg_len, struct fr_alloc_found *out,
		  const char **why)
{
	struct fr_alloc_registry_abi reg;
	struct pollfd pfd;
	int pidfd, fd, ret;

	memset(out, 0, sizeof(*out));
	out->pidfd = -1;
	*why = NULL;
	ret = check_registry(reg_bytes, reg_len, &reg, why);
	if (ret < 0)
		return ret;
	pidfd = pidfd_open_(pid);
	if (pidfd < 0)
		return -ESRCH;
	fd = pidfd_getfd_(pidfd, reg.ring_fd);
	if (fd < 0) {
		ret = -errno;
		close(pidfd);
		*why = "ring descriptor cannot be taken";
		return ret == -ESRCH ? -ESRCH : -EPROTO;
	}
	ret = map_fd(fd, &reg, out, why);
	close(fd);
	/* The descriptor came from the pidfd's process (were the pid reused
	 * since the registry was read, from the new one, which then made the
	 * ring it names): the ring is that process's. It must still be alive
	 * now, so that its pid names it and no process after it. */
	pfd = (struct pollfd){.fd = pidfd, .events = POLLIN};
	if (ret == 0 && poll(&pfd, 1, 0) != 0) {
		munmap(out->map, out->map_len);
		out->map = NULL;
		ret = -ESRCH;
	}
	if (ret < 0) {
		close(pidfd);
		return ret;
	}
	out->pid = pid;
	out->pidfd = pidfd;
	return 0;
}

void fr_allocs_found_release(struct fr_alloc_found *f)
{
	/* The pidfd is there exactly when the map is. */
	if (!f->map)
		return;
	munmap(f->map, f->map_len);
	close(f->pidfd);
	f->map = NULL;
	f->pidfd = -1;
}
