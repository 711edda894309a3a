/* Static checks of one ELF file's unwind tables; the table of checks and
 * their severities is in chk.h.
 *
 * One pass over each CFI section frames every entry (cfi_entry_at), decodes
 * each CIE once and each FDE (cfi_decode_fde), scans the FDE's instructions
 * (cfi_decode_insn) for the remember/restore balance and runs the program
 * through the state machine (cfi_machine_next) to its end, checking the
 * first row. The FDEs seen, in section order, then feed the .eh_frame_hdr
 * check (every table entry against them), the overlap check (sorted by
 * address, per section) and the coverage check (both sections merged,
 * subtracted from the executable sections, what is left split at function
 * symbols and sorted into fill and gaps).
 *
 * Invariant: a problem is reported once, where it starts: an FDE naming a
 * broken CIE is counted under that CIE; a program that stops on an
 * instruction the scan already reported is not reported again by the
 * machine.
 *
 * Trusts its caller for a path; everything read from the file is bounded
 * by the loader's checks, the bounded reader and libelf.
 */
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "chk.h"

#include "../arch/arch.h"
#include "../base/dwarf.h"
#include "../cfi/cfi.h"
#include "../loader/loader.h"
#include "../sym/sym.h"
#include "../unwind/unwind.h"

#define DEFAULT_MAX_PER_KIND 1000

static const char *const kind_names[CHK_NKINDS] = {
	[CHK_GAP] = "gap",
	[CHK_OVERLAP] = "overlap",
	[CHK_HDR] = "eh-frame-hdr",
	[CHK_OUTSIDE] = "outside-code",
	[CHK_DISCARDED] = "discarded",
	[CHK_ZERO_LENGTH] = "zero-length",
	[CHK_DECODE] = "decode",
	[CHK_PROGRAM] = "cfa-program",
	[CHK_ENTRY_ROW] = "entry-row",
	[CHK_STATE_STACK] = "state-stack",
	[CHK_NO_TABLES] = "no-unwind-tables",
	[CHK_TOOLCHAIN_GAP] = "toolchain-gap",
};

const char *chk_kind_name(enum chk_kind kind)
{
	return (unsigned)kind < CHK_NKINDS ? kind_names[kind] : "?";
}

const char *chk_sev_name(enum chk_sev sev)
{
	static const char *const names[CHK_SEV_N] = { "info", "warning", "error" };
	return (unsigned)sev < CHK_SEV_N ? names[sev] : "?";
}

/* ---- State -------------------------------------------------------------- */

/* An FDE that decoded. */
struct fde_rec {
	uint64_t lo, hi;      /* [pc_begin, pc_end) */
	uint64_t off;         /* in its section */
	bool discarded;       /* .debug_frame leftover of dropped code */
	bool listed;          /* .eh_frame: named by .eh_frame_hdr's table */
};

struct fde_vec {
	struct fde_rec *p;
	size_t n, cap;
};

/* A CIE, decoded once: open addressing on its offset. */
struct cie_rec {
	uint64_t key;         /* offset + 1; 0 = empty slot */
	int err;              /* cfi_decode_cie */
	int init_err;         /* its initial instructions, once run */
	bool init_done;
	size_t lost_fdes;     /* FDEs that failed because of it */
};

struct cie_map {
	struct cie_rec *slots;
	size_t nslots, nused;
};

struct ctx {
	struct chk_report *r;
	unsigned max_per_kind;
	int nomem;            /* BK_E_NOMEM once an allocation failed */
	struct chk_image im;  /* the file: sections, symbols */
	const struct arch_info *arch;
	struct fde_vec fdes[2]; /* .eh_frame, .debug_frame */
	size_t eh_fde_entries;  /* FDE entries framed in .eh_frame, decoded or not */
	uint64_t entry_cover_end; /* end of the covered range holding e_entry, or 0 */
};

static const char *const sec_names[2] = { ".eh_frame", ".debug_frame" };

/* ---- Findings ----------------------------------------------------------- */

struct where {
	const char *section;
	bool has_addr;
	uint64_t addr, end;
	bool has_entry;
	uint64_t entry_off;
};

