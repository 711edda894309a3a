/* The validator's ptrace driver (val.h, "Drivers"): the program is a child
 * of ours, each of its threads traced, stopped and resumed on its own.
 *
 * Start. The child stops itself, is seized (PTRACE_O_TRACECLONE: threads
 * are followed; TRACEEXEC: exec is followed; EXITKILL: it dies with us) and
 * execs; its stops before the exec are passed over. When the exec fails it
 * writes errno into a pipe and exits 127: that is its exit's error.
 *
 * Stops. How a thread was resumed says what its SIGTRAP means: after
 * PTRACE_SINGLESTEP the step is done; after PTRACE_CONT or PTRACE_SYSCALL,
 * with one of our int3s a byte back it is that breakpoint (the PC is moved
 * back onto it), otherwise a signal like any other. SIGTRAP | 0x80 is a
 * system-call stop (TRACESYSGOOD), entry and exit alternating from the
 * PTRACE_SYSCALL that started the run. Group-stops are listened through
 * (PTRACE_LISTEN); any other PTRACE_EVENT_STOP is a new thread's first stop
 * or our interrupt.
 *
 * Breakpoints are int3 bytes written through /proc/PID/mem (the debug
 * registers would be per thread, and do not fire on every machine we run
 * on). Every read (read(), the space) sees the original bytes through
 * overlay(); a thread stepped where one is set executes the original
 * instruction with it lifted for that one step (a count per breakpoint: the
 * int3 goes back when the last stepping thread has stopped). A breakpoint
 * taken out while lifted stays known until the lift ends, so that nobody
 * sets it again under a thread executing the original.
 *
 * Other processes. With run_free, children made by fork, vfork or clone
 * without CLONE_THREAD are caught (TRACEFORK, TRACEVFORK) only because they
 * inherit our int3s: one with its own memory gets the original bytes back
 * and is let go at its first stop; one sharing ours (vfork) runs traced
 * until exec, stepped over our breakpoints. They are never reported.
 * Without run_free they are not traced (a clone without CLONE_THREAD is
 * taken for a thread).
 *
 * The space is a ptrace target over the stopped threads (uw_target_adopt)
 * whose memory reads go through the overlay, kept across steps
 * (uw_target_refresh after map changes, uw_target_invalidate before each
 * walk) and closed at exec.
 *
 * Other threads' stops are handled while a thread runs or waits for a
 * CPU: a step can meet an int3 written after it was asked for, and a
 * thread can trap on an int3 taken out before its trap is seen. An int3's
 * trap is SI_KERNEL, a finished step's TRAP_TRACE: the thread is put back
 * on the instruction and stepped again (with the breakpoint lifted) or
 * resumed as it went (ran_our_int3, ran_a_gone_int3).
 *
 * A SIGTRAP of the program's own that comes with a step's stop (raised by
 * the stepped system call, or the program's int3 stepped) is both: the
 * step is reported, then the signal (program_trap).
 *
 * Limits: a step's trap is forced (the kernel's force_sig), which resets
 * an ignored SIGTRAP to the default action: a program that ignores
 * SIGTRAP and then raises it dies under this driver (not in-process); a
 * thread running free through an entry whose int3 another thread has
 * lifted for its step passes it unseen; the program reading its own code
 * sees our int3s. x86-64 only (struct user_regs_struct).
 *
 * Trusts the checker to resume, read and interrupt only threads it was
 * told of, and to resume each stopped one once.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kcmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "val.h"

#include "../target/target.h"
#include "../unwind/unwind.h"

_Static_assert(sizeof(struct user_regs_struct) == TGT_X86_64_USER_REGS * sizeof(uint64_t),
	       "user_regs_struct is the layout tgt_regs_x86_64 reads");

struct pt_thread {
	int tid;
	enum val_resume how;     /* how it was last resumed */
	bool in_syscall;         /* SYSCALLS: between an entry stop and its exit */
	bool has_regs;           /* regs are this stop's */
	bool has_lift;           /* the breakpoint at LIFTED is lifted for its step */
	bool own_trap;           /* its step's stop carried the program's own
				  * SIGTRAP (program_trap) */
	bool report_trap;        /* resumed after that: the signal's stop is
				  * reported next, the thread not moved */
	bool delivered;          /* last resumed with a signal */
	uint64_t lifted;
	struct user_regs_struct regs;
};

