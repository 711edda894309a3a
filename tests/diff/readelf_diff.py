#!/usr/bin/env python3
"""Differential test of backstep's call-frame rows.

For each binary named, three readers compute the rows of every FDE in
.eh_frame and .debug_frame:

  ours      `backstep dump --json FILE`
  readelf   `readelf -wN --debug-dump=frames-interp FILE` (binutils)
  libdwarf  `dwarf_rows FILE` (tests/diff/dwarf_rows.c, written against
            libdwarf's consumer API only)

and the rows are compared as step functions over [pc_begin, pc_end): at every
row boundary of either side, the CFA rule and every register's rule must agree.
On AArch64 the return-address signing state (DW_CFA_AARCH64_negate_ra_state,
toggled, saved and restored with the row) is also checked against a fourth
view: the raw instruction listing of `readelf -wN --debug-dump=frames`, which
neither readelf's interpreter nor libdwarf track.

Exit status: 0 if every disagreement is explained by a documented limitation of
the other tool (see README.md, "Known limitations of the other tools"), 1 if
any is not, 2 on a usage or tool error.

stdlib only.
"""

import argparse
import bisect
import functools
import json
import os
import re
import subprocess
import sys
import time
from collections import defaultdict

EM_X86_64 = 62
EM_AARCH64 = 183

# readelf's register names (binutils dwarf.c: dwarf_regnames_x86_64 and
# dwarf_regnames_aarch64), index = DWARF register number, None = no name.
# readelf names a column "rN" when the number has no name; "ra" is the CIE's
# return-address column whatever its number.
_X86_64 = (["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp"]
           + ["r%d" % i for i in range(8, 16)] + ["rip"]
           + ["xmm%d" % i for i in range(16)]
           + ["st%d" % i for i in range(8)]
           + ["mm%d" % i for i in range(8)]
           + ["rflags", "es", "cs", "ss", "ds", "fs", "gs", None, None,
              "fs.base", "gs.base", None, None, "tr", "ldtr",
              "mxcsr", "fcw", "fsw"]
           + ["xmm%d" % i for i in range(16, 32)]
           + [None] * 35
           + ["k%d" % i for i in range(8)])
_AARCH64 = (["x%d" % i for i in range(31)] + ["sp"]
            + [None, "elr", None, None, None, None, None, None,
               None, None, None, None, None, None, "vg", "ffr"]
            + ["p%d" % i for i in range(16)]
            + ["v%d" % i for i in range(32)]
            + ["z%d" % i for i in range(32)])
REGNAMES = {EM_X86_64: tuple(_X86_64), EM_AARCH64: tuple(_AARCH64)}
ARCHNAME = {EM_X86_64: "x86-64", EM_AARCH64: "AArch64"}

# Canonical rules, the same for all three readers:
#   CFA:       ("cfa", reg, offset) | ("cfaexp", hex) | ("none",)
#   register:  None (no rule) | ("u",) | ("s",) | ("off", n) | ("valoff", n)
#              | ("reg", r) | ("expr", hex) | ("valexpr", hex)
# readelf never shows expression bytes: its cells give hex = None, which
# matches any bytes (the bytes themselves are checked against libdwarf).
U = ("u",)


class ToolError(Exception):
    pass


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, errors="replace")
    return p.returncode, p.stdout, p.stderr


def elf_machine(path):
    with open(path, "rb") as f:
        h = f.read(20)
    if len(h) < 20 or h[:4] != b"\x7fELF":
        raise ToolError("%s: not an ELF file" % path)
    little = h[5] == 1
    return int.from_bytes(h[18:20], "little" if little else "big")


# ---- ours: backstep dump --json --------------------------------------------

_OUR_RULES = {"undefined": lambda r: U, "same_value": lambda r: ("s",),
              "offset": lambda r: ("off", r["value"]),
              "val_offset": lambda r: ("valoff", r["value"]),
              "register": lambda r: ("reg", r["reg"]),
              "expression": lambda r: ("expr", r["expression"].lower()),
              "val_expression": lambda r: ("valexpr", r["expression"].lower())}


