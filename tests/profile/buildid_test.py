#!/usr/bin/env python3
"""backstep report on a recording whose program was rebuilt since.

  buildid_test.py PERF BACKSTEP CC WORKDIR

A small program (written here) is built with one build-id and recorded
with `perf record --call-graph dwarf` three ways: to a file (the build-ids
go to HEADER_BUILD_ID), to a stream with --buildid-mmap (each MMAP2
carries its file's build-id) and to a plain stream (no build-id at all).
Then it is built again at the same path with another build-id and
another layout (a function first: every address moves), and each
recording is reported again.

  before   the program's frames are named (bid_leaf, bid_middle, main);
           no file differs;
  after    file and --buildid-mmap: the summary names the program as
           differing, once ("1 file differs from the recording (build-id),
           not used: PATH"); no frame is named from the new file: no
           name of the program appears, the PCs that were in the program
           have no module and no function, every sample interrupted there
           ends there ("build-id differs"), and the samples are all there;
           frames in other files (libc, where the program spends a
           while on purpose) are still named;
           plain stream: perf recorded nothing to hold the file against:
           no file is said to differ (the new file is used as it is).

perf missing or perf_event_open refused fails the test: never a skip.
"""
import json
import os
import subprocess
import sys

SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef SHIFT
__attribute__((noinline)) long only_in_new(long x)
{
	long s = 0;
	for (long i = 0; i < x; i++)
		s += (i * 7) ^ (s >> 2) ^ (s << 3) ^ (i >> 1);
	return s;
}
#endif
__attribute__((noinline)) long bid_leaf(long n)
{
	long s = 0;
	for (long i = 0; i < n; i++)
		s += i ^ (s >> 3);
	return s;
}
__attribute__((noinline)) long bid_middle(long n)
{
	long r = bid_leaf(n);
	__asm__ volatile("" ::: "memory");
	return r + 1;
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 30000000;
	printf("%ld\n", bid_middle(n));
	/* Time in libc, so that samples interrupted there (named from libc
	 * whatever became of the program) are in every recording. */
	static char buf[1 << 20];
	void *(*volatile fill)(void *, int, size_t) = memset;
	for (int i = 0; i < 300; i++)
		fill(buf, i, sizeof(buf));
	return buf[12345] == 7;
}
"""

NAMES = ("bid_leaf", "bid_middle", "only_in_new", "main")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **kw)


def build(cc, src, exe, build_id, shift):
    r = run([cc, "-O1", "-g", "-fno-omit-frame-pointer", "-Wl,--build-id=0x" + build_id] +
            (["-DSHIFT"] if shift else []) + [src, "-o", exe + ".new"])
    if r.returncode:
        fail("%s failed: %s" % (cc, r.stderr.decode()[-500:]))
    os.replace(exe + ".new", exe)  # the same path, another file


def report(backstep, data):
    r = run([backstep, "report", "--format", "json", data])
    if r.returncode:
        fail("backstep report %s failed (%d): %s" % (data, r.returncode, r.stderr.decode()))
    samples = [json.loads(l) for l in r.stdout.decode().splitlines() if l]
    return samples, r.stderr.decode()


def named(samples, exe):
    """(pc, function) of every frame the program's module holds."""
    return [(f["pc"], f.get("function")) for s in samples for f in s["frames"]
            if f.get("module") == exe]


def check_before(what, samples, err, exe):
    frames = named(samples, exe)
    if not any(fn == "bid_leaf" for _, fn in frames):
        fail("%s, before: no frame named bid_leaf in %s (%d samples): %s"
             % (what, exe, len(samples), err))
    if "from the recording (build-id)" in err or "build-id differs" in err:
        fail("%s, before: a file is said to differ: %s" % (what, err))
    return {pc for pc, _ in frames}, {(s["tid"], s["time"]) for s in samples if s["frames"] and
                                      s["frames"][0].get("module") == exe}


