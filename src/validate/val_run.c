/* The validator's checker: runs a program under a driver (val.h,
 * "Drivers"), single-steps its threads, keeps their shadow stacks and
 * compares a walk at every checked instruction. It knows the program only
 * through the driver's ops (stops, registers, memory, breakpoints and a
 * space), so one checker serves every driver.
 *
 * Start. At each exec a breakpoint goes on the executable's entry point, or
 * on the --from function, and the program runs at full speed to it: the
 * dynamic loader's work is not single-stepped. At the entry the stack holds
 * no frame yet (the loader jumps there with the initial SP), so the shadow
 * stack kept from there is complete: its bottom frame is _start's, the
 * outermost. From --from it is not (the frames above are unknown and not
 * compared). Threads born after that start with a complete, empty shadow
 * stack (their first frame is libc's clone trampoline, the outermost).
 * Threads that existed already are interrupted and stepped from where they
 * are, with an incomplete one. Processes the program forks are not checked
 * (the driver keeps them out of sight). exec is followed and checking
 * restarts at the new executable's entry.
 *
 * A step. A stepping thread is resumed for one instruction and reports back
 * after it. The instruction at the PC is decoded once per PC (the code
 * cache) and kept as "pending" with the registers before it; at the next
 * stop, if the PC moved, it ran: a call pushes a shadow frame, a syscall may
 * be rt_sigreturn (pop to the signal marker) or change the map (mmap,
 * munmap, mprotect, pkey_mprotect, mremap: the map is re-read before the
 * next walk, new code becomes modules, and the space's cache of read-only
 * memory follows the new map), and every frame SP has passed is dropped.
 * Then, if the new PC is checked code, the thread is walked; if it is not,
 * the thread may run free (below, "Stepping over").
 *
 * Signals. A signal about to be delivered is passed on with the step. When
 * the program catches the signal, the thread stops again at the handler's
 * first instruction (the step reports there): the interrupted context
 * becomes a SIGNAL marker, expected back as a signal frame with the
 * interrupted PC, SP and general registers (rax excepted: a restarted
 * system call changes it), and the handler's return into the trampoline a
 * HANDLER frame.
 *
 * Limits (documented, not hidden): code written at run time is decoded once
 * per PC (JITs, self-modifying code); the first instructions of a thread
 * made by a raw clone system call cannot be unwound by anyone; stepping
 * over, swapcontext into a context suspended in checked code enters it
 * unseen. The ptrace driver adds its own (val_ptrace.c): a SIGTRAP the
 * program raises itself is taken for a step and swallowed; a thread running
 * free through an entry whose int3 another thread has lifted for its step
 * enters checked code unseen until its next breakpoint; the program reading
 * its own code sees our int3s.
 *
 * One space per executable image, kept across steps: its modules and row
 * cache stay, only memory the program may have written is dropped before
 * each walk. The checker's facts are Linux's, per architecture (struct
 * val_arch: registers by src/arch slot, what a call pushes, the system call
 * numbers, where the signal frame keeps the interrupted SP and PC; the
 * instruction classes are val_insn.c's). It trusts the driver to
 * keep the contract of val.h, "Drivers": above all, that what it reads
 * never shows a breakpoint and that each stop is reported once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "val.h"

#include "../unwind/unwind.h"


/* RUNNING: before checking starts. STEPPING: single-stepped. FREE: in
 * unchecked code at full speed (VAL_RESUME_SYSCALLS), until a breakpoint, a
 * signal or rt_sigreturn brings it back. */
enum mode { MODE_RUNNING, MODE_STEPPING, MODE_FREE };

struct thread {
	int tid;
	enum mode mode;
	bool complete;          /* the shadow stack reaches the outermost frame */
	bool want_stepping;     /* interrupted to start stepping */
	bool entering;          /* a caught signal went in: next stop is its handler */
	int entering_sig;
	uint64_t sig_regs[VAL_NREGS];
	uint64_t sig_valid;     /* slots of SIG_REGS the driver gave */
	bool have_pending;      /* the instruction at pending.pc is about to run */
	struct val_code pending;
	uint64_t pre[VAL_NREGS]; /* registers before it (by slot) */
	uint64_t pre_valid;     /* slots of PRE the driver gave */
	struct val_shadow shadow;
	/* FREE: the return it waits for (a breakpoint at RA, at SP >= CFA). */
	bool has_ret;
	uint64_t ret_addr, ret_cfa;
	/* In longjmp or the exception unwinder, nested NESC deep (one calls
	 * another), each entered at ESC_CFA - 8: it jumps to its target, so
	 * it is stepped until SP passes ESC_CFA by a jump or a return; with
	 * ESC_CALLEES the functions it calls still run free. */
	unsigned nesc;
	bool esc_callees[4];
	uint64_t esc_cfa[4];
	bool sigreturning;       /* FREE: the system call it is in is rt_sigreturn */
};

/* A breakpoint of the stepping-over machinery. */
enum {
	BP_ENTRY = 1,            /* where checked code may be entered */
	BP_ESCAPE = 2,           /* longjmp and kin: step all of it */
	BP_ESCAPE_CALLEES = 4,   /* the exception unwinder: step it, its callees
				  * run free */
	BP_JIT = 8,              /* __jit_debug_register_code: a JIT listed code
				  * for debuggers (the GDB JIT interface) */
};

struct bp {
	uint64_t addr;
	uint64_t module;         /* static ones: start of the module */
	uint32_t refs;           /* free threads waiting for a return here */
	uint8_t flags;           /* BP_*; 0: a return breakpoint only */
	bool set;                /* the driver has it */
};

struct mm_slot {
	uint64_t pc, image;
	size_t index;           /* into res->mm, + 1; 0 = empty */
};

struct run {
	const struct val_opts *o;
	struct val_result *res;
	const struct val_driver_ops *dops;
	struct val_driver *d;
	const struct val_arch *arch; /* the program's: slots, calls, system calls */
	struct thread **threads;
	size_t nthreads, cap;
	struct thread *last;
	struct bk_space *space;  /* the driver's, for the current image */
	struct val_decoder *dec;
	struct val_code_cache code;
	bool maps_dirty;
	bool triggered;
	bool trigger_complete;  /* the breakpoint is the entry point */
	bool trigger_set;       /* the breakpoint where checking starts */
	uint64_t trigger_addr;
	uint64_t entry;
	char *exe_path;         /* the executable module's path in the space */
	uint64_t image;
	struct mm_slot *mslots;
	size_t nmslots;
	size_t mm_cap;
	struct timespec t0, last_progress;
	bool clock_started;
	/* Stepping over (not with step_all). */
	struct bp *bps;          /* entries and escapes, sorted by address */
	size_t nbps;
	struct bp *rbps;         /* return breakpoints elsewhere, unsorted */
	size_t nrbps, rbps_cap;
	uint8_t *fast_buf;      /* --method fast: the copy of a thread's stack */
};

/* ---- Helpers ------------------------------------------------------------- */

static double since(const struct timespec *a)
{
	struct timespec b;
	clock_gettime(CLOCK_MONOTONIC, &b);
	return (double)(b.tv_sec - a->tv_sec) + (double)(b.tv_nsec - a->tv_nsec) / 1e9;
}

__attribute__((format(printf, 2, 3)))
static void set_error(struct run *r, const char *fmt, ...)
{
	if (r->res->error)
		return;
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	r->res->error = base_strdup(buf);
}

/* The registers the shadow stack keeps, by slot (src/arch); returns the
 * mask of the slots the driver gave. */
static uint64_t shadow_regs(const struct run *r, const struct bk_regs *u, uint64_t out[VAL_NREGS])
{
	const struct arch_info *ai = r->arch->ai;
	uint64_t valid = 0;
	for (unsigned s = 0; s < ai->nslots && s < VAL_NREGS; s++) {
		out[s] = 0;
		if (bk_regs_get(u, ai->slot_regno[s], &out[s]))
			valid |= (uint64_t)1 << s;
	}
	return valid;
}

static uint64_t pc_of(const struct run *r, const struct bk_regs *u)
{
	return u->val[r->arch->ai->slot_regno[r->arch->pc]];
}

static uint64_t sp_of(const struct run *r, const struct bk_regs *u)
{
	return u->val[r->arch->ai->slot_regno[r->arch->sp]];
}

/* Is a frame whose CFA is CFA over, with SP at SP? (Where the call pushed
 * the return address the callee runs below its CFA; on AArch64 at it.) */
static bool past(const struct run *r, uint64_t sp, uint64_t cfa)
{
	return r->arch->ra_size ? sp >= cfa : sp > cfa;
}

