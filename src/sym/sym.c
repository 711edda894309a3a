/* sym_open / sym_lookup: which files feed the index, the finished index and
 * the lookups over it.
 *
 * Invariant after sym_open: syms sorted by start (one entry per start),
 * lines sorted by (addr, end-marks first, order of appearance), ranges
 * sorted by low; each prefix-maximum array lets a lookup walk back from the
 * binary-search position only while an earlier entry can still cover the
 * address. Every string lives in f->strings. Nothing here trusts DWARF to
 * nest properly: a lookup picks the deepest range covering the address and
 * follows parent links, which always point to earlier scopes, so it ends.
 *
 * Trusts the caller for valid pointers only.
 */
#include <stdlib.h>

#include "sym.h"
#include "../loader/loader.h"

/* ---- Strings ---------------------------------------------------------------- */

#define SYM_CHUNK_LEN 65536

struct sym_chunk {
	struct sym_chunk *next;
	size_t used, cap;
	char data[];
};

void sym_strings_free(struct sym_strings *s)
{
	struct sym_chunk *c = s->chunks;
	while (c) {
		struct sym_chunk *next = c->next;
		base_free(c);
		c = next;
	}
	base_free(s->slots);
	memset(s, 0, sizeof(*s));
}

static uint64_t str_hash(const char *p, size_t len)
{
	uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
	for (size_t i = 0; i < len; i++) {
		h ^= (uint8_t)p[i];
		h *= 0x100000001b3u;
	}
	return h;
}

static char *arena_copy(struct sym_strings *s, const char *str, size_t len)
{
	struct sym_chunk *c = s->chunks;
	if (!c || c->cap - c->used < len + 1) {
		size_t cap = len + 1 > SYM_CHUNK_LEN ? len + 1 : SYM_CHUNK_LEN;
		struct sym_chunk *n = base_alloc(sizeof(*n) + cap);
		if (!n)
			return NULL;
		n->used = 0;
		n->cap = cap;
		if (c && len + 1 > SYM_CHUNK_LEN && c->cap - c->used > 256) {
			/* A big one-off string: keep filling the current chunk. */
			n->next = c->next;
			c->next = n;
		} else {
			n->next = c;
			s->chunks = n;
		}
		c = n;
	}
	char *d = c->data + c->used;
	memcpy(d, str, len);
	d[len] = '\0';
	c->used += len + 1;
	return d;
}

static int strings_grow(struct sym_strings *s)
{
	size_t n = s->nslots ? s->nslots * 2 : 1024;
	const char **slots = base_calloc(n, sizeof(*slots));
	if (!slots)
		return BK_E_NOMEM;
	for (size_t i = 0; i < s->nslots; i++) {
		const char *v = s->slots[i];
		if (!v)
			continue;
		size_t j = str_hash(v, strlen(v)) & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = v;
	}
	base_free(s->slots);
	s->slots = slots;
	s->nslots = n;
	return 0;
}

const char *sym_intern(struct sym_strings *s, const char *str, size_t len)
{
	if ((s->nused + 1) * 2 > s->nslots && strings_grow(s))
		return NULL;
	size_t j = str_hash(str, len) & (s->nslots - 1);
	for (; s->slots[j]; j = (j + 1) & (s->nslots - 1)) {
		const char *v = s->slots[j];
		if (strncmp(v, str, len) == 0 && v[len] == '\0')
			return v;
	}
	char *d = arena_copy(s, str, len);
	if (!d)
		return NULL;
	s->slots[j] = d;
	s->nused++;
	return d;
}

const char *sym_intern_name(struct sym_strings *s, const char *name)
{
	char *dem = sym_demangle(name);
	const char *r = dem ? sym_intern(s, dem, strlen(dem)) : sym_intern(s, name, strlen(name));
	base_free(dem);
	return r;
}

/* ---- Growable arrays ---------------------------------------------------------- */

void *sym_vec_push(struct sym_vec *v)
{
	if (v->n == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		if (cap > SIZE_MAX / v->elem)
			return NULL;
		void *p = base_realloc(v->p, cap * v->elem);
		if (!p)
			return NULL;
		v->p = p;
		v->cap = cap;
	}
	void *slot = (char *)v->p + v->n++ * v->elem;
	memset(slot, 0, v->elem);
	return slot;
}

void sym_vec_free(struct sym_vec *v)
{
	base_free(v->p);
	v->p = NULL;
	v->n = v->cap = 0;
}

bool sym_code_has(const struct sym_code *c, uint64_t addr)
{
	if (!c || c->nseg == 0)
		return true;
	for (size_t i = 0; i < c->nseg; i++)
		if (addr >= c->seg[i][0] && addr < c->seg[i][1])
			return true;
	return false;
}

/* ---- Building the index -------------------------------------------------------- */

