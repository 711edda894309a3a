/* Instructions: Capstone (x86-64, detail on) says which instructions move
 * the shadow stack, and disassembles them for reports; a cache keeps what
 * was decided per PC, so each PC is read and decoded once.
 *
 * Classes: every near call (CS_GRP_CALL: call rel32, call r/m64 in all
 * addressing forms) pushes a return address; every near return (CS_GRP_RET:
 * ret, ret imm16) pops one; `syscall` is noted because a few system calls
 * move the shadow stack (rt_sigreturn) or the module list (mmap of code).
 * Far calls and returns (lcall, retf, iret) do not occur in 64-bit user
 * code and are left as OTHER.
 */
#include <capstone/capstone.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "val.h"

#include "../base/base.h"

/* Capstone, loaded on first use: the library of the ABI these headers
 * describe (libcapstone.so.CS_API_MAJOR), else the development link. */
#define STR_(x) #x
#define STR(x) STR_(x)
static struct {
	bool tried, ok;
	__typeof__(cs_open) *open;
	__typeof__(cs_option) *option;
	__typeof__(cs_malloc) *malloc;
	__typeof__(cs_free) *free;
	__typeof__(cs_close) *close;
	__typeof__(cs_disasm_iter) *disasm_iter;
	__typeof__(cs_insn_group) *insn_group;
} cs;

static bool load_capstone(void)
{
	if (cs.tried)
		return cs.ok;
	cs.tried = true;
	void *h = dlopen("libcapstone.so." STR(CS_API_MAJOR), RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libcapstone.so", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
	/* POSIX: a function pointer round-trips through void *. */
#define SYM(field, name) *(void **)&cs.field = dlsym(h, name)
	SYM(open, "cs_open");
	SYM(option, "cs_option");
	SYM(malloc, "cs_malloc");
	SYM(free, "cs_free");
	SYM(close, "cs_close");
	SYM(disasm_iter, "cs_disasm_iter");
	SYM(insn_group, "cs_insn_group");
#undef SYM
	cs.ok = cs.open && cs.option && cs.malloc && cs.free && cs.close && cs.disasm_iter &&
		cs.insn_group;
	return cs.ok; /* the handle stays open: the functions are used to the end */
}

struct val_decoder {
	csh cs;
	cs_insn *insn;
};

int val_decoder_open(struct val_decoder **out)
{
	if (!load_capstone())
		return BK_E_UNSUPPORTED;
	struct val_decoder *d = base_calloc(1, sizeof(*d));
	if (!d)
		return BK_E_NOMEM;
	if (cs.open(CS_ARCH_X86, CS_MODE_64, &d->cs) != CS_ERR_OK) {
		base_free(d);
		return BK_E_UNSUPPORTED;
	}
	cs.option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	d->insn = cs.malloc(d->cs);
	if (!d->insn) {
		cs.close(&d->cs);
		base_free(d);
		return BK_E_NOMEM;
	}
	*out = d;
	return 0;
}

void val_decoder_close(struct val_decoder *d)
{
	if (!d)
		return;
	cs.free(d->insn, 1);
	cs.close(&d->cs);
	base_free(d);
}

void val_decode(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
		struct val_code *out)
{
	const uint8_t *p = bytes;
	uint64_t addr = pc;
	out->pc = pc;
	out->len = 1;
	out->kind = VAL_INSN_UNKNOWN;
	if (!len || !cs.disasm_iter(d->cs, &p, &len, &addr, d->insn))
		return;
	cs_insn *i = d->insn;
	out->len = (uint8_t)i->size;
	out->kind = VAL_INSN_OTHER;
	if (i->id == X86_INS_CALL && cs.insn_group(d->cs, i, CS_GRP_CALL))
		out->kind = VAL_INSN_CALL;
	else if (i->id == X86_INS_RET && cs.insn_group(d->cs, i, CS_GRP_RET))
		out->kind = VAL_INSN_RET;
	else if (i->id == X86_INS_SYSCALL)
		out->kind = VAL_INSN_SYSCALL;
}

void val_disasm(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
		char *buf, size_t buflen)
{
	const uint8_t *p = bytes;
	uint64_t addr = pc;
	if (!len || !cs.disasm_iter(d->cs, &p, &len, &addr, d->insn)) {
		snprintf(buf, buflen, "(bad)");
		return;
	}
	if (d->insn->op_str[0])
		snprintf(buf, buflen, "%s %s", d->insn->mnemonic, d->insn->op_str);
	else
		snprintf(buf, buflen, "%s", d->insn->mnemonic);
}

/* ---- The per-PC cache ---------------------------------------------------- */

static size_t hash_pc(uint64_t pc, size_t nslots)
{
	return (size_t)((pc * 0x9e3779b97f4a7c15ull) >> 20) & (nslots - 1);
}

static bool grow(struct val_code_cache *c)
{
	size_t n = c->nslots ? c->nslots * 2 : 1u << 14;
	struct val_code *s = base_calloc(n, sizeof(*s));
	if (!s)
		return false;
	for (size_t i = 0; i < c->nslots; i++) {
		if (!c->slots[i].pc)
			continue;
		size_t h = hash_pc(c->slots[i].pc, n);
		while (s[h].pc)
			h = (h + 1) & (n - 1);
		s[h] = c->slots[i];
	}
	base_free(c->slots);
	c->slots = s;
	c->nslots = n;
	return true;
}

/* The entry for PC (PC 0 is never code); *FRESH when it was just made and
 * must be filled. NULL when out of memory. */
struct val_code *val_code_get(struct val_code_cache *c, uint64_t pc, bool *fresh)
{
	*fresh = false;
	if (!pc)
		return NULL;
	if ((c->nused + 1) * 2 > c->nslots && !grow(c))
		return NULL;
	size_t h = hash_pc(pc, c->nslots);
	while (c->slots[h].pc) {
		if (c->slots[h].pc == pc)
			return &c->slots[h];
		h = (h + 1) & (c->nslots - 1);
	}
	c->nused++;
	memset(&c->slots[h], 0, sizeof(c->slots[h]));
	c->slots[h].pc = pc;
	c->slots[h].checked = 2;
	*fresh = true;
	return &c->slots[h];
}

void val_code_clear(struct val_code_cache *c)
{
	if (c->slots)
		memset(c->slots, 0, c->nslots * sizeof(*c->slots));
	c->nused = 0;
}

void val_code_free(struct val_code_cache *c)
{
	base_free(c->slots);
	memset(c, 0, sizeof(*c));
}
