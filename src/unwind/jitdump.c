/* jitdump: a JIT's own account of its code (src/loader/ldr_jitdump.c reads
 * the file) given to a space: its .eh_frame sections registered for the
 * code they describe, so JIT frames unwind by CFI; its names and source
 * lines kept for bk_space_symbolize (src/sym asks uw_jitdump_symbol).
 *
 * A jitdump is a history: code loaded, moved, and new code loaded over
 * old. A space sees a *view*: the records up to some time, applied in file
 * order, where what came later at an address replaces what was there.
 * bk_space_add_jitdump takes the whole file by default (a live process or
 * a core: what is there now); a profile moves the view forward as its
 * samples' time advances (bk_space_jitdump_until), when its clock is the
 * jitdump's. Applying an entry removes the registrations its range
 * overlaps, then registers its own .eh_frame, if it has one that decodes
 * and describes only its code. The registrations of a jitdump are kept
 * sorted and disjoint, so each overlap costs a binary search.
 *
 * Spaces over another process, a core or a snapshot (a JIT in this process
 * registers its code itself: bk_space_register_eh_frame). Cold: reads a
 * file and allocates; no walk may run meanwhile.
 */
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "unwind.h"

#include "../loader/loader.h"

struct uw_jd_reg {
	uint64_t start, end;
	const struct ldr_jd_code *code; /* the registration's key */
};

struct uw_jitdump {
	struct uw_jitdump *next;
	char *path;                /* its name (the path given, by default): adding
				      it again replaces it */
	int fd;                    /* the file, for its code bytes; -1: none */
	struct ldr_jitdump *jd;
	size_t view;               /* entries applied (a prefix of the file) */
	struct uw_jd_reg *regs;    /* sorted by start, disjoint */
	size_t nregs, capregs;
	unsigned registered, failed;
	int first_error;
};

/* Entry C replaces whatever was registered over its range. */
static void apply(struct bk_space *s, struct uw_jitdump *j, const struct ldr_jd_code *c)
{
	/* The first registration ending above its start (ends are sorted too:
	 * the registrations are disjoint). */
	size_t i = BASE_COUNT_LE(j->regs, j->nregs, end, c->start), k = i;
	while (k < j->nregs && j->regs[k].start < c->end)
		uw_reg_remove_eh(s, j->regs[k++].code);
	if (k > i) {
		memmove(&j->regs[i], &j->regs[k], (j->nregs - k) * sizeof(*j->regs));
		j->nregs -= k - i;
	}
	if (!c->eh_len || c->end <= c->start)
		return;
	struct uw_jd_reg *v = base_grow(j->regs, &j->capregs, j->nregs + 1, sizeof(*v), 64);
	int err = v ? uw_reg_add_eh(s, c, c->eh, c->eh_len, c->eh_addr, c->start, c->end,
					j->path)
		    : BK_E_NOMEM;
	if (v)
		j->regs = v;
	if (err) {
		j->failed++;
		if (!j->first_error)
			j->first_error = err;
		return;
	}
	memmove(&j->regs[i + 1], &j->regs[i], (j->nregs - i) * sizeof(*j->regs));
	j->regs[i] = (struct uw_jd_reg){ c->start, c->end, c };
	j->nregs++;
	j->registered++;
}

static void advance(struct bk_space *s, struct uw_jitdump *j, uint64_t until)
{
	while (j->view < j->jd->ncode && j->jd->code[j->view].time <= until)
		apply(s, j, &j->jd->code[j->view++]);
}

/* Unregister J's code and free it. */
static void drop(struct bk_space *s, struct uw_jitdump *j)
{
	for (size_t i = 0; i < j->nregs; i++)
		uw_reg_remove_eh(s, j->regs[i].code);
	base_free(j->regs);
	ldr_jitdump_free(j->jd);
	base_free(j->path);
	if (j->fd >= 0)
		close(j->fd);
	base_free(j);
}

static void fill_stats(const struct uw_jitdump *j, struct bk_jitdump_stats *st)
{
	size_t size = st->size;
	const struct ldr_jitdump *jd = j->jd;
	memset(st, 0, sizeof(*st));
	st->size = size;
	st->pid = jd->pid;
	st->machine = jd->machine;
	st->time = jd->time;
	st->flags = jd->flags;
	st->loads = (unsigned)jd->nloads;
	st->moves = (unsigned)jd->nmoves;
	st->debug_info = (unsigned)jd->ndebug;
	st->debug_info_dropped = (unsigned)jd->debug_dropped;
	st->unwinding_info = (unsigned)jd->nunwind;
	st->applied = (unsigned)j->view;
	st->registered = (unsigned)j->nregs;
	st->unwinding_failed = j->failed;
	st->skipped = (unsigned)(jd->skipped + jd->moves_unknown);
	st->truncated = jd->truncated || jd->limit;
	st->first_error = jd->error ? jd->error : j->first_error;
}

