/* Unwinding this very process: bk_backtrace, cursors started here or from a
 * signal handler's ucontext, and local address spaces.
 *
 * Everything on the walk is async-signal-safe: modules come from
 * _dl_find_object and are described by their in-memory .eh_frame_hdr
 * (validated once, kept in a fixed array of slots filled lock-free), rows
 * are cached per PC tagged with the module's identity, memory is read
 * through src/target/local.c. The default space bk_backtrace uses lives in
 * static storage, so even the first call allocates nothing.
 *
 * A module whose .eh_frame_hdr is missing or unusable has no CFI here (its
 * frames are unwound by frame pointer): building an index would allocate.
 */
#include <ucontext.h>

#include "unwind.h"

#include "../base/dwarf.h"
#include "../target/target.h"

/* ---- Modules --------------------------------------------------------------- */

/* Describe the object OBJ: its .eh_frame found through .eh_frame_hdr. */
static bool local_module(const struct tgt_local_object *obj, struct uw_module *m,
			 struct cfi_table *table)
{
	memset(m, 0, sizeof(*m));
	m->start = obj->start;
	m->end = obj->end;
	m->bias = 0; /* the tables are read at their runtime addresses */
	m->path = (char *)obj->name;
	if (!obj->eh_frame_hdr || obj->eh_frame_hdr < obj->start || obj->eh_frame_hdr >= obj->end)
		return true; /* known, without CFI */
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
		return true;
	struct cfi_section sec = {
		.data = (const uint8_t *)(uintptr_t)eh_addr,
		.len = (size_t)(obj->end - eh_addr),
		.addr = eh_addr,
		.is_eh = true,
		.addr_size = 8,
		.mem = { tgt_local_read, NULL },
	};
	struct cfi_hdr h = { hdr, hdr_len, obj->eh_frame_hdr };
	if (cfi_table_init_hdr(table, &sec, &h) == 0)
		m->eh_table = table;
	return true;
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
		local_module(&obj, &sl->mod, &sl->table);
		atomic_store_explicit(&sl->state, 2, memory_order_release);
		return &sl->mod;
	}
	/* Every slot taken (a process that loaded hundreds of objects): describe
	 * the module for this one use. */
	local_module(&obj, tmp, tmp_table);
	return tmp;
}

/* ---- Spaces ----------------------------------------------------------------- */

static const struct bk_target_ops local_ops = { sizeof(local_ops), tgt_local_read };

_Static_assert(sizeof(struct uw_cache_entry) == 256 &&
		       offsetof(struct uw_cache_entry, row) == 32,
	       "a cache entry's key and fast form share one cache line");
