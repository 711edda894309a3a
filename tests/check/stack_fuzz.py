#!/usr/bin/env python3
"""`backstep check --stack` on damaged files: never a crash or a hang.

    stack_fuzz.py BACKSTEP SRCDIR [ROUNDS]

Four programs (stack.S and stack_tables.S static, the latter's jump tables
and computed jumps in .rodata and .text; stack_plt.S as a shared object; a
small C++ program with landing pads, g++ -O2), and for AArch64 stack_a64.S and
the C++ program by aarch64-linux-gnu-g++ (required: scripts/setup.sh
installs it), are damaged ROUNDS times each (default 150, a fixed seed):
1 to 8 bytes overwritten (on AArch64, in .text, half the time a whole
instruction word) in .text, .eh_frame,
.eh_frame_hdr, .gcc_except_table, .rodata (jump tables) or anywhere. Each
run must end by itself within its timeout with exit status 0 or 1 (the
file reads, the analysis says what it found) or 2 with exactly one line on
stderr (the file does not read), never by a signal.
"""
import os
import random
import shutil
import subprocess
import sys
import tempfile
from tally import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]
rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 150


def sections(path):
    """{name: (file offset, size)} of the sections with contents."""
    out = subprocess.run(["readelf", "-W", "-S", path], capture_output=True, text=True).stdout
    secs = {}
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 6 and f[0].startswith("[") and f[1].startswith(".") and f[2] != "NOBITS":
            secs[f[1]] = (int(f[4], 16), int(f[5], 16))
    return secs


CXX = b"""
#include <stdexcept>
#include <cstdio>
static int __attribute__((noinline)) thrower(int n) {
    if (n > 3) throw std::runtime_error("big");
    switch (n) { case 0: return 7; case 1: return 9; case 2: return 11; case 3: return 13; }
    return n;
}
int main(int argc, char **) {
    int s = 0;
    for (int i = 0; i < argc + 5; i++) {
        try { s += thrower(i); } catch (const std::exception &e) { s -= 1; std::puts(e.what()); }
    }
    return s & 1;
}
"""

tmp = tempfile.mkdtemp()
try:
    progs = []
    exe = os.path.join(tmp, "stack")
    subprocess.run(["gcc", "-nostdlib", "-static", "-o", exe, os.path.join(srcdir, "stack.S")],
                   check=True, capture_output=True)
    progs.append(exe)
    tables = os.path.join(tmp, "stack_tables")
    subprocess.run(["gcc", "-nostdlib", "-static", "-o", tables,
                    os.path.join(srcdir, "stack_tables.S")], check=True, capture_output=True)
    progs.append(tables)
    so = os.path.join(tmp, "plt.so")
    subprocess.run(["gcc", "-nostdlib", "-shared", "-o", so, os.path.join(srcdir, "stack_plt.S")],
                   check=True, capture_output=True)
    progs.append(so)
    if shutil.which("g++"):
        cxx = os.path.join(tmp, "cxx")
        subprocess.run(["g++", "-O2", "-o", cxx, "-x", "c++", "-"], input=CXX, check=True,
                       capture_output=True)
        progs.append(cxx)
    a64 = set()
    if not shutil.which("aarch64-linux-gnu-gcc") or not shutil.which("aarch64-linux-gnu-g++"):
        check(False, "aarch64-linux-gnu-gcc/g++ not found (scripts/setup.sh installs them)")
    else:
        exe = os.path.join(tmp, "stack_a64")
        subprocess.run(["aarch64-linux-gnu-gcc", "-nostdlib", "-static", "-o", exe,
                        os.path.join(srcdir, "stack_a64.S")], check=True, capture_output=True)
        cxx = os.path.join(tmp, "cxx_a64")
        subprocess.run(["aarch64-linux-gnu-g++", "-O2", "-mbranch-protection=standard", "-o", cxx,
                        "-x", "c++", "-"], input=CXX, check=True, capture_output=True)
        progs += [exe, cxx]
        a64 |= {exe, cxx}
    rng = random.Random(0x5eed)
    wanted = [".text", ".eh_frame", ".eh_frame_hdr", ".gcc_except_table", ".rodata", ".plt",
              ".text.unlikely"]
    outcomes = {0: 0, 1: 0, 2: 0}
    for prog in progs:
        data = open(prog, "rb").read()
        secs = sections(prog)
        targets = [secs[n] for n in wanted if n in secs and secs[n][1] > 0]
        text = secs.get(".text")
        for r in range(rounds):
            b = bytearray(data)
            if prog in a64 and text and rng.random() < 0.5:
                # a whole instruction word: any encoding, aligned
                pos = text[0] + 4 * rng.randrange(text[1] // 4)
                b[pos:pos + 4] = rng.getrandbits(32).to_bytes(4, "little")
            for _ in range(rng.randint(1, 8)):
                if rng.random() < 0.9 and targets:
                    off, size = rng.choice(targets)
                    pos = off + rng.randrange(size)
                else:
                    pos = rng.randrange(len(b))
                b[pos] = rng.choice([0, 0xff, 0x90, 0xc3, 0xcc, 0xe9, 0x0f, rng.randrange(256)])
            path = os.path.join(tmp, "damaged")
            with open(path, "wb") as f:
                f.write(b)
            what = f"{os.path.basename(prog)} round {r}"
            try:
                p = subprocess.run([backstep, "check", "--stack", path], capture_output=True,
                                   text=True, errors="replace", timeout=60)
            except subprocess.TimeoutExpired:
                check(False, f"{what}: no answer within 60 s")
                shutil.copy(path, os.path.join(tmp, "..", f"stack_fuzz_hang_{r}"))
                continue
            ok = p.returncode in (0, 1) or (p.returncode == 2 and len(p.stderr.splitlines()) == 1)
            check(ok, f"{what}: exit status {p.returncode}, stderr {p.stderr[-300:]!r}")
            if p.returncode in outcomes:
                outcomes[p.returncode] += 1
    print(f"exit statuses: {outcomes}")
    check(outcomes[0] + outcomes[1] > rounds, "too few damaged files read at all")
finally:
    shutil.rmtree(tmp)

finish()
