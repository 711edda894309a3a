/* The symbol memo on disk (src/sym/sym_cache.c): what is put comes back
 * after a reopen, field by field; another signature sees nothing and
 * replaces the file; two writers both keep their records; and a damaged
 * file (every byte flipped in turn, every length cut) never yields an
 * answer that was not put, nor a crash. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "sym/sym.h"

static const uint8_t id[20] = { 0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
static char dir[64], file[128];

/* The answers put below, by address. */
static const struct bk_symbol inner = { "inlined_fn", 0, "/src/a.h", 12, 3, 1 };
static const struct bk_symbol outer = { "outer_fn", 0x42, "/src/a.c", 99, 0, 0 };
static const struct bk_symbol nameless = { NULL, 0x10, NULL, 0, 0, 0 };

static bool same_sym(const struct bk_symbol *a, const struct bk_symbol *b)
{
	bool fn = a->function && b->function ? !strcmp(a->function, b->function)
					      : a->function == b->function;
	bool fl = a->file && b->file ? !strcmp(a->file, b->file) : a->file == b->file;
	return fn && fl && a->offset == b->offset && a->line == b->line &&
	       a->column == b->column && a->inlined == b->inlined;
}

static void put_all(struct sym_memo *m)
{
	const struct bk_symbol two[2] = { inner, outer };
	sym_memo_put(m, 0x1000, two, 2);
	sym_memo_put(m, 0x2000, &nameless, 1);
	sym_memo_put(m, 0x3000, NULL, 0); /* nothing known there */
}

/* What M answers for the addresses put_all used: 1 if all exact, 0 if all
 * absent, -1 for anything else (a wrong answer). */
static int answers(struct sym_memo *m)
{
	struct bk_symbol out[16];
	int got = 0, absent = 0;
	int n = sym_memo_get(m, 0x1000, out, 16);
	if (n < 0)
		absent++;
	else if (n == 2 && same_sym(&out[0], &inner) && same_sym(&out[1], &outer))
		got++;
	n = sym_memo_get(m, 0x2000, out, 16);
	if (n < 0)
		absent++;
	else if (n == 1 && same_sym(&out[0], &nameless))
		got++;
	n = sym_memo_get(m, 0x3000, out, 16);
	if (n < 0)
		absent++;
	else if (n == 0)
		got++;
	return got + absent != 3 ? -1 : got == 3 ? 1 : absent == 3 ? 0 : 2;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *p = malloc(1 << 16);
	*len = fread(p, 1, 1 << 16, f);
	fclose(f);
	return p;
}

static void spit(const char *path, const uint8_t *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	fwrite(p, 1, len, f);
	fclose(f);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/bk_test_memo_XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(file, sizeof(file), "%s/deadbeef0102030405060708090a000000000000.sym", dir);

	/* Put, close, reopen: the same answers, and a truncated max. */
	struct sym_memo *m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	CHECK(m != NULL, "a memo opens");
	CHECK_INT(answers(m), 0, "an empty memo knows nothing");
	put_all(m);
	CHECK_INT(answers(m), 1, "answers in this run");
	sym_memo_close(m);
	struct stat st;
	CHECK(stat(file, &st) == 0 && st.st_size > 20, "the file %s is written", file);
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	CHECK_INT(answers(m), 1, "answers after a reopen");
	struct bk_symbol one[1];
	CHECK(sym_memo_get(m, 0x1000, one, 1) == 1 && same_sym(one, &inner), "max 1: the innermost");
	sym_memo_put(m, 0x1000, &outer, 1); /* the first answer stays */
	CHECK(sym_memo_get(m, 0x1000, one, 1) == 1 && same_sym(one, &inner), "no overwrite");
	sym_memo_close(m);

	/* Two writers on one file: both records stay. */
	struct sym_memo *a = sym_memo_open(dir, id, sizeof(id), "sig-1");
	struct sym_memo *b = sym_memo_open(dir, id, sizeof(id), "sig-1");
	sym_memo_put(a, 0x5000, &outer, 1);
	sym_memo_put(b, 0x6000, &nameless, 1);
	sym_memo_close(a);
	sym_memo_close(b);
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	struct bk_symbol out[16];
	CHECK(sym_memo_get(m, 0x5000, out, 16) == 1 && same_sym(out, &outer) &&
	      sym_memo_get(m, 0x6000, out, 16) == 1 && same_sym(out, &nameless) &&
	      answers(m) == 1, "two writers' records");
	sym_memo_close(m);

	/* Another signature: nothing from the old file; a put replaces it. */
	m = sym_memo_open(dir, id, sizeof(id), "sig-2");
	CHECK_INT(answers(m), 0, "another signature sees nothing");
	sym_memo_put(m, 0x7000, &outer, 1);
	sym_memo_close(m);
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	CHECK_INT(answers(m), 0, "the old signature's file was replaced");
	sym_memo_close(m);

	/* A file others may write is not believed (nor appended to). */
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	put_all(m);
	sym_memo_close(m);
	chmod(file, 0666);
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	CHECK_INT(answers(m), 0, "a world-writable file is ignored");
	sym_memo_close(m);
	chmod(file, 0600);
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	CHECK_INT(answers(m), 1, "the same file, ours alone again");
	sym_memo_close(m);

	/* Damage: every byte flipped in turn, every length cut. Each answer is
	 * the one put or none, never another. */
	unlink(file);
	m = sym_memo_open(dir, id, sizeof(id), "sig-1");
	put_all(m);
	sym_memo_close(m);
	size_t len = 0;
	uint8_t *good = slurp(file, &len);
	CHECK(good && len > 40, "the file to damage");
	int wrong = 0, intact = 0;
	for (size_t i = 0; good && i < len; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			good[i] ^= (uint8_t)(1u << bit);
			spit(file, good, len);
			good[i] ^= (uint8_t)(1u << bit);
			m = sym_memo_open(dir, id, sizeof(id), "sig-1");
			int r = answers(m);
			wrong += r < 0;
			intact += r == 1;
			sym_memo_close(m);
		}
	}
	CHECK(wrong == 0, "flips: %d wrong answers", wrong);
	/* Flips in the header throw the file away; the rest lose one record. */
	CHECK(intact == 0, "flips: %d damaged files still answered everything", intact);
	for (size_t cut = 0; good && cut < len; cut++) {
		spit(file, good, cut);
		m = sym_memo_open(dir, id, sizeof(id), "sig-1");
		int r = answers(m);
		wrong += r < 0;
		sym_memo_close(m);
	}
	CHECK(wrong == 0, "cuts: %d wrong answers", wrong);
	free(good);

	/* No file to be had: answers from memory only. */
	m = sym_memo_open("/nonexistent/bk-memo", id, sizeof(id), "sig-1");
	put_all(m);
	CHECK_INT(answers(m), 1, "an unwritable directory: memory only");
	sym_memo_close(m);
	CHECK(sym_memo_open(dir, id, 0, "sig") == NULL && sym_memo_open(NULL, id, 20, "s") == NULL &&
	      sym_memo_open(dir, id, 20, "two\nlines") == NULL, "no memo without a build-id");
	CHECK(sym_memo_get(NULL, 0x1000, out, 16) == -1, "NULL memo: no answer");
	sym_memo_put(NULL, 0x1000, &outer, 1);
	sym_memo_close(NULL);

	unlink(file);
	rmdir(dir);
	return check_summary();
}
