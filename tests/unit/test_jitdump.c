/* jitdump files (src/loader/ldr_jitdump.c, bk_space_add_jitdump): a
 * jitdump written here for the code of jit_code.h (J1 calls J2 calls J3,
 * no frame pointers), placed at a made-up address of an x86-64 space whose
 * memory is that code and a stack laid out as the calls leave it. The
 * code is never run: the test runs on any host.
 *
 *   - names and lines: each function named from its JIT_CODE_LOAD, J3's
 *     source lines from its JIT_CODE_DEBUG_INFO;
 *   - unwinding: each load's JIT_CODE_UNWINDING_INFO .eh_frame, placed
 *     after its code as perf places it, unwinds J3 -> J2 -> J1 by CFI with
 *     the saved registers; without the jitdump nothing describes them;
 *   - time: J2 replaced at a later time by code without unwinding info:
 *     the view before names and unwinds the first J2, the view after the
 *     second; a move gives the code a second address;
 *   - what is refused (byte-swapped, version 3, another machine, a local
 *     space) and what is dropped (an .eh_frame describing other code);
 *   - the file cut at every length and bytes damaged: an error or a
 *     partial reading, nothing worse (ASan run).
 */
#include <stdlib.h>
#include <unistd.h>

#include <backstep.h>

#include "check.h"
#include "jit_code.h"
#include "loader/loader.h"
#include "unwind/unwind.h"

#define CODE_AT 0x7f0000100000ull /* where the JIT's code is said to be */
#define MOVED_AT 0x7f0000200000ull
#define STACK_AT 0x7ffff0000000ull
#define STACK_LEN 256

static uint8_t code[CODE_LEN];
static uint8_t stack[STACK_LEN];

static int read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (addr >= CODE_AT && addr - CODE_AT <= CODE_LEN && len <= CODE_LEN - (addr - CODE_AT)) {
		memcpy(dst, code + (addr - CODE_AT), len);
		return 0;
	}
	if (addr >= STACK_AT && addr - STACK_AT <= STACK_LEN && len <= STACK_LEN - (addr - STACK_AT)) {
		memcpy(dst, stack + (addr - STACK_AT), len);
		return 0;
	}
	return BK_E_MEMORY;
}

static struct bk_space *new_space(void)
{
	struct bk_target_ops ops = { .size = sizeof(ops), .read_mem = read_mem };
	struct bk_space *s = NULL;
	CHECK_INT(bk_space_create(BK_ARCH_X86_64, &ops, NULL, &s), 0, "bk_space_create");
	return s;
}

/* ---- Writing a jitdump ------------------------------------------------ */

static uint8_t jd[16384];
static size_t jd_len;

static void put(const void *p, size_t n)
{
	if (jd_len + n > sizeof(jd)) {
		fprintf(stderr, "jitdump buffer too small\n");
		exit(1);
	}
	memcpy(jd + jd_len, p, n);
	jd_len += n;
}
static void put_u32(uint32_t v) { put(&v, 4); }
static void put_u64(uint64_t v) { put(&v, 8); }

static void header(uint32_t magic, uint32_t version, uint32_t machine)
{
	jd_len = 0;
	put_u32(magic);
	put_u32(version);
	put_u32(40);
	put_u32(machine);
	put_u32(0);
	put_u32(4242); /* pid */
	put_u64(1);    /* timestamp */
	put_u64(0);    /* flags */
}

static void prefix(uint32_t id, size_t size, uint64_t time)
{
	put_u32(id);
	put_u32((uint32_t)size);
	put_u64(time);
}

static uint64_t code_index;

static void load(uint64_t time, uint64_t addr, const uint8_t *bytes, uint64_t len,
		 const char *name)
{
	size_t nlen = strlen(name) + 1;
	prefix(0, 16 + 40 + nlen + len, time);
	put_u32(4242);
	put_u32(4243);
	put_u64(addr);
	put_u64(addr);
	put_u64(len);
	put_u64(++code_index);
	put(name, nlen);
	put(bytes, len);
}

