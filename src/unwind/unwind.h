/* The unwinder layer. For now: an ELF file with its call-frame tables
 * (struct bk_elf), composed from the loader (bytes, sections) and the CFI
 * engine (decoding, lookup, rows), which know nothing of each other. */
#ifndef BK_UNWIND_H
#define BK_UNWIND_H

#include "../cfi/cfi.h"
#include "../loader/loader.h"

enum uw_section_kind { UW_EH_FRAME, UW_DEBUG_FRAME };

/* One call-frame section of a file and its lookup table (built on first use). */
struct uw_cfi {
	bool present;
	struct cfi_section sec;
	bool built;
	int build_err;
	struct cfi_table table;
};

struct bk_elf {
	struct ldr_elf *ldr;
	struct uw_cfi eh_frame;
	struct uw_cfi debug_frame;
};

/* Describe section KIND of LDR as a cfi_section (link-time addresses;
 * DW_EH_PE_indirect reads come from the file's PT_LOAD contents). Returns
 * false when the file has no such section with contents. */
BK_HIDDEN bool uw_cfi_section(const struct ldr_elf *ldr, enum uw_section_kind kind,
			      struct cfi_section *out);
/* Wrap an opened loader object (taking ownership) as a bk_elf. */
BK_HIDDEN int uw_elf_wrap(struct ldr_elf *ldr, struct bk_elf **out);
/* The lookup table of section KIND, built on first use; NULL if absent or
 * building failed (*ERR says why). */
BK_HIDDEN const struct cfi_table *uw_elf_table(struct bk_elf *elf, enum uw_section_kind kind,
					       int *err);
/* Convert an internal row into the public form. */
BK_HIDDEN void uw_row_export(const struct cfi_section *sec, const struct cfi_cie *cie,
			     const struct cfi_fde *fde, const struct cfi_row *row,
			     struct bk_row *out);

#endif
