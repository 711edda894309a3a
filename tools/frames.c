/* The output module: every format of a stack is a printer here (frames.h).
 * Callers walk and symbolize; printers only format, so the same stack
 * prints the same way whichever command made it. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "frames.h"
#include "out.h"

#include "../src/base/base.h"

static enum bk_arch regs_arch = BK_ARCH_X86_64;

void fr_set_arch(enum bk_arch arch)
{
	regs_arch = arch;
}

/* The length of the well-formed UTF-8 sequence at S (1-4), or 0 when its
 * first byte does not begin one: a stray continuation byte, an overlong
 * form, a surrogate, beyond U+10FFFF, or cut short. */
static int utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];
	int n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
		: c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
		return 0;
	return n;
}

/* A JSON string, valid UTF-8 whatever S holds: a byte that is not part of
 * a well-formed sequence is written \uDCXX (XX the byte: the convention of
 * Python's surrogateescape, so the bytes can be had back). */
void fr_json_str(const char *s)
{
	out_c('"');
	const unsigned char *p = (const unsigned char *)s;
	while (*p) {
		unsigned char ch = *p;
		int n = utf8_len(p);
		if (ch == '"' || ch == '\\') {
			out_c('\\');
			out_c((char)ch);
		} else if (ch < 0x20) {
			out_s("\\u00");
			out_x64(ch, 2);
		} else if (n == 0) {
			out_s("\\udc");
			out_x64(ch, 2);
			n = 1;
		} else {
			for (int i = 0; i < n; i++)
				out_c((char)p[i]);
		}
		p += n ? n : 1;
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

/* ---- Signals ------------------------------------------------------------- */

const char *fr_signal_name(int signo, char *buf, size_t len)
{
	const char *abbrev = signo > 0 ? sigabbrev_np(signo) : NULL;
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", signo);
	return buf;
}

/* si_code values (Linux's, <asm-generic/siginfo.h>): the ones any signal
 * may carry (sent by a process), then the fault codes per signal. */
void fr_signal_code(int signo, int code, const char **name, const char **words)
{
	static const struct { int signo, code; const char *name, *words; } codes[] = {
		{ 0, 0, "SI_USER", "sent by kill" },
		{ 0, 0x80, "SI_KERNEL", "sent by the kernel" },
		{ 0, -1, "SI_QUEUE", "sent by sigqueue" },
		{ 0, -2, "SI_TIMER", "a POSIX timer expired" },
		{ 0, -3, "SI_MESGQ", "a message queue changed state" },
		{ 0, -4, "SI_ASYNCIO", "asynchronous I/O completed" },
		{ 0, -5, "SI_SIGIO", "queued SIGIO" },
		{ 0, -6, "SI_TKILL", "sent by tkill or tgkill" },
		{ SIGSEGV, 1, "SEGV_MAPERR", "address not mapped to object" },
		{ SIGSEGV, 2, "SEGV_ACCERR", "invalid permissions for mapped object" },
		{ SIGSEGV, 3, "SEGV_BNDERR", "failed address bound checks" },
		{ SIGSEGV, 4, "SEGV_PKUERR", "access denied by memory protection keys" },
		{ SIGSEGV, 8, "SEGV_MTEAERR", "asynchronous memory tag check fault" },
		{ SIGSEGV, 9, "SEGV_MTESERR", "synchronous memory tag check fault" },
		{ SIGSEGV, 10, "SEGV_CPERR", "control protection fault" },
		{ SIGBUS, 1, "BUS_ADRALN", "invalid address alignment" },
		{ SIGBUS, 2, "BUS_ADRERR", "nonexistent physical address" },
		{ SIGBUS, 3, "BUS_OBJERR", "object-specific hardware error" },
		{ SIGBUS, 4, "BUS_MCEERR_AR", "hardware memory error consumed on a machine check" },
		{ SIGBUS, 5, "BUS_MCEERR_AO", "hardware memory error detected, action optional" },
		{ SIGILL, 1, "ILL_ILLOPC", "illegal opcode" },
		{ SIGILL, 2, "ILL_ILLOPN", "illegal operand" },
		{ SIGILL, 3, "ILL_ILLADR", "illegal addressing mode" },
		{ SIGILL, 4, "ILL_ILLTRP", "illegal trap" },
		{ SIGILL, 5, "ILL_PRVOPC", "privileged opcode" },
		{ SIGILL, 6, "ILL_PRVREG", "privileged register" },
		{ SIGILL, 7, "ILL_COPROC", "coprocessor error" },
		{ SIGILL, 8, "ILL_BADSTK", "internal stack error" },
		{ SIGFPE, 1, "FPE_INTDIV", "integer divide by zero" },
		{ SIGFPE, 2, "FPE_INTOVF", "integer overflow" },
		{ SIGFPE, 3, "FPE_FLTDIV", "floating-point divide by zero" },
		{ SIGFPE, 4, "FPE_FLTOVF", "floating-point overflow" },
		{ SIGFPE, 5, "FPE_FLTUND", "floating-point underflow" },
		{ SIGFPE, 6, "FPE_FLTRES", "floating-point inexact result" },
		{ SIGFPE, 7, "FPE_FLTINV", "floating-point invalid operation" },
		{ SIGFPE, 8, "FPE_FLTSUB", "subscript out of range" },
		{ SIGTRAP, 1, "TRAP_BRKPT", "process breakpoint" },
		{ SIGTRAP, 2, "TRAP_TRACE", "process trace trap" },
	};
	*name = *words = NULL;
	bool fault = code > 0 && code < 0x80 && (signo == SIGSEGV || signo == SIGBUS ||
						 signo == SIGILL || signo == SIGFPE ||
						 signo == SIGTRAP);
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (codes[i].code == code && codes[i].signo == (fault ? signo : 0)) {
			*name = codes[i].name;
			*words = codes[i].words;
			return;
		}
}

/* "SIGSEGV (Segmentation fault, signal 11): SEGV_MAPERR, address not
 * mapped to object, at 0x0" and, for SIGABRT, that it was an abort. */
static void text_signal(const struct bk_signal_info *sg)
{
	char nb[32];
	const char *cname = NULL, *cwords = NULL;
	if (sg->has_code)
		fr_signal_code(sg->signo, sg->code, &cname, &cwords);
	out_s(fr_signal_name(sg->signo, nb, sizeof(nb)));
	out_s(" (");
	out_s(strsignal(sg->signo));
	out_s(", signal ");
	out_u64((uint64_t)sg->signo);
	out_s(")");
	if (sg->signo == SIGABRT)
		out_s(": an abort");
	if (cname) {
		out_s(sg->signo == SIGABRT ? " (" : ": ");
		out_s(cname);
		out_s(", ");
		out_s(cwords);
		if (sg->signo == SIGABRT)
			out_s(")");
	}
	if (sg->has_addr) {
		out_s(", at ");
		out_addr(sg->addr);
	}
}

static void text_stack(const struct fr_stack *s, size_t index)
{
	out_s(index ? "\nThread " : "Thread ");
	out_u64((uint64_t)s->tid);
	out_s(" (");
	out_s(s->name);
	if (s->signal) {
		out_s(") received ");
		text_signal(s->signal);
		out_s(":\n");
	} else {
		out_s("):\n");
	}
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

/* ---- json: JSON Lines, one thread per line ---------------------------------
 *
 *   {"tid": N, "name": "...", "frames": [{"pc": "0x...", "how": "cfi",
 *     "module": "...", "module_offset": "0x...", "function": "...",
 *     "offset": "0x...", "file": "...", "line": N, "inlined": [...]}, ...],
 *     "error": "...", "signal": {...}}
 * (on one line each), the shape of report's --format json.
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
}

static void json_stack(const struct fr_stack *s, size_t index)
{
	(void)index;
	out_s("{\"tid\": ");
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
	if (s->signal) {
		const struct bk_signal_info *sg = s->signal;
		char nb[32];
		const char *cname = NULL, *cwords = NULL;
		if (sg->has_code)
			fr_signal_code(sg->signo, sg->code, &cname, &cwords);
		out_s(", \"signal\": {\"number\": ");
		out_u64((uint64_t)sg->signo);
		out_s(", \"name\": ");
		fr_json_str(fr_signal_name(sg->signo, nb, sizeof(nb)));
		out_s(", \"description\": ");
		fr_json_str(strsignal(sg->signo));
		if (sg->has_code) {
			out_s(", \"code\": ");
			out_s(sg->code < 0 ? "-" : "");
			out_u64((uint64_t)(sg->code < 0 ? -(int64_t)sg->code : sg->code));
		}
		if (cname) {
			out_s(", \"code_name\": ");
			fr_json_str(cname);
			out_s(", \"code_description\": ");
			fr_json_str(cwords);
		}
		if (sg->has_addr) {
			out_s(", \"address\": \"");
			out_addr(sg->addr);
			out_c('"');
		}
		out_s(sg->signo == SIGABRT ? ", \"abort\": true}" : "}");
	}
	out_s("}\n");
}

static void json_end(void)
{
}

const struct fr_printer fr_json = { "json", json_begin, json_stack, json_end };

/* ---- Samples ------------------------------------------------------------ */

static bool with_inline = true;

void fr_set_inline(bool on)
{
	with_inline = on;
}

/* The symbols of F printed as frames: all of them, or the function only. */
static int first_sym(const struct fr_frame *f)
{
	return with_inline || f->nsym == 0 ? 0 : f->nsym - 1;
}

/* The length of NAME without its parameter list, as perf prints C++
 * functions: "ns::f(int) const" -> "ns::f", "std::function<int (int)>::
 * operator()(int) const" -> "std::function<int (int)>::operator()". The
 * list is the last top-level parenthesized group (templates' <...> and
 * nested parentheses skipped, from the end). */
static size_t name_len(const char *name)
{
	size_t n = strlen(name), i = n;
	/* Qualifiers after the list: " const", " volatile", " &", " &&". */
	while (i > 0 && name[i - 1] != ')') {
		if (name[i - 1] == '>' || name[i - 1] == '(')
			return n;
		i--;
	}
	if (i == 0)
		return n;
	int depth = 0;
	for (size_t j = i; j-- > 0;) {
		char c = name[j];
		if (c == ')' || c == '>')
			depth++;
		else if (c == '(' || c == '<')
			depth--;
		if (depth == 0)
			return j > 0 ? j : n;
	}
	return n;
}

static void out_name(const char *name)
{
	out_mem(name, name_len(name));
}

/* Text a printer made for a frame key (fr_frame.key), printed again for
 * every later frame of the key. */
struct memo {
	struct memo_text {
		char *text;
		size_t len;
	} *at;
	size_t cap;
};

static void memo_free(struct memo *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->at[i].text);
	free(m->at);
	*m = (struct memo){ 0 };
}

/* Print frame F with PRINT, or the text kept for its key. */
static void memo_print(struct memo *m, const struct fr_frame *f,
		       void (*print)(const struct fr_frame *f))
{
	if (f->key < m->cap && m->at[f->key].text) {
		out_mem(m->at[f->key].text, m->at[f->key].len);
		return;
	}
	if (!f->key) {
		print(f);
		return;
	}
	out_capture();
	print(f);
	size_t len;
	const char *text = out_captured(&len);
	if (!text)
		return;
	out_mem(text, len);
	if (f->key >= m->cap) {
		size_t cap = m->cap;
		struct memo_text *n = base_grow(m->at, &cap, (size_t)f->key + 1, sizeof(*n), 1024);
		if (!n)
			return;
		memset(n + m->cap, 0, (cap - m->cap) * sizeof(*n));
		m->at = n;
		m->cap = cap;
	}
	if ((m->at[f->key].text = malloc(len ? len : 1))) {
		memcpy(m->at[f->key].text, text, len);
		m->at[f->key].len = len;
	}
}

/* ---- perf-script: what `perf script` prints ------------------------------
 *
 *   COMM PID/TID SECONDS.MICROS: PERIOD EVENT:
 *   \t        ADDR FUNCTION+0xOFF (MODULE)
 * (C++ functions without their parameter lists, as perf prints them)
 *   ...
 *   (an empty line)
 * inlined calls as lines of their own, module "(inlined)"; an unknown
 * function is [unknown], an unknown module [unknown]. */

static struct memo ps_memo;

static void ps_begin(void)
{
}

static int hex_digits(uint64_t v)
{
	int n = 1;
	while (v >>= 4)
		n++;
	return n;
}

static void ps_frame(const struct fr_frame *f)
{
	for (int i = first_sym(f); i < (f->nsym > 0 ? f->nsym : 1); i++) {
		const struct bk_symbol *sym = f->nsym > 0 ? &f->syms[i] : NULL;
		bool outer = f->nsym == 0 || i == f->nsym - 1;
		/* "\t%16llx " */
		out_c('\t');
		for (int w = 16 - hex_digits(f->pc); w > 0; w--)
			out_c(' ');
		out_x64(f->pc, 0);
		out_c(' ');
		if (sym && sym->function) {
			/* perf gives an inlined call the offset of the function
			 * that contains it. */
			out_name(sym->function);
			out_s("+0x");
			out_x64(f->syms[f->nsym - 1].offset, 0);
		} else {
			out_s("[unknown]");
		}
		out_s(" (");
		out_s(!outer ? "inlined" : f->module ? f->module : "[unknown]");
		out_s(")\n");
	}
}

/* N right-aligned in WIDTH columns (left-aligned when LEFT). */
static void out_u64_width(uint64_t n, int width, bool left)
{
	char tmp[24];
	int i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + n % 10);
		n /= 10;
	} while (n);
	int pad = width - ((int)sizeof(tmp) - i);
	if (!left)
		for (; pad > 0; pad--)
			out_c(' ');
	out_mem(tmp + i, sizeof(tmp) - i);
	if (left)
		for (; pad > 0; pad--)
			out_c(' ');
}

