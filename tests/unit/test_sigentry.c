/* A signal that arrives at a function's very first instruction, walked over
 * a copy of the stack only: no code byte of the process is readable, as in
 * a profiler's sample (perf's stack copy) or bk_space_create_snapshot.
 * x86-64 only (the trap flag).
 *
 * How the signal lands exactly there: caller() sets the trap flag
 * (EFLAGS.TF) right before it calls sigentry_target (sigentry_code.S);
 * every instruction then raises SIGTRAP, and the handler returns at once
 * (the kernel restores TF with the context) until the interrupted PC is
 * the target's entry. There the handler clears TF, takes its own
 * registers (getcontext) and a copy of the stack from its SP to the
 * stack's end, and walks:
 *
 *   on_trap  (handler; the walk starts here)
 *   __restore_rt  (its return address; CIE augmentation 'S')
 *   sigentry_target  (interrupted at its first instruction: looked up at
 *             its PC; at PC - 1 the row is the previous function's)
 *   caller, main, ... to the outermost frame.
 *
 * The same walk four ways: the cursor over bk_space_create_snapshot, the
 * cursor over a space whose read_mem serves the copied range only, and
 * the PC-only walk (uw_walk_pcs) over both (the snapshot's copy is its
 * window; the other space has none: every read goes through read_mem).
 * Also the walk from the interrupted context itself (a sample taken at the
 * entry), and the lookup PCs used for symbols: the trampoline's and the
 * interrupted frame's are their PCs. */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <ucontext.h>

#include "backstep.h"
#include "check.h"
#include "self_maps.h"
#include "unwind/unwind.h"

#define MAX_FRAMES 64
#define TF 0x100

/* A frame as a walk gave it. */
struct frame {
	uint64_t pc, lookup;
	int how;
};

static volatile sig_atomic_t hit, steps;
static uint64_t restorer;
static ucontext_t interrupted_uc;

/* The copied stack and the handler's registers. */
static uint8_t *copy;
static uint64_t copy_addr, copy_len;
static struct bk_regs handler_regs, entry_regs;

__attribute__((noinline)) long caller(long x);
void on_trap(int sig, siginfo_t *si, void *ctx);

/* The function the signal interrupts at its entry (sigentry_code.S: right
 * after a function whose last row is another, so PC - 1 would unwind into
 * garbage). */
long sigentry_target(long n);

/* Sets the trap flag, then calls target: the SIGTRAP after the call
 * instruction is at target's first instruction. (No red zone is in use:
 * this function calls.) */
__attribute__((noinline)) long caller(long x)
{
	__asm__ volatile("pushfq\n\torq $0x100, (%%rsp)\n\tpopfq" ::: "memory", "cc");
	long r = sigentry_target(x);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

static void regs_of(const ucontext_t *uc, struct bk_regs *regs)
{
	static const int map[17] = { REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
				     REG_RBP, REG_RSP, REG_R8, REG_R9, REG_R10, REG_R11,
				     REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP };
	memset(regs, 0, sizeof(*regs));
	for (int i = 0; i < 17; i++)
		bk_regs_set(regs, (unsigned)i, (uint64_t)uc->uc_mcontext.gregs[map[i]]);
}

/* The end of the stack's mapping (read before the signal: the handler
 * only copies). */
static uint64_t stack_end;


/* Raw stack bytes, AddressSanitizer's redzones included (ours to read). */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize("address")))
#endif
static void copy_stack(uint8_t *dst, uint64_t src, size_t len)
{
	volatile const uint8_t *s = (const uint8_t *)(uintptr_t)src;
	for (size_t i = 0; i < len; i++)
		dst[i] = s[i];
}

/* The handler: single steps until target's entry, then the capture. */
void on_trap(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ctx;
	if ((uint64_t)uc->uc_mcontext.gregs[REG_RIP] != (uint64_t)(uintptr_t)sigentry_target) {
		if (++steps > 100000) /* never got there: stop stepping */
			uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TF;
		return;
	}
	uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TF;
	restorer = (uint64_t)(uintptr_t)__builtin_return_address(0);
	interrupted_uc = *uc;
	ucontext_t here;
	getcontext(&here);
	regs_of(&here, &handler_regs);
	regs_of(uc, &entry_regs);
	uint64_t sp = (uint64_t)here.uc_mcontext.gregs[REG_RSP];
	if (sp < stack_end && copy && stack_end - sp <= copy_len) {
		copy_addr = sp;
		copy_len = stack_end - sp;
		copy_stack(copy, sp, copy_len);
		hit = 1;
	}
	__asm__ volatile("" ::: "memory");
}

/* ---- Spaces over the copy only --------------------------------------------- */

