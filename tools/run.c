/* backstep run -- CMD ARGS: run CMD under ptrace and, if a signal is about
 * to kill it, print every thread's stack first, then let the signal do its
 * work. backstep exits as the program did (its status, or 128 + signal).
 *
 * The child stops itself before exec; we seize it with PTRACE_O_TRACECLONE
 * (threads are followed) and PTRACE_O_EXITKILL (if backstep dies, so does the
 * program: nothing is left running untraced by surprise). Children the
 * program forks are traced with -f (PTRACE_O_TRACEFORK and TRACEVFORK, as
 * strace -f): a child about to die of a signal has its stacks printed,
 * under its own process id, and the run goes on until the program itself
 * ends. Each traced thread is kept with its process (Tgid), and a dump
 * covers the threads of the dying process only. A signal is fatal when its default action
 * terminates the process and the program neither catches nor ignores it
 * (/proc/PID/status SigCgt, SigIgn); a caught signal is passed on, and if
 * the handler re-raises it with the default action restored we see it again.
 *
 * SIGTERM, SIGHUP or SIGINT sent to backstep (kill, not the terminal: the
 * terminal signals the program's process group itself) is passed on to the
 * program, which dies of it as it would have without backstep — its stacks
 * printed first, being a fatal signal — or handles it; a second one kills
 * it (SIGKILL). backstep then exits 128 + the signal it was sent, the
 * program ended and reaped, nothing left traced.
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

#define RUN_USAGE "backstep run [-f|--follow] [-r|--regs] [-n|--no-symbols] [--no-cache] " \
		  "[--no-debuginfod] [--json] [--perf-map FILE] [--jitdump FILE] -- CMD [ARGS...]"

static int tids[MAX_TIDS], tgids[MAX_TIDS]; /* a traced thread, its process */
static size_t ntids;

/* The process of thread TID (/proc/TID/status Tgid), or TID itself. */
static int tgid_of(int tid)
{
	int tgid = (int)tgt_proc_status_field(tid, "Tgid", 10);
	return tgid > 0 ? tgid : tid;
}

/* TID of process TGID (0: look it up). */
static void add_tid(int tid, int tgid)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return;
	if (ntids < MAX_TIDS) {
		tgids[ntids] = tgid ? tgid : tgid_of(tid);
		tids[ntids++] = tid;
	}
}

static int tgid_known(int tid)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return tgids[i];
	return tgid_of(tid);
}

static void drop_tid(int tid)
{
	for (size_t i = 0; i < ntids; i++)
		if (tids[i] == tid) {
			tids[i] = tids[--ntids];
			tgids[i] = tgids[ntids];
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

/* Stop every other thread of process PID, print all its stacks, leave them
 * stopped. */
static void dump_all(int pid, int culprit, int sig, const struct cli_stack_opts *o)
{
	static int own[MAX_TIDS];
	size_t nown = 0;
	for (size_t i = 0; i < ntids; i++)
		if (tgids[i] == pid)
			own[nown++] = tids[i];
	for (size_t i = 0; i < ntids; i++) {
		if (tids[i] == culprit || tgids[i] != pid)
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
		info.has_code = 1;
		info.err = si.si_errno;
		info.has_addr = tgt_signal_has_addr(sig, si.si_code);
		info.addr = info.has_addr ? (uint64_t)(uintptr_t)si.si_addr : 0;
	}
	struct cli_stack_opts with = *o;
	with.signal = &info;
	with.map_pid = pid;
	o = &with;
	struct bk_target *t;
	int err = uw_target_adopt(pid, own, nown, &t);
	if (err) {
		cli_error("run", "cannot read the stopped program: %s", bk_strerror(err));
		return;
	}
	cli_print_problems(t);
	cli_print_threads(t, o);
	out_flush();
	bk_target_close(t);
}

/* Not cli_interrupted: that would cut short the walks of the program dying
 * of the signal passed on. */
static volatile sig_atomic_t program_pid, signals_seen, run_signal;

static void pass_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	run_signal = sig;
	if (program_pid <= 0)
		return;
	if (signals_seen++)
		kill(program_pid, SIGKILL);
	else if (si->si_code <= 0) /* SI_USER, SI_QUEUE, SI_TKILL: not the terminal's */
		kill(program_pid, sig);
}

/* The run's status: the program's, or 128 + the signal backstep was sent. */
static int run_status(int status)
{
	return run_signal ? 128 + run_signal : status;
}

int cmd_run(int argc, char **argv)
{
	struct cli_stack_opts o;
	int first = cli_stack_options(argc, argv, RUN_USAGE, true, &o);
	if (first <= 0)
		return first == 0 ? 0 : 2;
	optind = first;
	if (optind >= argc) {
		cli_error("run", "no command (usage: " RUN_USAGE ")");
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
	program_pid = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = pass_signal;
	sa.sa_flags = SA_SIGINFO; /* no SA_RESTART: waitpid returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	int st;
	unsigned long ptopts = PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL |
			       (o.follow ? PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK : 0);
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SEIZE, pid, NULL, (void *)(uintptr_t)ptopts) != 0) {
		cli_error(cmd[0], "cannot trace the child: %s", strerror(errno));
		kill(pid, SIGKILL);
		return 1;
	}
	kill(pid, SIGCONT);
	add_tid(pid, pid);

	/* The program's own status once it ended; with -f the run waits for
	 * its traced children too (as strace -f), which PTRACE_O_EXITKILL would
	 * otherwise kill with backstep. */
	int status = -1;
	for (;;) {
		int tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD && status >= 0)
				return run_status(status);
			cli_error(cmd[0], "lost the program: %s", strerror(errno));
			return 1;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			drop_tid(tid);
			if (tid != pid) {
				if (status >= 0 && ntids == 0)
					return run_status(status);
				continue;
			}
			/* An exec that failed left its errno in the pipe (which a
			 * successful exec closes unwritten). */
			int e;
			if (read(errpipe[0], &e, sizeof(e)) == (ssize_t)sizeof(e)) {
				cli_error(cmd[0], "cannot run: %s", strerror(e));
				return 127;
			}
			status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			if (!o.follow || ntids == 0)
				return run_status(status);
			continue;
		}
		if (!WIFSTOPPED(st))
			continue;
		int sig = WSTOPSIG(st), event = st >> 16;
		if (event == PTRACE_EVENT_CLONE || event == PTRACE_EVENT_FORK ||
		    event == PTRACE_EVENT_VFORK) {
			/* A thread of the same process, or (-f) a new process. */
			unsigned long child;
			if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) == 0)
				add_tid((int)child, event == PTRACE_EVENT_CLONE ? 0 : (int)child);
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		add_tid(tid, 0); /* a new thread's first stop may come before its parent's event */
		if (event == PTRACE_EVENT_STOP) {
			/* A group-stop (SIGSTOP and friends) or a new thread's start. */
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
				ptrace(PTRACE_LISTEN, tid, NULL, NULL);
			else
				ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		int proc = tgid_known(tid);
		if (event == 0 && is_fatal(proc, sig)) {
			dump_all(proc, tid, sig, &o);
			/* Let the signal kill it; its other threads die with it. */
			ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
			for (size_t i = 0; i < ntids; i++)
				if (tids[i] != tid && tgids[i] == proc)
					ptrace(PTRACE_CONT, tids[i], NULL, NULL);
			continue;
		}
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)(event ? 0 : sig));
	}
}
