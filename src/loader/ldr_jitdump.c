/* jitdump files: the code a JIT compiler generated, as it describes it for
 * profilers (Linux perf's jitdump format, tools/perf/Documentation/
 * jitdump-specification.txt: written by V8 with --perf-prof, the JVM's
 * agents, .NET with DOTNET_PerfMapEnabled, LuaJIT, Wasmtime, ...).
 *
 * A 40-byte header (magic "JiTD" as 0x4A695444 little-endian, version,
 * header size, e_machine, pid, timestamp, flags), then records, each a
 * 16-byte prefix (id, total size, timestamp) and its payload:
 *   0 JIT_CODE_LOAD      pid, tid, vma, code_addr, code_size, code_index,
 *                        the name (NUL-terminated), the code bytes
 *   1 JIT_CODE_MOVE      pid, tid, vma, old_code_addr, new_code_addr,
 *                        code_size, code_index
 *   2 JIT_CODE_DEBUG_INFO code_addr, nr_entry, entries {code_addr, line,
 *                        discrim, file name}: for the next load at code_addr
 *   3 JIT_CODE_CLOSE     (nothing)
 *   4 JIT_CODE_UNWINDING_INFO unwinding_size, eh_frame_hdr_size,
 *                        mapped_size, then .eh_frame followed by
 *                        .eh_frame_hdr (unwinding_size bytes in all): for
 *                        the next load
 * The specification says the header comes first in the unwinding data; V8,
 * the one writer of it, puts it last, and perf reads it so (its .eh_frame
 * is the first unwinding_size - eh_frame_hdr_size bytes). Where the bytes
 * were in the JIT's memory decides their pcrel pointers: perf places the
 * .eh_frame at code_addr + code_size rounded up to 8, which is where V8
 * emits it, after the instructions. We take that placement and keep only
 * .eh_frame sections whose FDEs lie inside their code (checked by the
 * caller, which decodes them).
 *
 * The file is read through a callback (a file descriptor, or bytes for the
 * tests and the fuzzer), record by record, so the code bytes, most of a
 * jitdump, are never held: a load keeps their file offset. A JIT appends
 * while we read: a record cut by the end of the file ends the reading
 * (TRUNCATED), as does one whose size cannot be (CORRUPT: the rest could
 * not be framed). Records of kinds not known are skipped by their size.
 *
 * Bounds: LDR_JD_MAX_CODE loads and moves, LDR_JD_MAX_NAME bytes of a name
 * (longer: cut), LDR_JD_MAX_LINES debug entries per record and
 * LDR_JD_MAX_ALL_LINES in all, LDR_JD_MAX_UNWIND bytes of unwinding data.
 * Past a count bound the reading ends (LIMIT set), never an error. Cold.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader.h"

#define JD_MAGIC 0x4A695444u
#define JD_MAGIC_SWAPPED 0x4454694Au
#define JD_HEADER_LEN 40
#define JD_PREFIX_LEN 16

enum { JD_LOAD = 0, JD_MOVE = 1, JD_DEBUG_INFO = 2, JD_CLOSE = 3, JD_UNWINDING_INFO = 4 };

/* Strings and unwinding bytes: chunks of at least ARENA_CHUNK bytes. */
#define ARENA_CHUNK ((size_t)64 << 10)
struct jd_chunk {
	struct jd_chunk *next;
	size_t used, cap;
	uint8_t bytes[];
};

static void *arena_take(struct ldr_jitdump *jd, size_t len)
{
	struct jd_chunk *c = jd->arena;
	size_t need = (len + 7) & ~(size_t)7;
	if (!c || c->cap - c->used < need) {
		size_t cap = need > ARENA_CHUNK ? need : ARENA_CHUNK;
		if (!(c = base_alloc(sizeof(*c) + cap)))
			return NULL;
		c->next = jd->arena;
		c->used = 0;
		c->cap = cap;
		jd->arena = c;
	}
	void *p = c->bytes + c->used;
	c->used += need;
	return p;
}

/* ---- Reading ----------------------------------------------------------- */

struct jd_src {
	const struct ldr_jd_source *src;
	uint64_t off; /* of the record being read */
};

