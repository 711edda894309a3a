/* src/check: static checks of an ELF file's unwind tables (`backstep
 * check`), what can be said of .eh_frame, .eh_frame_hdr and .debug_frame
 * without running anything (chk_tables.c). Every CIE and FDE goes through
 * the library's own decoder (cfi_decode_*) and every FDE program through
 * the CFA state machine (cfi_machine_next) to its end, so a table this
 * passes is one the unwinder can read. The per-instruction checks of a
 * running program are the validator's (src/validate); nothing is shared.
 *
 * The checks and their severity (an error is a table the unwinder will get
 * wrong or cannot use; a warning is legal but suspicious or beyond one of
 * backstep's bounds; info is normal but worth knowing, shown on request):
 *
 *   kind              severity  what
 *   gap               error     executable bytes no FDE (.eh_frame or
 *                               .debug_frame) covers, that are not fill;
 *                               split at function symbols. Uncovered fill
 *                               (x86: nop forms, int3, zero; AArch64: nop,
 *                               zero) is only counted (padding_bytes)
 *                     info      uncovered bytes that read as strings (data
 *                               kept in .text by hand-written assembly)
 *   overlap           error     two FDEs of one section cover one address
 *                               (.eh_frame vs .debug_frame is not one)
 *   eh-frame-hdr      error     bad version/encodings, eh_frame_ptr not
 *                               .eh_frame, table unsorted or truncated, an
 *                               entry not naming an FDE with its initial
 *                               location, an FDE missing from the table or
 *                               listed twice
 *                     warning   no search table (runtimes search linearly)
 *   outside-code      error     an FDE's range is not inside executable code
 *                               (SHF_EXECINSTR sections; PF_X segments when
 *                               there are no section headers)
 *   discarded         info      a .debug_frame FDE at address 0 or a linker
 *                               tombstone: code the linker dropped
 *   zero-length       info      an FDE covering no bytes
 *   decode            error     a CIE or FDE the decoder rejects (each CIE
 *                               once; its FDEs are counted under it), or an
 *                               entry length that ends the section early
 *   cfa-program       error     an instruction that does not decode or that
 *                               the state machine rejects
 *                     warning   a program exceeding a backstep bound
 *                               (BK_E_LIMIT): legal DWARF, not unwound
 *   entry-row         error     the first row of an FDE starting at a
 *                               function symbol is not the call-site state
 *                               (x86-64: CFA = rsp+8, RA at CFA-8; AArch64:
 *                               CFA = sp+0, x30 with no rule or same value)
 *                     info      the same where no function symbol starts at
 *                               the FDE (a split-off .cold part, PLT code, or
 *                               a stripped file: cannot tell); glibc's
 *                               lazy-binding trampolines (_dl_runtime_resolve*,
 *                               _dl_runtime_profile*: jumped to with two
 *                               words pushed); an outermost frame (RA
 *                               undefined, _start); a signal trampoline (CIE
 *                               augmentation 'S') is exempt
 *   state-stack       error     DW_CFA_restore_state with nothing remembered
 *                     warning   DW_CFA_remember_state never restored
 *   no-unwind-tables  warning   executable code but no .eh_frame/.debug_frame
 *                     info      neither code nor tables
 *
 * Address checks (gap, padding, overlap, outside-code, eh-frame-hdr
 * contents) need link-time addresses: they are skipped for relocatable
 * objects (ET_REL), whose FDE addresses are unrelocated.
 *
 * Layers: uses src/loader (the file, its sections and segments), src/cfi,
 * src/arch (register names, the entry-row state), src/unwind
 * (uw_cfi_section: the one place a section description is made from a
 * loader object), src/sym (function symbols for names) and libelf for
 * section headers; only the CLI (tools/check.c) calls it, nothing in src/
 * depends on it. No Capstone. Cold: allocates freely, prints nothing.
 */
#ifndef BK_CHK_H
#define BK_CHK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"

enum chk_sev { CHK_SEV_INFO = 0, CHK_SEV_WARNING, CHK_SEV_ERROR, CHK_SEV_N };

enum chk_kind {
	CHK_GAP = 0,
	CHK_OVERLAP,
	CHK_HDR,
	CHK_OUTSIDE,
	CHK_DISCARDED,
	CHK_ZERO_LENGTH,
	CHK_DECODE,
	CHK_PROGRAM,
	CHK_ENTRY_ROW,
	CHK_STATE_STACK,
	CHK_NO_TABLES,
	CHK_NKINDS
};

/* One problem. Strings belong to the report. */
struct chk_finding {
	enum chk_sev sev;
	enum chk_kind kind;
	const char *section;      /* ".eh_frame", ".debug_frame", ".eh_frame_hdr"
				   * or NULL when about no one section */
	bool has_addr;
	uint64_t addr, end;       /* the address range concerned [addr, end) */
	bool has_entry;
	uint64_t entry_off;       /* the CIE/FDE (or header entry) offset in SECTION */
	char *symbol;             /* function symbol covering ADDR, or NULL */
	uint64_t sym_off;         /* ADDR - its start */
	char *code_section;       /* the ELF section holding ADDR when no symbol
				   * covers it (".plt"), or NULL */
	char *detail;             /* one line, no trailing newline */
};

struct chk_opts {
	size_t size;              /* sizeof(struct chk_opts) */
	/* At most this many findings of one kind are kept per file (the rest
	 * are counted in suppressed[]); 0: 1000. */
	unsigned max_per_kind;
};

struct chk_report {
	const char *arch;         /* "x86_64", "aarch64" or NULL (unknown machine) */
	bool relocatable;         /* ET_REL: address checks skipped */
	bool has_eh_frame, has_eh_frame_hdr, has_debug_frame;
	bool no_tables;           /* neither .eh_frame nor .debug_frame */
	size_t ncies, nfdes_eh, nfdes_debug;
	uint64_t exec_bytes;      /* in executable sections with contents */
	uint64_t covered_bytes;   /* of those, inside some FDE */
	uint64_t padding_bytes;   /* uncovered fill */
	uint64_t gap_bytes;       /* uncovered, not fill */
	size_t counts[CHK_NKINDS][CHK_SEV_N]; /* every finding, kept or not */
	size_t suppressed[CHK_NKINDS];
	size_t nerrors, nwarnings, ninfos;
	struct chk_finding *f;
	size_t nf, capf;
};

/* Check the ELF file PATH. Returns 0 with REPORT filled (problems in the
 * tables are findings, not errors), or the loader's error when PATH cannot
 * be read as ELF: BK_E_IO, BK_E_NOT_ELF, BK_E_CORRUPT, BK_E_UNSUPPORTED,
 * BK_E_NOMEM. Free REPORT with chk_report_free in every case. OPTS may be
 * NULL. */
BK_HIDDEN int chk_file(const char *path, const struct chk_opts *opts, struct chk_report *report);
BK_HIDDEN void chk_report_free(struct chk_report *report);
/* "gap", "overlap", ... and "error", "warning", "info". */
BK_HIDDEN const char *chk_kind_name(enum chk_kind kind);
BK_HIDDEN const char *chk_sev_name(enum chk_sev sev);

#endif
