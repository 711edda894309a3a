/* Benchmark: a local walk of the calling thread's stack (the PCs only), per
 * walk and per frame, for
 *   fp      a plain frame-pointer walk (the floor),
 *   bk      bk_backtrace (warm: the row cache is filled by the first call),
 *   glibc   glibc backtrace() (libgcc's _Unwind_Backtrace),
 *   nongnu  nongnu libunwind's unw_backtrace (libunwind.so.8, dlopen),
 *   llvm    LLVM libunwind's unw_step loop (llvm-14's libunwind.so.1, dlopen),
 *   bkcursor backstep's public cursor: bk_cursor_init_local, then per frame
 *           bk_cursor_pc and bk_cursor_reg of every callee-saved register
 *           (rbx, rbp, r12-r15) and rsp, and bk_cursor_step,
 *   bk8     bk_backtrace with 8 user steppers on its space whose ranges
 *           no frame's PC is in (issue 12's "costs nothing outside its
 *           range"; bk's batches, interleaved, run with none),
 *   unwstep the same loop with nongnu libunwind (libunwind.so.8, dlopen):
 *           unw_getcontext, unw_init_local, per frame unw_get_reg of the IP
 *           and the same registers, and unw_step,
 * all in one process, over one of three stack shapes:
 *   recursive   DEPTH (30) frames of one recursive function in this file;
 *   chain       64 distinct functions over the executable and three shared
 *               libraries, every call crossing a module (backtrace_chain.h),
 *               once compiled with frame pointers (variant fp) and once
 *               without (nofp), both -O2;
 *   chain-drap  the same with f34 replaced by a function whose frame is
 *               realigned through a DRAP register (a CFA expression).
 * The fp walk runs on the frame-pointer code only (this file, the fp chain):
 * every ratio is to it, in the same process. Times are the best (and the
 * median) of ROUNDS batches of walks, the walkers' batches interleaved so a
 * change of the machine's load hits all of them alike. The first walk of each
 * walker is checked: its frames, named with dladdr, must be the expected
 * functions up to main, then the C library's start code to _start.
 * --cold WALKER: in this fresh process, time only WALKER's very first walk
 * (chain shape, nofp unless WALKER is fp), in µs.
 *   bench_backtrace [DEPTH [ITERATIONS]]      the recursive shape, as before
 *   bench_backtrace [--shape recursive|chain|chain-drap] [--depth N]
 *                   [--variant fp|nofp] [--walkers W,W..] [--rounds N]
 *                   [--iterations N] [--batch-ms MS] [--cold W] [--tsv] [--pcs]
 * --iterations fixes the walks per batch (default: calibrated to --batch-ms);
 * --pcs also prints each walker's PCs (first walk) in one line;
 * --tsv prints tab-separated rows for bench/backtrace_procs.sh and
 * bench/backtrace_callgrind.sh. Not a test: nothing here asserts a time. */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "backstep.h"
#include "backtrace_chain.h"

#define MAXF 512
#define MAXROUNDS 64

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- The walkers -------------------------------------------------------- */

__attribute__((noinline)) static int walk_fp(void **pcs, int max)
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

static int (*nongnu_backtrace)(void **, int); /* called directly: no frame of ours */
static int (*llvm_getcontext)(void *);
static int (*llvm_init_local)(void *, void *);
static int (*llvm_step)(void *);
static int (*llvm_get_reg)(void *, int, uint64_t *);

__attribute__((noinline)) static int walk_llvm(void **pcs, int max)
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

/* The full-register walks (bkcursor, unwstep): per frame the PC and every
 * callee-saved register, rbx, rbp, r12-r15, and rsp — DWARF numbers, which
 * are also nongnu libunwind's x86-64 numbers (UNW_X86_64_RBX 3, RBP 6, RSP
 * 7, R12..R15 12..15, RIP 16 = UNW_REG_IP: libunwind-x86_64.h of 1.6.2).
 * The registers' values go to reg_sink. Both start a frame too deep, in
 * the walker's own function (at the return from bk_cursor_init_local, from
 * unw_getcontext), and step over it without reading it, so their first PC
 * is the return address into bench_walk like every other walker's. */
#if defined(__aarch64__) /* x19-x29 and sp (AADWARF64) */
static const int full_regs[] = {19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 31};
#else
static const int full_regs[] = {3, 6, 12, 13, 14, 15, 7};
#endif
enum { NFULL_REGS = sizeof full_regs / sizeof full_regs[0] };
static volatile uint64_t reg_sink;