static int rd(const struct ldr_jd_source *s, uint64_t off, void *dst, size_t len)
{
	return s->read(s->ctx, off, dst, len);
}

/* A NUL-terminated string of at most AVAIL bytes at OFF, cut to
 * LDR_JD_MAX_NAME; *LEN its length with the NUL (0: none within AVAIL). */
static int read_string(struct ldr_jitdump *jd, const struct ldr_jd_source *s, uint64_t off,
		       uint64_t avail, const char **out, uint64_t *len)
{
	char buf[512];
	uint64_t n = 0;
	char *str = NULL;
	size_t kept = 0;
	*len = 0;
	while (n < avail) {
		size_t want = avail - n < sizeof(buf) ? (size_t)(avail - n) : sizeof(buf);
		int err = rd(s, off + n, buf, want);
		if (err)
			return err;
		char *nul = memchr(buf, 0, want);
		size_t take = nul ? (size_t)(nul - buf) : want;
		size_t room = LDR_JD_MAX_NAME - 1 - kept;
		size_t copy = take < room ? take : room;
		if (copy) {
			char *grown = arena_take(jd, kept + copy + 1);
			if (!grown)
				return BK_E_NOMEM;
			if (kept)
				memcpy(grown, str, kept);
			memcpy(grown + kept, buf, copy);
			kept += copy;
			grown[kept] = 0;
			str = grown;
		}
		n += take;
		if (nul) {
			*len = n + 1;
			*out = str ? str : "";
			return 0;
		}
	}
	return 0; /* no NUL: *LEN 0 */
}

static struct ldr_jd_code *new_code(struct ldr_jitdump *jd)
{
	if (jd->ncode >= LDR_JD_MAX_CODE) {
		jd->limit = true;
		return NULL;
	}
	struct ldr_jd_code *c = base_grow(jd->code, &jd->capcode, jd->ncode + 1, sizeof(*c), 256);
	if (!c)
		return NULL;
	jd->code = c;
	c = &jd->code[jd->ncode];
	memset(c, 0, sizeof(*c));
	c->seq = (uint32_t)jd->ncode;
	return c;
}

/* The debug entries waiting for the next load at their code_addr. */
struct jd_pending {
	bool debug;
	uint64_t debug_addr;
	uint32_t line0, nlines;
	bool unwind;
	const uint8_t *eh;
	uint32_t eh_len;
};

/* code_index -> the latest entry with it: for moves. Open addressing over
 * a power-of-two table of entry numbers + 1. */
static bool index_put(struct ldr_jitdump *jd, uint64_t index, uint32_t entry);

static uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	return x ^ (x >> 29);
}

static bool index_grow(struct ldr_jitdump *jd)
{
	size_t cap = jd->idxcap ? jd->idxcap * 2 : 1024;
	uint32_t *t = base_calloc(cap, sizeof(*t));
	if (!t)
		return false;
	uint32_t *old = jd->idx;
	size_t oldcap = jd->idxcap;
	jd->idx = t;
	jd->idxcap = cap;
	jd->idxn = 0;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			index_put(jd, jd->code[old[i] - 1].index, old[i] - 1);
	base_free(old);
	return true;
}

static bool index_put(struct ldr_jitdump *jd, uint64_t index, uint32_t entry)
{
	if ((jd->idxn + 1) * 2 > jd->idxcap && !index_grow(jd))
		return false;
	size_t m = jd->idxcap - 1;
	for (size_t j = mix(index) & m;; j = (j + 1) & m) {
		if (!jd->idx[j]) {
			jd->idx[j] = entry + 1;
			jd->idxn++;
			return true;
		}
		if (jd->code[jd->idx[j] - 1].index == index) {
			jd->idx[j] = entry + 1;
			return true;
		}
	}
}

static const struct ldr_jd_code *index_get(const struct ldr_jitdump *jd, uint64_t index)
{
	if (!jd->idxcap)
		return NULL;
	size_t m = jd->idxcap - 1;
	for (size_t j = mix(index) & m; jd->idx[j]; j = (j + 1) & m)
		if (jd->code[jd->idx[j] - 1].index == index)
			return &jd->code[jd->idx[j] - 1];
	return NULL;
}

