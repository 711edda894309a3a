/* The CFA state machine (DWARF 5 §6.4.2, §6.4.3).
 *
 * cfi_machine_init runs the CIE's initial instructions into the initial row;
 * cfi_machine_next then runs the FDE's instructions up to each location
 * change and hands out one row per address range, in order, so that a
 * lookup (cfi_row_at) and a dump of every row are the same loop.
 *
 * Invariants: rows tile [pc_begin, pc_end) in increasing order; a row holds
 * at most CFI_MAX_RULES register rules, sorted by register number; the
 * remember stack holds at most CFI_STATE_DEPTH rows and CFI_STATE_POOL rules
 * in all. Each instruction is read once; no recursion, no allocation.
 *
 * Trusts its caller for: a CIE and FDE decoded from SEC (cfi_decode_*).
 */
#include "cfi.h"

#include "../base/dwarf.h"

/* ---- Rows ---------------------------------------------------------------- */

static int row_find(const struct cfi_row *row, unsigned regno, bool *found)
{
	int lo = 0, hi = row->nrules;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (row->regno[mid] < regno)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < row->nrules && row->regno[lo] == regno;
	return lo;
}

const struct cfi_rule *cfi_row_rule(const struct cfi_row *row, unsigned regno)
{
	bool found;
	int i = row_find(row, regno, &found);
	return found ? &row->rule[i] : NULL;
}

static int row_set(struct cfi_row *row, unsigned regno, struct cfi_rule rule)
{
	if (regno > CFI_MAX_REGNO)
		return BK_E_BAD_REG;
	bool found;
	int i = row_find(row, regno, &found);
	if (!found) {
		if (row->nrules >= CFI_MAX_RULES)
			return BK_E_LIMIT;
		memmove(&row->regno[i + 1], &row->regno[i],
			(row->nrules - i) * sizeof(row->regno[0]));
		memmove(&row->rule[i + 1], &row->rule[i], (row->nrules - i) * sizeof(row->rule[0]));
		row->nrules++;
		row->regno[i] = (uint16_t)regno;
	}
	row->rule[i] = rule;
	return 0;
}

static void row_remove(struct cfi_row *row, unsigned regno)
{
	bool found;
	int i = row_find(row, regno, &found);
	if (!found)
		return;
	row->nrules--;
	memmove(&row->regno[i], &row->regno[i + 1], (row->nrules - i) * sizeof(row->regno[0]));
	memmove(&row->rule[i], &row->rule[i + 1], (row->nrules - i) * sizeof(row->rule[0]));
}

static bool rule_eq(const struct cfi_rule *a, const struct cfi_rule *b)
{
	return a->kind == b->kind && a->value == b->value && a->reg == b->reg &&
	       a->expr_len == b->expr_len;
}

bool cfi_row_same_rules(const struct cfi_row *a, const struct cfi_row *b)
{
	if (!rule_eq(&a->cfa, &b->cfa) || a->ra_sign_state != b->ra_sign_state ||
	    a->nrules != b->nrules)
		return false;
	for (unsigned i = 0; i < a->nrules; i++)
		if (a->regno[i] != b->regno[i] || !rule_eq(&a->rule[i], &b->rule[i]))
			return false;
	return true;
}

/* ---- Instructions -------------------------------------------------------- */

static int restore_reg(struct cfi_machine *m, unsigned regno)
{
	const struct cfi_rule *init = cfi_row_rule(&m->initial, regno);
	if (init)
		return row_set(&m->row, regno, *init);
	row_remove(&m->row, regno);
	return 0;
}

/* §6.4.2.4: the whole row (register rules, CFA, RA signing state) is saved;
 * the location is not. Rules go to a shared pool so shallow rows cost little. */
static int remember_state(struct cfi_machine *m)
{
	if (m->depth >= CFI_STATE_DEPTH || m->pool_used + m->row.nrules > CFI_STATE_POOL)
		return BK_E_LIMIT;
	uint16_t n = m->row.nrules;
	m->saved[m->depth].cfa = m->row.cfa;
	m->saved[m->depth].cfa_before_expr = m->row.cfa_before_expr;
	m->saved[m->depth].ra_sign_state = m->row.ra_sign_state;
	m->saved[m->depth].nrules = n;
	m->saved[m->depth].pool_off = m->pool_used;
	memcpy(&m->pool_regno[m->pool_used], m->row.regno, n * sizeof(m->row.regno[0]));
	memcpy(&m->pool_rule[m->pool_used], m->row.rule, n * sizeof(m->row.rule[0]));
	m->pool_used += n;
	m->depth++;
	return 0;
}

