#!/usr/bin/env python3
"""JIT code in a profile described by a jitdump: report against `perf
inject --jit` + `perf script`, and record.

  jitdump_report_test.py PERF BACKSTEP JIT WORKDIR

JIT is tests/live/jitdump.c: it writes jit-PID.dump (perf's format, with
unwinding records and CLOCK_MONOTONIC times) and spins in C under three
JIT functions without frame pointers (main -> enter -> js_J1 -> js_J2 ->
js_J3 -> js_callback); half-way it loads J3 again at the same address as
js_J3_v2 (printing when on stderr).

  - `perf record -k mono --call-graph dwarf`, then `backstep report`: every
    sample whose stack holds js_callback goes on through js_J3 (or
    js_J3_v2), js_J2, js_J1 to enter and main, each JIT frame named from
    the jitdump (module jit-PID.dump); js_J3 in samples before the
    relabelling, js_J3_v2 after (the jitdump followed in time), both seen;
  - `perf inject --jit` turns the jitdump into files and `perf script`
    names from them: wherever perf has a JIT frame, backstep has as many
    frames up to it, and the JIT frame and the one below it (js_callback)
    have the same names (perf 6.1 stops unwinding at the first JIT frame:
    what lies above it is held to the program's layout only);
  - `backstep record -- JIT ...` (live, CLOCK_MONOTONIC): the same.
perf, or perf_event_open refused, fail the test with the reason: never a
skip."""
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
    """{time: [(pc, name, module)], innermost first} from perf-script text;
    inlined entries (no address of their own in perf --no-inline) left out."""
    out, cur = {}, None
    for line in text.splitlines():
        if not line.strip():
            cur = None
            continue
        if not line[0].isspace():
            m = re.search(r"\s(\d+\.\d+):", line)
            cur = [] if m else None
            if m:
                out[m.group(1)] = cur
            continue
        if cur is None:
            continue
        m = re.match(r"\s+([0-9a-f]+) (.*) \((.*)\)$", line)
        if m and m.group(3) != "inlined":
            cur.append((int(m.group(1), 16), re.sub(r"\+0x[0-9a-f]+$", "", m.group(2)),
                        m.group(3)))
    return out


def check_layout(stacks, what, relabel_time):
    """Every stack through js_callback goes on through the JIT to main."""
    seen, before, after = 0, 0, 0
    for t, f in stacks.items():
        names = [n for _, n, _ in f]
        if "js_callback" not in names:
            continue
        seen += 1
        i = names.index("js_callback")
        rest = names[i + 1:i + 6]
        j3 = rest[0] if rest else None
        if not check(rest[1:] == ["js_J2", "js_J1", "enter", "main"] and
                     j3 in ("js_J3", "js_J3_v2"),
                     f"{what}: sample at {t}: js_callback's callers {rest}"):
            continue
        if not check(all(os.path.basename(m).startswith("jit-") for _, n, m in f[i + 1:i + 4]),
                     f"{what}: sample at {t}: the JIT frames' module {f[i + 1:i + 4]}"):
            continue
        if relabel_time is not None:
            secs = float(t)
            want = "js_J3" if secs < relabel_time else "js_J3_v2"
            check(j3 == want, f"{what}: sample at {t}: {j3}, want {want} (relabelled at "
                              f"{relabel_time:.6f})")
        before += j3 == "js_J3"
        after += j3 == "js_J3_v2"
    check(seen > 100, f"{what}: {seen} samples through js_callback")
    check(before > 10 and after > 10, f"{what}: js_J3 in {before}, js_J3_v2 in {after} samples")
    return seen, before, after


def main():
    perf, backstep, jit, work = sys.argv[1:5]
    if not shutil.which(perf):
        raise SystemExit(f"FAIL: {perf} is missing (scripts/setup.sh installs it)")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    data = os.path.join(work, "jit.data")
    p = subprocess.run([perf, "record", "-q", "-k", "mono", "-e", "cpu-clock", "-F", "999",
                        "--call-graph", "dwarf", "-o", data, jit, work, "busy", "1.5",
                        "relabel"], capture_output=True, text=True, timeout=120, cwd=work)
    m = re.search(r"relabelled (\d+)", p.stderr)
    if p.returncode or not os.path.exists(data) or not m:
        raise SystemExit(f"FAIL: perf record: exit {p.returncode}: {p.stderr[-500:]}")
    relabel = int(m.group(1)) / 1e9

    r = subprocess.run([backstep, "report", data], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"backstep report: exit {r.returncode}: {r.stderr[-300:]}")
    ours = samples(r.stdout)
    seen, before, after = check_layout(ours, "report", relabel)

    injected = data + ".jit"
    p = subprocess.run([perf, "inject", "-i", data, "--jit", "-o", injected],
                       capture_output=True, text=True, timeout=120, cwd=work)
    check(p.returncode == 0, f"perf inject --jit: exit {p.returncode}: {p.stderr[-300:]}")
    theirs = samples(subprocess.run([perf, "script", "--no-inline", "-i", injected],
                                    capture_output=True, text=True, timeout=120).stdout)
    compared = 0
    for t, f in theirs.items():
        k = next((i for i, (_, _, mod) in enumerate(f) if "jitted-" in mod), None)
        if k is None:
            continue
        o = ours.get(t)
        if not check(o is not None and len(o) > k, f"sample at {t}: backstep has {o}"):
            continue
        # perf prints these addresses relative to their files, and an
        # alias of libc's function at times: the frames are held by
        # count, and by name from js_callback on.
        mine = [n for _, n, _ in o[:k + 1]]
        perfs = [n for _, n, _ in f[:k + 1]]
        if check(mine[-2:] == perfs[-2:] and len(mine) == len(perfs),
                 f"sample at {t}: backstep {mine}, perf {perfs}"):
            compared += 1
    check(compared > 100, f"{compared} samples with a JIT frame compared with perf")

    # record, live: the same stacks.
    out = os.path.join(work, "record.txt")
    r = subprocess.run([backstep, "record", "-F", "499", "-o", out, "--", jit, work, "busy",
                        "1.5", "relabel"], capture_output=True, text=True, timeout=120, cwd=work)
    m = re.search(r"relabelled (\d+)", r.stderr)
    check(r.returncode == 0 and m, f"backstep record: exit {r.returncode}: {r.stderr[-300:]}")
    if m and os.path.exists(out):
        check_layout(samples(open(out).read()), "record", int(m.group(1)) / 1e9)

    print(f"jitdump report: {len(ours)} samples, {seen} through the JIT ({before} js_J3, "
          f"{after} js_J3_v2); {compared} compared with perf inject --jit; {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
