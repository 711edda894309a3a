/* expr_format: DWARF expressions as text, for dumps and error messages.
 *
 * "DW_OP_breg7 (rsp) +8; DW_OP_deref". Operations come from expr_decode_op,
 * the same decoder the VM uses, so the text shows exactly what the VM sees.
 * Invariant: OUT is NUL-terminated at all times and nothing is written at or
 * past OUT + OUT_LEN; text that does not fit is cut and ends in "...".
 * No allocation and no stdio (numbers are converted here), so it is usable
 * anywhere, including a signal handler.
 */
#include "expr.h"

#include "../base/dwarf.h"

struct out {
	char *p;       /* where the next character goes; *p is always NUL */
	char *end;     /* last byte of the buffer, reserved for the NUL */
	bool truncated;
};

static void put_mem(struct out *o, const char *s, size_t n)
{
	size_t room = (size_t)(o->end - o->p);
	if (n > room) {
		n = room;
		o->truncated = true;
	}
	memcpy(o->p, s, n);
	o->p += n;
	*o->p = '\0';
}

static void put(struct out *o, const char *s)
{
	put_mem(o, s, strlen(s));
}

static void put_dec(struct out *o, uint64_t v)
{
	char tmp[20];
	size_t i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put_mem(o, tmp + i, sizeof(tmp) - i);
}

/* Signed decimal; PLUS forces a '+' on non-negative values (offsets). */
static void put_sdec(struct out *o, uint64_t bits, bool plus)
{
	int64_t v = (int64_t)bits;
	if (v < 0) {
		put(o, "-");
		put_dec(o, 0 - bits); /* also right for INT64_MIN */
	} else {
		if (plus)
			put(o, "+");
		put_dec(o, bits);
	}
}

static const char hex_digits[] = "0123456789abcdef";

static void put_hex(struct out *o, uint64_t v)
{
	char tmp[18];
	size_t i = sizeof(tmp);
	do {
		tmp[--i] = hex_digits[v & 0xf];
		v >>= 4;
	} while (v);
	tmp[--i] = 'x';
	tmp[--i] = '0';
	put_mem(o, tmp + i, sizeof(tmp) - i);
}

/* "{01 02 ff}" */
static void put_block(struct out *o, const uint8_t *p, size_t len)
{
	put(o, "{");
	for (size_t i = 0; i < len && !o->truncated; i++) {
		char byte[3] = { hex_digits[p[i] >> 4], hex_digits[p[i] & 0xf], ' ' };
		put_mem(o, byte, i + 1 < len ? 3 : 2);
	}
	put(o, "}");
}

/* " (rsp)" when the architecture names REGNO. */
static void put_reg_name(struct out *o, const struct arch_info *arch, uint64_t regno)
{
	const char *name;
	if (!arch || regno > UINT32_MAX)
		return;
	name = arch_reg_name(arch, (unsigned)regno);
	if (name) {
		put(o, " (");
		put(o, name);
		put(o, ")");
	}
}

