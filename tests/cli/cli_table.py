#!/usr/bin/env python3
"""One table over every subcommand: the same situation gives the same exit
status everywhere (README, "Exit status").

    cli_table.py BACKSTEP SRCDIR WORKDIR

  --help              usage on stdout, nothing on stderr, exit 0
  --version           the meson project's version (backstep --version)
  an unknown option   exit 2, stdout empty
  no operand          exit 2, one line or the usage on stderr
  unusable input      exit 2, one line naming it (a missing file, a
                      process that does not exist; run and record exit
                      127 for a command that cannot be run, as a shell)
  the subject's problems  exit 1 (dump: no FDE at the address; check: an
                      error; core: a walk that ended early, with its line
                      on stderr)
  -n                  --no-symbols wherever it is accepted (pid, core, run,
                      report, record); refused (exit 2) by the others
  SIGTERM             143, after cleaning up: pid leaves its target
                      running and untraced, run and validate and record
                      leave no child behind; SIGINT 130 likewise (pid)
A walk that ends early says so in one stderr line naming the thread.
"""
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

from checks import check, finish

backstep, srcdir, work = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(work, exist_ok=True)
env = dict(os.environ, BACKSTEP_CACHE_DIR="")




def run(*args, timeout=60, **kw):
    return subprocess.run([backstep, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, **kw)


def cc(name, source, *flags):
    src, exe = os.path.join(work, name + ".c"), os.path.join(work, name)
    with open(src, "w") as f:
        f.write(source)
    c = subprocess.run(["cc", "-O1", "-g", "-o", exe, src, *flags], capture_output=True,
                       text=True)
    if not check(c.returncode == 0, f"cc {name}: {c.stderr}"):
        sys.exit(1)
    return exe


SUBCOMMANDS = ["dump", "pid", "core", "run", "validate", "check", "report", "record"]
NO_SYMBOLS = {"pid", "core", "run", "report", "record"}  # where -n is --no-symbols

# ---- --help, --version, unknown options, -n -------------------------------
for sub in SUBCOMMANDS:
    p = run(sub, "--help")
    check(p.returncode == 0 and p.stdout.startswith(f"usage: backstep {sub} ") and
          p.stderr == "", f"{sub} --help: exit {p.returncode}, {p.stdout[:80]!r} {p.stderr!r}")
    p = run(sub, "--no-such-option", "x")
    check(p.returncode == 2 and p.stdout == "" and p.stderr,
          f"{sub} --no-such-option: exit {p.returncode}, {p.stdout[:80]!r}")
    p = run(sub, "-n", "--help")
    if sub in NO_SYMBOLS:
        check(p.returncode == 0 and re.search(r"\[-n\b|-n\|--no-symbols|\[-n\]", p.stdout),
              f"{sub} -n: accepted and shown in the usage: exit {p.returncode} {p.stdout!r}")
    else:
        check(p.returncode == 2, f"{sub} -n: must be refused (it means --no-symbols "
              f"elsewhere): exit {p.returncode}")
for args in (["help"], ["--help"]):
    p = run(*args)
    check(p.returncode == 0 and p.stdout.startswith("usage: backstep COMMAND"), f"{args}")
p = run("nosuchcommand")
check(p.returncode == 2 and p.stderr.count("\n") == 1, f"unknown command: exit {p.returncode}")
with open(os.path.join(srcdir, "meson.build")) as f:
    version = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)
p = run("--version")
check(p.returncode == 0 and p.stdout == f"backstep {version}\n",
      f"--version: {p.stdout!r}, want backstep {version}")

# ---- No operand: usage, exit 2 ---------------------------------------------
for sub in SUBCOMMANDS:
    p = run(sub)
    check(p.returncode == 2 and p.stdout == "" and p.stderr,
          f"{sub} with no operand: exit {p.returncode}, {p.stderr!r}")

# ---- Unusable input: one line naming it, exit 2 ---------------------------
gone = subprocess.Popen(["true"])
gone.wait()
missing = os.path.join(work, "no-such-file")
for args, name, rc in (
        (["dump", missing], missing, 2),
        (["core", missing], missing, 2),
        (["check", missing], missing, 2),
        (["report", missing], missing, 2),
        (["pid", str(gone.pid)], str(gone.pid), 2),
        (["pid", "notapid"], "notapid", 2),
        (["validate", "--", missing], missing, 2),
        (["record", "-p", str(gone.pid)], str(gone.pid), 2),
        (["run", "--", missing], missing, 127),
        (["record", "--", missing], missing, 127)):
    p = run(*args)
    lines = p.stderr.splitlines()
    check(p.returncode == rc and len(lines) == 1 and name in lines[0],
          f"{' '.join(args)}: exit {p.returncode} (want {rc}), stderr {p.stderr!r}")

