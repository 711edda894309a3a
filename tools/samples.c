/* From sample records to printed stacks (samples.h).
 *
 * Two threads. The reader (the caller's thread) puts records in time
 * order, follows each process's modules and walks each sample's stack to
 * PCs; the namer names frames and prints. Naming is what a profile's
 * reader spends its time on when it names every frame of every sample,
 * and the same few thousand PCs recur in every sample. So a frame is
 * named once: the reader maps (the process's module map, PC, how the
 * frame was reached) to a frame key, and for a new key tells the namer
 * the frame's module, offset and the file and link-time address to name
 * it by; the namer names it from files opened once for every process
 * (sym_files; the vDSO, which has no file, from the image the walks
 * used), and printers keep the text they make per key
 * (fr_frame.key). Kernel frames are keyed the same way, under map 0 with
 * a tag of their own. Memory grows with distinct frames, not with
 * samples; the reader runs at most a ring's worth (8 MiB, some 30,000
 * samples of 40 frames) ahead.
 *
 * The ring carries two messages, in order: a new key (MSG_NAME), always
 * before the first sample that uses it, and a sample (MSG_SAMPLE: the
 * thread, time, event and its frame keys). When no thread can be made,
 * the reader names and prints each message itself as it makes it. */
#include <fcntl.h>
#include <sys/stat.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"
#include "samples.h"

#include "../src/base/base.h"
#include "../src/loader/loader.h"
#include "../src/profile/prof_stack.h"
#include "../src/sym/sym.h"
#include "../src/unwind/unwind.h"

#define MAX_FRAMES 1024
#define MAX_INLINE 16
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_CONTEXT_MAX ((uint64_t)-4095)
#define RING_SIZE ((size_t)8 << 20)
#define PUBLISH_BYTES ((size_t)32 << 10)

/* How a frame was reached, part of its key: the first frame is named at
 * its PC and is "initial"; an interrupted frame under a signal frame is
 * named at its PC; a return address at PC - 1. */
enum { TAG_RETURN = 0, TAG_INTERRUPTED = 1, TAG_FIRST = 2, TAG_KERNEL = 4 };

/* A frame key as the reader knows it: the key is its index + 1. */
struct key_id {
	uint64_t map, pc;
	uint8_t tag;
	uint32_t jit;          /* JIT code a jitdump names: its entry + 1 (the
				  code at PC then), else 0 */
};

/* A distinct frame as the namer knows it (indexed by key - 1). */
struct named {
	uint64_t pc;
	uint8_t tag;
	const char *module;
	uint64_t module_off;
	struct bk_symbol *syms;
	int nsym;
};

/* Blocks never moved, each owned by one thread: the reader's holds module
 * paths and event names (read by the namer after the message that names
 * them), the namer's the symbol arrays. */
struct arena_block {
	struct arena_block *next;
	size_t used, size;
	max_align_t data[];
};

struct kernel_sym {
	uint64_t addr;
	size_t name;               /* in kernel_syms.text */
};

struct kernel_syms {
	struct kernel_sym *sym;
	size_t n, cap;
	char *text;
	size_t ntext, captext;
};

enum { KSYMS_NONE, KSYMS_READING, KSYMS_READY };

struct reason_count {
	const char *reason;        /* a static string from prof_walk */
	uint64_t n;
};

enum { MSG_NAME = 1, MSG_SAMPLE, MSG_WRAP };

struct msg_name {
	uint32_t type, key;
	uint64_t pc;
	uint8_t tag;
	const char *module;        /* reader's arena, or NULL */
	uint64_t module_off;
	const char *path;          /* the file to name it by (reader's arena), or NULL */
	uint64_t link;             /* the address to look up there */
	int32_t jit_pid;           /* else: named from /tmp/perf-JIT_PID.map (0: not) */
	bool has_jit_sym;          /* else: named by a jitdump, as JIT_SYM (its
				      strings in the reader's arena) */
	struct bk_symbol jit_sym;
};

struct msg_sample {
	uint32_t type, n;          /* n keys follow */
	int32_t pid, tid;
	uint32_t cpu;
	int error;
	uint64_t time, period;
	const char *event;         /* reader's arena */
	char comm[32];
	uint32_t keys[];
};

/* The reader writes at WPOS and publishes up to HEAD; the namer reads
 * from TAIL to HEAD. Positions count bytes since the start (the ring
 * index is pos % RING_SIZE); a message never wraps: MSG_WRAP sends the
 * reader back to the start. */
struct ring {
	uint8_t *buf;
	pthread_mutex_t lock;
	pthread_cond_t data, room;
	uint64_t head, tail;       /* under lock */
	bool done, finish;         /* under lock: no more messages; call the printer's end */
	uint64_t wpos;             /* the reader's */
};

