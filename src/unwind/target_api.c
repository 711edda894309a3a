/* struct bk_target: a target from src/target (threads, registers, memory,
 * mappings) composed with an address space whose modules come from the
 * target's memory map. Cold throughout. One composition for a live process
 * (bk_target_attach) and a core file (bk_target_open_core).
 *
 * Modules from a map: consecutive mappings of one file make one module,
 * from its first mapping's start to its last one's end; the file's lowest
 * PT_LOAD sits at (first start - first offset). The file is opened by path,
 * or, for a live process, through /proc/PID/map_files when the path is gone
 * (deleted, another mount namespace). A file the target marks as not the
 * one that was mapped (a core whose build-id differs) is not opened. The
 * vDSO has no file: its image is read from the target's memory. Only
 * modules with an executable mapping are kept; a module whose file cannot
 * be used is kept by name, and the reason becomes one of the target's
 * problem lines.
 *
 * A live target can be kept across many walks while the process runs in
 * between (the validator): uw_target_refresh re-reads the map and adds only
 * the modules that are new, uw_target_invalidate drops the cached memory.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>

#include "unwind.h"

#include "../target/target.h"

#define MAX_PROBLEMS 1000

struct bk_target {
	struct tgt *tgt;
	struct bk_space *space;
	char **problems;
	size_t nproblems;
};

/* Record one problem line (advisory: dropped when out of memory, repeated
 * lines kept once). */
__attribute__((format(printf, 2, 3)))
static void add_problem(struct bk_target *bt, const char *fmt, ...)
{
	char line[4096 + 128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < bt->nproblems; i++)
		if (strcmp(bt->problems[i], line) == 0)
			return;
	if (bt->nproblems >= MAX_PROBLEMS)
		return;
	void *a = base_realloc(bt->problems, (bt->nproblems + 1) * sizeof(*bt->problems));
	if (!a)
		return;
	bt->problems = a;
	size_t n = strlen(line) + 1;
	char *d = base_alloc(n);
	if (!d)
		return;
	memcpy(d, line, n);
	bt->problems[bt->nproblems++] = d;
}

/* The module mapped from START to END (one file, or the vDSO) as its image
 * in the target's memory. Pages the target lacks (gaps between segments,
 * what a core left out: the kernel keeps only the header page by default,
 * gcore leaves out code it can read from the file) read as zeros; the first
 * page, with the headers, and every byte of the unwind tables must be there
 * (ldr_open_loaded checks). */
static struct bk_elf *open_image_from_memory(struct tgt *t, uint64_t start, uint64_t end)
{
	enum { PAGE = 4096 };
	size_t len = (size_t)(end - start);
	if (len < 64 || len > (64u << 20))
		return NULL;
	uint8_t *img = base_alloc(len);
	bool *absent = base_calloc(len / PAGE + 1, sizeof(bool));
	struct bk_elf *elf = NULL;
	bool ok = img && absent;
	for (size_t off = 0; ok && off < len; off += PAGE) {
		size_t n = len - off < PAGE ? len - off : PAGE;
		if (tgt_read_mem(t, start + off, img + off, n) != 0) {
			if (off == 0)
				ok = false;
			absent[off / PAGE] = true;
			memset(img + off, 0, n);
		}
	}
	struct ldr_elf *ldr;
	if (ok && ldr_open_loaded(img, len, absent, PAGE, &ldr) == 0 && uw_elf_wrap(ldr, &elf) != 0)
		elf = NULL;
	base_free(absent);
	base_free(img);
	return elf;
}

static struct bk_elf *open_mapped_file(struct tgt *t, const struct tgt_mapping *m, int *err)
{
	struct bk_elf *elf = NULL;
	*err = bk_elf_open(m->path, &elf);
	if (*err == 0)
		return elf;
	if (t->pid > 0) {
		char alt[96];
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%llx-%llx", t->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		if (bk_elf_open(alt, &elf) == 0)
			return elf;
	}
	return NULL;
}

/* Why PATH could not be used (ERR from the loader). */
static void file_problem(struct bk_target *bt, const char *path, int err)
{
	struct stat st;
	if (stat(path, &st) != 0)
		add_problem(bt, "%s: %s", path, errno == ENOENT ? "file not found" : strerror(errno));
	else if (err == BK_E_IO)
		add_problem(bt, "%s: cannot read file", path);
	else
		add_problem(bt, "%s: cannot be used: %s", path, bk_strerror(err));
}

/* The jitdump M maps: its code's names, lines and .eh_frame sections for
 * the space (bk_space_add_jitdump), read now, while the target is
 * stopped; through /proc/PID/map_files when the path does not open. */
