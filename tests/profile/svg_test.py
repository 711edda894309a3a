#!/usr/bin/env python3
"""backstep report --format svg: the flame graph against --format folded,
and its script driven in headless Chromium.

  svg_test.py PERF BACKSTEP CHROMIUM WORKDIR LOOP_PROGRAM CXX_PROGRAM

Two recordings are made here (`perf record -e cpu-clock -c 20000
--call-graph dwarf`): LOOP_PROGRAM (tests/profile/prof_loop.c: leaf,
middle, spin in two threads and a child) and CXX_PROGRAM (a C++ fixture:
names such as std::function<int (int)>::operator() need escaping).
For each, the SVG must be well-formed XML whose frames are the tree of
the folded stacks: the root holds every sample, each frame's sample count
is the number of samples whose stack begins with the frame's path, every
function's total is the folded output's, and the rectangles sit where the
counts put them. Frames narrower than 0.1 px are left out by design
(tools/flame.c); the expected tree leaves them out too.

In Chromium: a screenshot of the file opened directly (WORKDIR/*.png, its
frames' colors looked for), and a harness page (WORKDIR/*.html) that
loads the SVG in an iframe, hovers a frame, searches through the Search
button and through Ctrl-F (window.prompt answered by the harness), zooms
into a frame by clicking it and resets the zoom, and writes what it saw
into its own DOM, read back with --dump-dom.

perf or Chromium missing, or perf_event_open refused, fails the test with
the reason: never a skip.
"""
import html
import json
import os
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

SVG = '{http://www.w3.org/2000/svg}'
FRAMES_W, PAD_X, MIN_PX = 1180.0, 10.0, 0.1  # tools/flame.c
TITLE = re.compile(r'^(.*) \((\d+) samples?, (\d+\.\d\d)%\)$', re.S)


def fail(msg):
    print('svg_test: FAIL: ' + msg)
    sys.exit(1)


def run(cmd, what, timeout=60):
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    except FileNotFoundError:
        fail('%s: %s not found%s' % (what, cmd[0], ' (Debian package chromium: scripts/setup.sh)'
                                     if 'chrom' in cmd[0] else ''))
    except subprocess.TimeoutExpired:
        fail('%s: %s did not finish in %d s' % (what, cmd[0], timeout))
    return p


def record(perf, prog, data, args):
    for old in (data, data + '.old'):  # perf keeps the previous file as .old
        if os.path.exists(old):
            os.remove(old)
    p = run([perf, 'record', '-q', '-e', 'cpu-clock', '-c', '20000', '--call-graph', 'dwarf',
             '-o', data, '--', prog] + args, 'perf record')
    if p.returncode or not os.path.exists(data):
        fail('perf record %s exited %d (perf_event_open refused? perf_event_paranoid must be '
             '2 or lower, or run as root): %s' % (prog, p.returncode, p.stderr.decode()[-500:]))


def folded(backstep, data):
    p = run([backstep, 'report', '--format', 'folded', data], 'backstep report')
    if p.returncode:
        fail('backstep report --format folded %s: %s' % (data, p.stderr.decode()))
    stacks = []
    for line in p.stdout.decode().splitlines():
        text, _, count = line.rpartition(' ')
        stacks.append((tuple(text.split(';')), int(count)))
    return stacks


def parse_svg(path):
    """The frames of the SVG: dicts of name, o (offset), n, d (depth), x, y, w."""
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail('%s is not well-formed XML: %s' % (path, e))
    box = root.find('.//%sg[@id="frames"]' % SVG)
    if root.tag != SVG + 'svg' or box is None:
        fail('%s: no <svg> root or no frames group' % path)
    frames = []
    for g in box.findall(SVG + 'g'):
        m = TITLE.match(g.find(SVG + 'title').text)
        rect = g.find(SVG + 'rect')
        f = dict(name=m.group(1), o=int(g.get('data-o')), n=int(g.get('data-n')),
                 d=int(g.get('data-d')), pct=float(m.group(3)), x=float(rect.get('x')),
                 y=float(rect.get('y')), w=float(rect.get('width')))
        if int(m.group(2)) != f['n']:
            fail('%s: %r: the title says %s samples, data-n %d' % (path, f['name'], m.group(2), f['n']))
        frames.append(f)
    return int(box.get('data-total')), frames, root


