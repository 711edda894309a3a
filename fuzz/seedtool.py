#!/usr/bin/env python3
"""Seed packing for the fuzz harnesses; driven by make_seeds.sh.

  seedtool.py eh ELF OUT [--debug-frame [--dwarf64]] [--no-hdr] [--hdr-enc ENC]
        .eh_frame (or .debug_frame) of ELF, with its .eh_frame_hdr, packed in
        fuzz_eh_frame's input format; --dwarf64 rewrites a .debug_frame in
        the 64-bit DWARF format. --hdr-enc rebuilds the header's search
        table with another DW_EH_PE encoding (e.g. 0x3c datarel|sdata8).
  seedtool.py subset ELF OUT AUG [MAX]
        Only the CIEs whose augmentation contains AUG and (at most MAX of)
        their FDEs, re-linked into a small .eh_frame with a fresh header.
  seedtool.py handmade OUTDIR
        Small hand-assembled tables in fuzz_eh_frame's format for shapes no
        compiler emits: legacy "eh" augmentation, every machine limit, all
        pointer encodings, 64-bit lengths, .debug_frame v4 with segment
        selectors, broken .eh_frame_hdr tables.
  seedtool.py expr OUTDIR
        The expression seeds for fuzz_expr.

The input formats are documented at the top of fuzz_eh_frame.c and
fuzz_expr.c. Only little-endian ELF is handled, as in backstep.
"""
import os
import struct
import sys

# ---- ELF ---------------------------------------------------------------------


