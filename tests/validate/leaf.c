/* Leaf and non-leaf functions, and a frame with a large local array. */
__attribute__((noinline)) static int leaf(int x)
{
	return x * 7 + 3;
}

__attribute__((noinline)) static int leaf2(int a, int b)
{
	return a ^ (b << 2);
}

__attribute__((noinline)) static int nonleaf(int x)
{
	int a = leaf(x);
	int b = leaf2(a, x);
	return a + b + leaf(b);
}

__attribute__((noinline)) static long big_frame(int x)
{
	volatile char buf[512];
	for (int i = 0; i < 512; i += 8)
		buf[i] = (char)(i + x);
	long s = 0;
	for (int i = 0; i < 512; i += 64)
		s += buf[i];
	return s + nonleaf(x);
}

int main(void)
{
	volatile long s = 0;
	for (int i = 0; i < 3; i++)
		s += nonleaf(i) + big_frame(i);
	return 0;
}
