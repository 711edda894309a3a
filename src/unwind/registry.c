/* Code registered from memory: .eh_frame sections for a code range
 * (bk_space_register_eh_frame, libgcc's __register_frame semantics) and,
 * on spaces over this process, ELF images (bk_space_add_module_image).
 *
 * Registrations live in chunks of UW_REG_CHUNK slots, allocated as needed
 * and never freed before the space; each chunk and the registry keep a
 * bounding range of their live registrations, so a PC outside them costs a
 * compare. Publishing is lock-free for readers: a slot's fields are written,
 * then its serial (never reused) is stored; a walk reads the serial, checks
 * the range, pins the slot (users + 1) and reads the serial again; only an
 * unchanged serial lets it use the slot. Removal clears the serial, then
 * waits until no walk pins the slot, then frees what it owned: once
 * bk_space_deregister_eh_frame returns, no walk reads the section. Writers
 * take a mutex and allocate (cold); lookups are AS-safe and never wait.
 *
 * Lookup cost is a scan of the slots of the chunks whose range holds the
 * PC: fine for the tens or hundreds of registrations of a JIT's code
 * arenas, linear in them past that (a known limit).
 */
#include <pthread.h>
#include <sched.h>

#include "unwind.h"

#include "../target/target.h"

#define EH_MAX_LEN ((uint64_t)64 << 20)
#define EH_MAX_FDES ((size_t)1 << 21)
#define TAG_REG ((uint64_t)1 << 63)

/* ---- Lookup (AS-safe) ------------------------------------------------------------ */

bool uw_reg_pin(struct uw_reg *r, uint64_t serial, struct uw_pin *pin)
{
	/* Dekker with removal, which clears the serial, then reads users. */
	pin->r = NULL;
	if (!serial)
		return false;
	atomic_fetch_add(&r->users, 1);
	if (atomic_load(&r->serial) != serial) {
		atomic_fetch_sub(&r->users, 1);
		return false;
	}
	pin->r = r;
	pin->serial = serial;
	return true;
}

const struct uw_module *uw_reg_find_slow(struct bk_space *s, uint64_t pc, uint64_t *tag,
					 struct uw_pin *pin)
{
	pin->r = NULL;
	struct uw_registry *g = atomic_load_explicit(&s->registry, memory_order_acquire);
	if (!g || pc < atomic_load_explicit(&g->lo, memory_order_relaxed) ||
	    pc >= atomic_load_explicit(&g->hi, memory_order_relaxed))
		return NULL;
	uint32_t nc = atomic_load_explicit(&g->nchunks, memory_order_acquire);
	for (uint32_t c = 0; c < nc && c < UW_REG_CHUNKS; c++) {
		struct uw_reg_chunk *ch = atomic_load_explicit(&g->chunk[c], memory_order_acquire);
		if (!ch || pc < atomic_load_explicit(&ch->lo, memory_order_relaxed) ||
		    pc >= atomic_load_explicit(&ch->hi, memory_order_relaxed))
			continue;
		uint32_t used = atomic_load_explicit(&ch->used, memory_order_acquire);
		for (uint32_t i = 0; i < used && i < UW_REG_CHUNK; i++) {
			struct uw_reg *r = &ch->r[i];
			uint64_t serial = atomic_load_explicit(&r->serial, memory_order_acquire);
			if (!serial || pc < atomic_load_explicit(&r->start, memory_order_relaxed) ||
			    pc >= atomic_load_explicit(&r->end, memory_order_relaxed))
				continue;
			if (!uw_reg_pin(r, serial, pin))
				continue;
			*tag = TAG_REG | serial;
			return &r->mod;
		}
	}
	return NULL;
}

/* ---- Writers (cold) ---------------------------------------------------------------- */

