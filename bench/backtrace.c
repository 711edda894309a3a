/* Benchmark: a local walk of the calling thread's stack, per frame, for
 *   - a plain frame-pointer walk (the floor: this file keeps frame pointers),
 *   - bk_backtrace (warm: the row cache is filled by the first call),
 *   - glibc backtrace() (libgcc's _Unwind_Backtrace),
 *   - nongnu libunwind's unw_backtrace and LLVM libunwind's unw_step loop,
 *     when their shared libraries are installed (loaded with dlopen).
 * The stack is DEPTH frames of one recursive function plus the frames from
 * main down. Prints ns per frame and the ratio to the frame-pointer walk.
 *   build/bench/bench_backtrace [DEPTH] [ITERATIONS]
 * Not a test: nothing here asserts a time. */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backstep.h"

#define MAXF 512

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

__attribute__((noinline)) static int fp_walk(void **pcs, int max)
{
	void **fp = __builtin_frame_address(0);
	int n = 0;
	while (fp && n < max) {
		void *ra = fp[1];
		if (!ra)
			break;
		pcs[n++] = ra;
		void **next = (void **)fp[0];
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

typedef int (*backtrace_fn)(void **, int);
static int (*nongnu_backtrace)(void **, int);
static int (*llvm_getcontext)(void *);
static int (*llvm_init_local)(void *, void *);
static int (*llvm_step)(void *);
static int (*llvm_get_reg)(void *, int, uint64_t *);

__attribute__((noinline)) static int llvm_walk(void **pcs, int max)
{
	static _Alignas(64) uint8_t ctx[4096], cursor[4096];
	llvm_getcontext(ctx);
	llvm_init_local(cursor, ctx);
	int n = 0;
	while (n < max && llvm_step(cursor) > 0) {
		uint64_t ip;
		llvm_get_reg(cursor, -1 /* UNW_REG_IP */, &ip);
		pcs[n++] = (void *)(uintptr_t)ip;
	}
	return n;
}

static int iterations = 200000;

static void measure(const char *name, backtrace_fn fn, double *fp_ns)
{
	void *pcs[MAXF];
	int frames = fn(pcs, MAXF); /* warm up */
	double t0 = now();
	for (int i = 0; i < iterations; i++)
		fn(pcs, MAXF);
	double ns = (now() - t0) / iterations * 1e9;
	double per = ns / (frames ? frames : 1);
	if (!*fp_ns)
		*fp_ns = per;
	printf("%-28s %4d frames %9.1f ns/walk %7.2f ns/frame %7.1fx\n", name, frames, ns, per,
	       per / *fp_ns);
}

static void run_all(void)
{
	double fp_ns = 0;
	measure("frame pointers", fp_walk, &fp_ns);
	measure("bk_backtrace", bk_backtrace, &fp_ns);
	measure("glibc backtrace (libgcc)", backtrace, &fp_ns);
	if (nongnu_backtrace)
		measure("nongnu libunwind", nongnu_backtrace, &fp_ns);
	if (llvm_step)
		measure("LLVM libunwind", llvm_walk, &fp_ns);
}

__attribute__((noinline)) static void descend(int n)
{
	if (n > 0)
		descend(n - 1);
	else
		run_all();
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	int depth = argc > 1 ? atoi(argv[1]) : 30;
	if (argc > 2)
		iterations = atoi(argv[2]);
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h)
		nongnu_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	void *l = dlopen("/usr/lib/llvm-14/lib/libunwind.so.1", RTLD_NOW | RTLD_LOCAL);
	if (l) {
		llvm_getcontext = (int (*)(void *))dlsym(l, "unw_getcontext");
		llvm_init_local = (int (*)(void *, void *))dlsym(l, "unw_init_local");
		llvm_step = (int (*)(void *))dlsym(l, "unw_step");
		llvm_get_reg = (int (*)(void *, int, uint64_t *))dlsym(l, "unw_get_reg");
		if (!llvm_getcontext || !llvm_init_local || !llvm_get_reg)
			llvm_step = NULL;
	}
	printf("stack: %d recursive frames + main's; %d walks each\n", depth, iterations);
	descend(depth);
	return 0;
}
