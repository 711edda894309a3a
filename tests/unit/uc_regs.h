/* This host's registers from a ucontext_t (getcontext's or a signal
 * handler's), in DWARF numbering, for unit tests that start cursors with
 * registers of their own. One branch per host architecture; the register
 * layouts are the C library's (x86-64: gregs[REG_*]; AArch64: struct
 * sigcontext's regs[31], sp, pc). */
#ifndef BK_UC_REGS_H
#define BK_UC_REGS_H

#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "backstep.h"

#if defined(__x86_64__)
#define HOST_ARCH BK_ARCH_X86_64
#define HOST_SP 7
#define HOST_PC 16

/* The general registers rax..r15 and rip. */
static inline void uc_regs(const ucontext_t *uc, struct bk_regs *r)
{
	static const int map[17] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
				     REG_RBP, REG_RSP, REG_R8, REG_R9, REG_R10, REG_R11,
				     REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP };
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < 17; i++)
		bk_regs_set(r, i, (uint64_t)uc->uc_mcontext.gregs[map[i]]);
}
#elif defined(__aarch64__)
#define HOST_ARCH BK_ARCH_AARCH64
#define HOST_SP 31
#define HOST_PC 32

/* x0..x30, sp and pc (getcontext stores x30 as the pc too). */
static inline void uc_regs(const ucontext_t *uc, struct bk_regs *r)
{
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < 31; i++)
		bk_regs_set(r, i, (uint64_t)uc->uc_mcontext.regs[i]);
	bk_regs_set(r, HOST_SP, (uint64_t)uc->uc_mcontext.sp);
	bk_regs_set(r, HOST_PC, (uint64_t)uc->uc_mcontext.pc);
}
#else
#error "uc_regs.h: no register layout for this host"
#endif

#endif