def load_ours(backstep, path):
    rc, out, err = run([backstep, "dump", "--json", path])
    fdes = []
    for n, line in enumerate(out.splitlines(), 1):
        if not line.strip():
            continue
        try:
            o = json.loads(line)
        except ValueError as e:
            raise ToolError("backstep dump --json %s: line %d is not JSON: %s" % (path, n, e))
        rows = []
        for r in o["rows"]:
            c = r["cfa"]
            if c is None:
                cfa = ("none",)
            elif "expression" in c:
                cfa = ("cfaexp", c["expression"].lower())
            else:
                cfa = ("cfa", c["reg"], c["offset"])
            regs = {int(k): _OUR_RULES[v["rule"]](v) for k, v in r["regs"].items()}
            rows.append((int(r["loc"], 16), cfa, regs, r.get("ra_sign_state")))
        fdes.append({"section": o["section"], "pc_begin": int(o["pc_begin"], 16),
                     "pc_end": int(o["pc_end"], 16), "rows": rows,
                     "from_debug_file": o.get("from_debug_file", False)})
    # "backstep: FILE: .eh_frame FDE at offset 0x40: <error>" and the like.
    corrupt = []
    for line in err.splitlines():
        m = re.search(r"(\.eh_frame|\.debug_frame) (.*?) at offset 0x([0-9a-f]+): (.*)$", line)
        if m:
            corrupt.append((m.group(1), int(m.group(3), 16), m.group(2), m.group(4)))
    if rc not in (0, 1) or (rc == 1 and not corrupt and not fdes):
        raise ToolError("backstep dump --json %s failed (%d): %s" % (path, rc, err.strip()))
    return fdes, corrupt, err


# ---- libdwarf: dwarf_rows ---------------------------------------------------

@functools.lru_cache(maxsize=None)
def _dw_rule(s):
    if s == "u":
        return U
    if s == "s":
        return ("s",)
    kind, _, val = s.partition(":")
    if kind in ("off", "valoff"):
        return (kind, int(val))
    if kind == "reg":
        return ("reg", int(val))
    if kind in ("expr", "valexpr"):
        return (kind, val.lower())
    raise ToolError("dwarf_rows: unknown rule %r" % s)


def load_libdwarf(dwarf_rows, path):
    rc, out, err = run([dwarf_rows, path])
    if rc != 0 and "FILE" not in out:
        raise ToolError("dwarf_rows %s failed (%d): %s" % (path, rc, err.strip()))
    fdes, errors, cur = [], [], None
    for line in out.splitlines():
        t = line.split(" ")
        if t[0] == "FDE":
            cur = {"section": t[1], "off": int(t[2], 16), "pc_begin": int(t[3], 16),
                   "pc_end": int(t[4], 16), "cie": int(t[5][4:], 16), "ra": int(t[6][3:]),
                   "rows": [], "errors": []}
            fdes.append(cur)
        elif t[0] == "ROW":
            c = t[2][4:]
            if c == "none":
                cfa = ("none",)
            elif c.startswith("expr:"):
                cfa = ("cfaexp", c[5:].lower())
            else:
                reg, _, off = c[1:].partition(":")
                cfa = ("cfa", int(reg), int(off))
            regs = {}
            for cell in t[3:]:
                k, _, v = cell.partition("=")
                regs[int(k)] = _dw_rule(v)
            cur["rows"].append((int(t[1], 16), cfa, regs, None))
        elif t[0] == "ERR":
            rec = (t[1], None if t[2] == "-" else int(t[2], 16), " ".join(t[3:]))
            errors.append(rec)
            if cur is not None and rec[1] == cur["off"]:
                cur["errors"].append(rec[2])
    return fdes, errors


# ---- readelf --debug-dump=frames-interp ------------------------------------

_ENTRY = re.compile(r"^([0-9a-f]{8,16}) ([0-9a-f]+) ([0-9a-f]+) (CIE|FDE)\b(.*)$")
_CIE_INTERP = re.compile(r'CIE "([^"]*)" cf=(-?\d+) df=(-?\d+) ra=(\d+)')
_FDE_HDR = re.compile(r"cie=([0-9a-f]+|invalid) +pc=([0-9a-f]+)\.\.([0-9a-f]+)")
_CELL = re.compile(r"r\d+ \([^)]*\)|\S+")
_ROW = re.compile(r"^([0-9a-f]{8,16}) (.*)$")


@functools.lru_cache(maxsize=None)
def _reg_number(name, names):
    m = re.fullmatch(r"r(\d+)", name)
    if m:
        return int(m.group(1))
    try:
        return names.index(name)
    except ValueError:
        raise ToolError("readelf: unknown register name %r" % name)


def _s32(v):
    """readelf prints rule offsets with %d of a C int (col_offset is int,
    cfa_offset is cast to int), so they wrap at 32 bits."""
    v &= 0xffffffff
    return v - (1 << 32) if v & 0x80000000 else v


