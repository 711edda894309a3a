/* The shared library of the core-file tests. corefix_park(DEPTH, CB) nests
 * DEPTH + 2 calls, calls CB at the bottom, then blocks for good. Built with
 * frame pointers, so a walk that may not use its CFI (a core whose copy of
 * the library differs on disk) can still cross it. The COREFIX_VARIANT
 * build has different code, hence a different build-id. */
#include <unistd.h>

#define KEEP() __asm__ volatile("" ::: "memory") /* no tail calls */

static volatile int released; /* never set: parks for good */

__attribute__((noinline)) static void bottom(void (*cb)(void))
{
	if (cb)
		cb();
	while (!released)
		pause();
}

__attribute__((noinline)) static void nest(int depth, void (*cb)(void))
{
	if (depth > 0)
		nest(depth - 1, cb);
	else
		bottom(cb);
	KEEP();
}

void corefix_park(int depth, void (*cb)(void))
{
	nest(depth, cb);
	KEEP();
}

#ifdef COREFIX_VARIANT
int corefix_variant(int x)
{
	return x * 3 + 1;
}
#endif
