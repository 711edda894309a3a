/* backstep dump: the call-frame information of an ELF file, as text
 * (CIEs, FDEs, their instructions, the interpreted row table) or as JSON
 * Lines (one object per FDE, rows only).
 *
 * Everything shown comes from the library's own decoder and state machine:
 * cfi_entry_at frames entries, cfi_decode_cie/fde and cfi_decode_insn decode
 * them, cfi_machine_next produces the rows. Nothing is parsed twice here.
 * A corrupt FDE is reported on stderr and the walk goes on; a corrupt entry
 * length ends the section, since the next entry cannot be found.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "out.h"

#include "../src/base/dwarf.h"
#include "../src/expr/expr.h"
#include "../src/unwind/unwind.h"

struct dump_opts {
	bool rows_only;
	bool json;
	bool have_pc;
	uint64_t pc;
	int only_section; /* -1: all; else enum uw_section_kind */
	bool debug_file;
};

struct dump_ctx {
	const struct dump_opts *opts;
	const char *path;           /* for messages */
	const struct ldr_elf *ldr;  /* the file whose section is dumped */
	const struct arch_info *arch;
	const struct cfi_section *sec;
	const char *sec_name;
	bool from_debug_file;
	int nerrors;
	/* Rows of the current FDE. */
	struct cfi_row *rows;
	size_t nrows, cap;
};

static void report(struct dump_ctx *c, uint64_t off, const char *what, int err)
{
	out_flush(); /* keep stdout and stderr in order */
	fprintf(stderr, "backstep: %s: %s%s %s at offset 0x%" PRIx64 ": %s\n", c->path,
		c->from_debug_file ? "separate debug file " : "", c->sec_name, what, off,
		bk_strerror(err));
	c->nerrors++;
}

/* "rsp" or "r123" */
static const char *reg_short(const struct dump_ctx *c, unsigned regno, char *buf, size_t len)
{
	const char *n = arch_reg_name(c->arch, regno);
	if (n)
		return n;
	snprintf(buf, len, "r%u", regno);
	return buf;
}

/* "r7 (rsp)" as readelf writes it */
static const char *reg_long(const struct dump_ctx *c, unsigned regno, char *buf, size_t len)
{
	const char *n = arch_reg_name(c->arch, regno);
	if (n)
		snprintf(buf, len, "r%u (%s)", regno, n);
	else
		snprintf(buf, len, "r%u", regno);
	return buf;
}

static void print_expr(const struct dump_ctx *c, const uint8_t *p, size_t len)
{
	char text[1024];
	expr_format(p, len, c->sec->addr_size, c->arch, text, sizeof(text));
	out_s(text);
}

static const char *enc_name(uint8_t enc, char *buf, size_t len)
{
	static const char *const fmt[16] = {
		[DW_EH_PE_absptr] = "absptr", [DW_EH_PE_uleb128] = "uleb128",
		[DW_EH_PE_udata2] = "udata2", [DW_EH_PE_udata4] = "udata4",
		[DW_EH_PE_udata8] = "udata8", [DW_EH_PE_sleb128] = "sleb128",
		[DW_EH_PE_sdata2] = "sdata2", [DW_EH_PE_sdata4] = "sdata4",
		[DW_EH_PE_sdata8] = "sdata8",
	};
	static const char *const app[8] = { "", "pcrel|", "textrel|", "datarel|",
					    "funcrel|", "aligned|", "app6|", "app7|" };
	if (enc == DW_EH_PE_omit)
		return "omit";
	snprintf(buf, len, "%s%s%s", enc & DW_EH_PE_indirect ? "indirect|" : "",
		 app[(enc >> 4) & 7], fmt[enc & 15] ? fmt[enc & 15] : "?");
	return buf;
}

/* ---- Instructions -------------------------------------------------------- */

