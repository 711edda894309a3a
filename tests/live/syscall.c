/* Blocked in system calls from nested calls: the main thread in read(2) on
 * a pipe nobody writes (m1 -> m2 -> m3 -> read), a second thread in
 * nanosleep (s1 -> s2 -> s3 -> nanosleep), a third in clock_nanosleep
 * through raw syscall(2) (r1 -> r2 -> syscall). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>

#include "live.h"

static atomic_int parked;
static int pipefd[2];

NOINLINE static void s3(void)
{
	struct timespec ts = { 3600, 0 };
	atomic_fetch_add(&parked, 1);
	for (;;)
		nanosleep(&ts, NULL);
}
NOINLINE static void s2(void) { s3(); KEEP(); }
NOINLINE static void s1(void) { s2(); KEEP(); }

NOINLINE static void r2(void)
{
	struct timespec ts = { 3600, 0 };
	atomic_fetch_add(&parked, 1);
	for (;;)
		syscall(SYS_clock_nanosleep, CLOCK_MONOTONIC, 0, &ts, NULL);
}
NOINLINE static void r1(void) { r2(); KEEP(); }

static void *sleeper(void *arg)
{
	(void)arg;
	s1();
	return NULL;
}

static void *raw_sleeper(void *arg)
{
	(void)arg;
	r1();
	return NULL;
}

NOINLINE static void m3(void)
{
	char buf[16];
	live_ready();
	for (;;)
		if (read(pipefd[0], buf, sizeof(buf)) <= 0)
			live_die("read returned");
}
NOINLINE static void m2(void) { m3(); KEEP(); }
NOINLINE static void m1(void) { m2(); KEEP(); }

int main(void)
{
	pthread_t t1, t2;
	if (pipe(pipefd) != 0)
		live_die("pipe");
	if (pthread_create(&t1, NULL, sleeper, NULL) || pthread_create(&t2, NULL, raw_sleeper, NULL))
		live_die("pthread_create");
	while (atomic_load(&parked) < 2)
		usleep(1000);
	m1();
	return 0;
}