__attribute__((noinline)) static int walk_bkcursor(void **pcs, int max)
{
	struct bk_cursor c;
	if (bk_cursor_init_local(&c, bk_space_local()) != 0 || bk_cursor_step(&c) != 1)
		return 0;
	uint64_t acc = 0;
	int n = 0;
	while (n < max) {
		uint64_t pc = bk_cursor_pc(&c), v;
		for (int k = 0; k < NFULL_REGS; k++)
			if (bk_cursor_reg(&c, (unsigned)full_regs[k], &v) == 1)
				acc ^= v;
		pcs[n++] = (void *)(uintptr_t)pc;
		if (bk_cursor_step(&c) != 1)
			break;
	}
	reg_sink = acc;
	return n;
}

/* nongnu libunwind's local API without its header (libunwind-dev), as in
 * tests/localdiff/unw_rs_cache.c: on x86-64 unw_context_t is ucontext_t,
 * unw_cursor_t 127 words; unw_getcontext is _Ux86_64_getcontext, the local
 * unw_init_local, unw_step, unw_get_reg are _ULx86_64_*. */
static int (*unw8_getcontext)(ucontext_t *);
static int (*unw8_init_local)(void *, ucontext_t *);
static int (*unw8_step)(void *);
static int (*unw8_get_reg)(void *, int, uint64_t *);

__attribute__((noinline)) static int walk_unwstep(void **pcs, int max)
{
	ucontext_t ctx;
	_Alignas(16) uint64_t cursor[127];
	unw8_getcontext(&ctx);
	if (unw8_init_local(cursor, &ctx) != 0 || unw8_step(cursor) <= 0)
		return 0;
	uint64_t acc = 0;
	int n = 0;
	while (n < max) {
		uint64_t ip = 0, v;
		unw8_get_reg(cursor, 16 /* UNW_REG_IP */, &ip);
		for (int k = 0; k < NFULL_REGS; k++)
			if (unw8_get_reg(cursor, full_regs[k], &v) == 0)
				acc ^= v;
		pcs[n++] = (void *)(uintptr_t)ip;
		if (unw8_step(cursor) <= 0)
			break;
	}
	reg_sink = acc;
	return n;
}

enum { W_FP, W_BK, W_GLIBC, W_NONGNU, W_LLVM, W_BKCURSOR, W_UNWSTEP, W_BK8, NWALKERS };

static struct walker {
	const char *id, *name;
	int (*fn)(void **, int);
	int available;
} walkers[NWALKERS] = {
	[W_FP] = {"fp", "frame pointers", walk_fp, 1},
	[W_BK] = {"bk", "bk_backtrace", bk_backtrace, 1},
	[W_GLIBC] = {"glibc", "glibc backtrace (libgcc)", backtrace, 1},
	[W_NONGNU] = {"nongnu", "nongnu libunwind", NULL, 0}, /* unw_backtrace, once loaded */
	[W_LLVM] = {"llvm", "LLVM libunwind unw_step", walk_llvm, 0},
	[W_BKCURSOR] = {"bkcursor", "bk_cursor loop, all regs", walk_bkcursor, 1},
	[W_UNWSTEP] = {"unwstep", "nongnu unw_step, all regs", walk_unwstep, 0},
	[W_BK8] = {"bk8", "bk_backtrace, 8 steppers", bk_backtrace, 1},
};

/* bk8: bk_backtrace while 8 user steppers are added to its space, each
 * claiming 2 KiB of an anonymous mapping no code runs in (a JIT's arena),
 * priorities spread over the chain (before signal frames to after the
 * scan). Added before each of its batches and removed after, so the bk
 * walker's batches, interleaved with them, run with none. */
static int stepper_never(void *ctx, const struct bk_frame *in, struct bk_frame *out)
{
	(void)in;
	(void)out;
	++*(volatile long *)ctx; /* would show in the results: it must stay 0 */
	return BK_STEP_NOT_MINE;
}
static long stepper_calls;
static unsigned stepper_ids[8];
static uint8_t *stepper_arena;