static void print_insns(struct dump_ctx *c, const struct cfi_cie *cie, const struct cfi_fde *fde,
			const uint8_t *p, const uint8_t *end)
{
	struct buf b = { p, end };
	uint64_t loc = fde ? fde->pc_begin : 0;
	char r1[48], r2[48];

	while (buf_left(&b)) {
		uint64_t at = (uint64_t)(b.p - c->sec->data);
		struct cfi_insn in;
		int err = cfi_decode_insn(&b, c->sec, cie, fde, &in);
		if (err) {
			out_fmt("  <error at offset 0x%" PRIx64 ": %s>\n", at, bk_strerror(err));
			return;
		}
		out_fmt("  %s", cfi_insn_name(in.opcode));
		switch (in.opcode) {
		case DW_CFA_advance_loc:
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_MIPS_advance_loc8:
			loc += in.u;
			out_fmt(": %" PRIu64 " to 0x%" PRIx64, in.u, loc);
			break;
		case DW_CFA_set_loc:
			loc = in.u;
			out_fmt(": 0x%" PRIx64, in.u);
			break;
		case DW_CFA_offset:
		case DW_CFA_offset_extended:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_GNU_negative_offset_extended:
			out_fmt(": %s at cfa%+" PRId64, reg_long(c, in.reg, r1, sizeof(r1)), in.s);
			break;
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
			out_fmt(": %s is cfa%+" PRId64, reg_long(c, in.reg, r1, sizeof(r1)), in.s);
			break;
		case DW_CFA_restore:
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
		case DW_CFA_def_cfa_register:
			out_fmt(": %s", reg_long(c, in.reg, r1, sizeof(r1)));
			break;
		case DW_CFA_register:
			out_fmt(": %s in %s", reg_long(c, in.reg, r1, sizeof(r1)),
			       reg_long(c, in.reg2, r2, sizeof(r2)));
			break;
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
			out_fmt(": %s ofs %" PRId64, reg_long(c, in.reg, r1, sizeof(r1)), in.s);
			break;
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
			out_fmt(": %" PRId64, in.s);
			break;
		case DW_CFA_def_cfa_expression:
			out_fmt(" (");
			print_expr(c, in.block, in.block_len);
			out_fmt(")");
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			out_fmt(": %s (", reg_long(c, in.reg, r1, sizeof(r1)));
			print_expr(c, in.block, in.block_len);
			out_fmt(")");
			break;
		case DW_CFA_GNU_args_size:
			out_fmt(": %" PRIu64, in.u);
			break;
		case DW_CFA_GNU_window_save:
			if (c->arch && c->arch->arch == BK_ARCH_AARCH64)
				out_fmt(" (DW_CFA_AARCH64_negate_ra_state)");
			break;
		}
		out_c('\n');
	}
}

/* ---- Rows ---------------------------------------------------------------- */

static bool push_row(struct dump_ctx *c, const struct cfi_row *row)
{
	/* Rows that give every register the same rule as the previous one are
	 * one row: emitted at the FDE start and wherever the row changes. */
	if (c->nrows && cfi_row_same_rules(&c->rows[c->nrows - 1], row)) {
		c->rows[c->nrows - 1].loc_end = row->loc_end;
		return true;
	}
	if (c->nrows == c->cap) {
		size_t ncap = c->cap ? c->cap * 2 : 16;
		void *p = realloc(c->rows, ncap * sizeof(*c->rows));
		if (!p)
			return false;
		c->rows = p;
		c->cap = ncap;
	}
	c->rows[c->nrows++] = *row;
	return true;
}

/* Compute every row of FDE into c->rows; 0 or the error that ended it. */
static int compute_rows(struct dump_ctx *c, const struct cfi_cie *cie, const struct cfi_fde *fde)
{
	struct cfi_machine m;
	struct cfi_row row;
	int err;

	c->nrows = 0;
	if ((err = cfi_machine_init(&m, c->sec, cie, fde)))
		return err;
	while ((err = cfi_machine_next(&m, &row)) == 1)
		if (!push_row(c, &row))
			return BK_E_NOMEM;
	return err;
}

/* "c-16": PREFIX then V with an explicit sign; no printf, this is per cell. */
static void cell_signed(char *buf, const char *prefix, int64_t v)
{
	size_t n = strlen(prefix);
	memcpy(buf, prefix, n);
	buf[n++] = v < 0 ? '-' : '+';
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	char tmp[24];
	int i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	memcpy(buf + n, tmp + i, sizeof(tmp) - i);
	buf[n + sizeof(tmp) - i] = 0;
}

