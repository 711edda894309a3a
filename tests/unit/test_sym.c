/* src/sym: names, file:line and inlined frames, checked against binutils'
 * addr2line (an independent DWARF reader) at every instruction of every
 * function of small programs built here with gcc and clang: DWARF 4 and 5,
 * C and C++, compressed debug sections, a separate debug file found through
 * .gnu_debuglink or named explicitly; plus .dynsym-only names, the demangler,
 * open errors, hostile DWARF and allocation failures.
 *
 * A tool that is missing skips only the checks that need it, and says so.
 * Where addr2line is known to be wrong (the DWARF 5 default file register,
 * see src/sym/sym_line.c) the expected value comes from readelf instead, and
 * each such address is counted and reported rather than compared.
 */
#include <ctype.h>
#include <elf.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "loader/loader.h"
#include "sym/sym.h"

static char tmp[64];

/* Under ASan: libdwarf asks calloc for absurd sizes taken from damaged
 * headers and checks for NULL; let calloc return NULL as it would without
 * ASan instead of aborting the run. (Unused in other builds.) */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "allocator_may_return_null=1";
}

/* ---- Helpers ---------------------------------------------------------------- */

static bool run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[4300];
	snprintf(full, sizeof(full), "cd '%s' && ( %s ) >/dev/null 2>&1", tmp, cmd);
	return system(full) == 0;
}

/* Output of a shell command run in TMP (malloc'd, NUL-terminated), or NULL. */
static char *capture(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	char full[8400];
	snprintf(full, sizeof(full), "cd '%s' && ( %s ) 2>/dev/null", tmp, cmd);
	FILE *p = popen(full, "r");
	if (!p)
		return NULL;
	size_t len = 0, cap = 65536;
	char *buf = malloc(cap);
	size_t n;
	while (buf && (n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 4096) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				buf = NULL;
				break;
			}
			buf = nb;
			cap *= 2;
		}
	}
	int st = pclose(p);
	if (!buf || st != 0) {
		free(buf);
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

static char *tpath(const char *name)
{
	static char pool[256][160];
	static unsigned next;
	if (next >= BK_ARRAY_LEN(pool)) {
		fprintf(stderr, "tpath pool exhausted\n");
		exit(2);
	}
	char *b = pool[next++];
	snprintf(b, sizeof(pool[0]), "%s/%s", tmp, name);
	return b;
}

/* TMP/NAME in a buffer of its own, for names used over and over. */
static const char *tpath_tmp(const char *name)
{
	static char b[160];
	snprintf(b, sizeof(b), "%s/%s", tmp, name);
	return b;
}

static bool write_file(const char *name, const char *text)
{
	FILE *f = fopen(tpath(name), "w");
	if (!f)
		return false;
	fputs(text, f);
	return fclose(f) == 0;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static bool spit(const char *path, const uint8_t *p, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return false;
	bool ok = fwrite(p, 1, len, f) == len;
	return fclose(f) == 0 && ok;
}

static const char *nz(const char *s)
{
	return s ? s : "(null)";
}

/* ---- Test programs ------------------------------------------------------------ */

static const char prog_inl_h[] =
	"static inline int hdr_scale(int x)\n"
	"{\n"
	"\tint r = x * 5;\n"
	"\tif (r > 1000)\n"
	"\t\tr -= x / 3;\n"
	"\treturn r;\n"
	"}\n";

static const char prog_c[] =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"#include \"prog_inl.h\"\n"
	"\n"
	"static inline int sq(int x)\n"
	"{\n"
	"\treturn x * x + 1;\n"
	"}\n"
	"\n"
	"static inline int twice(int x)\n"
	"{\n"
	"\treturn sq(x) + hdr_scale(x + 3) * 2;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) int compute(int n)\n"
	"{\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\ts += twice(i) ^ (s >> 3);\n"
	"\treturn s;\n"
	"}\n"
	"\n"
	"struct node { struct node *next; int v; };\n"
	"\n"
	"__attribute__((noinline)) int walk(struct node *n, int k)\n"
	"{\n"
	"\tint acc = 0;\n"
	"\twhile (n) {\n"
	"\t\tif (n->v > k)\n"
	"\t\t\tacc += sq(n->v - k);\n"
	"\t\telse\n"
	"\t\t\tacc -= hdr_scale(n->v);\n"
	"\t\tn = n->next;\n"
	"\t}\n"
	"\treturn acc;\n"
	"}\n"
	"\n"
	"__attribute__((noinline)) const char *classify(int c)\n"
	"{\n"
	"\tswitch (c % 7) {\n"
	"\tcase 0: return \"zero\";\n"
	"\tcase 1: return \"one\";\n"
	"\tcase 2: return \"two\";\n"
	"\tcase 3: return strlen(\"three\") > (size_t)c ? \"three\" : \"3\";\n"
	"\tdefault: return \"many\";\n"
	"\t}\n"
	"}\n"
	"\n"
	"__attribute__((cold, noinline)) void report(const char *m, int v)\n"
	"{\n"
	"\tfprintf(stderr, \"%s %d\\n\", m, v);\n"
	"}\n"
	"\n"
	"/* gcc moves the unlikely branch to checked.cold */\n"
	"__attribute__((noinline)) int checked(int n)\n"
	"{\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < n; i++) {\n"
	"\t\tif (__builtin_expect(i * 7 == n + 1000, 0)) {\n"
	"\t\t\treport(\"odd\", i);\n"
	"\t\t\tabort();\n"
	"\t\t}\n"
	"\t\ts += i ^ n;\n"
	"\t}\n"
	"\treturn s;\n"
	"}\n"
	"\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tint n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"\tif (__builtin_expect(n < 0, 0)) {\n"
	"\t\tfprintf(stderr, \"negative: %d\\n\", twice(n));\n"
	"\t\tabort();\n"
	"\t}\n"
	"\tstruct node b = { NULL, n }, a = { &b, n / 2 };\n"
	"\tprintf(\"%d %d %s %d\\n\", compute(n), walk(&a, 3), classify(n), checked(n));\n"
	"\treturn 0;\n"
	"}\n";

static const char cxx_cc[] =
	"#include <cstdio>\n"
	"#include <cstdlib>\n"
	"namespace outer {\n"
	"namespace inner {\n"
	"template <typename T> __attribute__((noinline)) T mix(T a, T b)\n"
	"{\n"
	"\treturn a * 3 + b / (a | 1);\n"
	"}\n"
	"struct Acc {\n"
	"\tlong v;\n"
	"\tvoid add(long x) { v += x * x; }\n"
	"};\n"
	"}\n"
	"}\n"
	"static inline long twist(long x)\n"
	"{\n"
	"\treturn (x << 2) ^ (x >> 1);\n"
	"}\n"
	"__attribute__((noinline)) long run(int n)\n"
	"{\n"
	"\touter::inner::Acc a{0};\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\ta.add(twist(outer::inner::mix<long>(i, n)));\n"
	"\treturn a.v + outer::inner::mix<int>(n, 2);\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tstd::printf(\"%ld\\n\", run(argc > 1 ? std::atoi(argv[1]) : 7));\n"
	"}\n";

/* gcc emits the header's function first, so the header becomes file 1 of
 * the DWARF 5 line table and its rows need no DW_LNS_set_file. */
static const char fone_h[] = "static int helper(int x) { return x * 7; }\n";
static const char fone_c[] =
	"#include \"fone.h\"\n"
	"int g(int x) { return helper(x) + 1; }\n"
	"int main(void) { return g(3); }\n";

static const char lib_c[] =
	"int lib_add(int a, int b) { return a + b * 3; }\n"
	"int lib_mul(int a, int b) { return a * b - 1; }\n"
	"static int hidden(int x) { return x ^ 0x55; }\n"
	"int lib_use(int x) { return hidden(x) + lib_add(x, 1); }\n";

/* ---- Reference output: nm, objdump, addr2line ----------------------------------- */

struct func {
	uint64_t start, size;
	char name[256];
};

/* Functions of the program's own source: sized text symbols, less the C
 * runtime's start files (no DWARF; addr2line names their STT_FILE). */
static size_t list_funcs(const char *bin, struct func *out, size_t max)
{
	char *txt = capture("nm -n -S --defined-only '%s'", bin);
	size_t n = 0;
	for (char *line = txt ? strtok(txt, "\n") : NULL; line && n < max; line = strtok(NULL, "\n")) {
		unsigned long long a, s;
		char t, name[256];
		if (sscanf(line, "%llx %llx %c %255s", &a, &s, &t, name) != 4)
			continue;
		if (!strchr("TtWw", t) || s == 0)
			continue;
		if ((name[0] == '_' && name[1] != 'Z') || strstr(name, "register_tm_clones") ||
		    strcmp(name, "frame_dummy") == 0)
			continue;
		out[n].start = a;
		out[n].size = s;
		snprintf(out[n].name, sizeof(out[n].name), "%s", name);
		n++;
	}
	free(txt);
	return n;
}

/* The function of FUNCS (sorted by start, as nm -n gives them) covering A. */
static const struct func *func_at(const struct func *funcs, size_t nf, uint64_t a)
{
	size_t lo = 0, hi = nf;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (funcs[mid].start <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && lo - i <= 4;) /* a few nested/alias symbols */
		if (a < funcs[i].start + funcs[i].size)
			return &funcs[i];
	return NULL;
}

/* The objdump that disassembles BIN: the build machine's binutils know
 * its own machine only, and an AArch64 build tested under qemu-user reads
 * its own AArch64 code here: such a file goes to aarch64-linux-gnu-objdump
 * where that is installed. */
static const char *objdump_for(const char *bin)
{
	unsigned char h[20];
	FILE *f = fopen(bin, "rb");
	bool a64 = f && fread(h, 1, sizeof(h), f) == sizeof(h) && h[18] == 183 && h[19] == 0;
	if (f)
		fclose(f);
	return a64 && run("aarch64-linux-gnu-objdump --version") ? "aarch64-linux-gnu-objdump"
								   : "objdump";
}

/* Every instruction address objdump shows inside FUNCS. */
static size_t list_insns(const char *bin, const struct func *funcs, size_t nf, uint64_t *out,
			 size_t max)
{
	char *txt = capture("%s -d --no-show-raw-insn '%s'", objdump_for(bin), bin);
	size_t n = 0;
	for (char *line = txt ? strtok(txt, "\n") : NULL; line && n < max; line = strtok(NULL, "\n")) {
		char *p = line;
		while (*p == ' ')
			p++;
		char *end;
		unsigned long long a = strtoull(p, &end, 16);
		if (end == p || *end != ':' || p == line)
			continue;
		if (func_at(funcs, nf, a))
			out[n++] = a;
	}
	free(txt);
	return n;
}

#define MAX_FR 16

struct a2l_frame {
	char func[256];
	char file[256]; /* "" for ?? */
	unsigned line;  /* 0 for ? */
};

struct a2l {
	uint64_t addr;
	int n;
	struct a2l_frame fr[MAX_FR];
};

static void parse_loc(const char *s, struct a2l_frame *fr)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", s);
	char *d = strstr(buf, " (discriminator");
	if (d)
		*d = '\0';
	char *colon = strrchr(buf, ':');
	if (colon)
		*colon = '\0';
	snprintf(fr->file, sizeof(fr->file), "%s", strcmp(buf, "??") == 0 ? "" : buf);
	fr->line = colon && isdigit((unsigned char)colon[1]) ? (unsigned)strtoul(colon + 1, NULL, 10) : 0;
}

/* TOOL (addr2line, llvm-addr2line) -a -f -i -C for ADDRS; results in OUT
 * (same order). */
static bool addr2line_with(const char *tool, const char *bin, const uint64_t *addrs, size_t n,
			   struct a2l *out)
{
	FILE *in = fopen(tpath_tmp("addrs.txt"), "w");
	if (!in)
		return false;
	for (size_t i = 0; i < n; i++)
		fprintf(in, "0x%" PRIx64 "\n", addrs[i]);
	if (fclose(in) != 0)
		return false;
	char *txt = capture("%s -a -f -i -C -e '%s' < addrs.txt", tool, bin);
	if (!txt)
		return false;
	struct a2l *cur = NULL;
	bool want_func = true;
	size_t got = 0;
	char *save = NULL;
	for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0x", 2) == 0 && want_func) {
			if (got >= n)
				break;
			cur = &out[got++];
			cur->addr = strtoull(line, NULL, 16);
			cur->n = 0;
			continue;
		}
		if (!cur)
			continue;
		if (want_func) {
			if (cur->n < MAX_FR)
				snprintf(cur->fr[cur->n].func, sizeof(cur->fr[0].func), "%s", line);
			want_func = false;
		} else {
			if (cur->n < MAX_FR)
				parse_loc(line, &cur->fr[cur->n]);
			cur->n++;
			want_func = true;
		}
	}
	free(txt);
	return got == n;
}

/* ---- Differential check ----------------------------------------------------------- */

struct diff_stats {
	size_t addrs, frames, inlined, same, llvm_agrees, bfd_pattern, default_file, unexplained;
};
static struct diff_stats total;
static int have_llvm = -1; /* llvm-addr2line present: the referee */

/* One (file, line) row of readelf's decoded line table. */
struct row_file {
	uint64_t addr;
	char file[256];
};

/* Every row of BIN as readelf --debug-dump=decodedline decodes it (its own
 * line-program decoder starts the DWARF 5 file register at 1, as the
 * standard says). */
