#!/usr/bin/env bash
# Benchmark: what sampling costs the sampled program. One CPU-bound C++
# program (bench/deep_cxx.cc, as report_vs_perf.sh samples: deep template
# recursion, std::sort, std::map, strings, libm, libstdc++), a fixed amount
# of work, run
#   without a profiler,
#   under backstep record -F 999 (--format folded, and perf-script),
#   under perf record --call-graph dwarf -F 999 (cpu-clock, as backstep),
# best of RUNS (default 3). Prints the program's own wall time and CPU time
# (it measures itself, from main to the end of its work: the profilers'
# start-up and post-processing are not in it; the kernel's work at each
# sample, copying 8 KiB of stack, is in its CPU time) and each against no
# profiler; the CPU time of the whole command (program + profiler,
# /usr/bin/time), the samples, and the bytes each profiler wrote
# (perf.data; backstep's output). On a shared machine the CPU ratio is the
# steadier one. Not a test.
#   bench/record_overhead.sh [BACKSTEP] [RUNS] [ITERATIONS]
set -euo pipefail
cd "$(dirname "$0")/.."
backstep=${1:-build/tools/backstep}
runs=${2:-3}
iters=${3:-30000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
g++ -O2 -g -fomit-frame-pointer -o "$work/work" bench/deep_cxx.cc
echo "$(date -u '+%F %T UTC'); load $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs;" \
     "$iters iterations; best of $runs"
printf '%-40s %9s %6s %9s %6s %9s %8s %11s\n' "" "wall" "" "CPU" "" "all CPU" "samples" \
       "written"
base= basecpu=
measure() { # NAME OUTPUT-FILE CMD...: the best wall time and the best CPU time of the
	    # program over the runs; the rest from the run with the best wall time
	local name=$1 out=$2 best= bestcpu= cpu= bytes= samples=
	shift 2
	for _ in $(seq "$runs"); do
		rm -f "$out"
		/usr/bin/time -f '%U %S' -o "$work/time" "$@" 3> "$work/self" > "$work/stdout" \
			2> "$work/stderr" || { cat "$work/stderr" >&2; exit 1; }
		read -r w c < "$work/self"
		if [ -z "$bestcpu" ] || awk "BEGIN{exit !($c < $bestcpu)}"; then bestcpu=$c; fi
		if [ -z "$best" ] || awk "BEGIN{exit !($w < $best)}"; then
			best=$w
			cpu=$(awk '{print $1 + $2}' "$work/time")
			bytes=$([ -n "$out" ] && stat -c %s "$out" || echo 0)
			samples=$(grep -o '[0-9]* samples read' "$work/stderr" | cut -d' ' -f1 || true)
			[ -n "$samples" ] || samples=$(grep -o '([0-9]* samples)' "$work/stderr" |
						       tr -dc 0-9 || true)
		fi
	done
	[ -n "$base" ] || { base=$best; basecpu=$bestcpu; }
	printf '%-40s %7.2f s %5.2fx %7.2f s %5.2fx %7.2f s %8s %8.1f MB\n' "$name" "$best" \
		"$(awk "BEGIN{print $best / $base}")" "$bestcpu" \
		"$(awk "BEGIN{print $bestcpu / $basecpu}")" "$cpu" "${samples:--}" \
		"$(awk "BEGIN{print $bytes / 1048576}")"
}
measure "no profiler" "" "$work/work" -n "$iters"
measure "backstep record -F 999 (folded)" "$work/out.folded" \
	"$backstep" record -F 999 --format folded -o "$work/out.folded" -- "$work/work" -n "$iters"
measure "backstep record -F 999 (perf-script)" "$work/out.txt" \
	"$backstep" record -F 999 -o "$work/out.txt" -- "$work/work" -n "$iters"
measure "perf record --call-graph dwarf -F 999" "$work/perf.data" \
	perf record -e cpu-clock -F 999 --call-graph dwarf -o "$work/perf.data" -- \
	"$work/work" -n "$iters"
