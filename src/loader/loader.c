/* ELF images: identity, PT_LOAD segments, load bias, the unwind sections,
 * build-id / debuglink and the search for separate debug files.
 *
 * Invariant: once ldr_open_* returns an ldr_elf, every pointer it holds
 * (section data, the image) lies inside memory the ldr_elf owns — the
 * private read-only mapping of the file or our copy of the memory image, or
 * a decompressed buffer — and every offset/size taken from the file was
 * checked against the image size before it was used. Bytes of an ELF are
 * hostile: the ELF header, the program and section header tables are
 * bounds-checked here *before* libelf sees them (libelf silently drops a
 * truncated section table, which would hide corruption), then libelf does
 * the class-independent decoding (gelf_getphdr / gelf_getshdr / elf_strptr).
 * The Elf handle is ended before open returns; nothing keeps an fd.
 *
 * We never ask libelf to modify anything: elf_compress() on an elf_memory()
 * handle over a read-only mapping writes the section header in place and
 * faults (checked with elfutils 0.188), so SHF_COMPRESSED sections are
 * inflated here (ldr_inflate), for src/sym too.
 *
 * Trusts the caller for: valid pointers; nothing else. Cold: allocates.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <libdeflate.h>
#include <zstd.h>
#include <zlib.h>

#include "loader.h"
#include "../base/dwarf.h"

/* Largest section we inflate. Larger claims are corrupt, not slow. */
#define LDR_MAX_INFLATED ((uint64_t)1 << 30)
/* Deflate cannot expand by more than 1032:1; a claimed size beyond that
 * is corrupt, and rejecting it early avoids a huge allocation for a tiny
 * hostile input. */
#define LDR_MAX_INFLATE_RATIO 1032u
/* At most one buffer per tracked section. */
#define LDR_MAX_OWNED 8

#define PAGE_4K 4096u

struct ldr_priv {
	const uint8_t *image;
	size_t image_len;
	bool mapped;                 /* base_unmap_file() the image, else base_free() */
	uint8_t *owned[LDR_MAX_OWNED]; /* inflated section contents */
	size_t nowned;
};

/* What the pre-validation found in the ELF header. */
struct ldr_layout {
	bool is64;
	size_t phnum, shnum, shstrndx; /* after PN_XNUM / SHN_XINDEX escapes */
};

/* ---- Small helpers ------------------------------------------------------- */

static bool in_image(size_t image_len, uint64_t off, uint64_t len)
{
	return off <= image_len && len <= image_len - off;
}

/* Concatenate up to four strings (NULL ones are skipped). */
static char *str_cat4(const char *a, const char *b, const char *c, const char *d)
{
	const char *parts[4] = { a, b, c, d };
	size_t n = 1;
	for (size_t i = 0; i < 4; i++)
		if (parts[i])
			n += strlen(parts[i]);
	char *s = base_alloc(n);
	if (!s)
		return NULL;
	char *w = s;
	for (size_t i = 0; i < 4; i++) {
		if (!parts[i])
			continue;
		size_t l = strlen(parts[i]);
		memcpy(w, parts[i], l);
		w += l;
	}
	*w = '\0';
	return s;
}

static int priv_own(struct ldr_priv *pv, uint8_t *p)
{
	if (pv->nowned >= LDR_MAX_OWNED)
		return BK_E_LIMIT; /* cannot happen: one per tracked section */
	pv->owned[pv->nowned++] = p;
	return 0;
}

/* ---- Header pre-validation ------------------------------------------------ */

/* Checks e_ident, the header size and that both header tables lie inside the
 * image, resolving the PN_XNUM / SHN_XINDEX escapes through section 0. */
