/* The cursor: walks a stack one frame at a time with a chain of steppers.
 *
 * For the current frame (registers in slots, see arch.h) a step asks the
 * chain, in priority order, until a stepper takes the frame (step()):
 *   1. signal frame (100): the PC is in the sigreturn trampoline (known by
 *      the 'S' augmentation of its FDE's CIE, which needs no code bytes,
 *      or, where no FDE covers it, by its code); every register comes
 *      from the saved ucontext, and the interrupted frame is looked up at
 *      its PC;
 *   2. CFI (200): the row in force at the lookup PC (registered code
 *      first, then the module's .eh_frame, .debug_frame, its separate
 *      debug file's .debug_frame);
 *   3. frame pointer (300): no CFI; prologue shapes of an interrupted
 *      frame, the frame record of one that called;
 *   4. scan (400): no CFI, an interrupted frame: a bounded scan of the
 *      stack for a return address;
 * and the user steppers of the space (stepper.c) at their priorities, for
 * the lookup PCs of their ranges. Each says "not mine" for a frame it does
 * not describe; when all do, BK_E_NO_UNWIND.
 * What was decided for a lookup PC is cached (struct uw_crow), so a second
 * walk over the same code reads a few stack slots and nothing else.
 *
 * Invariants, whatever a stepper (a user's included) returns: the CFA
 * strictly increases from frame to frame (c->cfa holds the CFA of the frame
 * last stepped out of), except across a signal frame (else BK_E_LOOP); at
 * most BK_MAX_FRAMES frames; every read of target memory goes through the
 * space's read_mem callback and may fail.
 * Registers saved in memory are read when first needed, not at each step
 * (c->lazy): a walk that only wants PCs reads the return address and the
 * few slots later CFA rules use, not every callee-saved register of every
 * frame. The PC is never lazy.
 * A register whose rule is undefined is absent in the caller, never zero;
 * a register with no rule keeps its value only if the ABI says it is
 * callee-saved. Everything here is AS-safe: no allocation, locks or errno.
 */
#include "unwind.h"

#include "../expr/expr.h"
#include "../target/target.h"

_Static_assert(sizeof(struct uw_cursor) <= sizeof(struct bk_cursor),
	       "struct bk_cursor is too small for the cursor");
_Static_assert(ARCH_MAX_SLOTS <= 64, "slot masks are 64-bit");

#define SLOT_BIT(s) ((uint64_t)1 << (s))

static struct uw_cursor *cur(struct bk_cursor *c)
{
	return (struct uw_cursor *)(void *)c;
}

static const struct uw_cursor *ccur(const struct bk_cursor *c)
{
	return (const struct uw_cursor *)(const void *)c;
}

static int read_word(struct bk_space *s, uint64_t addr, uint64_t *v)
{
	uint64_t w = 0;
	int err = s->ops.read_mem(s->ctx, addr, &w, s->arch->addr_size);
	if (err)
		return err < 0 ? err : BK_E_MEMORY;
	*v = w;
	return 0;
}

/* The value of valid SLOT, reading it now if it is still lazy. */
static int resolve(struct uw_cursor *c, unsigned slot, uint64_t *v)
{
	if (c->lazy & SLOT_BIT(slot)) {
		uint64_t w;
		int err = read_word(c->space, c->regs[slot], &w);
		if (err)
			return err;
		c->regs[slot] = w;
		c->lazy &= ~SLOT_BIT(slot);
	}
	*v = c->regs[slot];
	return 0;
}

/* Read every lazy slot; one that cannot be read is no longer valid. */
void uw_cursor_resolve_all(struct uw_cursor *c)
{
	uint64_t todo = c->lazy & c->valid;
	for (unsigned i = 0; todo >> i; i++) {
		uint64_t v;
		if ((todo >> i & 1) && resolve(c, i, &v) != 0) {
			c->valid &= ~SLOT_BIT(i);
			c->lazy &= ~SLOT_BIT(i);
		}
	}
}

/* The value of SLOT without changing the cursor (for the const accessors). */
static bool peek(const struct uw_cursor *c, unsigned slot, uint64_t *v)
{
	if (slot == ARCH_NO_SLOT || !(c->valid & SLOT_BIT(slot)))
		return false;
	if (c->lazy & SLOT_BIT(slot))
		return read_word(c->space, c->regs[slot], v) == 0;
	*v = c->regs[slot];
	return true;
}

static unsigned pc_slot(const struct arch_info *a)
{
	return arch_slot(a, a->pc_reg);
}

/* ---- Public cursor API ---------------------------------------------------- */

int bk_cursor_init(struct bk_cursor *bc, struct bk_space *s, const struct bk_regs *regs)
{
	struct uw_cursor *c = cur(bc);
	if (!bc || !s || !regs)
		return BK_E_INVAL;
	memset(c, 0, sizeof(*c));
	c->space = s;
	const struct arch_info *a = s->arch;
	for (unsigned i = 0; i < a->nslots; i++) {
		uint64_t v;
		if (bk_regs_get(regs, a->slot_regno[i], &v)) {
			c->regs[i] = v;
			c->valid |= SLOT_BIT(i);
		}
	}
	unsigned pcs = pc_slot(a), sps = arch_slot(a, a->sp_reg);
	if (!(c->valid & SLOT_BIT(pcs)) || !(c->valid & SLOT_BIT(sps)))
		return BK_E_INVAL;
	c->how = BK_HOW_INITIAL;
	c->at_pc = 1;
	return 0;
}

uint64_t bk_cursor_pc(const struct bk_cursor *bc)
{
	const struct uw_cursor *c = ccur(bc);
	return c->regs[pc_slot(c->space->arch)];
}

uint64_t bk_cursor_sp(const struct bk_cursor *bc)
{
	const struct uw_cursor *c = ccur(bc);
	uint64_t v = 0;
	peek(c, arch_slot(c->space->arch, c->space->arch->sp_reg), &v);
	return v;
}

unsigned bk_cursor_stepper(const struct bk_cursor *bc)
{
	return ccur(bc)->stepper;
}

enum bk_frame_how bk_cursor_how(const struct bk_cursor *bc)
{
	return (enum bk_frame_how)ccur(bc)->how;
}

unsigned bk_cursor_depth(const struct bk_cursor *bc)
{
	return ccur(bc)->depth;
}

static bool is_sigtramp_frame(struct bk_space *s, uint64_t pc);

uint64_t bk_cursor_lookup_pc(const struct bk_cursor *bc)
{
	const struct uw_cursor *c = ccur(bc);
	uint64_t pc = bk_cursor_pc(bc);
	/* The sigreturn trampoline was never called: its "return address" is
	 * its first instruction (glibc starts its FDE a byte early for the
	 * unwinders that subtract; symbols do not). */
	if (c->at_pc || pc == 0 || is_sigtramp_frame(c->space, pc))
		return pc;
	return pc - 1;
}

int bk_cursor_reg(const struct bk_cursor *bc, unsigned regno, uint64_t *value)
{
	const struct uw_cursor *c = ccur(bc);
	return peek(c, arch_slot(c->space->arch, regno), value) ? 1 : 0;
}

