/* Stacks of a stopped target: shared by `backstep pid`, `core` and `run`.
 * Every thread is walked first (frames kept), the target released, then
 * symbols looked up and the stacks handed to a printer of the output
 * module (frames.h: text, gdb-like, or --json). */
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#include "../src/loader/loader.h"
#include "frames.h"
#include "out.h"

/* ---- Walking -------------------------------------------------------------- */

/* What a walk learned of one frame: enough to print it after the process
 * has been let go. */
struct frame_rec {
	uint64_t pc, lookup;
	enum bk_frame_how how;
};

/* One thread's walk. */
struct walk {
	struct bk_thread_info info;
	int terr;               /* why the thread's registers are unknown, or 0 */
	int rc;                 /* the walk's final code (or why it never began) */
	bool began;             /* the cursor was initialised */
	struct frame_rec *f;
	struct bk_regs *regs;   /* per frame, with -r */
	size_t n, cap;
};

static bool walk_push(struct walk *w, const struct bk_cursor *c, bool with_regs)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 32;
		struct frame_rec *f = realloc(w->f, cap * sizeof(*f));
		if (!f)
			return false;
		w->f = f;
		if (with_regs) {
			struct bk_regs *r = realloc(w->regs, cap * sizeof(*r));
			if (!r)
				return false;
			w->regs = r;
		}
		w->cap = cap;
	}
	struct frame_rec *f = &w->f[w->n];
	f->pc = bk_cursor_pc(c);
	f->lookup = bk_cursor_lookup_pc(c);
	f->how = bk_cursor_how(c);
	if (with_regs) {
		memset(&w->regs[w->n], 0, sizeof(w->regs[w->n]));
		bk_cursor_regs(c, &w->regs[w->n]);
	}
	w->n++;
	return true;
}

/* Walk from REGS, keeping every frame in W. */
static void walk_stack(struct bk_space *space, const struct bk_regs *regs, bool with_regs,
		       struct walk *w)
{
	struct bk_cursor c;
	w->rc = bk_cursor_init(&c, space, regs);
	if (w->rc)
		return;
	w->began = true;
	do {
		if (!walk_push(w, &c, with_regs)) {
			w->rc = BK_E_NOMEM;
			return;
		}
		if (cli_interrupted) {
			w->rc = BK_E_INVAL;
			return;
		}
	} while ((w->rc = bk_cursor_step(&c)) == 1);
}

/* ---- Printing ------------------------------------------------------------- */

#define MAX_INLINE 16

/* W as the output module's stack: its frames symbolized (names and lines
 * looked up now, after the walk: the process may be running again) into
 * F and SYMS (W->n each, MAX_INLINE symbols per frame). */
static void as_stack(struct bk_space *space, const struct walk *w, const struct cli_stack_opts *o,
		     struct fr_frame *f, struct bk_symbol *syms, struct fr_stack *s)
{
	memset(s, 0, sizeof(*s));
	s->tid = w->info.tid;
	s->name = w->info.name;
	s->no_regs = w->terr;
	s->began = w->began;
	s->error = w->rc < 0 && !w->terr ? w->rc : 0;
	s->f = f;
	for (size_t k = 0; !w->terr && w->began && k < w->n; k++) {
		uint64_t lookup = w->f[k].lookup;
		struct bk_module_info mi;
		struct fr_frame *fk = &f[s->n++];
		fk->pc = w->f[k].pc;
		fk->how = w->f[k].how;
		fk->module = NULL;
		if (bk_space_module_at(space, lookup, &mi) == 0) {
			fk->module = mi.path;
			fk->module_off = fk->pc - mi.start;
		}
		fk->syms = &syms[k * MAX_INLINE];
		fk->nsym = o->no_symbols ? 0
					 : bk_space_symbolize(space, lookup, &syms[k * MAX_INLINE],
							      MAX_INLINE);
		if (fk->nsym < 0)
			fk->nsym = 0;
		fk->regs = o->regs ? &w->regs[k] : NULL;
	}
}

void cli_json_str(const char *s)
{
	fr_json_str(s);
}

/* Whether process PID is dead (gone, or a zombie: killed while stopped). */
bool cli_process_gone(int pid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	const char *p = strrchr(buf, ')'); /* the state follows the name */
	return p && (p[2] == 'Z' || p[2] == 'X');
}

/* mkdir -p DIR (mode 0700 for what is made); false if it is not a directory
 * in the end. */
