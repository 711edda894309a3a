/* Register facts per architecture: names, special registers, callee-saved
 * sets, against the ABI documents cited in src/arch/arch.h. */
#include "arch/arch.h"
#include "check.h"

/* A fake AArch64 ucontext: 176 bytes, then uc_mcontext (general registers
 * to 288), then its 4096-byte record area. */
static uint8_t uc[176 + 288 + 4096];

static int read_uc(void *ctx, uint64_t addr, void *dst, size_t len)
{
	size_t limit = ctx ? *(const size_t *)ctx : sizeof(uc);
	if (addr > limit || len > limit - addr)
		return BK_E_MEMORY;
	memcpy(dst, uc + addr, len);
	return 0;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A record {MAGIC, SIZE} at OFF of the record area; an fpsimd_context one
 * gets v8..v15 with low halves 0xd8d8...08 .. 0xd8d8...0f and high halves
 * that must not be read. */
static void put_rec(size_t off, uint32_t magic, uint32_t size)
{
	uint8_t *r = uc + 176 + 288 + off;
	put_le(r, magic, 4);
	put_le(r + 4, size, 4);
	if (magic == 0x46508001)
		for (unsigned i = 0; i < 32; i++) {
			put_le(r + 16 + 16 * i, 0xd8d8d8d8d8d8d800ull + i, 8);
			put_le(r + 16 + 16 * i + 8, 0xbadbadbadbadbad0ull + i, 8);
		}
}

/* arch_sigframe_fp: d8-d15 from the fpsimd_context record wherever it is
 * among the records; nothing from malformed, missing or unreadable ones. */
static void test_sigframe_fp(const struct arch_info *a, const struct arch_info *x)
{
	struct base_mem mem = { read_uc, NULL };
	uint64_t v[ARCH_SIGFRAME_FP];
	static const struct {
		const char *what;
		uint32_t first_magic, first_size; /* a record before fpsimd (0: none) */
		uint32_t fp_size;                 /* fpsimd_context's size */
		unsigned want;
	} cases[] = {
		{ "fpsimd first (as the kernel writes it)", 0, 0, 528, 8 },
		{ "after an unknown record", 0x12345678, 32, 528, 8 },
		{ "after an empty-looking record of size 16", 0x5a5a5a5a, 16, 528, 8 },
		{ "fpsimd too short for v15", 0, 0, 256, 0 },
		{ "a record of size 0 (would loop)", 0x12345678, 0, 528, 0 },
		{ "a record of size 8", 0x12345678, 8, 528, 0 },
		{ "a size not a multiple of 16", 0x12345678, 40, 528, 0 },
		{ "a size past the area", 0x12345678, 4096 + 16, 528, 0 },
		{ "the terminator first", 0, 0, 0, 0 },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
		memset(uc, 0, sizeof(uc));
		size_t off = 0;
		if (cases[i].first_magic) {
			put_rec(0, cases[i].first_magic, cases[i].first_size);
			/* (after a size below 16, where the walk must not go) */
			off = cases[i].first_size < 16 ? 16 : cases[i].first_size;
		}
		if (cases[i].fp_size && off + cases[i].fp_size <= 4096)
			put_rec(off, 0x46508001, cases[i].fp_size);
		memset(v, 0, sizeof(v));
		unsigned n = arch_sigframe_fp(a, 0, &mem, v);
		CHECK_INT(n, cases[i].want, cases[i].what);
		for (unsigned k = 0; k < n; k++)
			CHECK_U64(v[k], 0xd8d8d8d8d8d8d808ull + k, cases[i].what);
	}
	/* The record area runs to its end: the last record ends at 4096. */
	memset(uc, 0, sizeof(uc));
	put_rec(0, 0x12345678, 4096 - 528);
	put_rec(4096 - 528, 0x46508001, 528);
	CHECK_INT(arch_sigframe_fp(a, 0, &mem, v), 8, "fpsimd ending the area");
	CHECK_U64(v[7], 0xd8d8d8d8d8d8d80full, "fpsimd ending the area: d15");
	/* Unreadable: the head, then the registers. */
	memset(uc, 0, sizeof(uc));
	put_rec(0, 0x46508001, 528);
	size_t limit = 176 + 288 + 4;
	struct base_mem cut = { read_uc, &limit };
	CHECK_INT(arch_sigframe_fp(a, 0, &cut, v), 0, "head unreadable");
	limit = 176 + 288 + 16 + 8 * 16 + 7 * 16 + 4;
	CHECK_INT(arch_sigframe_fp(a, 0, &cut, v), 0, "d15 unreadable");
	CHECK_INT(arch_sigframe_fp(x, 0, &mem, v), 0, "x86-64 keeps none in a record");
}

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
		{ 71, "v7" }, { 72, "d8" }, { 75, "d11" }, { 79, "d15" }, { 80, "v16" },
		{ 95, "v31" }, { 96, "z0" }, { 127, "z31" },
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
	test_sigframe_fp(a, x);
	return check_summary();
}
