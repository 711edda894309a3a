/* The seam between the stack analysis (chk_stack.c: paths, states, joins,
 * the comparison with the CFI rows) and one architecture's instruction
 * semantics (chk_stack_x86.c, chk_stack_aarch64.c: each fills the table).
 *
 * An architecture decodes one instruction into a struct sk_insn: its
 * length, how control leaves it (flow), and what it does to the registers
 * and the stack as a few micro-operations (struct sk_mop) over abstract
 * registers. The engine knows nothing of opcodes; the decoder knows
 * nothing of states. What a micro-operation does to a value:
 *
 *   kind            effect                        x86-64 examples
 *   SK_MOP_SET      dst = src + imm               mov rbp, rsp; add rsp, 8
 *                   (src SK_NONE: the constant imm) mov eax, 5
 *   SK_MOP_ADDR     dst = address of mem          lea rsp, [rbp - 16]
 *   SK_MOP_LOAD     dst = mem (mem.size bytes)    pop rbx (with a SET of rsp)
 *   SK_MOP_STORE    mem = src (SK_NONE: a value   push rbx; mov [rsp+8], r12;
 *                   that is none of the tracked)  movaps [rsp], xmm0
 *   SK_MOP_NEW      dst = a new value, none of    xor ebx, ebx; imul rbx, rax
 *                   the tracked ones
 *   SK_MOP_UNKNOWN  dst = anything                rdrand-like sources
 *   SK_MOP_ADD/SUB  dst = dst +/- src             sub rsp, rax (alloca)
 *   SK_MOP_AND      dst = dst & imm               and rsp, -32 (realignment)
 *   SK_MOP_XCHG     dst, src = src, dst           xchg rbx, r12
 *   SK_MOP_CMOV     dst = dst or src (either)     cmovne rbx, rax
 *   SK_MOP_ZEXT     dst = the low imm bytes of    movzx edx, sil; mov ecx, edi
 *                   src, zero-extended
 *   SK_MOP_CMP      flags from the low WIDTH      cmp eax, 5; cmp sil, 3;
 *                   bytes of dst against src      cmp rsp, r11
 *                   (SK_NONE: imm)
 *   SK_MOP_SHL      dst = dst << imm              (AArch64) add x1, x2, w1, sxtb #2
 *   SK_MOP_SIGN     dst = dst signed, src the     (AArch64) paciasp: x30 with sp
 *                   modifier (pointer authentication)
 *   SK_MOP_AUTH     dst = dst authenticated       (AArch64) autiasp; xpaclri
 *                   (SK_F_STRIP: stripped)
 *
 * SK_MOP_ZEXT with SK_F_SIGNED sign-extends the low imm bytes instead.
 *
 * Flags: SK_F_W32 (the write is 32 bits wide and zero-extends: the upper
 * half becomes 0), SK_F_SIGNED (a load sign-extends), SK_F_PUSH (a store
 * that pushes: a save area no callee is given the address of). Registers are
 * abstract: the architecture maps DWARF numbers to them (x86-64: the same
 * numbers, 0..15 and xmm0..15 as 17..32; 16 is the return-address column,
 * never a register); SK_TMP is a scratch register one instruction may use
 * (push [mem] = load into SK_TMP, store).
 * A memory operand's base or index is a register or SK_NONE; rip-relative
 * operands arrive folded into an absolute displacement.
 *
 * After the micro-operations, every register in CLOBBER gets a new value
 * (NEW; those also in CLOBBER32 with a zero upper half): writes the table
 * above does not describe. Control leaves by FLOW:
 *
 *   SK_FALL    to the next instruction
 *   SK_JUMP    to TARGET                     jmp rel
 *   SK_BRANCH  to TARGET or the next (COND)  jcc, loop, jrcxz, xbegin
 *   SK_CALL    a call; TARGET when direct, or the memory word it reads
 *              (GOT slot) when that is at a fixed address; then the next
 *   SK_RET     out of the function           ret
 *   SK_STOP    nowhere                       hlt, ud2, int3
 *   SK_IJUMP   to the value of IJUMP_REG     jmp rax; jmp [T + rax*8]
 *              (a LOAD into SK_TMP first for (the word at TARGET: jmp [rip+GOT])
 *              a memory operand)
 *   SK_BAD     the bytes do not decode
 *
 * Everything here is bounded: an instruction has at most SK_MAX_MOPS
 * micro-operations.
 */
