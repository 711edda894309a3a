/* ldr_rel: relocatable objects (ET_REL) and symbols by name.
 *
 * Relocations are applied with each section at its sh_addr: S is the
 * symbol's section's sh_addr plus st_value (st_value alone for SHN_ABS), A
 * the addend, P the field's section's sh_addr plus its offset. In a .o
 * from a compiler every sh_addr is 0, so a function reads as its offset in
 * its own section: what readelf prints when it dumps a .o (`backstep dump`
 * relies on that). A JIT hands GDB its objects with sh_addr set to where
 * each section was loaded (LLVM's RuntimeDyld does): the same rule then
 * gives the runtime addresses, and ldr_rel_link makes of such an object a
 * linked image, so the rest of the project reads it as any other file.
 *
 * The relocation types applied (the ones unwind and debug sections hold):
 *   x86-64   R_X86_64_64 S+A (8), R_X86_64_32/32S S+A (4),
 *            R_X86_64_PC32 S+A-P (4), R_X86_64_PC64 S+A-P (8)
 *   AArch64  R_AARCH64_ABS64 S+A (8), R_AARCH64_ABS32 S+A (4),
 *            R_AARCH64_PREL64 S+A-P (8), R_AARCH64_PREL32 S+A-P (4)
 * Others (those in code: the code that runs is in the target's memory, not
 * here) are counted, not applied; so is a relocation against a common
 * symbol. An undefined symbol's S is its st_value (0), as readelf has it. SHT_REL (implicit addends, read from the field) and
 * SHT_RELA alike; ELF64 and ELF32 little-endian.
 *
 * Trusts nothing in the bytes: every header, table and field is checked
 * against the image before it is read or written. Cold; allocates.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

#ifndef R_X86_64_PC64
#define R_X86_64_PC64 24
#endif
#ifndef R_AARCH64_ABS64
#define R_AARCH64_ABS64 257
#define R_AARCH64_ABS32 258
#define R_AARCH64_PREL64 260
#define R_AARCH64_PREL32 261
#endif

/* Sections past this count are not looked at (a JIT object has tens). */
#define REL_MAX_SECTIONS 65280u

