/* Fuzz harness: jitdump files (src/loader/ldr_jitdump.c, src/unwind/
 * jitdump.c).
 *
 * Input: a jitdump as it would be on disk. It is read twice: from memory
 * (ldr_jitdump_read) and, through a memfd, by bk_space_add_jitdump into an
 * x86-64 space whose memory is the input itself placed at the address of
 * the first load (its .eh_frame sections registered, its names kept); then
 * every entry's start, middle and end is symbolized, a walk runs from each
 * of the first entries with the input as its stack, and the view is moved
 * through the records' times.
 *
 * abort() marks a broken invariant:
 *  - an entry's range that wraps, a sequence number out of order, debug
 *    lines outside the array, unwinding bytes past the bound, a name or a
 *    file name that is not a string (read to its NUL: ASan);
 *  - the two readings disagreeing on whether the input is a jitdump, or
 *    on its loads and moves;
 *  - a symbol for an address outside the entry that names it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <backstep.h>

#include "loader/loader.h"

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_jitdump: %s\n", what);
		abort();
	}
}

struct mem {
	const uint8_t *p;
	size_t len;
	uint64_t at;
};

static int read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct mem *m = ctx;
	if (addr < m->at || addr - m->at > m->len || len > m->len - (addr - m->at))
		return BK_E_MEMORY;
	memcpy(dst, m->p + (addr - m->at), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ldr_jd_mem m = { data, size };
	struct ldr_jd_source src = ldr_jd_memory(&m);
	struct ldr_jitdump *jd = NULL;
	int r = ldr_jitdump_read(&src, &jd);
	check((r == 0) == (jd != NULL), "a reading and its result");
	uint64_t first = 0;
	size_t loads = 0, moves = 0;
	uint16_t machine = 0;
	if (jd) {
		machine = jd->machine;
		loads = jd->nloads;
		moves = jd->nmoves;
		check(jd->ncode == loads + moves, "entries are loads and moves");
		for (size_t i = 0; i < jd->ncode; i++) {
			const struct ldr_jd_code *c = &jd->code[i];
			check(c->start <= c->end, "a range that wraps");
			check(c->seq == i, "sequence numbers");
			check(c->line0 + (size_t)c->nlines <= jd->nlines, "lines outside the array");
			check(c->eh_len <= LDR_JD_MAX_UNWIND && (!c->eh_len || c->eh), "unwinding bytes");
			check(strlen(c->name) < LDR_JD_MAX_NAME, "a name");
			for (uint32_t k = 0; k < c->nlines; k++)
				check(strlen(jd->lines[c->line0 + k].file) < LDR_JD_MAX_NAME, "a file name");
		}
		if (jd->ncode)
			first = jd->code[0].start;
		(void)ldr_jitdump_index(jd); /* out of memory: no lookups below */
		for (size_t i = 0; i < jd->ncode && i < 64; i++) {
			const struct ldr_jd_code *c = &jd->code[i];
			const struct ldr_jd_code *at = ldr_jitdump_at(jd, c->start, jd->ncode);
			check(!at || (c->start >= at->start && c->start < at->end), "a lookup");
			if (at)
				(void)ldr_jitdump_line(jd, at, c->start);
		}
		ldr_jitdump_free(jd);
	}

	/* The same bytes as a file, into a space. */
	int fd = memfd_create("jitdump", MFD_CLOEXEC);
	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct mem stack = { data, size, first };
	struct bk_target_ops ops = { .size = sizeof(ops), .read_mem = read_mem };
	struct bk_space *s = NULL;
	if (bk_space_create(BK_ARCH_X86_64, &ops, &stack, &s) == 0) {
		struct bk_jitdump_stats st = { .size = sizeof(st) };
		int r2 = bk_space_add_jitdump(s, path, 0, &st);
		/* A machine other than x86-64 is refused by the space only. */
		if (r == 0)
			check(r2 == 0 || r2 == BK_E_NOMEM ||
				      (r2 == BK_E_UNSUPPORTED && machine != 62),
			      "a jitdump the reader took, refused");
		else
			check(r2 != 0, "a jitdump the reader refused, taken");
		if (r2 == 0) {
			check(st.loads == loads && st.moves == moves, "the readings agree");
			uint64_t t = 0;
			for (int step = 0; step < 4; step++) {
				bk_space_jitdump_until(s, t);
				t = t * 7 + 0x3fff;
				for (uint64_t a = first; a < first + 256; a += 13) {
					struct bk_symbol sym[2];
					struct bk_module_info mi;
					int n = bk_space_symbolize(s, a, sym, 2);
					if (n > 0 && bk_space_module_at(s, a, &mi) == 0)
						check(a >= mi.start && a < mi.end, "a symbol outside its code");
				}
			}
			bk_space_jitdump_until(s, UINT64_MAX);
			struct bk_regs regs;
			memset(&regs, 0, sizeof(regs));
			bk_regs_set(&regs, 16, first + 8);
			bk_regs_set(&regs, 7, first);
			struct bk_cursor c;
			if (bk_cursor_init(&c, s, &regs) == 0)
				for (int i = 0; i < 32 && bk_cursor_step(&c) == 1; i++)
					;
		}
		bk_space_destroy(s);
	}
	close(fd);
	return 0;
}
