/* Evidence for tests/localdiff/expected.txt entry 2 (EXPECTED.md): nongnu
 * libunwind 1.6.2 keys its register-state cache by the IP alone, not by
 * the IP and whether the frame's PC is a return address (looked up at
 * PC - 1) or an interrupted PC (looked up at PC). ldu_fb's first
 * instruction is also ldu_fa's return address (unw_rs_cache.S), so
 * whichever of the two lookups comes first decides the row the other gets:
 *
 *  - a walk from ldu_fb+0 as an interrupted frame (a signal frame's
 *    context, UNW_INIT_SIGNAL_FRAME) after a walk through ldu_fa's call
 *    takes ldu_fa's row there: it reads the caller from rsp+8, not rsp;
 *  - in a fresh process, the other order: the walk through ldu_fa's call
 *    after a walk from ldu_fb+0 takes ldu_fb's entry row for ldu_fa's frame
 *    and reads its caller from rsp (0x3333) instead of rsp+8.
 *
 * backstep is held to the right answers on the same contexts, in both
 * orders. The test asserts libunwind's wrong answers too: when a libunwind
 * without this bug is installed it fails, and the expected-file entry has
 * to go. Needs libunwind.so.8 (Debian: libunwind8). */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "backstep.h"
#include "check.h"

void ldu_fa(void);
void ldu_fb(void);
void ldu_noreturn(void);

/* libunwind's local API (libunwind-dev is not needed: the ABI of 1.6). */
typedef struct {
	uint64_t opaque[127];
} unw_cursor_t;
static int (*unw_init_local)(unw_cursor_t *, ucontext_t *);
static int (*unw_init_local2)(unw_cursor_t *, ucontext_t *, int);
static int (*unw_step)(unw_cursor_t *);
static int (*unw_get_reg)(unw_cursor_t *, int, uint64_t *);
enum { UNW_X86_64_RIP = 16, UNW_INIT_SIGNAL_FRAME = 1 };

/* A stack for ldu_fb+0 as an interrupted frame: its return address is
 * at rsp (0x1111); rsp+8 holds 0x2222, what ldu_fa's row would read. */
static uint64_t fake_stack[4] = { 0x1111, 0x2222, 0, 0 };

static ucontext_t fb_context(void)
{
	ucontext_t uc;
	getcontext(&uc);
	uc.uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)ldu_fb;
	uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)fake_stack;
	return uc;
}

static uint64_t libunwind_caller_of_fb(void)
{
	ucontext_t uc = fb_context();
	unw_cursor_t c;
	uint64_t ip = 0;
	if (unw_init_local2(&c, &uc, UNW_INIT_SIGNAL_FRAME) == 0 && unw_step(&c) > 0)
		unw_get_reg(&c, UNW_X86_64_RIP, &ip);
	return ip;
}

static uint64_t backstep_caller_of_fb(void)
{
	ucontext_t uc = fb_context();
	struct bk_cursor c;
	if (bk_cursor_init_ucontext(&c, bk_space_local(), &uc) != 0 || bk_cursor_step(&c) != 1)
		return 0;
	return bk_cursor_pc(&c);
}

/* Walks from inside ldu_noreturn (called by ldu_fa): the caller each
 * unwinder gives ldu_fa's frame (whose PC is ldu_fb, its return address). */
static jmp_buf back;
static uint64_t unw_caller_of_fa, bk_caller_of_fa;
static uintptr_t through_lo, through_hi;

void ldu_noreturn(void)
{
	ucontext_t uc;
	getcontext(&uc);
	unw_cursor_t c;
	uint64_t ip, prev = 0;
	unw_caller_of_fa = bk_caller_of_fa = 0;
	if (unw_init_local(&c, &uc) == 0)
		for (int n = 0; n < 16 && unw_step(&c) > 0; n++) {
			if (unw_get_reg(&c, UNW_X86_64_RIP, &ip) != 0)
				break;
			if (prev == (uintptr_t)ldu_fb)
				unw_caller_of_fa = ip;
			prev = ip;
		}
	void *pcs[16];
	int n = bk_backtrace(pcs, 16);
	for (int i = 0; i + 1 < n; i++)
		if (pcs[i] == (void *)(uintptr_t)ldu_fb)
			bk_caller_of_fa = (uintptr_t)pcs[i + 1];
	longjmp(back, 1);
}

void ldu_through_fa(void);
__attribute__((noinline)) void ldu_through_fa(void)
{
	if (!setjmp(back))
		ldu_fa();
}

static bool in_through(uint64_t pc)
{
	return pc > through_lo && pc <= through_hi; /* a return address into it */
}

int main(void)
{
	/* ldu_through_fa's extent (linked -rdynamic): ldu_fa's caller. */
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (dladdr1((void *)ldu_through_fa, &info, (void **)&sym, RTLD_DL_SYMENT) && sym) {
		through_lo = (uintptr_t)info.dli_saddr;
		through_hi = through_lo + sym->st_size;
	}
	CHECK(through_hi > through_lo, "ldu_through_fa's extent is known");
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	CHECK(h != NULL, "libunwind.so.8 loads (Debian: libunwind8)");
	if (!h)
		return check_summary();
	*(void **)&unw_init_local = dlsym(h, "_ULx86_64_init_local");
	*(void **)&unw_init_local2 = dlsym(h, "_ULx86_64_init_local2");
	*(void **)&unw_step = dlsym(h, "_ULx86_64_step");
	*(void **)&unw_get_reg = dlsym(h, "_ULx86_64_get_reg");
	CHECK(unw_init_local && unw_init_local2 && unw_step && unw_get_reg,
	      "libunwind's local API found");
	if (!(unw_init_local && unw_init_local2 && unw_step && unw_get_reg))
		return check_summary();

	pid_t child = fork();
	if (child == 0) {
		/* A fresh process: ldu_fb+0 first, then through ldu_fa. */
		int bad = 0;
		bad |= (libunwind_caller_of_fb() != 0x1111) << 0; /* right, first */
		ldu_through_fa();
		bad |= (unw_caller_of_fa != 0x3333) << 1; /* wrong: ldu_fb's row */
		bad |= !in_through(bk_caller_of_fa) << 2;
		bad |= (backstep_caller_of_fb() != 0x1111) << 3;
		_exit(bad);
	}
	/* Here: through ldu_fa first, then ldu_fb+0. */
	ldu_through_fa();
	CHECK(in_through(unw_caller_of_fa), "libunwind: ldu_fa's caller, first (0x%llx)",
	      (unsigned long long)unw_caller_of_fa);
	CHECK(in_through(bk_caller_of_fa), "backstep: ldu_fa's caller (0x%llx)",
	      (unsigned long long)bk_caller_of_fa);
	CHECK_U64(libunwind_caller_of_fb(), 0x2222,
		  "libunwind: the caller of ldu_fb+0 after ldu_fa's call (its bug: ldu_fa's row)");
	CHECK_U64(backstep_caller_of_fb(), 0x1111, "backstep: the caller of ldu_fb+0");
	int status = 0;
	CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status), "the other order ran");
	int bad = WEXITSTATUS(status);
	CHECK(!(bad & 1), "libunwind: the caller of ldu_fb+0 in a fresh process is right");
	CHECK(!(bad & 2), "libunwind: ldu_fa's caller after ldu_fb+0 is 0x3333 (its bug: ldu_fb's row)");
	CHECK(!(bad & 4), "backstep: ldu_fa's caller after ldu_fb+0");
	CHECK(!(bad & 8), "backstep: the caller of ldu_fb+0 (second)");
	return check_summary();
}
