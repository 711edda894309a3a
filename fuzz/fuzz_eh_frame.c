/* Fuzz harness: call-frame information (src/cfi) — entry framing, CIE/FDE
 * decoding, instruction decoding, the CFA state machine and FDE lookup with
 * or without .eh_frame_hdr.
 *
 * Input (all integers little-endian):
 *   0   u16  hdr_len: bytes of .eh_frame_hdr that follow the header
 *   2   u8   flags: bit 0  the section is .debug_frame (else .eh_frame)
 *                   bit 1  addr_size 4 (else 8); addresses are cut to 32 bits
 *                   bit 2  no memory callback (DW_EH_PE_indirect fails)
 *   3   u8   reserved
 *   4   u64  address of the section (the pcrel base)
 *   12  u64  address of .eh_frame_hdr
 *   20  u64  text_addr (DW_EH_PE_textrel base)
 *   28  u64  data_addr (DW_EH_PE_datarel base)
 *   36  hdr_len bytes of .eh_frame_hdr (cut to what is there; 0: no header)
 *   ... the section bytes, to the end
 * Both parts are copied into buffers of exactly their size, so that ASan
 * sees a read past either. DW_EH_PE_indirect reads come from those two
 * buffers at their addresses; anything else fails with BK_E_MEMORY.
 *
 * What runs: every entry is framed with cfi_entry_at; every CIE and FDE is
 * decoded, and every instruction of each with cfi_decode_insn; the machine
 * produces every row of every FDE; cfi_table_init builds the lookup table
 * (the .eh_frame_hdr search table if it validates, else the index), and a
 * set of PCs (each FDE's pc_begin, pc_end - 1, pc_end, pc_begin - 1, both sides
 * of its first row boundaries, the header's locations, a few fixed ones) is looked up with cfi_table_find and
 * cfi_row_at.
 *
 * The table is then built once more with its allocation failing.
 *
 * What is checked (abort() on violation, so libFuzzer reports it):
 *  - framing: entries advance and stay inside the section; decoders leave
 *    the reader unchanged on error and consume what they report;
 *  - the machine's rows tile [pc_begin, pc_end) in order, with at most
 *    CFI_MAX_RULES ascending rules and expressions inside the section;
 *  - lookup agrees with a model computed here independently: a linear sweep
 *    over the FDEs the walk decoded (index) or over the decoded header
 *    table (same semantics as the library: the last entry starting at or
 *    below the PC);
 *  - the row cfi_row_at returns for a PC equals the row the machine produced
 *    for that PC while iterating the same FDE, and an error on the way is
 *    the same error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dwarf.h"
#include "cfi/cfi.h"
#include "expr/expr.h"
#include "unwind/unwind.h"

#define HEADER_LEN 36
#define MAX_PCS 1024
#define PCS_PER_FDE 10

static void check(int ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_eh_frame: invariant broken: %s\n", what);
		abort();
	}
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 0; i < 8; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

/* ---- Target memory: the two sections at their addresses ----------------- */

struct fake_mem {
	const uint8_t *sec, *hdr;
	size_t sec_len, hdr_len;
	uint64_t sec_addr, hdr_addr;
};

static int from(const uint8_t *p, size_t plen, uint64_t base, uint64_t addr, void *dst,
		size_t len)
{
	if (!p || addr < base || addr - base > plen || len > plen - (addr - base))
		return BK_E_MEMORY;
	memcpy(dst, p + (addr - base), len);
	return 0;
}

static int mem_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct fake_mem *m = ctx;
	/* CFI reads one pointer (addr_size bytes) into a uint64_t. */
	check(len >= 1 && len <= 8, "indirect read of 0 or more than 8 bytes");
	if (from(m->sec, m->sec_len, m->sec_addr, addr, dst, len) == 0)
		return 0;
	return from(m->hdr, m->hdr_len, m->hdr_addr, addr, dst, len);
}

/* ---- Instructions --------------------------------------------------------- */

