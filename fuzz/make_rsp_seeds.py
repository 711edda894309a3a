#!/usr/bin/env python3
"""Seeds for fuzz_rsp from real stubs: runs `backstep validate` with
BACKSTEP_RSP_TRACE=1 (every packet on stderr) against qemu-user's gdbstub
and gdbserver, and writes what the stubs answered, framed again as a stub
sends it, a few packets per seed, each seed's first byte the read size.

  make_rsp_seeds.py BACKSTEP AARCH64_PROGRAM X86_64_PROGRAM OUTDIR
"""
import os
import subprocess
import sys


def frame(data):
    out = bytearray()
    for b in data:
        if b in b"$#}*":
            out += bytes([0x7D, b ^ 0x20])
        else:
            out.append(b)
    return b"$" + bytes(out) + b"#" + b"%02x" % (sum(out) & 0xFF)


def replies(cmd):
    env = dict(os.environ, BACKSTEP_RSP_TRACE="1")
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                       timeout=120)
    out = []
    for line in p.stderr.split(b"\n"):
        if line.startswith(b"rsp< "):
            out.append(line[5:])
    return out


def main():
    backstep, a64, x86, outdir = sys.argv[1:5]
    os.makedirs(outdir, exist_ok=True)
    runs = {"qemu": [backstep, "validate", "-q", "--qemu", "--", a64]}
    gs = subprocess.Popen(["gdbserver", "--once", "127.0.0.1:0", x86],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    port = None
    for line in gs.stderr:
        if line.startswith(b"Listening on port"):
            port = line.split()[-1].decode()
            break
    runs["gdbserver"] = [backstep, "validate", "-q", "--remote", "127.0.0.1:" + port, "--", x86]
    n = 0
    for name, cmd in runs.items():
        seen = set()
        got = replies(cmd)
        for i in range(0, len(got), 3):
            chunk = got[i:i + 3]
            key = tuple(c[:1] + bytes([len(c) % 7]) for c in chunk)
            if key in seen or len(seen) >= 30:
                continue
            seen.add(key)
            data = bytes([len(seen) % 61]) + b"+".join(frame(c) for c in chunk)
            with open(os.path.join(outdir, "%s_%03d" % (name, len(seen))), "wb") as f:
                f.write(data)
            n += 1
    gs.wait(timeout=30)
    # Hand-made: run lengths, escapes, a bad checksum, junk, an svr4 list.
    hand = {
        "rle": b"\x05$0* 0*\"#" + b"%02x" % (sum(b'0* 0*"') & 0xFF),
        "escape": b"\x02" + frame(b"ml}$#*x"),
        "badsum": b"\x03$OK#00$OK#9a",
        "junk": b"\x07\x00\xffhello$T05thread:p1.2;swbreak:;#00",
        "svr4": b"\x11" + frame(b'l<library-list-svr4 version="1.0" main-lm="0x1000">'
                               b'<library name="/lib/libc.so.6 &amp; co" lm="0x2000" '
                               b'l_addr="0x7f0000000000" l_ld="0x7f0000010000"/>'
                               b'</library-list-svr4>'),
        "stops": b"\x01" + frame(b"W00") + frame(b"X09;process:1f") + frame(b"S0b") +
                 frame(b"O48656c6c6f") + frame(b"T0506:0000000000000000;thread:p2a.2b;core:1;"),
    }
    for k, v in hand.items():
        with open(os.path.join(outdir, "hand_" + k), "wb") as f:
            f.write(v)


if __name__ == "__main__":
    main()
