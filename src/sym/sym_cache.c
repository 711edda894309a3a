/* The symbol memo: what bk_space_symbolize answered for an address of a
 * file, kept on disk so that the next run does not read the file's symbol
 * tables and DWARF again (for libc with its debug file that is ~30 ms:
 * inflating .debug_info and libdwarf's unit contexts, bench/README.md).
 *
 * One file per build-id in the cache directory, DIR/<build-id>.sym:
 *
 *   "BKSYM1 " SELF " " SIG "\n"  header; SELF and SIG name the inputs (below)
 *   record*                     appended, each written with one write()
 *   record = u32 len, u32 crc32(payload), payload[len]
 *   payload = u64 addr, u8 n, n × frame
 *   frame = u8 inlined, u64 offset, u32 line, u32 column,
 *           u16 len + bytes (function, NUL-terminated; len 0: none),
 *           u16 len + bytes (file, likewise)
 *
 * little-endian, as this machine writes it. SELF is the build-id of the
 * backstep that wrote it (another build may answer differently), SIG the
 * identity (device, inode, size, modification time) of the file and of its
 * separate debug file: a build-id names the code, not what was installed
 * beside it (a stripped copy, a debug package installed later). A file whose header
 * is not the expected one is replaced, as a whole, by a new one (rename).
 * Records are read with the bounded reader and their checksums checked: a
 * torn or damaged record (two writers, a crash, a disk error) is skipped,
 * never trusted; the rest of the file is still used. A file that is not
 * ours or that others may write is not read. The memo only ever
 * answers with what a lookup once answered for the same inputs.
 *
 * Cold, like everything in src/sym; not for signal handlers.
 */
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "sym.h"

#define MEMO_MAGIC "BKSYM1 "
#define MEMO_MAX_FILE (64u << 20) /* a larger file is not read */
#define MEMO_MAX_FRAMES 16

struct memo_entry {
	uint64_t addr;
	int n;                    /* frames; 0: nothing known */
	struct bk_symbol *frames; /* n of them; strings in the file image or
				     in memory the caller keeps (sym_memo_put) */
	bool used;
};

struct sym_memo {
	char *path;               /* DIR/<build-id>.sym */
	char *header;             /* "BKSYM1 SIG\n" */
	uint8_t *image;           /* the file as read (strings point into it) */
	struct memo_entry *slots;
	size_t nslots, count;
	int fd;                   /* for appends; -1 until the first */
	bool broken;              /* cannot write: answers from memory only */
};

static size_t slot_of(uint64_t addr, size_t nslots)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 17) & (nslots - 1);
}

static struct memo_entry *find(struct sym_memo *m, uint64_t addr, bool for_insert)
{
	if (!m->nslots)
		return NULL;
	for (size_t i = slot_of(addr, m->nslots);; i = (i + 1) & (m->nslots - 1)) {
		struct memo_entry *e = &m->slots[i];
		if (!e->used)
			return for_insert ? e : NULL;
		if (e->addr == addr)
			return e;
	}
}

static bool grow(struct sym_memo *m)
{
	if (m->nslots && (m->count + 1) * 2 <= m->nslots)
		return true;
	size_t n = m->nslots ? m->nslots * 2 : 256;
	struct memo_entry *old = m->slots;
	size_t nold = m->nslots;
	m->slots = base_calloc(n, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		return false;
	}
	m->nslots = n;
	for (size_t i = 0; i < nold; i++)
		if (old[i].used)
			*find(m, old[i].addr, true) = old[i];
	base_free(old);
	return true;
}

/* Keep ADDR's FRAMES (copied array; the strings are not copied). */
static bool remember(struct sym_memo *m, uint64_t addr, const struct bk_symbol *frames, int n)
{
	if (!grow(m))
		return false;
	struct memo_entry *e = find(m, addr, true);
	if (e->used)
		return true; /* the first answer stays */
	struct bk_symbol *copy = NULL;
	if (n > 0) {
		copy = base_alloc((size_t)n * sizeof(*copy));
		if (!copy)
			return false;
		memcpy(copy, frames, (size_t)n * sizeof(*copy));
	}
	*e = (struct memo_entry){ addr, n, copy, true };
	m->count++;
	return true;
}

/* A string field: u16 length (0: NULL) and that many bytes, the last a NUL. */
static bool read_str(struct buf *b, const char **out)
{
	uint16_t len;
	if (buf_u16(b, &len))
		return false;
	*out = NULL;
	if (!len)
		return true;
	if (len > buf_left(b) || b->p[len - 1] != 0 || memchr(b->p, 0, len) != b->p + len - 1)
		return false;
	*out = (const char *)b->p;
	b->p += len;
	return true;
}

