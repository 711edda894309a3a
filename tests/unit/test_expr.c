/* Unit tests for src/expr: the decoder, the CFI expression VM and the
 * printer. Table-driven: one row per DW_OP the VM accepts with its exact
 * result, one row per error with its exact code. */
#include "check.h"

#include <stdlib.h>

#include "arch/arch.h"
#include "base/dwarf.h"
#include "expr/expr.h"

/* A byte string and its length, for table rows. */
#define E(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })
/* An empty expression (a valid pointer, length 0). */
static const uint8_t no_ops[1];

/* Fake target: 64 readable bytes at MEM_BASE, byte i = 0x80 + i. */
#define MEM_BASE 0x8000u
static uint8_t mem_bytes[64];

static int mem_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > sizeof(mem_bytes) ||
	    len > sizeof(mem_bytes) - (addr - MEM_BASE))
		return BK_E_MEMORY;
	memcpy(dst, mem_bytes + (addr - MEM_BASE), len);
	return 0;
}

/* Registers: regno N holds 0x10000 + N * 0x100; 17 fails with an unusual
 * code (to prove the VM passes it on); 40 and above do not exist. */
#define REG(n) (0x10000u + (uint64_t)(n) * 0x100u)
static int reg_read(void *ctx, unsigned regno, uint64_t *value)
{
	(void)ctx;
	if (regno == 17)
		return BK_E_NOT_FOUND;
	if (regno >= 40)
		return BK_E_BAD_REG;
	*value = REG(regno);
	return 0;
}

static struct expr_env make_env(uint8_t addr_size)
{
	struct expr_env env = {
		.addr_size = addr_size,
		.read_reg = reg_read,
		.reg_ctx = NULL,
		.mem = { mem_read, NULL },
	};
	return env;
}

/* ---- VM: one row per operation, exact result or exact error ------------- */

struct eval_row {
	const char *name;
	const uint8_t *ops;
	size_t len;
	uint8_t addr_size;
	int has_initial;
	uint64_t initial;
	int err;
	uint64_t want;
};

#define OK(name, bytes, want) { name, E bytes, 8, 0, 0, 0, (uint64_t)(want) }
#define OK4(name, bytes, want) { name, E bytes, 4, 0, 0, 0, (uint64_t)(want) }
#define FAIL(name, bytes, err) { name, E bytes, 8, 0, 0, err, 0 }
#define FAIL4(name, bytes, err) { name, E bytes, 4, 0, 0, err, 0 }
#define INIT(name, bytes, addr_size, init, want) \
	{ name, E bytes, addr_size, 1, init, 0, (uint64_t)(want) }

#define U16(v) (uint8_t)((v) & 0xff), (uint8_t)(((v) >> 8) & 0xff)
#define LIT(n) (DW_OP_lit0 + (n))
#define BREG(n) (DW_OP_breg0 + (n))

