#!/usr/bin/env python3
"""Rough edges of the command line, each a case a user met:

  cli_errors.py BACKSTEP

  pid of backstep itself     one line saying so, exit 2 (not "cannot attach")
  pid of a zombie            one line saying so, exit 2
  dump --pc 1149             hexadecimal as nm prints it: as --pc 0x1149
  validate --only NOSUCH     an error (exit 2), not 0 instructions and exit 0
  validate -- /nonexistent   the message names the program
  validate --driver          an unknown driver is one line, exit 2; the
                             in-process driver asked for on a static
                             program says why it cannot run it, exit 2;
                             by default that program runs under ptrace
                             with a note saying why
  run -f                     a forked child about to die of SIGSEGV has its
                             stack printed under its own process id; the
                             run ends with the program's status; without
                             -f the child is not traced
"""
import os
import subprocess
import sys
import time

backstep = sys.argv[1]
fails = 0


def check(cond, what):
    global fails
    if not cond:
        fails += 1
        print("FAIL: " + what)


def run(*args, **kw):
    return subprocess.run([backstep, *args], capture_output=True, text=True, timeout=60, **kw)


# pid of itself: exec'd by a shell whose $$ it inherits.
p = subprocess.run(["sh", "-c", 'exec "$0" pid "$$"', backstep], capture_output=True, text=True,
                   timeout=60)
check(p.returncode == 2 and len(p.stderr.splitlines()) == 1 and "backstep itself" in p.stderr,
      "pid of itself: exit %d, %r" % (p.returncode, p.stderr))

# pid of a zombie: a child that exited, not reaped yet.
z = os.fork()
if z == 0:
    os._exit(0)
time.sleep(0.3)
p = run("pid", str(z))
os.waitpid(z, 0)
check(p.returncode == 2 and p.stderr == "backstep: %d: a zombie: it has exited (its parent has "
      "not reaped it), no threads are left to walk\n" % z,
      "pid of a zombie: exit %d, %r" % (p.returncode, p.stderr))

# dump --pc: hexadecimal with or without 0x.
a, b = run("dump", "--pc", "1149", sys.executable), run("dump", "--pc", "0x1149", sys.executable)
check(a.returncode == b.returncode and a.stdout == b.stdout and a.stderr == b.stderr and
      (a.stdout or a.stderr), "dump --pc 1149 and 0x1149 differ: %r / %r" % (a.stderr, b.stderr))
p = run("dump", "--pc", "12g4", sys.executable)
check(p.returncode == 2 and "not an address" in p.stderr, "dump --pc 12g4: %r" % p.stderr)

# validate: a name that matches nothing, a program that is not there.
p = run("validate", "--only", "no_such_function_anywhere", "--", "/bin/true")
check(p.returncode == 2 and "backstep: --only: nothing named no_such_function_anywhere ran" in
      p.stderr, "validate --only NOSUCH: exit %d, %r" % (p.returncode, p.stderr))
p = run("validate", "--", "/nonexistent/prog")
check(p.returncode == 2 and "/nonexistent/prog: cannot run: No such file or directory" in
      p.stderr, "validate -- /nonexistent: exit %d, %r" % (p.returncode, p.stderr))

# validate's remote options: one line naming the problem, exit status 2.
if "not built" not in run("validate", "--help").stderr:
    for args, want in [(["--remote", "nohostport"], "--remote nohostport: not HOST:PORT"),
                       (["--remote", "1:2", "--qemu"], "--remote and --qemu: choose one"),
                       (["--cpu", "max"], "--cpu, --sysroot"),
                       (["--qemu", "--cpu", "max", "--timeout", "0"], "not a number of seconds"),
                       (["--qemu"], "/nonexistent/prog: no such program")]:
        if want == "--cpu, --sysroot":
            want = "--sysroot, --cpu and --timeout go with --remote or --qemu"
        prog = "/bin/true" if args[0:2] == ["--remote", "nohostport"] else "/nonexistent/prog"
        p = run("validate", *args, "--", prog)
        check(p.returncode == 2 and want in p.stderr and len(p.stderr.splitlines()) == 1,
              "validate %s: exit %d, %r" % (" ".join(args), p.returncode, p.stderr))
# validate --driver: unknown, and the in-process one where it cannot run.
p = run("validate", "--driver", "gdb", "--", "/bin/true")
check(p.returncode == 2 and "backstep: --driver: 'gdb' is not inproc or ptrace" in p.stderr,
      "validate --driver gdb: exit %d, %r" % (p.returncode, p.stderr))

# run -f: a child that crashes while the parent waits for it.
import re
import tempfile
work = tempfile.mkdtemp(prefix="bk_cli_")
static_src, static_prog = os.path.join(work, "static.c"), os.path.join(work, "static")
with open(static_src, "w") as f:
    f.write("int main(void) { return 0; }\n")
if subprocess.run(["cc", "-static", "-O0", static_src, "-o", static_prog]).returncode == 0:
    p = run("validate", "--driver", "inproc", "--", static_prog)
    check(p.returncode == 2 and "--driver inproc: " + static_prog + " is a static program" in
          p.stderr, "validate --driver inproc STATIC: exit %d, %r" % (p.returncode, p.stderr))
    p = run("validate", "--json", "--", static_prog)
    check(p.returncode == 0 and '"driver": "ptrace"' in p.stdout and
          "is a static program (no dynamic loader to preload the checker): the ptrace driver "
          "ran it" in p.stdout, "validate STATIC: exit %d, %r %r" % (p.returncode, p.stdout[:300],
                                                                     p.stderr))
else:
    check(False, "cc -static failed: the static-program cases need libc.a (libc6-dev)")
src, prog = os.path.join(work, "forkcrash.c"), os.path.join(work, "forkcrash")
with open(src, "w") as f:
    f.write("""#include <sys/wait.h>
#include <unistd.h>
__attribute__((noinline)) static void child_crash(int *p) { *p = 1; }
int main(void) {
  pid_t c = fork();
  if (c == 0) { child_crash((int *)8); _exit(0); }
  int st; waitpid(c, &st, 0); return WIFSIGNALED(st) ? 3 : 4;
}
""")
c = subprocess.run(["cc", "-O1", "-g", "-o", prog, src], capture_output=True, text=True)
check(c.returncode == 0, "cc forkcrash: " + c.stderr)
if c.returncode == 0:
    p = run("run", "-f", "--no-cache", "--", prog)
    m = re.search(r"backstep: (\d+): Segmentation fault \(signal 11\) in thread (\d+); stacks:",
                  p.stderr)
    check(p.returncode == 3 and m and m.group(1) == m.group(2) and
          re.search(r"^Thread %s \(forkcrash\) received SIGSEGV" % (m.group(1) if m else "x"),
                    p.stdout, re.M) and "in child_crash" in p.stdout,
          "run -f: exit %d, stderr %r, stdout %r" % (p.returncode, p.stderr, p.stdout[:300]))
    p = run("run", "--no-cache", "--", prog)
    check(p.returncode == 3 and p.stdout == "" and p.stderr == "",
          "run without -f: exit %d, %r %r" % (p.returncode, p.stdout[:200], p.stderr))

print("cli errors: %d failed" % fails)
sys.exit(1 if fails else 0)
