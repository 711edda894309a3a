#!/usr/bin/env python3
"""backstep validate on JIT code a jitdump describes (tests/live/jitdump.c
"calls N": code written at run time into an anonymous mapping made
executable with mprotect, J1 -> J2 -> J3 -> a C callback and back, N
times; the jitdump's unwinding records give each function's CFI).

  jitdump_validate.py BACKSTEP JIT WORKDIR

  - --only '[jit]' with the ptrace driver: only the generated code is
    checked (the program runs free around it, its mprotect seen at the
    system call's exit, the jitdump read, the functions' entries given
    breakpoints): every one of its 21 instructions on each of the N calls,
    no mismatch, exit 0;
  - --only 'PROGRAM,[jit]' with each driver: the program and the
    generated code, no mismatch, the same counts from both;
  - lie (J2's unwinding record says 24 where its frame is 32): caught, by
    both drivers, at exactly J2's instructions from its sub to its add
    (js_J2+0x4 ... +0x9 as the locations the validator groups), blamed on
    the jitdump's code, with the jitdump's row."""
import json
import os
import shutil
import subprocess
import sys

N = 5
JIT_INSNS = 7 + 4 + 10  # J1, J2, J3 as tests/unit/jit_code.h writes them
failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def validate(backstep, jit, work, driver, only, *args):
    cmd = [backstep, "validate", "--json", "-q", "--driver", driver, "--only", only, "--", jit,
           work, "calls", str(N), *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=work)
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}, no JSON: {p.stderr.strip()[-400:]}")


def jit_mismatches(d):
    return [m for m in d.get("mismatches", []) if "jit-" in os.path.basename(m.get("module", ""))]


def main():
    backstep, jit, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    name = os.path.basename(jit)

    rc, d = validate(backstep, jit, work, "ptrace", "[jit]")
    st = d["stats"]
    check(rc == 0 and d["exit_status"] == 0, f"[jit], ptrace: exit {rc}, program {d['exit_status']}")
    check(st["instructions_checked"] == N * JIT_INSNS,
          f"[jit], ptrace: {st['instructions_checked']} checked, want {N * JIT_INSNS}")
    check(st["mismatching_instructions"] == 0 and not d.get("mismatches"),
          f"[jit], ptrace: mismatches {d.get('mismatches')}")
    print(f"[jit] (ptrace): {st['instructions_checked']} checked, "
          f"{st['mismatching_instructions']} mismatching")

    counts = {}
    for driver in ("ptrace", "inproc"):
        rc, d = validate(backstep, jit, work, driver, f"{name},[jit]")
        st = d["stats"]
        counts[driver] = st["instructions_checked"]
        check(rc == 0 and st["mismatching_instructions"] == 0,
              f"{name},[jit], {driver}: exit {rc}, {st['mismatching_instructions']} mismatching")
        check(not jit_mismatches(d), f"{name},[jit], {driver}: {jit_mismatches(d)}")
        check(st["instructions_checked"] > N * JIT_INSNS,
              f"{name},[jit], {driver}: {st['instructions_checked']} checked")
        print(f"{name},[jit] ({driver}): {st['instructions_checked']} checked")

        rc, d = validate(backstep, jit, work, driver, f"{name},[jit]", "lie")
        ms = jit_mismatches(d)
        where = sorted({(m.get("function"), m.get("offset")) for m in ms})
        check(rc == 1 and d["stats"]["mismatching_instructions"] > 0,
              f"lie, {driver}: exit {rc}, {d['stats']['mismatching_instructions']} mismatching")
        check(where == [("js_J2", "0x4"), ("js_J2", "0x8"), ("js_J2", "0x9")],
              f"lie, {driver}: caught at {where}")
        check(all(not m.get("nocfi") and "cfa=rsp+24" in m.get("row", "") for m in ms),
              f"lie, {driver}: the jitdump's row named ({[m.get('row') for m in ms]})")
        print(f"lie ({driver}): caught at {where}")
    check(counts["ptrace"] == counts["inproc"], f"the drivers checked {counts}")

    shutil.rmtree(work, ignore_errors=True)
    print(f"jitdump validate: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
