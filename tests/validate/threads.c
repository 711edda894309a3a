/* Threads: each is followed from its first instruction (clone), with its
 * own shadow stack. */
#include <pthread.h>

__attribute__((noinline)) static long work(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	return s;
}

static void *start(void *arg)
{
	return (void *)work((long)arg);
}

int main(void)
{
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t[i], 0, start, (void *)(long)(20 + i)))
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], 0);
	return work(10) ? 0 : 1;
}