static size_t readelf_rows(const char *bin, struct row_file *out, size_t max)
{
	char *txt = capture("readelf -W --debug-dump=decodedline '%s'", bin);
	size_t n = 0;
	for (char *line = txt ? strtok(txt, "\n") : NULL; line && n < max; line = strtok(NULL, "\n")) {
		char file[256];
		unsigned ln;
		unsigned long long a;
		if (sscanf(line, "%255s %u %llx", file, &ln, &a) == 3 && strchr(line, 'x')) {
			out[n].addr = a;
			snprintf(out[n].file, sizeof(out[n].file), "%s", file);
			n++;
		}
	}
	free(txt);
	return n;
}

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

static bool same_func(const char *ours, const char *theirs)
{
	return strcmp(theirs, "??") == 0 ? ours == NULL : ours && strcmp(ours, theirs) == 0;
}

static bool same_file(const char *ours, const char *theirs)
{
	return theirs[0] ? ours && strcmp(ours, theirs) == 0 : ours == NULL;
}

/* Frames, names, files, lines and inlined flags all equal. *FILE_ONLY: the
 * only difference is the innermost frame's file. */
static bool same_frames(const struct sym_frame *fr, int n, const struct a2l *w, bool *file_only)
{
	*file_only = false;
	/* Code without DWARF: addr2line names the object through the STT_FILE
	 * symbol before the function ("crtstuff.c:?", "cp-demangle.o:0"); we
	 * give no file. The function must still agree. */
	if (n == 1 && w->n == 1 && !fr[0].file && fr[0].line == 0 && w->fr[0].line == 0 &&
	    same_func(fr[0].function, w->fr[0].func))
		return true;
	if (n != w->n)
		return false;
	bool inner_file_differs = false;
	for (int k = 0; k < n; k++) {
		const struct a2l_frame *x = &w->fr[k];
		if (!same_func(fr[k].function, x->func) || fr[k].line != x->line ||
		    fr[k].inlined != (k < n - 1))
			return false;
		if (!same_file(fr[k].file, x->file)) {
			if (k != 0)
				return false;
			inner_file_differs = true;
		}
	}
	*file_only = inner_file_differs;
	return !inner_file_differs;
}

/* Deviations of binutils 2.40's addr2line that are known, explained and
 * confirmed by llvm-addr2line and eu-addr2line where they can read the file:
 *  (1) clang 14's DWARF 5 inlined calls (DW_AT_low_pc in DW_FORM_addrx,
 *      DW_AT_ranges in DW_FORM_rnglistx) are not shown at all: addr2line
 *      gives one frame, the real function, with the innermost file:line;
 *  (2) at the first address of an inlined call, addr2line names the inlined
 *      frame after its caller (so the same name appears twice in a row);
 *  (3) of two symbols at one address, addr2line takes the local alias gcc
 *      made (f.localalias), we the global one (f), as llvm-addr2line does. */
static bool bfd_pattern(const struct sym_frame *fr, int n, const struct a2l *w)
{
	if (n == 1 && w->n == 1 && fr[0].function && !fr[0].file && !w->fr[0].line) {
		size_t l = strlen(fr[0].function);
		if (strncmp(w->fr[0].func, fr[0].function, l) == 0 &&
		    strcmp(w->fr[0].func + l, ".localalias") == 0)
			return true;
	}
	if (n >= 2 && w->n == 1)
		return same_func(fr[n - 1].function, w->fr[0].func) &&
		       same_file(fr[0].file, w->fr[0].file) && fr[0].line == w->fr[0].line;
	if (n < 2 || n != w->n)
		return false;
	bool renamed = false;
	for (int k = 0; k < n; k++) {
		const struct a2l_frame *x = &w->fr[k];
		if (!same_file(fr[k].file, x->file) || fr[k].line != x->line)
			return false;
		if (same_func(fr[k].function, x->func))
			continue;
		if (k == n - 1 || !fr[k].function || strcmp(x->func, w->fr[k + 1].func) != 0)
			return false;
		renamed = true;
	}
	return renamed;
}

/* Does readelf's row at A name the file we give (and not addr2line's)? */
static bool readelf_file_agrees(const struct row_file *rows, size_t nrows, uint64_t a,
				const char *ours, const char *theirs)
{
	const char *re = NULL;
	uint64_t best = 0;
	for (size_t r = 0; r < nrows; r++)
		if (rows[r].addr <= a && (!re || rows[r].addr >= best)) {
			best = rows[r].addr;
			re = rows[r].file;
		}
	return re && ours && strcmp(base_name(ours), re) == 0 && strcmp(base_name(theirs), re) != 0;
}

static void print_mismatch(const struct sym_frame *fr, int n, const struct a2l *w)
{
	fprintf(stderr, "  sym (%d):\n", n);
	for (int k = 0; k < n; k++)
		fprintf(stderr, "    %s+0x%" PRIx64 " %s:%u%s\n", nz(fr[k].function), fr[k].offset,
			nz(fr[k].file), fr[k].line, fr[k].inlined ? " (inlined)" : "");
	fprintf(stderr, "  addr2line (%d):\n", w->n);
	for (int k = 0; k < w->n && k < MAX_FR; k++)
		fprintf(stderr, "    %s %s:%u\n", w->fr[k].func, w->fr[k].file, w->fr[k].line);
}

#define DIFF_CHUNK 1000

/* Keep the functions addr2line gives a source line for at their first
 * byte (code with DWARF: the sanitizer runtime and libc's start files have
 * none). FUNCS stays sorted. */
static size_t keep_dwarf_funcs(const char *bin, struct func *funcs, size_t nf)
{
	static uint64_t starts[DIFF_CHUNK];
	static struct a2l w[DIFF_CHUNK];
	size_t kept = 0;
	for (size_t base = 0; base < nf; base += DIFF_CHUNK) {
		size_t chunk = nf - base < DIFF_CHUNK ? nf - base : DIFF_CHUNK;
		for (size_t i = 0; i < chunk; i++)
			starts[i] = funcs[base + i].start;
		if (!addr2line_with("addr2line", bin, starts, chunk, w))
			return 0;
		for (size_t i = 0; i < chunk; i++)
			if (w[i].n >= 1 && w[i].n <= MAX_FR && w[i].fr[w[i].n - 1].line > 0)
				funcs[kept++] = funcs[base + i];
	}
	return kept;
}
#define MAX_FUNCS 8192
#define MAX_ADDRS 100000

/* Compare sym_lookup on SYMFILE (opened with DEBUG, NULL: found or none)
 * with addr2line on REF at every instruction of REF's own functions (at
 * most MAX_ADDRS). Where they differ, llvm-addr2line referees when it is
 * installed; otherwise only the known bfd deviations are accepted. */
static void diff_file(const char *label, const char *ref, const char *symfile, const char *debug,
		      bool dwarf_only)
{
	static struct func funcs[MAX_FUNCS];
	static uint64_t addrs[MAX_ADDRS], undecided[DIFF_CHUNK];
	static struct a2l want[DIFF_CHUNK], referee[DIFF_CHUNK];
	static struct row_file rows[65536];
	size_t nf = list_funcs(ref, funcs, MAX_FUNCS);
	if (dwarf_only)
		nf = keep_dwarf_funcs(ref, funcs, nf);
	size_t na = list_insns(ref, funcs, nf, addrs, MAX_ADDRS);
	CHECK(nf >= 3 && na >= 20, "%s: %zu functions, %zu instructions", label, nf, na);
	size_t nrows = readelf_rows(ref, rows, BK_ARRAY_LEN(rows));
	if (have_llvm < 0)
		have_llvm = !getenv("BK_SYM_NO_LLVM") && run("llvm-addr2line --version");

	struct sym_file *f = NULL;
	int err = sym_open(symfile, debug, &f);
	CHECK_INT(err, 0, label);
	if (err)
		return;
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK(st.dwarf && st.cus >= 1 && st.cus_failed == 0, "%s: dwarf %d cus %zu failed %zu",
	      label, st.dwarf, st.cus, st.cus_failed);

	struct diff_stats d = { .addrs = na };
	size_t shown = 0;
	const size_t show_max = getenv("BK_SYM_SHOW") ? strtoul(getenv("BK_SYM_SHOW"), NULL, 10) : 6;
	struct sym_frame fr[MAX_FR];
	for (size_t base = 0; base < na; base += DIFF_CHUNK) {
		size_t chunk = na - base < DIFF_CHUNK ? na - base : DIFF_CHUNK, nund = 0;
		if (!addr2line_with("addr2line", ref, addrs + base, chunk, want)) {
			CHECK(0, "%s: addr2line failed", label);
			break;
		}
		for (size_t i = 0; i < chunk; i++) {
			uint64_t a = addrs[base + i];
			const struct a2l *w = &want[i];
			int n = sym_lookup(f, a, fr, MAX_FR);
			d.frames += (size_t)(n > 0 ? n : 0);
			d.inlined += (size_t)(n > 1 ? n - 1 : 0);

			/* The outermost offset is from the symbol covering the
			 * address; inlined frames have neither. */
			const struct func *fn = func_at(funcs, nf, a);
			bool offsets = n > 0 && fn && fr[n - 1].symbol &&
				       fr[n - 1].offset == a - fn->start;
			for (int k = 0; k < n - 1; k++)
				offsets = offsets && fr[k].offset == 0 && fr[k].symbol == NULL;
			CHECK(offsets, "%s: 0x%" PRIx64 " offsets", label, a);

			bool file_only;
			if (w->addr == a && same_frames(fr, n, w, &file_only)) {
				d.same++;
			} else if (w->addr == a && file_only &&
				   readelf_file_agrees(rows, nrows, a, fr[0].file, w->fr[0].file)) {
				d.default_file++; /* addr2line's DWARF 5 default-file bug */
			} else if (have_llvm) {
				undecided[nund++] = a; /* for the referee, below */
			} else if (bfd_pattern(fr, n, w)) {
				d.bfd_pattern++;
			} else {
				d.unexplained++;
				CHECK(0, "%s: 0x%" PRIx64 " differs from addr2line", label, a);
				if (shown++ < show_max) {
					fprintf(stderr, "%s: 0x%" PRIx64 ":\n", label, a);
					print_mismatch(fr, n, w);
				}
			}
		}
		/* The referee, in one batch per chunk. */
		if (nund && !addr2line_with("llvm-addr2line", ref, undecided, nund, referee)) {
			CHECK(0, "%s: llvm-addr2line failed", label);
			continue;
		}
		for (size_t i = 0; i < nund; i++) {
			bool file_only;
			int n = sym_lookup(f, undecided[i], fr, MAX_FR);
			bool ok = referee[i].addr == undecided[i] &&
				  same_frames(fr, n, &referee[i], &file_only);
			d.llvm_agrees += ok;
			d.unexplained += !ok;
			CHECK(ok, "%s: 0x%" PRIx64 " differs from addr2line and llvm-addr2line", label,
			      undecided[i]);
			if (!ok && shown++ < show_max) {
				fprintf(stderr, "%s: 0x%" PRIx64 " (llvm-addr2line):\n", label,
					undecided[i]);
				print_mismatch(fr, n, &referee[i]);
			}
		}
	}
	printf("%-26s %4zu functions %5zu addresses %5zu frames (%4zu inlined): %5zu as addr2line; "
	       "else %zu as llvm-addr2line, %zu known bfd deviations, %zu default-file rows; "
	       "%zu unexplained\n",
	       label, nf, na, d.frames, d.inlined, d.same, d.llvm_agrees, d.bfd_pattern,
	       d.default_file, d.unexplained);
	total.addrs += d.addrs;
	total.frames += d.frames;
	total.inlined += d.inlined;
	total.same += d.same;
	total.llvm_agrees += d.llvm_agrees;
	total.bfd_pattern += d.bfd_pattern;
	total.default_file += d.default_file;
	total.unexplained += d.unexplained;
	sym_close(f);
}

/* ---- Individual checks ----------------------------------------------------------------- */

static void test_demangle(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "_Z3runi", "run(int)" },
		{ "_ZN5outer5inner3mixIlEET_S2_S2_", "long outer::inner::mix<long>(long, long)" },
		{ "_ZNK3foo3barEv", "foo::bar() const" },
		{ "_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write" }, /* Rust legacy */
		{ "_RNvCs15kBYyAo9fc_7mycrate7example", "mycrate::example" },   /* Rust v0 */
		{ "_ZN3std2io5stdio6_print17h1a2b3c4d5e6f7a8bE", "std::io::stdio::_print" },
		{ "main", NULL },
		{ "_Zzzz", NULL },
		{ "_R", NULL },
		{ "", NULL },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(cases); i++) {
		char *d = sym_demangle(cases[i].in);
		if (cases[i].out)
			CHECK_STR(d, cases[i].out, cases[i].in);
		else
			CHECK(d == NULL, "%s: got %s", cases[i].in, d);
		base_free(d);
	}
	CHECK(sym_demangle(NULL) == NULL, "NULL");
	/* Too long for the stack-bounded demangler: left mangled. */
	size_t len = SYM_MAX_MANGLED + 10;
	char *big = malloc(len + 1);
	memcpy(big, "_Z3fooIiE", 9);
	memset(big + 9, 'i', len - 9);
	big[len] = '\0';
	CHECK(sym_demangle(big) == NULL, "over-long name");
	free(big);
}

