/* Shared pieces of the backstep command-line tool. */
#ifndef BK_CLI_H
#define BK_CLI_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Print "backstep: WHAT: message" on stderr as one line. */
void cli_error(const char *what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Report why PATH could not be opened as an ELF file (err from the loader). */
void cli_file_error(const char *path, int err);
/* Parse an address ("0x1234", "1234" decimal, "0x" optional with --hex). */
bool cli_parse_u64(const char *s, uint64_t *out);
/* An address in hexadecimal, "0x" optional (nm-style "1149" is 0x1149). */
bool cli_parse_hex(const char *s, uint64_t *out);

int cmd_dump(int argc, char **argv);
int cmd_pid(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_core(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_record(int argc, char **argv); /* record.c */

/* Stacks (stack.c). */
#include <signal.h>
#include "backstep.h"
struct cli_stack_opts {
	bool regs; /* -r: registers under each frame */
	bool json;
	bool no_symbols; /* -n: PCs and modules only, no names or lines */
	bool no_cache;   /* --no-cache: no symbol memo on disk */
	int pid;         /* the live process walked (pid), or 0 */
	/* The signal that is ending the process (run's), or NULL: a core's
	 * own (bk_target_signal) is used then. */
	const struct bk_signal_info *signal;
	bool follow;     /* run -f: children too */
	const char *sysroot; /* core --sysroot DIR: the core's files under DIR first */
	const char *perf_map; /* --perf-map FILE: JIT code's names */
	const char *jitdump;  /* --jitdump FILE: JIT code's names, lines and CFI */
	int map_pid;     /* else /tmp/perf-MAP_PID.map when it is there (pid, run) */
};
/* Exit status (README, "Exit status"): 0 success; 1 the subject had
 * problems (a walk ended early, a check found errors); 2 bad usage or
 * unusable input; 128 + N after signal N (SIGINT, SIGTERM, SIGHUP). */
enum { CLI_OK = 0, CLI_PROBLEMS = 1, CLI_USAGE = 2 };
/* The signal (SIGINT, SIGTERM, SIGHUP) that asked backstep to stop, or 0;
 * set only after cli_catch_signals. */
extern volatile sig_atomic_t cli_interrupted;
/* From now on those signals only set cli_interrupted (a subcommand with
 * something to let go first: a traced process, a child). */
void cli_catch_signals(void);
/* From now on they end backstep at once with 128 + the signal (the
 * default, set by main); at once too if one came meanwhile. */
void cli_exit_on_signals(void);
/* 128 + cli_interrupted: the status to return once let go. */
int cli_signal_status(void);
/* Whether process PID is dead (gone, or a zombie). */
bool cli_process_gone(int pid);
/* Every thread of a target and its stack; 0, or 1 if any walk failed, or
 * 2 if o->pid is set and that process died during the walks. */
int cli_print_threads(struct bk_target *t, const struct cli_stack_opts *o);
/* The target's problem lines as "backstep: warning: ..." on stderr. */
void cli_print_problems(const struct bk_target *t);
void cli_json_str(const char *s);
/* Parse -r/--regs, -n/--no-symbols, --no-cache, --json, -h/--help for pid, core and run: the index of the
 * first operand; 0 after printing USAGE for --help; -2 on a bad option.
 * STOP_AT_OPERAND: the operands are a command line of their own (run). */
int cli_stack_options(int argc, char **argv, const char *usage, bool stop_at_operand,
		      struct cli_stack_opts *o);

#endif
