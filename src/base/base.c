/* The allocation funnel and the debug-build corruption trace.
 *
 * Every allocation of the library passes through base_alloc & co., so tests
 * can make the Nth one fail and check that each cold path reports BK_E_NOMEM
 * and leaks nothing. Nothing here is called on an unwind step. */
#include <stdio.h>
#include <stdlib.h>

#include "base.h"

static unsigned long fail_countdown; /* 0: never fail */

void base_alloc_fail_after(unsigned long n)
{
	fail_countdown = n;
}

static bool should_fail(void)
{
	if (fail_countdown == 0)
		return false;
	return --fail_countdown == 0;
}

void *base_alloc(size_t len)
{
	if (should_fail())
		return NULL;
	return malloc(len ? len : 1);
}

void *base_calloc(size_t n, size_t len)
{
	if (should_fail())
		return NULL;
	return calloc(n ? n : 1, len ? len : 1);
}

void *base_realloc(void *p, size_t len)
{
	if (should_fail())
		return NULL;
	return realloc(p, len ? len : 1);
}

void base_free(void *p)
{
	free(p);
}

#ifdef BK_DEBUG_CORRUPT
int base_corrupt_at(int line, const char *file)
{
	if (getenv("BK_TRACE_CORRUPT"))
		fprintf(stderr, "backstep: corrupt input detected at %s:%d\n", file, line);
	return BK_E_CORRUPT;
}
#endif
