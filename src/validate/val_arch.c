/* The checker's facts per architecture (struct val_arch, val.h): which
 * slots hold the SP, PC and link register, what a call pushes, which
 * registers a caller's frame and a signal frame must give back, and the
 * Linux system call numbers that move the shadow stack or the map. The
 * register numbering, slots and signal-frame layout are src/arch's; this
 * table adds only what an oracle needs. Pure data.
 *
 * Sources: System V AMD64 ABI §3.2.1 and AAPCS64 §6.1.1 (callee-saved
 * registers); the kernels' unistd tables (arch/x86/entry/syscalls/
 * syscall_64.tbl; include/uapi/asm-generic/unistd.h for arm64).
 */
#include "val.h"

#define BIT(n) ((uint64_t)1 << (n))
#define RANGE(lo, hi) ((BIT((hi) - (lo) + 1) - 1) << (lo))

static const struct val_arch arches[] = {
	{
		.arch = BK_ARCH_X86_64,
		.ai = &arch_table[0],
		.sp = 7,
		.pc = 16,
		.ra_size = 8,
		.lr = ARCH_NO_SLOT,
		/* rbx, rbp, r12-r15. */
		.callee_saved = BIT(3) | BIT(6) | RANGE(12, 15),
		/* A signal frame restores every general register; rax may
		 * have been changed by a system call restart and rsp, rip are
		 * compared as SP, PC. */
		.signal_known = BIT(1) | BIT(2) | BIT(3) | BIT(4) | BIT(5) | BIT(6) | RANGE(8, 15),
		.fp_saved = BIT(6),
		.nr_reg = 0,      /* rax */
		.sig_reg = 5,     /* rdi */
		.restart_len = 2, /* syscall */
		.syscall_insn = { 0x0f, 0x05 },
		.syscall_len = 2,
		.nr_mmap = 9,
		.nr_mprotect = 10,
		.nr_munmap = 11,
		.nr_mremap = 25,
		.nr_pkey_mprotect = 329,
		.nr_rt_sigreturn = 15,
	},
	{
		.arch = BK_ARCH_AARCH64,
		.ai = &arch_table[1],
		.sp = 31,
		.pc = 32,
		.ra_size = 0,
		.lr = 30,
		/* x19-x29 and d8-d15 (slots 33..40). */
		.callee_saved = RANGE(19, 29) | RANGE(33, 40),
		/* Every general register but x0 (a restarted system call puts
		 * its first argument back there), and d8-d15 from the fpsimd
		 * record; sp and pc are compared as SP, PC. */
		.signal_known = RANGE(1, 30) | RANGE(33, 40),
		.fp_saved = BIT(29),
		.nr_reg = 8,      /* x8 */
		.sig_reg = 0,     /* x0 */
		.restart_len = 4, /* svc #0 */
		.syscall_insn = { 0x01, 0x00, 0x00, 0xd4 },
		.syscall_len = 4,
		.nr_mmap = 222,
		.nr_mprotect = 226,
		.nr_munmap = 215,
		.nr_mremap = 216,
		.nr_pkey_mprotect = 288,
		.nr_rt_sigreturn = 139,
	},
};

const struct val_arch *val_arch_get(enum bk_arch arch)
{
	for (size_t i = 0; i < sizeof(arches) / sizeof(*arches); i++)
		if (arches[i].arch == arch)
			return &arches[i];
	return NULL;
}