static void test_errors(void)
{
	struct sym_file *f = (struct sym_file *)1;
	CHECK_INT(sym_open(tpath("does-not-exist"), NULL, &f), BK_E_IO, "missing file");
	CHECK(f == NULL, "out cleared on error");
	CHECK_INT(sym_open(tmp, NULL, &f), BK_E_IO, "directory");
	write_file("not_elf.txt", "this is not an ELF file, just some text\n");
	CHECK_INT(sym_open(tpath("not_elf.txt"), NULL, &f), BK_E_NOT_ELF, "text file");
	write_file("empty", "");
	CHECK_INT(sym_open(tpath("empty"), NULL, &f), BK_E_NOT_ELF, "empty file");
	CHECK_INT(sym_open(NULL, NULL, &f), BK_E_INVAL, "NULL path");
	CHECK_INT(sym_open(tpath("empty"), NULL, NULL), BK_E_INVAL, "NULL out");
	sym_close(NULL);
}

/* A shared library stripped of .symtab and DWARF, with no debug file
 * anywhere: names come from .dynsym alone. */
static void test_dynsym_only(void)
{
	if (!run("gcc -O2 -g -shared -fPIC -o libt.so lib.c && mkdir -p nodebug && "
		 "strip --strip-all -o nodebug/libt.so libt.so")) {
		printf("SKIP: cannot build a stripped shared library\n");
		return;
	}
	struct func funcs[16];
	size_t nf = list_funcs(tpath("libt.so"), funcs, BK_ARRAY_LEN(funcs));
	struct sym_file *f;
	int err = sym_open(tpath("nodebug/libt.so"), NULL, &f);
	CHECK_INT(err, 0, "open stripped .so");
	if (err)
		return;
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK_INT(st.symbol_source, 3, ".dynsym is the source");
	CHECK(!st.dwarf && !st.used_debug_file, "no DWARF, no debug file");
	size_t exported = 0;
	for (size_t i = 0; i < nf; i++) {
		bool is_export = strncmp(funcs[i].name, "lib_", 4) == 0;
		uint64_t a = funcs[i].start + funcs[i].size / 2;
		struct sym_frame fr[4];
		int n = sym_lookup(f, a, fr, 4);
		if (!is_export)
			continue; /* hidden(): inlined or local, not in .dynsym */
		exported++;
		CHECK_INT(n, 1, funcs[i].name);
		if (n == 1) {
			CHECK_STR(fr[0].function, funcs[i].name, "dynsym name");
			CHECK_STR(fr[0].symbol, funcs[i].name, "dynsym symbol");
			CHECK_U64(fr[0].offset, funcs[i].size / 2, funcs[i].name);
			CHECK(fr[0].file == NULL && fr[0].line == 0 && !fr[0].inlined, "%s: no source",
			      funcs[i].name);
		}
	}
	CHECK_INT(exported, 3, "exported functions found by nm");
	struct sym_frame fr[2];
	CHECK_INT(sym_lookup(f, 0, fr, 2), 0, "address 0: nothing");
	CHECK_INT(sym_lookup(f, UINT64_MAX - 5, fr, 2), 0, "high address: nothing");
	sym_close(f);
}

/* MiniDebugInfo as Fedora makes it (the .symtab entries .dynsym lacks, in
 * an xz-compressed ELF file in .gnu_debugdata of the stripped file): every
 * function of the unstripped library is named again, local ones too. A
 * .gnu_debugdata that is not xz leaves .dynsym's names, nothing worse. */
static void test_minidebuginfo(void)
{
	write_file("mdi.c", "static __attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }\n"
			    "static __attribute__((noinline)) int mid(int x) { return leaf(x) ^ 5; }\n"
			    "int lib_a(int x) { return mid(x) + 1; }\n"
			    "int lib_b(int x) { return leaf(x) - 2; }\n");
	if (!run("gcc -O2 -g -shared -fPIC -o libmdi.so mdi.c && "
		 "nm -D --format=posix --defined-only libmdi.so | awk '{print $1}' | sort > mdi.dyn && "
		 "nm --format=posix --defined-only libmdi.so | awk '$2 ~ /[TtW]/ {print $1}' | sort "
		 "> mdi.func && comm -13 mdi.dyn mdi.func > mdi.keep && "
		 "objcopy --only-keep-debug libmdi.so mdi.debug && "
		 "objcopy -S --remove-section .gdb_index --remove-section .comment "
		 "--keep-symbols=mdi.keep mdi.debug mdi.mini && rm -f mdi.mini.xz && xz mdi.mini && "
		 "strip --strip-all -R .comment -o libt_mdi.so libmdi.so && "
		 "objcopy --add-section .gnu_debugdata=mdi.mini.xz libt_mdi.so && "
		 "printf 'not xz at all' > mdi.junk && strip --strip-all -o libt_junk.so libmdi.so && "
		 "objcopy --add-section .gnu_debugdata=mdi.junk libt_junk.so")) {
		CHECK(0, "cannot build a library with MiniDebugInfo");
		return;
	}
	struct func funcs[16];
	size_t nf = list_funcs(tpath("libmdi.so"), funcs, BK_ARRAY_LEN(funcs));
	struct sym_file *f = NULL, *junk = NULL;
	CHECK_INT(sym_open(tpath("libt_mdi.so"), NULL, &f), 0, "open with MiniDebugInfo");
	CHECK_INT(sym_open(tpath("libt_junk.so"), NULL, &junk), 0, "open with a junk .gnu_debugdata");
	if (!f || !junk) {
		sym_close(f);
		sym_close(junk);
		return;
	}
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK_INT(st.symbol_source, 4, ".dynsym and .gnu_debugdata are the source");
	sym_get_stats(junk, &st);
	CHECK_INT(st.symbol_source, 3, "junk .gnu_debugdata: .dynsym alone");
	size_t named = 0, local = 0, junk_named = 0;
	for (size_t i = 0; i < nf; i++) {
		uint64_t a = funcs[i].start + funcs[i].size / 2;
		struct sym_frame fr[4];
		int n = sym_lookup(f, a, fr, 4);
		bool ok = n == 1 && fr[0].function && !strcmp(fr[0].function, funcs[i].name) &&
			  fr[0].offset == funcs[i].size / 2;
		CHECK(ok, "MiniDebugInfo names %s", funcs[i].name);
		named += ok;
		local += ok && strncmp(funcs[i].name, "lib_", 4) != 0;
		n = sym_lookup(junk, a, fr, 4);
		junk_named += n == 1 && fr[0].function && !strcmp(fr[0].function, funcs[i].name);
	}
	CHECK(nf > 3 && named == nf && local > 0, "%zu of %zu functions named, %zu not exported",
	      named, nf, local);
	CHECK_INT(junk_named, 2, "junk .gnu_debugdata: the exported ones only");
	sym_close(f);
	sym_close(junk);
}

/* sym_open_memory: a file's bytes give the answers its path gives (the
 * stripped library: .dynsym); this process's vDSO, laid out by
 * ldr_open_loaded from its mapping, names its functions. */
static void test_memory_image(void)
{
	size_t len = 0;
	uint8_t *bytes = slurp(tpath("nodebug/libt.so"), &len);
	struct sym_file *a = NULL, *b = NULL;
	CHECK(bytes && sym_open(tpath("nodebug/libt.so"), NULL, &a) == 0 &&
	      sym_open_memory(bytes, len, 0, &b) == 0, "open by path and from memory");
	free(bytes); /* copied */
	if (a && b) {
		CHECK(a->nsyms > 0 && a->nsyms == b->nsyms, "the same symbols: %zu, %zu", a->nsyms,
		      b->nsyms);
		int same = 0;
		for (size_t i = 0; i < a->nsyms && i < b->nsyms; i++) {
			struct sym_frame fa[4], fb[4];
			uint64_t at = a->syms[i].start + (a->syms[i].end - a->syms[i].start) / 2;
			int na = sym_lookup(a, at, fa, 4), nb = sym_lookup(b, at, fb, 4);
			same += na == nb && na == 1 && !strcmp(fa[0].function, fb[0].function) &&
				fa[0].offset == fb[0].offset;
		}
		CHECK((size_t)same == a->nsyms, "%d of %zu lookups the same", same, a->nsyms);
	}
	sym_close(a);
	sym_close(b);
	CHECK_INT(sym_open_memory(NULL, 10, 0, &b), BK_E_INVAL, "no image");
	uint8_t junk[64] = { 0 };
	CHECK(sym_open_memory(junk, sizeof(junk), 0, &b) != 0 && !b, "not ELF");

	/* A loaded image without section headers (a deleted library's in a
	 * core): named from its dynamic segment, whose addresses the dynamic
	 * loader may have relocated in memory (here: by BIAS, or not at all). */
	for (int relocated = 0; relocated < 2; relocated++) {
		const int64_t bias = relocated ? 0x7f1234560000 : 0;
		struct ldr_elf *fl = NULL;
		uint8_t *fb = slurp(tpath("nodebug/libt.so"), &len);
		CHECK(fb && ldr_open_memory(fb, len, &fl) == 0, "libt.so as a file");
		if (!fl) {
			free(fb);
			break;
		}
		uint64_t span = 0;
		for (size_t i = 0; i < fl->nsegs; i++)
			if (fl->segs[i].vaddr + fl->segs[i].memsz - fl->min_vaddr > span)
				span = fl->segs[i].vaddr + fl->segs[i].memsz - fl->min_vaddr;
		uint8_t *im = calloc(1, span);
		for (size_t i = 0; i < fl->nsegs; i++)
			memcpy(im + fl->segs[i].vaddr - fl->min_vaddr, fb + fl->segs[i].file_off,
			       fl->segs[i].filesz);
		/* Relocate .dynamic's pointers in the image as ld.so does. */
		Elf64_Ehdr eh;
		memcpy(&eh, im, sizeof(eh));
		for (int i = 0; relocated && i < eh.e_phnum; i++) {
			Elf64_Phdr ph;
			memcpy(&ph, im + eh.e_phoff + (size_t)i * sizeof(ph), sizeof(ph));
			if (ph.p_type != PT_DYNAMIC)
				continue;
			for (uint64_t o = ph.p_vaddr - fl->min_vaddr; o + 16 <= span; o += 16) {
				Elf64_Dyn d;
				memcpy(&d, im + o, sizeof(d));
				if (d.d_tag == DT_NULL)
					break;
				if (d.d_tag == DT_SYMTAB || d.d_tag == DT_STRTAB ||
				    d.d_tag == DT_GNU_HASH || d.d_tag == DT_HASH) {
					d.d_un.d_ptr += (uint64_t)bias;
					memcpy(im + o, &d, sizeof(d));
				}
			}
		}
		struct ldr_elf *li = NULL;
		struct sym_file *ref = NULL, *got = NULL;
		const uint8_t *rb;
		size_t rlen;
		CHECK(ldr_open_loaded(im, span, NULL, 0, &li) == 0 && li->eh_frame.present,
		      "libt.so's image opens");
		if (li) {
			ldr_bytes(li, &rb, &rlen);
			CHECK(sym_open(tpath("nodebug/libt.so"), NULL, &ref) == 0 &&
			      sym_open_memory(rb, rlen, bias, &got) == 0,
			      "the image's symbols (relocated %d)", relocated);
		}
		if (ref && got) {
			struct sym_stats st;
			sym_get_stats(got, &st);
			CHECK(got->nsyms > 0 && got->nsyms == ref->nsyms && st.symbol_source == 3,
			      "relocated %d: %zu symbols by the dynamic segment, %zu by .dynsym", relocated,
			      got->nsyms, ref->nsyms);
			int same = 0;
			for (size_t i = 0; i < ref->nsyms && i < got->nsyms; i++) {
				struct sym_frame fa[4], fb2[4];
				uint64_t at = ref->syms[i].start + (ref->syms[i].end - ref->syms[i].start) / 2;
				int na = sym_lookup(ref, at, fa, 4), nb = sym_lookup(got, at, fb2, 4);
				same += na == 1 && nb == 1 && !strcmp(fa[0].function, fb2[0].function) &&
					fa[0].offset == fb2[0].offset;
			}
			CHECK((size_t)same == ref->nsyms, "relocated %d: %d of %zu names the same",
			      relocated, same, ref->nsyms);
		}
		sym_close(ref);
		sym_close(got);
		ldr_close(li);
		ldr_close(fl);
		free(im);
		free(fb);
	}

	/* The vDSO: one segment from offset 0, its section headers in the
	 * mapping but past p_filesz. */
	uint64_t lo = getauxval(AT_SYSINFO_EHDR), hi = 0;
	FILE *maps = fopen("/proc/self/maps", "r");
	char line[512];
	while (maps && fgets(line, sizeof(line), maps))
		if (strstr(line, "[vdso]")) {
			unsigned long long x, y;
			if (sscanf(line, "%llx-%llx", &x, &y) == 2 && x == lo)
				hi = y;
		}
	if (maps)
		fclose(maps);
	if (!lo || !hi) {
		/* Only where the test run says there is none (qemu-user 7.2
		 * maps no vDSO for an AArch64 guest: tests/meson.build). */
		CHECK(getenv("BK_TEST_NO_VDSO") != NULL, "no vDSO mapping");
		printf("no vDSO mapping (BK_TEST_NO_VDSO: %s): its checks not made\n",
		       getenv("BK_TEST_NO_VDSO") ? getenv("BK_TEST_NO_VDSO") : "unset");
		return;
	}
	struct ldr_elf *img = NULL;
	CHECK_INT(ldr_open_loaded((const void *)(uintptr_t)lo, hi - lo, NULL, 0, &img), 0,
		  "the vDSO's image opens");
	if (!img)
		return;
	CHECK(img->eh_frame.present && img->eh_frame_hdr.present, "its unwind sections");
	const uint8_t *file;
	size_t flen;
	ldr_bytes(img, &file, &flen);
	CHECK(flen == hi - lo && !memcmp(file, (const void *)(uintptr_t)lo, flen),
	      "the vDSO's image is its file");
	struct sym_file *v = NULL;
	CHECK_INT(sym_open_memory(file, flen, 0, &v), 0, "its symbols open");
	const char *found = NULL;
	for (size_t i = 0; v && i < v->nsyms && !found; i++) {
		if (!strstr(v->syms[i].name, "clock_gettime"))
			continue;
		struct sym_frame fr[2];
		uint64_t at = v->syms[i].start + (v->syms[i].end - v->syms[i].start) / 2;
		if (sym_lookup(v, at, fr, 2) == 1 && fr[0].function &&
		    strstr(fr[0].function, "clock_gettime"))
			found = fr[0].function;
	}
	CHECK(found != NULL, "the vDSO names clock_gettime (%zu symbols)", v ? v->nsyms : 0);
	sym_close(v);
	ldr_close(img);
}

