/* The raw single-step rate of each mechanism backstep validate's drivers
 * use, with nothing checked: how fast a program can be stepped at all.
 *   ptrace   PTRACE_SINGLESTEP + waitpid of a child (the ptrace driver)
 *   tf       the trap flag set in the context a SIGTRAP handler returns
 *            to: one debug exception and one signal per instruction (the
 *            in-process driver's mechanism where it cannot plant int3s)
 *   int3     an int3 trap and its SIGTRAP per step (the in-process
 *            driver's breakpoints: one planted where the instruction goes)
 * Usage: bench_validate_rawstep [STEPS]; prints one line per mechanism,
 * "NAME: N steps in S s: R steps/s". x86-64 Linux.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

static volatile long left;

static void on_step(int sig, siginfo_t *si, void *uv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = uv;
	if (--left <= 0)
		uc->uc_mcontext.gregs[REG_EFL] &= ~0x100;
}

static void on_int3(int sig, siginfo_t *si, void *uv)
{
	(void)sig;
	(void)si;
	(void)uv;
	left--;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(void)
{
	while (left > 0)
		__asm__ volatile("" ::: "memory");
}

static void report(const char *name, long n, double s)
{
	printf("%s: %ld steps in %.3f s: %.0f steps/s\n", name, n, s, (double)n / s);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	if (n <= 0)
		n = 100000;
	struct sigaction sa = { .sa_sigaction = on_step, .sa_flags = SA_SIGINFO };
	sigaction(SIGTRAP, &sa, NULL);
	left = n;
	double t0 = now();
	__asm__ volatile("pushf; orq $0x100, (%%rsp); popf" ::: "memory", "cc");
	spin();
	report("tf", n, now() - t0);

	sa.sa_sigaction = on_int3;
	sigaction(SIGTRAP, &sa, NULL);
	left = n;
	t0 = now();
	while (left > 0)
		__asm__ volatile("int3" ::: "memory");
	report("int3", n, now() - t0);

	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		raise(SIGSTOP);
		left = 1;
		spin();
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	long m = n / 4; /* it is the slow one */
	t0 = now();
	for (long i = 0; i < m; i++) {
		if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0 || waitpid(pid, &st, 0) != pid)
			break;
	}
	report("ptrace", m, now() - t0);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return 0;
}
