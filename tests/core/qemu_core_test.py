#!/usr/bin/env python3
"""AArch64 cores as qemu-user writes them, read by `backstep core` on this
x86-64 host (see README.md here).

qemu_core_test.py CASE BACKSTEP CC QEMU EU_STACK SOURCE

CC is an AArch64 compiler (aarch64-linux-gnu-gcc), QEMU qemu-aarch64,
SOURCE tests/core/qemu_core.c. The programs are built and their cores made
at test time in a temporary directory: qemu names a core
qemu_PROG_DATE_PID.core in the working directory, whatever the host's
core_pattern. Such a core holds NT_PRSTATUS, NT_PRPSINFO and NT_AUXV only:
no NT_FILE and no read-only pages, so backstep finds the modules through
the dynamic linker's list in the core's memory.

Cases:
  walk     -O2, -O0 and PAC-signed (-mbranch-protection=standard, run
           under -cpu max) programs, two threads each: every thread's PCs
           equal eu-stack --core's, names equal where eu-stack has one, the
           expected call chains, the crash context first. eu-stack 0.188
           does not strip pointer authentication codes: for the PAC build
           it is compared up to its first signed PC (accepted, logged).
  sysroot  a library found only under --sysroot (the program's rpath
           names /opt/bksr, which exists under the sysroot alone): with
           --sysroot the walk goes through it to _start, without it the
           library's frame is not named.
  bad      the core truncated at many points, its byte order flipped, its
           registers zeroed, and a PAC mask note (NT_ARM_PAC_MASK) added:
           clean errors or walks, never a crash; a too narrow mask changes
           the walk, the right one does not.
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import tempfile

failures = 0


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)
    return cond


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def unlimited_core():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


class Env:
    def __init__(self, backstep, cc, qemu, eu_stack, source, tmp):
        self.backstep, self.cc, self.qemu, self.eu_stack = backstep, cc, qemu, eu_stack
        self.source, self.tmp = source, tmp
        self.sysroot = os.path.join(tmp, "sysroot")
        self.libdir = os.path.join(self.sysroot, "opt/bksr")
        os.makedirs(self.libdir)
        self.cc_run(["-O2", "-g", "-fPIC", "-shared", "-DQEMU_CORE_LIB", source,
                     "-o", os.path.join(self.libdir, "libsr.so")])

    def cc_run(self, args):
        p = run([self.cc, *args])
        if p.returncode:
            raise SystemExit(f"{self.cc} {' '.join(args)}: {p.stderr}")

    def build(self, name, flags):
        exe = os.path.join(self.tmp, name)
        self.cc_run([*flags, "-g", "-pthread", self.source, "-L" + self.libdir, "-lsr",
                     "-Wl,-rpath,/opt/bksr", "-o", exe])
        return exe

    def core_of(self, exe, args=(), cpu=None):
        """Run EXE under qemu until it dies; the core qemu wrote."""
        name = os.path.basename(exe)
        for f in os.listdir(self.tmp):
            if f.startswith(f"qemu_{name}_") and f.endswith(".core"):
                os.unlink(os.path.join(self.tmp, f))
        cmd = [self.qemu, *(["-cpu", cpu] if cpu else []), "-L", self.sysroot, exe, *args]
        p = subprocess.run(cmd, cwd=self.tmp, preexec_fn=unlimited_core, capture_output=True,
                           timeout=60)
        check(p.returncode == -11 or p.returncode == 139,
              f"{name}: qemu's exit {p.returncode}, want SIGSEGV")
        cores = [f for f in os.listdir(self.tmp)
                 if f.startswith(f"qemu_{name}_") and f.endswith(".core")]
        if not check(len(cores) == 1, f"{name}: qemu wrote {cores}"):
            raise SystemExit(1)
        return os.path.join(self.tmp, cores[0])

    def backstep_core(self, core, exe, sysroot=True, extra=()):
        cmd = [self.backstep, "core", "--json", *extra]
        if sysroot:
            cmd += ["--sysroot", self.sysroot]
        p = run(cmd + [core, exe])
        threads = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
        return p, threads

    def eu(self, core, exe):
        """{tid: [(pc, name)]} from eu-stack --core."""
        p = run([self.eu_stack, "--core", core, "-e", exe, "-n", "0"])
        out, tid = {}, None
        for line in p.stdout.splitlines():
            if line.startswith("TID "):
                tid = int(line.split()[1].rstrip(":"))
                out[tid] = []
            elif line.startswith("#") and tid is not None:
                parts = line.split()
                out[tid].append((int(parts[1], 16), parts[2] if len(parts) > 2 else None))
        return out


def names(thread):
    return [f.get("function") for f in thread["frames"]]


def pc(frame):
    return int(frame["pc"], 16)


def case_walk(env):
    builds = [("qc_o2", ["-O2"], None), ("qc_o0", ["-O0"], None),
              ("qc_pac", ["-O2", "-mbranch-protection=standard"], "max")]
    for name, flags, cpu in builds:
        exe = env.build(name, flags)
        core = env.core_of(exe, cpu=cpu)
        p, threads = env.backstep_core(core, exe)
        check(p.returncode == 0 and p.stderr == "",
              f"{name}: backstep core exit {p.returncode}, stderr {p.stderr!r}")
        if not check(len(threads) == 2, f"{name}: {len(threads)} threads, want 2"):
            continue
        main, worker = threads
        # The crash context first (qemu's core has no NT_SIGINFO: the
        # signal from pr_cursig, no si_code).
        sig = main.get("signal") or {}
        check(sig.get("number") == 11 and "code" not in sig,
              f"{name}: the first thread's signal {sig}, want SIGSEGV without a code")
        mn, wn = names(main), names(worker)
        check(mn[:3] == ["crash_here", "crash2", "main"] and mn[-1] == "_start",
              f"{name}: main thread {mn}")
        check(wn[:2] == ["spin", "worker"], f"{name}: worker {wn}")
        for t in threads:
            check(all(pc(f) < 1 << 48 for f in t["frames"]),
                  f"{name}: a PC with bits above 47 in thread {t['tid']}")
            check("error" not in t, f"{name}: thread {t['tid']} ends on {t.get('error')}")
        eu = env.eu(core, exe)
        check(sorted(eu) == sorted(t["tid"] for t in threads),
              f"{name}: eu-stack's threads {sorted(eu)}")
        for t in threads:
            theirs = eu.get(t["tid"], [])
            ours = [pc(f) for f in t["frames"]]
            if cpu == "max":
                # eu-stack 0.188 keeps the PAC bits of a signed return
                # address and goes wrong from there: compare before it.
                cut = next((i for i, (a, _) in enumerate(theirs) if a >> 48), len(theirs))
                if cut < len(theirs):
                    print(f"accepted (eu-stack-pac): {name}: thread {t['tid']}: eu-stack's "
                          f"#{cut} {theirs[cut][0]:#x} keeps its PAC bits; backstep "
                          f"{ours[cut]:#x}" if cut < len(ours) else "")
                    check(cut < len(ours) and ours[cut] == theirs[cut][0] & ((1 << 48) - 1),
                          f"{name}: thread {t['tid']} #{cut}: stripped, eu-stack's PC is not ours")
                theirs = theirs[:cut]
                ours = ours[:cut]
            check(ours == [a for a, _ in theirs],
                  f"{name}: thread {t['tid']}: PCs {[hex(x) for x in ours]}, eu-stack "
                  f"{[hex(a) for a, _ in theirs]}")
            for f, (a, n) in zip(t["frames"], theirs):
                if n and f.get("function") != n:
                    check(False, f"{name}: thread {t['tid']} {a:#x}: backstep "
                          f"{f.get('function')!r}, eu-stack {n!r}")
        print(f"{name}: 2 threads, {sum(len(t['frames']) for t in threads)} frames, "
              f"eu-stack agrees")


def case_sysroot(env):
    exe = env.build("qc_lib", ["-O2"])
    core = env.core_of(exe, ["lib"])
    p, threads = env.backstep_core(core, exe)
    mn = names(threads[0]) if threads else []
    check(p.returncode == 0 and mn[:3] == ["crash_here", "sr_call", "main"] and
          mn[-1] == "_start", f"--sysroot: exit {p.returncode}, main thread {mn}")
    mods = {f.get("module") for f in threads[0]["frames"]} if threads else set()
    check(os.path.join(env.libdir, "libsr.so") in mods, f"--sysroot: modules {mods}")
    p, threads = env.backstep_core(core, exe, sysroot=False)
    mn = names(threads[0]) if threads else []
    check(threads and "sr_call" not in mn,
          f"without --sysroot the library is not found, yet: {mn}")
    print(f"sysroot: through libsr.so with --sysroot ({len(threads[0]['frames'])} frames "
          f"without)")


def phdrs(data):
    phoff, = struct.unpack_from("<Q", data, 32)
    phnum, = struct.unpack_from("<H", data, 56)
    return [(phoff + 56 * i, struct.unpack_from("<IIQQQQQQ", data, phoff + 56 * i))
            for i in range(phnum)]


def with_pac_mask(data, mask):
    """The core with an NT_ARM_PAC_MASK note (owner LINUX, {data_mask,
    insn_mask}) appended, in a PT_NOTE that replaces a PT_LOAD with no file
    bytes (qemu writes those for code it does not dump)."""
    out = bytearray(data)
    for at, (ptype, flags, off, vaddr, paddr, filesz, memsz, align) in phdrs(data):
        if ptype == 1 and filesz == 0:
            break
    else:
        return None
    note = struct.pack("<III", 6, 16, 0x406) + b"LINUX\0\0\0" + struct.pack("<QQ", mask, mask)
    pos = len(out)
    out += note
    struct.pack_into("<IIQQQQQQ", out, at, 4, 0, pos, 0, 0, len(note), 0, 4)
    return bytes(out)


def case_bad(env):
    exe = env.build("qc_pac", ["-O2", "-mbranch-protection=standard"])
    core = env.core_of(exe, cpu="max")
    data = open(core, "rb").read()
    ref_p, ref = env.backstep_core(core, exe)
    ref_pcs = [[f["pc"] for f in t["frames"]] for t in ref]
    path = os.path.join(env.tmp, "bad.core")

    def try_core(blob, what, extra=()):
        with open(path, "wb") as f:
            f.write(blob)
        p, threads = env.backstep_core(path, exe, extra=extra)
        check(p.returncode in (0, 1, 2), f"{what}: exit {p.returncode} (a crash?)")
        check("Sanitizer" not in p.stderr and "Assertion" not in p.stderr,
              f"{what}: {p.stderr[:300]}")
        check(p.returncode == 0 or p.stderr.strip() or any("error" in t for t in threads),
              f"{what}: failed without a word")
        return p, threads

    # Cut anywhere: headers, notes, the dumped memory.
    note_off = next(off for _, (t, _, off, *_r) in phdrs(data) if t == 4)
    cuts = sorted({0, 10, 63, 64, 200, note_off, note_off + 20, note_off + 300, note_off + 800}
                  | {len(data) * k // 40 for k in range(1, 40)})
    errors = walked = 0
    for cut in cuts:
        p, threads = try_core(data[:cut], f"cut at {cut}")
        errors += p.returncode != 0 and not threads
        walked += bool(threads)
    print(f"truncated: {len(cuts)} cut points, {errors} refused with an error, {walked} walked")
    check(errors > 0 and walked > 0, "truncation: both refusals and partial walks expected")

    # A big-endian core (the header's byte order and its e_type and
    # e_machine with it): refused.
    flipped = bytearray(data)
    flipped[5] = 2
    for off in (16, 18):
        flipped[off], flipped[off + 1] = flipped[off + 1], flipped[off]
    p, threads = try_core(bytes(flipped), "big-endian")
    check(p.returncode != 0 and not threads and "unsupported core file" in p.stderr,
          f"big-endian: exit {p.returncode}, {p.stderr!r}")

    # Registers zeroed (pr_reg of every NT_PRSTATUS): walks end cleanly.
    zeroed = bytearray(data)
    at = note_off
    end = note_off + next(fs for _, (t, _, off, _v, _p, fs, *_r) in phdrs(data) if t == 4)
    while at + 12 <= end:
        namesz, descsz, ntype = struct.unpack_from("<III", zeroed, at)
        desc = at + 12 + ((namesz + 3) & ~3)
        if ntype == 1 and descsz >= 112 + 34 * 8:
            zeroed[desc + 112:desc + 112 + 34 * 8] = bytes(34 * 8)
        at = desc + ((descsz + 3) & ~3)
    p, threads = try_core(bytes(zeroed), "zeroed registers")
    check(len(threads) == 2, f"zeroed registers: {len(threads)} threads")

    # NT_ARM_PAC_MASK: the mask qemu's addresses use (bits 48-54) strips as
    # the default does; one of bits 52-54 only leaves bits 48-51 of the
    # signed return addresses: the walk cannot go on as before.
    right = with_pac_mask(data, 0x007f000000000000)
    narrow = with_pac_mask(data, 0x0070000000000000)
    if check(right is not None, "no PT_LOAD to turn into a PT_NOTE"):
        p, threads = try_core(right, "PAC mask 0x007f000000000000")
        check([[f["pc"] for f in t["frames"]] for t in threads] == ref_pcs,
              "the right PAC mask changes the walk")
        p, threads = try_core(narrow, "PAC mask 0x0070000000000000")
        check([[f["pc"] for f in t["frames"]] for t in threads] != ref_pcs,
              "a narrow PAC mask from NT_ARM_PAC_MASK is not used")
        print("NT_ARM_PAC_MASK: read (a narrow mask changes the walk, the right one does not)")


def main():
    case, backstep, cc, qemu, eu_stack, source = sys.argv[1:7]
    for tool in (cc, qemu, eu_stack):
        if not shutil.which(tool):
            raise SystemExit(f"{tool} is missing (scripts/setup.sh installs it)")
    with tempfile.TemporaryDirectory(prefix="bk_qcore_") as tmp:
        env = Env(backstep, cc, qemu, eu_stack, source, tmp)
        {"walk": case_walk, "sysroot": case_sysroot, "bad": case_bad}[case](env)
    print(f"qemu core {case}: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
