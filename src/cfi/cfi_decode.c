/* CIE and FDE decoding, and DW_EH_PE pointer encodings.
 *
 * One decoder for both sections: .eh_frame differs from .debug_frame only in
 * the CIE id (0 vs all ones), in FDE CIE pointers (relative to the pointer
 * field vs a section offset) and in how FDE addresses are encoded (the CIE's
 * 'R' encoding vs plain address_size). Every read is bounded by the entry's
 * own length; nothing is trusted from the bytes.
 *
 * Trusts its caller for: SEC describing readable memory [data, data+len).
 */
#include "cfi.h"

#include "../base/dwarf.h"

static struct base_ptr_ctx ptr_ctx(const struct cfi_section *sec, uint8_t addr_size, uint64_t func)
{
	struct base_ptr_ctx c = {
		.sec_data = sec->data,
		.sec_addr = sec->addr,
		.text_addr = sec->text_addr,
		.data_addr = sec->data_addr,
		.func_addr = func,
		.addr_size = addr_size,
		.mem = &sec->mem,
	};
	return c;
}

int cfi_entry_at(const struct cfi_section *sec, uint64_t off, struct cfi_entry *e)
{
	if (off >= sec->len)
		return BK_CORRUPT;
	struct buf b = buf_make(sec->data + off, sec->len - off);
	uint64_t len;
	unsigned off_size;
	int err;

	if ((err = buf_unit_length(&b, &len, &off_size)))
		return err;
	e->off = off;
	e->offset64 = off_size == 8;
	if (len == 0 && off_size == 4) {
		e->kind = CFI_ENTRY_TERMINATOR;
		e->next_off = off + 4;
		e->body = e->end = b.p;
		return 0;
	}
	if (len > buf_left(&b))
		return BK_CORRUPT;
	const uint8_t *start = b.p;
	e->end = b.p + len;
	e->next_off = (uint64_t)(e->end - sec->data);
	b.end = e->end;

	uint64_t id;
	if ((err = buf_uN(&b, e->offset64 ? 8 : 4, &id)))
		return err;
	e->body = b.p;

	uint64_t cie_id = sec->is_eh ? DW_EH_CIE_ID : e->offset64 ? DW_CIE_ID_64 : DW_CIE_ID_32;
	if (id == cie_id) {
		e->kind = CFI_ENTRY_CIE;
		e->cie_off = off;
		return 0;
	}
	e->kind = CFI_ENTRY_FDE;
	if (sec->is_eh) {
		/* LSB: the CIE pointer is subtracted from its own offset. */
		uint64_t field_off = (uint64_t)(start - sec->data);
		if (id > field_off)
			return BK_CORRUPT;
		e->cie_off = field_off - id;
	} else {
		e->cie_off = id;
	}
	if (e->cie_off >= sec->len)
		return BK_CORRUPT;
	return 0;
}

/* Augmentation data of a 'z' CIE (LSB 5.0 §10.6.1.1). */
static int decode_augmentation(const struct cfi_section *sec, struct cfi_cie *cie, struct buf *b)
{
	const char *a = cie->augmentation;
	struct buf data = *b;
	int err;

	if (a[0] != 'z')
		return 0;
	uint64_t aug_len;
	if ((err = buf_uleb(b, &aug_len)) || (err = buf_skip(b, aug_len)))
		return err;
	data.p = b->p - aug_len;
	data.end = b->p;

	struct base_ptr_ctx ctx = ptr_ctx(sec, cie->addr_size, 0);
	for (const char *c = a + 1; *c; c++) {
		switch (*c) {
		case 'L':
			if ((err = buf_u8(&data, &cie->lsda_enc)))
				return err;
			if (base_pointer_size(cie->lsda_enc, cie->addr_size) < 0 &&
			    cie->lsda_enc != DW_EH_PE_omit)
				return BK_E_UNSUPPORTED;
			break;
		case 'R':
			if ((err = buf_u8(&data, &cie->fde_enc)))
				return err;
			if (base_pointer_size(cie->fde_enc, cie->addr_size) < 0 ||
			    cie->fde_enc == DW_EH_PE_omit)
				return BK_E_UNSUPPORTED;
			break;
		case 'P':
			if ((err = buf_u8(&data, &cie->personality_enc)))
				return err;
			if (cie->personality_enc == DW_EH_PE_omit)
				break;
			/* Unwinding never calls the personality routine, so an
			 * indirect pointer is kept as the address of its slot and
			 * target memory is not read. */
			err = base_read_pointer(&data, cie->personality_enc & ~DW_EH_PE_indirect,
					       &ctx, &cie->personality);
			if (err)
				return err;
			break;
		case 'S':
			cie->signal_frame = true;
			break;
		case 'B':
			cie->has_b_key = true;
			break;
		case 'G':
			cie->mte_tagged = true;
			break;
		default:
			return BK_E_UNSUPPORTED;
		}
	}
	return 0;
}