void bk_cursor_regs(const struct bk_cursor *bc, struct bk_regs *out)
{
	const struct uw_cursor *c = ccur(bc);
	const struct arch_info *a = c->space->arch;
	memset(out->valid, 0, sizeof(out->valid));
	for (unsigned i = 0; i < a->nslots; i++) {
		uint64_t v;
		if (peek(c, i, &v))
			bk_regs_set(out, a->slot_regno[i], v);
	}
}

const char *bk_how_name(enum bk_frame_how how)
{
	static const char *const names[] = {
		[BK_HOW_INITIAL] = "initial", [BK_HOW_CFI] = "cfi", [BK_HOW_SIGNAL] = "signal",
		[BK_HOW_FP] = "fp", [BK_HOW_USER] = "user", [BK_HOW_SCAN] = "scan",
	};
	return (unsigned)how < BK_ARRAY_LEN(names) && names[how] ? names[how] : "?";
}

/* ---- Signal frames -------------------------------------------------------- */

/* PC is in the sigreturn trampoline: at its first instruction, or at a
 * later one (the system call), where a signal can interrupt it too. SP is
 * the same at each of its instructions. */
static bool is_sigtramp(struct bk_space *s, uint64_t pc)
{
	const struct arch_sigframe *sf = &s->arch->sigframe;
	uint8_t code[2 * sizeof(sf->code)];
	size_t n = sf->code_len;
	if (!n)
		return false;
	if (pc < n - 1 || s->ops.read_mem(s->ctx, pc - (n - 1), code, 2 * n - 1) != 0) {
		/* The bytes before PC may be unmapped: the first instruction only. */
		return s->ops.read_mem(s->ctx, pc, code, n) == 0 && !memcmp(code, sf->code, n);
	}
	for (size_t back = 0; back < n; back++)
		if (!memcmp(code + (n - 1) - back, sf->code, n))
			return true;
	return false;
}

static int find_fde(const struct uw_module *m, uint64_t pc, const struct cfi_table **tp,
		    struct cfi_fde *fde, struct cfi_cie *cie);

/* The frame at PC, reached by a return (not interrupted), is the sigreturn
 * trampoline: decided as a step from it decides (uw_decide at PC - 1), by
 * the 'S' augmentation of the CIE of the FDE covering PC - 1, which needs
 * no code bytes (a stack-only snapshot has none), or, where no FDE covers
 * it, by its code. */
static bool is_sigtramp_frame(struct bk_space *s, uint64_t pc)
{
	uint64_t lookup = pc - 1;
	if (!(s->flags & BK_SPACE_NO_CFI)) {
		struct uw_module tmp;
		struct cfi_table tmp_table;
		uint64_t tag = 0;
		struct uw_pin pin = { NULL, 0 };
		const struct uw_module *m = uw_reg_find(s, lookup, &tag, &pin);
		/* The cursor's decision for this lookup PC, when it is cached (the
		 * tag found as decide() finds it): a CFI row means an FDE covers
		 * it whose CIE is no signal frame's. Each caller frame is asked
		 * this before it is stepped: without the cache, an FDE search. */
		struct tgt_local_object obj;
		struct uw_crow crow;
		if (!m && s->local)
			uw_local_identify(lookup, &obj, &tag);
		if (uw_cache_get(s, lookup, tag, &crow) &&
		    (crow.kind == UW_KIND_CFI || crow.kind == UW_KIND_CFI_SLOW)) {
			uw_unpin(&pin);
			return false;
		}
		if (!m)
			m = s->local ? uw_local_find(s, lookup, &tmp, &tmp_table, &tag)
				     : uw_space_find(s, lookup);
		const struct cfi_table *t;
		struct cfi_fde fde;
		struct cfi_cie cie;
		int err = m ? find_fde(m, lookup, &t, &fde, &cie) : BK_E_NOT_FOUND;
		uw_unpin(&pin);
		if (err != BK_E_NOT_FOUND)
			return err == 0 && cie.signal_frame;
	}
	return is_sigtramp(s, pc);
}

/* Every saved register from the ucontext at SP; the frame after it is
 * looked up at its PC (it was interrupted, not calling). */
static int step_signal(struct uw_cursor *c)
{
	struct bk_space *s = c->space;
	const struct arch_info *a = s->arch;
	const struct arch_sigframe *sf = &a->sigframe;
	uint64_t sp;
	int rerr = resolve(c, arch_slot(a, a->sp_reg), &sp);
	if (rerr)
		return rerr;
	uint64_t gregs = sp + sf->ucontext_off + sf->gregs_off;
	uint64_t regs[ARCH_MAX_SLOTS];
	uint64_t valid = 0;

	for (unsigned i = 0; i < sf->nregs; i++) {
		unsigned slot = arch_slot(a, sf->reg[i].regno);
		if (slot == ARCH_NO_SLOT)
			continue;
		int err = read_word(s, gregs + sf->reg[i].off, &regs[slot]);
		if (err)
			return err;
		valid |= SLOT_BIT(slot);
	}
	/* AArch64's d8-d15 from the fpsimd record (those not found are not
	 * recovered, as a ucontext without the record has none). */
	uint64_t fp[ARCH_SIGFRAME_FP];
	struct base_mem mem = { s->ops.read_mem, s->ctx };
	unsigned nfp = arch_sigframe_fp(a, sp + sf->ucontext_off, &mem, fp);
	for (unsigned i = 0; i < nfp; i++) {
		unsigned slot = arch_slot(a, sf->fp_regno + i);
		if (slot != ARCH_NO_SLOT) {
			regs[slot] = fp[i];
			valid |= SLOT_BIT(slot);
		}
	}
	c->cfa = sp;
	memcpy(c->regs, regs, sizeof(regs));
	c->valid = valid;
	c->lazy = 0;
	c->how = BK_HOW_SIGNAL;
	c->at_pc = 1;
	return 1;
}

/* ---- CFI ------------------------------------------------------------------ */

/* Compile ROW (from SEC/CIE) for the space's architecture. */
static void compile_row(const struct arch_info *a, const struct cfi_section *sec,
			const struct cfi_cie *cie, const struct cfi_row *row, struct uw_crow *out)
{
	memset(out, 0, offsetof(struct uw_crow, saved));
	out->kind = UW_KIND_CFI;
	out->ra_index = 0xff;
	out->ra_slot = (uint8_t)arch_slot(a, (unsigned)cie->ra_reg);
	out->ra_signed = row->ra_sign_state & 1;
	(void)sec;
	/* An undefined return address makes the frame the outermost one,
	 * whatever the rest of the row says (the CFA is not needed). */
	const struct cfi_rule *ra = cfi_row_rule(row, (unsigned)cie->ra_reg);
	if (ra && ra->kind == BK_RULE_UNDEFINED)
		out->ra_undefined = 1;
	if (row->cfa.kind != BK_RULE_CFA_REG_OFFSET || arch_slot(a, row->cfa.reg) == ARCH_NO_SLOT) {
		out->kind = UW_KIND_CFI_SLOW;
		return;
	}
	out->cfa_slot = (uint8_t)arch_slot(a, row->cfa.reg);
	out->cfa_off = row->cfa.value;
	for (unsigned i = 0; i < row->nrules; i++) {
		const struct cfi_rule *r = &row->rule[i];
		unsigned slot = arch_slot(a, row->regno[i]);
		if (slot == ARCH_NO_SLOT)
			continue; /* a register the unwinder does not track */
		if (r->kind == BK_RULE_EXPRESSION || r->kind == BK_RULE_VAL_EXPRESSION ||
		    out->nsaved == UW_CROW_SAVED || r->value != (int32_t)r->value) {
			out->kind = UW_KIND_CFI_SLOW;
			return;
		}
		unsigned rs = 0;
		if (r->kind == BK_RULE_REGISTER) {
			rs = arch_slot(a, r->reg);
			if (rs == ARCH_NO_SLOT) {
				out->kind = UW_KIND_CFI_SLOW;
				return;
			}
		}
		out->ruled |= SLOT_BIT(slot);
		if (slot == out->ra_slot)
			out->ra_index = out->nsaved;
		out->saved[out->nsaved].slot = (uint8_t)slot;
		out->saved[out->nsaved].kind = r->kind;
		out->saved[out->nsaved].reg_slot = (uint8_t)rs;
		out->saved[out->nsaved].off = (int32_t)r->value;
		out->nsaved++;
	}
}

