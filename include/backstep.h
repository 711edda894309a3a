/* backstep — a standalone stack-unwinding engine.
 *
 * This is the one public header. Every public name is bk_* / BK_*; nothing
 * else is exported from the library. Functions marked AS-safe neither
 * allocate, lock, print nor touch errno and may be called from a signal
 * handler; the others are "cold" and may allocate.
 *
 * Errors are negative BK_E_* codes returned directly; bk_strerror() names
 * them. 0 (BK_OK) is success.
 */
#ifndef BACKSTEP_H
#define BACKSTEP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BK_API __attribute__((visibility("default")))
#else
#define BK_API
#endif

#define BK_VERSION_MAJOR 0
#define BK_VERSION_MINOR 1

/* ---- Errors ------------------------------------------------------------- */

enum bk_error {
	BK_OK = 0,
	BK_E_INVAL = -1,       /* bad argument from the caller */
	BK_E_NOMEM = -2,       /* allocation failed (cold paths only) */
	BK_E_IO = -3,          /* a file could not be opened or read */
	BK_E_NOT_ELF = -4,     /* the input is not an ELF file */
	BK_E_CORRUPT = -5,     /* malformed data: truncated, out of range, inconsistent */
	BK_E_UNSUPPORTED = -6, /* well-formed but not handled (machine, version, augmentation) */
	BK_E_NOT_FOUND = -7,   /* no entry covers the address / no such section */
	BK_E_LIMIT = -8,       /* a fixed bound was exceeded (stack depth, step count, rules) */
	BK_E_MEMORY = -9,      /* a read of target memory failed */
	BK_E_DIV_ZERO = -10,   /* DWARF expression divided by zero */
	BK_E_BAD_OP = -11,     /* a DWARF operation not allowed in call-frame information */
	BK_E_NO_UNWIND = -12,  /* the file has no unwind sections at all */
	BK_E_LOOP = -13,       /* the walk made no progress */
	BK_E_BAD_REG = -14,    /* a register number the architecture does not have */
};

/* A static string naming the error; never NULL. AS-safe. */
BK_API const char *bk_strerror(int err);

/* ---- Architectures ------------------------------------------------------ */

enum bk_arch {
	BK_ARCH_UNKNOWN = 0,
	BK_ARCH_X86_64 = 1,
	BK_ARCH_AARCH64 = 2,
};

/* The name of DWARF register REGNO on ARCH ("rsp", "x29", "d8"), or NULL
 * when the architecture has no such register. AS-safe. */
BK_API const char *bk_reg_name(enum bk_arch arch, unsigned regno);

/* ---- ELF files and their unwind tables ---------------------------------- */

/* An opened ELF file: its segments, unwind sections and identity. */
struct bk_elf;

/* Open the ELF file at PATH. Cold. */
BK_API int bk_elf_open(const char *path, struct bk_elf **out);
/* Open an ELF image held in memory; the bytes are copied. Cold. */
BK_API int bk_elf_open_memory(const void *image, size_t len, struct bk_elf **out);
BK_API void bk_elf_close(struct bk_elf *elf);
BK_API enum bk_arch bk_elf_arch(const struct bk_elf *elf);
/* The GNU build-id; returns its length (0 if none) and sets *bytes. */
BK_API size_t bk_elf_build_id(const struct bk_elf *elf, const uint8_t **bytes);
/* Load bias for an image whose lowest PT_LOAD segment is mapped at RUNTIME_BASE. */
BK_API int64_t bk_elf_load_bias(const struct bk_elf *elf, uint64_t runtime_base);

/* How one register (or the CFA) is recovered in the caller's frame.
 * DWARF 5 §6.4.1 defines the rules; the value fields mean:
 *
 *   rule             offset          reg             expr / expr_len
 *   UNDEFINED        -               -               -
 *   SAME_VALUE       -               -               -
 *   OFFSET           N: at CFA+N     -               -
 *   VAL_OFFSET       N: is CFA+N     -               -
 *   REGISTER         -               in register R   -
 *   EXPRESSION       -               -               address = eval(expr, CFA)
 *   VAL_EXPRESSION   -               -               value = eval(expr, CFA)
 *   CFA_REG_OFFSET   N               CFA = R + N     -     (the CFA only)
 *   CFA_EXPRESSION   -               -               CFA = eval(expr) (the CFA only)
 */
enum bk_rule_kind {
	BK_RULE_NONE = 0, /* no rule: the row says nothing about the register */
	BK_RULE_UNDEFINED,
	BK_RULE_SAME_VALUE,
	BK_RULE_OFFSET,
	BK_RULE_VAL_OFFSET,
	BK_RULE_REGISTER,
	BK_RULE_EXPRESSION,
	BK_RULE_VAL_EXPRESSION,
	BK_RULE_CFA_REG_OFFSET,
	BK_RULE_CFA_EXPRESSION,
};

struct bk_rule {
	enum bk_rule_kind kind;
	unsigned reg;
	int64_t offset;
	const uint8_t *expr; /* points into the file's section data */
	size_t expr_len;
};

/* The unwind row in force at one PC, as public data. */
#define BK_MAX_ROW_REGS 48
struct bk_row {
	uint64_t loc;       /* first address the row covers */
	uint64_t loc_end;   /* first address it no longer covers */
	uint64_t fde_begin; /* the function (FDE) range */
	uint64_t fde_end;
	unsigned ra_reg;    /* return-address column of the CIE */
	int from_debug_frame; /* 1 if the row came from .debug_frame */
	int signal_frame;   /* CIE augmentation 'S' */
	int ra_sign_state;  /* AArch64 pointer authentication of the RA */
	uint64_t args_size; /* DW_CFA_GNU_args_size */
	struct bk_rule cfa;
	unsigned nregs;     /* registers with a rule, ascending DWARF number */
	unsigned regno[BK_MAX_ROW_REGS];
	struct bk_rule regs[BK_MAX_ROW_REGS];
};

/* The row in force at link-time address PC of ELF (no load bias applied).
 * .eh_frame is consulted first, then .debug_frame. Cold (builds the FDE
 * index on first use). */
BK_API int bk_elf_row_at(struct bk_elf *elf, uint64_t pc, struct bk_row *row);

#ifdef __cplusplus
}
#endif
#endif
