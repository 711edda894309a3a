/* A thread made with raw clone(2) (CLONE_VM | CLONE_FS | CLONE_FILES |
 * CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM, no pthread, no TLS of its
 * own, a stack from a static array) blocked in nested calls:
 *   child_start -> k1 -> k2 -> k3 -> FUTEX_WAIT (syscall(2))
 * The child's outermost frame is glibc's clone(), whose CFI marks the
 * return address undefined in the child. The main thread blocks in
 * m1 -> m2 -> pause. The child touches no libc state beyond syscall(2). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>

#include "live.h"

#define STACK_SIZE (256 * 1024)

static char child_stack[STACK_SIZE] __attribute__((aligned(64)));
static atomic_int parked;
static int futex_word;

NOINLINE static void k3(void)
{
	atomic_store(&parked, 1);
	for (;;)
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}
NOINLINE static void k2(void) { k3(); KEEP(); }
NOINLINE static void k1(void) { k2(); KEEP(); }

static int child_start(void *arg)
{
	(void)arg;
	k1();
	KEEP();
	return 0;
}

NOINLINE static void m2(void)
{
	live_ready();
	for (;;)
		pause();
}
NOINLINE static void m1(void) { m2(); KEEP(); }

int main(void)
{
	int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
		    CLONE_SYSVSEM;
	if (clone(child_start, child_stack + STACK_SIZE, flags, NULL) < 0)
		live_die("clone");
	while (!atomic_load(&parked))
		usleep(1000);
	m1();
	return 0;
}