static _Alignas(64) struct uw_cache_entry default_cache[UW_CACHE_ENTRIES];
static struct uw_local_slot default_slots[UW_LOCAL_SLOTS];
static struct bk_space default_space = {
	.arch = ARCH_HOST,
	.ops = { sizeof(struct bk_target_ops), tgt_local_read },
	.cache = default_cache,
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

#if defined(__x86_64__)
/* uw_capture_regs(uint64_t out[17]): the caller's registers as they are
 * right after this call returns, in DWARF order: rbx, rbp, r12-r15 (callee-
 * saved, untouched here), rsp (after the return) and rip (the return
 * address). The others are written too but mean nothing. */
__asm__(".text\n"
	".globl uw_capture_regs\n"
	".hidden uw_capture_regs\n"
	".type uw_capture_regs, @function\n"
	"uw_capture_regs:\n"
	".cfi_startproc\n"
	"	movq %rax, 0(%rdi)\n"
	"	movq %rdx, 8(%rdi)\n"
	"	movq %rcx, 16(%rdi)\n"
	"	movq %rbx, 24(%rdi)\n"
	"	movq %rsi, 32(%rdi)\n"
	"	movq %rdi, 40(%rdi)\n"
	"	movq %rbp, 48(%rdi)\n"
	"	leaq 8(%rsp), %rax\n"
	"	movq %rax, 56(%rdi)\n"
	"	movq %r8, 64(%rdi)\n"
	"	movq %r9, 72(%rdi)\n"
	"	movq %r10, 80(%rdi)\n"
	"	movq %r11, 88(%rdi)\n"
	"	movq %r12, 96(%rdi)\n"
	"	movq %r13, 104(%rdi)\n"
	"	movq %r14, 112(%rdi)\n"
	"	movq %r15, 120(%rdi)\n"
	"	movq (%rsp), %rax\n"
	"	movq %rax, 128(%rdi)\n"
	"	ret\n"
	".cfi_endproc\n"
	".size uw_capture_regs, .-uw_capture_regs\n");
void uw_capture_regs(uint64_t *out);
#endif

/* Start C from a capture made by uw_capture_regs: the state of the function
 * that called it, at the return point. Only what the capture can vouch for
 * is valid: the callee-saved registers, rsp and rip. */
static int init_here(struct uw_cursor *c, struct bk_space *s, const uint64_t *regs)
{
	const struct arch_info *a = s->arch;
	memset(c, 0, sizeof(*c));
	c->space = s;
	/* rbx, rbp, rsp, r12-r15 and rip. */
	static const unsigned keep[] = { 3, 6, 7, 12, 13, 14, 15, 16 };
	for (size_t i = 0; i < BK_ARRAY_LEN(keep); i++) {
		unsigned slot = arch_slot(a, keep[i]);
		c->regs[slot] = regs[keep[i]];
		c->valid |= (uint64_t)1 << slot;
	}
	c->how = BK_HOW_INITIAL;
	c->at_pc = 0; /* the PC is a return address */
	tgt_local_note_stack(regs[7]);
	return 0;
}

__attribute__((noinline)) int bk_cursor_init_local(struct bk_cursor *bc, struct bk_space *s)
{
#if defined(__x86_64__)
	if (!bc || !s || !s->local)
		return BK_E_INVAL;
	uint64_t regs[17];
	uw_capture_regs(regs);
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
	return 0;
#else
	(void)bc;
	(void)s;
	return BK_E_UNSUPPORTED;
#endif
}

int bk_cursor_init_ucontext(struct bk_cursor *bc, struct bk_space *s, const void *ucontext)
{
#if defined(__x86_64__)
	if (!bc || !s || !ucontext)
		return BK_E_INVAL;
	const ucontext_t *uc = ucontext;
	const greg_t *g = uc->uc_mcontext.gregs;
	struct bk_regs regs;
	regs.valid[0] = regs.valid[1] = 0;
	static const int map[17] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
				     REG_RBP, REG_RSP, REG_R8, REG_R9, REG_R10, REG_R11,
				     REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP };
	for (unsigned i = 0; i < 17; i++)
		bk_regs_set(&regs, i, (uint64_t)g[map[i]]);
	bk_regs_set(&regs, 49, (uint64_t)g[REG_EFL]);
	if (s->local)
		tgt_local_note_stack((uint64_t)g[REG_RSP]);
	return bk_cursor_init(bc, s, &regs);
#else
	(void)bc;
	(void)s;
	(void)ucontext;
	return BK_E_UNSUPPORTED;
#endif
}

/* ---- bk_backtrace: the PC-only walk ----------------------------------------- */

/* The modules one walk has met: a PC inside one of them needs no
 * _dl_find_object. (Frames of the walking thread cannot be unloaded under
 * it; the cursor's per-step identification has the same window.) */
#define WALK_MODS 4
struct walk_mods {
	unsigned n, next;
	struct walk_mod {
		struct tgt_local_object obj;
		uint64_t tag;
	} m[WALK_MODS];
};

static const struct walk_mod *walk_module(struct walk_mods *w, uint64_t pc)
{
	for (unsigned i = 0; i < w->n; i++)
		if (pc >= w->m[i].obj.start && pc < w->m[i].obj.end)
			return &w->m[i];
	struct walk_mod *m = &w->m[w->next];
	if (!uw_local_identify(pc, &m->obj, &m->tag))
		return NULL;
	w->next = (w->next + 1) % WALK_MODS;
	if (w->n < WALK_MODS)
		w->n++;
	return m;
}

