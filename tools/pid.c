/* backstep pid PID: every thread's stack of a running process. The process
 * is stopped with ptrace while it is read, and always detached and left
 * running: also on error and on Ctrl-C (the walk checks a flag set by the
 * signal handler; detaching happens on the normal path out). */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "out.h"

static void on_interrupt(int sig)
{
	(void)sig;
	cli_interrupted = 1;
}

int cmd_pid(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "regs", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct cli_stack_opts o = { 0 };
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "rjh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'r': o.regs = true; break;
		case 'j': o.json = true; break;
		case 'h':
			printf("usage: backstep pid [-r|--regs] [--json] PID\n");
			return 0;
		default:
			return 2;
		}
	}
	if (optind + 1 != argc) {
		cli_error("pid", "name one process (usage: backstep pid [-r] [--json] PID)");
		return 2;
	}
	const char *arg = argv[optind];
	char *end;
	long pid = strtol(arg, &end, 10);
	if (*end || pid <= 0 || pid > 0x7fffffff) {
		cli_error(arg, "not a process id");
		return 2;
	}

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	struct bk_target *t;
	int err = bk_target_attach((int)pid, &t);
	if (err) {
		if (err == BK_E_NOT_FOUND)
			cli_error(arg, "no such process");
		else if (err == BK_E_IO)
			cli_error(arg, "cannot attach (permission denied, or the process exited)");
		else
			cli_error(arg, "%s", bk_strerror(err));
		return 1;
	}
	cli_print_problems(t);
	int status = cli_print_threads(t, &o);
	bk_target_close(t);
	if (cli_interrupted) {
		cli_error(arg, "interrupted; detached");
		return 130;
	}
	return status;
}