static void add(struct ctx *c, enum chk_sev sev, enum chk_kind kind, const struct where *w,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void add(struct ctx *c, enum chk_sev sev, enum chk_kind kind, const struct where *w,
		const char *fmt, ...)
{
	struct chk_report *r = c->r;
	r->counts[kind][sev]++;
	if (sev == CHK_SEV_ERROR)
		r->nerrors++;
	else if (sev == CHK_SEV_WARNING)
		r->nwarnings++;
	else
		r->ninfos++;
	size_t kept = 0;
	for (int s = 0; s < CHK_SEV_N; s++)
		kept += r->counts[kind][s];
	if (kept > c->max_per_kind) {
		r->suppressed[kind]++;
		return;
	}
	if (r->nf == r->capf) {
		size_t ncap = r->capf ? r->capf * 2 : 16;
		void *p = base_realloc(r->f, ncap * sizeof(*r->f));
		if (!p) {
			c->nomem = BK_E_NOMEM;
			return;
		}
		r->f = p;
		r->capf = ncap;
	}
	char text[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);

	struct chk_finding *f = &r->f[r->nf];
	memset(f, 0, sizeof(*f));
	f->sev = sev;
	f->kind = kind;
	if (w) {
		f->section = w->section;
		f->has_addr = w->has_addr;
		f->addr = w->addr;
		f->end = w->end;
		f->has_entry = w->has_entry;
		f->entry_off = w->entry_off;
	}
	if (f->has_addr && !c->r->relocatable) {
		struct sym_symbol *s = chk_image_sym(&c->im, f->addr);
		const char *name = chk_image_sym_name(&c->im, s);
		if (name) {
			f->symbol = base_strdup(name);
			f->sym_off = f->addr - s->start;
			if (!f->symbol) {
				c->nomem = BK_E_NOMEM;
				return;
			}
		} else {
			const struct chk_region *rg = chk_region_of(c->im.alloc, c->im.nalloc, f->addr);
			if (rg && rg->name && !(f->code_section = base_strdup(rg->name))) {
				c->nomem = BK_E_NOMEM;
				return;
			}
		}
	}
	f->detail = base_strdup(text);
	if (!f->detail) {
		base_free(f->symbol);
		base_free(f->code_section);
		c->nomem = BK_E_NOMEM;
		return;
	}
	r->nf++;
}

static struct where at_entry(int k, uint64_t off)
{
	return (struct where){ .section = sec_names[k], .has_entry = true, .entry_off = off };
}

static struct where at_fde(int k, uint64_t off, uint64_t lo, uint64_t hi)
{
	return (struct where){ .section = sec_names[k], .has_addr = true, .addr = lo, .end = hi,
			       .has_entry = true, .entry_off = off };
}

/* ---- File layout -------------------------------------------------------- */

/* True when [lo, hi) lies in executable code: inside one region, or a run
 * of regions that touch. */
static bool in_exec(const struct ctx *c, uint64_t lo, uint64_t hi)
{
	const struct chk_region *rg = chk_region_of(c->im.exec, c->im.nexec, lo);
	if (!rg)
		return false;
	for (size_t i = (size_t)(rg - c->im.exec); i < c->im.nexec; i++) {
		if (c->im.exec[i].lo > lo)
			return false;
		if (hi <= c->im.exec[i].hi)
			return true;
		lo = c->im.exec[i].hi;
	}
	return false;
}

/* ---- CIEs --------------------------------------------------------------- */

static struct cie_rec *cie_slot(struct cie_map *m, uint64_t off)
{
	size_t mask = m->nslots - 1, i = (size_t)(off * 0x9e3779b97f4a7c15u >> 20) & mask;
	while (m->slots[i].key && m->slots[i].key != off + 1)
		i = (i + 1) & mask;
	return &m->slots[i];
}

/* The record of the CIE at OFF, decoding it on first sight; NULL on NOMEM. */
static struct cie_rec *cie_get(struct ctx *c, struct cie_map *m, const struct cfi_section *sec,
			       uint64_t off)
{
	if (m->nused * 2 >= m->nslots) {
		size_t n = m->nslots ? m->nslots * 2 : 64;
		struct cie_map g = { base_calloc(n, sizeof(struct cie_rec)), n, 0 };
		if (!g.slots) {
			c->nomem = BK_E_NOMEM;
			return NULL;
		}
		for (size_t i = 0; i < m->nslots; i++)
			if (m->slots[i].key) {
				*cie_slot(&g, m->slots[i].key - 1) = m->slots[i];
				g.nused++;
			}
		base_free(m->slots);
		*m = g;
	}
	struct cie_rec *rec = cie_slot(m, off);
	if (!rec->key) {
		struct cfi_cie cie;
		rec->key = off + 1;
		rec->err = cfi_decode_cie(sec, off, &cie);
		m->nused++;
	}
	return rec;
}

/* ---- One FDE ------------------------------------------------------------ */

static void describe_rule(const struct ctx *c, const struct cfi_rule *r, bool cfa, char *buf,
			  size_t len)
{
	const char *rn;
	char tmp[16];
	if (!r) {
		snprintf(buf, len, "no rule");
		return;
	}
	switch (r->kind) {
	case BK_RULE_CFA_REG_OFFSET:
		rn = arch_reg_name(c->arch, r->reg);
		if (!rn) {
			snprintf(tmp, sizeof(tmp), "r%u", r->reg);
			rn = tmp;
		}
		snprintf(buf, len, "%s%+" PRId64, rn, r->value);
		return;
	case BK_RULE_CFA_EXPRESSION:
		snprintf(buf, len, "an expression");
		return;
	case BK_RULE_UNDEFINED: snprintf(buf, len, "undefined"); return;
	case BK_RULE_SAME_VALUE: snprintf(buf, len, "same value"); return;
	case BK_RULE_OFFSET: snprintf(buf, len, "at CFA%+" PRId64, r->value); return;
	case BK_RULE_VAL_OFFSET: snprintf(buf, len, "= CFA%+" PRId64, r->value); return;
	case BK_RULE_REGISTER:
		rn = arch_reg_name(c->arch, r->reg);
		snprintf(buf, len, "in %s", rn ? rn : "another register");
		return;
	case BK_RULE_EXPRESSION:
	case BK_RULE_VAL_EXPRESSION:
		snprintf(buf, len, "an expression");
		return;
	}
	snprintf(buf, len, cfa ? "undefined" : "?");
}

/* glibc's _dl_runtime_resolve* and _dl_runtime_profile* (sysdeps/x86_64/
 * dl-trampoline.h, aarch64 dl-trampoline.S) are not called: PLT0 jumps to
 * them after it and the PLT entry pushed two words, and their CFI says so
 * ("Incorporate PLT"). Their first row is right; it is not a call site's. */
static bool is_lazy_binding_trampoline(const char *name)
{
	return !strncmp(name, "_dl_runtime_resolve", 19) || !strncmp(name, "_dl_runtime_profile", 19);
}

/* The first row of an FDE against the state right after a call. */
static void check_entry_row(struct ctx *c, int k, const struct cfi_cie *cie,
			    const struct cfi_fde *fde, const struct cfi_row *row)
{
	const struct arch_info *a = c->arch;
	struct where w = at_fde(k, fde->off, fde->pc_begin, fde->pc_end);
	if (!a || (a->arch != BK_ARCH_X86_64 && a->arch != BK_ARCH_AARCH64))
		return;
	if (cie->signal_frame) {
		add(c, CHK_SEV_INFO, CHK_ENTRY_ROW, &w,
		    "signal trampoline (CIE augmentation 'S'): entry row not checked");
		return;
	}
	const struct cfi_rule *ra = cfi_row_rule(row, (unsigned)cie->ra_reg);
	if (ra && ra->kind == BK_RULE_UNDEFINED) {
		add(c, CHK_SEV_INFO, CHK_ENTRY_ROW, &w,
		    "outermost frame: return address undefined at entry");
		return;
	}
	bool ok;
	int64_t want_cfa = a->arch == BK_ARCH_X86_64 ? 8 : 0;
	ok = row->cfa.kind == BK_RULE_CFA_REG_OFFSET && row->cfa.reg == a->sp_reg &&
	     row->cfa.value == want_cfa && cie->ra_reg == a->ra_reg;
	if (a->arch == BK_ARCH_X86_64)
		ok = ok && ra && ra->kind == BK_RULE_OFFSET && ra->value == -8;
	else
		ok = ok && (!ra || ra->kind == BK_RULE_SAME_VALUE);
	if (ok)
		return;

	char cfa_text[64], ra_text[64], ra_col[24];
	describe_rule(c, row->cfa.kind ? &row->cfa : NULL, true, cfa_text, sizeof(cfa_text));
	describe_rule(c, ra, false, ra_text, sizeof(ra_text));
	if (cie->ra_reg != a->ra_reg)
		snprintf(ra_col, sizeof(ra_col), " (column %" PRIu64 ")", cie->ra_reg);
	else
		ra_col[0] = 0;
	const char *want = a->arch == BK_ARCH_X86_64 ? "CFA=rsp+8, RA at CFA-8"
						     : "CFA=sp+0, x30 unchanged";
	struct sym_symbol *s = c->r->relocatable ? NULL : chk_image_sym_at(&c->im, fde->pc_begin);
	if (s && is_lazy_binding_trampoline(s->name) && ra && ra->kind == BK_RULE_OFFSET) {
		add(c, CHK_SEV_INFO, CHK_ENTRY_ROW, &w,
		    "first row CFA=%s: a lazy-binding trampoline, entered by a jump from PLT0 "
		    "with two more words on the stack", cfa_text);
	} else if (s && !strstr(s->name, ".cold")) {
		add(c, CHK_SEV_ERROR, CHK_ENTRY_ROW, &w,
		    "first row CFA=%s, RA%s %s; a function entry needs %s", cfa_text, ra_col,
		    ra_text, want);
	} else {
		const struct chk_region *rg = chk_region_of(c->im.alloc, c->im.nalloc, fde->pc_begin);
		bool plt = rg && rg->name && !strncmp(rg->name, ".plt", 4);
		add(c, CHK_SEV_INFO, CHK_ENTRY_ROW, &w,
		    "first row CFA=%s, RA%s %s: %s", cfa_text, ra_col, ra_text,
		    s ? "a split-off part (.cold)"
		    : c->r->relocatable ? "relocatable object: cannot tell an entry from a part"
		    : plt ? "PLT code, entered by a jump from a PLT entry"
			  : "no function symbol starts here (a split-off part?)");
	}
}

/* Scan the instructions for decode errors and the remember/restore balance;
 * true when it reported something the machine would stop on again. */
static bool scan_program(struct ctx *c, int k, const struct cfi_section *sec,
			 const struct cfi_cie *cie, const struct cfi_fde *fde)
{
	struct buf b = { fde->insns, fde->insns_end };
	unsigned depth = 0;
	uint64_t loc = fde->pc_begin;
	bool stop = false;
	struct where w = at_fde(k, fde->off, fde->pc_begin, fde->pc_end);

	while (buf_left(&b)) {
		uint64_t at = (uint64_t)(b.p - sec->data);
		struct cfi_insn in;
		int err = cfi_decode_insn(&b, sec, cie, fde, &in);
		if (err) {
			add(c, err == BK_E_LIMIT ? CHK_SEV_WARNING : CHK_SEV_ERROR, CHK_PROGRAM, &w,
			    "instruction at section offset 0x%" PRIx64 " (pc 0x%" PRIx64 "): %s", at,
			    loc, bk_strerror(err));
			return true;
		}
		switch (in.opcode) {
		case DW_CFA_advance_loc:
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_MIPS_advance_loc8:
			loc += in.u;
			break;
		case DW_CFA_set_loc:
			loc = in.u;
			break;
		case DW_CFA_remember_state:
			depth++;
			break;
		case DW_CFA_restore_state:
			if (depth == 0) {
				if (!stop)
					add(c, CHK_SEV_ERROR, CHK_STATE_STACK, &w,
					    "DW_CFA_restore_state at section offset 0x%" PRIx64
					    " (pc 0x%" PRIx64 ") with nothing remembered", at, loc);
				stop = true;
			} else {
				depth--;
			}
			break;
		}
	}
	if (depth && !stop)
		add(c, CHK_SEV_WARNING, CHK_STATE_STACK, &w,
		    "%u DW_CFA_remember_state never restored", depth);
	return stop;
}

static void run_program(struct ctx *c, int k, const struct cfi_section *sec,
			const struct cfi_cie *cie, const struct cfi_fde *fde, struct cie_rec *rec,
			bool scan_reported)
{
	struct cfi_machine m;
	struct cfi_row row;
	int err;

	if (rec && rec->init_done && rec->init_err)
		return; /* reported once for the CIE */
	err = cfi_machine_init(&m, sec, cie, fde);
	if (rec && !rec->init_done) {
		rec->init_done = true;
		rec->init_err = err;
		if (err) {
			struct where w = at_entry(k, cie->off);
			add(c, err == BK_E_LIMIT ? CHK_SEV_WARNING : CHK_SEV_ERROR, CHK_PROGRAM, &w,
			    "CIE initial instructions: %s", bk_strerror(err));
		}
	}
	if (err)
		return;
	unsigned n = 0;
	while ((err = cfi_machine_next(&m, &row)) == 1)
		if (n++ == 0)
			check_entry_row(c, k, cie, fde, &row);
	if (m.nonstandard_at) {
		struct where w = at_fde(k, fde->off, fde->pc_begin, fde->pc_end);
		add(c, CHK_SEV_WARNING, CHK_PROGRAM, &w,
		    "DW_CFA_def_cfa_register at section offset 0x%" PRIx64 " while the CFA rule is "
		    "an expression: DWARF 5 6.4.2.2 allows it only after a register+offset rule; "
		    "unwound as libgcc and gdb do, with the last register+offset rule's offset",
		    m.nonstandard_at);
	}
	if (err && !scan_reported) {
		/* The machine stopped just past the failing instruction: find it. */
		struct buf b = { fde->insns, fde->insns_end };
		struct cfi_insn in = { 0 };
		uint64_t start = (uint64_t)(fde->insns - sec->data);
		while (b.p < m.insns.p) {
			start = (uint64_t)(b.p - sec->data);
			if (cfi_decode_insn(&b, sec, cie, fde, &in))
				break;
		}
		const char *why = "";
		if ((in.opcode == DW_CFA_def_cfa_register || in.opcode == DW_CFA_def_cfa_offset ||
		     in.opcode == DW_CFA_def_cfa_offset_sf) &&
		    m.row.cfa.kind == BK_RULE_CFA_EXPRESSION)
			why = " (the CFA rule is an expression: DWARF 5 6.4.2.2 allows this only "
			      "after a register+offset rule)";
		struct where w = at_fde(k, fde->off, fde->pc_begin, fde->pc_end);
		add(c, err == BK_E_LIMIT ? CHK_SEV_WARNING : CHK_SEV_ERROR, CHK_PROGRAM, &w,
		    "%s at section offset 0x%" PRIx64 " (pc 0x%" PRIx64 "): %s%s",
		    cfi_insn_name(in.opcode), start, m.row.loc, bk_strerror(err), why);
	}
}

static bool is_tombstone(uint64_t addr, uint8_t addr_size)
{
	uint64_t top = addr_size == 4 ? 0xffffffffu : UINT64_MAX;
	return addr == 0 || addr >= top - 0xfff;
}

static void check_fde(struct ctx *c, int k, const struct cfi_section *sec, struct cie_map *cies,
		      const struct cfi_entry *e)
{
	struct cfi_fde fde;
	struct cfi_cie cie;
	int err = cfi_decode_fde(sec, e->off, &fde, &cie);
	struct cie_rec *rec = cie_get(c, cies, sec, e->cie_off);
	if (err) {
		if (rec && rec->err) {
			rec->lost_fdes++;
			return;
		}
		struct where w = at_entry(k, e->off);
		add(c, CHK_SEV_ERROR, CHK_DECODE, &w, "FDE: %s", bk_strerror(err));
		return;
	}
	if (k == 0)
		c->r->nfdes_eh++;
	else
		c->r->nfdes_debug++;

	struct fde_vec *v = &c->fdes[k];
	if (v->n == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 256;
		void *p = base_realloc(v->p, ncap * sizeof(*v->p));
		if (!p) {
			c->nomem = BK_E_NOMEM;
			return;
		}
		v->p = p;
		v->cap = ncap;
	}
	struct fde_rec *fr = &v->p[v->n++];
	*fr = (struct fde_rec){ fde.pc_begin, fde.pc_end, fde.off, false, false };
	struct where w = at_fde(k, fde.off, fde.pc_begin, fde.pc_end);

	if (fde.pc_begin >= fde.pc_end) {
		add(c, CHK_SEV_INFO, CHK_ZERO_LENGTH, &w, "FDE covers no bytes (at 0x%" PRIx64 ")",
		    fde.pc_begin);
		return;
	}
	if (!c->r->relocatable && !in_exec(c, fde.pc_begin, fde.pc_end)) {
		if (k == 1 && is_tombstone(fde.pc_begin, sec->addr_size)) {
			fr->discarded = true;
			add(c, CHK_SEV_INFO, CHK_DISCARDED, &w,
			    "FDE 0x%" PRIx64 "..0x%" PRIx64 " describes code the linker dropped",
			    fde.pc_begin, fde.pc_end);
			return;
		}
		const struct chk_region *in = chk_region_of(c->im.alloc, c->im.nalloc, fde.pc_begin);
		const struct chk_region *x = chk_region_of(c->im.exec, c->im.nexec, fde.pc_begin);
		add(c, CHK_SEV_ERROR, CHK_OUTSIDE, &w,
		    "FDE 0x%" PRIx64 "..0x%" PRIx64 " %s%s%s", fde.pc_begin, fde.pc_end,
		    x ? "runs past the end of executable " : "is not in executable code (it starts in ",
		    x ? (x->name ? x->name : "segment") : in && in->name ? in->name : "no section",
		    x ? "" : ")");
	}
	bool scanned = scan_program(c, k, sec, &cie, &fde);
	run_program(c, k, sec, &cie, &fde, rec, scanned);
}

/* Frame every entry of section K, checking each CIE and FDE. */
static void walk_section(struct ctx *c, int k, const struct cfi_section *sec)
{
	struct cie_map cies = { 0 };
	uint64_t off = 0;
	while (off < sec->len && !c->nomem) {
		struct cfi_entry e;
		int err = cfi_entry_at(sec, off, &e);
		if (err) {
			struct where w = at_entry(k, off);
			add(c, CHK_SEV_ERROR, CHK_DECODE, &w,
			    "entry framing: %s; the last 0x%" PRIx64 " bytes of the section are unreadable",
			    bk_strerror(err), (uint64_t)sec->len - off);
			break;
		}
		if (e.kind == CFI_ENTRY_TERMINATOR) {
			if (sec->is_eh)
				break;
		} else if (e.kind == CFI_ENTRY_CIE) {
			c->r->ncies++;
			cie_get(c, &cies, sec, off);
		} else {
			if (k == 0)
				c->eh_fde_entries++;
			check_fde(c, k, sec, &cies, &e);
		}
		off = e.next_off;
	}
	for (size_t i = 0; i < cies.nslots; i++) {
		struct cie_rec *rec = &cies.slots[i];
		if (!rec->key || !rec->err)
			continue;
		struct where w = at_entry(k, rec->key - 1);
		add(c, CHK_SEV_ERROR, CHK_DECODE, &w, "CIE: %s (%zu FDE%s use it)",
		    bk_strerror(rec->err), rec->lost_fdes, rec->lost_fdes == 1 ? "" : "s");
	}
	base_free(cies.slots);
}

/* ---- .eh_frame_hdr ------------------------------------------------------ */

static struct fde_rec *fde_by_off(struct fde_vec *v, uint64_t off)
{
	size_t lo = BASE_COUNT_LT(v->p, v->n, off, off); /* section order = offset order */
	return lo < v->n && v->p[lo].off == off ? &v->p[lo] : NULL;
}

static void check_hdr(struct ctx *c, const struct cfi_section *eh)
{
	const struct ldr_section *h = &c->im.ldr->eh_frame_hdr;
	static const char hname[] = ".eh_frame_hdr";
	struct where w0 = { .section = hname };

	if (!h->present || !h->data) {
		if (!c->eh_fde_entries)
			return; /* nothing to index: linkers then make no header */
		if (eh && c->im.ldr->type == ET_DYN)
			add(c, CHK_SEV_WARNING, CHK_HDR, &w0,
			    "no .eh_frame_hdr: a runtime cannot find this object's FDEs by address");
		else if (eh && c->im.ldr->type == ET_EXEC)
			add(c, CHK_SEV_INFO, CHK_HDR, &w0,
			    "no .eh_frame_hdr (usual for static executables, which register "
			    ".eh_frame at startup)");
		return;
	}
	if (c->im.ldr->has_eh_frame_hdr_seg && c->im.ldr->eh_frame_hdr_vaddr != h->addr)
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0,
		    "PT_GNU_EH_FRAME at 0x%" PRIx64 " but the section is at 0x%" PRIx64,
		    c->im.ldr->eh_frame_hdr_vaddr, h->addr);
	else if (!c->im.ldr->has_eh_frame_hdr_seg && c->im.ldr->nsegs)
		add(c, CHK_SEV_WARNING, CHK_HDR, &w0,
		    "no PT_GNU_EH_FRAME segment names the section: runtimes will not find it");

	struct buf b = buf_make(h->data, h->len);
	struct base_ptr_ctx ctx = {
		.sec_data = h->data, .sec_addr = h->addr,
		.text_addr = c->im.ldr->text.present ? c->im.ldr->text.addr : 0,
		.data_addr = h->addr, .addr_size = c->im.ldr->addr_size, .mem = NULL,
	};
	uint8_t version, ptr_enc, count_enc, table_enc;
	if (buf_u8(&b, &version) || buf_u8(&b, &ptr_enc) || buf_u8(&b, &count_enc) ||
	    buf_u8(&b, &table_enc)) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "header truncated (%zu bytes)", h->len);
		return;
	}
	if (version != 1) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "version %u (want 1)", version);
		return;
	}
	uint64_t eh_ptr, count;
	int err;
	if (ptr_enc == DW_EH_PE_omit) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "eh_frame_ptr encoding is DW_EH_PE_omit");
		return;
	}
	if ((err = base_read_pointer(&b, ptr_enc, &ctx, &eh_ptr))) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "eh_frame_ptr (encoding 0x%02x): %s", ptr_enc,
		    bk_strerror(err));
		return;
	}
	if (!eh)
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "there is no .eh_frame for it to index");
	else if (eh_ptr != eh->addr)
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0,
		    "eh_frame_ptr is 0x%" PRIx64 ", .eh_frame is at 0x%" PRIx64, eh_ptr, eh->addr);
	if (count_enc == DW_EH_PE_omit || table_enc == DW_EH_PE_omit) {
		add(c, CHK_SEV_WARNING, CHK_HDR, &w0,
		    "no binary-search table: runtimes search .eh_frame linearly");
		return;
	}
	if ((err = base_read_pointer(&b, count_enc, &ctx, &count))) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "fde_count (encoding 0x%02x): %s", count_enc,
		    bk_strerror(err));
		return;
	}
	int size = base_pointer_size(table_enc, ctx.addr_size);
	if (size <= 0 || (table_enc & DW_EH_PE_indirect)) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0,
		    "table encoding 0x%02x is not a fixed-size direct encoding", table_enc);
		return;
	}
	size_t room = buf_left(&b) / (2 * (size_t)size);
	if (count > room) {
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0,
		    "fde_count %" PRIu64 " but the section holds only %zu entries", count, room);
		count = room;
	}
	if (!eh)
		return;

	struct fde_vec *v = &c->fdes[0];
	uint64_t prev = 0;
	size_t unsorted = 0;
	for (size_t i = 0; i < count; i++) {
		uint64_t loc, fde_addr;
		uint64_t ent_off = (uint64_t)(b.p - h->data);
		struct where w = { .section = hname, .has_entry = true, .entry_off = ent_off };
		if ((err = base_read_pointer(&b, table_enc, &ctx, &loc)) ||
		    (err = base_read_pointer(&b, table_enc, &ctx, &fde_addr))) {
			add(c, CHK_SEV_ERROR, CHK_HDR, &w, "entry %zu: %s", i, bk_strerror(err));
			return;
		}
		w.has_addr = true;
		w.addr = w.end = loc;
		if (i && loc < prev) {
			if (unsorted++ == 0)
				add(c, CHK_SEV_ERROR, CHK_HDR, &w,
				    "table not sorted: entry %zu (0x%" PRIx64 ") is below entry %zu "
				    "(0x%" PRIx64 ")", i, loc, i - 1, prev);
		} else if (i && loc == prev) {
			add(c, CHK_SEV_ERROR, CHK_HDR, &w,
			    "entries %zu and %zu have the same initial location 0x%" PRIx64, i - 1, i,
			    loc);
		}
		prev = loc;
		struct fde_rec *fr = fde_addr >= eh->addr && fde_addr - eh->addr < eh->len ?
			fde_by_off(v, fde_addr - eh->addr) : NULL;
		if (!fr) {
			struct cfi_entry e;
			if (fde_addr >= eh->addr && fde_addr - eh->addr < eh->len &&
			    !cfi_entry_at(eh, fde_addr - eh->addr, &e) && e.kind == CFI_ENTRY_FDE)
				continue; /* an FDE that does not decode: reported as such */
			add(c, CHK_SEV_ERROR, CHK_HDR, &w,
			    "entry %zu (0x%" PRIx64 ") points at 0x%" PRIx64
			    ", which is not an FDE of .eh_frame", i, loc, fde_addr);
			continue;
		}
		if (fr->listed)
			add(c, CHK_SEV_ERROR, CHK_HDR, &w,
			    "entry %zu lists the FDE at .eh_frame+0x%" PRIx64 " again", i, fr->off);
		fr->listed = true;
		if (fr->lo != loc)
			add(c, CHK_SEV_ERROR, CHK_HDR, &w,
			    "entry %zu: initial location 0x%" PRIx64 " but its FDE (.eh_frame+0x%" PRIx64
			    ") begins at 0x%" PRIx64, i, loc, fr->off, fr->lo);
	}
	if (unsorted > 1)
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0, "%zu entries in all are out of order", unsorted);
	if (count != c->eh_fde_entries)
		add(c, CHK_SEV_ERROR, CHK_HDR, &w0,
		    "table has %" PRIu64 " entries, .eh_frame has %zu FDEs", count,
		    c->eh_fde_entries);
	for (size_t i = 0; i < v->n; i++) {
		struct fde_rec *fr = &v->p[i];
		if (fr->listed)
			continue;
		struct where w = at_fde(0, fr->off, fr->lo, fr->hi);
		add(c, CHK_SEV_ERROR, CHK_HDR, &w,
		    "FDE 0x%" PRIx64 "..0x%" PRIx64 " is missing from the table%s", fr->lo, fr->hi,
		    fr->lo == fr->hi ? " (zero-length)" : "");
	}
}