int cfi_decode_cie(const struct cfi_section *sec, uint64_t off, struct cfi_cie *cie)
{
	struct cfi_entry e;
	int err;

	if ((err = cfi_entry_at(sec, off, &e)))
		return err;
	if (e.kind != CFI_ENTRY_CIE)
		return BK_CORRUPT;

	memset(cie, 0, sizeof(*cie));
	cie->off = off;
	cie->end_off = e.next_off;
	cie->offset64 = e.offset64;
	cie->fde_enc = DW_EH_PE_absptr;
	cie->lsda_enc = DW_EH_PE_omit;
	cie->personality_enc = DW_EH_PE_omit;
	cie->addr_size = sec->addr_size;

	struct buf b = { e.body, e.end };
	if ((err = buf_u8(&b, &cie->version)))
		return err;
	if (cie->version != 1 && cie->version != 3 && cie->version != 4)
		return BK_E_UNSUPPORTED;

	const uint8_t *nul = memchr(b.p, 0, buf_left(&b));
	if (!nul)
		return BK_CORRUPT;
	cie->augmentation = (const char *)b.p;
	b.p = nul + 1;

	const char *a = cie->augmentation;
	if (a[0] == 'e' && a[1] == 'h') {
		/* Legacy GCC: an address-sized pointer follows the string. */
		if ((err = buf_uN(&b, cie->addr_size, &cie->eh_data)))
			return err;
		a += 2;
		if (*a)
			return BK_E_UNSUPPORTED;
	} else if (a[0] != 'z') {
		/* Without 'z' nothing says how long augmentation data is, so only
		 * letters that carry none are understood. GNU as writes "S" this
		 * way for .cfi_signal_frame in .debug_frame. */
		for (const char *c = a; *c; c++) {
			if (*c == 'S')
				cie->signal_frame = true;
			else if (*c == 'B')
				cie->has_b_key = true;
			else if (*c == 'G')
				cie->mte_tagged = true;
			else
				return BK_E_UNSUPPORTED;
		}
	}
	cie->has_z = a[0] == 'z';

	if (cie->version == 4) {
		if ((err = buf_u8(&b, &cie->addr_size)) || (err = buf_u8(&b, &cie->segment_size)))
			return err;
		if ((cie->addr_size != 4 && cie->addr_size != 8) || cie->segment_size > 8)
			return BK_E_UNSUPPORTED;
	}
	if ((err = buf_uleb(&b, &cie->code_align)) || (err = buf_sleb(&b, &cie->data_align)))
		return err;
	if (cie->version == 1) {
		uint8_t ra;
		if ((err = buf_u8(&b, &ra)))
			return err;
		cie->ra_reg = ra;
	} else if ((err = buf_uleb(&b, &cie->ra_reg))) {
		return err;
	}
	if (cie->ra_reg > CFI_MAX_REGNO)
		return BK_E_BAD_REG;
	if ((err = decode_augmentation(sec, cie, &b)))
		return err;
	cie->insns = b.p;
	cie->insns_end = b.end;
	return 0;
}

