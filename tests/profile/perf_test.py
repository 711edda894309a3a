#!/usr/bin/env python3
"""src/profile's perf.data reader held against perf's own reading of the
same recordings, made here at run time.

  perf_test.py PERF PROF_DUMP PROGRAM WORKDIR

Recordings of PROGRAM (tests/profile/prof_loop.c: two processes, two
threads) go to WORKDIR:
  file.data   perf record -e cpu-clock --call-graph dwarf (file mode)
  multi.data  two events (cpu-clock, task-clock) with --sample-cpu: every
              sample names its event by PERF_SAMPLE_IDENTIFIER
  pipe.data   perf record -o - piped through tee into `prof_dump -` (the
              stream reader, prof_open_fd), kept for perf to read too

prof_dump's reading of each is compared with
  perf report -D       per record, by offset: every sample's pid, tid, time,
                       cpu, ip, period, addr, callchain (PERF_CONTEXT_*
                       markers included), user-register ABI and values (in
                       mask order, and the DWARF mapping by perf's register
                       names), user stack size and where its bytes start;
                       every MMAP/MMAP2 (addresses, offset, device, inode,
                       protection, file name), COMM, FORK and EXIT; the
                       number of records of each type
  perf script          the samples (pid, tid, cpu, time, period, event, ip),
                       as multisets, so perf's time sorting does not matter
  perf report --header-only   arch, each event's name, ids, type,
                       sample_type, register mask and stack size
  perf buildid-list    the build-ids of HEADER_BUILD_ID
and the stream reading must equal prof_dump's reading of the saved stream.

perf_event_open refused (perf_event_paranoid, seccomp, a container) fails
the test with a message saying so: it is never skipped silently.
"""
import collections
import os
import re
import shlex
import shutil
import subprocess
import sys

PERF, DUMP, PROGRAM, WORK = sys.argv[1:5]
ROUNDS = '300'

X86_NAMES = ['AX', 'BX', 'CX', 'DX', 'SI', 'DI', 'BP', 'SP', 'IP', 'FLAGS', 'CS', 'SS',
             'DS', 'ES', 'FS', 'GS', 'R8', 'R9', 'R10', 'R11', 'R12', 'R13', 'R14', 'R15']
# x86-64 psABI DWARF numbers, independent of src/profile's table.
X86_DWARF = {'AX': 0, 'DX': 1, 'CX': 2, 'BX': 3, 'SI': 4, 'DI': 5, 'BP': 6, 'SP': 7,
             'R8': 8, 'R9': 9, 'R10': 10, 'R11': 11, 'R12': 12, 'R13': 13, 'R14': 14,
             'R15': 15, 'IP': 16, 'FLAGS': 49}
SAMPLE_BITS = ['IP', 'TID', 'TIME', 'ADDR', 'READ', 'CALLCHAIN', 'ID', 'CPU', 'PERIOD',
               'STREAM_ID', 'RAW', 'BRANCH_STACK', 'REGS_USER', 'STACK_USER', 'WEIGHT',
               'DATA_SRC', 'IDENTIFIER', 'TRANSACTION', 'REGS_INTR', 'PHYS_ADDR', 'AUX',
               'CGROUP', 'DATA_PAGE_SIZE', 'CODE_PAGE_SIZE', 'WEIGHT_STRUCT']

failures = []
compared = collections.Counter()


def fail_now(msg):
    print(f'perf_test: FAIL: {msg}')
    sys.exit(1)


def check(cond, what, detail=''):
    compared[what.split(':')[0]] += 1
    if not cond:
        failures.append(f'{what} {detail}'.strip())


def run(cmd, **kw):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    except FileNotFoundError:
        fail_now(f'{cmd[0]}: not found (perf comes with linux-perf: scripts/setup.sh)')
    if p.returncode != 0:
        fail_now(f'{shlex.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-2000:]}')
    return p.stdout


REFUSED = re.compile(r'perf_event_open|[Pp]ermission|paranoid|Access to performance|'
                     r'not supported|No such device')


def perf_record(args, out):
    cmd = [PERF, 'record'] + args + ['-o', out, '--', PROGRAM, ROUNDS]
    for old in (out, out + '.old'):
        if os.path.exists(old):
            os.remove(old)
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    except FileNotFoundError:
        fail_now(f'{PERF}: not found (perf comes with linux-perf: scripts/setup.sh)')
    if p.returncode != 0 or not os.path.exists(out) or os.path.getsize(out) == 0:
        err = p.stderr.strip()[-2000:]
        if REFUSED.search(err):
            fail_now(f'perf_event_open was refused here, nothing to compare: {err}')
        fail_now(f'{shlex.join(cmd)} exited {p.returncode}: {err}')