static void ps_stack(const struct fr_stack *s, size_t index)
{
	(void)index;
	out_s(s->name && s->name[0] ? s->name : ":-1");
	out_c(' ');
	/* "%5d/%-5d %5llu.%06llu: %10llu " (pids are never negative here) */
	out_u64_width((uint64_t)(s->pid > 0 ? s->pid : 0), 5, false);
	out_c('/');
	out_u64_width((uint64_t)(s->tid > 0 ? s->tid : 0), 5, true);
	out_c(' ');
	out_u64_width(s->time / 1000000000u, 5, false);
	out_c('.');
	char us[6];
	uint64_t frac = s->time % 1000000000u / 1000u;
	for (int i = 5; i >= 0; i--, frac /= 10)
		us[i] = (char)('0' + frac % 10);
	out_mem(us, 6);
	out_s(": ");
	out_u64_width(s->period, 10, false);
	out_c(' ');
	out_s(s->event ? s->event : "event");
	out_s(": \n");
	for (size_t k = 0; k < s->n; k++)
		memo_print(&ps_memo, &s->f[k], ps_frame);
	out_c('\n');
}

static void ps_end(void)
{
	memo_free(&ps_memo);
}

const struct fr_printer fr_perf_script = { "perf-script", ps_begin, ps_stack, ps_end };

