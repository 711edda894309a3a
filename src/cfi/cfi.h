/* Call-frame information: CIE/FDE decoding for .eh_frame and .debug_frame,
 * FDE lookup by PC, and the CFA state machine that turns an FDE's
 * instructions into rows (DWARF 5 §6.4; LSB 5.0 "Exception Frames").
 *
 * Pure: bytes in, rows out. Nothing here calls the OS; only cfi_table_init
 * and cfi_table_free allocate (cold, once per section; cfi_table_init_mem
 * builds the same index into the caller's memory instead). Every other function
 * is AS-safe and bounded: instructions are consumed in one pass, the
 * remember_state stack and the rules of a row have fixed capacities
 * (CFI_STATE_DEPTH, CFI_STATE_POOL, CFI_MAX_RULES) and exceeding one returns
 * BK_E_LIMIT.
 *
 * Addresses are those of the section's own address space (link-time for a
 * file): the caller removes the load bias before asking.
 */
#ifndef BK_CFI_H
#define BK_CFI_H

#include "../base/base.h"

#define CFI_MAX_RULES BK_MAX_ROW_REGS /* registers with a rule in one row */
#define CFI_STATE_DEPTH 8             /* nested DW_CFA_remember_state */
#define CFI_STATE_POOL 128            /* register rules held by all remembered rows */
#define CFI_MAX_REGNO 0xffff          /* larger DWARF register numbers are corrupt */

/* One section of call-frame information, and the bases its pointer
 * encodings are relative to. */
struct cfi_section {
	const uint8_t *data;
	size_t len;
	uint64_t addr;      /* address of data[0]: the DW_EH_PE_pcrel base */
	bool is_eh;         /* .eh_frame (true) or .debug_frame (false) */
	uint8_t addr_size;  /* 4 or 8: DW_EH_PE_absptr and .debug_frame addresses */
	uint64_t text_addr; /* DW_EH_PE_textrel base */
	uint64_t data_addr; /* DW_EH_PE_datarel base (.got for .eh_frame) */
	struct base_mem mem; /* reads for DW_EH_PE_indirect; may be empty */
};

/* A decoded CIE (DWARF 5 §6.4.1; LSB for the augmentations). */
struct cfi_cie {
	uint64_t off;           /* offset of its length field in the section */
	uint64_t end_off;       /* offset just past it */
	uint8_t version;        /* 1, 3 or 4 */
	bool offset64;          /* 64-bit DWARF format */
	const char *augmentation; /* points into the section, NUL-terminated */
	bool has_z;             /* augmentation data is length-prefixed */
	bool signal_frame;      /* 'S' */
	bool has_b_key;         /* 'B': AArch64 return address signed with the B key */
	bool mte_tagged;        /* 'G': AArch64 MTE-tagged stack frame */
	uint8_t fde_enc;        /* 'R', default DW_EH_PE_absptr */
	uint8_t lsda_enc;       /* 'L', DW_EH_PE_omit if none */
	uint8_t personality_enc; /* 'P', DW_EH_PE_omit if none */
	uint64_t personality;
	uint64_t eh_data;       /* legacy "eh" augmentation pointer */
	uint8_t addr_size;      /* v4 address_size, else the section's */
	uint8_t segment_size;   /* v4 segment_selector_size */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	const uint8_t *insns, *insns_end; /* initial instructions */
};

struct cfi_fde {
	uint64_t off;           /* offset of its length field */
	uint64_t end_off;
	uint64_t cie_off;
	uint64_t pc_begin, pc_end;
	bool has_lsda;
	uint64_t lsda;
	const uint8_t *insns, *insns_end;
};

enum cfi_entry_kind { CFI_ENTRY_CIE, CFI_ENTRY_FDE, CFI_ENTRY_TERMINATOR };

/* The framing of one entry: enough to walk a section without decoding. */
struct cfi_entry {
	enum cfi_entry_kind kind;
	uint64_t off;           /* offset of the length field */
	uint64_t next_off;      /* offset of the next entry */
	bool offset64;
	uint64_t cie_off;       /* FDE: the CIE it names (already made absolute) */
	const uint8_t *body;    /* just after the CIE id / CIE pointer */
	const uint8_t *end;
};

