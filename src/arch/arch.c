/* Register tables for x86-64 and AArch64. See arch.h for the sources. */

#include "arch.h"

#define EM_X86_64_ 62
#define EM_AARCH64_ 183

#define BIT(n) ((uint64_t)1 << (n))

static const char *const x86_64_names[] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
	"rip",
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
	"xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15",
	"st0", "st1", "st2", "st3", "st4", "st5", "st6", "st7",
	"mm0", "mm1", "mm2", "mm3", "mm4", "mm5", "mm6", "mm7",
	"rflags", "es", "cs", "ss", "ds", "fs", "gs", NULL, NULL,
	"fs.base", "gs.base", NULL, NULL, "tr", "ldtr",
	"mxcsr", "fcw", "fsw",
	"xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",
	"xmm24", "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31",
	[118] = "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7",
};

static const char *const aarch64_names[] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7",
	"x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
	"x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
	"x24", "x25", "x26", "x27", "x28", "x29", "x30", "sp",
	"pc", "elr_mode", "ra_sign_state", "tpidrro_el0", "tpidr_el0", "tpidr2_el0",
	[46] = "vg", "ffr",
	"p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7",
	"p8", "p9", "p10", "p11", "p12", "p13", "p14", "p15",
	"v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7",
	/* v8-v15: only their low halves d8-d15 are callee-saved (AAPCS64
	 * §6.1.2), and those are what unwinding recovers and reports. */
	"d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15",
	"v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23",
	"v24", "v25", "v26", "v27", "v28", "v29", "v30", "v31",
	"z0", "z1", "z2", "z3", "z4", "z5", "z6", "z7",
	"z8", "z9", "z10", "z11", "z12", "z13", "z14", "z15",
	"z16", "z17", "z18", "z19", "z20", "z21", "z22", "z23",
	"z24", "z25", "z26", "z27", "z28", "z29", "z30", "z31",
};

_Static_assert(BK_ARRAY_LEN(x86_64_names) <= ARCH_MAX_DWARF_REGS, "x86-64 table");
_Static_assert(BK_ARRAY_LEN(aarch64_names) <= ARCH_MAX_DWARF_REGS, "aarch64 table");

const struct arch_info arch_table[ARCH_COUNT] = {
	{
		.arch = BK_ARCH_X86_64,
		.name = "x86_64",
		.elf_machine = EM_X86_64_,
		.addr_size = 8,
		.sp_reg = 7,
		.ra_reg = 16,
		.fp_reg = 6,
		.pc_reg = 16,
		.nregs = BK_ARRAY_LEN(x86_64_names),
		/* rbx, rbp, rsp, r12-r15 (SysV AMD64 ABI figure 3.4). */
		.callee_saved = { BIT(3) | BIT(6) | BIT(7) | BIT(12) | BIT(13) | BIT(14) | BIT(15) },
		/* rax..r15, rip, then rflags. */
		.nslots = 18,
		.nlow = 17,
		.slot_regno = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 49 },
		.callee_saved_slots = BIT(3) | BIT(6) | BIT(7) | BIT(12) | BIT(13) | BIT(14) | BIT(15),
		/* __restore_rt: mov $15, %rax; syscall (rt_sigreturn). At its
		 * first instruction SP points at the ucontext (the handler's
		 * return popped pretcode); gregs follow uc_flags, uc_link and
		 * uc_stack (40 bytes), in the kernel's REG_* order (asm/sigcontext.h,
		 * struct sigcontext: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx,
		 * rsp, rip, eflags). */
		.sigframe = {
			.code = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 },
			.code_len = 9,
			.ucontext_off = 0,
			.gregs_off = 40,
			.nregs = 18,
			.reg = { { 8, 0 }, { 9, 8 }, { 10, 16 }, { 11, 24 }, { 12, 32 },
				 { 13, 40 }, { 14, 48 }, { 15, 56 }, { 5, 64 }, { 4, 72 },
				 { 6, 80 }, { 3, 88 }, { 1, 96 }, { 0, 104 }, { 2, 112 },
				 { 7, 120 }, { 16, 128 }, { 49, 136 } },
		},
	},
	{
		.arch = BK_ARCH_AARCH64,
		.name = "aarch64",
		.elf_machine = EM_AARCH64_,
		.addr_size = 8,
		.sp_reg = 31,
		.ra_reg = 30,
		.fp_reg = 29,
		.pc_reg = 32,
		.nregs = BK_ARRAY_LEN(aarch64_names),
		/* x19-x29, sp and v8-v15 (their low halves d8-d15), AAPCS64 §6.1. */
		.callee_saved = {
			BIT(19) | BIT(20) | BIT(21) | BIT(22) | BIT(23) | BIT(24) | BIT(25) |
				BIT(26) | BIT(27) | BIT(28) | BIT(29) | BIT(31),
			BIT(72 - 64) | BIT(73 - 64) | BIT(74 - 64) | BIT(75 - 64) | BIT(76 - 64) |
				BIT(77 - 64) | BIT(78 - 64) | BIT(79 - 64),
		},
		/* x0..x30, sp, pc, then v8..v15 (their low 64 bits, d8..d15). */
		.nslots = 41,
		.nlow = 33,
		.slot_regno = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
				18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
				72, 73, 74, 75, 76, 77, 78, 79 },
		.callee_saved_slots = BIT(19) | BIT(20) | BIT(21) | BIT(22) | BIT(23) | BIT(24) |
				      BIT(25) | BIT(26) | BIT(27) | BIT(28) | BIT(29) | BIT(31) |
				      BIT(33) | BIT(34) | BIT(35) | BIT(36) | BIT(37) | BIT(38) |
				      BIT(39) | BIT(40),
		/* __kernel_rt_sigreturn (vDSO): mov x8, #139; svc #0. SP points at
		 * struct rt_sigframe { siginfo (128 bytes); ucontext }; in the
		 * ucontext, uc_mcontext (struct sigcontext) is at 176 and holds
		 * fault_address, x0..x30, sp, pc (arch/arm64 uapi sigcontext.h). */
		.sigframe = {
			.code = { 0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4 },
			.code_len = 8,
			.ucontext_off = 128,
			.gregs_off = 176 + 8,
			.nregs = 33,
			.reg = { { 0, 0 }, { 1, 8 }, { 2, 16 }, { 3, 24 }, { 4, 32 }, { 5, 40 },
				 { 6, 48 }, { 7, 56 }, { 8, 64 }, { 9, 72 }, { 10, 80 }, { 11, 88 },
				 { 12, 96 }, { 13, 104 }, { 14, 112 }, { 15, 120 }, { 16, 128 },
				 { 17, 136 }, { 18, 144 }, { 19, 152 }, { 20, 160 }, { 21, 168 },
				 { 22, 176 }, { 23, 184 }, { 24, 192 }, { 25, 200 }, { 26, 208 },
				 { 27, 216 }, { 28, 224 }, { 29, 232 }, { 30, 240 }, { 31, 248 },
				 { 32, 256 } },
			/* uc_mcontext.__reserved follows pstate, 16-byte aligned
			 * (176 + 288); the fpsimd_context record (FPSIMD_MAGIC):
			 * head (8), fpsr, fpcr, then vregs[32] of 16 bytes each
			 * from 16, d8 the low half of v8 (little-endian). */
			.rec_off = 176 + 288,
			.rec_len = 4096,
			.fp_magic = 0x46508001,
			.fp_off = 16 + 8 * 16,
			.fp_regno = 72,
			.fp_stride = 16,
			.fp_count = 8,
		},
	},
};

