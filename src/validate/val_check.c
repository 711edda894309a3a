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
 * A gap (frames of code that ran at full speed, VAL_FRAME_GAP) is crossed
 * by stepping until SP reaches the CFA of the frame below it: the frames
 * in between are not compared (nobody knows them), the frame reached must
 * be the one below, with its PC, SP and callee-saved registers. A gap at
 * the bottom (CFA UINT64_MAX) is crossed to the end of the walk.
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
#include <stddef.h>
#include <string.h>

#include "val.h"

#include "../unwind/unwind.h"

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
static bool same_frame(const struct val_arch *a, const struct bk_cursor *c,
		       const struct val_frame *f, uint64_t call_regs, bool with_regs,
		       struct val_stats *st, struct val_mismatch *mm)
{
	uint64_t known = f->kind == VAL_FRAME_SIGNAL ? f->known : f->known & call_regs;
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
	if (a->ai->nslots < 64)
		known &= ((uint64_t)1 << a->ai->nslots) - 1;
	for (; known; known &= known - 1) {
		unsigned s = (unsigned)__builtin_ctzll(known);
		if (s >= VAL_NREGS)
			break;
		unsigned regno = a->ai->slot_regno[s];
		uint64_t v = 0;
		bool ok = bk_cursor_reg(c, regno, &v);
		st->regs_checked++;
		if (!ok || v != f->regs[s])
			diff(mm, regno, f->regs[s], ok, v);
	}
	if (mm->ndiffs)
		return false;
	enum bk_frame_how how = bk_cursor_how(c);
	if (how == BK_HOW_FP || how == BK_HOW_SCAN)
		st->frames_fallback++;
	return true;
}

/* The last shadow index (counting down from the top) whose frame is
 * compared: the MAX-th frame that is not a gap, or the lowest one. */
static size_t last_compared(const struct val_shadow *s, unsigned max, bool *limited)
{
	size_t last = s->n, seen = 0;
	*limited = false;
	for (size_t i = s->n; i-- > 0;) {
		if (s->f[i].kind == VAL_FRAME_GAP)
			continue;
		last = i;
		if (max && ++seen == max) {
			/* Frames below it are left out. */
			for (size_t j = i; j-- > 0;)
				if (s->f[j].kind != VAL_FRAME_GAP)
					*limited = true;
			break;
		}
	}
	return last;
}

static void walk_short(struct val_mismatch *mm, int r, unsigned frame, uint64_t culprit,
		       uint64_t site, uint64_t expected)
{
	mm->kind = VAL_WALK_SHORT;
	mm->step_result = r;
	mm->frame = frame;
	mm->culprit_pc = culprit;
	mm->culprit_site = site;
	mm->ndiffs = 0;
	diff(mm, VAL_REG_PC, expected, false, 0);
}

/* The end of a walk whose shadow is complete: the step after the
 * outermost frame must return 0. R is that step's result. */
static bool walk_end(int r, const struct bk_cursor *c, unsigned frame, uint64_t culprit,
		     uint64_t site, struct val_stats *st, struct val_mismatch *mm)
{
	st->walk_ends++;
	if (r == 0)
		return true;
	mm->kind = r > 0 ? VAL_WALK_LONG : VAL_WALK_ERROR;
	mm->step_result = r;
	mm->frame = frame;
	mm->culprit_pc = culprit;
	mm->culprit_site = site;
	mm->how = bk_cursor_how(c);
	mm->ndiffs = 0;
	if (r > 0)
		diff(mm, VAL_REG_PC, 0, true, bk_cursor_pc(c));
	return false;
}

/* A gap: frames of code that ran at full speed, nobody knows how many.
 * They are stepped over until SP reaches the CFA of the frame below the
 * gap (G->cfa); that frame is the one the next shadow entry describes.
 * Returns 1 when the cursor stands on it, 0 when the walk is over (and
 * right), -1 on a mismatch. */
static int cross_gap(const struct val_walk_in *in, struct bk_cursor *c, size_t i,
		     unsigned *depth, uint64_t *culprit, uint64_t *site, struct val_stats *st,
		     struct val_mismatch *mm)
{
	const struct val_frame *g = &in->shadow->f[i];
	for (unsigned n = 0; n < BK_MAX_FRAMES; n++) {
		*culprit = bk_cursor_lookup_pc(c);
		int r = bk_cursor_step(c);
		if (r != 1) {
			if (i == 0) {
				/* Unknown frames down to the outermost one. */
				if (!in->complete)
					return 0;
				return walk_end(r, c, *depth + 1, *culprit, *site, st, mm) ? 0 : -1;
			}
			st->frames_checked++;
			walk_short(mm, r, *depth + 1, *culprit, *site, in->shadow->f[i - 1].ra);
			return -1;
		}
		++*depth;
		if (bk_cursor_sp(c) >= g->cfa)
			return 1;
		*site = VAL_SITE_UNKNOWN;
	}
	return 0; /* too deep to tell */
}

