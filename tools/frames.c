/* The output module: every format of a stack is a printer here (frames.h).
 * Callers walk and symbolize; printers only format, so the same stack
 * prints the same way whichever command made it. */
#include <string.h>

#include "frames.h"
#include "out.h"

static enum bk_arch regs_arch = BK_ARCH_X86_64;

void fr_set_arch(enum bk_arch arch)
{
	regs_arch = arch;
}

void fr_json_str(const char *s)
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

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

/* ---- text: gdb-like ------------------------------------------------------
 *
 *   Thread TID (NAME):
 *   #N  0xPC in FUNCTION+0xOFF (MODULE) at FILE:LINE [how]
 * calls inlined at the PC first, as frames of their own tagged [inlined]
 * (as gdb numbers them); with registers, four to a line under a frame. */

static void text_regs(const struct bk_regs *regs)
{
	int col = 0;
	for (unsigned r = 0; r < BK_MAX_REGS; r++) {
		uint64_t v;
		if (!bk_regs_get(regs, r, &v))
			continue;
		const char *name = bk_reg_name(regs_arch, r);
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

static void text_location(const struct bk_symbol *sym)
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

static void text_frames(const struct fr_stack *s)
{
	unsigned number = 0;
	for (size_t k = 0; k < s->n; k++) {
		const struct fr_frame *f = &s->f[k];
		int nsym = f->nsym;
		for (int i = 0; i < (nsym > 0 ? nsym : 1); i++) {
			const struct bk_symbol *sym = nsym > 0 ? &f->syms[i] : NULL;
			bool outer = i == nsym - 1 || nsym == 0;
			out_c('#');
			out_u64(number);
			out_s(number < 10 ? "  0x" : " 0x");
			out_x64(f->pc, 16);
			out_s(" in ");
			if (sym && sym->function) {
				out_s(sym->function);
				if (outer && sym->offset) {
					out_s("+0x");
					out_x64(sym->offset, 0);
				}
				if (f->module) {
					out_s(" (");
					out_s(base_name(f->module));
					out_c(')');
				}
			} else if (f->module) {
				out_s(base_name(f->module));
				out_s("+0x");
				out_x64(f->module_off, 0);
			} else {
				out_s("??");
			}
			if (sym)
				text_location(sym);
			out_s(" [");
			out_s(outer ? bk_how_name(f->how) : "inlined");
			out_s("]\n");
			number++;
		}
		if (f->regs)
			text_regs(f->regs);
	}
}

static void text_begin(void)
{
}

static void text_stack(const struct fr_stack *s, size_t index)
{
	out_s(index ? "\nThread " : "Thread ");
	out_u64((uint64_t)s->tid);
	out_s(" (");
	out_s(s->name);
	out_s("):\n");
	if (s->no_regs) {
		out_s("    (registers unavailable: ");
		out_s(bk_strerror(s->no_regs));
		out_s(")\n");
		return;
	}
	if (!s->began) {
		out_s("    (no registers: ");
		out_s(bk_strerror(s->error));
		out_s(")\n");
		return;
	}
	text_frames(s);
	if (s->error) {
		out_s("    (walk ended: ");
		out_s(bk_strerror(s->error));
		out_s(")\n");
	}
}

static void text_end(void)
{
}

const struct fr_printer fr_text = { "text", text_begin, text_stack, text_end };

/* ---- json: an array of threads -------------------------------------------
 *
 *   [{"tid": N, "name": "...", "frames": [{"pc": "0x...", "how": "cfi",
 *     "module": "...", "module_offset": "0x...", "function": "...",
 *     "offset": "0x...", "file": "...", "line": N, "inlined": [...]}, ...],
 *     "error": "..."}, ...]
 * "inlined" lists the calls inlined at the PC, innermost first, each with
 * "inlined": true and its function, file and line. */

static void json_symbol_fields(const struct bk_symbol *sym, bool with_offset)
{
	if (sym->function) {
		out_s(", \"function\": ");
		fr_json_str(sym->function);
		if (with_offset) {
			out_s(", \"offset\": \"");
			out_addr(sym->offset);
			out_c('"');
		}
	}
	if (sym->file) {
		out_s(", \"file\": ");
		fr_json_str(sym->file);
		out_s(", \"line\": ");
		out_u64(sym->line);
	}
}

static void json_frame(const struct fr_frame *f, bool first)
{
	out_s(first ? "{" : ", {");
	out_s("\"pc\": \"");
	out_addr(f->pc);
	out_s("\", \"how\": \"");
	out_s(bk_how_name(f->how));
	out_s("\"");
	if (f->module) {
		out_s(", \"module\": ");
		fr_json_str(f->module);
		out_s(", \"module_offset\": \"");
		out_addr(f->module_off);
		out_s("\"");
	}
	if (f->nsym > 0) {
		json_symbol_fields(&f->syms[f->nsym - 1], true);
		if (f->nsym > 1) {
			out_s(", \"inlined\": [");
			for (int i = 0; i < f->nsym - 1; i++) {
				out_s(i ? ", {\"inlined\": true" : "{\"inlined\": true");
				json_symbol_fields(&f->syms[i], false);
				out_c('}');
			}
			out_c(']');
		}
	}
	out_c('}');
}

static void json_begin(void)
{
	out_s("[");
}

static void json_stack(const struct fr_stack *s, size_t index)
{
	out_s(index ? ",\n{\"tid\": " : "{\"tid\": ");
	out_u64((uint64_t)s->tid);
	out_s(", \"name\": ");
	fr_json_str(s->name);
	out_s(", \"frames\": [");
	if (!s->no_regs && s->began)
		for (size_t k = 0; k < s->n; k++)
			json_frame(&s->f[k], k == 0);
	out_s("]");
	int err = s->no_regs ? s->no_regs : s->error;
	if (err) {
		out_s(", \"error\": ");
		fr_json_str(bk_strerror(err));
	}
	out_s("}");
}

static void json_end(void)
{
	out_s("]\n");
}

const struct fr_printer fr_json = { "json", json_begin, json_stack, json_end };
