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
 *    it). The cursor's walk must end cleanly (step returned 0).
 *  - the ucontext cursor: the same frames as bk_backtrace below the
 *    handler and the signal trampoline.
 *  - libgcc and libunwind: the same frames as bk_backtrace below the
 *    handler. Each disagreement gets a signature (peer, kind, the function
 *    where the walks part); a signature not listed in the expected-file
 *    (--expected, EXPECTED.md explains each entry with its evidence) fails
 *    the test.
 *
 * The fixture's own exit status is checked on every run (--later-status:
 * the status of runs after the first, for fixtures whose static counters
 * are not reset between runs). */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
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
	int errno_changed;
	bool main_thread;
	void *pc[NP][MAXF];
};
static struct slot ring[RING];
static atomic_uint ring_next;
static atomic_long dropped, taken;
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
	s->n[P_BK] = bk_backtrace(s->pc[P_BK], MAXF);
	errno = 12345;
	struct bk_cursor c;
	s->rc_cur = cursor_walk(&c, bk_cursor_init_local(&c, bk_space_local()), s->pc[P_CUR],
				&s->n[P_CUR]);
	s->rc_uc = cursor_walk(&c, bk_cursor_init_ucontext(&c, bk_space_local(), uc), s->pc[P_UC],
			       &s->n[P_UC]);
	s->errno_changed = errno != 12345;
	s->n[P_GCC] = backtrace(s->pc[P_GCC], MAXF);
	s->n[P_UNW] = unw_backtrace_fn(s->pc[P_UNW], MAXF);
	atomic_store_explicit(&s->state, READY, memory_order_release);
	atomic_fetch_add(&taken, 1);
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
static atomic_long thread_runs;

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
	atomic_fetch_add(&thread_runs, 1);
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

struct range {
	uintptr_t lo, hi;
};
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

/* "function (module)" for a PC; LOOKUP_BACK: a return address. */
static void describe(const void *pc, bool lookup_back, char *out, size_t len)
{
	uint64_t a = (uint64_t)(uintptr_t)pc - (lookup_back && pc ? 1 : 0);
	struct bk_symbol sym[8];
	int k = pc ? bk_space_symbolize(names, a, sym, 8) : 0;
	const char *fn = k > 0 && sym[k - 1].function ? sym[k - 1].function : "?";
	Dl_info info;
	const char *mod = "?";
	if (pc && dladdr((void *)(uintptr_t)a, &info) && info.dli_fname) {
		const char *slash = strrchr(info.dli_fname, '/');
		mod = slash ? slash + 1 : info.dli_fname;
		if (strncmp(mod, "localdiff_", 10) == 0)
			mod = "exe"; /* the test program: fixture and harness */
		else if (strncmp(mod, "linux-vdso", 10) == 0)
			mod = "vdso";
	} else if (!pc) {
		mod = "-";
		fn = "(end)";
	}
	snprintf(out, len, "%s %s", fn, mod);
}

/* Signatures of disagreements: counted, with the first example kept. */
#define NSIG_MAX 64
struct signature {
	char text[256];
	long count;
	char example[4096];
	bool expected;
};
static struct signature sigs[NSIG_MAX];
static int nsigs;
static long sig_overflow;

struct expect {
	char peer[32], kind[32], fn[128], mod[64];
};
static struct expect expects[64];
static int nexpects;

static bool glob_eq(const char *pat, const char *s)
{
	return strcmp(pat, "*") == 0 || strcmp(pat, s) == 0;
}

static bool is_expected(const char *peer, const char *kind, const char *where)
{
	char fn[128] = "", mod[64] = "";
	sscanf(where, "%127s %63s", fn, mod);
	for (int i = 0; i < nexpects; i++)
		if (strcmp(expects[i].peer, peer) == 0 && strcmp(expects[i].kind, kind) == 0 &&
		    glob_eq(expects[i].fn, fn) && glob_eq(expects[i].mod, mod))
			return true;
	return false;
}

static void list_text(char *out, size_t len, const char *title, void *const *pc, int n,
		      int first_back)
{
	size_t o = strlen(out);
	o += (size_t)snprintf(out + o, o < len ? len - o : 0, "    %s (%d frames):\n", title, n);
	for (int i = 0; i < n && o < len; i++) {
		char d[200];
		describe(pc[i], i >= first_back, d, sizeof(d));
		o += (size_t)snprintf(out + o, o < len ? len - o : 0, "      #%d %p %s\n", i, pc[i], d);
	}
}

