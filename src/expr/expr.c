/* The DWARF expression decoder and the CFI expression VM (DWARF 5 §2.5,
 * §6.4.2).
 *
 * expr_decode_op knows the operand layout of every DWARF 5 operation and of
 * the GNU extensions in dwarf.h; it is the only place that reads expression
 * bytes, for the VM and for the printer (expr_format.c) alike.
 *
 * expr_eval keeps these invariants:
 *  - the value stack never holds more than EXPR_STACK_MAX values and never
 *    pops below empty (overflow is BK_E_LIMIT, underflow BK_E_CORRUPT);
 *  - at most EXPR_STEPS_MAX operations execute, and at most
 *    EXPR_SCAN_MAX further operations are decoded to check branch targets,
 *    so hostile input ends in bounded time with no allocation or recursion;
 *  - every value on the stack is already reduced to the generic type
 *    (addr_size bytes), so results never carry stray high bits.
 * It trusts its caller for a readable OPS[0..LEN) and for callbacks that
 * never fault; everything else (the bytes, register numbers, addresses) is
 * treated as hostile.
 */
#include "expr.h"

#include "../base/dwarf.h"

/* Branch targets are checked by decoding from a known operation boundary up
 * to the target. That work is bounded separately from execution. */
#define EXPR_SCAN_MAX EXPR_STEPS_MAX

/* Offset size of the DWARF format. The interface carries no 32/64-bit
 * DWARF flag; CFI expressions never contain these references anyway. */
#define EXPR_OFFSET_SIZE 4

/* Operand layouts. */
enum {
	K_UNKNOWN = 0, /* not an operation backstep knows */
	K_NONE,        /* no operands */
	K_ADDR,        /* addr_size bytes */
	K_U1,
	K_S1,
	K_U2,
	K_S2,
	K_U4,
	K_S4,
	K_U8,
	K_S8,
	K_ULEB,
	K_SLEB,
	K_REF,         /* offset-size reference into .debug_info */
	K_ULEB_SLEB,   /* bregx */
	K_ULEB_ULEB,   /* bit_piece, regval_type */
	K_REF_SLEB,    /* implicit_pointer */
	K_U1_ULEB,     /* deref_type, xderef_type */
	K_BLOCK,       /* ULEB length + bytes: implicit_value, entry_value */
	K_TYPED_BLOCK, /* ULEB type + 1-byte length + bytes: const_type */
	K_UNSUP,       /* known but not decodable (DW_OP_GNU_encoded_addr) */
};

struct op_info {
	const char *name;
	uint8_t kind;
};

#define OP(code, k) [DW_OP_##code] = { "DW_OP_" #code, k }

/* lit0-31, reg0-31 and breg0-31 share a layout; spell them out once. */
#define OP32(prefix, first, k)                                                   \
	[first + 0] = { prefix "0", k }, [first + 1] = { prefix "1", k },        \
	[first + 2] = { prefix "2", k }, [first + 3] = { prefix "3", k },        \
	[first + 4] = { prefix "4", k }, [first + 5] = { prefix "5", k },        \
	[first + 6] = { prefix "6", k }, [first + 7] = { prefix "7", k },        \
	[first + 8] = { prefix "8", k }, [first + 9] = { prefix "9", k },        \
	[first + 10] = { prefix "10", k }, [first + 11] = { prefix "11", k },    \
	[first + 12] = { prefix "12", k }, [first + 13] = { prefix "13", k },    \
	[first + 14] = { prefix "14", k }, [first + 15] = { prefix "15", k },    \
	[first + 16] = { prefix "16", k }, [first + 17] = { prefix "17", k },    \
	[first + 18] = { prefix "18", k }, [first + 19] = { prefix "19", k },    \
	[first + 20] = { prefix "20", k }, [first + 21] = { prefix "21", k },    \
	[first + 22] = { prefix "22", k }, [first + 23] = { prefix "23", k },    \
	[first + 24] = { prefix "24", k }, [first + 25] = { prefix "25", k },    \
	[first + 26] = { prefix "26", k }, [first + 27] = { prefix "27", k },    \
	[first + 28] = { prefix "28", k }, [first + 29] = { prefix "29", k },    \
	[first + 30] = { prefix "30", k }, [first + 31] = { prefix "31", k }