static void decode_insns(const struct cfi_section *sec, const struct cfi_cie *cie,
			 const struct cfi_fde *fde, const uint8_t *p, const uint8_t *end)
{
	check(p <= end && p >= sec->data && end <= sec->data + sec->len,
	      "instructions outside the section");
	struct buf b = { p, end };
	while (buf_left(&b)) {
		const uint8_t *before = b.p;
		struct cfi_insn in;
		int err = cfi_decode_insn(&b, sec, cie, fde, &in);
		if (err) {
			check(err < 0, "cfi_decode_insn: positive error");
			check(b.p == before, "cfi_decode_insn moved the reader on error");
			break;
		}
		check(b.p > before && b.p <= end, "cfi_decode_insn: no progress or overrun");
		check(in.reg <= CFI_MAX_REGNO && in.reg2 <= CFI_MAX_REGNO, "register above limit");
		check(cfi_insn_name(in.opcode) != NULL, "decoded opcode has no name");
		if (in.block)
			check(in.block >= before && in.block_len <= (size_t)(b.p - in.block),
			      "instruction block outside the instruction");
	}
}

/* ---- Rows ----------------------------------------------------------------- */

static void check_rule(const struct cfi_section *sec, const struct cfi_rule *r, bool is_cfa)
{
	switch (r->kind) {
	case BK_RULE_EXPRESSION:
	case BK_RULE_VAL_EXPRESSION:
	case BK_RULE_CFA_EXPRESSION:
		check(r->value >= 0 && (uint64_t)r->value <= sec->len &&
		      r->expr_len <= sec->len - (uint64_t)r->value,
		      "rule expression outside the section");
		check((r->kind == BK_RULE_CFA_EXPRESSION) == is_cfa, "rule kind / CFA mismatch");
		break;
	case BK_RULE_CFA_REG_OFFSET:
		check(is_cfa, "CFA rule for a register");
		break;
	case BK_RULE_NONE:
		check(is_cfa, "register with rule NONE");
		break;
	default:
		check(!is_cfa && r->kind >= BK_RULE_UNDEFINED && r->kind <= BK_RULE_REGISTER,
		      "register rule of an unknown kind, or for the CFA");
		break;
	}
}

static void check_row(const struct cfi_section *sec, const struct cfi_fde *fde,
		      const struct cfi_row *row)
{
	check(fde->pc_begin <= row->loc && row->loc < row->loc_end && row->loc_end <= fde->pc_end,
	      "row outside its FDE or empty");
	check(row->nrules <= CFI_MAX_RULES, "too many rules");
	/* bits 0 (signed) and 1 (with the PC: ..._negate_ra_state_with_pc) */
	check(row->ra_sign_state <= 3, "ra_sign_state");
	check_rule(sec, &row->cfa, true);
	for (unsigned i = 0; i < row->nrules; i++) {
		check(i == 0 || row->regno[i - 1] < row->regno[i], "rules not ascending");
		check(cfi_row_rule(row, row->regno[i]) == &row->rule[i], "cfi_row_rule");
		check_rule(sec, &row->rule[i], false);
	}
	check(cfi_row_rule(row, CFI_MAX_REGNO + 1) == NULL, "rule for an impossible register");
}

static bool rows_equal(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->loc == b->loc && a->loc_end == b->loc_end && a->args_size == b->args_size &&
	       cfi_row_same_rules(a, b);
}

/* ---- Lookups -------------------------------------------------------------- */

/* A PC looked up through the table, and what cfi_row_at said. */
struct probe {
	uint64_t pc;
	int find_err;
	uint64_t fde_off;
	int row_err;
	bool compared;
	struct cfi_row row;
};

#define ROW_PROBES 3

struct walked {
	uint64_t off;
	uint64_t pc_begin, pc_end;
	bool indexed; /* what build_index keeps: before the terminator, decoded, non-empty */
	unsigned nbounds;
	uint64_t bounds[ROW_PROBES]; /* where the 2nd, 3rd... rows start */
};