/* How one relocation type writes its field. */
struct reloc_how {
	unsigned size; /* bytes written: 4 or 8; 0 not applied */
	bool pcrel;    /* S + A - P, else S + A */
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

/* The headers of an image, checked. */
struct rel_img {
	const uint8_t *f;
	size_t flen;
	bool is64;
	uint16_t machine, type;
	uint64_t shoff;
	uint16_t shentsize;
	size_t shnum;
};

/* One section header, the fields used. */
struct shdr {
	uint32_t name, type, link, info;
	uint64_t flags, addr, off, size, entsize;
};

static bool open_img(const void *image, size_t len, struct rel_img *im)
{
	const uint8_t *f = image;
	if (!f || len < 52 || memcmp(f, ELFMAG, SELFMAG) != 0 || f[EI_DATA] != ELFDATA2LSB ||
	    (f[EI_CLASS] != ELFCLASS64 && f[EI_CLASS] != ELFCLASS32))
		return false;
	im->f = f;
	im->flen = len;
	im->is64 = f[EI_CLASS] == ELFCLASS64;
	if (im->is64 && len < 64)
		return false;
	im->type = (uint16_t)base_rd_le(f + 16, 2);
	im->machine = (uint16_t)base_rd_le(f + 18, 2);
	im->shoff = im->is64 ? base_rd_le(f + 40, 8) : base_rd_le(f + 32, 4);
	im->shentsize = (uint16_t)base_rd_le(f + (im->is64 ? 58 : 46), 2);
	im->shnum = (size_t)base_rd_le(f + (im->is64 ? 60 : 48), 2);
	if (im->shnum == 0 || im->shnum > REL_MAX_SECTIONS ||
	    im->shentsize < (im->is64 ? 64u : 40u) || im->shoff > len ||
	    (len - im->shoff) / im->shentsize < im->shnum)
		return false;
	return true;
}

static bool read_shdr(const struct rel_img *im, size_t i, struct shdr *s)
{
	if (i >= im->shnum)
		return false;
	const uint8_t *p = im->f + im->shoff + (uint64_t)i * im->shentsize;
	s->name = (uint32_t)base_rd_le(p, 4);
	s->type = (uint32_t)base_rd_le(p + 4, 4);
	if (im->is64) {
		s->flags = base_rd_le(p + 8, 8);
		s->addr = base_rd_le(p + 16, 8);
		s->off = base_rd_le(p + 24, 8);
		s->size = base_rd_le(p + 32, 8);
		s->link = (uint32_t)base_rd_le(p + 40, 4);
		s->info = (uint32_t)base_rd_le(p + 44, 4);
		s->entsize = base_rd_le(p + 56, 8);
	} else {
		s->flags = base_rd_le(p + 8, 4);
		s->addr = base_rd_le(p + 12, 4);
		s->off = base_rd_le(p + 16, 4);
		s->size = base_rd_le(p + 20, 4);
		s->link = (uint32_t)base_rd_le(p + 24, 4);
		s->info = (uint32_t)base_rd_le(p + 28, 4);
		s->entsize = base_rd_le(p + 36, 4);
	}
	if (s->type == SHT_NOBITS)
		return s->off <= im->flen;
	return s->off <= im->flen && s->size <= im->flen - s->off;
}

/* One symbol of table SS, the fields used; false when outside it. */
static bool read_sym(const struct rel_img *im, const struct shdr *ss, uint64_t i, uint32_t *name,
		     uint16_t *shndx, uint64_t *value)
{
	size_t symsize = im->is64 ? 24u : 16u;
	if (ss->entsize != symsize || i >= ss->size / symsize)
		return false;
	const uint8_t *p = im->f + ss->off + i * symsize;
	*name = (uint32_t)base_rd_le(p, 4);
	if (im->is64) {
		*shndx = (uint16_t)base_rd_le(p + 6, 2);
		*value = base_rd_le(p + 8, 8);
	} else {
		*value = base_rd_le(p + 4, 4);
		*shndx = (uint16_t)base_rd_le(p + 14, 2);
	}
	return true;
}

/* The address S of symbol I of table SS: false when it has none (common,
 * a section index out of range). */
static bool sym_addr(const struct rel_img *im, const struct shdr *ss, uint64_t i, uint64_t *s)
{
	uint32_t name;
	uint16_t shndx;
	uint64_t value;
	if (i == 0) {
		*s = 0; /* no symbol: S = 0 */
		return true;
	}
	if (!read_sym(im, ss, i, &name, &shndx, &value))
		return false;
	if (shndx == SHN_ABS || shndx == SHN_UNDEF) {
		*s = value; /* undefined: 0, as readelf applies it */
		return true;
	}
	struct shdr sec;
	if (shndx >= SHN_LORESERVE || !read_shdr(im, shndx, &sec))
		return false;
	*s = sec.addr + value;
	return true;
}

/* Apply to DATA (LEN bytes: section TARGET's contents, at address ADDR)
 * every relocation of IM that targets TARGET. */
static void apply(const struct rel_img *im, size_t target, uint8_t *data, size_t len, uint64_t addr,
		  size_t *applied, size_t *skipped)
{
	for (size_t i = 1; i < im->shnum; i++) {
		struct shdr rs, ss;
		if (!read_shdr(im, i, &rs) || (rs.type != SHT_RELA && rs.type != SHT_REL) ||
		    rs.info != target)
			continue;
		bool rela = rs.type == SHT_RELA;
		size_t esize = im->is64 ? (rela ? 24u : 16u) : (rela ? 12u : 8u);
		if (rs.entsize != esize || !read_shdr(im, rs.link, &ss) ||
		    (ss.type != SHT_SYMTAB && ss.type != SHT_DYNSYM)) {
			*skipped += rs.entsize ? (size_t)(rs.size / rs.entsize) : 1;
			continue;
		}
		for (uint64_t off = 0; off + esize <= rs.size; off += esize) {
			const uint8_t *r = im->f + rs.off + off;
			uint64_t r_off = base_rd_le(r, im->is64 ? 8 : 4);
			uint64_t info = base_rd_le(r + (im->is64 ? 8 : 4), im->is64 ? 8 : 4);
			uint64_t symi = im->is64 ? info >> 32 : info >> 8;
			uint32_t type = (uint32_t)(im->is64 ? info & 0xffffffffu : info & 0xffu);
			struct reloc_how h = how_of(im->machine, type);
			uint64_t S;
			if (!h.size || r_off > len || len - r_off < h.size || !sym_addr(im, &ss, symi, &S)) {
				++*skipped;
				continue;
			}
			uint64_t A = rela ? base_rd_le(r + (im->is64 ? 16 : 8), im->is64 ? 8 : 4)
					  : base_rd_le(data + r_off, h.size);
			if (rela && !im->is64)
				A = (uint64_t)(int64_t)(int32_t)(uint32_t)A;
			if (!rela && h.size == 4)
				A = (uint64_t)(int64_t)(int32_t)(uint32_t)A;
			uint64_t v = S + A - (h.pcrel ? addr + r_off : 0);
			for (unsigned b = 0; b < h.size; b++)
				data[r_off + b] = (uint8_t)(v >> (8 * b));
			++*applied;
		}
	}
}

int ldr_rel_section(const struct ldr_elf *elf, const struct ldr_section *sec, uint8_t **out,
		    size_t *applied, size_t *skipped)
{
	*out = NULL;
	*applied = *skipped = 0;
	struct rel_img im;
	const uint8_t *f;
	size_t flen;
	ldr_bytes(elf, &f, &flen);
	if (elf->type != ET_REL || !sec->present || !sec->data || !open_img(f, flen, &im))
		return 0;
	/* The section's index: the one whose bytes start where SEC's do. */
	size_t target = 0;
	for (size_t i = 1; i < im.shnum && !target; i++) {
		struct shdr s;
		if (read_shdr(&im, i, &s) && s.type != SHT_NOBITS && s.off == sec->file_off)
			target = i;
	}
	if (!target)
		return 0;
	uint8_t *copy = base_alloc(sec->len ? sec->len : 1);
	if (!copy)
		return BK_E_NOMEM;
	memcpy(copy, sec->data, sec->len);
	apply(&im, target, copy, sec->len, sec->addr, applied, skipped);
	if (!*applied && !*skipped) {
		base_free(copy);
		return 0;
	}
	*out = copy;
	return 0;
}

static void wr_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned b = 0; b < n; b++)
		p[b] = (uint8_t)(v >> (8 * b));
}

