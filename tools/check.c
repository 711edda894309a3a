/* backstep check: static checks of the unwind tables of ELF files and of
 * every ELF file under a directory (src/check/chk_tables.c does the
 * checking; this file walks directories and prints). --stack runs the
 * stack analysis instead (src/check/chk_stack.c): its findings are the
 * instructions whose row differs from the code (errors) and the functions
 * not checked in full (info, with their reason), its summary line per file
 * "FILE: stack: ...", its exit status from differences alone.
 *
 * Output, one line per finding and a summary line per file:
 *   FILE: SEVERITY: KIND: DETAIL (SYMBOL+OFF, at SECTION+0xOFF)
 *   FILE: summary: ...
 *   FILE: error: stack: ADDR INSN: DETAIL [row ROW; code CODE] (SYMBOL+OFF, ...)
 * Info findings are printed with -v only (always counted). With more than
 * one file a table of totals by kind closes the output. --json prints the
 * same as JSON Lines: {"type": "finding"|"file"|"total", ...}.
 *
 * Directories: entries are visited in name order; a symbolic link to a
 * directory is not followed, one to a file is, and each file (device and
 * inode) is checked once. Files that do not start with the ELF magic and
 * special files are skipped and counted. Exit status: 2 when a named input
 * or an ELF file found in a directory could not be read (one line on stderr
 * each), else 1 when any error was found that is not waived (gate.c:
 * --baseline, --suppress), else 0. Toolchain gaps (src/check's
 * toolchain-gap) are summed up in one line per file, not as errors.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "gate.h"
#include "out.h"

#include "../src/check/chk.h"

#define MAX_DEPTH 64

struct check_opts {
	bool json;
	bool verbose;
	bool stack;               /* --stack: the stack analysis instead */
	unsigned max_findings;    /* --max-findings: per file, 0 the library's default */
};

struct seen {
	dev_t dev;
	ino_t ino;
	bool used;
};

struct totals {
	size_t elf_files, nonelf, special, dup, unreadable, unsupported, dir_links, too_deep;
	size_t files_with_errors, files_with_warnings, relocatable;
	uint64_t fdes_eh, fdes_debug, exec_bytes, covered_bytes, padding_bytes, gap_bytes;
	size_t counts[CHK_NKINDS][CHK_SEV_N];
	/* --stack */
	size_t fdes, fn_full, fn_partial, fn_skipped, fn_from_row, fn_with_diffs, files_with_diffs;
	size_t fn_by_reason[CHK_SR_N];
	uint64_t insns, fill, checked, diffs, rules_compared, rules_unknown;
	uint64_t unchecked[CHK_SR_N];
	char **no_tables;
	size_t nno_tables, cap_no_tables;
	size_t waived[3];         /* findings waived: [GATE_BASELINE], [GATE_SUPPRESSED] */
	uint64_t toolchain_gap_bytes;
	struct seen *seen;        /* files checked, open addressing */
	size_t nseen, cap_seen;
};

static const struct check_opts *g_opts;
static struct totals g_tot;
/* The file being printed: its findings waived (gate.c), by reason. */
static size_t g_file_waived[3];

/* ---- Output ------------------------------------------------------------- */

static void out_json_str(const char *s)
{
	cli_json_str(s);
}

/* The "symbol" and "offset" fields of a finding at SYMBOL+OFF. */
static void json_symbol(const char *symbol, uint64_t off)
{
	out_s(", \"symbol\": ");
	out_json_str(symbol);
	out_s(", \"offset\": \"");
	out_addr(off);
	out_c('"');
}

static void print_finding(const char *path, const struct chk_finding *f, enum gate_why why)
{
	if (g_opts->json) {
		out_s("{\"type\": \"finding\", \"file\": ");
		out_json_str(path);
		out_s(", \"severity\": \"");
		out_s(chk_sev_name(f->sev));
		out_s("\", \"kind\": \"");
		out_s(chk_kind_name(f->kind));
		out_c('"');
		if (f->section) {
			out_s(", \"section\": \"");
			out_s(f->section);
			out_c('"');
		}
		if (f->has_addr) {
			out_s(", \"addr\": \"");
			out_addr(f->addr);
			out_s("\", \"end\": \"");
			out_addr(f->end);
			out_c('"');
		}
		if (f->symbol) {
			json_symbol(f->symbol, f->sym_off);
		} else if (f->code_section) {
			out_s(", \"code_section\": ");
			out_json_str(f->code_section);
		}
		if (f->has_entry) {
			out_s(", \"entry_offset\": \"");
			out_addr(f->entry_off);
			out_c('"');
		}
		out_s(", \"detail\": ");
		out_json_str(f->detail);
		if (why)
			out_fmt(", \"waived\": \"%s\"", gate_why_name(why));
		out_s("}\n");
		return;
	}
	out_s(path);
	out_s(": ");
	if (why)
		out_fmt("waived (%s): ", gate_why_name(why));
	out_s(chk_sev_name(f->sev));
	out_s(": ");
	out_s(chk_kind_name(f->kind));
	out_s(": ");
	out_s(f->detail);
	if (f->symbol || f->code_section || f->has_entry) {
		out_s(" (");
		if (f->symbol) {
			out_s(f->symbol);
			out_c('+');
			out_addr(f->sym_off);
		} else if (f->code_section) {
			out_s("in ");
			out_s(f->code_section);
		}
		if (f->has_entry) {
			out_s(f->symbol || f->code_section ? ", at " : "at ");
			out_s(f->section ? f->section : "?");
			out_c('+');
			out_addr(f->entry_off);
		}
		out_c(')');
	}
	out_c('\n');
}

