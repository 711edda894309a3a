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

/* Where PATH is or would go in FS (under the lock); *FOUND when there. */
static size_t find(const struct sym_files *fs, const char *path, bool *found)
{
	size_t lo = 0, hi = fs->n;
	*found = false;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(fs->e[mid].path, path);
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* F (may be NULL) as PATH's at AT (under the lock); false when memory ran
 * out (F is then not kept). */
static bool insert(struct sym_files *fs, size_t at, const char *path, struct sym_file *f)
{
	struct sym_files_entry *e = base_grow(fs->e, &fs->cap, fs->n + 1, sizeof(*e), 16);
	char *copy = e ? base_strdup(path) : NULL;
	if (!copy)
		return false;
	fs->e = e;
	memmove(&e[at + 1], &e[at], (fs->n - at) * sizeof(*e));
	e[at] = (struct sym_files_entry){ copy, f };
	fs->n++;
	return true;
}

/* Opening happens under the lock: a second thread asking for the same
 * path waits for the first open rather than making its own, and opening
 * is rare (once per file) next to lookups, which do not take this lock. */
struct sym_file *sym_files_get(struct sym_files *fs, const char *path)
{
	pthread_mutex_lock(&fs->lock);
	bool found;
	size_t at = find(fs, path, &found);
	struct sym_file *f = NULL;
	if (found) {
		f = fs->e[at].file;
	} else if (path[0] != '[') { /* "[vdso]" and the like: only as added */
		if (sym_open(path, NULL, &f) != 0)
			f = NULL;
		if (!insert(fs, at, path, f)) { /* not kept: nothing else may hold F */
			sym_close(f);
			f = NULL;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return f;
}

int sym_files_add_image(struct sym_files *fs, const char *name, const void *image, size_t len,
			int64_t bias)
{
	pthread_mutex_lock(&fs->lock);
	bool found;
	size_t at = find(fs, name, &found);
	int err = 0;
	if (!found) {
		struct sym_file *f = NULL;
		err = sym_open_memory(image, len, bias, &f);
		if (!err && !insert(fs, at, name, f)) {
			sym_close(f);
			err = BK_E_NOMEM;
		}
	}
	pthread_mutex_unlock(&fs->lock);
	return err;
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
