#!/usr/bin/env bash
# Benchmark: `backstep check --stack` (one thread) on a few files (default
# libc and libstdc++): per file the functions, the instructions in their
# FDEs, the share checked (compared with a row; functions given up on are
# not in it), the best of RUNS runs' wall and CPU time for the whole command
# (opening the file, symbols and Capstone included), and instructions
# checked per CPU second. Prints numbers; asserts nothing.
#   bench/check_stack.sh [BACKSTEP] [RUNS] [FILE...]
set -euo pipefail
cd "$(dirname "$0")/.."
backstep=${1:-build/tools/backstep}
runs=${2:-5}
shift $(( $# > 2 ? 2 : $# ))
files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=(/usr/lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libstdc++.so.6)
fi
python3 - "$backstep" "$runs" "${files[@]}" <<'PY'
import json, os, subprocess, sys, time
backstep, runs, files = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; best of {runs} runs")
print(f"{'file':<40} {'functions':>9} {'insns':>8} {'checked':>8} {'share':>7} "
      f"{'wall s':>7} {'cpu s':>7} {'checked/cpu s':>14} {'diffs':>6}")
for path in files:
    best = None
    for i in range(runs + 1):  # run 0 warms the page cache and is not counted
        t0 = time.perf_counter()
        r0 = os.times()
        p = subprocess.run([backstep, "check", "--stack", "--json", path], capture_output=True,
                           text=True)
        wall = time.perf_counter() - t0
        r1 = os.times()
        cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
        if p.returncode not in (0, 1):
            sys.exit(f"{path}: backstep exited {p.returncode}: {p.stderr[-500:]}")
        if i and (best is None or cpu < best[1]):
            best = (wall, cpu)
    f = [json.loads(l) for l in p.stdout.splitlines() if '"type": "file"' in l][0]
    wall, cpu = best
    name = path if len(path) <= 40 else "..." + path[-37:]
    print(f"{name:<40} {f['fdes']:>9} {f['instructions']:>8} {f['checked']:>8} "
          f"{100 * f['checked'] / max(f['instructions'], 1):>6.2f}% {wall:>7.3f} {cpu:>7.3f} "
          f"{f['checked'] / cpu:>14,.0f} {f['differences']:>6}")
    nc = {k: v for k, v in f["not_checked"].items() if v}
    print(f"{'':<40} not checked: {nc}")
PY
