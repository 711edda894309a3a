/* AArch64 instruction semantics for the stack analysis (chk_stack.h):
 * Capstone 4's ARM64 decoding (src/insn) turned into micro-operations.
 *
 * The return address lives in a register: x30 (the RA column, 30) holds
 * the caller's return address at a function's entry, where CFA = sp + 0;
 * `bl`/`blr` give x30 a new value (the address after them). Pointer
 * authentication: paciasp/pacibsp (hint #25/#27) sign x30 with sp as the
 * modifier (SK_MOP_SIGN; the unwinder authenticates with the CFA, so only
 * a signature made where sp is the CFA is followed), autiasp/autibsp
 * (hint #29/#31) authenticate it, xpaclri (hint #7) strips it; retaa and
 * retab return with an authenticated x30.
 *
 * What is modelled exactly: ldr/str/ldp/stp (and the unscaled, byte, half
 * and sign-extending forms) with immediate, register (shifted, extended)
 * and literal addressing, pre- and post-indexed writeback; add/sub of an
 * immediate (lsl #12 too) or a register (shifted, extended: jump-table
 * arithmetic `add x1, x2, w1, sxtb #2`); mov between registers (sp too),
 * fmov between x and d registers, movz/movn/movk, adr/adrp, and with an
 * immediate (realignment of sp), csel, cmp of a register with an
 * immediate or a register (the jump-table bound, the end of a probing
 * loop), and the control transfers: b, b.cond, cbz/cbnz/tbz/tbnz, bl, blr,
 * br, ret, and the pointer-authenticating forms Capstone 4 does not know
 * (retaa/retab, braa/brab(z), blraa/blrab(z)) from their encodings, with
 * the LSE atomics (cas, casp, ld<op>, swp), ldraa/ldrab, ldapr, udf, the
 * MTE tag instructions, SVE and the Advanced SIMD extensions (what they
 * may write made unknown). MOPS (cpy*, set*) are not: a function using
 * them is given up ("bad code").
 * Every other instruction gives a new value to each register it writes,
 * an unknown one when it also accesses memory (a load the table does not
 * describe may reload a saved register), and makes the memory it may
 * write unknown. Capstone 4 misreports some accesses (cmp's first operand
 * as written, svc as writing x30, stxr's memory as read): those are
 * described here, not taken from it.
 *
 * Registers: x0..x30 and sp are abstract 0..31 (their DWARF numbers),
 * v8..v15 (DWARF 72..79, whose low 64 bits a call preserves) are 32..39;
 * the other vector registers are not tracked (a store from one is of an
 * unknown value). xzr reads as a new value and writes nothing.
 *
 * The decoder remembers, for instructions decoded one after another, the
 * page an adrp put in a register and the GOT word a following ldr read
 * through it: a br or blr of that register names the word (via_mem), which
 * is how a PLT stub (adrp x16; ldr x17, [x16, #o]; add x16, ...; br x17)
 * or a call through the GOT is named by its relocation.
 *
 * Sources: Arm ARM (DDI 0487) C6 for the encodings and the writeback
 * rules; AAPCS64 §6.1 (x19-x29 and the low 64 bits of v8-v15 preserved,
 * sp 16-byte aligned); AADWARF64 §4 (DWARF numbers, RA_SIGN_STATE).
 */
#include <stdio.h>

#include "chk_stack.h"

#include "../insn/insn.h"

#define A_SP 31
#define A_LR 30
#define A_V8 32
#define ZR 0xfd /* the zero register (not an abstract register) */

struct regmap {
	uint8_t reg;   /* abstract register, ZR, or SK_NONE */
	uint8_t width; /* bytes */
	uint8_t gpr;   /* an x/w register (or sp, zr) */
};

static struct regmap map_reg(unsigned r)
{
	if (r >= ARM64_REG_X0 && r <= ARM64_REG_X28)
		return (struct regmap){ (uint8_t)(r - ARM64_REG_X0), 8, 1 };
	if (r >= ARM64_REG_W0 && r <= ARM64_REG_W30)
		return (struct regmap){ (uint8_t)(r - ARM64_REG_W0), 4, 1 };
	switch (r) {
	case ARM64_REG_X29: return (struct regmap){ 29, 8, 1 };
	case ARM64_REG_X30: return (struct regmap){ 30, 8, 1 };
	case ARM64_REG_SP: return (struct regmap){ A_SP, 8, 1 };
	case ARM64_REG_WSP: return (struct regmap){ A_SP, 4, 1 };
	case ARM64_REG_XZR: return (struct regmap){ ZR, 8, 1 };
	case ARM64_REG_WZR: return (struct regmap){ ZR, 4, 1 };
	default: break;
	}
#define V(first, w)                                                                     \
	if (r >= ARM64_REG_##first##0 && r <= ARM64_REG_##first##31) {                  \
		unsigned n = r - ARM64_REG_##first##0;                                  \
		return (struct regmap){ (uint8_t)(n >= 8 && n <= 15 ? A_V8 + n - 8 : SK_NONE), \
					w, 0 };                                         \
	}
	V(B, 1)
	V(H, 2)
	V(S, 4)
	V(D, 8)
	V(Q, 16)
	V(V, 16)
#undef V
	return (struct regmap){ SK_NONE, 0, 0 };
}

/* A register the table tracks (not zr, not an untracked vector register). */
static bool tracked(struct regmap m)
{
	return m.reg < SK_NREGS;
}

/* The decoder: Capstone's, and what consecutive instructions left. */
struct a64_dec {
	struct insn_dec *d;
	uint64_t next;          /* the address after the last one decoded */
	uint8_t page_reg;       /* an adrp's register, or SK_NONE */
	uint64_t page;
	uint8_t got_reg;        /* a register loaded from GOT_SLOT, or SK_NONE */
	uint64_t got_slot;
	bool set_page, set_got; /* the instruction being decoded set them */
	bool no_fast;           /* Capstone for everything (the reference) */
};

struct build {
	struct sk_insn *in;
	struct sk_mop *mops;
};

static struct sk_mop *mop(struct build *b, uint8_t kind, uint8_t dst, uint8_t src)
{
	/* Callers emit at most SK_MAX_MOPS per instruction. */
	struct sk_mop *m = &b->mops[b->in->nmop++];
	memset(m, 0, sizeof(*m));
	m->kind = kind;
	m->dst = dst;
	m->src = src;
	return m;
}

static bool room(const struct build *b, unsigned n)
{
	return b->in->nmop + n <= SK_MAX_MOPS;
}

/* A new value in R (a 32-bit write zero-extends). */
static void clobber(struct build *b, struct regmap r)
{
	if (!tracked(r))
		return;
	if (r.reg == A_SP || !r.gpr) {
		/* sp written in a way not modelled; or v8-v15, whose low 64
		 * bits may still be the caller's (ins, a move from a vector
		 * register not tracked): unknown, not new */
		if (room(b, 1))
			mop(b, SK_MOP_UNKNOWN, r.reg, SK_NONE);
		else
			b->in->flow = SK_BAD; /* no room to say so: not followed */
		return;
	}
	b->in->clobber |= 1ull << r.reg;
	if (r.gpr && r.width == 4)
		b->in->clobber32 |= 1ull << r.reg;
}

/* Anything in R: written by an instruction that also reads memory. */
static void unknown(struct build *b, struct regmap r)
{
	if (!tracked(r))
		return;
	if (room(b, 1))
		mop(b, SK_MOP_UNKNOWN, r.reg, SK_NONE);
	else
		b->in->flow = SK_BAD; /* no room to say so: not followed */
}

