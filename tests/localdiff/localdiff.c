/* localdiff: the in-process walk against itself and against two other
 * unwinders, at random instructions of the fixture programs.
 *
 * Why: the fixtures suite proves the cursor at every instruction under
 * ptrace; this proves the in-process walk (bk_backtrace's fast walk, a
 * cursor from bk_cursor_init_local, a cursor from a signal's ucontext) on
 * the same code, in the same process, from a SIGPROF handler — the way a
 * profiler uses it — and compares it with glibc's backtrace() (libgcc's
 * unwinder) and nongnu libunwind's unw_backtrace.
 *
 * How: tests/localdiff/meson.build compiles one fixture program (fixtures/)
 * by gcc or clang, -O0/-O2, with and without frame pointers, with its main
 * renamed localdiff_fixture_main, and links it with this file. main() runs
 * the fixture's main over and over for --seconds while SIGPROF arrives from
 * setitimer(ITIMER_PROF) and from a pinger thread (the CPU timer fires only
 * at the kernel's tick, 250 Hz here: the pinger makes it thousands per
 * second, at whatever instruction the thread is at). The handler takes all
 * five walks from the same point into a preallocated ring (no malloc, no
 * stdio, errno kept); a monitor thread compares them:
 *
 *  - bk_backtrace and the init_local cursor: the same frames, always (both
 *    start at the handler's frame; their first PCs are two call sites in
 *    it). The cursor's walk must end cleanly (step returned 0), and
 *    backstep's walks must leave errno alone.
 *  - the ucontext cursor: the same frames as bk_backtrace below the
 *    handler and the signal trampoline, always.
 *  - libgcc and libunwind: the same frames as bk_backtrace below the
 *    handler. Each disagreement gets a signature (peer, kind, the function
 *    where the walks part); a signature not listed in the expected-file
 *    (--expected; EXPECTED.md gives each entry's evidence) fails the test.
 *    A peer that crashes (SIGSEGV/SIGBUS inside it) is caught and counted
 *    the same way, keyed by where the signal landed.
 *
 * One window is left out of the comparison with the peers: a thread whose
 * C++ exception is being delivered, between the personality routine's
 * _URC_INSTALL_CONTEXT and the jump to the landing pad. libgcc then copies
 * the landing frame's registers into the save slots of its own frames
 * (uw_install_context_1), so the stack no longer matches its CFI: libgcc's
 * backtrace() crashes there, gdb says "corrupt stack?", and backstep's
 * walk returns garbage frames (EXPECTED.md, "install window"). The
 * window is known exactly: __gxx_personality_v0, _Unwind_Resume and
 * __cxa_begin_catch are wrapped here. In it backstep's walks must still
 * agree with each other and not crash; samples there are counted apart.
 *
 * The fixture's own exit status is checked on every run (--later-status:
 * the status of runs after the first, for fixtures whose static counters
 * are not reset between runs). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fnmatch.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <unwind.h>

#include "backstep.h"

/* The fixture's main (renamed by -Dmain=...). Some fixtures define it as
 * main(void): called with (argc, argv) all the same, as the C runtime
 * calls main; harmless in the x86-64 calling convention. */
int localdiff_fixture_main(int argc, char **argv);

/* ---- the samples ---------------------------------------------------------- */

enum { P_BK, P_CUR, P_UC, P_GCC, P_UNW, NP };
static const char *const peer_name[NP] = { "bk_backtrace", "cursor", "ucontext", "libgcc",
					    "libunwind" };

#define MAXF 256
#define RING 512
enum { FREE, FILLING, READY };
struct slot {
	atomic_int state;
	int n[NP];
	int rc_cur, rc_uc;
	bool errno_changed, main_thread, window;
	int crashed[NP]; /* the signal that stopped the peer, or 0 */
	long ns[NP];     /* time taken by each walk */
	void *pc[NP][MAXF];
};
static struct slot ring[RING];
static atomic_uint ring_next;
static atomic_long dropped, taken, taken_threads;
static pid_t main_tid;
static int (*unw_backtrace_fn)(void **, int);

static struct slot *claim(void)
{
	for (int k = 0; k < 8; k++) {
		struct slot *s = &ring[atomic_fetch_add(&ring_next, 1) % RING];
		int want = FREE;
		if (atomic_compare_exchange_strong(&s->state, &want, FILLING))
			return s;
	}
	return NULL;
}

static int cursor_walk(struct bk_cursor *c, int rc, void **out, int *n)
{
	*n = 0;
	if (rc != 0)
		return rc;
	do {
		if (*n < MAXF)
			out[(*n)++] = (void *)(uintptr_t)bk_cursor_pc(c);
	} while ((rc = bk_cursor_step(c)) == 1);
	return rc;
}

