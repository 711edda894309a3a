/* The validator's GDB remote protocol parser (src/validate/val_rsp.c), one
 * row per case: framing (checksums, escapes, run lengths, acks, junk, a
 * packet cut anywhere), stop replies, hex, GDB's signal numbers, target
 * descriptions and the svr4 library list, each with the exact result or
 * the exact error. */
#include <signal.h>
#include <stdlib.h>

#include "check.h"
#include "validate/val.h"

static struct val_rsp_parser p;

/* Feed S (LEN bytes) STEP bytes at a time; the items in order as letters
 * (P packet, B bad, + ack, - nack, j junk) into OUT, the last packet's
 * payload into PKT. */
static void feed(const char *s, size_t len, size_t step, char *out, char *pkt)
{
	val_rsp_init(&p);
	size_t o = 0;
	pkt[0] = 0;
	for (size_t at = 0; at < len;) {
		size_t n = len - at < step ? len - at : step, off = 0;
		while (off < n) {
			enum val_rsp_item it;
			off += val_rsp_feed(&p, (const uint8_t *)s + at + off, n - off, &it);
			static const char letter[] = { 0, 'P', 'B', '+', '-', 'j' };
			if (it != VAL_RSP_NONE)
				out[o++] = letter[it];
			if (it == VAL_RSP_PACKET)
				memcpy(pkt, p.data, p.len + 1);
		}
		at += n;
	}
	out[o] = 0;
}

static void test_framing(void)
{
	static const struct {
		const char *in, *items, *last;
	} rows[] = {
		{ "$OK#9a", "P", "OK" },
		{ "+$OK#9a-", "+P-", "OK" },
		{ "$OK#9b", "B", "" },                 /* checksum off by one */
		{ "$OK#zz", "B", "" },                 /* not hex */
		{ "$#00", "P", "" },                   /* empty packet */
		{ "$0* #7a", "P", "0000" },            /* ' ' = 32: 3 more */
		{ "$a}]b#9d", "P", "a}b" },            /* }] is '}' escaped */
		{ "$}\x03#80", "P", "#" },             /* } then 0x03: '#' */
		{ "$*!#4b", "B", "" },                 /* a run length with nothing before */
		{ "xy$OK#9a", "jjP", "OK" },
		{ "$ab$OK#9a", "P", "OK" },            /* a '$' restarts the packet */
	};
	char items[32], pkt[64], ctx[80];
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		for (size_t step = 1; step <= 8; step += 7) {
			snprintf(ctx, sizeof(ctx), "framing row %zu, %zu-byte reads", i, step);
			feed(rows[i].in, strlen(rows[i].in), step, items, pkt);
			CHECK_STR(items, rows[i].items, ctx);
			CHECK_STR(pkt, rows[i].last, ctx);
		}
	}
	/* Longer than VAL_RSP_MAX: discarded, and the next one still parses. */
	size_t big = VAL_RSP_MAX + 10;
	char *s = malloc(big + 16);
	s[0] = '$';
	memset(s + 1, 'a', big);
	memcpy(s + 1 + big, "#00$OK#9a", 9);
	feed(s, big + 10, 4096, items, pkt);
	CHECK_STR(items, "BP", "over VAL_RSP_MAX");
	free(s);
	/* Framing escapes what must be escaped, and parses back. */
	char framed[64];
	size_t n = val_rsp_frame("a$b#c}d*e", 9, framed, sizeof(framed));
	CHECK_INT(n, 1 + 9 + 4 + 3, "frame length");
	feed(framed, n, 3, items, pkt);
	CHECK_STR(items, "P", "framed");
	CHECK_STR(pkt, "a$b#c}d*e", "framed payload");
	CHECK_INT(val_rsp_frame("abc", 3, framed, 6), 0, "frame too long for the buffer");
}

