/* Dynamic stack allocation and over-aligned locals: frame pointers, DRAP
 * (gcc's dynamic realignment uses DW_CFA_def_cfa_expression and
 * DW_CFA_expression), stack probes. */
#include <alloca.h>
#include <string.h>

__attribute__((noinline)) static void use(volatile char *p, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (char)i;
}

long shape_alloca(int n)
{
	char *p = alloca((unsigned)n * 16 + 1);
	use(p, n * 16);
	return p[n];
}

long shape_vla(int n)
{
	char a[n * 8 + 1];
	use(a, n * 8);
	long s = 0;
	for (int i = 0; i < n; i++) {
		char b[i + 1];
		use(b, i + 1);
		s += b[i] + a[i];
	}
	return s;
}

long shape_aligned(int n)
{
	char big[n + 64] __attribute__((aligned(64)));
	_Alignas(32) char v[96];
	memset(v, n, sizeof(v));
	use(big, n + 64);
	use(v, 96);
	return big[n] + v[n & 31];
}
