/* The validator's ptrace driver: run the program, single-step its threads,
 * keep their shadow stacks and compare a walk at every checked instruction.
 *
 * Start. The child stops itself, is seized (PTRACE_O_TRACECLONE: threads
 * are followed; TRACEEXEC: exec is followed; EXITKILL: it dies with us) and
 * execs. At each exec a breakpoint (int3) goes on the executable's entry
 * point, or on the --from function, and the program runs at full speed to
 * it: the dynamic loader's work is not single-stepped. At the entry the
 * stack holds no frame yet (the loader jumps there with the initial SP), so
 * the shadow stack kept from there is complete: its bottom frame is _start's,
 * the outermost. From --from it is not (the frames above are unknown and
 * not compared). Threads born after that start with a complete, empty shadow
 * stack (their first frame is libc's clone trampoline, the outermost).
 * Threads that existed already are interrupted and stepped from where they
 * are, with an incomplete one. Children made by fork or vfork are not
 * traced (ptrace does not follow them without TRACEFORK); exec is followed
 * and checking restarts at the new executable's entry.
 *
 * A step. Every thread is resumed with PTRACE_SINGLESTEP and reports back
 * after one instruction. The instruction at the PC is decoded once per PC
 * (the code cache) and kept as "pending" with the registers before it; at
 * the next stop, if the PC moved, it ran: a call pushes a shadow frame, a
 * syscall may be rt_sigreturn (pop to the signal marker) or change the
 * map (mmap, munmap, mprotect, pkey_mprotect, mremap: the map is re-read
 * before the next walk, new code becomes modules, and the target's cache of
 * read-only memory follows the new map), and every frame SP has passed is
 * dropped. Then, if the new PC is checked code, the thread is walked.
 *
 * Signals. A signal-delivery stop is passed on with the step. When the
 * program catches the signal (/proc/PID/status SigCgt), the kernel stops
 * the thread again at the handler's first instruction (the step reports
 * there): the interrupted context becomes a SIGNAL marker, expected back as
 * a signal frame with the interrupted PC, SP and general registers (rax
 * excepted: a restarted system call changes it), and the handler's return
 * into the trampoline a HANDLER frame.
 *
 * Limits (documented, not hidden): a SIGTRAP the program raises itself is
 * taken for a step and swallowed; code written at run time is decoded once
 * per PC (JITs, self-modifying code); the first instructions of a thread
 * made by a raw clone system call cannot be unwound by anyone.
 *
 * One target and one space per executable image, kept across steps: its
 * modules and row cache stay, only the memory block cache is dropped
 * before each walk.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "val.h"

#include "../target/target.h"
#include "../unwind/unwind.h"

/* x86-64 system call numbers that move the shadow stack or the map. */
#define NR_MMAP 9
#define NR_MPROTECT 10
#define NR_MUNMAP 11
#define NR_RT_SIGRETURN 15
#define NR_MREMAP 25
#define NR_PKEY_MPROTECT 329

/* Callee-saved registers (DWARF): rbx, rbp, r12-r15. */
#define CALLEE_SAVED ((1u << 3) | (1u << 6) | (1u << 12) | (1u << 13) | (1u << 14) | (1u << 15))
/* A signal frame restores every general register; rax may have been
 * changed by a system call restart and rsp, rip are compared as SP, PC. */
#define SIGNAL_KNOWN (CALLEE_SAVED | (1u << 1) | (1u << 2) | (1u << 4) | (1u << 5) | \
		      (1u << 8) | (1u << 9) | (1u << 10) | (1u << 11))

enum mode { MODE_RUNNING, MODE_STEPPING };

struct thread {
	int tid;
	enum mode mode;
	bool complete;          /* the shadow stack reaches the outermost frame */
	bool want_stepping;     /* interrupted to start stepping */
	bool entering;          /* a caught signal went in: next stop is its handler */
	int entering_sig;
	uint64_t sig_regs[VAL_NREGS];
	bool have_pending;      /* the instruction at pending.pc is about to run */
	struct val_code pending;
	uint64_t pre[VAL_NREGS]; /* registers before it */
	struct val_shadow shadow;
};

struct mm_slot {
	uint64_t pc, image;
	size_t index;           /* into res->mm, + 1; 0 = empty */
};