static int read_copy(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	uint64_t off = addr - copy_addr;
	if (off >= copy_len || len > copy_len - off)
		return BK_E_MEMORY;
	memcpy(dst, copy + off, len);
	return 0;
}


static struct bk_space *snapshot_space(void)
{
	struct bk_mem_region region = { copy_addr, copy, copy_len };
	struct bk_space *s = NULL;
	CHECK_INT(bk_space_create_snapshot(BK_ARCH_X86_64, &region, 1, &s), 0, "snapshot space");
	if (s)
		self_add_modules(s);
	return s;
}

static struct bk_space *callback_space(void)
{
	static const struct bk_target_ops ops = { sizeof(ops), read_copy };
	struct bk_space *s = NULL;
	CHECK_INT(bk_space_create(BK_ARCH_X86_64, &ops, NULL, &s), 0, "callback space");
	if (s)
		self_add_modules(s);
	return s;
}

/* ---- Walks ------------------------------------------------------------------- */

static int cursor_walk(struct bk_space *s, const struct bk_regs *regs, struct frame *f,
		       int *result)
{
	struct bk_cursor c;
	int n = 0;
	*result = bk_cursor_init(&c, s, regs);
	if (*result)
		return 0;
	do {
		f[n].pc = bk_cursor_pc(&c);
		f[n].lookup = bk_cursor_lookup_pc(&c);
		f[n].how = bk_cursor_how(&c);
		n++;
	} while (n < MAX_FRAMES && (*result = bk_cursor_step(&c)) == 1);
	return n;
}

static const char *name_of(uint64_t pc)
{
	Dl_info info;
	return dladdr((void *)(uintptr_t)pc, &info) && info.dli_sname ? info.dli_sname : "?";
}

static void print_walk(const char *what, const struct frame *f, int n, int result)
{
	if (!getenv("BK_TEST_VERBOSE"))
		return;
	fprintf(stderr, "%s: %d frames, ends %d\n", what, n, result);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "  #%d %#lx lookup %#lx %s (%s)\n", i, (unsigned long)f[i].pc,
			(unsigned long)f[i].lookup, name_of(f[i].lookup), bk_how_name(f[i].how));
}

static bool in_function(uint64_t pc, const char *name)
{
	return strcmp(name_of(pc), name) == 0;
}

/* The cursor's walk from the handler: the frames above, in order. */
static void check_handler_walk(const char *what, const struct frame *f, int n, int result)
{
	char ctx[160];
	print_walk(what, f, n, result);
	snprintf(ctx, sizeof(ctx), "%s: frames", what);
	CHECK(n >= 6, "%s: %d frames", what, n);
	if (n < 6)
		return;
	CHECK(in_function(f[0].pc, "on_trap"), "%s: #0 in on_trap, not %s", what,
	      name_of(f[0].pc));
	snprintf(ctx, sizeof(ctx), "%s: #1 is the trampoline (the handler's return address)", what);
	CHECK_U64(f[1].pc, restorer, ctx);
	CHECK_INT(f[1].how, BK_HOW_CFI, ctx);
	snprintf(ctx, sizeof(ctx), "%s: #1 the trampoline, looked up at its PC", what);
	CHECK_U64(f[1].lookup, restorer, ctx);
	snprintf(ctx, sizeof(ctx), "%s: #2 is target's entry, through the signal frame", what);
	CHECK_U64(f[2].pc, (uint64_t)(uintptr_t)sigentry_target, ctx);
	CHECK_INT(f[2].how, BK_HOW_SIGNAL, ctx);
	snprintf(ctx, sizeof(ctx), "%s: #2 looked up at its PC", what);
	CHECK_U64(f[2].lookup, (uint64_t)(uintptr_t)sigentry_target, ctx);
	snprintf(ctx, sizeof(ctx), "%s: #3 is caller, from target's entry row (CFA = rsp + 8)", what);
	CHECK(in_function(f[3].pc, "caller"), "%s, not %s", ctx, name_of(f[3].pc));
	CHECK_INT(f[3].how, BK_HOW_CFI, ctx);
	CHECK(in_function(f[4].pc, "main"), "%s: #4 in main, not %s", what,
	      name_of(f[4].pc));
	snprintf(ctx, sizeof(ctx), "%s: the walk ends at the outermost frame", what);
	CHECK_INT(result, 0, ctx);
	CHECK(n < 16, "%s: %d frames, no invented ones", what, n);
}

/* The PC-only walk gives the callers of the first frame: the cursor's
 * frames from #1 on, and marks those looked up at their PC (the
 * trampoline, the interrupted frame) as the cursor's lookup PCs do. */
