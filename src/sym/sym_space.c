/* bk_space_symbolize: symbols for a runtime address of an address space.
 *
 * The module holding the address comes from the space (its module array, or
 * the dynamic linker for a local space); its symbols are opened on first use
 * and kept in a small table hung off the space (sym_state), keyed by path
 * and load bias, freed with the space. Opening reads the symbol tables and
 * the unit index only; each lookup reads the DWARF of the compile unit it
 * lands in, once (src/sym/sym.h). Cold: both allocate and read the file;
 * never call it from a signal handler or on an unwind path. Calls on one
 * space must not overlap (the table is not locked).
 */
#include <stdio.h>
#include <unistd.h>

#include "sym.h"

#include "../target/target.h"
#include "../unwind/unwind.h"

struct sym_entry {
	char *path;
	int64_t bias;
	struct sym_file *file; /* NULL: opening failed, do not retry */
};

struct sym_state {
	struct sym_entry *e;
	size_t n, cap;
};

static void state_free(void *p)
{
	struct sym_state *st = p;
	for (size_t i = 0; i < st->n; i++) {
		sym_close(st->e[i].file);
		base_free(st->e[i].path);
	}
	base_free(st->e);
	base_free(st);
}

static struct sym_file *file_for(struct bk_space *s, const char *path, int64_t bias)
{
	struct sym_state *st = s->sym_state;
	if (!st) {
		st = base_calloc(1, sizeof(*st));
		if (!st)
			return NULL;
		s->sym_state = st;
		s->sym_state_free = state_free;
	}
	for (size_t i = 0; i < st->n; i++)
		if (st->e[i].bias == bias && strcmp(st->e[i].path, path) == 0)
			return st->e[i].file;
	if (st->n == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 16;
		void *p = base_realloc(st->e, ncap * sizeof(*st->e));
		if (!p)
			return NULL;
		st->e = p;
		st->cap = ncap;
	}
	size_t len = strlen(path) + 1;
	char *copy = base_alloc(len);
	if (!copy)
		return NULL;
	memcpy(copy, path, len);
	struct sym_file *f = NULL;
	if (sym_open(path, NULL, &f) != 0)
		f = NULL;
	st->e[st->n++] = (struct sym_entry){ copy, bias, f };
	return f;
}

int bk_space_symbolize(struct bk_space *s, uint64_t addr, struct bk_symbol *out, int max)
{
	if (!s || !out || max < 1)
		return BK_E_INVAL;
	struct uw_module tmp;
	struct cfi_table tmp_table;
	uint64_t tag;
	const struct uw_module *m = s->local ? uw_local_find(s, addr, &tmp, &tmp_table, &tag)
					     : uw_space_find(s, addr);
	if (!m)
		return 0;
	/* The file the module's tables were read from: for a deleted file of
	 * a live process that is /proc/PID/map_files/..., still readable. */
	const char *path = m->elf && m->elf->ldr->path ? m->elf->ldr->path : m->path;
	int64_t bias = m->bias;
	char exe[4096];
	if (s->local) {
		/* The dynamic linker names the main program ""; its runtime and
		 * link-time addresses differ by l_addr, not by the tables' base. */
		struct tgt_local_object obj;
		if (tgt_local_find_object(addr, &obj) != 0)
			return 0;
		bias = (int64_t)obj.bias;
		if (!path[0]) {
			ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
			if (n <= 0)
				return 0;
			exe[n] = 0;
			path = exe;
		}
	}
	if (!path[0] || path[0] == '[')
		return 0; /* the vDSO and anonymous code: no file */
	struct sym_file *f = file_for(s, path, bias);
	if (!f)
		return 0;
	struct sym_frame frames[16];
	int n = sym_lookup(f, addr - (uint64_t)bias, frames, max < 16 ? max : 16);
	for (int i = 0; i < n; i++) {
		out[i].function = frames[i].function ? frames[i].function : frames[i].symbol;
		out[i].offset = frames[i].offset;
		out[i].file = frames[i].file;
		out[i].line = frames[i].line;
		out[i].column = frames[i].column;
		out[i].inlined = frames[i].inlined;
	}
	return n;
}
