/* struct bk_elf: the public face of one ELF file's unwind tables.
 *
 * Which section wins: .eh_frame is consulted first, .debug_frame only for a
 * PC that no .eh_frame FDE covers. .eh_frame is what the runtime itself
 * uses and is always loaded; .debug_frame may describe the same code (gcc
 * -g without -fasynchronous-unwind-tables emits only it), and where both
 * cover a PC they describe the same code, so the first is as good and
 * cheaper to reach. Cold: tables are built on first use. */
#include "unwind.h"

bool uw_cfi_section(const struct ldr_elf *ldr, enum uw_section_kind kind, struct cfi_section *out)
{
	const struct ldr_section *s = kind == UW_EH_FRAME ? &ldr->eh_frame : &ldr->debug_frame;
	if (!s->present || !s->data || s->len == 0)
		return false;
	memset(out, 0, sizeof(*out));
	out->data = s->data;
	out->len = s->len;
	out->addr = s->addr;
	out->is_eh = kind == UW_EH_FRAME;
	out->addr_size = ldr->addr_size;
	out->text_addr = ldr->text.present ? ldr->text.addr : 0;
	out->data_addr = ldr->got.present ? ldr->got.addr : 0;
	out->mem.read = ldr_mem_read;
	out->mem.ctx = (void *)ldr;
	return true;
}

int uw_elf_wrap(struct ldr_elf *ldr, struct bk_elf **out)
{
	struct bk_elf *e = base_calloc(1, sizeof(*e));
	if (!e) {
		ldr_close(ldr);
		return BK_E_NOMEM;
	}
	e->ldr = ldr;
	atomic_init(&e->refs, 1);
	e->eh_frame.present = uw_cfi_section(ldr, UW_EH_FRAME, &e->eh_frame.sec);
	e->debug_frame.present = uw_cfi_section(ldr, UW_DEBUG_FRAME, &e->debug_frame.sec);
	*out = e;
	return 0;
}

struct bk_elf *uw_elf_ref(struct bk_elf *elf)
{
	if (elf)
		atomic_fetch_add_explicit(&elf->refs, 1, memory_order_relaxed);
	return elf;
}

struct bk_elf *uw_elf_debug(struct bk_elf *elf)
{
	if (!elf->debug_tried) {
		elf->debug_tried = true;
		struct ldr_elf *dbg;
		if (ldr_open_debug_file(elf->ldr, NULL, &dbg) == 0)
			uw_elf_wrap(dbg, &elf->debug); /* on failure it stays NULL */
	}
	return elf->debug;
}

const struct cfi_table *uw_elf_table(struct bk_elf *elf, enum uw_section_kind kind, int *err)
{
	struct uw_cfi *c = kind == UW_EH_FRAME ? &elf->eh_frame : &elf->debug_frame;
	*err = 0;
	if (!c->present) {
		*err = BK_E_NOT_FOUND;
		return NULL;
	}
	if (!c->built) {
		struct cfi_hdr hdr = { 0 }, *hp = NULL;
		const struct ldr_section *h = &elf->ldr->eh_frame_hdr;
		if (kind == UW_EH_FRAME && h->present && h->data) {
			hdr = (struct cfi_hdr){ h->data, h->len, h->addr };
			hp = &hdr;
		}
		c->build_err = cfi_table_init(&c->table, &c->sec, hp);
		c->built = true;
	}
	*err = c->build_err;
	return c->build_err ? NULL : &c->table;
}

static void rule_export(const struct cfi_section *sec, const struct cfi_rule *r, struct bk_rule *out)
{
	out->kind = (enum bk_rule_kind)r->kind;
	out->reg = r->reg;
	out->offset = 0;
	out->expr = NULL;
	out->expr_len = 0;
	switch (r->kind) {
	case BK_RULE_OFFSET:
	case BK_RULE_VAL_OFFSET:
	case BK_RULE_CFA_REG_OFFSET:
		out->offset = r->value;
		break;
	case BK_RULE_EXPRESSION:
	case BK_RULE_VAL_EXPRESSION:
	case BK_RULE_CFA_EXPRESSION:
		out->expr = cfi_rule_expr(sec, r);
		out->expr_len = r->expr_len;
		break;
	}
}

void uw_row_export(const struct cfi_section *sec, const struct cfi_cie *cie,
		   const struct cfi_fde *fde, const struct cfi_row *row, struct bk_row *out)
{
	memset(out, 0, sizeof(*out));
	out->loc = row->loc;
	out->loc_end = row->loc_end;
	out->fde_begin = fde->pc_begin;
	out->fde_end = fde->pc_end;
	out->ra_reg = (unsigned)cie->ra_reg;
	out->from_debug_frame = !sec->is_eh;
	out->signal_frame = cie->signal_frame;
	out->ra_sign_state = row->ra_sign_state;
	out->args_size = row->args_size;
	rule_export(sec, &row->cfa, &out->cfa);
	out->nregs = row->nrules;
	for (unsigned i = 0; i < row->nrules; i++) {
		out->regno[i] = row->regno[i];
		rule_export(sec, &row->rule[i], &out->regs[i]);
	}
}

