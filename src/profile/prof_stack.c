/* From samples to stacks: the processes of a recording as address spaces,
 * each sample's user stack walked in its process's space.
 *
 * A process is a space whose modules are the files its MMAP records named
 * (applied in time order, see "Time order" below, so a sample sees the
 * map as it was then) and whose memory is the stack copy of the sample
 * being walked, handed to the PC-only walk as its window (read with plain
 * loads). The space lives as long as the process: its rule table and memo
 * serve every sample of it. A file is opened once for every process that
 * maps it (file_open): its tables, its debug file and theirs are built
 * once, however many processes a recording has. FORK gives the child the
 * parent's modules; exec (COMM with PERF_RECORD_MISC_COMM_EXEC) and EXIT
 * of the leader drop them.
 *
 * Build-ids. A file is used only if it is the one perf saw: where perf
 * recorded a build-id for it (the MMAP2 record's own, PERF_RECORD_MISC_
 * MMAP_BUILD_ID, from `perf record --buildid-mmap`; else the HEADER_BUILD_ID
 * entry of the host, pid -1, for its path, which prof_queue_get gives the
 * MMAP; else a HEADER_BUILD_ID record met earlier in a stream) and the
 * file's is another, its mapping is a *hole*: no module (frames there are
 * named by nothing), and a walk ends at the first frame in it ("build-id
 * differs": its unwind tables are not known, and what a frame-pointer
 * guess would make of the frames above is not trusted). The file is
 * listed once (prof_stacks_differing). Where perf recorded nothing, the
 * file is used as it is.
 *
 * What perf writes (perf 6.1): `perf record` to a file lists in
 * HEADER_BUILD_ID the files its samples hit (with --call-graph dwarf: the
 * files of the interrupted PCs, not every file of the call chains), read
 * with the header, before the first record; `--buildid-all` lists all.
 * `perf record -o -` writes no build-id at all; `perf inject -b` adds
 * HEADER_BUILD_ID records to a stream, each right before the first sample
 * in its file: after the MMAP. Such a record met after its file was mapped
 * turns that file's modules into holes then (each process's space is
 * rebuilt without them): the samples already walked keep their stacks.
 *
 * A sample is walked by the PC-only walk from its user registers, at the
 * interrupted PC; where it hands over, by the cursor, which also says why
 * a walk stopped early (the stack copy ended: BK_E_MEMORY; no module or
 * CFI: BK_E_NO_UNWIND; ...).
 *
 * JIT code: a jitdump a process maps (perf's rule: a file jit-PID.dump in
 * an MMAP record) is read into its space, as `perf inject --jit` would
 * turn it into files ("JIT code: jitdumps" below).
 *
 * Trusts its caller for: records in time order (the queue below), from one
 * reader.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <time.h>

#include "prof_stack.h"

#include "../target/target.h"
#include "../unwind/unwind.h"

/* The sample being walked: its stack copy at its user SP; and the space
 * it is walked in, whose modules' code is read from their files. */
struct sample_mem {
	uint64_t addr, len;
	const uint8_t *bytes;
	struct bk_space *space;
};

/* Memory as the walks see it: the stack copy, and the code of the
 * modules, read from their files, and of JIT code, from its jitdump (the
 * fallbacks for code without CFI look at instructions: the call before a
 * return address, a prologue, a ret).
 * Nothing else: a file's writable data would be its initial values, not
 * the process's. */