static void test_stop(void)
{
	struct val_rsp_stop st;
	CHECK_INT(val_rsp_parse_stop("T05thread:p1a.1b;swbreak:;", 26, &st), 0, "T");
	CHECK_INT(st.kind, 'T', "T kind");
	CHECK_INT(st.sig, 5, "T sig");
	CHECK(st.have_thread && st.pid == 0x1a && st.tid == 0x1b, "T thread %llx.%llx",
	      (unsigned long long)st.pid, (unsigned long long)st.tid);
	CHECK(st.swbreak, "swbreak");
	CHECK_INT(val_rsp_parse_stop("T0b06:00112233;thread:02;core:1;", 32, &st), 0, "T regs");
	CHECK(st.sig == 11 && st.have_thread && st.pid == 0 && st.tid == 2, "T0b thread");
	CHECK_INT(val_rsp_parse_stop("S1e", 3, &st), 0, "S");
	CHECK(st.kind == 'T' && st.sig == 0x1e, "S as T");
	CHECK_INT(val_rsp_parse_stop("W2a;process:10", 14, &st), 0, "W");
	CHECK(st.kind == 'W' && st.code == 42, "W code");
	CHECK_INT(val_rsp_parse_stop("X09", 3, &st), 0, "X");
	CHECK(st.kind == 'X' && st.sig == 9, "X sig");
	CHECK_INT(val_rsp_parse_stop("O4869", 5, &st), 0, "O");
	CHECK_INT(st.kind, 'O', "O kind");
	static const char *const bad[] = { "", "T", "T5", "Tzz", "Tthread", "T05thread:;",
					   "T05thread:p1;", "W", "W123", "Wzz", "OK", "E01", "S05x" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		CHECK_INT(val_rsp_parse_stop(bad[i], strlen(bad[i]), &st), BK_E_CORRUPT, bad[i]);
}

static void test_hex_and_signals(void)
{
	uint8_t b[4];
	CHECK_INT(val_rsp_unhex("0aFf10", 6, b, 4), 3, "unhex");
	CHECK(b[0] == 0x0a && b[1] == 0xff && b[2] == 0x10, "unhex bytes");
	CHECK_INT(val_rsp_unhex("0a0", 3, b, 4), -1, "odd length");
	CHECK_INT(val_rsp_unhex("0g", 2, b, 4), -1, "not hex");
	CHECK_INT(val_rsp_unhex("0102030405", 10, b, 4), 4, "capped at max");
	const char *s = "1fz", *e = s + 3;
	uint64_t v;
	CHECK(val_rsp_hexnum(&s, e, &v) && v == 0x1f && *s == 'z', "hexnum");
	s = "12345678901234567";
	CHECK(!val_rsp_hexnum(&s, s + 17, &v), "hexnum over 64 bits");
	s = "z";
	CHECK(!val_rsp_hexnum(&s, s + 1, &v), "no digits");
	static const int map[][2] = { { 5, SIGTRAP }, { 11, SIGSEGV }, { 14, SIGALRM },
				      { 30, SIGUSR1 }, { 31, SIGUSR2 }, { 20, SIGCHLD },
				      { 10, SIGBUS }, { 46, 34 } };
	for (size_t i = 0; i < sizeof(map) / sizeof(*map); i++) {
		CHECK_INT(val_rsp_gdb_to_linux_sig(map[i][0]), map[i][1], "gdb -> linux");
		CHECK_INT(val_rsp_linux_to_gdb_sig(map[i][1]), map[i][0], "linux -> gdb");
	}
	CHECK_INT(val_rsp_gdb_to_linux_sig(7), 0, "SIGEMT has no Linux number");
}

static void test_tdesc(void)
{
	static struct val_rsp_tdesc td;
	const char *top = "<?xml version=\"1.0\"?><target><architecture>aarch64</architecture>"
			  "<xi:include href=\"core.xml\"/><!-- <reg name=\"no\" bitsize=\"8\"/> -->"
			  "</target>";
	memset(&td, 0, sizeof(td));
	CHECK_INT(val_rsp_tdesc_parse(top, strlen(top), &td), 0, "top");
	CHECK_STR(td.arch, "aarch64", "architecture");
	CHECK_INT(td.nincludes, 1, "includes");
	CHECK_STR(td.include[0], "core.xml", "include");
	CHECK_INT(td.nregs, 0, "the commented reg is not one");
	const char *core = "<feature><reg name=\"x0\" bitsize=\"64\"/><reg name='x1' bitsize='64'/>"
			   "<reg name=\"pc\" bitsize=\"64\" regnum=\"32\" type=\"code_ptr\"/>"
			   "<reg name=\"cpsr\" bitsize=\"32\"/></feature>";
	CHECK_INT(val_rsp_tdesc_parse(core, strlen(core), &td), 0, "core");
	CHECK_INT(td.nregs, 4, "core regs");
	CHECK(td.reg[1].regnum == 1 && !strcmp(td.reg[1].name, "x1") && td.reg[1].bits == 64,
	      "x1: %u %s %u", td.reg[1].regnum, td.reg[1].name, td.reg[1].bits);
	CHECK(td.reg[2].regnum == 32 && td.reg[3].regnum == 33 && td.reg[3].bits == 32,
	      "numbering goes on from an explicit regnum");
	static const char *const bad[] = { "<reg bitsize=\"64\"/>", "<reg name=\"a\"/>",
					   "<reg name=\"a\" bitsize=\"7\"/>",
					   "<reg name=\"a\" bitsize=\"64\"", "<reg name=\"a\" bitsize=\"x\"/>" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		memset(&td, 0, sizeof(td));
		CHECK_INT(val_rsp_tdesc_parse(bad[i], strlen(bad[i]), &td), BK_E_CORRUPT, bad[i]);
	}
}

struct libs {
	unsigned n;
	char name[2][64];
	uint64_t l_addr[2];
};

static void on_lib(void *ctx, const char *name, uint64_t lm, uint64_t l_addr, uint64_t l_ld)
{
	struct libs *l = ctx;
	(void)lm;
	(void)l_ld;
	if (l->n < 2) {
		snprintf(l->name[l->n], sizeof(l->name[0]), "%s", name);
		l->l_addr[l->n] = l_addr;
	}
	l->n++;
}

static void test_svr4(void)
{
	const char *x = "<library-list-svr4 version=\"1.0\" main-lm=\"0x4000\">"
			"<library name=\"/lib/a &amp; b.so\" lm=\"0x10\" l_addr=\"0x7f00\" l_ld=\"0x7f80\"/>"
			"<library name=\"/lib/c.so\" lm=\"0x20\" l_addr=\"0\" l_ld=\"0x100\" lmid=\"0x0\"/>"
			"</library-list-svr4>";
	struct libs l = { 0 };
	uint64_t main_lm;
	CHECK_INT(val_rsp_svr4_parse(x, strlen(x), &main_lm, on_lib, &l), 0, "svr4");
	CHECK_U64(main_lm, 0x4000, "main-lm");
	CHECK_INT(l.n, 2, "libraries");
	CHECK_STR(l.name[0], "/lib/a & b.so", "entity decoded");
	CHECK_U64(l.l_addr[0], 0x7f00, "l_addr");
	const char *bad = "<library-list-svr4><library name=\"x\" lm=\"0x1\"/></library-list-svr4>";
	CHECK_INT(val_rsp_svr4_parse(bad, strlen(bad), &main_lm, on_lib, &l), BK_E_CORRUPT,
		  "missing l_addr");
	CHECK_INT(val_rsp_svr4_parse("<x/>", 4, &main_lm, on_lib, &l), BK_E_CORRUPT, "not a list");
	const char *ent = "<library-list-svr4><library name=\"&bogus;\" lm=\"1\" l_addr=\"1\" "
			  "l_ld=\"1\"/></library-list-svr4>";
	CHECK_INT(val_rsp_svr4_parse(ent, strlen(ent), &main_lm, on_lib, &l), BK_E_CORRUPT,
		  "unknown entity");
}

int main(void)
{
	test_framing();
	test_stop();
	test_hex_and_signals();
	test_tdesc();
	test_svr4();
	return check_summary();
}
