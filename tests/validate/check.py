#!/usr/bin/env python3
"""backstep validate on one fixture build.

  check.py BACKSTEP PROGRAM [--min-signals N] [--min-threads N]
      the program's own code must unwind correctly at every instruction:
      exit status 0, no mismatch; where no CFI covers the code, wrong
      guesses are allowed only in the C runtime's startup files (crti.o,
      crtbegin.o: _init, _fini, deregister_tm_clones, ... have no FDE).
  check.py BACKSTEP PROGRAM --broken
      broken.S: exit status 1 and exactly the mismatches its wrong CFI
      makes, at exactly the instructions under the wrong rows.
  check.py BACKSTEP PROGRAM --walk-long
      noend.S: exit status 1; at every checked instruction the walk goes
      on past the outermost frame (_start), and nothing else is wrong.
"""
import argparse
import json
import subprocess
import sys

# Functions of the toolchain's startup files that have no CFI at all.
CRT_NO_CFI = {"_init", "_fini", "_start", "deregister_tm_clones", "register_tm_clones",
              "__do_global_dtors_aux", "frame_dummy"}

# broken.S: culprit offsets (lookup PCs) where the wrong rows are in force.
# broken_offset: +1 mov, +4 mov, +7 call, +0xb (inside the call: frames
# above it in helper_s), +0xc add, +0xf pop.  broken_cfa: +1 mov, +4 call,
# +8 (inside the call), +9 pop.  Never +0 (the entry row is right), never
# good_remember or helper_s (their CFI is right).
BROKEN = {"broken_offset": ({0x1, 0x4, 0x7, 0xb, 0xc, 0xf}, {"rbx"}),
          "broken_cfa": ({0x1, 0x4, 0x8, 0x9}, {"pc", "sp"})}


def fail(msg, report=None):
    print("FAIL:", msg)
    if report is not None:
        print(json.dumps(report, indent=1)[:20000])
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("backstep")
    ap.add_argument("program")
    ap.add_argument("--broken", action="store_true")
    ap.add_argument("--walk-long", action="store_true")
    ap.add_argument("--min-signals", type=int, default=0)
    ap.add_argument("--min-threads", type=int, default=1)
    ap.add_argument("--min-checked", type=int, default=100)
    a = ap.parse_args()

    p = subprocess.run([a.backstep, "validate", "--json", "-q", "--", a.program],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=600)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        fail("no JSON (exit %d): %s %s" % (p.returncode, p.stdout[:2000], p.stderr[:2000]))
    st = rep["stats"]
    print("%s: %d instructions stepped, %d checked (%d distinct), %d frames, %d registers, "
          "%.2f s, %.0f steps/s" % (a.program, st["instructions_stepped"],
                                   st["instructions_checked"], st["distinct_pcs"],
                                   st["frames_checked"], st["registers_checked"],
                                   st["seconds"], st["steps_per_second"]))
    if not rep["started"] or rep.get("error"):
        fail("checking did not run: %s" % rep.get("error"), rep)
    if rep.get("exit_status") != 0:
        fail("the program failed its own check (exit %s, signal %s)"
             % (rep.get("exit_status"), rep.get("signal")), rep)
    if st["instructions_checked"] < a.min_checked:
        fail("only %d instructions checked" % st["instructions_checked"], rep)
    if st["signal_handlers"] < a.min_signals:
        fail("%d signal handlers entered, expected %d" % (st["signal_handlers"], a.min_signals), rep)
    if st["threads"] < a.min_threads:
        fail("%d threads stepped, expected %d" % (st["threads"], a.min_threads), rep)

    cfi = [m for m in rep["mismatches"] if not m["nocfi"]]
    for m in rep["mismatches"]:
        if m["nocfi"] and m["function"] not in CRT_NO_CFI:
            fail("a function of the program has no CFI: %s+%s" % (m["function"], m["offset"]), rep)

    if a.walk_long:
        if p.returncode != 1:
            fail("exit status %d, expected 1" % p.returncode, rep)
        if st["mismatching_instructions"] != st["instructions_checked"]:
            fail("%d of %d walks went too long, expected all" % (
                st["mismatching_instructions"], st["instructions_checked"]), rep)
        for m in cfi:
            if m["first"]["kind"] != "walk-too-long" or m["function"] != "_start":
                fail("unexpected mismatch %s" % m, rep)
        print("every walk past _start caught")
        return
    if not a.broken:
        if p.returncode != 0 or st["mismatching_instructions"] or cfi:
            fail("mismatches (exit %d)" % p.returncode, rep)
        return

    if p.returncode != 1:
        fail("exit status %d, expected 1" % p.returncode, rep)
    seen = {name: set() for name in BROKEN}
    for m in cfi:
        fn = m["function"]
        if fn not in BROKEN:
            fail("a mismatch outside the broken functions: %s+%s" % (fn, m["offset"]), rep)
        off = int(m["offset"], 16)
        regs = {d["reg"] for d in m["first"]["diffs"]}
        if m["first"]["kind"] != "values" or not regs & BROKEN[fn][1]:
            fail("%s+%#x: expected a wrong %s, got %s" % (fn, off, BROKEN[fn][1], m["first"]), rep)
        seen[fn].add(off)
    for fn, (offs, _) in BROKEN.items():
        if seen[fn] != offs:
            fail("%s: mismatches at %s, expected exactly %s"
                 % (fn, sorted(hex(o) for o in seen[fn]), sorted(hex(o) for o in offs)), rep)
    print("broken CFI caught at exactly the expected instructions")


if __name__ == "__main__":
    main()
