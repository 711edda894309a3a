/* `backstep check` as a CI gate: which findings are waived, so that only new
 * ones fail the run.
 *
 *   --suppress KIND[:SYMBOL]  findings of KIND (gap, overlap, ..., and with
 *                             --stack: stack, cannot-analyse), or only
 *                             those at SYMBOL (as printed: demangled)
 *   --baseline FILE           findings recorded earlier by `check --json`
 *
 * A finding is identified across builds by the file's name (its last path
 * component: the baseline may come from another directory), its kind, and
 * where it is: SYMBOL+OFFSET when it has a symbol (addresses move from
 * build to build, offsets in a function much less), else its detail text.
 * The baseline is JSON Lines as check --json writes it; lines whose "type"
 * is not "finding" are ignored, and a line that is not a JSON object is an
 * error naming the file and line (exit 2: unusable input).
 *
 * Trusts its caller for nothing: the baseline's bytes are read through a
 * bounded scanner (no recursion, strings decoded into bounded buffers).
 * Cold; allocates. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gate.h"

#define MAX_SUPPRESS 256
#define FIELD_MAX 4096

struct suppress {
	const char *kind;
	const char *symbol; /* NULL: every finding of KIND */
};

static struct suppress sup[MAX_SUPPRESS];
static size_t nsup;
static char **keys;  /* the baseline's findings, sorted */
static size_t nkeys, capkeys;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* "FILE\x1fKIND\x1fSYMBOL\x1fOFFSET" or "FILE\x1fKIND\x1f\x1f\x1fDETAIL". */
static char *make_key(const char *file, const char *kind, const char *symbol, const char *offset,
		      const char *detail)
{
	const char *f = base_name(file);
	size_t n = strlen(f) + strlen(kind) + (symbol ? strlen(symbol) + strlen(offset) : 0) +
		   (symbol ? 0 : strlen(detail ? detail : "")) + 8;
	char *k = malloc(n);
	if (!k)
		return NULL;
	if (symbol)
		snprintf(k, n, "%s\x1f%s\x1f%s\x1f%s", f, kind, symbol, offset);
	else
		snprintf(k, n, "%s\x1f%s\x1f\x1f\x1f%s", f, kind, detail ? detail : "");
	return k;
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int gate_suppress(char *arg, bool (*known_kind)(const char *))
{
	if (nsup == MAX_SUPPRESS)
		return -1;
	char *colon = strchr(arg, ':');
	if (colon)
		*colon = 0;
	if (!known_kind(arg))
		return -2;
	sup[nsup].kind = arg;
	sup[nsup].symbol = colon && colon[1] ? colon + 1 : NULL;
	nsup++;
	return 0;
}

/* ---- A bounded reader of one JSON Lines object ------------------------------ */

struct scan {
	const char *p, *end;
};

static void skip_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\r'))
		s->p++;
}

static int hex4(const char *p, const char *end, unsigned *v)
{
	if (end - p < 4)
		return -1;
	*v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*v = *v << 4 | (unsigned)d;
	}
	return 0;
}

