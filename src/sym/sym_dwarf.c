/* DWARF through libdwarf 20210528: the line index and the function / inlined
 * call ranges of one compile unit at a time, read when a lookup first lands
 * in the unit, strings copied.
 *
 * Which unit covers which addresses (sym_dwarf_open, sym_dwarf_ready):
 * .debug_aranges when present, read at open with the bounded reader
 * (sym_aranges.c); before the first lookup the unit headers of .debug_info
 * are walked (also ours) and every compile or partial unit that has no
 * .debug_aranges set (clang emits none by default) gets the ranges of its
 * top DIE (DW_AT_low_pc / DW_AT_high_pc, or DW_AT_ranges) instead. A unit
 * whose top DIE gives no range at all is indexed right away, since nothing
 * says where its code is; but not a partial unit (dwz's hold shared DIEs,
 * never code), which is read only through references. Type units hold no code and are only read by
 * sym_index_all. libdwarf itself is opened over our own section view
 * (sym_dwobj.c) at that point, not at open; ET_REL objects, whose DWARF
 * needs relocating, go through dwarf_init_path as before.
 *
 * Lines (DWARF 5 §6.2): every row of every sequence, with rows that share an
 * address collapsed to the last one (what binutils does, PR ld/4986; an end
 * of sequence replaces a row at its own address, which covers no byte) and
 * an end mark at each DW_LNE_end_sequence so a lookup past the end of a
 * sequence finds nothing. File names are joined as binutils' addr2line
 * joins them: an absolute name as is, else comp_dir/dir/name (dir dropped
 * when absolute, comp_dir when absent). DWARF 5 file numbers are corrected
 * by sym_line.c when libdwarf's default file is wrong.
 *
 * Scopes (DWARF 5 §3.3, §3.3.8.2): every DW_TAG_subprogram and
 * DW_TAG_inlined_subroutine with code (low_pc/high_pc, or DW_AT_ranges read
 * by sym_ranges.c from .debug_ranges for DWARF 2-4 and .debug_rnglists for
 * 5, because libdwarf's own range-list reader trusts the file); an inlined call's
 * parent is the nearest enclosing recorded scope (lexical blocks are passed
 * through), a subprogram starts a new tree. Names: DW_AT_linkage_name (or
 * DW_AT_MIPS_linkage_name) demangled, else DW_AT_name, following
 * DW_AT_abstract_origin and DW_AT_specification for at most
 * SYM_MAX_REF_HOPS steps; a linkage name anywhere on the chain wins, as in
 * binutils. Resolved names are cached by DIE offset across units.
 *
 * Split DWARF (sym_split.c): a skeleton unit's lines are its own; its
 * scopes are read from its split unit in a .dwo or .dwp, with that file's
 * libdwarf handle, its DIE offsets tagged in the caches (SPLIT_SHIFT) and
 * its addresses resolved from the skeleton's .debug_addr.
 *
 * Robustness: the DIE tree is walked with an explicit stack of at most
 * SYM_MAX_DIE_DEPTH levels; DIE offsets must strictly increase in the walk
 * (pre-order), which bounds it by the section size whatever the sibling
 * pointers say. Every libdwarf call gets an error pointer (without one
 * libdwarf aborts the process); an error skips the rest of what it spoils
 * (a row, a DIE, or the rest of a CU) and counts the CU as failed. A unit
 * header that cannot be read ends the walk: the next one cannot be found.
 * The guards of sym_guard.c run at open, before libdwarf can see the file.
 * Only BK_E_NOMEM from our own allocations is an error: then what the
 * failed call built is dropped (caches of resolved names and file names may
 * keep entries, which are right whatever happens next) and the unit stays
 * unindexed. Ranges and sequences that start outside the executable
 * segments are dropped (discarded code).
 */
#include <stdio.h>
#include <stdlib.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "sym.h"
#include "../loader/loader.h"

/* Offset -> value map (open addressing) for DIE names and file indexes. */
struct omap_ent {
	uint64_t key;
	const char *name;
	uint32_t val;
	bool used;
};

struct omap {
	struct omap_ent *e;
	size_t n, used;
};

/* The slot for KEY (existing or to fill), or NULL on NOMEM. */
static struct omap_ent *omap_slot(struct omap *m, uint64_t key)
{
	if ((m->used + 1) * 2 > m->n) {
		size_t n = m->n ? m->n * 2 : 256;
		struct omap_ent *e = base_calloc(n, sizeof(*e));
		if (!e)
			return NULL;
		for (size_t i = 0; i < m->n; i++) {
			if (!m->e[i].used)
				continue;
			size_t j = (m->e[i].key * 0x9e3779b97f4a7c15u >> 17) & (n - 1);
			while (e[j].used)
				j = (j + 1) & (n - 1);
			e[j] = m->e[i];
		}
		base_free(m->e);
		m->e = e;
		m->n = n;
	}
	size_t j = (key * 0x9e3779b97f4a7c15u >> 17) & (m->n - 1);
	while (m->e[j].used && m->e[j].key != key)
		j = (j + 1) & (m->n - 1);
	return &m->e[j];
}

static void omap_fill(struct omap *m, struct omap_ent *slot, uint64_t key)
{
	if (!slot->used) {
		slot->used = true;
		slot->key = key;
		m->used++;
	}
}

/* The DWARF of one sym_file, kept from sym_open to sym_close. */
struct sym_dwarf {
	struct sym_elf elf;           /* the file DWARF is read from */
	char *path;                   /* the DWARF's file, for dwarf_init_path (ET_REL) and
				       * the files found beside it (NULL: from memory) */
	bool rel;                     /* ET_REL: libdwarf's own reader, which relocates */
	uint64_t (*segs)[2];          /* owned copy of the code segments */
	struct sym_code code;
	struct sym_vec aranges;       /* struct arange, from .debug_aranges */
	struct sym_vec sets;          /* uint64_t: CU offsets with a .debug_aranges set */
	bool have_aranges, aranges_nomem;
	bool opened;                  /* libdwarf opened (or tried: dbg NULL on failure) */
	bool ready;                   /* f->cus and f->cu_ranges are set up */
	bool placed;                  /* ... and every unit they do not place is indexed */
	Dwarf_Debug dbg;
	struct sym_dwobj *obj;
	/* The supplementary file dwz made (.gnu_debugaltlink; DWARF 5's
	 * .debug_sup): strings (DW_FORM_GNU_strp_alt, DW_FORM_strp_sup) come
	 * from it through libdwarf's tied file, DIEs (DW_FORM_GNU_ref_alt,
	 * DW_FORM_ref_sup4/8) by offsets marked ALT_REF. */
	struct sym_elf alt_elf;
	Dwarf_Debug alt_dbg;
	struct sym_dwobj *alt_obj;
	struct sym_splits splits;     /* split DWARF: .dwo / .dwp files (sym_split.c) */
	char *main_path;              /* the file the code is in (NULL: not a file) */
	const uint8_t *line_sec;      /* raw .debug_line, for sym_line.c */
	size_t line_len;
	struct sym_rng_ctx rng;       /* the sections part; bases are per CU */
	struct omap names;            /* DIE offset -> resolved name (val: 1 = linkage) */
	struct omap prefixes;         /* DIE offset -> its scopes' prefix ("ns::Class::") */
	struct omap langs;            /* CU offset -> 1 + whether its names are qualified */
	struct omap file_ix;          /* interned path -> index into f->files */
};

struct arange {
	uint64_t low, high, cu_off;
};

/* Reading one CU (or the top DIEs of several). */
struct dw {
	struct sym_file *f;
	struct sym_dwarf *d;
	Dwarf_Debug dbg;
	const struct sym_code *code;
	const uint8_t *line_sec;
	size_t line_len;
	struct sym_vec lines, scopes, ranges, tmp;
	uint32_t ord;
	size_t file_fixups;
	/* The current CU. */
	Dwarf_Half cu_version;
	struct sym_rng_ctx rng;       /* sections + the CU's bases */
	uint32_t *cu_files;           /* DWARF file number - cu_file_base -> files index */
	Dwarf_Signed cu_file_base, cu_nfiles;
	/* Reading a split unit: its DIE offsets are keyed with KEY_TAG (the
	 * split file's tag << SPLIT_SHIFT) in the name caches, and DWARF 4
	 * (GNU) range offsets are relative to the skeleton's ranges base. */
	Dwarf_Off key_tag;
	bool split_v4;
	uint64_t gnu_ranges_base;
	bool cu_failed;
	int fatal;                    /* BK_E_NOMEM: stop everything */
};

/* libdwarf returned R: true for DW_DLV_OK; an error is released and marks
 * the CU as failed. */
