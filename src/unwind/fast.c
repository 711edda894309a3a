/* The PC-only walk: bk_backtrace's, over any space (this process, a
 * snapshot, a stopped process).
 *
 * Per frame it keeps the PC, the SP and the frame pointer, nothing else,
 * and does one probe of the space's rule table (struct uw_ftab, unwind.h):
 * the key is the frame's module id and the offset of its lookup PC in the
 * module, the value a compiled rule saying where the CFA, the return
 * address and the caller's frame pointer are. A table entry is one 64-bit
 * word, so readers need neither locks nor sequence numbers; eight entries
 * share a 64-byte set, so a hot PC is evicted only when eight others that
 * hash to its set are also hot (the old direct-mapped cache lost a pair of
 * colliding PCs on every walk, in one process in four).
 *
 * Rules are compiled from the same decision the cursor makes (uw_decide),
 * including the DRAP shapes gcc and glibc emit for realigned stacks (CFA =
 * *(FP + N), the caller's FP at FP + N) and the frame-pointer chain where
 * no CFI covers the code. A frame whose rule needs any other register (a
 * CFA on rbx, a return address in a register, an arbitrary expression)
 * has no fast form: where all its registers are known (the first frame,
 * the frame a signal interrupted) one cursor step makes its caller and the
 * walk goes on; elsewhere the walk returns -1 and its caller walks again
 * with the cursor, which tracks every register. The walk never guesses.
 *
 * Two things keep the table off the per-frame critical path: a memo per
 * thread indexed by the frame's SP (known before its PC is loaded), and a
 * stack window (this thread's stack, a snapshot's copy, the validator's
 * copy) inside which ordinary frames are read with plain loads; the hot
 * loop takes only those, everything else goes through one general step.
 *
 * Invariants, the cursor's own: the CFA grows from frame to frame except
 * from a signal frame to the frame it interrupted (which is looked up at
 * its PC, not PC - 1); at most BK_MAX_FRAMES frames; every read may fail.
 * Reads inside the window are plain loads, bounds-checked; all others go
 * through the space's read_mem. AS-safe: no allocation, locks or errno;
 * the table is filled with compare-and-swap and a writer that loses a race
 * simply does not cache.
 */
#include "unwind.h"

#include "../base/dwarf.h"
#include "../expr/expr.h"
#include "../target/target.h"

_Static_assert(sizeof(struct uw_xrule) == 16, "pool rules are 16 bytes");
_Static_assert(UW_FT_XRULES <= (1u << (UW_FT_RULE_BITS - 2)), "pool index fits the rule");

_Atomic unsigned long uw_fast_handovers;

enum { R_CFA = 0, R_POOL = 1, R_END = 2, R_SIGNAL = 3 };
#define HASH_MUL 0x9e3779b97f4a7c15ull
#define SET_SHIFT (64 - 10) /* UW_FT_SETS = 1 << 10 */
_Static_assert(UW_FT_SETS == 1u << 10 && UW_FT_WAYS == 8, "set and way bits below");

/* ---- The table -------------------------------------------------------------- */

void uw_ftab_clear(struct uw_ftab *t)
{
	for (size_t i = 0; i < UW_FT_SETS; i++)
		for (size_t w = 0; w < UW_FT_WAYS; w++)
			atomic_store_explicit(&t->set[i][w], 0, memory_order_relaxed);
	memset(t->x, 0, 2 * sizeof(t->x[0]));
	t->x[UW_FT_XCHAIN].cfa = UW_X_CFA_CHAIN;
	atomic_store_explicit(&t->nx, 2, memory_order_release);
}

void uw_ftab_purge(struct uw_ftab *t, unsigned id)
{
	for (size_t i = 0; i < UW_FT_SETS; i++)
		for (size_t w = 0; w < UW_FT_WAYS; w++) {
			uint64_t e = atomic_load_explicit(&t->set[i][w], memory_order_relaxed);
			if (e && (e >> UW_FT_RULE_BITS) >> 32 == id)
				atomic_compare_exchange_strong_explicit(&t->set[i][w], &e, 0,
									memory_order_relaxed,
									memory_order_relaxed);
		}
}

