/* Live profiles (prof.h, "Live"): the event `backstep record` opens, the
 * ring buffers the kernel writes its records into, a reader that decodes
 * those records as it decodes a perf.data file's, and the records perf
 * synthesizes for a process that was already running.
 *
 * The ring (include/uapi/linux/perf_event.h, struct perf_event_mmap_page):
 * the kernel writes records at data_head and never past data_tail, which
 * only we move. We read data_head with acquire order before reading the
 * records it covers, and store data_tail with release order after we are
 * done with them, so the kernel never reuses bytes we still read. A pass
 * covers the records up to the head read when it began, so a pass ends
 * even when the kernel writes faster than we read.
 *
 * Invariant: [tail, head) holds whole records (the kernel writes each
 * record at an 8-byte boundary, its size a multiple of 8); a header that
 * says otherwise is corruption: the pass is dropped, never read past.
 * Trusts its caller for: FD a perf event opened with this module's attr
 * (prof_live_attr) and one thread per ring and per reader.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "profile/prof.h"

#include "arch/arch.h"
#include "target/target.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the perf.data decoder reads little-endian records: a big-endian host is not supported"
#endif

/* ---- The event ----------------------------------------------------------- */

/* The user registers perf asks for with --call-graph dwarf (its
 * arch/<arch>/include/perf_regs.h PERF_REGS_MASK), in asm/perf_regs.h
 * numbering: x86-64 every general register, IP, FLAGS, CS and SS (the
 * kernel refuses DS, ES, FS and GS of a 64-bit task); AArch64 x0-x30, SP
 * and PC. */
static uint64_t user_regs_mask(enum bk_arch arch)
{
	switch (arch) {
	case BK_ARCH_X86_64:
		return 0xffffffull & ~(0xfull << 12); /* AX..R15 without DS ES FS GS */
	case BK_ARCH_AARCH64:
		return (1ull << 33) - 1;               /* X0..X30, SP, PC */
	default:
		return 0;
	}
}

int prof_live_attr(struct perf_event_attr *attr, uint64_t freq_hz, bool kernel,
		   bool kernel_callchain)
{
	uint64_t regs = user_regs_mask(ARCH_HOST->arch);
	if (!regs)
		return BK_E_UNSUPPORTED;
	if (!freq_hz)
		return BK_E_INVAL;
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	/* cpu-clock: an hrtimer per event, present where no PMU is (VMs). */
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->freq = 1;
	attr->sample_freq = freq_hz;
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			    PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	if (kernel && kernel_callchain)
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
	attr->sample_regs_user = regs;
	attr->sample_stack_user = PROF_LIVE_STACK_USER;
	/* The user part of the stack is what we unwind; the kernel's
	 * callchain holds its own frames only. */
	attr->exclude_callchain_user = 1;
	attr->exclude_kernel = !kernel;
	attr->exclude_callchain_kernel = !(kernel && kernel_callchain);
	attr->exclude_hv = 1;
	attr->sample_id_all = 1;
	/* CLOCK_MONOTONIC, the clock JITs stamp their jitdumps with (perf
	 * record -k mono): a JIT's code is then known as of each sample. */
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
	attr->inherit = 1;
	return 0;
}

/* ---- The reader ----------------------------------------------------------- */

int prof_open_live(const struct perf_event_attr *attr, size_t attr_size, const uint64_t *ids,
		   size_t nids, struct prof_reader **out)
{
	if (!attr || !out || attr_size < PERF_ATTR_SIZE_VER0 || (nids && !ids))
		return BK_E_INVAL;
	*out = NULL;
	struct prof_reader *r;
	int err = prof_reader_new(&r);
	if (err)
		return err;
	/* The attr as the kernel took it: its size field must say ATTR_SIZE. */
	struct perf_event_attr a;
	size_t n = attr_size < sizeof(a) ? attr_size : sizeof(a);
	memset(&a, 0, sizeof(a));
	memcpy(&a, attr, n);
	a.size = (uint32_t)n;
	if ((err = prof_add_attr(r, (const uint8_t *)&a, n, (const uint8_t *)ids, nids)))
		goto fail;
	/* The machine is this one: it names the register layout. */
	if (!(r->arch_name = base_strdup(ARCH_HOST->name))) {
		err = BK_E_NOMEM;
		goto fail;
	}
	r->arch = ARCH_HOST->arch;
	r->done = true; /* no source: prof_next ends at once */
	*out = r;
	return 0;
fail:
	prof_close(r);
	return err;
}