/* Read up to LEN bytes at ADDR of the program, breakpoints hidden; how
 * many could be read. */
static size_t read_prog(struct run *r, uint64_t addr, void *dst, size_t len)
{
	return r->dops->read(r->d, addr, dst, len);
}

/* System calls that change the map. */
static bool maps_call(const struct run *r, uint64_t nr)
{
	const struct val_arch *a = r->arch;
	return nr == a->nr_mmap || nr == a->nr_mprotect || nr == a->nr_munmap ||
	       nr == a->nr_mremap || nr == a->nr_pkey_mprotect;
}

/* ---- Breakpoints --------------------------------------------------------- */

static struct bp *find_bp(struct run *r, uint64_t addr)
{
	size_t lo = BASE_COUNT_LT(r->bps, r->nbps, addr, addr);
	if (lo < r->nbps && r->bps[lo].addr == addr)
		return &r->bps[lo];
	for (size_t i = 0; i < r->nrbps; i++)
		if (r->rbps[i].addr == addr)
			return &r->rbps[i];
	return NULL;
}

/* Give the driver what B wants: a breakpoint while anyone needs it. One
 * the driver cannot set stays unset. */
static void sync_bp(struct run *r, struct bp *b)
{
	bool want = b->flags || b->refs;
	if (want == b->set)
		return;
	if (want) {
		b->set = r->dops->insert_bp(r->d, b->addr) == 0;
	} else {
		r->dops->remove_bp(r->d, b->addr, true);
		b->set = false;
	}
}

/* Forget a return breakpoint nobody needs any more. */
static void gc_bp(struct run *r, struct bp *b)
{
	if (!r->nrbps || b < r->rbps || b >= r->rbps + r->nrbps || b->refs || b->set)
		return;
	*b = r->rbps[--r->nrbps];
}

/* T waits for a return to ADDR at SP >= CFA. */
static bool add_return(struct run *r, struct thread *t, uint64_t addr, uint64_t cfa)
{
	struct bp *b = find_bp(r, addr);
	if (!b) {
		if (r->nrbps == r->rbps_cap) {
			size_t ncap = r->rbps_cap ? r->rbps_cap * 2 : 16;
			void *p = base_realloc(r->rbps, ncap * sizeof(*r->rbps));
			if (!p)
				return false;
			r->rbps = p;
			r->rbps_cap = ncap;
		}
		b = &r->rbps[r->nrbps++];
		*b = (struct bp){ .addr = addr };
	}
	b->refs++;
	sync_bp(r, b);
	if (!b->set) {
		b->refs--;
		gc_bp(r, b);
		return false;
	}
	t->has_ret = true;
	t->ret_addr = addr;
	t->ret_cfa = cfa;
	return true;
}

static void drop_return(struct run *r, struct thread *t)
{
	if (!t->has_ret)
		return;
	t->has_ret = false;
	struct bp *b = find_bp(r, t->ret_addr);
	if (!b || !b->refs)
		return;
	b->refs--;
	sync_bp(r, b);
	gc_bp(r, b);
}

/* ---- Threads ------------------------------------------------------------- */

static struct thread *find_thread(struct run *r, int tid)
{
	if (r->last && r->last->tid == tid)
		return r->last;
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i]->tid == tid)
			return r->last = r->threads[i];
	return NULL;
}

static struct thread *add_thread(struct run *r, int tid)
{
	struct thread *t = find_thread(r, tid);
	if (t)
		return t;
	if (r->nthreads == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 16;
		void *p = base_realloc(r->threads, ncap * sizeof(*r->threads));
		if (!p)
			return NULL;
		r->threads = p;
		r->cap = ncap;
	}
	t = base_calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->tid = tid;
	/* Born after checking started: stepped from its first instruction,
	 * with the whole stack known. */
	t->mode = r->triggered ? MODE_STEPPING : MODE_RUNNING;
	t->complete = true;
	if (r->triggered)
		r->res->stats.threads++;
	r->threads[r->nthreads++] = t;
	return r->last = t;
}

static void free_thread(struct thread *t)
{
	val_shadow_free(&t->shadow);
	base_free(t);
}

static void drop_thread(struct run *r, int tid)
{
	for (size_t i = 0; i < r->nthreads; i++)
		if (r->threads[i]->tid == tid) {
			if (r->last == r->threads[i])
				r->last = NULL;
			/* Its breakpoints go (the process may live on). */
			drop_return(r, r->threads[i]);
			free_thread(r->threads[i]);
			r->threads[i] = r->threads[--r->nthreads];
			return;
		}
}

/* ---- Mismatches ---------------------------------------------------------- */

static size_t mslot_of(uint64_t pc, uint64_t image, size_t n)
{
	return (size_t)(((pc ^ (image << 56)) * 0x9e3779b97f4a7c15ull) >> 17) & (n - 1);
}

static struct mm_slot *mm_find(struct run *r, uint64_t pc, uint64_t image, bool *fresh)
{
	*fresh = false;
	if ((r->res->nmm + 1) * 2 > r->nmslots) {
		size_t n = r->nmslots ? r->nmslots * 2 : 256;
		struct mm_slot *s = base_calloc(n, sizeof(*s));
		if (!s)
			return NULL;
		for (size_t i = 0; i < r->nmslots; i++) {
			if (!r->mslots[i].index)
				continue;
			size_t h = mslot_of(r->mslots[i].pc, r->mslots[i].image, n);
			while (s[h].index)
				h = (h + 1) & (n - 1);
			s[h] = r->mslots[i];
		}
		base_free(r->mslots);
		r->mslots = s;
		r->nmslots = n;
	}
	size_t h = mslot_of(pc, image, r->nmslots);
	while (r->mslots[h].index) {
		if (r->mslots[h].pc == pc && r->mslots[h].image == image)
			return &r->mslots[h];
		h = (h + 1) & (r->nmslots - 1);
	}
	*fresh = true;
	r->mslots[h].pc = pc;
	r->mslots[h].image = image;
	return &r->mslots[h];
}

/* Module path, function and offset of ADDR. */
static void describe_addr(struct run *r, uint64_t addr, char **module, char **function,
			  uint64_t *offset)
{
	struct bk_module_info mi;
	if (bk_space_module_at(r->space, addr, &mi) == 0)
		*module = base_strdup(mi.path);
	struct bk_symbol sym[8];
	int n = bk_space_symbolize(r->space, addr, sym, 8);
	if (n > 0 && sym[n - 1].function) {
		*function = base_strdup(sym[n - 1].function);
		*offset = sym[n - 1].offset;
	}
}

static char *disasm_at(struct run *r, uint64_t pc)
{
	uint8_t bytes[16];
	char buf[160];
	if (pc == VAL_SITE_UNKNOWN)
		return base_strdup("? (a frame of code that ran at full speed)");
	size_t n = read_prog(r, pc, bytes, sizeof(bytes));
	val_disasm(r->dec, bytes, n, pc, buf, sizeof(buf));
	return base_strdup(buf);
}

static void rule_text(enum bk_arch arch, const struct bk_rule *rule, char *buf, size_t len)
{
	const char *rn = bk_reg_name(arch, rule->reg);
	switch (rule->kind) {
	case BK_RULE_UNDEFINED: snprintf(buf, len, "undef"); break;
	case BK_RULE_SAME_VALUE: snprintf(buf, len, "same"); break;
	case BK_RULE_OFFSET: snprintf(buf, len, "[cfa%+lld]", (long long)rule->offset); break;
	case BK_RULE_VAL_OFFSET: snprintf(buf, len, "cfa%+lld", (long long)rule->offset); break;
	case BK_RULE_REGISTER: snprintf(buf, len, "%s", rn ? rn : "?"); break;
	case BK_RULE_EXPRESSION: snprintf(buf, len, "[expr]"); break;
	case BK_RULE_VAL_EXPRESSION: snprintf(buf, len, "expr"); break;
	case BK_RULE_CFA_REG_OFFSET:
		snprintf(buf, len, "%s%+lld", rn ? rn : "?", (long long)rule->offset);
		break;
	case BK_RULE_CFA_EXPRESSION: snprintf(buf, len, "expr"); break;
	default: snprintf(buf, len, "?"); break;
	}
}

/* The CFI row in force at runtime address PC, as text; *NOCFI when no
 * FDE covers PC. */
