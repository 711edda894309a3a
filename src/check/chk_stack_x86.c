/* x86-64 instruction semantics for the stack analysis (chk_stack.h):
 * an instruction's operands (Capstone's description of them: src/insn,
 * or the fast path's below, which fills the same fields for the frequent
 * encodings without Capstone) turned into micro-operations by one
 * function, x86_decode_insn.
 *
 * What is modelled exactly: push and pop of registers, immediates, memory
 * and flags (16-bit forms move rsp by 2), enter, leave, mov/movabs and
 * 64-bit movq/movd between general and xmm registers and memory, lea,
 * add/sub/inc/dec with an immediate, add/sub of a register or memory, and
 * with an immediate (realignment), xchg, cmov, cmp (for the jump-table
 * bound and the end of a probing loop), movsxd (jump-table entries), and
 * the control transfers; 32 bits wide (the upper half zeroed, for the
 * index arithmetic of jump tables): mov, lea of base + displacement,
 * add/sub/and of an immediate, shl, xchg; the sign extensions (movsxd,
 * movsx of a register, cdqe). Every other instruction gives a new value to
 * each register it writes (Capstone's operand access and implicit writes;
 * syscall's rax, rcx, r11 and cmpxchg's rax, which Capstone 4 does not
 * list) and writes unknown bytes to each memory operand it writes. A
 * read-modify-write that cannot change memory (or/add/sub 0, and -1: the
 * `lock or [rsp], 0` fence, stack probes) writes nothing.
 *
 * Sources: Intel SDM vol. 2 (push/pop/leave/enter address computation:
 * "pop [rsp+n]" computes the address after the increment), System V AMD64
 * ABI §3.2 (registers a call preserves; the stack is 16-byte aligned at a
 * call, so the CFA is a multiple of 16), §3.6.2 (DWARF numbers).
 */
#include <stdio.h>

#include "chk_stack.h"

#include "../insn/insn.h"

/* Capstone register -> abstract register (the DWARF number) and width. */
struct regmap {
	uint8_t reg;    /* SK_NONE: not tracked */
	uint8_t width;  /* bytes written; 0: high byte (ah..dh) */
};

static struct regmap map_reg(unsigned r)
{
	switch (r) {
#define G(n, r64, r32, r16, r8)                                                      \
	case X86_REG_##r64: return (struct regmap){ n, 8 };                          \
	case X86_REG_##r32: return (struct regmap){ n, 4 };                          \
	case X86_REG_##r16: return (struct regmap){ n, 2 };                          \
	case X86_REG_##r8: return (struct regmap){ n, 1 };
	G(0, RAX, EAX, AX, AL)
	G(1, RDX, EDX, DX, DL)
	G(2, RCX, ECX, CX, CL)
	G(3, RBX, EBX, BX, BL)
	G(4, RSI, ESI, SI, SIL)
	G(5, RDI, EDI, DI, DIL)
	G(6, RBP, EBP, BP, BPL)
	G(7, RSP, ESP, SP, SPL)
	G(8, R8, R8D, R8W, R8B)
	G(9, R9, R9D, R9W, R9B)
	G(10, R10, R10D, R10W, R10B)
	G(11, R11, R11D, R11W, R11B)
	G(12, R12, R12D, R12W, R12B)
	G(13, R13, R13D, R13W, R13B)
	G(14, R14, R14D, R14W, R14B)
	G(15, R15, R15D, R15W, R15B)
#undef G
	case X86_REG_AH: return (struct regmap){ 0, 0 };
	case X86_REG_DH: return (struct regmap){ 1, 0 };
	case X86_REG_CH: return (struct regmap){ 2, 0 };
	case X86_REG_BH: return (struct regmap){ 3, 0 };
	default: break;
	}
	if (r >= X86_REG_XMM0 && r <= X86_REG_XMM15)
		return (struct regmap){ (uint8_t)(17 + r - X86_REG_XMM0), 16 };
	if (r >= X86_REG_YMM0 && r <= X86_REG_YMM15)
		return (struct regmap){ (uint8_t)(17 + r - X86_REG_YMM0), 32 };
	if (r >= X86_REG_ZMM0 && r <= X86_REG_ZMM15)
		return (struct regmap){ (uint8_t)(17 + r - X86_REG_ZMM0), 64 };
	return (struct regmap){ SK_NONE, 0 };
}

static bool is_gpr(uint8_t reg)
{
	return reg < 16;
}

static bool is_xmm(uint8_t reg)
{
	return reg >= 17 && reg <= 32;
}

/* A memory operand. Segment-relative (fs, gs) and 32-bit addressing name
 * memory the analysis never tracks: base SK_MEM_FAR. */
static struct sk_mem mem_of(const cs_insn *i, const cs_x86_op *o)
{
	const cs_x86 *x = &i->detail->x86;
	struct sk_mem m = { .disp = o->mem.disp, .base = SK_NONE, .index = SK_NONE,
			    .scale = (uint8_t)(o->mem.scale > 0 ? o->mem.scale : 1),
			    .size = (uint8_t)(o->size > 64 ? 64 : o->size) };
	if (o->mem.segment != X86_REG_INVALID || x->addr_size != 8) {
		m.base = SK_MEM_FAR;
		return m;
	}
	if (o->mem.base == X86_REG_RIP) {
		m.disp = (int64_t)(i->address + i->size) + o->mem.disp;
	} else if (o->mem.base != X86_REG_INVALID) {
		struct regmap b = map_reg(o->mem.base);
		if (b.reg == SK_NONE || b.width != 8) {
			m.base = SK_MEM_FAR;
			return m;
		}
		m.base = b.reg;
	}
	if (o->mem.index != X86_REG_INVALID && o->mem.index != X86_REG_RIZ) {
		struct regmap ix = map_reg(o->mem.index);
		if (ix.reg == SK_NONE || ix.width != 8) {
			m.base = SK_MEM_FAR;
			return m;
		}
		m.index = ix.reg;
	}
	return m;
}

/* Builds one instruction's micro-operations. */
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

static struct sk_mem rsp_at(int64_t disp, uint8_t size)
{
	return (struct sk_mem){ .disp = disp, .base = 7, .index = SK_NONE, .scale = 1, .size = size };
}

static void set_rsp(struct build *b, int64_t delta)
{
	mop(b, SK_MOP_SET, 7, 7)->imm = delta;
}

static void clobber(struct build *b, struct regmap r)
{
	if (r.reg == SK_NONE)
		return;
	b->in->clobber |= 1ull << r.reg;
	if (r.width == 4)
		b->in->clobber32 |= 1ull << r.reg;
}

/* The effects of an instruction the table does not model: new values in
 * the registers it writes, unknown bytes in the memory it writes. */
static void generic(struct build *b, const cs_insn *i)
{
	const cs_x86 *x = &i->detail->x86;
	for (unsigned k = 0; k < x->op_count; k++) {
		const cs_x86_op *o = &x->operands[k];
		if (!(o->access & CS_AC_WRITE))
			continue;
		if (o->type == X86_OP_REG) {
			clobber(b, map_reg(o->reg));
		} else if (o->type == X86_OP_MEM && b->in->nmop < SK_MAX_MOPS) {
			struct sk_mop *m = mop(b, SK_MOP_STORE, SK_NONE, SK_NONE);
			m->mem = mem_of(i, o);
		}
	}
	for (unsigned k = 0; k < i->detail->regs_write_count; k++)
		clobber(b, map_reg(i->detail->regs_write[k]));
	if (b->in->clobber & (1ull << 7)) {
		/* rsp written in a way not modelled: unknown, not "new". */
		b->in->clobber &= ~(1ull << 7);
		if (b->in->nmop < SK_MAX_MOPS)
			mop(b, SK_MOP_UNKNOWN, 7, SK_NONE);
	}
}

static enum sk_cond cond_of(unsigned id)
{
	switch (id) {
	case X86_INS_JA: return SK_COND_A;
	case X86_INS_JAE: return SK_COND_AE;
	case X86_INS_JB: return SK_COND_B;
	case X86_INS_JBE: return SK_COND_BE;
	case X86_INS_JE: return SK_COND_E;
	case X86_INS_JNE: return SK_COND_NE;
	default: return SK_COND_OTHER;
	}
}

/* A read-modify-write with immediate IMM that leaves memory as it was. */
static bool rmw_identity(unsigned id, int64_t imm)
{
	switch (id) {
	case X86_INS_OR:
	case X86_INS_ADD:
	case X86_INS_SUB:
	case X86_INS_XOR: return imm == 0;
	case X86_INS_AND: return imm == -1;
	default: return false;
	}
}

