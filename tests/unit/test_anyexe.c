/* The in-process walk in programs without PT_GNU_EH_FRAME, built three
 * times:
 *
 *   ANYEXE_STATIC  a fully static program (gcc -static -O2
 *                  -fomit-frame-pointer, outside meson's possibly
 *                  sanitized compiler), chain_b linked in;
 *   + ANYEXE_PIE   the same as static-pie, which has PT_GNU_EH_FRAME, but
 *                  in a segment other than the code (what _dl_find_object
 *                  describes there): no index is needed;
 *   otherwise      a dynamic program and the library holding chain_b,
 *                  both linked with -Wl,--no-eh-frame-hdr.
 *
 * Their .eh_frame is found from the files' section headers and indexed by
 * the first walk (src/unwind/local_index.c). Along chain_root -> chain_a ->
 * chain_b -> chain_c (called from main, through the test's functions), each
 * function in a section of its own (so __start_/__stop_ give its exact
 * range), the test asserts that every PC lies in the function it must and
 * that the walk goes on to main and ends cleanly, for bk_backtrace, the cursor-only walk,
 * bk_cursor_init_local, and from signal handlers (bk_backtrace and a
 * ucontext cursor). The first argument orders the first walk, which builds
 * the index:
 *
 *   hook    from chain_c, with a hook that raises SIGUSR1 in the middle of
 *           the build: the handler walks while the index is being built
 *           (lookups by scanning), through the builder's own frames;
 *   signal  from a SIGPROF handler (the build runs inside the handler).
 *
 * No walk may allocate: malloc, calloc, realloc and free are counted while
 * a walk runs (interposed; in the static program through the linker's
 * --wrap, since libc.a's malloc cannot be replaced piecemeal). */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>

#include "backstep.h"
#include "check.h"
#include "target/target.h"

#if defined(__clang__)
#define CHAIN_FN(sec) __attribute__((noinline, section(#sec)))
#else
#define CHAIN_FN(sec) __attribute__((noipa, section(#sec)))
#endif
#define KEEP() __asm__ volatile("" ::: "memory")

/* ---- Allocation while a walk runs ------------------------------------------ */

static volatile sig_atomic_t armed;
static atomic_int allocs;
#ifdef ANYEXE_STATIC
void *__real_malloc(size_t);
void *__real_calloc(size_t, size_t);
void *__real_realloc(void *, size_t);
void __real_free(void *);
#define REAL(f) __real_##f
#define WRAPPED(f) __wrap_##f
#else
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
#define REAL(f) __libc_##f
#define WRAPPED(f) f
#endif
void *WRAPPED(malloc)(size_t n);
void *WRAPPED(calloc)(size_t a, size_t b);
void *WRAPPED(realloc)(void *p, size_t n);
void WRAPPED(free)(void *p);
void *WRAPPED(malloc)(size_t n)
{
	if (armed)
		atomic_fetch_add(&allocs, 1);
	return REAL(malloc)(n);
}
void *WRAPPED(calloc)(size_t a, size_t b)
{
	if (armed)
		atomic_fetch_add(&allocs, 1);
	return REAL(calloc)(a, b);
}
void *WRAPPED(realloc)(void *p, size_t n)
{
	if (armed)
		atomic_fetch_add(&allocs, 1);
	return REAL(realloc)(p, n);
}
void WRAPPED(free)(void *p)
{
	if (armed && p)
		atomic_fetch_add(&allocs, 1);
	REAL(free)(p);
}

/* Internal (src/unwind): bk_backtrace by the cursor alone; the hook the
 * index builder calls once it found the section, before indexing it. */
int uw_backtrace_cursor(void **pcs, int max);
extern void (*uw_local_index_hook)(void);

/* ---- The chain -------------------------------------------------------------- */