/* ---- Overlaps ----------------------------------------------------------- */

static int cmp_fde_addr(const void *a, const void *b)
{
	const struct fde_rec *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sorts the section's records by address (the table check is done). */
static void check_overlaps(struct ctx *c, int k)
{
	struct fde_vec *v = &c->fdes[k];
	if (v->n > 1)
		qsort(v->p, v->n, sizeof(*v->p), cmp_fde_addr);
	const struct fde_rec *top = NULL; /* the one reaching furthest so far */
	for (size_t i = 0; i < v->n; i++) {
		const struct fde_rec *fr = &v->p[i];
		if (fr->discarded || fr->lo >= fr->hi)
			continue;
		if (top && fr->lo < top->hi) {
			struct where w = at_fde(k, fr->off, fr->lo, fr->hi);
			add(c, CHK_SEV_ERROR, CHK_OVERLAP, &w,
			    "FDE 0x%" PRIx64 "..0x%" PRIx64 " overlaps FDE 0x%" PRIx64 "..0x%" PRIx64
			    " (%s+0x%" PRIx64 ")", fr->lo, fr->hi, top->lo, top->hi, sec_names[k],
			    top->off);
		}
		if (!top || fr->hi > top->hi)
			top = fr;
	}
}

/* ---- Coverage ----------------------------------------------------------- */

/* Bytes of one fill instruction at P (N available), or 0. x86: nop (90),
 * int3 (cc), zero, and the multi-byte nops assemblers align with: prefixes
 * 66/2e, then 90 or 0f 1f /0 with any addressing form. */
static size_t x86_fill_len(const uint8_t *p, size_t n)
{
	if (p[0] == 0x90 || p[0] == 0xcc || p[0] == 0x00)
		return 1;
	size_t i = 0;
	while (i < n && i < 14 && (p[i] == 0x66 || p[i] == 0x2e))
		i++;
	if (i < n && i > 0 && p[i] == 0x90)
		return i + 1;
	if (i + 2 >= n || p[i] != 0x0f || p[i + 1] != 0x1f)
		return 0;
	uint8_t modrm = p[i + 2];
	unsigned mod = modrm >> 6, rm = modrm & 7;
	if ((modrm >> 3 & 7) != 0)
		return 0;
	size_t len = i + 3;
	if (mod != 3 && rm == 4) { /* SIB */
		if (len >= n)
			return 0;
		if (mod == 0 && (p[len] & 7) == 5)
			len += 4;
		len++;
	} else if (mod == 0 && rm == 5) {
		len += 4;
	}
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return len <= n ? len : 0;
}

/* How many of the N bytes at P (address ADDR) are fill from the start: N
 * when all are. AVAIL >= N bytes are readable: the last fill instruction
 * may run past N into covered code (glibc starts __restore_rt's FDE one
 * byte early, inside a nop). */
static size_t fill_prefix(const struct ctx *c, uint64_t addr, const uint8_t *p, size_t n,
			  size_t avail)
{
	uint16_t m = c->im.ldr->machine;
	size_t i = 0;
	if (m == EM_X86_64 || m == EM_386) {
		while (i < n) {
			size_t l = x86_fill_len(p + i, avail - i);
			if (!l)
				return i;
			i += l;
		}
		return n;
	}
	if (m == EM_AARCH64) {
		if (addr % 4)
			return 0;
		for (; i + 4 <= n; i += 4) {
			uint32_t w = (uint32_t)base_rd_le(p + i, 4);
			if (w != 0 && w != 0xd503201fu) /* udf #0, nop */
				return i;
		}
		return i;
	}
	while (i < n && !p[i])
		i++;
	return i;
}

/* True when N bytes at P read as text: 16 or more, a NUL and a run of 8
 * printable characters among them, and at least 85% printable ASCII, tab,
 * newline or NUL (alignment nops may follow the strings). Hand-written
 * assembly (OpenSSL's perlasm) keeps strings in .text inside a function's
 * size; instructions are never this printable. */
static bool looks_like_strings(const uint8_t *p, size_t n)
{
	size_t text = 0, nul = 0, run = 0, best_run = 0;
	if (n < 16)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool printable = p[i] >= 0x20 && p[i] < 0x7f;
		nul += p[i] == 0;
		text += printable || p[i] == 0 || p[i] == '\t' || p[i] == '\n';
		run = printable ? run + 1 : 0;
		best_run = run > best_run ? run : best_run;
	}
	return nul && best_run >= 8 && text * 100 >= n * 85;
}

