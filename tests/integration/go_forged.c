/* A C program that passes for a Go one, for go_labels.sh: a .go.buildinfo
 * section that says go1.19.8 and a thread-local named runtime.tlsg (so
 * the recorder reads its threads as goroutines).
 *
 *   go_forged lie SECONDS      the runtime's structures as Go 1.19 lays
 *                              them out, with the label endpoint=/forged
 *   go_forged garbage SECONDS  a thread rewriting them with garbage all
 *                              the time: pointers to nothing, to the
 *                              kernel, to themselves, huge counts and
 *                              lengths
 *
 * Both burn CPU for SECONDS (printing "pid=N" first) and exit 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* "\xff Go buildinf:", pointer size 8, flags 2 (inline), at 32 the
 * version with its length. */
__attribute__((section(".go.buildinfo"), used)) static const char buildinfo[64] =
	"\xff Go buildinf:\x08\x02\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\x08go1.19.8";

__thread void *go_g __asm__("runtime.tlsg");

/* Go 1.19's offsets: g.m 48, m.curg 192, g.labels 360; a map's header
 * (count, B at 9, buckets at 16); a bucket of 8 tophash bytes, 8 keys, 8
 * values and the overflow pointer. */
static uint64_t g[64], m[64], hmap[8], mapvar[1];
static uint8_t bucket[272];
static volatile uint64_t sink;
static volatile int done;

static void go_string(uint8_t *at, const char *s)
{
	uint64_t hdr[2] = {(uint64_t)(uintptr_t)s, strlen(s)};

	memcpy(at, hdr, sizeof(hdr));
}

static void lie(void)
{
	g[48 / 8] = (uint64_t)(uintptr_t)m;
	m[192 / 8] = (uint64_t)(uintptr_t)g;
	g[360 / 8] = (uint64_t)(uintptr_t)mapvar;
	mapvar[0] = (uint64_t)(uintptr_t)hmap;
	hmap[0] = 1;
	hmap[2] = (uint64_t)(uintptr_t)bucket;
	bucket[0] = 9;
	go_string(bucket + 8, "endpoint");
	go_string(bucket + 136, "/forged");
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* A value a reader must not trust. */
static uint64_t bad(uint64_t *s)
{
	static const uint64_t picks[] = {0,
					 8,
					 0x1000,
					 0xffffffffff600000ull,
					 0xffff888000000000ull,
					 0x7fffffffffffull,
					 UINT64_MAX};
	uint64_t r = rnd(s);

	switch (r % 6) {
	case 0: return picks[(r >> 8) % (sizeof(picks) / sizeof(picks[0]))];
	case 1: return (uint64_t)(uintptr_t)g + (r >> 8) % sizeof(g);
	case 2: return (uint64_t)(uintptr_t)bucket + (r >> 8) % sizeof(bucket);
	case 3: return (uint64_t)(uintptr_t)hmap;
	case 4: return r;
	default: return r >> ((r >> 8) % 64);
	}
}

static void *scribble(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;

	go_g = g;
	while (!done) {
		g[rnd(&s) % 64] = bad(&s);
		m[rnd(&s) % 64] = bad(&s);
		hmap[rnd(&s) % 8] = bad(&s);
		mapvar[0] = bad(&s);
		((uint64_t *)bucket)[rnd(&s) % 34] = bad(&s);
		bucket[rnd(&s) % 8] = (uint8_t)rnd(&s);
		/* Sometimes the lie whole, that the reader goes deep. */
		if (rnd(&s) % 4 == 0)
			lie();
	}
	return arg;
}

int main(int argc, char **argv)
{
	int garbage = argc > 1 && strcmp(argv[1], "garbage") == 0;
	time_t end = time(NULL) + (argc > 2 ? atoi(argv[2]) : 10);
	pthread_t t;

	if (argc < 3 || (!garbage && strcmp(argv[1], "lie") != 0)) {
		fprintf(stderr, "usage: go_forged lie|garbage SECONDS\n");
		return 2;
	}
	lie();
	go_g = g;
	if (garbage && pthread_create(&t, NULL, scribble, NULL) != 0)
		return 1;
	printf("pid=%d\n", getpid());
	fflush(stdout);
	while (time(NULL) < end)
		for (int i = 0; i < 1000000; i++)
			sink = sink * 6364136223846793005ull + (uint64_t)buildinfo[i & 7];
	done = 1;
	if (garbage)
		pthread_join(t, NULL);
	return 0;
}
