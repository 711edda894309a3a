#!/usr/bin/env python3
"""`backstep check --stack` follows the indirect jumps whose targets it can
prove (tests/check/stack_tables.S: one kind of jump per function).

    stack_tables.py BACKSTEP SRCDIR

Built as it is, each lie_F function has exactly one difference, at the
instruction marked M_lie_F_0, which only its indirect jump reaches: the
lie is caught only when that jump is followed. Built with -DTRUTH (the
same code, the lies told as truth): exit status 0, no difference. In both
builds every function but part_* is checked in full (the ok_* ones hold
the analysis to what it must not lose on the way: a loop counter's
interval widened, a constant index, the hull of two bounds at a forward
join, an edge no value takes not followed), the part_* ones not, for
"indirect jump": a table shorter than its index's range (a byte's, or
one bounded from below only), never guessed.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from tally import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]


def build(name, *flags):
    out = os.path.join(tmp, name)
    subprocess.run(["gcc", "-nostdlib", "-static", "-Wl,--build-id=none", *flags, "-o", out,
                    os.path.join(srcdir, "stack_tables.S")], check=True, capture_output=True)
    return out


def analyse(path):
    p = subprocess.run([backstep, "check", "--stack", "--json", path], capture_output=True,
                       text=True, timeout=120)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    return p.returncode, rows, p.stderr


def symbols(path):
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    return {f[2]: int(f[0], 16) for f in (l.split() for l in out.splitlines()) if len(f) == 3}


tmp = tempfile.mkdtemp()
try:
    for truth in (False, True):
        what = "truth" if truth else "lies"
        exe = build(what, *(["-DTRUTH"] if truth else []))
        syms = symbols(exe)
        rc, rows, err = analyse(exe)
        diffs = {int(r["addr"], 16): r for r in rows
                 if r["type"] == "finding" and r["kind"] == "stack"}
        gaveup = {r.get("symbol"): r for r in rows
                  if r["type"] == "finding" and r["kind"] == "cannot-analyse"}
        summary = [r for r in rows if r["type"] == "file"]
        check(err == "" and len(summary) == 1, f"{what}: stderr {err!r}, {len(summary)} summaries")
        lies = sorted(n for n in syms if n.startswith("lie_"))
        check(len(lies) == 6, f"{what}: {lies}")
        markers = {a: n[2:].rsplit("_", 1)[0] for n, a in syms.items() if n.startswith("M_")}
        check(len(markers) == len(lies), f"{what}: markers {markers}")
        if truth:
            check(rc == 0 and not diffs, f"{what}: exit status {rc}, differences "
                  f"{[(hex(a), r.get('symbol'), r['detail']) for a, r in diffs.items()]}")
        else:
            check(rc == 1, f"{what}: exit status {rc}")
            for addr, fn in sorted(markers.items()):
                r = diffs.get(addr)
                check(r is not None and r.get("symbol") == fn,
                      f"{what}: no difference at {fn}'s marker 0x{addr:x} "
                      f"({gaveup.get(fn, {}).get('detail')})")
            for addr, r in sorted(diffs.items()):
                check(addr in markers, f"{what}: unexpected difference at 0x{addr:x} "
                      f"({r.get('symbol')}+{r.get('offset')}): {r['detail']}")
        # Every function followed in full but part_byte_table (and _start,
        # the outermost frame).
        check(set(gaveup) == {"part_byte_table", "part_above_bound", "_start"},
              f"{what}: not checked in full: "
              f"{ {n: r['reason'] + ': ' + r['detail'] for n, r in gaveup.items()} }")
        for part in ("part_byte_table", "part_above_bound"):
            pb = gaveup.get(part, {})
            check(pb.get("reason") == "indirect jump", f"{what}: {part} {pb}")
        s = summary[0] if summary else {}
        check(s.get("checked", 0) + sum(s.get("not_checked", {}).values()) == s.get("instructions"),
              f"{what}: checked + not checked != instructions: {s}")
finally:
    shutil.rmtree(tmp)

finish()