static void note(const char *peer, const char *kind, const char *where, const struct slot *s,
		 int peer_idx, int peer_off, const char *detail)
{
	char text[256];
	snprintf(text, sizeof(text), "%s %s %s", peer, kind, where);
	for (int i = 0; i < nsigs; i++)
		if (strcmp(sigs[i].text, text) == 0) {
			sigs[i].count++;
			return;
		}
	if (nsigs == NSIG_MAX) {
		sig_overflow++;
		return;
	}
	struct signature *g = &sigs[nsigs++];
	snprintf(g->text, sizeof(g->text), "%s", text);
	g->count = 1;
	g->expected = is_expected(peer, kind, where);
	snprintf(g->example, sizeof(g->example), "    %s\n", detail);
	/* Ours from the handler's caller on (the trampoline, then the
	 * interrupted PC, looked up as itself), and the peer's. */
	list_text(g->example, sizeof(g->example), "backstep", s->pc[P_BK] + 1, s->n[P_BK] - 1, 2);
	list_text(g->example, sizeof(g->example), peer, s->pc[peer_idx] + peer_off,
		  s->n[peer_idx] - peer_off, peer_idx == P_UC ? 1 : 2);
}

struct stats {
	long samples, main_samples, thread_samples;
	long cur_diff, uc_diff, bad_end, full, unaligned, errno_changed;
	long same[NP], differ[NP];
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
	const int nb = s->n[P_BK];
	void *const *b = s->pc[P_BK];
	for (int p = 0; p < NP; p++)
		if (s->n[p] >= MAXF)
			st.full++; /* no walk here is that deep: a loop */
	if (s->errno_changed)
		st.errno_changed++;
	char where[200], detail[300];
	/* Both walks of backstep start at this handler. */
	if (after_handler(b, nb) != 1 || after_handler(s->pc[P_CUR], s->n[P_CUR]) != 1 || nb < 3) {
		st.unaligned++;
		snprintf(detail, sizeof(detail), "bk_backtrace: %d frames, cursor: %d frames", nb,
			 s->n[P_CUR]);
		note("backstep", "no-handler-frame", "- -", s, P_CUR, 0, detail);
		return;
	}
	/* Where the signal landed (the interrupted PC is b[2]). */
	Dl_info info;
	if (dladdr(b[2], &info) && info.dli_fname) {
		const char *f = strrchr(info.dli_fname, '/');
		f = f ? f + 1 : info.dli_fname;
		if (strncmp(f, "localdiff_", 10) == 0) {
			st.land_exe++;
			st.distinct_exe += add_distinct(b[2]);
		}
		else if (strncmp(f, "libc.so", 7) == 0)
			st.land_libc++;
		else
			st.land_other++;
	} else {
		st.land_other++;
	}
	/* bk_backtrace against the init_local cursor: identical, always. */
	if (s->n[P_CUR] != nb || memcmp(b + 1, s->pc[P_CUR] + 1, (size_t)(nb - 1) * sizeof(*b))) {
		st.cur_diff++;
		int k = 1;
		while (k < nb && k < s->n[P_CUR] && b[k] == s->pc[P_CUR][k])
			k++;
		describe(b[k - 1], k - 1 != 2, where, sizeof(where));
		snprintf(detail, sizeof(detail),
			 "cursor (rc %d) and bk_backtrace differ at frame %d (lists from the handler's caller)",
			 s->rc_cur, k - 1);
		note("cursor", "differs-after", where, s, P_CUR, 1, detail);
	}
	if (s->rc_cur != 0) {
		st.bad_end++;
		describe(s->pc[P_CUR][s->n[P_CUR] - 1], s->n[P_CUR] - 1 != 2, where, sizeof(where));
		snprintf(detail, sizeof(detail), "the cursor's walk ended with %d (%s)", s->rc_cur,
			 bk_strerror(s->rc_cur));
		note("cursor", "bad-end", where, s, P_CUR, 1, detail);
	}
	/* The ucontext cursor: bk_backtrace below the handler and trampoline. */
	if (s->rc_uc != 0 || s->n[P_UC] != nb - 2 ||
	    memcmp(b + 2, s->pc[P_UC], (size_t)(nb - 2) * sizeof(*b))) {
		st.uc_diff++;
		int k = 0;
		while (k < nb - 2 && k < s->n[P_UC] && b[k + 2] == s->pc[P_UC][k])
			k++;
		describe(k ? b[k + 1] : b[2], k > 1, where, sizeof(where));
		snprintf(detail, sizeof(detail), "ucontext cursor (rc %d) differs at its frame %d",
			 s->rc_uc, k);
		note("ucontext", "differs-after", where, s, P_UC, 0, detail);
	}
	/* The peers: from the handler's caller (the trampoline) on. */
	for (int p = P_GCC; p <= P_UNW; p++) {
		int off = after_handler(s->pc[p], s->n[p]);
		if (off < 0) {
			st.differ[p]++;
			note(peer_name[p], "no-handler-frame", "- -", s, p, 0,
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
		/* The frame whose step went differently: o[k - 1] (index 1 is
		 * the interrupted PC, looked up as itself). */
		const char *kind = k == nq ? "stops-after" : k == no ? "continues-after" : "differs-after";
		if (k == 0)
			snprintf(where, sizeof(where), "(handler) exe");
		else
			describe(o[k - 1], k - 1 != 1, where, sizeof(where));
		snprintf(detail, sizeof(detail), "%s: %d frames, backstep %d; first difference at %d",
			 peer_name[p], nq, no, k);
		note(peer_name[p], kind, where, s, p, off, detail);
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
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		char *hash = strchr(line, '#');
		if (hash)
			*hash = 0;
		struct expect e;
		int k = sscanf(line, "%31s %31s %127s %63s", e.peer, e.kind, e.fn, e.mod);
		if (k <= 0)
			continue;
		CHECK(k == 4 && nexpects < 64, "%s: bad line: %s", path, line);
		if (k == 4 && nexpects < 64)
			expects[nexpects++] = e;
	}
	fclose(f);
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	double seconds = 0.6;
	long min_samples = 500;
	int later_status = 0;
	const char *name = argc > 0 ? argv[0] : "?", *expected = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--min-samples") == 0 && i + 1 < argc)
			min_samples = atol(argv[++i]);
		else if (strcmp(argv[i], "--later-status") == 0 && i + 1 < argc)
			later_status = atoi(argv[++i]);
		else if (strcmp(argv[i], "--ping-us") == 0 && i + 1 < argc)
			ping_ns = atol(argv[++i]) * 1000;
		else if (strcmp(argv[i], "--expected") == 0 && i + 1 < argc)
			expected = argv[++i];
		else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
			name = argv[++i];
		else {
			fprintf(stderr,
				"usage: localdiff [--seconds S] [--min-samples N] [--later-status N] "
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
	CHECK(bk_space_create_local(&names) == 0, "a local space for names");

	main_tid = (pid_t)syscall(SYS_gettid);
	add_tid(main_tid);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = localdiff_on_prof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);

	/* The pinger and the monitor never take SIGPROF. */
	sigset_t prof, old;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, &old);
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
	/* The clock is read once per batch of runs, the batch doubling while a
	 * batch takes under a millisecond: most samples then land in the
	 * fixture, not in clock_gettime. */
	double t0 = now(), t = t0, last = t0;
	long batch = 1, in_batch = 0;
	do {
		int rc = localdiff_fixture_main(1, fargv);
		if (runs == 0)
			first_status = rc;
		else if (rc != later_status && bad_status++ == 0)
			bad_value = rc;
		runs++;
		if (++in_batch >= batch) {
			t = now();
			if (t - last < 1e-3 && batch < (1L << 20))
				batch *= 2;
			last = t;
			in_batch = 0;
		}
	} while (t - t0 < seconds);

	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	atomic_store(&stop_pinger, true);
	pthread_join(pt, NULL);
	atomic_store(&stop_monitor, true);
	pthread_join(mt, NULL);
	drain();

	printf("%s: %.2f s, %ld runs of the fixture's main, %ld samples (main thread %ld, others %ld; "
	       "dropped %ld), landed in the executable %ld (%ld distinct PCs), libc %ld, elsewhere %ld\n",
	       name, t - t0, runs, st.samples, st.main_samples, st.thread_samples,
	       atomic_load(&dropped), st.land_exe, st.distinct_exe, st.land_libc, st.land_other);
	for (int p = P_GCC; p <= P_UNW; p++)
		printf("  %-10s identical %ld, differing %ld\n", peer_name[p], st.same[p], st.differ[p]);
	printf("  cursor    differing %ld, bad end %ld; ucontext differing %ld\n", st.cur_diff,
	       st.bad_end, st.uc_diff);
	for (int i = 0; i < nsigs; i++) {
		printf("  %s: %s x%ld\n", sigs[i].expected ? "expected" : "UNEXPECTED", sigs[i].text,
		       sigs[i].count);
		if (!sigs[i].expected)
			fputs(sigs[i].example, stdout);
	}

	CHECK(first_status == 0, "the fixture's first run returned %d", first_status);
	CHECK(bad_status == 0, "%ld later runs returned %d, not %d", bad_status, bad_value,
	      later_status);
	CHECK(st.samples >= min_samples, "%ld samples, want at least %ld", st.samples, min_samples);
	CHECK(st.cur_diff == 0, "bk_backtrace and the init_local cursor differ in %ld samples",
	      st.cur_diff);
	CHECK(st.bad_end == 0, "the cursor's walk ended in an error in %ld samples", st.bad_end);
	CHECK(st.uc_diff == 0, "the ucontext cursor differs from bk_backtrace in %ld samples",
	      st.uc_diff);
	CHECK(st.full == 0, "%ld walks filled %d frames", st.full, MAXF);
	CHECK(st.unaligned == 0, "%ld samples did not start at the handler", st.unaligned);
	CHECK(st.errno_changed == 0, "the cursor walks changed errno in %ld samples",
	      st.errno_changed);
	CHECK(sig_overflow == 0, "%ld disagreements beyond %d kinds", sig_overflow, NSIG_MAX);
	for (int i = 0; i < nsigs; i++)
		CHECK(sigs[i].expected, "unexpected disagreement: %s (%ld samples)", sigs[i].text,
		      sigs[i].count);
	bk_space_destroy(names);
	printf("%d passed, %d failed\n", pass_count, fail_count);
	return fail_count ? 1 : 0;
}
