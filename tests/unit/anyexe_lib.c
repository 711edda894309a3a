/* The middle of test_anyexe's call chain, main -> chain_a -> chain_b ->
 * chain_c: a shared library linked with --no-eh-frame-hdr (its .eh_frame is
 * loaded, nothing in memory points at it), or part of the static program.
 * chain_b lives in a section of its own, so __start_/__stop_ bound it. */
#include <stdint.h>

#if defined(__clang__)
#define CHAIN_FN(sec) __attribute__((noinline, section(#sec)))
#else
#define CHAIN_FN(sec) __attribute__((noipa, section(#sec)))
#endif

static volatile int lib_sink;

CHAIN_FN(bt_b) int chain_b(int (*next)(int), int mode)
{
	int r = next(mode);
	__asm__ volatile("" ::: "memory"); /* no tail call: B keeps its frame */
	return r + lib_sink;
}

extern const char __start_bt_b[], __stop_bt_b[];

void chain_b_range(uintptr_t *lo, uintptr_t *hi)
{
	*lo = (uintptr_t)__start_bt_b;
	*hi = (uintptr_t)__stop_bt_b;
}