def check_after(what, samples, err, exe, before, pcs, first_in_exe):
    line = "backstep report: 1 file differs from the recording (build-id), not used: " + exe
    if err.count(line) != 1 or err.count("from the recording (build-id)") != 1:
        fail("%s: the summary does not name %s once as differing:\n%s" % (what, exe, err))
    if len(samples) != len(before):
        fail("%s: %d samples, %d before" % (what, len(samples), len(before)))
    for s in samples:
        for f in s["frames"]:
            if f.get("function") in NAMES or f.get("module") == exe:
                fail("%s: a frame named from the new file: %s" % (what, f))
            if f["pc"] in pcs and ("module" in f or "function" in f):
                fail("%s: a PC of the old program named: %s" % (what, f))
        if (s["tid"], s["time"]) in first_in_exe and len(s["frames"]) != 1:
            fail("%s: a sample interrupted in the old program goes on: %s" % (what, s))
    m = [l for l in err.splitlines() if "build-id differs: " in l]
    if not m:
        fail("%s: no walk ended with 'build-id differs':\n%s" % (what, err))
    others = [f.get("function") for s in samples for f in s["frames"]
              if "libc" in f.get("module", "")]
    if not any(others):
        fail("%s: no frame in libc was named" % what)
    print("%s: %d samples, %d interrupted in the rebuilt program end there; %s"
          % (what, len(samples), len(first_in_exe), m[0].split("(", 1)[-1].split(")")[0]))


def main():
    if len(sys.argv) != 5:
        fail("usage: buildid_test.py PERF BACKSTEP CC WORKDIR")
    perf, backstep, cc, workdir = sys.argv[1:5]
    os.makedirs(workdir, exist_ok=True)
    src = os.path.join(workdir, "bid_prog.c")
    exe = os.path.realpath(os.path.join(workdir, "bid_prog"))
    with open(src, "w") as f:
        f.write(SOURCE)
    build(cc, src, exe, "11" * 20, False)

    rec = [perf, "record", "-q", "--no-buildid-cache", "-e", "cpu-clock", "-c", "100000",
           "--call-graph", "dwarf"]
    data = {k: os.path.join(workdir, k + ".data") for k in ("file", "mmap", "pipe")}
    r = run(rec + ["-o", data["file"], "--", exe])
    if r.returncode:
        fail("perf record cannot sample here (perf_event_open refused? "
             "/proc/sys/kernel/perf_event_paranoid must be 2 or lower, or run as root): "
             + r.stderr.decode()[-300:])
    for k, extra in (("mmap", ["--buildid-mmap"]), ("pipe", [])):
        with open(data[k], "wb") as out:
            r = subprocess.run(rec + extra + ["-o", "-", "--", exe], stdout=out,
                               stderr=subprocess.PIPE)
        if r.returncode:
            fail("perf record %s -o - failed: %s" % (" ".join(extra), r.stderr.decode()[-300:]))
    ids = run([perf, "buildid-list", "-i", data["file"]]).stdout.decode()
    if ("11" * 20 + " " + exe) not in ids:
        fail("perf recorded no build-id for %s:\n%s" % (exe, ids))

    before = {}
    for k in data:
        samples, err = report(backstep, data[k])
        before[k] = (samples,) + check_before(k, samples, err, exe)

    build(cc, src, exe, "22" * 20, True)
    for k in ("file", "mmap"):
        samples, err = report(backstep, data[k])
        what = {"file": "file (HEADER_BUILD_ID)", "mmap": "stream, --buildid-mmap"}[k]
        check_after(what, samples, err, exe, before[k][0], before[k][1], before[k][2])
    samples, err = report(backstep, data["pipe"])
    if ("from the recording (build-id)" in err or "build-id differs" in err or
            len(samples) != len(before["pipe"][0])):
        fail("plain stream: %d samples (%d before), and no file may be said to differ:\n%s"
             % (len(samples), len(before["pipe"][0]), err))
    print("plain stream: perf recorded no build-id; nothing said to differ")


if __name__ == "__main__":
    main()
