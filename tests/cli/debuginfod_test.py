#!/usr/bin/env python3
"""Debug files fetched from a real debuginfod server (Debian's debuginfod).

  debuginfod_test.py BACKSTEP DEBUGINFOD WORKDIR

A program is built with -g, its debug file split off (objcopy
--only-keep-debug) and the program stripped of everything but its
build-id and .dynsym. The debug file goes to a directory a debuginfod
server started here on 127.0.0.1 indexes (-F). Then `backstep run` of the
program (it aborts in a static function):
  with DEBUGINFOD_URLS   the static function is named, with file:line
  without it             it is not (nothing else has its name)
  --no-debuginfod        it is not
  a dead server          the run ends within seconds, one warning names it
  a server that accepts  the run ends within BACKSTEP_DEBUGINFOD_TIMEOUT
  and never answers      plus a margin, one warning says so
And `backstep core` of the kernel's core of a program deleted since (the
server has its executable): with DEBUGINFOD_URLS the executable is fetched
by the build-id the core kept and the frames are named; without it they
are not.
debuginfod missing fails the test with the reason: never a skip.
"""
import json
import os
import re
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request

SRC = r"""
#include <stdlib.h>
__attribute__((noinline)) static void leaf_in_static(int x) { if (x) abort(); }
__attribute__((noinline)) void middle(int x) { leaf_in_static(x + 1); }
int main(void) { middle(1); return 0; }
"""


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split("Build ID:")[1].strip()
    fail("%s has no build-id" % path)


def run_backstep(backstep, prog, env_extra, args=(), timeout=60):
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    env.update(env_extra)
    t0 = time.monotonic()
    p = subprocess.run([backstep, "run", "--json", "--no-cache", *args, "--", prog],
                       capture_output=True, text=True, env=env, timeout=timeout)
    return p, time.monotonic() - t0


def frames(out):
    fs = []
    for line in out.splitlines():
        line = line.strip().rstrip(",")
        if not line or line[0] not in "{[":
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        for t in (doc if isinstance(doc, list) else [doc]):
            fs += t.get("frames", [])
    if not fs:  # one JSON document over several lines
        try:
            doc = json.loads(out)
            for t in (doc if isinstance(doc, list) else [doc]):
                fs += t.get("frames", [])
        except ValueError:
            pass
    return fs


def named(fs):
    return [f for f in fs if f.get("function") == "leaf_in_static"]