static int rec_load(struct ldr_jitdump *jd, const struct ldr_jd_source *s, uint64_t off,
		    uint32_t size, uint64_t time, struct jd_pending *p)
{
	uint8_t f[40];
	if (size < JD_PREFIX_LEN + sizeof(f) + 1)
		return BK_CORRUPT;
	int err = rd(s, off + JD_PREFIX_LEN, f, sizeof(f));
	if (err)
		return err;
	uint64_t code_addr = base_rd_le(f + 16, 8), code_size = base_rd_le(f + 24, 8);
	uint64_t rest = size - JD_PREFIX_LEN - sizeof(f);
	if (code_size >= rest || code_addr + code_size < code_addr)
		return BK_CORRUPT; /* no room for the name's NUL, or a range that wraps */
	const char *name = "";
	uint64_t name_len;
	if ((err = read_string(jd, s, off + JD_PREFIX_LEN + sizeof(f), rest - code_size, &name,
			       &name_len)))
		return err;
	if (!name_len)
		return BK_CORRUPT;
	struct ldr_jd_code *c = new_code(jd);
	if (!c)
		return jd->limit ? 0 : BK_E_NOMEM;
	c->start = code_addr;
	c->end = code_addr + code_size;
	c->time = time;
	c->index = base_rd_le(f + 32, 8);
	c->name = name;
	c->code_off = off + size - code_size;
	c->has_code = true;
	c->line_base = code_addr;
	if (p->debug && p->debug_addr == code_addr) {
		c->line0 = p->line0;
		c->nlines = p->nlines;
	}
	if (p->unwind) {
		c->eh = p->eh;
		c->eh_len = p->eh_len;
		c->eh_addr = code_addr + ((code_size + 7) & ~(uint64_t)7);
		jd->nunwind += c->eh_len != 0;
	}
	*p = (struct jd_pending){ 0 };
	jd->nloads++;
	if (!index_put(jd, c->index, c->seq))
		return BK_E_NOMEM;
	jd->ncode++;
	return 0;
}

static int rec_move(struct ldr_jitdump *jd, const struct ldr_jd_source *s, uint64_t off,
		    uint32_t size, uint64_t time)
{
	uint8_t f[48];
	if (size < JD_PREFIX_LEN + sizeof(f))
		return BK_CORRUPT;
	int err = rd(s, off + JD_PREFIX_LEN, f, sizeof(f));
	if (err)
		return err;
	uint64_t new_addr = base_rd_le(f + 24, 8), code_size = base_rd_le(f + 32, 8);
	uint64_t index = base_rd_le(f + 40, 8);
	if (new_addr + code_size < new_addr)
		return BK_CORRUPT;
	const struct ldr_jd_code *from = index_get(jd, index);
	if (!from) {
		jd->moves_unknown++; /* a move of code we never saw loaded */
		return 0;
	}
	size_t from_at = (size_t)(from - jd->code);
	struct ldr_jd_code *c = new_code(jd);
	if (!c)
		return jd->limit ? 0 : BK_E_NOMEM;
	from = &jd->code[from_at]; /* new_code may have moved the array */
	uint32_t seq = c->seq;
	*c = *from;
	c->seq = seq;
	c->time = time;
	c->start = new_addr;
	c->end = new_addr + code_size;
	/* The code moved whole: its unwinding data with it. Its code bytes
	 * are the load's only when the size did not change. */
	if (c->eh_len)
		c->eh_addr = from->eh_addr - from->start + new_addr;
	c->has_code = from->has_code && from->end - from->start == code_size;
	jd->nmoves++;
	if (!index_put(jd, c->index, c->seq))
		return BK_E_NOMEM;
	jd->ncode++;
	return 0;
}

/* Whether S is text a file name may be: UTF-8, no control characters. */
static bool is_text(const char *s)
{
	const uint8_t *p = (const uint8_t *)s;
	while (*p) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
		if (*p < 0x80) {
			p++;
			continue;
		}
		int n = (*p & 0xe0) == 0xc0 ? 1 : (*p & 0xf0) == 0xe0 ? 2 : (*p & 0xf8) == 0xf0 ? 3 : -1;
		if (n < 0 || (*p & 0xfe) == 0xc0)
			return false;
		for (int k = 1; k <= n; k++)
			if ((p[k] & 0xc0) != 0x80)
				return false;
		p += n + 1;
	}
	return true;
}

