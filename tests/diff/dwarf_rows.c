/* dwarf_rows: the call-frame rows of every FDE, as libdwarf computes them.
 *
 * An independent oracle for tests/diff/readelf_diff.py. It is written only
 * against libdwarf's consumer API (20210528); nothing of backstep is used.
 *
 * usage: dwarf_rows [--section eh|debug] FILE
 *
 * Output, one record per line, fields separated by single spaces:
 *
 *   FILE <path>
 *   SECTION <.eh_frame|.debug_frame> <fde count>
 *   FDE <section> <fde offset> <pc_begin> <pc_end> cie=<cie offset> ra=<column>
 *   ROW <loc> cfa=<cfa> [<regno>=<rule>]...
 *   ERR <section> <fde offset or -> <libdwarf message>
 *
 * Addresses and offsets are hex with 0x. A ROW is printed at the FDE start and
 * at every location where libdwarf says a new row begins
 * (dwarf_get_fde_info_for_cfa_reg3_b's has_more_rows / subsequent_pc), up to
 * pc_end. Consecutive rows may be identical (an advance with no change).
 *
 *   <cfa>:  r<regno>:<offset>   register + offset
 *           expr:<hex bytes>    DW_CFA_def_cfa_expression
 *           none                no CFA rule at all
 *   <rule>: u  undefined        s  same value
 *           off:<N>             offset(N)        valoff:<N>  val_offset(N)
 *           reg:<R>             register(R)
 *           expr:<hex>          expression(E)    valexpr:<hex> val_expression(E)
 * Registers with no rule at all (never mentioned, or restored to a CIE that does
 * not mention them) are not printed: libdwarf's "initial value" is set to a
 * private sentinel so that "no rule" and DW_CFA_undefined stay distinct.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

/* Columns libdwarf keeps per row. AArch64 numbers go to 127 (z31), x86-64 to
 * 125 (k7); 256 leaves room. The special values must all be above it. */
#define TABLE_SIZE 256
#define V_UNDEFINED 1034 /* DW_FRAME_UNDEFINED_VAL */
#define V_SAME 1035      /* DW_FRAME_SAME_VAL */
#define V_NO_RULE 1100   /* our sentinel for "no rule in this row" */
#define V_CFA 1436       /* DW_FRAME_CFA_COL3 */

static Dwarf_Regtable_Entry3 rules[TABLE_SIZE];

static void hex(const void *p, Dwarf_Unsigned len)
{
	const unsigned char *b = p;
	for (Dwarf_Unsigned i = 0; i < len; i++)
		printf("%02x", b[i]);
}

static void err_line(Dwarf_Debug dbg, const char *sec, Dwarf_Off off, int has_off,
		     Dwarf_Error err)
{
	printf("ERR %s ", sec);
	if (has_off)
		printf("0x%" PRIx64, (uint64_t)off);
	else
		printf("-");
	printf(" %s\n", err ? dwarf_errmsg(err) : "(no message)");
	if (err)
		dwarf_dealloc_error(dbg, err);
}

static void print_rule(unsigned col, const Dwarf_Regtable_Entry3 *e)
{
	switch (e->dw_value_type) {
	case DW_EXPR_OFFSET:
		if (e->dw_offset_relevant) {
			printf(" %u=off:%" PRId64, col, (int64_t)e->dw_offset_or_block_len);
		} else if (e->dw_regnum == V_NO_RULE) {
			return;
		} else if (e->dw_regnum == V_UNDEFINED) {
			printf(" %u=u", col);
		} else if (e->dw_regnum == V_SAME) {
			printf(" %u=s", col);
		} else {
			printf(" %u=reg:%u", col, (unsigned)e->dw_regnum);
		}
		break;
	case DW_EXPR_VAL_OFFSET:
		printf(" %u=valoff:%" PRId64, col, (int64_t)e->dw_offset_or_block_len);
		break;
	case DW_EXPR_EXPRESSION:
		printf(" %u=expr:", col);
		hex(e->dw_block_ptr, e->dw_offset_or_block_len);
		break;
	case DW_EXPR_VAL_EXPRESSION:
		printf(" %u=valexpr:", col);
		hex(e->dw_block_ptr, e->dw_offset_or_block_len);
		break;
	default:
		printf(" %u=?type%u", col, (unsigned)e->dw_value_type);
		break;
	}
}

