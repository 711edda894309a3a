/* src/check: static checks of an ELF file's unwind tables (`backstep
 * check`), what can be said of .eh_frame, .eh_frame_hdr and .debug_frame
 * without running anything (chk_tables.c), and the stack analysis
 * (`backstep check --stack`, chk_stack.c): every instruction of every
 * function compared with its CFI row. Every CIE and FDE goes through
 * the library's own decoder (cfi_decode_*) and every FDE program through
 * the CFA state machine (cfi_machine_next) to its end, so a table this
 * passes is one the unwinder can read. The per-instruction checks of a
 * running program are the validator's (src/validate); nothing is shared.
 * Both checks see the file through one chk_image (chk_image.c).
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
 *                               zero) is only counted (padding_bytes), also
 *                               the fill that ends a gap (the alignment after
 *                               a stub whose symbol has no size)
 *                     info      uncovered bytes that read as strings (data
 *                               kept in .text by hand-written assembly)
 *   toolchain-gap     info      a gap in code every glibc program links in
 *                               from the toolchain, built without CFI: not
 *                               the file's own error (chk_tables.c,
 *                               "Toolchain gaps", says which)
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
 * section headers; the stack analysis also src/expr (decoding expression
 * rules) and src/insn (Capstone). Only the CLI (tools/check.c) calls it,
 * nothing in src/ depends on it. The table checks and chk_image are part
 * of libbackstep and need no Capstone; the stack analysis is a static
 * library of its own, built where Capstone's headers are (as the
 * validator is). Cold: allocates freely, prints nothing.
 */
#ifndef BK_CHK_H
#define BK_CHK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/base.h"
#include "../sym/sym.h"

/* ---- Files ---------------------------------------------------------------- */

struct ldr_elf;
struct arch_info;

/* An address range of the file: an executable (or any allocated) section,
 * or a PF_X segment when there are no section headers. */
struct chk_region {
	uint64_t lo, hi;
	const char *name;     /* section name (libelf's string) or NULL */
	const uint8_t *data;  /* its bytes, or NULL (NOBITS; segments) */
	bool constant;        /* its bytes in the file are its bytes at run time:
			       * not writable (SHF_WRITE: .data.rel.ro too, which
			       * the dynamic linker relocates), not NOBITS */
};

/* One opened ELF file. */
struct chk_image {
	struct ldr_elf *ldr;
	const struct arch_info *arch; /* NULL: unknown machine */
	bool relocatable;             /* ET_REL */
	struct sym_elf se;            /* section headers (when have_se) */
	bool have_se;
	struct sym_file *syms;        /* function symbols, or NULL */
	struct chk_region *exec;      /* executable ranges, sorted */
	size_t nexec;
	struct chk_region *alloc;     /* every SHF_ALLOC section, sorted */
	size_t nalloc;
	bool exec_from_segments;      /* no section headers: PF_X segments */
};

/* Open PATH: the loader's errors (BK_E_IO, BK_E_NOT_ELF, BK_E_CORRUPT,
 * BK_E_UNSUPPORTED), BK_E_NOMEM. Close with chk_image_close (not after an
 * error). */
BK_HIDDEN int chk_image_open(const char *path, struct chk_image *im);
BK_HIDDEN void chk_image_close(struct chk_image *im);
/* The region of V (N, sorted) holding ADDR, or NULL. */
BK_HIDDEN const struct chk_region *chk_region_of(const struct chk_region *v, size_t n,
						 uint64_t addr);
/* The function symbol covering ADDR / starting at ADDR, or NULL. */
BK_HIDDEN struct sym_symbol *chk_image_sym(const struct chk_image *im, uint64_t addr);
BK_HIDDEN struct sym_symbol *chk_image_sym_at(const struct chk_image *im, uint64_t addr);
/* The start of the first symbol above ADDR, or UINT64_MAX. */
BK_HIDDEN uint64_t chk_image_next_sym_start(const struct chk_image *im, uint64_t addr);
/* S's name as shown (demangled), or NULL (S NULL, or out of memory). */
BK_HIDDEN const char *chk_image_sym_name(const struct chk_image *im, struct sym_symbol *s);

/* ---- Table checks --------------------------------------------------------- */

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
	CHK_TOOLCHAIN_GAP,
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
	uint64_t gap_bytes;       /* uncovered, not fill, not toolchain gaps */
	uint64_t toolchain_gap_bytes; /* uncovered toolchain code (toolchain-gap) */
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