static bool dw_ok(struct dw *c, int r, Dwarf_Error *e)
{
	if (r == DW_DLV_ERROR) {
		if (*e)
			dwarf_dealloc_error(c->dbg, *e);
		*e = NULL;
		c->cu_failed = true;
	}
	return r == DW_DLV_OK;
}

static void nomem(struct dw *c)
{
	c->fatal = BK_E_NOMEM;
}

/* ---- Attributes ------------------------------------------------------------------ */

static const char *die_text(struct dw *c, Dwarf_Die die, Dwarf_Half at)
{
	Dwarf_Error e = NULL;
	char *s = NULL;
	if (!dw_ok(c, dwarf_die_text(die, at, &s, &e), &e))
		return NULL;
	/* A string in a supplementary file that is not there: libdwarf gives
	 * these placeholders; the name is unknown. */
	if (s && s[0] == '<' && (!strcmp(s, "<DW_FORM_GNU_strp_alt-no-tied-file>") ||
				 !strcmp(s, "<DW_FORM_strp_sup-no-tied-file>")))
		return NULL;
	return s; /* points into the string section: valid until dwarf_finish */
}

static bool die_udata(struct dw *c, Dwarf_Die die, Dwarf_Half at, Dwarf_Unsigned *v)
{
	Dwarf_Error e = NULL;
	Dwarf_Attribute a = NULL;
	if (!dw_ok(c, dwarf_attr(die, at, &a, &e), &e))
		return false;
	Dwarf_Half form = 0;
	bool ok = dw_ok(c, dwarf_whatform(a, &form, &e), &e);
	if (ok && form == DW_FORM_implicit_const) {
		/* libdwarf 20210528's formudata rejects DW_FORM_implicit_const
		 * (gcc uses it for DW_AT_call_file); formsdata reads it. */
		Dwarf_Signed sv = 0;
		ok = dw_ok(c, dwarf_formsdata(a, &sv, &e), &e) && sv >= 0;
		*v = (Dwarf_Unsigned)sv;
	} else if (ok) {
		ok = dw_ok(c, dwarf_formudata(a, v, &e), &e);
	}
	dwarf_dealloc_attribute(a);
	return ok;
}

/* A DIE offset in the supplementary file, not the file's own. */
#define ALT_REF ((Dwarf_Off)1 << 63)
/* Cache keys of DIEs in split files: the file's tag above bit SPLIT_SHIFT
 * (a DIE offset needs fewer bits; a larger one is refused). */
#define SPLIT_SHIFT 48
#define OFF_MASK (((Dwarf_Off)1 << SPLIT_SHIFT) - 1)
#ifndef DW_FORM_GNU_ref_alt
#define DW_FORM_GNU_ref_alt 0x1f20
#endif

/* The DIE a reference attribute names, as an offset in .debug_info (with
 * ALT_REF when it is the supplementary file's: a reference of that form,
 * or any reference from a DIE there, IN_ALT). */
static bool die_ref(struct dw *c, Dwarf_Die die, Dwarf_Half at, bool in_alt, Dwarf_Off *off)
{
	Dwarf_Error e = NULL;
	Dwarf_Attribute a = NULL;
	if (!dw_ok(c, dwarf_attr(die, at, &a, &e), &e))
		return false;
	Dwarf_Half form = 0;
	bool ok = dw_ok(c, dwarf_whatform(a, &form, &e), &e) &&
		  dw_ok(c, dwarf_global_formref(a, off, &e), &e) && !(*off & ALT_REF);
	if (ok && (in_alt || form == DW_FORM_GNU_ref_alt || form == DW_FORM_ref_sup4 ||
		   form == DW_FORM_ref_sup8))
		*off |= ALT_REF;
	dwarf_dealloc_attribute(a);
	return ok;
}

static const char *die_linkage(struct dw *c, Dwarf_Die die)
{
	const char *s = die_text(c, die, DW_AT_linkage_name);
	return s ? s : die_text(c, die, DW_AT_MIPS_linkage_name);
}

static bool die_origin(struct dw *c, Dwarf_Die die, bool in_alt, Dwarf_Off *off)
{
	return die_ref(c, die, DW_AT_abstract_origin, in_alt, off) ||
	       die_ref(c, die, DW_AT_specification, in_alt, off);
}

/* ---- Names --------------------------------------------------------------------------- */

/* ---- Qualified names -------------------------------------------------------------
 *
 * A C++ (or other non-C) function known by DW_AT_name alone (no linkage
 * name: a static function, one in an anonymous namespace, some inlined
 * instances) is named with the scopes around the DIE that names it
 * (namespaces, classes, structs, unions), as gdb prints it:
 * "app::(anonymous namespace)::Local::boom". libdwarf has no parent link,
 * so the way down from the unit's top DIE is found by offsets: a DIE's
 * subtree lies between it and its next sibling. Cached per DIE. */

/* Whether a unit of language LANG (0: the unit does not say, as dwz's
 * partial units do not) may have functions inside scopes: anything but C
 * and assembly, whose units are not walked for scopes they cannot have. */
static bool qualified_language(Dwarf_Unsigned lang)
{
	return lang != DW_LANG_C89 && lang != DW_LANG_C && lang != DW_LANG_C99 &&
	       lang != DW_LANG_C11 && lang != DW_LANG_Mips_Assembler;
}

#define SYM_MAX_SCOPE_WALK 100000 /* DIEs stepped over finding one DIE's scopes */

/* Append the scope S (a namespace, class, struct or union) to PRE. */
static bool scope_append(struct dw *c, Dwarf_Die s, Dwarf_Half tag, char *pre, size_t cap)
{
	const char *n = die_text(c, s, DW_AT_name);
	if (!n && tag == DW_TAG_namespace)
		n = "(anonymous namespace)";
	if (!n)
		return true; /* an unnamed class: nothing gdb would print either */
	size_t have = strlen(pre), add = strlen(n);
	if (have + add + 3 > cap)
		return false;
	memcpy(pre + have, n, add);
	memcpy(pre + have + add, "::", 3);
	return true;
}

/* The scopes around the DIE at OFF (ALT_REF: the supplementary file's),
 * outermost first, each followed by "::"; "" when it has none or its unit
 * is not C++. NULL when memory ran out. */
static const char *scope_prefix(struct dw *c, Dwarf_Off off)
{
	if ((off & ~ALT_REF) > OFF_MASK)
		return "";
	Dwarf_Off key = off | c->key_tag;
	struct omap_ent *slot = omap_slot(&c->d->prefixes, key);
	if (!slot) {
		nomem(c);
		return NULL;
	}
	if (slot->used)
		return slot->name;
	Dwarf_Debug dbg = off & ALT_REF ? c->d->alt_dbg : c->dbg, own = c->dbg;
	Dwarf_Off target = off & ~ALT_REF;
	char pre[1024] = "";
	Dwarf_Error e = NULL;
	Dwarf_Die die = NULL, cu = NULL;
	Dwarf_Off cu_off = 0;
	c->dbg = dbg;
	bool ok = dbg && dw_ok(c, dwarf_offdie_b(dbg, target, true, &die, &e), &e) &&
		  dw_ok(c, dwarf_CU_dieoffset_given_die(die, &cu_off, &e), &e);
	if (die)
		dwarf_dealloc_die(die);
	/* The unit's language, once per unit. */
	Dwarf_Unsigned lang = 0;
	Dwarf_Off lkey = (cu_off & OFF_MASK) | (off & ALT_REF) | c->key_tag;
	struct omap_ent *ls = ok ? omap_slot(&c->d->langs, lkey) : NULL;
	if (ok && ls && ls->used) {
		ok = ls->val == 2;
	} else if (ok && ls) {
		ok = dw_ok(c, dwarf_offdie_b(dbg, cu_off, true, &cu, &e), &e);
		if (ok && !die_udata(c, cu, DW_AT_language, &lang))
			lang = 0;
		ok = ok && qualified_language(lang);
		omap_fill(&c->d->langs, ls, lkey);
		ls->val = ok ? 2 : 1;
	} else {
		ok = false;
	}
	if (ok && !cu && !dw_ok(c, dwarf_offdie_b(dbg, cu_off, true, &cu, &e), &e))
		ok = false;
	/* Down from the top DIE: into the child whose subtree holds TARGET. */
	Dwarf_Die cur = cu;
	cu = NULL;
	unsigned steps = 0;
	for (unsigned depth = 0; ok && cur && depth < SYM_MAX_DIE_DEPTH; depth++) {
		Dwarf_Die s = NULL, into = NULL;
		if (dwarf_child(cur, &s, &e) != DW_DLV_OK) {
			if (e)
				dwarf_dealloc_error(dbg, e), e = NULL;
			break;
		}
		while (s && steps++ < SYM_MAX_SCOPE_WALK) {
			Dwarf_Off so = 0, no = UINT64_MAX;
			Dwarf_Die n = NULL;
			if (!dw_ok(c, dwarf_dieoffset(s, &so, &e), &e))
				break;
			int r = dwarf_siblingof_b(dbg, s, true, &n, &e);
			if (r == DW_DLV_ERROR) {
				dwarf_dealloc_error(dbg, e);
				e = NULL;
			}
			if (n && !dw_ok(c, dwarf_dieoffset(n, &no, &e), &e))
				no = UINT64_MAX;
			if (so == target) { /* found: PRE is complete */
				if (n)
					dwarf_dealloc_die(n);
				break;
			}
			if (so < target && target < no) {
				into = s;
				s = NULL;
				if (n)
					dwarf_dealloc_die(n);
				break;
			}
			dwarf_dealloc_die(s);
			s = n;
		}
		if (s)
			dwarf_dealloc_die(s);
		dwarf_dealloc_die(cur);
		cur = into;
		if (!into)
			break;
		Dwarf_Half tag = 0;
		if (!dw_ok(c, dwarf_tag(into, &tag, &e), &e))
			break;
		if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
		     tag == DW_TAG_structure_type || tag == DW_TAG_union_type) &&
		    !scope_append(c, into, tag, pre, sizeof(pre)))
			break;
	}
	if (cur)
		dwarf_dealloc_die(cur);
	if (cu)
		dwarf_dealloc_die(cu);
	c->dbg = own;
	const char *r = pre[0] ? sym_intern(&c->f->strings, pre, strlen(pre)) : "";
	if (!r) {
		nomem(c);
		return NULL;
	}
	if (!(slot = omap_slot(&c->d->prefixes, key))) { /* the table may have grown */
		nomem(c);
		return NULL;
	}
	omap_fill(&c->d->prefixes, slot, key);
	slot->name = r;
	return r;
}