static uint64_t ext_imm(const cs_arm64_op *o)
{
	uint64_t v = (uint64_t)o->imm;
	if (o->shift.type == ARM64_SFT_LSL && o->shift.value < 64)
		v <<= o->shift.value;
	return v;
}

/* A memory operand: base + disp, index scaled (its extension into SK_TMP
 * first when it is a w register). False when it is not one to follow. */
static bool mem_of(struct build *b, const cs_arm64_op *o, unsigned size, struct sk_mem *m)
{
	*m = (struct sk_mem){ .disp = o->mem.disp, .base = SK_NONE, .index = SK_NONE, .scale = 1,
			      .size = (uint8_t)(size > 64 ? 64 : size) };
	struct regmap base = map_reg(o->mem.base);
	if (!base.gpr || base.width != 8 || base.reg == ZR) {
		m->base = SK_MEM_FAR;
		return false;
	}
	m->base = base.reg;
	if (o->mem.index == ARM64_REG_INVALID)
		return true;
	struct regmap ix = map_reg(o->mem.index);
	if (!ix.gpr || ix.reg == ZR || ix.reg == A_SP) {
		m->base = SK_MEM_FAR;
		return false;
	}
	unsigned sh = o->shift.type == ARM64_SFT_LSL ? o->shift.value : 0;
	if (sh > 3) {
		m->base = SK_MEM_FAR;
		return false;
	}
	m->scale = (uint8_t)(1u << sh);
	if (ix.width == 4 || o->ext == ARM64_EXT_UXTW || o->ext == ARM64_EXT_SXTW) {
		/* [xn, wm, uxtw/sxtw #s]: the index is the low word, extended */
		struct sk_mop *z = mop(b, SK_MOP_ZEXT, SK_TMP, ix.reg);
		z->imm = 4;
		z->flags = o->ext == ARM64_EXT_SXTW ? SK_F_SIGNED : 0;
		m->index = SK_TMP;
	} else {
		m->index = ix.reg;
	}
	return true;
}

/* The operand index of the memory operand, or -1. */
static int mem_index(const cs_arm64 *x)
{
	for (int k = 0; k < x->op_count; k++)
		if (x->operands[k].type == ARM64_OP_MEM)
			return k;
	return -1;
}

/* Bytes a load or store of register R moves for instruction ID. */
static unsigned access_size(unsigned id, struct regmap r, bool *sign)
{
	*sign = false;
	switch (id) {
	case ARM64_INS_LDRB: case ARM64_INS_LDURB: case ARM64_INS_STRB: case ARM64_INS_STURB:
		return 1;
	case ARM64_INS_LDRH: case ARM64_INS_LDURH: case ARM64_INS_STRH: case ARM64_INS_STURH:
		return 2;
	case ARM64_INS_LDRSB: case ARM64_INS_LDURSB:
		*sign = true;
		return 1;
	case ARM64_INS_LDRSH: case ARM64_INS_LDURSH:
		*sign = true;
		return 2;
	case ARM64_INS_LDRSW: case ARM64_INS_LDURSW: case ARM64_INS_LDPSW:
		*sign = true;
		return 4;
	default:
		return r.width;
	}
}

/* Loads and stores of one or two registers: ldr/str and their unscaled,
 * byte, half, signed forms, ldp/stp/ldnp/stnp/ldpsw. */
static bool load_store(struct build *b, const cs_insn *i, bool load, bool pair)
{
	const cs_arm64 *x = &i->detail->arm64;
	int mi = mem_index(x);
	int nreg = pair ? 2 : 1;
	if (mi != nreg)
		return false;
	struct regmap r[2] = { map_reg(x->operands[0].reg),
			       pair ? map_reg(x->operands[1].reg) : map_reg(0) };
	for (int k = 0; k < nreg; k++)
		if (x->operands[k].type != ARM64_OP_REG || (r[k].reg == SK_NONE && r[k].width == 0))
			return false;
	bool sign;
	unsigned size = access_size(i->id, r[0], &sign);
	const cs_arm64_op *mo = &x->operands[mi];
	/* Writeback: pre-indexed (disp, then base = address) or post-indexed
	 * (an immediate after the memory operand: base += it after). */
	bool post = x->op_count > mi + 1 && x->operands[mi + 1].type == ARM64_OP_IMM;
	bool wb = x->writeback || post;
	if (x->op_count > mi + 1 && !post)
		return false; /* post-indexed by a register: not in A64 loads here */
	struct sk_mem m;
	uint8_t nmop0 = b->in->nmop;
	if (!mem_of(b, mo, size, &m)) {
		b->in->nmop = nmop0;
		return false;
	}
	if (wb && m.index != SK_NONE) {
		b->in->nmop = nmop0;
		return false;
	}
	int64_t wb_delta = post ? x->operands[mi + 1].imm : m.disp;
	if (post)
		m.disp = 0;
	uint8_t base = m.base;
	if (load) {
		for (int k = 0; k < nreg; k++)
			if (wb && r[k].reg == base) {
				b->in->nmop = nmop0; /* unpredictable: generic() */
				return false;
			}
		/* A destination that is the base register loads last. */
		int order[2] = { 0, 1 };
		if (pair && r[0].reg == base) {
			order[0] = 1;
			order[1] = 0;
		}
		for (int q = 0; q < nreg; q++) {
			int k = order[q];
			struct sk_mem mk = m;
			mk.disp += (int64_t)size * k;
			if (!tracked(r[k]))
				continue;
			if (!r[k].gpr && size == 16) {
				/* q8-q15: the low 64 bits are the ones compared,
				 * at the lower address (little-endian) */
				struct sk_mop *l = mop(b, SK_MOP_LOAD, r[k].reg, SK_NONE);
				l->mem = mk;
				l->mem.size = 8;
				continue;
			}
			if (!r[k].gpr && size != 8) {
				/* s, h, b of v8-v15: not the 64 bits compared */
				mop(b, SK_MOP_UNKNOWN, r[k].reg, SK_NONE);
				continue;
			}
			struct sk_mop *l = mop(b, SK_MOP_LOAD, r[k].reg, SK_NONE);
			l->mem = mk;
			if (sign) {
				l->flags = SK_F_SIGNED;
				if (r[k].width == 4)
					l->flags |= SK_F_W32;
			}
		}
	} else {
		bool any_untracked = false;
		for (int k = 0; k < nreg; k++)
			any_untracked |= r[k].reg == SK_NONE;
		if (any_untracked)
			mop(b, SK_MOP_UNKNOWN, SK_TMP, SK_NONE);
		for (int k = 0; k < nreg; k++) {
			struct sk_mem mk = m;
			mk.disp += (int64_t)size * k;
			uint8_t src = r[k].reg == SK_NONE ? SK_TMP
				: r[k].reg == ZR || size != 8 ? SK_NONE : r[k].reg;
			bool q = tracked(r[k]) && !r[k].gpr && size == 16;
			if (q) {
				/* q8-q15: the low 64 bits (the compared ones) at
				 * the lower address, then 8 bytes of no tracked value */
				src = r[k].reg;
				mk.size = 8;
			}
			struct sk_mop *s = mop(b, SK_MOP_STORE, SK_NONE, src);
			s->mem = mk;
			if (wb && !post && base == A_SP && wb_delta < 0)
				s->flags = SK_F_PUSH; /* a push: a save area */
			if (q) {
				struct sk_mop *h = mop(b, SK_MOP_STORE, SK_NONE, SK_NONE);
				h->mem = mk;
				h->mem.disp += 8;
				h->flags = s->flags;
			}
		}
	}
	if (wb) {
		if (!room(b, 1)) {
			b->in->nmop = nmop0;
			return false;
		}
		mop(b, SK_MOP_SET, base, base)->imm = wb_delta;
	}
	return true;
}

