/* backstep validate [options] -- PROGRAM ARGS: run PROGRAM single-stepped,
 * unwind it at every instruction of the checked code and compare each walk
 * with a shadow stack kept from the calls and returns it executed (the
 * oracle; src/validate does the work). Prints the counts, then every
 * mismatch grouped by the function whose unwind information was wrong,
 * with the instruction, the CFI row in force, and what was expected and
 * got. Where no CFI covers the code the unwinder falls back to frame
 * pointers and can only guess: its wrong guesses are listed apart and fail
 * the run only with --strict (`backstep check` lists such gaps statically).
 * Unchecked code runs at full speed between a call into it and the return
 * (src/validate/val_run.c, "Stepping over"); --step-all single-steps it
 * too, as a reference.
 * Exit status: 0 no mismatch, 1 mismatches, 2 the run could not be made
 * (or checking never started), 128 + N when signal N (SIGINT, SIGTERM,
 * SIGHUP) stopped it: the program is let go first, the report printed.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"

#ifdef BK_HAVE_VALIDATE
#include "../src/validate/val.h"

#define MAX_ONLY 64

/* Where backstep's own lines go while the program runs (its stderr may
 * be elsewhere then: --program-output). */
static int msg_fd = STDERR_FILENO;

static const char usage_text[] =
	"usage: backstep validate [--only MODULE|FUNCTION[,...]] [--from FUNCTION]\n"
	"                         [--method cfi|fp|fast] [--max-frames N] [--step-all] [--strict]\n"
	"                         [--driver inproc|ptrace]\n"
	"                         [--json] [-o FILE] [--program-output FILE] [-q]\n"
	"                         [--remote HOST:PORT | --qemu [--cpu CPU]] [--sysroot DIR]\n"
	"                         [--timeout SECONDS]\n"
	"                         -- PROGRAM [ARGS...]\n"
	"  -o, --output FILE        the report to FILE instead of stdout\n"
	"  --program-output FILE    the program's stdout and stderr to FILE (/dev/null:\n"
	"                           nowhere); by default they are backstep's, except that\n"
	"                           with --json and the report on stdout the program's\n"
	"                           stdout goes to stderr: stdout holds the report alone\n";

/* The program's output during the run (see usage_text): fds 1 and 2 made
 * what the program inherits, backstep's own kept in SAVED; put back by
 * restore_fds. False (one line said why) when FILE cannot be written. */
static bool redirect_fds(const char *file, bool stdout_to_stderr, int saved[2])
{
	saved[0] = saved[1] = -1;
	if (!file && !stdout_to_stderr)
		return true;
	fflush(NULL);
	out_flush();
	saved[0] = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	saved[1] = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved[0] < 0 || saved[1] < 0) {
		cli_error("validate", "dup: %s", strerror(errno));
		return false;
	}
	if (file) {
		int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0) {
			cli_error(file, "cannot write it: %s", strerror(errno));
			return false;
		}
		dup2(fd, STDOUT_FILENO);
		dup2(fd, STDERR_FILENO);
		close(fd);
		msg_fd = saved[1];
	} else {
		dup2(STDERR_FILENO, STDOUT_FILENO);
	}
	return true;
}

static void restore_fds(int saved[2])
{
	for (int i = 0; i < 2; i++)
		if (saved[i] >= 0) {
			dup2(saved[i], i + 1);
			close(saved[i]);
			saved[i] = -1;
		}
	msg_fd = STDERR_FILENO;
}

/* With --method fp every frame is a guess: no separate "without CFI" list. */
static bool fp_method;
/* The program's architecture: the names of its registers. */
static enum bk_arch prog_arch;

/* A mismatch the fallback made where no CFI covers the culprit. */
static bool is_nocfi(const struct val_mismatch *m)
{
	return m->nocfi && !fp_method;
}

static bool tty_progress;

static void show_progress(void *ctx, const struct val_stats *st)
{
	(void)ctx;
	double s = st->seconds > 0 ? st->seconds : 1;
	dprintf(msg_fd, "%sbackstep: validate: %.0f s, %llu instructions stepped (%.0f/s), "
		"%llu checked, %llu mismatches%s",
		tty_progress ? "\r" : "", st->seconds, (unsigned long long)st->insns_stepped,
		(double)st->insns_stepped / s, (unsigned long long)st->insns_checked,
		(unsigned long long)st->bad_insns, tty_progress ? "" : "\n");
}

