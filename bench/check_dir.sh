#!/usr/bin/env bash
# Benchmark: `backstep check` over a directory tree (default
# /usr/lib/x86_64-linux-gnu): wall time and FDEs checked per second, best
# of RUNS runs, plus the machine's load so shared-machine numbers can be
# read in context. The first run also warms the page cache.
#   bench/check_dir.sh [BACKSTEP] [DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
backstep=${1:-build/tools/backstep}
dir=${2:-/usr/lib/x86_64-linux-gnu}
runs=${3:-3}
python3 - "$backstep" "$dir" "$runs" <<'PY'
import json, os, subprocess, sys, time
backstep, d, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
best = None
for i in range(runs + 1):  # run 0 warms the page cache and is not counted
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    r0 = os.times()
    p = subprocess.run([backstep, "check", "--json", d], capture_output=True, text=True)
    wall = time.perf_counter() - t0
    r1 = os.times()
    cpu = (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)
    if p.returncode not in (0, 1):
        sys.exit(f"backstep check exited {p.returncode}: {p.stderr[-500:]}")
    total = json.loads(p.stdout.strip().splitlines()[-1])
    fdes = total["fdes_eh_frame"] + total["fdes_debug_frame"]
    if i == 0:
        print(f"{d}: {total['elf_files']} ELF files, {fdes} FDEs, "
              f"{total['exec_bytes']} executable bytes; {os.cpu_count()} CPUs")
        continue
    print(f"run {i}: wall {wall:7.2f} s  cpu {cpu:6.2f} s  {fdes / wall:10.0f} FDEs/s  "
          f"(load average {load:.2f} at start)")
    if best is None or wall < best[0]:
        best = (wall, cpu, fdes)
wall, cpu, fdes = best
print(f"best: wall {wall:.2f} s, cpu {cpu:.2f} s, {fdes / wall:.0f} FDEs/s wall, "
      f"{fdes / cpu:.0f} FDEs/s cpu")
PY