/* A JIT_CODE_DEBUG_INFO record: its entries for the next load at its
 * code_addr. Entries that do not fill the record up to its padding (to
 * 8 bytes, as V8 writes it) exactly, or file names that are not text,
 * mean the record cannot be read as written: its lines are dropped and
 * counted, the reading goes on at the next record (its size frames it).
 * Seen in node 20's jitdumps: the first 16 bytes of a file name replaced
 * by a freed allocation's allocator words, one with a zero byte in them,
 * so that every entry after it is read from the middle of a name. */
static int rec_debug(struct ldr_jitdump *jd, const struct ldr_jd_source *s, uint64_t off,
		     uint32_t size, struct jd_pending *p)
{
	uint8_t f[16];
	if (size < JD_PREFIX_LEN + sizeof(f))
		return BK_CORRUPT;
	int err = rd(s, off + JD_PREFIX_LEN, f, sizeof(f));
	if (err)
		return err;
	uint64_t nr = base_rd_le(f + 8, 8);
	uint64_t at = off + JD_PREFIX_LEN + sizeof(f), end = off + size;
	p->debug = false;
	if (nr > LDR_JD_MAX_LINES || jd->nlines + nr > LDR_JD_MAX_ALL_LINES ||
	    nr > (end - at) / 17) {
		jd->debug_dropped++;
		return 0;
	}
	size_t line0 = jd->nlines;
	bool bad = false;
	for (uint64_t i = 0; i < nr && !bad; i++) {
		uint8_t e[16];
		const char *file = NULL;
		uint64_t flen = 0;
		bad = end - at < sizeof(e) + 1;
		if (!bad && (err = rd(s, at, e, sizeof(e))))
			return err;
		if (!bad && (err = read_string(jd, s, at + sizeof(e), end - at - sizeof(e), &file,
					       &flen)))
			return err;
		bad = bad || !flen || !is_text(file);
		if (bad)
			break;
		struct ldr_jd_line *l = base_grow(jd->lines, &jd->caplines, jd->nlines + 1,
						  sizeof(*l), 256);
		if (!l)
			return BK_E_NOMEM;
		jd->lines = l;
		jd->lines[jd->nlines++] = (struct ldr_jd_line){
			.addr = base_rd_le(e, 8), .line = (uint32_t)base_rd_le(e + 8, 4),
			.column = (uint32_t)base_rd_le(e + 12, 4), .file = file };
		at += sizeof(e) + flen;
	}
	if (bad || end - at >= 8) {
		jd->nlines = line0;
		jd->debug_dropped++;
		return 0;
	}
	*p = (struct jd_pending){ .debug = true, .debug_addr = base_rd_le(f, 8),
				  .line0 = (uint32_t)line0, .nlines = (uint32_t)nr,
				  .unwind = p->unwind, .eh = p->eh, .eh_len = p->eh_len };
	jd->ndebug++;
	return 0;
}

static int rec_unwinding(struct ldr_jitdump *jd, const struct ldr_jd_source *s, uint64_t off,
			 uint32_t size, struct jd_pending *p)
{
	uint8_t f[24];
	if (size < JD_PREFIX_LEN + sizeof(f))
		return BK_CORRUPT;
	int err = rd(s, off + JD_PREFIX_LEN, f, sizeof(f));
	if (err)
		return err;
	uint64_t all = base_rd_le(f, 8), hdr = base_rd_le(f + 8, 8);
	if (all > size - JD_PREFIX_LEN - sizeof(f) || hdr > all)
		return BK_CORRUPT;
	p->unwind = true;
	p->eh = NULL;
	p->eh_len = 0;
	uint64_t eh_len = all - hdr;
	if (eh_len > LDR_JD_MAX_UNWIND) {
		jd->unwind_dropped++;
		return 0;
	}
	if (eh_len) {
		uint8_t *eh = arena_take(jd, (size_t)eh_len);
		if (!eh)
			return BK_E_NOMEM;
		if ((err = rd(s, off + JD_PREFIX_LEN + sizeof(f), eh, (size_t)eh_len)))
			return err;
		p->eh = eh;
		p->eh_len = (uint32_t)eh_len;
	}
	return 0;
}