struct run {
	const struct val_opts *o;
	struct val_result *res;
	int pid;
	struct thread **threads;
	size_t nthreads, cap;
	struct thread *last;
	struct bk_target *target;
	struct bk_space *space;
	struct val_decoder *dec;
	struct val_code_cache code;
	bool maps_dirty;
	bool triggered;
	bool trigger_complete;  /* the breakpoint is the entry point */
	bool bp_armed;
	uint64_t bp_addr;
	long bp_orig;
	uint64_t entry;
	char *exe_path;         /* the executable module's path in the space */
	uint64_t image;
	struct mm_slot *mslots;
	size_t nmslots;
	size_t mm_cap;
	struct timespec t0, last_progress;
	bool clock_started;
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

/* Registers in DWARF order (rax..r15, rip) from user_regs_struct. */
static void dwarf_regs(const struct user_regs_struct *u, uint64_t out[VAL_NREGS])
{
	out[0] = u->rax; out[1] = u->rdx; out[2] = u->rcx; out[3] = u->rbx;
	out[4] = u->rsi; out[5] = u->rdi; out[6] = u->rbp; out[7] = u->rsp;
	out[8] = u->r8; out[9] = u->r9; out[10] = u->r10; out[11] = u->r11;
	out[12] = u->r12; out[13] = u->r13; out[14] = u->r14; out[15] = u->r15;
	out[16] = u->rip;
}

static bool get_regs(int tid, struct user_regs_struct *u)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, u) == 0;
}

/* Read up to LEN bytes at ADDR of the program; how many could be read. */
static size_t read_mem(int pid, uint64_t addr, void *dst, size_t len)
{
	size_t done = 0;
	while (done < len) {
		/* Do not cross a page: the next one may be unmapped. */
		size_t chunk = 4096 - ((addr + done) & 4095);
		if (chunk > len - done)
			chunk = len - done;
		struct iovec l = { (uint8_t *)dst + done, chunk };
		struct iovec rm = { (void *)(uintptr_t)(addr + done), chunk };
		ssize_t n = process_vm_readv(pid, &l, 1, &rm, 1, 0);
		if (n <= 0)
			break;
		done += (size_t)n;
		if ((size_t)n < chunk)
			break;
	}
	return done;
}

static bool caught(int pid, int sig)
{
	return sig > 0 && sig <= 64 && (tgt_proc_status_mask(pid, "SigCgt") >> (sig - 1) & 1);
}

/* AT_ENTRY from /proc/PID/auxv, or 0. */
static uint64_t auxv_entry(int pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/auxv", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t kv[2], entry = 0;
	while (read(fd, kv, sizeof(kv)) == (ssize_t)sizeof(kv) && kv[0] != 0)
		if (kv[0] == 9 /* AT_ENTRY */)
			entry = kv[1];
	close(fd);
	return entry;
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
	size_t n = read_mem(r->pid, pc, bytes, sizeof(bytes));
	val_disasm(r->dec, bytes, n, pc, buf, sizeof(buf));
	return base_strdup(buf);
}

