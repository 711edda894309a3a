/* The stack analysis (`backstep check --stack`; chk.h, "Stack analysis"):
 * at every instruction of every function, the stack state the code
 * implies, against the CFI row in force there.
 *
 * Per FDE: the range is decoded once, linearly (the architecture's
 * decoder, chk_stack.h), into instructions and micro-operations; the FDE's
 * program is run into rows (cfi_machine_next). Then a forward data-flow
 * analysis over the instructions: a state per block leader (entries,
 * branch targets, resolved jump-table targets), a worklist taken lowest
 * address first, blocks run until the next leader, states joined there.
 * A state gives every register and every tracked stack slot an abstract
 * value (struct sk_val):
 *
 *   value      meaning                               compared as
 *   UNKNOWN    anything (paths disagree; memory      cannot decide
 *              the analysis does not track)
 *   NEW        a value that is none of the ones      not a caller's value,
 *              below (arithmetic, arguments,         not a frame address
 *              callee garbage); Z: upper half zero
 *   CALLER r   the caller's value of column r + off  (the RA is column 16
 *              (PAC: signed by pointer authentication)   on x86-64, 30 on AArch64)
 *   CFA        CFA + off
 *   ANCHOR a   the stack pointer after realignment a, + off (its
 *              distance to the CFA is not fixed)
 *   CONST      off
 *   DYN        a stack pointer moved by a run-time amount (alloca)
 *   TABLE      a jump-table entry (or table + entry, or an anchor + entry
 *              shifted: AArch64), or an index shifted (a computed jump
 *              into equal-sized blocks), that IJUMP resolves
 *   BOUNDED    an unsigned value whose low reg bytes lie in [off, aux] (a
 *              jump-table index, once zero-extended from a compare's
 *              width); MAYBE: refined from UNKNOWN, so compared as UNKNOWN
 *
 * The join of two different values is UNKNOWN, except that two BOUNDED
 * join to their hull (widened at a join along an edge backwards: an
 * interval that grows there goes to its widest) and two values of the NEW
 * family (NEW, TABLE, BOUNDED) join to NEW: neither is a caller's value,
 * so the result is not one either. A state also keeps a few relations
 * between registers (struct rel: copies plus a constant, the order a
 * compare of two registers taught), dropped when either is written and
 * kept at a join only when both paths have them. Every cycle of the code
 * has an edge backwards, every join there goes down to a lattice of
 * finite height, so the fixed point is reached; the work is bounded
 * anyway (SK_MAX_STEPS_PER_INSN) and running out is reported ("bound").
 * An edge a compare excludes (the register's interval and the branch
 * disagree) is not followed: the analysis only grows with what it joins.
 * Slots are keyed by base (the CFA or an anchor) and offset; a slot not
 * listed holds the state's default: NEW at a function entry (nothing this
 * function stored there is a caller's value), UNKNOWN when analysed from
 * a row (the code before wrote who knows what); when more than
 * SK_MAX_SLOTS are live the default becomes UNKNOWN and the least useful
 * go (precision lost, never a claim made). Stores through anything but a
 * tracked stack address are assumed not to hit the frame's own save slots
 * (C code cannot name them; objtool assumes the same); a call clobbers
 * the slots below the stack pointer and makes the registers it need not
 * preserve UNKNOWN (hand-written callees keep some on purpose).
 *
 * Jump tables are read from the file when the index is bounded by a
 * compare and a branch (`cmp eax, 5; ja`, also of the low bytes, of
 * memory reloaded after the branch, across instructions that keep the
 * flags and the operands) with no other conditional branch between that
 * branch and the table's load ("fresh": the compiler sized the table by
 * that compare). A bound that is not the table's own (an older compare,
 * a mask, a difference of ordered values, a byte's range 0..255: a
 * compiler that knows a narrower range sizes the table by it) reads the
 * table only when every entry up to the bound names an instruction of
 * the function, else the jump stays unresolved: never guessed. Bounds are
 * intervals, carried through copies and constant offsets (relations
 * between registers: a compare on one copy bounds the others), through
 * the entries of a small read-only table (a class byte indexing the next
 * table: vfprintf), and through a difference of two values a compare
 * ordered (strcmp); an interval that grows at a join is widened, so the
 * fixed point comes in a few rounds. Entries are addresses, offsets from
 * the table, or offsets from another label; a shifted index over a base
 * jumps into blocks of equal size; a register holding a label's address
 * is a direct jump. Comparisons also teach the end of a probing loop
 * (`cmp rsp, r11; jne`: rsp = r11 after it).
 *
 * Entries. A function starting at a function symbol (or, stripped, whose
 * first row is the call site's) is entered with the ABI's call-site state.
 * Its landing pads (its LSDA: a call in a call-site range that throws
 * continues there) get the state after that call. Every jump out of it
 * into another FDE's middle, or into a part's start, is recorded with its
 * state. Parts (.cold, FDEs another LSDA's landing pad lies in, first rows
 * that are not a call site's) are analysed after all functions, from the
 * recorded states, else from their rows (landing pads whose calls were not
 * followed; the start, skipping a first row that covers only gcc's nop
 * before a landing pad). In a PLT section every stub after an
 * unconditional jump is entered from a call.

 * After the fixed point a second pass runs each block again from its
 * leader's final state and compares at every instruction, before it
 * executes: the CFA rule evaluated over the state must be CFA+0 (or, when
 * the row gives the stack pointer's column a rule of its own, any frame
 * address, the rules evaluated from it and that rule giving CFA+0); each
 * callee-saved register's rule (and the RA column's) must name a location
 * that holds that register's caller value (a register, or a slot: the
 * value may sit in several places at once, and any of them is right: after
 * an epilogue `pop rbx` both rbx and the slot hold it, which is why a
 * missing .cfi_restore there is no difference). A difference needs a
 * definite value on every path; UNKNOWN is never one.
 *
 * Calls return unless the callee is known not to: by name (abort, exit,
 * __stack_chk_fail, __cxa_throw, _Unwind_Resume, ...; through the PLT and
 * GOT by the relocation's symbol), or, for a function of the same file,
 * because no path from its entry reaches a return, a tail call that may
 * return or an indirect jump (computed once per function, callees' own
 * callees by name or by what is already known, no recursion). Treating a
 * call that never returns as returning adds a path that does not run: at
 * a join its state only makes values UNKNOWN (coverage lost); what it
 * alone reaches (alignment fill after the call, at most) is compared with
 * the state the call left, which the rows there continue.
 *
 * Bounds: instructions per FDE (SK_MAX_INSNS), slots per state
 * (SK_MAX_SLOTS), block states per function (SK_MAX_STATES), steps per
 * instruction (SK_MAX_STEPS_PER_INSN), jump-table entries (SK_MAX_TABLE),
 * decoded instructions kept for callees (SK_CACHE_INSNS), bytes decoded per
 * file (four times the code, plus 16 MiB: overlapping FDEs of a damaged
 * table), expression operations and stack (SK_EXPR_OPS, SK_EXPR_STACK).
 * Reaching one gives the function up ("bound"), nothing else. Relations
 * per state (SK_MAX_RELS): the oldest goes when there is no room
 * (precision lost, no claim made).
 * Trusts its caller for a path; everything read from the file is bounded
 * by the loader, libelf and the bounded reader.
 */
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "chk.h"
#include "chk_stack.h"

#include "../arch/arch.h"
#include "../base/dwarf.h"
#include "../cfi/cfi.h"
#include "../expr/expr.h"
#include "../loader/loader.h"
#include "../sym/sym.h"
#include "../unwind/unwind.h"

#define SK_MAX_INSNS (1u << 22)        /* per FDE */
#define SK_MAX_SLOTS 40                /* tracked stack slots per state */
#define SK_MAX_STEPS_PER_INSN 64       /* block-run steps per instruction */
#define SK_MAX_TABLE 16384             /* jump-table entries */
#define SK_MAX_STATES 65536u           /* block states per function (~100 MiB) */
#define SK_CACHE_INSNS (1u << 20)      /* decoded instructions kept for callees */
#define SK_MAX_ANCH 4096               /* anchored jump tables per file */
#define SK_EXPR_STACK 16
#define SK_EXPR_OPS 64
#define SK_MAX_RELS 4                  /* relations between registers per state */
#define DEFAULT_MAX_FINDINGS 1000

static const char *const reason_names[CHK_SR_N] = {
	[CHK_SR_INDIRECT_JUMP] = "indirect jump",
	[CHK_SR_REALIGNED] = "realigned stack",
	[CHK_SR_EXPRESSION] = "expression rule",
	[CHK_SR_UNKNOWN_STATE] = "state unknown",
	[CHK_SR_UNREACHED] = "unreached",
	[CHK_SR_SIGNAL_FRAME] = "signal frame",
	[CHK_SR_OUTERMOST] = "outermost frame",
	[CHK_SR_BAD_CODE] = "bad code",
	[CHK_SR_BAD_CFI] = "bad CFI",
	[CHK_SR_NO_CODE] = "no code",
	[CHK_SR_LIMIT] = "bound",
	[CHK_SR_ENTRY_STATE] = "entry state",
};

const char *chk_stack_reason_name(enum chk_stack_reason reason)
{
	return (unsigned)reason < CHK_SR_N ? reason_names[reason] : "?";
}

const char *chk_stack_unsupported(const struct chk_stack_report *report)
{
	return report->unsupported ? report->unsupported : "not supported";
}

/* ---- Values ------------------------------------------------------------- */

enum vkind { V_UNKNOWN = 0, V_NEW, V_CALLER, V_CFA, V_ANCHOR, V_CONST, V_DYN, V_TABLE, V_BOUNDED };

#define VF_Z 1      /* NEW, BOUNDED: the upper 32 bits are zero */
#define VF_MAYBE 2  /* BOUNDED: refined from UNKNOWN */
#define VF_B1 4     /* NEW: all but the low byte is zero (with VF_Z) */
#define VF_B2 8     /* NEW: all but the low two bytes are zero (with VF_Z) */
#define VF_FRESH 16 /* BOUNDED: no other conditional branch since its compare */
#define VF_PAC 32   /* CALLER: signed (RA_SIGN_STATE bit 0: paciasp and the like) */
#define VF_PACPC 64 /* CALLER: with the PC as a second modifier (bit 1: FEAT_PAuth_LR's
		     * paciasppc; DW_CFA_AARCH64_negate_ra_state_with_pc) */
#define VT_REL 0x80 /* TABLE (in reg): table address + entry */
#define VT_SIGNED 0x40
#define VT_ANCH 0x20 /* TABLE: anchor (off) + entry << shift; aux: sctx.anch index */
#define VT_SIZE 0x1f /* TABLE: the entry's size; 0: no memory read: off +
		      * (index << shift), index 0..aux (`shl ecx, 6; add rcx,
		      * r9; jmp rcx`: a computed jump into equal blocks) */
#define VTF_SHIFT 0x07 /* TABLE flags: the entry's left shift */
#define VTF_CHECK 0x10 /* TABLE flags: the bound is not the table's own (no
			* compare right before sized it): read only when every
			* entry names an instruction of the function */

struct sk_val {
	int64_t off;
	uint32_t aux;   /* ANCHOR: its id; TABLE, BOUNDED: the largest index */
	uint8_t kind;
	uint8_t reg;    /* CALLER: the DWARF column; TABLE: entry size | VT_*;
			 * BOUNDED: the bytes the bound is about (8: all) */
	uint8_t flags;
	uint8_t pad;
};

static const struct sk_val v_unknown = { 0, 0, V_UNKNOWN, 0, 0, 0 };

static struct sk_val vk(uint8_t kind, int64_t off)
{
	return (struct sk_val){ off, 0, kind, 0, 0, 0 };
}

static struct sk_val v_new(bool z)
{
	return (struct sk_val){ 0, 0, V_NEW, 0, (uint8_t)(z ? VF_Z : 0), 0 };
}

static struct sk_val v_caller(unsigned col)
{
	return (struct sk_val){ 0, 0, V_CALLER, (uint8_t)col, 0, 0 };
}

static bool v_eq(struct sk_val a, struct sk_val b)
{
	return a.kind == b.kind && a.off == b.off && a.aux == b.aux && a.reg == b.reg &&
	       a.flags == b.flags;
}

/* None of the tracked quantities, on every path. */
static bool v_other(struct sk_val v)
{
	return v.kind == V_NEW || v.kind == V_TABLE ||
	       (v.kind == V_BOUNDED && !(v.flags & VF_MAYBE));
}

/* Cannot be decided: compared as unknown. */
static bool v_undecided(struct sk_val v)
{
	return v.kind == V_UNKNOWN || (v.kind == V_BOUNDED && (v.flags & VF_MAYBE));
}

static bool v_stack(struct sk_val v)
{
	return v.kind == V_CFA || v.kind == V_ANCHOR;
}

static bool v_zero_upper(struct sk_val v)
{
	return (v.kind == V_NEW || v.kind == V_BOUNDED) ? (v.flags & VF_Z) != 0
	       : v.kind == V_CONST && (uint64_t)v.off <= UINT32_MAX;
}

/* The largest number W bytes hold. */
static uint64_t low_max(unsigned w)
{
	return w >= 8 ? UINT64_MAX : (1ull << (8 * w)) - 1;
}

/* The interval the low W bytes of BOUNDED V lie in (W <= V.reg): V's own
 * when its bound fits W bytes (the bytes above are zero), else any W-byte
 * number up to it. */
static void bounded_low(struct sk_val v, unsigned w, uint64_t *lo, uint64_t *hi)
{
	if (v.aux <= low_max(w)) {
		*lo = (uint64_t)v.off;
		*hi = v.aux;
	} else {
		*lo = 0;
		*hi = low_max(w);
	}
}

/* Whether V is known to be below 2^(8W) (its bytes from W up are zero). */
static bool v_fits(struct sk_val v, unsigned w)
{
	if (w >= 8)
		return true;
	switch (v.kind) {
	case V_CONST: return (uint64_t)v.off <= low_max(w);
	case V_BOUNDED: return v.reg == 8 && v.aux <= low_max(w);
	case V_NEW:
		return ((v.flags & VF_B1) && w >= 1) || ((v.flags & VF_B2) && w >= 2) ||
		       ((v.flags & VF_Z) && w >= 4);
	default: return false;
	}
}

static struct sk_val v_join(struct sk_val a, struct sk_val b)
{
	if (v_eq(a, b))
		return a;
	if (a.kind == V_BOUNDED && b.kind == V_BOUNDED) {
		/* the low min(bytes) bytes within the hull of both intervals */
		unsigned w = a.reg < b.reg ? a.reg : b.reg;
		uint64_t al, ah, bl, bh;
		bounded_low(a, w, &al, &ah);
		bounded_low(b, w, &bl, &bh);
		a.off = (int64_t)(al < bl ? al : bl);
		a.aux = (uint32_t)(ah > bh ? ah : bh);
		a.reg = (uint8_t)w;
		a.flags = (uint8_t)((a.flags | (b.flags & VF_MAYBE)) & (b.flags | VF_MAYBE));
		return a;
	}
	if (v_other(a) && v_other(b)) {
		struct sk_val n = v_new(v_zero_upper(a) && v_zero_upper(b));
		if (a.kind == V_NEW && b.kind == V_NEW)
			n.flags |= a.flags & b.flags & (VF_B1 | VF_B2);
		return n;
	}
	return v_unknown;
}

/* The join J of OLD (a leader's state) with a value coming back round a
 * loop, widened: an interval that grows goes to the widest one its bytes
 * allow, so a loop counter (`add eax, 1; cmp eax, 100; jb`) does not
 * climb one value per round (the fixed point is reached in two). Every
 * cycle has an edge backwards (to an address not above its source): the
 * joins there widen; the others (`cmp eax, 2; ja; cmp eax, 16; jbe L`
 * meeting another path to L with 0..16) keep the hull. */
static inline struct sk_val v_widen(struct sk_val old, struct sk_val j)
{
	if (j.kind != V_BOUNDED || old.kind != V_BOUNDED || v_eq(old, j))
		return j;
	if (j.aux > old.aux)
		j.aux = (uint32_t)(low_max(j.reg) < UINT32_MAX ? low_max(j.reg) : UINT32_MAX);
	if (j.off < old.off)
		j.off = 0;
	return j;
}

/* V + K, for the kinds an offset means something for. */
static struct sk_val v_add(struct sk_val v, int64_t k)
{
	switch (v.kind) {
	case V_CALLER:
	case V_CFA:
	case V_ANCHOR:
	case V_CONST:
		if (__builtin_add_overflow(v.off, k, &v.off))
			return v_unknown;
		return v;
	case V_DYN:
	case V_UNKNOWN:
		return v;
	case V_BOUNDED:
		if (!k)
			return v;
		if (v.reg == 8) {
			/* the interval moved, when it does not wrap: still as
			 * tight (and as fresh) as it was */
			int64_t lo, hi;
			if (!__builtin_add_overflow(v.off, k, &lo) &&
			    !__builtin_add_overflow((int64_t)v.aux, k, &hi) && lo >= 0 &&
			    hi <= (int64_t)UINT32_MAX) {
				v.off = lo;
				v.aux = (uint32_t)hi;
				return v;
			}
		}
		return v_undecided(v) ? v_unknown : v_new(false);
	case V_TABLE:
		if (k && !(v.reg & (VT_SIZE | VT_REL | VT_ANCH)) &&
		    !__builtin_add_overflow(v.off, k, &v.off))
			return v; /* a shifted index moved */
		return k ? v_new(false) : v;
	default:
		return k ? v_new(false) : v;
	}
}

/* The low W bytes of V (1, 2 or 4), zero-extended. */
static struct sk_val v_zext(struct sk_val v, unsigned w)
{
	if (v.kind == V_CONST)
		return vk(V_CONST, (int64_t)((uint64_t)v.off & ((1ull << (8 * w)) - 1)));
	if (v.kind == V_BOUNDED && v.reg >= w) {
		/* the low W bytes are the bounded ones, or part of a value
		 * bounded whole: the result is bounded whole */
		uint64_t lo, hi;
		bounded_low(v, w, &lo, &hi);
		v.off = (int64_t)lo;
		v.aux = (uint32_t)hi;
		v.reg = 8;
		v.flags |= VF_Z;
		return v;
	}
	if (v.kind == V_TABLE && !(v.reg & (VT_REL | VT_ANCH | VT_SIGNED)) &&
	    !(v.flags & VTF_SHIFT) && (v.reg & VT_SIZE) && (v.reg & VT_SIZE) <= w)
		return v; /* an unsigned entry no wider: itself */
	if (v.kind == V_TABLE && !(v.reg & VT_SIZE) && !(v.reg & (VT_REL | VT_ANCH)) && v.off >= 0 &&
	    (uint64_t)v.off + ((uint64_t)v.aux << (v.flags & VTF_SHIFT)) <= low_max(w))
		return v; /* a shifted index that fits: itself */
	struct sk_val n = v_new(true);
	n.flags |= w == 1 || (v.kind == V_NEW && (v.flags & VF_B1)) ? VF_B1
		: w == 2 || (v.kind == V_NEW && (v.flags & VF_B2)) ? VF_B2 : 0;
	return n;
}

/* The low W bytes of V (1, 2 or 4), sign-extended: a jump-table entry
 * read unsigned and extended by the arithmetic (AArch64 `ldrb w1, [...]`
 * then `add x1, x2, w1, sxtb #2`) is a signed entry. */
static struct sk_val v_sext(struct sk_val v, unsigned w)
{
	if (v.kind == V_CONST) {
		unsigned sh = 64 - 8 * w;
		return vk(V_CONST, (int64_t)((uint64_t)v.off << sh) >> sh);
	}
	if (v.kind == V_TABLE && !(v.reg & (VT_REL | VT_ANCH)) && !(v.flags & VTF_SHIFT) &&
	    (v.reg & VT_SIZE) == w) {
		v.reg |= VT_SIGNED;
		return v;
	}
	if (v.kind == V_TABLE && !(v.reg & VT_SIZE) && !(v.reg & (VT_REL | VT_ANCH)) && v.off >= 0 &&
	    (uint64_t)v.off + ((uint64_t)v.aux << (v.flags & VTF_SHIFT)) < (1ull << (8 * w - 1)))
		return v; /* a shifted index below the sign bit */
	if (v.kind == V_BOUNDED && v.reg == 8 && v.aux < (1ull << (8 * w - 1)))
		return v; /* below the sign bit: the same number */
	return v_undecided(v) ? v_unknown : v_new(false);
}

/* A 32-bit write of V (zero-extends). */
static struct sk_val v_w32(struct sk_val v)
{
	return v_zext(v, 4);
}

/* ---- States ------------------------------------------------------------- */

struct slot {
	int64_t off;
	uint32_t base;          /* 0: the CFA; else an anchor id */
	uint32_t pushed;        /* written by a push (on every path) */
	struct sk_val v;
};

