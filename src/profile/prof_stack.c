/* From samples to stacks: the processes of a recording as address spaces,
 * each sample's user stack walked in its process's space.
 *
 * A process is a space whose modules are the files its MMAP records named
 * (applied in time order, see "Time order" below, so a sample sees the
 * map as it was then) and whose memory is the stack copy of the sample
 * being walked, handed to the PC-only walk as its window (read with plain
 * loads). The space lives as long as the process: its files, rule table,
 * memo and symbols serve every sample of it. FORK gives the child the
 * parent's modules; exec (COMM with PERF_RECORD_MISC_COMM_EXEC) and EXIT
 * of the leader drop them.
 *
 * A sample is walked by the PC-only walk from its user registers, at the
 * interrupted PC; where it hands over, by the cursor, which also says why
 * a walk stopped early (the stack copy ended: BK_E_MEMORY; no module or
 * CFI: BK_E_NO_UNWIND; ...).
 *
 * Trusts its caller for: records in time order (the queue below), from one
 * reader.
 */
#include <stdlib.h>
#include <string.h>

#include "prof_stack.h"

#include "../unwind/unwind.h"

/* The sample being walked: its stack copy at its user SP. */
struct sample_mem {
	uint64_t addr, len;
	const uint8_t *bytes;
};

static int sample_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct sample_mem *m = ctx;
	uint64_t off = addr - m->addr;
	if (!m->bytes || off >= m->len || len > m->len - off)
		return BK_E_MEMORY;
	memcpy(dst, m->bytes + off, len);
	return 0;
}

/* A module as an MMAP record gave it, kept to hand to a forked child. */
struct pmod {
	uint64_t start, end, base;
	char *path;
};

struct proc {
	int32_t pid;
	char comm[32];
	struct bk_space *space;
	struct sample_mem mem;
	struct pmod *mods;
	size_t nmods, cap;
	uint64_t map;          /* prof_walk.map: renumbered at each change */
};

struct prof_stacks {
	enum bk_arch arch;
	struct proc **procs;   /* sorted by pid */
	size_t nprocs, cap;
	uint64_t maps;         /* the last map number given */
	struct prof_stack_stats stats;
};

int prof_stacks_new(enum bk_arch arch, struct prof_stacks **out)
{
	struct prof_stacks *p = calloc(1, sizeof(*p));
	if (!p)
		return BK_E_NOMEM;
	p->arch = arch;
	*out = p;
	return 0;
}

static void proc_free(struct proc *pr)
{
	if (!pr)
		return;
	bk_space_destroy(pr->space);
	for (size_t i = 0; i < pr->nmods; i++)
		free(pr->mods[i].path);
	free(pr->mods);
	free(pr);
}

void prof_stacks_free(struct prof_stacks *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nprocs; i++)
		proc_free(p->procs[i]);
	free(p->procs);
	free(p);
}

const struct prof_stack_stats *prof_stacks_stats(const struct prof_stacks *p)
{
	return &p->stats;
}

