/* Register-set layouts shared by the targets: the kernel's x86-64
 * user_regs_struct and AArch64 user_pt_regs / user_fpsimd_state
 * (PTRACE_GETREGSET NT_PRSTATUS / NT_FPREGSET, and a core's notes of those
 * types) to DWARF numbering. Pure; host-independent (little-endian). */
#include "target.h"

/* Word indexes in user_regs_struct (<sys/user.h>, x86-64). */
enum {
	U_R15, U_R14, U_R13, U_R12, U_RBP, U_RBX, U_R11, U_R10, U_R9, U_R8,
	U_RAX, U_RCX, U_RDX, U_RSI, U_RDI, U_ORIG_RAX, U_RIP, U_CS, U_EFLAGS,
	U_RSP, U_SS, U_FS_BASE, U_GS_BASE, U_DS, U_ES, U_FS, U_GS,
	U_NWORDS
};
_Static_assert(U_NWORDS == TGT_X86_64_USER_REGS, "user_regs_struct has 27 words");

/* DWARF numbering: SysV AMD64 ABI figure 3.36 (0..15 rax, rdx, rcx, rbx,
 * rsi, rdi, rbp, rsp, r8..r15; 16 the return address = rip; 49 rflags). */
void tgt_regs_x86_64(const uint64_t u[TGT_X86_64_USER_REGS], struct bk_regs *r)
{
	static const uint8_t word_of_dwarf[17] = {
		U_RAX, U_RDX, U_RCX, U_RBX, U_RSI, U_RDI, U_RBP, U_RSP,
		U_R8, U_R9, U_R10, U_R11, U_R12, U_R13, U_R14, U_R15, U_RIP,
	};
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < 17; i++)
		bk_regs_set(r, i, u[word_of_dwarf[i]]);
	bk_regs_set(r, 49, u[U_EFLAGS]);
}

/* AADWARF64 §4.1: x0..x30 0..30, sp 31, pc 32; v8..v15 72..79. */
void tgt_regs_aarch64(const uint64_t u[TGT_AARCH64_USER_REGS], struct bk_regs *r)
{
	memset(r, 0, sizeof(*r));
	for (unsigned i = 0; i < 33; i++)
		bk_regs_set(r, i, u[i]);
}

void tgt_fpsimd_aarch64(const uint8_t *fpsimd, struct bk_regs *r)
{
	for (unsigned i = 8; i < 16; i++)
		bk_regs_set(r, 64 + i, base_rd_le(fpsimd + 16 * i, 8));
}