static long clock_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* ---- the exception install window ----------------------------------------- */

struct range {
	uintptr_t lo, hi;
};
static struct range r_libgcc_s; /* libgcc_s.so.1's code */
static _Unwind_Reason_Code (*real_personality)(int, _Unwind_Action, _Unwind_Exception_Class,
					       struct _Unwind_Exception *,
					       struct _Unwind_Context *);
static _Unwind_Word (*get_cfa)(struct _Unwind_Context *);
static void (*real_resume)(struct _Unwind_Exception *);
static void *(*real_begin_catch)(void *);
/* Set when the personality routine told libgcc to install a landing pad:
 * the landing frame's CFA (libgcc's frames doing the install are all
 * below it). Cleared at the next personality call and where the landing
 * pad ends: in _Unwind_Resume (a cleanup) or __cxa_begin_catch (a
 * handler), both wrapped here too (the fixture calls them through the
 * PLT; the wrappers' frames have CFI, so unwinding passes through). */
static __thread uintptr_t installing_cfa;

_Unwind_Reason_Code __gxx_personality_v0(int version, _Unwind_Action actions,
					 _Unwind_Exception_Class cls,
					 struct _Unwind_Exception *ex,
					 struct _Unwind_Context *ctx);
_Unwind_Reason_Code __gxx_personality_v0(int version, _Unwind_Action actions,
					 _Unwind_Exception_Class cls,
					 struct _Unwind_Exception *ex,
					 struct _Unwind_Context *ctx)
{
	installing_cfa = 0;
	_Unwind_Reason_Code rc = real_personality(version, actions, cls, ex, ctx);
	if (rc == _URC_INSTALL_CONTEXT)
		installing_cfa = (uintptr_t)get_cfa(ctx);
	return rc;
}

void _Unwind_Resume(struct _Unwind_Exception *ex)
{
	installing_cfa = 0;
	real_resume(ex);
	abort(); /* not reached */
}

void *__cxa_begin_catch(void *ex);
void *__cxa_begin_catch(void *ex)
{
	installing_cfa = 0;
	return real_begin_catch(ex);
}

/* In the window: after an install began, in libgcc_s, below the landing
 * frame. */
static bool in_install_window(const ucontext_t *uc)
{
	if (!installing_cfa)
		return false;
	uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	return pc >= r_libgcc_s.lo && pc < r_libgcc_s.hi && sp <= installing_cfa;
}

/* ---- the handler ------------------------------------------------------------ */

/* A peer that faults is abandoned and the sample records it. libgcc's
 * _Unwind_Backtrace takes no lock; should libunwind fault holding one of
 * its own, its next call would hang and the test time out: loud either
 * way. */
static __thread sigjmp_buf *fault_jump;

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	if (fault_jump)
		siglongjmp(*fault_jump, sig);
	signal(sig, SIG_DFL); /* not a peer's: crash as usual */
}

/* All walks start here: bk_backtrace's first PC and the init_local
 * cursor's first frame are in this function, libgcc's and libunwind's
 * lists have it at their first or second entry (ASan's backtrace
 * interceptor adds one). */
void localdiff_on_prof(int sig, siginfo_t *si, void *uc);
__attribute__((noinline)) void localdiff_on_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	int saved_errno = errno;
	struct slot *s = claim();
	if (!s) {
		atomic_fetch_add(&dropped, 1);
		return;
	}
	s->main_thread = syscall(SYS_gettid) == main_tid;
	s->window = in_install_window(uc);
	errno = 12345;
	long t = clock_ns();
	s->n[P_BK] = bk_backtrace(s->pc[P_BK], MAXF);
	long t2 = clock_ns();
	s->ns[P_BK] = t2 - t;
	struct bk_cursor c;
	s->rc_cur = cursor_walk(&c, bk_cursor_init_local(&c, bk_space_local()), s->pc[P_CUR],
				&s->n[P_CUR]);
	t = clock_ns();
	s->ns[P_CUR] = t - t2;
	s->rc_uc = cursor_walk(&c, bk_cursor_init_ucontext(&c, bk_space_local(), uc), s->pc[P_UC],
			       &s->n[P_UC]);
	t2 = clock_ns();
	s->ns[P_UC] = t2 - t;
	s->errno_changed = errno != 12345;
	for (int p = P_GCC; p <= P_UNW; p++) {
		s->n[p] = 0;
		s->crashed[p] = 0;
		s->ns[p] = 0;
		if (s->window)
			continue;
		sigjmp_buf jb;
		int fault = sigsetjmp(jb, 1);
		if (fault == 0) {
			fault_jump = &jb;
			t = clock_ns();
			s->n[p] = p == P_GCC ? backtrace(s->pc[p], MAXF) : unw_backtrace_fn(s->pc[p], MAXF);
			s->ns[p] = clock_ns() - t;
		} else {
			s->crashed[p] = fault;
		}
		fault_jump = NULL;
	}
	atomic_store_explicit(&s->state, READY, memory_order_release);
	atomic_fetch_add(&taken, 1);
	if (!s->main_thread)
		atomic_fetch_add(&taken_threads, 1);
	errno = saved_errno;
	__asm__ volatile("" ::: "memory"); /* keep the calls above out of a tail position */
}