/* Frame the entry at OFF. BK_E_CORRUPT if its length runs past the section
 * or a CIE pointer is out of range. A zero length is a terminator. */
BK_HIDDEN int cfi_entry_at(const struct cfi_section *sec, uint64_t off, struct cfi_entry *e);
BK_HIDDEN int cfi_decode_cie(const struct cfi_section *sec, uint64_t off, struct cfi_cie *cie);
/* Decode the FDE at OFF and the CIE it names (CIE may not be NULL). */
BK_HIDDEN int cfi_decode_fde(const struct cfi_section *sec, uint64_t off, struct cfi_fde *fde,
			     struct cfi_cie *cie);

/* One call-frame instruction, decoded (DWARF 5 §6.4.2). Operands are
 * already factored: offsets are multiplied by the data alignment factor,
 * advances by the code alignment factor. The fields used per opcode:
 *
 *   opcode                                  reg  reg2  u          s       block
 *   advance_loc*, MIPS_advance_loc8         -    -     byte delta -       -
 *   set_loc                                 -    -     address    -       -
 *   offset*, val_offset*, GNU_neg_off_ext   R    -     -          offset  -
 *   restore*, undefined, same_value         R    -     -          -       -
 *   register                                R    R2    -          -       -
 *   def_cfa, def_cfa_sf                     R    -     -          offset  -
 *   def_cfa_register                        R    -     -          -       -
 *   def_cfa_offset, def_cfa_offset_sf       -    -     -          offset  -
 *   def_cfa_expression                      -    -     -          -       expr
 *   expression, val_expression              R    -     -          -       expr
 *   GNU_args_size                           -    -     size       -       -
 *
 * DW_CFA_advance_loc, DW_CFA_offset and DW_CFA_restore carry their operand
 * in the low six bits; opcode holds just the high two (0x40, 0x80, 0xc0). */
struct cfi_insn {
	uint8_t opcode;
	unsigned reg, reg2;
	uint64_t u;
	int64_t s;
	const uint8_t *block;
	uint32_t block_len;
};

/* Decode the instruction at B (inside SEC, for CIE and FDE; FDE may be NULL
 * for a CIE's initial instructions, then DW_CFA_set_loc's funcrel base is
 * 0). BK_E_CORRUPT on truncation or overflow, BK_E_BAD_REG for a register
 * above CFI_MAX_REGNO, BK_E_UNSUPPORTED for an unknown opcode. */
BK_HIDDEN int cfi_decode_insn(struct buf *b, const struct cfi_section *sec,
			      const struct cfi_cie *cie, const struct cfi_fde *fde,
			      struct cfi_insn *insn);
/* The spec name of a (normalized) opcode, "DW_CFA_def_cfa". */
BK_HIDDEN const char *cfi_insn_name(uint8_t opcode);

/* ---- Rows ----------------------------------------------------------------
 *
 * A rule per register, as in include/backstep.h's table. Expressions are
 * kept as an offset into the section (value) and a length, so a rule is
 * 16 bytes and a whole row fits comfortably on a signal stack. */
struct cfi_rule {
	int64_t value;      /* OFFSET/VAL_OFFSET/CFA_REG_OFFSET: the offset;
			       EXPRESSION kinds: offset of the bytes in the section */
	uint32_t expr_len;
	uint16_t reg;       /* REGISTER / CFA_REG_OFFSET: the register */
	uint8_t kind;       /* enum bk_rule_kind */
};