static char *row_at(struct run *r, uint64_t pc, bool *nocfi)
{
	*nocfi = true;
	struct bk_module_info mi;
	if (bk_space_module_at(r->space, pc, &mi) != 0)
		return base_strdup("no module");
	/* Registered code (a jitdump's) first, as the walk finds it. */
	struct bk_row row;
	int err = uw_space_row_at(r->space, pc, &row);
	char buf[1024];
	*nocfi = err == BK_E_NOT_FOUND || err == BK_E_NO_UNWIND;
	if (err) {
		snprintf(buf, sizeof(buf), "no CFI (%s)", bk_strerror(err));
		return base_strdup(buf);
	}
	size_t at = 0;
	char cell[64];
	rule_text(r->arch->arch, &row.cfa, cell, sizeof(cell));
	at += (size_t)snprintf(buf + at, sizeof(buf) - at, "cfa=%s", cell);
	for (unsigned i = 0; i < row.nregs && at < sizeof(buf) - 80; i++) {
		const char *rn = bk_reg_name(r->arch->arch, row.regno[i]);
		rule_text(r->arch->arch, &row.regs[i], cell, sizeof(cell));
		at += (size_t)snprintf(buf + at, sizeof(buf) - at, " %s=%s",
				       row.regno[i] == row.ra_reg ? "ra" : rn ? rn : "?", cell);
	}
	if (at < sizeof(buf) - 80)
		snprintf(buf + at, sizeof(buf) - at, "  (row 0x%llx..0x%llx of FDE 0x%llx..0x%llx%s%s)",
			 (unsigned long long)row.loc, (unsigned long long)row.loc_end,
			 (unsigned long long)row.fde_begin, (unsigned long long)row.fde_end,
			 row.from_debug_frame ? ", .debug_frame" : "",
			 row.signal_frame ? ", signal frame" : "");
	return base_strdup(buf);
}

/* Count a mismatch under its culprit; the first one is described. Returns
 * whether no CFI covers the culprit. */
static bool record(struct run *r, struct thread *t, const struct val_mismatch *mm, uint64_t pc)
{
	bool fresh;
	struct mm_slot *slot = mm_find(r, mm->culprit_pc, r->image, &fresh);
	if (!slot)
		return false;
	if (!fresh) {
		struct val_mismatch *e = &r->res->mm[slot->index - 1];
		e->count++;
		if (e->last_pc != pc) {
			e->pcs++;
			e->last_pc = pc;
		}
		return e->nocfi;
	}
	if (r->res->nmm == r->mm_cap) {
		size_t ncap = r->mm_cap ? r->mm_cap * 2 : 64;
		void *p = base_realloc(r->res->mm, ncap * sizeof(*r->res->mm));
		if (!p) {
			slot->pc = 0;
			slot->image = 0;
			return false; /* advisory: counted in the stats anyway */
		}
		r->res->mm = p;
		r->mm_cap = ncap;
	}
	slot->index = r->res->nmm + 1;
	struct val_mismatch *e = &r->res->mm[r->res->nmm++];
	*e = *mm;
	/* The walk fills differences up to ndiffs only (val_check.c). */
	if (e->ndiffs < VAL_MAX_DIFFS)
		memset(&e->diffs[e->ndiffs], 0, (VAL_MAX_DIFFS - e->ndiffs) * sizeof(e->diffs[0]));
	e->image = r->image;
	e->count = 1;
	e->pcs = 1;
	e->last_pc = pc;
	e->tid = t->tid;
	e->insn_pc = pc;
	describe_addr(r, mm->culprit_pc, &e->module, &e->function, &e->offset);
	e->offset = e->function ? e->offset : 0;
	/* The culprit's instruction: the checked one for frame 0, else the
	 * call (or interrupted instruction) that made frame - 1. */
	e->culprit_insn = disasm_at(r, mm->culprit_site ? mm->culprit_site : pc);
	e->row = row_at(r, mm->culprit_pc, &e->nocfi);
	describe_addr(r, pc, &e->insn_module, &e->insn_function, &e->insn_offset);
	e->insn_text = disasm_at(r, pc);
	return e->nocfi;
}

/* ---- Checked code -------------------------------------------------------- */

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Is --only NAME a module? A path, a shared object's file name, the
 * executable's file name, "[vdso]" or "[jit]" (JIT code a jitdump
 * describes, or a JIT lists through the GDB JIT interface); any other
 * name is a function. */
static bool names_a_module(const struct run *r, const char *name)
{
	return strchr(name, '/') || strstr(name, ".so") || !strcmp(name, "[vdso]") ||
	       !strcmp(name, "[jit]") || (r->exe_path && !strcmp(name, base_name(r->exe_path)));
}



/* Does module NAME name module PATH? A file name matches the path's last
 * component, also with a version after it: the map names the file a
 * soname link points to ("libstdc++.so.6" is libstdc++.so.6.0.30). */
static bool names_module(const char *name, const char *path)
{
	if (!path || !path[0])
		return false;
	if (!strcmp(name, path))
		return true;
	if (!strcmp(name, "[jit]")) /* a jitdump's code, a GDB JIT object's */
		return ldr_jitdump_name(path, false) || !strncmp(path, "[jit 0x", 7);
	if (strchr(name, '/'))
		return false;
	const char *b = base_name(path);
	size_t n = strlen(name);
	return !strncmp(name, b, n) && (b[n] == 0 || (b[n] == '.' && b[n + 1] >= '0' && b[n + 1] <= '9'));
}

static bool names_function(const char *name, const char *fn)
{
	size_t n = strlen(name);
	return fn && (!strcmp(fn, name) || (!strncmp(fn, name, n) && fn[n] == '('));
}

static bool is_checked(struct run *r, uint64_t pc)
{
	struct bk_module_info mi;
	if (bk_space_module_at(r->space, pc, &mi) != 0)
		return false;
	if (!r->o->nonly)
		return r->exe_path && !strcmp(mi.path, r->exe_path);
	bool functions = false;
	for (size_t i = 0; i < r->o->nonly; i++) {
		if (!names_a_module(r, r->o->only[i]))
			functions = true;
		else if (names_module(r->o->only[i], mi.path))
			return true;
	}
	if (!functions)
		return false;
	struct bk_symbol sym[8];
	int n = bk_space_symbolize(r->space, pc, sym, 8);
	if (n <= 0)
		return false;
	for (size_t i = 0; i < r->o->nonly; i++)
		if (!names_a_module(r, r->o->only[i]) && names_function(r->o->only[i], sym[n - 1].function))
			return true;
	return false;
}

/* The facts for PC, decoded on first sight. */
static const struct val_code *code_at(struct run *r, uint64_t pc)
{
	static struct val_code none = { .kind = VAL_INSN_UNKNOWN, .len = 1 };
	bool fresh;
	struct val_code *c = val_code_get(&r->code, pc, &fresh);
	if (!c)
		return &none;
	if (fresh) {
		uint8_t bytes[16];
		size_t n = read_prog(r, pc, bytes, sizeof(bytes));
		val_decode(r->dec, bytes, n, pc, c);
		c->checked = 2;
	}
	if (c->checked == 2)
		c->checked = r->space && is_checked(r, pc);
	return c;
}

/* ---- Where checked code is entered --------------------------------------- */

/* Functions that leave by jumping to a frame further out: stepped from
 * their entry until SP passes the entry's CFA by a jump. The exception
 * unwinder jumps from its own frame (uw_install_context is a macro around
 * __builtin_eh_return), so what it calls may still run free; longjmp's
 * jump is in a callee (__longjmp), so nothing of it runs free. */
static const char *const escape_callees[] = {
	"_Unwind_RaiseException", "_Unwind_Resume", "_Unwind_Resume_or_Rethrow",
	"_Unwind_ForcedUnwind",
};
static const char *const escape_all[] = {
	"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk", "__libc_siglongjmp",
	"__libc_longjmp", "setcontext", "swapcontext",
};

/* Heapsort by address: no allocation (the C library's qsort may allocate,
 * and the in-process driver runs this inside the program, maybe on top of
 * its malloc). */
static void sift(struct bp *v, size_t root, size_t n)
{
	for (size_t child; (child = 2 * root + 1) < n; root = child) {
		if (child + 1 < n && v[child + 1].addr > v[child].addr)
			child++;
		if (v[root].addr >= v[child].addr)
			return;
		struct bp t = v[root];
		v[root] = v[child];
		v[child] = t;
	}
}

static void sort_bps(struct bp *v, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		sift(v, i, n);
	for (size_t end = n; end > 1; end--) {
		struct bp t = v[0];
		v[0] = v[end - 1];
		v[end - 1] = t;
		sift(v, 0, end - 1);
	}
}

