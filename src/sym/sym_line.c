/* A second, minimal reading of a DWARF 5 line-number program: only the
 * address and the file register of each row, to correct libdwarf 20210528.
 *
 * Why: DWARF 5 §6.2.2 (Table 6.4) starts the file register at 1, as DWARF 2-4
 * do, and gcc relies on it: a sequence whose code is in file 1 has no
 * DW_LNS_set_file. libdwarf 20210528 starts it at 0 for version-5 tables
 * (binutils 2.40's bfd does too), so such rows are reported in file 0, the
 * primary source file, and an inline function from a header shows the .c
 * file's name with the header's line numbers. Rows are never dropped or
 * moved by the bug, so the fix is a pure overlay: the caller takes the file
 * numbers from here only when this decoder finds exactly as many rows as
 * libdwarf, at exactly the same addresses; any disagreement keeps libdwarf's
 * answer. The header's file and directory tables are not read here at all
 * (header_length skips them): names still come from libdwarf.
 *
 * Bounded: every read goes through struct buf and fails at the table's end;
 * a table longer than its section, a zero line_range or a row count that
 * differs from NROWS is an error, never a crash.
 */
#include "sym.h"

/* DWARF 5 §7.22, Tables 7.25-7.26. */
enum {
	LNS_copy = 1, LNS_advance_pc, LNS_advance_line, LNS_set_file, LNS_set_column,
	LNS_negate_stmt, LNS_set_basic_block, LNS_const_add_pc, LNS_fixed_advance_pc,
	LNS_set_prologue_end, LNS_set_epilogue_begin, LNS_set_isa,
	LNE_end_sequence = 1, LNE_set_address = 2,
};

struct lp_state {
	uint64_t addr, op_index;
	uint64_t file;
	uint8_t min_inst, max_ops, line_range, opcode_base;
};

static void lp_reset(struct lp_state *s)
{
	s->addr = 0;
	s->op_index = 0;
	s->file = 1; /* DWARF 5 §6.2.2, Table 6.4 */
}

/* DWARF 5 §6.2.5.1: advance by OP operations (VLIW-aware). */
static void lp_advance(struct lp_state *s, uint64_t op)
{
	if (s->max_ops <= 1) {
		s->addr += (uint64_t)s->min_inst * op;
		return;
	}
	uint64_t t = s->op_index + op;
	s->addr += (uint64_t)s->min_inst * (t / s->max_ops);
	s->op_index = t % s->max_ops;
}

int sym_line_files(const uint8_t *sec, size_t sec_len, uint64_t table_off, size_t nrows,
		   uint64_t *addrs, uint32_t *files)
{
	if (table_off >= sec_len)
		return BK_CORRUPT;
	struct buf b = buf_make(sec + table_off, sec_len - (size_t)table_off);
	uint64_t unit_len;
	unsigned off_size;
	int err = buf_unit_length(&b, &unit_len, &off_size);
	if (err)
		return err;
	if (unit_len > buf_left(&b))
		return BK_CORRUPT;
	b.end = b.p + unit_len;

	uint16_t version;
	uint8_t addr_size, seg_size;
	uint64_t header_len;
	if ((err = buf_u16(&b, &version)))
		return err;
	if (version != 5)
		return BK_E_UNSUPPORTED;
	if ((err = buf_u8(&b, &addr_size)) || (err = buf_u8(&b, &seg_size)) ||
	    (err = buf_uN(&b, off_size, &header_len)))
		return err;
	if (header_len > buf_left(&b))
		return BK_CORRUPT;
	struct buf prog = { b.p + header_len, b.end };

	struct lp_state s;
	uint8_t default_is_stmt, line_base_u8; /* read past, unused */
	if ((err = buf_u8(&b, &s.min_inst)) || (err = buf_u8(&b, &s.max_ops)) ||
	    (err = buf_u8(&b, &default_is_stmt)) || (err = buf_u8(&b, &line_base_u8)) ||
	    (err = buf_u8(&b, &s.line_range)) || (err = buf_u8(&b, &s.opcode_base)))
		return err;
	if (s.line_range == 0 || s.opcode_base == 0)
		return BK_CORRUPT;
	const uint8_t *std_lens = b.p;
	if ((err = buf_skip(&b, s.opcode_base - 1u)))
		return err;
	if (b.p > prog.p)
		return BK_CORRUPT;

	lp_reset(&s);
	size_t row = 0;
	while (prog.p < prog.end) {
		uint8_t op;
		uint64_t u;
		int64_t sv;
		bool emit = false, end_seq = false;
		if ((err = buf_u8(&prog, &op)))
			return err;
		if (op >= s.opcode_base) {
			/* DWARF 5 §6.2.5.1 special opcode */
			lp_advance(&s, (uint64_t)(op - s.opcode_base) / s.line_range);
			emit = true;
		} else if (op == 0) {
			/* §6.2.5.3 extended opcode: ULEB length, then the sub-opcode */
			uint8_t sub = 0;
			if ((err = buf_uleb(&prog, &u)))
				return err;
			if (u == 0 || u > buf_left(&prog))
				return BK_CORRUPT;
			struct buf ext = { prog.p, prog.p + u };
			prog.p += u;
			(void)buf_u8(&ext, &sub);
			if (sub == LNE_end_sequence) {
				emit = end_seq = true;
			} else if (sub == LNE_set_address) {
				size_t n = buf_left(&ext);
				if (n == 0 || n > 8)
					return BK_CORRUPT;
				if ((err = buf_uN(&ext, (unsigned)n, &s.addr)))
					return err;
				s.op_index = 0;
			}
		} else {
			switch (op) {
			case LNS_copy:
				emit = true;
				break;
			case LNS_advance_pc:
				if ((err = buf_uleb(&prog, &u)))
					return err;
				lp_advance(&s, u);
				break;
			case LNS_advance_line:
				if ((err = buf_sleb(&prog, &sv)))
					return err;
				break;
			case LNS_set_file:
				if ((err = buf_uleb(&prog, &s.file)))
					return err;
				break;
			case LNS_const_add_pc:
				lp_advance(&s, (uint64_t)(255 - s.opcode_base) / s.line_range);
				break;
			case LNS_fixed_advance_pc: {
				uint16_t d;
				if ((err = buf_u16(&prog, &d)))
					return err;
				s.addr += d;
				s.op_index = 0;
				break;
			}
			default:
				/* Any other standard opcode, known or not: skip the
				 * number of ULEB operands the header declares. */
				for (unsigned i = 0; i < std_lens[op - 1]; i++)
					if ((err = buf_uleb(&prog, &u)))
						return err;
				break;
			}
		}
		if (!emit)
			continue;
		if (row >= nrows)
			return BK_E_LIMIT;
		addrs[row] = s.addr;
		files[row] = s.file > UINT32_MAX ? UINT32_MAX : (uint32_t)s.file;
		row++;
		if (end_seq)
			lp_reset(&s);
	}
	return row == nrows ? 0 : BK_CORRUPT;
}
