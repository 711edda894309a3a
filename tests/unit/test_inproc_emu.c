/* The in-process driver's instruction emulation (src/validate/inproc_emu.c)
 * held to the CPU: every form it makes is run both ways from the same
 * random registers, flags and memory, natively (loaded into the real
 * registers, executed, stored back) and emulated, and the general
 * registers, the six arithmetic flags, the PC after it and the memory
 * must come out equal. Forms it must leave to the program (LOCK, REP, a
 * segment override, 32-bit addressing, instructions it does not know) must
 * be refused by its decoder. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "../../src/validate/inproc.h"

/* The emulator's memory accessors: plain loads and stores here (the test's
 * memory never faults). */
int ip_probe_load(uint64_t addr, unsigned size, uint64_t *out)
{
	uint64_t v = 0;
	memcpy(&v, (const void *)(uintptr_t)addr, size);
	*out = v;
	return 0;
}

int ip_probe_store(uint64_t addr, unsigned size, uint64_t value)
{
	memcpy((void *)(uintptr_t)addr, &value, size);
	return 0;
}

/* The native run: registers loaded from reg_in (ucontext order), the
 * instruction run, the registers stored to reg_out, the flags by lahf and
 * seto (no stack: the instruction's SP may be anywhere). */
uint64_t reg_in[NGREG], reg_out[NGREG], flags_in, harness_rsp, target;
uint8_t out_ah, out_of;
void run_native(void);
void native_back(void);
__asm__(".text\n"
	".globl run_native\n"
	"run_native:\n"
	"	push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
	"	mov %rsp, harness_rsp(%rip)\n"
	"	push flags_in(%rip)\n"
	"	popfq\n"
	"	mov reg_in+0*8(%rip), %r8\n"
	"	mov reg_in+1*8(%rip), %r9\n"
	"	mov reg_in+2*8(%rip), %r10\n"
	"	mov reg_in+3*8(%rip), %r11\n"
	"	mov reg_in+4*8(%rip), %r12\n"
	"	mov reg_in+5*8(%rip), %r13\n"
	"	mov reg_in+6*8(%rip), %r14\n"
	"	mov reg_in+7*8(%rip), %r15\n"
	"	mov reg_in+8*8(%rip), %rdi\n"
	"	mov reg_in+9*8(%rip), %rsi\n"
	"	mov reg_in+10*8(%rip), %rbp\n"
	"	mov reg_in+11*8(%rip), %rbx\n"
	"	mov reg_in+12*8(%rip), %rdx\n"
	"	mov reg_in+13*8(%rip), %rax\n"
	"	mov reg_in+14*8(%rip), %rcx\n"
	"	mov reg_in+15*8(%rip), %rsp\n"
	"	jmp *target(%rip)\n"
	".globl native_back\n"
	"native_back:\n"
	"	mov %r8, reg_out+0*8(%rip)\n"
	"	mov %r9, reg_out+1*8(%rip)\n"
	"	mov %r10, reg_out+2*8(%rip)\n"
	"	mov %r11, reg_out+3*8(%rip)\n"
	"	mov %r12, reg_out+4*8(%rip)\n"
	"	mov %r13, reg_out+5*8(%rip)\n"
	"	mov %r14, reg_out+6*8(%rip)\n"
	"	mov %r15, reg_out+7*8(%rip)\n"
	"	mov %rdi, reg_out+8*8(%rip)\n"
	"	mov %rsi, reg_out+9*8(%rip)\n"
	"	mov %rbp, reg_out+10*8(%rip)\n"
	"	mov %rbx, reg_out+11*8(%rip)\n"
	"	mov %rdx, reg_out+12*8(%rip)\n"
	"	mov %rax, reg_out+13*8(%rip)\n"
	"	mov %rcx, reg_out+14*8(%rip)\n"
	"	mov %rsp, reg_out+15*8(%rip)\n"
	"	seto out_of(%rip)\n"
	"	lahf\n"
	"	mov %ah, out_ah(%rip)\n"
	"	mov harness_rsp(%rip), %rsp\n"
	"	pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
	"	ret\n");

