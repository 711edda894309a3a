/* Many values live across calls: every callee-saved register is used and
 * saved in the prologue, and restored in one or several epilogues. */
#include <setjmp.h>

__attribute__((noinline)) long opaque(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x;
}

long shape_callee_saved(long a, long b, int n)
{
	long c = opaque(a + 1), d = opaque(b + 2), e = opaque(a ^ b), f = opaque(a * 3);
	long g = opaque(b * 5), h = opaque(c + d), i = opaque(e - f), j = opaque(g | h);
	long k = opaque(i & j), l = opaque(c * 7), m = opaque(d * 11), o = opaque(e * 13);
	long s = 0;
	for (int t = 0; t < n; t++)
		s += opaque(a + b + c + d + e + f + g + h + i + j + k + l + m + o + t);
	if (s & 1)
		return s + a * b * c * d * e * f * g * h * i * j * k * l * m * o;
	return s - opaque(c) - opaque(d) - opaque(e) - opaque(f) - opaque(g) - opaque(h);
}

long shape_many_args(long a, long b, long c, long d, long e, long f, long g, long h, long i)
{
	jmp_buf jb;
	volatile long r = a + b + c + d + e + f + g + h + i;
	if (setjmp(jb) == 0)
		r += opaque(r);
	return r + opaque(a) * opaque(i);
}

int shape_switch(int n)
{
	/* Shrink-wrapping and several exits. */
	if (n < 0)
		return 0;
	switch (n & 7) {
	case 0: return (int)opaque(n);
	case 1: return (int)opaque(n) + (int)opaque(n + 1);
	case 2: return (int)(opaque(n) * opaque(n * 2));
	case 3: return 3;
	default: return (int)(opaque(n) + opaque(opaque(n) + 5));
	}
}
