/* sym_open / sym_lookup: which files feed the index, the per-unit indexes
 * and the lookups over them.
 *
 * Invariants: syms sorted by start (one entry per start); the unit index
 * (cu_ranges) sorted by low; in each indexed unit, lines sorted by (addr,
 * end-marks first, order of appearance) and ranges sorted by low; each
 * prefix-maximum array lets a lookup walk back from the binary-search
 * position only while an earlier entry can still cover the address. Every
 * string lives in f->strings. Nothing here trusts DWARF to nest properly: a
 * lookup picks the deepest range covering the address and follows parent
 * links, which always point to earlier scopes of the same unit, so it ends.
 *
 * A lookup reads every unit whose ranges cover the address (usually one)
 * and answers as if the rows and ranges of those units were one index
 * ordered as sym_open built it before indexing became lazy (units in
 * .debug_info order): the row with the greatest (address, not an end mark,
 * unit, order) and the range with the greatest (depth, low, -high, unit,
 * scope). sym_index_all builds that one index over every unit and answers
 * with the lookups of that time; the two agree whenever each unit's rows and
 * scopes lie inside the ranges that place it, as compilers emit them (the
 * tests compare them at every instruction of their programs).
 *
 * Trusts the caller for valid pointers only.
 */
#include <pthread.h>
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
	bool nomem;
	char *dem = sym_demangle_ex(name, &nomem);
	if (nomem)
		return NULL;
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

/* Sort RANGES and fill *MAX_HIGH (allocated) with its prefix maxima. */
static int finish_ranges(struct sym_range *ranges, size_t n, uint64_t **max_high)
{
	*max_high = NULL;
	if (!n)
		return 0;
	qsort(ranges, n, sizeof(*ranges), cmp_range);
	uint64_t *m = base_alloc(n * sizeof(uint64_t));
	if (!m)
		return BK_E_NOMEM;
	uint64_t hi = 0;
	for (size_t i = 0; i < n; i++) {
		if (ranges[i].high > hi)
			hi = ranges[i].high;
		m[i] = hi;
	}
	*max_high = m;
	return 0;
}

int sym_cu_finish(struct sym_cu *cu)
{
	if (cu->nlines)
		qsort(cu->lines, cu->nlines, sizeof(*cu->lines), cmp_line);
	return finish_ranges(cu->ranges, cu->nranges, &cu->range_max_high);
}