/* BUF must hold 64 bytes. */
static void rule_cell(const struct dump_ctx *c, const struct cfi_rule *r, char *buf)
{
	char tmp[48];
	const char *text = "?";
	if (!r) {
		text = ".";
	} else {
		switch (r->kind) {
		case BK_RULE_UNDEFINED: text = "u"; break;
		case BK_RULE_SAME_VALUE: text = "s"; break;
		case BK_RULE_OFFSET: cell_signed(buf, "c", r->value); return;
		case BK_RULE_VAL_OFFSET: cell_signed(buf, "v", r->value); return;
		case BK_RULE_REGISTER: text = reg_short(c, r->reg, tmp, sizeof(tmp)); break;
		case BK_RULE_EXPRESSION: text = "exp"; break;
		case BK_RULE_VAL_EXPRESSION: text = "vexp"; break;
		case BK_RULE_CFA_REG_OFFSET:
			cell_signed(buf, reg_short(c, r->reg, tmp, sizeof(tmp)), r->value);
			return;
		case BK_RULE_CFA_EXPRESSION: text = "exp"; break;
		}
	}
	size_t n = strlen(text);
	n = n < 63 ? n : 63;
	memcpy(buf, text, n);
	buf[n] = 0;
}

static bool is_expr(const struct cfi_rule *r)
{
	return r && (r->kind == BK_RULE_EXPRESSION || r->kind == BK_RULE_VAL_EXPRESSION ||
		     r->kind == BK_RULE_CFA_EXPRESSION);
}

static void print_row_table(struct dump_ctx *c, unsigned ra_reg)
{
	/* Columns: every register with a rule in any row, ascending; the
	 * return-address column last, as readelf does. */
	unsigned cols[CFI_MAX_RULES * 4];
	size_t ncols = 0;
	for (size_t i = 0; i < c->nrows; i++)
		for (unsigned j = 0; j < c->rows[i].nrules; j++) {
			unsigned r = c->rows[i].regno[j];
			size_t k;
			for (k = 0; k < ncols && cols[k] != r; k++)
				;
			if (k == ncols && ncols < BK_ARRAY_LEN(cols))
				cols[ncols++] = r;
		}
	for (size_t i = 1; i < ncols; i++) /* insertion sort, few columns */
		for (size_t k = i; k > 0 && (cols[k - 1] == ra_reg ||
					     (cols[k] != ra_reg && cols[k - 1] > cols[k])); k--) {
			unsigned t = cols[k];
			cols[k] = cols[k - 1];
			cols[k - 1] = t;
		}

	char cell[64], name[48];
	out_s("   ");
	out_pad("LOC", 19);
	out_pad("CFA", 10);
	for (size_t k = 0; k < ncols; k++)
		out_pad(cols[k] == ra_reg ? "ra" : reg_short(c, cols[k], name, sizeof(name)), 7);
	out_c('\n');
	for (size_t i = 0; i < c->nrows; i++) {
		const struct cfi_row *row = &c->rows[i];
		rule_cell(c, row->cfa.kind ? &row->cfa : NULL, cell);
		out_s("   0x");
		out_x64(row->loc, 16);
		out_c(' ');
		out_pad(cell, 10);
		for (size_t k = 0; k < ncols; k++) {
			rule_cell(c, cfi_row_rule(row, cols[k]), cell);
			out_pad(cell, 7);
		}
		if (c->arch && c->arch->arch == BK_ARCH_AARCH64 && (row->ra_sign_state & 1))
			out_fmt(row->ra_sign_state & 2 ? " ra_signed_pc" : " ra_signed");
		out_c('\n');
	}
	/* The expressions behind "exp" cells, where they first appear. */
	for (size_t i = 0; i < c->nrows; i++) {
		const struct cfi_row *row = &c->rows[i], *prev = i ? &c->rows[i - 1] : NULL;
		if (is_expr(&row->cfa) && !(prev && is_expr(&prev->cfa) &&
					    prev->cfa.value == row->cfa.value)) {
			out_fmt("   0x%016" PRIx64 " CFA: ", row->loc);
			print_expr(c, cfi_rule_expr(c->sec, &row->cfa), row->cfa.expr_len);
			out_c('\n');
		}
		for (unsigned j = 0; j < row->nrules; j++) {
			const struct cfi_rule *r = &row->rule[j];
			const struct cfi_rule *p = prev ? cfi_row_rule(prev, row->regno[j]) : NULL;
			if (!is_expr(r) || (p && p->kind == r->kind && p->value == r->value))
				continue;
			out_fmt("   0x%016" PRIx64 " %s: %s", row->loc,
			       reg_short(c, row->regno[j], name, sizeof(name)),
			       r->kind == BK_RULE_VAL_EXPRESSION ? "value = CFA; " : "at CFA; ");
			print_expr(c, cfi_rule_expr(c->sec, r), r->expr_len);
			out_c('\n');
		}
	}
}

