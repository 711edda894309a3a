#!/usr/bin/env python3
"""`backstep core` on cores made here and now.

    core_test.py CASE BACKSTEP CORE_TARGET LIBCOREFIX LIBCOREFIX_V2 GCORE EU_STACK

CASE:
  gcore      gcore of core_target (4 threads parked in nested calls through
             libcorefix): `backstep core --json CORE EXE` gives, per thread,
             exactly the PCs `eu-stack --core CORE -e EXE` gives; no warnings.
  kernel     the same for the kernel's core of core_target crashing (abort
             with RLIMIT_CORE raised; the core is looked for in the cwd, or
             where a core_pattern that is a path with %p/%e puts it; skipped
             when none appears, i.e. core_pattern pipes to a program); then with the
             library rebuilt: the kernel kept only its header page, so
             "...: build-id differs from the core's; not used" and callers
             of its frames come from frame pointers.
  truncated  the gcore core, laid out notes-first as the kernel writes them,
             and the gcore layout itself, cut at many lengths: a cut in the
             headers or notes is one line "backstep: CORE: truncated core
             file" and exit 1; a cut in memory prints every thread, each
             stack ending normally or with an error; never a crash.
  errors     a missing file, a directory, an empty file, a text file, an ELF
             file that is not a core, a missing EXE: one line each, exit 1.
  build-id   libcorefix rebuilt (the V2 build) after the core was made: the
             warning "...: build-id differs from the core's; not used", and the
             walk still gives eu-stack's PCs (frame pointers through the
             library: gcore left its read-only pages, the unwind tables, out of
             the core, so its image cannot stand in); the library deleted:
             "...: file not found", same PCs.

Exit 77 (skipped) when gcore or eu-stack is missing.
"""
import json
import os
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

