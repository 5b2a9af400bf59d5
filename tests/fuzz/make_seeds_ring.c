/* Seeds of the ring target: real rings (wrapped, with a journal) copied
 * as they are and damaged, small hand-placed layouts of segments and
 * journal, and files that are not rings this build can read. */
#include "tests/fuzz/make_seeds.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/store/chunk.h"
#include "core/store/crc32c.h"
#include "core/store/ring.h"

#include "tests/fuzz/fuzz.h"

static unsigned char *slurp(const char *path, size_t *len)
{
	struct stat st;
	unsigned char *p;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0)
		die(path, errno);
	p = malloc((size_t)st.st_size);
	if (!p || pread(fd, p, (size_t)st.st_size, 0) != st.st_size)
		die(path, EIO);
	close(fd);
	*len = (size_t)st.st_size;
	return p;
}

/* Creation time and ring id are the only varying bytes of a ring. */
static void fix_sb(unsigned char *sb)
{
	fr_put_le64(sb + FUZZ_SB_OFF_CREATED_NS, (uint64_t)T0);
	memset(sb + FUZZ_SB_OFF_RING_ID, 0x5a, 16);
	fr_put_le32(sb + FUZZ_SB_OFF_CRC, fr_crc32c(0, sb, FUZZ_SB_OFF_CRC));
}

/* Offset of the first chunk header in `img` (a ring file) whose seq is
 * `seq`, or 0. */
static size_t find_seq(const unsigned char *img, size_t len, uint64_t seq)
{
	for (size_t off = FR_RING_SB_LEN; off + FR_CHUNK_HEADER_LEN <= len; off += 8)
		if (fr_get_le32(img + off) == FR_CHUNK_MAGIC &&
		    fr_get_le64(img + off + FUZZ_CHUNK_OFF_SEQ) == seq)
			return off;
	return 0;
}

/* A region (segment or journal) of FUZZ_RING_SEGMENT bytes holding small
 * chunks numbered `seqs` back to back (a 0 ends the list); the chunk
 * numbered `merged` stands for the `covers` numbers before it. *used is
 * how far the chunks reach. */
static unsigned char *hand_region(const int seqs[4], int merged, uint32_t covers, size_t *used)
{
	unsigned char *reg = calloc(1, FUZZ_RING_SEGMENT);

	if (!reg)
		die("region", ENOMEM);
	*used = 0;
	for (int k = 0; k < 4 && seqs[k]; k++) {
		size_t clen;
		unsigned char *c = chunk_typical(T0 + seqs[k] * SEC, 8, false, &clen);

		fr_chunk_set_seq(c, (uint64_t)seqs[k], seqs[k] == merged ? covers : 0);
		memcpy(reg + *used, c, clen);
		*used += (clen + 7) & ~(size_t)7;
		free(c);
	}
	return reg;
}

/* A FUZZ_RING_SPLIT seed of three regions: each one's data as one part. */
static void write_split_seed(const char *name, unsigned mode, unsigned char *const reg[3],
			     const size_t used[3])
{
	size_t part_len = 0;
	unsigned char *part;

	for (int i = 0; i < 3; i++)
		if (used[i] > part_len)
			part_len = used[i];
	part = malloc(3 * part_len);
	if (!part)
		die("seed", ENOMEM);
	for (int i = 0; i < 3; i++)
		memcpy(part + i * part_len, reg[i], part_len);
	write_seed("ring", name, mode, part, 3 * part_len);
	free(part);
}

/* A new ring of `nsegments` FUZZ_RING_SEGMENT segments at dir/ring, which
 * mkdtemp() creates from the template in `dir`; syncing off, so nothing
 * but the appends decides its bytes. */
static struct fr_ring *open_tmp_ring(char *dir, char *path, size_t path_len, int nsegments,
				     int flags)
{
	char err[512];
	struct fr_ring *r;
	int ret;

	if (!mkdtemp(dir))
		die("mkdtemp", errno);
	snprintf(path, path_len, "%s/ring", dir);
	ret = fr_ring_open(&r, path, 2 * FR_RING_SB_LEN + (uint64_t)nsegments * FUZZ_RING_SEGMENT,
			   FUZZ_RING_SEGMENT, flags, err, sizeof(err));
	if (ret < 0) {
		fprintf(stderr, "make_seeds: %s\n", err);
		exit(1);
	}
	fr_ring_set_sync_interval(r, -1);
	return r;
}