@functools.lru_cache(maxsize=None)
def _readelf_cell(cell, names):
    if cell == "u":
        return U
    if cell == "s":
        return ("s",)
    if cell == "exp":
        return ("expr", None)
    if cell == "vexp":
        return ("valexpr", None)
    m = re.fullmatch(r"([cv])([+-]\d+)", cell)
    if m:
        return ("off" if m.group(1) == "c" else "valoff", int(m.group(2)))
    m = re.fullmatch(r"r(\d+)(?: \(.*\))?", cell)
    if m:
        return ("reg", int(m.group(1)))
    raise ToolError("readelf: unknown cell %r" % cell)


@functools.lru_cache(maxsize=None)
def _readelf_cfa(cell, names):
    if cell == "exp":
        return ("cfaexp", None)
    m = re.fullmatch(r"(.+?)([+-]\d+)", cell)
    if not m:
        raise ToolError("readelf: unknown CFA cell %r" % cell)
    return ("cfa", _reg_number(m.group(1), names), int(m.group(2)))


def load_readelf(readelf, path, machine):
    """Entries of both sections: {section: [entry]} with entry a dict:
    kind CIE|FDE, off, cie, pc_begin, pc_end, ra (CIE), rows [(loc, cfa, regs)],
    notes (anything readelf printed inside the entry that is not a row)."""
    # -wN: do not follow .gnu_debuglink to a separate debug file; backstep
    # dump (without --debug-file) and dwarf_rows read only FILE itself.
    rc, out, err = run([readelf, "-wN", "--debug-dump=frames-interp", path])
    if rc != 0 and not out:
        raise ToolError("readelf %s failed (%d): %s" % (path, rc, err.strip()))
    names = REGNAMES[machine]
    sections = defaultdict(list)
    sec, ent, cols = None, None, None
    for line in out.splitlines():
        m = re.match(r"^Contents of the (\S+) section", line)
        if m:
            sec, ent, cols = m.group(1), None, None
            continue
        if sec is None or not line.strip():
            continue
        m = _ENTRY.match(line)
        if m:
            cols = None
            ent = {"kind": m.group(4), "off": int(m.group(1), 16), "rows": [], "notes": []}
            rest = m.group(5)
            if ent["kind"] == "CIE":
                c = _CIE_INTERP.search(line)
                if not c:
                    raise ToolError("readelf: cannot parse CIE line %r" % line)
                ent["ra"] = int(c.group(4))
                ent["augmentation"] = c.group(1)
            else:
                f = _FDE_HDR.search(rest)
                if not f:
                    raise ToolError("readelf: cannot parse FDE line %r" % line)
                ent["cie"] = None if f.group(1) == "invalid" else int(f.group(1), 16)
                ent["pc_begin"] = int(f.group(2), 16)
                ent["pc_end"] = int(f.group(3), 16)
            sections[sec].append(ent)
            continue
        if re.match(r"^[0-9a-f]{8} ZERO terminator", line):
            ent = None
            continue
        if ent is None:
            continue
        if line.lstrip().startswith("LOC"):
            cols = line.split()[2:]  # LOC CFA <columns...>
            continue
        m = _ROW.match(line)
        if m and cols is not None:
            cells = _CELL.findall(m.group(2))
            if len(cells) != len(cols) + 1:
                raise ToolError("readelf: row %r does not match columns %r" % (line, cols))
            ent["rows"].append((int(m.group(1), 16), cells[0], list(zip(cols, cells[1:]))))
            continue
        ent["notes"].append(line.strip())
    # Resolve names now that every CIE's ra column is known.
    for sec, ents in sections.items():
        cies = {e["off"]: e for e in ents if e["kind"] == "CIE"}
        for e in ents:
            ra = e["ra"] if e["kind"] == "CIE" else (
                cies[e["cie"]]["ra"] if e.get("cie") in cies else None)
            rows = []
            for loc, cfa_cell, cells in e["rows"]:
                regs = {}
                for col, cell in cells:
                    if col == "ra":
                        # readelf names the CIE's return-address column "ra".
                        if ra is None:
                            raise ToolError("readelf: ra column without a CIE")
                        regno = ra
                    else:
                        regno = _reg_number(col, names)
                    regs[regno] = _readelf_cell(cell, names)
                rows.append((loc, _readelf_cfa(cfa_cell, names), regs, None))
            e["rows"] = rows
    return sections


# ---- raw instruction listing ----------------------------------------------

_ADV = re.compile(r"DW_CFA_(?:advance_loc[124]?|MIPS_advance_loc8): \d+ to ([0-9a-f]+)")
_SETLOC = re.compile(r"DW_CFA_set_loc: ([0-9a-f]+)")