static void rule_text(const struct bk_rule *rule, char *buf, size_t len)
{
	const char *rn = bk_reg_name(BK_ARCH_X86_64, rule->reg);
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
	const struct uw_module *m = uw_space_find(r->space, pc);
	*nocfi = true;
	if (!m)
		return base_strdup("no module");
	struct bk_row row;
	uint64_t link = pc - (uint64_t)m->bias;
	int err = m->elf ? bk_elf_row_at(m->elf, link, &row) : BK_E_NO_UNWIND;
	if (err && m->debug)
		err = bk_elf_row_at(m->debug, link, &row);
	char buf[1024];
	*nocfi = err == BK_E_NOT_FOUND || err == BK_E_NO_UNWIND;
	if (err) {
		snprintf(buf, sizeof(buf), "no CFI (%s)", bk_strerror(err));
		return base_strdup(buf);
	}
	size_t at = 0;
	char cell[64];
	rule_text(&row.cfa, cell, sizeof(cell));
	at += (size_t)snprintf(buf + at, sizeof(buf) - at, "cfa=%s", cell);
	for (unsigned i = 0; i < row.nregs && at < sizeof(buf) - 80; i++) {
		const char *rn = bk_reg_name(BK_ARCH_X86_64, row.regno[i]);
		rule_text(&row.regs[i], cell, sizeof(cell));
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
	uint64_t at = pc;
	if (mm->frame >= 2 && mm->frame - 1 <= t->shadow.n) {
		const struct val_frame *f = &t->shadow.f[t->shadow.n - (mm->frame - 1)];
		at = f->site ? f->site : f->ra;
	}
	e->culprit_insn = disasm_at(r, at);
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
 * executable's file name or "[vdso]"; any other name is a function. */
static bool names_a_module(const struct run *r, const char *name)
{
	return strchr(name, '/') || strstr(name, ".so") || !strcmp(name, "[vdso]") ||
	       (r->exe_path && !strcmp(name, base_name(r->exe_path)));
}

/* Does module NAME name module PATH? */
static bool names_module(const char *name, const char *path)
{
	if (!path || !path[0])
		return false;
	return !strcmp(name, path) || (!strchr(name, '/') && !strcmp(name, base_name(path)));
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
		size_t n = read_mem(r->pid, pc, bytes, sizeof(bytes));
		val_decode(r->dec, bytes, n, pc, c);
		c->checked = 2;
	}
	if (c->checked == 2)
		c->checked = r->space && is_checked(r, pc);
	return c;
}

/* ---- The target of the current image ------------------------------------- */

static int open_target(struct run *r, int tid)
{
	int err = uw_target_adopt(r->pid, &tid, 1, &r->target);
	if (err)
		return err;
	r->space = bk_target_space(r->target);
	if (r->o->fp_only)
		bk_space_set_flags(r->space, BK_SPACE_NO_CFI);
	struct bk_module_info mi;
	base_free(r->exe_path);
	r->exe_path = NULL;
	if (bk_space_module_at(r->space, r->entry, &mi) == 0)
		r->exe_path = base_strdup(mi.path);
	val_code_clear(&r->code);
	r->maps_dirty = false;
	return 0;
}

static void close_target(struct run *r)
{
	bk_target_close(r->target);
	r->target = NULL;
	r->space = NULL;
	val_code_clear(&r->code);
}

static void refresh_modules(struct run *r)
{
	size_t added = 0;
	r->maps_dirty = false;
	if (uw_target_refresh(r->target, &added) == 0 && added) {
		val_code_clear(&r->code);
		r->res->stats.refreshes++;
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

/* The pending instruction ran if the PC moved: apply what it did to the
 * shadow stack. Then drop the frames SP has passed. */
static void settle(struct run *r, struct thread *t, const uint64_t now[VAL_NREGS])
{
	struct val_stats *st = &r->res->stats;
	if (t->have_pending && now[VAL_REG_PC] != t->pending.pc) {
		t->have_pending = false;
		switch (t->pending.kind) {
		case VAL_INSN_CALL: {
			struct val_frame f = {
				.ra = t->pending.pc + t->pending.len,
				.cfa = t->pre[VAL_REG_SP],
				.site = t->pending.pc,
				.known = CALLEE_SAVED,
				.kind = VAL_FRAME_CALL,
			};
			memcpy(f.regs, t->pre, sizeof(f.regs));
			if (now[VAL_REG_SP] != f.cfa - 8)
				st->anomalies++;
			val_shadow_push(&t->shadow, &f);
			break;
		}
		case VAL_INSN_RET:
			if (t->shadow.n) {
				const struct val_frame *top = &t->shadow.f[t->shadow.n - 1];
				if (now[VAL_REG_SP] >= top->cfa && top->ra != now[VAL_REG_PC])
					st->anomalies++;
			}
			break;
		case VAL_INSN_SYSCALL: {
			/* The map changed: new code may need modules, and the
			 * target keeps read-only memory cached by the map. */
			uint64_t nr = t->pre[0];
			if (nr == NR_RT_SIGRETURN)
				val_shadow_sigreturn(&t->shadow);
			else if (nr == NR_MMAP || nr == NR_MPROTECT || nr == NR_MUNMAP ||
				 nr == NR_MREMAP || nr == NR_PKEY_MPROTECT)
				r->maps_dirty = true;
			break;
		}
		}
	}
	size_t before = t->shadow.n;
	val_shadow_drop_dead(&t->shadow, now[VAL_REG_SP]);
	/* Everything dropped by a stack switch: what comes back is unknown. */
	if (before && !t->shadow.n && t->pending.kind != VAL_INSN_RET)
		t->complete = false;
}

/* The thread stopped at the first instruction of a signal handler. */
static void handler_entry(struct run *r, struct thread *t, const uint64_t now[VAL_NREGS])
{
	struct val_stats *st = &r->res->stats;
	const uint64_t *in = t->sig_regs;
	/* The kernel's frame: ucontext at SP + 8, mcontext's gregs 40 bytes
	 * in (REG_RSP 15, REG_RIP 16). Only the PC is taken from it: a system
	 * call restart moves it back over the syscall instruction. */
	uint64_t gregs[23] = { 0 };
	uint64_t ip = in[VAL_REG_PC];
	if (read_mem(r->pid, now[VAL_REG_SP] + 8 + 40, gregs, sizeof(gregs)) == sizeof(gregs)) {
		if (gregs[15] != in[VAL_REG_SP])
			st->anomalies++;
		if (gregs[16] == ip || gregs[16] == ip - 2)
			ip = gregs[16];
		else
			st->anomalies++;
	}
	uint64_t isp = in[VAL_REG_SP], hsp = now[VAL_REG_SP];
	struct val_frame m = {
		.ra = ip,
		.cfa = isp,
		.site = ip,
		.known = SIGNAL_KNOWN,
		.kind = VAL_FRAME_SIGNAL,
		.altstack = !(hsp < isp && isp - hsp < (64u << 10)),
		.handler_sp = hsp,
	};
	memcpy(m.regs, in, sizeof(m.regs));
	val_shadow_push(&t->shadow, &m);
	uint64_t restorer = 0;
	read_mem(r->pid, hsp, &restorer, sizeof(restorer));
	struct val_frame h = {
		.ra = restorer,
		.cfa = hsp + 8,
		.known = CALLEE_SAVED,
		.kind = VAL_FRAME_HANDLER,
	};
	memcpy(h.regs, now, sizeof(h.regs));
	val_shadow_push(&t->shadow, &h);
	st->signals++;
}

static void check(struct run *r, struct thread *t, const struct user_regs_struct *u,
		  struct val_code *c)
{
	struct val_stats *st = &r->res->stats;
	uint64_t words[TGT_X86_64_USER_REGS];
	struct bk_regs regs;
	memcpy(words, u, sizeof(words));
	tgt_regs_x86_64(words, &regs);
	uw_target_invalidate(r->target);
	struct val_walk_in in = {
		.space = r->space,
		.regs = &regs,
		.shadow = &t->shadow,
		.complete = t->complete,
		.max_frames = r->o->max_frames,
		/* A frame-pointer walk recovers rbp, not what callees saved. */
		.call_regs = r->o->fp_only ? 1u << 6 : CALLEE_SAVED,
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
		if (record(r, t, &mm, u->rip) && !r->o->fp_only)
			st->nocfi_insns++;
		else
			st->bad_insns++;
	}
}

/* At an instruction of a stepping thread: compare a walk if it is checked
 * code, note the instruction as pending, and step it. SIG goes with the
 * step (a signal being delivered). */
static void at_instruction(struct run *r, struct thread *t, const struct user_regs_struct *u,
			   bool walk, int sig)
{
	if (r->maps_dirty && r->target)
		refresh_modules(r);
	const struct val_code *c = code_at(r, u->rip);
	if (walk && c->checked && r->target)
		check(r, t, u, (struct val_code *)c);
	t->pending = *c;
	t->pending.pc = u->rip;
	t->have_pending = true;
	dwarf_regs(u, t->pre);
	ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(uintptr_t)sig);
}

/* A stop of a stepping thread: the step is done (SIGTRAP), or a signal is
 * about to be delivered. */
static void on_step_stop(struct run *r, struct thread *t, int sig)
{
	struct user_regs_struct u;
	if (!get_regs(t->tid, &u))
		return; /* gone: its exit is reported next */
	uint64_t now[VAL_NREGS];
	dwarf_regs(&u, now);
	if (sig == SIGTRAP)
		r->res->stats.insns_stepped++;
	bool entered = false;
	if (t->entering) {
		t->entering = false;
		/* The handler's first instruction: rdi holds the signal number. */
		if (sig == SIGTRAP && u.rdi == (uint64_t)t->entering_sig) {
			handler_entry(r, t, now);
			t->have_pending = false;
			entered = true;
		}
	}
	if (!entered)
		settle(r, t, now);
	if (sig == SIGTRAP) {
		at_instruction(r, t, &u, true, 0);
		return;
	}
	/* A signal to deliver; the state is the one already compared. */
	if (caught(r->pid, sig)) {
		t->entering = true;
		t->entering_sig = sig;
		memcpy(t->sig_regs, now, sizeof(now));
	}
	at_instruction(r, t, &u, false, sig);
}

static void start_stepping(struct run *r, struct thread *t, bool complete)
{
	struct user_regs_struct u;
	if (t->mode != MODE_STEPPING)
		r->res->stats.threads++;
	t->mode = MODE_STEPPING;
	t->complete = complete;
	t->want_stepping = false;
	t->have_pending = false;
	if (!get_regs(t->tid, &u))
		return;
	at_instruction(r, t, &u, true, 0);
}

static void resume(struct run *r, struct thread *t, int sig)
{
	if (t->mode == MODE_STEPPING) {
		struct user_regs_struct u;
		if (t->have_pending) {
			ptrace(PTRACE_SINGLESTEP, t->tid, NULL, (void *)(uintptr_t)sig);
		} else if (get_regs(t->tid, &u)) {
			at_instruction(r, t, &u, true, sig);
		}
		return;
	}
	ptrace(PTRACE_CONT, t->tid, NULL, (void *)(uintptr_t)sig);
}

/* ---- Breakpoint and exec ------------------------------------------------- */

static bool arm(struct run *r, uint64_t addr)
{
	errno = 0;
	long word = ptrace(PTRACE_PEEKDATA, r->pid, (void *)(uintptr_t)addr, NULL);
	if (errno)
		return false;
	long patched = (long)(((unsigned long)word & ~0xfful) | 0xcc);
	if (ptrace(PTRACE_POKEDATA, r->pid, (void *)(uintptr_t)addr, (void *)patched) != 0)
		return false;
	r->bp_addr = addr;
	r->bp_orig = word;
	r->bp_armed = true;
	return true;
}

static void disarm(struct run *r)
{
	if (r->bp_armed)
		ptrace(PTRACE_POKEDATA, r->pid, (void *)(uintptr_t)r->bp_addr, (void *)r->bp_orig);
	r->bp_armed = false;
}

/* A new image (the first exec included): forget everything of the old one,
 * put the breakpoint where checking starts and let it run there. */
static void on_exec(struct run *r, struct thread *t)
{
	if (r->triggered || r->target)
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
	t->tid = r->pid;
	val_shadow_free(&t->shadow);
	t->mode = MODE_RUNNING;
	t->have_pending = t->entering = t->want_stepping = false;
	t->complete = true;
	if (r->target)
		close_target(r);
	r->triggered = false;
	r->bp_armed = false;
	r->maps_dirty = false;

	r->entry = auxv_entry(r->pid);
	uint64_t addr = r->entry;
	r->trigger_complete = true;
	if (r->o->from) {
		char exe[64];
		uint64_t file_entry, fn;
		snprintf(exe, sizeof(exe), "/proc/%d/exe", r->pid);
		if (val_elf_entry(exe, &file_entry) == 0 &&
		    val_find_function(exe, r->o->from, &fn) == 0) {
			addr = fn + (r->entry - file_entry);
			r->trigger_complete = false;
		} else {
			addr = 0;
			set_error(r, "--from %s: no such function in the executable", r->o->from);
		}
	}
	if (addr && !arm(r, addr))
		set_error(r, "cannot set a breakpoint at %s: %s", r->o->from ? r->o->from : "the entry",
			  strerror(errno));
	ptrace(PTRACE_CONT, t->tid, NULL, NULL);
}

/* The breakpoint was reached by T (stopped after the int3). */
static void on_breakpoint(struct run *r, struct thread *t, struct user_regs_struct *u)
{
	disarm(r);
	u->rip = r->bp_addr;
	ptrace(PTRACE_SETREGS, t->tid, NULL, u);
	int err = open_target(r, t->tid);
	if (err) {
		set_error(r, "cannot read the program: %s", bk_strerror(err));
		ptrace(PTRACE_CONT, t->tid, NULL, NULL);
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
		if (o != t && o->mode == MODE_RUNNING &&
		    ptrace(PTRACE_INTERRUPT, o->tid, NULL, NULL) == 0)
			o->want_stepping = true;
	}
	start_stepping(r, t, r->trigger_complete);
}

/* ---- The loop ------------------------------------------------------------ */

static int spawn(char *const *argv, int *errfd)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return -1;
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		raise(SIGSTOP); /* wait to be seized */
		execvp(argv[0], argv);
		int e = errno;
		(void)!write(p[1], &e, sizeof(e));
		_exit(127);
	}
	close(p[1]);
	int st;
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SEIZE, pid, NULL,
		   (void *)(uintptr_t)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |
				       PTRACE_O_EXITKILL)) != 0) {
		int e = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		close(p[0]);
		errno = e;
		return -1;
	}
	kill(pid, SIGCONT);
	*errfd = p[0];
	return pid;
}

