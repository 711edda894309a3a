/* AArch64 frames interrupted where no CFI covers the PC and the return
 * address is still in x30, or in the record a prologue just pushed: a PLT
 * stub (binutils' plain, BTI and PAC forms, and the lazy-binding PLT0
 * that pushes x16 and x30), a function's entry reached by BL or BLR, and
 * a prologue (paciasp; stp x29, x30, [sp, #-32]!; mov x29, sp). Each case
 * is a snapshot (hand-assembled code in a module without tables, a
 * stack), so it runs on any host; one step must give exactly the caller's
 * PC, SP and x29. And the cases that must not be taken for these: code
 * that moved SP, a BL to somewhere after the PC, a PC too far from the
 * entry. */
#include <string.h>

#include "backstep.h"
#include "base/base.h"
#include "check.h"

#define CODE 0x400000ull
#define STACK 0x7f0000ull
#define SP (STACK + 0x80)

static uint8_t code[0x1000], stack[0x100];

static void put32(uint64_t addr, uint32_t insn)
{
	for (int i = 0; i < 4; i++)
		code[addr - CODE + i] = (uint8_t)(insn >> (8 * i));
}

static void put64(uint64_t addr, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		stack[addr - STACK + i] = (uint8_t)(v >> (8 * i));
}

/* bl TARGET at AT. */
static uint32_t bl(uint64_t at, uint64_t target)
{
	return 0x94000000u | (uint32_t)(((target - at) / 4) & 0x3ffffff);
}

enum {
	NOP = 0xd503201f, BTI_C = 0xd503245f, PACIASP = 0xd503233f, AUTIA1716 = 0xd503219f,
	ADRP_X16 = 0x90000010, LDR_X17 = 0xf9400611, ADD_X16 = 0x91002210, BR_X17 = 0xd61f0220,
	STP_X16_X30 = 0xa9bf7bf0, STP_X29_X30_32 = 0xa9be7bfd, MOV_X29_SP = 0x910003fd,
	SUB_SP_16 = 0xd10043ff, BLR_X5 = 0xd63f00a0,
};

/* The code: callers at CODE + 8k (bl or blr, then a nop), returning to
 * CODE + 8k + 4; the callees from CODE + 0x100. */
#define PLT (CODE + 0x100)      /* adrp, ldr, add, br */
#define PLT_BTI (CODE + 0x140)  /* bti c, adrp, ldr, add, autia1716, br */
#define PLT0 (CODE + 0x180)     /* stp x16, x30, then adrp, ldr, add, br */
#define FUNC (CODE + 0x200)     /* paciasp, stp x29, x30, mov x29, sp, nop... */
#define MOVES_SP (CODE + 0x240) /* sub sp, sp, #16, nop... */
static const uint64_t callee[] = { PLT, PLT_BTI, PLT0, FUNC, MOVES_SP };
#define CALLER(k) (CODE + 8 * (k))
#define RA(k) (CALLER(k) + 4)
#define BLR_CALLER CALLER(8)

static void assemble(void)
{
	for (size_t i = 0; i < sizeof(code); i += 4)
		put32(CODE + i, NOP);
	for (unsigned k = 0; k < BK_ARRAY_LEN(callee); k++)
		put32(CALLER(k), bl(CALLER(k), callee[k]));
	put32(BLR_CALLER, BLR_X5);
	static const uint32_t plt[] = { ADRP_X16, LDR_X17, ADD_X16, BR_X17 };
	static const uint32_t plt_bti[] = { BTI_C, ADRP_X16, LDR_X17, ADD_X16, AUTIA1716, BR_X17 };
	static const uint32_t plt0[] = { STP_X16_X30, ADRP_X16, LDR_X17, ADD_X16, BR_X17 };
	static const uint32_t func[] = { PACIASP, STP_X29_X30_32, MOV_X29_SP };
	for (unsigned i = 0; i < BK_ARRAY_LEN(plt); i++)
		put32(PLT + 4 * i, plt[i]);
	for (unsigned i = 0; i < BK_ARRAY_LEN(plt_bti); i++)
		put32(PLT_BTI + 4 * i, plt_bti[i]);
	for (unsigned i = 0; i < BK_ARRAY_LEN(plt0); i++)
		put32(PLT0 + 4 * i, plt0[i]);
	for (unsigned i = 0; i < BK_ARRAY_LEN(func); i++)
		put32(FUNC + 4 * i, func[i]);
	put32(MOVES_SP, SUB_SP_16);
}

/* A signed return address (pointer-authentication bits above bit 48). */
#define SIGNED(ra) ((ra) | 0x002a000000000000ull)
#define CALLER_FP 0x7f00f0ull

