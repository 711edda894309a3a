/* The GDB remote driver: the program runs under a gdbstub — qemu-user's
 * (`qemu-aarch64 -g PORT`, started here with --qemu), gdbserver, or any
 * stub at --remote HOST:PORT — and the checker's ops (val.h, "Drivers")
 * become remote-protocol packets over TCP:
 *
 *   start       connect (qemu: start it on a free port first), qSupported,
 *               QStartNoAckMode, ?, vCont?, qXfer:features (the register
 *               layout), qXfer:auxv (AT_ENTRY, AT_PHDR, AT_BASE), and
 *               qXfer:exec-file when no program is named
 *   resume      vCont;s / vCont;c (S/C with a signal; s/c without vCont).
 *               A thread standing on one of our breakpoints is stepped off
 *               it first (z0, s, Z0), as GDB does without displaced steps
 *   wait        the stop reply: T/S (signal, step or breakpoint), W, X; O
 *               (console output) skipped
 *   regs        g, then p for what g leaves out (AArch64 d8-d15: qemu's g
 *               holds the core registers only), renumbered from the target
 *               description's names to DWARF's
 *   read        m, through a cache of 1 KiB blocks: blocks inside a
 *               module's read-only segments stay, the rest is dropped at
 *               every resume and before every walk
 *   insert_bp   Z0 (z0 removes): the stub hides its breakpoints from m
 *   steps that qemu-user's gdbstub gets wrong, run to a temporary
 *               breakpoint instead: a step that delivers a signal (qemu runs
 *               the handler's first instruction: the signal goes with a
 *               continue, stopping at the handler's entry breakpoint or
 *               back where the thread stood) and a step over a system call
 *               (qemu runs the next instruction too: run to the one after
 *               it, or for rt_sigreturn to the signal frame's PC)
 *   space       modules as GDB finds them without /proc/PID/maps (qemu's
 *               guest has none the stub would give): qXfer:libraries-svr4
 *               when offered, else the executable from the auxiliary vector
 *               (AT_ENTRY against its e_entry), the dynamic linker at
 *               AT_BASE, and the dynamic linker's list (PT_DYNAMIC's
 *               DT_DEBUG -> r_debug -> link_map), read through m; each
 *               file looked up under the sysroot first (GDB's `set
 *               sysroot`). A breakpoint on r_debug.r_brk (the linker calls
 *               it around every dlopen and dlclose) stands in for the
 *               map-changing system calls a stub cannot report: a thread
 *               running free that reaches it is reported as an mmap exit,
 *               and the checker re-reads the list.
 *
 * Limits, said where they bite: one thread (a stop reply naming a second
 * ends the run with that said; qemu-user and gdbserver without
 * QThreadEvents do not report a new thread before it stops); forks are not
 * followed (qemu-user's gdbstub does not; the child runs free); exec is
 * not followed; vDSO code is not a module (no file: a walk through it has
 * no CFI); a program's own SIGTRAP is taken for a step when it arrives
 * during one.
 *
 * Invariant: every wait on the stub is bounded (opts.timeout_ms); a stub
 * that closes the connection, stays silent or answers what cannot be
 * parsed ends the run with one line in val_driver.lost and a BK_E_* code —
 * never a guessed event. Packets are parsed only by val_rsp.c. It trusts
 * the checker to keep the ops' contract (one thread resumed at a time,
 * regs only while stopped).
 */
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "val.h"

#define BLOCK 1024u           /* memory cache granule (a 4 KiB page holds 4) */
#define NBLOCKS 1024u         /* cache entries, direct-mapped */
#define MAX_MODS 512
#define MAX_BPS 65536
#define MAX_LINK_MAPS 4096    /* bound on the dynamic linker's list */
#define MAX_STABLE 1024
#define DEFAULT_TIMEOUT_MS 30000
#define CONNECT_TIMEOUT_MS 10000
#define PREFETCH 2            /* stack blocks read with the registers */

struct regmap {
	unsigned dwarf;           /* DWARF number */
	unsigned regnum;          /* the stub's */
	size_t off;               /* in g's bytes */
	unsigned size;            /* bytes read (8; a vector's low 8) */
	unsigned full;            /* the register's size in bytes */
};

struct block {
	uint64_t addr;            /* BLOCK-aligned; valid when len or bad */
	uint16_t len;             /* bytes readable from addr */
	bool valid, stable;
};

struct mod {
	uint64_t start, end, bias;
	char *path;
};

struct gr {
	struct val_driver base;   /* first: a struct val_driver * is a struct gr * */
	int fd;
	pid_t qemu;               /* the qemu-user we started, or 0 */
	char where[300];          /* "HOST:PORT" or "qemu-aarch64 (port N)" */
	unsigned timeout_ms;
	bool noack, vcont, multiprocess, xfer_features, xfer_auxv, xfer_svr4, xfer_exec;
	size_t pkt_max;
	struct val_rsp_parser *rx;
	uint8_t in[16384];
	size_t in_pos, in_len;
	char lost[512];
	/* The thread. */
	int tid;
	char thread[40];          /* as the stub names it, for vCont */
	uint64_t pid;
	bool running;             /* resumed, its stop reply not yet read */
	enum val_resume how;      /* the last resume */
	bool gone;                /* exited or killed */
	bool exec_told;
	bool have_pending;        /* a stop reply read ahead (stepping off a bp) */
	uint64_t temp_bp;         /* a step with a signal: our breakpoint there */
	bool have_temp;
	int sig_step;             /* a step that delivers this signal by a continue */
	uint64_t sig_step_pc;     /* ... from this PC */
	struct val_rsp_stop pending;
	/* Registers. */
	struct regmap map[64];
	unsigned nmap;
	size_t g_len;             /* bytes of g (0: not known yet) */
	bool regs_valid;
	struct bk_regs regs;
	uint64_t last_sp;         /* SP at the last stop (0: none yet) */
	/* Breakpoints we set: sorted addresses; R_BRK is the driver's own. */
	uint64_t *bps;
	size_t nbps, capbps;
	uint64_t r_brk;
	bool r_brk_set, r_brk_checker;
	unsigned bp_kind;         /* Z0's kind: the breakpoint's length */
	/* Memory. */
	struct block *blocks;
	uint8_t (*block_data)[BLOCK];
	struct { uint64_t start, end; } stable[MAX_STABLE];
	size_t nstable;
	/* The program. */
	char exe[4096];
	char sysroot[4096];
	uint64_t at_entry, at_phdr, at_base, e_entry;
	bool have_auxv;
	struct bk_space *space;
	struct mod mods[MAX_MODS];
	size_t nmods;
	struct val_event ev;
};

static struct block *slot_of(struct gr *g, uint64_t b, uint8_t **data);
static void fill_block(struct gr *g, uint64_t b);

static struct gr *gr_of(struct val_driver *d)
{
	return (struct gr *)d;
}

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

__attribute__((format(printf, 2, 3)))
static int lose(struct gr *g, const char *fmt, ...)
{
	if (!g->lost[0]) {
		int n = snprintf(g->lost, sizeof(g->lost), "%s: ", g->where);
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(g->lost + n, sizeof(g->lost) - (size_t)n, fmt, ap);
		va_end(ap);
		g->base.lost = g->lost;
	}
	return BK_E_IO;
}

/* ---- Bytes and packets ---------------------------------------------------- */

static int send_all(struct gr *g, const char *buf, size_t len)
{
	double deadline = now_ms() + g->timeout_ms;
	while (len) {
		ssize_t n = send(g->fd, buf, len, MSG_NOSIGNAL);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			return lose(g, "the connection failed (%s)", strerror(errno));
		struct pollfd p = { .fd = g->fd, .events = POLLOUT };
		double left = deadline - now_ms();
		if (left <= 0)
			return lose(g, "the stub stopped reading (no progress for %u s)",
				    g->timeout_ms / 1000);
		poll(&p, 1, (int)left + 1);
	}
	return 0;
}

/* BACKSTEP_RSP_TRACE set: every packet to stderr (for a stub's author). */
static bool trace_on = false;

static int send_packet(struct gr *g, const char *data)
{
	char buf[1024];
	if (trace_on)
		fprintf(stderr, "rsp> %s\n", data);
	size_t n = val_rsp_frame(data, strlen(data), buf, sizeof(buf));
	if (!n)
		return lose(g, "internal: packet too long");
	return send_all(g, buf, n);
}

