/* Benchmark stack shape (see backtrace_chain.h): one module's part of the
 * 64-function chain that bench/backtrace.c walks; measures nothing by itself.
 * Built 8 times (bench/meson.build): CHAIN_MODULE 0 (linked into the
 * executable), 1, 2, 3 (shared libraries), each as CHAIN_VARIANT fp
 * (-fno-omit-frame-pointer) and nofp (-fomit-frame-pointer), all -O2.
 * Function K (K % 4 == CHAIN_MODULE) calls function K + 1, which lives in the
 * next module; f63 calls ctx->bottom. Each function does a little work of one
 * of four kinds around its call (a value kept in a callee-saved register, a
 * stack array, five values kept across the call, a loop) and stores to a
 * volatile after it, so no call is inlined or turned into a tail call and the
 * frames differ as in real code: pushes of callee-saved registers, stack
 * adjustments, and (nofp) %rbp used as an ordinary register. */
#include "backtrace_chain.h"

#if !defined(CHAIN_MODULE) || !defined(CHAIN_VARIANT)
#error "compile with -DCHAIN_MODULE=0..3 -DCHAIN_VARIANT=fp|nofp"
#endif

#define CAT3_(a, b, c) a##b##c
#define CAT3(a, b, c) CAT3_(a, b, c)
#define NAME(k) CAT3(chain_, CHAIN_VARIANT, _f##k)

/* Every function of this variant, whichever module defines it. */
#define DECLARE(k) chain_fn NAME(k);
DECLARE(0) DECLARE(1) DECLARE(2) DECLARE(3) DECLARE(4) DECLARE(5) DECLARE(6) DECLARE(7)
DECLARE(8) DECLARE(9) DECLARE(10) DECLARE(11) DECLARE(12) DECLARE(13) DECLARE(14) DECLARE(15)
DECLARE(16) DECLARE(17) DECLARE(18) DECLARE(19) DECLARE(20) DECLARE(21) DECLARE(22) DECLARE(23)
DECLARE(24) DECLARE(25) DECLARE(26) DECLARE(27) DECLARE(28) DECLARE(29) DECLARE(30) DECLARE(31)
DECLARE(32) DECLARE(33) DECLARE(34) DECLARE(35) DECLARE(36) DECLARE(37) DECLARE(38) DECLARE(39)
DECLARE(40) DECLARE(41) DECLARE(42) DECLARE(43) DECLARE(44) DECLARE(45) DECLARE(46) DECLARE(47)
DECLARE(48) DECLARE(49) DECLARE(50) DECLARE(51) DECLARE(52) DECLARE(53) DECLARE(54) DECLARE(55)
DECLARE(56) DECLARE(57) DECLARE(58) DECLARE(59) DECLARE(60) DECLARE(61) DECLARE(62) DECLARE(63)
DECLARE(34_drap)

_Static_assert(CHAIN_LEN == 64 && CHAIN_REALIGNED == 34, "the lists below spell out 64 and 34");

static volatile unsigned sink;
static volatile unsigned src[5] = {1, 2, 3, 4, 5};

/* The body of function K. NEXT is the next function (NULL: call ctx->bottom
 * instead); ALT, when not NULL, replaces it if ctx->realign is set. Inlined
 * with constant K, NEXT and ALT: one kind of work and a direct call each. */
static inline __attribute__((always_inline)) unsigned work(struct chain_ctx *ctx, unsigned x,
							   unsigned k, chain_fn *next, chain_fn *alt)
{
#define CALL_NEXT(v)                                                                               \
	(next ? (alt && ctx->realign ? alt : next)(ctx, (v)) : (ctx->bottom(ctx), (v)))
	unsigned r;
	switch ((k / 4) % 4) {
	case 0: { /* one value live across the call */
		unsigned y = x * 3u + k;
		r = CALL_NEXT(y);
		sink = r ^ y;
		return r + y;
	}
	case 1: { /* an array in the frame, read after the call */
		volatile unsigned a[8];
		for (unsigned i = 0; i < 8; i++)
			a[i] = x + i * k;
		r = CALL_NEXT(a[x & 7]);
		sink = a[r & 7];
		return r + a[3];
	}
	case 2: { /* five values live across the call: five callee-saved registers */
		unsigned a = src[0] + x, b = src[1] * x, c = src[2] ^ k, d = src[3] - x, e = src[4] + k;
		r = CALL_NEXT(x + 1);
		sink = r + a * b + c * d + e;
		return r ^ (a + e);
	}
	default: { /* a short loop before the call */
		unsigned h = x;
		for (unsigned i = 0; i < (k & 7) + 2; i++)
			h = h * 31u + i;
		r = CALL_NEXT(h & 0xffffu);
		sink = r + h;
		return r ^ h;
	}
	}
#undef CALL_NEXT
}

