#!/usr/bin/env python3
"""Live processes: backstep against eu-stack and gdb (see README.md here).

    live_test.py pid NAME --backstep B --eu-stack E --gdb G -- PROGRAM [ARGS...]
    live_test.py run CASE --backstep B --eu-stack E --gdb G -- PROGRAM

pid: start PROGRAM (its own process group), wait for "ready" on its stdout
     and for every thread to sit in a system call (/proc/PID/task/*/syscall
     unchanged twice), then
       1. `backstep pid --json PID`: threads are /proc/PID/task, names are
          each thread's comm, frame #0 is /proc's syscall PC, no walk error,
          nothing on stderr; `backstep pid -r PID` (text, registers): the
          same PCs, frame #0's rsp is /proc's SP;
       2. `eu-stack -p PID -n 0`: the same PCs, thread by thread, and names;
       3. `gdb -batch -p PID` with `thread apply all bt` and gdb_frames.py
          (frame types, registers and lines, which bt does not show): the
          same PCs as gdb's real frames; registers, function names, file:line
          and inlined functions agree (and, for frames in PROGRAM's own
          files, the symbol `nm` gives for backstep's module_offset is gdb's
          name);
       4. `gcore` of the process, then `backstep core --json CORE PROGRAM`
          against `eu-stack --core CORE -e PROGRAM -n 0`, and against the
          live walk.
     The process is killed (its whole group) at the end, also on failure.
run: `backstep run` on a program that segfaults (CASE segv), aborts in a
     thread (abort), recovers from SIGSEGV (recover), exits 3 (exit), or
     does not exist (missing).

Every accepted difference is one of the cases README.md documents, and the
log says which ("accepted: ..."). Exit 77 (skipped) when a needed tool is
missing or ptrace is not permitted.
"""
import argparse
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
failures = 0
checks = 0
accepted = []


class Skip(Exception):
    pass


def check(cond, what, detail=None):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)
        if detail:
            print(detail)
    return cond


def accept(rule, what):
    accepted.append(rule)
    print(f"accepted ({rule}): {what}")


def on_term(sig, frame):
    raise SystemExit(f"killed by signal {sig}")


signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGHUP, on_term)


def run(argv, timeout=60, **kw):
    t0 = time.monotonic()
    p = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, **kw)
    if os.environ.get("LIVE_TIMING"):
        print(f"[{time.monotonic() - t0:6.3f} s] {' '.join(argv)[:100]}")
    return p


# ---- The program under inspection -------------------------------------------

class Program:
    """PROGRAM in its own process group; kill() ends the whole group."""

    def __init__(self, argv):
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, start_new_session=True)
        self.pid = self.proc.pid

    def wait_ready(self, timeout=20):
        line = b""
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if ready:
            line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            raise SystemExit(f"program did not get ready: {line!r}, exit {self.proc.poll()}")

    def tids(self):
        return sorted(int(t) for t in os.listdir(f"/proc/{self.pid}/task"))

    def wait_blocked(self, timeout=10):
        """Every thread in a system call, twice the same: {tid: (nr, sp, pc)}."""
        deadline = time.monotonic() + timeout
        prev = None
        while True:
            cur = {}
            for tid in self.tids():
                try:
                    f = open(f"/proc/{self.pid}/task/{tid}/syscall").read().split()
                except OSError:
                    f = ["gone"]
                # "NR ARGS... SP PC" in a system call, "-1 SP PC" blocked
                # elsewhere, "running".
                cur[tid] = (int(f[0]), int(f[-2], 16), int(f[-1], 16)) \
                    if len(f) in (3, 9) else (-2, 0, 0)
            if cur == prev and all(v[0] >= 0 for v in cur.values()):
                return cur
            if time.monotonic() > deadline:
                raise SystemExit(f"threads never all blocked in system calls: {cur}")
            prev = cur
            time.sleep(0.03)

    def names(self):
        out = {}
        for tid in self.tids():
            with open(f"/proc/{self.pid}/task/{tid}/comm") as f:
                out[tid] = f.read().rstrip("\n")
        return out

    def kill(self):
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


# ---- Names ---------------------------------------------------------------------

def strip_args(name):
    """Drop a trailing argument list "(...)" (and cv/ref qualifiers after it)."""
    name = re.sub(r"\s*(const|volatile|&&|&)\s*$", "", name)
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        if name[i] == ")":
            depth += 1
        elif name[i] == "(":
            depth -= 1
            if depth == 0:
                head = name[:i].rstrip()
                return name if head.endswith("operator") or not head else head
    return name


def norm_name(name):
    """The name a frame's function is compared by: no symbol version, no
    argument list, no clone or split-part suffix (README: "Names")."""
    if not name or name in ("-", "??"):
        return None
    name = re.sub(r"@@?[A-Za-z0-9_.]+$", "", name.strip())
    name = re.sub(r" \[clone [^\]]*\]", "", name)
    name = strip_args(name)
    while True:
        n = re.sub(r"\.(cold|part|constprop|isra|lto_priv|localalias)(\.\d+)?$", "", name)
        if n == name:
            return name
        name = n