/* Where the sigreturn frame at SP keeps REGNO, or 0 if it does not. */
static uint64_t sigframe_slot(const struct arch_info *a, uint64_t sp, unsigned regno)
{
	const struct arch_sigframe *sf = &a->sigframe;
	for (unsigned i = 0; i < sf->nregs; i++)
		if (sf->reg[i].regno == regno)
			return sp + sf->ucontext_off + sf->gregs_off + sf->reg[i].off;
	return 0;
}

/* The slow parts of the walk below, kept out of its loop so its variables
 * stay in registers. */
__attribute__((noinline)) static bool walk_word(uint64_t at, uint64_t *v)
{
	uint64_t w;
	if (tgt_local_read(NULL, at, &w, 8) != 0)
		return false;
	*v = w;
	return true;
}

__attribute__((noinline)) static bool walk_decide(struct bk_space *s, const struct walk_mod *m,
						  uint64_t tag, uint64_t pc, uint64_t lookup,
						  struct uw_fast *f)
{
	struct uw_crow crow;
	if (uw_local_decide(s, &m->obj, tag, pc, lookup, &crow) != 0)
		return false;
	uw_fast_form(s->arch, &crow, f);
	return true;
}

/* Step over the sigreturn frame at SP = R[1]: R = the interrupted PC, SP
 * and FP. */
__attribute__((noinline)) static bool walk_sigframe(const struct arch_info *a, uint64_t r[3])
{
	uint64_t sp = r[1];
	uint64_t at_pc = sigframe_slot(a, sp, a->pc_reg), at_sp = sigframe_slot(a, sp, a->sp_reg),
		 at_fp = sigframe_slot(a, sp, a->fp_reg);
	return at_pc && at_sp && at_fp && tgt_local_read(NULL, at_pc, &r[0], 8) == 0 &&
	       tgt_local_read(NULL, at_sp, &r[1], 8) == 0 && tgt_local_read(NULL, at_fp, &r[2], 8) == 0;
}

/* The walk of bk_backtrace without a cursor, from the registers REGS (DWARF
 * order) at a return address: per frame one probe of the row cache for the
 * fast form (struct uw_fast) and the loads of the return address and the
 * saved frame pointer, no indirect calls. It makes the same frames as the
 * cursor, check for check (the CFA grows except after a signal frame, at
 * most BK_MAX_FRAMES); at the first frame it cannot do that way (no fast
 * form, an unknown module, a failed read, a CFA that does not grow) it
 * returns -1 and the caller walks again with the cursor, which then also
 * says how that frame ends. Otherwise the number of PCs stored. */