static int check_layout(const uint8_t *img, size_t len, struct ldr_layout *lay)
{
	if (len < SELFMAG || memcmp(img, ELFMAG, SELFMAG) != 0)
		return BK_E_NOT_ELF;
	if (len < EI_NIDENT)
		return BK_CORRUPT;
	uint8_t cls = img[EI_CLASS], data = img[EI_DATA];
	if (cls != ELFCLASS32 && cls != ELFCLASS64)
		return BK_CORRUPT;
	if (data == ELFDATA2MSB)
		return BK_E_UNSUPPORTED;
	if (data != ELFDATA2LSB || img[EI_VERSION] != EV_CURRENT)
		return BK_CORRUPT;

	bool is64 = cls == ELFCLASS64;
	size_t ehdr_size = is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	size_t phent = is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr);
	size_t shent = is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	if (len < ehdr_size)
		return BK_CORRUPT;

	uint64_t phoff, shoff;
	uint16_t e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx;
	if (is64) {
		phoff = base_rd_le(img + offsetof(Elf64_Ehdr, e_phoff), 8);
		shoff = base_rd_le(img + offsetof(Elf64_Ehdr, e_shoff), 8);
		e_phentsize = (uint16_t)base_rd_le(img + offsetof(Elf64_Ehdr, e_phentsize), 2);
		e_phnum = (uint16_t)base_rd_le(img + offsetof(Elf64_Ehdr, e_phnum), 2);
		e_shentsize = (uint16_t)base_rd_le(img + offsetof(Elf64_Ehdr, e_shentsize), 2);
		e_shnum = (uint16_t)base_rd_le(img + offsetof(Elf64_Ehdr, e_shnum), 2);
		e_shstrndx = (uint16_t)base_rd_le(img + offsetof(Elf64_Ehdr, e_shstrndx), 2);
	} else {
		phoff = base_rd_le(img + offsetof(Elf32_Ehdr, e_phoff), 4);
		shoff = base_rd_le(img + offsetof(Elf32_Ehdr, e_shoff), 4);
		e_phentsize = (uint16_t)base_rd_le(img + offsetof(Elf32_Ehdr, e_phentsize), 2);
		e_phnum = (uint16_t)base_rd_le(img + offsetof(Elf32_Ehdr, e_phnum), 2);
		e_shentsize = (uint16_t)base_rd_le(img + offsetof(Elf32_Ehdr, e_shentsize), 2);
		e_shnum = (uint16_t)base_rd_le(img + offsetof(Elf32_Ehdr, e_shnum), 2);
		e_shstrndx = (uint16_t)base_rd_le(img + offsetof(Elf32_Ehdr, e_shstrndx), 2);
	}

	/* Section 0 carries the escaped counts (gABI "Extended section numbering"). */
	uint64_t sh0_size = 0, sh0_link = 0, sh0_info = 0;
	size_t shnum = 0, shstrndx = 0;
	if (shoff != 0) {
		if (e_shentsize != shent || !in_image(len, shoff, shent))
			return BK_CORRUPT;
		const uint8_t *sh0 = img + shoff;
		if (is64) {
			sh0_size = base_rd_le(sh0 + offsetof(Elf64_Shdr, sh_size), 8);
			sh0_link = base_rd_le(sh0 + offsetof(Elf64_Shdr, sh_link), 4);
			sh0_info = base_rd_le(sh0 + offsetof(Elf64_Shdr, sh_info), 4);
		} else {
			sh0_size = base_rd_le(sh0 + offsetof(Elf32_Shdr, sh_size), 4);
			sh0_link = base_rd_le(sh0 + offsetof(Elf32_Shdr, sh_link), 4);
			sh0_info = base_rd_le(sh0 + offsetof(Elf32_Shdr, sh_info), 4);
		}
		uint64_t n = e_shnum ? e_shnum : sh0_size;
		if (n > (len - shoff) / shent)
			return BK_CORRUPT;
		shnum = (size_t)n;
		uint64_t x = e_shstrndx == SHN_XINDEX ? sh0_link : e_shstrndx;
		if (x != SHN_UNDEF && x >= shnum)
			return BK_CORRUPT;
		shstrndx = (size_t)x;
	} else if (e_shnum != 0) {
		return BK_CORRUPT; /* a section table at offset 0 would be the ELF header */
	}

	uint64_t phnum = e_phnum;
	if (e_phnum == PN_XNUM) {
		if (shnum == 0)
			return BK_CORRUPT;
		phnum = sh0_info;
	}
	if (phnum != 0) {
		if (e_phentsize != phent || phoff > len || phnum > (len - phoff) / phent)
			return BK_CORRUPT;
	}

	lay->is64 = is64;
	lay->phnum = (size_t)phnum;
	lay->shnum = shnum;
	lay->shstrndx = shstrndx;
	return 0;
}

/* ---- Compressed sections -------------------------------------------------- */

#ifndef ELFCOMPRESS_ZSTD
#define ELFCOMPRESS_ZSTD 2 /* the gABI's since 2022; glibc 2.36's elf.h lacks it */
#endif

/* Where a compressed section's stream starts, how long its contents claim
 * to be, and how it is compressed: SHF_COMPRESSED contents are an
 * Elf32/64_Chdr (ch_type ELFCOMPRESS_ZLIB or ELFCOMPRESS_ZSTD) then the
 * stream, a legacy .zdebug_* section "ZLIB", an 8-byte big-endian size, a
 * zlib stream. Another ch_type gives BK_E_UNSUPPORTED, which fill_section
 * turns into "section absent" (counted: ldr_elf.unknown_compression) so
 * the rest of the file stays usable. */
