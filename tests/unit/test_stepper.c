/* The stepper chain: user steppers added to spaces over this process, asked
 * in priority order among the built-in ones, only for the lookup PCs of
 * their range; their frames say BK_HOW_USER and which stepper; lying
 * steppers (no progress, frames in unreadable memory, endless frames,
 * cycles, bad results) end a walk with an error and never hang or crash it;
 * a stepper asked from a signal handler's walks (bk_backtrace, a cursor
 * from the ucontext);
 * bk_backtrace's PC-only walk hands over to the cursor exactly when a PC
 * may be claimed; removal while other threads walk waits for the calls in
 * progress (run under ASan: a call after removal would read freed memory).
 *
 * The honest user stepper here delegates: it steps a cursor over a second
 * local space that has no user steppers, so its frames must be exactly
 * the built-in chain's. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "backstep.h"
#include "check.h"
#include "unwind/unwind.h"

#define MAXF 64

static struct bk_space *plain; /* no user steppers: the delegate's */

struct rec {
	uint64_t magic;
	_Atomic int calls;
	int mode;
	int read_err; /* what bk_space_read said, for MODE_BADMEM */
};
#define MAGIC 0x5354455050455221ull
enum { MODE_DELEGATE, MODE_NOT_MINE, MODE_SAME, MODE_BADMEM, MODE_ENDLESS, MODE_CYCLE,
       MODE_NO_PC, MODE_BAD_RESULT, MODE_ERROR };

static _Atomic int bad_ctx; /* a stepper called with a freed or foreign ctx */

static uint64_t mid_lo, mid_hi; /* the range of test_mid */

static int step_fn(void *ctx, const struct bk_frame *in, struct bk_frame *out)
{
	struct rec *r = ctx;
	if (r->magic != MAGIC) {
		atomic_store(&bad_ctx, 1);
		return BK_STEP_NOT_MINE;
	}
	atomic_fetch_add(&r->calls, 1);
	uint64_t sp = 0, pc = 0;
	bk_regs_get(&in->regs, 7, &sp);
	bk_regs_get(&in->regs, 16, &pc);
	switch (r->mode) {
	case MODE_DELEGATE: {
		struct bk_cursor c;
		if (bk_cursor_init(&c, plain, &in->regs))
			return BK_E_INVAL;
		struct uw_cursor *uc = (struct uw_cursor *)(void *)&c;
		uc->at_pc = in->interrupted != 0;
		int k = bk_cursor_step(&c);
		if (k != 1)
			return k;
		bk_cursor_regs(&c, &out->regs);
		return BK_STEP_STEPPED;
	}
	case MODE_NOT_MINE:
		return BK_STEP_NOT_MINE;
	case MODE_SAME:
		out->regs = in->regs;
		return BK_STEP_STEPPED;
	case MODE_BADMEM: {
		/* Only the first frame; reads through the space never fault. */
		if (in->depth > 0)
			return BK_STEP_NOT_MINE;
		uint64_t w;
		r->read_err = bk_space_read(in->space, 0x1000, &w, sizeof(w));
		bk_regs_set(&out->regs, 16, mid_lo + 1);
		bk_regs_set(&out->regs, 7, 0x1000);
		bk_regs_set(&out->regs, 6, 0xffffffffffff0000ull);
		return BK_STEP_STEPPED;
	}
	case MODE_ENDLESS:
		bk_regs_set(&out->regs, 16, pc);
		bk_regs_set(&out->regs, 7, sp + 16);
		return BK_STEP_STEPPED;
	case MODE_CYCLE:
		bk_regs_set(&out->regs, 16, pc);
		bk_regs_set(&out->regs, 7, in->depth % 2 ? sp - 16 : sp + 16);
		return BK_STEP_STEPPED;
	case MODE_NO_PC:
		bk_regs_set(&out->regs, 7, sp + 16);
		return BK_STEP_STEPPED;
	case MODE_BAD_RESULT:
		return 42;
	case MODE_ERROR:
		return BK_E_CORRUPT;
	}
	return BK_STEP_NOT_MINE;
}

static unsigned add(struct bk_space *s, const char *name, struct rec *r, int mode, int prio,
		    uint64_t lo, uint64_t hi)
{
	r->magic = MAGIC;
	r->mode = mode;
	atomic_store(&r->calls, 0);
	struct bk_stepper st = { sizeof(st), name, step_fn, r, lo, hi, prio };
	unsigned id = 0;
	int err = bk_space_add_stepper(s, &st, &id);
	CHECK_INT(err, 0, name);
	return id;
}

