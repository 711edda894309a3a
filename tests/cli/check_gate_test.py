#!/usr/bin/env python3
"""`backstep check` as a CI gate.

    check_gate_test.py BACKSTEP WORKDIR

  - correct programs (gcc, clang, stripped, a static one, AArch64) exit 0:
    the C runtime's code without CFI is reported apart, as toolchain gaps;
  - a function of the program's own without CFI is an error (exit 1);
  - --suppress KIND and KIND:SYMBOL waive it (exit 0), another symbol does
    not, an unknown kind is bad usage (exit 2);
  - --baseline FILE (check --json written earlier, from another directory)
    waives what it lists; a new finding still fails; a baseline that is not
    check --json output, or missing, is exit 2 with one line;
  - the alignment after a size-less stub is padding, not part of its gap.
A compiler that is missing fails the test: never a skip.
"""
import json
import os
import shutil
import subprocess
import sys

from checks import check, finish

backstep, work = sys.argv[1], sys.argv[2]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)




def run(*args):
    return subprocess.run([backstep, "check", *args], capture_output=True, text=True, timeout=120)


def build(cc, name, *srcs, flags=()):
    out = os.path.join(work, name)
    c = subprocess.run([cc, "-O2", *flags, "-o", out, *srcs], capture_output=True, text=True)
    if not check(c.returncode == 0, f"{cc} {name}: {c.stderr}"):
        return None
    return out


main_c = os.path.join(work, "main.c")
with open(main_c, "w") as f:
    f.write('#include <stdio.h>\nint helper(int);\n'
            'int main(int argc, char **argv) { printf("%d\\n", argc); return 0; }\n')

# ---- Correct programs: exit 0, the crt's gaps apart ----------------------
progs = [build("gcc", "ok-gcc", main_c), build("clang", "ok-clang", main_c),
         build("gcc", "ok-static", main_c, flags=("-static",)),
         build("aarch64-linux-gnu-gcc", "ok-aarch64", main_c)]
if progs[0]:
    stripped = os.path.join(work, "ok-stripped")
    subprocess.run(["strip", "-o", stripped, progs[0]], check=True)
    progs.append(stripped)
for p in filter(None, progs):
    r = run(p)
    check(r.returncode == 0 and r.stderr == "" and ": error:" not in r.stdout and
          f"{p}: toolchain: no CFI in C runtime or linker code" in r.stdout,
          f"{p}: exit {r.returncode}, {r.stdout!r} {r.stderr!r}")
    j = run("--json", p)
    rows = [json.loads(l) for l in j.stdout.splitlines()]
    tool = [x for x in rows if x.get("kind") == "toolchain-gap"]
    check(j.returncode == 0 and tool and all(t["severity"] == "info" for t in tool) and
          rows[-1]["type"] == "file" and rows[-1]["errors"] == 0 and
          rows[-1]["toolchain_gap_bytes"] > 0,
          f"{p} --json: exit {j.returncode}, toolchain gaps {tool}, last {rows[-1:]}")

# ---- A function of the program's own without CFI -------------------------
def nocfi_asm(name, *funcs):
    path = os.path.join(work, name)
    with open(path, "w") as f:
        f.write("\t.section .note.GNU-stack,\"\",@progbits\n\t.text\n")
        for fn in funcs:
            f.write(f"\t.globl {fn}\n\t.type {fn},@function\n{fn}:\n\tpushq %rbx\n"
                    f"\tpopq %rbx\n\tret\n\t.size {fn}, .-{fn}\n")
    return path


