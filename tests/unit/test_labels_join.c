/* Which copy of a thread's labels a sample takes (fr_al_join,
 * recorder/tracking/applabels_int.h): its own, made in the sample's
 * interrupt, whether a few microseconds before the sample's time or, on
 * a virtual machine whose vCPU stopped in between, up to milliseconds
 * after it (copies 0.1 to 1.7 ms after their samples were missed, and a
 * few samples a minute went without labels): the first copy from 100 us
 * before the sample to 3 ms after it; with none, the last one at most 1
 * ms before it. A sample whose copy is missing takes the next one when
 * it is that near. */
#include <stdint.h>
#include <stdio.h>

#include "recorder/tracking/applabels_int.h"
#include "tests/unit/check.h"

#define US 1000ll
#define MS 1000000ll

int main(void)
{
	/* Sorted by thread, then time. Thread 7 at 999 Hz from t = 1 s: a
	 * copy every ms with set 100 + its number; thread 9's own. */
	struct fr_al_obs obs[] = {
		{7, 101, 1000 * MS + 5 * US},	 /* sample 1's, 5 us after it */
		{7, 102, 1001 * MS - 3 * US},	 /* sample 2's, 3 us before it */
		{7, 103, 1002 * MS + 1700 * US}, /* sample 3's, 1.7 ms late */
		{7, 105, 1005 * MS},		 /* sample 5's (4 has none) */
		{7, 106, 1006 * MS + 20 * US},	 /* sample 6's */
		{9, 900, 1003 * MS},
	};
	size_t n = sizeof(obs) / sizeof(obs[0]);

	CHECK(fr_al_join(obs, n, 7, 1000 * MS) == 101, "a copy 5 us after its sample");
	CHECK(fr_al_join(obs, n, 7, 1001 * MS) == 102, "a copy 3 us before its sample");
	CHECK(fr_al_join(obs, n, 7, 1002 * MS) == 103, "a copy 1.7 ms after its sample: %u",
	      fr_al_join(obs, n, 7, 1002 * MS));
	/* Sample 4 at 1004 ms has no copy: sample 5's, 1 ms after it. */
	CHECK(fr_al_join(obs, n, 7, 1004 * MS) == 105, "a sample without a copy: %u",
	      fr_al_join(obs, n, 7, 1004 * MS));
	CHECK(fr_al_join(obs, n, 7, 1004 * MS + 300 * US) == 105, "the next copy 0.7 ms on");
	/* Only a copy before it, within 1 ms: that one. */
	CHECK(fr_al_join(obs, n, 7, 1006 * MS + 900 * US) == 106, "the copy 0.88 ms before");
	CHECK(fr_al_join(obs, n, 7, 1006 * MS) == 106,
	      "not the copy before it when its own follows");
	/* No copy of the thread from 100 us before to 3 ms after, none in the
	 * ms before: nothing. */
	CHECK(fr_al_join(obs, n, 7, 1010 * MS) == 0, "far from every copy: %u",
	      fr_al_join(obs, n, 7, 1010 * MS));
	CHECK(fr_al_join(obs, n, 7, 990 * MS) == 0, "before every copy");
	/* Another thread's copies never. */
	CHECK(fr_al_join(obs, n, 8, 1003 * MS) == 0, "a thread without copies");
	CHECK(fr_al_join(obs, n, 9, 1003 * MS) == 900, "thread 9's own");
	CHECK(fr_al_join(obs, n, 9, 1000 * MS) == 900, "thread 9's copy 3 ms after");
	CHECK(fr_al_join(obs, 0, 7, 1000 * MS) == 0, "no copies at all");
	return failures != 0;
}
