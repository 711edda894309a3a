#!/usr/bin/env bash
# Benchmark: backstep report against perf on one recording of at least
# 20,000 DWARF samples (perf record -e cpu-clock --call-graph dwarf) of a
# C++ program with a deep call graph over several libraries (libstdc++,
# libm, libc: sorting, maps, strings, recursion), made here. Prints wall
# time, samples/s and peak RSS of:
#   backstep report --format perf-script / --format folded
#   perf script / perf report --stdio
# best of RUNS (default 3), in one run. Not a test.
#   bench/report_vs_perf.sh [BACKSTEP] [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
backstep=${1:-build/tools/backstep}
runs=${2:-3}
secs=${3:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/work.cc" <<'CC'
#include <algorithm>
#include <cmath>
#include <cstdlib>
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
int main(int argc, char **argv)
{
	double until = argc > 1 ? atof(argv[1]) : 5;
	std::vector<double> v(256);
	for (size_t i = 0; i < v.size(); i++)
		v[i] = (double)rand() / RAND_MAX;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		sink += Deep<24>::go(v, 0);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < until);
	return 0;
}
CC
g++ -O2 -g -fomit-frame-pointer -o "$work/work" "$work/work.cc"
perf record -q -e cpu-clock -F 4000 --call-graph dwarf -o "$work/rec.data" -- "$work/work" "$secs" 2>/dev/null
samples=$(perf report -D -i "$work/rec.data" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE' || true)
echo "$(date -u '+%F %T UTC'); load $(cut -d' ' -f1-3 /proc/loadavg); $samples samples," \
     "$(du -m "$work/rec.data" | cut -f1) MB; best of $runs"
measure() { # NAME CMD...: best wall and its peak RSS
	local name=$1 best= rss=
	shift
	for _ in $(seq "$runs"); do
		/usr/bin/time -f '%e %M' -o "$work/t" "$@" > "$work/out" 2> /dev/null || true
		read -r w m < "$work/t"
		if [ -z "$best" ] || awk "BEGIN{exit !($w < $best)}"; then best=$w; rss=$m; fi
	done
	printf '%-34s %7.2f s %9.0f samples/s %7.1f MB %9d lines\n' "$name" "$best" \
		"$(awk "BEGIN{print $samples / ($best > 0 ? $best : 0.001)}")" \
		"$(awk "BEGIN{print $rss / 1024}")" "$(wc -l < "$work/out")"
}
measure "backstep report (perf-script)" "$backstep" report "$work/rec.data"
measure "backstep report --format folded" "$backstep" report --format folded "$work/rec.data"
measure "perf script" perf script -i "$work/rec.data"
measure "perf report --stdio" perf report --stdio -i "$work/rec.data"