struct bp_list {
	struct bp *v;
	size_t n, cap;
};

static void bp_list_add(struct bp_list *l, uint64_t addr, uint64_t module, uint8_t flags)
{
	if (l->n == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 1024;
		void *p = base_realloc(l->v, ncap * sizeof(*l->v));
		if (!p)
			return;
		l->v = p;
		l->cap = ncap;
	}
	l->v[l->n++] = (struct bp){ .addr = addr, .module = module, .flags = flags };
}

/* Link-time starts of the FDEs of ELF's .eh_frame. */
static void fde_starts(struct bk_elf *elf, struct val_addrs *out)
{
	if (!elf || !elf->eh_frame.present)
		return;
	const struct cfi_section *sec = &elf->eh_frame.sec;
	uint64_t off = 0;
	while (off < sec->len) {
		struct cfi_entry e;
		if (cfi_entry_at(sec, off, &e) || e.kind == CFI_ENTRY_TERMINATOR)
			break;
		if (e.kind == CFI_ENTRY_FDE) {
			struct cfi_fde fde;
			struct cfi_cie cie;
			if (!cfi_decode_fde(sec, off, &fde, &cie) && fde.pc_begin < fde.pc_end)
				val_addrs_push(out, fde.pc_begin);
		}
		off = e.next_off;
	}
}

/* The entries of module M that are checked code: all its functions when
 * WHOLE, else its functions named by --only. */
static void module_entries(struct run *r, const struct uw_module *m, bool whole,
			   const char **fnames, size_t nfn, struct bp_list *out)
{
	struct val_addrs a = { 0 };
	uint64_t arrays[3][2], plt0 = 0;
	bool image = m->path[0] == '['; /* a JIT's object: no file to read symbols from */
	if (whole) {
		fde_starts(m->elf, &a);
		val_elf_entries(m->path, NULL, 0, &a, arrays, &plt0);
	} else if (nfn && image) {
		fde_starts(m->elf, &a); /* those of the named functions: is_checked below */
	} else if (nfn) {
		val_elf_entries(m->path, fnames, nfn, &a, arrays, &plt0);
	}
	for (size_t i = 0; i < a.n; i++) {
		uint64_t at = a.v[i] + (uint64_t)m->bias;
		if (a.v[i] == plt0 && plt0)
			continue;
		if (at >= m->start && at < m->end && is_checked(r, at))
			bp_list_add(out, at, m->start, BP_ENTRY);
	}
	/* Constructors and destructors called through the relocated arrays. */
	for (int k = 0; whole && k < 3; k++) {
		uint64_t words[512];
		size_t len = arrays[k][1] < sizeof(words) ? arrays[k][1] : sizeof(words);
		if (!arrays[k][0] || !len)
			continue;
		size_t got = read_prog(r, arrays[k][0] + (uint64_t)m->bias, words, len);
		for (size_t i = 0; i < got / 8; i++)
			if (words[i] >= m->start && words[i] < m->end && is_checked(r, words[i]))
				bp_list_add(out, words[i], m->start, BP_ENTRY);
	}
	a.n = 0;
	val_elf_entries(m->path, escape_callees, sizeof(escape_callees) / sizeof(*escape_callees),
			&a, arrays, &plt0);
	for (size_t i = 0; i < a.n; i++)
		bp_list_add(out, a.v[i] + (uint64_t)m->bias, m->start, BP_ESCAPE_CALLEES);
	a.n = 0;
	val_elf_entries(m->path, escape_all, sizeof(escape_all) / sizeof(*escape_all), &a, arrays,
			&plt0);
	for (size_t i = 0; i < a.n; i++)
		bp_list_add(out, a.v[i] + (uint64_t)m->bias, m->start, BP_ESCAPE);
	base_free(a.v);
}

/* JIT code is entered at the start of each piece a jitdump describes. */
struct jit_entries {
	struct run *r;
	struct bp_list *out;
};

static void jit_entry(void *ctx, uint64_t start, uint64_t end, const char *path)
{
	struct jit_entries *je = ctx;
	(void)end;
	(void)path;
	if (is_checked(je->r, start))
		bp_list_add(je->out, start, start, BP_ENTRY);
}

/* (Re)build the entry and escape breakpoints from the modules now known:
 * kept where they were, set where new, forgotten where their module went
 * (its memory is not ours to write any more). */
static void rebuild_bps(struct run *r)
{
	if (r->o->step_all || !r->space)
		return;
	const char *fnames[64];
	size_t nfn = 0;
	for (size_t i = 0; i < r->o->nonly && nfn < 64; i++)
		if (!names_a_module(r, r->o->only[i]))
			fnames[nfn++] = r->o->only[i];
	struct bp_list l = { 0 };
	for (size_t i = 0; i < r->space->nmods; i++) {
		const struct uw_module *m = &r->space->mods[i];
		/* Where a JIT tells debuggers of new code: a breakpoint that
		 * reads its list again (gdb's own). */
		uint64_t reg;
		if (m->elf && ldr_find_symbol(m->elf->ldr, "__jit_debug_register_code", -1, &reg) == 0)
			bp_list_add(&l, reg + (uint64_t)m->bias, m->start, BP_JIT);
		bool gdb_jit = m->path && !strncmp(m->path, "[jit 0x", 7); /* (an image) */
		if (!m->path || !m->path[0] || (m->path[0] == '[' && !gdb_jit))
			continue;
		bool whole = false;
		if (!r->o->nonly)
			whole = r->exe_path && !strcmp(m->path, r->exe_path);
		for (size_t k = 0; k < r->o->nonly && !whole; k++)
			whole = names_a_module(r, r->o->only[k]) && names_module(r->o->only[k], m->path);
		module_entries(r, m, whole, fnames, nfn, &l);
	}
	struct jit_entries je = { r, &l };
	uw_jitdump_each(r->space, jit_entry, &je);
	sort_bps(l.v, l.n);
	size_t n = 0;
	for (size_t i = 0; i < l.n; i++) {
		if (n && l.v[n - 1].addr == l.v[i].addr)
			l.v[n - 1].flags |= l.v[i].flags;
		else
			l.v[n++] = l.v[i];
	}
	l.n = n;
	/* Carry the old state over (a breakpoint of the same module, or a
	 * return breakpoint there): it is the new one's now. */
	for (size_t i = 0; i < l.n; i++) {
		struct bp *nb = &l.v[i];
		struct bp *old = find_bp(r, nb->addr);
		if (!old || (old->flags && old->module != nb->module))
			continue;
		nb->refs = old->refs;
		nb->set = old->set;
		old->refs = 0;
		old->set = false;
		gc_bp(r, old);
	}
	/* Old ones not carried over: taken out, and written back only where
	 * their module is still mapped. */
	for (size_t i = 0; i < r->nbps; i++) {
		const struct bp *ob = &r->bps[i];
		if (!ob->set)
			continue;
		const struct uw_module *m = uw_space_find(r->space, ob->addr);
		r->dops->remove_bp(r->d, ob->addr, m && m->start == ob->module);
	}
	base_free(r->bps);
	r->bps = l.v;
	r->nbps = l.n;
	size_t entries = 0;
	for (size_t i = 0; i < r->nbps; i++) {
		struct bp *b = &r->bps[i];
		sync_bp(r, b);
		if (!b->set)
			b->flags = 0; /* no code to set it in: never reached */
		entries += (b->flags & BP_ENTRY) != 0;
	}
	r->res->stats.breakpoints = entries;
}

/* Forget every breakpoint (the image is gone, and the driver's went with
 * it). */
static void forget_bps(struct run *r)
{
	base_free(r->bps);
	r->bps = NULL;
	r->nbps = 0;
	r->nrbps = 0;
}

/* ---- The space of the current image -------------------------------------- */

/* The objects a JIT lists for debuggers (the GDB JIT interface), read
 * again: how many were added. */
static unsigned gdb_jit(struct run *r)
{
	struct bk_gdb_jit_stats st = { .size = sizeof(st) };
	if (!r->space)
		return 0;
	r->dops->space_invalidate(r->d); /* the list as it is now, not as cached */
	if (bk_space_add_gdb_jit(r->space, &st) != 0)
		return 0;
	return st.added + st.removed;
}

