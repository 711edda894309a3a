/* What the validator needs to know of the executable before anything runs:
 * its entry point (the shadow stack starts there) and where a function
 * named by --from is. Read with libelf straight from the file; cold.
 */
#include <fcntl.h>
#include <gelf.h>
#include <string.h>
#include <unistd.h>

#include "val.h"

#include "../base/base.h"
#include "../sym/sym.h"

struct open_elf {
	int fd;
	Elf *e;
};

static int open_elf(const char *path, struct open_elf *o)
{
	elf_version(EV_CURRENT);
	o->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (o->fd < 0)
		return BK_E_IO;
	o->e = elf_begin(o->fd, ELF_C_READ_MMAP, NULL);
	if (!o->e || elf_kind(o->e) != ELF_K_ELF) {
		if (o->e)
			elf_end(o->e);
		close(o->fd);
		return BK_E_NOT_ELF;
	}
	return 0;
}

static void close_elf(struct open_elf *o)
{
	elf_end(o->e);
	close(o->fd);
}

int val_elf_entry(const char *path, uint64_t *entry)
{
	struct open_elf o;
	int err = open_elf(path, &o);
	if (err)
		return err;
	GElf_Ehdr eh;
	if (gelf_getehdr(o.e, &eh))
		*entry = eh.e_entry;
	else
		err = BK_E_CORRUPT;
	close_elf(&o);
	return err;
}

/* NAME equals SYM, or SYM demangled, or SYM demangled up to its '('. */
static bool name_matches(const char *sym, const char *name)
{
	if (!strcmp(sym, name))
		return true;
	if (sym[0] != '_')
		return false;
	char *d = sym_demangle(sym);
	if (!d)
		return false;
	size_t n = strlen(name);
	bool ok = !strcmp(d, name) || (!strncmp(d, name, n) && d[n] == '(');
	base_free(d);
	return ok;
}

static int search(Elf *e, Elf64_Word type, const char *name, uint64_t *addr)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			const char *sn = elf_strptr(e, sh.sh_link, s.st_name);
			if (sn && name_matches(sn, name)) {
				*addr = s.st_value;
				return 0;
			}
		}
	}
	return BK_E_NOT_FOUND;
}

int val_find_function(const char *path, const char *name, uint64_t *addr)
{
	struct open_elf o;
	int err = open_elf(path, &o);
	if (err)
		return err;
	err = search(o.e, SHT_SYMTAB, name, addr);
	if (err == BK_E_NOT_FOUND)
		err = search(o.e, SHT_DYNSYM, name, addr);
	close_elf(&o);
	return err;
}

int val_addrs_push(struct val_addrs *a, uint64_t v)
{
	if (a->n == a->cap) {
		size_t ncap = a->cap ? a->cap * 2 : 256;
		void *p = base_realloc(a->v, ncap * sizeof(*a->v));
		if (!p)
			return BK_E_NOMEM;
		a->v = p;
		a->cap = ncap;
	}
	a->v[a->n++] = v;
	return 0;
}

/* name_matches over NAMES, demangling SYM once at most. */
static bool named(const char *sym, const char *const *names, size_t nnames)
{
	for (size_t i = 0; i < nnames; i++)
		if (!strcmp(sym, names[i]))
			return true;
	if (sym[0] != '_' || sym[1] != 'Z')
		return false;
	char *d = sym_demangle(sym);
	bool ok = false;
	for (size_t i = 0; d && i < nnames && !ok; i++) {
		size_t n = strlen(names[i]);
		ok = !strcmp(d, names[i]) || (!strncmp(d, names[i], n) && d[n] == '(');
	}
	base_free(d);
	return ok;
}

static int entries_of(Elf *e, Elf64_Word type, const char *const *names, size_t nnames,
		      struct val_addrs *out)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Sym s;
			if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
			    s.st_shndx == SHN_UNDEF || !s.st_value)
				continue;
			if (names) {
				const char *sn = elf_strptr(e, sh.sh_link, s.st_name);
				if (!sn || !named(sn, names, nnames))
					continue;
			}
			if (val_addrs_push(out, s.st_value))
				return BK_E_NOMEM;
		}
	}
	return 0;
}

static int dynamic_entries(Elf *e, struct val_addrs *out, uint64_t arrays[3][2])
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		size_t n = d ? sh.sh_size / sh.sh_entsize : 0;
		for (size_t i = 0; i < n; i++) {
			GElf_Dyn dyn;
			if (!gelf_getdyn(d, (int)i, &dyn))
				continue;
			uint64_t v = dyn.d_un.d_val;
			switch (dyn.d_tag) {
			case DT_INIT:
			case DT_FINI:
				if (v && val_addrs_push(out, v))
					return BK_E_NOMEM;
				break;
			case DT_PREINIT_ARRAY: arrays[0][0] = v; break;
			case DT_PREINIT_ARRAYSZ: arrays[0][1] = v; break;
			case DT_INIT_ARRAY: arrays[1][0] = v; break;
			case DT_INIT_ARRAYSZ: arrays[1][1] = v; break;
			case DT_FINI_ARRAY: arrays[2][0] = v; break;
			case DT_FINI_ARRAYSZ: arrays[2][1] = v; break;
			default: break;
			}
		}
	}
	return 0;
}

/* PLT slots: a non-PIE executable's function pointers to imported
 * functions are its PLT entries, so other modules call them. The lazy
 * binding stub (.plt's first slot) is only jumped to, with an index
 * pushed: not an entry, and *PLT0 says where it is. */
static int plt_entries(Elf *e, struct val_addrs *out, uint64_t *plt0)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		uint64_t step = 16, first = 0;
		if (!strcmp(name, ".plt")) {
			*plt0 = sh.sh_addr;
			first = 16;
		} else if (!strcmp(name, ".plt.got")) {
			step = sh.sh_entsize >= 8 ? sh.sh_entsize : 8;
		} else if (strcmp(name, ".plt.sec")) {
			continue;
		}
		for (uint64_t off = first; off + step <= sh.sh_size; off += step)
			if (val_addrs_push(out, sh.sh_addr + off))
				return BK_E_NOMEM;
	}
	return 0;
}

int val_elf_entries(const char *path, const char *const *names, size_t nnames,
		    struct val_addrs *out, uint64_t arrays[3][2], uint64_t *plt0)
{
	memset(arrays, 0, 3 * sizeof(arrays[0]));
	*plt0 = 0;
	struct open_elf o;
	int err = open_elf(path, &o);
	if (err)
		return err;
	err = entries_of(o.e, SHT_SYMTAB, names, nnames, out);
	if (!err)
		err = entries_of(o.e, SHT_DYNSYM, names, nnames, out);
	if (!err && !names)
		err = dynamic_entries(o.e, out, arrays);
	if (!err && !names)
		err = plt_entries(o.e, out, plt0);
	close_elf(&o);
	return err;
}
