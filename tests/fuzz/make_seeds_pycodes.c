/* Seeds of the symbol cache's Python names (fuzz_pycodes.c): files as the
 * recorder writes them, of 3.10 and 3.11+ line tables, a status alone, and
 * one cut short. */
#include "tests/fuzz/make_seeds.h"

#include <stdlib.h>

#include "core/symbols/pycodes.h"

void make_pycodes_seeds(void)
{
	/* hot_b at line 14: 3.11's location table, two entries; 3.10's pairs. */
	static const uint8_t loc[] = {0xf0, 0x03, 0xd8, 0x02, 0x04, 0x0c, 0x88, 0x02};
	static const uint8_t pep626[] = {2, 0, 6, 1, 4, 1, 2, 0x80};
	const struct fr_pycode recs[] = {
		{0x7f0000001000, 14, FR_PY_LINES_LOCATIONS, "hot_b", "/srv/app.py", loc,
		 sizeof(loc)},
		{0x7f0000000800, 16, FR_PY_LINES_LOCATIONS, "Worker.run", "/srv/app.py", NULL, 0},
		{0x7f0000002000, 1, FR_PY_LINES_PEP626, "<module>", "/srv/\xc3\xa9t\xc3\xa9.py",
		 pep626, sizeof(pep626)},
	};
	uint8_t *buf;
	size_t len, kept;

	clean_dir("pycodes");
	if (fr_pycodes_encode("3.11.2", NULL, recs, 3, FR_PYCODES_MAX_SIZE, &buf, &len, &kept) < 0)
		die("pycodes", 12);
	write_seed("pycodes", "three", -1, buf, len);
	write_seed("pycodes", "cut", -1, buf, len - 5);
	free(buf);
	if (fr_pycodes_encode("3.9.18", "release 3.9 not supported", NULL, 0, FR_PYCODES_MAX_SIZE,
			      &buf, &len, &kept) < 0)
		die("pycodes", 12);
	write_seed("pycodes", "status", -1, buf, len);
	free(buf);
}