# ---- The subject's problems: exit 1 ----------------------------------------
hello = cc("hello", "#include <stdio.h>\nint main(void) { puts(\"hi\"); return 0; }\n")
p = run("dump", "--pc", "0x1", hello)
check(p.returncode == 1 and "no FDE covers 0x1" in p.stderr, f"dump --pc 0x1: {p.returncode}")
asm = os.path.join(work, "nocfi.S")
with open(asm, "w") as f:
    f.write('\t.section .note.GNU-stack,"",@progbits\n\t.text\n\t.globl nocfi\n'
            '\t.type nocfi,@function\nnocfi:\n\tpushq %rbx\n\tpopq %rbx\n\tret\n'
            '\t.size nocfi, .-nocfi\n')
gap = os.path.join(work, "gap")
subprocess.run(["cc", "-o", gap, os.path.join(work, "hello.c"), asm], check=True)
p = run("check", gap)
check(p.returncode == 1 and "error: gap" in p.stdout, f"check with a gap: exit {p.returncode}")
p = run("check", hello)
check(p.returncode == 0, f"check of a correct program: exit {p.returncode}, {p.stdout!r}")

# A walk that ends early: the thread's stack pointer is garbage when it
# crashes. Under run (which exits as the program did) and in its kernel
# core (exit 1); either way one line on stderr names the thread and why.
badsp = cc("badsp", r"""
#include <pthread.h>
__attribute__((noinline)) static void lose_stack(void)
{
	__asm__ volatile("mov $0x10, %rsp\n\tmov (%rsp), %rax");
}
static void *worker(void *a) { (void)a; lose_stack(); return 0; }
int main(void)
{
	pthread_t t;
	pthread_create(&t, 0, worker, 0);
	pthread_setname_np(t, "lost");
	pthread_join(t, 0);
	return 0;
}
""", "-pthread")
# (a core keeps the process's name only)
ended = re.compile(r"^backstep: warning: thread (\d+) \((lost|badsp)\): walk ended early after 1 frame, "
                   r"at 0x[0-9a-f]+: .+$", re.M)
p = run("run", "--", badsp)
check(p.returncode == 139 and len(ended.findall(p.stderr)) == 1,
      f"run of a thread with no stack: exit {p.returncode}, stderr {p.stderr!r}")
cores = tempfile.mkdtemp(dir=work)
with open("/proc/sys/kernel/core_pattern") as f:
    pattern = f.read().strip()
if pattern.startswith("|"):
    check(False, f"core_pattern pipes cores to {pattern!r}: no kernel core to read here")