struct pt_bp {
	uint64_t addr;
	uint16_t lifts;          /* threads stepping the original instruction */
	uint8_t orig;            /* the program's byte */
	bool wanted;             /* inserted and not removed since */
	bool inserted;           /* the program's memory holds int3 */
};

/* Breakpoints by address: v[0, nsorted) sorted, v[nsorted, n) the recent
 * ones, unsorted, merged into the rest once there are more than BP_TAIL
 * (the checker adds thousands at once, then one return breakpoint per run
 * at full speed). A record is live while wanted or lifted; a dead one in
 * the sorted part stays there until the next merge. */
#define BP_TAIL 32

struct bp_table {
	struct pt_bp *v;
	size_t n, nsorted, cap;
};

/* A process made by fork, vfork or clone without CLONE_THREAD. */
struct foreign {
	int pid;
	bool shared, release;
	bool has_lift;
	uint64_t lifted;
};

struct pt {
	struct val_driver base;  /* first: a struct val_driver * is a struct pt * */
	int pid;
	int errfd;               /* the child's exec error, until it execs */
	bool run_free;
	bool exec_seen;
	int memfd;               /* /proc/PID/mem of the current image */
	struct pt_thread **threads;
	size_t nthreads, cap;
	struct pt_thread *last;
	struct bp_table bps;
	struct foreign *foreign;
	size_t nforeign, foreign_cap;
	struct bk_target *target;
	struct bk_space *space;
	struct bk_target_ops inner_ops; /* the space's own memory reads */
	void *inner_ctx;
	char exe[64];
	char prog[256];          /* argv[0], for the error when it cannot run */
	char error[256];
};

static struct pt *pt_of(struct val_driver *d)
{
	return (struct pt *)d;
}

/* Read up to LEN bytes at ADDR of process PID; how many could be read. */
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

/* ---- Breakpoints --------------------------------------------------------- */

static bool bp_live(const struct pt_bp *b)
{
	return b->wanted || b->lifts;
}

/* The record at ADDR, live or dead, or NULL. */
static struct pt_bp *bp_slot(const struct bp_table *t, uint64_t addr)
{
	size_t i = BASE_COUNT_LT(t->v, t->nsorted, addr, addr);
	if (i < t->nsorted && t->v[i].addr == addr)
		return &t->v[i];
	for (i = t->nsorted; i < t->n; i++)
		if (t->v[i].addr == addr)
			return &t->v[i];
	return NULL;
}

static struct pt_bp *bp_find(const struct bp_table *t, uint64_t addr)
{
	struct pt_bp *b = bp_slot(t, addr);
	return b && bp_live(b) ? b : NULL;
}

static int cmp_bp(const void *a, const void *b)
{
	uint64_t x = ((const struct pt_bp *)a)->addr, y = ((const struct pt_bp *)b)->addr;
	return x < y ? -1 : x > y;
}

/* Sort the recent ones into the rest, leaving the dead out. Without memory
 * the table stays as it is, correct and slower. */
static void bp_merge(struct bp_table *t)
{
	struct pt_bp *tail = t->v + t->nsorted, *m = base_alloc(t->cap * sizeof(*m));
	size_t ntail = t->n - t->nsorted, i = 0, j = 0, k = 0;
	if (!m)
		return;
	qsort(tail, ntail, sizeof(*tail), cmp_bp);
	while (i < t->nsorted || j < ntail) {
		const struct pt_bp *next = j == ntail || (i < t->nsorted && t->v[i].addr < tail[j].addr) ?
			&t->v[i++] : &tail[j++];
		if (bp_live(next))
			m[k++] = *next;
	}
	base_free(t->v);
	t->v = m;
	t->n = t->nsorted = k;
}

/* A new record for ADDR (not in the table), or NULL. */
static struct pt_bp *bp_add(struct bp_table *t, uint64_t addr)
{
	if (t->n - t->nsorted >= BP_TAIL)
		bp_merge(t);
	if (t->n == t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 1024;
		void *p = base_realloc(t->v, ncap * sizeof(*t->v));
		if (!p)
			return NULL;
		t->v = p;
		t->cap = ncap;
	}
	struct pt_bp *b = &t->v[t->n++];
	*b = (struct pt_bp){ .addr = addr };
	return b;
}

