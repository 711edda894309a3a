/* One comparison: walk the stopped thread with the ordinary cursor and hold
 * every frame against the shadow stack, innermost first.
 *
 * Frame k of the walk (after k steps) must be shadow frame n - k: its PC
 * the recorded return address, its SP the recorded CFA (for a CFI frame the
 * caller's SP is the CFA), and each register the shadow knows equal to the
 * recorded value; a register the cursor does not recover where the shadow
 * knows it is a mismatch ("not recovered"). A signal frame must also have
 * been made by the signal stepper. The comparison stops at the first wrong
 * frame: everything above it is computed from wrong values.
 *
 * The walk must not end while shadow frames remain (a step returning 0 or
 * an error is a mismatch), and when the shadow stack is complete (it was
 * kept from the executable's entry point or the thread's start, so its
 * bottom frame is the outermost one) the step after the last shadow frame
 * must return 0: neither another frame nor an error.
 *
 * The cursor reads a saved register only when asked (lazy slots), so asking
 * at every frame and asking only at the last one take different paths:
 * regs_last_only checks the second (PC and SP are still compared at every
 * frame).
 */
#include <string.h>

#include "val.h"

static void diff(struct val_mismatch *mm, unsigned regno, uint64_t expected, bool got_valid,
		 uint64_t got)
{
	if (mm->ndiffs >= VAL_MAX_DIFFS)
		return;
	struct val_diff *d = &mm->diffs[mm->ndiffs++];
	d->regno = regno;
	d->expected = expected;
	d->got = got_valid ? got : 0;
	d->got_valid = got_valid;
}

/* Compare frame C with shadow frame F; true when equal. */
static bool same_frame(const struct bk_cursor *c, const struct val_frame *f, uint32_t call_regs,
		       bool with_regs, struct val_stats *st, struct val_mismatch *mm)
{
	uint32_t known = f->kind == VAL_FRAME_SIGNAL ? f->known : f->known & call_regs;
	if (!with_regs)
		known = 0;
	uint64_t pc = bk_cursor_pc(c), sp = bk_cursor_sp(c);
	mm->ndiffs = 0;
	if (pc != f->ra)
		diff(mm, VAL_REG_PC, f->ra, true, pc);
	if (sp != f->cfa)
		diff(mm, VAL_REG_SP, f->cfa, true, sp);
	if (f->kind == VAL_FRAME_SIGNAL && bk_cursor_how(c) != BK_HOW_SIGNAL)
		diff(mm, VAL_HOW, BK_HOW_SIGNAL, true, bk_cursor_how(c));
	for (unsigned r = 0; r < VAL_NREGS; r++) {
		if (!(known >> r & 1))
			continue;
		uint64_t v = 0;
		bool ok = bk_cursor_reg(c, r, &v);
		st->regs_checked++;
		if (!ok || v != f->regs[r])
			diff(mm, r, f->regs[r], ok, v);
	}
	if (mm->ndiffs)
		return false;
	enum bk_frame_how how = bk_cursor_how(c);
	if (how == BK_HOW_FP || how == BK_HOW_SCAN)
		st->frames_fallback++;
	return true;
}

bool val_check_walk(const struct val_walk_in *in, struct val_stats *st, struct val_mismatch *mm)
{
	struct bk_cursor c;
	const struct val_shadow *s = in->shadow;
	memset(mm, 0, sizeof(*mm));
	if (bk_cursor_init(&c, in->space, in->regs) != 0)
		return true; /* no PC or SP: nothing to walk */
	size_t n = s->n;
	bool limited = in->max_frames && n > in->max_frames;
	if (limited)
		n = in->max_frames;
	for (size_t k = 1; k <= n; k++) {
		const struct val_frame *f = &s->f[s->n - k];
		uint64_t culprit = bk_cursor_lookup_pc(&c);
		int r = bk_cursor_step(&c);
		if (r != 1) {
			mm->kind = VAL_WALK_SHORT;
			mm->step_result = r;
			mm->frame = (unsigned)k;
			mm->culprit_pc = culprit;
			mm->ndiffs = 0;
			diff(mm, VAL_REG_PC, f->ra, false, 0);
			st->frames_checked++;
			return false;
		}
		st->frames_checked++;
		bool with_regs = !in->regs_last_only || k == n;
		if (!same_frame(&c, f, in->call_regs, with_regs, st, mm)) {
			mm->kind = VAL_VALUES;
			mm->frame = (unsigned)k;
			mm->culprit_pc = culprit;
			mm->how = bk_cursor_how(&c);
			return false;
		}
	}
	if (in->complete && !limited) {
		uint64_t culprit = bk_cursor_lookup_pc(&c);
		int r = bk_cursor_step(&c);
		st->walk_ends++;
		if (r != 0) {
			mm->kind = r > 0 ? VAL_WALK_LONG : VAL_WALK_ERROR;
			mm->step_result = r;
			mm->frame = (unsigned)n + 1;
			mm->culprit_pc = culprit;
			mm->how = bk_cursor_how(&c);
			mm->ndiffs = 0;
			if (r > 0)
				diff(mm, VAL_REG_PC, 0, true, bk_cursor_pc(&c));
			return false;
		}
	}
	return true;
}
