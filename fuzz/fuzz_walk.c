/* Fuzz harness: a whole walk — the cursor (src/unwind/cursor.c) and the
 * PC-only walk of bk_backtrace (src/unwind/fast.c: rule compilation, the
 * rule table, the memo, the hot loop over a stack window, the slow steps) —
 * over a fuzzed .eh_frame and fuzzed stack bytes and registers.
 *
 * Input (integers little-endian):
 *   0   u16  eh_len: bytes of .eh_frame after the header
 *   2   u8   flags: bit 0  the first frame was interrupted (look it up at
 *                          its PC), else the PC is a return address
 *                   bit 1  the stack window is not given: every read of the
 *                          fast walk goes through read_mem
 *                   bit 2  look .eh_frame up through a built index, else
 *                          through a .eh_frame_hdr made here from the
 *                          section's FDEs (sorted, as a linker makes it)
 *   3   u8   reserved
 *   4   u16  pc:  CODE + pc
 *   6   u16  sp:  STACK + sp
 *   8   u16  fp:  STACK + fp (0xffff: FP 0)
 *   10  eh_len bytes of .eh_frame (at address EH), then the stack bytes (at
 *       address STACK) to the end.
 * The module spans [CODE, CODE + 64 KiB) with the section's addresses as
 * they are (load bias 0). The space is a snapshot of the stack bytes alone:
 * code reads (the sigreturn check) fail, as in a profiler's sample.
 *
 * What is checked (abort() on violation):
 *  - both walks end (bounded: at most BK_MAX_FRAMES frames);
 *  - where the fast walk does not hand over (-1) it made exactly the
 *    cursor's frames: the same PCs, ending where the cursor's steps end
 *    (0, or the frame bound);
 *  - the same walk again, the table and the memo now warm, gives the same
 *    answer; so does one without the stack window (all reads through
 *    read_mem), unless one of them handed over.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi/cfi.h"
#include "unwind/unwind.h"

#define HEADER_LEN 10
#define CODE 0x400000ull
#define CODE_LEN 0x10000ull
#define EH 0x500000ull
#define STACK 0x7ff000000000ull
#define MAXF 512

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_walk: %s\n", what);
		abort();
	}
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* A .eh_frame_hdr for SEC, as a linker makes it: datarel sdata4 entries
 * sorted by pc_begin, one per FDE that decodes. 0 when it cannot. */
static size_t make_hdr(const struct cfi_section *sec, uint8_t *out, size_t cap, uint64_t hdr_addr)
{
	struct cfi_table t;
	if (cfi_table_init(&t, sec, NULL) != 0)
		return 0;
	size_t need = 12 + t.nindex * 8;
	size_t n = 0;
	if (t.nindex && need <= cap) {
		out[0] = 1;                 /* version */
		out[1] = 0x1b;              /* eh_frame_ptr: pcrel sdata4 */
		out[2] = 0x03;              /* fde_count: udata4 */
		out[3] = 0x3b;              /* table: datarel sdata4 */
		int32_t ptr = (int32_t)(sec->addr - (hdr_addr + 4));
		memcpy(out + 4, &ptr, 4);
		uint32_t count = (uint32_t)t.nindex;
		memcpy(out + 8, &count, 4);
		for (size_t i = 0; i < t.nindex; i++) {
			int32_t loc = (int32_t)(t.index[i].pc_begin - hdr_addr);
			int32_t fde = (int32_t)(sec->addr + t.index[i].fde_off - hdr_addr);
			memcpy(out + 12 + i * 8, &loc, 4);
			memcpy(out + 16 + i * 8, &fde, 4);
		}
		n = need;
	}
	cfi_table_free(&t);
	return n;
}

static struct uw_cursor *ucur(struct bk_cursor *c)
{
	return (struct uw_cursor *)(void *)c;
}

/* The cursor's walk: PCs of the frames it steps to, and how it ended. */
static int cursor_walk(struct bk_space *s, const struct bk_regs *regs, bool at_pc,
		       uint64_t *pcs, int *end)
{
	struct bk_cursor c;
	check(bk_cursor_init(&c, s, regs) == 0, "bk_cursor_init failed");
	if (!at_pc) {
		/* A return address: the cursor looks up PC - 1 from a frame that
		 * is not the innermost. uw_cursor's at_pc is its own business;
		 * start it the way bk_backtrace's cursor path does. */
		ucur(&c)->at_pc = 0;
	}
	int n = 0, r;
	while ((r = bk_cursor_step(&c)) == 1) {
		check(n < BK_MAX_FRAMES, "the cursor walked past BK_MAX_FRAMES");
		if (n < MAXF)
			pcs[n] = bk_cursor_pc(&c);
		n++;
	}
	*end = r;
	return n;
}