static struct uw_registry *get_registry(struct bk_space *s, bool create)
{
	struct uw_registry *g = atomic_load_explicit(&s->registry, memory_order_acquire);
	if (g || !create)
		return g;
	g = base_calloc(1, sizeof(*g));
	pthread_mutex_t *m = base_calloc(1, sizeof(*m));
	if (!g || !m) {
		base_free(g);
		base_free(m);
		return NULL;
	}
	pthread_mutex_init(m, NULL);
	g->lock = m;
	g->next_serial = 1;
	atomic_store(&g->lo, UINT64_MAX); /* empty: no PC inside */
	struct uw_registry *none = NULL;
	if (!atomic_compare_exchange_strong(&s->registry, &none, g)) {
		pthread_mutex_destroy(m);
		base_free(m);
		base_free(g);
		return none;
	}
	return g;
}

/* A free slot (under the lock), allocating a chunk if needed; NULL when
 * the registry is full or memory is short (*ERR). */
static struct uw_reg *take_slot(struct uw_registry *g, struct uw_reg_chunk **chp, int *err)
{
	uint32_t nc = atomic_load(&g->nchunks);
	for (uint32_t c = 0; c <= nc && c < UW_REG_CHUNKS; c++) {
		struct uw_reg_chunk *ch = atomic_load(&g->chunk[c]);
		if (!ch) {
			ch = base_calloc(1, sizeof(*ch));
			if (!ch) {
				*err = BK_E_NOMEM;
				return NULL;
			}
			atomic_store(&ch->lo, UINT64_MAX);
			atomic_store(&g->chunk[c], ch);
			atomic_store(&g->nchunks, c + 1);
		}
		for (uint32_t i = 0; i < UW_REG_CHUNK; i++) {
			struct uw_reg *r = &ch->r[i];
			/* A slot removed but still pinned is not free yet. */
			if (r->state || atomic_load(&r->users))
				continue;
			r->state = 1;
			if (i >= atomic_load(&ch->used))
				atomic_store(&ch->used, i + 1);
			*chp = ch;
			return r;
		}
	}
	*err = BK_E_LIMIT;
	return NULL;
}

/* The bounding ranges again from the live slots (under the lock): after a
 * removal. Narrowing only drops ranges of unpublished slots. */
static void rebound(struct uw_registry *g)
{
	uint64_t glo = UINT64_MAX, ghi = 0;
	uint32_t nc = atomic_load(&g->nchunks);
	for (uint32_t c = 0; c < nc; c++) {
		struct uw_reg_chunk *ch = atomic_load(&g->chunk[c]);
		uint64_t lo = UINT64_MAX, hi = 0;
		for (uint32_t i = 0; i < atomic_load(&ch->used); i++) {
			struct uw_reg *r = &ch->r[i];
			if (!atomic_load(&r->serial))
				continue;
			lo = atomic_load(&r->start) < lo ? atomic_load(&r->start) : lo;
			hi = atomic_load(&r->end) > hi ? atomic_load(&r->end) : hi;
		}
		atomic_store(&ch->lo, lo);
		atomic_store(&ch->hi, hi);
		glo = lo < glo ? lo : glo;
		ghi = hi > ghi ? hi : ghi;
	}
	atomic_store(&g->lo, glo);
	atomic_store(&g->hi, ghi);
}

/* A rule-table id for R's code on local space S, if one is free and the
 * range fits the table's 32-bit offsets (under the lock); else 0. */
static uint32_t take_ftid(struct bk_space *s, struct uw_registry *g, uint64_t start,
			  uint64_t end)
{
	if (!s->local || end - start > ((uint64_t)1 << 32))
		return 0;
	for (uint32_t i = 0; i < UW_REG_NFTIDS; i++)
		if (!(g->ftids[i / 64] >> (i % 64) & 1)) {
			g->ftids[i / 64] |= (uint64_t)1 << (i % 64);
			return UW_REG_FTID0 + i;
		}
	return 0;
}

/* Publish slot R of chunk CH with MOD's tables for [START, END) (under the
 * lock): bounds first, then the serial. */
static void publish(struct uw_registry *g, struct uw_reg_chunk *ch, struct uw_reg *r,
		    uint64_t start, uint64_t end)
{
	atomic_store(&r->start, start);
	atomic_store(&r->end, end);
	if (start < atomic_load(&ch->lo))
		atomic_store(&ch->lo, start);
	if (end > atomic_load(&ch->hi))
		atomic_store(&ch->hi, end);
	if (start < atomic_load(&g->lo))
		atomic_store(&g->lo, start);
	if (end > atomic_load(&g->hi))
		atomic_store(&g->hi, end);
	atomic_store(&r->serial, g->next_serial++);
}

