#!/usr/bin/env python3
"""JIT frames in a profile named from the process's perf map, as perf
script names them.

  jit_report_test.py PERF BACKSTEP NODE SCRIPT WORKDIR

node --perf-basic-prof (it writes /tmp/perf-PID.map) runs SCRIPT
(tests/profile/jit_busy.js: JavaScript calling JavaScript in a loop)
under `perf record -e cpu-clock --call-graph dwarf`. Then `backstep report`
(perf-script text) and `perf script` on the same file, sample by sample
(matched by time): wherever perf's innermost frame is JIT code it named
from the map ("JS:..." in /tmp/perf-PID.map), backstep's innermost frame
has the same name and module; and backstep names JIT code in at least as
many samples as perf. Then the same with node writing its jitdump too
(--perf-prof --perf-prof-unwinding-info): backstep names from the jitdump
what perf names from the map, with the same names. perf, node, or
perf_event_open missing fail the test with the reason: never a skip."""
import os
import re
import shutil
import subprocess
import sys

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def samples(text):
    """{time: [(name, module)], innermost first} from perf-script text."""
    out, cur, key = {}, None, None
    for line in text.splitlines():
        if not line.strip():
            cur = None
            continue
        if not line[0].isspace():
            m = re.search(r"\s(\d+\.\d+):", line)
            key = m.group(1) if m else None
            cur = [] if key else None
            if key:
                out[key] = cur
            continue
        if cur is None:
            continue
        m = re.match(r"\s+[0-9a-f]+ (.*) \((.*)\)$", line)
        if m:
            cur.append((re.sub(r"\+0x[0-9a-f]+$", "", m.group(1)), m.group(2)))
    return out


def remove_maps(stacks):
    """node leaves its map behind: removed (both readers are done)."""
    for k, f in stacks.items():
        for name, mod in f:
            if re.match(r"/tmp/perf-\d+\.map$", mod) and os.path.exists(mod):
                os.unlink(mod)


def jitdump_too(perf, backstep, node, script, work):
    """node writing its jitdump as well (--perf-prof, with unwinding
    records): backstep names JIT code from the jitdump, where perf script
    names it from the perf map of the same run: the same names (V8 writes
    both); and the walks through the JIT's frames reach the outermost frame
    as often as before. node 20 stamps its jitdump with the time of day,
    not perf's clock: the whole jitdump is taken."""
    data = os.path.join(work, "jitdump.data")
    p = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph",
                        "dwarf", "-o", data, node, "--perf-basic-prof", "--perf-prof",
                        "--perf-prof-unwinding-info", script],
                       capture_output=True, text=True, timeout=120, cwd=work)
    if p.returncode or not os.path.exists(data):
        raise SystemExit(f"FAIL: perf record (jitdump): exit {p.returncode}: {p.stderr[-500:]}")
    theirs = samples(subprocess.run([perf, "script", "--no-inline", "-i", data],
                                    capture_output=True, text=True, timeout=120).stdout)
    r = subprocess.run([backstep, "report", data], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"backstep report (jitdump): exit {r.returncode}: {r.stderr[-300:]}")
    ours = samples(r.stdout)
    jit_theirs = [k for k, f in theirs.items() if f and f[0][1].startswith("/tmp/perf-")]
    jit_ours = [k for k, f in ours.items() if f and re.search(r"/jit-\d+\.dump$", f[0][1])]
    check(len(jit_theirs) > 50, f"jitdump run: perf names JIT code in only {len(jit_theirs)} "
                                f"samples")
    check(len(jit_ours) >= len(jit_theirs),
          f"jitdump run: backstep names JIT code from the jitdump in {len(jit_ours)} samples, "
          f"perf from the map in {len(jit_theirs)}")
    same = 0
    for k in jit_theirs:
        if check(ours.get(k) and ours[k][0][0] == theirs[k][0][0],
                 f"jitdump run: sample at {k}: backstep's innermost {ours.get(k, [None])[0]}, "
                 f"perf's {theirs[k][0]}"):
            same += 1
    m = re.search(r"(\d+) samples read, (\d+) walked to the end", r.stderr)
    check(m and int(m.group(2)) >= 0.95 * int(m.group(1)),
          f"jitdump run: walked to the end: {m.group(0) if m else r.stderr[-200:]}")
    print(f"jitdump: {len(theirs)} samples; JIT code innermost named by perf (map) in "
          f"{len(jit_theirs)}, by backstep (jitdump) in {len(jit_ours)}; {same} agree")
    remove_maps(theirs)


def main():
    perf, backstep, node, script, work = sys.argv[1:6]
    for tool in (perf, node):
        if not shutil.which(tool):
            raise SystemExit(f"FAIL: {tool} is missing (scripts/setup.sh installs it)")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data = os.path.join(work, "jit.data")
    p = subprocess.run([perf, "record", "-q", "-e", "cpu-clock", "-F", "999", "--call-graph",
                        "dwarf", "-o", data, node, "--perf-basic-prof", script],
                       capture_output=True, text=True, timeout=120, cwd=work)
    if p.returncode or not os.path.exists(data):
        raise SystemExit(f"FAIL: perf record: exit {p.returncode}: {p.stderr[-500:]}")
    # --no-inline: perf would ask addr2line for the inlined calls of every
    # address of node (a 90 MB program), 0.4 s each here: 4 minutes of a
    # loaded machine went by (CI timed out). Only the innermost JIT frames
    # are compared, which nothing is inlined into.
    theirs = samples(subprocess.run([perf, "script", "--no-inline", "-i", data],
                                    capture_output=True, text=True, timeout=120).stdout)
    r = subprocess.run([backstep, "report", data], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"backstep report: exit {r.returncode}: {r.stderr[-300:]}")
    ours = samples(r.stdout)
    jit_theirs = [k for k, f in theirs.items() if f and f[0][1].startswith("/tmp/perf-")]
    jit_ours = [k for k, f in ours.items() if f and f[0][1].startswith("/tmp/perf-")]
    check(len(jit_theirs) > 50, f"perf names JIT code in only {len(jit_theirs)} samples")
    check(len(jit_ours) >= len(jit_theirs),
          f"backstep names JIT code in {len(jit_ours)} samples, perf in {len(jit_theirs)}")
    same = 0
    for k in jit_theirs:
        if check(ours.get(k) and ours[k][0] == theirs[k][0],
                 f"sample at {k}: backstep's innermost {ours.get(k, [None])[0]}, perf's "
                 f"{theirs[k][0]}"):
            same += 1
    names = sorted({f[0][0] for k, f in ours.items() if k in jit_ours})
    print(f"jit: {len(theirs)} samples; perf names JIT code innermost in {len(jit_theirs)}, "
          f"backstep in {len(jit_ours)}; {same} agree; names: {', '.join(names[:5])}")
    remove_maps(theirs)
    jitdump_too(perf, backstep, node, script, work)
    print(f"jit report: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