int sym_index_all(struct sym_file *f)
{
	pthread_mutex_lock(&f->lock);
	int err = sym_dwarf_ready(f);
	for (size_t i = 0; !err && i < f->ncus; i++)
		err = sym_dwarf_index_cu(f, i);
	if (err || f->merged) {
		pthread_mutex_unlock(&f->lock);
		return err;
	}
	size_t nl = 0, ns = 0, nr = 0;
	for (size_t i = 0; i < f->ncus; i++) {
		nl += f->cus[i].nlines;
		ns += f->cus[i].nscopes;
		nr += f->cus[i].nranges;
	}
	struct sym_line *lines = base_calloc(nl ? nl : 1, sizeof(*lines));
	struct sym_scope *scopes = base_calloc(ns ? ns : 1, sizeof(*scopes));
	struct sym_range *ranges = base_calloc(nr ? nr : 1, sizeof(*ranges));
	uint64_t *max_high = NULL;
	if (!lines || !scopes || !ranges || ns > INT32_MAX || nl > UINT32_MAX) {
		err = BK_E_NOMEM;
		goto out;
	}
	/* Units in order: a row's order and a scope's number are its unit's
	 * offset plus its own, as when one walk numbered them all. */
	size_t kl = 0, ks = 0, kr = 0;
	uint32_t ord_base = 0;
	for (size_t i = 0; i < f->ncus; i++) {
		const struct sym_cu *u = &f->cus[i];
		uint32_t ord_max = 0;
		for (size_t j = 0; j < u->nlines; j++) {
			lines[kl] = u->lines[j];
			lines[kl++].ord += ord_base;
			if (u->lines[j].ord + 1 > ord_max)
				ord_max = u->lines[j].ord + 1;
		}
		ord_base += ord_max;
		for (size_t j = 0; j < u->nscopes; j++) {
			scopes[ks + j] = u->scopes[j];
			if (u->scopes[j].parent >= 0)
				scopes[ks + j].parent += (int32_t)ks;
		}
		for (size_t j = 0; j < u->nranges; j++) {
			ranges[kr] = u->ranges[j];
			ranges[kr++].scope += (uint32_t)ks;
		}
		ks += u->nscopes;
	}
	if (nl)
		qsort(lines, nl, sizeof(*lines), cmp_line);
	err = finish_ranges(ranges, nr, &max_high);
out:
	if (err) {
		base_free(lines);
		base_free(scopes);
		base_free(ranges);
	} else {
		f->lines = lines;
		f->nlines = nl;
		f->scopes = scopes;
		f->nscopes = ns;
		f->ranges = ranges;
		f->range_max_high = max_high;
		f->nranges = nr;
		f->merged = true;
	}
	pthread_mutex_unlock(&f->lock);
	return err;
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

/* Open PATH, or when PATH is NULL the ELF file IMAGE (LEN bytes; its
 * symbol tables only: DWARF is read by path). */
static int open_all(struct sym_file *f, const char *path, const void *image, size_t len,
		    int64_t bias, const char *debug_path)
{
	struct ldr_elf *main = NULL, *dbg = NULL;
	struct sym_elf me = { .fd = -1 }, de = { .fd = -1 };
	uint64_t (*segs)[2] = NULL;
	struct sym_code code;

	/* The loader validates the ELF headers before libelf or libdwarf sees
	 * the file, and gives the precise open error. */
	int err = path ? ldr_open_path(path, &main) : ldr_open_memory(image, len, &main);
	if (err)
		goto out;
	if (debug_path) {
		err = ldr_open_path(debug_path, &dbg);
		if (err)
			goto out;
	}
	if (path) {
		err = sym_elf_open(path, &me);
	} else {
		const uint8_t *bytes;
		size_t n;
		/* A copy of its own: the loader's goes at the end, and the DWARF
		 * reader keeps ME (and its bytes) until sym_close. */
		ldr_bytes(main, &bytes, &n);
		err = sym_elf_open_copy(bytes, n, &me);
	}
	if (err)
		goto out;
	bool main_symtab = has_section(&me, ".symtab");
	/* An image from memory has its DWARF read through libelf: not an
	 * ET_REL one, which only libdwarf's reader of files relocates. */
	bool main_dwarf = has_section(&me, ".debug_info") && (path || main->type != 1 /* ET_REL */);
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
	 * named the debug file), then .dynsym with the .symtab of the file's
	 * MiniDebugInfo (.gnu_debugdata: the functions .dynsym lacks). A
	 * damaged .gnu_debugdata is left out like damaged DWARF. */
	struct sym_elf *first = debug_path ? &de : &me, *second = debug_path ? &me : &de;
	for (int i = 0; i < 3 && !err && !f->nsyms; i++) {
		struct sym_elf *e = i == 0 ? first : i == 1 ? second : &me;
		if (!e->elf)
			continue;
		uint8_t *mini = NULL;
		size_t mini_len = 0;
		struct sym_elf mde = { .fd = -1 };
		if (i == 2 && sym_elf_debugdata(&me, &mini, &mini_len) == 0 && mini &&
		    sym_elf_open_memory(mini, mini_len, &mde) != 0)
			mde.elf = NULL;
		err = sym_elf_symbols_with(f, e, i < 2 ? 2 /* SHT_SYMTAB */ : 11 /* SHT_DYNSYM */,
					   mde.elf ? &mde : NULL);
		if (f->nsyms)
			f->stats.symbol_source = i == 2 ? (mde.elf ? 4 : 3) : e == &me ? 1 : 2;
		sym_elf_close(&mde); /* the names are interned: its bytes can go */
		base_free(mini);
	}
	if (!err && !f->nsyms && !path) { /* an image without section headers */
		err = sym_dyn_symbols(f, main, bias);
		if (f->nsyms)
			f->stats.symbol_source = 3;
	}
	f->stats.symbols = f->nsyms;
	if (err)
		goto out;

	/* DWARF: the same order, the file's own unless the caller named one.
	 * Its file stays open (sym_dwarf_open takes it over). */
	bool debug_dwarf = de.elf && has_section(&de, ".debug_info");
	if (debug_dwarf && (debug_path || !main_dwarf))
		err = sym_dwarf_open(f, dbg->path, path, &de, &code);
	else if (main_dwarf)
		err = sym_dwarf_open(f, path, path, &me, &code);
out:
	base_free(segs);
	sym_elf_close(&de);
	sym_elf_close(&me);
	ldr_close(dbg);
	ldr_close(main);
	return err;
}

