/* Unwinding this very process: bk_backtrace, cursors started here or from a
 * signal handler's ucontext, and local address spaces.
 *
 * Everything on the walk is async-signal-safe: modules come from
 * _dl_find_object and are described by their in-memory .eh_frame_hdr
 * (its header checked once, each entry when a lookup visits it; kept in a
 * fixed array of slots filled lock-free, a slot's index naming the module
 * in the PC-only walk's rule table), the cursor's rows are cached per PC
 * tagged with the module's identity, memory is read through
 * src/target/local.c and the registers a walk starts from are captured by
 * src/target/local_<cpu>.S. bk_backtrace runs the PC-only walk (fast.c)
 * and walks again with the cursor only where it hands over. The default
 * space lives in static storage, so even the first call allocates nothing.
 *
 * A module whose .eh_frame_hdr is missing or unusable (a static program,
 * --no-eh-frame-hdr) has its .eh_frame found from its file and indexed
 * once, into mmap'ed memory, by the first walk that meets it
 * (local_index.c); walks meanwhile scan the section.
 */
#include "unwind.h"

#include "../base/dwarf.h"
#include "../target/target.h"

/* ---- Modules --------------------------------------------------------------- */

/* The table of OBJ's .eh_frame through its .eh_frame_hdr, if usable. */
static bool hdr_table(const struct tgt_local_object *obj, struct cfi_table *table)
{
	if (!obj->eh_frame_hdr || obj->eh_frame_hdr < obj->start || obj->eh_frame_hdr >= obj->end)
		return false;
	const uint8_t *hdr = (const uint8_t *)(uintptr_t)obj->eh_frame_hdr;
	size_t hdr_len = (size_t)(obj->end - obj->eh_frame_hdr);
	struct buf b = buf_make(hdr, hdr_len);
	uint8_t version, ptr_enc, count_enc, table_enc;
	uint64_t eh_addr;
	struct base_ptr_ctx ctx = { .sec_data = hdr, .sec_addr = obj->eh_frame_hdr,
				    .data_addr = obj->eh_frame_hdr, .addr_size = 8 };
	if (buf_u8(&b, &version) || version != 1 || buf_u8(&b, &ptr_enc) ||
	    buf_u8(&b, &count_enc) || buf_u8(&b, &table_enc) || (ptr_enc & DW_EH_PE_indirect) ||
	    base_read_pointer(&b, ptr_enc, &ctx, &eh_addr) || eh_addr < obj->start ||
	    eh_addr >= obj->end)
		return false;
	struct cfi_section sec = {
		.data = (const uint8_t *)(uintptr_t)eh_addr,
		.len = (size_t)(obj->end - eh_addr),
		.addr = eh_addr,
		.is_eh = true,
		.addr_size = 8,
		.mem = { tgt_local_read, NULL },
	};
	struct cfi_hdr h = { hdr, hdr_len, obj->eh_frame_hdr };
	return cfi_table_init_hdr(table, &sec, &h) == 0;
}

/* Describe the object OBJ: its .eh_frame found through .eh_frame_hdr, else
 * from its file and indexed once (local_index.c). False: the description
 * holds for this one use only (the index is being built). */
static bool local_module(const struct tgt_local_object *obj, struct uw_module *m,
			 struct cfi_table *table)
{
	memset(m, 0, sizeof(*m));
	m->start = obj->start;
	m->end = obj->end;
	m->bias = 0; /* the tables are read at their runtime addresses */
	m->path = (char *)obj->name;
	if (hdr_table(obj, table)) {
		m->eh_table = table;
		return true;
	}
	switch (uw_local_eh_table(obj, table)) {
	case UW_EH_INDEXED:
		m->eh_table = table;
		return true;
	case UW_EH_SCAN:
		m->eh_table = table;
		return false;
	case UW_EH_PENDING:
		return false;
	case UW_EH_NONE:
		break;
	}
	return true; /* known, without CFI */
}

bool uw_local_identify(uint64_t pc, struct tgt_local_object *obj, uint64_t *tag)
{
	*tag = 0;
	if (tgt_local_find_object(pc, obj) != 0)
		return false;
	*tag = (uint64_t)(uintptr_t)obj->handle ^ obj->eh_frame_hdr ^ (obj->start << 1);
	return true;
}

const struct uw_module *uw_local_find(struct bk_space *s, uint64_t pc, struct uw_module *tmp,
				      struct cfi_table *tmp_table, uint64_t *tag)
{
	struct tgt_local_object obj;
	if (!uw_local_identify(pc, &obj, tag))
		return NULL;
	return uw_local_module(s, &obj, tmp, tmp_table);
}

