/* A program whose OpenTelemetry thread context lives in a shared library
 * (otel_lib.c): attaches a context to its main thread, prints "pid=PID"
 * and "ready", then burns CPU for SECONDS (argument, default 8). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

void otel_lib_attach(uint8_t seed);
void otel_lib_publish_keys(void);

static volatile unsigned long sink;

__attribute__((noinline)) static void otel_lib_burn(void)
{
	for (unsigned long i = 0; i < 1000000; i++)
		sink += i;
}

int main(int argc, char **argv)
{
	int seconds = argc > 1 ? atoi(argv[1]) : 8;
	time_t end = time(NULL) + seconds;

	otel_lib_publish_keys();
	otel_lib_attach(0x40);
	printf("pid=%d\nready\n", (int)getpid());
	fflush(stdout);
	while (time(NULL) < end)
		otel_lib_burn();
	return 0;
}