/* Parse one record's payload into *ADDR and FRAMES; false if malformed. */
static bool parse_payload(struct buf b, uint64_t *addr, struct bk_symbol *frames, int *n)
{
	uint8_t count;
	if (buf_u64(&b, addr) || buf_u8(&b, &count) || count > MEMO_MAX_FRAMES)
		return false;
	for (int i = 0; i < count; i++) {
		struct bk_symbol *s = &frames[i];
		uint8_t inl;
		uint32_t line, col;
		if (buf_u8(&b, &inl) || inl > 1 || buf_u64(&b, &s->offset) || buf_u32(&b, &line) ||
		    buf_u32(&b, &col) || !read_str(&b, &s->function) || !read_str(&b, &s->file))
			return false;
		s->inlined = inl;
		s->line = line;
		s->column = col;
	}
	*n = count;
	return buf_left(&b) == 0;
}

/* Load every sound record of IMAGE (LEN bytes, header already checked). */
static void load_records(struct sym_memo *m, size_t start, size_t len)
{
	struct buf b = buf_make(m->image + start, len - start);
	while (buf_left(&b) >= 8) {
		uint32_t rlen = 0, crc = 0;
		if (buf_u32(&b, &rlen) || buf_u32(&b, &crc) || rlen > buf_left(&b))
			break; /* torn at the end */
		struct buf payload = buf_make(b.p, rlen);
		b.p += rlen;
		if ((uint32_t)crc32(0, payload.p, rlen) != crc)
			continue; /* damaged: skipped */
		uint64_t addr;
		struct bk_symbol frames[MEMO_MAX_FRAMES];
		int n;
		if (parse_payload(payload, &addr, frames, &n) && !remember(m, addr, frames, n))
			return;
	}
}

/* A cache file we may believe: a regular file of ours that nobody else can
 * write (BACKSTEP_CACHE_DIR may name a shared directory). */
static bool trusted(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_uid == geteuid() && !(st->st_mode & 022);
}

/* The file at PATH if its header is HEADER: read whole into m->image. */
static void load(struct sym_memo *m)
{
	int fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	struct stat st;
	size_t hlen = strlen(m->header);
	if (fstat(fd, &st) == 0 && trusted(&st) && (uint64_t)st.st_size >= hlen &&
	    (uint64_t)st.st_size <= MEMO_MAX_FILE && (m->image = base_alloc((size_t)st.st_size))) {
		size_t len = (size_t)st.st_size, got = 0;
		while (got < len) {
			ssize_t r = read(fd, m->image + got, len - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		if (got >= hlen && memcmp(m->image, m->header, hlen) == 0)
			load_records(m, hlen, got);
	}
	close(fd);
}

/* The GNU build-id of the object holding this code (libbackstep.so, or the
 * program it is linked into), in hex; "" when it has none. */
static char self_id[2 * 64 + 1];
static bool self_id_done;

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	bool mine = false;
	for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		mine = ph->p_type == PT_LOAD && me >= lo && me - lo < ph->p_memsz;
	}
	if (!mine)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		struct buf b = buf_make((const void *)(info->dlpi_addr + ph->p_vaddr), ph->p_memsz);
		uint32_t namesz, descsz, type;
		while (!buf_u32(&b, &namesz) && !buf_u32(&b, &descsz) && !buf_u32(&b, &type)) {
			const uint8_t *name = b.p;
			if (buf_skip(&b, (namesz + 3u) & ~3u))
				break;
			const uint8_t *desc = b.p;
			if (buf_skip(&b, (descsz + 3u) & ~3u))
				break;
			if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(name, "GNU", 4) &&
			    descsz && descsz <= 64) {
				for (uint32_t k = 0; k < descsz; k++)
					snprintf(self_id + 2 * k, 3, "%02x", desc[k]);
				return 1;
			}
		}
	}
	return 1;
}

struct sym_memo *sym_memo_open(const char *dir, const uint8_t *build_id, size_t id_len,
			       const char *sig)
{
	if (!self_id_done) {
		dl_iterate_phdr(find_self, (void *)(uintptr_t)&sym_memo_open);
		self_id_done = true;
	}
	/* Without our own build-id a memo of an older build could not be told
	 * from ours: none then. */
	if (!self_id[0] || !dir || !dir[0] || !id_len || id_len > 64 || strchr(sig, '\n'))
		return NULL;
	struct sym_memo *m = base_calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->fd = -1;
	size_t plen = strlen(dir) + 2 * id_len + 8;
	size_t hlen = sizeof(MEMO_MAGIC) + strlen(self_id) + 1 + strlen(sig) + 1;
	m->path = base_alloc(plen);
	m->header = base_alloc(hlen);
	if (!m->path || !m->header) {
		sym_memo_close(m);
		return NULL;
	}
	int k = snprintf(m->path, plen, "%s/", dir);
	for (size_t i = 0; i < id_len; i++)
		k += snprintf(m->path + k, plen - (size_t)k, "%02x", build_id[i]);
	snprintf(m->path + k, plen - (size_t)k, ".sym");
	snprintf(m->header, hlen, "%s%s %s\n", MEMO_MAGIC, self_id, sig);
	load(m);
	return m;
}

