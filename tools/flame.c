/* The svg printer: a flame graph in one self-contained SVG file (no
 * network, its script and style inline), as `backstep report --format svg`
 * writes it.
 *
 * A flame graph draws the tree of stacks: a frame per node, its width its
 * share of the samples, the root ("all") at the bottom and each callee
 * above its caller, siblings in name order. Stacks come from the fold
 * table the folded printer fills (fr_fold); fold_sorted gives them name
 * by name with each stack after its prefixes, so a single pass with a
 * stack of open nodes gives every node its offset (in samples, from the
 * left) and width: a node opens where the first stack through it begins
 * and closes, and is written, where the first stack not through it
 * begins. Memory is the fold table (distinct stacks) and one open node
 * per level, never per sample.
 *
 * Each frame is <g data-o=OFFSET data-n=SAMPLES data-d=DEPTH> holding a
 * <title> (name, samples, percent: the native tooltip and where the
 * script reads the name), a <rect> and, when wide enough, a <text>
 * label. The script (SCRIPT below) only re-lays those out: hover writes
 * the frame into the details line, a click zooms (the frame's samples fill
 * the width, its callers stay below it, faded), search marks frames whose
 * name contains a string and says what share of all samples they cover. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fold.h"
#include "frames.h"
#include "out.h"

enum {
	IMAGE_W = 1200,   /* px */
	PAD_X = 10,       /* left and right margin */
	ROW_H = 16,       /* a level: a 15 px frame and a 1 px gap */
	TOP_H = 56,       /* title, totals and controls above the frames */
	BOTTOM_H = 34,    /* the details line below them */
	CHAR_PX = 7,      /* a character's width in 12 px Verdana, about */
};
#define FRAMES_W (IMAGE_W - 2 * PAD_X)
/* Frames narrower than this at full width are left out (and with them
 * their callees, which are narrower still): they could not be seen or
 * hovered, and a profile with many rare stacks would otherwise be mostly
 * invisible frames. Zooming in does not bring them back. */
#define MIN_FRAME_PX 0.1

static char event_name[64];
static bool mixed_events;

/* The length of the UTF-8 sequence at S (LEFT bytes available), or 0 if
 * it is not a well-formed character XML allows (a control character, a
 * stray or overlong byte, a surrogate, U+FFFE/U+FFFF). */
static size_t utf8_len(const unsigned char *s, size_t left)
{
	unsigned c = s[0];
	if (c < 0x80)
		return c >= 0x20 || c == '\t' ? 1 : 0;
	size_t n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 :
		   c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (n == 0 || n > left)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] > 0x9f) ||
	    (c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] > 0x8f) ||
	    (c == 0xef && s[1] == 0xbf && s[2] >= 0xbe))
		return 0;
	return n;
}

/* TEXT (LEN bytes) as XML character data or attribute value, at most MAX
 * characters: cut to MAX - 2 and "..". Symbol names are not promised to
 * be UTF-8: a byte that is not part of a character is written as '?'. */
static void xml_text(const char *text, size_t len, size_t max)
{
	const unsigned char *s = (const unsigned char *)text;
	size_t chars = 0;
	for (size_t i = 0; i < len; chars++) {
		size_t n = utf8_len(s + i, len - i);
		i += n ? n : 1;
	}
	size_t keep = chars <= max ? chars : max - 2;
	for (size_t i = 0, c = 0; i < len && c < keep; c++) {
		size_t n = utf8_len(s + i, len - i);
		switch (n ? s[i] : '?') {
		case '&': out_s("&amp;"); break;
		case '<': out_s("&lt;"); break;
		case '>': out_s("&gt;"); break;
		case '"': out_s("&quot;"); break;
		default: n ? out_mem(s + i, n) : out_c('?');
		}
		i += n ? n : 1;
	}
	if (keep < chars)
		out_s("..");
}

/* A warm color from the name's bytes (red to yellow), so a function keeps
 * its color across graphs; names in brackets ([libc.so.6], [unknown]:
 * no symbol) and the root in grey. */
