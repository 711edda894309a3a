/* Printing stacks: shared by `backstep pid` (and later `core` and `run`).
 * One line per frame, gdb-like:
 *   #N  0xPC in MODULE+0xOFF [how]
 * with -r the recovered registers under each frame, with --json one object
 * per thread. */
#include <inttypes.h>
#include <signal.h>
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

/* Walk from REGS and print every frame; returns the walk's final code. */
int cli_print_stack(struct bk_space *space, const struct bk_regs *regs, const struct cli_stack_opts *o)
{
	struct bk_cursor c;
	int rc = bk_cursor_init(&c, space, regs);
	if (rc) {
		out_s("    (no registers: ");
		out_s(bk_strerror(rc));
		out_s(")\n");
		return rc;
	}
	bool first = true;
	do {
		uint64_t pc = bk_cursor_pc(&c);
		struct bk_module_info mi;
		bool have_mod = bk_space_module_at(space, bk_cursor_lookup_pc(&c), &mi) == 0;
		if (o->json) {
			out_s(first ? "{" : ", {");
			out_s("\"pc\": \"");
			out_addr(pc);
			out_s("\", \"how\": \"");
			out_s(bk_how_name(bk_cursor_how(&c)));
			out_s("\"");
			if (have_mod) {
				out_s(", \"module\": ");
				cli_json_str(mi.path);
				out_s(", \"module_offset\": \"");
				out_addr(pc - mi.start);
				out_s("\"");
			}
			out_c('}');
		} else {
			out_c('#');
			out_u64(bk_cursor_depth(&c));
			out_s(bk_cursor_depth(&c) < 10 ? "  0x" : " 0x");
			out_x64(pc, 16);
			out_s(" in ");
			if (have_mod) {
				out_s(base_name(mi.path));
				out_s("+0x");
				out_x64(pc - mi.start, 0);
			} else {
				out_s("??");
			}
			out_s(" [");
			out_s(bk_how_name(bk_cursor_how(&c)));
			out_s("]\n");
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
