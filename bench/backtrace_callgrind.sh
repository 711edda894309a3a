#!/usr/bin/env bash
# Benchmark: instructions per frame of each local walker (bench_backtrace,
# bench/backtrace.c), counted by valgrind --tool=callgrind: the inclusive
# cost of the walker's function (walk_fp, bk_backtrace, glibc's backtrace,
# nongnu libunwind's unw_backtrace, walk_llvm around LLVM libunwind's
# unw_step loop, walk_bkcursor around the bk_cursor loop, walk_unwstep
# around nongnu libunwind's unw_step loop) over warm walks, divided by
# walks x frames. Each shape and code variant is run twice, with WALKS and
# 2 x WALKS walks per walker; the
# difference of the two counts is WALKS warm walks (the first walk, which
# fills the caches, cancels out), and 2 x first run - second run is the first
# walk's own count, also printed.
#   bench/backtrace_callgrind.sh [BUILD_DIR] [WALKS] [WALKERS]
# BUILD_DIR (default build) is a backstep build directory; WALKS default 1000;
# WALKERS (default all) a comma-separated list for bench_backtrace --walkers,
# e.g. bk,bkcursor,unwstep (the frame-pointer walk, the reference, always runs).
# bk8 (bk_backtrace with 8 steppers) is bk_backtrace too: list it without bk.
# Needs valgrind (Debian: apt-get install valgrind).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
walks=${2:-1000}
walkers=${3:-}
bench=$build/bench/bench_backtrace
if [ ! -x "$bench" ]; then
	echo "backtrace_callgrind: $bench not found (meson setup $build && ninja -C $build)" >&2
	exit 2
fi
for tool in valgrind callgrind_annotate; do
	command -v $tool >/dev/null || { echo "backtrace_callgrind: $tool not found (apt-get install valgrind)" >&2; exit 2; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$bench" "$walks" "$tmp" "$walkers" <<'PY'
import re, subprocess, sys, time

bench, walks, tmp, walkers = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
names = {"fp": "frame pointers", "bk": "bk_backtrace", "glibc": "glibc backtrace (libgcc)",
         "nongnu": "nongnu libunwind", "llvm": "LLVM libunwind unw_step",
         "bkcursor": "bk_cursor loop, all regs", "unwstep": "nongnu unw_step, all regs",
         "bk8": "bk_backtrace, 8 steppers"}
# walker -> (function names, object file substring)
functions = {"fp": ({"walk_fp"}, "bench_backtrace"),
             "bk": ({"bk_backtrace"}, ""),
             "glibc": ({"backtrace", "__backtrace"}, "libc.so"),
             "nongnu": ({"unw_backtrace", "backtrace", "_ULx86_64_backtrace"}, "libunwind.so.8"),
             "llvm": ({"walk_llvm"}, "bench_backtrace"),
             "bkcursor": ({"walk_bkcursor"}, "bench_backtrace"),
             "unwstep": ({"walk_unwstep"}, "bench_backtrace"),
             # the same function as bk's: profile bk8 in a run without bk
             "bk8": ({"bk_backtrace"}, "")}
line_re = re.compile(r"^\s*([\d,]+) \(\s*[\d.]+%\)\s+(?!=>)(\S*):(\S+) \[([^\]]+)\]\s*$")

def profile(shape, variant, n, tag):
    out = f"{tmp}/callgrind.{tag}"
    args = [bench, "--shape", shape, "--iterations", str(n), "--rounds", "1", "--tsv"]
    if variant:
        args[3:3] = ["--variant", variant]
    if walkers:
        args[3:3] = ["--walkers", walkers]
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"] + args,
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"valgrind {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-400:]}")
    rows = {}
    for line in p.stdout.splitlines():
        f = line.split("\t")
        if f[0] == "row":
            rows[(f[2], f[3])] = dict(frames=int(f[7]), ok=f[6] == "1", walks=int(f[12]),
                                      problem=f[14] if len(f) > 14 else "")
    a = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out],
                       capture_output=True, text=True, check=True).stdout
    cost = {}
    for line in a.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        ir, fn, obj = int(m.group(1).replace(",", "")), m.group(3), m.group(4)
        for w, (fns, objpart) in functions.items():
            if fn in fns and objpart in obj and w not in cost:
                cost[w] = ir
    return rows, cost

print(f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}; {bench}; {walks} and {2 * walks} walks per walker"
      + (f"; walkers {walkers}" if walkers else ""))
print(f"{'shape':11} {'code':5} {'walker':26} {'frames':>6} {'instr/frame':>12} {'ratio':>7} "
      f"{'first walk instr':>17}")
configs = [("recursive", None), ("chain", "fp"), ("chain", "nofp"),
           ("chain-drap", "fp"), ("chain-drap", "nofp")]
for shape, variant in configs:
    r1, c1 = profile(shape, variant, walks, f"{shape}.{variant}.1")
    r2, c2 = profile(shape, variant, 2 * walks, f"{shape}.{variant}.2")
    fp_per = None
    for (code, w), row in r2.items():
        if w not in c1 or w not in c2 or (code, w) not in r1:
            print(f"{shape:11} {code:5} {names[w]:26}  (no cost found in callgrind's output)")
            continue
        dwalks = row["walks"] - r1[(code, w)]["walks"]
        per_walk = (c2[w] - c1[w]) / dwalks
        per = per_walk / row["frames"]
        if w == "fp":
            fp_per = per
        first = c1[w] - per_walk * (r1[(code, w)]["walks"] - 1)
        if w == "fp" and variant == "nofp":
            continue  # the reference on the fp chain: printed with variant fp
        ratio = f"{per / fp_per:6.1f}x" if fp_per else "      -"
        bad = "" if row["ok"] else f"  WRONG: {row['problem']}"
        print(f"{shape:11} {code:5} {names[w]:26} {row['frames']:>6} {per:>12.1f} {ratio:>7} "
              f"{first:>17,.0f}{bad}")
PY