static void out_hex_bytes(const uint8_t *p, size_t len)
{
	out_c('"');
	for (size_t i = 0; i < len; i++)
		out_x64(p[i], 2);
	out_c('"');
}

static void json_rule(const struct dump_ctx *c, const struct cfi_rule *r)
{
	static const char *const names[] = {
		[BK_RULE_UNDEFINED] = "undefined", [BK_RULE_SAME_VALUE] = "same_value",
		[BK_RULE_OFFSET] = "offset", [BK_RULE_VAL_OFFSET] = "val_offset",
		[BK_RULE_REGISTER] = "register", [BK_RULE_EXPRESSION] = "expression",
		[BK_RULE_VAL_EXPRESSION] = "val_expression",
	};
	out_s("{\"rule\": \"");
	out_s(names[r->kind]);
	out_c('"');
	switch (r->kind) {
	case BK_RULE_OFFSET:
	case BK_RULE_VAL_OFFSET:
		out_s(", \"value\": ");
		out_s64(r->value);
		break;
	case BK_RULE_REGISTER:
		out_s(", \"reg\": ");
		out_u64(r->reg);
		break;
	case BK_RULE_EXPRESSION:
	case BK_RULE_VAL_EXPRESSION:
		out_s(", \"expression\": ");
		out_hex_bytes(cfi_rule_expr(c->sec, r), r->expr_len);
		break;
	}
	out_c('}');
}

static void print_rows_json(struct dump_ctx *c, const struct cfi_fde *fde)
{
	out_s("{\"section\": \"");
	out_s(c->sec_name);
	out_s("\", ");
	if (c->from_debug_file)
		out_s("\"from_debug_file\": true, ");
	out_s("\"pc_begin\": \"");
	out_addr(fde->pc_begin);
	out_s("\", \"pc_end\": \"");
	out_addr(fde->pc_end);
	out_s("\", \"rows\": [");
	for (size_t i = 0; i < c->nrows; i++) {
		const struct cfi_row *row = &c->rows[i];
		out_s(i ? ", {\"loc\": \"" : "{\"loc\": \"");
		out_addr(row->loc);
		out_s("\", \"cfa\": ");
		if (row->cfa.kind == BK_RULE_CFA_REG_OFFSET) {
			out_s("{\"reg\": ");
			out_u64(row->cfa.reg);
			out_s(", \"offset\": ");
			out_s64(row->cfa.value);
			out_c('}');
		} else if (row->cfa.kind == BK_RULE_CFA_EXPRESSION) {
			out_s("{\"expression\": ");
			out_hex_bytes(cfi_rule_expr(c->sec, &row->cfa), row->cfa.expr_len);
			out_c('}');
		} else {
			out_s("null");
		}
		if (c->arch && c->arch->arch == BK_ARCH_AARCH64) {
			out_s(", \"ra_sign_state\": ");
			out_u64(row->ra_sign_state);
		}
		out_s(", \"regs\": {");
		for (unsigned j = 0; j < row->nrules; j++) {
			out_s(j ? ", \"" : "\"");
			out_u64(row->regno[j]);
			out_s("\": ");
			json_rule(c, &row->rule[j]);
		}
		out_s("}}");
	}
	out_s("]}\n");
}

/* ---- Entries ------------------------------------------------------------- */