def load_raw(readelf, path):
    """The raw `readelf -wN --debug-dump=frames` listing, per entry:
    {"cies": {(section, off): {"aug", "insns"}},
     "fdes": {(section, off): {"cie", "pc_begin", "insns"}}}
    where insns is [(loc, text)] with loc tracked through the advances."""
    rc, out, err = run([readelf, "-wN", "--debug-dump=frames", path])
    if rc != 0 and not out:
        raise ToolError("readelf --debug-dump=frames %s failed (%d): %s" % (path, rc, err.strip()))
    raw = {"cies": {}, "fdes": {}}
    sec, ent, loc = None, None, 0
    for line in out.splitlines():
        m = re.match(r"^Contents of the (\S+) section", line)
        if m:
            sec, ent = m.group(1), None
            continue
        m = _ENTRY.match(line)
        if m and sec:
            off = int(m.group(1), 16)
            if m.group(4) == "CIE":
                ent = raw["cies"][(sec, off)] = {"aug": None, "insns": []}
                loc = 0
            else:
                f = _FDE_HDR.search(m.group(5))
                loc = int(f.group(2), 16)
                ent = raw["fdes"][(sec, off)] = {
                    "cie": None if f.group(1) == "invalid" else int(f.group(1), 16),
                    "pc_begin": loc, "insns": []}
            continue
        if ent is None:
            continue
        s = line.strip()
        m = re.match(r'Augmentation: +"(.*)"$', s)
        if m:
            ent["aug"] = m.group(1)
            continue
        if not s.startswith("DW_CFA"):
            continue
        m = _ADV.match(s) or _SETLOC.match(s)
        if m:
            loc = int(m.group(1), 16)
        ent["insns"].append((loc, s))
    return raw


class LazyRaw:
    """load_raw on first use: only AArch64 binaries (ra_sign_state) and
    binaries with a disagreement to explain need the raw listing."""

    def __init__(self, readelf, path):
        self.readelf, self.path, self.raw = readelf, path, None

    def __getitem__(self, key):
        if self.raw is None:
            self.raw = load_raw(self.readelf, self.path)
        return self.raw[key]


def ra_state_points(raw, sec, off):
    """[(loc, ra_sign_state)] of one FDE. DW_CFA_AARCH64_negate_ra_state
    toggles the state; remember_state / restore_state save and restore it with
    the rest of the row (it is register column 34, RA_SIGN_STATE, in the
    AArch64 DWARF ABI); an FDE starts from its CIE's state."""
    fde = raw["fdes"].get((sec, off))
    if fde is None:
        return None

    def run_insns(insns, state, pts):
        stack = []
        for loc, s in insns:
            if s.startswith("DW_CFA_AARCH64_negate_ra_state") or s.startswith("DW_CFA_GNU_window_save"):
                state ^= 1
            elif s.startswith("DW_CFA_remember_state"):
                stack.append(state)
            elif s.startswith("DW_CFA_restore_state") and stack:
                state = stack.pop()
            else:
                continue
            pts.append((loc, state))
        return state

    cie = raw["cies"].get((sec, fde["cie"]))
    state = run_insns(cie["insns"], 0, []) if cie else 0
    pts = [(fde["pc_begin"], state)]
    run_insns(fde["insns"], state, pts)
    return pts


# ---- comparison -------------------------------------------------------------

def row_at(rows, pc):
    """The row in force at pc: the last row whose loc <= pc (a later row at the
    same loc replaces an earlier one). Rows are in increasing loc order."""
    i = bisect.bisect_right(rows, pc, key=lambda r: r[0])
    return rows[i - 1] if i else None


def eq_strict(a, b):
    return a == b


def eq_readelf(ours, theirs):
    """ours (backstep) against a readelf cell."""
    if theirs == U or theirs is None:
        # readelf prints "u" both for DW_CFA_undefined and for "no rule in
        # this row" (a column some other row of the FDE uses), and prints no
        # column at all for registers the FDE and its CIE never mention.
        return ours is None or ours == U
    if ours is None:
        return False
    if theirs[0] in ("expr", "valexpr", "cfaexp") and theirs[1] is None:
        # readelf shows only "exp"/"vexp"; the bytes are compared with libdwarf.
        return ours[0] == theirs[0]
    if theirs[0] in ("off", "valoff") and ours[0] == theirs[0]:
        return _s32(ours[1]) == theirs[1]
    if theirs[0] == "cfa" and ours[0] == "cfa":
        return ours[1] == theirs[1] and _s32(ours[2]) == theirs[2]
    return ours == theirs