/* B died: forget it (a sorted one is left, dead, for the next merge). */
static void bp_drop(struct bp_table *t, struct pt_bp *b)
{
	if (b >= t->v + t->nsorted)
		*b = t->v[--t->n];
}

static void bp_clear(struct bp_table *t)
{
	base_free(t->v);
	*t = (struct bp_table){ 0 };
}

/* The program's bytes as they are without our breakpoints. */
static void overlay(const struct pt *p, uint64_t addr, void *buf, size_t len)
{
	const struct bp_table *t = &p->bps;
	uint8_t *b = buf;
	uint64_t end = addr + len;
	for (size_t i = BASE_COUNT_LT(t->v, t->nsorted, addr, addr);
	     i < t->nsorted && t->v[i].addr < end; i++)
		if (t->v[i].inserted)
			b[t->v[i].addr - addr] = t->v[i].orig;
	for (size_t i = t->nsorted; i < t->n; i++)
		if (t->v[i].inserted && t->v[i].addr >= addr && t->v[i].addr < end)
			b[t->v[i].addr - addr] = t->v[i].orig;
}

/* Put the program's memory in the state B wants: int3 while it is wanted
 * and no stepping thread executes the original instruction. */
static void sync_bp(struct pt *p, struct pt_bp *b)
{
	bool want = b->wanted && !b->lifts;
	if (want == b->inserted || p->memfd < 0)
		return;
	uint8_t byte = want ? 0xcc : b->orig;
	if (pwrite(p->memfd, &byte, 1, (off_t)b->addr) == 1)
		b->inserted = want;
}

/* Lift the breakpoint at PC, if any, for one step of a thread or a
 * process sharing our memory (*HAS_LIFT, *LIFTED are its). */
static void lift(struct pt *p, bool *has_lift, uint64_t *lifted, uint64_t pc)
{
	struct pt_bp *b = bp_find(&p->bps, pc);
	if (!b || *has_lift)
		return;
	b->lifts++;
	sync_bp(p, b);
	*has_lift = true;
	*lifted = pc;
}

static void unlift(struct pt *p, bool *has_lift, uint64_t lifted)
{
	if (!*has_lift)
		return;
	*has_lift = false;
	struct pt_bp *b = bp_find(&p->bps, lifted);
	if (!b || !b->lifts)
		return;
	b->lifts--;
	sync_bp(p, b);
	if (!bp_live(b))
		bp_drop(&p->bps, b);
}

static int pt_insert_bp(struct val_driver *d, uint64_t addr)
{
	struct pt *p = pt_of(d);
	struct pt_bp *b = bp_slot(&p->bps, addr);
	uint8_t orig;
	if (b && b->wanted)
		return 0;
	if (p->memfd < 0 || pread(p->memfd, &orig, 1, (off_t)addr) != 1)
		return BK_E_MEMORY;
	if (b && b->lifts) {
		/* Lifted: memory holds the program's byte; the int3 goes in
		 * when the step is over. */
		b->orig = orig;
		b->wanted = true;
		return 0;
	}
	if (!b && !(b = bp_add(&p->bps, addr)))
		return BK_E_NOMEM;
	*b = (struct pt_bp){ .addr = addr, .orig = orig, .wanted = true };
	sync_bp(p, b);
	if (!b->inserted) {
		b->wanted = false;
		bp_drop(&p->bps, b);
		return BK_E_MEMORY;
	}
	return 0;
}

static void pt_remove_bp(struct val_driver *d, uint64_t addr, bool restore)
{
	struct pt *p = pt_of(d);
	struct pt_bp *b = bp_find(&p->bps, addr);
	if (!b || !b->wanted)
		return;
	b->wanted = false;
	if (restore)
		sync_bp(p, b);
	b->inserted = false; /* written back, or the code under it is gone */
	if (!b->lifts)
		bp_drop(&p->bps, b);
}

/* ---- Memory and the space ------------------------------------------------ */

static size_t pt_read(struct val_driver *d, uint64_t addr, void *dst, size_t len)
{
	struct pt *p = pt_of(d);
	size_t n = read_mem(p->pid, addr, dst, len);
	overlay(p, addr, dst, n);
	return n;
}

/* The space's memory callback: the unwinder reads code too (signal
 * trampolines, the frame-pointer fallback's prologues). */
