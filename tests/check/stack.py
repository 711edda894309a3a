#!/usr/bin/env python3
"""`backstep check --stack` on hand-written fixtures.

    stack.py BACKSTEP SRCDIR

stack.S      one lie per lie_* function: a difference at exactly each
             instruction marked M_<function>_<k> and nowhere else; every
             ok_* function checked in full; the shapes part_* (an indirect
             jump, a realigned stack, an expression over a register that
             holds no frame address) checked in part and sigtramp (a signal
             frame) and _start (the outermost frame) not at all, each for
             its reason. Exit status 1.
stack_plt.S  a shared object calling through the PLT, linked three ways
             (lazy, -z now, IBT PLTs): everything checked, the PLT too,
             no difference, exit status 0; `call abort@PLT` never returns
             (by the relocation's name), which a call to another name shows.
--max-findings caps the differences listed (the rest counted). Text output,
and bad input: one stderr line and exit status 2.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from tally import check, finish

backstep, srcdir = sys.argv[1], sys.argv[2]


def run(*args, timeout=120):
    p = subprocess.run([backstep, "check", "--stack", *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def run_json(path):
    rc, out, err = run("--json", path)
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    return rc, rows, err


def symbols(path):
    """{name: address} of the .symtab, from nm."""
    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3:
            syms[f[2]] = int(f[0], 16)
    return syms


def build(name, src, *flags):
    out = os.path.join(tmp, name)
    subprocess.run(["gcc", "-nostdlib", "-Wl,--build-id=none", *flags, "-o", out, src],
                   check=True, capture_output=True)
    return out


tmp = tempfile.mkdtemp()
try:
    # ---- stack.S --------------------------------------------------------
    exe = build("stack", os.path.join(srcdir, "stack.S"), "-static")
    syms = symbols(exe)
    rc, rows, err = run_json(exe)
    check(rc == 1, f"stack: exit status {rc}, want 1 ({err!r})")
    check(err == "", f"stack: stderr {err!r}")
    diffs = [r for r in rows if r["type"] == "finding" and r["kind"] == "stack"]
    gaveup = [r for r in rows if r["type"] == "finding" and r["kind"] == "cannot-analyse"]
    summary = [r for r in rows if r["type"] == "file"]
    check(len(summary) == 1, f"stack: {len(summary)} file records")

    markers = {}
    for name, addr in syms.items():
        if name.startswith("M_"):
            fn = name[2:].rsplit("_", 1)[0]
            markers[addr] = fn
    check(len(markers) >= 12, f"stack: only {len(markers)} markers")
    got = {int(r["addr"], 16): r for r in diffs}
    for addr, fn in sorted(markers.items()):
        r = got.get(addr)
        check(r is not None, f"stack: no difference at {fn} (0x{addr:x})")
        if r:
            check(r.get("symbol") == fn, f"stack: difference at 0x{addr:x} named {r.get('symbol')}, "
                  f"want {fn}")
    for addr, r in sorted(got.items()):
        check(addr in markers, f"stack: unexpected difference at 0x{addr:x} "
              f"({r.get('symbol')}+{r.get('offset')}): {r['insn']}: {r['detail']}")
    # What each difference says.
    by_fn = {}
    for r in diffs:
        by_fn.setdefault(r.get("symbol"), []).append(r)

    def says(fn, needle):
        return any(needle in r["detail"] for r in by_fn.get(fn, []))

    check(says("lie_push_offset", "CFA: row rsp+24, code rsp+16"), "stack: push offset detail")
    check(says("lie_pop_offset", "CFA: row rsp+16, code rsp+8"), "stack: pop offset detail")
    check(says("lie_save_slot", "rbx: row [CFA-16], code same|[CFA-24]"), "stack: save slot detail")
    check(says("lie_leave", "CFA: row rbp+16, code rsp+8"), "stack: leave detail")
    check(says("lie_remember", "CFA: row rsp+8, code rsp+16"), "stack: remember detail")
    check(says("lie_no_save", "r12: row same, code [CFA-16]"), "stack: no-save detail")
    check(says("lie_alloca", "CFA: row rsp+16, code rbp+16"), "stack: alloca detail")
    check(says("lie_switch", "CFA: row rsp+32, code rsp+24"), "stack: switch case detail")
    check(says("lie_drap", "rbp: row [DW_OP_breg6 (rbp) +0], code same"),
          "stack: gcc 12 DRAP epilogue detail")
    check(says("lie_split.cold", "CFA: row rsp+24, code rsp+16"),
          "stack: a .cold part checked with the state its hot part jumps in with")
    check(all(r["insn"] and r["row"] and r["code"] for r in diffs), "stack: empty insn/row/code")
    lie_ret = [r for r in by_fn.get("lie_leave", [])]
    check(lie_ret and lie_ret[0]["insn"] == "ret", f"stack: lie_leave's instruction {lie_ret}")

    # Functions: ok_* in full; the others not, for their reasons.
    reasons = {r.get("symbol"): r["reason"] for r in gaveup}
    for name in syms:
        if name.startswith("ok_"):
            check(name not in reasons, f"stack: {name} not checked in full: "
                  f"{[r['detail'] for r in gaveup if r.get('symbol') == name]}")
    check(reasons.get("part_ijump") == "indirect jump", f"stack: part_ijump {reasons}")
    check(reasons.get("sigtramp") == "signal frame", f"stack: sigtramp {reasons}")
    check(reasons.get("_start") == "outermost frame", f"stack: _start {reasons}")
    check(reasons.get("part_realign") == "realigned stack", f"stack: part_realign {reasons}")
    check(reasons.get("part_expression") == "expression rule", f"stack: part_expression {reasons}")
    check(reasons.get("part_stale_bound") == "indirect jump",
          f"stack: part_stale_bound read with an old bound: {reasons}")
    check(set(reasons) == {"part_ijump", "part_realign", "part_expression", "part_stale_bound",
                           "sigtramp", "_start"}, f"stack: given up {reasons}")
    s = summary[0] if summary else {}
    nfdes = subprocess.run(["readelf", "--debug-dump=frames", exe], capture_output=True,
                           text=True).stdout.count(" FDE ")
    check(s.get("fdes") == nfdes, f"stack: {s.get('fdes')} FDEs, readelf says {nfdes}")
    check(s.get("differences") == len(markers), f"stack: summary {s}")
    check(s.get("functions_skipped") == 2 and s.get("functions_partial") == 4,
          f"stack: summary {s}")
    check(s.get("checked", 0) + sum(s.get("not_checked", {}).values()) == s.get("instructions"),
          f"stack: checked + not checked != instructions: {s}")

    # --max-findings: the differences listed are capped, the rest counted.
    rc, out, err = run("--json", "--max-findings", "2", exe)
    capped = [json.loads(l) for l in out.splitlines() if l.strip()]
    listed = [r for r in capped if r["type"] == "finding" and r["kind"] == "stack"]
    cs = [r for r in capped if r["type"] == "file"]
    check(rc == 1 and len(listed) == 2 and cs and cs[0]["differences"] == len(markers) and
          cs[0]["suppressed"] >= len(markers) - 2, f"stack --max-findings 2: {rc} {len(listed)} {cs}")
    for bad in ("0", "-1", "2x", "", "100000001"):
        rc, out, err = run("--max-findings", bad, exe)
        check(rc == 2 and out == "" and err.startswith("backstep: --max-findings: "),
              f"stack --max-findings {bad!r}: {rc} {out!r} {err!r}")

    # The text form.
    rc, out, err = run(exe)
    lines = out.splitlines()
    check(rc == 1 and err == "", f"stack text: {rc} {err!r}")
    check(any(l.startswith(f"{exe}: error: stack: 0x") and " ret: CFA: row rbp+16" in l and
              "(lie_leave+0x" in l for l in lines), f"stack text: no lie_leave line: {lines}")
    check(not any("cannot-analyse" in l for l in lines), "stack text: info printed without -v")
    check(lines and lines[-1].startswith(f"{exe}: stack: {nfdes} functions"),
          f"stack text: summary {lines[-1:]}")
    rc, out, err = run("-v", exe)
    check("info: cannot-analyse: signal frame:" in out, "stack -v: no signal-frame line")

    # ---- stack_plt.S ----------------------------------------------------
    plt_src = os.path.join(srcdir, "stack_plt.S")
    for flags in ([], ["-Wl,-z,now"], ["-Wl,-z,ibtplt"]):
        so = build("plt.so", plt_src, "-shared", *flags)
        rc, rows, err = run_json(so)
        s = [r for r in rows if r["type"] == "file"][0]
        what = f"plt {' '.join(flags) or 'lazy'}"
        check(rc == 0 and err == "", f"{what}: exit status {rc} ({err!r})")
        check(s["differences"] == 0 and s["checked"] == s["instructions"] and
              s["functions_full"] == s["fdes"], f"{what}: {s}")
        check(s["fdes"] >= 3, f"{what}: {s['fdes']} FDEs (the PLT's missing?)")
    # abort@PLT never returns; a call to another name would, and the code
    # after it would join the other path with another stack height.
    text = open(plt_src).read().replace("call abort@PLT", "call aborted@PLT")
    other = os.path.join(tmp, "plt_other.S")
    with open(other, "w") as f:
        f.write(text)
    so = build("plt_other.so", other, "-shared")
    rc, rows, err = run_json(so)
    s = [r for r in rows if r["type"] == "file"][0]
    check(rc == 0 and s["differences"] == 0 and s["not_checked"]["state unknown"] > 0,
          f"plt other: a returning call should leave the join unknown: {s}")

    # ---- bad input --------------------------------------------------------
    def expect_bad(path, needle):
        rc, out, err = run(path)
        lines = err.splitlines()
        check(rc == 2 and len(lines) == 1 and lines[0].startswith(f"backstep: {path}: ") and
              needle in lines[0] and out == "", f"{path}: {rc} {out!r} {err!r}")

    def write(name, content):
        path = os.path.join(tmp, name)
        with open(path, "wb") as f:
            f.write(content)
        return path

    data = open(exe, "rb").read()
    expect_bad(os.path.join(tmp, "missing"), "No such file")
    expect_bad(write("text", b"#!/bin/sh\n"), "not an ELF file")
    for n in (20, 64, len(data) // 2):
        expect_bad(write(f"trunc{n}", data[:n]), "")
    obj = os.path.join(tmp, "stack.o")
    subprocess.run(["gcc", "-c", "-o", obj, os.path.join(srcdir, "stack.S")], check=True)
    expect_bad(obj, "relocatable")
    # A machine the analysis has no semantics for (i386; AArch64 is
    # tests/check/stack_a64.py's).
    i386 = os.path.join(tmp, "i386.so")
    with open(os.path.join(tmp, "i386.s"), "w") as f:
        f.write(".text\nf: ret\n")
    subprocess.run(["gcc", "-m32", "-nostdlib", "-shared", "-o", i386, os.path.join(tmp, "i386.s")],
                   check=True, capture_output=True)
    expect_bad(i386, "x86-64 and AArch64")
    # A directory: objects and other machines are skipped and counted, the
    # exit status is the differences' (stack has some).
    d = os.path.join(tmp, "dir")
    os.mkdir(d)
    shutil.copy(exe, d)
    shutil.copy(obj, d)
    write("dir/notes.txt", b"hello\n")
    rc, out, err = run("--json", d)
    tot = [json.loads(l) for l in out.splitlines() if '"total"' in l]
    check(rc == 1 and err == "" and tot and tot[0]["elf_files"] == 1 and
          tot[0]["unsupported"] == 1 and tot[0]["non_elf"] == 1 and
          tot[0]["differences"] == len(markers), f"dir: {rc} {err!r} {tot}")
finally:
    shutil.rmtree(tmp)

finish()
