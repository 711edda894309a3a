/* An AArch64 program that dies of SIGSEGV under qemu-user, for `backstep
 * core` to read the core qemu writes (tests/core/qemu_core_test.py):
 *   qemu_core            main -> crash2 -> crash_here, faulting;
 *   qemu_core lib        main -> sr_call (libsr.so, found through the
 *                        sysroot) -> crash_here.
 * A second thread spins in spin() <- worker all along: qemu-user 7.2 spins
 * forever writing the core of a program with a thread blocked in a system
 * call, so the worker is kept busy instead. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#ifdef QEMU_CORE_LIB
__attribute__((noinline)) int sr_call(void (*fn)(int *), int *p)
{
	fn(p);
	__asm__ volatile("" ::: "memory");
	return 1;
}
#else
int sr_call(void (*fn)(int *), int *p);

static atomic_int running;

__attribute__((noinline)) void crash_here(int *p)
{
	*p = 42;
}

__attribute__((noinline)) void crash2(int *p)
{
	crash_here(p);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) static void spin(void)
{
	atomic_store(&running, 1);
	for (;;)
		__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	(void)arg;
	spin();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	while (!atomic_load(&running))
		usleep(1000);
	int *null = argc > 100 ? &argc : NULL;
	if (argc > 1 && !strcmp(argv[1], "lib"))
		return sr_call(crash_here, null);
	crash2(null);
	return 0;
}
#endif
