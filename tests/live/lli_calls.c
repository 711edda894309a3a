/* Run by lli-14 (LLVM's JIT) from IR that clang-14 -O2 -g made, under
 * backstep validate --only '[jit]' (jit_validate.py): JIT code without
 * frame pointers calling JIT code in a loop, recursively, and back into
 * the C library (qsort calling a JIT'd comparison). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static int jit_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) static int jit_mid(int x)
{
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += jit_leaf(x + i);
	return s;
}

__attribute__((noinline)) static int jit_down(int n)
{
	return n <= 0 ? jit_leaf(n) : jit_down(n - 1) + jit_mid(n);
}

static int jit_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int main(void)
{
	int v[8] = { 5, 3, 7, 1, 8, 2, 6, 4 };
	qsort(v, 8, sizeof(v[0]), jit_cmp);
	int t = v[0];
	for (int i = 0; i < 4; i++)
		t += jit_mid(i) + jit_down(3);
	printf("%d\n", t);
	return 0;
}
