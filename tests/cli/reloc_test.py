#!/usr/bin/env python3
"""`backstep dump` of relocatable objects (.o) against readelf.

    reloc_test.py BACKSTEP WORKDIR

In a .o the FDE addresses are filled in by .rela.eh_frame (.rela.debug_frame):
dump applies them as readelf does, so every FDE's range must equal the one
`readelf --debug-dump=frames` prints, for objects compiled here by gcc and
clang for x86-64 and by aarch64-linux-gnu-gcc for AArch64 (R_X86_64_PC32,
R_X86_64_64, R_AARCH64_PREL32, R_AARCH64_ABS64), with .eh_frame and with
.debug_frame, with and without -ffunction-sections. And `dump --pc ADDR`
must find, for an address inside each FDE of an object whose functions
share one .text (distinct offsets), that FDE. A compiler that is missing
fails the test: never a skip.
"""
import os
import re
import shutil
import subprocess
import sys

from checks import check, finish

backstep, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)




SRC = r"""
int g(int);
extern int counter;
int f1(int x) { return g(x) + 1; }
__attribute__((section(".text.other"))) int f2(int x) { return g(x * 3) + 2; }
static int f3(int x) { int a[8]; for (int i = 0; i < 8; i++) a[i] = g(i + x); return a[x & 7]; }
int f4(int x) { return f3(x) + f1(x) + counter; }
int f5(int x, int y) { return x > y ? g(x) : f4(y) * g(y); }
"""

FDE_RE = re.compile(r"^([0-9a-f]{8}) ([0-9a-f]+) (?:[0-9a-f]{8} )?FDE cie=([0-9a-f]{8}) "
                    r"pc=(?:0x)?([0-9a-f]+)\.\.(?:0x)?([0-9a-f]+)", re.M)


def fdes(text):
    """(entry offset, length, cie, lo, hi) of every FDE line, as numbers."""
    return [tuple(int(v, 16) for v in m.groups()) for m in FDE_RE.finditer(text)]


src = os.path.join(work, "reloc.c")
with open(src, "w") as f:
    f.write(SRC)

compilers = [("gcc", "x86-64"), ("clang", "x86-64"), ("aarch64-linux-gnu-gcc", "aarch64")]
variants = [
    ("eh", ["-O2"], ".eh_frame"),
    ("eh-O0", ["-O0"], ".eh_frame"),
    ("eh-sections", ["-O2", "-ffunction-sections"], ".eh_frame"),
    ("debug", ["-O1", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables"],
     ".debug_frame"),
]
for cc, arch in compilers:
    if not check(shutil.which(cc), f"{cc} not installed (scripts/setup.sh installs it)"):
        continue
    for name, flags, section in variants:
        obj = os.path.join(work, f"{cc}-{name}.o")
        c = subprocess.run([cc, "-c", *flags, src, "-o", obj], capture_output=True, text=True)
        if not check(c.returncode == 0, f"{cc} {name}: {c.stderr}"):
            continue
        ours = subprocess.run([backstep, "dump", "--section",
                               "eh" if section == ".eh_frame" else "debug", obj],
                              capture_output=True, text=True, timeout=60)
        theirs = subprocess.run(["readelf", "--debug-dump=frames", obj], capture_output=True,
                                text=True, timeout=60)
        a, b = fdes(ours.stdout), fdes(theirs.stdout)
        what = f"{cc} {name} ({arch}, {section})"
        if not check(ours.returncode == 0 and ours.stderr == "",
                     f"{what}: exit {ours.returncode}, {ours.stderr!r}"):
            continue
        # Unrelocated, a pcrel field reads as its own place (never 0) and an
        # absolute one as 0: one function per section starts each at 0,
        # functions sharing .text must show some start past 0.
        check(len(b) >= 4 and (name == "eh-sections" or any(lo > 0 for _, _, _, lo, _ in b)),
              f"{what}: readelf shows too few FDEs or none past 0: {b}")
        check(a == b, f"{what}: dump's FDEs differ from readelf's:\n  ours   {a}\n  theirs {b}")
        if name == "eh-sections" or a != b:
            continue
        # --pc: the middle of each FDE (distinct ranges in one .text, except
        # f2 in .text.other, which also starts at 0: skip ranges shared).
        for off, _, _, lo, hi in a:
            if hi <= lo or sum(1 for _, _, _, l2, h2 in a if l2 < hi and lo < h2) > 1:
                continue
            pc = (lo + hi) // 2
            p = subprocess.run([backstep, "dump", "--pc", "%x" % pc, obj], capture_output=True,
                               text=True, timeout=60)
            check(p.returncode == 0 and
                  f"FDE at offset 0x{off:x} " in p.stdout and
                  f"pc=0x{lo:x}..0x{hi:x}" in p.stdout,
                  f"{what}: --pc {pc:x}: exit {p.returncode}, {p.stdout[:200]!r} {p.stderr!r}")
        print(f"{what}: {len(a)} FDEs as readelf's")

finish("reloc")
