/* An ELF file from its loaded image: the bytes of its PT_LOAD segments as a
 * process maps them (read from a live process or a core whose file is gone:
 * deleted, replaced, another machine's). The loader reads files, where a
 * segment sits at its file offset; in an image it sits at its virtual
 * address. Rebuild the file layout, then open that.
 *
 * The image starts at the lowest PT_LOAD page (file offset 0, where the ELF
 * and program headers are). Bytes the image lacks (gaps, pages a core left
 * out) are zeros; the caller says which pages those are, and an image that
 * lacks any byte of its unwind tables is refused (tables read from zeros
 * would be wrong, not absent). A section header table outside every
 * segment was never loaded: the rebuilt file has none, and the loader finds
 * .eh_frame through PT_GNU_EH_FRAME. The vDSO is one segment from file
 * offset 0 mapped whole, section headers included: its image is taken as
 * the file itself.
 */
#include <elf.h>
#include <stddef.h>

#include "loader.h"

/* The largest rebuilt file accepted. */
#define IMAGE_MAX (256u << 20)

/* Clear the section table fields of header H: no section headers. */
static void drop_section_table(uint8_t *h, bool is64)
{
	if (is64) {
		memset(h + offsetof(Elf64_Ehdr, e_shoff), 0, 8);
		memset(h + offsetof(Elf64_Ehdr, e_shnum), 0, 2);
		memset(h + offsetof(Elf64_Ehdr, e_shstrndx), 0, 2);
	} else {
		memset(h + offsetof(Elf32_Ehdr, e_shoff), 0, 4);
		memset(h + offsetof(Elf32_Ehdr, e_shnum), 0, 2);
		memset(h + offsetof(Elf32_Ehdr, e_shstrndx), 0, 2);
	}
}

/* The section table's extent in the file described by header H. */
static void section_table_extent(const uint8_t *h, bool is64, uint64_t *start, uint64_t *len)
{
	uint64_t off = 0;
	uint16_t n = 0, entsize = 0;
	if (is64) {
		memcpy(&off, h + offsetof(Elf64_Ehdr, e_shoff), 8);
		memcpy(&n, h + offsetof(Elf64_Ehdr, e_shnum), 2);
		memcpy(&entsize, h + offsetof(Elf64_Ehdr, e_shentsize), 2);
	} else {
		uint32_t off32;
		memcpy(&off32, h + offsetof(Elf32_Ehdr, e_shoff), 4);
		off = off32;
		memcpy(&n, h + offsetof(Elf32_Ehdr, e_shnum), 2);
		memcpy(&entsize, h + offsetof(Elf32_Ehdr, e_shentsize), 2);
	}
	*start = off;
	*len = (uint64_t)n * entsize;
}

/* Whether every byte of SEC (at its link address) is in the image. */
static bool section_present(const struct ldr_elf *e, const struct ldr_section *sec, size_t len,
			    const bool *absent, size_t page)
{
	if (!sec->present || !sec->len)
		return true;
	if (sec->addr < e->min_vaddr || sec->addr - e->min_vaddr > len ||
	    sec->len > len - (sec->addr - e->min_vaddr))
		return false;
	uint64_t from = sec->addr - e->min_vaddr, to = from + sec->len;
	for (uint64_t p = from / page; p <= (to - 1) / page; p++)
		if (absent[p])
			return false;
	return true;
}

int ldr_open_loaded(const void *image, size_t len, const bool *absent, size_t page,
		    struct ldr_elf **out)
{
	if (!image || !out)
		return BK_E_INVAL;
	*out = NULL;
	const uint8_t *img = image;
	if (len < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0)
		return BK_E_NOT_ELF;
	bool is64 = img[EI_CLASS] == ELFCLASS64;

	/* The program headers, read by the loader from the image with its
	 * section table fields cleared (whatever lies at e_shoff in an image
	 * is not the table). */
	uint8_t *copy = base_alloc(len);
	if (!copy)
		return BK_E_NOMEM;
	memcpy(copy, img, len);
	drop_section_table(copy, is64);
	struct ldr_elf *phdrs;
	int err = ldr_open_memory(copy, len, &phdrs);
	base_free(copy);
	if (err)
		return err;

	/* One segment from file offset 0 with no .bss (the vDSO): the kernel
	 * maps whole pages of the file, so the image is the file's first LEN
	 * bytes, section headers included when they lie within. (With a .bss
	 * the bytes past p_filesz are zeros, not the file's.) */
	bool whole = phdrs->nsegs == 1 && phdrs->segs[0].file_off == 0 &&
		     phdrs->segs[0].vaddr == phdrs->min_vaddr &&
		     phdrs->segs[0].memsz == phdrs->segs[0].filesz;
	uint64_t size = whole ? len : 0;
	for (size_t i = 0; i < phdrs->nsegs; i++) {
		const struct ldr_segment *sg = &phdrs->segs[i];
		if (sg->file_off + sg->filesz > size)
			size = sg->file_off + sg->filesz;
	}
	uint64_t sh_start, sh_len;
	section_table_extent(img, is64, &sh_start, &sh_len);
	bool keep_sections = false;
	err = BK_CORRUPT;
	uint8_t *file = NULL;
	if (size < sizeof(Elf64_Ehdr) || size > IMAGE_MAX)
		goto out;
	err = BK_E_NOMEM;
	if (!(file = base_calloc(1, (size_t)size)))
		goto out;
	for (size_t i = 0; i < phdrs->nsegs; i++) {
		const struct ldr_segment *sg = &phdrs->segs[i];
		uint64_t at = sg->vaddr - phdrs->min_vaddr, n = sg->filesz;
		if (sg->vaddr < phdrs->min_vaddr || at >= len)
			continue;
		if (n > len - at)
			n = len - at;
		memcpy(file + sg->file_off, img + at, (size_t)n);
		if (sh_len && sh_start >= sg->file_off && sh_start - sg->file_off <= sg->filesz &&
		    sh_len <= sg->filesz - (sh_start - sg->file_off))
			keep_sections = true;
	}
	if (whole) {
		memcpy(file, img, (size_t)size);
		keep_sections = sh_len && sh_start <= size && sh_len <= size - sh_start;
	}
	/* The headers come from the first segment (file offset 0); say what
	 * the section table is as the rules above decided. */
	memcpy(file, img, sizeof(Elf64_Ehdr) < size ? sizeof(Elf64_Ehdr) : (size_t)size);
	if (!keep_sections)
		drop_section_table(file, is64);
	err = ldr_open_memory(file, (size_t)size, out);
	if (!err && absent && page &&
	    !(section_present(*out, &(*out)->eh_frame_hdr, len, absent, page) &&
	      section_present(*out, &(*out)->eh_frame, len, absent, page))) {
		ldr_close(*out);
		*out = NULL;
		err = BK_E_MEMORY;
	}
out:
	base_free(file);
	ldr_close(phdrs);
	return err;
}
