/* Address spaces: an architecture, the target's memory callback, the modules
 * mapped in it and the row cache.
 *
 * Cold: creating a space and adding modules (opening ELF files, building
 * every lookup table at once so a walk never allocates). Hot and AS-safe:
 * uw_space_find (binary search over sorted modules) and the cache.
 *
 * Invariant: mods[] is sorted by start and no two modules overlap; adding a
 * module that overlaps another replaces it (a new mapping at that address).
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "unwind.h"

int bk_space_create(enum bk_arch arch, const struct bk_target_ops *ops, void *ctx,
		    struct bk_space **out)
{
	const struct arch_info *a = arch_get(arch);
	if (!a || !ops || !ops->read_mem || ops->size < sizeof(struct bk_target_ops) || !out)
		return BK_E_INVAL;
	struct bk_space *s = base_calloc(1, sizeof(*s));
	if (!s)
		return BK_E_NOMEM;
	s->cache = base_calloc(UW_CACHE_ENTRIES, sizeof(*s->cache));
	s->ftab = uw_ftab_new();
	s->memo = base_calloc(UW_MEMO_BLOCKS * UW_MEMO_WORDS, sizeof(*s->memo));
	s->memo_blocks = UW_MEMO_BLOCKS;
	if (!s->cache || !s->ftab || !s->memo) {
		base_free(s->cache);
		uw_ftab_free(s->ftab);
		base_free((void *)s->memo);
		base_free(s);
		return BK_E_NOMEM;
	}
	s->arch = a;
	s->ops = *ops;
	s->ctx = ctx;
	*out = s;
	return 0;
}

static void module_free(struct uw_module *m)
{
	bk_elf_close(m->elf); /* m->debug is the file's */
	base_free(m->path);
}

void bk_space_destroy(struct bk_space *s)
{
	if (!s || s->static_storage)
		return;
	for (size_t i = 0; i < s->nmods; i++)
		module_free(&s->mods[i]);
	base_free(s->mods);
	base_free(s->cache);
	uw_ftab_free(s->ftab);
	base_free((void *)s->memo);
	base_free(s->local);
	base_free(s->owned_ctx);
	uw_steppers_destroy(s);
	uw_reg_destroy(s);
	uw_jitdump_destroy(s); /* the registrations used its bytes */
	if (s->sym_state_free)
		s->sym_state_free(s->sym_state);
	base_free(s);
}

enum bk_arch bk_space_arch(const struct bk_space *s)
{
	return s->arch->arch;
}

void uw_space_forget_rows(struct bk_space *s)
{
	if (!atomic_load(&s->rows_kept))
		return;
	atomic_store(&s->rows_kept, false);
	for (size_t i = 0; i < UW_CACHE_ENTRIES; i++) {
		atomic_store(&s->cache[i].seq, 0);
		s->cache[i].pc = 0;
	}
	uw_ftab_clear(s->ftab);
	for (size_t i = 0; i < (size_t)s->memo_blocks * UW_MEMO_WORDS; i++)
		atomic_store_explicit(&s->memo[i], 0, memory_order_relaxed);
}

/* The flags change which stepper a PC gets, and the cache keeps that
 * decision: every cached row goes. */
int bk_space_set_flags(struct bk_space *s, unsigned flags)
{
	if (!s || (flags & ~(unsigned)BK_SPACE_NO_CFI))
		return BK_E_INVAL;
	if (s->static_storage)
		return BK_E_INVAL; /* the process-wide space is shared */
	s->flags = flags;
	uw_space_forget_rows(s);
	return 0;
}

/* Build every table of the module now, so walks never allocate (the
 * file keeps them: a file shared by modules builds them once). */
static void module_tables(struct uw_module *m)
{
	int err;
	m->eh_table = uw_elf_table(m->elf, UW_EH_FRAME, &err);
	m->debug_table = uw_elf_table(m->elf, UW_DEBUG_FRAME, &err);
	if ((m->debug = uw_elf_debug(m->elf)))
		m->debug_file_table = uw_elf_table(m->debug, UW_DEBUG_FRAME, &err);
}

/* A module M overlaps that is the same image: the same file at the same
 * start and bias. ld.so maps a library's whole extent read-only, then its
 * segments over it; a profile sees both mappings, and the second is given
 * the file opened already rather than a second open of it. */
static struct uw_module *same_image(struct bk_space *s, const struct uw_module *m)
{
	for (size_t i = 0; i < s->nmods; i++) {
		struct uw_module *o = &s->mods[i];
		if (o->start == m->start && o->end > m->start && o->elf && o->bias == m->bias &&
		    !strcmp(o->path, m->path))
			return o;
	}
	return NULL;
}