/* ---- A walk through test_top -> test_mid -> test_leaf ------------------------ */

struct walk {
	int n, result;
	uint64_t pc[MAXF];
	int how[MAXF];
	unsigned stepper[MAXF];
};

static struct bk_space *walk_space;
static struct walk *walk_out;
static volatile int sink;

__attribute__((noinline)) void test_leaf(void)
{
	struct bk_cursor c;
	struct walk *w = walk_out;
	w->n = 0;
	w->result = bk_cursor_init_local(&c, walk_space);
	if (w->result)
		return;
	do {
		if (w->n < MAXF) {
			w->pc[w->n] = bk_cursor_pc(&c);
			w->how[w->n] = bk_cursor_how(&c);
			w->stepper[w->n] = bk_cursor_stepper(&c);
			w->n++;
		}
	} while ((w->result = bk_cursor_step(&c)) == 1);
	sink++;
}

static int (*backtrace_fn)(void **, int);

static int raise_usr1(void **pcs, int max)
{
	(void)pcs;
	(void)max;
	raise(SIGUSR1);
	return 0;
}

static const char *name_of(uint64_t pc)
{
	Dl_info di;
	return dladdr((void *)(uintptr_t)(pc - 1), &di) && di.dli_sname ? di.dli_sname : "?";
}
static void *bt_pcs[MAXF];
static int bt_n;

__attribute__((noinline)) void test_mid(int bt)
{
	if (bt)
		bt_n = backtrace_fn(bt_pcs, MAXF);
	else
		test_leaf();
	sink++;
}

__attribute__((noinline)) void test_top(int bt)
{
	test_mid(bt);
	sink++;
}

__attribute__((noinline)) static void walk(struct bk_space *s, struct walk *w)
{
	walk_space = s;
	walk_out = w;
	test_top(0);
	sink++; /* not a tail call: walk() is a frame */
}

__attribute__((noinline)) static int backtrace_walk(int (*fn)(void **, int), void **pcs)
{
	backtrace_fn = fn;
	test_top(1);
	memcpy(pcs, bt_pcs, sizeof(bt_pcs));
	return bt_n;
}

/* The frame whose caller was made by stepping out of test_mid. */
static int mid_frame(const struct walk *w)
{
	for (int i = 0; i + 1 < w->n; i++)
		if (w->pc[i] - 1 >= mid_lo && w->pc[i] - 1 < mid_hi)
			return i;
	return -1;
}

/* Walks from different call sites: equal but for the return address into
 * the test function that called walk() (frame SKIP). */
static bool same_but(const uint64_t *a, int na, const uint64_t *b, int nb, int skip)
{
	if (na != nb)
		return false;
	for (int i = 0; i < na; i++)
		if (i != skip && a[i] != b[i])
			return false;
	return true;
}

static void same_pcs(const struct walk *a, const struct walk *b, const char *what)
{
	CHECK(same_but(a->pc, a->n, b->pc, b->n, mid_frame(b) + 3),
	      "%s: %d frames against %d, or other PCs", what, a->n, b->n);
	CHECK_INT(a->result, b->result, what);
	if (getenv("BK_TEST_VERBOSE"))
		for (int i = 0; i < a->n || i < b->n; i++) {
			Dl_info di;
			fprintf(stderr, "  %d %#lx %#lx %s\n", i, (unsigned long)a->pc[i],
				(unsigned long)b->pc[i],
				dladdr((void *)(uintptr_t)(b->pc[i] - 1), &di) && di.dli_sname ? di.dli_sname : "?");
		}
}

/* bk_backtrace from test_mid: test_mid, test_top, backtrace_walk, the test. */
static bool same_bt(void **a, int na, void **b, int nb)
{
	uint64_t x[MAXF], y[MAXF];
	for (int i = 0; i < na && i < MAXF; i++)
		x[i] = (uint64_t)(uintptr_t)a[i];
	for (int i = 0; i < nb && i < MAXF; i++)
		y[i] = (uint64_t)(uintptr_t)b[i];
	return same_but(x, na, y, nb, 3);
}

/* ---- Tests ------------------------------------------------------------------------ */

