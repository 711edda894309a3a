/* The GDB remote serial protocol, as bytes: framing ($data#cs, acks),
 * payload decoding ('}' escapes, '*' run lengths), stop replies, hex,
 * signal numbers, target descriptions and the svr4 library list. What the
 * driver (val_gdbremote.c) reads from a stub goes through here and nowhere
 * else, and so does what the fuzzer (fuzz/fuzz_rsp.c) makes up.
 *
 * Invariant: every function takes a length, never reads past it, never
 * allocates, and answers a malformed input with an error or a discarded
 * item: a stub that sends garbage cannot make the driver crash or wait on a
 * packet that will never end (the driver bounds the wait; the parser bounds
 * the packet at VAL_RSP_MAX). It trusts nothing it is fed.
 *
 * Sources: GDB's manual, "Remote Protocol" (Overview: packets, checksums,
 * escapes, run-length encoding; Stop Reply Packets; Target Descriptions;
 * Library List Format for SVR4 Targets) and include/gdb/signals.def for
 * GDB's signal numbers.
 */
#include <signal.h>
#include <string.h>

#include "val.h"

enum { ST_IDLE = 0, ST_DATA, ST_CSUM1, ST_CSUM2 };

void val_rsp_init(struct val_rsp_parser *p)
{
	p->state = ST_IDLE;
	p->len = 0;
	p->escape = p->overflow = false;
	p->sum = p->csum = 0;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static void put(struct val_rsp_parser *p, uint8_t c)
{
	if (p->len >= VAL_RSP_MAX) {
		p->overflow = true;
		return;
	}
	p->data[p->len++] = c;
}

size_t val_rsp_feed(struct val_rsp_parser *p, const uint8_t *in, size_t len,
		    enum val_rsp_item *item)
{
	*item = VAL_RSP_NONE;
	for (size_t i = 0; i < len; i++) {
		uint8_t c = in[i];
		switch (p->state) {
		case ST_IDLE:
			if (c == '$') {
				p->state = ST_DATA;
				p->len = 0;
				p->sum = 0;
				p->escape = p->overflow = false;
				continue;
			}
			*item = c == '+' ? VAL_RSP_ACK : c == '-' ? VAL_RSP_NACK : VAL_RSP_JUNK;
			return i + 1;
		case ST_DATA:
			if (c == '#' && !p->escape) {
				p->state = ST_CSUM1;
				continue;
			}
			if (c == '$' && !p->escape) {
				/* A new packet starts inside this one: the stub
				 * gave up on it; so do we. */
				p->len = 0;
				p->sum = 0;
				p->overflow = false;
				continue;
			}
			p->sum = (uint8_t)(p->sum + c);
			if (p->escape) {
				put(p, c ^ 0x20);
				p->escape = false;
			} else if (c == '}') {
				p->escape = true;
			} else if (c == '*') {
				/* Run length: the next character (already part of
				 * the sum when it arrives) repeats the previous
				 * byte N - 29 times. Marked by the escape flag's
				 * twin: the top bit of the state. */
				p->state = ST_DATA | 0x80;
			} else {
				put(p, c);
			}
			continue;
		case ST_DATA | 0x80: {
			p->sum = (uint8_t)(p->sum + c);
			p->state = ST_DATA;
			int n = (int)c - 29;
			if (!p->len || n < 0 || c == '#' || c == '$') {
				p->overflow = true; /* malformed: discarded at the end */
				if (c == '#')
					p->state = ST_CSUM1;
				continue;
			}
			uint8_t prev = p->data[p->len - 1];
			for (int k = 0; k < n; k++)
				put(p, prev);
			continue;
		}
		case ST_CSUM1: {
			int v = hexval(c);
			p->csum = (uint8_t)((v < 0 ? 0 : v) << 4);
			if (v < 0)
				p->overflow = true;
			p->state = ST_CSUM2;
			continue;
		}
		case ST_CSUM2: {
			int v = hexval(c);
			p->state = ST_IDLE;
			if (v < 0 || p->overflow || (uint8_t)(p->csum | v) != p->sum) {
				p->len = 0;
				*item = VAL_RSP_BAD;
			} else {
				*item = VAL_RSP_PACKET;
			}
			p->data[p->len] = 0;
			return i + 1;
		}
		default:
			p->state = ST_IDLE;
			break;
		}
	}
	return len;
}

size_t val_rsp_frame(const char *data, size_t len, char *out, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	uint8_t sum = 0;
	if (outlen < 4)
		return 0;
	out[o++] = '$';
	for (size_t i = 0; i < len; i++) {
		uint8_t c = (uint8_t)data[i];
		bool esc = c == '$' || c == '#' || c == '}' || c == '*';
		if (o + (esc ? 2 : 1) + 3 > outlen)
			return 0;
		if (esc) {
			out[o++] = '}';
			sum = (uint8_t)(sum + '}');
			c ^= 0x20;
		}
		out[o++] = (char)c;
		sum = (uint8_t)(sum + c);
	}
	out[o++] = '#';
	out[o++] = hex[sum >> 4];
	out[o++] = hex[sum & 15];
	return o;
}

long val_rsp_unhex(const char *hex, size_t len, uint8_t *out, size_t max)
{
	if (len % 2)
		return -1;
	size_t n = len / 2;
	if (n > max)
		n = max;
	for (size_t i = 0; i < n; i++) {
		int a = hexval((uint8_t)hex[2 * i]), b = hexval((uint8_t)hex[2 * i + 1]);
		if (a < 0 || b < 0)
			return -1;
		out[i] = (uint8_t)(a << 4 | b);
	}
	return (long)n;
}

bool val_rsp_hexnum(const char **s, const char *end, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int digits = 0;
	while (p < end && hexval((uint8_t)*p) >= 0) {
		if (x >> 60)
			return false;
		x = x << 4 | (uint64_t)hexval((uint8_t)*p);
		p++;
		digits++;
	}
	if (!digits)
		return false;
	*s = p;
	*v = x;
	return true;
}

/* "[pPID.]TID" (hex; -1 is "all", not a thread here). */
static bool parse_thread(const char *s, const char *end, uint64_t *pid, uint64_t *tid)
{
	*pid = 0;
	if (s < end && *s == 'p') {
		s++;
		if (!val_rsp_hexnum(&s, end, pid) || s >= end || *s != '.')
			return false;
		s++;
	}
	return val_rsp_hexnum(&s, end, tid) && s == end;
}

int val_rsp_parse_stop(const char *pkt, size_t len, struct val_rsp_stop *out)
{
	memset(out, 0, sizeof(*out));
	if (!len)
		return BK_E_CORRUPT;
	const char *s = pkt + 1, *end = pkt + len;
	uint64_t v;
	switch (pkt[0]) {
	case 'O':
		/* Console output: hex ("OK" is no stop reply). */
		out->kind = 'O';
		for (; s < end; s++)
			if (hexval((uint8_t)*s) < 0)
				return BK_E_CORRUPT;
		return (len - 1) % 2 ? BK_E_CORRUPT : 0;
	case 'W':
	case 'X':
		out->kind = pkt[0];
		if (!val_rsp_hexnum(&s, end, &v) || v > 255)
			return BK_E_CORRUPT;
		if (pkt[0] == 'W')
			out->code = (int)v;
		else
			out->sig = (int)v;
		/* ";process:PID" may follow. */
		return s == end || *s == ';' ? 0 : BK_E_CORRUPT;
	case 'S':
	case 'T':
		out->kind = 'T';
		{
			uint8_t b;
			if (end - s < 2 || val_rsp_unhex(s, 2, &b, 1) != 1)
				return BK_E_CORRUPT;
			out->sig = b;
		}
		s += 2;
		if (pkt[0] == 'S')
			return s == end ? 0 : BK_E_CORRUPT;
		/* n:r; pairs. */
		while (s < end) {
			const char *colon = memchr(s, ':', (size_t)(end - s));
			const char *semi = memchr(s, ';', (size_t)(end - s));
			if (!colon || (semi && semi < colon))
				return BK_E_CORRUPT;
			const char *val = colon + 1, *vend = semi ? semi : end;
			size_t klen = (size_t)(colon - s);
			if (klen == 6 && !memcmp(s, "thread", 6)) {
				if (!parse_thread(val, vend, &out->pid, &out->tid))
					return BK_E_CORRUPT;
				out->have_thread = true;
			} else if (klen == 7 && !memcmp(s, "swbreak", 7)) {
				out->swbreak = true;
			}
			/* Registers, watchpoints, library, fork, ...: not needed. */
			s = semi ? semi + 1 : end;
		}
		return 0;
	default:
		return BK_E_CORRUPT;
	}
}

/* GDB's numbers (include/gdb/signals.def) for Linux's first 31 signals. */
static const struct {
	uint8_t gdb, host;
} sigmap[] = {
	{ 1, SIGHUP }, { 2, SIGINT }, { 3, SIGQUIT }, { 4, SIGILL }, { 5, SIGTRAP },
	{ 6, SIGABRT }, { 8, SIGFPE }, { 9, SIGKILL }, { 10, SIGBUS }, { 11, SIGSEGV },
	{ 12, SIGSYS }, { 13, SIGPIPE }, { 14, SIGALRM }, { 15, SIGTERM }, { 16, SIGURG },
	{ 17, SIGSTOP }, { 18, SIGTSTP }, { 19, SIGCONT }, { 20, SIGCHLD }, { 21, SIGTTIN },
	{ 22, SIGTTOU }, { 23, SIGIO }, { 24, SIGXCPU }, { 25, SIGXFSZ }, { 26, SIGVTALRM },
	{ 27, SIGPROF }, { 28, SIGWINCH }, { 30, SIGUSR1 }, { 31, SIGUSR2 }, { 32, SIGPWR },
};

int val_rsp_gdb_to_linux_sig(int gdb)
{
	for (size_t i = 0; i < sizeof(sigmap) / sizeof(*sigmap); i++)
		if (sigmap[i].gdb == gdb)
			return sigmap[i].host;
	/* GDB_SIGNAL_REALTIME_34.. are 46..(46+29), then 78.. for 64 and up:
	 * only the common range is mapped. */
	if (gdb >= 46 && gdb <= 75)
		return 34 + (gdb - 46);
	return 0;
}

int val_rsp_linux_to_gdb_sig(int sig)
{
	for (size_t i = 0; i < sizeof(sigmap) / sizeof(*sigmap); i++)
		if (sigmap[i].host == sig)
			return sigmap[i].gdb;
	if (sig >= 34 && sig <= 63)
		return 46 + (sig - 34);
	return 0;
}

/* ---- XML, as little as needed --------------------------------------------
 *
 * Elements are found by name ("<reg "); attributes by name within the
 * element's tag, values in single or double quotes. Comments are skipped.
 * No entity is expanded but in library names. */

/* The end of the tag that starts at S (its '>'), or NULL. */
static const char *tag_end(const char *s, const char *end)
{
	char q = 0;
	for (; s < end; s++) {
		if (q) {
			if (*s == q)
				q = 0;
		} else if (*s == '"' || *s == '\'') {
			q = *s;
		} else if (*s == '>') {
			return s;
		}
	}
	return NULL;
}

/* Attribute NAME of the tag [S, END): its value's bounds. */
static bool attr(const char *s, const char *end, const char *name, const char **v, size_t *vlen)
{
	size_t n = strlen(name);
	for (const char *p = s; p + n + 2 < end; p++) {
		if ((p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n' && p[-1] != '\r') ||
		    memcmp(p, name, n) || p[n] != '=')
			continue;
		char q = p[n + 1];
		if (q != '"' && q != '\'')
			return false;
		const char *b = p + n + 2, *e = memchr(b, q, (size_t)(end - b));
		if (!e)
			return false;
		*v = b;
		*vlen = (size_t)(e - b);
		return true;
	}
	return false;
}

static bool attr_num(const char *s, const char *end, const char *name, bool hex, uint64_t *out)
{
	const char *v;
	size_t n;
	if (!attr(s, end, name, &v, &n) || !n)
		return false;
	const char *ve = v + n;
	if (hex) {
		if (n > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X'))
			v += 2;
		return val_rsp_hexnum(&v, ve, out) && v == ve;
	}
	uint64_t x = 0;
	for (; v < ve; v++) {
		if (*v < '0' || *v > '9' || x > 100000000)
			return false;
		x = x * 10 + (uint64_t)(*v - '0');
	}
	*out = x;
	return true;
}

/* The next element named NAME ("<reg") at or after *S, skipping comments:
 * the tag's bounds (after the name, up to its '>'). An element whose tag
 * does not end sets *BAD. */
static bool next_elem_bad(const char **s, const char *end, const char *name, const char **tb,
			  const char **te, bool *bad)
{
	size_t n = strlen(name);
	const char *p = *s;
	while (p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		if (!lt)
			break;
		if ((size_t)(end - lt) >= 4 && !memcmp(lt, "<!--", 4)) {
			const char *c = lt + 4;
			while (c + 3 <= end && memcmp(c, "-->", 3))
				c++;
			p = c + 3;
			continue;
		}
		if ((size_t)(end - lt) > n &&
		    !memcmp(lt, name, n) && (lt[n] == ' ' || lt[n] == '\t' || lt[n] == '\n' ||
					     lt[n] == '\r' || lt[n] == '/' || lt[n] == '>')) {
			const char *e = tag_end(lt + n, end);
			if (!e) {
				*bad = true;
				*s = end;
				return false;
			}
			*tb = lt + n;
			*te = e;
			*s = e + 1;
			return true;
		}
		p = lt + 1;
	}
	*s = end;
	return false;
}

static bool next_elem(const char **s, const char *end, const char *name, const char **tb,
		      const char **te)
{
	bool bad = false;
	return next_elem_bad(s, end, name, tb, te, &bad);
}

int val_rsp_tdesc_parse(const char *xml, size_t len, struct val_rsp_tdesc *td)
{
	const char *end = xml + len, *s = xml, *tb, *te;
	/* <architecture>NAME</architecture> */
	const char *a = xml;
	if (next_elem(&a, end, "<architecture", &tb, &te)) {
		const char *b = te + 1, *e = memchr(b, '<', (size_t)(end - b));
		size_t n = e ? (size_t)(e - b) : 0;
		if (n && n < sizeof(td->arch)) {
			memcpy(td->arch, b, n);
			td->arch[n] = 0;
		}
	}
	const char *inc = xml;
	while (next_elem(&inc, end, "<xi:include", &tb, &te)) {
		const char *v;
		size_t n;
		if (!attr(tb, te, "href", &v, &n) || !n || n >= sizeof(td->include[0]))
			return BK_E_CORRUPT;
		if (td->nincludes >= VAL_RSP_MAX_INCLUDES)
			return BK_E_LIMIT;
		memcpy(td->include[td->nincludes], v, n);
		td->include[td->nincludes++][n] = 0;
	}
	bool bad = false;
	while (next_elem_bad(&s, end, "<reg", &tb, &te, &bad)) {
		const char *v;
		size_t n;
		uint64_t bits, regnum;
		if (!attr(tb, te, "name", &v, &n) || !n || !attr_num(tb, te, "bitsize", false, &bits) ||
		    bits == 0 || bits > 4096 || bits % 8)
			return BK_E_CORRUPT;
		if (!attr_num(tb, te, "regnum", false, &regnum))
			regnum = td->next;
		if (regnum > 100000)
			return BK_E_CORRUPT;
		if (td->nregs >= VAL_RSP_MAX_REGS)
			return BK_E_LIMIT;
		unsigned i = td->nregs++;
		size_t cn = n < sizeof(td->reg[i].name) - 1 ? n : sizeof(td->reg[i].name) - 1;
		memcpy(td->reg[i].name, v, cn);
		td->reg[i].name[cn] = 0;
		td->reg[i].bits = (unsigned)bits;
		td->reg[i].regnum = (unsigned)regnum;
		td->next = (unsigned)regnum + 1;
	}
	return bad ? BK_E_CORRUPT : 0;
}

/* Decode the five predefined entities of [V, V+N) into OUT (OUTLEN). */
static bool unentity(const char *v, size_t n, char *out, size_t outlen)
{
	static const struct {
		const char *ent;
		char c;
	} ents[] = { { "&amp;", '&' }, { "&lt;", '<' }, { "&gt;", '>' }, { "&quot;", '"' },
		     { "&apos;", '\'' } };
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		char c = v[i];
		size_t used = 1;
		if (c == '&') {
			size_t k;
			for (k = 0; k < sizeof(ents) / sizeof(*ents); k++) {
				size_t el = strlen(ents[k].ent);
				if (n - i >= el && !memcmp(v + i, ents[k].ent, el)) {
					c = ents[k].c;
					used = el;
					break;
				}
			}
			if (k == sizeof(ents) / sizeof(*ents))
				return false;
		}
		if (o + 1 >= outlen)
			return false;
		out[o++] = c;
		i += used;
	}
	out[o] = 0;
	return true;
}

int val_rsp_svr4_parse(const char *xml, size_t len, uint64_t *main_lm,
		       void (*fn)(void *ctx, const char *name, uint64_t lm, uint64_t l_addr,
				  uint64_t l_ld),
		       void *ctx)
{
	const char *end = xml + len, *s = xml, *tb, *te;
	*main_lm = 0;
	if (!next_elem(&s, end, "<library-list-svr4", &tb, &te))
		return BK_E_CORRUPT;
	attr_num(tb, te, "main-lm", true, main_lm);
	bool bad = false;
	while (next_elem_bad(&s, end, "<library", &tb, &te, &bad)) {
		const char *v;
		size_t n;
		uint64_t lm, l_addr, l_ld;
		char name[4096];
		if (!attr(tb, te, "name", &v, &n) || !unentity(v, n, name, sizeof(name)) ||
		    !attr_num(tb, te, "lm", true, &lm) || !attr_num(tb, te, "l_addr", true, &l_addr) ||
		    !attr_num(tb, te, "l_ld", true, &l_ld))
			return BK_E_CORRUPT;
		fn(ctx, name, lm, l_addr, l_ld);
	}
	return bad ? BK_E_CORRUPT : 0;
}