/* NAME (DW_AT_name of the DIE at OFF) with its scopes, interned. */
static const char *qualified(struct dw *c, Dwarf_Off off, const char *name)
{
	const char *pre = scope_prefix(c, off);
	if (!pre)
		return NULL;
	if (!pre[0])
		return sym_intern(&c->f->strings, name, strlen(name));
	char buf[2048];
	int n = snprintf(buf, sizeof(buf), "%s%s", pre, name);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return sym_intern(&c->f->strings, name, strlen(name));
	return sym_intern(&c->f->strings, buf, (size_t)n);
}

/* Resolve the name the DIE at OFF gives (following its own references);
 * cached by OFF. *LINKAGE: the name came from a linkage name. */
static const char *ref_name(struct dw *c, Dwarf_Off off, bool *linkage)
{
	if ((off & ~ALT_REF) > OFF_MASK)
		return NULL;
	Dwarf_Off key = off | c->key_tag;
	struct omap_ent *slot = omap_slot(&c->d->names, key);
	if (!slot) {
		nomem(c);
		return NULL;
	}
	if (slot->used) {
		*linkage = slot->val;
		return slot->name;
	}
	const char *name = NULL, *link = NULL;
	Dwarf_Off cur = off, name_off = 0;
	Dwarf_Debug own = c->dbg; /* dw_ok releases errors to the DIE's own file */
	for (unsigned hop = 0; hop < SYM_MAX_REF_HOPS && !link; hop++) {
		Dwarf_Error e = NULL;
		Dwarf_Die d = NULL;
		bool in_alt = cur & ALT_REF;
		c->dbg = in_alt ? c->d->alt_dbg : own;
		if (!c->dbg || !dw_ok(c, dwarf_offdie_b(c->dbg, cur & ~ALT_REF, true, &d, &e), &e))
			break;
		link = die_linkage(c, d);
		if (!link && !name && (name = die_text(c, d, DW_AT_name)))
			name_off = cur;
		Dwarf_Off next;
		bool more = !link && die_origin(c, d, in_alt, &next) && next != cur;
		dwarf_dealloc_die(d);
		if (!more)
			break;
		cur = next;
	}
	c->dbg = own;
	const char *r = NULL;
	if (link)
		r = sym_intern_name(&c->f->strings, link);
	else if (name)
		r = qualified(c, name_off, name);
	if ((link || name) && !r) {
		nomem(c);
		return NULL;
	}
	/* The table may have grown while following the chain: find the slot again. */
	slot = omap_slot(&c->d->names, key);
	if (!slot) {
		nomem(c);
		return NULL;
	}
	omap_fill(&c->d->names, slot, key);
	slot->name = r;
	slot->val = link != NULL;
	*linkage = link != NULL;
	return r;
}

static const char *die_name(struct dw *c, Dwarf_Die die)
{
	const char *link = die_linkage(c, die), *r = NULL;
	if (link) {
		if (!(r = sym_intern_name(&c->f->strings, link)))
			nomem(c);
		return r;
	}
	const char *name = die_text(c, die, DW_AT_name);
	Dwarf_Off ref;
	if (die_origin(c, die, false, &ref)) {
		bool from_link = false;
		r = ref_name(c, ref, &from_link);
		if (c->fatal)
			return NULL;
		if (from_link || !name)
			return r;
	}
	Dwarf_Off self = 0;
	Dwarf_Error e = NULL;
	if (name && dw_ok(c, dwarf_dieoffset(die, &self, &e), &e))
		r = qualified(c, self, name);
	else if (name)
		r = sym_intern(&c->f->strings, name, strlen(name));
	if (name && !r)
		nomem(c);
	return r;
}

/* ---- Ranges ------------------------------------------------------------------------------ */

static void add_tmp_range(struct dw *c, uint64_t lo, uint64_t hi)
{
	if (hi <= lo || c->tmp.n >= SYM_MAX_RANGES_PER_DIE)
		return;
	uint64_t *r = sym_vec_push(&c->tmp);
	if (!r) {
		nomem(c);
		return;
	}
	r[0] = lo;
	r[1] = hi;
}

/* A section offset (DW_FORM_sec_offset, or data4/data8 before DWARF 4). */
static bool attr_secoff(struct dw *c, Dwarf_Attribute a, Dwarf_Unsigned *v)
{
	Dwarf_Error e = NULL;
	if (dwarf_formudata(a, v, &e) == DW_DLV_OK)
		return true;
	if (e)
		dwarf_dealloc_error(c->dbg, e);
	e = NULL;
	Dwarf_Off off = 0;
	if (!dw_ok(c, dwarf_global_formref(a, &off, &e), &e))
		return false;
	*v = off;
	return true;
}

static bool die_secoff(struct dw *c, Dwarf_Die die, Dwarf_Half at, Dwarf_Unsigned *v)
{
	Dwarf_Error e = NULL;
	Dwarf_Attribute a = NULL;
	if (!dw_ok(c, dwarf_attr(die, at, &a, &e), &e))
		return false;
	bool ok = attr_secoff(c, a, v);
	dwarf_dealloc_attribute(a);
	return ok;
}

static void range_cb(void *arg, uint64_t lo, uint64_t hi)
{
	add_tmp_range(arg, lo, hi);
}

/* DW_AT_ranges: decoded by sym_ranges.c, not libdwarf (see there). */
static void die_ranges_attr(struct dw *c, Dwarf_Attribute a)
{
	Dwarf_Error e = NULL;
	Dwarf_Half form = 0;
	Dwarf_Unsigned val = 0;
	if (!dw_ok(c, dwarf_whatform(a, &form, &e), &e))
		return;
	bool is_index = form == DW_FORM_rnglistx;
	if (is_index ? !dw_ok(c, dwarf_formudata(a, &val, &e), &e) : !attr_secoff(c, a, &val))
		return;
	if (c->split_v4 && !is_index) /* GCC's DWARF 4 split units: relative offsets */
		val = val > UINT64_MAX - c->gnu_ranges_base ? UINT64_MAX : val + c->gnu_ranges_base;
	int err = c->cu_version >= 5 ? sym_rnglist(&c->rng, is_index, val, range_cb, c)
				     : sym_ranges4(&c->rng, val, range_cb, c);
	if (err)
		c->cu_failed = true;
}

/* A split unit's DW_AT_low_pc: an index into the skeleton's .debug_addr
 * (DW_FORM_addrx*, DW_FORM_GNU_addr_index), resolved by sym_ranges.c with
 * the skeleton's base, since libdwarf 20210528 finds no address through
 * its tied file; or a plain address. */
