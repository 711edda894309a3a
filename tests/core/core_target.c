/* The process the core-file tests take cores of: three threads and the
 * main thread parked in nested calls that pass through corefix (loaded with
 * dlopen from the path given, so a test chooses which copy is mapped).
 * Prints "ready" once every thread is parked.
 *
 *   core_target LIB          park forever (a test runs gcore, then kills it)
 *   core_target LIB crash    then abort() from the main thread's bottom
 *                            frame with RLIMIT_CORE raised: a kernel core
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define NTHREADS 3
#define KEEP() __asm__ volatile("" ::: "memory")

static void (*park)(int depth, void (*cb)(void));
static atomic_int parked;
static int crash;

static void thread_bottom(void)
{
	atomic_fetch_add(&parked, 1);
}

static void main_bottom(void)
{
	while (atomic_load(&parked) < NTHREADS)
		usleep(1000);
	if (crash) {
		struct rlimit r = { RLIM_INFINITY, RLIM_INFINITY };
		setrlimit(RLIMIT_CORE, &r);
		abort();
	}
	puts("ready");
	fflush(stdout);
}

__attribute__((noinline)) static void level3(int id, void (*cb)(void))
{
	park(id, cb);
	KEEP();
}

__attribute__((noinline)) static void level2(int id, void (*cb)(void))
{
	level3(id, cb);
	KEEP();
}

__attribute__((noinline)) static void level1(int id, void (*cb)(void))
{
	if (id & 1)
		level2(id, cb);
	else
		level3(id, cb);
	KEEP();
}

static void *thread_main(void *arg)
{
	level1((int)(intptr_t)arg, thread_bottom);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: core_target LIB [crash]\n");
		return 2;
	}
	crash = argc > 2 && strcmp(argv[2], "crash") == 0;
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h || !(park = (void (*)(int, void (*)(void)))dlsym(h, "corefix_park"))) {
		fprintf(stderr, "core_target: %s\n", dlerror());
		return 1;
	}
	pthread_t t[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)(i + 1));
	level1(0, main_bottom);
	return 0;
}