static void move(uint64_t time, uint64_t from, uint64_t to, uint64_t len, uint64_t index)
{
	prefix(1, 16 + 48, time);
	put_u32(4242);
	put_u32(4243);
	put_u64(to);
	put_u64(from);
	put_u64(to);
	put_u64(len);
	put_u64(index);
}

struct line { uint64_t addr; uint32_t line, col; const char *file; };

static void debug_info(uint64_t time, uint64_t addr, const struct line *l, size_t n)
{
	size_t size = 16 + 16;
	for (size_t i = 0; i < n; i++)
		size += 16 + strlen(l[i].file) + 1;
	prefix(2, size, time);
	put_u64(addr);
	put_u64(n);
	for (size_t i = 0; i < n; i++) {
		put_u64(l[i].addr);
		put_u32(l[i].line);
		put_u32(l[i].col);
		put(l[i].file, strlen(l[i].file) + 1);
	}
}

/* The unwinding info for the function FN (offset in the code, LEN bytes,
 * rows INSNS) loaded at AT: its .eh_frame (CIE, one FDE, terminator)
 * written for where perf places it, AT + LEN rounded up to 8; then a
 * 20-byte .eh_frame_hdr as V8 writes it after the section. DESCRIBE: the
 * address its FDE covers (AT for the truth). */
static void unwinding(uint64_t time, uint64_t at, uint32_t len, const uint8_t *insns, size_t n,
		      uint64_t describe)
{
	uint8_t sec[128];
	memset(sec, 0, sizeof(sec));
	memcpy(sec, cie, sizeof(cie));
	image_sec = sec;
	image_sec_addr = at + ((len + 7) & ~7u);
	size_t off = put_fde(sec, sizeof(cie), false, describe, len, insns, n);
	image_sec = NULL;
	off += 4; /* the terminator */
	static const uint8_t hdr[20] = { 1, 0x1b, 3, 0x3b };
	size_t all = off + sizeof(hdr);
	size_t padded = (all + 7) & ~(size_t)7;
	prefix(4, 16 + 24 + padded, time);
	put_u64(all);
	put_u64(sizeof(hdr));
	put_u64(all);
	put(sec, off);
	put(hdr, sizeof(hdr));
	static const uint8_t zero[8];
	put(zero, padded - all);
}

static const struct line j3_lines[] = {
	{ CODE_AT + J3, 10, 1, "gen.js" },
	{ CODE_AT + J3 + 22, 12, 5, "gen.js" },
};

/* J1, J2, J3 loaded at times 100, 200, 300, each with its unwinding info
 * (J3 also its lines); then (WITH_LATER) at 400 a new J2 over the old one,
 * without, and at 500 J1 moved to MOVED_AT. */
static void write_jitdump(bool with_later)
{
	header(0x4A695444, 1, 62);
	code_index = 0;
	unwinding(100, CODE_AT + J1, J1_LEN, cfa_j1, sizeof(cfa_j1), CODE_AT + J1);
	load(100, CODE_AT + J1, code + J1, J1_LEN, "jit_J1");
	unwinding(200, CODE_AT + J2, J2_LEN, cfa_j2, sizeof(cfa_j2), CODE_AT + J2);
	load(200, CODE_AT + J2, code + J2, J2_LEN, "jit_J2");
	debug_info(300, CODE_AT + J3, j3_lines, 2);
	unwinding(300, CODE_AT + J3, J3_LEN, cfa_j3, sizeof(cfa_j3), CODE_AT + J3);
	load(300, CODE_AT + J3, code + J3, J3_LEN, "jit_J3");
	if (with_later) {
		load(400, CODE_AT + J2, code + J2, J2_LEN, "jit_J2_v2");
		move(500, CODE_AT + J1, MOVED_AT, J1_LEN, 1);
	}
}

static char path[] = "/tmp/bk_test_jitdump_XXXXXX";

static void save(const uint8_t *bytes, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len) {
		fprintf(stderr, "%s: cannot write\n", path);
		exit(1);
	}
	fclose(f);
}

/* ---- The stack: J3 at offset 8, called from J2, called from J1 ---------- */

#define SAVED_R13 0x1313
#define SAVED_R12 0x1212
#define SAVED_RBX 0xb0b0