struct range {
	uintptr_t lo, hi;
};
#define SECTION_RANGE(sec)                                                         \
	({                                                                         \
		extern const char __start_##sec[], __stop_##sec[];                 \
		(struct range){ (uintptr_t)__start_##sec, (uintptr_t)__stop_##sec }; \
	})
static struct range r_main, r_root, r_a, r_b, r_c, r_prof, r_usr1;

static bool in(const struct range *r, const void *pc)
{
	return (uintptr_t)pc >= r->lo && (uintptr_t)pc < r->hi;
}

int chain_b(int (*next)(int), int mode); /* anyexe_lib.c */
void chain_b_range(uintptr_t *lo, uintptr_t *hi);

enum mode { WALK, SPIN };
#define MAXF 128
#define SAMPLES 40

static volatile int sink;
static volatile sig_atomic_t spin_done;

/* What the walks from chain_c saw. */
static void *bt[MAXF], *bt_ref[MAXF], *cur_pcs[MAXF];
static int nbt, nbt_ref, ncur, cur_end, cur_init, errno_after;
static uint8_t cur_how[MAXF];

CHAIN_FN(bt_c) int chain_c(int mode)
{
	if (mode == SPIN) {
		/* Interrupted here by SIGPROF, until the handler saw enough. */
		while (!spin_done)
			sink++;
	} else {
		armed = 1;
		errno = 4242; /* the first walk reads files and maps memory */
		nbt = bk_backtrace(bt, MAXF);
		errno_after = errno;
		nbt_ref = uw_backtrace_cursor(bt_ref, MAXF);
		struct bk_cursor c;
		ncur = 0;
		cur_init = bk_cursor_init_local(&c, bk_space_local());
		if (cur_init == 0) {
			do {
				cur_how[ncur] = (uint8_t)bk_cursor_how(&c);
				cur_pcs[ncur++] = (void *)(uintptr_t)bk_cursor_pc(&c);
			} while (ncur < MAXF && (cur_end = bk_cursor_step(&c)) == 1);
		}
		armed = 0;
	}
	KEEP();
	return sink;
}

CHAIN_FN(bt_a) int chain_a(int mode)
{
	int r = chain_b(chain_c, mode);
	KEEP();
	return r + sink;
}

CHAIN_FN(bt_root) int chain_root(int mode)
{
	int r = chain_a(mode);
	KEEP();
	return r + sink;
}

/* True when PCS[K..K+3] are in c (or exactly C_PC), b, a and root, and a
 * later one in main. */
static bool chain_at(void *const *pcs, int n, int k, uintptr_t c_pc)
{
	if (!(k >= 0 && k + 3 < n && (c_pc ? (uintptr_t)pcs[k] == c_pc : in(&r_c, pcs[k])) &&
	      in(&r_b, pcs[k + 1]) && in(&r_a, pcs[k + 2]) && in(&r_root, pcs[k + 3])))
		return false;
	for (int i = k + 4; i < n; i++)
		if (in(&r_main, pcs[i]))
			return true;
	return false;
}

static int find_chain(void *const *pcs, int n, uintptr_t c_pc)
{
	for (int k = 0; k + 3 < n; k++)
		if (chain_at(pcs, n, k, c_pc))
			return k;
	return -1;
}

static void dump(const char *what, void *const *pcs, int n)
{
	fprintf(stderr, "%s (%d frames):", what, n);
	for (int i = 0; i < n; i++)
		fprintf(stderr, " %p", pcs[i]);
	fprintf(stderr, "\n  main [%#lx,%#lx) root [%#lx,%#lx) a [%#lx,%#lx) b [%#lx,%#lx) c [%#lx,%#lx)\n",
		(unsigned long)r_main.lo, (unsigned long)r_main.hi, (unsigned long)r_root.lo,
		(unsigned long)r_root.hi, (unsigned long)r_a.lo,
		(unsigned long)r_a.hi, (unsigned long)r_b.lo, (unsigned long)r_b.hi,
		(unsigned long)r_c.lo, (unsigned long)r_c.hi);
}

/* ---- Signal handlers -------------------------------------------------------- */

/* One handler walk: bk_backtrace and a cursor from the ucontext. */
struct sample {
	void *bt[MAXF], *cur[MAXF];
	int nbt, ncur, cur_end;
	uintptr_t pc; /* the interrupted PC */
	int errno_after;
	uint8_t cur_how[MAXF];
};

static inline __attribute__((always_inline)) void handler_walk(struct sample *s,
								  const ucontext_t *uc)
{
	s->pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	int saved = errno;
	errno = 4343;
	s->nbt = bk_backtrace(s->bt, MAXF);
	struct bk_cursor c;
	s->ncur = 0;
	s->cur_end = -1;
	if (bk_cursor_init_ucontext(&c, bk_space_local(), uc) == 0) {
		do {
			s->cur_how[s->ncur] = (uint8_t)bk_cursor_how(&c);
			s->cur[s->ncur++] = (void *)(uintptr_t)bk_cursor_pc(&c);
		} while (s->ncur < MAXF && (s->cur_end = bk_cursor_step(&c)) == 1);
	}
	s->errno_after = errno;
	errno = saved;
}

/* SIGPROF while chain_c spins: a sample counts when it interrupted chain_c. */
static struct sample prof_bad;
static atomic_int prof_good, prof_bad_n, prof_elsewhere, prof_allocs;

CHAIN_FN(bt_prof) void on_prof(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	const ucontext_t *uc = ucv;
	static struct sample s; /* one handler at a time: SIGPROF is blocked in it */
	int saved_armed = armed, before = atomic_load(&allocs);
	if (!in(&r_c, (void *)(uintptr_t)uc->uc_mcontext.gregs[REG_RIP])) {
		if (atomic_fetch_add(&prof_elsewhere, 1) > 40000)
			spin_done = 1; /* 20 s: give up */
		return;
	}
	armed = 1;
	handler_walk(&s, uc);
	armed = saved_armed;
	if (atomic_load(&allocs) != before)
		atomic_fetch_add(&prof_allocs, 1);
	/* bk_backtrace: the handler, the sigreturn trampoline, then exactly the
	 * interrupted PC and its callers; the cursor: the interrupted frame on,
	 * the same PCs, made from CFI, ending cleanly. */
	bool ok = s.errno_after == 4343 && s.nbt > 4 && s.nbt < MAXF && in(&r_prof, s.bt[0]) &&
		  find_chain(s.bt, s.nbt, s.pc) == 2 && s.ncur == s.nbt - 2 && s.cur_end == 0 &&
		  chain_at(s.cur, s.ncur, 0, s.pc) &&
		  memcmp(s.cur, s.bt + 2, sizeof(void *) * (size_t)s.ncur) == 0;
	for (int i = 1; ok && i < 4; i++)
		ok = s.cur_how[i] == BK_HOW_CFI;
	if (ok) {
		if (atomic_fetch_add(&prof_good, 1) + 1 >= SAMPLES)
			spin_done = 1;
	} else if (atomic_fetch_add(&prof_bad_n, 1) == 0) {
		prof_bad = s;
		spin_done = 1;
	}
}

/* SIGUSR1, raised by the index builder's hook: the walk meets a module
 * whose index is being built. */
static struct sample usr1;
static volatile sig_atomic_t hook_fired, usr1_done;
static atomic_int usr1_allocs;

CHAIN_FN(bt_usr1) void on_usr1(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	int saved_armed = armed, before = atomic_load(&allocs);
	armed = 1;
	handler_walk(&usr1, ucv);
	armed = saved_armed;
	if (atomic_load(&allocs) != before)
		atomic_fetch_add(&usr1_allocs, 1);
	usr1_done = 1;
}

static void raise_once(void)
{
	if (!hook_fired) {
		hook_fired = 1;
		raise(SIGUSR1);
	}
}

/* ---- Tests ------------------------------------------------------------------ */

static void test_walk(const char *what)
{
	int before = atomic_load(&allocs);
	chain_root(WALK);
	CHECK_INT(atomic_load(&allocs) - before, 0, "allocations during the walks from chain_c");
	CHECK_INT(errno_after, 4242, "errno after bk_backtrace");
	bool ok = nbt > 4 && nbt < MAXF && chain_at(bt, nbt, 0, 0);
	CHECK(ok, "%s: bk_backtrace from chain_c: c, b, a, root ... main (%d frames)", what, nbt);
	if (!ok)
		dump("bk_backtrace", bt, nbt);
	ok = nbt_ref == nbt && nbt > 1 &&
	     memcmp(bt + 1, bt_ref + 1, sizeof(void *) * (size_t)(nbt - 1)) == 0;
	CHECK(ok, "%s: the cursor-only walk makes the same frames (%d, %d)", what, nbt, nbt_ref);
	if (!ok)
		dump("cursor-only", bt_ref, nbt_ref);
	CHECK_INT(cur_init, 0, "bk_cursor_init_local");
	ok = ncur > 4 && chain_at(cur_pcs, ncur, 0, 0) && cur_end == 0;
	CHECK(ok, "%s: bk_cursor_init_local: c, b, a, root ... main, clean end (%d frames, end %d)", what,
	      ncur, cur_end);
	if (!ok)
		dump("bk_cursor_init_local", cur_pcs, ncur);
	for (int i = 1; ok && i < 4; i++)
		CHECK_INT(cur_how[i], BK_HOW_CFI, "frames b, a, root made from CFI");
}

static void test_hook(void)
{
	uw_local_index_hook = raise_once;
	test_walk("first walk, interrupted mid-build");
	uw_local_index_hook = NULL;
#ifdef ANYEXE_PIE
	CHECK(!hook_fired, "static-pie: its .eh_frame_hdr serves, no index is built");
	return;
#endif
	CHECK(hook_fired && usr1_done, "the index was built and a signal arrived meanwhile");
	CHECK_INT(atomic_load(&usr1_allocs), 0, "allocations in the SIGUSR1 handler");
	CHECK_INT(usr1.errno_after, 4343, "errno after the walks in the SIGUSR1 handler");
	/* The interrupted thread was inside the builder, under bk_backtrace,
	 * under chain_c: the walk passes through all of it. */
	int k = find_chain(usr1.bt, usr1.nbt, 0);
	bool ok = in(&r_usr1, usr1.bt[0]) && k > 2 && usr1.nbt < MAXF;
	CHECK(ok, "SIGUSR1 mid-build: bk_backtrace reaches c, b, a, root ... main (at %d of %d)", k,
	      usr1.nbt);
	if (!ok)
		dump("SIGUSR1 bk_backtrace", usr1.bt, usr1.nbt);
	k = find_chain(usr1.cur, usr1.ncur, 0);
	ok = k > 0 && usr1.cur_end == 0 && usr1.ncur == usr1.nbt - 2 &&
	     memcmp(usr1.cur, usr1.bt + 2, sizeof(void *) * (size_t)usr1.ncur) == 0;
	CHECK(ok, "SIGUSR1 mid-build: the ucontext cursor, the same frames (at %d, end %d)", k,
	      usr1.cur_end);
	if (!ok)
		dump("SIGUSR1 cursor", usr1.cur, usr1.ncur);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_prof(void)
{
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	spin_done = 0;
	double t0 = now();
	setitimer(ITIMER_PROF, &it, NULL);
	/* chain_c spins until the handler saw SAMPLES good samples, a bad one,
	 * or 20 s of CPU time of samples. */
	chain_root(SPIN);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);
	int good = atomic_load(&prof_good), bad = atomic_load(&prof_bad_n);
	printf("SIGPROF: %d good samples in chain_c, %d bad, %d elsewhere, %.2f s\n", good, bad,
	       atomic_load(&prof_elsewhere), now() - t0);
	CHECK(good >= SAMPLES && bad == 0, "SIGPROF samples in chain_c: %d good, %d bad", good, bad);
	if (bad) {
		fprintf(stderr, "first bad sample: interrupted at %#lx, cursor end %d\n",
			(unsigned long)prof_bad.pc, prof_bad.cur_end);
		dump("bk_backtrace", prof_bad.bt, prof_bad.nbt);
		dump("cursor", prof_bad.cur, prof_bad.ncur);
	}
	CHECK_INT(atomic_load(&prof_allocs), 0, "samples that allocated");
}

/* What the test is about: no PT_GNU_EH_FRAME (and, static, no dynamic
 * linking), from the program headers the kernel gave. */
static void test_headers(void)
{
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM);
	int eh = 0, interp = 0, dyn = 0;
	for (size_t i = 0; ph && i < n; i++) {
		eh += ph[i].p_type == PT_GNU_EH_FRAME;
		interp += ph[i].p_type == PT_INTERP;
		dyn += ph[i].p_type == PT_DYNAMIC;
	}
	CHECK(ph && n, "AT_PHDR");
#ifdef ANYEXE_PIE
	CHECK_INT(eh, 1, "PT_GNU_EH_FRAME in the static-pie program");
	CHECK_INT(interp, 0, "PT_INTERP in the static-pie program");
	CHECK_INT(dyn, 1, "PT_DYNAMIC in the static-pie program");
#elif defined(ANYEXE_STATIC)
	CHECK_INT(eh, 0, "PT_GNU_EH_FRAME in the program");
	CHECK_INT(interp + dyn, 0, "PT_INTERP or PT_DYNAMIC in the static program");
#else
	CHECK_INT(eh, 0, "PT_GNU_EH_FRAME in the program");
	CHECK_INT(interp, 1, "PT_INTERP in the dynamic program");
	CHECK_INT(dyn, 1, "PT_DYNAMIC in the dynamic program");
#endif
}