/* DWARF 5 §7.7.1 table 7.9, plus the GNU extensions. */
static const struct op_info op_table[256] = {
	OP(addr, K_ADDR),
	OP(deref, K_NONE),
	OP(const1u, K_U1),
	OP(const1s, K_S1),
	OP(const2u, K_U2),
	OP(const2s, K_S2),
	OP(const4u, K_U4),
	OP(const4s, K_S4),
	OP(const8u, K_U8),
	OP(const8s, K_S8),
	OP(constu, K_ULEB),
	OP(consts, K_SLEB),
	OP(dup, K_NONE),
	OP(drop, K_NONE),
	OP(over, K_NONE),
	OP(pick, K_U1),
	OP(swap, K_NONE),
	OP(rot, K_NONE),
	OP(xderef, K_NONE),
	OP(abs, K_NONE),
	OP(and, K_NONE),
	OP(div, K_NONE),
	OP(minus, K_NONE),
	OP(mod, K_NONE),
	OP(mul, K_NONE),
	OP(neg, K_NONE),
	OP(not, K_NONE),
	OP(or, K_NONE),
	OP(plus, K_NONE),
	OP(plus_uconst, K_ULEB),
	OP(shl, K_NONE),
	OP(shr, K_NONE),
	OP(shra, K_NONE),
	OP(xor, K_NONE),
	OP(bra, K_S2),
	OP(eq, K_NONE),
	OP(ge, K_NONE),
	OP(gt, K_NONE),
	OP(le, K_NONE),
	OP(lt, K_NONE),
	OP(ne, K_NONE),
	OP(skip, K_S2),
	OP32("DW_OP_lit", DW_OP_lit0, K_NONE),
	OP32("DW_OP_reg", DW_OP_reg0, K_NONE),
	OP32("DW_OP_breg", DW_OP_breg0, K_SLEB),
	OP(regx, K_ULEB),
	OP(fbreg, K_SLEB),
	OP(bregx, K_ULEB_SLEB),
	OP(piece, K_ULEB),
	OP(deref_size, K_U1),
	OP(xderef_size, K_U1),
	OP(nop, K_NONE),
	OP(push_object_address, K_NONE),
	OP(call2, K_U2),
	OP(call4, K_U4),
	OP(call_ref, K_REF),
	OP(form_tls_address, K_NONE),
	OP(call_frame_cfa, K_NONE),
	OP(bit_piece, K_ULEB_ULEB),
	OP(implicit_value, K_BLOCK),
	OP(stack_value, K_NONE),
	OP(implicit_pointer, K_REF_SLEB),
	OP(addrx, K_ULEB),
	OP(constx, K_ULEB),
	OP(entry_value, K_BLOCK),
	OP(const_type, K_TYPED_BLOCK),
	OP(regval_type, K_ULEB_ULEB),
	OP(deref_type, K_U1_ULEB),
	OP(xderef_type, K_U1_ULEB),
	OP(convert, K_ULEB),
	OP(reinterpret, K_ULEB),
	OP(GNU_push_tls_address, K_NONE),
	OP(GNU_uninit, K_NONE),
	OP(GNU_encoded_addr, K_UNSUP),
	OP(GNU_implicit_pointer, K_REF_SLEB),
	OP(GNU_entry_value, K_BLOCK),
	OP(GNU_const_type, K_TYPED_BLOCK),
	OP(GNU_regval_type, K_ULEB_ULEB),
	OP(GNU_deref_type, K_U1_ULEB),
	OP(GNU_convert, K_ULEB),
	OP(GNU_reinterpret, K_ULEB),
	OP(GNU_parameter_ref, K_U4),
	OP(GNU_addr_index, K_ULEB),
	OP(GNU_const_index, K_ULEB),
	OP(GNU_variable_value, K_REF),
};

const char *expr_op_name(uint8_t opcode)
{
	return op_table[opcode].name;
}

/* Fixed-size operand: N bytes little-endian, sign-extended when SIGNED. */
static int read_fixed(struct buf *b, unsigned n, bool is_signed, uint64_t *v)
{
	int err = buf_uN(b, n, v);
	if (!err && is_signed)
		*v = (uint64_t)base_sext(*v, 8 * n);
	return err;
}

