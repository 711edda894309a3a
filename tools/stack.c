/* Printing stacks: shared by `backstep pid`, `core` and `run`. Every thread
 * is walked first (frames kept), the target released, then symbols looked
 * up and the stacks printed. One line per source-level frame, gdb-like:
 *   #N  0xPC in FUNCTION+0xOFF (MODULE) at FILE:LINE [how]
 * with -r the recovered registers under each frame, with --json one object
 * per thread: {"tid", "name", "frames": [...]} and "error" when the
 * registers were unknown or the walk ended on an error. */
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
#include "out.h"

volatile sig_atomic_t cli_interrupted;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void print_regs(struct bk_space *space, const struct bk_regs *regs)
{
	enum bk_arch arch = bk_space_arch(space);
	int col = 0;
	for (unsigned r = 0; r < BK_MAX_REGS; r++) {
		uint64_t v;
		if (!bk_regs_get(regs, r, &v))
			continue;
		const char *name = bk_reg_name(arch, r);
		out_s(col == 0 ? "      " : "  ");
		out_pad(name ? name : "?", 7);
		out_s("0x");
		out_x64(v, 16);
		if (++col == 4) {
			out_c('\n');
			col = 0;
		}
	}
	if (col)
		out_c('\n');
}

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

static void print_location(const struct bk_symbol *sym)
{
	if (!sym->file)
		return;
	out_s(" at ");
	out_s(sym->file);
	if (sym->line) {
		out_c(':');
		out_u64(sym->line);
	}
}

static void json_symbol_fields(const struct bk_symbol *sym, bool with_offset)
{
	if (sym->function) {
		out_s(", \"function\": ");
		cli_json_str(sym->function);
		if (with_offset) {
			out_s(", \"offset\": \"");
			out_addr(sym->offset);
			out_c('"');
		}
	}
	if (sym->file) {
		out_s(", \"file\": ");
		cli_json_str(sym->file);
		out_s(", \"line\": ");
		out_u64(sym->line);
	}
}

/* Print W's frames: one line per source-level frame,
 *   #N  0xPC in FUNCTION+0xOFF (MODULE) at FILE:LINE [how]
 * where calls inlined at the PC come first as frames of their own, tagged
 * [inlined] (as gdb numbers them). Symbols are looked up here, after the
 * walk: the process may be running again. */
static void print_walk(struct bk_space *space, const struct walk *w, const struct cli_stack_opts *o)
{
	if (!w->began) {
		if (!o->json) {
			out_s("    (no registers: ");
			out_s(bk_strerror(w->rc));
			out_s(")\n");
		}
		return;
	}
	unsigned number = 0;
	for (size_t k = 0; k < w->n; k++) {
		uint64_t pc = w->f[k].pc, lookup = w->f[k].lookup;
		struct bk_module_info mi;
		bool have_mod = bk_space_module_at(space, lookup, &mi) == 0;
		struct bk_symbol syms[MAX_INLINE];
		int nsym = o->no_symbols ? 0 : bk_space_symbolize(space, lookup, syms, MAX_INLINE);
		if (nsym < 0)
			nsym = 0;
		const char *how = bk_how_name(w->f[k].how);
		if (o->json) {
			out_s(k == 0 ? "{" : ", {");
			out_s("\"pc\": \"");
			out_addr(pc);
			out_s("\", \"how\": \"");
			out_s(how);
			out_s("\"");
			if (have_mod) {
				out_s(", \"module\": ");
				cli_json_str(mi.path);
				out_s(", \"module_offset\": \"");
				out_addr(pc - mi.start);
				out_s("\"");
			}
			if (nsym > 0) {
				json_symbol_fields(&syms[nsym - 1], true);
				if (nsym > 1) {
					out_s(", \"inlined\": [");
					for (int i = 0; i < nsym - 1; i++) {
						out_s(i ? ", {\"inlined\": true" : "{\"inlined\": true");
						json_symbol_fields(&syms[i], false);
						out_c('}');
					}
					out_c(']');
				}
			}
			out_c('}');
		} else {
			for (int i = 0; i < (nsym > 0 ? nsym : 1); i++) {
				const struct bk_symbol *sym = nsym > 0 ? &syms[i] : NULL;
				bool outer = i == nsym - 1 || nsym == 0;
				out_c('#');
				out_u64(number);
				out_s(number < 10 ? "  0x" : " 0x");
				out_x64(pc, 16);
				out_s(" in ");
				if (sym && sym->function) {
					out_s(sym->function);
					if (outer && sym->offset) {
						out_s("+0x");
						out_x64(sym->offset, 0);
					}
					if (have_mod) {
						out_s(" (");
						out_s(base_name(mi.path));
						out_c(')');
					}
				} else if (have_mod) {
					out_s(base_name(mi.path));
					out_s("+0x");
					out_x64(pc - mi.start, 0);
				} else {
					out_s("??");
				}
				if (sym)
					print_location(sym);
				out_s(" [");
				out_s(outer ? how : "inlined");
				out_s("]\n");
				number++;
			}
			if (o->regs)
				print_regs(space, &w->regs[k]);
		}
	}
	if (w->rc < 0 && !o->json) {
		out_s("    (walk ended: ");
		out_s(bk_strerror(w->rc));
		out_s(")\n");
	}
}

void cli_json_str(const char *s)
{
	out_c('"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			out_c('\\');
			out_c((char)ch);
		} else if (ch < 0x20) {
			out_s("\\u00");
			out_x64(ch, 2);
		} else {
			out_c((char)ch);
		}
	}
	out_c('"');
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
	if (!o->no_symbols && !o->no_cache)
		use_symbol_cache(space);

	if (o->json)
		out_s("[");
	for (size_t i = 0; i < walked; i++) {
		const struct walk *w = &ws[i];
		if (o->json) {
			out_s(i ? ",\n{\"tid\": " : "{\"tid\": ");
			out_u64((uint64_t)w->info.tid);
			out_s(", \"name\": ");
			cli_json_str(w->info.name);
			out_s(", \"frames\": [");
		} else {
			out_s(i ? "\nThread " : "Thread ");
			out_u64((uint64_t)w->info.tid);
			out_s(" (");
			out_s(w->info.name);
			out_s("):\n");
		}
		if (w->terr && !o->json) {
			out_s("    (registers unavailable: ");
			out_s(bk_strerror(w->terr));
			out_s(")\n");
		} else if (!w->terr) {
			print_walk(space, w, o);
		}
		if (w->rc < 0)
			status = 1;
		if (o->json) {
			out_s("]");
			if (w->rc < 0) {
				out_s(", \"error\": ");
				cli_json_str(bk_strerror(w->rc));
			}
			out_s("}");
		}
	}
	if (o->json)
		out_s("]\n");
	out_flush();
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
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int ch;
	memset(o, 0, sizeof(*o));
	optind = 1;
	while ((ch = getopt_long(argc, argv, stop_at_operand ? "+rnjh" : "rnjh", longopts, NULL)) !=
	       -1) {
		switch (ch) {
		case 'r': o->regs = true; break;
		case 'j': o->json = true; break;
		case 'n': o->no_symbols = true; break;
		case 'C': o->no_cache = true; break;
		case 'h':
			printf("usage: %s\n", usage);
			return 0;
		default:
			return -2;
		}
	}
	return optind;
}
