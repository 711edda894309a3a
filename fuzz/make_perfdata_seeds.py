#!/usr/bin/env python3
"""Seeds for fuzz_perfdata (fuzz/corpus/perfdata/).

  make_perfdata_seeds.py BUILDDIR

BUILDDIR is a configured and built backstep build directory. Writes, into
fuzz/corpus/perfdata/ (emptied first):
  - the hand-built recordings of tests/unit/test_prof.c (`test_prof
    --write-seeds`): one sample per sample_type bit, all bits, every other
    record kind with several sample_id trailers, two events of two attr
    sizes with ARCH/EVENT_DESC/BUILD_ID features, payloads after AUXTRACE
    and TRACING_DATA, a real perf sample byte for byte, and each damaged
    input of its error table;
  - two real recordings of BUILDDIR/tests/profile/prof_loop made here with
    `perf record -e cpu-clock -c 100000 --call-graph dwarf,1024` (file mode
    and `-o -` pipe mode), trimmed to a few KiB: the header and its attrs,
    the first records that are not samples (up to ~2 KiB), two samples (one
    taken in the kernel, with a callchain, one in user mode), and of the
    features only HEADER_ARCH, HEADER_EVENT_DESC and HEADER_BUILD_ID.
Needs perf (linux-perf) and permission to use perf_event_open (root).
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
build = sys.argv[1]
out = os.path.join(here, 'corpus', 'perfdata')
KEEP_FEATURES = {2, 6, 12}  # BUILD_ID, ARCH, EVENT_DESC


def records(d, start, end):
    o = start
    while o + 8 <= end:
        t, misc, size = struct.unpack_from('<IHH', d, o)
        if size < 8:
            break
        yield o, t, misc, d[o:o + size]
        o += size


def pick(recs, budget=2048):
    """Non-samples up to BUDGET bytes, and two samples: a kernel one with
    a callchain and a user one."""
    kept, used, kernel, user = [], 0, None, None
    for o, t, misc, raw in recs:
        if t == 9:
            if (misc & 7) == 1 and kernel is None:
                kernel = raw
                kept.append(raw)
            elif (misc & 7) == 2 and user is None:
                user = raw
                kept.append(raw)
        elif t in (64, 80) or used + len(raw) <= budget:
            kept.append(raw)
            used += len(raw) if t not in (64, 80) else 0
    return kept


def trim_file(src, dst):
    d = open(src, 'rb').read()
    hsize, attr_size = struct.unpack_from('<QQ', d, 8)
    a_off, a_len, d_off, d_len = struct.unpack_from('<QQQQ', d, 24)
    flags = list(struct.unpack_from('<4Q', d, 72))
    feats = [b for b in range(256) if flags[b // 64] >> (b % 64) & 1]
    table = d_off + d_len
    sections = {}
    for i, b in enumerate(feats):
        off, ln = struct.unpack_from('<QQ', d, table + 16 * i)
        if b in KEEP_FEATURES:
            sections[b] = d[off:off + ln]
    data = b''.join(pick(records(d, d_off, d_off + d_len)))
    # Everything before the data section (ids, attrs) stays where it was.
    head = bytearray(d[:d_off])
    new_flags = [0, 0, 0, 0]
    for b in sections:
        new_flags[b // 64] |= 1 << (b % 64)
    struct.pack_into('<QQ', head, 40, d_off, len(data))
    struct.pack_into('<4Q', head, 72, *new_flags)
    body = bytes(head) + data
    tab_off = len(body)
    feat_off = tab_off + 16 * len(sections)
    tab, blobs = b'', b''
    for b in sorted(sections):
        tab += struct.pack('<QQ', feat_off + len(blobs), len(sections[b]))
        blobs += sections[b]
    open(dst, 'wb').write(body + tab + blobs)


def trim_pipe(src, dst):
    d = open(src, 'rb').read()
    kept = []
    for raw in pick(records(d, 16, len(d))):
        t, = struct.unpack_from('<I', raw, 0)
        if t == 80:
            feat, = struct.unpack_from('<Q', raw, 8)
            if feat not in KEEP_FEATURES:
                continue
        kept.append(raw)
    open(dst, 'wb').write(d[:16] + b''.join(kept))


def main():
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    subprocess.run([os.path.join(build, 'tests', 'test_prof'), '--write-seeds', out],
                   check=True, stdout=subprocess.DEVNULL)
    prog = os.path.join(build, 'tests', 'profile', 'prof_loop')
    rec = ['perf', 'record', '-q', '-e', 'cpu-clock', '-c', '100000', '--call-graph', 'dwarf,1024']
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, 'file.data')
        subprocess.run(rec + ['-o', f, '--', prog, '20'], check=True, stdout=subprocess.DEVNULL)
        trim_file(f, os.path.join(out, 'real-file'))
        p = os.path.join(tmp, 'pipe.data')
        with open(p, 'wb') as fp:
            subprocess.run(rec + ['-o', '-', '--', prog, '20'], check=True, stdout=fp,
                           stderr=subprocess.DEVNULL)
        trim_pipe(p, os.path.join(out, 'real-pipe'))
    n = len(os.listdir(out))
    size = sum(os.path.getsize(os.path.join(out, x)) for x in os.listdir(out))
    print(f'make_perfdata_seeds: {n} seeds, {size} bytes in {out}')


main()
