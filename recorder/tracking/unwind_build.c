/* The builder side of the machine's CFI tables (recorder/tracking/unwind_tables.h;
 * the ingest thread's side is unwind_tables.c, what they share
 * unwind_tables_int.h).
 *
 * The builder thread takes one job at a time from the queues of the users
 * whose processes wait for builds, a turn each, reads the file on a
 * deadline worker (core/util/worker.h: a read that misses
 * FR_UNWIND_TABLES_READ_DEADLINE_NS is left to its worker and the table
 * fails with -ETIMEDOUT, so later tables are not held up), compiles its
 * CFI (fr_cfi_build(), private memory only) and posts the answer on the
 * done list for the ingest thread to take. A Go binary's functions
 * without CFI (all of them when stripped or built without DWARF, the Go
 * ones when linked with cgo) get their rows from the stack pointer
 * offsets of its .gopclntab.
 */
#include "recorder/tracking/unwind_tables_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/symbols/elf_image.h"
#include "core/symbols/gopclntab.h"
#include "core/util/fs.h"
#include "core/util/log.h"
#include "core/util/priority.h"
#include "recorder/tracking/proc.h"

void unwind_job_free(struct job *j)
{
	if (!j)
		return;
	fr_cfi_free(j->table);
	free(j->path);
	free(j);
}

void unwind_destroy(struct fr_unwind_tables *u)
{
	for (struct queue *q = u->turns, *qn; q; q = qn) {
		qn = q->next;
		for (struct job *j = q->head, *n; j; j = n) {
			n = j->next;
			unwind_job_free(j);
		}
		free(q);
	}
	fr_shares_fini(&u->shares);
	for (struct job *j = u->done, *n; j; j = n) {
		n = j->next;
		unwind_job_free(j);
	}
	pthread_cond_destroy(&u->cond);
	pthread_mutex_destroy(&u->lock);
	free(u);
}

/* ---- the builder -------------------------------------------------------- */

/* One file read on the deadline worker; freed by read_drop when the
 * worker was abandoned, else by the builder. */
struct read_call {
	uint32_t pid;
	uint64_t start, end;
	char *path;
	bool bid_first; /* a file with a build id is not read further */
	uint8_t bid[FR_ELF_BUILD_ID_MAX];
	int bid_len;
	void *buf;
	size_t size;
	struct stat st;
	int err;
};

static void read_drop(void *arg)
{
	struct read_call *rc = arg;

	free(rc->buf);
	free(rc->path);
	free(rc);
}

/* The whole file into private memory. */
static void read_file(void *arg)
{
	struct read_call *rc = arg;
	ssize_t n;
	int fd = fr_proc_open_mapped(rc->pid, rc->start, rc->end, rc->path, FR_ELF_MAX_SIZE,
				     &rc->st);

	if (fd < 0) {
		rc->err = fd;
		return;
	}
	/* The build id alone (a few preads): the table may be built, or
	 * being built, from another mapping of the same file. */
	if (rc->bid_first) {
		rc->bid_len = fr_elf_build_id_fd(fd, rc->bid, sizeof(rc->bid));
		if (rc->bid_len > 0 && rc->bid_len <= FR_BUILD_ID_MAX) {
			close(fd);
			return;
		}
		rc->bid_len = 0;
	}
	rc->size = (size_t)rc->st.st_size;
	rc->buf = malloc(rc->size ? rc->size : 1);
	if (!rc->buf) {
		rc->err = -ENOMEM;
	} else {
		n = fr_pread_full(fd, rc->buf, rc->size, 0);
		/* A file cut short since its fstat is not the file mapped. */
		rc->err = n < 0 ? (int)n : (size_t)n != rc->size ? -ESTALE : 0;
	}
	close(fd);
}

/* The daemon's own vDSO, copied: the same image every 64-bit process
 * maps, and no file to read. Its size is that of the [vdso] line of
 * /proc/self/maps. */
