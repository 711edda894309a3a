#!/usr/bin/env python3
"""JIT code described by a jitdump (tests/live/jitdump.c: a JIT writing
perf's jitdump format with unwinding records, as node --perf-prof
--perf-prof-unwinding-info does, and mapping the file as V8 does).

  jitdump_test.py BACKSTEP JITDUMP_PROGRAM GDB TMPDIR

The program parks in pause() under three JIT functions without frame
pointers: pause <- js_callback <- js_J3 <- js_J2 <- js_J1 <- enter <- main.

  - pid: found through the process's map, the JIT frames are unwound by the
    jitdump's .eh_frame (how "cfi"), named js_J3, js_J2, js_J1 at their
    call sites' offsets, with the lines of its debug records (gen.js:31,
    21, 11), and the walk goes on to main and _start; the callee-saved
    registers J3 and J1 saved (r12, r13, rbx) are recovered in their
    callers' frames with the values gdb reads in the innermost frame
    (untouched since) or that J3 wrote;
  - the jitdump deleted while mapped: read through /proc/PID/map_files,
    its frames' module still named by its path;
  - without unwinding records (nounwind): named, but no JIT frame by CFI
    (the CFI above came from the jitdump);
  - gcore's core: the jitdump found through its NT_FILE, the same frames;
    --jitdump naming a file that is not a jitdump: one line, exit 2;
  - the kernel's core: the jitdump found through its NT_FILE; moved away,
    no JIT name and no JIT frame by CFI, and a warning; --jitdump naming
    the moved file: the same frames again.
gdb writes the core (gcore); a missing gdb fails the test with the reason:
never a skip."""
import json
import re
import resource
import os
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