static int split_lowpc(struct dw *c, Dwarf_Die die, Dwarf_Addr *lo, Dwarf_Error *e)
{
	Dwarf_Attribute a = NULL;
	int r = dwarf_attr(die, DW_AT_low_pc, &a, e);
	if (r != DW_DLV_OK)
		return r;
	Dwarf_Unsigned ix = 0;
	r = dwarf_get_debug_addr_index(a, &ix, e);
	if (r == DW_DLV_OK) {
		uint64_t v = 0;
		r = sym_debug_addr(&c->rng, ix, &v) == 0 ? DW_DLV_OK : DW_DLV_NO_ENTRY;
		*lo = v;
	} else {
		if (r == DW_DLV_ERROR && *e)
			dwarf_dealloc_error(c->dbg, *e);
		*e = NULL;
		r = dwarf_formaddr(a, lo, e);
	}
	dwarf_dealloc_attribute(a);
	return r;
}

/* The DIE's code ranges into c->tmp (emptied first). */
static void die_ranges(struct dw *c, Dwarf_Die die)
{
	Dwarf_Error e = NULL;
	Dwarf_Addr lo = 0, hi = 0;
	c->tmp.n = 0;
	if (dw_ok(c, c->key_tag ? split_lowpc(c, die, &lo, &e) : dwarf_lowpc(die, &lo, &e), &e)) {
		Dwarf_Half form = 0;
		enum Dwarf_Form_Class cls = DW_FORM_CLASS_UNKNOWN;
		if (!dw_ok(c, dwarf_highpc_b(die, &hi, &form, &cls, &e), &e))
			return;
		if (cls == DW_FORM_CLASS_CONSTANT) {
			if (hi > UINT64_MAX - lo)
				return;
			hi += lo;
		}
		add_tmp_range(c, lo, hi);
		return;
	}
	Dwarf_Attribute a = NULL;
	if (!dw_ok(c, dwarf_attr(die, DW_AT_ranges, &a, &e), &e))
		return;
	die_ranges_attr(c, a);
	dwarf_dealloc_attribute(a);
}

/* ---- Scopes ------------------------------------------------------------------------------- */

static const char *cu_file_name(struct dw *c, Dwarf_Unsigned fileno)
{
	if (!c->cu_files || fileno < (Dwarf_Unsigned)c->cu_file_base ||
	    fileno - (Dwarf_Unsigned)c->cu_file_base >= (Dwarf_Unsigned)c->cu_nfiles)
		return NULL;
	uint32_t ix = c->cu_files[fileno - (Dwarf_Unsigned)c->cu_file_base];
	return ((const char **)c->f->files.p)[ix];
}

/* Record DIE (a subprogram or inlined call) as a scope if it has code;
 * returns its index or -1. */
static int32_t add_scope(struct dw *c, Dwarf_Die die, Dwarf_Half tag, int32_t enclosing)
{
	die_ranges(c, die);

	if (c->fatal)
		return -1;
	const uint64_t (*tr)[2] = c->tmp.p;
	size_t keep = 0;
	for (size_t i = 0; i < c->tmp.n; i++)
		keep += sym_code_has(c->code, tr[i][0]);
	if (keep == 0 || c->scopes.n >= INT32_MAX)
		return -1;

	int32_t parent = tag == DW_TAG_inlined_subroutine ? enclosing : -1;
	struct sym_scope s = { .parent = parent };
	s.depth = parent >= 0 ? ((struct sym_scope *)c->scopes.p)[parent].depth + 1 : 0;
	s.name = die_name(c, die);
	if (c->fatal)
		return -1;
	if (tag == DW_TAG_inlined_subroutine) {
		Dwarf_Unsigned v;
		if (die_udata(c, die, DW_AT_call_file, &v))
			s.call_file = cu_file_name(c, v);
		if (die_udata(c, die, DW_AT_call_line, &v))
			s.call_line = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
		if (die_udata(c, die, DW_AT_call_column, &v))
			s.call_column = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
	}
	struct sym_scope *sp = sym_vec_push(&c->scopes);
	if (!sp) {
		nomem(c);
		return -1;
	}
	*sp = s;
	int32_t ix = (int32_t)(c->scopes.n - 1);
	tr = c->tmp.p;
	for (size_t i = 0; i < c->tmp.n; i++) {
		if (!sym_code_has(c->code, tr[i][0]))
			continue;
		struct sym_range *r = sym_vec_push(&c->ranges);
		if (!r) {
			nomem(c);
			return -1;
		}
		r->low = tr[i][0];
		r->high = tr[i][1];
		r->scope = (uint32_t)ix;
		r->depth = s.depth;
	}
	return ix;
}

/* Tags whose children may hold subprograms, inlined calls or blocks. */
static bool may_hold_code(Dwarf_Half tag)
{
	switch (tag) {
	case DW_TAG_lexical_block: case DW_TAG_namespace: case DW_TAG_module:
	case DW_TAG_class_type: case DW_TAG_structure_type: case DW_TAG_union_type:
	case DW_TAG_interface_type: case DW_TAG_try_block: case DW_TAG_catch_block:
	case DW_TAG_with_stmt: case DW_TAG_common_block:
		return true;
	default:
		return false;
	}
}

struct level {
	Dwarf_Die die;
	int32_t scope; /* the scope enclosing this DIE's children */
};

static void cu_scopes(struct dw *c, Dwarf_Die cu, Dwarf_Off cu_off)
{
	Dwarf_Error e = NULL;
	struct level st[SYM_MAX_DIE_DEPTH];
	Dwarf_Die first = NULL;
	if (!dw_ok(c, dwarf_child(cu, &first, &e), &e))
		return;
	int d = 0;
	st[0].die = first;
	Dwarf_Off last_off = cu_off;
	while (d >= 0) {
		Dwarf_Die die = st[d].die;
		int32_t enclosing = d > 0 ? st[d - 1].scope : -1;
		st[d].scope = enclosing;
		Dwarf_Off off = 0;
		if (!dw_ok(c, dwarf_dieoffset(die, &off, &e), &e) || off <= last_off) {
			c->cu_failed = true; /* out of pre-order: hostile sibling links */
			break;
		}
		last_off = off;

		bool descend = false;
		Dwarf_Half tag = 0;
		if (dw_ok(c, dwarf_tag(die, &tag, &e), &e)) {
			if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
				int32_t s = add_scope(c, die, tag, enclosing);
				if (c->fatal)
					break;
				if (s >= 0) {
					st[d].scope = s;
					descend = true;
				}
			} else {
				descend = may_hold_code(tag);
			}
		}
		Dwarf_Die child = NULL;
		if (descend) {
			if (d + 1 >= SYM_MAX_DIE_DEPTH)
				c->cu_failed = true;
			else if (dw_ok(c, dwarf_child(die, &child, &e), &e)) {
				st[++d].die = child;
				continue;
			}
		}
		/* Next sibling here or at the first level up that has one. */
		while (d >= 0) {
			Dwarf_Die sib = NULL;
			int r = dwarf_siblingof_b(c->dbg, st[d].die, true, &sib, &e);
			bool ok = dw_ok(c, r, &e);
			dwarf_dealloc_die(st[d].die);
			st[d].die = NULL;
			if (ok) {
				st[d].die = sib;
				break;
			}
			if (r == DW_DLV_ERROR) {
				/* A broken DIE: its siblings cannot be found,
				 * nor can those of its parents. */
				while (--d >= 0)
					dwarf_dealloc_die(st[d].die);
				return;
			}
			d--;
		}
	}
	for (; d >= 0; d--)
		if (st[d].die)
			dwarf_dealloc_die(st[d].die);
}

/* ---- Lines ------------------------------------------------------------------------------------ */

static bool is_abs(const char *p)
{
	return p && p[0] == '/';
}

/* binutils' concat_filename (bfd/dwarf2.c), which addr2line prints. */
static int join_path(struct dw *c, const char *comp_dir, const char *subdir, const char *name,
		     const char **out)
{
	const char *dir = NULL;
	if (!is_abs(name)) {
		if (!subdir || !is_abs(subdir))
			dir = comp_dir && *comp_dir ? comp_dir : NULL;
		if (!dir) {
			dir = subdir && *subdir ? subdir : NULL;
			subdir = NULL;
		}
		if (subdir && !*subdir)
			subdir = NULL;
	}
	if (!dir) {
		*out = sym_intern(&c->f->strings, name, strlen(name));
		return *out ? 0 : BK_E_NOMEM;
	}
	size_t dl = strlen(dir), sl = subdir ? strlen(subdir) : 0, nl = strlen(name);
	char *p = base_alloc(dl + sl + nl + 3);
	if (!p)
		return BK_E_NOMEM;
	size_t k = 0;
	memcpy(p + k, dir, dl);
	k += dl;
	p[k++] = '/';
	if (subdir) {
		memcpy(p + k, subdir, sl);
		k += sl;
		p[k++] = '/';
	}
	memcpy(p + k, name, nl);
	k += nl;
	*out = sym_intern(&c->f->strings, p, k);
	base_free(p);
	return *out ? 0 : BK_E_NOMEM;
}

