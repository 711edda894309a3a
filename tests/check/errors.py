#!/usr/bin/env python3
"""Bad input to `backstep check`, and directory mode.

A named input that cannot be checked (missing, not ELF, truncated, a FIFO)
gives exactly one stderr line "backstep: PATH: ..." and exit status 2. In a
directory, non-ELF files are skipped silently and counted, links to
directories are not followed, a file reached twice is checked once, and an
ELF file that cannot be read gives one stderr line and exit status 2.

    errors.py BACKSTEP SRCDIR
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from tally import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]


def run(*args):
    p = subprocess.run([backstep, "check", *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def expect_bad(path, needle):
    rc, out, err = run(path)
    lines = err.splitlines()
    check(rc == 2, f"{path}: exit status {rc}, want 2")
    check(len(lines) == 1, f"{path}: {len(lines)} stderr lines, want 1: {err!r}")
    check(lines and lines[0].startswith(f"backstep: {path}: ") and needle in lines[0],
          f"{path}: stderr {err!r} lacks {needle!r}")
    check(out == "", f"{path}: stdout {out!r}")


def total(out):
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    t = [r for r in rows if r["type"] == "total"]
    return t[0] if t else {}


tmp = tempfile.mkdtemp()
try:
    good = os.path.join(tmp, "good.so")
    subprocess.run(["gcc", "-nostdlib", "-shared", "-Wl,--build-id=none", "-o", good,
                    os.path.join(srcdir, "hdr.S")], check=True, capture_output=True)
    data = open(good, "rb").read()

    def write(path, content):
        with open(path, "wb") as f:
            f.write(content)
        return path

    rc, out, err = run(good)
    check(rc == 0 and err == "" and out.startswith(f"{good}: summary: 8 FDEs"),
          f"good: {rc} {out!r} {err!r}")

    expect_bad(os.path.join(tmp, "missing"), "No such file or directory")
    expect_bad(write(os.path.join(tmp, "text"), b"#!/bin/sh\necho hi\n"), "not an ELF file")
    expect_bad(write(os.path.join(tmp, "empty"), b""), "not an ELF file")
    for n in (4, 20, 64, 200, len(data) // 2):
        expect_bad(write(os.path.join(tmp, f"trunc{n}"), data[:n]), "ELF")
    fifo = os.path.join(tmp, "fifo")
    os.mkfifo(fifo)
    expect_bad(fifo, "not a regular file")
    os.unlink(fifo)

    rc, out, err = run()
    check(rc == 2 and len(err.splitlines()) == 1 and err.startswith("backstep: check: "),
          f"no operand: {rc} {err!r}")
    rc, out, err = run("--bogus", good)
    check(rc == 2, f"bad option: exit status {rc}")

    # A directory of mixed files.
    d = os.path.join(tmp, "tree")
    sub = os.path.join(d, "sub")
    os.makedirs(sub)
    shutil.copy(good, os.path.join(d, "a.so"))
    shutil.copy(good, os.path.join(sub, "b.so"))
    write(os.path.join(d, "notes.txt"), b"not an ELF file\n")
    write(os.path.join(sub, "empty"), b"")
    os.symlink("a.so", os.path.join(d, "link-to-a.so"))      # checked once
    os.symlink("sub", os.path.join(d, "link-to-sub"))        # not followed
    os.symlink("nowhere", os.path.join(d, "dangling"))       # ignored
    os.mkfifo(os.path.join(d, "fifo"))                        # never opened
    rc, out, err = run("--json", d)
    t = total(out)
    check(rc == 0 and err == "", f"tree: exit status {rc}, stderr {err!r}")
    check(t.get("elf_files") == 2 and t.get("non_elf") == 2 and t.get("duplicates") == 1 and
          t.get("special") == 1 and t.get("fdes_eh_frame") == 8,
          f"tree: totals {t}")
    rc, out, err = run(d)
    check("ELF files checked     2 " in out and "2 non-ELF" in out and
          "1 links to directories" in out, f"tree: text totals {out!r}")

    # An ELF file without unwind tables is counted and listed.
    nounwind = os.path.join(d, "nounwind.so")
    subprocess.run(["gcc", "-shared", "-nostdlib", "-fno-asynchronous-unwind-tables", "-o",
                    nounwind, "-x", "c", "-"], input=b"int f(void) { return 1; }\n",
                   check=True)
    rc, out, err = run(d)
    check(rc == 0 and "no unwind tables      1 file\n" in out and f"  {nounwind}\n" in out,
          f"tree: no-tables listing {out!r}")
    check(f"{nounwind}: warning: no-unwind-tables: " in out, "tree: no-tables warning line")

    # A truncated ELF file inside: one line naming it, exit status 2, the
    # rest still checked.
    bad = write(os.path.join(sub, "trunc.so"), data[:200])
    rc, out, err = run("--json", d)
    lines = err.splitlines()
    check(rc == 2, f"tree+trunc: exit status {rc}, want 2")
    check(len(lines) == 1 and lines[0].startswith(f"backstep: {bad}: "),
          f"tree+trunc: stderr {err!r}")
    check(total(out).get("elf_files") == 3 and total(out).get("unreadable") == 1,
          f"tree+trunc: totals {total(out)}")
finally:
    shutil.rmtree(tmp)

finish()