static bool make_dirs(char *dir)
{
	for (char *p = dir + 1;; p++) {
		if (*p != '/' && *p)
			continue;
		char c = *p;
		*p = 0;
		mkdir(dir, 0700);
		*p = c;
		if (!c)
			break;
	}
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

/* The symbol memo's directory (bk_space_set_symbol_cache): $BACKSTEP_CACHE_DIR
 * (empty: none), else $XDG_CACHE_HOME/backstep/symbols, else
 * ~/.cache/backstep/symbols; created if missing. */
static void use_symbol_cache(struct bk_space *space)
{
	char dir[4096];
	const char *env = getenv("BACKSTEP_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	if (env)
		snprintf(dir, sizeof(dir), "%s", env);
	else if (xdg && xdg[0] == '/')
		snprintf(dir, sizeof(dir), "%s/backstep/symbols", xdg);
	else if (home && home[0] == '/')
		snprintf(dir, sizeof(dir), "%s/.cache/backstep/symbols", home);
	else
		return;
	if (dir[0] && make_dirs(dir))
		bk_space_set_symbol_cache(space, dir);
}

/* JIT code's names (bk_space_set_perf_map): --perf-map FILE, else the
 * process's /tmp/perf-PID.map when there is one that it (or root) owns, as
 * perf takes it. */
static void use_perf_map(struct bk_space *space, const struct cli_stack_opts *o)
{
	char path[64];
	const char *file = o->perf_map;
	if (!file && o->map_pid > 0) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", o->map_pid);
		char proc_dir[64];
		snprintf(proc_dir, sizeof(proc_dir), "/proc/%d", o->map_pid);
		struct stat map, proc;
		if (stat(path, &map) != 0 || !S_ISREG(map.st_mode))
			return;
		if (map.st_uid != 0 && (stat(proc_dir, &proc) != 0 || proc.st_uid != map.st_uid)) {
			fprintf(stderr, "backstep: warning: %s: not owned by the process's user; "
					"not used\n", path);
			return;
		}
		file = path;
	}
	if (!file)
		return;
	int err = bk_space_set_perf_map(space, file);
	if (err)
		fprintf(stderr, "backstep: warning: %s: %s; JIT code is not named\n", file,
			err == BK_E_IO ? "cannot read it" : bk_strerror(err));
}

/* Code the target's JIT registered for debuggers (bk_space_add_gdb_jit): a
 * module per object, unwound by its CFI and named by its symbols and
 * DWARF. What could not be added is said once. */
static void use_gdb_jit(struct bk_space *space)
{
	struct bk_gdb_jit_stats st = { .size = sizeof(st) };
	if (bk_space_add_gdb_jit(space, &st) != 0)
		return;
	if (st.failed)
		fprintf(stderr, "backstep: warning: GDB JIT interface: %u of %u object%s not used "
				"(%s)\n", st.failed, st.entries, st.entries == 1 ? "" : "s",
			bk_strerror(st.first_error));
	if (st.truncated)
		fprintf(stderr, "backstep: warning: GDB JIT interface: the list of objects breaks "
				"after %u entries (being rewritten, or not a list); the rest is not read\n",
			st.entries);
}

/* --jitdump FILE (bk_space_add_jitdump): a JIT's jitdump the target did
 * not map where it is now (a core's, moved), read before the walks; the
 * jitdumps a process maps are read by the target itself. */
static int use_jitdump(struct bk_space *space, const struct cli_stack_opts *o)
{
	if (!o->jitdump)
		return 0;
	struct bk_jitdump_stats st = { .size = sizeof(st) };
	int err = bk_space_add_jitdump(space, o->jitdump, UINT64_MAX, &st);
	if (err) {
		fprintf(stderr, "backstep: %s: %s\n", o->jitdump,
			err == BK_E_IO ? "cannot read it" :
			err == BK_E_UNSUPPORTED ? "not a jitdump of this architecture" :
			bk_strerror(err));
		return err;
	}
	if (st.unwinding_failed)
		fprintf(stderr, "backstep: warning: %s: %u of %u .eh_frame sections not used (%s)\n",
			o->jitdump, st.unwinding_failed, st.unwinding_info, bk_strerror(st.first_error));
	return 0;
}

/* "backstep: warning: thread TID (NAME): ..." when W's walk ended early:
 * which thread, after how many frames, and why. */
static void walk_ended_line(const struct walk *w)
{
	if (w->rc >= 0)
		return;
	fprintf(stderr, "backstep: warning: thread %d (%s): ", w->info.tid,
		w->info.name ? w->info.name : "?");
	if (w->terr)
		fprintf(stderr, "registers unavailable: %s\n", bk_strerror(w->terr));
	else if (!w->began || !w->n)
		fprintf(stderr, "no walk: %s\n", bk_strerror(w->rc));
	else
		fprintf(stderr, "walk ended early after %zu frame%s, at 0x%" PRIx64 ": %s\n", w->n,
			w->n == 1 ? "" : "s", w->f[w->n - 1].pc, bk_strerror(w->rc));
}

/* Every thread of T: a header, then its stack. Every thread is walked
 * first, then T is released (a live process runs on), then the stacks are
 * symbolized and printed: the process is stopped only for the walks.
 * Returns 0, or 1 when a thread's registers were unknown or a walk ended on
 * an error, 2 when O->pid died meanwhile (killed: its memory went away
 * under the walks). Stops walking early when cli_interrupted is set. */
int cli_print_threads(struct bk_target *t, const struct cli_stack_opts *o)
{
	int status = 0;
	size_t n = bk_target_nthreads(t), walked = 0;
	struct bk_space *space = bk_target_space(t);
	struct walk *ws = calloc(n ? n : 1, sizeof(*ws));
	if (!ws) {
		bk_target_release(t);
		fprintf(stderr, "backstep: out of memory\n");
		return 1;
	}
	use_gdb_jit(space);
	if (use_jitdump(space, o)) {
		bk_target_release(t);
		free(ws);
		return 2;
	}
	for (; walked < n && !cli_interrupted; walked++) {
		struct walk *w = &ws[walked];
		struct bk_regs regs;
		int terr = bk_target_thread(t, walked, &w->info, &regs);
		w->terr = terr;
		if (terr)
			w->rc = terr;
		else
			walk_stack(space, &regs, o->regs, w);
	}
	bool failed = false;
	for (size_t i = 0; i < walked; i++)
		failed |= ws[i].rc < 0;
	bool gone = failed && o->pid > 0 && cli_process_gone(o->pid);
	bk_target_release(t);
	if (o->pid > 0) {
		/* The process runs on: nothing left to let go. Interrupted
		 * walks print nothing (the caller says why). */
		if (cli_interrupted)
			goto out;
		cli_exit_on_signals();
	}
	if (!o->no_symbols && !o->no_cache)
		use_symbol_cache(space);
	if (!o->no_symbols)
		use_perf_map(space, o);

	/* The thread that received the signal ending the process, first. */
	struct bk_signal_info sig;
	const struct bk_signal_info *sg = o->signal;
	if (!sg && bk_target_signal(t, &sig) == 0)
		sg = &sig;
	size_t first = walked;
	for (size_t i = 0; sg && sg->tid && i < walked; i++)
		if (ws[i].info.tid == sg->tid)
			first = i;

	const struct fr_printer *pr = o->json ? &fr_json : &fr_text;
	fr_set_arch(bk_space_arch(space));
	pr->begin();
	for (size_t k = 0; k < walked; k++) {
		size_t i = first == walked ? k : k == 0 ? first : k <= first ? k - 1 : k;
		const struct walk *w = &ws[i];
		struct fr_frame *f = calloc(w->n ? w->n : 1, sizeof(*f));
		struct bk_symbol *syms = calloc((w->n ? w->n : 1) * MAX_INLINE, sizeof(*syms));
		if (!f || !syms) {
			free(f);
			free(syms);
			out_flush();
			fprintf(stderr, "backstep: out of memory\n");
			status = 1;
			break;
		}
		struct fr_stack st;
		as_stack(space, w, o, f, syms, &st);
		st.signal = i == first ? sg : NULL;
		pr->stack(&st, k);
		if (w->rc < 0)
			status = 1;
		free(f);
		free(syms);
	}
	pr->end();
	out_flush();
	/* Each walk that ended early, one line on stderr (the output says
	 * it too, under the thread). Not when the process died meanwhile:
	 * one line says that instead. */
	for (size_t k = 0; k < walked && !gone && !cli_interrupted; k++)
		walk_ended_line(&ws[k]);
	if (ldr_debuginfod_problem())
		fprintf(stderr, "backstep: warning: %s\n", ldr_debuginfod_problem());
out:
	for (size_t i = 0; i < n; i++) {
		free(ws[i].f);
		free(ws[i].regs);
	}
	free(ws);
	return gone ? 2 : status;
}

void cli_print_problems(const struct bk_target *t)
{
	for (size_t i = 0; i < bk_target_nproblems(t); i++)
		fprintf(stderr, "backstep: warning: %s\n", bk_target_problem(t, i));
}

int cli_stack_options(int argc, char **argv, const char *usage, bool stop_at_operand,
		      struct cli_stack_opts *o)
{
	static const struct option longopts[] = {
		{ "regs", no_argument, NULL, 'r' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-symbols", no_argument, NULL, 'n' },
		{ "no-cache", no_argument, NULL, 'C' },
		{ "no-debuginfod", no_argument, NULL, 'D' },
		{ "sysroot", required_argument, NULL, 'S' },
		{ "perf-map", required_argument, NULL, 'P' },
		{ "jitdump", required_argument, NULL, 'J' },
		{ "follow", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	memset(o, 0, sizeof(*o));
	optind = 1;
	/* -f (follow children) is run's alone: run is the command whose
	 * operands are a command line. */
	while ((ch = getopt_long(argc, argv, stop_at_operand ? "+rnjhf" : "rnjh", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'r': o->regs = true; break;
		case 'j': o->json = true; break;
		case 'n': o->no_symbols = true; break;
		case 'C': o->no_cache = true; break;
		case 'f':
			if (!stop_at_operand) { /* --follow: run's alone */
				fprintf(stderr, "backstep: --follow: only run follows children\n");
				return -2;
			}
			o->follow = true;
			break;
		case 'D': ldr_debuginfod_off(); break;
		case 'P': o->perf_map = optarg; break;
		case 'J': o->jitdump = optarg; break;
		case 'S':
			if (!strstr(usage, "--sysroot")) { /* core's alone */
				fprintf(stderr, "backstep: --sysroot: only core reads a sysroot\n");
				return -2;
			}
			o->sysroot = optarg;
			break;
		case 'h':
			printf("usage: %s\n", usage);
			return 0;
		default:
			return -2;
		}
	}
	return optind;
}
