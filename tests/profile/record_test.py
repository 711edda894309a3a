#!/usr/bin/env python3
"""backstep record (tools/record.c) against the real call graphs of the
programs it samples.

  record_test.py BACKSTEP REC_TARGET PERF WORKDIR FIXTURE...

REC_TARGET (rec_target.c) has a call graph known in advance: two threads
and a child process forked every 100 ms, no tail calls. FIXTURE programs
are fixture builds (fixtures/), which run for a millisecond: each is run
30 times by a shell under one recording, so the recording follows fork and
exec too.

A stack is judged by its caller -> callee pairs (machine frames,
--no-inline, JSON output): where both frames are in the program's own
file, the pair must be a call edge of the program (`objdump -d`: a call or
a jump from the caller to the callee's entry), or, failing that, a pair
`perf record --call-graph dwarf` + `backstep report` saw in a run of the
same command (tail calls: a stack skips the function that jumped). Frames
in libc, ld.so, the vDSO and the kernel are allowed anywhere. Function
names are compared without parameter lists and without clone suffixes
(.cold, .constprop.N, ...).

Checked:
  record -- REC_TARGET     every function of its graph appears (the child's
                           too: inherit follows fork), every pair is an
                           edge, few walks stop early; folded counts and
                           JSON lines add up to the samples the summary
                           counts
  record -p PID            the same of a running REC_TARGET; it is never
                           stopped or traced meanwhile and still runs after;
                           children it forks after the attach are followed
  record -d SECONDS -- CMD ends in time, and CMD with it
  record -- FIXTURE loop   every pair of the fixture's frames is an edge
  errors                   a PID that does not exist, a command that does
                           not exist (exit 127), no target: one line each;
                           perf_event_open refused as an unprivileged user
                           (setpriv, when run as root with
                           perf_event_paranoid 2 or more): the setting and
                           the value it needs
If backstep record cannot sample here at all (perf_event_open refused) the
test fails with backstep's reason: never a skip.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

REC_FUNCS = {"main", "spin_main", "rec", "leaf", "thread_main", "spin_thread", "leaf_thread",
             "child_main", "child_work"}
SUMMARY = re.compile(r"backstep record: (\d+) samples read, (\d+) walked to the end, "
                     r"(\d+) truncated.*; (\d+) filtered out; (\d+) lost")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, timeout=120, **kw):
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        fail("%s: still running after %d s (hangs?)" % (" ".join(cmd), timeout))


def summary(name, r):
    """The summary line's numbers: samples, complete, truncated, filtered, lost."""
    err = r.stderr.decode(errors="replace")
    m = SUMMARY.search(err)
    if r.returncode != 0 or not m:
        fail("%s: backstep record failed (%d): %s" % (name, r.returncode, err[-800:]))
    return [int(x) for x in m.groups()]


def norm(name):
    """A function name without its parameters and clone suffixes."""
    name = re.sub(r"\s*\[clone [^\]]*\]", "", name)
    depth = 0
    for i, c in enumerate(name):
        if c in "<":
            depth += 1
        elif c in ">":
            depth -= 1
        elif c == "(" and depth == 0 and i > 0:
            name = name[:i]
            break
    return re.sub(r"\.(cold|part|constprop|isra|lto_priv|localalias)(\.\d+)*.*$", "", name)


EDGES = {}


def static_edges(prog):
    """(caller, callee) for every direct call or jump from one function of
    PROG to the entry of another (objdump -d -C)."""
    if prog in EDGES:
        return EDGES[prog]
    r = run(["objdump", "-d", "-C", "--no-show-raw-insn", prog])
    if r.returncode:
        fail("objdump -d %s: %s" % (prog, r.stderr.decode()[-300:]))
    edges, cur = set(), None
    head = re.compile(r"^[0-9a-f]+ <(.*)>:$")
    insn = re.compile(r"^\s+[0-9a-f]+:\s+(call|jmp|j[a-z]+)\w*\s+[0-9a-f]+ <(.*)>$")
    for line in r.stdout.decode(errors="replace").splitlines():
        m = head.match(line)
        if m:
            cur = norm(m.group(1))
            continue
        m = insn.match(line)
        if m and cur and "+0x" not in m.group(2) and "@plt" not in m.group(2):
            edges.add((cur, norm(m.group(2))))
    EDGES[prog] = edges
    return edges


