/* bk_space_symbolize: symbols for a runtime address of an address space.
 *
 * The module holding the address comes from the space (its module array, or
 * the dynamic linker for a local space); its symbols are opened on first use
 * and kept with the space (sym_state): files by path (sym_files: a file
 * mapped at two biases is opened once), memos and images read from memory
 * by path and load bias; freed with the space. Opening reads the symbol tables and
 * the unit index only; each lookup reads the DWARF of the compile unit it
 * lands in, once (src/sym/sym.h). Cold: both allocate and read the file;
 * never call it from a signal handler or on an unwind path. Calls on one
 * space must not overlap (the table is not locked).
 */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sym.h"

#include "../target/target.h"
#include "../unwind/unwind.h"

struct sym_entry {
	char *path;
	int64_t bias;
	bool opened, memo_tried;
	struct sym_file *image; /* read from memory (owned); NULL: not, or failed */
	struct sym_memo *memo;  /* NULL: no memo for this file */
};

struct sym_state {
	struct sym_entry *e;
	size_t n, cap;
	struct sym_files *files;
	char *cache_dir;       /* bk_space_set_symbol_cache; NULL: no memo */
	struct sym_perfmap *perfmap; /* bk_space_set_perf_map: JIT code's names */
};

static void state_free(void *p)
{
	struct sym_state *st = p;
	for (size_t i = 0; i < st->n; i++) {
		sym_memo_close(st->e[i].memo); /* before the file its strings are in */
		sym_close(st->e[i].image);
		base_free(st->e[i].path);
	}
	base_free(st->e);
	sym_files_free(st->files);
	base_free(st->cache_dir);
	sym_perfmap_close(st->perfmap);
	base_free(st);
}

static struct sym_state *state_of(struct bk_space *s)
{
	if (!s->sym_state) {
		struct sym_state *st = base_calloc(1, sizeof(*st));
		if (!st || !(st->files = sym_files_new())) {
			base_free(st);
			return NULL;
		}
		s->sym_state = st;
		s->sym_state_free = state_free;
	}
	return s->sym_state;
}

int bk_space_set_symbol_cache(struct bk_space *s, const char *dir)
{
	if (!s)
		return BK_E_INVAL;
	struct sym_state *st = state_of(s);
	if (!st)
		return BK_E_NOMEM;
	char *copy = NULL;
	if (dir && dir[0] && !(copy = base_strdup(dir)))
		return BK_E_NOMEM;
	base_free(st->cache_dir);
	st->cache_dir = copy;
	return 0;
}

int bk_space_set_perf_map(struct bk_space *s, const char *path)
{
	if (!s)
		return BK_E_INVAL;
	struct sym_state *st = state_of(s);
	if (!st)
		return BK_E_NOMEM;
	struct sym_perfmap *m = NULL;
	if (path) {
		int err = sym_perfmap_open(path, &m);
		if (err)
			return err;
	}
	sym_perfmap_close(st->perfmap);
	st->perfmap = m;
	return 0;
}

/* Code outside every file (JIT code): its name and line from a jitdump
 * (bk_space_add_jitdump), else its name from the perf map, if any. */
static int jit_name(struct bk_space *s, uint64_t addr, struct bk_symbol *out)
{
	struct uw_jd_symbol j;
	if (uw_jitdump_symbol(s, addr, &j)) {
		*out = (struct bk_symbol){ .function = j.name, .offset = addr - j.start,
					   .file = j.file, .line = j.line, .column = j.column };
		return 1;
	}
	struct sym_state *st = s->sym_state;
	return st ? sym_perfmap_lookup(st->perfmap, addr, out) : 0;
}