struct smp {
	const struct smp_opts *o;
	struct prof_stacks *ps;
	struct prof_queue *q;
	/* The reader's. */
	struct key_id *ids;
	size_t nids, capids;
	uint32_t *tab;             /* key; 0: empty */
	size_t tabcap;
	struct arena_block *arena;
	const char *event;         /* the last event name, in the arena */
	bool vdso_tried;           /* the vDSO's image was given to the namer */
	bool clock_known;          /* prof_stacks_set_clock was told */
	/* Processes with a perf map (/tmp/perf-PID.map): the reader's list of
	 * which have one, and the namer's maps (read again when the file grew,
	 * as a JIT appends to it while record runs). */
	struct jit_seen { int32_t pid; bool has; } *jit_seen;
	size_t njit_seen, capjit_seen;
	struct jit_map { int32_t pid; struct sym_perfmap *map; off_t size; unsigned reloads; }
		*jit_maps;
	size_t njit_maps, capjit_maps;
	struct reason_count reasons[8];
	uint64_t skipped, lost, reason_other;
	uint64_t pcs[MAX_FRAMES];
	uint8_t interrupted[MAX_FRAMES];
	uint32_t keys[2 * MAX_FRAMES];
	/* Progress on a terminal. */
	bool tty;
	struct timespec t0;
	uint64_t next_check;
	bool progress_shown;
	/* Between them. */
	struct ring ring;
	bool threaded;
	pthread_t namer;
	/* The namer's. */
	struct named *named;
	size_t nnamed, capnamed;
	struct arena_block *namer_arena;
	struct sym_files *files;
	uint64_t printed;
	/* Kernel symbols from /proc/kallsyms (this machine's kernel: a
	 * recording made here), read from the start when the recording has
	 * kernel callchains, else on the first kernel frame (by the namer). */
	struct kernel_syms ksyms;
	int ksyms_state;
	pthread_t ksyms_thread;
	struct fr_frame frames[2 * MAX_FRAMES];
};

static void start_kallsyms(struct smp *s);
static void *namer_main(void *arg);

int smp_new(enum bk_arch arch, const struct smp_opts *o, bool kernel_callchains,
	    struct smp **out)
{
	struct smp *s = calloc(1, sizeof(*s));
	if (!s)
		return BK_E_NOMEM;
	s->o = o;
	if (prof_stacks_new(arch, &s->ps) != 0 || prof_queue_new(&s->q) != 0 ||
	    !(s->files = sym_files_new()) || !(s->ring.buf = malloc(RING_SIZE))) {
		smp_free(s);
		return BK_E_NOMEM;
	}
	if (o->kernel && !o->no_symbols && kernel_callchains)
		start_kallsyms(s);
	s->tty = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	o->pr->begin();
	pthread_mutex_init(&s->ring.lock, NULL);
	pthread_cond_init(&s->ring.data, NULL);
	pthread_cond_init(&s->ring.room, NULL);
	s->threaded = pthread_create(&s->namer, NULL, namer_main, s) == 0;
	*out = s;
	return 0;
}

bool smp_kernel_callchains(const struct prof_reader *r)
{
	/* perf_event_attr's bit-field word: exclude_kernel is bit 5,
	 * exclude_callchain_kernel bit 21. */
	for (size_t i = 0; i < prof_attr_count(r); i++) {
		const struct prof_attr *a = prof_attr_at(r, i);
		if ((a->sample_type & PROF_SAMPLE_CALLCHAIN) && !(a->flags & (1u << 5 | 1u << 21)))
			return true;
	}
	return false;
}

static void stop_namer(struct smp *s, bool finish);

static void arena_free(struct arena_block *b)
{
	for (struct arena_block *next; b; b = next) {
		next = b->next;
		free(b);
	}
}

void smp_free(struct smp *s)
{
	if (!s)
		return;
	stop_namer(s, false);
	prof_queue_free(s->q);
	prof_stacks_free(s->ps);
	free(s->ids);
	free(s->tab);
	free(s->named);
	arena_free(s->arena);
	arena_free(s->namer_arena);
	if (s->ksyms_state == KSYMS_READING)
		pthread_join(s->ksyms_thread, NULL);
	free(s->ksyms.text);
	free(s->ksyms.sym);
	sym_files_free(s->files); /* after the names printed from it */
	for (size_t i = 0; i < s->njit_maps; i++)
		sym_perfmap_close(s->jit_maps[i].map);
	free(s->jit_maps);
	free(s->jit_seen);
	if (s->ring.buf) {
		pthread_mutex_destroy(&s->ring.lock);
		pthread_cond_destroy(&s->ring.data);
		pthread_cond_destroy(&s->ring.room);
		free(s->ring.buf);
	}
	free(s);
}

