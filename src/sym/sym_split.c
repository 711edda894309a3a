/* Split DWARF (DWARF 5 §3.1.3, §7.3.2; GCC's DWARF 4 extension, -gsplit-dwarf):
 * the .dwo files and .dwp packages that hold what a skeleton unit leaves
 * out (subprograms, inlined calls, their ranges), found as gdb finds them,
 * opened once per file and tied to the executable's libdwarf so that the
 * split unit's addresses (DW_FORM_addrx, DW_FORM_GNU_addr_index) resolve
 * through the skeleton's .debug_addr.
 *
 * Where a skeleton's unit is looked for, in order:
 *   1. a package next to the file: PATH.dwp, then the main file's
 *      MAIN_PATH.dwp (a separate debug file's skeletons name the binary's
 *      package); its .debug_cu_index maps the dwo_id to the unit;
 *   2. DW_AT_dwo_name as is when absolute, else under DW_AT_comp_dir, else
 *      next to the file, by its full relative name and by its last
 *      component.
 * A .dwo is taken only when its unit's dwo_id is the skeleton's: a stale
 * .dwo from another build is not used.
 *
 * Bounds: at most SYM_MAX_SPLIT_FILES files per file (a program has one
 * .dwo per translation unit); a file that cannot be opened or read is
 * remembered as failed and not tried again. A split file passes the same
 * pre-flight guard (sym_guard.c) as the file's own DWARF before libdwarf
 * sees it. Everything here runs under the sym_file's lock (sym_lookup's
 * indexing).
 */
#include <stdio.h>
#include <stdlib.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "sym.h"

struct sym_split_file {
	char *path;
	bool failed;
	bool dwp;
	struct sym_elf elf;
	Dwarf_Debug dbg;
	struct sym_dwobj *obj;
	const uint8_t *info, *rnglists;  /* .debug_info.dwo, .debug_rnglists.dwo */
	size_t info_len, rnglists_len;
};

/* DW_SECT_RNGLISTS in a DWARF 5 package index (§7.3.5.3, Table 7.1). */
#define SECT_RNGLISTS 8

static bool guarded(struct sym_elf *e)
{
	const uint8_t *d;
	size_t len;
	bool comp;
	return !sym_elf_has(e, ".debug_rnglists.dwo", &comp) ||
	       (sym_elf_section(e, ".debug_rnglists.dwo", &d, &len, &comp) &&
		sym_check_lists(d, len) == 0);
}

/* The file at PATH in S (opened now if it is new), or NULL when it cannot
 * be used. *ERR: BK_E_NOMEM. */
static struct sym_split_file *split_open(struct sym_splits *s, const char *path, void *main_dbg,
					 bool dwp, int *err)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->f[i]->path, path))
			return s->f[i]->failed ? NULL : s->f[i];
	if (s->n >= SYM_MAX_SPLIT_FILES)
		return NULL;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 8;
		struct sym_split_file **v = base_alloc(cap * sizeof(*v));
		if (!v) {
			*err = BK_E_NOMEM;
			return NULL;
		}
		if (s->n)
			memcpy(v, s->f, s->n * sizeof(*v));
		base_free(s->f);
		s->f = v;
		s->cap = cap;
	}
	/* Each file stays where it is allocated: its libdwarf object points
	 * at its sym_elf. */
	size_t plen = strlen(path) + 1;
	struct sym_split_file *f = base_calloc(1, sizeof(*f));
	char *copy = base_alloc(plen);
	if (!f || !copy) {
		base_free(f);
		base_free(copy);
		*err = BK_E_NOMEM;
		return NULL;
	}
	memcpy(copy, path, plen);
	*f = (struct sym_split_file){ .path = copy, .dwp = dwp, .elf = { .fd = -1 } };
	s->f[s->n++] = f;
	f->failed = true;
	if (sym_elf_open(path, &f->elf) != 0)
		return NULL;
	bool comp;
	void *dbg = NULL;
	Dwarf_Error e = NULL;
	if (!sym_elf_section(&f->elf, ".debug_info.dwo", &f->info, &f->info_len, &comp) ||
	    !guarded(&f->elf)) {
		sym_elf_close(&f->elf);
		return NULL;
	}
	if (!sym_elf_section(&f->elf, ".debug_rnglists.dwo", &f->rnglists, &f->rnglists_len, &comp))
		f->rnglists = NULL;
	int r = sym_dwobj_init(&f->elf, &dbg, &f->obj);
	if (r) {
		sym_elf_close(&f->elf);
		if (r == BK_E_NOMEM)
			*err = r;
		return NULL;
	}
	if (dwarf_set_tied_dbg(dbg, main_dbg, &e) != DW_DLV_OK) {
		if (e)
			dwarf_dealloc_error(dbg, e);
		sym_dwobj_finish(dbg, f->obj);
		sym_elf_close(&f->elf);
		return NULL;
	}
	f->dbg = dbg;
	f->failed = false;
	return f;
}

