/* A program that spends its time in the vDSO: clock_gettime under a few
 * calls, for BK_FIX_WORK microseconds of CPU (default 200000). Recorded by
 * report_test.py, whose samples in the vDSO must be walked out of it to
 * _start and named as perf names them. Built without sanitizers. */
#include <stdlib.h>
#include <time.h>

static volatile long sink;

__attribute__((noinline)) static void read_clock(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sink += ts.tv_nsec;
}

__attribute__((noinline)) static void middle(int n)
{
	for (int i = 0; i < n; i++)
		read_clock();
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	const char *w = getenv("BK_FIX_WORK");
	long us = w ? atol(w) : 200000;
	struct timespec t0, t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		middle(1000);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
	return 0;
}