static int cmp_line(const void *a, const void *b)
{
	const struct sym_line *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	bool xe = x->file == SYM_NO_FILE, ye = y->file == SYM_NO_FILE;
	if (xe != ye)
		return xe ? -1 : 1; /* an end mark yields to a row starting there */
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

static int cmp_range(const void *a, const void *b)
{
	const struct sym_range *x = a, *y = b;
	if (x->low != y->low)
		return x->low < y->low ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	if (x->high != y->high)
		return x->high > y->high ? -1 : 1;
	return x->scope < y->scope ? -1 : x->scope > y->scope;
}

static int finish_index(struct sym_file *f)
{
	if (f->nlines)
		qsort(f->lines, f->nlines, sizeof(*f->lines), cmp_line);
	if (f->nranges) {
		qsort(f->ranges, f->nranges, sizeof(*f->ranges), cmp_range);
		f->range_max_high = base_alloc(f->nranges * sizeof(uint64_t));
		if (!f->range_max_high)
			return BK_E_NOMEM;
		uint64_t m = 0;
		for (size_t i = 0; i < f->nranges; i++) {
			if (f->ranges[i].high > m)
				m = f->ranges[i].high;
			f->range_max_high[i] = m;
		}
	}
	f->stats.line_rows = f->nlines;
	f->stats.scopes = f->nscopes;
	f->stats.ranges = f->nranges;
	f->stats.symbols = f->nsyms;
	return 0;
}

/* ---- Opening ---------------------------------------------------------------------- */

static bool has_section(struct sym_elf *e, const char *name)
{
	bool comp;
	return sym_elf_has(e, name, &comp);
}

/* Executable PT_LOAD ranges of the main file. */
static int code_ranges(const struct ldr_elf *main, uint64_t (**segs)[2], struct sym_code *code)
{
	memset(code, 0, sizeof(*code));
	*segs = NULL;
	size_t n = 0;
	for (size_t i = 0; i < main->nsegs; i++)
		n += (main->segs[i].flags & 1u /* PF_X */) != 0;
	if (n == 0)
		return 0;
	*segs = base_calloc(n, sizeof(**segs));
	if (!*segs)
		return BK_E_NOMEM;
	n = 0;
	for (size_t i = 0; i < main->nsegs; i++) {
		const struct ldr_segment *s = &main->segs[i];
		if (!(s->flags & 1u))
			continue;
		(*segs)[n][0] = s->vaddr;
		(*segs)[n][1] = s->vaddr + s->memsz < s->vaddr ? UINT64_MAX : s->vaddr + s->memsz;
		n++;
	}
	code->seg = (const uint64_t (*)[2])*segs;
	code->nseg = n;
	return 0;
}

static int open_all(struct sym_file *f, const char *path, const char *debug_path)
{
	struct ldr_elf *main = NULL, *dbg = NULL;
	struct sym_elf me = { .fd = -1 }, de = { .fd = -1 };
	uint64_t (*segs)[2] = NULL;
	struct sym_code code;

	/* The loader validates the ELF headers before libelf or libdwarf sees
	 * the file, and gives the precise open error. */
	int err = ldr_open_path(path, &main);
	if (err)
		goto out;
	if (debug_path) {
		err = ldr_open_path(debug_path, &dbg);
		if (err)
			goto out;
	}
	err = sym_elf_open(path, &me);
	if (err)
		goto out;
	bool main_symtab = has_section(&me, ".symtab");
	bool main_dwarf = has_section(&me, ".debug_info");
	if (!dbg && (!main_symtab || !main_dwarf)) {
		err = ldr_open_debug_file(main, NULL, &dbg);
		if (err == BK_E_NOT_FOUND)
			err = 0;
		if (err)
			goto out;
	}
	if (dbg) {
		err = sym_elf_open(dbg->path, &de);
		if (err)
			goto out;
		f->stats.used_debug_file = true;
	}
	err = code_ranges(main, &segs, &code);
	if (err)
		goto out;

	/* Symbols: the file's .symtab, its debug file's (first when the caller
	 * named the debug file), then .dynsym. */
	struct sym_elf *first = debug_path ? &de : &me, *second = debug_path ? &me : &de;
	for (int i = 0; i < 3 && !err && !f->nsyms; i++) {
		struct sym_elf *e = i == 0 ? first : i == 1 ? second : &me;
		if (!e->elf)
			continue;
		err = sym_elf_symbols(f, e, i < 2 ? 2 /* SHT_SYMTAB */ : 11 /* SHT_DYNSYM */);
		if (f->nsyms)
			f->stats.symbol_source = i == 2 ? 3 : e == &me ? 1 : 2;
	}
	if (err)
		goto out;

	/* DWARF: the same order, the file's own unless the caller named one. */
	bool debug_dwarf = de.elf && has_section(&de, ".debug_info");
	if (debug_dwarf && (debug_path || !main_dwarf))
		err = sym_dwarf_index(f, dbg->path, &de, &code);
	else if (main_dwarf)
		err = sym_dwarf_index(f, path, &me, &code);
	if (!err)
		err = finish_index(f);
out:
	base_free(segs);
	sym_elf_close(&de);
	sym_elf_close(&me);
	ldr_close(dbg);
	ldr_close(main);
	return err;
}

int sym_open(const char *path, const char *debug_path, struct sym_file **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (!path)
		return BK_E_INVAL;
	struct sym_file *f = base_calloc(1, sizeof(*f));
	if (!f)
		return BK_E_NOMEM;
	int err = open_all(f, path, debug_path);
	if (err) {
		sym_close(f);
		return err;
	}
	*out = f;
	return 0;
}

void sym_close(struct sym_file *f)
{
	if (!f)
		return;
	base_free(f->syms);
	base_free(f->sym_max_end);
	base_free(f->files);
	base_free(f->lines);
	base_free(f->scopes);
	base_free(f->ranges);
	base_free(f->range_max_high);
	sym_strings_free(&f->strings);
	base_free(f);
}

void sym_get_stats(const struct sym_file *f, struct sym_stats *out)
{
	*out = f->stats;
}

/* ---- Lookups ------------------------------------------------------------------------ */

/* Index of the symbol covering ADDR, or -1. */
static ptrdiff_t find_symbol(const struct sym_file *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nsyms; /* first start > addr */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The greatest start first; an earlier, longer symbol only if this one
	 * ends before ADDR (a sized alias or label nested inside a function). */
	for (size_t i = lo; i-- > 0 && f->sym_max_end[i] > addr;)
		if (addr < f->syms[i].end)
			return (ptrdiff_t)i;
	return -1;
}

static const struct sym_line *find_line(const struct sym_file *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nlines;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->lines[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || f->lines[lo - 1].file == SYM_NO_FILE)
		return NULL;
	return &f->lines[lo - 1];
}

/* The deepest scope covering ADDR, or -1. */
static ptrdiff_t find_scope(const struct sym_file *f, uint64_t addr)
{
	size_t lo = 0, hi = f->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->ranges[mid].low <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	ptrdiff_t best = -1;
	for (size_t i = lo; i-- > 0 && f->range_max_high[i] > addr;) {
		const struct sym_range *r = &f->ranges[i];
		if (addr >= r->high)
			continue;
		/* Deepest wins; among equals the greatest low (seen first). */
		if (best < 0 || r->depth > f->ranges[best].depth)
			best = (ptrdiff_t)i;
	}
	return best < 0 ? -1 : (ptrdiff_t)f->ranges[best].scope;
}

/* Low end of a range of SCOPE covering ADDR, or ADDR itself. */
static uint64_t scope_low(const struct sym_file *f, uint32_t scope, uint64_t addr)
{
	size_t lo = 0, hi = f->nranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (f->ranges[mid].low <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && f->range_max_high[i] > addr;)
		if (f->ranges[i].scope == scope && addr < f->ranges[i].high)
			return f->ranges[i].low;
	return addr;
}

int sym_lookup(const struct sym_file *f, uint64_t addr, struct sym_frame *frames, int max)
{
	if (!f || !frames || max < 1)
		return BK_E_INVAL;
	ptrdiff_t si = find_symbol(f, addr);
	const struct sym_symbol *sym = si >= 0 ? &f->syms[si] : NULL;
	const struct sym_line *row = find_line(f, addr);
	ptrdiff_t sc = find_scope(f, addr);

	const char *file = row ? f->files[row->file] : NULL;
	unsigned line = row ? row->line : 0, column = row ? row->column : 0;
	if (sc < 0) {
		if (!sym && !row)
			return 0;
		frames[0] = (struct sym_frame){
			.function = sym ? sym->name : NULL,
			.symbol = sym ? sym->name : NULL,
			.offset = sym ? addr - sym->start : 0,
			.file = file, .line = line, .column = column,
		};
		return 1;
	}

	int n = 0;
	for (unsigned hops = 0; sc >= 0 && n < max && hops <= SYM_MAX_DIE_DEPTH; hops++) {
		const struct sym_scope *s = &f->scopes[sc];
		struct sym_frame *fr = &frames[n++];
		*fr = (struct sym_frame){
			.function = s->name,
			.file = file, .line = line, .column = column,
			.inlined = s->parent >= 0,
		};
		if (s->parent < 0) {
			/* The real function: its offset from the symbol covering
			 * ADDR, or from the DWARF range when there is none. */
			if (!fr->function && sym)
				fr->function = sym->name;
			fr->symbol = sym ? sym->name : NULL;
			fr->offset = addr - (sym ? sym->start : scope_low(f, (uint32_t)sc, addr));
			break;
		}
		file = s->call_file;
		line = s->call_line;
		column = s->call_column;
		sc = s->parent;
	}
	return n;
}