struct hdr_entry {
	uint64_t loc, fde_addr;
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int cmp_walked(const void *a, const void *b)
{
	const struct walked *x = a, *y = b;
	if (x->pc_begin != y->pc_begin)
		return x->pc_begin < y->pc_begin ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_probe_off(const void *a, const void *b)
{
	const struct probe *x = *(struct probe *const *)a, *y = *(struct probe *const *)b;
	if (x->fde_off != y->fde_off)
		return x->fde_off < y->fde_off ? -1 : 1;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static int fixed_size(uint8_t enc, uint8_t addr_size)
{
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: return addr_size;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: return 2;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: return 4;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8: return 8;
	default: return -1;
	}
}

/* What cfi_table_find should say for PC given the FDE found by the model:
 * decode it (it may be one the walk never framed, when the header points
 * into the middle of an entry) and check the range. */
static void expect(const struct cfi_section *sec, bool have, uint64_t fde_off, uint64_t pc,
		   int *err, uint64_t *off)
{
	*off = fde_off;
	if (!have) {
		*err = BK_E_NOT_FOUND;
		return;
	}
	struct cfi_fde fde;
	struct cfi_cie cie;
	*err = cfi_decode_fde(sec, fde_off, &fde, &cie);
	if (!*err && (pc < fde.pc_begin || pc >= fde.pc_end))
		*err = BK_E_NOT_FOUND;
}

/* ---- The harness ---------------------------------------------------------- */

struct run {
	struct cfi_section sec;
	struct walked *fdes;
	size_t nfdes, cap;
	uint64_t *pcs;
	size_t npcs;
	struct probe *probes;
};

static bool add_fde(struct run *r, struct walked w)
{
	if (r->nfdes == r->cap) {
		size_t ncap = r->cap ? 2 * r->cap : 16;
		void *p = realloc(r->fdes, ncap * sizeof(*r->fdes));
		if (!p)
			return false;
		r->fdes = p;
		r->cap = ncap;
	}
	r->fdes[r->nfdes++] = w;
	return true;
}

static void add_pc(struct run *r, uint64_t pc)
{
	if (r->npcs < MAX_PCS)
		r->pcs[r->npcs++] = pc;
}

/* Frame and decode every entry, as build_index would see them. */
static void walk(struct run *r)
{
	const struct cfi_section *sec = &r->sec;
	uint64_t off = 0;
	bool terminated = false;

	while (off < sec->len) {
		struct cfi_entry e;
		int err = cfi_entry_at(sec, off, &e);
		if (err) {
			check(err < 0, "cfi_entry_at: positive error");
			break; /* the next entry cannot be found */
		}
		check(e.off == off && e.next_off > off && e.next_off <= sec->len,
		      "entry does not advance inside the section");
		check(e.body >= sec->data + off && e.body <= e.end && e.end <= sec->data + sec->len,
		      "entry body outside the section");
		if (e.kind == CFI_ENTRY_TERMINATOR) {
			if (sec->is_eh)
				terminated = true; /* the index stops here; decoding goes on */
		} else if (e.kind == CFI_ENTRY_CIE) {
			struct cfi_cie cie;
			if (cfi_decode_cie(sec, off, &cie) == 0) {
				check(cie.off == off && cie.end_off == e.next_off, "CIE offsets");
				check(cie.addr_size == 4 || cie.addr_size == 8, "CIE addr_size");
				check((const uint8_t *)cie.augmentation >= e.body &&
				      (const uint8_t *)cie.augmentation < e.end, "augmentation outside");
				check(cie.ra_reg <= CFI_MAX_REGNO, "CIE ra_reg");
				decode_insns(sec, &cie, NULL, cie.insns, cie.insns_end);
			}
		} else {
			check(e.cie_off < sec->len, "FDE names a CIE outside the section");
			struct cfi_fde fde;
			struct cfi_cie cie;
			err = cfi_decode_fde(sec, off, &fde, &cie);
			if (err == 0) {
				check(fde.off == off && fde.end_off == e.next_off &&
				      fde.cie_off == e.cie_off && cie.off == e.cie_off, "FDE offsets");
				check(fde.pc_begin <= fde.pc_end, "FDE range wraps");
				check(fde.insns >= e.body && fde.insns <= fde.insns_end &&
				      fde.insns_end == e.end, "FDE instructions outside the entry");
				decode_insns(sec, &cie, NULL, cie.insns, cie.insns_end);
				decode_insns(sec, &cie, &fde, fde.insns, fde.insns_end);
				struct walked w = { off, fde.pc_begin, fde.pc_end,
						    !terminated && fde.pc_begin < fde.pc_end, 0, { 0 } };
				/* Row boundaries make good probes: off-by-one
				 * errors show there. */
				struct cfi_machine m;
				struct cfi_row row;
				if (cfi_machine_init(&m, sec, &cie, &fde) == 0)
					while (w.nbounds < ROW_PROBES && cfi_machine_next(&m, &row) == 1)
						if (row.loc_end < fde.pc_end)
							w.bounds[w.nbounds++] = row.loc_end;
				if (!add_fde(r, w))
					return;
			}
		}
		off = e.next_off;
	}
}

/* Run the machine over every FDE that decoded; compare the rows with the
 * probes that landed on it (PROBES sorted by fde_off). */
static void run_machines(struct run *r, struct probe **probes, size_t nprobes)
{
	const struct cfi_section *sec = &r->sec;
	size_t pi = 0;

	for (size_t i = 0; i < r->nfdes; i++) {
		uint64_t off = r->fdes[i].off;
		struct cfi_fde fde;
		struct cfi_cie cie;
		check(cfi_decode_fde(sec, off, &fde, &cie) == 0, "FDE decodes only once");

		while (pi < nprobes && probes[pi]->fde_off < off)
			pi++;
		size_t p0 = pi, p1 = pi;
		while (p1 < nprobes && probes[p1]->fde_off == off)
			p1++;

		struct cfi_machine m;
		int err = cfi_machine_init(&m, sec, &cie, &fde);
		if (err) {
			check(err < 0, "cfi_machine_init: positive");
			for (size_t k = p0; k < p1; k++) {
				check(probes[k]->row_err == err, "cfi_row_at and the machine disagree (init)");
				probes[k]->compared = true;
			}
			continue;
		}
		uint64_t prev_end = fde.pc_begin;
		struct cfi_row row;
		size_t k = p0; /* probes in PC order: each row covers a run of them */
		while ((err = cfi_machine_next(&m, &row)) == 1) {
			check(row.loc == prev_end, "rows do not tile the FDE");
			check_row(sec, &fde, &row);
			while (k < p1 && probes[k]->pc < row.loc_end) {
				check(probes[k]->pc >= row.loc, "probe below the first row");
				check(probes[k]->row_err == 0 && rows_equal(&probes[k]->row, &row),
				      "cfi_row_at and the machine disagree (row)");
				probes[k]->compared = true;
				k++;
			}
			prev_end = row.loc_end;
		}
		if (err == 0) {
			check(prev_end == fde.pc_end, "rows end before the FDE does");
			check(cfi_machine_next(&m, &row) == 0, "machine restarted after its end");
		}
		for (; k < p1; k++) {
			check(probes[k]->row_err == (err ? err : BK_E_NOT_FOUND),
			      "cfi_row_at and the machine disagree (error)");
			probes[k]->compared = true;
		}
		pi = p1;
	}
}

static void probe_all(struct run *r, const struct cfi_table *t)
{
	const struct cfi_section *sec = &r->sec;
	bool hdr = cfi_table_uses_hdr(t);

	/* The model: candidates sorted by start, swept with the sorted PCs. */
	struct hdr_entry *he = NULL;
	size_t nhe = 0;
	struct walked *idx = NULL;
	size_t nidx = 0;
	if (hdr) {
		int size = fixed_size(t->hdr_enc, t->hdr_ctx.addr_size);
		check(size > 0, "header table encoding not fixed-size");
		he = malloc((t->hdr_count ? t->hdr_count : 1) * sizeof(*he));
		if (!he)
			return;
		for (size_t i = 0; i < t->hdr_count; i++) {
			const uint8_t *p = t->hdr_table + i * 2 * (size_t)size;
			struct buf b = { p, p + 2 * size };
			check(base_read_pointer(&b, t->hdr_enc, &t->hdr_ctx, &he[i].loc) == 0 &&
			      base_read_pointer(&b, t->hdr_enc, &t->hdr_ctx, &he[i].fde_addr) == 0,
			      "validated header entry does not decode");
			check(i == 0 || he[i - 1].loc <= he[i].loc, "validated header not sorted");
			check(he[i].fde_addr >= sec->addr && he[i].fde_addr - sec->addr < sec->len,
			      "validated header entry outside the section");
			nhe++;
			if (i % 8 == 0) {
				add_pc(r, he[i].loc);
				add_pc(r, he[i].loc - 1);
			}
		}
	} else {
		idx = malloc((r->nfdes ? r->nfdes : 1) * sizeof(*idx));
		if (!idx)
			return;
		for (size_t i = 0; i < r->nfdes; i++)
			if (r->fdes[i].indexed)
				idx[nidx++] = r->fdes[i];
		qsort(idx, nidx, sizeof(*idx), cmp_walked);
		check(t->nindex == nidx, "index size differs from the FDEs the walk decoded");
		for (size_t i = 0; i < nidx; i++)
			check(t->index[i].pc_begin == idx[i].pc_begin &&
			      t->index[i].pc_end == idx[i].pc_end && t->index[i].fde_off == idx[i].off,
			      "index differs from the FDEs the walk decoded");
	}

	qsort(r->pcs, r->npcs, sizeof(r->pcs[0]), cmp_u64);
	size_t j = 0;
	for (size_t i = 0; i < r->npcs; i++) {
		uint64_t pc = r->pcs[i];
		int exp_err;
		uint64_t exp_off;
		if (hdr) {
			while (j < nhe && he[j].loc <= pc)
				j++;
			expect(sec, j > 0, j ? he[j - 1].fde_addr - sec->addr : 0, pc, &exp_err,
			       &exp_off);
		} else {
			while (j < nidx && idx[j].pc_begin <= pc)
				j++;
			expect(sec, j > 0, j ? idx[j - 1].off : 0, pc, &exp_err, &exp_off);
		}

		struct probe *pr = &r->probes[i];
		struct cfi_fde fde;
		struct cfi_cie cie;
		pr->pc = pc;
		pr->compared = false;
		pr->find_err = cfi_table_find(t, pc, &fde, &cie);
		check(pr->find_err == exp_err, "cfi_table_find differs from the model");
		pr->fde_off = UINT64_MAX;
		if (pr->find_err)
			continue;
		check(fde.off == exp_off, "cfi_table_find found another FDE than the model");
		check(fde.pc_begin <= pc && pc < fde.pc_end, "found FDE does not cover the PC");
		pr->fde_off = fde.off;
		pr->row_err = cfi_row_at(&t->sec, &cie, &fde, pc, &pr->row);
		check(pr->row_err <= 0, "cfi_row_at: positive");
		if (pr->row_err == 0) {
			check(pr->row.loc <= pc && pc < pr->row.loc_end, "row does not cover its PC");
			check_row(&t->sec, &fde, &pr->row);
			struct bk_row out;
			uw_row_export(&t->sec, &cie, &fde, &pr->row, &out);
			check(out.nregs == pr->row.nrules, "exported row");
		}
	}
	free(he);
	free(idx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < HEADER_LEN)
		return 0;
	size_t hdr_len = (size_t)(data[0] | data[1] << 8);
	uint8_t flags = data[2];
	if (hdr_len > size - HEADER_LEN)
		hdr_len = size - HEADER_LEN;
	size_t sec_len = size - HEADER_LEN - hdr_len;
	uint8_t addr_size = (flags & 2) ? 4 : 8;
	uint64_t mask = addr_size == 4 ? UINT32_MAX : UINT64_MAX;

	/* Exact-size copies: a read past either part is an ASan report. */
	uint8_t *hdr_copy = malloc(hdr_len ? hdr_len : 1);
	uint8_t *sec_copy = malloc(sec_len ? sec_len : 1);
	struct run r = { 0 };
	r.pcs = malloc(MAX_PCS * sizeof(*r.pcs));
	if (!hdr_copy || !sec_copy || !r.pcs)
		goto out;
	memcpy(hdr_copy, data + HEADER_LEN, hdr_len);
	memcpy(sec_copy, data + HEADER_LEN + hdr_len, sec_len);

	struct fake_mem fm = {
		.sec = sec_copy, .sec_len = sec_len, .sec_addr = rd64(data + 4) & mask,
		.hdr = hdr_copy, .hdr_len = hdr_len, .hdr_addr = rd64(data + 12) & mask,
	};
	r.sec = (struct cfi_section){
		.data = sec_copy,
		.len = sec_len,
		.addr = fm.sec_addr,
		.is_eh = !(flags & 1),
		.addr_size = addr_size,
		.text_addr = rd64(data + 20) & mask,
		.data_addr = rd64(data + 28) & mask,
		.mem = { (flags & 4) ? NULL : mem_read, &fm },
	};

	walk(&r);

	/* PCs around every FDE (sampled when there are many), and fixed ones. */
	size_t stride = r.nfdes / (MAX_PCS / PCS_PER_FDE / 2) + 1;
	for (size_t i = 0; i < r.nfdes; i += stride) {
		const struct walked *w = &r.fdes[i];
		add_pc(&r, w->pc_begin);
		add_pc(&r, w->pc_begin - 1);
		add_pc(&r, w->pc_end);
		if (w->pc_end > w->pc_begin)
			add_pc(&r, w->pc_end - 1);
		for (unsigned k = 0; k < w->nbounds; k++) {
			add_pc(&r, w->bounds[k]);
			add_pc(&r, w->bounds[k] - 1);
		}
	}
	add_pc(&r, 0);
	add_pc(&r, UINT64_MAX);
	add_pc(&r, r.sec.addr);

	struct cfi_hdr hdr = { hdr_copy, hdr_len, fm.hdr_addr };
	struct cfi_table t;
	int err = cfi_table_init(&t, &r.sec, hdr_len ? &hdr : NULL);
	check(err == 0 || err == BK_E_NOMEM, "cfi_table_init: unexpected error");
	if (err)
		goto out;
	/* Header entries add PCs, so size the probes after the model is built. */
	r.probes = malloc(MAX_PCS * sizeof(*r.probes));
	struct probe **sorted = malloc(MAX_PCS * sizeof(*sorted));
	if (r.probes && sorted) {
		probe_all(&r, &t);
		size_t n = 0;
		for (size_t i = 0; i < r.npcs; i++)
			if (r.probes[i].find_err == 0)
				sorted[n++] = &r.probes[i];
		qsort(sorted, n, sizeof(*sorted), cmp_probe_off);
		run_machines(&r, sorted, n);
		for (size_t i = 0; i < n; i++) {
			/* A probe on an FDE the walk did not frame (the header
			 * pointed inside an entry) has nothing to compare with. */
			bool walked = false;
			for (size_t k = 0; k < r.nfdes && !walked; k++)
				walked = r.fdes[k].off == sorted[i]->fde_off;
			check(sorted[i]->compared || !walked, "probe left uncompared");
		}
	}
	free(sorted);
	cfi_table_free(&t);

	/* The index's allocation failing: BK_E_NOMEM and nothing kept, or no
	 * allocation needed at all. */
	base_alloc_fail_after(1);
	err = cfi_table_init(&t, &r.sec, hdr_len ? &hdr : NULL);
	base_alloc_fail_after(0);
	check(err == 0 || err == BK_E_NOMEM, "cfi_table_init under allocation failure");
	if (err)
		check(t.index == NULL && t.nindex == 0, "failed cfi_table_init kept its index");
	cfi_table_free(&t);
out:
	free(r.probes);
	free(r.pcs);
	free(r.fdes);
	free(hdr_copy);
	free(sec_copy);
	return 0;
}
