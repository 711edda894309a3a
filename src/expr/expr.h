/* The DWARF expression VM for call-frame information (DWARF 5 §2.5, §6.4.2).
 *
 * Pure: registers and memory come from callbacks; no allocation, no OS calls,
 * safe in a signal handler. Bounded: at most EXPR_STACK_MAX values on the
 * stack and EXPR_STEPS_MAX operations executed per evaluation (a DW_OP_skip
 * loop ends with BK_E_LIMIT). One decoder (expr_decode_op) serves the VM and
 * the printer.
 */
#ifndef BK_EXPR_H
#define BK_EXPR_H

#include "../arch/arch.h"
#include "../base/base.h"

#define EXPR_STACK_MAX 64
#define EXPR_STEPS_MAX 10000

/* Where an evaluation gets register values and target memory. */
struct expr_env {
	uint8_t addr_size; /* 4 or 8: DW_OP_addr / DW_OP_deref width, result mask */
	/* Value of DWARF register REGNO in the frame being unwound; BK_E_BAD_REG
	 * (or another BK_E_*) when it is not known. */
	int (*read_reg)(void *ctx, unsigned regno, uint64_t *value);
	void *reg_ctx;
	struct base_mem mem;
};

/* One decoded operation. Operands are raw: sign-carrying operands are stored
 * sign-extended in operand1 / operand2 as int64 bit patterns. */
struct expr_op {
	uint8_t opcode;
	uint8_t nargs;          /* operands present: 0, 1 or 2 */
	uint64_t operand1;
	uint64_t operand2;
	const uint8_t *block;   /* DW_OP_implicit_value / entry_value / const_type bytes */
	size_t block_len;
	size_t off;             /* offset of the opcode within the expression */
	size_t len;             /* bytes of opcode plus operands */
};

/* Decode the operation at B and advance past it. BK_E_CORRUPT on truncated
 * operands, BK_E_UNSUPPORTED for an opcode DWARF 5 does not define. */
BK_HIDDEN int expr_decode_op(struct buf *b, size_t expr_start_off, uint8_t addr_size,
			     struct expr_op *op);

/* The spec name of OPCODE ("DW_OP_breg7"), or NULL if unknown. AS-safe. */
BK_HIDDEN const char *expr_op_name(uint8_t opcode);

/* Evaluate OPS[0..LEN). If INITIAL is non-NULL its value is pushed first, as
 * DW_CFA_expression and DW_CFA_val_expression require (DWARF 5 §6.4.2.3).
 * The result is the top of the stack. Errors: BK_E_CORRUPT (malformed),
 * BK_E_BAD_OP (operation not allowed in CFI), BK_E_LIMIT (stack overflow or
 * step bound), BK_E_CORRUPT on stack underflow or an empty result,
 * BK_E_DIV_ZERO, BK_E_MEMORY (a read failed), BK_E_BAD_REG. AS-safe. */
BK_HIDDEN int expr_eval(const uint8_t *ops, size_t len, const struct expr_env *env,
			const uint64_t *initial, uint64_t *result);

/* Render OPS as text, "DW_OP_breg7 (rsp) +8; DW_OP_deref", register names
 * from ARCH (may be NULL: numbers only). Always NUL-terminates OUT; on a
 * decoding error the text ends with "<error: ...>" and the code is returned. */
BK_HIDDEN int expr_format(const uint8_t *ops, size_t len, uint8_t addr_size,
			  const struct arch_info *arch, char *out, size_t out_len);

#endif