static void add_jitdump(struct bk_target *bt, const struct tgt_mapping *m, size_t *added)
{
	/* Named by its path, " (deleted)" left out. */
	char name[4096];
	size_t len = strlen(m->path);
	static const char deleted[] = " (deleted)";
	if (len >= sizeof(deleted) - 1 && !strcmp(m->path + len - (sizeof(deleted) - 1), deleted))
		len -= sizeof(deleted) - 1;
	snprintf(name, sizeof(name), "%.*s", (int)len, m->path);
	struct bk_jitdump_stats st = { .size = sizeof(st) };
	bool reread = false;
	int err = uw_jitdump_add(bt->space, m->path, name, UINT64_MAX, &st, &reread);
	if (err == BK_E_IO && bt->tgt->pid > 0) {
		char alt[96];
		snprintf(alt, sizeof(alt), "/proc/%d/map_files/%llx-%llx", bt->tgt->pid,
			 (unsigned long long)m->start, (unsigned long long)m->end);
		err = uw_jitdump_add(bt->space, alt, name, UINT64_MAX, &st, &reread);
	}
	/* New code described: the caller's "modules added" (a validator sets
	 * its entry breakpoints again). */
	if (reread && added)
		++*added;
	if (err)
		add_problem(bt, "%s: jitdump not used: %s", name,
			    err == BK_E_IO ? "cannot read it" : bk_strerror(err));
	else if (st.unwinding_failed)
		add_problem(bt, "%s: jitdump: %u of %u .eh_frame sections not used (%s)", name,
			    st.unwinding_failed, st.unwinding_info, bk_strerror(st.first_error));
	else if (st.first_error)
		add_problem(bt, "%s: jitdump read up to a record that does not hold together (%s)",
			    name, bk_strerror(st.first_error));
}

/* Group the map into modules and add them to the space. With ONLY_NEW, a
 * module the space already has (same start, same path) is kept as it is;
 * *ADDED (may be NULL) counts the modules added. */
static int add_modules(struct bk_target *bt, bool only_new, size_t *added)
{
	struct bk_space *s = bt->space;
	struct tgt *t = bt->tgt;
	size_t i = 0;
	while (i < t->nmaps) {
		const struct tgt_mapping *first = &t->maps[i];
		size_t j = i + 1;
		bool exec = first->x;
		/* One image's mappings: the same path, and no second start of
		 * the file (offset 0 again is another image of it, or a
		 * reader's map of the whole file: the in-process validator
		 * maps the files it reads inside the process it checks, next
		 * to their images, where it must not move their start). */
		while (j < t->nmaps && first->path[0] && strcmp(t->maps[j].path, first->path) == 0 &&
		       t->maps[j].offset != 0) {
			exec |= t->maps[j].x;
			j++;
		}
		const struct tgt_mapping *last = &t->maps[j - 1];
		/* A path ("/usr/lib/...", or a core's EXE as the user gave it), not
		 * "[vdso]", "[stack]" or anonymous. */
		bool is_file = first->path[0] && first->path[0] != '[';
		/* (Mapped executable by the JIT, for perf; a core may not say
		 * how it was mapped.) */
		if (is_file && ldr_jitdump_name(first->path, true)) {
			add_jitdump(bt, first, added);
			i = j;
			continue;
		}
		bool is_vdso = strcmp(first->path, "[vdso]") == 0;
		if (exec && (is_file || is_vdso) && only_new) {
			const struct uw_module *have = uw_space_find(s, first->start);
			if (have && have->start == first->start && !strcmp(have->path, first->path))
				exec = false;
		}
		if (exec && (is_file || is_vdso)) {
			struct bk_elf *elf = NULL;
			int oerr = 0;
			if (is_vdso)
				elf = open_image_from_memory(t, first->start, last->end);
			else if (t->map_check && t->map_check[i] == TGT_FILE_DIFFERS) {
				/* Not the file that was mapped: its image, if the core
				 * kept all of it (gcore does), is. */
				if (first->offset == 0)
					elf = open_image_from_memory(t, first->start, last->end);
				add_problem(bt, "%s: build-id differs from the core's; %s", first->path,
					    elf ? "using its image in memory" : "not used");
			} else if (!(elf = open_mapped_file(t, first, &oerr))) {
				/* A deleted or missing file: its image may still be in
				 * the target's memory (gcore keeps the pages of deleted
				 * libraries); its unwind tables are then read there. */
				if (first->offset == 0) /* the image starts at the headers */
					elf = open_image_from_memory(t, first->start, last->end);
				if (elf)
					add_problem(bt, "%s: file not found; using its image in memory",
						    first->path);
				else
					file_problem(bt, first->path, oerr);
			}
			if (elf && elf->ldr->unknown_compression)
				add_problem(bt, "%s: %u unwind section%s compressed by a method backstep "
					    "does not know (neither zlib nor zstd): not used", first->path,
					    elf->ldr->unknown_compression,
					    elf->ldr->unknown_compression == 1 ? "" : "s");
			/* A file mapped from offset 0 has its ELF header there. */
			uint64_t base = first->start - first->offset;
			int err = uw_space_add(s, first->start, last->end, base, first->path, elf);
			if (err)
				return err;
			if (added)
				++*added;
		}
		i = j;
	}
	return 0;
}