static void steppers_add(void)
{
	if (!stepper_arena) {
		stepper_arena = mmap(NULL, 1 << 20, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (stepper_arena == MAP_FAILED) {
			perror("mmap");
			exit(1);
		}
	}
	for (int i = 0; i < 8; i++) {
		uint64_t lo = (uint64_t)(uintptr_t)stepper_arena + (uint64_t)i * 65536;
		struct bk_stepper st = {sizeof(st), "bench", stepper_never, &stepper_calls,
					lo, lo + 2048, 50 + 50 * i};
		if (bk_space_add_stepper(bk_space_local(), &st, &stepper_ids[i])) {
			fprintf(stderr, "bench_backtrace: bk_space_add_stepper failed\n");
			exit(1);
		}
	}
}

static void steppers_remove(void)
{
	for (int i = 0; i < 8; i++)
		bk_space_remove_stepper(bk_space_local(), stepper_ids[i]);
}

static void load_nongnu(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	if (h) {
		nongnu_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
		*(void **)&unw8_getcontext = dlsym(h, "_Ux86_64_getcontext");
		*(void **)&unw8_init_local = dlsym(h, "_ULx86_64_init_local");
		*(void **)&unw8_step = dlsym(h, "_ULx86_64_step");
		*(void **)&unw8_get_reg = dlsym(h, "_ULx86_64_get_reg");
	}
	walkers[W_NONGNU].fn = nongnu_backtrace;
	walkers[W_NONGNU].available = nongnu_backtrace != NULL;
	walkers[W_UNWSTEP].available = unw8_getcontext && unw8_init_local && unw8_step && unw8_get_reg;
}

static void load_llvm(void)
{
	void *l = dlopen("/usr/lib/llvm-14/lib/libunwind.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!l)
		return;
	llvm_getcontext = (int (*)(void *))dlsym(l, "unw_getcontext");
	llvm_init_local = (int (*)(void *, void *))dlsym(l, "unw_init_local");
	llvm_step = (int (*)(void *))dlsym(l, "unw_step");
	llvm_get_reg = (int (*)(void *, int, uint64_t *))dlsym(l, "unw_get_reg");
	walkers[W_LLVM].available = llvm_getcontext && llvm_init_local && llvm_step && llvm_get_reg;
}

/* ---- Jobs: one walker on one stack -------------------------------------- */

enum shape { S_RECURSIVE, S_CHAIN, S_CHAIN_DRAP };
static const char *const shape_names[] = {"recursive", "chain", "chain-drap"};
enum mode { M_FIRST, M_BATCH };

struct job {
	int walker;
	int fp_chain;   /* the chain shapes: the fp variant (else nofp) */
	enum mode mode; /* what the bottom of the stack does this time */
	long batch;     /* walks per batch */
	double batch_ns;
	int last_frames; /* frames of the last walk of the last batch */
	/* the first walk */
	double first_ns;
	int frames;
	void *pcs[MAXF];
	/* results */
	long walks; /* every call of the walker */
	int nrounds;
	double round_ns[MAXROUNDS]; /* per walk */
	int expected, ok;
	char why[160];
};

static enum shape shape = S_RECURSIVE;
static int depth = 30;

/* The functions from the walker's caller to main: exported (the executable is
 * linked with -rdynamic) so that dladdr names them when the walks are
 * checked, and kept apart by a volatile store after each call. */
void bench_walk(struct job *j);
void bench_bottom(struct chain_ctx *ctx);
void bench_descend(int n, struct chain_ctx *ctx);
void bench_run_job(struct job *j);

static volatile unsigned sink;

__attribute__((noinline)) void bench_walk(struct job *j)
{
	int (*fn)(void **, int) = walkers[j->walker].fn;
	void *pcs[MAXF];
	if (j->mode == M_FIRST) {
		double t0 = now_ns();
		j->frames = fn(j->pcs, MAXF);
		j->first_ns = now_ns() - t0;
		j->walks++;
	} else {
		int n = 0;
		double t0 = now_ns();
		for (long i = 0; i < j->batch; i++)
			n = fn(pcs, MAXF);
		j->batch_ns = now_ns() - t0;
		j->walks += j->batch;
		j->last_frames = n;
	}
	sink = (unsigned)j->walks;
}

__attribute__((noinline)) void bench_bottom(struct chain_ctx *ctx)
{
	bench_walk(ctx->job);
	sink = 0;
}

__attribute__((noinline)) void bench_descend(int n, struct chain_ctx *ctx)
{
	if (n > 0)
		bench_descend(n - 1, ctx);
	else
		bench_bottom(ctx);
	sink = (unsigned)n;
}

__attribute__((noinline)) void bench_run_job(struct job *j)
{
	struct chain_ctx ctx = {.bottom = bench_bottom, .realign = shape == S_CHAIN_DRAP, .job = j};
	if (shape == S_RECURSIVE)
		bench_descend(depth, &ctx);
	else if (j->fp_chain)
		sink = chain_fp_f0(&ctx, 7);
	else
		sink = chain_nofp_f0(&ctx, 7);
	sink = 1;
}

/* A job, with bk8's steppers around it (here, not in bench_run_job: the
 * stack the walks see stays the same for every walker). */
static inline __attribute__((always_inline)) void run_job(struct job *j)
{
	if (j->walker == W_BK8)
		steppers_add();
	bench_run_job(j);
	if (j->walker == W_BK8)
		steppers_remove();
}

/* ---- Checking the first walk -------------------------------------------- */

static const char *name_of(void *pc)
{
	Dl_info info;
	if (!dladdr((char *)pc - 1, &info) || !info.dli_sname)
		return "?";
	return info.dli_sname;
}

/* The frames every walker must give, innermost first, up to main; below
 * main glibc's start code: __libc_start_call_main, __libc_start_main, then
 * _start (the last one, its return address undefined). The frame-pointer
 * walk reaches main and the return address into libc (main's frame record
 * holds it), then stops: libc keeps no frame pointers. */
static void check(struct job *j)
{
	static char expect[CHAIN_LEN + 100][32];
	int ne = 0;
	snprintf(expect[ne++], 32, "bench_walk");
	snprintf(expect[ne++], 32, "bench_bottom");
	if (shape == S_RECURSIVE) {
		for (int i = 0; i <= depth && ne < CHAIN_LEN + 90; i++)
			snprintf(expect[ne++], 32, "bench_descend");
	} else {
		for (int k = CHAIN_LEN - 1; k >= 0; k--)
			snprintf(expect[ne++], 32, "chain_%s_f%d%s", j->fp_chain ? "fp" : "nofp", k,
				 shape == S_CHAIN_DRAP && k == CHAIN_REALIGNED ? "_drap" : "");
	}
	snprintf(expect[ne++], 32, "bench_run_job");
	snprintf(expect[ne++], 32, "main");
	/* Below main: the C library's start code, to _start (3 frames). The
	 * frame-pointer walk sees 1 on x86-64, whose glibc keeps no frame
	 * pointers, and all 3 on AArch64, whose glibc keeps frame records. */
#if defined(__aarch64__)
	int below_main = 3;
#else
	int below_main = j->walker == W_FP ? 1 : 3;
#endif
	j->expected = ne + below_main;
	j->ok = 1;
	j->why[0] = 0;
	for (int i = 0; i < ne; i++) {
		const char *got = i < j->frames ? name_of(j->pcs[i]) : "(end of walk)";
		if (strcmp(got, expect[i])) {
			snprintf(j->why, sizeof j->why, "frame %d is %.64s, expected %.32s", i, got,
				 expect[i]);
			j->ok = 0;
			return;
		}
	}
	if (j->frames != j->expected) {
		snprintf(j->why, sizeof j->why, "%d frames, expected %d", j->frames, j->expected);
		j->ok = 0;
	} else if (j->walker != W_FP && strcmp(name_of(j->pcs[j->frames - 1]), "_start")) {
		snprintf(j->why, sizeof j->why, "the last frame is %s, not _start",
			 name_of(j->pcs[j->frames - 1]));
		j->ok = 0;
	}
}

/* ---- Main ----------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static void usage(void)
{
	fprintf(stderr, "usage: bench_backtrace [DEPTH [ITERATIONS]]\n"
			"       bench_backtrace [--shape recursive|chain|chain-drap] [--depth N]\n"
			"                       [--variant fp|nofp] [--walkers W,W..] [--rounds N]\n"
			"                       [--iterations N] [--batch-ms MS] [--cold W] [--tsv]\n"
			"                       [--pcs]\n"
			"walkers: fp bk glibc nongnu llvm bkcursor unwstep bk8\n");
	exit(2);
}

static int walker_index(const char *id)
{
	for (int w = 0; w < NWALKERS; w++)
		if (!strcmp(walkers[w].id, id))
			return w;
	fprintf(stderr, "bench_backtrace: no walker '%s'\n", id);
	usage();
	return -1;
}

static struct job jobs[2 * NWALKERS];

int main(int argc, char **argv)
{
	int rounds = 7, tsv = 0, print_pcs = 0, cold = -1, variant = -1; /* variant: -1 both, 1 fp, 0 nofp */
	long iterations = 0;
	double batch_ms = 10;
	int want[NWALKERS];
	for (int w = 0; w < NWALKERS; w++)
		want[w] = 1;
	int positional = 0, shape_given = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (a[0] != '-' && positional == 0) {
			depth = atoi(a), positional++;
		} else if (a[0] != '-' && positional == 1) {
			iterations = atol(a), rounds = 1, positional++;
		} else if (!strcmp(a, "--tsv")) {
			tsv = 1;
		} else if (!strcmp(a, "--pcs")) {
			print_pcs = 1;
		} else if (!v) {
			usage();
		} else if (!strcmp(a, "--shape")) {
			int s;
			for (s = 0; s < 3 && strcmp(v, shape_names[s]); s++)
				;
			if (s == 3)
				usage();
			shape = (enum shape)s, shape_given = 1, i++;
		} else if (!strcmp(a, "--depth")) {
			depth = atoi(v), i++;
		} else if (!strcmp(a, "--variant")) {
			if (strcmp(v, "fp") && strcmp(v, "nofp"))
				usage();
			variant = !strcmp(v, "fp"), i++;
		} else if (!strcmp(a, "--walkers")) {
			char buf[256];
			snprintf(buf, sizeof buf, "%s", v), i++;
			memset(want, 0, sizeof want);
			for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
				want[walker_index(s)] = 1;
		} else if (!strcmp(a, "--rounds")) {
			rounds = atoi(v), i++;
		} else if (!strcmp(a, "--iterations")) {
			iterations = atol(v), i++;
		} else if (!strcmp(a, "--batch-ms")) {
			batch_ms = atof(v), i++;
		} else if (!strcmp(a, "--cold")) {
			cold = walker_index(v), i++;
		} else {
			usage();
		}
	}
	if (rounds < 1 || rounds > MAXROUNDS || depth < 0 || depth > 400 || iterations < 0)
		usage();
	(void)now_ns(); /* the clock's own first call is not part of any walk */

	if (cold >= 0) {
		/* Only this walker's library is loaded; nothing has walked yet. */
		if (cold == W_NONGNU || cold == W_UNWSTEP)
			load_nongnu();
		if (cold == W_LLVM)
			load_llvm();
		if (!walkers[cold].available) {
			fprintf(stderr, "bench_backtrace: %s is not installed\n", walkers[cold].name);
			return 1;
		}
		if (!shape_given)
			shape = S_CHAIN;
		struct job *j = &jobs[0];
		j->walker = cold;
		j->fp_chain = cold == W_FP || variant == 1;
		j->mode = M_FIRST;
		run_job(j);
		check(j);
		if (tsv)
			printf("cold\t%s\t%s\t%s\t%d\t%d\t%d\t%.2f\t%s\n", shape_names[shape],
			       j->fp_chain ? "fp" : "nofp", walkers[cold].id, j->frames, j->expected,
			       j->ok, j->first_ns / 1e3, j->why);
		else
			printf("%s, %s chain: first walk of %s: %d frames (expected %d%s%s), %.2f µs\n",
			       shape_names[shape], j->fp_chain ? "fp" : "nofp", walkers[cold].name,
			       j->frames, j->expected, j->ok ? "" : "; WRONG: ", j->why,
			       j->first_ns / 1e3);
		return 0;
	}

	load_nongnu();
	load_llvm();
	/* The jobs: the frame-pointer walk first (the reference), then each
	 * walker on each variant asked for. */
	int njobs = 0;
	for (int fpv = 1; fpv >= 0; fpv--) {
		if (shape == S_RECURSIVE && fpv == 0)
			break;
		for (int w = 0; w < NWALKERS; w++) {
			int reference = w == W_FP && fpv == 1;
			if (!walkers[w].available || (!want[w] && !reference))
				continue;
			if (w == W_FP && fpv == 0)
				continue; /* no frame pointers to follow */
			if (shape != S_RECURSIVE && variant >= 0 && variant != fpv && !reference)
				continue;
			jobs[njobs].walker = w;
			jobs[njobs].fp_chain = fpv;
			njobs++;
		}
	}

	/* The first walk of each, checked; then the batch sizes; then ROUNDS
	 * rounds, each one batch of every job. */
	for (int i = 0; i < njobs; i++) {
		jobs[i].mode = M_FIRST;
		run_job(&jobs[i]);
		check(&jobs[i]);
		jobs[i].mode = M_BATCH;
	}
	for (int i = 0; i < njobs; i++) {
		struct job *j = &jobs[i];
		if (iterations) {
			j->batch = iterations;
			continue;
		}
		for (j->batch = 1;; j->batch *= 2) {
			run_job(j);
			if (j->batch_ns >= 1e6 || j->batch >= (1L << 30))
				break;
		}
		j->batch = (long)(j->batch * batch_ms * 1e6 / j->batch_ns) + 1;
	}
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < njobs; i++) {
			run_job(&jobs[i]);
			jobs[i].round_ns[jobs[i].nrounds++] = jobs[i].batch_ns / jobs[i].batch;
		}

	char loadavg[64] = "?";
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (!fgets(loadavg, sizeof loadavg, f))
			loadavg[0] = 0;
		loadavg[strcspn(loadavg, "\n")] = 0;
		fclose(f);
	}
	if (tsv)
		printf("# pid %d; load %s; lib1 (nofp) at %p; rounds %d\n"
		       "#row\tshape\tvariant\twalker\tframes\texpected\tok\twarm_frames\t"
		       "ns_walk_best\tns_walk_median\tns_frame\tratio\twalks\tfirst_us\tproblem\n",
		       (int)getpid(), loadavg, dlsym(RTLD_DEFAULT, "chain_nofp_f1"), rounds);
	else if (shape == S_RECURSIVE)
		printf("stack: %d recursive frames + the harness's and main's; best and median of "
		       "%d batches (pid %d, load %s)\n",
		       depth, rounds, (int)getpid(), loadavg);
	else
		printf("stack: %d functions over the executable and 3 libraries%s; best and median "
		       "of %d batches (pid %d, load %s)\n",
		       CHAIN_LEN, shape == S_CHAIN_DRAP ? ", one frame realigned (DRAP)" : "",
		       rounds, (int)getpid(), loadavg);
	if (!tsv)
		printf("%-7s %-26s %6s %6s %10s %10s %9s %8s\n", "code", "walker", "frames",
		       "expect", "ns/walk", "(median)", "ns/frame", "ratio");
	double fp_frame = 0;
	for (int i = 0; i < njobs; i++) {
		struct job *j = &jobs[i];
		double sorted[MAXROUNDS];
		memcpy(sorted, j->round_ns, sizeof(double) * j->nrounds);
		qsort(sorted, j->nrounds, sizeof(double), cmp_double);
		double best = sorted[0], median = sorted[j->nrounds / 2];
		if (j->nrounds % 2 == 0)
			median = (sorted[j->nrounds / 2 - 1] + sorted[j->nrounds / 2]) / 2;
		double per = best / (j->frames ? j->frames : 1);
		if (i == 0)
			fp_frame = per;
		if (j->ok && j->last_frames != j->frames) {
			snprintf(j->why, sizeof j->why, "first walk %d frames, warm walks %d",
				 j->frames, j->last_frames);
			j->ok = 0;
		}
		const char *code = shape == S_RECURSIVE ? "fp" : j->fp_chain ? "fp" : "nofp";
		if (tsv)
			printf("row\t%s\t%s\t%s\t%d\t%d\t%d\t%d\t%.1f\t%.1f\t%.3f\t%.3f\t%ld\t%.2f\t%s\n",
			       shape_names[shape], code, walkers[j->walker].id, j->frames,
			       j->expected, j->ok, j->last_frames, best, median, per,
			       per / fp_frame, j->walks, j->first_ns / 1e3, j->why);
		else
			printf("%-7s %-26s %6d %6d %10.1f %10.1f %9.2f %7.1fx%s%s\n", code,
			       walkers[j->walker].name, j->frames, j->expected, best, median, per,
			       per / fp_frame, j->ok ? "" : "  WRONG: ", j->why);
	}
	if (stepper_arena)
		printf("%sbk8: its steppers were asked %ld times (must be 0)\n", tsv ? "# " : "",
		       stepper_calls);
	for (int i = 0; print_pcs && i < njobs; i++) {
		printf("pcs\t%s\t%s\t%s\t", shape_names[shape], jobs[i].fp_chain ? "fp" : "nofp",
		       walkers[jobs[i].walker].id);
		for (int k = 0; k < jobs[i].frames; k++)
			printf("%s%p", k ? "," : "", jobs[i].pcs[k]);
		printf("\n");
	}
	return 0;
}
