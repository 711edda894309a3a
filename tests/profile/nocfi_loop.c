/* Samples in code without CFI (nocfi_spin.S), called from C, for
 * tests/profile/report_test.py. */
long nocfi_spin(long n);

__attribute__((noinline)) long nocfi_caller(long n)
{
	return nocfi_spin(n) + 1;
}

int main(void)
{
	return (int)(nocfi_caller(60 * 1000 * 1000) & 1);
}
