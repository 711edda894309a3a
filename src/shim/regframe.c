/* libbackstep-regframe: libgcc's __register_frame and __deregister_frame,
 * for a runtime that registers the .eh_frame of its JIT code with libgcc
 * (LLVM's ORC and MCJIT do, through their default memory managers): each
 * call registers the section with backstep's process-wide space
 * (bk_space_register_eh_frame on bk_space_local(), so bk_backtrace and
 * local cursors walk the code) and then with the next definition of the
 * function, libgcc_s's (dlsym RTLD_NEXT, else libgcc_s.so.1 opened here),
 * so C++ exceptions and glibc's backtrace() keep working.
 *
 * Link it before libgcc_s, or LD_PRELOAD it. It links libbackstep.so: the
 * program must use that one library, not a static copy of its own (two
 * copies are two process-wide spaces). Registration is cold: as with
 * libgcc, not from a signal handler. Errors from backstep are not
 * reported: libgcc's functions return nothing either; a section backstep
 * refuses (damaged, unreadable) is still handed to libgcc.
 *
 * Not the unwind path: nothing here runs during a walk.
 */
#include <dlfcn.h>
#include <pthread.h>

#include "backstep.h"

#define EXPORT __attribute__((visibility("default")))

static void (*next_register)(void *);
static void (*next_deregister)(void *);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find_next(void)
{
	next_register = (void (*)(void *))dlsym(RTLD_NEXT, "__register_frame");
	next_deregister = (void (*)(void *))dlsym(RTLD_NEXT, "__deregister_frame");
	if (next_register && next_deregister)
		return;
	void *gcc_s = dlopen("libgcc_s.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (gcc_s) {
		next_register = (void (*)(void *))dlsym(gcc_s, "__register_frame");
		next_deregister = (void (*)(void *))dlsym(gcc_s, "__deregister_frame");
	}
}

EXPORT void __register_frame(void *begin)
{
	pthread_once(&once, find_next);
	bk_space_register_eh_frame(bk_space_local(), begin, 0, 0);
	if (next_register)
		next_register(begin);
}

EXPORT void __deregister_frame(void *begin)
{
	pthread_once(&once, find_next);
	/* backstep first: once it returns no walk reads the section. */
	bk_space_deregister_eh_frame(bk_space_local(), begin);
	if (next_deregister)
		next_deregister(begin);
}