static int space_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	struct pt *p = ctx;
	int err = p->inner_ops.read_mem(p->inner_ctx, addr, dst, len);
	if (!err)
		overlay(p, addr, dst, len);
	return err;
}

static void close_space(struct pt *p)
{
	bk_target_close(p->target);
	p->target = NULL;
	p->space = NULL;
}

static int pt_space_open(struct val_driver *d, int tid, struct bk_space **out)
{
	struct pt *p = pt_of(d);
	close_space(p);
	int err = uw_target_adopt(p->pid, &tid, 1, &p->target);
	if (err)
		return err;
	p->space = bk_target_space(p->target);
	p->inner_ops = p->space->ops;
	p->inner_ctx = p->space->ctx;
	p->space->ops.read_mem = space_read;
	p->space->ctx = p;
	*out = p->space;
	return 0;
}

static int pt_space_refresh(struct val_driver *d, size_t *added)
{
	return uw_target_refresh(pt_of(d)->target, added);
}

static void pt_space_invalidate(struct val_driver *d)
{
	uw_target_invalidate(pt_of(d)->target);
}

/* ---- Threads ------------------------------------------------------------- */

static struct pt_thread *find_thread(struct pt *p, int tid)
{
	if (p->last && p->last->tid == tid)
		return p->last;
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i]->tid == tid)
			return p->last = p->threads[i];
	return NULL;
}

static struct pt_thread *add_thread(struct pt *p, int tid)
{
	struct pt_thread *th = find_thread(p, tid);
	if (th)
		return th;
	if (p->nthreads == p->cap) {
		size_t ncap = p->cap ? p->cap * 2 : 16;
		void *n = base_realloc(p->threads, ncap * sizeof(*p->threads));
		if (!n)
			return NULL;
		p->threads = n;
		p->cap = ncap;
	}
	th = base_calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->tid = tid;
	th->how = VAL_RESUME_RUN;
	p->threads[p->nthreads++] = th;
	return p->last = th;
}

static void drop_thread(struct pt *p, int tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i]->tid == tid) {
			struct pt_thread *th = p->threads[i];
			if (p->last == th)
				p->last = NULL;
			unlift(p, &th->has_lift, th->lifted);
			base_free(th);
			p->threads[i] = p->threads[--p->nthreads];
			return;
		}
}

static bool get_regs(struct pt_thread *th)
{
	if (!th->has_regs)
		th->has_regs = ptrace(PTRACE_GETREGS, th->tid, NULL, &th->regs) == 0;
	return th->has_regs;
}

static int pt_regs(struct val_driver *d, int tid, struct bk_regs *out)
{
	struct pt_thread *th = find_thread(pt_of(d), tid);
	uint64_t words[TGT_X86_64_USER_REGS];
	if (!th || !get_regs(th))
		return BK_E_NOT_FOUND;
	memcpy(words, &th->regs, sizeof(words));
	tgt_regs_x86_64(words, out);
	return 0;
}

static int request_of(enum val_resume how)
{
	switch (how) {
	case VAL_RESUME_STEP: return PTRACE_SINGLESTEP;
	case VAL_RESUME_SYSCALLS: return PTRACE_SYSCALL;
	case VAL_RESUME_RUN: break;
	}
	return PTRACE_CONT;
}

/* A step's trap is forced on the thread (the kernel's force_sig): where
 * SIGTRAP is blocked (in the program's own SIGTRAP handler) it would reset
 * the program's action to the default and unblock it. So SIGTRAP is taken
 * out of the mask of a thread about to be stepped, as the in-process
 * driver keeps it out (the mask a handler's frame saves is untouched). */
static void unblock_trap(int tid)
{
	uint64_t mask;
	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(mask), &mask) == 0 &&
	    (mask & (1ull << (SIGTRAP - 1)))) {
		mask &= ~(1ull << (SIGTRAP - 1));
		ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(mask), &mask);
	}
}