/* ---- folded: flamegraph.pl's input ---------------------------------------
 *
 *   COMM;ROOT;...;LEAF COUNT
 * one line per distinct stack, sorted; a function without a name is the
 * module's name in brackets ([libc.so.6]) or [unknown]. Stacks are kept in
 * a hash table: memory grows with distinct stacks, not with samples. */

static struct fold *folded;
static uint32_t *fold_ids;       /* the stack being folded */
static size_t fold_nids, fold_capids;
/* Per frame key: the frame's names (ids, root first) in fold_frames. */
static struct fold_span {
	uint32_t at, n;
} *fold_memo;
static size_t fold_memocap;
static uint32_t *fold_frames;
static size_t fold_nframes, fold_capframes;

static bool fold_push(uint32_t id)
{
	uint32_t *n = base_grow(fold_ids, &fold_capids, fold_nids + 1, sizeof(*n), 256);
	if (!n)
		return false;
	fold_ids = n;
	fold_ids[fold_nids++] = id;
	return true;
}

/* The name of symbol I of F, interned: the function without its
 * parameter list, else the module's name in brackets, else [unknown]. */
static uint32_t fold_sym_name(const struct fr_frame *f, int i)
{
	const struct bk_symbol *sym = f->nsym > 0 ? &f->syms[i] : NULL;
	if (sym && sym->function)
		return fold_name(folded, sym->function, name_len(sym->function));
	if (!f->module)
		return fold_name(folded, "[unknown]", 9);
	char b[256];
	int n = snprintf(b, sizeof(b), "[%s]", base_name(f->module));
	return fold_name(folded, b, n < (int)sizeof(b) ? (size_t)n : sizeof(b) - 1);
}