static void print_cie(struct dump_ctx *c, const struct cfi_cie *cie)
{
	char enc[48], name[48];
	out_fmt("\n%08" PRIx64 " %016" PRIx64 " CIE\n", cie->off,
	       cie->end_off - cie->off - (cie->offset64 ? 12 : 4));
	out_fmt("  Version:               %u\n", cie->version);
	out_fmt("  Augmentation:          \"%s\"\n", cie->augmentation);
	if (cie->version == 4)
		out_fmt("  Address size:          %u\n  Segment size:          %u\n",
		       cie->addr_size, cie->segment_size);
	out_fmt("  Code alignment factor: %" PRIu64 "\n", cie->code_align);
	out_fmt("  Data alignment factor: %" PRId64 "\n", cie->data_align);
	out_fmt("  Return address column: %" PRIu64 " (%s)\n", cie->ra_reg,
	       reg_short(c, (unsigned)cie->ra_reg, name, sizeof(name)));
	if (cie->has_z) {
		out_fmt("  FDE pointer encoding:  %s\n", enc_name(cie->fde_enc, enc, sizeof(enc)));
		if (cie->lsda_enc != DW_EH_PE_omit)
			out_fmt("  LSDA encoding:         %s\n", enc_name(cie->lsda_enc, enc, sizeof(enc)));
		if (cie->personality_enc != DW_EH_PE_omit)
			out_fmt("  Personality:           0x%" PRIx64 " (%s)\n", cie->personality,
			       enc_name(cie->personality_enc, enc, sizeof(enc)));
	}
	if (cie->signal_frame)
		out_fmt("  Signal frame:          yes\n");
	print_insns(c, cie, NULL, cie->insns, cie->insns_end);
}

static void dump_fde(struct dump_ctx *c, uint64_t off)
{
	struct cfi_fde fde;
	struct cfi_cie cie;
	int err = cfi_decode_fde(c->sec, off, &fde, &cie);
	if (err) {
		report(c, off, "FDE", err);
		return;
	}
	if (!c->opts->json) {
		out_fmt("\n%08" PRIx64 " %016" PRIx64 " FDE cie=%08" PRIx64 " pc=0x%" PRIx64
		       "..0x%" PRIx64 "\n",
		       off, fde.end_off - off - (cie.offset64 ? 12 : 4), fde.cie_off,
		       fde.pc_begin, fde.pc_end);
		if (fde.has_lsda)
			out_fmt("  LSDA: 0x%" PRIx64 "\n", fde.lsda);
		if (!c->opts->rows_only)
			print_insns(c, &cie, &fde, fde.insns, fde.insns_end);
	}
	err = compute_rows(c, &cie, &fde);
	if (err)
		report(c, off, "FDE rows", err);
	if (c->opts->json)
		print_rows_json(c, &fde);
	else if (c->nrows)
		print_row_table(c, (unsigned)cie.ra_reg);
}

static void dump_section(struct dump_ctx *c)
{
	if (!c->opts->json)
		out_fmt("\nContents of the %s%s section (0x%zx bytes at 0x%" PRIx64 "):\n",
		       c->from_debug_file ? "separate debug file's " : "", c->sec_name,
		       c->sec->len, c->sec->addr);
	uint64_t off = 0;
	while (off < c->sec->len) {
		struct cfi_entry e;
		int err = cfi_entry_at(c->sec, off, &e);
		if (err) {
			report(c, off, "entry (the rest of the section is unreadable)", err);
			return;
		}
		if (e.kind == CFI_ENTRY_TERMINATOR) {
			if (!c->opts->json && !c->opts->rows_only)
				out_fmt("\n%08" PRIx64 " ZERO terminator\n", off);
			if (c->sec->is_eh)
				return;
		} else if (e.kind == CFI_ENTRY_CIE) {
			struct cfi_cie cie;
			err = cfi_decode_cie(c->sec, off, &cie);
			if (err)
				report(c, off, "CIE", err);
			else if (!c->opts->json && !c->opts->rows_only)
				print_cie(c, &cie);
		} else {
			dump_fde(c, off);
		}
		off = e.next_off;
	}
}