/* Unpublish R (under the lock); the caller then waits and frees. */
static void unpublish(struct uw_registry *g, struct uw_reg *r)
{
	atomic_store(&r->serial, 0);
	rebound(g);
}

/* Wait for walks pinning R to leave, purge its rules, free what it owns,
 * free the slot and its rule-table id. */
static void retire(struct bk_space *s, struct uw_registry *g, struct uw_reg *r)
{
	while (atomic_load(&r->users))
		sched_yield();
	if (r->ftid)
		uw_ftab_purge(s->ftab, r->ftid);
	cfi_table_free(&r->table);
	bk_elf_close(r->mod.elf);
	base_free(r->mod.path);
	memset(&r->mod, 0, sizeof(r->mod));
	memset(&r->table, 0, sizeof(r->table));
	r->key = NULL;
	pthread_mutex_lock(g->lock);
	if (r->ftid) {
		uint32_t i = r->ftid - UW_REG_FTID0;
		g->ftids[i / 64] &= ~((uint64_t)1 << (i % 64));
		r->ftid = 0;
	}
	r->state = 0;
	pthread_mutex_unlock(g->lock);
}

/* The length of the zero-terminated .eh_frame at P, terminator included,
 * read without faulting (this process's memory): 0 when it starts with the
 * terminator. */
static int eh_length(const uint8_t *p, uint64_t *len)
{
	uint64_t off = 0, at = (uint64_t)(uintptr_t)p;
	for (;;) {
		uint32_t l32;
		uint64_t size;
		if (tgt_local_read(NULL, at + off, &l32, 4) != 0)
			return BK_E_MEMORY;
		if (l32 == 0) {
			*len = off == 0 ? 0 : off + 4;
			return 0;
		}
		if (l32 == 0xffffffffu) {
			uint64_t l64;
			if (tgt_local_read(NULL, at + off + 4, &l64, 8) != 0)
				return BK_E_MEMORY;
			if (l64 > EH_MAX_LEN)
				return BK_E_LIMIT;
			size = 12 + l64;
		} else {
			size = 4 + (uint64_t)l32;
		}
		off += size;
		if (off > EH_MAX_LEN)
			return BK_E_LIMIT;
	}
}

/* Every entry of SEC frames and decodes; the terminator must end it
 * (TERMINATED) or may (else: a section cut at its last FDE). */
static int eh_check(const struct cfi_section *sec, bool terminated)
{
	uint64_t off = 0;
	size_t nfde = 0;
	while (off < sec->len) {
		struct cfi_entry e;
		int err = cfi_entry_at(sec, off, &e);
		if (err)
			return err;
		if (e.kind == CFI_ENTRY_TERMINATOR)
			return e.next_off == sec->len ? 0 : BK_E_CORRUPT;
		if (e.kind == CFI_ENTRY_CIE) {
			struct cfi_cie cie;
			err = cfi_decode_cie(sec, off, &cie);
		} else {
			struct cfi_fde fde;
			struct cfi_cie cie;
			err = cfi_decode_fde(sec, off, &fde, &cie);
			if (++nfde > EH_MAX_FDES)
				return BK_E_LIMIT;
		}
		if (err)
			return err;
		off = e.next_off;
	}
	return terminated ? BK_E_CORRUPT : 0; /* no terminator within the length */
}

/* A registration of the same key or image start (under the lock). */
static struct uw_reg *find_key(struct uw_registry *g, const void *key, uint64_t start)
{
	uint32_t nc = atomic_load(&g->nchunks);
	for (uint32_t c = 0; c < nc; c++) {
		struct uw_reg_chunk *ch = atomic_load(&g->chunk[c]);
		for (uint32_t i = 0; i < atomic_load(&ch->used); i++) {
			struct uw_reg *r = &ch->r[i];
			if (!atomic_load(&r->serial))
				continue;
			if (key ? r->key == key : (!r->key && r->mod.start == start))
				return r;
		}
	}
	return NULL;
}

