/* Fuzz harness: the symbol memo's file reader (src/sym/sym_cache.c).
 *
 * Input: the records part of a memo file. The harness writes a memo with a
 * valid header (one record put through sym_memo_put, so the header is what
 * this build writes), appends the input, and opens the memo again: every
 * record the reader accepts is then queried through sym_memo_get at the
 * addresses the input names (each 8-byte window of it read as an address)
 * and every string of every answer is read to its end, so a pointer out of
 * the file image is an ASan report.
 *
 * abort() marks a broken invariant: an answer of more than 16 frames or
 * more than asked for, an inlined flag other than 0 or 1, the record put
 * first answering differently, a string not ending inside the image.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym/sym.h"

static const uint8_t id[8] = { 0xf0, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88 };
static char dir[64], file[128];

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_memo: %s\n", what);
		abort();
	}
}

static void touch(const struct bk_symbol *s, int n)
{
	volatile size_t sum = 0;
	for (int i = 0; i < n; i++) {
		check(s[i].inlined == 0 || s[i].inlined == 1, "inlined flag");
		if (s[i].function)
			sum += strlen(s[i].function);
		if (s[i].file)
			sum += strlen(s[i].file);
	}
	(void)sum;
}

static void cleanup(void)
{
	unlink(file);
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/bk_fuzz_memo_%d", (int)getpid());
		mkdir(dir, 0700);
		snprintf(file, sizeof(file), "%s/f022334455667788.sym", dir);
		atexit(cleanup);
	}
	unlink(file);
	static const struct bk_symbol known = { "known_fn", 4, "known.c", 7, 0, 0 };
	struct sym_memo *m = sym_memo_open(dir, id, sizeof(id), "fuzz");
	if (!m)
		return 0; /* this build has no build-id: no memo */
	sym_memo_put(m, 0x1234, &known, 1);
	sym_memo_close(m);
	FILE *f = fopen(file, "ab");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);

	m = sym_memo_open(dir, id, sizeof(id), "fuzz");
	struct bk_symbol out[16];
	int n = sym_memo_get(m, 0x1234, out, 16);
	check(n == 1 && !strcmp(out[0].function, "known_fn") && !strcmp(out[0].file, "known.c") &&
	      out[0].line == 7 && out[0].offset == 4, "the record put first");
	for (size_t i = 0; i + 8 <= size; i++) {
		uint64_t addr;
		memcpy(&addr, data + i, 8);
		n = sym_memo_get(m, addr, out, 16);
		check(n <= 16, "more than 16 frames");
		if (n > 0)
			touch(out, n);
		int k = sym_memo_get(m, addr, out, 1);
		check(k == (n < 1 ? n : 1), "max 1");
	}
	sym_memo_close(m);
	unlink(file);
	return 0;
}