static int z_header(const uint8_t *p, size_t len, bool is64, bool zdebug, size_t *stream_off,
		    uint64_t *size, uint32_t *type)
{
	*type = ELFCOMPRESS_ZLIB;
	if (zdebug) {
		if (len < 12 || memcmp(p, "ZLIB", 4) != 0)
			return BK_CORRUPT;
		*size = 0;
		for (int i = 4; i < 12; i++)
			*size = *size << 8 | p[i];
		*stream_off = 12;
	} else {
		size_t chdr = is64 ? sizeof(Elf64_Chdr) : sizeof(Elf32_Chdr);
		if (len < chdr)
			return BK_CORRUPT;
		*type = (uint32_t)base_rd_le(p, 4);
		if (*type != ELFCOMPRESS_ZLIB && *type != ELFCOMPRESS_ZSTD)
			return BK_E_UNSUPPORTED;
		*size = is64 ? base_rd_le(p + offsetof(Elf64_Chdr, ch_size), 8)
			     : base_rd_le(p + offsetof(Elf32_Chdr, ch_size), 4);
		*stream_off = chdr;
	}
	if (*size > LDR_MAX_INFLATED || *size / LDR_MAX_INFLATE_RATIO > len - *stream_off + 1)
		return BK_CORRUPT;
	return 0;
}

static int inflated_size(const uint8_t *p, size_t len, bool is64, bool zdebug, size_t *out_len)
{
	size_t off;
	uint64_t size;
	uint32_t type;
	int err = z_header(p, len, is64, zdebug, &off, &size, &type);
	*out_len = err ? 0 : (size_t)size;
	return err;
}

/* Fault in the pages of a large new buffer with one system call instead
 * of one page fault per 4 KiB page as the inflater first writes them (on
 * some virtual machines a fault costs microseconds, and a debug section is
 * thousands of pages), as transparent huge pages where the kernel allows.
 * Advice only: failure (an older kernel) changes nothing. */
static void prefault(uint8_t *p, size_t len)
{
	const uintptr_t page = PAGE_4K, huge = (uintptr_t)2 << 20;
	if (len < 16 * page)
		return;
	uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1), hi = ((uintptr_t)p + len) & ~(page - 1);
	uintptr_t hlo = ((uintptr_t)p + huge - 1) & ~(huge - 1), hhi = ((uintptr_t)p + len) & ~(huge - 1);
	if (hlo < hhi)
		(void)madvise((void *)hlo, hhi - hlo, MADV_HUGEPAGE);
#ifdef MADV_POPULATE_WRITE
	if (lo < hi)
		(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#endif
}

/* The stream must give exactly OUT_LEN bytes. zlib (RFC 1950: its
 * Adler-32 is checked) by libdeflate, which decodes a whole buffer 2-3x
 * faster than zlib's streaming inflate, which matters for debug sections of
 * megabytes. Its decompressor state (~10 KiB) comes from malloc, not the
 * funnel: the only way to redirect it in libdeflate 1.14 is a process-wide
 * hook, which a library must not set. zstd (RFC 8878; a frame's checksum
 * is checked when it has one) by libzstd's one-shot ZSTD_decompress, whose
 * context also comes from malloc; a section may hold several frames, and
 * all must fill OUT_LEN exactly. */
static int inflate_to(const uint8_t *p, size_t len, bool is64, bool zdebug, uint8_t *out,
		   size_t out_len)
{
	size_t off;
	uint64_t size;
	uint32_t type;
	int err = z_header(p, len, is64, zdebug, &off, &size, &type);
	if (err)
		return err;
	if (size != out_len)
		return BK_E_INVAL;
	prefault(out, out_len);
	if (type == ELFCOMPRESS_ZSTD) {
		size_t got = ZSTD_decompress(out, out_len, p + off, len - off);
		return !ZSTD_isError(got) && got == out_len ? 0 : BK_CORRUPT;
	}
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	if (!d)
		return BK_E_NOMEM;
	/* No actual-size pointer: anything but exactly OUT_LEN bytes fails. */
	enum libdeflate_result r = libdeflate_zlib_decompress(d, p + off, len - off, out, out_len,
							      NULL);
	libdeflate_free_decompressor(d);
	return r == LIBDEFLATE_SUCCESS ? 0 : BK_CORRUPT;
}

int ldr_inflate(const uint8_t *p, size_t len, bool is64, bool zdebug, uint8_t **out,
		size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	size_t size;
	int err = inflated_size(p, len, is64, zdebug, &size);
	if (err)
		return err;
	uint8_t *dst = base_alloc(size ? size : 1);
	if (!dst)
		return BK_E_NOMEM;
	if ((err = inflate_to(p, len, is64, zdebug, dst, size))) {
		base_free(dst);
		return err;
	}
	*out = dst;
	*out_len = size;
	return 0;
}

/* ---- Notes and debuglink --------------------------------------------------- */

/* Scan one note area for NT_GNU_BUILD_ID. The area is in the image; a
 * malformed note ends the scan without error (notes are advisory). */