static int pt_resume(struct val_driver *d, int tid, enum val_resume how, int sig)
{
	struct pt *p = pt_of(d);
	struct pt_thread *th = find_thread(p, tid);
	if (!th)
		return BK_E_NOT_FOUND;
	if (how != VAL_RESUME_SYSCALLS)
		th->in_syscall = false;
	if (th->own_trap) {
		/* Still in the SIGTRAP's stop: the signal's stop is next,
		 * then a resume with it delivers it with its siginfo. */
		th->own_trap = false;
		if (!sig) {
			th->how = how;
			th->report_trap = true;
			return 0;
		}
	}
	if (how == VAL_RESUME_STEP && !th->has_lift && get_regs(th))
		lift(p, &th->has_lift, &th->lifted, th->regs.rip);
	/* The mask changes only by a system call, a signal's delivery or
	 * at full speed: looked at after one of those only. */
	if (how == VAL_RESUME_STEP &&
	    (th->how != VAL_RESUME_STEP || th->delivered || !th->has_regs ||
	     th->regs.orig_rax != (unsigned long long)-1))
		unblock_trap(th->tid);
	th->delivered = sig != 0;
	th->how = how;
	th->has_regs = false;
	if (ptrace(request_of(how), tid, NULL, (void *)(uintptr_t)sig) != 0)
		return BK_E_NOT_FOUND;
	return 0;
}

/* Resume TH as it was going (after a stop the checker does not see). */
static void go_on(struct pt_thread *th)
{
	th->has_regs = false;
	ptrace(request_of(th->how), th->tid, NULL, NULL);
}

static int pt_interrupt(struct val_driver *d, int tid)
{
	(void)d;
	return ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) == 0 ? 0 : BK_E_NOT_FOUND;
}

static void pt_kill(struct val_driver *d)
{
	kill(pt_of(d)->pid, SIGKILL);
}

static bool pt_catches(struct val_driver *d, int sig)
{
	return sig > 0 && sig <= 64 &&
	       (tgt_proc_status_mask(pt_of(d)->pid, "SigCgt") >> (sig - 1) & 1);
}

/* ---- Other processes ------------------------------------------------------ */

static struct foreign *find_foreign(struct pt *p, int pid)
{
	for (size_t i = 0; i < p->nforeign; i++)
		if (p->foreign[i].pid == pid)
			return &p->foreign[i];
	return NULL;
}

static void drop_foreign(struct pt *p, int pid)
{
	struct foreign *f = find_foreign(p, pid);
	if (f)
		*f = p->foreign[--p->nforeign];
}

/* PID is a process of its own (not a thread of the program): decide what
 * to do with it once. */
static struct foreign *add_foreign(struct pt *p, int pid)
{
	struct foreign *f = find_foreign(p, pid);
	if (f)
		return f;
	if (p->nforeign == p->foreign_cap) {
		size_t ncap = p->foreign_cap ? p->foreign_cap * 2 : 8;
		void *n = base_realloc(p->foreign, ncap * sizeof(*p->foreign));
		if (!n)
			return NULL;
		p->foreign = n;
		p->foreign_cap = ncap;
	}
	f = &p->foreign[p->nforeign++];
	*f = (struct foreign){ .pid = pid };
	/* kcmp: 0 when PID shares our program's memory (vfork). */
	f->shared = syscall(SYS_kcmp, p->pid, pid, KCMP_VM, 0, 0) == 0;
	if (!f->shared) {
		/* Its copy of the memory: the original bytes back. */
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		for (size_t i = 0; fd >= 0 && i < p->bps.n; i++) {
			const struct pt_bp *b = &p->bps.v[i];
			if (b->inserted)
				(void)!pwrite(fd, &b->orig, 1, (off_t)b->addr);
		}
		if (fd >= 0)
			close(fd);
		f->release = true;
	}
	return f;
}

/* Is TID, seen for the first time, a process other than the program? */
static bool is_other_process(struct pt *p, int tid)
{
	char path[64], line[128];
	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	FILE *fp = fopen(path, "re");
	if (!fp)
		return false;
	int tgid = 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(fp);
	return tgid > 0 && tgid != p->pid;
}

/* A stop of another process. One with its own memory is let go at its
 * first stop; one sharing ours (vfork) runs until exec, stepped over our
 * breakpoints. */
