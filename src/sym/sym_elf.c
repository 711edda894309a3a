/* ELF symbol tables through libelf: the function symbols of .symtab or
 * .dynsym, aliases merged, sorted by address, names demangled when a lookup
 * first returns them; and raw section bytes (inflated on first use, by the
 * loader's inflater) for libdwarf (sym_dwobj.c) and our own DWARF readers.
 *
 * Which symbols count: STT_FUNC and STT_GNU_IFUNC defined in a section, and
 * STT_NOTYPE with a size in an executable section (hand-written assembly
 * without .type). A size-0 function extends to the next symbol or the end
 * of its section, whichever comes first. At one address the preferred alias
 * is, in order: global over weak over local, a typed function over NOTYPE,
 * one with a size, then the smallest name (strcmp) so the choice does not
 * depend on table order.
 *
 * Trusts the caller for: a file the loader has already opened (its ELF,
 * program and section headers were bounds-checked there). Cold: allocates.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <lzma.h>

#include "sym.h"
#include "../loader/loader.h"

/* A section inflated by us (the loader's inflater: libdeflate), kept until
 * sym_elf_close. libelf's elf_compress would do it with zlib, 2-3x slower. */
struct sym_inflated {
	struct sym_inflated *next;
	Elf_Scn *scn;
	uint8_t *data;
	size_t len;
	int err;               /* 0, or why it failed (not tried again) */
};

/* Take ELF (libelf's handle of FD, or of memory when FD is -1) into OUT
 * if it is an ELF file; else end it (and close FD). */
static int adopt(Elf *elf, int fd, struct sym_elf *out)
{
	GElf_Ehdr eh;
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, &eh)) {
		if (elf)
			elf_end(elf);
		if (fd >= 0)
			close(fd);
		return BK_E_NOT_ELF;
	}
	if (elf_getshdrstrndx(elf, &out->shstrndx) != 0)
		out->shstrndx = 0;
	out->fd = fd;
	out->elf = elf;
	out->machine = eh.e_machine;
	out->type = eh.e_type;
	out->is64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	out->msb = eh.e_ident[EI_DATA] == ELFDATA2MSB;
	return 0;
}

int sym_elf_open(const char *path, struct sym_elf *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return BK_E_UNSUPPORTED;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no waiting */
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0)
		return BK_E_IO;
	/* Compressed sections are inflated into our own buffers
	 * (sym_elf_section): libelf never modifies the mapping. */
	return adopt(elf_begin(fd, ELF_C_READ_MMAP, NULL), fd, out);
}

int sym_elf_open_memory(const void *image, size_t len, struct sym_elf *out)
{
	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return BK_E_UNSUPPORTED;
	/* ELF_C_READ on memory: libelf reads the buffer, never writes it. */
	return adopt(elf_memory((char *)(uintptr_t)image, len), -1, out);
}

int sym_elf_open_copy(const void *image, size_t len, struct sym_elf *out)
{
	void *copy = base_alloc(len ? len : 1);
	if (!copy) {
		memset(out, 0, sizeof(*out));
		out->fd = -1;
		return BK_E_NOMEM;
	}
	memcpy(copy, image, len);
	int err = sym_elf_open_memory(copy, len, out);
	if (err)
		base_free(copy);
	else
		out->owned = copy;
	return err;
}

void sym_elf_close(struct sym_elf *e)
{
	while (e->inflated) {
		struct sym_inflated *z = e->inflated;
		e->inflated = z->next;
		base_free(z->data);
		base_free(z);
	}
	if (e->elf)
		elf_end(e->elf);
	if (e->fd >= 0)
		close(e->fd);
	base_free(e->owned); /* after elf_end: libelf read from it */
	e->elf = NULL;
	e->fd = -1;
	e->owned = NULL;
}