static int read_sleb(struct buf *b, uint64_t *v)
{
	int64_t s;
	int err = buf_sleb(b, &s);
	if (!err)
		*v = (uint64_t)s;
	return err;
}

/* A block of LEN bytes at the reader; LEN is untrusted. */
static int read_block(struct buf *b, uint64_t len, struct expr_op *op)
{
	const uint8_t *start = b->p;
	int err = buf_skip(b, len);
	if (!err) {
		op->block = start;
		op->block_len = (size_t)len;
	}
	return err;
}

static int decode_operands(struct buf *b, uint8_t kind, uint8_t addr_size, struct expr_op *op)
{
	int err;
	uint64_t u;

	switch (kind) {
	case K_NONE:
		return 0;
	case K_ADDR:
		op->nargs = 1;
		return buf_uN(b, addr_size, &op->operand1);
	case K_U1:
	case K_S1:
		op->nargs = 1;
		return read_fixed(b, 1, kind == K_S1, &op->operand1);
	case K_U2:
	case K_S2:
		op->nargs = 1;
		return read_fixed(b, 2, kind == K_S2, &op->operand1);
	case K_U4:
	case K_S4:
		op->nargs = 1;
		return read_fixed(b, 4, kind == K_S4, &op->operand1);
	case K_U8:
	case K_S8:
		op->nargs = 1;
		return read_fixed(b, 8, kind == K_S8, &op->operand1);
	case K_ULEB:
		op->nargs = 1;
		return buf_uleb(b, &op->operand1);
	case K_SLEB:
		op->nargs = 1;
		return read_sleb(b, &op->operand1);
	case K_REF:
		op->nargs = 1;
		return buf_uN(b, EXPR_OFFSET_SIZE, &op->operand1);
	case K_ULEB_SLEB:
		op->nargs = 2;
		err = buf_uleb(b, &op->operand1);
		return err ? err : read_sleb(b, &op->operand2);
	case K_ULEB_ULEB:
		op->nargs = 2;
		err = buf_uleb(b, &op->operand1);
		return err ? err : buf_uleb(b, &op->operand2);
	case K_REF_SLEB:
		op->nargs = 2;
		err = buf_uN(b, EXPR_OFFSET_SIZE, &op->operand1);
		return err ? err : read_sleb(b, &op->operand2);
	case K_U1_ULEB:
		op->nargs = 2;
		err = buf_uN(b, 1, &op->operand1);
		return err ? err : buf_uleb(b, &op->operand2);
	case K_BLOCK:
		/* operand1 = block length, the bytes in block / block_len. */
		op->nargs = 1;
		err = buf_uleb(b, &op->operand1);
		return err ? err : read_block(b, op->operand1, op);
	case K_TYPED_BLOCK:
		/* operand1 = type offset, operand2 = byte count of the constant. */
		op->nargs = 2;
		err = buf_uleb(b, &op->operand1);
		if (!err)
			err = buf_uN(b, 1, &u);
		if (!err) {
			op->operand2 = u;
			err = read_block(b, u, op);
		}
		return err;
	case K_UNSUP:
	default:
		return BK_E_UNSUPPORTED;
	}
}

int expr_decode_op(struct buf *b, size_t expr_start_off, uint8_t addr_size, struct expr_op *op)
{
	const uint8_t *start = b->p;
	uint8_t opcode;
	int err;

	*op = (struct expr_op){ .off = expr_start_off };
	if (addr_size == 0 || addr_size > 8)
		return BK_E_INVAL;
	err = buf_u8(b, &opcode);
	if (err)
		return err;
	op->opcode = opcode;
	if (op_table[opcode].kind == K_UNKNOWN)
		err = BK_E_UNSUPPORTED;
	else
		err = decode_operands(b, op_table[opcode].kind, addr_size, op);
	if (err) {
		/* Leave the reader where it was, as every base reader does. */
		b->p = start;
		op->nargs = 0;
		op->block = NULL;
		op->block_len = 0;
		return err;
	}
	op->len = (size_t)(b->p - start);
	return 0;
}

/* ---- The VM ------------------------------------------------------------- */

