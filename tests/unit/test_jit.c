/* Code generated at run time, described by hand-written .eh_frame registered
 * with bk_space_register_eh_frame (libgcc's __register_frame semantics).
 *
 * The test writes x86-64 machine code into an mmap'ed page (then made
 * executable): J1 calls J2 calls J3 calls back into C (jit_cb), none with
 * a frame pointer (so only the registered CFI can unwind them), J0 sets the
 * trap flag and jumps to J1. Its .eh_frame (one CIE, an FDE per function,
 * the terminator) is written byte by byte below, rows listed next to the
 * code.
 *   - semantics: a section that is only its terminator registers nothing
 *     and deregisters quietly; twice: BK_E_INVAL; unknown: BK_E_NOT_FOUND;
 *     a damaged one: BK_E_CORRUPT and nothing registered; unreadable:
 *     BK_E_MEMORY; the range taken from the FDEs;
 *   - from jit_cb: bk_backtrace's PCs equal glibc backtrace()'s (libgcc's
 *     unwinder) with the same bytes given to libgcc's __register_frame;
 *     the cursor's frames through J3, J2, J1 are made by CFI and recover
 *     r12 (set by J3) in J3's frame;
 *   - at every instruction of J1, J2, J3 and jit_cb (the trap flag: a
 *     SIGTRAP after each), from the handler: the cursor from the
 *     ucontext and bk_backtrace must give exactly the frames the code's
 *     layout implies, up to run_jit and main;
 *   - deregistered: no frame is made from the section any more;
 *   - registration and deregistration in a loop while another thread
 *     walks through the code, the section freed after each
 *     deregistration (under ASan, a read of it afterwards is an error). */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "backstep.h"
#include "check.h"

#define MAXF 64

#include "jit_code.h"

static uint8_t *code;

/* ---- Running it -------------------------------------------------------------------- */

static volatile int cb_count;
static void (*cb_action)(void);

__attribute__((noinline)) void jit_cb(void)
{
	cb_count++;
	if (cb_action)
		cb_action();
	cb_count++;
}

__attribute__((noinline)) void run_jit(int trap)
{
	void (*fn)(void (*)(void)) = (void (*)(void (*)(void)))(void *)(code + (trap ? J0 : J1));
	fn(jit_cb);
	cb_count++;
}

static uint64_t cb_lo, cb_hi, run_lo, run_hi;
static uint64_t jit(unsigned off)
{
	return (uint64_t)(uintptr_t)code + off;
}

static const char *name_at(uint64_t pc)
{
	Dl_info di;
	return dladdr((void *)(uintptr_t)pc, &di) && di.dli_sname ? di.dli_sname : "?";
}

/* The return addresses above PC, as the code's layout says; 0 when PC is
 * not in the checked code. */
static int expected(uint64_t pc, uint64_t *want)
{
	int n = 0;
	if (pc >= cb_lo && pc < cb_hi)
		want[n++] = jit(RA_J3);
	if ((pc >= jit(J3) && pc < jit(J3 + J3_LEN)) || n)
		want[n++] = jit(RA_J2);
	if ((pc >= jit(J2) && pc < jit(J2 + J2_LEN)) || n)
		want[n++] = jit(RA_J1);
	if ((pc >= jit(J1) && pc < jit(J1 + J1_LEN)) || n)
		return n;
	return -1;
}

/* ---- Walks from jit_cb ------------------------------------------------------------- */

static void *bk_pcs[MAXF], *gcc_pcs[MAXF];
static int bk_n, gcc_n;
static int (*glibc_backtrace)(void **, int);

static void both_backtraces(void)
{
	bk_n = bk_backtrace(bk_pcs, MAXF);
	gcc_n = glibc_backtrace(gcc_pcs, MAXF);
}

struct cframe {
	uint64_t pc;
	int how;
	int has_r12;
	uint64_t r12;
};
static struct cframe cframes[MAXF];
static int ncframes, cresult;

static struct bk_space *walk_space; /* NULL: bk_space_local() */

