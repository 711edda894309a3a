/* struct bk_target: a target from src/target (threads, registers, memory,
 * mappings) composed with an address space whose modules come from the
 * target's memory map. Cold throughout.
 *
 * Modules from a map: consecutive mappings of one file make one module,
 * from its first mapping's start to its last one's end; the file's lowest
 * PT_LOAD sits at (first start - first offset). The file is opened by path,
 * or through /proc/PID/map_files when the path is gone (deleted, another
 * mount namespace). The vDSO has no file: its image is read from the
 * target's memory. Only modules with an executable mapping are kept.
 */
#include <stdio.h>

#include "unwind.h"

#include "../target/target.h"

struct bk_target {
	struct tgt *tgt;
	struct bk_space *space;
};

static struct bk_elf *open_image_from_memory(struct tgt *t, uint64_t start, uint64_t end)
{
	size_t len = (size_t)(end - start);
	if (len == 0 || len > (64u << 20))
		return NULL;
	uint8_t *img = base_alloc(len);
	struct bk_elf *elf = NULL;
	if (img && tgt_read_mem(t, start, img, len) == 0)
		bk_elf_open_memory(img, len, &elf);
	base_free(img);
	return elf;
}

static struct bk_elf *open_mapped_file(struct tgt *t, const struct tgt_mapping *m)
{
	struct bk_elf *elf = NULL;
	if (bk_elf_open(m->path, &elf) == 0)
		return elf;
	char alt[96];
	snprintf(alt, sizeof(alt), "/proc/%d/map_files/%llx-%llx", t->pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	if (bk_elf_open(alt, &elf) == 0)
		return elf;
	return NULL;
}

/* Group the map into modules and add them to S. */
static int add_modules(struct bk_space *s, struct tgt *t)
{
	size_t i = 0;
	while (i < t->nmaps) {
		const struct tgt_mapping *first = &t->maps[i];
		size_t j = i + 1;
		bool exec = first->x;
		while (j < t->nmaps && first->path[0] && strcmp(t->maps[j].path, first->path) == 0) {
			exec |= t->maps[j].x;
			j++;
		}
		const struct tgt_mapping *last = &t->maps[j - 1];
		bool is_file = first->path[0] == '/';
		bool is_vdso = strcmp(first->path, "[vdso]") == 0;
		if (exec && (is_file || is_vdso)) {
			struct bk_elf *elf = is_vdso ? open_image_from_memory(t, first->start, last->end)
						     : open_mapped_file(t, first);
			/* A file mapped from offset 0 has its ELF header there. */
			uint64_t base = first->start - first->offset;
			int err = uw_space_add(s, first->start, last->end, base, first->path, elf);
			if (err)
				return err;
		}
		i = j;
	}
	return 0;
}

int bk_target_attach(int pid, struct bk_target **out)
{
	if (!out)
		return BK_E_INVAL;
	struct bk_target *bt = base_calloc(1, sizeof(*bt));
	if (!bt)
		return BK_E_NOMEM;
	int err = tgt_ptrace_attach(pid, &bt->tgt);
	if (!err) {
		static const struct bk_target_ops ops = { sizeof(ops), tgt_read_mem };
		err = bk_space_create(bt->tgt->arch->arch, &ops, bt->tgt, &bt->space);
	}
	if (!err)
		err = add_modules(bt->space, bt->tgt);
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
	base_free(bt);
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
