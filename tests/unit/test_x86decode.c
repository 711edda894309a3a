/* The x86-64 stack-analysis decoder's fast path (chk_stack_x86.c: the
 * frequent encodings decoded without Capstone) against its reference
 * (chk_stack_x86_64_reference: every instruction through Capstone): the
 * same length, flow, target, condition, clobbers, flags and
 * micro-operations, field by field,
 *
 *  - at every instruction of the executable sections of the files named
 *    (default: this machine's libc, libstdc++ and libcrypto), found by a
 *    linear sweep with the reference's lengths from each section's start
 *    and from each symbol's (so that data in the middle of code does not
 *    hide what follows it);
 *  - at every byte offset of the first file's sections with --every-offset
 *    (decodings of the middle of instructions: prefixes and encodings
 *    compilers do not emit);
 *  - for a table of hand-picked encodings (each form the fast path takes,
 *    and the prefixed or odd ones it leaves to Capstone), each also cut
 *    short at every length (a truncated instruction decodes as neither
 *    path reading past the end);
 *  - for 300,000 random encodings around the fast path's (prefixes, then
 *    an opcode it reads or any, then random bytes; a fixed seed), some
 *    cut short.
 *
 * Prints the share of the swept instructions the fast path decoded.
 *
 *   test_x86decode [--every-offset] [FILE...]
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/check/chk_stack.h"

static unsigned long failures, insns;
static void *fast, *ref;

static bool same_mem(const struct sk_mem *a, const struct sk_mem *b)
{
	return a->disp == b->disp && a->base == b->base && a->index == b->index &&
	       a->scale == b->scale && a->size == b->size;
}

static bool same_insn(const struct sk_insn *a, const struct sk_mop *am, const struct sk_insn *b,
		      const struct sk_mop *bm)
{
	if (a->addr != b->addr || a->target != b->target || a->clobber != b->clobber ||
	    a->clobber32 != b->clobber32 || a->nmop != b->nmop || a->len != b->len ||
	    a->flow != b->flow || a->cond != b->cond || a->ijump_reg != b->ijump_reg ||
	    a->fill != b->fill || a->call_next != b->call_next || a->via_mem != b->via_mem ||
	    a->keeps_flags != b->keeps_flags)
		return false;
	for (unsigned k = 0; k < a->nmop; k++) {
		const struct sk_mop *x = &am[k], *y = &bm[k];
		if (x->kind != y->kind || x->dst != y->dst || x->src != y->src ||
		    x->flags != y->flags || x->imm != y->imm || x->width != y->width ||
		    !same_mem(&x->mem, &y->mem))
			return false;
	}
	return true;
}

static void show(const char *who, const struct sk_insn *a, const struct sk_mop *m)
{
	printf("    %s: len %u flow %u cond %u target 0x%llx clobber 0x%llx/0x%llx fill %u "
	       "keeps_flags %u via_mem %u call_next %u ijump %u\n", who, a->len, a->flow, a->cond,
	       (unsigned long long)a->target, (unsigned long long)a->clobber,
	       (unsigned long long)a->clobber32, a->fill, a->keeps_flags, a->via_mem, a->call_next,
	       a->ijump_reg);
	for (unsigned k = 0; k < a->nmop; k++)
		printf("      mop %u: kind %u dst %u src %u flags %u imm %lld width %u mem [%u + %u*%u "
		       "%+lld] size %u\n", k, m[k].kind, m[k].dst, m[k].src, m[k].flags,
		       (long long)m[k].imm, m[k].width, m[k].mem.base, m[k].mem.index,
		       m[k].mem.scale, (long long)m[k].mem.disp, m[k].mem.size);
}

/* Decode at P (N readable) with both; the reference's length (at least 1). */
static unsigned compare(const uint8_t *p, size_t n, uint64_t addr, const char *where)
{
	struct sk_insn a, b;
	struct sk_mop am[SK_MAX_MOPS], bm[SK_MAX_MOPS];
	memset(am, 0, sizeof(am));
	memset(bm, 0, sizeof(bm));
	chk_stack_x86_64.decode(fast, p, n, addr, &a, am);
	chk_stack_x86_64_reference.decode(ref, p, n, addr, &b, bm);
	if (!same_insn(&a, am, &b, bm)) {
		if (++failures <= (getenv("X86DECODE_SHOW") ? 100000u : 30u)) {
			char text[96];
			chk_stack_x86_64.text(ref, p, n, addr, text, sizeof(text));
			printf("FAIL: %s 0x%llx", where, (unsigned long long)addr);
			for (size_t k = 0; k < n && k < b.len && k < 15; k++)
				printf(" %02x", p[k]);
			printf(" (%s)\n", text);
			show("fast", &a, am);
			show("capstone", &b, bm);
		}
	}
	return b.len ? b.len : 1;
}