static const struct eval_row eval_rows[] = {
	/* §2.5.1.1 Literal encodings. */
	OK("lit0", (LIT(0)), 0),
	OK("lit31", (LIT(31)), 31),
	OK("addr", (DW_OP_addr, 0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11), 0x1122334455667788),
	OK("const1u", (DW_OP_const1u, 0xff), 255),
	OK("const1s", (DW_OP_const1s, 0xff), -1),
	OK("const2u", (DW_OP_const2u, 0xfe, 0xff), 0xfffe),
	OK("const2s", (DW_OP_const2s, 0x00, 0x80), -32768),
	OK("const4u", (DW_OP_const4u, 0x78, 0x56, 0x34, 0xf2), 0xf2345678),
	OK("const4s", (DW_OP_const4s, 0xfe, 0xff, 0xff, 0xff), -2),
	OK("const8u", (DW_OP_const8u, 1, 2, 3, 4, 5, 6, 7, 0x88), 0x8807060504030201),
	OK("const8s", (DW_OP_const8s, 0, 0, 0, 0, 0, 0, 0, 0x80), INT64_MIN),
	OK("constu", (DW_OP_constu, 0xe5, 0x8e, 0x26), 624485),
	OK("constu max", (DW_OP_constu, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
	   UINT64_MAX),
	OK("consts", (DW_OP_consts, 0xc0, 0xbb, 0x78), -123456),

	/* §2.5.1.2 Register values. */
	OK("breg0 +8", (BREG(0), 0x08), REG(0) + 8),
	OK("breg7 -16", (BREG(7), 0x70), REG(7) - 16),
	OK("breg31 +0", (BREG(31), 0x00), REG(31)),
	OK("bregx 16 +1000", (DW_OP_bregx, 16, 0xe8, 0x07), REG(16) + 1000),
	OK("bregx 39 -1000", (DW_OP_bregx, 39, 0x98, 0x78), REG(39) - 1000),
	OK("breg0 wraps", (BREG(0), 0xff, 0xff, 0x7b), UINT64_MAX),

	/* §2.5.1.3 Stack operations. */
	OK("dup", (LIT(3), DW_OP_dup, DW_OP_mul), 9),
	OK("drop", (LIT(1), LIT(2), DW_OP_drop), 1),
	OK("over", (LIT(7), LIT(2), DW_OP_over), 7),
	OK("over keeps order", (LIT(7), LIT(2), DW_OP_over, DW_OP_drop), 2),
	OK("pick 0", (LIT(1), LIT(2), LIT(3), DW_OP_pick, 0), 3),
	OK("pick 2", (LIT(1), LIT(2), LIT(3), DW_OP_pick, 2), 1),
	OK("swap", (LIT(7), LIT(2), DW_OP_swap), 7),
	OK("swap minus", (LIT(7), LIT(2), DW_OP_swap, DW_OP_minus), -5),
	/* [1 2 3] -> [2 3 1]: the top becomes second, the third the top. */
	OK("rot top", (LIT(1), LIT(2), LIT(3), DW_OP_rot), 1),
	OK("rot second", (LIT(1), LIT(2), LIT(3), DW_OP_rot, DW_OP_drop), 3),
	OK("rot third", (LIT(1), LIT(2), LIT(3), DW_OP_rot, DW_OP_drop, DW_OP_drop), 2),
	OK("deref", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref), 0x8786858483828180),
	OK("deref_size 1", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref_size, 1), 0x80),
	OK("deref_size 2", (DW_OP_const2u, U16(MEM_BASE + 1), DW_OP_deref_size, 2), 0x8281),
	OK("deref_size 4", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref_size, 4), 0x83828180),
	OK("deref_size 8", (DW_OP_const2u, U16(MEM_BASE + 56), DW_OP_deref_size, 8),
	   0xbfbebdbcbbbab9b8),

	/* §2.5.1.4 Arithmetic and logical operations. */
	OK("abs negative", (DW_OP_consts, 0x7b, DW_OP_abs), 5),
	OK("abs positive", (LIT(5), DW_OP_abs), 5),
	OK("abs INT64_MIN", (DW_OP_const8s, 0, 0, 0, 0, 0, 0, 0, 0x80, DW_OP_abs), INT64_MIN),
	OK("and", (LIT(12), LIT(10), DW_OP_and), 8),
	OK("div", (LIT(21), LIT(4), DW_OP_div), 5),
	OK("div signed", (DW_OP_consts, 0x79, LIT(2), DW_OP_div), -3),
	OK("div by negative", (LIT(7), DW_OP_consts, 0x7e, DW_OP_div), -3),
	OK("div INT64_MIN / -1",
	   (DW_OP_const8s, 0, 0, 0, 0, 0, 0, 0, 0x80, DW_OP_consts, 0x7f, DW_OP_div), INT64_MIN),
	OK("minus", (LIT(10), LIT(3), DW_OP_minus), 7),
	OK("mod", (LIT(10), LIT(3), DW_OP_mod), 1),
	OK("mod unsigned", (DW_OP_consts, 0x7f, LIT(10), DW_OP_mod), UINT64_MAX % 10),
	OK("mul", (LIT(6), LIT(7), DW_OP_mul), 42),
	OK("mul wraps", (DW_OP_consts, 0x7f, DW_OP_consts, 0x7f, DW_OP_mul), 1),
	OK("neg", (LIT(5), DW_OP_neg), -5),
	OK("neg INT64_MIN", (DW_OP_const8s, 0, 0, 0, 0, 0, 0, 0, 0x80, DW_OP_neg), INT64_MIN),
	OK("not", (LIT(0), DW_OP_not), UINT64_MAX),
	OK("or", (LIT(12), LIT(3), DW_OP_or), 15),
	OK("plus", (LIT(2), LIT(3), DW_OP_plus), 5),
	OK("plus wraps", (DW_OP_consts, 0x7f, LIT(2), DW_OP_plus), 1),
	OK("plus_uconst", (LIT(2), DW_OP_plus_uconst, 0xac, 0x02), 302),
	OK("shl", (LIT(1), LIT(4), DW_OP_shl), 16),
	OK("shl 63", (LIT(1), DW_OP_const1u, 63, DW_OP_shl), 1ull << 63),
	OK("shl 64", (LIT(1), DW_OP_const1u, 64, DW_OP_shl), 0),
	OK("shl 200", (LIT(1), DW_OP_const1u, 200, DW_OP_shl), 0),
	OK("shl huge", (LIT(1), DW_OP_consts, 0x7f, DW_OP_shl), 0),
	OK("shr", (DW_OP_consts, 0x7f, LIT(4), DW_OP_shr), UINT64_MAX >> 4),
	OK("shr 64", (DW_OP_consts, 0x7f, DW_OP_const1u, 64, DW_OP_shr), 0),
	OK("shr 100", (DW_OP_consts, 0x7f, DW_OP_const1u, 100, DW_OP_shr), 0),
	OK("shra negative", (DW_OP_consts, 0x70, LIT(2), DW_OP_shra), -4),
	OK("shra positive", (LIT(16), LIT(2), DW_OP_shra), 4),
	OK("shra 63", (DW_OP_const8s, 0, 0, 0, 0, 0, 0, 0, 0x80, DW_OP_const1u, 63, DW_OP_shra), -1),
	OK("shra 64 negative", (DW_OP_consts, 0x70, DW_OP_const1u, 64, DW_OP_shra), -1),
	OK("shra 100 negative", (DW_OP_consts, 0x70, DW_OP_const1u, 100, DW_OP_shra), -1),
	OK("shra 64 positive", (LIT(16), DW_OP_const1u, 64, DW_OP_shra), 0),
	OK("shra huge positive", (LIT(16), DW_OP_consts, 0x7f, DW_OP_shra), 0),
	OK("xor", (LIT(12), LIT(10), DW_OP_xor), 6),

	/* §2.5.1.5 Control flow: comparisons are signed. */
	OK("eq true", (LIT(3), LIT(3), DW_OP_eq), 1),
	OK("eq false", (LIT(3), LIT(4), DW_OP_eq), 0),
	OK("ge true", (LIT(4), LIT(4), DW_OP_ge), 1),
	OK("ge false", (LIT(3), LIT(4), DW_OP_ge), 0),
	OK("ge signed", (DW_OP_consts, 0x7f, LIT(1), DW_OP_ge), 0),
	OK("gt true", (LIT(5), LIT(4), DW_OP_gt), 1),
	OK("gt false", (LIT(4), LIT(4), DW_OP_gt), 0),
	OK("gt signed", (LIT(1), DW_OP_consts, 0x7f, DW_OP_gt), 1),
	OK("le true", (LIT(4), LIT(4), DW_OP_le), 1),
	OK("le false", (LIT(5), LIT(4), DW_OP_le), 0),
	OK("le signed", (LIT(1), DW_OP_consts, 0x7f, DW_OP_le), 0),
	OK("eq all bits", (DW_OP_consts, 0x7f, DW_OP_const8u, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			   0xff, 0xff, DW_OP_eq), 1),
	OK("lt true", (LIT(3), LIT(4), DW_OP_lt), 1),
	OK("lt false", (LIT(4), LIT(4), DW_OP_lt), 0),
	OK("lt signed", (DW_OP_consts, 0x7f, LIT(1), DW_OP_lt), 1),
	OK("ne true", (LIT(3), LIT(4), DW_OP_ne), 1),
	OK("ne false", (LIT(4), LIT(4), DW_OP_ne), 0),
	/* skip at 1, ends at 4, +1 lands on lit2 at 5. */
	OK("skip forward", (LIT(7), DW_OP_skip, U16(1), LIT(1), LIT(2)), 2),
	OK("skip 0", (LIT(7), DW_OP_skip, U16(0), LIT(1)), 1),
	OK("skip to end", (LIT(7), DW_OP_skip, U16(1), LIT(1)), 7),
	OK("bra taken to end", (LIT(7), LIT(1), DW_OP_bra, U16(1), LIT(2)), 7),
	OK("bra not taken", (LIT(7), LIT(0), DW_OP_bra, U16(1), LIT(2)), 2),
	OK("bra taken forward", (LIT(1), DW_OP_bra, U16(1), LIT(2), LIT(3)), 3),
	/* acc = 3 + 2 + 1 with a backward bra: loop body starts at 2, bra ends
	 * at 12. */
	OK("bra loop", (LIT(0), LIT(3), DW_OP_dup, DW_OP_rot, DW_OP_plus, DW_OP_swap, LIT(1),
			DW_OP_minus, DW_OP_dup, DW_OP_bra, U16(0xfff6), DW_OP_drop),
	   6),
	/* A backward skip over a forward one, each landing on a boundary. */
	OK("skip back", (DW_OP_skip, U16(4), LIT(9), DW_OP_skip, U16(3), DW_OP_skip, U16(0xfff9)), 9),

	/* §2.5.1.7 Special operations. */
	OK("nop", (LIT(1), DW_OP_nop), 1),

	/* §6.4.2.3: DW_CFA_expression / val_expression push the CFA first. */
	{ "initial alone", no_ops, 0, 8, 1, 0x7fff0000, 0, 0x7fff0000 },
	INIT("initial plus_uconst", (DW_OP_plus_uconst, 16), 8, 0x7fff0000, 0x7fff0010),
	INIT("initial deref", (DW_OP_deref), 8, MEM_BASE, 0x8786858483828180),
	INIT("initial masked", (DW_OP_nop), 4, 0x100000010, 0x10),

	/* 4-byte generic type: results masked, deref reads 4 bytes, signed
	 * operations see bit 31 as the sign. */
	OK4("addr4", (DW_OP_addr, 0x78, 0x56, 0x34, 0x12), 0x12345678),
	OK4("consts -1", (DW_OP_consts, 0x7f), 0xffffffff),
	OK4("minus wraps", (LIT(0), LIT(1), DW_OP_minus), 0xffffffff),
	OK4("const8u masked", (DW_OP_const8u, 1, 2, 3, 4, 5, 6, 7, 8), 0x04030201),
	OK4("deref 4 bytes", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref), 0x83828180),
	OK4("deref_size 4", (DW_OP_const2u, U16(MEM_BASE + 4), DW_OP_deref_size, 4), 0x87868584),
	OK4("breg wraps", (BREG(0), 0xff, 0xff, 0x7b), 0xffffffff),
	OK4("plus_uconst wraps", (DW_OP_consts, 0x7f, DW_OP_plus_uconst, 2), 1),
	OK4("shl 31", (LIT(1), LIT(31), DW_OP_shl), 0x80000000),
	OK4("shl 32", (LIT(1), DW_OP_const1u, 32, DW_OP_shl), 0),
	OK4("shr 32", (DW_OP_consts, 0x7f, DW_OP_const1u, 32, DW_OP_shr), 0),
	OK4("shra sign bit 31", (DW_OP_const4u, 0, 0, 0, 0x80, LIT(4), DW_OP_shra), 0xf8000000),
	OK4("shra 32", (DW_OP_const4u, 0, 0, 0, 0x80, DW_OP_const1u, 32, DW_OP_shra), 0xffffffff),
	OK4("div signed", (DW_OP_consts, 0x7a, LIT(2), DW_OP_div), 0xfffffffd),
	OK4("div INT32_MIN / -1", (DW_OP_const4u, 0, 0, 0, 0x80, DW_OP_consts, 0x7f, DW_OP_div),
	    0x80000000),
	OK4("lt signed", (DW_OP_const4u, 0xff, 0xff, 0xff, 0xff, LIT(1), DW_OP_lt), 1),
	OK4("abs", (DW_OP_consts, 0x7b, DW_OP_abs), 5),
	OK4("neg", (LIT(5), DW_OP_neg), 0xfffffffb),
	OK4("not", (LIT(0), DW_OP_not), 0xffffffff),
	OK4("mod unsigned", (DW_OP_consts, 0x7f, LIT(10), DW_OP_mod), 0xffffffffu % 10),

	/* Errors: the stack. */
	{ "empty expression", no_ops, 0, 8, 0, 0, BK_E_CORRUPT, 0 },
	FAIL("empty result", (LIT(1), DW_OP_drop), BK_E_CORRUPT),
	FAIL("drop on empty", (DW_OP_drop), BK_E_CORRUPT),
	FAIL("dup on empty", (DW_OP_dup), BK_E_CORRUPT),
	FAIL("over with 1", (LIT(1), DW_OP_over), BK_E_CORRUPT),
	FAIL("pick past bottom", (LIT(1), DW_OP_pick, 1), BK_E_CORRUPT),
	FAIL("pick 255", (LIT(1), DW_OP_pick, 255), BK_E_CORRUPT),
	FAIL("swap with 1", (LIT(1), DW_OP_swap), BK_E_CORRUPT),
	FAIL("rot with 2", (LIT(1), LIT(2), DW_OP_rot), BK_E_CORRUPT),
	FAIL("plus with 1", (LIT(1), DW_OP_plus), BK_E_CORRUPT),
	FAIL("lt with 1", (LIT(1), DW_OP_lt), BK_E_CORRUPT),
	FAIL("div on empty", (DW_OP_div), BK_E_CORRUPT),
	FAIL("abs on empty", (DW_OP_abs), BK_E_CORRUPT),
	FAIL("neg on empty", (DW_OP_neg), BK_E_CORRUPT),
	FAIL("not on empty", (DW_OP_not), BK_E_CORRUPT),
	FAIL("plus_uconst on empty", (DW_OP_plus_uconst, 1), BK_E_CORRUPT),
	FAIL("deref on empty", (DW_OP_deref), BK_E_CORRUPT),
	FAIL("deref_size on empty", (DW_OP_deref_size, 1), BK_E_CORRUPT),
	FAIL("bra on empty", (DW_OP_bra, U16(0)), BK_E_CORRUPT),

	/* Errors: arithmetic. */
	FAIL("div by zero", (LIT(1), LIT(0), DW_OP_div), BK_E_DIV_ZERO),
	FAIL("mod by zero", (LIT(1), LIT(0), DW_OP_mod), BK_E_DIV_ZERO),
	FAIL4("div by zero 32", (LIT(1), DW_OP_const8u, 0, 0, 0, 0, 1, 0, 0, 0, DW_OP_div),
	      BK_E_DIV_ZERO),
	FAIL4("mod by zero 32", (LIT(1), DW_OP_const8u, 0, 0, 0, 0, 1, 0, 0, 0, DW_OP_mod),
	      BK_E_DIV_ZERO),

	/* Errors: control flow. */
	FAIL("skip -3 loops", (DW_OP_skip, U16(0xfffd)), BK_E_LIMIT),
	FAIL("lit/drop/skip loops", (LIT(0), DW_OP_drop, DW_OP_skip, U16(0xfffb)), BK_E_LIMIT),
	FAIL("bra loop forever", (LIT(1), DW_OP_dup, DW_OP_bra, U16(0xfffc)), BK_E_LIMIT),
	FAIL("skip into an operand", (DW_OP_skip, U16(1), DW_OP_const2u, 0, 0), BK_E_CORRUPT),
	FAIL("skip back into an operand", (DW_OP_const2u, 0, 0, DW_OP_skip, U16(0xfffb)),
	     BK_E_CORRUPT),
	FAIL("skip back into own operand", (DW_OP_skip, U16(0xffff)), BK_E_CORRUPT),
	FAIL("bra into an operand", (LIT(1), DW_OP_bra, U16(2), DW_OP_const2u, 0, 0, LIT(1)),
	     BK_E_CORRUPT),
	FAIL("skip past end", (LIT(1), DW_OP_skip, U16(1)), BK_E_CORRUPT),
	FAIL("skip far past end", (LIT(1), DW_OP_skip, U16(0x7fff)), BK_E_CORRUPT),
	FAIL("skip before start", (LIT(1), DW_OP_skip, U16(0xfffb)), BK_E_CORRUPT),
	FAIL("bra past end", (LIT(1), LIT(1), DW_OP_bra, U16(3)), BK_E_CORRUPT),
	FAIL("bra before start", (LIT(1), DW_OP_bra, U16(0x8000)), BK_E_CORRUPT),
	FAIL("skip over unknown opcode", (DW_OP_skip, U16(2), 0x01, LIT(0), LIT(1)),
	     BK_E_UNSUPPORTED),

	/* Errors: memory and registers. */
	FAIL("deref unmapped", (DW_OP_const2u, U16(0x1234), DW_OP_deref), BK_E_MEMORY),
	FAIL("deref straddles end", (DW_OP_const2u, U16(MEM_BASE + 60), DW_OP_deref), BK_E_MEMORY),
	FAIL("deref_size unmapped", (LIT(0), DW_OP_deref_size, 1), BK_E_MEMORY),
	FAIL("deref_size 0", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref_size, 0), BK_E_CORRUPT),
	FAIL("deref_size 9", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref_size, 9), BK_E_CORRUPT),
	FAIL4("deref_size 5 in 32-bit", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref_size, 5),
	      BK_E_CORRUPT),
	FAIL4("deref_size 8 in 32-bit", (DW_OP_const2u, U16(MEM_BASE), DW_OP_deref_size, 8),
	      BK_E_CORRUPT),
	FAIL("breg17 callback error", (BREG(17), 0), BK_E_NOT_FOUND),
	FAIL("bregx 17 callback error", (DW_OP_bregx, 17, 0), BK_E_NOT_FOUND),
	FAIL("bregx no such register", (DW_OP_bregx, 0xe8, 0x07, 0), BK_E_BAD_REG),
	FAIL("bregx beyond unsigned", (DW_OP_bregx, 0x80, 0x80, 0x80, 0x80, 0x10, 0), BK_E_BAD_REG),

	/* Errors: operations CFI may not use (§6.4.2) and unknown opcodes. */
	FAIL("stack_value", (LIT(1), DW_OP_stack_value), BK_E_BAD_OP),
	FAIL("reg0", (DW_OP_reg0), BK_E_BAD_OP),
	FAIL("reg31", (DW_OP_reg0 + 31), BK_E_BAD_OP),
	FAIL("regx", (DW_OP_regx, 3), BK_E_BAD_OP),
	FAIL("fbreg", (DW_OP_fbreg, 0x70), BK_E_BAD_OP),
	FAIL("piece", (LIT(1), DW_OP_piece, 8), BK_E_BAD_OP),
	FAIL("bit_piece", (LIT(1), DW_OP_bit_piece, 8, 0), BK_E_BAD_OP),
	FAIL("xderef", (LIT(1), LIT(1), DW_OP_xderef), BK_E_BAD_OP),
	FAIL("xderef_size", (LIT(1), LIT(1), DW_OP_xderef_size, 4), BK_E_BAD_OP),
	FAIL("xderef_type", (LIT(1), LIT(1), DW_OP_xderef_type, 4, 0x2a), BK_E_BAD_OP),
	FAIL("push_object_address", (DW_OP_push_object_address), BK_E_BAD_OP),
	FAIL("call2", (DW_OP_call2, 1, 0), BK_E_BAD_OP),
	FAIL("call4", (DW_OP_call4, 1, 0, 0, 0), BK_E_BAD_OP),
	FAIL("call_ref", (DW_OP_call_ref, 1, 0, 0, 0), BK_E_BAD_OP),
	FAIL("form_tls_address", (LIT(1), DW_OP_form_tls_address), BK_E_BAD_OP),
	FAIL("call_frame_cfa", (DW_OP_call_frame_cfa), BK_E_BAD_OP),
	FAIL("implicit_value", (DW_OP_implicit_value, 2, 0xaa, 0xbb), BK_E_BAD_OP),
	FAIL("implicit_pointer", (DW_OP_implicit_pointer, 1, 0, 0, 0, 0x08), BK_E_BAD_OP),
	FAIL("addrx", (DW_OP_addrx, 1), BK_E_BAD_OP),
	FAIL("constx", (DW_OP_constx, 1), BK_E_BAD_OP),
	FAIL("entry_value", (DW_OP_entry_value, 2, BREG(7), 0), BK_E_BAD_OP),
	FAIL("const_type", (DW_OP_const_type, 0x2a, 1, 0x05), BK_E_BAD_OP),
	FAIL("regval_type", (DW_OP_regval_type, 7, 0x2a), BK_E_BAD_OP),
	FAIL("deref_type", (LIT(1), DW_OP_deref_type, 8, 0x2a), BK_E_BAD_OP),
	FAIL("convert", (LIT(1), DW_OP_convert, 0x2a), BK_E_BAD_OP),
	FAIL("reinterpret", (LIT(1), DW_OP_reinterpret, 0x2a), BK_E_BAD_OP),
	FAIL("GNU_push_tls_address", (LIT(1), DW_OP_GNU_push_tls_address), BK_E_BAD_OP),
	FAIL("GNU_uninit", (LIT(1), DW_OP_GNU_uninit), BK_E_BAD_OP),
	FAIL("GNU_implicit_pointer", (DW_OP_GNU_implicit_pointer, 1, 0, 0, 0, 0), BK_E_BAD_OP),
	FAIL("GNU_entry_value", (DW_OP_GNU_entry_value, 1, DW_OP_reg0 + 5), BK_E_BAD_OP),
	FAIL("GNU_const_type", (DW_OP_GNU_const_type, 0x2a, 2, 1, 2), BK_E_BAD_OP),
	FAIL("GNU_regval_type", (DW_OP_GNU_regval_type, 7, 0x2a), BK_E_BAD_OP),
	FAIL("GNU_deref_type", (LIT(1), DW_OP_GNU_deref_type, 8, 0x2a), BK_E_BAD_OP),
	FAIL("GNU_convert", (LIT(1), DW_OP_GNU_convert, 0x2a), BK_E_BAD_OP),
	FAIL("GNU_reinterpret", (LIT(1), DW_OP_GNU_reinterpret, 0x2a), BK_E_BAD_OP),
	FAIL("GNU_parameter_ref", (DW_OP_GNU_parameter_ref, 1, 2, 3, 4), BK_E_BAD_OP),
	FAIL("GNU_addr_index", (DW_OP_GNU_addr_index, 1), BK_E_BAD_OP),
	FAIL("GNU_const_index", (DW_OP_GNU_const_index, 1), BK_E_BAD_OP),
	FAIL("GNU_variable_value", (DW_OP_GNU_variable_value, 1, 0, 0, 0), BK_E_BAD_OP),
	FAIL("GNU_encoded_addr", (DW_OP_GNU_encoded_addr, 0, 0), BK_E_UNSUPPORTED),
	FAIL("opcode 0x00", (0x00), BK_E_UNSUPPORTED),
	FAIL("opcode 0x01", (LIT(1), 0x01), BK_E_UNSUPPORTED),
	FAIL("opcode 0x07", (0x07), BK_E_UNSUPPORTED),
	FAIL("opcode 0xaa", (0xaa), BK_E_UNSUPPORTED),
	FAIL("opcode 0xe1", (0xe1), BK_E_UNSUPPORTED),
	FAIL("opcode 0xff", (0xff), BK_E_UNSUPPORTED),

	/* Errors: malformed operands reached by the VM. */
	FAIL("truncated const2u", (DW_OP_const2u, 1), BK_E_CORRUPT),
	FAIL("truncated breg", (BREG(7)), BK_E_CORRUPT),
	FAIL("ULEB overflow", (DW_OP_constu, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			       0x7f),
	     BK_E_CORRUPT),
	FAIL("ULEB 11 bytes", (DW_OP_constu, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
			       0x80, 0x01),
	     BK_E_CORRUPT),
	FAIL("SLEB overflow", (DW_OP_consts, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			       0x3f),
	     BK_E_CORRUPT),
	FAIL("plus_uconst ULEB overflow", (LIT(0), DW_OP_plus_uconst, 0xff, 0xff, 0xff, 0xff, 0xff,
					   0xff, 0xff, 0xff, 0xff, 0x02),
	     BK_E_CORRUPT),
	FAIL("bregx SLEB overflow", (DW_OP_bregx, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
				     0x80, 0x80, 0x40),
	     BK_E_CORRUPT),
};

