#!/usr/bin/env python3
"""Sort the differences of `backstep check --stack --json` into classes by
their shape, and print a Markdown table per file (docs/validation.md holds
its output for this machine's /usr/lib/x86_64-linux-gnu and /usr/bin).

    scripts/stack_diff_classes.py FILE.jsonl...

A class is a signature read off each difference record alone (the row, what
the code implies, the instruction, the symbol): what was found by reading
samples of each (docs/validation.md, "Differences seen over the
directories") is written next to the class, not decided here. A difference
no signature matches is "unclassified" and printed in full: each must be
read and explained, or the classes below are wrong.
"""
import collections
import json
import re
import sys

CFA = re.compile(r"CFA: row rsp\+(\d+), code rsp\+(\d+)")

# (name, test). First match wins. The names are the ones docs/validation.md
# explains with evidence.
CLASSES = [
    # gcc 12's DRAP epilogue (fixtures/KNOWN.md): saves described relative to
    # rbp by expressions, wrong once rbp is popped.
    ("drap-epilogue", lambda d: "row [DW_OP_breg6 (rbp)" in d["detail"]),
    # binutils' PLT CFA expression (rsp + 8 + 8 * (rip & 15 >= 11)) applied to
    # an entry of another shape (the TLSDESC entry).
    ("plt-expression", lambda d: "DW_OP_breg16 (rip)" in d["detail"]),
    # The code jumps elsewhere with the stack of another frame (longjmp and
    # the like: the CFA is not a function of this frame's registers).
    ("cfa-from-elsewhere", lambda d: "code ? (" in d["detail"]),
    # LLVM: the row already moved by the add before a compare and branch to
    # a conditional tail call, the code not yet.
    ("row-ahead-at-cond-tailcall", lambda d: (cfa_delta(d) or 0) > 0 and
     re.match(r"(cmp|test|bt|j\w+) ", d["insn"]) is not None),
    # A red-zone skip (lea rsp, [rsp - 128]) then pushes, none described:
    # binary instrumentation.
    ("red-zone-skip", lambda d: (cfa_delta(d) or 0) <= -128),
    # The code is up to eight pushes deeper than the row, or keeps a
    # callee-saved register in a stack slot the row does not name: pushes
    # and saves the CFI does not describe (hand-written assembly, inline
    # asm, LLVM scheduling a push before its CFI).
    ("save-not-described", lambda d: -64 <= (cfa_delta(d) or 1) < 0 or
     re.search(r"\b\w+: row same, code (same\|)?\[(CFA|A)-\d+\]", d["detail"]) is not None),
    # A callee-saved register the code moves elsewhere (xchg around cpuid in
    # inline asm) or clobbers (hand-written code with conventions of its
    # own) while the row says "same value".
    ("callee-saved-clobbered", lambda d: re.search(r"\b\w+: row same, code (lost|r\w+)",
                                                   d["detail"]) is not None),
    # The row keeps the CFA on one register, the code on another (rsp vs
    # rbp after the code moved one of them: hand-written frames).
    ("cfa-register-differs", lambda d: re.search(r"CFA: row (\w+)\+\d+, code (\w+)\+",
                                                 d["detail"]) is not None and
     re.search(r"CFA: row (\w+)\+\d+, code (\w+)\+", d["detail"]).group(1) !=
     re.search(r"CFA: row (\w+)\+\d+, code (\w+)\+", d["detail"]).group(2)),
    # Both on the frame pointer, at different offsets: a CFA adjustment
    # written as if the CFA were still on rsp (glibc's libmvec:
    # cfi_adjust_cfa_offset after cfi_def_cfa_register rbp).
    ("cfa-adjusted-on-frame-pointer", lambda d: re.search(
        r"CFA: row (rbp|rbx|r1[2-5])\+(\d+), code \1\+(\d+)", d["detail"]) is not None),
    # The row says saved, the code overwrote the slot: a store into the
    # frame's save area on some path (clang 14's EmitX86BuiltinExpr writes
    # an 8-int array past its end when its count is 7, over the canary and
    # the saved rbx).
    ("save-slot-overwritten", lambda d: re.search(r"\b\w+: row \[CFA-\d+\], code lost",
                                                  d["detail"]) is not None),
    # A cold part shared by functions with different frames (identical code
    # folding): any CFA difference in a .cold symbol.
    ("cold-fragment", lambda d: (d.get("symbol") or "").endswith(".cold") and
     cfa_delta(d) is not None),
]


def cfa_delta(d):
    """Row CFA offset minus the code's, both on rsp; None otherwise."""
    m = CFA.search(d["detail"])
    return int(m.group(1)) - int(m.group(2)) if m else None


def classify(d):
    for name, test in CLASSES:
        if test(d):
            return name
    return "unclassified"


def main():
    per_file = collections.defaultdict(collections.Counter)
    funcs = collections.defaultdict(set)
    capped = set()
    unclassified = []
    for path in sys.argv[1:]:
        for line in open(path):
            d = json.loads(line)
            if d["type"] == "file" and d.get("differences", 0) > d.get("differences_listed",
                                                                         d["differences"]):
                capped.add(d["file"])
            if d["type"] != "finding" or d["severity"] != "error" or d["kind"] != "stack":
                continue
            c = classify(d)
            per_file[d["file"]][c] += 1
            funcs[d["file"]].add(d["fde"][0])
            if c == "unclassified":
                unclassified.append(d)
    names = [n for n, _ in CLASSES] + ["unclassified"]
    total = collections.Counter()
    print("| file | differences | functions | classes |")
    print("| --- | ---: | ---: | --- |")
    for f in sorted(per_file, key=lambda f: -sum(per_file[f].values())):
        c = per_file[f]
        total.update(c)
        cls = ", ".join(f"{n} {c[n]}" for n in names if c[n])
        print(f"| {f} | {sum(c.values())} | {len(funcs[f])} | {cls} |")
    print()
    print("| class | differences | files |")
    print("| --- | ---: | ---: |")
    for n in names:
        print(f"| {n} | {total[n]} | {sum(1 for f in per_file if per_file[f][n])} |")
    for d in unclassified:
        print("UNCLASSIFIED", json.dumps(d), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