static int restore_state(struct cfi_machine *m)
{
	if (m->depth == 0)
		return BK_CORRUPT;
	m->depth--;
	uint16_t n = m->saved[m->depth].nrules, at = m->saved[m->depth].pool_off;
	m->row.cfa = m->saved[m->depth].cfa;
	m->row.cfa_before_expr = m->saved[m->depth].cfa_before_expr;
	m->row.ra_sign_state = m->saved[m->depth].ra_sign_state;
	m->row.nrules = n;
	memcpy(m->row.regno, &m->pool_regno[at], n * sizeof(m->row.regno[0]));
	memcpy(m->row.rule, &m->pool_rule[at], n * sizeof(m->row.rule[0]));
	m->pool_used = at;
	return 0;
}

static struct cfi_rule rule_of(uint8_t kind, int64_t value, unsigned reg)
{
	struct cfi_rule r = { .value = value, .reg = (uint16_t)reg, .kind = kind };
	return r;
}

static struct cfi_rule rule_block(const struct cfi_machine *m, uint8_t kind,
				  const struct cfi_insn *in)
{
	struct cfi_rule r = rule_of(kind, (int64_t)(in->block - m->sec->data), 0);
	r.expr_len = in->block_len;
	return r;
}

/* Apply one decoded instruction to the row. A location change (§6.4.2.1) is
 * reported in *NEW_LOC with *MOVED set, not applied. IN_CIE rejects what has
 * no meaning among a CIE's initial instructions: location changes, restores
 * and the state stack. */
static int apply(struct cfi_machine *m, const struct cfi_insn *in, bool in_cie, bool *moved,
		 uint64_t *new_loc)
{
	struct cfi_row *row = &m->row;
	uint64_t loc = row->loc;

	*moved = false;
	switch (in->opcode) {
	case DW_CFA_nop: /* §6.4.2.5 */
		return 0;
	case DW_CFA_advance_loc: /* §6.4.2.1 */
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
	case DW_CFA_MIPS_advance_loc8:
		if (in_cie || __builtin_add_overflow(loc, in->u, new_loc) ||
		    *new_loc > m->fde->pc_end)
			return BK_CORRUPT;
		*moved = true;
		return 0;
	case DW_CFA_set_loc:
		if (in_cie || in->u < loc || in->u > m->fde->pc_end)
			return BK_CORRUPT;
		*new_loc = in->u;
		*moved = true;
		return 0;
	case DW_CFA_offset: /* §6.4.2.3 */
	case DW_CFA_offset_extended:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_GNU_negative_offset_extended:
		return row_set(row, in->reg, rule_of(BK_RULE_OFFSET, in->s, 0));
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
		return row_set(row, in->reg, rule_of(BK_RULE_VAL_OFFSET, in->s, 0));
	case DW_CFA_restore:
	case DW_CFA_restore_extended:
		return in_cie ? BK_CORRUPT : restore_reg(m, in->reg);
	case DW_CFA_undefined:
		return row_set(row, in->reg, rule_of(BK_RULE_UNDEFINED, 0, 0));
	case DW_CFA_same_value:
		return row_set(row, in->reg, rule_of(BK_RULE_SAME_VALUE, 0, 0));
	case DW_CFA_register:
		return row_set(row, in->reg, rule_of(BK_RULE_REGISTER, 0, in->reg2));
	case DW_CFA_expression:
		return row_set(row, in->reg, rule_block(m, BK_RULE_EXPRESSION, in));
	case DW_CFA_val_expression:
		return row_set(row, in->reg, rule_block(m, BK_RULE_VAL_EXPRESSION, in));
	case DW_CFA_remember_state: /* §6.4.2.4 */
		return in_cie ? BK_CORRUPT : remember_state(m);
	case DW_CFA_restore_state:
		return in_cie ? BK_CORRUPT : restore_state(m);
	case DW_CFA_def_cfa: /* §6.4.2.2 */
	case DW_CFA_def_cfa_sf:
		row->cfa = rule_of(BK_RULE_CFA_REG_OFFSET, in->s, in->reg);
		return 0;
	case DW_CFA_def_cfa_register:
		/* Only meaningful while the CFA is register + offset. After an
		 * expression, libgcc and gdb take the offset the last
		 * register+offset rule had; so do we (libgcrypt's assembly
		 * relies on it), noting it in nonstandard_at. */
		if (row->cfa.kind == BK_RULE_CFA_EXPRESSION &&
		    row->cfa_before_expr.kind == BK_RULE_CFA_REG_OFFSET) {
			row->cfa = row->cfa_before_expr;
			if (!m->nonstandard_at)
				m->nonstandard_at = m->insn_at;
		}
		if (row->cfa.kind != BK_RULE_CFA_REG_OFFSET)
			return BK_CORRUPT;
		row->cfa.reg = (uint16_t)in->reg;
		return 0;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		if (row->cfa.kind != BK_RULE_CFA_REG_OFFSET)
			return BK_CORRUPT;
		row->cfa.value = in->s;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (row->cfa.kind != BK_RULE_CFA_EXPRESSION)
			row->cfa_before_expr = row->cfa;
		row->cfa = rule_block(m, BK_RULE_CFA_EXPRESSION, in);
		return 0;
	case DW_CFA_GNU_window_save:
		/* On AArch64 this opcode is DW_CFA_AARCH64_negate_ra_state: it
		 * toggles whether the return address is signed (AADWARF64 §4.4).
		 * SPARC's register-window meaning is not supported. */
		row->ra_sign_state ^= 1;
		return 0;
	case DW_CFA_AARCH64_negate_ra_state_with_pc:
		/* AADWARF64 §4.4.2 (FEAT_PAuth_LR): negates bits 0 (signed) and
		 * 1 (signed with the PC of this row's first instruction as a
		 * second modifier) of RA_SIGN_STATE. Stripping the code, as an
		 * unwinder does, needs bit 0 alone; bit 1 is kept for dump. */
		row->ra_sign_state ^= 3;
		return 0;
	case DW_CFA_GNU_args_size:
		row->args_size = in->u;
		return 0;
	}
	return BK_E_UNSUPPORTED;
}