static void lay_out_stack(void)
{
	memset(stack, 0, sizeof(stack));
	/* J3 after sub $8: CFA = rsp + 32; r13 at CFA-24, r12 at CFA-16. */
	uint64_t w[] = { 0, SAVED_R13, SAVED_R12, CODE_AT + RA_J2,
			 /* J2: 24 bytes, then its return address */
			 0, 0, 0, CODE_AT + RA_J1,
			 /* J1: 16 bytes, rbx at CFA-16, then its caller: none */
			 0, 0, SAVED_RBX, 0 };
	memcpy(stack, w, sizeof(w));
}

static void start(struct bk_cursor *c, struct bk_space *s)
{
	struct bk_regs r;
	memset(&r, 0, sizeof(r));
	bk_regs_set(&r, 16, CODE_AT + J3 + 8);
	bk_regs_set(&r, 7, STACK_AT);
	bk_regs_set(&r, 12, 0x1234);
	bk_regs_set(&r, 13, 0x5678);
	CHECK_INT(bk_cursor_init(c, s, &r), 0, "bk_cursor_init");
}

static void names_and_unwinding(void)
{
	write_jitdump(false);
	save(jd, jd_len);
	struct bk_space *s = new_space();
	struct bk_jitdump_stats st = { .size = sizeof(st) };
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &st), 0, "add");
	CHECK_INT(st.loads, 3, "loads");
	CHECK_INT(st.debug_info, 1, "debug info records");
	CHECK_INT(st.unwinding_info, 3, "loads with an .eh_frame");
	CHECK_INT(st.registered, 3, "registered");
	CHECK_INT(st.unwinding_failed, 0, "failed");
	CHECK_INT(st.pid, 4242, "pid");
	CHECK_INT(st.truncated, 0, "truncated");

	struct bk_symbol sym[4];
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J3 + 8, sym, 4), 1, "J3 named");
	CHECK_STR(sym[0].function, "jit_J3", "J3's name");
	CHECK_U64(sym[0].offset, 8, "J3's offset");
	CHECK_STR(sym[0].file, "gen.js", "J3's file");
	CHECK_INT(sym[0].line, 10, "J3's first line");
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J3 + 23, sym, 4), 1, "J3 named further on");
	CHECK_INT(sym[0].line, 12, "J3's second line");
	CHECK_INT(sym[0].column, 5, "its column");
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J2 + 3, sym, 4), 1, "J2 named");
	CHECK_STR(sym[0].function, "jit_J2", "J2's name");
	CHECK(sym[0].file == NULL && sym[0].line == 0, "J2 has no line");
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J2 + J2_LEN, sym, 4), 0, "past J2: nothing");

	/* The code bytes, from the loads. */
	uint8_t got[J3_LEN];
	CHECK(uw_jitdump_code(s, CODE_AT + J3, got, J3_LEN) == 0 && !memcmp(got, code + J3, J3_LEN),
	      "J3's code bytes from its load");
	CHECK(uw_jitdump_code(s, CODE_AT + J2 + 2, got, 4) == 0 && !memcmp(got, code + J2 + 2, 4),
	      "bytes inside J2");
	CHECK_INT(uw_jitdump_code(s, CODE_AT + J2 + 2, got, J2_LEN), BK_E_MEMORY, "past J2's end");
	CHECK_INT(uw_jitdump_code(s, CODE_AT + J3 + J3_LEN, got, 1), BK_E_MEMORY, "no code there");

	lay_out_stack();
	struct bk_cursor c;
	start(&c, s);
	CHECK_INT(bk_cursor_step(&c), 1, "J3 -> J2");
	CHECK_U64(bk_cursor_pc(&c), CODE_AT + RA_J2, "J2's PC");
	CHECK_INT(bk_cursor_how(&c), BK_HOW_CFI, "by CFI");
	uint64_t v = 0;
	CHECK(bk_cursor_reg(&c, 12, &v) && v == SAVED_R12, "r12 from J3's save: 0x%llx",
	      (unsigned long long)v);
	CHECK(bk_cursor_reg(&c, 13, &v) && v == SAVED_R13, "r13 from J3's save");
	CHECK_INT(bk_cursor_step(&c), 1, "J2 -> J1");
	CHECK_U64(bk_cursor_pc(&c), CODE_AT + RA_J1, "J1's PC");
	CHECK_INT(bk_cursor_how(&c), BK_HOW_CFI, "by CFI");
	CHECK_INT(bk_cursor_step(&c), 1, "J1 -> its caller");
	CHECK_U64(bk_cursor_pc(&c), 0, "the caller: PC 0 (none)");
	CHECK(bk_cursor_reg(&c, 3, &v) && v == SAVED_RBX, "rbx from J1's save");
	CHECK_INT(bk_cursor_step(&c), 0, "the end");
	bk_space_destroy(s);

	/* Without the jitdump, no CFI describes J3: no CFI step. */
	s = new_space();
	start(&c, s);
	int r = bk_cursor_step(&c);
	CHECK(r <= 0 || bk_cursor_how(&c) != BK_HOW_CFI, "without: no CFI step (%d)", r);
	bk_space_destroy(s);
}

