/* libbackstep-regframe (src/shim/regframe.c): a program that registers its
 * generated code's .eh_frame with libgcc's __register_frame, unchanged,
 * linked with the shim: bk_backtrace and glibc's backtrace() (libgcc's
 * unwinder) both walk through the code, and after __deregister_frame
 * neither does. Linked with the shared libbackstep, as the shim is. */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "backstep.h"
#include "check.h"
#include "jit_code.h"

#define MAXF 64

void __register_frame(void *begin);
void __deregister_frame(void *begin);

static uint8_t *code;
static void *bk_pcs[MAXF], *gcc_pcs[MAXF];
static int bk_n, gcc_n;
static volatile int sink;

__attribute__((noinline)) void regframe_cb(void)
{
	bk_n = bk_backtrace(bk_pcs, MAXF);
	gcc_n = backtrace(gcc_pcs, MAXF);
	sink++;
}

__attribute__((noinline)) void regframe_run(void)
{
	((void (*)(void (*)(void)))(void *)(code + J1))(regframe_cb);
	sink++;
}

/* PCS holds J3's, J2's and J1's return addresses in a row, then one in
 * regframe_run. */
static bool through(void **pcs, int n)
{
	for (int i = 0; i + 3 < n; i++) {
		Dl_info di;
		if ((uint8_t *)pcs[i] == code + RA_J3 && (uint8_t *)pcs[i + 1] == code + RA_J2 &&
		    (uint8_t *)pcs[i + 2] == code + RA_J1)
			return dladdr((char *)pcs[i + 3] - 1, &di) && di.dli_sname &&
			       !strcmp(di.dli_sname, "regframe_run");
	}
	return false;
}

int main(void)
{
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	write_code(code);
	uint8_t *eh = code + 2048;
	write_eh(eh, code, false);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;

	__register_frame(eh);
	regframe_run();
	CHECK(through(bk_pcs, bk_n), "bk_backtrace through the code (%d PCs)", bk_n);
	CHECK(through(gcc_pcs, gcc_n), "libgcc through the code (%d PCs)", gcc_n);
	CHECK_INT(bk_space_register_eh_frame(bk_space_local(), eh, 0, 0), BK_E_INVAL,
		  "the shim registered it with backstep");

	__deregister_frame(eh);
	CHECK_INT(bk_space_deregister_eh_frame(bk_space_local(), eh), BK_E_NOT_FOUND,
		  "the shim deregistered it");
	regframe_run();
	CHECK(!through(bk_pcs, bk_n), "bk_backtrace: deregistered");
	CHECK(!through(gcc_pcs, gcc_n), "libgcc: deregistered");
	return check_summary();
}