struct eval_ctx {
	const struct uw_cursor *c;
};

static int eval_read_reg(void *ctx, unsigned regno, uint64_t *value)
{
	const struct uw_cursor *c = ((struct eval_ctx *)ctx)->c;
	unsigned slot = arch_slot(c->space->arch, regno);
	if (slot == ARCH_NO_SLOT || !(c->valid & SLOT_BIT(slot)))
		return BK_E_BAD_REG;
	*value = c->regs[slot];
	return 0;
}

/* The FDE covering lookup PC in a module, its CIE and table: the module's
 * tables in order. 0, BK_E_NOT_FOUND, or a decode error. */
static int find_fde(const struct uw_module *m, uint64_t pc, const struct cfi_table **tp,
		    struct cfi_fde *fde, struct cfi_cie *cie)
{
	const struct cfi_table *tables[3] = { m->eh_table, m->debug_table, m->debug_file_table };
	uint64_t link_pc = pc - (uint64_t)m->bias;
	for (unsigned i = 0; i < 3; i++) {
		int err = tables[i] ? cfi_table_find(tables[i], link_pc, fde, cie) : BK_E_NOT_FOUND;
		if (err == BK_E_NOT_FOUND)
			continue;
		*tp = tables[i];
		return err;
	}
	return BK_E_NOT_FOUND;
}

/* The row for a lookup PC in a module, from the FDE find_fde finds. */
static int find_row(const struct uw_module *m, uint64_t pc, const struct cfi_table **tp,
		    struct cfi_cie *cie, struct cfi_row *row)
{
	struct cfi_fde fde;
	int err = find_fde(m, pc, tp, &fde, cie);
	if (!err)
		err = cfi_row_at(&(*tp)->sec, cie, &fde, pc - (uint64_t)m->bias, row);
	return err;
}

/* Apply a full row (the slow path: expressions, untracked CFA registers). */
static int apply_full_row(struct uw_cursor *c, const struct cfi_section *sec,
			  const struct cfi_cie *cie, const struct cfi_row *row,
			  uint64_t *regs, uint64_t *valid, uint64_t *cfa)
{
	struct bk_space *s = c->space;
	const struct arch_info *a = s->arch;
	struct eval_ctx ectx = { c };
	struct expr_env env = {
		.addr_size = a->addr_size,
		.read_reg = eval_read_reg,
		.reg_ctx = &ectx,
		.mem = { s->ops.read_mem, s->ctx },
	};
	int err;

	if (row->cfa.kind == BK_RULE_CFA_REG_OFFSET) {
		unsigned slot = arch_slot(a, row->cfa.reg);
		if (slot == ARCH_NO_SLOT || !(c->valid & SLOT_BIT(slot)))
			return BK_E_BAD_REG;
		*cfa = c->regs[slot] + (uint64_t)row->cfa.value;
	} else if (row->cfa.kind == BK_RULE_CFA_EXPRESSION) {
		if ((err = expr_eval(cfi_rule_expr(sec, &row->cfa), row->cfa.expr_len, &env, NULL, cfa)))
			return err;
	} else {
		return BK_CORRUPT;
	}

	/* A register other than the return address whose value cannot be
	 * had (a failed read or evaluation) is not recovered; the step goes
	 * on, as it does for a lazy slot that proves unreadable. */
	unsigned ra_slot = arch_slot(a, (unsigned)cie->ra_reg);
	uint64_t ruled = 0;
	for (unsigned i = 0; i < row->nrules; i++) {
		const struct cfi_rule *r = &row->rule[i];
		unsigned slot = arch_slot(a, row->regno[i]);
		if (slot == ARCH_NO_SLOT)
			continue;
		ruled |= SLOT_BIT(slot);
		uint64_t v, addr;
		err = 0;
		switch (r->kind) {
		case BK_RULE_UNDEFINED:
			continue;
		case BK_RULE_SAME_VALUE:
			if (!(c->valid & SLOT_BIT(slot)))
				continue;
			v = c->regs[slot];
			break;
		case BK_RULE_OFFSET:
			err = read_word(s, *cfa + (uint64_t)r->value, &v);
			break;
		case BK_RULE_VAL_OFFSET:
			v = *cfa + (uint64_t)r->value;
			break;
		case BK_RULE_REGISTER: {
			unsigned rs = arch_slot(a, r->reg);
			if (rs == ARCH_NO_SLOT || !(c->valid & SLOT_BIT(rs)))
				continue;
			v = c->regs[rs];
			break;
		}
		case BK_RULE_EXPRESSION:
			if (!(err = expr_eval(cfi_rule_expr(sec, r), r->expr_len, &env, cfa, &addr)))
				err = read_word(s, addr, &v);
			break;
		case BK_RULE_VAL_EXPRESSION:
			err = expr_eval(cfi_rule_expr(sec, r), r->expr_len, &env, cfa, &v);
			break;
		default:
			continue;
		}
		if (err) {
			if (slot == ra_slot)
				return err;
			continue;
		}
		regs[slot] = v;
		*valid |= SLOT_BIT(slot);
	}
	/* Registers without a rule: callee-saved ones keep their value. */
	uint64_t keep = a->callee_saved_slots & ~ruled & c->valid;
	for (unsigned i = 0; i < a->nslots; i++)
		if (keep & SLOT_BIT(i))
			regs[i] = c->regs[i];
	*valid |= keep;
	return 0;
}

/* Strip AArch64 pointer authentication from a signed return address: in
 * this process as its own CPU does (tgt_local_strip_pac: xpaclri, which
 * knows the address size and is a no-op without PAuth); elsewhere user
 * space addresses have their top 16 bits clear (48-bit VA). */
uint64_t uw_strip_pac(const struct bk_space *s, uint64_t ra)
{
	if (s->local)
		return tgt_local_strip_pac(ra);
	if (s->pac_mask)
		return ra & ~s->pac_mask; /* a user address: the bits above are 0 */
	return ra & 0x0000ffffffffffffull;
}

/* Apply a compiled row in place: the fast path. New values are computed
 * from the callee's registers first, then written; callee-saved registers
 * without a rule already hold their value and are only kept valid. */