#ifndef DW_AT_GNU_dwo_id
#define DW_AT_GNU_dwo_id 0x2131
#endif

struct find {
	struct sym_split_file *f;
	uint64_t id, die_off;
	bool found;
};

/* A DWARF 4 unit's DW_AT_GNU_dwo_id (data8). */
static bool gnu_dwo_id(Dwarf_Debug dbg, uint64_t die_off, uint64_t *id)
{
	Dwarf_Error e = NULL;
	Dwarf_Die die = NULL;
	Dwarf_Attribute a = NULL;
	Dwarf_Unsigned v = 0;
	bool ok = dwarf_offdie_b(dbg, die_off, true, &die, &e) == DW_DLV_OK &&
		  dwarf_attr(die, DW_AT_GNU_dwo_id, &a, &e) == DW_DLV_OK &&
		  dwarf_formudata(a, &v, &e) == DW_DLV_OK;
	if (e)
		dwarf_dealloc_error(dbg, e);
	if (a)
		dwarf_dealloc_attribute(a);
	if (die)
		dwarf_dealloc_die(die);
	*id = v;
	return ok;
}

static int unit_cb(void *arg, const struct sym_cu *u)
{
	struct find *k = arg;
	uint64_t id = 0;
	bool match = u->version == 5 ? u->unit_type == DW_UT_split_compile && u->dwo_id == k->id
				     : gnu_dwo_id(k->f->dbg, u->die_off, &id) && id == k->id;
	if (!match)
		return 0;
	k->die_off = u->die_off;
	k->found = true;
	return 1;
}

/* The top DIE of F's unit whose dwo_id is ID (a .dwo: its unit headers
 * read with our own reader; a .dwp: through its .debug_cu_index). */
static bool find_unit(struct sym_split_file *f, uint64_t id, Dwarf_Die *die)
{
	Dwarf_Error e = NULL;
	*die = NULL;
	if (f->dwp) {
		Dwarf_Sig8 sig;
		for (int i = 0; i < 8; i++) /* the id's bytes as the file holds them */
			sig.signature[i] = (char)(f->elf.msb ? id >> (56 - 8 * i) : id >> (8 * i));
		int r = dwarf_die_from_hash_signature(f->dbg, &sig, "cu", die, &e);
		if (r == DW_DLV_ERROR && e)
			dwarf_dealloc_error(f->dbg, e);
		return r == DW_DLV_OK;
	}
	struct find k = { .f = f, .id = id };
	sym_units(f->info, f->info_len, unit_cb, &k);
	if (!k.found)
		return false;
	int r = dwarf_offdie_b(f->dbg, k.die_off, true, die, &e);
	if (r == DW_DLV_ERROR && e)
		dwarf_dealloc_error(f->dbg, e);
	return r == DW_DLV_OK;
}

/* Where F's range lists for the unit at DIE start: a .dwo's one
 * contribution, or the unit's contribution to a .dwp's
 * .debug_rnglists.dwo (its .debug_cu_index row). DW_FORM_rnglistx
 * indexes the offset array right after the contribution's header (§7.28:
 * split units have no DW_AT_rnglists_base). */