static void print_file_summary(const char *path, const struct chk_report *r)
{
	size_t suppressed = 0;
	for (int k = 0; k < CHK_NKINDS; k++)
		suppressed += r->suppressed[k];
	if (g_opts->json) {
		out_s("{\"type\": \"file\", \"file\": ");
		out_json_str(path);
		out_s(", \"arch\": ");
		if (r->arch) {
			out_c('"');
			out_s(r->arch);
			out_c('"');
		} else {
			out_s("null");
		}
		out_fmt(", \"relocatable\": %s, \"no_tables\": %s, \"eh_frame\": %s, "
			"\"eh_frame_hdr\": %s, \"debug_frame\": %s, \"cies\": %zu, "
			"\"fdes_eh_frame\": %zu, \"fdes_debug_frame\": %zu, \"exec_bytes\": %" PRIu64
			", \"covered_bytes\": %" PRIu64 ", \"padding_bytes\": %" PRIu64
			", \"gap_bytes\": %" PRIu64 ", \"errors\": %zu, \"warnings\": %zu, "
			"\"info\": %zu, \"suppressed\": %zu, \"toolchain_gap_bytes\": %" PRIu64
			", \"waived_baseline\": %zu, \"waived_suppressed\": %zu}\n",
			r->relocatable ? "true" : "false", r->no_tables ? "true" : "false",
			r->has_eh_frame ? "true" : "false", r->has_eh_frame_hdr ? "true" : "false",
			r->has_debug_frame ? "true" : "false", r->ncies, r->nfdes_eh, r->nfdes_debug,
			r->exec_bytes, r->covered_bytes, r->padding_bytes, r->gap_bytes, r->nerrors,
			r->nwarnings, r->ninfos, suppressed, r->toolchain_gap_bytes,
			g_file_waived[GATE_BASELINE], g_file_waived[GATE_SUPPRESSED]);
		return;
	}
	for (int k = 0; k < CHK_NKINDS; k++)
		if (r->suppressed[k])
			out_fmt("%s: note: %zu more %s findings not shown\n", path, r->suppressed[k],
				chk_kind_name((enum chk_kind)k));
	out_fmt("%s: summary: ", path);
	if (r->no_tables) {
		out_fmt("no unwind tables; %zu error%s, %zu warning%s\n", r->nerrors,
			r->nerrors == 1 ? "" : "s", r->nwarnings, r->nwarnings == 1 ? "" : "s");
		return;
	}
	out_fmt("%zu FDEs (.eh_frame %zu, .debug_frame %zu), %zu CIEs; %zu error%s, %zu warning%s, "
		"%zu info", r->nfdes_eh + r->nfdes_debug, r->nfdes_eh, r->nfdes_debug, r->ncies,
		r->nerrors, r->nerrors == 1 ? "" : "s", r->nwarnings, r->nwarnings == 1 ? "" : "s",
		r->ninfos);
	if (r->relocatable)
		out_s("; relocatable object: address checks skipped");
	else if (r->exec_bytes)
		out_fmt("; %" PRIu64 " of %" PRIu64 " executable bytes covered (%.2f%%), %" PRIu64
			" bytes of padding, %" PRIu64 " in gaps", r->covered_bytes, r->exec_bytes,
			100.0 * (double)r->covered_bytes / (double)r->exec_bytes, r->padding_bytes,
			r->gap_bytes);
	if (r->toolchain_gap_bytes)
		out_fmt(", %" PRIu64 " in toolchain gaps", r->toolchain_gap_bytes);
	if (g_file_waived[GATE_BASELINE] || g_file_waived[GATE_SUPPRESSED])
		out_fmt("; waived: %zu in the baseline, %zu suppressed", g_file_waived[GATE_BASELINE],
			g_file_waived[GATE_SUPPRESSED]);
	if (!r->arch)
		out_s("; unknown machine: entry rows not checked");
	out_c('\n');
}