else:
    crasher = subprocess.Popen(["sh", "-c", 'ulimit -c unlimited; exec "$0"', badsp], cwd=cores,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    crasher.wait()
    # Where core_pattern puts it: %p the pid, %e the name, anything else
    # (time, host, ...) matched; relative to the crash's directory; with
    # core_uses_pid a ".PID" may follow.
    glob_pat = re.sub(r"%(.)", lambda m: {"p": str(crasher.pid), "P": str(crasher.pid),
                                          "e": "badsp", "%": "%"}.get(m.group(1), "*"), pattern)
    import glob
    found = glob.glob(os.path.join(cores, glob_pat)) + glob.glob(os.path.join(cores, glob_pat)
                                                                 + ".*")
    if check(len(found) >= 1, f"no kernel core written for {crasher.pid} (core_pattern "
             f"{pattern!r}, looked for {glob_pat!r})"):
        p = run("core", found[0], badsp)
        check(p.returncode == 1 and len(ended.findall(p.stderr)) == 1,
              f"core of a thread with no stack: exit {p.returncode}, stderr {p.stderr!r}")
        for c in found:
            os.unlink(c)

# ---- -n: no names -----------------------------------------------------------
sleeper = cc("sleeper", r"""
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#define NTHREADS 48
__attribute__((noinline)) static int deep(int n)
{
	if (n == 0) { for (;;) pause(); }
	return deep(n - 1) + 1;
}
static void *worker(void *a) { return (void *)(long)deep((int)(long)a); }
int main(void)
{
	pthread_t t;
	for (long i = 0; i < NTHREADS; i++)
		pthread_create(&t, 0, worker, (void *)(30 + i));
	puts("ready");
	fflush(stdout);
	deep(10);
	return 0;
}
""", "-pthread")


def start_sleeper():
    proc = subprocess.Popen([sleeper], stdout=subprocess.PIPE, text=True)
    check(proc.stdout.readline() == "ready\n", "sleeper did not start")
    time.sleep(0.2)
    return proc


def untraced_and_running(pid):
    """Every thread of PID: no tracer, not stopped."""
    bad = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                st = f.read()
        except OSError:
            continue
        tracer = re.search(r"^TracerPid:\s*(\d+)", st, re.M).group(1)
        state = re.search(r"^State:\s*(\S)", st, re.M).group(1)
        if tracer != "0" or state in "tT":
            bad.append((tid, tracer, state))
    return bad


target = start_sleeper()
try:
    p = run("pid", "-n", str(target.pid))
    check(p.returncode == 0 and p.stdout.count("Thread ") == 49 and " in deep" not in p.stdout
          and re.search(r" in sleeper\+0x[0-9a-f]+ \[cfi\]$", p.stdout, re.M),
          f"pid -n: exit {p.returncode}, {p.stdout[:300]!r}")
    p = run("pid", str(target.pid))
    check(p.returncode == 0 and " in deep" in p.stdout, f"pid: exit {p.returncode}")

    # ---- SIGTERM (and SIGINT) to pid: 143 (130), the target let go ----------
    seen = {}
    for sig, want in ((signal.SIGTERM, 143), (signal.SIGINT, 130)):
        for delay in (0, 0.002, 0.005, 0.01, 0.02, 0.04, 0.08):
            b = subprocess.Popen([backstep, "pid", str(target.pid)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env)
            time.sleep(delay)
            b.send_signal(sig)
            out, err = b.communicate(timeout=60)
            seen.setdefault(sig, set()).add(b.returncode)
            # -SIG: it came before main() took the signals (exec not done):
            # the shell sees 128 + SIG all the same.
            check(b.returncode in (want, 0, -sig), f"pid, {sig.name} after {delay} s: exit "
                  f"{b.returncode}, {err[-300:]!r}")
            time.sleep(0.05)
            bad = untraced_and_running(target.pid)
            check(not bad and target.poll() is None,
                  f"pid, {sig.name} after {delay} s: target left traced or stopped: {bad}")
        check(want in seen[sig], f"pid: {sig.name} never arrived during a walk: {seen[sig]}")
finally:
    target.kill()
    target.wait()


def alive(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return re.search(r"^State:\s*(\S)", f.read(), re.M).group(1) not in "ZX"
    except OSError:
        return False


def children_of(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, ValueError, IndexError):
                pass
    return out


# ---- SIGTERM to the subcommands that run a program -------------------------
spinner = cc("spinner", r"""
__attribute__((noinline)) static void spin(volatile unsigned long *n) { for (;;) ++*n; }
int main(void) { volatile unsigned long n = 0; spin(&n); return 0; }
""")
for args, what in ((["run", "--", sleeper], "run"),
                   (["validate", "-q", "--", sleeper], "validate"),
                   (["record", "--format", "folded", "--", spinner], "record")):
    b = subprocess.Popen([backstep, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    time.sleep(1.5 if what != "validate" else 3)
    kids = children_of(b.pid)
    b.send_signal(signal.SIGTERM)
    out, err = b.communicate(timeout=120)
    time.sleep(0.2)
    left = [k for k in kids if alive(k)]
    check(b.returncode == 143 and kids and not left,
          f"{what}: SIGTERM: exit {b.returncode}, children {kids}, left running {left}, "
          f"stderr {err[-400:]!r}")
    if what == "run":
        # The program died of the SIGTERM passed on: its stacks come first.
        check(re.search(r"^Thread \d+ \(sleeper\) received SIGTERM", out, re.M) and
              " in deep" in out, f"run: SIGTERM: the program's stacks: {out[:300]!r}")
    if what == "record":
        check(re.search(r"^spinner;.*spin \d+$", out, re.M),
              f"record: SIGTERM: the profile is written: {out[:300]!r}")

# ---- SIGTERM to the others: 143 at once -------------------------------------
# Each is kept busy: dump and check writing into a pipe nobody reads, report
# reading a pipe nobody writes. (core reads only files, quickly: it has the
# same default handling, main()'s.)
libc = subprocess.run(["cc", "-print-file-name=libc.so.6"], capture_output=True,
                      text=True).stdout.strip()
for args, what in ((["dump", "--rows", libc], "dump"),
                   (["check", "-v", "--json", os.path.dirname(libc)], "check"),
                   (["report", "-"], "report")):
    rd, wr = os.pipe()
    b = subprocess.Popen([backstep, *args], stdin=rd, stdout=wr, stderr=subprocess.PIPE,
                         env=env)
    os.close(rd)
    time.sleep(1.0)
    check(b.poll() is None, f"{what}: ended before the signal (exit {b.returncode})")
    b.send_signal(signal.SIGTERM)
    try:
        b.wait(timeout=30)
    except subprocess.TimeoutExpired:
        b.kill()
        b.wait()
    os.close(wr)
    check(b.returncode == 143, f"{what}: SIGTERM: exit {b.returncode}")

finish("cli table")