class Symbols:
    """addr -> names and name -> addrs of a module's function symbols
    (.symtab, .dynsym, and the separate debug file's .symtab), by nm."""

    cache = {}

    @classmethod
    def of(cls, path):
        if path not in cls.cache:
            cls.cache[path] = cls(path)
        return cls.cache[path]

    def __init__(self, path):
        self.by_name = {}
        self.funcs = []  # (start, end, name) of sized function symbols
        self.base = load_base(path)
        files = [path]
        dbg = debug_file(path)
        if dbg:
            files.append(dbg)
        for f in files:
            for flags in (["-S", "-C", "--defined-only"], ["-D", "-S", "-C", "--defined-only"]):
                p = run(["nm", *flags, f])
                for line in p.stdout.splitlines():
                    m = re.match(r"([0-9a-f]+) (?:([0-9a-f]+) )?([tTwWiI]) (.*)$", line)
                    if not m:
                        continue
                    addr = int(m.group(1), 16)
                    name = m.group(4)
                    self.by_name.setdefault(norm_name(name), set()).add(addr)
                    if m.group(2):
                        self.funcs.append((addr, addr + int(m.group(2), 16), name))

    def function_at(self, addr):
        best = None
        for start, end, name in self.funcs:
            if start <= addr < end and (best is None or start > best[0]):
                best = (start, name)
        return best[1] if best else None

    def aliases(self, a, b):
        """A and B (normalized) name symbols at one address."""
        return bool(self.by_name.get(a, set()) & self.by_name.get(b, set()))


def load_base(path):
    """The link-time address of a module's start (its first PT_LOAD, page
    aligned): 0 for PIEs and libraries, 0x400000 for a classic executable.
    backstep's module_offset counts from there."""
    p = run(["readelf", "-lW", path])
    addrs = [int(m.group(1), 16) for m in
             re.finditer(r"^\s*LOAD\s+0x[0-9a-f]+\s+0x([0-9a-f]+)", p.stdout, re.M)]
    return (min(addrs) & ~0xfff) if addrs else 0


def addr2line_at(path, vaddr):
    """binutils' addr2line at VADDR of PATH (its debug file when it has
    one): the physical frame's (file, line), the last of -i's lines."""
    p = run(["addr2line", "-i", "-e", debug_file(path) or path, f"{vaddr:#x}"])
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    m = re.match(r"(.*):(\d+)", lines[-1]) if lines else None
    return (m.group(1), int(m.group(2))) if m else (None, None)


def debug_file(path):
    p = run(["readelf", "-n", path])
    m = re.search(r"Build ID: ([0-9a-f]+)", p.stdout)
    if not m:
        return None
    bid = m.group(1)
    cand = f"/usr/lib/debug/.build-id/{bid[:2]}/{bid[2:]}.debug"
    return cand if os.path.exists(cand) else None


# ---- The three tools ------------------------------------------------------------

class Frame:
    """One frame: from backstep (how, module, offset, function, and the
    functions inlined at its PC, innermost first), eu-stack (function) or
    gdb (kind: gdb's frame type, function, registers)."""

    def __init__(self, pc, how=None, module=None, offset=None, function=None, kind=None,
                 inlined=()):
        self.pc, self.how, self.module, self.offset = pc, how, module, offset
        self.function, self.kind, self.inlined = function, kind, list(inlined)
        self.regs = None
        self.file = self.line = None

    def __repr__(self):
        s = f"{self.pc:#x}"
        if self.how:
            s += f"[{self.how}]"
        if self.kind and self.kind != "NORMAL_FRAME":
            s += f"[{self.kind}]"
        if self.function:
            s += f" {self.function}"
        return s


