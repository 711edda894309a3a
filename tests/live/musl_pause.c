/* A static musl program parked in pause() inside a signal handler, for
 * tests/live/musl_test.py. musl's libc.a has no unwind tables and keeps no
 * frame pointers: pause calls __syscall_cp, a jmp to __syscall_cp_c just
 * below it, which makes the system call. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

static void in_handler(int sig)
{
	(void)sig;
	puts("ready");
	fflush(stdout);
	pause();
}

int main(void)
{
	signal(SIGUSR1, in_handler);
	raise(SIGUSR1);
	return 0;
}
