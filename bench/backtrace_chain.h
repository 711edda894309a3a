/* The realistic stack shape walked by bench/backtrace.c: a chain of 64
 * distinct functions, f0 .. f63, spread over the executable and three shared
 * libraries (function K lives in module K % 4: 0 = the executable, 1..3 =
 * libbkchain1..3), so every call crosses a module: exe -> lib1 -> lib2 ->
 * lib3 -> exe -> ... f63 calls ctx->bottom, where the walks are measured.
 * backtrace_chain.c is compiled once per module and variant: "fp" keeps frame
 * pointers (-fno-omit-frame-pointer), "nofp" omits them
 * (-fomit-frame-pointer); both -O2. The names carry the variant, so both sets
 * can be loaded in one process: chain_fp_f17, chain_nofp_f17, ...
 * With ctx->realign set, f33 calls f34_drap instead of f34 (same module,
 * same work): a function with a 64-byte-aligned local and a VLA, for which
 * gcc realigns the stack through a DRAP register and describes the CFA with
 * DW_CFA_def_cfa_expression (DW_OP_breg6 -8; DW_OP_deref). */
#ifndef BACKTRACE_CHAIN_H
#define BACKTRACE_CHAIN_H

#define CHAIN_LEN 64
#define CHAIN_REALIGNED 34 /* the position f34_drap takes with ctx->realign */

struct chain_ctx {
	void (*bottom)(struct chain_ctx *ctx);
	int realign;
	void *job; /* the harness's own data */
};

typedef unsigned chain_fn(struct chain_ctx *ctx, unsigned x);

/* The chain's entry points (f0 lives in the executable). */
chain_fn chain_fp_f0, chain_nofp_f0;

#endif