def json_lines(text):
    """--json's output: one JSON object per line."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def backstep_stacks(backstep, args, what, warnings=()):
    """{tid: (name, [Frame], error)} from `backstep ... --json`; stderr holds
    exactly the WARNINGS expected."""
    p = run([backstep, *args])
    check(p.returncode in (0, 1) and
          p.stderr.splitlines() == [f"backstep: warning: {w}" for w in warnings],
          f"{what}: exit {p.returncode}, stderr {p.stderr.strip()[-2000:]!r}, "
          f"want warnings {list(warnings)}")
    try:
        threads = json_lines(p.stdout)
    except ValueError:
        check(False, f"{what}: not JSON Lines: {p.stdout[:2000]!r}")
        return {}
    out = {}
    for t in threads:
        out[t["tid"]] = (t.get("name"), [json_frame(f) for f in t["frames"]], t.get("error"))
    return out


def json_frame(f):
    """A frame of backstep's JSON: "inlined" is the list of the functions
    inlined at the PC, innermost first, each {"inlined": true, "function",
    "file", "line"}."""
    inl = f.get("inlined") or []
    fr = Frame(int(f["pc"], 16), f.get("how"), f.get("module"),
               int(f["module_offset"], 16) if "module_offset" in f else None,
               f.get("function"), inlined=inl)
    fr.file, fr.line = f.get("file"), f.get("line")
    return fr


def eu_stack_stacks(eu_stack, args):
    """{tid: [Frame]}, stderr lines."""
    p = run([eu_stack, *args, "-n", "0"])
    stacks, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"TID (\d+):", line)
        if m:
            tid = int(m.group(1))
            stacks[tid] = []
            continue
        m = re.match(r"#(\d+)\s+0x([0-9a-f]+)\s*(.*)$", line)
        if m and tid is not None:
            check(int(m.group(1)) == len(stacks[tid]), f"eu-stack frame numbering: {line!r}")
            stacks[tid].append(Frame(int(m.group(2), 16), function=m.group(3).strip() or None))
    if not stacks:
        raise SystemExit(f"eu-stack gave nothing (exit {p.returncode}): {p.stdout!r} {p.stderr!r}")
    return stacks, p.stderr.strip().splitlines()


def gdb_stacks(gdb, pid):
    """{lwp: [Frame]} (every frame gdb shows, with its type and, for real
    frames, registers), {lwp: stop reason}, the libraries gdb could not
    read, and the `thread apply all bt` text, cross-checked line by line."""
    p = run([gdb, "-nx", "-batch", "-p", str(pid),
             "-ex", "set pagination off", "-ex", "set width 0",
             "-ex", "set backtrace past-main on",
             "-ex", "echo @@BT\\n", "-ex", "thread apply all bt", "-ex", "echo @@PY\\n",
             "-ex", f"source {HERE}/gdb_frames.py"], timeout=120)
    out = p.stdout
    if "@@PY" not in out:
        if "ptrace" in (out + p.stderr) and "not permitted" in (out + p.stderr):
            raise Skip("gdb cannot attach (ptrace not permitted)")
        raise SystemExit(f"gdb failed (exit {p.returncode}): {out[-3000:]} {p.stderr[-3000:]}")
    bt_text, py_text = out.split("@@BT\n", 1)[1].split("@@PY\n", 1)
    frames, stops = {}, {}
    for line in py_text.splitlines():
        m = re.match(r"FRAME (\d+) (\d+) (\S+) 0x([0-9a-f]+) (.*)$", line)
        if m:
            lwp = int(m.group(1))
            frames.setdefault(lwp, [])
            check(int(m.group(2)) == len(frames[lwp]), f"gdb_frames.py numbering: {line!r}")
            name = m.group(5)
            frames[lwp].append(Frame(int(m.group(4), 16), kind=m.group(3),
                                     function=None if name == "-" else name))
            continue
        m = re.match(r"REGS (\d+) (\d+) (.*)$", line)
        if m:
            f = frames[int(m.group(1))][int(m.group(2))]
            f.regs = {k: int(v, 16) for k, v in
                      (kv.split("=") for kv in m.group(3).split()) if v != "-"}
            continue
        m = re.match(r"SAL (\d+) (\d+) (\d+) (.*)$", line)
        if m:
            f = frames[int(m.group(1))][int(m.group(2))]
            f.line, f.file = int(m.group(3)), m.group(4)
            continue
        m = re.match(r"STOP (\d+) (.*)$", line)
        if m:
            stops[int(m.group(1))] = m.group(2)
    # The bt text: the same frames (an address where gdb prints one, the same
    # function, "<signal handler called>" for the trampoline).
    bt, lwp = {}, None
    for line in bt_text.splitlines():
        m = re.match(r"Thread \d+ \(.*?LWP (\d+)", line)
        if m:
            lwp = int(m.group(1))
            bt[lwp] = []
            continue
        m = re.match(r"#(\d+)\s+(?:(0x[0-9a-f]+) in )?(.*)$", line)
        if m and lwp is not None:
            rest = m.group(3)
            name = rest.split(" (")[0] if not rest.startswith("<") else rest
            bt[lwp].append((int(m.group(2), 16) if m.group(2) else None, name.strip(), rest))
    check(sorted(bt) == sorted(frames), f"gdb: bt threads {sorted(bt)} vs python {sorted(frames)}")
    for lwp in bt:
        py = frames.get(lwp, [])
        ok = len(bt[lwp]) == len(py)
        for (addr, name, rest), f in zip(bt[lwp], py):
            if f.kind == "SIGTRAMP_FRAME":
                ok &= name == "<signal handler called>" and addr is None
            else:
                # A name with " (" in it (a C++ signature without debug
                # info: "f(int (*)(int))") is cut there: then the line
                # starts with the whole name.
                ok &= addr in (None, f.pc) and (name in (f.function, "??") or
                                                 rest.startswith(f"{f.function} ("))
        check(ok, f"gdb: thread {lwp}: bt text and gdb_frames.py disagree",
              f"   bt: {bt[lwp]}\n   py: {py}")
    unreadable = set(re.findall(r"Could not load shared library symbols for (.*)\.$",
                                out + p.stderr, re.M))
    return frames, stops, unreadable, bt_text


# ---- Comparing ------------------------------------------------------------------

CALLEE_SAVED = ["rip", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15"]


def fmt(frames):
    return " ".join(repr(f) for f in frames)


def compare_pcs(tid, ours, theirs, ref, what):
    a = [f.pc for f in ours]
    b = [f.pc for f in theirs]
    if a != b and ref == "eu-stack":
        # eu-stack-frameless (README.md): in a function with neither CFI nor
        # a frame pointer, interrupted, eu-stack follows the caller's frame
        # record and skips the caller; backstep finds the return address at
        # SP (a [scan] frame, the direct call into the function holding the
        # PC) and keeps it. gdb, compared separately, has that frame too.
        # Accepted only when removing exactly one [scan] frame that is not
        # the first makes the lists equal.
        for i, f in enumerate(ours):
            if i > 0 and f.how == "scan" and a[:i] + a[i + 1:] == b:
                accept("eu-stack-frameless",
                       f"{what}: thread {tid}: eu-stack skips backstep's [scan] frame #{i} "
                       f"(0x{f.pc:x})")
                return True
    return check(a == b, f"{what}: thread {tid}: PCs differ from {ref}",
                 f"   backstep: {fmt(ours)}\n   {ref}: {fmt(theirs)}")


def backstep_regs(backstep, pid):
    """{tid: [{reg: value}]} per frame, from the text form `backstep pid -r`."""
    p = run([backstep, "pid", "-r", str(pid)])
    check(p.returncode == 0 and p.stderr == "",
          f"backstep pid -r: exit {p.returncode}, stderr {p.stderr.strip()[-2000:]!r}")
    out, tid = {}, None
    for line in p.stdout.splitlines():
        m = re.match(r"Thread (\d+) \(", line)
        if m:
            tid = int(m.group(1))
            out[tid] = []
        elif re.match(r"#\d+\s+0x", line) and tid is not None:
            if not line.endswith("[inlined]"):  # an inlined call: no registers of its own
                out[tid].append({"pc": int(line.split()[1], 16)})
        elif line.startswith("      ") and tid is not None and out[tid]:
            for name, val in re.findall(r"(\w+)\s+0x([0-9a-f]+)", line):
                out[tid][-1][name] = int(val, 16)
    return out


class Maps:
    """/proc/PID/maps: which addresses are in a file, which file was deleted."""

    def __init__(self, pid):
        self.ranges = []
        with open(f"/proc/{pid}/maps") as f:
            for line in f:
                parts = line.split(None, 5)
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                self.ranges.append((lo, hi, parts[5].strip() if len(parts) > 5 else ""))

    def path_at(self, addr):
        for lo, hi, path in self.ranges:
            if lo <= addr < hi:
                return path
        return None

    def deleted(self, addr):
        path = self.path_at(addr)
        return bool(path) and path.endswith(" (deleted)")

    def in_file(self, addr):
        path = self.path_at(addr)
        return bool(path) and path.startswith("/")


def read_word(pid, addr):
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(addr)
        return int.from_bytes(f.read(8), "little")


def gdb_real_frames(tid, frames, what):
    """gdb's frames that are on the stack: not the inlined ones (INLINE_FRAME:
    they share the PC of the real frame after them), not the tail-call frames
    gdb reconstructs from DW_TAG_call_site (TAILCALL_FRAME: no stack holds them;
    README "gdb's tail-call frames")."""
    out = []
    for f in frames:
        if f.kind == "TAILCALL_FRAME":
            accept("gdb-tailcall", f"{what}: thread {tid}: gdb's tail-call frame {f!r}")
            continue
        if f.kind == "INLINE_FRAME":
            continue
        check(f.kind in ("NORMAL_FRAME", "SIGTRAMP_FRAME"),
              f"{what}: thread {tid}: gdb frame of type {f.kind}: {f!r}")
        out.append(f)
    return out


def gdb_known_cases(tid, ours, real, pid, maps, unreadable, bregs):
    """The cases README documents where gdb's real frames are not the stack's.
    Returns (backstep's frames, gdb's frames) to compare, and the registers
    to leave out: {frame index: {register: (backstep's value, gdb's value)}}."""
    # gdb could not read a library whose file was deleted after it was
    # loaded ("Could not load shared library symbols for PATH."): it has no
    # CFI for that code and guesses from there on. Compared up to and
    # including the first frame in that library.
    for i, f in enumerate(ours):
        path = maps.path_at(f.pc)
        if maps.deleted(f.pc) and path[:-len(" (deleted)")] in unreadable:
            if len(real) > i and real[i].pc == f.pc:
                accept("gdb-deleted-library",
                       f"thread {tid}: frames after #{i} ({f.pc:#x} in {path}) not compared: "
                       f"gdb {fmt(real[i + 1:])}")
                return ours[:i + 1], real[:i + 1], {}
            break
    # A frame in code outside every file (JIT): with no function to analyse,
    # gdb assumes a frameless function and takes the word at that frame's SP
    # for the return address. Here that word is the saved frame pointer: gdb
    # shows it as one extra frame, then (the real return address is the next
    # word) continues in step -- without restoring rbp from that save -- or,
    # when the saved rbp is itself a stack address, goes astray.
    for i, f in enumerate(ours[:-1]):
        if maps.in_file(f.pc) or i + 2 > len(real) or real[i].pc != f.pc or i >= len(bregs):
            continue
        sp, fp = bregs[i].get("rsp"), bregs[i].get("rbp")
        if sp is None or fp is None or real[i + 1].pc == ours[i + 1].pc:
            continue
        word = read_word(pid, sp)
        if real[i + 1].pc != word or real[i + 1].function is not None:
            continue
        accept("gdb-frameless-guess",
               f"thread {tid}: after #{i} ({f.pc:#x}, no file) gdb shows the word at its "
               f"SP {sp:#x}, {word:#x}, as a frame")
        if [g.pc for g in real[i + 2:]] != [o.pc for o in ours[i + 1:]]:
            # The saved word was not a code address gdb could step over
            # (here: a stack address, when the caller keeps a frame pointer):
            # gdb's walk goes on from the wrong frame.
            accept("gdb-frameless-guess",
                   f"thread {tid}: gdb's frames after that not compared: {fmt(real[i + 2:])}")
            return ours[:i + 1], real[:i + 1], {}
        saved = read_word(pid, fp)
        exempt = {}
        for j in range(i + 1, min(len(ours), len(bregs))):
            g = real[j + 1]
            if g.regs and g.regs.get("rbp") == fp and bregs[j].get("rbp") == saved:
                exempt[j] = {"rbp": (saved, fp)}
        return ours, real[:i + 1] + real[i + 2:], exempt
    return ours, real, {}


def compare_regs(tid, ours, bregs, real, what, exempt):
    """Registers of each real frame: every register backstep recovered is
    the value gdb gives; the callee-saved ones (and rip, rsp) gdb has,
    backstep has too. Returns the number of registers compared."""
    n = 0
    for i, (a, b, g) in enumerate(zip(ours, bregs, real)):
        if g.regs is None or b.get("pc") != a.pc:
            continue
        bad = []
        for r, v in b.items():
            if r in ("pc", "rflags"):
                continue
            if exempt.get(i, {}).get(r) == (v, g.regs.get(r)):
                accept("gdb-frameless-guess", f"thread {tid} frame #{i}: {r} backstep {v:#x} "
                       f"(restored from the frame record), gdb {g.regs.get(r):#x} (not restored)")
                continue
            n += 1
            if g.regs.get(r) != v:
                bad.append(f"{r}: backstep {v:#x}, gdb "
                           f"{'<not saved>' if r not in g.regs else hex(g.regs[r])}")
        for r in CALLEE_SAVED:
            if r in g.regs and r not in b:
                bad.append(f"{r}: backstep has none, gdb {g.regs[r]:#x}")
        check(not bad, f"{what}: thread {tid} frame #{i} ({a.pc:#x}): registers differ from "
              f"gdb's", "   " + "\n   ".join(bad))
    return n


def same_name(ours, theirs, module, ref):
    a, b = norm_name(ours), norm_name(theirs)
    if a is None or b is None or a == b:
        return True
    # An alias: both names are symbols at one address of the module
    # (README "Names": DWARF's name vs the symbol table's).
    if module and os.path.exists(module) and Symbols.of(module).aliases(a, b):
        accept("alias", f"{ref}: {theirs!r} and backstep's {ours!r} name one address")
        return True
    return False


def compare_names(tid, ours, theirs, ref, what):
    """Per physical frame, backstep's "function" (when it has one) against
    REF's name; returns how many names were compared."""
    n = 0
    for i, (a, b) in enumerate(zip(ours, theirs)):
        if a.pc != b.pc or not b.function:
            continue
        if not check(a.function, f"{what}: thread {tid} frame #{i} ({a.pc:#x}): backstep has no "
                     f"name, {ref} says {b.function!r}"):
            continue
        n += 1
        check(same_name(a.function, b.function, a.module, f"{what}: thread {tid} #{i}"),
              f"{what}: thread {tid} frame #{i} ({a.pc:#x}): backstep {a.function!r}, "
              f"{ref} {b.function!r}")
    return n