/* A loaded section, for the program headers. */
struct load {
	uint64_t addr;
	size_t index;
};

static int by_addr(const void *a, const void *b)
{
	const struct load *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

/* Whether section S gets a PT_LOAD in the linked image. */
static bool loaded(const struct shdr *s)
{
	return (s->flags & SHF_ALLOC) && s->addr && s->size;
}

int ldr_rel_link(const void *image, size_t len, struct ldr_rel_linked *out)
{
	memset(out, 0, sizeof(*out));
	struct rel_img im;
	if (!open_img(image, len, &im))
		return BK_E_NOT_ELF;
	if (im.type != ET_REL || !im.is64)
		return BK_E_UNSUPPORTED;
	size_t nload = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 1; i < im.shnum; i++) {
		struct shdr s;
		if (!read_shdr(&im, i, &s))
			return BK_E_CORRUPT;
		if (!loaded(&s))
			continue;
		if (s.addr + s.size < s.addr)
			return BK_E_CORRUPT;
		nload++;
		if ((s.flags & SHF_EXECINSTR) && s.type != SHT_NOBITS) {
			lo = s.addr < lo ? s.addr : lo;
			hi = s.addr + s.size > hi ? s.addr + s.size : hi;
		}
	}
	if (!nload || lo >= hi)
		return BK_E_NOT_FOUND; /* no code with an address: nothing to unwind */
	/* The copy, then the program headers after it (8-aligned). */
	size_t phoff = (len + 7) & ~(size_t)7;
	size_t total = phoff + nload * sizeof(Elf64_Phdr);
	uint8_t *o = base_calloc(1, total);
	if (!o)
		return BK_E_NOMEM;
	memcpy(o, image, len);
	for (size_t i = 1; i < im.shnum; i++) {
		struct shdr s;
		read_shdr(&im, i, &s);
		if (s.type == SHT_NOBITS || !s.size)
			continue;
		if (s.type == SHT_SYMTAB) {
			/* Defined symbols get their addresses. */
			for (uint64_t k = 1; k < s.size / 24; k++) {
				uint32_t name;
				uint16_t shndx;
				uint64_t value, S;
				if (read_sym(&im, &s, k, &name, &shndx, &value) && shndx != SHN_ABS &&
				    shndx != SHN_UNDEF && sym_addr(&im, &s, k, &S))
					wr_le(o + s.off + k * 24 + 8, S, 8);
			}
			continue;
		}
		if (s.type == SHT_RELA || s.type == SHT_REL)
			continue;
		apply(&im, i, o + s.off, (size_t)s.size, s.addr, &out->applied, &out->skipped);
	}
	/* Relocation sections are spent: a reader must not apply them again. */
	for (size_t i = 1; i < im.shnum; i++) {
		struct shdr s;
		read_shdr(&im, i, &s);
		if (s.type == SHT_RELA || s.type == SHT_REL)
			wr_le(o + im.shoff + i * im.shentsize + 4, SHT_NULL, 4);
	}
	/* Program headers, one per loaded section, by address. */
	struct load *ld = base_alloc(nload * sizeof(*ld));
	if (!ld) {
		base_free(o);
		return BK_E_NOMEM;
	}
	size_t n = 0;
	for (size_t i = 1; i < im.shnum; i++) {
		struct shdr s;
		read_shdr(&im, i, &s);
		if (loaded(&s))
			ld[n++] = (struct load){ s.addr, i };
	}
	qsort(ld, n, sizeof(*ld), by_addr);
	for (size_t k = 0; k < n; k++) {
		struct shdr s;
		read_shdr(&im, ld[k].index, &s);
		uint8_t *ph = o + phoff + k * sizeof(Elf64_Phdr);
		uint32_t flags = PF_R | ((s.flags & SHF_WRITE) ? PF_W : 0) |
				 ((s.flags & SHF_EXECINSTR) ? PF_X : 0);
		wr_le(ph, PT_LOAD, 4);
		wr_le(ph + 4, flags, 4);
		wr_le(ph + 8, s.type == SHT_NOBITS ? 0 : s.off, 8);
		wr_le(ph + 16, s.addr, 8);
		wr_le(ph + 24, s.addr, 8);
		wr_le(ph + 32, s.type == SHT_NOBITS ? 0 : s.size, 8);
		wr_le(ph + 40, s.size, 8);
		wr_le(ph + 48, 1, 8);
	}
	out->base = ld[0].addr;
	base_free(ld);
	wr_le(o + 16, ET_EXEC, 2);
	wr_le(o + 32, phoff, 8);
	wr_le(o + 54, sizeof(Elf64_Phdr), 2);
	wr_le(o + 56, nload, 2);
	out->image = o;
	out->len = total;
	out->code_lo = lo;
	out->code_hi = hi;
	return 0;
}