static void cursor_walk(void)
{
	struct bk_cursor c;
	ncframes = 0;
	cresult = bk_cursor_init_local(&c, walk_space ? walk_space : bk_space_local());
	if (cresult)
		return;
	do {
		struct cframe *f = &cframes[ncframes++];
		f->pc = bk_cursor_pc(&c);
		f->how = bk_cursor_how(&c);
		f->has_r12 = bk_cursor_reg(&c, 12, &f->r12);
	} while (ncframes < MAXF && (cresult = bk_cursor_step(&c)) == 1);
}

/* The index of the cursor frame at PC, or -1. */
static int cframe_at(uint64_t pc)
{
	for (int i = 0; i < ncframes; i++)
		if (cframes[i].pc == pc)
			return i;
	return -1;
}

static void check_chain_from_cb(const char *what)
{
	int i = cframe_at(jit(RA_J3));
	CHECK(i > 0 && i + 3 < ncframes, "%s: the cursor reaches J3 (%d of %d frames, end %d)",
	      what, i, ncframes, cresult);
	if (getenv("BK_TEST_VERBOSE") || i <= 0 || i + 3 >= ncframes)
		for (int k = 0; k < ncframes; k++)
			fprintf(stderr, "  #%d %#lx %s (%s)\n", k, (unsigned long)cframes[k].pc,
				name_at(cframes[k].pc - 1), bk_how_name(cframes[k].how));
	if (i <= 0 || i + 3 >= ncframes)
		return;
	CHECK_U64(cframes[i + 1].pc, jit(RA_J2), what);
	CHECK_U64(cframes[i + 2].pc, jit(RA_J1), what);
	CHECK(cframes[i + 3].pc - 1 >= run_lo && cframes[i + 3].pc - 1 < run_hi,
	      "%s: after J1, run_jit: %s", what, name_at(cframes[i + 3].pc - 1));
	for (int k = 1; k <= 3; k++)
		CHECK(cframes[i + k].how == BK_HOW_CFI, "%s: frame %d made by %s", what, i + k,
		      bk_how_name(cframes[i + k].how));
	CHECK(cframes[i].has_r12 && cframes[i].r12 == 0x1234,
	      "%s: r12 in J3's frame: %d, %#lx", what, cframes[i].has_r12,
	      (unsigned long)cframes[i].r12);
	bool main_seen = false;
	for (int k = i + 4; k < ncframes; k++)
		main_seen |= !strcmp(name_at(cframes[k].pc - 1), "main");
	CHECK(main_seen && cresult == 0, "%s: on to main and the end (%d)", what, cresult);
}

/* ---- Every instruction, from SIGTRAP -------------------------------------------------- */

static volatile int traps, checked, bad;
static char bad_what[256];

static void fail(const char *what, uint64_t pc)
{
	if (!bad++) {
		/* Only the first, and only on failure: not AS-safe, and no matter. */
		snprintf(bad_what, sizeof(bad_what), "%s at %#lx (%s)", what, (unsigned long)pc,
			 name_at(pc));
	}
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	traps++;
	uint64_t want[4];
	int nwant = expected(pc, want);
	if (nwant < 0) {
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100; /* back in run_jit: done */
		return;
	}
	checked++;
	/* The cursor from the interrupted context. */
	struct bk_cursor c;
	uint64_t pcs[MAXF];
	int n = 0, k;
	if (bk_cursor_init_ucontext(&c, bk_space_local(), uc)) {
		fail("cursor init", pc);
		return;
	}
	do
		pcs[n++] = bk_cursor_pc(&c);
	while (n < MAXF && (k = bk_cursor_step(&c)) == 1);
	if (n < nwant + 3 || pcs[0] != pc) {
		fail("cursor: too few frames", pc);
		return;
	}
	for (int i = 0; i < nwant; i++)
		if (pcs[1 + i] != want[i]) {
			fail("cursor: a wrong JIT frame", pc);
			return;
		}
	uint64_t ra = pcs[1 + nwant];
	if (ra - 1 < run_lo || ra - 1 >= run_hi) {
		fail("cursor: not back in run_jit", pc);
		return;
	}
	/* bk_backtrace: the handler, the trampoline, then the same PCs. */
	void *bt[MAXF];
	int nb = bk_backtrace(bt, MAXF), at = -1;
	for (int i = 0; i < nb && at < 0; i++)
		if ((uint64_t)(uintptr_t)bt[i] == pc)
			at = i;
	if (at < 0 || nb - at != n) {
		fail("bk_backtrace: not the cursor's frames", pc);
		return;
	}
	for (int i = 0; i < n; i++)
		if ((uint64_t)(uintptr_t)bt[at + i] != pcs[i]) {
			fail("bk_backtrace: a PC differs from the cursor's", pc);
			return;
		}
}