static int step_fast(struct uw_cursor *c, const struct uw_crow *r)
{
	struct bk_space *s = c->space;
	const struct arch_info *a = s->arch;
	uint64_t vals[UW_CROW_SAVED];
	uint64_t set = 0, lazy_new = 0, cfa, base;
	int err;

	if (r->ra_undefined)
		return 0;
	if (!(c->valid & SLOT_BIT(r->cfa_slot)))
		return BK_E_BAD_REG;
	if ((err = resolve(c, r->cfa_slot, &base)))
		return err;
	cfa = base + (uint64_t)r->cfa_off;
	for (unsigned i = 0; i < r->nsaved; i++) {
		unsigned slot = r->saved[i].slot, from;
		switch (r->saved[i].kind) {
		case BK_RULE_OFFSET:
			/* Remember where it is; only the return address is read now. */
			vals[i] = cfa + (uint64_t)(int64_t)r->saved[i].off;
			if (slot == r->ra_slot) {
				if ((err = read_word(s, vals[i], &vals[i])))
					return err;
			} else {
				lazy_new |= SLOT_BIT(slot);
			}
			break;
		case BK_RULE_VAL_OFFSET:
			vals[i] = cfa + (uint64_t)(int64_t)r->saved[i].off;
			break;
		case BK_RULE_SAME_VALUE:
		case BK_RULE_REGISTER:
			from = r->saved[i].kind == BK_RULE_REGISTER ? r->saved[i].reg_slot : slot;
			if (!(c->valid & SLOT_BIT(from)))
				continue;
			if (slot == r->ra_slot && (err = resolve(c, from, &vals[i])))
				return err;
			vals[i] = c->regs[from];
			if (c->lazy & SLOT_BIT(from))
				lazy_new |= SLOT_BIT(slot);
			break;
		default: /* undefined */
			continue;
		}
		set |= (uint64_t)1 << i;
	}

	/* The return address: the RA column's rule, or with no rule the RA
	 * register unchanged (an AArch64 leaf). */
	uint64_t ra;
	if (r->ra_slot == ARCH_NO_SLOT)
		return BK_E_BAD_REG;
	if (r->ra_index != 0xff) {
		if (!(set >> r->ra_index & 1))
			return 0;
		ra = vals[r->ra_index];
	} else if (c->valid & SLOT_BIT(r->ra_slot)) {
		if ((err = resolve(c, r->ra_slot, &ra)))
			return err;
	} else {
		return 0;
	}
	if (c->depth > 0 && c->how != BK_HOW_SIGNAL && cfa <= c->cfa)
		return BK_E_LOOP;

	uint64_t valid = c->valid & a->callee_saved_slots & ~r->ruled;
	uint64_t lazy = c->lazy & valid;
	for (unsigned i = 0; i < r->nsaved; i++)
		if (set >> i & 1) {
			unsigned slot = r->saved[i].slot;
			c->regs[slot] = vals[i];
			valid |= SLOT_BIT(slot);
			lazy = (lazy & ~SLOT_BIT(slot)) | (lazy_new & SLOT_BIT(slot));
		}
	unsigned sps = arch_slot(a, a->sp_reg), pcs = pc_slot(a);
	if (!(r->ruled & SLOT_BIT(sps))) {
		c->regs[sps] = cfa;
		valid |= SLOT_BIT(sps);
		lazy &= ~SLOT_BIT(sps);
	}
	c->regs[pcs] = r->ra_signed ? uw_strip_pac(s, ra) : ra;
	valid |= SLOT_BIT(pcs);
	lazy &= ~SLOT_BIT(pcs);
	c->valid = valid;
	c->lazy = lazy;
	c->cfa = cfa;
	c->how = BK_HOW_CFI;
	c->at_pc = 0;
	return 1;
}

/* The caller's frame from the current one and how its registers are found.
 * Returns 1 (stepped), 0 (outermost: the RA is undefined) or an error. */
static int step_cfi(struct uw_cursor *c, const struct uw_crow *crow, const struct cfi_section *sec,
		    const struct cfi_cie *cie, const struct cfi_row *row)
{
	const struct arch_info *a = c->space->arch;
	uint64_t regs[ARCH_MAX_SLOTS];
	uint64_t valid = 0, cfa;
	int err;

	if (crow->ra_undefined)
		return 0;
	uw_cursor_resolve_all(c); /* expressions and the ABI defaults want values */
	if ((err = apply_full_row(c, sec, cie, row, regs, &valid, &cfa)))
		return err;

	/* The caller's SP is the CFA unless a rule says otherwise (DWARF 5
	 * §6.4: the CFA is the SP at the call site). */
	unsigned sps = arch_slot(a, a->sp_reg);
	if (!(crow->ruled & SLOT_BIT(sps))) {
		regs[sps] = cfa;
		valid |= SLOT_BIT(sps);
	}
	/* The caller's PC is the return address: the RA column's value, or,
	 * with no rule for it, the RA register unchanged (an AArch64 leaf). */
	uint64_t ra;
	if (crow->ra_slot == ARCH_NO_SLOT)
		return BK_E_BAD_REG;
	if (valid & SLOT_BIT(crow->ra_slot))
		ra = regs[crow->ra_slot];
	else if (!(crow->ruled & SLOT_BIT(crow->ra_slot)) && (c->valid & SLOT_BIT(crow->ra_slot)))
		ra = c->regs[crow->ra_slot];
	else
		return 0; /* no return address: the outermost frame */
	if (crow->ra_signed)
		ra = uw_strip_pac(c->space, ra);
	unsigned pcs = pc_slot(a);
	regs[pcs] = ra;
	valid |= SLOT_BIT(pcs);

	if (c->depth > 0 && c->how != BK_HOW_SIGNAL && cfa <= c->cfa)
		return BK_E_LOOP;
	c->cfa = cfa;
	memcpy(c->regs, regs, sizeof(regs));
	c->valid = valid;
	c->lazy = 0;
	c->how = BK_HOW_CFI;
	c->at_pc = 0;
	return 1;
}

/* ---- Without CFI: frame pointers, then a scan ------------------------------ */

/* True when the instruction ending right before RA is a call: x86-64
 * `call rel32` (e8) or `call r/m64` (ff /2 with any ModRM/SIB/displacement
 * form, optionally after a REX prefix); AArch64 BL, BLR and the
 * pointer-authenticating BLRA* forms. */
static bool follows_call(struct bk_space *s, uint64_t ra)
{
	if (s->arch->arch == BK_ARCH_AARCH64) {
		uint32_t insn;
		if (ra < 4 || s->ops.read_mem(s->ctx, ra - 4, &insn, 4) != 0)
			return false;
		return (insn & 0xfc000000u) == 0x94000000u ||  /* BL */
		       (insn & 0xfffffc1fu) == 0xd63f0000u ||  /* BLR */
		       (insn & 0xfefff800u) == 0xd63f0800u;    /* BLRAA/BLRAB(Z) */
	}
	uint8_t code[8];
	if (ra < sizeof(code) || s->ops.read_mem(s->ctx, ra - sizeof(code), code, sizeof(code)) != 0)
		return false;
	const uint8_t *end = code + sizeof(code);
	if (end[-5] == 0xe8)
		return true;
	for (unsigned k = 2; k <= 7; k++) {
		const uint8_t *p = end - k;
		if (p[0] != 0xff || ((p[1] >> 3) & 7) != 2)
			continue;
		unsigned mod = p[1] >> 6, rm = p[1] & 7, len = 2;
		if (mod != 3 && rm == 4) {
			len++; /* SIB */
			if (mod == 0 && (p[2] & 7) == 5)
				len += 4;
		}
		if (mod == 1)
			len += 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			len += 4;
		if (len == k)
			return true;
	}
	return false;
}

