/* For `backstep run`: the main thread dies of SIGSEGV in nested calls
 *   main -> crash1 -> crash2 -> crash_here (stores through a null pointer)
 * while a second thread ("idle") is blocked in idle1 -> idle2 -> pause. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "live.h"

static int *volatile nullp;
static atomic_int started;

NOINLINE static void idle2(void)
{
	atomic_store(&started, 1);
	for (;;)
		pause();
}
NOINLINE static void idle1(void) { idle2(); KEEP(); }

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "idle");
	idle1();
	return NULL;
}

NOINLINE void crash_here(void) { *nullp = 42; KEEP(); }
NOINLINE void crash2(void) { crash_here(); KEEP(); }
NOINLINE void crash1(void) { crash2(); KEEP(); }

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, idle_main, NULL) != 0)
		live_die("pthread_create");
	while (!atomic_load(&started))
		usleep(1000);
	usleep(20000); /* let it reach pause */
	crash1();
	return 0;
}