static uint32_t file_index(struct dw *c, const char *interned)
{
	struct omap *m = &c->d->file_ix;
	struct sym_vec *files = &c->f->files;
	struct omap_ent *slot = omap_slot(m, (uint64_t)(uintptr_t)interned);
	if (!slot) {
		nomem(c);
		return 0;
	}
	if (slot->used)
		return slot->val;
	if (files->n >= UINT32_MAX - 1) /* keep SYM_NO_FILE free */
		return 0;
	const char **fp = sym_vec_push(files);
	if (!fp) {
		nomem(c);
		return 0;
	}
	*fp = interned;
	omap_fill(m, slot, (uint64_t)(uintptr_t)interned);
	slot->val = (uint32_t)(files->n - 1);
	return slot->val;
}

/* The CU's file table -> c->cu_files (index 0 of f->files: unknown). */
static void cu_file_table(struct dw *c, Dwarf_Line_Context lc, Dwarf_Unsigned version)
{
	Dwarf_Error e = NULL;
	Dwarf_Signed base = 0, count = 0, end = 0, ndirs = 0;
	const char *comp_dir = NULL;
	if (!dw_ok(c, dwarf_srclines_files_indexes(lc, &base, &count, &end, &e), &e) ||
	    end <= base || end - base > (1 << 24))
		return;
	if (!dw_ok(c, dwarf_srclines_comp_dir(lc, &comp_dir, &e), &e))
		comp_dir = NULL;
	if (!dw_ok(c, dwarf_srclines_include_dir_count(lc, &ndirs, &e), &e))
		ndirs = 0;
	c->cu_files = base_calloc((size_t)(end - base), sizeof(uint32_t));
	if (!c->cu_files) {
		nomem(c);
		return;
	}
	c->cu_file_base = base;
	c->cu_nfiles = end - base;
	for (Dwarf_Signed i = base; i < end && !c->fatal; i++) {
		const char *name = NULL, *subdir = NULL;
		Dwarf_Unsigned dir = 0;
		if (!dw_ok(c, dwarf_srclines_files_data_b(lc, i, &name, &dir, NULL, NULL, NULL, &e),
			   &e) || !name)
			continue;
		/* Directory numbers are as in the file entry: 0 is comp_dir in
		 * DWARF 2-4 (no entry), the first entry in DWARF 5. */
		bool have_dir = version >= 5 ? dir < (Dwarf_Unsigned)ndirs
					     : dir != 0 && dir <= (Dwarf_Unsigned)ndirs;
		if (have_dir &&
		    !dw_ok(c, dwarf_srclines_include_dir_data(lc, (Dwarf_Signed)dir, &subdir, &e), &e))
			subdir = NULL;
		const char *path = NULL;
		if (join_path(c, comp_dir, subdir, name, &path)) {
			nomem(c);
			return;
		}
		c->cu_files[i - base] = file_index(c, path);
	}
}

/* Correct DWARF 5 file numbers (sym_line.c): FILENO[i] for each of N rows,
 * or false to keep libdwarf's. */
static bool v5_files(struct dw *c, Dwarf_Line_Context lc, Dwarf_Line *rows, Dwarf_Signed n,
		     uint32_t **fileno)
{
	Dwarf_Error e = NULL;
	Dwarf_Unsigned off = 0;
	*fileno = NULL;
	if (!c->line_sec || n <= 0 || !dw_ok(c, dwarf_srclines_table_offset(lc, &off, &e), &e))
		return false;
	uint64_t *addrs = base_calloc((size_t)n, sizeof(uint64_t));
	uint32_t *files = base_calloc((size_t)n, sizeof(uint32_t));
	bool ok = addrs && files &&
		  sym_line_files(c->line_sec, c->line_len, off, (size_t)n, addrs, files) == 0;
	if (!addrs || !files)
		nomem(c);
	for (Dwarf_Signed i = 0; ok && i < n; i++) {
		Dwarf_Addr a;
		ok = dw_ok(c, dwarf_lineaddr(rows[i], &a, &e), &e) && a == addrs[i];
	}
	base_free(addrs);
	if (!ok) {
		base_free(files);
		return false;
	}
	*fileno = files;
	return true;
}

static struct sym_line *last_line(struct dw *c)
{
	return &((struct sym_line *)c->lines.p)[c->lines.n - 1];
}

static void cu_lines(struct dw *c, Dwarf_Die cu)
{
	Dwarf_Error e = NULL;
	Dwarf_Unsigned version = 0;
	Dwarf_Small tables = 0;
	Dwarf_Line_Context lc = NULL;
	if (!dw_ok(c, dwarf_srclines_b(cu, &version, &tables, &lc, &e), &e))
		return;
	cu_file_table(c, lc, version);
	Dwarf_Line *rows = NULL;
	Dwarf_Signed n = 0;
	/* tables == 2 is the experimental two-level table: not produced by
	 * any compiler we know of; left out. */
	if (c->fatal || tables != 1 ||
	    !dw_ok(c, dwarf_srclines_from_linecontext(lc, &rows, &n, &e), &e)) {
		dwarf_srclines_dealloc_b(lc);
		return;
	}
	uint32_t *fixed = NULL;
	if (version == 5)
		v5_files(c, lc, rows, n, &fixed);

	bool in_seq = false, keep = false;
	size_t seq_start = 0;
	for (Dwarf_Signed i = 0; i < n && !c->fatal; i++) {
		Dwarf_Addr addr;
		Dwarf_Unsigned line = 0, col = 0, fileno = 0;
		Dwarf_Bool end = 0;
		if (!dw_ok(c, dwarf_lineaddr(rows[i], &addr, &e), &e) ||
		    !dw_ok(c, dwarf_lineendsequence(rows[i], &end, &e), &e))
			continue;
		if (!in_seq) {
			in_seq = true;
			seq_start = c->lines.n;
			keep = sym_code_has(c->code, addr);
		}
		if (end)
			in_seq = false;
		if (!keep)
			continue;
		if (!end) {
			if (!dw_ok(c, dwarf_lineno(rows[i], &line, &e), &e))
				line = 0;
			if (!dw_ok(c, dwarf_lineoff_b(rows[i], &col, &e), &e))
				col = 0;
			if (!dw_ok(c, dwarf_line_srcfileno(rows[i], &fileno, &e), &e))
				fileno = UINT64_MAX;
			if (fixed) {
				if (fixed[i] != fileno)
					c->file_fixups++;
				fileno = fixed[i];
			}
		}
		/* Same address as the row before in this sequence: the last row
		 * wins, an end mark included (the row before it covers no byte;
		 * kept, it would sort after the end mark and name every address
		 * up to the next sequence). */
		struct sym_line *l;
		if (c->lines.n > seq_start && last_line(c)->addr == addr &&
		    last_line(c)->file != SYM_NO_FILE) {
			l = last_line(c);
		} else if (!(l = sym_vec_push(&c->lines))) {
			nomem(c);
			break;
		}
		l->addr = addr;
		l->ord = c->ord++;
		if (end) {
			l->file = SYM_NO_FILE;
			l->line = l->column = 0;
			continue;
		}
		l->file = 0;
		if (c->cu_files && fileno >= (Dwarf_Unsigned)c->cu_file_base &&
		    fileno - (Dwarf_Unsigned)c->cu_file_base < (Dwarf_Unsigned)c->cu_nfiles)
			l->file = c->cu_files[fileno - (Dwarf_Unsigned)c->cu_file_base];
		l->line = line > UINT32_MAX ? UINT32_MAX : (uint32_t)line;
		l->column = col > UINT32_MAX ? UINT32_MAX : (uint32_t)col;
	}
	base_free(fixed);
	dwarf_srclines_dealloc_b(lc);
}

/* ---- Compile units ----------------------------------------------------------------------------- */

#ifndef DW_AT_GNU_addr_base
#define DW_AT_GNU_addr_base 0x2133
#endif

