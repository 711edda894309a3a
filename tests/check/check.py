#!/usr/bin/env python3
"""`backstep check` on fixtures with deliberate defects: each must report
exactly the findings listed here (severity, kind, symbol), no more, no less.

    check.py BACKSTEP SRCDIR

defects.S    one CFI defect per function (x86-64, static, no crt files)
hdr.S        a clean shared object; copies patched here break its
             .eh_frame_hdr, overlap two FDEs and break its CIE
aarch64.S    entry rows on AArch64 (skipped without aarch64-linux-gnu-gcc)
a C program  gcc -O2, dynamic: only the crt gaps, each named
"""
import collections
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from tally import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]


def run_check(path, *opts):
    p = subprocess.run([backstep, "check", "--json", *opts, path], capture_output=True,
                       text=True, timeout=120)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return p.returncode, rows, p.stderr


def findings(rows):
    return [r for r in rows if r["type"] == "finding"]


def keyset(rows):
    return collections.Counter((f["severity"], f["kind"], f.get("symbol")) for f in findings(rows))


def expect_exact(path, want, what, rc_want):
    rc, rows, err = run_check(path)
    got = keyset(rows)
    want = collections.Counter(want)
    check(got == want, f"{what}: findings differ\n  missing {dict(want - got)}\n"
          f"  unexpected {dict(got - want)}")
    check(rc == rc_want, f"{what}: exit status {rc}, want {rc_want} ({err!r})")
    check(err == "", f"{what}: stderr {err!r}")
    return rows


def detail(rows, kind, needle):
    return any(f["kind"] == kind and needle in f["detail"] for f in findings(rows))