static void test_api(void)
{
	struct bk_space *s;
	CHECK_INT(bk_space_create_local(&s), 0, "space");
	struct rec r = { MAGIC, 0, MODE_NOT_MINE, 0 };
	struct bk_stepper st = { sizeof(st), "x", step_fn, &r, 0, 0, 10 };
	CHECK_INT(bk_space_add_stepper(NULL, &st, NULL), BK_E_INVAL, "no space");
	st.step = NULL;
	CHECK_INT(bk_space_add_stepper(s, &st, NULL), BK_E_INVAL, "no step function");
	st.step = step_fn;
	st.size = 8;
	CHECK_INT(bk_space_add_stepper(s, &st, NULL), BK_E_INVAL, "size too small");
	st.size = sizeof(st);
	st.start = 10;
	st.end = 5;
	CHECK_INT(bk_space_add_stepper(s, &st, NULL), BK_E_INVAL, "end before start");
	st.start = st.end = 0;
	CHECK_INT(bk_space_remove_stepper(s, 16), BK_E_NOT_FOUND, "nothing added yet");
	CHECK_INT(bk_space_remove_stepper(s, BK_STEPPER_CFI), BK_E_NOT_FOUND, "a built-in one");
	unsigned ids[33];
	int err = 0, n = 0;
	for (; n < 33 && !(err = bk_space_add_stepper(s, &st, &ids[n])); n++)
		;
	CHECK_INT(n, 32, "steppers a space holds");
	CHECK_INT(err, BK_E_LIMIT, "the 33rd");
	CHECK_INT(bk_space_steppers(s, NULL, 0), 36, "chain length");
	for (int i = 0; i < n; i++)
		CHECK_INT(bk_space_remove_stepper(s, ids[i]), 0, "remove");
	CHECK_INT(bk_space_remove_stepper(s, ids[0]), BK_E_NOT_FOUND, "removed twice");
	CHECK_INT(bk_space_steppers(s, NULL, 0), 4, "the built-in chain");
	CHECK(bk_space_add_stepper(s, &st, &ids[0]) == 0 && ids[0] > ids[n - 1],
	      "ids are not reused: %u after %u", ids[0], ids[n - 1]);

	uint64_t word = 0x1122334455667788ull, got = 0;
	CHECK_INT(bk_space_read(s, (uint64_t)(uintptr_t)&word, &got, 8), 0, "bk_space_read");
	CHECK_U64(got, word, "bk_space_read value");
	CHECK_INT(bk_space_read(s, 0x1000, &got, 8), BK_E_MEMORY, "bk_space_read unmapped");
	bk_space_destroy(s); /* with a stepper still added: freed with it */
}