unsigned arch_sigframe_fp(const struct arch_info *a, uint64_t uc, const struct base_mem *mem,
			  uint64_t vals[ARCH_SIGFRAME_FP])
{
	const struct arch_sigframe *sf = &a->sigframe;
	uint64_t recs = uc + sf->rec_off;
	uint32_t need = sf->fp_off + (uint32_t)sf->fp_stride * (sf->fp_count - 1u) + 8;
	if (!sf->rec_len || !sf->fp_count || sf->fp_count > ARCH_SIGFRAME_FP)
		return 0;
	for (uint32_t off = 0; off + 8 <= sf->rec_len;) {
		uint8_t head[8];
		if (base_mem_read(mem, recs + off, head, sizeof(head)) != 0)
			return 0;
		uint32_t magic = (uint32_t)base_rd_le(head, 4), size = (uint32_t)base_rd_le(head + 4, 4);
		if (magic == 0 || size < 16 || size % 16 || size > sf->rec_len - off)
			return 0; /* the end of the records, or a malformed one */
		if (magic == sf->fp_magic) {
			if (size < need)
				return 0;
			for (unsigned i = 0; i < sf->fp_count; i++) {
				uint8_t v[8];
				if (base_mem_read(mem, recs + off + sf->fp_off + sf->fp_stride * i, v, 8))
					return 0;
				vals[i] = base_rd_le(v, 8);
			}
			return sf->fp_count;
		}
		off += size;
	}
	return 0;
}

const struct arch_info *arch_get(enum bk_arch arch)
{
	for (size_t i = 0; i < ARCH_COUNT; i++)
		if (arch_table[i].arch == arch)
			return &arch_table[i];
	return NULL;
}

const struct arch_info *arch_from_elf_machine(unsigned e_machine)
{
	for (size_t i = 0; i < ARCH_COUNT; i++)
		if (arch_table[i].elf_machine == e_machine)
			return &arch_table[i];
	return NULL;
}

const char *arch_reg_name(const struct arch_info *a, unsigned regno)
{
	if (!a || regno >= a->nregs)
		return NULL;
	return a->arch == BK_ARCH_X86_64 ? x86_64_names[regno] : aarch64_names[regno];
}

const char *bk_reg_name(enum bk_arch arch, unsigned regno)
{
	return arch_reg_name(arch_get(arch), regno);
}
