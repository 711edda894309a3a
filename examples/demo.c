/* The bundled example: a small program whose functions have the shapes an
 * unwinder meets every day — a recursive function, a variable-length array
 * (the CFA moves to the frame pointer), callee-saved registers live across
 * calls, a callback through a function pointer. `backstep dump` on it shows
 * each as rows of its call-frame information. */
#include <stdio.h>
#include <stdlib.h>

static int depth_first(int n)
{
	if (n <= 0)
		return 0;
	return 1 + depth_first(n - 1) + (n & 1);
}

static long vla_sum(int n)
{
	volatile long buf[n];
	long s = 0;
	for (int i = 0; i < n; i++)
		buf[i] = i * 3;
	for (int i = 0; i < n; i++)
		s += buf[i];
	return s;
}

static int cmp_long(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;
	return (x > y) - (x < y);
}

__attribute__((noinline)) static long many_live(long a, long b, long c, long d, long e)
{
	long v[4] = { d, c, b, a };
	qsort(v, 4, sizeof(v[0]), cmp_long);
	return a * v[0] + b * v[1] + c * v[2] + d * v[3] + e;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 10;
	printf("%d %ld %ld\n", depth_first(n), vla_sum(n + 1), many_live(n, 2, 3, 4, 5));
	return 0;
}
