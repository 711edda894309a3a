/* User steppers: the public half of the stepper chain (Dyninst
 * StackwalkerAPI's StepperGroup). A space keeps up to UW_MAX_STEPPERS user
 * steppers in fixed slots and their order in the chain; the cursor (step()
 * in cursor.c) merges them with the built-in steppers by priority.
 *
 * Invariants: the chain a walk copies is whole (never a writer's half:
 * two buffers and a generation, see unwind.h); a stepper is called only
 * while pinned (its slot's users count), and removal unpublishes it, then
 * waits until nobody pins it, so once bk_space_remove_stepper returns it is
 * never called again. Ids are never reused, so a walk holding an old copy
 * of the chain cannot call a stepper added later into the same slot.
 * Readers are AS-safe and never wait; writers take a mutex and allocate
 * (cold). Trusts the caller of the readers for a valid space.
 */
#include <pthread.h>
#include <sched.h>

#include "unwind.h"

static const struct {
	unsigned id;
	const char *name;
	int prio;
} builtin[] = {
	{ BK_STEPPER_SIGNAL, "signal", BK_PRIO_SIGNAL },
	{ BK_STEPPER_CFI, "cfi", BK_PRIO_CFI },
	{ BK_STEPPER_FP, "fp", BK_PRIO_FP },
	{ BK_STEPPER_SCAN, "scan", BK_PRIO_SCAN },
};

#define VIEW_TRIES 64

int uw_steppers_view(struct bk_space *s, struct uw_chain *out)
{
	struct uw_steppers *st = atomic_load_explicit(&s->steppers, memory_order_acquire);
	out->n = 0;
	if (!st)
		return 0;
	for (unsigned t = 0; t < VIEW_TRIES; t++) {
		uint32_t g = atomic_load_explicit(&st->gen, memory_order_acquire);
		const struct uw_chain *c = &st->buf[g & 1];
		uint32_t n = c->n < UW_MAX_STEPPERS ? c->n : UW_MAX_STEPPERS;
		out->nrangeless = c->nrangeless;
		out->lo = c->lo;
		out->hi = c->hi;
		memcpy(out->e, c->e, n * sizeof(c->e[0]));
		out->n = n;
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&st->gen, memory_order_relaxed) == g)
			return 0;
	}
	out->n = 0;
	return BK_E_LIMIT;
}

bool uw_steppers_claim_slow(struct uw_steppers *st, uint64_t lo, uint64_t len)
{
	for (unsigned t = 0; t < VIEW_TRIES; t++) {
		uint32_t g = atomic_load_explicit(&st->gen, memory_order_acquire);
		const struct uw_chain *c = &st->buf[g & 1];
		bool hit = c->nrangeless > 0;
		uint64_t end = lo + len;
		if (!hit && c->n && lo < c->hi && c->lo < end) {
			uint32_t n = c->n < UW_MAX_STEPPERS ? c->n : UW_MAX_STEPPERS;
			for (uint32_t i = 0; i < n && !hit; i++)
				hit = c->e[i].start < c->e[i].end && lo < c->e[i].end &&
				      c->e[i].start < end;
		}
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&st->gen, memory_order_relaxed) == g)
			return hit;
	}
	return true; /* cannot tell: the cursor decides */
}

int uw_stepper_call(struct bk_space *s, const struct uw_chain_ent *e, const struct bk_frame *in,
		    struct bk_frame *out)
{
	struct uw_steppers *st = atomic_load_explicit(&s->steppers, memory_order_acquire);
	if (!st || e->slot >= UW_MAX_STEPPERS)
		return BK_STEP_NOT_MINE;
	struct uw_user_stepper *u = &st->slot[e->slot];
	/* Dekker with removal: it clears the id, then reads users. */
	atomic_fetch_add(&u->users, 1);
	int r = BK_STEP_NOT_MINE;
	if (atomic_load(&u->id) == e->id)
		r = u->st.step(u->st.ctx, in, out);
	atomic_fetch_sub(&u->users, 1);
	return r;
}

/* ---- Writers (cold) ------------------------------------------------------------ */

static struct uw_steppers *get_steppers(struct bk_space *s, bool create)
{
	struct uw_steppers *st = atomic_load_explicit(&s->steppers, memory_order_acquire);
	if (st || !create)
		return st;
	st = base_calloc(1, sizeof(*st));
	pthread_mutex_t *m = base_calloc(1, sizeof(*m));
	if (!st || !m) {
		base_free(st);
		base_free(m);
		return NULL;
	}
	pthread_mutex_init(m, NULL);
	st->lock = m;
	st->next_id = BK_STEPPER_FIRST_USER;
	struct uw_steppers *none = NULL;
	if (!atomic_compare_exchange_strong(&s->steppers, &none, st)) {
		pthread_mutex_destroy(m);
		base_free(m);
		base_free(st);
		return none;
	}
	return st;
}

/* Publish the chain of live slots (under the lock), ordered by priority,
 * then id (the order added). */