def expected_tree(stacks, total):
    """Path (root first) -> samples, for every frame at least MIN_PX wide."""
    paths = {}
    for names, count in stacks:
        for k in range(1, len(names) + 1):
            paths[names[:k]] = paths.get(names[:k], 0) + count
    return {p: n for p, n in paths.items() if n * FRAMES_W / total >= MIN_PX}


def check_svg(path, stacks):
    total, frames, _ = parse_svg(path)
    if total != sum(c for _, c in stacks) or total == 0:
        fail('%s: %d samples, folded has %d' % (path, total, sum(c for _, c in stacks)))
    roots = [f for f in frames if f['d'] == 0]
    if len(roots) != 1 or roots[0]['n'] != total or roots[0]['o'] or roots[0]['name'] != 'all' \
            or abs(roots[0]['w'] - FRAMES_W) > 0.01:
        fail('%s: the root frame is not all %d samples at full width: %s' % (path, total, roots))
    base_y = roots[0]['y']
    by_depth = {}
    for f in frames:
        by_depth.setdefault(f['d'], []).append(f)
        if (abs(f['x'] - (PAD_X + f['o'] * FRAMES_W / total)) > 0.01 or
                abs(f['w'] - f['n'] * FRAMES_W / total) > 0.01 or f['y'] != base_y - 16 * f['d'] or
                abs(f['pct'] - 100.0 * f['n'] / total) > 0.0051):
            fail('%s: frame %s is not where its samples put it' % (path, f))
    # Each frame's path: its parent is the frame one level down containing it.
    got = {}
    for d in sorted(by_depth):
        for f in by_depth[d]:
            if d == 0:
                f['path'] = ()
                continue
            parents = [p for p in by_depth.get(d - 1, [])
                       if p['o'] <= f['o'] and f['o'] + f['n'] <= p['o'] + p['n']]
            if len(parents) != 1:
                fail('%s: frame %s has %d parents' % (path, f, len(parents)))
            f['path'] = parents[0]['path'] + (f['name'],)
            if f['path'] in got:
                fail('%s: two frames for %s' % (path, ';'.join(f['path'])))
            got[f['path']] = f['n']
    want = expected_tree(stacks, total)
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))[:5]
        fail('%s: frames differ from the folded stacks (%d frames, %d expected); first: %s'
             % (path, len(got), len(want), diff))
    # Every function's total over its frames, as the folded output counts it.
    per_name, folded_name = {}, {}
    for p, n in got.items():
        per_name[p[-1]] = per_name.get(p[-1], 0) + n
    for names, count in stacks:
        for k in range(len(names)):
            if names[:k + 1] in want:
                folded_name[names[k]] = folded_name.get(names[k], 0) + count
    if per_name != folded_name:
        fail('%s: per-function totals differ from the folded output' % path)
    return total, frames


def chromium_cmd(chromium, workdir, *args):
    cmd = [chromium, '--headless', '--disable-gpu', '--no-first-run', '--hide-scrollbars',
           '--user-data-dir=' + os.path.join(workdir, 'chromium-profile')]
    if os.geteuid() == 0:
        cmd.append('--no-sandbox')  # Chromium refuses to run as root with its sandbox
    return cmd + list(args)


