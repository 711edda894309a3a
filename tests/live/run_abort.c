/* For `backstep run`: a non-main thread ("aborter") calls abort() from
 * nested calls (abort_outer -> abort_inner -> abort) while the main thread
 * waits for it in pthread_join and a third thread ("idle") is in pause. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include "live.h"

static atomic_int started;

static void *idle_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "idle");
	atomic_store(&started, 1);
	for (;;)
		pause();
	return NULL;
}

NOINLINE void abort_inner(void) { abort(); }
NOINLINE void abort_outer(void) { abort_inner(); KEEP(); }

static void *aborter_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "aborter");
	abort_outer();
	return NULL;
}

int main(void)
{
	pthread_t idle, aborter;
	if (pthread_create(&idle, NULL, idle_main, NULL) != 0)
		live_die("pthread_create");
	while (!atomic_load(&started))
		usleep(1000);
	usleep(20000);
	if (pthread_create(&aborter, NULL, aborter_main, NULL) != 0)
		live_die("pthread_create");
	pthread_join(aborter, NULL);
	return 0;
}