int bk_space_add_jitdump(struct bk_space *s, const char *path, uint64_t until,
			 struct bk_jitdump_stats *stats)
{
	return uw_jitdump_add(s, path, path, until, stats, NULL);
}

int uw_jitdump_add(struct bk_space *s, const char *path, const char *name, uint64_t until,
		   struct bk_jitdump_stats *stats, bool *reread)
{
	if (reread)
		*reread = false;
	if (!s || !path || !name || (stats && stats->size < sizeof(*stats)))
		return BK_E_INVAL;
	if (s->local)
		return BK_E_UNSUPPORTED;
	/* The same file again, of the size it had: nothing was appended since
	 * (a JIT only appends): the reading stands, its view moved. */
	struct stat fst;
	for (struct uw_jitdump *o = s->jitdumps; o; o = o->next)
		if (!strcmp(o->path, name) && stat(path, &fst) == 0 && S_ISREG(fst.st_mode) &&
		    (uint64_t)fst.st_size == o->jd->file_len) {
			advance(s, o, until);
			if (stats)
				fill_stats(o, stats);
			return 0;
		}
	struct ldr_jitdump *jd;
	int err = ldr_jitdump_open(path, &jd);
	if (err)
		return err;
	if (jd->machine != s->arch->elf_machine) {
		ldr_jitdump_free(jd);
		return BK_E_UNSUPPORTED; /* another architecture's code */
	}
	struct uw_jitdump *j = base_calloc(1, sizeof(*j));
	if (!j || !(j->path = base_strdup(name)) || (err = ldr_jitdump_index(jd))) {
		if (j)
			base_free(j->path);
		base_free(j);
		ldr_jitdump_free(jd);
		return BK_E_NOMEM;
	}
	/* The same file again (read anew: the JIT appended to it): the new
	 * reading replaces the old one. */
	for (struct uw_jitdump **pp = &s->jitdumps; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->path, name)) {
			struct uw_jitdump *old = *pp;
			*pp = old->next;
			drop(s, old);
			break;
		}
	j->jd = jd;
	uint64_t size;
	j->fd = base_open_regular(path, &size); /* (-1 when it cannot: no code bytes) */
	j->next = s->jitdumps;
	s->jitdumps = j;
	advance(s, j, until);
	if (stats)
		fill_stats(j, stats);
	if (reread)
		*reread = true;
	return 0;
}

void bk_space_jitdump_until(struct bk_space *s, uint64_t until)
{
	for (struct uw_jitdump *j = s ? s->jitdumps : NULL; j; j = j->next)
		advance(s, j, until);
}

int uw_jitdump_symbol(const struct bk_space *s, uint64_t addr, struct uw_jd_symbol *out)
{
	for (const struct uw_jitdump *j = s->jitdumps; j; j = j->next) {
		const struct ldr_jd_code *c = ldr_jitdump_at(j->jd, addr, j->view);
		if (!c)
			continue;
		const struct ldr_jd_line *l = ldr_jitdump_line(j->jd, c, addr);
		*out = (struct uw_jd_symbol){ .path = j->path, .name = c->name, .start = c->start, .end = c->end,
					      .file = l ? l->file : NULL, .line = l ? l->line : 0,
					      .column = l ? l->column : 0, .seq = c->seq };
		return 1;
	}
	return 0;
}

int uw_jitdump_code(const struct bk_space *s, uint64_t addr, void *dst, size_t len)
{
	for (const struct uw_jitdump *j = s->jitdumps; j; j = j->next) {
		const struct ldr_jd_code *c = ldr_jitdump_at(j->jd, addr, j->view);
		if (!c)
			continue;
		if (!c->has_code || j->fd < 0 || len > c->end - addr)
			return BK_E_MEMORY;
		ssize_t n = pread(j->fd, dst, len, (off_t)(c->code_off + (addr - c->start)));
		return n == (ssize_t)len ? 0 : BK_E_MEMORY;
	}
	return BK_E_MEMORY;
}

void uw_jitdump_each(const struct bk_space *s,
		     void (*fn)(void *ctx, uint64_t start, uint64_t end, const char *path), void *ctx)
{
	for (const struct uw_jitdump *j = s->jitdumps; j; j = j->next)
		for (size_t i = 0; i < j->view; i++) {
			const struct ldr_jd_code *c = &j->jd->code[i];
			if (c->end > c->start && ldr_jitdump_at(j->jd, c->start, j->view) == c)
				fn(ctx, c->start, c->end, j->path);
		}
}

void uw_jitdump_destroy(struct bk_space *s)
{
	for (struct uw_jitdump *j = s->jitdumps, *next; j; j = next) {
		next = j->next;
		base_free(j->regs); /* the registry freed the registrations */
		ldr_jitdump_free(j->jd);
		base_free(j->path);
		if (j->fd >= 0)
			close(j->fd);
		base_free(j);
	}
	s->jitdumps = NULL;
}