/* The GNU hash of NAME (the ELF extension's: h = h * 33 + c from 5381). */
static uint32_t gnu_hash(const char *name)
{
	uint32_t h = 5381;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = h * 33 + *p;
	return h;
}

/* NAME in dynamic symbol table SS (strings ST) through its .gnu.hash
 * section GH: 1 found (*VALUE), 0 not there, -1 the table cannot be used
 * (then the caller scans). The chain of the name's bucket is walked until
 * its end bit, bounded by the table. */
static int gnu_hash_find(const struct rel_img *im, const struct shdr *gh, const struct shdr *ss,
			 const struct shdr *st, const char *name, uint64_t *value)
{
	const uint8_t *g = im->f + gh->off;
	if (!im->is64 || gh->size < 16)
		return -1;
	uint32_t nbuckets = (uint32_t)base_rd_le(g, 4), symoffset = (uint32_t)base_rd_le(g + 4, 4);
	uint32_t bloom_size = (uint32_t)base_rd_le(g + 8, 4), shift = (uint32_t)base_rd_le(g + 12, 4);
	uint64_t nsyms = ss->size / 24;
	uint64_t buckets_at = 16 + (uint64_t)bloom_size * 8, chain_at = buckets_at + (uint64_t)nbuckets * 4;
	if (!nbuckets || !bloom_size || shift >= 64 || chain_at > gh->size || symoffset > nsyms)
		return -1;
	size_t nlen = strlen(name);
	uint32_t h = gnu_hash(name);
	uint64_t word = base_rd_le(g + 16 + (uint64_t)(h / 64 % bloom_size) * 8, 8);
	if (!((word >> (h % 64)) & (word >> ((h >> shift) % 64)) & 1))
		return 0; /* the Bloom filter says: not here */
	uint32_t i = (uint32_t)base_rd_le(g + buckets_at + (uint64_t)(h % nbuckets) * 4, 4);
	if (!i)
		return 0;
	if (i < symoffset)
		return -1;
	for (; i < nsyms; i++) {
		uint64_t c = chain_at + (uint64_t)(i - symoffset) * 4;
		if (c + 4 > gh->size)
			return -1;
		uint32_t ch = (uint32_t)base_rd_le(g + c, 4);
		uint32_t sname;
		uint16_t shndx;
		uint64_t v;
		if ((ch | 1) == (h | 1) && read_sym(im, ss, i, &sname, &shndx, &v) &&
		    shndx != SHN_UNDEF && sname < st->size && st->size - sname > nlen &&
		    memcmp(im->f + st->off + sname, name, nlen + 1) == 0) {
			*value = v;
			return 1;
		}
		if (ch & 1)
			return 0; /* the end of the bucket's chain */
	}
	return -1;
}

