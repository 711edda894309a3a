/* What tests/profile/perf_test.py records with perf: a few tenths of a
 * second of work in two threads of two processes (so the recording has
 * FORK, COMM, MMAP2 and EXIT records besides samples), each spinning a
 * few calls deep. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void leaf(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

__attribute__((noinline)) static void middle(unsigned long n)
{
	leaf(n);
	sink++;
}

static void *spin(void *arg)
{
	unsigned long rounds = (unsigned long)arg;
	for (unsigned long i = 0; i < rounds; i++)
		middle(100000);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned long rounds = argc > 1 ? strtoul(argv[1], NULL, 0) : 400;
	pid_t child = fork();
	if (child == 0) {
		spin((void *)(rounds / 4));
		_exit(0);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, spin, (void *)rounds) != 0)
		return 1;
	spin((void *)rounds);
	pthread_join(t, NULL);
	if (child > 0)
		waitpid(child, NULL, 0);
	printf("%lu\n", sink);
	return 0;
}