/* The flags of the last compare, for the branch right after it. */
struct cmpfact {
	int64_t imm;
	uint8_t valid, a, b, width;     /* a SK_NONE: memory MEM was compared */
	struct sk_mem mem;
	struct sk_val base, index;      /* MEM's registers' values then */
	struct sk_val av, bv;           /* A's and B's values then */
};

/* A memory operand known bounded for the next instruction (a compare of
 * memory, the branch, then a load of the same bytes: `cmp byte [rax+rcx],
 * 4; ja; movzx eax, byte [rax+rcx]`). */
struct membound {
	struct sk_mem mem;
	struct sk_val base, index;
	uint32_t bound;
	uint8_t valid;
};

/* A relation between two registers' values (numbers, unsigned), kept
 * while neither is written:
 *
 *   EQ  the low W bytes of A equal those of B + K (a copy: mov edi, ebp;
 *       lea eax, [r9 - 0x20]; movzx eax, r9b)
 *   LT  A < B, whole values (a compare of the two and a branch)
 *   LE  A <= B
 *   NE  A != B
 *
 * A compare on one copy bounds the others; a difference of two related
 * values is bounded by the relation (glibc's strcmp: `cmp ecx, eax; ja`
 * then `lea r9, [rax + 15]; sub r9, rcx` indexes a 15-entry table). */
enum { REL_EQ = 1, REL_LT, REL_LE, REL_NE };

struct rel {
	int64_t k;
	uint8_t kind, a, b, w;
};

struct state {
	struct sk_val r[SK_NREGS];
	struct cmpfact cmp;
	struct membound mb;
	uint8_t nrel;
	struct rel rel[SK_MAX_RELS];
	uint8_t nslots;
	uint8_t slot_default;   /* V_NEW or V_UNKNOWN */
	uint8_t overflow;       /* a slot did not fit: the analysis gives up */
	struct slot s[SK_MAX_SLOTS];
};

static uint32_t v_base(struct sk_val v)
{
	return v.kind == V_ANCHOR ? v.aux : 0;
}

/* Whether V is what an unlisted slot holds anyway. */
static bool slot_is_default(uint8_t def, struct sk_val v)
{
	return def == V_NEW ? v_other(v) : v.kind == V_UNKNOWN;
}

static struct sk_val slot_load(const struct state *st, uint32_t base, int64_t off, unsigned size)
{
	bool overlap = false;
	for (unsigned i = 0; i < st->nslots; i++) {
		const struct slot *s = &st->s[i];
		if (s->base != base || s->off >= off + (int64_t)size || off >= s->off + 8)
			continue;
		if (s->off == off && size == 8)
			return s->v;
		overlap = true;
	}
	if (size < 8)
		return v_new(size <= 4);
	if (overlap || st->slot_default == V_UNKNOWN)
		return v_unknown;
	return v_new(false);
}

/* Too many slots (N > SK_MAX_SLOTS - 1 in S): from now on an unlisted slot
 * holds anything (a loss of precision, never a wrong claim), so the
 * unknown ones need no entry; if that is not enough, the ones holding
 * neither a caller's value nor a frame address go too (they read as
 * unknown). Returns the new count; *DEF becomes V_UNKNOWN. */
static unsigned slots_make_room(struct slot *s, unsigned n, uint8_t *def)
{
	*def = V_UNKNOWN;
	for (int pass = 0; pass < 2 && n >= SK_MAX_SLOTS; pass++) {
		unsigned j = 0;
		for (unsigned i = 0; i < n; i++) {
			struct sk_val v = s[i].v;
			if (!(v.kind == V_UNKNOWN || (pass == 1 && v.kind != V_CALLER && !v_stack(v))))
				s[j++] = s[i];
		}
		n = j;
	}
	return n;
}

static void slot_store(struct state *st, uint32_t base, int64_t off, unsigned size,
		       struct sk_val v, bool pushed)
{
	unsigned j = 0;
	bool unknown_range = size != 8 && v.kind == V_UNKNOWN;
	for (unsigned i = 0; i < st->nslots; i++) {
		struct slot *s = &st->s[i];
		if (s->base == base && s->off < off + (int64_t)size && off < s->off + 8) {
			if (!unknown_range || st->slot_default == V_UNKNOWN)
				continue;
			/* bytes that may or may not have been written (a store
			 * whose extent is an upper bound): the slot holds
			 * anything now, not "none of the tracked" */
			s->v = v_unknown;
			s->pushed = 0;
		}
		st->s[j++] = *s;
	}
	st->nslots = (uint8_t)j;
	if (size != 8)
		v = st->slot_default == V_NEW ? v_new(false) : v_unknown;
	if (slot_is_default(st->slot_default, v))
		return;
	if (st->nslots == SK_MAX_SLOTS)
		st->nslots = (uint8_t)slots_make_room(st->s, st->nslots, &st->slot_default);
	if (st->nslots == SK_MAX_SLOTS) {
		st->overflow = 1;
		return;
	}
	st->s[st->nslots++] = (struct slot){ off, base, pushed, v };
}

static bool slot_pushed(const struct state *st, uint32_t base, int64_t off)
{
	for (unsigned i = 0; i < st->nslots; i++)
		if (st->s[i].base == base && st->s[i].off == off)
			return st->s[i].pushed;
	return false;
}

/* ---- Relations ---------------------------------------------------------- */

static bool rel_eq(const struct rel *x, const struct rel *y)
{
	return x->kind == y->kind && x->a == y->a && x->b == y->b && x->w == y->w && x->k == y->k;
}

static bool rel_has(const struct state *st, const struct rel *r)
{
	for (unsigned i = 0; i < st->nrel; i++)
		if (rel_eq(&st->rel[i], r))
			return true;
	return false;
}

/* The relation of KIND between A and B (in that order), or NULL. */
static const struct rel *rel_get(const struct state *st, uint8_t kind, unsigned a, unsigned b)
{
	for (unsigned i = 0; i < st->nrel; i++)
		if (st->rel[i].kind == kind && st->rel[i].a == a && st->rel[i].b == b)
			return &st->rel[i];
	return NULL;
}

/* Forget what is known of register R (it is written). */
static void rel_kill(struct state *st, unsigned r)
{
	unsigned j = 0;
	for (unsigned i = 0; i < st->nrel; i++)
		if (st->rel[i].a != r && st->rel[i].b != r)
			st->rel[j++] = st->rel[i];
	st->nrel = (uint8_t)j;
}

static void rel_drop(struct state *st, const struct rel *r)
{
	size_t i = (size_t)(r - st->rel);
	memmove(&st->rel[i], &st->rel[i + 1], (st->nrel - i - 1) * sizeof(st->rel[0]));
	st->nrel--;
}

/* Add a relation; with no room the oldest goes (a relation lost is
 * precision lost, never a claim). */
static void rel_add(struct state *st, uint8_t kind, unsigned a, unsigned b, int64_t k, unsigned w)
{
	struct rel r = { k, kind, (uint8_t)a, (uint8_t)b, (uint8_t)w };
	if (a == b || rel_has(st, &r))
		return;
	if (st->nrel == SK_MAX_RELS)
		rel_drop(st, &st->rel[0]);
	st->rel[st->nrel++] = r;
}

/* A <= B (STRICT: A < B), with what was known of the two. */
static void rel_order(struct state *st, unsigned a, unsigned b, bool strict)
{
	const struct rel *ne = rel_get(st, REL_NE, a, b);
	if (!ne)
		ne = rel_get(st, REL_NE, b, a);
	if (ne) {
		strict = true;
		rel_drop(st, ne);
	}
	const struct rel *le = rel_get(st, REL_LE, a, b);
	if (le && strict)
		rel_drop(st, le);
	if (strict || !rel_get(st, REL_LT, a, b))
		rel_add(st, strict ? REL_LT : REL_LE, a, b, 0, 8);
}

static void rel_ne(struct state *st, unsigned a, unsigned b)
{
	const struct rel *le = rel_get(st, REL_LE, a, b);
	if (le) {
		rel_drop(st, le);
		rel_add(st, REL_LT, a, b, 0, 8);
		return;
	}
	if ((le = rel_get(st, REL_LE, b, a))) {
		rel_drop(st, le);
		rel_add(st, REL_LT, b, a, 0, 8);
		return;
	}
	if (!rel_get(st, REL_LT, a, b) && !rel_get(st, REL_LT, b, a))
		rel_add(st, REL_NE, a, b, 0, 8);
}

/* The interval of A - B (signed) the relations between them allow, within
 * [*LO, *HI]. */
static void rel_diff(const struct state *st, unsigned a, unsigned b, int64_t *lo, int64_t *hi)
{
	if (rel_get(st, REL_LT, a, b) && *hi > -1)
		*hi = -1;
	if (rel_get(st, REL_LE, a, b) && *hi > 0)
		*hi = 0;
	if (rel_get(st, REL_LT, b, a) && *lo < 1)
		*lo = 1;
	if (rel_get(st, REL_LE, b, a) && *lo < 0)
		*lo = 0;
}

/* Join SRC into DST (WIDEN: along an edge backwards); true when DST
 * changed. */
static bool state_join(struct state *dst, const struct state *src, unsigned nregs, bool widen)
{
	bool changed = false;
	for (unsigned r = 0; r < nregs; r++) {
		if (v_eq(dst->r[r], src->r[r]))
			continue;
		struct sk_val j = v_join(dst->r[r], src->r[r]);
		if (widen)
			j = v_widen(dst->r[r], j);
		if (!v_eq(j, dst->r[r])) {
			dst->r[r] = j;
			changed = true;
		}
	}
	if (dst->cmp.valid && (!src->cmp.valid || dst->cmp.a != src->cmp.a ||
			       dst->cmp.b != src->cmp.b || dst->cmp.imm != src->cmp.imm ||
			       dst->cmp.width != src->cmp.width)) {
		dst->cmp.valid = 0;
		changed = true;
	}
	if (dst->cmp.valid && dst->cmp.a == SK_NONE &&
	    (memcmp(&dst->cmp.mem, &src->cmp.mem, sizeof(dst->cmp.mem)) ||
	     !v_eq(dst->cmp.base, src->cmp.base) || !v_eq(dst->cmp.index, src->cmp.index))) {
		dst->cmp.valid = 0;
		changed = true;
	}
	if (dst->mb.valid) {
		dst->mb.valid = 0;
		changed = true;
	}
	if (dst->nrel) {
		/* the relations true on both paths */
		unsigned j = 0;
		for (unsigned i = 0; i < dst->nrel; i++)
			if (rel_has(src, &dst->rel[i]))
				dst->rel[j++] = dst->rel[i];
		if (j != dst->nrel) {
			dst->nrel = (uint8_t)j;
			changed = true;
		}
	}
	uint8_t def = dst->slot_default == V_NEW && src->slot_default == V_NEW ? V_NEW : V_UNKNOWN;
	struct slot out[2 * SK_MAX_SLOTS];
	unsigned n = 0;
	bool same = def == dst->slot_default;
	for (unsigned i = 0; i < dst->nslots; i++) {
		const struct slot *x = &dst->s[i];
		struct sk_val j = v_join(x->v, slot_load(src, x->base, x->off, 8));
		if (widen)
			j = v_widen(x->v, j);
		if (slot_is_default(def, j)) {
			same = false;
			continue;
		}
		uint32_t pushed = x->pushed && slot_pushed(src, x->base, x->off);
		same = same && v_eq(j, x->v) && pushed == x->pushed;
		out[n++] = (struct slot){ x->off, x->base, pushed, j };
	}
	for (unsigned i = 0; i < src->nslots; i++) {
		const struct slot *y = &src->s[i];
		bool in_dst = false;
		for (unsigned k = 0; k < dst->nslots && !in_dst; k++)
			in_dst = dst->s[k].base == y->base && dst->s[k].off == y->off;
		if (in_dst)
			continue;
		struct sk_val j = v_join(slot_load(dst, y->base, y->off, 8), y->v);
		if (slot_is_default(def, j))
			continue;
		out[n++] = (struct slot){ y->off, y->base, 0, j };
		same = false;
	}
	if (src->overflow && !dst->overflow) {
		dst->overflow = 1;
		changed = true;
	}
	if (same)
		return changed;
	if (n > SK_MAX_SLOTS)
		n = slots_make_room(out, n, &def);
	if (n > SK_MAX_SLOTS) {
		n = SK_MAX_SLOTS;
		dst->overflow = 1;
	}
	memcpy(dst->s, out, n * sizeof(out[0]));
	dst->nslots = (uint8_t)n;
	dst->slot_default = def;
	return true;
}

/* ---- Files and functions ------------------------------------------------ */

/* An FDE to analyse. */
struct fde_ent {
	uint64_t lo, hi;
	uint64_t off;           /* in its section */
	uint64_t lsda;          /* its LSDA's address, or 0 */
	uint32_t lp_first, lp_n; /* its call sites with a landing pad (sctx.lps) */
	uint8_t k;              /* 0 .eh_frame, 1 .debug_frame */
	uint8_t verdict;        /* NR_*: does the function return? */
	uint8_t part;           /* entered mid-function: analysed from what enters it */
	uint8_t writes_known;   /* WRITES is all the registers it writes */
	uint64_t writes;
	struct decoded *dec;    /* decoded instructions kept (callee scans), or NULL */
};

/* A jump (or a landing pad) from one FDE into another one's middle, or
 * into the start of a part: the state it arrives with. */
struct cross {
	uint64_t target;
	struct state *st;
};

/* A call-site range of an LSDA with its landing pad: a call in [cs_lo,
 * cs_hi) that throws continues at LP (C++ ABI, "Exception Handling
 * Tables"; the landing pad may lie in another FDE: a .cold part). */
struct lp_ent {
	uint64_t cs_lo, cs_hi, lp;
	uint32_t owner;         /* the FDE (index in sctx.f) whose LSDA says so */
};

enum { NR_UNKNOWN = 0, NR_RETURNS, NR_NORETURN, NR_BUSY };

struct decoded {
	struct sk_insn *in;
	size_t n, cap;
	struct sk_mop *mop;
	size_t nmop, capmop;
};

/* A GOT slot named by a relocation. */
struct got_ent {
	uint64_t addr;
	const char *name;
};

/* One row, the compared columns only. */
struct srow {
	uint64_t loc, end;
	uint64_t args_size;     /* DW_CFA_GNU_args_size */
	uint8_t ra_sign;        /* RA_SIGN_STATE (AArch64; 0 elsewhere) */
	struct cfi_rule cfa;
	struct cfi_rule col[SK_MAX_CMP]; /* kind BK_RULE_NONE: no rule */
};

/* Per-instruction flags during one function's analysis. */
#define FL_LEADER 1
#define FL_REACHED 2
#define FL_ENTRY 4     /* an entry of the function (seeded) */
#define FL_DIFF 8

struct fn {
	const struct fde_ent *fe;
	struct decoded *d;
	const struct chk_region *rg;
	uint8_t *flag;
	struct state **st;       /* the state at each reached leader */
	uint64_t *work;          /* bitmap of leaders to run */
	size_t work_lo;          /* no bit below this is set */
	size_t nstates;          /* leaders with a state */
	uint64_t steps, max_steps;
	struct srow *rows;
	size_t nrows, caprows;
	size_t row_at;           /* compare pass: the row of the last lookup */
	bool from_row;
	/* What went wrong, first occurrence. */
	int give_up;             /* CHK_SR_* + 1, or 0 */
	uint64_t give_up_addr;
	char give_up_why[160];
	bool unresolved_ijump;
	uint64_t ijump_addr;
	uint64_t na_first[CHK_SR_N]; /* first instruction not checked, per reason */
	uint64_t unchecked[CHK_SR_N];
	uint64_t rules_na[CHK_SR_N];  /* register rules not decided, by reason */
	uint64_t checked, insns, fill;
	size_t diffs;
};

struct sctx {
	struct chk_stack_report *r;
	unsigned max_findings;
	size_t kept_diffs, kept_give_ups;
	int nomem;
	struct chk_image im;
	const struct sk_arch *ar;
	void *dec;
	struct cfi_section secs[2];
	bool present[2];
	struct fde_ent *f;
	size_t nf;
	struct got_ent *got;
	size_t ngot;
	struct lp_ent *lps;      /* by owner, then cs_lo */
	size_t nlps;
	uint32_t *lp_by_addr;    /* indices into lps, sorted by landing pad */
	struct cross *cross;     /* recorded while analysing entered functions, */
	size_t ncross, capcross; /* then sorted by target, one per target */
	bool recording;
	uint8_t *sym_noreturn;   /* per symbol of im.syms: a known noreturn name */
	size_t cached_insns;
	struct fde_ent *current; /* being analysed: its decoded code is in use */
	/* Scratch reused from function to function. */
	struct state cur, tmp;
	uint8_t *scan_seen;
	size_t scan_cap;
	uint64_t decoded_total, decode_budget; /* instructions decoded in all */
	/* The anchored jump tables of the file (AArch64 `adr x2, L; add x1,
	 * x2, w1, sxtb #2; br x1`): a TABLE value with VT_ANCH names one by
	 * index (per file: such a value may cross into another FDE). */
	struct anch_table {
		uint64_t table, anchor;
		uint32_t bound;
		uint8_t size, shift, sign;
		uint8_t check;   /* VTF_CHECK: read only when every entry is valid */
	} anch[SK_MAX_ANCH];
	unsigned nanch;
};

static const char *const sec_names[2] = { ".eh_frame", ".debug_frame" };

/* ---- Names -------------------------------------------------------------- */

/* Functions that never return, by symbol name (without a version). */
static bool noreturn_name(const char *name)
{
	static const char *const exact[] = {
		"abort", "exit", "_exit", "_Exit", "quick_exit", "__stack_chk_fail",
		"__stack_chk_fail_local", "__chk_fail", "__fortify_fail", "__libc_fatal",
		"__assert_fail", "__assert_perror_fail", "__assert", "longjmp", "_longjmp",
		"siglongjmp", "__longjmp_chk", "__libc_longjmp", "__libc_siglongjmp",
		"pthread_exit", "__pthread_exit", "err", "errx", "verr", "verrx",
		"__libc_start_main", "__libc_start_call_main", "__cxa_throw", "__cxa_rethrow",
		"__cxa_bad_cast", "__cxa_bad_typeid", "__cxa_throw_bad_array_new_length",
		"__cxa_pure_virtual", "__cxa_deleted_virtual", "__cxa_call_terminate",
		"__cxa_call_unexpected", "_Unwind_Resume", "__gxx_personality_v0_terminate",
		"_ZSt9terminatev", "_ZSt10unexpectedv", "_ZN10__cxxabiv111__terminateEPFvvE",
		"_ZSt17rethrow_exceptionNSt15__exception_ptr13exception_ptrE",
		"rust_begin_unwind", "rust_panic", "_dl_fatal_printf", "_dl_signal_error",
		"_dl_signal_exception", "_dl_reloc_bad_type", "__libc_message",
	};
	size_t len = strcspn(name, "@");
	for (size_t i = 0; i < BK_ARRAY_LEN(exact); i++)
		if (strlen(exact[i]) == len && !strncmp(name, exact[i], len))
			return true;
	/* std::__throw_* (libstdc++'s functexcept), Rust's core::panicking::*,
	 * UBSan's aborting handlers. */
	if (!strncmp(name, "_ZSt", 4) && strstr(name, "__throw_"))
		return true;
	if (!strncmp(name, "_ZN4core9panicking", 18))
		return true;
	if (!strncmp(name, "__ubsan_handle_", 15) && len > 6 && !strncmp(name + len - 6, "_abort", 6))
		return true;
	return false;
}

static int cmp_got(const void *a, const void *b)
{
	const struct got_ent *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* GOT slots named by JUMP_SLOT and GLOB_DAT relocations (.rela.plt,
 * .rela.dyn): what a PLT stub or a `call [rip+GOT]` reaches. */
static int read_got(struct sctx *c)
{
	if (!c->im.have_se)
		return 0;
	Elf *elf = c->im.se.elf;
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA)
			continue;
		Elf_Scn *symscn = elf_getscn(elf, sh.sh_link);
		GElf_Shdr symsh;
		if (!symscn || !gelf_getshdr(symscn, &symsh) ||
		    (symsh.sh_type != SHT_DYNSYM && symsh.sh_type != SHT_SYMTAB))
			continue;
		Elf_Data *d = elf_getdata(scn, NULL), *sd = elf_getdata(symscn, NULL);
		size_t ent = gelf_fsize(elf, ELF_T_RELA, 1, EV_CURRENT);
		if (!d || !sd || !ent)
			continue;
		size_t n = d->d_size / ent;
		for (size_t i = 0; i < n; i++) {
			GElf_Rela rel;
			GElf_Sym sym;
			if (!gelf_getrela(d, (int)i, &rel))
				break;
			uint32_t type = (uint32_t)GELF_R_TYPE(rel.r_info);
			size_t si = GELF_R_SYM(rel.r_info);
			if ((type != c->ar->reloc_jump_slot && type != c->ar->reloc_glob_dat) || !si ||
			    !gelf_getsym(sd, (int)si, &sym))
				continue;
			const char *name = elf_strptr(elf, symsh.sh_link, sym.st_name);
			if (!name || !*name)
				continue;
			struct got_ent *p = base_grow(c->got, &cap, c->ngot + 1, sizeof(*p), 64);
			if (!p)
				return BK_E_NOMEM;
			c->got = p;
			p[c->ngot++] = (struct got_ent){ rel.r_offset, name };
		}
	}
	if (c->ngot > 1)
		qsort(c->got, c->ngot, sizeof(*c->got), cmp_got);
	return 0;
}

