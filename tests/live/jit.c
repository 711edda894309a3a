/* Code outside every module, as a JIT makes it: an anonymous executable
 * mapping holding
 *     push %rbp; mov %rsp,%rbp; call *%rdi; pop %rbp; ret
 * which the main thread calls with jit_block, a C function that blocks:
 *   pause <- jit_block <- [anonymous code] <- jit_enter <- main
 * No CFI and no symbol cover the anonymous frame; it keeps a frame pointer.
 * A second thread ("plain") blocks in ordinary code, for contrast. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "live.h"

static atomic_int parked;

NOINLINE static void jit_block(void)
{
	live_ready();
	for (;;)
		pause();
}

NOINLINE static void jit_enter(void (*code)(void (*)(void)))
{
	code(jit_block);
	KEEP();
}

NOINLINE static void plain2(void)
{
	atomic_store(&parked, 1);
	for (;;)
		pause();
}
NOINLINE static void plain1(void) { plain2(); KEEP(); }

static void *plain_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "plain");
	plain1();
	return NULL;
}

int main(void)
{
	static const unsigned char code[] = {
		0x55,             /* push %rbp */
		0x48, 0x89, 0xe5, /* mov %rsp,%rbp */
		0xff, 0xd7,       /* call *%rdi */
		0x5d,             /* pop %rbp */
		0xc3,             /* ret */
	};
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		live_die("mmap");
	memset(mem, 0xcc, (size_t)page); /* int3 around the code */
	memcpy(mem + 64, code, sizeof(code));
	if (mprotect(mem, (size_t)page, PROT_READ | PROT_EXEC) != 0)
		live_die("mprotect");
	pthread_t t;
	if (pthread_create(&t, NULL, plain_main, NULL) != 0)
		live_die("pthread_create");
	while (!atomic_load(&parked))
		usleep(1000);
	void (*fn)(void (*)(void));
	void *entry = mem + 64;
	memcpy(&fn, &entry, sizeof(fn));
	jit_enter(fn);
	return 0;
}