static void test_eval_rows(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(eval_rows); i++) {
		const struct eval_row *r = &eval_rows[i];
		struct expr_env env = make_env(r->addr_size);
		uint64_t got = 0xdeadbeef;
		int err = expr_eval(r->ops, r->len, &env, r->has_initial ? &r->initial : NULL, &got);
		CHECK_INT(err, r->err, r->name);
		if (r->err == 0)
			CHECK_U64(got, r->want, r->name);
		else
			CHECK_U64(got, 0xdeadbeef, r->name); /* result untouched */
	}
}

/* ---- VM: bounds, callbacks and arguments -------------------------------- */

/* DW_OP_skip at AT to TARGET. */
static void put_skip(uint8_t *ops, size_t at, size_t target)
{
	uint16_t delta = (uint16_t)(int16_t)((long)target - (long)(at + 3));
	ops[at] = DW_OP_skip;
	ops[at + 1] = (uint8_t)(delta & 0xff);
	ops[at + 2] = (uint8_t)(delta >> 8);
}

static void test_eval_bounds(void)
{
	static uint8_t ops[EXPR_STEPS_MAX + 2];
	struct expr_env env = make_env(8);
	uint64_t v = 0, init = 5;

	/* EXPR_STACK_MAX pushes fit; one more is BK_E_LIMIT. */
	memset(ops, DW_OP_lit0 + 9, EXPR_STACK_MAX + 1);
	CHECK_INT(expr_eval(ops, EXPR_STACK_MAX, &env, NULL, &v), 0, "64 pushes");
	CHECK_U64(v, 9, "64 pushes");
	CHECK_INT(expr_eval(ops, EXPR_STACK_MAX + 1, &env, NULL, &v), BK_E_LIMIT, "65 pushes");
	/* The initial value counts against the stack. */
	CHECK_INT(expr_eval(ops, EXPR_STACK_MAX - 1, &env, &init, &v), 0, "initial + 63");
	CHECK_INT(expr_eval(ops, EXPR_STACK_MAX, &env, &init, &v), BK_E_LIMIT, "initial + 64");
	/* dup and over and pick overflow too. */
	ops[EXPR_STACK_MAX] = DW_OP_dup;
	CHECK_INT(expr_eval(ops, EXPR_STACK_MAX + 1, &env, NULL, &v), BK_E_LIMIT, "dup at 64");
	ops[EXPR_STACK_MAX] = DW_OP_over;
	CHECK_INT(expr_eval(ops, EXPR_STACK_MAX + 1, &env, NULL, &v), BK_E_LIMIT, "over at 64");

	/* EXPR_STEPS_MAX operations execute; one more is BK_E_LIMIT. */
	memset(ops, DW_OP_nop, sizeof(ops));
	ops[0] = DW_OP_lit0 + 3;
	CHECK_INT(expr_eval(ops, EXPR_STEPS_MAX, &env, NULL, &v), 0, "10000 steps");
	CHECK_U64(v, 3, "10000 steps");
	CHECK_INT(expr_eval(ops, EXPR_STEPS_MAX + 1, &env, NULL, &v), BK_E_LIMIT, "10001 steps");

	/* A far backward branch from the end of a long run of nops: checking
	 * the target is bounded too and the loop still ends with BK_E_LIMIT. */
	memset(ops, DW_OP_nop, sizeof(ops));
	ops[0] = LIT(1);
	size_t at = 6000;
	ops[at] = DW_OP_skip;
	int16_t back = (int16_t)-(int16_t)(at + 3 - 1); /* to offset 1 */
	ops[at + 1] = (uint8_t)((uint16_t)back & 0xff);
	ops[at + 2] = (uint8_t)((uint16_t)back >> 8);
	CHECK_INT(expr_eval(ops, at + 3, &env, NULL, &v), BK_E_LIMIT, "long skip loop");
	/* The same skip landing on a valid far target once: ends normally. */
	ops[0] = DW_OP_skip;
	ops[1] = (uint8_t)((at + 3 - 3) & 0xff); /* to the op after the far skip */
	ops[2] = (uint8_t)((at + 3 - 3) >> 8);
	ops[at + 3] = DW_OP_lit0 + 4;
	CHECK_INT(expr_eval(ops, at + 4, &env, NULL, &v), 0, "long forward skip");
	CHECK_U64(v, 4, "long forward skip");

	/* Two far branches taking turns defeat the remembered target, so each
	 * costs a long scan; the scan bound ends it after a few jumps. */
	memset(ops, DW_OP_nop, sizeof(ops));
	put_skip(ops, 0, 3000);    /* start -> X1 */
	put_skip(ops, 3000, 6003); /* X1 -> Y2 */
	put_skip(ops, 6003, 3000); /* Y2 -> X1 */
	ops[6006] = LIT(1);
	CHECK_INT(expr_eval(ops, 6007, &env, NULL, &v), BK_E_LIMIT, "alternating far branches");
}

