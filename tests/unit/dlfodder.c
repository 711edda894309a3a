/* A library the SIGPROF stress test loads and unloads in a loop. */
__attribute__((noinline)) int fodder_work(int n)
{
	volatile int s = 0;
	for (int i = 0; i < n; i++)
		s += i * 7;
	return s;
}