/* The next item from the stub. INTERRUPTIBLE: a signal to the validator
 * returns 1 (*ITEM NONE) so the checker can look at its stop flag. */
static int next_item(struct gr *g, enum val_rsp_item *item, bool interruptible, double deadline)
{
	unsigned junk = 0;
	for (;;) {
		while (g->in_pos < g->in_len) {
			g->in_pos += val_rsp_feed(g->rx, g->in + g->in_pos, g->in_len - g->in_pos, item);
			if (*item == VAL_RSP_JUNK) {
				if (++junk > 4096)
					return lose(g, "the stub sends bytes outside packets (not the GDB remote protocol?)");
				continue;
			}
			if (*item != VAL_RSP_NONE)
				return 0;
		}
		g->in_pos = g->in_len = 0;
		double left = deadline - now_ms();
		if (left <= 0)
			return lose(g, "the stub sent no answer for %u s%s", g->timeout_ms / 1000,
				    g->running && g->how == VAL_RESUME_STEP
					    ? " to a single step (a thread the driver does not follow "
					      "holding the program? it follows one thread)"
					    : "");
		struct pollfd p = { .fd = g->fd, .events = POLLIN };
		int r = poll(&p, 1, left > 1e9 ? 1000000000 : (int)left + 1);
		if (r < 0 && errno == EINTR) {
			if (interruptible) {
				*item = VAL_RSP_NONE;
				return 1;
			}
			continue;
		}
		if (r <= 0)
			continue;
		ssize_t n = recv(g->fd, g->in, sizeof(g->in), 0);
		if (n == 0)
			return lose(g, "the stub closed the connection");
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return lose(g, "the connection failed (%s)", strerror(errno));
		}
		g->in_len = (size_t)n;
	}
}

/* The next packet (acknowledged in ack mode). 1: interrupted (only when
 * INTERRUPTIBLE). */
static int recv_packet(struct gr *g, bool interruptible, double deadline)
{
	unsigned bad = 0;
	for (;;) {
		enum val_rsp_item it;
		int r = next_item(g, &it, interruptible, deadline);
		if (r)
			return r;
		if (it == VAL_RSP_PACKET) {
			if (trace_on)
				fprintf(stderr, "rsp< %.4000s\n", (const char *)g->rx->data);
			if (!g->noack && (r = send_all(g, "+", 1)))
				return r;
			return 0;
		}
		if (it == VAL_RSP_BAD) {
			if (g->noack || ++bad > 3)
				return lose(g, "the stub sends malformed packets (bad checksum or over %u bytes)",
					    VAL_RSP_MAX);
			if ((r = send_all(g, "-", 1)))
				return r;
		}
		/* acks of our packets arriving late: nothing to do */
	}
}

/* Send DATA and wait for its ack (ack mode). */
static int send_cmd(struct gr *g, const char *data)
{
	for (unsigned tries = 0;; tries++) {
		int r = send_packet(g, data);
		if (r || g->noack)
			return r;
		double deadline = now_ms() + g->timeout_ms;
		for (;;) {
			enum val_rsp_item it;
			if ((r = next_item(g, &it, false, deadline)))
				return r;
			if (it == VAL_RSP_ACK)
				return 0;
			if (it == VAL_RSP_NACK)
				break;
			if (it == VAL_RSP_PACKET || it == VAL_RSP_BAD)
				return lose(g, "the stub answered before acknowledging");
		}
		if (tries == 3)
			return lose(g, "the stub refuses our packets (4 negative acks)");
	}
}

/* A command and its reply (in g->rx->data, g->rx->len). */
static int command(struct gr *g, const char *data)
{
	int r = send_cmd(g, data);
	if (!r)
		r = recv_packet(g, false, now_ms() + g->timeout_ms);
	return r;
}

static const char *reply(struct gr *g)
{
	return (const char *)g->rx->data;
}

static bool is_error(struct gr *g)
{
	return g->rx->len == 3 && g->rx->data[0] == 'E';
}

/* qXfer:OBJECT:read:ANNEX into a buffer of at most MAX bytes (*OUT, to
 * free, NUL-terminated; *LEN). */
static int xfer(struct gr *g, const char *object, const char *annex, char **out, size_t *len,
		size_t max)
{
	size_t have = 0, cap = 4096;
	char *buf = base_alloc(cap + 1);
	if (!buf)
		return BK_E_NOMEM;
	for (;;) {
		char cmd[300];
		size_t chunk = g->pkt_max > 64 ? g->pkt_max - 32 : 1024;
		snprintf(cmd, sizeof(cmd), "qXfer:%s:read:%s:%zx,%zx", object, annex, have, chunk);
		int r = command(g, cmd);
		if (r) {
			base_free(buf);
			return r;
		}
		const char *p = reply(g);
		size_t n = g->rx->len;
		if (!n || (p[0] != 'm' && p[0] != 'l')) {
			base_free(buf);
			return BK_E_NOT_FOUND; /* E.. or unsupported */
		}
		if (have + n - 1 > max) {
			base_free(buf);
			return BK_E_LIMIT;
		}
		if (have + n > cap) {
			size_t ncap = (have + n) * 2;
			char *nb = base_realloc(buf, ncap + 1);
			if (!nb) {
				base_free(buf);
				return BK_E_NOMEM;
			}
			buf = nb;
			cap = ncap;
		}
		memcpy(buf + have, p + 1, n - 1);
		have += n - 1;
		if (p[0] == 'l' || n == 1)
			break;
	}
	buf[have] = 0;
	*out = buf;
	*len = have;
	return 0;
}

/* ---- Registers -------------------------------------------------------------- */

/* The DWARF number of the stub's register NAME, or -1. */
static int dwarf_of(enum bk_arch arch, const char *name, unsigned *size)
{
	*size = 8;
	if (arch == BK_ARCH_X86_64) {
		static const char *const n[] = { "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
						 "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
						 "rip" };
		for (unsigned i = 0; i < sizeof(n) / sizeof(*n); i++)
			if (!strcmp(name, n[i]))
				return (int)i;
		if (!strcmp(name, "eflags")) {
			*size = 4;
			return 49;
		}
		return -1;
	}
	if (arch == BK_ARCH_AARCH64) {
		if (name[0] == 'x' && name[1]) {
			char *e;
			long v = strtol(name + 1, &e, 10);
			if (!*e && v >= 0 && v <= 30)
				return (int)v;
		}
		if (!strcmp(name, "sp"))
			return 31;
		if (!strcmp(name, "pc"))
			return 32;
		/* d8-d15: the low halves of v8-v15, or of z8-z15 with SVE. */
		if ((name[0] == 'v' || name[0] == 'd' || name[0] == 'z') && name[1]) {
			char *e;
			long v = strtol(name + 1, &e, 10);
			if (!*e && v >= 8 && v <= 15)
				return (int)(64 + v);
		}
	}
	return -1;
}

static void add_map(struct gr *g, const char *name, unsigned regnum, size_t off, unsigned full)
{
	unsigned size;
	int dw = dwarf_of(g->base.arch, name, &size);
	if (dw < 0 || g->nmap >= sizeof(g->map) / sizeof(*g->map) || full < size)
		return;
	g->map[g->nmap++] = (struct regmap){ (unsigned)dw, regnum, off, size, full };
}

