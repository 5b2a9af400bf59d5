/* The wakes held for their wait (recorder/sampling/wake_join.h), built from
 * its own source alone: a wake is taken by its thread and wait start only
 * (not another wait of the same thread), once; a full table refuses
 * (the caller sends the wake at once), and makes room as wakes are taken;
 * the same key again replaces; old wakes come out by age, each once,
 * with their frames. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "recorder/sampling/wake_join.h"
#include "tests/unit/check.h"

static struct fr_wake_held wake(uint32_t tid, uint64_t start, uint64_t held_at, uint64_t ip)
{
	static uint64_t frames[3];
	struct fr_wake_held w;

	memset(&w, 0, sizeof(w));
	w.tid = tid;
	w.start = start;
	w.held_at = held_at;
	frames[0] = ip;
	frames[1] = ip + 1;
	frames[2] = ip + 2;
	w.s.ips = frames;
	w.s.nr_frames = 3;
	w.s.weight = start;
	w.waker_tid = tid + 1000;
	return w;
}

int main(void)
{
	struct fr_wake_join *j = fr_wake_join_new(4);
	struct fr_wake_held w, out;
	int n;

	CHECK(j, "new");
	for (uint32_t i = 0; i < 4; i++) {
		w = wake(10 + i, 100 * i, i, 0x1000 * i);
		CHECK(fr_wake_join_put(j, &w) == 0, "put %u", i);
	}
	w = wake(99, 5, 9, 0x9000);
	CHECK(fr_wake_join_put(j, &w) == -ENOSPC, "a full table refuses");
	CHECK(fr_wake_join_count(j) == 4, "count %u", fr_wake_join_count(j));
	/* Same thread, another wait: not it. */
	CHECK(!fr_wake_join_take(j, 11, 999, &out), "another wait of the thread");
	CHECK(fr_wake_join_take(j, 11, 100, &out), "take");
	CHECK(out.tid == 11 && out.start == 100 && out.waker_tid == 1011 && out.s.nr_frames == 3 &&
		      out.s.ips == out.ips && out.ips[0] == 0x1000 && out.ips[2] == 0x1002,
	      "what came out");
	CHECK(!fr_wake_join_take(j, 11, 100, &out), "taken once");
	/* Room again; the same key replaces. */
	w = wake(99, 5, 9, 0x9000);
	CHECK(fr_wake_join_put(j, &w) == 0, "put after a take");
	w = wake(99, 5, 9, 0xa000);
	CHECK(fr_wake_join_put(j, &w) == 0 && fr_wake_join_count(j) == 4, "replace");
	CHECK(fr_wake_join_take(j, 99, 5, &out) && out.ips[0] == 0xa000, "the replacement");
	/* By age: held before 3 (held_at 0 and 2), each once. */
	n = 0;
	while (fr_wake_join_expire(j, 3, &out)) {
		CHECK(out.held_at < 3 && out.s.ips == out.ips, "expired %u at %llu", out.tid,
		      (unsigned long long)out.held_at);
		n++;
	}
	CHECK(n == 2, "%d expired", n);
	CHECK(fr_wake_join_count(j) == 1 && fr_wake_join_take(j, 13, 300, &out),
	      "the young one stays");
	CHECK(!fr_wake_join_expire(j, UINT64_MAX, &out) && fr_wake_join_count(j) == 0, "empty");
	/* Many wakes through a small table: no entry leaks. */
	for (uint32_t i = 0; i < 1000; i++) {
		w = wake(i % 7, i, i, i);
		CHECK(fr_wake_join_put(j, &w) == 0, "put %u", i);
		CHECK(fr_wake_join_take(j, i % 7, i, &out) && out.ips[1] == i + 1, "take %u", i);
	}
	CHECK(fr_wake_join_count(j) == 0, "leak");
	fr_wake_join_free(j);
	CHECK(!fr_wake_join_new(0), "no table of 0");
	return failures != 0;
}