/* The toolchain's gaps of a file, apart from its own findings, on one line:
 * "FILE: toolchain: no CFI in C runtime or linker code (not this file's
 * errors): _init, deregister_tm_clones, ... (N bytes)". */
static void print_toolchain_line(const char *path, const struct chk_report *r)
{
	size_t n = 0;
	for (size_t i = 0; i < r->nf; i++) {
		const struct chk_finding *f = &r->f[i];
		if (f->kind != CHK_TOOLCHAIN_GAP)
			continue;
		if (!n++) {
			out_s(path);
			out_s(": toolchain: no CFI in C runtime or linker code (not this file's "
			      "errors; -v lists them): ");
		} else {
			out_s(", ");
		}
		out_s(f->symbol ? f->symbol : f->code_section ? f->code_section : "?");
	}
	if (n)
		out_fmt(" (%" PRIu64 " bytes)\n", r->toolchain_gap_bytes);
}

/* ---- Files -------------------------------------------------------------- */

static int note_no_tables(const char *path)
{
	if (g_tot.nno_tables == g_tot.cap_no_tables) {
		size_t ncap = g_tot.cap_no_tables ? g_tot.cap_no_tables * 2 : 16;
		void *p = realloc(g_tot.no_tables, ncap * sizeof(char *));
		if (!p)
			return -1;
		g_tot.no_tables = p;
		g_tot.cap_no_tables = ncap;
	}
	char *copy = strdup(path);
	if (!copy)
		return -1;
	g_tot.no_tables[g_tot.nno_tables++] = copy;
	return 0;
}

/* ---- --stack ------------------------------------------------------------ */

#ifdef BK_HAVE_STACK
static void print_stack_finding(const char *path, const struct chk_stack_finding *f,
				enum gate_why why)
{
	const char *kind = f->difference ? "stack" : "cannot-analyse";
	if (g_opts->json) {
		out_s("{\"type\": \"finding\", \"file\": ");
		out_json_str(path);
		out_s(f->difference ? ", \"severity\": \"error\"" : ", \"severity\": \"info\"");
		out_fmt(", \"kind\": \"%s\"", kind);
		if (!f->difference) {
			out_s(", \"reason\": ");
			out_json_str(chk_stack_reason_name(f->reason));
		}
		out_s(", \"section\": \"");
		out_s(f->section);
		out_s("\", \"addr\": \"");
		out_addr(f->addr);
		out_s("\", \"fde\": [\"");
		out_addr(f->fde_lo);
		out_s("\", \"");
		out_addr(f->fde_hi);
		out_s("\"], \"entry_offset\": \"");
		out_addr(f->fde_off);
		out_c('"');
		if (f->symbol)
			json_symbol(f->symbol, f->sym_off);
		if (f->difference) {
			out_s(", \"insn\": ");
			out_json_str(f->insn);
			out_s(", \"row\": ");
			out_json_str(f->row);
			out_s(", \"code\": ");
			out_json_str(f->code);
		}
		out_s(", \"detail\": ");
		out_json_str(f->detail);
		if (why)
			out_fmt(", \"waived\": \"%s\"", gate_why_name(why));
		out_s("}\n");
		return;
	}
	out_s(path);
	if (why)
		out_fmt(": waived (%s)", gate_why_name(why));
	if (f->difference) {
		out_s(": error: stack: ");
		out_addr(f->addr);
		out_s(" ");
		out_s(f->insn);
		out_s(": ");
		out_s(f->detail);
		out_s(" [row ");
		out_s(f->row);
		out_s("; code ");
		out_s(f->code);
		out_s("]");
	} else {
		out_s(": info: cannot-analyse: ");
		out_s(chk_stack_reason_name(f->reason));
		out_s(": ");
		out_s(f->detail);
	}
	out_s(" (");
	if (f->symbol) {
		out_s(f->symbol);
		out_c('+');
		out_addr(f->sym_off);
		out_s(", ");
	}
	out_s("at ");
	out_s(f->section);
	out_c('+');
	out_addr(f->fde_off);
	out_s(")\n");
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 100.0;
}

/* "indirect jump 3, unreached 1" from COUNTS, or "none". */
static void print_reason_list(const uint64_t *counts)
{
	bool any = false;
	for (int k = 0; k < CHK_SR_N; k++)
		if (counts[k]) {
			out_fmt("%s%s %" PRIu64, any ? ", " : "",
				chk_stack_reason_name((enum chk_stack_reason)k), counts[k]);
			any = true;
		}
	if (!any)
		out_s("none");
}

static void print_reason_json(const char *key, const uint64_t *counts)
{
	out_fmt(", \"%s\": {", key);
	for (int k = 0; k < CHK_SR_N; k++) {
		out_s(k ? ", " : "");
		out_json_str(chk_stack_reason_name((enum chk_stack_reason)k));
		out_fmt(": %" PRIu64, counts[k]);
	}
	out_c('}');
}