int cfi_decode_fde(const struct cfi_section *sec, uint64_t off, struct cfi_fde *fde,
		   struct cfi_cie *cie)
{
	struct cfi_entry e;
	int err;

	if ((err = cfi_entry_at(sec, off, &e)))
		return err;
	if (e.kind != CFI_ENTRY_FDE)
		return BK_CORRUPT;
	if ((err = cfi_decode_cie(sec, e.cie_off, cie)))
		return err == BK_E_NOT_FOUND ? BK_CORRUPT : err;

	memset(fde, 0, sizeof(*fde));
	fde->off = off;
	fde->end_off = e.next_off;
	fde->cie_off = e.cie_off;

	struct buf b = { e.body, e.end };
	struct base_ptr_ctx ctx = ptr_ctx(sec, cie->addr_size, 0);
	uint64_t range;
	if (sec->is_eh) {
		if ((err = base_read_pointer(&b, cie->fde_enc, &ctx, &fde->pc_begin)))
			return err;
		/* The range has the value format of the encoding, no base. */
		if ((err = base_read_pointer(&b, cie->fde_enc & 0x0f, &ctx, &range)))
			return err;
	} else {
		if ((err = buf_skip(&b, cie->segment_size)))
			return err;
		if ((err = buf_uN(&b, cie->addr_size, &fde->pc_begin)) ||
		    (err = buf_uN(&b, cie->addr_size, &range)))
			return err;
	}
	fde->pc_end = base_mask_addr(fde->pc_begin + range, cie->addr_size);
	if (fde->pc_end < fde->pc_begin)
		return BK_CORRUPT; /* wraps around the address space */

	if (cie->has_z) {
		uint64_t aug_len;
		if ((err = buf_uleb(&b, &aug_len)))
			return err;
		struct buf aug = { b.p, b.p };
		if ((err = buf_skip(&b, aug_len)))
			return err;
		aug.end = b.p;
		if (cie->lsda_enc != DW_EH_PE_omit) {
			ctx.func_addr = fde->pc_begin;
			/* A raw value of 0, before any base is applied, means "no
			 * LSDA" (what GCC writes for a function without one that
			 * shares an 'L' CIE). Indirect LSDA pointers need target
			 * memory; unwinding never uses the value, so it is read
			 * direct. */
			struct buf raw_buf = aug;
			uint64_t raw;
			if ((err = base_read_pointer(&raw_buf, cie->lsda_enc & 0x0f, &ctx, &raw)))
				return err;
			if ((err = base_read_pointer(&aug, cie->lsda_enc & ~DW_EH_PE_indirect, &ctx,
						    &fde->lsda)))
				return err;
			fde->has_lsda = raw != 0;
			if (!fde->has_lsda)
				fde->lsda = 0;
		}
	}
	fde->insns = b.p;
	fde->insns_end = b.end;
	return 0;
}

/* ---- Call-frame instructions (DWARF 5 §6.4.2, §7.24) --------------------- */

static int factor_u(uint64_t n, int64_t factor, int64_t *out)
{
	if (n > INT64_MAX || __builtin_mul_overflow((int64_t)n, factor, out))
		return BK_CORRUPT;
	return 0;
}

static int factor_s(int64_t n, int64_t factor, int64_t *out)
{
	return __builtin_mul_overflow(n, factor, out) ? BK_CORRUPT : 0;
}

static int insn_reg(struct buf *b, unsigned *regno)
{
	uint64_t r;
	int err = buf_uleb(b, &r);
	if (err)
		return err;
	if (r > CFI_MAX_REGNO)
		return BK_E_BAD_REG;
	*regno = (unsigned)r;
	return 0;
}

static int insn_block(struct buf *b, struct cfi_insn *in)
{
	uint64_t len;
	int err = buf_uleb(b, &len);
	if (err)
		return err;
	if (len > buf_left(b) || len > UINT32_MAX)
		return BK_CORRUPT;
	in->block = b->p;
	in->block_len = (uint32_t)len;
	b->p += len;
	return 0;
}

