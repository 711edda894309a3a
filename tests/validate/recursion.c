/* Direct, deep and mutual recursion. */
__attribute__((noinline)) static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static int is_odd(unsigned n);

__attribute__((noinline)) static int is_even(unsigned n)
{
	int r = n == 0 ? 1 : is_odd(n - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
	return r;
}

__attribute__((noinline)) static int is_odd(unsigned n)
{
	int r = n == 0 ? 0 : is_even(n - 1);
	__asm__ volatile("" ::: "memory");
	return r;
}

__attribute__((noinline)) static long deep(int n, long acc)
{
	long r = n == 0 ? acc : deep(n - 1, acc + n);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}

int main(void)
{
	volatile long s = fib(9);
	s += is_even(21);
	s += deep(60, 0);
	return 0;
}