/* F's names pushed, root first: the function, then the calls inlined in
 * it; made once per frame key. */
static void fold_frame(const struct fr_frame *f)
{
	int last = f->nsym > 0 ? f->nsym - 1 : 0;
	if (f->key && f->key < fold_memocap && fold_memo[f->key].n) {
		for (uint32_t i = 0; i < fold_memo[f->key].n; i++)
			fold_push(fold_frames[fold_memo[f->key].at + i]);
		return;
	}
	size_t from = fold_nids;
	for (int i = last; i >= first_sym(f); i--)
		fold_push(fold_sym_name(f, i));
	if (!f->key || fold_nids == from)
		return;
	if (f->key >= fold_memocap) {
		size_t cap = fold_memocap;
		struct fold_span *n = base_grow(fold_memo, &cap, (size_t)f->key + 1, sizeof(*n), 1024);
		if (!n)
			return;
		memset(n + fold_memocap, 0, (cap - fold_memocap) * sizeof(*n));
		fold_memo = n;
		fold_memocap = cap;
	}
	size_t len = fold_nids - from;
	uint32_t *frames = base_grow(fold_frames, &fold_capframes, fold_nframes + len,
				     sizeof(*frames), 4096);
	if (!frames)
		return;
	fold_frames = frames;
	memcpy(fold_frames + fold_nframes, fold_ids + from, len * sizeof(*fold_ids));
	fold_memo[f->key] = (struct fold_span){ (uint32_t)fold_nframes, (uint32_t)len };
	fold_nframes += len;
}