static int open_file(const char *path, const void *image, size_t len, int64_t bias,
		     const char *debug_path, struct sym_file **out)
{
	struct sym_file *f = base_calloc(1, sizeof(*f));
	if (!f)
		return BK_E_NOMEM;
	if (pthread_mutex_init(&f->lock, NULL) != 0) {
		base_free(f);
		return BK_E_NOMEM;
	}
	f->files.elem = sizeof(const char *);
	int err = open_all(f, path, image, len, bias, debug_path);
	if (err) {
		sym_close(f);
		return err;
	}
	*out = f;
	return 0;
}

int sym_open(const char *path, const char *debug_path, struct sym_file **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (!path)
		return BK_E_INVAL;
	return open_file(path, NULL, 0, 0, debug_path, out);
}

int sym_open_memory(const void *image, size_t len, int64_t bias, struct sym_file **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (!image)
		return BK_E_INVAL;
	return open_file(NULL, image, len, bias, NULL, out);
}

void sym_close(struct sym_file *f)
{
	if (!f)
		return;
	sym_dwarf_close(f->dwarf);
	for (size_t i = 0; i < f->ncus; i++) {
		base_free(f->cus[i].lines);
		base_free(f->cus[i].scopes);
		base_free(f->cus[i].ranges);
		base_free(f->cus[i].range_max_high);
	}
	base_free(f->cus);
	base_free(f->cu_ranges);
	base_free(f->cu_range_max_high);
	base_free(f->syms);
	base_free(f->sym_max_end);
	sym_vec_free(&f->files);
	base_free(f->lines);
	base_free(f->scopes);
	base_free(f->ranges);
	base_free(f->range_max_high);
	sym_strings_free(&f->strings);
	pthread_mutex_destroy(&f->lock);
	base_free(f);
}

void sym_get_stats(struct sym_file *f, struct sym_stats *out)
{
	pthread_mutex_lock(&f->lock);
	*out = f->stats;
	pthread_mutex_unlock(&f->lock);
}

/* ---- Lookups ------------------------------------------------------------------------ */

/* Index of the symbol covering ADDR, or -1. */
static ptrdiff_t find_symbol(const struct sym_file *f, uint64_t addr)
{
	size_t lo = BASE_COUNT_LE(f->syms, f->nsyms, start, addr); /* first start > addr */
	/* The greatest start first; an earlier, longer symbol only if this one
	 * ends before ADDR (a sized alias or label nested inside a function). */
	for (size_t i = lo; i-- > 0 && f->sym_max_end[i] > addr;)
		if (addr < f->syms[i].end)
			return (ptrdiff_t)i;
	return -1;
}

/* The last row of LINES at or before ADDR (an end mark included), or NULL. */
static const struct sym_line *last_row(const struct sym_line *lines, size_t n, uint64_t addr)
{
	size_t lo = BASE_COUNT_LE(lines, n, addr, addr);
	return lo ? &lines[lo - 1] : NULL;
}

/* Scopes and their ranges: one unit's, or the merged index. */
struct view {
	const struct sym_scope *scopes;
	const struct sym_range *ranges;
	const uint64_t *max_high;
	size_t nranges;
};

/* Number of ranges with low <= ADDR. */
static size_t ranges_upto(const struct view *v, uint64_t addr)
{
	return BASE_COUNT_LE(v->ranges, v->nranges, low, addr);
}

/* The deepest range covering ADDR, or NULL. */
static const struct sym_range *find_scope(const struct view *v, uint64_t addr)
{
	const struct sym_range *best = NULL;
	for (size_t i = ranges_upto(v, addr); i-- > 0 && v->max_high[i] > addr;) {
		const struct sym_range *r = &v->ranges[i];
		if (addr >= r->high)
			continue;
		/* Deepest wins; among equals the greatest low (seen first). */
		if (!best || r->depth > best->depth)
			best = r;
	}
	return best;
}

/* Low end of a range of SCOPE covering ADDR, or ADDR itself. */
static uint64_t scope_low(const struct view *v, uint32_t scope, uint64_t addr)
{
	for (size_t i = ranges_upto(v, addr); i-- > 0 && v->max_high[i] > addr;)
		if (v->ranges[i].scope == scope && addr < v->ranges[i].high)
			return v->ranges[i].low;
	return addr;
}

static struct view cu_view(const struct sym_cu *u)
{
	return (struct view){ u->scopes, u->ranges, u->range_max_high, u->nranges };
}

/* Units whose ranges cover ADDR: the next after *I (start with *I = SIZE_MAX),
 * or -1. The same unit may come more than once. */