static const char *got_name(const struct sctx *c, uint64_t addr)
{
	size_t lo = BASE_COUNT_LT(c->got, c->ngot, addr, addr);
	return lo < c->ngot && c->got[lo].addr == addr ? c->got[lo].name : NULL;
}

/* Mark the symbols whose names say they never return: once, before any
 * lookup demangles a name. */
static int mark_noreturn_symbols(struct sctx *c)
{
	const struct sym_file *f = c->im.syms;
	if (!f || !f->nsyms)
		return 0;
	c->sym_noreturn = base_calloc(f->nsyms, 1);
	if (!c->sym_noreturn)
		return BK_E_NOMEM;
	for (size_t i = 0; i < f->nsyms; i++)
		c->sym_noreturn[i] = !f->syms[i].shown && noreturn_name(f->syms[i].name);
	return 0;
}

static bool in_plt(const struct sctx *c, uint64_t addr)
{
	const struct chk_region *rg = chk_region_of(c->im.alloc, c->im.nalloc, addr);
	return rg && rg->name && (!strncmp(rg->name, ".plt", 4) || !strcmp(rg->name, ".iplt"));
}

/* ---- Decoding ----------------------------------------------------------- */

static const struct chk_region *code_region(const struct sctx *c, uint64_t lo, uint64_t hi)
{
	const struct chk_region *rg = chk_region_of(c->im.exec, c->im.nexec, lo);
	return rg && rg->data && hi <= rg->hi ? rg : NULL;
}

/* Decode [LO, HI) of RG into D (emptied first). */
static int decode_range(struct sctx *c, const struct chk_region *rg, uint64_t lo, uint64_t hi,
			struct decoded *d)
{
	d->n = d->nmop = 0;
	uint64_t pos = lo;
	while (pos < hi) {
		if (d->n >= SK_MAX_INSNS)
			return BK_E_LIMIT;
		struct sk_insn *in = base_grow(d->in, &d->cap, d->n + 1, sizeof(*in), 256);
		if (!in)
			return BK_E_NOMEM;
		d->in = in;
		struct sk_mop *m = base_grow(d->mop, &d->capmop, d->nmop + SK_MAX_MOPS, sizeof(*m), 256);
		if (!m)
			return BK_E_NOMEM;
		d->mop = m;
		in = &d->in[d->n];
		c->ar->decode(c->dec, rg->data + (pos - rg->lo), (size_t)(hi - pos), pos, in,
			      &d->mop[d->nmop]);
		in->mop = (uint32_t)d->nmop;
		d->nmop += in->nmop;
		d->n++;
		pos += in->len;
	}
	return 0;
}

static void decoded_free(struct decoded *d)
{
	if (!d)
		return;
	base_free(d->in);
	base_free(d->mop);
	memset(d, 0, sizeof(*d));
}

static void cache_drop(struct sctx *c, struct fde_ent *fe)
{
	if (!fe->dec)
		return;
	c->cached_insns -= fe->dec->n;
	decoded_free(fe->dec);
	base_free(fe->dec);
	fe->dec = NULL;
}

/* The decoded code of FE, kept until dropped: NULL when its bytes are not
 * in the file, do not fit a bound, or memory ran out (*ERR). */
static struct decoded *decoded_of(struct sctx *c, struct fde_ent *fe, int *err)
{
	*err = 0;
	if (fe->dec)
		return fe->dec;
	const struct chk_region *rg = code_region(c, fe->lo, fe->hi);
	if (!rg) {
		*err = BK_E_NOT_FOUND;
		return NULL;
	}
	if (c->decoded_total + (fe->hi - fe->lo) > c->decode_budget) {
		/* FDEs covering the same code again and again (a damaged
		 * table): no more decoding than a few times the code */
		*err = BK_E_LIMIT;
		return NULL;
	}
	c->decoded_total += fe->hi - fe->lo;
	struct decoded *d = base_calloc(1, sizeof(*d));
	if (!d) {
		*err = BK_E_NOMEM;
		return NULL;
	}
	if ((*err = decode_range(c, rg, fe->lo, fe->hi, d))) {
		decoded_free(d);
		base_free(d);
		return NULL;
	}
	if (c->cached_insns + d->n > SK_CACHE_INSNS)
		for (size_t i = 0; i < c->nf; i++)
			if (&c->f[i] != c->current)
				cache_drop(c, &c->f[i]);
	c->cached_insns += d->n;
	fe->dec = d;
	return d;
}

static size_t index_of(const struct decoded *d, uint64_t addr)
{
	size_t lo = BASE_COUNT_LT(d->in, d->n, addr, addr);
	return lo < d->n && d->in[lo].addr == addr ? lo : SIZE_MAX;
}

static struct fde_ent *fde_starting_at(struct sctx *c, uint64_t addr)
{
	size_t lo = BASE_COUNT_LT(c->f, c->nf, lo, addr);
	return lo < c->nf && c->f[lo].lo == addr ? &c->f[lo] : NULL;
}

/* ---- Landing pads ------------------------------------------------------- */

/* The landing pads of the LSDA at FE->lsda (C++ ABI / LSB "Exception
 * Frames": lpstart encoding and pointer, type-table encoding and offset,
 * call-site encoding, table length, then (start, length, landing pad,
 * action) per call site, the first three relative to lpstart, which is
 * the function's start by default). A table that does not read is
 * ignored: the code behind it is then not reached, never guessed. */
static int read_lsda(struct sctx *c, uint32_t owner, size_t *cap)
{
	struct fde_ent *fe = &c->f[owner];
	const struct chk_region *rg = chk_region_of(c->im.alloc, c->im.nalloc, fe->lsda);
	if (!rg)
		return 0;
	size_t len = rg->hi - fe->lsda > 65536 ? 65536 : (size_t)(rg->hi - fe->lsda);
	uint8_t *bytes = base_alloc(len ? len : 1);
	if (!bytes)
		return BK_E_NOMEM;
	if (ldr_read_vaddr(c->im.ldr, fe->lsda, bytes, len)) {
		base_free(bytes);
		return 0;
	}
	struct buf b = buf_make(bytes, len);
	struct base_ptr_ctx ctx = { .sec_data = bytes, .sec_addr = fe->lsda,
				    .func_addr = fe->lo, .addr_size = 8 };
	uint8_t lp_enc, tt_enc, cs_enc;
	uint64_t lpstart = fe->lo, v, cs_len;
	int err = 0;
	if (buf_u8(&b, &lp_enc) || (lp_enc != DW_EH_PE_omit &&
				    base_read_pointer(&b, lp_enc & ~DW_EH_PE_indirect, &ctx, &lpstart)) ||
	    buf_u8(&b, &tt_enc) || (tt_enc != DW_EH_PE_omit && buf_uleb(&b, &v)) ||
	    buf_u8(&b, &cs_enc) || buf_uleb(&b, &cs_len) || cs_len > buf_left(&b)) {
		base_free(bytes);
		return 0;
	}
	struct buf t = buf_make(b.p, (size_t)cs_len);
	fe->lp_first = (uint32_t)c->nlps;
	while (buf_left(&t)) {
		uint64_t start, clen, lp, action;
		uint8_t fmt = cs_enc & 0x0f; /* offsets: the format, no application */
		if (base_read_pointer(&t, fmt, &ctx, &start) || base_read_pointer(&t, fmt, &ctx, &clen) ||
		    base_read_pointer(&t, fmt, &ctx, &lp) || buf_uleb(&t, &action))
			break;
		if (!lp || lpstart + start + clen < lpstart + start)
			continue;
		struct lp_ent *p = base_grow(c->lps, cap, c->nlps + 1, sizeof(*p), 64);
		if (!p) {
			err = BK_E_NOMEM;
			break;
		}
		c->lps = p;
		p[c->nlps++] = (struct lp_ent){ lpstart + start, lpstart + start + clen, lpstart + lp,
						owner };
	}
	fe->lp_n = (uint32_t)(c->nlps - fe->lp_first);
	base_free(bytes);
	return err;
}

static const struct lp_ent *g_lps; /* qsort's context (one file at a time, one thread) */

static int cmp_lp_addr(const void *a, const void *b)
{
	uint64_t x = g_lps[*(const uint32_t *)a].lp, y = g_lps[*(const uint32_t *)b].lp;
	return x < y ? -1 : x > y;
}

static int read_landing_pads(struct sctx *c)
{
	size_t cap = 0;
	for (size_t i = 0; i < c->nf; i++) {
		int err = c->f[i].lsda ? read_lsda(c, (uint32_t)i, &cap) : 0;
		if (err)
			return err;
		if (c->nlps > UINT32_MAX / 2)
			return BK_E_LIMIT;
	}
	c->lp_by_addr = base_alloc((c->nlps ? c->nlps : 1) * sizeof(uint32_t));
	if (!c->lp_by_addr)
		return BK_E_NOMEM;
	for (size_t i = 0; i < c->nlps; i++)
		c->lp_by_addr[i] = (uint32_t)i;
	g_lps = c->lps;
	if (c->nlps > 1)
		qsort(c->lp_by_addr, c->nlps, sizeof(uint32_t), cmp_lp_addr);
	return 0;
}

