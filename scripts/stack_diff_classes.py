#!/usr/bin/env python3
"""Sort the differences of `backstep check --stack --json` into classes, by
the shape of each function's differences, and print a Markdown table per
file (docs/stack-differences.md holds its output for this machine's
/usr/lib/x86_64-linux-gnu and /usr/bin).

    scripts/stack_diff_classes.py [--by-finding] FILE.jsonl...

Run check --stack with --max-findings high enough that every difference of
a file is listed (the default lists 1000). A class is decided per function
(an FDE: one file's differences at one FDE start) from what its
differences' records say alone (the row, what the code implies, the
instruction, the symbol), so one cause is one class even where its shape
varies from instruction to instruction. What each class is, why its rows
are wrong (or why they are so by design), and an example to check with
objdump and readelf is written down in docs/stack-differences.md; a class
here without its paragraph there is a bug. A function no class fits is
"unclassified": it is printed in full on stderr, the exit status is 1, and
it must be read and explained, or the classes below are wrong.

--by-finding prints one JSON line per difference instead (file, addr,
symbol, class, source) for tests/check/stack_classes.py.
"""
import collections
import json
import re
import sys

# A CFA rule or state as the records print it: "rsp+16", "sp+0", "r10+0".
CFA_PART = re.compile(r"CFA: row (\S+?), code (.+?)(?:; |$)")
REG_AT = re.compile(r"^([a-z]+[0-9]*)\+(-?\d+)$")
# One register's part: "rbx: row [CFA-16], code same|[CFA-24]".
REG_PART = re.compile(r"(\w+): row (.+?), code (.+?)(?:; (?=\w+: row )|$)")
SLOT = re.compile(r"\[(CFA|A)([+-]\d+)\]")

# Functions that switch to another stack or start one, by their names: the
# C library's and the sanitizers' context switching (their rows describe
# the frame they leave or the one they go to, by design) and entry points.
CONTEXT_SWITCH = re.compile(r"^(_+longjmp\w*|_*longjmp_chk|__?(sig)?longjmp\w*|swapcontext|"
                            r"setcontext|getcontext|__start_context|_start|"
                            r"__sanitizer::internal_clone\b.*|clone3?|__clone3?)$")


class Diff:
    """One difference record, parsed."""

    def __init__(self, d):
        self.d = d
        self.insn = d.get("insn", "")
        self.op = self.insn.split(" ")[0] if self.insn else ""
        detail = d.get("detail", "")
        self.cfa = None          # (row, code) texts
        m = CFA_PART.search(detail)
        if m:
            self.cfa = (m.group(1), m.group(2))
        rest = CFA_PART.sub("", detail)
        self.regs = [(r, row, code) for r, row, code in REG_PART.findall(rest)]
        self.row = d.get("row", "")

    def cfa_regoff(self):
        """(row register, row offset, code register, code offset), or None."""
        if not self.cfa:
            return None
        a, b = REG_AT.match(self.cfa[0]), REG_AT.match(self.cfa[1])
        if not a or not b:
            return None
        return a.group(1), int(a.group(2)), b.group(1), int(b.group(2))

    def row_saves(self):
        """Whether the row describes any callee-saved register (any rule but
        the CFA's and the return address's)."""
        return any(not p.startswith(("CFA=", "RA=")) for p in self.row.split(" ") if "=" in p)


def sp_name(r):
    return r in ("rsp", "sp")


def stack_op(op):
    return op in ("push", "pop", "ret", "repz", "call", "leave", "bl", "blr", "ldp", "stp") or \
        op.startswith(("push", "pop"))


def demangled_name(sym):
    return (sym or "").split("@")[0].split("(")[0].strip() if sym else ""


def base_name(sym):
    """A symbol without version, arguments, clone suffixes or .cold."""
    s = demangled_name(sym)
    return re.sub(r"(\.(cold|part|constprop|isra)(\.\d+)?)+$", "", s)


# ---- The classes -----------------------------------------------------------
# (name, source, test over the function's differences). First match wins.
# Source: "toolchain" (a compiler's, assembler's or linker's CFI is wrong),
# "hand-written" (assembly or inline assembly whose CFI does not follow its
# code), "by design" (code that leaves its frame on purpose), "analysis"
# (a limit of the analysis: the row is right, the difference is not).

def is_plt_expression(fn, sym):
    return any("DW_OP_breg16 (rip)" in x.row for x in fn)