static void scan_notes(struct ldr_elf *e, const uint8_t *p, size_t len, uint64_t align)
{
	size_t a = align == 8 ? 8 : 4;
	struct buf b = buf_make(p, len);
	while (e->build_id_len == 0 && buf_left(&b) >= 12) {
		uint32_t namesz = 0, descsz = 0, type = 0;
		if (buf_u32(&b, &namesz) || buf_u32(&b, &descsz) || buf_u32(&b, &type))
			return;
		const uint8_t *name = b.p;
		if (buf_skip(&b, namesz))
			return;
		size_t pad = (a - (size_t)(b.p - p) % a) % a;
		if (buf_skip(&b, pad < buf_left(&b) ? pad : buf_left(&b)))
			return;
		const uint8_t *desc = b.p;
		if (buf_skip(&b, descsz))
			return;
		pad = (a - (size_t)(b.p - p) % a) % a;
		buf_skip(&b, pad < buf_left(&b) ? pad : buf_left(&b));
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
		    descsz > 0 && descsz <= LDR_MAX_BUILD_ID) {
			memcpy(e->build_id, desc, descsz);
			e->build_id_len = descsz;
		}
	}
}

/* .gnu_debuglink: NUL-terminated file name, pad to 4, CRC32. */
static int parse_debuglink(struct ldr_elf *e, const uint8_t *p, size_t len)
{
	const uint8_t *nul = memchr(p, 0, len);
	if (!nul || nul == p)
		return 0; /* malformed: ignore, as for notes */
	size_t crc_off = ((size_t)(nul - p) + 1 + 3) & ~(size_t)3;
	if (crc_off > len || len - crc_off < 4)
		return 0;
	char *name = base_strdup((const char *)p);
	if (!name)
		return BK_E_NOMEM;
	e->debuglink = name;
	e->debuglink_crc = (uint32_t)base_rd_le(p + crc_off, 4);
	return 0;
}

/* ---- .eh_frame through PT_GNU_EH_FRAME ------------------------------------- */

/* The PT_LOAD whose file bytes hold VADDR: file offset and bytes left. */
static bool seg_file_span(const struct ldr_elf *e, uint64_t vaddr, uint64_t *off, uint64_t *avail)
{
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ldr_segment *s = &e->segs[i];
		if (vaddr >= s->vaddr && vaddr - s->vaddr < s->filesz) {
			*off = s->file_off + (vaddr - s->vaddr);
			*avail = s->filesz - (vaddr - s->vaddr);
			return true;
		}
	}
	return false;
}

/* Fill .eh_frame_hdr from the segment when no section header names it, and
 * .eh_frame from its eh_frame_ptr when no section header names that. A
 * header we cannot follow leaves the section absent: unwind data is the
 * CFI layer's to judge, not a reason to refuse the file. */
static void eh_from_segment(struct ldr_elf *e, const uint8_t *img, bool hdr_shdr, bool eh_shdr)
{
	uint64_t off, avail;
	if (!hdr_shdr && e->has_eh_frame_hdr_seg &&
	    seg_file_span(e, e->eh_frame_hdr_vaddr, &off, &avail)) {
		struct ldr_section *h = &e->eh_frame_hdr;
		h->present = true;
		h->data = img + off;
		h->len = (size_t)(e->eh_frame_hdr_memsz < avail ? e->eh_frame_hdr_memsz : avail);
		h->addr = e->eh_frame_hdr_vaddr;
		h->file_off = off;
	}
	if (eh_shdr || !e->eh_frame_hdr.data)
		return;

	/* LSB: version, eh_frame_ptr_enc, fde_count_enc, table_enc, eh_frame_ptr. */
	const struct ldr_section *h = &e->eh_frame_hdr;
	struct buf b = buf_make(h->data, h->len);
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t eh_addr;
	if (buf_u8(&b, &version) || version != 1 || buf_u8(&b, &ptr_enc) ||
	    buf_u8(&b, &count_enc) || buf_u8(&b, &table_enc) || ptr_enc == DW_EH_PE_omit ||
	    (ptr_enc & DW_EH_PE_indirect))
		return;
	/* pcrel is relative to the field, datarel to the header's start. */
	struct base_ptr_ctx ctx = { .sec_data = h->data, .sec_addr = h->addr,
				    .data_addr = h->addr, .addr_size = e->addr_size };
	if (base_read_pointer(&b, ptr_enc, &ctx, &eh_addr))
		return;
	if (!seg_file_span(e, eh_addr, &off, &avail) || avail > SIZE_MAX)
		return;
	struct ldr_section *s = &e->eh_frame;
	s->present = true;
	s->data = img + off;
	s->len = (size_t)avail;
	s->addr = eh_addr;
	s->file_off = off;
}

/* ---- Open ------------------------------------------------------------------ */

enum { SEC_EH_FRAME, SEC_EH_FRAME_HDR, SEC_DEBUG_FRAME, SEC_TEXT, SEC_GOT, SEC_ZDEBUG_FRAME, SEC_N };

