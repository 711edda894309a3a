/* The cursor on this very process: registers from getcontext(), memory read
 * as the local target reads it (process_vm_readv on ourselves, else a pipe:
 * src/target/local.c), modules from /proc/self/maps. The
 * walk must pass through the test's own call chain in order, end cleanly at
 * the outermost frame, and do the same again from the row cache. Also: a
 * signal handler's walk crosses the signal frame into the interrupted code,
 * and bad starts are refused. */
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <ucontext.h>
#include <unistd.h>

#include "backstep.h"
#include "check.h"
#include "self_maps.h"
#include "target/target.h"
#include "uc_regs.h"

static int read_self(void *ctx, uint64_t addr, void *dst, size_t len)
{
	return tgt_local_read(ctx, addr, dst, len);
}

static struct bk_space *make_space(void)
{
	static const struct bk_target_ops ops = { sizeof(ops), read_self };
	struct bk_space *s;
	if (bk_space_create(HOST_ARCH, &ops, NULL, &s))
		return NULL;
	self_add_modules(s);
	return s;
}



static struct bk_space *space;

#define MAX_SEEN 64
static const char *seen[MAX_SEEN];
static int nseen, walk_result;
static int hows[MAX_SEEN];

static void walk_from(const ucontext_t *uc)
{
	struct bk_regs regs;
	uc_regs(uc, &regs);
	struct bk_cursor c;
	nseen = 0;
	CHECK_INT(bk_cursor_init(&c, space, &regs), 0, "cursor init");
	do {
		Dl_info info;
		uint64_t pc = bk_cursor_lookup_pc(&c);
		if (nseen < MAX_SEEN) {
			hows[nseen] = bk_cursor_how(&c);
			seen[nseen++] = dladdr((void *)(uintptr_t)pc, &info) && info.dli_sname
						? info.dli_sname : "?";
		}
	} while ((walk_result = bk_cursor_step(&c)) == 1);
	if (getenv("BK_TEST_VERBOSE"))
		for (int i = 0; i < nseen; i++)
			fprintf(stderr, "#%d %s (%s)%s", i, seen[i], bk_how_name(hows[i]),
				i + 1 == nseen ? "\n" : "\n");
}

static int index_of(const char *name)
{
	for (int i = 0; i < nseen; i++)
		if (strcmp(seen[i], name) == 0)
			return i;
	return -1;
}

__attribute__((noinline)) void chain_leaf(void)
{
	ucontext_t uc;
	getcontext(&uc);
	walk_from(&uc);
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_middle(int n)
{
	if (n > 0)
		chain_middle(n - 1);
	else
		chain_leaf();
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void chain_top(void)
{
	chain_middle(3);
	__asm__ volatile("" ::: "memory");
}

static void check_chain(const char *what)
{
	int leaf = index_of("chain_leaf"), top = index_of("chain_top"), m = index_of("main");
	CHECK(leaf >= 0 && top > leaf && m > top, "%s: frames in order (leaf %d, top %d, main %d)",
	      what, leaf, top, m);
	int middles = 0;
	for (int i = 0; i < nseen; i++)
		middles += strcmp(seen[i], "chain_middle") == 0;
	CHECK_INT(middles, 4, what);
	CHECK_INT(walk_result, 0, what);
	CHECK(nseen < 20, "%s: %d frames, no invented ones", what, nseen);
	for (int i = 1; i < nseen; i++)
		CHECK(hows[i] == BK_HOW_CFI, "%s: frame %d (%s) by %d", what, i, seen[i], hows[i]);
}

/* A profiler's sample: the registers and a copy of the stack from SP to the
 * stack's end; walked offline after the stack has moved on, it must give the
 * same frames as the live walk taken at the same point. */
static uint64_t live_pcs[MAX_SEEN], snap_pcs[MAX_SEEN];
static int nlive, nsnap, snap_result;

/* Copy raw stack bytes as a profiler does: they include AddressSanitizer's
 * redzones, which are ours to read here. */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize("address")))
#endif
static void copy_stack(void *dst, uint64_t src, size_t len)
{
	volatile const uint8_t *s = (const uint8_t *)(uintptr_t)src;
	uint8_t *d = dst;
	for (size_t i = 0; i < len; i++)
		d[i] = s[i];
}

