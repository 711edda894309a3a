#!/usr/bin/env python3
"""backstep validate on JIT code: described by a jitdump
(tests/live/jitdump.c "calls N": code written at run time into an
anonymous mapping made executable with mprotect, J1 -> J2 -> J3 -> a C
callback and back, N times; the jitdump's unwinding records give each
function's CFI), and listed through the GDB JIT interface (lli-14 running
tests/live/lli_calls.c compiled to IR by clang-14 -O2 -g).

  jit_validate.py BACKSTEP JIT WORKDIR LLI CLANG LLI_SOURCE

  - --only '[jit]' with each driver: only the generated code is checked
    (the program runs free around it, its mprotect seen at the call's exit
    -- the system call's under ptrace, the C library function's in-process
    --, the jitdump read, the functions' entries given breakpoints): every
    one of its 21 instructions on each of the N calls, no mismatch, exit 0;
  - --only 'PROGRAM,[jit]' with each driver: the program and the
    generated code, no mismatch, the same counts from both;
  - lie (J2's unwinding record says 24 where its frame is 32): caught, by
    both drivers, at exactly J2's instructions from its sub to its add
    (js_J2+0x4 ... +0x9 as the locations the validator groups), blamed on
    the jitdump's code, with the jitdump's row;
  - lli with each driver (LLVM installs a SIGTRAP handler of its own,
    which the in-process driver keeps apart from its traps), --only
    '[jit]': the objects LLVM registers
    (read again at each call of __jit_debug_register_code, as gdb does;
    dropped when unregistered) checked at every instruction, no mismatch,
    exit 0, LLVM's own code running free; naming the JIT'd functions but
    main instead (--only jit_leaf,jit_mid,jit_down,jit_cmp: their entries
    found from the object's FDEs and symbols) checks fewer, none wrong;
    the two drivers check the same instructions.
A tool missing fails the test with the reason: never a skip."""
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


def lli_part(backstep, lli, clang, source, work):
    for tool in (lli, clang):
        if not shutil.which(tool):
            raise SystemExit(f"FAIL: {tool} is missing (scripts/setup.sh installs llvm-14 and clang-14)")
    ir = os.path.join(work, "lli_calls.ll")
    p = subprocess.run([clang, "-O2", "-g", "-S", "-emit-llvm", source, "-o", ir],
                       capture_output=True, text=True, timeout=120)
    if p.returncode:
        raise SystemExit(f"FAIL: {clang}: {p.stderr[-300:]}")
    runs = {}
    named = "jit_leaf,jit_mid,jit_down,jit_cmp"
    for driver in ("ptrace", "inproc"):
        for only in ("[jit]", named):
            cmd = [backstep, "validate", "--json", "-q", "--driver", driver, "--only", only, "--",
                   lli, ir]
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=work)
            try:
                d = json.loads(p.stdout)
            except json.JSONDecodeError:
                raise SystemExit(f"FAIL: {' '.join(cmd)}: exit {p.returncode}: {p.stderr[-300:]}")
            st = d["stats"]
            runs[driver, only] = (st["instructions_checked"], st["distinct_pcs"])
            what = f"lli --only {only} ({driver})"
            check(d["driver"] == driver, f"{what}: ran with {d['driver']} ({d.get('driver_note')})")
            check(p.returncode == 0 and d["exit_status"] == 0 and st["mismatching_instructions"] == 0,
                  f"{what}: exit {p.returncode}, program {d['exit_status']}, "
                  f"{st['mismatching_instructions']} mismatching: {d.get('mismatches')}")
            check(st["instructions_checked"] > 100, f"{what}: {st['instructions_checked']} checked")
            print(f"{what}: {st['instructions_checked']} checked, "
                  f"{st['distinct_pcs']} distinct, {st['module_refreshes']} refreshes")
        check(runs[driver, named][0] < runs[driver, "[jit]"][0] and
              runs[driver, named][1] < runs[driver, "[jit]"][1],
              f"lli ({driver}): the functions by name, main left out, checked less than [jit]: {runs}")
    for only in ("[jit]", named):
        check(runs["ptrace", only] == runs["inproc", only],
              f"lli --only {only}: the drivers checked {runs['ptrace', only]} and {runs['inproc', only]}")

def main():
    backstep, jit, work, lli, clang, lli_source = sys.argv[1:7]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    name = os.path.basename(jit)

    for driver in ("ptrace", "inproc"):
        rc, d = validate(backstep, jit, work, driver, "[jit]")
        st = d["stats"]
        check(d["driver"] == driver, f"[jit], {driver}: ran with {d['driver']} ({d.get('driver_note')})")
        check(rc == 0 and d["exit_status"] == 0,
              f"[jit], {driver}: exit {rc}, program {d['exit_status']}")
        check(st["instructions_checked"] == N * JIT_INSNS,
              f"[jit], {driver}: {st['instructions_checked']} checked, want {N * JIT_INSNS}")
        check(st["mismatching_instructions"] == 0 and not d.get("mismatches"),
              f"[jit], {driver}: mismatches {d.get('mismatches')}")
        print(f"[jit] ({driver}): {st['instructions_checked']} checked, "
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
    lli_part(backstep, lli, clang, lli_source, work)

    shutil.rmtree(work, ignore_errors=True)
    print(f"jit validate: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