/* The CU's bases for range lists, from its top DIE. */
static void cu_bases(struct dw *c, Dwarf_Die cu, const struct sym_cu *u)
{
	Dwarf_Error e = NULL;
	c->cu_version = u->version;
	c->rng.addr_size = u->addr_size;
	c->rng.off_size = u->off_size;
	Dwarf_Addr base = 0;
	if (!dw_ok(c, dwarf_lowpc(cu, &base, &e), &e))
		base = 0;
	c->rng.cu_base = base;
	Dwarf_Unsigned v = 0;
	c->rng.has_rnglists_base = die_secoff(c, cu, DW_AT_rnglists_base, &v);
	c->rng.rnglists_base = v;
	v = 0;
	c->rng.has_addr_base = die_secoff(c, cu, DW_AT_addr_base, &v) ||
			       (u->version < 5 && die_secoff(c, cu, DW_AT_GNU_addr_base, &v));
	c->rng.addr_base = v;
}

/* The top DIE of unit U, or NULL (the CU then counts as failed). */
static Dwarf_Die cu_die(struct dw *c, const struct sym_cu *u, Dwarf_Off *die_off)
{
	Dwarf_Error e = NULL;
	Dwarf_Die cu = NULL;
	*die_off = u->die_off;
	if (!c->dbg || !dw_ok(c, dwarf_offdie_b(c->dbg, u->die_off, true, &cu, &e), &e)) {
		c->cu_failed = true;
		return NULL;
	}
	return cu;
}

#ifndef DW_AT_GNU_dwo_name
#define DW_AT_GNU_dwo_name 0x2130
#endif
#ifndef DW_AT_GNU_dwo_id
#define DW_AT_GNU_dwo_id 0x2131
#endif
#ifndef DW_AT_GNU_ranges_base
#define DW_AT_GNU_ranges_base 0x2132
#endif

/* The scopes of skeleton unit U (top DIE CU) from its split unit, in a .dwo
 * or .dwp (sym_split.c). Its lines are the skeleton's (DWARF 5 §3.1.3: the
 * split unit's DW_AT_call_file numbers index the skeleton's line table);
 * addresses in it resolve through the skeleton's .debug_addr (libdwarf's
 * tied file; sym_ranges.c with the skeleton's DW_AT_addr_base); its range
 * lists are in its own file's .debug_rnglists.dwo (DWARF 5) or, with GCC's
 * DWARF 4, in the skeleton's .debug_ranges from DW_AT_GNU_ranges_base. A
 * split unit that cannot be found leaves the skeleton's lines, and is
 * counted (splits_missing). */
static void split_scopes(struct dw *c, Dwarf_Die cu, const struct sym_cu *u)
{
	const char *name = die_text(c, cu, u->version >= 5 ? DW_AT_dwo_name : DW_AT_GNU_dwo_name);
	if (!name)
		return; /* a DWARF 4 unit that is not a skeleton */
	uint64_t id = u->dwo_id;
	Dwarf_Unsigned v = 0;
	if (u->version < 5) {
		if (!die_udata(c, cu, DW_AT_GNU_dwo_id, &v))
			return;
		id = v;
		c->split_v4 = true;
		c->gnu_ranges_base = die_secoff(c, cu, DW_AT_GNU_ranges_base, &v) ? v : 0;
	}
	struct sym_split_unit su;
	int err = sym_split_find(&c->d->splits, c->d->path, c->d->main_path, c->dbg,
				 die_text(c, cu, DW_AT_comp_dir), name, id, &su);
	if (err == BK_E_NOMEM)
		nomem(c);
	if (err) {
		c->f->stats.splits_missing++;
		return;
	}
	c->f->stats.splits_read++;
	Dwarf_Debug own = c->dbg;
	struct sym_rng_ctx rng = c->rng;
	c->dbg = su.dbg;
	c->key_tag = (Dwarf_Off)su.tag << SPLIT_SHIFT;
	if (su.rnglists) {
		c->rng.rnglists = su.rnglists;
		c->rng.rnglists_len = su.rnglists_len;
		c->rng.has_rnglists_base = true;
		c->rng.rnglists_base = su.rnglists_base;
	} else if (u->version >= 5) {
		c->rng.rnglists = NULL;
	}
	Dwarf_Off off = 0;
	Dwarf_Error e = NULL;
	if (dw_ok(c, dwarf_dieoffset(su.die, &off, &e), &e))
		cu_scopes(c, su.die, off);
	dwarf_dealloc_die(su.die);
	c->dbg = own;
	c->rng = rng;
	c->key_tag = 0;
	c->split_v4 = false;
}

static void one_cu(struct dw *c, const struct sym_cu *u)
{
	Dwarf_Off cu_off = 0;
	Dwarf_Die cu = cu_die(c, u, &cu_off);
	if (!cu)
		return;
	cu_bases(c, cu, u);
	cu_lines(c, cu);
	/* A skeleton's DIEs are in its split unit; type units carry no code. */
	if (!c->fatal && (u->unit_type == DW_UT_compile || u->unit_type == DW_UT_partial))
		cu_scopes(c, cu, cu_off);
	if (!c->fatal && (u->unit_type == DW_UT_skeleton ||
			  (u->version < 5 && u->unit_type == DW_UT_compile)))
		split_scopes(c, cu, u);
	dwarf_dealloc_die(cu);
	base_free(c->cu_files);
	c->cu_files = NULL;
	c->cu_nfiles = 0;
}

static struct dw dw_make(struct sym_file *f)
{
	struct sym_dwarf *d = f->dwarf;
	return (struct dw){
		.f = f, .d = d, .dbg = d->dbg, .code = &d->code,
		.line_sec = d->line_sec, .line_len = d->line_len, .rng = d->rng,
		.lines = { .elem = sizeof(struct sym_line) },
		.scopes = { .elem = sizeof(struct sym_scope) },
		.ranges = { .elem = sizeof(struct sym_range) },
		.tmp = { .elem = 2 * sizeof(uint64_t) },
	};
}

static void dw_free(struct dw *c)
{
	sym_vec_free(&c->lines);
	sym_vec_free(&c->scopes);
	sym_vec_free(&c->ranges);
	sym_vec_free(&c->tmp);
	base_free(c->cu_files);
	c->cu_files = NULL;
}

int sym_dwarf_index_cu(struct sym_file *f, size_t ix)
{
	struct sym_cu *u = &f->cus[ix];
	if (u->indexed)
		return 0;
	struct dw c = dw_make(f);
	one_cu(&c, u);
	if (c.fatal) {
		dw_free(&c);
		return c.fatal;
	}
	sym_vec_free(&c.tmp);
	u->lines = c.lines.p;
	u->nlines = c.lines.n;
	u->scopes = c.scopes.p;
	u->nscopes = c.scopes.n;
	u->ranges = c.ranges.p;
	u->nranges = c.ranges.n;
	int err = sym_cu_finish(u);
	if (err) {
		base_free(u->lines);
		base_free(u->scopes);
		base_free(u->ranges);
		u->lines = NULL;
		u->scopes = NULL;
		u->ranges = NULL;
		u->nlines = u->nscopes = u->nranges = 0;
		return err;
	}
	u->indexed = true;
	struct sym_stats *st = &f->stats;
	st->cus_indexed++;
	if (c.cu_failed && !u->failed) {
		u->failed = true;
		st->cus_failed++;
	}
	st->line_rows += u->nlines;
	st->scopes += u->nscopes;
	st->ranges += u->nranges;
	st->file_fixups += c.file_fixups;
	return 0;
}

/* ---- Which unit covers which addresses ------------------------------------------------------ */

static void aranges_set(void *arg, uint64_t cu_off)
{
	struct sym_dwarf *d = arg;
	uint64_t *p = sym_vec_push(&d->sets);
	if (p)
		*p = cu_off;
	else
		d->aranges_nomem = true;
}