def compare_offsets_with_gdb(tid, ours, gdb_frames, local_modules, what):
    """For frames in the test's own files: the function nm gives for
    backstep's module_offset (at the lookup PC) is gdb's."""
    n = 0
    for i, (a, g) in enumerate(zip(ours, gdb_frames)):
        if a.module not in local_modules or a.offset is None or not g.function:
            continue
        if g.kind == "SIGTRAMP_FRAME" or a.pc != g.pc:
            continue
        lookup = a.offset if i == 0 or a.how == "signal" else a.offset - 1
        syms = Symbols.of(a.module)
        sym = syms.function_at(lookup + syms.base)
        n += 1
        check(norm_name(sym) == norm_name(g.function),
              f"{what}: thread {tid} frame #{i}: module_offset {a.offset:#x} is in "
              f"{sym!r} (nm), gdb says {g.function!r}")
    return n


def compare_inlined(tid, ours, gdb_frames, what):
    """The functions inlined at each PC (backstep's "inlined", gdb's
    INLINE_FRAMEs before the real frame at that PC), compared where
    backstep's frame has a name: returns how many inlined frames matched."""
    groups, cur = [], []
    for g in gdb_frames:
        if g.kind == "TAILCALL_FRAME":
            continue
        if g.kind == "INLINE_FRAME":
            cur.append(g)
            continue
        groups.append((g, cur))
        cur = []
    n = 0
    for i, (a, (g, inl)) in enumerate(zip(ours, groups)):
        if a.pc != g.pc or not a.function:
            continue
        mine = [norm_name(x.get("function")) for x in a.inlined]
        theirs = [norm_name(x.function) for x in inl]
        n += len(theirs)
        if not check(mine == theirs, f"{what}: thread {tid} frame #{i} ({a.pc:#x}): inlined "
                     f"functions {mine}, gdb {theirs}"):
            continue
        for x, y in zip(a.inlined, inl):
            check(same_line(x.get("file"), x.get("line"), y.file, y.line),
                  f"{what}: thread {tid} frame #{i} ({a.pc:#x}) inlined {x.get('function')}: "
                  f"backstep {x.get('file')}:{x.get('line')}, gdb {y.file}:{y.line}")
    return n