def stacks(text):
    """JSON Lines samples -> [(sample, [(module, function or None)])]."""
    out = []
    for line in text.splitlines():
        if not line:
            continue
        s = json.loads(line)
        out.append((s, [(f.get("module"), norm(f["function"]) if "function" in f else None)
                        for f in s["frames"]]))
    return out


def bad_pairs(prog, samples, extra=frozenset()):
    """Pairs of PROG's own frames that are no edge of PROG: {pair: count}."""
    edges = static_edges(prog) | extra
    real = os.path.realpath(prog)
    bad = {}
    for _, frames in samples:
        # The first user frame: after the kernel's, when the sample came
        # from a fault (a forked child's first run through a PLT stub).
        first = 0
        while first < len(frames) and frames[first][0] == "[kernel.kallsyms]":
            first += 1
        for i in range(len(frames) - 1):
            (m1, callee), (m2, caller) = frames[i], frames[i + 1]
            if m1 is None or m2 is None or os.path.realpath(m1) != real or \
                    os.path.realpath(m2) != real:
                continue
            if callee is None and i == first:
                continue  # the sample landed in unnamed code (a PLT stub)
            if (caller, callee) not in edges:
                bad[(caller, callee)] = bad.get((caller, callee), 0) + 1
    return bad


def perf_pairs(perf, backstep, workdir, cmd, prog):
    """The pairs of PROG's frames in a perf recording of CMD, as backstep
    report names them."""
    data = os.path.join(workdir, os.path.basename(prog) + ".perf.data")
    r = run([perf, "record", "-q", "-e", "cpu-clock", "-F", "10000", "--call-graph", "dwarf",
             "-o", data, "--"] + cmd)
    if r.returncode not in (0, 1) or not os.path.exists(data):
        return None, "perf record failed: " + r.stderr.decode(errors="replace")[-300:]
    r = run([backstep, "report", "--no-inline", "--format", "json", data])
    if r.returncode:
        return None, "backstep report failed: " + r.stderr.decode(errors="replace")[-300:]
    real = os.path.realpath(prog)
    pairs = set()
    for _, frames in stacks(r.stdout.decode(errors="replace")):
        for (m1, callee), (m2, caller) in zip(frames, frames[1:]):
            if m1 and m2 and os.path.realpath(m1) == real == os.path.realpath(m2):
                pairs.add((caller, callee))
    return pairs, None


def check_pairs(name, prog, samples, perf, backstep, workdir, cmd):
    bad = bad_pairs(prog, samples)
    if not bad:
        return 0
    extra, why = perf_pairs(perf, backstep, workdir, cmd, prog)
    if extra is None:
        fail("%s: caller -> callee pairs that are no call edge of %s: %s (and no perf "
             "recording to compare with: %s)" % (name, prog, sorted(bad.items()), why))
    bad = bad_pairs(prog, samples, frozenset(extra))
    if bad:
        fail("%s: caller -> callee pairs neither %s's call edges nor perf's stacks have: %s"
             % (name, os.path.basename(prog), sorted(bad.items())))
    return 1


def functions(prog, samples):
    real = os.path.realpath(prog)
    return {fn for _, frames in samples for m, fn in frames
            if m and fn and os.path.realpath(m) == real}


def check_rec_target(name, target, out, n, truncated, min_pids, missing):
    """The JSON Lines OUT of a record of rec_target: a line per sample (N
    by the summary), every function of its graph seen, samples of MIN_PIDS
    processes at least (else MISSING says what is missing), few walks
    stopped early. Returns the samples and their pids."""
    samples = stacks(out.decode(errors="replace"))
    if len(samples) != n:
        fail("%s: %d JSON lines, the summary says %d samples" % (name, len(samples), n))
    seen = functions(target, samples)
    if not REC_FUNCS <= seen:
        fail("%s: %d samples, none in %s (seen: %s)"
             % (name, n, sorted(REC_FUNCS - seen), sorted(seen)))
    pids = {s["pid"] for s, _ in samples}
    if len(pids) < min_pids:
        fail("%s: samples of %d process(es); %s" % (name, len(pids), missing))
    if truncated > n // 10 + 3:
        fail("%s: %d of %d walks stopped early" % (name, truncated, n))
    return samples, pids