int ldr_jitdump_read(const struct ldr_jd_source *s, struct ldr_jitdump **out)
{
	*out = NULL;
	uint8_t h[JD_HEADER_LEN];
	if (s->len < JD_HEADER_LEN)
		return s->len >= 4 ? BK_CORRUPT : BK_E_UNSUPPORTED;
	int err = rd(s, 0, h, sizeof(h));
	if (err)
		return err;
	uint32_t magic = (uint32_t)base_rd_le(h, 4);
	if (magic != JD_MAGIC)
		return BK_E_UNSUPPORTED; /* not a jitdump, or one written big-endian */
	uint32_t version = (uint32_t)base_rd_le(h + 4, 4);
	uint32_t hlen = (uint32_t)base_rd_le(h + 8, 4);
	if (version < 1 || version > 2)
		return BK_E_UNSUPPORTED;
	if (hlen < JD_HEADER_LEN || hlen > s->len)
		return BK_CORRUPT;
	struct ldr_jitdump *jd = base_calloc(1, sizeof(*jd));
	if (!jd)
		return BK_E_NOMEM;
	jd->machine = (uint16_t)base_rd_le(h + 12, 4);
	jd->pid = (uint32_t)base_rd_le(h + 20, 4);
	jd->time = base_rd_le(h + 24, 8);
	jd->flags = base_rd_le(h + 32, 8);
	struct jd_pending p = { 0 };
	uint64_t off = hlen;
	while (!jd->limit && !jd->closed) {
		uint8_t r[JD_PREFIX_LEN];
		if (s->len - off < JD_PREFIX_LEN) {
			jd->truncated = off != s->len;
			break;
		}
		if ((err = rd(s, off, r, sizeof(r))))
			break;
		uint32_t id = (uint32_t)base_rd_le(r, 4), size = (uint32_t)base_rd_le(r + 4, 4);
		uint64_t time = base_rd_le(r + 8, 8);
		if (size < JD_PREFIX_LEN) {
			err = BK_CORRUPT;
			break;
		}
		if (size > s->len - off) {
			jd->truncated = true; /* being written */
			break;
		}
		switch (id) {
		case JD_LOAD: err = rec_load(jd, s, off, size, time, &p); break;
		case JD_MOVE: err = rec_move(jd, s, off, size, time); break;
		case JD_DEBUG_INFO: err = rec_debug(jd, s, off, size, &p); break;
		case JD_UNWINDING_INFO: err = rec_unwinding(jd, s, off, size, &p); break;
		case JD_CLOSE: jd->closed = true; break;
		default: jd->skipped++; break;
		}
		if (err)
			break;
		jd->records++;
		off += size;
	}
	jd->end_off = off;
	jd->file_len = s->len;
	if (err == BK_E_NOMEM || (err && !jd->records)) {
		ldr_jitdump_free(jd);
		return err;
	}
	/* A record that does not hold together ends the reading: what came
	 * before it stands (the error is kept for the caller to report). */
	jd->error = err;
	*out = jd;
	return 0;
}

void ldr_jitdump_free(struct ldr_jitdump *jd)
{
	if (!jd)
		return;
	for (struct jd_chunk *c = jd->arena, *next; c; c = next) {
		next = c->next;
		base_free(c);
	}
	base_free(jd->code);
	base_free(jd->lines);
	base_free(jd->idx);
	base_free(jd->by_start);
	base_free(jd->max_end);
	base_free(jd);
}

bool ldr_jitdump_name(const char *path, bool deleted)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (strncmp(base, "jit-", 4) != 0)
		return false;
	const char *p = base + 4, *digits = p;
	while (*p >= '0' && *p <= '9')
		p++;
	return p > digits && (!strcmp(p, ".dump") || (deleted && !strcmp(p, ".dump (deleted)")));
}

/* ---- Sources ------------------------------------------------------------ */