int main(void)
{
	assemble();
	/* What a pushed frame record or PLT0 left at SP. */
	put64(SP, CALLER_FP);
	put64(SP + 8, SIGNED(RA(3)));

	struct bk_mem_region regions[] = { { CODE, code, sizeof(code) }, { STACK, stack, sizeof(stack) } };
	struct bk_space *s;
	CHECK_INT(bk_space_create_snapshot(BK_ARCH_AARCH64, regions, 2, &s), 0, "snapshot");
	if (!s)
		return check_summary();
	/* A module without tables: every PC has no CFI. */
	struct bk_module_desc m = { sizeof(m), "/nonexistent/a64nocfi", CODE, CODE, CODE + sizeof(code) };
	CHECK_INT(bk_space_add_module(s, &m), 0, "module");

	static const struct {
		const char *what;
		uint64_t pc, x30, x5;
		int want;          /* the step's result */
		uint64_t pc1, sp1; /* the caller's PC and SP, when it steps */
		int fp1;           /* 1: x29 comes from the record */
	} cases[] = {
		{ "PLT stub, adrp", PLT, RA(0), 0, 1, RA(0), SP, 0 },
		{ "PLT stub, ldr", PLT + 4, RA(0), 0, 1, RA(0), SP, 0 },
		{ "PLT stub, br", PLT + 12, RA(0), 0, 1, RA(0), SP, 0 },
		{ "BTI+PAC PLT stub, bti", PLT_BTI, RA(1), 0, 1, RA(1), SP, 0 },
		{ "BTI+PAC PLT stub, autia1716", PLT_BTI + 16, RA(1), 0, 1, RA(1), SP, 0 },
		{ "BTI+PAC PLT stub, br", PLT_BTI + 20, RA(1), 0, 1, RA(1), SP, 0 },
		{ "PLT stub reached by a tail call (x30 anything)", PLT + 8, RA(4), 0, 1, RA(4), SP, 0 },
		{ "PLT0, at its stp", PLT0, RA(2), 0, 1, RA(2), SP, 0 },
		{ "PLT0, past its stp", PLT0 + 8, 0x1234, 0, 1, RA(3), SP + 16, 0 },
		{ "function entry (bl)", FUNC, RA(3), 0, 1, RA(3), SP, 0 },
		{ "after paciasp (x30 signed)", FUNC + 4, SIGNED(RA(3)), 0, 1, RA(3), SP, 0 },
		{ "after stp x29, x30", FUNC + 8, SIGNED(RA(3)), 0, 1, RA(3), SP + 32, 1 },
		{ "after mov x29, sp", FUNC + 12, SIGNED(RA(3)), 0, 1, RA(3), SP + 32, 1 },
		{ "function entry (blr x5)", FUNC, BLR_CALLER + 4, FUNC, 1, BLR_CALLER + 4, SP, 0 },
		{ "after stp (blr x5)", FUNC + 8, BLR_CALLER + 4, FUNC, 1, RA(3), SP + 32, 1 },
		/* Not these rules: the walk must not take x30 (here it ends:
		 * no frame pointer, nothing plausible on the stack). */
		{ "SP moved since the entry", MOVES_SP + 4, RA(4), 0, 0, 0, 0, 0 },
		{ "BL to after the PC", FUNC - 8, RA(3), 0, 0, 0, 0, 0 },
		{ "too far from the entry", FUNC + 4 * 17, RA(3), 0, 0, 0, 0, 0 },
		{ "blr x5, x5 elsewhere", FUNC + 8, BLR_CALLER + 4, CODE + 0x800, 0, 0, 0, 0 },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
		const char *what = cases[i].what;
		struct bk_regs r;
		memset(&r, 0, sizeof(r));
		bk_regs_set(&r, 32, cases[i].pc);
		bk_regs_set(&r, 31, SP);
		bk_regs_set(&r, 30, cases[i].x30);
		bk_regs_set(&r, 29, 0);
		bk_regs_set(&r, 5, cases[i].x5);
		struct bk_cursor c;
		CHECK_INT(bk_cursor_init(&c, s, &r), 0, what);
		int rc = bk_cursor_step(&c);
		CHECK_INT(rc, cases[i].want, what);
		if (rc != 1 || cases[i].want != 1)
			continue;
		CHECK_U64(bk_cursor_pc(&c), cases[i].pc1, what);
		CHECK_U64(bk_cursor_sp(&c), cases[i].sp1, what);
		CHECK_INT(bk_cursor_how(&c), BK_HOW_FP, what);
		uint64_t fp = ~0ull;
		CHECK_INT(bk_cursor_reg(&c, 29, &fp), 1, what);
		CHECK_U64(fp, cases[i].fp1 ? CALLER_FP : 0, what);
	}
	bk_space_destroy(s);
	return check_summary();
}
