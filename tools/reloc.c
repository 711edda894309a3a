/* Relocations of a relocatable object's unwind section, applied for `backstep
 * dump`: in a .o the FDE addresses (.eh_frame's pc_begin, .debug_frame's
 * initial location and CIE pointer) are zeros that .rela.eh_frame and
 * .rela.debug_frame fill in. They are applied as readelf applies them when
 * it dumps a .o: every section at address 0, S the symbol's st_value (an
 * offset in its section), A the addend, P the field's offset in the
 * relocated section. A function then reads as its offset in its own
 * section, the ranges readelf --debug-dump=frames prints.
 *
 * The relocation types applied (the ones compilers emit in unwind tables):
 *   x86-64   R_X86_64_64 S+A (8), R_X86_64_32/32S S+A (4),
 *            R_X86_64_PC32 S+A-P (4), R_X86_64_PC64 S+A-P (8)
 *   AArch64  R_AARCH64_ABS64 S+A (8), R_AARCH64_ABS32 S+A (4),
 *            R_AARCH64_PREL64 S+A-P (8), R_AARCH64_PREL32 S+A-P (4)
 * Others are counted, not applied. SHT_REL (implicit addends, read from the
 * field) and SHT_RELA alike; ELF64 and ELF32 little-endian.
 *
 * Trusts: the loader opened the file (its bytes are whole and the header is
 * sane). Everything read from the section and relocation tables is bounds-
 * checked here: a relocation outside the section or naming no symbol is
 * counted as skipped, never written. Cold; allocates the copy. */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#include "../src/base/base.h"
#include "../src/loader/loader.h"

#ifndef R_X86_64_PC64
#define R_X86_64_PC64 24
#endif
#ifndef R_AARCH64_ABS64
#define R_AARCH64_ABS64 257
#define R_AARCH64_ABS32 258
#define R_AARCH64_PREL64 260
#define R_AARCH64_PREL32 261
#endif

/* How one relocation type writes its field. */
struct reloc_how {
	unsigned size;  /* bytes written: 4 or 8; 0 not applied */
	bool pcrel;     /* S + A - P, else S + A */
};

static struct reloc_how how_of(uint16_t machine, uint32_t type)
{
	if (machine == EM_X86_64) {
		switch (type) {
		case R_X86_64_64: return (struct reloc_how){ 8, false };
		case R_X86_64_32:
		case R_X86_64_32S: return (struct reloc_how){ 4, false };
		case R_X86_64_PC32: return (struct reloc_how){ 4, true };
		case R_X86_64_PC64: return (struct reloc_how){ 8, true };
		}
	} else if (machine == EM_AARCH64) {
		switch (type) {
		case R_AARCH64_ABS64: return (struct reloc_how){ 8, false };
		case R_AARCH64_ABS32: return (struct reloc_how){ 4, false };
		case R_AARCH64_PREL64: return (struct reloc_how){ 8, true };
		case R_AARCH64_PREL32: return (struct reloc_how){ 4, true };
		}
	}
	return (struct reloc_how){ 0, false };
}

/* One section header, the fields used. */
struct shdr {
	uint32_t type, link, info;
	uint64_t off, size, entsize;
};

static bool read_shdr(const uint8_t *f, size_t flen, bool is64, uint64_t shoff, uint16_t shentsize,
		      size_t i, struct shdr *s)
{
	uint64_t at = shoff + (uint64_t)i * shentsize;
	if (at > flen || flen - at < (is64 ? 64u : 40u))
		return false;
	const uint8_t *p = f + at;
	s->type = (uint32_t)base_rd_le(p + 4, 4);
	if (is64) {
		s->off = base_rd_le(p + 24, 8);
		s->size = base_rd_le(p + 32, 8);
		s->link = (uint32_t)base_rd_le(p + 40, 4);
		s->info = (uint32_t)base_rd_le(p + 44, 4);
		s->entsize = base_rd_le(p + 56, 8);
	} else {
		s->off = base_rd_le(p + 16, 4);
		s->size = base_rd_le(p + 20, 4);
		s->link = (uint32_t)base_rd_le(p + 24, 4);
		s->info = (uint32_t)base_rd_le(p + 28, 4);
		s->entsize = base_rd_le(p + 36, 4);
	}
	return s->off <= flen && s->size <= flen - s->off;
}

