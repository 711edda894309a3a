/* From sample records to printed stacks (samples.h).
 *
 * Naming is what a profile's reader spends its time on when it names
 * every frame of every sample: the same few thousand PCs recur in every
 * sample. So a frame is named once: a table maps (the process's module
 * map, PC, how the frame was reached) to a frame key, the frame's module
 * and symbols are copied once into an arena (they outlive the process's
 * space), and printers keep the text they make per key (fr_frame.key).
 * Kernel frames are keyed the same way, under map 0 with a tag of their
 * own. Memory grows with distinct frames, not with samples. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "out.h"
#include "samples.h"

#include "../src/base/base.h"
#include "../src/profile/prof_stack.h"

#define MAX_FRAMES 1024
#define MAX_INLINE 16
#define PERF_CONTEXT_KERNEL ((uint64_t)-128)
#define PERF_CONTEXT_MAX ((uint64_t)-4095)

/* How a frame was reached, part of its key: the first frame is named at
 * its PC and is "initial"; an interrupted frame under a signal frame is
 * named at its PC; a return address at PC - 1. */
enum { TAG_RETURN = 0, TAG_INTERRUPTED = 1, TAG_FIRST = 2, TAG_KERNEL = 4 };

/* A distinct frame: the key is its index + 1. */
struct named {
	uint64_t map, pc;
	uint8_t tag;
	const char *module;
	uint64_t module_off;
	struct bk_symbol *syms;
	int nsym;
};

/* Strings and symbol arrays of named frames: blocks never moved. */
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

struct smp {
	const struct smp_opts *o;
	struct prof_stacks *ps;
	struct prof_queue *q;
	struct named *named;
	size_t nnamed, capnamed;
	uint32_t *tab;             /* key; 0: empty */
	size_t tabcap;
	struct arena_block *arena;
	/* Kernel symbols from /proc/kallsyms (this machine's kernel: a
	 * recording made here), read from the start when the recording has
	 * kernel callchains, else on the first kernel frame. */
	struct kernel_syms ksyms;
	int ksyms_state;
	pthread_t ksyms_thread;
	struct reason_count reasons[8];
	uint64_t shown, skipped, lost, reason_other;
	/* Progress on a terminal. */
	bool tty;
	struct timespec t0;
	uint64_t next_check;
	bool progress_shown;
	/* One sample's frames. */
	uint64_t pcs[MAX_FRAMES];
	uint8_t interrupted[MAX_FRAMES];
	struct fr_frame frames[2 * MAX_FRAMES];
};

static void start_kallsyms(struct smp *s);

int smp_new(enum bk_arch arch, const struct smp_opts *o, bool kernel_callchains,
	    struct smp **out)
{
	struct smp *s = calloc(1, sizeof(*s));
	if (!s)
		return BK_E_NOMEM;
	s->o = o;
	if (prof_stacks_new(arch, &s->ps) != 0 || prof_queue_new(&s->q) != 0) {
		smp_free(s);
		return BK_E_NOMEM;
	}
	if (o->kernel && !o->no_symbols && kernel_callchains)
		start_kallsyms(s);
	s->tty = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &s->t0);
	o->pr->begin();
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

void smp_free(struct smp *s)
{
	if (!s)
		return;
	prof_queue_free(s->q);
	prof_stacks_free(s->ps);
	free(s->named);
	free(s->tab);
	for (struct arena_block *b = s->arena, *next; b; b = next) {
		next = b->next;
		free(b);
	}
	if (s->ksyms_state == KSYMS_READING)
		pthread_join(s->ksyms_thread, NULL);
	free(s->ksyms.text);
	free(s->ksyms.sym);
	free(s);
}

