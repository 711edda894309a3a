/* Machine code written at run time for the JIT tests (x86-64), and its
 * .eh_frame written byte by byte: J1 calls J2 calls J3 calls back into C
 * through %rbx (J1's argument), none with a frame pointer; J0 sets the
 * trap flag and jumps to J1. Shared by test_jit.c and test_regframe.c. */
#ifndef BK_JIT_CODE_H
#define BK_JIT_CODE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* ---- The code ------------------------------------------------------------------ */

enum { J0 = 0, J1 = 32, J2 = 64, J3 = 96, CODE_LEN = 160 };
enum { J1_LEN = 19, J2_LEN = 14, J3_LEN = 33, J0_LEN = 15 };
/* Return addresses: after J1's call of J2, J2's of J3, J3's of jit_cb. */
enum { RA_J1 = J1 + 13, RA_J2 = J2 + 9, RA_J3 = J3 + 24 };


static inline void put_rel32(uint8_t *at, uint64_t from_end, uint64_t to)
{
	int32_t rel = (int32_t)(to - from_end);
	memcpy(at, &rel, 4);
}

static inline void write_code(uint8_t *c)
{
	memset(c, 0xcc, CODE_LEN);
	/* J0: pushfq; orq $0x100,(%rsp); popfq; jmp J1 (traps start at J1) */
	static const uint8_t j0[] = { 0x9c, 0x48, 0x81, 0x0c, 0x24, 0x00, 0x01, 0x00, 0x00,
				      0x9d, 0xe9, 0, 0, 0, 0 };
	memcpy(c + J0, j0, sizeof(j0));
	put_rel32(c + J0 + 11, (uint64_t)(uintptr_t)c + J0 + 15, (uint64_t)(uintptr_t)c + J1);
	/* J1(cb): push %rbx; sub $16,%rsp; mov %rdi,%rbx; call J2; add $16,%rsp;
	 * pop %rbx; ret */
	static const uint8_t j1[] = { 0x53, 0x48, 0x83, 0xec, 0x10, 0x48, 0x89, 0xfb, 0xe8, 0,
				      0,    0,    0,    0x48, 0x83, 0xc4, 0x10, 0x5b, 0xc3 };
	memcpy(c + J1, j1, sizeof(j1));
	put_rel32(c + J1 + 9, (uint64_t)(uintptr_t)c + RA_J1, (uint64_t)(uintptr_t)c + J2);
	/* J2: sub $24,%rsp; call J3; add $24,%rsp; ret */
	static const uint8_t j2[] = { 0x48, 0x83, 0xec, 0x18, 0xe8, 0, 0, 0, 0,
				      0x48, 0x83, 0xc4, 0x18, 0xc3 };
	memcpy(c + J2, j2, sizeof(j2));
	put_rel32(c + J2 + 5, (uint64_t)(uintptr_t)c + RA_J2, (uint64_t)(uintptr_t)c + J3);
	/* J3: push %r12; push %r13; sub $8,%rsp; mov $0x1234,%r12; mov $0x5678,%r13;
	 * call *%rbx; add $8,%rsp; pop %r13; pop %r12; ret */
	static const uint8_t j3[] = { 0x41, 0x54, 0x41, 0x55, 0x48, 0x83, 0xec, 0x08, 0x49,
				      0xc7, 0xc4, 0x34, 0x12, 0x00, 0x00, 0x49, 0xc7, 0xc5,
				      0x78, 0x56, 0x00, 0x00, 0xff, 0xd3, 0x48, 0x83, 0xc4,
				      0x08, 0x41, 0x5d, 0x41, 0x5c, 0xc3 };
	memcpy(c + J3, j3, sizeof(j3));
}

/* ---- Its .eh_frame ------------------------------------------------------------- */

/* The CIE: version 1, "zR", code alignment 1, data alignment -8, return
 * address column 16, FDE pointers pcrel|sdata4 (0x1b: a section near its
 * code, as a JIT puts it) or absptr (0x00: anywhere); CFA = rsp + 8, the
 * return address at CFA - 8. 24 bytes with its length. */
static const uint8_t cie[] = { 20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b,
			       0x0c, 7, 8, 0x90, 1, 0, 0 };
#define CIE_ENC_AT 16

