/* Every callee-saved register live across calls: rbx, r12-r15 (and rbp
 * without a frame pointer) are saved, then recovered by the unwinder in
 * every frame above. */
__attribute__((noinline)) static long f(long x)
{
	__asm__ volatile("" : "+r"(x));
	return x + 1;
}

__attribute__((noinline)) static long all_saved(long a, long b, long c, long d, long e, long g)
{
	long x1 = a * 3, x2 = b * 5, x3 = c * 7, x4 = d * 11, x5 = e * 13, x6 = g * 17;
	long r = f(x1);
	r += f(x2) * x1;
	r += f(x3) * x2;
	r += f(x4) * x3;
	r += f(x5) * x4;
	r += f(x6) * x5;
	__asm__ volatile("" ::: "rbx", "r12", "r13", "r14", "r15", "memory");
	return r + x1 + x2 + x3 + x4 + x5 + x6;
}

__attribute__((noinline)) static long outer(long k)
{
	long p = k * 31, q = k * 37, t = k * 41;
	long r = all_saved(k, k + 1, k + 2, k + 3, k + 4, k + 5);
	r += all_saved(p, q, t, k, p, q);
	return r + p + q + t;
}

int main(void)
{
	volatile long s = 0;
	for (long k = 1; k < 3; k++)
		s += outer(k);
	return 0;
}
