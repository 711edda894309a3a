/* The README's first example: a program that crashes in its second
 * thread. `backstep run -- ./build/examples/crash` runs it and, as the
 * fatal signal arrives, prints what happened (the signal, its cause, the
 * faulting address, the thread that received it) and every thread's
 * stack: the worker in the function that wrote through a null pointer,
 * the main thread waiting for it in pthread_join. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pthread_setname_np */
#endif
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

struct job {
	const char *text;
	int *length; /* where the worker stores its result: forgotten (NULL) */
};

__attribute__((noinline)) static int measure(const char *text, int *length)
{
	*length = (int)strlen(text); /* SIGSEGV: length is NULL */
	return *length;
}

__attribute__((noinline)) static void *worker(void *arg)
{
	struct job *job = arg;
	pthread_setname_np(pthread_self(), "worker");
	usleep(100 * 1000); /* main is in pthread_join by then */
	int n = measure(job->text, job->length);
	printf("%d\n", n);
	return NULL;
}

int main(void)
{
	struct job job = { "a line of text", NULL };
	pthread_t t;
	if (pthread_create(&t, NULL, worker, &job) != 0)
		return 1;
	pthread_join(t, NULL);
	return 0;
}