/* The space over BT->tgt and its modules. */
static int compose(struct bk_target *bt)
{
	static const struct bk_target_ops ops = { sizeof(ops), tgt_read_mem };
	int err = bk_space_create(bt->tgt->arch->arch, &ops, bt->tgt, &bt->space);
	if (!err) {
		bt->space->pac_mask = bt->tgt->pac_mask;
		err = add_modules(bt, false, NULL);
	}
	return err;
}

int bk_target_attach(int pid, struct bk_target **out)
{
	if (!out)
		return BK_E_INVAL;
	struct bk_target *bt = base_calloc(1, sizeof(*bt));
	if (!bt)
		return BK_E_NOMEM;
	int err = tgt_ptrace_attach(pid, &bt->tgt);
	if (!err)
		err = compose(bt);
	if (err) {
		bk_target_close(bt);
		return err;
	}
	*out = bt;
	return 0;
}

int uw_target_adopt(int pid, const int *tids, size_t n, struct bk_target **out)
{
	if (!out)
		return BK_E_INVAL;
	struct bk_target *bt = base_calloc(1, sizeof(*bt));
	if (!bt)
		return BK_E_NOMEM;
	int err = tgt_ptrace_adopt(pid, tids, n, &bt->tgt);
	if (!err)
		err = compose(bt);
	if (err) {
		bk_target_close(bt);
		return err;
	}
	*out = bt;
	return 0;
}

int uw_target_refresh(struct bk_target *bt, size_t *added)
{
	*added = 0;
	if (!bt->tgt->pid)
		return 0;
	tgt_invalidate(bt->tgt, true); /* cached blocks may be of the old map */
	tgt_free_maps(bt->tgt);
	int err = tgt_read_maps(bt->tgt);
	if (!err)
		err = add_modules(bt, true, added);
	return err;
}

void uw_target_invalidate(struct bk_target *bt)
{
	tgt_invalidate(bt->tgt, false);
}

/* A core's file gone from disk, from debuginfod (when the program carries
 * ldr_debuginfod.c and DEBUGINFOD_URLS names servers). */
static int fetch_executable(const uint8_t *build_id, size_t len, char **path)
{
	return ldr_debuginfod_fetch ? ldr_debuginfod_fetch(build_id, len, true, path)
				    : BK_E_NOT_FOUND;
}

int bk_target_open_core(const char *core, const char *exe, struct bk_target **out)
{
	struct bk_core_options o = { .size = sizeof(o), .exe = exe };
	return bk_target_open_core_opts(core, &o, out);
}

int bk_target_open_core_opts(const char *core, const struct bk_core_options *opts,
			     struct bk_target **out)
{
	if (!out || !core || !opts || opts->size < offsetof(struct bk_core_options, sysroot) +
							  sizeof(opts->sysroot))
		return BK_E_INVAL;
	*out = NULL;
	struct bk_target *bt = base_calloc(1, sizeof(*bt));
	if (!bt)
		return BK_E_NOMEM;
	int err = tgt_core_open(core, opts->exe, opts->sysroot, fetch_executable, &bt->tgt);
	if (!err)
		err = compose(bt);
	if (err) {
		bk_target_close(bt);
		return err;
	}
	*out = bt;
	return 0;
}

void bk_target_close(struct bk_target *bt)
{
	if (!bt)
		return;
	bk_space_destroy(bt->space);
	tgt_close(bt->tgt);
	for (size_t i = 0; i < bt->nproblems; i++)
		base_free(bt->problems[i]);
	base_free(bt->problems);
	base_free(bt);
}

void bk_target_release(struct bk_target *bt)
{
	if (bt)
		tgt_release(bt->tgt);
}

struct bk_space *bk_target_space(struct bk_target *bt)
{
	return bt->space;
}

size_t bk_target_nthreads(const struct bk_target *bt)
{
	return bt->tgt->nthreads;
}

int bk_target_thread(const struct bk_target *bt, size_t i, struct bk_thread_info *info,
		     struct bk_regs *regs)
{
	if (i >= bt->tgt->nthreads)
		return BK_E_INVAL;
	const struct tgt_thread *th = &bt->tgt->threads[i];
	if (info) {
		info->tid = th->tid;
		info->name = th->name;
		info->err = th->err;
	}
	if (regs)
		*regs = th->regs;
	return th->err;
}

int bk_target_signal(const struct bk_target *bt, struct bk_signal_info *out)
{
	if (!bt || !out)
		return BK_E_INVAL;
	if (!bt->tgt->signal.signo)
		return BK_E_NOT_FOUND;
	*out = bt->tgt->signal;
	return 0;
}

size_t bk_target_nproblems(const struct bk_target *bt)
{
	return bt->nproblems;
}

const char *bk_target_problem(const struct bk_target *bt, size_t i)
{
	return i < bt->nproblems ? bt->problems[i] : NULL;
}