/* The stack S folded: its process's name, then its frames' names, root
 * first. Shared by the folded and SVG printers (frames.h). */
void fr_fold(const struct fr_stack *s)
{
	if (!folded && !(folded = fold_new()))
		return;
	fold_nids = 0;
	const char *comm = s->name && s->name[0] ? s->name : "[unknown]";
	fold_push(fold_name(folded, comm, strlen(comm)));
	for (size_t k = s->n; k-- > 0;)
		fold_frame(&s->f[k]);
	fold_add(folded, fold_ids, fold_nids, 1);
}

struct fold *fr_fold_table(void)
{
	return folded;
}

void fr_fold_reset(void)
{
	if (folded && fold_failed(folded))
		fprintf(stderr, "backstep: out of memory: stacks were left out of the output\n");
	fold_free(folded);
	folded = NULL;
	free(fold_ids);
	free(fold_memo);
	free(fold_frames);
	fold_ids = fold_frames = NULL;
	fold_memo = NULL;
	fold_nids = fold_capids = fold_memocap = fold_nframes = fold_capframes = 0;
}

static void folded_begin(void)
{
}

static void folded_stack(const struct fr_stack *s, size_t index)
{
	(void)index;
	fr_fold(s);
}

static void folded_end(void)
{
	const struct fold_stack *st;
	size_t n = folded ? fold_sorted(folded, &st) : 0;
	for (size_t i = 0; i < n; i++) {
		for (uint32_t k = 0; k < st[i].n; k++) {
			size_t len;
			const char *t = fold_name_text(folded, st[i].names[k], &len);
			if (k)
				out_c(';');
			out_mem(t, len);
		}
		out_c(' ');
		out_u64(st[i].count);
		out_c('\n');
	}
	fr_fold_reset();
}

