#!/usr/bin/env python3
"""The fallbacks without any unwind tables in libc: a static musl program
(tests/live/musl_pause.c, built here with musl-gcc) parked in pause()
inside a signal handler.

  musl_test.py BACKSTEP MUSL_GCC SOURCE WORKDIR

`backstep pid --json` must give, innermost first: __syscall_cp_c, pause,
in_handler, the signal trampoline, then raise's frames down to main, with
no frame at PC 0. (gdb 13 stops after pause with a bogus 0x0 frame here,
so the oracle is the program's known call chain.) Two rules are behind it:
the scan takes a call through a jump stub (pause calls __syscall_cp, a jmp
to __syscall_cp_c just below it), and a frame record whose return address
is 0 is no frame record. musl-gcc missing fails the test: never a skip."""
import json
import os
import shutil
import subprocess
import sys
import time


def main():
    backstep, musl_gcc, source, work = sys.argv[1:5]
    if not shutil.which(musl_gcc):
        raise SystemExit(f"FAIL: {musl_gcc} is missing (Debian musl-tools; scripts/setup.sh)")
    os.makedirs(work, exist_ok=True)
    exe = os.path.join(work, "musl_pause")
    r = subprocess.run([musl_gcc, "-static", "-O2", "-g", source, "-o", exe],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"FAIL: musl-gcc: {r.stderr}")
    proc = subprocess.Popen([exe], stdout=subprocess.PIPE)
    try:
        if proc.stdout.readline().strip() != b"ready":
            raise SystemExit("FAIL: the program did not get ready")
        for _ in range(100):  # in the system call
            if not open(f"/proc/{proc.pid}/syscall").read().startswith("running"):
                break
            time.sleep(0.02)
        p = subprocess.run([backstep, "pid", "--json", str(proc.pid)], capture_output=True,
                           text=True, timeout=60)
        t = json.loads(p.stdout.splitlines()[0])
        names = [f.get("function") for f in t["frames"]]
        hows = [f["how"] for f in t["frames"]]
        pcs = [int(f["pc"], 16) for f in t["frames"]]
        print("frames:", list(zip(names, hows)))
        fails = 0
        want = ["__syscall_cp_c", "pause", "in_handler"]
        if names[:3] != want:
            print(f"FAIL: innermost frames {names[:3]}, want {want}")
            fails += 1
        if "signal" not in hows or "main" not in names or names.index("main") < 3:
            print("FAIL: the walk does not go through the signal frame down to main")
            fails += 1
        if 0 in pcs:
            print("FAIL: a frame at PC 0")
            fails += 1
    finally:
        proc.kill()
        proc.wait()
    print(f"musl: {fails} failed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