/* The target of the direct call ending right before RA: x86-64 `call
 * rel32`, AArch64 `BL`. False for indirect calls and anything else. */
static bool call_target(struct bk_space *s, uint64_t ra, uint64_t *target)
{
	if (s->arch->arch == BK_ARCH_AARCH64) {
		uint32_t insn;
		if (ra < 4 || s->ops.read_mem(s->ctx, ra - 4, &insn, 4) != 0 ||
		    (insn & 0xfc000000u) != 0x94000000u)
			return false;
		*target = ra - 4 + (uint64_t)(base_sext(insn & 0x3ffffffu, 26) * 4);
		return true;
	}
	uint8_t code[5];
	if (ra < 5 || s->ops.read_mem(s->ctx, ra - 5, code, 5) != 0 || code[0] != 0xe8)
		return false;
	uint32_t rel = (uint32_t)code[1] | (uint32_t)code[2] << 8 | (uint32_t)code[3] << 16 |
		       (uint32_t)code[4] << 24;
	*target = ra + (uint64_t)base_sext(rel, 32);
	return true;
}

/* Whether the call that returns to RA enters the function holding PC: its
 * direct target at or before PC (within 64 KiB), or a stub there that
 * jumps on to such code (jmp rel32 / rel8: an alias like musl's
 * __syscall_cp, a thunk), one jump followed. */
static bool calls_into(struct bk_space *s, uint64_t ra, uint64_t pc)
{
	uint64_t target;
	if (!call_target(s, ra, &target))
		return false;
	if (target <= pc && pc - target < 0x10000)
		return true;
	if (s->arch->arch != BK_ARCH_X86_64)
		return false;
	uint8_t j[5];
	if (s->ops.read_mem(s->ctx, target, j, 2) != 0)
		return false;
	uint64_t to;
	if (j[0] == 0xeb)
		to = target + 2 + (uint64_t)base_sext(j[1], 8);
	else if (j[0] == 0xe9 && s->ops.read_mem(s->ctx, target, j, 5) == 0)
		to = target + 5 + (uint64_t)base_sext((uint32_t)j[1] | (uint32_t)j[2] << 8 |
						      (uint32_t)j[3] << 16 | (uint32_t)j[4] << 24, 32);
	else
		return false;
	return to <= pc && pc - to < 0x10000;
}

/* A value that could be a return address: inside a known module, right
 * after a call. */
static bool plausible_ra(struct bk_space *s, uint64_t ra)
{
	if (ra == 0)
		return false;
	struct uw_pin pin = { NULL, 0 };
	uint64_t rtag;
	if (uw_reg_find(s, ra - 1, &rtag, &pin)) {
		uw_unpin(&pin);
		return follows_call(s, ra);
	}
	if (s->local) {
		struct uw_module tmp;
		struct cfi_table tmp_table;
		uint64_t tag;
		if (!uw_local_find(s, ra - 1, &tmp, &tmp_table, &tag))
			return false;
	} else if (!uw_space_find(s, ra - 1)) {
		return false;
	}
	return follows_call(s, ra);
}

/* Make the caller frame: CFA, return address, and optionally the saved
 * frame pointer; callee-saved registers are assumed untouched (nothing says
 * otherwise without CFI). */
static int finish_fallback(struct uw_cursor *c, uint64_t cfa, uint64_t ra, bool fp_saved,
			   uint64_t fp, uint8_t how)
{
	const struct arch_info *a = c->space->arch;
	unsigned sps = arch_slot(a, a->sp_reg), fps = arch_slot(a, a->fp_reg), pcs = pc_slot(a);
	if (c->depth > 0 && c->how != BK_HOW_SIGNAL && cfa <= c->cfa)
		return BK_E_LOOP;
	uint64_t valid = a->callee_saved_slots & c->valid;
	uint64_t lazy = c->lazy & valid;
	if (fp_saved) {
		c->regs[fps] = fp;
		valid |= SLOT_BIT(fps);
		lazy &= ~SLOT_BIT(fps);
	}
	c->regs[sps] = cfa;
	c->regs[pcs] = a->arch == BK_ARCH_AARCH64 ? uw_strip_pac(c->space, ra) : ra;
	valid |= SLOT_BIT(sps) | SLOT_BIT(pcs);
	lazy &= ~(SLOT_BIT(sps) | SLOT_BIT(pcs));
	c->valid = valid;
	c->lazy = lazy;
	c->cfa = cfa;
	c->how = how;
	c->at_pc = 0;
	return 1;
}

#define SCAN_WORDS 64

/* AArch64 instructions that leave SP and x30 alone, met between a
 * function's entry and a PC where its return address is still in x30:
 * HINT (nop, bti, paciasp/pacibsp, autia1716: pointer authentication
 * changes x30's PAC bits only, which are stripped), and a PLT stub's
 * adrp x16, ldr x17, [x16, #n], add x16, x16, #n. */
static bool a64_keeps_lr(uint32_t insn)
{
	return (insn & 0xfffff01fu) == 0xd503201fu || /* HINT #n */
	       (insn & 0x9f00001fu) == 0x90000010u || /* adrp x16, ... */
	       (insn & 0xffc003ffu) == 0xf9400211u || /* ldr x17, [x16, #n] */
	       (insn & 0xff8003ffu) == 0x91000210u;   /* add x16, x16, #n */
}

#define A64_ENTRY_INSNS 16

/* The target of an AArch64 `blr Xn` ending right before RA, if Xn is
 * known in the current frame (an interrupted one: every general register
 * is) and is not x30, which the call itself overwrote. Checked further by
 * the caller: the code from there to the PC must keep x30. */
static bool blr_target(const struct uw_cursor *c, uint64_t ra, uint64_t *target)
{
	struct bk_space *s = c->space;
	uint32_t insn;
	if (ra < 4 || s->ops.read_mem(s->ctx, ra - 4, &insn, 4) != 0 ||
	    (insn & 0xfffffc1fu) != 0xd63f0000u)
		return false;
	unsigned rn = (insn >> 5) & 31, slot = arch_slot(s->arch, rn);
	if (rn == 30 || slot == ARCH_NO_SLOT || !(c->valid & SLOT_BIT(slot)) ||
	    (c->lazy & SLOT_BIT(slot)))
		return false;
	*target = c->regs[slot];
	return true;
}

/* PC is inside an AArch64 PLT stub, binutils' forms: [bti c] adrp x16, P;
 * ldr x17, [x16, #o]; add x16, x16, #o; [autia1716 | autib1716]; br x17
 * (BTI and PAC variants). Nothing there touches SP or x30: the return
 * address is in x30. The lazy-binding header PLT0 stores x16 and x30 with
 * `stp x16, x30, [sp, #-16]!` first: *PUSHED when PC is past that store
 * (then it is at SP + 8 and the CFA SP + 16). */
