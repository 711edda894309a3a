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
#include <stdio.h>
#include <string.h>

#include "val.h"

#include "../base/base.h"
#include "../insn/insn.h"

/* A decoder is one src/insn decoder (Capstone, loaded on first use). */
struct val_decoder {
	struct insn_dec *dec;
};

int val_decoder_open(struct val_decoder **out)
{
	struct val_decoder *d = base_calloc(1, sizeof(*d));
	if (!d)
		return BK_E_NOMEM;
	int err = insn_open(BK_ARCH_X86_64, &d->dec);
	if (err) {
		base_free(d);
		return err;
	}
	*out = d;
	return 0;
}

void val_decoder_close(struct val_decoder *d)
{
	if (!d)
		return;
	insn_close(d->dec);
	base_free(d);
}

void val_decode(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
		struct val_code *out)
{
	out->pc = pc;
	out->len = 1;
	out->kind = VAL_INSN_UNKNOWN;
	const cs_insn *i = insn_decode(d->dec, bytes, len, pc);
	if (!i)
		return;
	out->len = (uint8_t)i->size;
	out->kind = VAL_INSN_OTHER;
	if (i->id == X86_INS_CALL && insn_in_group(d->dec, i, CS_GRP_CALL))
		out->kind = VAL_INSN_CALL;
	else if (i->id == X86_INS_RET && insn_in_group(d->dec, i, CS_GRP_RET))
		out->kind = VAL_INSN_RET;
	else if (i->id == X86_INS_SYSCALL)
		out->kind = VAL_INSN_SYSCALL;
}

void val_disasm(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
		char *buf, size_t buflen)
{
	insn_text(d->dec, bytes, len, pc, buf, buflen);
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