static void on_foreign_stop(struct pt *p, struct foreign *f, int st)
{
	int pid = f->pid, sig = WSTOPSIG(st), event = st >> 16;
	if (f->release || event == PTRACE_EVENT_EXEC) {
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
		drop_foreign(p, pid);
		return;
	}
	if (event == PTRACE_EVENT_STOP) {
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU)
			ptrace(PTRACE_LISTEN, pid, NULL, NULL);
		else
			ptrace(PTRACE_CONT, pid, NULL, NULL);
		return;
	}
	if (event) {
		ptrace(PTRACE_CONT, pid, NULL, NULL);
		return;
	}
	if (sig == SIGTRAP) {
		struct user_regs_struct u;
		if (f->has_lift) {
			unlift(p, &f->has_lift, f->lifted);
			ptrace(PTRACE_CONT, pid, NULL, NULL);
			return;
		}
		if (ptrace(PTRACE_GETREGS, pid, NULL, &u) == 0 && bp_find(&p->bps, u.rip - 1)) {
			u.rip--;
			ptrace(PTRACE_SETREGS, pid, NULL, &u);
			lift(p, &f->has_lift, &f->lifted, u.rip);
			ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL);
			return;
		}
	}
	ptrace(PTRACE_CONT, pid, NULL, (void *)(uintptr_t)sig);
}

/* Handle TID's wait status ST if TID is another process. */
static bool other_process_stop(struct pt *p, int tid, int st)
{
	struct foreign *f = p->nforeign ? find_foreign(p, tid) : NULL;
	if (!f && p->run_free && WIFSTOPPED(st) && tid != p->pid && !find_thread(p, tid) &&
	    is_other_process(p, tid))
		f = add_foreign(p, tid);
	if (!f)
		return false;
	if (WIFSTOPPED(st))
		on_foreign_stop(p, f, st);
	else
		drop_foreign(p, tid);
	return true;
}

/* ---- Events --------------------------------------------------------------- */

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

/* TH executed a new program: the old image's threads, breakpoints and
 * space went with it. */
static void on_exec(struct pt *p, struct pt_thread *th, struct val_event *ev)
{
	for (size_t i = 0; i < p->nthreads;)
		if (p->threads[i] != th) {
			base_free(p->threads[i]);
			p->threads[i] = p->threads[--p->nthreads];
		} else {
			i++;
		}
	p->last = NULL;
	th->has_lift = th->in_syscall = false;
	bp_clear(&p->bps);
	close_space(p);
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/mem", p->pid);
	if (p->memfd >= 0)
		close(p->memfd);
	p->memfd = open(path, O_RDWR | O_CLOEXEC);
	p->exec_seen = true;
	snprintf(p->exe, sizeof(p->exe), "/proc/%d/exe", p->pid);
	ev->kind = VAL_EV_EXEC;
	ev->entry = auxv_entry(p->pid);
	ev->exe = p->exe;
}

/* The program is over: its exit, and why it never ran when the exec
 * failed. */
static void on_program_exit(struct pt *p, int st, struct val_event *ev)
{
	int e;
	ev->program = true;
	ev->status = st;
	if (!p->exec_seen && read(p->errfd, &e, sizeof(e)) == (ssize_t)sizeof(e)) {
		snprintf(p->error, sizeof(p->error), "%.200s: cannot run: %s", p->prog, strerror(e));
		ev->error = p->error;
	}
}

/* A ptrace event stop (EVENT) of TH: true when EV is to be reported. */
static bool on_event(struct pt *p, struct pt_thread *th, int event, int sig, struct val_event *ev)
{
	switch (event) {
	case PTRACE_EVENT_CLONE:
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK: {
		unsigned long child;
		if (ptrace(PTRACE_GETEVENTMSG, th->tid, NULL, &child) == 0) {
			if (p->run_free &&
			    (event != PTRACE_EVENT_CLONE || is_other_process(p, (int)child))) {
				add_foreign(p, (int)child);
			} else if (add_thread(p, (int)child)) {
				ev->kind = VAL_EV_THREAD;
				ev->child = (int)child;
				return true;
			}
		}
		go_on(th);
		return false;
	}
	case PTRACE_EVENT_EXEC:
		on_exec(p, th, ev);
		return true;
	case PTRACE_EVENT_STOP:
		if (sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			ptrace(PTRACE_LISTEN, th->tid, NULL, NULL);
			return false;
		}
		if (!p->exec_seen) {
			go_on(th);
			return false;
		}
		ev->kind = VAL_EV_STOPPED;
		return true;
	default:
		go_on(th);
		return false;
	}
}