static struct sym_entry *entry_for(struct bk_space *s, const char *path, int64_t bias)
{
	struct sym_state *st = state_of(s);
	if (!st)
		return NULL;
	for (size_t i = 0; i < st->n; i++)
		if (st->e[i].bias == bias && strcmp(st->e[i].path, path) == 0)
			return &st->e[i];
	if (st->n == st->cap) {
		size_t ncap = st->cap ? st->cap * 2 : 16;
		void *p = base_realloc(st->e, ncap * sizeof(*st->e));
		if (!p)
			return NULL;
		st->e = p;
		st->cap = ncap;
	}
	char *copy = base_strdup(path);
	if (!copy)
		return NULL;
	st->e[st->n] = (struct sym_entry){ .path = copy, .bias = bias };
	return &st->e[st->n++];
}

/* E's symbols: from its file, or (FROM_MEMORY) from the image the unwinder
 * read of module M. */
static struct sym_file *file_of(struct sym_state *st, struct sym_entry *e,
				const struct uw_module *m, bool from_memory)
{
	if (!from_memory)
		return sym_files_get(st->files, e->path);
	if (!e->opened) {
		e->opened = true;
		const uint8_t *bytes;
		size_t len;
		ldr_bytes(m->elf->ldr, &bytes, &len);
		if (sym_open_memory(bytes, len, m->bias, &e->image) != 0)
			e->image = NULL;
	}
	return e->image;
}

/* " dev:ino:size:mtime" of PATH, appended to SIG; "-" when it cannot be
 * stat'ed. */
static void add_identity(char *sig, size_t len, const char *path)
{
	struct stat st;
	size_t k = strlen(sig);
	if (path && stat(path, &st) == 0)
		snprintf(sig + k, len - k, " %llx:%llx:%llx:%lld.%09ld", (unsigned long long)st.st_dev,
			 (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
			 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	else
		snprintf(sig + k, len - k, " -");
}

/* The memo of module M's file at PATH, when the space keeps one. */
static struct sym_memo *memo_of(struct bk_space *s, struct sym_entry *e, const struct uw_module *m,
				const char *path)
{
	struct sym_state *st = s->sym_state;
	if (e->memo_tried || !st || !st->cache_dir)
		return e->memo;
	e->memo_tried = true;
	const struct ldr_elf *l = m->elf ? m->elf->ldr : NULL;
	if (!l || !l->build_id_len || !l->path)
		return NULL; /* a memory image: no file to name the inputs by */
	char sig[256] = "";
	add_identity(sig, sizeof(sig), path);
	add_identity(sig, sizeof(sig), m->debug ? m->debug->ldr->path : NULL);
	e->memo = sym_memo_open(st->cache_dir, l->build_id, l->build_id_len, sig);
	return e->memo;
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
		return jit_name(s, addr, out);
	/* The file the module's tables were read from: for a deleted file of
	 * a live process that is /proc/PID/map_files/..., still readable. A
	 * module of another process without one was known by name only: its
	 * file could not be read, or is not the one that was mapped (a core's
	 * build-id says so), and its symbols would be that other file's. */
	if (!s->local && !m->elf)
		return 0;
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
	/* The vDSO, and a library whose file is gone, were read from the
	 * target's memory: their symbols come from there too (the vDSO keeps
	 * its section headers; a library's image has its dynamic segment). */
	bool from_memory = !s->local && m->elf && !m->elf->ldr->path;
	if (!path[0] || (path[0] == '[' && !from_memory))
		return jit_name(s, addr, out); /* anonymous code: no file */
	struct sym_entry *e = entry_for(s, path, bias);
	if (!e)
		return 0;
	uint64_t link = addr - (uint64_t)bias;
	struct sym_memo *memo = s->local ? NULL : memo_of(s, e, m, path);
	int n = sym_memo_get(memo, link, out, max);
	if (n >= 0)
		return n;
	struct sym_file *f = file_of(s->sym_state, e, m, from_memory);
	if (!f)
		return 0;
	/* The whole answer (for the memo), then what the caller has room for. */
	struct bk_symbol all[16];
	n = sym_describe(f, link, all, 16);
	if (n >= 0)
		sym_memo_put(memo, link, all, n);
	n = n < max ? n : max;
	memcpy(out, all, (size_t)(n > 0 ? n : 0) * sizeof(*out));
	return n;
}