/* How many of the N bytes at P (address ADDR, AVAIL readable) are fill at
 * the end: the alignment after code whose symbol has no size (crtbegin's
 * frame_dummy, hand-written stubs), which a gap split at symbols would
 * otherwise count as code. The shortest all-fill tail within the last 256
 * bytes (alignment is at most 64 in practice); code that happens to end in
 * bytes that read as fill (a zero displacement) loses those bytes to
 * padding, never the other way round. */
static size_t fill_suffix(const struct ctx *c, uint64_t addr, const uint8_t *p, size_t n,
			  size_t avail)
{
	size_t from = n > 256 ? n - 256 : 0;
	for (size_t k = from; k < n; k++)
		if (fill_prefix(c, addr + k, p + k, n - k, avail - k) >= n - k)
			return n - k;
	return 0;
}

/* ---- Toolchain gaps ------------------------------------------------------
 *
 * Every program linked by gcc or clang against glibc carries code from the
 * C runtime's start files that has no CFI: crti.o/crtn.o's _init and _fini
 * (.init, .fini), crtbegin.o's deregister_tm_clones, register_tm_clones,
 * __do_global_dtors_aux and frame_dummy, AArch64 crti.o's call_weak_fn, and
 * linker-made PLT code (AArch64's .plt, a static executable's IRELATIVE
 * .plt). Their gaps are the toolchain's, not the checked file's: reported
 * as toolchain-gap (info). Named by symbol; in a stripped file, by section
 * (.init, .fini, PLT sections) and, for crtbegin.o's code, by place: a gap
 * of at most CRT_GAP_MAX bytes right after the FDE holding the entry point
 * (crt1.o's _start, which crtbegin.o's code follows in every link). */

