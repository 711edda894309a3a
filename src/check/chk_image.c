/* One ELF file as the static checks see it (chk.h, "Files"): the loader's
 * object, its section headers through libelf, the executable ranges with
 * their bytes, every allocated section (to name an address), and the
 * function symbols (.symtab, else the separate debug file's .symtab, else
 * .dynsym). Shared by the table checks (chk_tables.c) and the stack
 * analysis (chk_stack.c).
 *
 * Invariant: EXEC and ALLOC are sorted by start address. Trusts its
 * caller for a path; everything read is bounded by the loader and libelf.
 */
#include <gelf.h>
#include <pthread.h>
#include <stdlib.h>

#include "chk.h"

#include "../loader/loader.h"
#include "../sym/sym.h"

static int cmp_region(const void *a, const void *b)
{
	const struct chk_region *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int push_region(struct chk_region **v, size_t *n, size_t *cap, struct chk_region r)
{
	struct chk_region *p = base_grow(*v, cap, *n + 1, sizeof(**v), 16);
	if (!p)
		return BK_E_NOMEM;
	*v = p;
	p[(*n)++] = r;
	return 0;
}

/* Executable sections (with their bytes) and allocated sections, from the
 * section headers; PF_X segments when there are none. */
static int read_layout(struct chk_image *im)
{
	size_t exec_cap = 0, alloc_cap = 0;
	int err;
	if (im->have_se) {
		Elf *elf = im->se.elf;
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(elf, scn))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || sh.sh_size == 0 ||
			    sh.sh_addr + sh.sh_size < sh.sh_addr)
				continue;
			const char *name = im->se.shstrndx ?
				elf_strptr(elf, im->se.shstrndx, sh.sh_name) : NULL;
			struct chk_region rg = { sh.sh_addr, sh.sh_addr + sh.sh_size, name, NULL,
						 !(sh.sh_flags & SHF_WRITE) && sh.sh_type != SHT_NOBITS };
			if ((err = push_region(&im->alloc, &im->nalloc, &alloc_cap, rg)))
				return err;
			if (!(sh.sh_flags & SHF_EXECINSTR))
				continue;
			if (sh.sh_type != SHT_NOBITS) {
				Elf_Data *d = elf_getdata(scn, NULL);
				if (d && d->d_buf && d->d_size == sh.sh_size)
					rg.data = d->d_buf;
			}
			if ((err = push_region(&im->exec, &im->nexec, &exec_cap, rg)))
				return err;
		}
	}
	if (!im->nalloc) {
		im->exec_from_segments = true;
		for (size_t i = 0; i < im->ldr->nsegs; i++) {
			const struct ldr_segment *s = &im->ldr->segs[i];
			if (!(s->flags & PF_X) || s->memsz == 0 || s->vaddr + s->memsz < s->vaddr)
				continue;
			struct chk_region rg = { s->vaddr, s->vaddr + s->memsz, NULL, NULL, false };
			if ((err = push_region(&im->exec, &im->nexec, &exec_cap, rg)))
				return err;
		}
	}
	if (im->nexec)
		qsort(im->exec, im->nexec, sizeof(*im->exec), cmp_region);
	if (im->nalloc)
		qsort(im->alloc, im->nalloc, sizeof(*im->alloc), cmp_region);
	return 0;
}

static int load_symbols(struct chk_image *im)
{
	if (!im->have_se)
		return 0;
	struct sym_file *f = base_calloc(1, sizeof(*f));
	if (!f)
		return BK_E_NOMEM;
	if (pthread_mutex_init(&f->lock, NULL) != 0) {
		base_free(f);
		return BK_E_NOMEM;
	}
	f->files.elem = sizeof(const char *);
	im->syms = f;
	/* As src/sym prefers them: .symtab, the separate debug file's
	 * .symtab (stripped system libraries), .dynsym. */
	int err = sym_elf_symbols(f, &im->se, SHT_SYMTAB);
	struct ldr_elf *dbg;
	if (!err && f->nsyms == 0 && im->ldr->path &&
	    ldr_open_debug_file(im->ldr, NULL, &dbg) == 0) {
		struct sym_elf de;
		if (sym_elf_open(dbg->path, &de) == 0) {
			err = sym_elf_symbols(f, &de, SHT_SYMTAB);
			sym_elf_close(&de);
		}
		ldr_close(dbg);
	}
	if (!err && f->nsyms == 0)
		err = sym_elf_symbols(f, &im->se, SHT_DYNSYM);
	return err;
}

int chk_image_open(const char *path, struct chk_image *im)
{
	memset(im, 0, sizeof(*im));
	int err = ldr_open_path(path, &im->ldr);
	if (err)
		return err;
	im->arch = im->ldr->arch;
	im->relocatable = im->ldr->type == ET_REL;
	im->have_se = sym_elf_open(path, &im->se) == 0;
	if ((err = read_layout(im)) || (err = load_symbols(im))) {
		chk_image_close(im);
		return err;
	}
	return 0;
}

void chk_image_close(struct chk_image *im)
{
	base_free(im->exec);
	base_free(im->alloc);
	if (im->syms)
		sym_close(im->syms);
	if (im->have_se)
		sym_elf_close(&im->se);
	ldr_close(im->ldr);
	memset(im, 0, sizeof(*im));
}

const struct chk_region *chk_region_of(const struct chk_region *v, size_t n, uint64_t addr)
{
	size_t lo = BASE_COUNT_LE(v, n, lo, addr);
	return lo && addr < v[lo - 1].hi ? &v[lo - 1] : NULL;
}

struct sym_symbol *chk_image_sym(const struct chk_image *im, uint64_t addr)
{
	const struct sym_file *f = im->syms;
	if (!f || !f->nsyms)
		return NULL;
	size_t lo = BASE_COUNT_LE(f->syms, f->nsyms, start, addr); /* first start > addr */
	/* Walk back while an earlier symbol can still reach ADDR. */
	for (size_t i = lo; i > 0 && f->sym_max_end[i - 1] > addr; i--)
		if (f->syms[i - 1].end > addr)
			return &f->syms[i - 1];
	return NULL;
}

struct sym_symbol *chk_image_sym_at(const struct chk_image *im, uint64_t addr)
{
	struct sym_symbol *s = chk_image_sym(im, addr);
	return s && s->start == addr ? s : NULL;
}

uint64_t chk_image_next_sym_start(const struct chk_image *im, uint64_t addr)
{
	const struct sym_file *f = im->syms;
	if (!f || !f->nsyms)
		return UINT64_MAX;
	size_t lo = BASE_COUNT_LE(f->syms, f->nsyms, start, addr);
	return lo < f->nsyms ? f->syms[lo].start : UINT64_MAX;
}

const char *chk_image_sym_name(const struct chk_image *im, struct sym_symbol *s)
{
	return s ? sym_symbol_name(im->syms, s) : NULL;
}
