/* sym_files: one sym_file per path, shared (sym.h). And sym_describe, the
 * one translation of a lookup into public bk_symbol entries. */
#include <stdlib.h>

#include "sym.h"

struct sym_files_entry {
	char *path;
	struct sym_file *file; /* NULL: opening failed */
};

struct sym_files {
	pthread_mutex_t lock;
	struct sym_files_entry *e; /* sorted by path */
	size_t n, cap;
};

struct sym_files *sym_files_new(void)
{
	struct sym_files *fs = base_calloc(1, sizeof(*fs));
	if (fs && pthread_mutex_init(&fs->lock, NULL) != 0) {
		base_free(fs);
		return NULL;
	}
	return fs;
}

void sym_files_free(struct sym_files *fs)
{
	if (!fs)
		return;
	for (size_t i = 0; i < fs->n; i++) {
		sym_close(fs->e[i].file);
		base_free(fs->e[i].path);
	}
	base_free(fs->e);
	pthread_mutex_destroy(&fs->lock);
	base_free(fs);
}

/* Opening happens under the lock: a second thread asking for the same
 * path waits for the first open rather than making its own, and opening
 * is rare (once per file) next to lookups, which do not take this lock. */
struct sym_file *sym_files_get(struct sym_files *fs, const char *path)
{
	pthread_mutex_lock(&fs->lock);
	size_t lo = 0, hi = fs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(fs->e[mid].path, path);
		if (c == 0) {
			struct sym_file *f = fs->e[mid].file;
			pthread_mutex_unlock(&fs->lock);
			return f;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct sym_file *f = NULL;
	if (sym_open(path, NULL, &f) != 0)
		f = NULL;
	struct sym_files_entry *e = base_grow(fs->e, &fs->cap, fs->n + 1, sizeof(*e), 16);
	char *copy = e ? base_strdup(path) : NULL;
	if (!copy) { /* not kept: nothing else may hold F */
		pthread_mutex_unlock(&fs->lock);
		sym_close(f);
		return NULL;
	}
	fs->e = e;
	memmove(&e[lo + 1], &e[lo], (fs->n - lo) * sizeof(*e));
	e[lo] = (struct sym_files_entry){ copy, f };
	fs->n++;
	pthread_mutex_unlock(&fs->lock);
	return f;
}

int sym_describe(struct sym_file *f, uint64_t link, struct bk_symbol *out, int max)
{
	struct sym_frame frames[16];
	if (max > 16)
		max = 16;
	int n = sym_lookup(f, link, frames, max);
	for (int i = 0; i < n; i++)
		out[i] = (struct bk_symbol){
			.function = frames[i].function ? frames[i].function : frames[i].symbol,
			.offset = frames[i].offset,
			.file = frames[i].file,
			.line = frames[i].line,
			.column = frames[i].column,
			.inlined = frames[i].inlined,
		};
	return n;
}