const struct fr_printer fr_folded = { "folded", folded_begin, folded_stack, folded_end };

/* ---- jsonl: a sample per line --------------------------------------------
 *
 *   {"pid": N, "tid": N, "comm": "...", "time": NS, "cpu": N, "period": N,
 *    "event": "...", "frames": [the frame objects of "json"]} */

static struct memo jsonl_memo;

static void jsonl_frame(const struct fr_frame *f)
{
	json_frame(f, true);
}

static void jsonl_begin(void)
{
}

static void jsonl_stack(const struct fr_stack *s, size_t index)
{
	(void)index;
	out_s("{\"pid\": ");
	out_s64(s->pid);
	out_s(", \"tid\": ");
	out_s64(s->tid);
	out_s(", \"comm\": ");
	fr_json_str(s->name ? s->name : "");
	out_s(", \"time\": ");
	out_u64(s->time);
	out_s(", \"cpu\": ");
	out_u64(s->cpu);
	out_s(", \"period\": ");
	out_u64(s->period);
	out_s(", \"event\": ");
	fr_json_str(s->event ? s->event : "");
	out_s(", \"frames\": [");
	for (size_t k = 0; k < s->n; k++) {
		if (k)
			out_s(", ");
		memo_print(&jsonl_memo, &s->f[k], jsonl_frame);
	}
	out_s("]");
	if (s->error) {
		out_s(", \"error\": ");
		fr_json_str(bk_strerror(s->error));
	}
	out_s("}\n");
}

static void jsonl_end(void)
{
	memo_free(&jsonl_memo);
}

const struct fr_printer fr_jsonl = { "jsonl", jsonl_begin, jsonl_stack, jsonl_end };

/* ---- speedscope: speedscope's JSON file format ---------------------------
 *
 *   {"$schema": ".../file-format-schema.json", "shared": {"frames":
 *    [{"name", "file", "line"}...]}, "profiles": [{"type": "sampled",
 *    "name": "COMM PID/TID", "unit": "nanoseconds", "startValue": 0,
 *    "endValue": TOTAL, "samples": [[frame indices, root first]...],
 *    "weights": [PERIOD...]}...], "exporter": "backstep"}
 * a sampled profile per thread; a frame per distinct function, file and
 * line. The format lists every sample: memory grows with them. */

struct ss_frame {
	char *name, *file;
	unsigned line;
	uint64_t hash;
};
struct ss_profile {
	int pid, tid;
	char *name;
	uint32_t *idx;          /* all samples' frame indices, root first */
	size_t nidx, capidx;
	size_t *start;          /* where each sample's indices begin */
	uint64_t *weight;
	size_t n, cap, capw;
	uint64_t total;
};
static struct ss_frame *ss_frames;
static size_t ss_nframes, ss_capframes;
static uint32_t *ss_table;      /* hash -> frame index + 1, open addressing */
static size_t ss_tabcap;
static struct ss_profile *ss_profiles;
static size_t ss_nprofiles, ss_capprofiles;
static bool ss_failed;