#define CRT_GAP_MAX 512

static bool toolchain_symbol(const char *name)
{
	static const char *const names[] = {
		"_init", "_fini", "_start", "deregister_tm_clones", "register_tm_clones",
		"__do_global_dtors_aux", "frame_dummy", "call_weak_fn", "_dl_relocate_static_pie",
		"__libc_csu_init", "__libc_csu_fini",
	};
	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

static bool toolchain_section(const char *name)
{
	static const char *const names[] = { ".init", ".fini", ".plt", ".plt.sec", ".plt.got",
					     ".iplt" };
	for (size_t i = 0; name && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* Whether the gap [POS, END) of region RG, with symbol S (or none), whose
 * uncovered run began at RUN_LO, is toolchain code. */
static bool toolchain_gap(struct ctx *c, const struct chk_region *rg, struct sym_symbol *s,
			  uint64_t run_lo, uint64_t pos, uint64_t end)
{
	if (s)
		return toolchain_symbol(chk_image_sym_name(&c->im, s));
	if (toolchain_section(rg->name))
		return true;
	return c->entry_cover_end && run_lo == c->entry_cover_end && end - pos <= CRT_GAP_MAX;
}

/* Classify the uncovered bytes [lo, hi) of region RG. */
static void uncovered(struct ctx *c, const struct chk_region *rg, uint64_t lo, uint64_t hi)
{
	uint8_t *tmp = NULL;
	uint64_t pos = lo;
	while (pos < hi && !c->nomem) {
		struct sym_symbol *s = chk_image_sym(&c->im, pos);
		uint64_t end = s ? s->end : chk_image_next_sym_start(&c->im, pos);
		if (end > hi || end <= pos)
			end = hi;
		size_t n = (size_t)(end - pos);
		const uint8_t *bytes = NULL;
		size_t avail = n;
		if (rg->data) {
			bytes = rg->data + (pos - rg->lo);
			avail = (size_t)(rg->hi - pos);
		} else if (n <= (16u << 20)) { /* segments only: read a copy, bounded */
			base_free(tmp);
			tmp = base_alloc(n ? n : 1);
			if (!tmp) {
				c->nomem = BK_E_NOMEM;
				break;
			}
			if (!ldr_read_vaddr(c->im.ldr, pos, tmp, n))
				bytes = tmp;
		}
		/* Leading fill is padding after the previous function; a gap
		 * is reported from the first byte that is not fill. */
		size_t lead = bytes ? fill_prefix(c, pos, bytes, n, avail) : 0;
		c->r->padding_bytes += lead >= n ? n : lead;
		if (lead < n) {
			pos += lead;
			s = chk_image_sym(&c->im, pos);
			struct where w = { .has_addr = true, .addr = pos, .end = end };
			if (bytes && looks_like_strings(bytes + lead, (size_t)(end - pos))) {
				add(c, CHK_SEV_INFO, CHK_GAP, &w,
				    "0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 " bytes): string data in "
				    "%s, not code", pos, end, end - pos,
				    rg->name ? rg->name : "an executable segment");
				pos = end;
				continue;
			}
			/* The fill that ends it is padding, not code. */
			size_t tail = bytes ? fill_suffix(c, pos, bytes + lead, (size_t)(end - pos),
							  avail - lead)
					    : 0;
			uint64_t code_end = end - tail, next = end;
			c->r->padding_bytes += tail;
			w.end = code_end;
			if (toolchain_gap(c, rg, s, lo, pos, code_end)) {
				c->r->toolchain_gap_bytes += code_end - pos;
				add(c, CHK_SEV_INFO, CHK_TOOLCHAIN_GAP, &w,
				    "0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 " bytes) in %s: no FDE "
				    "covers it; C runtime or linker code built without CFI",
				    pos, code_end, code_end - pos,
				    rg->name ? rg->name : "an executable segment");
				pos = next;
				continue;
			}
			c->r->gap_bytes += code_end - pos;
			add(c, CHK_SEV_ERROR, CHK_GAP, &w,
			    "0x%" PRIx64 "..0x%" PRIx64 " (%" PRIu64 " bytes)%s%s: no FDE covers it",
			    pos, code_end, code_end - pos, s ? " in " : "",
			    s ? (rg->name ? rg->name : "executable segment") : "");
			pos = next;
			continue;
		}
		pos = end;
	}
	base_free(tmp);
}

static void check_coverage(struct ctx *c)
{
	size_t n = 0;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < c->fdes[k].n; i++)
			n += !c->fdes[k].p[i].discarded && c->fdes[k].p[i].lo < c->fdes[k].p[i].hi;
	struct fde_rec *all = base_alloc((n ? n : 1) * sizeof(*all));
	if (!all) {
		c->nomem = BK_E_NOMEM;
		return;
	}
	size_t m = 0;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < c->fdes[k].n; i++) {
			const struct fde_rec *fr = &c->fdes[k].p[i];
			if (!fr->discarded && fr->lo < fr->hi)
				all[m++] = *fr;
		}
	if (m > 1)
		qsort(all, m, sizeof(*all), cmp_fde_addr);
	/* Merge into disjoint covered ranges, in place. */
	size_t nc = 0;
	for (size_t i = 0; i < m; i++) {
		if (nc && all[i].lo <= all[nc - 1].hi) {
			if (all[i].hi > all[nc - 1].hi)
				all[nc - 1].hi = all[i].hi;
		} else {
			all[nc++] = all[i];
		}
	}
	uint64_t entry = c->im.ldr->entry;
	for (size_t i = 0; i < nc && entry; i++)
		if (all[i].lo <= entry && entry < all[i].hi)
			c->entry_cover_end = all[i].hi;
	size_t j = 0;
	for (size_t i = 0; i < c->im.nexec && !c->nomem; i++) {
		const struct chk_region *rg = &c->im.exec[i];
		if (!rg->data && !c->im.exec_from_segments)
			continue; /* NOBITS: a debug file's code is elsewhere */
		c->r->exec_bytes += rg->hi - rg->lo;
		while (j > 0 && all[j - 1].hi > rg->lo)
			j--; /* regions may share a covered range */
		while (j < nc && all[j].hi <= rg->lo)
			j++;
		uint64_t pos = rg->lo;
		for (size_t q = j; q < nc && all[q].lo < rg->hi && !c->nomem; q++) {
			if (all[q].lo > pos)
				uncovered(c, rg, pos, all[q].lo);
			uint64_t from = all[q].lo > rg->lo ? all[q].lo : rg->lo;
			uint64_t to = all[q].hi < rg->hi ? all[q].hi : rg->hi;
			c->r->covered_bytes += to - from;
			if (all[q].hi > pos)
				pos = all[q].hi;
		}
		if (pos < rg->hi)
			uncovered(c, rg, pos, rg->hi);
	}
	base_free(all);
}