/* ---- who gets signals: the main thread and the fixture's threads -------- */

#define NTIDS 16
static atomic_int tids[NTIDS];
static atomic_bool stop_pinger, stop_monitor;
static long ping_ns = 25000;

static int add_tid(int tid)
{
	for (int i = 0; i < NTIDS; i++) {
		int want = 0;
		if (atomic_compare_exchange_strong(&tids[i], &want, tid))
			return i;
	}
	return -1;
}

/* threads.c is compiled with -Dpthread_create=localdiff_pthread_create:
 * its threads register themselves for the pinger. */
struct start {
	atomic_bool used;
	void *(*fn)(void *);
	void *arg;
};
static struct start starts[64];

static void *thread_start(void *p)
{
	struct start *st = p;
	void *(*fn)(void *) = st->fn;
	void *arg = st->arg;
	atomic_store(&st->used, false);
	int slot = add_tid((int)syscall(SYS_gettid));
	void *r = fn(arg);
	if (slot >= 0)
		atomic_store(&tids[slot], 0);
	return r;
}

int localdiff_pthread_create(pthread_t *restrict t, const pthread_attr_t *restrict a,
			     void *(*fn)(void *), void *restrict arg);
int localdiff_pthread_create(pthread_t *restrict t, const pthread_attr_t *restrict a,
			     void *(*fn)(void *), void *restrict arg)
{
	for (int i = 0; i < 64; i++) {
		bool want = false;
		if (atomic_compare_exchange_strong(&starts[i].used, &want, true)) {
			starts[i].fn = fn;
			starts[i].arg = arg;
			int rc = pthread_create(t, a, thread_start, &starts[i]);
			if (rc)
				atomic_store(&starts[i].used, false);
			return rc;
		}
	}
	return EAGAIN;
}

static void *pinger(void *arg)
{
	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pid_t pid = getpid();
	struct timespec d = { 0, ping_ns };
	while (!atomic_load(&stop_pinger)) {
		for (int i = 0; i < NTIDS; i++) {
			int t = atomic_load(&tids[i]);
			if (t)
				syscall(SYS_tgkill, pid, t, SIGPROF);
		}
		nanosleep(&d, NULL);
	}
	return NULL;
}

/* ---- comparing (monitor thread) ------------------------------------------ */

static struct range r_handler;

static bool in_handler(const void *pc)
{
	return (uintptr_t)pc >= r_handler.lo && (uintptr_t)pc < r_handler.hi;
}

/* The index after the handler's entry in LIST, or -1. */
static int after_handler(void *const *list, int n)
{
	for (int i = 0; i < n && i < 4; i++)
		if (in_handler(list[i]))
			return i + 1;
	return -1;
}

static struct bk_space *names; /* for symbols: the monitor's own local space */
static const char *build_name = "?";

/* Where a PC is: its function (blanks taken out), the offset in it, its
 * module ("exe" for the test program) and the offset in that; AFTER_CALL:
 * the 5 bytes before it are a `call rel32` (the PC is also a return
 * address). LOOKUP_BACK: PC is a return address, looked up at PC - 1;
 * RA_AT_FN_START: such a PC that is also the first byte of a function (the
 * call was the last instruction of the one before). */
struct place {
	char fn[160];
	const char *mod;
	unsigned long long fn_off, mod_off;
	bool after_call, ra_at_fn_start;
};