static void check_fast(const char *what, struct bk_space *s, const struct bk_regs *regs,
		       bool window, const struct frame *f, int n)
{
	void *pcs[MAX_FRAMES];
	uint8_t intr[MAX_FRAMES];
	int k;
	if (window) {
		struct uw_window win = { copy_addr, copy_len, copy };
		k = uw_walk_pcs_window(s, regs, true, pcs, MAX_FRAMES, &win, intr);
	} else {
		k = uw_walk_pcs_window(s, regs, true, pcs, MAX_FRAMES, NULL, intr);
	}
	if (getenv("BK_TEST_VERBOSE")) {
		fprintf(stderr, "%s: %d PCs\n", what, k);
		for (int i = 0; i < k; i++)
			fprintf(stderr, "  %#lx%s\n", (unsigned long)(uintptr_t)pcs[i],
				intr[i] ? " (interrupted)" : "");
	}
	char ctx[160];
	snprintf(ctx, sizeof(ctx), "%s: as many frames as the cursor's", what);
	CHECK_INT(k, n - 1, ctx);
	for (int i = 0; i < k && i + 1 < n; i++) {
		snprintf(ctx, sizeof(ctx), "%s: PC #%d is the cursor's", what, i + 1);
		CHECK_U64((uint64_t)(uintptr_t)pcs[i], f[i + 1].pc, ctx);
		snprintf(ctx, sizeof(ctx), "%s: PC #%d looked up at itself?", what, i + 1);
		CHECK_INT(intr[i], f[i + 1].lookup == f[i + 1].pc, ctx);
	}
}

static void walk_all(void)
{
	struct frame f[MAX_FRAMES], g[MAX_FRAMES];
	int result, n, m;
	struct bk_space *snap = snapshot_space(), *cb = callback_space();
	if (!snap || !cb)
		return;

	/* Twice each: the second walk runs from the row cache and rule table. */
	for (int pass = 0; pass < 2; pass++) {
		const char *p = pass ? " (cached)" : "";
		char what[96];
		snprintf(what, sizeof(what), "cursor, snapshot%s", p);
		n = cursor_walk(snap, &handler_regs, f, &result);
		check_handler_walk(what, f, n, result);
		snprintf(what, sizeof(what), "cursor, read_mem of the copy%s", p);
		m = cursor_walk(cb, &handler_regs, g, &result);
		check_handler_walk(what, g, m, result);
		snprintf(what, sizeof(what), "PC-only walk, snapshot (window)%s", p);
		check_fast(what, snap, &handler_regs, true, f, n);
		snprintf(what, sizeof(what), "PC-only walk, snapshot (uw_walk_pcs)%s", p);
		{
			void *pcs[MAX_FRAMES];
			int k = uw_walk_pcs(snap, &handler_regs, true, pcs, MAX_FRAMES);
			CHECK_INT(k, n - 1, what);
			for (int i = 0; i < k && i + 1 < n; i++)
				CHECK_U64((uint64_t)(uintptr_t)pcs[i], f[i + 1].pc, what);
		}
		snprintf(what, sizeof(what), "PC-only walk, read_mem of the copy%s", p);
		check_fast(what, cb, &handler_regs, false, f, n);
	}

	/* A sample taken at target's entry: the interrupted registers. Its
	 * stack (from target's SP) is inside the copy. */
	n = cursor_walk(snap, &entry_regs, f, &result);
	print_walk("cursor from the interrupted context", f, n, result);
	CHECK(n >= 3, "from the entry: %d frames", n);
	if (n >= 3) {
		CHECK_U64(f[0].pc, (uint64_t)(uintptr_t)sigentry_target, "from the entry: #0 target");
		CHECK_U64(f[0].lookup, (uint64_t)(uintptr_t)sigentry_target, "from the entry: #0 at its PC");
		CHECK(in_function(f[1].pc, "caller"), "from the entry: #1 in caller, not %s",
		      name_of(f[1].pc));
		CHECK(in_function(f[2].pc, "main"), "from the entry: #2 in main, not %s",
		      name_of(f[2].pc));
		CHECK_INT(result, 0, "from the entry: ends at the outermost frame");
	}
	check_fast("PC-only walk from the interrupted context", snap, &entry_regs, true, f, n);

	bk_space_destroy(snap);
	bk_space_destroy(cb);
}

int main(void)
{
	int here;
	stack_end = self_mapping_end((uint64_t)(uintptr_t)&here);
	copy_len = 1 << 20;
	copy = malloc(copy_len);
	CHECK(stack_end != 0 && copy != NULL, "setup");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTRAP, &sa, NULL);
	long r = caller(100);
	CHECK(r > 0, "caller ran");
	CHECK(hit, "the signal arrived at target's entry (%d single steps before)", (int)steps);
	if (hit) {
		CHECK_U64((uint64_t)interrupted_uc.uc_mcontext.gregs[REG_RIP],
			  (uint64_t)(uintptr_t)sigentry_target, "interrupted PC");
		walk_all();
	}
	free(copy);
	return check_summary();
}