static void loop(struct run *r, int errfd)
{
	bool killed = false;
	for (;;) {
		if (r->o->stop && *r->o->stop && !killed) {
			kill(r->pid, SIGKILL);
			killed = true;
			r->res->interrupted = true;
		}
		int st;
		int tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break; /* ECHILD: nothing left */
		}
		if ((r->res->stats.insns_stepped & 4095) == 0)
			progress(r);
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			drop_thread(r, tid);
			if (tid != r->pid)
				continue;
			int e;
			if (!r->triggered && read(errfd, &e, sizeof(e)) == (ssize_t)sizeof(e)) {
				set_error(r, "cannot run the program: %s", strerror(e));
			}
			r->res->status = st;
			r->res->exited = true;
			break;
		}
		if (!WIFSTOPPED(st))
			continue;
		struct thread *t = add_thread(r, tid);
		if (!t) {
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		int sig = WSTOPSIG(st), event = st >> 16;
		switch (event) {
		case PTRACE_EVENT_CLONE: {
			unsigned long child;
			if (ptrace(PTRACE_GETEVENTMSG, tid, NULL, &child) == 0)
				add_thread(r, (int)child);
			resume(r, t, 0);
			continue;
		}
		case PTRACE_EVENT_EXEC:
			on_exec(r, t);
			continue;
		case PTRACE_EVENT_STOP:
			if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
				ptrace(PTRACE_LISTEN, tid, NULL, NULL);
				continue;
			}
			/* A new thread's first stop, or our interrupt. */
			if (t->want_stepping)
				start_stepping(r, t, false);
			else if (t->mode == MODE_STEPPING && !t->have_pending)
				start_stepping(r, t, t->complete);
			else
				resume(r, t, 0);
			continue;
		case 0:
			break;
		default:
			resume(r, t, 0);
			continue;
		}
		if (t->mode == MODE_STEPPING) {
			on_step_stop(r, t, sig);
			continue;
		}
		if (sig == SIGTRAP && r->bp_armed) {
			struct user_regs_struct u;
			if (get_regs(tid, &u) && u.rip == r->bp_addr + 1) {
				on_breakpoint(r, t, &u);
				continue;
			}
		}
		ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
	}
}