def fmt_rule(r):
    if r is None:
        return "(no rule)"
    k = r[0]
    if k == "u":
        return "undefined"
    if k == "s":
        return "same_value"
    if k == "off":
        return "offset(%d)" % r[1]
    if k == "valoff":
        return "val_offset(%d)" % r[1]
    if k == "reg":
        return "register(r%d)" % r[1]
    if k in ("expr", "valexpr"):
        return "%s(%s)" % ("expression" if k == "expr" else "val_expression",
                           r[1] if r[1] is not None else "…")
    if k == "cfa":
        return "r%d%+d" % (r[1], r[2])
    if k == "cfaexp":
        return "expression(%s)" % (r[1] if r[1] is not None else "…")
    if k == "none":
        return "(no CFA rule)"
    return repr(r)


def compare_rows(ours, theirs, lo, hi, eq):
    """Compare two row lists as step functions over [lo, hi). Returns
    (points compared, [(loc, column, ours, theirs)]). An FDE of length 0
    covers no address: nothing to compare."""
    if lo >= hi:
        return 0, []
    pts = sorted({lo} | {r[0] for r in ours if lo <= r[0] < hi}
                 | {r[0] for r in theirs if lo <= r[0] < hi})
    diffs = []
    for p in pts:
        a, b = row_at(ours, p), row_at(theirs, p)
        if a is None or b is None:
            diffs.append((p, "row", "no row" if a is None else "row",
                          "no row" if b is None else "row"))
            continue
            continue
        if not eq(a[1], b[1]):
            diffs.append((p, "CFA", a[1], b[1]))
        for reg in sorted(set(a[2]) | set(b[2])):
            x, y = a[2].get(reg), b[2].get(reg)
            if not eq(x, y):
                diffs.append((p, "r%d" % reg, x, y))
    return len(pts), diffs


def match_fdes(ours, theirs):
    """Pair FDEs by (section, pc_begin, pc_end), in file order among equal keys."""
    by_key = defaultdict(list)
    for f in theirs:
        by_key[(f["section"], f["pc_begin"], f["pc_end"])].append(f)
    pairs, only_ours = [], []
    for f in ours:
        lst = by_key.get((f["section"], f["pc_begin"], f["pc_end"]))
        if lst:
            pairs.append((f, lst.pop(0)))
        else:
            only_ours.append(f)
    only_theirs = [f for lst in by_key.values() for f in lst]
    return pairs, only_ours, only_theirs


# ---- known limitations of the other tools ---------------------------------
# A disagreement is "explained" only when one of these predicates matches it
# exactly; each is documented, with evidence, in README.md under the same name.

_VAL_OFFSET_SF = re.compile(r"DW_CFA_val_offset_sf: r(\d+)\b.* is cfa([+-]\d+)$")


def _libdwarf_val_offset_sf(ctx, d):
    """libdwarf 20210528 gives the rule of DW_CFA_val_offset_sf to register 0
    instead of the operand register (DW_CFA_val_offset is right). Matches:
    column r0 where libdwarf shows val_offset(N) of the last
    DW_CFA_val_offset_sf executed at or before loc, and the operand register
    of such an instruction where we show exactly what it set."""
    fde = ctx["raw"]["fdes"].get((ctx["section"], ctx.get("off")))
    if fde is None or d["loc"] is None or not d["column"].startswith("r"):
        return False
    sf = []
    for loc, text in fde["insns"]:
        m = _VAL_OFFSET_SF.match(text)
        if m and loc <= d["loc"]:
            sf.append((int(m.group(1)), int(m.group(2))))
    if not sf:
        return False
    reg = int(d["column"][1:])
    if reg == 0 and d["theirs_r"] == ("valoff", sf[-1][1]):
        return True
    mine = [v for r, v in sf if r == reg]
    return bool(mine) and d["ours_r"] == ("valoff", mine[-1])


def _libdwarf_augmentation(ctx, d):
    """libdwarf 20210528 refuses a whole section (DW_DLE_FRAME_AUGMENTATION_UNKNOWN)
    when one CIE's augmentation is "S" without "z" (GNU as, .cfi_signal_frame
    in .debug_frame) or contains "B" (AArch64 pointer authentication with the
    B key). Matches that section-level error and the FDEs of that section it
    therefore does not list, only if the section has such a CIE."""
    sec = ctx["section"]
    augs = {c["aug"] for (s, _), c in ctx["raw"]["cies"].items() if s == sec}
    if not any(a == "S" or (a and a.startswith("z") and "B" in a) for a in augs):
        return False
    failed = any(e[0] == sec and e[1] is None and "DW_DLE_FRAME_AUGMENTATION_UNKNOWN" in e[2]
                 for e in ctx["dw_errors"])
    if not failed:
        return False
    if d["column"] == "section":
        return "DW_DLE_FRAME_AUGMENTATION_UNKNOWN" in d["theirs"]
    return d["column"] == "FDE" and d["ours"] == "present" and d["theirs"] == "absent"