static const char *kind_name(enum val_kind k)
{
	switch (k) {
	case VAL_VALUES: return "values";
	case VAL_WALK_SHORT: return "walk-ended-early";
	case VAL_WALK_LONG: return "walk-too-long";
	case VAL_WALK_ERROR: return "walk-ended-with-error";
	case VAL_FAST: return "fast-walk-differs";
	}
	return "?";
}

/* Order of the report: image, module, function, culprit address. */
static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_mm(const void *pa, const void *pb)
{
	const struct val_mismatch *a = *(const struct val_mismatch *const *)pa;
	const struct val_mismatch *b = *(const struct val_mismatch *const *)pb;
	int c;
	if (is_nocfi(a) != is_nocfi(b))
		return is_nocfi(a) ? 1 : -1;
	if (a->image != b->image)
		return a->image < b->image ? -1 : 1;
	if ((c = cmp_str(a->module, b->module)) || (c = cmp_str(a->function, b->function)))
		return c;
	return a->culprit_pc < b->culprit_pc ? -1 : a->culprit_pc > b->culprit_pc;
}

static void out_where(const char *fn, uint64_t off, uint64_t pc)
{
	if (fn) {
		out_s(fn);
		out_s("+0x");
		out_x64(off, 1);
		out_s(" (");
		out_addr(pc);
		out_c(')');
	} else {
		out_addr(pc);
	}
}

static void out_value(const struct val_diff *d, bool expected)
{
	if (d->regno == VAL_HOW) {
		out_s(bk_how_name((enum bk_frame_how)(expected ? d->expected : d->got)));
		return;
	}
	if (!expected && !d->got_valid) {
		out_s("not recovered");
		return;
	}
	out_addr(expected ? d->expected : d->got);
}

static void print_text_mm(const struct val_mismatch *m)
{
	out_s("  ");
	out_where(m->function, m->offset, m->culprit_pc);
	out_s(": ");
	out_s(m->culprit_insn ? m->culprit_insn : "?");
	out_s("\n    row: ");
	out_s(m->row ? m->row : "?");
	out_s("\n    at ");
	out_u64(m->count);
	out_s(" checked instruction(s), ");
	out_u64(m->pcs);
	out_s(" distinct; first at ");
	out_where(m->insn_function, m->insn_offset, m->insn_pc);
	out_s(" `");
	out_s(m->insn_text ? m->insn_text : "?");
	out_s("` (thread ");
	out_u64((uint64_t)m->tid);
	if (m->insn_module && m->module && strcmp(m->insn_module, m->module)) {
		out_s(", in ");
		out_s(m->insn_module);
	}
	out_s(")\n    frame ");
	out_u64(m->frame);
	switch (m->kind) {
	case VAL_VALUES:
		out_s(" [");
		out_s(bk_how_name(m->how));
		out_s(m->lazy ? "] (wrong only when read here, not when read at every frame):" : "]:");
		for (unsigned i = 0; i < m->ndiffs; i++) {
			const struct val_diff *d = &m->diffs[i];
			out_s(i ? ", " : " ");
			out_s(d->regno == VAL_REG_PC ? "pc" : d->regno == VAL_REG_SP ? "sp (cfa)"
							  : val_reg_name(prog_arch, d->regno));
			out_s(" expected ");
			out_value(d, true);
			out_s(" got ");
			out_value(d, false);
		}
		break;
	case VAL_WALK_SHORT:
		out_s(": the walk ended (");
		out_s(m->step_result ? bk_strerror(m->step_result) : "outermost frame");
		out_s(") where the caller at ");
		out_addr(m->diffs[0].expected);
		out_s(" was expected");
		break;
	case VAL_WALK_LONG:
		out_s(": the walk went on past the outermost frame, to ");
		out_addr(m->diffs[0].got);
		out_s(" [");
		out_s(bk_how_name(m->how));
		out_c(']');
		break;
	case VAL_WALK_ERROR:
		out_s(": the walk ended with an error at the outermost frame: ");
		out_s(bk_strerror(m->step_result));
		break;
	case VAL_FAST:
		out_s(": the PC-only walk (bk_backtrace's) differs from the cursor: pc expected ");
		out_value(&m->diffs[0], true);
		out_s(" got ");
		out_value(&m->diffs[0], false);
		break;
	}
	out_c('\n');
}