/* Rows, per function (offsets in the function):
 *   J0  [0,1) rsp+8  [1,10) rsp+16 (pushfq)  [10,15) rsp+8
 *   J1  [0,1) rsp+8  [1,5) rsp+16, rbx at CFA-16  [5,17) rsp+32  [17,18) rsp+16
 *       [18,19) rsp+8, rbx restored
 *   J2  [0,4) rsp+8  [4,13) rsp+32  [13,14) rsp+8
 *   J3  [0,2) rsp+8  [2,4) rsp+16, r12 at CFA-16  [4,8) rsp+24, r13 at CFA-24
 *       [8,28) rsp+32  [28,30) rsp+24  [30,32) rsp+16, r13 restored
 *       [32,33) rsp+8, r12 restored */
static const uint8_t cfa_j0[] = { 0x41, 0x0e, 16, 0x49, 0x0e, 8 };
static const uint8_t cfa_j1[] = { 0x41, 0x0e, 16, 0x83, 2, 0x44, 0x0e, 32,
				  0x4c, 0x0e, 16, 0x41, 0x0e, 8, 0xc3 };
static const uint8_t cfa_j2[] = { 0x44, 0x0e, 32, 0x49, 0x0e, 8 };
static const uint8_t cfa_j3[] = { 0x42, 0x0e, 16, 0x8c, 2, 0x42, 0x0e, 24, 0x8d, 3, 0x44, 0x0e,
				  32,   0x54, 0x0e, 24, 0x42, 0x0e, 16, 0xcd, 0x42, 0x0e, 8, 0xcc };

/* An FDE at OFF of SEC for [FN, FN + LEN) with INSNS, pointers pcrel
 * sdata4 or (ABS) 8-byte absolute; returns the next offset. */
static inline uint64_t sec_addr_of(const uint8_t *sec);

static inline size_t put_fde(uint8_t *sec, size_t off, bool abs, uint64_t fn, uint32_t len,
		      const uint8_t *insns, size_t n)
{
	size_t psz = abs ? 8 : 4;
	size_t body = 4 + 2 * psz + 1 + n; /* CIE pointer, pc_begin, pc_range, aug len, insns */
	size_t padded = (4 + body + 7) / 8 * 8 - 4;
	uint32_t length = (uint32_t)padded;
	memcpy(sec + off, &length, 4);
	uint32_t cie_ptr = (uint32_t)(off + 4); /* back to the CIE at 0 */
	memcpy(sec + off + 4, &cie_ptr, 4);
	if (abs) {
		uint64_t range = len;
		memcpy(sec + off + 8, &fn, 8);
		memcpy(sec + off + 16, &range, 8);
	} else {
		put_rel32(sec + off + 8, sec_addr_of(sec) + off + 8, fn); /* pcrel */
		memcpy(sec + off + 12, &len, 4);
	}
	sec[off + 8 + 2 * psz] = 0;
	memcpy(sec + off + 9 + 2 * psz, insns, n);
	memset(sec + off + 9 + 2 * psz + n, 0, padded - body); /* DW_CFA_nop */
	return off + 4 + padded;
}

#define EH_LEN 256

/* Where the section being written is, for its pcrel pointers: where its
 * bytes are, unless it is written for an ELF image (link-time addresses). */
static const uint8_t *image_sec;
static uint64_t image_sec_addr;
static inline uint64_t sec_addr_of(const uint8_t *sec)
{
	return sec == image_sec ? image_sec_addr : (uint64_t)(uintptr_t)sec;
}

/* The whole section for the code at C into SEC: CIE, four FDEs, terminator. */
static inline void write_eh_at(uint8_t *sec, uint64_t c, bool abs)
{
	memset(sec, 0, EH_LEN);
	memcpy(sec, cie, sizeof(cie));
	if (abs)
		sec[CIE_ENC_AT] = 0x00; /* DW_EH_PE_absptr */
	size_t off = sizeof(cie);
	uint64_t base = c;
	off = put_fde(sec, off, abs, base + J0, J0_LEN, cfa_j0, sizeof(cfa_j0));
	off = put_fde(sec, off, abs, base + J1, J1_LEN, cfa_j1, sizeof(cfa_j1));
	off = put_fde(sec, off, abs, base + J2, J2_LEN, cfa_j2, sizeof(cfa_j2));
	off = put_fde(sec, off, abs, base + J3, J3_LEN, cfa_j3, sizeof(cfa_j3));
	memset(sec + off, 0, 4); /* the terminator */
}