def _libdwarf_negative_offset_extended(ctx, d):
    """libdwarf 20210528 does not know DW_CFA_GNU_negative_offset_extended
    (0x2f) and stops with DW_DLE_DF_FRAME_DECODING_ERROR for the FDE. Matches
    that error only for an FDE whose raw listing contains the opcode."""
    fde = ctx["raw"]["fdes"].get((ctx["section"], ctx.get("off")))
    return (fde is not None and d["column"] == "FDE"
            and d["theirs"] == "libdwarf error: DW_DLE_DF_FRAME_DECODING_ERROR(193)"
            and any(t.startswith("DW_CFA_GNU_negative_offset_extended") for _, t in fde["insns"]))


KNOWN = [
    ("libdwarf-GNU_negative_offset_extended", "libdwarf", _libdwarf_negative_offset_extended),
    ("libdwarf-val_offset_sf-register", "libdwarf", _libdwarf_val_offset_sf),
    ("libdwarf-augmentation-S-or-B", "libdwarf", _libdwarf_augmentation),
]


def explain(tool, ctx, d):
    for kid, ktool, pred in KNOWN:
        if ktool == tool and pred(ctx, d):
            return kid
    return None


# ---- one binary ---------------------------------------------------------------

class Report:
    def __init__(self, path):
        self.path = path
        self.unexplained = []
        self.explained = defaultdict(int)
        self.explained_list = []
        self.stats = {}

    def add(self, tool, ctx, loc, col, ours, theirs, ours_r=None, theirs_r=None):
        rec = {"tool": tool, "section": ctx["section"], "fde": ctx.get("off"),
               "pc": "0x%x..0x%x" % (ctx["pc_begin"], ctx["pc_end"]),
               "loc": loc, "column": col, "ours": ours, "theirs": theirs}
        kid = explain(tool, ctx, dict(rec, ours_r=ours_r, theirs_r=theirs_r))
        if kid:
            self.explained[(tool, kid)] += 1
            self.explained_list.append(dict(rec, known=kid))
        else:
            self.unexplained.append(rec)