static Elf_Scn *find_scn(struct sym_elf *e, const char *name, bool *gnu_z)
{
	*gnu_z = false;
	if (!e->elf || !e->shstrndx)
		return NULL;
	Elf_Scn *scn = NULL, *zscn = NULL;
	size_t nlen = strlen(name);
	while ((scn = elf_nextscn(e->elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh))
			continue;
		const char *n = elf_strptr(e->elf, e->shstrndx, sh.sh_name);
		if (!n)
			continue;
		if (strcmp(n, name) == 0)
			return scn;
		/* ".debug_line" -> ".zdebug_line" (GNU compression, pre-SHF_COMPRESSED) */
		if (!zscn && nlen > 1 && name[0] == '.' && n[0] == '.' && n[1] == 'z' &&
		    strcmp(n + 2, name + 1) == 0)
			zscn = scn;
	}
	*gnu_z = zscn != NULL;
	return zscn;
}

bool sym_elf_has(struct sym_elf *e, const char *name, bool *compressed)
{
	bool gnu_z;
	Elf_Scn *scn = find_scn(e, name, &gnu_z);
	GElf_Shdr sh;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
		return false;
	*compressed = gnu_z || (sh.sh_flags & SHF_COMPRESSED);
	return true;
}

/* A .zdebug section's header: "ZLIB", then the size as 8 bytes big-endian,
 * then the zlib stream. */
static const uint8_t *gnu_z_header(Elf_Scn *scn)
{
	Elf_Data *d = elf_rawdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size < 12 || memcmp(d->d_buf, "ZLIB", 4) != 0)
		return NULL;
	return d->d_buf;
}

bool sym_elf_section_size(struct sym_elf *e, const char *name, uint64_t *size)
{
	bool gnu_z;
	Elf_Scn *scn = find_scn(e, name, &gnu_z);
	GElf_Shdr sh;
	*size = 0;
	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
		return false;
	const uint8_t *z = gnu_z ? gnu_z_header(scn) : NULL;
	if (gnu_z && !z)
		return false;
	if (z) {
		for (int i = 0; i < 8; i++)
			*size = *size << 8 | z[4 + i];
	} else if (sh.sh_flags & SHF_COMPRESSED) {
		GElf_Chdr ch;
		if (!gelf_getchdr(scn, &ch))
			return false;
		*size = ch.ch_size;
	} else {
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return false;
		*size = d->d_size;
	}
	return *size != 0;
}

bool sym_elf_section(struct sym_elf *e, const char *name, const uint8_t **data, size_t *len,
		     bool *compressed)
{
	bool gnu_z;
	Elf_Scn *scn = find_scn(e, name, &gnu_z);
	*data = NULL;
	*len = 0;
	*compressed = false;
	if (!scn)
		return false;
	GElf_Shdr sh;
	if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
		return false;
	if (!gnu_z && !(sh.sh_flags & SHF_COMPRESSED)) {
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf)
			return false;
		*data = d->d_buf;
		*len = d->d_size;
		return true;
	}
	*compressed = true;
	struct sym_inflated *z = e->inflated;
	while (z && z->scn != scn)
		z = z->next;
	if (!z) {
		Elf_Data *raw = elf_rawdata(scn, NULL);
		if (!raw || !raw->d_buf)
			return false;
		if (!(z = base_calloc(1, sizeof(*z))))
			return false;
		z->scn = scn;
		int err = ldr_inflate(raw->d_buf, raw->d_size, e->is64, gnu_z, &z->data, &z->len);
		if (err == BK_E_NOMEM) {
			base_free(z); /* tried again next time */
			return false;
		}
		z->err = err;
		z->next = e->inflated;
		e->inflated = z;
	}
	if (z->err)
		return false;
	*data = z->data;
	*len = z->len;
	return true;
}

/* ---- Symbols ---------------------------------------------------------------------- */

struct raw_sym {
	uint64_t start, size, sec_end;
	const char *name; /* raw, interned */
	int rank;         /* higher is preferred */
};

