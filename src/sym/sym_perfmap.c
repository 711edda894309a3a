/* perf maps: the names a JIT compiler gives the code it generates, in the
 * text file /tmp/perf-PID.map that perf(1) reads (written by node
 * --perf-basic-prof, the JVM's perf agents, CPython 3.12's -X perf, LuaJIT,
 * ...). One line per code range: "START SIZE NAME", START and SIZE in hex
 * (with or without 0x), NAME the rest of the line.
 *
 * A JIT may reuse an address for new code and append a new line: among the
 * ranges holding an address, the one written last wins, as it describes
 * the code there now. Lines that do not parse (or give an empty range) are
 * skipped and counted. Bounds: at most SYM_PERFMAP_MAX_BYTES of file and
 * SYM_PERFMAP_MAX_ENTRIES ranges; past them the rest of the file is
 * ignored (and counted). Lookups search backwards from the last range
 * starting at or below the address, over ranges that could still hold it
 * (a prefix maximum of the ends bounds the search), at most
 * SYM_PERFMAP_MAX_SCAN of them (a range under more later-starting ones
 * than that is not seen: JIT code ranges hardly nest). Cold: opening reads
 * and sorts the file; lookups do not allocate.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym.h"

struct pm_entry {
	uint64_t start, end;
	uint32_t order;      /* line number among the kept ones: later wins */
	uint32_t name_off;   /* into names */
};

struct sym_perfmap {
	struct pm_entry *e;
	uint64_t *max_end;   /* prefix maximum of e[..].end */
	size_t n;
	char *names;         /* the file, NUL-terminated names in place */
	size_t skipped;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct pm_entry *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Hex digits at *P (an optional 0x first) into *V; false when none. */
static bool hex(char **p, char *end, uint64_t *v)
{
	char *s = *p;
	if (end - s > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	uint64_t x = 0;
	int digits = 0;
	for (; s < end; s++, digits++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0'
			: *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
		if (d < 0)
			break;
		if (digits >= 16)
			return false; /* more than 64 bits */
		x = x << 4 | (uint64_t)d;
	}
	*p = s;
	*v = x;
	return digits > 0;
}

/* One or more blanks at *P, skipped. */
static bool spaces(char **p, char *end)
{
	char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	bool any = s > *p;
	*p = s;
	return any;
}

int sym_perfmap_parse(char *text, size_t len, struct sym_perfmap **out)
{
	*out = NULL;
	struct sym_perfmap *m = base_calloc(1, sizeof(*m));
	if (!m)
		return BK_E_NOMEM;
	m->names = text;
	size_t cap = 0;
	char *p = text, *end = text + len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *le = nl ? nl : end;
		char *q = p;
		uint64_t start, size;
		bool ok = hex(&q, le, &start) && spaces(&q, le) && hex(&q, le, &size) &&
			  q < le && (*q == ' ' || *q == '\t') && size > 0 && start + size > start;
		if (ok && m->n >= SYM_PERFMAP_MAX_ENTRIES) {
			m->skipped++;
			ok = false;
		}
		if (ok) {
			char *name = q + 1;
			if (le > name && le[-1] == '\r')
				le[-1] = 0;
			*le = 0; /* the name ends the line (the text ends in a NUL) */
			if (m->n == cap) {
				cap = cap ? cap * 2 : 256;
				void *e = base_realloc(m->e, cap * sizeof(*m->e));
				if (!e) {
					sym_perfmap_close(m);
					return BK_E_NOMEM;
				}
				m->e = e;
			}
			m->e[m->n] = (struct pm_entry){ .start = start, .end = start + size,
							.order = (uint32_t)m->n,
							.name_off = (uint32_t)(name - text) };
			m->n++;
		} else if (le > p) {
			m->skipped++;
		}
		p = le + 1;
	}
	if (m->n) {
		qsort(m->e, m->n, sizeof(*m->e), cmp_entry);
		if (!(m->max_end = base_alloc(m->n * sizeof(uint64_t)))) {
			sym_perfmap_close(m);
			return BK_E_NOMEM;
		}
		for (size_t i = 0; i < m->n; i++)
			m->max_end[i] = i && m->max_end[i - 1] > m->e[i].end ? m->max_end[i - 1]
									   : m->e[i].end;
	}
	*out = m;
	return 0;
}

int sym_perfmap_open(const char *path, struct sym_perfmap **out)
{
	*out = NULL;
	uint64_t size;
	int fd = base_open_regular(path, &size);
	if (fd < 0)
		return fd;
	size_t len = size > SYM_PERFMAP_MAX_BYTES ? SYM_PERFMAP_MAX_BYTES : (size_t)size;
	char *text = base_alloc(len + 1);
	if (!text) {
		close(fd);
		return BK_E_NOMEM;
	}
	size_t got = 0;
	while (got < len) { /* the JIT may be appending: take what is there */
		ssize_t r = read(fd, text + got, len - got);
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	/* A cut last line (the file's bound, or a write in progress) is not
	 * taken as a whole one. */
	while (got && text[got - 1] != '\n')
		got--;
	text[got] = 0;
	int err = sym_perfmap_parse(text, got, out);
	if (err)
		base_free(text);
	else if (size > len)
		(*out)->skipped++;
	return err;
}

int sym_perfmap_lookup(const struct sym_perfmap *m, uint64_t addr, struct bk_symbol *out)
{
	if (!m || !m->n)
		return 0;
	/* The last range starting at or below ADDR. */
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m->e[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct pm_entry *best = NULL;
	size_t looked = 0;
	for (size_t i = lo; i-- > 0 && m->max_end[i] > addr && looked++ < SYM_PERFMAP_MAX_SCAN;) {
		const struct pm_entry *e = &m->e[i];
		if (addr < e->end && (!best || e->order > best->order))
			best = e;
	}
	if (!best)
		return 0;
	*out = (struct bk_symbol){ .function = m->names + best->name_off,
				   .offset = addr - best->start };
	return 1;
}

size_t sym_perfmap_skipped(const struct sym_perfmap *m)
{
	return m ? m->skipped : 0;
}

void sym_perfmap_close(struct sym_perfmap *m)
{
	if (!m)
		return;
	base_free(m->e);
	base_free(m->max_end);
	base_free(m->names);
	base_free(m);
}