/* The first index of lp_by_addr whose landing pad is at or above ADDR. */
static size_t lp_lower_bound(const struct sctx *c, uint64_t addr)
{
	size_t lo = 0, hi = c->nlps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->lps[c->lp_by_addr[mid]].lp < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The landing pad of a call at ADDR in FE, or 0. */
static uint64_t landing_pad(const struct sctx *c, const struct fde_ent *fe, uint64_t addr)
{
	for (uint32_t i = 0; i < fe->lp_n; i++) {
		const struct lp_ent *l = &c->lps[fe->lp_first + i];
		if (addr >= l->cs_lo && addr < l->cs_hi)
			return l->lp;
	}
	return 0;
}

/* The registers IN writes (bit = abstract register), and whether it
 * stores to memory. */
static uint64_t insn_writes(const struct decoded *d, const struct sk_insn *in, bool *stores)
{
	uint64_t w = in->clobber;
	*stores = false;
	for (unsigned k = 0; k < in->nmop; k++) {
		const struct sk_mop *m = &d->mop[in->mop + k];
		if (m->kind == SK_MOP_STORE)
			*stores = true;
		else if (m->kind != SK_MOP_CMP && m->dst < 64)
			w |= 1ull << m->dst;
		if (m->kind == SK_MOP_XCHG && m->src < 64)
			w |= 1ull << m->src;
	}
	return w;
}

static uint64_t reg_bit(uint8_t r)
{
	return r < 64 ? 1ull << r : 0;
}

/* ---- Does a callee return? ---------------------------------------------- */

static bool callee_noreturn(struct sctx *c, const struct sk_insn *in, bool scan_callees);

/* Known by name or already decided, no decoding. */
static bool target_noreturn_known(struct sctx *c, uint64_t target, bool via_mem)
{
	if (!target)
		return false;
	if (via_mem) {
		const char *n = got_name(c, target);
		return n && noreturn_name(n);
	}
	struct sym_symbol *s = chk_image_sym_at(&c->im, target);
	if (s && c->sym_noreturn && c->sym_noreturn[s - c->im.syms->syms])
		return true;
	if (in_plt(c, target)) {
		/* The stub's `jmp [rip+GOT]` (after endbr64 / bnd), within 3; AArch64's
	 * `br x17` after adrp, ldr, add. */
		const struct chk_region *rg = chk_region_of(c->im.exec, c->im.nexec, target);
		uint64_t pos = target;
		for (int k = 0; k < 4 && rg && rg->data && pos < rg->hi; k++) {
			struct sk_insn si;
			struct sk_mop sm[SK_MAX_MOPS];
			c->ar->decode(c->dec, rg->data + (pos - rg->lo), (size_t)(rg->hi - pos), pos,
				      &si, sm);
			if (si.flow == SK_IJUMP && si.target) {
				const char *n = got_name(c, si.target);
				return n && noreturn_name(n);
			}
			if (si.flow != SK_FALL)
				break;
			pos += si.len;
		}
		return false;
	}
	struct fde_ent *fe = fde_starting_at(c, target);
	return fe && fe->verdict == NR_NORETURN;
}

/* Whether a path from FE's entry leaves it by returning (ret, a tail call
 * to something that may return, an indirect jump): NR_RETURNS or
 * NR_NORETURN. Callees' verdicts by name or as already decided. */
static uint8_t scan_verdict(struct sctx *c, struct fde_ent *fe)
{
	int err;
	struct decoded *d = decoded_of(c, fe, &err);
	if (!d || !d->n)
		return NR_RETURNS;
	if (c->scan_cap < d->n) {
		uint8_t *p = base_realloc(c->scan_seen, d->n);
		if (!p)
			return NR_RETURNS;
		c->scan_seen = p;
		c->scan_cap = d->n;
	}
	memset(c->scan_seen, 0, d->n);
	/* Depth-first over instruction indices; the stack is the list of
	 * block starts still to visit, kept in the same array as a mark 2. */
	size_t *todo = base_alloc(d->n * sizeof(*todo));
	if (!todo)
		return NR_RETURNS;
	size_t ntodo = 0;
	todo[ntodo++] = 0;
	c->scan_seen[0] = 1;
	uint8_t verdict = NR_NORETURN;
	while (ntodo && verdict == NR_NORETURN) {
		size_t j = todo[--ntodo];
		for (;;) {
			const struct sk_insn *in = &d->in[j];
			bool next = false;
			uint64_t t = 0;
			switch (in->flow) {
			case SK_FALL: next = true; break;
			case SK_CALL:
				next = !callee_noreturn(c, in, false);
				t = fe->lp_n ? landing_pad(c, fe, in->addr) : 0;
				break;
			case SK_BRANCH: next = true; t = in->target; break;
			case SK_JUMP: t = in->target; break;
			case SK_RET: verdict = NR_RETURNS; break;
			case SK_IJUMP:
				if (!(in->target && target_noreturn_known(c, in->target, true)))
					verdict = NR_RETURNS;
				break;
			default: break;
			}
			if (t) {
				size_t k = t >= fe->lo && t < fe->hi ? index_of(d, t) : SIZE_MAX;
				if (k != SIZE_MAX) {
					if (!c->scan_seen[k]) {
						c->scan_seen[k] = 1;
						todo[ntodo++] = k;
					}
				} else if (t < fe->lo || t >= fe->hi) {
					if (!target_noreturn_known(c, t, false))
						verdict = NR_RETURNS; /* a tail call */
				}
			}
			if (!next || verdict != NR_NORETURN || j + 1 >= d->n || c->scan_seen[j + 1])
				break;
			c->scan_seen[++j] = 1;
		}
	}
	base_free(todo);
	/* The registers a small leaf writes, for its callers (call_effects):
	 * no call, no jump out, nothing undecoded. */
	if (d->n <= 256) {
		uint64_t w = 0;
		bool ok = true;
		for (size_t i = 0; i < d->n && ok; i++) {
			const struct sk_insn *in = &d->in[i];
			bool stores;
			ok = in->flow != SK_CALL && in->flow != SK_IJUMP && in->flow != SK_BAD &&
			     !(in->flow == SK_JUMP && (in->target < fe->lo || in->target >= fe->hi));
			w |= insn_writes(d, in, &stores);
		}
		fe->writes = w;
		fe->writes_known = ok;
	}
	return verdict;
}

/* Whether the call IN never returns. SCAN_CALLEES: a callee of this file
 * not decided yet is decided now (one level: its own callees are not). */
static bool callee_noreturn(struct sctx *c, const struct sk_insn *in, bool scan_callees)
{
	if (in->call_next)
		return false;
	if (target_noreturn_known(c, in->target, in->via_mem))
		return true;
	if (!scan_callees || in->via_mem || !in->target)
		return false;
	struct fde_ent *fe = fde_starting_at(c, in->target);
	if (!fe || fe->verdict != NR_UNKNOWN)
		return false;
	fe->verdict = NR_BUSY;
	fe->verdict = scan_verdict(c, fe);
	return fe->verdict == NR_NORETURN;
}

/* The call-clobbered registers the callee of IN is known never to write
 * (a small leaf of this file decided by callee_noreturn's scan). */
static uint64_t callee_keeps(struct sctx *c, const struct sk_insn *in)
{
	if (in->via_mem || !in->target)
		return 0;
	struct fde_ent *fe = fde_starting_at(c, in->target);
	return fe && fe->writes_known ? c->ar->call_clobbered & ~fe->writes : 0;
}

/* ---- Transfer ----------------------------------------------------------- */

static struct sk_val rv(const struct state *st, uint8_t r)
{
	return r < SK_NREGS ? st->r[r] : v_unknown;
}

/* base + disp (+ index * scale) of memory operand M (not SK_MEM_FAR) into
 * *A: true when that is the whole value (no index, or a constant one);
 * false with *A = base + disp and *IX the index's value otherwise. */
static bool mem_linear(const struct state *st, const struct sk_mem *m, struct sk_val *a,
		       struct sk_val *ix)
{
	*a = v_add(m->base == SK_NONE ? vk(V_CONST, 0) : rv(st, m->base), m->disp);
	if (m->index == SK_NONE)
		return true;
	*ix = rv(st, m->index);
	if (ix->kind != V_CONST)
		return false;
	*a = v_add(*a, ix->off * m->scale);
	return true;
}

/* The address a memory operand names. */
static struct sk_val addr_of(const struct state *st, const struct sk_mem *m)
{
	if (m->base == SK_MEM_FAR)
		return v_new(false);
	struct sk_val a, ix;
	if (mem_linear(st, m, &a, &ix))
		return a;
	if (a.kind == V_UNKNOWN || ix.kind == V_UNKNOWN)
		return v_unknown;
	return v_stack(a) || a.kind == V_DYN ? v_unknown : v_new(false);
}

/* Whether memory operand A is B, compared right before (the registers it
 * names are unchanged since: the compare's flags survived, and the bound
 * is for the next instruction only), so its bytes are the ones compared. */
static bool same_operand(const struct state *st, const struct sk_mem *a, const struct sk_mem *b,
			 struct sk_val base, struct sk_val index)
{
	return a->base == b->base && a->index == b->index && a->scale == b->scale &&
	       a->disp == b->disp && a->size == b->size && v_eq(rv(st, a->base), base) &&
	       v_eq(rv(st, a->index), index);
}

/* The smallest and largest of the SIZE-byte entries LO..HI (signed or
 * not) of the table at ADDR, when the table's bytes in the file are its
 * bytes at run time (a section neither writable nor NOBITS): true with
 * *MIN and *MAX. */
static bool table_range(struct sctx *c, uint64_t addr, unsigned size, bool sign, uint64_t lo,
			uint64_t hi, int64_t *min, int64_t *max)
{
	if (!size || size > 8 || lo > hi || hi >= SK_MAX_TABLE)
		return false;
	uint64_t start = addr + lo * size, len = (hi - lo + 1) * size;
	const struct chk_region *rg = chk_region_of(c->im.alloc, c->im.nalloc, start);
	if (!rg || !rg->constant || start + len < start || start + len > rg->hi)
		return false;
	uint8_t buf[512];
	*min = INT64_MAX;
	*max = INT64_MIN;
	for (uint64_t done = 0; done < len;) {
		size_t n = len - done > sizeof(buf) ? sizeof(buf) : (size_t)(len - done);
		if (ldr_read_vaddr(c->im.ldr, start + done, buf, n))
			return false;
		for (size_t i = 0; i < n; i += size) {
			uint64_t x = base_rd_le(buf + i, size);
			int64_t v;
			if (sign && size < 8) {
				unsigned sh = 64 - 8 * size;
				v = (int64_t)(x << sh) >> sh;
			} else {
				v = (int64_t)x;
			}
			*min = v < *min ? v : *min;
			*max = v > *max ? v : *max;
		}
		done += n;
	}
	return true;
}

/* What V says of a table index: its interval [*LO, *HI] and whether the
 * bound is the table's own (*FRESH: a compare right before, or read from
 * a table indexed so). BOUNDED whole; a table's entry (the values the
 * entries hold: a class byte read from one table indexes the next); a
 * byte zero-extended (0..255, its type's range: never fresh). */
static bool index_bound(struct sctx *c, struct sk_val v, uint64_t *lo, uint64_t *hi, bool *fresh)
{
	if (v.kind == V_BOUNDED && v.reg == 8) {
		*lo = (uint64_t)v.off;
		*hi = v.aux;
		*fresh = (v.flags & VF_FRESH) != 0;
		return true;
	}
	if (v.kind == V_TABLE && !(v.reg & (VT_REL | VT_ANCH)) && (v.reg & VT_SIZE) &&
	    (v.reg & VT_SIZE) <= 4 && !(v.flags & VTF_SHIFT)) {
		int64_t mn, mx;
		if (!table_range(c, (uint64_t)v.off, v.reg & VT_SIZE, (v.reg & VT_SIGNED) != 0, 0, v.aux,
				 &mn, &mx) || mn < 0 || mx > (int64_t)UINT32_MAX)
			return false;
		*lo = (uint64_t)mn;
		*hi = (uint64_t)mx;
		*fresh = !(v.flags & VTF_CHECK);
		return true;
	}
	if (v.kind == V_NEW && (v.flags & VF_B1)) {
		*lo = 0;
		*hi = 255;
		*fresh = false;
		return true;
	}
	return false;
}

/* A table's entry plus an address (ADD, or lea's base + index): the table's
 * own address makes a jump target (entries relative to the table), another
 * an anchored target (relative to a label: vfprintf's computed gotos;
 * AArch64's `adr`; a shifted index). NULL-kind result: neither. */
static struct sk_val anchored(struct sctx *c, struct sk_val t, int64_t anchor);

static struct sk_val table_plus(struct sctx *c, struct sk_val t, struct sk_val addr)
{
	if (t.kind != V_TABLE || addr.kind != V_CONST || (t.reg & (VT_REL | VT_ANCH)))
		return v_unknown;
	if (!(t.reg & VT_SIZE))
		return v_add(t, addr.off); /* a shifted index over a base */
	if (!(t.flags & VTF_SHIFT) && addr.off == t.off) {
		t.reg |= VT_REL;
		return t;
	}
	return anchored(c, t, addr.off);
}

/* The value of `lea dst, MEM`. An index register that is no constant:
 * into the stack pointer, a run-time amount (alloca); a table's entry or a
 * bounded index over a constant base, a jump target (table_plus);
 * elsewhere an address at an unknown offset, no caller's value unless its
 * parts may be. */
static struct sk_val lea(struct sctx *c, const struct state *st, const struct sk_mem *m,
			 bool to_sp)
{
	if (m->base == SK_MEM_FAR)
		return v_unknown;
	struct sk_val a, ix;
	if (mem_linear(st, m, &a, &ix))
		return a;
	if (to_sp)
		return v_stack(a) || a.kind == V_DYN ? vk(V_DYN, 0) : v_unknown;
	if (a.kind == V_CONST && ix.kind == V_TABLE && m->scale == 1) {
		struct sk_val t = table_plus(c, ix, a);
		if (t.kind == V_TABLE)
			return t;
	}
	uint64_t lo, hi;
	bool fresh;
	if (a.kind == V_CONST && ix.kind == V_BOUNDED && index_bound(c, ix, &lo, &hi, &fresh)) {
		/* base + index * scale: a computed jump into blocks (or an
		 * element's address: NEW all the same) */
		return (struct sk_val){ a.off, (uint32_t)hi, V_TABLE, 0,
					(uint8_t)(__builtin_ctz(m->scale) | VTF_CHECK), 0 };
	}
	return v_undecided(a) || v_undecided(ix) ? v_unknown : v_new(false);
}

static struct sk_val load(struct sctx *c, const struct state *st, const struct sk_mop *m)
{
	const struct sk_arch *ar = c->ar;
	const struct sk_mem *mm = &m->mem;
	if (st->mb.valid && !(m->flags & SK_F_SIGNED) && same_operand(st, mm, &st->mb.mem, st->mb.base,
									st->mb.index))
		return (struct sk_val){ 0, st->mb.bound, V_BOUNDED, 8, VF_Z | VF_FRESH, 0 };
	if (mm->size && mm->size <= 8 && !(mm->size & (mm->size - 1)) && mm->base != SK_MEM_FAR &&
	    (mm->index == SK_NONE ? mm->size == 4 && (m->flags & SK_F_SIGNED) &&
				    (ar->table_sizes & 4)
				  : mm->scale == mm->size)) {
		/* A table's entry: a constant table address and a bounded
		 * index (or none: one entry, a switch on a constant). */
		struct sk_val b = mm->base == SK_NONE ? vk(V_CONST, 0) : rv(st, mm->base);
		struct sk_val ix = mm->index == SK_NONE ? vk(V_CONST, 0) : rv(st, mm->index);
		uint64_t lo = 0, hi = 0;
		bool fresh = true;
		uint64_t tab = (uint64_t)b.off + (uint64_t)mm->disp;
		if (ix.kind == V_CONST && mm->index != SK_NONE) {
			/* a constant index (a switch on a value the code fixed:
			 * zlib's inflateBack starts with `mov eax, 0x3f3f; sub eax,
			 * 0x3f3f`): that one entry, by its address (an entry
			 * relative to the table is then anchored at the table);
			 * read only if it names an instruction of the function
			 * (the path may be one no value takes) */
			tab += (uint64_t)ix.off * mm->size;
			fresh = false;
		}
		if (b.kind == V_CONST &&
		    (ix.kind == V_CONST || index_bound(c, ix, &lo, &hi, &fresh)) &&
		    hi < SK_MAX_TABLE) {
			int64_t mn, mx;
			if (ar->table_sizes & mm->size)
				/* a jump table's (an unsigned one of small
				 * entries also indexes the next table) */
				return (struct sk_val){ (int64_t)tab, (uint32_t)hi, V_TABLE,
							(uint8_t)(mm->size | (m->flags & SK_F_SIGNED
									      ? VT_SIGNED : 0)),
							(uint8_t)(fresh ? 0 : VTF_CHECK), 0 };
			if (!(m->flags & SK_F_SIGNED) && mm->size <= 4 &&
			    table_range(c, tab, mm->size, false, lo, hi, &mn, &mx) && mx <= UINT32_MAX)
				/* a small table's: what its entries hold (vfprintf's
				 * class of a format character) */
				return (struct sk_val){ mn, (uint32_t)mx, V_BOUNDED, 8,
							(uint8_t)(VF_Z | (fresh ? VF_FRESH : 0)), 0 };
		}
	}
	if (mm->size != 8) {
		/* zero-extended bytes: only the low SIZE may be non-zero (no
		 * bound on the value for a table: the compiler may size one
		 * by a range it knows from the type, which is smaller) */
		struct sk_val v = v_new(!(m->flags & SK_F_SIGNED));
		if (!(m->flags & SK_F_SIGNED))
			v.flags |= mm->size == 1 ? VF_B1 : mm->size == 2 ? VF_B2 : 0;
		return v;
	}
	struct sk_val a = addr_of(st, mm);
	if (v_stack(a))
		return slot_load(st, v_base(a), a.off, 8);
	/* Through a pointer that is no frame address (the heap, globals, the
	 * caller's frame): not this frame's save slots, so not a value saved
	 * there. An address that may be one (unknown, or the frame at a
	 * run-time offset) gives anything. */
	return a.kind == V_UNKNOWN || a.kind == V_DYN ? v_unknown : v_new(false);
}

static void store(struct state *st, const struct sk_mem *mm, struct sk_val v, bool pushed)
{
	struct sk_val a = addr_of(st, mm);
	if (v_stack(a))
		slot_store(st, v_base(a), a.off, mm->size ? mm->size : 8, v, pushed);
}

/* A value written to the stack pointer: what cannot be followed is unknown
 * (never NEW: that would claim it is no frame address). */
static struct sk_val sp_value(struct sk_val v)
{
	return v.kind == V_NEW || v.kind == V_TABLE || v.kind == V_BOUNDED ? v_unknown : v;
}

static void set_reg(const struct sk_arch *ar, struct state *st, uint8_t r, struct sk_val v)
{
	if (r >= SK_NREGS)
		return;
	st->r[r] = r == ar->sp ? sp_value(v) : v;
}

/* Realignment: rsp & IMM. ID names the anchor this instruction makes. */
static struct sk_val align_sp(const struct sk_arch *ar, struct sk_val v, int64_t imm, uint32_t id,
			      bool *rebased)
{
	uint64_t align = (uint64_t)-imm;
	*rebased = false;
	if (imm >= 0 || (align & (align - 1)))
		return v_unknown; /* not a power-of-two alignment */
	if (v.kind == V_CFA && align <= ar->stack_align)
		return vk(V_CFA, v.off & imm); /* the CFA is a multiple of stack_align */
	if (v.kind == V_CFA || v.kind == V_ANCHOR) {
		*rebased = true;
		struct sk_val a = { 0, id, V_ANCHOR, 0, 0, 0 };
		return a;
	}
	return v.kind == V_DYN ? v : v_unknown;
}

/* Whether anything in ST refers to anchor ID (an `and` run again). */
static bool uses_anchor(const struct state *st, unsigned nregs, uint32_t id)
{
	for (unsigned r = 0; r < nregs; r++)
		if (st->r[r].kind == V_ANCHOR && st->r[r].aux == id)
			return true;
	for (unsigned i = 0; i < st->nslots; i++)
		if (st->s[i].base == id || (st->s[i].v.kind == V_ANCHOR && st->s[i].v.aux == id))
			return true;
	return false;
}

/* An anchored jump table: TABLE entry T (shifted) + ANCHOR, by its index
 * in c->anch (the same table and anchor: the same index). */
static struct sk_val anchored(struct sctx *c, struct sk_val t, int64_t anchor)
{
	struct anch_table e;
	memset(&e, 0, sizeof(e)); /* compared with memcmp: no stray padding */
	e.table = (uint64_t)t.off;
	e.anchor = (uint64_t)anchor;
	e.bound = t.aux;
	e.size = (uint8_t)(t.reg & VT_SIZE);
	e.shift = t.flags & VTF_SHIFT;
	e.sign = (t.reg & VT_SIGNED) != 0;
	e.check = (t.flags & VTF_CHECK) != 0;
	unsigned k = c->nanch;
	while (k-- > 0 && memcmp(&c->anch[k], &e, sizeof(e)))
		;
	if (k == UINT_MAX) {
		k = c->nanch;
		if (k == SK_MAX_ANCH)
			return v_new(false); /* not resolved: an unresolved jump */
		c->anch[c->nanch++] = e;
	}
	return (struct sk_val){ anchor, k, V_TABLE, VT_ANCH, 0, 0 };
}

/* Pointer authentication of a return address (SK_MOP_SIGN, SK_MOP_AUTH):
 * a caller's value signed with the CFA as the modifier (what the unwinder
 * authenticates with) is the signed caller's value; authenticated (or
 * stripped) it is the caller's value again. What is signed otherwise, or
 * authenticated unsigned, is not followed. */
static struct sk_val pac(const struct state *st, const struct sk_mop *m)
{
	struct sk_val v = rv(st, m->dst);
	if (v.kind != V_CALLER)
		return v_undecided(v) ? v_unknown : v_new(false);
	if (m->kind == SK_MOP_SIGN) {
		struct sk_val mod = rv(st, m->src);
		if ((v.flags & VF_PAC) || mod.kind != V_CFA || mod.off != 0)
			return v_unknown;
		v.flags |= VF_PAC;
		return v;
	}
	if (!(v.flags & VF_PAC))
		return m->flags & SK_F_STRIP ? v : v_unknown;
	if (!(m->flags & SK_F_STRIP)) {
		struct sk_val mod = rv(st, m->src);
		if (mod.kind != V_CFA || mod.off != 0)
			return v_unknown;
	}
	v.flags &= (uint8_t)~(VF_PAC | VF_PACPC);
	return v;
}

/* The relations after micro-operation M ran (OLD: its destination's
 * value before): a register written loses its relations, a copy gains
 * one (EQ), a swap renames, a constant added in place shifts them. */
static void rel_after(const struct sk_arch *ar, struct state *st, const struct sk_mop *m,
		      struct sk_val old)
{
	unsigned d = m->dst, s = m->src;
	bool copy = (m->kind == SK_MOP_SET && s != SK_NONE && s != d) ||
		    (m->kind == SK_MOP_ZEXT && s != d) ||
		    (m->kind == SK_MOP_ADDR && m->mem.index == SK_NONE && m->mem.base < SK_NREGS);
	if (!st->nrel && !copy)
		return;
	switch (m->kind) {
	case SK_MOP_STORE:
	case SK_MOP_CMP:
		return;
	case SK_MOP_XCHG:
		for (unsigned i = 0; i < st->nrel; i++) {
			struct rel *r = &st->rel[i];
			r->a = (uint8_t)(r->a == d ? s : r->a == s ? d : r->a);
			r->b = (uint8_t)(r->b == d ? s : r->b == s ? d : r->b);
		}
		return;
	case SK_MOP_ZEXT:
	case SK_MOP_SET:
		if (s != d)
			break;
		if (m->kind == SK_MOP_ZEXT && v_eq(old, rv(st, d)))
			return; /* zero-extended what was zero above: unchanged */
		for (unsigned i = 0; i < st->nrel;) {
			/* in place: d + imm (the low half when 32 bits wide), or
			 * d's low imm bytes */
			struct rel *r = &st->rel[i];
			unsigned w = m->kind == SK_MOP_ZEXT ? (unsigned)m->imm : m->flags & SK_F_W32 ? 4 : 8;
			if (r->kind == REL_EQ && (r->a == d || r->b == d)) {
				if (m->kind == SK_MOP_SET)
					r->k = (int64_t)((uint64_t)r->k + (uint64_t)(r->a == d ? m->imm
											: -m->imm));
				r->w = (uint8_t)(r->w < w ? r->w : w);
				i++;
			} else if (r->a == d || r->b == d) {
				rel_drop(st, r);
			} else {
				i++;
			}
		}
		return;
	default:
		break;
	}
	if (d < SK_NREGS)
		rel_kill(st, d);
	if (!copy || d == ar->sp || d >= 64 || d == SK_TMP)
		return;
	if (m->kind == SK_MOP_ADDR) {
		if (m->mem.base != ar->sp && m->mem.base != SK_TMP)
			rel_add(st, REL_EQ, d, m->mem.base, m->mem.disp, 8);
	} else if (s != ar->sp && s < 64 && s != SK_TMP) {
		rel_add(st, REL_EQ, d, s, m->kind == SK_MOP_ZEXT ? 0 : m->imm,
			m->kind == SK_MOP_ZEXT ? (unsigned)m->imm : m->flags & SK_F_W32 ? 4 : 8);
	}
}

/* DST +/- SRC (M: SK_MOP_ADD or SUB; A, B their values) when both are
 * bounded whole, or DST is a copy of a bounded value plus a constant:
 * the interval [*LO, *HI] of the result, narrowed by the relations
 * between the operands (strcmp's `lea r9, [rax + 15]; sub r9, rcx` under
 * rax < rcx: 0..14), when it lies within 0..UINT32_MAX. */
static bool diff_bound(const struct state *st, const struct sk_mop *m, struct sk_val a,
		       struct sk_val b, int64_t *lo, int64_t *hi)
{
	if (b.kind != V_BOUNDED || b.reg != 8)
		return false;
	bool sub = m->kind == SK_MOP_SUB, any = false;
	int64_t l = INT64_MIN, h = INT64_MAX;
	for (int i = -1; i < (int)st->nrel; i++) {
		/* the candidates: DST itself, and each value DST is a copy of */
		struct sk_val x = a;
		unsigned xr = m->dst;
		int64_t k = 0;
		if (i >= 0) {
			const struct rel *r = &st->rel[i];
			if (r->kind != REL_EQ || r->a != m->dst || r->w != 8 || r->b >= SK_NREGS ||
			    r->k < -(int64_t)UINT32_MAX || r->k > (int64_t)UINT32_MAX)
				continue;
			x = st->r[r->b];
			xr = r->b;
			k = r->k;
		}
		if (x.kind != V_BOUNDED || x.reg != 8)
			continue;
		int64_t cl, ch;
		if (sub) {
			cl = x.off - (int64_t)b.aux;
			ch = (int64_t)x.aux - b.off;
			if (m->src < SK_NREGS)
				rel_diff(st, xr, m->src, &cl, &ch);
		} else {
			cl = x.off + b.off;
			ch = (int64_t)x.aux + (int64_t)b.aux;
		}
		cl += k;
		ch += k;
		l = cl > l ? cl : l;
		h = ch < h ? ch : h;
		any = true;
	}
	if (!any || l < 0 || l > h || h > (int64_t)UINT32_MAX)
		return false;
	*lo = l;
	*hi = h;
	return true;
}

/* Apply one instruction's micro-operations and clobbers. Returns whether it
 * set the compare flags; *REALIGN_LOOP when an anchor is made again while
 * values of the last one live (not followed). */
static bool apply(struct sctx *c, const struct fn *f, struct state *st, size_t j,
		  bool *realign_loop)
{
	const struct sk_arch *ar = c->ar;
	const struct sk_insn *in = &f->d->in[j];
	bool setcmp = false;
	for (unsigned k = 0; k < in->nmop; k++) {
		const struct sk_mop *m = &f->d->mop[in->mop + k];
		struct sk_val a, b, old = m->kind == SK_MOP_ZEXT ? rv(st, m->dst) : v_unknown;
		switch (m->kind) {
		case SK_MOP_SET:
			a = m->src == SK_NONE ? vk(V_CONST, m->imm) : v_add(rv(st, m->src), m->imm);
			set_reg(ar, st, m->dst, m->flags & SK_F_W32 ? v_w32(a) : a);
			break;
		case SK_MOP_ADDR:
			set_reg(ar, st, m->dst, lea(c, st, &m->mem, m->dst == ar->sp));
			break;
		case SK_MOP_LOAD:
			a = load(c, st, m);
			set_reg(ar, st, m->dst, m->flags & SK_F_W32 ? v_w32(a) : a);
			break;
		case SK_MOP_STORE:
			store(st, &m->mem, m->src == SK_NONE ? v_new(false) : rv(st, m->src),
			      m->flags & SK_F_PUSH);
			break;
		case SK_MOP_NEW:
			set_reg(ar, st, m->dst, v_new(m->flags & SK_F_W32));
			break;
		case SK_MOP_UNKNOWN:
			set_reg(ar, st, m->dst, v_unknown);
			break;
		case SK_MOP_ADD:
		case SK_MOP_SUB: {
			bool add = m->kind == SK_MOP_ADD;
			a = rv(st, m->dst);
			b = rv(st, m->src);
			struct sk_val res = v_unknown;
			int64_t lo, hi;
			if (add && a.kind == V_TABLE && b.kind == V_CONST)
				res = table_plus(c, a, b); /* a jump target */
			else if (add && b.kind == V_TABLE && a.kind == V_CONST)
				res = table_plus(c, b, a);
			if (res.kind == V_TABLE) {
				/* done */
			} else if (m->dst != ar->sp && diff_bound(st, m, a, b, &lo, &hi)) {
				/* a difference or sum of bounded values */
				res = (struct sk_val){ lo, (uint32_t)hi, V_BOUNDED, 8,
						       (uint8_t)(VF_Z | ((a.flags | b.flags) & VF_MAYBE)),
						       0 };
			} else if (b.kind == V_CONST) {
				res = v_add(a, add ? b.off : (int64_t)(0 - (uint64_t)b.off));
			} else if (add && a.kind == V_CONST &&
				   (v_stack(b) || b.kind == V_CALLER || b.kind == V_CONST)) {
				res = v_add(b, a.off);
			} else if (m->dst == ar->sp) {
				/* moved by a run-time amount: alloca, a VLA */
				res = v_stack(a) || a.kind == V_DYN ? vk(V_DYN, 0) : v_unknown;
			} else if (v_undecided(a) || v_undecided(b)) {
				res = v_unknown;
			} else {
				res = v_new(false);
			}
			set_reg(ar, st, m->dst, res);
			break;
		}
		case SK_MOP_AND:
			a = rv(st, m->dst);
			if (m->dst == ar->sp && !(m->flags & SK_F_W32)) {
				bool rebased;
				uint32_t id = (uint32_t)j + 1;
				if ((a.kind == V_CFA || a.kind == V_ANCHOR) && uses_anchor(st, ar->nregs, id))
					*realign_loop = true;
				set_reg(ar, st, m->dst, align_sp(ar, a, m->imm, id, &rebased));
			} else if (a.kind == V_CONST) {
				b = vk(V_CONST, a.off & m->imm);
				set_reg(ar, st, m->dst, m->flags & SK_F_W32 ? v_w32(b) : b);
			} else if (m->imm >= 0 && (uint64_t)m->imm <= UINT32_MAX && m->dst != ar->sp) {
				/* at most the mask (and at most what it was) */
				uint64_t hi = (uint64_t)m->imm;
				if (a.kind == V_BOUNDED && a.reg == 8 && a.aux < hi)
					hi = a.aux;
				set_reg(ar, st, m->dst,
					(struct sk_val){ 0, (uint32_t)hi, V_BOUNDED, 8,
							 (uint8_t)(VF_Z | (v_undecided(a) ? VF_MAYBE : 0)), 0 });
			} else {
				b = v_undecided(a) ? v_unknown : v_new(false);
				set_reg(ar, st, m->dst, m->flags & SK_F_W32 ? v_w32(b) : b);
			}
			break;
		case SK_MOP_XCHG:
			a = rv(st, m->dst);
			b = rv(st, m->src);
			set_reg(ar, st, m->dst, b);
			set_reg(ar, st, m->src, a);
			break;
		case SK_MOP_CMOV:
			set_reg(ar, st, m->dst, v_join(rv(st, m->dst), rv(st, m->src)));
			break;
		case SK_MOP_ZEXT:
			a = rv(st, m->src);
			set_reg(ar, st, m->dst, m->flags & SK_F_SIGNED ? v_sext(a, (unsigned)m->imm)
								: v_zext(a, (unsigned)m->imm));
			break;
		case SK_MOP_SHL:
			a = rv(st, m->dst);
			if (a.kind == V_CONST) {
				a = vk(V_CONST, (int64_t)((uint64_t)a.off << (m->imm & 63)));
			} else if (a.kind == V_TABLE && !(a.reg & (VT_REL | VT_ANCH)) &&
				   ((a.reg & VT_SIZE) || !a.off) &&
				   (a.flags & VTF_SHIFT) + m->imm <= VTF_SHIFT) {
				a.flags = (uint8_t)(a.flags + m->imm); /* the entry's shift */
			} else if (a.kind == V_BOUNDED && a.reg == 8 && !(a.flags & VF_MAYBE) &&
				   m->imm <= VTF_SHIFT && m->dst != ar->sp) {
				/* an index shifted: the offset of one of equal blocks */
				a = (struct sk_val){ 0, a.aux, V_TABLE, 0, (uint8_t)(m->imm | VTF_CHECK), 0 };
			} else {
				a = v_undecided(a) || m->dst == ar->sp ? v_unknown : v_new(false);
			}
			set_reg(ar, st, m->dst, m->flags & SK_F_W32 ? v_w32(a) : a);
			break;
		case SK_MOP_SIGN:
		case SK_MOP_AUTH:
			set_reg(ar, st, m->dst, pac(st, m));
			break;
		case SK_MOP_CMP:
			st->cmp = (struct cmpfact){ .imm = m->imm, .valid = 1, .a = m->dst, .b = m->src,
						    .width = m->width, .mem = m->mem,
						    .base = rv(st, m->mem.base),
						    .index = rv(st, m->mem.index),
						    .av = rv(st, m->dst), .bv = rv(st, m->src) };
			setcmp = true;
			break;
		default:
			break;
		}
		if (st->nrel || m->kind == SK_MOP_SET || m->kind == SK_MOP_ZEXT ||
		    m->kind == SK_MOP_ADDR)
			rel_after(ar, st, m, old);
	}
	uint64_t cl = in->clobber;
	while (cl) {
		unsigned r = (unsigned)__builtin_ctzll(cl);
		cl &= cl - 1;
		set_reg(ar, st, (uint8_t)r, v_new((in->clobber32 >> r) & 1));
		if (st->nrel)
			rel_kill(st, r);
	}
	st->r[SK_TMP] = v_unknown;
	if (st->nrel)
		rel_kill(st, SK_TMP);
	return setcmp;
}

/* A call's effects on the caller's state (System V: the callee preserves
 * the callee-saved registers and the stack pointer, may write anything
 * below the stack pointer). The registers it need not preserve become
 * unknown, not new (hand-written callees keep some of them on purpose:
 * OpenSSL's AES-GCM keeps its frame register rax across an internal
 * call), except those in KEEP (a callee of this file known never to write
 * them: Rust's __rust_probestack keeps rax). Above the stack pointer, a
 * callee may write what it was given the address of: every slot that
 * holds neither a caller's value nor was written by a push (no save area
 * is ever passed) no longer holds what it held (a pointer kept there may
 * have been changed: believing it would put later stores in the wrong
 * slots), unless it is a value no callee can make a caller's (NEW). */
static void call_effects(const struct sk_arch *ar, struct state *st, uint64_t keep)
{
	uint64_t cl = ar->call_clobbered & ~keep;
	while (cl) {
		unsigned r = (unsigned)__builtin_ctzll(cl);
		cl &= cl - 1;
		st->r[r] = v_unknown;
		if (st->nrel)
			rel_kill(st, r);
	}
	struct sk_val sp = st->r[ar->sp];
	unsigned j = 0;
	for (unsigned i = 0; i < st->nslots; i++) {
		struct slot *s = &st->s[i];
		if (v_stack(sp) && s->base == v_base(sp) && s->off < sp.off)
			continue; /* below the stack pointer: the callee's frame */
		if (s->v.kind != V_CALLER && !s->pushed && !v_other(s->v)) {
			if (st->slot_default == V_UNKNOWN)
				continue;
			s->v = v_unknown;
		}
		st->s[j++] = *s;
	}
	st->nslots = (uint8_t)j;
}

/* Whether the last compare's flags still describe its operands after IN:
 * IN does not write the flags nor any register the compare read (the
 * compared ones, or the compared memory's address registers), and stores
 * nothing when memory was compared. */
static bool cmp_survives(const struct state *st, const struct decoded *d, const struct sk_insn *in)
{
	const struct cmpfact *cf = &st->cmp;
	/* A conditional branch reads the flags and writes none; kept past
	 * one for two registers compared (`cmp ecx, eax; je; ja`: both
	 * branches relate them), not for a bound: a second branch on the
	 * compare with a constant may exclude values a later table then
	 * leaves out. */
	bool branch = in->flow == SK_BRANCH && cf->a != SK_NONE && cf->b != SK_NONE;
	if (!(in->keeps_flags && in->flow == SK_FALL) && !branch)
		return false;
	bool stores;
	uint64_t w = insn_writes(d, in, &stores);
	if (cf->a == SK_NONE)
		return !stores && !(w & (reg_bit(cf->mem.base) | reg_bit(cf->mem.index)));
	return !(w & (reg_bit(cf->a) | reg_bit(cf->b)));
}

/* A conditional branch passed: the bounds learnt before it are no longer
 * fresh. A compiler that tests the index again knows a narrower range and
 * may size a later table by it; only the table right after its compare is
 * read with the compare's bound. */
static void stale_bounds(struct state *st, unsigned nregs)
{
	for (unsigned r = 0; r < nregs; r++)
		if (st->r[r].kind == V_BOUNDED)
			st->r[r].flags &= (uint8_t)~VF_FRESH;
	for (unsigned i = 0; i < st->nslots; i++)
		if (st->s[i].v.kind == V_BOUNDED)
			st->s[i].v.flags &= (uint8_t)~VF_FRESH;
}

/* The low W bytes of register R lie in [LO, HI] (HI <= UINT32_MAX) on
 * this edge: its value bounded (as tight as it was; fresh when HI is a
 * bound of this compare's, not the width's: `cmp al, 8; ja L` says
 * nothing at L of the table's size there). False when that contradicts
 * its bound: the edge cannot be taken. */
static bool bound_reg(struct state *st, unsigned r, unsigned w, uint64_t lo, uint64_t hi)
{
	if (r >= SK_NREGS)
		return true;
	struct sk_val *v = &st->r[r];
	uint8_t fresh = hi < low_max(w) ? VF_FRESH : 0;
	if (v->kind == V_BOUNDED && v->reg == 8 && v->aux <= low_max(w)) {
		/* bounded whole and fits W bytes: the compare is on the whole
		 * value */
		uint64_t l = (uint64_t)v->off > lo ? (uint64_t)v->off : lo;
		uint64_t h = v->aux < hi ? v->aux : hi;
		if (l > h)
			return false;
		v->off = (int64_t)l;
		v->aux = (uint32_t)h;
		v->flags |= fresh;
		return true;
	}
	/* The low W bytes bounded; all of them when the rest is known to
	 * be zero. */
	uint8_t bytes = v_fits(*v, w) ? 8 : (uint8_t)w;
	if (v->kind == V_NEW || v->kind == V_BOUNDED)
		*v = (struct sk_val){ (int64_t)lo, (uint32_t)hi, V_BOUNDED, bytes,
				      (uint8_t)((v->flags & VF_Z) | fresh), 0 };
	else if (v->kind == V_UNKNOWN)
		*v = (struct sk_val){ (int64_t)lo, (uint32_t)hi, V_BOUNDED, bytes,
				      (uint8_t)(VF_MAYBE | fresh), 0 };
	return true;
}

/* What a conditional branch says on one of its edges: a compare with a
 * constant bounds the register (and its copies, by their relations), or
 * the compared memory for the next instruction; a compare of two
 * registers relates them. False when the edge cannot be taken: the
 * register's bound excludes it (a path of a switch's decision tree that
 * no value follows; believing it would read a table with a bound from
 * nowhere, and the analysis must only grow with the states it joins). */
static bool refine(struct state *st, uint8_t cond, bool taken)
{
	const struct cmpfact *cf = &st->cmp;
	if (!cf->valid)
		return true;
	unsigned w = cf->width ? cf->width : 8;
	if (cf->b == SK_NONE) {
		/* the unsigned W-byte number against IMM (already that wide) */
		uint64_t imm = (uint64_t)cf->imm, lo = 0, hi = low_max(w);
		bool above = (cond == SK_COND_A && taken) || (cond == SK_COND_BE && !taken);
		bool at_least = (cond == SK_COND_AE && taken) || (cond == SK_COND_B && !taken);
		bool at_most = (cond == SK_COND_A && !taken) || (cond == SK_COND_BE && taken);
		bool below = (cond == SK_COND_AE && !taken) || (cond == SK_COND_B && taken);
		bool equal = (cond == SK_COND_E && taken) || (cond == SK_COND_NE && !taken);
		if (above && imm < hi)
			lo = imm + 1;
		else if (at_least)
			lo = imm;
		else if (at_most)
			hi = imm;
		else if (below && imm)
			hi = imm - 1;
		else if (equal)
			lo = hi = imm;
		else
			return true;
		if (hi > UINT32_MAX)
			return true;
		if (cf->a == SK_NONE) {
			if (cf->mem.base != SK_MEM_FAR && cf->mem.size == cf->width && !lo &&
			    hi < SK_MAX_TABLE)
				st->mb = (struct membound){ cf->mem, cf->base, cf->index, (uint32_t)hi, 1 };
			return true;
		}
		if (cf->a >= SK_NREGS)
			return true;
		if (!bound_reg(st, cf->a, w, lo, hi))
			return false;
		/* Its copies: the low W bytes of X = A + K (or A = X + K), so
		 * X's are A's - K, when that does not wrap. */
		for (unsigned i = 0; i < st->nrel; i++) {
			const struct rel *r = &st->rel[i];
			if (r->kind != REL_EQ || r->w < w || (r->a != cf->a && r->b != cf->a))
				continue;
			unsigned x = r->a == cf->a ? r->b : r->a;
			uint64_t d = (uint64_t)(r->a == cf->a ? -r->k : r->k) & low_max(w);
			uint64_t l2 = (lo + d) & low_max(w), h2 = (hi + d) & low_max(w);
			if (l2 <= h2 && h2 <= UINT32_MAX && x != SK_TMP && !bound_reg(st, x, w, l2, h2))
				st->r[x].flags &= (uint8_t)~VF_FRESH; /* (not its own compare) */
		}
		return true;
	}
	if (cf->a >= SK_NREGS || cf->b >= SK_NREGS)
		return true;
	/* Two registers: related as whole numbers when both fit the width
	 * compared. */
	unsigned a = cf->a, b = cf->b;
	if (w >= 8 || (v_fits(st->r[a], w) && v_fits(st->r[b], w))) {
		switch (cond) {
		case SK_COND_A: taken ? rel_order(st, b, a, true) : rel_order(st, a, b, false); break;
		case SK_COND_AE: taken ? rel_order(st, b, a, false) : rel_order(st, a, b, true); break;
		case SK_COND_B: taken ? rel_order(st, a, b, true) : rel_order(st, b, a, false); break;
		case SK_COND_BE: taken ? rel_order(st, a, b, false) : rel_order(st, b, a, true); break;
		case SK_COND_E:
			if (!taken)
				rel_ne(st, a, b);
			break;
		case SK_COND_NE:
			if (taken)
				rel_ne(st, a, b);
			break;
		default: break;
		}
	}
	/* reg == reg on this edge: an unknown side takes the known one. */
	if (w < 8 || !((cond == SK_COND_E && taken) || (cond == SK_COND_NE && !taken)))
		return true;
	struct sk_val *va = &st->r[a], *vb = &st->r[b];
	bool ka = v_stack(*va) || va->kind == V_CALLER || va->kind == V_CONST;
	bool kb = v_stack(*vb) || vb->kind == V_CALLER || vb->kind == V_CONST;
	if (va->kind == V_UNKNOWN && kb)
		*va = *vb;
	else if (vb->kind == V_UNKNOWN && ka)
		*vb = *va;
	return true;
}

/* ---- Rows ---------------------------------------------------------------- */

static int compile_rows(struct sctx *c, struct fn *f, const struct cfi_section *sec,
			const struct cfi_cie *cie, const struct cfi_fde *fde)
{
	struct cfi_machine *m = base_alloc(sizeof(*m));
	struct cfi_row *row = base_alloc(sizeof(*row));
	int err = m && row ? cfi_machine_init(m, sec, cie, fde) : BK_E_NOMEM;
	f->nrows = 0;
	while (!err) {
		if ((err = cfi_machine_next(m, row)) != 1)
			break;
		err = 0;
		struct srow *p = base_grow(f->rows, &f->caprows, f->nrows + 1, sizeof(*p), 32);
		if (!p) {
			err = BK_E_NOMEM;
			break;
		}
		f->rows = p;
		struct srow *s = &p[f->nrows++];
		s->loc = row->loc;
		s->end = row->loc_end;
		s->args_size = row->args_size;
		s->ra_sign = row->ra_sign_state;
		s->cfa = row->cfa;
		for (unsigned i = 0; i < c->ar->ncmp; i++) {
			const struct cfi_rule *r = cfi_row_rule(row, c->ar->cmp_regs[i]);
			s->col[i] = r ? *r : (struct cfi_rule){ 0 };
		}
		/* DW_CFA_register and friends name the RA column by the CIE's
		 * number: a CIE whose RA column is not the ABI's is compared
		 * through that column (cmp_regs' RA slot). */
		if (cie->ra_reg != c->ar->ra_col)
			for (unsigned i = 0; i < c->ar->ncmp; i++)
				if (c->ar->cmp_regs[i] == c->ar->ra_col) {
					const struct cfi_rule *r = cfi_row_rule(row, (unsigned)cie->ra_reg);
					s->col[i] = r ? *r : (struct cfi_rule){ 0 };
				}
	}
	base_free(m);
	base_free(row);
	return err < 0 ? err : 0;
}

static const struct srow *row_for(struct fn *f, uint64_t addr)
{
	if (f->row_at >= f->nrows || f->rows[f->row_at].loc > addr)
		f->row_at = 0;
	while (f->row_at < f->nrows && f->rows[f->row_at].end <= addr)
		f->row_at++;
	if (f->row_at < f->nrows && f->rows[f->row_at].loc <= addr)
		return &f->rows[f->row_at];
	return NULL;
}

static int cmp_index(const struct sk_arch *ar, unsigned col)
{
	for (unsigned i = 0; i < ar->ncmp; i++)
		if (ar->cmp_regs[i] == col)
			return (int)i;
	return -1;
}

/* ---- Symbolic expressions ----------------------------------------------- */

/* Evaluate a DWARF expression over the state: 0 with *OUT, or -1 when it
 * uses an operation (or a value) this cannot reduce. INITIAL: pushed
 * first (DW_CFA_expression and val_expression push the CFA). PC: the
 * instruction's address, for a breg of the PC column (the PLT's CFA). */
static int sym_eval(const struct sctx *c, const struct state *st, const struct cfi_section *sec,
		    const struct cfi_rule *rule, const struct sk_val *initial, uint64_t pc,
		    struct sk_val *out)
{
	if (rule->value < 0 || (uint64_t)rule->value > sec->len ||
	    rule->expr_len > sec->len - (uint64_t)rule->value)
		return -1;
	struct buf b = buf_make(sec->data + rule->value, rule->expr_len);
	struct sk_val stk[SK_EXPR_STACK];
	unsigned n = 0, ops = 0;
	if (initial)
		stk[n++] = *initial;
	while (buf_left(&b)) {
		struct expr_op op;
		if (++ops > SK_EXPR_OPS || expr_decode_op(&b, 0, sec->addr_size, &op))
			return -1;
		uint8_t o = op.opcode;
		struct sk_val v;
		if ((o >= DW_OP_breg0 && o <= DW_OP_breg31) || o == DW_OP_bregx) {
			unsigned reg = o == DW_OP_bregx ? (unsigned)op.operand1 : (unsigned)(o - DW_OP_breg0);
			int64_t off = (int64_t)(o == DW_OP_bregx ? op.operand2 : op.operand1);
			if (reg == c->ar->ra_col && c->ar->arch == BK_ARCH_X86_64)
				v = vk(V_CONST, (int64_t)pc); /* rip: this instruction */
			else if (sk_reg_of_dwarf(c->ar, reg) != SK_NONE)
				v = st->r[sk_reg_of_dwarf(c->ar, reg)];
			else
				return -1;
			v = v_add(v, off);
			if (n == SK_EXPR_STACK)
				return -1;
			stk[n++] = v;
			continue;
		}
		if (o >= DW_OP_lit0 && o <= DW_OP_lit31) {
			if (n == SK_EXPR_STACK)
				return -1;
			stk[n++] = vk(V_CONST, o - DW_OP_lit0);
			continue;
		}
		switch (o) {
		case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
		case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
		case DW_OP_constu: case DW_OP_consts: case DW_OP_addr:
			if (n == SK_EXPR_STACK)
				return -1;
			stk[n++] = vk(V_CONST, (int64_t)op.operand1);
			continue;
		case DW_OP_nop:
			continue;
		case DW_OP_dup:
		case DW_OP_over:
		case DW_OP_pick: {
			unsigned k = o == DW_OP_dup ? 0 : o == DW_OP_over ? 1 : (unsigned)op.operand1;
			if (k >= n || n == SK_EXPR_STACK)
				return -1;
			stk[n] = stk[n - 1 - k];
			n++;
			continue;
		}
		case DW_OP_drop:
			if (!n)
				return -1;
			n--;
			continue;
		case DW_OP_swap:
			if (n < 2)
				return -1;
			v = stk[n - 1];
			stk[n - 1] = stk[n - 2];
			stk[n - 2] = v;
			continue;
		case DW_OP_rot:
			if (n < 3)
				return -1;
			v = stk[n - 1];
			stk[n - 1] = stk[n - 2];
			stk[n - 2] = stk[n - 3];
			stk[n - 3] = v;
			continue;
		case DW_OP_plus_uconst:
			if (!n)
				return -1;
			stk[n - 1] = v_add(stk[n - 1], (int64_t)op.operand1);
			continue;
		case DW_OP_deref:
			if (!n)
				return -1;
			v = stk[n - 1];
			stk[n - 1] = v_stack(v) ? slot_load(st, v_base(v), v.off, 8) : v_unknown;
			continue;
		case DW_OP_neg:
		case DW_OP_not:
		case DW_OP_abs:
			if (!n || stk[n - 1].kind != V_CONST)
				return -1;
			v = stk[n - 1];
			v.off = o == DW_OP_neg ? (int64_t)(0 - (uint64_t)v.off) : o == DW_OP_not ? ~v.off
				: v.off < 0 ? (int64_t)(0 - (uint64_t)v.off) : v.off;
			stk[n - 1] = v;
			continue;
		default:
			break;
		}
		/* Binary operations. */
		if (n < 2)
			return -1;
		struct sk_val x = stk[n - 2], y = stk[n - 1];
		uint64_t xu = (uint64_t)x.off, yu = (uint64_t)y.off;
		bool cc = x.kind == V_CONST && y.kind == V_CONST;
		switch (o) {
		case DW_OP_plus:
			v = y.kind == V_CONST ? v_add(x, y.off) : x.kind == V_CONST ? v_add(y, x.off)
											: v_unknown;
			break;
		case DW_OP_minus:
			if (y.kind == V_CONST)
				v = v_add(x, (int64_t)(0 - yu));
			else if (x.kind == y.kind && x.kind != V_UNKNOWN && x.aux == y.aux && x.reg == y.reg &&
				 (v_stack(x) || x.kind == V_CALLER))
				v = vk(V_CONST, (int64_t)(xu - yu));
			else
				v = v_unknown;
			break;
		case DW_OP_and: v = cc ? vk(V_CONST, (int64_t)(xu & yu)) : v_unknown; break;
		case DW_OP_or: v = cc ? vk(V_CONST, (int64_t)(xu | yu)) : v_unknown; break;
		case DW_OP_xor: v = cc ? vk(V_CONST, (int64_t)(xu ^ yu)) : v_unknown; break;
		case DW_OP_mul: v = cc ? vk(V_CONST, (int64_t)(xu * yu)) : v_unknown; break;
		case DW_OP_shl: v = cc && yu < 64 ? vk(V_CONST, (int64_t)(xu << yu)) : v_unknown; break;
		case DW_OP_shr: v = cc && yu < 64 ? vk(V_CONST, (int64_t)(xu >> yu)) : v_unknown; break;
		case DW_OP_shra: v = cc && yu < 64 ? vk(V_CONST, x.off >> yu) : v_unknown; break;
		case DW_OP_eq: v = cc ? vk(V_CONST, x.off == y.off) : v_unknown; break;
		case DW_OP_ne: v = cc ? vk(V_CONST, x.off != y.off) : v_unknown; break;
		case DW_OP_ge: v = cc ? vk(V_CONST, x.off >= y.off) : v_unknown; break;
		case DW_OP_gt: v = cc ? vk(V_CONST, x.off > y.off) : v_unknown; break;
		case DW_OP_le: v = cc ? vk(V_CONST, x.off <= y.off) : v_unknown; break;
		case DW_OP_lt: v = cc ? vk(V_CONST, x.off < y.off) : v_unknown; break;
		default: return -1; /* skip, bra, div, mod, and what CFI does not allow */
		}
		n--;
		stk[n - 1] = v;
	}
	if (!n)
		return -1;
	*out = stk[n - 1];
	return 0;
}

/* ---- Comparison ---------------------------------------------------------- */

/* The value flags RA_SIGN_STATE asks of the return address (AADWARF64
 * §4.4: bit 0 signed, bit 1 with the PC as a second modifier). */
static uint8_t ra_sign_flags(uint8_t ra_sign)
{
	return (uint8_t)((ra_sign & 1 ? VF_PAC : 0) | (ra_sign & 2 ? VF_PACPC : 0));
}

static const char *ra_sign_text(uint8_t ra_sign)
{
	return ra_sign & 2 ? " (signed, PC modifier)" : ra_sign & 1 ? " (signed)" : "";
}

enum verdict { VD_OK = 0, VD_DIFF, VD_NA };

struct cmp_out {
	enum verdict v;
	enum chk_stack_reason why; /* VD_NA */
	char row[80], code[96];    /* VD_DIFF: the two sides */
};

static const char *col_name(const struct sctx *c, unsigned col, char *tmp, size_t len)
{
	if (col == c->ar->ra_col)
		return "RA";
	const char *n = c->im.arch ? arch_reg_name(c->im.arch, col) : NULL;
	if (n)
		return n;
	snprintf(tmp, len, "r%u", col);
	return tmp;
}

static const char *reg_name(const struct sctx *c, unsigned reg, char *tmp, size_t len)
{
	unsigned col = sk_dwarf_of_reg(c->ar, reg);
	if (col == 0xffff) {
		snprintf(tmp, len, "?");
		return tmp;
	}
	return col_name(c, col, tmp, len);
}

/* "rsp+16" for a register holding CFA-16, and the like. */
static void describe_val(const struct sctx *c, struct sk_val v, char *buf, size_t len)
{
	char tmp[16];
	switch (v.kind) {
	case V_UNKNOWN: snprintf(buf, len, "unknown"); return;
	case V_NEW: snprintf(buf, len, "a computed value"); return;
	case V_CALLER:
		snprintf(buf, len, "the caller's %s%+" PRId64 "%s", col_name(c, v.reg, tmp, sizeof(tmp)),
			 v.off, v.flags & VF_PAC ? " (signed)" : "");
		return;
	case V_CFA: snprintf(buf, len, "CFA%+" PRId64, v.off); return;
	case V_ANCHOR: snprintf(buf, len, "a realigned address%+" PRId64, v.off); return;
	case V_CONST: snprintf(buf, len, "0x%" PRIx64, (uint64_t)v.off); return;
	case V_DYN: snprintf(buf, len, "a run-time amount below the frame"); return;
	default: snprintf(buf, len, "a computed value"); return;
	}
}

static void rule_text(const struct sctx *c, const struct cfi_section *sec,
		      const struct cfi_rule *r, char *buf, size_t len)
{
	char tmp[16];
	switch (r->kind) {
	case BK_RULE_NONE: snprintf(buf, len, "same"); return;
	case BK_RULE_UNDEFINED: snprintf(buf, len, "undefined"); return;
	case BK_RULE_SAME_VALUE: snprintf(buf, len, "same"); return;
	case BK_RULE_OFFSET: snprintf(buf, len, "[CFA%+" PRId64 "]", r->value); return;
	case BK_RULE_VAL_OFFSET: snprintf(buf, len, "CFA%+" PRId64, r->value); return;
	case BK_RULE_REGISTER: {
		unsigned reg = sk_reg_of_dwarf(c->ar, r->reg);
		snprintf(buf, len, "%s", reg == SK_NONE ? "another register"
							: reg_name(c, reg, tmp, sizeof(tmp)));
		return;
	}
	case BK_RULE_CFA_REG_OFFSET: {
		unsigned reg = sk_reg_of_dwarf(c->ar, r->reg);
		snprintf(buf, len, "%s%+" PRId64,
			 reg == SK_NONE ? "?" : reg_name(c, reg, tmp, sizeof(tmp)), r->value);
		return;
	}
	case BK_RULE_EXPRESSION:
	case BK_RULE_VAL_EXPRESSION:
	case BK_RULE_CFA_EXPRESSION: {
		char e[64];
		if (r->value >= 0 && (uint64_t)r->value <= sec->len &&
		    r->expr_len <= sec->len - (uint64_t)r->value)
			expr_format(sec->data + r->value, r->expr_len, sec->addr_size, c->im.arch, e,
				    sizeof(e));
		else
			snprintf(e, sizeof(e), "?");
		snprintf(buf, len, r->kind == BK_RULE_EXPRESSION ? "[%s]" : "%s", e);
		return;
	}
	}
	snprintf(buf, len, "?");
}

/* Where the code has the CFA: "rsp+16", preferring REG0 (the row's). */
static void code_cfa(const struct sctx *c, const struct state *st, unsigned reg0, char *buf,
		     size_t len)
{
	char tmp[16];
	unsigned order[SK_NREGS + 2], n = 0;
	if (reg0 < SK_NREGS)
		order[n++] = reg0;
	order[n++] = c->ar->sp;
	order[n++] = c->ar->fp;
	for (unsigned r = 0; r < c->ar->nregs; r++)
		order[n++] = r;
	for (unsigned i = 0; i < n; i++)
		if (st->r[order[i]].kind == V_CFA) {
			snprintf(buf, len, "%s%+" PRId64, reg_name(c, order[i], tmp, sizeof(tmp)),
				 -st->r[order[i]].off);
			return;
		}
	char v[64];
	describe_val(c, st->r[c->ar->sp], v, sizeof(v));
	snprintf(buf, len, "? (%s is %s)", reg_name(c, c->ar->sp, tmp, sizeof(tmp)), v);
}

/* Where the code keeps COL's caller value: "rbx", "[CFA-16]", joined by
 * "|"; "lost" when nowhere. */
static void code_col(const struct sctx *c, const struct state *st, unsigned col, char *buf,
		     size_t len)
{
	char tmp[16];
	size_t used = 0;
	buf[0] = 0;
	struct sk_val want = col == sk_dwarf_of_reg(c->ar, c->ar->sp) ? vk(V_CFA, 0) : v_caller(col);
	struct sk_val signd = want;
	signd.flags |= VF_PAC;
	for (unsigned r = 0; r < c->ar->nregs && used < len; r++)
		if (v_eq(st->r[r], want) || v_eq(st->r[r], signd))
			used += (size_t)snprintf(buf + used, len - used, "%s%s%s", used ? "|" : "",
						 sk_dwarf_of_reg(c->ar, r) == col ? "same"
									       : reg_name(c, r, tmp, sizeof(tmp)),
						 st->r[r].flags & VF_PAC ? " (signed)" : "");
	for (unsigned i = 0; i < st->nslots && used < len; i++)
		if (v_eq(st->s[i].v, want) || v_eq(st->s[i].v, signd))
			used += (size_t)snprintf(buf + used, len - used, "%s[%s%+" PRId64 "]%s",
						 used ? "|" : "", st->s[i].base ? "A" : "CFA",
						 st->s[i].off, st->s[i].v.flags & VF_PAC ? " (signed)" : "");
	if (!used)
		snprintf(buf, len, "lost");
}

/* Whether ROW gives the stack pointer's column a rule of its own (the
 * caller's SP is then that rule's value, not the CFA: GHC's StgRun has
 * CFA = rsp+0, its saves at CFA+16384.., and rsp = rsp+16440). */
static bool sp_has_rule(const struct sctx *c, const struct srow *row)
{
	int i = cmp_index(c->ar, sk_dwarf_of_reg(c->ar, c->ar->sp));
	return i >= 0 && row->col[i].kind != BK_RULE_NONE && row->col[i].kind != BK_RULE_SAME_VALUE &&
	       row->col[i].kind != BK_RULE_UNDEFINED;
}

/* The CFA rule against the state. *BASE: the CFA's distance from the
 * caller's SP the other rules are evaluated with (0; another offset only
 * when the stack pointer's column has a rule of its own, which is then
 * what must give the caller's SP). */
static void compare_cfa(struct sctx *c, const struct state *st, const struct cfi_section *sec,
			const struct srow *row, uint64_t pc, struct cmp_out *out, int64_t *base)
{
	struct sk_val v;
	unsigned reg0 = SK_NONE;
	out->v = VD_OK;
	*base = 0;
	if (row->cfa.kind == BK_RULE_CFA_REG_OFFSET) {
		reg0 = sk_reg_of_dwarf(c->ar, row->cfa.reg);
		if (reg0 == SK_NONE) {
			out->v = VD_NA;
			out->why = CHK_SR_EXPRESSION;
			return;
		}
		v = v_add(st->r[reg0], row->cfa.value);
	} else if (row->cfa.kind == BK_RULE_CFA_EXPRESSION) {
		if (sym_eval(c, st, sec, &row->cfa, NULL, pc, &v)) {
			out->v = VD_NA;
			out->why = CHK_SR_EXPRESSION;
			return;
		}
	} else {
		out->v = VD_NA;
		out->why = CHK_SR_BAD_CFI;
		return;
	}
	if (v.kind == V_CFA && v.off == 0)
		return;
	if (v.kind == V_CFA && sp_has_rule(c, row)) {
		*base = v.off; /* a CFA that is not the caller's SP, by the row's own say */
		return;
	}
	if (v_undecided(v)) {
		out->v = VD_NA;
		out->why = row->cfa.kind == BK_RULE_CFA_EXPRESSION ? CHK_SR_EXPRESSION
								   : CHK_SR_UNKNOWN_STATE;
		return;
	}
	if (v.kind == V_ANCHOR) {
		out->v = VD_NA;
		out->why = CHK_SR_REALIGNED;
		return;
	}
	if (v_other(v) || v.kind == V_CONST) {
		/* A computed value or a constant may still be a frame address
		 * by a contract the code does not show (libffi's
		 * ffi_call_unix64 describes its frame in the buffer its caller
		 * passes); compilers base the CFA on frame addresses only. */
		out->v = VD_NA;
		out->why = CHK_SR_UNKNOWN_STATE;
		return;
	}
	out->v = VD_DIFF;
	rule_text(c, sec, &row->cfa, out->row, sizeof(out->row));
	code_cfa(c, st, reg0, out->code, sizeof(out->code));
}

/* Whether location LOC_VAL (a register's value or a slot's) holds WANT. */
static enum verdict holds(struct sk_val have, struct sk_val want)
{
	if (v_eq(have, want))
		return VD_OK;
	return v_undecided(have) ? VD_NA : VD_DIFF;
}

/* One compared column's rule against the state, the CFA at BASE from the
 * caller's SP (compare_cfa). */
static void compare_col(struct sctx *c, const struct state *st, const struct cfi_section *sec,
			const struct srow *row, unsigned i, uint64_t pc, int64_t base,
			struct cmp_out *out)
{
	const struct sk_arch *ar = c->ar;
	unsigned col = ar->cmp_regs[i];
	const struct cfi_rule *r = &row->col[i];
	bool is_sp = col == sk_dwarf_of_reg(ar, ar->sp);
	struct sk_val want = is_sp ? vk(V_CFA, 0) : v_caller(col);
	struct sk_val cfa = vk(V_CFA, base), v;
	int64_t at;
	if (col == ar->ra_col)
		want.flags |= ra_sign_flags(row->ra_sign); /* RA_SIGN_STATE */
	out->v = VD_OK;
	switch (r->kind) {
	case BK_RULE_NONE:
	case BK_RULE_SAME_VALUE:
		if (is_sp) {
			/* The caller's SP is the CFA unless a rule says so. */
			return;
		}
		if (col == ar->ra_col && sk_ra_reg(ar) == SK_NONE) {
			out->v = VD_NA; /* the RA column is no register here */
			out->why = CHK_SR_BAD_CFI;
			return;
		}
		out->v = holds(st->r[sk_reg_of_dwarf(ar, col)], want);
		break;
	case BK_RULE_UNDEFINED:
		return; /* claims nothing */
	case BK_RULE_OFFSET:
		if (__builtin_add_overflow(base, r->value, &at)) {
			out->v = VD_NA;
			out->why = CHK_SR_BAD_CFI;
			return;
		}
		out->v = holds(slot_load(st, 0, at, 8), want);
		break;
	case BK_RULE_VAL_OFFSET:
		if (__builtin_add_overflow(base, r->value, &at)) {
			out->v = VD_NA;
			out->why = CHK_SR_BAD_CFI;
			return;
		}
		out->v = holds(vk(V_CFA, at), want);
		break;
	case BK_RULE_REGISTER: {
		unsigned reg = sk_reg_of_dwarf(ar, r->reg);
		if (reg == SK_NONE) {
			out->v = VD_NA;
			out->why = CHK_SR_EXPRESSION;
			return;
		}
		out->v = holds(st->r[reg], want);
		break;
	}
	case BK_RULE_EXPRESSION:
		if (sym_eval(c, st, sec, r, &cfa, pc, &v)) {
			out->v = VD_NA;
			out->why = CHK_SR_EXPRESSION;
			return;
		}
		if (v_stack(v))
			out->v = holds(slot_load(st, v_base(v), v.off, 8), want);
		else if (v.kind == V_CALLER)
			out->v = VD_DIFF; /* memory off a register that holds the caller's value */
		else {
			out->v = VD_NA;
			out->why = CHK_SR_EXPRESSION;
			return;
		}
		break;
	case BK_RULE_VAL_EXPRESSION:
		if (sym_eval(c, st, sec, r, &cfa, pc, &v)) {
			out->v = VD_NA;
			out->why = CHK_SR_EXPRESSION;
			return;
		}
		out->v = holds(v, want);
		break;
	default:
		out->v = VD_NA;
		out->why = CHK_SR_BAD_CFI;
		return;
	}
	if (out->v == VD_NA)
		out->why = CHK_SR_UNKNOWN_STATE;
	if (out->v == VD_DIFF) {
		rule_text(c, sec, r, out->row, sizeof(out->row));
		if (col == ar->ra_col && row->ra_sign)
			snprintf(out->row + strlen(out->row), sizeof(out->row) - strlen(out->row),
				 "%s", ra_sign_text(row->ra_sign));
		code_col(c, st, col, out->code, sizeof(out->code));
	}
}

/* ---- Findings ------------------------------------------------------------ */

static struct chk_stack_finding *new_finding(struct sctx *c, bool difference)
{
	struct chk_stack_report *r = c->r;
	size_t *kept = difference ? &c->kept_diffs : &c->kept_give_ups;
	if (*kept >= c->max_findings) {
		r->suppressed++;
		return NULL;
	}
	(*kept)++;
	struct chk_stack_finding *p = base_grow(r->f, &r->capf, r->nf + 1, sizeof(*p), 16);
	if (!p) {
		c->nomem = BK_E_NOMEM;
		return NULL;
	}
	r->f = p;
	struct chk_stack_finding *f = &p[r->nf];
	memset(f, 0, sizeof(*f));
	return f;
}

static char *dup_or_fail(struct sctx *c, const char *s)
{
	char *d = base_strdup(s ? s : "");
	if (!d)
		c->nomem = BK_E_NOMEM;
	return d;
}

static void finding_where(struct sctx *c, const struct fn *f, struct chk_stack_finding *fd,
			  uint64_t addr)
{
	fd->addr = addr;
	fd->fde_lo = f->fe->lo;
	fd->fde_hi = f->fe->hi;
	fd->section = sec_names[f->fe->k];
	fd->fde_off = f->fe->off;
	struct sym_symbol *s = chk_image_sym(&c->im, addr);
	const char *name = chk_image_sym_name(&c->im, s);
	if (name) {
		fd->symbol = dup_or_fail(c, name);
		fd->sym_off = addr - s->start;
	}
}

static void add_difference(struct sctx *c, const struct fn *f, size_t j, const char *row,
			   const char *code, const char *detail)
{
	const struct sk_insn *in = &f->d->in[j];
	struct chk_stack_finding *fd = new_finding(c, true);
	if (!fd)
		return;
	fd->difference = true;
	finding_where(c, f, fd, in->addr);
	char text[96];
	c->ar->text(c->dec, f->rg->data + (in->addr - f->rg->lo), in->len, in->addr, text,
		    sizeof(text));
	fd->insn = dup_or_fail(c, text);
	fd->row = dup_or_fail(c, row);
	fd->code = dup_or_fail(c, code);
	fd->detail = dup_or_fail(c, detail);
	if (!c->nomem)
		c->r->nf++;
}

static void add_give_up(struct sctx *c, const struct fn *f, enum chk_stack_reason why,
			const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void add_give_up(struct sctx *c, const struct fn *f, enum chk_stack_reason why,
			const char *fmt, ...)
{
	struct chk_stack_finding *fd = new_finding(c, false);
	if (!fd)
		return;
	fd->reason = why;
	finding_where(c, f, fd, f->fe->lo);
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fd->detail = dup_or_fail(c, text);
	if (!c->nomem)
		c->r->nf++;
}

/* ---- One function --------------------------------------------------------- */

static void give_up(struct fn *f, enum chk_stack_reason why, uint64_t addr, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void give_up(struct fn *f, enum chk_stack_reason why, uint64_t addr, const char *fmt, ...)
{
	if (f->give_up)
		return;
	f->give_up = (int)why + 1;
	f->give_up_addr = addr;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->give_up_why, sizeof(f->give_up_why), fmt, ap);
	va_end(ap);
}

static void enqueue(struct fn *f, size_t k)
{
	uint64_t bit = 1ull << (k % 64);
	f->work[k / 64] |= bit;
	if (k < f->work_lo)
		f->work_lo = k;
}

static size_t dequeue(struct fn *f)
{
	size_t words = (f->d->n + 63) / 64;
	for (size_t w = f->work_lo / 64; w < words; w++)
		if (f->work[w]) {
			size_t k = w * 64 + (size_t)__builtin_ctzll(f->work[w]);
			f->work[w] &= f->work[w] - 1;
			f->work_lo = k;
			return k;
		}
	f->work_lo = f->d->n;
	return SIZE_MAX;
}

/* Join S into the state of leader K, coming from instruction FROM (an
 * index: at or after K, an edge backwards, which widens). */
static void merge_into(struct sctx *c, struct fn *f, size_t k, const struct state *s, size_t from)
{
	if (!f->st[k]) {
		if (++f->nstates > SK_MAX_STATES) {
			give_up(f, CHK_SR_LIMIT, f->d->in[k].addr, "more than %u block states",
				SK_MAX_STATES);
			return;
		}
		f->st[k] = base_alloc(sizeof(struct state));
		if (!f->st[k]) {
			c->nomem = BK_E_NOMEM;
			return;
		}
		memcpy(f->st[k], s, sizeof(*s));
		enqueue(f, k);
		return;
	}
	if (state_join(f->st[k], s, c->ar->nregs, from >= k))
		enqueue(f, k);
}

/* Make K a leader after the fact (a jump-table target): the block that ran
 * through it runs again and stops there. */
static void make_leader(struct fn *f, size_t k)
{
	if (f->flag[k] & FL_LEADER)
		return;
	f->flag[k] |= FL_LEADER;
	if (!(f->flag[k] & FL_REACHED) || k == 0)
		return;
	for (size_t i = k; i-- > 0;)
		if (f->flag[i] & FL_LEADER) {
			if (f->st[i])
				enqueue(f, i);
			return;
		}
}

static struct fde_ent *fde_holding(struct sctx *c, uint64_t addr)
{
	size_t lo = BASE_COUNT_LE(c->f, c->nf, lo, addr);
	return lo && addr < c->f[lo - 1].hi ? &c->f[lo - 1] : NULL;
}

/* Keep the state S of a jump to TARGET in another FDE: its middle, or the
 * start of a part (a tail call to a function's start is not kept). */
static void record_cross(struct sctx *c, uint64_t target, const struct state *s)
{
	struct fde_ent *to = fde_holding(c, target);
	if (!to || (target == to->lo && !to->part))
		return;
	struct cross *p = base_grow(c->cross, &c->capcross, c->ncross + 1, sizeof(*p), 64);
	struct state *st = base_alloc(sizeof(*st));
	if (!p || !st) {
		base_free(st);
		c->nomem = BK_E_NOMEM;
		return;
	}
	memcpy(st, s, sizeof(*st));
	st->cmp.valid = 0;
	c->cross = p;
	p[c->ncross++] = (struct cross){ target, st };
}

static int cmp_cross(const void *a, const void *b)
{
	const struct cross *x = a, *y = b;
	return x->target < y->target ? -1 : x->target > y->target;
}

/* Sort the recorded jumps by target, joining the states of one target. */
static void settle_cross(struct sctx *c)
{
	if (c->ncross > 1)
		qsort(c->cross, c->ncross, sizeof(*c->cross), cmp_cross);
	size_t j = 0;
	for (size_t i = 0; i < c->ncross; i++) {
		if (j && c->cross[j - 1].target == c->cross[i].target) {
			state_join(c->cross[j - 1].st, c->cross[i].st, c->ar->nregs, false);
			base_free(c->cross[i].st);
			continue;
		}
		c->cross[j++] = c->cross[i];
	}
	c->ncross = j;
}

/* A branch into an instruction just past prefixes that change nothing the
 * analysis follows (lock, rep, segment/branch hints: glibc's `je 1f; lock;
 * 1: cmpxchg` runs the same instruction without its lock): that
 * instruction's index, else SIZE_MAX. */
static size_t past_prefixes(const struct fn *f, uint64_t target)
{
	size_t k = BASE_COUNT_LE(f->d->in, f->d->n, addr, target);
	if (!k)
		return SIZE_MAX;
	const struct sk_insn *in = &f->d->in[k - 1];
	if (target >= in->addr + in->len || in->flow == SK_BAD)
		return SIZE_MAX;
	for (uint64_t a = in->addr; a < target; a++) {
		uint8_t b = f->rg->data[a - f->rg->lo];
		if (b != 0xf0 && b != 0xf2 && b != 0xf3 && b != 0x2e && b != 0x3e)
			return SIZE_MAX;
	}
	return k - 1;
}

/* A control transfer to TARGET with state S (analysis pass only). */
static void edge(struct sctx *c, struct fn *f, const struct state *s, uint64_t target,
		 uint64_t from)
{
	if (target < f->fe->lo || target >= f->fe->hi) {
		/* leaves the function: a tail call, or into a .cold part */
		if (c->recording)
			record_cross(c, target, s);
		return;
	}
	size_t k = index_of(f->d, target);
	if (k == SIZE_MAX)
		k = past_prefixes(f, target);
	if (k == SIZE_MAX) {
		give_up(f, CHK_SR_BAD_CODE, from,
			"a branch at 0x%" PRIx64 " to 0x%" PRIx64 ", inside an instruction", from,
			target);
		return;
	}
	make_leader(f, k);
	size_t j = BASE_COUNT_LT(f->d->in, f->d->n, addr, from);
	merge_into(c, f, k, s, j);
}

/* Whether TARGET names an instruction of F (a target read with a bound
 * that is not the table's own must: else the bound runs past the table). */
static bool valid_target(const struct fn *f, uint64_t target)
{
	return target >= f->fe->lo && target < f->fe->hi && index_of(f->d, target) != SIZE_MAX;
}

static void unresolved(struct fn *f, const struct sk_insn *in)
{
	if (!f->unresolved_ijump) {
		f->unresolved_ijump = true;
		f->ijump_addr = in->addr;
	}
}

/* The target of entry I of table T (an anchored table, or, ANCHOR 0 and
 * REL, one relative to itself), into *OUT: false when it cannot be read. */
static bool table_target(struct sctx *c, const struct anch_table *t, bool rel, uint32_t i,
			 uint64_t *out)
{
	uint8_t e[8];
	if (!t->size) {
		*out = t->anchor + ((uint64_t)i << t->shift);
		return true;
	}
	if (ldr_read_vaddr(c->im.ldr, t->table + (uint64_t)i * t->size, e, t->size))
		return false;
	uint64_t x = base_rd_le(e, t->size);
	if (t->sign && t->size < 8) {
		unsigned sh = 64 - 8 * t->size;
		x = (uint64_t)((int64_t)(x << sh) >> sh);
	}
	*out = (rel ? t->table : t->anchor) + (x << t->shift);
	return true;
}

/* A table's targets, entries 0..bound: with CHECK, only when every one
 * names an instruction of the function (else the jump is unresolved);
 * without, each one is an edge (out of the function: a tail call). */
static void ijump_table(struct sctx *c, struct fn *f, const struct state *s, size_t j,
			const struct anch_table *t, bool rel)
{
	const struct sk_insn *in = &f->d->in[j];
	uint64_t target;
	if (t->bound >= SK_MAX_TABLE || t->size > 8) {
		if (t->check) {
			unresolved(f, in);
			return;
		}
		give_up(f, CHK_SR_INDIRECT_JUMP, in->addr, "jump table at 0x%" PRIx64 " too large",
			t->table);
		return;
	}
	for (uint32_t i = 0; t->check && i <= t->bound; i++)
		if (!table_target(c, t, rel, i, &target) || !valid_target(f, target)) {
			unresolved(f, in);
			return;
		}
	for (uint32_t i = 0; i <= t->bound; i++) {
		if (!table_target(c, t, rel, i, &target)) {
			give_up(f, CHK_SR_INDIRECT_JUMP, in->addr,
				"jump table at 0x%" PRIx64 " not in the file", t->table);
			return;
		}
		edge(c, f, s, target, in->addr);
		if (f->give_up || c->nomem)
			return;
	}
}

/* An indirect jump: a constant target, a jump table's targets, else a
 * tail call or an unresolved jump. */
static void ijump(struct sctx *c, struct fn *f, const struct state *s, size_t j)
{
	const struct sk_insn *in = &f->d->in[j];
	struct sk_val v = in->ijump_reg < SK_NREGS ? s->r[in->ijump_reg] : v_unknown;
	unsigned size = v.reg & VT_SIZE;
	bool rel = v.reg & VT_REL;
	if (v.kind == V_CONST) {
		/* a label's address (vfprintf's `lea rax, [rip + L]; ...; jmp
		 * rax`), or a function's: a tail call */
		edge(c, f, s, (uint64_t)v.off, in->addr);
		return;
	}
	if (v.kind != V_TABLE) {
		unresolved(f, in);
		return;
	}
	struct anch_table t = { .table = (uint64_t)v.off, .bound = v.aux, .size = (uint8_t)size,
				.shift = v.flags & VTF_SHIFT, .sign = (v.reg & VT_SIGNED) != 0,
				.check = (v.flags & VTF_CHECK) != 0 };
	if (v.reg & VT_ANCH) {
		if (v.aux < c->nanch)
			ijump_table(c, f, s, j, &c->anch[v.aux], false);
		else
			unresolved(f, in);
		return;
	}
	if (!size) {
		/* off + (index << shift): blocks of equal size */
		t.anchor = (uint64_t)v.off;
		t.table = 0;
		t.check = 1;
		ijump_table(c, f, s, j, &t, false);
		return;
	}
	/* Entries relative to the table (4 bytes), or addresses (8). */
	if (!((rel && size == 4) || (!rel && size == 8)) || t.shift) {
		unresolved(f, in);
		return;
	}
	ijump_table(c, f, s, j, &t, rel);
}

/* Run the block at leader I. COMPARE: the compare pass (no edges). */
static void compare_insn(struct sctx *c, struct fn *f, const struct state *st, size_t j);

static void run_block(struct sctx *c, struct fn *f, size_t i, bool compare)
{
	struct state *s = &c->cur;
	memcpy(s, f->st[i], sizeof(*s));
	const struct sk_arch *ar = c->ar;
	for (size_t j = i;;) {
		const struct sk_insn *in = &f->d->in[j];
		if (!compare) {
			if (++f->steps > f->max_steps) {
				give_up(f, CHK_SR_LIMIT, in->addr,
					"more than %d block runs per instruction", SK_MAX_STEPS_PER_INSN);
				return;
			}
			f->flag[j] |= FL_REACHED;
		} else {
			compare_insn(c, f, s, j);
		}
		if (in->flow == SK_BAD) {
			if (!compare)
				give_up(f, CHK_SR_BAD_CODE, in->addr,
					"bytes at 0x%" PRIx64 " do not decode", in->addr);
			return;
		}
		bool realign_loop = false;
		bool setcmp = apply(c, f, s, j, &realign_loop);
		s->mb.valid = 0; /* it was for this instruction only */
		if (realign_loop && !compare) {
			give_up(f, CHK_SR_REALIGNED, in->addr,
				"the stack is realigned again at 0x%" PRIx64 " while the last "
				"realignment's frame is live", in->addr);
			return;
		}
		if (s->overflow && !compare) {
			give_up(f, CHK_SR_LIMIT, in->addr, "more than %d stack slots tracked",
				SK_MAX_SLOTS);
			return;
		}
		switch (in->flow) {
		case SK_FALL:
			break;
		case SK_JUMP:
			if (!compare)
				edge(c, f, s, in->target, in->addr);
			return;
		case SK_BRANCH:
			stale_bounds(s, ar->nregs);
			if (!compare) {
				memcpy(&c->tmp, s, sizeof(*s));
				if (refine(&c->tmp, in->cond, true)) {
					c->tmp.cmp.valid = 0;
					edge(c, f, &c->tmp, in->target, in->addr);
				}
			}
			if (!refine(s, in->cond, false))
				return; /* no value falls through */
			break;
		case SK_CALL:
			if (in->call_next) {
				/* call to the next instruction: a push of its address */
				if (v_stack(s->r[ar->sp]))
					slot_store(s, v_base(s->r[ar->sp]), s->r[ar->sp].off - 8, 8,
						   v_new(false), true);
				s->r[ar->sp] = v_add(s->r[ar->sp], -8);
				if (!v_stack(s->r[ar->sp]) && s->r[ar->sp].kind != V_DYN)
					s->r[ar->sp] = v_unknown;
				break;
			}
			bool noreturn = callee_noreturn(c, in, true); /* decides the callee */
			call_effects(ar, s, callee_keeps(c, in));
			if (!compare && f->fe->lp_n) {
				/* the call may throw: its landing pad, with the
				 * state the call returns with, less the arguments
				 * it pushed (DW_CFA_GNU_args_size: the unwinder
				 * pops them before it lands) */
				uint64_t lp = landing_pad(c, f->fe, in->addr);
				const struct srow *row = lp ? row_for(f, in->addr) : NULL;
				if (row && row->args_size) {
					memcpy(&c->tmp, s, sizeof(*s));
					c->tmp.r[ar->sp] = v_add(c->tmp.r[ar->sp],
								 (int64_t)row->args_size);
					edge(c, f, &c->tmp, lp, in->addr);
				} else if (lp) {
					edge(c, f, s, lp, in->addr);
				}
			}
			if (noreturn)
				return;
			break;
		default: /* RET, STOP */
			return;
		case SK_IJUMP:
			if (!compare)
				ijump(c, f, s, j);
			return;
		}
		if (!setcmp && s->cmp.valid && !cmp_survives(s, f->d, in))
			s->cmp.valid = 0;
		if (++j >= f->d->n || (!compare && (f->give_up || c->nomem)))
			return;
		if (f->flag[j] & FL_LEADER) {
			if (!compare)
				merge_into(c, f, j, s, j - 1);
			return;
		}
	}
}

static void count_na(struct fn *f, enum chk_stack_reason why, uint64_t addr)
{
	if (!f->unchecked[why]++)
		f->na_first[why] = addr;
}

/* The instruction J against its row, state ST before it runs. */
static void compare_insn(struct sctx *c, struct fn *f, const struct state *st, size_t j)
{
	const struct sk_insn *in = &f->d->in[j];
	const struct cfi_section *sec = &c->secs[f->fe->k];
	const struct srow *row = row_for(f, in->addr);
	f->flag[j] |= FL_REACHED;
	if (!row) {
		count_na(f, CHK_SR_BAD_CFI, in->addr);
		return;
	}
	int ra = cmp_index(c->ar, c->ar->ra_col);
	if (ra >= 0 && row->col[ra].kind == BK_RULE_UNDEFINED) {
		count_na(f, CHK_SR_OUTERMOST, in->addr);
		return;
	}
	struct cmp_out cfa;
	int64_t base;
	compare_cfa(c, st, sec, row, in->addr, &cfa, &base);
	if (cfa.v == VD_NA) {
		count_na(f, cfa.why, in->addr);
		return;
	}
	f->checked++;
	char row_text[256], code_text[256], detail[512];
	size_t dl = 0;
	bool diff_cfa = cfa.v == VD_DIFF, diff_ra = false, diff_reg = false;
	if (diff_cfa)
		dl += (size_t)snprintf(detail + dl, sizeof(detail) - dl, "CFA: row %s, code %s",
				       cfa.row, cfa.code);
	for (unsigned i = 0; i < c->ar->ncmp; i++) {
		struct cmp_out o;
		compare_col(c, st, sec, row, i, in->addr, base, &o);
		if (row->col[i].kind == BK_RULE_NONE && c->ar->cmp_regs[i] == sk_dwarf_of_reg(c->ar, c->ar->sp))
			continue;
		if (o.v == VD_NA) {
			c->r->rules_unknown++;
			if (!f->rules_na[o.why]++ && !f->unchecked[o.why])
				f->na_first[o.why] = in->addr;
			continue;
		}
		c->r->rules_compared++;
		if (o.v != VD_DIFF)
			continue;
		char tmp[16];
		unsigned col = c->ar->cmp_regs[i];
		if (col == c->ar->ra_col)
			diff_ra = true;
		else
			diff_reg = true;
		if (dl < sizeof(detail))
			dl += (size_t)snprintf(detail + dl, sizeof(detail) - dl, "%s%s: row %s, code %s",
					       dl ? "; " : "", col_name(c, col, tmp, sizeof(tmp)), o.row,
					       o.code);
	}
	if (!diff_cfa && !diff_ra && !diff_reg)
		return;
	f->flag[j] |= FL_DIFF;
	f->diffs++;
	c->r->diffs++;
	c->r->diffs_cfa += diff_cfa;
	c->r->diffs_ra += diff_ra;
	c->r->diffs_regs += diff_reg;
	/* Both sides in full, compared columns only. */
	char tmp[16], a[80], b[96];
	size_t rl = 0, cl = 0;
	rule_text(c, sec, &row->cfa, a, sizeof(a));
	rl += (size_t)snprintf(row_text + rl, sizeof(row_text) - rl, "CFA=%s", a);
	unsigned reg0 = row->cfa.kind == BK_RULE_CFA_REG_OFFSET ? sk_reg_of_dwarf(c->ar, row->cfa.reg)
								 : SK_NONE;
	code_cfa(c, st, reg0, b, sizeof(b));
	cl += (size_t)snprintf(code_text + cl, sizeof(code_text) - cl, "CFA=%s", b);
	for (unsigned i = 0; i < c->ar->ncmp; i++) {
		unsigned col = c->ar->cmp_regs[i];
		bool is_sp = col == sk_dwarf_of_reg(c->ar, c->ar->sp);
		bool signed_ra = col == c->ar->ra_col && row->ra_sign;
		if ((row->col[i].kind != BK_RULE_NONE || signed_ra) && rl < sizeof(row_text)) {
			rule_text(c, sec, &row->col[i], a, sizeof(a));
			rl += (size_t)snprintf(row_text + rl, sizeof(row_text) - rl, " %s=%s%s",
					       col_name(c, col, tmp, sizeof(tmp)), a,
					       signed_ra ? ra_sign_text(row->ra_sign) : "");
		}
		if (is_sp)
			continue;
		code_col(c, st, col, b, sizeof(b));
		if (strcmp(b, "same") && cl < sizeof(code_text))
			cl += (size_t)snprintf(code_text + cl, sizeof(code_text) - cl, " %s=%s",
					       col_name(c, col, tmp, sizeof(tmp)), b);
	}
	add_difference(c, f, j, row_text, code_text, detail);
}

/* The state at an entry: the call site's (ABI), or the one ROW gives. */
static int initial_state(struct sctx *c, const struct srow *row, bool from_row, struct state *s)
{
	const struct sk_arch *ar = c->ar;
	memset(s, 0, sizeof(*s));
	s->slot_default = from_row ? V_UNKNOWN : V_NEW;
	for (unsigned r = 0; r < SK_NREGS; r++)
		s->r[r] = from_row ? v_unknown : v_new(false);
	if (!from_row) {
		for (unsigned r = 0; r < ar->nregs; r++)
			if ((ar->callee_saved >> r) & 1)
				s->r[r] = v_caller(sk_dwarf_of_reg(ar, r));
		s->r[ar->sp] = vk(V_CFA, -ar->entry_cfa_off);
		if (sk_ra_reg(ar) != SK_NONE)
			s->r[sk_ra_reg(ar)] = v_caller(ar->ra_col);
		else
			slot_store(s, 0, ar->ra_slot, 8, v_caller(ar->ra_col), true);
		return 0;
	}
	if (row->cfa.kind != BK_RULE_CFA_REG_OFFSET || sk_reg_of_dwarf(ar, row->cfa.reg) == SK_NONE)
		return -1;
	s->r[sk_reg_of_dwarf(ar, row->cfa.reg)] = vk(V_CFA, -row->cfa.value);
	for (unsigned i = 0; i < ar->ncmp; i++) {
		unsigned col = ar->cmp_regs[i];
		const struct cfi_rule *r = &row->col[i];
		unsigned self = sk_reg_of_dwarf(ar, col);
		if (col == sk_dwarf_of_reg(ar, ar->sp))
			continue;
		struct sk_val cv = v_caller(col);
		if (col == ar->ra_col)
			cv.flags |= ra_sign_flags(row->ra_sign);
		switch (r->kind) {
		case BK_RULE_NONE:
		case BK_RULE_SAME_VALUE:
			if (self != SK_NONE)
				s->r[self] = cv;
			break;
		case BK_RULE_OFFSET:
			slot_store(s, 0, r->value, 8, cv, true);
			break;
		case BK_RULE_REGISTER:
			if (sk_reg_of_dwarf(ar, r->reg) != SK_NONE)
				s->r[sk_reg_of_dwarf(ar, r->reg)] = cv;
			break;
		default:
			break;
		}
	}
	return 0;
}

/* Whether ROW is the state right after a call: CFA = SP + entry offset,
 * the RA at its slot, no callee-saved register elsewhere. */
static bool call_site_row(const struct sctx *c, const struct srow *row)
{
	const struct sk_arch *ar = c->ar;
	if (row->cfa.kind != BK_RULE_CFA_REG_OFFSET || sk_reg_of_dwarf(ar, row->cfa.reg) != ar->sp ||
	    row->cfa.value != ar->entry_cfa_off || row->ra_sign)
		return false;
	for (unsigned i = 0; i < ar->ncmp; i++) {
		unsigned col = ar->cmp_regs[i];
		const struct cfi_rule *r = &row->col[i];
		if (col == ar->ra_col && sk_ra_reg(ar) != SK_NONE) {
			if (r->kind != BK_RULE_NONE && r->kind != BK_RULE_SAME_VALUE)
				return false;
		} else if (col == ar->ra_col) {
			if (r->kind != BK_RULE_OFFSET || r->value != ar->ra_slot)
				return false;
		} else if (r->kind != BK_RULE_NONE && r->kind != BK_RULE_SAME_VALUE) {
			return false;
		}
	}
	return true;
}

static bool lazy_binding_trampoline(const char *name)
{
	return !strncmp(name, "_dl_runtime_resolve", 19) || !strncmp(name, "_dl_runtime_profile", 19);
}

/* Count the function into the report and say why it was not checked in
 * full. */
static void conclude(struct sctx *c, struct fn *f, bool skipped)
{
	struct chk_stack_report *r = c->r;
	enum chk_stack_reason main = CHK_SR_N;
	uint64_t most = 0;
	if (f->give_up) {
		main = (enum chk_stack_reason)(f->give_up - 1);
	} else {
		for (int k = 0; k < CHK_SR_N; k++)
			if (f->unchecked[k] > most) {
				most = f->unchecked[k];
				main = (enum chk_stack_reason)k;
			}
		/* every CFA compared, but not every register rule */
		for (int k = 0; k < CHK_SR_N && main == CHK_SR_N; k++)
			if (f->rules_na[k])
				main = (enum chk_stack_reason)k;
	}
	r->insns += f->insns;
	r->fill += f->fill;
	r->checked += f->checked;
	for (int k = 0; k < CHK_SR_N; k++)
		r->unchecked[k] += f->unchecked[k];
	r->fn_with_diffs += f->diffs > 0;
	if (f->from_row && !skipped)
		r->fn_from_row++;
	if (main == CHK_SR_N) {
		r->fn_full++;
		return;
	}
	if (skipped || !f->checked)
		r->fn_skipped++;
	else
		r->fn_partial++;
	r->fn_by_reason[main]++;
	uint64_t left = f->insns - f->checked;
	if (f->give_up)
		add_give_up(c, f, main, "%s; %" PRIu64 " of %" PRIu64 " instructions not checked",
			    f->give_up_why, left, f->insns);
	else if (main == CHK_SR_INDIRECT_JUMP)
		add_give_up(c, f, main, "%" PRIu64 " of %" PRIu64 " instructions not reached "
			    "(first at 0x%" PRIx64 "); the indirect jump at 0x%" PRIx64
			    " is not a jump table the analysis can read", f->unchecked[main], f->insns,
			    f->na_first[main], f->ijump_addr);
	else if (main == CHK_SR_UNREACHED)
		add_give_up(c, f, main, "%" PRIu64 " of %" PRIu64 " instructions not reached from %s "
			    "(first at 0x%" PRIx64 ")", f->unchecked[main], f->insns,
			    f->from_row ? "its first row" : "its entry", f->na_first[main]);
	else if (!f->unchecked[main])
		add_give_up(c, f, main, "%" PRIu64 " register rules not decided (first at 0x%" PRIx64
			    "); every instruction's CFA was compared", f->rules_na[main],
			    f->na_first[main]);
	else
		add_give_up(c, f, main, "%" PRIu64 " of %" PRIu64 " instructions not checked "
			    "(first at 0x%" PRIx64 ")", f->unchecked[main], f->insns,
			    f->na_first[main]);
}

static void free_fn(struct fn *f)
{
	if (f->st)
		for (size_t i = 0; i < f->d->n; i++)
			base_free(f->st[i]);
	base_free(f->st);
	base_free(f->flag);
	base_free(f->work);
	f->st = NULL;
	f->flag = NULL;
	f->work = NULL;
}

static void analyse(struct sctx *c, struct fde_ent *fe, struct srow **rows, size_t *caprows)
{
	struct fn f = { .fe = fe, .rows = *rows, .caprows = *caprows };
	struct cfi_fde fde;
	struct cfi_cie cie;
	const struct cfi_section *sec = &c->secs[fe->k];
	int err;
	bool skipped = true;
	c->r->fdes++;
	c->current = fe;

	f.rg = code_region(c, fe->lo, fe->hi);
	if (!f.rg) {
		give_up(&f, CHK_SR_NO_CODE, fe->lo, "the FDE's range 0x%" PRIx64 "..0x%" PRIx64
			" is not in the file's code", fe->lo, fe->hi);
		goto out;
	}
	f.d = decoded_of(c, fe, &err);
	if (!f.d) {
		if (err == BK_E_NOMEM)
			c->nomem = err;
		give_up(&f, CHK_SR_LIMIT, fe->lo, "the function does not decode (%s)",
			bk_strerror(err));
		goto out;
	}
	for (size_t i = 0; i < f.d->n; i++) {
		if (f.d->in[i].fill)
			f.fill++;
		else
			f.insns++;
	}
	if ((err = cfi_decode_fde(sec, fe->off, &fde, &cie)) ||
	    (err = compile_rows(c, &f, sec, &cie, &fde)) || !f.nrows) {
		if (err == BK_E_NOMEM)
			c->nomem = err;
		f.unchecked[CHK_SR_BAD_CFI] = f.insns;
		give_up(&f, CHK_SR_BAD_CFI, fe->lo, "the FDE's program does not run: %s",
			err ? bk_strerror(err) : "no rows");
		goto out;
	}
	if (cie.signal_frame) {
		f.unchecked[CHK_SR_SIGNAL_FRAME] = f.insns;
		give_up(&f, CHK_SR_SIGNAL_FRAME, fe->lo, "a signal trampoline (CIE augmentation 'S')");
		goto out;
	}
	int ra = cmp_index(c->ar, c->ar->ra_col);
	if (ra >= 0 && f.rows[0].col[ra].kind == BK_RULE_UNDEFINED) {
		f.unchecked[CHK_SR_OUTERMOST] = f.insns;
		give_up(&f, CHK_SR_OUTERMOST, fe->lo, "the outermost frame (return address undefined)");
		goto out;
	}
	/* Entry: the call site's state; a part's: the states of the jumps
	 * into it, else its first row's. */
	f.from_row = fe->part;

	size_t n = f.d->n;
	f.flag = base_calloc(n, 1);
	f.st = base_calloc(n, sizeof(*f.st));
	f.work = base_calloc((n + 63) / 64, sizeof(uint64_t));
	if (!f.flag || !f.st || !f.work) {
		c->nomem = BK_E_NOMEM;
		goto out;
	}
	f.max_steps = (uint64_t)n * SK_MAX_STEPS_PER_INSN + 1024;
	/* Leaders: the entry, every direct branch target inside. */
	f.flag[0] = FL_LEADER;
	for (size_t i = 0; i < n; i++) {
		const struct sk_insn *in = &f.d->in[i];
		if ((in->flow == SK_JUMP || in->flow == SK_BRANCH) && in->target >= fe->lo &&
		    in->target < fe->hi) {
			size_t k = index_of(f.d, in->target);
			if (k != SIZE_MAX)
				f.flag[k] |= FL_LEADER;
		}
	}
	/* Entries. A function: its start, with the call site's state. A
	 * part: the jumps into it from the functions analysed before (their
	 * states), the landing pads other FDEs' LSDAs put in it (their rows:
	 * the calls that throw there were not followed), and only when there
	 * is none of those, its start with the state its first row gives (gcc
	 * starts a .cold part that opens with a landing pad with a nop whose
	 * row is the CIE's: nothing runs it). */
	size_t nseeds = 0;
	for (size_t q = BASE_COUNT_LT(c->cross, c->ncross, target, fe->lo);
	     fe->part && q < c->ncross && c->cross[q].target < fe->hi && !c->nomem; q++) {
		size_t k = index_of(f.d, c->cross[q].target);
		if (k == SIZE_MAX)
			continue;
		f.flag[k] |= FL_LEADER | FL_ENTRY;
		merge_into(c, &f, k, c->cross[q].st, 0);
		nseeds++;
	}
	for (size_t q = lp_lower_bound(c, fe->lo); q < c->nlps && !c->nomem; q++) {
		const struct lp_ent *l = &c->lps[c->lp_by_addr[q]];
		if (l->lp >= fe->hi)
			break;
		if (&c->f[l->owner] == fe)
			continue;
		size_t k = index_of(f.d, l->lp);
		const struct srow *row = k != SIZE_MAX ? row_for(&f, l->lp) : NULL;
		if (!row || (f.flag[k] & FL_ENTRY) || initial_state(c, row, true, &c->tmp))
			continue;
		f.flag[k] |= FL_LEADER | FL_ENTRY;
		merge_into(c, &f, k, &c->tmp, 0);
		nseeds++;
	}
	if (!fe->part || !nseeds) {
		/* a part's first row that covers only fill is not where it starts */
		size_t k0 = 0;
		if (fe->part && n > 1 && f.d->in[0].fill && f.nrows > 1 && f.rows[0].end == f.d->in[1].addr)
			k0 = 1;
		struct state *init = &c->tmp;
		if (initial_state(c, &f.rows[k0], f.from_row, init)) {
			f.unchecked[CHK_SR_ENTRY_STATE] = f.insns;
			give_up(&f, CHK_SR_ENTRY_STATE, fe->lo,
				"entered mid-function with a first row whose CFA is an expression");
			goto out;
		}
		f.flag[k0] |= FL_ENTRY | FL_LEADER;
		merge_into(c, &f, k0, init, 0);
	}
	/* PLT stubs: each one after an unconditional jump is called. */
	if (in_plt(c, fe->lo)) {
		struct state *e = &c->tmp;
		initial_state(c, &f.rows[0], false, e);
		for (size_t i = 1; i < n; i++) {
			if (f.d->in[i].fill)
				continue;
			size_t p = i - 1;
			while (p > 0 && f.d->in[p].fill)
				p--;
			uint8_t prev = f.d->in[p].flow;
			if (prev == SK_JUMP || prev == SK_IJUMP || prev == SK_RET || prev == SK_STOP) {
				f.flag[i] |= FL_LEADER | FL_ENTRY;
				merge_into(c, &f, i, e, 0);
			}
		}
	}
	/* Its own landing pads are reached from its calls. */
	for (uint32_t i = 0; i < fe->lp_n; i++) {
		uint64_t lp = c->lps[fe->lp_first + i].lp;
		size_t k = lp >= fe->lo && lp < fe->hi ? index_of(f.d, lp) : SIZE_MAX;
		if (k != SIZE_MAX)
			f.flag[k] |= FL_LEADER;
	}
	/* The fixed point. */
	size_t k;
	while (!f.give_up && !c->nomem && (k = dequeue(&f)) != SIZE_MAX)
		run_block(c, &f, k, false);
	if (c->nomem)
		goto out;
	if (f.give_up) {
		f.unchecked[f.give_up - 1] = f.insns;
		goto out;
	}
	skipped = false;
	/* The comparison, block by block in address order. */
	for (size_t i = 0; i < n; i++)
		f.flag[i] &= (uint8_t)~FL_REACHED;
	f.row_at = 0;
	for (size_t i = 0; i < n && !c->nomem; i++)
		if ((f.flag[i] & FL_LEADER) && f.st[i])
			run_block(c, &f, i, true);
	for (size_t i = 0; i < n; i++)
		if (!(f.flag[i] & FL_REACHED) && !f.d->in[i].fill)
			count_na(&f, f.unresolved_ijump ? CHK_SR_INDIRECT_JUMP : CHK_SR_UNREACHED,
				 f.d->in[i].addr);
		else if ((f.flag[i] & FL_REACHED) && f.d->in[i].fill)
			f.fill--, f.insns++; /* fill on a path is code */
out:
	if (!c->nomem) {
		if (f.give_up && !f.unchecked[f.give_up - 1] && skipped)
			f.unchecked[f.give_up - 1] = f.insns;
		if (!skipped)
			f.checked = f.checked > f.insns ? f.insns : f.checked;
		conclude(c, &f, skipped);
	}
	if (f.d)
		free_fn(&f);
	*rows = f.rows;
	*caprows = f.caprows;
	c->current = NULL;
	cache_drop(c, fe);
}

/* ---- The file ------------------------------------------------------------- */

static int cmp_fde(const void *a, const void *b)
{
	const struct fde_ent *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->k - y->k;
}

static bool is_tombstone(uint64_t addr, uint8_t addr_size)
{
	uint64_t top = addr_size == 4 ? 0xffffffffu : UINT64_MAX;
	return addr == 0 || addr >= top - 0xfff;
}

/* Every FDE that decodes, of both sections; .debug_frame's only where no
 * .eh_frame FDE starts at the same address. */
static int collect_fdes(struct sctx *c)
{
	size_t cap = 0;
	for (int k = 0; k < 2; k++) {
		if (!c->present[k])
			continue;
		const struct cfi_section *sec = &c->secs[k];
		uint64_t off = 0;
		while (off < sec->len) {
			struct cfi_entry e;
			if (cfi_entry_at(sec, off, &e))
				break; /* the table check reports it */
			if (e.kind == CFI_ENTRY_TERMINATOR && sec->is_eh)
				break;
			if (e.kind == CFI_ENTRY_FDE) {
				struct cfi_fde fde;
				struct cfi_cie cie;
				if (!cfi_decode_fde(sec, e.off, &fde, &cie) && fde.pc_begin < fde.pc_end &&
				    !(k == 1 && is_tombstone(fde.pc_begin, sec->addr_size))) {
					struct fde_ent *p = base_grow(c->f, &cap, c->nf + 1, sizeof(*p), 256);
					if (!p)
						return BK_E_NOMEM;
					c->f = p;
					p[c->nf++] = (struct fde_ent){ .lo = fde.pc_begin, .hi = fde.pc_end,
								       .off = e.off,
								       .lsda = fde.has_lsda ? fde.lsda : 0,
								       .k = (uint8_t)k };
				}
			}
			off = e.next_off;
		}
	}
	if (c->nf > 1)
		qsort(c->f, c->nf, sizeof(*c->f), cmp_fde);
	/* Drop .debug_frame FDEs an .eh_frame FDE already describes. */
	size_t j = 0;
	for (size_t i = 0; i < c->nf; i++) {
		if (c->f[i].k == 1 && j && c->f[j - 1].lo == c->f[i].lo && c->f[j - 1].k == 0)
			continue;
		c->f[j++] = c->f[i];
	}
	c->nf = j;
	return 0;
}

/* The length of FE's first instruction when it is fill (gcc opens a part
 * that starts with a landing pad with a nop: an LSDA cannot name offset
 * 0), else 0. */
static unsigned first_fill_len(struct sctx *c, const struct fde_ent *fe)
{
	const struct chk_region *rg = code_region(c, fe->lo, fe->hi);
	if (!rg)
		return 0;
	struct sk_insn in;
	struct sk_mop m[SK_MAX_MOPS];
	c->ar->decode(c->dec, rg->data + (fe->lo - rg->lo), (size_t)(fe->hi - fe->lo), fe->lo, &in, m);
	return in.fill && in.flow == SK_FALL ? in.len : 0;
}

/* Whether FE is entered mid-function (a part): no function symbol starts
 * it, or a .cold one or a lazy-binding trampoline's, and either another
 * FDE's landing pad lies in it or its first row is not the call site's. */
static void classify(struct sctx *c, struct fde_ent *fe)
{
	struct sym_symbol *sym = chk_image_sym_at(&c->im, fe->lo);
	const char *raw = sym && !sym->shown ? sym->name : NULL;
	bool named_part = raw && (strstr(raw, ".cold") || lazy_binding_trampoline(raw));
	if (sym && !named_part) {
		fe->part = 0;
		return;
	}
	fe->part = 1;
	if (named_part)
		return;
	/* Another FDE's landing pad inside: a split-off part. */
	for (size_t q = lp_lower_bound(c, fe->lo);
	     q < c->nlps && c->lps[c->lp_by_addr[q]].lp < fe->hi; q++)
		if (&c->f[c->lps[c->lp_by_addr[q]].owner] != fe)
			return;
	const struct cfi_section *sec = &c->secs[fe->k];
	struct cfi_fde fde;
	struct cfi_cie cie;
	struct cfi_machine *m = base_alloc(sizeof(*m));
	struct cfi_row *row = base_alloc(sizeof(*row));
	if (m && row && !cfi_decode_fde(sec, fe->off, &fde, &cie) &&
	    !cfi_machine_init(m, sec, &cie, &fde) && cfi_machine_next(m, row) == 1) {
		/* A first row that covers only fill: the row after it. */
		if (row->loc_end == fe->lo + first_fill_len(c, fe) && row->loc_end < fe->hi &&
		    cfi_machine_next(m, row) != 1) {
			base_free(m);
			base_free(row);
			return;
		}
		struct srow sr = { .cfa = row->cfa, .ra_sign = row->ra_sign_state };
		for (unsigned i = 0; i < c->ar->ncmp; i++) {
			const struct cfi_rule *r = cfi_row_rule(row, c->ar->cmp_regs[i] == c->ar->ra_col
								   ? (unsigned)cie.ra_reg
								   : c->ar->cmp_regs[i]);
			sr.col[i] = r ? *r : (struct cfi_rule){ 0 };
		}
		fe->part = !call_site_row(c, &sr);
	}
	base_free(m);
	base_free(row);
}

static const struct sk_arch *arch_semantics(enum bk_arch arch)
{
	switch (arch) {
	case BK_ARCH_X86_64: return &chk_stack_x86_64;
	case BK_ARCH_AARCH64: return &chk_stack_aarch64;
	default: return NULL;
	}
}

int chk_stack_file(const char *path, const struct chk_stack_opts *opts,
		   struct chk_stack_report *report)
{
	memset(report, 0, sizeof(*report));
	struct sctx *c = base_calloc(1, sizeof(*c));
	if (!c)
		return BK_E_NOMEM;
	c->r = report;
	c->max_findings = DEFAULT_MAX_FINDINGS;
	if (opts && opts->size >= sizeof(*opts) && opts->max_findings)
		c->max_findings = opts->max_findings;
	int err = chk_image_open(path, &c->im);
	if (err) {
		base_free(c);
		return err;
	}
	report->arch = c->im.arch ? c->im.arch->name : NULL;
	c->ar = c->im.arch ? arch_semantics(c->im.arch->arch) : NULL;
	struct srow *rows = NULL;
	size_t caprows = 0;
	if (!c->ar) {
		report->unsupported = "the stack analysis knows x86-64 and AArch64 instructions only";
		err = BK_E_UNSUPPORTED;
		goto out;
	}
	if (c->im.relocatable) {
		report->unsupported = "a relocatable object: its code and tables are not linked";
		err = BK_E_UNSUPPORTED;
		goto out;
	}
	if ((err = c->ar->open(&c->dec))) {
		report->unsupported = err == BK_E_UNSUPPORTED
			? "Capstone (libcapstone.so.4) could not be loaded" : NULL;
		goto out;
	}
	for (int k = 0; k < 2; k++)
		c->present[k] = uw_cfi_section(c->im.ldr, k == 0 ? UW_EH_FRAME : UW_DEBUG_FRAME,
					       &c->secs[k]);
	if ((err = read_got(c)) || (err = mark_noreturn_symbols(c)) || (err = collect_fdes(c)) ||
	    (err = read_landing_pads(c)))
		goto out;
	for (size_t i = 0; i < c->nf; i++)
		classify(c, &c->f[i]);
	/* The bytes decoded may be a few times the code (callees decoded for
	 * their verdict and again for their analysis), not more. */
	c->decode_budget = (16u << 20);
	for (size_t i = 0; i < c->im.nexec; i++)
		if (c->im.exec[i].data)
			c->decode_budget += 4 * (c->im.exec[i].hi - c->im.exec[i].lo);
	/* Functions entered at their start first, recording their jumps into
	 * parts; then the parts, from those jumps. */
	c->recording = true;
	for (size_t i = 0; i < c->nf && !c->nomem; i++)
		if (!c->f[i].part)
			analyse(c, &c->f[i], &rows, &caprows);
	c->recording = false;
	settle_cross(c);
	for (size_t i = 0; i < c->nf && !c->nomem; i++)
		if (c->f[i].part)
			analyse(c, &c->f[i], &rows, &caprows);
	err = c->nomem;
out:
	base_free(rows);
	for (size_t i = 0; i < c->nf; i++)
		cache_drop(c, &c->f[i]);
	base_free(c->f);
	base_free(c->got);
	base_free(c->lps);
	base_free(c->lp_by_addr);
	for (size_t i = 0; i < c->ncross; i++)
		base_free(c->cross[i].st);
	base_free(c->cross);
	base_free(c->sym_noreturn);
	base_free(c->scan_seen);
	if (c->dec)
		c->ar->close(c->dec);
	chk_image_close(&c->im);
	base_free(c);
	return err;
}

void chk_stack_report_free(struct chk_stack_report *r)
{
	for (size_t i = 0; i < r->nf; i++) {
		base_free(r->f[i].symbol);
		base_free(r->f[i].insn);
		base_free(r->f[i].row);
		base_free(r->f[i].code);
		base_free(r->f[i].detail);
	}
	base_free(r->f);
	r->f = NULL;
	r->nf = r->capf = 0;
}
