#!/usr/bin/env bash
# Benchmark: backstep report against perf on one recording of at least
# 20,000 DWARF samples (perf record -e cpu-clock --call-graph dwarf) of a
# C++ program with a deep call graph over several libraries (libstdc++,
# libm, libc: sorting, maps, strings, recursion), made here. Prints wall
# time, samples/s and peak RSS of:
#   backstep report --format perf-script / --format folded
#   perf script / perf report --stdio
# best of RUNS (default 3), in one run. Then the same on a recording of
# many short processes (a shell loop running ls and sort 400 times: every
# process maps libc again), where what counts is that each file is opened
# and its debug information read once, not once per process. Not a test.
#   bench/report_vs_perf.sh [BACKSTEP] [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
backstep=${1:-build/tools/backstep}
runs=${2:-3}
secs=${3:-6}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -g -fomit-frame-pointer -o "$work/work" bench/deep_cxx.cc
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
readers() { # FILE
	measure "backstep report (perf-script)" "$backstep" report "$1"
	measure "backstep report --format folded" "$backstep" report --format folded "$1"
	measure "perf script" perf script -i "$1"
	measure "perf report --stdio" perf report --stdio -i "$1"
}
readers "$work/rec.data"

printf 'for i in $(seq 200); do ls / >/dev/null; sort /etc/services >/dev/null; done\n' > "$work/many.sh"
perf record -q -e cpu-clock -F 4000 --call-graph dwarf -o "$work/many.data" -- sh "$work/many.sh" 2>/dev/null
samples=$(perf report -D -i "$work/many.data" 2>/dev/null | grep -c 'PERF_RECORD_SAMPLE' || true)
echo "many processes: $(perf report -D -i "$work/many.data" 2>/dev/null | grep -c 'PERF_RECORD_COMM' || true)" \
     "COMM records, $samples samples, $(du -m "$work/many.data" | cut -f1) MB"
readers "$work/many.data"