static int cmp_regnum(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

/* The register layout from the target description, or GDB's defaults. */
static int read_tdesc(struct gr *g)
{
	struct val_rsp_tdesc *td = base_calloc(1, sizeof(*td));
	if (!td)
		return BK_E_NOMEM;
	bool ok = false;
	if (g->xfer_features) {
		char *xml;
		size_t len;
		ok = xfer(g, "features", "target.xml", &xml, &len, 1u << 20) == 0;
		if (ok) {
			ok = val_rsp_tdesc_parse(xml, len, td) == 0;
			base_free(xml);
		}
		for (unsigned i = 0; ok && i < td->nincludes; i++) {
			if (xfer(g, "features", td->include[i], &xml, &len, 1u << 20) == 0) {
				ok = val_rsp_tdesc_parse(xml, len, td) == 0;
				base_free(xml);
			}
		}
		if (g->lost[0]) {
			base_free(td);
			return BK_E_IO;
		}
	}
	if (ok && td->nregs) {
		/* g holds the registers in regnum order, each its size. */
		unsigned order[VAL_RSP_MAX_REGS][2];
		for (unsigned i = 0; i < td->nregs; i++) {
			order[i][0] = td->reg[i].regnum;
			order[i][1] = i;
		}
		qsort(order, td->nregs, sizeof(order[0]), cmp_regnum);
		size_t off = 0;
		for (unsigned k = 0; k < td->nregs; k++) {
			unsigned i = order[k][1];
			add_map(g, td->reg[i].name, td->reg[i].regnum, off, td->reg[i].bits / 8);
			off += td->reg[i].bits / 8;
		}
	} else if (g->base.arch == BK_ARCH_X86_64) {
		static const char *const n[] = { "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp",
						 "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
						 "rip", "eflags" };
		for (unsigned i = 0; i < 18; i++)
			add_map(g, n[i], i, 8 * i, i == 17 ? 4 : 8);
	} else {
		char nm[8];
		for (unsigned i = 0; i < 31; i++) {
			snprintf(nm, sizeof(nm), "x%u", i);
			add_map(g, nm, i, 8 * i, 8);
		}
		add_map(g, "sp", 31, 8 * 31, 8);
		add_map(g, "pc", 32, 8 * 32, 8);
	}
	base_free(td);
	return 0;
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	for (unsigned i = n; i-- > 0;)
		v = v << 8 | p[i];
	return v;
}

static uint64_t cur_pc(struct gr *g)
{
	return g->regs.val[arch_get(g->base.arch)->pc_reg];
}

static int fetch_regs(struct gr *g)
{
	if (g->regs_valid)
		return 0;
	/* Once g's length is known, the p packets that follow it go in the
	 * same write (acks off): one round trip for every register. */
	bool batched = g->noack && g->g_len;
	unsigned nbatch = 0;
	int r = send_cmd(g, "g");
	for (unsigned i = 0; batched && !r && i < g->nmap; i++) {
		char cmd[16];
		if (g->map[i].off + g->map[i].full <= g->g_len)
			continue;
		snprintf(cmd, sizeof(cmd), "p%x", g->map[i].regnum);
		r = send_packet(g, cmd);
		nbatch++;
	}
	/* And the stack blocks at the last SP: a walk reads them next, and
	 * SP seldom leaves its block between two steps. */
	uint64_t pre[PREFETCH];
	unsigned npre = 0;
	for (unsigned k = 0; batched && !r && g->last_sp && k < PREFETCH; k++) {
		uint8_t *data;
		uint64_t b = (g->last_sp & ~(uint64_t)(BLOCK - 1)) + (uint64_t)k * BLOCK;
		struct block *blk = slot_of(g, b, &data);
		if (blk->valid && blk->addr == b)
			continue;
		char cmd[64];
		snprintf(cmd, sizeof(cmd), "m%llx,%x", (unsigned long long)b, BLOCK);
		r = send_packet(g, cmd);
		pre[npre++] = b;
	}
	if (!r)
		r = recv_packet(g, false, now_ms() + g->timeout_ms);
	if (r)
		return r;
	if (is_error(g) || g->rx->len < 2)
		return lose(g, "the stub gave no registers ('g': %.20s)", reply(g));
	static uint8_t bytes[VAL_RSP_MAX / 2];
	size_t hexlen = g->rx->len;
	/* 'x' marks an unavailable byte: read as 0 and the register not valid. */
	long n = 0;
	memset(&g->regs, 0, sizeof(g->regs));
	char *p = (char *)g->rx->data;
	bool unavailable[VAL_RSP_MAX / 2 / 8 + 1] = { 0 };
	for (size_t i = 0; i + 1 < hexlen; i += 2) {
		if (p[i] == 'x') {
			p[i] = p[i + 1] = '0';
			unavailable[(i / 2) / 8] = true;
		}
	}
	n = val_rsp_unhex(p, hexlen & ~(size_t)1, bytes, sizeof(bytes));
	if (n < 0)
		return lose(g, "the stub's registers are not hex");
	if (batched && (size_t)n != g->g_len)
		return lose(g, "the stub's 'g' changed length (%ld bytes, then %zu)", n, g->g_len);
	g->g_len = (size_t)n;
	unsigned need_p = 0;
	if (trace_on)
		for (unsigned i = 0; i < g->nmap; i++)
			fprintf(stderr, "rsp: dwarf %u = regnum %u at %zu (%u of %u bytes)%s\n",
				g->map[i].dwarf, g->map[i].regnum, g->map[i].off, g->map[i].size,
				g->map[i].full, g->map[i].off + g->map[i].full <= g->g_len ? " in g" : "");
	for (unsigned i = 0; i < g->nmap; i++) {
		const struct regmap *m = &g->map[i];
		if (m->off + m->full <= g->g_len) {
			if (!unavailable[m->off / 8])
				bk_regs_set(&g->regs, m->dwarf, le(bytes + m->off, m->size));
		} else {
			need_p++;
		}
	}
	if (need_p) {
		/* Pipelined where acks are off: every p at once, then the
		 * replies in order (the stub answers packets one by one). */
		char cmds[64][16];
		unsigned idx[64], k = 0;
		for (unsigned i = 0; i < g->nmap; i++) {
			const struct regmap *m = &g->map[i];
			if (m->off + m->full <= g->g_len)
				continue;
			snprintf(cmds[k], sizeof(cmds[k]), "p%x", m->regnum);
			idx[k++] = i;
		}
		if (g->noack && !batched)
			for (unsigned j = 0; j < k; j++)
				if ((r = send_packet(g, cmds[j])))
					return r;
		if (batched && k != nbatch)
			return lose(g, "internal: register batch");
		for (unsigned j = 0; j < k; j++) {
			r = g->noack ? recv_packet(g, false, now_ms() + g->timeout_ms) : command(g, cmds[j]);
			if (r)
				return r;
			const struct regmap *m = &g->map[idx[j]];
			uint8_t v[64];
			if (val_rsp_unhex(reply(g), g->rx->len, v, sizeof(v)) >= (long)m->size)
				bk_regs_set(&g->regs, m->dwarf, le(v, m->size));
		}
	}
	for (unsigned k = 0; k < npre; k++) {
		if ((r = recv_packet(g, false, now_ms() + g->timeout_ms)))
			return r;
		fill_block(g, pre[k]);
	}
	const struct arch_info *ai = arch_get(g->base.arch);
	uint64_t v;
	if (!bk_regs_get(&g->regs, ai->sp_reg, &v) || !bk_regs_get(&g->regs, ai->pc_reg, &v))
		return lose(g, "the stub's registers hold no SP or PC");
	g->last_sp = g->regs.val[ai->sp_reg];
	g->regs_valid = true;
	if (trace_on)
		fprintf(stderr, "rsp: pc %llx sp %llx\n", (unsigned long long)cur_pc(g),
			(unsigned long long)g->regs.val[ai->sp_reg]);
	return 0;
}


/* ---- Memory ------------------------------------------------------------------- */

static void drop_blocks(struct gr *g, bool all)
{
	for (unsigned i = 0; i < NBLOCKS; i++)
		if (all || !g->blocks[i].stable)
			g->blocks[i].valid = false;
}

static bool is_stable(const struct gr *g, uint64_t addr)
{
	for (size_t i = 0; i < g->nstable; i++)
		if (addr >= g->stable[i].start && addr + BLOCK <= g->stable[i].end)
			return true;
	return false;
}

/* The cache block holding ADDR, read if needed; NULL when the stub failed. */
static struct block *slot_of(struct gr *g, uint64_t b, uint8_t **data)
{
	unsigned i = (unsigned)((b / BLOCK) * 0x9e3779b1u) % NBLOCKS;
	*data = g->block_data[i];
	return &g->blocks[i];
}

/* The reply in hand is block B's: keep it when it is whole. */
static void fill_block(struct gr *g, uint64_t b)
{
	uint8_t *data;
	struct block *blk = slot_of(g, b, &data);
	long n = is_error(g) ? 0 : val_rsp_unhex(reply(g), g->rx->len, data, BLOCK);
	if (n != BLOCK && n != 0) {
		blk->valid = false; /* partial: block_at reads it in pieces */
		return;
	}
	blk->addr = b;
	blk->valid = true;
	blk->len = (uint16_t)n;
	blk->stable = is_stable(g, b);
}

static struct block *block_at(struct gr *g, uint64_t addr, uint8_t **data)
{
	uint64_t b = addr & ~(uint64_t)(BLOCK - 1);
	struct block *blk = slot_of(g, b, data);
	if (blk->valid && blk->addr == b)
		return blk;
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "m%llx,%x", (unsigned long long)b, BLOCK);
	if (command(g, cmd))
		return NULL;
	blk->addr = b;
	blk->valid = true;
	blk->stable = is_stable(g, b);
	long n = is_error(g) ? 0 : val_rsp_unhex(reply(g), g->rx->len, *data, BLOCK);
	blk->len = (uint16_t)(n < 0 ? 0 : n);
	if (blk->len < BLOCK && blk->len) {
		/* A short answer: a stub that limits m; the rest in pieces. */
		uint16_t have = blk->len;
		while (have < BLOCK) {
			snprintf(cmd, sizeof(cmd), "m%llx,%x", (unsigned long long)(b + have),
				 BLOCK - have);
			if (command(g, cmd))
				return NULL;
			n = is_error(g) ? 0 : val_rsp_unhex(reply(g), g->rx->len, *data + have,
							     BLOCK - have);
			if (n <= 0)
				break;
			have = (uint16_t)(have + n);
		}
		blk->len = have;
	}
	return blk;
}