/* add/sub: immediate (lsl #12), or register shifted or extended. */
static bool add_sub(struct build *b, const cs_insn *i, bool sub)
{
	const cs_arm64 *x = &i->detail->arm64;
	if (x->op_count != 3 || x->operands[0].type != ARM64_OP_REG ||
	    x->operands[1].type != ARM64_OP_REG)
		return false;
	struct regmap d = map_reg(x->operands[0].reg), a = map_reg(x->operands[1].reg);
	const cs_arm64_op *o2 = &x->operands[2];
	if (!d.gpr || !a.gpr)
		return false;
	if (d.reg == ZR)
		return true; /* cmp/cmn spelt out: flags only (not learnt from) */
	uint8_t flags = d.width == 4 ? SK_F_W32 : 0;
	if (o2->type == ARM64_OP_IMM) {
		int64_t v = (int64_t)ext_imm(o2);
		struct sk_mop *m = a.reg == ZR ? mop(b, SK_MOP_SET, d.reg, SK_NONE)
					       : mop(b, SK_MOP_SET, d.reg, a.reg);
		m->imm = sub ? -v : v;
		m->flags = flags;
		return true;
	}
	if (o2->type != ARM64_OP_REG)
		return false;
	struct regmap c = map_reg(o2->reg);
	if (!c.gpr || a.reg == ZR || d.width != 8)
		return false;
	unsigned sh = o2->shift.type == ARM64_SFT_LSL ? o2->shift.value : 0;
	if ((o2->shift.type != ARM64_SFT_INVALID && o2->shift.type != ARM64_SFT_LSL) || sh > 4)
		return false;
	unsigned ew = 0;
	bool es = false;
	switch (o2->ext) {
	case ARM64_EXT_UXTB: ew = 1; break;
	case ARM64_EXT_UXTH: ew = 2; break;
	case ARM64_EXT_UXTW: ew = 4; break;
	case ARM64_EXT_SXTB: ew = 1; es = true; break;
	case ARM64_EXT_SXTH: ew = 2; es = true; break;
	case ARM64_EXT_SXTW: ew = 4; es = true; break;
	default: break;
	}
	if (c.reg == ZR) {
		mop(b, SK_MOP_SET, d.reg, a.reg);
		return true;
	}
	/* tmp = ext(c) << sh; d = a; d +/-= tmp */
	if (ew) {
		struct sk_mop *z = mop(b, SK_MOP_ZEXT, SK_TMP, c.reg);
		z->imm = ew;
		z->flags = es ? SK_F_SIGNED : 0;
	} else {
		mop(b, SK_MOP_SET, SK_TMP, c.reg);
	}
	if (sh)
		mop(b, SK_MOP_SHL, SK_TMP, SK_NONE)->imm = sh;
	if (d.reg != a.reg)
		mop(b, SK_MOP_SET, d.reg, a.reg);
	mop(b, sub ? SK_MOP_SUB : SK_MOP_ADD, d.reg, SK_TMP);
	return true;
}

static enum sk_cond cond_of(arm64_cc cc)
{
	switch (cc) {
	case ARM64_CC_HI: return SK_COND_A;
	case ARM64_CC_HS: return SK_COND_AE;
	case ARM64_CC_LO: return SK_COND_B;
	case ARM64_CC_LS: return SK_COND_BE;
	case ARM64_CC_EQ: return SK_COND_E;
	case ARM64_CC_NE: return SK_COND_NE;
	default: return SK_COND_OTHER;
	}
}

/* The bytes a store of the registers before operand MI writes: st1-st4
 * of whole vectors (8 or 16 bytes each) or of one lane; 64 (st4 of q
 * registers, the most) when the operands do not say. */
static unsigned vector_bytes(const cs_arm64 *x, int mi)
{
	unsigned n = 0;
	for (int k = 0; k < mi; k++) {
		const cs_arm64_op *o = &x->operands[k];
		if (o->type != ARM64_OP_REG)
			return 64;
		if (o->vector_index >= 0 && o->vess != ARM64_VESS_INVALID) {
			n += o->vess == ARM64_VESS_B ? 1 : o->vess == ARM64_VESS_H ? 2
				: o->vess == ARM64_VESS_S ? 4 : 8;
			continue;
		}
		switch (o->vas) {
		case ARM64_VAS_16B: case ARM64_VAS_8H: case ARM64_VAS_4S: case ARM64_VAS_2D:
		case ARM64_VAS_1Q:
			n += 16;
			break;
		case ARM64_VAS_8B: case ARM64_VAS_4H: case ARM64_VAS_2S: case ARM64_VAS_1D:
			n += 8;
			break;
		default: {
			struct regmap r = map_reg(o->reg);
			if (!r.width)
				return 64;
			n += r.width; /* stxr's w/x, stlr, stg's address: at most 8 */
		}
		}
	}
	return n && n <= 64 ? n : 64;
}

/* The effects of an instruction the table does not model. */
static void generic(struct build *b, const cs_insn *i)
{
	const cs_arm64 *x = &i->detail->arm64;
	int mi = mem_index(x);
	bool memop = mi >= 0;
	for (int k = 0; k < x->op_count; k++) {
		const cs_arm64_op *o = &x->operands[k];
		if (o->type != ARM64_OP_REG || !(o->access & CS_AC_WRITE))
			continue;
		struct regmap r = map_reg(o->reg);
		if (memop)
			unknown(b, r);
		else
			clobber(b, r);
	}
	if (!memop)
		return;
	const cs_arm64_op *mo = &x->operands[mi];
	struct regmap base = map_reg(mo->mem.base);
	if (x->writeback || x->op_count > mi + 1)
		unknown(b, base); /* post-indexed by an immediate or a register (ld1 {..}, [x0], x1) */
	/* Whether it writes memory: Capstone 4's access flags for memory are
	 * not reliable; the store classes are named st* (st1, stxr, stlr,
	 * stg, ...). */
	if (i->mnemonic[0] == 's' && i->mnemonic[1] == 't' && room(b, 2) && base.gpr &&
	    base.width == 8 && base.reg != ZR) {
		mop(b, SK_MOP_UNKNOWN, SK_TMP, SK_NONE);
		struct sk_mop *s = mop(b, SK_MOP_STORE, SK_NONE, SK_TMP);
		s->mem = (struct sk_mem){ .disp = mo->mem.disp, .base = base.reg, .index = SK_NONE,
					  .scale = 1, .size = (uint8_t)vector_bytes(x, mi) };
		if (mo->mem.index != ARM64_REG_INVALID)
			s->mem.base = SK_MEM_FAR;
		/* unknown bytes: every tracked slot it covers becomes
		 * unknown (SK_TMP's value), not "none of the tracked" */
	}
}

/* Instructions that do not write the flags (A64: only the S forms, the
 * compares, ccmp/ccmn, fcmp and msr nzcv do). */