/* The DWARF 5 default file register (sym_line.c): a header function whose
 * rows rely on file 1. readelf decodes it as the header; so must we. */
static void test_default_file(void)
{
	if (!run("gcc -O0 -g -gdwarf-5 -o fone fone.c")) {
		printf("SKIP: gcc -gdwarf-5\n");
		return;
	}
	char *nm = capture("nm fone | awk '$3 == \"helper\" { print $1 }'");
	uint64_t helper = nm ? strtoull(nm, NULL, 16) : 0;
	free(nm);
	CHECK(helper != 0, "helper found");
	struct sym_file *f;
	if (!helper || sym_open(tpath("fone"), NULL, &f) != 0)
		return;
	struct sym_frame fr[4];
	int n = sym_lookup(f, helper, fr, 4);
	CHECK_INT(n, 1, "helper frames");
	CHECK_STR(fr[0].function, "helper", "helper name");
	CHECK_STR(base_name(fr[0].file), "fone.h", "helper's file is the header (as readelf says)");
	CHECK_INT(fr[0].line, 1, "helper line");
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK(st.file_fixups > 0, "rows corrected: %zu", st.file_fixups);
	char *a2l = capture("addr2line -e fone 0x%" PRIx64, helper);
	char *re = capture("readelf --debug-dump=decodedline fone | grep -c '^fone.h '");
	printf("default file register: sym says %s:%u, readelf has %s fone.h rows, addr2line says %s",
	       base_name(fr[0].file), fr[0].line, re ? strtok(re, "\n") : "?", a2l ? a2l : "?\n");
	free(a2l);
	free(re);
	sym_close(f);
}

/* Stripped binary + separate debug file: found through .gnu_debuglink,
 * and named explicitly; the answers equal the unstripped file's. */
static void test_debug_file(bool have_gcc)
{
	if (!have_gcc || !run("objcopy --only-keep-debug prog_gcc5 prog_gcc5.debug && "
			      "objcopy --strip-all --add-gnu-debuglink=prog_gcc5.debug prog_gcc5 prog_gcc5.stripped && "
			      "mkdir -p elsewhere && cp prog_gcc5.stripped elsewhere/prog")) {
		printf("SKIP: objcopy debug file\n");
		return;
	}
	struct sym_file *f;
	int err = sym_open(tpath("prog_gcc5.stripped"), NULL, &f);
	CHECK_INT(err, 0, "open stripped, debuglink");
	if (!err) {
		struct sym_stats st;
		sym_get_stats(f, &st);
		CHECK(st.used_debug_file && st.symbol_source == 2 && st.dwarf,
		      "debuglink: debug file %d, symbols from %d, dwarf %d", st.used_debug_file,
		      st.symbol_source, st.dwarf);
		sym_close(f);
	}
	diff_file("gcc dwarf5 via debuglink", tpath("prog_gcc5"), tpath("prog_gcc5.stripped"), NULL,
		  false);
	/* Moved away from its debug file: only the explicit path finds it. */
	err = sym_open(tpath("elsewhere/prog"), NULL, &f);
	CHECK_INT(err, 0, "open stripped without its debug file");
	if (!err) {
		struct sym_stats st;
		sym_get_stats(f, &st);
		/* An executable's .dynsym defines no functions: nothing at all. */
		CHECK(!st.used_debug_file && !st.dwarf && st.symbol_source == 0,
		      "alone: debug file %d, dwarf %d, symbols from %d", st.used_debug_file, st.dwarf,
		      st.symbol_source);
		struct sym_frame fr[2];
		CHECK_INT(sym_lookup(f, st.symbols, fr, 2), 0, "stripped alone: nothing known");
		sym_close(f);
	}
	diff_file("gcc dwarf5 explicit debug", tpath("prog_gcc5"), tpath("elsewhere/prog"),
		  tpath("prog_gcc5.debug"), false);
	CHECK_INT(sym_open(tpath("elsewhere/prog"), tpath("nope.debug"), &f), BK_E_IO,
		  "explicit debug file missing");
	/* Named explicitly, the debug file comes first even for a file that
	 * has its own .symtab. */
	if (sym_open(tpath("prog_gcc5"), tpath("prog_gcc5.debug"), &f) == 0) {
		struct sym_stats st;
		sym_get_stats(f, &st);
		CHECK(st.used_debug_file && st.symbol_source == 2 && st.dwarf,
		      "explicit: debug file %d, symbols from %d, dwarf %d", st.used_debug_file,
		      st.symbol_source, st.dwarf);
		sym_close(f);
	}
}

/* A function split by gcc into f and f.cold: DWARF names both parts "f";
 * the symbol (and the offset) say which part. */
static void test_cold(void)
{
	char *nm = capture("nm -S prog_gcc5 | awk '$4 == \"checked.cold\" { print $1, $2 }'");
	unsigned long long start = 0, size = 0;
	if (!nm || sscanf(nm, "%llx %llx", &start, &size) != 2 || size == 0) {
		printf("SKIP: gcc made no checked.cold\n");
		free(nm);
		return;
	}
	free(nm);
	struct sym_file *f;
	if (sym_open(tpath("prog_gcc5"), NULL, &f) != 0)
		return;
	for (uint64_t a = start; a < start + size; a++) {
		struct sym_frame fr[MAX_FR];
		int n = sym_lookup(f, a, fr, MAX_FR);
		CHECK(n >= 1, "checked.cold+%" PRIu64 ": %d frames", (uint64_t)(a - start), n);
		if (n < 1)
			continue;
		CHECK_STR(fr[n - 1].function, "checked", "cold part: DWARF function");
		CHECK_STR(fr[n - 1].symbol, "checked.cold", "cold part: symbol");
		CHECK_U64(fr[n - 1].offset, a - start, "cold part: offset from checked.cold");
	}
	sym_close(f);
}

/* Frames beyond MAX are cut from the outside; bad arguments. */
static void test_lookup_args(void)
{
	struct sym_file *f;
	if (sym_open(tpath("prog_gcc5"), NULL, &f) != 0)
		return;
	struct func funcs[64];
	size_t nf = list_funcs(tpath("prog_gcc5"), funcs, BK_ARRAY_LEN(funcs));
	static uint64_t addrs[4096];
	size_t na = list_insns(tpath("prog_gcc5"), funcs, nf, addrs, BK_ARRAY_LEN(addrs));
	struct sym_frame fr[MAX_FR], one;
	size_t deep = 0;
	for (size_t i = 0; i < na; i++) {
		int n = sym_lookup(f, addrs[i], fr, MAX_FR);
		if (n < 2)
			continue;
		deep++;
		CHECK_INT(sym_lookup(f, addrs[i], &one, 1), 1, "max 1");
		CHECK(one.function == fr[0].function && one.line == fr[0].line && one.inlined,
		      "max 1 gives the innermost");
	}
	CHECK(deep > 0, "some inlined addresses in prog_gcc5");
	CHECK_INT(sym_lookup(f, addrs[0], fr, 0), BK_E_INVAL, "max 0");
	CHECK_INT(sym_lookup(f, addrs[0], NULL, 4), BK_E_INVAL, "NULL frames");
	CHECK_INT(sym_lookup(NULL, addrs[0], fr, 4), BK_E_INVAL, "NULL file");
	sym_close(f);
}

/* ---- Hostile input ----------------------------------------------------------------------- */

struct shdr_info {
	uint64_t off, size;
};

/* Section NAME of a little-endian ELF64 image (enough for our own files). */
static bool find_section(const uint8_t *img, size_t len, const char *name, struct shdr_info *out)
{
	if (len < 64 || memcmp(img, "\177ELF", 4) != 0 || img[4] != 2)
		return false;
	uint64_t shoff;
	uint16_t shentsize, shnum, shstrndx;
	memcpy(&shoff, img + 0x28, 8);
	memcpy(&shentsize, img + 0x3a, 2);
	memcpy(&shnum, img + 0x3c, 2);
	memcpy(&shstrndx, img + 0x3e, 2);
	if (shentsize != 64 || shoff > len || (uint64_t)shnum * 64 > len - shoff || shstrndx >= shnum)
		return false;
	const uint8_t *strh = img + shoff + (uint64_t)shstrndx * 64;
	uint64_t stroff;
	memcpy(&stroff, strh + 0x18, 8);
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *sh = img + shoff + (uint64_t)i * 64;
		uint32_t nm;
		uint64_t off, size;
		memcpy(&nm, sh, 4);
		memcpy(&off, sh + 0x18, 8);
		memcpy(&size, sh + 0x20, 8);
		if (stroff + nm >= len)
			continue;
		if (strcmp((const char *)img + stroff + nm, name) == 0 && off <= len && size <= len - off) {
			out->off = off;
			out->size = size;
			return true;
		}
	}
	return false;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15u;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Damage the DWARF of SRC in many ways; sym_open and lookups must survive. */
static void test_corrupt(const char *src, const char *label)
{
	size_t len;
	uint8_t *orig = slurp(src, &len);
	if (!orig) {
		printf("SKIP: %s not built\n", label);
		return;
	}
	static const char *secs[] = { ".debug_info", ".debug_abbrev", ".debug_line",
				      ".debug_rnglists", ".debug_ranges", ".debug_str",
				      ".debug_line_str", ".debug_addr", ".debug_str_offsets",
				      ".debug_aranges" };
	struct func funcs[64];
	size_t nf = list_funcs(src, funcs, BK_ARRAY_LEN(funcs));
	uint8_t *img = malloc(len);
	char *path = tpath("corrupt.bin");
	size_t variants = 0, opened = 0, degraded = 0;
	/* BK_SYM_CORRUPT_ROUNDS=N repeats with fresh random damage (soak runs). */
	const char *env = getenv("BK_SYM_CORRUPT_ROUNDS");
	long rounds = env ? strtol(env, NULL, 10) : 1;
	for (long round = 0; round < (rounds > 0 ? rounds : 1); round++)
	for (size_t s = 0; s < BK_ARRAY_LEN(secs); s++) {
		struct shdr_info sh;
		if (!find_section(orig, len, secs[s], &sh) || sh.size == 0)
			continue;
		for (int v = 0; v < 24; v++) {
			memcpy(img, orig, len);
			uint8_t *p = img + sh.off;
			switch (v % 4) {
			case 0: /* a few random bytes */
				for (int k = 0; k < 1 + v / 4; k++)
					p[rng() % sh.size] ^= (uint8_t)(1 + rng() % 255);
				break;
			case 1: /* the second half zeroed: truncated contents */
				memset(p + sh.size / 2, 0, sh.size - sh.size / 2);
				break;
			case 2: /* a run of 0xff (huge lengths, LEB128 without end) */
			{
				size_t at = rng() % sh.size, n = 1 + rng() % 16;
				for (size_t k = 0; k < n && at + k < sh.size; k++)
					p[at + k] = 0xff;
				break;
			}
			default: /* many random bytes */
				for (size_t k = 0; k < sh.size / 16 + 1; k++)
					p[rng() % sh.size] = (uint8_t)rng();
				break;
			}
			spit(path, img, len);
			variants++;
			struct sym_file *f = NULL;
			int err = sym_open(path, NULL, &f);
			CHECK(err == 0 || err == BK_E_CORRUPT, "%s %s v%d: open %d", label, secs[s], v, err);
			if (err)
				continue;
			opened++;
			struct sym_frame fr[MAX_FR];
			bool sane = true;
			/* Lazily (units read as the lookups reach them), then with
			 * every unit read at once. */
			for (int pass = 0; pass < 2; pass++) {
				if (pass == 1)
					CHECK_INT(sym_index_all(f), 0, "index a damaged copy whole");
				for (size_t i = 0; i < nf; i++)
					for (uint64_t a = funcs[i].start; a < funcs[i].start + funcs[i].size;
					     a += 3) {
						int n = sym_lookup(f, a, fr, MAX_FR);
						sane = sane && n >= 0 && n <= MAX_FR;
						for (int k = 0; k < n; k++)
							sane = sane && (k == n - 1 || fr[k].offset == 0);
					}
			}
			CHECK(sane, "%s %s v%d: lookups sane", label, secs[s], v);
			/* Damage is found as units are read: count it after the lookups. */
			struct sym_stats st;
			sym_get_stats(f, &st);
			degraded += st.cus_failed > 0;
			sym_close(f);
		}
	}
	printf("%s: %zu damaged copies, %zu opened, %zu reported failed CUs, no crash\n", label,
	       variants, opened, degraded);
	CHECK(variants >= 48, "%s: damaged %zu", label, variants);
	CHECK(opened == variants, "%s: every damaged copy opens (DWARF damage is not an error)",
	      label);
	free(img);
	free(orig);
}