/* Whether TH's SIGTRAP is one of our int3s that has been taken out since
 * TH ran it: the trap is an int3's (SI_KERNEL, not a finished step's
 * TRAP_TRACE) and the byte before the PC is no int3 any more (a program's
 * own int3 stays in its code). Another thread's stop, handled while TH ran
 * or waited for a CPU, wrote the breakpoint after TH was resumed, or took
 * it out before TH's trap was seen: TH must not go on from the middle of
 * its instruction. Then TH is put back at the instruction and resumed as
 * it was going (a step steps it again). */
static bool ran_a_gone_int3(struct pt *p, struct pt_thread *th)
{
	siginfo_t si;
	uint8_t byte;
	if (ptrace(PTRACE_GETSIGINFO, th->tid, NULL, &si) != 0 || si.si_code != SI_KERNEL ||
	    !get_regs(th) || bp_find(&p->bps, th->regs.rip - 1) || p->memfd < 0 ||
	    pread(p->memfd, &byte, 1, (off_t)(th->regs.rip - 1)) != 1 || byte == 0xcc)
		return false;
	th->regs.rip--;
	if (ptrace(PTRACE_SETREGS, th->tid, NULL, &th->regs) != 0)
		return false;
	go_on(th);
	return true;
}

/* Whether stepping TH ran one of our int3s, still set, instead of its
 * instruction: it was written after the step was asked for (the step lifts
 * only what is set when it starts). Then TH is put back on the breakpoint
 * and stepped again with it lifted. */
static bool ran_our_int3(struct pt *p, struct pt_thread *th)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, th->tid, NULL, &si) != 0 || si.si_code != SI_KERNEL ||
	    !get_regs(th) || !bp_find(&p->bps, th->regs.rip - 1))
		return false;
	th->regs.rip--;
	if (ptrace(PTRACE_SETREGS, th->tid, NULL, &th->regs) != 0)
		return false;
	lift(p, &th->has_lift, &th->lifted, th->regs.rip);
	th->has_regs = false;
	ptrace(PTRACE_SINGLESTEP, th->tid, NULL, NULL);
	return true;
}

/* Whether TH's SIGTRAP after a step is the program's own: sent by a
 * process (raise, kill: si_code <= 0), or the trap of an int3 of the
 * program's that the step ran (SI_KERNEL, the program's byte before the PC
 * an int3, under one of ours or not). Such a trap and a step's merge into
 * one stop (SIGTRAP is not queued twice): the step is done, and the signal
 * is reported after it. */
static bool program_trap(struct pt *p, struct pt_thread *th)
{
	siginfo_t si;
	if (ptrace(PTRACE_GETSIGINFO, th->tid, NULL, &si) != 0)
		return false;
	if (si.si_code <= 0)
		return true;
	if (si.si_code != SI_KERNEL || !get_regs(th))
		return false;
	const struct pt_bp *b = bp_find(&p->bps, th->regs.rip - 1);
	uint8_t byte;
	if (b)
		return b->orig == 0xcc;
	return p->memfd >= 0 && pread(p->memfd, &byte, 1, (off_t)(th->regs.rip - 1)) == 1 &&
	       byte == 0xcc;
}

/* A signal stop (SIG) of TH, whose meaning depends on how TH was resumed:
 * true when EV is to be reported (false: TH is gone, its exit follows, or
 * TH was stepped again: its next stop follows). */
static bool on_signal(struct pt *p, struct pt_thread *th, int sig, struct val_event *ev)
{
	if (th->how == VAL_RESUME_STEP) {
		unlift(p, &th->has_lift, th->lifted);
		if (sig == SIGTRAP && program_trap(p, th)) {
			th->own_trap = true;
			ev->kind = VAL_EV_STEPPED;
			return true;
		}
		if (sig == SIGTRAP && (ran_our_int3(p, th) || ran_a_gone_int3(p, th)))
			return false;
		if (sig == SIGTRAP) {
			ev->kind = VAL_EV_STEPPED;
			return true;
		}
	} else if (sig == (SIGTRAP | 0x80)) {
		if (!get_regs(th))
			return false;
		th->in_syscall = !th->in_syscall;
		ev->kind = VAL_EV_SYSCALL;
		ev->nr = th->regs.orig_rax;
		ev->exit = !th->in_syscall;
		return true;
	} else if (sig == SIGTRAP && get_regs(th) && bp_find(&p->bps, th->regs.rip - 1)) {
		th->regs.rip--;
		ptrace(PTRACE_SETREGS, th->tid, NULL, &th->regs);
		ev->kind = VAL_EV_BREAKPOINT;
		ev->addr = th->regs.rip;
		return true;
	} else if (sig == SIGTRAP && ran_a_gone_int3(p, th)) {
		return false;
	}
	ev->kind = VAL_EV_SIGNAL;
	ev->sig = sig;
	return true;
}