static void print_text(const struct val_result *res, const struct val_mismatch **order,
		       const char *method)
{
	const struct val_stats *st = &res->stats;
	double s = st->seconds > 0 ? st->seconds : 1e-9;
	out_fmt("method %s; %.2f s\n", method, st->seconds);
	out_fmt("  instructions stepped  %llu (%.0f/s)\n", (unsigned long long)st->insns_stepped,
		(double)st->insns_stepped / s);
	out_fmt("  instructions checked  %llu (%.0f/s), %llu distinct\n",
		(unsigned long long)st->insns_checked, (double)st->insns_checked / s,
		(unsigned long long)st->distinct_pcs);
	out_fmt("  frames checked        %llu (%llu made without CFI)\n",
		(unsigned long long)st->frames_checked, (unsigned long long)st->frames_fallback);
	out_fmt("  registers checked     %llu\n", (unsigned long long)st->regs_checked);
	out_fmt("  walk ends checked     %llu\n", (unsigned long long)st->walk_ends);
	if (st->fast_walks)
		out_fmt("  fast walks compared   %llu (%llu frames equal to the cursor's), "
			"%llu handed over\n",
			(unsigned long long)st->fast_walks, (unsigned long long)st->fast_frames,
			(unsigned long long)st->fast_handovers);
	if (st->free_runs || st->breakpoints)
		out_fmt("  stepped over          %llu run(s) at full speed, %llu re-entr%s, "
			"%llu entry breakpoint(s)\n",
			(unsigned long long)st->free_runs, (unsigned long long)st->reentries,
			st->reentries == 1 ? "y" : "ies", (unsigned long long)st->breakpoints);
	out_fmt("  threads %llu, signal handlers %llu, execs %llu, module refreshes %llu, "
		"unexpected returns %llu\n",
		(unsigned long long)st->threads, (unsigned long long)st->signals,
		(unsigned long long)st->execs, (unsigned long long)st->refreshes,
		(unsigned long long)st->anomalies);
	size_t nbad = 0;
	while (nbad < res->nmm && !is_nocfi(order[nbad]))
		nbad++;
	out_fmt("  mismatches            %llu instruction(s) at %zu location(s)\n",
		(unsigned long long)st->bad_insns, nbad);
	if (!fp_method)
		out_fmt("  without CFI, wrong    %llu instruction(s) at %zu location(s): no FDE covers\n"
			"                        the culprit; the frame-pointer fallback guessed wrong\n",
			(unsigned long long)st->nocfi_insns, res->nmm - nbad);
	const char *mod = NULL, *fn = NULL;
	uint64_t image = 0;
	for (size_t i = 0; i < res->nmm; i++) {
		const struct val_mismatch *m = order[i];
		if (i == nbad)
			out_s("\n---- code without CFI: the fallback's guesses that were wrong ----\n");
		if (i == 0 || i == nbad || m->image != image || cmp_str(m->module, mod) ||
		    cmp_str(m->function, fn)) {
			uint64_t n = 0;
			for (size_t j = i; j < res->nmm && is_nocfi(order[j]) == is_nocfi(m) &&
			     order[j]->image == m->image &&
			     !cmp_str(order[j]->module, m->module) &&
			     !cmp_str(order[j]->function, m->function); j++)
				n += order[j]->count;
			out_s("\n");
			out_s(m->function ? m->function : "??");
			out_s(" (");
			out_s(m->module ? m->module : "no module");
			if (m->image) {
				out_s(", after exec ");
				out_u64(m->image);
			}
			out_s("): ");
			out_u64(n);
			out_s(" mismatching instruction(s)\n");
			mod = m->module;
			fn = m->function;
			image = m->image;
		}
		print_text_mm(m);
	}
}

static void json_hex_field(const char *name, uint64_t v)
{
	out_s(", \"");
	out_s(name);
	out_s("\": \"");
	out_addr(v);
	out_c('"');
}

static void json_str_field(const char *name, const char *v)
{
	out_s(", \"");
	out_s(name);
	out_s("\": ");
	if (v)
		cli_json_str(v);
	else
		out_s("null");
}

