/* Static checks of an ELF file's unwind tables (`backstep check`): what can
 * be said of .eh_frame, .eh_frame_hdr and .debug_frame without running
 * anything. Every CIE and FDE goes through the library's own decoder
 * (cfi_decode_*) and every FDE program through the CFA state machine
 * (cfi_machine_next) to its end, so a table this passes is one the unwinder
 * can read.
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
 * src/unwind (uw_cfi_section: the one place a section description is made
 * from a loader object), src/sym (function symbols for names) and libelf
 * for section headers. No Capstone. Cold: allocates freely, prints nothing.
 */
#ifndef BK_VAL_STATIC_H
#define BK_VAL_STATIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"

enum val_sev { VAL_SEV_INFO = 0, VAL_SEV_WARNING, VAL_SEV_ERROR, VAL_SEV_N };

enum val_static_kind {
	VS_GAP = 0,
	VS_OVERLAP,
	VS_HDR,
	VS_OUTSIDE,
	VS_DISCARDED,
	VS_ZERO_LENGTH,
	VS_DECODE,
	VS_PROGRAM,
	VS_ENTRY_ROW,
	VS_STATE_STACK,
	VS_NO_TABLES,
	VS_NKINDS
};

/* One problem. Strings belong to the report. */
struct val_static_finding {
	enum val_sev sev;
	enum val_static_kind kind;
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

struct val_static_opts {
	size_t size;              /* sizeof(struct val_static_opts) */
	/* At most this many findings of one kind are kept per file (the rest
	 * are counted in suppressed[]); 0: 1000. */
	unsigned max_per_kind;
};

struct val_static_report {
	const char *arch;         /* "x86_64", "aarch64" or NULL (unknown machine) */
	bool relocatable;         /* ET_REL: address checks skipped */
	bool has_eh_frame, has_eh_frame_hdr, has_debug_frame;
	bool no_tables;           /* neither .eh_frame nor .debug_frame */
	size_t ncies, nfdes_eh, nfdes_debug;
	uint64_t exec_bytes;      /* in executable sections with contents */
	uint64_t covered_bytes;   /* of those, inside some FDE */
	uint64_t padding_bytes;   /* uncovered fill */
	uint64_t gap_bytes;       /* uncovered, not fill */
	size_t counts[VS_NKINDS][VAL_SEV_N]; /* every finding, kept or not */
	size_t suppressed[VS_NKINDS];
	size_t nerrors, nwarnings, ninfos;
	struct val_static_finding *f;
	size_t nf, capf;
};

/* Check the ELF file PATH. Returns 0 with REPORT filled (problems in the
 * tables are findings, not errors), or the loader's error when PATH cannot
 * be read as ELF: BK_E_IO, BK_E_NOT_ELF, BK_E_CORRUPT, BK_E_UNSUPPORTED,
 * BK_E_NOMEM. Free REPORT with val_static_free in every case. OPTS may be
 * NULL. */
BK_HIDDEN int val_static_check(const char *path, const struct val_static_opts *opts,
			       struct val_static_report *report);
BK_HIDDEN void val_static_free(struct val_static_report *report);
/* "gap", "overlap", ... and "error", "warning", "info". */
BK_HIDDEN const char *val_static_kind_name(enum val_static_kind kind);
BK_HIDDEN const char *val_sev_name(enum val_sev sev);

#endif