struct cfi_row {
	uint64_t loc, loc_end;  /* the row holds for loc <= pc < loc_end */
	struct cfi_rule cfa;    /* BK_RULE_NONE until the program defines it */
	/* The register+offset CFA rule in force before the CFA became an
	 * expression (BK_RULE_NONE if none): a DW_CFA_def_cfa_register after
	 * the expression takes its offset, as libgcc and gdb do. Not a rule of
	 * the row: cfi_row_same_rules ignores it. */
	struct cfi_rule cfa_before_expr;
	uint8_t ra_sign_state;  /* AArch64 RA_SIGN_STATE: bit 0 the RA is signed
				 * (DW_CFA_AARCH64_negate_ra_state toggles it), bit 1
				 * with the PC as a modifier (..._with_pc toggles both) */
	uint64_t args_size;     /* DW_CFA_GNU_args_size */
	uint16_t nrules;        /* rules below, ascending register number */
	uint16_t regno[CFI_MAX_RULES];
	struct cfi_rule rule[CFI_MAX_RULES];
};

/* Copy SRC to DST: its header and its NRULES rules, not the unused tail
 * (a row is ~900 bytes; most hold a few rules). Entries of DST past nrules
 * are left as they were: nothing reads them. */
static inline void cfi_row_copy(struct cfi_row *dst, const struct cfi_row *src)
{
	memcpy(dst, src, offsetof(struct cfi_row, regno));
	memcpy(dst->regno, src->regno, src->nrules * sizeof(src->regno[0]));
	memcpy(dst->rule, src->rule, src->nrules * sizeof(src->rule[0]));
}
/* An empty row: no CFA rule, no register rules. */
static inline void cfi_row_clear(struct cfi_row *row)
{
	memset(row, 0, offsetof(struct cfi_row, regno));
}

/* The rule for REGNO in ROW, or NULL when the row has none. */
BK_HIDDEN const struct cfi_rule *cfi_row_rule(const struct cfi_row *row, unsigned regno);
/* True when A and B give every register and the CFA the same rules. */
BK_HIDDEN bool cfi_row_same_rules(const struct cfi_row *a, const struct cfi_row *b);

/* The CFA state machine for one FDE. Caller storage; ~5 KiB. */
struct cfi_machine {
	const struct cfi_section *sec;
	const struct cfi_cie *cie;
	const struct cfi_fde *fde;
	struct buf insns;       /* what is left of the FDE program */
	struct cfi_row initial; /* the row after the CIE's initial instructions */
	struct cfi_row row;     /* the row being built */
	bool done;
	unsigned depth;         /* remembered rows */
	uint16_t pool_used;
	/* Section offset of the first instruction accepted beyond the
	 * standard (a def_cfa_register while the CFA is an expression), or 0. */
	uint64_t nonstandard_at;
	uint64_t insn_at;       /* section offset of the instruction being applied */
	struct {
		struct cfi_rule cfa, cfa_before_expr;
		uint8_t ra_sign_state;
		uint16_t nrules;
		uint16_t pool_off;
	} saved[CFI_STATE_DEPTH];
	uint16_t pool_regno[CFI_STATE_POOL];
	struct cfi_rule pool_rule[CFI_STATE_POOL];
};

/* Run the CIE's initial instructions. */
BK_HIDDEN int cfi_machine_init(struct cfi_machine *m, const struct cfi_section *sec,
			       const struct cfi_cie *cie, const struct cfi_fde *fde);
/* Produce the next row in *ROW: 1 when a row was produced, 0 when the FDE has
 * no more rows, or a BK_E_* error (rows already produced stay valid). Rows
 * come in address order and tile [pc_begin, pc_end). */
BK_HIDDEN int cfi_machine_next(struct cfi_machine *m, struct cfi_row *row);
/* The row in force at PC (pc_begin <= pc < pc_end). */
BK_HIDDEN int cfi_row_at(const struct cfi_section *sec, const struct cfi_cie *cie,
			 const struct cfi_fde *fde, uint64_t pc, struct cfi_row *row);

/* The expression bytes of rule R taken from SEC. */
static inline const uint8_t *cfi_rule_expr(const struct cfi_section *sec, const struct cfi_rule *r)
{
	return sec->data + r->value;
}

/* ---- Lookup ---------------------------------------------------------------
 *
 * A table finds the FDE covering a PC in one section, O(log n), without
 * allocating. For .eh_frame it uses the .eh_frame_hdr search table when
 * that table is present and passes validation (fixed-size encoding, sorted,
 * every entry pointing at an FDE inside .eh_frame); otherwise it builds a
 * sorted index of the section's FDEs once (allocated, or in memory the
 * caller gives). A scan table has neither: each lookup walks the section,
 * O(n), and answers as the index would (for the time an index is being
 * built elsewhere). */