static int pt_wait(struct val_driver *d, struct val_event *ev)
{
	struct pt *p = pt_of(d);
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i]->report_trap) {
			p->threads[i]->report_trap = false;
			*ev = (struct val_event){ .kind = VAL_EV_SIGNAL, .tid = p->threads[i]->tid,
						  .sig = SIGTRAP };
			return 1;
		}
	for (;;) {
		int st;
		int tid = waitpid(-1, &st, __WALL);
		*ev = (struct val_event){ .tid = tid };
		if (tid < 0) {
			if (errno != EINTR)
				return 0; /* ECHILD: nothing left */
			ev->kind = VAL_EV_NONE;
			return 1;
		}
		if (other_process_stop(p, tid, st))
			continue;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			drop_thread(p, tid);
			ev->kind = VAL_EV_EXITED;
			if (tid == p->pid)
				on_program_exit(p, st, ev);
			return 1;
		}
		if (!WIFSTOPPED(st))
			continue;
		struct pt_thread *th = add_thread(p, tid);
		if (!th) {
			ptrace(PTRACE_CONT, tid, NULL, NULL);
			continue;
		}
		th->has_regs = false;
		int sig = WSTOPSIG(st), event = st >> 16;
		if (event) {
			if (on_event(p, th, event, sig, ev))
				return 1;
			continue;
		}
		if (!p->exec_seen) {
			ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)sig);
			continue;
		}
		if (on_signal(p, th, sig, ev))
			return 1;
	}
}

/* ---- Start and end -------------------------------------------------------- */

static void pt_close(struct val_driver *d)
{
	struct pt *p = pt_of(d);
	if (!p)
		return;
	close_space(p);
	for (size_t i = 0; i < p->nthreads; i++)
		base_free(p->threads[i]);
	base_free(p->threads);
	bp_clear(&p->bps);
	base_free(p->foreign);
	if (p->memfd >= 0)
		close(p->memfd);
	if (p->errfd >= 0)
		close(p->errfd);
	base_free(p);
}

/* Fork the child: it stops itself and is seized, then execs; its exec
 * error comes back through *ERRFD. Returns its pid or -1 (errno). */
static int spawn(char *const *argv, bool run_free, int *errfd)
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
	/* Breakpoints put int3 in memory: children made by fork must be
	 * caught to get the original bytes back. */
	unsigned long opts = PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL;
	if (run_free)
		opts |= PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACESYSGOOD;
	if (waitpid(pid, &st, WUNTRACED) != pid || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SEIZE, pid, NULL, (void *)(uintptr_t)opts) != 0) {
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

static int pt_start(char *const *argv, const struct val_driver_opts *opts,
		    struct val_driver **out, char *why, size_t whylen)
{
	struct pt *p = base_calloc(1, sizeof(*p));
	if (!p) {
		snprintf(why, whylen, "out of memory");
		return BK_E_NOMEM;
	}
	p->base.ops = &val_ptrace_driver;
	p->base.arch = BK_ARCH_X86_64;
	p->run_free = opts->run_free;
	p->memfd = p->errfd = -1;
	snprintf(p->prog, sizeof(p->prog), "%s", argv[0]);
	p->pid = spawn(argv, p->run_free, &p->errfd);
	if (p->pid < 0) {
		snprintf(why, whylen, "cannot trace %s: %s", argv[0], strerror(errno));
		pt_close(&p->base);
		return BK_E_IO;
	}
	*out = &p->base;
	return 0;
}

const struct val_driver_ops val_ptrace_driver = {
	.size = sizeof(struct val_driver_ops),
	.start = pt_start,
	.close = pt_close,
	.wait = pt_wait,
	.resume = pt_resume,
	.interrupt = pt_interrupt,
	.kill = pt_kill,
	.regs = pt_regs,
	.read = pt_read,
	.insert_bp = pt_insert_bp,
	.remove_bp = pt_remove_bp,
	.catches = pt_catches,
	.space_open = pt_space_open,
	.space_refresh = pt_space_refresh,
	.space_invalidate = pt_space_invalidate,
};
