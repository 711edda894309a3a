/* backstep: the command-line tool. One subcommand per file; this file holds
 * the dispatch and the few helpers they share: one-line errors, number
 * parsing, and the signal rules every subcommand follows (SIGINT, SIGTERM,
 * SIGHUP end it with 128 + the signal, after letting go of what it holds).
 * Exit statuses come from one table (cli.h, README "Exit status"). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "backstep.h"
#include "cli.h"
#include "frames.h"

#include "../src/sym/sym.h"

void cli_error(const char *what, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "backstep: %s: ", what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool cli_parse_hex(const char *s, uint64_t *out)
{
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!*s || strlen(s) > 16)
		return false;
	uint64_t v = 0;
	for (; *s; s++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0' : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
			: *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
		if (d < 0)
			return false;
		v = v << 4 | (uint64_t)d;
	}
	*out = v;
	return true;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

void cli_file_error(const char *path, int err)
{
	struct stat st;
	switch (err) {
	case BK_E_IO:
		if (stat(path, &st) != 0)
			cli_error(path, "%s", strerror(errno));
		else if (S_ISDIR(st.st_mode))
			cli_error(path, "is a directory");
		else if (!S_ISREG(st.st_mode))
			cli_error(path, "not a regular file");
		else {
			int fd = open(path, O_RDONLY);
			if (fd < 0) {
				cli_error(path, "%s", strerror(errno));
			} else {
				close(fd);
				cli_error(path, "cannot read file");
			}
		}
		return;
	case BK_E_CORRUPT:
		cli_error(path, "truncated or corrupt ELF file");
		return;
	case BK_E_UNSUPPORTED:
		cli_error(path, "unsupported ELF file (only little-endian ELF32/ELF64)");
		return;
	}
	cli_error(path, "%s", bk_strerror(err));
}

/* ---- Signals ---------------------------------------------------------------
 *
 * SIGINT, SIGTERM and SIGHUP end backstep with status 128 + the signal (130,
 * 143, 129) in every subcommand. By default at once (_exit: nothing is held
 * that the kernel does not release); a subcommand holding something that
 * must be let go first (a ptrace'd process, a child to stop) calls
 * cli_catch_signals, then notices cli_interrupted, lets go, and returns
 * cli_signal_status(). */

volatile sig_atomic_t cli_interrupted;

static void exit_on_signal(int sig)
{
	_exit(128 + sig);
}

static void flag_signal(int sig)
{
	cli_interrupted = sig;
}

static void set_handlers(void (*fn)(int))
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocking waitpid or read returns EINTR. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

void cli_catch_signals(void)
{
	set_handlers(flag_signal);
}

void cli_exit_on_signals(void)
{
	set_handlers(exit_on_signal);
	if (cli_interrupted)
		_exit(128 + cli_interrupted);
}

int cli_signal_status(void)
{
	return 128 + cli_interrupted;
}

int cmd_check(int argc, char **argv); /* check.c */
int cmd_report(int argc, char **argv); /* report.c */

static void usage(FILE *f)
{
	fputs("usage: backstep COMMAND [OPTIONS] ...\n"
	      "\n"
	      "commands:\n"
	      "  dump [--rows] [--json] [--pc ADDR] [--section eh|debug] [--debug-file] FILE\n"
	      "        print the call-frame information of an ELF file: CIEs, FDEs,\n"
	      "        their instructions and the interpreted rows\n"
	      "  pid [-r] [-n] [--no-cache] [--no-debuginfod] [--json] PID\n"
	      "        every thread's stack of a running process (ptrace; the process\n"
	      "        is detached and left running)\n"
	      "  core [-r] [-n] [--no-cache] [--no-debuginfod] [--json] CORE [EXE]\n"
	      "        every thread's stack in a core file; EXE replaces the main\n"
	      "        executable the core names\n"
	      "  run [-f|--follow] [-r] [-n] [--no-cache] [--no-debuginfod] [--json] -- CMD [ARGS...]\n"
	      "        run CMD; if a signal is about to kill it, print every thread's\n"
	      "        stack first\n"
	      "  report [--format " FR_SAMPLE_FORMATS "] [-o FILE] [--pid PID]\n"
	      "         [--tid TID] [--comm NAME] [--no-inline] [-n] [--kernel|--no-kernel] [--no-debuginfod]\n"
	      "         FILE|-\n"
	      "        the samples of a perf.data file (perf record --call-graph dwarf)\n"
	      "        as named stacks: perf script's text, folded stacks, JSON Lines,\n"
	      "        a speedscope profile or an SVG flame graph\n"
	      "  record [-F HZ] [-d SECONDS] [--format ...] [-o FILE] [--pid PID] [--tid TID]\n"
	      "         [--comm NAME] [--no-inline] [-n] [--kernel|--no-kernel] [--no-debuginfod]\n"
	      "         (-p PID | -- CMD [ARGS...])\n"
	      "        sample a running process or a command (perf_event_open, cpu-clock)\n"
	      "        and unwind each sample as it arrives: report's formats, no\n"
	      "        perf.data and no stack bytes on disk\n"
	      "  validate [--only MODULE|FUNCTION] [--from FUNCTION] [--method cfi|fp|fast]\n"
	      "           [--max-frames N] [--step-all] [--strict] [--json] [-o FILE]\n"
	      "           [--program-output FILE] [-q] -- PROGRAM [ARGS...]\n"
	      "        run PROGRAM single-stepped and check the unwind at every\n"
	      "        instruction of its code against a shadow stack\n"
	      "  check [--json] [-v] [--stack] [--baseline FILE] [--suppress KIND[:SYMBOL]]\n"
	      "        FILE|DIR...\n"
	      "        static checks of unwind tables: gaps in FDE coverage, overlaps,\n"
	      "        .eh_frame_hdr, decode and CFA-program errors, entry rows;\n"
	      "        directories are searched for ELF files. --stack: the stack\n"
	      "        state the code implies against the CFI row at every\n"
	      "        instruction of every function (x86-64); --baseline and --suppress\n"
	      "        waive findings (a CI gate fails on new ones only)\n"
	      "  help  this text (also --help); --version: backstep's version\n"
	      "\n"
	      "exit status: 0 success; 1 the subject had problems (a walk ended early,\n"
	      "a check found errors); 2 bad usage or unusable input; 128+N after\n"
	      "signal N (143: SIGTERM); run: the program's own. `man backstep` says more.\n",
	      f);
}

int main(int argc, char **argv)
{
	sym_dwarf_untracked(); /* this process's only libdwarf user frees what it takes */
	cli_exit_on_signals();
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "dump"))
		return cmd_dump(argc - 1, argv + 1);
	if (!strcmp(cmd, "pid"))
		return cmd_pid(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "core"))
		return cmd_core(argc - 1, argv + 1);
	if (!strcmp(cmd, "validate"))
		return cmd_validate(argc - 1, argv + 1);
	if (!strcmp(cmd, "check"))
		return cmd_check(argc - 1, argv + 1);
	if (!strcmp(cmd, "report"))
		return cmd_report(argc - 1, argv + 1);
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("backstep %s\n", BK_PROJECT_VERSION);
		return 0;
	}
	cli_error(cmd, "unknown command (try 'backstep help')");
	return 2;
}
