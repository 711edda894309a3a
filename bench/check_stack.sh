#!/usr/bin/env bash
# Benchmark: `backstep check --stack` (one thread) on a few files (default
# libc and libstdc++): per file the functions, the instructions in their
# FDEs, the share checked (compared with a row; functions given up on are
# not in it), the best of RUNS runs' wall and CPU time for the whole command
# (opening the file, symbols and Capstone included; CPU time is the child's
# user + system time from wait4, to the microsecond), the median CPU time,
# and instructions checked per CPU second (best run). Prints numbers;
# asserts nothing.
#   bench/check_stack.sh [BACKSTEP[,BACKSTEP...]] [RUNS] [FILE...]
# Several binaries (comma-separated: an analysis before and after a change)
# run interleaved, run by run, so that a busy machine slows them alike.
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
import json, os, statistics, subprocess, sys, time
bins, runs, files = sys.argv[1].split(","), int(sys.argv[2]), sys.argv[3:]


def run_timed(backstep, path):
    """(wall s, CPU s, stdout) of one run: the child's own rusage, from
    wait4."""
    r, w = os.pipe()
    t0 = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.dup2(w, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.execv(backstep, [backstep, "check", "--stack", "--json", path])
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status, ru = os.wait4(pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{path}: {backstep} exited {code}")
    return wall, ru.ru_utime + ru.ru_stime, b"".join(chunks).decode()


print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; best of {runs} runs"
      + (f", {len(bins)} binaries interleaved" if len(bins) > 1 else ""))
res = {}
for i in range(runs + 1):  # run 0 warms the page cache and is not counted
    for b in bins:
        for path in files:
            wall, cpu, out = run_timed(b, path)
            if i:
                res.setdefault((b, path), []).append((wall, cpu, out))
print(f"{'file':<40} {'functions':>9} {'insns':>8} {'checked':>8} {'share':>7} "
      f"{'wall s':>7} {'cpu s':>7} {'median':>7} {'checked/cpu s':>14} {'diffs':>6}")
for b in bins:
    if len(bins) > 1:
        print(b)
    for path in files:
        rs = res[(b, path)]
        wall, cpu, out = min(rs, key=lambda r: r[1])
        med = statistics.median(r[1] for r in rs)
        f = [json.loads(l) for l in out.splitlines() if '"type": "file"' in l][0]
        name = path if len(path) <= 40 else "..." + path[-37:]
        print(f"{name:<40} {f['fdes']:>9} {f['instructions']:>8} {f['checked']:>8} "
              f"{100 * f['checked'] / max(f['instructions'], 1):>6.2f}% {wall:>7.3f} {cpu:>7.3f} "
              f"{med:>7.3f} {f['checked'] / max(cpu, 1e-6):>14,.0f} {f['differences']:>6}")
        nc = {k: v for k, v in f["not_checked"].items() if v}
        print(f"{'':<40} not checked: {nc}")
PY