static void locate(const void *pc, bool lookup_back, struct place *pl)
{
	snprintf(pl->fn, sizeof(pl->fn), "?");
	pl->mod = "?";
	pl->fn_off = pl->mod_off = 0;
	pl->after_call = pl->ra_at_fn_start = false;
	if (!pc) {
		snprintf(pl->fn, sizeof(pl->fn), "(end)");
		pl->mod = "-";
		return;
	}
	uint64_t a = (uint64_t)(uintptr_t)pc - (lookup_back ? 1 : 0);
	struct bk_symbol sym[8];
	int k = bk_space_symbolize(names, a, sym, 8);
	if (k > 0 && sym[k - 1].function) {
		size_t j = 0;
		for (const char *q = sym[k - 1].function; *q && j + 1 < sizeof(pl->fn); q++)
			if (*q != ' ')
				pl->fn[j++] = *q;
		pl->fn[j] = 0;
		pl->fn_off = sym[k - 1].offset + (lookup_back ? 1 : 0);
	}
	if (lookup_back) {
		k = bk_space_symbolize(names, (uint64_t)(uintptr_t)pc, sym, 8);
		pl->ra_at_fn_start = k > 0 && sym[k - 1].function && sym[k - 1].offset == 0;
	}
	Dl_info info;
	if (dladdr((void *)(uintptr_t)a, &info) && info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');
		pl->mod = slash ? slash + 1 : info.dli_fname;
		if (strncmp(pl->mod, "localdiff_", 10) == 0)
			pl->mod = "exe"; /* the test program: fixture and harness */
		else if (strncmp(pl->mod, "linux-vdso", 10) == 0)
			pl->mod = "vdso";
		uintptr_t base = (uintptr_t)info.dli_fbase;
		pl->mod_off = (uintptr_t)pc - base;
		if ((uintptr_t)pc - 5 >= base)
			pl->after_call = *((const unsigned char *)pc - 5) == 0xe8;
	}
}

/* Signatures of disagreements: PEER KIND WHERE LANDED-FUNCTION, counted;
 * the first sample that no expected line explains is kept as an example. */
#define NSIG_MAX 64
#define NOFFS 8
struct signature {
	char key[512];
	long count, unexpected;
	char offs[NOFFS][24];
	int noffs;
	char example[6144];
};
static struct signature sigs[NSIG_MAX];
static int nsigs;
static long sig_overflow;

/* The expected-file: BUILD PEER KIND WHERE LANDED, fnmatch(3) patterns,
 * and optionally "libgcc-agrees": the line holds only for samples where
 * libgcc's walk is backstep's (a libunwind bug must not hide one of ours). */
struct expect {
	char f[5][200];
	bool need_libgcc;
	int line;
};
static bool sample_libgcc_agrees; /* of the sample being compared */
#define NEXPECT 128
static struct expect expects[NEXPECT];
static int nexpects;

static bool is_expected(const char *const v[5])
{
	for (int i = 0; i < nexpects; i++) {
		int k = 0;
		while (k < 5 && fnmatch(expects[i].f[k], v[k], 0) == 0)
			k++;
		if (k == 5 && (!expects[i].need_libgcc || sample_libgcc_agrees))
			return true;
	}
	return false;
}

/* Append a frame list; frames from FIRST_BACK on are return addresses. */
static void list_text(char *out, size_t len, const char *title, void *const *pc, int n,
		      int first_back)
{
	size_t o = strlen(out);
	o += (size_t)snprintf(out + o, o < len ? len - o : 0, "    %s (%d frames):\n", title, n);
	for (int i = 0; i < n && o < len; i++) {
		struct place pl;
		locate(pc[i], i >= first_back, &pl);
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "      #%d %p %s+0x%llx %s+0x%llx\n",
				      i, pc[i], pl.fn, pl.fn_off, pl.mod, pl.mod_off);
	}
}

/* Count a disagreement of PEER of kind KIND where the walks part (the
 * frame at WHERE), the signal having landed at LANDED (EXCUSABLE: an
 * expected line may explain it). Examples show backstep's frames from the
 * handler's caller on (the trampoline, then the interrupted PC) and the
 * peer's (PEER_IDX from PEER_OFF). */
static void note(const char *peer, const char *kind, const struct place *where,
		 const struct place *landed, bool excusable, const struct slot *s, int peer_idx,
		 int peer_off, const char *detail)
{
	char w[256], l[256], key[512], off[24];
	snprintf(w, sizeof(w), "%s@%s%s", where->fn, where->mod,
		 where->ra_at_fn_start ? "!ra-at-fn-start" : "");
	snprintf(l, sizeof(l), "%s+0x%llx@%s%s", landed->fn, landed->fn_off, landed->mod,
		 landed->after_call ? "!after-call" : "");
	snprintf(key, sizeof(key), "%s %s %s %s@%s", peer, kind, w, landed->fn, landed->mod);
	snprintf(off, sizeof(off), "+0x%llx%s", landed->fn_off, landed->after_call ? "!" : "");
	const char *v[5] = { build_name, peer, kind, w, l };
	bool expected = excusable && is_expected(v);
	struct signature *g = NULL;
	for (int i = 0; i < nsigs && !g; i++)
		if (strcmp(sigs[i].key, key) == 0)
			g = &sigs[i];
	if (!g) {
		if (nsigs == NSIG_MAX) {
			sig_overflow++;
			return;
		}
		g = &sigs[nsigs++];
		snprintf(g->key, sizeof(g->key), "%s", key);
	}
	g->count++;
	int i = 0;
	while (i < g->noffs && strcmp(g->offs[i], off) != 0)
		i++;
	if (i == g->noffs && g->noffs < NOFFS)
		snprintf(g->offs[g->noffs++], sizeof(g->offs[0]), "%s", off);
	if (expected || g->unexpected++)
		return;
	snprintf(g->example, sizeof(g->example), "    %s; landed at %s\n", detail, l);
	list_text(g->example, sizeof(g->example), "backstep", s->pc[P_BK] + 1, s->n[P_BK] - 1, 2);
	if (peer_idx >= 0 && peer_idx != P_BK)
		list_text(g->example, sizeof(g->example), peer, s->pc[peer_idx] + peer_off,
			  s->n[peer_idx] - peer_off, peer_idx == P_UC ? 1 : 2);
}