def is_drap(fn, sym):
    return any(row.startswith("[DW_OP_breg6 (rbp)") for x in fn for _, row, _ in x.regs)


def is_context_switch(fn, sym):
    return CONTEXT_SWITCH.match(base_name(sym)) is not None


def is_restore_to_cie(fn, sym):
    # Every difference: a register the row says is saved below a CFA that
    # is the entry's (rsp+8: nothing pushed), the code says unchanged.
    for x in fn:
        if x.cfa or not x.regs or not x.row.startswith("CFA=rsp+8 "):
            return False
        for _, row, code in x.regs:
            m = SLOT.fullmatch(row)
            if not m or m.group(1) != "CFA" or int(m.group(2)) > -16 or code != "same":
                return False
    return True


def is_shared_cold(fn, sym):
    return demangled_name(sym).endswith(".cold") and all(x.cfa_regoff() for x in fn) and \
        all(x.cfa_regoff()[1] > x.cfa_regoff()[3] + 64 for x in fn)


def is_llvm_late_cfa(fn, sym):
    # x86-64: in a frame the rows describe (both offsets above the entry's
    # 8), the CFA offset one adjustment off at a few instructions that are
    # no stack operation themselves (the row catches up after them: its
    # update was placed late).
    if len(fn) > 16:
        return False
    for x in fn:
        c = x.cfa_regoff()
        if not c or x.regs or c[0] != "rsp" or c[2] != "rsp" or stack_op(x.op) or \
                c[1] <= 8 or c[3] <= 8:
            return False
        delta = abs(c[1] - c[3])
        if delta < 8 or delta > 4096 or delta % 8:
            return False
    return True


def is_clang14_a64(fn, sym):
    # AArch64: the CFA wrong in prologues and epilogues, never at a call
    # (KNOWN.md #3: tables correct at call sites only).
    for x in fn:
        c = x.cfa_regoff()
        if not c or c[0] not in ("sp", "x29") or c[2] not in ("sp", "x29") or \
                x.op in ("bl", "blr"):
            return False
    return True


def is_save_above_cfa(fn, sym):
    return any(SLOT.fullmatch(row) and SLOT.fullmatch(row).group(1) == "CFA" and
               int(SLOT.fullmatch(row).group(2)) > 0 for x in fn for _, row, _ in x.regs)


def is_cfa_adjust_on_fp(fn, sym):
    # Both on the frame pointer, at different offsets: an adjustment of the
    # CFA offset written as if it were still on rsp.
    return any(c and c[0] == c[2] and not sp_name(c[0]) and c[1] != c[3]
               for c in (x.cfa_regoff() for x in fn))


def is_cfa_wrong_at_return(fn, sym):
    # Only at the return, where the code's CFA is the entry's.
    return all(x.op in ("ret", "repz") and x.cfa_regoff() and x.cfa_regoff()[2] == "rsp" and
               x.cfa_regoff()[3] == 8 and x.cfa_regoff()[1] != 8 for x in fn)


def is_cfa_on_sp_across_move(fn, sym):
    # The row keeps the CFA on the stack pointer while the code can only
    # name it from another register (rsp moved by a run-time amount).
    return any(c and sp_name(c[0]) and not sp_name(c[2]) for c in (x.cfa_regoff() for x in fn))


def is_save_at_wrong_slot(fn, sym):
    # A register described at a slot, its caller's value at another one.
    for x in fn:
        for _, row, code in x.regs:
            m = SLOT.fullmatch(row)
            if m and row not in code.split("|") and SLOT.search(code):
                return True
    return False


def is_undescribed_save(fn, sym):
    # The row says unchanged; the register was changed, its caller's value
    # is in a stack slot the row does not name.
    return any(row == "same" and code != "lost" and not code.startswith("same") and
               SLOT.search(code) for x in fn for _, row, code in x.regs)


def is_rbx_swap(fn, sym):
    # rbx's caller value moved to another register for a few instructions
    # (cpuid, which writes rbx, in inline assembly).
    return all(not x.cfa and x.regs and all(r == "rbx" and row == "same" and
                                            re.fullmatch(r"r\w+", code) for r, row, code in x.regs)
               for x in fn)


def is_private_convention(fn, sym):
    # The row describes no saved register anywhere in the function, the code
    # overwrites callee-saved registers: a helper with a register
    # convention of its own, only called from code that knows it.
    return all(not x.row_saves() for x in fn) and \
        any(row == "same" and code == "lost" for x in fn for _, row, code in x.regs)