static const char *const tracked_names[SEC_N] = {
	".eh_frame", ".eh_frame_hdr", ".debug_frame", ".text", ".got", ".zdebug_frame",
};

static int read_segments(struct ldr_elf *e, Elf *elf, const struct ldr_layout *lay, size_t len)
{
	size_t nload = 0;
	for (size_t i = 0; i < lay->phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return BK_CORRUPT;
		if (ph.p_filesz && !in_image(len, ph.p_offset, ph.p_filesz))
			return BK_CORRUPT;
		if (ph.p_type == PT_LOAD) {
			if (ph.p_filesz > ph.p_memsz || ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
				return BK_CORRUPT;
			nload++;
		}
	}
	if (nload) {
		e->segs = base_calloc(nload, sizeof(*e->segs));
		if (!e->segs)
			return BK_E_NOMEM;
	}

	bool have_min = false;
	uint64_t min_vaddr = 0; /* lowest p_vaddr; e->min_vaddr is it rounded */
	for (size_t i = 0; i < lay->phnum; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return BK_CORRUPT;
		switch (ph.p_type) {
		case PT_LOAD: {
			struct ldr_segment *s = &e->segs[e->nsegs++];
			s->vaddr = ph.p_vaddr;
			s->memsz = ph.p_memsz;
			s->file_off = ph.p_offset;
			s->filesz = ph.p_filesz;
			s->flags = ph.p_flags;
			if (!have_min || ph.p_vaddr < min_vaddr) {
				uint64_t align = ph.p_align > 1 ? ph.p_align : PAGE_4K;
				min_vaddr = ph.p_vaddr;
				e->min_vaddr = ph.p_vaddr - ph.p_vaddr % align;
				have_min = true;
			}
			break;
		}
		case PT_GNU_EH_FRAME:
			e->has_eh_frame_hdr_seg = true;
			e->eh_frame_hdr_vaddr = ph.p_vaddr;
			e->eh_frame_hdr_memsz = ph.p_memsz;
			break;
		default:
			break;
		}
	}
	return 0;
}

static int fill_section(struct ldr_elf *e, struct ldr_priv *pv, int which, const GElf_Shdr *sh,
			const uint8_t *img)
{
	struct ldr_section *s;
	switch (which) {
	case SEC_EH_FRAME: s = &e->eh_frame; break;
	case SEC_EH_FRAME_HDR: s = &e->eh_frame_hdr; break;
	case SEC_DEBUG_FRAME:
	case SEC_ZDEBUG_FRAME: s = &e->debug_frame; break;
	case SEC_TEXT: s = &e->text; break;
	default: s = &e->got; break;
	}
	/* SHT_NOBITS (e.g. .eh_frame in an --only-keep-debug file): absent, so
	 * nobody reads bytes that are not there. */
	if (sh->sh_type == SHT_NOBITS)
		return 0;

	/* Only non-empty sections had their offset checked against the image. */
	const uint8_t *p = sh->sh_size ? img + sh->sh_offset : img;
	size_t len = (size_t)sh->sh_size;
	uint8_t *inflated = NULL;
	size_t inflated_len = 0;
	int err = 0;
	if ((sh->sh_flags & SHF_COMPRESSED) || which == SEC_ZDEBUG_FRAME)
		err = ldr_inflate(p, len, e->elf_class == ELFCLASS64, !(sh->sh_flags & SHF_COMPRESSED),
				  &inflated, &inflated_len);
	if (err == BK_E_UNSUPPORTED) { /* a compression we do not know: the section is absent */
		e->unknown_compression++;
		return 0;
	}
	if (err)
		return err;
	if (inflated) {
		err = priv_own(pv, inflated);
		if (err) {
			base_free(inflated);
			return err;
		}
		p = inflated;
		len = inflated_len;
	}
	s->present = true;
	s->data = p;
	s->len = len;
	s->addr = sh->sh_addr;
	s->file_off = sh->sh_offset;
	s->was_compressed = inflated != NULL;
	return 0;
}

static int read_sections(struct ldr_elf *e, struct ldr_priv *pv, Elf *elf,
			 const struct ldr_layout *lay, const uint8_t *img, size_t len)
{
	size_t found[SEC_N] = { 0 }; /* section index, 0: none */
	GElf_Shdr shdrs[SEC_N];
	size_t link_idx = 0;
	GElf_Shdr link_sh = { 0 };

	for (size_t i = 1; i < lay->shnum; i++) {
		Elf_Scn *scn = elf_getscn(elf, i);
		GElf_Shdr sh;
		if (!scn || !gelf_getshdr(scn, &sh))
			return BK_CORRUPT;
		if (sh.sh_type != SHT_NOBITS && sh.sh_size &&
		    !in_image(len, sh.sh_offset, sh.sh_size))
			return BK_CORRUPT;
		if (sh.sh_type == SHT_NOTE && sh.sh_size)
			scan_notes(e, img + sh.sh_offset, (size_t)sh.sh_size, sh.sh_addralign);
		if (lay->shstrndx == SHN_UNDEF)
			continue;
		const char *name = elf_strptr(elf, lay->shstrndx, sh.sh_name);
		if (!name)
			continue;
		for (int k = 0; k < SEC_N; k++) {
			if (!found[k] && strcmp(name, tracked_names[k]) == 0) {
				found[k] = i;
				shdrs[k] = sh;
			}
		}
		if (!link_idx && sh.sh_type != SHT_NOBITS && strcmp(name, ".gnu_debuglink") == 0) {
			link_idx = i;
			link_sh = sh;
		}
	}

	for (int k = 0; k < SEC_N; k++) {
		if (!found[k] || (k == SEC_ZDEBUG_FRAME && found[SEC_DEBUG_FRAME]))
			continue;
		int err = fill_section(e, pv, k, &shdrs[k], img);
		if (err)
			return err;
	}
	if (link_idx && link_sh.sh_size) {
		int err = parse_debuglink(e, img + link_sh.sh_offset, (size_t)link_sh.sh_size);
		if (err)
			return err;
	}
	eh_from_segment(e, img, found[SEC_EH_FRAME_HDR] != 0, found[SEC_EH_FRAME] != 0);
	return 0;
}

/* Notes from PT_NOTE segments, when no SHT_NOTE section had a build-id
 * (sections first: in a debug file the segments may describe bytes that
 * were dropped). */
static int read_note_segments(struct ldr_elf *e, Elf *elf, const struct ldr_layout *lay,
			      const uint8_t *img)
{
	for (size_t i = 0; i < lay->phnum && e->build_id_len == 0; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			return BK_CORRUPT;
		if (ph.p_type == PT_NOTE && ph.p_filesz)
			scan_notes(e, img + ph.p_offset, (size_t)ph.p_filesz, ph.p_align);
	}
	return 0;
}

static int parse_image(struct ldr_elf *e, struct ldr_priv *pv)
{
	const uint8_t *img = pv->image;
	size_t len = pv->image_len;
	struct ldr_layout lay;
	int err = check_layout(img, len, &lay);
	if (err)
		return err;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return BK_E_UNSUPPORTED;
	/* ELF_C_READ_MMAP semantics: libelf reads the image in place and never
	 * writes to it unless asked to modify, which we never do. */
	Elf *elf = elf_memory((char *)img, len);
	if (!elf)
		return BK_CORRUPT;
	GElf_Ehdr eh;
	size_t n;
	err = BK_CORRUPT;
	if (elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh))
		goto out;
	/* libelf must agree with the pre-validation about the tables. */
	if (elf_getphdrnum(elf, &n) || n != lay.phnum)
		goto out;
	if (elf_getshdrnum(elf, &n) || n != lay.shnum)
		goto out;

	e->machine = eh.e_machine;
	e->type = eh.e_type;
	e->elf_class = lay.is64 ? ELFCLASS64 : ELFCLASS32;
	e->addr_size = lay.is64 ? 8 : 4;
	e->entry = eh.e_entry;
	e->arch = arch_from_elf_machine(eh.e_machine);
	if (e->arch && e->arch->addr_size != e->addr_size)
		e->arch = NULL; /* e.g. x32 or ILP32: not an ABI we unwind */

	err = read_segments(e, elf, &lay, len);
	if (!err)
		err = read_sections(e, pv, elf, &lay, img, len);
	if (!err)
		err = read_note_segments(e, elf, &lay, img);
out:
	elf_end(elf);
	return err;
}