static void x86_decode_insn(struct build *b, const cs_insn *i)
{
	struct sk_insn *in = b->in;
	const cs_x86 *x = &i->detail->x86;
	const cs_x86_op *o0 = x->op_count > 0 ? &x->operands[0] : NULL;
	const cs_x86_op *o1 = x->op_count > 1 ? &x->operands[1] : NULL;
	struct regmap r0 = o0 && o0->type == X86_OP_REG ? map_reg(o0->reg)
							 : (struct regmap){ SK_NONE, 0 };
	struct regmap r1 = o1 && o1->type == X86_OP_REG ? map_reg(o1->reg)
							 : (struct regmap){ SK_NONE, 0 };
	bool reg0 = r0.reg != SK_NONE, reg1 = r1.reg != SK_NONE;
	bool imm1 = o1 && o1->type == X86_OP_IMM, mem0 = o0 && o0->type == X86_OP_MEM;
	bool mem1 = o1 && o1->type == X86_OP_MEM;
	struct sk_mop *m;

	switch (i->id) {
	case X86_INS_NOP:
	case X86_INS_INT3:
		in->fill = 1;
		if (i->id == X86_INS_INT3)
			in->flow = SK_STOP;
		return;
	case X86_INS_PUSH: {
		unsigned size = o0 ? o0->size : 8;
		if (size != 2)
			size = 8;
		if (reg0 && r0.width == 8) {
			m = mop(b, SK_MOP_STORE, SK_NONE, r0.reg);
		} else if (mem0 && size == 8) {
			mop(b, SK_MOP_LOAD, SK_TMP, SK_NONE)->mem = mem_of(i, o0);
			m = mop(b, SK_MOP_STORE, SK_NONE, SK_TMP);
		} else {
			m = mop(b, SK_MOP_STORE, SK_NONE, SK_NONE);
		}
		m->mem = rsp_at(-(int64_t)size, (uint8_t)size);
		m->flags |= SK_F_PUSH;
		set_rsp(b, -(int64_t)size);
		return;
	}
	case X86_INS_POP: {
		unsigned size = o0 && o0->size == 2 ? 2 : 8;
		if (reg0 && r0.reg == 7 && r0.width == 8) {
			mop(b, SK_MOP_LOAD, 7, SK_NONE)->mem = rsp_at(0, 8);
			return;
		}
		if (reg0 && r0.width == 8) {
			mop(b, SK_MOP_LOAD, r0.reg, SK_NONE)->mem = rsp_at(0, 8);
			set_rsp(b, 8);
		} else if (mem0 && size == 8) {
			mop(b, SK_MOP_LOAD, SK_TMP, SK_NONE)->mem = rsp_at(0, 8);
			set_rsp(b, 8);
			mop(b, SK_MOP_STORE, SK_NONE, SK_TMP)->mem = mem_of(i, o0);
		} else {
			if (reg0)
				clobber(b, r0);
			else if (mem0)
				mop(b, SK_MOP_STORE, SK_NONE, SK_NONE)->mem = mem_of(i, o0);
			set_rsp(b, (int64_t)size);
		}
		return;
	}
	case X86_INS_PUSHF:
	case X86_INS_PUSHFQ: {
		int64_t size = i->id == X86_INS_PUSHF ? 2 : 8;
		m = mop(b, SK_MOP_STORE, SK_NONE, SK_NONE);
		m->mem = rsp_at(-size, (uint8_t)size);
		m->flags = SK_F_PUSH;
		set_rsp(b, -size);
		return;
	}
	case X86_INS_POPF:
	case X86_INS_POPFQ:
		set_rsp(b, i->id == X86_INS_POPF ? 2 : 8);
		return;
	case X86_INS_LEAVE:
		mop(b, SK_MOP_SET, 7, 6);
		mop(b, SK_MOP_LOAD, 6, SK_NONE)->mem = rsp_at(0, 8);
		set_rsp(b, 8);
		return;
	case X86_INS_ENTER:
		/* enter N, 0 = push rbp; mov rbp, rsp; sub rsp, N. Nesting
		 * levels copy frame pointers: not followed. */
		if (x->op_count == 2 && o0->type == X86_OP_IMM && o1->type == X86_OP_IMM &&
		    o1->imm == 0) {
			m = mop(b, SK_MOP_STORE, SK_NONE, 6);
			m->mem = rsp_at(-8, 8);
			m->flags = SK_F_PUSH;
			mop(b, SK_MOP_SET, 6, 7)->imm = -8;
			set_rsp(b, -8 - (int64_t)(uint16_t)o0->imm);
		} else {
			mop(b, SK_MOP_UNKNOWN, 7, SK_NONE);
			clobber(b, (struct regmap){ 6, 8 });
		}
		return;
	case X86_INS_MOV:
	case X86_INS_MOVABS:
		if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width == r1.width &&
		    r0.width == 8) {
			mop(b, SK_MOP_SET, r0.reg, r1.reg);
		} else if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width == 4 &&
			   r1.width == 4) {
			mop(b, SK_MOP_ZEXT, r0.reg, r1.reg)->imm = 4;
		} else if (reg0 && imm1 && is_gpr(r0.reg) && r0.width >= 4) {
			m = mop(b, SK_MOP_SET, r0.reg, SK_NONE);
			m->imm = r0.width == 4 ? (int64_t)(uint32_t)o1->imm : o1->imm;
			m->flags = r0.width == 4 ? SK_F_W32 : 0;
		} else if (reg0 && mem1 && is_gpr(r0.reg) && r0.width >= 4) {
			m = mop(b, SK_MOP_LOAD, r0.reg, SK_NONE);
			m->mem = mem_of(i, o1);
			m->flags = r0.width == 4 ? SK_F_W32 : 0;
		} else if (mem0 && reg1 && is_gpr(r1.reg)) {
			mop(b, SK_MOP_STORE, SK_NONE, r1.width == 8 ? r1.reg : SK_NONE)->mem =
				mem_of(i, o0);
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_MOVQ:
	case X86_INS_VMOVQ:
		if (reg0 && reg1 && (is_gpr(r0.reg) || is_xmm(r0.reg)) &&
		    (is_gpr(r1.reg) || is_xmm(r1.reg)) && (r0.width == 8 || is_xmm(r0.reg)) &&
		    (r1.width == 8 || is_xmm(r1.reg))) {
			/* the low 64 bits; an xmm destination's upper bits are zeroed */
			mop(b, SK_MOP_SET, r0.reg, r1.reg);
		} else if (reg0 && mem1 && (r0.width == 8 || is_xmm(r0.reg))) {
			m = mop(b, SK_MOP_LOAD, r0.reg, SK_NONE);
			m->mem = mem_of(i, o1);
			m->mem.size = 8;
		} else if (mem0 && reg1 && (r1.width == 8 || is_xmm(r1.reg))) {
			m = mop(b, SK_MOP_STORE, SK_NONE, r1.reg);
			m->mem = mem_of(i, o0);
			m->mem.size = 8;
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_LEA:
		if (reg0 && mem1 && is_gpr(r0.reg) && r0.width == 8) {
			mop(b, SK_MOP_ADDR, r0.reg, SK_NONE)->mem = mem_of(i, o1);
		} else if (reg0 && mem1 && is_gpr(r0.reg) && r0.width == 4) {
			/* lea eax, [r9 - 0x20]: the low half of base + disp (an
			 * index, or an address that is no register's, is not
			 * followed) */
			struct sk_mem mm = mem_of(i, o1);
			if (mm.base != SK_MEM_FAR && mm.index == SK_NONE) {
				m = mop(b, SK_MOP_SET, r0.reg, mm.base);
				m->imm = mm.disp;
				m->flags = SK_F_W32;
			} else {
				generic(b, i);
			}
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_ADD:
	case X86_INS_SUB:
		if (reg0 && r0.width == 8 && is_gpr(r0.reg)) {
			bool sub = i->id == X86_INS_SUB;
			if (imm1) {
				mop(b, SK_MOP_SET, r0.reg, r0.reg)->imm = sub ? -o1->imm : o1->imm;
			} else if (reg1 && is_gpr(r1.reg) && r1.width == 8) {
				mop(b, sub ? SK_MOP_SUB : SK_MOP_ADD, r0.reg, r1.reg);
			} else if (mem1) {
				mop(b, SK_MOP_LOAD, SK_TMP, SK_NONE)->mem = mem_of(i, o1);
				mop(b, sub ? SK_MOP_SUB : SK_MOP_ADD, r0.reg, SK_TMP);
			} else {
				generic(b, i);
			}
			return;
		}
		if (reg0 && r0.width == 4 && is_gpr(r0.reg) && imm1) {
			/* 32 bits wide: the sum's low half, zero-extended */
			m = mop(b, SK_MOP_SET, r0.reg, r0.reg);
			m->imm = i->id == X86_INS_SUB ? -o1->imm : o1->imm;
			m->flags = SK_F_W32;
			return;
		}
		if (mem0 && imm1 && rmw_identity(i->id, o1->imm))
			return;
		generic(b, i);
		return;
	case X86_INS_INC:
	case X86_INS_DEC:
		if (reg0 && r0.width == 8 && is_gpr(r0.reg))
			mop(b, SK_MOP_SET, r0.reg, r0.reg)->imm = i->id == X86_INS_INC ? 1 : -1;
		else
			generic(b, i);
		return;
	case X86_INS_AND:
		if (reg0 && imm1 && r0.width == 8 && is_gpr(r0.reg)) {
			mop(b, SK_MOP_AND, r0.reg, SK_NONE)->imm = o1->imm;
			return;
		}
		if (reg0 && imm1 && r0.width == 4 && is_gpr(r0.reg)) {
			m = mop(b, SK_MOP_AND, r0.reg, SK_NONE);
			m->imm = (int64_t)((uint64_t)o1->imm & 0xffffffffull);
			m->flags = SK_F_W32;
			return;
		}
		if (mem0 && imm1 && rmw_identity(i->id, o1->imm))
			return;
		generic(b, i);
		return;
	case X86_INS_OR:
	case X86_INS_XOR:
		if (mem0 && imm1 && rmw_identity(i->id, o1->imm))
			return;
		generic(b, i);
		return;
	case X86_INS_XCHG:
		if (reg0 && reg1 && r0.reg == r1.reg && r0.width == r1.width && r0.width != 4)
			return; /* xchg ax, ax and the like: nops */
		if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width == 8 &&
		    r1.width == 8) {
			mop(b, SK_MOP_XCHG, r0.reg, r1.reg);
		} else if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width == 4 &&
			   r1.width == 4) {
			/* both written 32 bits wide: swapped, then zero-extended */
			mop(b, SK_MOP_XCHG, r0.reg, r1.reg);
			mop(b, SK_MOP_ZEXT, r0.reg, r0.reg)->imm = 4;
			mop(b, SK_MOP_ZEXT, r1.reg, r1.reg)->imm = 4;
		} else if (reg0 != reg1 && (mem0 || mem1)) {
			struct regmap r = reg0 ? r0 : r1;
			const cs_x86_op *mo = mem0 ? o0 : o1;
			if (r.width == 8 && is_gpr(r.reg)) {
				mop(b, SK_MOP_LOAD, SK_TMP, SK_NONE)->mem = mem_of(i, mo);
				mop(b, SK_MOP_STORE, SK_NONE, r.reg)->mem = mem_of(i, mo);
				mop(b, SK_MOP_SET, r.reg, SK_TMP);
			} else {
				generic(b, i);
			}
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_CMP:
		if (reg0 && is_gpr(r0.reg) && r0.width > 0) {
			if (imm1) {
				m = mop(b, SK_MOP_CMP, r0.reg, SK_NONE);
				/* the immediate as the unsigned number of that width */
				m->imm = r0.width == 8 ? o1->imm
					: (int64_t)((uint64_t)o1->imm & ((1ull << (8 * r0.width)) - 1));
				m->width = r0.width;
			} else if (reg1 && r1.width == r0.width && is_gpr(r1.reg)) {
				/* flags from the low WIDTH bytes of both */
				mop(b, SK_MOP_CMP, r0.reg, r1.reg)->width = r0.width;
			}
		} else if (mem0 && imm1 && o0->size >= 1 && o0->size <= 8) {
			m = mop(b, SK_MOP_CMP, SK_NONE, SK_NONE);
			m->mem = mem_of(i, o0);
			m->imm = o0->size == 8 ? o1->imm
				: (int64_t)((uint64_t)o1->imm & ((1ull << (8 * o0->size)) - 1));
			m->width = o0->size;
		}
		return;
	case X86_INS_MOVZX:
		if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width >= 4 &&
		    (r1.width == 1 || r1.width == 2)) {
			mop(b, SK_MOP_ZEXT, r0.reg, r1.reg)->imm = r1.width;
		} else if (reg0 && mem1 && is_gpr(r0.reg) && r0.width >= 4 &&
			   (o1->size == 1 || o1->size == 2)) {
			m = mop(b, SK_MOP_LOAD, r0.reg, SK_NONE);
			m->mem = mem_of(i, o1);
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_MOVSXD:
		if (reg0 && mem1 && r0.width == 8 && o1->size == 4) {
			m = mop(b, SK_MOP_LOAD, r0.reg, SK_NONE);
			m->mem = mem_of(i, o1);
			m->flags = SK_F_SIGNED;
		} else if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width == 8 &&
			   r1.width == 4) {
			m = mop(b, SK_MOP_ZEXT, r0.reg, r1.reg);
			m->imm = 4;
			m->flags = SK_F_SIGNED;
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_MOVSX:
		if (reg0 && reg1 && is_gpr(r0.reg) && is_gpr(r1.reg) && r0.width == 8 &&
		    (r1.width == 1 || r1.width == 2)) {
			m = mop(b, SK_MOP_ZEXT, r0.reg, r1.reg);
			m->imm = r1.width;
			m->flags = SK_F_SIGNED;
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_CDQE:
		m = mop(b, SK_MOP_ZEXT, 0, 0); /* rax = eax, sign-extended */
		m->imm = 4;
		m->flags = SK_F_SIGNED;
		return;
	case X86_INS_SHL:
		if (reg0 && imm1 && is_gpr(r0.reg) && (r0.width == 8 || r0.width == 4)) {
			m = mop(b, SK_MOP_SHL, r0.reg, SK_NONE);
			m->imm = o1->imm & (r0.width == 8 ? 63 : 31);
			m->flags = r0.width == 4 ? SK_F_W32 : 0;
		} else {
			generic(b, i);
		}
		return;
	case X86_INS_CALL:
	case X86_INS_LCALL:
		in->flow = SK_CALL;
		if (i->id == X86_INS_CALL && o0 && o0->type == X86_OP_IMM) {
			in->target = (uint64_t)o0->imm;
			in->call_next = in->target == i->address + i->size;
		} else if (mem0) {
			struct sk_mem mm = mem_of(i, o0);
			if (mm.base == SK_NONE && mm.index == SK_NONE) {
				in->target = (uint64_t)mm.disp; /* the GOT slot read */
				in->via_mem = 1;
			}
		}
		return;
	case X86_INS_RET:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
		in->flow = SK_RET;
		return;
	case X86_INS_JMP:
		if (o0 && o0->type == X86_OP_IMM) {
			in->flow = SK_JUMP;
			in->target = (uint64_t)o0->imm;
		} else if (reg0 && r0.width == 8 && is_gpr(r0.reg)) {
			in->flow = SK_IJUMP;
			in->ijump_reg = r0.reg;
		} else if (mem0) {
			struct sk_mem mm = mem_of(i, o0);
			in->flow = SK_IJUMP;
			in->ijump_reg = SK_TMP;
			if (mm.base == SK_NONE && mm.index == SK_NONE) {
				in->target = (uint64_t)mm.disp;
				in->via_mem = 1;
			}
			m = mop(b, SK_MOP_LOAD, SK_TMP, SK_NONE);
			m->mem = mm;
			m->mem.size = 8;
		} else {
			in->flow = SK_IJUMP;
			in->ijump_reg = SK_NONE;
		}
		return;
	case X86_INS_LJMP:
		in->flow = SK_IJUMP;
		in->ijump_reg = SK_NONE;
		return;
	case X86_INS_JAE: case X86_INS_JA: case X86_INS_JBE: case X86_INS_JB:
	case X86_INS_JCXZ: case X86_INS_JECXZ: case X86_INS_JRCXZ: case X86_INS_JE:
	case X86_INS_JGE: case X86_INS_JG: case X86_INS_JLE: case X86_INS_JL:
	case X86_INS_JNE: case X86_INS_JNO: case X86_INS_JNP: case X86_INS_JNS:
	case X86_INS_JO: case X86_INS_JP: case X86_INS_JS: case X86_INS_LOOP:
	case X86_INS_LOOPE: case X86_INS_LOOPNE: case X86_INS_XBEGIN:
		if (!o0 || o0->type != X86_OP_IMM) {
			in->flow = SK_BAD;
			return;
		}
		in->flow = SK_BRANCH;
		in->target = (uint64_t)o0->imm;
		in->cond = (uint8_t)cond_of(i->id);
		generic(b, i); /* loop decrements rcx */
		return;
	case X86_INS_HLT:
	case X86_INS_UD2:
	case X86_INS_UD2B:
	case X86_INS_UD0:
		in->flow = SK_STOP;
		return;
	case X86_INS_SYSCALL:
		clobber(b, (struct regmap){ 0, 8 });
		clobber(b, (struct regmap){ 2, 8 });
		clobber(b, (struct regmap){ 11, 8 });
		return;
	case X86_INS_CMPXCHG:
		clobber(b, (struct regmap){ 0, 8 });
		if (mem0)
			mop(b, SK_MOP_STORE, SK_NONE, SK_NONE)->mem = mem_of(i, o0);
		else if (reg0)
			clobber(b, r0);
		return;
	default:
		break;
	}
	if (i->id >= X86_INS_CMOVA && i->id <= X86_INS_CMOVS && reg0 && r0.width == 8 &&
	    is_gpr(r0.reg)) {
		if (reg1 && r1.width == 8 && is_gpr(r1.reg)) {
			mop(b, SK_MOP_CMOV, r0.reg, r1.reg);
		} else if (mem1) {
			mop(b, SK_MOP_LOAD, SK_TMP, SK_NONE)->mem = mem_of(i, o1);
			mop(b, SK_MOP_CMOV, r0.reg, SK_TMP);
		} else {
			generic(b, i);
		}
		return;
	}
	generic(b, i);
}

/* The length of a ModRM operand (ModRM, SIB, displacement) at P, N bytes
 * readable; 0 when cut short. */
static size_t modrm_len(const uint8_t *p, size_t n)
{
	if (!n)
		return 0;
	unsigned mod = p[0] >> 6, rm = p[0] & 7;
	size_t len = 1;
	if (mod != 3 && rm == 4) {
		if (n < 2)
			return 0;
		if (mod == 0 && (p[1] & 7) == 5)
			len += 4;
		len++;
	} else if (mod == 0 && rm == 5) {
		len += 4;
	}
	len += mod == 1 ? 1 : mod == 2 ? 4 : 0;
	return len <= n ? len : 0;
}

/* VEX (C4, C5) and EVEX (62) encoded instructions Capstone 4 does not
 * know (AVX-512BW compares into mask registers, kmov, kortest), and
 * rdpkru/wrpkru: their length from the encoding (Intel SDM vol. 2, 2.3
 * and 2.7), and the general registers they write: kmov r, k (0F 93),
 * vmovd/vmovq r/m, xmm (66 0F 7E), vpmovmskb / vmovmskp (0F D7, 0F 50),
 * vcvt*2si (0F 2C/2D), vpextrw (0F C5), vpextr* (0F3A 14-17), the BMI
 * forms (0F38 F2-F7, 0F3A F0). The rest write vector or mask registers
 * only, which the analysis does not track. False when not one of them. */
static bool x86_fallback(struct build *b, const uint8_t *p, size_t n)
{
	struct sk_insn *in = b->in;
	size_t i = 0;
	while (i < n && i < 4 && (p[i] == 0x67 || p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 ||
				  p[i] == 0x36 || p[i] == 0x64 || p[i] == 0x65))
		i++;
	if (i + 3 <= n && p[i] == 0x0f && p[i + 1] == 0x01 && (p[i + 2] == 0xee || p[i + 2] == 0xef)) {
		if (p[i + 2] == 0xee) { /* rdpkru: edx:eax */
			clobber(b, (struct regmap){ 0, 4 });
			clobber(b, (struct regmap){ 1, 4 });
		}
		in->len = (uint8_t)(i + 3);
		in->flow = SK_FALL;
		return true;
	}
	unsigned map, R, B, vvvv, pp;
	if (i + 2 <= n && p[i] == 0xc5) {
		R = !(p[i + 1] >> 7);
		B = 0;
		vvvv = (~p[i + 1] >> 3) & 15;
		pp = p[i + 1] & 3;
		map = 1;
		i += 2;
	} else if (i + 3 <= n && p[i] == 0xc4) {
		R = !(p[i + 1] >> 7);
		B = !((p[i + 1] >> 5) & 1);
		map = p[i + 1] & 31;
		vvvv = (~p[i + 2] >> 3) & 15;
		pp = p[i + 2] & 3;
		i += 3;
	} else if (i + 4 <= n && p[i] == 0x62) {
		R = !(p[i + 1] >> 7);
		B = !((p[i + 1] >> 5) & 1);
		map = p[i + 1] & 7;
		vvvv = (~p[i + 2] >> 3) & 15;
		pp = p[i + 2] & 3;
		i += 4;
	} else {
		return false;
	}
	if (map < 1 || map > 3 || i + 1 >= n)
		return false;
	uint8_t op = p[i++];
	uint8_t modrm = p[i];
	size_t ml = modrm_len(p + i, n - i);
	if (!ml)
		return false;
	i += ml;
	bool imm = map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 ||
					     (op >= 0xc4 && op <= 0xc6)));
	i += imm;
	if (i > n || i > 15)
		return false;
	/* encoding order (rax rcx rdx rbx rsp rbp rsi rdi) -> DWARF numbers */
	static const uint8_t dwarf_of[8] = { 0, 2, 1, 3, 7, 6, 4, 5 };
	unsigned reg = ((modrm >> 3) & 7) | (R << 3), rm = (modrm & 7) | (B << 3);
	bool direct = (modrm >> 6) == 3;
	struct regmap dst_reg = { reg < 8 ? dwarf_of[reg] : (uint8_t)reg, 8 },
		      dst_rm = { rm < 8 ? dwarf_of[rm] : (uint8_t)rm, 8 },
		      dst_v = { vvvv < 8 ? dwarf_of[vvvv] : (uint8_t)vvvv, 8 };
	if (map == 1 && (op == 0x93 || op == 0xd7 || op == 0x50 || op == 0x2c || op == 0x2d ||
			 op == 0xc5))
		clobber(b, dst_reg);
	else if (map == 1 && op == 0x7e && pp == 1 && direct)
		clobber(b, dst_rm);
	else if (map == 3 && op >= 0x14 && op <= 0x17 && direct)
		clobber(b, dst_rm);
	else if ((map == 2 && op >= 0xf2 && op <= 0xf7) || (map == 3 && op == 0xf0)) {
		clobber(b, dst_reg);
		clobber(b, dst_v);
	}
	if (in->clobber & (1ull << 7)) {
		in->clobber &= ~(1ull << 7);
		mop(b, SK_MOP_UNKNOWN, 7, SK_NONE);
	}
	in->len = (uint8_t)i;
	in->flow = SK_FALL;
	return true;
}