/* The objects the program headers describe (src/target/local_phdr.c)
 * agree with _dl_find_object's, and a file is used only if it is the
 * object's. */
static void test_objects(void)
{
	struct tgt_local_object m, d, o;
	CHECK(tgt_local_main_object(r_c.lo, &m), "the program from AT_PHDR");
	CHECK(m.start <= r_main.lo && r_c.hi <= m.end && !m.name[0],
	      "the program: [%#lx, %#lx), name '%s'", (unsigned long)m.start,
	      (unsigned long)m.end, m.name);
#ifdef ANYEXE_PIE
	CHECK(m.eh_frame_hdr >= m.start && m.eh_frame_hdr < m.end, "its PT_GNU_EH_FRAME inside");
#else
	CHECK_U64(m.eh_frame_hdr, 0, "no PT_GNU_EH_FRAME");
#endif
	CHECK_INT(tgt_local_find_object(r_c.lo, &d), 0, "tgt_local_find_object(chain_c)");
	CHECK_U64(d.start, m.start, "the program's start: its PT_LOAD span");
	CHECK_U64(d.end, m.end, "the program's end: its PT_LOAD span");
	CHECK_U64(d.bias, m.bias, "the program's bias: AT_PHDR against the dynamic linker");
	CHECK_U64(d.eh_frame_hdr, m.eh_frame_hdr, "the program's PT_GNU_EH_FRAME");
#if defined(ANYEXE_STATIC) && !defined(ANYEXE_PIE)
	CHECK_U64(m.bias, 0, "a static non-PIE program's bias");
#endif
#ifdef ANYEXE_STATIC
#else
	CHECK(!tgt_local_main_object(r_b.lo, &o), "chain_b is not in the program");
#endif
	uint64_t vdso = getauxval(AT_SYSINFO_EHDR);
	if (vdso) {
		CHECK(tgt_local_vdso_object(vdso, &o), "the vDSO from AT_SYSINFO_EHDR");
		CHECK(o.start <= vdso && vdso < o.end && o.eh_frame_hdr > o.start &&
			      o.eh_frame_hdr < o.end,
		      "the vDSO's range and PT_GNU_EH_FRAME");
		CHECK_INT(tgt_local_find_object(vdso, &d), 0, "_dl_find_object knows the vDSO");
		CHECK_U64(d.eh_frame_hdr, o.eh_frame_hdr, "the vDSO's PT_GNU_EH_FRAME");
		CHECK_U64(d.bias, o.bias, "the vDSO's bias");
	}

	uint64_t at = 0, len = 0;
	errno = 77;
	CHECK_INT(tgt_local_eh_frame(&m, &at, &len), 0, "the program's .eh_frame from its file");
	CHECK(at >= m.start && len > 0 && at + len <= m.end, "inside the program");
	CHECK_INT(errno, 77, "errno after reading the file");
	o = m;
	o.name = "/no/such/file";
	CHECK_INT(tgt_local_eh_frame(&o, &at, &len), BK_E_NOT_FOUND, "a missing file");
	CHECK_INT(errno, 77, "errno after failing to open");
	o.name = "/bin/sh"; /* a real ELF file, another program */
	CHECK_INT(tgt_local_eh_frame(&o, &at, &len), BK_E_NOT_FOUND, "another file is refused");
	o = m;
	o.bias += 4096; /* the right file, the wrong place */
	CHECK_INT(tgt_local_eh_frame(&o, &at, &len), BK_E_NOT_FOUND, "a wrong bias is refused");
}