static void *arena_alloc(struct arena_block **arena, size_t len)
{
	len = (len + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	struct arena_block *b = *arena;
	if (!b || b->size - b->used < len) {
		size_t size = len > 65536 ? len : 65536;
		if (!(b = malloc(sizeof(*b) + size)))
			return NULL;
		*b = (struct arena_block){ *arena, 0, size };
		*arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += len;
	return p;
}

static const char *arena_str(struct arena_block **arena, const char *str)
{
	if (!str)
		return NULL;
	size_t n = strlen(str) + 1;
	char *d = arena_alloc(arena, n);
	if (d)
		memcpy(d, str, n);
	return d;
}

/* ---- Kernel symbols ----------------------------------------------------- */

static int ksym_cmp(const void *a, const void *b)
{
	const struct kernel_sym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* One line of /proc/kallsyms ("ADDR t NAME[\tMODULE]"): its text symbol
 * into S (the name into the pool), others ignored. False when memory ran
 * out. */
static bool kallsyms_line(struct kernel_syms *ks, const char *p, const char *end)
{
	uint64_t addr = 0;
	const char *q = p;
	for (; q < end; q++) {
		int d = *q >= '0' && *q <= '9' ? *q - '0' : *q >= 'a' && *q <= 'f' ? *q - 'a' + 10 : -1;
		if (d < 0)
			break;
		addr = addr << 4 | (uint64_t)d;
	}
	if (!addr || end - q < 4 || q[0] != ' ' || (q[1] != 't' && q[1] != 'T') || q[2] != ' ')
		return true;
	const char *name = q + 3, *e = name;
	while (e < end && *e != '\t' && *e != ' ')
		e++;
	size_t len = (size_t)(e - name);
	struct kernel_sym *sym = base_grow(ks->sym, &ks->cap, ks->n + 1, sizeof(*sym), 65536);
	if (!sym)
		return false;
	ks->sym = sym;
	char *text = base_grow(ks->text, &ks->captext, ks->ntext + len + 1, 1, 1 << 20);
	if (!text)
		return false;
	ks->text = text;
	memcpy(ks->text + ks->ntext, name, len);
	ks->text[ks->ntext + len] = 0;
	ks->sym[ks->n++] = (struct kernel_sym){ addr, ks->ntext };
	ks->ntext += len + 1;
	return true;
}

/* /proc/kallsyms's text symbols, by address. The kernel makes the text
 * as it is read (120k lines here, some 20 ms of system time), so it runs
 * on a thread of its own from the start, while samples are read. */
static void *read_kallsyms(void *arg)
{
	struct kernel_syms *ks = arg;
	int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char buf[65536];
	size_t have = 0;
	bool ok = true;
	for (;;) {
		ssize_t k = read(fd, buf + have, sizeof(buf) - have);
		if (k <= 0)
			break;
		have += (size_t)k;
		const char *p = buf, *end = buf + have, *nl;
		while (ok && (nl = memchr(p, '\n', (size_t)(end - p)))) {
			ok = kallsyms_line(ks, p, nl);
			p = nl + 1;
		}
		if (!ok || p == buf) /* memory ran out, or a line longer than the buffer */
			break;
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
	close(fd);
	bool sorted = true;
	for (size_t i = 1; i < ks->n && sorted; i++)
		sorted = ks->sym[i - 1].addr <= ks->sym[i].addr;
	if (!sorted) /* module symbols may come before core ones */
		qsort(ks->sym, ks->n, sizeof(*ks->sym), ksym_cmp);
	return NULL;
}

static void start_kallsyms(struct smp *s)
{
	if (s->ksyms_state != KSYMS_NONE)
		return;
	s->ksyms_state = pthread_create(&s->ksyms_thread, NULL, read_kallsyms, &s->ksyms) == 0
				 ? KSYMS_READING
				 : KSYMS_READY;
	if (s->ksyms_state == KSYMS_READY)
		read_kallsyms(&s->ksyms);
}

static bool kernel_symbol(struct smp *s, uint64_t addr, struct bk_symbol *out)
{
	start_kallsyms(s);
	if (s->ksyms_state == KSYMS_READING) {
		pthread_join(s->ksyms_thread, NULL);
		s->ksyms_state = KSYMS_READY;
	}
	const struct kernel_syms *ks = &s->ksyms;
	size_t lo = BASE_COUNT_LE(ks->sym, ks->n, addr, addr);
	if (lo == 0)
		return false;
	*out = (struct bk_symbol){ .function = ks->text + ks->sym[lo - 1].name,
				   .offset = addr - ks->sym[lo - 1].addr };
	return true;
}

/* ---- The ring ------------------------------------------------------------- */

static void consume(struct smp *s, const uint8_t *m);

/* Make what was written visible to the namer. */
static void publish(struct smp *s)
{
	struct ring *r = &s->ring;
	pthread_mutex_lock(&r->lock);
	if (r->head != r->wpos) {
		r->head = r->wpos;
		pthread_cond_signal(&r->data);
	}
	pthread_mutex_unlock(&r->lock);
}

/* Room for a message of LEN bytes (a multiple of 8, at most a quarter of
 * the ring) at the write position, waiting for the namer to make it; a
 * pointer to it. Unthreaded: the start of the ring, every time. */
static uint8_t *reserve(struct smp *s, size_t len)
{
	struct ring *r = &s->ring;
	if (!s->threaded)
		return r->buf;
	size_t at = (size_t)(r->wpos % RING_SIZE);
	size_t pad = RING_SIZE - at < len ? RING_SIZE - at : 0;
	pthread_mutex_lock(&r->lock);
	if (r->wpos + pad + len - r->tail > RING_SIZE) {
		r->head = r->wpos; /* what the namer must take to make room */
		pthread_cond_signal(&r->data);
		while (r->wpos + pad + len - r->tail > RING_SIZE)
			pthread_cond_wait(&r->room, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	if (pad) {
		*(uint32_t *)(r->buf + at) = MSG_WRAP;
		r->wpos += pad;
		at = 0;
	}
	return r->buf + at;
}

/* The message of LEN bytes reserved is written. */
static void commit(struct smp *s, size_t len)
{
	struct ring *r = &s->ring;
	if (!s->threaded) {
		consume(s, r->buf);
		return;
	}
	r->wpos += len;
	if (r->wpos - r->head >= PUBLISH_BYTES) /* head: a stale read is harmless */
		publish(s);
}

static void *namer_main(void *arg)
{
	struct smp *s = arg;
	struct ring *r = &s->ring;
	uint64_t pos = 0;
	for (;;) {
		pthread_mutex_lock(&r->lock);
		r->tail = pos;
		pthread_cond_signal(&r->room);
		while (r->head == pos && !r->done)
			pthread_cond_wait(&r->data, &r->lock);
		uint64_t head = r->head;
		bool done = r->done, finish = r->finish;
		pthread_mutex_unlock(&r->lock);
		if (head == pos && done) {
			if (finish)
				s->o->pr->end();
			return NULL;
		}
		while (pos < head) {
			const uint8_t *m = r->buf + pos % RING_SIZE;
			uint32_t type = *(const uint32_t *)m;
			size_t len = type == MSG_WRAP ? RING_SIZE - pos % RING_SIZE
				   : type == MSG_NAME ? sizeof(struct msg_name)
				   : (sizeof(struct msg_sample) +
				      ((const struct msg_sample *)m)->n * sizeof(uint32_t) + 7) & ~(size_t)7;
			if (type != MSG_WRAP)
				consume(s, m);
			pos += len;
			if (pos - r->tail >= PUBLISH_BYTES) { /* room for the reader */
				pthread_mutex_lock(&r->lock);
				r->tail = pos;
				pthread_cond_signal(&r->room);
				pthread_mutex_unlock(&r->lock);
			}
		}
	}
}

/* No more messages: the namer finishes what it has (then calls the
 * printer's end when FINISH) and is joined. Unthreaded: the end here. */
static void stop_namer(struct smp *s, bool finish)
{
	struct ring *r = &s->ring;
	if (!s->threaded) {
		if (finish)
			s->o->pr->end();
		return;
	}
	pthread_mutex_lock(&r->lock);
	r->head = r->wpos;
	r->done = true;
	r->finish = finish;
	pthread_cond_signal(&r->data);
	pthread_mutex_unlock(&r->lock);
	pthread_join(s->namer, NULL);
	s->threaded = false;
}

/* ---- The namer ------------------------------------------------------------- */

#define MAX_JIT_RELOADS 64 /* per process: a growing map read again at most so often */

static const char *perf_map_path(int32_t pid, char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/perf-%d.map", (int)pid);
	return buf;
}

/* Whether process PID has a perf map (the reader's side; asked once). */
static bool has_perf_map(struct smp *s, int32_t pid)
{
	for (size_t i = 0; i < s->njit_seen; i++)
		if (s->jit_seen[i].pid == pid)
			return s->jit_seen[i].has;
	char path[64];
	struct stat st;
	bool has = stat(perf_map_path(pid, path, sizeof(path)), &st) == 0 && S_ISREG(st.st_mode);
	struct jit_seen *v = base_grow(s->jit_seen, &s->capjit_seen, s->njit_seen + 1,
				       sizeof(*v), 16);
	if (v) {
		s->jit_seen = v;
		v[s->njit_seen++] = (struct jit_seen){ pid, has };
	}
	return has;
}

/* JIT code of process PID named from its perf map (the namer's side). */
static int jit_symbol(struct smp *s, int32_t pid, uint64_t pc, struct bk_symbol *out)
{
	struct jit_map *j = NULL;
	for (size_t i = 0; i < s->njit_maps && !j; i++)
		if (s->jit_maps[i].pid == pid)
			j = &s->jit_maps[i];
	if (!j) {
		struct jit_map *v = base_grow(s->jit_maps, &s->capjit_maps, s->njit_maps + 1,
					      sizeof(*v), 16);
		if (!v)
			return 0;
		s->jit_maps = v;
		j = &v[s->njit_maps++];
		*j = (struct jit_map){ .pid = pid, .size = -1 };
	}
	if (j->map && sym_perfmap_lookup(j->map, pc, out))
		return 1;
	/* Not there (yet): read the map again if it grew. Names handed out
	 * before point into the old map's text: it is kept, not freed. */
	char path[64];
	struct stat st;
	if (j->reloads >= MAX_JIT_RELOADS || stat(perf_map_path(pid, path, sizeof(path)), &st) != 0 ||
	    st.st_size == j->size)
		return 0;
	struct sym_perfmap *m = NULL;
	if (sym_perfmap_open(path, &m) != 0)
		return 0;
	j->reloads++;
	j->size = st.st_size;
	if (j->map) { /* still named from: park it with a dead pid */
		struct jit_map *v = base_grow(s->jit_maps, &s->capjit_maps, s->njit_maps + 1,
					      sizeof(*v), 16);
		if (!v) {
			sym_perfmap_close(m);
			return 0;
		}
		ptrdiff_t at = j - s->jit_maps;
		s->jit_maps = v;
		j = &v[at];
		v[s->njit_maps++] = (struct jit_map){ .pid = -1, .map = j->map };
	}
	j->map = m;
	return sym_perfmap_lookup(m, pc, out);
}

static void name_frame(struct smp *s, const struct msg_name *m)
{
	struct named *nn = base_grow(s->named, &s->capnamed, s->nnamed + 1, sizeof(*nn), 4096);
	if (!nn)
		return; /* its samples show the PC alone */
	s->named = nn;
	struct named *n = &s->named[s->nnamed++];
	*n = (struct named){ .pc = m->pc, .tag = m->tag, .module = m->module,
			     .module_off = m->module_off };
	struct bk_symbol syms[MAX_INLINE];
	int nsym = 0;
	if (s->o->no_symbols)
		nsym = 0;
	else if (m->tag & TAG_KERNEL)
		nsym = kernel_symbol(s, m->pc, &syms[0]);
	else if (m->has_jit_sym) {
		syms[0] = m->jit_sym;
		nsym = 1;
	}
	else if (m->path) {
		struct sym_file *f = sym_files_get(s->files, m->path);
		nsym = f ? sym_describe(f, m->link, syms, MAX_INLINE) : 0;
	} else if (m->jit_pid) {
		nsym = jit_symbol(s, m->jit_pid, m->tag ? m->pc : m->pc - 1, &syms[0]);
	}
	/* The strings are the file's or the kernel table's: they live as
	 * long as this. */
	if (nsym > 0 && (n->syms = arena_alloc(&s->namer_arena, (size_t)nsym * sizeof(*syms)))) {
		memcpy(n->syms, syms, (size_t)nsym * sizeof(*syms));
		n->nsym = nsym;
	}
}

static void print_sample(struct smp *s, const struct msg_sample *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t key = m->keys[i];
		if (key > s->nnamed) { /* naming ran out of memory */
			s->frames[i] = (struct fr_frame){ .how = BK_HOW_CFI };
			continue;
		}
		const struct named *n = &s->named[key - 1];
		s->frames[i] = (struct fr_frame){
			.pc = n->pc,
			.how = n->tag & (TAG_FIRST | TAG_KERNEL) ? BK_HOW_INITIAL : BK_HOW_CFI,
			.module = n->module, .module_off = n->module_off,
			.syms = n->syms, .nsym = n->nsym, .key = key };
	}
	struct fr_stack st = {
		.pid = m->pid, .tid = m->tid, .name = m->comm, .time = m->time, .cpu = m->cpu,
		.period = m->period, .event = m->event, .f = s->frames, .n = m->n,
		.began = true, .error = m->error,
	};
	s->o->pr->stack(&st, s->printed++);
}

static void consume(struct smp *s, const uint8_t *m)
{
	if (*(const uint32_t *)m == MSG_NAME)
		name_frame(s, (const struct msg_name *)m);
	else
		print_sample(s, (const struct msg_sample *)m);
}

/* ---- Frame keys (the reader) ------------------------------------------------- */

static uint64_t frame_hash(uint64_t map, uint64_t pc, uint8_t tag, uint32_t jit)
{
	uint64_t h = (map * 0x9e3779b97f4a7c15ull) ^ pc ^ ((uint64_t)tag << 60) ^
		     ((uint64_t)jit << 28);
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

static bool tab_grow(struct smp *s)
{
	size_t cap = s->tabcap ? s->tabcap * 2 : 4096;
	uint32_t *t = calloc(cap, sizeof(*t));
	if (!t)
		return false;
	for (size_t i = 0; i < s->nids; i++) {
		const struct key_id *n = &s->ids[i];
		size_t j = frame_hash(n->map, n->pc, n->tag, n->jit) & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = (uint32_t)i + 1;
	}
	free(s->tab);
	s->tab = t;
	s->tabcap = cap;
	return true;
}

/* The key of the frame at PC reached as TAG in the process of walk W
 * (kernel frames: W NULL), told to the namer when new; 0 when memory ran
 * out. */
static uint32_t frame_key(struct smp *s, const struct prof_walk *w, int32_t pid, uint64_t pc,
			  uint8_t tag)
{
	uint64_t map = w ? w->map : 0;
	/* JIT code a jitdump describes (outside every file: V8 also lists its
	 * builtins, which its executable's symbols name): which code is there
	 * at the sample's time is part of the key. */
	struct uw_jd_symbol jd;
	bool is_jit = !(tag & TAG_KERNEL) && w && w->space && w->space->jitdumps &&
		      !uw_space_find(w->space, tag ? pc : pc - 1) &&
		      uw_jitdump_symbol(w->space, tag ? pc : pc - 1, &jd);
	uint32_t jit = is_jit ? jd.seq + 1 : 0;
	if ((s->nids + 1) * 2 > s->tabcap && !tab_grow(s))
		return 0;
	size_t j = frame_hash(map, pc, tag, jit) & (s->tabcap - 1);
	for (; s->tab[j]; j = (j + 1) & (s->tabcap - 1)) {
		const struct key_id *n = &s->ids[s->tab[j] - 1];
		if (n->pc == pc && n->map == map && n->tag == tag && n->jit == jit)
			return s->tab[j];
	}
	struct key_id *ids = base_grow(s->ids, &s->capids, s->nids + 1, sizeof(*ids), 4096);
	if (!ids)
		return 0;
	s->ids = ids;
	s->ids[s->nids] = (struct key_id){ map, pc, tag, jit };
	struct msg_name *m = (struct msg_name *)reserve(s, sizeof(struct msg_name));
	*m = (struct msg_name){ .type = MSG_NAME, .key = (uint32_t)s->nids + 1, .pc = pc, .tag = tag };
	if (is_jit) {
		/* Named here: the jitdump goes with its process's space. */
		uint64_t lookup = tag ? pc : pc - 1;
		m->module = arena_str(&s->arena, jd.path);
		m->module_off = pc - jd.start;
		m->has_jit_sym = true;
		m->jit_sym = (struct bk_symbol){
			.function = arena_str(&s->arena, jd.name), .offset = lookup - jd.start,
			.file = jd.file ? arena_str(&s->arena, jd.file) : NULL, .line = jd.line,
			.column = jd.column };
	} else if (tag & TAG_KERNEL) {
		m->module = "[kernel.kallsyms]";
		m->module_off = pc;
	} else if (w && w->space) {
		/* An interrupted frame is named at its PC; a return address at
		 * PC - 1, the call. */
		uint64_t lookup = tag ? pc : pc - 1;
		struct bk_module_info mi;
		if (bk_space_module_at(w->space, lookup, &mi) == 0) {
			m->module = arena_str(&s->arena, mi.path);
			m->module_off = pc - mi.start;
			if (m->module && !strcmp(m->module, "[vdso]") && !s->vdso_tried) {
				/* No file: its image goes to the namer's files first. */
				const uint8_t *bytes;
				size_t len;
				s->vdso_tried = true;
				if (prof_stacks_image(s->ps, "[vdso]", &bytes, &len))
					sym_files_add_image(s->files, "[vdso]", bytes, len, mi.bias);
			}
			if (m->module && m->module[0] && m->module[0] != '[') {
				m->path = m->module;
				m->link = lookup - (uint64_t)mi.bias;
			} else if (m->module && !strcmp(m->module, "[vdso]")) {
				m->path = m->module;
				m->link = lookup - (uint64_t)mi.bias;
			}
		}
		/* Code no file holds: JIT code, named by the process's perf
		 * map as perf script names it. */
		if (!m->path && pid > 0 && has_perf_map(s, pid)) {
			char path[64];
			m->module = arena_str(&s->arena, perf_map_path(pid, path, sizeof(path)));
			m->module_off = pc;
			m->jit_pid = pid;
		}
	}
	commit(s, sizeof(struct msg_name));
	s->tab[j] = (uint32_t)++s->nids;
	return s->tab[j];
}

/* ---- Samples ---------------------------------------------------------- */

/* The kernel frames of a callchain (the entries after PERF_CONTEXT_KERNEL
 * up to the next context marker) as keys into K; how many, or -1 when
 * memory ran out. */
static int kernel_frames(struct smp *s, const struct prof_sample *smp, uint32_t *k, size_t max)
{
	size_t n = 0;
	bool in_kernel = false;
	for (uint64_t i = 0; i < smp->callchain_nr && n < max; i++) {
		uint64_t ip = smp->callchain[i];
		if (ip >= PERF_CONTEXT_MAX) {
			in_kernel = ip == PERF_CONTEXT_KERNEL;
			continue;
		}
		if (!in_kernel)
			continue;
		if (!(k[n++] = frame_key(s, NULL, 0, ip, TAG_KERNEL)))
			return -1;
	}
	return (int)n;
}

static void count_reason(struct smp *s, const char *reason)
{
	for (size_t i = 0; i < sizeof(s->reasons) / sizeof(s->reasons[0]); i++) {
		if (!s->reasons[i].reason)
			s->reasons[i].reason = reason;
		if (s->reasons[i].reason == reason || !strcmp(s->reasons[i].reason, reason)) {
			s->reasons[i].n++;
			return;
		}
	}
	s->reason_other++;
}

/* NAME in the reader's arena: the last one again, or a copy. */
static const char *event_name(struct smp *s, const char *name)
{
	if (!s->event || strcmp(s->event, name))
		s->event = arena_str(&s->arena, name);
	return s->event ? s->event : "cpu-clock";
}

static int sample(struct smp *s, struct prof_reader *r, const struct prof_record *rec)
{
	const struct smp_opts *o = s->o;
	if ((o->pid && rec->pid != o->pid) || (o->tid && rec->tid != o->tid)) {
		s->skipped++;
		return 0;
	}
	struct prof_walk w;
	int n = prof_stacks_walk(s->ps, rec, s->pcs, s->interrupted, MAX_FRAMES, &w);
	if (n < 0)
		return n;
	if (o->comm && strcmp(o->comm, w.comm)) {
		s->skipped++;
		return 0;
	}
	if (w.ended && w.reason)
		count_reason(s, w.reason);
	int nk = o->kernel ? kernel_frames(s, &rec->sample, s->keys, MAX_FRAMES) : 0;
	if (nk < 0)
		return BK_E_NOMEM;
	size_t nf = (size_t)nk;
	for (int k = 0; k < n; k++) {
		uint8_t tag = k == 0 ? TAG_FIRST | TAG_INTERRUPTED
				     : s->interrupted[k] ? TAG_INTERRUPTED : TAG_RETURN;
		if (!(s->keys[nf++] = frame_key(s, &w, rec->pid, s->pcs[k], tag)))
			return BK_E_NOMEM;
	}
	const struct prof_attr *attr = rec->attr >= 0 ? prof_attr_at(r, (size_t)rec->attr) : NULL;
	size_t len = (sizeof(struct msg_sample) + nf * sizeof(uint32_t) + 7) & ~(size_t)7;
	struct msg_sample *m = (struct msg_sample *)reserve(s, len);
	*m = (struct msg_sample){
		.type = MSG_SAMPLE, .n = (uint32_t)nf, .pid = rec->pid, .tid = rec->tid,
		.cpu = rec->cpu, .error = w.ended, .time = rec->time, .period = rec->sample.period,
		.event = event_name(s, attr && attr->name ? attr->name : "cpu-clock"),
	};
	strncpy(m->comm, w.comm, sizeof(m->comm) - 1);
	memcpy(m->keys, s->keys, nf * sizeof(uint32_t));
	commit(s, len);
	return 0;
}

/* Every second on a terminal: how far the input is. */
static void progress(struct smp *s, const struct prof_reader *r, const struct prof_record *rec)
{
	uint64_t done = prof_stacks_stats(s->ps)->samples;
	if (!s->tty || done < s->next_check)
		return;
	s->next_check = done + 4096;
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	double secs = (double)(t.tv_sec - s->t0.tv_sec) + (t.tv_nsec - s->t0.tv_nsec) / 1e9;
	if (secs < 1)
		return;
	s->progress_shown = true;
	if (!prof_is_pipe(r) && r->src_len)
		fprintf(stderr, "\rbackstep: %llu samples, %.0f%% of the file ", (unsigned long long)done,
			100.0 * (double)rec->offset / (double)r->src_len);
	else
		fprintf(stderr, "\rbackstep: %llu samples ", (unsigned long long)done);
}

/* The clock of the recording's times: its events' clockid when they all
 * have the same, else -1 (perf's own). */
static int32_t recording_clock(const struct prof_reader *r)
{
	int32_t clock = -1;
	for (size_t i = 0; i < prof_attr_count(r); i++) {
		int32_t c = prof_attr_at(r, i)->clockid;
		if (i && c != clock)
			return -1;
		clock = c;
	}
	return clock;
}

/* The records the queue made final, in time order. */
static int release(struct smp *s, struct prof_reader *r, bool end)
{
	if (!s->clock_known) {
		s->clock_known = true;
		prof_stacks_set_clock(s->ps, recording_clock(r));
	}
	size_t k = prof_queue_round(s->q, end);
	int err = 0;
	for (size_t i = 0; i < k && !err; i++) {
		struct prof_record rec;
		err = prof_queue_get(s->q, r, i, &rec);
		if (err == 1)
			err = 0; /* decoded */
		if (err)
			break;
		if (rec.kind == PROF_SAMPLE)
			err = sample(s, r, &rec);
		else
			err = prof_stacks_event(s->ps, &rec);
		if (i % 256 == 0)
			progress(s, r, &rec);
	}
	prof_queue_drop_ready(s->q);
	if (s->threaded)
		publish(s);
	return err;
}

int smp_feed(struct smp *s, struct prof_reader *r, const struct prof_record *rec)
{
	switch (rec->kind) {
	case PROF_LOST:
		s->lost += rec->lost.lost;
		return 0;
	case PROF_FINISHED_ROUND:
		return release(s, r, false);
	case PROF_SAMPLE:
	case PROF_MMAP:
	case PROF_COMM:
	case PROF_FORK:
	case PROF_EXIT:
	case PROF_BUILD_ID: /* a stream's, or perf inject -b's after its MMAP */
		return prof_queue_push(s->q, r, rec);
	default:
		return 0;
	}
}

int smp_finish(struct smp *s, struct prof_reader *r)
{
	int err = release(s, r, true);
	stop_namer(s, true);
	out_flush();
	if (s->progress_shown)
		fprintf(stderr, "\r\033[K");
	return err;
}

void smp_summary(const struct smp *s, FILE *f, const char *who)
{
	const struct prof_stack_stats *st = prof_stacks_stats(s->ps);
	fprintf(f, "%s: %llu samples read, %llu walked to the end, %llu truncated", who,
		(unsigned long long)st->samples, (unsigned long long)st->complete,
		(unsigned long long)st->truncated);
	const char *sep = " (";
	for (size_t i = 0; i < sizeof(s->reasons) / sizeof(s->reasons[0]) && s->reasons[i].reason; i++, sep = ", ")
		fprintf(f, "%s%s: %llu", sep, s->reasons[i].reason,
			(unsigned long long)s->reasons[i].n);
	if (s->reason_other)
		fprintf(f, "%sother: %llu", sep, (unsigned long long)s->reason_other);
	if (sep[0] == ',')
		fputc(')', f);
	fprintf(f,
		", %llu without user registers, %llu without a stack copy; %llu filtered out; "
		"%llu lost (the kernel's count)\n",
		(unsigned long long)st->no_regs, (unsigned long long)st->no_stack,
		(unsigned long long)s->skipped, (unsigned long long)s->lost);
	if (ldr_debuginfod_problem())
		fprintf(f, "%s: warning: %s\n", who, ldr_debuginfod_problem());
	/* Files that are not the ones perf recorded (build-id): not used. */
	if (st->build_id_differs) {
		fprintf(f, "%s: %llu file%s from the recording (build-id), not used", who,
			(unsigned long long)st->build_id_differs,
			st->build_id_differs == 1 ? " differs" : "s differ");
		const char *path;
		for (size_t i = 0; (path = prof_stacks_differing(s->ps, i)); i++)
			fprintf(f, "%s%s", i ? ", " : ": ", path);
		fputc('\n', f);
	}
}

/* ---- Options report and record share ---------------------------------------- */

int smp_option(int ch, const char *arg, struct smp_opts *o, const char **output)
{
	uint64_t v;
	switch (ch) {
	case 'f':
		if (!(o->pr = fr_sample_printer(arg))) {
			cli_error("--format", "'%s' is not one of " FR_SAMPLE_FORMATS, arg);
			return -1;
		}
		return 1;
	case 'o':
		*output = arg;
		return 1;
	case SMP_OPT_PID:
	case SMP_OPT_TID:
		if (!cli_parse_u64(arg, &v) || v == 0 || v > 0x7fffffff) {
			cli_error(ch == SMP_OPT_PID ? "--pid" : "--tid", "'%s' is not a process id", arg);
			return -1;
		}
		*(ch == SMP_OPT_PID ? &o->pid : &o->tid) = (int)v;
		return 1;
	case 'c':
		o->comm = arg;
		return 1;
	case SMP_OPT_NO_INLINE:
		fr_set_inline(false);
		return 1;
	case 'n':
		o->no_symbols = true;
		return 1;
	case SMP_OPT_NO_DEBUGINFOD:
		ldr_debuginfod_off();
		return 1;
	case SMP_OPT_KERNEL:
	case SMP_OPT_NO_KERNEL:
		o->kernel = ch == SMP_OPT_KERNEL;
		o->kernel_given = true;
		return 1;
	default:
		return 0;
	}
}