static void test_order(void)
{
	struct bk_space *s;
	CHECK_INT(bk_space_create_local(&s), 0, "space");
	struct walk base, w;
	walk(s, &base);
	CHECK(base.result == 0 && base.n >= 4, "baseline walk: %d frames, result %d", base.n,
	      base.result);
	int mf = mid_frame(&base);
	CHECK(mf >= 0, "the baseline walk passes test_mid");
	for (int i = 0; i < base.n; i++)
		CHECK(base.how[i] != BK_HOW_USER && (i == 0 ? base.stepper[i] == 0
						       : base.stepper[i] >= BK_STEPPER_SIGNAL &&
							 base.stepper[i] <= BK_STEPPER_SCAN),
		      "baseline frame %d: how %d, stepper %u", i, base.how[i], base.stepper[i]);

	static struct rec a, b, c, d;
	unsigned ida = add(s, "A", &a, MODE_NOT_MINE, 150, mid_lo, mid_hi);
	unsigned idb = add(s, "B", &b, MODE_DELEGATE, 150, mid_lo, mid_hi);
	unsigned idc = add(s, "C", &c, MODE_DELEGATE, 250, mid_lo, mid_hi);
	unsigned idd = add(s, "D", &d, MODE_DELEGATE, 50, 1, 2);

	struct bk_stepper_info info[16];
	int n = bk_space_steppers(s, info, 16);
	CHECK_INT(n, 8, "chain length");
	static const unsigned want[] = { 0, BK_STEPPER_SIGNAL, 0, 0, BK_STEPPER_CFI, 0,
					 BK_STEPPER_FP, BK_STEPPER_SCAN };
	unsigned want_user[] = { idd, 0, ida, idb, 0, idc, 0, 0 };
	for (int i = 0; i < n && i < 8; i++) {
		unsigned wid = want[i] ? want[i] : want_user[i];
		CHECK(info[i].id == wid && info[i].builtin == (want[i] != 0),
		      "chain entry %d: id %u (%s), want %u", i, info[i].id, info[i].name, wid);
	}
	CHECK_STR(info[3].name, "B", "names kept");
	CHECK_U64(info[3].start, mid_lo, "range kept");

	walk(s, &w);
	same_pcs(&w, &base, "B before CFI");
	CHECK(w.how[mf + 1] == BK_HOW_USER && w.stepper[mf + 1] == idb,
	      "test_mid's caller made by B: how %d, stepper %u", w.how[mf + 1], w.stepper[mf + 1]);
	for (int i = 1; i < w.n; i++)
		if (i != mf + 1)
			CHECK(w.how[i] != BK_HOW_USER, "frame %d not in the range: how %d", i, w.how[i]);
	CHECK(atomic_load(&a.calls) == 1 && atomic_load(&b.calls) == 1,
	      "A asked first, then B: %d, %d", atomic_load(&a.calls), atomic_load(&b.calls));
	CHECK_INT(atomic_load(&c.calls), 0, "C after CFI: never asked");
	CHECK_INT(atomic_load(&d.calls), 0, "D's range misses: never asked");

	/* Without B, A declines and CFI takes the frame. */
	CHECK_INT(bk_space_remove_stepper(s, idb), 0, "remove B");
	walk(s, &w);
	same_pcs(&w, &base, "without B");
	CHECK(w.how[mf + 1] == BK_HOW_CFI && w.stepper[mf + 1] == BK_STEPPER_CFI,
	      "CFI again: how %d, stepper %u", w.how[mf + 1], w.stepper[mf + 1]);
	CHECK_INT(atomic_load(&a.calls), 2, "A asked again");
	CHECK_INT(atomic_load(&c.calls), 0, "C still never asked");
	bk_space_remove_stepper(s, ida);
	bk_space_remove_stepper(s, idc);
	bk_space_remove_stepper(s, idd);

	/* A stepper with no range before everything makes every frame. */
	static struct rec e;
	unsigned ide = add(s, "E", &e, MODE_DELEGATE, 0, 0, 0);
	walk(s, &w);
	same_pcs(&w, &base, "E everywhere");
	for (int i = 1; i < w.n; i++)
		CHECK(w.how[i] == BK_HOW_USER && w.stepper[i] == ide, "frame %d: how %d, stepper %u",
		      i, w.how[i], w.stepper[i]);
	CHECK_INT(atomic_load(&e.calls), base.n + 1, "E asked for every frame (and the step of bk_cursor_init_local; the last: bottom)");
	bk_space_remove_stepper(s, ide);
	bk_space_destroy(s);
}

/* One lying stepper before everything: the walk's end. */
static void liar(int mode, int want_err, int max_frames, const char *what)
{
	struct bk_space *s;
	CHECK_INT(bk_space_create_local(&s), 0, "space");
	static struct rec r;
	add(s, what, &r, mode, 0, 0, 0);
	struct walk w;
	walk(s, &w);
	CHECK(w.result == want_err, "%s: walk ended with %d (%s), want %d", what, w.result,
	      bk_strerror(w.result), want_err);
	CHECK(w.n <= max_frames, "%s: %d frames", what, w.n);
	bk_space_destroy(s);
}

static void test_liars(void)
{
	liar(MODE_SAME, BK_E_LOOP, 2, "no progress");
	liar(MODE_CYCLE, BK_E_LOOP, 3, "a cycle of two frames");
	liar(MODE_BADMEM, BK_E_MEMORY, 2, "a frame in unreadable memory");
	liar(MODE_NO_PC, BK_E_INVAL, 1, "a frame without a PC");
	liar(MODE_BAD_RESULT, BK_E_INVAL, 1, "not a step result");
	liar(MODE_ERROR, BK_E_CORRUPT, 1, "an error");

	/* Endless frames, each above the last: the frame limit. */
	struct bk_space *s;
	CHECK_INT(bk_space_create_local(&s), 0, "space");
	static struct rec r;
	add(s, "endless", &r, MODE_ENDLESS, 0, 0, 0);
	struct bk_cursor c;
	int k, n = 0;
	CHECK_INT(bk_cursor_init_local(&c, s), 0, "init");
	while ((k = bk_cursor_step(&c)) == 1)
		n++;
	CHECK_INT(k, BK_E_LIMIT, "endless: the frame limit");
	CHECK_INT(n, BK_MAX_FRAMES - 1, "endless: frames");
	bk_space_destroy(s);

	static struct rec bm;
	CHECK_INT(bm.read_err, 0, "");
	CHECK_INT(bk_space_create_local(&s), 0, "space");
	add(s, "badmem", &bm, MODE_BADMEM, 0, 0, 0);
	struct walk w;
	walk(s, &w);
	CHECK_INT(bm.read_err, BK_E_MEMORY, "the stepper's own read of unmapped memory");
	bk_space_destroy(s);

	/* The same liars on bk_backtrace's space: the walk goes to the cursor
	 * and ends, returning the frames it made. */
	static struct rec l;
	unsigned id = add(bk_space_local(), "liar", &l, MODE_SAME, 0, 0, 0);
	void *pcs[MAXF];
	int nb = backtrace_walk(bk_backtrace, pcs);
	CHECK(nb >= 0 && nb <= 2, "bk_backtrace with a stepper that makes no progress: %d", nb);
	bk_space_remove_stepper(bk_space_local(), id);
	id = add(bk_space_local(), "endless", &l, MODE_ENDLESS, 0, 0, 0);
	nb = backtrace_walk(bk_backtrace, pcs);
	CHECK_INT(nb, MAXF, "bk_backtrace with endless frames: as many as asked");
	bk_space_remove_stepper(bk_space_local(), id);
}