const struct uw_module *uw_local_module(struct bk_space *s, const struct tgt_local_object *o,
					struct uw_module *tmp, struct cfi_table *tmp_table)
{
	struct tgt_local_object obj = *o;
	size_t h = (size_t)((obj.start >> 12) * 0x9e3779b97f4a7c15ull >> 55) % UW_LOCAL_SLOTS;
	for (size_t probe = 0; probe < UW_LOCAL_SLOTS; probe++) {
		struct uw_local_slot *sl = &s->local[(h + probe) % UW_LOCAL_SLOTS];
		uint32_t st = atomic_load_explicit(&sl->state, memory_order_acquire);
		if (st == 2) {
			if (sl->start == obj.start && sl->handle == obj.handle &&
			    sl->hdr == obj.eh_frame_hdr)
				return &sl->mod;
			continue;
		}
		if (st == 1)
			continue; /* being filled by someone else: keep looking */
		uint32_t zero = 0;
		if (!atomic_compare_exchange_strong_explicit(&sl->state, &zero, 1,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		sl->start = obj.start;
		sl->handle = obj.handle;
		sl->hdr = obj.eh_frame_hdr;
		if (!local_module(&obj, &sl->mod, &sl->table)) {
			/* Not for keeping: hand it over and free the slot again. */
			*tmp = sl->mod;
			*tmp_table = sl->table;
			if (tmp->eh_table)
				tmp->eh_table = tmp_table;
			atomic_store_explicit(&sl->state, 0, memory_order_release);
			return tmp;
		}
		atomic_store_explicit(&sl->state, 2, memory_order_release);
		return &sl->mod;
	}
	/* Every slot taken (a process that loaded hundreds of objects): describe
	 * the module for this one use (id 0: its rows are not cached). */
	local_module(&obj, tmp, tmp_table);
	return tmp;
}

unsigned uw_local_module_id(const struct bk_space *s, const struct uw_module *m)
{
	uintptr_t base = (uintptr_t)s->local, at = (uintptr_t)m;
	if (!s->local || at < base || at >= base + UW_LOCAL_SLOTS * sizeof(struct uw_local_slot))
		return 0;
	size_t i = (at - base) / sizeof(struct uw_local_slot);
	return i < UW_FT_MAX_ID ? (unsigned)i + 1 : 0;
}

/* ---- Spaces ----------------------------------------------------------------- */

static const struct bk_target_ops local_ops = { sizeof(local_ops), tgt_local_read };

/* The default space's tables are static (zero pages until touched): a walk
 * in a signal handler needs nothing allocated. The PC-only walk touches the
 * rule table only (64 KiB of sets and the pool); the cursor's row cache is
 * used by cursors and by walks the fast walk hands over. The rule table
 * starts empty with its two fixed pool rules. */
static struct uw_cache_entry default_cache[UW_CACHE_ENTRIES];
static struct uw_local_slot default_slots[UW_LOCAL_SLOTS];
static struct uw_ftab default_ftab = {
	.nx = 2,
	.x = { [UW_FT_XCHAIN] = { .cfa = UW_X_CFA_CHAIN } },
};
static _Atomic uint64_t default_memo[UW_MEMO_BLOCKS_LOCAL * UW_MEMO_WORDS];
static struct bk_space default_space = {
	.arch = ARCH_HOST,
	.ops = { sizeof(struct bk_target_ops), tgt_local_read },
	.cache = default_cache,
	.ftab = &default_ftab,
	.memo = default_memo,
	.memo_blocks = UW_MEMO_BLOCKS_LOCAL,
	.local = default_slots,
	.static_storage = true,
};

struct bk_space *bk_space_local(void)
{
	return &default_space;
}

int bk_space_create_local(struct bk_space **out)
{
	if (!out)
		return BK_E_INVAL;
	int err = bk_space_create(ARCH_HOST->arch, &local_ops, NULL, out);
	if (err)
		return err;
	(*out)->local = base_calloc(UW_LOCAL_SLOTS, sizeof(struct uw_local_slot));
	if (!(*out)->local) {
		bk_space_destroy(*out);
		return BK_E_NOMEM;
	}
	return 0;
}

/* ---- Registers of this thread ---------------------------------------------- */

/* What a capture by tgt_local_capture vouches for (the state of the
 * function that called it, at the return point): the callee-saved
 * registers, the SP and the PC, and the return-address register (x30 on
 * AArch64, where it still holds that PC). */
static void capture_regs(const uint64_t *regs, struct bk_regs *out)
{
	const struct arch_info *a = ARCH_HOST;
	uint64_t keep = a->callee_saved_slots | (uint64_t)1 << arch_slot(a, a->pc_reg) |
			(uint64_t)1 << arch_slot(a, a->ra_reg);
	memset(out->valid, 0, sizeof(out->valid));
	for (unsigned i = 0; i < a->nslots; i++)
		if (keep >> i & 1)
			bk_regs_set(out, a->slot_regno[i], regs[i]);
}

/* The capture's SP. */
static uint64_t capture_sp(const uint64_t *regs)
{
	return regs[arch_slot(ARCH_HOST, ARCH_HOST->sp_reg)];
}

/* Start C from a capture: its PC is a return address. */
static void init_here(struct uw_cursor *c, struct bk_space *s, const uint64_t *regs)
{
	struct bk_regs r;
	capture_regs(regs, &r);
	bk_cursor_init((struct bk_cursor *)(void *)c, s, &r); /* PC and SP are there */
	c->at_pc = 0;
	tgt_local_note_stack(capture_sp(regs));
}

__attribute__((noinline)) int bk_cursor_init_local(struct bk_cursor *bc, struct bk_space *s)
{
	if (!bc || !s || !s->local)
		return BK_E_INVAL;
	uint64_t regs[ARCH_MAX_SLOTS];
	tgt_local_capture(regs);
	struct uw_cursor *c = (struct uw_cursor *)(void *)bc;
	init_here(c, s, regs);
	/* We are at the return into this function: step to our caller, while
	 * our frame is still alive to be read. */
	int rc = bk_cursor_step(bc);
	if (rc != 1)
		return rc < 0 ? rc : BK_E_NO_UNWIND;
	/* The registers this function saved are still addresses in its own
	 * frame, which dies when it returns: read them now. */
	uw_cursor_resolve_all(c);
	c->depth = 0;
	c->how = BK_HOW_INITIAL;
	c->stepper = 0;
	return 0;
}

/* Plain loads: the ucontext is the caller's own (a handler's argument). */
static int read_plain(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	memcpy(dst, (const void *)(uintptr_t)addr, len);
	return 0;
}

/* The registers are read from the ucontext as the signal-frame stepper reads
 * a signal frame's (arch.h, struct arch_sigframe): the general ones, and on
 * AArch64 d8-d15 from the fpsimd record of uc_mcontext.__reserved. glibc's
 * ucontext_t has the kernel's layout on both architectures. */
int bk_cursor_init_ucontext(struct bk_cursor *bc, struct bk_space *s, const void *ucontext)
{
	if (!bc || !s || !ucontext || s->arch != ARCH_HOST)
		return BK_E_INVAL;
	const struct arch_sigframe *sf = &ARCH_HOST->sigframe;
	uint64_t uc = (uint64_t)(uintptr_t)ucontext, v, fp[ARCH_SIGFRAME_FP];
	struct bk_regs regs;
	regs.valid[0] = regs.valid[1] = 0;
	for (unsigned i = 0; i < sf->nregs; i++) {
		memcpy(&v, (const uint8_t *)ucontext + sf->gregs_off + sf->reg[i].off, 8);
		bk_regs_set(&regs, sf->reg[i].regno, v);
	}
	struct base_mem mem = { read_plain, NULL };
	unsigned nfp = arch_sigframe_fp(ARCH_HOST, uc, &mem, fp);
	for (unsigned i = 0; i < nfp; i++)
		bk_regs_set(&regs, sf->fp_regno + i, fp[i]);
	if (s->local && bk_regs_get(&regs, ARCH_HOST->sp_reg, &v))
		tgt_local_note_stack(v);
	return bk_cursor_init(bc, s, &regs);
}

/* ---- bk_backtrace ------------------------------------------------------------ */

/* bk_backtrace's walk from a capture REGS: the fast walk, or the cursor's
 * (also where the fast walk hands over). */
static int backtrace_from(const uint64_t *regs, void **pcs, int max, bool fast)
{
	if (!pcs || max <= 0)
		return 0;
	tgt_local_note_stack(capture_sp(regs));
	if (fast) {
		struct bk_regs r;
		capture_regs(regs, &r);
		int n = uw_walk_pcs(&default_space, &r, false, pcs, max);
		if (n >= 0)
			return n;
		atomic_fetch_add_explicit(&uw_fast_handovers, 1, memory_order_relaxed);
	}
	struct bk_cursor bc;
	struct uw_cursor *c = (struct uw_cursor *)(void *)&bc;
	init_here(c, &default_space, regs);
	/* The first frame is the caller of the capture: its caller is the first PC. */
	unsigned pcs_slot = arch_slot(ARCH_HOST, ARCH_HOST->pc_reg);
	int n = 0;
	while (n < max && bk_cursor_step(&bc) == 1)
		pcs[n++] = (void *)(uintptr_t)c->regs[pcs_slot];
	return n;
}

__attribute__((noinline)) int bk_backtrace(void **pcs, int max)
{
	uint64_t regs[ARCH_MAX_SLOTS];
	tgt_local_capture(regs);
	return backtrace_from(regs, pcs, max, true);
}

__attribute__((noinline)) int uw_backtrace_cursor(void **pcs, int max)
{
	uint64_t regs[ARCH_MAX_SLOTS];
	tgt_local_capture(regs);
	return backtrace_from(regs, pcs, max, false);
}