/* A .debug_rnglists header libdwarf 20210528 would crash on (a version
 * other than 5): the DWARF is refused whole, the symbols still work. */
static void test_rejected(void)
{
	size_t len;
	uint8_t *img = slurp(tpath("prog_gcc5"), &len);
	struct shdr_info sh;
	if (!img || !find_section(img, len, ".debug_rnglists", &sh) || sh.size < 12) {
		printf("SKIP: prog_gcc5 has no .debug_rnglists\n");
		free(img);
		return;
	}
	img[sh.off + 4] = 4; /* version 5 -> 4 */
	spit(tpath("rejected.bin"), img, len);
	free(img);
	struct sym_file *f;
	int err = sym_open(tpath("rejected.bin"), NULL, &f);
	CHECK_INT(err, 0, "open with a bad .debug_rnglists header");
	if (err)
		return;
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK(st.dwarf_rejected && !st.dwarf && st.cus_failed == 1 && st.symbol_source == 1,
	      "rejected %d dwarf %d failed %zu symbols %d", st.dwarf_rejected, st.dwarf,
	      st.cus_failed, st.symbol_source);
	char *nm = capture("nm prog_gcc5 | awk '$3 == \"compute\" { print $1 }'");
	uint64_t a = nm ? strtoull(nm, NULL, 16) : 0;
	free(nm);
	struct sym_frame fr[4];
	CHECK_INT(sym_lookup(f, a + 1, fr, 4), 1, "symbol only");
	CHECK_STR(fr[0].function, "compute", "name from .symtab");
	CHECK(fr[0].file == NULL && fr[0].offset == 1, "no file, offset 1");
	sym_close(f);
}

/* DIEs nested deeper than SYM_MAX_DIE_DEPTH (lexical blocks, 300 deep):
 * the walk stops there, counts the CU as failed, and the rest stands. */
static void test_deep_nesting(void)
{
	FILE *src = fopen(tpath("deep.c"), "w");
	if (!src)
		return;
	fputs("int deep(int n)\n{\n\tint r = n;\n", src);
	for (int i = 0; i < 300; i++)
		fprintf(src, "\t{ volatile int v%d = r + %d; r ^= v%d;\n", i, i, i);
	for (int i = 0; i < 300; i++)
		fputs("\t}\n", src);
	fputs("\treturn r;\n}\nint main(int c, char **v) { (void)v; return deep(c); }\n", src);
	fclose(src);
	if (!run("gcc -O0 -g -o deep deep.c")) {
		printf("SKIP: cannot build deep.c\n");
		return;
	}
	struct sym_file *f;
	int err = sym_open(tpath("deep"), NULL, &f);
	CHECK_INT(err, 0, "open deep");
	if (err)
		return;
	char *nm = capture("nm -S deep | awk '$4 == \"deep\" { print $1, $2 }'");
	unsigned long long start = 0, size = 0;
	if (nm && sscanf(nm, "%llx %llx", &start, &size) == 2) {
		struct a2l w;
		uint64_t a = start + size / 2;
		struct sym_frame fr[4];
		int n = sym_lookup(f, a, fr, 4);
		bool ok = addr2line_with("addr2line", tpath("deep"), &a, 1, &w);
		CHECK(ok && n == 1 && w.n == 1, "deep: %d frames, addr2line %d", n, w.n);
		if (ok && n == 1 && w.n == 1) {
			CHECK_STR(fr[0].function, w.fr[0].func, "deep: name");
			CHECK_STR(fr[0].file, w.fr[0].file, "deep: file");
			CHECK_INT(fr[0].line, w.fr[0].line, "deep: line");
		}
	}
	free(nm);
	/* The unit is read (and its depth found too great) by the lookup. */
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK(st.dwarf && st.cus_failed == 1, "deep: dwarf %d, failed CUs %zu", st.dwarf,
	      st.cus_failed);
	sym_close(f);
}

/* One lookup's frames, for comparing two lookups. */
struct frames {
	int n;
	struct sym_frame fr[MAX_FR];
};

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static bool frames_equal(const struct frames *x, const struct frames *y)
{
	if (x->n != y->n)
		return false;
	for (int k = 0; k < x->n; k++) {
		const struct sym_frame *a = &x->fr[k], *b = &y->fr[k];
		if (!same_str(a->function, b->function) || !same_str(a->symbol, b->symbol) ||
		    !same_str(a->file, b->file) || a->offset != b->offset || a->line != b->line ||
		    a->column != b->column || a->inlined != b->inlined)
			return false;
	}
	return true;
}

static void print_frames(const char *who, const struct frames *x)
{
	fprintf(stderr, "  %s (%d):\n", who, x->n);
	for (int k = 0; k < x->n; k++)
		fprintf(stderr, "    %s [%s]+0x%" PRIx64 " %s:%u:%u%s\n", nz(x->fr[k].function),
			nz(x->fr[k].symbol), x->fr[k].offset, nz(x->fr[k].file), x->fr[k].line,
			x->fr[k].column, x->fr[k].inlined ? " (inlined)" : "");
}

/* Every allocation of sym_open and of the first lookups after it failing in
 * turn: BK_E_NOMEM or success, never a crash, never a wrong answer, and
 * (under ASan) never a leak; a lookup that failed gives the right answer
 * when asked again. */
static void test_nomem(void)
{
	struct sym_file *f;
	size_t fails = 0, oks = 0, lookup_fails = 0;
	const char *prog = tpath("prog_gcc5");
	struct func funcs[64];
	size_t nf = list_funcs(prog, funcs, BK_ARRAY_LEN(funcs));
	uint64_t addrs[8];
	size_t na = 0;
	for (size_t i = 0; i < nf && na < BK_ARRAY_LEN(addrs); i++)
		addrs[na++] = funcs[i].start + funcs[i].size / 2;
	static struct frames want[8], got;
	struct sym_file *ref; /* open while WANT's strings are used */
	if (sym_open(prog, NULL, &ref) != 0)
		return;
	for (size_t i = 0; i < na; i++)
		want[i].n = sym_lookup(ref, addrs[i], want[i].fr, MAX_FR);
	for (unsigned long n = 1; n < 4000; n += n < 300 ? 1 : 37) {
		base_alloc_fail_after(n);
		int err = sym_open(prog, NULL, &f);
		bool failed_lookup = false, right = true;
		for (size_t i = 0; !err && i < na; i++) {
			got.n = sym_lookup(f, addrs[i], got.fr, MAX_FR);
			if (got.n == BK_E_NOMEM)
				failed_lookup = true;
			else
				right = right && frames_equal(&got, &want[i]);
		}
		base_alloc_fail_after(0);
		CHECK(err == 0 || err == BK_E_NOMEM, "fail after %lu: %d", n, err);
		CHECK(right, "fail after %lu: a lookup that did not fail is right", n);
		if (err == 0) {
			/* Asked again, with memory: every answer right. */
			for (size_t i = 0; i < na; i++) {
				got.n = sym_lookup(f, addrs[i], got.fr, MAX_FR);
				CHECK(frames_equal(&got, &want[i]), "fail after %lu: 0x%" PRIx64
				      " right when asked again", n, addrs[i]);
			}
			sym_close(f);
		}
		if (err || failed_lookup) {
			fails++;
			lookup_fails += !err;
		} else {
			oks++;
		}
	}
	printf("allocation failures: %zu reported BK_E_NOMEM (%zu in lookups), %zu opened and "
	       "looked up (failure past the end)\n",
	       fails, lookup_fails, oks);
	CHECK(fails > 20, "allocation failures exercised: %zu", fails);
	CHECK(lookup_fails > 5, "allocation failures in lookups exercised: %zu", lookup_fails);
	sym_close(ref);
}

/* ---- Lazy indexing against indexing everything -------------------------------------- */

/* Lookups on a file opened lazily and on the same file with every unit
 * indexed up front (sym_index_all: the one merged index sym_open built
 * before indexing became lazy) agree at every address of ADDRS. */
static void compare_lazy(const char *label, const char *path, const char *debug,
			 const uint64_t *addrs, size_t na)
{
	struct sym_file *lazy = NULL, *all = NULL;
	if (sym_open(path, debug, &lazy) != 0 || sym_open(path, debug, &all) != 0) {
		CHECK(0, "%s: open", label);
		sym_close(lazy);
		return;
	}
	struct sym_stats st;
	sym_get_stats(lazy, &st);
	size_t indexed_at_open = st.cus_indexed;
	CHECK_INT(sym_index_all(all), 0, label);
	static struct frames a, b;
	size_t differ = 0, frames = 0;
	for (size_t i = 0; i < na; i++) {
		a.n = sym_lookup(lazy, addrs[i], a.fr, MAX_FR);
		b.n = sym_lookup(all, addrs[i], b.fr, MAX_FR);
		frames += (size_t)(b.n > 0 ? b.n : 0);
		if (frames_equal(&a, &b))
			continue;
		if (differ++ < 4) {
			fprintf(stderr, "%s: 0x%" PRIx64 " lazy and whole index differ:\n", label,
				addrs[i]);
			print_frames("lazy", &a);
			print_frames("whole", &b);
		}
	}
	CHECK(differ == 0, "%s: %zu of %zu addresses differ between lazy and whole index", label,
	      differ, na);
	struct sym_stats sa, sb;
	sym_get_stats(lazy, &sa);
	sym_get_stats(all, &sb);
	CHECK(sb.cus_indexed == sb.cus && sa.cus_indexed <= sb.cus_indexed,
	      "%s: units read lazily %zu, whole %zu of %zu", label, sa.cus_indexed,
	      sb.cus_indexed, sb.cus);
	printf("%-34s lazy = whole index at %6zu addresses (%6zu frames); units: %zu at open, "
	       "%zu after, of %zu%s\n",
	       label, na, frames, indexed_at_open, sa.cus_indexed, sb.cus,
	       sa.aranges ? " (.debug_aranges)" : "");
	sym_close(lazy);
	sym_close(all);
}

/* Every instruction of BIN's functions, and the bytes around each
 * function (padding, the byte past its end). */
static size_t every_address(const char *bin, uint64_t *addrs, size_t max)
{
	static struct func funcs[MAX_FUNCS];
	size_t nf = list_funcs(bin, funcs, MAX_FUNCS);
	size_t na = list_insns(bin, funcs, nf, addrs, max);
	for (size_t i = 0; i < nf && na + 3 <= max; i++) {
		addrs[na++] = funcs[i].start - 1;
		addrs[na++] = funcs[i].start + funcs[i].size;
		addrs[na++] = funcs[i].start + funcs[i].size + 1;
	}
	return na;
}

/* PATH lazily against PATH indexed whole, at the addresses of REF (PATH
 * itself, or its unstripped original). */
static void test_lazy_file(const char *label, const char *ref, const char *path,
			   const char *debug)
{
	static uint64_t addrs[MAX_ADDRS];
	size_t na = every_address(ref, addrs, MAX_ADDRS);
	CHECK(na >= 20, "%s: %zu addresses", label, na);
	compare_lazy(label, path, debug, addrs, na);
}

/* A program whose units come from gcc (with .debug_aranges) and clang
 * (without): the index is checked against the unit headers, and the units
 * .debug_aranges lacks are placed by their top DIE. And gcc's output with
 * .debug_aranges removed: every unit placed by its top DIE. */
static void test_partial_aranges(void)
{
	/* prog.c from gcc, then a clang unit with a few functions of its own. */
	if (!write_file("mix_b.c", "static inline int th(int x) { return x ^ (x >> 2); }\n"
				   "__attribute__((noinline)) int mix_b(int x)\n"
				   "{\n\tint s = 0;\n\tfor (int i = 0; i < x; i++)\n"
				   "\t\ts += th(i) * 5 + (s >> 1);\n\treturn s;\n}\n"
				   "__attribute__((noinline)) int mix_c(int x) { return mix_b(x) + th(x); }\n"
				   "int (*mix_use)(int) = mix_c;\n") ||
	    !run("gcc -O2 -g -c -o mix_a.o prog.c && clang -O2 -g -c -o mix_b.o mix_b.c && "
		 "gcc -o mixed mix_a.o mix_b.o")) {
		printf("SKIP: gcc + clang mixed program\n");
	} else {
		struct sym_file *f;
		if (sym_open(tpath("mixed"), NULL, &f) == 0) {
			struct sym_stats st;
			sym_get_stats(f, &st);
			CHECK(st.aranges && st.cus_indexed == 0, "mixed: aranges %d, read at open %zu",
			      st.aranges, st.cus_indexed);
			sym_close(f);
		}
		diff_file("gcc + clang (partial aranges)", tpath("mixed"), tpath("mixed"), NULL, true);
		test_lazy_file("gcc + clang (partial aranges)", tpath("mixed"), tpath("mixed"), NULL);
	}
	if (run("objcopy --remove-section .debug_aranges prog_gcc5 prog_noar")) {
		struct sym_file *f;
		if (sym_open(tpath("prog_noar"), NULL, &f) == 0) {
			struct sym_stats st;
			sym_get_stats(f, &st);
			CHECK(!st.aranges && st.cus >= 1, "no aranges: aranges %d, CUs %zu", st.aranges,
			      st.cus);
			sym_close(f);
		}
		diff_file("gcc dwarf5 without aranges", tpath("prog_noar"), tpath("prog_noar"), NULL,
			  false);
		test_lazy_file("gcc dwarf5 without aranges", tpath("prog_noar"), tpath("prog_noar"),
			       NULL);
	}
}

