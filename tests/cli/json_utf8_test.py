#!/usr/bin/env python3
"""`backstep pid --json`: JSON Lines (one object per thread) that are valid
UTF-8 whatever bytes a name holds. A child names its thread with bytes
that are not UTF-8 (prctl PR_SET_NAME); each such byte must come out as
\\uDCXX (Python's surrogateescape), the rest as it is.

  json_utf8_test.py BACKSTEP
"""
import ctypes
import json
import os
import subprocess
import sys
import time

NAME = b"ok\xff\xfe\xc3\xa9z"  # two bad bytes, then a well-formed e-acute


def main():
    backstep = sys.argv[1]
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(15, ctypes.c_char_p(NAME), 0, 0, 0)  # PR_SET_NAME
        os.write(w, b"x")
        time.sleep(30)
        os._exit(0)
    os.close(w)
    os.read(r, 1)
    try:
        p = subprocess.run([backstep, "pid", "--json", "--no-cache", str(pid)],
                           capture_output=True, timeout=60)
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    fails = []
    try:
        text = p.stdout.decode("utf-8")  # strict: invalid UTF-8 raises
        lines = [json.loads(l) for l in text.splitlines() if l.strip()]
    except (UnicodeDecodeError, ValueError) as e:
        print("FAIL: output is not UTF-8 JSON Lines: %s: %r" % (e, p.stdout[:300]))
        sys.exit(1)
    want = NAME.decode("utf-8", "surrogateescape")
    if p.returncode != 0 or len(lines) != 1 or lines[0].get("name") != want:
        fails.append("exit %d, %d lines, name %r, want %r" %
                     (p.returncode, len(lines), lines[0].get("name") if lines else None, want))
    if not lines or not lines[0].get("frames"):
        fails.append("no frames")
    for f in fails:
        print("FAIL: " + f)
    if not fails:
        print("pid --json: one line, name %r" % lines[0]["name"])
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