static int read_vdso(void **buf, size_t *size)
{
	uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
	char line[512];
	FILE *f;
	int ret = -ENOENT;

	if (!base)
		return -ENOENT;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2 && start == base &&
		    strstr(line, "[vdso]")) {
			*size = (size_t)(end - start);
			*buf = malloc(*size);
			ret = *buf ? 0 : -ENOMEM;
			if (*buf)
				memcpy(*buf, (const void *)base, *size);
			break;
		}
	}
	fclose(f);
	return ret;
}

/* Reads the file of `j` on the worker; 0 with the bytes, or -errno. A
 * file known by its inode that has a build id is not read further: 0 with
 * no bytes and its build id in the job. */
static int build_read(struct fr_unwind_tables *u, struct job *j, void **buf, size_t *size)
{
	struct read_call *rc = calloc(1, sizeof(*rc));
	int ret;

	if (!rc || !(rc->path = strdup(j->path))) {
		free(rc);
		return -ENOMEM;
	}
	rc->pid = j->pid;
	rc->start = j->start;
	rc->end = j->end;
	rc->bid_first = j->key.kind == KEY_INODE;
	ret = fr_worker_call(&u->worker, read_file, read_drop, rc,
			     FR_UNWIND_TABLES_READ_DEADLINE_NS);
	if (ret == -ETIMEDOUT)
		return ret; /* the worker frees rc when the read returns */
	if (ret == 0)
		ret = rc->err;
	/* A file without a build id is known by its inode: what is at the
	 * path now may be another. */
	if (ret == 0 && j->key.kind == KEY_INODE &&
	    (rc->st.st_dev != j->key.dev || rc->st.st_ino != j->key.ino))
		ret = -ESTALE;
	if (ret == 0 && rc->bid_len > 0) {
		memcpy(j->bid, rc->bid, (size_t)rc->bid_len);
		j->bid_len = (uint8_t)rc->bid_len;
	} else if (ret == 0) {
		*buf = rc->buf;
		*size = rc->size;
		rc->buf = NULL;
	}
	read_drop(rc);
	return ret;
}

struct sp_vec {
	struct fr_cfi_sp_range *v;
	size_t n, cap;
};

static int sp_push(void *arg, uint64_t start, uint64_t end, int32_t sp)
{
	struct sp_vec *sv = arg;

	if (sv->n == sv->cap) {
		size_t cap = sv->cap ? 2 * sv->cap : 4096;
		struct fr_cfi_sp_range *v;

		if (cap > FR_CFI_MAX_ROWS || !(v = realloc(sv->v, cap * sizeof(*v))))
			return -ENOMEM;
		sv->v = v;
		sv->cap = cap;
	}
	sv->v[sv->n++] = (struct fr_cfi_sp_range){start, end, sp};
	return 0;
}

/* The table of a file: its CFI; for a Go binary, the stack pointer
 * offsets of its .gopclntab where it has none: all of it stripped or
 * built without DWARF, its Go functions when linked with cgo by the
 * system linker (whose CFI covers only the C code). */
static int make_table(const void *buf, size_t size, struct fr_cfi_table **out)
{
	struct fr_gopclntab *g = fr_elf_go_table(buf, size);
	struct sp_vec sv = {0};
	int ret;

	if (!g)
		return fr_cfi_build(buf, size, out);
	ret = fr_gopclntab_sp_runs(g, sp_push, &sv);
	fr_gopclntab_free(g);
	ret = ret == 0 ? fr_cfi_build_merged(buf, size, sv.v, sv.n, out)
		       : fr_cfi_build(buf, size, out);
	free(sv.v);
	return ret;
}

static void build(struct fr_unwind_tables *u, struct job *j)
{
	void *buf = NULL;
	size_t size = 0;
	int ret;

	/* A program that ran a few milliseconds (a build's many short
	 * execs) exited before its turn: its table may never be needed, and
	 * a sample that needs it asks again. */
	if (j->prefetch && kill((pid_t)j->pid, 0) < 0 && errno == ESRCH) {
		j->err = -ESRCH;
		return;
	}
	ret = j->key.kind == KEY_VDSO ? read_vdso(&buf, &size) : build_read(u, j, &buf, &size);
	if (ret == 0 && j->bid_len)
		return; /* linked to its build id's table by the ingest thread */
	if (ret == 0)
		ret = make_table(buf, size, &j->table);
	free(buf);
	/* A file read by its path must be the one the build id names. */
	if (ret == 0 && j->key.kind == KEY_BUILD_ID &&
	    (j->table->build_id_len != j->key.len ||
	     memcmp(j->table->build_id, j->key.bid, j->key.len) != 0)) {
		fr_cfi_free(j->table);
		j->table = NULL;
		ret = -ESTALE;
	}
	j->err = ret;
}