/* An ET_REL object: libdwarf's own reader (it relocates), lazily too. */
static void test_relocatable(void)
{
	if (!run("gcc -O2 -g -c -o prog.o prog.c")) {
		printf("SKIP: gcc -c\n");
		return;
	}
	static uint64_t addrs[4096];
	size_t na = 0;
	for (uint64_t a = 0; a < 2048 && na < BK_ARRAY_LEN(addrs); a += 1)
		addrs[na++] = a;
	compare_lazy("gcc -c object (ET_REL)", tpath("prog.o"), NULL, addrs, na);
}

/* Opening reads no unit; a lookup reads the units covering its address
 * (at most PER_LOOKUP of them). FUNCS: functions of PATH. */
static void test_lazy_open(const char *path, const struct func *funcs, size_t nf,
			   size_t per_lookup)
{
	struct sym_file *f;
	if (sym_open(path, NULL, &f) != 0)
		return;
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK(st.dwarf && st.cus_indexed == 0 && st.line_rows == 0,
	      "%s: nothing read at open: CUs %zu, rows %zu", path, st.cus_indexed, st.line_rows);
	/* Up to the first function with source lines (the C runtime's have none). */
	struct sym_frame fr[MAX_FR];
	size_t i = 0;
	for (; i < nf; i++) {
		int n = sym_lookup(f, funcs[i].start + funcs[i].size / 2, fr, MAX_FR);
		if (n >= 1 && fr[0].file)
			break;
	}
	CHECK(i < nf, "%s: a function with lines", path);
	sym_get_stats(f, &st);
	CHECK(st.cus_indexed >= 1 && st.cus_indexed <= (i + 1) * per_lookup &&
	      st.cus_indexed < st.cus,
	      "%s: %zu lookups read %zu of %zu units", path, i + 1, st.cus_indexed, st.cus);
	sym_close(f);
}

struct thread_arg {
	struct sym_file *f;
	const uint64_t *addrs;
	const struct frames *want;
	size_t na, start, wrong;
};

static void *lookup_thread(void *p)
{
	struct thread_arg *t = p;
	struct frames got;
	for (size_t k = 0; k < t->na; k++) {
		size_t i = (t->start + k * 7) % t->na;
		got.n = sym_lookup(t->f, t->addrs[i], got.fr, MAX_FR);
		t->wrong += !frames_equal(&got, &t->want[i]);
	}
	return NULL;
}

/* Several threads looking up in one lazily opened file at once. */
static void test_threads(const char *path)
{
	static uint64_t addrs[MAX_ADDRS];
	static struct frames want[MAX_ADDRS];
	size_t na = every_address(path, addrs, 20000);
	struct sym_file *ref, *f;
	if (na < 20 || sym_open(path, NULL, &ref) != 0)
		return;
	CHECK_INT(sym_index_all(ref), 0, "threads: whole index");
	for (size_t i = 0; i < na; i++)
		want[i].n = sym_lookup(ref, addrs[i], want[i].fr, MAX_FR);
	if (sym_open(path, NULL, &f) != 0) {
		sym_close(ref);
		return;
	}
	pthread_t th[4];
	struct thread_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct thread_arg){ f, addrs, want, na, (size_t)i * na / 4, 0 };
		CHECK_INT(pthread_create(&th[i], NULL, lookup_thread, &args[i]), 0, "pthread_create");
	}
	size_t wrong = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		wrong += args[i].wrong;
	}
	CHECK(wrong == 0, "threads: %zu wrong answers", wrong);
	printf("4 threads, one file: %zu lookups each, %zu wrong\n", na, wrong);
	sym_close(f);
	sym_close(ref);
}

struct files_arg {
	struct sym_files *fs;
	const char *path;
	const uint64_t *addrs;
	const struct frames *want;
	size_t na, start, wrong;
	struct sym_file *got, *missing;
};

static void *files_thread(void *p)
{
	struct files_arg *t = p;
	t->got = sym_files_get(t->fs, t->path);
	t->missing = sym_files_get(t->fs, "/nonexistent/backstep-test.so");
	struct bk_symbol out[MAX_FR];
	for (size_t k = 0; t->got && k < t->na; k++) {
		size_t i = (t->start + k * 7) % t->na;
		int n = sym_describe(t->got, t->addrs[i], out, MAX_FR);
		bool same = n == (int)t->want[i].n;
		for (int j = 0; same && j < n; j++) {
			const struct sym_frame *w = &t->want[i].fr[j];
			const char *fn = w->function ? w->function : w->symbol;
			same = (fn ? out[j].function && !strcmp(fn, out[j].function) : !out[j].function) &&
			       out[j].offset == w->offset && out[j].line == w->line &&
			       out[j].inlined == w->inlined;
		}
		t->wrong += !same;
	}
	return NULL;
}

/* sym_files: threads asking for one path at once get one file, opened
 * once, whose answers (sym_describe) are sym_lookup's; a path that cannot
 * be opened is NULL for all. */
static void test_shared_files(const char *path)
{
	static uint64_t addrs[MAX_ADDRS];
	static struct frames want[MAX_ADDRS];
	size_t na = every_address(path, addrs, 5000);
	struct sym_file *ref;
	if (na < 20 || sym_open(path, NULL, &ref) != 0) {
		CHECK(0, "shared files: %s", path);
		return;
	}
	for (size_t i = 0; i < na; i++)
		want[i].n = sym_lookup(ref, addrs[i], want[i].fr, MAX_FR);
	struct sym_files *fs = sym_files_new();
	CHECK(fs != NULL, "shared files: new");
	if (!fs) {
		sym_close(ref);
		return;
	}
	pthread_t th[4];
	struct files_arg args[4];
	for (int i = 0; i < 4; i++) {
		args[i] = (struct files_arg){ fs, path, addrs, want, na, (size_t)i * na / 4, 0,
					      NULL, NULL };
		CHECK_INT(pthread_create(&th[i], NULL, files_thread, &args[i]), 0, "pthread_create");
	}
	size_t wrong = 0;
	for (int i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		wrong += args[i].wrong;
		CHECK(args[i].got && args[i].got == args[0].got, "shared files: one file for all");
		CHECK(args[i].missing == NULL, "shared files: a missing file is NULL");
	}
	CHECK(sym_files_get(fs, path) == args[0].got, "shared files: the same file later");
	/* An image under a name in brackets: no path to open, only what was
	 * added (libt.so's bytes, named at its functions like by path). */
	CHECK(sym_files_get(fs, "[vdso]") == NULL, "shared files: a bracket name is no path");
	size_t ilen = 0;
	uint8_t *img = slurp(tpath("nodebug/libt.so"), &ilen);
	struct sym_file *byp = NULL;
	CHECK(img && sym_files_add_image(fs, "[vdso]", img, ilen, 0) == 0,
	      "shared files: an image added");
	free(img); /* copied */
	struct sym_file *im = sym_files_get(fs, "[vdso]");
	CHECK(im != NULL && sym_open(tpath("nodebug/libt.so"), NULL, &byp) == 0,
	      "shared files: the image by its name");
	if (im && byp && byp->nsyms) {
		struct bk_symbol a[2], b[2];
		uint64_t at = byp->syms[0].start;
		CHECK(sym_describe(im, at, a, 2) == 1 && sym_describe(byp, at, b, 2) == 1 &&
		      a[0].function && b[0].function && !strcmp(a[0].function, b[0].function),
		      "shared files: the image names what the file names");
	}
	CHECK_INT(sym_files_add_image(fs, "[junk]", "abc", 3, 0), BK_E_NOT_ELF,
		  "shared files: a junk image is refused");
	CHECK(sym_files_get(fs, "[junk]") == NULL, "shared files: and not kept");
	sym_close(byp);
	CHECK(wrong == 0, "shared files: %zu answers differ from sym_lookup's", wrong);
	sym_files_free(fs);
	sym_close(ref);
}

/* perf maps: lines that parse and lines that do not, hex with and without
 * 0x, blanks, CRLF, a cut last line, overlapping ranges (the last written
 * wins), the edges of a range. */
static void test_perfmap(void)
{
	static const char text[] =
		"1000 100 JS:*first a.js:1:1\n"
		"0x2000 0x10 JS:~second b.js:2:2\r\n"
		"3000  20\tname with  spaces\n"
		"garbage line\n"
		"4000 0 zero size\n"
		"ffffffffffffff00 200 wraps\n"
		"5000 100\n"                  /* no name */
		"12345678901234567 10 too long\n"
		"1080 10 reused inside first\n"
		"\n"
		"6000 10 last";               /* cut: no newline */
	size_t len = sizeof(text) - 1;
	char *copy = malloc(len + 1);
	memcpy(copy, text, len + 1);
	struct sym_perfmap *m = NULL;
	CHECK_INT(sym_perfmap_parse(copy, len, &m), 0, "perf map: parse");
	if (!m)
		return;
	static const struct { uint64_t addr; const char *name; uint64_t off; } want[] = {
		{ 0xfff, NULL, 0 }, { 0x1000, "JS:*first a.js:1:1", 0 },
		{ 0x107f, "JS:*first a.js:1:1", 0x7f }, { 0x1080, "reused inside first", 0 },
		{ 0x108f, "reused inside first", 0xf }, { 0x1090, "JS:*first a.js:1:1", 0x90 },
		{ 0x10ff, "JS:*first a.js:1:1", 0xff }, { 0x1100, NULL, 0 },
		{ 0x2008, "JS:~second b.js:2:2", 8 }, { 0x2010, NULL, 0 },
		{ 0x3004, "name with  spaces", 4 }, { 0x4000, NULL, 0 }, { 0x5000, NULL, 0 },
		{ 0xffffffffffffff80ull, NULL, 0 }, { 0x6000, "last", 0 },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(want); i++) {
		struct bk_symbol sym = { 0 };
		int n = sym_perfmap_lookup(m, want[i].addr, &sym);
		if (!want[i].name) {
			CHECK(n == 0, "perf map: %#llx is in no range, got %s",
			      (unsigned long long)want[i].addr, n ? sym.function : "-");
			continue;
		}
		CHECK(n == 1 && sym.function && !strcmp(sym.function, want[i].name) &&
		      sym.offset == want[i].off, "perf map: %#llx is %s+%#llx, got %s+%#llx",
		      (unsigned long long)want[i].addr, want[i].name,
		      (unsigned long long)want[i].off, n ? sym.function : "-",
		      (unsigned long long)sym.offset);
	}
	/* Skipped: garbage, zero size, wraps, no name, too long. The cut last
	 * line is whole in text given to sym_perfmap_parse. */
	CHECK_INT((int)sym_perfmap_skipped(m), 5, "perf map: lines skipped");
	sym_perfmap_close(m);

	/* From a file: its last line, cut by a writer, is not taken. */
	write_file("perf.map", "7000 10 whole\n8000 10 cut");
	CHECK_INT(sym_perfmap_open(tpath("perf.map"), &m), 0, "perf map: open");
	struct bk_symbol sym;
	CHECK(m && sym_perfmap_lookup(m, 0x7004, &sym) == 1 && sym_perfmap_lookup(m, 0x8004, &sym) == 0,
	      "perf map file: the whole line taken, the cut one not");
	sym_perfmap_close(m);
	CHECK_INT(sym_perfmap_open(tpath("no-such.map"), &m), BK_E_IO, "perf map: missing file");
	CHECK_INT(sym_perfmap_open(tmp, &m), BK_E_IO, "perf map: a directory");
	copy = malloc(1);
	copy[0] = 0;
	CHECK(sym_perfmap_parse(copy, 0, &m) == 0 && sym_perfmap_lookup(m, 0, &sym) == 0,
	      "perf map: empty");
	sym_perfmap_close(m);
}

/* A small C++ program with a template, a namespace, an inlined static
 * function and libstdc++ (test_dwz, test_split). */
static const char box_cc[] =
	"#include <cstdlib>\n#include <string>\n#include <vector>\n"
	"namespace ns {\n"
	"template <class T> struct Box { T v; __attribute__((noinline)) T get() const; };\n"
	"template <class T> T Box<T>::get() const { return v + 1; }\n"
	"static inline int helper(int x) { if (x > 1000) abort(); return x * 2; }\n"
	"struct Worker { __attribute__((noinline)) int run(int x); };\n"
	"int Worker::run(int x) { Box<int> b{helper(x)}; return b.get(); }\n"
	"}\n"
	"int main(int argc, char **argv) {\n"
	"  std::vector<std::string> v(argv, argv + argc);\n"
	"  ns::Worker w; return w.run((int)v.size() + argc) > 3;\n}\n";