#define CHAIN_FN __attribute__((noinline, noclone)) unsigned
#define DEFINE(k, n)                                                                               \
	CHAIN_FN NAME(k)(struct chain_ctx *ctx, unsigned x) { return work(ctx, x, k, NAME(n), 0); }
#define DEFINE_ALT(k, n, alt)                                                                      \
	CHAIN_FN NAME(k)(struct chain_ctx *ctx, unsigned x)                                        \
	{                                                                                          \
		return work(ctx, x, k, NAME(n), NAME(alt));                                        \
	}
#define DEFINE_LAST(k)                                                                             \
	CHAIN_FN NAME(k)(struct chain_ctx *ctx, unsigned x) { return work(ctx, x, k, 0, 0); }

#if CHAIN_MODULE == 0
DEFINE(0, 1) DEFINE(4, 5) DEFINE(8, 9) DEFINE(12, 13) DEFINE(16, 17) DEFINE(20, 21)
DEFINE(24, 25) DEFINE(28, 29) DEFINE(32, 33) DEFINE(36, 37) DEFINE(40, 41) DEFINE(44, 45)
DEFINE(48, 49) DEFINE(52, 53) DEFINE(56, 57) DEFINE(60, 61)
#elif CHAIN_MODULE == 1
DEFINE(1, 2) DEFINE(5, 6) DEFINE(9, 10) DEFINE(13, 14) DEFINE(17, 18) DEFINE(21, 22)
DEFINE(25, 26) DEFINE(29, 30) DEFINE_ALT(33, 34, 34_drap) DEFINE(37, 38) DEFINE(41, 42)
DEFINE(45, 46) DEFINE(49, 50) DEFINE(53, 54) DEFINE(57, 58) DEFINE(61, 62)
#elif CHAIN_MODULE == 2
DEFINE(2, 3) DEFINE(6, 7) DEFINE(10, 11) DEFINE(14, 15) DEFINE(18, 19) DEFINE(22, 23)
DEFINE(26, 27) DEFINE(30, 31) DEFINE(34, 35) DEFINE(38, 39) DEFINE(42, 43) DEFINE(46, 47)
DEFINE(50, 51) DEFINE(54, 55) DEFINE(58, 59) DEFINE(62, 63)

/* f34's stand-in with a realigned frame: a 64-byte-aligned local and a VLA
 * make gcc realign %rsp through a DRAP register (%r10) and describe the CFA
 * as DW_CFA_def_cfa_expression (DW_OP_breg6 (rbp) -8; DW_OP_deref), in both
 * variants (the realignment needs %rbp as a frame pointer either way). */
CHAIN_FN NAME(34_drap)(struct chain_ctx *ctx, unsigned x)
{
	_Alignas(64) volatile unsigned char block[64];
	unsigned n = (x & 15u) + 1;
	volatile unsigned char vla[n];
	block[0] = (unsigned char)x;
	vla[n - 1] = (unsigned char)(x >> 3);
	unsigned r = NAME(35)(ctx, x + block[0] + vla[n - 1]);
	sink = r + block[0] + vla[0];
	return r;
}
#elif CHAIN_MODULE == 3
DEFINE(3, 4) DEFINE(7, 8) DEFINE(11, 12) DEFINE(15, 16) DEFINE(19, 20) DEFINE(23, 24)
DEFINE(27, 28) DEFINE(31, 32) DEFINE(35, 36) DEFINE(39, 40) DEFINE(43, 44) DEFINE(47, 48)
DEFINE(51, 52) DEFINE(55, 56) DEFINE(59, 60) DEFINE_LAST(63)
#else
#error "CHAIN_MODULE must be 0..3"
#endif
