/* Instructions the in-process driver makes itself (inproc_preload.c,
 * "Stepping by emulation"): a step that needs no trap. A trap and its
 * signal cost about as much as the checker's walk of the step, so the
 * commonest instructions of compiled code are made here, on the context
 * of the thread's last trap, and their stop reported at once.
 *
 * What is made here, x86-64, 64-bit addressing, no LOCK or REP prefix, no
 * segment override, general registers only (the 8-, 16-, 32- and 64-bit
 * ones, ah..bh included): mov, movabs, movzx, movsx, movsxd, lea, push and
 * pop of 64 bits, leave, nop, endbr64; add, or, and, sub, xor, cmp, test,
 * inc, dec, neg, not, and the shifts and rotates by an immediate or cl;
 * cmovcc, setcc. Everything else (and any of these whose memory access
 * would fault) is the program's to run under a trap.
 *
 * Exactly as the CPU would: the arithmetic and logic are done by the CPU
 * itself, on the operands' values in the operation's own width, with the
 * program's flags loaded (popf) and taken back (pushf), so every flag,
 * the ones Intel and AMD leave undefined too, is the CPU's own; a
 * register written in 32 bits clears its upper half, in 8 or 16 bits
 * keeps it (cmov of 32 bits clears it even when it does not move); each
 * memory access is one load or store of the operand's width (an aligned
 * store stays atomic for the other threads), through the fault-recovering
 * accessors of the driver; a read-modify-write is no more atomic than the
 * CPU's without LOCK. Nothing is written before everything that can fault
 * has been read. A store into the driver's own part of the thread's stack
 * (the kernel's signal frame the thread is to return through, and our
 * frames below it: a chain of emulated pushes reaches it after 128 bytes)
 * is left to the program too: it runs under a trap whose frame is further
 * down.
 *
 * Trusts the decoder's operand sizes (Capstone 4); tests/unit/
 * test_inproc_emu.c holds every form to the CPU's result.
 */
#include <string.h>

#include "inproc.h"

enum { OPND_NONE = 0, OPND_REG, OPND_IMM, OPND_MEM };
enum {
	ALU_ADD, ALU_OR, ALU_AND, ALU_SUB, ALU_XOR, ALU_CMP, ALU_TEST, ALU_SHL, ALU_SHR, ALU_SAR,
	ALU_ROL, ALU_ROR, ALU_INC, ALU_DEC, ALU_NEG, ALU_NOT,
};
#define EMU_NO_REG 0xff
#define EMU_RIP 0xfe

/* Capstone's register: its general register (ucontext index), width in
 * bytes and bit offset (8 for ah..bh); false for anything else. */