static int open_space(struct run *r, int tid)
{
	int err = r->dops->space_open(r->d, tid, &r->space);
	if (err) {
		r->space = NULL;
		return err;
	}
	if (r->o->fp_only)
		bk_space_set_flags(r->space, BK_SPACE_NO_CFI);
	struct bk_module_info mi;
	base_free(r->exe_path);
	r->exe_path = NULL;
	if (bk_space_module_at(r->space, r->entry, &mi) == 0)
		r->exe_path = base_strdup(mi.path);
	val_code_clear(&r->code);
	r->maps_dirty = false;
	gdb_jit(r);
	rebuild_bps(r);
	return 0;
}

static void refresh_modules(struct run *r)
{
	size_t added = 0;
	r->maps_dirty = false;
	if (r->dops->space_refresh(r->d, &added) == 0 && added + gdb_jit(r)) {
		val_code_clear(&r->code);
		r->res->stats.refreshes++;
		rebuild_bps(r);
	}
}

/* ---- Stepping ------------------------------------------------------------ */

static void progress(struct run *r)
{
	if (!r->o->progress || !r->clock_started || since(&r->last_progress) < 1.0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &r->last_progress);
	r->res->stats.seconds = since(&r->t0);
	r->o->progress(r->o->progress_ctx, &r->res->stats);
}

/* The innermost frame the shadow stack knows (gaps aside), or NULL. */
static struct val_frame *top_known(struct thread *t)
{
	for (size_t i = t->shadow.n; i-- > 0;)
		if (t->shadow.f[i].kind != VAL_FRAME_GAP)
			return &t->shadow.f[i];
	return NULL;
}

/* The pending instruction ran if the PC moved: apply what it did to the
 * shadow stack. Then drop the frames SP has passed. */
static void settle(struct run *r, struct thread *t, const uint64_t now[VAL_NREGS])
{
	struct val_stats *st = &r->res->stats;
	const struct val_arch *a = r->arch;
	uint64_t now_sp = now[a->sp], now_pc = now[a->pc];
	if (t->have_pending && now_pc != t->pending.pc) {
		t->have_pending = false;
		switch (t->pending.kind) {
		case VAL_INSN_CALL: {
			struct val_frame f = {
				.ra = t->pending.pc + t->pending.len,
				.cfa = t->pre[a->sp],
				.site = t->pending.pc,
				.known = a->callee_saved & t->pre_valid,
				.kind = VAL_FRAME_CALL,
			};
			memcpy(f.regs, t->pre, sizeof(f.regs));
			if (now_sp != f.cfa - a->ra_size)
				st->anomalies++;
			val_shadow_push(&t->shadow, &f);
			break;
		}
		case VAL_INSN_RET: {
			struct val_frame *top = top_known(t);
			if (top && now_sp >= top->cfa && top->ra != now_pc)
				st->anomalies++;
			/* Where SP does not move at a return (AArch64 leaves),
			 * the frame returned from ends here, and the gap above
			 * it with it. */
			if (top && !a->ra_size && now_sp == top->cfa && top->ra == now_pc &&
			    top->kind != VAL_FRAME_SIGNAL)
				t->shadow.n = (size_t)(top - t->shadow.f);
			break;
		}
		case VAL_INSN_SYSCALL: {
			/* The map changed: new code may need modules, and the
			 * space keeps read-only memory cached by the map. */
			uint64_t nr = t->pre[a->nr_reg];
			if (nr == a->nr_rt_sigreturn)
				val_shadow_sigreturn(&t->shadow);
			else if (maps_call(r, nr))
				r->maps_dirty = true;
			break;
		}
		}
	}
	size_t before = t->shadow.n;
	val_shadow_drop_dead(&t->shadow, now_sp, !a->ra_size);
	/* Everything dropped by a stack switch: what comes back is unknown. */
	if (before && !t->shadow.n && t->pending.kind != VAL_INSN_RET)
		t->complete = false;
}

/* --method fast: a copy of the stack from just below SP up, page by page
 * until a page cannot be read or FAST_WINDOW bytes are copied, as the
 * PC-only walk's window (its hot loop reads ordinary frames from there;
 * beyond it, it reads through the space like the cursor). */
#define FAST_WINDOW (64 * 1024)
static bool fast_window(struct run *r, uint64_t sp, struct uw_window *win)
{
	if (!r->fast_buf && !(r->fast_buf = base_alloc(FAST_WINDOW)))
		return false;
	uint64_t start = (sp - 256) & ~(uint64_t)4095;
	size_t n = 0;
	while (n < FAST_WINDOW &&
	       r->space->ops.read_mem(r->space->ctx, start + n, r->fast_buf + n, 4096) == 0)
		n += 4096;
	*win = (struct uw_window){ start, n, r->fast_buf };
	return n > 0;
}

/* The thread stopped at the first instruction of a signal handler. */
/* Where the signal frame at a handler's entry (SP HSP) keeps the
 * interrupted SP and PC: the kernel's ucontext (src/arch's sigframe layout;
 * above a pushed return address where calls push one). */
static bool sigframe_sp_pc(struct run *r, uint64_t hsp, uint64_t *sp, uint64_t *pc)
{
	const struct arch_info *ai = r->arch->ai;
	const struct arch_sigframe *sf = &ai->sigframe;
	uint64_t gregs = hsp + r->arch->ra_size + sf->ucontext_off + sf->gregs_off;
	bool have_sp = false, have_pc = false;
	for (unsigned i = 0; i < sf->nregs; i++) {
		if (sf->reg[i].regno == ai->sp_reg)
			have_sp = read_prog(r, gregs + sf->reg[i].off, sp, 8) == 8;
		else if (sf->reg[i].regno == ai->pc_reg)
			have_pc = read_prog(r, gregs + sf->reg[i].off, pc, 8) == 8;
	}
	return have_sp && have_pc;
}

static void handler_entry(struct run *r, struct thread *t, const uint64_t now[VAL_NREGS])
{
	struct val_stats *st = &r->res->stats;
	const struct val_arch *a = r->arch;
	const uint64_t *in = t->sig_regs;
	/* The kernel's frame. Only the PC is taken from it: a system call
	 * restart moves it back over the system call instruction. */
	uint64_t ip = in[a->pc], fsp, fpc;
	if (sigframe_sp_pc(r, now[a->sp], &fsp, &fpc)) {
		if (fsp != in[a->sp])
			st->anomalies++;
		if (fpc == ip || fpc == ip - a->restart_len) {
			ip = fpc;
		} else if (fsp == in[a->sp]) {
			/* The signal was delivered further on than where it was
			 * reported: instructions ran that the shadow stack did
			 * not see (qemu-user does this with signals that arrive
			 * while it steps). Nothing checked from here would be
			 * sure: the run ends, said so. */
			set_error(r, "thread %d: signal %d was delivered at 0x%llx, after it was "
				     "reported at 0x%llx (instructions ran unseen); the run cannot go on",
				  t->tid, t->entering_sig, (unsigned long long)fpc, (unsigned long long)ip);
			r->dops->kill(r->d);
			return;
		} else {
			st->anomalies++;
		}
	}
	uint64_t isp = in[a->sp], hsp = now[a->sp];
	struct val_frame m = {
		.ra = ip,
		.cfa = isp,
		.site = ip,
		.known = a->signal_known & t->sig_valid,
		.kind = VAL_FRAME_SIGNAL,
		.altstack = !(hsp < isp && isp - hsp < (64u << 10)),
		.handler_sp = hsp,
	};
	memcpy(m.regs, in, sizeof(m.regs));
	val_shadow_push(&t->shadow, &m);
	/* The handler returns into the trampoline: its address pushed, or
	 * in the link register. */
	uint64_t restorer = 0;
	if (a->ra_size)
		read_prog(r, hsp, &restorer, sizeof(restorer));
	else
		restorer = now[a->lr];
	struct val_frame h = {
		.ra = restorer,
		.cfa = hsp + a->ra_size,
		.known = a->callee_saved & t->sig_valid,
		.kind = VAL_FRAME_HANDLER,
	};
	memcpy(h.regs, now, sizeof(h.regs));
	val_shadow_push(&t->shadow, &h);
	st->signals++;
}