/* ---- Stack analysis (chk_stack.c) ------------------------------------------
 *
 * For every FDE of .eh_frame (and of .debug_frame where no .eh_frame FDE
 * starts at its address), the function's range is decoded and every path
 * from its entry followed; at each instruction reached the stack state the
 * code implies (the CFA as a register plus an offset, where the return
 * address and each callee-saved register's caller value are) is compared
 * with the CFI row in force there. An instruction is *checked* when the
 * CFA could be compared; its register rules are compared where the state
 * says where the value is. Anything the analysis cannot follow is counted
 * as not checked, with a reason, never guessed:
 *
 *   reason            what
 *   indirect jump     instructions reached only through an indirect jump
 *                     that is not a resolvable jump table
 *   realigned stack   the CFA rule names a register realigned by and-ing
 *                     (the distance to the CFA is not fixed)
 *   expression rule   a DWARF expression the symbolic evaluator cannot
 *                     reduce (or that names memory it does not track)
 *   state unknown     paths join with different states for the CFA rule's
 *                     register, or it came from memory the analysis does
 *                     not track
 *   unreached         code no path from an entry reaches (not fill)
 *   signal frame      an FDE of a signal trampoline (CIE augmentation 'S')
 *   outermost frame   rows whose return address is undefined (_start)
 *   bad code          bytes that do not decode on a path, or a branch into
 *                     the middle of an instruction
 *   bad CFI           the FDE or its program does not decode
 *   no code           the FDE's bytes are not in the file
 *   bound             an analysis bound (paths, slots) was reached
 *   entry state       an FDE entered mid-function whose first row gives no
 *                     usable state (an expression CFA)
 *
 * A function starting at a function symbol is analysed from the call-site
 * state (ABI); an FDE that does not (a .cold part, a stripped file's
 * function whose first row is not the call-site state, PLT0, the lazy
 * binding trampolines) from its first row as given. In PLT sections every
 * stub after an unconditional jump is an entry too. */

enum chk_stack_reason {
	CHK_SR_INDIRECT_JUMP = 0,
	CHK_SR_REALIGNED,
	CHK_SR_EXPRESSION,
	CHK_SR_UNKNOWN_STATE,
	CHK_SR_UNREACHED,
	CHK_SR_SIGNAL_FRAME,
	CHK_SR_OUTERMOST,
	CHK_SR_BAD_CODE,
	CHK_SR_BAD_CFI,
	CHK_SR_NO_CODE,
	CHK_SR_LIMIT,
	CHK_SR_ENTRY_STATE,
	CHK_SR_N
};

/* A difference (an instruction whose row disagrees with the code), or a
 * function not checked in full. Strings belong to the report. */
struct chk_stack_finding {
	bool difference;
	enum chk_stack_reason reason; /* not a difference: why */
	uint64_t addr;            /* the instruction; the FDE's start otherwise */
	uint64_t fde_lo, fde_hi;  /* the FDE's range */
	const char *section;      /* ".eh_frame" or ".debug_frame" */
	uint64_t fde_off;         /* the FDE's offset in SECTION */
	char *symbol;             /* function symbol covering ADDR, or NULL */
	uint64_t sym_off;
	char *insn;               /* difference: the instruction, "pop rbx" */
	char *row;                /* difference: the row, "CFA=rsp+16 rbx=[CFA-16]" */
	char *code;               /* difference: what the code implies, same form */
	char *detail;             /* one line: what differs, or why not checked */
};

struct chk_stack_opts {
	size_t size;              /* sizeof(struct chk_stack_opts) */
	/* At most this many differences, and as many functions given up on,
	 * are kept per file (the rest are counted in suppressed); 0: 1000. */
	unsigned max_findings;
};

struct chk_stack_report {
	const char *arch;         /* "x86_64" */
	const char *unsupported;  /* BK_E_UNSUPPORTED: why (a static string) */
	size_t fdes;              /* FDEs looked at */
	size_t fn_full;           /* every instruction checked */
	size_t fn_partial;        /* some checked, some not */
	size_t fn_skipped;        /* none checked (signal frame, bad CFI, ...) */
	size_t fn_by_reason[CHK_SR_N]; /* partial + skipped, by main reason */
	size_t fn_from_row;       /* analysed from their first row */
	size_t fn_with_diffs;     /* with at least one difference */
	uint64_t insns;           /* instructions in the FDEs, fill not counted */
	uint64_t fill;            /* alignment fill no path reached */
	uint64_t checked;         /* compared with a row (CFA at least) */
	uint64_t unchecked[CHK_SR_N]; /* insns - checked, by reason */
	uint64_t rules_compared;  /* register rules compared at checked instructions */
	uint64_t rules_unknown;   /* ... that the state could not decide */
	size_t diffs;             /* instructions with a difference */
	size_t diffs_cfa, diffs_ra, diffs_regs; /* ... in the CFA, RA, other registers */
	size_t suppressed;        /* findings beyond the limit */
	struct chk_stack_finding *f;
	size_t nf, capf;
};

/* Analyse the ELF file PATH. 0 with REPORT filled (differences and
 * give-ups are findings), BK_E_UNSUPPORTED when its machine has no
 * instruction semantics here (x86-64 only) or Capstone cannot be loaded
 * (chk_stack_unsupported says which), or the loader's error (BK_E_IO,
 * BK_E_NOT_ELF, BK_E_CORRUPT), BK_E_NOMEM. Free REPORT with
 * chk_stack_report_free in every case. OPTS may be NULL. */
BK_HIDDEN int chk_stack_file(const char *path, const struct chk_stack_opts *opts,
			     struct chk_stack_report *report);
BK_HIDDEN void chk_stack_report_free(struct chk_stack_report *report);
/* "indirect jump", "realigned stack", ... */
BK_HIDDEN const char *chk_stack_reason_name(enum chk_stack_reason reason);
/* After BK_E_UNSUPPORTED from chk_stack_file: one line saying why. */
BK_HIDDEN const char *chk_stack_unsupported(const struct chk_stack_report *report);

#endif