struct vm {
	const uint8_t *ops;
	size_t len;
	const struct expr_env *env;
	unsigned bits;     /* width of the generic type: 32 or 64 */
	uint64_t mask;     /* low BITS bits set */
	unsigned depth;
	unsigned scanned;  /* operations decoded to check branch targets */
	size_t known_off;  /* the last branch target proved to be a boundary */
	uint64_t stack[EXPR_STACK_MAX];
};

static int push(struct vm *vm, uint64_t v)
{
	if (vm->depth >= EXPR_STACK_MAX)
		return BK_E_LIMIT;
	vm->stack[vm->depth++] = v & vm->mask;
	return 0;
}

static int pop(struct vm *vm, uint64_t *v)
{
	if (vm->depth == 0)
		return BK_CORRUPT;
	*v = vm->stack[--vm->depth];
	return 0;
}

/* The value as a signed number of the generic type. */
static int64_t sval(const struct vm *vm, uint64_t v)
{
	return base_sext(v, vm->bits);
}

/* Reads SIZE (1..8) bytes of target memory at ADDR, little-endian,
 * zero-extended. */
static int read_mem(const struct vm *vm, uint64_t addr, unsigned size, uint64_t *v)
{
	uint8_t bytes[8];
	int err = base_mem_read(&vm->env->mem, addr, bytes, size);
	if (err)
		return err;
	uint64_t x = 0;
	for (unsigned i = 0; i < size; i++)
		x |= (uint64_t)bytes[i] << (8 * i);
	*v = x;
	return 0;
}

static int push_reg(struct vm *vm, uint64_t regno, int64_t off)
{
	uint64_t v;
	int err;

	if (!vm->env->read_reg || regno > UINT32_MAX)
		return BK_E_BAD_REG;
	err = vm->env->read_reg(vm->env->reg_ctx, (unsigned)regno, &v);
	if (err)
		return err;
	/* Address arithmetic in the generic type wraps (§2.5.1.2). */
	return push(vm, v + (uint64_t)off);
}

/* Is TARGET the offset of an operation (or the end)? NEXT is the offset
 * just after the branch, itself a boundary. Decoding starts at the largest
 * boundary already known not to lie beyond TARGET. */
static int check_target(struct vm *vm, size_t next, size_t target)
{
	size_t off = 0;
	struct buf b;
	struct expr_op op;
	int err;

	if (target == vm->len || target == vm->known_off || target == next)
		return 0;
	if (vm->known_off < target)
		off = vm->known_off;
	if (next < target && next > off)
		off = next;
	b = buf_make(vm->ops + off, vm->len - off);
	while (off < target) {
		if (++vm->scanned > EXPR_SCAN_MAX)
			return BK_E_LIMIT;
		err = expr_decode_op(&b, off, (uint8_t)(vm->bits / 8), &op);
		if (err)
			return err;
		off += op.len;
	}
	if (off != target)
		return BK_CORRUPT; /* lands inside an operation */
	vm->known_off = target;
	return 0;
}

/* Offset NEXT moved by the signed 2-byte operand of skip / bra; the result
 * must lie within [0, len] on an operation boundary (§2.5.1.5). */
static int branch(struct vm *vm, size_t next, uint64_t operand, size_t *pos)
{
	int64_t delta = (int64_t)operand;
	size_t target;

	if (delta < 0 ? (uint64_t)-delta > next : (uint64_t)delta > vm->len - next)
		return BK_CORRUPT;
	target = delta < 0 ? next - (size_t)-delta : next + (size_t)delta;
	int err = check_target(vm, next, target);
	if (!err)
		*pos = target;
	return err;
}