def read_png(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit PNG, unfiltered."""
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        fail('%s is not a PNG' % path)
    pos, idat = 8, b''
    while pos < len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b'IHDR':
            width, height, depth, color = struct.unpack('>IIBB', body[:10])
        elif kind == b'IDAT':
            idat += body
        pos += 12 + length
    if depth != 8 or color not in (2, 6):
        fail('%s: PNG depth %d color type %d' % (path, depth, color))
    bpp = 3 if color == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), width * bpp, [], bytearray(width * bpp)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return width, height, bpp, rows


def check_screenshot(chromium, workdir, svg, frames, total):
    png = os.path.splitext(svg)[0] + '.png'
    if os.path.exists(png):
        os.remove(png)
    p = run(chromium_cmd(chromium, workdir, '--screenshot=' + png, '--window-size=1200,800',
                         'file://' + os.path.abspath(svg)), 'chromium --screenshot')
    if p.returncode or not os.path.exists(png):
        fail('chromium --screenshot exited %d: %s' % (p.returncode, p.stderr.decode()[-1500:]))
    width, height, bpp, rows = read_png(png)
    # The widest frames above the root are drawn in tools/flame.c's warm
    # colors (red 205-254, green 80-229, blue 20-69) where the SVG puts them.
    for f in sorted((f for f in frames if f['d'] > 0 and f['y'] < height - 15 and f['name'][0] != '['),
                    key=lambda f: -f['n'])[:3]:
        y, x0, x1 = int(f['y']) + 7, int(f['x']) + 2, int(f['x'] + f['w']) - 2
        warm = sum(1 for x in range(x0, max(x0, x1))
                   if 205 <= rows[y][x * bpp] and 80 <= rows[y][x * bpp + 1] <= 229
                   and 20 <= rows[y][x * bpp + 2] <= 69)
        if warm < 0.5 * (x1 - x0):
            fail('%s: %r is not drawn in warm colors at y %d, x %d..%d (%d of %d pixels)'
                 % (png, f['name'], y, x0, x1, warm, x1 - x0))
    return png, width, height


HARNESS = '''<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>svg_test harness</title></head><body>
<iframe id="view" src="%(svg)s" width="1200" height="800"></iframe>
<pre id="result">not loaded</pre>
<script>
var P = %(params)s;
document.getElementById('view').addEventListener('load', function () {
  var r = {};
  try {
    var w = this.contentWindow, d = this.contentDocument;
    var frame = function (f) {
      return d.querySelector('#frames > g[data-o="' + f[0] + '"][data-d="' + f[1] + '"] > rect');
    };
    var mouse = function (el, type) {
      el.dispatchEvent(new w.MouseEvent(type, { bubbles: true, cancelable: true, view: w }));
    };
    var text = function (id) { return d.getElementById(id).textContent; };
    var count = function (sel) { return d.querySelectorAll(sel).length; };
    mouse(frame(P.hover), 'mouseover');
    r.details = text('details');
    mouse(frame(P.hover), 'mouseout');
    r.details_out = text('details');
    w.prompt = function () { return P.search; };
    mouse(d.getElementById('search'), 'click');
    r.matched = text('matched');
    r.hits = count('#frames > g.hit');
    r.search_button = text('search');
    var z = frame(P.zoom);
    mouse(z, 'click');
    r.zoom = { x: +z.getAttribute('x'), w: +z.getAttribute('width'), box: z.getBBox().width };
    r.unzoom_shown = !d.getElementById('unzoom').classList.contains('hide');
    r.visible = [].map.call(d.querySelectorAll('#frames > g:not(.hide)'), function (g) {
      var rect = g.querySelector('rect');
      return [+g.getAttribute('data-o'), +g.getAttribute('data-d'),
              +rect.getAttribute('x'), +rect.getAttribute('width')];
    });
    mouse(d.getElementById('unzoom'), 'click');
    r.reset = { x: +z.getAttribute('x'), w: +z.getAttribute('width'),
                hidden: count('#frames > g.hide'),
                unzoom_shown: !d.getElementById('unzoom').classList.contains('hide') };
    w.prompt = function () { return P.ctrlf; };
    w.dispatchEvent(new w.KeyboardEvent('keydown', { key: 'f', ctrlKey: true, bubbles: true,
                                                     cancelable: true }));
    r.ctrlf_matched = text('matched');
    r.ctrlf_hits = count('#frames > g.hit');
  } catch (e) {
    r.error = String(e) + ' ' + e.stack;
  }
  document.getElementById('result').textContent = JSON.stringify(r);
});
</script></body></html>
'''

MATCHED = re.compile(r'^Matched "(.*)": (\d+\.\d\d)% \((\d+) of (\d+) samples, (\d+) frames\)$', re.S)


def drive(chromium, workdir, svg, frames, total, stacks, hover, zoom, search, ctrlf):
    """The harness on SVG: HOVER and ZOOM are frames (dicts of parse_svg),
    SEARCH and CTRLF strings; every result checked against the frames."""
    name = os.path.splitext(os.path.basename(svg))[0]
    page = os.path.join(workdir, name + '.html')
    params = dict(hover=[hover['o'], hover['d']], zoom=[zoom['o'], zoom['d']], search=search,
                  ctrlf=ctrlf)
    with open(page, 'w') as f:
        f.write(HARNESS % dict(svg=os.path.basename(svg),
                               params=json.dumps(params).replace('</', '<\\/')))
    p = run(chromium_cmd(chromium, workdir, '--allow-file-access-from-files', '--dump-dom',
                         '--virtual-time-budget=5000', 'file://' + os.path.abspath(page)),
            'chromium --dump-dom')
    m = re.search(r'<pre id="result">(.*?)</pre>', p.stdout.decode(), re.S)
    if p.returncode or not m:
        fail('chromium --dump-dom %s exited %d, no result: %s'
             % (page, p.returncode, p.stderr.decode()[-1500:]))
    try:
        r = json.loads(html.unescape(m.group(1)))
    except ValueError:
        fail('%s: the harness did not run: %s' % (page, m.group(1)[:300]))
    if 'error' in r:
        fail('%s: the harness failed in the page: %s' % (page, r['error']))

    tree = expected_tree(stacks, total)  # the frames drawn: what search can find

    def pct_ok(text_pct, k):
        return abs(float(text_pct) - 100.0 * k / total) <= 0.0051

    # Hover: the frame's name, samples and share of all samples.
    m = TITLE.match(r['details'])
    if not m or m.group(1) != hover['name'] or int(m.group(2)) != hover['n'] \
            or not pct_ok(m.group(3), hover['n']) or r['details_out'].strip():
        fail('%s: hovering %r (%d samples of %d) showed %r, then %r'
             % (page, hover['name'], hover['n'], total, r['details'], r['details_out']))
    # Search: the frames whose name contains the string, and the share of
    # samples with such a frame anywhere in their stack.
    for term, text, hits, how in ((search, r['matched'], r['hits'], 'Search button'),
                                  (ctrlf, r['ctrlf_matched'], r['ctrlf_hits'], 'Ctrl-F')):
        want_hits = sum(1 for f in frames if term in f['name'])
        want = sum(c for names, c in stacks if any(
            term in names[k] and names[:k + 1] in tree for k in range(len(names))))
        m = MATCHED.match(text)
        if (want_hits < 1 or hits != want_hits or not m or m.group(1) != term
                or int(m.group(3)) != want or int(m.group(4)) != total
                or int(m.group(5)) != want_hits or not pct_ok(m.group(2), want)):
            fail('%s: %s for %r: %d frames highlighted, %r; expected %d frames, %d samples '
                 '(%.2f%%)' % (page, how, term, hits, text, want_hits, want, 100.0 * want / total))
    if r['search_button'] != 'Clear search':
        fail('%s: the search button reads %r during a search' % (page, r['search_button']))
    # Zoom: the clicked frame fills the width; its callers stay (full
    # width), its callees scale with it, everything else is hidden.
    z = r['zoom']
    if abs(z['x'] - PAD_X) > 0.01 or abs(z['w'] - FRAMES_W) > 0.01 or abs(z['box'] - FRAMES_W) > 0.5 \
            or not r['unzoom_shown']:
        fail('%s: clicking %r (%.2f px) left it at x %.2f, %.2f px wide (rendered %.2f), '
             'reset control shown: %s' % (page, zoom['name'], zoom['w'], z['x'], z['w'], z['box'],
                                         r['unzoom_shown']))
    lo, hi, scale = zoom['o'], zoom['o'] + zoom['n'], FRAMES_W / zoom['n']
    want_visible = {}
    for f in frames:
        if f['d'] < zoom['d'] and f['o'] <= lo and hi <= f['o'] + f['n']:
            want_visible[(f['o'], f['d'])] = (PAD_X, FRAMES_W)
        elif f['d'] >= zoom['d'] and lo <= f['o'] and f['o'] + f['n'] <= hi:
            want_visible[(f['o'], f['d'])] = (PAD_X + (f['o'] - lo) * scale, f['n'] * scale)
    visible = {(o, d): (x, w) for o, d, x, w in r['visible']}
    if visible.keys() != want_visible.keys() or any(
            abs(visible[k][0] - v[0]) > 0.01 or abs(visible[k][1] - v[1]) > 0.01
            for k, v in want_visible.items()):
        fail('%s: zoomed into %r: %d frames shown, %d expected (or misplaced)'
             % (page, zoom['name'], len(visible), len(want_visible)))
    rs = r['reset']
    if abs(rs['x'] - zoom['x']) > 0.01 or abs(rs['w'] - zoom['w']) > 0.01 or rs['hidden'] \
            or rs['unzoom_shown']:
        fail('%s: reset zoom left %r at x %.2f, %.2f px (was %.2f, %.2f), %d hidden'
             % (page, zoom['name'], rs['x'], rs['w'], zoom['x'], zoom['w'], rs['hidden']))
    return page, r


def widest(frames, pred, what, path):
    c = [f for f in frames if pred(f)]
    if not c:
        fail('%s: no frame %s' % (path, what))
    return max(c, key=lambda f: (f['n'], -f['d']))


def main():
    if len(sys.argv) != 7:
        fail('usage: svg_test.py PERF BACKSTEP CHROMIUM WORKDIR LOOP_PROGRAM CXX_PROGRAM')
    perf, backstep, chromium, workdir, loop_prog, cxx_prog = sys.argv[1:]
    os.makedirs(workdir, exist_ok=True)
    run([chromium, '--version'], 'chromium --version')

    def make(prog, args, name, good):
        """Record PROG until GOOD(frames) (a fixture runs for milliseconds:
        up to three recordings), then its SVG, checked against folded."""
        for attempt in range(3):
            data, svg = os.path.join(workdir, name + '.data'), os.path.join(workdir, name + '.svg')
            record(perf, prog, data, args)
            p = run([backstep, 'report', '--format', 'svg', '-o', svg, data], 'backstep report')
            if p.returncode:
                fail('backstep report --format svg %s: %s' % (data, p.stderr.decode()))
            stacks = folded(backstep, data)
            total, frames = check_svg(svg, stacks)
            if good(frames):
                return svg, stacks, total, frames
        fail('%s: three recordings without the frames the test needs' % prog)

    # prof_loop: 20 rounds, about a thousand samples of leaf.
    svg, stacks, total, frames = make(loop_prog, ['20'], 'loop', lambda fr: any(
        f['name'] == 'leaf' and f['n'] >= 20 for f in fr))
    size = os.path.getsize(svg)
    png, pw, ph = check_screenshot(chromium, workdir, svg, frames, total)
    leaf = widest(frames, lambda f: f['name'] == 'leaf', 'leaf', svg)
    middle = widest(frames, lambda f: f['name'] == 'middle', 'middle', svg)
    drive(chromium, workdir, svg, frames, total, stacks, leaf, middle, 'leaf', 'spin')
    print('loop: %d samples, %d frames, %d bytes of SVG; screenshot %s (%dx%d); hover, search '
          '(button, Ctrl-F), zoom and reset checked' % (total, len(frames), size, png, pw, ph))

    # The C++ fixture: a name with <...> hovered, searched for and zoomed into.
    svg, stacks, total, frames = make(cxx_prog, [], 'cxx', lambda fr: any(
        '<' in f['name'] for f in fr))
    if '&lt;' not in open(svg, encoding='utf-8').read():
        fail('%s: a name with < but no &lt; in the file' % svg)
    cxx = widest(frames, lambda f: '<' in f['name'], 'with <', svg)
    drive(chromium, workdir, svg, frames, total, stacks, cxx, cxx, cxx['name'], 'main')
    print('cxx: %d samples, %d frames, %d bytes of SVG; %r hovered, searched for and zoomed into'
          % (total, len(frames), os.path.getsize(svg), cxx['name']))


if __name__ == '__main__':
    main()
