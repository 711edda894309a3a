/* Shared by the live programs: how a program says it is ready to be
 * inspected, and how it keeps calls nested (no inlining, no cloning, no
 * sibling calls) so that every tool sees the same frames. */
#ifndef LIVE_H
#define LIVE_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__clang__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE __attribute__((noinline, noclone))
#endif
/* After a call: the call is not in tail position and memory is live. */
#define KEEP() __asm__ volatile("" ::: "memory")

/* "ready" on stdout, flushed: the test starts inspecting now. */
static inline void live_ready(void)
{
	fputs("ready\n", stdout);
	fflush(stdout);
}

static inline void live_die(const char *what)
{
	fprintf(stderr, "live: %s\n", what);
	fflush(stderr);
	_exit(99);
}

#endif