/* Both modules are known to a local space, with CFI. */
static void test_modules(void)
{
	struct bk_module_info info;
	CHECK_INT(bk_space_module_at(bk_space_local(), r_c.lo, &info), 0, "module of chain_c");
	CHECK(info.has_cfi, "the program's module has CFI");
	CHECK_INT(bk_space_module_at(bk_space_local(), r_b.lo, &info), 0, "module of chain_b");
	CHECK(info.has_cfi, "chain_b's module has CFI");
}

CHAIN_FN(bt_main) int main(int argc, char **argv)
{
	r_main = SECTION_RANGE(bt_main);
	r_root = SECTION_RANGE(bt_root);
	r_a = SECTION_RANGE(bt_a);
	r_c = SECTION_RANGE(bt_c);
	r_prof = SECTION_RANGE(bt_prof);
	r_usr1 = SECTION_RANGE(bt_usr1);
	chain_b_range(&r_b.lo, &r_b.hi);

	struct sigaction sa = { 0 };
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sa.sa_sigaction = on_prof;
	sigaction(SIGPROF, &sa, NULL);
	sa.sa_sigaction = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);

	bool hook_first = argc < 2 || strcmp(argv[1], "signal") != 0;
	test_headers();
	if (hook_first) {
		test_hook();
		test_prof();
	} else {
		test_prof();
		test_walk("after walks in SIGPROF handlers");
	}
	test_walk("again");
	test_modules();
	test_objects();
	KEEP();
	return check_summary() + sink * 0;
}