def perf_record_pipe(args, saved, dump_out):
    if not shutil.which(PERF):
        fail_now(f'{PERF}: not found (perf comes with linux-perf: scripts/setup.sh)')
    rec = shlex.join([PERF, 'record'] + args + ['-o', '-', '--', PROGRAM, ROUNDS])
    script = (f'set -o pipefail; {rec} 2>{shlex.quote(saved + ".err")} | tee '
              f'{shlex.quote(saved)} | {shlex.quote(DUMP)} - >{shlex.quote(dump_out)}')
    p = subprocess.run(['bash', '-c', script], capture_output=True, text=True)
    err = open(saved + '.err').read().strip()[-2000:] if os.path.exists(saved + '.err') else ''
    if p.returncode != 0:
        if REFUSED.search(err):
            fail_now(f'perf_event_open was refused here, nothing to compare: {err}')
        fail_now(f'pipe: perf record | prof_dump - exited {p.returncode}: {p.stderr.strip()} {err}')


# ---- prof_dump's output -----------------------------------------------------------

def tokens(rest):
    kv = {}
    # file= and comm= run to the end of the line
    for tail in (' file=', ' comm='):
        if tail in rest:
            rest, value = rest.split(tail, 1)
            kv[tail.strip(' =')] = value
    for t in rest.split():
        if '=' in t:
            k, v = t.split('=', 1)
            kv[k] = v
    return kv


def parse_dump(text):
    d = collections.defaultdict(list)
    for line in text.splitlines():
        kind, _, rest = line.partition(' ')
        if kind == 'attr':
            idx, _, rest = rest.partition(' ')
        d[kind].append(tokens(' ' + rest))
    return d


def hexlist(s):
    return [int(x, 16) for x in s.split(',')] if s else []


# ---- perf report -D -------------------------------------------------------------

REC = re.compile(r'^(?:(\d+) )?(\d+) 0x([0-9a-f]+) \[0x([0-9a-f]+)\]: PERF_RECORD_(\w+)(.*)$')
SAMPLE = re.compile(r'\(IP, 0x([0-9a-f]+)\): (-?\d+)/(-?\d+): 0x([0-9a-f]+) period: (\d+) '
                    r'addr: (\S+)')
MMAP2 = re.compile(r' (-?\d+)/(-?\d+): \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (\S+) '
                   r'([0-9a-f]+):([0-9a-f]+) (\d+) (\d+)\]: (\S+) (.*)$')
MMAP = re.compile(r' (-?\d+)/(-?\d+): \[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (\S+)\]: (\S+) (.*)$')
COMM = re.compile(r'(?: exec)?: (.*):(-?\d+)/(-?\d+)$')
TASK = re.compile(r'\((-?\d+):(-?\d+)\):\((-?\d+):(-?\d+)\)')
RAW = re.compile(r'^0x([0-9a-f]+)@\S+ \[0x([0-9a-f]+)\]: event: (\d+)')


def parse_report_d(path):
    out = run([PERF, 'report', '-D', '-i', path])
    recs = {}
    types = collections.Counter()
    cur = None
    for line in out.splitlines():
        m = RAW.match(line)
        if m:
            types[int(m.group(3))] += 1
            continue
        m = REC.match(line)
        if m:
            cpu, time, off, size, kind, rest = m.groups()
            cur = {'kind': kind, 'time': int(time), 'rest': rest, 'off': int(off, 16)}
            if cpu is not None:
                cur['cpu'] = int(cpu)
            recs[cur['off']] = cur
            if kind == 'SAMPLE':
                s = SAMPLE.search(rest)
                cur.update(misc=int(s.group(1), 16), pid=int(s.group(2)), tid=int(s.group(3)),
                           ip=int(s.group(4), 16), period=int(s.group(5)),
                           addr=int(s.group(6), 0), chain=[], regs=[])
            continue
        if cur is None or cur['kind'] != 'SAMPLE':
            continue
        if line.startswith('... FP chain: nr:'):
            cur['chain_nr'] = int(line.split(':')[-1])
        elif line.startswith('..... ') and 'chain_nr' in cur and 'abi' not in cur:
            cur['chain'].append(int(line.split(':')[-1], 16))
        elif line.startswith('... user regs: mask'):
            m2 = re.search(r'mask (0x[0-9a-f]+) ABI (\S+)', line)
            cur['mask'] = int(m2.group(1), 16)
            cur['abi'] = {'64-bit': 2, '32-bit': 1}.get(m2.group(2), 0)
        elif line.startswith('.... ') and 'abi' in cur:
            name, val = line.split()[1:3]
            cur['regs'].append((name, int(val, 16)))
        elif line.startswith('... ustack: size'):
            m2 = re.search(r'size (\d+), offset (0x[0-9a-f]+)', line)
            cur['ustack'] = int(m2.group(1))
            cur['ustack_off'] = int(m2.group(2), 16)
    return recs, types