#ifndef BK_CHK_STACK_H
#define BK_CHK_STACK_H

#include "../base/base.h"

#define SK_NREGS 48           /* abstract registers, SK_TMP included */
#define SK_TMP (SK_NREGS - 1)
#define SK_NONE 0xff
#define SK_MAX_MOPS 6
#define SK_MAX_CMP 24         /* registers compared with the rows */

enum sk_mop_kind {
	SK_MOP_SET = 1,
	SK_MOP_ADDR,
	SK_MOP_LOAD,
	SK_MOP_STORE,
	SK_MOP_NEW,
	SK_MOP_UNKNOWN,
	SK_MOP_ADD,
	SK_MOP_SUB,
	SK_MOP_AND,
	SK_MOP_XCHG,
	SK_MOP_CMOV,
	SK_MOP_ZEXT,
	SK_MOP_CMP,
	SK_MOP_SHL,
	SK_MOP_SIGN,
	SK_MOP_AUTH,
};

#define SK_F_W32 1
#define SK_F_SIGNED 2
#define SK_F_PUSH 4           /* a store of a push: the frame's save area */
#define SK_F_STRIP 8          /* SK_MOP_AUTH: strip the signature, no check */

/* A memory operand's base when the address is not one the analysis can
 * follow (segment-relative, 32-bit addressing). */
#define SK_MEM_FAR 0xfe

struct sk_mem {
	int64_t disp;
	uint8_t base, index;  /* registers, SK_NONE, or (base) SK_MEM_FAR */
	uint8_t scale;        /* 1, 2, 4, 8 */
	uint8_t size;         /* bytes accessed */
};

struct sk_mop {
	struct sk_mem mem;
	int64_t imm;
	uint8_t kind, dst, src, flags;
	uint8_t width;        /* SK_MOP_CMP: bytes compared (1, 2, 4, 8) */
};

enum sk_flow { SK_FALL = 0, SK_JUMP, SK_BRANCH, SK_CALL, SK_RET, SK_STOP, SK_IJUMP, SK_BAD };

/* Branch conditions the engine learns from (the flags of the SK_MOP_CMP
 * right before): unsigned above / above-or-equal / below / below-or-equal,
 * equal, not equal. Anything else is SK_COND_OTHER. */
enum sk_cond { SK_COND_OTHER = 0, SK_COND_A, SK_COND_AE, SK_COND_B, SK_COND_BE, SK_COND_E,
	       SK_COND_NE };

struct sk_insn {
	uint64_t addr;
	uint64_t target;      /* see SK_JUMP, SK_BRANCH, SK_CALL, SK_IJUMP */
	uint64_t clobber;     /* registers (bit = DWARF number) given new values */
	uint64_t clobber32;   /* of those, written 32 bits wide (upper half zero) */
	uint32_t mop;         /* index of its first micro-operation */
	uint8_t nmop;
	uint8_t len;
	uint8_t flow;         /* enum sk_flow */
	uint8_t cond;         /* enum sk_cond, for SK_BRANCH */
	uint8_t ijump_reg;    /* SK_IJUMP */
	uint8_t fill;         /* alignment fill (nop forms, int3): not counted as code */
	uint8_t call_next;    /* SK_CALL to the next instruction: pushes its own address */
	uint8_t via_mem;      /* SK_CALL: TARGET is the memory word read (a GOT slot) */
	uint8_t keeps_flags;  /* known not to write the flags (mov, lea, push, ...) */
};