static void *arena_alloc(struct smp *s, size_t len)
{
	len = (len + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	struct arena_block *b = s->arena;
	if (!b || b->size - b->used < len) {
		size_t size = len > 65536 ? len : 65536;
		if (!(b = malloc(sizeof(*b) + size)))
			return NULL;
		*b = (struct arena_block){ s->arena, 0, size };
		s->arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += len;
	return p;
}

static const char *arena_str(struct smp *s, const char *str)
{
	if (!str)
		return NULL;
	size_t n = strlen(str) + 1;
	char *d = arena_alloc(s, n);
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

/* ---- Named frames --------------------------------------------------------- */

static uint64_t frame_hash(uint64_t map, uint64_t pc, uint8_t tag)
{
	uint64_t h = (map * 0x9e3779b97f4a7c15ull) ^ pc ^ ((uint64_t)tag << 60);
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
	for (size_t i = 0; i < s->nnamed; i++) {
		const struct named *n = &s->named[i];
		size_t j = frame_hash(n->map, n->pc, n->tag) & (cap - 1);
		while (t[j])
			j = (j + 1) & (cap - 1);
		t[j] = (uint32_t)i + 1;
	}
	free(s->tab);
	s->tab = t;
	s->tabcap = cap;
	return true;
}

/* The frame at PC reached as TAG in the process of walk W (kernel frames:
 * W NULL), named once: its key, or 0 (then *TMP is filled for this
 * sample only) when memory ran out. */
static uint32_t frame_key(struct smp *s, const struct prof_walk *w, uint64_t pc, uint8_t tag)
{
	uint64_t map = w ? w->map : 0;
	if ((s->nnamed + 1) * 2 > s->tabcap && !tab_grow(s))
		return 0;
	size_t j = frame_hash(map, pc, tag) & (s->tabcap - 1);
	for (; s->tab[j]; j = (j + 1) & (s->tabcap - 1)) {
		const struct named *n = &s->named[s->tab[j] - 1];
		if (n->pc == pc && n->map == map && n->tag == tag)
			return s->tab[j];
	}
	struct named *nn = base_grow(s->named, &s->capnamed, s->nnamed + 1, sizeof(*nn), 4096);
	if (!nn)
		return 0;
	s->named = nn;
	struct named *n = &s->named[s->nnamed];
	*n = (struct named){ .map = map, .pc = pc, .tag = tag };
	struct bk_symbol syms[MAX_INLINE];
	int nsym = 0;
	if (tag & TAG_KERNEL) {
		n->module = "[kernel.kallsyms]";
		n->module_off = pc;
		nsym = !s->o->no_symbols && kernel_symbol(s, pc, &syms[0]);
	} else if (w && w->space) {
		/* An interrupted frame is named at its PC; a return address at
		 * PC - 1, the call. */
		uint64_t lookup = tag ? pc : pc - 1;
		struct bk_module_info mi;
		if (bk_space_module_at(w->space, lookup, &mi) == 0) {
			n->module = arena_str(s, mi.path);
			n->module_off = pc - mi.start;
		}
		if (!s->o->no_symbols)
			nsym = bk_space_symbolize(w->space, lookup, syms, MAX_INLINE);
	}
	if (nsym > 0 && (n->syms = arena_alloc(s, (size_t)nsym * sizeof(*syms)))) {
		for (int i = 0; i < nsym; i++) {
			n->syms[i] = syms[i];
			n->syms[i].function = arena_str(s, syms[i].function);
			n->syms[i].file = arena_str(s, syms[i].file);
		}
		n->nsym = nsym;
	}
	s->tab[j] = (uint32_t)++s->nnamed;
	return s->tab[j];
}

static void frame_of(const struct smp *s, uint32_t key, struct fr_frame *f)
{
	const struct named *n = &s->named[key - 1];
	*f = (struct fr_frame){ .pc = n->pc,
				.how = n->tag & (TAG_FIRST | TAG_KERNEL) ? BK_HOW_INITIAL : BK_HOW_CFI,
				.module = n->module, .module_off = n->module_off,
				.syms = n->syms, .nsym = n->nsym, .key = key };
}

/* ---- Samples ---------------------------------------------------------- */

/* The kernel frames of a callchain (the entries after PERF_CONTEXT_KERNEL
 * up to the next context marker). */
static size_t kernel_frames(struct smp *s, const struct prof_sample *smp, struct fr_frame *f,
			    size_t max)
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
		uint32_t key = frame_key(s, NULL, ip, TAG_KERNEL);
		if (key)
			frame_of(s, key, &f[n]);
		else
			f[n] = (struct fr_frame){ .pc = ip, .how = BK_HOW_INITIAL,
						  .module = "[kernel.kallsyms]", .module_off = ip };
		n++;
	}
	return n;
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
	size_t nf = o->kernel ? kernel_frames(s, &rec->sample, s->frames, MAX_FRAMES) : 0;
	for (int k = 0; k < n; k++) {
		uint8_t tag = k == 0 ? TAG_FIRST | TAG_INTERRUPTED
				     : s->interrupted[k] ? TAG_INTERRUPTED : TAG_RETURN;
		uint32_t key = frame_key(s, &w, s->pcs[k], tag);
		if (key)
			frame_of(s, key, &s->frames[nf++]);
		else /* out of memory: the PC alone */
			s->frames[nf++] = (struct fr_frame){ .pc = s->pcs[k],
							     .how = k ? BK_HOW_CFI : BK_HOW_INITIAL };
	}
	const struct prof_attr *attr = rec->attr >= 0 ? prof_attr_at(r, (size_t)rec->attr) : NULL;
	struct fr_stack st = {
		.pid = rec->pid, .tid = rec->tid, .name = w.comm, .time = rec->time,
		.cpu = rec->cpu, .period = rec->sample.period,
		.event = attr && attr->name ? attr->name : "cpu-clock",
		.f = s->frames, .n = nf, .began = true, .error = w.ended,
	};
	o->pr->stack(&st, s->shown++);
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

/* The records the queue made final, in time order. */
static int release(struct smp *s, struct prof_reader *r, bool end)
{
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
	s->o->pr->end();
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
	case SMP_OPT_KERNEL:
	case SMP_OPT_NO_KERNEL:
		o->kernel = ch == SMP_OPT_KERNEL;
		o->kernel_given = true;
		return 1;
	default:
		return 0;
	}
}