static void print_stack_summary(const char *path, const struct chk_stack_report *r)
{
	uint64_t by_fn[CHK_SR_N];
	for (int k = 0; k < CHK_SR_N; k++)
		by_fn[k] = r->fn_by_reason[k];
	if (g_opts->json) {
		out_s("{\"type\": \"file\", \"file\": ");
		out_json_str(path);
		out_fmt(", \"arch\": \"%s\", \"fdes\": %zu, \"functions_full\": %zu, "
			"\"functions_partial\": %zu, \"functions_skipped\": %zu, "
			"\"functions_from_row\": %zu, \"functions_with_differences\": %zu, "
			"\"instructions\": %" PRIu64 ", \"fill\": %" PRIu64 ", \"checked\": %" PRIu64
			", \"differences\": %zu, \"differences_cfa\": %zu, \"differences_ra\": %zu, "
			"\"differences_regs\": %zu, \"rules_compared\": %" PRIu64
			", \"rules_unknown\": %" PRIu64 ", \"suppressed\": %zu",
			r->arch ? r->arch : "?", r->fdes, r->fn_full, r->fn_partial, r->fn_skipped,
			r->fn_from_row, r->fn_with_diffs, r->insns, r->fill, r->checked, r->diffs,
			r->diffs_cfa, r->diffs_ra, r->diffs_regs, r->rules_compared, r->rules_unknown,
			r->suppressed);
		print_reason_json("not_checked", r->unchecked);
		print_reason_json("given_up", by_fn);
		out_s("}\n");
		return;
	}
	if (r->suppressed)
		out_fmt("%s: note: %zu more findings not kept\n", path, r->suppressed);
	out_fmt("%s: stack: %zu functions (%zu in full, %zu in part, %zu not; %zu from their first "
		"row); %" PRIu64 " of %" PRIu64 " instructions checked (%.2f%%), %zu difference%s",
		path, r->fdes, r->fn_full, r->fn_partial, r->fn_skipped, r->fn_from_row, r->checked,
		r->insns, pct(r->checked, r->insns), r->diffs, r->diffs == 1 ? "" : "s");
	if (r->diffs)
		out_fmt(" in %zu function%s", r->fn_with_diffs, r->fn_with_diffs == 1 ? "" : "s");
	out_s("; not checked: ");
	print_reason_list(r->unchecked);
	out_c('\n');
}

/* The stack analysis of one ELF file: 0 no difference, 1 differences, 2
 * unreadable (or, named by the user, not analysable). */
static int stack_file(const char *path, bool quiet_clean)
{
	struct chk_stack_opts o = { .size = sizeof(o), .max_findings = g_opts->max_findings };
	struct chk_stack_report r;
	int err = chk_stack_file(path, &o, &r);
	if (err) {
		out_flush();
		if (err == BK_E_UNSUPPORTED && quiet_clean && r.arch != NULL) {
			g_tot.unsupported++;
			chk_stack_report_free(&r);
			return 0;
		}
		if (err == BK_E_UNSUPPORTED && r.unsupported)
			cli_error(path, "%s", chk_stack_unsupported(&r));
		else
			cli_file_error(path, err);
		chk_stack_report_free(&r);
		g_tot.unreadable++;
		return 2;
	}
	struct totals *t = &g_tot;
	t->elf_files++;
	t->fdes += r.fdes;
	t->fn_full += r.fn_full;
	t->fn_partial += r.fn_partial;
	t->fn_skipped += r.fn_skipped;
	t->fn_from_row += r.fn_from_row;
	t->fn_with_diffs += r.fn_with_diffs;
	t->files_with_diffs += r.diffs > 0;
	t->insns += r.insns;
	t->fill += r.fill;
	t->checked += r.checked;
	t->diffs += r.diffs;
	t->rules_compared += r.rules_compared;
	t->rules_unknown += r.rules_unknown;
	for (int k = 0; k < CHK_SR_N; k++) {
		t->fn_by_reason[k] += r.fn_by_reason[k];
		t->unchecked[k] += r.unchecked[k];
	}
	/* Waived differences (gate.c): not counted against the file. */
	size_t left = r.diffs;
	for (size_t i = 0; i < r.nf; i++) {
		const struct chk_stack_finding *f = &r.f[i];
		enum gate_why why = gate_active()
			? gate_check(path, f->difference ? "stack" : "cannot-analyse", f->symbol,
				     f->sym_off, f->detail)
			: GATE_NONE;
		if (why) {
			g_tot.waived[why]++;
			left -= f->difference && left;
		}
		if ((f->difference && !why) || g_opts->verbose || g_opts->json)
			print_stack_finding(path, f, why);
	}
	if (!quiet_clean || left || g_opts->verbose || g_opts->json)
		print_stack_summary(path, &r);
	int status = left ? 1 : 0;
	chk_stack_report_free(&r);
	return status;
}

