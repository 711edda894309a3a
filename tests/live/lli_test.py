#!/usr/bin/env python3
"""JIT code through the GDB JIT interface: lli-14 (LLVM's JIT, Debian's
llvm-14) runs tests/live/lli_block.c compiled to IR by clang-14 -O2 -g (no
frame pointers), two threads parked in pause() five JIT'd calls deep.

  lli_test.py BACKSTEP GDB LLI CLANG SOURCE

gdb reads the objects lli registers in __jit_debug_descriptor; so does
`backstep pid` (bk_space_add_gdb_jit). Compared with gdb on the same
stopped process, with live_test.py's comparisons: every thread's PCs,
function names, file:line, inlined calls and registers, frame by frame;
the JIT frames are in "[jit 0x...]" modules, unwound by their CFI. Then
gcore's core of the process: `backstep core` finds the same objects in the
core and walks the same stacks. A tool missing fails the test with the
reason: never a skip."""
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_test as lt  # noqa: E402

WANT = ["park", "level3", "level2", "level1"]  # real JIT frames, innermost first


def jit_frames(frames):
    return [f for f in frames if f.module and f.module.startswith("[jit 0x")]


def check_jit(tid, frames, what):
    jit = jit_frames(frames)
    names = [f.function for f in jit]
    lt.check(names[:4] == WANT and names[4:] in (["main"], ["worker"]),
             f"{what}: thread {tid}: JIT frames {names}, want {WANT} then main or worker",
             f"   {lt.fmt(frames)}")
    lt.check(all(f.how == "cfi" for f in jit[1:]) and all(f.file and f.line for f in jit),
             f"{what}: thread {tid}: JIT frames not all [cfi] with file:line: "
             f"{[(f.how, f.file, f.line) for f in jit]}")
    inl = [x.get("function") for x in jit[1].inlined] if len(jit) > 1 else []
    lt.check(inl == ["twice"], f"{what}: thread {tid}: inlined at level3's call: {inl}")
    return len(jit)


def main():
    backstep, gdb, lli, clang, source = sys.argv[1:6]
    for tool in (gdb, lli, clang):
        if not shutil.which(tool):
            raise SystemExit(f"FAIL: {tool} is missing (scripts/setup.sh installs it)")
    gcore = shutil.which("gcore")
    if not gcore:
        raise SystemExit("FAIL: gcore is missing (gdb's; scripts/setup.sh installs it)")
    lli = shutil.which(lli)
    with tempfile.TemporaryDirectory() as tmp:
        bc = os.path.join(tmp, "lli_block.bc")
        subprocess.run([clang, "-O2", "-g", "-emit-llvm", "-c", source, "-o", bc], check=True)
        prog = lt.Program([lli, bc])
        try:
            prog.wait_ready()
            prog.wait_blocked()
            pid = prog.pid
            live = lt.backstep_stacks(backstep, ["pid", "--json", str(pid)], "backstep pid")
            lt.check(len(live) == 2, f"threads: {sorted(live)}, want 2")
            njit = 0
            for tid, (_, frames, err) in sorted(live.items()):
                lt.check(err is None, f"backstep pid: thread {tid}: walk ended with {err!r}")
                njit += check_jit(tid, frames, "live")
            bregs = lt.backstep_regs(backstep, pid)
            gframes, _, _, _ = lt.gdb_stacks(gdb, pid)
            lt.check(sorted(gframes) == sorted(live),
                     f"threads: backstep {sorted(live)}, gdb {sorted(gframes)}")
            n = names = lines = inlined = regs = 0
            for tid in sorted(gframes):
                ours = live.get(tid, (None, [], None))[1]
                real = lt.gdb_real_frames(tid, gframes[tid], "live")
                n += len(real)
                lt.compare_pcs(tid, ours, real, "gdb", "live")
                names += lt.compare_names(tid, ours, real, "gdb", "live")
                lines += lt.compare_lines(tid, ours, real, "live")
                inlined += lt.compare_inlined(tid, ours, gframes[tid], "live")
                regs += lt.compare_regs(tid, ours, bregs.get(tid, []), real, "live", {})
            print(f"lli: gdb: {len(gframes)} threads, {n} frames ({njit} JIT frames) compared: "
                  f"{names} names, {lines} lines, {inlined} inlined, {regs} registers")
            core_prefix = os.path.join(tmp, "core")
            g = lt.run([gcore, "-o", core_prefix, str(pid)], timeout=120)
            core = f"{core_prefix}.{pid}"
            lt.check(g.returncode == 0 and os.path.exists(core), f"gcore failed: {g.stderr[-800:]}")
        finally:
            prog.kill()
        if os.path.exists(core):
            cst = lt.backstep_stacks(backstep, ["core", "--json", core, os.path.realpath(lli)],
                                     "backstep core")
            lt.check(sorted(cst) == sorted(live),
                     f"core threads {sorted(cst)}, live {sorted(live)}")
            for tid in sorted(cst):
                ours = cst[tid][1]
                theirs = live.get(tid, (None, [], None))[1]
                lt.check([(f.pc, f.function, f.file, f.line) for f in ours] ==
                         [(f.pc, f.function, f.file, f.line) for f in theirs],
                         f"core: thread {tid}: {lt.fmt(ours)}\n   live: {lt.fmt(theirs)}")
                check_jit(tid, ours, "core")
            print(f"lli: core: {len(cst)} threads walked as live")
    print(f"lli: {lt.checks} checks, {lt.failures} failed")
    return 1 if lt.failures else 0


if __name__ == "__main__":
    sys.exit(main())