static ptrdiff_t next_unit(const struct sym_file *f, uint64_t addr, size_t *i)
{
	if (*i == SIZE_MAX) {
		*i = BASE_COUNT_LE(f->cu_ranges, f->ncu_ranges, low, addr);
	}
	while (*i > 0 && f->cu_range_max_high[*i - 1] > addr) {
		const struct sym_cu_range *r = &f->cu_ranges[--*i];
		if (addr < r->high)
			return (ptrdiff_t)r->cu;
	}
	*i = 0;
	return -1;
}

/* Does row X (of unit XU) come after row Y (of unit YU) in the one index? */
static bool row_after(const struct sym_line *x, size_t xu, const struct sym_line *y, size_t yu)
{
	if (x->addr != y->addr)
		return x->addr > y->addr;
	bool xe = x->file == SYM_NO_FILE, ye = y->file == SYM_NO_FILE;
	if (xe != ye)
		return ye;
	if (xu != yu)
		return xu > yu;
	return x->ord > y->ord;
}

/* Does range X (of unit XU) win over range Y (of unit YU), as find_scope
 * over the one index would choose? */
static bool range_wins(const struct sym_range *x, size_t xu, const struct sym_range *y,
		       size_t yu)
{
	if (x->depth != y->depth)
		return x->depth > y->depth;
	if (x->low != y->low)
		return x->low > y->low;
	if (x->high != y->high)
		return x->high < y->high;
	if (xu != yu)
		return xu > yu;
	return x->scope > y->scope;
}

static int lookup(struct sym_file *f, uint64_t addr, struct sym_frame *frames, int max)
{
	ptrdiff_t si = find_symbol(f, addr);
	struct sym_symbol *sym = si >= 0 ? &f->syms[si] : NULL;
	const char *sym_name = sym ? sym_symbol_name(f, sym) : NULL;
	if (sym && !sym_name)
		return BK_E_NOMEM;

	const struct sym_line *row = NULL;
	const struct sym_range *rng = NULL;
	struct view v = { 0 };
	if (f->merged) {
		v = (struct view){ f->scopes, f->ranges, f->range_max_high, f->nranges };
		row = last_row(f->lines, f->nlines, addr);
		rng = find_scope(&v, addr);
	} else if (f->dwarf) {
		int err = sym_dwarf_ready(f);
		size_t it = SIZE_MAX;
		for (ptrdiff_t u; !err && (u = next_unit(f, addr, &it)) >= 0;)
			err = sym_dwarf_index_cu(f, (size_t)u);
		if (err)
			return err;
		size_t row_u = 0, rng_u = 0;
		it = SIZE_MAX;
		for (ptrdiff_t u; (u = next_unit(f, addr, &it)) >= 0;) {
			const struct sym_cu *cu = &f->cus[u];
			const struct sym_line *r = last_row(cu->lines, cu->nlines, addr);
			if (r && (!row || row_after(r, (size_t)u, row, row_u))) {
				row = r;
				row_u = (size_t)u;
			}
			struct view cv = cu_view(cu);
			const struct sym_range *g = find_scope(&cv, addr);
			if (g && (!rng || range_wins(g, (size_t)u, rng, rng_u))) {
				rng = g;
				rng_u = (size_t)u;
				v = cv;
			}
		}
	}
	if (row && row->file == SYM_NO_FILE)
		row = NULL; /* past the end of a sequence */

	const char *const *files = f->files.p;
	const char *file = row ? files[row->file] : NULL;
	unsigned line = row ? row->line : 0, column = row ? row->column : 0;
	if (!rng) {
		if (!sym && !row)
			return 0;
		frames[0] = (struct sym_frame){
			.function = sym_name,
			.symbol = sym_name,
			.offset = sym ? addr - sym->start : 0,
			.file = file, .line = line, .column = column,
		};
		return 1;
	}

	int n = 0;
	ptrdiff_t sc = rng->scope;
	for (unsigned hops = 0; sc >= 0 && n < max && hops <= SYM_MAX_DIE_DEPTH; hops++) {
		const struct sym_scope *s = &v.scopes[sc];
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
				fr->function = sym_name;
			fr->symbol = sym_name;
			fr->offset = addr - (sym ? sym->start : scope_low(&v, (uint32_t)sc, addr));
			break;
		}
		file = s->call_file;
		line = s->call_line;
		column = s->call_column;
		sc = s->parent;
	}
	return n;
}

int sym_lookup(struct sym_file *f, uint64_t addr, struct sym_frame *frames, int max)
{
	if (!f || !frames || max < 1)
		return BK_E_INVAL;
	pthread_mutex_lock(&f->lock);
	int n = lookup(f, addr, frames, max);
	pthread_mutex_unlock(&f->lock);
	return n;
}