def same_line(file_a, line_a, file_b, line_b):
    """Source positions agree: the same line in files of the same name (gdb
    prints DWARF's name as given, backstep joins it to the directory)."""
    if not line_a and not line_b:
        return True
    if not line_a or not line_b:
        return False
    return line_a == line_b and os.path.basename(file_a or "") == os.path.basename(file_b or "")


def compare_lines(tid, ours, real, what):
    """file:line of each real frame where backstep names a function."""
    n = 0
    for i, (a, g) in enumerate(zip(ours, real)):
        if a.pc != g.pc or g.kind == "SIGTRAMP_FRAME" or not a.function:
            continue
        if not g.function and not g.file:
            continue  # gdb knows nothing of this code (gdb-deleted-library)
        n += 1
        if same_line(a.file, a.line, g.file, g.line):
            continue
        if a.module and a.offset is not None and i > 0 and a.how != "signal":
            vaddr = a.offset - 1 + load_base(a.module)
            f2l = addr2line_at(a.module, vaddr)
            if same_line(a.file, a.line, *f2l):
                accept("gdb-line-rows", f"{what}: thread {tid} frame #{i} ({a.pc:#x} "
                       f"{a.function}): backstep {a.file}:{a.line} as addr2line, "
                       f"gdb {g.file}:{g.line}")
                continue
        check(False, f"{what}: thread {tid} frame #{i} ({a.pc:#x} {a.function}): backstep "
              f"{a.file}:{a.line}, gdb {g.file}:{g.line}")
    return n