/* Operand shapes, so that the switch below is one line per opcode. */
enum shape {
	SH_NONE, SH_DELTA1, SH_DELTA2, SH_DELTA4, SH_DELTA8, SH_LOC,
	SH_R, SH_R_R, SH_R_U, SH_R_S, SH_R_UNF, SH_U, SH_S, SH_UNF, SH_BLOCK, SH_R_BLOCK,
};

static const struct {
	const char *name;
	uint8_t shape;
} insns[0x40] = {
	[DW_CFA_nop] = { "DW_CFA_nop", SH_NONE },
	[DW_CFA_set_loc] = { "DW_CFA_set_loc", SH_LOC },
	[DW_CFA_advance_loc1] = { "DW_CFA_advance_loc1", SH_DELTA1 },
	[DW_CFA_advance_loc2] = { "DW_CFA_advance_loc2", SH_DELTA2 },
	[DW_CFA_advance_loc4] = { "DW_CFA_advance_loc4", SH_DELTA4 },
	[DW_CFA_offset_extended] = { "DW_CFA_offset_extended", SH_R_U },
	[DW_CFA_restore_extended] = { "DW_CFA_restore_extended", SH_R },
	[DW_CFA_undefined] = { "DW_CFA_undefined", SH_R },
	[DW_CFA_same_value] = { "DW_CFA_same_value", SH_R },
	[DW_CFA_register] = { "DW_CFA_register", SH_R_R },
	[DW_CFA_remember_state] = { "DW_CFA_remember_state", SH_NONE },
	[DW_CFA_restore_state] = { "DW_CFA_restore_state", SH_NONE },
	[DW_CFA_def_cfa] = { "DW_CFA_def_cfa", SH_R_UNF },
	[DW_CFA_def_cfa_register] = { "DW_CFA_def_cfa_register", SH_R },
	[DW_CFA_def_cfa_offset] = { "DW_CFA_def_cfa_offset", SH_UNF },
	[DW_CFA_def_cfa_expression] = { "DW_CFA_def_cfa_expression", SH_BLOCK },
	[DW_CFA_expression] = { "DW_CFA_expression", SH_R_BLOCK },
	[DW_CFA_offset_extended_sf] = { "DW_CFA_offset_extended_sf", SH_R_S },
	[DW_CFA_def_cfa_sf] = { "DW_CFA_def_cfa_sf", SH_R_S },
	[DW_CFA_def_cfa_offset_sf] = { "DW_CFA_def_cfa_offset_sf", SH_S },
	[DW_CFA_val_offset] = { "DW_CFA_val_offset", SH_R_U },
	[DW_CFA_val_offset_sf] = { "DW_CFA_val_offset_sf", SH_R_S },
	[DW_CFA_val_expression] = { "DW_CFA_val_expression", SH_R_BLOCK },
	[DW_CFA_MIPS_advance_loc8] = { "DW_CFA_MIPS_advance_loc8", SH_DELTA8 },
	[DW_CFA_AARCH64_negate_ra_state_with_pc] = { "DW_CFA_AARCH64_negate_ra_state_with_pc",
						      SH_NONE },
	[DW_CFA_GNU_window_save] = { "DW_CFA_GNU_window_save", SH_NONE },
	[DW_CFA_GNU_args_size] = { "DW_CFA_GNU_args_size", SH_U },
	[DW_CFA_GNU_negative_offset_extended] = { "DW_CFA_GNU_negative_offset_extended", SH_R_U },
};

const char *cfi_insn_name(uint8_t opcode)
{
	switch (opcode & 0xc0) {
	case DW_CFA_advance_loc: return "DW_CFA_advance_loc";
	case DW_CFA_offset: return "DW_CFA_offset";
	case DW_CFA_restore: return "DW_CFA_restore";
	}
	return insns[opcode].name;
}

