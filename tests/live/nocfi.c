/* Code with no call-frame information at all (built with
 * -fno-asynchronous-unwind-tables -fno-unwind-tables and -g0, so there is
 * neither .eh_frame nor .debug_frame for it): the unwinders fall back to
 * frame pointers (-fno-omit-frame-pointer).
 *   main    n1 -> n2 -> n3 -> pause
 *   "leaf"  l1 -> l2 -> l3, a leaf with no frame pointer of its own, faults;
 *           the SIGSEGV handler (which has frame pointers, no CFI) blocks.
 *           The frame after the signal frame is interrupted where neither
 *           CFI nor a frame-pointer chain describes it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>

#include "live.h"

static atomic_int parked;
__attribute__((visibility("hidden"))) int *volatile live_nullp;

NOINLINE static void n3(void)
{
	live_ready();
	for (;;)
		pause();
}
NOINLINE static void n2(void) { n3(); KEEP(); }
NOINLINE static void n1(void) { n2(); KEEP(); }

NOINLINE static void hold(void)
{
	atomic_store(&parked, 1);
	for (;;)
		pause();
}

static void on_segv(int sig)
{
	(void)sig;
	hold();
	KEEP();
}

/* No frame of its own (written in assembly, so every compiler leaves it
 * so): the return address stays at [rsp] when it faults. */
void l3(void);
__asm__(".text\n"
	".globl l3\n"
	".hidden l3\n"
	".type l3, @function\n"
	"l3:\n"
	"	movq live_nullp(%rip), %rax\n"
	"	movl $1, (%rax)\n"
	"	ret\n"
	".size l3, .-l3\n");
NOINLINE static void l2(void) { l3(); KEEP(); }
NOINLINE static void l1(void) { l2(); KEEP(); }

static void *leaf_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "leaf");
	l1();
	return NULL;
}

/* Kept apart from main so that main's prologue is the canonical
 * push %rbp; mov %rsp,%rbp (see README: gdb's prologue analysis). */
NOINLINE static void setup(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, leaf_main, NULL) != 0)
		live_die("pthread_create");
	while (!atomic_load(&parked))
		usleep(1000);
}

int main(void)
{
	setup();
	n1();
	return 0;
}