static size_t gr_read(struct val_driver *d, uint64_t addr, void *dst, size_t len)
{
	struct gr *g = gr_of(d);
	size_t done = 0;
	if (g->gone)
		return 0;
	while (done < len) {
		uint64_t a = addr + done;
		if (a < addr)
			break;
		uint8_t *data;
		struct block *blk = block_at(g, a, &data);
		if (!blk)
			break;
		size_t off = (size_t)(a - blk->addr);
		if (off >= blk->len)
			break;
		size_t n = blk->len - off;
		if (n > len - done)
			n = len - done;
		memcpy((uint8_t *)dst + done, data + off, n);
		done += n;
	}
	return done;
}

static int space_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	return gr_read(ctx, addr, dst, len) == len ? 0 : BK_E_MEMORY;
}

/* ---- Files and modules ---------------------------------------------------------- */

struct elfinfo {
	uint16_t machine, type;
	uint64_t entry;
	uint64_t min_vaddr, max_vaddr; /* PT_LOAD span */
	uint64_t dynamic;              /* PT_DYNAMIC's vaddr, or 0 */
	char interp[512];
	struct { uint64_t start, end; } ro[8];
	unsigned nro;
};

static int read_elf(const char *path, struct elfinfo *ei)
{
	memset(ei, 0, sizeof(*ei));
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return BK_E_IO;
	Elf64_Ehdr eh;
	int err = BK_E_NOT_ELF;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256)
		goto out;
	ei->machine = eh.e_machine;
	ei->type = eh.e_type;
	ei->entry = eh.e_entry;
	bool have = false;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph)) {
			err = BK_E_CORRUPT;
			goto out;
		}
		if (ph.p_type == PT_LOAD) {
			uint64_t lo = ph.p_vaddr & ~(uint64_t)4095, hi = ph.p_vaddr + ph.p_memsz;
			if (!have || lo < ei->min_vaddr)
				ei->min_vaddr = lo;
			if (!have || hi > ei->max_vaddr)
				ei->max_vaddr = hi;
			have = true;
			if (!(ph.p_flags & PF_W) && ei->nro < 8) {
				/* to the end of its last page: the mapping's, read-only too */
				ei->ro[ei->nro].start = lo;
				ei->ro[ei->nro++].end = (ph.p_vaddr + ph.p_filesz + 4095) & ~(uint64_t)4095;
			}
		} else if (ph.p_type == PT_DYNAMIC) {
			ei->dynamic = ph.p_vaddr;
		} else if (ph.p_type == PT_INTERP && ph.p_filesz < sizeof(ei->interp)) {
			if (pread(fd, ei->interp, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz)
				ei->interp[0] = 0;
			ei->interp[sizeof(ei->interp) - 1] = 0;
		}
	}
	err = have ? 0 : BK_E_CORRUPT;
out:
	close(fd);
	return err;
}

/* The local file for the program's path NAME: under the sysroot first. */
static void local_path(const struct gr *g, const char *name, char *out, size_t len)
{
	struct stat st;
	if (g->sysroot[0] && name[0] == '/') {
		snprintf(out, len, "%s%s", g->sysroot, name);
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode))
			return;
	}
	snprintf(out, len, "%s", name);
}

static bool have_module(const struct gr *g, uint64_t bias, const char *path)
{
	for (size_t i = 0; i < g->nmods; i++)
		if (g->mods[i].bias == bias && !strcmp(g->mods[i].path, path))
			return true;
	return false;
}

/* Add the module NAME (the program's path for it) loaded with BIAS. */
static int add_module(struct gr *g, const char *name, uint64_t bias, size_t *added)
{
	char path[4096];
	struct elfinfo ei;
	if (!name[0])
		return 0;
	local_path(g, name, path, sizeof(path));
	if (have_module(g, bias, path) || g->nmods >= MAX_MODS)
		return 0;
	if (read_elf(path, &ei) != 0)
		return 0; /* no such file here: its frames have no CFI */
	struct bk_module_desc md = {
		.size = sizeof(md),
		.path = path,
		.base = ei.min_vaddr + bias,
		.start = ei.min_vaddr + bias,
		.end = ei.max_vaddr + bias,
	};
	if (md.end <= md.start || bk_space_add_module(g->space, &md) != 0)
		return 0;
	struct mod *m = &g->mods[g->nmods];
	m->path = base_strdup(path);
	if (!m->path)
		return BK_E_NOMEM;
	m->start = md.start;
	m->end = md.end;
	m->bias = bias;
	g->nmods++;
	for (unsigned i = 0; i < ei.nro && g->nstable < MAX_STABLE; i++) {
		g->stable[g->nstable].start = ei.ro[i].start + bias;
		g->stable[g->nstable++].end = ei.ro[i].end + bias;
	}
	if (added)
		++*added;
	return 0;
}

static uint64_t rd64(struct gr *g, uint64_t addr, bool *ok)
{
	uint8_t b[8];
	if (gr_read(&g->base, addr, b, 8) != 8) {
		*ok = false;
		return 0;
	}
	return le(b, 8);
}

struct svr4_ctx {
	struct gr *g;
	size_t *added;
	int err;
};

static void on_library(void *ctx, const char *name, uint64_t lm, uint64_t l_addr, uint64_t l_ld)
{
	struct svr4_ctx *c = ctx;
	(void)lm;
	(void)l_ld;
	if (!c->err)
		c->err = add_module(c->g, name, l_addr, c->added);
}

/* r_debug's address, from the executable's DT_DEBUG, or 0. */
static uint64_t r_debug_addr(struct gr *g)
{
	struct elfinfo ei;
	if (read_elf(g->exe, &ei) != 0 || !ei.dynamic)
		return 0;
	uint64_t bias = g->at_entry - g->e_entry, dyn = ei.dynamic + bias;
	for (unsigned i = 0; i < 512; i++) {
		bool ok = true;
		uint64_t tag = rd64(g, dyn + 16 * i, &ok), val = rd64(g, dyn + 16 * i + 8, &ok);
		if (!ok || tag == DT_NULL)
			break;
		if (tag == DT_DEBUG)
			return val;
	}
	return 0;
}