/* Appends a typical chunk of 40..79 random samples at T0 + i seconds. */
static void append_typical(struct fr_ring *r, int64_t i, size_t *clen)
{
	void *c = chunk_typical(T0 + i * SEC, 40 + (uint32_t)(rng() % 40), true, clen);
	int ret = fr_ring_append(r, c, *clen);

	if (ret < 0)
		die("fr_ring_append", -ret);
	free(c);
}

/* The file's bytes, with the varying ones of both superblocks fixed; the
 * file and its directory are removed. */
static unsigned char *take_image(const char *dir, const char *path, size_t *len)
{
	unsigned char *img = slurp(path, len);

	unlink(path);
	rmdir(dir);
	fix_sb(img);
	fix_sb(img + *len - FR_RING_SB_LEN); /* its copy */
	return img;
}

/* A real ring of three 64 KiB segments, written until it has wrapped
 * into its first segment again. Returns its image; *nchunks is how many
 * chunks were appended. */
static unsigned char *wrapped_ring(size_t *len, uint64_t *nchunks)
{
	char dir[] = "/tmp/fr-seeds-XXXXXX", path[256];
	struct fr_ring *r = open_tmp_ring(dir, path, sizeof(path), 3, FR_RING_CREATE);

	*nchunks = 0;
	/* Past the end of the third segment, well into the first again. */
	for (size_t written = 0; written < 3 * FUZZ_RING_SEGMENT + FUZZ_RING_SEGMENT / 2;) {
		size_t clen;

		append_typical(r, (int64_t)*nchunks, &clen);
		written += clen;
		(*nchunks)++;
	}
	fr_ring_close(r);
	return take_image(dir, path, len);
}

/* The superblock damaged, read through its copy: a flipped bit, a
 * zeroed first page; then the copy damaged too, where only the
 * chunks say the file was a ring. */
static void write_sb_damaged_seeds(const unsigned char *img, size_t len)
{
	unsigned char *d = malloc(len);

	if (!d)
		die("seed", ENOMEM);
	memcpy(d, img, len);
	d[FUZZ_SB_OFF_SEGMENT_SIZE + 2] ^= 0x08;
	write_seed("ring", "sb-flipped", FUZZ_RING_FILE, d, len);
	memset(d, 0, FR_RING_SB_LEN);
	write_seed("ring", "sb-zeroed", FUZZ_RING_FILE, d, len);
	/* Both zeroed: no magic left anywhere, only chunk headers. */
	memset(d + len - FR_RING_SB_LEN, 0, FR_RING_SB_LEN);
	write_seed("ring", "sb-both", FUZZ_RING_FILE, d, len);
	free(d);
}

/* The same ring damaged as a crash and a bad disk leave it: the
 * newest chunk torn, a header in the middle of another segment
 * overwritten. Recovery skips both. */
static void write_chunks_damaged_seed(unsigned char *img, size_t len, uint64_t nchunks)
{
	uint64_t seq;
	size_t off = 0;

	for (seq = nchunks; seq > 0; seq--)
		if ((off = find_seq(img, len, seq)))
			break;
	if (!off)
		die("finding the newest chunk", ENOENT);
	img[off + FR_CHUNK_HEADER_LEN + 20] ^= 0x55;
	if ((off = find_seq(img, len, seq - 8)))
		memset(img + off + 8, 0xee, 16);
	write_seed("ring", "damaged", FUZZ_RING_FILE, img, len);
}

/* Small hand-placed layouts for the modes with a built-in
 * superblock: three segments holding chunks 7-9 (plus a leftover
 * 2 behind them), 1-3 and 4-6, each segment's data as one part. */
static void write_hand_segment_seeds(void)
{
	static const int layout[3][4] = {{7, 8, 9, 2}, {1, 2, 3, 0}, {4, 5, 6, 0}};
	unsigned char *reg[3];
	size_t used[3];

	for (int i = 0; i < 3; i++)
		reg[i] = hand_region(layout[i], 0, 0, &used[i]);
	/* bits 2-3 = 1: three segments */
	write_split_seed("split3", FUZZ_RING_SPLIT | 1 << 2, reg, used);
	/* Two segments, the first one's data only, crcs fixed up. */
	write_seed("ring", "linear2-fixcrc", FUZZ_RING_LINEAR | FUZZ_RING_FIX_CRC, reg[1], used[1]);
	for (int i = 0; i < 3; i++)
		free(reg[i]);
}