__attribute__((noinline)) void snapshot_leaf(void)
{
	ucontext_t uc;
	getcontext(&uc);
	struct bk_regs regs;
	uc_regs(&uc, &regs);
	uint64_t sp = 0;
	bk_regs_get(&regs, HOST_SP, &sp);
	size_t len = (size_t)(self_mapping_end(sp) - sp);
	void *copy = malloc(len);
	copy_stack(copy, sp, len);

	struct bk_cursor c;
	nlive = 0;
	bk_cursor_init(&c, space, &regs);
	do
		live_pcs[nlive++] = bk_cursor_pc(&c);
	while (nlive < MAX_SEEN && bk_cursor_step(&c) == 1);

	struct bk_mem_region region = { sp, copy, len };
	struct bk_space *snap;
	CHECK_INT(bk_space_create_snapshot(HOST_ARCH, &region, 1, &snap), 0, "snapshot space");
	self_add_modules(snap);
	nsnap = 0;
	CHECK_INT(bk_cursor_init(&c, snap, &regs), 0, "snapshot cursor");
	do
		snap_pcs[nsnap++] = bk_cursor_pc(&c);
	while (nsnap < MAX_SEEN && (snap_result = bk_cursor_step(&c)) == 1);

	/* This program's module replaced by one without a file (no CFI): the
	 * rows and rules the walks above cached for its code must go with it
	 * (the step out of this function is no longer CFI's), and come back
	 * with the file. */
	struct bk_module_info mi;
	uint64_t pc = 0;
	bk_regs_get(&regs, HOST_PC, &pc);
	if (bk_space_module_at(snap, pc, &mi) == 0) {
		struct bk_module_desc d = { .size = sizeof(d), .path = "/nonexistent/no-cfi",
					    .base = mi.start, .start = mi.start, .end = mi.end };
		CHECK_INT(bk_space_add_module(snap, &d), 0, "replace this program's module");
		CHECK_INT(bk_cursor_init(&c, snap, &regs), 0, "after the replacement: cursor");
		CHECK(bk_cursor_step(&c) != 1 || bk_cursor_how(&c) != BK_HOW_CFI,
		      "after the replacement: no cached CFI row steps out of the leaf");
		self_add_modules(snap);
		int k = 0;
		CHECK_INT(bk_cursor_init(&c, snap, &regs), 0, "the file again: cursor");
		while (k < nsnap && bk_cursor_pc(&c) == snap_pcs[k] && bk_cursor_step(&c) == 1)
			k++;
		CHECK_INT(k + 1, nsnap, "the file again: the same walk");
	} else {
		CHECK(0, "the leaf's module");
	}
	bk_space_destroy(snap);
	free(copy);
}

__attribute__((noinline)) void snapshot_middle(int n)
{
	if (n)
		snapshot_middle(n - 1);
	else
		snapshot_leaf();
	__asm__ volatile("" ::: "memory");
}

static volatile sig_atomic_t in_handler;

void on_signal(int sig, siginfo_t *si, void *ctx);
void on_signal(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)si;
	(void)ctx;
	ucontext_t uc;
	getcontext(&uc);
	walk_from(&uc);
	in_handler = 1;
}

__attribute__((noinline)) void raise_it(void)
{
	raise(SIGUSR1);
	__asm__ volatile("" ::: "memory");
}

int main(void)
{
	space = make_space();
	CHECK(space != NULL, "space");
	if (!space)
		return check_summary();

	chain_top();
	check_chain("first walk");
	chain_top();
	check_chain("second walk (row cache)");

	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	raise_it();
	CHECK(in_handler, "handler ran");
	int h = index_of("on_signal"), r = index_of("raise_it"), m = index_of("main");
	CHECK(h >= 0 && r > h && m > r, "signal walk crosses into the interrupted code (%d %d %d)",
	      h, r, m);
	int sig = -1;
	for (int i = 0; i < nseen; i++)
		if (hows[i] == BK_HOW_SIGNAL)
			sig = i;
	CHECK(sig > h && sig < r, "a signal frame between handler and raise_it (%d)", sig);
	CHECK_INT(walk_result, 0, "signal walk ends cleanly");

	snapshot_middle(5);
	CHECK(nlive > 8, "live walk of the snapshot point (%d frames)", nlive);
	CHECK_INT(nsnap, nlive, "snapshot walk: as many frames");
	for (int i = 0; i < nlive && i < nsnap; i++)
		CHECK_U64(snap_pcs[i], live_pcs[i], "snapshot walk: same PC");
	CHECK_INT(snap_result, 0, "snapshot walk ends cleanly");
	const uint8_t byte = 0;
	struct bk_mem_region bad = { 0x1000, &byte, 1 };
	struct bk_space *tiny;
	CHECK_INT(bk_space_create_snapshot(HOST_ARCH, &bad, 1, &tiny), 0, "tiny snapshot");
	bk_space_destroy(tiny);
	CHECK_INT(bk_space_create_snapshot(HOST_ARCH, NULL, 1, &tiny), BK_E_INVAL,
		  "regions missing");

	/* Bad starts. */
	struct bk_cursor c;
	struct bk_regs none;
	memset(&none, 0, sizeof(none));
	CHECK_INT(bk_cursor_init(&c, space, &none), BK_E_INVAL, "no PC/SP");
	bk_regs_set(&none, HOST_PC, 0x1234);
	bk_regs_set(&none, HOST_SP, 0x10);
	CHECK_INT(bk_cursor_init(&c, space, &none), 0, "garbage PC and SP");
	int rc = bk_cursor_step(&c);
	CHECK(rc <= 0, "a garbage frame does not step (%d)", rc);
	CHECK_INT(bk_cursor_step(&c), rc, "after the end, step repeats its answer");

	bk_space_destroy(space);
	return check_summary();
}