case, backstep, target, lib, lib_v2, gcore, eu_stack = sys.argv[1:8]
SKIP = 77
failures = 0
checks = 0
NTHREADS = 4  # core_target: the main thread and three others


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def finish():
    print(f"{case}: {checks} checks, {failures} failed")
    sys.exit(1 if failures else 0)


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def run_backstep(*args, timeout=120):
    p = subprocess.run([backstep, "core", *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def not_crashed(rc, err, what):
    """Exit status from the program itself, and no sanitizer report."""
    return check(rc in (0, 1) and "Sanitizer" not in err and "runtime error" not in err,
                 f"{what}: exit {rc}, stderr {err[-2000:]!r}")


# ---- Making cores ---------------------------------------------------------

def start_target(libpath, *extra, cwd=None):
    p = subprocess.Popen([target, libpath, *extra], stdout=subprocess.PIPE, cwd=cwd)
    ready, _, _ = select.select([p.stdout], [], [], 30)
    line = p.stdout.readline() if ready else b""
    if line.strip() != b"ready":
        p.kill()
        p.wait()
        raise SystemExit(f"core_target did not get ready: {line!r}")
    time.sleep(0.1)  # let the last thread reach pause()
    return p


def gcore_of(libpath, tmp):
    """gcore of core_target running with LIBPATH: the core's path."""
    if not gcore or not eu_stack:
        skip("gcore or eu-stack not installed")
    p = start_target(libpath)
    try:
        prefix = os.path.join(tmp, "core")
        g = subprocess.run([gcore, "-o", prefix, str(p.pid)], capture_output=True,
                           text=True, timeout=120)
        path = f"{prefix}.{p.pid}"
        if g.returncode != 0 or not os.path.exists(path):
            skip(f"gcore failed (ptrace not permitted?): {g.stderr.strip()[-300:]}")
        return path
    finally:
        p.kill()
        p.wait()


def kernel_core_of(libpath, tmp):
    """The kernel's core of core_target aborting, or None."""
    def unlimited():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,
                                                  resource.RLIM_INFINITY))
    proc = subprocess.Popen([target, libpath, "crash"], cwd=tmp, preexec_fn=unlimited,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rc = proc.wait(timeout=60)
    if rc != -signal.SIGABRT:
        raise SystemExit(f"core_target crash: exit {rc}")
    for name in sorted(os.listdir(tmp)):
        if name == "core" or name.startswith("core."):
            return os.path.join(tmp, name)
    # A core_pattern naming a file elsewhere (not a pipe): the kernel's
    # %p (pid), %e (comm), %% expanded; other specifiers are not guessed.
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("/") and not re.search(r"%[^pe%]", pattern):
        path = (pattern.replace("%%", "\0").replace("%p", str(proc.pid))
                .replace("%e", "core_target").replace("\0", "%"))
        for _ in range(50):  # the kernel may still be writing it
            if os.path.exists(path):
                moved = os.path.join(tmp, "core.kernel")
                shutil.move(path, moved)
                return moved
            time.sleep(0.1)
    return None


# ---- Reading stacks --------------------------------------------------------

def json_lines(text):
    """--json's output: one JSON object per line."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def backstep_pcs(core, exe, expect_warnings=()):
    """{tid: [pc, ...]} from backstep core --json; checks stderr holds exactly
    the expected warning lines."""
    rc, out, err = run_backstep("--json", core, exe)
    not_crashed(rc, err, f"backstep core {core}")
    check(err.splitlines() == [f"backstep: warning: {w}" for w in expect_warnings],
          f"stderr {err!r}, want warnings {list(expect_warnings)!r}")
    try:
        threads = json_lines(out)
    except ValueError:
        check(False, f"backstep core --json: not JSON Lines: {out[:2000]!r}")
        return {}, []
    return {t["tid"]: [int(f["pc"], 16) for f in t["frames"]] for t in threads}, threads


def eu_stack_pcs(core, exe):
    p = subprocess.run([eu_stack, "--core", core, "-e", exe], capture_output=True,
                       text=True, timeout=120)
    stacks, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            stacks[tid] = []
            continue
        m = re.match(r"#(\d+)\s+0x([0-9a-f]+)", line)
        if m and tid is not None:
            stacks[tid].append(int(m.group(2), 16))
    if not stacks:
        raise SystemExit(f"eu-stack gave nothing: {p.stdout!r} {p.stderr!r}")
    return stacks


def compare(ours, theirs, what, ref="eu-stack"):
    check(sorted(ours) == sorted(theirs),
          f"{what}: threads {sorted(ours)} vs {ref} {sorted(theirs)}")
    nframes = 0
    for tid in sorted(theirs):
        a, b = ours.get(tid, []), theirs[tid]
        nframes += len(b)
        if not check(a == b, f"{what}: thread {tid} differs from {ref}"):
            print("   backstep:", " ".join(hex(x) for x in a))
            print(f"   {ref}:", " ".join(hex(x) for x in b))
    print(f"{what}: {len(theirs)} threads, {nframes} frames compared with {ref}")


def through_lib(threads, name):
    """Every thread has a frame in module NAME."""
    for t in threads:
        mods = [os.path.basename(f.get("module", "")) for f in t["frames"]]
        check(name in mods, f"thread {t['tid']}: no frame in {name}: {mods}")


# ---- Cutting cores ---------------------------------------------------------

def layout(data):
    """(end of program headers, [(off, size) of PT_NOTE], [(off, filesz) of PT_LOAD])."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phnum, = struct.unpack_from("<H", data, 0x38)
    notes, loads = [], []
    for i in range(phnum):
        typ, _, off, _, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i)
        if typ == 4:
            notes.append((off, filesz))
        elif typ == 1 and filesz:
            loads.append((off, filesz))
    return phoff + 56 * phnum, notes, loads


def notes_first(data):
    """The same core laid out as the kernel writes one: headers, notes, then
    the memory (gcore writes the notes last). Section headers dropped."""
    phoff, = struct.unpack_from("<Q", data, 0x20)
    phnum, = struct.unpack_from("<H", data, 0x38)
    ph = [list(struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i)) for i in range(phnum)]
    out = bytearray(data[:64])
    struct.pack_into("<QQ", out, 0x20, 64, 0)  # e_phoff, e_shoff
    struct.pack_into("<HH", out, 0x3c, 0, 0)   # e_shnum, e_shstrndx
    pos = 64 + 56 * phnum
    body = bytearray()
    for kind in (4, 1):  # PT_NOTE, then PT_LOAD
        for p in ph:
            if p[0] != kind:
                continue
            chunk = data[p[2]:p[2] + p[5]]
            p[2] = pos + len(body)
            body += chunk
            body += b"\0" * (-len(body) % 8)
    for p in ph:
        out += struct.pack("<IIQQQQQQ", *p)
    return bytes(out + body)