int val_run(char *const *argv, const struct val_opts *o, struct val_result *res)
{
	memset(res, 0, sizeof(*res));
	if (!argv || !argv[0] || !o || o->size < sizeof(*o))
		return BK_E_INVAL;
	struct run r = { .o = o, .res = res };
	int err = val_decoder_open(&r.dec);
	if (err) {
		set_error(&r, "cannot open the disassembler: %s", bk_strerror(err));
		return err;
	}
	int errfd = -1;
	r.pid = spawn(argv, &errfd);
	if (r.pid < 0) {
		set_error(&r, "cannot trace %s: %s", argv[0], strerror(errno));
		val_decoder_close(r.dec);
		return BK_E_IO;
	}
	loop(&r, errfd);
	close(errfd);
	if (r.clock_started)
		res->stats.seconds = since(&r.t0);
	if (r.target)
		close_target(&r);
	for (size_t i = 0; i < r.nthreads; i++)
		free_thread(r.threads[i]);
	base_free(r.threads);
	base_free(r.mslots);
	base_free(r.exe_path);
	val_code_free(&r.code);
	val_decoder_close(r.dec);
	return 0;
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
	memset(res, 0, sizeof(*res));
}

const char *val_reg_name(unsigned regno)
{
	if (regno == VAL_HOW)
		return "how";
	const char *n = bk_reg_name(BK_ARCH_X86_64, regno);
	return n ? n : "?";
}