int cfi_decode_insn(struct buf *b, const struct cfi_section *sec, const struct cfi_cie *cie,
		    const struct cfi_fde *fde, struct cfi_insn *in)
{
	struct buf r = *b;
	uint8_t op;
	uint64_t u = 0;
	int64_t s;
	int err;

	memset(in, 0, sizeof(*in));
	if ((err = buf_u8(&r, &op)))
		return err;
	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		in->opcode = DW_CFA_advance_loc;
		if (__builtin_mul_overflow((uint64_t)(op & 0x3f), cie->code_align, &in->u))
			return BK_CORRUPT;
		*b = r;
		return 0;
	case DW_CFA_offset:
		in->opcode = DW_CFA_offset;
		in->reg = op & 0x3f;
		if ((err = buf_uleb(&r, &u)) || (err = factor_u(u, cie->data_align, &in->s)))
			return err;
		*b = r;
		return 0;
	case DW_CFA_restore:
		in->opcode = DW_CFA_restore;
		in->reg = op & 0x3f;
		*b = r;
		return 0;
	}
	if (!insns[op].name)
		return BK_E_UNSUPPORTED;
	in->opcode = op;

	switch (insns[op].shape) {
	case SH_NONE:
		break;
	case SH_DELTA1:
	case SH_DELTA2:
	case SH_DELTA4:
	case SH_DELTA8: {
		static const uint8_t width[] = { [SH_DELTA1] = 1, [SH_DELTA2] = 2,
						 [SH_DELTA4] = 4, [SH_DELTA8] = 8 };
		if ((err = buf_uN(&r, width[insns[op].shape], &u)))
			return err;
		if (__builtin_mul_overflow(u, cie->code_align, &in->u))
			return BK_CORRUPT;
		break;
	}
	case SH_LOC:
		if (sec->is_eh) {
			struct base_ptr_ctx ctx = ptr_ctx(sec, cie->addr_size, fde ? fde->pc_begin : 0);
			err = base_read_pointer(&r, cie->fde_enc, &ctx, &in->u);
		} else {
			/* §6.4.2.1: a segment selector precedes the address,
			 * as in the FDE's initial_location. */
			err = buf_skip(&r, cie->segment_size);
			if (!err)
				err = buf_uN(&r, cie->addr_size, &in->u);
		}
		if (err)
			return err;
		break;
	case SH_R:
		if ((err = insn_reg(&r, &in->reg)))
			return err;
		break;
	case SH_R_R:
		if ((err = insn_reg(&r, &in->reg)) || (err = insn_reg(&r, &in->reg2)))
			return err;
		break;
	case SH_R_U: /* factored unsigned offset */
		if ((err = insn_reg(&r, &in->reg)) || (err = buf_uleb(&r, &u)) ||
		    (err = factor_u(u, cie->data_align, &in->s)))
			return err;
		if (op == DW_CFA_GNU_negative_offset_extended) {
			if (in->s == INT64_MIN)
				return BK_CORRUPT;
			in->s = -in->s;
		}
		break;
	case SH_R_S: /* factored signed offset */
		if ((err = insn_reg(&r, &in->reg)) || (err = buf_sleb(&r, &s)) ||
		    (err = factor_s(s, cie->data_align, &in->s)))
			return err;
		break;
	case SH_R_UNF: /* register and non-factored offset (def_cfa) */
		if ((err = insn_reg(&r, &in->reg)) || (err = buf_uleb(&r, &u)))
			return err;
		if (u > INT64_MAX)
			return BK_CORRUPT;
		in->s = (int64_t)u;
		break;
	case SH_U:
		if ((err = buf_uleb(&r, &in->u)))
			return err;
		break;
	case SH_S:
		if ((err = buf_sleb(&r, &s)) || (err = factor_s(s, cie->data_align, &in->s)))
			return err;
		break;
	case SH_UNF:
		if ((err = buf_uleb(&r, &u)))
			return err;
		if (u > INT64_MAX)
			return BK_CORRUPT;
		in->s = (int64_t)u;
		break;
	case SH_BLOCK:
		if ((err = insn_block(&r, in)))
			return err;
		break;
	case SH_R_BLOCK:
		if ((err = insn_reg(&r, &in->reg)) || (err = insn_block(&r, in)))
			return err;
		break;
	}
	*b = r;
	return 0;
}