/* bk_backtrace: a PC outside every range costs nothing (no handover, the
 * stepper never asked); a PC inside one goes to the cursor. */
static void test_fast(void)
{
	struct bk_space *s = bk_space_local();
	void *base[MAXF], *pcs[MAXF];
	int nbase = backtrace_walk(bk_backtrace, base);
	CHECK(nbase >= 4, "bk_backtrace: %d frames", nbase);
	int n = backtrace_walk(uw_backtrace_cursor, pcs);
	CHECK(same_bt(pcs, n, base, nbase),
	      "the cursor's bk_backtrace");

	/* Eight ranges in anonymous memory nothing runs in. */
	uint8_t *arena = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(arena != MAP_FAILED, "mmap");
	static struct rec miss[8];
	unsigned ids[8];
	for (int i = 0; i < 8; i++) {
		uint64_t lo = (uint64_t)(uintptr_t)arena + (uint64_t)i * 4096;
		ids[i] = add(s, "miss", &miss[i], MODE_DELEGATE, 50 + i * 100, lo, lo + 2048);
	}
	unsigned long h0 = atomic_load(&uw_fast_handovers);
	n = backtrace_walk(bk_backtrace, pcs);
	CHECK(same_bt(pcs, n, base, nbase),
	      "bk_backtrace with 8 ranges that miss");
	CHECK(atomic_load(&uw_fast_handovers) == h0, "no handover: %lu",
	      atomic_load(&uw_fast_handovers) - h0);
	for (int i = 0; i < 8; i++)
		CHECK_INT(atomic_load(&miss[i].calls), 0, "a range that misses");

	/* A range holding test_mid: the cursor's walk, the stepper asked. */
	static struct rec hit, take;
	unsigned idh = add(s, "hit", &hit, MODE_NOT_MINE, 50, mid_lo, mid_hi);
	n = backtrace_walk(bk_backtrace, pcs);
	CHECK(same_bt(pcs, n, base, nbase),
	      "bk_backtrace through a claimed range");
	CHECK(atomic_load(&uw_fast_handovers) == h0 + 1, "one handover: %lu",
	      atomic_load(&uw_fast_handovers) - h0);
	CHECK_INT(atomic_load(&hit.calls), 1, "the stepper asked for test_mid's frame");
	bk_space_remove_stepper(s, idh);
	unsigned idt = add(s, "take", &take, MODE_DELEGATE, 50, mid_lo, mid_hi);
	n = backtrace_walk(bk_backtrace, pcs);
	CHECK(same_bt(pcs, n, base, nbase),
	      "bk_backtrace with a stepper making test_mid's caller");
	CHECK_INT(atomic_load(&take.calls), 1, "the delegate made a frame");
	bk_space_remove_stepper(s, idt);
	for (int i = 0; i < 8; i++)
		bk_space_remove_stepper(s, ids[i]);
	h0 = atomic_load(&uw_fast_handovers);
	n = backtrace_walk(bk_backtrace, pcs);
	CHECK(n == nbase && atomic_load(&uw_fast_handovers) == h0, "all removed: the fast walk");
	munmap(arena, 1 << 20);
}