class Elf:
    def __init__(self, path):
        self.raw = open(path, 'rb').read()
        r = self.raw
        if r[:4] != b'\x7fELF' or r[5] != 1:
            raise SystemExit(f'{path}: not a little-endian ELF')
        self.is64 = r[4] == 2
        self.addr_size = 8 if self.is64 else 4
        if self.is64:
            shoff, = struct.unpack_from('<Q', r, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from('<HHH', r, 0x3a)
        else:
            shoff, = struct.unpack_from('<I', r, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from('<HHH', r, 0x2e)
        self.sections = {}
        shdrs = []
        for i in range(shnum):
            o = shoff + i * shentsize
            if self.is64:
                name, typ, flags, addr, off, size = struct.unpack_from('<IIQQQQ', r, o)
            else:
                name, typ, flags, addr, off, size = struct.unpack_from('<IIIIII', r, o)
            shdrs.append((name, typ, flags, addr, off, size))
        stroff = shdrs[shstrndx][4]
        for name, typ, flags, addr, off, size in shdrs:
            end = r.index(b'\0', stroff + name)
            n = r[stroff + name:end].decode()
            data = b'' if typ == 8 else r[off:off + size]  # SHT_NOBITS
            self.sections.setdefault(n, (addr, data))

    def section(self, name):
        return self.sections.get(name, (0, b''))


# ---- DW_EH_PE pointers --------------------------------------------------------


def uleb(b, p):
    v = s = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            return v, p


def sleb(b, p):
    v = s = 0
    while True:
        x = b[p]
        p += 1
        v |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            if x & 0x40:
                v -= 1 << s
            return v, p


def read_ptr(b, p, enc, addr_size, field_addr):
    fmt = enc & 0x0f
    sizes = {0x0: addr_size, 0x2: 2, 0x3: 4, 0x4: 8, 0xa: 2, 0xb: 4, 0xc: 8}
    if fmt == 0x1:
        v, p2 = uleb(b, p)
    elif fmt == 0x9:
        v, p2 = sleb(b, p)
    else:
        n = sizes[fmt]
        v = int.from_bytes(b[p:p + n], 'little', signed=fmt in (0xa, 0xb, 0xc))
        p2 = p + n
    if enc & 0x70 == 0x10:
        v += field_addr
    return v & ((1 << (8 * addr_size)) - 1), p2


def encode_ptr(v, enc, addr_size):
    fmt = enc & 0x0f
    sizes = {0x0: addr_size, 0x2: 2, 0x3: 4, 0x4: 8, 0xa: 2, 0xb: 4, 0xc: 8}
    n = sizes[fmt]
    v &= (1 << (8 * n)) - 1
    return v.to_bytes(n, 'little')


# ---- .eh_frame entries ------------------------------------------------------------


def entries(sec):
    """(offset, length-field bytes + body) of each entry, up to a terminator."""
    out, off = [], 0
    while off + 4 <= len(sec):
        n, = struct.unpack_from('<I', sec, off)
        if n == 0:
            break
        if n == 0xffffffff:
            raise SystemExit('64-bit .eh_frame entries not handled here')
        out.append((off, sec[off:off + 4 + n]))
        off += 4 + n
    return out


def cie_info(e, addr_size):
    """(augmentation, FDE pointer encoding) of a CIE entry."""
    p = 9  # length, id, version
    aug_end = e.index(b'\0', p)
    aug = e[p:aug_end].decode()
    p = aug_end + 1
    if aug.startswith('eh'):
        p += addr_size
    _, p = uleb(e, p)
    _, p = sleb(e, p)
    if e[8] == 1:
        p += 1
    else:
        _, p = uleb(e, p)
    enc = 0x00
    if aug.startswith('z'):
        _, p = uleb(e, p)
        for c in aug[1:]:
            if c == 'R':
                enc = e[p]
                p += 1
            elif c == 'L':
                p += 1
            elif c == 'P':
                penc = e[p]
                _, p = read_ptr(e, p + 1, penc & 0x7f, addr_size, 0)
    return aug, enc


def fde_pc_begin(e, off, sec_addr, enc, addr_size):
    return read_ptr(e, 8, enc, addr_size, sec_addr + off + 8)[0]


def make_hdr(sec, sec_addr, hdr_addr, addr_size, table_enc=0x3b):
    """A fresh .eh_frame_hdr for SEC: version 1, pcrel|sdata4 eh_frame_ptr,
    udata4 count, the table in TABLE_ENC (absptr or datarel forms)."""
    cies, rows = {}, []
    for off, e in entries(sec):
        cid, = struct.unpack_from('<I', e, 4)
        if cid == 0:
            cies[off] = cie_info(e, addr_size)
            continue
        cie_off = off + 4 - cid
        _, enc = cies[cie_off]
        rows.append((fde_pc_begin(e, off, sec_addr, enc, addr_size), sec_addr + off))
    rows.sort()
    base = hdr_addr if table_enc & 0x70 == 0x30 else 0
    out = bytearray([1, 0x1b, 0x03, table_enc])
    out += struct.pack('<i', sec_addr - (hdr_addr + 4))  # eh_frame_ptr, pcrel
    out += struct.pack('<I', len(rows))
    for loc, fde in rows:
        out += encode_ptr(loc - base, table_enc, addr_size)
        out += encode_ptr(fde - base, table_enc, addr_size)
    return bytes(out)


def subset(sec, addr_size, aug_part, limit):
    """The CIEs whose augmentation contains AUG_PART and their FDEs."""
    keep_cies, out, new_off = {}, bytearray(), {}
    ents = entries(sec)
    for off, e in ents:
        cid, = struct.unpack_from('<I', e, 4)
        if cid == 0 and aug_part in cie_info(e, addr_size)[0]:
            keep_cies[off] = True
    nfde = 0
    for off, e in ents:
        cid, = struct.unpack_from('<I', e, 4)
        if cid == 0:
            if off in keep_cies:
                new_off[off] = len(out)
                out += e
            continue
        cie_off = off + 4 - cid
        if cie_off not in keep_cies or nfde >= limit:
            continue
        # The CIE pointer is relative to itself; the pc_begin field (pcrel in
        # practice) moves with the FDE, so the function appears elsewhere —
        # fine for a seed.
        here = len(out)
        e = bytearray(e)
        struct.pack_into('<I', e, 4, here + 4 - new_off[cie_off])
        out += e
        nfde += 1
    return bytes(out) + b'\0\0\0\0'


def to_dwarf64(sec):
    """A 32-bit-format .debug_frame rewritten in the 64-bit DWARF format."""
    out, new_off = bytearray(), {}
    for off, e in entries(sec):
        cid, = struct.unpack_from('<I', e, 4)
        new_off[off] = len(out)
        nid = 0xffffffffffffffff if cid == 0xffffffff else new_off[cid]
        body = e[8:]
        out += struct.pack('<IQQ', 0xffffffff, 8 + len(body), nid) + body
    return bytes(out)


def pack(hdr, sec, flags, sec_addr, hdr_addr, text_addr=0, data_addr=0):
    return (struct.pack('<HBBQQQQ', len(hdr), flags, 0, sec_addr, hdr_addr, text_addr,
                        data_addr) + hdr + sec)


# ---- Commands -------------------------------------------------------------------


def cmd_eh(argv):
    path, out = argv[0], argv[1]
    opts = argv[2:]
    elf = Elf(path)
    flags = 0 if elf.is64 else 2
    text_addr = elf.section('.text')[0]
    data_addr = elf.section('.got')[0]
    if '--debug-frame' in opts:
        addr, sec = elf.section('.debug_frame')
        if not sec:
            raise SystemExit(f'{path}: no .debug_frame')
        if '--dwarf64' in opts:
            sec = to_dwarf64(sec)
        data = pack(b'', sec, flags | 1, addr, 0, text_addr, data_addr)
    else:
        addr, sec = elf.section('.eh_frame')
        hdr_addr, hdr = elf.section('.eh_frame_hdr')
        if not sec:
            raise SystemExit(f'{path}: no .eh_frame')
        if '--no-hdr' in opts:
            hdr = b''
        if '--hdr-enc' in opts:
            enc = int(opts[opts.index('--hdr-enc') + 1], 0)
            if not hdr_addr:
                hdr_addr = addr - 0x100
            hdr = make_hdr(sec, addr, hdr_addr, elf.addr_size, enc)
        data = pack(hdr, sec, flags, addr, hdr_addr, text_addr, data_addr)
    open(out, 'wb').write(data)


def cmd_subset(argv):
    path, out, aug = argv[0], argv[1], argv[2]
    limit = int(argv[3]) if len(argv) > 3 else 8
    elf = Elf(path)
    addr, sec = elf.section('.eh_frame')
    small = subset(sec, elf.addr_size, aug, limit)
    hdr_addr = addr - 0x400
    hdr = make_hdr(small, addr, hdr_addr, elf.addr_size)
    flags = 0 if elf.is64 else 2
    open(out, 'wb').write(pack(hdr, small, flags, addr, hdr_addr,
                               elf.section('.text')[0], elf.section('.got')[0]))


# ---- Hand-made tables: shapes compilers do not emit ------------------------------


def uleb_enc(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb_enc(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        done = (v == 0 and not b & 0x40) or (v == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


class Table:
    """An .eh_frame / .debug_frame assembled entry by entry."""

    def __init__(self, is_eh=True, dwarf64=False):
        self.out = bytearray()
        self.is_eh = is_eh
        self.dwarf64 = dwarf64

    def cie(self, aug, insns, version=1, code_align=1, data_align=-8, ra=16, aug_data=b'',
            extra=b''):
        """EXTRA goes between the augmentation string and the alignment
        factors (legacy "eh" data, v4 address/segment sizes)."""
        idw = 8 if self.dwarf64 else 4
        cid = 0 if self.is_eh else (1 << (8 * idw)) - 1
        body = bytes([version]) + aug.encode() + b'\0' + extra
        body += uleb_enc(code_align) + sleb_enc(data_align)
        body += bytes([ra]) if version == 1 else uleb_enc(ra)
        if aug.startswith('z'):
            body += uleb_enc(len(aug_data)) + aug_data
        return self._raw(cid.to_bytes(idw, 'little'), body + insns)

    def fde(self, cie_off, head, insns, aug_data=None):
        """HEAD: the encoded pc_begin and range; AUG_DATA: for a 'z' CIE."""
        idw = 8 if self.dwarf64 else 4
        start = len(self.out) + (12 if self.dwarf64 else 4)
        ptr = start - cie_off if self.is_eh else cie_off
        body = head + (b'' if aug_data is None else uleb_enc(len(aug_data)) + aug_data)
        return self._raw(ptr.to_bytes(idw, 'little'), body + insns)

    def _raw(self, id_bytes, body):
        off = len(self.out)
        body = bytearray(body)
        hdr = 12 if self.dwarf64 else 4
        while (hdr + len(id_bytes) + len(body)) % 4:
            body.append(0)  # DW_CFA_nop padding
        n = len(id_bytes) + len(body)
        if self.dwarf64:
            self.out += struct.pack('<IQ', 0xffffffff, n)
        else:
            self.out += struct.pack('<I', n)
        self.out += id_bytes + body
        return off

    def bytes(self, terminate=True):
        return bytes(self.out) + (b'\0\0\0\0' if terminate and self.is_eh else b'')


def q(v):
    return struct.pack('<Q', v & (2**64 - 1))


def d(v):
    return struct.pack('<I', v & 0xffffffff)


def cmd_handmade(argv):
    outdir = argv[0]
    sec_addr, hdr_addr = 0x2000, 0x1f00

    def write(name, table_bytes, flags=0, hdr=b'', addr=sec_addr, text=0x1000, data=0x4000):
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(pack(hdr, table_bytes, flags, addr, hdr_addr, text, data))

    # Legacy "eh" augmentation (GCC < 3), absptr FDEs, DW_CFA_set_loc and
    # DW_CFA_MIPS_advance_loc8.
    t = Table()
    c = t.cie('eh', b'\x0c\x07\x08\x90\x01', extra=q(0x1234))
    t.fde(c, q(0x1000) + q(0x40),
          b'\x41\x0e\x10\x86\x02' + b'\x01' + q(0x1010) + b'\x0e\x20'
          + b'\x1d' + q(0x8) + b'\x0e\x08' + b'\x01' + q(0x1008))
    write('hand_legacy_eh_set_loc', t.bytes())

    # Every fixed bound of the machine: 49 rules in one row, 9 nested
    # remember_state, the shared pool of remembered rules, and a restore
    # without remember.
    t = Table()
    c = t.cie('zR', b'\x0c\x07\x08\x90\x01', aug_data=b'\x1b')
    base = 0x1000
    def pcrel_head(t, begin, length):
        field = sec_addr + len(t.out) + 8
        return d(begin - field) + d(length)
    many = b''.join(b'\x05' + uleb_enc(r) + b'\x02' for r in range(17, 17 + 49))
    t.fde(c, pcrel_head(t, base, 0x20), b'\x41' + many, aug_data=b'')
    t.fde(c, pcrel_head(t, base + 0x20, 0x20), b'\x41' + b'\x0a\x41' * 9, aug_data=b'')
    pool = b''.join(b'\x05' + uleb_enc(r) + b'\x02' for r in range(17, 17 + 40))
    t.fde(c, pcrel_head(t, base + 0x40, 0x20), pool + b'\x41' + b'\x0a\x41' * 4, aug_data=b'')
    t.fde(c, pcrel_head(t, base + 0x60, 0x20), b'\x41\x0b', aug_data=b'')
    t.fde(c, pcrel_head(t, base + 0x80, 0x20),
          b'\x41\x0a\x0e\x30\x83\x03\x41\x0b\x42\xc3\x2d\x41\x2d', aug_data=b'')
    write('hand_limits', t.bytes())

    # Pointer encodings: textrel, datarel, funcrel, udata2/sdata2/uleb/sleb,
    # an indirect FDE address (read through the memory callback from the
    # "header" bytes, which are no valid header), an aligned personality,
    # LSDAs present and absent.
    t = Table()
    slot = q(0x11c0)  # at hdr_addr: what the indirect pc_begin points to

    def indirect(t):
        field = sec_addr + len(t.out) + 8
        return d(hdr_addr - field) + d(0x10)
    rows = []
    for enc, head in ((0x23, d(0x10) + d(0x10)),            # textrel|udata4
                      (0x3b, d(-0x3000) + d(0x10)),         # datarel|sdata4
                      (0x02, struct.pack('<HH', 0x1100, 0x10)),  # udata2
                      (0x0a, struct.pack('<hH', 0x1120, 0x10)),  # sdata2
                      (0x01, uleb_enc(0x1140) + uleb_enc(0x10)),  # uleb128
                      (0x09, sleb_enc(0x1160) + sleb_enc(0x10)),  # sleb128
                      (0x0c, q(0x1180) + q(0x10)),          # sdata8
                      (0x04, q(0x11a0) + q(0x10)),          # udata8
                      (0x9b, indirect),                     # indirect|pcrel|sdata4
                      (0x43, d(0) + d(0x10))):              # funcrel|udata4
        c = t.cie('zR', b'\x0c\x07\x08\x90\x01', aug_data=bytes([enc]))
        rows.append((c, head))
    for c, head in rows:
        t.fde(c, head(t) if callable(head) else head, b'\x41\x0e\x10\x86\x02', aug_data=b'')
    # 'P' with DW_EH_PE_aligned: the pointer sits at the next 8-byte address.
    # Its field is 19 bytes into this CIE (length, id, version, "zPLR\0",
    # three one-byte factors, the augmentation length, the 'P' encoding).
    pad = (-(sec_addr + len(t.out) + 19)) % 8
    c = t.cie('zPLR', b'\x0c\x07\x08\x90\x01',
              aug_data=b'\x50' + b'\0' * pad + q(0x5000) + b'\x1b\x1b')
    t.fde(c, d(0x10) + d(0x10), b'\x41', aug_data=d(0x40))
    t.fde(c, d(0x10) + d(0x10), b'\x41', aug_data=d(0))
    write('hand_encodings', t.bytes(), hdr=slot)

    # 64-bit lengths in .eh_frame.
    t = Table(dwarf64=True)
    c = t.cie('zR', b'\x0c\x07\x08\x90\x01', aug_data=b'\x1b')
    t.fde(c, d(0x100) + d(0x20), b'\x41\x0e\x10', aug_data=b'')
    write('hand_eh_frame_64bit_lengths', t.bytes())

    # .debug_frame, CIE version 4 with address and segment selector sizes
    # (the FDE's pc_begin and DW_CFA_set_loc carry a selector), version 3.
    t = Table(is_eh=False)
    c = t.cie('', b'\x0c\x07\x08\x90\x01', version=4, extra=b'\x08\x02')
    t.fde(c, b'\x00\x00' + q(0x1000) + q(0x30),
          b'\x41\x0e\x10\x01\x00\x00' + q(0x1010) + b'\x0e\x08')
    c = t.cie('', b'\x0c\x07\x08\x90\x01', version=3, ra=16)
    t.fde(c, q(0x1100) + q(0x10), b'\x41\x0e\x10')
    write('hand_debug_frame_v4_segment', t.bytes(), flags=1)

    # Header shapes: eh_frame_ptr elsewhere (index fallback), an unsorted
    # table, a table pointing between entries.
    t = Table()
    c = t.cie('zR', b'\x0c\x07\x08\x90\x01', aug_data=b'\x1b')
    f1 = t.fde(c, pcrel_head(t, 0x1000, 0x10), b'\x41\x0e\x10', aug_data=b'')
    f2 = t.fde(c, pcrel_head(t, 0x1010, 0x10), b'\x41\x0e\x18', aug_data=b'')
    sec = t.bytes()

    def hdr(ptr, table):
        out = bytes([1, 0x1b, 0x03, 0x3b]) + struct.pack('<i', ptr - (hdr_addr + 4))
        out += struct.pack('<I', len(table))
        for loc, fde in table:
            out += struct.pack('<ii', loc - hdr_addr, fde - hdr_addr)
        return out
    write('hand_hdr_unsorted', sec,
          hdr=hdr(sec_addr, [(0x1010, sec_addr + f2), (0x1000, sec_addr + f1)]))
    write('hand_hdr_wrong_section', sec,
          hdr=hdr(sec_addr + 8, [(0x1000, sec_addr + f1), (0x1010, sec_addr + f2)]))
    write('hand_hdr_mid_entry', sec,
          hdr=hdr(sec_addr, [(0x1000, sec_addr + f1 + 4), (0x1010, sec_addr + f2)]))


# Expressions: (name, flags, seed, bytes). Flags as in fuzz_expr.c: bit 0
# addr_size 4, bit 1 push an initial value, bits 4-5 register names.
X86 = 0x10
A64 = 0x20
EXPRS = [
    # Seen in real binaries.
    ('plt_x86_64', X86, 0, '77 08 80 00 3f 1a 3b 2a 33 24 22'),  # every x86-64 .plt FDE
    ('plt_i386', 1, 0, '74 04 78 00 3f 1a 3b 2a 32 24 22'),        # i386 .plt (esp+4, eip&15>=11, <<2)
    ('glibc_restore_rt_cfa', X86, 3, '77 a0 01 06'),                # x86-64 __restore_rt: *(rsp+160)
    ('glibc_restore_rt_r8', X86 | 2, 3, '77 28'),                   # DW_CFA_expression r8: rsp+40
    ('glibc_restore_rt_rip', X86 | 2, 3, '77 a8 01'),               # DW_CFA_expression rip: rsp+168
    ('a64_sp_deref', A64, 5, '8f b0 02 06'),                        # *(sp+304)
    ('gcc_drap_cfa', X86, 1, '76 78 06'),                           # DRAP: *(rbp-8)
    ('clang_stack_realign', X86 | 2, 9, '76 00 06 23 10'),
    # One shape per group of operations.
    ('lits_consts', 0, 2, '30 31 4f 22 22 08 ff 09 80 0a ff ff 0b 00 80 0c ff ff ff ff '
                          '0d 00 00 00 80 0e 01 02 03 04 05 06 07 08 '
                          '0f 00 00 00 00 00 00 00 80 10 e5 8e 26 11 9b f1 59 '
                          '1c 1c 1c 1c 1c 1c 1c 22'),
    ('addr8', 0, 0, '03 00 10 fe 7f 00 00 00 00 06'),
    ('addr4', 1, 0, '03 00 10 fe 7f 06'),
    ('stack_ops', 0, 4, '31 32 33 12 13 14 15 02 16 17 12 13 13 13 34 15 04 15 00 15 06'),
    ('deref', 2, 7, '06 06 06'),
    ('deref_size', 2, 7, '12 94 01 1c 12 94 02 22 12 94 04 22 12 94 08 22'),
    ('deref_size_bad', 3, 7, '94 08 94 00'),
    ('arith', 0, 9, '3f 35 1b 3f 35 1d 3f 35 1e 3f 35 1c 3f 35 22 3f 1f 3f 20 3f 19 '
                    '23 80 01 3f 35 1a 3f 35 21 3f 35 27'),
    ('div_min', 0, 0, '0e 00 00 00 00 00 00 00 80 11 7f 1b 35 30 1b'),
    ('div_min32', 1, 0, '0c 00 00 00 80 11 7f 1b 30 1d'),
    ('shifts', 0, 1, '11 7f 3f 24 11 40 25 11 80 7f 08 41 26 3f 08 ff 26 31 08 40 24'),
    ('shifts32', 1, 1, '11 7f 08 20 24 11 80 7f 08 1f 26 3f 08 21 25 0c ff ff ff ff 30 2d'),
    ('compare', 0, 0, '31 32 29 31 32 2a 31 32 2b 31 32 2c 31 32 2d 31 32 2e '
                      '22 22 22 22 22'),
    ('skip', 0, 0, '2f 01 00 96 31 2f 00 00'),
    ('skip_over_garbage', 0, 0, '2f 01 00 00 31'),
    ('skip_back_loop', 0, 0, '2f fd ff'),                          # loops: step limit
    ('bra_count', 0, 0, '3a 31 1c 12 28 fa ff'),                   # 10 down to 0
    ('bra_into_operand', 0, 0, '31 28 fe ff'),
    ('skip_past_end', 0, 0, '31 2f 10 00'),
    ('bregs_x86', X86, 11, '70 08 71 10 72 7f 73 00 77 80 01 22 22 22 22'),
    ('bregs_a64', A64, 11, '8f 10 8d 08 8e 00 22 22'),
    ('bregx', 0, 3, '92 10 08 7c 00 92 80 01 00 92 ff ff ff ff 0f 00'),
    ('initial_value32', 3, 5, '23 08 06 08 04 1c'),
    ('no_callbacks', 12, 0, '70 00 06'),
    ('stack_overflow', 0, 0, '30 ' + '12 ' * 70),
    ('underflow_empty', 0, 0, '96 22'),
    # Not allowed in CFI: BK_E_BAD_OP (and decoder/printer coverage).
    ('not_in_cfi', X86, 0, '9c 50 90 10 93 08 9d 10 00 9e 04 01 02 03 04 9f a3 02 77 00 '
                           '98 10 00 99 10 00 00 00 9a 10 00 00 00 97 9b '
                           'a0 10 00 00 00 08 a1 00 a2 00'),
    ('typed', A64, 0, 'a4 2a 04 00 00 80 3f a5 01 2a a6 08 2a a8 2a a9 2a'),
    ('gnu_ops', 0, 0, 'e0 f0 f2 10 00 00 00 08 f3 02 77 00 f4 2a 04 00 00 00 00 '
                      'f5 01 2a f6 08 2a f7 2a f9 2a fa 10 00 00 00 fb 00 fc 00 fd 00 00 00 00 '
                      'f1 1b 00 00 00 00'),
    ('malformed', 0, 0, '31 01 31 0e 01 02 03'),
    ('leb_limits', 0, 0, '10 ff ff ff ff ff ff ff ff ff 01 11 80 80 80 80 80 80 80 80 80 7f '
                         '10 ff ff ff ff ff ff ff ff ff ff 01'),
    ('long_format', X86, 0, '9e 40 ' + '41 ' * 64 + '70 01 71 02 72 03 73 04 74 05 75 06 76 07 77 08'),
]


def cmd_expr(argv):
    outdir = argv[0]
    for name, flags, seed, hexbytes in EXPRS:
        body = bytes.fromhex(hexbytes)
        with open(os.path.join(outdir, name), 'wb') as f:
            f.write(bytes([flags, seed]) + body)


def main():
    cmds = {'eh': cmd_eh, 'subset': cmd_subset, 'expr': cmd_expr, 'handmade': cmd_handmade}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        raise SystemExit(__doc__)
    cmds[sys.argv[1]](sys.argv[2:])


if __name__ == '__main__':
    main()