/* The libraries: the stub's svr4 list, else the dynamic linker's. */
static int read_libraries(struct gr *g, size_t *added)
{
	if (g->xfer_svr4) {
		char *xml;
		size_t len;
		if (xfer(g, "libraries-svr4", "", &xml, &len, 4u << 20) == 0) {
			uint64_t main_lm;
			struct svr4_ctx c = { g, added, 0 };
			int err = val_rsp_svr4_parse(xml, len, &main_lm, on_library, &c);
			base_free(xml);
			if (!err)
				goto r_brk;
		}
		if (g->lost[0])
			return BK_E_IO;
	}
	uint64_t rd = r_debug_addr(g);
	if (!rd)
		return 0; /* static, or the linker has not started its list */
	bool ok = true;
	uint64_t lm = rd64(g, rd + 8, &ok);
	for (unsigned n = 0; ok && lm && n < MAX_LINK_MAPS; n++) {
		uint64_t l_addr = rd64(g, lm, &ok), l_name = rd64(g, lm + 8, &ok);
		uint64_t next = rd64(g, lm + 24, &ok);
		char name[4096];
		size_t got = l_name && ok ? gr_read(&g->base, l_name, name, sizeof(name) - 1) : 0;
		name[got] = 0;
		if (ok && name[0] && strlen(name) < got + 1) {
			int err = add_module(g, name, l_addr, added);
			if (err)
				return err;
		}
		if (next == lm)
			break;
		lm = next;
	}
r_brk:
	if (!g->r_brk && (rd = r_debug_addr(g))) {
		ok = true;
		g->r_brk = rd64(g, rd + 16, &ok);
		if (!ok)
			g->r_brk = 0;
	}
	return 0;
}

/* ---- Breakpoints -------------------------------------------------------------------- */