static void aranges_range(void *arg, uint64_t cu_off, uint64_t lo, uint64_t hi)
{
	struct sym_dwarf *d = arg;
	if (hi <= lo)
		return;
	struct arange *a = sym_vec_push(&d->aranges);
	if (a)
		*a = (struct arange){ lo, hi, cu_off };
	else
		d->aranges_nomem = true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* .debug_aranges into d->aranges / d->sets; false when absent or damaged
 * (then the top DIEs are read instead). BK_E_NOMEM in *ERR. */
static bool read_aranges(struct sym_dwarf *d, int *err)
{
	const uint8_t *sec;
	size_t len;
	bool comp;
	*err = 0;
	if (!sym_elf_section(&d->elf, ".debug_aranges", &sec, &len, &comp) || len == 0)
		return false;
	struct sym_aranges_cb cb = { aranges_set, aranges_range, d };
	bool ok = sym_aranges(sec, len, &cb) == 0;
	if (d->aranges_nomem)
		*err = BK_E_NOMEM;
	d->aranges_nomem = false;
	d->have_aranges = ok && !*err;
	if (!d->have_aranges) {
		sym_vec_free(&d->aranges);
		sym_vec_free(&d->sets);
		d->have_aranges = false;
		return false;
	}
	qsort(d->sets.p, d->sets.n, sizeof(uint64_t), cmp_u64);
	return true;
}

static bool has_set(const struct sym_dwarf *d, uint64_t cu_off)
{
	const uint64_t *s = d->sets.p;
	size_t lo = base_count_keys(s, d->sets.n, sizeof(*s), 0, cu_off, false);
	return lo < d->sets.n && s[lo] == cu_off;
}

/* Index of the unit whose header is at OFF, or -1. */
static ptrdiff_t unit_at(const struct sym_file *f, uint64_t off)
{
	size_t lo = BASE_COUNT_LT(f->cus, f->ncus, off, off);
	return lo < f->ncus && f->cus[lo].off == off ? (ptrdiff_t)lo : -1;
}

struct unit_list {
	struct sym_vec cus;
};

static int unit_cb(void *arg, const struct sym_cu *u)
{
	struct sym_cu *p = sym_vec_push(&((struct unit_list *)arg)->cus);
	if (!p)
		return BK_E_NOMEM;
	*p = *u;
	return 0;
}

static int push_cu_range(struct sym_vec *v, uint64_t lo, uint64_t hi, size_t cu)
{
	struct sym_cu_range *r = sym_vec_push(v);
	if (!r)
		return BK_E_NOMEM;
	*r = (struct sym_cu_range){ lo, hi, (uint32_t)cu };
	return 0;
}

static int cmp_cu_range(const void *a, const void *b)
{
	const struct sym_cu_range *x = a, *y = b;
	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	if (x->high != y->high)
		return x->high < y->high ? -1 : 1;
	return x->cu < y->cu ? -1 : x->cu > y->cu;
}

/* Units without a .debug_aranges set: the ranges of their top DIE into V,
 * or, with none, marked to be indexed at once (*UNPLACED). */
static int top_die_ranges(struct sym_file *f, size_t ix, struct sym_vec *v, bool *unplaced)
{
	struct sym_cu *u = &f->cus[ix];
	struct dw c = dw_make(f);
	*unplaced = false;
	Dwarf_Off die_off;
	Dwarf_Die cu = cu_die(&c, u, &die_off);
	bool partial = false;
	if (cu) {
		Dwarf_Error e = NULL;
		Dwarf_Half tag = 0;
		partial = dw_ok(&c, dwarf_tag(cu, &tag, &e), &e) && tag == DW_TAG_partial_unit;
		/* DWARF 5 §3.1.1: with DW_AT_ranges, DW_AT_low_pc is only the
		 * base address of the unit (0 from gcc and clang). */
		cu_bases(&c, cu, u);
		Dwarf_Attribute a = NULL;
		int r = dwarf_attr(cu, DW_AT_ranges, &a, &e);
		if (dw_ok(&c, r, &e)) {
			die_ranges_attr(&c, a);
			dwarf_dealloc_attribute(a);
		} else if (r == DW_DLV_NO_ENTRY) {
			die_ranges(&c, cu);
		}
		dwarf_dealloc_die(cu);
	}
	int err = c.fatal;
	const uint64_t (*tr)[2] = c.tmp.p;
	for (size_t i = 0; !err && i < c.tmp.n; i++)
		err = push_cu_range(v, tr[i][0], tr[i][1], ix);
	/* No range known (or the DIE unreadable): nothing says where its rows
	 * and scopes are, so it is read before any lookup. Except a partial
	 * unit without one: dwz's (thousands in a file it processed, a line
	 * table each) hold the DIEs units share, never code, which stays in
	 * the units that import them; read only through references. */
	*unplaced = c.tmp.n == 0 && !partial;
	if (!err && c.cu_failed && !u->failed) {
		u->failed = true;
		f->stats.cus_failed++;
	}
	dw_free(&c);
	return err;
}

static bool lists_survivable_path(const char *path, struct sym_elf *e);

/* The supplementary file D's DWARF names, if any (dwz: .gnu_debugaltlink
 * holds its path and build-id; DWARF 5: .debug_sup its path), opened and
 * tied to D's libdwarf so that strings in it resolve. One that cannot be
 * found or read is noted (alt_missing): names from it are lost, the rest
 * stays. */
static void open_alt(struct sym_file *f, struct sym_dwarf *d)
{
	const uint8_t *p;
	size_t len;
	bool comp;
	const char *name = NULL;
	const uint8_t *bid = NULL;
	size_t bid_len = 0;
	if (sym_elf_section(&d->elf, ".gnu_debugaltlink", &p, &len, &comp) && len > 1) {
		const uint8_t *nul = memchr(p, 0, len);
		if (!nul)
			return;
		name = (const char *)p;
		bid = nul + 1;
		bid_len = len - (size_t)(bid - p);
	} else if (sym_elf_section(&d->elf, ".debug_sup", &p, &len, &comp) && len > 4 &&
		   p[2] == 0 /* is_supplementary: this file is not */) {
		const uint8_t *nul = memchr(p + 3, 0, len - 3);
		if (!nul)
			return;
		name = (const char *)p + 3;
	} else {
		return;
	}
	struct ldr_elf *alt = NULL;
	if (ldr_open_alt_file(d->path, name, bid, bid_len, NULL, &alt) != 0) {
		f->stats.alt_missing = true;
		return;
	}
	void *dbg = NULL;
	Dwarf_Error e = NULL;
	if (!lists_survivable_path(alt->path, &d->alt_elf) ||
	    sym_dwobj_init(&d->alt_elf, &dbg, &d->alt_obj) != 0) {
		sym_elf_close(&d->alt_elf);
		f->stats.alt_missing = true;
	} else if (dwarf_set_tied_dbg(d->dbg, dbg, &e) != DW_DLV_OK) {
		if (e)
			dwarf_dealloc_error(d->dbg, e);
		sym_dwobj_finish(dbg, d->alt_obj);
		d->alt_obj = NULL;
		sym_elf_close(&d->alt_elf);
		f->stats.alt_missing = true;
	} else {
		d->alt_dbg = dbg;
		f->stats.used_alt_file = true;
	}
	ldr_close(alt);
}

static int open_libdwarf(struct sym_file *f)
{
	struct sym_dwarf *d = f->dwarf;
	if (d->opened)
		return 0;
	int err;
	if (d->rel) {
		Dwarf_Error e = NULL;
		pthread_mutex_lock(&sym_dwarf_init_lock);
		int r = dwarf_init_path(d->path, NULL, 0, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL,
					&d->dbg, NULL, 0, NULL, &e);
		pthread_mutex_unlock(&sym_dwarf_init_lock);
		if (r == DW_DLV_ERROR && e)
			dwarf_dealloc_error(NULL, e);
		err = r == DW_DLV_OK ? 0 : r == DW_DLV_NO_ENTRY ? BK_E_NOT_FOUND : BK_E_CORRUPT;
	} else {
		void *dbg = NULL;
		err = sym_dwobj_init(&d->elf, &dbg, &d->obj);
		if (err == BK_E_NOMEM)
			return err; /* tried again next time */
		d->dbg = dbg;
		if (!err)
			open_alt(f, d);
	}
	d->opened = true;
	if (err) {
		d->dbg = NULL;
		f->stats.cus_failed += err == BK_E_CORRUPT;
	}
	return 0;
}

/* Raw bytes we read ourselves: .debug_line (sym_line.c) and what range
 * lists need (sym_ranges.c). */
static void raw_sections(struct sym_dwarf *d)
{
	bool comp;
	if (!sym_elf_section(&d->elf, ".debug_line", &d->line_sec, &d->line_len, &comp))
		d->line_sec = NULL;
	if (!sym_elf_section(&d->elf, ".debug_rnglists", &d->rng.rnglists, &d->rng.rnglists_len,
			     &comp))
		d->rng.rnglists = NULL;
	if (!sym_elf_section(&d->elf, ".debug_ranges", &d->rng.ranges, &d->rng.ranges_len, &comp))
		d->rng.ranges = NULL;
	if (!sym_elf_section(&d->elf, ".debug_addr", &d->rng.addr, &d->rng.addr_len, &comp))
		d->rng.addr = NULL;
}

static void free_units(struct sym_file *f)
{
	base_free(f->cus);
	base_free(f->cu_ranges);
	base_free(f->cu_range_max_high);
	f->cus = NULL;
	f->cu_ranges = NULL;
	f->cu_range_max_high = NULL;
	f->ncus = f->ncu_ranges = 0;
}

/* The unit list and the unit index (once). */
static int set_up_units(struct sym_file *f)
{
	struct sym_dwarf *d = f->dwarf;
	struct sym_stats *st = &f->stats;
	const uint8_t *info;
	size_t len;
	bool comp;
	struct unit_list ul = { .cus = { .elem = sizeof(struct sym_cu) } };
	int walk = 0;
	if (d->dbg && sym_elf_section(&d->elf, ".debug_info", &info, &len, &comp))
		walk = sym_units(info, len, unit_cb, &ul);
	if (walk == BK_E_NOMEM) {
		sym_vec_free(&ul.cus);
		return BK_E_NOMEM;
	}
	f->cus = ul.cus.p;
	f->ncus = ul.cus.n;

	struct sym_vec v = { .elem = sizeof(struct sym_cu_range) };
	int err = 0;
	if (d->have_aranges) {
		const struct arange *a = d->aranges.p;
		for (size_t i = 0; !err && i < d->aranges.n; i++) {
			ptrdiff_t u = unit_at(f, a[i].cu_off);
			if (u >= 0)
				err = push_cu_range(&v, a[i].low, a[i].high, (size_t)u);
		}
	}
	size_t failed_before = st->cus_failed;
	for (size_t i = 0; !err && i < f->ncus; i++) {
		struct sym_cu *u = &f->cus[i];
		bool code_unit = u->unit_type == DW_UT_compile || u->unit_type == DW_UT_partial ||
				 u->unit_type == DW_UT_skeleton;
		if (!code_unit || (d->have_aranges && has_set(d, u->off)))
			continue;
		bool unplaced;
		err = top_die_ranges(f, i, &v, &unplaced);
		u->unplaced = unplaced;
	}
	if (!err && v.n) {
		qsort(v.p, v.n, sizeof(struct sym_cu_range), cmp_cu_range);
		f->cu_range_max_high = base_alloc(v.n * sizeof(uint64_t));
		if (!f->cu_range_max_high)
			err = BK_E_NOMEM;
	}
	if (err) {
		st->cus_failed = failed_before;
		sym_vec_free(&v);
		free_units(f);
		return err;
	}
	f->cu_ranges = v.p;
	f->ncu_ranges = v.n;
	uint64_t m = 0;
	for (size_t i = 0; i < v.n; i++) {
		if (f->cu_ranges[i].high > m)
			m = f->cu_ranges[i].high;
		f->cu_range_max_high[i] = m;
	}
	st->cus = f->ncus;
	st->cus_failed += walk != 0; /* a unit header that could not be read */
	if (!d->dbg)
		st->dwarf = false;
	/* The .debug_aranges ranges are in the unit index now. */
	sym_vec_free(&d->aranges);
	return 0;
}

int sym_dwarf_ready(struct sym_file *f)
{
	struct sym_dwarf *d = f->dwarf;
	if (!d)
		return 0;
	if (!d->ready) {
		int err = open_libdwarf(f);
		if (err)
			return err;
		raw_sections(d);
		if ((err = set_up_units(f)))
			return err;
		d->ready = true;
	}
	/* Units nothing places: read before any lookup (a retry after
	 * BK_E_NOMEM resumes here). */
	for (size_t i = 0; !d->placed && i < f->ncus; i++) {
		if (!f->cus[i].unplaced || f->cus[i].indexed)
			continue;
		int err = sym_dwarf_index_cu(f, i);
		if (err)
			return err;
	}
	d->placed = true;
	return 0;
}

/* ---- Opening and closing --------------------------------------------------------------------- */

/* Sections libdwarf 20210528 parses unasked, on loading .debug_info, and
 * cannot survive damage in (sym_guard.c): .debug_rnglists, which it sees
 * through sym_dwobj.c too, and for its own reader (ET_REL) .debug_loclists. */
static bool lists_survivable(struct sym_elf *elf, bool rel)
{
	static const char *const guarded[] = { ".debug_rnglists", ".debug_loclists" };
	for (size_t i = 0; i < (rel ? 2u : 1u); i++) {
		const uint8_t *d;
		size_t len;
		bool comp;
		if (sym_elf_has(elf, guarded[i], &comp) &&
		    (!sym_elf_section(elf, guarded[i], &d, &len, &comp) || sym_check_lists(d, len)))
			return false;
	}
	return true;
}

/* Open PATH into E when its lists pass the guard (sym_guard.c), as the
 * file's own DWARF must before libdwarf reads it. */
static bool lists_survivable_path(const char *path, struct sym_elf *e)
{
	if (!path || sym_elf_open(path, e) != 0)
		return false;
	if (!lists_survivable(e, false)) {
		sym_elf_close(e);
		return false;
	}
	return true;
}

void sym_dwarf_close(struct sym_dwarf *d)
{
	if (!d)
		return;
	if (d->rel && d->dbg) {
		Dwarf_Error e = NULL;
		dwarf_finish(d->dbg, &e);
	} else if (!d->rel) {
		sym_splits_close(&d->splits); /* tied to d->dbg: before it */
		sym_dwobj_finish(d->dbg, d->obj);
		if (d->alt_dbg) /* after the file tied to it */
			sym_dwobj_finish(d->alt_dbg, d->alt_obj);
	}
	sym_elf_close(&d->alt_elf);
	sym_elf_close(&d->elf);
	sym_vec_free(&d->aranges);
	sym_vec_free(&d->sets);
	base_free(d->names.e);
	base_free(d->prefixes.e);
	base_free(d->langs.e);
	base_free(d->file_ix.e);
	base_free(d->segs);
	base_free(d->path);
	base_free(d->main_path);
	base_free(d);
}

int sym_dwarf_open(struct sym_file *f, const char *path, const char *main_path,
		   struct sym_elf *elf, const struct sym_code *code)
{
	struct sym_stats *st = &f->stats;
	bool comp = false;
	if (sym_elf_has(elf, ".debug_info", &comp))
		st->dwarf_compressed = comp;
	bool rel = elf->type == 1 /* ET_REL */;
	if (rel && !path)
		return 0; /* relocated by libdwarf's own reader, which needs a file */
	if (!lists_survivable(elf, rel)) {
		st->cus_failed++;
		st->dwarf_rejected = true;
		return 0;
	}
	struct sym_dwarf *d = base_calloc(1, sizeof(*d));
	if (!d)
		return BK_E_NOMEM;
	d->elf.fd = d->alt_elf.fd = -1; /* closed by an early sym_dwarf_close */
	d->aranges.elem = sizeof(struct arange);
	d->sets.elem = sizeof(uint64_t);
	d->rel = rel;
	if (path && !(d->path = base_strdup(path))) {
		sym_dwarf_close(d);
		return BK_E_NOMEM;
	}
	if (code->nseg)
		d->segs = base_calloc(code->nseg, sizeof(*d->segs));
	/* Index 0 of f->files: no file. */
	if (!f->files.elem)
		f->files.elem = sizeof(const char *);
	const char **unknown = f->files.n ? f->files.p : sym_vec_push(&f->files);
	if ((code->nseg && !d->segs) || !unknown) {
		sym_dwarf_close(d);
		return BK_E_NOMEM;
	}
	if (main_path && !(d->main_path = base_alloc(strlen(main_path) + 1))) {
		sym_dwarf_close(d);
		return BK_E_NOMEM;
	}
	if (main_path)
		strcpy(d->main_path, main_path);
	if (code->nseg)
		memcpy(d->segs, code->seg, code->nseg * sizeof(*d->segs));
	d->code.seg = (const uint64_t (*)[2])d->segs;
	d->code.nseg = code->nseg;
	d->elf = *elf;
	*elf = (struct sym_elf){ .fd = -1 };
	f->dwarf = d;
	st->dwarf = true;

	/* An ET_REL object's .debug_aranges holds unrelocated addresses (0 +
	 * a relocation): place its units by their (relocated) top DIEs. */
	int err = 0;
	if (!rel && read_aranges(d, &err)) {
		st->aranges = true;
		/* Until the unit headers are read: the sets, one per CU. */
		const uint64_t *s = d->sets.p;
		st->cus = 0;
		for (size_t i = 0; i < d->sets.n; i++)
			st->cus += i == 0 || s[i] != s[i - 1];
		return 0;
	}
	if (err)
		return err;
	/* No usable .debug_aranges: read the top DIEs now. */
	return sym_dwarf_ready(f);
}

void sym_dwarf_untracked(void)
{
	dwarf_set_de_alloc_flag(0);
}