static int cmp_raw(const void *a, const void *b)
{
	const struct raw_sym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank > y->rank ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int sym_rank(const GElf_Sym *s)
{
	int bind = GELF_ST_BIND(s->st_info), type = GELF_ST_TYPE(s->st_info);
	int r = bind == STB_GLOBAL ? 4 : bind == STB_WEAK ? 2 : 0;
	r = r * 2 + (type != STT_NOTYPE);
	return r * 2 + (s->st_size != 0);
}

/* Read every wanted symbol of every section of type SHT into V. */
static int collect(struct sym_file *f, struct sym_elf *e, uint32_t sht, struct sym_vec *v)
{
	Elf *elf = e->elf;
	size_t shnum;
	if (elf_getshdrnum(elf, &shnum) != 0)
		return 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != sht || sh.sh_link >= shnum)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t ent = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
		if (!d || !ent)
			continue;
		size_t count = d->d_size / ent;
		for (size_t i = 1; i < count; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s))
				break;
			int type = GELF_ST_TYPE(s.st_info);
			if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || s.st_shndx >= shnum)
				continue;
			if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
				continue;
			Elf_Scn *home = elf_getscn(elf, s.st_shndx);
			GElf_Shdr hs;
			if (!home || !gelf_getshdr(home, &hs))
				continue;
			if (type == STT_NOTYPE && (s.st_size == 0 || !(hs.sh_flags & SHF_EXECINSTR)))
				continue;
			const char *name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name || !*name)
				continue;
			uint64_t start = s.st_value;
			if (e->machine == EM_ARM && (type == STT_FUNC || type == STT_GNU_IFUNC))
				start &= ~(uint64_t)1; /* the Thumb bit */
			struct raw_sym *r = sym_vec_push(v);
			if (!r)
				return BK_E_NOMEM;
			r->start = start;
			r->size = s.st_size;
			r->sec_end = hs.sh_addr + hs.sh_size < hs.sh_addr ? UINT64_MAX
									     : hs.sh_addr + hs.sh_size;
			if (r->sec_end <= start)
				r->sec_end = UINT64_MAX; /* a symbol outside its section: trust its size */
			r->rank = sym_rank(&s);
			r->name = sym_intern(&f->strings, name, strlen(name));
			if (!r->name)
				return BK_E_NOMEM;
		}
	}
	return 0;
}

/* Intern the demangled form of NAME, keeping a symbol version suffix
 * ("_ZN3foo3barEv@@V_1" -> "foo::bar()@@V_1"). */
static const char *display_name(struct sym_strings *st, const char *name)
{
	const char *at = strchr(name, '@');
	if (!at || at == name)
		return sym_intern_name(st, name);
	size_t base_len = (size_t)(at - name);
	char *base = base_alloc(base_len + 1);
	if (!base)
		return NULL;
	memcpy(base, name, base_len);
	base[base_len] = '\0';
	bool nomem;
	char *dem = sym_demangle_ex(base, &nomem);
	base_free(base);
	if (nomem)
		return NULL;
	if (!dem)
		return sym_intern(st, name, strlen(name));
	size_t dl = strlen(dem), sl = strlen(at);
	char *full = base_alloc(dl + sl + 1);
	const char *r = NULL;
	if (full) {
		memcpy(full, dem, dl);
		memcpy(full + dl, at, sl + 1);
		r = sym_intern(st, full, dl + sl);
	}
	base_free(full);
	base_free(dem);
	return r;
}

const char *sym_symbol_name(struct sym_file *f, struct sym_symbol *s)
{
	if (s->shown)
		return s->name;
	const char *n = display_name(&f->strings, s->name);
	if (n) {
		s->name = n;
		s->shown = true;
	}
	return n;
}