struct stats {
	long samples, main_samples, thread_samples, window;
	long cur_diff, uc_diff, bad_end, full, unaligned, errno_changed;
	long same[NP], differ[NP], crashed[NP];
	double ns[NP];
	long land_exe, land_libc, land_other, distinct_exe;
};
static struct stats st;

/* The distinct interrupted PCs in the executable (open addressing). */
#define NSEEN 65536
static uintptr_t seen[NSEEN];

static int add_distinct(const void *pc)
{
	uintptr_t v = (uintptr_t)pc;
	for (size_t i = (v * 0x9e3779b97f4a7c15ull) >> 48, k = 0; k < NSEEN; i = (i + 1) % NSEEN, k++) {
		if (seen[i] == v)
			return 0;
		if (seen[i] == 0) {
			seen[i] = v;
			return 1;
		}
	}
	return 0;
}

static void compare(const struct slot *s)
{
	st.samples++;
	if (s->main_thread)
		st.main_samples++;
	else
		st.thread_samples++;
	for (int p = 0; p < NP; p++) {
		st.ns[p] += (double)s->ns[p];
		if (s->n[p] >= MAXF)
			st.full++; /* no walk here is that deep: a loop */
	}
	if (s->errno_changed)
		st.errno_changed++;
	const int nb = s->n[P_BK];
	void *const *b = s->pc[P_BK];
	struct place where, landed;
	char detail[300];
	/* Both walks of backstep start at this handler. */
	if (after_handler(b, nb) != 1 || after_handler(s->pc[P_CUR], s->n[P_CUR]) != 1 || nb < 3) {
		st.unaligned++;
		snprintf(detail, sizeof(detail), "bk_backtrace: %d frames, cursor: %d frames", nb,
			 s->n[P_CUR]);
		locate(NULL, false, &where);
		note("backstep", "no-handler-frame", &where, &where, false, s, P_CUR, 0, detail);
		return;
	}
	/* Where the signal landed: the interrupted PC, b[2] (named only when
	 * a disagreement needs it: symbols are slow). */
	Dl_info info;
	const char *mod = dladdr(b[2], &info) && info.dli_fname ? info.dli_fname : "";
	mod = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
	if (strncmp(mod, "localdiff_", 10) == 0) {
		st.land_exe++;
		st.distinct_exe += add_distinct(b[2]);
	} else if (strncmp(mod, "libc.so", 7) == 0) {
		st.land_libc++;
	} else {
		st.land_other++;
	}
	bool same_peers = !s->window;
	for (int p = P_GCC; p <= P_UNW && same_peers; p++) {
		int off = after_handler(s->pc[p], s->n[p]);
		same_peers = !s->crashed[p] && off >= 0 && s->n[p] - off == nb - 1 &&
			     !memcmp(b + 1, s->pc[p] + off, (size_t)(nb - 1) * sizeof(*b));
	}
	if ((same_peers || s->window) && s->n[P_CUR] == nb && s->n[P_UC] == nb - 2 &&
	    s->rc_uc == s->rc_cur && (s->rc_cur == 0 || s->window) &&
	    !memcmp(b + 1, s->pc[P_CUR] + 1, (size_t)(nb - 1) * sizeof(*b)) &&
	    !memcmp(b + 2, s->pc[P_UC], (size_t)(nb - 2) * sizeof(*b))) {
		if (s->window)
			st.window++; /* no unwinder can be right here (see the top) */
		else
			st.same[P_GCC]++, st.same[P_UNW]++;
		return; /* the common case, without looking up any name */
	}
	locate(b[2], false, &landed);
	/* bk_backtrace against the init_local cursor: identical, always. */
	if (s->n[P_CUR] != nb || memcmp(b + 1, s->pc[P_CUR] + 1, (size_t)(nb - 1) * sizeof(*b))) {
		st.cur_diff++;
		int k = 1;
		while (k < nb && k < s->n[P_CUR] && b[k] == s->pc[P_CUR][k])
			k++;
		locate(b[k - 1], k - 1 != 2, &where);
		snprintf(detail, sizeof(detail),
			 "cursor (rc %d) and bk_backtrace differ at frame %d (lists from the handler's caller)",
			 s->rc_cur, k - 1);
		note("cursor", "differs-after", &where, &landed, false, s, P_CUR, 1, detail);
	}
	/* The ucontext cursor: bk_backtrace below the handler and trampoline. */
	if (s->rc_uc != s->rc_cur || s->n[P_UC] != nb - 2 ||
	    memcmp(b + 2, s->pc[P_UC], (size_t)(nb - 2) * sizeof(*b))) {
		st.uc_diff++;
		int k = 0;
		while (k < nb - 2 && k < s->n[P_UC] && b[k + 2] == s->pc[P_UC][k])
			k++;
		locate(k ? b[k + 1] : b[2], k > 1, &where);
		snprintf(detail, sizeof(detail), "ucontext cursor (rc %d) differs at its frame %d",
			 s->rc_uc, k);
		note("ucontext", "differs-after", &where, &landed, false, s, P_UC, 0, detail);
	}
	if (s->window) {
		st.window++; /* no unwinder can be right here (see the top) */
		return;
	}
	if (s->rc_cur != 0) {
		st.bad_end++;
		locate(s->pc[P_CUR][s->n[P_CUR] - 1], s->n[P_CUR] - 1 != 2, &where);
		snprintf(detail, sizeof(detail), "the cursor's walk ended with %d (%s)", s->rc_cur,
			 bk_strerror(s->rc_cur));
		note("cursor", "bad-end", &where, &landed, true, s, P_CUR, 1, detail);
	}
	/* The peers: from the handler's caller (the trampoline) on. */
	int goff = after_handler(s->pc[P_GCC], s->n[P_GCC]);
	sample_libgcc_agrees = !s->crashed[P_GCC] && goff >= 0 && s->n[P_GCC] - goff == nb - 1 &&
			       !memcmp(b + 1, s->pc[P_GCC] + goff, (size_t)(nb - 1) * sizeof(*b));
	for (int p = P_GCC; p <= P_UNW; p++) {
		if (s->crashed[p]) {
			st.crashed[p]++;
			snprintf(detail, sizeof(detail), "%s crashed (signal %d)", peer_name[p],
				 s->crashed[p]);
			note(peer_name[p], "crashed", &landed, &landed, true, s, -1, 0, detail);
			continue;
		}
		int off = after_handler(s->pc[p], s->n[p]);
		if (off < 0) {
			st.differ[p]++;
			locate(NULL, false, &where);
			note(peer_name[p], "no-handler-frame", &where, &landed, true, s, p, 0,
			     "the peer's list does not start at the handler");
			continue;
		}
		void *const *o = b + 1, *const *q = s->pc[p] + off;
		int no = nb - 1, nq = s->n[p] - off, k = 0;
		while (k < no && k < nq && o[k] == q[k])
			k++;
		if (k == no && k == nq) {
			st.same[p]++;
			continue;
		}
		st.differ[p]++;
		/* The frame whose step went differently: o[k - 1] (o[0] is the
		 * trampoline, o[1] the interrupted PC, looked up as itself). */
		const char *kind = k == nq ? "stops-after" : k == no ? "continues-after" : "differs-after";
		locate(k ? o[k - 1] : NULL, k - 1 > 1, &where);
		snprintf(detail, sizeof(detail), "%s: %d frames, backstep %d; first difference at %d",
			 peer_name[p], nq, no, k);
		note(peer_name[p], kind, &where, &landed, true, s, p, off, detail);
	}
}