/* Two-operand operations: A is the former second entry, B the former top. */
static int binary(struct vm *vm, uint8_t opcode)
{
	uint64_t a, b, r;

	if (vm->depth < 2)
		return BK_CORRUPT;
	b = vm->stack[--vm->depth];
	a = vm->stack[--vm->depth];
	int64_t sa = sval(vm, a), sb = sval(vm, b);

	switch (opcode) {
	/* §2.5.1.4 Arithmetic and Logical Operations. */
	case DW_OP_and:
		r = a & b;
		break;
	case DW_OP_div:
		/* Signed; INT64_MIN / -1 overflows in C, so negate unsigned. */
		if (sb == 0)
			return BK_E_DIV_ZERO;
		r = sb == -1 ? 0 - (uint64_t)sa : (uint64_t)(sa / sb);
		break;
	case DW_OP_minus:
		r = a - b;
		break;
	case DW_OP_mod:
		/* Modulo on the generic (unsigned) type. */
		if (b == 0)
			return BK_E_DIV_ZERO;
		r = a % b;
		break;
	case DW_OP_mul:
		r = a * b;
		break;
	case DW_OP_or:
		r = a | b;
		break;
	case DW_OP_plus:
		r = a + b;
		break;
	case DW_OP_shl:
		/* Counts at or beyond the width shift everything out. */
		r = b >= vm->bits ? 0 : a << b;
		break;
	case DW_OP_shr:
		r = b >= vm->bits ? 0 : a >> b;
		break;
	case DW_OP_shra: {
		/* Arithmetic shift without relying on >> of a negative int. */
		uint64_t ua = (uint64_t)sa;
		unsigned n = b >= vm->bits ? 63 : (unsigned)b;
		r = sa < 0 ? ~(~ua >> n) : ua >> n;
		break;
	}
	case DW_OP_xor:
		r = a ^ b;
		break;
	/* §2.5.1.5 Control Flow Operations: signed comparisons, 1 or 0. */
	case DW_OP_eq:
		r = sa == sb;
		break;
	case DW_OP_ge:
		r = sa >= sb;
		break;
	case DW_OP_gt:
		r = sa > sb;
		break;
	case DW_OP_le:
		r = sa <= sb;
		break;
	case DW_OP_lt:
		r = sa < sb;
		break;
	case DW_OP_ne:
		r = sa != sb;
		break;
	default:
		return BK_E_BAD_OP;
	}
	return push(vm, r);
}