static bool a64_in_plt(struct bk_space *s, uint64_t pc, bool *pushed)
{
	uint8_t b[4 * 12]; /* 6 instructions before PC, PC and 5 after */
	if (pc < 24 || s->ops.read_mem(s->ctx, pc - 24, b, sizeof(b)) != 0)
		return false;
	uint32_t w[12];
	for (unsigned i = 0; i < 12; i++)
		w[i] = (uint32_t)base_rd_le(b + 4 * i, 4);
	int br = -1;
	for (int i = 6; i < 12 && br < 0; i++)
		if (w[i] == 0xd61f0220u) /* br x17 */
			br = i;
	if (br < 0)
		return false;
	int i = br - 1;
	if (w[i] == 0xd503219fu || w[i] == 0xd50321dfu) /* autia1716, autib1716 */
		i--;
	if ((w[i] & 0xff8003ffu) != 0x91000210u || (w[i - 1] & 0xffc003ffu) != 0xf9400211u ||
	    (w[i - 2] & 0x9f00001fu) != 0x90000010u)
		return false;
	int first = i - 2;
	if (w[first - 1] == 0xd503245fu) /* bti c */
		first--;
	*pushed = false;
	if (w[first - 1] == 0xa9bf7bf0u) { /* stp x16, x30, [sp, #-16]! */
		first--;
		*pushed = 6 > first;
	}
	return 6 >= first;
}

/* AArch64, a frame interrupted where no CFI covers the PC (a PLT stub, a
 * leaf or a prologue without CFI): the return address may still be in
 * x30. A PLT stub is known by its code (a64_in_plt). Elsewhere, decided
 * from the code too, as the x86-64 rule reads push %rbp: x30
 * must follow a call whose target is at most A64_ENTRY_INSNS instructions
 * before the PC (a BL's, or a BLR's register if it still holds one
 * there: ld.so calls _init so), and the code from there to the PC only
 * a64_keeps_lr instructions, with at most one `stp x29, x30, [sp, #-N]!`
 * (then the return address and the caller's x29 are in that record at
 * SP, and the CFA is SP + N) and `mov x29, sp` after it. Returns 1
 * stepped, 0 not this case, or an error. */
static int step_a64_entry(struct uw_cursor *c, uint64_t sp, uint64_t pc)
{
	struct bk_space *s = c->space;
	unsigned lrs = arch_slot(s->arch, 30);
	uint64_t lr, ra, target;
	if (!(c->valid & SLOT_BIT(lrs)) || resolve(c, lrs, &lr) != 0)
		return 0;
	bool pushed;
	if (a64_in_plt(s, pc, &pushed)) {
		if (!pushed)
			return finish_fallback(c, sp, lr, false, 0, BK_HOW_FP);
		int err = read_word(s, sp + 8, &lr);
		return err ? err : finish_fallback(c, sp + 16, lr, false, 0, BK_HOW_FP);
	}
	ra = uw_strip_pac(s, lr);
	if (!(call_target(s, ra, &target) || blr_target(c, ra, &target)) || target > pc ||
	    pc - target > 4 * A64_ENTRY_INSNS ||
	    (pc - target) % 4 || !plausible_ra(s, ra))
		return 0;
	uint8_t code[4 * A64_ENTRY_INSNS];
	size_t n = (size_t)(pc - target) / 4;
	if (n && s->ops.read_mem(s->ctx, target, code, 4 * n) != 0)
		return 0;
	int64_t frame = -1; /* the record's size, once pushed */
	for (size_t i = 0; i < n; i++) {
		uint32_t insn = (uint32_t)base_rd_le(code + 4 * i, 4);
		if (a64_keeps_lr(insn))
			continue;
		if (frame < 0 && (insn & 0xffc07fffu) == 0xa9807bfdu) { /* stp x29, x30, [sp, #imm]! */
			int64_t imm = base_sext((insn >> 15) & 0x7f, 7) * 8;
			if (imm >= 0)
				return 0;
			frame = -imm;
			continue;
		}
		if (frame >= 0 && insn == 0x910003fdu) /* mov x29, sp */
			continue;
		return 0;
	}
	if (frame < 0)
		return finish_fallback(c, sp, lr, false, 0, BK_HOW_FP);
	uint64_t fp;
	int err;
	if ((err = read_word(s, sp, &fp)) || (err = read_word(s, sp + 8, &lr)))
		return err;
	return finish_fallback(c, sp + (uint64_t)frame, lr, true, fp, BK_HOW_FP);
}

/* The frame-pointer stepper: no CFI covers the PC. x86-64 at a function's
 * first instruction (push %rbp, maybe after endbr64): the return address is
 * at [rsp]; right after the push, at [rsp+8] with the caller's rbp at
 * [rsp]; the same in the epilogue, at pop %rbp before a ret, and at the
 * ret itself (return address at [rsp]). AArch64 in a PLT stub, a leaf or a prologue: the return address
 * still in x30 (step_a64_entry). Those are for interrupted frames; for a
 * frame that called, the frame record at the frame pointer: saved fp at
 * [fp], return address at [fp+8] (x86-64 rbp; AArch64 x29, whose record
 * holds x29 and x30), the end of the stack at a frame pointer of 0.
 * Anything else is not its frame (BK_STEP_NOT_MINE). */
/* What the frame-pointer and scan steppers start from: the frame's SP in
 * *SP; its frame pointer valid only if it could be read (unreadable: no
 * chain to follow). */
static int fallback_start(struct uw_cursor *c, uint64_t *sp)
{
	const struct arch_info *a = c->space->arch;
	unsigned fps = arch_slot(a, a->fp_reg);
	uint64_t ignored;
	int err = resolve(c, arch_slot(a, a->sp_reg), sp);
	if (!err && (c->valid & SLOT_BIT(fps)) && resolve(c, fps, &ignored) != 0)
		c->valid &= ~SLOT_BIT(fps);
	return err;
}

/* The frame record at FRAME (x86-64 rbp, AArch64 x29) of a frame whose SP
 * is SP: aligned, not below SP, both words readable: *FP (saved) and *RA. */
static bool frame_record(struct uw_cursor *c, uint64_t frame, uint64_t sp, uint64_t *fp,
			 uint64_t *ra)
{
	struct bk_space *s = c->space;
	uint64_t w = s->arch->addr_size;
	return frame % w == 0 && frame >= sp && read_word(s, frame, fp) == 0 &&
	       read_word(s, frame + w, ra) == 0;
}

