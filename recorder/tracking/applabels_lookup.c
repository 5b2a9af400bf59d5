/* One look-up of a process's application labels (recorder/tracking/applabels_int.h):
 * the libflightrec registry in the mapped library, the OpenTelemetry
 * thread-local in the executable or a shared library, the OTel process
 * context's key names, a Go program's runtime (recorder/tracking/golabels.h).
 * Everything it reads is the process owner's: files
 * are opened through the mapping's magic link with O_PATH and only a
 * regular file is read, with bounded reads; memory is read with
 * process_vm_readv; /proc/PID/maps is read once, bounded. It runs on a
 * deadline worker, so a file or memory that never answers holds only it.
 */
#include "recorder/tracking/applabels_int.h"
#include "recorder/tracking/python_proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/symbols/elf_object.h"
#include "core/util/fs.h"
#include "core/util/time.h"
#include "flightrec/alloc_abi.h"
#include "flightrec/labels_abi.h"
#include "core/util/vmread.h"
#include "recorder/tracking/proc.h"

/* The thread-local of the OTel thread context: a pointer. */
#define OTEL_SYMBOL "otel_thread_ctx_v1"
#define OTEL_PAYLOAD_MAX (64u << 10)
/* At most this many lines of /proc/PID/maps, and executable mappings of
 * files, are looked at. */
#define MAPS_LINES_MAX 65536u
#define DSOS_MAX 256u
/* An executable is read with bounded preads of its tables, never whole:
 * any size is fine. */
#define EXE_SIZE_MAX (1ull << 40)

/* What /proc/PID/maps says the look-up needs: the executable mappings of
 * files other than the executable, and the OTel process context's. */
struct maps {
	struct {
		uint64_t start, end, pgoff, ino;
	} dso[DSOS_MAX];
	unsigned ndso;
	uint64_t ctx; /* start of the OTEL_CTX mapping, 0: none */
};

static void read_maps(uint32_t pid, uint64_t exe_ino, struct maps *m)
{
	char path[64], line[512];
	unsigned lines = 0;
	FILE *f;

	m->ndso = 0;
	m->ctx = 0;
	snprintf(path, sizeof(path), "/proc/%u/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (lines++ < MAPS_LINES_MAX && fgets(line, sizeof(line), f)) {
		unsigned long long start, end, pgoff, ino;
		char perms[8];

		if (sscanf(line, "%llx-%llx %7s %llx %*s %llu", &start, &end, perms, &pgoff,
			   &ino) != 5)
			continue;
		if (!m->ctx &&
		    (strstr(line, "[anon:OTEL_CTX]") || strstr(line, "[anon_shmem:OTEL_CTX]") ||
		     strstr(line, "/memfd:OTEL_CTX")))
			m->ctx = start;
		else if (perms[2] == 'x' && ino && ino != exe_ino && strchr(line, '/') &&
			 m->ndso < DSOS_MAX)
			m->dso[m->ndso++] = (typeof(m->dso[0])){start, end, pgoff, ino};
	}
	fclose(f);
}

/* Reads the mapped file of [start, end) whole (bounded); NULL with *err. */
static unsigned char *read_map_file(uint32_t pid, uint64_t start, uint64_t end, size_t *len,
				    int *err)
{
	struct stat st;
	unsigned char *img;
	int fd = fr_proc_open_mapped(pid, start, end, NULL, FR_ELF_OBJECT_FILE_MAX, &st);
	ssize_t n;

	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	img = st.st_size > 0 ? malloc((size_t)st.st_size) : NULL;
	n = img ? fr_pread_full(fd, img, (size_t)st.st_size, 0) : -ENOMEM;
	close(fd);
	if (n < 0) {
		free(img);
		*err = (int)n;
		return NULL;
	}
	*len = (size_t)n;
	return img;
}

/* libflightrec's allocation ring, from its registry at `addr`: mapped
 * (recorder/sampling/allocs.h) for the ingest thread to take. */