/* The instructions of FDE K (0: J0's ... 3: J3's) of a section write_eh*
 * wrote. */
static inline uint8_t *fde_insns(uint8_t *sec, int k, bool abs)
{
	uint8_t *fde = sec + sizeof(cie);
	for (int i = 0; i < k; i++) {
		uint32_t len;
		memcpy(&len, fde, 4);
		fde += 4 + len;
	}
	return fde + 4 + 4 + (abs ? 16 : 8) + 1;
}

/* J2's FDE made wrong: its frame is 32 bytes from offset 4, the row says
 * 24 (DW_CFA_def_cfa_offset 32 -> 24). False if the bytes are not there. */
static inline bool break_j2(uint8_t *sec, bool abs)
{
	uint8_t *insns = fde_insns(sec, 2, abs);
	if (insns[0] != 0x44 || insns[1] != 0x0e || insns[2] != 32)
		return false;
	insns[2] = 24;
	return true;
}

static inline void write_eh(uint8_t *sec, const uint8_t *c, bool abs)
{
	write_eh_at(sec, (uint64_t)(uintptr_t)c, abs);
}

/* ---- The code as an ELF image in memory ------------------------------------------------
 *
 * What a JIT hands a debugger: an ELF object describing its code. Here a
 * shared object's layout, link-time address = file offset: the code's copy
 * in .text at 0x200, its .eh_frame (pcrel from 0x300) at 0x300, .shstrtab,
 * the section headers; one PT_LOAD from 0. Mapped so that 0x200 is the
 * code's runtime address. CODE: the code to copy in (its calls are
 * relative: it may run at any address). */
enum { IM_TEXT = 0x200, IM_EH = 0x300, IM_STR = 0x400, IM_SH = 0x440, IM_LEN = IM_SH + 4 * 64 };

static inline void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

static inline void shdr(uint8_t *im, int i, uint32_t name, uint32_t type, uint64_t flags, uint64_t addr,
		 uint64_t off, uint64_t size)
{
	uint8_t *h = im + IM_SH + 64 * i;
	put32(h, name);
	put32(h + 4, type);
	put64(h + 8, flags);
	put64(h + 16, addr);
	put64(h + 24, off);
	put64(h + 32, size);
	put64(h + 48, 1);
}

static inline void write_image(uint8_t *im, const uint8_t *code)
{
	memset(im, 0, IM_LEN);
	memcpy(im, "\177ELF\2\1\1", 7);
	put16(im + 16, 3);   /* ET_DYN */
	put16(im + 18, 62);  /* EM_X86_64 */
	put32(im + 20, 1);
	put64(im + 32, 64);  /* e_phoff */
	put64(im + 40, IM_SH);
	put16(im + 52, 64);
	put16(im + 54, 56);
	put16(im + 56, 1);
	put16(im + 58, 64);
	put16(im + 60, 4);
	put16(im + 62, 3);   /* e_shstrndx */
	uint8_t *ph = im + 64;
	put32(ph, 1);        /* PT_LOAD */
	put32(ph + 4, 5);    /* R X */
	put64(ph + 32, IM_SH);
	put64(ph + 40, IM_SH);
	put64(ph + 48, 4096);
	memcpy(im + IM_TEXT, code, CODE_LEN);
	image_sec = im + IM_EH;
	image_sec_addr = IM_EH;
	write_eh_at(im + IM_EH, IM_TEXT, false);
	image_sec = NULL;
	static const char names[] = "\0.text\0.eh_frame\0.shstrtab";
	memcpy(im + IM_STR, names, sizeof(names));
	shdr(im, 1, 1, 1, 6, IM_TEXT, IM_TEXT, CODE_LEN);  /* SHF_ALLOC|SHF_EXECINSTR */
	shdr(im, 2, 7, 1, 2, IM_EH, IM_EH, EH_LEN);        /* SHF_ALLOC */
	shdr(im, 3, 17, 3, 0, 0, IM_STR, sizeof(names));   /* SHT_STRTAB */
}

#endif
