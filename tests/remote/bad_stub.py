#!/usr/bin/env python3
"""A gdbstub that misbehaves: backstep validate --remote must end with one
clear line on stderr and exit status 2, within its timeout — never hang,
crash or print a verdict.

  bad_stub.py BACKSTEP PROGRAM

Each case runs a fake stub on a free loopback port (a thread here) that
answers the handshake as a stub would, then misbehaves:
  disconnect  closes the connection after qSupported
  stall       never answers anything after qSupported
  garbage     answers '?' with bytes that are no packet
  badsum      answers with packets whose checksums are wrong (ack mode)
  notstop     answers '?' with something that is not a stop reply
  dies        answers the handshake, then closes when the program is resumed
"""
import socket
import subprocess
import sys
import threading
import time


def frame(data):
    return b"$" + data + b"#" + b"%02x" % (sum(data) & 0xFF)


def escape(data):
    out = bytearray()
    for b in data:
        if b in b"$#}*":
            out += bytes([0x7D, b ^ 0x20])
        else:
            out.append(b)
    return bytes(out)


def entry_of(program):
    with open(program, "rb") as f:
        h = f.read(32)
    return int.from_bytes(h[24:32], "little")


def read_packet(conn, buf):
    while True:
        i = buf.find(b"$")
        j = buf.find(b"#", i + 1) if i >= 0 else -1
        if i >= 0 and j >= 0 and len(buf) >= j + 3:
            pkt, rest = buf[i + 1:j], buf[j + 3:]
            return pkt, rest
        chunk = conn.recv(4096)
        if not chunk:
            return None, b""
        buf += chunk


def stub(sock, mode, entry):
    conn, _ = sock.accept()
    conn.settimeout(20)
    buf = b""
    try:
        while True:
            pkt, buf = read_packet(conn, buf)
            if pkt is None:
                return
            if mode != "badsum":
                conn.sendall(b"+")
            if pkt.startswith(b"qSupported"):
                if mode == "disconnect":
                    conn.close()
                    return
                if mode == "badsum":
                    conn.sendall(b"+" + b"$PacketSize=1000#00" * 8)
                    continue
                conn.sendall(frame(b"PacketSize=1000;qXfer:auxv:read+"))
                if mode == "stall":
                    time.sleep(10)
                    return
            elif pkt == b"?":
                if mode == "garbage":
                    conn.sendall(bytes(b for b in range(256) if b not in b"$+-") * 40)
                    time.sleep(5)
                    return
                if mode == "notstop":
                    conn.sendall(frame(b"hello"))
                else:
                    conn.sendall(frame(b"T05thread:01;"))
            elif pkt.startswith(b"vCont;") or pkt in (b"c", b"s"):
                if mode == "dies":
                    conn.close()
                    return
                conn.sendall(frame(b"W00"))
            elif pkt.startswith(b"qXfer:auxv:read::0,"):
                auxv = (9).to_bytes(8, "little") + (0x400000 + entry).to_bytes(8, "little")
                conn.sendall(frame(b"l" + escape(auxv + bytes(16))))
            elif pkt.startswith(b"qXfer:auxv:read::"):
                conn.sendall(frame(b"l"))
            elif pkt == b"g":
                conn.sendall(frame(b"00" * 8 * 16 + b"0010400000000000" + b"00000000"))
            elif pkt.startswith(b"m"):
                conn.sendall(frame(b"E01"))
            elif pkt.startswith(b"Z0") or pkt.startswith(b"z0"):
                conn.sendall(frame(b"OK"))
            else:
                conn.sendall(frame(b""))
    except OSError:
        return
    finally:
        conn.close()


def main():
    backstep, program = sys.argv[1], sys.argv[2]
    failures = 0
    for mode, want in [("disconnect", "closed the connection"), ("stall", "no answer for 2 s"),
                       ("garbage", "bytes outside packets"), ("badsum", "malformed packets"),
                       ("notstop", "not stopped"), ("dies", "closed the connection")]:
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port = sock.getsockname()[1]
        t = threading.Thread(target=stub, args=(sock, mode, entry_of(program)), daemon=True)
        t.start()
        start = time.monotonic()
        p = subprocess.run([backstep, "validate", "-q", "--timeout", "2", "--remote",
                            "127.0.0.1:%d" % port, "--", program],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        took = time.monotonic() - start
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        # A stub lost after checking started: what was checked is still
        # printed (as for any run that ends early), the status says 2.
        ok = (p.returncode == 2 and len(lines) == 1 and want in lines[0]
              and (not p.stdout or mode == "dies") and took < 15)
        print("%-10s exit %d in %.1f s: %s%s" % (mode, p.returncode, took, p.stderr.strip(),
                                                 "" if ok else "   <-- FAIL (wanted '%s')" % want))
        failures += not ok
        sock.close()
    # The stub's address itself: nothing listens there.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    p = subprocess.run([backstep, "validate", "-q", "--timeout", "2", "--remote",
                        "127.0.0.1:%d" % port, "--", program],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    ok = p.returncode == 2 and "cannot connect" in p.stderr and len(p.stderr.splitlines()) == 1
    print("refused    exit %d: %s%s" % (p.returncode, p.stderr.strip(), "" if ok else "   <-- FAIL"))
    failures += not ok
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