/* Takes ownership of the image in every case. */
static int open_image(const uint8_t *img, size_t len, bool mapped, char *path,
		      struct ldr_elf **out)
{
	struct ldr_elf *e = base_calloc(1, sizeof(*e));
	struct ldr_priv *pv = e ? base_calloc(1, sizeof(*pv)) : NULL;
	if (!pv) {
		base_free(e);
		base_free(path);
		if (mapped)
			base_unmap_file(img, len);
		else
			base_free((void *)img);
		return BK_E_NOMEM;
	}
	pv->image = img;
	pv->image_len = len;
	pv->mapped = mapped;
	e->priv = pv;
	e->path = path;
	int err = parse_image(e, pv);
	if (err) {
		ldr_close(e);
		return err;
	}
	*out = e;
	return 0;
}

int ldr_open_path(const char *path, struct ldr_elf **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (!path)
		return BK_E_INVAL;
	const uint8_t *map;
	size_t len;
	int err = base_map_file(path, &map, &len);
	if (err)
		return err;
	char *copy = base_strdup(path);
	if (!copy) {
		base_unmap_file(map, len);
		return BK_E_NOMEM;
	}
	return open_image(map, len, true, copy, out);
}

int ldr_open_memory(const void *image, size_t len, struct ldr_elf **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (len == 0)
		return BK_E_NOT_ELF;
	if (!image)
		return BK_E_INVAL;
	uint8_t *copy = base_alloc(len);
	if (!copy)
		return BK_E_NOMEM;
	memcpy(copy, image, len);
	return open_image(copy, len, false, NULL, out);
}