int uw_space_add(struct bk_space *s, uint64_t start, uint64_t end, uint64_t base,
		 const char *name, struct bk_elf *elf)
{
	struct uw_module m = { .start = start, .end = end, .elf = elf };
	m.path = base_strdup(name ? name : "");
	if (!m.path) {
		bk_elf_close(elf);
		return BK_E_NOMEM;
	}
	if (m.elf) {
		m.bias = bk_elf_load_bias(m.elf, base);
		struct uw_module *same = same_image(s, &m);
		if (same && same->elf != m.elf) { /* its file and tables serve */
			bk_elf_close(m.elf);
			m.elf = uw_elf_ref(same->elf);
		}
		module_tables(&m);
	}

	/* Drop modules the new one overlaps, then insert in order. */
	size_t w = 0;
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i].start < m.end && m.start < s->mods[i].end)
			module_free(&s->mods[i]);
		else
			s->mods[w++] = s->mods[i];
	}
	s->nmods = w;
	if (s->nmods == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 16;
		void *p = base_realloc(s->mods, ncap * sizeof(*s->mods));
		if (!p) {
			module_free(&m);
			return BK_E_NOMEM;
		}
		s->mods = p;
		s->cap = ncap;
	}
	size_t at = s->nmods;
	while (at > 0 && s->mods[at - 1].start > m.start) {
		s->mods[at] = s->mods[at - 1];
		at--;
	}
	s->mods[at] = m;
	s->nmods++;
	/* Cached rows may describe the code that was replaced, and module
	 * indexes (the rule table's module ids) have moved. */
	uw_space_forget_rows(s);
	return 0;
}

int bk_space_add_module(struct bk_space *s, const struct bk_module_desc *d)
{
	if (!s || !d || d->size < sizeof(*d) || d->end <= d->start)
		return BK_E_INVAL;
	struct bk_elf *elf = NULL;
	if (d->path && d->path[0])
		bk_elf_open(d->path, &elf); /* a module without a file still has a name */
	return uw_space_add(s, d->start, d->end, d->base, d->path, elf);
}

/* The range of ELF's executable segments, [*LO, *HI); false when none. */
static bool code_range(const struct ldr_elf *e, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (size_t i = 0; i < e->nsegs; i++) {
		const struct ldr_segment *g = &e->segs[i];
		if (!(g->flags & PF_X) || !g->memsz || g->vaddr + g->memsz < g->vaddr)
			continue;
		*lo = g->vaddr < *lo ? g->vaddr : *lo;
		*hi = g->vaddr + g->memsz > *hi ? g->vaddr + g->memsz : *hi;
	}
	return *lo < *hi;
}

int uw_image_open(const struct bk_module_image *d, struct uw_image *out)
{
	memset(out, 0, sizeof(*out));
	if (!d || d->size < sizeof(*d) || !d->image || d->end < d->start ||
	    (d->end == d->start && d->start))
		return BK_E_INVAL;
	/* A relocatable object (a JIT's, for GDB) is linked at the addresses
	 * its sections carry; then it is a file as any other. */
	struct ldr_rel_linked lk = { 0 };
	const void *image = d->image;
	size_t len = d->len;
	if (len >= 18 && memcmp(image, "\177ELF", 4) == 0 &&
	    base_rd_le((const uint8_t *)image + 16, 2) == ET_REL) {
		int err = ldr_rel_link(image, len, &lk);
		if (err)
			return err == BK_E_NOT_FOUND ? BK_E_INVAL : err;
		image = lk.image;
		len = lk.len;
	}
	int err = bk_elf_open_memory(image, len, &out->elf);
	base_free(lk.image);
	if (err)
		return err;
	out->start = d->start;
	out->end = d->end;
	out->base = d->base;
	if (lk.image || (!d->start && !d->end)) {
		/* Where the image says it is: at its own addresses (bias 0). */
		out->base = out->elf->ldr->min_vaddr;
		if (!d->start && !d->end && !code_range(out->elf->ldr, &out->start, &out->end)) {
			bk_elf_close(out->elf);
			out->elf = NULL;
			return BK_E_INVAL;
		}
	}
	return 0;
}

int uw_image_add(struct bk_space *s, struct uw_image *im, const char *name)
{
	struct bk_elf *elf = im->elf;
	im->elf = NULL;
	if (bk_elf_arch(elf) != s->arch->arch) {
		bk_elf_close(elf);
		return BK_E_UNSUPPORTED;
	}
	/* A local space finds its modules through the dynamic linker, and
	 * walks run while modules come and go: registered code. */
	if (s->local)
		return uw_reg_add_image(s, elf, im->start, im->end, im->base, name);
	return uw_space_add(s, im->start, im->end, im->base, name, elf);
}

int bk_space_add_module_image(struct bk_space *s, const struct bk_module_image *d)
{
	if (!s)
		return BK_E_INVAL;
	struct uw_image im;
	int err = uw_image_open(d, &im);
	return err ? err : uw_image_add(s, &im, d->name);
}

