/* DWARF through libdwarf 20210528: the line index and the function / inlined
 * call ranges, read once at open, strings copied, libdwarf let go.
 *
 * Lines (DWARF 5 §6.2): every row of every sequence, with rows that share an
 * address collapsed to the last one (what binutils does, PR ld/4986) and an
 * end mark at each DW_LNE_end_sequence so a lookup past the end of a
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
 * binutils.
 *
 * Robustness: the DIE tree is walked with an explicit stack of at most
 * SYM_MAX_DIE_DEPTH levels; DIE offsets must strictly increase in the walk
 * (pre-order), which bounds it by the section size whatever the sibling
 * pointers say. Every libdwarf call gets an error pointer (without one
 * libdwarf aborts the process); an error skips the rest of what it spoils
 * (a row, a DIE, or the rest of a CU) and counts the CU as failed. A CU
 * header that cannot be read ends the walk: the next one cannot be found.
 * Only BK_E_NOMEM from our own allocations is fatal. Ranges and sequences
 * that start outside the executable segments are dropped (discarded code).
 */
#include <stdlib.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "sym.h"

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

struct dw {
	struct sym_file *f;
	Dwarf_Debug dbg;
	const struct sym_code *code;
	const uint8_t *line_sec;      /* raw .debug_line, for sym_line.c */
	size_t line_len;
	struct sym_vec lines, scopes, ranges, files, tmp;
	struct omap names;            /* DIE offset -> resolved name (val: 1 = linkage) */
	struct omap file_ix;          /* interned path -> index into files */
	uint32_t ord;
	/* The current CU. */
	Dwarf_Half cu_version;
	struct sym_rng_ctx rng;       /* sections + the CU's bases */
	uint32_t *cu_files;           /* DWARF file number - cu_file_base -> files index */
	Dwarf_Signed cu_file_base, cu_nfiles;
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

static bool die_ref(struct dw *c, Dwarf_Die die, Dwarf_Half at, Dwarf_Off *off)
{
	Dwarf_Error e = NULL;
	Dwarf_Attribute a = NULL;
	if (!dw_ok(c, dwarf_attr(die, at, &a, &e), &e))
		return false;
	bool ok = dw_ok(c, dwarf_global_formref(a, off, &e), &e);
	dwarf_dealloc_attribute(a);
	return ok;
}

static const char *die_linkage(struct dw *c, Dwarf_Die die)
{
	const char *s = die_text(c, die, DW_AT_linkage_name);
	return s ? s : die_text(c, die, DW_AT_MIPS_linkage_name);
}

static bool die_origin(struct dw *c, Dwarf_Die die, Dwarf_Off *off)
{
	return die_ref(c, die, DW_AT_abstract_origin, off) ||
	       die_ref(c, die, DW_AT_specification, off);
}

/* ---- Names --------------------------------------------------------------------------- */

/* Resolve the name the DIE at OFF gives (following its own references);
 * cached by OFF. *LINKAGE: the name came from a linkage name. */
static const char *ref_name(struct dw *c, Dwarf_Off off, bool *linkage)
{
	struct omap_ent *slot = omap_slot(&c->names, off);
	if (!slot) {
		nomem(c);
		return NULL;
	}
	if (slot->used) {
		*linkage = slot->val;
		return slot->name;
	}
	const char *name = NULL, *link = NULL;
	Dwarf_Off cur = off;
	for (unsigned hop = 0; hop < SYM_MAX_REF_HOPS && !link; hop++) {
		Dwarf_Error e = NULL;
		Dwarf_Die d = NULL;
		if (!dw_ok(c, dwarf_offdie_b(c->dbg, cur, true, &d, &e), &e))
			break;
		link = die_linkage(c, d);
		if (!link && !name)
			name = die_text(c, d, DW_AT_name);
		Dwarf_Off next;
		bool more = !link && die_origin(c, d, &next) && next != cur;
		dwarf_dealloc_die(d);
		if (!more)
			break;
		cur = next;
	}
	const char *r = NULL;
	if (link)
		r = sym_intern_name(&c->f->strings, link);
	else if (name)
		r = sym_intern(&c->f->strings, name, strlen(name));
	if ((link || name) && !r) {
		nomem(c);
		return NULL;
	}
	/* The table may have grown while following the chain: find the slot again. */
	slot = omap_slot(&c->names, off);
	if (!slot) {
		nomem(c);
		return NULL;
	}
	omap_fill(&c->names, slot, off);
	slot->name = r;
	slot->val = link != NULL;
	*linkage = link != NULL;
	return r;
}

static const char *die_name(struct dw *c, Dwarf_Die die)
{
	const char *link = die_linkage(c, die);
	if (link)
		return sym_intern_name(&c->f->strings, link);
	const char *name = die_text(c, die, DW_AT_name);
	Dwarf_Off ref;
	if (die_origin(c, die, &ref)) {
		bool from_link = false;
		const char *r = ref_name(c, ref, &from_link);
		if (c->fatal)
			return NULL;
		if (from_link || !name)
			return r;
	}
	return name ? sym_intern(&c->f->strings, name, strlen(name)) : NULL;
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
	int err = c->cu_version >= 5 ? sym_rnglist(&c->rng, is_index, val, range_cb, c)
				     : sym_ranges4(&c->rng, val, range_cb, c);
	if (err)
		c->cu_failed = true;
}

/* The DIE's code ranges into c->tmp (emptied first). */
static void die_ranges(struct dw *c, Dwarf_Die die)
{
	Dwarf_Error e = NULL;
	Dwarf_Addr lo = 0, hi = 0;
	c->tmp.n = 0;
	if (dw_ok(c, dwarf_lowpc(die, &lo, &e), &e)) {
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
	return ((const char **)c->files.p)[ix];
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
	struct omap_ent *slot = omap_slot(&c->file_ix, (uint64_t)(uintptr_t)interned);
	if (!slot) {
		nomem(c);
		return 0;
	}
	if (slot->used)
		return slot->val;
	if (c->files.n >= UINT32_MAX - 1) /* keep SYM_NO_FILE free */
		return 0;
	const char **fp = sym_vec_push(&c->files);
	if (!fp) {
		nomem(c);
		return 0;
	}
	*fp = interned;
	omap_fill(&c->file_ix, slot, (uint64_t)(uintptr_t)interned);
	slot->val = (uint32_t)(c->files.n - 1);
	return slot->val;
}

/* The CU's file table -> c->cu_files (index 0 of c->files: unknown). */
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
					c->f->stats.file_fixups++;
				fileno = fixed[i];
			}
		}
		struct sym_line *l;
		if (!end && c->lines.n > seq_start && last_line(c)->addr == addr &&
		    last_line(c)->file != SYM_NO_FILE) {
			l = last_line(c); /* same address: the last row wins */
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

static void one_cu(struct dw *c, Dwarf_Half cu_type)
{
	Dwarf_Error e = NULL;
	Dwarf_Die cu = NULL;
	if (!dw_ok(c, dwarf_siblingof_b(c->dbg, NULL, true, &cu, &e), &e))
		return;
	Dwarf_Off cu_off = 0;
	if (!dw_ok(c, dwarf_dieoffset(cu, &cu_off, &e), &e)) {
		dwarf_dealloc_die(cu);
		return;
	}
	Dwarf_Addr base = 0;
	if (!dw_ok(c, dwarf_lowpc(cu, &base, &e), &e))
		base = 0;
	c->rng.cu_base = base;
	Dwarf_Unsigned v = 0;
	c->rng.has_rnglists_base = die_secoff(c, cu, DW_AT_rnglists_base, &v);
	c->rng.rnglists_base = v;
	v = 0;
	c->rng.has_addr_base = die_secoff(c, cu, DW_AT_addr_base, &v);
	c->rng.addr_base = v;
	cu_lines(c, cu);
	/* Split units carry their DIEs in a .dwo we do not read; type units
	 * carry no code. */
	if (!c->fatal && (cu_type == DW_UT_compile || cu_type == DW_UT_partial))
		cu_scopes(c, cu, cu_off);
	dwarf_dealloc_die(cu);
	base_free(c->cu_files);
	c->cu_files = NULL;
	c->cu_nfiles = 0;
}

/* Sections libdwarf 20210528 parses unasked, on loading .debug_info, and
 * cannot survive damage in (sym_guard.c). */
static bool lists_survivable(struct sym_elf *elf)
{
	static const char *const guarded[] = { ".debug_rnglists", ".debug_loclists" };
	for (size_t i = 0; i < BK_ARRAY_LEN(guarded); i++) {
		const uint8_t *d;
		size_t len;
		bool comp;
		if (sym_elf_has(elf, guarded[i], &comp) &&
		    (!sym_elf_section(elf, guarded[i], &d, &len, &comp) || sym_check_lists(d, len)))
			return false;
	}
	return true;
}

/* Raw bytes we read ourselves: .debug_line (sym_line.c) and what range
 * lists need (sym_ranges.c). */
static void raw_sections(struct dw *c, struct sym_elf *elf)
{
	bool comp;
	if (!sym_elf_section(elf, ".debug_line", &c->line_sec, &c->line_len, &comp))
		c->line_sec = NULL;
	if (!sym_elf_section(elf, ".debug_rnglists", &c->rng.rnglists, &c->rng.rnglists_len, &comp))
		c->rng.rnglists = NULL;
	if (!sym_elf_section(elf, ".debug_ranges", &c->rng.ranges, &c->rng.ranges_len, &comp))
		c->rng.ranges = NULL;
	if (!sym_elf_section(elf, ".debug_addr", &c->rng.addr, &c->rng.addr_len, &comp))
		c->rng.addr = NULL;
}

/* Every CU of .debug_info, in order, until one cannot be read. */
static void walk_cus(struct dw *c, const char *path)
{
	struct sym_stats *st = &c->f->stats;
	Dwarf_Error e = NULL;
	int r = dwarf_init_path(path, NULL, 0, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL, &c->dbg,
				NULL, 0, NULL, &e);
	if (r != DW_DLV_OK) {
		if (r == DW_DLV_ERROR) {
			if (e)
				dwarf_dealloc_error(NULL, e);
			st->cus_failed++;
		}
		return;
	}
	st->dwarf = true;
	Dwarf_Unsigned last_next = 0;
	while (!c->fatal) {
		Dwarf_Unsigned hdr_len = 0, typeoff = 0, next = 0;
		Dwarf_Half version = 0, addr_size = 0, off_size = 0, ext_size = 0, cu_type = 0;
		Dwarf_Off abbrev = 0;
		Dwarf_Sig8 sig;
		c->cu_failed = false;
		r = dwarf_next_cu_header_d(c->dbg, true, &hdr_len, &version, &abbrev, &addr_size,
					   &off_size, &ext_size, &sig, &typeoff, &next, &cu_type, &e);
		if (!dw_ok(c, r, &e)) {
			st->cus_failed += r == DW_DLV_ERROR;
			break;
		}
		if (next <= last_next) { /* no progress: stop rather than loop */
			st->cus_failed++;
			break;
		}
		last_next = next;
		st->cus++;
		c->cu_version = version;
		c->rng.addr_size = (uint8_t)addr_size;
		c->rng.off_size = (uint8_t)off_size;
		one_cu(c, cu_type);
		st->cus_failed += c->cu_failed;
	}
	dwarf_finish(c->dbg, &e);
	c->dbg = NULL;
}

int sym_dwarf_index(struct sym_file *f, const char *path, struct sym_elf *elf,
		    const struct sym_code *code)
{
	struct dw c = {
		.f = f, .code = code,
		.lines = { .elem = sizeof(struct sym_line) },
		.scopes = { .elem = sizeof(struct sym_scope) },
		.ranges = { .elem = sizeof(struct sym_range) },
		.files = { .elem = sizeof(const char *) },
		.tmp = { .elem = 2 * sizeof(uint64_t) },
	};
	const char **unknown = sym_vec_push(&c.files); /* index 0: no file */
	if (!unknown)
		return BK_E_NOMEM;

	bool comp = false;
	if (sym_elf_has(elf, ".debug_info", &comp))
		f->stats.dwarf_compressed = comp;
	if (lists_survivable(elf)) {
		raw_sections(&c, elf);
		walk_cus(&c, path);
	} else {
		f->stats.cus_failed++;
		f->stats.dwarf_rejected = true;
	}

	int err = c.fatal;
	sym_vec_free(&c.tmp);
	base_free(c.names.e);
	base_free(c.file_ix.e);
	f->files = c.files.p;
	f->nfiles = c.files.n;
	f->lines = c.lines.p;
	f->nlines = c.lines.n;
	f->scopes = c.scopes.p;
	f->nscopes = c.scopes.n;
	f->ranges = c.ranges.p;
	f->nranges = c.ranges.n;
	return err;
}