def check_signal_frames(tid, ours, gdb_real, what):
    """gdb's "<signal handler called>" (SIGTRAMP_FRAME) is backstep's frame
    at the same PC, and the frame after it is tagged "signal"."""
    for i, g in enumerate(gdb_real):
        if g.kind == "SIGTRAMP_FRAME" and i + 1 < len(ours):
            check(ours[i + 1].how == "signal",
                  f"{what}: thread {tid}: frame #{i + 1} after the trampoline is "
                  f"[{ours[i + 1].how}], want [signal]")


# ---- pid -------------------------------------------------------------------------

def case_pid(args, name, tmp):
    for tool, path in (("eu-stack", args.eu_stack), ("gdb", args.gdb)):
        if not path:
            raise Skip(f"{tool} not installed")
    gcore = shutil.which("gcore")
    cmd = list(args.cmd)
    exe = cmd[0]
    deleted = None
    if args.delete_lib:
        # Load a copy of the library and delete it once loaded: the process
        # maps a file that is gone ("(deleted)" in /proc/PID/maps).
        deleted = os.path.join(tmp, os.path.basename(cmd[1]))
        shutil.copy(cmd[1], deleted)
        cmd[1] = deleted
    local_modules = {os.path.realpath(p) for p in cmd if os.path.isfile(p)}
    prog = Program(cmd)
    try:
        prog.wait_ready()
        if deleted:
            os.unlink(deleted)
            local_modules = {p for p in local_modules if p != os.path.realpath(deleted)}
        sysc = prog.wait_blocked()
        comm = prog.names()
        pid = prog.pid
        maps = Maps(pid)

        live = backstep_stacks(args.backstep, ["pid", "--json", str(pid)], "backstep pid")
        check(sorted(live) == sorted(sysc),
              f"threads: backstep {sorted(live)}, /proc {sorted(sysc)}")
        nframes = 0
        for tid, (tname, frames, err) in sorted(live.items()):
            nframes += len(frames)
            check(err is None, f"backstep pid: thread {tid}: walk ended with {err!r}",
                  f"   {fmt(frames)}")
            check(tname == comm.get(tid), f"thread {tid}: name {tname!r}, comm {comm.get(tid)!r}")
            if tid in sysc and frames:
                check(frames[0].pc == sysc[tid][2],
                      f"thread {tid}: frame #0 {frames[0].pc:#x}, /proc syscall PC {sysc[tid][2]:#x}")
                check(frames[0].how == "initial", f"thread {tid}: frame #0 is [{frames[0].how}]")
            check(len(frames) > 1, f"thread {tid}: one frame only: {fmt(frames)}")
        print(f"{name}: backstep pid: {len(live)} threads, {nframes} frames")

        # -n (no symbols): the same frames and modules, no names or lines.
        bare = backstep_stacks(args.backstep, ["pid", "-n", "--json", str(pid)], "backstep pid -n")
        for tid in sorted(live):
            theirs = bare.get(tid, (None, [], None))[1]
            check([(f.pc, f.how, f.module) for f in theirs] ==
                  [(f.pc, f.how, f.module) for f in live[tid][1]],
                  f"thread {tid}: `backstep pid -n` and `pid` walk differently")
            check(not any(f.function or f.file for f in theirs),
                  f"thread {tid}: `backstep pid -n` names frames")

        # The text form with registers: the same frames.
        bregs = backstep_regs(args.backstep, pid)
        for tid in sorted(live):
            check([r["pc"] for r in bregs.get(tid, [])] == [f.pc for f in live[tid][1]],
                  f"thread {tid}: `backstep pid -r` and `--json` differ")
            if sysc.get(tid) and bregs.get(tid):
                check(bregs[tid][0].get("rsp") == sysc[tid][1],
                      f"thread {tid}: frame #0 rsp {bregs[tid][0].get('rsp')}, /proc {sysc[tid][1]:#x}")

        eu, eu_err = eu_stack_stacks(args.eu_stack, ["-p", str(pid)])
        check(sorted(eu) == sorted(live), f"threads: backstep {sorted(live)}, eu-stack {sorted(eu)}")
        n = names = 0
        for tid in sorted(eu):
            ours = live.get(tid, (None, [], None))[1]
            n += len(eu[tid])
            if not compare_pcs(tid, ours, eu[tid], "eu-stack", "live") and eu_err:
                print("   eu-stack stderr:", *eu_err, sep="\n      ")
            names += compare_names(tid, ours, eu[tid], "eu-stack", "live")
        print(f"{name}: eu-stack -p: {len(eu)} threads, {n} frames compared, {names} names")

        gframes, gstops, unreadable, bt_text = gdb_stacks(args.gdb, pid)
        check(sorted(gframes) == sorted(live),
              f"threads: backstep {sorted(live)}, gdb {sorted(gframes)}")
        n = names = offs = nregs = ninl = nlines = 0
        for tid in sorted(gframes):
            ours_all = live.get(tid, (None, [], None))[1]
            real = gdb_real_frames(tid, gframes[tid], "live")
            ours, real, exempt = gdb_known_cases(tid, ours_all, real, pid, maps,
                                                 unreadable, bregs.get(tid, []))
            n += len(real)
            if not compare_pcs(tid, ours, real, "gdb", "live"):
                print(f"   gdb stopped: {gstops.get(tid)}")
            check_signal_frames(tid, ours, real, "live")
            names += compare_names(tid, ours, real, "gdb", "live")
            offs += compare_offsets_with_gdb(tid, ours, real, local_modules, "live")
            nregs += compare_regs(tid, ours, bregs.get(tid, []), real, "live", exempt)
            ninl += compare_inlined(tid, ours_all, gframes[tid], "live")
            nlines += compare_lines(tid, ours, real, "live")
        print(f"{name}: gdb: {len(gframes)} threads, {n} frames compared, {nregs} registers, "
              f"{names} names, {nlines} lines, {ninl} inlined, "
              f"{offs} module offsets named by nm against gdb's names")

        if not gcore:
            print("gcore not installed: core comparison skipped")
            return
        prefix = os.path.join(tmp, "core")
        g = run([gcore, "-o", prefix, str(pid)], timeout=120)
        core = f"{prefix}.{pid}"
        if not check(g.returncode == 0 and os.path.exists(core),
                     f"gcore failed: {g.stdout[-1000:]} {g.stderr[-1000:]}"):
            return

        # Last, as it kills the process: killed while being walked (the CLI's
        # test hook sends SIGKILL right after the attach), one line says so.
        p = run([args.backstep, "pid", str(pid)],
                env=dict(os.environ, BACKSTEP_TEST_KILL_AFTER_ATTACH="1"))
        check(p.returncode == 1 and p.stderr.splitlines()[-1:] ==
              [f"backstep: {pid}: the process exited while it was being walked"] and
              p.stdout.startswith("Thread "),
              f"killed during the walk: exit {p.returncode}, stderr {p.stderr[-500:]!r}")
    finally:
        prog.kill()

    # A deleted library cannot be opened from a core's NT_FILE path: its
    # unwind tables are read from its image in the core (gcore keeps it).
    warn = [f"{deleted} (deleted): file not found; using its image in memory"] if deleted else []
    cstacks = backstep_stacks(args.backstep, ["core", "--json", core, exe], "backstep core", warn)
    ceu, ceu_err = eu_stack_stacks(args.eu_stack, ["--core", core, "-e", exe])
    check(sorted(cstacks) == sorted(ceu),
          f"core threads: backstep {sorted(cstacks)}, eu-stack {sorted(ceu)}")
    check(sorted(cstacks) == sorted(live),
          f"core threads: backstep core {sorted(cstacks)}, backstep pid {sorted(live)}")
    n = 0
    for tid in sorted(ceu):
        _, frames, err = cstacks.get(tid, (None, [], None))
        ours = frames
        check(err is None, f"backstep core: thread {tid}: walk ended with {err!r}",
              f"   {fmt(ours)}")
        n += len(ceu[tid])
        if not compare_pcs(tid, ours, ceu[tid], "eu-stack", "core") and ceu_err:
            print("   eu-stack stderr:", *ceu_err, sep="\n      ")
        compare_names(tid, ours, ceu[tid], "eu-stack", "core")
        live_frames = live.get(tid, (None, [], None))[1]
        compare_pcs(tid, ours, live_frames, "backstep pid", "core")
    print(f"{name}: core: {len(ceu)} threads, {n} frames compared with eu-stack --core")


