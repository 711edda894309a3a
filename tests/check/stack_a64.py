#!/usr/bin/env python3
"""`backstep check --stack` on AArch64 code, cross-compiled (the check is
static: nothing runs). aarch64-linux-gnu-gcc is required (scripts/setup.sh
installs it): without it this test fails, it does not skip.

    stack_a64.py BACKSTEP SRCDIR

stack_a64.S  one lie per lie_* function (the CFA not moved after
             `stp x29, x30, [sp, #-16]!`, a save recorded at the wrong
             slot, the CFA not restored after `ldp x29, x30, [sp], #16`,
             no .cfi_negate_ra_state after paciasp, none after autiasp, a
             .cfi_restore_state one row late, a wrong row in a case reached
             only through a jump table, the with_pc form of
             negate_ra_state after a paciasp): a difference at exactly each
             instruction marked M_<function>_<k> and nowhere else; every
             ok_* function checked in full (ok_qsave: d8/d9 saved as the low
             halves of q8/q9); part_ijump in part (indirect jump), _start
             not (outermost frame). Exit status 1.
Correct programs, exit status 0 and no difference: fixtures/aarch64's
shapes (hand-written CFI: remember/restore_state, d8, a frame on x29) and
C fixtures by gcc at -O0 and -O2, with and without
-mbranch-protection=standard (paciasp/autiasp, bti).
tests/check/aarch64.S: bad_entry's CFA (sp+16 from its first
instruction) at both its instructions.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from tally import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]
CC = "aarch64-linux-gnu-gcc"


if not shutil.which(CC):
    print(f"FAIL: {CC} not found (scripts/setup.sh installs gcc-aarch64-linux-gnu)")
    sys.exit(1)


def run_json(path):
    p = subprocess.run([backstep, "check", "--stack", "--json", path], capture_output=True,
                       text=True, timeout=120)
    return p.returncode, [json.loads(l) for l in p.stdout.splitlines() if l.strip()], p.stderr


def symbols(path):
    out = subprocess.run(["aarch64-linux-gnu-nm", path], capture_output=True, text=True,
                         check=True).stdout
    return {f[2]: int(f[0], 16) for f in (l.split() for l in out.splitlines()) if len(f) == 3}


tmp = tempfile.mkdtemp()
try:
    exe = os.path.join(tmp, "stack_a64")
    subprocess.run([CC, "-nostdlib", "-static", "-Wl,--build-id=none", "-o", exe,
                    os.path.join(srcdir, "stack_a64.S")], check=True, capture_output=True)
    syms = symbols(exe)
    rc, rows, err = run_json(exe)
    check(rc == 1 and err == "", f"stack_a64: exit status {rc}, stderr {err!r}")
    diffs = [r for r in rows if r["type"] == "finding" and r["kind"] == "stack"]
    gaveup = [r for r in rows if r["type"] == "finding" and r["kind"] == "cannot-analyse"]
    markers = {a: n[2:].rsplit("_", 1)[0] for n, a in syms.items() if n.startswith("M_")}
    check(len(markers) == 19, f"stack_a64: {len(markers)} markers")
    got = {int(r["addr"], 16): r for r in diffs}
    for addr, fn in sorted(markers.items()):
        r = got.get(addr)
        check(r is not None and r.get("symbol") == fn,
              f"stack_a64: no difference at {fn} (0x{addr:x}): {r}")
    for addr, r in sorted(got.items()):
        check(addr in markers, f"stack_a64: unexpected difference at 0x{addr:x} "
              f"({r.get('symbol')}+{r.get('offset')}): {r['insn']}: {r['detail']}")
    by = {}
    for r in diffs:
        by.setdefault(r.get("symbol"), []).append(r)

    def says(fn, insn, needle):
        return any(r["insn"].startswith(insn) and needle in r["detail"] for r in by.get(fn, []))

    check(says("lie_stp_cfa", "mov x29, sp", "CFA: row sp+0, code sp+16"), "stp detail")
    check(says("lie_save_slot", "mov x19, x0", "x19: row [CFA-8], code same|[CFA-16]"),
          "save slot detail")
    check(says("lie_ldp_cfa", "ret", "CFA: row sp+16, code sp+0"), "ldp detail")
    check(says("lie_pac", "stp x29, x30", "RA: row same, code same (signed)"), "paciasp detail")
    check(says("lie_pac", "autiasp", "RA: row same, code same (signed)"), "autiasp text/detail")
    check(says("lie_aut", "ret", "RA: row same (signed), code same"), "autiasp-negate detail")
    check(says("lie_pac_pc", "stp x29, x30", "RA: row same (signed, PC modifier), code same (signed)"),
          "negate_ra_state_with_pc after paciasp")
    check(says("lie_remember", "movz x0, #0x1", "CFA: row sp+0, code sp+16"), "remember detail")
    check(says("lie_switch", "movz x0, #0xc", "CFA: row sp+32, code sp+16"),
          "a case reached only through the jump table")
    reasons = {r.get("symbol"): r["reason"] for r in gaveup}
    for name in syms:
        if name.startswith("ok_"):
            check(name not in reasons, f"stack_a64: {name} not checked in full: "
                  f"{[r['detail'] for r in gaveup if r.get('symbol') == name]}")
    check(reasons == {"part_ijump": "indirect jump", "_start": "outermost frame"},
          f"stack_a64: given up {reasons}")
    s = [r for r in rows if r["type"] == "file"]
    check(len(s) == 1 and s[0]["arch"] == "aarch64" and s[0]["differences"] == 19,
          f"stack_a64: summary {s}")

    # tests/check/aarch64.S: a wrong entry row.
    exe = os.path.join(tmp, "entry")
    subprocess.run([CC, "-nostdlib", "-static", "-Wl,-e,good", "-o", exe,
                    os.path.join(srcdir, "aarch64.S")], check=True, capture_output=True)
    rc, rows, err = run_json(exe)
    d = [(r.get("symbol"), r.get("offset")) for r in rows
         if r["type"] == "finding" and r["kind"] == "stack"]
    check(rc == 1 and d == [("bad_entry", "0x0"), ("bad_entry", "0x4")],
          f"aarch64.S: exit {rc}, differences {d}")

    # Correct programs: exit status 0.
    fix = os.path.join(srcdir, "..", "..", "fixtures")
    progs = [("shapes", [os.path.join(fix, "aarch64", "main.c"),
                         os.path.join(fix, "aarch64", "shapes.S"), "-O2"])]
    for src in ("recursion.c", "tailcall.c", "qsort_callback.c", "shrink_wrap.c", "alloca.c"):
        for flags in (["-O0"], ["-O2"], ["-O2", "-mbranch-protection=standard"],
                      ["-O2", "-fomit-frame-pointer"]):
            progs.append((src + " " + " ".join(flags), [os.path.join(fix, src)] + flags))
    for name, args in progs:
        exe = os.path.join(tmp, "prog")
        subprocess.run([CC, "-g", *args, "-o", exe], check=True, capture_output=True)
        rc, rows, err = run_json(exe)
        t = [r for r in rows if r["type"] == "file"]
        bad = [f"{r.get('symbol')}+{r.get('offset')} {r['detail']}" for r in rows
               if r["type"] == "finding" and r["kind"] == "stack"]
        check(rc == 0 and err == "" and not bad and t and t[0]["checked"] > 0,
              f"{name}: exit {rc} {err!r} {bad[:3]}")
        if "branch-protection" in name:
            # paciasp and autiasp were followed: no function given up.
            gu = [r for r in rows if r["type"] == "finding" and r["kind"] == "cannot-analyse"
                  and r.get("symbol") != "_start"]
            check(not gu, f"{name}: given up {[(r.get('symbol'), r['reason']) for r in gu]}")
finally:
    shutil.rmtree(tmp)

finish()