# ---- Comparisons -----------------------------------------------------------------

def compare_samples(name, ours, recs, base, has_cpu):
    perf_samples = {o: r for o, r in recs.items() if r['kind'] == 'SAMPLE'}
    check(len(ours['sample']) == len(perf_samples), f'{name}: sample count',
          f'ours {len(ours["sample"])}, perf {len(perf_samples)}')
    for s in ours['sample']:
        off = int(s['off']) - base
        p = perf_samples.get(off)
        if p is None:
            check(False, f'{name}: sample at {off:#x}', 'perf has no sample there')
            continue
        where = f'{name}: sample at {off:#x}'
        for k in ('pid', 'tid', 'time', 'period'):
            check(int(s[k]) == p[k], f'{where} {k}', f'ours {s[k]}, perf {p[k]}')
        check(int(s['ip'], 16) == p['ip'], f'{where} ip', f'ours {s["ip"]}, perf {p["ip"]:#x}')
        check(int(s['addr'], 16) == p['addr'], f'{where} addr')
        check(int(s['misc']) == p['misc'], f'{where} misc')
        if has_cpu:
            check(int(s['cpu']) == p['cpu'], f'{where} cpu', f'ours {s["cpu"]}, perf {p["cpu"]}')
        nr, chain = s['callchain'].split(':', 1)
        check(int(nr) == p.get('chain_nr', 0) and hexlist(chain) == p['chain'],
              f'{where} callchain', f'ours {s["callchain"]}, perf {p["chain"]}')
        check(int(s['abi']) == p.get('abi', 0), f'{where} regs abi')
        regs = hexlist(s['regs'])
        check(regs == [v for _, v in p['regs']], f'{where} regs',
              f'ours {regs}, perf {p["regs"]}')
        if 'dwarf' in s:
            dwarf = {int(k): int(v, 16) for k, v in (t.split(':') for t in s['dwarf'].split(','))}
            want = {X86_DWARF[n]: v for n, v in p['regs'] if n in X86_DWARF}
            check(dwarf == want, f'{where} dwarf regs', f'ours {dwarf}, by perf\'s names {want}')
        else:
            check(p.get('abi', 0) != 2, f'{where} dwarf regs', 'not mapped')
        check(int(s['stack_dyn']) == p.get('ustack', 0), f'{where} user stack size',
              f'ours {s["stack_dyn"]}, perf {p.get("ustack")}')
        if 'stack_off' in s:
            check(int(s['stack_off']) - 8 == p.get('ustack_off'), f'{where} user stack offset')


def prot_string(prot, flags):
    return ('r' if prot & 1 else '-') + ('w' if prot & 2 else '-') + \
        ('x' if prot & 4 else '-') + ('p' if flags & 2 else 's')


