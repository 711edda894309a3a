/* Per-architecture facts: DWARF register numbers and names, the stack
 * pointer, return-address and frame-pointer columns, the callee-saved set.
 * Pure data; no code here depends on the host architecture.
 *
 * Sources: System V AMD64 ABI §3.6.2 (DWARF register mapping, figure 3.36)
 * and §3.2.1 (callee-saved registers); DWARF for the Arm 64-bit architecture
 * (AADWARF64) §4.1 and the AAPCS64 §6.1.1. */
#ifndef BK_ARCH_H
#define BK_ARCH_H

#include "../base/base.h"

/* Largest DWARF register number any supported architecture uses, plus one. */
#define ARCH_MAX_DWARF_REGS 128

struct arch_info {
	enum bk_arch arch;
	const char *name;           /* "x86_64", "aarch64" */
	uint16_t elf_machine;       /* EM_X86_64, EM_AARCH64 */
	uint8_t addr_size;          /* bytes in a pointer */
	unsigned sp_reg;            /* DWARF number of the stack pointer */
	unsigned ra_reg;            /* default return-address column */
	unsigned fp_reg;            /* frame pointer */
	unsigned pc_reg;            /* a DWARF number for the PC, if any, else ra_reg */
	unsigned nregs;             /* DWARF numbers below this may be named */
	/* Callee-saved registers, as a bitmap over DWARF numbers. */
	uint64_t callee_saved[ARCH_MAX_DWARF_REGS / 64];
};

/* The facts for ARCH or for an ELF e_machine; NULL when not supported. */
BK_HIDDEN const struct arch_info *arch_get(enum bk_arch arch);
BK_HIDDEN const struct arch_info *arch_from_elf_machine(unsigned e_machine);
/* Register name, or NULL. */
BK_HIDDEN const char *arch_reg_name(const struct arch_info *a, unsigned regno);

static inline bool arch_is_callee_saved(const struct arch_info *a, unsigned regno)
{
	return regno < ARCH_MAX_DWARF_REGS &&
	       ((a->callee_saved[regno / 64] >> (regno % 64)) & 1);
}

#endif
