#!/usr/bin/env python3
"""backstep validate on code generated at run time (tests/unit/jitfile.c).

  jitfile_validate.py BACKSTEP JITFILE

The program maps its generated code from a file (bk-jitcode.so) and walks
it with bk_backtrace. Checked: the program's code and the generated code
(--only jitfile,bk-jitcode.so) at every instruction: exit status 0, no
mismatch, the map refreshed after the code appeared; where no CFI covers
the code, wrong guesses only in the C runtime's startup files. Then with
--broken (J2's CFA offset 8 too small at its call of J3): mismatches, every
one blamed on a frame of bk-jitcode.so, which shows its instructions were
checked.
"""
import json
import os
import subprocess
import sys

CRT_NO_CFI = {"_init", "_fini", "_start", "deregister_tm_clones", "register_tm_clones",
              "__do_global_dtors_aux", "frame_dummy"}


def validate(backstep, prog, *args):
    name = os.path.basename(prog)
    cmd = [backstep, "validate", "--json", "-q", "--only", name + ",bk-jitcode.so", "--",
           prog] + list(args)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        return p.returncode, json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}, no JSON: {p.stderr.strip()[-400:]}")


def main():
    backstep, prog = sys.argv[1], sys.argv[2]
    bad = []
    rc, d = validate(backstep, prog)
    st = d["stats"]
    print(f"good: exit {rc}, program {d['exit_status']}, {st['instructions_checked']} checked, "
          f"{st['mismatching_instructions']} mismatching, refreshes {st['module_refreshes']}")
    if rc != 0 or d["exit_status"] != 0:
        bad.append(f"good run: validate exit {rc}, program exit {d['exit_status']}")
    if st["mismatching_instructions"]:
        bad.append(f"good run: {st['mismatching_instructions']} mismatching instructions")
    if st["module_refreshes"] < 1:
        bad.append("good run: the map was never refreshed (the generated code not seen)")
    for m in d.get("mismatches", []):
        if not (m.get("nocfi") and m.get("function") in CRT_NO_CFI):
            bad.append(f"good run: mismatch in {m.get('module')} {m.get('function')}+{m.get('offset')}")

    rc, d = validate(backstep, prog, "--broken")
    ms = d.get("mismatches", [])
    print(f"broken: exit {rc}, {d['stats']['mismatching_instructions']} mismatching at "
          f"{len(ms)} location(s): " +
          ", ".join(f"{os.path.basename(m['module'])}+{m['offset']}" for m in ms[:8]))
    jit = [m for m in ms if not m.get("nocfi")]
    if rc == 0 or not jit:
        bad.append("broken run: no mismatch found")
    for m in jit:
        if not m.get("module", "").endswith("/bk-jitcode.so"):
            bad.append(f"broken run: a mismatch outside the generated code: {m.get('module')}")
    for b in bad:
        print("FAIL:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