static long drain(void)
{
	long n = 0;
	for (int i = 0; i < RING; i++) {
		struct slot *s = &ring[i];
		if (atomic_load_explicit(&s->state, memory_order_acquire) == READY) {
			compare(s);
			atomic_store_explicit(&s->state, FREE, memory_order_release);
			n++;
		}
	}
	return n;
}

static void *monitor(void *arg)
{
	(void)arg;
	for (;;) {
		bool last = atomic_load(&stop_monitor);
		if (drain() == 0) {
			if (last)
				break;
			struct timespec d = { 0, 200000 };
			nanosleep(&d, NULL);
		}
	}
	return NULL;
}

/* ---- main ------------------------------------------------------------------ */

static int fail_count, pass_count;
#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (cond) {                                                     \
			pass_count++;                                           \
		} else {                                                        \
			fail_count++;                                           \
			fprintf(stderr, "localdiff: FAILED: ");                 \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
		}                                                               \
	} while (0)

static void load_expected(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL, "cannot read %s", path);
	if (!f)
		return;
	char line[1024];
	for (int ln = 1; fgets(line, sizeof(line), f); ln++) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		struct expect e;
		char cond[32] = "";
		e.line = ln;
		int k = sscanf(line, "%199s %199s %199s %199s %199s %31s", e.f[0], e.f[1], e.f[2],
			       e.f[3], e.f[4], cond);
		if (k <= 0)
			continue;
		e.need_libgcc = k == 6 && strcmp(cond, "libgcc-agrees") == 0;
		bool ok = (k == 5 || e.need_libgcc) && nexpects < NEXPECT;
		CHECK(ok, "%s:%d: bad line", path, ln);
		if (ok)
			expects[nexpects++] = e;
	}
	fclose(f);
}

