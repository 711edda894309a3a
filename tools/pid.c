/* backstep pid PID: every thread's stack of a running process. The process
 * is stopped with ptrace while its threads are walked, then released
 * (cli_print_threads) before symbols are read, and always detached and left
 * running: also on error and on SIGINT, SIGTERM or SIGHUP (the walk checks
 * the flag cli_catch_signals' handler sets; detaching happens on the normal
 * path out, then backstep exits 128 + the signal). */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"

#define PID_USAGE "backstep pid [-r|--regs] [-n|--no-symbols] [--no-cache] [--no-debuginfod] " \
		  "[--json] [--perf-map FILE] [--jitdump FILE] PID"

int cmd_pid(int argc, char **argv)
{
	struct cli_stack_opts o;
	int first = cli_stack_options(argc, argv, PID_USAGE, false, &o);
	if (first <= 0)
		return first == 0 ? 0 : 2;
	optind = first;
	if (optind + 1 != argc) {
		cli_error("pid", "name one process (usage: " PID_USAGE ")");
		return 2;
	}
	const char *arg = argv[optind];
	char *end;
	long pid = strtol(arg, &end, 10);
	if (*end || pid <= 0 || pid > 0x7fffffff) {
		cli_error(arg, "not a process id");
		return 2;
	}
	/* Cases ptrace's refusal would hide behind "cannot attach". */
	if (pid == getpid()) {
		cli_error(arg, "that is backstep itself: a process cannot stop its own threads to "
			       "walk them");
		return 2;
	}
	if (kill((pid_t)pid, 0) == 0 && cli_process_gone((int)pid)) {
		cli_error(arg, "a zombie: it has exited (its parent has not reaped it), no threads "
			       "are left to walk");
		return CLI_USAGE;
	}

	cli_catch_signals();

	struct bk_target *t;
	int err = bk_target_attach((int)pid, &t);
	if (err) {
		if (err == BK_E_NOT_FOUND)
			cli_error(arg, "no such process");
		else if (err == BK_E_IO)
			cli_error(arg, "cannot attach (permission denied, or the process exited)");
		else
			cli_error(arg, "%s", bk_strerror(err));
		return cli_interrupted ? cli_signal_status() : CLI_USAGE;
	}
	/* For the tests: the process dies right after the attach, as if killed
	 * while it was being walked (there is no other way to time that); the
	 * walks start once its memory is gone. */
	if (getenv("BACKSTEP_TEST_KILL_AFTER_ATTACH")) {
		kill((pid_t)pid, SIGKILL);
		for (int i = 0; i < 2000 && !cli_process_gone((int)pid); i++)
			usleep(1000);
	}
	cli_print_problems(t);
	o.pid = (int)pid;
	o.map_pid = (int)pid;
	int status = cli_print_threads(t, &o);
	bk_target_close(t);
	if (cli_interrupted) {
		cli_error(arg, "interrupted; detached");
		return cli_signal_status();
	}
	if (status == 2) {
		cli_error(arg, "the process exited while it was being walked");
		return CLI_PROBLEMS;
	}
	return status;
}
