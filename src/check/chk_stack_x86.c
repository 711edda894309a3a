/* x86-64 instruction semantics for the stack analysis (chk_stack.h):
 * Capstone's decoding (src/insn) turned into micro-operations.
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

static void x86_decode(void *dec, const uint8_t *bytes, size_t len, uint64_t addr,
		       struct sk_insn *in, struct sk_mop *mops)
{
	memset(in, 0, sizeof(*in));
	in->addr = addr;
	in->len = 1;
	in->flow = SK_BAD;
	in->ijump_reg = SK_NONE;
	const cs_insn *i = insn_decode(dec, bytes, len, addr);
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
	insn_text(dec, bytes, len, addr, buf, buflen);
	if (!strcmp(buf, "(bad)") && len) {
		/* one x86_fallback knows: its bytes */
		size_t used = (size_t)snprintf(buf, buflen, "(vex/evex:");
		for (size_t k = 0; k < len && k < 15 && used + 4 < buflen; k++)
			used += (size_t)snprintf(buf + used, buflen - used, " %02x", bytes[k]);
		snprintf(buf + used, buflen - used, ")");
	}
}

static int x86_open(void **dec)
{
	return insn_open(BK_ARCH_X86_64, (struct insn_dec **)dec);
}

static void x86_close(void *dec)
{
	insn_close(dec);
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

const struct sk_arch chk_stack_x86_64 = {
	.arch = BK_ARCH_X86_64,
	.sp = 7,
	.fp = 6,
	.ra_col = 16,
	.callee_saved = BIT(3) | BIT(6) | BIT(12) | BIT(13) | BIT(14) | BIT(15),
	/* rax, rdx, rcx, rsi, rdi, r8-r11, xmm0-15 */
	.call_clobbered = BIT(0) | BIT(1) | BIT(2) | BIT(4) | BIT(5) | BIT(8) | BIT(9) | BIT(10) |
			  BIT(11) | (0xffffull << 17),
	.nregs = 33,
	.reg_of_dwarf_map = x86_reg_of_dwarf,
	.ndwarf = BK_ARRAY_LEN(x86_reg_of_dwarf),
	.dwarf_of_reg_map = x86_dwarf_of_reg,
	.ncmp = 8,
	.cmp_regs = { 3, 6, 12, 13, 14, 15, 16, 7 },
	.entry_cfa_off = 8,
	.ra_slot = -8,
	.stack_align = 16,
	.table_sizes = 4 | 8,
	.reloc_jump_slot = 7, /* R_X86_64_JUMP_SLOT */
	.reloc_glob_dat = 6,  /* R_X86_64_GLOB_DAT */
	.open = x86_open,
	.close = x86_close,
	.decode = x86_decode,
	.text = x86_text,
};