static void unit_rnglists(struct sym_split_file *f, Dwarf_Die die, struct sym_split_unit *out)
{
	out->rnglists = NULL;
	if (!f->rnglists)
		return;
	uint64_t start = 0, size = f->rnglists_len;
	if (f->dwp) {
		Dwarf_Debug_Fission_Per_CU fis;
		Dwarf_Error e = NULL;
		memset(&fis, 0, sizeof(fis));
		int r = dwarf_get_debugfission_for_die(die, &fis, &e);
		if (r == DW_DLV_ERROR && e)
			dwarf_dealloc_error(f->dbg, e);
		if (r != DW_DLV_OK)
			return;
		start = fis.pcu_offset[SECT_RNGLISTS];
		size = fis.pcu_size[SECT_RNGLISTS];
		if (start > f->rnglists_len || size > f->rnglists_len - start)
			return;
	}
	struct buf b = buf_make(f->rnglists + start, size);
	uint64_t ulen;
	unsigned off_size;
	if (buf_unit_length(&b, &ulen, &off_size) != 0)
		return;
	out->rnglists = f->rnglists + start;
	out->rnglists_len = size;
	out->rnglists_base = (off_size == 8 ? 12u : 4u) + 8u; /* + version .. offset_entry_count */
}

/* dir/name into BUF; false when it does not fit. */
static bool join(char *buf, size_t cap, const char *dir, size_t dir_len, const char *name)
{
	int n = snprintf(buf, cap, "%.*s%s%s", (int)dir_len, dir,
			 dir_len && dir[dir_len - 1] != '/' ? "/" : "", name);
	return n > 0 && (size_t)n < cap;
}

static size_t dir_len(const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	return slash ? (size_t)(slash - path) + 1 : 0;
}

int sym_split_find(struct sym_splits *s, const char *path, const char *main_path, void *main_dbg,
		   const char *comp_dir, const char *dwo_name, uint64_t dwo_id,
		   struct sym_split_unit *out)
{
	int err = 0;
	char buf[4096];
	Dwarf_Die die = NULL;
	struct sym_split_file *f = NULL;
	/* 1. A package next to the file, or next to the main file. */
	const char *owners[2] = { path, main_path && path && strcmp(main_path, path) ? main_path : NULL };
	for (int i = 0; i < 2 && !die; i++) {
		if (!owners[i] || snprintf(buf, sizeof(buf), "%s.dwp", owners[i]) >= (int)sizeof(buf))
			continue;
		f = split_open(s, buf, main_dbg, true, &err);
		if (f && !find_unit(f, dwo_id, &die))
			f = NULL;
	}
	/* 2. The unit's own .dwo. */
	if (!die && dwo_name && dwo_name[0]) {
		const char *base = strrchr(dwo_name, '/');
		base = base ? base + 1 : dwo_name;
		size_t here = dir_len(path);
		char cand[4][4096];
		int nc = 0;
		if (dwo_name[0] == '/') {
			if (strlen(dwo_name) < sizeof(cand[0]))
				strcpy(cand[nc++], dwo_name);
		} else if (comp_dir && join(cand[nc], sizeof(cand[nc]), comp_dir, strlen(comp_dir), dwo_name)) {
			nc++;
		}
		if (here && join(cand[nc], sizeof(cand[nc]), path, here, dwo_name))
			nc++;
		if (here && base != dwo_name && join(cand[nc], sizeof(cand[nc]), path, here, base))
			nc++;
		for (int i = 0; i < nc && !die && !err; i++) {
			f = split_open(s, cand[i], main_dbg, false, &err);
			if (f && !find_unit(f, dwo_id, &die))
				f = NULL;
		}
	}
	if (!die)
		return err ? err : BK_E_NOT_FOUND;
	out->dbg = f->dbg;
	out->die = die;
	for (size_t i = 0; i < s->n; i++)
		if (s->f[i] == f)
			out->tag = (unsigned)i + 1;
	unit_rnglists(f, die, out);
	return 0;
}

void sym_splits_close(struct sym_splits *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sym_split_file *f = s->f[i];
		if (f->dbg)
			sym_dwobj_finish(f->dbg, f->obj);
		sym_elf_close(&f->elf);
		base_free(f->path);
		base_free(f);
	}
	base_free(s->f);
	*s = (struct sym_splits){ 0 };
}