static void out_color(const char *name, size_t len, unsigned depth)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)name[i]) * 1099511628211ull;
	unsigned r = 205 + (unsigned)(h % 50), g = 80 + (unsigned)((h >> 16) % 150),
		 b = 20 + (unsigned)((h >> 32) % 50);
	if (depth == 0 || (len > 0 && name[0] == '['))
		r = g = b = 160 + (unsigned)(h % 30);
	out_fmt("rgb(%u,%u,%u)", r, g, b);
}

/* One frame: NAME (LEN bytes) over samples [OFF, OFF + N) of TOTAL at
 * level DEPTH (0: the root), whose y is BASE_Y - DEPTH rows. */
static void frame(const char *name, size_t len, uint64_t off, uint64_t n, uint64_t total,
		  unsigned depth, unsigned base_y)
{
	double scale = (double)FRAMES_W / (double)total, w = (double)n * scale;
	if (w < MIN_FRAME_PX)
		return;
	double x = PAD_X + (double)off * scale;
	unsigned y = base_y - depth * ROW_H;
	out_fmt("<g data-o=\"%llu\" data-n=\"%llu\" data-d=\"%u\"><title>",
		(unsigned long long)off, (unsigned long long)n, depth);
	xml_text(name, len, SIZE_MAX);
	out_fmt(" (%llu sample%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" "
		"height=\"%u\" fill=\"", (unsigned long long)n, n == 1 ? "" : "s",
		100.0 * (double)n / (double)total, x, y, w, ROW_H - 1);
	out_color(name, len, depth);
	out_s("\"/>");
	/* As many characters as fit with 3 px either side; fewer than 3: none. */
	double fit = (w - 6) / CHAR_PX;
	if (fit >= 3) {
		out_fmt("<text x=\"%.2f\" y=\"%.1f\">", x + 3, y + 11.5);
		xml_text(name, len, (size_t)fit);
		out_s("</text>");
	}
	out_s("</g>\n");
}

/* The viewer: plain DOM calls that Chromium and Firefox both have, no
 * modules, nothing fetched. Frames are found by their data-* attributes;
 * a frame's name is its <title> less the " (N samples, P%)" written after
 * it. Zoom keeps frames whose samples lie inside the clicked one (it and
 * its callees) and the frames below it (its callers, which contain it);
 * everything else is hidden. The matched share counts a sample once even
 * when several frames of its stack match (recursion): the union of the
 * matching frames' sample ranges, which nest or are disjoint. */