static int mem_fail(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx, (void)addr, (void)dst, (void)len;
	return BK_E_MEMORY;
}

static int mem_other_error(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx, (void)addr, (void)dst, (void)len;
	return BK_E_IO;
}

static unsigned seen_regno;
static void *seen_ctx;
static int reg_record(void *ctx, unsigned regno, uint64_t *value)
{
	seen_ctx = ctx;
	seen_regno = regno;
	*value = 100;
	return 0;
}

static void test_eval_callbacks(void)
{
	const uint8_t deref[] = { DW_OP_const2u, U16(MEM_BASE), DW_OP_deref };
	const uint8_t breg[] = { BREG(6), 0x08 };
	const uint8_t bregx[] = { DW_OP_bregx, 0x81, 0x01, 0x7f }; /* reg 129 - 1 */
	struct expr_env env = make_env(8);
	uint64_t v = 0;
	int ctx_marker;

	env.mem.read = mem_fail;
	CHECK_INT(expr_eval(deref, sizeof(deref), &env, NULL, &v), BK_E_MEMORY, "failing memory");
	env.mem.read = mem_other_error;
	CHECK_INT(expr_eval(deref, sizeof(deref), &env, NULL, &v), BK_E_IO, "memory error passed on");
	env.mem.read = NULL;
	CHECK_INT(expr_eval(deref, sizeof(deref), &env, NULL, &v), BK_E_MEMORY, "no memory callback");

	env = make_env(8);
	env.read_reg = NULL;
	CHECK_INT(expr_eval(breg, sizeof(breg), &env, NULL, &v), BK_E_BAD_REG, "no register callback");
	env.read_reg = reg_record;
	env.reg_ctx = &ctx_marker;
	CHECK_INT(expr_eval(breg, sizeof(breg), &env, NULL, &v), 0, "breg6");
	CHECK_INT(seen_regno, 6, "breg6 asks for register 6");
	CHECK(seen_ctx == &ctx_marker, "reg_ctx passed to read_reg");
	CHECK_U64(v, 108, "breg6 value");
	CHECK_INT(expr_eval(bregx, sizeof(bregx), &env, NULL, &v), 0, "bregx 129");
	CHECK_INT(seen_regno, 129, "bregx asks for register 129");
	CHECK_U64(v, 99, "bregx value");

	/* Bad arguments. */
	env = make_env(8);
	CHECK_INT(expr_eval(breg, sizeof(breg), NULL, NULL, &v), BK_E_INVAL, "NULL env");
	CHECK_INT(expr_eval(breg, sizeof(breg), &env, NULL, NULL), BK_E_INVAL, "NULL result");
	CHECK_INT(expr_eval(NULL, 1, &env, NULL, &v), BK_E_INVAL, "NULL ops");
	env.addr_size = 2;
	CHECK_INT(expr_eval(breg, sizeof(breg), &env, NULL, &v), BK_E_INVAL, "addr_size 2");
	env.addr_size = 0;
	CHECK_INT(expr_eval(breg, sizeof(breg), &env, NULL, &v), BK_E_INVAL, "addr_size 0");
}

