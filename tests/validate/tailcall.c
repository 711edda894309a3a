/* Tail calls (jmp to a function, direct and through a pointer): the callee
 * inherits its caller's return address. */
__attribute__((noinline)) int tc_target(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 2 + 1;
}

__attribute__((noinline)) int tc_direct(int x)
{
	return tc_target(x + 1);
}

__attribute__((noinline)) int tc_cond(int x)
{
	if (x & 1)
		return tc_direct(x);
	return tc_target(x) + 1;
}

__attribute__((noinline)) int tc_pointer(int (*fp)(int), int x)
{
	return fp(x + 2);
}

__attribute__((noinline)) int tc_with_frame(int x)
{
	volatile int buf[16];
	buf[x & 15] = x;
	return tc_direct(buf[x & 15]);
}

int main(void)
{
	volatile int s = 0;
	for (int i = 0; i < 3; i++)
		s += tc_cond(i) + tc_pointer(tc_direct, i) + tc_with_frame(i);
	return 0;
}