static void print_stack_totals(void)
{
	struct totals *t = &g_tot;
	uint64_t by_fn[CHK_SR_N];
	for (int k = 0; k < CHK_SR_N; k++)
		by_fn[k] = t->fn_by_reason[k];
	if (g_opts->json) {
		out_fmt("{\"type\": \"total\", \"elf_files\": %zu, \"non_elf\": %zu, "
			"\"special\": %zu, \"duplicates\": %zu, \"unreadable\": %zu, "
			"\"unsupported\": %zu, \"files_with_differences\": %zu, \"fdes\": %zu, "
			"\"functions_full\": %zu, \"functions_partial\": %zu, "
			"\"functions_skipped\": %zu, \"functions_from_row\": %zu, "
			"\"functions_with_differences\": %zu, \"instructions\": %" PRIu64
			", \"fill\": %" PRIu64 ", \"checked\": %" PRIu64 ", \"differences\": %" PRIu64
			", \"rules_compared\": %" PRIu64 ", \"rules_unknown\": %" PRIu64,
			t->elf_files, t->nonelf, t->special, t->dup, t->unreadable, t->unsupported,
			t->files_with_diffs, t->fdes, t->fn_full, t->fn_partial, t->fn_skipped,
			t->fn_from_row, t->fn_with_diffs, t->insns, t->fill, t->checked, t->diffs,
			t->rules_compared, t->rules_unknown);
		print_reason_json("not_checked", t->unchecked);
		print_reason_json("given_up", by_fn);
		out_s("}\n");
		return;
	}
	out_s("\n== backstep check --stack: totals ==\n");
	out_fmt("ELF files analysed    %zu (%zu with differences)\n", t->elf_files,
		t->files_with_diffs);
	out_fmt("skipped               %zu non-ELF, %zu special files, %zu already seen (links), "
		"%zu links to directories, %zu not analysable (machine, relocatable)\n", t->nonelf,
		t->special, t->dup, t->dir_links, t->unsupported);
	if (t->too_deep)
		out_fmt("not entered           %zu directories nested deeper than %d\n", t->too_deep,
			MAX_DEPTH);
	out_fmt("unreadable ELF files  %zu\n", t->unreadable);
	out_fmt("functions (FDEs)      %zu: %zu in full, %zu in part, %zu not; %zu from their first "
		"row\n", t->fdes, t->fn_full, t->fn_partial, t->fn_skipped, t->fn_from_row);
	out_fmt("instructions          %" PRIu64 ": %" PRIu64 " checked (%.2f%%), %" PRIu64
		" fill not reached\n", t->insns, t->checked, pct(t->checked, t->insns), t->fill);
	out_fmt("register rules        %" PRIu64 " compared, %" PRIu64 " undecided\n",
		t->rules_compared, t->rules_unknown);
	out_fmt("differences           %" PRIu64 " instructions in %zu functions\n", t->diffs,
		t->fn_with_diffs);
	out_s("not checked           ");
	print_reason_list(t->unchecked);
	out_s("\nfunctions given up    ");
	print_reason_list(by_fn);
	out_c('\n');
}
#else
static int stack_file(const char *path, bool quiet_clean)
{
	(void)quiet_clean;
	cli_error(path, "check --stack: not built: Capstone was not found at configure time");
	g_tot.unreadable++;
	return 2;
}

static void print_stack_totals(void)
{
}
#endif

/* Check one ELF file: 0 clean, 1 errors found, 2 unreadable. QUIET_CLEAN:
 * print no summary line for a file with no error or warning (directories). */
