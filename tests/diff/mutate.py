#!/usr/bin/env python3
"""Self-test of readelf_diff.py: it must notice when backstep is wrong.

Runs readelf_diff.py on the binaries named, with a stand-in for
`backstep dump --json` that runs the real one and then corrupts one detail of
its output (one mutation per run). Each mutation must make readelf_diff.py
exit 1 and name the expected column; an unmutated run must exit 0.

usage: mutate.py --backstep B --dwarf-rows D [--readelf R] BINARY...
(internally also: mutate.py --fake KIND REAL dump --json FILE)

stdlib only.
"""

import json
import os
import shlex
import stat
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# kind -> (column text the report must show, applies to AArch64 only)
MUTATIONS = {
    "offset": "r",            # offset(N) -> offset(N-8)
    "val_offset_kind": "r",   # val_offset -> offset
    "register": "r",          # register(R) -> register(R+1)
    "same_value": "r",        # same_value -> undefined
    "undefined_absent": "r",  # undefined -> no rule (only libdwarf sees it)
    "expression": "r",        # last byte of a register expression
    "cfa_expression": "CFA",  # last byte of a CFA expression
    "cfa_reg": "CFA",         # CFA register + 1
    "drop_row": "",           # second row of an FDE removed
    "shift_row": "",          # second row one byte later
    "drop_fde": "FDE",        # one FDE missing
    "ra_sign_state": "ra_sign_state",  # AArch64 only
}


def mutate(kind, objs):
    """Apply KIND to the first place it fits; True if it did."""
    for o in objs:
        rows = o["rows"]
        if kind == "drop_fde":
            objs.remove(o)
            return True
        if kind in ("drop_row", "shift_row"):
            if len(rows) > 2 and int(rows[2]["loc"], 16) - int(rows[1]["loc"], 16) > 1:
                if kind == "drop_row":
                    del rows[1]
                else:
                    rows[1]["loc"] = hex(int(rows[1]["loc"], 16) + 1)
                return True
            continue
        for r in rows:
            cfa = r["cfa"]
            if kind == "cfa_reg" and cfa and "reg" in cfa:
                cfa["reg"] += 1
                return True
            if kind == "cfa_expression" and cfa and "expression" in cfa:
                cfa["expression"] = cfa["expression"][:-2] + "ff"
                return True
            if kind == "ra_sign_state" and r.get("ra_sign_state") == 1:
                r["ra_sign_state"] = 0
                return True
            for k, v in list(r["regs"].items()):
                rule = v["rule"]
                if kind == "offset" and rule == "offset":
                    v["value"] -= 8
                elif kind == "val_offset_kind" and rule == "val_offset":
                    v["rule"] = "offset"
                elif kind == "register" and rule == "register":
                    v["reg"] += 1
                elif kind == "same_value" and rule == "same_value":
                    v["rule"] = "undefined"
                elif kind == "undefined_absent" and rule == "undefined":
                    del r["regs"][k]
                elif kind == "expression" and rule in ("expression", "val_expression"):
                    v["expression"] = v["expression"][:-2] + "ff"
                else:
                    continue
                return True
    return False


def fake(kind, real, args):
    p = subprocess.run([real] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True)
    sys.stderr.write(p.stderr)
    objs = [json.loads(line) for line in p.stdout.splitlines() if line.strip()]
    if kind != "none" and not mutate(kind, objs):
        sys.stderr.write("mutate.py: mutation %s found nothing to change\n" % kind)
        sys.exit(99)
    for o in objs:
        print(json.dumps(o))
    sys.exit(p.returncode)


def main():
    if len(sys.argv) > 3 and sys.argv[1] == "--fake":
        fake(sys.argv[2], sys.argv[3], sys.argv[4:])
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backstep", required=True)
    ap.add_argument("--dwarf-rows", required=True)
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()
    script = os.path.join(HERE, "readelf_diff.py")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for binary in args.binaries:
            with open(binary, "rb") as f:
                is_a64 = f.read(20)[18:20] == b"\xb7\x00"
            for kind in ["none"] + list(MUTATIONS):
                if kind == "ra_sign_state" and not is_a64:
                    continue
                wrapper = os.path.join(tmp, "backstep-" + kind)
                with open(wrapper, "w") as w:
                    w.write("#!/bin/sh\nexec %s %s --fake %s %s \"$@\"\n" % (
                        shlex.quote(sys.executable), shlex.quote(os.path.abspath(__file__)),
                        kind, shlex.quote(os.path.abspath(args.backstep))))
                os.chmod(wrapper, stat.S_IRWXU)
                p = subprocess.run([sys.executable, script, "--backstep", wrapper,
                                    "--dwarf-rows", args.dwarf_rows, "--readelf", args.readelf,
                                    "--limit", "0", binary],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   universal_newlines=True)
                want = 0 if kind == "none" else 1
                col = MUTATIONS.get(kind, "")
                found = kind == "none" or any(
                    (" %s" % col) in line for line in p.stdout.splitlines()
                    if line.startswith("      loc "))
                ok = p.returncode == want and found
                print("%-4s %-18s %s" % ("ok" if ok else "FAIL", kind, binary))
                if not ok:
                    failures += 1
                    print("     exit %d (want %d); report:" % (p.returncode, want))
                    for line in p.stdout.splitlines()[:20]:
                        print("     | " + line)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
