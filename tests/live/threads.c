/* Eight threads, each parked in its own nested call chain and blocked in a
 * different way (condition variable, mutex, semaphore, pipe read,
 * nanosleep, poll, sigwait, raw futex); the main thread blocks in
 * pthread_join. Thread names are t0..t7. Prints "ready" once all eight are
 * about to block. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>

#include "live.h"

#define NTHREADS 8

static atomic_int parked;
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t cmutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static sem_t sem;
static int pipefd[2];
static int futex_word;

static void park(void)
{
	atomic_fetch_add(&parked, 1);
}

/* t0: a1 -> a2 -> a3 -> pthread_cond_wait */
NOINLINE static void a3(void)
{
	pthread_mutex_lock(&cmutex);
	park();
	for (;;)
		pthread_cond_wait(&never, &cmutex);
}
NOINLINE static void a2(void) { a3(); KEEP(); }
NOINLINE static void a1(void) { a2(); KEEP(); }

/* t1: b1 -> b2 -> pthread_mutex_lock (main holds it) */
NOINLINE static void b2(void)
{
	park();
	pthread_mutex_lock(&held);
	live_die("t1: got the mutex");
}
NOINLINE static void b1(void) { b2(); KEEP(); }

/* t2: c1 -> c2 -> c3 -> c4 -> sem_wait */
NOINLINE static void c4(void)
{
	park();
	for (;;)
		sem_wait(&sem);
}
NOINLINE static void c3(void) { c4(); KEEP(); }
NOINLINE static void c2(void) { c3(); KEEP(); }
NOINLINE static void c1(void) { c2(); KEEP(); }

/* t3: d1 -> read on a pipe nobody writes */
NOINLINE static void d1(void)
{
	char ch;
	park();
	for (;;)
		if (read(pipefd[0], &ch, 1) == 0)
			live_die("t3: EOF");
}

/* t4: e1 .. e5 -> nanosleep, e3 inlined */
NOINLINE static void e5(void)
{
	struct timespec ts = { 3600, 0 };
	park();
	for (;;)
		nanosleep(&ts, NULL);
}
NOINLINE static void e4(void) { e5(); KEEP(); }
/* Inlined into e2 at every optimisation level: an inlined frame of the
 * program's own (threads-split finds it in the .dwo). */
static inline __attribute__((always_inline)) void e3(void) { e4(); KEEP(); }
NOINLINE static void e2(void) { e3(); KEEP(); }
NOINLINE static void e1(void) { e2(); KEEP(); }

/* t5: f1 -> f2 -> poll with no descriptors, no timeout */
NOINLINE static void f2(void)
{
	park();
	for (;;)
		poll(NULL, 0, -1);
}
NOINLINE static void f1(void) { f2(); KEEP(); }

/* t6: g1 -> g2 -> g3 -> sigwait for a signal nobody sends */
NOINLINE static void g3(void)
{
	sigset_t set;
	int sig;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	park();
	for (;;)
		sigwait(&set, &sig);
}
NOINLINE static void g2(void) { g3(); KEEP(); }
NOINLINE static void g1(void) { g2(); KEEP(); }

/* t7: h1 .. h6 -> FUTEX_WAIT through syscall(2) */
NOINLINE static void h6(void)
{
	park();
	for (;;)
		syscall(SYS_futex, &futex_word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}
NOINLINE static void h5(void) { h6(); KEEP(); }
NOINLINE static void h4(void) { h5(); KEEP(); }
NOINLINE static void h3(void) { h4(); KEEP(); }
NOINLINE static void h2(void) { h3(); KEEP(); }
NOINLINE static void h1(void) { h2(); KEEP(); }

static void (*const entries[NTHREADS])(void) = { a1, b1, c1, d1, e1, f1, g1, h1 };

static void *thread_main(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[16];
	snprintf(name, sizeof(name), "t%d", id);
	pthread_setname_np(pthread_self(), name);
	entries[id]();
	return NULL;
}

NOINLINE static void main_wait(pthread_t t)
{
	live_ready();
	pthread_join(t, NULL);
	live_die("main: joined");
}

int main(void)
{
	pthread_t t[NTHREADS];
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &set, NULL); /* for t6's sigwait */
	sem_init(&sem, 0, 0);
	if (pipe(pipefd) != 0)
		live_die("pipe");
	pthread_mutex_lock(&held);
	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, (void *)(intptr_t)i) != 0)
			live_die("pthread_create");
	while (atomic_load(&parked) < NTHREADS)
		usleep(1000);
	main_wait(t[0]);
	return 0;
}