static bool keeps_flags(unsigned id, const cs_arm64 *x)
{
	if (x->update_flags)
		return false;
	switch (id) {
	case ARM64_INS_LDR: case ARM64_INS_LDRB: case ARM64_INS_LDRH: case ARM64_INS_LDRSB:
	case ARM64_INS_LDRSH: case ARM64_INS_LDRSW: case ARM64_INS_LDUR: case ARM64_INS_LDURB:
	case ARM64_INS_LDURH: case ARM64_INS_LDURSB: case ARM64_INS_LDURSH: case ARM64_INS_LDURSW:
	case ARM64_INS_LDP: case ARM64_INS_LDPSW: case ARM64_INS_STR: case ARM64_INS_STRB:
	case ARM64_INS_STRH: case ARM64_INS_STUR: case ARM64_INS_STURB: case ARM64_INS_STURH:
	case ARM64_INS_STP: case ARM64_INS_MOV: case ARM64_INS_MOVZ: case ARM64_INS_MOVK:
	case ARM64_INS_MOVN: case ARM64_INS_ADR: case ARM64_INS_ADRP: case ARM64_INS_ADD:
	case ARM64_INS_SUB: case ARM64_INS_NOP: case ARM64_INS_UXTW: case ARM64_INS_SXTW:
	case ARM64_INS_UXTB: case ARM64_INS_UXTH: case ARM64_INS_SXTB: case ARM64_INS_SXTH:
	case ARM64_INS_LSL: case ARM64_INS_LSR: case ARM64_INS_ASR: case ARM64_INS_UBFX:
	case ARM64_INS_SBFX: case ARM64_INS_UBFIZ: case ARM64_INS_SBFIZ:
		return true;
	default:
		return false;
	}
}

/* PAC and BTI hints (the hint space, Arm ARM C6.2 HINT). */
static void hint(struct build *b, int64_t n)
{
	struct sk_mop *m;
	switch (n) {
	case 25: /* paciasp */
	case 27: /* pacibsp */
		mop(b, SK_MOP_SIGN, A_LR, A_SP);
		return;
	case 24: /* paciaz: modifier zero, which no unwinder uses */
	case 26: /* pacibz */
		mop(b, SK_MOP_UNKNOWN, A_LR, SK_NONE);
		return;
	case 29: /* autiasp */
	case 31: /* autibsp */
		mop(b, SK_MOP_AUTH, A_LR, A_SP);
		return;
	case 28: /* autiaz */
	case 30: /* autibz */
		mop(b, SK_MOP_UNKNOWN, A_LR, SK_NONE);
		return;
	case 7: /* xpaclri */
		m = mop(b, SK_MOP_AUTH, A_LR, SK_NONE);
		m->flags = SK_F_STRIP;
		return;
	case 8: case 10: case 12: case 14: /* pacia1716 .. autib1716: x17 */
		b->in->clobber |= 1ull << 17;
		return;
	default:
		return; /* bti, yield, esb, csdb, ...: nothing tracked */
	}
}

