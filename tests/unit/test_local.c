/* Unwinding this process from inside: bk_backtrace against glibc's
 * backtrace() (libgcc's unwinder) on the same stacks, no allocation on the
 * path (malloc is interposed and counted, from the very first call), a
 * cursor started at the caller and one from a signal handler's ucontext. */
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <ucontext.h>

#include "backstep.h"
#include "check.h"

/* ---- malloc interposition: count calls while armed ---- */
static volatile int armed;
static volatile int allocs_while_armed;
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
void *malloc(size_t n)
{
	if (armed)
		allocs_while_armed++;
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	if (armed)
		allocs_while_armed++;
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	if (armed)
		allocs_while_armed++;
	return __libc_realloc(p, n);
}
void free(void *p)
{
	if (armed && p)
		allocs_while_armed++;
	__libc_free(p);
}

/* Internal (src/unwind): bk_backtrace by the cursor alone, the reference
 * for its fast walk. */
int uw_backtrace_cursor(void **pcs, int max);

#define MAXF 64
static void *ours[MAXF], *theirs[MAXF], *ref[MAXF];
static int nours, ntheirs, nref;

__attribute__((noinline)) void take_both(void)
{
	armed = 1;
	nours = bk_backtrace(ours, MAXF);
	nref = uw_backtrace_cursor(ref, MAXF);
	armed = 0;
	ntheirs = backtrace(theirs, MAXF);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void recurse(int n)
{
	if (n)
		recurse(n - 1);
	else
		take_both();
	__asm__ volatile("" ::: "memory");
}

static void compare(const char *what)
{
	/* glibc's first entry is inside take_both after its call to backtrace,
	 * ours after the call to bk_backtrace. Under AddressSanitizer glibc's
	 * backtrace() is intercepted and its list starts with the interceptor:
	 * align the lists on the entry in take_both, then compare the rest. */
	CHECK(nours > 3 && ntheirs > 3, "%s: %d and %d frames", what, nours, ntheirs);
	Dl_info a, b;
	int j = 0;
	CHECK(dladdr(ours[0], &a) && a.dli_sname && strcmp(a.dli_sname, "take_both") == 0,
	      "%s: frame 0 in take_both", what);
	while (j < ntheirs && !(dladdr(theirs[j], &b) && b.dli_saddr == a.dli_saddr))
		j++;
	CHECK(j <= 1, "%s: glibc's list has take_both at %d", what, j);
	CHECK_INT(nours, ntheirs < MAXF ? ntheirs - j : MAXF, what); /* both lists may be full */
	CHECK(nref == nours, "%s: the cursor's walk has %d frames, the fast one %d", what, nref, nours);
	for (int i = 1; i < nours && i < nref; i++)
		CHECK(ours[i] == ref[i], "%s: frame %d: fast %p vs cursor %p", what, i, ours[i], ref[i]);
	for (int i = 1; i < nours && i + j < ntheirs; i++)
		CHECK(ours[i] == theirs[i + j], "%s: frame %d: %p vs glibc %p", what, i, ours[i],
		      theirs[i + j]);
}

/* ---- from a signal handler ---- */
static volatile int handler_frames, handler_ok, handler_allocs;

void on_prof(int sig, siginfo_t *si, void *uc);
void on_prof(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	int before = allocs_while_armed;
	armed = 1;
	struct bk_cursor c;
	int n = 0, rc = bk_cursor_init_ucontext(&c, bk_space_local(), uc);
	bool saw_main = false;
	if (rc == 0) {
		do {
			Dl_info info;
			if (dladdr((void *)(uintptr_t)bk_cursor_lookup_pc(&c), &info) && info.dli_sname &&
			    __builtin_strcmp(info.dli_sname, "main") == 0)
				saw_main = true;
			n++;
		} while ((rc = bk_cursor_step(&c)) == 1);
	}
	void *pcs[MAXF];
	int m = bk_backtrace(pcs, MAXF);
	armed = 0;
	handler_allocs += allocs_while_armed - before;
	handler_frames = n;
	handler_ok = rc == 0 && saw_main && m > n;
}

__attribute__((noinline)) void interrupted(void)
{
	raise(SIGPROF);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) int caller_of_init(uint64_t *pc_out)
{
	struct bk_cursor c;
	int rc = bk_cursor_init_local(&c, bk_space_local());
	*pc_out = bk_cursor_pc(&c);
	return rc;
}

int main(void)
{
	recurse(0);
	compare("shallow (first call)");
	CHECK_INT(allocs_while_armed, 0, "no allocation in bk_backtrace, first call");
	recurse(20);
	compare("20 deep");
	recurse(300);
	compare("300 deep (deeper than MAXF)");
	CHECK_INT(allocs_while_armed, 0, "no allocation in bk_backtrace");

	uint64_t pc = 0;
	CHECK_INT(caller_of_init(&pc), 0, "bk_cursor_init_local");
	Dl_info info;
	CHECK(dladdr((void *)(uintptr_t)(pc - 1), &info) && info.dli_sname &&
	      strcmp(info.dli_sname, "caller_of_init") == 0,
	      "init_local starts in its caller (%s)", info.dli_sname ? info.dli_sname : "?");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGPROF, &sa, NULL);
	interrupted();
	CHECK(handler_ok, "ucontext walk reaches main and ends cleanly (%d frames)", handler_frames);
	CHECK_INT(handler_allocs, 0, "no allocation in the handler's walks");

	struct bk_space *own;
	CHECK_INT(bk_space_create_local(&own), 0, "a separate local space");
	struct bk_cursor c;
	CHECK_INT(bk_cursor_init_local(&c, own), 0, "cursor in it");
	int n = 0;
	while (bk_cursor_step(&c) == 1)
		n++;
	CHECK(n >= 2, "walks from main (%d frames)", n);
	bk_space_destroy(own);
	return check_summary();
}