static void test_every_instruction(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTRAP, &sa, NULL);
	cb_action = NULL;
	traps = checked = bad = 0;
	run_jit(1);
	signal(SIGTRAP, SIG_DFL);
	printf("trap flag: %d traps, %d instructions checked\n", traps, checked);
	CHECK(bad == 0, "%d instructions wrong; first: %s", bad, bad_what);
	/* J1 7 instructions, J2 4, J3 10, and jit_cb's. */
	CHECK(checked >= 21 + 3, "instructions checked: %d", checked);
}

/* ---- Registration semantics --------------------------------------------------------- */

static void test_semantics(uint8_t *eh)
{
	struct bk_space *s;
	CHECK_INT(bk_space_create_local(&s), 0, "space");
	static const uint8_t only_term[4] = { 0 };
	CHECK_INT(bk_space_register_eh_frame(s, only_term, 0, 0), 0, "only a terminator");
	CHECK_INT(bk_space_deregister_eh_frame(s, only_term), 0, "its deregistration");
	CHECK_INT(bk_space_register_eh_frame(s, NULL, 0, 0), BK_E_INVAL, "NULL");
	CHECK_INT(bk_space_register_eh_frame(s, (void *)0x1000, 0, 0), BK_E_MEMORY, "unmapped");
	CHECK_INT(bk_space_deregister_eh_frame(s, eh), BK_E_NOT_FOUND, "never registered");

	/* Damaged: an FDE's CIE pointer aimed outside the section. */
	uint8_t bad_eh[EH_LEN];
	write_eh(bad_eh, code, true);
	uint32_t wild = 0x7fff0000;
	memcpy(bad_eh + sizeof(cie) + 4, &wild, 4);
	CHECK_INT(bk_space_register_eh_frame(s, bad_eh, 0, 0), BK_E_CORRUPT, "damaged");
	CHECK_INT(bk_space_deregister_eh_frame(s, bad_eh), BK_E_NOT_FOUND, "damaged: not kept");
	/* A CIE of a version DWARF does not have. */
	write_eh(bad_eh, code, true);
	bad_eh[8] = 9;
	CHECK_INT(bk_space_register_eh_frame(s, bad_eh, 0, 0), BK_E_CORRUPT, "CIE version 9");

	CHECK_INT(bk_space_register_eh_frame(s, eh, 0, 0), 0, "register");
	struct bk_module_info mi;
	CHECK(bk_space_module_at(s, jit(J2 + 3), &mi) == 0 && mi.start == jit(J0) &&
	      mi.end == jit(J3 + J3_LEN) && mi.has_cfi && !strcmp(mi.path, ""),
	      "registered code as a module: the FDEs' range");
	CHECK_INT(bk_space_register_eh_frame(s, eh, 0, 0), BK_E_INVAL, "twice");
	CHECK_INT(bk_space_deregister_eh_frame(s, eh), 0, "deregister");
	CHECK_INT(bk_space_deregister_eh_frame(s, eh), BK_E_NOT_FOUND, "deregister twice");
	/* A range that leaves J3 out: its frames are not the section's. */
	CHECK_INT(bk_space_register_eh_frame(s, eh, jit(J0), jit(J3)), 0, "an explicit range");
	bk_space_destroy(s); /* still registered: freed with the space */
}