/* ---- the queues (under lock) ------------------------------------------- */

/* The queue of `uid`, with builds waiting; NULL when it has none. */
struct queue *unwind_queue_of(struct fr_unwind_tables *u, uint32_t uid)
{
	for (struct queue *q = u->turns; q; q = q->next)
		if (q->uid == uid)
			return q;
	return NULL;
}

/* Queues `j` in the queue of j->uid: first when a sample waits for it
 * (the program that has just started working comes first among its
 * user's), else last. A new queue is *spare when given (taken), else allocated.
 * Returns 0 or -ENOMEM. */
int unwind_enqueue(struct fr_unwind_tables *u, struct job *j, bool first, struct queue **spare)
{
	struct queue *q = unwind_queue_of(u, j->uid);

	if (!q) {
		q = spare ? *spare : calloc(1, sizeof(*q));
		if (spare)
			*spare = NULL;
		if (!q)
			return -ENOMEM;
		q->uid = j->uid;
		q->tail = &q->head;
		*u->turns_tail = q;
		u->turns_tail = &q->next;
	}
	if (first) {
		j->next = q->head;
		q->head = j;
		if (q->tail == &q->head)
			q->tail = &j->next;
	} else {
		j->next = NULL;
		*q->tail = j;
		q->tail = &j->next;
	}
	q->n++;
	u->user_queued += j->uid != 0;
	return 0;
}

/* Takes `j` out of queue `q` (*pp points at it); a queue left empty
 * leaves the round robin. */
void unwind_unqueue(struct fr_unwind_tables *u, struct queue *q, struct job **pp)
{
	struct job *j = *pp;
	struct queue **qp;

	*pp = j->next;
	if (q->tail == &j->next)
		q->tail = pp;
	q->n--;
	u->user_queued -= j->uid != 0;
	if (q->n)
		return;
	for (qp = &u->turns; *qp != q; qp = &(*qp)->next)
		;
	*qp = q->next;
	if (u->turns_tail == &q->next)
		u->turns_tail = qp;
	free(q);
}

/* The next build: the first of the user whose turn it is, who then goes
 * last. */
static struct job *next_turn(struct fr_unwind_tables *u)
{
	struct queue *q = u->turns;
	struct job *j = q->head;
	bool more = q->n > 1; /* else unqueue frees q */

	unwind_unqueue(u, q, &q->head);
	j->taken = true;
	if (more && q->next) {
		u->turns = q->next;
		q->next = NULL;
		*u->turns_tail = q;
		u->turns_tail = &q->next;
	}
	return j;
}

void *unwind_builder_main(void *arg)
{
	struct fr_unwind_tables *u = arg;
	bool last;

	pthread_mutex_lock(&u->lock);
	for (;;) {
		struct job *j;

		while (!u->turns && !u->stop)
			pthread_cond_wait(&u->cond, &u->lock);
		if (u->stop)
			break;
		j = next_turn(u);
		pthread_mutex_unlock(&u->lock);

		build(u, j);

		pthread_mutex_lock(&u->lock);
		j->next = NULL;
		*u->done_tail = j;
		u->done_tail = &j->next;
		pthread_cond_broadcast(&u->cond);
	}
	fr_worker_free(u->worker);
	u->worker = NULL;
	u->builder_gone = true;
	last = --u->refs == 0;
	pthread_cond_broadcast(&u->cond);
	pthread_mutex_unlock(&u->lock);
	if (last)
		unwind_destroy(u);
	return NULL;
}
