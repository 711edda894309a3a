#!/usr/bin/env python3
"""Bad input to `backstep dump`: each case must print exactly one line per
problem on stderr naming the file, exit non-zero, and never crash; a corrupt
FDE among good ones must not stop the good ones from being dumped.

    dump_errors.py BACKSTEP SRCDIR
"""
import os
import shutil
import subprocess
import sys
import tempfile

backstep, srcdir = sys.argv[1], sys.argv[2]
failures = 0
checks = 0


def check(cond, what):
    global failures, checks
    checks += 1
    if not cond:
        failures += 1
        print("FAIL:", what)


def run(*args):
    p = subprocess.run([backstep, "dump", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def expect_error(path, needle, *opts, want=2):
    """One line naming PATH; exit 2 (unusable input) or WANT (1: the file
    was read, the answer is a problem of it)."""
    rc, out, err = run(*opts, path)
    lines = err.strip().splitlines()
    check(rc == want, f"{path}: exit status {rc}, want {want}")
    check(len(lines) == 1, f"{path}: {len(lines)} stderr lines, want 1: {err!r}")
    check(lines and lines[0].startswith(f"backstep: {path}: ") and needle in lines[0],
          f"{path}: stderr {err!r} lacks {needle!r}")


def section(path, name):
    """(file offset, size) of section NAME, from readelf."""
    out = subprocess.run(["readelf", "-W", "-S", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 6 and f[1] == name:
            return int(f[4], 16), int(f[5], 16)
    raise SystemExit(f"no {name} in {path}")


tmp = tempfile.mkdtemp()
try:
    good = os.path.join(tmp, "shapes")
    subprocess.run(["gcc", "-nostdlib", "-static", "-Wl,--build-id=none", "-o", good,
                    os.path.join(srcdir, "shapes.S")], check=True)
    data = open(good, "rb").read()

    def variant(name, content):
        p = os.path.join(tmp, name)
        with open(p, "wb") as f:
            f.write(content)
        return p

    expect_error(os.path.join(tmp, "missing"), "No such file or directory")
    expect_error(tmp, "is a directory")
    # A FIFO (and a device) is refused at once, never waited on: dump, and
    # core and report, which read files the same way.
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    expect_error(fifo, "not a regular file")
    expect_error("/dev/null", "not a regular file")
    for cmd in (["core"], ["report"]):
        p = subprocess.run([backstep, *cmd, fifo], capture_output=True, text=True, timeout=10)
        check(p.returncode == 2 and p.stderr == f"backstep: {fifo}: not a regular file\n",
              f"{cmd[0]} FIFO: exit {p.returncode}, {p.stderr!r}")
    # --help: the usage on stdout, exit 0, for every subcommand.
    for cmd in ("dump", "pid", "core", "run", "report", "record", "check"):
        p = subprocess.run([backstep, cmd, "--help"], capture_output=True, text=True, timeout=10)
        check(p.returncode == 0 and p.stdout.startswith(f"usage: backstep {cmd} ") and
              "usage: usage" not in p.stdout, f"{cmd} --help: exit {p.returncode}, {p.stdout!r}")
    expect_error(variant("empty", b""), "not an ELF file")
    expect_error(variant("text", b"#!/bin/sh\necho hello\n"), "not an ELF file")
    for n in (4, 20, 63, 64, 200, len(data) // 2):
        expect_error(variant(f"trunc{n}", data[:n]), "ELF")
    nounwind = os.path.join(tmp, "nounwind.o")
    subprocess.run(["gcc", "-c", "-fno-asynchronous-unwind-tables", "-x", "c", "-", "-o",
                    nounwind], input=b"int f(void) { return 1; }\n", check=True)
    expect_error(nounwind, "no unwind sections", want=1)
    expect_error(good, "no FDE covers 0x10", "--pc", "0x10", want=1)

    off, size = section(good, ".eh_frame")
    # The second CIE (at .eh_frame offset 0x2c) gets version 2: every FDE
    # naming it fails, the first CIE's FDE and the third CIE's FDE survive.
    bad_cie = bytearray(data)
    assert bad_cie[off + 0x2c + 8] == 1
    bad_cie[off + 0x2c + 8] = 2
    p = variant("bad_cie", bytes(bad_cie))
    rc, out, err = run(p)
    check(rc == 1, f"bad CIE: exit {rc}")
    check("CIE at offset 0x2c: unsupported" in err, f"bad CIE not reported: {err!r}")
    check(out.count(" FDE cie=") == 2, "bad CIE: the two good FDEs are still dumped")
    check(err.count("FDE at offset") == 4, f"bad CIE: each of its 4 FDEs reported: {err!r}")

    # One FDE (two_exits, at 0x68) gets an unknown opcode (0x3f) in place of
    # its first instruction: it is reported, the others are dumped in full.
    bad_fde = bytearray(data)
    i = off + 0x68 + 4 + 4 + 4 + 4 + 1  # length, CIE ptr, pc_begin, range, aug len
    assert bad_fde[i] == 0x42, hex(bad_fde[i])  # DW_CFA_advance_loc 2
    bad_fde[i] = 0x3f
    p = variant("bad_fde", bytes(bad_fde))
    rc, out, err = run("--rows", "--json", p)
    check(rc == 1, f"bad FDE: exit {rc}")
    check(err.strip().count("\n") == 0 and "FDE rows at offset 0x68" in err,
          f"bad FDE: one line naming it: {err!r}")
    check(len(out.splitlines()) == 6, f"bad FDE: all 6 FDEs still printed as JSON")

    # A length field running past the section ends the walk with one report.
    bad_len = bytearray(data)
    bad_len[off + 0x8c:off + 0x90] = (0x7fff0000).to_bytes(4, "little")
    p = variant("bad_len", bytes(bad_len))
    rc, out, err = run("--rows", p)
    check(rc == 1 and "entry" in err and "0x8c" in err, f"bad length: {rc} {err!r}")
    check(out.count(" FDE cie=") == 3, "bad length: the 3 FDEs before it are dumped")
finally:
    shutil.rmtree(tmp)

print(f"{checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