/* From a signal handler: bk_backtrace and a cursor from the ucontext, with
 * an AS-safe stepper (the delegate: a cursor over another local space)
 * making the frame of test_mid's caller. The signal arrives in test_mid's
 * callee (raise), so the walks cross the signal frame first. */
static unsigned sig_id;
static struct rec sig_rec;
static void *sig_pcs[MAXF];
static int sig_n, sig_user_frames, sig_cursor_n;

static void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	sig_n = bk_backtrace(sig_pcs, MAXF);
	struct bk_cursor c;
	sig_user_frames = 0;
	sig_cursor_n = 0;
	if (bk_cursor_init_ucontext(&c, bk_space_local(), ucv) != 0)
		return;
	do {
		sig_cursor_n++;
		if (bk_cursor_how(&c) == BK_HOW_USER && bk_cursor_stepper(&c) == sig_id)
			sig_user_frames++;
	} while (bk_cursor_step(&c) == 1);
}

static void test_signal(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sig_id = add(bk_space_local(), "in a handler", &sig_rec, MODE_DELEGATE, 50, mid_lo, mid_hi);
	backtrace_fn = raise_usr1;
	test_top(1);
	bk_space_remove_stepper(bk_space_local(), sig_id);
	signal(SIGUSR1, SIG_DFL);
	int mid_at = -1;
	for (int i = 0; i < sig_n && mid_at < 0; i++)
		if ((uint64_t)(uintptr_t)sig_pcs[i] - 1 >= mid_lo &&
		    (uint64_t)(uintptr_t)sig_pcs[i] - 1 < mid_hi)
			mid_at = i;
	CHECK(mid_at > 0 && mid_at + 2 < sig_n &&
	      !strcmp(name_of((uint64_t)(uintptr_t)sig_pcs[mid_at + 1]), "test_top"),
	      "bk_backtrace in the handler: test_mid at %d of %d, then test_top", mid_at, sig_n);
	CHECK(atomic_load(&sig_rec.calls) == 2, "the stepper asked by both walks: %d",
	      atomic_load(&sig_rec.calls));
	CHECK(sig_user_frames == 1 && sig_cursor_n >= 4,
	      "the cursor in the handler: %d frames by the stepper, %d frames", sig_user_frames,
	      sig_cursor_n);
}

/* Steppers added and removed while another thread walks through their
 * range; the ctx is freed right after each removal. */
static _Atomic int stop;
static struct bk_space *race_space;

static void *walker(void *arg)
{
	(void)arg;
	struct walk w;
	long walks = 0;
	while (!atomic_load(&stop)) {
		walk(race_space, &w);
		void *pcs[MAXF];
		backtrace_walk(bk_backtrace, pcs);
		walks++;
	}
	return (void *)walks;
}

static void test_race(void)
{
	CHECK_INT(bk_space_create_local(&race_space), 0, "space");
	pthread_t t;
	pthread_create(&t, NULL, walker, NULL);
	long called = 0;
	for (int i = 0; i < 600; i++) {
		struct rec *r = malloc(sizeof(*r));
		struct bk_space *s = i % 2 ? race_space : bk_space_local();
		unsigned id = add(s, "racer", r, MODE_DELEGATE, i % 3 ? 50 : 250, mid_lo, mid_hi);
		/* Half the time, remove it right after a walk called it (most
		 * likely while the next call is under way). */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t1);
		while (i % 2 == 0 && !atomic_load(&r->calls) &&
		       (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 2000000L);
		CHECK_INT(bk_space_remove_stepper(s, id), 0, "remove while walking");
		called += atomic_load(&r->calls);
		r->magic = 0;
		free(r);
	}
	atomic_store(&stop, 1);
	void *walks;
	pthread_join(t, &walks);
	printf("race: %ld walks meanwhile, the steppers called %ld times\n", (long)walks, called);
	CHECK(!atomic_load(&bad_ctx), "a stepper was called after its removal");
	CHECK((long)walks > 0 && called > 0, "the walker walked, through the steppers");
	bk_space_destroy(race_space);
}

int main(void)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1((void *)test_mid, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym) {
		fprintf(stderr, "test_mid has no symbol (link with -rdynamic)\n");
		return 1;
	}
	mid_lo = (uint64_t)(uintptr_t)test_mid;
	mid_hi = mid_lo + sym->st_size;
	if (bk_space_create_local(&plain))
		return 1;
	test_api();
	test_order();
	test_liars();
	test_fast();
	test_signal();
	test_race();
	bk_space_destroy(plain);
	return check_summary();
}