static int mem_read(void *ctx, uint64_t off, void *dst, size_t len)
{
	const struct ldr_jd_mem *m = ctx;
	if (off > m->len || len > m->len - off)
		return BK_CORRUPT;
	memcpy(dst, m->bytes + off, len);
	return 0;
}

struct ldr_jd_source ldr_jd_memory(struct ldr_jd_mem *m)
{
	return (struct ldr_jd_source){ .read = mem_read, .ctx = m, .len = m->len };
}

static int fd_read(void *ctx, uint64_t off, void *dst, size_t len)
{
	const int *fd = ctx;
	size_t got = 0;
	while (got < len) {
		ssize_t n = pread(*fd, (uint8_t *)dst + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return BK_E_IO; /* cut under us: the caller stops there */
		got += (size_t)n;
	}
	return 0;
}

int ldr_jitdump_open(const char *path, struct ldr_jitdump **out)
{
	*out = NULL;
	uint64_t size; /* now: what the JIT appends later is not read */
	int fd = base_open_regular(path, &size);
	if (fd < 0)
		return fd;
	struct ldr_jd_source s = { .read = fd_read, .ctx = &fd, .len = size };
	int err = ldr_jitdump_read(&s, out);
	close(fd);
	return err;
}

/* ---- Lookup ------------------------------------------------------------ */

static const struct ldr_jitdump *sort_jd; /* qsort has no context argument */

static int cmp_start(const void *a, const void *b)
{
	const struct ldr_jd_code *x = &sort_jd->code[*(const uint32_t *)a];
	const struct ldr_jd_code *y = &sort_jd->code[*(const uint32_t *)b];
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int ldr_jitdump_index(struct ldr_jitdump *jd)
{
	base_free(jd->by_start);
	base_free(jd->max_end);
	jd->by_start = NULL;
	jd->max_end = NULL;
	if (!jd->ncode)
		return 0;
	jd->by_start = base_alloc(jd->ncode * sizeof(*jd->by_start));
	jd->max_end = base_alloc(jd->ncode * sizeof(*jd->max_end));
	if (!jd->by_start || !jd->max_end)
		return BK_E_NOMEM;
	for (size_t i = 0; i < jd->ncode; i++)
		jd->by_start[i] = (uint32_t)i;
	sort_jd = jd;
	qsort(jd->by_start, jd->ncode, sizeof(*jd->by_start), cmp_start);
	sort_jd = NULL;
	for (size_t i = 0; i < jd->ncode; i++) {
		uint64_t e = jd->code[jd->by_start[i]].end;
		jd->max_end[i] = i && jd->max_end[i - 1] > e ? jd->max_end[i - 1] : e;
	}
	return 0;
}

const struct ldr_jd_code *ldr_jitdump_at(const struct ldr_jitdump *jd, uint64_t addr,
					 size_t view)
{
	if (!jd || !jd->by_start)
		return NULL;
	/* The last entry starting at or below ADDR, then back over those that
	 * may still hold it: the latest of the view that does wins. */
	size_t lo = 0, hi = jd->ncode;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (jd->code[jd->by_start[mid]].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct ldr_jd_code *best = NULL;
	size_t looked = 0;
	for (size_t i = lo; i-- > 0 && jd->max_end[i] > addr && looked++ < LDR_JD_MAX_SCAN;) {
		const struct ldr_jd_code *c = &jd->code[jd->by_start[i]];
		if (c->seq < view && addr < c->end && (!best || c->seq > best->seq))
			best = c;
	}
	return best;
}

const struct ldr_jd_line *ldr_jitdump_line(const struct ldr_jitdump *jd,
					   const struct ldr_jd_code *c, uint64_t addr)
{
	/* Each entry holds from its address to the next one's: the last at
	 * or below ADDR (at the address the lines were written for). */
	uint64_t at = addr - c->start + c->line_base;
	const struct ldr_jd_line *best = NULL;
	for (uint32_t i = 0; i < c->nlines; i++) {
		const struct ldr_jd_line *l = &jd->lines[c->line0 + i];
		if (l->addr <= at && (!best || l->addr >= best->addr))
			best = l;
	}
	return best;
}