void ldr_close(struct ldr_elf *e)
{
	if (!e)
		return;
	struct ldr_priv *pv = e->priv;
	if (pv) {
		if (pv->mapped)
			base_unmap_file(pv->image, pv->image_len);
		else
			base_free((void *)pv->image);
		for (size_t i = 0; i < pv->nowned; i++)
			base_free(pv->owned[i]);
		base_free(pv);
	}
	base_free(e->segs);
	base_free(e->debuglink);
	base_free(e->path);
	base_free(e);
}

/* ---- Addresses -------------------------------------------------------------- */

int64_t ldr_load_bias(const struct ldr_elf *e, uint64_t runtime_base)
{
	return (int64_t)(runtime_base - e->min_vaddr);
}

int ldr_read_vaddr(const struct ldr_elf *e, uint64_t vaddr, void *dst, size_t len)
{
	const struct ldr_priv *pv = e->priv;
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ldr_segment *s = &e->segs[i];
		if (vaddr < s->vaddr)
			continue;
		uint64_t rel = vaddr - s->vaddr;
		if (rel > s->memsz || len > s->memsz - rel)
			continue;
		/* The segment's file bytes were checked against the image at open. */
		size_t from_file = 0;
		if (rel < s->filesz)
			from_file = (size_t)(s->filesz - rel < len ? s->filesz - rel : len);
		if (from_file)
			memcpy(dst, pv->image + s->file_off + rel, from_file);
		if (len > from_file)
			memset((uint8_t *)dst + from_file, 0, len - from_file); /* .bss */
		return 0;
	}
	return BK_E_MEMORY;
}

int ldr_mem_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	return ldr_read_vaddr(ctx, addr, dst, len);
}

/* ---- Separate debug files -------------------------------------------------- */

uint32_t ldr_crc32(uint32_t crc, const uint8_t *buf, size_t len)
{
	while (len > 0) {
		uInt chunk = len > (1u << 30) ? (1u << 30) : (uInt)len;
		crc = (uint32_t)crc32(crc, buf, chunk);
		buf += chunk;
		len -= chunk;
	}
	return crc;
}

/* The build-id decides when ELF has one (as elfutils does: a matching CRC
 * cannot rescue a different build); otherwise the debuglink CRC. */
static bool debug_matches(const struct ldr_elf *elf, const struct ldr_elf *cand, bool by_link)
{
	if (elf->build_id_len)
		return cand->build_id_len == elf->build_id_len &&
		       memcmp(cand->build_id, elf->build_id, elf->build_id_len) == 0;
	if (!by_link)
		return false;
	const struct ldr_priv *pv = cand->priv;
	return ldr_crc32(0, pv->image, pv->image_len) == elf->debuglink_crc;
}

/* BK_E_NOT_FOUND unless PATH opens and matches ELF (NULL: any ELF file
 * matches); only BK_E_NOMEM is passed up. */
static int try_debug(const struct ldr_elf *elf, const char *path, bool by_link,
		     const struct stat *self, struct ldr_elf **out)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return BK_E_NOT_FOUND;
	if (self && st.st_dev == self->st_dev && st.st_ino == self->st_ino)
		return BK_E_NOT_FOUND; /* the debuglink names the file itself */
	struct ldr_elf *cand;
	int err = ldr_open_path(path, &cand);
	if (err)
		return err == BK_E_NOMEM ? err : BK_E_NOT_FOUND;
	if (elf && !debug_matches(elf, cand, by_link)) {
		ldr_close(cand);
		return BK_E_NOT_FOUND;
	}
	*out = cand;
	return 0;
}

static int debug_by_build_id(const struct ldr_elf *elf, const char *root, struct ldr_elf **out)
{
	static const char hexd[] = "0123456789abcdef";
	char hex[2 * LDR_MAX_BUILD_ID + 1];
	if (elf->build_id_len < 2)
		return BK_E_NOT_FOUND;
	for (size_t i = 0; i < elf->build_id_len; i++) {
		hex[2 * i] = hexd[elf->build_id[i] >> 4];
		hex[2 * i + 1] = hexd[elf->build_id[i] & 15];
	}
	hex[2 * elf->build_id_len] = '\0';
	char xx[4] = { hex[0], hex[1], '/', '\0' };
	char *path = str_cat4(root, "/.build-id/", xx, NULL);
	char *full = path ? str_cat4(path, hex + 2, ".debug", NULL) : NULL;
	base_free(path);
	if (!full)
		return BK_E_NOMEM;
	int err = try_debug(elf, full, false, NULL, out);
	base_free(full);
	return err;
}

