/* bk_cursor_init_local: frame 0 is its caller, with every callee-saved
 * register (x86-64: rbx, rbp, r12-r15; AArch64: x19-x29 and d8-d15)
 * recovered and holding the caller's real value, also after
 * bk_cursor_init_local has returned and its frame is gone; stepping on
 * gives the caller's caller's PC and registers. Built twice
 * (tests/meson.build): -O0 with frame pointers and -O2 without, since a
 * caller that keeps its frame pointer reads it back on the first step —
 * where the old code read a dead frame and went astray; on AArch64 also
 * with -mbranch-protection=standard, its return addresses signed.
 *
 * Two callers: il_init_known (initlocal_regs*.S, one per architecture)
 * sets known values in every callee-saved register before the call, so
 * frame 0's values are known exactly and frame 1's are the ones it
 * recorded on entry; direct() is plain C, checked against
 * __builtin_return_address and a full walk. */
#include <stdlib.h>

#include "backstep.h"
#include "check.h"

#if defined(__x86_64__)
#define HOST_ARCH BK_ARCH_X86_64
#define IL_NREGS 6
static const unsigned callee_saved[IL_NREGS] = { 3, 6, 12, 13, 14, 15 }; /* rbx rbp r12-r15 */
static const uint64_t known[IL_NREGS] = { 0x1111111111111101ull, 0x2222222222222202ull,
					  0x3333333333333303ull, 0x4444444444444404ull,
					  0x5555555555555505ull, 0x6666666666666606ull };
#elif defined(__aarch64__)
#define HOST_ARCH BK_ARCH_AARCH64
#define IL_NREGS 19
/* x19-x29, d8-d15; il_init_known loads 0x0123456789abcd00 + the DWARF number. */
static const unsigned callee_saved[IL_NREGS] = { 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29,
						 72, 73, 74, 75, 76, 77, 78, 79 };
static uint64_t known[IL_NREGS];
#endif

struct il_out {
	int64_t rc;
	uint64_t ra;
	uint64_t entry[IL_NREGS]; /* in the order of callee_saved */
};
void il_init_known(struct bk_cursor *c, struct bk_space *s, struct il_out *out,
		   void (*check)(struct bk_cursor *c, struct il_out *out));
extern const char il_after_call[];

/* Overwrite the stack below us, where bk_cursor_init_local's frame was. */
__attribute__((noinline)) static void scribble(void)
{
	volatile uint8_t junk[4096];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(0xa5 ^ i);
	__asm__ volatile("" ::"r"(junk) : "memory");
}

/* Walk to the end: every step 1 until a clean 0, no error. */
static void walk_out(struct bk_cursor *c, const char *what)
{
	int rc, n = 0;
	while ((rc = bk_cursor_step(c)) == 1 && n < 200)
		n++;
	CHECK(rc == 0, "%s: walk ended with %d (%s) after %d steps", what, rc, bk_strerror(rc), n);
	CHECK(n >= 2, "%s: only %d steps", what, n);
}

static const char *what_now;

/* Called by il_init_known right after bk_cursor_init_local returned, with
 * il_init_known's frame alive and bk_cursor_init_local's gone. */
static void check_known(struct bk_cursor *c, struct il_out *out)
{
	const char *what = what_now;
	scribble();
	CHECK_INT(out->rc, 0, what);
	CHECK_U64(bk_cursor_pc(c), (uint64_t)(uintptr_t)il_after_call, what);
	for (int i = 0; i < IL_NREGS; i++) {
		uint64_t v = 0;
		int got = bk_cursor_reg(c, callee_saved[i], &v);
		CHECK(got == 1, "%s: frame 0: %s not recovered", what, bk_reg_name(HOST_ARCH, callee_saved[i]));
		CHECK_U64(v, known[i], bk_reg_name(HOST_ARCH, callee_saved[i]));
	}
	/* Frame 1: known_registers, at the return from il_init_known. */
	CHECK_INT(bk_cursor_step(c), 1, what);
	CHECK_U64(bk_cursor_pc(c), out->ra, what);
	for (int i = 0; i < IL_NREGS; i++) {
		uint64_t v = 0;
		int got = bk_cursor_reg(c, callee_saved[i], &v);
		CHECK(got == 1, "%s: frame 1: %s not recovered", what, bk_reg_name(HOST_ARCH, callee_saved[i]));
		CHECK_U64(v, out->entry[i], bk_reg_name(HOST_ARCH, callee_saved[i]));
	}
	walk_out(c, what);
}

__attribute__((noinline)) static void known_registers(struct bk_space *s, const char *what)
{
	struct bk_cursor c;
	struct il_out out;
	what_now = what;
	il_init_known(&c, s, &out, check_known);
	__asm__ volatile("" ::: "memory");
}

/* Keeps values live in callee-saved registers across the call, so the
 * compiler has reason to use them. */
__attribute__((noinline)) static void direct(struct bk_space *s, const char *what, uint64_t seed)
{
	struct bk_cursor c;
	volatile uint64_t sink;
	uint64_t a = seed * 3, b = seed * 5, d = seed * 7, e = seed * 11;
	int rc = bk_cursor_init_local(&c, s);
	sink = a + b + d + e;
	(void)sink;
	scribble();
	CHECK_INT(rc, 0, what);
	for (int i = 0; i < IL_NREGS; i++) {
		uint64_t v;
		CHECK(bk_cursor_reg(&c, callee_saved[i], &v) == 1, "%s: frame 0: %s not recovered",
		      what, bk_reg_name(HOST_ARCH, callee_saved[i]));
	}
	CHECK_INT(bk_cursor_step(&c), 1, what);
	CHECK_U64(bk_cursor_pc(&c), (uint64_t)(uintptr_t)__builtin_return_address(0), what);
	walk_out(&c, what);
}

int main(void)
{
#if defined(__aarch64__)
	for (int i = 0; i < IL_NREGS; i++)
		known[i] = 0x0123456789abcd00ull + callee_saved[i];
#endif
	struct bk_space *own;
	CHECK_INT(bk_space_create_local(&own), 0, "bk_space_create_local");
	for (int round = 0; round < 2; round++) { /* cold, then warm row cache */
		known_registers(bk_space_local(), "known registers, bk_space_local");
		known_registers(own, "known registers, own local space");
		direct(bk_space_local(), "direct, bk_space_local", 1 + (uint64_t)round);
		direct(own, "direct, own local space", 3 + (uint64_t)round);
	}
	bk_space_destroy(own);
	return check_summary();
}