static void a64_decode_insn(struct a64_dec *ad, struct build *b, const cs_insn *i)
{
	struct sk_insn *in = b->in;
	const cs_arm64 *x = &i->detail->arm64;
	const cs_arm64_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;
	const cs_arm64_op *o1 = x->op_count > 1 ? &x->operands[1] : NULL;
	struct regmap r0 = o0 && o0->type == ARM64_OP_REG ? map_reg(o0->reg) : map_reg(0);
	struct regmap r1 = o1 && o1->type == ARM64_OP_REG ? map_reg(o1->reg) : map_reg(0);
	bool reg0 = o0 && o0->type == ARM64_OP_REG, reg1 = o1 && o1->type == ARM64_OP_REG;
	struct sk_mop *m;

	switch (i->id) {
	case ARM64_INS_NOP:
		in->fill = 1;
		return;
	case ARM64_INS_HINT:
		if (o0 && o0->type == ARM64_OP_IMM)
			hint(b, o0->imm);
		return;
	case ARM64_INS_LDR: case ARM64_INS_LDRB: case ARM64_INS_LDRH: case ARM64_INS_LDRSB:
	case ARM64_INS_LDRSH: case ARM64_INS_LDRSW: case ARM64_INS_LDUR: case ARM64_INS_LDURB:
	case ARM64_INS_LDURH: case ARM64_INS_LDURSB: case ARM64_INS_LDURSH: case ARM64_INS_LDURSW:
		if (x->op_count == 2 && reg0 && o1->type == ARM64_OP_IMM) {
			/* literal: a word of the file at a fixed address */
			bool sign;
			unsigned size = access_size(i->id, r0, &sign);
			if (tracked(r0)) {
				m = mop(b, SK_MOP_LOAD, r0.reg, SK_NONE);
				m->mem = (struct sk_mem){ .disp = o1->imm, .base = SK_NONE,
							  .index = SK_NONE, .scale = 1,
							  .size = (uint8_t)size };
				m->flags = sign ? SK_F_SIGNED | (r0.width == 4 ? SK_F_W32 : 0) : 0;
				if (!r0.gpr && size != 8)
					m->kind = SK_MOP_UNKNOWN; /* not the 64 bits compared */
			}
			return;
		}
		if (!load_store(b, i, true, false))
			generic(b, i);
		if (reg0 && r0.gpr && r0.width == 8 && r0.reg < 31 && i->id == ARM64_INS_LDR &&
		    x->op_count == 2 && ad->page_reg != SK_NONE &&
		    map_reg(o1->mem.base).reg == ad->page_reg && o1->mem.index == ARM64_REG_INVALID &&
		    !x->writeback) {
			/* ldr xT, [xP, #lo12] after adrp xP: a GOT word */
			ad->got_reg = r0.reg;
			ad->got_slot = ad->page + (uint64_t)(int64_t)o1->mem.disp;
			ad->set_got = true;
		}
		return;
	case ARM64_INS_STR: case ARM64_INS_STRB: case ARM64_INS_STRH: case ARM64_INS_STUR:
	case ARM64_INS_STURB: case ARM64_INS_STURH:
		if (!load_store(b, i, false, false))
			generic(b, i);
		return;
	case ARM64_INS_LDP: case ARM64_INS_LDPSW: case ARM64_INS_LDNP:
		if (!load_store(b, i, true, true))
			generic(b, i);
		return;
	case ARM64_INS_STP: case ARM64_INS_STNP:
		if (!load_store(b, i, false, true))
			generic(b, i);
		return;
	case ARM64_INS_ADD:
	case ARM64_INS_SUB:
		if (!add_sub(b, i, i->id == ARM64_INS_SUB))
			generic(b, i);
		return;
	case ARM64_INS_MOV:
		if (reg0 && reg1 && r0.gpr && r1.gpr && r0.reg != ZR) {
			if (r1.reg == ZR) {
				m = mop(b, SK_MOP_SET, r0.reg, SK_NONE);
			} else if (r0.width == 8 || r0.reg == A_SP || r1.reg == A_SP) {
				m = mop(b, SK_MOP_SET, r0.reg, r1.reg);
			} else {
				m = mop(b, SK_MOP_ZEXT, r0.reg, r1.reg);
				m->imm = 4;
			}
			return;
		}
		if (reg0 && o1 && o1->type == ARM64_OP_IMM && r0.gpr && r0.reg != ZR) {
			m = mop(b, SK_MOP_SET, r0.reg, SK_NONE);
			m->imm = r0.width == 4 ? (int64_t)(uint32_t)ext_imm(o1) : (int64_t)ext_imm(o1);
			return;
		}
		generic(b, i);
		return;
	case ARM64_INS_FMOV:
		/* fmov d8, x0 / fmov x0, d8 / fmov d8, d9: the 64 bits */
		if (reg0 && reg1 && r0.width == 8 && r1.width == 8 && tracked(r0) &&
		    (tracked(r1) || r1.reg == ZR)) {
			if (r1.reg == ZR)
				mop(b, SK_MOP_SET, r0.reg, SK_NONE);
			else
				mop(b, SK_MOP_SET, r0.reg, r1.reg);
			return;
		}
		generic(b, i);
		return;
	case ARM64_INS_MOVZ:
	case ARM64_INS_MOVN:
		if (reg0 && r0.gpr && r0.reg != ZR && o1 && o1->type == ARM64_OP_IMM) {
			uint64_t v = ext_imm(o1);
			if (i->id == ARM64_INS_MOVN)
				v = ~v;
			if (r0.width == 4)
				v = (uint32_t)v;
			mop(b, SK_MOP_SET, r0.reg, SK_NONE)->imm = (int64_t)v;
			return;
		}
		generic(b, i);
		return;
	case ARM64_INS_MOVK:
		if (reg0 && r0.gpr && r0.reg != ZR && r0.reg != A_SP && o1 &&
		    o1->type == ARM64_OP_IMM) {
			unsigned sh = o1->shift.type == ARM64_SFT_LSL ? o1->shift.value : 0;
			if (sh < 64) {
				uint64_t mask = ~(0xffffull << sh);
				if (r0.width == 4)
					mask &= 0xffffffffull;
				mop(b, SK_MOP_AND, r0.reg, SK_NONE)->imm = (int64_t)mask;
				mop(b, SK_MOP_SET, r0.reg, r0.reg)->imm = (int64_t)ext_imm(o1);
				return;
			}
		}
		generic(b, i);
		return;
	case ARM64_INS_ADR:
	case ARM64_INS_ADRP:
		if (reg0 && r0.gpr && o1 && o1->type == ARM64_OP_IMM) {
			mop(b, SK_MOP_SET, r0.reg, SK_NONE)->imm = o1->imm;
			if (i->id == ARM64_INS_ADRP && r0.reg < 31) {
				ad->page_reg = r0.reg;
				ad->page = (uint64_t)o1->imm;
				ad->set_page = true;
			}
			return;
		}
		generic(b, i);
		return;
	case ARM64_INS_AND:
	case ARM64_INS_ORR:
		if (x->op_count == 3 && reg0 && reg1 && r0.gpr && r1.gpr && r0.width == 8 &&
		    x->operands[2].type == ARM64_OP_IMM && !x->update_flags && r0.reg != ZR) {
			int64_t imm = x->operands[2].imm;
			if (i->id == ARM64_INS_AND && r1.reg != ZR) {
				if (r0.reg != r1.reg)
					mop(b, SK_MOP_SET, r0.reg, r1.reg);
				mop(b, SK_MOP_AND, r0.reg, SK_NONE)->imm = imm;
				return;
			}
			if (i->id == ARM64_INS_ORR && r1.reg == ZR) {
				mop(b, SK_MOP_SET, r0.reg, SK_NONE)->imm = imm;
				return;
			}
		}
		generic(b, i);
		return;
	case ARM64_INS_CSEL:
		if (x->op_count == 3 && reg0 && r0.gpr && r0.width == 8 && r0.reg != ZR &&
		    r0.reg != A_SP && x->operands[1].type == ARM64_OP_REG &&
		    x->operands[2].type == ARM64_OP_REG) {
			struct regmap a = map_reg(x->operands[1].reg), c = map_reg(x->operands[2].reg);
			if (a.gpr && c.gpr && a.width == 8 && c.width == 8 && a.reg != ZR &&
			    c.reg != ZR) {
				mop(b, SK_MOP_SET, SK_TMP, a.reg);
				mop(b, SK_MOP_CMOV, SK_TMP, c.reg);
				mop(b, SK_MOP_SET, r0.reg, SK_TMP);
				return;
			}
		}
		generic(b, i);
		return;
	case ARM64_INS_CMP:
		/* cmp a, #imm (lsl #12) / cmp a, b (no shift, no extension) */
		if (reg0 && r0.gpr && tracked(r0) && o1) {
			if (o1->type == ARM64_OP_IMM) {
				m = mop(b, SK_MOP_CMP, r0.reg, SK_NONE);
				uint64_t v = ext_imm(o1);
				m->imm = (int64_t)(r0.width == 8 ? v : (uint32_t)v);
				m->width = r0.width;
			} else if (reg1 && r1.gpr && tracked(r1) && r0.width == 8 && r1.width == 8 &&
				   o1->shift.type == ARM64_SFT_INVALID && o1->ext == ARM64_EXT_INVALID) {
				mop(b, SK_MOP_CMP, r0.reg, r1.reg)->width = 8;
			}
		}
		return;
	case ARM64_INS_B:
		if (!o0 || o0->type != ARM64_OP_IMM) {
			in->flow = SK_BAD;
			return;
		}
		in->target = (uint64_t)o0->imm;
		if (x->cc == ARM64_CC_INVALID || x->cc == ARM64_CC_AL) {
			in->flow = SK_JUMP;
		} else if (x->cc == ARM64_CC_NV) {
			in->flow = SK_JUMP; /* "always" too */
		} else {
			in->flow = SK_BRANCH;
			in->cond = (uint8_t)cond_of(x->cc);
		}
		return;
	case ARM64_INS_CBZ:
	case ARM64_INS_CBNZ:
	case ARM64_INS_TBZ:
	case ARM64_INS_TBNZ: {
		const cs_arm64_op *t = &x->operands[x->op_count - 1];
		if (!x->op_count || t->type != ARM64_OP_IMM) {
			in->flow = SK_BAD;
			return;
		}
		in->flow = SK_BRANCH;
		in->target = (uint64_t)t->imm;
		return;
	}
	case ARM64_INS_BL:
		if (!o0 || o0->type != ARM64_OP_IMM) {
			in->flow = SK_BAD;
			return;
		}
		in->clobber |= 1ull << A_LR;
		if ((uint64_t)o0->imm == i->address + 4)
			return; /* bl to the next instruction: reads the PC */
		in->flow = SK_CALL;
		in->target = (uint64_t)o0->imm;
		return;
	case ARM64_INS_BLR:
		in->flow = SK_CALL;
		if (reg0 && r0.reg == ad->got_reg && ad->got_reg != SK_NONE) {
			in->target = ad->got_slot;
			in->via_mem = 1;
		}
		in->clobber |= 1ull << A_LR;
		return;
	case ARM64_INS_BR:
		in->flow = SK_IJUMP;
		in->ijump_reg = reg0 && tracked(r0) ? r0.reg : SK_NONE;
		if (reg0 && r0.reg == ad->got_reg && ad->got_reg != SK_NONE) {
			in->target = ad->got_slot;
			in->via_mem = 1;
		}
		return;
	case ARM64_INS_RET:
	case ARM64_INS_ERET:
		in->flow = SK_RET;
		return;
	case ARM64_INS_BRK:
	case ARM64_INS_HLT:
		in->flow = SK_STOP;
		return;
	case ARM64_INS_SVC:
	case ARM64_INS_HVC:
	case ARM64_INS_SMC:
		in->clobber |= 1; /* the result in x0; Capstone 4 says x30 */
		return;
	case ARM64_INS_PRFM:
	case ARM64_INS_PRFUM:
	case ARM64_INS_CMN:
	case ARM64_INS_TST:
		return; /* flags only (Capstone 4 says cmn and tst write their first operand) */
	default:
		break;
	}
	generic(b, i);
}

/* Encodings Capstone 4 does not decode (ARMv8.1 LSE atomics, v8.3 pointer
 * authentication, v8.3 RCpc, udf), from the Arm ARM's encoding tables.
 * Returns a name for the text, or NULL when it is none of them. */