static void sweep(const uint8_t *p, size_t n, uint64_t addr, size_t from, uint8_t *seen,
		  const char *where)
{
	for (size_t off = from; off < n && !seen[off];) {
		seen[off] = 1;
		insns++;
		off += compare(p + off, n - off, addr + off, where);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The function symbols' addresses of E, sorted (.symtab, else .dynsym). */
static uint64_t *symbols(Elf *e, size_t *count)
{
	Elf_Scn *scn = NULL;
	uint64_t *v = NULL;
	size_t n = 0, cap = 0;
	for (int want = SHT_SYMTAB; want >= SHT_SYMTAB && !n; want = want == SHT_SYMTAB ? SHT_DYNSYM : -1) {
		scn = NULL;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != (unsigned)want || !sh.sh_entsize ||
			    !(d = elf_getdata(scn, NULL)))
				continue;
			for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    !s.st_value)
					continue;
				if (n == cap) {
					cap = cap ? 2 * cap : 1024;
					uint64_t *nv = realloc(v, cap * sizeof(*v));
					if (!nv) {
						free(v);
						*count = 0;
						return NULL;
					}
					v = nv;
				}
				v[n++] = s.st_value;
			}
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_u64);
	*count = n;
	return v;
}

static int file(const char *path, bool every_offset)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("FAIL: %s: cannot open\n", path);
		failures++;
		return -1;
	}
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (!e || !gelf_getehdr(e, &eh) || eh.e_machine != EM_X86_64) {
		printf("FAIL: %s: not an x86-64 ELF file\n", path);
		failures++;
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	size_t nsyms;
	uint64_t *syms = symbols(e, &nsyms);
	Elf_Scn *scn = NULL;
	unsigned long before = insns;
	uint64_t all0, fast0, all1, fast1;
	chk_stack_x86_counts(fast, &all0, &fast0);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !(d = elf_getdata(scn, NULL)) || !d->d_buf ||
		    !d->d_size)
			continue;
		uint8_t *seen = calloc(d->d_size, 1);
		if (!seen) {
			printf("FAIL: out of memory\n");
			failures++;
			break;
		}
		sweep(d->d_buf, d->d_size, sh.sh_addr, 0, seen, path);
		for (size_t k = 0; k < nsyms; k++)
			if (syms[k] >= sh.sh_addr && syms[k] < sh.sh_addr + d->d_size)
				sweep(d->d_buf, d->d_size, sh.sh_addr, syms[k] - sh.sh_addr, seen, path);
		free(seen);
	}
	chk_stack_x86_counts(fast, &all1, &fast1);
	printf("%s: %lu instructions, %.1f%% decoded by the fast path\n", path, insns - before,
	       all1 > all0 ? 100.0 * (double)(fast1 - fast0) / (double)(all1 - all0) : 0.0);
	if (every_offset) {
		unsigned long offsets = 0;
		scn = NULL;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			Elf_Data *d;
			if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
			    !(sh.sh_flags & SHF_EXECINSTR) || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
				continue;
			for (size_t off = 0; off < d->d_size; off++, offsets++)
				compare((const uint8_t *)d->d_buf + off, d->d_size - off, sh.sh_addr + off,
					path);
		}
		printf("%s: %lu byte offsets\n", path, offsets);
	}
	free(syms);
	elf_end(e);
	close(fd);
	return 0;
}