static void find_alloc(struct fr_al_lookup *j, uint64_t addr)
{
	struct fr_alloc_registry_abi reg;

	j->ret_alloc = fr_proc_vm_read(j->pid, addr, &reg, sizeof(reg));
	if (j->ret_alloc < 0) {
		j->alloc_why = "registry unreadable";
		return;
	}
	j->ret_alloc = fr_allocs_map(j->pid, &reg, sizeof(reg), &j->alloc, &j->alloc_why);
	j->alloc.lib_start = j->start;
	j->alloc.lib_end = j->end;
}

/* libflightrec's registries: where, from the thread pointer, its threads
 * keep their labels; its allocation ring. */
static int find_lib(struct fr_al_lookup *j)
{
	struct fr_labels_registry_abi reg;
	unsigned char *img;
	size_t len = 0;
	int64_t rel = 0, arel = 0;
	int ret;

	img = read_map_file(j->pid, j->start, j->end, &len, &ret);
	if (!img)
		return ret;
	ret = fr_elf_object_rel(img, len, FR_LABELS_REGISTRY_SYMBOL, sizeof(reg), j->pgoff, &rel);
	if (fr_elf_object_rel(img, len, FR_ALLOC_REGISTRY_SYMBOL,
			      sizeof(struct fr_alloc_registry_abi), j->pgoff, &arel) == 0)
		find_alloc(j, j->start + (uint64_t)arel);
	free(img);
	if (ret < 0)
		return ret;
	ret = fr_proc_vm_read(j->pid, j->start + (uint64_t)rel, &reg, sizeof(reg));
	if (ret < 0)
		return ret;
	if (reg.magic != FR_LABELS_ABI_MAGIC || reg.version != FR_LABELS_ABI_VERSION ||
	    reg.size != sizeof(reg) || reg.max_keys != FR_LABELS_MAX_KEYS ||
	    reg.key_max != FR_LABELS_KEY_MAX || reg.value_max != FR_LABELS_VALUE_MAX ||
	    reg.record_size != sizeof(struct fr_labels_record_abi))
		return -EPROTO;
	/* Not set up yet (its constructor has not run): looked at again. */
	if (reg.tls_offset == 0)
		return -EAGAIN;
	/* A thread pointer offset is within the static TLS area. */
	if (reg.tls_offset < -(1ll << 30) || reg.tls_offset > (1ll << 30) || reg.tls_offset & 7)
		return -EPROTO;
	j->fr_off = reg.tls_offset;
	return 0;
}

/* Shared libraries known not to define the OTel thread-local, by device,
 * inode, size and modification time: most processes map the same few. */
#define NO_OTEL_CACHE 4096u
static struct no_otel {
	uint64_t dev, ino, size, mtime;
} no_otel[NO_OTEL_CACHE];
static pthread_mutex_t no_otel_lock = PTHREAD_MUTEX_INITIALIZER;

static bool no_otel_known(const struct stat *st, bool add)
{
	struct no_otel key = {st->st_dev, st->st_ino, (uint64_t)st->st_size,
			      (uint64_t)fr_ns_from_timespec(&st->st_mtim)};
	unsigned k = (unsigned)((key.ino * 0x9e3779b97f4a7c15ull ^ key.dev) % NO_OTEL_CACHE);
	bool known;

	pthread_mutex_lock(&no_otel_lock);
	known = memcmp(&no_otel[k], &key, sizeof(key)) == 0;
	if (add)
		no_otel[k] = key;
	pthread_mutex_unlock(&no_otel_lock);
	return known;
}

/* The offset from the thread pointer of the OTel thread-local of the
 * shared library mapped at start from pgoff (its loader-filled GOT slot,
 * read from the process). Returns 0, or -ENOENT. */
