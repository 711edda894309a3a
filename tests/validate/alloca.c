/* alloca and variable-length arrays: SP moves at run time, so the CFA is
 * described through the frame pointer. */
#include <alloca.h>
#include <string.h>

__attribute__((noinline)) static int use(volatile char *p, int n)
{
	int s = 0;
	for (int i = 0; i < n; i += 8)
		s += p[i];
	return s;
}

__attribute__((noinline)) static int with_alloca(int n)
{
	char *p = alloca((size_t)n);
	memset(p, 1, (size_t)n);
	return use(p, n);
}

__attribute__((noinline)) static int with_vla(int n)
{
	char v[n];
	for (int i = 0; i < n; i += 4)
		v[i] = (char)i;
	return use(v, n) + with_alloca(n / 2);
}

int main(int argc, char **argv)
{
	(void)argv;
	volatile int s = 0;
	for (int i = 1; i < 4; i++)
		s += with_vla(32 * i + argc);
	return 0;
}