int ldr_find_symbol(const struct ldr_elf *elf, const char *name, int64_t want_size,
		    uint64_t *value)
{
	const uint8_t *f;
	size_t flen;
	ldr_bytes(elf, &f, &flen);
	struct rel_img im;
	if (!open_img(f, flen, &im))
		return BK_E_NOT_FOUND;
	size_t nlen = strlen(name);
	/* .dynsym first (what the dynamic linker exports), then .symtab. */
	for (int pass = 0; pass < 2; pass++) {
		uint32_t want = pass == 0 ? SHT_DYNSYM : SHT_SYMTAB;
		for (size_t i = 1; i < im.shnum; i++) {
			struct shdr ss, st;
			if (!read_shdr(&im, i, &ss) || ss.type != want || !read_shdr(&im, ss.link, &st) ||
			    st.type != SHT_STRTAB)
				continue;
			/* A dynamic table with a GNU hash: looked up, not scanned. */
			int found = -1;
			for (size_t k = 1; want == SHT_DYNSYM && found < 0 && k < im.shnum; k++) {
				struct shdr gh;
				if (read_shdr(&im, k, &gh) && gh.type == SHT_GNU_HASH && gh.link == i)
					found = gnu_hash_find(&im, &gh, &ss, &st, name, value);
			}
			if (found == 1)
				return 0;
			if (found == 0)
				continue;
			size_t symsize = im.is64 ? 24u : 16u;
			for (uint64_t k = 1; ss.entsize == symsize && k < ss.size / symsize; k++) {
				uint32_t sname;
				uint16_t shndx;
				uint64_t v;
				if (!read_sym(&im, &ss, k, &sname, &shndx, &v) || shndx == SHN_UNDEF ||
				    sname >= st.size || st.size - sname <= nlen)
					continue;
				/* The size, in the entry, spares reading the names of
				 * most symbols (a big .symtab's strings are megabytes). */
				uint64_t size = base_rd_le(f + ss.off + k * symsize + (im.is64 ? 16 : 8),
							   im.is64 ? 8 : 4);
				if (want_size >= 0 && size && size != (uint64_t)want_size)
					continue;
				const char *s = (const char *)f + st.off + sname;
				if (memcmp(s, name, nlen + 1) == 0) {
					*value = v;
					return 0;
				}
			}
		}
	}
	return BK_E_NOT_FOUND;
}