static int find_dso(struct fr_al_lookup *j, uint64_t start, uint64_t end, uint64_t pgoff)
{
	struct stat st;
	int64_t rel = 0, v;
	uint64_t slot[2];
	int fd = fr_proc_open_mapped(j->pid, start, end, NULL, EXE_SIZE_MAX, &st), desc = 0, ret;

	if (fd < 0)
		return fd;
	if (no_otel_known(&st, false)) {
		close(fd);
		return -ENOENT;
	}
	ret = fr_elf_fd_dso_tls_slot(fd, OTEL_SYMBOL, 8, pgoff, &rel, &desc);
	close(fd);
	if (ret == -ENOENT || ret == -ENOEXEC)
		no_otel_known(&st, true);
	if (ret < 0)
		return ret;
	if (fr_proc_vm_read(j->pid, start + (uint64_t)rel, slot, desc ? 16 : 8) < 0)
		return -EFAULT;
	/* A TLS descriptor's argument is the offset for a static block, a
	 * pointer for a dynamic one (a dlopen'ed library: not read). */
	v = (int64_t)slot[desc ? 1 : 0];
	if (v >= 0 || v < -(1ll << 30))
		return -ENOENT;
	j->otel_off = v;
	return 0;
}

/* The OTel process context's key names: the header of the OTEL_CTX
 * mapping (signature, version 2, payload size and pointer, the time it was
 * published, read again after the payload to know the copy whole). */
static void find_keys(struct fr_al_lookup *j, uint64_t ctx)
{
	struct {
		char signature[8];
		uint32_t version, size;
		uint64_t published, payload;
	} h, again;
	uint8_t *payload = NULL;

	if (!ctx || fr_proc_vm_read(j->pid, ctx, &h, sizeof(h)) < 0 ||
	    memcmp(h.signature, "OTEL_CTX", 8) != 0 || h.version != 2 || !h.published || !h.size ||
	    h.size > OTEL_PAYLOAD_MAX || !(payload = malloc(h.size)))
		return;
	if (fr_proc_vm_read(j->pid, h.payload, payload, h.size) == 0 &&
	    fr_proc_vm_read(j->pid, ctx, &again, sizeof(again)) == 0 &&
	    again.published == h.published)
		j->nkeys = fr_labelsets_key_map(payload, h.size, j->keys, FR_AL_OTEL_KEYS_MAX);
	free(payload);
}

/* The OpenTelemetry thread context: the executable's own thread-local,
 * else one a shared library defines; then its key names. */
static int find_otel(struct fr_al_lookup *j)
{
	struct maps *m = malloc(sizeof(*m));
	struct stat exe;
	char path[64];
	int pfd, fd, ret;

	snprintf(path, sizeof(path), "/proc/%u/exe", j->pid);
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		free(m);
		return -errno;
	}
	fd = fr_reopen_regular(pfd, EXE_SIZE_MAX, &exe);
	close(pfd);
	if (fd < 0 || !m) {
		free(m);
		return fd < 0 ? fd : -ENOMEM;
	}
	ret = fr_elf_fd_exec_tls_offset(fd, OTEL_SYMBOL, 8, &j->otel_off);
	/* A Go program's pprof labels: its runtime's offsets, from the same
	 * file. */
	j->ret_go = fr_go_runtime_from_fd(fd, &j->go);
	close(fd);
	read_maps(j->pid, exe.st_ino, m);
	for (unsigned i = 0; ret < 0 && i < m->ndso; i++)
		ret = find_dso(j, m->dso[i].start, m->dso[i].end, m->dso[i].pgoff);
	if (ret == 0)
		find_keys(j, m->ctx);
	free(m);
	return ret;
}

void fr_al_lookup_run(void *arg)
{
	struct fr_al_lookup *j = arg;

	j->ret_alloc = -ENOENT;
	j->alloc.pidfd = -1;
	j->ret_lib = j->lib ? find_lib(j) : -ENOENT;
	j->ret_go = -ENOENT;
	j->ret_exe = find_otel(j);
	j->ret_py =
		fr_python_proc_find(j->pid, &j->py, &j->py_bias, j->py_path, sizeof(j->py_path));
}

void fr_al_lookup_drop(void *arg)
{
	struct fr_al_lookup *j = arg;

	fr_allocs_found_release(&j->alloc);
	free(j);
}