static size_t put_utf8(char *o, unsigned cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A JSON string at s->p (after its '"') into OUT (FIELD_MAX bytes, NUL-
 * terminated; longer strings are cut). \uDCXX alone is the raw byte XX, as
 * the CLI writes a byte that is not UTF-8. */
static int read_string(struct scan *s, char *out)
{
	size_t n = 0;
	while (s->p < s->end && *s->p != '"') {
		char tmp[4];
		size_t len = 1;
		char c = *s->p++;
		if (c == '\\') {
			if (s->p >= s->end)
				return -1;
			c = *s->p++;
			switch (c) {
			case '"': case '\\': case '/': tmp[0] = c; break;
			case 'b': tmp[0] = '\b'; break;
			case 'f': tmp[0] = '\f'; break;
			case 'n': tmp[0] = '\n'; break;
			case 'r': tmp[0] = '\r'; break;
			case 't': tmp[0] = '\t'; break;
			case 'u': {
				unsigned cp, lo;
				if (hex4(s->p, s->end, &cp))
					return -1;
				s->p += 4;
				if (cp >= 0xd800 && cp < 0xdc00 && s->end - s->p >= 6 && s->p[0] == '\\' &&
				    s->p[1] == 'u' && !hex4(s->p + 2, s->end, &lo) && lo >= 0xdc00 &&
				    lo < 0xe000) {
					s->p += 6;
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc80 && cp < 0xdd00) {
					tmp[0] = (char)(cp & 0xff); /* surrogateescape */
					break;
				}
				len = put_utf8(tmp, cp);
				break;
			}
			default:
				return -1;
			}
		} else {
			tmp[0] = c;
		}
		for (size_t i = 0; i < len && n + 1 < FIELD_MAX; i++)
			out[n++] = tmp[i];
	}
	if (s->p >= s->end)
		return -1;
	s->p++;
	out[n] = 0;
	return 0;
}

/* Skip a value that is not a string: a number, true/false/null, or an
 * array or object (strings inside skipped whole). */
static int skip_value(struct scan *s)
{
	int depth = 0;
	char tmp[FIELD_MAX];
	while (s->p < s->end) {
		char c = *s->p;
		if (c == '"') {
			s->p++;
			if (read_string(s, tmp))
				return -1;
			continue;
		}
		if (c == '[' || c == '{')
			depth++;
		else if (c == ']' || c == '}') {
			if (depth == 0)
				return 0;
			depth--;
		} else if (c == ',' && depth == 0)
			return 0;
		s->p++;
	}
	return depth ? -1 : 0;
}

struct finding_fields {
	char type[32], file[FIELD_MAX], kind[64], symbol[FIELD_MAX], offset[32], detail[FIELD_MAX];
	bool has_symbol;
};

static int parse_line(const char *p, const char *end, struct finding_fields *f)
{
	struct scan s = { p, end };
	memset(f, 0, sizeof(*f));
	skip_ws(&s);
	if (s.p >= s.end || *s.p++ != '{')
		return -1;
	for (;;) {
		skip_ws(&s);
		if (s.p < s.end && *s.p == '}')
			return 0;
		char key[64];
		if (s.p >= s.end || *s.p++ != '"' || read_string(&s, key))
			return -1;
		skip_ws(&s);
		if (s.p >= s.end || *s.p++ != ':')
			return -1;
		skip_ws(&s);
		if (s.p < s.end && *s.p == '"') {
			char val[FIELD_MAX];
			s.p++;
			if (read_string(&s, val))
				return -1;
			struct { const char *name; char *dst; size_t len; } want[] = {
				{ "type", f->type, sizeof(f->type) },
				{ "file", f->file, sizeof(f->file) },
				{ "kind", f->kind, sizeof(f->kind) },
				{ "symbol", f->symbol, sizeof(f->symbol) },
				{ "offset", f->offset, sizeof(f->offset) },
				{ "detail", f->detail, sizeof(f->detail) },
			};
			for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
				if (!strcmp(key, want[i].name))
					snprintf(want[i].dst, want[i].len, "%s", val);
			if (!strcmp(key, "symbol"))
				f->has_symbol = true;
		} else if (skip_value(&s)) {
			return -1;
		}
		skip_ws(&s);
		if (s.p < s.end && *s.p == ',') {
			s.p++;
			continue;
		}
		if (s.p < s.end && *s.p == '}')
			return 0;
		return -1;
	}
}

int gate_load_baseline(const char *path, char *why, size_t whylen)
{
	FILE *fp = fopen(path, "re");
	if (!fp) {
		snprintf(why, whylen, "%s", strerror(errno));
		return -1;
	}
	char *line = NULL;
	size_t cap = 0, lineno = 0;
	ssize_t len;
	int rc = 0;
	struct finding_fields *f = malloc(sizeof(*f));
	if (!f) {
		fclose(fp);
		snprintf(why, whylen, "out of memory");
		return -1;
	}
	while ((len = getline(&line, &cap, fp)) >= 0) {
		lineno++;
		const char *p = line, *end = line + len;
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
			p++;
		if (p == end)
			continue;
		if (parse_line(p, end, f)) {
			snprintf(why, whylen, "line %zu: not a JSON object as check --json writes",
				 lineno);
			rc = -1;
			break;
		}
		if (strcmp(f->type, "finding") || !f->kind[0])
			continue;
		char *k = make_key(f->file, f->kind, f->has_symbol ? f->symbol : NULL, f->offset,
				   f->detail);
		if (!k || (nkeys == capkeys &&
			   !(keys = realloc(keys, (capkeys = capkeys ? capkeys * 2 : 64) *
							  sizeof(*keys))))) {
			free(k);
			snprintf(why, whylen, "out of memory");
			rc = -1;
			break;
		}
		keys[nkeys++] = k;
	}
	free(line);
	free(f);
	fclose(fp);
	if (nkeys > 1)
		qsort(keys, nkeys, sizeof(*keys), cmp_key);
	return rc;
}

enum gate_why gate_check(const char *file, const char *kind, const char *symbol, uint64_t sym_off,
			 const char *detail)
{
	for (size_t i = 0; i < nsup; i++)
		if (!strcmp(sup[i].kind, kind) &&
		    (!sup[i].symbol || (symbol && !strcmp(sup[i].symbol, symbol))))
			return GATE_SUPPRESSED;
	if (!nkeys)
		return GATE_NONE;
	char off[32];
	snprintf(off, sizeof(off), "0x%" PRIx64, sym_off);
	char *k = make_key(file, kind, symbol, off, detail);
	if (!k)
		return GATE_NONE;
	bool found = bsearch(&k, keys, nkeys, sizeof(*keys), cmp_key) != NULL;
	free(k);
	return found ? GATE_BASELINE : GATE_NONE;
}

bool gate_active(void)
{
	return nsup || nkeys;
}

void gate_free(void)
{
	for (size_t i = 0; i < nkeys; i++)
		free(keys[i]);
	free(keys);
	keys = NULL;
	nkeys = capkeys = 0;
	nsup = 0;
}

const char *gate_why_name(enum gate_why why)
{
	return why == GATE_BASELINE ? "baseline" : why == GATE_SUPPRESSED ? "suppressed" : "";
}