static size_t bp_index(const struct gr *g, uint64_t addr)
{
	size_t lo = 0, hi = g->nbps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (g->bps[mid] < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool bp_at(const struct gr *g, uint64_t addr)
{
	size_t i = bp_index(g, addr);
	return (i < g->nbps && g->bps[i] == addr) || (g->r_brk_set && addr == g->r_brk);
}

static int z_packet(struct gr *g, char z, uint64_t addr)
{
	char cmd[64];
	snprintf(cmd, sizeof(cmd), "%c0,%llx,%x", z, (unsigned long long)addr, g->bp_kind);
	int r = command(g, cmd);
	if (r)
		return r;
	if (g->rx->len == 0)
		return BK_E_UNSUPPORTED;
	return strcmp(reply(g), "OK") ? BK_E_MEMORY : 0;
}

static int gr_insert_bp(struct val_driver *d, uint64_t addr)
{
	struct gr *g = gr_of(d);
	size_t i = bp_index(g, addr);
	if (i < g->nbps && g->bps[i] == addr)
		return 0;
	if (g->nbps >= MAX_BPS)
		return BK_E_LIMIT;
	if (!(g->r_brk_set && addr == g->r_brk)) {
		int r = z_packet(g, 'Z', addr);
		if (r)
			return r;
	} else {
		g->r_brk_checker = true;
	}
	if (g->nbps == g->capbps) {
		size_t ncap = g->capbps ? g->capbps * 2 : 256;
		void *p = base_realloc(g->bps, ncap * sizeof(*g->bps));
		if (!p)
			return BK_E_NOMEM;
		g->bps = p;
		g->capbps = ncap;
	}
	memmove(g->bps + i + 1, g->bps + i, (g->nbps - i) * sizeof(*g->bps));
	g->bps[i] = addr;
	g->nbps++;
	return 0;
}

static void gr_remove_bp(struct val_driver *d, uint64_t addr, bool restore)
{
	struct gr *g = gr_of(d);
	(void)restore; /* the stub keeps the original bytes itself */
	size_t i = bp_index(g, addr);
	if (i >= g->nbps || g->bps[i] != addr)
		return;
	memmove(g->bps + i, g->bps + i + 1, (g->nbps - i - 1) * sizeof(*g->bps));
	g->nbps--;
	if (g->r_brk_set && addr == g->r_brk)
		g->r_brk_checker = false;
	else if (!g->gone)
		z_packet(g, 'z', addr);
}

/* ---- Running -------------------------------------------------------------------------- */

static int send_resume(struct gr *g, bool step, int sig)
{
	char cmd[96];
	int gs = sig ? val_rsp_linux_to_gdb_sig(sig) : 0;
	if (g->vcont) {
		if (gs)
			snprintf(cmd, sizeof(cmd), "vCont;%c%02x:%s", step ? 'S' : 'C', gs, g->thread);
		else
			snprintf(cmd, sizeof(cmd), "vCont;%c:%s", step ? 's' : 'c', g->thread);
	} else if (gs) {
		snprintf(cmd, sizeof(cmd), "%c%02x", step ? 'S' : 'C', gs);
	} else {
		snprintf(cmd, sizeof(cmd), "%c", step ? 's' : 'c');
	}
	g->regs_valid = false;
	drop_blocks(g, false);
	int r = send_cmd(g, cmd);
	if (!r)
		g->running = true;
	return r;
}

/* The stop reply of a resume, console output skipped. 1: interrupted. */
static int read_stop(struct gr *g, struct val_rsp_stop *st, bool interruptible)
{
	double deadline = now_ms() + g->timeout_ms;
	for (;;) {
		int r = recv_packet(g, interruptible, deadline);
		if (r)
			return r;
		if (val_rsp_parse_stop(reply(g), g->rx->len, st) != 0)
			return lose(g, "the stub's answer to a resume is no stop reply: '%.40s'", reply(g));
		if (st->kind != 'O')
			break;
	}
	g->running = false;
	if (st->have_thread && st->kind == 'T') {
		uint64_t tid = st->tid;
		if (g->thread[0] && ((st->pid && st->pid != g->pid) ||
				     (tid != (uint64_t)g->tid && !(g->tid == 1 && tid == 0))))
			return lose(g, "the program runs a second thread (%llx): the remote driver "
				       "follows one thread only",
				    (unsigned long long)tid);
	}
	return 0;
}

/* Is the instruction at PC a system call? Then *BACK is where it returns:
 * the next instruction, or for rt_sigreturn the PC in the signal frame at
 * SP (src/arch's layout: the trampoline runs with SP ucontext_off below
 * the ucontext). */
static bool syscall_target(struct gr *g, uint64_t pc, uint64_t *back)
{
	const struct val_arch *va = val_arch_get(g->base.arch);
	const struct arch_info *ai = arch_get(g->base.arch);
	uint8_t code[4];
	uint64_t nr, sp;
	if (!va || !va->syscall_len ||
	    gr_read(&g->base, pc, code, va->syscall_len) != va->syscall_len ||
	    memcmp(code, va->syscall_insn, va->syscall_len) ||
	    !bk_regs_get(&g->regs, ai->slot_regno[va->nr_reg], &nr) ||
	    !bk_regs_get(&g->regs, ai->sp_reg, &sp))
		return false;
	if (nr != va->nr_rt_sigreturn) {
		*back = pc + va->syscall_len;
		return true;
	}
	const struct arch_sigframe *sf = &ai->sigframe;
	for (unsigned i = 0; i < sf->nregs; i++) {
		if (sf->reg[i].regno != ai->pc_reg)
			continue;
		uint8_t b[8];
		uint64_t at = sp + sf->ucontext_off + sf->gregs_off + sf->reg[i].off;
		if (gr_read(&g->base, at, b, 8) != 8)
			return false;
		*back = le(b, 8);
		return *back != 0;
	}
	return false;
}

static int gr_resume(struct val_driver *d, int tid, enum val_resume how, int sig)
{
	struct gr *g = gr_of(d);
	(void)tid;
	if (g->gone)
		return BK_E_NOT_FOUND;
	g->how = how;
	int r = fetch_regs(g);
	if (r)
		return r;
	uint64_t pc = cur_pc(g);
	uint64_t back;
	if (how == VAL_RESUME_STEP && !sig && syscall_target(g, pc, &back)) {
		/* A step over a system call: qemu-user's runs the instruction
		 * after it too (after rt_sigreturn: the first one where it
		 * returns), a `ret` or a `bl` the checker would not see. So
		 * it runs to a breakpoint where the call returns (for
		 * rt_sigreturn, where the signal frame says); the stop there
		 * is the step's. A signal or an exit on the way is reported
		 * as it comes. */
		if (!bp_at(g, back)) {
			if ((r = z_packet(g, 'Z', back)) == 0) {
				g->temp_bp = back;
				g->have_temp = true;
			} else if (r != BK_E_MEMORY && r != BK_E_UNSUPPORTED) {
				return r;
			}
		}
		if ((g->have_temp || bp_at(g, back)) && !bp_at(g, pc))
			return send_resume(g, false, 0);
		if (g->have_temp) {
			g->have_temp = false;
			if ((r = z_packet(g, 'z', back)) < 0 && r != BK_E_MEMORY)
				return r;
		}
	}
	if (how == VAL_RESUME_STEP && sig) {
		/* A step that delivers a signal must stop at the handler's
		 * first instruction, not yet run; qemu-user's gdbstub runs it
		 * before it stops. So the signal goes with a continue: the
		 * thread stops at the handler's entry breakpoint (the checker
		 * has one on every function of the checked code), or, when the
		 * handler is elsewhere or the signal is ignored, back here at
		 * a breakpoint of ours; either stop is the step's. */
		if (!bp_at(g, pc)) {
			if ((r = z_packet(g, 'Z', pc)) == 0) {
				g->temp_bp = pc;
				g->have_temp = true;
			} else if (r != BK_E_MEMORY && r != BK_E_UNSUPPORTED) {
				return r;
			}
		}
		if (g->have_temp || bp_at(g, pc)) {
			g->sig_step = sig;
			g->sig_step_pc = pc;
			return send_resume(g, false, sig);
		}
	}
	if (bp_at(g, pc)) {
		/* Step off our breakpoint with it lifted. */
		if ((r = z_packet(g, 'z', pc)) < 0 && r != BK_E_MEMORY)
			return r;
		if ((r = send_resume(g, true, sig)))
			return r;
		struct val_rsp_stop st;
		if ((r = read_stop(g, &st, false)))
			return r;
		if (!(st.kind == 'W' || st.kind == 'X') && (r = z_packet(g, 'Z', pc)) < 0 &&
		    r != BK_E_MEMORY)
			return r;
		if (how == VAL_RESUME_STEP || st.kind != 'T' ||
		    val_rsp_gdb_to_linux_sig(st.sig) != SIGTRAP) {
			g->pending = st;
			g->have_pending = true;
			return 0;
		}
		sig = 0; /* delivered with the step */
	}
	return send_resume(g, how == VAL_RESUME_STEP, sig);
}

static int gr_interrupt(struct val_driver *d, int tid)
{
	struct gr *g = gr_of(d);
	(void)tid;
	if (g->gone || !g->running)
		return BK_E_NOT_FOUND;
	return send_all(g, "\x03", 1) ? BK_E_NOT_FOUND : 0;
}

static void exited_event(struct gr *g, struct val_event *ev, int status)
{
	g->gone = true;
	g->running = false;
	*ev = (struct val_event){ .kind = VAL_EV_EXITED, .tid = g->tid, .program = true,
				  .status = status };
}

static void gr_kill(struct val_driver *d)
{
	struct gr *g = gr_of(d);
	if (g->gone)
		return;
	char cmd[64];
	if (g->multiprocess && g->pid)
		snprintf(cmd, sizeof(cmd), "vKill;%llx", (unsigned long long)g->pid);
	else
		snprintf(cmd, sizeof(cmd), "k");
	if (g->running)
		send_all(g, "\x03", 1);
	send_cmd(g, cmd);
	g->gone = true;
	g->have_pending = false;
	g->ev = (struct val_event){ .kind = VAL_EV_EXITED, .tid = g->tid, .program = true,
				    .status = SIGKILL };
}

static int gr_wait(struct val_driver *d, struct val_event *ev)
{
	struct gr *g = gr_of(d);
	if (!g->exec_told) {
		g->exec_told = true;
		*ev = (struct val_event){ .kind = VAL_EV_EXEC, .tid = g->tid, .entry = g->at_entry,
					  .exe = g->exe };
		return 1;
	}
	if (g->gone) {
		if (g->ev.kind != VAL_EV_EXITED)
			return 0;
		*ev = g->ev;
		g->ev.kind = VAL_EV_NONE;
		return 1;
	}
	for (;;) {
		struct val_rsp_stop st;
		if (g->have_pending) {
			st = g->pending;
			g->have_pending = false;
		} else if (g->running) {
			int r = read_stop(g, &st, true);
			if (r < 0)
				return r;
			if (r == 1) {
				*ev = (struct val_event){ .kind = VAL_EV_NONE, .tid = g->tid };
				return 1;
			}
		} else {
			return lose(g, "internal: waiting while nothing runs");
		}
		if (g->have_temp) {
			g->have_temp = false;
			if (st.kind == 'T') {
				int r = z_packet(g, 'z', g->temp_bp);
				if (r && r != BK_E_MEMORY)
					return r;
			}
		}
		if (st.kind == 'W') {
			exited_event(g, ev, (st.code & 0xff) << 8);
			return 1;
		}
		if (st.kind == 'X') {
			int s = val_rsp_gdb_to_linux_sig(st.sig);
			exited_event(g, ev, s ? s : SIGKILL);
			return 1;
		}
		int sig = val_rsp_gdb_to_linux_sig(st.sig);
		*ev = (struct val_event){ .tid = g->tid };
		int delivered = g->sig_step;
		g->sig_step = 0;
		if (sig == SIGTRAP && g->how == VAL_RESUME_STEP && delivered) {
			/* The step that delivered a signal stops at the handler's
			 * entry (its first argument the signal number) or back
			 * where it was; anywhere else the thread ran on unseen
			 * (the stub delivered the signal later than reported, or
			 * a handler outside the checked code called into it). */
			const struct val_arch *va = val_arch_get(g->base.arch);
			uint64_t arg = 0;
			int r = fetch_regs(g);
			if (r)
				return r;
			bk_regs_get(&g->regs, arch_get(g->base.arch)->slot_regno[va->sig_reg], &arg);
			if (cur_pc(g) != g->sig_step_pc && arg != (uint64_t)delivered)
				return lose(g, "could not follow the delivery of signal %d (reported at "
					       "0x%llx, stopped at 0x%llx, not in its handler)",
					    delivered, (unsigned long long)g->sig_step_pc,
					    (unsigned long long)cur_pc(g));
		}
		if (sig == SIGTRAP && g->how == VAL_RESUME_STEP) {
			ev->kind = VAL_EV_STEPPED;
			return 1;
		}
		if (sig == SIGTRAP || sig == 0) {
			int r = fetch_regs(g);
			if (r)
				return r;
			uint64_t pc = cur_pc(g);
			size_t i = bp_index(g, pc);
			bool checker_bp = i < g->nbps && g->bps[i] == pc;
			if (checker_bp) {
				ev->kind = VAL_EV_BREAKPOINT;
				ev->addr = pc;
				return 1;
			}
			if (g->r_brk_set && pc == g->r_brk) {
				/* The dynamic linker's list changed. */
				if (g->how == VAL_RESUME_SYSCALLS) {
					ev->kind = VAL_EV_SYSCALL;
					ev->nr = val_arch_get(g->base.arch)->nr_mmap;
					ev->exit = true;
					return 1;
				}
				if ((r = gr_resume(d, g->tid, g->how, 0)))
					return r;
				continue;
			}
			if (sig == 0) {
				ev->kind = VAL_EV_STOPPED; /* our interrupt */
				return 1;
			}
		}
		if (sig == SIGINT && !g->running) {
			/* The \x03 of an interrupt: qemu and gdbserver say SIGINT. */
			ev->kind = VAL_EV_STOPPED;
			return 1;
		}
		ev->kind = VAL_EV_SIGNAL;
		ev->sig = sig ? sig : SIGTRAP;
		return 1;
	}
}

static int gr_regs(struct val_driver *d, int tid, struct bk_regs *out)
{
	struct gr *g = gr_of(d);
	(void)tid;
	if (g->gone)
		return BK_E_NOT_FOUND;
	int r = fetch_regs(g);
	if (r)
		return r;
	*out = g->regs;
	return 0;
}

static bool gr_catches(struct val_driver *d, int sig)
{
	(void)d;
	(void)sig;
	return true; /* a stub cannot tell */
}

static int gr_space_open(struct val_driver *d, int tid, struct bk_space **out)
{
	struct gr *g = gr_of(d);
	(void)tid;
	if (!g->space) {
		struct bk_target_ops ops = { .size = sizeof(ops), .read_mem = space_read };
		int err = bk_space_create(g->base.arch, &ops, g, &g->space);
		if (err)
			return err;
		/* The executable, then the dynamic linker, then the rest. */
		add_module(g, g->exe, g->at_entry - g->e_entry, NULL);
		struct elfinfo ei;
		if (g->at_base && read_elf(g->exe, &ei) == 0 && ei.interp[0])
			add_module(g, ei.interp, g->at_base, NULL);
		err = read_libraries(g, NULL);
		if (err)
			return err;
		drop_blocks(g, true); /* read before the stable ranges were known */
	}
	if (g->r_brk && !g->r_brk_set && z_packet(g, 'Z', g->r_brk) == 0)
		g->r_brk_set = true;
	*out = g->space;
	return 0;
}

static int gr_space_refresh(struct val_driver *d, size_t *added)
{
	struct gr *g = gr_of(d);
	*added = 0;
	if (!g->space)
		return 0;
	return read_libraries(g, added);
}

/* Nothing to forget: the blocks that are not read-only are dropped when
 * the program is resumed (gr_resume), and a stopped program writes no
 * memory. (Dropping them here too threw away the stack blocks fetch_regs
 * had just read with the registers: two round trips more per step.) */
static void gr_space_invalidate(struct val_driver *d)
{
	(void)d;
}

/* ---- Start and close --------------------------------------------------------------------- */

static void gr_close(struct val_driver *d)
{
	struct gr *g = gr_of(d);
	if (!g)
		return;
	if (g->fd >= 0) {
		if (!g->gone && !g->lost[0])
			gr_kill(d);
		close(g->fd);
	}
	if (g->qemu > 0) {
		int status;
		for (int i = 0; i < 200 && waitpid(g->qemu, &status, WNOHANG) == 0; i++) {
			if (i == 50)
				kill(g->qemu, SIGKILL);
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	bk_space_destroy(g->space);
	for (size_t i = 0; i < g->nmods; i++)
		base_free(g->mods[i].path);
	base_free(g->bps);
	base_free(g->blocks);
	base_free(g->block_data);
	base_free(g->rx);
	base_free(g);
}

static int connect_to(struct gr *g, const char *host, const char *port, double deadline,
		      char *why, size_t whylen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	int e = getaddrinfo(host, port, &hints, &ai);
	if (e) {
		snprintf(why, whylen, "%s: %s", g->where, gai_strerror(e));
		return BK_E_INVAL;
	}
	int last = 0;
	for (;;) {
		for (struct addrinfo *a = ai; a; a = a->ai_next) {
			int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
					a->ai_protocol);
			if (fd < 0)
				continue;
			if (connect(fd, a->ai_addr, a->ai_addrlen) == 0 || errno == EINPROGRESS) {
				struct pollfd p = { .fd = fd, .events = POLLOUT };
				int soerr = 0;
				socklen_t sl = sizeof(soerr);
				if (poll(&p, 1, 2000) == 1 &&
				    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && !soerr) {
					int one = 1;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					g->fd = fd;
					freeaddrinfo(ai);
					return 0;
				}
				last = soerr ? soerr : ETIMEDOUT;
			} else {
				last = errno;
			}
			close(fd);
		}
		int status;
		if (g->qemu > 0 && waitpid(g->qemu, &status, WNOHANG) == g->qemu) {
			g->qemu = 0;
			snprintf(why, whylen, "%s exited before it listened (status %d)", g->where,
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
			freeaddrinfo(ai);
			return BK_E_IO;
		}
		if (now_ms() > deadline)
			break;
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	freeaddrinfo(ai);
	snprintf(why, whylen, "%s: cannot connect (%s)", g->where, strerror(last));
	return BK_E_IO;
}

/* A free TCP port on the loopback interface (the kernel's pick). */
static int free_port(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &sl) == 0)
		port = ntohs(sa.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* PROG as a path: itself when it has a '/', else searched in PATH. */
static bool find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return access(out, F_OK) == 0;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/bin:/bin";
	for (const char *p = path; *p;) {
		const char *c = strchr(p, ':');
		size_t n = c ? (size_t)(c - p) : strlen(p);
		snprintf(out, len, "%.*s/%s", (int)n, n ? p : ".", prog);
		if (access(out, X_OK) == 0)
			return true;
		p += n + (c ? 1 : 0);
	}
	return false;
}

static int start_qemu(struct gr *g, char *const *argv, const struct val_driver_opts *o,
		      uint16_t machine, char *port, char *why, size_t whylen)
{
	const char *qemu = machine == EM_AARCH64 ? "qemu-aarch64" : machine == EM_X86_64 ? "qemu-x86_64" : NULL;
	if (!qemu) {
		snprintf(why, whylen, "%s: no qemu-user for this machine (%u)", g->exe, machine);
		return BK_E_UNSUPPORTED;
	}
	char qpath[4096];
	if (!find_program(qemu, qpath, sizeof(qpath))) {
		snprintf(why, whylen, "%s not found in PATH (Debian: qemu-user)", qemu);
		return BK_E_IO;
	}
	int p = free_port();
	if (p < 0) {
		snprintf(why, whylen, "no free TCP port for %s", qemu);
		return BK_E_IO;
	}
	snprintf(port, 16, "%d", p);
	size_t argc = 0;
	while (argv[argc])
		argc++;
	char **qargv = base_calloc(argc + 10, sizeof(*qargv));
	if (!qargv)
		return BK_E_NOMEM;
	size_t k = 0;
	qargv[k++] = qpath;
	if (o->qemu_cpu) {
		qargv[k++] = (char *)"-cpu";
		qargv[k++] = (char *)o->qemu_cpu;
	}
	if (g->sysroot[0]) {
		qargv[k++] = (char *)"-L";
		qargv[k++] = g->sysroot;
	}
	qargv[k++] = (char *)"-g";
	qargv[k++] = port;
	qargv[k++] = g->exe;
	for (size_t i = 1; i < argc; i++)
		qargv[k++] = argv[i];
	qargv[k] = NULL;
	pid_t pid = fork();
	if (pid < 0) {
		base_free(qargv);
		snprintf(why, whylen, "cannot start %s: %s", qemu, strerror(errno));
		return BK_E_IO;
	}
	if (pid == 0) {
		execv(qpath, qargv);
		_exit(127);
	}
	base_free(qargv);
	g->qemu = pid;
	snprintf(g->where, sizeof(g->where), "%s (gdbstub on port %s)", qemu, port);
	return 0;
}

static bool feature(const char *list, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = list; (p = strstr(p, name)); p += n)
		if ((p == list || p[-1] == ';') && (p[n] == ';' || p[n] == 0 || p[n] == '='))
			return true;
	return false;
}

static int handshake(struct gr *g, char *why, size_t whylen)
{
	int r = command(g, "qSupported:multiprocess+;swbreak+;vContSupported+");
	if (r)
		goto fail;
	const char *f = reply(g);
	const char *ps = strstr(f, "PacketSize=");
	g->pkt_max = 1024;
	if (ps) {
		uint64_t v;
		const char *s = ps + 11;
		if (val_rsp_hexnum(&s, f + g->rx->len, &v) && v >= 64)
			g->pkt_max = v > VAL_RSP_MAX ? VAL_RSP_MAX : (size_t)v;
	}
	g->multiprocess = feature(f, "multiprocess+");
	g->xfer_features = feature(f, "qXfer:features:read+");
	g->xfer_auxv = feature(f, "qXfer:auxv:read+");
	g->xfer_svr4 = feature(f, "qXfer:libraries-svr4:read+");
	g->xfer_exec = feature(f, "qXfer:exec-file:read+");
	if (feature(f, "QStartNoAckMode+")) {
		if ((r = command(g, "QStartNoAckMode")))
			goto fail;
		g->noack = !strcmp(reply(g), "OK");
	}
	if ((r = command(g, "vCont?")))
		goto fail;
	g->vcont = !strncmp(reply(g), "vCont", 5) && strstr(reply(g), ";s") && strstr(reply(g), ";c");
	if ((r = command(g, "?")))
		goto fail;
	struct val_rsp_stop st;
	if (val_rsp_parse_stop(reply(g), g->rx->len, &st) != 0 || st.kind != 'T') {
		snprintf(why, whylen, "%s: the program is not stopped ('?': '%.40s')", g->where,
			 reply(g));
		return BK_E_IO;
	}
	if (st.have_thread) {
		g->pid = st.pid;
		g->tid = (int)(st.tid ? st.tid : 1);
		if (st.pid)
			snprintf(g->thread, sizeof(g->thread), "p%llx.%llx", (unsigned long long)st.pid,
				 (unsigned long long)st.tid);
		else
			snprintf(g->thread, sizeof(g->thread), "%llx", (unsigned long long)st.tid);
	} else {
		g->tid = 1;
		snprintf(g->thread, sizeof(g->thread), "-1");
	}
	if (g->pid)
		g->tid = (int)(st.tid ? st.tid : g->pid);
	return 0;
fail:
	snprintf(why, whylen, "%s", g->lost[0] ? g->lost : "the stub failed");
	return r;
}

static int read_auxv(struct gr *g)
{
	char *buf;
	size_t len;
	if (!g->xfer_auxv || xfer(g, "auxv", "", &buf, &len, 1u << 16) != 0)
		return g->lost[0] ? BK_E_IO : BK_E_NOT_FOUND;
	for (size_t i = 0; i + 16 <= len; i += 16) {
		uint64_t type = le((const uint8_t *)buf + i, 8), val = le((const uint8_t *)buf + i + 8, 8);
		if (type == AT_NULL)
			break;
		if (type == AT_ENTRY)
			g->at_entry = val;
		else if (type == AT_PHDR)
			g->at_phdr = val;
		else if (type == AT_BASE)
			g->at_base = val;
	}
	base_free(buf);
	g->have_auxv = g->at_entry != 0;
	return g->have_auxv ? 0 : BK_E_NOT_FOUND;
}

static int gr_start(char *const *argv, const struct val_driver_opts *o, struct val_driver **out,
		    char *why, size_t whylen)
{
	struct gr *g = base_calloc(1, sizeof(*g));
	if (!g) {
		snprintf(why, whylen, "out of memory");
		return BK_E_NOMEM;
	}
	g->base.ops = &val_gdbremote_driver;
	g->fd = -1;
	trace_on = getenv("BACKSTEP_RSP_TRACE") != NULL;
	g->timeout_ms = o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
	g->rx = base_alloc(sizeof(*g->rx));
	g->blocks = base_calloc(NBLOCKS, sizeof(*g->blocks));
	g->block_data = base_alloc(NBLOCKS * BLOCK);
	int err = BK_E_NOMEM;
	if (!g->rx || !g->blocks || !g->block_data) {
		snprintf(why, whylen, "out of memory");
		goto fail;
	}
	val_rsp_init(g->rx);
	struct elfinfo ei = { 0 };
	bool have_exe = argv && argv[0];
	if (have_exe) {
		if (!find_program(argv[0], g->exe, sizeof(g->exe))) {
			snprintf(why, whylen, "%s: no such program", argv[0]);
			err = BK_E_IO;
			goto fail;
		}
		if ((err = read_elf(g->exe, &ei))) {
			snprintf(why, whylen, "%s: %s", g->exe,
				 err == BK_E_IO ? "cannot be read" : "not a 64-bit little-endian ELF program");
			goto fail;
		}
	} else if (o->qemu) {
		snprintf(why, whylen, "--qemu needs the program to run");
		err = BK_E_INVAL;
		goto fail;
	}
	if (o->sysroot)
		snprintf(g->sysroot, sizeof(g->sysroot), "%s", o->sysroot);
	else if (have_exe && ei.machine == EM_AARCH64)
		snprintf(g->sysroot, sizeof(g->sysroot), "/usr/aarch64-linux-gnu");
	size_t sl = strlen(g->sysroot);
	while (sl > 1 && g->sysroot[sl - 1] == '/')
		g->sysroot[--sl] = 0;

	char host[256], port[16];
	double deadline = now_ms() + CONNECT_TIMEOUT_MS;
	if (o->qemu) {
		snprintf(host, sizeof(host), "127.0.0.1");
		if ((err = start_qemu(g, argv, o, ei.machine, port, why, whylen)))
			goto fail;
	} else if (o->remote) {
		const char *colon = strrchr(o->remote, ':');
		snprintf(g->where, sizeof(g->where), "%s", o->remote);
		if (!colon || !colon[1] || (size_t)(colon - o->remote) >= sizeof(host) ||
		    strlen(colon + 1) >= sizeof(port)) {
			snprintf(why, whylen, "--remote %s: not HOST:PORT", o->remote);
			err = BK_E_INVAL;
			goto fail;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(colon - o->remote), o->remote);
		if (!host[0])
			snprintf(host, sizeof(host), "127.0.0.1");
		if (host[0] == '[' && host[strlen(host) - 1] == ']') {
			memmove(host, host + 1, strlen(host));
			host[strlen(host) - 1] = 0;
		}
		snprintf(port, sizeof(port), "%s", colon + 1);
		deadline = now_ms() + (g->timeout_ms < CONNECT_TIMEOUT_MS ? g->timeout_ms : CONNECT_TIMEOUT_MS);
	} else {
		snprintf(why, whylen, "the remote driver needs --remote HOST:PORT or --qemu");
		err = BK_E_INVAL;
		goto fail;
	}
	if ((err = connect_to(g, host, port, deadline, why, whylen)))
		goto fail;
	if ((err = handshake(g, why, whylen)))
		goto fail;
	if (!have_exe) {
		char *name;
		size_t len;
		if (!g->xfer_exec || xfer(g, "exec-file", "", &name, &len, 4095) != 0) {
			snprintf(why, whylen, "%s: %s", g->where,
				 g->lost[0] ? g->lost : "the stub does not name the program: name it after --");
			err = BK_E_INVAL;
			goto fail;
		}
		local_path(g, name, g->exe, sizeof(g->exe));
		base_free(name);
		if ((err = read_elf(g->exe, &ei))) {
			snprintf(why, whylen, "%s: cannot read the program the stub runs", g->exe);
			goto fail;
		}
	}
	g->e_entry = ei.entry;
	g->base.arch = ei.machine == EM_AARCH64 ? BK_ARCH_AARCH64 : ei.machine == EM_X86_64 ? BK_ARCH_X86_64 : BK_ARCH_UNKNOWN;
	if (g->base.arch == BK_ARCH_UNKNOWN) {
		snprintf(why, whylen, "%s: a machine the validator does not know (%u)", g->exe, ei.machine);
		err = BK_E_UNSUPPORTED;
		goto fail;
	}
	g->bp_kind = g->base.arch == BK_ARCH_AARCH64 ? 4 : 1;
	if ((err = read_auxv(g))) {
		if (err == BK_E_IO || ei.type != ET_EXEC) {
			snprintf(why, whylen, "%s: %s", g->where,
				 g->lost[0] ? g->lost : "the stub gives no auxiliary vector (qXfer:auxv): "
							"cannot tell where a position-independent program is");
			goto fail;
		}
		g->at_entry = ei.entry; /* fixed address: where it is linked */
	}
	if ((err = read_tdesc(g))) {
		snprintf(why, whylen, "%s", g->lost[0] ? g->lost : "cannot read the register layout");
		goto fail;
	}
	if ((err = fetch_regs(g))) {
		snprintf(why, whylen, "%s", g->lost);
		goto fail;
	}
	*out = &g->base;
	return 0;
fail:
	/* Our qemu dies with the run; a stub of someone else's is asked to
	 * kill the program (gr_close) if it still answers. */
	if (g->qemu > 0) {
		kill(g->qemu, SIGKILL);
		g->gone = true;
	} else if (g->fd < 0) {
		g->gone = true;
	}
	gr_close(&g->base);
	return err ? err : BK_E_IO;
}

const struct val_driver_ops val_gdbremote_driver = {
	.size = sizeof(struct val_driver_ops),
	.start = gr_start,
	.close = gr_close,
	.wait = gr_wait,
	.resume = gr_resume,
	.interrupt = gr_interrupt,
	.kill = gr_kill,
	.regs = gr_regs,
	.read = gr_read,
	.insert_bp = gr_insert_bp,
	.remove_bp = gr_remove_bp,
	.catches = gr_catches,
	.space_open = gr_space_open,
	.space_refresh = gr_space_refresh,
	.space_invalidate = gr_space_invalidate,
};
