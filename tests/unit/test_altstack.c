/* bk_backtrace and a ucontext cursor walk from a signal handler running on
 * a small alternate stack (ALT_SIZE bytes, a PROT_NONE guard page below
 * it): the very first walk of the process (every table cold: modules
 * described, rows decoded) and a warm one. Overflowing the stack would hit
 * the guard page and kill the test. The stack is filled with a pattern
 * first, and the deepest byte the handler changed is printed: the stack
 * the walks need, for docs and for profilers sizing their sigaltstack. */
#include <signal.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backstep.h"
#include "check.h"

/* The bound holds for the library as built for use; under a sanitizer
 * every frame carries redzones (ASan's frames here are several times
 * larger), so only the walks themselves are checked there. */
#if defined(__SANITIZE_ADDRESS__)
#define ALT_SIZE (256 * 1024)
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ALT_SIZE (256 * 1024)
#endif
#endif
#ifndef ALT_SIZE
#define ALT_SIZE (24 * 1024)
#endif
#define PAGE 4096

static uint8_t *alt;
static int nbt, ncur, cur_rc;
static void *pcs[128];

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	nbt = bk_backtrace(pcs, 128);
	struct bk_cursor c;
	ncur = 0;
	cur_rc = bk_cursor_init_ucontext(&c, bk_space_local(), uc);
	while (cur_rc == 0 && ncur < 128 && bk_cursor_step(&c) == 1)
		ncur++;
}

static size_t used(void)
{
	size_t i = 0;
	while (i < ALT_SIZE && alt[PAGE + i] == 0xa5)
		i++;
	return ALT_SIZE - i;
}

__attribute__((noinline)) static void deep(int n)
{
	if (n)
		deep(n - 1);
	else
		raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	alt = mmap(NULL, PAGE + ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(alt != MAP_FAILED, "mmap");
	CHECK(mprotect(alt, PAGE, PROT_NONE) == 0, "guard page");
	stack_t ss = { .ss_sp = alt + PAGE, .ss_size = ALT_SIZE };
	CHECK(sigaltstack(&ss, NULL) == 0, "sigaltstack");
	struct sigaction sa = { .sa_sigaction = handler, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	sigaction(SIGUSR1, &sa, NULL);
	for (int round = 0; round < 2; round++) {
		memset(alt + PAGE, 0xa5, ALT_SIZE);
		deep(20);
		printf("%s walk: %d frames (bk_backtrace), %d (ucontext cursor); %zu bytes of the "
		       "alternate stack used\n", round ? "warm" : "first", nbt, ncur, used());
		CHECK(nbt > 22, "bk_backtrace from the handler: %d frames", nbt);
		CHECK(cur_rc == 0 && ncur > 20, "cursor from the ucontext: rc %d, %d frames", cur_rc,
		      ncur);
	}
	return check_summary();
}