static void format_op(struct out *o, const struct expr_op *op, const struct arch_info *arch)
{
	uint8_t c = op->opcode;

	put(o, expr_op_name(c));

	/* §2.6.1.1.3 register location descriptions, §2.5.1.2 register values. */
	if (c >= DW_OP_reg0 && c <= DW_OP_reg31) {
		put_reg_name(o, arch, (uint64_t)(c - DW_OP_reg0));
		return;
	}
	if (c >= DW_OP_breg0 && c <= DW_OP_breg31) {
		put_reg_name(o, arch, (uint64_t)(c - DW_OP_breg0));
		put(o, " ");
		put_sdec(o, op->operand1, true);
		return;
	}

	switch (c) {
	case DW_OP_regx:
		put(o, " ");
		put_dec(o, op->operand1);
		put_reg_name(o, arch, op->operand1);
		return;
	case DW_OP_bregx:
		put(o, " ");
		put_dec(o, op->operand1);
		put_reg_name(o, arch, op->operand1);
		put(o, " ");
		put_sdec(o, op->operand2, true);
		return;
	case DW_OP_regval_type:
	case DW_OP_GNU_regval_type:
		put(o, " ");
		put_dec(o, op->operand1);
		put_reg_name(o, arch, op->operand1);
		put(o, " ");
		put_hex(o, op->operand2);
		return;

	/* Addresses and references into other sections: hex. */
	case DW_OP_addr:
	case DW_OP_call2:
	case DW_OP_call4:
	case DW_OP_call_ref:
	case DW_OP_convert:
	case DW_OP_reinterpret:
	case DW_OP_GNU_convert:
	case DW_OP_GNU_reinterpret:
	case DW_OP_GNU_parameter_ref:
	case DW_OP_GNU_variable_value:
		put(o, " ");
		put_hex(o, op->operand1);
		return;

	/* Signed constants. */
	case DW_OP_const1s:
	case DW_OP_const2s:
	case DW_OP_const4s:
	case DW_OP_const8s:
	case DW_OP_consts:
		put(o, " ");
		put_sdec(o, op->operand1, false);
		return;

	/* Signed offsets: explicit sign. skip/bra count from the end of the
	 * operation (§2.5.1.5). */
	case DW_OP_skip:
	case DW_OP_bra:
	case DW_OP_fbreg:
		put(o, " ");
		put_sdec(o, op->operand1, true);
		return;

	case DW_OP_implicit_pointer:
	case DW_OP_GNU_implicit_pointer:
		put(o, " ");
		put_hex(o, op->operand1);
		put(o, " ");
		put_sdec(o, op->operand2, true);
		return;

	case DW_OP_deref_type:
	case DW_OP_xderef_type:
	case DW_OP_GNU_deref_type:
		put(o, " ");
		put_dec(o, op->operand1);
		put(o, " ");
		put_hex(o, op->operand2);
		return;

	case DW_OP_bit_piece:
		put(o, " ");
		put_dec(o, op->operand1);
		put(o, " ");
		put_dec(o, op->operand2);
		return;

	case DW_OP_implicit_value:
	case DW_OP_entry_value:
	case DW_OP_GNU_entry_value:
		put(o, " ");
		put_dec(o, op->block_len);
		put(o, " ");
		put_block(o, op->block, op->block_len);
		return;

	case DW_OP_const_type:
	case DW_OP_GNU_const_type:
		put(o, " ");
		put_hex(o, op->operand1);
		put(o, " ");
		put_dec(o, op->block_len);
		put(o, " ");
		put_block(o, op->block, op->block_len);
		return;

	default:
		/* Remaining one-operand operations are unsigned counts, sizes,
		 * constants or indexes: decimal. */
		if (op->nargs == 1) {
			put(o, " ");
			put_dec(o, op->operand1);
		}
		return;
	}
}

/* "DW_OP_const2u <error: corrupt>", "<error: unknown opcode 0x1>". */
static void format_error(struct out *o, uint8_t opcode, int err)
{
	const char *name = expr_op_name(opcode);

	if (name) {
		put(o, name);
		put(o, " ");
	}
	put(o, "<error: ");
	if (err == BK_E_CORRUPT) {
		put(o, "corrupt");
	} else if (err == BK_E_UNSUPPORTED && !name) {
		char hex[4] = { '0', 'x', hex_digits[opcode >> 4], hex_digits[opcode & 0xf] };
		put(o, "unknown opcode ");
		put_mem(o, hex, sizeof(hex));
	} else if (err == BK_E_UNSUPPORTED) {
		put(o, "unsupported");
	} else {
		put(o, bk_strerror(err));
	}
	put(o, ">");
}

int expr_format(const uint8_t *ops, size_t len, uint8_t addr_size,
		const struct arch_info *arch, char *out, size_t out_len)
{
	struct out o;
	struct buf b;
	struct expr_op op;
	size_t pos = 0;
	int err = 0;

	if (!out || out_len == 0)
		return BK_E_INVAL;
	o.p = out;
	o.end = out + out_len - 1;
	o.truncated = false;
	*out = '\0';
	if (!ops && len)
		return BK_E_INVAL;

	b = buf_make(ops, len);
	while (pos < len && !o.truncated) {
		if (pos)
			put(&o, "; ");
		err = expr_decode_op(&b, pos, addr_size, &op);
		if (err) {
			format_error(&o, ops[pos], err);
			break;
		}
		format_op(&o, &op, arch);
		pos += op.len;
	}

	if (o.truncated) {
		/* Mark the cut so a reader does not take the text as complete. */
		size_t n = (size_t)(o.p - out);
		if (n >= 3)
			memcpy(o.p - 3, "...", 3);
		return err ? err : BK_E_LIMIT;
	}
	return err;
}