int prof_decode_live(struct prof_reader *r, const uint8_t *p, size_t len, struct prof_record *rec)
{
	if (!r || !p || !rec)
		return BK_E_INVAL;
	if (len < 8 || len > PROF_MAX_RECORD || base_rd_le(p + 6, 2) != len)
		return BK_CORRUPT;
	memset(rec, 0, sizeof(*rec));
	rec->type = (uint32_t)base_rd_le(p, 4);
	rec->misc = (uint16_t)base_rd_le(p + 4, 2);
	rec->size = (uint16_t)len;
	rec->raw = p;
	rec->attr = -1;
	r->stats.records++;
	r->stats.by_type[rec->type < 127 ? rec->type : 127]++;
	return prof_decode(r, p, len, rec);
}

/* ---- The ring ------------------------------------------------------------- */

struct prof_ring {
	struct perf_event_mmap_page *meta;
	size_t map_len;
	const uint8_t *data;
	uint64_t data_len;     /* a power of two */
	uint64_t tail;         /* everything before is consumed (data_tail) */
	uint64_t next;         /* the end of the record handed out last */
	uint64_t head;         /* the end of this pass */
	uint8_t scratch[PROF_MAX_RECORD + 1];
};

int prof_ring_map(int fd, size_t data_len, struct prof_ring **out)
{
	long page = sysconf(_SC_PAGESIZE);
	if (!out || fd < 0 || page <= 0 || data_len < (size_t)page || data_len % (size_t)page ||
	    (data_len & (data_len - 1)))
		return BK_E_INVAL;
	*out = NULL;
	struct prof_ring *g = base_calloc(1, sizeof(*g));
	if (!g)
		return BK_E_NOMEM;
	g->map_len = (size_t)page + data_len;
	/* Writable: we own data_tail, and the kernel then never overwrites
	 * what we have not read (it counts LOST records instead). */
	void *m = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED) {
		int e = errno;
		base_free(g);
		return e == EPERM || e == ENOMEM ? BK_E_LIMIT : BK_E_IO;
	}
	g->meta = m;
	/* data_offset and data_size are there since Linux 4.1; before, the
	 * data starts at the second page. */
	uint64_t off = g->meta->data_offset, size = g->meta->data_size;
	if (!off || !size || off + size > g->map_len || (size & (size - 1))) {
		off = (uint64_t)page;
		size = data_len;
	}
	g->data = (const uint8_t *)m + off;
	g->data_len = size;
	g->tail = g->next = g->head = g->meta->data_tail;
	*out = g;
	return 0;
}

void prof_ring_unmap(struct prof_ring *g)
{
	if (!g)
		return;
	munmap(g->meta, g->map_len);
	base_free(g);
}

/* Give the kernel back everything up to g->next. */
static void ring_release(struct prof_ring *g)
{
	if (g->next != g->tail) {
		g->tail = g->next;
		__atomic_store_n(&g->meta->data_tail, g->tail, __ATOMIC_RELEASE);
	}
}

void prof_ring_pass(struct prof_ring *g)
{
	ring_release(g);
	g->head = __atomic_load_n(&g->meta->data_head, __ATOMIC_ACQUIRE);
}

int prof_ring_next(struct prof_ring *g, const uint8_t **p, size_t *len)
{
	ring_release(g);
	uint64_t avail = g->head - g->tail;
	if (!avail)
		return 0;
	uint64_t mask = g->data_len - 1, at = g->tail & mask;
	/* The 8-byte header never wraps (records are 8-byte aligned). */
	uint16_t size = avail < 8 || (at & 7) ? 0 : (uint16_t)base_rd_le(g->data + at + 6, 2);
	if (size < 8 || (size & 7) || size > avail) {
		g->next = g->head; /* drop the rest of the pass: nothing in it can be framed */
		ring_release(g);
		return BK_CORRUPT;
	}
	if (at + size <= g->data_len) {
		*p = g->data + at;
	} else {
		size_t first = (size_t)(g->data_len - at);
		memcpy(g->scratch, g->data + at, first);
		memcpy(g->scratch + first, g->data, size - first);
		*p = g->scratch;
	}
	*len = size;
	g->next = g->tail + size;
	return 1;
}

/* ---- Synthesized records --------------------------------------------------- */

/* A record being made: header, body, the sample_id trailer. */
struct synth {
	uint8_t b[8192 + 256];
	size_t n;
};

static void put(struct synth *s, const void *p, size_t len)
{
	memcpy(s->b + s->n, p, len);
	s->n += len;
}

static void put_u32(struct synth *s, uint32_t v)
{
	put(s, &v, 4);
}

static void put_u64(struct synth *s, uint64_t v)
{
	put(s, &v, 8);
}

/* A NUL-terminated string padded to 8 bytes (at most MAX bytes of it). */
static void put_str(struct synth *s, const char *str, size_t max)
{
	size_t len = strnlen(str, max);
	put(s, str, len);
	size_t pad = 8 - len % 8;
	memset(s->b + s->n, 0, pad);
	s->n += pad;
}

/* The sample_id trailer of R's event (struct sample_id, perf_event.h) for
 * PID/TID at time 0 on CPU 0 (perf's synthesized records carry zeros), then
 * the header, and decode. */