# ---- run -------------------------------------------------------------------------

def run_backstep_run(args, argv, timeout=60):
    """`backstep run ARGV` in its own process group (killed afterwards, with
    the program it started)."""
    p = subprocess.Popen([args.backstep, "run", *argv], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def frames_in(frames, exe):
    """The functions FRAMES pass through, innermost first: for frames in EXE
    the nm symbol at backstep's module_offset (lookup address), which must be
    backstep's "function" when it gives one; elsewhere backstep's name."""
    syms = Symbols.of(exe)
    out = []
    for i, f in enumerate(frames):
        if f.module and os.path.realpath(f.module) == os.path.realpath(exe) and f.offset is not None:
            lookup = f.offset if i == 0 or f.how == "signal" else f.offset - 1
            name = norm_name(syms.function_at(lookup))
            if f.function:
                check(norm_name(f.function) == name,
                      f"frame #{i} ({f.pc:#x}): backstep says {f.function!r}, nm {name!r}")
            out.append(name)
        elif f.function:
            out.append(norm_name(f.function))
        else:
            out.append(None)
    return out


def fatal_line(err, sig, signame):
    m = re.match(rf"backstep: (\d+): {signame} \(signal {sig}\) in thread (\d+); stacks:$",
                 err.strip())
    check(m is not None and len(err.strip().splitlines()) == 1,
          f"stderr: want one line 'backstep: PID: {signame} (signal {sig}) in thread TID; "
          f"stacks:', got {err!r}")
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def parse_run_json(out):
    try:
        threads = json_lines(out)
    except ValueError:
        check(False, f"stdout is not JSON Lines: {out[:2000]!r}")
        return []
    res = []
    for t in threads:
        frames = [json_frame(f) for f in t["frames"]]
        res.append((t["tid"], t["name"], frames, t.get("error")))
    return res


def case_run(args, case, tmp):
    exe = args.cmd[0]
    if case == "segv":
        rc, out, err = run_backstep_run(args, ["--json", "--", exe])
        check(rc == 128 + 11, f"exit {rc}, want 139")
        pid, culprit = fatal_line(err, 11, "Segmentation fault")
        threads = parse_run_json(out)
        check(len(threads) == 2, f"{len(threads)} threads printed, want 2")
        check(culprit == pid and threads and threads[0][0] == pid,
              f"the culprit {culprit} is the main thread {pid}, printed first")
        # The crash context, with the thread that received it (alone).
        sig = [t.get("signal") for t in json_lines(out)]
        check(sig and sig[0] and sig[0].get("name") == "SIGSEGV" and
              sig[0].get("code_name") == "SEGV_MAPERR" and sig[0].get("address") == "0x0" and
              not any(sig[1:]), f"the signal: {sig}")
        for tid, tname, frames, error in threads:
            check(error is None, f"thread {tid}: walk ended with {error!r}: {fmt(frames)}")
            names = frames_in(frames, exe)
            if tid == culprit:
                check(names[:4] == ["crash_here", "crash2", "crash1", "main"],
                      f"faulting thread: {names[:4]}, want crash_here crash2 crash1 main",
                      f"   {fmt(frames)}")
                check(frames and frames[0].how == "initial", "frame #0 is the initial frame")
            else:
                check(tname == "idle" and names[1:3] == ["idle2", "idle1"],
                      f"idle thread {tname!r}: {names}")
        # The text form: the same threads, one header each.
        rc, out, err = run_backstep_run(args, ["--", exe])
        heads = re.findall(r"^Thread (\d+) \((.*)\)(?: received .*)?:$", out, re.M)
        fatal_line(err, 11, "Segmentation fault")
        check(rc == 139 and len(heads) == 2 and re.search(r"^#0 .* in crash_here\+", out, re.M),
              f"text form: exit {rc}, threads {heads}, frame #0 not crash_here: {out[:600]!r}")
        check(re.match(r"Thread \d+ \(.*\) received SIGSEGV \(Segmentation fault, signal 11\): "
                       r"SEGV_MAPERR, address not mapped to object, at 0x0:\n", out),
              f"text form: the first thread's header names the signal: {out[:300]!r}")
    elif case == "abort":
        rc, out, err = run_backstep_run(args, ["--json", "--", exe])
        check(rc == 128 + 6, f"exit {rc}, want 134")
        pid, culprit = fatal_line(err, 6, "Aborted")
        threads = parse_run_json(out)
        check(len(threads) == 3, f"{len(threads)} threads printed, want 3")
        by_tid = {t[0]: t for t in threads}
        check(culprit in by_tid and culprit != pid and by_tid[culprit][1] == "aborter",
              f"culprit {culprit} is the thread named aborter, not the main thread {pid}")
        docs = json_lines(out)
        sig = docs[0].get("signal") if docs else None
        check(threads and threads[0][0] == culprit and sig and sig.get("name") == "SIGABRT" and
              sig.get("abort") is True and sig.get("code_name") == "SI_TKILL" and
              "address" not in sig and not any(d.get("signal") for d in docs[1:]),
              f"the aborting thread first, with the signal: {sig}")
        check(sorted(t[1] for t in threads) ==
              sorted(["idle", "aborter", os.path.basename(exe)[:15]]),
              f"thread names {[t[1] for t in threads]}")
        for tid, tname, frames, error in threads:
            check(error is None, f"thread {tid}: walk ended with {error!r}: {fmt(frames)}")
            names = frames_in(frames, exe)
            if tid == culprit:
                i = names.index("abort_inner") if "abort_inner" in names else -1
                check(i > 0 and names[i + 1:i + 2] == ["abort_outer"],
                      f"aborting thread passes abort_inner, abort_outer: {names}",
                      f"   {fmt(frames)}")
                libc = [f for f in frames[:i] if f.module and "libc" in f.module]
                check(len(libc) == i, f"frames above abort_inner are in libc: {fmt(frames[:i])}")
            elif tid == pid:
                check("main" in names, f"main thread passes main: {names}")
    elif case == "recover":
        rc, out, err = run_backstep_run(args, ["--", exe])
        check(rc == 0 and out == "" and err == "",
              f"recovered SIGSEGV: exit {rc}, stdout {out!r}, stderr {err!r}")
    elif case == "exit":
        for status in (3, 0, 255):
            rc, out, err = run_backstep_run(args, ["--", exe, str(status)])
            check(rc == status and out == "" and err == "",
                  f"exit {status}: backstep exit {rc}, stdout {out!r}, stderr {err!r}")
        # Options before "--" do not change it.
        rc, out, err = run_backstep_run(args, ["--json", "--", exe, "3"])
        check(rc == 3 and out == "" and err == "", f"--json exit 3: {rc}, {out!r}, {err!r}")
    elif case == "missing":
        missing = os.path.join(tmp, "no-such-program")
        rc, out, err = run_backstep_run(args, ["--", missing])
        check(rc == 127 and out == "" and
              err.splitlines() == [f"backstep: {missing}: cannot run: No such file or directory"],
              f"missing program: exit {rc}, stdout {out!r}, stderr {err!r}")
    else:
        raise SystemExit(f"unknown run case {case}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["pid", "run"])
    ap.add_argument("name")
    ap.add_argument("--backstep", required=True)
    ap.add_argument("--eu-stack", default="")
    ap.add_argument("--gdb", default="")
    ap.add_argument("--delete-lib", action="store_true",
                    help="pid: run with a copy of the library (the 2nd argument), "
                    "deleted once the program is ready")
    argv = sys.argv[1:]
    if "--" not in argv or argv.index("--") == len(argv) - 1:
        ap.error("no program (after --)")
    cut = argv.index("--")
    args = ap.parse_args(argv[:cut])
    args.cmd = argv[cut + 1:]
    tmp = tempfile.mkdtemp(prefix="bk-live-")
    try:
        (case_pid if args.mode == "pid" else case_run)(args, args.name, tmp)
    except Skip as e:
        print(f"SKIP: {e}")
        sys.exit(SKIP)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rules = sorted(set(accepted))
    print(f"{args.mode} {args.name}: {checks} checks, {failures} failed"
          + (f"; accepted differences: {', '.join(rules)}" if rules else ""))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