def compare_records(name, ours, recs, base):
    n = 0
    for m in ours['mmap']:
        off = int(m['off']) - base
        p = recs.get(off)
        where = f'{name}: mmap at {off:#x}'
        if p is None or p['kind'] not in ('MMAP', 'MMAP2'):
            check(False, where, 'perf has no MMAP there')
            continue
        n += 1
        if p['kind'] == 'MMAP2':
            g = MMAP2.search(p['rest'])
            want = (int(g.group(1)), int(g.group(2)), int(g.group(3), 16), int(g.group(4), 16),
                    int(g.group(5), 0), int(g.group(6), 16), int(g.group(7), 16), int(g.group(8)),
                    int(g.group(9)), g.group(10), g.group(11))
            got = (int(m['pid']), int(m['tid']), int(m['addr'], 16), int(m['len'], 16),
                   int(m['pgoff'], 16), int(m['maj']), int(m['min']), int(m['ino']),
                   int(m['gen']), prot_string(int(m['prot']), int(m['flags'])), m['file'])
        else:
            g = MMAP.search(p['rest'])
            want = (int(g.group(1)), int(g.group(2)), int(g.group(3), 16), int(g.group(4), 16),
                    int(g.group(5), 0), g.group(7))
            got = (int(m['pid']), int(m['tid']), int(m['addr'], 16), int(m['len'], 16),
                   int(m['pgoff'], 16), m['file'])
        check(got == want, where, f'ours {got}, perf {want}')
        check(int(m.get('time', 0)) == p['time'], f'{where} time')
    check(n == sum(1 for r in recs.values() if r['kind'] in ('MMAP', 'MMAP2')),
          f'{name}: mmap count')
    check(n > 3, f'{name}: mmaps seen', f'only {n}')
    for c in ours['comm']:
        off = int(c['off']) - base
        p = recs.get(off)
        if p is None or p['kind'] != 'COMM':
            check(False, f'{name}: comm at {off:#x}', 'perf has none there')
            continue
        g = COMM.search(p['rest'])
        want = (g.group(1), int(g.group(2)), int(g.group(3)), ' exec' in p['rest'][:6])
        got = (c['comm'], int(c['pid']), int(c['tid']), c['exec'] == '1')
        check(got == want, f'{name}: comm at {off:#x}', f'ours {got}, perf {want}')
    for kind in ('fork', 'exit'):
        for t in ours[kind]:
            off = int(t['off']) - base
            p = recs.get(off)
            if p is None or p['kind'] != kind.upper():
                check(False, f'{name}: {kind} at {off:#x}', 'perf has none there')
                continue
            g = TASK.search(p['rest'])
            want = tuple(int(x) for x in g.groups()) + (p['time'],)
            got = (int(t['pid']), int(t['tid']), int(t['ppid']), int(t['ptid']), int(t['time']))
            check(got == want, f'{name}: {kind} at {off:#x}', f'ours {got}, perf {want}')
    check(len(ours['fork']) >= 2, f'{name}: fork records', 'expected the thread and the child')
    check(len(ours['round']) == sum(1 for r in recs.values() if r['kind'] == 'FINISHED_ROUND'),
          f'{name}: FINISHED_ROUND count')


def compare_script(name, ours, path, has_cpu):
    fields = 'event,pid,tid,time,ip,period' + (',cpu' if has_cpu else '')
    out = run([PERF, 'script', '-F', fields, '--ns', '--hide-call-graph', '-i', path])
    line_re = re.compile(r'^\s*(-?\d+)/(-?\d+)\s+(?:\[(\d+)\]\s+)?(\d+)\.(\d+):\s+(\d+)\s+'
                         r'(\S+):\s+([0-9a-f]+)')
    theirs = collections.Counter()
    for line in out.splitlines():
        m = line_re.match(line)
        if not m:
            continue
        pid, tid, cpu, sec, nsec, period, event, ip = m.groups()
        theirs[(int(pid), int(tid), int(cpu) if has_cpu else None,
                int(sec) * 10**9 + int(nsec), int(period), event, int(ip, 16))] += 1
    names = [a.get('name') for a in ours['attr']]
    mine = collections.Counter()
    for s in ours['sample']:
        a = int(s['attr'])
        mine[(int(s['pid']), int(s['tid']), int(s['cpu']) if has_cpu else None, int(s['time']),
              int(s['period']), names[a] if a >= 0 else '?', int(s['ip'], 16))] += 1
    check(sum(theirs.values()) > 0, f'{name}: perf script printed samples')
    check(mine == theirs, f'{name}: perf script samples',
          f'only ours {list((mine - theirs).items())[:3]}, only perf\'s '
          f'{list((theirs - mine).items())[:3]}')