static void test_image(void)
{
	static uint8_t im[IM_LEN];
	write_image(im, code);
	struct bk_space *ls;
	CHECK_INT(bk_space_create_local(&ls), 0, "space");
	struct bk_module_image m = { sizeof(m), "jit-image", im, IM_LEN, jit(0) - IM_TEXT,
				     jit(0), jit(CODE_LEN) };
	static const uint8_t junk[64] = { 1, 2, 3 };
	struct bk_module_image bad = m;
	bad.image = junk;
	bad.len = sizeof(junk);
	CHECK_INT(bk_space_add_module_image(ls, &bad), BK_E_NOT_ELF, "not an ELF image");
	CHECK_INT(bk_space_add_module_image(ls, &m), 0, "add the image");
	CHECK_INT(bk_space_add_module_image(ls, &m), BK_E_INVAL, "the same start twice");
	struct bk_module_info mi;
	CHECK(bk_space_module_at(ls, jit(J1), &mi) == 0 && !strcmp(mi.path, "jit-image") &&
	      mi.start == jit(0) && mi.bias == (int64_t)(jit(0) - IM_TEXT) && mi.has_cfi,
	      "the image as a module");
	walk_space = ls;
	cb_action = cursor_walk;
	run_jit(0);
	check_chain_from_cb("an ELF image on a local space");
	CHECK_INT(bk_space_remove_module_image(ls, jit(0)), 0, "remove the image");
	CHECK_INT(bk_space_remove_module_image(ls, jit(0)), BK_E_NOT_FOUND, "removed twice");
	run_jit(0);
	int i = cframe_at(jit(RA_J3));
	CHECK(i < 0 || i + 1 >= ncframes || cframes[i + 1].how != BK_HOW_CFI,
	      "image removed: J3's caller not made by CFI");
	walk_space = NULL;
	cb_action = NULL;
	bk_space_destroy(ls);
}

/* ---- Registration while walking ------------------------------------------------------ */

static _Atomic int stop, full_chains;

static void count_chain(void)
{
	void *pcs[MAXF];
	int n = bk_backtrace(pcs, MAXF);
	for (int i = 0; i + 2 < n; i++)
		if ((uint64_t)(uintptr_t)pcs[i] == jit(RA_J3) &&
		    (uint64_t)(uintptr_t)pcs[i + 1] == jit(RA_J2) &&
		    (uint64_t)(uintptr_t)pcs[i + 2] == jit(RA_J1))
			atomic_fetch_add(&full_chains, 1);
}

static void *walker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		run_jit(0);
	return NULL;
}

static void test_race(void)
{
	cb_action = count_chain;
	pthread_t t;
	pthread_create(&t, NULL, walker, NULL);
	int rounds = 0;
	for (; rounds < 1000; rounds++) {
		uint8_t *eh = malloc(EH_LEN);
		write_eh(eh, code, true);
		CHECK_INT(bk_space_register_eh_frame(bk_space_local(), eh, 0, 0), 0, "race register");
		/* Every other round, until a walk went through it (2 ms at most). */
		int before = atomic_load(&full_chains);
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do
			clock_gettime(CLOCK_MONOTONIC, &t1);
		while (rounds % 2 == 0 && atomic_load(&full_chains) == before &&
		       (t1.tv_sec - t0.tv_sec) * 1000000000L + (t1.tv_nsec - t0.tv_nsec) < 2000000L);
		CHECK_INT(bk_space_deregister_eh_frame(bk_space_local(), eh), 0, "race deregister");
		memset(eh, 0xff, EH_LEN);
		free(eh);
	}
	atomic_store(&stop, 1);
	pthread_join(t, NULL);
	cb_action = NULL;
	printf("race: %d registrations, %d walks through the whole JIT chain\n", rounds,
	       atomic_load(&full_chains));
	CHECK(atomic_load(&full_chains) > 0, "walks went through the registered code");
}