static int reg_eh(struct bk_space *s, const void *key, const struct cfi_section *sec,
		  uint64_t start, uint64_t end, bool terminated, bool within, const char *name);

int bk_space_register_eh_frame(struct bk_space *s, const void *eh_frame, uint64_t start,
			       uint64_t end)
{
	if (!s || !eh_frame || end < start)
		return BK_E_INVAL;
	uint64_t len;
	int err = eh_length(eh_frame, &len);
	if (err)
		return err;
	if (len == 0)
		return 0; /* libgcc: a section that is only its terminator registers nothing */
	/* Every byte readable: walks read the section with plain loads. */
	uint8_t probe[256];
	for (uint64_t off = 0; off < len; off += sizeof(probe)) {
		size_t n = len - off < sizeof(probe) ? (size_t)(len - off) : sizeof(probe);
		if (tgt_local_read(NULL, (uint64_t)(uintptr_t)eh_frame + off, probe, n) != 0)
			return BK_E_MEMORY;
	}
	struct cfi_section sec = {
		.data = eh_frame,
		.len = (size_t)len,
		.addr = (uint64_t)(uintptr_t)eh_frame,
		.is_eh = true,
		.addr_size = s->arch->addr_size,
		.mem = { s->ops.read_mem, s->ctx },
	};
	return reg_eh(s, eh_frame, &sec, start, end, true, false, NULL);
}

/* Register SEC under KEY for [START, END) (START == END: its FDEs'
 * range), a module named NAME (NULL: none); WITHIN: every FDE must lie
 * inside [START, END). */
static int reg_eh(struct bk_space *s, const void *key, const struct cfi_section *in,
		  uint64_t start, uint64_t end, bool terminated, bool within, const char *name)
{
	struct cfi_section sec = *in;
	int err;
	if ((err = eh_check(&sec, terminated)))
		return err == BK_E_LIMIT ? err : BK_E_CORRUPT;
	struct cfi_table table;
	if ((err = cfi_table_init(&table, &sec, NULL)))
		return err;
	if (table.nbad) {
		cfi_table_free(&table);
		return BK_E_CORRUPT;
	}
	if (within) {
		for (size_t i = 0; i < table.nindex; i++)
			if (table.index[i].pc_begin < start || table.index[i].pc_end > end) {
				cfi_table_free(&table);
				return BK_E_NOT_FOUND; /* it does not describe this code */
			}
	}
	if (start == end) {
		if (table.nindex == 0) {
			cfi_table_free(&table);
			return BK_E_NOT_FOUND; /* no FDE to say which code it is */
		}
		start = UINT64_MAX;
		end = 0;
		for (size_t i = 0; i < table.nindex; i++) {
			start = table.index[i].pc_begin < start ? table.index[i].pc_begin : start;
			end = table.index[i].pc_end > end ? table.index[i].pc_end : end;
		}
	}
	struct uw_registry *g = get_registry(s, true);
	char *path = name ? base_strdup(name) : NULL;
	if (!g || (name && !path)) {
		cfi_table_free(&table);
		return BK_E_NOMEM;
	}
	pthread_mutex_lock(g->lock);
	struct uw_reg_chunk *ch;
	struct uw_reg *r = find_key(g, key, 0) ? NULL : take_slot(g, &ch, &err);
	if (!r) {
		pthread_mutex_unlock(g->lock);
		cfi_table_free(&table);
		base_free(path);
		return err ? err : BK_E_INVAL;
	}
	r->key = key;
	r->table = table;
	memset(&r->mod, 0, sizeof(r->mod));
	r->mod.start = start;
	r->mod.end = end;
	r->mod.path = path;
	r->mod.eh_table = &r->table;
	r->ftid = take_ftid(s, g, start, end);
	publish(g, ch, r, start, end);
	pthread_mutex_unlock(g->lock);
	return 0;
}

int bk_space_deregister_eh_frame(struct bk_space *s, const void *eh_frame)
{
	if (!s || !eh_frame)
		return BK_E_INVAL;
	uint32_t first;
	if (tgt_local_read(NULL, (uint64_t)(uintptr_t)eh_frame, &first, 4) == 0 && first == 0)
		return 0; /* libgcc: nothing was registered for it */
	return uw_reg_remove_eh(s, eh_frame);
}