static void views_in_time(void)
{
	write_jitdump(true);
	save(jd, jd_len);
	struct bk_space *s = new_space();
	struct bk_jitdump_stats st = { .size = sizeof(st) };
	CHECK_INT(bk_space_add_jitdump(s, path, 300, &st), 0, "add until 300");
	CHECK_INT(st.loads, 4, "loads");
	CHECK_INT(st.moves, 1, "moves");
	CHECK_INT(st.applied, 3, "applied until 300");
	struct bk_symbol sym[2];
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J2, sym, 2), 1, "J2 at 300");
	CHECK_STR(sym[0].function, "jit_J2", "the first J2");
	CHECK_INT(bk_space_symbolize(s, MOVED_AT + 5, sym, 2), 0, "not moved yet");
	lay_out_stack();
	struct bk_cursor c;
	start(&c, s);
	CHECK_INT(bk_cursor_step(&c), 1, "J3 -> J2");
	CHECK_INT(bk_cursor_step(&c), 1, "J2 -> J1, by J2's .eh_frame");
	CHECK_U64(bk_cursor_pc(&c), CODE_AT + RA_J1, "J1's PC");
	CHECK_INT(bk_cursor_how(&c), BK_HOW_CFI, "by CFI");

	bk_space_jitdump_until(s, 450);
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J2, sym, 2), 1, "J2 at 450");
	CHECK_STR(sym[0].function, "jit_J2_v2", "the second J2");
	start(&c, s);
	CHECK_INT(bk_cursor_step(&c), 1, "J3 -> J2");
	int r = bk_cursor_step(&c);
	CHECK(r <= 0 || bk_cursor_how(&c) != BK_HOW_CFI,
	      "J2's .eh_frame went with the code it described (%d, how %d)", r, bk_cursor_how(&c));
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J3, sym, 2), 1, "J3 still there");

	bk_space_jitdump_until(s, UINT64_MAX);
	CHECK_INT(bk_space_symbolize(s, MOVED_AT + 5, sym, 2), 1, "J1 moved");
	CHECK_STR(sym[0].function, "jit_J1", "named as loaded");
	CHECK_U64(sym[0].offset, 5, "its offset at the new place");
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J1 + 5, sym, 2), 1, "the old place stays");
	bk_space_jitdump_until(s, 10); /* never backwards */
	CHECK_INT(bk_space_symbolize(s, MOVED_AT + 5, sym, 2), 1, "a view does not go back");
	bk_space_destroy(s);
}

