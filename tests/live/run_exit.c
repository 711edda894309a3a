/* For `backstep run`: exits with the status given as its argument (after a
 * thread has come and gone), to check the status passes through. */
#include <pthread.h>

#include "live.h"

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	if (pthread_create(&t, NULL, nothing, NULL) == 0)
		pthread_join(t, NULL);
	return argc > 1 ? atoi(argv[1]) : 0;
}