static int check_file(const char *path, bool quiet_clean)
{
	if (g_opts->stack)
		return stack_file(path, quiet_clean);
	struct chk_opts o = { .size = sizeof(o) };
	struct chk_report r;
	int err = chk_file(path, &o, &r);
	if (err) {
		chk_report_free(&r);
		out_flush();
		if (err == BK_E_UNSUPPORTED && quiet_clean) {
			g_tot.unsupported++;
			return 0;
		}
		cli_file_error(path, err);
		g_tot.unreadable++;
		return 2;
	}
	g_tot.elf_files++;
	g_tot.fdes_eh += r.nfdes_eh;
	g_tot.fdes_debug += r.nfdes_debug;
	g_tot.exec_bytes += r.exec_bytes;
	g_tot.covered_bytes += r.covered_bytes;
	g_tot.padding_bytes += r.padding_bytes;
	g_tot.gap_bytes += r.gap_bytes;
	g_tot.relocatable += r.relocatable;
	for (int k = 0; k < CHK_NKINDS; k++)
		for (int s = 0; s < CHK_SEV_N; s++)
			g_tot.counts[k][s] += r.counts[k][s];
	if (r.no_tables && note_no_tables(path) != 0) {
		chk_report_free(&r);
		cli_error(path, "out of memory");
		return 2;
	}
	/* Waived findings (gate.c) are printed with -v and --json only and
	 * do not count as errors or warnings. Findings beyond the per-kind
	 * limit were never kept: they cannot be waived one by one. */
	g_file_waived[GATE_BASELINE] = g_file_waived[GATE_SUPPRESSED] = 0;
	enum gate_why *why = calloc(r.nf ? r.nf : 1, sizeof(*why));
	if (!why) {
		chk_report_free(&r);
		cli_error(path, "out of memory");
		return 2;
	}
	for (size_t i = 0; i < r.nf && gate_active(); i++) {
		const struct chk_finding *f = &r.f[i];
		why[i] = gate_check(path, chk_kind_name(f->kind), f->symbol, f->sym_off, f->detail);
		if (!why[i])
			continue;
		g_file_waived[why[i]]++;
		g_tot.waived[why[i]]++;
		if (f->sev == CHK_SEV_ERROR)
			r.nerrors--;
		else if (f->sev == CHK_SEV_WARNING)
			r.nwarnings--;
		else
			r.ninfos--;
	}
	g_tot.toolchain_gap_bytes += r.toolchain_gap_bytes;
	for (size_t i = 0; i < r.nf; i++)
		if ((r.f[i].sev != CHK_SEV_INFO && !why[i]) || g_opts->verbose || g_opts->json)
			print_finding(path, &r.f[i], why[i]);
	if (!g_opts->json && !g_opts->verbose && (!quiet_clean || r.nerrors || r.nwarnings))
		print_toolchain_line(path, &r);
	free(why);
	if (r.nerrors)
		g_tot.files_with_errors++;
	if (r.nwarnings)
		g_tot.files_with_warnings++;
	if (!quiet_clean || r.nerrors || r.nwarnings || g_opts->verbose || g_opts->json)
		print_file_summary(path, &r);
	int status = r.nerrors ? 1 : 0;
	chk_report_free(&r);
	return status;
}

/* True the first time the file (device, inode) is seen. */
static bool first_visit(const struct stat *st)
{
	if (g_tot.nseen * 2 >= g_tot.cap_seen) {
		size_t ncap = g_tot.cap_seen ? g_tot.cap_seen * 2 : 1024;
		void *p = calloc(ncap, sizeof(*g_tot.seen));
		if (!p)
			return true; /* checking twice is harmless */
		struct seen *old = g_tot.seen;
		size_t oldcap = g_tot.cap_seen;
		g_tot.seen = p;
		g_tot.cap_seen = ncap;
		g_tot.nseen = 0;
		for (size_t i = 0; i < oldcap; i++)
			if (old[i].used) {
				struct stat s2 = { .st_dev = old[i].dev, .st_ino = old[i].ino };
				first_visit(&s2);
			}
		free(old);
	}
	size_t mask = g_tot.cap_seen - 1;
	size_t i = (size_t)((uint64_t)st->st_ino * 0x9e3779b97f4a7c15u ^ (uint64_t)st->st_dev) & mask;
	while (g_tot.seen[i].used) {
		if (g_tot.seen[i].dev == st->st_dev && g_tot.seen[i].ino == st->st_ino)
			return false;
		i = (i + 1) & mask;
	}
	g_tot.seen[i].used = true;
	g_tot.seen[i].dev = st->st_dev;
	g_tot.seen[i].ino = st->st_ino;
	g_tot.nseen++;
	return true;
}

static bool has_elf_magic(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return true; /* let the check say why it cannot be read */
	unsigned char m[4];
	ssize_t n = read(fd, m, 4);
	close(fd);
	return n == 4 && m[0] == 0x7f && m[1] == 'E' && m[2] == 'L' && m[3] == 'F';
}

static int check_dir(const char *dir, unsigned depth);

/* An entry found inside a directory. */
static int check_entry(const char *path, unsigned depth)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0; /* vanished meanwhile */
	if (S_ISLNK(st.st_mode)) {
		if (stat(path, &st) != 0)
			return 0; /* dangling link */
		if (S_ISDIR(st.st_mode)) {
			g_tot.dir_links++;
			return 0;
		}
	}
	if (S_ISDIR(st.st_mode))
		return check_dir(path, depth + 1);
	if (!S_ISREG(st.st_mode)) {
		g_tot.special++;
		return 0;
	}
	if (!first_visit(&st)) {
		g_tot.dup++;
		return 0;
	}
	if (!has_elf_magic(path)) {
		g_tot.nonelf++;
		return 0;
	}
	return check_file(path, true);
}

