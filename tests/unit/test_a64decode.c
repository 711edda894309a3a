/* The AArch64 stack-analysis decoder's fast path (chk_stack_aarch64.c:
 * the frequent encodings decoded without Capstone) against its reference
 * (chk_stack_aarch64_reference: every instruction through Capstone), word
 * by word: the same flow, target, condition, clobbers, flags and
 * micro-operations for every 4-byte word of the executable sections of
 * the files named (default: this machine's arm64 libc and libstdc++, which
 * scripts/setup.sh installs), and for a table of hand-picked encodings
 * (each form the fast path takes, and the unpredictable or odd ones it
 * leaves to Capstone). The decoder's adrp/ldr memory is compared too: the
 * words are decoded in address order by both.
 *
 *   test_a64decode [FILE...]
 */
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/check/chk_stack.h"

static unsigned long failures, words;

static bool same_insn(const struct sk_insn *a, const struct sk_mop *am, const struct sk_insn *b,
		      const struct sk_mop *bm)
{
	if (a->len != b->len || a->flow != b->flow || a->cond != b->cond ||
	    a->clobber != b->clobber || a->clobber32 != b->clobber32 || a->nmop != b->nmop ||
	    a->fill != b->fill || a->call_next != b->call_next || a->via_mem != b->via_mem ||
	    a->keeps_flags != b->keeps_flags)
		return false;
	if ((a->flow == SK_JUMP || a->flow == SK_BRANCH || a->flow == SK_CALL || a->via_mem) &&
	    a->target != b->target)
		return false;
	if (a->flow == SK_IJUMP && a->ijump_reg != b->ijump_reg)
		return false;
	for (unsigned k = 0; k < a->nmop; k++) {
		const struct sk_mop *x = &am[k], *y = &bm[k];
		if (x->kind != y->kind || x->dst != y->dst || x->src != y->src || x->flags != y->flags ||
		    x->imm != y->imm || x->width != y->width)
			return false;
		bool mem = x->kind == SK_MOP_LOAD || x->kind == SK_MOP_STORE || x->kind == SK_MOP_ADDR ||
			   (x->kind == SK_MOP_CMP && x->dst == SK_NONE);
		if (mem && (x->mem.disp != y->mem.disp || x->mem.base != y->mem.base ||
			    x->mem.index != y->mem.index || x->mem.scale != y->mem.scale ||
			    x->mem.size != y->mem.size))
			return false;
	}
	return true;
}

static void compare(void *fast, void *ref, const uint8_t *p, size_t n, uint64_t addr,
		    const char *where)
{
	for (size_t off = 0; off + 4 <= n; off += 4) {
		struct sk_insn a, b;
		struct sk_mop am[SK_MAX_MOPS], bm[SK_MAX_MOPS];
		memset(am, 0, sizeof(am));
		memset(bm, 0, sizeof(bm));
		chk_stack_aarch64.decode(fast, p + off, n - off, addr + off, &a, am);
		chk_stack_aarch64_reference.decode(ref, p + off, n - off, addr + off, &b, bm);
		words++;
		if (!same_insn(&a, am, &b, bm)) {
			char text[96];
			chk_stack_aarch64.text(ref, p + off, 4, addr + off, text, sizeof(text));
			if (++failures <= 20)
				printf("FAIL: %s 0x%llx %08x %s: fast flow %u nmop %u, capstone flow %u "
				       "nmop %u\n", where, (unsigned long long)(addr + off),
				       (unsigned)(p[off] | p[off + 1] << 8 | p[off + 2] << 16 |
						  (unsigned)p[off + 3] << 24),
				       text, a.flow, a.nmop, b.flow, b.nmop);
		}
	}
}

static int file(void *fast, void *ref, const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0) {
		printf("FAIL: %s: cannot open (scripts/setup.sh installs the arm64 libraries)\n", path);
		failures++;
		return -1;
	}
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (!e || !gelf_getehdr(e, &eh) || eh.e_machine != EM_AARCH64) {
		printf("FAIL: %s: not an AArch64 ELF file\n", path);
		failures++;
		if (e)
			elf_end(e);
		close(fd);
		return -1;
	}
	Elf_Scn *scn = NULL;
	unsigned long before = words;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
			continue;
		compare(fast, ref, d->d_buf, d->d_size, sh.sh_addr, path);
	}
	printf("%s: %lu words\n", path, words - before);
	elf_end(e);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	void *fast, *ref;
	if (chk_stack_aarch64.open(&fast) || chk_stack_aarch64_reference.open(&ref)) {
		printf("FAIL: Capstone could not be loaded\n");
		return 1;
	}
	/* Hand-picked: each fast form, and the edges it leaves to Capstone. */
	static const uint32_t table[] = {
		0xd503201f, 0x14000010, 0x97ffffe2, 0x94000001, 0x54fffca8, 0x5400000e, 0x5400000f,
		0xb4fffae0, 0x35000040, 0x361ffac0, 0xb7f80040, 0xd65f03c0, 0xd65f0220, 0x10fffd22,
		0x90000001, 0xb0000121, 0x9000001f, 0x910003fd, 0x910043fd, 0xd14007ff, 0xd10403ff,
		0x11000420, 0x51000420, 0x7100141f, 0xf100141f, 0xf14007ff, 0x3100041f, 0xb100041f,
		0xf1000420, 0x110003ff, 0x110003e0, 0x91000000, 0xaa0003f3, 0x2a0003f3, 0xaa1f03e1,
		0xaa0003ff, 0xd2a00030, 0xf2a00030, 0x92800000, 0x12800000, 0x52800020, 0x72a00020,
		0xd2800000 | 31, 0x12c00000, 0xf94007fe, 0xb9402be0, 0x39400022, 0xf90007ff, 0xb9002fe3,
		0x39000020, 0x79400020, 0xf947d821, 0xa9bf7bfd, 0xa8c17bfd, 0xa9007bfd, 0xa94153f3,
		0xa9bf7fff, 0xa8c10bf0, 0xa9400420, 0xa9400020, 0xa8c10421, 0xa9c10421, 0xa8810421,
		0xa9417bfd, 0xa9420fe0, 0xa97f7fe0, 0xa8c07fff, 0xa93f17e4,
	};
	uint8_t buf[sizeof(table)];
	for (size_t i = 0; i < BK_ARRAY_LEN(table); i++)
		for (int k = 0; k < 4; k++)
			buf[4 * i + k] = (uint8_t)(table[i] >> (8 * k));
	compare(fast, ref, buf, sizeof(buf), 0x400000, "table");
	elf_version(EV_CURRENT);
	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			file(fast, ref, argv[i]);
	} else {
		file(fast, ref, "/usr/lib/aarch64-linux-gnu/libc.so.6");
		file(fast, ref, "/usr/lib/aarch64-linux-gnu/libstdc++.so.6");
	}
	chk_stack_aarch64.close(fast);
	chk_stack_aarch64_reference.close(ref);
	printf("%lu words, %lu differences\n", words, failures);
	return failures ? 1 : 0;
}