/* dwz: two programs' DWARF with what they share moved to a supplementary
 * file (.gnu_debugaltlink; DW_FORM_GNU_strp_alt and DW_FORM_GNU_ref_alt
 * into it). Every address of the program names what it named before dwz,
 * inline chains, files and lines too; with the supplementary file gone,
 * lookups still work and no name is libdwarf's placeholder. */
static void test_dwz(void)
{
	write_file("dwz.cc", box_cc);
	static char cmd[4096];
	snprintf(cmd, sizeof(cmd),
		 "g++ -O2 -g -o dwz1 dwz.cc && g++ -O1 -g -o dwz2 dwz.cc && cp dwz1 dwz1.orig && "
		 "dwz -m dwz.common -M %s dwz1 dwz2 && readelf -S dwz1 | grep -q gnu_debugaltlink",
		 tpath("dwz.common"));
	if (!run("%s", cmd)) {
		CHECK(0, "cannot build a dwz'd program (dwz installed?)");
		return;
	}
	static uint64_t addrs[MAX_ADDRS];
	size_t na = every_address(tpath("dwz1.orig"), addrs, 4000);
	struct sym_file *ref = NULL, *f = NULL;
	CHECK(na > 20 && sym_open(tpath("dwz1.orig"), NULL, &ref) == 0 &&
	      sym_open(tpath("dwz1"), NULL, &f) == 0, "dwz: open (%zu addresses)", na);
	if (!ref || !f) {
		sym_close(ref);
		sym_close(f);
		return;
	}
	size_t same = 0, inlined = 0, first_bad = SIZE_MAX;
	for (size_t i = 0; i < na; i++) {
		struct frames a, b;
		a.n = sym_lookup(ref, addrs[i], a.fr, MAX_FR);
		b.n = sym_lookup(f, addrs[i], b.fr, MAX_FR);
		if (frames_equal(&a, &b)) {
			same++;
			inlined += a.n > 1;
		} else if (first_bad == SIZE_MAX) {
			first_bad = i;
		}
	}
	struct sym_stats st;
	sym_get_stats(f, &st);
	CHECK(st.used_alt_file && !st.alt_missing, "dwz: the supplementary file is used");
	CHECK(same == na && inlined > 0, "dwz: %zu of %zu addresses as before dwz (%zu inlined); "
	      "first differing at %#llx", same, na, inlined,
	      first_bad == SIZE_MAX ? 0ull : (unsigned long long)addrs[first_bad]);
	sym_close(f);
	f = NULL;

	/* The supplementary file gone. */
	CHECK(run("mv dwz.common dwz.common.away"), "dwz: move the supplementary file");
	CHECK_INT(sym_open(tpath("dwz1"), NULL, &f), 0, "dwz: open without it");
	size_t placeholders = 0, answered = 0, ref_answered = 0;
	for (size_t i = 0; f && i < na; i++) {
		struct frames a, b;
		a.n = sym_lookup(ref, addrs[i], a.fr, MAX_FR);
		b.n = sym_lookup(f, addrs[i], b.fr, MAX_FR);
		ref_answered += a.n > 0;
		answered += b.n > 0;
		for (int k = 0; k < b.n; k++)
			placeholders += b.fr[k].function && b.fr[k].function[0] == '<';
	}
	if (f) {
		sym_get_stats(f, &st);
		CHECK(st.alt_missing && !st.used_alt_file, "dwz: the missing file is noted");
		CHECK(answered == ref_answered && answered > na / 2 && placeholders == 0,
		      "dwz: without it, %zu of %zu answered (%zu before dwz), %zu placeholder names",
		      answered, na, ref_answered, placeholders);
	}
	sym_close(f);
	sym_close(ref);
	run("mv dwz.common.away dwz.common");
}

/* Every address of A (at most MAX_ADDRS, from REF's functions) named by F
 * as by REF: frames compared whole (names, files, lines, inline chains).
 * *INLINED: addresses with an inlined frame. Returns how many agree. */
static size_t same_names(struct sym_file *ref, struct sym_file *f, const uint64_t *a, size_t n,
			 size_t *inlined, uint64_t *first_bad)
{
	size_t same = 0;
	*inlined = 0;
	*first_bad = 0;
	for (size_t i = 0; i < n; i++) {
		struct frames x, y;
		x.n = sym_lookup(ref, a[i], x.fr, MAX_FR);
		y.n = sym_lookup(f, a[i], y.fr, MAX_FR);
		if (frames_equal(&x, &y)) {
			same++;
			*inlined += x.n > 1;
		} else if (!*first_bad) {
			*first_bad = a[i];
		}
	}
	return same;
}

/* One split-DWARF build (EXE, with DEBUG its separate debug file or NULL)
 * against the same code built with plain DWARF (REF): every address named
 * alike, the split units read. */
static void split_case(const char *label, const char *ref, const char *exe, const char *debug)
{
	static uint64_t addrs[MAX_ADDRS];
	size_t na = every_address(tpath(ref), addrs, 6000);
	struct sym_file *r = NULL, *f = NULL;
	CHECK(na > 50 && sym_open(tpath(ref), NULL, &r) == 0 &&
	      sym_open(tpath(exe), debug ? tpath(debug) : NULL, &f) == 0,
	      "split %s: open (%zu addresses)", label, na);
	if (r && f) {
		size_t inl;
		uint64_t bad;
		size_t same = same_names(r, f, addrs, na, &inl, &bad);
		struct sym_stats st;
		sym_get_stats(f, &st);
		CHECK(same == na && inl > 0 && st.splits_read > 0 && st.splits_missing == 0,
		      "split %s: %zu of %zu addresses named as with plain DWARF (%zu inlined), "
		      "%zu split units read, %zu missing; first differing at %#llx", label, same,
		      na, inl, st.splits_read, st.splits_missing, (unsigned long long)bad);
		printf("split %s: %zu of %zu addresses as plain DWARF, %zu inlined\n", label, same,
		       na, inl);
	}
	sym_close(f);
	sym_close(r);
}

/* Split DWARF (-gsplit-dwarf): the functions and inlined calls of a
 * skeleton unit are in a .dwo next to the object, or in a .dwp package
 * next to the program. gcc's DWARF 5 and DWARF 4 (GNU) forms, clang's;
 * .dwp packages from llvm-dwp (DWARF 5) and binutils' dwp (DWARF 4); a
 * separate debug file; a .dwo found next to the program when its
 * DW_AT_comp_dir is gone; a missing .dwo (lines stay, counted) and a
 * stale one from another build (not used). */
static void test_split(void)
{
	write_file("split.cc", box_cc);
	/* Compiled from the same directory and source name as the plain
	 * builds (so file names match), each .dwo named after its object:
	 * DW_AT_dwo_name "s5/split.dwo" under DW_AT_comp_dir. */
	if (!run("g++ -O2 -g -c split.cc -o plain5.o && g++ plain5.o -o plain5 && "
		 "g++ -O2 -g -gdwarf-4 -c split.cc -o plain4.o && g++ plain4.o -o plain4 && "
		 "mkdir -p s5 s4 && g++ -O2 -g -gsplit-dwarf -c split.cc -o s5/split.o && "
		 "g++ s5/split.o -o s5/split && "
		 "g++ -O2 -g -gdwarf-4 -gsplit-dwarf -c split.cc -o s4/split.o && "
		 "g++ s4/split.o -o s4/split && test -f s4/split.dwo && test -f s5/split.dwo")) {
		CHECK(0, "cannot build split DWARF programs");
		return;
	}
	split_case("gcc DWARF 5 .dwo", "plain5", "s5/split", NULL);
	split_case("gcc DWARF 4 .dwo", "plain4", "s4/split", NULL);
	if (run("clang++ -O2 -g -c split.cc -o cplain.o && clang++ cplain.o -o cplain && "
		"mkdir -p sc && clang++ -O2 -g -gsplit-dwarf -c split.cc -o sc/split.o && "
		"clang++ sc/split.o -o sc/split && test -f sc/split.dwo"))
		split_case("clang DWARF 5 .dwo", "cplain", "sc/split", NULL);
	else
		CHECK(0, "cannot build with clang++ -gsplit-dwarf");

	/* Packages: the .dwo files removed. */
	CHECK(run("mkdir -p p5 p4 && cp s5/split p5/ && cp s4/split p4/ && "
		  "llvm-dwp-14 -e p5/split -o p5/split.dwp && dwp -e p4/split -o p4/split.dwp && "
		  "mv s5/split.dwo s5/split.dwo.away && mv s4/split.dwo s4/split.dwo.away"),
	      "split: make .dwp packages");
	split_case("gcc DWARF 5 .dwp (llvm-dwp)", "plain5", "p5/split", NULL);
	split_case("gcc DWARF 4 .dwp (dwp)", "plain4", "p4/split", NULL);

	/* Next to the program, its compilation directory (s5/) without it. */
	CHECK(run("mkdir -p moved && cp s5/split moved/ && cp s5/split.dwo.away moved/split.dwo"),
	      "split: move a program and its .dwo");
	split_case("moved with its .dwo", "plain5", "moved/split", NULL);

	/* A separate debug file holding the skeletons, its package named after
	 * the program. */
	CHECK(run("mkdir -p dbg && cp p5/split dbg/ && cp p5/split.dwp dbg/ && cd dbg && "
		  "objcopy --only-keep-debug split split.debug && strip -g split && "
		  "objcopy --add-gnu-debuglink=split.debug split"), "split: separate debug file");
	split_case("separate debug file + .dwp", "plain5", "dbg/split", "dbg/split.debug");

	/* No .dwo: lines from the skeleton, the misses counted. A .dwo of
	 * another build (another dwo_id) in its place is not used. */
	static uint64_t addrs[MAX_ADDRS];
	size_t na = every_address(tpath("plain5"), addrs, 6000);
	for (int stale = 0; stale < 2; stale++) {
		if (stale && !run("sed 's/v + 1/v + 2/' split.cc > other.cc && "
				  "g++ -O2 -g -gsplit-dwarf -c other.cc -o s5/other.o && "
				  "mv s5/other.dwo s5/split.dwo")) {
			CHECK(0, "split: build a stale .dwo");
			break;
		}
		struct sym_file *f = NULL, *r = NULL;
		CHECK(sym_open(tpath("s5/split"), NULL, &f) == 0 &&
		      sym_open(tpath("plain5"), NULL, &r) == 0, "split: open without its .dwo");
		size_t lines = 0, ref_lines = 0, inlined = 0;
		for (size_t i = 0; f && r && i < na; i++) {
			struct frames x, y;
			x.n = sym_lookup(r, addrs[i], x.fr, MAX_FR);
			y.n = sym_lookup(f, addrs[i], y.fr, MAX_FR);
			ref_lines += x.n > 0 && x.fr[x.n - 1].line;
			lines += y.n > 0 && y.fr[y.n - 1].line;
			inlined += y.n > 1;
		}
		struct sym_stats st = { 0 };
		if (f)
			sym_get_stats(f, &st);
		CHECK(f && r && lines == ref_lines && inlined == 0 && st.splits_missing > 0 &&
		      st.splits_read == 0,
		      "split, %s .dwo: %zu of %zu addresses keep a line, %zu inlined frames, "
		      "%zu split units missing", stale ? "a stale" : "no", lines, ref_lines,
		      inlined, st.splits_missing);
		printf("split, %s .dwo: %zu of %zu lines kept\n", stale ? "a stale" : "no", lines,
		       ref_lines);
		sym_close(f);
		sym_close(r);
	}
}

/* C++ functions DWARF names without a linkage name (a static member of a
 * class in an anonymous namespace, a static inline function in a
 * namespace, inlined) are named with their scopes, as gdb names them. */
static void test_qualified(void)
{
	write_file("qual.cc",
		   "#include <cstdlib>\n"
		   "namespace app { namespace { struct Local {\n"
		   "  static __attribute__((noinline)) int boom(int x) { if (x > 100) abort();"
		   " return x * 7; } }; }\n"
		   "static inline int inl(int x) { return Local::boom(x) + 1; }\n"
		   "__attribute__((noinline)) int go(int x) { return inl(x) * inl(x + 1); } }\n"
		   "int main(int argc, char **argv) { (void)argv; return app::go(argc) > 5; }\n");
	if (!run("g++ -O2 -g -o qual qual.cc")) {
		CHECK(0, "cannot build qual.cc");
		return;
	}
	static uint64_t addrs[MAX_ADDRS];
	size_t na = every_address(tpath("qual"), addrs, 4000);
	struct sym_file *f = NULL;
	CHECK(na > 10 && sym_open(tpath("qual"), NULL, &f) == 0, "qualified: open");
	bool boom = false, inl = false, bare = false;
	for (size_t i = 0; f && i < na; i++) {
		struct frames a;
		a.n = sym_lookup(f, addrs[i], a.fr, MAX_FR);
		for (int k = 0; k < a.n; k++) {
			const char *fn = a.fr[k].function;
			if (!fn)
				continue;
			boom |= !strcmp(fn, "app::(anonymous namespace)::Local::boom");
			inl |= a.fr[k].inlined && !strcmp(fn, "app::inl");
			bare |= !strcmp(fn, "boom") || !strcmp(fn, "inl");
		}
	}
	CHECK(boom, "qualified: app::(anonymous namespace)::Local::boom");
	CHECK(inl, "qualified: app::inl, inlined");
	CHECK(!bare, "qualified: no bare boom or inl");
	sym_close(f);
}