def record_cmd(backstep, target, perf, workdir):
    """record -- REC_TARGET: JSON and folded."""
    name = "record -- rec_target"
    r = run([backstep, "record", "--no-inline", "--format", "json", "--", target, "2"])
    n, complete, truncated, _, lost = summary(name, r)
    samples, pids = check_rec_target(name, target, r.stdout, n, truncated, 3,
                                     "the forked children are missing")
    via_perf = check_pairs(name, target, samples, perf, backstep, workdir, [target, "2"])
    print("%s: %d samples of %d processes, %d walked to the end, %d lost; every function "
          "of its graph seen, every pair an edge%s" % (name, n, len(pids), complete, lost,
                                                       " (or perf's)" if via_perf else ""))
    r = run([backstep, "record", "--format", "folded", "--", target, "1"])
    n, *_ = summary(name + " --format folded", r)
    total = sum(int(l.rsplit(" ", 1)[1]) for l in r.stdout.decode().splitlines() if l.strip())
    if total != n or n == 0:
        fail("%s --format folded: the counts add up to %d, the summary says %d samples"
             % (name, total, n))
    print("%s --format folded: %d samples, the counts add up" % (name, n))


def proc_state(pid):
    """(state letter, TracerPid) from /proc/PID/status, or None."""
    try:
        with open("/proc/%d/status" % pid) as f:
            st = dict(l.split(":", 1) for l in f.read().splitlines() if ":" in l)
        return st["State"].split()[0], int(st["TracerPid"])
    except (OSError, KeyError, ValueError):
        return None