static void check(struct run *r, struct thread *t, const struct bk_regs *u, struct val_code *c)
{
	struct val_stats *st = &r->res->stats;
	r->dops->space_invalidate(r->d);
	struct val_walk_in in = {
		.arch = r->arch,
		.space = r->space,
		.regs = u,
		.shadow = &t->shadow,
		.complete = t->complete,
		.max_frames = r->o->max_frames,
		/* A frame-pointer walk recovers rbp, not what callees saved. */
		.call_regs = r->o->fp_only ? r->arch->fp_saved : r->arch->callee_saved,
	};
	struct val_mismatch mm;
	st->insns_checked++;
	if (!c->seen) {
		c->seen = 1;
		st->distinct_pcs++;
	}
	/* Registers read at every frame; then, every other instruction, a
	 * second walk that reads them at the last frame only: the values the
	 * cursor carried up unread must be right too. (The second walk alone
	 * would miss a wrong value that a later frame's save slot masks.) */
	bool ok = val_check_walk(&in, st, &mm);
	if (ok && (st->insns_checked & 1) && in.shadow->n > 1) {
		struct val_stats scratch = *st;
		in.regs_last_only = true;
		ok = val_check_walk(&in, &scratch, &mm);
		mm.lazy = !ok;
	}
	if (!ok) {
		/* Without CFI the fallback can only guess; with --method fp
		 * guessing is what is measured. */
		if (record(r, t, &mm, pc_of(r, u)) && !r->o->fp_only)
			st->nocfi_insns++;
		else
			st->bad_insns++;
	}
	if (r->o->fast_walk) {
		struct uw_window win;
		bool have = fast_window(r, sp_of(r, u), &win);
		if (!val_check_fast(&in, have ? &win : NULL, st, &mm)) {
			record(r, t, &mm, pc_of(r, u));
			st->bad_insns++;
		}
	}
}

/* ---- Stepping over unchecked code ----------------------------------------
 *
 * A stepping thread that stands in unchecked code runs there at full speed
 * (VAL_RESUME_SYSCALLS, to see the system calls that change the map) until
 * its innermost known frame T (the top of the shadow stack, gaps aside) is
 * returned to: a breakpoint at T's return address, taken when SP >= T's CFA
 * (deeper recursion through the same address comes back as an entry).
 * The frames made meanwhile are unknown: a gap goes on the shadow stack,
 * dead with T. Checked code can be entered without that return:
 *
 *   - a call from the free code (callbacks: qsort's comparator, a thread's
 *     start routine, atexit handlers, constructors): a breakpoint on every
 *     function of the checked code (its FDEs, function symbols, DT_INIT,
 *     DT_FINI, the init/fini arrays, the PLT's slots but the lazy-binding
 *     stub). The thread steps from there, with
 *     a shadow frame for its caller (return address at SP, CFA = SP + 8,
 *     callee-saved registers as they are) above the gap;
 *   - a signal: its delivery stops the thread anyway; a caught one is
 *     delivered single-stepping, so the handler's first instruction is
 *     stepped as before, its frames above the gap;
 *   - longjmp, setcontext, exceptions: a breakpoint on longjmp and kin and
 *     on the unwinder's entries (_Unwind_RaiseException, _Unwind_Resume,
 *     ...): the thread steps from there until SP passes that entry's CFA by
 *     a jump (the landing), the unwinder's callees excepted;
 *   - rt_sigreturn (seen at its system-call stop): steps after it.
 *
 * The checker says where breakpoints go and what each is for; the driver
 * sets them, hides them from every read of code (decoder, unwinder) and
 * steps a thread over one that stands under it (val_ptrace.c: int3 bytes
 * in the program's memory, lifted for a step, kept out of forked children).
 * A thread standing on a breakpoint is stepped, never run free from it.
 */

/* A gap on top of the shadow stack, dead with the frame below (CFA). */
static void ensure_gap(struct thread *t, uint64_t cfa)
{
	if (t->shadow.n && t->shadow.f[t->shadow.n - 1].kind == VAL_FRAME_GAP)
		return;
	struct val_frame g = { .kind = VAL_FRAME_GAP, .cfa = cfa };
	val_shadow_push(&t->shadow, &g);
}

/* T stands in unchecked code: let it run free if it can come back. */
static bool try_free(struct run *r, struct thread *t, const struct bk_regs *u)
{
	if (r->o->step_all || !r->space || t->entering || find_bp(r, pc_of(r, u)))
		return false;
	const struct val_frame *top = top_known(t);
	if (top && top->kind == VAL_FRAME_SIGNAL)
		return false; /* the trampoline's rt_sigreturn is next: step it */
	if (t->nesc && (!t->esc_callees[t->nesc - 1] || !top || top->cfa >= t->esc_cfa[t->nesc - 1]))
		return false;
	if (top && past(r, sp_of(r, u), top->cfa))
		return false;
	uint64_t ra = top ? top->ra : 0, cfa = top ? top->cfa : UINT64_MAX;
	if (top && !add_return(r, t, ra, cfa))
		return false;
	ensure_gap(t, cfa);
	t->mode = MODE_FREE;
	t->have_pending = false;
	t->sigreturning = false;
	r->res->stats.free_runs++;
	r->dops->resume(r->d, t->tid, VAL_RESUME_SYSCALLS, 0);
	return true;
}

/* A free thread comes back to stepping at U (HIT: the breakpoint it
 * stopped at, or NULL). */
static void back_to_stepping(struct run *r, struct thread *t, const struct bk_regs *u,
			     const struct bp *hit)
{
	uint64_t sp = sp_of(r, u);
	bool own = t->has_ret && hit && hit->addr == t->ret_addr && sp >= t->ret_cfa;
	bool entry = hit && hit->flags;
	drop_return(r, t);
	t->mode = MODE_STEPPING;
	t->have_pending = false;
	t->sigreturning = false;
	if (own && !r->arch->ra_size) {
		/* The awaited return: its frame ends here (SP is back at its
		 * CFA, where past() still calls it live). */
		struct val_frame *top = top_known(t);
		if (top && top->ra == hit->addr && top->cfa == sp)
			t->shadow.n = (size_t)(top - t->shadow.f);
	}
	val_shadow_drop_dead(&t->shadow, sp, !r->arch->ra_size);
	if (own)
		return;
	r->res->stats.reentries++;
	const struct val_frame *top = top_known(t);
	uint64_t cfa = top ? top->cfa : UINT64_MAX;
	if (past(r, sp, cfa))
		return;
	if (entry && sp + r->arch->ra_size >= cfa) {
		/* Jumped to in place of the frame below: no frame between. */
		if (t->shadow.n && t->shadow.f[t->shadow.n - 1].kind == VAL_FRAME_GAP)
			t->shadow.n--;
		return;
	}
	ensure_gap(t, cfa);
	if (entry) {
		/* Called from the free code: its caller's frame is known
		 * (the return address at SP, or in the link register). */
		struct val_frame f = { .cfa = sp + r->arch->ra_size, .kind = VAL_FRAME_CALL };
		f.known = r->arch->callee_saved & shadow_regs(r, u, f.regs);
		if (r->arch->ra_size)
			read_prog(r, sp, &f.ra, sizeof(f.ra));
		else
			f.ra = f.regs[r->arch->lr];
		val_shadow_push(&t->shadow, &f);
	}
}

/* At an instruction of a stepping thread: compare a walk if it is checked
 * code, note the instruction as pending, and step it (or let it run free
 * in unchecked code). SIG goes with the step (a signal being delivered). */
static void at_instruction(struct run *r, struct thread *t, const struct bk_regs *u, bool walk,
			   int sig)
{
	uint64_t pc = pc_of(r, u);
	if (r->maps_dirty && r->space)
		refresh_modules(r);
	const struct bp *b = r->nbps || r->nrbps ? find_bp(r, pc) : NULL;
	if (b && (b->flags & BP_JIT) && gdb_jit(r)) {
		/* A JIT is telling debuggers of new code (its list holds it
		 * now): its modules and their entry breakpoints. */
		val_code_clear(&r->code);
		r->res->stats.refreshes++;
		rebuild_bps(r);
		b = find_bp(r, pc);
	}
	const struct val_code *c = code_at(r, pc);
	if (b && (b->flags & (BP_ESCAPE | BP_ESCAPE_CALLEES)) &&
	    (!t->nesc || sp_of(r, u) + r->arch->ra_size < t->esc_cfa[t->nesc - 1])) {
		if (t->nesc == sizeof(t->esc_cfa) / sizeof(*t->esc_cfa))
			t->nesc--; /* deeper still: the innermost one counts */
		t->esc_callees[t->nesc] = !(b->flags & BP_ESCAPE);
		t->esc_cfa[t->nesc++] = sp_of(r, u) + r->arch->ra_size;
	}
	if (walk && c->checked && r->space)
		check(r, t, u, (struct val_code *)c);
	if (!sig && !c->checked && try_free(r, t, u))
		return;
	t->pending = *c;
	t->pending.pc = pc;
	t->have_pending = true;
	t->pre_valid = shadow_regs(r, u, t->pre);
	r->dops->resume(r->d, t->tid, VAL_RESUME_STEP, sig);
}