static void *ss_grow(void *p, size_t *cap, size_t need, size_t size)
{
	void *q = base_grow(p, cap, need, size, 64);
	if (!q)
		ss_failed = true;
	return q;
}

static char *ss_dup(const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d) {
		ss_failed = true;
		return NULL;
	}
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/* The index of the frame NAME (LEN bytes), FILE, LINE, added if new. */
static long ss_frame(const char *name, size_t len, const char *file, unsigned line)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	for (const char *p = file ? file : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h ^= line * 0x9e3779b97f4a7c15ull;
	if ((ss_nframes + 1) * 2 > ss_tabcap) {
		size_t cap = ss_tabcap ? ss_tabcap * 2 : 1024;
		uint32_t *t = calloc(cap, sizeof(*t));
		if (!t) {
			ss_failed = true;
			return -1;
		}
		for (size_t i = 0; i < ss_nframes; i++) {
			size_t j = ss_frames[i].hash & (cap - 1);
			while (t[j])
				j = (j + 1) & (cap - 1);
			t[j] = (uint32_t)i + 1;
		}
		free(ss_table);
		ss_table = t;
		ss_tabcap = cap;
	}
	size_t j = h & (ss_tabcap - 1);
	for (; ss_table[j]; j = (j + 1) & (ss_tabcap - 1)) {
		const struct ss_frame *f = &ss_frames[ss_table[j] - 1];
		if (f->hash == h && f->line == line && !strncmp(f->name, name, len) &&
		    !f->name[len] && !strcmp(f->file ? f->file : "", file ? file : ""))
			return ss_table[j] - 1;
	}
	struct ss_frame *nf = ss_grow(ss_frames, &ss_capframes, ss_nframes + 1, sizeof(*ss_frames));
	if (!nf)
		return -1;
	ss_frames = nf;
	struct ss_frame *f = &ss_frames[ss_nframes];
	*f = (struct ss_frame){ ss_dup(name, len), file ? ss_dup(file, strlen(file)) : NULL, line, h };
	if (!f->name)
		return -1;
	ss_table[j] = (uint32_t)++ss_nframes;
	return (long)ss_nframes - 1;
}

static struct ss_profile *ss_profile(const struct fr_stack *s)
{
	for (size_t i = 0; i < ss_nprofiles; i++)
		if (ss_profiles[i].pid == s->pid && ss_profiles[i].tid == s->tid)
			return &ss_profiles[i];
	struct ss_profile *np = ss_grow(ss_profiles, &ss_capprofiles, ss_nprofiles + 1,
					sizeof(*ss_profiles));
	if (!np)
		return NULL;
	ss_profiles = np;
	struct ss_profile *p = &ss_profiles[ss_nprofiles++];
	memset(p, 0, sizeof(*p));
	p->pid = s->pid;
	p->tid = s->tid;
	char name[96];
	snprintf(name, sizeof(name), "%s %d/%d", s->name && s->name[0] ? s->name : "?", s->pid,
		 s->tid);
	p->name = ss_dup(name, strlen(name));
	return p;
}

static void ss_begin(void)
{
}

static void ss_stack(const struct fr_stack *s, size_t index)
{
	(void)index;
	struct ss_profile *p = ss_profile(s);
	if (!p)
		return;
	uint32_t *idx;
	size_t *start;
	uint64_t *weight;
	if (!(start = ss_grow(p->start, &p->cap, p->n + 1, sizeof(*start))))
		return;
	p->start = start;
	if (!(weight = ss_grow(p->weight, &p->capw, p->n + 1, sizeof(*weight))))
		return;
	p->weight = weight;
	p->start[p->n] = p->nidx;
	for (size_t k = s->n; k-- > 0;) { /* root first */
		const struct fr_frame *f = &s->f[k];
		int last = f->nsym > 0 ? f->nsym - 1 : 0;
		for (int i = last; i >= first_sym(f); i--) {
			const struct bk_symbol *sym = f->nsym > 0 ? &f->syms[i] : NULL;
			char unknown[64];
			const char *name = sym && sym->function ? sym->function : unknown;
			if (!(sym && sym->function))
				snprintf(unknown, sizeof(unknown), "[%s+0x%llx]",
					 f->module ? base_name(f->module) : "unknown",
					 (unsigned long long)f->module_off);
			long fi = ss_frame(name, strlen(name), sym ? sym->file : NULL,
					   sym ? sym->line : 0);
			if (fi < 0 || !(idx = ss_grow(p->idx, &p->capidx, p->nidx + 1, sizeof(*idx))))
				return;
			p->idx = idx;
			p->idx[p->nidx++] = (uint32_t)fi;
		}
	}
	p->weight[p->n++] = s->period ? s->period : 1;
	p->total += s->period ? s->period : 1;
}