/* Sort the raw symbols of V into F's table (merging aliases); frees V. */
static int install(struct sym_file *f, struct sym_vec *v)
{
	if (v->n == 0) {
		sym_vec_free(v);
		return 0;
	}
	struct raw_sym *r = v->p;
	qsort(r, v->n, sizeof(*r), cmp_raw);

	size_t n = 0;
	for (size_t i = 0; i < v->n; i++)
		n += i == 0 || r[i].start != r[i - 1].start;
	f->syms = base_calloc(n, sizeof(*f->syms));
	f->sym_max_end = base_calloc(n, sizeof(uint64_t));
	if (!f->syms || !f->sym_max_end) {
		sym_vec_free(v);
		return BK_E_NOMEM;
	}
	size_t k = 0;
	for (size_t i = 0; i < v->n;) {
		size_t j = i + 1;
		uint64_t size = r[i].size;
		/* The preferred alias is first; a size-0 one borrows an alias's size. */
		for (; j < v->n && r[j].start == r[i].start; j++)
			if (!size && r[j].size)
				size = r[j].size;
		struct sym_symbol *s = &f->syms[k++];
		s->start = r[i].start;
		if (size) {
			s->end = s->start + size < s->start ? UINT64_MAX : s->start + size;
		} else {
			s->end = r[i].sec_end;
			if (j < v->n && r[j].start < s->end)
				s->end = r[j].start;
		}
		s->name = r[i].name; /* demangled by sym_symbol_name */
		i = j;
	}
	f->nsyms = k;
	uint64_t m = 0;
	for (size_t i = 0; i < k; i++) {
		if (f->syms[i].end > m)
			m = f->syms[i].end;
		f->sym_max_end[i] = m;
	}
	sym_vec_free(v);
	return 0;
}

int sym_elf_symbols(struct sym_file *f, struct sym_elf *e, uint32_t sht)
{
	return sym_elf_symbols_with(f, e, sht, NULL);
}

int sym_elf_symbols_with(struct sym_file *f, struct sym_elf *e, uint32_t sht,
			 struct sym_elf *also)
{
	struct sym_vec v = { .elem = sizeof(struct raw_sym) };
	int err = e->elf ? collect(f, e, sht, &v) : 0;
	if (!err && also && also->elf)
		err = collect(f, also, SHT_SYMTAB, &v);
	if (err) {
		sym_vec_free(&v);
		return err;
	}
	return install(f, &v);
}

/* ---- MiniDebugInfo ------------------------------------------------------------ */

/* .gnu_debugdata: an xz stream holding an ELF file with a .symtab of the
 * functions .dynsym lacks (Fedora's MiniDebugInfo; gdb reads it as a
 * source of names). Decoded by liblzma, within SYM_MAX_DEBUGDATA bytes and
 * as much decoder memory: a bigger claim is damage, not a bigger file. */
int sym_elf_debugdata(struct sym_elf *e, uint8_t **out, size_t *out_len)
{
	*out = NULL;
	*out_len = 0;
	bool gnu_z, comp;
	Elf_Scn *scn = find_scn(e, ".gnu_debugdata", &gnu_z);
	const uint8_t *in;
	size_t in_len;
	if (!scn || !sym_elf_section(e, ".gnu_debugdata", &in, &in_len, &comp) || in_len == 0)
		return 0;
	lzma_stream st = LZMA_STREAM_INIT;
	if (lzma_stream_decoder(&st, SYM_MAX_DEBUGDATA, 0) != LZMA_OK)
		return BK_E_NOMEM;
	size_t cap = in_len * 4 < SYM_MAX_DEBUGDATA ? in_len * 4 : SYM_MAX_DEBUGDATA;
	uint8_t *buf = base_alloc(cap);
	int err = buf ? 0 : BK_E_NOMEM;
	st.next_in = in;
	st.avail_in = in_len;
	while (!err) {
		if (st.total_out == cap) {
			if (cap == SYM_MAX_DEBUGDATA) {
				err = BK_E_LIMIT;
				break;
			}
			size_t ncap = cap * 2 < SYM_MAX_DEBUGDATA ? cap * 2 : SYM_MAX_DEBUGDATA;
			uint8_t *n = base_realloc(buf, ncap);
			if (!n) {
				err = BK_E_NOMEM;
				break;
			}
			buf = n;
			cap = ncap;
		}
		st.next_out = buf + st.total_out;
		st.avail_out = cap - (size_t)st.total_out;
		lzma_ret r = lzma_code(&st, LZMA_FINISH);
		if (r == LZMA_STREAM_END)
			break;
		if (r == LZMA_MEM_ERROR)
			err = BK_E_NOMEM;
		else if (r != LZMA_OK || (st.avail_in == 0 && st.avail_out != 0))
			err = BK_E_CORRUPT; /* damaged, or cut short */
	}
	size_t len = (size_t)st.total_out;
	lzma_end(&st);
	if (err) {
		base_free(buf);
		return err;
	}
	*out = buf;
	*out_len = len;
	return 0;
}