static void publish(struct uw_steppers *st)
{
	uint32_t g = atomic_load_explicit(&st->gen, memory_order_relaxed);
	struct uw_chain *c = &st->buf[(g + 1) & 1];
	memset(c, 0, sizeof(*c));
	c->lo = UINT64_MAX;
	for (uint32_t i = 0; i < UW_MAX_STEPPERS; i++) {
		uint32_t id = atomic_load_explicit(&st->slot[i].id, memory_order_relaxed);
		if (!id)
			continue;
		const struct bk_stepper *u = &st->slot[i].st;
		struct uw_chain_ent e = { id, i, u->priority, u->start, u->end };
		uint32_t at = c->n;
		while (at > 0 && (c->e[at - 1].prio > e.prio ||
				  (c->e[at - 1].prio == e.prio && c->e[at - 1].id > e.id))) {
			c->e[at] = c->e[at - 1];
			at--;
		}
		c->e[at] = e;
		c->n++;
		if (u->start == u->end) {
			c->nrangeless++;
		} else {
			c->lo = u->start < c->lo ? u->start : c->lo;
			c->hi = u->end > c->hi ? u->end : c->hi;
		}
	}
	if (c->lo == UINT64_MAX)
		c->lo = c->hi = 0;
	atomic_store_explicit(&st->gen, g + 1, memory_order_release);
}

int bk_space_add_stepper(struct bk_space *s, const struct bk_stepper *u, unsigned *id)
{
	if (!s || !u || u->size < sizeof(*u) || !u->step || u->end < u->start)
		return BK_E_INVAL;
	struct uw_steppers *st = get_steppers(s, true);
	if (!st)
		return BK_E_NOMEM;
	pthread_mutex_lock(st->lock);
	int err = BK_E_LIMIT;
	for (uint32_t i = 0; i < UW_MAX_STEPPERS; i++) {
		struct uw_user_stepper *slot = &st->slot[i];
		/* A slot being vacated keeps users until its calls end. */
		if (atomic_load(&slot->id) || atomic_load(&slot->users))
			continue;
		slot->st = *u;
		slot->st.size = sizeof(slot->st);
		uint32_t nid = st->next_id++;
		atomic_store(&slot->id, nid);
		publish(st);
		if (id)
			*id = nid;
		err = 0;
		break;
	}
	pthread_mutex_unlock(st->lock);
	return err;
}

int bk_space_remove_stepper(struct bk_space *s, unsigned id)
{
	struct uw_steppers *st = s ? get_steppers(s, false) : NULL;
	if (!st || id < BK_STEPPER_FIRST_USER)
		return BK_E_NOT_FOUND;
	pthread_mutex_lock(st->lock);
	struct uw_user_stepper *slot = NULL;
	for (uint32_t i = 0; i < UW_MAX_STEPPERS && !slot; i++)
		if (atomic_load(&st->slot[i].id) == id)
			slot = &st->slot[i];
	if (slot) {
		atomic_store(&slot->id, 0);
		publish(st);
	}
	pthread_mutex_unlock(st->lock);
	if (!slot)
		return BK_E_NOT_FOUND;
	/* Calls that pinned it before the id went: let them finish. */
	for (unsigned spins = 0; atomic_load(&slot->users); spins++)
		sched_yield();
	return 0;
}

int bk_space_steppers(struct bk_space *s, struct bk_stepper_info *out, size_t max)
{
	if (!s || (!out && max))
		return BK_E_INVAL;
	struct uw_steppers *st = get_steppers(s, false);
	struct uw_chain c;
	c.n = 0;
	if (st) {
		pthread_mutex_lock(st->lock);
		c = st->buf[atomic_load(&st->gen) & 1];
	}
	size_t n = 0, b = 0, u = 0;
	while (b < BK_ARRAY_LEN(builtin) || u < c.n) {
		struct bk_stepper_info info;
		/* A built-in stepper goes before user steppers of its priority. */
		if (u == c.n || (b < BK_ARRAY_LEN(builtin) && builtin[b].prio <= c.e[u].prio)) {
			info = (struct bk_stepper_info){ builtin[b].id, builtin[b].name, builtin[b].prio,
							 0, 0, 1 };
			b++;
		} else {
			const struct bk_stepper *us = &st->slot[c.e[u].slot].st;
			info = (struct bk_stepper_info){ c.e[u].id, us->name ? us->name : "",
							 c.e[u].prio, c.e[u].start, c.e[u].end, 0 };
			u++;
		}
		if (n < max)
			out[n] = info;
		n++;
	}
	if (st)
		pthread_mutex_unlock(st->lock);
	return (int)n;
}

int bk_space_read(struct bk_space *s, uint64_t addr, void *dst, size_t len)
{
	if (!s || (!dst && len))
		return BK_E_INVAL;
	int err = s->ops.read_mem(s->ctx, addr, dst, len);
	return err > 0 ? BK_E_MEMORY : err;
}

void uw_steppers_destroy(struct bk_space *s)
{
	struct uw_steppers *st = atomic_load(&s->steppers);
	if (!st)
		return;
	pthread_mutex_destroy(st->lock);
	base_free(st->lock);
	base_free(st);
	atomic_store(&s->steppers, NULL);
}
