#!/usr/bin/env python3
"""`backstep check --stack` over the whole fixture corpus (every build of
fixtures/: gcc and clang, -O0/-O2/-O3/-Os, with and without frame
pointers, C, C++, Rust, hand-written assembly, the shared libraries).

    stack_corpus.py BACKSTEP FIXTURE_BUILD_DIR KNOWN_TXT

The differences must be exactly:
- the toolchain bugs fixtures/known.txt lists (gcc 12's DRAP epilogue,
  KNOWN.md #1): per build, the same function, the same instruction
  offsets and the same registers the dynamic validator finds there;
- the deliberate ones of broken.S: broken_offset (rbx at the wrong slot)
  and broken_cfa (a missing .cfi_def_cfa_offset) at every instruction
  under the wrong rows, as fixtures/check.py --broken lists them, less the
  offsets inside the call (those are frames of the callee there);
- noend.S's _start, which claims a caller: its CFA rule is wrong after
  `and rsp, -16` and rbp is cleared without a save;
- AArch64 (fix_a64_*): aarch64/broken.S's broken_offset, broken_cfa and
  broken_d8 at the instructions the validator's --broken run lists for
  them (less those inside the call); every gcc build (C, C++,
  -mbranch-protection=standard) and the correct hand-written shapes
  without any; clang 14's builds (fix_a64_*_clang_*: static check only,
  KNOWN.md #3, tables correct at call sites only) with differences whose
  CFA is wrong too (prologues before clang's first row, epilogues and
  shrink-wrapped exits under the body's row), never at a call
  instruction, and at least one in each build (the shape is there to be
  seen).
Nothing else; each in its class (scripts/stack_diff_classes.py: the
class docs/stack-differences.md explains it by). And no function may be
given up on for a reason that
would mean the analysis failed on compiler output (bad code, a bound,
unknown state, bad CFI, an entry state); the instructions checked must be
at least MIN_SHARE of the instructions not in an outermost frame.
"""
import collections
import json
import os
import subprocess
import sys
from tally import check, finish

backstep, fixdir, known_txt = sys.argv[1], sys.argv[2], sys.argv[3]
MIN_SHARE = 0.95


def underscorify(name):
    return "".join(c if c.isalnum() else "_" for c in name)


# {file name: {function: (offsets, registers)}}
expected = collections.defaultdict(dict)
with open(known_txt) as f:
    for line in f:
        line = line.split("#", 1)[0].split()
        # A pattern ("a64-*"): glibc's AArch64 _start, where the walk
        # goes on one instruction too long; no rule there is wrong for
        # the static check (x30 is the caller's at _start+0 as its
        # row says), so no difference is expected for it.
        if len(line) == 4 and not any(c in line[0] for c in "*?["):
            offs = {int(o, 16) for o in line[2].split(",")}
            expected["fix_" + underscorify(line[0])][line[1]] = (offs, set(line[3].split(",")))
# aarch64/broken.S: its header lists the rows the validator catches.
expected["fix_a64_broken"]["broken_offset"] = ({0x10, 0x14, 0x18, 0x1c}, {"x19"})
expected["fix_a64_broken"]["broken_cfa"] = ({0x4, 0x8, 0xc}, {"CFA"})
expected["fix_a64_broken"]["broken_d8"] = ({0x10, 0x14, 0x18, 0x1c}, {"d8"})
for cc in ("gcc", "clang"):
    expected["fix_broken_" + cc]["broken_offset"] = ({0x1, 0x4, 0x7, 0xc, 0xf}, {"rbx"})
    expected["fix_broken_" + cc]["broken_cfa"] = ({0x1, 0x4, 0x9}, {"CFA"})
    expected["fix_noend_" + cc]["_start"] = ({0x2, 0x6, 0xb, 0xd, 0x12}, {"CFA", "rbp"})

p = subprocess.run([backstep, "check", "--stack", "--json", fixdir], capture_output=True,
                   text=True, timeout=1200)
check(p.stderr == "", f"stderr: {p.stderr!r}")
check(p.returncode == 1, f"exit status {p.returncode}, want 1 (the expected differences)")
rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]

def clang_a64(name):
    return name.startswith("fix_a64_") and "_clang_" in name


got = collections.defaultdict(lambda: collections.defaultdict(lambda: (set(), set())))
clang_diffs = collections.Counter()
for r in rows:
    if r["type"] != "finding" or r["kind"] != "stack":
        continue
    name = os.path.basename(r["file"])
    if clang_a64(name):
        # KNOWN.md #3: the CFA wrong in prologues and epilogues only.
        clang_diffs[name] += 1
        check(r["detail"].startswith("CFA: ") and not r["insn"].startswith(("bl ", "blr ")),
              f"{name} {r.get('symbol')}+{r.get('offset')}: {r['insn']}: {r['detail']}: "
              "not the shape of clang 14's AArch64 tables (KNOWN.md #3)")
        got[name][r.get("symbol")][0].add(int(r.get("offset", "0x0"), 16))
        continue
    offs, regs = got[name][r.get("symbol")]
    offs.add(int(r.get("offset", "0x0"), 16))
    for part in r["detail"].split("; "):
        regs.add(part.split(":", 1)[0])