static void refused(void)
{
	struct bk_space *s = new_space();
	struct bk_jitdump_stats st = { .size = sizeof(st) };
	write_jitdump(false);
	uint8_t keep[4];
	memcpy(keep, jd, 4);
	jd[0] = 0x4a; jd[1] = 0x69; jd[2] = 0x54; jd[3] = 0x44; /* 0x4454694A: big-endian */
	save(jd, jd_len);
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &st), BK_E_UNSUPPORTED, "byte-swapped");
	memcpy(jd, keep, 4);
	jd[4] = 3;
	save(jd, jd_len);
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &st), BK_E_UNSUPPORTED, "version 3");
	jd[4] = 1;
	jd[12] = 183; /* EM_AARCH64 */
	save(jd, jd_len);
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &st), BK_E_UNSUPPORTED,
		  "another machine");
	jd[12] = 62;
	save(jd, 20);
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &st), BK_E_CORRUPT, "a cut header");
	CHECK_INT(bk_space_add_jitdump(s, "/nonexistent/jit-1.dump", UINT64_MAX, &st), BK_E_IO,
		  "no file");
	CHECK_INT(bk_space_add_jitdump(s, "/tmp", UINT64_MAX, &st), BK_E_IO, "a directory");
	CHECK_INT(bk_space_add_jitdump(NULL, path, UINT64_MAX, &st), BK_E_INVAL, "no space");
	struct bk_jitdump_stats small = { .size = 8 };
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &small), BK_E_INVAL, "stats too small");
	bk_space_destroy(s);

	struct bk_space *local = NULL;
	CHECK_INT(bk_space_create_local(&local), 0, "a local space");
	save(jd, jd_len);
	CHECK_INT(bk_space_add_jitdump(local, path, UINT64_MAX, NULL), BK_E_UNSUPPORTED,
		  "a local space");
	bk_space_destroy(local);

	/* An .eh_frame that describes code elsewhere is not used. */
	header(0x4A695444, 1, 62);
	unwinding(100, CODE_AT + J1, J1_LEN, cfa_j1, sizeof(cfa_j1), CODE_AT + J2);
	load(100, CODE_AT + J1, code + J1, J1_LEN, "jit_J1");
	save(jd, jd_len);
	s = new_space();
	CHECK_INT(bk_space_add_jitdump(s, path, UINT64_MAX, &st), 0, "add");
	CHECK_INT(st.registered, 0, "not registered");
	CHECK_INT(st.unwinding_failed, 1, "counted");
	CHECK_INT(st.first_error, BK_E_NOT_FOUND, "why");
	struct bk_symbol sym;
	CHECK_INT(bk_space_symbolize(s, CODE_AT + J1, &sym, 1), 1, "still named");
	bk_space_destroy(s);
}

/* The parser itself, from memory: an unknown record kind skipped, a CLOSE
 * ending the reading, a record cut by the end (being written). */
static void parser(void)
{
	write_jitdump(true);
	size_t full = jd_len;
	prefix(77, 24, 600); /* unknown: skipped by its size */
	put_u64(0);
	prefix(3, 16, 700); /* CLOSE */
	load(800, CODE_AT, code, 8, "after close");
	struct ldr_jd_mem m = { jd, jd_len };
	struct ldr_jd_source src = ldr_jd_memory(&m);
	struct ldr_jitdump *d = NULL;
	CHECK_INT(ldr_jitdump_read(&src, &d), 0, "read");
	if (d) {
		CHECK_INT(d->nloads, 4, "loads before CLOSE");
		CHECK_INT(d->skipped, 1, "unknown kind");
		CHECK(d->closed && !d->truncated && !d->error, "closed");
		CHECK_INT(d->ncode, 5, "4 loads, 1 move");
		CHECK_U64(d->code[4].start, MOVED_AT, "the move's place");
		CHECK_U64(d->code[4].eh_addr, MOVED_AT + 24, "its .eh_frame moved with it");
		CHECK_U64(d->code[2].eh_addr, CODE_AT + J3 + 40, "J3's: after 33 bytes, to 8");
		CHECK_INT(d->code[2].nlines, 2, "J3's lines");
		CHECK(d->code[0].has_code && memcmp(jd + d->code[0].code_off, code + J1, J1_LEN) == 0,
		      "J1's code bytes where the load says");
		CHECK(d->code[4].has_code && d->code[4].code_off == d->code[0].code_off,
		      "the moved code: the load's bytes");
		ldr_jitdump_free(d);
	}
	m.len = full - 3; /* the last record cut */
	src = ldr_jd_memory(&m);
	CHECK_INT(ldr_jitdump_read(&src, &d), 0, "read a cut file");
	if (d) {
		CHECK(d->truncated && !d->error, "truncated, no error");
		CHECK_INT(d->nmoves, 0, "the cut move not taken");
		ldr_jitdump_free(d);
	}
	/* Debug records that cannot be read as written: a file name that is
	 * not text (node 20 writes names a freed allocation overwrote), and
	 * entries that stop short of the record's end. Their lines are
	 * dropped; the loads after them are read. */
	header(0x4A695444, 1, 62);
	static const struct line bad_name[] = { { CODE_AT + J1, 3, 1, "\xcb\x1f\x1a" "A" } };
	debug_info(100, CODE_AT + J1, bad_name, 1);
	load(100, CODE_AT + J1, code + J1, J1_LEN, "jit_J1");
	size_t at = jd_len;
	debug_info(200, CODE_AT + J2, j3_lines, 2);
	memcpy(jd + at + 24, &(uint64_t){ 1 }, 8); /* says 1 entry, holds 2 */
	load(200, CODE_AT + J2, code + J2, J2_LEN, "jit_J2");
	debug_info(300, CODE_AT + J3, j3_lines, 2);
	load(300, CODE_AT + J3, code + J3, J3_LEN, "jit_J3");
	m.len = jd_len;
	src = ldr_jd_memory(&m);
	CHECK_INT(ldr_jitdump_read(&src, &d), 0, "read with bad debug records");
	if (d) {
		CHECK_INT(d->nloads, 3, "every load read");
		CHECK_INT(d->debug_dropped, 2, "two debug records dropped");
		CHECK_INT(d->ndebug, 1, "one used");
		CHECK(d->code[0].nlines == 0 && d->code[1].nlines == 0 && d->code[2].nlines == 2,
		      "lines only for J3");
		CHECK(!d->error, "no error");
		ldr_jitdump_free(d);
	}

	/* A record whose size is below its prefix: the reading ends there. */
	write_jitdump(false);
	jd[40 + 4] = 8;
	m.len = jd_len;
	src = ldr_jd_memory(&m);
	CHECK_INT(ldr_jitdump_read(&src, &d), BK_E_CORRUPT, "a first record that cannot be framed");
}