/* Executes OP; *POS is the offset after it and may be moved by a branch. */
static int step(struct vm *vm, const struct expr_op *op, size_t *pos)
{
	uint8_t c = op->opcode;
	uint64_t v, w;
	int err;

	/* §2.5.1.1 Literal Encodings. */
	if (c >= DW_OP_lit0 && c <= DW_OP_lit31)
		return push(vm, (uint64_t)(c - DW_OP_lit0));
	/* §2.5.1.2 Register Values. */
	if (c >= DW_OP_breg0 && c <= DW_OP_breg31)
		return push_reg(vm, (uint64_t)(c - DW_OP_breg0), (int64_t)op->operand1);

	switch (c) {
	/* §2.5.1.1 Literal Encodings: operands are already sign-extended. */
	case DW_OP_addr:
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
		return push(vm, op->operand1);

	/* §2.5.1.2 Register Values. */
	case DW_OP_bregx:
		return push_reg(vm, op->operand1, (int64_t)op->operand2);

	/* §2.5.1.3 Stack Operations. */
	case DW_OP_dup:
		if (vm->depth < 1)
			return BK_CORRUPT;
		return push(vm, vm->stack[vm->depth - 1]);
	case DW_OP_drop:
		return pop(vm, &v);
	case DW_OP_over:
		if (vm->depth < 2)
			return BK_CORRUPT;
		return push(vm, vm->stack[vm->depth - 2]);
	case DW_OP_pick:
		/* Index 0 is the top of the stack. */
		if (op->operand1 >= vm->depth)
			return BK_CORRUPT;
		return push(vm, vm->stack[vm->depth - 1 - op->operand1]);
	case DW_OP_swap:
		if (vm->depth < 2)
			return BK_CORRUPT;
		v = vm->stack[vm->depth - 1];
		vm->stack[vm->depth - 1] = vm->stack[vm->depth - 2];
		vm->stack[vm->depth - 2] = v;
		return 0;
	case DW_OP_rot:
		/* Top becomes second, second becomes third, third becomes top. */
		if (vm->depth < 3)
			return BK_CORRUPT;
		v = vm->stack[vm->depth - 1];
		vm->stack[vm->depth - 1] = vm->stack[vm->depth - 3];
		vm->stack[vm->depth - 3] = vm->stack[vm->depth - 2];
		vm->stack[vm->depth - 2] = v;
		return 0;
	case DW_OP_deref:
		err = pop(vm, &v);
		if (!err)
			err = read_mem(vm, v, vm->bits / 8, &w);
		return err ? err : push(vm, w);
	case DW_OP_deref_size:
		/* 1..addr_size bytes, zero-extended. */
		if (op->operand1 == 0 || op->operand1 > vm->bits / 8)
			return BK_CORRUPT;
		err = pop(vm, &v);
		if (!err)
			err = read_mem(vm, v, (unsigned)op->operand1, &w);
		return err ? err : push(vm, w);

	/* §2.5.1.4 Arithmetic and Logical Operations. */
	case DW_OP_abs:
		err = pop(vm, &v);
		/* abs(most negative) wraps to itself. */
		return err ? err : push(vm, sval(vm, v) < 0 ? 0 - v : v);
	case DW_OP_neg:
		err = pop(vm, &v);
		return err ? err : push(vm, 0 - v);
	case DW_OP_not:
		err = pop(vm, &v);
		return err ? err : push(vm, ~v);
	case DW_OP_plus_uconst:
		err = pop(vm, &v);
		return err ? err : push(vm, v + op->operand1);
	case DW_OP_and:
	case DW_OP_div:
	case DW_OP_minus:
	case DW_OP_mod:
	case DW_OP_mul:
	case DW_OP_or:
	case DW_OP_plus:
	case DW_OP_shl:
	case DW_OP_shr:
	case DW_OP_shra:
	case DW_OP_xor:
	/* §2.5.1.5 Control Flow Operations: comparisons. */
	case DW_OP_eq:
	case DW_OP_ge:
	case DW_OP_gt:
	case DW_OP_le:
	case DW_OP_lt:
	case DW_OP_ne:
		return binary(vm, c);

	/* §2.5.1.5 Control Flow Operations: branches, relative to the end of
	 * the operation. */
	case DW_OP_skip:
		return branch(vm, *pos, op->operand1, pos);
	case DW_OP_bra:
		err = pop(vm, &v);
		if (err || v == 0)
			return err;
		return branch(vm, *pos, op->operand1, pos);

	/* §2.5.1.7 Special Operations. */
	case DW_OP_nop:
		return 0;

	/* Everything else is not allowed in CFI (§6.4.2): call2/call4/call_ref,
	 * push_object_address, call_frame_cfa, entry_value, fbreg, the typed
	 * operations and addrx/constx depend on context CFI does not have;
	 * xderef*, form_tls_address and the GNU extensions are not defined
	 * there; reg*, regx, piece, bit_piece, implicit_value, stack_value and
	 * implicit_pointer describe locations, not the value CFI needs
	 * (§2.6.1). */
	default:
		return BK_E_BAD_OP;
	}
}

int expr_eval(const uint8_t *ops, size_t len, const struct expr_env *env,
	      const uint64_t *initial, uint64_t *result)
{
	struct vm vm;
	struct buf b;
	struct expr_op op;
	size_t pos = 0;
	unsigned steps = 0;
	int err;

	if (!env || !result || (!ops && len))
		return BK_E_INVAL;
	if (env->addr_size != 4 && env->addr_size != 8)
		return BK_E_INVAL;

	vm.ops = ops;
	vm.len = len;
	vm.env = env;
	vm.bits = 8u * env->addr_size;
	vm.mask = env->addr_size == 8 ? UINT64_MAX : UINT32_MAX;
	vm.depth = 0;
	vm.scanned = 0;
	vm.known_off = 0;

	/* DW_CFA_expression / DW_CFA_val_expression push the CFA (§6.4.2.3). */
	if (initial)
		push(&vm, *initial);

	while (pos < len) {
		if (++steps > EXPR_STEPS_MAX)
			return BK_E_LIMIT;
		b = buf_make(ops + pos, len - pos);
		err = expr_decode_op(&b, pos, env->addr_size, &op);
		if (err)
			return err;
		pos += op.len;
		err = step(&vm, &op, &pos);
		if (err)
			return err;
	}
	if (vm.depth == 0)
		return BK_CORRUPT;
	*result = vm.stack[vm.depth - 1];
	return 0;
}