static void ss_end(void)
{
	out_s("{\"$schema\": \"https://www.speedscope.app/file-format-schema.json\",\n"
	      " \"exporter\": \"backstep\", \"activeProfileIndex\": 0,\n \"shared\": {\"frames\": [");
	for (size_t i = 0; i < ss_nframes; i++) {
		const struct ss_frame *f = &ss_frames[i];
		out_s(i ? ",\n  {\"name\": " : "\n  {\"name\": ");
		fr_json_str(f->name);
		if (f->file) {
			out_s(", \"file\": ");
			fr_json_str(f->file);
			if (f->line) {
				out_s(", \"line\": ");
				out_u64(f->line);
			}
		}
		out_c('}');
	}
	out_s("]},\n \"profiles\": [");
	for (size_t i = 0; i < ss_nprofiles; i++) {
		const struct ss_profile *p = &ss_profiles[i];
		out_s(i ? ",\n  {\"type\": \"sampled\", \"name\": " : "\n  {\"type\": \"sampled\", \"name\": ");
		fr_json_str(p->name ? p->name : "?");
		out_s(", \"unit\": \"nanoseconds\", \"startValue\": 0, \"endValue\": ");
		out_u64(p->total);
		out_s(",\n   \"samples\": [");
		for (size_t k = 0; k < p->n; k++) {
			size_t end = k + 1 < p->n ? p->start[k + 1] : p->nidx;
			out_s(k ? ", [" : "[");
			for (size_t j = p->start[k]; j < end; j++) {
				if (j > p->start[k])
					out_c(',');
				out_u64(p->idx[j]);
			}
			out_c(']');
		}
		out_s("],\n   \"weights\": [");
		for (size_t k = 0; k < p->n; k++) {
			if (k)
				out_c(',');
			out_u64(p->weight[k]);
		}
		out_s("]}");
		free(p->name);
		free(p->idx);
		free(p->start);
		free(p->weight);
	}
	out_s("]}\n");
	for (size_t i = 0; i < ss_nframes; i++) {
		free(ss_frames[i].name);
		free(ss_frames[i].file);
	}
	free(ss_frames);
	free(ss_table);
	free(ss_profiles);
	ss_frames = NULL;
	ss_table = NULL;
	ss_profiles = NULL;
	ss_nframes = ss_capframes = ss_tabcap = ss_nprofiles = ss_capprofiles = 0;
	if (ss_failed)
		fprintf(stderr, "backstep: out of memory: the speedscope file lacks samples\n");
	ss_failed = false;
}

const struct fr_printer fr_speedscope = { "speedscope", ss_begin, ss_stack, ss_end };

const struct fr_printer *fr_sample_printer(const char *name)
{
	static const struct {
		const char *name;
		const struct fr_printer *pr;
	} formats[] = {
		{ "perf-script", &fr_perf_script },
		{ "folded", &fr_folded },
		{ "json", &fr_jsonl },
		{ "speedscope", &fr_speedscope },
		{ "svg", &fr_svg },
	};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (!strcmp(name, formats[i].name))
			return formats[i].pr;
	return NULL;
}