static int find_libgcc_s(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!strstr(info->dlpi_name, "libgcc_s.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			r_libgcc_s.lo = info->dlpi_addr + ph->p_vaddr;
			r_libgcc_s.hi = r_libgcc_s.lo + ph->p_memsz;
		}
	}
	return 1;
}

int main(int argc, char **argv)
{
	double seconds = 0.6, max_seconds = 10;
	long min_samples = 500, min_thread_samples = 0;
	int later_status = 0;
	const char *name = argc > 0 ? argv[0] : "?", *expected = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--max-seconds") == 0 && i + 1 < argc)
			max_seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--min-samples") == 0 && i + 1 < argc)
			min_samples = atol(argv[++i]);
		else if (strcmp(argv[i], "--min-thread-samples") == 0 && i + 1 < argc)
			min_thread_samples = atol(argv[++i]);
		else if (strcmp(argv[i], "--later-status") == 0 && i + 1 < argc)
			later_status = atoi(argv[++i]);
		else if (strcmp(argv[i], "--ping-us") == 0 && i + 1 < argc)
			ping_ns = atol(argv[++i]) * 1000;
		else if (strcmp(argv[i], "--expected") == 0 && i + 1 < argc)
			expected = argv[++i];
		else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			name = build_name = argv[++i];
		else {
			fprintf(stderr,
				"usage: localdiff [--seconds S] [--max-seconds S] [--min-samples N] "
				"[--min-thread-samples N] "
				"[--later-status N] "
				"[--ping-us N] [--expected FILE] [--name NAME]\n");
			return 2;
		}
	}
	if (expected)
		load_expected(expected);

	/* The handler's extent, for aligning the lists. */
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (dladdr1((void *)localdiff_on_prof, &info, (void **)&sym, RTLD_DL_SYMENT) && sym) {
		r_handler.lo = (uintptr_t)info.dli_saddr;
		r_handler.hi = r_handler.lo + sym->st_size;
	}
	CHECK(r_handler.hi > r_handler.lo, "the handler's extent is known (link with -rdynamic)");

	/* The peers. libunwind is loaded RTLD_LOCAL: it also defines
	 * _Unwind_* and backtrace, which must not replace libgcc's. */
	void *unw = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	CHECK(unw != NULL, "libunwind.so.8 loads (apt-get install libunwind8): %s",
	      unw ? "" : dlerror());
	if (unw)
		*(void **)&unw_backtrace_fn = dlsym(unw, "unw_backtrace");
	CHECK(unw_backtrace_fn != NULL, "libunwind has unw_backtrace");
	if (!unw_backtrace_fn)
		return 1;
	/* First calls outside the handler: glibc's backtrace() dlopens libgcc_s
	 * once, libunwind sets up its caches. */
	void *warm[MAXF];
	backtrace(warm, MAXF);
	unw_backtrace_fn(warm, MAXF);
	dl_iterate_phdr(find_libgcc_s, NULL);
	CHECK(r_libgcc_s.hi > r_libgcc_s.lo, "libgcc_s.so.1 is loaded");
	*(void **)&real_personality = dlsym(RTLD_NEXT, "__gxx_personality_v0");
	*(void **)&get_cfa = dlsym(RTLD_DEFAULT, "_Unwind_GetCFA");
	*(void **)&real_resume = dlsym(RTLD_NEXT, "_Unwind_Resume");
	*(void **)&real_begin_catch = dlsym(RTLD_NEXT, "__cxa_begin_catch");
	CHECK(bk_space_create_local(&names) == 0, "a local space for names");

	main_tid = (pid_t)syscall(SYS_gettid);
	add_tid(main_tid);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = localdiff_on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);

	/* The pinger and the monitor take no signal at all: not SIGPROF, and
	 * not the fixture's process-directed ones (signal.c's SIGALRM must
	 * reach the thread that installed its alternate stack). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_t pt, mt;
	pthread_create(&mt, NULL, monitor, NULL);
	pthread_create(&pt, NULL, pinger, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_PROF, &it, NULL);

	char prog[] = "fixture";
	char *fargv[] = { prog, NULL };
	long runs = 0, bad_status = 0;
	int first_status = -1, bad_value = 0;
	/* The fixture runs for --seconds, and on (up to --max-seconds) until
	 * the samples wanted were taken: on a loaded machine the thread gets
	 * less of the CPU. The clock is read once per batch of runs, the batch
	 * doubling while a batch takes under a millisecond: most samples then
	 * land in the fixture, not in clock_gettime. */
	double t0 = (double)clock_ns() * 1e-9, t = t0, last = t0;
	long batch = 1, in_batch = 0;
	do {
		int rc = localdiff_fixture_main(1, fargv);
		if (runs == 0)
			first_status = rc;
		else if (rc != later_status && bad_status++ == 0)
			bad_value = rc;
		runs++;
		if (++in_batch >= batch) {
			t = (double)clock_ns() * 1e-9;
			if (t - last < 1e-3 && batch < (1L << 20))
				batch *= 2;
			last = t;
			in_batch = 0;
		}
	} while (t - t0 < seconds ||
		 (t - t0 < max_seconds && (atomic_load(&taken) < min_samples ||
					   atomic_load(&taken_threads) < min_thread_samples)));

	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	atomic_store(&stop_pinger, true);
	pthread_join(pt, NULL);
	atomic_store(&stop_monitor, true);
	pthread_join(mt, NULL);
	drain();

	printf("%s: %.2f s, %ld runs of the fixture's main; %ld samples (main thread %ld, other "
	       "threads %ld, dropped %ld), in the executable %ld (%ld distinct PCs), libc %ld, "
	       "elsewhere %ld; %ld in an exception's install window\n",
	       name, t - t0, runs, st.samples, st.main_samples, st.thread_samples,
	       atomic_load(&dropped), st.land_exe, st.distinct_exe, st.land_libc, st.land_other,
	       st.window);
	long n = st.samples ? st.samples : 1;
	printf("  mean time per walk: bk_backtrace %.1f us, cursor %.1f us, ucontext %.1f us, "
	       "libgcc %.1f us, libunwind %.1f us\n",
	       st.ns[P_BK] / n / 1e3, st.ns[P_CUR] / n / 1e3, st.ns[P_UC] / n / 1e3,
	       st.ns[P_GCC] / n / 1e3, st.ns[P_UNW] / n / 1e3);
	for (int p = P_GCC; p <= P_UNW; p++)
		printf("  %-10s identical %ld, differing %ld, crashed %ld\n", peer_name[p], st.same[p],
		       st.differ[p], st.crashed[p]);
	printf("  backstep  cursor differing %ld, bad end %ld; ucontext differing %ld\n",
	       st.cur_diff, st.bad_end, st.uc_diff);
	for (int i = 0; i < nsigs; i++) {
		const struct signature *g = &sigs[i];
		printf("  %s: %s x%ld (unexpected %ld), landed at", g->unexpected ? "UNEXPECTED" : "expected",
		       g->key, g->count, g->unexpected);
		for (int k = 0; k < g->noffs; k++)
			printf(" %s", g->offs[k]);
		printf("\n");
		if (g->unexpected)
			fputs(g->example, stdout);
	}

	CHECK(first_status == 0, "the fixture's first run returned %d", first_status);
	CHECK(bad_status == 0, "%ld later runs returned %d, not %d", bad_status, bad_value,
	      later_status);
	CHECK(st.samples >= min_samples, "%ld samples, want at least %ld", st.samples, min_samples);
	CHECK(st.thread_samples >= min_thread_samples,
	      "%ld samples in the fixture's threads, want at least %ld", st.thread_samples,
	      min_thread_samples);
	CHECK(st.cur_diff == 0, "bk_backtrace and the init_local cursor differ in %ld samples",
	      st.cur_diff);
	CHECK(st.uc_diff == 0, "the ucontext cursor differs from bk_backtrace in %ld samples",
	      st.uc_diff);
	CHECK(st.full == 0, "%ld walks filled %d frames", st.full, MAXF);
	CHECK(st.unaligned == 0, "%ld samples did not start at the handler", st.unaligned);
	CHECK(st.errno_changed == 0, "backstep's walks changed errno in %ld samples",
	      st.errno_changed);
	CHECK(sig_overflow == 0, "%ld disagreements beyond %d kinds", sig_overflow, NSIG_MAX);
	for (int i = 0; i < nsigs; i++)
		CHECK(sigs[i].unexpected == 0, "unexpected: %s (%ld samples)", sigs[i].key,
		      sigs[i].unexpected);
	bk_space_destroy(names);
	printf("%d passed, %d failed\n", pass_count, fail_count);
	return fail_count ? 1 : 0;
}
