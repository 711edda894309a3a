#!/usr/bin/env bash
# Benchmark: wall time of `backstep dump --rows` (text and JSON) against
# `readelf --debug-dump=frames-interp` on the same file, best of N runs.
#   bench/dump_vs_readelf.sh [FILE] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:-/lib/x86_64-linux-gnu/libc.so.6}
runs=${2:-5}
best() { # best wall seconds of RUNS runs of "$@"
	python3 - "$runs" "$@" <<'PY'
import subprocess, sys, time
runs = int(sys.argv[1]); cmd = sys.argv[2:]
best = min((lambda t0: (subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL), time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(runs))
print(f"{best*1000:9.1f} ms  {' '.join(cmd)}")
PY
}
echo "$file ($(stat -c %s "$file") bytes), best of $runs:"
best build/tools/backstep dump --rows "$file"
best build/tools/backstep dump --rows --json "$file"
best build/tools/backstep dump "$file"
best readelf --debug-dump=frames-interp "$file"
best readelf --debug-dump=frames "$file"