/* ---- The fast path ----------------------------------------------------
 *
 * Capstone 4 formats every instruction's text while it decodes (its x86
 * printer fills the operand details), about half of the analysis's time.
 * The most frequent encodings are decoded here instead, into the same
 * operand description Capstone gives (the fields x86_decode_insn reads:
 * the instruction id, its length, each operand's type, register,
 * immediate, memory operand, size and access, the registers it writes
 * implicitly), so that one function gives both paths their
 * micro-operations. Anything else (other prefixes, vector and x87
 * instructions, string instructions, the forms listed as left out below)
 * is Capstone's. tests/unit/test_x86decode.c holds this to Capstone's
 * reading, field by field, over every instruction of whole libraries.
 *
 * Encodings from Intel SDM vol. 2 (2.1 instruction format, 2.2.1 REX,
 * tables 2-2/2-3 ModRM and SIB in 64-bit mode, appendix A opcode maps).
 * Where Capstone's reading is a convention rather than the encoding, the
 * convention is followed (and named): the scale a SIB byte gives with no
 * index; immediates (imm_value).
 */

#define FAST_MAX_LEN 15 /* SDM 2.3.11: longer is #UD */

/* A decoder: Capstone's handle, whether the fast path is off (the
 * reference the fast path is tested against), and how many instructions
 * each path decoded (the fast path's share, for the test's report). */