def compare_header(name, ours, path):
    out = run([PERF, 'report', '--header-only', '-i', path])
    arch = re.search(r'^# arch : (\S+)', out, re.M)
    check(arch and ours['arch'][0].get('name') == arch.group(1), f'{name}: arch name')
    events = re.findall(r'^# event : (.*)$', out, re.M)
    check(len(events) == len(ours['attr']), f'{name}: event count')
    for a, e in zip(ours['attr'], events):
        fields = dict(re.findall(r'(\w+) = (\{[^}]*\}|[^,]+)', e))
        ids = [int(x) for x in re.findall(r'\d+', fields.get('id', ''))]
        check(a['name'] == fields.get('name'), f'{name}: event name', f'{a["name"]} {fields}')
        check(hexlist_dec(a['ids']) == ids, f'{name}: event ids', f'ours {a["ids"]}, perf {ids}')
        check(int(a['type']) == int(fields['type']), f'{name}: event type')
        st = int(a['sample_type'], 16)
        bits = '|'.join(b for i, b in enumerate(SAMPLE_BITS) if st >> i & 1)
        check(bits == fields['sample_type'].strip(), f'{name}: sample_type',
              f'ours {bits}, perf {fields["sample_type"]}')
        check(int(a['regs_user'], 16) == int(fields.get('sample_regs_user', '0'), 16),
              f'{name}: sample_regs_user')
        check(int(a['stack_user']) == int(fields.get('sample_stack_user', '0')),
              f'{name}: sample_stack_user')


def hexlist_dec(s):
    return [int(x) for x in s.split(',')] if s else []


def compare_buildids(name, ours, path):
    out = run([PERF, 'buildid-list', '-i', path])
    theirs = sorted(tuple(line.split(None, 1)) for line in out.splitlines() if line.strip())
    mine = sorted((b['id'], b['file']) for b in ours['buildid'])
    check(len(mine) > 0 and mine == theirs, f'{name}: build-ids', f'ours {mine}, perf {theirs}')


def compare_types(name, ours, types):
    end = ours['end'][0]
    got = {int(k): int(v) for k, v in (t.split(':') for t in end['types'].split(','))}
    check(got == dict(types), f'{name}: records by type', f'ours {got}, perf {dict(types)}')


def main():
    os.makedirs(WORK, exist_ok=True)
    common = ['-e', 'cpu-clock', '-c', '100000', '--call-graph', 'dwarf,2048']

    # File mode, one event.
    path = os.path.join(WORK, 'file.data')
    perf_record(common, path)
    ours = parse_dump(run([DUMP, path]))
    recs, types = parse_report_d(path)
    compare_samples('file', ours, recs, 0, False)
    compare_records('file', ours, recs, 0)
    compare_script('file', ours, path, False)
    compare_header('file', ours, path)
    compare_buildids('file', ours, path)
    compare_types('file', ours, types)
    check(ours['arch'][0]['name'] == os.uname().machine, 'file: arch is this machine\'s')

    # Two events: samples tell theirs apart by PERF_SAMPLE_IDENTIFIER.
    path = os.path.join(WORK, 'multi.data')
    perf_record(['-e', 'cpu-clock,task-clock', '-c', '200000', '--call-graph', 'dwarf,1024',
                 '--sample-cpu'], path)
    ours = parse_dump(run([DUMP, path]))
    recs, types = parse_report_d(path)
    check(len(ours['attr']) == 2, 'multi: two events')
    compare_samples('multi', ours, recs, 0, True)
    compare_records('multi', ours, recs, 0)
    compare_script('multi', ours, path, True)
    compare_header('multi', ours, path)
    compare_types('multi', ours, types)
    check({s['attr'] for s in ours['sample']} == {'0', '1'}, 'multi: samples of both events')

    # Pipe mode, read as a stream while perf writes it.
    path = os.path.join(WORK, 'pipe.data')
    dump_out = os.path.join(WORK, 'pipe.dump')
    perf_record_pipe(common, path, dump_out)
    stream = open(dump_out).read()
    ours = parse_dump(stream)
    check(ours['arch'][0].get('pipe') == '1', 'pipe: read as pipe mode')
    check(stream == run([DUMP, path]), 'pipe: the stream and the saved stream read alike')
    recs, types = parse_report_d(path)
    # perf report -D counts pipe offsets from the end of the 16-byte header.
    compare_samples('pipe', ours, recs, 16, False)
    compare_records('pipe', ours, recs, 16)
    compare_script('pipe', ours, path, False)
    check(len(ours['attr']) == 1 and ours['attr'][0]['name'] == 'cpu-clock',
          'pipe: the event and its name from the inline header records')

    total = sum(compared.values())
    for f in failures[:40]:
        print(f'perf_test: mismatch: {f}')
    print(f'perf_test: {total} facts compared ({", ".join(f"{k} {v}" for k, v in compared.most_common(8))}, ...), '
          f'{len(failures)} mismatches')
    sys.exit(1 if failures else 0)


main()