/* Print the row in force at PC. Returns DW_DLV_OK and sets *more / *next to
 * where the next row starts, or DW_DLV_ERROR (already reported). */
static int print_row(Dwarf_Debug dbg, const char *sec, Dwarf_Off fde_off, Dwarf_Fde fde,
		     Dwarf_Addr pc, Dwarf_Bool *more, Dwarf_Addr *next)
{
	Dwarf_Error err = 0;
	Dwarf_Small vtype = 0;
	Dwarf_Signed offrel = 0, reg = 0, off_or_len = 0;
	Dwarf_Ptr block = 0;
	Dwarf_Addr row_pc = 0;

	int res = dwarf_get_fde_info_for_cfa_reg3_b(fde, pc, &vtype, &offrel, &reg, &off_or_len,
						    &block, &row_pc, more, next, &err);
	if (res != DW_DLV_OK) {
		err_line(dbg, sec, fde_off, 1, res == DW_DLV_ERROR ? err : 0);
		return DW_DLV_ERROR;
	}

	Dwarf_Regtable3 rt;
	memset(&rt, 0, sizeof(rt));
	rt.rt3_reg_table_size = TABLE_SIZE;
	rt.rt3_rules = rules;
	Dwarf_Addr row_pc2 = 0;
	res = dwarf_get_fde_info_for_all_regs3(fde, pc, &rt, &row_pc2, &err);
	if (res != DW_DLV_OK) {
		err_line(dbg, sec, fde_off, 1, res == DW_DLV_ERROR ? err : 0);
		return DW_DLV_ERROR;
	}

	printf("ROW 0x%" PRIx64 " cfa=", (uint64_t)pc);
	if (vtype == DW_EXPR_EXPRESSION || vtype == DW_EXPR_VAL_EXPRESSION) {
		printf("expr:");
		hex(block, (Dwarf_Unsigned)off_or_len);
	} else if (reg == V_NO_RULE || reg == V_UNDEFINED) {
		printf("none");
	} else {
		printf("r%" PRId64 ":%" PRId64, (int64_t)reg, (int64_t)(offrel ? off_or_len : 0));
	}
	for (unsigned c = 0; c < TABLE_SIZE; c++)
		print_rule(c, &rules[c]);
	putchar('\n');
	return DW_DLV_OK;
}

static void dump_fde(Dwarf_Debug dbg, const char *sec, Dwarf_Fde fde)
{
	Dwarf_Error err = 0;
	Dwarf_Addr low = 0;
	Dwarf_Unsigned len = 0, fde_len = 0;
	Dwarf_Ptr fde_bytes = 0;
	Dwarf_Off cie_off = 0, fde_off = 0;
	Dwarf_Signed cie_index = 0;

	if (dwarf_get_fde_range(fde, &low, &len, &fde_bytes, &fde_len, &cie_off, &cie_index,
				&fde_off, &err) != DW_DLV_OK) {
		err_line(dbg, sec, 0, 0, err);
		return;
	}

	/* dwarf_get_fde_range's cie_offset is the FDE's raw CIE pointer field
	 * (in .eh_frame a distance back from the field); ask for the CIE's
	 * own section offset instead. */
	Dwarf_Cie cie = 0;
	Dwarf_Half ra = 0;
	if (dwarf_get_cie_of_fde(fde, &cie, &err) == DW_DLV_OK) {
		if (dwarf_cie_section_offset(dbg, cie, &cie_off, &err) != DW_DLV_OK) {
			err_line(dbg, sec, fde_off, 1, err);
			err = 0;
		}
		Dwarf_Unsigned bytes = 0, caf = 0, ilen = 0;
		Dwarf_Small version = 0;
		char *aug = 0;
		Dwarf_Signed daf = 0;
		Dwarf_Ptr insns = 0;
		Dwarf_Half offset_size = 0;
		if (dwarf_get_cie_info_b(cie, &bytes, &version, &aug, &caf, &daf, &ra, &insns, &ilen,
					 &offset_size, &err) != DW_DLV_OK) {
			err_line(dbg, sec, fde_off, 1, err);
			err = 0;
		}
	} else {
		err_line(dbg, sec, fde_off, 1, err);
		err = 0;
	}

	Dwarf_Addr end = low + len;
	printf("FDE %s 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64 " cie=0x%" PRIx64 " ra=%u\n", sec,
	       (uint64_t)fde_off, (uint64_t)low, (uint64_t)end, (uint64_t)cie_off, (unsigned)ra);
	if (len == 0)
		return;

	Dwarf_Addr pc = low;
	for (;;) {
		Dwarf_Bool more = 0;
		Dwarf_Addr next = 0;
		if (print_row(dbg, sec, fde_off, fde, pc, &more, &next) != DW_DLV_OK)
			return;
		if (!more || next >= end)
			return;
		if (next <= pc) {
			printf("ERR %s 0x%" PRIx64 " next row at 0x%" PRIx64 " not after 0x%" PRIx64
			       "\n", sec, (uint64_t)fde_off, (uint64_t)next, (uint64_t)pc);
			return;
		}
		pc = next;
	}
}