struct x86_dec {
	struct insn_dec *d;
	bool no_fast;
	uint64_t all, fast;
};

static uint64_t low_bytes(unsigned n)
{
	return n >= 8 ? UINT64_MAX : (1ull << (8 * n)) - 1;
}

/* Capstone's register names by encoding number (REX extension included). */
static const uint16_t gpr64[16] = {
	X86_REG_RAX, X86_REG_RCX, X86_REG_RDX, X86_REG_RBX, X86_REG_RSP, X86_REG_RBP,
	X86_REG_RSI, X86_REG_RDI, X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11,
	X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15,
};
static const uint16_t gpr32[16] = {
	X86_REG_EAX, X86_REG_ECX, X86_REG_EDX, X86_REG_EBX, X86_REG_ESP, X86_REG_EBP,
	X86_REG_ESI, X86_REG_EDI, X86_REG_R8D, X86_REG_R9D, X86_REG_R10D, X86_REG_R11D,
	X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D,
};
static const uint16_t gpr16[16] = {
	X86_REG_AX, X86_REG_CX, X86_REG_DX, X86_REG_BX, X86_REG_SP, X86_REG_BP,
	X86_REG_SI, X86_REG_DI, X86_REG_R8W, X86_REG_R9W, X86_REG_R10W, X86_REG_R11W,
	X86_REG_R12W, X86_REG_R13W, X86_REG_R14W, X86_REG_R15W,
};
/* Byte registers: with any REX prefix 4..7 are spl..dil (SDM 3.7.2.1),
 * without one ah..bh. */