int uw_reg_add_eh(struct bk_space *s, const void *key, const uint8_t *data, size_t len,
		  uint64_t addr, uint64_t start, uint64_t end, const char *name)
{
	if (!s || !key || !data || !len || end <= start)
		return BK_E_INVAL;
	if (len > EH_MAX_LEN)
		return BK_E_LIMIT;
	struct cfi_section sec = {
		.data = data,
		.len = len,
		.addr = addr,
		.is_eh = true,
		.addr_size = s->arch->addr_size,
		.mem = { s->ops.read_mem, s->ctx },
	};
	return reg_eh(s, key, &sec, start, end, false, true, name);
}

int uw_reg_remove_eh(struct bk_space *s, const void *key)
{
	struct uw_registry *g = get_registry(s, false);
	if (!g)
		return BK_E_NOT_FOUND;
	pthread_mutex_lock(g->lock);
	struct uw_reg *r = find_key(g, key, 0);
	if (r)
		unpublish(g, r);
	pthread_mutex_unlock(g->lock);
	if (!r)
		return BK_E_NOT_FOUND;
	retire(s, g, r);
	return 0;
}

/* An ELF image of a local space: a registration owning the opened image. */
int uw_reg_add_image(struct bk_space *s, struct bk_elf *elf, uint64_t start, uint64_t end,
		     uint64_t base, const char *name)
{
	struct uw_module m;
	memset(&m, 0, sizeof(m));
	m.start = start;
	m.end = end;
	m.elf = elf;
	m.bias = bk_elf_load_bias(elf, base);
	m.path = base_strdup(name ? name : "");
	int err;
	m.eh_table = uw_elf_table(elf, UW_EH_FRAME, &err);
	m.debug_table = uw_elf_table(elf, UW_DEBUG_FRAME, &err);
	struct uw_registry *g = m.path ? get_registry(s, true) : NULL;
	if (!g) {
		base_free(m.path);
		bk_elf_close(elf);
		return BK_E_NOMEM;
	}
	pthread_mutex_lock(g->lock);
	struct uw_reg_chunk *ch;
	err = 0;
	struct uw_reg *r = find_key(g, NULL, start) ? NULL : take_slot(g, &ch, &err);
	if (!r) {
		pthread_mutex_unlock(g->lock);
		base_free(m.path);
		bk_elf_close(elf);
		return err ? err : BK_E_INVAL;
	}
	r->key = NULL;
	r->mod = m;
	memset(&r->table, 0, sizeof(r->table));
	r->ftid = take_ftid(s, g, start, end);
	publish(g, ch, r, start, end);
	pthread_mutex_unlock(g->lock);
	return 0;
}

int uw_reg_remove_image(struct bk_space *s, uint64_t start)
{
	struct uw_registry *g = get_registry(s, false);
	if (!g)
		return BK_E_NOT_FOUND;
	pthread_mutex_lock(g->lock);
	struct uw_reg *r = find_key(g, NULL, start);
	if (r)
		unpublish(g, r);
	pthread_mutex_unlock(g->lock);
	if (!r)
		return BK_E_NOT_FOUND;
	retire(s, g, r);
	return 0;
}

void uw_reg_destroy(struct bk_space *s)
{
	struct uw_registry *g = atomic_load(&s->registry);
	if (!g)
		return;
	for (uint32_t c = 0; c < atomic_load(&g->nchunks); c++) {
		struct uw_reg_chunk *ch = atomic_load(&g->chunk[c]);
		for (uint32_t i = 0; i < atomic_load(&ch->used); i++) {
			struct uw_reg *r = &ch->r[i];
			if (!r->state)
				continue;
			cfi_table_free(&r->table);
			bk_elf_close(r->mod.elf);
			base_free(r->mod.path);
		}
		base_free(ch);
	}
	pthread_mutex_destroy(g->lock);
	base_free(g->lock);
	base_free(g);
	atomic_store(&s->registry, NULL);
}