/* The fast walk's answer N (PCS) against the cursor's (REF, NREF, END). */
static void agree(int n, void *const *pcs, int nref, const uint64_t *ref, int end, int max)
{
	if (n < 0)
		return; /* handed over: the cursor's walk is the answer */
	check(n <= max, "the fast walk stored more than it was given room for");
	int want = nref < max ? nref : max;
	bool ended = end == 0 || end == BK_E_LIMIT;
	if (n < max)
		check(ended && n == nref, "the fast walk ended where the cursor did not");
	check(n == want || (n == max && nref >= max), "the fast walk made another number of frames");
	for (int i = 0; i < n && i < MAXF; i++)
		check((uint64_t)(uintptr_t)pcs[i] == ref[i], "the fast walk made another PC");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HEADER_LEN)
		return 0;
	size_t eh_len = (size_t)le(data, 2);
	uint8_t flags = data[2];
	if (eh_len > size - HEADER_LEN)
		eh_len = size - HEADER_LEN;
	bool at_pc = flags & 1;
	uint64_t pc = CODE + le(data + 4, 2);
	uint64_t sp = STACK + le(data + 6, 2);
	uint64_t fp = le(data + 8, 2) == 0xffff ? 0 : STACK + le(data + 8, 2);

	/* Exact-size copies, so that ASan sees any read past either. */
	uint8_t *eh = malloc(eh_len ? eh_len : 1);
	size_t stack_len = size - HEADER_LEN - eh_len;
	uint8_t *stack = malloc(stack_len ? stack_len : 1);
	uint8_t *hdr = malloc(65536);
	check(eh && stack && hdr, "out of memory");
	memcpy(eh, data + HEADER_LEN, eh_len);
	memcpy(stack, data + HEADER_LEN + eh_len, stack_len);

	struct cfi_section sec = { .data = eh, .len = eh_len, .addr = EH, .is_eh = true,
				   .addr_size = 8 };
	struct cfi_table table;
	int terr;
	uint64_t hdr_addr = EH - 65536;
	size_t hdr_len = (flags & 4) ? 0 : make_hdr(&sec, hdr, 65536, hdr_addr);
	if (hdr_len) {
		struct cfi_hdr h = { hdr, hdr_len, hdr_addr };
		terr = cfi_table_init_hdr(&table, &sec, &h); /* lazy, as for this process */
	} else {
		terr = cfi_table_init(&table, &sec, NULL);
	}

	struct bk_mem_region region = { STACK, stack, stack_len };
	struct bk_space *s;
	check(bk_space_create_snapshot(BK_ARCH_X86_64, &region, 1, &s) == 0,
	      "bk_space_create_snapshot failed");
	/* One module over the code, its table the one built above (no file). */
	struct uw_module m = { .start = CODE, .end = CODE + CODE_LEN, .path = (char *)"fuzz",
			       .eh_table = terr == 0 ? &table : NULL };
	s->mods = &m;
	s->nmods = 1;
	s->cap = 1;
	if (flags & 2)
		s->window = NULL;

	static uint64_t ref[MAXF];
	static void *pcs[MAXF], *again[MAXF], *nowin[MAXF];
	int end;
	/* The first frame's registers: PC, SP, FP and, from the input's
	 * stack bytes, a few callee-saved ones (a cursor step may use them). */
	struct bk_regs full;
	struct bk_regs *regs = &full;
	memset(&full, 0, sizeof(full));
	bk_regs_set(&full, 16, pc);
	bk_regs_set(&full, 7, sp);
	bk_regs_set(&full, 6, fp);
	for (unsigned i = 0; i < 4 && (i + 1) * 8 <= stack_len; i++)
		bk_regs_set(&full, i == 0 ? 3 : 11 + i, le(stack + i * 8, 8));
	int nref = cursor_walk(s, regs, at_pc, ref, &end);

	int n = uw_walk_pcs(s, regs, at_pc, pcs, MAXF);
	if (getenv("FUZZ_WALK_VERBOSE")) {
		fprintf(stderr, "cursor: %d frames, end %d:", nref, end);
		for (int i = 0; i < nref && i < 8; i++)
			fprintf(stderr, " %#llx", (unsigned long long)ref[i]);
		fprintf(stderr, "\nfast: %d:", n);
		for (int i = 0; i < n && i < 8; i++)
			fprintf(stderr, " %p", pcs[i]);
		fprintf(stderr, "\n");
	}
	agree(n, pcs, nref, ref, end, MAXF);
	/* Warm: the table and the memo answer now. */
	int n2 = uw_walk_pcs(s, regs, at_pc, again, MAXF);
	agree(n2, again, nref, ref, end, MAXF);
	if (n >= 0 && n2 >= 0)
		check(n == n2 && !memcmp(pcs, again, (size_t)n * sizeof(void *)),
		      "a warm walk differs from the cold one");
	/* No window: every read through read_mem. */
	int n3 = uw_walk_pcs_window(s, regs, at_pc, nowin, MAXF, NULL, NULL);
	agree(n3, nowin, nref, ref, end, MAXF);
	if (getenv("FUZZ_WALK_VERBOSE"))
		fprintf(stderr, "warm %d, no window %d\n", n2, n3);
	/* A short buffer: the walk stops at MAX. */
	int n4 = uw_walk_pcs(s, regs, at_pc, pcs, 3);
	agree(n4, pcs, nref, ref, end, 3);

	s->mods = NULL;
	s->nmods = s->cap = 0;
	bk_space_destroy(s);
	if (terr == 0)
		cfi_table_free(&table);
	free(eh);
	free(stack);
	free(hdr);
	return 0;
}