struct uw_ftab *uw_ftab_new(void)
{
	/* The funnel gives 16-byte alignment; sets want 64. The raw pointer is
	 * kept in the word before the table. */
	uint8_t *raw = base_calloc(1, sizeof(struct uw_ftab) + 64 + sizeof(void *));
	if (!raw)
		return NULL;
	uintptr_t at = ((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63;
	memcpy((void *)(at - sizeof(void *)), &raw, sizeof(raw));
	struct uw_ftab *t = (struct uw_ftab *)at;
	uw_ftab_clear(t);
	return t;
}

void uw_ftab_free(struct uw_ftab *t)
{
	if (!t)
		return;
	void *raw;
	memcpy(&raw, (uint8_t *)t - sizeof(void *), sizeof(raw));
	base_free(raw);
}

/* A key's set, and the way searched first (where it is put when free).
 * The module id is hashed, the offset is not: 16-byte granules of a
 * module's code go to consecutive sets, so the PCs of nearby code share
 * the table's pages (a first walk faults in few of them) and no two PCs
 * of one module less than 16 KiB apart compete for a set. */
static inline size_t ft_set(uint64_t key)
{
	return (size_t)(((key >> 32) * HASH_MUL >> SET_SHIFT) + (key >> 4)) % UW_FT_SETS;
}
static inline unsigned ft_way(uint64_t key)
{
	return (unsigned)(key ^ key >> 3) % UW_FT_WAYS;
}

/* The entry for KEY in its set, searching every way; 0 if absent. */
static uint64_t ft_find(const struct uw_ftab *t, uint64_t key)
{
	const _Atomic uint64_t *set = t->set[ft_set(key)];
	for (unsigned i = 0, w = ft_way(key); i < UW_FT_WAYS; i++, w = (w + 1) % UW_FT_WAYS) {
		uint64_t e = atomic_load_explicit(&set[w], memory_order_relaxed);
		if (e >> UW_FT_RULE_BITS == key)
			return e;
	}
	return 0;
}

/* Cache RULE for KEY: its first way if free, else the next free one, else
 * a victim chosen round the set. A lost race leaves the entry uncached.
 * Release: a pool rule the entry names is visible before the entry. */
static void ft_put(struct uw_ftab *t, uint64_t key, uint32_t rule)
{
	uint64_t want = key << UW_FT_RULE_BITS | rule;
	_Atomic uint64_t *set = t->set[ft_set(key)];
	for (unsigned i = 0, w = ft_way(key); i < UW_FT_WAYS; i++, w = (w + 1) % UW_FT_WAYS) {
		uint64_t cur = atomic_load_explicit(&set[w], memory_order_relaxed);
		if (cur == 0 || cur >> UW_FT_RULE_BITS == key) {
			if (atomic_compare_exchange_strong_explicit(&set[w], &cur, want,
								    memory_order_release,
								    memory_order_relaxed))
				return;
		}
	}
	unsigned v = atomic_fetch_add_explicit(&t->victim, 1, memory_order_relaxed) % UW_FT_WAYS;
	uint64_t cur = atomic_load_explicit(&set[v], memory_order_relaxed);
	atomic_compare_exchange_strong_explicit(&set[v], &cur, want, memory_order_release,
						memory_order_relaxed);
}

/* The pool index of X, added if new; 0 when the pool is full. Two writers
 * may add the same rule twice: harmless. */
static uint32_t ft_intern(struct uw_ftab *t, const struct uw_xrule *x)
{
	uint32_t n = atomic_load_explicit(&t->nx, memory_order_acquire);
	if (n > UW_FT_XRULES)
		n = UW_FT_XRULES;
	for (uint32_t i = 1; i < n; i++)
		if (!memcmp(&t->x[i], x, sizeof(*x)))
			return i;
	uint32_t i = atomic_fetch_add_explicit(&t->nx, 1, memory_order_relaxed);
	if (i >= UW_FT_XRULES)
		return 0;
	t->x[i] = *x;
	return i;
}

/* ---- Compiling a row --------------------------------------------------------- */

/* The expression at RULE is `DW_OP_breg<REG> N` (DEREF: followed by
 * DW_OP_deref) and nothing else: *REGNO and *OFF. */
static bool expr_breg(const struct cfi_section *sec, const struct cfi_rule *rule, bool deref,
		      unsigned *regno, int64_t *off)
{
	const uint8_t *p = cfi_rule_expr(sec, rule);
	if (!p)
		return false;
	struct buf b = buf_make(p, rule->expr_len);
	struct expr_op op;
	if (expr_decode_op(&b, 0, sec->addr_size, &op))
		return false;
	if (op.opcode >= DW_OP_breg0 && op.opcode <= DW_OP_breg0 + 31) {
		*regno = op.opcode - DW_OP_breg0;
		*off = (int64_t)op.operand1;
	} else if (op.opcode == DW_OP_bregx) {
		*regno = (unsigned)op.operand1;
		*off = (int64_t)op.operand2;
	} else {
		return false;
	}
	if (deref && (expr_decode_op(&b, 0, sec->addr_size, &op) || op.opcode != DW_OP_deref))
		return false;
	return buf_left(&b) == 0;
}

static bool fits32(int64_t v)
{
	return v == (int32_t)v;
}

/* The rule for a frame whose registers ROW (of SEC, CIE) recovers, or
 * R_POOL with index 0 when a PC, SP and FP walk cannot follow it. */
static uint32_t compile_rule(struct uw_ftab *t, const struct arch_info *a,
			     const struct cfi_section *sec, const struct cfi_cie *cie,
			     const struct cfi_row *row)
{
	struct uw_xrule x;
	memset(&x, 0, sizeof(x));
	if (a->addr_size != 8)
		return R_POOL;
	const struct cfi_rule *ra = cfi_row_rule(row, (unsigned)cie->ra_reg);
	if (ra && ra->kind == BK_RULE_UNDEFINED)
		return R_END;
	if (!ra || ra->kind != BK_RULE_OFFSET || !fits32(ra->value))
		return R_POOL; /* a return address in a register, or computed */
	x.ra_off = (int32_t)ra->value;
	if (row->ra_sign_state & 1)
		x.flags |= UW_X_RA_SIGNED;

	/* The caller's SP is the CFA: no other rule for it. */
	const struct cfi_rule *sp = cfi_row_rule(row, a->sp_reg);
	if (sp && !(sp->kind == BK_RULE_VAL_OFFSET && sp->value == 0))
		return R_POOL;

	unsigned regno;
	int64_t off;
	if (row->cfa.kind == BK_RULE_CFA_REG_OFFSET &&
	    (row->cfa.reg == a->sp_reg || row->cfa.reg == a->fp_reg) && fits32(row->cfa.value)) {
		x.cfa = row->cfa.reg == a->sp_reg ? UW_X_CFA_SP : UW_X_CFA_FP;
		x.cfa_off = (int32_t)row->cfa.value;
	} else if (row->cfa.kind == BK_RULE_CFA_EXPRESSION &&
		   expr_breg(sec, &row->cfa, true, &regno, &off) &&
		   (regno == a->sp_reg || regno == a->fp_reg) && fits32(off)) {
		x.cfa = regno == a->sp_reg ? UW_X_CFA_SP_DEREF : UW_X_CFA_FP_DEREF;
		x.cfa_off = (int32_t)off;
	} else {
		return R_POOL;
	}

	const struct cfi_rule *fp = cfi_row_rule(row, a->fp_reg);
	if (!fp || fp->kind == BK_RULE_SAME_VALUE) {
		x.fp = UW_X_FP_SAME;
	} else if (fp->kind == BK_RULE_OFFSET && fits32(fp->value)) {
		x.fp = UW_X_FP_AT_CFA;
		x.fp_off = (int32_t)fp->value;
	} else if (fp->kind == BK_RULE_VAL_OFFSET && fits32(fp->value)) {
		x.fp = UW_X_FP_VAL_CFA;
		x.fp_off = (int32_t)fp->value;
	} else if (fp->kind == BK_RULE_EXPRESSION && expr_breg(sec, fp, false, &regno, &off) &&
		   regno == a->fp_reg && fits32(off)) {
		x.fp = UW_X_FP_AT_FP;
		x.fp_off = (int32_t)off;
	} else {
		return R_POOL; /* undefined, in a register, computed */
	}

	/* The common shapes fit the entry itself. */
	if ((x.cfa == UW_X_CFA_SP || x.cfa == UW_X_CFA_FP) && !x.flags && x.cfa_off >= 0 &&
	    x.cfa_off % 8 == 0 && x.cfa_off / 8 < 1024 && x.ra_off < 0 && x.ra_off % 8 == 0 &&
	    -x.ra_off / 8 <= 16 &&
	    (x.fp == UW_X_FP_SAME ||
	     (x.fp == UW_X_FP_AT_CFA && x.fp_off < 0 && x.fp_off % 8 == 0 && -x.fp_off / 8 <= 31)))
		return R_CFA | (x.cfa == UW_X_CFA_FP) << 2 | (uint32_t)(x.cfa_off / 8) << 3 |
		       (uint32_t)(-x.ra_off / 8 - 1) << 13 |
		       (uint32_t)(x.fp == UW_X_FP_SAME ? 0 : -x.fp_off / 8) << 17;
	return R_POOL | ft_intern(t, &x) << 2;
}

/* Decide the frame at PC (lookup LOOKUP) of module M (NULL: unknown) the
 * way the cursor would, as a rule. */
static uint32_t decide_rule(struct bk_space *s, const struct uw_module *m, uint64_t pc,
			    uint64_t lookup)
{
	struct uw_crow crow;
	struct cfi_cie cie;
	struct cfi_row row;
	const struct cfi_table *t = NULL;
	if (uw_decide(s, m, pc, lookup, &crow, &t, &cie, &row) != 0)
		return R_POOL; /* the cursor reports the error */
	switch (crow.kind) {
	case UW_KIND_SIGNAL:
		return R_SIGNAL;
	case UW_KIND_CFI:
	case UW_KIND_CFI_SLOW:
		return compile_rule(s->ftab, s->arch, &t->sec, &cie, &row);
	}
	return R_POOL | UW_FT_XCHAIN << 2;
}

/* ---- The walk ------------------------------------------------------------------ */

/* The key prefix of a module whose rows are not cached: no key matches it. */
#define NOKEY (~(uint64_t)0)

/* Modules met by one walk: a PC inside one of them is only a range check.
 * (The frames of a thread being walked cannot be unloaded under it.) */
#define WALK_MODS 8
struct walk_mod {
	uint64_t start, len;
	uint64_t keyhi;                 /* module id << 32, or NOKEY */
	const struct uw_module *m;      /* of a space with a module array */
	struct tgt_local_object obj;    /* of a local space, unless perm */
	bool perm;                      /* a permanent module: obj not filled */
	struct uw_reg *reg;             /* registered code (not cached), */
	uint64_t reg_serial;            /* while it is this registration */
	bool claimed;                   /* a user stepper may claim the PC */
};
struct walk_mods {
	unsigned n, next;
	struct walk_mod m[WALK_MODS];
	struct walk_mod claimed;        /* what a claimed PC is given */
};

/* Learn the modules of local space S that are never unloaded (once; a
 * walk that finds another learning them goes without). */
static void learn_permanent(struct bk_space *s)
{
	uint32_t zero = 0;
	if (!atomic_compare_exchange_strong_explicit(&s->perm_state, &zero, 1,
						     memory_order_acquire, memory_order_relaxed))
		return;
	uint64_t addr[5];
	size_t n = tgt_local_permanent(addr, 5);
	uint32_t np = 0;
	for (size_t i = 0; i < n; i++) {
		struct tgt_local_object obj;
		uint64_t tag;
		struct uw_module tmp;
		struct cfi_table tmp_table;
		if (!uw_local_identify(addr[i], &obj, &tag))
			continue;
		unsigned id = uw_local_module_id(s, uw_local_module(s, &obj, &tmp, &tmp_table));
		uint64_t len = obj.end - obj.start;
		bool dup = false;
		for (uint32_t j = 0; j < np; j++)
			dup |= s->perm[j].start == obj.start;
		if (id && len <= ((uint64_t)1 << 32) && !dup)
			s->perm[np++] = (struct uw_perm){ obj.start, len, (uint64_t)id << 32 };
	}
	s->nperm = np;
	atomic_store_explicit(&s->perm_state, 2, memory_order_release);
}

/* PC outside every module, or inside a module a user stepper's range
 * meets: NULL, or, if a user stepper may claim PC, the walk's "claimed"
 * entry: its rule is "no fast form" (walk_rule), so the frame is a cursor
 * step where its registers are all known and the whole walk is the
 * cursor's elsewhere; the cursor asks the chain. Never kept, never cached
 * (its key matches nothing). */
static const struct walk_mod *claimed(struct bk_space *s, struct walk_mods *w, uint64_t pc)
{
	if (!uw_steppers_claim(s, pc, 1))
		return NULL;
	struct walk_mod *c = &w->claimed;
	c->start = pc;
	c->len = 0;
	c->keyhi = NOKEY;
	c->m = NULL;
	c->reg = NULL;
	c->perm = false;
	c->claimed = true;
	return c;
}

/* A module the walk has not met yet (out of line: the hot loop meets one
 * per module switch, and usually finds it among those it met). */
__attribute__((noinline)) static const struct walk_mod *walk_module_new(struct bk_space *s,
									 struct walk_mods *w,
									 uint64_t pc)
{
	struct walk_mod *wm = &w->m[w->next];
	wm->m = NULL;
	wm->reg = NULL;
	wm->claimed = false;
	unsigned id = 0;
	struct uw_pin pin;
	uint64_t tag;
	const struct uw_module *rm = uw_reg_find(s, pc, &tag, &pin);
	if (rm) {
		/* Registered code: its rules are decided at each use (the
		 * registration may go; its serial is checked then). */
		wm->reg = pin.r;
		wm->reg_serial = pin.serial; /* the one validated: it may be gone by now */
		wm->start = rm->start;
		wm->len = rm->end - rm->start;
		wm->keyhi = pin.r->ftid ? (uint64_t)pin.r->ftid << 32 : NOKEY;
		wm->perm = false;
		uw_unpin(&pin);
		goto found;
	}
	if (s->local) {
		uint32_t st = atomic_load_explicit(&s->perm_state, memory_order_acquire);
		if (st == 0) {
			learn_permanent(s);
			st = atomic_load_explicit(&s->perm_state, memory_order_acquire);
		}
		for (uint32_t i = 0; st == 2 && i < s->nperm; i++) {
			const struct uw_perm *p = &s->perm[i];
			if (pc - p->start < p->len) {
				/* No slot lookup: the walk needs only the range and
				 * the key until a rule must be decided. */
				wm->start = p->start;
				wm->len = p->len;
				wm->keyhi = p->keyhi;
				wm->perm = true;
				goto found;
			}
		}
		wm->perm = false;
		uint64_t tag;
		if (!uw_local_identify(pc, &wm->obj, &tag))
			return claimed(s, w, pc);
		struct uw_module tmp;
		struct cfi_table tmp_table;
		id = uw_local_module_id(s, uw_local_module(s, &wm->obj, &tmp, &tmp_table));
		wm->start = wm->obj.start;
		wm->len = wm->obj.end - wm->obj.start;
	} else {
		const struct uw_module *m = uw_space_find(s, pc);
		if (!m)
			return claimed(s, w, pc);
		wm->m = m;
		wm->start = m->start;
		wm->len = m->end - m->start;
		size_t idx = (size_t)(m - s->mods);
		id = idx < UW_FT_MAX_ID ? (unsigned)idx + 1 : 0;
	}
	if (wm->len > ((uint64_t)1 << 32))
		id = 0; /* offsets would not fit the key */
	wm->keyhi = id ? (uint64_t)id << 32 : NOKEY;
found:
	/* A user stepper's range meets the module: its PCs are checked one by
	 * one (len 0: neither this list nor the hot loop keeps it). A module
	 * no range meets costs nothing more. */
	if (uw_steppers_claim(s, wm->start, wm->len)) {
		if (uw_steppers_claim(s, pc, 1))
			return claimed(s, w, pc);
		wm->len = 0;
		return wm; /* not kept: the next new module takes its place */
	}
	w->next = (w->next + 1) % WALK_MODS;
	if (w->n < WALK_MODS)
		w->n++;
	return wm;
}

static inline const struct walk_mod *walk_module(struct bk_space *s, struct walk_mods *w,
						 uint64_t pc)
{
	for (unsigned i = 0; i < w->n; i++)
		if (pc - w->m[i].start < w->m[i].len)
			return &w->m[i];
	return walk_module_new(s, w, pc);
}

/* The rule for the frame at PC (lookup LOOKUP) in WM (NULL: no module):
 * the table's, or decided now and cached. */
__attribute__((noinline)) static uint32_t walk_rule(struct bk_space *s,
						    const struct walk_mod *wm, uint64_t pc,
						    uint64_t lookup)
{
	if (!wm) /* unknown code: a sigreturn trampoline outside any module (qemu-user's),
		  * known by its code as the cursor knows it, else the cursor's FP step */
		return decide_rule(s, NULL, pc, lookup);
	if (wm->claimed)
		return R_POOL; /* no fast form: the cursor's step asks the chain */
	uint64_t key = wm->keyhi | (lookup - wm->start);
	if (wm->keyhi != NOKEY) {
		uint64_t e = ft_find(s->ftab, key);
		if (e)
			return (uint32_t)e & UW_FT_RULE_MASK;
	}
	const struct uw_module *m = wm->m;
	struct uw_module tmp;
	struct cfi_table tmp_table;
	if (wm->reg) {
		/* Decided and put while pinned: once the registration is
		 * retired, nobody puts a rule under its id any more. */
		struct uw_pin pin;
		if (!uw_reg_pin(wm->reg, wm->reg_serial, &pin))
			return R_POOL; /* gone meanwhile: the cursor decides */
		uint32_t rule = decide_rule(s, &wm->reg->mod, pc, lookup);
		if (wm->keyhi != NOKEY) {
			uw_space_note_kept(s);
			ft_put(s->ftab, key, rule);
		}
		uw_unpin(&pin);
		return rule;
	}
	if (s->local) {
		struct tgt_local_object obj = wm->obj;
		uint64_t tag;
		if (wm->perm && !uw_local_identify(lookup, &obj, &tag))
			return R_POOL; /* cannot happen: a permanent module */
		m = uw_local_module(s, &obj, &tmp, &tmp_table);
	}
	uint32_t rule = decide_rule(s, m, pc, lookup);
	if (wm->keyhi != NOKEY) {
		uw_space_note_kept(s);
		ft_put(s->ftab, key, rule);
	}
	return rule;
}

/* Memory of the walk: plain loads inside the stack window, target address
 * A at host address A + bias (this thread's own stack: bias 0), the
 * space's read_mem elsewhere. */
struct walk_mem {
	struct bk_space *s;
	uint64_t lo, span;   /* a word at A is inside if A - lo < span */
	uint64_t bias;
};

__attribute__((noinline)) static bool read_other(const struct walk_mem *wm, uint64_t at,
						 uint64_t *v)
{
	uint64_t w = 0;
	if (wm->s->ops.read_mem(wm->s->ctx, at, &w, 8) != 0)
		return false;
	*v = w;
	return true;
}

static inline bool rd(const struct walk_mem *wm, uint64_t at, uint64_t *v)
{
	if (at - wm->lo < wm->span) {
		*v = tgt_local_stack_word(at + wm->bias);
		return true;
	}
	return read_other(wm, at, v);
}

/* The walk's registers, for the slow steps. */
struct walk_regs {
	uint64_t pc, sp, fp;
};

/* The registers the signal frame at SIG_SP saved (all readable: the
 * signal step checked), into *FULL. */
static bool sigframe_regs(const struct walk_mem *mem, const struct arch_info *a, uint64_t sig_sp,
			  struct bk_regs *full)
{
	const struct arch_sigframe *sf = &a->sigframe;
	uint64_t base = sig_sp + sf->ucontext_off + sf->gregs_off, v;
	memset(full->valid, 0, sizeof(full->valid));
	for (unsigned i = 0; i < sf->nregs; i++) {
		if (!rd(mem, base + sf->reg[i].off, &v))
			return false;
		bk_regs_set(full, sf->reg[i].regno, v);
	}
	return true;
}

/* Step over the signal frame at R->sp: every saved register must be
 * readable, as for the cursor; the PC, SP and FP go to R. Out of line: its
 * register set is on the stack only for a signal frame. */
__attribute__((noinline)) static bool step_signal(const struct walk_mem *mem, const struct arch_info *a,
			struct walk_regs *r)
{
	struct bk_regs full;
	return sigframe_regs(mem, a, r->sp, &full) && bk_regs_get(&full, a->pc_reg, &r->pc) &&
	       bk_regs_get(&full, a->sp_reg, &r->sp) && bk_regs_get(&full, a->fp_reg, &r->fp);
}

/* One cursor step from a frame whose registers are all known (FULL),
 * looked up at PC - BACK: for a rule the three registers cannot follow.
 * Returns 1 stepped (R: the caller's PC, SP and FP), 0 outermost, -1 hand
 * over (an error, or the caller's FP not recovered). The step is the one a
 * whole cursor walk would make here: it stands on the same registers. */
static int step_cursor(struct bk_space *s, const struct bk_regs *full, uint64_t back,
		       struct walk_regs *r)
{
	struct bk_cursor bc;
	if (bk_cursor_init(&bc, s, full) != 0)
		return -1;

	struct uw_cursor *c = (struct uw_cursor *)(void *)&bc;
	c->at_pc = back == 0;
	int k = bk_cursor_step(&bc);
	if (k != 1)
		return k == 0 ? 0 : -1;
	r->pc = bk_cursor_pc(&bc);
	r->sp = bk_cursor_sp(&bc);
	/* The walk goes on with the caller's SP as the CFA to exceed: so
	 * must the cursor's (a rule for the SP could part them). */
	if (c->cfa != r->sp)
		return -1;
	return bk_cursor_reg(&bc, s->arch->fp_reg, &r->fp) == 1 ? 1 : -1;
}

/* Apply pool rule X to a frame looked up at PC - BACK whose caller's CFA
 * must exceed CFA_PREV. Returns 1 stepped, 0 outermost, -1 hand over. */
static int step_pool(const struct walk_mem *mem, const struct uw_xrule *x, struct walk_regs *r,
		     uint64_t back, uint64_t cfa_prev)
{
	uint64_t cfa, fp = r->fp;
	switch (x->cfa) {
	case UW_X_CFA_SP:
		cfa = r->sp + (uint64_t)(int64_t)x->cfa_off;
		break;
	case UW_X_CFA_FP:
		cfa = r->fp + (uint64_t)(int64_t)x->cfa_off;
		break;
	case UW_X_CFA_SP_DEREF:
	case UW_X_CFA_FP_DEREF:
		if (!rd(mem, (x->cfa == UW_X_CFA_SP_DEREF ? r->sp : r->fp) + (uint64_t)(int64_t)x->cfa_off,
			&cfa))
			return -1;
		break;
	case UW_X_CFA_CHAIN:
		/* The cursor's frame-pointer step for a frame that called. */
		if (!back)
			return -1; /* interrupted: the cursor's prologue and scan rules */
		if (r->fp == 0)
			return 0; /* the end of the chain (_start clears it) */
		if (r->fp % 8 || r->fp < r->sp)
			return -1;
		cfa = r->fp + 16;
		uint64_t ra;
		if (cfa <= cfa_prev || !rd(mem, r->fp, &fp) || !rd(mem, r->fp + 8, &ra))
			return -1;
		if (ra == 0)
			return -1; /* no record: the cursor's scan looks for the call */
		r->pc = ra;
		r->fp = fp;
		r->sp = cfa;
		return 1;
	default:
		return -1;
	}
	if (cfa <= cfa_prev)
		return -1;
	switch (x->fp) {
	case UW_X_FP_AT_CFA:
		if (!rd(mem, cfa + (uint64_t)(int64_t)x->fp_off, &fp))
			return -1;
		break;
	case UW_X_FP_AT_FP:
		if (!rd(mem, r->fp + (uint64_t)(int64_t)x->fp_off, &fp))
			return -1;
		break;
	case UW_X_FP_VAL_CFA:
		fp = cfa + (uint64_t)(int64_t)x->fp_off;
		break;
	}
	if (!rd(mem, cfa + (uint64_t)(int64_t)x->ra_off, &r->pc))
		return -1;
	if (x->flags & UW_X_RA_SIGNED)
		r->pc = uw_strip_pac(mem->s, r->pc);
	r->fp = fp;
	r->sp = cfa;
	return 1;
}

/* An inline CFA rule in the pool rule form. */
static void inline_rule(uint32_t rule, struct uw_xrule *x)
{
	memset(x, 0, sizeof(*x));
	x->cfa = (rule & 4) ? UW_X_CFA_FP : UW_X_CFA_SP;
	x->cfa_off = (int32_t)(rule & 0x1ff8);
	x->ra_off = -(int32_t)((rule >> 10 & 0x78) + 8);
	x->fp_off = -(int32_t)(rule >> 14 & 0xf8);
	x->fp = x->fp_off ? UW_X_FP_AT_CFA : UW_X_FP_SAME;
}

/* What a walk carries into its slow steps. */
struct walk_ctx {
	struct bk_space *s;
	struct walk_mem mem;
	struct walk_mods mods;
	void **pcs;            /* where the walk's PCs start */
	uint8_t *interrupted;  /* per PC: 1 to look it up at the PC (a frame a signal
				  interrupted, a sigreturn trampoline), or NULL */
};

/* step_cursor from the registers the signal frame at SIG_SP saved; out of
 * line, so that its register set is on the stack only when used. */
__attribute__((noinline)) static int step_cursor_sig(struct walk_ctx *w, uint64_t sig_sp,
						     uint64_t back, struct walk_regs *r)
{
	struct bk_regs sig;
	if (!sigframe_regs(&w->mem, w->s->arch, sig_sp, &sig))
		return -1;
	return step_cursor(w->s, &sig, back, r);
}

/* The general step: the rule for the frame at R->pc (looked up at PC -
 * BACK), applied whatever its kind, the caller's CFA above CFA_PREV.
 * Returns 1 stepped (*SIGNAL: over a signal frame), 0 outermost, -1 hand
 * over. */
static int step_any(struct walk_ctx *w, struct walk_regs *r, uint64_t back, uint64_t cfa_prev,
		    const struct bk_regs *full, uint64_t sig_sp, bool *signal)
{
	*signal = false;
	uint64_t lookup = r->pc - back;
	const struct walk_mod *wm = walk_module(w->s, &w->mods, lookup);
	uint32_t rule = walk_rule(w->s, wm, r->pc, lookup);
	struct uw_xrule x;
	switch (rule & 3) {
	case R_END:
		return 0;
	case R_SIGNAL:
		*signal = true;
		return step_signal(&w->mem, w->s->arch, r) ? 1 : -1;
	case R_CFA:
		inline_rule(rule, &x);
		break;
	default: {
		uint32_t i = rule >> 2;
		if (i >= UW_FT_XRULES)
			return -1;
		/* Pairs with the release that published the entry naming it. */
		atomic_thread_fence(memory_order_acquire);
		x = w->s->ftab->x[i];
		/* No fast form, or no CFI in an interrupted frame: the cursor's
		 * step, if this frame's registers are all known; else the
		 * whole walk goes to the cursor. */
		if (i == 0 || (x.cfa == UW_X_CFA_CHAIN && !back)) {
			if (full)
				return step_cursor(w->s, full, back, r);
			return sig_sp ? step_cursor_sig(w, sig_sp, back, r) : -1;
		}
	}
	}
	return step_pool(&w->mem, &x, r, back, cfa_prev);
}

/* Slow steps from R until the next frame is an ordinary one (a return
 * address whose SP is the CFA just computed), storing PCs from OUT (below
 * END). The first frame is looked up at PC - BACK, its caller's CFA above
 * CFA_PREV; FULL: all its registers, if known (after a signal frame they
 * are read again from it when needed). Returns where the next PC
 * goes; *STATUS is 1 to go on, 0 at the end of the stack, -1 to hand
 * over. */
__attribute__((noinline)) static void **walk_slow(struct walk_ctx *w, struct walk_regs *r,
						  uint64_t back, uint64_t cfa_prev,
						  const struct bk_regs *full, void **out,
						  void **end, int *status)
{
	uint64_t sig_sp = 0; /* after a signal frame: where it is */
	for (;;) {
		bool signal;
		uint64_t sp = r->sp;
		int k = step_any(w, r, back, cfa_prev, full, sig_sp, &signal);
		if (k <= 0) {
			*status = k;
			return out;
		}
		/* The trampoline just stepped over was entered by the handler's
		 * return, not called: it too is named at its PC (if it is one
		 * of the PCs: not the first frame). */
		if (signal && w->interrupted && out > w->pcs)
			w->interrupted[out - 1 - w->pcs] = 1;
		*out++ = (void *)(uintptr_t)r->pc;
		*status = 1;
		if (!signal)
			return out;
		/* The interrupted frame: at its PC, the CFA free to go down,
		 * every register known from the signal frame. */
		if (out == end || r->pc == 0) {
			*status = 0;
			return out;
		}
		if (w->interrupted)
			w->interrupted[out - 1 - w->pcs] = 1;
		back = 0;
		cfa_prev = 0;
		full = NULL;
		sig_sp = sp;
	}
}

/* The table's answer for KEY at a memo miss (decided now if it has none),
 * remembered in the memo entry ME. */
__attribute__((noinline)) static uint64_t walk_miss(struct walk_ctx *w, _Atomic uint64_t *me,
						    uint64_t key, uint64_t pc, uint64_t lookup)
{
	/* walk_rule probes every way of the table, then decides. */
	const struct walk_mod *wm = walk_module(w->s, &w->mods, lookup);
	uint64_t e = key << UW_FT_RULE_BITS | walk_rule(w->s, wm, pc, lookup);
	/* Not registered code's (its ids are reused): the memo is not purged. */
	if (key >> 32 != NOKEY >> 32 && !(wm && wm->reg))
		atomic_store_explicit(me, e, memory_order_relaxed);
	return e;
}

/* The hot loop below takes only frames whose rule is inline and whose CFA
 * lies above their SP and below the top of this thread's stack, while the
 * SP is at least WINDOW above its bottom: then every slot an inline rule
 * names (at most 8 * 31 bytes below the CFA) is inside the stack. The SP
 * only grows there; after a slow step the window is checked again. */
#define WINDOW 256

/* The top of the window for a walk now at SP: the stack's top, or 0 (no
 * hot steps) when SP is not inside [lo + WINDOW, top). */
static inline uint64_t window_top(const struct walk_mem *mem, uint64_t sp)
{
	uint64_t lo = mem->lo, top = mem->lo + mem->span + 7;
	return mem->span > WINDOW && sp - (lo + WINDOW) < top - (lo + WINDOW) ? top : 0;
}

/* The walk from the first ordinary frame: R, storing PCs from OUT below
 * END. Returns the count from PCS or -1. BIAS is the window's (a constant
 * 0 for this thread's own stack, where the compiler drops it). */
static inline __attribute__((always_inline)) int walk_loop(struct walk_ctx *w,
							    _Atomic uint64_t *memo,
							    struct walk_regs r, void **pcs,
							    void **out, void **end, uint64_t bias)
{
	struct bk_space *s = w->s;
	uint64_t pc = r.pc, sp = r.sp, fp = r.fp, top = window_top(&w->mem, sp);
	/* The module of the last frame; keyhi NOKEY: nothing there is cached. */
	uint64_t m_start = 0, m_len = 0, keyhi = NOKEY;
	int k;
	while (out < end) {
		/* The memo's guess, from the SP alone. */
		_Atomic uint64_t *me = &memo[(sp >> 3) % UW_MEMO_WORDS];
		uint64_t e = atomic_load_explicit(me, memory_order_relaxed);
		uint64_t lookup = pc - 1, off = lookup - m_start;
		if (__builtin_expect(off >= m_len, 0)) {
			if (pc == 0)
				break; /* PC 0 (the lookup wraps, so it is never in a module) */
			const struct walk_mod *wm = walk_module(s, &w->mods, lookup);
			m_start = wm ? wm->start : lookup;
			m_len = wm ? wm->len : 0;
			keyhi = wm ? wm->keyhi : NOKEY;
			off = lookup - m_start;
		}
		uint64_t key = keyhi | off;
		if (__builtin_expect(e >> UW_FT_RULE_BITS != key, 0))
			e = walk_miss(w, me, key, pc, lookup);
		uint64_t cfa = ((e & 4) ? fp : sp) + (e & 0x1ff8);
		if (__builtin_expect(!(e & 3) && cfa > sp && cfa < top, 1)) {
			pc = tgt_local_stack_word(cfa - ((e >> 10 & 0x78) + 8) + bias);
			uint64_t fp_back = e >> 14 & 0xf8;
			if (fp_back)
				fp = tgt_local_stack_word(cfa - fp_back + bias);
			sp = cfa;
			*out++ = (void *)(uintptr_t)pc;
			continue;
		}
		struct walk_regs rs = { pc, sp, fp };
		out = walk_slow(w, &rs, 1, sp, NULL, out, end, &k);
		if (k <= 0)
			return k < 0 ? -1 : (int)(out - pcs);
		pc = rs.pc;
		sp = rs.sp;
		fp = rs.fp;
		top = window_top(&w->mem, sp);
	}
	return (int)(out - pcs);
}

/* GCC 12 pairs the PC and SP in a vector register across the loop (SLP),
 * which costs a pack and an unpack per frame. */
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("no-tree-slp-vectorize")))
#endif
int uw_walk_pcs_window(struct bk_space *s, const struct bk_regs *regs, bool at_pc,
		       void **pcs, int max, const struct uw_window *win, uint8_t *interrupted)
{
	const struct arch_info *a = s->arch;
	if (!s->ftab || !s->memo || a->addr_size != 8 || max <= 0)
		return max <= 0 ? 0 : -1;
	struct walk_ctx w; /* not zeroed whole: mods[] is filled as modules are met */
	w.s = s;
	w.mem.s = s;
	w.mem.lo = w.mem.span = w.mem.bias = 0;
	w.mods.n = w.mods.next = 0;
	w.pcs = pcs;
	w.interrupted = interrupted;
	if (interrupted && max > 0)
		memset(interrupted, 0, (size_t)(max < BK_MAX_FRAMES ? max : BK_MAX_FRAMES - 1));
	struct uw_window local;
	if (!win && s->local) {
		uint64_t slo, shi;
		tgt_local_stack(&slo, &shi);
		local = (struct uw_window){ slo, shi - slo, (const uint8_t *)(uintptr_t)slo };
		win = &local;
	}
	if (win && win->len >= 8) {
		w.mem.lo = win->addr;
		w.mem.span = win->len - 7;
		w.mem.bias = (uint64_t)(uintptr_t)win->host - win->addr;
	}
	/* This thread's memo block: by its stack, else the first. */
	_Atomic uint64_t *memo = s->memo;
	if (w.mem.span && s->memo_blocks > 1)
		memo += ((w.mem.lo >> 12) * HASH_MUL >> 32) % s->memo_blocks * UW_MEMO_WORDS;
	/* The cursor stops before a step that would make BK_MAX_FRAMES. */
	if (max > BK_MAX_FRAMES - 1)
		max = BK_MAX_FRAMES - 1;
	void **out = pcs, **end = pcs + max;

	/* The first frame has no CFA below it to exceed. Its PC and SP must
	 * be known; without its FP the walk is the cursor's. */
	struct walk_regs r;
	if (!bk_regs_get(regs, a->pc_reg, &r.pc) || !bk_regs_get(regs, a->sp_reg, &r.sp) ||
	    !bk_regs_get(regs, a->fp_reg, &r.fp))
		return -1;
	int k;
	out = walk_slow(&w, &r, !at_pc, 0, regs, out, end, &k);
	if (k <= 0)
		return k < 0 ? -1 : (int)(out - pcs);
	if (w.mem.bias == 0)
		return walk_loop(&w, memo, r, pcs, out, end, 0);
	return walk_loop(&w, memo, r, pcs, out, end, w.mem.bias);
}

int uw_walk_pcs(struct bk_space *s, const struct bk_regs *regs, bool at_pc, void **pcs,
		int max)
{
	struct uw_window win;
	uint64_t sp;
	if (!s->local && s->window && bk_regs_get(regs, s->arch->sp_reg, &sp) &&
	    s->window(s->ctx, sp, &win))
		return uw_walk_pcs_window(s, regs, at_pc, pcs, max, &win, NULL);
	return uw_walk_pcs_window(s, regs, at_pc, pcs, max, NULL, NULL);
}
