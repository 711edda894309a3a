/* Printing stacks: shared by `backstep pid`, `core` and `run`. One line per
 * source-level frame, gdb-like:
 *   #N  0xPC in FUNCTION+0xOFF (MODULE) at FILE:LINE [how]
 * with -r the recovered registers under each frame, with --json one object
 * per thread: {"tid", "name", "frames": [...]} and "error" when the
 * registers were unknown or the walk ended on an error. */
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "out.h"

volatile sig_atomic_t cli_interrupted;

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static void print_regs(struct bk_space *space, const struct bk_cursor *c)
{
	enum bk_arch arch = bk_space_arch(space);
	struct bk_regs regs;
	memset(&regs, 0, sizeof(regs));
	bk_cursor_regs(c, &regs);
	int col = 0;
	for (unsigned r = 0; r < BK_MAX_REGS; r++) {
		uint64_t v;
		if (!bk_regs_get(&regs, r, &v))
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

/* Walk from REGS and print every frame: one line per source-level frame,
 *   #N  0xPC in FUNCTION+0xOFF (MODULE) at FILE:LINE [how]
 * where calls inlined at the PC come first as frames of their own, tagged
 * [inlined] (as gdb numbers them). Returns the walk's final code. */
int cli_print_stack(struct bk_space *space, const struct bk_regs *regs, const struct cli_stack_opts *o)
{
	struct bk_cursor c;
	int rc = bk_cursor_init(&c, space, regs);
	if (rc) {
		if (!o->json) {
			out_s("    (no registers: ");
			out_s(bk_strerror(rc));
			out_s(")\n");
		}
		return rc;
	}
	bool first = true;
	unsigned number = 0;
	do {
		uint64_t pc = bk_cursor_pc(&c), lookup = bk_cursor_lookup_pc(&c);
		struct bk_module_info mi;
		bool have_mod = bk_space_module_at(space, lookup, &mi) == 0;
		struct bk_symbol syms[MAX_INLINE];
		int nsym = o->no_symbols ? 0 : bk_space_symbolize(space, lookup, syms, MAX_INLINE);
		if (nsym < 0)
			nsym = 0;
		const char *how = bk_how_name(bk_cursor_how(&c));
		if (o->json) {
			out_s(first ? "{" : ", {");
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
				print_regs(space, &c);
		}
		first = false;
		if (cli_interrupted)
			return BK_E_INVAL;
	} while ((rc = bk_cursor_step(&c)) == 1);
	if (rc < 0 && !o->json) {
		out_s("    (walk ended: ");
		out_s(bk_strerror(rc));
		out_s(")\n");
	}
	return rc;
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

/* Every thread of T: a header, then its stack. Returns 0, or 1 when a
 * thread's registers were unknown or a walk ended on an error. Stops early
 * (still closing the JSON) when cli_interrupted is set. */
int cli_print_threads(struct bk_target *t, const struct cli_stack_opts *o)
{
	int status = 0;
	size_t n = bk_target_nthreads(t);
	if (o->json)
		out_s("[");
	for (size_t i = 0; i < n && !cli_interrupted; i++) {
		struct bk_thread_info info;
		struct bk_regs regs;
		int terr = bk_target_thread(t, i, &info, &regs);
		if (o->json) {
			out_s(i ? ",\n{\"tid\": " : "{\"tid\": ");
			out_u64((uint64_t)info.tid);
			out_s(", \"name\": ");
			cli_json_str(info.name);
			out_s(", \"frames\": [");
		} else {
			out_s(i ? "\nThread " : "Thread ");
			out_u64((uint64_t)info.tid);
			out_s(" (");
			out_s(info.name);
			out_s("):\n");
		}
		int rc = terr;
		if (terr) {
			if (!o->json) {
				out_s("    (registers unavailable: ");
				out_s(bk_strerror(terr));
				out_s(")\n");
			}
		} else {
			rc = cli_print_stack(bk_target_space(t), &regs, o);
		}
		if (rc < 0)
			status = 1;
		if (o->json) {
			out_s("]");
			if (rc < 0) {
				out_s(", \"error\": ");
				cli_json_str(bk_strerror(rc));
			}
			out_s("}");
		}
	}
	if (o->json)
		out_s("]\n");
	out_flush();
	return status;
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
		case 'h':
			printf("usage: %s\n", usage);
			return 0;
		default:
			return -2;
		}
	}
	return optind;
}
