/* A signal interrupting code whose callee-saved registers hold known values
 * (sigregs_<arch>.S sends it to itself with raw system calls, so the
 * interrupted PC is its own, sr_after_svc):
 *   - bk_cursor_init_ucontext gives them all at frame 0, d8-d15 included
 *     (AArch64: from the fpsimd record in uc_mcontext.__reserved), and its
 *     caller's at frame 1;
 *   - a cursor started in the handler by bk_cursor_init_local crosses the
 *     signal frame and finds the same values in the interrupted frame
 *     (the signal-frame step reads the same record);
 *   - bk_backtrace lists the interrupted PC and then its caller's;
 * and every walk ends cleanly. Twice: cold and warm caches. Built plain
 * and, on AArch64, with -mbranch-protection=standard (tests/meson.build). */
#include <signal.h>
#include <string.h>

#include "backstep.h"
#include "check.h"

#if defined(__aarch64__)
#define HOST_ARCH BK_ARCH_AARCH64
#define SR_NREGS 19
/* x19-x29, d8-d15; sr_raise_known loads 0x0123456789abcd00 + the DWARF number. */
static const unsigned callee_saved[SR_NREGS] = { 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
						 72, 73, 74, 75, 76, 77, 78, 79 };
#endif

struct sr_out {
	uint64_t ra;
	uint64_t entry[SR_NREGS]; /* in the order of callee_saved */
};
void sr_raise_known(struct sr_out *out, int sig);
extern const char sr_after_svc[];

#define MAXF 64
struct walk {
	int init, n, rc;
	uint64_t pc[MAXF];
	int how[MAXF];
	int got[MAXF][SR_NREGS];
	uint64_t val[MAXF][SR_NREGS];
};
static struct walk w_uc, w_local;
static void *bt[MAXF];
static int nbt;

static void record(struct bk_cursor *c, struct walk *w)
{
	w->n = 0;
	w->rc = 1;
	do {
		int i = w->n++;
		w->pc[i] = bk_cursor_pc(c);
		w->how[i] = bk_cursor_how(c);
		for (int r = 0; r < SR_NREGS; r++)
			w->got[i][r] = bk_cursor_reg(c, callee_saved[r], &w->val[i][r]);
	} while (w->n < MAXF && (w->rc = bk_cursor_step(c)) == 1);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	struct bk_cursor c;
	w_uc.init = bk_cursor_init_ucontext(&c, bk_space_local(), uc);
	if (w_uc.init == 0)
		record(&c, &w_uc);
	w_local.init = bk_cursor_init_local(&c, bk_space_local());
	if (w_local.init == 0)
		record(&c, &w_local);
	nbt = bk_backtrace(bt, MAXF);
}

/* Frame I of W is sr_raise_known interrupted with the known values, and
 * frame I + 1 its caller with the values recorded on entry. */
static void check_frames(const struct walk *w, int i, const struct sr_out *out, const char *what)
{
	CHECK(i >= 0 && i + 1 < w->n, "%s: the interrupted frame and its caller (%d of %d)", what, i,
	      w->n);
	if (i < 0 || i + 1 >= w->n)
		return;
	CHECK_U64(w->pc[i], (uint64_t)(uintptr_t)sr_after_svc, what);
	CHECK_U64(w->pc[i + 1], out->ra, what);
	for (int r = 0; r < SR_NREGS; r++) {
		const char *name = bk_reg_name(HOST_ARCH, callee_saved[r]);
		CHECK(w->got[i][r] == 1, "%s: interrupted frame: %s not recovered", what, name);
		CHECK_U64(w->val[i][r], 0x0123456789abcd00ull + callee_saved[r], name);
		CHECK(w->got[i + 1][r] == 1, "%s: its caller: %s not recovered", what, name);
		CHECK_U64(w->val[i + 1][r], out->entry[r], name);
	}
	CHECK_INT(w->rc, 0, what);
}

__attribute__((noinline)) static void round_trip(const char *what)
{
	struct sr_out out;
	memset(&w_uc, 0, sizeof(w_uc));
	memset(&w_local, 0, sizeof(w_local));
	nbt = 0;
	sr_raise_known(&out, SIGUSR1);

	CHECK_INT(w_uc.init, 0, "bk_cursor_init_ucontext");
	check_frames(&w_uc, 0, &out, what);
	CHECK_INT(w_local.init, 0, "bk_cursor_init_local");
	int sig = -1;
	for (int i = 0; i < w_local.n && sig < 0; i++)
		if (w_local.how[i] == BK_HOW_SIGNAL)
			sig = i;
	check_frames(&w_local, sig, &out, what);
	int at = -1;
	for (int i = 0; i + 1 < nbt && at < 0; i++)
		if ((uintptr_t)bt[i] == (uintptr_t)sr_after_svc)
			at = i;
	CHECK(at >= 0 && (uintptr_t)bt[at + 1] == out.ra,
	      "%s: bk_backtrace: the interrupted PC then its caller's (at %d of %d)", what, at, nbt);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	round_trip("cold");
	round_trip("warm");
	return check_summary();
}