static int walk_fast(struct bk_space *s, const uint64_t *regs, void **pcs, int max)
{
	const struct arch_info *a = s->arch;
	uint64_t pc = regs[a->pc_reg], sp = regs[a->sp_reg], fp = regs[a->fp_reg];
	uint64_t lo, hi;
	tgt_local_stack(&lo, &hi);
	if (hi - lo < 8)
		return -1; /* the stack is not known: every read would be a system call */
	uint64_t span = hi - 8 - lo; /* a word at A is on the stack if A - lo <= span */
	struct walk_mods mods;
	mods.n = mods.next = 0;
	const struct walk_mod *m = NULL;
	uint64_t m_start = 0, m_len = 0, tag = 0; /* the module of the last frame */
	/* The CFA must grow, except from a signal frame to the frame it
	 * interrupted, which is also looked up at its PC, not PC - 1: there
	 * cfa_prev is 0 and back is 0. */
	uint64_t cfa_prev = 0, back = 1;
	/* The cursor stops before a step that would make BK_MAX_FRAMES. */
	if (max > BK_MAX_FRAMES - 1)
		max = BK_MAX_FRAMES - 1;
	const struct uw_cache_entry *cache = s->cache;
	int n = 0;
	while (n < max && pc != 0) {
		uint64_t lookup = pc - back;
		if (__builtin_expect(lookup - m_start >= m_len, 0)) {
			if (!(m = walk_module(&mods, lookup)))
				return -1;
			m_start = m->obj.start;
			m_len = m->obj.end - m->obj.start;
			tag = m->tag;
		}
		/* The cache probe of uw_cache_get_fast, spelled out so the fields go
		 * straight to registers. */
		const struct uw_cache_entry *e = &cache[uw_cache_slot(lookup)];
		uint32_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
		struct uw_fast f = e->fast;
		bool hit = !(seq & 1) && seq != 0 && e->pc == lookup && e->tag == tag;
		atomic_thread_fence(memory_order_acquire);
		if (__builtin_expect(!hit || atomic_load_explicit(&e->seq, memory_order_relaxed) != seq,
				     0)) {
			struct uw_fast g;
			if (!walk_decide(s, m, tag, pc, lookup, &g))
				return -1;
			f = g;
		}
		if (__builtin_expect(f.kind != UW_FAST_CFA, 0)) {
			if (f.kind != UW_FAST_SIGNAL)
				return f.kind == UW_FAST_END ? n : -1;
			uint64_t r[3] = { 0, sp, 0 };
			if (!walk_sigframe(a, r))
				return -1;
			pc = r[0];
			sp = r[1];
			fp = r[2];
			cfa_prev = 0;
			back = 0;
			pcs[n++] = (void *)(uintptr_t)pc;
			continue;
		}
		uint64_t cfa = (f.cfa_fp ? fp : sp) + (uint64_t)(int64_t)f.cfa_off, v;
		uint64_t at = cfa + (uint64_t)(int64_t)f.ra_off;
		if (cfa <= cfa_prev)
			return -1;
		if (at - lo <= span)
			pc = tgt_local_stack_word(at);
		else if (!walk_word(at, &v))
			return -1;
		else
			pc = v;
		if (f.fp_saved) {
			at = cfa + (uint64_t)(int64_t)f.fp_off;
			if (at - lo <= span)
				fp = tgt_local_stack_word(at);
			else if (!walk_word(at, &v))
				return -1;
			else
				fp = v;
		}
		sp = cfa_prev = cfa;
		back = 1;
		pcs[n++] = (void *)(uintptr_t)pc;
	}
	return n;
}

_Atomic unsigned long uw_fast_handovers;

/* bk_backtrace's walk from a capture REGS: the fast walk, or the cursor's
 * (also where the fast walk hands over). */
static int backtrace_from(const uint64_t *regs, void **pcs, int max, bool fast)
{
	if (!pcs || max <= 0)
		return 0;
	tgt_local_note_stack(regs[7]);
	if (fast) {
		int n = walk_fast(&default_space, regs, pcs, max);
		if (n >= 0)
			return n;
		atomic_fetch_add_explicit(&uw_fast_handovers, 1, memory_order_relaxed);
	}
	struct bk_cursor bc;
	struct uw_cursor *c = (struct uw_cursor *)(void *)&bc;
	init_here(c, &default_space, regs);
	/* The first frame is the caller of the capture: its caller is the first PC. */
	int n = 0;
	while (n < max && bk_cursor_step(&bc) == 1)
		pcs[n++] = (void *)(uintptr_t)c->regs[16];
	return n;
}

__attribute__((noinline)) int bk_backtrace(void **pcs, int max)
{
#if defined(__x86_64__)
	uint64_t regs[17];
	uw_capture_regs(regs);
	return backtrace_from(regs, pcs, max, true);
#else
	(void)pcs;
	(void)max;
	return 0;
#endif
}

__attribute__((noinline)) int uw_backtrace_cursor(void **pcs, int max)
{
#if defined(__x86_64__)
	uint64_t regs[17];
	uw_capture_regs(regs);
	return backtrace_from(regs, pcs, max, false);
#else
	(void)pcs;
	(void)max;
	return 0;
#endif
}
