/* A program that passes for CPython 3.11 and lies in its memory
 * (python_hostile.sh runs it copied as "python3.11"): it defines
 * _PyRuntime, Py_Version (3.11.2) and _PyEval_EvalFrameDefault, where
 * its threads burn CPU, and the structs the recorder walks, in 3.11's
 * layout (core/symbols/python_exe.c's table), hold:
 *   - a chain of frames that loops (A -> B -> A ...), whose code objects
 *     are a str of a huge length, an unmapped address and a code object
 *     whose names point back into itself;
 *   - a second thread whose thread state's frame pointer is misaligned;
 *   - a runtime whose thread list loops back on itself.
 * With "--swap" the frame pointer of the main thread changes every few
 * microseconds between the loop and NULL. Prints "ready" and runs for
 * argv[1] seconds.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* 3.11's offsets (python_exe.c's table). */
#define RT_INTERP_HEAD 40
#define IS_THREADS_HEAD 16
#define TS_NEXT 8
#define TS_THREAD_ID 152
#define TS_CFRAME 56
#define CF_FRAME 8
#define FR_PREVIOUS 48
#define FR_CODE 32
#define FR_INSTR 56
#define FR_IS_ENTRY 68
#define CO_FILENAME 112
#define CO_NAME 120
#define CO_QUALNAME 128
#define CO_LINETABLE 136

__attribute__((used, aligned(64))) uint8_t _PyRuntime[4096];
__attribute__((used)) const unsigned long Py_Version = 0x030b02f0;

static uint8_t interp[4096] __attribute__((aligned(64)));
static uint8_t tstate[2][4096] __attribute__((aligned(64)));
static uint8_t cframe[2][64] __attribute__((aligned(64)));
static uint8_t frames[2][128] __attribute__((aligned(64)));
static uint8_t code[3][4096] __attribute__((aligned(64)));
static uint8_t bigstr[128] __attribute__((aligned(64)));
static volatile uint64_t sink;
static volatile int swap;

static void put(uint8_t *base, size_t off, uint64_t v)
{
	memcpy(base + off, &v, sizeof(v));
}

void _PyEval_EvalFrameDefault(double secs);

/* Where the threads burn: the eval loop's symbol, so that their samples
 * are spliced. */
__attribute__((noinline, used)) void _PyEval_EvalFrameDefault(double secs)
{
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 100000; i++)
			sink += (uint64_t)i * i;
		if (swap)
			put(cframe[0], CF_FRAME, (sink & 1) ? 0 : (uint64_t)(uintptr_t)frames[0]);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
}

static double secs;

static void *second(void *arg)
{
	(void)arg;
	put(tstate[1], TS_THREAD_ID, (uint64_t)pthread_self());
	_PyEval_EvalFrameDefault(secs);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;

	secs = argc > 1 ? atof(argv[1]) : 10;
	swap = argc > 2 && strcmp(argv[2], "--swap") == 0;
	put(_PyRuntime, RT_INTERP_HEAD, (uint64_t)(uintptr_t)interp);
	put(interp, IS_THREADS_HEAD, (uint64_t)(uintptr_t)tstate[0]);
	/* main -> second -> main ...: the thread list loops */
	put(tstate[0], TS_NEXT, (uint64_t)(uintptr_t)tstate[1]);
	put(tstate[1], TS_NEXT, (uint64_t)(uintptr_t)tstate[0]);
	put(tstate[0], TS_THREAD_ID, (uint64_t)pthread_self());
	put(tstate[0], TS_CFRAME, (uint64_t)(uintptr_t)cframe[0]);
	put(tstate[1], TS_CFRAME, (uint64_t)(uintptr_t)cframe[1]);
	put(cframe[0], CF_FRAME, (uint64_t)(uintptr_t)frames[0]);
	put(cframe[1], CF_FRAME, (uint64_t)(uintptr_t)frames[1] + 3); /* misaligned */
	/* A -> B -> A: a loop of frames */
	put(frames[0], FR_PREVIOUS, (uint64_t)(uintptr_t)frames[1]);
	put(frames[1], FR_PREVIOUS, (uint64_t)(uintptr_t)frames[0]);
	put(frames[0], FR_CODE, (uint64_t)(uintptr_t)code[0]);
	put(frames[1], FR_CODE, 0xdead0000ull); /* not mapped */
	put(frames[0], FR_INSTR, (uint64_t)(uintptr_t)code[0] + 200);
	frames[0][FR_IS_ENTRY] = 1;
	/* code[0]: its qualname a str claiming 2^60 characters, its file a
	 * pointer to itself, its line table to the unmapped address */
	put(bigstr, 16, 1ull << 60);
	bigstr[32] = 0xe4; /* compact, ascii, ready: the state bits */
	put(code[0], CO_QUALNAME, (uint64_t)(uintptr_t)bigstr);
	put(code[0], CO_NAME, (uint64_t)(uintptr_t)bigstr);
	put(code[0], CO_FILENAME, (uint64_t)(uintptr_t)code[0]);
	put(code[0], CO_LINETABLE, 0xdead0000ull);
	pthread_create(&t, NULL, second, NULL);
	printf("ready\n");
	fflush(stdout);
	_PyEval_EvalFrameDefault(secs);
	pthread_join(t, NULL);
	return 0;
}