static const char *a64_fallback(struct build *b, uint32_t w)
{
	struct sk_insn *in = b->in;
	unsigned rt = w & 31, rn = (w >> 5) & 31, rs = (w >> 16) & 31;
	struct regmap t = { (uint8_t)(rt == 31 ? ZR : rt), 8, 1 };
	struct regmap s = { (uint8_t)(rs == 31 ? ZR : rs), 8, 1 };
	struct regmap n = { (uint8_t)(rn == 31 ? A_SP : rn), 8, 1 };
	if (w == 0xd65f0bff || w == 0xd65f0fff) {
		in->flow = SK_RET;
		return w == 0xd65f0bff ? "retaa" : "retab";
	}
	if (w == 0xd69f0bff || w == 0xd69f0fff) {
		in->flow = SK_RET;
		return w == 0xd69f0bff ? "eretaa" : "eretab";
	}
	/* braaz/brabz (d61f081f/d61f0c1f), braa/brab (d71f08xx/d71f0cxx),
	 * and the blr forms (bit 21) */
	if ((w & 0xfedff800) == 0xd61f0800 && ((w & 0x01000000) || (w & 31) == 31)) {
		bool call = w & (1u << 21);
		if (call) {
			in->flow = SK_CALL;
			in->clobber |= 1ull << A_LR;
		} else {
			in->flow = SK_IJUMP;
			in->ijump_reg = SK_NONE; /* an authenticated pointer: not a table */
		}
		return call ? "blra*" : "bra*";
	}
	if ((w & 0xff200400) == 0xf8200400) { /* ldraa/ldrab */
		unknown(b, t);
		if (w & (1u << 11))
			unknown(b, n);
		return "ldra*";
	}
	if ((w & 0x3f200c00) == 0x38200000) { /* ld<op>, st<op>, swp */
		if (rt != 31)
			unknown(b, (struct regmap){ t.reg, (w >> 30) == 3 ? 8 : 4, 1 });
		goto memory;
	}
	if ((w & 0x3fa07c00) == 0x08a07c00) { /* cas */
		unknown(b, (struct regmap){ s.reg, (w >> 30) == 3 ? 8 : 4, 1 });
		goto memory;
	}
	if ((w & 0xbfa07c00) == 0x08207c00) { /* casp */
		if (rs < 30) {
			unknown(b, s);
			unknown(b, (struct regmap){ (uint8_t)(rs + 1), 8, 1 });
		}
		goto memory;
	}
	if ((w & 0x3fe0fc00) == 0x38a0c000) { /* ldapr */
		unknown(b, (struct regmap){ t.reg, (w >> 30) == 3 ? 8 : 4, 1 });
		return "ldapr";
	}
	if ((w & 0xffffc000) == 0xdac10000) { /* pacia/autia/xpaci.. Xd */
		clobber(b, t);
		return "pac/aut";
	}
	/* MTE (v8.5): irg, gmi, subp(s) write Xd (irg's may be sp); addg,
	 * subg write Xd|SP; ldg writes Xt's tag; stg/stzg/st2g/stz2g store
	 * tags (stz* zero the granules) with optional writeback to Xn|SP. */
	if ((w & 0xffe0f800) == 0x9ac01000 || (w & 0xbfe0fc00) == 0x9ac00000) {
		struct regmap d = { (uint8_t)(rt == 31 ? ((w & 0xfc00) == 0x1000 ? A_SP : ZR) : rt), 8, 1 };
		clobber(b, d);
		return (w & 0xfc00) == 0x1000 ? "irg" : (w & 0xfc00) == 0x1400 ? "gmi" : "subp";
	}
	if ((w & 0xbfc0c000) == 0x91800000) {
		clobber(b, (struct regmap){ (uint8_t)(rt == 31 ? A_SP : rt), 8, 1 });
		return "addg/subg";
	}
	if ((w & 0xffe00c00) == 0xd9600000) {
		unknown(b, t);
		return "ldg";
	}
	if ((w & 0xff200000) == 0xd9200000 && (w & 0xc00)) {
		unsigned op2 = (w >> 10) & 3;
		int64_t imm = ((int64_t)(int32_t)(w << 11) >> 23) * 16; /* simm9, scaled */
		bool zero = (w >> 22) & 1;
		if (zero && room(b, 2)) {
			mop(b, SK_MOP_UNKNOWN, SK_TMP, SK_NONE);
			mop(b, SK_MOP_STORE, SK_NONE, SK_TMP)->mem =
				(struct sk_mem){ .base = n.reg, .index = SK_NONE, .scale = 1,
						 .size = (w >> 23) & 1 ? 32 : 16,
						 .disp = op2 == 1 ? 0 : imm };
		}
		if (op2 != 2)
			mop(b, SK_MOP_SET, n.reg, n.reg)->imm = imm;
		return "stg";
	}
	if ((w & 0xffff0000) == 0) {
		in->flow = SK_STOP;
		return "udf";
	}
	/* SVE (op0 x0010). What writes a general register: cnt*, inc/dec
	 * (scalar), rdvl, addvl/addpl (Xd|SP), lasta/b and the like; the rest
	 * writes z/p registers and the flags. Field 0-4 is unknown afterwards
	 * when it may name a general register, sp only for addvl/addpl;
	 * stores (e4, e5) write a vector length of unknown bytes at Xn. */
	if ((w & 0x1e000000) == 0x04000000) {
		if ((w & 0xffa0f800) == 0x04205000) {
			unknown(b, (struct regmap){ (uint8_t)(rt == 31 ? A_SP : rt), 8, 1 });
			return "addvl/addpl";
		}
		if ((w >> 25) == 0x72) {
			if (room(b, 2)) {
				mop(b, SK_MOP_UNKNOWN, SK_TMP, SK_NONE);
				mop(b, SK_MOP_STORE, SK_NONE, SK_TMP)->mem =
					(struct sk_mem){ .base = n.reg, .index = SK_NONE, .scale = 1,
							 .size = 255 };
			}
			return "sve store";
		}
		if (rt != 31)
			unknown(b, t);
		return "sve";
	}
	/* Advanced SIMD / FP beyond Capstone 4 (dot product, fp16, sha3, ...):
	 * a vector register written, unknown if it is one of v8-v15. */
	if ((w & 0x0e000000) == 0x0e000000) {
		if (rt >= 8 && rt <= 15)
			unknown(b, (struct regmap){ (uint8_t)(A_V8 + rt - 8), 16, 0 });
		return "simd";
	}
	return NULL;
memory:
	if (room(b, 2)) {
		mop(b, SK_MOP_UNKNOWN, SK_TMP, SK_NONE);
		mop(b, SK_MOP_STORE, SK_NONE, SK_TMP)->mem =
			(struct sk_mem){ .base = n.reg, .index = SK_NONE, .scale = 1, .size = 16 };
	}
	return "atomic";
}

/* What the adrp/ldr memory says holds only while nothing else writes
 * those registers (PAGE_REG, GOT_REG: before this instruction). */
static void forget(struct a64_dec *ad, const struct sk_insn *in, const struct sk_mop *mops,
		   uint8_t page_reg, uint8_t got_reg)
{
	uint64_t w = in->clobber;
	for (unsigned k = 0; k < in->nmop; k++)
		if (mops[k].kind != SK_MOP_STORE && mops[k].kind != SK_MOP_CMP && mops[k].dst < 64)
			w |= 1ull << mops[k].dst;
	if (page_reg != SK_NONE && !ad->set_page && (w >> page_reg) & 1)
		ad->page_reg = SK_NONE;
	if (got_reg != SK_NONE && !ad->set_got && (w >> got_reg) & 1)
		ad->got_reg = SK_NONE;
}

/* The most frequent encodings (about nine in ten instructions of libc)
 * decoded here without Capstone, whose ARM64 decoder formats every
 * instruction's text (a third of the analysis's time): the same
 * micro-operations as the Capstone path gives them, which
 * tests/unit/test_a64decode.c checks word by word over whole libraries
 * against the reference table (chk_stack_aarch64_reference). False: not
 * one of them, or a form left to Capstone. */
