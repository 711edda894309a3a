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
