/* What tests/profile/record_test.py samples with `backstep record`: a
 * call graph known in advance, running for SECONDS of wall time (argv[1];
 * 0: until killed) in two threads and in short-lived child processes:
 *
 *   main -> spin_main -> rec -> rec ... -> leaf       the main thread
 *   thread_main -> spin_thread -> leaf_thread         a second thread
 *   spin_main -> child_main -> child_work -> leaf     a child forked every
 *                                                     100 ms, living 30 ms
 *
 * Every function is kept out of line and out of interprocedural
 * optimisation, and every call is followed by an empty asm statement, so
 * no call is a tail call: the stacks are exactly these chains (plus libc's
 * callers of main and thread_main, and clock_gettime). */
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__)
#define KEEP __attribute__((noinline, noipa))
#else
#define KEEP __attribute__((noinline))
#endif
#define BARRIER() __asm__ volatile("" ::: "memory")

static volatile unsigned long sink;

static double seconds(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

KEEP static void leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
	BARRIER();
}

KEEP static void child_main(void);

KEEP static void rec(int depth, unsigned long n)
{
	if (depth > 0)
		rec(depth - 1, n);
	else
		leaf(n);
	BARRIER();
}

KEEP static void spin_main(double until)
{
	double next_child = 0;
	while (until == 0 || seconds() < until) {
		rec(6, 20000);
		BARRIER();
		if (seconds() >= next_child) {
			next_child = seconds() + 0.1;
			pid_t pid = fork();
			if (pid == 0)
				child_main();
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
	}
}

KEEP static void leaf_thread(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink ^= i + (sink >> 3);
	BARRIER();
}

KEEP static void spin_thread(double until)
{
	while (until == 0 || seconds() < until) {
		leaf_thread(20000);
		BARRIER();
	}
}

static double until;

KEEP static void *thread_main(void *arg)
{
	(void)arg;
	spin_thread(until);
	BARRIER();
	return NULL;
}

KEEP static void child_work(double end)
{
	while (seconds() < end) {
		leaf(20000);
		BARRIER();
	}
}

KEEP static void child_main(void)
{
	child_work(seconds() + 0.03);
	BARRIER();
	_exit(0);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1;
	until = secs > 0 ? seconds() + secs : 0;
	pthread_t t;
	if (pthread_create(&t, NULL, thread_main, NULL) != 0)
		return 1;
	spin_main(until);
	BARRIER();
	pthread_join(t, NULL);
	while (wait(NULL) > 0)
		;
	return 0;
}