/* Every opcode: unknown ones are BK_E_UNSUPPORTED, those outside the CFI
 * set BK_E_BAD_OP, the CFI set never either. */
static bool cfi_allowed(unsigned c)
{
	if ((c >= DW_OP_lit0 && c <= DW_OP_lit31) || (c >= DW_OP_breg0 && c <= DW_OP_breg31))
		return true;
	switch (c) {
	case DW_OP_addr: case DW_OP_deref: case DW_OP_const1u: case DW_OP_const1s:
	case DW_OP_const2u: case DW_OP_const2s: case DW_OP_const4u: case DW_OP_const4s:
	case DW_OP_const8u: case DW_OP_const8s: case DW_OP_constu: case DW_OP_consts:
	case DW_OP_dup: case DW_OP_drop: case DW_OP_over: case DW_OP_pick: case DW_OP_swap:
	case DW_OP_rot: case DW_OP_abs: case DW_OP_and: case DW_OP_div: case DW_OP_minus:
	case DW_OP_mod: case DW_OP_mul: case DW_OP_neg: case DW_OP_not: case DW_OP_or:
	case DW_OP_plus: case DW_OP_plus_uconst: case DW_OP_shl: case DW_OP_shr:
	case DW_OP_shra: case DW_OP_xor: case DW_OP_bra: case DW_OP_eq: case DW_OP_ge:
	case DW_OP_gt: case DW_OP_le: case DW_OP_lt: case DW_OP_ne: case DW_OP_skip:
	case DW_OP_bregx: case DW_OP_deref_size: case DW_OP_nop:
		return true;
	default:
		return false;
	}
}