static const uint16_t gpr8rex[16] = {
	X86_REG_AL, X86_REG_CL, X86_REG_DL, X86_REG_BL, X86_REG_SPL, X86_REG_BPL,
	X86_REG_SIL, X86_REG_DIL, X86_REG_R8B, X86_REG_R9B, X86_REG_R10B, X86_REG_R11B,
	X86_REG_R12B, X86_REG_R13B, X86_REG_R14B, X86_REG_R15B,
};
static const uint16_t gpr8[8] = {
	X86_REG_AL, X86_REG_CL, X86_REG_DL, X86_REG_BL, X86_REG_AH, X86_REG_CH, X86_REG_DH,
	X86_REG_BH,
};

/* The ALU operations of opcodes 00-3F and group 1 (80, 81, 83), by the
 * operation field. */
static const uint16_t alu_ids[8] = {
	X86_INS_ADD, X86_INS_OR, X86_INS_ADC, X86_INS_SBB, X86_INS_AND, X86_INS_SUB, X86_INS_XOR,
	X86_INS_CMP,
};
/* Conditions 0..15 (SDM appendix B.1.4.7: o, no, b, ae, e, ne, be, a, s,
 * ns, p, np, l, ge, le, g). */
static const uint16_t jcc_ids[16] = {
	X86_INS_JO, X86_INS_JNO, X86_INS_JB, X86_INS_JAE, X86_INS_JE, X86_INS_JNE, X86_INS_JBE,
	X86_INS_JA, X86_INS_JS, X86_INS_JNS, X86_INS_JP, X86_INS_JNP, X86_INS_JL, X86_INS_JGE,
	X86_INS_JLE, X86_INS_JG,
};
static const uint16_t cmov_ids[16] = {
	X86_INS_CMOVO, X86_INS_CMOVNO, X86_INS_CMOVB, X86_INS_CMOVAE, X86_INS_CMOVE,
	X86_INS_CMOVNE, X86_INS_CMOVBE, X86_INS_CMOVA, X86_INS_CMOVS, X86_INS_CMOVNS,
	X86_INS_CMOVP, X86_INS_CMOVNP, X86_INS_CMOVL, X86_INS_CMOVGE, X86_INS_CMOVLE,
	X86_INS_CMOVG,
};
static const uint16_t setcc_ids[16] = {
	X86_INS_SETO, X86_INS_SETNO, X86_INS_SETB, X86_INS_SETAE, X86_INS_SETE, X86_INS_SETNE,
	X86_INS_SETBE, X86_INS_SETA, X86_INS_SETS, X86_INS_SETNS, X86_INS_SETP, X86_INS_SETNP,
	X86_INS_SETL, X86_INS_SETGE, X86_INS_SETLE, X86_INS_SETG,
};

/* SSE2 forms (0F xx under a mandatory prefix: none, 66 or F3) whose
 * operands are an xmm register and an xmm register or 16 bytes of memory:
 * loads and operations (the register written: V, W) and stores (W, V).
 * ACC: the first operand's access; for a store to memory Capstone 4's
 * (movdqa, movups and movupd read it: no store is seen). */
enum { PFX_NONE, PFX_66, PFX_F3 };

struct sse_form {
	uint8_t op, pfx, store;
	uint8_t acc, mem_acc;   /* the first operand's: register, memory */
	uint16_t id;
};

#define AC_R CS_AC_READ
#define AC_W CS_AC_WRITE
#define AC_RW (CS_AC_READ | CS_AC_WRITE)

static const struct sse_form sse_forms[] = {
	{ 0x6f, PFX_66, 0, AC_W, 0, X86_INS_MOVDQA },
	{ 0x6f, PFX_F3, 0, AC_W, 0, X86_INS_MOVDQU },
	{ 0x28, PFX_NONE, 0, AC_W, 0, X86_INS_MOVAPS },
	{ 0x28, PFX_66, 0, AC_W, 0, X86_INS_MOVAPD },
	{ 0x10, PFX_NONE, 0, AC_W, 0, X86_INS_MOVUPS },
	{ 0x10, PFX_66, 0, AC_W, 0, X86_INS_MOVUPD },
	{ 0x7f, PFX_66, 1, AC_W, AC_R, X86_INS_MOVDQA },
	{ 0x7f, PFX_F3, 1, AC_W, AC_W, X86_INS_MOVDQU },
	{ 0x29, PFX_NONE, 1, AC_W, AC_W, X86_INS_MOVAPS },
	{ 0x29, PFX_66, 1, AC_W, AC_W, X86_INS_MOVAPD },
	{ 0x11, PFX_NONE, 1, AC_W, AC_R, X86_INS_MOVUPS },
	{ 0x11, PFX_66, 1, AC_W, AC_R, X86_INS_MOVUPD },
	{ 0xef, PFX_66, 0, AC_RW, 0, X86_INS_PXOR },
	{ 0x74, PFX_66, 0, AC_RW, 0, X86_INS_PCMPEQB },
	{ 0x75, PFX_66, 0, AC_RW, 0, X86_INS_PCMPEQW },
	{ 0x76, PFX_66, 0, AC_RW, 0, X86_INS_PCMPEQD },
	{ 0x64, PFX_66, 0, AC_RW, 0, X86_INS_PCMPGTB },
	{ 0xfc, PFX_66, 0, AC_RW, 0, X86_INS_PADDB },
	{ 0xf8, PFX_66, 0, AC_RW, 0, X86_INS_PSUBB },
	{ 0xdb, PFX_66, 0, AC_RW, 0, X86_INS_PAND },
	{ 0xdf, PFX_66, 0, AC_RW, 0, X86_INS_PANDN },
	{ 0xeb, PFX_66, 0, AC_RW, 0, X86_INS_POR },
	{ 0xda, PFX_66, 0, AC_RW, 0, X86_INS_PMINUB },
	{ 0x6c, PFX_66, 0, AC_RW, 0, X86_INS_PUNPCKLQDQ },
};

/* One instruction being read: a bounded reader over at most FAST_MAX_LEN
 * bytes, and its prefixes. */
struct fast {
	const uint8_t *p;
	size_t n, i;
	uint8_t rex;          /* 0: none */
	uint8_t opsize;       /* 2, 4 or 8 (v-sized operands) */
	uint16_t seg;         /* fs/gs override, or X86_REG_INVALID */
	bool has_mem;         /* a memory operand was read */
	cs_x86 *x;
};

static bool rd_u8(struct fast *f, uint8_t *v)
{
	if (f->i >= f->n)
		return false;
	*v = f->p[f->i++];
	return true;
}

/* A little-endian immediate or displacement of LEN bytes (1, 2, 4, 8),
 * zero-extended. */
static bool rd_le(struct fast *f, unsigned len, uint64_t *v)
{
	if (f->n - f->i < len)
		return false;
	*v = base_rd_le(f->p + f->i, len);
	f->i += len;
	return true;
}

static int64_t sext(uint64_t v, unsigned bytes)
{
	unsigned sh = 64 - 8 * bytes;
	return (int64_t)(v << sh) >> sh;
}

static uint16_t gpr(const struct fast *f, unsigned num, unsigned size)
{
	switch (size) {
	case 8: return gpr64[num];
	case 4: return gpr32[num];
	case 2: return gpr16[num];
	default: return f->rex ? gpr8rex[num] : gpr8[num & 7];
	}
}

static cs_x86_op *op_next(struct fast *f)
{
	cs_x86_op *o = &f->x->operands[f->x->op_count++];
	o->avx_bcast = X86_AVX_BCAST_INVALID;
	o->avx_zero_opmask = false;
	return o;
}

static void op_reg(struct fast *f, uint16_t reg, unsigned size, uint8_t access)
{
	cs_x86_op *o = op_next(f);
	o->type = X86_OP_REG;
	o->reg = reg;
	o->size = (uint8_t)size;
	o->access = access;
}

static void op_imm(struct fast *f, int64_t imm, unsigned size)
{
	cs_x86_op *o = op_next(f);
	o->type = X86_OP_IMM;
	o->imm = imm;
	o->size = (uint8_t)size;
	o->access = 0;
}

/* The ModRM byte's r/m operand of SIZE bytes: a register (mod 3) or
 * memory (SDM tables 2-2, 2-3 as extended by REX.B and REX.X: rm 100
 * takes a SIB byte; mod 00 with rm 101 is rip + disp32; a SIB base 101
 * under mod 00 is no base + disp32; index 100 is none). Capstone reports
 * the SIB's scale even without an index. */