static int dump_section(Dwarf_Debug dbg, int eh)
{
	const char *sec = eh ? ".eh_frame" : ".debug_frame";
	Dwarf_Cie *cies = 0;
	Dwarf_Fde *fdes = 0;
	Dwarf_Signed ncie = 0, nfde = 0;
	Dwarf_Error err = 0;
	int res = eh ? dwarf_get_fde_list_eh(dbg, &cies, &ncie, &fdes, &nfde, &err)
		     : dwarf_get_fde_list(dbg, &cies, &ncie, &fdes, &nfde, &err);
	if (res == DW_DLV_NO_ENTRY)
		return 0;
	if (res == DW_DLV_ERROR) {
		err_line(dbg, sec, 0, 0, err);
		return 1;
	}
	printf("SECTION %s %" PRId64 "\n", sec, (int64_t)nfde);
	for (Dwarf_Signed i = 0; i < nfde; i++)
		dump_fde(dbg, sec, fdes[i]);
	dwarf_fde_cie_list_dealloc(dbg, cies, ncie, fdes, nfde);
	return 0;
}

int main(int argc, char **argv)
{
	int want_eh = 1, want_debug = 1;
	int i = 1;
	if (i + 1 < argc && !strcmp(argv[i], "--section")) {
		if (!strcmp(argv[i + 1], "eh"))
			want_debug = 0;
		else if (!strcmp(argv[i + 1], "debug"))
			want_eh = 0;
		else {
			fprintf(stderr, "dwarf_rows: --section takes eh or debug\n");
			return 2;
		}
		i += 2;
	}
	if (i + 1 != argc) {
		fprintf(stderr, "usage: dwarf_rows [--section eh|debug] FILE\n");
		return 2;
	}
	const char *path = argv[i];
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		perror(path);
		return 2;
	}

	/* dwarf_init_b on an fd: no GNU debuglink following, so the sections
	 * read are exactly the ones in FILE. */
	Dwarf_Debug dbg = 0;
	Dwarf_Error err = 0;
	int res = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, 0, 0, &dbg, &err);
	if (res == DW_DLV_NO_ENTRY) {
		printf("FILE %s\n", path);
		close(fd);
		return 0; /* no DWARF sections at all */
	}
	if (res != DW_DLV_OK) {
		fprintf(stderr, "dwarf_rows: %s: %s\n", path, err ? dwarf_errmsg(err) : "init failed");
		close(fd);
		return 2;
	}
	dwarf_set_frame_rule_table_size(dbg, TABLE_SIZE);
	dwarf_set_frame_rule_initial_value(dbg, V_NO_RULE);
	dwarf_set_frame_same_value(dbg, V_SAME);
	dwarf_set_frame_undefined_value(dbg, V_UNDEFINED);
	dwarf_set_frame_cfa_value(dbg, V_CFA);

	printf("FILE %s\n", path);
	int status = 0;
	if (want_eh)
		status |= dump_section(dbg, 1);
	if (want_debug)
		status |= dump_section(dbg, 0);
	dwarf_finish(dbg, &err);
	close(fd);
	return status;
}