static int sample_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct sample_mem *m = ctx;
	uint64_t off = addr - m->addr;
	if (m->bytes && off < m->len && len <= m->len - off) {
		memcpy(dst, m->bytes + off, len);
		return 0;
	}
	const struct uw_module *mod = m->space ? uw_space_find(m->space, addr) : NULL;
	if (!mod && m->space && m->space->jitdumps) /* JIT code: its load's bytes */
		return uw_jitdump_code(m->space, addr, dst, len);
	if (!mod || !mod->elf)
		return BK_E_MEMORY;
	const struct ldr_elf *l = mod->elf->ldr;
	uint64_t link = addr - (uint64_t)mod->bias;
	for (size_t i = 0; i < l->nsegs; i++) {
		const struct ldr_segment *sg = &l->segs[i];
		if ((sg->flags & PF_X) && !(sg->flags & PF_W) && link >= sg->vaddr &&
		    link - sg->vaddr < sg->filesz && len <= sg->filesz - (link - sg->vaddr))
			return ldr_read_vaddr(l, link, dst, len) == 0 ? 0 : BK_E_MEMORY;
	}
	return BK_E_MEMORY;
}

/* A module as an MMAP record gave it, kept to hand to a forked child and
 * to rebuild the space: in the order they came, so that a later one
 * replaces an earlier one it overlaps. */
struct pmod {
	uint64_t start, end, base;
	char *path;
	bool checked;          /* its build-id was held against a recorded one */
	bool differs;          /* a hole: the file is not the one perf saw */
	bool gone;             /* no file: anonymous memory mapped over what was
				  there (a JIT's code where ld.so.cache was) */
};

/* A jitdump the process mapped (perf finds it so: a file jit-PID.dump
 * mapped with PROT_EXEC), read into its space (bk_space_add_jitdump): its
 * code named with lines and unwound by its .eh_frame sections. TIMED: the
 * recording's clock is the jitdump's, so the space sees the JIT's code as
 * it was at each sample's time; else all of it. Read again when it grew
 * (a live recording: the JIT appends while samples come). */
struct pjit {
	char *path;
	bool timed, failed;
	uint64_t size;         /* when last read */
	uint64_t looked;       /* the sample time (or count) of the last look at the size */
	uint64_t until;        /* the view now */
};

struct proc {
	int32_t pid;
	char comm[32];
	struct bk_space *space;
	struct pjit *jits;
	size_t njits;
	struct sample_mem mem;
	struct pmod *mods;
	size_t nmods, cap;
	size_t nholes;         /* mods[] entries that are holes */
	uint64_t map;          /* prof_walk.map: renumbered at each change */
};

/* A build-id perf recorded for a file (a HEADER_BUILD_ID record). */
struct rec_bid {
	char *path;
	uint8_t len;
	uint8_t bytes[20];
};

/* A file opened for the modules of every process that maps it. */
struct opened {
	char *path;
	struct bk_elf *elf;    /* NULL: it could not be opened */
};

struct prof_stacks {
	enum bk_arch arch;
	int32_t clockid;       /* of the samples' times (prof_stacks_set_clock) */
	struct opened *files;  /* sorted by path */
	size_t nfiles, capfiles;
	struct proc **procs;   /* sorted by pid */
	size_t nprocs, cap;
	uint64_t maps;         /* the last map number given */
	struct prof_stack_stats stats;
	struct rec_bid *bids;  /* from HEADER_BUILD_ID records, in order met */
	size_t nbids, capbids;
	char **differ;         /* files whose build-id differs, each once */
	size_t ndiffer;
};

int prof_stacks_new(enum bk_arch arch, struct prof_stacks **out)
{
	struct prof_stacks *p = calloc(1, sizeof(*p));
	if (!p)
		return BK_E_NOMEM;
	p->arch = arch;
	p->clockid = -1;
	*out = p;
	return 0;
}

static void proc_free(struct proc *pr)
{
	if (!pr)
		return;
	bk_space_destroy(pr->space);
	for (size_t i = 0; i < pr->njits; i++)
		free(pr->jits[i].path);
	free(pr->jits);
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
	for (size_t i = 0; i < p->nbids; i++)
		free(p->bids[i].path);
	free(p->bids);
	for (size_t i = 0; i < p->ndiffer; i++)
		free(p->differ[i]);
	free(p->differ);
	for (size_t i = 0; i < p->nfiles; i++) {
		bk_elf_close(p->files[i].elf);
		free(p->files[i].path);
	}
	free(p->files);
	free(p);
}