def record_pid(backstep, target, perf, workdir):
    name = "record -p"
    victim = subprocess.Popen([target, "30"], stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        t0 = time.time()
        # The output to a file: a pipe nobody reads while it runs would
        # stop it at the first 64 KiB.
        out_path = os.path.join(workdir, "record-p.json")
        rec = subprocess.Popen([backstep, "record", "-d", "1.5", "--no-inline", "--format", "json",
                                "-o", out_path, "-p", str(victim.pid)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        states = set()
        while rec.poll() is None and time.time() - t0 < 30:
            st = proc_state(victim.pid)
            if st:
                states.add(st)
            time.sleep(0.02)
        try:
            _, err = rec.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            rec.kill()
            fail("%s: still running 30 s after -d 1.5" % name)
        elapsed = time.time() - t0
        with open(out_path, "rb") as f:
            out = f.read()
        r = subprocess.CompletedProcess(rec.args, rec.returncode, out, err)
        n, complete, truncated, _, lost = summary(name, r)
        if victim.poll() is not None:
            fail("%s: the target ended (status %s) while or after it was sampled"
                 % (name, victim.returncode))
        stopped = {s for s in states if s[0] in "tT" or s[1] != 0}
        if stopped:
            fail("%s: the target was stopped or traced while sampled: %s" % (name, stopped))
        if elapsed > 20:  # the walks left at the end take a while on a busy machine
            fail("%s: -d 1.5 took %.1f s" % (name, elapsed))
        samples, pids = check_rec_target(name, target, out, n, truncated, 2,
                                         "children forked after the attach are missing")
        via_perf = check_pairs(name, target, samples, perf, backstep, workdir, [target, "2"])
        print("%s: %d samples of %d processes in %.1f s, %d walked to the end, %d lost; never "
              "stopped or traced, still running; every function seen, every pair an edge%s"
              % (name, n, len(pids), elapsed, complete, lost, " (or perf's)" if via_perf else ""))
    finally:
        victim.kill()
        victim.wait()


def record_duration(backstep, target):
    name = "record -d 1 -- rec_target 60"
    t0 = time.time()
    r = run([backstep, "record", "-d", "1", "--format", "json", "--", target, "60"], timeout=30)
    elapsed = time.time() - t0
    n, *_ = summary(name, r)
    if elapsed > 20:  # the command runs 60 s if -d is not obeyed
        fail("%s: took %.1f s" % (name, elapsed))
    pids = {json.loads(l)["pid"] for l in r.stdout.decode().splitlines() if l.strip()}
    # The command is ended; a child it forked just before lives its 30 ms
    # on (an orphan then), longer on a loaded machine: give those 3 s.
    for _ in range(30):
        alive = [p for p in pids if proc_state(p) and proc_state(p)[0] not in "ZX"]
        if not alive:
            break
        time.sleep(0.1)
    if not n or alive:
        fail("%s: %d samples; processes still running after it: %s" % (name, n, alive))
    print("%s: ended after %.1f s with %d samples; the command ended with it" % (name, elapsed, n))


def record_fixture(backstep, perf, workdir, prog):
    name = "record -- %s x30" % os.path.basename(prog)
    if not os.path.exists(prog):
        fail("%s: %s is not built (fixtures/meson.build builds it)" % (name, prog))
    cmd = ["sh", "-c", 'i=0; while [ $i -lt 30 ]; do "$0"; i=$((i+1)); done', prog]
    r = run([backstep, "record", "-F", "10000", "--no-inline", "--format", "json", "--"] + cmd)
    n, complete, truncated, _, lost = summary(name, r)
    samples = stacks(r.stdout.decode(errors="replace"))
    if len(samples) != n:
        fail("%s: %d JSON lines, the summary says %d samples" % (name, len(samples), n))
    comm = os.path.basename(prog)[:15]
    mine = [s for s in samples if s[0]["comm"] == comm]
    if not mine:
        fail("%s: %d samples, none of %s (exec not followed?)" % (name, n, comm))
    via_perf = check_pairs(name, prog, samples, perf, backstep, workdir, cmd)
    print("%s: %d samples, %d of the fixture's processes (%d frames in its code), %d lost; "
          "every pair an edge%s" % (name, n, len(mine),
                                    sum(1 for _, f in mine for m, _ in f
                                        if m and os.path.realpath(m) == os.path.realpath(prog)),
                                    lost, " (or perf's)" if via_perf else ""))


def one_line_error(name, r, rc, words):
    err = r.stderr.decode(errors="replace").strip()
    if r.returncode != rc or len(err.splitlines()) != 1 or not all(w in err for w in words):
        fail("%s: exit %d (want %d), stderr %r (want one line with %s)"
             % (name, r.returncode, rc, err, words))
    print("%s: exit %d, %s" % (name, rc, err))


def errors(backstep):
    p = subprocess.Popen(["true"])
    p.wait()
    one_line_error("record -p (a finished process)",
                   run([backstep, "record", "-p", str(p.pid)]), 2, ["no such process"])
    one_line_error("record -- /nonexistent",
                   run([backstep, "record", "--", "/nonexistent/program"]), 127, ["cannot run"])
    one_line_error("record (no target)", run([backstep, "record"]), 2, ["-p PID or -- CMD"])
    try:
        with open("/proc/sys/kernel/perf_event_paranoid") as f:
            paranoid = int(f.read())
    except (OSError, ValueError):
        paranoid = None
    setpriv = shutil.which("setpriv")
    if os.geteuid() == 0 and setpriv and paranoid is not None and paranoid >= 2:
        nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all"]
        one_line_error("record --kernel as an unprivileged user",
                       run(nobody + [backstep, "record", "--kernel", "--", "true"]), 1,
                       ["perf_event_paranoid is %d" % paranoid, "1 or lower"])
    else:
        print("(the refusal message is not checked: it needs root, setpriv and "
              "perf_event_paranoid >= 2 to run as a user who is refused)")


def main():
    if len(sys.argv) < 5:
        fail("usage: record_test.py BACKSTEP REC_TARGET PERF WORKDIR FIXTURE...")
    backstep, target, perf, workdir = sys.argv[1:5]
    os.makedirs(workdir, exist_ok=True)
    probe = run([backstep, "record", "--format", "folded", "--", target, "0.2"])
    if probe.returncode != 0:
        fail("backstep record cannot sample here: " +
             probe.stderr.decode(errors="replace").strip()[-500:])
    record_cmd(backstep, target, perf, workdir)
    record_pid(backstep, target, perf, workdir)
    record_duration(backstep, target)
    for prog in sys.argv[5:]:
        record_fixture(backstep, perf, workdir, prog)
    errors(backstep)


if __name__ == "__main__":
    main()