/* One architecture. Where the return address is at a function's entry:
 * in the register the RA column names when the map gives it one (AArch64:
 * x30; the RA column's rule "same value" then means that register), else
 * in memory at CFA + ra_slot (x86-64: column 16 is no register). A call
 * gives that register a new value through the decoder's CLOBBER, not
 * through call_clobbered. RA_SIGN_STATE (AArch64 pointer authentication)
 * is compared as a property of the return address's value: signed by an
 * SK_MOP_SIGN the code ran, or not. */
struct sk_arch {
	enum bk_arch arch;
	unsigned sp, fp;          /* abstract registers */
	unsigned ra_col;          /* the return-address column (DWARF) */
	uint64_t callee_saved;    /* registers a call preserves (besides sp) */
	uint64_t call_clobbered;  /* registers a call gives new values */
	unsigned nregs;           /* abstract registers in use: 0..nregs-1 and SK_TMP */
	/* The abstract register of DWARF register d < ndwarf (SK_NONE: not
	 * tracked), and the DWARF register of abstract register r < nregs
	 * (0xffff: none). */
	const uint8_t *reg_of_dwarf_map;
	unsigned ndwarf;
	const uint16_t *dwarf_of_reg_map;
	uint8_t ncmp;             /* columns compared with the rows (DWARF): the */
	uint8_t cmp_regs[SK_MAX_CMP]; /* callee-saved registers and the RA column */
	int64_t entry_cfa_off;    /* CFA - SP at a function's first instruction */
	int64_t ra_slot;          /* the return address is at CFA + ra_slot at entry */
	unsigned stack_align;     /* the CFA is a multiple of this (ABI) */
	uint8_t table_sizes;      /* jump-table entry sizes the compilers use (bit = bytes) */
	uint32_t reloc_jump_slot, reloc_glob_dat; /* GOT slots named by a symbol */
	/* Open / close a decoder (may fail: BK_E_UNSUPPORTED without Capstone). */
	int (*open)(void **dec);
	void (*close)(void *dec);
	/* Decode the instruction in BYTES (LEN readable) at ADDR into IN, its
	 * micro-operations into MOPS (room for SK_MAX_MOPS; IN->nmop says how
	 * many). When the bytes do not decode: IN->flow = SK_BAD, IN->len 1. */
	void (*decode)(void *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		       struct sk_insn *in, struct sk_mop *mops);
	/* The instruction as text, for reports. */
	void (*text)(void *dec, const uint8_t *bytes, size_t len, uint64_t addr, char *buf,
		     size_t buflen);
};

static inline unsigned sk_reg_of_dwarf(const struct sk_arch *ar, unsigned dwarf)
{
	return dwarf < ar->ndwarf ? ar->reg_of_dwarf_map[dwarf] : SK_NONE;
}

static inline unsigned sk_dwarf_of_reg(const struct sk_arch *ar, unsigned reg)
{
	return reg < ar->nregs ? ar->dwarf_of_reg_map[reg] : 0xffff;
}

/* The abstract register holding the return address at entry, or SK_NONE
 * (it is on the stack at CFA + ra_slot). */
static inline unsigned sk_ra_reg(const struct sk_arch *ar)
{
	return sk_reg_of_dwarf(ar, ar->ra_col);
}

BK_HIDDEN extern const struct sk_arch chk_stack_x86_64;
/* x86-64 with every instruction decoded by Capstone (no fast path): the
 * reference the fast path is tested against. */
BK_HIDDEN extern const struct sk_arch chk_stack_x86_64_reference;
/* How many instructions the x86-64 decoder DEC decoded, and how many of
 * them its fast path did (for tests/unit/test_x86decode.c's report). */
BK_HIDDEN void chk_stack_x86_counts(void *dec, uint64_t *all, uint64_t *fast);
BK_HIDDEN extern const struct sk_arch chk_stack_aarch64;
/* AArch64 with every instruction decoded by Capstone (no fast path): the
 * reference the fast path is tested against. */
BK_HIDDEN extern const struct sk_arch chk_stack_aarch64_reference;

#endif