static bool greg_of(unsigned reg, uint8_t *greg, uint8_t *size, uint8_t *shift)
{
	static const struct { uint16_t r8, r8h, r16, r32, r64; uint8_t greg; } t[] = {
		{ X86_REG_AL, X86_REG_AH, X86_REG_AX, X86_REG_EAX, X86_REG_RAX, REG_RAX },
		{ X86_REG_CL, X86_REG_CH, X86_REG_CX, X86_REG_ECX, X86_REG_RCX, REG_RCX },
		{ X86_REG_DL, X86_REG_DH, X86_REG_DX, X86_REG_EDX, X86_REG_RDX, REG_RDX },
		{ X86_REG_BL, X86_REG_BH, X86_REG_BX, X86_REG_EBX, X86_REG_RBX, REG_RBX },
		{ X86_REG_SPL, 0, X86_REG_SP, X86_REG_ESP, X86_REG_RSP, REG_RSP },
		{ X86_REG_BPL, 0, X86_REG_BP, X86_REG_EBP, X86_REG_RBP, REG_RBP },
		{ X86_REG_SIL, 0, X86_REG_SI, X86_REG_ESI, X86_REG_RSI, REG_RSI },
		{ X86_REG_DIL, 0, X86_REG_DI, X86_REG_EDI, X86_REG_RDI, REG_RDI },
		{ X86_REG_R8B, 0, X86_REG_R8W, X86_REG_R8D, X86_REG_R8, REG_R8 },
		{ X86_REG_R9B, 0, X86_REG_R9W, X86_REG_R9D, X86_REG_R9, REG_R9 },
		{ X86_REG_R10B, 0, X86_REG_R10W, X86_REG_R10D, X86_REG_R10, REG_R10 },
		{ X86_REG_R11B, 0, X86_REG_R11W, X86_REG_R11D, X86_REG_R11, REG_R11 },
		{ X86_REG_R12B, 0, X86_REG_R12W, X86_REG_R12D, X86_REG_R12, REG_R12 },
		{ X86_REG_R13B, 0, X86_REG_R13W, X86_REG_R13D, X86_REG_R13, REG_R13 },
		{ X86_REG_R14B, 0, X86_REG_R14W, X86_REG_R14D, X86_REG_R14, REG_R14 },
		{ X86_REG_R15B, 0, X86_REG_R15W, X86_REG_R15D, X86_REG_R15, REG_R15 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++) {
		*greg = t[i].greg;
		*shift = 0;
		if (reg == t[i].r64)
			*size = 8;
		else if (reg == t[i].r32)
			*size = 4;
		else if (reg == t[i].r16)
			*size = 2;
		else if (reg == t[i].r8)
			*size = 1;
		else if (t[i].r8h && reg == t[i].r8h) {
			*size = 1;
			*shift = 8;
		} else
			continue;
		return true;
	}
	return false;
}

static bool operand(const cs_x86_op *op, struct ip_emu_opnd *o)
{
	uint8_t size;
	switch (op->type) {
	case X86_OP_REG:
		o->kind = OPND_REG;
		return greg_of(op->reg, &o->reg, &size, &o->shift) && size == op->size;
	case X86_OP_IMM:
		o->kind = OPND_IMM;
		o->v = op->imm;
		return true;
	case X86_OP_MEM: {
		uint8_t shift;
		o->kind = OPND_MEM;
		if (op->mem.segment != X86_REG_INVALID)
			return false;
		o->base = EMU_NO_REG;
		o->index = EMU_NO_REG;
		if (op->mem.base == X86_REG_RIP)
			o->base = EMU_RIP;
		else if (op->mem.base != X86_REG_INVALID &&
			 (!greg_of(op->mem.base, &o->base, &size, &shift) || size != 8))
			return false;
		if (op->mem.index != X86_REG_INVALID &&
		    (!greg_of(op->mem.index, &o->index, &size, &shift) || size != 8))
			return false;
		o->scale = (uint8_t)op->mem.scale;
		o->v = op->mem.disp;
		return true;
	}
	default:
		return false;
	}
}

/* The condition's nibble of cmovcc (0f 40+cc) and setcc (0f 90+cc). */
static uint8_t cc_of(const cs_x86 *x)
{
	return x->opcode[0] == 0x0f ? x->opcode[1] & 15 : 0xff;
}

bool ip_emu_decode(const cs_insn *i, struct ip_emu *e)
{
	memset(e, 0, sizeof(*e));
	const cs_x86 *x = &i->detail->x86;
	/* endbr64 is f3 0f 1e fa (Capstone 4: a nop with a REP prefix); a
	 * nop's operands are not read. */
	if (i->id == X86_INS_ENDBR64 || (i->id == X86_INS_NOP && !(x->prefix[0] == X86_PREFIX_LOCK))) {
		e->kind = EMU_NOP;
		return true;
	}
	if (x->prefix[0] || x->addr_size != 8)
		return false; /* LOCK, REP; 32-bit addressing */
	/* Capstone 4 gives the 64-bit operand size to 16-bit push, pop and
	 * leave (66 prefix) and to movsxd without REX.W (which writes 32
	 * bits): the CPU's sizes are not what it says, so they are stepped. */
	bool opsize16 = x->prefix[2] == 0x66;
	if (opsize16 && (i->id == X86_INS_LEAVE || i->id == X86_INS_PUSH || i->id == X86_INS_POP))
		return false;
	if (i->id == X86_INS_MOVSXD && !(x->rex & 8))
		return false;
	unsigned n = x->op_count;
	const cs_x86_op *op = x->operands;
	uint8_t kind = EMU_NONE, alu = 0;
	switch (i->id) {
	case X86_INS_LEAVE:
		e->kind = EMU_LEAVE;
		return n == 0;
	case X86_INS_MOV:
	case X86_INS_MOVABS: kind = EMU_MOV; break;
	case X86_INS_MOVZX: kind = EMU_MOVZX; break;
	case X86_INS_MOVSX:
	case X86_INS_MOVSXD: kind = EMU_MOVSX; break;
	case X86_INS_LEA: kind = EMU_LEA; break;
	case X86_INS_PUSH: kind = EMU_PUSH; break;
	case X86_INS_POP: kind = EMU_POP; break;
	case X86_INS_ADD: kind = EMU_ALU; alu = ALU_ADD; break;
	case X86_INS_OR: kind = EMU_ALU; alu = ALU_OR; break;
	case X86_INS_AND: kind = EMU_ALU; alu = ALU_AND; break;
	case X86_INS_SUB: kind = EMU_ALU; alu = ALU_SUB; break;
	case X86_INS_XOR: kind = EMU_ALU; alu = ALU_XOR; break;
	case X86_INS_CMP: kind = EMU_ALU; alu = ALU_CMP; break;
	case X86_INS_TEST: kind = EMU_ALU; alu = ALU_TEST; break;
	case X86_INS_SHL: kind = EMU_ALU; alu = ALU_SHL; break;
	case X86_INS_SHR: kind = EMU_ALU; alu = ALU_SHR; break;
	case X86_INS_SAR: kind = EMU_ALU; alu = ALU_SAR; break;
	case X86_INS_ROL: kind = EMU_ALU; alu = ALU_ROL; break;
	case X86_INS_ROR: kind = EMU_ALU; alu = ALU_ROR; break;
	case X86_INS_INC: kind = EMU_ALU1; alu = ALU_INC; break;
	case X86_INS_DEC: kind = EMU_ALU1; alu = ALU_DEC; break;
	case X86_INS_NEG: kind = EMU_ALU1; alu = ALU_NEG; break;
	case X86_INS_NOT: kind = EMU_ALU1; alu = ALU_NOT; break;
	default:
		/* By their opcode: Capstone's ids mix in the x87 fcmovs. */
		if (x->opcode[0] == 0x0f && (x->opcode[1] & 0xf0) == 0x40)
			kind = EMU_CMOV;
		else if (x->opcode[0] == 0x0f && (x->opcode[1] & 0xf0) == 0x90)
			kind = EMU_SETCC;
		break;
	}
	if (kind == EMU_NONE)
		return false;
	e->alu = alu;
	if (kind == EMU_CMOV || kind == EMU_SETCC) {
		e->cc = cc_of(x);
		if (e->cc > 15)
			return false;
	}
	unsigned want = kind == EMU_PUSH || kind == EMU_POP || kind == EMU_ALU1 || kind == EMU_SETCC
				? 1 : 2;
	if (n != want || !operand(&op[0], kind == EMU_PUSH ? &e->src : &e->dst))
		return false;
	if (want == 2 && !operand(&op[1], &e->src))
		return false;
	e->size = op[0].size;
	e->src_size = want == 2 ? op[1].size : 0;
	switch (kind) {
	case EMU_MOV:
		if (e->dst.kind == OPND_IMM || (e->dst.kind == OPND_MEM && e->src.kind == OPND_MEM))
			return false;
		break;
	case EMU_MOVZX:
	case EMU_MOVSX:
	case EMU_CMOV:
		if (e->dst.kind != OPND_REG || e->src.kind == OPND_IMM)
			return false;
		break;
	case EMU_LEA:
		if (e->dst.kind != OPND_REG || e->src.kind != OPND_MEM)
			return false;
		break;
	case EMU_PUSH:
		if (e->size != 8)
			return false;
		break;
	case EMU_POP:
		if (e->size != 8 || e->dst.kind != OPND_REG)
			return false;
		break;
	case EMU_SETCC:
		if (e->dst.kind == OPND_IMM || e->size != 1)
			return false;
		break;
	case EMU_ALU:
		if (e->dst.kind == OPND_IMM || (e->dst.kind == OPND_MEM && e->src.kind == OPND_MEM))
			return false;
		/* Shifts and rotates: the count is an immediate or cl. */
		if (alu >= ALU_SHL && alu <= ALU_ROR && e->src.kind == OPND_MEM)
			return false;
		if (alu >= ALU_SHL && alu <= ALU_ROR && e->src.kind == OPND_REG &&
		    (e->src.reg != REG_RCX || e->src_size != 1 || e->src.shift))
			return false;
		break;
	case EMU_ALU1:
		if (e->dst.kind == OPND_IMM)
			return false;
		break;
	}
	if (e->size != 1 && e->size != 2 && e->size != 4 && e->size != 8)
		return false;
	e->kind = kind;
	return true;
}

/* ---- Running ------------------------------------------------------------- */

#define ARITH 0x8d5u /* CF PF AF ZF SF OF */

static uint64_t mask_of(unsigned size)
{
	return size == 8 ? ~0ull : (1ull << (size * 8)) - 1;
}

/* OP of SIZE bytes on A (and B), with FLAGS: the CPU's result, and its
 * flags into *FLAGS. The flags go through the stack below the red zone
 * (a leaf's locals may live in it; lea leaves the flags alone). */
static uint64_t alu(unsigned op, unsigned size, uint64_t a, uint64_t b, uint64_t *flags)
{
	uint64_t f = (*flags & ARITH) | 2, r = a;
#define RR(insn) \
	__asm__("lea -128(%%rsp), %%rsp\n\tpush %[f]\n\tpopfq\n\t" insn \
		"\n\tpushfq\n\tpop %[f]\n\tlea 128(%%rsp), %%rsp" \
		: [r] "+r"(r), [f] "+r"(f) : [b] "r"(b) : "cc")
#define RC(insn) \
	__asm__("lea -128(%%rsp), %%rsp\n\tpush %[f]\n\tpopfq\n\t" insn \
		"\n\tpushfq\n\tpop %[f]\n\tlea 128(%%rsp), %%rsp" \
		: [r] "+r"(r), [f] "+r"(f) : [b] "c"(b) : "cc")
#define R1(insn) \
	__asm__("lea -128(%%rsp), %%rsp\n\tpush %[f]\n\tpopfq\n\t" insn \
		"\n\tpushfq\n\tpop %[f]\n\tlea 128(%%rsp), %%rsp" : [r] "+r"(r), [f] "+r"(f) : : "cc")
#define SIZES_RR(name)                                                                   \
	switch (size) {                                                                  \
	case 8: RR(name "q %q[b], %q[r]"); break;                                        \
	case 4: RR(name "l %k[b], %k[r]"); break;                                        \
	case 2: RR(name "w %w[b], %w[r]"); break;                                        \
	default: RR(name "b %b[b], %b[r]"); break;                                        \
	}
#define SIZES_RC(name)                                                                   \
	switch (size) {                                                                  \
	case 8: RC(name "q %%cl, %q[r]"); break;                                         \
	case 4: RC(name "l %%cl, %k[r]"); break;                                         \
	case 2: RC(name "w %%cl, %w[r]"); break;                                         \
	default: RC(name "b %%cl, %b[r]"); break;                                         \
	}
#define SIZES1(name)                                                                     \
	switch (size) {                                                                  \
	case 8: R1(name "q %q[r]"); break;                                               \
	case 4: R1(name "l %k[r]"); break;                                               \
	case 2: R1(name "w %w[r]"); break;                                               \
	default: R1(name "b %b[r]"); break;                                               \
	}
	switch (op) {
	case ALU_ADD: SIZES_RR("add"); break;
	case ALU_OR: SIZES_RR("or"); break;
	case ALU_AND: SIZES_RR("and"); break;
	case ALU_SUB:
	case ALU_CMP: SIZES_RR("sub"); break;
	case ALU_XOR: SIZES_RR("xor"); break;
	case ALU_TEST: SIZES_RR("test"); break;
	case ALU_SHL: SIZES_RC("shl"); break;
	case ALU_SHR: SIZES_RC("shr"); break;
	case ALU_SAR: SIZES_RC("sar"); break;
	case ALU_ROL: SIZES_RC("rol"); break;
	case ALU_ROR: SIZES_RC("ror"); break;
	case ALU_INC: SIZES1("inc"); break;
	case ALU_DEC: SIZES1("dec"); break;
	case ALU_NEG: SIZES1("neg"); break;
	case ALU_NOT: SIZES1("not"); break;
	}
#undef RR
#undef RC
#undef R1
#undef SIZES_RR
#undef SIZES_RC
#undef SIZES1
	*flags = (*flags & ~(uint64_t)ARITH) | (f & ARITH);
	return r;
}

bool ip_emu_cond(uint8_t cc, const greg_t *gr)
{
	uint64_t f = (uint64_t)gr[REG_EFL];
	bool cf = f & 1, pf = f & 4, zf = f & 0x40, sf = f & 0x80, of = f & 0x800;
	bool r;
	switch (cc & ~1) {
	case 0: r = of; break;
	case 2: r = cf; break;
	case 4: r = zf; break;
	case 6: r = cf || zf; break;
	case 8: r = sf; break;
	case 10: r = pf; break;
	case 12: r = sf != of; break;
	default: r = zf || sf != of; break;
	}
	return (cc & 1) ? !r : r;
}

static uint64_t address(const struct ip_emu_opnd *o, uint64_t next, const greg_t *gr)
{
	uint64_t a = o->base == EMU_RIP ? next : o->base == EMU_NO_REG ? 0 : (uint64_t)gr[o->base];
	if (o->index != EMU_NO_REG)
		a += (uint64_t)gr[o->index] * o->scale;
	return a + (uint64_t)o->v;
}

/* The value of operand O, SIZE bytes (zero-extended); false when its
 * memory does not read. */
static bool get(const struct ip_emu_opnd *o, unsigned size, uint64_t next, const greg_t *gr,
		uint64_t *v)
{
	switch (o->kind) {
	case OPND_REG:
		*v = ((uint64_t)gr[o->reg] >> o->shift) & mask_of(size);
		return true;
	case OPND_IMM:
		*v = (uint64_t)o->v; /* as the CPU extends it: the operation takes its width */
		return true;
	default:
		return ip_probe_load(address(o, next, gr), size, v) == 0;
	}
}

/* Register operand O of SIZE bytes := V, as the CPU writes it. */
static void put_reg(const struct ip_emu_opnd *o, unsigned size, uint64_t v, greg_t *gr)
{
	uint64_t old = (uint64_t)gr[o->reg], m = mask_of(size) << o->shift;
	if (size == 4)
		gr[o->reg] = (greg_t)(v & 0xffffffffull);
	else if (size == 8)
		gr[o->reg] = (greg_t)v;
	else
		gr[o->reg] = (greg_t)((old & ~m) | ((v << o->shift) & m));
}

static uint64_t sign_extend(uint64_t v, unsigned size)
{
	unsigned bits = size * 8;
	return bits >= 64 ? v : (uint64_t)((int64_t)(v << (64 - bits)) >> (64 - bits));
}

/* One store, unless it would land in the driver's own part of the stack
 * (GUARD: the kernel's signal frame the thread returns through, our
 * frames below it). */
static bool store(const struct ip_emu_guard *guard, uint64_t addr, unsigned size, uint64_t v)
{
	if (addr < guard->hi && addr + size > guard->lo)
		return false;
	return ip_probe_store(addr, size, v) == 0;
}

bool ip_emu_run(const struct ip_emu *e, uint64_t next, greg_t *gr, const struct ip_emu_guard *guard)
{
	unsigned size = e->size;
	uint64_t a = 0, b = 0, r = 0, flags = (uint64_t)gr[REG_EFL];
	uint64_t rsp = (uint64_t)gr[REG_RSP];
	switch (e->kind) {
	case EMU_NOP:
		break;
	case EMU_MOV:
		if (!get(&e->src, size, next, gr, &b))
			return false;
		if (e->dst.kind == OPND_MEM) {
			if (!store(guard, address(&e->dst, next, gr), size, b))
				return false;
		} else {
			put_reg(&e->dst, size, b, gr);
		}
		break;
	case EMU_MOVZX:
	case EMU_MOVSX:
		if (!get(&e->src, e->src_size, next, gr, &b))
			return false;
		if (e->kind == EMU_MOVSX)
			b = sign_extend(b, e->src_size) & mask_of(size);
		put_reg(&e->dst, size, b, gr);
		break;
	case EMU_LEA:
		put_reg(&e->dst, size, address(&e->src, next, gr) & mask_of(size), gr);
		break;
	case EMU_PUSH:
		/* The value first (push rsp pushes the old one, push [rsp+n]
		 * reads before the decrement). */
		if (!get(&e->src, 8, next, gr, &b) || !store(guard, rsp - 8, 8, b))
			return false;
		gr[REG_RSP] = (greg_t)(rsp - 8);
		break;
	case EMU_POP:
		if (ip_probe_load(rsp, 8, &b))
			return false;
		gr[REG_RSP] = (greg_t)(rsp + 8);
		put_reg(&e->dst, 8, b, gr); /* pop rsp: the value read wins */
		break;
	case EMU_LEAVE:
		if (ip_probe_load((uint64_t)gr[REG_RBP], 8, &b))
			return false;
		gr[REG_RSP] = (greg_t)((uint64_t)gr[REG_RBP] + 8);
		gr[REG_RBP] = (greg_t)b;
		break;
	case EMU_ALU:
	case EMU_ALU1: {
		uint64_t addr = e->dst.kind == OPND_MEM ? address(&e->dst, next, gr) : 0;
		if (!get(&e->dst, size, next, gr, &a))
			return false;
		if (e->kind == EMU_ALU && !get(&e->src, e->src_size ? e->src_size : size, next, gr, &b))
			return false;
		r = alu(e->alu, size, a, b, &flags);
		if (e->alu != ALU_CMP && e->alu != ALU_TEST) {
			if (e->dst.kind == OPND_MEM) {
				if (!store(guard, addr, size, r & mask_of(size)))
					return false;
			} else {
				put_reg(&e->dst, size, r, gr);
			}
		}
		gr[REG_EFL] = (greg_t)flags;
		break;
	}
	case EMU_CMOV:
		/* The source is read whatever the condition (it may fault), and
		 * a 32-bit destination is cleared above even when nothing
		 * moves. */
		if (!get(&e->src, size, next, gr, &b))
			return false;
		if (ip_emu_cond(e->cc, gr))
			put_reg(&e->dst, size, b, gr);
		else if (size == 4)
			put_reg(&e->dst, 4, (uint64_t)gr[e->dst.reg], gr);
		break;
	case EMU_SETCC:
		b = ip_emu_cond(e->cc, gr);
		if (e->dst.kind == OPND_MEM) {
			if (!store(guard, address(&e->dst, next, gr), 1, b))
				return false;
		} else {
			put_reg(&e->dst, 1, b, gr);
		}
		break;
	default:
		return false;
	}
	gr[REG_RIP] = (greg_t)next;
	return true;
}