def check_binary(path, args):
    t0 = time.time()
    machine = elf_machine(path)
    if machine not in REGNAMES:
        raise ToolError("%s: unsupported machine %d" % (path, machine))
    rep = Report(path)
    ours, corrupt, our_err = load_ours(args.backstep, path)
    dw, dw_errors = load_libdwarf(args.dwarf_rows, path)
    re_secs = load_readelf(args.readelf, path, machine)
    raw = LazyRaw(args.readelf, path)
    ours = [f for f in ours if not f["from_debug_file"]]

    # readelf FDEs, with the table they stand for.
    re_fdes = []
    for sec, ents in re_secs.items():
        cies = {e["off"]: e for e in ents if e["kind"] == "CIE"}
        for e in ents:
            if e["kind"] != "FDE":
                continue
            f = {"section": sec, "off": e["off"], "pc_begin": e["pc_begin"],
                 "pc_end": e["pc_end"], "rows": e["rows"], "notes": e["notes"],
                 "cie": e["cie"], "from_cie": False}
            if not f["rows"]:
                # readelf prints no table for an FDE whose instructions are all
                # DW_CFA_nop (its "all_nops" test): the FDE's only row is then
                # the CIE's initial row, which readelf printed under the CIE.
                cie = cies.get(e["cie"])
                if cie and cie["rows"]:
                    f["rows"] = [(e["pc_begin"],) + cie["rows"][-1][1:]]
                    f["from_cie"] = True
            re_fdes.append(f)

    # backstep's JSON has no FDE offsets; for messages, take readelf's.
    re_off = {}
    for f in re_fdes:
        re_off.setdefault((f["section"], f["pc_begin"], f["pc_end"]), f["off"])

    def our_off(o):
        return re_off.get((o["section"], o["pc_begin"], o["pc_end"]))

    # The contract of `dump --json`: a row at the FDE start, then one wherever
    # the row changes, in increasing order, inside [pc_begin, pc_end).
    for o in ours:
        ctx = {"section": o["section"], "off": our_off(o), "pc_begin": o["pc_begin"],
               "pc_end": o["pc_end"], "raw": raw, "dw_errors": dw_errors}
        rows = o["rows"]
        if not rows:
            rep.add("structure", ctx, None, "rows", "none", "a row at pc_begin")
            continue
        if rows[0][0] != o["pc_begin"]:
            rep.add("structure", ctx, rows[0][0], "rows", "first row here", "a row at pc_begin")
        for prev, cur in zip(rows, rows[1:]):
            if cur[0] <= prev[0]:
                rep.add("structure", ctx, cur[0], "rows", "not after 0x%x" % prev[0],
                        "increasing locs")
            elif cur[0] >= o["pc_end"]:
                rep.add("structure", ctx, cur[0], "rows", "at or after pc_end", "inside the FDE")
            elif cur[1:] == prev[1:]:
                rep.add("structure", ctx, cur[0], "rows", "same as the row before",
                        "rows only where something changes")

    stats = rep.stats
    stats["readelf_from_cie"] = sum(f["from_cie"] for f in re_fdes)
    for sec in (".eh_frame", ".debug_frame"):
        stats[sec] = {"ours": sum(f["section"] == sec for f in ours),
                      "libdwarf": sum(f["section"] == sec for f in dw),
                      "readelf": sum(f["section"] == sec for f in re_fdes)}

    for tool, theirs, eq in (("libdwarf", dw, eq_strict), ("readelf", re_fdes, eq_readelf)):
        pairs, only_ours, only_theirs = match_fdes(ours, theirs)
        nfde = nrows = 0
        for o, t in pairs:
            ctx = {"section": o["section"], "off": t.get("off"), "pc_begin": o["pc_begin"],
                   "pc_end": o["pc_end"], "raw": raw, "dw_errors": dw_errors}
            if tool == "libdwarf" and t["errors"]:
                for e in t["errors"]:
                    rep.add(tool, ctx, None, "FDE", "rows computed", "libdwarf error: " + e)
                continue
            if tool == "readelf" and not t["rows"]:
                # readelf printed nothing for this FDE nor its CIE (both all
                # DW_CFA_nop): it offers no view to compare with.
                stats.setdefault("readelf_silent", 0)
                stats["readelf_silent"] += 1
                continue
            if tool == "readelf" and t["notes"]:
                for n in t["notes"]:
                    rep.add(tool, ctx, None, "FDE", "", "readelf says: " + n)
            n, diffs = compare_rows(o["rows"], t["rows"], o["pc_begin"], o["pc_end"], eq)
            nfde += 1
            nrows += n
            for loc, col, a, b in diffs:
                if col == "row":
                    rep.add(tool, ctx, loc, col, a, b)
                else:
                    rep.add(tool, ctx, loc, col, fmt_rule(a), fmt_rule(b), a, b)
        for o in only_ours:
            ctx = {"section": o["section"], "off": our_off(o), "pc_begin": o["pc_begin"],
                   "pc_end": o["pc_end"], "raw": raw, "dw_errors": dw_errors}
            rep.add(tool, ctx, None, "FDE", "present", "absent")
        for t in only_theirs:
            ctx = {"section": t["section"], "off": t.get("off"), "pc_begin": t["pc_begin"],
                   "pc_end": t["pc_end"], "raw": raw, "dw_errors": dw_errors}
            why = [c for c in corrupt if c[0] == t["section"] and c[1] == t.get("off")]
            rep.add(tool, ctx, None, "FDE",
                    "absent" + (" (%s: %s)" % (why[0][2], why[0][3]) if why else ""), "present")
        stats[tool] = {"fdes": nfde, "rows": nrows}

    for sec, off, msg in dw_errors:
        if off is None:
            ctx = {"section": sec, "off": None, "pc_begin": 0, "pc_end": 0, "raw": raw,
                   "dw_errors": dw_errors}
            rep.add("libdwarf", ctx, None, "section", "", "libdwarf error: " + msg)

    # AArch64: ra_sign_state against the raw listing.
    if machine == EM_AARCH64:
        by_key = {}
        for f in re_fdes:
            by_key.setdefault((f["section"], f["pc_begin"], f["pc_end"]), []).append(f)
        nfde = nrows = 0
        for o in ours:
            lst = by_key.get((o["section"], o["pc_begin"], o["pc_end"]))
            if not lst:
                continue
            t = lst.pop(0)
            pts = ra_state_points(raw, t["section"], t["off"])
            if pts is None:
                continue
            lo, hi = o["pc_begin"], o["pc_end"]
            if lo >= hi:
                continue
            locs = sorted({lo} | {p[0] for p in pts if lo <= p[0] < hi}
                          | {r[0] for r in o["rows"] if lo <= r[0] < hi})
            nfde += 1
            ctx = {"section": o["section"], "off": t["off"], "pc_begin": lo, "pc_end": hi,
                   "raw": raw}
            for p in locs:
                a = row_at(o["rows"], p)
                want = None
                for q in pts:
                    if q[0] <= p:
                        want = q[1]
                nrows += 1
                got = a[3] if a else None
                if got != want:
                    rep.add("raw listing", ctx, p, "ra_sign_state", str(got), str(want))
        stats["ra_sign_state"] = {"fdes": nfde, "rows": nrows}

    stats["seconds"] = time.time() - t0
    stats["backstep_stderr"] = our_err.strip().splitlines()
    return rep