/* --pc: the FDE and the single row in force at the address. */
static int dump_pc(struct dump_ctx *c)
{
	const struct ldr_section *h = &c->ldr->eh_frame_hdr;
	struct cfi_hdr hdr = { h->data, h->len, h->addr };
	struct cfi_table t;
	int err = cfi_table_init(&t, c->sec, c->sec->is_eh && h->present && h->data ? &hdr : NULL);
	if (err) {
		report(c, 0, "index", err);
		return err;
	}
	struct cfi_fde fde;
	struct cfi_cie cie;
	struct cfi_row row;
	err = cfi_table_find(&t, c->opts->pc, &fde, &cie);
	if (!err)
		err = cfi_row_at(c->sec, &cie, &fde, c->opts->pc, &row);
	cfi_table_free(&t);
	if (err)
		return err;

	c->nrows = 0;
	if (!push_row(c, &row))
		return BK_E_NOMEM;
	if (c->opts->json) {
		print_rows_json(c, &fde);
		return 0;
	}
	char name[48];
	out_fmt("%s FDE at offset 0x%" PRIx64 " (CIE at 0x%" PRIx64 "), pc=0x%" PRIx64
	       "..0x%" PRIx64 "\n", c->sec_name, fde.off, fde.cie_off, fde.pc_begin, fde.pc_end);
	out_fmt("row in force at 0x%" PRIx64 ": 0x%" PRIx64 "..0x%" PRIx64 "\n", c->opts->pc,
	       row.loc, row.loc_end);
	out_fmt("  %-8s ", "CFA");
	if (row.cfa.kind == BK_RULE_CFA_REG_OFFSET)
		out_fmt("%s%+" PRId64 "\n", reg_short(c, row.cfa.reg, name, sizeof(name)), row.cfa.value);
	else if (row.cfa.kind == BK_RULE_CFA_EXPRESSION) {
		print_expr(c, cfi_rule_expr(c->sec, &row.cfa), row.cfa.expr_len);
		out_c('\n');
	} else
		out_fmt("undefined\n");
	for (unsigned j = 0; j < row.nrules; j++) {
		const struct cfi_rule *r = &row.rule[j];
		char other[48];
		out_fmt("  %-8s ", reg_short(c, row.regno[j], name, sizeof(name)));
		switch (r->kind) {
		case BK_RULE_UNDEFINED: out_fmt("undefined"); break;
		case BK_RULE_SAME_VALUE: out_fmt("same value"); break;
		case BK_RULE_OFFSET: out_fmt("[CFA%+" PRId64 "]", r->value); break;
		case BK_RULE_VAL_OFFSET: out_fmt("CFA%+" PRId64, r->value); break;
		case BK_RULE_REGISTER: out_fmt("%s", reg_short(c, r->reg, other, sizeof(other))); break;
		/* The CFA is pushed before the expression runs (§6.4.2.3). */
		case BK_RULE_EXPRESSION:
			out_s("[CFA; ");
			print_expr(c, cfi_rule_expr(c->sec, r), r->expr_len);
			out_c(']');
			break;
		case BK_RULE_VAL_EXPRESSION:
			out_s("CFA; ");
			print_expr(c, cfi_rule_expr(c->sec, r), r->expr_len);
			break;
		}
		if (row.regno[j] == cie.ra_reg)
			out_fmt("   (return address)");
		out_c('\n');
	}
	if (row.args_size)
		out_fmt("  args_size %" PRIu64 "\n", row.args_size);
	if (c->arch && c->arch->arch == BK_ARCH_AARCH64)
		out_fmt("  ra_sign_state %u\n", row.ra_sign_state);
	if (cie.signal_frame)
		out_fmt("  (signal frame)\n");
	return 0;
}

static const char *const sec_names[] = { [UW_EH_FRAME] = ".eh_frame",
					  [UW_DEBUG_FRAME] = ".debug_frame" };

/* Dump the sections of LDR that OPTS select; returns how many there were. */
static int dump_ldr(struct dump_ctx *c, const struct ldr_elf *ldr, bool from_debug_file,
		    bool *pc_found)
{
	int nsec = 0;
	c->ldr = ldr;
	c->from_debug_file = from_debug_file;
	for (int k = UW_EH_FRAME; k <= UW_DEBUG_FRAME; k++) {
		struct cfi_section sec;
		if (c->opts->only_section >= 0 && c->opts->only_section != k)
			continue;
		if (!uw_cfi_section(ldr, (enum uw_section_kind)k, &sec))
			continue;
		nsec++;
		/* A .o: its FDE addresses as relocated (ldr_rel.c). */
		uint8_t *relocated = NULL;
		size_t applied, skipped;
		const struct ldr_section *ls = k == UW_EH_FRAME ? &ldr->eh_frame : &ldr->debug_frame;
		if (ldr_rel_section(ldr, ls, &relocated, &applied, &skipped) != 0) {
			cli_error(c->path, "out of memory");
			c->nerrors++;
			continue;
		}
		if (relocated)
			sec.data = relocated;
		if (skipped)
			cli_error(c->path, "warning: %zu relocation%s of %s not applied (types backstep "
				  "does not apply, or bad entries): the addresses they fill in read as "
				  "unrelocated", skipped, skipped == 1 ? "" : "s", sec_names[k]);
		c->sec = &sec;
		c->sec_name = sec_names[k];
		if (!c->opts->have_pc) {
			dump_section(c);
		} else if (!*pc_found) {
			int err = dump_pc(c);
			if (!err)
				*pc_found = true;
			else if (err != BK_E_NOT_FOUND)
				report(c, c->opts->pc, "lookup", err);
		}
		base_free(relocated);
	}
	return nsec;
}