static int check_dir(const char *dir, unsigned depth)
{
	if (depth > MAX_DEPTH) {
		g_tot.too_deep++;
		return 0;
	}
	struct dirent **names;
	int n = scandir(dir, &names, NULL, alphasort);
	if (n < 0) {
		out_flush();
		cli_error(dir, "cannot read directory: %s", strerror(errno));
		g_tot.unreadable++;
		return 2;
	}
	int status = 0;
	size_t dlen = strlen(dir);
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || cli_interrupted) {
			free(names[i]);
			continue;
		}
		size_t len = dlen + strlen(name) + 2;
		char *path = malloc(len);
		if (path) {
			snprintf(path, len, "%s%s%s", dir, dlen && dir[dlen - 1] == '/' ? "" : "/", name);
			int s = check_entry(path, depth);
			status = s > status ? s : status;
			free(path);
		}
		free(names[i]);
	}
	free(names);
	return status;
}

/* ---- Totals ------------------------------------------------------------- */

static void print_totals(void)
{
	struct totals *t = &g_tot;
	if (g_opts->stack) {
		print_stack_totals();
		return;
	}
	if (g_opts->json) {
		out_fmt("{\"type\": \"total\", \"elf_files\": %zu, \"non_elf\": %zu, \"special\": %zu, "
			"\"duplicates\": %zu, \"unreadable\": %zu, \"unsupported\": %zu, "
			"\"relocatable\": %zu, \"no_tables\": %zu, \"fdes_eh_frame\": %" PRIu64
			", \"fdes_debug_frame\": %" PRIu64 ", \"exec_bytes\": %" PRIu64
			", \"covered_bytes\": %" PRIu64 ", \"padding_bytes\": %" PRIu64
			", \"gap_bytes\": %" PRIu64 ", \"files_with_errors\": %zu, "
			"\"files_with_warnings\": %zu, \"toolchain_gap_bytes\": %" PRIu64 ", "
			"\"waived_baseline\": %zu, \"waived_suppressed\": %zu, \"kinds\": {",
			t->elf_files, t->nonelf, t->special, t->dup, t->unreadable, t->unsupported,
			t->relocatable, t->nno_tables, t->fdes_eh, t->fdes_debug, t->exec_bytes,
			t->covered_bytes, t->padding_bytes, t->gap_bytes, t->files_with_errors,
			t->files_with_warnings, t->toolchain_gap_bytes, t->waived[GATE_BASELINE],
			t->waived[GATE_SUPPRESSED]);
		for (int k = 0; k < CHK_NKINDS; k++)
			out_fmt("%s\"%s\": {\"error\": %zu, \"warning\": %zu, \"info\": %zu}",
				k ? ", " : "", chk_kind_name((enum chk_kind)k),
				t->counts[k][CHK_SEV_ERROR], t->counts[k][CHK_SEV_WARNING],
				t->counts[k][CHK_SEV_INFO]);
		out_s("}}\n");
		return;
	}
	out_s("\n== backstep check: totals ==\n");
	out_fmt("ELF files checked     %zu (%zu relocatable objects)\n", t->elf_files,
		t->relocatable);
	out_fmt("skipped               %zu non-ELF, %zu special files, %zu already seen (links), "
		"%zu links to directories, %zu unsupported ELF\n", t->nonelf, t->special, t->dup,
		t->dir_links, t->unsupported);
	if (t->too_deep)
		out_fmt("not entered           %zu directories nested deeper than %d\n", t->too_deep,
			MAX_DEPTH);
	out_fmt("unreadable ELF files  %zu\n", t->unreadable);
	out_fmt("FDEs                  %" PRIu64 " (.eh_frame %" PRIu64 ", .debug_frame %" PRIu64
		")\n", t->fdes_eh + t->fdes_debug, t->fdes_eh, t->fdes_debug);
	if (t->exec_bytes)
		out_fmt("executable bytes      %" PRIu64 ": %.3f%% covered, %" PRIu64
			" padding, %" PRIu64 " in gaps, %" PRIu64 " in toolchain gaps\n", t->exec_bytes,
			100.0 * (double)t->covered_bytes / (double)t->exec_bytes, t->padding_bytes,
			t->gap_bytes, t->toolchain_gap_bytes);
	out_fmt("files with errors     %zu; with warnings %zu\n", t->files_with_errors,
		t->files_with_warnings);
	if (t->waived[GATE_BASELINE] || t->waived[GATE_SUPPRESSED])
		out_fmt("waived findings       %zu in the baseline, %zu suppressed\n",
			t->waived[GATE_BASELINE], t->waived[GATE_SUPPRESSED]);
	out_fmt("no unwind tables      %zu file%s\n", t->nno_tables, t->nno_tables == 1 ? "" : "s");
	for (size_t i = 0; i < t->nno_tables; i++)
		out_fmt("  %s\n", t->no_tables[i]);
	out_fmt("\n%-18s %9s %9s %9s\n", "kind", "errors", "warnings", "info");
	size_t sum[CHK_SEV_N] = { 0 };
	for (int k = 0; k < CHK_NKINDS; k++) {
		out_fmt("%-18s %9zu %9zu %9zu\n", chk_kind_name((enum chk_kind)k),
			t->counts[k][CHK_SEV_ERROR], t->counts[k][CHK_SEV_WARNING],
			t->counts[k][CHK_SEV_INFO]);
		for (int s = 0; s < CHK_SEV_N; s++)
			sum[s] += t->counts[k][s];
	}
	out_fmt("%-18s %9zu %9zu %9zu\n", "total", sum[CHK_SEV_ERROR], sum[CHK_SEV_WARNING],
		sum[CHK_SEV_INFO]);
}

