#!/usr/bin/env python3
"""Seeds for fuzz_walk (fuzz/fuzz_walk.c): a small .eh_frame of the shapes
compilers emit (rsp-based frames, rbp frames, gcc's DRAP realignment with
a CFA expression, a signal frame's 'S' CIE, an outermost frame) and a
stack whose return addresses lead through them, so that the fuzzer starts
from walks that go somewhere.

  make_walk_seeds.py OUTDIR
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from seedtool import sleb_enc as sleb, uleb_enc as uleb  # noqa: E402

CODE, EH, STACK = 0x400000, 0x500000, 0x7ff000000000


def pad(b):
    return b + b"\0" * (-len(b) % 8)


def cie(aug=b"zR", ra=16):
    body = struct.pack("<IB", 0, 1) + aug + b"\0" + uleb(1) + sleb(-8) + uleb(ra)
    body += uleb(1) + bytes([0x1b])                     # augmentation data: pcrel sdata4
    body += bytes([0x0c, 7, 8, 0x90, 1])                # def_cfa rsp+8; offset r16 at cfa-8
    return body


def section(groups):
    """GROUPS: (augmentation, [(pc_begin, length, instructions)]): a CIE
    each, its FDEs after it; a terminator at the end."""
    out = bytearray()
    for aug, fdes in groups:
        cie_off = len(out)
        c = pad(cie(aug))
        out += struct.pack("<I", len(c)) + c
        for begin, length, insns in fdes:
            off = len(out)
            body = struct.pack("<Ii", off + 4 - cie_off, begin - (EH + off + 8))
            body = pad(body + struct.pack("<I", length) + uleb(0) + insns)
            out += struct.pack("<I", len(body)) + body
    out += struct.pack("<I", 0)
    return bytes(out)


def adv(n):
    return bytes([0x40 | n])


# The functions, each 0x100 bytes at CODE + 0x1000 * k.
F_SP = CODE + 0x1000     # sub $40,%rsp: CFA rsp+48 after +4
F_BP = CODE + 0x2000     # push %rbp; mov %rsp,%rbp: CFA rbp+16, rbp at cfa-16
F_DRAP = CODE + 0x3000   # gcc's DRAP: CFA = *(rbp-8), rbp at [rbp]
F_MAIN = CODE + 0x4000   # outermost: RA undefined after +1
fdes = [
    (F_SP, 0x100, adv(4) + bytes([0x0e]) + uleb(48)),
    (F_BP, 0x100, adv(1) + bytes([0x0e, 16, 0x86, 2]) + adv(3) + bytes([0x0d, 6])),
    (F_DRAP, 0x100, adv(8) + bytes([0x0f, 3, 0x76, 0x78, 0x06]) +
     bytes([0x10, 6, 2, 0x76, 0])),
    (F_MAIN, 0x100, adv(1) + bytes([0x07, 16])),
]




def seed(name, eh, pc, sp, fp, stack, flags=0):
    hdr = struct.pack("<HBBHHH", len(eh), flags, 0, pc - CODE, sp - STACK,
                      0xffff if fp == 0 else fp - STACK)
    with open(os.path.join(sys.argv[1], name), "wb") as f:
        f.write(hdr + eh + stack)


def main():
    os.makedirs(sys.argv[1], exist_ok=True)
    eh = section([(b"zR", fdes)])
    # A walk from F_SP+0x10 (CFA sp+48) -> F_BP+0x20 (rbp frame) ->
    # F_DRAP+0x20 (CFA from *(rbp-8)) -> F_MAIN+0x10 (outermost).
    st = bytearray(0x800)
    def put(addr, v):
        struct.pack_into("<Q", st, addr - STACK, v)
    sp0 = STACK + 0x100
    cfa1 = sp0 + 48                      # F_SP's CFA
    put(cfa1 - 8, F_BP + 0x20)           # its return address, into F_BP
    rbp_bp = cfa1 + 0x30                 # F_BP's frame: rbp -> saved rbp
    cfa2 = rbp_bp + 16
    put(rbp_bp + 8, F_DRAP + 0x20)       # F_BP's RA, into F_DRAP
    drap_rbp = cfa2 + 0x40               # F_DRAP's rbp
    put(rbp_bp, drap_rbp)                # F_BP saved F_DRAP's rbp
    cfa3 = drap_rbp + 0x80               # F_DRAP's CFA, kept at [rbp-8]
    put(drap_rbp - 8, cfa3)
    put(drap_rbp, STACK + 0x700)         # the caller's rbp, at [rbp]
    put(cfa3 - 8, F_MAIN + 0x10)         # F_DRAP's RA, into main
    # F_SP keeps rbp: the initial FP is F_BP's frame pointer.
    seed("chain", eh, F_SP + 0x10, sp0, rbp_bp, bytes(st), flags=1)
    seed("chain_index", eh, F_SP + 0x10, sp0, rbp_bp, bytes(st), flags=1 | 4)
    seed("chain_nowindow", eh, F_SP + 0x10, sp0, rbp_bp, bytes(st), flags=1 | 2)
    seed("chain_ra", eh, F_SP + 0x11, sp0, rbp_bp, bytes(st), flags=0)
    # The same through the rbp frame first.
    seed("from_bp", eh, F_BP + 0x20, rbp_bp - 0x20, rbp_bp, bytes(st), flags=1)
    # A return address of 0 above the first frame: the end.
    lp = bytearray(0x200)
    struct.pack_into("<Q", lp, 0x100 + 40, F_SP + 0x10)
    seed("zero_ra", eh, F_SP + 0x10, STACK + 0x100, 0, bytes(lp), flags=1)
    # No CFI: the frame-pointer chain.
    fc = bytearray(0x200)
    struct.pack_into("<QQ", fc, 0x40, STACK + 0x80, CODE + 0x8010)
    struct.pack_into("<QQ", fc, 0x80, 0, CODE + 0x8020)
    seed("fpchain", eh, CODE + 0x8000, STACK + 0x20, STACK + 0x40, bytes(fc), flags=0)
    # A signal frame: an 'S' CIE over the trampoline (its FDE a byte early,
    # as glibc's), the ucontext at the SP: gregs at +40 (rbp at 10, rsp at
    # 15, rip at 16 words), the interrupted frame in F_SP.
    sig = section([(b"zR", fdes), (b"zRS", [(CODE + 0x4fff, 0x11, b"")])])
    sf = bytearray(0x400)
    g = 0x40 + 40
    struct.pack_into("<Q", sf, g + 10 * 8, STACK + 0x300)   # rbp
    struct.pack_into("<Q", sf, g + 15 * 8, STACK + 0x200)   # rsp
    struct.pack_into("<Q", sf, g + 16 * 8, F_SP + 0x10)     # rip
    struct.pack_into("<Q", sf, 0x200 + 40, F_MAIN + 0x10)   # F_SP's return address
    seed("signal", sig, CODE + 0x5000, STACK + 0x40, 0, bytes(sf), flags=0)
    seed("empty", b"", CODE + 0x10, STACK, 0, b"\0" * 64, flags=1)


if __name__ == "__main__":
    main()
