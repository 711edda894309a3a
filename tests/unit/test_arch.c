/* Register facts per architecture: names, special registers, callee-saved
 * sets, against the ABI documents cited in src/arch/arch.h. */
#include "arch/arch.h"
#include "check.h"

int main(void)
{
	const struct arch_info *x = arch_get(BK_ARCH_X86_64);
	const struct arch_info *a = arch_get(BK_ARCH_AARCH64);
	CHECK(x && a, "both architectures known");
	CHECK(arch_get(BK_ARCH_UNKNOWN) == NULL, "unknown arch");
	CHECK(arch_from_elf_machine(62) == x, "EM_X86_64");
	CHECK(arch_from_elf_machine(183) == a, "EM_AARCH64");
	CHECK(arch_from_elf_machine(3) == NULL, "EM_386 unsupported");

	static const struct { unsigned regno; const char *name; } xn[] = {
		{ 0, "rax" }, { 1, "rdx" }, { 2, "rcx" }, { 3, "rbx" }, { 4, "rsi" },
		{ 5, "rdi" }, { 6, "rbp" }, { 7, "rsp" }, { 8, "r8" }, { 15, "r15" },
		{ 16, "rip" }, { 17, "xmm0" }, { 32, "xmm15" }, { 33, "st0" }, { 41, "mm0" },
		{ 49, "rflags" }, { 50, "es" }, { 55, "gs" }, { 58, "fs.base" },
		{ 59, "gs.base" }, { 64, "mxcsr" }, { 67, "xmm16" }, { 82, "xmm31" },
		{ 118, "k0" }, { 125, "k7" },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(xn); i++)
		CHECK_STR(bk_reg_name(BK_ARCH_X86_64, xn[i].regno), xn[i].name, "x86-64 name");
	CHECK(bk_reg_name(BK_ARCH_X86_64, 56) == NULL, "x86-64 56 unnamed");
	CHECK(bk_reg_name(BK_ARCH_X86_64, 126) == NULL, "x86-64 126 unnamed");
	CHECK(bk_reg_name(BK_ARCH_X86_64, 100000) == NULL, "x86-64 huge");

	static const struct { unsigned regno; const char *name; } an[] = {
		{ 0, "x0" }, { 29, "x29" }, { 30, "x30" }, { 31, "sp" }, { 32, "pc" },
		{ 34, "ra_sign_state" }, { 46, "vg" }, { 48, "p0" }, { 64, "v0" },
		{ 72, "v8" }, { 95, "v31" }, { 96, "z0" }, { 127, "z31" },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(an); i++)
		CHECK_STR(bk_reg_name(BK_ARCH_AARCH64, an[i].regno), an[i].name, "aarch64 name");
	CHECK(bk_reg_name(BK_ARCH_AARCH64, 40) == NULL, "aarch64 40 unnamed");
	CHECK(bk_reg_name(BK_ARCH_UNKNOWN, 0) == NULL, "unknown arch name");

	CHECK_INT(x->sp_reg, 7, "x86-64 sp");
	CHECK_INT(x->ra_reg, 16, "x86-64 ra");
	CHECK_INT(x->fp_reg, 6, "x86-64 fp");
	CHECK_INT(a->sp_reg, 31, "aarch64 sp");
	CHECK_INT(a->ra_reg, 30, "aarch64 ra");
	CHECK_INT(a->fp_reg, 29, "aarch64 fp");

	/* SysV AMD64: rbx, rbp, rsp, r12-r15 and nothing else among 0..127. */
	unsigned want_x[] = { 3, 6, 7, 12, 13, 14, 15 };
	unsigned n = 0;
	for (unsigned r = 0; r < ARCH_MAX_DWARF_REGS; r++)
		n += arch_is_callee_saved(x, r);
	CHECK_INT(n, BK_ARRAY_LEN(want_x), "x86-64 callee-saved count");
	for (size_t i = 0; i < BK_ARRAY_LEN(want_x); i++)
		CHECK(arch_is_callee_saved(x, want_x[i]), "x86-64 r%u callee-saved", want_x[i]);

	/* AAPCS64: x19-x29, sp, d8-d15 (v8-v15). */
	n = 0;
	for (unsigned r = 0; r < ARCH_MAX_DWARF_REGS; r++)
		n += arch_is_callee_saved(a, r);
	CHECK_INT(n, 11 + 1 + 8, "aarch64 callee-saved count");
	for (unsigned r = 19; r <= 29; r++)
		CHECK(arch_is_callee_saved(a, r), "aarch64 x%u callee-saved", r);
	for (unsigned r = 72; r <= 79; r++)
		CHECK(arch_is_callee_saved(a, r), "aarch64 v%u callee-saved", r - 64);
	CHECK(!arch_is_callee_saved(a, 30), "aarch64 lr is not callee-saved");
	CHECK(!arch_is_callee_saved(a, 80), "aarch64 v16 is not callee-saved");
	CHECK(!arch_is_callee_saved(a, 1000), "out of range");
	return check_summary();
}
