/* Instructions: Capstone (x86-64 or AArch64, detail on) says which
 * instructions move the shadow stack, and disassembles them for reports; a
 * cache keeps what was decided per PC, so each PC is read and decoded once.
 *
 * Classes on x86-64: every near call (CS_GRP_CALL: call rel32, call r/m64
 * in all addressing forms) pushes a return address; every near return
 * (CS_GRP_RET: ret, ret imm16) pops one; `syscall` is noted because a few
 * system calls move the shadow stack (rt_sigreturn) or the module list
 * (mmap of code). Far calls and returns (lcall, retf, iret) do not occur in
 * 64-bit user code and are left as OTHER.
 *
 * On AArch64: bl and blr (and the authenticated blraa, blraaz, blrab,
 * blrabz) set x30 and branch: calls; ret (and retaa, retab) return; svc is
 * the system call. Capstone 4 does not know the ARMv8.3 forms (they do not
 * decode), so those are told by their encodings (Arm ARM C6.2: BLRAA
 * 0xd73f0800 | Rn << 5 | Rm, BLRAAZ 0xd63f081f | Rn << 5, the B-key forms
 * with bit 10 set; RETAA 0xd65f0bff, RETAB 0xd65f0fff). b and br are
 * jumps: a tail call changes no frame. Every instruction is 4 bytes.
 */
#include <stdio.h>
#include <string.h>

#include "val.h"

#include "../base/base.h"
#include "../insn/insn.h"

/* A decoder is one src/insn decoder (Capstone, loaded on first use). */
struct val_decoder {
	struct insn_dec *dec;
	enum bk_arch arch;
};

int val_decoder_open(enum bk_arch arch, struct val_decoder **out)
{
	struct val_decoder *d = base_calloc(1, sizeof(*d));
	if (!d)
		return BK_E_NOMEM;
	d->arch = arch;
	int err = insn_open(arch, &d->dec);
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

/* The AArch64 classes by encoding (the authenticated forms). */
static uint8_t a64_kind(uint32_t w)
{
	if ((w & 0xfffff800u) == 0xd73f0800u)          /* blraa, blrab */
		return VAL_INSN_CALL;
	if ((w & 0xfffffbffu & ~0x3e0u) == 0xd63f081fu) /* blraaz, blrabz */
		return VAL_INSN_CALL;
	if (w == 0xd65f0bffu || w == 0xd65f0fffu)       /* retaa, retab */
		return VAL_INSN_RET;
	return VAL_INSN_OTHER;
}

static void decode_a64(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
		       struct val_code *out)
{
	out->len = 4;
	if (len < 4)
		return; /* UNKNOWN */
	uint32_t w = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 | (uint32_t)bytes[2] << 16 |
		     (uint32_t)bytes[3] << 24;
	out->kind = a64_kind(w);
	if (out->kind != VAL_INSN_OTHER)
		return;
	const cs_insn *i = insn_decode(d->dec, bytes, 4, pc);
	if (!i)
		return; /* undecodable: an ordinary instruction for the shadow stack */
	if (i->id == ARM64_INS_BL || i->id == ARM64_INS_BLR)
		out->kind = VAL_INSN_CALL;
	else if (i->id == ARM64_INS_RET)
		out->kind = VAL_INSN_RET;
	else if (i->id == ARM64_INS_SVC)
		out->kind = VAL_INSN_SYSCALL;
}

void val_decode(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
		struct val_code *out)
{
	out->pc = pc;
	if (d->arch == BK_ARCH_AARCH64) {
		out->kind = VAL_INSN_UNKNOWN;
		decode_a64(d, bytes, len, pc, out);
		return;
	}
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