static int step_fp(struct uw_cursor *c)
{
	struct bk_space *s = c->space;
	const struct arch_info *a = s->arch;
	unsigned fps = arch_slot(a, a->fp_reg), pcs = pc_slot(a);
	uint64_t sp, pc = c->regs[pcs], w = a->addr_size;
	uint64_t ra, fp;
	int err;

	if ((err = fallback_start(c, &sp)))
		return err;

	if (a->arch == BK_ARCH_X86_64 && c->at_pc) {
		uint8_t code[5] = { 0 };
		uint8_t before = 0;
		s->ops.read_mem(s->ctx, pc, code, sizeof(code));
		s->ops.read_mem(s->ctx, pc - 1, &before, 1);
		bool entry = code[0] == 0x55 ||
			     (code[0] == 0xf3 && code[1] == 0x0f && code[2] == 0x1e &&
			      code[3] == 0xfa && code[4] == 0x55);
		bool after_push = before == 0x55 && code[0] == 0x48 && code[1] == 0x89 &&
				  code[2] == 0xe5;
		/* The epilogue, mirrored: at a ret (ret, rep ret, ret imm16) the
		 * return address is at [rsp] and rbp is already the caller's;
		 * at pop %rbp; ret the caller's rbp is at [rsp], the return
		 * address at [rsp+8]. (Following rbp there would skip the
		 * caller, which the scan can tell only when the call was direct.) */
		bool at_ret = code[0] == 0xc3 || code[0] == 0xc2 ||
			      (code[0] == 0xf3 && code[1] == 0xc3);
		bool pop_ret = code[0] == 0x5d &&
			       (code[1] == 0xc3 || (code[1] == 0xf3 && code[2] == 0xc3));
		if (entry) {
			if ((err = read_word(s, sp, &ra)))
				return err;
			return finish_fallback(c, sp + 8, ra, false, 0, BK_HOW_FP);
		}
		if (after_push || pop_ret) {
			if ((err = read_word(s, sp, &fp)) || (err = read_word(s, sp + 8, &ra)))
				return err;
			return finish_fallback(c, sp + 16, ra, true, fp, BK_HOW_FP);
		}
		if (at_ret) {
			if ((err = read_word(s, sp, &ra)))
				return err;
			return finish_fallback(c, sp + 8, ra, false, 0, BK_HOW_FP);
		}
	}

	if (a->arch == BK_ARCH_AARCH64 && c->at_pc) {
		int k = step_a64_entry(c, sp, pc);
		if (k != 0)
			return k;
	}
	if (c->at_pc)
		return BK_STEP_NOT_MINE; /* the scan stepper's */

	uint64_t frame = c->regs[fps];
	if (!(c->valid & SLOT_BIT(fps)) || frame == 0)
		return 0; /* the end of the frame-pointer chain (_start clears it) */
	/* A record without a return address (0) is not one: rbp was not this
	 * function's (the scan stepper looks for its caller's call). */
	if (frame_record(c, frame, sp, &fp, &ra) && ra != 0)
		return finish_fallback(c, frame + 2 * w, ra, true, fp, BK_HOW_FP);
	return BK_STEP_NOT_MINE;
}

/* The first word of the stack from SP (below END, within SCAN_WORDS words)
 * that is a plausible return address and, when CALLING is set, whose call
 * enters the function holding CALL_PC: the caller's frame from it, or
 * BK_STEP_NOT_MINE. */
static int scan_for_ra(struct uw_cursor *c, uint64_t sp, uint64_t end, bool calling,
		       uint64_t call_pc)
{
	struct bk_space *s = c->space;
	uint64_t w = s->arch->addr_size;
	for (unsigned i = 0; i < SCAN_WORDS; i++) {
		uint64_t slot = sp + i * w, v;
		if (slot >= end || read_word(s, slot, &v))
			break;
		if ((!calling || calls_into(s, v, call_pc)) && plausible_ra(s, v))
			return finish_fallback(c, slot + w, v, false, 0, BK_HOW_SCAN);
	}
	return BK_STEP_NOT_MINE;
}

/* The scan stepper: an interrupted frame (the innermost, or one after a
 * signal frame) that no CFI covers and no prologue rule took may be in
 * code that keeps no frame pointer at all (_init, PLT stubs, assembly).
 * There, in order: a plausible return address below the frame record whose
 * direct call targets code at or before the PC (the call into the function
 * we are in); the chain, if its return address is plausible; the first
 * plausible return address above SP. Scans stop after SCAN_WORDS words;
 * frames found by scanning are tagged BK_HOW_SCAN. A frame that called
 * reaches it only when its frame record gave no return address: then only
 * its caller's call is looked for. */
static int step_scan(struct uw_cursor *c)
{
	struct bk_space *s = c->space;
	const struct arch_info *a = s->arch;
	unsigned fps = arch_slot(a, a->fp_reg), pcs = pc_slot(a);
	uint64_t sp, pc = c->regs[pcs], w = a->addr_size;
	uint64_t ra, fp;
	int err;

	if ((err = fallback_start(c, &sp)))
		return err;
	if (!c->at_pc) {
		/* A frame that called, whose frame record gave no return
		 * address (the frame-pointer stepper passed it on): a function
		 * that keeps no frame pointer (musl's pause) under one that
		 * does not either. Its caller's call is found as below. */
		return scan_for_ra(c, sp, UINT64_MAX, true, pc - 1);
	}
	uint64_t frame = c->regs[fps];
	bool chain = (c->valid & SLOT_BIT(fps)) && frame && frame_record(c, frame, sp, &fp, &ra);
	/* A function that keeps no frame pointer leaves rbp to its caller, whose
	 * record would skip a frame. Prefer a return address near SP whose
	 * direct call targets code at or before the PC (the function we are
	 * in), below the frame record. */
	int k = scan_for_ra(c, sp, chain ? frame : UINT64_MAX, true, pc);
	if (k != BK_STEP_NOT_MINE)
		return k;
	if (chain && plausible_ra(s, ra))
		return finish_fallback(c, frame + 2 * w, ra, true, fp, BK_HOW_FP);
	if ((k = scan_for_ra(c, sp, UINT64_MAX, false, 0)) != BK_STEP_NOT_MINE)
		return k;
	if ((c->valid & SLOT_BIT(fps)) && frame == 0)
		return 0;
	return BK_STEP_NOT_MINE;
}

/* ---- Step ----------------------------------------------------------------- */

/* Signal trampolines are known by the 'S' augmentation of the CIE of their
 * FDE (glibc's __restore_rt, the AArch64 vDSO's), which needs no code
 * bytes, or, where no FDE covers them, by their code. */
int uw_decide(struct bk_space *s, const struct uw_module *m, uint64_t pc, uint64_t lookup,
	      struct uw_crow *crow, const struct cfi_table **t, struct cfi_cie *cie,
	      struct cfi_row *row)
{
	memset(crow, 0, sizeof(*crow));
	/* BK_SPACE_NO_CFI: every PC is "no CFI" (frame pointers). */
	if (m && !(s->flags & BK_SPACE_NO_CFI)) {
		int err = find_row(m, lookup, t, cie, row);
		if (!err) {
			if (cie->signal_frame)
				crow->kind = UW_KIND_SIGNAL;
			else
				compile_row(s->arch, &(*t)->sec, cie, row, crow);
			return 0;
		}
		if (err != BK_E_NOT_FOUND)
			return err;
	}
	if (is_sigtramp(s, pc))
		crow->kind = UW_KIND_SIGNAL;
	return 0;
}

/* What the built-in steppers share for one step: the decision for the
 * lookup PC (cached or made now), made when the first of them is asked. */
struct decision {
	bool made;
	struct uw_crow crow;
	struct cfi_cie cie;
	struct cfi_row row;
	const struct cfi_table *t;
	struct uw_pin pin; /* the registration the row came from, if any */
};

