/* backstep run -- CMD ARGS: run CMD under ptrace and, if a signal is about
 * to kill it, print every thread's stack first, then let the signal do its
 * work. backstep exits as the program did (its status, or 128 + signal).
 *
 * The child stops itself before exec; we seize it with PTRACE_O_TRACECLONE
 * (threads are followed) and PTRACE_O_EXITKILL (if backstep dies, so does the
 * program: nothing is left running untraced by surprise). Children the
 * program forks are not traced. A signal is fatal when its default action
 * terminates the process and the program neither catches nor ignores it
 * (/proc/PID/status SigCgt, SigIgn); a caught signal is passed on, and if
 * the handler re-raises it with the default action restored we see it again.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"

#include "../src/target/target.h"
#include "../src/unwind/unwind.h"

#define MAX_TIDS 65536

static int tids[MAX_TIDS];
static size_t ntids;

static void add_tid(int tid)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return;
	if (ntids < MAX_TIDS)
		tids[ntids++] = tid;
}

static void drop_tid(int tid)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] == tid) {
			tids[i] = tids[--ntids];
			return;
		}
}

static bool default_kills(int sig)
{
	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
	case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
		return false;
	}
	return sig > 0 && sig < SIGRTMIN;
}

static bool is_fatal(int pid, int sig)
{
	if (!default_kills(sig))
		return false;
	uint64_t bit = (uint64_t)1 << (sig - 1);
	return !(tgt_proc_status_mask(pid, "SigCgt") & bit) && !(tgt_proc_status_mask(pid, "SigIgn") & bit);
}

/* Stop every other thread, print all stacks, leave them stopped. */
static void dump_all(int pid, int culprit, int sig, const struct cli_stack_opts *o)
{
	for (size_t i = 0; i < ntids; i++) {
		if (tids[i] == culprit)
			continue;
		if (ptrace(PTRACE_INTERRUPT, tids[i], NULL, NULL) != 0)
			continue;
		for (;;) {
			int st;
			pid_t r = waitpid(tids[i], &st, __WALL);
			if (r < 0 && errno == EINTR)
				continue;
			/* Stopped (by the interrupt, or by a signal that got there
			 * first: the process is about to die, it need not be
			 * delivered), or gone. */
			break;
		}
	}
	fflush(stdout);
	fprintf(stderr, "backstep: %d: %s (signal %d) in thread %d; stacks:\n", pid,
		strsignal(sig), sig, culprit);
	/* The signal as the kernel is about to deliver it: what, and where. */
	siginfo_t si;
	struct bk_signal_info info = { .signo = sig, .tid = culprit };
	if (ptrace(PTRACE_GETSIGINFO, culprit, NULL, &si) == 0) {
		info.code = si.si_code;
		info.err = si.si_errno;
		info.has_addr = si.si_code > 0 && (sig == SIGSEGV || sig == SIGBUS ||
						   sig == SIGILL || sig == SIGFPE);
		info.addr = info.has_addr ? (uint64_t)(uintptr_t)si.si_addr : 0;
	}
	struct cli_stack_opts with = *o;
	with.signal = &info;
	o = &with;
	struct bk_target *t;
	int err = uw_target_adopt(pid, tids, ntids, &t);
	if (err) {
		cli_error("run", "cannot read the stopped program: %s", bk_strerror(err));
		return;
	}
	cli_print_problems(t);
	cli_print_threads(t, o);
	out_flush();
	bk_target_close(t);
}

int cmd_run(int argc, char **argv)
{
	struct cli_stack_opts o;
	int first = cli_stack_options(argc, argv, "backstep run [-r] [-n] [--no-cache] [--no-debuginfod] [--json] -- CMD [ARGS...]", true, &o);
	if (first <= 0)
		return first == 0 ? 0 : 2;
	optind = first;
	if (optind >= argc) {
		cli_error("run", "no command (usage: backstep run [-r] [-n] [--no-cache] [--no-debuginfod] [--json] -- CMD [ARGS...])");
		return 2;
	}
	char **cmd = argv + optind;

	int errpipe[2];
	if (pipe2(errpipe, O_CLOEXEC) != 0) {
		cli_error("run", "pipe: %s", strerror(errno));
		return 1;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		cli_error("run", "fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		close(errpipe[0]);
		raise(SIGSTOP); /* wait to be seized */
		execvp(cmd[0], cmd);
		int e = errno;
		(void)!write(errpipe[1], &e, sizeof(e));
		_exit(127);
	}
	close(errpipe[1]);
	int st;
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SEIZE, pid, NULL,
		   (void *)(uintptr_t)(PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL)) != 0) {
		cli_error(cmd[0], "cannot trace the child: %s", strerror(errno));
		kill(pid, SIGKILL);
		return 1;
	}
	kill(pid, SIGCONT);
	add_tid(pid);

	for (;;) {
		int tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			cli_error(cmd[0], "lost the program: %s", strerror(errno));
			return 1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			drop_tid(tid);
			if (tid != pid)
				continue;
			/* An exec that failed left its errno in the pipe (which a
			 * successful exec closes unwritten). */
			int e;
			if (read(errpipe[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
				cli_error(cmd[0], "cannot run: %s", strerror(e));
				return 127;
			}
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), event = st >> 16;
		if (event == PTRACE_EVENT_CLONE) {
			unsigned long child;
			if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) == 0)
				add_tid((int)child);
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		add_tid(tid); /* a new thread's first stop may come before its parent's event */
		if (event == PTRACE_EVENT_STOP) {
			/* A group-stop (SIGSTOP and friends) or a new thread's start. */
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
				ptrace(PTRACE_LISTEN, tid, NULL, NULL);
			else
				ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		if (event == 0 && is_fatal(pid, sig)) {
			dump_all(pid, tid, sig, &o);
			/* Let the signal kill it; the others die with it. */
			ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
			for (size_t i = 0; i < ntids; i++)
				if (tids[i] != tid)
					ptrace(PTRACE_CONT, tids[i], NULL, NULL);
			continue;
		}
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)(event ? 0 : sig));
	}
}
