/* The object test_gdbjit.c hands out as a JIT's symfile: compiled to a .o
 * (-O1 -g -fno-omit-frame-pointer: every function opens with push %rbp;
 * mov %rsp,%rbp), given load addresses in its section headers by the test
 * as LLVM's RuntimeDyld gives them, then read through the GDB JIT
 * interface. Never linked, never run. */
int gj_inner(int x);

int gj_outer(int x)
{
	return gj_inner(x * 3) + 1;
}

int gj_second(int x)
{
	return gj_outer(x - 1) * 2;
}