bad = build("gcc", "bad", main_c, nocfi_asm("one.S", "nocfi_one"))
if bad:
    r = run(bad)
    check(r.returncode == 1 and "error: gap:" in r.stdout and "(nocfi_one+0x0)" in r.stdout,
          f"own gap: exit {r.returncode}, {r.stdout!r}")
    for sup, want in (("gap", 0), ("gap:nocfi_one", 0), ("gap:other", 1), ("overlap", 1)):
        r = run("--suppress", sup, bad)
        check(r.returncode == want, f"--suppress {sup}: exit {r.returncode}, want {want}: "
              f"{r.stdout!r}")
    r = run("--suppress", "gap:nocfi_one", bad)
    check("1 suppressed" in r.stdout and "error: gap" not in r.stdout,
          f"--suppress: the summary says so, the finding is not printed: {r.stdout!r}")
    r = run("-v", "--suppress", "gap:nocfi_one", bad)
    check("waived (suppressed): error: gap:" in r.stdout, f"-v shows it waived: {r.stdout!r}")
    r = run("--suppress", "nosuchkind", bad)
    check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "nosuchkind" in r.stderr,
          f"--suppress nosuchkind: exit {r.returncode}, {r.stderr!r}")

    # Baseline: recorded from a copy in another directory.
    other = os.path.join(work, "elsewhere")
    os.makedirs(other)
    shutil.copy(bad, os.path.join(other, "bad"))
    base = os.path.join(work, "baseline.jsonl")
    with open(base, "w") as f:
        rec = run("--json", os.path.join(other, "bad"))
        f.write(rec.stdout)
    check(rec.returncode == 1, f"recording the baseline: exit {rec.returncode}")
    r = run("--baseline", base, bad)
    check(r.returncode == 0 and "error:" not in r.stdout and "in the baseline" in r.stdout,
          f"--baseline: exit {r.returncode}, {r.stdout!r}")
    j = run("--json", "--baseline", base, bad)
    waived = [json.loads(l) for l in j.stdout.splitlines() if '"waived"' in l]
    check(j.returncode == 0 and any(w.get("symbol") == "nocfi_one" and
                                    w["waived"] == "baseline" for w in waived),
          f"--json --baseline: waived findings marked: {j.stdout[:500]!r}")
    # A new function without CFI (the old one moved: other addresses) fails.
    worse = build("gcc", "bad", main_c, nocfi_asm("two.S", "nocfi_zero", "nocfi_one",
                                                 "nocfi_two"))
    if worse:
        r = run("--baseline", base, worse)
        errs = [l for l in r.stdout.splitlines() if ": error:" in l]
        check(r.returncode == 1 and len(errs) == 2 and "nocfi_one" not in r.stdout and
              all("nocfi_zero" in e or "nocfi_two" in e for e in errs),
              f"--baseline, new findings: exit {r.returncode}, {r.stdout!r}")
    junk = os.path.join(work, "junk.jsonl")
    with open(junk, "w") as f:
        f.write('{"type": "finding", "kind": "gap"}\nnot json\n')
    for b, needle in ((junk, "line 2"), (os.path.join(work, "missing"), "No such file")):
        r = run("--baseline", b, bad)
        check(r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1 and
              b in r.stderr and needle in r.stderr,
              f"--baseline {b}: exit {r.returncode}, {r.stderr!r}")

# ---- The alignment after a size-less stub is padding ---------------------
stub_s = os.path.join(work, "stub.S")
with open(stub_s, "w") as f:
    f.write("""\t.section .note.GNU-stack,"",@progbits
\t.text
\t.globl sizeless_stub
\t.type sizeless_stub,@function
sizeless_stub:
\tmovl $1, %eax
\tret
\t.p2align 6
\t.globl after
\t.type after,@function
after:
\t.cfi_startproc
\tret
\t.cfi_endproc
\t.size after, .-after
""")
stub = build("gcc", "stub", main_c, stub_s)
if stub:
    j = run("--json", stub)
    gaps = [json.loads(l) for l in j.stdout.splitlines() if '"kind": "gap"' in l]
    mine = [g for g in gaps if g.get("symbol") == "sizeless_stub"]
    check(j.returncode == 1 and len(mine) == 1 and
          int(mine[0]["end"], 16) - int(mine[0]["addr"], 16) == 6,
          f"size-less stub: its gap must be its 6 bytes of code: {mine} (exit {j.returncode})")

finish("check gate")