static bool op_rm(struct fast *f, uint8_t modrm, unsigned size, uint8_t access)
{
	unsigned mod = modrm >> 6, rm = modrm & 7;
	unsigned rex_b = (f->rex & 1) << 3, rex_x = (f->rex & 2) << 2;
	if (mod == 3) {
		op_reg(f, gpr(f, rm | rex_b, size), size, access);
		return true;
	}
	cs_x86_op *o = op_next(f);
	o->type = X86_OP_MEM;
	o->size = (uint8_t)size;
	o->access = access;
	o->mem.segment = f->seg;
	o->mem.base = X86_REG_INVALID;
	o->mem.index = X86_REG_INVALID;
	o->mem.scale = 1;
	o->mem.disp = 0;
	f->has_mem = true;
	uint64_t disp = 0;
	if (rm == 4) {
		uint8_t sib;
		if (!rd_u8(f, &sib))
			return false;
		unsigned index = ((sib >> 3) & 7) | rex_x, base = sib & 7;
		o->mem.scale = 1 << (sib >> 6);
		if (index != 4)
			o->mem.index = gpr64[index];
		if (base == 5 && mod == 0) {
			if (!rd_le(f, 4, &disp))
				return false;
			o->mem.disp = sext(disp, 4);
			return true;
		}
		o->mem.base = gpr64[base | rex_b];
	} else if (mod == 0 && rm == 5) {
		o->mem.base = X86_REG_RIP;
		if (!rd_le(f, 4, &disp))
			return false;
		o->mem.disp = sext(disp, 4);
		return true;
	} else {
		o->mem.base = gpr64[rm | rex_b];
	}
	if (mod == 1) {
		if (!rd_le(f, 1, &disp))
			return false;
		o->mem.disp = sext(disp, 1);
	} else if (mod == 2) {
		if (!rd_le(f, 4, &disp))
			return false;
		o->mem.disp = sext(disp, 4);
	}
	return true;
}

/* The ModRM byte's reg operand. */
static void op_gr(struct fast *f, uint8_t modrm, unsigned size, uint8_t access)
{
	op_reg(f, gpr(f, ((modrm >> 3) & 7) | ((f->rex & 4) << 1), size), size, access);
}

/* The ModRM byte's r/m operand as an xmm register or 16 bytes of memory,
 * and its reg operand as an xmm register. */
static bool op_xrm(struct fast *f, uint8_t modrm, uint8_t access)
{
	if ((modrm >> 6) == 3) {
		unsigned n = (modrm & 7) | ((f->rex & 1) << 3);
		op_reg(f, (uint16_t)(X86_REG_XMM0 + n), 16, access);
		return true;
	}
	return op_rm(f, modrm, 16, access);
}

static void op_xr(struct fast *f, uint8_t modrm, uint8_t access)
{
	unsigned n = ((modrm >> 3) & 7) | ((f->rex & 4) << 1);
	op_reg(f, (uint16_t)(X86_REG_XMM0 + n), 16, access);
}

/* An immediate of IMM_LEN bytes for an operation of OPSIZE bytes, as
 * Capstone 4 reports it: an imm8 sign-extended to a wider operand (83,
 * 6B) as a signed 64-bit number, masked to the operand's width for the
 * logical operations (and, or, xor); an imm32 of a 64-bit operation
 * sign-extended; any other the number its bytes hold, unsigned. */
static bool op_iv(struct fast *f, unsigned imm_len, unsigned opsize, bool logic)
{
	uint64_t raw;
	if (!rd_le(f, imm_len, &raw))
		return false;
	int64_t v = (int64_t)raw;
	if (imm_len < opsize) {
		v = sext(raw, imm_len);
		if (logic && opsize < 8)
			v = (int64_t)((uint64_t)v & low_bytes(opsize));
	}
	op_imm(f, v, opsize);
	return true;
}

/* A relative branch's target (its length known once the displacement
 * is read): the next instruction's address plus the displacement. */
static bool op_rel(struct fast *f, unsigned len, uint64_t addr)
{
	uint64_t raw;
	if (!rd_le(f, len, &raw))
		return false;
	op_imm(f, (int64_t)(addr + f->i + (uint64_t)sext(raw, len)), 8);
	return true;
}
/* The forms read here (v: 16, 32 or 64 bits by 66 / REX.W; b: 8 bits):
 *   00-3D  add, or, adc, sbb, and, sub, xor, cmp: Eb,Gb  Ev,Gv  Gb,Eb
 *          Gv,Ev  AL,Ib  eAX,Iz
 *   50-5F  push, pop r64            63     movsxd Gq,Ed (REX.W)
 *   69 6B  imul Gv,Ev,Iz/Ib         70-7F  jcc rel8
 *   80 81 83  group 1 Eb,Ib Ev,Iz Ev,Ib 84 85  test Eb,Gb Ev,Gv
 *   86 87  xchg Eb,Gb Ev,Gv         88-8B  mov
 *   8D     lea Gv,M (32, 64)        90     nop (not REX.B: xchg)
 *   98 99  cdqe, cdq, cqo           A8 A9  test AL,Ib eAX,Iz
 *   B0-BF  mov r,imm (movabs)       C1 D1 D3  shl, shr, sar Ev
 *   C3 C9 CC  ret, leave, int3      C6 C7  mov Eb,Ib Ev,Iz (/0)
 *   E8 E9 EB  call, jmp rel         F4     hlt
 *   F6 F7  test /0, not /2, neg /3  FE FF  inc, dec; FF call /2, jmp /4,
 *          push /6 (64-bit operand)
 *   0F 05  syscall                  0F 0B  ud2
 *   0F 1F /0  nop Ev                0F 40-4F  cmovcc Gv,Ev
 *   0F 80-8F  jcc rel32             0F 90-9F  setcc Eb
 *   0F AF  imul Gv,Ev               0F B6 B7 BE BF  movzx, movsx Gv,Eb/Ew
 *   F3 0F 1E FA  endbr64
 * Prefixes: one REX right before the opcode; 66 (16-bit operands; any
 * number, and 2E, before a nop); 64/65 (fs, gs) with a memory operand;
 * F2 (bnd) before a branch. Left to Capstone: lock, rep, 67 (32-bit
 * addresses), 3E (notrack: Capstone names ds in the operand), 16-bit
 * branches, and anything not listed. False when not one of these, or cut
 * short (Capstone then reads the bytes). */