/* A real ring with a journal, copied while its writer had a group
 * in the journal and had merged others into its segments (as a
 * kill -9 leaves it). */
static void write_journal_seed(void)
{
	char dir[] = "/tmp/fr-seeds-XXXXXX", path[256];
	struct fr_ring *r =
		open_tmp_ring(dir, path, sizeof(path), 6, FR_RING_CREATE | FR_RING_JOURNAL);
	unsigned char *img;
	size_t len;

	fr_ring_set_group(r, INT64_MAX);
	for (int i = 0; i < 40; i++) {
		size_t clen;

		append_typical(r, i, &clen);
	}
	/* Copied while the writer still has it open. */
	img = take_image(dir, path, &len);
	fr_ring_close(r);
	write_seed("ring", "journal", FUZZ_RING_FILE, img, len);
	free(img);
}

/* By hand, for the built-in superblock with a journal: the journal
 * holds 8 (merged since), 10 and 11; segment 0 chunks 1-3, segment 1
 * chunk 7 standing for 4-7, then 9. */
static void write_hand_journal_seed(void)
{
	static const int layout[3][4] = {{8, 10, 11, 0}, {1, 2, 3, 0}, {7, 9, 0, 0}};
	unsigned char *reg[3];
	size_t used[3];

	for (int i = 0; i < 3; i++)
		reg[i] = hand_region(layout[i], 7, 3, &used[i]);
	write_split_seed("journal-split", FUZZ_RING_SPLIT | FUZZ_RING_JOURNAL, reg, used);
	for (int i = 0; i < 3; i++)
		free(reg[i]);
}

/* Files that are not rings this build can read. */
static void write_not_ring_seeds(void)
{
	unsigned char sb[FR_RING_SB_LEN + 64];

	write_seed("ring", "not-a-ring", FUZZ_RING_FILE, "#!/bin/sh\necho hello\n", 21);
	memset(sb, 0, sizeof(sb));
	memcpy(sb, FR_RING_MAGIC, 16);
	fr_put_le32(sb + FUZZ_SB_OFF_VERSION, FR_RING_VERSION);
	fr_put_le32(sb + FUZZ_SB_OFF_SB_LEN, FR_RING_SB_LEN);
	fr_put_le64(sb + FUZZ_SB_OFF_FILE_SIZE, FR_RING_SB_LEN + 2 * FUZZ_RING_SEGMENT);
	fr_put_le64(sb + FUZZ_SB_OFF_SEGMENT_SIZE, FUZZ_RING_SEGMENT);
	fr_put_le32(sb + FUZZ_SB_OFF_NSEGMENTS, 2);
	fr_put_le32(sb + FUZZ_SB_OFF_CHUNK_VERSION, FR_CHUNK_VERSION);
	fix_sb(sb);
	/* Shorter than its superblock says. */
	write_seed("ring", "truncated", FUZZ_RING_FILE | FUZZ_RING_FIX_CRC, sb, sizeof(sb));
	fr_put_le32(sb + FUZZ_SB_OFF_CHUNK_VERSION, FR_CHUNK_VERSION + 1);
	fix_sb(sb);
	write_seed("ring", "other-chunk-version", FUZZ_RING_FILE, sb, FR_RING_SB_LEN);
}

/* The steps draw from rng() in this order; reordering them changes the
 * seeds. */
void make_ring_seeds(void)
{
	unsigned char *img;
	uint64_t nchunks;
	size_t len;

	clean_dir("ring");
	img = wrapped_ring(&len, &nchunks);
	write_seed("ring", "wrapped", FUZZ_RING_FILE, img, len);
	write_sb_damaged_seeds(img, len);
	write_chunks_damaged_seed(img, len, nchunks);
	free(img);
	write_hand_segment_seeds();
	write_journal_seed();
	write_hand_journal_seed();
	write_not_ring_seeds();
}