def cut(data, n, tmp, name="cut"):
    path = os.path.join(tmp, name)
    with open(path, "wb") as f:
        f.write(data[:n])
    return path


def expect_truncated(path, n, exe):
    rc, out, err = run_backstep(path, exe)
    lines = err.splitlines()
    check(rc == 2 and lines == [f"backstep: {path}: truncated core file"] and out == "",
          f"cut at {n}: exit {rc}, stderr {err!r}, stdout {out[:200]!r}")


def expect_stacks(path, n, exe, all_fail=False):
    rc, out, err = run_backstep(path, exe)
    not_crashed(rc, err, f"cut at {n}")
    # A cut inside the memory (the program headers promise more than the
    # file holds) is said once, and is the core's problem: exit 1.
    data = open(path, "rb").read()
    memory_cut = any(off + size > len(data) for off, size in layout(data)[2])
    said = [l for l in err.splitlines() if l.startswith(
        f"backstep: warning: {path}: truncated core file: it ends at byte {len(data)},")]
    if memory_cut:
        check(rc == 1 and len(said) == 1, f"cut at {n}: exit {rc}, truncation said "
              f"{len(said)} times: {err[-600:]!r}")
    else:
        check(not said, f"cut at {n}: memory whole, yet said to be cut: {err!r}")
    heads = re.findall(r"^Thread \d+ ", out, re.M)
    check(len(heads) == NTHREADS, f"cut at {n}: {len(heads)} threads printed: {out[:500]!r}")
    ended = re.findall(r"^    \(walk ended: ", out, re.M)
    if all_fail:
        check(len(ended) == NTHREADS and rc == 1,
              f"cut at {n} (no memory): every walk must end on an error: {out!r}")
    check(all(l.startswith("backstep: warning: ") for l in err.splitlines()),
          f"cut at {n}: unexpected stderr {err!r}")
    rc, out, err = run_backstep("--json", path, exe)
    not_crashed(rc, err, f"cut at {n} --json")
    try:
        check(len(json_lines(out)) == NTHREADS, f"cut at {n}: JSON thread count")
    except ValueError:
        check(False, f"cut at {n}: --json output is not JSON: {out[:300]!r}")