/* "[vdso]": this machine's vDSO, read from this process (a recording made
 * here mapped the same one; where perf recorded the build-id of the one it
 * saw, the check in proc_add_module holds them against each other), and
 * only for a recording of this architecture. */
static struct bk_elf *own_vdso(const struct prof_stacks *p)
{
	struct tgt_local_object obj;
	uint64_t base = getauxval(AT_SYSINFO_EHDR);
	struct ldr_elf *ldr;
	struct bk_elf *elf = NULL;
	if (!base || !tgt_local_vdso_object(base, &obj) ||
	    ldr_open_loaded((const void *)(uintptr_t)obj.start, (size_t)(obj.end - obj.start), NULL,
			    4096, &ldr) != 0 ||
	    uw_elf_wrap(ldr, &elf) != 0)
		return NULL;
	if (bk_elf_arch(elf) != p->arch) {
		bk_elf_close(elf);
		return NULL;
	}
	return elf;
}

/* The file at PATH, opened once for every process and mapping (its
 * tables, debug file and their tables built once): a new reference, or
 * NULL when it cannot be opened (that too is learnt once). A file that
 * changes on disk while a recording is read is not seen to change; the
 * build-id check compares what was opened. */
static struct bk_elf *file_open(struct prof_stacks *p, const char *path)
{
	size_t lo = 0, hi = p->nfiles;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(p->files[mid].path, path);
		if (c == 0)
			return uw_elf_ref(p->files[mid].elf);
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct bk_elf *elf = NULL;
	if (!strcmp(path, "[vdso]"))
		elf = own_vdso(p);
	else
		bk_elf_open(path, &elf);
	struct opened *files = base_grow(p->files, &p->capfiles, p->nfiles + 1, sizeof(*files), 16);
	char *copy = files ? strdup(path) : NULL;
	if (!copy) /* not kept: opened again next time */
		return elf;
	p->files = files;
	memmove(&files[lo + 1], &files[lo], (p->nfiles - lo) * sizeof(*files));
	files[lo] = (struct opened){ copy, elf };
	p->nfiles++;
	return uw_elf_ref(elf);
}

void prof_stacks_set_clock(struct prof_stacks *p, int32_t clockid)
{
	p->clockid = clockid;
}

bool prof_stacks_image(struct prof_stacks *p, const char *path, const uint8_t **bytes,
		       size_t *len)
{
	struct bk_elf *elf = file_open(p, path);
	if (!elf)
		return false;
	ldr_bytes(elf->ldr, bytes, len); /* the table still holds it */
	bk_elf_close(elf);
	return true;
}

const struct prof_stack_stats *prof_stacks_stats(const struct prof_stacks *p)
{
	return &p->stats;
}