/* ---- Symbols by the dynamic segment (a loaded image without sections) ---- */

/* The rebuilt file of a loaded image: its bytes, segments, and the bias its
 * dynamic loader applied to some .dynamic entries in memory. */
struct dyn_image {
	const uint8_t *p;
	size_t len;
	const struct ldr_elf *l;
	int64_t bias;
};

/* The file offset of link-time address VADDR with N bytes there, or false. */
static bool dyn_off(const struct dyn_image *im, uint64_t vaddr, uint64_t n, uint64_t *off)
{
	for (size_t i = 0; i < im->l->nsegs; i++) {
		const struct ldr_segment *sg = &im->l->segs[i];
		if (vaddr < sg->vaddr || vaddr - sg->vaddr >= sg->filesz ||
		    n > sg->filesz - (vaddr - sg->vaddr))
			continue;
		uint64_t o = sg->file_off + (vaddr - sg->vaddr);
		if (o > im->len || n > im->len - o)
			return false;
		*off = o;
		return true;
	}
	return false;
}

/* A .dynamic address: as linked, or as the dynamic loader relocated it in
 * memory (glibc adds the load bias to DT_SYMTAB, DT_STRTAB, the hash
 * tables... in place). */
static bool dyn_ptr(const struct dyn_image *im, uint64_t v, uint64_t n, uint64_t *off)
{
	return dyn_off(im, v, n, off) || (im->bias && dyn_off(im, v - (uint64_t)im->bias, n, off));
}

/* How many entries .dynsym has, from DT_HASH or DT_GNU_HASH; 0 if unknown. */
static uint64_t dyn_count(const struct dyn_image *im, uint64_t hash, uint64_t gnu_hash)
{
	uint64_t off;
	if (hash && dyn_ptr(im, hash, 8, &off))
		return base_rd_le(im->p + off + 4, 4); /* nchain */
	if (!gnu_hash || !dyn_ptr(im, gnu_hash, 16, &off))
		return 0;
	const uint8_t *h = im->p + off;
	uint64_t nbuckets = base_rd_le(h, 4), symoffset = base_rd_le(h + 4, 4);
	uint64_t bloom = base_rd_le(h + 8, 4);
	uint64_t at = off + 16 + bloom * 8, max = 0;
	if (nbuckets > (1u << 24) || bloom > (1u << 24) || at > im->len ||
	    nbuckets * 4 > im->len - at)
		return 0;
	for (uint64_t i = 0; i < nbuckets; i++) {
		uint64_t b = base_rd_le(im->p + at + 4 * i, 4);
		max = b > max ? b : max;
	}
	if (max < symoffset)
		return symoffset;
	uint64_t chains = at + nbuckets * 4;
	for (uint64_t i = max - symoffset;; i++) { /* the last chain ends in bit 0 */
		if (chains + 4 * i + 4 > im->len || i > (1u << 24))
			return 0;
		if (base_rd_le(im->p + chains + 4 * i, 4) & 1)
			return symoffset + i + 1;
	}
}

/* The end of the executable segment holding ADDR, or 0 if none does. */
static uint64_t exec_end(const struct ldr_elf *l, uint64_t addr)
{
	for (size_t i = 0; i < l->nsegs; i++) {
		const struct ldr_segment *sg = &l->segs[i];
		if ((sg->flags & PF_X) && addr >= sg->vaddr && addr - sg->vaddr < sg->memsz)
			return sg->vaddr + sg->memsz;
	}
	return 0;
}

