// The CPU-bound C++ program the profile benches sample (report_vs_perf.sh,
// record_overhead.sh): 25 levels of template recursion, std::sort with a
// libm comparator, std::map of std::string: libstdc++, libm, libc.
//   deep_cxx SECONDS       work for that long (wall time)
//   deep_cxx -n ITERATIONS a fixed amount of work; then, when fd 3 is
//                          open, the program's own wall and CPU seconds
//                          (from main to the end of its work) on it
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <time.h>
#include <vector>
static volatile double sink;
template <int N> struct Deep {
	__attribute__((noinline)) static double go(std::vector<double> &v, int k)
	{
		double r = Deep<N - 1>::go(v, k + 1);
		if (k % 5 == N % 5)
			std::sort(v.begin(), v.end(), [](double a, double b) { return std::sin(a) < std::sin(b); });
		return r + v[k % v.size()];
	}
};
template <> struct Deep<0> {
	__attribute__((noinline)) static double go(std::vector<double> &v, int k)
	{
		std::map<std::string, double> m;
		for (int i = 0; i < 64; i++)
			m[std::to_string(i * k)] = std::sqrt(v[i % v.size()] + i);
		double s = 0;
		for (auto &e : m)
			s += e.second * e.first.size();
		return s;
	}
};
static double now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}
int main(int argc, char **argv)
{
	bool fixed = argc > 2 && !strcmp(argv[1], "-n");
	long iters = fixed ? atol(argv[2]) : 0;
	double until = !fixed && argc > 1 ? atof(argv[1]) : 5;
	double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
	std::vector<double> v(256);
	for (size_t i = 0; i < v.size(); i++)
		v[i] = (double)rand() / RAND_MAX;
	if (fixed) {
		for (long i = 0; i < iters; i++)
			sink += Deep<24>::go(v, 0);
		if (FILE *f = fdopen(3, "w"))
			fprintf(f, "%.4f %.4f\n", now(CLOCK_MONOTONIC) - w0,
				now(CLOCK_PROCESS_CPUTIME_ID) - c0);
	} else {
		do
			sink += Deep<24>::go(v, 0);
		while (now(CLOCK_MONOTONIC) - w0 < until);
	}
	return 0;
}
