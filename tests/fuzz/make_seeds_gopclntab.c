/* Seeds of the gopclntab target (tests/fuzz/fuzz_gopclntab.c): the
 * hand-written tables of gopclntab_synth.h in every layout, with their
 * inline trees and module record, looked up from their first function's
 * entry; and one cut short. */
#include <stdio.h>
#include <string.h>

#include "tests/fuzz/gopclntab_synth.h"
#include "tests/fuzz/make_seeds.h"

static void le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The input for s, its table cut to `tab_len` bytes. */
static size_t seed(const struct go_synth *s, size_t tab_len, uint8_t *out)
{
	size_t at = 40;

	le(out, GO_SYNTH_TEXT, 8);
	le(out + 8, 0, 8);
	le(out + 16, s->faddr, 8);
	le(out + 24, s->tab_addr, 8);
	le(out + 32, tab_len, 4);
	le(out + 36, s->flen, 4);
	memcpy(out + at, s->tab, tab_len);
	at += tab_len;
	memcpy(out + at, s->fdata, s->flen);
	at += s->flen;
	memcpy(out + at, s->mod, s->mod_len);
	return at + s->mod_len;
}

void make_gopclntab_seeds(void)
{
	static uint8_t out[40 + sizeof(((struct go_synth *)0)->tab) + 64 + 8 * 48];
	struct go_synth s;
	char name[64];

	clean_dir("gopclntab");
	for (int layout = 116; layout <= 120; layout += 2)
		for (unsigned ptr = 4; ptr <= 8; ptr += 4) {
			go_synth_build(&s, layout, ptr);
			snprintf(name, sizeof(name), "go%d-ptr%u", layout, ptr);
			write_seed("gopclntab", name, -1, out, seed(&s, s.tab_len, out));
		}
	go_synth_build(&s, 120, 8);
	write_seed("gopclntab", "go120-ptr8-half", -1, out, seed(&s, s.tab_len / 2, out));
}