_Static_assert(REG_R8 == 0 && REG_R15 == 7 && REG_RDI == 8 && REG_RSI == 9 && REG_RBP == 10 &&
		       REG_RBX == 11 && REG_RDX == 12 && REG_RAX == 13 && REG_RCX == 14 &&
		       REG_RSP == 15,
	       "the harness loads the ucontext order");

#define MEM 4096
static uint8_t *code, *mem;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct form {
	const char *what;
	uint8_t bytes[15];
	uint8_t len;
	bool refuse;             /* the decoder must leave it to the program */
	bool rip;                /* bytes[rip_at..+4] is a disp32 to MEM + 64 */
	uint8_t rip_at;
};

#define F(what, ...) { what, { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ }), false, false, 0 }
#define REFUSE(what, ...) { what, { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ }), true, false, 0 }
#define RIP(what, at, ...) { what, { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ }), false, true, at }

static const struct form forms[] = {
	F("mov rax, rbx", 0x48, 0x89, 0xd8),
	F("mov eax, ebx", 0x89, 0xd8),
	F("mov ax, bx", 0x66, 0x89, 0xd8),
	F("mov al, bl", 0x88, 0xd8),
	F("mov ah, bl", 0x88, 0xdc),
	F("mov bh, ah", 0x88, 0xe7),
	F("mov sil, dl", 0x40, 0x88, 0xd6),
	F("mov r9d, r10d", 0x45, 0x89, 0xd1),
	F("mov rax, -5", 0x48, 0xc7, 0xc0, 0xfb, 0xff, 0xff, 0xff),
	F("mov eax, 0x89abcdef", 0xb8, 0xef, 0xcd, 0xab, 0x89),
	F("movabs rax, imm64", 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 0x88),
	F("mov rax, [rbx+8]", 0x48, 0x8b, 0x43, 0x08),
	F("mov [rbx+8], rax", 0x48, 0x89, 0x43, 0x08),
	F("mov ecx, [rbx+rsi*4+16]", 0x8b, 0x4c, 0xb3, 0x10),
	F("mov byte [rbx+1], 0x7f", 0xc6, 0x43, 0x01, 0x7f),
	F("mov word [rbx], cx", 0x66, 0x89, 0x0b),
	F("mov qword [rbp-8], -1", 0x48, 0xc7, 0x45, 0xf8, 0xff, 0xff, 0xff, 0xff),
	RIP("mov rax, [rip+disp]", 3, 0x48, 0x8b, 0x05, 0, 0, 0, 0),
	RIP("mov [rip+disp], ecx", 2, 0x89, 0x0d, 0, 0, 0, 0),
	F("movzx eax, bl", 0x0f, 0xb6, 0xc3),
	F("movzx eax, word [rbx]", 0x0f, 0xb7, 0x03),
	F("movzx ecx, ah", 0x0f, 0xb6, 0xcc),
	F("movsx rax, bl", 0x48, 0x0f, 0xbe, 0xc3),
	F("movsx eax, word [rbx+2]", 0x0f, 0xbf, 0x43, 0x02),
	F("movsxd rax, ebx", 0x48, 0x63, 0xc3),
	F("movsxd rdx, [rbx]", 0x48, 0x63, 0x13),
	F("lea rax, [rbx+rsi*4+8]", 0x48, 0x8d, 0x44, 0xb3, 0x08),
	F("lea eax, [rbx+rsi]", 0x8d, 0x04, 0x33),
	RIP("lea rdi, [rip+disp]", 3, 0x48, 0x8d, 0x3d, 0, 0, 0, 0),
	F("push rax", 0x50),
	F("push rsp", 0x54),
	F("push r12", 0x41, 0x54),
	F("push -128", 0x6a, 0x80),
	F("push 0x12345678", 0x68, 0x78, 0x56, 0x34, 0x12),
	F("push [rbx+8]", 0xff, 0x73, 0x08),
	F("push [rsp+8]", 0xff, 0x74, 0x24, 0x08),
	F("pop rax", 0x58),
	F("pop rsp", 0x5c),
	F("pop r15", 0x41, 0x5f),
	F("leave", 0xc9),
	F("nop", 0x90),
	F("nop word [rax+rax]", 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00),
	F("endbr64", 0xf3, 0x0f, 0x1e, 0xfa),
	F("add rax, rbx", 0x48, 0x01, 0xd8),
	F("add eax, ebx", 0x01, 0xd8),
	F("add ax, bx", 0x66, 0x01, 0xd8),
	F("add al, bl", 0x00, 0xd8),
	F("add ah, bh", 0x00, 0xfc),
	F("or rax, rbx", 0x48, 0x09, 0xd8),
	F("and ecx, edx", 0x21, 0xd1),
	F("sub rax, rbx", 0x48, 0x29, 0xd8),
	F("sub bl, al", 0x28, 0xc3),
	F("xor eax, eax", 0x31, 0xc0),
	F("xor rdx, rcx", 0x48, 0x31, 0xca),
	F("cmp rax, rbx", 0x48, 0x39, 0xd8),
	F("cmp cx, dx", 0x66, 0x39, 0xd1),
	F("test rax, rbx", 0x48, 0x85, 0xd8),
	F("test al, al", 0x84, 0xc0),
	F("add rax, -128", 0x48, 0x83, 0xc0, 0x80),
	F("sub rsp, 0x18", 0x48, 0x83, 0xec, 0x18),
	F("and eax, 0xffffff00", 0x25, 0x00, 0xff, 0xff, 0xff),
	F("cmp rax, 0x7fffffff", 0x48, 0x3d, 0xff, 0xff, 0xff, 0x7f),
	F("test ecx, 0x80000000", 0xf7, 0xc1, 0x00, 0x00, 0x00, 0x80),
	F("xor r11b, 0x5a", 0x41, 0x80, 0xf3, 0x5a),
	F("add [rbx], rax", 0x48, 0x01, 0x03),
	F("add rax, [rbx]", 0x48, 0x03, 0x03),
	F("add dword [rbx], 5", 0x83, 0x03, 0x05),
	F("sub byte [rbx+3], 0x80", 0x80, 0x6b, 0x03, 0x80),
	F("cmp qword [rbp-8], 0", 0x48, 0x83, 0x7d, 0xf8, 0x00),
	F("test byte [rbx], 1", 0xf6, 0x03, 0x01),
	F("or [rbx+rsi*2], dx", 0x66, 0x09, 0x14, 0x73),
	F("inc rax", 0x48, 0xff, 0xc0),
	F("dec eax", 0xff, 0xc8),
	F("inc byte [rbx]", 0xfe, 0x03),
	F("dec word [rbx+2]", 0x66, 0xff, 0x4b, 0x02),
	F("neg rax", 0x48, 0xf7, 0xd8),
	F("neg cl", 0xf6, 0xd9),
	F("not al", 0xf6, 0xd0),
	F("not qword [rbx]", 0x48, 0xf7, 0x13),
	F("shl rax, 5", 0x48, 0xc1, 0xe0, 0x05),
	F("shr eax, 31", 0xc1, 0xe8, 0x1f),
	F("sar rax, 1", 0x48, 0xd1, 0xf8),
	F("shl rax, cl", 0x48, 0xd3, 0xe0),
	F("shr edx, cl", 0xd3, 0xea),
	F("sar al, cl", 0xd2, 0xf8),
	F("shl ax, cl", 0x66, 0xd3, 0xe0),
	F("rol al, 3", 0xc0, 0xc0, 0x03),
	F("ror rax, 13", 0x48, 0xc1, 0xc8, 0x0d),
	F("ror eax, cl", 0xd3, 0xc8),
	F("rol r8d, 7", 0x41, 0xc1, 0xc0, 0x07),
	F("shl dword [rbx], 2", 0xc1, 0x23, 0x02),
	F("cmove rax, rbx", 0x48, 0x0f, 0x44, 0xc3),
	F("cmovl eax, ebx", 0x0f, 0x4c, 0xc3),
	F("cmovb eax, [rbx]", 0x0f, 0x42, 0x03),
	F("cmova cx, dx", 0x66, 0x0f, 0x47, 0xca),
	F("cmovns r9, [rbx+8]", 0x4c, 0x0f, 0x49, 0x4b, 0x08),
	F("sete al", 0x0f, 0x94, 0xc0),
	F("setg ah", 0x0f, 0x9f, 0xc4),
	F("setb [rbx]", 0x0f, 0x92, 0x03),
	F("setp r10b", 0x41, 0x0f, 0x9a, 0xc2),
	/* Left to the program. */
	REFUSE("lock add [rbx], rax", 0xf0, 0x48, 0x01, 0x03),
	REFUSE("rep stosb", 0xf3, 0xaa),
	REFUSE("mov rax, fs:[0x28]", 0x64, 0x48, 0x8b, 0x04, 0x25, 0x28, 0x00, 0x00, 0x00),
	REFUSE("xchg rax, rbx", 0x48, 0x87, 0xd8),
	REFUSE("imul rax, rbx", 0x48, 0x0f, 0xaf, 0xc3),
	REFUSE("mov eax, [ebx]", 0x67, 0x8b, 0x03),
	REFUSE("push word [rbx]", 0x66, 0xff, 0x33),
	REFUSE("pop qword [rbx]", 0x8f, 0x03),
	REFUSE("fcmovb st, st(1)", 0xda, 0xc1),
	/* Capstone 4 says 64 bits for these; the CPU uses 16 or 32. */
	REFUSE("movsxd eax, ebx (no REX.W)", 0x63, 0xc3),
	REFUSE("movsxd ax, bx (66)", 0x66, 0x63, 0xc3),
	REFUSE("push -128 (66: a word)", 0x66, 0x6a, 0x80),
	REFUSE("push 0x1234 (66: a word)", 0x66, 0x68, 0x34, 0x12),
	REFUSE("pop ax (66)", 0x66, 0x58),
	REFUSE("leave (66: bp, sp)", 0x66, 0xc9),
	REFUSE("syscall", 0x0f, 0x05),
	REFUSE("movaps xmm0, [rbx]", 0x0f, 0x28, 0x03),
	REFUSE("adc rax, rbx", 0x48, 0x11, 0xd8),
};