static void print_json(const struct val_result *res, const struct val_mismatch **order,
		       char *const *argv, const char *method)
{
	const struct val_stats *st = &res->stats;
	double s = st->seconds > 0 ? st->seconds : 1e-9;
	out_s("{\"program\": ");
	cli_json_str(argv[0]);
	out_s(", \"method\": ");
	cli_json_str(method);
	if (res->exited && WIFEXITED(res->status))
		out_fmt(", \"exit_status\": %d", WEXITSTATUS(res->status));
	else if (res->exited && WIFSIGNALED(res->status))
		out_fmt(", \"signal\": %d", WTERMSIG(res->status));
	out_fmt(", \"started\": %s, \"interrupted\": %s", res->started ? "true" : "false",
		res->interrupted ? "true" : "false");
	json_str_field("error", res->error);
	json_str_field("driver", res->driver);
	json_str_field("driver_note", res->note);
	out_fmt(",\n \"stats\": {\"instructions_stepped\": %llu, \"instructions_checked\": %llu, "
		"\"distinct_pcs\": %llu, \"frames_checked\": %llu, \"registers_checked\": %llu, "
		"\"walk_ends_checked\": %llu, \"frames_without_cfi\": %llu, "
		"\"mismatching_instructions\": %llu, \"nocfi_mismatching_instructions\": %llu, "
		"\"mismatch_locations\": %zu, \"threads\": %llu, \"signal_handlers\": %llu, "
		"\"execs\": %llu, \"module_refreshes\": %llu, \"unexpected_returns\": %llu, "
		"\"free_runs\": %llu, \"reentries\": %llu, \"entry_breakpoints\": %llu, "
		"\"fast_walks\": %llu, \"fast_frames\": %llu, \"fast_handovers\": %llu, "
		"\"seconds\": %.3f, \"steps_per_second\": %.0f, \"checked_per_second\": %.0f},\n",
		(unsigned long long)st->insns_stepped, (unsigned long long)st->insns_checked,
		(unsigned long long)st->distinct_pcs, (unsigned long long)st->frames_checked,
		(unsigned long long)st->regs_checked, (unsigned long long)st->walk_ends,
		(unsigned long long)st->frames_fallback, (unsigned long long)st->bad_insns,
		(unsigned long long)st->nocfi_insns, res->nmm, (unsigned long long)st->threads,
		(unsigned long long)st->signals, (unsigned long long)st->execs,
		(unsigned long long)st->refreshes, (unsigned long long)st->anomalies,
		(unsigned long long)st->free_runs, (unsigned long long)st->reentries,
		(unsigned long long)st->breakpoints, (unsigned long long)st->fast_walks,
		(unsigned long long)st->fast_frames, (unsigned long long)st->fast_handovers,
		st->seconds,
		(double)st->insns_stepped / s, (double)st->insns_checked / s);
	out_s(" \"mismatches\": [");
	for (size_t i = 0; i < res->nmm; i++) {
		const struct val_mismatch *m = order[i];
		out_s(i ? ",\n  {" : "\n  {");
		out_fmt("\"image\": %llu", (unsigned long long)m->image);
		json_str_field("module", m->module);
		json_str_field("function", m->function);
		json_hex_field("offset", m->offset);
		json_hex_field("pc", m->culprit_pc);
		json_str_field("instruction", m->culprit_insn);
		json_str_field("row", m->row);
		out_fmt(", \"nocfi\": %s, \"count\": %llu, \"distinct_pcs\": %llu",
			is_nocfi(m) ? "true" : "false", (unsigned long long)m->count,
			(unsigned long long)m->pcs);
		out_s(",\n   \"first\": {\"tid\": ");
		out_u64((uint64_t)m->tid);
		json_hex_field("pc", m->insn_pc);
		json_str_field("module", m->insn_module);
		json_str_field("function", m->insn_function);
		json_hex_field("offset", m->insn_offset);
		json_str_field("instruction", m->insn_text);
		out_fmt(", \"frame\": %u, \"lazy\": %s", m->frame, m->lazy ? "true" : "false");
		json_str_field("kind", kind_name(m->kind));
		json_str_field("how", m->kind == VAL_WALK_SHORT ? NULL : bk_how_name(m->how));
		json_str_field("step_result", m->kind == VAL_VALUES ? NULL
					      : m->step_result < 0 ? bk_strerror(m->step_result)
					      : m->step_result ? "stepped" : "outermost");
		out_s(", \"diffs\": [");
		for (unsigned k = 0; k < m->ndiffs; k++) {
			const struct val_diff *d = &m->diffs[k];
			out_s(k ? ", {\"reg\": " : "{\"reg\": ");
			cli_json_str(d->regno == VAL_REG_PC ? "pc" : d->regno == VAL_REG_SP ? "sp"
							   : val_reg_name(prog_arch, d->regno));
			if (d->regno == VAL_HOW) {
				json_str_field("expected", bk_how_name((enum bk_frame_how)d->expected));
				json_str_field("got", bk_how_name((enum bk_frame_how)d->got));
			} else {
				json_hex_field("expected", d->expected);
				if (d->got_valid)
					json_hex_field("got", d->got);
				else
					out_s(", \"got\": null");
			}
			out_c('}');
		}
		out_s("]}}");
	}
	out_s(res->nmm ? "\n ]}\n" : "]}\n");
}

