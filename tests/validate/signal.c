/* Signal handlers: a synchronous signal (raise, delivered inside libc) and
 * asynchronous ones (a timer, delivered at arbitrary instructions). The
 * walk from a handler crosses the kernel's signal frame. */
#include <signal.h>
#include <sys/time.h>

static volatile int hits;

__attribute__((noinline)) static void note(int sig)
{
	hits += sig != 0;
}

static void handler(int sig)
{
	note(sig);
}

__attribute__((noinline)) static int work(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++) {
		s += i;
		if (i == n / 2)
			raise(SIGUSR1);
	}
	return s;
}

__attribute__((noinline)) static long spin(long x)
{
	return x * 3 + (x >> 2);
}

int main(void)
{
	signal(SIGUSR1, handler);
	signal(SIGALRM, handler);
	volatile int s = work(10);
	/* The timer fires every 2 ms of wall time: under single-stepping a
	 * few hundred instructions apart. */
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };
	setitimer(ITIMER_REAL, &it, 0);
	volatile long v = 1;
	for (long i = 0; i < 200000 && hits < 6; i++)
		v = spin(v + i);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, 0);
	(void)s;
	return hits >= 6 ? 0 : 1;
}
