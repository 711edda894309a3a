/* Recursion: direct, mutual and with a tail call. */
static volatile int sink;

__attribute__((noinline)) static int is_odd(int n);

__attribute__((noinline)) static int is_even(int n)
{
	sink = n;
	return n == 0 ? 1 : is_odd(n - 1);
}

__attribute__((noinline)) static int is_odd(int n)
{
	sink = n;
	return n == 0 ? 0 : is_even(n - 1);
}

__attribute__((noinline)) static int fib(int n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) static int ackermann(int m, int n)
{
	if (m == 0)
		return n + 1;
	if (n == 0)
		return ackermann(m - 1, 1);
	return ackermann(m - 1, ackermann(m, n - 1));
}

int shape_recursion(int n)
{
	return fib(n) + is_even(n) + ackermann(2, n & 3);
}
