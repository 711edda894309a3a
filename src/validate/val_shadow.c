/* The shadow stack of one thread: what an unwinder must recover for every
 * frame, recorded while the frames were made.
 *
 * Invariant: frames are in call order; the CFA of a CALL or HANDLER frame is
 * the SP it returns to. A frame is dead once SP >= its CFA (a ret lands
 * exactly there, ret imm16 above, longjmp and C++ exceptions further up).
 * Where a call pushes nothing (AArch64: the return address is in x30) a
 * callee runs with SP at its CFA, so a frame dies only once SP > its CFA;
 * the checker pops the frame a `ret` returns from itself.
 * Dropping goes top down and stops at the first live frame, so frames below
 * a live one are kept even when a stack switch (a signal handler on an
 * alternate stack, a coroutine) put SP above them.
 *
 * A SIGNAL frame (the interrupted context) is dropped by rt_sigreturn, or
 * by the SP rule when the handler ran on the interrupted stack (a
 * siglongjmp out of the handler lands above the interrupted SP). When the
 * handler ran on an alternate stack the SP rule cannot tell the stacks
 * apart: only rt_sigreturn, or an SP back on the interrupted stack above
 * the interrupted SP but below the handler's stack, drops it.
 */
#include "val.h"

#include "../base/base.h"

int val_shadow_push(struct val_shadow *s, const struct val_frame *f)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		void *p = base_realloc(s->f, ncap * sizeof(*s->f));
		if (!p)
			return BK_E_NOMEM;
		s->f = p;
		s->cap = ncap;
	}
	s->f[s->n++] = *f;
	return 0;
}

static bool dead(const struct val_frame *f, uint64_t sp, bool live_at_cfa)
{
	if (live_at_cfa && sp == f->cfa)
		return false;
	if (f->kind != VAL_FRAME_SIGNAL || !f->altstack)
		return sp >= f->cfa;
	/* Alternate stack: dead only when SP is back on the interrupted
	 * stack, at or above the interrupted SP, within 8 MiB of it, and not
	 * on the handler's stack (within 1 MiB of its SP at entry). */
	uint64_t h = f->handler_sp;
	bool on_handler_stack = sp + (1u << 20) >= h && sp <= h + (1u << 20);
	return sp >= f->cfa && sp - f->cfa < (8u << 20) && !on_handler_stack;
}

size_t val_shadow_drop_dead(struct val_shadow *s, uint64_t sp, bool live_at_cfa)
{
	size_t dropped = 0;
	while (s->n && dead(&s->f[s->n - 1], sp, live_at_cfa)) {
		s->n--;
		dropped++;
	}
	return dropped;
}

void val_shadow_sigreturn(struct val_shadow *s)
{
	while (s->n) {
		uint8_t kind = s->f[--s->n].kind;
		if (kind == VAL_FRAME_SIGNAL)
			return;
	}
}

void val_shadow_free(struct val_shadow *s)
{
	base_free(s->f);
	s->f = NULL;
	s->n = s->cap = 0;
}