/* ---- Entry point -------------------------------------------------------- */

int chk_file(const char *path, const struct chk_opts *opts, struct chk_report *report)
{
	memset(report, 0, sizeof(*report));
	struct ctx c = { .r = report, .max_per_kind = DEFAULT_MAX_PER_KIND };
	if (opts && opts->size >= sizeof(*opts) && opts->max_per_kind)
		c.max_per_kind = opts->max_per_kind;
	int err = chk_image_open(path, &c.im);
	if (err)
		return err;
	c.arch = c.im.arch;
	report->arch = c.arch ? c.arch->name : NULL;
	report->relocatable = c.im.relocatable;

	struct cfi_section secs[2];
	bool present[2];
	for (int k = 0; k < 2; k++)
		present[k] = uw_cfi_section(c.im.ldr, k == 0 ? UW_EH_FRAME : UW_DEBUG_FRAME, &secs[k]);
	report->has_eh_frame = present[0];
	report->has_debug_frame = present[1];
	report->has_eh_frame_hdr = c.im.ldr->eh_frame_hdr.present && c.im.ldr->eh_frame_hdr.data;
	if (!present[0] && !present[1]) {
		report->no_tables = true;
		bool code = false;
		for (size_t i = 0; i < c.im.nexec; i++)
			code = code || c.im.exec[i].data || c.im.exec_from_segments;
		add(&c, code ? CHK_SEV_WARNING : CHK_SEV_INFO, CHK_NO_TABLES, NULL,
		    code ? "executable code but no .eh_frame or .debug_frame"
			 : "no .eh_frame or .debug_frame (and no code)");
		goto out;
	}
	for (int k = 0; k < 2 && !c.nomem; k++)
		if (present[k])
			walk_section(&c, k, &secs[k]);
	if (!report->relocatable && !c.nomem) {
		check_hdr(&c, present[0] ? &secs[0] : NULL);
		for (int k = 0; k < 2 && !c.nomem; k++)
			check_overlaps(&c, k);
		if (!c.nomem)
			check_coverage(&c);
	}
	err = c.nomem;
out:
	for (int k = 0; k < 2; k++)
		base_free(c.fdes[k].p);
	chk_image_close(&c.im);
	return err;
}

void chk_report_free(struct chk_report *r)
{
	for (size_t i = 0; i < r->nf; i++) {
		base_free(r->f[i].symbol);
		base_free(r->f[i].code_section);
		base_free(r->f[i].detail);
	}
	base_free(r->f);
	r->f = NULL;
	r->nf = r->capf = 0;
}