/* Whether --only names JIT code ("[jit]"). Only then is the map read at
 * the exit of a free thread's map call: a JIT maps its code and runs it
 * with no stop between. Otherwise the map is read at the next stop, as
 * code from files comes through the dynamic loader, whose own mmap calls
 * the in-process driver does not see (it reports the C library's
 * functions, not system calls): reading at the calls would make the
 * drivers check different instructions. */
static bool checks_jit(const struct run *r)
{
	for (size_t i = 0; i < r->o->nonly; i++)
		if (!strcmp(r->o->only[i], "[jit]"))
			return true;
	return false;
}

/* A system-call stop of a free thread: the map may change; rt_sigreturn
 * pops the shadow stack to its signal marker and the thread steps on
 * from the restored context. */
static void on_syscall_stop(struct run *r, struct thread *t, const struct val_event *ev)
{
	if (!ev->exit) {
		t->sigreturning = ev->nr == r->arch->nr_rt_sigreturn;
	} else if (maps_call(r, ev->nr)) {
		/* At the exit: read at the entry, the map could be re-read
		 * (for another thread) before the change is made. Read now
		 * when JIT code is checked: code this free thread maps and
		 * then runs (a JIT's, which its jitdump describes) needs its
		 * entry breakpoints before the thread goes on. */
		r->maps_dirty = true;
		if (r->space && checks_jit(r))
			refresh_modules(r);
	} else if (t->sigreturning) {
		struct bk_regs u;
		if (r->dops->regs(r->d, t->tid, &u) != 0)
			return;
		val_shadow_sigreturn(&t->shadow);
		back_to_stepping(r, t, &u, NULL);
		at_instruction(r, t, &u, true, 0);
		return;
	}
	r->dops->resume(r->d, t->tid, VAL_RESUME_SYSCALLS, 0);
}

/* A stop of a free thread: a system call, one of our breakpoints, or a
 * signal. */
static void on_free_stop(struct run *r, struct thread *t, const struct val_event *ev)
{
	struct bk_regs u;
	if (ev->kind == VAL_EV_SYSCALL) {
		on_syscall_stop(r, t, ev);
		return;
	}
	if (ev->kind == VAL_EV_SIGNAL && !r->dops->catches(r->d, ev->sig)) {
		r->dops->resume(r->d, t->tid, VAL_RESUME_SYSCALLS, ev->sig);
		return;
	}
	if (r->dops->regs(r->d, t->tid, &u) != 0)
		return;
	if (ev->kind == VAL_EV_BREAKPOINT) {
		back_to_stepping(r, t, &u, find_bp(r, ev->addr));
		at_instruction(r, t, &u, true, 0);
		return;
	}
	/* A handler will run: enter it single-stepping. */
	back_to_stepping(r, t, &u, NULL);
	t->entering = true;
	t->entering_sig = ev->sig;
	t->sig_valid = shadow_regs(r, &u, t->sig_regs);
	at_instruction(r, t, &u, false, ev->sig);
}

/* A stop of a stepping thread: the step is done (SIG 0), or signal SIG is
 * about to be delivered. */
static void on_step_stop(struct run *r, struct thread *t, int sig)
{
	struct bk_regs u;
	if (r->dops->regs(r->d, t->tid, &u) != 0)
		return; /* gone: its exit is reported next */
	uint64_t now[VAL_NREGS];
	uint64_t now_valid = shadow_regs(r, &u, now);
	/* Out of longjmp or the unwinder: SP passed its entry's CFA by a
	 * jump (a move to RSP inside it does not count). */
	bool jumped = !(t->have_pending && pc_of(r, &u) == t->pending.pc + t->pending.len);
	bool landed = false;
	while (t->nesc && jumped && past(r, sp_of(r, &u), t->esc_cfa[t->nesc - 1])) {
		t->nesc--;
		landed = true;
	}
	if (!sig)
		r->res->stats.insns_stepped++;
	bool entered = false;
	if (t->entering) {
		t->entering = false;
		/* The handler's first instruction: its first argument is the
		 * signal number. */
		if (!sig && now[r->arch->sig_reg] == (uint64_t)t->entering_sig) {
			handler_entry(r, t, now);
			t->have_pending = false;
			entered = true;
		}
	}
	if (!entered)
		settle(r, t, now);
	/* Landed from longjmp or the unwinder: no frame the jump passed is
	 * live, not even one whose CFA is SP (where calls push nothing). */
	if (landed)
		val_shadow_drop_dead(&t->shadow, sp_of(r, &u), false);
	if (!sig) {
		at_instruction(r, t, &u, true, 0);
		return;
	}
	/* A signal to deliver; the state is the one already compared. */
	if (r->dops->catches(r->d, sig)) {
		t->entering = true;
		t->entering_sig = sig;
		memcpy(t->sig_regs, now, sizeof(now));
		t->sig_valid = now_valid;
	}
	at_instruction(r, t, &u, false, sig);
}

static void start_stepping(struct run *r, struct thread *t, bool complete)
{
	struct bk_regs u;
	if (t->mode != MODE_STEPPING)
		r->res->stats.threads++;
	t->mode = MODE_STEPPING;
	t->complete = complete;
	t->want_stepping = false;
	t->have_pending = false;
	if (r->dops->regs(r->d, t->tid, &u) != 0)
		return;
	at_instruction(r, t, &u, true, 0);
}

static void resume(struct run *r, struct thread *t, int sig)
{
	if (t->mode == MODE_STEPPING) {
		struct bk_regs u;
		if (t->have_pending)
			r->dops->resume(r->d, t->tid, VAL_RESUME_STEP, sig);
		else if (r->dops->regs(r->d, t->tid, &u) == 0)
			at_instruction(r, t, &u, true, sig);
		return;
	}
	r->dops->resume(r->d, t->tid, t->mode == MODE_FREE ? VAL_RESUME_SYSCALLS : VAL_RESUME_RUN,
			sig);
}

/* ---- Where checking starts, and exec -------------------------------------- */

/* A new image (the first exec included): forget everything of the old one,
 * put the breakpoint where checking starts and let it run there. */
static void on_exec(struct run *r, struct thread *t, const struct val_event *ev)
{
	if (r->triggered || r->space)
		r->image++;
	if (r->res->stats.insns_stepped || r->triggered)
		r->res->stats.execs++;
	for (size_t i = 0; i < r->nthreads;)
		if (r->threads[i] != t) {
			free_thread(r->threads[i]);
			r->threads[i] = r->threads[--r->nthreads];
		} else {
			i++;
		}
	r->last = NULL;
	val_shadow_free(&t->shadow);
	t->mode = MODE_RUNNING;
	t->have_pending = t->entering = t->want_stepping = false;
	t->has_ret = t->sigreturning = false;
	t->nesc = 0;
	t->complete = true;
	/* The old image's breakpoints and space went with it. */
	forget_bps(r);
	r->space = NULL;
	val_code_clear(&r->code);
	r->triggered = false;
	r->trigger_set = false;
	r->maps_dirty = false;

	r->entry = ev->entry;
	uint64_t addr = r->entry;
	r->trigger_complete = true;
	if (r->o->from) {
		uint64_t file_entry, fn;
		if (val_elf_entry(ev->exe, &file_entry) == 0 &&
		    val_find_function(ev->exe, r->o->from, &fn) == 0) {
			addr = fn + (r->entry - file_entry);
			r->trigger_complete = false;
		} else {
			addr = 0;
			set_error(r, "--from %s: no such function in the executable", r->o->from);
		}
	}
	if (addr) {
		int err = r->dops->insert_bp(r->d, addr);
		if (err)
			set_error(r, "cannot set a breakpoint at %s: %s",
				  r->o->from ? r->o->from : "the entry", bk_strerror(err));
		r->trigger_set = !err;
		r->trigger_addr = addr;
	}
	r->dops->resume(r->d, t->tid, VAL_RESUME_RUN, 0);
}

/* T reached the breakpoint where checking starts. */
static void on_trigger(struct run *r, struct thread *t)
{
	r->dops->remove_bp(r->d, r->trigger_addr, true);
	r->trigger_set = false;
	int err = open_space(r, t->tid);
	if (err) {
		set_error(r, "cannot read the program: %s", bk_strerror(err));
		r->dops->resume(r->d, t->tid, VAL_RESUME_RUN, 0);
		return;
	}
	r->triggered = true;
	r->res->started = true;
	if (!r->clock_started) {
		clock_gettime(CLOCK_MONOTONIC, &r->t0);
		r->last_progress = r->t0;
		r->clock_started = true;
	}
	for (size_t i = 0; i < r->nthreads; i++) {
		struct thread *o = r->threads[i];
		if (o != t && o->mode == MODE_RUNNING && r->dops->interrupt(r->d, o->tid) == 0)
			o->want_stepping = true;
	}
	start_stepping(r, t, r->trigger_complete);
}