static bool fast_decode(const uint8_t *p, size_t len, uint64_t addr, cs_insn *ci, cs_detail *det)
{
	cs_x86 *x = &det->x86;
	struct fast f = { .p = p, .n = len < FAST_MAX_LEN ? len : FAST_MAX_LEN, .opsize = 4,
			  .seg = X86_REG_INVALID, .x = x };
	unsigned n66 = 0;
	bool cs = false, bnd = false, rep = false;
	x->op_count = 0;
	x->addr_size = 8;
	det->regs_write_count = 0;
	ci->address = addr;
	if (f.n >= 4 && p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa) {
		ci->id = X86_INS_ENDBR64;
		ci->size = 4;
		return true;
	}
	uint8_t b;
	for (;;) {
		if (!rd_u8(&f, &b))
			return false;
		if (b == 0x66)
			n66++;
		else if (b == 0x2e && !cs)
			cs = true;
		else if ((b == 0x64 || b == 0x65) && f.seg == X86_REG_INVALID)
			f.seg = b == 0x64 ? X86_REG_FS : X86_REG_GS;
		else if (b == 0xf2 && !bnd)
			bnd = true;
		else if (b == 0xf3 && !rep)
			rep = true;
		else
			break;
	}
	if (b >= 0x40 && b <= 0x4f) {
		f.rex = b;
		if (!rd_u8(&f, &b))
			return false;
	}
	if (f.rex & 8)
		f.opsize = 8;
	else if (n66)
		f.opsize = 2;
	/* Which prefixes the opcode allows: plain (at most one 66), a
	 * branch (F2 only), a nop (66s and 2E). */
	enum { PLAIN, BRANCH, NOP, SSE } kind = PLAIN;
	uint8_t modrm = 0, op2 = 0;
	unsigned osz = f.opsize;
	uint16_t id = X86_INS_INVALID;
	if (b == 0x0f) {
		if (!rd_u8(&f, &op2))
			return false;
		if (op2 == 0x1f) {
			/* (Capstone 4 does not decode the register form) */
			if (!rd_u8(&f, &modrm) || ((modrm >> 3) & 7) || (modrm >> 6) == 3 ||
			    !op_rm(&f, modrm, osz, AC_R))
				return false;
			id = X86_INS_NOP;
			kind = NOP;
		} else if (op2 == 0x05 || op2 == 0x0b) {
			id = op2 == 0x05 ? X86_INS_SYSCALL : X86_INS_UD2;
		} else if (op2 >= 0x80 && op2 <= 0x8f) {
			if (!op_rel(&f, 4, addr))
				return false;
			id = jcc_ids[op2 & 15];
			kind = BRANCH;
		} else if (op2 >= 0x40 && op2 <= 0x4f) {
			if (!rd_u8(&f, &modrm))
				return false;
			op_gr(&f, modrm, osz, AC_RW);
			if (!op_rm(&f, modrm, osz, AC_R))
				return false;
			id = cmov_ids[op2 & 15];
		} else if (op2 >= 0x90 && op2 <= 0x9f) {
			/* Capstone 4: a memory destination is read, not
			 * written (so no store is seen), but sete's and
			 * setne's */
			if (!rd_u8(&f, &modrm) ||
			    !op_rm(&f, modrm, 1, (modrm >> 6) == 3 || op2 == 0x94 || op2 == 0x95 ? AC_W : AC_R))
				return false;
			id = setcc_ids[op2 & 15];
		} else if (op2 == 0xd7) {
			/* pmovmskb r32, xmm (66; REX.W changes nothing) */
			if (!rd_u8(&f, &modrm) || (modrm >> 6) != 3 || n66 != 1 || rep)
				return false;
			op_reg(&f, gpr32[((modrm >> 3) & 7) | ((f.rex & 4) << 1)], 4, AC_W);
			op_xrm(&f, modrm, AC_R);
			id = X86_INS_PMOVMSKB;
			kind = SSE;
		} else if (op2 == 0xaf) {
			if (!rd_u8(&f, &modrm))
				return false;
			op_gr(&f, modrm, osz, AC_RW);
			if (!op_rm(&f, modrm, osz, AC_R))
				return false;
			id = X86_INS_IMUL;
		} else if (op2 == 0xb6 || op2 == 0xb7 || op2 == 0xbe || op2 == 0xbf) {
			if (!rd_u8(&f, &modrm))
				return false;
			op_gr(&f, modrm, osz, AC_W);
			if (!op_rm(&f, modrm, op2 & 1 ? 2 : 1, AC_R))
				return false;
			id = op2 < 0xb8 ? X86_INS_MOVZX : X86_INS_MOVSX;
		} else {
			/* the SSE2 forms: the prefix chooses the form */
			unsigned pfx = rep ? PFX_F3 : n66 ? PFX_66 : PFX_NONE;
			const struct sse_form *sf = NULL;
			for (size_t k = 0; k < BK_ARRAY_LEN(sse_forms) && !sf; k++)
				if (sse_forms[k].op == op2 && sse_forms[k].pfx == pfx)
					sf = &sse_forms[k];
			if (!sf || n66 > 1 || (rep && n66) || !rd_u8(&f, &modrm))
				return false;
			if (sf->store) {
				if (!op_xrm(&f, modrm, (modrm >> 6) == 3 ? sf->acc : sf->mem_acc))
					return false;
				op_xr(&f, modrm, AC_R);
			} else {
				op_xr(&f, modrm, sf->acc);
				if (!op_xrm(&f, modrm, AC_R))
					return false;
			}
			id = sf->id;
			kind = SSE;
		}
	} else if (b < 0x40 && (b & 7) < 6) {
		unsigned alu = b >> 3, form = b & 7, sz = form & 1 ? osz : 1;
		uint8_t acc = alu == 7 ? AC_R : AC_RW;
		id = alu_ids[alu];
		if (form < 4) {
			if (!rd_u8(&f, &modrm))
				return false;
			if (form < 2) {
				if (!op_rm(&f, modrm, sz, acc))
					return false;
				op_gr(&f, modrm, sz, AC_R);
			} else {
				op_gr(&f, modrm, sz, acc);
				if (!op_rm(&f, modrm, sz, AC_R))
					return false;
			}
		} else {
			op_reg(&f, gpr(&f, 0, sz), sz, acc);
			if (!op_iv(&f, sz == 8 ? 4 : sz, sz, alu == 1 || alu == 4 || alu == 6))
				return false;
		}
	} else if (b >= 0x50 && b <= 0x5f) {
		if (n66)
			return false;
		op_reg(&f, gpr64[(b & 7) | ((f.rex & 1) << 3)], 8, b < 0x58 ? AC_R : AC_W);
		id = b < 0x58 ? X86_INS_PUSH : X86_INS_POP;
	} else if (b >= 0x70 && b <= 0x7f) {
		if (!op_rel(&f, 1, addr))
			return false;
		id = jcc_ids[b & 15];
		kind = BRANCH;
	} else if (b >= 0xb0 && b <= 0xbf) {
		unsigned sz = b < 0xb8 ? 1 : osz;
		op_reg(&f, gpr(&f, (b & 7) | ((f.rex & 1) << 3), sz), sz, AC_W);
		if (!op_iv(&f, sz, sz, false))
			return false;
		id = sz == 8 ? X86_INS_MOVABS : X86_INS_MOV;
	} else {
		switch (b) {
		case 0x63:
			if (!(f.rex & 8) || !rd_u8(&f, &modrm))
				return false;
			op_gr(&f, modrm, 8, AC_W);
			if (!op_rm(&f, modrm, 4, AC_R))
				return false;
			id = X86_INS_MOVSXD;
			break;
		case 0x69:
		case 0x6b:
			if (!rd_u8(&f, &modrm))
				return false;
			op_gr(&f, modrm, osz, AC_W);
			if (!op_rm(&f, modrm, osz, AC_R) ||
			    !op_iv(&f, b == 0x6b ? 1 : osz == 8 ? 4 : osz, osz, false))
				return false;
			id = X86_INS_IMUL;
			break;
		case 0x80:
		case 0x81:
		case 0x83: {
			unsigned sz = b == 0x80 ? 1 : osz, alu;
			if (!rd_u8(&f, &modrm))
				return false;
			alu = (modrm >> 3) & 7;
			if (!op_rm(&f, modrm, sz, alu == 7 ? AC_R : AC_RW) ||
			    !op_iv(&f, b == 0x81 ? (sz == 8 ? 4 : sz) : 1, sz,
				   alu == 1 || alu == 4 || alu == 6))
				return false;
			id = alu_ids[alu];
			break;
		}
		case 0x84:
		case 0x85:
		case 0x86:
		case 0x87:
		case 0x88:
		case 0x89: {
			unsigned sz = b & 1 ? osz : 1;
			bool xchg = b == 0x86 || b == 0x87;
			if (!rd_u8(&f, &modrm) ||
			    !op_rm(&f, modrm, sz, b < 0x86 ? AC_R : xchg ? AC_RW : AC_W))
				return false;
			op_gr(&f, modrm, sz, xchg ? AC_RW : AC_R);
			id = b < 0x86 ? X86_INS_TEST : xchg ? X86_INS_XCHG : X86_INS_MOV;
			break;
		}
		case 0x8a:
		case 0x8b: {
			unsigned sz = b & 1 ? osz : 1;
			if (!rd_u8(&f, &modrm))
				return false;
			op_gr(&f, modrm, sz, AC_W);
			if (!op_rm(&f, modrm, sz, AC_R))
				return false;
			id = X86_INS_MOV;
			break;
		}
		case 0x8d:
			if (n66 || !rd_u8(&f, &modrm) || (modrm >> 6) == 3 || f.seg != X86_REG_INVALID)
				return false;
			op_gr(&f, modrm, osz, AC_W);
			if (!op_rm(&f, modrm, osz, AC_R))
				return false;
			id = X86_INS_LEA;
			break;
		case 0x90:
			if (f.rex & 1)
				return false; /* xchg eax, r8d */
			id = X86_INS_NOP;
			kind = NOP;
			break;
		case 0x98:
			if (!(f.rex & 8))
				return false; /* cwde, cbw */
			id = X86_INS_CDQE;
			break;
		case 0x99:
			if (n66)
				return false;
			id = f.rex & 8 ? X86_INS_CQO : X86_INS_CDQ;
			det->regs_write[0] = f.rex & 8 ? X86_REG_RAX : X86_REG_EAX;
			det->regs_write[1] = f.rex & 8 ? X86_REG_RDX : X86_REG_EDX;
			det->regs_write_count = 2;
			break;
		case 0xa8:
		case 0xa9: {
			/* Capstone 4: test AL/eAX, imm writes its register
			 * (a new value, as the Capstone path has it) */
			unsigned sz = b & 1 ? osz : 1;
			op_reg(&f, gpr(&f, 0, sz), sz, AC_RW);
			if (!op_iv(&f, sz == 8 ? 4 : sz, sz, true))
				return false;
			id = X86_INS_TEST;
			break;
		}
		case 0xc1:
		case 0xd1:
		case 0xd3: {
			if (!rd_u8(&f, &modrm))
				return false;
			unsigned op = (modrm >> 3) & 7;
			if (op != 4 && op != 5 && op != 7)
				return false;
			if (!op_rm(&f, modrm, osz, AC_RW))
				return false;
			if (b == 0xc1 && !op_iv(&f, 1, 1, false))
				return false;
			if (b == 0xd1)
				op_imm(&f, 1, osz);
			if (b == 0xd3)
				op_reg(&f, X86_REG_CL, 1, AC_R);
			id = op == 4 ? X86_INS_SHL : op == 5 ? X86_INS_SHR : X86_INS_SAR;
			break;
		}
		case 0xc3:
			id = X86_INS_RET;
			kind = BRANCH;
			break;
		case 0xc9:
			if (n66)
				return false;
			id = X86_INS_LEAVE;
			break;
		case 0xcc:
			id = X86_INS_INT3;
			break;
		case 0xf4:
			id = X86_INS_HLT;
			break;
		case 0xc6:
		case 0xc7: {
			unsigned sz = b & 1 ? osz : 1;
			if (!rd_u8(&f, &modrm) || ((modrm >> 3) & 7) || !op_rm(&f, modrm, sz, AC_W) ||
			    !op_iv(&f, sz == 8 ? 4 : sz, sz, false))
				return false;
			id = X86_INS_MOV;
			break;
		}
		case 0xe8:
		case 0xe9:
		case 0xeb:
			if (!op_rel(&f, b == 0xeb ? 1 : 4, addr))
				return false;
			id = b == 0xe8 ? X86_INS_CALL : X86_INS_JMP;
			kind = BRANCH;
			break;
		case 0xf6:
		case 0xf7: {
			unsigned sz = b & 1 ? osz : 1;
			if (!rd_u8(&f, &modrm))
				return false;
			unsigned op = (modrm >> 3) & 7;
			if (op == 0) {
				/* Capstone 4: a memory operand is written (so
				 * the Capstone path stores unknown bytes there) */
				if (!op_rm(&f, modrm, sz, (modrm >> 6) == 3 ? AC_R : AC_RW) ||
				    !op_iv(&f, sz == 8 ? 4 : sz, sz, true))
					return false;
				id = X86_INS_TEST;
			} else if (op == 2 || op == 3) {
				if (!op_rm(&f, modrm, sz, AC_RW))
					return false;
				id = op == 2 ? X86_INS_NOT : X86_INS_NEG;
			} else {
				return false;
			}
			break;
		}
		case 0xfe:
		case 0xff: {
			if (!rd_u8(&f, &modrm))
				return false;
			unsigned op = (modrm >> 3) & 7;
			if (op < 2) {
				if (!op_rm(&f, modrm, b == 0xfe ? 1 : osz, AC_RW))
					return false;
				id = op ? X86_INS_DEC : X86_INS_INC;
			} else if (b == 0xff && (op == 2 || op == 4 || op == 6)) {
				/* 64-bit operands whatever REX.W says; 66 is
				 * left to Capstone */
				if (n66 || !op_rm(&f, modrm, 8, AC_R))
					return false;
				id = op == 2 ? X86_INS_CALL : op == 4 ? X86_INS_JMP : X86_INS_PUSH;
				kind = op == 6 ? PLAIN : BRANCH;
			} else {
				return false;
			}
			break;
		}
		default:
			return false;
		}
	}
	/* The prefixes the form allows. */
	if (kind == BRANCH && (n66 || f.seg != X86_REG_INVALID || cs))
		return false;
	if (rep && kind != SSE)
		return false;
	/* (Capstone 4 takes 66 as an SSE form's prefix only right before
	 * the opcode or its REX: no other prefix is read with one) */
	if (kind == SSE && (cs || f.seg != X86_REG_INVALID))
		return false;
	if (kind != BRANCH && bnd)
		return false;
	if (kind == PLAIN && (n66 > 1 || cs))
		return false;
	if (f.seg != X86_REG_INVALID && (!f.has_mem || kind == NOP))
		return false;
	ci->id = id;
	ci->size = (uint16_t)f.i;
	return true;
}

