/* Distinct stacks and their counts (fold.h): two open-addressing hash
 * tables, one of names (text in one growing pool) and one of stacks (name
 * id lists in another). */
#include <stdlib.h>
#include <string.h>

#include "fold.h"

#include "../src/base/base.h"

struct fname {
	uint64_t hash;
	size_t off;      /* in text */
	uint32_t len;
};

struct fentry {
	uint64_t hash;
	size_t off;      /* in ids */
	uint32_t n;
	uint64_t count;
};

struct fold {
	char *text;
	size_t ntext, captext;
	struct fname *names;
	size_t nnames, capnames;
	uint32_t *name_tab; /* name id + 1; 0: empty */
	size_t name_tabcap;
	uint32_t *ids;
	size_t nids, capids;
	struct fentry *stacks;
	size_t nstacks, capstacks;
	uint32_t *stack_tab; /* stack index + 1 */
	size_t stack_tabcap;
	struct fold_stack *sorted;
	bool failed;
};

struct fold *fold_new(void)
{
	return calloc(1, sizeof(struct fold));
}

void fold_free(struct fold *f)
{
	if (!f)
		return;
	free(f->text);
	free(f->names);
	free(f->name_tab);
	free(f->ids);
	free(f->stacks);
	free(f->stack_tab);
	free(f->sorted);
	free(f);
}

bool fold_failed(const struct fold *f)
{
	return f->failed;
}

/* *P grown to hold NEED elements of SIZE: false when memory ran out. */
static bool grow(struct fold *f, void **p, size_t *cap, size_t need, size_t size)
{
	void *q = base_grow(*p, cap, need, size, 256);
	if (!q) {
		f->failed = true;
		return false;
	}
	*p = q;
	return true;
}

static uint64_t hash_bytes(uint64_t h, const void *p, size_t len)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < len; i++)
		h = (h ^ s[i]) * 1099511628211ull;
	return h;
}

/* A table of COUNT entries twice as large, from the hashes HASH_OF(i). */
static uint32_t *rehash(struct fold *f, size_t *tabcap, size_t count,
			uint64_t (*hash_of)(const struct fold *, size_t))
{
	size_t cap = *tabcap ? *tabcap * 2 : 1024;
	uint32_t *t = calloc(cap, sizeof(*t));
	if (!t) {
		f->failed = true;
		return NULL;
	}
	for (size_t i = 0; i < count; i++) {
		size_t j = hash_of(f, i) & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = (uint32_t)i + 1;
	}
	*tabcap = cap;
	return t;
}

static uint64_t name_hash(const struct fold *f, size_t i)
{
	return f->names[i].hash;
}

static uint64_t stack_hash(const struct fold *f, size_t i)
{
	return f->stacks[i].hash;
}

uint32_t fold_name(struct fold *f, const char *text, size_t len)
{
	if ((f->nnames + 1) * 2 > f->name_tabcap) {
		uint32_t *t = rehash(f, &f->name_tabcap, f->nnames, name_hash);
		if (!t)
			return UINT32_MAX;
		free(f->name_tab);
		f->name_tab = t;
	}
	uint64_t h = hash_bytes(1469598103934665603ull, text, len);
	size_t j = h & (f->name_tabcap - 1);
	for (; f->name_tab[j]; j = (j + 1) & (f->name_tabcap - 1)) {
		const struct fname *n = &f->names[f->name_tab[j] - 1];
		if (n->hash == h && n->len == len && !memcmp(f->text + n->off, text, len))
			return f->name_tab[j] - 1;
	}
	if (len > UINT32_MAX || f->nnames >= UINT32_MAX - 1 ||
	    !grow(f, (void **)&f->names, &f->capnames, f->nnames + 1, sizeof(*f->names)) ||
	    !grow(f, (void **)&f->text, &f->captext, f->ntext + len + 1, 1))
		return UINT32_MAX;
	memcpy(f->text + f->ntext, text, len);
	f->text[f->ntext + len] = 0;
	f->names[f->nnames] = (struct fname){ h, f->ntext, (uint32_t)len };
	f->ntext += len + 1;
	f->name_tab[j] = (uint32_t)++f->nnames;
	return (uint32_t)f->nnames - 1;
}

const char *fold_name_text(const struct fold *f, uint32_t id, size_t *len)
{
	if (id >= f->nnames) {
		*len = 0;
		return "";
	}
	*len = f->names[id].len;
	return f->text + f->names[id].off;
}

bool fold_add(struct fold *f, const uint32_t *names, size_t n, uint64_t count)
{
	for (size_t i = 0; i < n; i++)
		if (names[i] >= f->nnames) { /* a failed fold_name */
			f->failed = true;
			return false;
		}
	if ((f->nstacks + 1) * 2 > f->stack_tabcap) {
		uint32_t *t = rehash(f, &f->stack_tabcap, f->nstacks, stack_hash);
		if (!t)
			return false;
		free(f->stack_tab);
		f->stack_tab = t;
	}
	uint64_t h = hash_bytes(1469598103934665603ull, names, n * sizeof(*names));
	size_t j = h & (f->stack_tabcap - 1);
	for (; f->stack_tab[j]; j = (j + 1) & (f->stack_tabcap - 1)) {
		struct fentry *e = &f->stacks[f->stack_tab[j] - 1];
		if (e->hash == h && e->n == n && !memcmp(f->ids + e->off, names, n * sizeof(*names))) {
			e->count += count;
			return true;
		}
	}
	if (n > UINT32_MAX || f->nstacks >= UINT32_MAX - 1 ||
	    !grow(f, (void **)&f->stacks, &f->capstacks, f->nstacks + 1, sizeof(*f->stacks)) ||
	    !grow(f, (void **)&f->ids, &f->capids, f->nids + n, sizeof(*f->ids)))
		return false;
	memcpy(f->ids + f->nids, names, n * sizeof(*names));
	f->stacks[f->nstacks] = (struct fentry){ h, f->nids, (uint32_t)n, count };
	f->nids += n;
	f->stack_tab[j] = (uint32_t)++f->nstacks;
	return true;
}

/* qsort has no context argument: the fold being sorted. */
static const struct fold *sorting;

static int name_cmp(uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	const struct fname *x = &sorting->names[a], *y = &sorting->names[b];
	int c = memcmp(sorting->text + x->off, sorting->text + y->off, x->len < y->len ? x->len : y->len);
	return c ? c : x->len < y->len ? -1 : x->len > y->len;
}

static int stack_cmp(const void *a, const void *b)
{
	const struct fold_stack *x = a, *y = b;
	for (uint32_t i = 0; i < x->n && i < y->n; i++) {
		int c = name_cmp(x->names[i], y->names[i]);
		if (c)
			return c;
	}
	return x->n < y->n ? -1 : x->n > y->n;
}

size_t fold_sorted(struct fold *f, const struct fold_stack **stacks)
{
	free(f->sorted);
	f->sorted = f->nstacks ? malloc(f->nstacks * sizeof(*f->sorted)) : NULL;
	if (!f->sorted) {
		if (f->nstacks)
			f->failed = true;
		*stacks = NULL;
		return 0;
	}
	for (size_t i = 0; i < f->nstacks; i++)
		f->sorted[i] = (struct fold_stack){ f->ids + f->stacks[i].off, f->stacks[i].n,
						    f->stacks[i].count };
	sorting = f;
	qsort(f->sorted, f->nstacks, sizeof(*f->sorted), stack_cmp);
	sorting = NULL;
	*stacks = f->sorted;
	return f->nstacks;
}
