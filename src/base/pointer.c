/* DW_EH_PE pointer encodings (LSB 5.0, "DWARF Exception Header
 * Encoding"): one decoder for every place they occur — CIE augmentation
 * data, FDE addresses, DW_CFA_set_loc in .eh_frame, and .eh_frame_hdr. It
 * lives in base because the loader (locating .eh_frame through
 * PT_GNU_EH_FRAME) and the CFI engine both read these, and neither may
 * depend on the other. Pure and AS-safe. */
#include "base.h"
#include "dwarf.h"

int base_read_pointer(struct buf *b, uint8_t enc, const struct base_ptr_ctx *ctx, uint64_t *out)
{
	if (enc == DW_EH_PE_omit)
		return BK_E_INVAL;
	struct buf r = *b;
	uint64_t field_addr = ctx->sec_addr + (uint64_t)(r.p - ctx->sec_data);
	uint64_t raw = 0;
	int err;

	if ((enc & 0x70) == DW_EH_PE_aligned) {
		/* The value is an absptr at the next address_size boundary. */
		uint64_t mis = field_addr % ctx->addr_size;
		if (mis && (err = buf_skip(&r, ctx->addr_size - mis)))
			return err;
		field_addr += mis ? ctx->addr_size - mis : 0;
		if ((enc & 0x0f) != DW_EH_PE_absptr)
			return BK_E_UNSUPPORTED;
	}

	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
		err = buf_uN(&r, ctx->addr_size, &raw);
		break;
	case DW_EH_PE_uleb128:
		err = buf_uleb(&r, &raw);
		break;
	case DW_EH_PE_udata2:
		err = buf_uN(&r, 2, &raw);
		break;
	case DW_EH_PE_udata4:
		err = buf_uN(&r, 4, &raw);
		break;
	case DW_EH_PE_udata8:
		err = buf_uN(&r, 8, &raw);
		break;
	case DW_EH_PE_sleb128: {
		int64_t s;
		err = buf_sleb(&r, &s);
		raw = (uint64_t)s;
		break;
	}
	case DW_EH_PE_sdata2:
		err = buf_uN(&r, 2, &raw);
		raw = (uint64_t)base_sext(raw, 16);
		break;
	case DW_EH_PE_sdata4:
		err = buf_uN(&r, 4, &raw);
		raw = (uint64_t)base_sext(raw, 32);
		break;
	case DW_EH_PE_sdata8:
		err = buf_uN(&r, 8, &raw);
		break;
	default:
		return BK_E_UNSUPPORTED;
	}
	if (err)
		return err;

	uint64_t base;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_aligned:
		base = 0;
		break;
	case DW_EH_PE_pcrel:
		base = field_addr;
		break;
	case DW_EH_PE_textrel:
		base = ctx->text_addr;
		break;
	case DW_EH_PE_datarel:
		base = ctx->data_addr;
		break;
	case DW_EH_PE_funcrel:
		base = ctx->func_addr;
		break;
	default:
		return BK_E_UNSUPPORTED;
	}
	uint64_t v = base_mask_addr(base + raw, ctx->addr_size);

	if (enc & DW_EH_PE_indirect) {
		uint64_t target = 0;
		if ((err = base_mem_read(ctx->mem, v, &target, ctx->addr_size)))
			return err;
		v = base_mask_addr(target, ctx->addr_size); /* little-endian host and target */
	}
	*b = r;
	*out = v;
	return 0;
}


int base_pointer_size(uint8_t enc, uint8_t addr_size)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return addr_size;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	case DW_EH_PE_uleb128: case DW_EH_PE_sleb128: return 0;
	default: return -1;
	}
}