static void x86_decode(void *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		       struct sk_insn *in, struct sk_mop *mops)
{
	struct x86_dec *xd = dec;
	memset(in, 0, sizeof(*in));
	in->addr = addr;
	in->len = 1;
	in->flow = SK_BAD;
	in->ijump_reg = SK_NONE;
	cs_insn fi;
	cs_detail fd;
	const cs_insn *i;
	xd->all++;
	if (!xd->no_fast && fast_decode(bytes, len, addr, &fi, &fd)) {
		fi.detail = &fd;
		i = &fi;
		xd->fast++;
	} else {
		i = insn_decode(xd->d, bytes, len, addr);
	}
	if (!i) {
		struct build b = { in, mops };
		if (!x86_fallback(&b, bytes, len)) {
			in->len = 1;
			in->flow = SK_BAD;
			in->clobber = in->clobber32 = 0;
			in->nmop = 0;
		}
		return;
	}
	in->len = (uint8_t)i->size;
	in->flow = SK_FALL;
	struct build b = { in, mops };
	x86_decode_insn(&b, i);
	switch (i->id) {
	case X86_INS_MOV: case X86_INS_MOVABS: case X86_INS_MOVZX: case X86_INS_MOVSX:
	case X86_INS_MOVSXD: case X86_INS_LEA: case X86_INS_NOP: case X86_INS_ENDBR64:
	case X86_INS_PUSH: case X86_INS_POP: case X86_INS_MOVQ: case X86_INS_MOVD:
	case X86_INS_NOT: case X86_INS_BSWAP: case X86_INS_XCHG: case X86_INS_CDQE:
		in->keeps_flags = 1; /* Intel SDM: "Flags affected: none" */
		break;
	default:
		break;
	}
}

static void x86_text(void *dec, const uint8_t *bytes, size_t len, uint64_t addr, char *buf,
		     size_t buflen)
{
	struct x86_dec *xd = dec;
	insn_text(xd->d, bytes, len, addr, buf, buflen);
	if (!strcmp(buf, "(bad)") && len) {
		/* one x86_fallback knows: its bytes */
		size_t used = (size_t)snprintf(buf, buflen, "(vex/evex:");
		for (size_t k = 0; k < len && k < 15 && used + 4 < buflen; k++)
			used += (size_t)snprintf(buf + used, buflen - used, " %02x", bytes[k]);
		snprintf(buf + used, buflen - used, ")");
	}
}

static int x86_open_as(void **dec, bool no_fast)
{
	struct x86_dec *xd = base_calloc(1, sizeof(*xd));
	if (!xd)
		return BK_E_NOMEM;
	int err = insn_open(BK_ARCH_X86_64, &xd->d);
	if (err) {
		base_free(xd);
		return err;
	}
	xd->no_fast = no_fast;
	*dec = xd;
	return 0;
}

static int x86_open(void **dec)
{
	return x86_open_as(dec, false);
}

static int x86_open_reference(void **dec)
{
	return x86_open_as(dec, true);
}

static void x86_close(void *dec)
{
	struct x86_dec *xd = dec;
	if (!xd)
		return;
	insn_close(xd->d);
	base_free(xd);
}

void chk_stack_x86_counts(void *dec, uint64_t *all, uint64_t *fast)
{
	const struct x86_dec *xd = dec;
	*all = xd->all;
	*fast = xd->fast;
}

#define BIT(n) (1ull << (n))

/* rax..r15, the return-address column (no register), xmm0..xmm15. */
static const uint8_t x86_reg_of_dwarf[33] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, SK_NONE,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};
static const uint16_t x86_dwarf_of_reg[33] = {
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xffff,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};

/* What the fast path and the Capstone-only reference share. */
#define X86_64_ARCH_FIELDS \
	.arch = BK_ARCH_X86_64, \
	.sp = 7, \
	.fp = 6, \
	.ra_col = 16, \
	.callee_saved = BIT(3) | BIT(6) | BIT(12) | BIT(13) | BIT(14) | BIT(15), \
	/* rax, rdx, rcx, rsi, rdi, r8-r11, xmm0-15 */ \
	.call_clobbered = BIT(0) | BIT(1) | BIT(2) | BIT(4) | BIT(5) | BIT(8) | BIT(9) | BIT(10) | \
			  BIT(11) | (0xffffull << 17), \
	.nregs = 33, \
	.reg_of_dwarf_map = x86_reg_of_dwarf, \
	.ndwarf = BK_ARRAY_LEN(x86_reg_of_dwarf), \
	.dwarf_of_reg_map = x86_dwarf_of_reg, \
	.ncmp = 8, \
	.cmp_regs = { 3, 6, 12, 13, 14, 15, 16, 7 }, \
	.entry_cfa_off = 8, \
	.ra_slot = -8, \
	.stack_align = 16, \
	.table_sizes = 4 | 8, \
	.reloc_jump_slot = 7, /* R_X86_64_JUMP_SLOT */ \
	.reloc_glob_dat = 6,  /* R_X86_64_GLOB_DAT */ \
	.close = x86_close, \
	.decode = x86_decode, \
	.text = x86_text,

const struct sk_arch chk_stack_x86_64 = {
	X86_64_ARCH_FIELDS
	.open = x86_open,
};

/* The same with every instruction through Capstone: what the fast path
 * is tested against (tests/unit/test_x86decode.c). */
const struct sk_arch chk_stack_x86_64_reference = {
	X86_64_ARCH_FIELDS
	.open = x86_open_reference,
};