static bool fast(struct a64_dec *ad, struct build *b, uint32_t w, uint64_t addr)
{
	struct sk_insn *in = b->in;
	struct sk_mop *m;
	unsigned rd = w & 31, rn = (w >> 5) & 31, rt2 = (w >> 10) & 31;
	bool sf = w >> 31;
	in->flow = SK_FALL;
	if (w == 0xd503201f) { /* nop */
		in->fill = 1;
		in->keeps_flags = 1;
		return true;
	}
	if ((w & 0x7c000000) == 0x14000000) { /* b, bl: imm26 */
		uint64_t t = addr + (uint64_t)((int64_t)(int32_t)(w << 6) >> 4);
		if (w >> 31) {
			in->clobber |= 1ull << A_LR;
			if (t == addr + 4)
				return true; /* bl to the next instruction: reads the PC */
			in->flow = SK_CALL;
		} else {
			in->flow = SK_JUMP;
		}
		in->target = t;
		return true;
	}
	if ((w & 0xff000010) == 0x54000000) { /* b.cond: imm19 */
		unsigned cc = w & 15;
		in->target = addr + (uint64_t)((int64_t)(int32_t)((w >> 5) << 13) >> 11);
		if (cc >= 14) {
			in->flow = SK_JUMP; /* al, nv: always */
			return true;
		}
		static const uint8_t conds[14] = {
			[0] = SK_COND_E, [1] = SK_COND_NE, [2] = SK_COND_AE, [3] = SK_COND_B,
			[8] = SK_COND_A, [9] = SK_COND_BE,
		};
		in->flow = SK_BRANCH;
		in->cond = conds[cc];
		return true;
	}
	if ((w & 0x7e000000) == 0x34000000) { /* cbz, cbnz: imm19 */
		in->flow = SK_BRANCH;
		in->target = addr + (uint64_t)((int64_t)(int32_t)((w >> 5) << 13) >> 11);
		return true;
	}
	if ((w & 0x7e000000) == 0x36000000) { /* tbz, tbnz: imm14 */
		in->flow = SK_BRANCH;
		in->target = addr + (uint64_t)((int64_t)(int32_t)((w >> 5) << 18) >> 16);
		return true;
	}
	if ((w & 0xfffffc1f) == 0xd65f0000) { /* ret */
		in->flow = SK_RET;
		return true;
	}
	if ((w & 0x1f000000) == 0x10000000) { /* adr, adrp */
		int64_t imm = (int64_t)(int32_t)((((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3)) << 11) >> 11;
		uint64_t v = w >> 31 ? (addr & ~0xfffull) + (uint64_t)(imm * 4096) : addr + (uint64_t)imm;
		if (rd == 31)
			return false;
		mop(b, SK_MOP_SET, (uint8_t)rd, SK_NONE)->imm = (int64_t)v;
		in->keeps_flags = 1;
		if (w >> 31) {
			ad->page_reg = (uint8_t)rd;
			ad->page = v;
			ad->set_page = true;
		}
		return true;
	}
	if ((w & 0x1f800000) == 0x11000000) { /* add/sub (immediate), adds/subs, cmp, cmn */
		bool sub = (w >> 30) & 1, setf = (w >> 29) & 1;
		uint64_t imm = (uint64_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);
		uint8_t a = (uint8_t)(rn == 31 ? A_SP : rn);
		if (setf && rd == 31) {
			if (sub && (sf || rn != 31)) { /* cmp */
				m = mop(b, SK_MOP_CMP, a, SK_NONE);
				m->imm = (int64_t)(sf ? imm : (uint32_t)imm);
				m->width = sf ? 8 : 4;
			} else if (sub) {
				return false;
			}
			return true;
		}
		uint8_t d = (uint8_t)(rd == 31 ? A_SP : rd);
		if (!sf && (rd == 31 || rn == 31) && !setf && imm == 0 && !sub)
			return false; /* mov wsp, w / mov w, wsp: Capstone's mov */
		m = mop(b, SK_MOP_SET, d, a);
		m->imm = sub ? -(int64_t)imm : (int64_t)imm;
		m->flags = sf ? 0 : SK_F_W32;
		in->keeps_flags = !setf;
		return true;
	}
	if ((w & 0x7fe0ffe0) == 0x2a0003e0) { /* mov (register): orr rd, zr, rm */
		unsigned rm = (w >> 16) & 31;
		in->keeps_flags = 1;
		if (rd == 31)
			return true;
		if (rm == 31) {
			mop(b, SK_MOP_SET, (uint8_t)rd, SK_NONE);
		} else if (sf) {
			mop(b, SK_MOP_SET, (uint8_t)rd, (uint8_t)rm);
		} else {
			m = mop(b, SK_MOP_ZEXT, (uint8_t)rd, (uint8_t)rm);
			m->imm = 4;
		}
		return true;
	}
	if ((w & 0x1f800000) == 0x12800000 && ((w >> 29) & 3) != 1) { /* movn, movz, movk */
		unsigned opc = (w >> 29) & 3, hw = (w >> 21) & 3;
		if (!sf && hw > 1)
			return false;
		uint64_t v = (uint64_t)((w >> 5) & 0xffff) << (16 * hw);
		in->keeps_flags = 1;
		if (rd == 31)
			return true;
		if (opc == 3) {
			uint64_t mask = ~(0xffffull << (16 * hw));
			if (!sf)
				mask &= 0xffffffffull;
			mop(b, SK_MOP_AND, (uint8_t)rd, SK_NONE)->imm = (int64_t)mask;
			mop(b, SK_MOP_SET, (uint8_t)rd, (uint8_t)rd)->imm = (int64_t)v;
			return true;
		}
		if (opc == 0)
			v = ~v;
		if (!sf)
			v = (uint32_t)v;
		mop(b, SK_MOP_SET, (uint8_t)rd, SK_NONE)->imm = (int64_t)v;
		return true;
	}
	/* ldr/str (unsigned offset) of x and w registers, ldrb/strb */
	if ((w & 0x3f800000) == 0x39000000 && !((w >> 23) & 1)) {
		unsigned size = 1u << (w >> 30), load = (w >> 22) & 1;
		if (size == 2)
			return false; /* ldrh/strh: left to Capstone */
		struct sk_mem mm = { .disp = (int64_t)(((w >> 10) & 0xfff) * size),
				     .base = (uint8_t)(rn == 31 ? A_SP : rn), .index = SK_NONE,
				     .scale = 1, .size = (uint8_t)size };
		in->keeps_flags = 1;
		if (load) {
			if (rd != 31)
				mop(b, SK_MOP_LOAD, (uint8_t)rd, SK_NONE)->mem = mm;
			if (size == 8 && rd != 31 && rn != 31 && rd < 31 && ad->page_reg == rn &&
			    ad->page_reg != SK_NONE) {
				ad->got_reg = (uint8_t)rd;
				ad->got_slot = ad->page + (uint64_t)mm.disp;
				ad->set_got = true;
			}
		} else {
			mop(b, SK_MOP_STORE, SK_NONE, rd == 31 || size != 8 ? SK_NONE : (uint8_t)rd)->mem = mm;
		}
		return true;
	}
	/* ldp/stp of x registers: post-indexed, signed offset, pre-indexed */
	if ((w & 0xfe000000) == 0xa8000000 && ((w >> 23) & 3)) {
		unsigned mode = (w >> 23) & 3, load = (w >> 22) & 1;
		int64_t imm = ((int64_t)(int32_t)(w << 10) >> 25) * 8;
		uint8_t base = (uint8_t)(rn == 31 ? A_SP : rn);
		bool wb = mode != 2;
		if (load && (rd == rt2 || (wb && (rd == rn || rt2 == rn) && rn != 31)))
			return false; /* unpredictable: Capstone's path */
		if (!load && wb && rn != 31 && (rd == rn || rt2 == rn))
			return false;
		struct sk_mem mm = { .disp = mode == 1 ? 0 : imm, .base = base, .index = SK_NONE,
				     .scale = 1, .size = 8 };
		uint8_t r[2] = { (uint8_t)rd, (uint8_t)rt2 };
		in->keeps_flags = 1;
		if (load) {
			int first = r[0] == base ? 1 : 0;
			for (int q = 0; q < 2; q++) {
				int k = q ? 1 - first : first;
				if (r[k] == 31)
					continue;
				struct sk_mem mk = mm;
				mk.disp += 8 * k;
				mop(b, SK_MOP_LOAD, r[k], SK_NONE)->mem = mk;
			}
		} else {
			for (int k = 0; k < 2; k++) {
				struct sk_mem mk = mm;
				mk.disp += 8 * k;
				m = mop(b, SK_MOP_STORE, SK_NONE, r[k] == 31 ? SK_NONE : r[k]);
				m->mem = mk;
				if (mode == 3 && base == A_SP && imm < 0)
					m->flags = SK_F_PUSH;
			}
		}
		if (wb)
			mop(b, SK_MOP_SET, base, base)->imm = imm;
		return true;
	}
	in->flow = SK_BAD;
	return false;
}

static void a64_decode(void *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		       struct sk_insn *in, struct sk_mop *mops)
{
	struct a64_dec *ad = dec;
	memset(in, 0, sizeof(*in));
	in->addr = addr;
	in->len = 4;
	in->flow = SK_BAD;
	in->ijump_reg = SK_NONE;
	if (addr != ad->next)
		ad->page_reg = ad->got_reg = SK_NONE;
	ad->next = addr + 4;
	struct build b = { in, mops };
	if (len < 4 || (addr & 3)) {
		in->len = (uint8_t)(len < 4 ? len : 4);
		if (!in->len)
			in->len = 1;
		return;
	}
	uint8_t page_reg = ad->page_reg, got_reg = ad->got_reg;
	ad->set_page = ad->set_got = false;
	uint32_t word = (uint32_t)base_rd_le(bytes, 4);
	if (!ad->no_fast && fast(ad, &b, word, addr)) {
		forget(ad, in, mops, page_reg, got_reg);
		return;
	}
	const cs_insn *i = insn_decode(ad->d, bytes, 4, addr);
	if (!i) {
		in->flow = SK_FALL;
		if (!a64_fallback(&b, (uint32_t)base_rd_le(bytes, 4))) {
			in->flow = SK_BAD;
			in->clobber = in->clobber32 = 0;
			in->nmop = 0;
		}
		ad->page_reg = ad->got_reg = SK_NONE;
		return;
	}
	in->flow = SK_FALL;
	a64_decode_insn(ad, &b, i);
	in->keeps_flags = keeps_flags(i->id, &i->detail->arm64);
	forget(ad, in, mops, page_reg, got_reg);
}

static void a64_text(void *dec, const uint8_t *bytes, size_t len, uint64_t addr, char *buf,
		     size_t buflen)
{
	struct a64_dec *ad = dec;
	insn_text(ad->d, bytes, len, addr, buf, buflen);
	static const char *const hints[40] = {
		[7] = "xpaclri", [24] = "paciaz", [25] = "paciasp", [26] = "pacibz",
		[27] = "pacibsp", [28] = "autiaz", [29] = "autiasp", [30] = "autibz",
		[31] = "autibsp", [32] = "bti", [34] = "bti c", [36] = "bti j", [38] = "bti jc",
	};
	unsigned h;
	if (len >= 4 && (base_rd_le(bytes, 4) & 0xfffff01f) == 0xd503201f &&
	    (h = (unsigned)(base_rd_le(bytes, 4) >> 5) & 0x7f) < 40 && hints[h]) {
		snprintf(buf, buflen, "%s", hints[h]); /* Capstone 4 says "hint #n" */
		return;
	}
	if (!strcmp(buf, "(bad)") && len >= 4) {
		struct sk_insn in;
		struct sk_mop m[SK_MAX_MOPS];
		memset(&in, 0, sizeof(in));
		struct build b = { &in, m };
		uint32_t w = (uint32_t)base_rd_le(bytes, 4);
		const char *name = a64_fallback(&b, w);
		snprintf(buf, buflen, "%s (%08x)", name ? name : "(bad)", w);
	}
}

static int a64_open_as(void **dec, bool no_fast)
{
	struct a64_dec *ad = base_calloc(1, sizeof(*ad));
	if (!ad)
		return BK_E_NOMEM;
	int err = insn_open(BK_ARCH_AARCH64, &ad->d);
	if (err) {
		base_free(ad);
		return err;
	}
	ad->page_reg = ad->got_reg = SK_NONE;
	ad->next = 1; /* no address: nothing remembered */
	ad->no_fast = no_fast;
	*dec = ad;
	return 0;
}

static int a64_open(void **dec)
{
	return a64_open_as(dec, false);
}

static int a64_open_reference(void **dec)
{
	return a64_open_as(dec, true);
}

static void a64_close(void *dec)
{
	struct a64_dec *ad = dec;
	if (!ad)
		return;
	insn_close(ad->d);
	base_free(ad);
}

#define BIT(n) (1ull << (n))

static const uint8_t a64_reg_of_dwarf[80] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
	24, 25, 26, 27, 28, 29, 30, 31,
	[32 ... 71] = SK_NONE,
	32, 33, 34, 35, 36, 37, 38, 39,
};
static const uint16_t a64_dwarf_of_reg[40] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23,
	24, 25, 26, 27, 28, 29, 30, 31, 72, 73, 74, 75, 76, 77, 78, 79,
};

