#!/usr/bin/env python3
"""validate --remote speed against the gdbstub's raw single-step rate, in
the same run (bench/README.md, "validate over the GDB remote protocol").

  validate_remote.py BACKSTEP A64_PROGRAM [X86_PROGRAM] [--steps N]

For the AArch64 program under qemu-aarch64's gdbstub, and for the x86-64
one under gdbserver (and, for reference, under the ptrace and in-process drivers):
  validate    `backstep validate --json -q` (--qemu, or --remote to a
              gdbserver started here): checked instructions per second;
              with --step-all, single-steps per second (every instruction
              stepped, the checked ones walked too)
  raw step    a minimal client here (Python) that only sends vCont;s and
              reads the stop reply, N times from the program's first
              instruction: the stub's single-step rate, the ceiling for
              any checker stepping through it
  raw step+g  the same with a 'g' (all registers) after each step: what
              the least a per-instruction checker must ask costs
Three rounds, each measuring every row once; the median is reported.
"""
import json
import socket
import subprocess
import sys
import time


def frame(data):
    return b"$" + data + b"#" + b"%02x" % (sum(data) & 0xFF)


class Stub:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.noack = False

    def recv(self):
        while True:
            i = self.buf.find(b"$")
            j = self.buf.find(b"#", i + 1) if i >= 0 else -1
            if i >= 0 and j >= 0 and len(self.buf) >= j + 3:
                pkt, self.buf = self.buf[i + 1:j], self.buf[j + 3:]
                if not self.noack:
                    self.s.sendall(b"+")
                return pkt
            chunk = self.s.recv(65536)
            if not chunk:
                raise EOFError("stub closed")
            self.buf += chunk

    def cmd(self, data):
        self.s.sendall(frame(data))
        return self.recv()

    def handshake(self):
        feats = self.cmd(b"qSupported:multiprocess+;vContSupported+")
        if b"QStartNoAckMode+" in feats:
            self.cmd(b"QStartNoAckMode")
            self.noack = True
        stop = self.cmd(b"?")
        tid = stop.split(b"thread:")[1].split(b";")[0] if b"thread:" in stop else b"-1"
        return tid


def connect(port, deadline=10):
    t0 = time.monotonic()
    while True:
        try:
            return Stub(port)
        except OSError:
            if time.monotonic() - t0 > deadline:
                raise
            time.sleep(0.02)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def raw_rate(start, steps, with_g):
    proc, port = start()
    try:
        st = connect(port)
        tid = st.handshake()
        t0 = time.monotonic()
        for _ in range(steps):
            r = st.cmd(b"vCont;s:" + tid)
            if not r.startswith(b"T"):
                break
            if with_g:
                st.cmd(b"g")
        dt = time.monotonic() - t0
        st.s.sendall(frame(b"k"))
        st.s.close()
        return steps / dt
    finally:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def qemu_start(prog):
    def start():
        port = free_port()
        p = subprocess.Popen(["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-g", str(port), prog],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return p, port
    return start


def gdbserver_start(prog):
    def start():
        p = subprocess.Popen(["gdbserver", "--once", "127.0.0.1:0", prog],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in p.stderr:
            if line.startswith("Listening on port"):
                return p, int(line.split()[-1])
        raise RuntimeError("gdbserver did not listen")
    return start


def validate(backstep, args):
    p = subprocess.run([backstep, "validate", "--json", "-q"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    j = json.loads(p.stdout[p.stdout.index('{"program'):])
    return j["stats"]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    steps, rounds = 20000, 3
    if "--steps" in sys.argv:
        steps = int(sys.argv[sys.argv.index("--steps") + 1])
        args = [a for a in args if a != str(steps)]
    backstep, a64 = args[0], args[1]
    x86 = args[2] if len(args) > 2 else None
    # name -> (program, instructions, [rates]); each round measures every
    # row once, so a burst of load elsewhere hits all of them alike.
    rows = {}

    def add(key, prog, n, rate):
        rows.setdefault(key, (prog, n, []))[2].append(rate)

    for _ in range(rounds):
        st = validate(backstep, ["--qemu", "--", a64])
        add(("qemu-aarch64 gdbstub", "validate --qemu: checked/s"), a64, st["instructions_checked"],
            st["checked_per_second"])
        st = validate(backstep, ["--qemu", "--step-all", "--", a64])
        add(("qemu-aarch64 gdbstub", "validate --qemu --step-all: steps/s"), a64,
            st["instructions_stepped"], st["steps_per_second"])
        add(("qemu-aarch64 gdbstub", "raw vCont;s"), a64, steps, raw_rate(qemu_start(a64), steps, False))
        add(("qemu-aarch64 gdbstub", "raw vCont;s + g"), a64, steps, raw_rate(qemu_start(a64), steps, True))
        if not x86:
            continue
        start = gdbserver_start(x86)
        for extra, what in (([], "validate --remote: checked/s"),
                            (["--step-all"], "validate --remote --step-all: steps/s")):
            p, port = start()
            st = validate(backstep, ["--remote", "127.0.0.1:%d" % port] + extra + ["--", x86])
            p.wait(timeout=10)
            add(("gdbserver", what), x86, st["instructions_stepped" if extra else "instructions_checked"],
                st["steps_per_second" if extra else "checked_per_second"])
        add(("gdbserver", "raw vCont;s"), x86, steps, raw_rate(start, steps, False))
        add(("gdbserver", "raw vCont;s + g"), x86, steps, raw_rate(start, steps, True))
        # (--driver ptrace: the default is the in-process driver now)
        for driver in ("ptrace", "inproc"):
            st = validate(backstep, ["--driver", driver, "--", x86])
            add(("%s driver" % driver, "validate: checked/s"), x86, st["instructions_checked"],
                st["checked_per_second"])
    print("| stub | program | what | instructions | per second (median of %d) | all |" % rounds)
    print("| --- | --- | --- | ---: | ---: | --- |")
    for (stub, what), (prog, n, rates) in rows.items():
        print("| %s | %s | %s | %d | %.0f | %s |" % (stub, prog.split("/")[-1], what, n, median(rates),
                                                   " ".join("%.0f" % r for r in rates)))


if __name__ == "__main__":
    main()