static void test_every_opcode(void)
{
	unsigned n_allowed = 0, n_bad = 0, n_unknown = 0;

	for (unsigned c = 0; c < 256; c++) {
		/* Three values on the stack, then the operation with operands that
		 * decode (zero bytes; deref_size needs 1). */
		uint8_t ops[32] = { DW_OP_lit0 + 1, DW_OP_lit0 + 1, DW_OP_lit0 + 1, (uint8_t)c, 1 };
		struct expr_env env = make_env(8);
		struct expr_op op;
		struct buf b = buf_make(ops + 3, sizeof(ops) - 3);
		uint64_t v;
		char ctx[32];
		snprintf(ctx, sizeof(ctx), "opcode 0x%02x", c);

		int derr = expr_decode_op(&b, 3, 8, &op);
		if (!expr_op_name((uint8_t)c) || c == DW_OP_GNU_encoded_addr) {
			CHECK_INT(derr, BK_E_UNSUPPORTED, ctx);
			CHECK_INT(expr_eval(ops, 4, &env, NULL, &v), BK_E_UNSUPPORTED, ctx);
			n_unknown++;
			continue;
		}
		CHECK_INT(derr, 0, ctx);
		if (derr)
			continue;
		int err = expr_eval(ops, 3 + op.len, &env, NULL, &v);
		if (cfi_allowed(c)) {
			CHECK(err != BK_E_BAD_OP && err != BK_E_UNSUPPORTED, "%s: got %d", ctx, err);
			n_allowed++;
		} else {
			CHECK_INT(err, BK_E_BAD_OP, ctx);
			n_bad++;
		}
	}
	/* 44 named + 32 lit + 32 breg are allowed; reg0-31, 24 other DWARF 5
	 * operations and 13 GNU ones are not. */
	CHECK_INT(n_allowed, 44 + 32 + 32, "CFI operations");
	CHECK_INT(n_allowed + n_bad + n_unknown, 256, "all opcodes");
	CHECK_INT(n_bad, 32 + 24 + 13, "operations not allowed in CFI");
}

/* ---- Decoder ----------------------------------------------------------- */

struct decode_row {
	const char *name;
	const uint8_t *ops;
	size_t len;
	uint8_t addr_size;
	int err;
	size_t op_len;   /* bytes consumed on success */
	unsigned nargs;
	uint64_t operand1, operand2;
	size_t block_len;
};

#define DEC(name, bytes, asz, nargs, o1, o2, blen)                                   \
	{ name, E bytes, asz, 0, sizeof((const uint8_t[]){ UNPAREN bytes }), nargs,  \
	  (uint64_t)(o1), (uint64_t)(o2), blen }
#define UNPAREN(...) __VA_ARGS__
#define DERR(name, bytes, asz, err) { name, E bytes, asz, err, 0, 0, 0, 0, 0 }