/* MM emptied but for its differences, which only mismatches fill (up to
 * ndiffs): a walk a checked instruction makes one or two of. */
static void mm_clear(struct val_mismatch *mm)
{
	memset(mm, 0, offsetof(struct val_mismatch, diffs));
	memset((char *)mm + offsetof(struct val_mismatch, module), 0,
	       sizeof(*mm) - offsetof(struct val_mismatch, module));
}

bool val_check_walk(const struct val_walk_in *in, struct val_stats *st, struct val_mismatch *mm)
{
	struct bk_cursor c;
	const struct val_shadow *s = in->shadow;
	mm_clear(mm);
	if (bk_cursor_init(&c, in->space, in->regs) != 0)
		return true; /* no PC or SP: nothing to walk */
	bool limited;
	size_t last = last_compared(s, in->max_frames, &limited);
	unsigned depth = 0;            /* frames stepped */
	uint64_t culprit = 0, site = 0; /* what made the current frame */
	bool standing = false;         /* the cursor is on the next frame already */
	for (size_t i = s->n; i-- > 0;) {
		const struct val_frame *f = &s->f[i];
		if (f->kind == VAL_FRAME_GAP) {
			int g = cross_gap(in, &c, i, &depth, &culprit, &site, st, mm);
			if (g <= 0)
				return g == 0;
			standing = true;
			continue;
		}
		if (!standing) {
			culprit = bk_cursor_lookup_pc(&c);
			int r = bk_cursor_step(&c);
			if (r != 1) {
				st->frames_checked++;
				walk_short(mm, r, depth + 1, culprit, site, f->ra);
				return false;
			}
			depth++;
		}
		standing = false;
		st->frames_checked++;
		bool with_regs = !in->regs_last_only || i == last;
		if (!same_frame(in->arch, &c, f, in->call_regs, with_regs, st, mm)) {
			mm->kind = VAL_VALUES;
			mm->frame = depth;
			mm->culprit_pc = culprit;
			mm->culprit_site = site;
			mm->how = bk_cursor_how(&c);
			return false;
		}
		site = f->site ? f->site : f->ra;
		if (i == last && limited)
			break;
	}
	if (in->complete && !limited) {
		culprit = bk_cursor_lookup_pc(&c);
		int r = bk_cursor_step(&c);
		return walk_end(r, &c, depth + 1, culprit, site, st, mm);
	}
	return true;
}

/* --method fast. The cursor's walk is the reference (val_check_walk holds
 * it against the shadow stack at the same instruction); the PC-only walk
 * must make exactly its frames: the same PCs, ending where it ends. A walk
 * the fast one hands over (-1) is the cursor's by construction. */
bool val_check_fast(const struct val_walk_in *in, const struct uw_window *win,
		    struct val_stats *st, struct val_mismatch *mm)
{
	static void *fast[BK_MAX_FRAMES];
	static uint64_t ref[BK_MAX_FRAMES], culprit[BK_MAX_FRAMES];
	struct bk_cursor c;
	if (bk_cursor_init(&c, in->space, in->regs) != 0)
		return true;
	int nref = 0, end;
	for (;;) {
		culprit[nref] = bk_cursor_lookup_pc(&c);
		end = bk_cursor_step(&c);
		if (end != 1)
			break;
		ref[nref++] = bk_cursor_pc(&c);
	}
	st->fast_walks++;
	int n = uw_walk_pcs_window(in->space, in->regs, true, fast, BK_MAX_FRAMES, win, NULL);
	if (n < 0) {
		st->fast_handovers++;
		return true;
	}
	/* The fast walk stops where the cursor's steps end: a clean end, or
	 * the frame bound (the cursor's BK_E_LIMIT); an error is a handover. */
	bool same_end = end == 0 || (end == BK_E_LIMIT && n == nref);
	int i = 0;
	while (i < n && i < nref && (uint64_t)(uintptr_t)fast[i] == ref[i])
		i++;
	if (i == n && i == nref && same_end) {
		st->fast_frames += (uint64_t)n;
		return true;
	}
	memset(mm, 0, sizeof(*mm));
	mm->kind = VAL_FAST;
	mm->frame = (unsigned)i + 1;
	mm->culprit_pc = culprit[i < nref ? i : nref];
	mm->step_result = end;
	diff(mm, VAL_REG_PC, i < nref ? ref[i] : 0, i < n, i < n ? (uint64_t)(uintptr_t)fast[i] : 0);
	return false;
}