/* libc with its debug file (libc6-dbg), when installed: compressed DWARF 5
 * from gcc, thousands of units. Spread addresses: start, thirds and last
 * byte of every function. */
static void test_system_lib(const char *path)
{
	struct sym_file *f;
	if (sym_open(path, NULL, &f) != 0)
		return;
	struct sym_stats st;
	sym_get_stats(f, &st);
	sym_close(f);
	if (!st.dwarf || !st.used_debug_file) {
		printf("SKIP: %s: no debug file\n", path);
		return;
	}
	static struct func funcs[65536];
	char *txt = capture("nm -D -n -S --defined-only '%s'", path);
	size_t nf = 0;
	for (char *line = txt ? strtok(txt, "\n") : NULL; line && nf < BK_ARRAY_LEN(funcs);
	     line = strtok(NULL, "\n")) {
		unsigned long long a, s;
		char t;
		if (sscanf(line, "%llx %llx %c", &a, &s, &t) == 3 && strchr("TtWwi", t) && s) {
			funcs[nf].start = a;
			funcs[nf++].size = s;
		}
	}
	free(txt);
	test_lazy_open(path, funcs, nf, 2);
	static uint64_t addrs[MAX_ADDRS];
	size_t na = 0;
	for (size_t i = 0; i < nf && na + 4 <= MAX_ADDRS; i++) {
		addrs[na++] = funcs[i].start;
		addrs[na++] = funcs[i].start + funcs[i].size / 3;
		addrs[na++] = funcs[i].start + 2 * funcs[i].size / 3;
		addrs[na++] = funcs[i].start + funcs[i].size - 1;
	}
	compare_lazy(path, path, NULL, addrs, na);
}

/* ---- Benchmark (not a test): `test_sym --bench [FILE...]` ------------------------ */

#include <time.h>

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* N addresses spread over the sized functions of BIN (`nm -S`, .symtab or
 * else .dynsym), each in the middle of its function. */
static size_t bench_pcs(const char *bin, uint64_t *out, size_t n)
{
	static struct func funcs[65536];
	char *txt = capture("{ nm -n -S --defined-only '%s' 2>/dev/null | grep -q . && "
			    "nm -n -S --defined-only '%s' || nm -D -n -S --defined-only '%s'; }",
			    bin, bin, bin);
	size_t nf = 0;
	for (char *line = txt ? strtok(txt, "\n") : NULL; line && nf < BK_ARRAY_LEN(funcs);
	     line = strtok(NULL, "\n")) {
		unsigned long long a, s;
		char t;
		if (sscanf(line, "%llx %llx %c", &a, &s, &t) == 3 && strchr("TtWw", t) && s > 1) {
			funcs[nf].start = a;
			funcs[nf].size = s;
			nf++;
		}
	}
	free(txt);
	size_t k = 0;
	for (size_t i = 0; i < n && nf; i++) {
		const struct func *fn = &funcs[(i * nf) / n + (nf / n) / 2 < nf ? (i * nf) / n + (nf / n) / 2 : nf - 1];
		out[k++] = fn->start + fn->size / 2;
	}
	return k;
}

#define BENCH_RUNS 7

/* Open, first lookup and a second lookup elsewhere in PATH; best and median. */
static void bench_file(const char *path)
{
	uint64_t pcs[2];
	if (bench_pcs(path, pcs, 2) < 2) {
		printf("%-44s (no function symbols)\n", path);
		return;
	}
	double t_open[BENCH_RUNS], t_first[BENCH_RUNS], t_second[BENCH_RUNS], t_again[BENCH_RUNS];
	struct sym_stats st = { 0 };
	int nfr = 0;
	for (int r = 0; r < BENCH_RUNS; r++) {
		struct sym_file *f;
		double t0 = now_ms();
		if (sym_open(path, NULL, &f) != 0) {
			printf("%-44s cannot open\n", path);
			return;
		}
		double t1 = now_ms();
		struct sym_frame fr[MAX_FR];
		nfr = sym_lookup(f, pcs[0], fr, MAX_FR);
		double t2 = now_ms();
		sym_lookup(f, pcs[1], fr, MAX_FR);
		double t3 = now_ms();
		for (int k = 0; k < 1000; k++)
			sym_lookup(f, pcs[0], fr, MAX_FR);
		double t4 = now_ms();
		sym_get_stats(f, &st);
		sym_close(f);
		t_open[r] = t1 - t0;
		t_first[r] = t2 - t1;
		t_second[r] = t3 - t2;
		t_again[r] = (t4 - t3) * 1e3 / 1000; /* us per lookup */
	}
	qsort(t_open, BENCH_RUNS, sizeof(double), cmp_double);
	qsort(t_first, BENCH_RUNS, sizeof(double), cmp_double);
	qsort(t_second, BENCH_RUNS, sizeof(double), cmp_double);
	qsort(t_again, BENCH_RUNS, sizeof(double), cmp_double);
	printf("%-44s open %8.2f (%8.2f)  first %7.2f (%7.2f)  second %7.2f (%7.2f)  again %6.2f us"
	       "  [%zu CUs, %zu rows, %zu scopes, %d frames]\n",
	       path, t_open[0], t_open[BENCH_RUNS / 2], t_first[0], t_first[BENCH_RUNS / 2],
	       t_second[0], t_second[BENCH_RUNS / 2], t_again[0], st.cus, st.line_rows, st.scopes,
	       nfr);
}

/* What `backstep pid` does for a stack: open the modules, then ~25 lookups
 * (NA in A, NB in B), cold each run. */
static void bench_mix(const char *a, size_t na, const char *b, size_t nb)
{
	uint64_t pa[64], pb[64];
	na = bench_pcs(a, pa, na);
	nb = bench_pcs(b, pb, nb);
	double t[BENCH_RUNS];
	int frames = 0;
	for (int r = 0; r < BENCH_RUNS; r++) {
		double t0 = now_ms();
		struct sym_file *fa, *fb;
		if (sym_open(a, NULL, &fa) != 0 || sym_open(b, NULL, &fb) != 0)
			return;
		struct sym_frame fr[MAX_FR];
		frames = 0;
		for (size_t i = 0; i < na || i < nb; i++) {
			if (i < na)
				frames += sym_lookup(fa, pa[i], fr, MAX_FR);
			if (i < nb)
				frames += sym_lookup(fb, pb[i], fr, MAX_FR);
		}
		t[r] = now_ms() - t0;
		sym_close(fa);
		sym_close(fb);
	}
	qsort(t, BENCH_RUNS, sizeof(double), cmp_double);
	printf("open + %zu lookups in %s + %zu in %s: %.2f ms best, %.2f median (%d frames)\n", na,
	       a, nb, b, t[0], t[BENCH_RUNS / 2], frames);
}

static int bench(int argc, char **argv)
{
	printf("times in ms, best (median) of %d; 'again': the first address once more, in us "
	       "(mean of 1000)\n",
	       BENCH_RUNS);
	if (argc > 0) {
		for (int i = 0; i < argc; i++)
			bench_file(argv[i]);
		return 0;
	}
	static const char *const libs[] = { "/lib/x86_64-linux-gnu/libc.so.6",
					    "/lib64/ld-linux-x86-64.so.2",
					    "/lib/x86_64-linux-gnu/libstdc++.so.6" };
	for (size_t i = 0; i < BK_ARRAY_LEN(libs); i++)
		bench_file(libs[i]);
	write_file("prog_inl.h", prog_inl_h);
	write_file("prog.c", prog_c);
	const char *prog = tpath("prog_gcc5");
	if (run("gcc -O2 -g -o prog_gcc5 prog.c")) {
		bench_file(prog);
		bench_mix(libs[0], 13, prog, 12);
	}
	static char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0) {
		self[sl] = '\0';
		bench_file(self);
		bench_mix(libs[0], 13, self, 12);
	}
	return 0;
}

int main(int argc, char **argv)
{
	snprintf(tmp, sizeof(tmp), "/tmp/bk_sym_XXXXXX");
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 2;
	}
	if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
		int r = bench(argc - 2, argv + 2);
		run("rm -rf '%s'", tmp);
		return r;
	}
	test_demangle();
	test_errors();
	write_file("prog_inl.h", prog_inl_h);
	write_file("prog.c", prog_c);
	write_file("cxx.cc", cxx_cc);
	write_file("fone.h", fone_h);
	write_file("fone.c", fone_c);
	write_file("lib.c", lib_c);
	if (!run("addr2line --version && objdump --version && nm --version")) {
		printf("SKIP: binutils missing: no differential checks\n");
		return check_summary();
	}

	static const struct {
		const char *label, *cmd, *out;
	} builds[] = {
		{ "gcc -O2 dwarf5", "gcc -O2 -g -o prog_gcc5 prog.c", "prog_gcc5" },
		{ "gcc -O2 dwarf4", "gcc -O2 -g -gdwarf-4 -o prog_gcc4 prog.c", "prog_gcc4" },
		{ "clang -O2 dwarf5", "clang -O2 -g -o prog_clang5 prog.c", "prog_clang5" },
		{ "clang -O2 dwarf4", "clang -O2 -g -gdwarf-4 -o prog_clang4 prog.c", "prog_clang4" },
		{ "gcc -O2 -gz dwarf5", "gcc -O2 -g -gz -o prog_gz prog.c", "prog_gz" },
		{ "clang -O1 -gz dwarf4", "clang -O1 -g -gdwarf-4 -gz -o prog_clang_gz prog.c",
		  "prog_clang_gz" },
		{ "gcc -O2 -gz=zstd dwarf5 (objcopy)",
		  "gcc -O2 -g -o prog_zstd prog.c && objcopy --compress-debug-sections=zstd prog_zstd",
		  "prog_zstd" },
		{ "g++ -O2 dwarf5", "g++ -O2 -g -o cxx_gcc5 cxx.cc", "cxx_gcc5" },
		{ "clang++ -O2 dwarf4", "clang++ -O2 -g -gdwarf-4 -o cxx_clang4 cxx.cc", "cxx_clang4" },
		{ "clang++ -O2 dwarf5", "clang++ -O2 -g -o cxx_clang5 cxx.cc", "cxx_clang5" },
	};
	bool have_gcc5 = false;
	for (size_t i = 0; i < BK_ARRAY_LEN(builds); i++) {
		if (!run("%s", builds[i].cmd)) {
			printf("SKIP: %s (cannot build)\n", builds[i].label);
			continue;
		}
		have_gcc5 |= i == 0;
		diff_file(builds[i].label, tpath(builds[i].out), tpath(builds[i].out), NULL, false);
		if (strstr(builds[i].label, "-gz")) {
			struct sym_file *f;
			if (sym_open(tpath(builds[i].out), NULL, &f) == 0) {
				struct sym_stats st;
				sym_get_stats(f, &st);
				CHECK(st.dwarf_compressed, "%s: compressed sections seen", builds[i].label);
				sym_close(f);
			}
		}
	}
	printf("differential total: %zu addresses, %zu frames (%zu inlined): %zu as addr2line; "
	       "else %zu as llvm-addr2line, %zu known bfd deviations, %zu default-file rows; "
	       "%zu unexplained\n",
	       total.addrs, total.frames, total.inlined, total.same, total.llvm_agrees,
	       total.bfd_pattern, total.default_file, total.unexplained);

	/* This very program: the library's own code, many CUs, built by the
	 * project's compiler and flags. */
	static char self[4096];
	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl > 0) {
		self[sl] = '\0';
		diff_file("this test program", self, self, NULL, true);
	}

	test_debug_file(have_gcc5);
	test_default_file();
	test_deep_nesting();
	test_dynsym_only();
	test_minidebuginfo();
	test_dwz();
	test_split();
	test_perfmap();
	test_qualified();
	test_memory_image();
	if (have_gcc5) {
		test_lookup_args();
		test_cold();
		test_corrupt(tpath("prog_gcc5"), "gcc dwarf5 damaged");
		if (run("test -f prog_clang5"))
			test_corrupt(tpath("prog_clang5"), "clang dwarf5 damaged");
		if (run("test -f prog_gcc4"))
			test_corrupt(tpath("prog_gcc4"), "gcc dwarf4 damaged");
		test_rejected();
		test_nomem();
		test_partial_aranges();
		if (run("test -f mixed")) /* two units, one placed by .debug_aranges */
			test_corrupt(tpath("mixed"), "gcc + clang damaged");
		for (size_t i = 0; i < BK_ARRAY_LEN(builds); i++)
			if (run("test -f %s", builds[i].out))
				test_lazy_file(builds[i].label, tpath(builds[i].out),
					       tpath(builds[i].out), NULL);
		test_lazy_file("gcc dwarf5 via debuglink", tpath("prog_gcc5"),
			       tpath("prog_gcc5.stripped"), NULL);
		test_relocatable();
	}
	if (sl > 0) {
		static struct func funcs[MAX_FUNCS];
		test_lazy_open(self, funcs, list_funcs(self, funcs, MAX_FUNCS), 2);
		test_lazy_file("this test program", self, self, NULL);
		test_threads(self);
		test_shared_files(self);
	}
	test_system_lib("/lib/x86_64-linux-gnu/libc.so.6");
	test_system_lib("/lib64/ld-linux-x86-64.so.2");

	if (!getenv("BK_KEEP_TMP"))
		run("rm -rf '%s'", tmp);
	else
		printf("kept %s\n", tmp);
	return check_summary();
}
