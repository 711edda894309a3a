/* Differential-test fixture: calls every shape once so nothing is dead code.
 * The binaries built from these sources are only read, never run by the test. */
#include <stdio.h>
#include <stdlib.h>

int shape_recursion(int n);
long shape_alloca(int n);
long shape_vla(int n);
long shape_aligned(int n);
long shape_callee_saved(long a, long b, int n);
long shape_many_args(long a, long b, long c, long d, long e, long f, long g, long h, long i);
int shape_switch(int n);
long shape_asm_cfi(long x);
#ifdef HAVE_CXX
int shape_exceptions(int n);
#endif

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 5;
	long r = shape_recursion(n);
	r += shape_alloca(n);
	r += shape_vla(n);
	r += shape_aligned(n);
	r += shape_callee_saved(n, r, n);
	r += shape_many_args(1, 2, 3, 4, 5, 6, 7, 8, n);
	r += shape_switch(n);
	r += shape_asm_cfi(n);
#ifdef HAVE_CXX
	r += shape_exceptions(n);
#endif
	printf("%ld\n", r);
	return 0;
}