int main(void)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1((void *)jit_cb, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 1;
	cb_lo = (uint64_t)(uintptr_t)jit_cb;
	cb_hi = cb_lo + sym->st_size;
	if (!dladdr1((void *)run_jit, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 1;
	run_lo = (uint64_t)(uintptr_t)run_jit;
	run_hi = run_lo + sym->st_size;

	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	write_code(code);
	/* The section in the code's page, as a JIT would place it. */
	uint8_t *eh = code + 2048;
	write_eh(eh, code, false);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;

	test_semantics(eh);

	/* libgcc's unwinder on the same bytes: glibc backtrace(). */
	void *gcc_s = dlopen("libgcc_s.so.1", RTLD_NOW);
	void (*reg)(void *) = gcc_s ? (void (*)(void *))dlsym(gcc_s, "__register_frame") : NULL;
	void (*dereg)(void *) = gcc_s ? (void (*)(void *))dlsym(gcc_s, "__deregister_frame") : NULL;
	void *glibc = dlopen("libc.so.6", RTLD_NOW);
	glibc_backtrace = glibc ? (int (*)(void **, int))dlsym(glibc, "backtrace") : NULL;
	CHECK(reg && dereg && glibc_backtrace, "libgcc's __register_frame and glibc's backtrace");
	CHECK_INT(bk_space_register_eh_frame(bk_space_local(), eh, 0, 0), 0, "register");
	if (reg && dereg && glibc_backtrace) {
		reg(eh);
		cb_action = both_backtraces;
		run_jit(0);
		dereg(eh);
		int main_at = -1;
		for (int i = 0; i < gcc_n && main_at < 0; i++)
			if (!strcmp(name_at((uint64_t)(uintptr_t)gcc_pcs[i] - 1), "main"))
				main_at = i;
		CHECK(main_at > 4, "libgcc reaches main through the JIT code: %d", main_at);
		/* The first PC is each one's return into jit_cb. */
		for (int i = 1; i <= main_at && i < bk_n; i++)
			CHECK(bk_pcs[i] == gcc_pcs[i], "PC %d: bk_backtrace %p, libgcc %p (%s)", i,
			      bk_pcs[i], gcc_pcs[i], name_at((uint64_t)(uintptr_t)gcc_pcs[i] - 1));
		/* both_backtraces, jit_cb, J3 */
		CHECK_U64((uint64_t)(uintptr_t)bk_pcs[2], jit(RA_J3), "bk_backtrace: J3");
	}
	cb_action = cursor_walk;
	run_jit(0);
	check_chain_from_cb("cursor from jit_cb");

	test_every_instruction();

	CHECK_INT(bk_space_deregister_eh_frame(bk_space_local(), eh), 0, "deregister");
	cb_action = cursor_walk;
	run_jit(0);
	int i = cframe_at(jit(RA_J3));
	CHECK(i < 0 || i + 1 >= ncframes || cframes[i + 1].how != BK_HOW_CFI,
	      "deregistered: J3's caller not made by CFI");

	/* The same FDEs with absolute pointers, in memory far from the code. */
	uint8_t *heap_eh = malloc(EH_LEN);
	write_eh(heap_eh, code, true);
	CHECK_INT(bk_space_register_eh_frame(bk_space_local(), heap_eh, 0, 0), 0, "absptr");
	cb_action = cursor_walk;
	run_jit(0);
	check_chain_from_cb("absptr FDEs");
	cb_action = count_chain;
	run_jit(0);
	CHECK_INT(atomic_load(&full_chains), 1, "bk_backtrace through absptr FDEs");
	CHECK_INT(bk_space_deregister_eh_frame(bk_space_local(), heap_eh), 0, "deregister");

	/* Other FDEs for the same code, registered after: the walk follows
	 * them, not the rules cached from the first (the PC-only walk's
	 * table gives the new registration the id the old one had). Then
	 * the right ones again. */
	for (int round = 0; round < 2; round++) {
		write_eh(heap_eh, code, true);
		CHECK(break_j2(heap_eh, true), "J2's FDE found");
		CHECK_INT(bk_space_register_eh_frame(bk_space_local(), heap_eh, 0, 0), 0, "wrong FDEs");
		atomic_store(&full_chains, 0);
		run_jit(0);
		CHECK_INT(atomic_load(&full_chains), 0, "bk_backtrace follows the new (wrong) FDEs");
		CHECK_INT(bk_space_deregister_eh_frame(bk_space_local(), heap_eh), 0, "deregister");
		write_eh(heap_eh, code, true);
		CHECK_INT(bk_space_register_eh_frame(bk_space_local(), heap_eh, 0, 0), 0, "right again");
		run_jit(0);
		run_jit(0);
		CHECK_INT(atomic_load(&full_chains), 2, "bk_backtrace follows the right FDEs again");
		CHECK_INT(bk_space_deregister_eh_frame(bk_space_local(), heap_eh), 0, "deregister");
	}
	free(heap_eh);
	atomic_store(&full_chains, 0);

	test_image();
	test_race();
	return check_summary();
}
