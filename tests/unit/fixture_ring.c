/* The ring tests' part of the fixture; see fixture_ring.h. */
#include "tests/unit/fixture_ring.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/store/chunk.h"

char dir[256];

void path_of(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
}

/* A chunk covering [t, t + 1 s) of about `bytes` bytes (random stacks do
 * not compress). */
void *make_chunk(int64_t t, size_t bytes, size_t *len)
{
	uint32_t n = (uint32_t)(bytes / 110 + 1);
	struct fr_chunk_builder *b = fr_chunk_builder_new(n, 1u << 20);
	uint64_t ips[10];
	void *buf = NULL;

	for (uint32_t i = 0; i < n; i++) {
		struct fr_sample s = {
			.time_ns = t + (int64_t)i * (SEC - 1) / n,
			.pid = 1 + (uint32_t)(rng() % 4),
			.tid = 7,
			.weight = 1,
			.rate_hz = 99,
			.nr_kernel = 2,
			.nr_frames = 10,
			.ips = ips,
		};

		for (int k = 0; k < 10; k++)
			ips[k] = rng();
		fr_chunk_builder_add(b, &s);
	}
	if (fr_chunk_builder_seal(b, NULL, 0, &buf, len) < 0)
		buf = NULL;
	fr_chunk_builder_free(b);
	return buf;
}

int append_one(struct fr_ring *r, int64_t t, size_t bytes)
{
	size_t len;
	void *c = make_chunk(t, bytes, &len);
	int ret;

	if (!c)
		return -ENOMEM;
	ret = fr_ring_append(r, c, len);
	free(c);
	return ret;
}

int same_refs(const struct fr_ring_ref *a, const struct fr_ring_ref *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].seq != b[i].seq || a[i].offset != b[i].offset || a[i].len != b[i].len ||
		    a[i].nsamples != b[i].nsamples || a[i].first_ns != b[i].first_ns ||
		    a[i].last_ns != b[i].last_ns || a[i].raw_len != b[i].raw_len)
			return 0;
	return 1;
}

int all_refs(struct fr_ring *r, struct fr_ring_ref **refs, size_t *n)
{
	return fr_ring_query(r, INT64_MIN, INT64_MAX, refs, n);
}

/* Every ref in the index reads, verifies and decodes with its seq. */
void check_readable(struct fr_ring *r, const char *what)
{
	struct fr_ring_ref *refs;
	size_t n;

	if (all_refs(r, &refs, &n) < 0) {
		CHECK(0, "%s: query", what);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		void *buf = NULL;
		struct fr_chunk *c = NULL;
		int ret = fr_ring_read(r, &refs[i], &buf);

		CHECK(ret == 0, "%s: read seq %llu: %d", what, (unsigned long long)refs[i].seq,
		      ret);
		if (ret == 0) {
			CHECK(fr_chunk_decode(buf, refs[i].len, &c) == 0, "%s: decode", what);
			if (c)
				CHECK(c->hdr.seq == refs[i].seq &&
					      c->hdr.first_ns == refs[i].first_ns &&
					      c->nsamples == refs[i].nsamples,
				      "%s: chunk does not match its ref", what);
		}
		if (i > 0)
			CHECK(refs[i].seq > refs[i - 1].seq, "%s: refs out of order", what);
		fr_chunk_free(c);
		free(buf);
	}
	free(refs);
}

unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	unsigned char *p = NULL;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)n + 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

void poke(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	CHECK(fd >= 0 && pwrite(fd, buf, len, (off_t)off) == (ssize_t)len, "poke %s", path);
	if (fd >= 0)
		close(fd);
}

void peek(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	CHECK(fd >= 0 && pread(fd, buf, len, (off_t)off) == (ssize_t)len, "peek %s", path);
	if (fd >= 0)
		close(fd);
}

struct fr_ring *open_ok(const char *path, unsigned flags)
{
	struct fr_ring *r = NULL;
	char err[512];
	int ret = fr_ring_open(&r, path, RING_SIZE, SEG, flags, err, sizeof(err));

	CHECK(ret == 0, "open %s: %d %s", path, ret, err);
	/* Durability is not under test here, and fdatasync on a busy shared
	 * disk takes seconds: close() still syncs once. */
	if (r && !(flags & FR_RING_RDONLY))
		fr_ring_set_sync_interval(r, -1);
	return r;
}

/* Appends `n` chunks to a fresh ring and returns it closed, with its refs. */
void build_ring(const char *path, int n, struct fr_ring_ref **refs, size_t *nrefs)
{
	struct fr_ring *r;

	unlink(path);
	r = open_ok(path, FR_RING_CREATE);
	*refs = NULL;
	*nrefs = 0;
	if (!r)
		return;
	for (int i = 0; i < n; i++)
		append_one(r, T0 + i * SEC, 3000 + rng() % 3000);
	all_refs(r, refs, nrefs);
	fr_ring_close(r);
}

int ring_dir_init(void)
{
	const char *tmp = getenv("TMPDIR");

	rng_seed(0x853c49e6748fea9bull);
	snprintf(dir, sizeof(dir), "%s/fr-ring-XXXXXX", tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

int ring_dir_fini(const char *test)
{
	if (failures) {
		fprintf(stderr, "%s: %d failure(s); files kept in %s\n", test, failures, dir);
		return 1;
	}
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return 0;
}