/* Hand-picked encodings, as hex. */
static const char *const table[] = {
	/* push, pop; with REX.B; 16-bit and REX.W forms */
	"55", "4154", "5d", "415f", "6655", "4855", "665d", "ff742408", "ff35 00000000",
	/* mov: every direction and width, memory forms (SIB, no base, rip,
	 * disp8/32, fs/gs), immediates (negative, 16-bit, movabs) */
	"4889e5", "89c7", "4189f8", "6689c8", "88c8", "4088f0", "88e0", "488b442408",
	"8b0424", "8b04a0", "4a8b04a0", "8b0c25 44332211", "488b05 f0ffffff", "64488b042528000000",
	"65488b042510000000", "8a07", "668b07", "8807", "66890424", "48c70424f0ffffff",
	"c70424f0ffffff", "66c7042400f0", "c6042400", "b8f0ffffff", "48b8f0ffffffffffffff",
	"66b8f0ff", "b0f0", "41b7f0", "48c7c0f0ffffff", "c7c0f0ffffff", "4c8b6c24f8",
	"488b8424 00010000", "4c8b2c24", "4e8b2c24", "4b8b04e4", "488b04c5 00000000",
	/* lea: 64 and 32 bits, index, rip, no base; 16-bit and fs left out */
	"488d442408", "488d0500000000", "8d0424", "8d042500000000", "8d0400", "488d04a0",
	"4a8d0424", "4c8d0c24", "488d642408", "488d65e8", "488d6424f8", "8d47e0", "668d0424",
	"64488d0425 00000000", "488dc0",
	/* ALU: every form, every operation, 8/16/32/64 bits, memory
	 * destinations, identities (or [rsp], 0 / and -1) */
	"4801d8", "01d8", "00d8", "6601d8", "4803442408", "2b0424", "4829c4", "29c4", "3c05",
	"04f0", "05f0ffffff", "4805f0ffffff", "663df0ff", "83e0f0", "4883e0f0", "6683e0f0",
	"6681e0f0ff", "80e0f0", "4881e0f0ffffff", "81e0f0ffffff", "83c8f0", "83f0f0", "83f8f0",
	"4883f8f0", "83e8f0", "4883c4f8", "4881ec00010000", "4883ec08", "83c4f8", "6683c0f0",
	"31c0", "4531c0", "85c0", "4885c0", "84c0", "a8f0", "a9f0ffffff", "48a9f0ffffff",
	"f6c1f0", "f7c1f0ffffff", "48f7c1f0ffffff", "f60424 01", "48830c2400", "830c2400",
	"48832424ff", "83242400", "48812424ffffffff", "4883042400", "48832c2400", "48833424 00",
	"488304240a", "11c0", "19c0", "4811c0", "4883d000", "3b0424", "39d0", "4839d0", "4038f0",
	"3a07", "803f2f", "48833d 00000000 00", "807c2408 05", "663b07",
	/* inc, dec, not, neg */
	"48ffc0", "ffc0", "ffc8", "fec0", "48ff0424", "f7d8", "48f7d8", "f7d0", "f6d0",
	"48f71c24",
	/* shifts */
	"c1e805", "d1e8", "d3e8", "48c1e003", "c1f803", "48d1e0", "d1e0", "48d3e0", "c1e003",
	"66c1e003", "48c1242403", "c0e003", "c1c003",
	/* movzx, movsx, movsxd, cdqe, cdq, cqo */
	"0fb6c1", "0fb601", "0fbec1", "480fbec1", "480fb7c1", "440fb6c0", "0fb6c4", "660fb6c1",
	"4863c1", "486301", "63c1", "4898", "98", "99", "4899", "6699",
	/* imul, setcc, cmovcc */
	"0fafc1", "480fafc3", "6bc0f0", "69c000010000", "4869c0f0ffffff", "666bc0f0", "0f94c0",
	"410f95c7", "0f9f0424", "410f45c1", "480f44c1", "480f4f0424", "660f44c1", "0f40c1",
	/* xchg */
	"87c3", "4887c3", "488703", "86c3", "6687c3", "4887e4", "6690", "4190", "4890", "4090",
	"91", "4891",
	/* control flow */
	"c3", "f2c3", "f3c3", "c20800", "c9", "66c9", "e800000000", "e8fbffffff", "f2e800000000",
	"e9 10000000", "eb00", "ebfe", "f2e900000000", "7400", "7ffe", "0f8400000000",
	"0f8f00000000", "f20f8400000000", "ff2500000000", "f2ff2500000000", "ff1500000000", "ffd0",
	"41ffd3", "ffe0", "41ffe3", "3effe0", "ff24c500000000", "3eff24c500000000", "ff6008",
	"66ffd0", "66e80000", "ff1c24", "ff2c24", "cc", "f4", "0f0b", "0f05", "cd80", "e3fe",
	"e2fe",
	/* nops, endbr64, prefixes left to Capstone */
	"90", "0f1f00", "0f1f4000", "0f1f440000", "660f1f440000", "0f1f8000000000",
	"0f1f840000000000", "2e0f1f840000000000", "662e0f1f840000000000",
	"66662e0f1f840000000000", "6666662e0f1f840000000000", "66666666662e0f1f840000000000",
	"0f1fc0", "0f1f08", "f30f1efa", "f30f1efb", "f390", "f0480fb10f", "f0ff0424",
	"f3ab", "f348ab", "67488b00", "678d0400", "2e8b00", "26488b00", "3e488b00", "4048",
	"48418b00", "66488b00", "6648c7c0f0ffffff", "f2488b00", "64c3", "64e800000000", "6464488b00",
	"646548 8b00", "64488b c0", "640f1f00", "0f1e fa", "f3",
	/* SSE2 moves and operations: loads, stores (Capstone's access quirks:
	 * movdqa, movups, movupd store by reading), register forms, REX.R/B,
	 * pmovmskb; the prefixes left to Capstone (66 not next to the
	 * opcode, two mandatory prefixes, movq/movd, movss/movsd) */
	"660f6f0424", "660f7f0424", "f30f6f0424", "f30f7f0424", "0f280424", "0f290424",
	"0f100424", "0f110424", "660f280424", "660f290424", "660f100424", "660f110424",
	"660f7fc1", "f30f7fc1", "0f29c1", "0f11c1", "660f6fc1", "66410f6fc0", "66480f6fc0",
	"f3440f6f00", "660fefc0", "66450fefc0", "660f74c1", "660f740c24", "660f75c1", "660f76c1",
	"660f64c1", "660ffcc1", "660ff8c1", "660fdbc1", "660fdfc1", "660febc1", "660fdac1",
	"660f6cc1", "660fd7c0", "66440fd7c0", "66480fd7c0", "660fd700", "0fd7c0", "66640f6f00",
	"64660f6f00", "f3660f6f00", "66f30f6f00", "f20f100424", "f30f100424", "660f6ec0",
	"660f7ec0", "66480f6ec0", "f30f7e0424", "660fd60424", "2e660f6f00", "0f2944 2410",
	/* AVX, AVX-512: Capstone's */
	"c5f9efc0", "c5fc77", "62f17d48 6f00",
};