static int dyn_collect(struct sym_file *f, const struct dyn_image *im, struct sym_vec *v)
{
	const uint8_t *p = im->p;
	if (im->len < sizeof(Elf64_Ehdr) || p[EI_CLASS] != ELFCLASS64 || p[EI_DATA] != ELFDATA2LSB)
		return 0; /* 64-bit little-endian images only */
	uint64_t phoff = base_rd_le(p + offsetof(Elf64_Ehdr, e_phoff), 8);
	uint64_t phnum = base_rd_le(p + offsetof(Elf64_Ehdr, e_phnum), 2);
	uint64_t dyn = 0, dynsz = 0;
	for (uint64_t i = 0; i < phnum; i++) {
		uint64_t o = phoff + i * sizeof(Elf64_Phdr);
		if (o > im->len || sizeof(Elf64_Phdr) > im->len - o)
			return 0;
		if (base_rd_le(p + o + offsetof(Elf64_Phdr, p_type), 4) == PT_DYNAMIC) {
			dyn = base_rd_le(p + o + offsetof(Elf64_Phdr, p_offset), 8);
			dynsz = base_rd_le(p + o + offsetof(Elf64_Phdr, p_filesz), 8);
		}
	}
	if (!dynsz || dyn > im->len || dynsz > im->len - dyn)
		return 0;
	uint64_t symtab = 0, strtab = 0, strsz = 0, syment = sizeof(Elf64_Sym), hash = 0, gnu = 0;
	for (uint64_t o = dyn; o + 16 <= dyn + dynsz; o += 16) {
		uint64_t tag = base_rd_le(p + o, 8), val = base_rd_le(p + o + 8, 8);
		if (tag == DT_NULL)
			break;
		switch (tag) {
		case DT_SYMTAB: symtab = val; break;
		case DT_STRTAB: strtab = val; break;
		case DT_STRSZ: strsz = val; break;
		case DT_SYMENT: syment = val; break;
		case DT_HASH: hash = val; break;
		case DT_GNU_HASH: gnu = val; break;
		}
	}
	uint64_t count = dyn_count(im, hash, gnu), soff, stroff;
	if (!symtab || !strtab || !strsz || syment < sizeof(Elf64_Sym) || count < 2 ||
	    count > im->len / syment || !dyn_ptr(im, symtab, count * syment, &soff) ||
	    !dyn_ptr(im, strtab, strsz, &stroff))
		return 0;
	const char *strs = (const char *)p + stroff;
	for (uint64_t i = 1; i < count; i++) {
		const uint8_t *e = p + soff + i * syment;
		GElf_Sym s = {
			.st_name = (uint32_t)base_rd_le(e + offsetof(Elf64_Sym, st_name), 4),
			.st_info = e[offsetof(Elf64_Sym, st_info)],
			.st_other = e[offsetof(Elf64_Sym, st_other)],
			.st_shndx = (uint16_t)base_rd_le(e + offsetof(Elf64_Sym, st_shndx), 2),
			.st_value = base_rd_le(e + offsetof(Elf64_Sym, st_value), 8),
			.st_size = base_rd_le(e + offsetof(Elf64_Sym, st_size), 8),
		};
		int type = GELF_ST_TYPE(s.st_info);
		if (s.st_shndx == SHN_UNDEF || s.st_shndx >= SHN_LORESERVE || s.st_name >= strsz ||
		    (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE))
			continue;
		uint64_t end = exec_end(im->l, s.st_value);
		if (!end || (type == STT_NOTYPE && !s.st_size))
			continue; /* not code: data, or a label of unknown extent */
		const char *name = strs + s.st_name;
		size_t nlen = strnlen(name, strsz - s.st_name);
		if (!nlen || nlen == strsz - s.st_name)
			continue; /* empty, or not terminated inside the table */
		struct raw_sym *r = sym_vec_push(v);
		if (!r)
			return BK_E_NOMEM;
		r->start = s.st_value;
		r->size = s.st_size;
		r->sec_end = end;
		r->rank = sym_rank(&s);
		r->name = sym_intern(&f->strings, name, nlen);
		if (!r->name)
			return BK_E_NOMEM;
	}
	return 0;
}

int sym_dyn_symbols(struct sym_file *f, const struct ldr_elf *l, int64_t bias)
{
	struct dyn_image im = { .l = l, .bias = bias };
	ldr_bytes(l, &im.p, &im.len);
	struct sym_vec v = { .elem = sizeof(struct raw_sym) };
	int err = dyn_collect(f, &im, &v);
	if (err) {
		sym_vec_free(&v);
		return err;
	}
	return install(f, &v);
}