/* Every length, and damaged bytes: no crash, no leak, no hang. */
static void hostile(void)
{
	write_jitdump(true);
	static uint8_t orig[sizeof(jd)];
	size_t len = jd_len;
	memcpy(orig, jd, len);
	unsigned ok = 0, errors = 0;
	for (size_t n = 0; n <= len; n++) {
		struct ldr_jd_mem m = { orig, n };
		struct ldr_jd_source src = ldr_jd_memory(&m);
		struct ldr_jitdump *d = NULL;
		int r = ldr_jitdump_read(&src, &d);
		if (r == 0) {
			ok++;
			CHECK(ldr_jitdump_index(d) == 0, "index at %zu", n);
			(void)ldr_jitdump_at(d, CODE_AT + J2, d->ncode);
			ldr_jitdump_free(d);
		} else {
			errors++;
		}
	}
	CHECK(ok > len - 41 && errors <= 41, "prefixes: %u read, %u refused", ok, errors);
	srand(7);
	unsigned added = 0;
	for (int round = 0; round < 300; round++) {
		memcpy(jd, orig, len);
		for (int k = 0; k < 1 + round % 8; k++)
			jd[40 + (size_t)rand() % (len - 40)] = (uint8_t)rand();
		save(jd, len);
		struct bk_space *s = new_space();
		struct bk_jitdump_stats st = { .size = sizeof(st) };
		if (bk_space_add_jitdump(s, path, UINT64_MAX, &st) == 0) {
			added++;
			struct bk_symbol sym[2];
			for (uint64_t a = CODE_AT; a < CODE_AT + CODE_LEN; a += 7)
				(void)bk_space_symbolize(s, a, sym, 2);
			lay_out_stack();
			struct bk_cursor c;
			start(&c, s);
			for (int i = 0; i < 8 && bk_cursor_step(&c) == 1; i++)
				;
		}
		bk_space_destroy(s);
	}
	CHECK(added > 0, "damaged files read: %u of 300", added);
}

int main(void)
{
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	close(fd);
	/* The code bytes as jit_code.h writes them for CODE_AT (its calls are
	 * relative to where it is written: written in place, then copied). */
	write_code(code);
	names_and_unwinding();
	views_in_time();
	refused();
	parser();
	hostile();
	unlink(path);
	return check_summary();
}