/* Random encodings around the ones the fast path reads: a few prefixes
 * (legacy ones, REX, repeated, in any order), an opcode byte the fast
 * path knows half the time (else any byte, 0F then any byte a quarter of
 * the time), then random bytes; each decoded whole and cut short at a
 * random length. A fixed seed (xorshift64): the same strings every run. */
static void random_encodings(unsigned long count)
{
	static const uint8_t prefixes[] = { 0x66, 0x66, 0xf2, 0xf3, 0x2e, 0x3e, 0x64, 0x65, 0x67,
					    0xf0, 0x26, 0x36, 0x40, 0x41, 0x44, 0x48, 0x49, 0x4c,
					    0x4f, 0x45 };
	static const uint8_t opcodes[] = {
		0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x08, 0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x21,
		0x22, 0x23, 0x24, 0x25, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x30, 0x31, 0x32, 0x33,
		0x34, 0x35, 0x38, 0x39, 0x3a, 0x3b, 0x3c, 0x3d, 0x10, 0x11, 0x18, 0x19, 0x50, 0x53,
		0x55, 0x58, 0x5d, 0x5f, 0x63, 0x69, 0x6b, 0x70, 0x74, 0x7f, 0x80, 0x81, 0x83, 0x84,
		0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x8b, 0x8d, 0x90, 0x98, 0x99, 0xa8, 0xa9, 0xb0,
		0xb7, 0xb8, 0xbf, 0xc1, 0xc3, 0xc6, 0xc7, 0xc9, 0xcc, 0xd1, 0xd3, 0xe8, 0xe9, 0xeb,
		0xf4, 0xf6, 0xf7, 0xfe, 0xff,
	};
	static const uint8_t opcodes0f[] = { 0x05, 0x0b, 0x1e, 0x1f, 0x40, 0x44, 0x4f, 0x80, 0x84,
					     0x8f, 0x90, 0x94, 0x95, 0x9f, 0xaf, 0xb6, 0xb7, 0xbe,
					     0xbf, 0x10, 0x11, 0x28, 0x29, 0x6f, 0x7f, 0xef, 0x74,
					     0x76, 0xd7, 0xfc, 0xdb, 0x6c, 0x6e, 0x7e, 0xd6 };
	uint64_t x = 0x9e3779b97f4a7c15ull;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (unsigned long i = 0; i < count; i++) {
		uint8_t b[24];
		size_t n = 0;
		unsigned npre = (unsigned)(NEXT() % 4);
		if (NEXT() % 4 == 0)
			npre = 0;
		for (unsigned k = 0; k < npre; k++)
			b[n++] = prefixes[NEXT() % sizeof(prefixes)];
		unsigned pick = (unsigned)(NEXT() % 4);
		if (pick < 2) {
			b[n++] = opcodes[NEXT() % sizeof(opcodes)];
		} else if (pick == 2) {
			b[n++] = 0x0f;
			b[n++] = NEXT() % 2 ? opcodes0f[NEXT() % sizeof(opcodes0f)] : (uint8_t)NEXT();
		} else {
			b[n++] = (uint8_t)NEXT();
		}
		while (n < sizeof(b))
			b[n++] = (uint8_t)NEXT();
		size_t cut = NEXT() % 3 ? sizeof(b) : (size_t)(NEXT() % 16);
		uint8_t *p = malloc(cut ? cut : 1);
		if (!p)
			return;
		memcpy(p, b, cut);
		compare(p, cut, 0x7ffff000 + (NEXT() % 4096), "random");
		free(p);
	}
#undef NEXT
}