def truncation(core, tmp):
    data = open(core, "rb").read()
    kernel_like = notes_first(data)
    hdr_end, notes, loads = layout(kernel_like)
    notes_end = max(o + s for o, s in notes)
    # The rewritten core reads as the original does.
    full = cut(kernel_like, len(kernel_like), tmp, "notes-first")
    compare(backstep_pcs(full, target)[0], backstep_pcs(core, target)[0], "notes-first layout",
            "the gcore layout")

    # Headers and notes: every cut is "truncated core file".
    points = {10, 16, 40, 63, 64, hdr_end - 1, hdr_end}
    step = max(1, (notes_end - hdr_end) // 150)
    points.update(range(hdr_end, notes_end, step))
    points.add(notes_end - 1)
    for n in sorted(points):
        expect_truncated(cut(kernel_like, n, tmp), n, target)
    print(f"headers and notes: {len(points)} cuts")

    # Memory: the stacks print; with none of it left every walk fails.
    expect_stacks(cut(kernel_like, notes_end, tmp), notes_end, target, all_fail=True)
    mem = {notes_end + 1, len(kernel_like) - 1}
    mem.update(notes_end + (len(kernel_like) - notes_end) * k // 40 for k in range(1, 40))
    for off, size in loads:  # the middle of every dumped segment
        mem.add(off + size // 2)
    for n in sorted(mem):
        expect_stacks(cut(kernel_like, n, tmp), n, target)
    print(f"memory: {len(mem) + 1} cuts")

    # gcore's own layout keeps the notes after the memory: a cut there loses
    # them. (Past them are only section headers, which a core does not need.)
    _, notes, _ = layout(data)
    notes_end = max(o + s for o, s in notes)
    for n in (64, len(data) // 2, notes[0][0] + 100, notes_end - 1):
        expect_truncated(cut(data, n, tmp), n, target)
    if notes_end < len(data):
        expect_stacks(cut(data, notes_end, tmp), notes_end, target)


# ---- Cases -------------------------------------------------------------------

def case_gcore(tmp):
    libcopy = os.path.join(tmp, "libcorefix.so")
    shutil.copy(lib, libcopy)
    core = gcore_of(libcopy, tmp)
    ours, threads = backstep_pcs(core, target)
    check(len(ours) == NTHREADS, f"{len(ours)} threads, want {NTHREADS}")
    through_lib(threads, "libcorefix.so")
    compare(ours, eu_stack_pcs(core, target), "gcore")
    # Without EXE the core's own path names the executable: the same walk.
    rc, out, err = run_backstep("--json", core)
    check(rc == 0 and err == "" and
          {t["tid"]: [int(f["pc"], 16) for f in t["frames"]] for t in json_lines(out)} == ours,
          f"without EXE: exit {rc}, stderr {err!r}")
    # The text form: one header per thread, one line per frame.
    rc, out, err = run_backstep("-r", core, target)
    check(rc == 0 and len(re.findall(r"^Thread \d+ \(core_target\):$", out, re.M)) == NTHREADS and
          "rip" in out, f"text output: exit {rc}: {out[:500]!r}")


def case_kernel(tmp):
    if not eu_stack:
        skip("eu-stack not installed")
    libcopy = os.path.join(tmp, "libcorefix.so")
    shutil.copy(lib, libcopy)
    core = kernel_core_of(libcopy, tmp)
    if not core:
        pattern = open("/proc/sys/kernel/core_pattern").read().strip()
        skip(f"no core file written (core_pattern {pattern!r})")
    ours, threads = backstep_pcs(core, target)
    check(len(ours) == NTHREADS, f"{len(ours)} threads, want {NTHREADS}")
    through_lib(threads, "libcorefix.so")
    compare(ours, eu_stack_pcs(core, target), "kernel core")
    # NT_SIGINFO: the abort, with the thread that took it, printed first.
    sigs = [t.get("signal") for t in threads]
    check(sigs and sigs[0] and sigs[0].get("name") == "SIGABRT" and
          sigs[0].get("abort") is True and sigs[0].get("code_name") == "SI_TKILL" and
          not any(sigs[1:]), f"kernel core: the signal, its thread first: {sigs}")
    rc, out, _ = run_backstep(core, target)
    check(rc == 0 and re.match(r"Thread \d+ \(.*\) received SIGABRT \(Aborted, signal 6\): "
                               r"an abort \(SI_TKILL, sent by tkill or tgkill\):\n", out),
          f"kernel core, text: {out[:200]!r}")
    # The kernel keeps only the ELF header page of a file mapping: with the
    # library replaced, its image cannot stand in (no tables read from
    # zeros); the walk goes on with frame pointers where it can.
    os.unlink(libcopy)
    shutil.copy(lib_v2, libcopy)
    _, threads = backstep_pcs(
        core, target, [f"{libcopy}: build-id differs from the core's; not used"])
    hows = {t["frames"][i]["how"] for t in threads for i in range(1, len(t["frames"]))
            if os.path.basename(t["frames"][i - 1].get("module", "")) == "libcorefix.so"}
    check(hows <= {"fp"}, f"kernel core: callers of frames in the replaced library: {hows}")
    data = open(core, "rb").read()  # notes first already
    hdr_end, notes, _ = layout(data)
    notes_end = max(o + s for o, s in notes)
    expect_truncated(cut(data, (hdr_end + notes_end) // 2, tmp), "mid-notes", target)
    expect_stacks(cut(data, notes_end, tmp), "end of notes", target, all_fail=True)
    expect_stacks(cut(data, (notes_end + len(data)) // 2, tmp), "mid-memory", target)


def case_truncated(tmp):
    libcopy = os.path.join(tmp, "libcorefix.so")
    shutil.copy(lib, libcopy)
    truncation(gcore_of(libcopy, tmp), tmp)


def case_errors(tmp):
    def expect_error(path, needle, *extra, name=None):
        rc, out, err = run_backstep(path, *extra)
        lines = err.splitlines()
        check(rc == 2 and len(lines) == 1 and out == "" and
              lines[0] == f"backstep: {name or path}: {needle}",
              f"{path}: exit {rc}, stderr {err!r}, want 'backstep: {name or path}: {needle}'")

    expect_error(os.path.join(tmp, "missing"), "No such file or directory")
    expect_error(tmp, "is a directory")
    empty = os.path.join(tmp, "empty")
    open(empty, "wb").close()
    expect_error(empty, "not an ELF file")
    text = os.path.join(tmp, "text")
    with open(text, "w") as f:
        f.write("not a core\n")
    expect_error(text, "not an ELF file")
    expect_error(target, "not a core file")
    expect_error(lib, "not a core file")
    # A core of another machine is not "not a core".
    other = bytearray(open(target, "rb").read(64))
    struct.pack_into("<HH", other, 16, 4, 243)  # ET_CORE, EM_RISCV
    p = os.path.join(tmp, "riscv-core")
    open(p, "wb").write(other)
    expect_error(p, "unsupported core file (only x86-64 and AArch64 little-endian ELF64 cores)")
    # EXE is checked before the core is read.
    missing_exe = os.path.join(tmp, "no-such-exe")
    expect_error(target, "No such file or directory", missing_exe, name=missing_exe)
    rc, _, err = run_backstep()
    check(rc == 2 and "usage" in err, f"no argument: exit {rc}, {err!r}")


def case_build_id(tmp):
    libdir = os.path.join(tmp, "lib")
    os.mkdir(libdir)
    libcopy = os.path.join(libdir, "libcorefix.so")
    shutil.copy(lib, libcopy)
    core = gcore_of(libcopy, tmp)
    theirs = eu_stack_pcs(core, target)  # with the library the core was made with

    # gcore leaves out the library's read-only pages (it could read them
    # from the file): its image cannot stand in for the file.
    os.unlink(libcopy)  # a new file, not the mapped one rewritten
    shutil.copy(lib_v2, libcopy)
    ours, threads = backstep_pcs(
        core, target, [f"{libcopy}: build-id differs from the core's; not used"])
    through_lib(threads, "libcorefix.so")
    # A frame's "how" is how it was recovered from its callee: the callers of
    # frames in the replaced library come from frame pointers, never its CFI.
    hows = {t["frames"][i]["how"] for t in threads for i in range(1, len(t["frames"]))
            if os.path.basename(t["frames"][i - 1].get("module", "")) == "libcorefix.so"}
    check(hows == {"fp"}, f"callers of frames in the replaced library: {hows}, want fp")
    # Nor are its frames named from the new file: its symbols are another
    # build's.
    named = [f.get("function") for t in threads for f in t["frames"]
             if os.path.basename(f.get("module", "")) == "libcorefix.so"]
    check(named and not any(named),
          f"frames in the replaced library named from the new file: {named}")
    compare(ours, theirs, "build-id differs")

    os.unlink(libcopy)
    ours, _ = backstep_pcs(core, target, [f"{libcopy}: file not found"])
    compare(ours, theirs, "library deleted")

    # The text form prints the warning first, then the stacks.
    rc, out, err = run_backstep(core, target)
    check(rc == 0 and err == f"backstep: warning: {libcopy}: file not found\n" and
          out.startswith("Thread "), f"text: exit {rc}, stderr {err!r}")


cases = {"gcore": case_gcore, "kernel": case_kernel, "truncated": case_truncated,
         "errors": case_errors, "build-id": case_build_id}
tmp = tempfile.mkdtemp(prefix="bk-core-")
try:
    cases[case](tmp)
finally:
    shutil.rmtree(tmp, ignore_errors=True)
finish()
