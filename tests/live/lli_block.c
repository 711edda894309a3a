/* Run by lli-14 (LLVM's JIT) from IR that clang -O2 -g made (lli_test.py):
 * every function here is JIT code, without frame pointers. Two threads,
 * each parked in pause() five calls deep (with an inlined call on the
 * way); "ready" on stdout once both are there. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) static int park(int x)
{
	pause();
	return x + sink;
}

static inline __attribute__((always_inline)) int twice(int x)
{
	return park(x * 2) + 1;
}

__attribute__((noinline)) static int level3(int x)
{
	return twice(x - 1) * 5;
}

__attribute__((noinline)) static int level2(int x)
{
	return level3(x + 7) - 2;
}

__attribute__((noinline)) static int level1(int x)
{
	return level2(x ^ 3) + 11;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started;

__attribute__((noinline)) static void *worker(void *arg)
{
	pthread_mutex_lock(&lock);
	started = 1;
	pthread_cond_signal(&cond);
	pthread_mutex_unlock(&lock);
	return (void *)(long)level1((int)(long)arg);
}

int main(int argc, char **argv)
{
	(void)argv;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, (void *)(long)argc) != 0)
		return 1;
	pthread_mutex_lock(&lock);
	while (!started)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	printf("ready\n");
	fflush(stdout);
	return level1(argc + 1);
}