def start(prog, tmp, *args):
    p = subprocess.Popen([prog, tmp, "block", *args], stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if line.strip() != "ready":
        p.kill()
        sys.exit(f"{prog}: did not get ready ({line!r})")
    # Parked: in pause() (its syscall number, 34, first in /proc/.../syscall).
    for _ in range(200):
        if open(f"/proc/{p.pid}/syscall").read().split()[0] == "34":
            break
        time.sleep(0.01)
    return p


def walk(backstep, args, expect_status=0):
    r = subprocess.run([backstep, *args, "--json"], capture_output=True, text=True, timeout=60)
    check(expect_status is None or r.returncode == expect_status,
          f"backstep {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    stacks = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    if not check(len(stacks) == 1, f"backstep {' '.join(args)}: one thread ({r.stdout[:200]})"):
        return [], r.stderr
    return stacks[0]["frames"], r.stderr


EXPECT = [("js_J3", 0x17, 31), ("js_J2", 0x8, 21), ("js_J1", 0xc, 11)]


def jit_frames(frames):
    return [f for f in frames if f.get("function", "").startswith("js_J")]


def check_full(frames, what, jitdump_name):
    names = [f.get("function") for f in frames]
    if not check(names[:2] == ["__libc_pause", "js_callback"] or
                 names[:2] == ["pause", "js_callback"],
                 f"{what}: starts in pause under js_callback: {names[:3]}"):
        return
    jit = frames[2:5]
    for f, (name, off, line) in zip(jit, EXPECT):
        check(f.get("function") == name, f"{what}: {name} named ({f})")
        check(int(f.get("offset", "0x0"), 16) == off, f"{what}: {name}+{off:#x} ({f})")
        check(f.get("how") == "cfi", f"{what}: {name} unwound by CFI ({f.get('how')})")
        check(f.get("file") == "gen.js" and f.get("line") == line,
              f"{what}: {name} at gen.js:{line} ({f.get('file')}:{f.get('line')})")
        check(os.path.basename(f.get("module", "")) == jitdump_name,
              f"{what}: {name} in module {jitdump_name} ({f.get('module')})")
    check(names[5:7] == ["enter", "main"], f"{what}: then enter, main: {names[5:8]}")
    check(names[-1] == "_start", f"{what}: reaches _start: {names[-1]}")


def regs_of(backstep, pid):
    """Per frame {reg: value}, from the text form `backstep pid -r`."""
    r = subprocess.run([backstep, "pid", "-r", str(pid)], capture_output=True, text=True,
                       timeout=60)
    frames = []
    for line in r.stdout.splitlines():
        if line.startswith("#") and not line.endswith("[inlined]"):
            frames.append({})
        elif line.startswith("      ") and frames:
            for name, val in re.findall(r"(\w+)\s+0x([0-9a-f]+)", line):
                frames[-1][name] = int(val, 16)
    return frames


def kernel_core(prog, tmp):
    """A core of PROG parked under the JIT code, written by the kernel
    (SIGSEGV sent to it) where core_pattern puts it, moved into TMP; None,
    said loudly, when core_pattern pipes it away (then this part is not
    run: the other parts still are)."""
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|"):
        print(f"NOTE: core_pattern pipes cores to {pattern.split()[0][1:]}: the kernel's core "
              "case is not run here")
        return None

    def unlimited():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    p = subprocess.Popen([prog, tmp, "block"], stdout=subprocess.PIPE, text=True, cwd=tmp,
                         preexec_fn=unlimited)
    if p.stdout.readline().strip() != "ready":
        p.kill()
        sys.exit("the JIT did not get ready")
    time.sleep(0.2)
    p.send_signal(signal.SIGSEGV)
    p.wait(timeout=60)
    candidates = [f"core.{p.pid}", "core"]
    if pattern.startswith("/") and not re.search(r"%[^pe%]", pattern):
        candidates.insert(0, pattern.replace("%%", "\0").replace("%p", str(p.pid))
                          .replace("%e", os.path.basename(prog)[:15]).replace("\0", "%"))
    for _ in range(50):
        for c in candidates:
            path = c if os.path.isabs(c) else os.path.join(tmp, c)
            if os.path.exists(path):
                moved = os.path.join(tmp, f"core.kernel.{p.pid}")
                shutil.move(path, moved)
                return moved
        time.sleep(0.1)
    check(False, f"the kernel wrote no core ({pattern!r}, looked for {candidates})")
    return None


def main():
    backstep, prog, gdb, tmp = sys.argv[1:5]
    if not shutil.which(gdb):
        sys.exit(f"gdb not found ({gdb}): it writes the core (gcore)")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)

    # pid, found through the map.
    p = start(prog, tmp)
    name = f"jit-{p.pid}.dump"
    frames, err = walk(backstep, ["pid", str(p.pid)])
    check_full(frames, "pid", name)
    check("jitdump" not in err, f"pid: no warning about the jitdump ({err.strip()})")

    # Registers: J3 wrote r12 and r13 before calling back (js_J3's frame
    # has those), and restores its caller's from its save slots (js_J2's
    # frame gets main's back); J1 holds the callback's address in rbx and
    # saved its caller's rbx (enter's frame gets that back).
    regs = regs_of(backstep, p.pid)
    cb_start = int(frames[1]["pc"], 16) - int(frames[1]["offset"], 16) - 1
    if check(len(regs) > 6, f"registers read ({len(regs)} frames)"):
        check(regs[2].get("r12") == 0x1234 and regs[2].get("r13") == 0x5678,
              f"js_J3's frame: r12, r13 as J3 set them ({regs[2]})")
        check(regs[3].get("r12") not in (None, 0x1234) and regs[3].get("r13") not in (None, 0x5678),
              f"js_J2's frame: r12, r13 from J3's save slots ({regs[3]})")
        check(regs[4].get("rbx") == cb_start,
              f"js_J1's frame: rbx holds the callback ({regs[4].get('rbx')} vs {cb_start:#x})")
        check(regs[5].get("rbx") not in (None, cb_start),
              f"enter's frame: rbx from J1's save slot ({regs[5].get('rbx')})")
        check(regs[3].get("r12") == regs[6].get("r12"),
              "main's r12 is js_J2's (nothing between saved it elsewhere)")
    # gcore's core of it, written now.
    core = os.path.join(tmp, "core.gcore")
    r = subprocess.run([gdb, "-q", "-batch", "-p", str(p.pid), "-ex", f"gcore {core}"],
                       capture_output=True, text=True, timeout=120)

    # Deleted while mapped: read through /proc/PID/map_files.
    path = os.path.join(tmp, name)
    keep = os.path.join(tmp, "kept.dump")
    shutil.copy(path, keep)
    os.unlink(path)
    frames, err = walk(backstep, ["pid", str(p.pid)])
    check_full(frames, "pid, the jitdump deleted", name)
    shutil.copy(keep, path)
    p.kill()
    p.wait()

    # The core: the jitdump found through its NT_FILE; --jitdump naming a
    # file that is not a jitdump: one line, exit 2.
    if check(os.path.exists(core), f"gcore wrote a core ({r.stderr.strip()[-200:]})"):
        frames, err = walk(backstep, ["core", core, prog])
        check_full(frames, "gcore's core", name)
        r = subprocess.run([backstep, "core", "--jitdump", prog, core, prog],
                           capture_output=True, text=True, timeout=60)
        check(r.returncode == 2 and r.stderr.count("\n") == 1 and prog in r.stderr,
              f"--jitdump of an ELF file: one line, exit 2 ({r.returncode}: {r.stderr!r})")

    # The kernel's core (its NT_FILE lists every file mapping): the jitdump
    # found by itself; gone, the JIT frames are neither named nor unwound.
    core = kernel_core(prog, tmp)
    if core:
        frames, err = walk(backstep, ["core", core, prog])
        pid = int(os.path.basename(core).split(".")[-1]) if "." in os.path.basename(core) else None
        jname = [n for n in os.listdir(tmp) if n.startswith("jit-") and n != name]
        check(len(jname) == 1, f"the crashed JIT's jitdump ({jname})")
        if jname:
            check_full(frames, "kernel's core", jname[0])
            moved = os.path.join(tmp, "elsewhere.dump")
            os.rename(os.path.join(tmp, jname[0]), moved)
            frames, err = walk(backstep, ["core", core, prog], expect_status=None)
            check(not jit_frames(frames) and
                  not any(f.get("how") == "cfi" for f in frames[3:5]),
                  f"kernel's core, the jitdump moved: no JIT name, no CFI ({frames[2:5]})")
            check("jitdump not used: cannot read it" in err,
                  f"kernel's core, the jitdump moved: said so ({err.strip()})")
            frames, err = walk(backstep, ["core", "--jitdump", moved, core, prog])
            check_full(frames, "kernel's core, --jitdump", "elsewhere.dump")

    # No unwinding records: named, not unwound by them.
    p = start(prog, tmp, "nounwind")
    frames, err = walk(backstep, ["pid", str(p.pid)], expect_status=None)
    p.kill()
    p.wait()
    jit = jit_frames(frames)
    check(jit and jit[0]["function"] == "js_J3",
          f"nounwind: js_J3 named ({[f.get('function') for f in frames[:4]]})")
    # js_J3's frame is js_callback's CFI's doing; the two above it would
    # be the jitdump's.
    check(not any(f.get("how") == "cfi" for f in frames[3:5]),
          f"nounwind: no JIT frame by CFI ({[f.get('how') for f in frames[2:5]]})")

    shutil.rmtree(tmp, ignore_errors=True)
    print(f"jitdump: {'ok' if not failures else f'{failures} failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