def print_report(rep, machine, verbose, limit):
    s = rep.stats
    print("== %s (%s), %.2fs" % (rep.path, ARCHNAME[machine], s["seconds"]))
    for sec in (".eh_frame", ".debug_frame"):
        c = s[sec]
        if any(c.values()):
            print("   %-13s FDEs: backstep %d, libdwarf %d, readelf %d"
                  % (sec, c["ours"], c["libdwarf"], c["readelf"]))
    for tool in ("libdwarf", "readelf", "ra_sign_state"):
        if tool in s:
            print("   vs %-14s %6d FDEs, %7d rows compared"
                  % (tool if tool != "ra_sign_state" else "raw listing (ra_sign_state)",
                     s[tool]["fdes"], s[tool]["rows"]))
    if s.get("readelf_from_cie"):
        print("   (%d FDEs of only DW_CFA_nop: readelf's row is the CIE's initial row)"
              % s["readelf_from_cie"])
    if s.get("readelf_silent"):
        print("   (%d FDEs: readelf printed no row for the FDE nor its CIE)" % s["readelf_silent"])
    for line in s["backstep_stderr"]:
        print("   backstep stderr: " + line)
    for (tool, kid), n in sorted(rep.explained.items()):
        print("   explained: %d disagreements with %s: %s (README.md)" % (n, tool, kid))
    if verbose:
        for d in rep.explained_list:
            print("      %s FDE %s loc %s %s: ours %s, %s %s [%s]" % (
                d["section"], "0x%x" % d["fde"] if d["fde"] is not None else "?",
                "0x%x" % d["loc"] if d["loc"] is not None else "-", d["column"],
                d["ours"], d["tool"], d["theirs"], d["known"]))
    if rep.unexplained:
        print("   UNEXPLAINED: %d disagreements" % len(rep.unexplained))
        groups = defaultdict(list)
        for d in rep.unexplained:
            groups[(d["tool"], d["section"], d["fde"], d["pc"])].append(d)
        shown = 0
        for (tool, sec, fde, pc), ds in groups.items():
            if limit and shown >= limit:
                print("   ... %d more FDEs with disagreements (use --limit 0)"
                      % (len(groups) - shown))
                break
            shown += 1
            print("   %s FDE %s pc=%s vs %s:" % (sec, "0x%x" % fde if fde is not None else "?",
                                                 pc, tool))
            for d in ds[: (None if verbose else 8)]:
                print("      loc %-12s %-14s ours %-28s %s %s" % (
                    "0x%x" % d["loc"] if d["loc"] is not None else "-", d["column"],
                    d["ours"], tool, d["theirs"]))
            if not verbose and len(ds) > 8:
                print("      ... %d more" % (len(ds) - 8))
    else:
        print("   OK: no unexplained disagreement")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backstep", required=True, help="path of the backstep CLI")
    ap.add_argument("--dwarf-rows", required=True, help="path of tests/diff dwarf_rows")
    ap.add_argument("--readelf", default="readelf")
    ap.add_argument("--json", help="write all disagreements to this file")
    ap.add_argument("--limit", type=int, default=20, help="FDEs listed per binary (0: all)")
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("binaries", nargs="+")
    args = ap.parse_args()

    status = 0
    all_diffs = []
    for path in args.binaries:
        if not os.path.exists(path):
            print("== %s: missing, skipped" % path)
            continue
        try:
            machine = elf_machine(path)
            rep = check_binary(path, args)
        except ToolError as e:
            print("== %s: ERROR: %s" % (path, e))
            status = max(status, 2)
            continue
        print_report(rep, machine, args.verbose, args.limit)
        all_diffs += [dict(d, binary=path) for d in rep.unexplained]
        if rep.unexplained:
            status = max(status, 1)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(all_diffs, f, indent=1)
    sys.exit(status)


if __name__ == "__main__":
    main()