const char *prof_stacks_differing(const struct prof_stacks *p, size_t i)
{
	return i < p->ndiffer ? p->differ[i] : NULL;
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

/* An empty space for PR: its memory is the sample being walked. */
static int proc_space(const struct prof_stacks *p, struct proc *pr, struct bk_space **out)
{
	static const struct bk_target_ops ops = { sizeof(ops), sample_read };
	return bk_space_create(p->arch, &ops, &pr->mem, out);
}

/* The process PID, made (empty) when new. */
static struct proc *proc_get(struct prof_stacks *p, int32_t pid)
{
	struct proc *pr = proc_find(p, pid);
	if (pr)
		return pr;
	struct proc **procs = base_grow(p->procs, &p->cap, p->nprocs + 1, sizeof(*procs), 16);
	if (!procs)
		return NULL;
	p->procs = procs;
	pr = calloc(1, sizeof(*pr));
	if (!pr)
		return NULL;
	pr->pid = pid;
	pr->map = ++p->maps;
	if (proc_space(p, pr, &pr->space) != 0) {
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

/* ---- Build-ids ------------------------------------------------------------- */

/* ELF has the build-id WANT (LEN bytes; perf pads a shorter one with
 * zeros to 20 when the record does not say its size). */
static bool same_build_id(const struct bk_elf *elf, const uint8_t *want, size_t len)
{
	const uint8_t *have;
	size_t n = bk_elf_build_id(elf, &have);
	if (n == 0 || n > len || memcmp(have, want, n))
		return false;
	for (size_t i = n; i < len; i++)
		if (want[i])
			return false;
	return true;
}

/* The build-id a HEADER_BUILD_ID record gave for PATH (the last one), or
 * NULL. */
static const struct rec_bid *recorded_bid(const struct prof_stacks *p, const char *path)
{
	for (size_t i = p->nbids; i-- > 0;)
		if (!strcmp(p->bids[i].path, path))
			return &p->bids[i];
	return NULL;
}

/* List PATH among the files that differ, once. */
static int note_differing(struct prof_stacks *p, const char *path)
{
	for (size_t i = 0; i < p->ndiffer; i++)
		if (!strcmp(p->differ[i], path))
			return 0;
	char **n = realloc(p->differ, (p->ndiffer + 1) * sizeof(*n));
	if (!n)
		return BK_E_NOMEM;
	p->differ = n;
	if (!(p->differ[p->ndiffer] = strdup(path)))
		return BK_E_NOMEM;
	p->ndiffer++;
	p->stats.build_id_differs++;
	return 0;
}

/* ---- Modules ---------------------------------------------------------------- */

static bool overlaps(const struct pmod *a, const struct pmod *b)
{
	return a->start < b->end && b->start < a->end;
}

static void jit_read(struct prof_stacks *p, struct proc *pr, struct pjit *j);

/* Make PR's space again from its log: each module no later entry (module
 * or hole) overlaps, in order, as the records placed them. Cold: a file
 * that differs was found after modules were added. */
static int proc_rebuild(struct prof_stacks *p, struct proc *pr)
{
	struct bk_space *ns;
	if (proc_space(p, pr, &ns) != 0)
		return BK_E_NOMEM;
	for (size_t i = 0; i < pr->nmods; i++) {
		const struct pmod *m = &pr->mods[i];
		bool replaced = m->differs || m->gone;
		for (size_t j = i + 1; j < pr->nmods && !replaced; j++)
			replaced = overlaps(m, &pr->mods[j]);
		if (replaced)
			continue;
		struct bk_elf *elf = file_open(p, m->path);
		if (uw_space_add(ns, m->start, m->end, m->base, m->path, elf) != 0) {
			bk_space_destroy(ns);
			return BK_E_NOMEM;
		}
	}
	bk_space_destroy(pr->space);
	pr->space = ns;
	pr->map = ++p->maps;
	for (size_t i = 0; i < pr->njits; i++)
		jit_read(p, pr, &pr->jits[i]);
	return 0;
}

/* Append M (its path copied) to PR's log. */
static int proc_log(struct proc *pr, const struct pmod *m)
{
	struct pmod *mods = base_grow(pr->mods, &pr->cap, pr->nmods + 1, sizeof(*mods), 16);
	if (!mods)
		return BK_E_NOMEM;
	pr->mods = mods;
	char *copy = strdup(m->path);
	if (!copy)
		return BK_E_NOMEM;
	pr->mods[pr->nmods] = *m;
	pr->mods[pr->nmods++].path = copy;
	pr->nholes += m->differs;
	return 0;
}

/* Map M into PR: a module, or a hole (M->differs), which removes what it
 * overlaps. ELF (owned; may be NULL) is M's file, opened already. */
static int proc_map(struct prof_stacks *p, struct proc *pr, const struct pmod *m,
		    struct bk_elf *elf)
{
	int err = proc_log(pr, m);
	if (err) {
		bk_elf_close(elf);
		return err;
	}
	pr->map = ++p->maps;
	if (!m->differs && !m->gone)
		return uw_space_add(pr->space, m->start, m->end, m->base, m->path, elf);
	bk_elf_close(elf);
	for (size_t i = 0; i < pr->space->nmods; i++) {
		const struct uw_module *have = &pr->space->mods[i];
		if (have->start < m->end && m->start < have->end)
			return proc_rebuild(p, pr);
	}
	return 0;
}

/* A new mapping of PATH: its file is used unless perf recorded another
 * build-id for it (BID, LEN: the record's own; else a HEADER_BUILD_ID
 * record's). */
static int proc_add_module(struct prof_stacks *p, struct proc *pr, uint64_t start, uint64_t end,
			   uint64_t base, const char *path, const uint8_t *bid, size_t len)
{
	if (end <= start)
		return BK_E_INVAL;
	struct pmod m = { .start = start, .end = end, .base = base, .path = (char *)path };
	struct bk_elf *elf = file_open(p, path); /* a module without a file still has a name */
	const struct rec_bid *rb = len ? NULL : recorded_bid(p, path);
	if (rb) {
		bid = rb->bytes;
		len = rb->len;
	}
	if (elf && len) {
		m.checked = true;
		m.differs = !same_build_id(elf, bid, len);
		if (m.differs) {
			int err = note_differing(p, path);
			if (err) {
				bk_elf_close(elf);
				return err;
			}
		}
	}
	return proc_map(p, pr, &m, elf);
}

/* A HEADER_BUILD_ID record met in the data (a stream): later mappings of
 * its file are held against it, and so are the ones made already that
 * were not checked (perf inject -b puts it after the MMAP). */
static int recorded_late(struct prof_stacks *p, const struct prof_build_id *b)
{
	if (b->pid != -1 || b->len == 0 || !b->filename || b->filename[0] != '/')
		return 0; /* a guest's, or the kernel's */
	struct rec_bid *bids = base_grow(p->bids, &p->capbids, p->nbids + 1, sizeof(*bids), 16);
	if (!bids)
		return BK_E_NOMEM;
	p->bids = bids;
	struct rec_bid *rb = &p->bids[p->nbids];
	if (!(rb->path = strdup(b->filename)))
		return BK_E_NOMEM;
	rb->len = b->len;
	memcpy(rb->bytes, b->bytes, b->len);
	p->nbids++;

	int verdict = -1; /* the file: -1 not looked at, 0 same, 1 differs */
	for (size_t i = 0; i < p->nprocs; i++) {
		struct proc *pr = p->procs[i];
		bool changed = false;
		for (size_t k = 0; k < pr->nmods; k++) {
			struct pmod *m = &pr->mods[k];
			if (m->checked || m->differs || strcmp(m->path, rb->path))
				continue;
			if (verdict < 0) {
				struct bk_elf *elf = file_open(p, rb->path);
				verdict = elf && !same_build_id(elf, rb->bytes, rb->len);
				bk_elf_close(elf);
			}
			m->checked = true;
			if (verdict == 1) {
				m->differs = true;
				pr->nholes++;
				changed = true;
			}
		}
		int err = 0;
		if (changed && ((err = note_differing(p, rb->path)) || (err = proc_rebuild(p, pr))))
			return err;
	}
	return 0;
}

/* ADDR lies in a hole of PR: a mapping of a file that differs, and no
 * module there. */
static bool in_hole(const struct proc *pr, uint64_t addr)
{
	if (uw_space_find(pr->space, addr))
		return false;
	for (size_t i = 0; i < pr->nmods; i++)
		if (pr->mods[i].differs && addr - pr->mods[i].start < pr->mods[i].end - pr->mods[i].start) {
			/* ... and not mapped over since by anything else */
			bool over = false;
			for (size_t k = i + 1; k < pr->nmods && !over; k++)
				over = overlaps(&pr->mods[i], &pr->mods[k]) &&
				       addr - pr->mods[k].start < pr->mods[k].end - pr->mods[k].start;
			if (!over)
				return true;
		}
	return false;
}

/* ---- JIT code: jitdumps --------------------------------------------------- */

#define JIT_CLOCK_SLACK ((uint64_t)10 * 1000000000u) /* ns: a jitdump made then */
#define JIT_LOOK_EVERY ((uint64_t)50 * 1000000u)    /* ns of samples between looks */

static uint64_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* J into PR's space, as of J->until. */
static void jit_read(struct prof_stacks *p, struct proc *pr, struct pjit *j)
{
	(void)p;
	if (j->failed)
		return;
	j->size = file_size(j->path);
	/* (Of the same size, the reading stands: only its view moves.) */
	if (bk_space_add_jitdump(pr->space, j->path, j->until, NULL) != 0)
		j->failed = true;
}

/* PR mapped the jitdump PATH at time NOW (the recording's clock). The
 * JIT made it just before: when its header's time is within
 * JIT_CLOCK_SLACK of NOW in a recording on CLOCK_MONOTONIC (perf record
 * -k mono, backstep record) and not an architecture's own clock, the two
 * clocks are one, and the space follows the samples' time; otherwise
 * (perf's default clock; node 20 stamps its jitdumps with the time of day
 * in microseconds) all of it is taken, as for a live process. */
static int proc_add_jitdump(struct prof_stacks *p, struct proc *pr, const char *path, uint64_t now)
{
	for (size_t i = 0; i < pr->njits; i++)
		if (!strcmp(pr->jits[i].path, path))
			return 0; /* mapped again (a second page): known */
	struct pjit *v = realloc(pr->jits, (pr->njits + 1) * sizeof(*v));
	if (!v)
		return BK_E_NOMEM;
	pr->jits = v;
	struct pjit *j = &pr->jits[pr->njits];
	*j = (struct pjit){ .path = strdup(path), .until = 0 };
	if (!j->path)
		return BK_E_NOMEM;
	pr->njits++;
	p->stats.jitdumps++;
	j->size = file_size(path);
	struct bk_jitdump_stats st = { .size = sizeof(st) };
	if (bk_space_add_jitdump(pr->space, path, 0, &st) != 0) {
		j->failed = true;
		p->stats.jitdumps_unread++;
		return 0;
	}
	uint64_t d = st.time > now ? st.time - now : now - st.time;
	j->timed = p->clockid == CLOCK_MONOTONIC && !(st.flags & 1) && d < JIT_CLOCK_SLACK;
	j->until = j->timed ? now : UINT64_MAX;
	bk_space_jitdump_until(pr->space, j->until);
	return 0;
}

/* Whether time NOW (of a recording on CLOCK_MONOTONIC) is about now: the
 * recording is being made (backstep record), and its JIT writing. */
static bool being_made(uint64_t now)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t t = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return (t > now ? t - now : now - t) < 1000000000u;
}

/* Before walking a sample of PR at time NOW: each jitdump's view moved to
 * NOW, and read again if it grew since: looked at before each sample of a
 * recording being made (code the JIT made just before it), else every
 * JIT_LOOK_EVERY of samples' time, or every 1024 samples without times. */
static void jit_update(struct prof_stacks *p, struct proc *pr, uint64_t now)
{
	for (size_t i = 0; i < pr->njits; i++) {
		struct pjit *j = &pr->jits[i];
		if (j->failed)
			continue;
		uint64_t tick = now ? now : p->stats.samples * (JIT_LOOK_EVERY / 1024);
		if (tick - j->looked >= JIT_LOOK_EVERY || (j->timed && being_made(now))) {
			j->looked = tick;
			if (file_size(j->path) != j->size) {
				if (j->timed)
					j->until = now;
				jit_read(p, pr, j);
				p->stats.jitdump_reads++;
				continue;
			}
		}
		if (j->timed && now > j->until) {
			j->until = now;
			bk_space_jitdump_until(pr->space, now);
		}
	}
}

/* Mappings that are no file of code: perf names them in brackets or
 * gives anonymous memory a path of its own. */
static bool is_file(const char *name)
{
	return name[0] == '/' && strncmp(name, "/memfd:", 7) && strncmp(name, "//anon", 6) &&
	       strncmp(name, "/dev/", 5);
}

/* A mapping of no file (anonymous memory: a JIT's code; a heap) of a
 * process we know: what it overlaps is gone (perf records no munmap, and
 * ld.so maps ld.so.cache, reads it and unmaps it, so a JIT's first code
 * often lands where that "module" was: its frames were named by it and
 * its perf map and jitdump never asked). */
static int anon_mapping(struct prof_stacks *p, const struct prof_record *rec)
{
	struct proc *pr = rec->pid >= 0 ? proc_find(p, rec->pid) : NULL;
	if (!pr || rec->mmap.len == 0 || rec->mmap.addr + rec->mmap.len < rec->mmap.addr)
		return 0;
	struct pmod m = { .start = rec->mmap.addr, .end = rec->mmap.addr + rec->mmap.len,
			  .path = (char *)rec->mmap.filename, .gone = true };
	bool hit = false;
	for (size_t i = 0; i < pr->space->nmods && !hit; i++)
		hit = pr->space->mods[i].start < m.end && m.start < pr->space->mods[i].end;
	for (size_t i = 0; i < pr->nmods && !hit; i++)
		hit = pr->mods[i].differs && overlaps(&pr->mods[i], &m);
	if (!hit)
		return 0; /* nothing to forget: not logged */
	return proc_map(p, pr, &m, NULL);
}

int prof_stacks_event(struct prof_stacks *p, const struct prof_record *rec)
{
	struct proc *pr;
	switch (rec->kind) {
	case PROF_MMAP:
		/* Executable mappings of files: their code has CFI. A file's
		 * mapping at offset 0 without exec is taken too, until one with
		 * exec replaces it: ld.so maps a library's whole extent read-only
		 * first, and when the ring buffer overflowed (LOST) that may be
		 * all a recording has of it. */
		if (!is_file(rec->mmap.filename) && strcmp(rec->mmap.filename, "[vdso]"))
			return anon_mapping(p, rec);
		if (((rec->misc & PROF_MISC_MMAP_DATA) ||
		     (rec->mmap.mmap2 && !(rec->mmap.prot & 4 /* PROT_EXEC */))) &&
		    rec->mmap.pgoff != 0)
			return 0;
		if (rec->pid < 0 || !(pr = proc_get(p, rec->pid)))
			return rec->pid < 0 ? 0 : BK_E_NOMEM;
		if (ldr_jitdump_name(rec->mmap.filename, false))
			return proc_add_jitdump(p, pr, rec->mmap.filename, rec->time);
		p->stats.modules++;
		/* The image's lowest PT_LOAD is at file offset 0 in every layout
		 * ld and lld make, so it is mapped PGOFF below this mapping. */
		return proc_add_module(p, pr, rec->mmap.addr - rec->mmap.pgoff,
				       rec->mmap.addr + rec->mmap.len,
				       rec->mmap.addr - rec->mmap.pgoff, rec->mmap.filename,
				       rec->mmap.build_id, rec->mmap.build_id_len);
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
			/* The parent's modules and holes, as they were decided. */
			memcpy(child->comm, pr->comm, sizeof(child->comm));
			for (size_t i = 0; i < pr->nmods; i++) {
				struct bk_elf *elf = pr->mods[i].differs ? NULL
						     : file_open(p, pr->mods[i].path);
				int err = proc_map(p, child, &pr->mods[i], elf);
				if (err == BK_E_NOMEM)
					return err;
			}
			/* And its JIT's code, as it was then. */
			for (size_t i = 0; i < pr->njits; i++) {
				struct pjit *v = realloc(child->jits, (child->njits + 1) * sizeof(*v));
				char *path = v ? strdup(pr->jits[i].path) : NULL;
				if (v)
					child->jits = v;
				if (!path)
					return BK_E_NOMEM;
				child->jits[child->njits] = pr->jits[i];
				child->jits[child->njits].path = path;
				jit_read(p, child, &child->jits[child->njits++]);
			}
		}
		return 0;
	case PROF_EXIT:
		if (rec->task.pid == rec->task.tid)
			proc_drop(p, rec->task.pid);
		return 0;
	case PROF_BUILD_ID:
		return recorded_late(p, &rec->build_id);
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
	if (pr->njits)
		jit_update(p, pr, rec->time);
	w->space = pr->space;
	w->map = pr->map;
	pr->mem = (struct sample_mem){ sp, s->stack ? s->stack_dyn_size : 0, s->stack, pr->space };
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
	/* The walk ends at a frame in a file that differs. */
	bool hole = false;
	for (int k = 0; pr->nholes && k < n && !hole; k++) {
		bool at_pc = k == 0 || (interrupted && interrupted[k]);
		if ((hole = in_hole(pr, pcs[k] - !at_pc))) {
			n = k + 1;
			w->ended = BK_E_NO_UNWIND;
		}
	}
	if (w->ended) {
		p->stats.truncated++;
		w->reason = hole ? "build-id differs"
			    : w->ended == BK_E_MEMORY ? "stack copy too short"
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

/* The reader's HEADER_BUILD_ID entries of the host (pid -1) by file name. */
struct bid_name {
	const char *name;      /* the entry's own string */
	size_t i;              /* for prof_build_id_at */
};

struct prof_queue {
	struct qent *e;
	size_t n, cap, ready;
	uint64_t seq, round_max, prev_round_max;
	struct bid_name *bidx; /* sorted by name */
	size_t nbidx;
	size_t bidx_of;        /* prof_build_id_count when it was made */
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
	free(q->bidx);
	free(q);
}

int prof_queue_push(struct prof_queue *q, const struct prof_reader *r,
		    const struct prof_record *rec)
{
	struct qent *e = base_grow(q->e, &q->cap, q->n + 1, sizeof(*e), 1024);
	if (!e)
		return BK_E_NOMEM;
	q->e = e;
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

static int bid_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct bid_name *)a)->name, ((const struct bid_name *)b)->name);
}

/* The build-id HEADER_BUILD_ID gives for the host's file NAME, or NULL.
 * The index is made again when the reader has more entries (file mode:
 * all of them are read with the header, before the first record). */
static const struct prof_build_id *header_bid(struct prof_queue *q, const struct prof_reader *r,
					      const char *name)
{
	size_t count = prof_build_id_count(r);
	if (count != q->bidx_of) {
		struct bid_name *n = realloc(q->bidx, count * sizeof(*n));
		if (!n)
			return NULL; /* (an advisory lookup: not an error) */
		q->bidx = n;
		q->nbidx = 0;
		for (size_t i = 0; i < count; i++) {
			const struct prof_build_id *b = prof_build_id_at(r, i);
			if (b->pid == -1 && b->len && b->filename)
				q->bidx[q->nbidx++] = (struct bid_name){ b->filename, i };
		}
		qsort(q->bidx, q->nbidx, sizeof(*q->bidx), bid_name_cmp);
		q->bidx_of = count;
	}
	struct bid_name key = { name, 0 };
	const struct bid_name *hit = q->nbidx ? bsearch(&key, q->bidx, q->nbidx, sizeof(*q->bidx),
							bid_name_cmp)
					      : NULL;
	return hit ? prof_build_id_at(r, hit->i) : NULL;
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
	int err = prof_decode(r, p, rec->size, rec);
	if (err >= 0 && rec->kind == PROF_MMAP && !rec->mmap.build_id_len && rec->mmap.filename) {
		const struct prof_build_id *b = header_bid(q, r, rec->mmap.filename);
		if (b) {
			rec->mmap.build_id = b->bytes;
			rec->mmap.build_id_len = b->len;
		}
	}
	return err;
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