static const char SCRIPT[] =
	"(function () {\n"
	"'use strict';\n"
	"var NS = 'http://www.w3.org/2000/svg';\n"
	"function $(id) { return document.getElementById(id); }\n"
	"var box = $('frames'), details = $('details'), matched = $('matched'),\n"
	"    unzoom = $('unzoom'), find = $('search');\n"
	"var total = +box.getAttribute('data-total'), left = +box.getAttribute('data-x'),\n"
	"    width = +box.getAttribute('data-w'), charPx = +box.getAttribute('data-ch');\n"
	"var nodes = [], zoomed = null, term = '';\n"
	"for (var g = box.firstElementChild; g; g = g.nextElementSibling) {\n"
	"  var t = g.querySelector('title').textContent;\n"
	"  g.fg = { g: g, o: +g.getAttribute('data-o'), n: +g.getAttribute('data-n'),\n"
	"    d: +g.getAttribute('data-d'), name: t.slice(0, t.lastIndexOf(' (')),\n"
	"    rect: g.querySelector('rect'), label: g.querySelector('text') };\n"
	"  nodes.push(g.fg);\n"
	"}\n"
	"function percent(k) { return (total ? 100 * k / total : 0).toFixed(2) + '%'; }\n"
	"function describe(f) {\n"
	"  return f.name + ' (' + f.n + (f.n === 1 ? ' sample, ' : ' samples, ') + percent(f.n) + ')';\n"
	"}\n"
	"function frameOf(el) {\n"
	"  for (; el && el !== box; el = el.parentNode)\n"
	"    if (el.fg) return el.fg;\n"
	"  return null;\n"
	"}\n"
	"function setLabel(f, x, w) {\n"
	"  var fit = Math.floor((w - 6) / charPx), s = '';\n"
	"  if (fit >= 3) s = f.name.length <= fit ? f.name : f.name.slice(0, fit - 2) + '..';\n"
	"  if (!f.label) {\n"
	"    if (!s) return;\n"
	"    f.label = document.createElementNS(NS, 'text');\n"
	"    f.label.setAttribute('y', +f.rect.getAttribute('y') + 11.5);\n"
	"    f.g.appendChild(f.label);\n"
	"  }\n"
	"  f.label.setAttribute('x', (x + 3).toFixed(2));\n"
	"  f.label.textContent = s;\n"
	"}\n"
	"function layout() {\n"
	"  var zo = zoomed ? zoomed.o : 0, zn = zoomed ? zoomed.n : total;\n"
	"  var zd = zoomed ? zoomed.d : 0, scale = width / zn;\n"
	"  nodes.forEach(function (f) {\n"
	"    var from = Math.max(f.o, zo), to = Math.min(f.o + f.n, zo + zn);\n"
	"    var shown = to > from && (f.d < zd || (f.o >= zo && f.o + f.n <= zo + zn));\n"
	"    f.g.classList.toggle('hide', !shown);\n"
	"    f.g.classList.toggle('caller', shown && f.d < zd);\n"
	"    if (!shown) return;\n"
	"    var x = left + (from - zo) * scale, w = (to - from) * scale;\n"
	"    f.rect.setAttribute('x', x.toFixed(2));\n"
	"    f.rect.setAttribute('width', w.toFixed(2));\n"
	"    setLabel(f, x, w);\n"
	"  });\n"
	"  unzoom.classList.toggle('hide', !zoomed);\n"
	"}\n"
	"function zoom(f) { zoomed = f && f.d > 0 ? f : null; layout(); }\n"
	"function search(s) {\n"
	"  term = s || '';\n"
	"  var hits = nodes.filter(function (f) {\n"
	"    var hit = term !== '' && f.name.indexOf(term) >= 0;\n"
	"    f.g.classList.toggle('hit', hit);\n"
	"    return hit;\n"
	"  });\n"
	"  hits.sort(function (a, b) { return a.o - b.o || a.d - b.d; });\n"
	"  var sum = 0, end = 0;\n"
	"  hits.forEach(function (f) {\n"
	"    if (f.o + f.n > end) { sum += f.o + f.n - Math.max(f.o, end); end = f.o + f.n; }\n"
	"  });\n"
	"  matched.textContent = term ? 'Matched \"' + term + '\": ' + percent(sum) + ' (' + sum +\n"
	"    ' of ' + total + ' samples, ' + hits.length + ' frames)' : ' ';\n"
	"  find.textContent = term ? 'Clear search' : 'Search';\n"
	"}\n"
	"function ask() {\n"
	"  var s = window.prompt('Highlight frames whose name contains:', term);\n"
	"  if (s !== null) search(s);\n"
	"}\n"
	"box.addEventListener('mouseover', function (e) {\n"
	"  var f = frameOf(e.target);\n"
	"  if (f) details.textContent = describe(f);\n"
	"});\n"
	"box.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"box.addEventListener('click', function (e) { var f = frameOf(e.target); if (f) zoom(f); });\n"
	"unzoom.addEventListener('click', function () { zoom(null); });\n"
	"find.addEventListener('click', function () { if (term) search(''); else ask(); });\n"
	"window.addEventListener('keydown', function (e) {\n"
	"  if (((e.ctrlKey || e.metaKey) && (e.key === 'f' || e.key === 'F')) || e.key === '/') {\n"
	"    e.preventDefault();\n"
	"    ask();\n"
	"  } else if (e.key === 'Escape') {\n"
	"    search('');\n"
	"    zoom(null);\n"
	"  }\n"
	"});\n"
	"})();\n";

static const char STYLE[] =
	"text { font: 12px Verdana, sans-serif; fill: #000; }\n"
	"#title { font-size: 17px; }\n"
	".ctl { cursor: pointer; fill: #1a4f9c; text-decoration: underline; }\n"
	"#frames > g { cursor: pointer; }\n"
	"#frames > g:hover > rect { stroke: #000; stroke-width: 0.6; }\n"
	"#frames text { pointer-events: none; }\n"
	"#frames > g.hit > rect { fill: rgb(200,70,220); }\n"
	"#frames > g.caller { opacity: 0.55; }\n"
	".hide { display: none; }\n";

static void svg_begin(void)
{
	event_name[0] = 0;
	mixed_events = false;
}

