/* Fuzz harness: ELF images through the loader (src/loader).
 *
 * Input: the bytes of an ELF file, opened with ldr_open_memory. When it
 * opens, every field the loader extracted is touched so that ASan sees any
 * pointer outside memory the ldr_elf owns: the bytes of each section are
 * summed, the build-id and the debuglink name read, PT_LOAD contents read
 * through ldr_read_vaddr at addresses around every segment's edges (into
 * buffers of exactly the requested size), ldr_load_bias computed. Then, as
 * the unwinder would, the file is wrapped as a bk_elf and a few PCs are
 * looked up in its .eh_frame / .debug_frame (bk_elf_row_at), which builds
 * the FDE tables over the sections the loader found — for a file without
 * section headers, an .eh_frame reaching to the end of its segment — and
 * follows DW_EH_PE_indirect through ldr_mem_read. bk_elf_close ends with
 * ldr_close. An image that opens is opened a second time with one of its
 * first allocations failing (base_alloc_fail_after), for the error paths.
 *
 * abort() marks a broken documented invariant: a build-id longer than
 * LDR_MAX_BUILD_ID, a segment with more file than memory bytes, a row that
 * does not cover its PC or whose expression bytes lie outside the section
 * data it came from.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind.h"

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_loader: invariant broken: %s\n", what);
		abort();
	}
}

static volatile uint64_t sink; /* keeps the sums from being optimised away */

static void touch_section(const struct ldr_section *s)
{
	if (!s->present)
		return;
	if (!s->data)
		return; /* SHT_NOBITS */
	uint64_t sum = 0;
	for (size_t i = 0; i < s->len; i++)
		sum += s->data[i];
	sink += sum + s->addr + s->file_off + s->was_compressed;
}

/* Read LEN bytes at VADDR into a buffer of exactly LEN bytes. */
static void read_at(const struct ldr_elf *e, uint64_t vaddr, size_t len)
{
	uint8_t *dst = malloc(len ? len : 1);
	if (!dst)
		return;
	int err = ldr_read_vaddr(e, vaddr, dst, len);
	check(err == 0 || err == BK_E_MEMORY, "ldr_read_vaddr: unexpected error");
	if (!err) {
		uint64_t sum = 0;
		for (size_t i = 0; i < len; i++)
			sum += dst[i];
		sink += sum;
	}
	uint64_t word;
	err = ldr_mem_read((void *)e, vaddr, &word, sizeof(word));
	if (!err)
		sink += word;
	free(dst);
}

static void check_rule(const struct bk_rule *r, const struct cfi_section *sec)
{
	if (!r->expr)
		return;
	check(r->expr >= sec->data && r->expr_len <= sec->len &&
	      (size_t)(r->expr - sec->data) <= sec->len - r->expr_len,
	      "row expression outside its section");
	uint64_t sum = 0;
	for (size_t i = 0; i < r->expr_len; i++)
		sum += r->expr[i];
	sink += sum;
}

static void lookup(struct bk_elf *bk, uint64_t pc)
{
	struct bk_row row;
	if (bk_elf_row_at(bk, pc, &row) != 0)
		return;
	const struct cfi_section *sec =
		row.from_debug_frame ? &bk->debug_frame.sec : &bk->eh_frame.sec;
	check(row.loc <= pc && pc < row.loc_end, "row does not cover its PC");
	check(row.fde_begin <= row.loc && row.loc_end <= row.fde_end, "row outside its FDE");
	check(row.nregs <= BK_MAX_ROW_REGS, "row holds too many registers");
	check_rule(&row.cfa, sec);
	for (unsigned i = 0; i < row.nregs; i++) {
		check(i == 0 || row.regno[i - 1] < row.regno[i], "row registers not ascending");
		check_rule(&row.regs[i], sec);
	}
}

/* Open again with the Nth allocation of the library failing (N from the
 * input's size): every error path must report BK_E_NOMEM or succeed, and
 * free what it took (LeakSanitizer checks at exit, ASan for double frees). */
static void open_failing(const uint8_t *data, size_t size)
{
	struct ldr_elf *e = NULL;
	base_alloc_fail_after(1 + size % 5);
	int err = ldr_open_memory(data, size, &e);
	base_alloc_fail_after(0);
	check(err == 0 ? e != NULL : e == NULL, "ldr_open_memory result and object disagree");
	ldr_close(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ldr_elf *e = NULL;
	if (ldr_open_memory(data, size, &e) != 0) {
		check(e == NULL, "ldr_open_memory failed but returned an object");
		return 0;
	}
	open_failing(data, size);

	touch_section(&e->eh_frame);
	touch_section(&e->eh_frame_hdr);
	touch_section(&e->debug_frame);
	touch_section(&e->text);
	touch_section(&e->got);

	check(e->build_id_len <= LDR_MAX_BUILD_ID, "build-id too long");
	for (size_t i = 0; i < e->build_id_len; i++)
		sink += e->build_id[i];
	if (e->debuglink)
		sink += strlen(e->debuglink) + e->debuglink_crc;
	check(e->path == NULL, "memory image has a path");
	check(e->addr_size == 4 || e->addr_size == 8, "addr_size");
	if (e->arch)
		sink += e->arch->sp_reg;
	sink += e->machine + e->type + e->entry + e->min_vaddr;

	static const size_t lens[] = { 1, 8, 64 };
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ldr_segment *s = &e->segs[i];
		check(s->filesz <= s->memsz, "segment file size above its memory size");
		for (size_t k = 0; k < 3; k++) {
			read_at(e, s->vaddr, lens[k]);
			read_at(e, s->vaddr + s->filesz - lens[k], lens[k]); /* last file bytes */
			read_at(e, s->vaddr + s->filesz - 1, lens[k]);       /* into .bss */
			read_at(e, s->vaddr + s->memsz - lens[k], lens[k]);  /* last bytes */
			read_at(e, s->vaddr + s->memsz, lens[k]);            /* just past */
		}
	}
	read_at(e, e->entry, 16);
	read_at(e, e->min_vaddr, 8);
	if (e->has_eh_frame_hdr_seg)
		read_at(e, e->eh_frame_hdr_vaddr, 8);
	read_at(e, e->eh_frame.addr, 8);
	read_at(e, e->eh_frame_hdr.addr, 8);
	read_at(e, e->text.addr, 8);

	sink += (uint64_t)ldr_load_bias(e, 0) + (uint64_t)ldr_load_bias(e, 0x555555554000ull) +
		(uint64_t)ldr_load_bias(e, UINT64_MAX);

	/* The consumer's view: tables over the sections just found. */
	struct bk_elf *bk = NULL;
	if (uw_elf_wrap(e, &bk) != 0)
		return 0; /* ldr_close done by uw_elf_wrap */
	uint64_t pcs[] = { e->entry, e->text.addr, e->text.addr + e->text.len / 2,
			   e->eh_frame.addr, 0 };
	for (size_t i = 0; i < sizeof(pcs) / sizeof(pcs[0]); i++)
		lookup(bk, pcs[i]);
	for (size_t i = 0; i < e->nsegs && i < 4; i++)
		if (e->segs[i].flags & 1) /* PF_X */
			lookup(bk, e->segs[i].vaddr + e->segs[i].memsz / 3);
	bk_elf_close(bk); /* ldr_close */
	return 0;
}