static const char usage_text[] =
	"usage: backstep check [--json] [-v] [--stack [--max-findings N]] [--baseline FILE]\n"
	"                      [--suppress KIND[:SYMBOL]] FILE|DIR...\n"
	"  --stack            compare the stack state the code implies with the CFI row at\n"
	"                     every instruction of every function (x86-64); exit status 1\n"
	"                     when they differ anywhere, whatever the table checks say\n"
	"  --max-findings N   --stack: list at most N differences, and N functions not\n"
	"                     checked in full, per file (default 1000; the rest counted)\n"
	"  --baseline FILE    findings recorded earlier by check --json are not errors\n"
	"  --suppress KIND[:SYMBOL]\n"
	"                     findings of KIND (gap, overlap, ..., stack), or only those\n"
	"                     at SYMBOL, are not errors (repeatable)\n"
	"  -v, --verbose      info and waived findings too\n"
	"exit status: 0 no error left, 1 errors, 2 an input could not be read\n";

static bool kind_ok(const char *kind)
{
	for (int k = 0; k < CHK_NKINDS; k++)
		if (!strcmp(kind, chk_kind_name((enum chk_kind)k)))
			return true;
	return !strcmp(kind, "stack") || !strcmp(kind, "cannot-analyse");
}

int cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "stack", no_argument, NULL, 's' },
		{ "max-findings", required_argument, NULL, 'M' },
		{ "baseline", required_argument, NULL, 'B' },
		{ "suppress", required_argument, NULL, 'X' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct check_opts opts = { 0 };
	char why[256];
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, "jvh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'j': opts.json = true; break;
		case 'v': opts.verbose = true; break;
		case 's': opts.stack = true; break;
		case 'M': {
			char *end;
			errno = 0;
			unsigned long n = strtoul(optarg, &end, 10);
			if (errno || end == optarg || *end || optarg[0] == '-' || n < 1 ||
			    n > 100000000) {
				cli_error("--max-findings", "'%s' is not a number from 1 to 100000000",
					  optarg);
				gate_free();
				return 2;
			}
			opts.max_findings = (unsigned)n;
			break;
		}
		case 'B':
			if (gate_load_baseline(optarg, why, sizeof(why))) {
				cli_error(optarg, "baseline: %s", why);
				gate_free();
				return 2;
			}
			break;
		case 'X': {
			int e = gate_suppress(optarg, kind_ok);
			if (e) {
				cli_error("--suppress", e == -1 ? "too many" : "'%s' is not a kind of "
					  "finding (gap, overlap, eh-frame-hdr, outside-code, ...; stack, "
					  "cannot-analyse)", optarg);
				gate_free();
				return 2;
			}
			break;
		}
		case 'h': out_s(usage_text); out_flush(); return 0;
		default: fputs(usage_text, stderr); gate_free(); return 2;
		}
	}
	if (optind >= argc) {
		cli_error("check", "no file named (usage: backstep check [OPTIONS] FILE|DIR...)");
		gate_free();
		return 2;
	}
	g_opts = &opts;
	int status = 0;
	bool totals = argc - optind > 1;
	for (int i = optind; i < argc; i++) {
		const char *path = argv[i];
		struct stat st;
		int s;
		if (stat(path, &st) != 0) {
			cli_error(path, "%s", strerror(errno));
			s = 2;
		} else if (S_ISDIR(st.st_mode)) {
			totals = true;
			s = check_dir(path, 0);
		} else if (!S_ISREG(st.st_mode)) {
			cli_error(path, "not a regular file");
			s = 2;
		} else {
			first_visit(&st);
			s = check_file(path, false);
		}
		status = s > status ? s : status;
	}
	if (totals)
		print_totals();
	out_flush();
	for (size_t i = 0; i < g_tot.nno_tables; i++)
		free(g_tot.no_tables[i]);
	free(g_tot.no_tables);
	free(g_tot.seen);
	gate_free();
	return status;
}