# The instructions KNOWN.md #3 lists from the validator's run of clang 14's
# recursion -O2 under qemu (fib+0x4, +0x8, +0x50; main+0x50) are among
# the static check's.
k3 = got.get("fix_a64_recursion_clang_O2_fp", {})
for fn, off in (("fib", 0x4), ("fib", 0x8), ("fib", 0x50), ("main", 0x50)):
    check(off in k3.get(fn, (set(), set()))[0],
          f"fix_a64_recursion_clang_O2_fp: no difference at {fn}+{off:#x} (KNOWN.md #3)")

# Every difference of the corpus lands in the class docs/stack-differences.md
# explains it by (scripts/stack_diff_classes.py): gcc's DRAP epilogue, the
# deliberate lies of broken.S (a save described at the wrong slot, a push
# the CFA does not follow), noend.S's _start (an entry point), clang 14's
# AArch64 tables.
CORPUS_CLASSES = {"aligned_vla": "gcc-drap-epilogue", "broken_offset": "save-at-wrong-slot",
                  "broken_d8": "save-at-wrong-slot", "broken_cfa": "undescribed-stack-adjustment",
                  "_start": "context-switch"}
classifier = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                          "stack_diff_classes.py")
cp = subprocess.run([sys.executable, classifier, "--by-finding", "/dev/stdin"], input=p.stdout,
                    capture_output=True, text=True, timeout=300)
check(cp.returncode == 0 and cp.stderr == "",
      f"classifier: exit status {cp.returncode}, {cp.stderr[:500]!r}")
classes = collections.Counter()
for d in map(json.loads, cp.stdout.splitlines()):
    name = os.path.basename(d["file"])
    want = "clang14-a64-synchronous" if clang_a64(name) else CORPUS_CLASSES.get(d["symbol"])
    classes[d["class"]] += 1
    check(d["class"] == want, f"{name} {d['symbol']} {d['addr']}: class {d['class']}, want {want}")
check(sum(classes.values()) == sum(1 for r in rows if r["type"] == "finding" and r["kind"] == "stack"),
      f"classifier: {sum(classes.values())} differences classified")
print(f"classes: {dict(classes)}")

files = {os.path.basename(r["file"]) for r in rows if r["type"] == "file"}
clang_files = sorted(f for f in files if clang_a64(f))
check(len(clang_files) >= 20, f"only {len(clang_files)} clang AArch64 builds analysed")
for f in clang_files:
    check(clang_diffs[f] > 0, f"{f}: no difference: clang 14's shape (KNOWN.md #3) not seen")
check(len(files) >= 100, f"only {len(files)} files analysed in {fixdir}")
for name in sorted(set(got) | set(expected)):
    if clang_a64(name):
        continue  # held to KNOWN.md #3's shape above
    if name not in files and name in expected:
        check(False, f"{name}: expected differences, but the file was not analysed")
        continue
    want = expected.get(name, {})
    have = {fn: (o, r) for fn, (o, r) in got.get(name, {}).items()}
    for fn in sorted(set(want) | set(have), key=str):
        w = want.get(fn, (set(), set()))
        h = have.get(fn, (set(), set()))
        check(w == h, f"{name} {fn}: differences at {sorted(map(hex, h[0]))} in {sorted(h[1])}, "
              f"want {sorted(map(hex, w[0]))} in {sorted(w[1])}")

allowed = {"indirect jump", "unreached", "outermost frame", "signal frame"}
bad = collections.Counter()
for r in rows:
    if r["type"] == "finding" and r["kind"] == "cannot-analyse" and r["reason"] not in allowed:
        bad[r["reason"]] += 1
        if bad[r["reason"]] <= 5:
            print(f"  {os.path.basename(r['file'])} {r.get('symbol')}: {r['reason']}: {r['detail']}")
check(not bad, f"functions given up for reasons that are failures here: {dict(bad)}")
tot = [r for r in rows if r["type"] == "total"]
check(len(tot) == 1, "no total record")
if tot:
    t = tot[0]
    base = t["instructions"] - t["not_checked"]["outermost frame"]
    share = t["checked"] / base if base else 0
    print(f"{t['elf_files']} files, {t['fdes']} functions, {t['checked']} of {t['instructions']} "
          f"instructions checked ({100 * share:.2f}% of those not in an outermost frame), "
          f"{t['differences']} differences; not checked: "
          f"{ {k: v for k, v in t['not_checked'].items() if v} }")
    check(share >= MIN_SHARE, f"checked share {share:.4f} below {MIN_SHARE}")
    # Every file is analysed, the AArch64 builds too.
    check(t["unreadable"] == 0 and t["unsupported"] == 0, f"total: {t}")
    # The AArch64 share on its own.
    a = [r for r in rows if r["type"] == "file" and os.path.basename(r["file"]).startswith("fix_a64_")]
    check(len(a) >= 75, f"only {len(a)} AArch64 files")
    ains = sum(r["instructions"] - r["not_checked"]["outermost frame"] for r in a)
    ashare = sum(r["checked"] for r in a) / ains if ains else 0
    print(f"AArch64: {len(a)} files, {sum(r['checked'] for r in a)} of {ains} instructions "
          f"not in an outermost frame checked ({100 * ashare:.2f}%), "
          f"{sum(r['differences'] for r in a)} differences")
    check(ashare >= MIN_SHARE, f"AArch64 checked share {ashare:.4f} below {MIN_SHARE}")

finish()