static int failures;

static void fail(const char *what, const char *how)
{
	if (failures++ < 40)
		printf("FAIL %s: %s\n", what, how);
}

static void random_state(uint64_t *regs, uint64_t *flags)
{
	for (int r = 0; r < NGREG; r++)
		regs[r] = rnd();
	/* Small values now and then: the carries and zeros at the edges. */
	for (int r = 0; r < 16; r++)
		if (rnd() % 4 == 0)
			regs[r] = rnd() % 3 - 1;
	regs[REG_RBX] = (uint64_t)(uintptr_t)(mem + 512);
	regs[REG_RBP] = (uint64_t)(uintptr_t)(mem + 1024);
	regs[REG_RSP] = (uint64_t)(uintptr_t)(mem + 2048);
	regs[REG_RSI] = rnd() % 32;
	if (rnd() % 2)
		regs[REG_RCX] = rnd() % 70; /* shift counts around the widths */
	*flags = (rnd() & 0x8d5) | 2;
}

static void one(const struct form *f)
{
	uint8_t bytes[15];
	memcpy(bytes, f->bytes, f->len);
	/* The instruction at CODE, a jump back after it. */
	if (f->rip) {
		int64_t d = (int64_t)(uintptr_t)(mem + 64) - (int64_t)(uintptr_t)(code + f->len);
		int32_t d32 = (int32_t)d;
		if (d32 != d) {
			fail(f->what, "test memory too far for a RIP-relative operand");
			return;
		}
		memcpy(bytes + f->rip_at, &d32, 4);
	}
	memcpy(code, bytes, f->len);
	code[f->len] = 0xff; /* jmp *0(%rip) */
	code[f->len + 1] = 0x25;
	memset(code + f->len + 2, 0, 4);
	uint64_t back = (uint64_t)(uintptr_t)native_back;
	memcpy(code + f->len + 6, &back, 8);

	csh h;
	cs_insn *insn;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK) {
		fail(f->what, "no Capstone");
		return;
	}
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	size_t n = cs_disasm(h, bytes, f->len, (uint64_t)(uintptr_t)code, 1, &insn);
	struct ip_emu e;
	bool made = n == 1 && insn->size == f->len && ip_emu_decode(insn, &e);
	if (n)
		cs_free(insn, n);
	cs_close(&h);
	if (f->refuse) {
		if (made)
			fail(f->what, "made by the emulator, must be left to the program");
		return;
	}
	if (!made) {
		fail(f->what, "refused by the emulator's decoder");
		return;
	}
	static uint8_t mem0[MEM], mem_native[MEM];
	for (int round = 0; round < 2000; round++) {
		for (size_t i = 0; i < MEM; i += 8) {
			uint64_t v = rnd();
			memcpy(mem0 + i, &v, 8);
		}
		uint64_t regs[NGREG], flags;
		random_state(regs, &flags);
		if (!strcmp(f->what, "leave")) {
			/* Where those load from: a word of the test memory. */
			uint64_t at = (uint64_t)(uintptr_t)(mem + 1024);
			memcpy(mem0 + 1024, &at, 8);
		}
		/* Natively. */
		memcpy(mem, mem0, MEM);
		memcpy(reg_in, regs, sizeof(reg_in));
		flags_in = flags;
		target = (uint64_t)(uintptr_t)code;
		run_native();
		memcpy(mem_native, mem, MEM);
		uint64_t nflags = (uint64_t)(out_ah & 0xd5) | (out_of ? 0x800 : 0);
		/* Emulated. */
		memcpy(mem, mem0, MEM);
		greg_t gr[NGREG];
		for (int r = 0; r < NGREG; r++)
			gr[r] = (greg_t)regs[r];
		gr[REG_EFL] = (greg_t)flags;
		gr[REG_RIP] = (greg_t)(uintptr_t)code;
		struct ip_emu_guard none = { 0, 0 };
		if (!ip_emu_run(&e, (uint64_t)(uintptr_t)code + f->len, gr, &none)) {
			fail(f->what, "the emulator could not run it");
			return;
		}
		char how[200] = "";
		for (int r = 0; r <= REG_RSP && !how[0]; r++)
			if ((uint64_t)gr[r] != reg_out[r])
				snprintf(how, sizeof(how), "register %d: %#llx, the CPU %#llx (in %#llx)", r,
					 (unsigned long long)gr[r], (unsigned long long)reg_out[r],
					 (unsigned long long)regs[r]);
		if (!how[0] && ((uint64_t)gr[REG_EFL] & 0x8d5) != nflags)
			snprintf(how, sizeof(how), "flags %#llx, the CPU %#llx (in %#llx)",
				 (unsigned long long)gr[REG_EFL] & 0x8d5, (unsigned long long)nflags,
				 (unsigned long long)flags);
		if (!how[0] && (uint64_t)gr[REG_RIP] != (uint64_t)(uintptr_t)code + f->len)
			snprintf(how, sizeof(how), "next PC");
		if (!how[0] && memcmp(mem, mem_native, MEM))
			snprintf(how, sizeof(how), "memory differs");
		if (how[0]) {
			fail(f->what, how);
			return;
		}
	}
}

int main(void)
{
	/* The code and, after it, the memory (near, for RIP-relative
	 * operands). */
	code = mmap(NULL, 4096 + MEM, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		    -1, 0);
	if (code == MAP_FAILED) {
		printf("FAIL: mmap\n");
		return 1;
	}
	mem = code + 4096;
	size_t n = sizeof(forms) / sizeof(*forms);
	for (size_t i = 0; i < n; i++)
		one(&forms[i]);
	printf("%zu forms, %d failures\n", n, failures);
	return failures != 0;
}