/* What the fast path and the Capstone-only reference share. */
#define AARCH64_ARCH_FIELDS \
	.arch = BK_ARCH_AARCH64, \
	.sp = A_SP, \
	.fp = 29, \
	.ra_col = 30, \
	/* x19-x29, v8-v15 (their low 64 bits) */ \
	.callee_saved = (0x7ffull << 19) | (0xffull << A_V8), \
	/* x0-x18 (x18 is a temporary on Linux); x30 is written by the bl \
	 * itself (a new value: the address after it) */ \
	.call_clobbered = 0x7ffffull, \
	.nregs = 40, \
	.reg_of_dwarf_map = a64_reg_of_dwarf, \
	.ndwarf = BK_ARRAY_LEN(a64_reg_of_dwarf), \
	.dwarf_of_reg_map = a64_dwarf_of_reg, \
	.ncmp = 21, \
	.cmp_regs = { 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 72, 73, 74, 75, 76, 77, \
		      78, 79 }, \
	.entry_cfa_off = 0, \
	.ra_slot = 0, \
	.stack_align = 16, \
	.table_sizes = 1 | 2 | 4 | 8, \
	.reloc_jump_slot = 1026, /* R_AARCH64_JUMP_SLOT */ \
	.reloc_glob_dat = 1025,  /* R_AARCH64_GLOB_DAT */ \
	.close = a64_close, \
	.decode = a64_decode, \
	.text = a64_text,

const struct sk_arch chk_stack_aarch64 = {
	AARCH64_ARCH_FIELDS
	.open = a64_open,
};

/* The same with every instruction through Capstone: what the fast path
 * is tested against (tests/unit/test_a64decode.c). */
const struct sk_arch chk_stack_aarch64_reference = {
	AARCH64_ARCH_FIELDS
	.open = a64_open_reference,
};