static size_t parse_hex(const char *s, uint8_t *out, size_t cap)
{
	size_t n = 0;
	for (; *s && n < cap; s++) {
		if (*s == ' ')
			continue;
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			break;
		out[n++] = (uint8_t)v;
		s++;
	}
	return n;
}

int main(int argc, char **argv)
{
	bool every_offset = false;
	int argi = 1;
	if (argi < argc && !strcmp(argv[argi], "--every-offset")) {
		every_offset = true;
		argi++;
	}
	if (chk_stack_x86_64.open(&fast) || chk_stack_x86_64_reference.open(&ref)) {
		printf("FAIL: Capstone could not be loaded\n");
		return 1;
	}
	unsigned long entries = 0;
	for (size_t i = 0; i < BK_ARRAY_LEN(table); i++) {
		uint8_t b[32];
		size_t n = parse_hex(table[i], b, sizeof(b));
		if (!n) {
			printf("FAIL: table entry %zu does not parse\n", i);
			failures++;
			continue;
		}
		/* every cut, down to nothing readable */
		for (size_t len = n + 1; len-- > 0; entries++) {
			/* a copy of exactly LEN bytes: ASan sees any read past it */
			uint8_t *cut = malloc(len ? len : 1);
			if (!cut)
				return 1;
			memcpy(cut, b, len);
			compare(cut, len, 0x401000, table[i]);
			free(cut);
		}
	}
	printf("table: %zu encodings, %lu cuts\n", BK_ARRAY_LEN(table), entries);
	unsigned long before = failures;
	uint64_t all0, fast0, all1, fast1;
	chk_stack_x86_counts(fast, &all0, &fast0);
	random_encodings(300000);
	chk_stack_x86_counts(fast, &all1, &fast1);
	printf("random: 300000 encodings (%llu by the fast path), %lu differences\n",
	       (unsigned long long)(fast1 - fast0), failures - before);
	elf_version(EV_CURRENT);
	if (argi < argc) {
		for (int i = argi; i < argc; i++)
			file(argv[i], every_offset && i == argi);
	} else {
		file("/usr/lib/x86_64-linux-gnu/libc.so.6", every_offset);
		file("/usr/lib/x86_64-linux-gnu/libstdc++.so.6", false);
		file("/usr/lib/x86_64-linux-gnu/libcrypto.so.3", false);
	}
	chk_stack_x86_64.close(fast);
	chk_stack_x86_64_reference.close(ref);
	printf("%lu instructions swept, %lu differences\n", insns, failures);
	return failures ? 1 : 0;
}