static int debug_by_link(const struct ldr_elf *elf, const char *root, struct ldr_elf **out)
{
	if (!elf->debuglink || !elf->path)
		return BK_E_NOT_FOUND;
	/* DIR is the directory of the real file, as gdb and elfutils use. */
	char *dir = base_alloc(PATH_MAX);
	if (!dir)
		return BK_E_NOMEM;
	if (!realpath(elf->path, dir)) {
		size_t n = strlen(elf->path);
		if (n >= PATH_MAX) {
			base_free(dir);
			return BK_E_NOT_FOUND;
		}
		memcpy(dir, elf->path, n + 1);
	}
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0'; /* "/x" gives "", and "" + "/NAME" is "/NAME" */
	else
		strcpy(dir, ".");

	struct stat self_st;
	const struct stat *self = stat(elf->path, &self_st) == 0 ? &self_st : NULL;
	const char *name = elf->debuglink;
	char *cands[3] = {
		str_cat4(dir, "/", name, NULL),
		str_cat4(dir, "/.debug/", name, NULL),
		str_cat4(root, dir[0] == '/' ? "" : "/", dir, NULL),
	};
	base_free(dir);
	int err = BK_E_NOT_FOUND;
	if (!cands[0] || !cands[1] || !cands[2]) {
		err = BK_E_NOMEM;
	} else {
		char *full = str_cat4(cands[2], "/", name, NULL);
		base_free(cands[2]);
		cands[2] = full;
		if (!full)
			err = BK_E_NOMEM;
	}
	for (size_t i = 0; i < 3 && err == BK_E_NOT_FOUND; i++)
		err = try_debug(elf, cands[i], true, self, out);
	for (size_t i = 0; i < 3; i++)
		base_free(cands[i]);
	return err;
}

int (*ldr_debuginfod_fetch)(const uint8_t *build_id, size_t len, bool executable, char **path);

int ldr_open_debug_file(const struct ldr_elf *elf, const char *debug_root, struct ldr_elf **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (!elf)
		return BK_E_INVAL;
	const char *root = debug_root ? debug_root : "/usr/lib/debug";
	int err = debug_by_build_id(elf, root, out);
	if (err != BK_E_NOT_FOUND)
		return err;
	if ((err = debug_by_link(elf, root, out)) != BK_E_NOT_FOUND || !elf->build_id_len)
		return err;
	/* Last, the debuginfod servers, by build-id (checked again here). */
	char *path = NULL;
	if (!ldr_debuginfod_fetch ||
	    (err = ldr_debuginfod_fetch(elf->build_id, elf->build_id_len, false, &path)))
		return err;
	err = try_debug(elf, path, false, NULL, out);
	base_free(path);
	return err;
}

int ldr_open_alt_file(const char *owner, const char *name, const uint8_t *build_id,
		      size_t build_id_len, const char *debug_root, struct ldr_elf **out)
{
	if (!out || !name || !name[0] || build_id_len > LDR_MAX_BUILD_ID)
		return BK_E_INVAL;
	*out = NULL;
	/* The build-id the candidate must have, as debug_matches compares it:
	 * without one, the name alone decides (DWARF 5's .debug_sup). */
	struct ldr_elf want;
	memset(&want, 0, sizeof(want));
	memcpy(want.build_id, build_id, build_id_len);
	want.build_id_len = build_id_len;
	const char *root = debug_root ? debug_root : "/usr/lib/debug";
	char *cands[3] = { NULL, NULL, NULL };
	if (name[0] == '/') {
		cands[0] = str_cat4(name, NULL, NULL, NULL);
	} else if (owner) {
		char *dir = base_alloc(PATH_MAX);
		if (dir && realpath(owner, dir)) {
			char *slash = strrchr(dir, '/');
			if (slash)
				slash[1] = '\0';
			cands[0] = str_cat4(dir, name, NULL, NULL);
		}
		base_free(dir);
	}
	const char *base = strrchr(name, '/');
	cands[1] = str_cat4(root, "/.dwz/", base ? base + 1 : name, NULL);
	int err = BK_E_NOT_FOUND;
	for (size_t i = 0; i < 2 && err == BK_E_NOT_FOUND; i++)
		if (cands[i])
			err = try_debug(build_id_len ? &want : NULL, cands[i], false, NULL, out);
	base_free(cands[0]);
	base_free(cands[1]);
	if (err == BK_E_NOT_FOUND && build_id_len)
		err = debug_by_build_id(&want, root, out);
	return err;
}

void ldr_bytes(const struct ldr_elf *elf, const uint8_t **data, size_t *len)
{
	const struct ldr_priv *pv = elf->priv;
	*data = pv->image;
	*len = pv->image_len;
}