/* A stop of a thread running before checking started for it. */
static void on_running_stop(struct run *r, struct thread *t, const struct val_event *ev)
{
	if (ev->kind == VAL_EV_BREAKPOINT && r->trigger_set && ev->addr == r->trigger_addr) {
		on_trigger(r, t);
		return;
	}
	if (ev->kind == VAL_EV_BREAKPOINT) {
		/* An entry set when checking started, reached before the
		 * interrupt: step from here, as the interrupt would have. */
		start_stepping(r, t, false);
		return;
	}
	r->dops->resume(r->d, t->tid, VAL_RESUME_RUN, ev->kind == VAL_EV_SIGNAL ? ev->sig : 0);
}

/* ---- The loop ------------------------------------------------------------ */

/* One event of the driver. False when the program is over. */
static bool dispatch(struct run *r, const struct val_event *ev)
{
	if (ev->kind == VAL_EV_NONE)
		return true;
	if (ev->maps_changed)
		r->maps_dirty = true;
	if ((r->res->stats.insns_stepped & 4095) == 0)
		progress(r);
	if (ev->kind == VAL_EV_EXITED) {
		drop_thread(r, ev->tid);
		if (!ev->program)
			return true;
		if (ev->error)
			set_error(r, "%s", ev->error);
		r->res->status = ev->status;
		r->res->exited = true;
		return false;
	}
	struct thread *t = add_thread(r, ev->tid);
	if (!t) {
		r->dops->resume(r->d, ev->tid, VAL_RESUME_RUN, 0);
		return true;
	}
	switch (ev->kind) {
	case VAL_EV_THREAD:
		add_thread(r, ev->child);
		resume(r, t, 0);
		return true;
	case VAL_EV_EXEC:
		on_exec(r, t, ev);
		return true;
	case VAL_EV_STOPPED:
		/* A new thread's first stop, or our interrupt. */
		if (t->want_stepping)
			start_stepping(r, t, false);
		else if (t->mode == MODE_STEPPING && !t->have_pending)
			start_stepping(r, t, t->complete);
		else
			resume(r, t, 0);
		return true;
	default:
		break;
	}
	if (t->mode == MODE_STEPPING)
		on_step_stop(r, t, ev->kind == VAL_EV_SIGNAL ? ev->sig : 0);
	else if (t->mode == MODE_FREE)
		on_free_stop(r, t, ev);
	else
		on_running_stop(r, t, ev);
	return true;
}

static void loop(struct run *r)
{
	bool killed = false;
	for (;;) {
		if (r->o->stop && *r->o->stop && !killed) {
			r->dops->kill(r->d);
			killed = true;
			r->res->interrupted = true;
		}
		struct val_event ev;
		int n = r->dops->wait(r->d, &ev);
		if (n < 0)
			set_error(r, "lost the program: %s", r->d->lost ? r->d->lost : bk_strerror(n));
		if (n <= 0 || !dispatch(r, &ev))
			break;
	}
}

/* Free what the run kept (not the result, nor the driver). */
static void run_free(struct run *r)
{
	for (size_t i = 0; i < r->nthreads; i++)
		free_thread(r->threads[i]);
	base_free(r->threads);
	forget_bps(r);
	base_free(r->rbps);
	base_free(r->fast_buf);
	base_free(r->mslots);
	base_free(r->exe_path);
	val_code_free(&r->code);
	val_decoder_close(r->dec);
}

/* ---- The checker, pushed to ---------------------------------------------- */

int val_checker_open(const struct val_opts *o, const struct val_driver_ops *dops,
		     struct val_driver *d, struct val_result *res, struct val_checker **out)
{
	memset(res, 0, sizeof(*res));
	if (!o || o->size < sizeof(*o) || !dops || !d || !out)
		return BK_E_INVAL;
	struct run *r = base_calloc(1, sizeof(*r));
	if (!r)
		return BK_E_NOMEM;
	*r = (struct run){ .o = o, .res = res, .dops = dops, .d = d };
	r->arch = val_arch_get(d->arch);
	res->arch = d->arch;
	int err = r->arch ? val_decoder_open(d->arch, &r->dec) : BK_E_UNSUPPORTED;
	if (err) {
		set_error(r, "cannot open the disassembler: %s", bk_strerror(err));
		base_free(r);
		return err;
	}
	*out = (struct val_checker *)(void *)r;
	return 0;
}

bool val_checker_event(struct val_checker *c, const struct val_event *ev)
{
	return dispatch((struct run *)(void *)c, ev);
}

void val_checker_sync(struct val_checker *c)
{
	struct run *r = (struct run *)(void *)c;
	if (r->clock_started)
		r->res->stats.seconds = since(&r->t0);
}

void val_checker_close(struct val_checker *c)
{
	struct run *r = (struct run *)(void *)c;
	if (!r)
		return;
	val_checker_sync(c);
	run_free(r);
	base_free(r);
}

/* ---- A run --------------------------------------------------------------- */

/* The program under the driver O names (NULL: ptrace), pulled from. */
static int run_driver(char *const *argv, const struct val_opts *o, struct val_result *res)
{
	struct run r = { .o = o, .res = res, .dops = o->driver ? o->driver : &val_ptrace_driver };
	res->driver = o->driver ? "remote" : "ptrace";
	struct val_driver_opts dopts = { .size = sizeof(dopts) };
	if (o->driver_opts && o->driver_opts->size >= sizeof(dopts))
		dopts = *o->driver_opts;
	dopts.run_free = !o->step_all;
	char why[512];
	int err = r.dops->start(argv, &dopts, &r.d, why, sizeof(why));
	if (err) {
		set_error(&r, "%s", why);
		return err;
	}
	r.arch = val_arch_get(r.d->arch);
	res->arch = r.d->arch;
	err = r.arch ? val_decoder_open(r.d->arch, &r.dec) : BK_E_UNSUPPORTED;
	if (err) {
		set_error(&r, r.arch ? "cannot open the disassembler: %s"
				     : "the program's architecture is not supported (%s)",
			  bk_strerror(err));
		r.dops->close(r.d);
		return err;
	}
	loop(&r);
	if (r.clock_started)
		res->stats.seconds = since(&r.t0);
	r.dops->close(r.d);
	run_free(&r);
	return 0;
}

int val_run(char *const *argv, const struct val_opts *o, struct val_result *res)
{
	memset(res, 0, sizeof(*res));
	if (!argv || !o || o->size < sizeof(*o) || (!argv[0] && !o->driver))
		return BK_E_INVAL;
	/* A program run here (not at a remote stub): in-process where it
	 * applies (val_inproc.c), else ptrace with a note why. */
	if (!o->driver && argv[0] && o->inproc != VAL_INPROC_NEVER) {
		char note[512] = "";
		int err = val_inproc_run(argv, o, res, note, sizeof(note));
		if (err != BK_E_UNSUPPORTED)
			return err;
		char why[600];
		val_result_free(res);
		if (o->inproc == VAL_INPROC_ONLY) {
			snprintf(why, sizeof(why), "--driver inproc: %s", note);
			res->driver = "inproc";
			res->error = base_strdup(why);
			return err;
		}
		err = run_driver(argv, o, res);
		snprintf(why, sizeof(why), "%s: the ptrace driver ran it", note);
		if (!res->note)
			res->note = base_strdup(why);
		return err;
	}
	return run_driver(argv, o, res);
}

void val_result_free(struct val_result *res)
{
	for (size_t i = 0; i < res->nmm; i++) {
		struct val_mismatch *m = &res->mm[i];
		base_free(m->module);
		base_free(m->function);
		base_free(m->culprit_insn);
		base_free(m->row);
		base_free(m->insn_module);
		base_free(m->insn_function);
		base_free(m->insn_text);
	}
	base_free(res->mm);
	base_free(res->error);
	base_free(res->note);
	memset(res, 0, sizeof(*res));
}

const char *val_reg_name(enum bk_arch arch, unsigned regno)
{
	if (regno == VAL_HOW)
		return "how";
	if (regno == VAL_REG_PC)
		return "pc";
	if (regno == VAL_REG_SP)
		return "sp";
	const char *n = bk_reg_name(arch, regno);
	return n ? n : "?";
}
