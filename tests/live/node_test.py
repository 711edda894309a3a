#!/usr/bin/env python3
"""JIT code named from a perf map: node --perf-basic-prof (it writes
/tmp/perf-PID.map) parked in a read of its stdin, five JavaScript calls
deep (tests/live/node_block.js).

  node_test.py BACKSTEP EU_STACK NODE SCRIPT BUSY_SCRIPT

`backstep pid --json` against `eu-stack -p` on the same stopped process:
every thread's PCs equal, through V8's JIT frames and back into node's C++
and libc's start code; the JavaScript functions leaf, mid and top named
from the perf map in that order, innermost first (their names are V8's:
"JS:~leaf /path/node_block.js:LINE:COL"); with --perf-map naming a file
that holds nothing, they are not named.

Then BUSY_SCRIPT (tests/live/node_busy.js) spins in optimized JIT code:
stopped (SIGSTOP) SAMPLES times, each time `backstep pid` and `eu-stack -p`
walk the same stopped threads: equal PCs in every thread, the walk of the
main thread reaching _start by the frame-pointer chain from the interrupted
JIT frame (no CFI, in anonymous memory: followed, not scanned). At least
half of the samples must have frame #0 in JIT code. node or eu-stack
missing fails the test with the reason: never a skip."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def settled(pid):
    """Every thread of PID in a system call, twice the same."""
    prev = None
    for _ in range(200):
        d = f"/proc/{pid}/task"
        cur = {t: open(f"{d}/{t}/syscall").read() for t in os.listdir(d)}
        if cur == prev and not any(v.startswith("running") for v in cur.values()):
            return True
        prev = cur
        time.sleep(0.05)
    return False


def eu_stack(eu, pid):
    out = subprocess.run([eu, "-p", str(pid), "-n", "0"], capture_output=True, text=True,
                         timeout=60).stdout
    stacks, tid = {}, None
    for line in out.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            stacks[tid] = []
            continue
        m = re.match(r"#\d+\s+0x([0-9a-f]+)", line)
        if m and tid is not None:
            stacks[tid].append(int(m.group(1), 16))
    return stacks


SAMPLES = 8


def busy(backstep, eu, node, script):
    """The busy phase (see above)."""
    proc = subprocess.Popen([node, "--perf-basic-prof", script], stdout=subprocess.PIPE,
                            cwd="/tmp")
    mapfile = f"/tmp/perf-{proc.pid}.map"
    in_jit = 0
    try:
        if proc.stdout.readline().strip() != b"ready":
            raise SystemExit("FAIL: node did not get ready (busy)")
        time.sleep(1)  # long enough for spin() to be optimized
        for n in range(SAMPLES):
            os.kill(proc.pid, signal.SIGSTOP)
            try:
                time.sleep(0.05)
                p = subprocess.run([backstep, "pid", "--json", str(proc.pid)],
                                   capture_output=True, text=True, timeout=60)
                theirs = eu_stack(eu, proc.pid)
            finally:
                os.kill(proc.pid, signal.SIGCONT)
            check(p.returncode == 0, f"busy {n}: backstep pid: exit {p.returncode}: {p.stderr}")
            threads = {t["tid"]: t for t in (json.loads(l) for l in p.stdout.splitlines() if l)}
            for tid, t in threads.items():
                ours = [int(f["pc"], 16) for f in t["frames"]]
                check(ours == theirs.get(tid),
                      f"busy {n}: thread {tid}: backstep {[hex(x) for x in ours]}, eu-stack "
                      f"{[hex(x) for x in theirs.get(tid, [])]}")
            frames = threads.get(proc.pid, {"frames": []})["frames"]
            if frames and "module" not in frames[0] and \
                    frames[0].get("function", "").startswith("JS:"):
                in_jit += 1
                check(len(frames) > 1 and frames[1].get("how") == "fp",
                      f"busy {n}: out of the interrupted JIT frame by the frame pointer: "
                      f"{frames[:2]}")
            check(frames and frames[-1].get("function") == "_start",
                  f"busy {n}: the main thread's walk ends at _start: {frames[-3:]}")
            time.sleep(0.1)
    finally:
        proc.kill()
        proc.wait()
        if os.path.exists(mapfile):
            os.unlink(mapfile)
    check(in_jit * 2 >= SAMPLES, f"busy: frame #0 in JIT code in {in_jit} of {SAMPLES} samples")
    print(f"node busy: {SAMPLES} samples as eu-stack's, {in_jit} interrupted in JIT code")


def main():
    backstep, eu, node, script, busy_script = sys.argv[1:6]
    script = os.path.realpath(script)
    for tool in (eu, node):
        if not shutil.which(tool):
            raise SystemExit(f"FAIL: {tool} is missing (scripts/setup.sh installs it)")
    # (in /tmp: V8 may leave isolate-*.log files in its working directory)
    proc = subprocess.Popen([node, "--perf-basic-prof", "--interpreted-frames-native-stack",
                             script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd="/tmp")
    mapfile = f"/tmp/perf-{proc.pid}.map"
    try:
        line = proc.stdout.readline()
        if line.strip() != b"ready" or not settled(proc.pid):
            raise SystemExit(f"FAIL: node did not get ready: {line!r}")
        p = subprocess.run([backstep, "pid", "--json", str(proc.pid)], capture_output=True,
                           text=True, timeout=60)
        check(p.returncode == 0, f"backstep pid: exit {p.returncode}: {p.stderr}")
        threads = {t["tid"]: t for t in (json.loads(l) for l in p.stdout.splitlines() if l)}
        theirs = eu_stack(eu, proc.pid)
        check(sorted(threads) == sorted(theirs),
              f"threads: backstep {sorted(threads)}, eu-stack {sorted(theirs)}")
        for tid, t in threads.items():
            ours = [int(f["pc"], 16) for f in t["frames"]]
            check(ours == theirs.get(tid),
                  f"thread {tid}: backstep {[hex(x) for x in ours]}, eu-stack "
                  f"{[hex(x) for x in theirs.get(tid, [])]}")
        main_thread = threads.get(proc.pid, {"frames": []})
        js = [f.get("function", "") for f in main_thread["frames"]
              if f.get("function", "").startswith("JS:")]
        ours = [re.match(r"JS:\S(\S*) ", n).group(1) for n in js if re.match(r"JS:\S(\S*) ", n)]
        user = [n for n in ours if n in ("leaf", "mid", "top")]
        check(user == ["leaf", "mid", "top"],
              f"the JavaScript frames named from {mapfile}: {js}")
        check(all(script in n for n in js if re.match(r"JS:\S(leaf|mid|top) ", n)),
              f"the script's path in its frames' names: {js}")
        check(main_thread["frames"] and main_thread["frames"][-1].get("function") == "_start",
              "the main thread's walk ends at _start")
        print(f"node: {len(threads)} threads, {sum(len(t['frames']) for t in threads.values())} "
              f"frames as eu-stack's; {len(js)} JIT frames named from the perf map: "
              f"{', '.join(js[:4])}, ...")
        empty = os.path.join(os.path.dirname(os.path.abspath(backstep)), "empty.map")
        open(empty, "w").close()
        p = subprocess.run([backstep, "pid", "--json", "--perf-map", empty, str(proc.pid)],
                           capture_output=True, text=True, timeout=60)
        named = [f for t in (json.loads(l) for l in p.stdout.splitlines() if l)
                 for f in t["frames"] if f.get("function", "").startswith("JS:")]
        check(p.returncode == 0 and not named, f"--perf-map with nothing in it: {named[:3]}")
        os.unlink(empty)
    finally:
        proc.kill()
        proc.wait()
        if os.path.exists(mapfile):
            os.unlink(mapfile)
    busy(backstep, eu, node, os.path.realpath(busy_script))
    print(f"node: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