def kernel_core(prog, cwd):
    """The kernel's core of PROG aborting (in CWD, or where a core_pattern
    that is a path puts it), moved into CWD; None when none appears."""
    def unlimited():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    proc = subprocess.Popen([prog], cwd=cwd, preexec_fn=unlimited,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.wait(timeout=60)
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    cands = [os.path.join(cwd, "core"), os.path.join(cwd, "core.%d" % proc.pid)]
    if pattern.startswith("/") and not re.search(r"%[^pe%]", pattern):
        cands.append(pattern.replace("%p", str(proc.pid)).replace(
            "%e", os.path.basename(prog)[:15]).replace("%%", "%"))
    for _ in range(50):
        for c in cands:
            if os.path.exists(c):
                moved = os.path.join(cwd, "gone.core")
                shutil.move(c, moved)
                return moved
        time.sleep(0.1)
    return None


def main():
    if len(sys.argv) != 4:
        fail("usage: debuginfod_test.py BACKSTEP DEBUGINFOD WORKDIR")
    backstep, debuginfod, work = sys.argv[1:]
    if not shutil.which(debuginfod) and not os.path.exists(debuginfod):
        fail("debuginfod not found (Debian package debuginfod; scripts/setup.sh installs it)")
    shutil.rmtree(work, ignore_errors=True)
    srv = os.path.join(work, "srv")
    os.makedirs(srv)
    src = os.path.join(work, "prog.c")
    prog = os.path.join(work, "prog")
    with open(src, "w") as f:
        f.write(SRC)
    dbg = os.path.join(srv, "prog.debug")
    for cmd in (["gcc", "-O1", "-g", "-o", prog, src],
                ["objcopy", "--only-keep-debug", prog, dbg],
                ["strip", "--strip-all", prog]):
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            fail("%s: %s" % (" ".join(cmd), r.stderr))
    bid = build_id(prog)
    # The kernel's core of a program then deleted; the server gets its
    # executable (indexed when it starts).
    gone = os.path.join(work, "gone")
    r = subprocess.run(["gcc", "-O2", "-g", "-o", gone, src],
                       capture_output=True, text=True)
    if r.returncode:
        fail("gcc: " + r.stderr)
    shutil.copy(gone, os.path.join(srv, "gone.exe"))
    gbid = build_id(gone)
    if gbid == bid:
        fail("the deleted program has the stripped one's build-id")
    core = kernel_core(gone, work)
    if not core:
        fail("no kernel core of %s (core_pattern %r pipes to a program?)" % (
            gone, open("/proc/sys/kernel/core_pattern").read().strip()))
    os.unlink(gone)

    port = free_port()
    server = subprocess.Popen([debuginfod, "-F", srv, "-p", str(port), "-d",
                               os.path.join(work, "db.sqlite"), "-t", "0", "-g", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        url = "http://127.0.0.1:%d" % port
        deadline = time.monotonic() + 60
        while True:  # the server indexes the directory after it starts
            try:
                with urllib.request.urlopen("%s/buildid/%s/debuginfo" % (url, bid), timeout=5) as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if time.monotonic() > deadline or server.poll() is not None:
                fail("debuginfod on port %d never served %s" % (port, bid))
            time.sleep(0.3)
        cache = {"DEBUGINFOD_CACHE_PATH": os.path.join(work, "cache")}

        p, _ = run_backstep(backstep, prog, dict(cache, DEBUGINFOD_URLS=url))
        fs = named(frames(p.stdout))
        if not fs or not fs[0].get("file", "").endswith("prog.c") or not fs[0].get("line"):
            fail("with DEBUGINFOD_URLS: no leaf_in_static with file:line:\n" + p.stdout +
                 p.stderr)
        if "warning" in p.stderr:
            fail("with a working server, a warning: " + p.stderr)
        print("with the server: leaf_in_static at %s:%d" % (fs[0]["file"], fs[0]["line"]))

        p, _ = run_backstep(backstep, prog, dict(cache, DEBUGINFOD_CACHE_PATH=os.path.join(
            work, "cache2")))
        if named(frames(p.stdout)) or not frames(p.stdout):
            fail("without DEBUGINFOD_URLS the static function is named, or no frames:\n" +
                 p.stdout)
        p, _ = run_backstep(backstep, prog, dict(DEBUGINFOD_URLS=url, DEBUGINFOD_CACHE_PATH=
                                                 os.path.join(work, "cache3")),
                            args=["--no-debuginfod"])
        if named(frames(p.stdout)) or not frames(p.stdout):
            fail("--no-debuginfod: the static function is named, or no frames:\n" + p.stdout)
        print("without DEBUGINFOD_URLS, and with --no-debuginfod: not named")

        # A core of a program gone from disk: its executable from the server.
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen("%s/buildid/%s/executable" % (url, gbid),
                                            timeout=5) as r:
                    if r.status == 200:
                        break
            except Exception:
                pass
            if time.monotonic() > deadline:
                fail("debuginfod never served the executable %s" % gbid)
            time.sleep(0.3)
        env = dict(os.environ, DEBUGINFOD_URLS=url,
                   DEBUGINFOD_CACHE_PATH=os.path.join(work, "cache6"))
        p = subprocess.run([backstep, "core", "--json", "--no-cache", core],
                           capture_output=True, text=True, env=env, timeout=60)
        fs = named(frames(p.stdout))
        if not fs or not fs[0].get("line"):
            fail("core of a deleted program, with DEBUGINFOD_URLS: leaf_in_static not "
                 "named:\n" + p.stdout + p.stderr)
        env.pop("DEBUGINFOD_URLS")
        p = subprocess.run([backstep, "core", "--json", "--no-cache", core],
                           capture_output=True, text=True, env=env, timeout=60)
        if named(frames(p.stdout)) or "not found" not in p.stderr:
            fail("core of a deleted program, without DEBUGINFOD_URLS: named, or no "
                 "warning:\n" + p.stdout + p.stderr)
        print("core of a deleted program: its executable fetched by build-id, "
              "leaf_in_static at line %d" % fs[0]["line"])
    finally:
        server.kill()
        server.wait()

    # A dead server: nothing listens on the port.
    dead = free_port()
    p, secs = run_backstep(backstep, prog, {"DEBUGINFOD_URLS": "http://127.0.0.1:%d" % dead,
                                            "DEBUGINFOD_CACHE_PATH": os.path.join(work, "c4")})
    warn = [l for l in p.stderr.splitlines() if "warning: debuginfod" in l]
    if secs > 20 or len(warn) != 1 or not frames(p.stdout):
        fail("dead server: %.1f s, warnings %s, stderr %r" % (secs, warn, p.stderr))
    print("dead server: %.1f s, %s" % (secs, warn[0]))

    # A server that accepts and never answers.
    ls = socket.socket()
    ls.bind(("127.0.0.1", 0))
    ls.listen(16)
    held = []

    def accept():
        while True:
            try:
                c, _ = ls.accept()
            except OSError:
                return
            held.append(c)
    threading.Thread(target=accept, daemon=True).start()
    p, secs = run_backstep(backstep, prog, {
        "DEBUGINFOD_URLS": "http://127.0.0.1:%d" % ls.getsockname()[1],
        "DEBUGINFOD_CACHE_PATH": os.path.join(work, "c5"), "BACKSTEP_DEBUGINFOD_TIMEOUT": "2"})
    ls.close()
    warn = [l for l in p.stderr.splitlines() if "warning: debuginfod" in l]
    if secs > 15 or len(warn) != 1 or "within 2 s" not in warn[0] or not frames(p.stdout):
        fail("silent server: %.1f s, warnings %s, stderr %r" % (secs, warn, p.stderr))
    print("silent server: %.1f s, %s" % (secs, warn[0]))


if __name__ == "__main__":
    main()