static int step(struct cfi_machine *m, struct buf *b, bool in_cie, bool *moved, uint64_t *new_loc)
{
	struct cfi_insn in;
	m->insn_at = (uint64_t)(b->p - m->sec->data);
	int err = cfi_decode_insn(b, m->sec, m->cie, m->fde, &in);
	return err ? err : apply(m, &in, in_cie, moved, new_loc);
}

int cfi_machine_init(struct cfi_machine *m, const struct cfi_section *sec,
		     const struct cfi_cie *cie, const struct cfi_fde *fde)
{
	m->sec = sec;
	m->cie = cie;
	m->fde = fde;
	m->done = false;
	m->depth = 0;
	m->pool_used = 0;
	m->nonstandard_at = 0;
	cfi_row_clear(&m->row);
	m->row.loc = fde->pc_begin;

	struct buf b = { cie->insns, cie->insns_end };
	while (buf_left(&b)) {
		bool moved;
		uint64_t unused;
		int err = step(m, &b, true, &moved, &unused);
		if (err)
			return err;
	}
	cfi_row_copy(&m->initial, &m->row);
	m->insns = (struct buf){ fde->insns, fde->insns_end };
	return 0;
}

int cfi_machine_next(struct cfi_machine *m, struct cfi_row *out)
{
	if (m->done)
		return 0;
	while (buf_left(&m->insns)) {
		bool moved;
		uint64_t new_loc;
		int err = step(m, &m->insns, false, &moved, &new_loc);
		if (err) {
			m->done = true;
			return err;
		}
		if (moved && new_loc > m->row.loc) {
			cfi_row_copy(out, &m->row);
			out->loc_end = new_loc;
			m->row.loc = new_loc;
			return 1;
		}
	}
	m->done = true;
	if (m->row.loc >= m->fde->pc_end)
		return 0; /* the last advance reached the end exactly */
	cfi_row_copy(out, &m->row);
	out->loc_end = m->fde->pc_end;
	return 1;
}

int cfi_row_at(const struct cfi_section *sec, const struct cfi_cie *cie,
	       const struct cfi_fde *fde, uint64_t pc, struct cfi_row *row)
{
	struct cfi_machine m;
	int err;

	if (pc < fde->pc_begin || pc >= fde->pc_end)
		return BK_E_NOT_FOUND;
	if ((err = cfi_machine_init(&m, sec, cie, fde)))
		return err;
	while ((err = cfi_machine_next(&m, row)) == 1)
		if (pc < row->loc_end)
			return 0;
	return err ? err : BK_E_NOT_FOUND;
}