static int dump_file(const char *path, const struct dump_opts *opts)
{
	struct ldr_elf *ldr, *dbg = NULL;
	int err = ldr_open_path(path, &ldr);
	if (err) {
		cli_file_error(path, err);
		return CLI_USAGE;
	}
	struct dump_ctx c = { .opts = opts, .path = path, .arch = ldr->arch };
	if (!opts->json && !opts->have_pc) {
		out_fmt("%s: ELF%u %s", path, ldr->elf_class == 2 ? 64 : 32,
		       ldr->arch ? ldr->arch->name : "(unknown machine)");
		if (ldr->build_id_len) {
			out_fmt(", build-id ");
			for (size_t i = 0; i < ldr->build_id_len; i++)
				out_fmt("%02x", ldr->build_id[i]);
		}
		out_c('\n');
	}
	bool pc_found = false;
	int nsec = dump_ldr(&c, ldr, false, &pc_found);
	if (opts->debug_file) {
		err = ldr_open_debug_file(ldr, NULL, &dbg);
		if (err) {
			cli_error(path, "no separate debug file found (%s)", bk_strerror(err));
		} else {
			if (!opts->json && !opts->have_pc)
				out_fmt("\nseparate debug file: %s\n", dbg->path);
			nsec += dump_ldr(&c, dbg, true, &pc_found);
		}
	}
	int status = c.nerrors ? 1 : 0;
	if (nsec == 0) {
		cli_error(path, "no unwind sections (.eh_frame, .debug_frame)%s",
			  opts->only_section >= 0 ? " of the kind asked for" : "");
		status = 1;
	} else if (opts->have_pc && !pc_found) {
		cli_error(path, "no FDE covers 0x%" PRIx64, opts->pc);
		status = 1;
	}
	free(c.rows);
	if (dbg)
		ldr_close(dbg);
	ldr_close(ldr);
	return status;
}

int cmd_dump(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "rows", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "pc", required_argument, NULL, 'p' },
		{ "section", required_argument, NULL, 's' },
		{ "debug-file", no_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct dump_opts opts = { .only_section = -1 };
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "rjp:s:dh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r': opts.rows_only = true; break;
		case 'j': opts.json = true; break;
		case 'd': opts.debug_file = true; break;
		case 'p':
			/* Hexadecimal, with or without 0x: addresses as nm,
			 * objdump and readelf print them. */
			if (!cli_parse_hex(optarg, &opts.pc)) {
				cli_error("--pc", "'%s' is not an address", optarg);
				return 2;
			}
			opts.have_pc = true;
			break;
		case 's':
			if (!strcmp(optarg, "eh") || !strcmp(optarg, ".eh_frame"))
				opts.only_section = UW_EH_FRAME;
			else if (!strcmp(optarg, "debug") || !strcmp(optarg, ".debug_frame"))
				opts.only_section = UW_DEBUG_FRAME;
			else {
				cli_error("--section", "'%s' is not 'eh' or 'debug'", optarg);
				return 2;
			}
			break;
		case 'h':
			out_fmt("usage: backstep dump [--rows] [--json] [--pc ADDR] "
			       "[--section eh|debug] [--debug-file] FILE...\n");
			out_flush();
			return 0;
		default:
			return 2;
		}
	}
	if (optind >= argc) {
		cli_error("dump", "no file named (usage: backstep dump [OPTIONS] FILE...)");
		return 2;
	}
	int status = 0;
	for (int i = optind; i < argc; i++) {
		int s = dump_file(argv[i], &opts);
		status = s > status ? s : status;
	}
	out_flush();
	return status;
}
