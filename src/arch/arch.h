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

/* Registers an unwinder tracks per frame live in "slots": DWARF numbers
 * 0..nlow-1 map to the same slot, a few more (rflags; AArch64 d8-d15) to the
 * slots after them. Everything else is never recovered. */
#define ARCH_MAX_SLOTS 48
#define ARCH_NO_SLOT 0xff

/* The Linux signal frame as the unwinder meets it: the PC is at the start of
 * the sigreturn trampoline, recognised by its code bytes, and the interrupted
 * registers sit in the ucontext at SP + ucontext_off. */
struct arch_sigframe {
	uint8_t code[16];      /* the trampoline's first instructions */
	uint8_t code_len;
	uint16_t ucontext_off; /* from SP at the trampoline to the ucontext */
	uint16_t gregs_off;    /* from the ucontext to the saved registers */
	uint8_t nregs;         /* saved registers described by reg_off */
	struct {
		uint16_t regno; /* DWARF number */
		uint16_t off;   /* from the saved-register area */
	} reg[40];
	/* Floating-point registers kept in a tagged record after the general
	 * ones (AArch64: uc_mcontext.__reserved holds {magic, size} records,
	 * struct _aarch64_ctx, ended by a zero one; the fpsimd_context record
	 * holds v0..v31). Records start at ucontext + rec_off and lie within
	 * rec_len bytes (0: none); the one whose magic is fp_magic holds DWARF
	 * register fp_regno + i in the low 8 bytes at fp_off + fp_stride * i,
	 * for i < fp_count. */
	uint16_t rec_off, rec_len;
	uint32_t fp_magic;
	uint16_t fp_off, fp_regno;
	uint8_t fp_stride, fp_count;
};
/* At most this many registers come from a floating-point record. */
#define ARCH_SIGFRAME_FP 8

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
	/* Tracked registers: slot i holds DWARF register slot_regno[i]. */
	uint8_t nslots;
	uint8_t nlow;               /* DWARF 0..nlow-1 are slots 0..nlow-1 */
	uint16_t slot_regno[ARCH_MAX_SLOTS];
	uint64_t callee_saved_slots; /* callee_saved, as a mask over slots */
	struct arch_sigframe sigframe;
};

/* Every supported architecture, x86-64 first; the host's is ARCH_HOST, a
 * constant expression so static objects can point at it. */
#define ARCH_COUNT 2
BK_HIDDEN extern const struct arch_info arch_table[ARCH_COUNT];
#if defined(__x86_64__)
#define ARCH_HOST (&arch_table[0])
#elif defined(__aarch64__)
#define ARCH_HOST (&arch_table[1])
#endif

/* The facts for ARCH or for an ELF e_machine; NULL when not supported. */
BK_HIDDEN const struct arch_info *arch_get(enum bk_arch arch);
BK_HIDDEN const struct arch_info *arch_from_elf_machine(unsigned e_machine);
/* Register name, or NULL. */
BK_HIDDEN const char *arch_reg_name(const struct arch_info *a, unsigned regno);

/* The slot of DWARF register REGNO, or ARCH_NO_SLOT. AS-safe. */
static inline unsigned arch_slot(const struct arch_info *a, unsigned regno)
{
	if (regno < a->nlow)
		return regno;
	for (unsigned i = a->nlow; i < a->nslots; i++)
		if (a->slot_regno[i] == regno)
			return i;
	return ARCH_NO_SLOT;
}

/* The floating-point registers of the signal frame whose ucontext is at
 * UC, read through MEM: VALS[i] is DWARF register sigframe.fp_regno + i.
 * Returns how many (sigframe.fp_count), or 0 when the architecture keeps
 * none, no record holds them or one cannot be read: the records are
 * walked by their sizes, each at least 16 and a multiple of 16, none past
 * rec_len (so at most rec_len / 16 of them). AS-safe. */
BK_HIDDEN unsigned arch_sigframe_fp(const struct arch_info *a, uint64_t uc,
				    const struct base_mem *mem, uint64_t vals[ARCH_SIGFRAME_FP]);

static inline bool arch_is_callee_saved(const struct arch_info *a, unsigned regno)
{
	return regno < ARCH_MAX_DWARF_REGS &&
	       ((a->callee_saved[regno / 64] >> (regno % 64)) & 1);
}

#endif
