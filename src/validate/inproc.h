/* What the files of the in-process driver's preload library share
 * (inproc_preload.c, the driver; inproc_heap.c, its private heap). Not
 * part of the CLI: only the preload library is built from these. */
#ifndef BK_INPROC_H
#define BK_INPROC_H

#include <stdbool.h>
#include <stddef.h>

/* Non-zero while this thread runs the driver: its SIGTRAP and signal
 * handlers, and the few places where it runs the checker outside them.
 * Every allocation made meanwhile, whoever makes it, is the private
 * heap's; signals are blocked throughout (inproc_heap.c relies on it). */
extern __thread int ip_inside __attribute__((tls_model("initial-exec")));

/* Is P a block of the private heap? */
bool ip_heap_owns(const void *p);
/* Where the program's executable defines malloc itself: point the
 * allocator slots of the loaded libraries at ours (inproc_heap.c). */
void ip_heap_take_over(void);
/* Forget the heap's lock after fork (a copy of another thread's hold). */
void ip_heap_after_fork(void);

#endif
