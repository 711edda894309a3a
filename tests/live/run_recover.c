/* For `backstep run`: SIGSEGV is caught and the handler recovers with
 * siglongjmp, ten times over; the program then exits 0 having printed
 * nothing. backstep must pass the caught signal on and print nothing. */
#include <setjmp.h>
#include <signal.h>
#include <string.h>

#include "live.h"

static sigjmp_buf env;
static int *volatile nullp;

static void on_segv(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

NOINLINE static void fault(void) { *nullp = 1; KEEP(); }

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_segv;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGSEGV, &sa, NULL);
	volatile int recovered = 0;
	for (int i = 0; i < 10; i++) {
		if (sigsetjmp(env, 1) == 0)
			fault();
		else
			recovered++;
	}
	return recovered == 10 ? 0 : 1;
}