int bk_space_remove_module_image(struct bk_space *s, uint64_t start)
{
	if (!s)
		return BK_E_INVAL;
	if (s->local)
		return uw_reg_remove_image(s, start);
	for (size_t i = 0; i < s->nmods; i++) {
		if (s->mods[i].start != start)
			continue;
		module_free(&s->mods[i]);
		memmove(&s->mods[i], &s->mods[i + 1], (s->nmods - i - 1) * sizeof(s->mods[0]));
		s->nmods--;
		uw_space_forget_rows(s);
		return 0;
	}
	return BK_E_NOT_FOUND;
}

const struct uw_module *uw_space_find(const struct bk_space *s, uint64_t pc)
{
	size_t lo = BASE_COUNT_LE(s->mods, s->nmods, start, pc);
	if (lo == 0 || pc >= s->mods[lo - 1].end)
		return NULL;
	return &s->mods[lo - 1];
}

int bk_space_module_at(const struct bk_space *s, uint64_t addr, struct bk_module_info *info)
{
	struct uw_module tmp;
	struct cfi_table tmp_table;
	uint64_t tag;
	/* Registered code first, as walks see it (its strings live until it
	 * is removed). */
	struct uw_pin pin;
	const struct uw_module *m = uw_reg_find((struct bk_space *)s, addr, &tag, &pin);
	if (m) {
		info->path = m->path ? m->path : "";
		info->start = m->start;
		info->end = m->end;
		info->bias = m->bias;
		info->has_cfi = m->eh_table || m->debug_table;
		uw_unpin(&pin);
		return 0;
	}
	m = s->local ? uw_local_find((struct bk_space *)s, addr, &tmp, &tmp_table, &tag)
		     : uw_space_find(s, addr);
	struct uw_jd_symbol j;
	if (!m && uw_jitdump_symbol(s, addr, &j)) {
		/* JIT code a jitdump describes without unwinding info: a module
		 * of its own too, without CFI. */
		*info = (struct bk_module_info){ .path = j.path, .start = j.start, .end = j.end };
		return 0;
	}
	if (!m)
		return BK_E_NOT_FOUND;
	info->path = m->path;
	info->start = m->start;
	info->end = m->end;
	info->bias = m->bias;
	info->has_cfi = m->eh_table || m->debug_table || m->debug_file_table;
	return 0;
}

/* ---- Row cache ------------------------------------------------------------
 *
 * Two ways per set: entries uw_cache_slot(pc) and the one after it. A row
 * goes to an empty way, else to the way its PC's hash bit picks, so two hot
 * PCs of one set do not evict each other. */

static struct uw_cache_entry *cache_way(struct bk_space *s, uint64_t pc, uint64_t tag)
{
	struct uw_cache_entry *e = &s->cache[uw_cache_slot(pc)];
	for (unsigned w = 0; w < 2; w++) {
		uint32_t seq = atomic_load_explicit(&e[w].seq, memory_order_relaxed);
		if (!(seq & 1) && seq != 0 && e[w].pc == pc && e[w].tag == tag)
			return &e[w];
	}
	return NULL;
}

bool uw_cache_get(struct bk_space *s, uint64_t pc, uint64_t tag, struct uw_crow *row)
{
	struct uw_cache_entry *e = &s->cache[uw_cache_slot(pc)];
	for (unsigned w = 0; w < 2; w++) {
		uint32_t seq = atomic_load_explicit(&e[w].seq, memory_order_acquire);
		if ((seq & 1) || seq == 0 || e[w].pc != pc || e[w].tag != tag)
			continue;
		memcpy(row, &e[w].row, uw_crow_size(&e[w].row));
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&e[w].seq, memory_order_relaxed) == seq)
			return true;
	}
	return false;
}

void uw_cache_put(struct bk_space *s, uint64_t pc, uint64_t tag, const struct uw_crow *row)
{
	struct uw_cache_entry *e = cache_way(s, pc, tag);
	if (!e) {
		e = &s->cache[uw_cache_slot(pc)];
		if (atomic_load_explicit(&e[0].seq, memory_order_relaxed) != 0)
			e += atomic_load_explicit(&e[1].seq, memory_order_relaxed) == 0
				     ? 1
				     : (pc * 0x9e3779b97f4a7c15ull) >> 52 & 1;
	}
	uint32_t seq = atomic_load_explicit(&e->seq, memory_order_relaxed);
	if ((seq & 1) ||
	    !atomic_compare_exchange_strong_explicit(&e->seq, &seq, seq + 1,
						     memory_order_acquire, memory_order_relaxed))
		return; /* another writer holds it: do not wait, do not cache */
	uw_space_note_kept(s);
	atomic_thread_fence(memory_order_release);
	e->pc = pc;
	e->tag = tag;
	memcpy(&e->row, row, uw_crow_size(row));
	atomic_store_explicit(&e->seq, seq + 2, memory_order_release);
}