def section(path, name):
    """(file offset, address, size) of section NAME, from readelf."""
    out = subprocess.run(["readelf", "-W", "-S", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        f = line.replace("[ ", "[").split()
        if len(f) > 6 and f[1] == name:
            return int(f[4], 16), int(f[3], 16), int(f[5], 16)
    raise SystemExit(f"no {name} in {path}")


tmp = tempfile.mkdtemp()
try:
    # ---- defects.S: one finding per function ---------------------------
    defects = os.path.join(tmp, "defects")
    subprocess.run(["gcc", "-nostdlib", "-static", "-Wl,--build-id=none", "-o", defects,
                    os.path.join(srcdir, "defects.S")], check=True, capture_output=True)
    rows = expect_exact(defects, [
        ("info", "entry-row", "_start"),          # outermost: RA undefined
        ("error", "entry-row", "bad_entry"),
        ("info", "entry-row", "split.cold"),      # a part, not an entry
        ("info", "entry-row", "sigtramp"),        # 'S': exempt
        ("error", "state-stack", "bad_restore"),
        ("warning", "state-stack", "no_restore"),
        ("error", "cfa-program", "bad_opcode"),
        ("warning", "cfa-program", "expr_then_reg"),  # lenient, as libgcc and gdb
        ("info", "zero-length", "empty_fde"),
        ("error", "outside-code", "in_rodata"),
        ("info", "eh-frame-hdr", None),           # static: no header, usual
        ("error", "gap", "nocfi"),
        ("error", "gap", "empty_fde"),            # its ret: the FDE covers nothing
        ("info", "gap", "with_strings"),          # strings in .text, not code
    ], "defects", 1)
    check(detail(rows, "entry-row", "CFA=rsp+16"), "defects: entry row not described")
    check(detail(rows, "gap", "string data in .text"), "defects: strings not recognised")
    check(detail(rows, "cfa-program", "DW_CFA_def_cfa_register"),
          "defects: expr_then_reg does not name the instruction")
    check(detail(rows, "gap", "0x") and
          all(f["end"] != f["addr"] for f in findings(rows) if f["kind"] == "gap"),
          "defects: gap without a range")
    summary = [r for r in rows if r["type"] == "file"][0]
    check(summary["fdes_eh_frame"] == 12, f"defects: {summary['fdes_eh_frame']} FDEs, want 12")
    check(summary["padding_bytes"] > 0, "defects: alignment fill not counted as padding")

    # The text form: one line per finding, then the summary.
    p = subprocess.run([backstep, "check", defects], capture_output=True, text=True)
    lines = p.stdout.splitlines()
    check(any(l.startswith(f"{defects}: error: gap: ") and l.endswith("(nocfi+0x0)")
              for l in lines), f"defects: text gap line: {lines}")
    check(any(l.startswith(f"{defects}: error: entry-row: ") and "(bad_entry+0x0, at .eh_frame+0x"
              in l for l in lines), "defects: text entry-row line")
    check(not any(": info: " in l for l in lines), "defects: info printed without -v")
    check(lines[-1].startswith(f"{defects}: summary: 12 FDEs"), f"defects: summary {lines[-1]!r}")
    p = subprocess.run([backstep, "check", "-v", defects], capture_output=True, text=True)
    check("signal trampoline (CIE augmentation 'S')" in p.stdout, "defects: -v hides info")

    # ---- hdr.S: clean, then patched copies -----------------------------
    good = os.path.join(tmp, "hdr.so")
    subprocess.run(["gcc", "-nostdlib", "-shared", "-Wl,--build-id=none", "-o", good,
                    os.path.join(srcdir, "hdr.S")], check=True, capture_output=True)
    rows = expect_exact(good, [], "hdr clean", 0)
    summary = [r for r in rows if r["type"] == "file"][0]
    check(summary["fdes_eh_frame"] == 4 and summary["fdes_debug_frame"] == 4,
          f"hdr clean: FDE counts {summary}")
    check(summary["covered_bytes"] + summary["padding_bytes"] == summary["exec_bytes"],
          f"hdr clean: coverage {summary}")

    data = bytes(open(good, "rb").read())
    h_off, h_addr, h_size = section(good, ".eh_frame_hdr")
    e_off, e_addr, e_size = section(good, ".eh_frame")
    ver, penc, cenc, tenc = data[h_off:h_off + 4]
    assert (ver, cenc, tenc) == (1, 0x03, 0x3b), (ver, cenc, tenc)
    count = struct.unpack_from("<I", data, h_off + 8)[0]
    assert count == 4, count
    table = h_off + 12

    def entry(i):
        loc, fde = struct.unpack_from("<ii", data, table + 8 * i)
        return loc, fde

    def variant(name, edit):
        b = bytearray(data)
        edit(b)
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(b)
        return path

    def put_entry(b, i, loc, fde):
        struct.pack_into("<ii", b, table + 8 * i, loc, fde)

    def hdr_errors(path, what, needles, nerrors):
        rc, rows, err = run_check(path)
        errs = [f for f in findings(rows) if f["severity"] == "error"]
        check(rc == 1, f"{what}: exit status {rc}, want 1")
        check(len(errs) == nerrors, f"{what}: {len(errs)} errors, want {nerrors}: "
              f"{[e['detail'] for e in errs]}")
        for n in needles:
            check(any(n in e["detail"] and e["kind"] == "eh-frame-hdr" for e in errs),
                  f"{what}: no eh-frame-hdr error with {n!r}: {[e['detail'] for e in errs]}")
        return errs

    hdr_errors(variant("v_version", lambda b: b.__setitem__(h_off, 2)), "hdr version",
               ["version 2"], 1)

    def swap(b):
        e1, e2 = entry(1), entry(2)
        put_entry(b, 1, *e2)
        put_entry(b, 2, *e1)
    hdr_errors(variant("v_unsorted", swap), "hdr unsorted", ["not sorted"], 1)

    errs = hdr_errors(variant("v_count", lambda b: struct.pack_into("<I", b, h_off + 8, 3)),
                      "hdr count", ["table has 3 entries, .eh_frame has 4 FDEs",
                                    "missing from the table"], 2)
    check(any(e.get("symbol") == "f4" for e in errs), "hdr count: missing FDE not named f4")

    def bad_ptr(b):
        loc, fde = entry(0)
        put_entry(b, 0, loc, fde + 4)
    hdr_errors(variant("v_ptr", bad_ptr), "hdr pointer",
               ["which is not an FDE", "missing from the table"], 2)

    def bad_loc(b):
        loc, fde = entry(0)
        put_entry(b, 0, loc + 1, fde)
    hdr_errors(variant("v_loc", bad_loc), "hdr location", ["but its FDE"], 1)

    # Overlap: f1's FDE (the one the first table entry names) grows by 16
    # bytes into f2. Its pc_range follows length, CIE pointer, pc_begin.
    f1_fde = h_addr + entry(0)[1] - e_addr + e_off

    def overlap(b):
        rng = struct.unpack_from("<I", b, f1_fde + 12)[0]
        struct.pack_into("<I", b, f1_fde + 12, rng + 16)
    rc, rows, err = run_check(variant("v_overlap", overlap))
    errs = [f for f in findings(rows) if f["severity"] == "error"]
    check(rc == 1 and [(e["kind"], e["section"], e.get("symbol")) for e in errs] ==
          [("overlap", ".eh_frame", "f2")], f"overlap: {errs}")

    # The CIE (first in .eh_frame) gets version 9: one decode error naming
    # the four FDEs it takes down; .debug_frame still covers every byte.
    def bad_cie(b):
        assert b[e_off + 8] == 1
        b[e_off + 8] = 9
    rc, rows, err = run_check(variant("v_cie", bad_cie))
    errs = [f for f in findings(rows) if f["severity"] == "error"]
    check(rc == 1 and len(errs) == 1 and errs[0]["kind"] == "decode" and
          "4 FDEs use it" in errs[0]["detail"] and errs[0]["entry_offset"] == "0x0",
          f"bad CIE: {errs}")

    # ---- aarch64.S -----------------------------------------------------
    if shutil.which("aarch64-linux-gnu-gcc"):
        a64 = os.path.join(tmp, "a64.so")
        subprocess.run(["aarch64-linux-gnu-gcc", "-nostdlib", "-shared",
                        "-Wl,--build-id=none", "-o", a64, os.path.join(srcdir, "aarch64.S")],
                       check=True, capture_output=True)
        rows = expect_exact(a64, [("error", "entry-row", "bad_entry")], "aarch64", 1)
        check(detail(rows, "entry-row", "CFA=sp+16"), "aarch64: row not described")
    else:
        print("SKIP: aarch64-linux-gnu-gcc not found")

    # ---- a normal gcc -O2 program: only crt gaps -----------------------
    prog = os.path.join(tmp, "prog")
    subprocess.run(["gcc", "-O2", "-o", prog, "-x", "c", "-"], check=True, input=b"""
#include <stdio.h>
#include <stdlib.h>
static int __attribute__((noinline)) work(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * i; return s; }
int main(int argc, char **argv) { printf("%d\\n", work(argc > 1 ? atoi(argv[1]) : 10)); return 0; }
""")
    rc, rows, err = run_check(prog)
    errs = [f for f in findings(rows) if f["severity"] != "info"]
    crt = {"_init", "_fini", "deregister_tm_clones", "register_tm_clones",
           "__do_global_dtors_aux", "frame_dummy"}
    # The C runtime's code without CFI is the toolchain's, reported apart
    # (toolchain-gap, info): a correct gcc program has no error, exit 0.
    tool = [f for f in findings(rows) if f["kind"] == "toolchain-gap"]
    check(rc == 0 and errs == [], f"gcc -O2: exit {rc}, errors {errs}")
    check(all(t["severity"] == "info" and t.get("symbol") in crt for t in tool),
          f"gcc -O2: toolchain gaps beyond the crt's: {tool}")
    check({"_init", "_fini", "frame_dummy"} <= {t.get("symbol") for t in tool},
          f"gcc -O2: crti.o's _init/_fini, crtbegin.o's frame_dummy not toolchain gaps: {tool}")
    # frame_dummy's symbol has no size: the alignment after its few bytes
    # of code is padding, not part of the gap (it ends at a non-fill byte).
    fd = [t for t in tool if t.get("symbol") == "frame_dummy"]
    check(fd and int(fd[0]["end"], 16) - int(fd[0]["addr"], 16) < 16,
          f"gcc -O2: frame_dummy's gap takes in the padding after it: {fd}")

    # ---- .debug_frame only, with a function the linker dropped ----------
    gc = os.path.join(tmp, "gc")
    subprocess.run(["gcc", "-O2", "-g", "-fno-asynchronous-unwind-tables", "-fno-unwind-tables",
                    "-ffunction-sections", "-Wl,--gc-sections", "-o", gc, "-x", "c", "-"],
                   check=True, input=b"int unused(int x) { return x * 3; }\n"
                                     b"int main(void) { return 0; }\n")
    rc, rows, err = run_check(gc)
    fs = findings(rows)
    check(any(f["kind"] == "discarded" and f["severity"] == "info" and
              f["section"] == ".debug_frame" for f in fs), f"gc: no discarded FDE: {fs}")
    errs = [f for f in fs if f["severity"] != "info"]
    check(all(e["kind"] == "gap" and e.get("symbol") in crt for e in errs),
          f"gc: findings beyond the crt gaps (main is covered by .debug_frame): {errs}")
finally:
    shutil.rmtree(tmp)

finish()