def is_undescribed_adjustment(fn, sym):
    # The CFA's register right, its offset behind the code's pushes and
    # stack allocations (code deeper than the row), at least once.
    deeper = False
    for x in fn:
        c = x.cfa_regoff()
        if x.cfa and not c:
            return False
        if c and (c[0] != c[2] or not sp_name(c[0])):
            return False
        if c and c[3] > c[1]:
            deeper = True
    return deeper


CLASSES = [
    ("plt-expression", "toolchain", is_plt_expression),
    ("gcc-drap-epilogue", "toolchain", is_drap),
    ("context-switch", "by design", is_context_switch),
    ("restore-to-cie-rule", "toolchain", is_restore_to_cie),
    ("shared-cold-part", "toolchain", is_shared_cold),
    ("llvm-late-cfa", "toolchain", is_llvm_late_cfa),
    ("clang14-a64-synchronous", "toolchain", is_clang14_a64),
    ("save-above-cfa", "hand-written", is_save_above_cfa),
    ("cfa-adjusted-on-frame-pointer", "hand-written", is_cfa_adjust_on_fp),
    ("cfa-wrong-at-return", "hand-written", is_cfa_wrong_at_return),
    ("cfa-on-sp-across-move", "hand-written", is_cfa_on_sp_across_move),
    ("save-at-wrong-slot", "hand-written", is_save_at_wrong_slot),
    ("undescribed-save", "hand-written", is_undescribed_save),
    ("rbx-swapped-around-cpuid", "hand-written", is_rbx_swap),
    ("private-register-convention", "hand-written", is_private_convention),
    ("undescribed-stack-adjustment", "hand-written", is_undescribed_adjustment),
]
SOURCE = {name: source for name, source, _ in CLASSES}


def classify_function(records):
    """The class of one function's difference records (dicts), or
    "unclassified"."""
    fn = [Diff(d) for d in records]
    sym = next((d.get("symbol") for d in records if d.get("symbol")), None)
    for name, _, test in CLASSES:
        if test(fn, sym):
            return name
    return "unclassified"


def read(paths):
    """{(file, FDE start): [difference records]} in the order read."""
    fns = collections.OrderedDict()
    for path in paths:
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                d = json.loads(line)
                if d.get("type") != "finding" or d.get("kind") != "stack" or \
                        d.get("severity") != "error":
                    continue
                fns.setdefault((d["file"], d["fde"][0]), []).append(d)
    return fns


def main(argv):
    by_finding = "--by-finding" in argv
    paths = [a for a in argv if a != "--by-finding"]
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    fns = read(paths)
    per_file = collections.defaultdict(collections.Counter)
    funcs = collections.defaultdict(collections.Counter)
    unclassified = []
    for (path, fde), records in fns.items():
        c = classify_function(records)
        per_file[path][c] += len(records)
        funcs[path][c] += 1
        if c == "unclassified":
            unclassified.extend(records)
        if by_finding:
            for d in records:
                print(json.dumps({"file": path, "addr": d["addr"], "fde": fde,
                                  "symbol": d.get("symbol"), "class": c,
                                  "source": SOURCE.get(c, "unclassified")}))
    if not by_finding:
        names = [n for n, _, _ in CLASSES] + ["unclassified"]
        total = collections.Counter()
        nfuncs = collections.Counter()
        print("| file | differences | functions | classes (differences) |")
        print("| --- | ---: | ---: | --- |")
        for f in sorted(per_file, key=lambda f: (-sum(per_file[f].values()), f)):
            c = per_file[f]
            total.update(c)
            nfuncs.update(funcs[f])
            cls = ", ".join(f"{n} {c[n]}" for n in names if c[n])
            print(f"| {f} | {sum(c.values())} | {sum(funcs[f].values())} | {cls} |")
        print()
        print("| class | source | differences | functions | files |")
        print("| --- | --- | ---: | ---: | ---: |")
        for n in names:
            if total[n] or n != "unclassified":
                print(f"| {n} | {SOURCE.get(n, '-')} | {total[n]} | {nfuncs[n]} | "
                      f"{sum(1 for f in per_file if per_file[f][n])} |")
    for d in unclassified:
        print("UNCLASSIFIED", json.dumps(d), file=sys.stderr)
    return 1 if unclassified else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