static int synth_emit(struct prof_reader *r, struct synth *s, uint32_t type, uint16_t misc,
		      int pid, int tid, int (*emit)(void *, const struct prof_record *), void *ctx)
{
	const struct prof_attr *a = prof_attr_at(r, 0);
	uint64_t t = a && a->sample_id_all ? a->sample_type : 0;
	if (t & PROF_SAMPLE_TID) {
		put_u32(s, (uint32_t)pid);
		put_u32(s, (uint32_t)tid);
	}
	if (t & PROF_SAMPLE_TIME)
		put_u64(s, 0);
	if (t & PROF_SAMPLE_ID)
		put_u64(s, a->nids ? a->ids[0] : 0);
	if (t & PROF_SAMPLE_STREAM_ID)
		put_u64(s, a->nids ? a->ids[0] : 0);
	if (t & PROF_SAMPLE_CPU)
		put_u64(s, 0);
	if (t & PROF_SAMPLE_IDENTIFIER)
		put_u64(s, a->nids ? a->ids[0] : 0);
	uint8_t h[8];
	memcpy(h, &type, 4);
	memcpy(h + 4, &misc, 2);
	uint16_t size = (uint16_t)s->n;
	memcpy(h + 6, &size, 2);
	memcpy(s->b, h, 8);
	struct prof_record rec;
	int err = prof_decode_live(r, s->b, s->n, &rec);
	if (err < 0)
		return err;
	return err ? emit(ctx, &rec) : 0;
}

int prof_live_threads(int pid, int **tids, size_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	DIR *d = opendir(path);
	if (!d)
		return errno == ENOENT || errno == ESRCH ? BK_E_NOT_FOUND : BK_E_IO;
	size_t cap = 16;
	int *t = base_alloc(cap * sizeof(*t));
	*n = 0;
	if (!t) {
		closedir(d);
		return BK_E_NOMEM;
	}
	t[(*n)++] = pid;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long v = strtol(e->d_name, &end, 10);
		if (*end || v <= 0 || v == pid)
			continue;
		if (*n == cap) {
			int *nt = base_realloc(t, 2 * cap * sizeof(*t));
			if (!nt) {
				base_free(t);
				closedir(d);
				return BK_E_NOMEM;
			}
			t = nt;
			cap *= 2;
		}
		t[(*n)++] = (int)v;
	}
	closedir(d);
	*tids = t;
	return 0;
}

int prof_live_synth(struct prof_reader *r, int pid,
		    int (*emit)(void *ctx, const struct prof_record *rec), void *ctx)
{
	int *tids;
	size_t ntids;
	int err = prof_live_threads(pid, &tids, &ntids);
	if (err)
		return err;
	struct synth *s = base_alloc(sizeof(*s));
	if (!s) {
		base_free(tids);
		return BK_E_NOMEM;
	}
	/* COMM: u32 pid, tid; the name. A thread gone meanwhile has none. */
	for (size_t i = 0; i < ntids && !err; i++) {
		char path[96], comm[32];
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tids[i]);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (k <= 0)
			continue;
		comm[k] = 0;
		comm[strcspn(comm, "\n")] = 0;
		s->n = 8;
		put_u32(s, (uint32_t)pid);
		put_u32(s, (uint32_t)tids[i]);
		put_str(s, comm, 16);
		err = synth_emit(r, s, PERF_RECORD_COMM, 0, pid, tids[i], emit, ctx);
	}
	base_free(tids);
	/* MMAP2 of each executable mapping: u32 pid, tid; u64 addr, len,
	 * pgoff; u32 maj, min; u64 ino, ino_generation; u32 prot, flags; the
	 * path. The device and inode are not known here (zeros): nothing
	 * downstream reads them. */
	struct tgt t = { .pid = pid };
	if (!err && (err = tgt_read_maps(&t)) == BK_E_IO)
		err = BK_E_NOT_FOUND; /* it exited meanwhile */
	for (size_t i = 0; i < t.nmaps && !err; i++) {
		const struct tgt_mapping *m = &t.maps[i];
		if (!m->x)
			continue;
		s->n = 8;
		put_u32(s, (uint32_t)pid);
		put_u32(s, (uint32_t)pid);
		put_u64(s, m->start);
		put_u64(s, m->end - m->start);
		put_u64(s, m->offset);
		put_u32(s, 0);
		put_u32(s, 0);
		put_u64(s, 0);
		put_u64(s, 0);
		put_u32(s, (m->r ? PROT_READ : 0) | (m->w ? PROT_WRITE : 0) | PROT_EXEC);
		put_u32(s, MAP_PRIVATE);
		put_str(s, m->path, 4096);
		err = synth_emit(r, s, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, pid, pid, emit, ctx);
	}
	tgt_free_maps(&t);
	base_free(s);
	return err;
}
