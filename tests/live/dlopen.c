/* Code in a dlopen'ed library that blocks: `dlopen LIB` loads LIB (the
 * livedl library built next to it) with dlopen and
 *   thread "inlib":  t_main -> dl_park_here -> dl_x1 -> dl_x2 -> dl_x3 -> read
 *   main:            main -> dl_park_via -> dl_y1 -> dl_y2 -> exe_callback
 *                    -> exe_block -> pause
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "live.h"

static void (*park_here)(int);
static void (*park_via)(void (*)(void));
static atomic_int parked;
static int pipefd[2];

NOINLINE static void exe_block(void)
{
	live_ready();
	for (;;)
		pause();
}

static void exe_callback(void)
{
	exe_block();
	KEEP();
}

static void *t_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "inlib");
	atomic_store(&parked, 1);
	park_here(pipefd[0]);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		live_die("usage: dlopen LIB");
	void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h)
		live_die(dlerror());
	park_here = (void (*)(int))(uintptr_t)dlsym(h, "dl_park_here");
	park_via = (void (*)(void (*)(void)))(uintptr_t)dlsym(h, "dl_park_via");
	if (!park_here || !park_via)
		live_die("dlsym");
	if (pipe(pipefd) != 0)
		live_die("pipe");
	pthread_t t;
	if (pthread_create(&t, NULL, t_main, NULL) != 0)
		live_die("pthread_create");
	while (!atomic_load(&parked))
		usleep(1000);
	park_via(exe_callback);
	return 0;
}