int sym_memo_get(struct sym_memo *m, uint64_t addr, struct bk_symbol *out, int max)
{
	struct memo_entry *e = m ? find(m, addr, false) : NULL;
	if (!e)
		return -1;
	int n = e->n < max ? e->n : max;
	if (n > 0)
		memcpy(out, e->frames, (size_t)n * sizeof(*out));
	return n;
}

/* A new file holding only the header, renamed over PATH; the fd to append
 * to, or -1. */
static int fresh_file(struct sym_memo *m)
{
	size_t tlen = strlen(m->path) + 32;
	char *tmp = base_alloc(tlen);
	if (!tmp)
		return -1;
	snprintf(tmp, tlen, "%s.%d.tmp", m->path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	size_t hlen = strlen(m->header);
	if (fd >= 0 && (write(fd, m->header, hlen) != (ssize_t)hlen || rename(tmp, m->path) != 0)) {
		close(fd);
		unlink(tmp);
		fd = -1;
	}
	base_free(tmp);
	if (fd >= 0) { /* appends from now on, also after other writers' */
		int afd = open(m->path, O_WRONLY | O_APPEND | O_CLOEXEC);
		close(fd);
		fd = afd;
	}
	return fd;
}

/* The fd to append to: the existing file if its header is ours, else a
 * fresh one. */
static int append_fd(struct sym_memo *m)
{
	int fd = open(m->path, O_RDWR | O_APPEND | O_CLOEXEC);
	if (fd >= 0) {
		size_t hlen = strlen(m->header);
		char *h = base_alloc(hlen);
		struct stat st;
		bool ours = h && fstat(fd, &st) == 0 && trusted(&st) &&
			    pread(fd, h, hlen, 0) == (ssize_t)hlen && !memcmp(h, m->header, hlen);
		base_free(h);
		if (ours)
			return fd;
		close(fd);
	}
	return fresh_file(m);
}

static void put_str(uint8_t **p, const char *s)
{
	size_t len = s ? strlen(s) + 1 : 0;
	uint16_t l = (uint16_t)len;
	memcpy(*p, &l, 2);
	memcpy(*p + 2, s ? s : "", len);
	*p += 2 + len;
}

void sym_memo_put(struct sym_memo *m, uint64_t addr, const struct bk_symbol *frames, int n)
{
	if (!m || n < 0 || n > MEMO_MAX_FRAMES || find(m, addr, false))
		return;
	size_t len = 8 + 8 + 1; /* len, crc; addr, n */
	for (int i = 0; i < n; i++) {
		size_t fl = frames[i].function ? strlen(frames[i].function) + 1 : 0;
		size_t sl = frames[i].file ? strlen(frames[i].file) + 1 : 0;
		if (fl > UINT16_MAX || sl > UINT16_MAX)
			return; /* not worth keeping */
		len += 1 + 8 + 4 + 4 + 2 + fl + 2 + sl;
	}
	if (!remember(m, addr, frames, n) || m->broken)
		return;
	uint8_t *rec = base_alloc(len), *p = rec + 8;
	if (!rec)
		return;
	memcpy(p, &addr, 8);
	p[8] = (uint8_t)n;
	p += 9;
	for (int i = 0; i < n; i++) {
		uint8_t inl = frames[i].inlined ? 1 : 0;
		uint32_t line = frames[i].line, col = frames[i].column;
		*p++ = inl;
		memcpy(p, &frames[i].offset, 8);
		memcpy(p + 8, &line, 4);
		memcpy(p + 12, &col, 4);
		p += 16;
		put_str(&p, frames[i].function);
		put_str(&p, frames[i].file);
	}
	uint32_t plen = (uint32_t)(len - 8), crc = (uint32_t)crc32(0, rec + 8, plen);
	memcpy(rec, &plen, 4);
	memcpy(rec + 4, &crc, 4);
	if (m->fd < 0)
		m->fd = append_fd(m);
	if (m->fd < 0 || write(m->fd, rec, len) != (ssize_t)len)
		m->broken = true; /* a full disk, a read-only directory: memory only */
	base_free(rec);
}

void sym_memo_close(struct sym_memo *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nslots; i++)
		if (m->slots[i].used)
			base_free(m->slots[i].frames);
	base_free(m->slots);
	if (m->fd >= 0)
		close(m->fd);
	base_free(m->image);
	base_free(m->header);
	base_free(m->path);
	base_free(m);
}
