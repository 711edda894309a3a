/* Inside signal handlers raised from nested calls, the handlers blocked:
 *   main    o1 -> o2 -> o3 -> raise(SIGUSR1); handler on_usr1 -> hw1 -> hw2 -> pause
 *   "alt"   a1 -> a2 -> pthread_kill(self, SIGUSR2), handled on an alternate
 *           signal stack (SA_ONSTACK): on_usr2 -> aw1 -> aw2 -> pause
 *   "fault" f1 -> f2 -> f3 stores through a null pointer; the SIGSEGV
 *           handler (SA_SIGINFO) -> sw1 -> sw2 -> pause. The frame after
 *           the signal frame is the faulting instruction, not a return
 *           address.
 * Prints "ready" from inside the main thread's handler, once the other two
 * are in theirs. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "live.h"

static atomic_int in_handler;
static int *volatile nullp;
static volatile int faulted; /* also keeps sw2 unlike aw2 (no code folding) */
static char altstack[1 << 16] __attribute__((aligned(16)));

NOINLINE static void hw2(void)
{
	live_ready();
	for (;;)
		pause();
}
NOINLINE static void hw1(void) { hw2(); KEEP(); }

static void on_usr1(int sig)
{
	(void)sig;
	hw1();
	KEEP();
}

NOINLINE static void aw2(void)
{
	atomic_fetch_add(&in_handler, 1);
	for (;;)
		pause();
}
NOINLINE static void aw1(void) { aw2(); KEEP(); }

static void on_usr2(int sig)
{
	(void)sig;
	aw1();
	KEEP();
}

NOINLINE static void sw2(void)
{
	faulted = 1;
	atomic_fetch_add(&in_handler, 1);
	for (;;)
		pause();
}
NOINLINE static void sw1(void) { sw2(); KEEP(); }

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si, (void)uc;
	sw1();
	KEEP();
}

NOINLINE static void o3(void) { raise(SIGUSR1); KEEP(); }
NOINLINE static void o2(void) { o3(); KEEP(); }
NOINLINE static void o1(void) { o2(); KEEP(); }

NOINLINE static void a2(void) { pthread_kill(pthread_self(), SIGUSR2); KEEP(); }
NOINLINE static void a1(void) { a2(); KEEP(); }

NOINLINE static void f3(void) { *nullp = 1; KEEP(); }
NOINLINE static void f2(void) { f3(); KEEP(); }
NOINLINE static void f1(void) { f2(); KEEP(); }

static void *alt_main(void *arg)
{
	(void)arg;
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack), .ss_flags = 0 };
	pthread_setname_np(pthread_self(), "alt");
	if (sigaltstack(&ss, NULL) != 0)
		live_die("sigaltstack");
	a1();
	return NULL;
}

static void *fault_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "fault");
	f1();
	return NULL;
}

static void handle(int sig, void (*fn)(int), void (*act)(int, siginfo_t *, void *), int flags)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	if (act) {
		sa.sa_sigaction = act;
		sa.sa_flags = SA_SIGINFO | flags;
	} else {
		sa.sa_handler = fn;
		sa.sa_flags = flags;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL) != 0)
		live_die("sigaction");
}

int main(void)
{
	pthread_t t1, t2;
	handle(SIGUSR1, on_usr1, NULL, 0);
	handle(SIGUSR2, on_usr2, NULL, SA_ONSTACK);
	handle(SIGSEGV, NULL, on_segv, 0);
	if (pthread_create(&t1, NULL, alt_main, NULL) || pthread_create(&t2, NULL, fault_main, NULL))
		live_die("pthread_create");
	while (atomic_load(&in_handler) < 2)
		usleep(1000);
	o1();
	return 0;
}