static void svg_stack(const struct fr_stack *s, size_t index)
{
	const char *ev = s->event ? s->event : "";
	if (index == 0)
		snprintf(event_name, sizeof(event_name), "%s", ev);
	else if (strncmp(event_name, ev, sizeof(event_name) - 1))
		mixed_events = true;
	fr_fold(s);
}

/* The frames of the sorted stacks ST[0..N), TOTAL samples, root at BASE_Y:
 * one pass, OPEN[d] the node of level d + 1 the current stack runs
 * through, opened at sample offset AT[d]. */
static void svg_frames(struct fold *f, const struct fold_stack *st, size_t n, uint64_t total,
		       unsigned maxdepth, unsigned base_y)
{
	uint32_t *open = malloc(maxdepth * sizeof(*open) + 1);
	uint64_t *at = malloc(maxdepth * sizeof(*at) + 1);
	if (!open || !at) {
		fprintf(stderr, "backstep: out of memory: the flame graph has no frames\n");
		free(open);
		free(at);
		return;
	}
	uint32_t nopen = 0;
	uint64_t x = 0;
	for (size_t i = 0; i <= n; i++) {
		/* Past the last stack every node closes. */
		uint32_t keep = 0, depth = i < n ? st[i].n : 0;
		while (keep < nopen && keep < depth && open[keep] == st[i].names[keep])
			keep++;
		while (nopen > keep) {
			nopen--;
			size_t len;
			const char *name = fold_name_text(f, open[nopen], &len);
			frame(name, len, at[nopen], x - at[nopen], total, nopen + 1, base_y);
		}
		for (; nopen < depth; nopen++) {
			open[nopen] = st[i].names[nopen];
			at[nopen] = x;
		}
		if (i < n)
			x += st[i].count;
	}
	frame("all", 3, 0, total, total, 0, base_y);
	free(open);
	free(at);
}

static void svg_end(void)
{
	struct fold *f = fr_fold_table();
	const struct fold_stack *st = NULL;
	size_t n = f ? fold_sorted(f, &st) : 0;
	uint64_t total = 0;
	unsigned maxdepth = 0;
	for (size_t i = 0; i < n; i++) {
		total += st[i].count;
		if (st[i].n > maxdepth)
			maxdepth = st[i].n;
	}
	unsigned base_y = TOP_H + maxdepth * ROW_H, height = base_y + ROW_H + BOTTOM_H;
	/* out_fmt cuts at 1 KiB: the style and script go through out_s. */
	out_fmt("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%u\" viewBox=\"0 0 %d %u\">\n<title>Flame graph (backstep report)</title>\n"
		"<style><![CDATA[\n", IMAGE_W, height, IMAGE_W, height);
	out_s(STYLE);
	out_fmt("]]></style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fdf8ee\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">Flame graph</text>\n"
		"<text id=\"total\" x=\"%d\" y=\"44\" text-anchor=\"middle\">%llu samples",
		IMAGE_W / 2, IMAGE_W / 2, (unsigned long long)total);
	if (event_name[0] && !mixed_events) {
		out_s(" of ");
		xml_text(event_name, strlen(event_name), SIZE_MAX);
	}
	out_fmt(", %zu distinct stacks</text>\n"
		"<text id=\"unzoom\" class=\"ctl hide\" x=\"%d\" y=\"44\">Reset zoom</text>\n"
		"<text id=\"search\" class=\"ctl\" x=\"%d\" y=\"44\" text-anchor=\"end\">Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"> </text>\n"
		"<g id=\"frames\" data-total=\"%llu\" data-x=\"%d\" data-w=\"%d\" data-ch=\"%d\">\n",
		n, PAD_X, IMAGE_W - PAD_X, PAD_X, height - 12, IMAGE_W - PAD_X, height - 12,
		(unsigned long long)total, PAD_X, FRAMES_W, CHAR_PX);
	if (total)
		svg_frames(f, st, n, total, maxdepth, base_y);
	out_s("</g>\n<script><![CDATA[\n");
	out_s(SCRIPT);
	out_s("]]></script>\n</svg>\n");
	fr_fold_reset();
}

const struct fr_printer fr_svg = { "svg", svg_begin, svg_stack, svg_end };