static int decide(struct uw_cursor *c, uint64_t pc, uint64_t lookup, struct decision *d)
{
	struct bk_space *s = c->space;
	d->made = true;
	d->t = NULL;

	/* Registered code first (libgcc searches registered frames before the
	 * loaded objects); then, in this very process, the module is found
	 * first: its identity tags the cached rows (code can be unloaded and
	 * other code loaded there). */
	struct uw_module tmp;
	struct cfi_table tmp_table;
	struct tgt_local_object obj;
	uint64_t tag = 0;
	const struct uw_module *rm = uw_reg_find(s, lookup, &tag, &d->pin);
	bool known = !rm && s->local && uw_local_identify(lookup, &obj, &tag);
	bool cached = uw_cache_get(s, lookup, tag, &d->crow);

	/* Not decided yet, or decided to need the full row again. */
	if (!cached || d->crow.kind == UW_KIND_CFI_SLOW) {
		const struct uw_module *m = rm ? rm
					    : !s->local ? uw_space_find(s, lookup)
					    : known ? uw_local_module(s, &obj, &tmp, &tmp_table)
						    : NULL;
		int err = uw_decide(s, m, pc, lookup, &d->crow, &d->t, &d->cie, &d->row);
		if (err)
			return err;
		/* A module described for this one use (no slot free, or its
		 * index being built elsewhere) lends no lasting decision. */
		if (!cached && m != &tmp)
			uw_cache_put(s, lookup, tag, &d->crow);
	}
	return 0;
}

/* Built-in stepper ID on the current frame: 1, 0, BK_STEP_NOT_MINE or an
 * error. */
static int step_builtin(struct uw_cursor *c, unsigned id, uint64_t pc, uint64_t lookup,
			struct decision *d)
{
	if (!d->made) {
		int err = decide(c, pc, lookup, d);
		if (err)
			return err;
	}
	switch (id) {
	case BK_STEPPER_SIGNAL:
		return d->crow.kind == UW_KIND_SIGNAL ? step_signal(c) : BK_STEP_NOT_MINE;
	case BK_STEPPER_CFI:
		if (d->crow.kind == UW_KIND_CFI)
			return step_fast(c, &d->crow);
		if (d->crow.kind == UW_KIND_CFI_SLOW)
			return step_cfi(c, &d->crow, &d->t->sec, &d->cie, &d->row);
		return BK_STEP_NOT_MINE;
	case BK_STEPPER_FP:
		return d->crow.kind == UW_KIND_NONE ? step_fp(c) : BK_STEP_NOT_MINE;
	case BK_STEPPER_SCAN:
		return d->crow.kind == UW_KIND_NONE ? step_scan(c) : BK_STEP_NOT_MINE;
	}
	return BK_STEP_NOT_MINE;
}

/* Take the frame a user stepper made: whatever it says, a PC and an SP,
 * and a CFA above the last one (unless that frame was a signal frame). */
static int take_user_frame(struct uw_cursor *c, const struct bk_frame *out)
{
	const struct arch_info *a = c->space->arch;
	uint64_t pc, sp;
	if (!bk_regs_get(&out->regs, a->pc_reg, &pc) || !bk_regs_get(&out->regs, a->sp_reg, &sp))
		return BK_E_INVAL;
	uint64_t cfa = out->cfa ? out->cfa : sp;
	if (c->depth > 0 && c->how != BK_HOW_SIGNAL && cfa <= c->cfa)
		return BK_E_LOOP;
	uint64_t valid = 0;
	for (unsigned i = 0; i < a->nslots; i++)
		if (bk_regs_get(&out->regs, a->slot_regno[i], &c->regs[i]))
			valid |= SLOT_BIT(i);
	c->valid = valid;
	c->lazy = 0;
	c->cfa = cfa;
	c->how = BK_HOW_USER;
	c->at_pc = out->interrupted != 0;
	return 1;
}

/* Ask user stepper E for the current frame. */
static int step_user(struct uw_cursor *c, const struct uw_chain_ent *e, uint64_t lookup)
{
	struct bk_frame in, out;
	in.space = c->space;
	uw_cursor_resolve_all(c);
	bk_cursor_regs((const struct bk_cursor *)(const void *)c, &in.regs);
	in.lookup_pc = lookup;
	in.cfa = 0;
	in.depth = c->depth;
	in.interrupted = c->at_pc;
	memset(&out, 0, sizeof(out));
	out.space = c->space;
	int r = uw_stepper_call(c->space, e, &in, &out);
	if (r == BK_STEP_STEPPED)
		return take_user_frame(c, &out);
	if (r == BK_STEP_BOTTOM || r == BK_STEP_NOT_MINE || r < 0)
		return r;
	return BK_E_INVAL; /* not a step result */
}

static const unsigned builtin_order[] = { BK_STEPPER_SIGNAL, BK_STEPPER_CFI, BK_STEPPER_FP,
					  BK_STEPPER_SCAN };
static const int builtin_prio[] = { BK_PRIO_SIGNAL, BK_PRIO_CFI, BK_PRIO_FP, BK_PRIO_SCAN };

/* One step: the chain, in order, until a stepper takes the frame. Without
 * user steppers, the built-in ones. */
static int step(struct uw_cursor *c)
{
	struct bk_space *s = c->space;
	const struct arch_info *a = s->arch;
	uint64_t pc = c->regs[pc_slot(a)];
	if (!(c->valid & SLOT_BIT(pc_slot(a))) || pc == 0)
		return 0; /* PC 0: the bottom of the stack */
	uint64_t lookup = c->at_pc ? pc : pc - 1;

	struct uw_chain chain;
	chain.n = 0;
	if (atomic_load_explicit(&s->steppers, memory_order_relaxed)) {
		int err = uw_steppers_view(s, &chain);
		if (err)
			return err;
	}
	struct decision d;
	d.made = false;
	d.pin.r = NULL;
	int r = BK_STEP_NOT_MINE;
	unsigned b = 0, u = 0, id = 0;
	while (r == BK_STEP_NOT_MINE && (b < BK_ARRAY_LEN(builtin_order) || u < chain.n)) {
		if (u == chain.n ||
		    (b < BK_ARRAY_LEN(builtin_order) && builtin_prio[b] <= chain.e[u].prio)) {
			id = builtin_order[b++];
			r = step_builtin(c, id, pc, lookup, &d);
		} else {
			const struct uw_chain_ent *e = &chain.e[u++];
			if (e->start != e->end && (lookup < e->start || lookup >= e->end))
				continue;
			id = e->id;
			r = step_user(c, e, lookup);
		}
	}
	uw_unpin(&d.pin);
	if (r == 1)
		c->stepper = id;
	return r == BK_STEP_NOT_MINE ? BK_E_NO_UNWIND : r;
}

int bk_cursor_step(struct bk_cursor *bc)
{
	struct uw_cursor *c = cur(bc);
	if (c->done)
		return c->err;
	if (c->depth + 1 >= BK_MAX_FRAMES) {
		c->done = 1;
		c->err = BK_E_LIMIT;
		return c->err;
	}
	int r = step(c);
	if (r == 1) {
		c->depth++;
		return 1;
	}
	c->done = 1;
	c->err = r < 0 ? r : 0;
	return r;
}
