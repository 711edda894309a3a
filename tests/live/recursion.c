/* Recursion 1000 deep: main -> descend(1000) -> descend(999) -> ... ->
 * descend(1) -> bottom, which blocks in pause. Every descend frame returns
 * to the same address; only the CFA tells them apart. The call is kept out
 * of tail position (a volatile local is read after it) so no compiler turns
 * the recursion into a loop. */
#include <signal.h>

#include "live.h"

#define DEPTH 1000

static volatile int forever = 1;

NOINLINE static int bottom(void)
{
	live_ready();
	while (forever)
		pause();
	return 0;
}

NOINLINE static int descend(int n)
{
	volatile int local = n;
	int r = n > 1 ? descend(n - 1) : bottom();
	KEEP();
	return r + local;
}

int main(void)
{
	return descend(DEPTH) == 0;
}