int bk_elf_open(const char *path, struct bk_elf **out)
{
	struct ldr_elf *ldr;
	int err;
	if (!path || !out)
		return BK_E_INVAL;
	if ((err = ldr_open_path(path, &ldr)))
		return err;
	return uw_elf_wrap(ldr, out);
}

int bk_elf_open_memory(const void *image, size_t len, struct bk_elf **out)
{
	struct ldr_elf *ldr;
	int err;
	if (!image || !out)
		return BK_E_INVAL;
	if ((err = ldr_open_memory(image, len, &ldr)))
		return err;
	return uw_elf_wrap(ldr, out);
}

void bk_elf_close(struct bk_elf *elf)
{
	if (!elf || atomic_fetch_sub_explicit(&elf->refs, 1, memory_order_acq_rel) != 1)
		return;
	bk_elf_close(elf->debug);
	cfi_table_free(&elf->eh_frame.table);
	cfi_table_free(&elf->debug_frame.table);
	ldr_close(elf->ldr);
	base_free(elf);
}

enum bk_arch bk_elf_arch(const struct bk_elf *elf)
{
	return elf && elf->ldr->arch ? elf->ldr->arch->arch : BK_ARCH_UNKNOWN;
}

size_t bk_elf_build_id(const struct bk_elf *elf, const uint8_t **bytes)
{
	*bytes = elf->ldr->build_id;
	return elf->ldr->build_id_len;
}

int64_t bk_elf_load_bias(const struct bk_elf *elf, uint64_t runtime_base)
{
	return ldr_load_bias(elf->ldr, runtime_base);
}

/* The row at LINK (link-time) in table T; BK_E_NOT_FOUND past its FDEs. */
static int table_row(const struct cfi_table *t, uint64_t link, struct bk_row *row)
{
	struct cfi_fde fde;
	struct cfi_cie cie;
	struct cfi_row r;
	int err = cfi_table_find(t, link, &fde, &cie);
	if (!err)
		err = cfi_row_at(&t->sec, &cie, &fde, link, &r);
	if (!err)
		uw_row_export(&t->sec, &cie, &fde, &r, row);
	return err;
}

int uw_space_row_at(struct bk_space *s, uint64_t pc, struct bk_row *row)
{
	uint64_t tag;
	struct uw_pin pin;
	const struct uw_module *m = uw_reg_find(s, pc, &tag, &pin);
	bool pinned = m != NULL;
	if (!m)
		m = uw_space_find(s, pc);
	if (!m) {
		uw_unpin(&pin);
		return BK_E_NOT_FOUND;
	}
	uint64_t link = pc - (uint64_t)m->bias;
	const struct cfi_table *t[3] = { m->eh_table, m->debug_table, m->debug_file_table };
	int err = m->eh_table || m->debug_table || m->debug_file_table ? BK_E_NOT_FOUND
									 : BK_E_NO_UNWIND;
	for (int k = 0; k < 3 && err == BK_E_NOT_FOUND; k++)
		if (t[k])
			err = table_row(t[k], link, row);
	if (pinned)
		uw_unpin(&pin);
	return err;
}

int bk_elf_row_at(struct bk_elf *elf, uint64_t pc, struct bk_row *row)
{
	if (!elf || !row)
		return BK_E_INVAL;
	if (!elf->eh_frame.present && !elf->debug_frame.present)
		return BK_E_NO_UNWIND;
	int result = BK_E_NOT_FOUND;
	for (int k = UW_EH_FRAME; k <= UW_DEBUG_FRAME; k++) {
		int err;
		const struct cfi_table *t = uw_elf_table(elf, (enum uw_section_kind)k, &err);
		if (!t) {
			if (err != BK_E_NOT_FOUND && result == BK_E_NOT_FOUND)
				result = err;
			continue;
		}
		struct cfi_fde fde;
		struct cfi_cie cie;
		struct cfi_row r;
		err = cfi_table_find(t, pc, &fde, &cie);
		if (!err)
			err = cfi_row_at(&t->sec, &cie, &fde, pc, &r);
		if (!err) {
			uw_row_export(&t->sec, &cie, &fde, &r, row);
			return 0;
		}
		if (err != BK_E_NOT_FOUND)
			return err;
	}
	return result;
}