/* Where PID is or would go in the sorted process list. */
static size_t proc_index(const struct prof_stacks *p, int32_t pid)
{
	size_t lo = 0, hi = p->nprocs;
	while (lo < hi) { /* procs[] holds pointers: BASE_COUNT_LT wants the keys in place */
		size_t mid = lo + (hi - lo) / 2;
		if (p->procs[mid]->pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static struct proc *proc_find(const struct prof_stacks *p, int32_t pid)
{
	size_t i = proc_index(p, pid);
	return i < p->nprocs && p->procs[i]->pid == pid ? p->procs[i] : NULL;
}

/* The process PID, made (empty) when new. */
static struct proc *proc_get(struct prof_stacks *p, int32_t pid)
{
	struct proc *pr = proc_find(p, pid);
	if (pr)
		return pr;
	if (p->nprocs == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 16;
		struct proc **n = realloc(p->procs, cap * sizeof(*n));
		if (!n)
			return NULL;
		p->procs = n;
		p->cap = cap;
	}
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return NULL;
	pr->pid = pid;
	pr->map = ++p->maps;
	static const struct bk_target_ops ops = { sizeof(ops), sample_read };
	if (bk_space_create(p->arch, &ops, &pr->mem, &pr->space) != 0) {
		free(pr);
		return NULL;
	}
	size_t at = proc_index(p, pid);
	memmove(&p->procs[at + 1], &p->procs[at], (p->nprocs - at) * sizeof(*p->procs));
	p->procs[at] = pr;
	p->nprocs++;
	return pr;
}

static void proc_drop(struct prof_stacks *p, int32_t pid)
{
	size_t i = proc_index(p, pid);
	if (i >= p->nprocs || p->procs[i]->pid != pid)
		return;
	proc_free(p->procs[i]);
	memmove(&p->procs[i], &p->procs[i + 1], (p->nprocs - i - 1) * sizeof(*p->procs));
	p->nprocs--;
}

static int proc_add_module(struct prof_stacks *p, struct proc *pr, uint64_t start, uint64_t end,
			   uint64_t base, const char *path)
{
	if (pr->nmods == pr->cap) {
		size_t cap = pr->cap ? pr->cap * 2 : 16;
		struct pmod *n = realloc(pr->mods, cap * sizeof(*n));
		if (!n)
			return BK_E_NOMEM;
		pr->mods = n;
		pr->cap = cap;
	}
	char *copy = strdup(path);
	if (!copy)
		return BK_E_NOMEM;
	pr->mods[pr->nmods++] = (struct pmod){ start, end, base, copy };
	pr->map = ++p->maps;
	struct bk_module_desc d = { sizeof(d), path, base, start, end };
	return bk_space_add_module(pr->space, &d);
}

/* Mappings that are no file of code: perf names them in brackets or
 * gives anonymous memory a path of its own. */
static bool is_file(const char *name)
{
	return name[0] == '/' && strncmp(name, "/memfd:", 7) && strncmp(name, "//anon", 6) &&
	       strncmp(name, "/dev/", 5);
}

int prof_stacks_event(struct prof_stacks *p, const struct prof_record *rec)
{
	struct proc *pr;
	switch (rec->kind) {
	case PROF_MMAP:
		/* Executable mappings of files: their code has CFI. */
		if ((rec->misc & PROF_MISC_MMAP_DATA) || !is_file(rec->mmap.filename) ||
		    (rec->mmap.mmap2 && !(rec->mmap.prot & 4 /* PROT_EXEC */)))
			return 0;
		if (rec->pid < 0 || !(pr = proc_get(p, rec->pid)))
			return rec->pid < 0 ? 0 : BK_E_NOMEM;
		p->stats.modules++;
		/* The image's lowest PT_LOAD is at file offset 0 in every layout
		 * ld and lld make, so it is mapped PGOFF below this mapping. */
		return proc_add_module(p, pr, rec->mmap.addr - rec->mmap.pgoff,
				       rec->mmap.addr + rec->mmap.len,
				       rec->mmap.addr - rec->mmap.pgoff, rec->mmap.filename);
	case PROF_COMM:
		if (rec->pid < 0)
			return 0;
		/* exec: a new image; the MMAPs of the new one follow. */
		if (rec->comm.exec && rec->pid == rec->tid)
			proc_drop(p, rec->pid);
		if (!(pr = proc_get(p, rec->pid)))
			return BK_E_NOMEM;
		if (rec->pid == rec->tid || !pr->comm[0]) {
			strncpy(pr->comm, rec->comm.comm, sizeof(pr->comm) - 1);
		}
		return 0;
	case PROF_FORK:
		if (rec->task.pid == rec->task.ppid || proc_find(p, rec->task.pid))
			return 0; /* a thread, or known already */
		pr = proc_find(p, rec->task.ppid);
		struct proc *child = proc_get(p, rec->task.pid);
		if (!child)
			return BK_E_NOMEM;
		pr = proc_find(p, rec->task.ppid); /* proc_get may have moved it */
		if (pr) {
			memcpy(child->comm, pr->comm, sizeof(child->comm));
			for (size_t i = 0; i < pr->nmods; i++) {
				int err = proc_add_module(p, child, pr->mods[i].start, pr->mods[i].end,
							  pr->mods[i].base, pr->mods[i].path);
				if (err == BK_E_NOMEM)
					return err;
			}
		}
		return 0;
	case PROF_EXIT:
		if (rec->task.pid == rec->task.tid)
			proc_drop(p, rec->task.pid);
		return 0;
	default:
		return 0;
	}
}

int prof_stacks_walk(struct prof_stacks *p, const struct prof_record *rec, uint64_t *pcs,
		     uint8_t *interrupted, int max, struct prof_walk *w)
{
	memset(w, 0, sizeof(*w));
	w->comm = "";
	if (rec->kind != PROF_SAMPLE || max <= 0)
		return BK_E_INVAL;
	p->stats.samples++;
	struct proc *pr = rec->pid >= 0 ? proc_find(p, rec->pid) : NULL;
	if (pr)
		w->comm = pr->comm;
	const struct prof_sample *s = &rec->sample;
	const struct bk_regs *regs = s->regs_user.dwarf;
	const struct arch_info *a = arch_get(p->arch);
	uint64_t ip, sp;
	if (!regs || s->regs_user.abi == PROF_REGS_ABI_NONE || !a ||
	    !bk_regs_get(regs, a->pc_reg, &ip) || !bk_regs_get(regs, a->sp_reg, &sp)) {
		p->stats.no_regs++;
		w->ended = BK_E_INVAL;
		w->reason = "no user registers";
		return 0;
	}
	if (!pr && !(pr = proc_get(p, rec->pid))) /* samples of a process seen no MMAP of */
		return BK_E_NOMEM;
	w->comm = pr->comm;
	w->space = pr->space;
	w->map = pr->map;
	pr->mem = (struct sample_mem){ sp, s->stack ? s->stack_dyn_size : 0, s->stack };
	if (!s->stack || !s->stack_dyn_size)
		p->stats.no_stack++;

	pcs[0] = ip;
	if (interrupted)
		interrupted[0] = 1;
	int n = 1;
	if (max > 1) {
		struct uw_window win = { sp, pr->mem.len, pr->mem.bytes };
		int k = uw_walk_pcs_window(pr->space, regs, true, (void **)(pcs + 1), max - 1,
					   pr->mem.bytes ? &win : NULL,
					   interrupted ? interrupted + 1 : NULL);
		if (k >= 0) {
			n += k;
		} else {
			/* Handed over: the cursor makes the same frames and says why
			 * it stopped. */
			struct bk_cursor c;
			int r = bk_cursor_init(&c, pr->space, regs);
			if (r == 0) {
				while (n < max && (r = bk_cursor_step(&c)) == 1) {
					if (interrupted)
						interrupted[n] = bk_cursor_lookup_pc(&c) ==
								 bk_cursor_pc(&c);
					pcs[n++] = bk_cursor_pc(&c);
				}
			}
			w->ended = r < 0 ? r : 0;
		}
	}
	if (n > 1 && pcs[n - 1] == 0)
		n--; /* a return address of 0 marks the end */
	if (w->ended) {
		p->stats.truncated++;
		w->reason = w->ended == BK_E_MEMORY ? "stack copy too short"
			    : w->ended == BK_E_NO_UNWIND ? "no unwind information"
			    : bk_strerror(w->ended);
	} else {
		p->stats.complete++;
	}
	pr->mem.bytes = NULL; /* the record's bytes go with the next record */
	return n;
}

/* ---- Time order ------------------------------------------------------------
 *
 * perf writes each CPU's records in time order but a round's CPUs one after
 * another: a sample may come before, in the file, the MMAP it needs. perf
 * documents the rule its own readers follow: at a FINISHED_ROUND record,
 * every record no later than the newest of the round before is final. The
 * queue keeps records as bytes (the reader's pointers die with the next
 * record) and releases them in time order, file order among equals. */

struct qent {
	uint64_t time, seq;
	const uint8_t *bytes;
	uint16_t size;
	bool owned;            /* a copy (else in the reader's memory) */
};

struct prof_queue {
	struct qent *e;
	size_t n, cap, ready;
	uint64_t seq, round_max, prev_round_max;
};

int prof_queue_new(struct prof_queue **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : BK_E_NOMEM;
}

void prof_queue_free(struct prof_queue *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		if (q->e[i].owned)
			free((void *)q->e[i].bytes);
	free(q->e);
	free(q);
}

int prof_queue_push(struct prof_queue *q, const struct prof_reader *r,
		    const struct prof_record *rec)
{
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 1024;
		struct qent *n = realloc(q->e, cap * sizeof(*n));
		if (!n)
			return BK_E_NOMEM;
		q->e = n;
		q->cap = cap;
	}
	/* In memory, a record's bytes stay where they are. */
	bool copy = !r->mem || rec->raw < r->mem || rec->size > r->src_len ||
		    (uint64_t)(rec->raw - r->mem) > r->src_len - rec->size;
	uint8_t *b = NULL;
	if (copy) {
		if (!(b = malloc(rec->size)))
			return BK_E_NOMEM;
		memcpy(b, rec->raw, rec->size);
	}
	uint64_t t = (rec->have & PROF_SAMPLE_TIME) ? rec->time : 0;
	q->e[q->n++] = (struct qent){ t, q->seq++, copy ? b : rec->raw, rec->size, copy };
	if (t > q->round_max)
		q->round_max = t;
	return 0;
}

static int qent_cmp(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

size_t prof_queue_round(struct prof_queue *q, bool end)
{
	qsort(q->e, q->n, sizeof(*q->e), qent_cmp);
	size_t k = 0;
	while (k < q->n && (end || q->e[k].time <= q->prev_round_max))
		k++;
	q->prev_round_max = q->round_max;
	q->ready = k;
	return k;
}

int prof_queue_get(struct prof_queue *q, struct prof_reader *r, size_t i,
		   struct prof_record *rec)
{
	if (i >= q->ready)
		return BK_E_INVAL;
	const uint8_t *p = q->e[i].bytes;
	memset(rec, 0, sizeof(*rec));
	rec->type = (uint32_t)base_rd_le(p, 4);
	rec->misc = (uint16_t)base_rd_le(p + 4, 2);
	rec->size = q->e[i].size;
	rec->raw = p;
	rec->attr = -1;
	return prof_decode(r, p, rec->size, rec);
}

void prof_queue_drop_ready(struct prof_queue *q)
{
	for (size_t i = 0; i < q->ready; i++)
		if (q->e[i].owned)
			free((void *)q->e[i].bytes);
	memmove(q->e, q->e + q->ready, (q->n - q->ready) * sizeof(*q->e));
	q->n -= q->ready;
	q->ready = 0;
}