static const struct decode_row decode_rows[] = {
	/* Each operand kind decoded. */
	DEC("lit5", (LIT(5)), 8, 0, 0, 0, 0),
	DEC("addr 8", (DW_OP_addr, 1, 2, 3, 4, 5, 6, 7, 8), 8, 1, 0x0807060504030201, 0, 0),
	DEC("addr 4", (DW_OP_addr, 1, 2, 3, 4), 4, 1, 0x04030201, 0, 0),
	DEC("const1s", (DW_OP_const1s, 0x80), 8, 1, -128, 0, 0),
	DEC("const2s", (DW_OP_const2s, 0xff, 0x7f), 8, 1, 0x7fff, 0, 0),
	DEC("const4s", (DW_OP_const4s, 0, 0, 0, 0x80), 8, 1, INT32_MIN, 0, 0),
	DEC("const8u", (DW_OP_const8u, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff), 8, 1,
	    UINT64_MAX, 0, 0),
	DEC("breg7 -8", (BREG(7), 0x78), 8, 1, -8, 0, 0),
	DEC("skip -3", (DW_OP_skip, 0xfd, 0xff), 8, 1, -3, 0, 0),
	DEC("bregx", (DW_OP_bregx, 0x81, 0x01, 0x70), 8, 2, 129, -16, 0),
	DEC("bit_piece", (DW_OP_bit_piece, 0x20, 0x08), 8, 2, 32, 8, 0),
	DEC("call_ref", (DW_OP_call_ref, 1, 2, 3, 4), 8, 1, 0x04030201, 0, 0),
	DEC("implicit_pointer", (DW_OP_implicit_pointer, 1, 2, 3, 4, 0x7f), 8, 2, 0x04030201, -1, 0),
	DEC("implicit_value", (DW_OP_implicit_value, 3, 0xa, 0xb, 0xc), 8, 1, 3, 0, 3),
	DEC("implicit_value empty", (DW_OP_implicit_value, 0), 8, 1, 0, 0, 0),
	DEC("entry_value", (DW_OP_entry_value, 1, DW_OP_reg0 + 5), 8, 1, 1, 0, 1),
	DEC("const_type", (DW_OP_const_type, 0x2a, 2, 0x34, 0x12), 8, 2, 0x2a, 2, 2),
	DEC("regval_type", (DW_OP_regval_type, 0x11, 0x2a), 8, 2, 17, 0x2a, 0),
	DEC("deref_type", (DW_OP_deref_type, 4, 0x2a), 8, 2, 4, 0x2a, 0),
	DEC("convert", (DW_OP_convert, 0x2a), 8, 1, 0x2a, 0, 0),
	DEC("GNU_parameter_ref", (DW_OP_GNU_parameter_ref, 1, 2, 3, 4), 8, 1, 0x04030201, 0, 0),
	DEC("GNU_variable_value", (DW_OP_GNU_variable_value, 1, 2, 3, 4), 8, 1, 0x04030201, 0, 0),

	/* Truncated operands, one row per operand kind. */
	{ "empty", no_ops, 0, 8, BK_E_CORRUPT, 0, 0, 0, 0, 0 },
	DERR("addr 8 short", (DW_OP_addr, 1, 2, 3, 4, 5, 6, 7), 8, BK_E_CORRUPT),
	DERR("addr 4 short", (DW_OP_addr, 1, 2, 3), 4, BK_E_CORRUPT),
	DERR("const1u", (DW_OP_const1u), 8, BK_E_CORRUPT),
	DERR("const1s", (DW_OP_const1s), 8, BK_E_CORRUPT),
	DERR("const2u", (DW_OP_const2u, 1), 8, BK_E_CORRUPT),
	DERR("const2s", (DW_OP_const2s, 1), 8, BK_E_CORRUPT),
	DERR("const4u", (DW_OP_const4u, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("const4s", (DW_OP_const4s, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("const8u", (DW_OP_const8u, 1, 2, 3, 4, 5, 6, 7), 8, BK_E_CORRUPT),
	DERR("const8s", (DW_OP_const8s, 1, 2, 3, 4, 5, 6, 7), 8, BK_E_CORRUPT),
	DERR("constu empty", (DW_OP_constu), 8, BK_E_CORRUPT),
	DERR("constu unterminated", (DW_OP_constu, 0x80, 0x80), 8, BK_E_CORRUPT),
	DERR("consts unterminated", (DW_OP_consts, 0xff), 8, BK_E_CORRUPT),
	DERR("pick", (DW_OP_pick), 8, BK_E_CORRUPT),
	DERR("plus_uconst", (DW_OP_plus_uconst, 0x80), 8, BK_E_CORRUPT),
	DERR("skip", (DW_OP_skip, 1), 8, BK_E_CORRUPT),
	DERR("bra", (DW_OP_bra), 8, BK_E_CORRUPT),
	DERR("breg0", (BREG(0)), 8, BK_E_CORRUPT),
	DERR("breg31 unterminated", (BREG(31), 0x80), 8, BK_E_CORRUPT),
	DERR("regx", (DW_OP_regx), 8, BK_E_CORRUPT),
	DERR("fbreg", (DW_OP_fbreg, 0x80), 8, BK_E_CORRUPT),
	DERR("bregx no register", (DW_OP_bregx), 8, BK_E_CORRUPT),
	DERR("bregx no offset", (DW_OP_bregx, 7), 8, BK_E_CORRUPT),
	DERR("piece", (DW_OP_piece), 8, BK_E_CORRUPT),
	DERR("bit_piece no offset", (DW_OP_bit_piece, 8), 8, BK_E_CORRUPT),
	DERR("deref_size", (DW_OP_deref_size), 8, BK_E_CORRUPT),
	DERR("xderef_size", (DW_OP_xderef_size), 8, BK_E_CORRUPT),
	DERR("call2", (DW_OP_call2, 1), 8, BK_E_CORRUPT),
	DERR("call4", (DW_OP_call4, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("call_ref", (DW_OP_call_ref, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("implicit_value no length", (DW_OP_implicit_value), 8, BK_E_CORRUPT),
	DERR("implicit_value short block", (DW_OP_implicit_value, 4, 1, 2), 8, BK_E_CORRUPT),
	DERR("implicit_value huge length", (DW_OP_implicit_value, 0xff, 0xff, 0xff, 0xff, 0xff,
					    0xff, 0xff, 0xff, 0xff, 0x01, 0),
	     8, BK_E_CORRUPT),
	DERR("entry_value short block", (DW_OP_entry_value, 2, BREG(7)), 8, BK_E_CORRUPT),
	DERR("const_type no size", (DW_OP_const_type, 0x2a), 8, BK_E_CORRUPT),
	DERR("const_type short block", (DW_OP_const_type, 0x2a, 4, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("regval_type no type", (DW_OP_regval_type, 7), 8, BK_E_CORRUPT),
	DERR("deref_type no type", (DW_OP_deref_type, 4), 8, BK_E_CORRUPT),
	DERR("xderef_type no size", (DW_OP_xderef_type), 8, BK_E_CORRUPT),
	DERR("convert", (DW_OP_convert), 8, BK_E_CORRUPT),
	DERR("reinterpret", (DW_OP_reinterpret, 0x80), 8, BK_E_CORRUPT),
	DERR("implicit_pointer short ref", (DW_OP_implicit_pointer, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("implicit_pointer no offset", (DW_OP_implicit_pointer, 1, 2, 3, 4), 8, BK_E_CORRUPT),
	DERR("addrx", (DW_OP_addrx), 8, BK_E_CORRUPT),
	DERR("constx", (DW_OP_constx, 0x80), 8, BK_E_CORRUPT),
	DERR("GNU_parameter_ref", (DW_OP_GNU_parameter_ref, 1, 2, 3), 8, BK_E_CORRUPT),
	DERR("GNU_entry_value", (DW_OP_GNU_entry_value, 1), 8, BK_E_CORRUPT),
	DERR("GNU_const_type", (DW_OP_GNU_const_type, 1, 1), 8, BK_E_CORRUPT),
	DERR("GNU_variable_value", (DW_OP_GNU_variable_value, 1), 8, BK_E_CORRUPT),
	/* LEB128 values beyond 64 bits. */
	DERR("ULEB overflow", (DW_OP_constu, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			       0x02),
	     8, BK_E_CORRUPT),
	DERR("SLEB overflow", (DW_OP_consts, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
			       0x02),
	     8, BK_E_CORRUPT),
	/* Opcodes. */
	DERR("unknown 0x02", (0x02, 0, 0, 0), 8, BK_E_UNSUPPORTED),
	DERR("unknown 0xf8", (0xf8), 8, BK_E_UNSUPPORTED),
	DERR("GNU_encoded_addr", (DW_OP_GNU_encoded_addr, 0x03, 1, 2, 3, 4), 8, BK_E_UNSUPPORTED),
	DERR("addr_size 0", (LIT(1)), 0, BK_E_INVAL),
	DERR("addr_size 9", (LIT(1)), 9, BK_E_INVAL),
};

static void test_decode_rows(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(decode_rows); i++) {
		const struct decode_row *r = &decode_rows[i];
		/* Copy to a buffer of the exact length so ASan sees any overrun. */
		uint8_t *copy = malloc(r->len ? r->len : 1);
		if (!copy)
			abort();
		memcpy(copy, r->ops, r->len);
		struct buf b = buf_make(copy, r->len);
		struct expr_op op;
		int err = expr_decode_op(&b, 7, r->addr_size, &op);
		CHECK_INT(err, r->err, r->name);
		CHECK(b.p <= b.end, "%s: reader past end", r->name);
		if (r->err) {
			CHECK(b.p == copy, "%s: reader moved on error", r->name);
		} else {
			CHECK(b.p == copy + r->op_len, "%s: reader advanced wrongly", r->name);
			CHECK_INT(op.opcode, r->ops[0], r->name);
			CHECK_INT(op.off, 7, r->name);
			CHECK_INT(op.len, r->op_len, r->name);
			CHECK_INT(op.nargs, r->nargs, r->name);
			CHECK_U64(op.operand1, r->operand1, r->name);
			CHECK_U64(op.operand2, r->operand2, r->name);
			CHECK_INT(op.block_len, r->block_len, r->name);
			if (r->block_len)
				CHECK(op.block == copy + r->op_len - r->block_len,
				      "%s: block points at the bytes", r->name);
		}
		free(copy);
	}
}

static void test_op_names(void)
{
	CHECK_STR(expr_op_name(DW_OP_addr), "DW_OP_addr", "addr");
	CHECK_STR(expr_op_name(DW_OP_lit0), "DW_OP_lit0", "lit0");
	CHECK_STR(expr_op_name(DW_OP_lit31), "DW_OP_lit31", "lit31");
	CHECK_STR(expr_op_name(DW_OP_reg0 + 17), "DW_OP_reg17", "reg17");
	CHECK_STR(expr_op_name(DW_OP_breg31), "DW_OP_breg31", "breg31");
	CHECK_STR(expr_op_name(DW_OP_plus_uconst), "DW_OP_plus_uconst", "plus_uconst");
	CHECK_STR(expr_op_name(DW_OP_reinterpret), "DW_OP_reinterpret", "reinterpret");
	CHECK_STR(expr_op_name(DW_OP_GNU_push_tls_address), "DW_OP_GNU_push_tls_address", "0xe0");
	CHECK_STR(expr_op_name(DW_OP_GNU_variable_value), "DW_OP_GNU_variable_value", "0xfd");
	CHECK(expr_op_name(0x00) == NULL, "0x00 has no name");
	CHECK(expr_op_name(0xff) == NULL, "0xff has no name");
}

/* ---- Printer ----------------------------------------------------------- */

struct format_row {
	const char *name;
	const uint8_t *ops;
	size_t len;
	enum bk_arch arch;
	uint8_t addr_size;
	int err;
	const char *want;
};

#define FMT(name, bytes, arch, want) { name, E bytes, arch, 8, 0, want }
#define FMT_ERR(name, bytes, arch, err, want) { name, E bytes, arch, 8, err, want }

static const struct format_row format_rows[] = {
	{ "empty", no_ops, 0, BK_ARCH_X86_64, 8, 0, "" },
	FMT("breg7 deref", (BREG(7), 0x08, DW_OP_deref), BK_ARCH_X86_64,
	    "DW_OP_breg7 (rsp) +8; DW_OP_deref"),
	FMT("no arch", (BREG(7), 0x08, DW_OP_deref), BK_ARCH_UNKNOWN, "DW_OP_breg7 +8; DW_OP_deref"),
	/* The PLT CFA expression GCC and binutils emit on x86-64. */
	FMT("plt", (BREG(7), 0x08, BREG(16), 0x00, LIT(15), DW_OP_and, LIT(11), DW_OP_ge, LIT(3),
		    DW_OP_shl, DW_OP_plus),
	    BK_ARCH_X86_64,
	    "DW_OP_breg7 (rsp) +8; DW_OP_breg16 (rip) +0; DW_OP_lit15; DW_OP_and; DW_OP_lit11; "
	    "DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus"),
	FMT("aarch64 breg29", (BREG(29), 0x70, DW_OP_deref), BK_ARCH_AARCH64,
	    "DW_OP_breg29 (x29) -16; DW_OP_deref"),
	FMT("aarch64 bregx sp", (DW_OP_bregx, 31, 0x00), BK_ARCH_AARCH64, "DW_OP_bregx 31 (sp) +0"),
	FMT("aarch64 regx", (DW_OP_regx, 30), BK_ARCH_AARCH64, "DW_OP_regx 30 (x30)"),
	FMT("x86 reg6 regx", (DW_OP_reg0 + 6, DW_OP_regx, 16), BK_ARCH_X86_64,
	    "DW_OP_reg6 (rbp); DW_OP_regx 16 (rip)"),
	FMT("unnamed register", (DW_OP_bregx, 0xe8, 0x07, 0x7f), BK_ARCH_X86_64,
	    "DW_OP_bregx 1000 -1"),
	FMT("constants", (DW_OP_const1u, 0xff, DW_OP_const1s, 0xff, DW_OP_const2s, 0x00, 0x80,
			  DW_OP_constu, 0xe5, 0x8e, 0x26, DW_OP_consts, 0xc0, 0xbb, 0x78),
	    BK_ARCH_X86_64,
	    "DW_OP_const1u 255; DW_OP_const1s -1; DW_OP_const2s -32768; DW_OP_constu 624485; "
	    "DW_OP_consts -123456"),
	FMT("const8", (DW_OP_const8u, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		       DW_OP_const8s, 0, 0, 0, 0, 0, 0, 0, 0x80),
	    BK_ARCH_UNKNOWN,
	    "DW_OP_const8u 18446744073709551615; DW_OP_const8s -9223372036854775808"),
	FMT("addr", (DW_OP_addr, 0x00, 0x10, 0x40, 0, 0, 0, 0, 0), BK_ARCH_X86_64,
	    "DW_OP_addr 0x401000"),
	FMT("skip bra", (DW_OP_skip, 0xfd, 0xff, DW_OP_bra, 4, 0, DW_OP_skip, 0, 0), BK_ARCH_X86_64,
	    "DW_OP_skip -3; DW_OP_bra +4; DW_OP_skip +0"),
	FMT("sizes", (DW_OP_plus_uconst, 0xac, 0x02, DW_OP_deref_size, 4, DW_OP_pick, 2),
	    BK_ARCH_X86_64, "DW_OP_plus_uconst 300; DW_OP_deref_size 4; DW_OP_pick 2"),
	FMT("fbreg piece", (DW_OP_fbreg, 0x70, DW_OP_piece, 8, DW_OP_bit_piece, 3, 5),
	    BK_ARCH_X86_64, "DW_OP_fbreg -16; DW_OP_piece 8; DW_OP_bit_piece 3 5"),
	FMT("blocks", (DW_OP_implicit_value, 3, 0x01, 0xab, 0xff, DW_OP_entry_value, 1, 0x55,
		       DW_OP_const_type, 0x2a, 0),
	    BK_ARCH_X86_64,
	    "DW_OP_implicit_value 3 {01 ab ff}; DW_OP_entry_value 1 {55}; DW_OP_const_type 0x2a 0 {}"),
	FMT("typed", (DW_OP_regval_type, 7, 0x2a, DW_OP_deref_type, 8, 0x30, DW_OP_convert, 0x2a),
	    BK_ARCH_X86_64, "DW_OP_regval_type 7 (rsp) 0x2a; DW_OP_deref_type 8 0x30; DW_OP_convert 0x2a"),
	FMT("refs", (DW_OP_call2, 0x34, 0x12, DW_OP_implicit_pointer, 0x10, 0, 0, 0, 0x78),
	    BK_ARCH_X86_64, "DW_OP_call2 0x1234; DW_OP_implicit_pointer 0x10 -8"),
	FMT_ERR("truncated", (LIT(1), DW_OP_const2u, 0x01), BK_ARCH_X86_64, BK_E_CORRUPT,
		"DW_OP_lit1; DW_OP_const2u <error: corrupt>"),
	FMT_ERR("truncated first", (BREG(7)), BK_ARCH_X86_64, BK_E_CORRUPT,
		"DW_OP_breg7 <error: corrupt>"),
	FMT_ERR("unknown opcode", (LIT(1), 0x01, LIT(2)), BK_ARCH_X86_64, BK_E_UNSUPPORTED,
		"DW_OP_lit1; <error: unknown opcode 0x01>"),
	FMT_ERR("encoded_addr", (DW_OP_GNU_encoded_addr, 0), BK_ARCH_X86_64, BK_E_UNSUPPORTED,
		"DW_OP_GNU_encoded_addr <error: unsupported>"),
};

static void test_format_rows(void)
{
	char out[512];
	for (size_t i = 0; i < BK_ARRAY_LEN(format_rows); i++) {
		const struct format_row *r = &format_rows[i];
		const struct arch_info *arch = r->arch == BK_ARCH_UNKNOWN ? NULL : arch_get(r->arch);
		CHECK(r->arch == BK_ARCH_UNKNOWN || arch != NULL, "%s: arch_get", r->name);
		int err = expr_format(r->ops, r->len, r->addr_size, arch, out, sizeof(out));
		CHECK_INT(err, r->err, r->name);
		CHECK_STR(out, r->want, r->name);
	}
}

static void test_format_truncation(void)
{
	const uint8_t ops[] = { BREG(7), 0x08, DW_OP_deref };
	const char *full = "DW_OP_breg7 (rsp) +8; DW_OP_deref";
	const struct arch_info *x86 = arch_get(BK_ARCH_X86_64);
	char out[64];

	/* Every buffer size: never written past OUT_LEN, always terminated. */
	for (size_t n = 1; n <= strlen(full) + 1; n++) {
		char ctx[32];
		snprintf(ctx, sizeof(ctx), "out_len %zu", n);
		memset(out, 'Z', sizeof(out));
		int err = expr_format(ops, sizeof(ops), 8, x86, out, n);
		CHECK(out[n] == 'Z', "%s: wrote past the end", ctx);
		CHECK(memchr(out, '\0', n) != NULL, "%s: not terminated", ctx);
		if (n == strlen(full) + 1) {
			CHECK_INT(err, 0, ctx);
			CHECK_STR(out, full, ctx);
		} else {
			CHECK_INT(err, BK_E_LIMIT, ctx);
			CHECK_INT(strlen(out), n - 1, ctx);
			if (n >= 4)
				CHECK(strncmp(out, full, n - 4) == 0 &&
					      strcmp(out + n - 4, "...") == 0,
				      "%s: got \"%s\"", ctx, out);
		}
	}
	memset(out, 'Z', sizeof(out));
	CHECK_INT(expr_format(ops, sizeof(ops), 8, x86, out, 12), BK_E_LIMIT, "12 bytes");
	CHECK_STR(out, "DW_OP_br...", "12 bytes");

	/* A truncated expression in a small buffer still reports the decode
	 * error, which outranks truncation. */
	const uint8_t bad[] = { LIT(1), DW_OP_const4u, 1 };
	CHECK_INT(expr_format(bad, sizeof(bad), 8, x86, out, 16), BK_E_CORRUPT, "bad in 16 bytes");
	CHECK_STR(out, "DW_OP_lit1; ...", "bad in 16 bytes");

	CHECK_INT(expr_format(ops, sizeof(ops), 8, x86, NULL, 10), BK_E_INVAL, "NULL out");
	CHECK_INT(expr_format(ops, sizeof(ops), 8, x86, out, 0), BK_E_INVAL, "out_len 0");
	CHECK_INT(expr_format(NULL, 3, 8, x86, out, sizeof(out)), BK_E_INVAL, "NULL ops");
}

int main(void)
{
	for (size_t i = 0; i < sizeof(mem_bytes); i++)
		mem_bytes[i] = (uint8_t)(0x80 + i);

	test_eval_rows();
	test_eval_bounds();
	test_eval_callbacks();
	test_every_opcode();
	test_decode_rows();
	test_op_names();
	test_format_rows();
	test_format_truncation();
	return check_summary();
}