/* Split a comma-separated --only list into NAMES. */
static bool add_only(char *arg, const char **names, size_t *n)
{
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		if (*n >= MAX_ONLY)
			return false;
		names[(*n)++] = tok;
	}
	return true;
}

int cmd_validate(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "only", required_argument, NULL, 'O' },
		{ "output", required_argument, NULL, 'o' },
		{ "program-output", required_argument, NULL, 'P' },
		{ "from", required_argument, NULL, 'f' },
		{ "method", required_argument, NULL, 'm' },
		{ "max-frames", required_argument, NULL, 'N' },
		{ "json", no_argument, NULL, 'j' },
		{ "strict", no_argument, NULL, 's' },
		{ "step-all", no_argument, NULL, 'S' },
		{ "driver", required_argument, NULL, 'D' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "remote", required_argument, NULL, 'R' },
		{ "qemu", no_argument, NULL, 'Q' },
		{ "sysroot", required_argument, NULL, 'L' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 'T' },
		{ 0 },
	};
	struct val_driver_opts dopts = { .size = sizeof(dopts) };
	const char *only[MAX_ONLY];
	struct val_opts o = { .size = sizeof(o), .only = only };
	bool json = false, quiet = false, strict = false;
	const char *method = "cfi", *output = NULL, *program_output = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "+o:f:m:jsqh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o': output = optarg; break;
		case 'P': program_output = optarg; break;
		case 'O':
			if (!add_only(optarg, only, &o.nonly)) {
				cli_error("--only", "at most %d names", MAX_ONLY);
				return 2;
			}
			break;
		case 'f': o.from = optarg; break;
		case 'm':
			if (strcmp(optarg, "cfi") && strcmp(optarg, "fp") && strcmp(optarg, "fast")) {
				cli_error("--method", "'%s' is not cfi, fp or fast", optarg);
				return 2;
			}
			method = optarg;
			o.fp_only = fp_method = !strcmp(optarg, "fp");
			o.fast_walk = !strcmp(optarg, "fast");
			break;
		case 'N': {
			uint64_t v;
			if (!cli_parse_u64(optarg, &v) || v > BK_MAX_FRAMES) {
				cli_error("--max-frames", "'%s' is not a frame count", optarg);
				return 2;
			}
			o.max_frames = (unsigned)v;
			break;
		}
		case 'j': json = true; break;
		case 's': strict = true; break;
		case 'S': o.step_all = true; break;
		case 'D':
			if (!strcmp(optarg, "ptrace")) {
				o.inproc = VAL_INPROC_NEVER;
			} else if (!strcmp(optarg, "inproc")) {
				o.inproc = VAL_INPROC_ONLY;
			} else {
				cli_error("--driver", "'%s' is not inproc or ptrace", optarg);
				return 2;
			}
			break;
		case 'q': quiet = true; break;
		case 'R': dopts.remote = optarg; break;
		case 'Q': dopts.qemu = true; break;
		case 'L': dopts.sysroot = optarg; break;
		case 'C': dopts.qemu_cpu = optarg; break;
		case 'T': {
			uint64_t v;
			if (!cli_parse_u64(optarg, &v) || v == 0 || v > 86400) {
				cli_error("--timeout", "'%s' is not a number of seconds", optarg);
				return 2;
			}
			dopts.timeout_ms = (unsigned)(v * 1000);
			break;
		}
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		default:
			fputs(usage_text, stderr);
			return 2;
		}
	}
	if (dopts.remote && dopts.qemu) {
		cli_error("validate", "--remote and --qemu: choose one");
		return 2;
	}
	if ((dopts.sysroot || dopts.qemu_cpu || dopts.timeout_ms) && !dopts.remote && !dopts.qemu) {
		cli_error("validate", "--sysroot, --cpu and --timeout go with --remote or --qemu");
		return 2;
	}
	if (dopts.qemu_cpu && !dopts.qemu) {
		cli_error("--cpu", "is qemu's: it goes with --qemu");
		return 2;
	}
	if ((dopts.remote || dopts.qemu) && o.inproc == VAL_INPROC_ONLY) {
		cli_error("--driver", "inproc runs the program here: not with --remote or --qemu");
		return 2;
	}
	if (dopts.remote || dopts.qemu) {
		o.driver = &val_gdbremote_driver;
		o.driver_opts = &dopts;
	}
	static char *no_prog[] = { NULL, NULL };
	if (optind >= argc && dopts.remote) {
		/* The stub names the program it runs (qXfer:exec-file). */
	} else if (optind >= argc) {
		cli_error("validate", "no program to run");
		fputs(usage_text, stderr);
		return 2;
	}
	char **prog = optind < argc ? argv + optind : no_prog;

	/* The report's file, opened now: a name that cannot be written is
	 * said before the run, not after it. */
	int report_fd = -1;
	if (output) {
		report_fd = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (report_fd < 0) {
			cli_error(output, "cannot write it: %s", strerror(errno));
			return CLI_USAGE;
		}
	}
	int saved[2];
	if (!redirect_fds(program_output, json && !output, saved)) {
		restore_fds(saved);
		if (report_fd >= 0)
			close(report_fd);
		return CLI_USAGE;
	}

	cli_catch_signals(); /* no SA_RESTART: waitpid returns */
	o.stop = &cli_interrupted;
	if (!quiet) {
		o.progress = show_progress;
		tty_progress = isatty(msg_fd);
	}

	struct val_result res;
	int err = val_run(prog, &o, &res);
	restore_fds(saved);
	if (report_fd >= 0) {
		dup2(report_fd, STDOUT_FILENO);
		close(report_fd);
	}
	char *shown[] = { prog[0] ? prog[0] : (char *)"(the stub's program)", NULL };
	if (tty_progress && res.stats.seconds >= 1.0)
		fputc('\n', stderr);
	if (res.note && !quiet)
		fprintf(stderr, "backstep: validate: note: %s\n", res.note);
	if (err) {
		cli_error("validate", "%s", res.error ? res.error : bk_strerror(err));
		val_result_free(&res);
		return cli_interrupted ? cli_signal_status() : CLI_USAGE;
	}
	prog_arch = res.arch;
	const struct val_mismatch **order = calloc(res.nmm ? res.nmm : 1, sizeof(*order));
	if (!order) {
		cli_error("validate", "out of memory");
		val_result_free(&res);
		return 2;
	}
	for (size_t i = 0; i < res.nmm; i++)
		order[i] = &res.mm[i];
	qsort(order, res.nmm, sizeof(*order), cmp_mm);

	if (json) {
		print_json(&res, order, shown, method);
	} else {
		out_s("backstep validate: ");
		out_s(shown[0]);
		if (res.exited && WIFEXITED(res.status))
			out_fmt(": exited with status %d", WEXITSTATUS(res.status));
		else if (res.exited && WIFSIGNALED(res.status))
			out_fmt(": killed by signal %d (%s)", WTERMSIG(res.status),
				strsignal(WTERMSIG(res.status)));
		if (res.interrupted)
			out_s(" (interrupted)");
		out_c('\n');
		print_text(&res, order, method);
	}
	out_flush();
	int status = res.stats.bad_insns || (strict && res.stats.nocfi_insns) ? 1 : 0;
	if (res.error) {
		cli_error("validate", "%s", res.error);
		if (!status)
			status = 2;
	} else if (res.interrupted) {
		/* incomplete: not a verdict */
	} else if (!res.started) {
		cli_error("validate", "checking never started (%s was not reached)",
			  o.from ? o.from : "the entry point");
		if (!status)
			status = 2;
	} else if (o.nonly && res.stats.insns_checked == 0 && !res.interrupted) {
		cli_error("--only", "nothing named %s%s ran: no instruction was checked", only[0],
			  o.nonly > 1 ? " (or the other names)" : "");
		if (!status)
			status = 2;
	}
	if (cli_interrupted)
		status = cli_signal_status();
	free(order);
	val_result_free(&res);
	return status;
}

#else

int cmd_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_error("validate", "not built: Capstone was not found at configure time");
	return 2;
}

#endif