struct cfi_index_entry {
	uint64_t pc_begin, pc_end;
	uint64_t fde_off;
};

struct cfi_table {
	struct cfi_section sec;
	/* The .eh_frame_hdr search table, when used. */
	const uint8_t *hdr_table;
	size_t hdr_count;
	uint8_t hdr_enc;
	bool hdr_lazy;          /* entries checked by the lookups that visit them */
	struct base_ptr_ctx hdr_ctx;
	/* Otherwise the built index; INDEX_BORROWED: memory the table does not
	 * own (cfi_table_init_mem, cfi_table_init_index). */
	struct cfi_index_entry *index;
	size_t nindex;
	bool index_borrowed;
	/* Neither: a scan table, visiting at most SCAN_MAX entries per lookup. */
	size_t scan_max;
	/* What building the index saw: entries that failed to decode (FDEs of
	 * zero length are left out without being counted). */
	size_t nbad;
	int first_error;
	uint64_t first_error_off;
};

/* The .eh_frame_hdr section, when there is one. */
struct cfi_hdr {
	const uint8_t *data;
	size_t len;
	uint64_t addr;
};

/* Build the lookup table of SEC (copied). HDR may be NULL. Cold. */
BK_HIDDEN int cfi_table_init(struct cfi_table *t, const struct cfi_section *sec,
			     const struct cfi_hdr *hdr);
/* The same restricted to the .eh_frame_hdr table, adopted lazily: the
 * header is checked now, each entry when a lookup's binary search visits it
 * (sorted along the path; the entry found must frame an FDE covering the
 * PC, as every lookup checks). Never allocates and touches only the pages a
 * lookup needs, so it may run in a signal handler; BK_E_UNSUPPORTED when
 * the header is absent or unusable. The table needs no cfi_table_free. */
BK_HIDDEN int cfi_table_init_hdr(struct cfi_table *t, const struct cfi_section *sec,
				 const struct cfi_hdr *hdr);
/* The index of cfi_table_init, built into MEM (CAP entries) with no
 * allocation and no library call: AS-safe, O(n log n) for n FDEs. BK_E_LIMIT
 * when the section keeps more than CAP (cfi_index_count says how many to
 * reserve). The table does not own MEM. */
BK_HIDDEN int cfi_table_init_mem(struct cfi_table *t, const struct cfi_section *sec,
				 struct cfi_index_entry *mem, size_t cap);
/* How many FDE entries SEC frames (an upper bound on the index's entries),
 * reading only length fields: 0, or BK_E_LIMIT past MAX. AS-safe. */
BK_HIDDEN int cfi_index_count(const struct cfi_section *sec, size_t max, size_t *n);
/* A table over an index built before by cfi_table_init_mem for SEC (N
 * entries, not copied, not owned). AS-safe. */
BK_HIDDEN void cfi_table_init_index(struct cfi_table *t, const struct cfi_section *sec,
				    const struct cfi_index_entry *index, size_t n);
/* A scan table: each lookup walks SEC and finds the FDE the index would
 * find, or BK_E_LIMIT after visiting MAX_ENTRIES entries. AS-safe. */
BK_HIDDEN void cfi_table_init_scan(struct cfi_table *t, const struct cfi_section *sec,
				   size_t max_entries);
BK_HIDDEN void cfi_table_free(struct cfi_table *t);
/* The FDE covering PC and its CIE: 0, BK_E_NOT_FOUND, or a decode error
 * (a scan table: also BK_E_LIMIT). AS-safe. */
BK_HIDDEN int cfi_table_find(const struct cfi_table *t, uint64_t pc, struct cfi_fde *fde,
			     struct cfi_cie *cie);
/* True when lookups use .eh_frame_hdr's table. */
static inline bool cfi_table_uses_hdr(const struct cfi_table *t)
{
	return t->hdr_table != NULL;
}

#endif