int cli_relocate_section(const struct ldr_elf *ldr, const struct ldr_section *sec, uint8_t **out,
			 size_t *applied, size_t *skipped)
{
	*out = NULL;
	*applied = *skipped = 0;
	const uint8_t *f;
	size_t flen;
	ldr_bytes(ldr, &f, &flen);
	bool is64 = ldr->elf_class == ELFCLASS64;
	if (ldr->type != ET_REL || !sec->present || !sec->data || flen < (is64 ? 64u : 52u))
		return 0;
	uint64_t shoff = is64 ? base_rd_le(f + 40, 8) : base_rd_le(f + 32, 4);
	uint16_t shentsize = (uint16_t)base_rd_le(f + (is64 ? 58 : 46), 2);
	size_t shnum = (size_t)base_rd_le(f + (is64 ? 60 : 48), 2);
	if (shnum == 0 || shentsize < (is64 ? 64u : 40u))
		return 0;
	/* The section's index: the one whose bytes start where SEC's do. */
	size_t target = 0;
	for (size_t i = 1; i < shnum && !target; i++) {
		struct shdr s;
		if (read_shdr(f, flen, is64, shoff, shentsize, i, &s) && s.type != SHT_NOBITS &&
		    s.off == sec->file_off)
			target = i;
	}
	if (!target)
		return 0;
	uint8_t *copy = NULL;
	for (size_t i = 1; i < shnum; i++) {
		struct shdr rs, ss;
		if (!read_shdr(f, flen, is64, shoff, shentsize, i, &rs) ||
		    (rs.type != SHT_RELA && rs.type != SHT_REL) || rs.info != target)
			continue;
		bool rela = rs.type == SHT_RELA;
		size_t esize = is64 ? (rela ? 24u : 16u) : (rela ? 12u : 8u);
		size_t symsize = is64 ? 24u : 16u;
		if (rs.entsize != esize ||
		    !read_shdr(f, flen, is64, shoff, shentsize, rs.link, &ss) ||
		    (ss.type != SHT_SYMTAB && ss.type != SHT_DYNSYM)) {
			*skipped += rs.entsize ? (size_t)(rs.size / rs.entsize) : 1;
			continue;
		}
		if (!copy) {
			copy = base_alloc(sec->len ? sec->len : 1);
			if (!copy)
				return BK_E_NOMEM;
			memcpy(copy, sec->data, sec->len);
		}
		for (uint64_t off = 0; off + esize <= rs.size; off += esize) {
			const uint8_t *r = f + rs.off + off;
			uint64_t r_off = base_rd_le(r, is64 ? 8 : 4);
			uint64_t info = base_rd_le(r + (is64 ? 8 : 4), is64 ? 8 : 4);
			uint64_t symi = is64 ? info >> 32 : info >> 8;
			uint32_t type = (uint32_t)(is64 ? info & 0xffffffffu : info & 0xffu);
			struct reloc_how h = how_of(ldr->machine, type);
			uint64_t symoff = symi * symsize;
			if (!h.size || r_off > sec->len || sec->len - r_off < h.size ||
			    symoff >= ss.size || ss.size - symoff < symsize) {
				++*skipped;
				continue;
			}
			const uint8_t *sym = f + ss.off + symoff;
			uint64_t S = base_rd_le(sym + (is64 ? 8 : 4), is64 ? 8 : 4);
			uint64_t A = rela ? base_rd_le(r + (is64 ? 16 : 8), is64 ? 8 : 4)
					  : base_rd_le(copy + r_off, h.size);
			if (rela && !is64)
				A = (uint64_t)(int64_t)(int32_t)(uint32_t)A;
			if (!rela && h.size == 4)
				A = (uint64_t)(int64_t)(int32_t)(uint32_t)A;
			uint64_t v = S + A - (h.pcrel ? sec->addr + r_off : 0);
			for (unsigned b = 0; b < h.size; b++)
				copy[r_off + b] = (uint8_t)(v >> (8 * b));
			++*applied;
		}
	}
	*out = copy;
	return 0;
}
