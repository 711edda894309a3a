/* The in-process driver, the program's side: a library preloaded into the
 * program (LD_PRELOAD, by val_inproc.c) that single-steps it from inside.
 * Each instruction of a stepped thread raises SIGTRAP in the program
 * itself (the trap flag, TF in EFLAGS, set in the context the SIGTRAP
 * handler returns to), and the handler hands the stop to the one checker
 * (val_run.c, through val_checker_event) as a driver's event; the checker
 * calls back into this driver's ops (val.h, "Drivers") as it would into
 * the ptrace driver's:
 *
 *   op           here
 *   start, wait  nothing: the events are pushed from the handler
 *   resume       STEP plants int3s (or sets TF in the handler's ucontext),
 *                RUN and SYSCALLS clear TF; a thread on a breakpoint runs
 *                the instruction under it first, emulated or as a copy
 *                (below, "Off a breakpoint")
 *   interrupt    tgkill(SIGTRAP), known by its sender
 *   regs         the handler's ucontext
 *   read         process_vm_readv on ourselves (never faults), our
 *                breakpoints hidden
 *   insert_bp    int3 written into the code page, made writable (and kept
 *                executable) once
 *   catches      false: a program with a handler of its own is run again
 *                under ptrace (below)
 *   space_*      modules from a ptrace-less target over our own pid
 *                (uw_target_adopt: /proc/self/maps), memory read directly
 *                (the walked thread's stack) or by process_vm_readv,
 *                breakpoints hidden
 *
 * What is not stepped: the kernel clears TF when it enters a signal
 * handler, so the handler, the checker, and every libc call the checker
 * makes run at full speed; TF comes back with the context at sigreturn.
 * The int3s of a step are written when the checker is done and taken out
 * first thing at the next trap, before any libc call (errno's location
 * included); one that the checker meets anyway (another thread's, in a
 * libc function the checker calls) traps again inside the handler
 * (SA_NODEFER) and is stepped over with the trap flag.
 * Code outside the checked modules runs free as under ptrace (val_run.c,
 * "Stepping over"); the wrappers below (sigaction, pthread_create, exec,
 * _exit) are entered by one step, like any function, and run free.
 *
 * A trap is told by si_code: TRAP_TRACE is a step, SI_KERNEL with one of
 * our int3s a byte back a breakpoint (the PC is moved back onto it), a
 * tgkill from ourselves to a thread we interrupted a stop. Anything else is
 * the program's own SIGTRAP: the run ends with an error (it would have
 * killed the program anyway without a handler of its own).
 *
 * Threads: each thread's TF is its own (in its own context); one lock
 * serializes the checker. pthread_create is wrapped: the new thread tells
 * the checker it exists (a stop in our wrapper, unchecked code: it runs
 * free, its stack a gap below the wrapper's frame, as a ptrace-followed
 * thread's stack is below libc's start_thread) and that it is gone.
 * Threads made by a raw clone system call inherit the TF of the clone's
 * context and are met at their first trap. A process the program forks
 * gets our breakpoints' original bytes back and stops checking
 * (pthread_atfork); a vfork child sharing our memory steps over the
 * breakpoints it meets, unchecked.
 *
 * Signals: the checker would expect to step into handlers, and the kernel
 * enters them with TF clear. A program that installs a handler (sigaction,
 * signal and kin) sends a fallback message and dies: val_inproc.c runs it
 * again under ptrace. Blocking SIGTRAP (sigprocmask, pthread_sigmask)
 * would make the next step kill the program: SIGTRAP is taken out of
 * what the program blocks.
 *
 * Maps: a free thread's system calls are not seen; the dynamic loader's
 * list of modules (_r_debug, read without its lock: a change is what is
 * looked for) and a count of the program's calls to mmap, munmap,
 * mprotect and mremap (wrapped below; calls made inside the handler are
 * the checker's and not counted) are compared at each breakpoint and
 * interrupt stop, and a change is reported as maps_changed. Stepped
 * threads' system calls are seen by the checker itself.
 *
 * Results: a snapshot about once a second (the checker's progress
 * callback), and the last one at exit (an atexit handler registered before
 * the dynamic loader's destructor pass, so run after it; _exit) and before an
 * exec (the new image numbers itself one more).
 *
 * Trusts the checker to call ops only from inside the lock, for threads it
 * was told of; trusts its environment (BACKSTEP_INPROC*, made by
 * val_inproc.c) only when its pid is ours.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <pthread.h>
#include <sched.h>

#include "val.h"

#include "../insn/insn.h"
#include "../target/target.h"
#include "../unwind/unwind.h"

#define EXPORT __attribute__((visibility("default")))
#define TF 0x100ull
#define MAX_THREADS 4096
#define MAX_ONLY 64

/* The next definition of NAME (libc's), found once. */
#define REAL(name) \
	static __typeof__(name) *real_##name; \
	if (!real_##name) \
		*(void **)&real_##name = dlsym(RTLD_NEXT, #name)

/* ---- State ---------------------------------------------------------------- */

struct ip_bp {
	uint64_t addr;           /* 0: an empty slot */
	uint8_t orig;
	bool wanted;             /* inserted and not removed since */
	bool inserted;           /* memory holds int3 */
	uint16_t lifts;          /* threads stepping the original instruction */
	uint16_t steps;          /* threads whose step ends here (planted int3) */
};

/* How a step is made (below, "Stepping"): per PC, decoded once. */
enum step_how {
	STEP_TF = 0,             /* the trap flag */
	STEP_NEXT,               /* an int3 after it */
	STEP_JCC,                /* after it and at TARGET */
	STEP_JMP,                /* at TARGET (jmp, call) */
	STEP_IND,                /* at the address its operand names (jmp, call) */
	STEP_RET,                /* at the address on top of the stack */
};

#define NO_REG 0xff
#define RIP_REG 0xfe

struct ip_step {
	uint64_t pc;             /* 0: an empty slot */
	uint64_t target;
	int64_t disp;
	uint8_t len, how;
	uint8_t base, index, scale; /* STEP_IND: greg numbers, NO_REG, RIP_REG */
	bool mem;                /* STEP_IND: the target is read at the address */
	bool call;               /* JMP, IND: a call (pushes the return address) */
	uint8_t cc;              /* JCC: the condition (below, "cond"), or CC_NONE */
	uint16_t imm;            /* RET: bytes popped after the return address */
	uint8_t rip_disp;        /* NEXT: offset of a RIP-relative disp32, 0 none,
				  * 0xff one that cannot be moved */
};

/* JCC conditions: 0-15 as the opcode's low nibble (jo .. jg), then: */
enum { CC_LOOP = 16, CC_LOOPE, CC_LOOPNE, CC_JRCXZ, CC_NONE = 0xff };

struct ip_thread {
	int tid;
	ucontext_t *uc;          /* in the handler: the context it returns to */
	const struct bk_regs *fake; /* a stop outside the handler (the wrapper) */
	bool stepping;           /* TF was set by us */
	bool then_run;           /* stepping off a breakpoint, then at full speed */
	bool interrupted;        /* an interrupt's tgkill is on its way */
	uint64_t lifted;         /* the breakpoint lifted for its step, or 0 */
	uint64_t step[2];        /* int3s planted for its step (where it may go) */
	unsigned nstep;
	uint64_t want[2];        /* ... planned, written when the checker is done */
	unsigned nwant;
	uint64_t disp_from;      /* running a copy of the instruction there */
	uint8_t disp_len;
	bool emulated;           /* the instruction under an int3 was emulated: it
				  * stands at the next one, to be reported */
};

static struct {
	bool active;
	int pid, fd;
	uint32_t image;
	struct val_opts opts;
	const char *only[MAX_ONLY];
	char only_buf[4096];
	char from[512];
	struct val_driver drv;
	struct val_checker *c;
	struct val_result res;
	struct bk_target *target;
	/* Breakpoints: open addressing by address, never deleted (a removed
	 * one keeps its slot); [lo, hi] bounds the addresses, for reads. */
	struct ip_bp *bps;
	size_t nbps, bps_cap;
	uint64_t bp_lo, bp_hi;
	struct ip_thread threads[MAX_THREADS];
	size_t nthreads;
	uint64_t link_gen;
	bool final_sent;
	bool step_tf;            /* BACKSTEP_INPROC_STEP=tf: every step by the trap flag */
	struct insn_dec *dec;
	struct ip_step *steps;   /* open addressing by PC */
	size_t nsteps, steps_cap;
	uint64_t *rwx;           /* pages made writable (open addressing) */
	size_t nrwx, rwx_cap;
	uint8_t *scratch;        /* per thread record, 32 bytes: displaced copies */
	atomic_flag lock;
	int (*real_sigaction)(int, const struct sigaction *, struct sigaction *);
} g = { .lock = ATOMIC_FLAG_INIT };

/* Calls of the program's to mmap, munmap, mprotect, mremap (below): the
 * map may have changed (code mapped from a file, a JIT). */
static _Atomic uint64_t map_calls;

static __thread struct ip_thread *self_th __attribute__((tls_model("initial-exec")));

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&g.lock, memory_order_acquire))
		sched_yield();
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&g.lock, memory_order_release);
}

/* System calls without libc: the trap handler must not run code where a
 * step may have planted an int3. */
static long raw_syscall0(long nr)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
	return ret;
}

static long raw_syscall3(long nr, long a, long b, long c)
{
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return ret;
}

static long raw_syscall6(long nr, long a, long b, long c, long d, long e, long f)
{
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall" : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
}

static int gettid_raw(void)
{
	return (int)raw_syscall0(SYS_gettid);
}

static struct ip_thread *find_th(int tid)
{
	for (size_t i = 0; i < g.nthreads; i++)
		if (g.threads[i].tid == tid)
			return &g.threads[i];
	return NULL;
}

/* The calling thread's record (made on first use; a slot of a thread that
 * is gone is reused by its tid). */
static struct ip_thread *self(void)
{
	int tid = gettid_raw();
	if (self_th && self_th->tid == tid)
		return self_th;
	struct ip_thread *th = find_th(tid);
	if (!th)
		th = find_th(0); /* the slot of a thread that is gone */
	if (!th && g.nthreads < MAX_THREADS)
		th = &g.threads[g.nthreads++];
	if (th && th->tid != tid)
		*th = (struct ip_thread){ .tid = tid };
	return self_th = th;
}

/* ---- Memory and breakpoints ----------------------------------------------- */

static size_t bp_slot(uint64_t addr, size_t cap)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
}

static struct ip_bp *bp_find(uint64_t addr)
{
	if (!g.bps_cap || addr < g.bp_lo || addr > g.bp_hi)
		return NULL;
	for (size_t h = bp_slot(addr, g.bps_cap);; h = (h + 1) & (g.bps_cap - 1)) {
		if (g.bps[h].addr == addr)
			return &g.bps[h];
		if (!g.bps[h].addr)
			return NULL;
	}
}

static struct ip_bp *bp_get(uint64_t addr)
{
	struct ip_bp *b = bp_find(addr);
	if (b)
		return b;
	if ((g.nbps + 1) * 2 > g.bps_cap) {
		size_t ncap = g.bps_cap ? g.bps_cap * 2 : 4096;
		struct ip_bp *nb = base_calloc(ncap, sizeof(*nb));
		if (!nb)
			return NULL;
		for (size_t i = 0; i < g.bps_cap; i++) {
			if (!g.bps[i].addr)
				continue;
			size_t h = bp_slot(g.bps[i].addr, ncap);
			while (nb[h].addr)
				h = (h + 1) & (ncap - 1);
			nb[h] = g.bps[i];
		}
		base_free(g.bps);
		g.bps = nb;
		g.bps_cap = ncap;
	}
	size_t h = bp_slot(addr, g.bps_cap);
	while (g.bps[h].addr)
		h = (h + 1) & (g.bps_cap - 1);
	g.bps[h] = (struct ip_bp){ .addr = addr };
	g.nbps++;
	if (g.nbps == 1 || addr < g.bp_lo)
		g.bp_lo = addr;
	if (g.nbps == 1 || addr > g.bp_hi)
		g.bp_hi = addr;
	return &g.bps[h];
}

/* Up to LEN bytes at ADDR, without faulting: how many. */
static size_t raw_read(uint64_t addr, void *dst, size_t len)
{
	struct iovec local = { dst, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(g.pid, &local, 1, &remote, 1, 0);
	if (n < 0 && len > 1) {
		/* A partial range fails whole on some kernels: byte by byte up
		 * to the first unreadable page. */
		size_t k = 0;
		while (k < len && raw_read(addr + k, (uint8_t *)dst + k, 1) == 1)
			k++;
		return k;
	}
	return n < 0 ? 0 : (size_t)n;
}

/* What the program's memory holds under our int3s. */
static void overlay(uint64_t addr, void *dst, size_t len)
{
	if (!g.nbps || addr > g.bp_hi || addr + len <= g.bp_lo)
		return;
	for (size_t i = 0; i < len; i++) {
		struct ip_bp *b = bp_find(addr + i);
		if (b && b->inserted)
			((uint8_t *)dst)[i] = b->orig;
	}
}

/* Make the page at PAGE writable (and keep it executable), once: the set
 * of such pages spares two mprotect calls per int3 written, which a step
 * by breakpoints writes and takes out again. */
static bool writable(uint64_t page)
{
	if ((g.nrwx + 1) * 2 > g.rwx_cap) {
		size_t ncap = g.rwx_cap ? g.rwx_cap * 2 : 1024;
		uint64_t *n = base_calloc(ncap, sizeof(*n));
		if (!n)
			return false;
		for (size_t i = 0; i < g.rwx_cap; i++) {
			if (!g.rwx[i])
				continue;
			size_t h = bp_slot(g.rwx[i], ncap);
			while (n[h])
				h = (h + 1) & (ncap - 1);
			n[h] = g.rwx[i];
		}
		base_free(g.rwx);
		g.rwx = n;
		g.rwx_cap = ncap;
	}
	size_t h = bp_slot(page, g.rwx_cap);
	for (; g.rwx[h]; h = (h + 1) & (g.rwx_cap - 1))
		if (g.rwx[h] == page)
			return true;
	/* Not through mprotect(): that is the program's, counted (below). */
	if (raw_syscall3(SYS_mprotect, (long)page, 4096, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return false;
	g.rwx[h] = page;
	g.nrwx++;
	return true;
}

static int poke(uint64_t addr, uint8_t byte)
{
	if (!writable(addr & ~(uint64_t)4095))
		return BK_E_MEMORY;
	*(volatile uint8_t *)(uintptr_t)addr = byte;
	return 0;
}

/* Write an int3 at ADDR, its original byte into *ORIG: read directly once
 * the page is known mapped and writable (writable(), as poke relies on),
 * not through a system call: a step plants one or two int3s. */
static int plant_int3(uint64_t addr, uint8_t *orig)
{
	if (!writable(addr & ~(uint64_t)4095))
		return BK_E_MEMORY;
	*orig = *(volatile uint8_t *)(uintptr_t)addr;
	*(volatile uint8_t *)(uintptr_t)addr = 0xcc;
	return 0;
}

/* Put B's int3 back after a lift, if it is still wanted. */
static void end_lift(struct ip_thread *th)
{
	if (!th->lifted)
		return;
	struct ip_bp *b = bp_find(th->lifted);
	th->lifted = 0;
	if (!b || !b->lifts)
		return;
	if (--b->lifts == 0 && b->wanted && !b->inserted && poke(b->addr, 0xcc) == 0)
		b->inserted = true;
}

/* Every int3 out (a forked child, the end of checking). */
static void restore_all(void)
{
	for (size_t i = 0; i < g.bps_cap; i++)
		if (g.bps[i].addr && g.bps[i].inserted) {
			poke(g.bps[i].addr, g.bps[i].orig);
			g.bps[i].inserted = false;
		}
}

/* ---- Stepping ------------------------------------------------------------
 *
 * A step by the trap flag costs a debug exception, which on a virtual
 * machine can cost ten times an int3 (bench/README.md "backstep validate
 * speed": 72 000 against 910 000 traps a second on the project's VM). So a
 * step is made by breakpoints where it can: an int3 where the instruction
 * may go next (after it; a conditional branch's target too; a jump's or
 * call's target, read from its operand and the registers for an indirect
 * one; a return's address on the stack), taken out again when the thread
 * traps on one of them. The trap flag remains for what cannot be told
 * ahead: string instructions with a rep prefix (the trap flag stops after
 * each iteration, as ptrace does, so the counts stay the ptrace driver's),
 * interrupts, unknown instructions, memory operands with a segment, a
 * destination where another thread has lifted a breakpoint, and code we
 * cannot write. BACKSTEP_INPROC_STEP=tf makes every step one by the trap
 * flag (the mechanism's own rate, for the bench).
 *
 * Another thread that reaches an int3 planted for a step not its own (it
 * runs free through the same code) goes back onto it and traps again until
 * the stepping thread has taken it out.
 */

static struct ip_step *step_slot(uint64_t pc)
{
	if ((g.nsteps + 1) * 2 > g.steps_cap) {
		size_t ncap = g.steps_cap ? g.steps_cap * 2 : 1u << 14;
		struct ip_step *n = base_calloc(ncap, sizeof(*n));
		if (!n)
			return NULL;
		for (size_t i = 0; i < g.steps_cap; i++) {
			if (!g.steps[i].pc)
				continue;
			size_t h = bp_slot(g.steps[i].pc, ncap);
			while (n[h].pc)
				h = (h + 1) & (ncap - 1);
			n[h] = g.steps[i];
		}
		base_free(g.steps);
		g.steps = n;
		g.steps_cap = ncap;
	}
	size_t h = bp_slot(pc, g.steps_cap);
	for (; g.steps[h].pc; h = (h + 1) & (g.steps_cap - 1))
		if (g.steps[h].pc == pc)
			return &g.steps[h];
	g.steps[h].pc = pc;
	g.nsteps++;
	return &g.steps[h];
}

static uint8_t greg_of(unsigned reg)
{
	switch (reg) {
	case X86_REG_RAX: return REG_RAX;
	case X86_REG_RBX: return REG_RBX;
	case X86_REG_RCX: return REG_RCX;
	case X86_REG_RDX: return REG_RDX;
	case X86_REG_RSI: return REG_RSI;
	case X86_REG_RDI: return REG_RDI;
	case X86_REG_RBP: return REG_RBP;
	case X86_REG_RSP: return REG_RSP;
	case X86_REG_R8: return REG_R8;
	case X86_REG_R9: return REG_R9;
	case X86_REG_R10: return REG_R10;
	case X86_REG_R11: return REG_R11;
	case X86_REG_R12: return REG_R12;
	case X86_REG_R13: return REG_R13;
	case X86_REG_R14: return REG_R14;
	case X86_REG_R15: return REG_R15;
	case X86_REG_RIP: return RIP_REG;
	case X86_REG_INVALID: return NO_REG;
	default: return NO_REG - 1; /* anything else: cannot be computed here */
	}
}

/* A string instruction with a rep prefix: the bytes after the legacy
 * prefixes and REX. */
static bool rep_string(const uint8_t *b, size_t n)
{
	bool rep = false;
	size_t i = 0;
	for (; i < n; i++) {
		uint8_t c = b[i];
		if (c == 0xf2 || c == 0xf3)
			rep = true;
		else if (!(c == 0xf0 || c == 0x2e || c == 0x36 || c == 0x3e || c == 0x26 || c == 0x64 ||
			   c == 0x65 || c == 0x66 || c == 0x67))
			break;
	}
	if (i < n && (b[i] & 0xf0) == 0x40)
		i++;
	if (!rep || i >= n)
		return false;
	uint8_t op = b[i];
	return (op >= 0xa4 && op <= 0xa7) || (op >= 0xaa && op <= 0xaf) || (op >= 0x6c && op <= 0x6f);
}

/* The condition of the conditional branch in B (N bytes): the opcode's
 * low nibble for jcc, CC_LOOP.. for loop and jrcxz, CC_NONE for what is
 * not emulated (an address-size prefix: ecx instead of rcx). */
static uint8_t jcc_condition(const uint8_t *b, size_t n)
{
	size_t i = 0;
	for (; i < n; i++) {
		if (b[i] == 0x67)
			return CC_NONE;
		if (!(b[i] == 0x2e || b[i] == 0x3e || b[i] == 0xf2 || b[i] == 0xf3 || b[i] == 0x66 ||
		      (b[i] & 0xf0) == 0x40))
			break;
	}
	if (i >= n)
		return CC_NONE;
	if (b[i] >= 0x70 && b[i] <= 0x7f)
		return b[i] & 15;
	if (b[i] == 0x0f && i + 1 < n && b[i + 1] >= 0x80 && b[i + 1] <= 0x8f)
		return b[i + 1] & 15;
	switch (b[i]) {
	case 0xe2: return CC_LOOP;
	case 0xe1: return CC_LOOPE;
	case 0xe0: return CC_LOOPNE;
	case 0xe3: return CC_JRCXZ;
	}
	return CC_NONE;
}

/* Is condition CC true in GR (rcx updated for loop)? */
static bool cond(uint8_t cc, greg_t *gr)
{
	uint64_t f = (uint64_t)gr[REG_EFL];
	bool cf = f & 1, pf = f & 4, zf = f & 0x40, sf = f & 0x80, of = f & 0x800;
	bool r;
	switch (cc & ~1) {
	case 0: r = of; break;
	case 2: r = cf; break;
	case 4: r = zf; break;
	case 6: r = cf || zf; break;
	case 8: r = sf; break;
	case 10: r = pf; break;
	case 12: r = sf != of; break;
	case 14: r = zf || sf != of; break;
	default: r = false; break;
	}
	if (cc < 16)
		return (cc & 1) ? !r : r;
	if (cc == CC_JRCXZ)
		return gr[REG_RCX] == 0;
	gr[REG_RCX]--;
	return gr[REG_RCX] != 0 && (cc == CC_LOOP || (cc == CC_LOOPE ? zf : !zf));
}

static void decode_step(struct ip_step *s)
{
	uint8_t bytes[16];
	size_t n = raw_read(s->pc, bytes, sizeof(bytes));
	overlay(s->pc, bytes, n);
	s->how = STEP_TF;
	const cs_insn *i = g.dec && n ? insn_decode(g.dec, bytes, n, s->pc) : NULL;
	if (!i || !i->detail || rep_string(bytes, n))
		return;
	s->len = (uint8_t)i->size;
	const cs_x86 *x = &i->detail->x86;
	s->cc = CC_NONE;
	if (i->id == X86_INS_RET && insn_in_group(g.dec, i, CS_GRP_RET)) {
		s->how = STEP_RET;
		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM)
			s->imm = (uint16_t)x->operands[0].imm;
		return;
	}
	/* loop and kin are not in Capstone 4's jump group; anything relative
	 * is a branch. */
	bool jump = insn_in_group(g.dec, i, CS_GRP_JUMP) ||
		    insn_in_group(g.dec, i, CS_GRP_BRANCH_RELATIVE) || i->id == X86_INS_LOOP ||
		    i->id == X86_INS_LOOPE || i->id == X86_INS_LOOPNE || i->id == X86_INS_JRCXZ ||
		    i->id == X86_INS_JECXZ || i->id == X86_INS_JCXZ;
	bool call = i->id == X86_INS_CALL && insn_in_group(g.dec, i, CS_GRP_CALL);
	if (jump || call) {
		bool uncond = call || i->id == X86_INS_JMP;
		if (x->op_count != 1 || i->id == X86_INS_XBEGIN)
			return;
		const cs_x86_op *op = &x->operands[0];
		s->call = call;
		if (op->type == X86_OP_IMM) {
			s->target = (uint64_t)op->imm;
			s->how = uncond ? STEP_JMP : STEP_JCC;
			s->cc = jcc_condition(bytes, n);
		} else if (uncond && op->type == X86_OP_REG) {
			s->base = greg_of(op->reg);
			s->index = NO_REG;
			s->mem = false;
			if (s->base < RIP_REG - 1)
				s->how = STEP_IND;
		} else if (uncond && op->type == X86_OP_MEM && op->mem.segment == X86_REG_INVALID) {
			s->base = greg_of(op->mem.base);
			s->index = greg_of(op->mem.index);
			s->scale = (uint8_t)op->mem.scale;
			s->disp = op->mem.disp;
			s->mem = true;
			if ((s->base < RIP_REG - 1 || s->base >= RIP_REG) &&
			    (s->index < RIP_REG - 1 || s->index == NO_REG))
				s->how = STEP_IND;
		}
		return;
	}
	for (unsigned k = 0; k < x->op_count; k++)
		if (x->operands[k].type == X86_OP_MEM && x->operands[k].mem.base == X86_REG_RIP)
			s->rip_disp = x->encoding.disp_size == 4 && x->encoding.disp_offset ?
					      x->encoding.disp_offset : 0xff;
	if (i->id == X86_INS_SYSCALL) {
		s->how = STEP_NEXT;
		return;
	}
	if (insn_in_group(g.dec, i, CS_GRP_INT) || insn_in_group(g.dec, i, CS_GRP_IRET) ||
	    insn_in_group(g.dec, i, CS_GRP_RET) || insn_in_group(g.dec, i, CS_GRP_CALL) ||
	    i->id == X86_INS_UD2 || i->id == X86_INS_HLT || i->id == X86_INS_XABORT ||
	    i->id == X86_INS_XEND)
		return;
	s->how = STEP_NEXT;
}

/* Where the instruction S may go from the registers GR: 0 when only the
 * trap flag can tell. */
static unsigned successors(const struct ip_step *s, const greg_t *gr, uint64_t out[2])
{
	uint64_t next = s->pc + s->len;
	switch (s->how) {
	case STEP_NEXT:
		out[0] = next;
		return 1;
	case STEP_JCC:
		out[0] = next;
		out[1] = s->target;
		return next == s->target ? 1 : 2;
	case STEP_JMP:
		out[0] = s->target;
		return 1;
	case STEP_RET:
		return raw_read((uint64_t)gr[REG_RSP], &out[0], 8) == 8;
	case STEP_IND: {
		uint64_t a = s->base == RIP_REG ? next : s->base == NO_REG ? 0 : (uint64_t)gr[s->base];
		if (!s->mem) {
			out[0] = a;
			return 1;
		}
		if (s->index != NO_REG)
			a += (uint64_t)gr[s->index] * s->scale;
		a += (uint64_t)s->disp;
		return raw_read(a, &out[0], 8) == 8;
	}
	}
	return 0;
}

static void unplant(struct ip_thread *th)
{
	for (unsigned k = 0; k < th->nstep; k++) {
		struct ip_bp *b = bp_find(th->step[k]);
		if (!b || !b->steps)
			continue;
		if (--b->steps == 0 && !b->wanted && b->inserted && poke(b->addr, b->orig) == 0)
			b->inserted = false;
	}
	th->nstep = 0;
}

/* Where TH's step from PC (registers GR) is to stop, into TH->want: false
 * when it must be a step by the trap flag. The int3s are written by
 * commit(), when the checker is done: its own calls (libc's memcpy, ...)
 * must not meet them. */
static bool plan(struct ip_thread *th, uint64_t pc, const greg_t *gr)
{
	th->nwant = 0;
	if (g.step_tf)
		return false;
	struct ip_step *s = step_slot(pc);
	if (!s)
		return false;
	if (!s->len && s->how == STEP_TF)
		decode_step(s);
	uint64_t to[2];
	unsigned n = successors(s, gr, to);
	for (unsigned k = 0; k < n; k++) {
		struct ip_bp *b = bp_find(to[k]);
		if (to[k] == pc || !to[k] || (b && b->lifts))
			return false;
	}
	for (unsigned k = 0; k < n; k++)
		th->want[k] = to[k];
	th->nwant = n;
	return n > 0;
}

/* Write the int3s TH's step planned; false (none written) when one cannot
 * be: the step is then one by the trap flag. */
static bool commit(struct ip_thread *th)
{
	unsigned n = th->nwant;
	th->nwant = 0;
	th->nstep = 0;
	for (unsigned k = 0; k < n; k++) {
		struct ip_bp *b = bp_get(th->want[k]);
		if (!b || (b->lifts && !b->inserted)) {
			unplant(th);
			return false;
		}
		if (!b->inserted) {
			uint8_t orig;
			if (plant_int3(th->want[k], &orig) != 0) {
				unplant(th);
				return false;
			}
			b->orig = orig;
			b->inserted = true;
		}
		b->steps++;
		th->step[th->nstep++] = th->want[k];
	}
	return n > 0;
}

/* Is ADDR one of TH's planted int3s? */
static bool planted(const struct ip_thread *th, uint64_t addr)
{
	for (unsigned k = 0; k < th->nstep; k++)
		if (th->step[k] == addr)
			return true;
	return false;
}

/* ---- Driver ops --------------------------------------------------------- */

static int ip_start(char *const *argv, const struct val_driver_opts *opts,
		    struct val_driver **out, char *why, size_t whylen)
{
	(void)argv;
	(void)opts;
	(void)out;
	snprintf(why, whylen, "the in-process driver is started by its preload library");
	return BK_E_UNSUPPORTED;
}

static void ip_close(struct val_driver *d)
{
	(void)d;
}

static int ip_wait(struct val_driver *d, struct val_event *ev)
{
	(void)d;
	(void)ev;
	return 0; /* the events are pushed */
}

/* ---- Off a breakpoint ------------------------------------------------------
 *
 * A thread standing on an int3 (an entry breakpoint, a return breakpoint,
 * another thread's step) must run the instruction under it. Lifting the
 * int3 for that one instruction would let every other thread pass there
 * unseen meanwhile, stepped ones included. So the instruction is run where
 * the int3 can stay: a control transfer is emulated (its destination is
 * what a step by breakpoints computes; a call pushes its return address, a
 * conditional branch reads the flags or rcx), any other instruction runs
 * as a copy in the thread's slot of a scratch page (a RIP-relative
 * displacement moved with it) followed by an int3 that brings it back
 * after the original. What neither can do (string instructions, the trap
 * flag's cases, a displacement the scratch page is too far for) lifts the
 * int3 as the ptrace driver does. */

static uint8_t *scratch_of(struct ip_thread *th)
{
	if (!g.scratch) {
		/* Near the executable, for RIP-relative displacements. */
		uint64_t hint = (getauxval(AT_ENTRY) & ~(uint64_t)0xfffff) - (256u << 20);
		void *p = (void *)raw_syscall6(SYS_mmap, (long)hint, MAX_THREADS * 32,
					       PROT_READ | PROT_WRITE | PROT_EXEC,
					       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if ((unsigned long)p > -4096ul)
			p = MAP_FAILED;
		if (p == MAP_FAILED)
			return NULL;
		g.scratch = p;
	}
	return g.scratch + (size_t)(th - g.threads) * 32;
}

/* Run S (at the thread's PC) as a copy; false when it cannot be. */
static bool displace(struct ip_thread *th, const struct ip_step *s, greg_t *gr)
{
	uint8_t *slot = scratch_of(th);
	if (!slot || s->rip_disp == 0xff || s->len > 15)
		return false;
	uint8_t bytes[16];
	if (raw_read(s->pc, bytes, s->len) != s->len)
		return false;
	overlay(s->pc, bytes, s->len);
	if (s->rip_disp) {
		int32_t d;
		memcpy(&d, bytes + s->rip_disp, 4);
		int64_t nd = (int64_t)d + (int64_t)(s->pc - (uint64_t)(uintptr_t)slot);
		if (nd != (int32_t)nd)
			return false;
		d = (int32_t)nd;
		memcpy(bytes + s->rip_disp, &d, 4);
	}
	memcpy(slot, bytes, s->len);
	slot[s->len] = 0xcc;
	gr[REG_RIP] = (greg_t)(uintptr_t)slot;
	th->disp_from = s->pc;
	th->disp_len = s->len;
	return true;
}

/* Do what the control transfer S does to GR; false when it cannot be. */
static bool emulate(struct ip_thread *th, const struct ip_step *s, greg_t *gr)
{
	uint64_t next = s->pc + s->len, to[2];
	switch (s->how) {
	case STEP_JMP:
	case STEP_IND:
		if (successors(s, gr, to) != 1)
			return false;
		if (s->call) {
			uint64_t sp = (uint64_t)gr[REG_RSP] - 8;
			*(volatile uint64_t *)(uintptr_t)sp = next;
			gr[REG_RSP] = (greg_t)sp;
		}
		gr[REG_RIP] = (greg_t)to[0];
		break;
	case STEP_RET:
		if (successors(s, gr, to) != 1)
			return false;
		gr[REG_RSP] += 8 + s->imm;
		gr[REG_RIP] = (greg_t)to[0];
		break;
	case STEP_JCC:
		if (s->cc == CC_NONE)
			return false;
		gr[REG_RIP] = (greg_t)(cond(s->cc, gr) ? s->target : next);
		break;
	default:
		return false;
	}
	th->emulated = true;
	return true;
}

static bool run_under(struct ip_thread *th, uint64_t pc, greg_t *gr)
{
	if (g.step_tf)
		return false;
	struct ip_step *s = step_slot(pc);
	if (!s)
		return false;
	if (!s->len && s->how == STEP_TF)
		decode_step(s);
	if (s->how == STEP_NEXT)
		return displace(th, s, gr);
	return s->how != STEP_TF && emulate(th, s, gr);
}

/* Step TH (in the handler) off its PC, or run it: an int3 under the PC is
 * run under (above), else lifted for the step. */
static void step_off(struct ip_thread *th, enum val_resume how)
{
	greg_t *gr = th->uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)gr[REG_RIP];
	struct ip_bp *b = bp_find(pc);
	bool on_bp = b && b->inserted;
	if (how != VAL_RESUME_STEP && !on_bp) {
		gr[REG_EFL] &= ~(greg_t)TF;
		th->stepping = false;
		th->nwant = 0;
		return;
	}
	th->stepping = true;
	th->then_run = how != VAL_RESUME_STEP;
	if (on_bp && run_under(th, pc, gr)) {
		gr[REG_EFL] &= ~(greg_t)TF;
		return; /* the copy's int3, or an emulated stop, comes next */
	}
	if (on_bp && poke(b->addr, b->orig) == 0) {
		b->inserted = false;
		b->lifts++;
		th->lifted = b->addr;
	}
	if (plan(th, pc, gr))
		gr[REG_EFL] &= ~(greg_t)TF;
	else
		gr[REG_EFL] |= (greg_t)TF;
}

static int ip_resume(struct val_driver *d, int tid, enum val_resume how, int sig)
{
	(void)d;
	(void)sig; /* no signal is ever reported: nothing to pass on */
	struct ip_thread *th = find_th(tid);
	if (!th)
		return BK_E_NOT_FOUND;
	if (!th->uc)
		return 0; /* a stop outside the handler: it goes on at full speed */
	unplant(th);
	th->emulated = false;
	step_off(th, how);
	return 0;
}

static int ip_interrupt(struct val_driver *d, int tid)
{
	(void)d;
	struct ip_thread *th = find_th(tid);
	if (!th || syscall(SYS_tgkill, g.pid, tid, SIGTRAP) != 0)
		return BK_E_NOT_FOUND;
	th->interrupted = true;
	return 0;
}

static void ip_kill(struct val_driver *d)
{
	(void)d;
	kill(g.pid, SIGKILL);
}

static void regs_of(const ucontext_t *uc, struct bk_regs *out)
{
	static const uint8_t greg_of_dwarf[17] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
	};
	const greg_t *gr = uc->uc_mcontext.gregs;
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < 17; i++)
		bk_regs_set(out, i, (uint64_t)gr[greg_of_dwarf[i]]);
	bk_regs_set(out, 49, (uint64_t)gr[REG_EFL] & ~TF);
}

static int ip_regs(struct val_driver *d, int tid, struct bk_regs *out)
{
	(void)d;
	struct ip_thread *th = find_th(tid);
	if (th && th->uc) {
		regs_of(th->uc, out);
		return 0;
	}
	if (th && th->fake) {
		*out = *th->fake;
		return 0;
	}
	return BK_E_NOT_FOUND;
}

static size_t ip_read(struct val_driver *d, uint64_t addr, void *dst, size_t len)
{
	(void)d;
	size_t n = raw_read(addr, dst, len);
	overlay(addr, dst, n);
	return n;
}

static int ip_insert_bp(struct val_driver *d, uint64_t addr)
{
	(void)d;
	struct ip_bp *b = bp_get(addr);
	if (!b)
		return BK_E_NOMEM;
	if (b->wanted)
		return 0;
	if (!b->lifts && !b->inserted) {
		uint8_t orig;
		if (raw_read(addr, &orig, 1) != 1 || poke(addr, 0xcc) != 0)
			return BK_E_MEMORY;
		b->orig = orig;
		b->inserted = true;
	}
	b->wanted = true;
	return 0;
}

static void ip_remove_bp(struct val_driver *d, uint64_t addr, bool restore)
{
	(void)d;
	struct ip_bp *b = bp_find(addr);
	if (!b)
		return;
	b->wanted = false;
	if (!restore)
		b->inserted = false; /* the code under it is gone */
	else if (b->inserted && !b->steps && poke(addr, b->orig) == 0)
		b->inserted = false;
}

static bool ip_catches(struct val_driver *d, int sig)
{
	(void)d;
	(void)sig;
	return false;
}

/* The space's reads: the walked thread is the one in the handler, so its
 * stack is read directly (src/target/local.c: bounds known per thread,
 * noted at each trap), anything else without faulting; breakpoints
 * hidden. */
static int space_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	int err = tgt_local_read(NULL, addr, dst, len);
	if (!err)
		overlay(addr, dst, len);
	return err;
}

static int ip_space_open(struct val_driver *d, int tid, struct bk_space **out)
{
	(void)d;
	if (g.target)
		bk_target_close(g.target);
	g.target = NULL;
	int err = uw_target_adopt(g.pid, &tid, 1, &g.target);
	if (err)
		return err;
	struct bk_space *s = bk_target_space(g.target);
	s->ops.read_mem = space_read; /* the modules are the target's, the reads ours */
	*out = s;
	return 0;
}

static int ip_space_refresh(struct val_driver *d, size_t *added)
{
	(void)d;
	return uw_target_refresh(g.target, added);
}

static void ip_space_invalidate(struct val_driver *d)
{
	(void)d; /* nothing kept: every read is of the memory as it is now */
}

static const struct val_driver_ops ip_ops = {
	.size = sizeof(struct val_driver_ops),
	.start = ip_start,
	.close = ip_close,
	.wait = ip_wait,
	.resume = ip_resume,
	.interrupt = ip_interrupt,
	.kill = ip_kill,
	.regs = ip_regs,
	.read = ip_read,
	.insert_bp = ip_insert_bp,
	.remove_bp = ip_remove_bp,
	.catches = ip_catches,
	.space_open = ip_space_open,
	.space_refresh = ip_space_refresh,
	.space_invalidate = ip_space_invalidate,
};

/* ---- Results ------------------------------------------------------------ */

/* The modules the dynamic loader has: a change means new code. */
static uint64_t link_gen(void)
{
	uint64_t h = 0;
	unsigned n = 0;
	for (struct link_map *l = _r_debug.r_map; l && n < 4096; l = l->l_next, n++)
		h = h * 0x100000001b3ull + (uint64_t)l->l_addr + 1;
	return h ^ n;
}

static void send_snapshot(bool final)
{
	if (g.final_sent)
		return;
	val_checker_sync(g.c);
	val_inproc_send_result(g.fd, &g.res, g.image, final);
	g.final_sent = final;
}

static void on_progress(void *ctx, const struct val_stats *st)
{
	(void)ctx;
	(void)st;
	send_snapshot(false);
}

/* The end of checking in this image: the last snapshot, our int3s out. */
static void finish(void)
{
	if (!g.active)
		return;
	lock();
	send_snapshot(true);
	restore_all();
	g.active = false;
	unlock();
}

/* Ask to be run under ptrace, and die (a program with a handler). */
__attribute__((noreturn)) static void fall_back(const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	lock();
	val_inproc_send_text(g.fd, 'F', why);
	for (;;)
		kill(g.pid, SIGKILL);
}

/* ---- The trap ----------------------------------------------------------- */

/* A trap in a process that is not checked (a vfork child, or after the
 * end): step over our int3s, let the rest run. */
static void foreign_trap(siginfo_t *si, ucontext_t *uc)
{
	greg_t *gr = uc->uc_mcontext.gregs;
	struct ip_bp *b = si->si_code == SI_KERNEL ? bp_find((uint64_t)gr[REG_RIP] - 1) : NULL;
	if (b) {
		gr[REG_RIP]--;
		if (b->inserted)
			*(volatile uint8_t *)(uintptr_t)b->addr = b->orig; /* best effort */
		return;
	}
	gr[REG_EFL] &= ~(greg_t)TF;
}

/* A trap inside our own handler (SA_NODEFER): the checker, or libc on its
 * behalf, met an int3 planted for another thread's step. The original
 * instruction runs with the int3 lifted for one step by the trap flag
 * (another thread passing there meanwhile would pass unseen). */
static __thread uint64_t nested_lift __attribute__((tls_model("initial-exec")));
static __thread bool in_trap __attribute__((tls_model("initial-exec")));

static void nested_trap(siginfo_t *si, ucontext_t *uc)
{
	greg_t *gr = uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)gr[REG_RIP];
	struct ip_bp *b;
	if (si->si_code == TRAP_TRACE && nested_lift) {
		b = bp_find(nested_lift);
		if (b && (b->wanted || b->steps) && !b->lifts && !b->inserted && poke(b->addr, 0xcc) == 0)
			b->inserted = true;
		nested_lift = 0;
		gr[REG_EFL] &= ~(greg_t)TF;
	} else if (si->si_code == SI_KERNEL && (b = bp_find(pc - 1)) != NULL && b->inserted) {
		gr[REG_RIP] = (greg_t)(pc - 1);
		if (poke(b->addr, b->orig) == 0)
			b->inserted = false;
		nested_lift = b->addr;
		gr[REG_EFL] |= (greg_t)TF;
	}
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	ucontext_t *uc = ucv;
	if (in_trap) {
		nested_trap(si, uc);
		return;
	}
	/* No libc call until this thread's own int3s are out (below): the
	 * step may have planted one at the entry of any libc function, errno's
	 * included. */
	if (!g.active || (int)raw_syscall0(SYS_getpid) != g.pid) {
		foreign_trap(si, uc);
		return;
	}
	in_trap = true;
	lock();
	if (!g.active) {
		in_trap = false;
		unlock();
		foreign_trap(si, uc);
		return;
	}
	struct ip_thread *th = self();
	if (!th) {
		/* More live threads than records: this one is not checked. */
		in_trap = false;
		unlock();
		foreign_trap(si, uc);
		return;
	}
	greg_t *gr = uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)gr[REG_RIP];
	end_lift(th);
	struct val_event ev = { .tid = th->tid };
	struct ip_bp *b;
	int *errp = NULL, saved = 0;
	if (th->disp_from && si->si_code == SI_KERNEL &&
	    pc - 1 == (uint64_t)(uintptr_t)scratch_of(th) + th->disp_len) {
		/* The copy ran (above, "Off a breakpoint"): as if the original had. */
		gr[REG_RIP] = (greg_t)(th->disp_from + th->disp_len);
		pc = th->disp_from + th->disp_len;
		th->disp_from = 0;
		if (th->then_run) {
			th->then_run = th->stepping = false;
			goto out;
		}
		ev.kind = VAL_EV_STEPPED;
		goto event;
	}
	th->disp_from = 0;
	if (si->si_code == TRAP_TRACE && th->stepping) {
		if (th->then_run) {
			th->then_run = th->stepping = false;
			gr[REG_EFL] &= ~(greg_t)TF;
			goto out;
		}
		ev.kind = VAL_EV_STEPPED;
	} else if (si->si_code == SI_KERNEL && (b = bp_find(pc - 1)) != NULL) {
		gr[REG_RIP] = (greg_t)(pc - 1);
		if (planted(th, pc - 1)) {
			unplant(th);
			if (th->then_run) {
				th->then_run = th->stepping = false;
				goto out;
			}
			ev.kind = VAL_EV_STEPPED;
		} else if (!b->wanted) {
			goto out; /* another thread's step, or taken out meanwhile */
		} else {
			ev.kind = VAL_EV_BREAKPOINT;
			ev.addr = pc - 1;
		}
	} else if (si->si_code == SI_TKILL && si->si_pid == g.pid && th->interrupted) {
		th->interrupted = false;
		ev.kind = VAL_EV_STOPPED;
	} else if (si->si_code == TRAP_TRACE) {
		gr[REG_EFL] &= ~(greg_t)TF; /* inherited through a clone */
		goto out;
	} else {
		if (!g.res.error)
			g.res.error = base_strdup("the program raised SIGTRAP itself: the in-process "
						  "driver cannot tell it from its own (--driver ptrace)");
		in_trap = false;
		unlock();
		finish();
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		g.real_sigaction(SIGTRAP, &dfl, NULL);
		raise(SIGTRAP);
		return;
	}
event:
	errp = &errno;
	saved = *errp;
	if (ev.kind != VAL_EV_STEPPED) {
		uint64_t gen = link_gen() + atomic_load_explicit(&map_calls, memory_order_relaxed);
		ev.maps_changed = gen != g.link_gen;
		g.link_gen = gen;
		if (ev.maps_changed && g.rwx) {
			/* Pages may have gone (dlclose) and come back read-only. */
			memset(g.rwx, 0, g.rwx_cap * sizeof(*g.rwx));
			g.nrwx = 0;
		}
	}
	th->uc = uc;
	th->stepping = false;
	tgt_local_note_stack((uint64_t)gr[REG_RSP]);
	val_checker_event(g.c, &ev);
	/* An instruction emulated off a breakpoint: the thread stands at the
	 * next one, which is the step's stop. */
	while (th->emulated) {
		th->emulated = false;
		if (th->then_run) {
			th->then_run = th->stepping = false;
			break;
		}
		th->stepping = false;
		ev = (struct val_event){ .kind = VAL_EV_STEPPED, .tid = th->tid };
		val_checker_event(g.c, &ev);
	}
	th->uc = NULL;
	if (th->nwant && !commit(th))
		gr[REG_EFL] |= (greg_t)TF;
out:
	in_trap = false;
	unlock();
	if (errp)
		*errp = saved;
}

/* ---- Start and end ------------------------------------------------------ */

static bool parse_env(void)
{
	const char *spec = getenv("BACKSTEP_INPROC");
	int pid, fd;
	unsigned image, flags, max_frames;
	if (!spec || sscanf(spec, "%d,%d,%u,%u,%u", &pid, &fd, &image, &flags, &max_frames) != 5 ||
	    (pid != (int)syscall(SYS_getpid) && pid != 0))
		return false;
	if (pid == 0) /* by hand, for debugging: any process */
		pid = (int)syscall(SYS_getpid);
	g.pid = pid;
	g.fd = fd;
	g.image = image;
	g.opts = (struct val_opts){
		.size = sizeof(g.opts),
		.fp_only = flags & 1,
		.fast_walk = flags & 2,
		.max_frames = max_frames,
		.progress = on_progress,
		.only = g.only,
	};
	const char *from = getenv("BACKSTEP_INPROC_FROM");
	if (from && from[0]) {
		snprintf(g.from, sizeof(g.from), "%s", from);
		g.opts.from = g.from;
	}
	const char *only = getenv("BACKSTEP_INPROC_ONLY");
	snprintf(g.only_buf, sizeof(g.only_buf), "%s", only ? only : "");
	char *save = NULL;
	for (char *tok = strtok_r(g.only_buf, ",", &save); tok && g.opts.nonly < MAX_ONLY;
	     tok = strtok_r(NULL, ",", &save))
		g.only[g.opts.nonly++] = tok;
	return true;
}

static void on_fork_child(void)
{
	if (!g.active)
		return;
	g.active = false;
	restore_all();
	close(g.fd);
	unlock(); /* a copy of the parent's, maybe held by another thread */
}

/* The end of the program: after the destructors (_dl_fini is registered
 * with atexit after the constructors ran, so it runs before this). */
static void at_exit(void *arg)
{
	(void)arg;
	finish();
}

/* Registered without our DSO handle: atexit() would tie it to this
 * library, whose destructor would run it, before the other libraries'. */
extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);

__attribute__((constructor)) static void ip_init(void)
{
	g.real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(
		RTLD_NEXT, "sigaction");
	if (!g.real_sigaction || !parse_env())
		return;
	fcntl(g.fd, F_SETFD, FD_CLOEXEC); /* our exec wrappers keep it for our own image */
	struct sigaction sa = { .sa_sigaction = on_trap,
				.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER };
	sigemptyset(&sa.sa_mask);
	if (g.real_sigaction(SIGTRAP, &sa, NULL) != 0)
		return;
	sigset_t trap;
	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	pthread_sigmask(SIG_UNBLOCK, &trap, NULL);
	pthread_atfork(NULL, NULL, on_fork_child);
	g.drv.ops = &ip_ops;
	g.drv.arch = BK_ARCH_X86_64;
	const char *how = getenv("BACKSTEP_INPROC_STEP");
	g.step_tf = how && !strcmp(how, "tf");
	if (!g.step_tf && insn_open(BK_ARCH_X86_64, &g.dec) != 0)
		g.step_tf = true;
	if (val_checker_open(&g.opts, &ip_ops, &g.drv, &g.res, &g.c) != 0) {
		val_inproc_send_result(g.fd, &g.res, g.image, true);
		return;
	}
	g.res.driver = "inproc";
	__cxa_atexit(at_exit, NULL, NULL);
	g.link_gen = link_gen() + atomic_load_explicit(&map_calls, memory_order_relaxed);
	g.active = true;
	lock();
	struct ip_thread *th = self();
	struct val_event ev = {
		.kind = VAL_EV_EXEC,
		.tid = th->tid,
		.entry = getauxval(AT_ENTRY),
		.exe = "/proc/self/exe",
	};
	val_checker_event(g.c, &ev);
	unlock();
}

/* ---- What the program calls --------------------------------------------- */

EXPORT void _exit(int status)
{
	REAL(_exit);
	finish();
	real__exit(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}

/* A handler of the program's own for SIG: run it under ptrace. Handlers of
 * the faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE: language runtimes install
 * them to report a stack overflow) are let be: they run only when the
 * program crashes, and then unstepped (the run's status says it). */
static void handler_check(int sig, void (*h)(int))
{
	bool fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE;
	if (g.active && h != SIG_DFL && h != SIG_IGN && sig > 0 && sig < NSIG && !fault)
		fall_back("%s installs a handler for signal %d (%s), which the in-process driver does "
			  "not step into", sig == SIGTRAP ? "the program (SIGTRAP)" : "the program",
			  sig, strsignal(sig));
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!g.real_sigaction)
		g.real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(
			RTLD_NEXT, "sigaction");
	if (act)
		handler_check(sig, (act->sa_flags & SA_SIGINFO) && act->sa_sigaction
					   ? (sighandler_t)(void *)act->sa_sigaction : act->sa_handler);
	return g.real_sigaction(sig, act, old);
}

EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	REAL(signal);
	handler_check(sig, h);
	return real_signal(sig, h);
}

EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	REAL(sysv_signal);
	handler_check(sig, h);
	return real_sysv_signal(sig, h);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return signal(sig, h);
}

/* SIGTRAP stays deliverable: a blocked trap would kill the program. */
static const sigset_t *keep_trap(int how, const sigset_t *set, sigset_t *copy)
{
	if (!g.active || !set || how == SIG_UNBLOCK || !sigismember(set, SIGTRAP))
		return set;
	*copy = *set;
	sigdelset(copy, SIGTRAP);
	return copy;
}

EXPORT int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(sigprocmask);
	sigset_t copy;
	return real_sigprocmask(how, keep_trap(how, set, &copy), old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(pthread_sigmask);
	sigset_t copy;
	return real_pthread_sigmask(how, keep_trap(how, set, &copy), old);
}

/* Threads. */
struct start {
	void *(*fn)(void *);
	void *arg;
};

/* The new thread's stops outside any handler: it is in our code (unchecked),
 * so the checker lets it run free. */
static void thread_event(enum val_event_kind kind)
{
	lock();
	if (!g.active) {
		unlock();
		return;
	}
	struct ip_thread *th = self();
	if (!th) {
		unlock();
		return;
	}
	/* What a thread of the same tid that left unseen (pthread_exit) kept:
	 * a lifted breakpoint, planted int3s, its record in the checker. */
	end_lift(th);
	unplant(th);
	*th = (struct ip_thread){ .tid = th->tid };
	struct val_event ev = { .kind = VAL_EV_EXITED, .tid = th->tid };
	val_checker_event(g.c, &ev);
	if (kind == VAL_EV_EXITED) {
		th->tid = 0; /* its record may serve another thread */
		self_th = NULL;
	}
	if (kind == VAL_EV_STOPPED) {
		struct bk_regs r;
		memset(&r, 0, sizeof(r));
		bk_regs_set(&r, VAL_REG_PC, (uint64_t)(uintptr_t)&thread_event);
		bk_regs_set(&r, VAL_REG_SP, (uint64_t)(uintptr_t)__builtin_frame_address(0));
		th->fake = &r;
		ev.kind = VAL_EV_STOPPED;
		val_checker_event(g.c, &ev);
		th->fake = NULL;
	}
	unlock();
}

static void *thread_start(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	thread_event(VAL_EV_STOPPED);
	void *ret = s.fn(s.arg);
	__asm__ volatile("" ::: "memory"); /* not a tail call: our frame is the caller's */
	thread_event(VAL_EV_EXITED);
	return ret;
}

EXPORT int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	REAL(pthread_create);
	struct start *s = g.active ? malloc(sizeof(*s)) : NULL;
	if (!s)
		return real_pthread_create(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	int err = real_pthread_create(t, attr, thread_start, s);
	if (err)
		free(s);
	return err;
}

/* exec: this image's last snapshot, and the next image numbers itself one
 * more (in the environment it inherits, or is given). */
static char **exec_env(char *const *envp, char *spec, size_t speclen)
{
	snprintf(spec, speclen, "BACKSTEP_INPROC=%d,%d,%u,%u,%u", g.pid, g.fd, g.image + 1,
		 (g.opts.fp_only ? 1u : 0) | (g.opts.fast_walk ? 2u : 0), g.opts.max_frames);
	size_t n = 0;
	while (envp && envp[n])
		n++;
	char **out = malloc((n + 5) * sizeof(*out));
	if (!out)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], "BACKSTEP_INPROC", 15) && strncmp(envp[i], "LD_PRELOAD=", 11))
			out[k++] = envp[i];
	static const char *const keep[] = { "BACKSTEP_INPROC_FROM", "BACKSTEP_INPROC_ONLY",
					    "LD_PRELOAD" };
	for (size_t i = 0; i < 3; i++) {
		const char *v = getenv(keep[i]);
		if (!v)
			continue;
		size_t len = strlen(keep[i]) + strlen(v) + 2;
		char *e = malloc(len);
		if (e) {
			snprintf(e, len, "%s=%s", keep[i], v);
			out[k++] = e;
		}
	}
	out[k++] = spec;
	out[k] = NULL;
	return out;
}

/* Checking of this image ends here (a failed exec goes on unchecked). */
static void before_exec(void)
{
	finish();
	fcntl(g.fd, F_SETFD, 0);
}

static void after_failed_exec(void)
{
	fcntl(g.fd, F_SETFD, FD_CLOEXEC);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve);
	if (!g.active || (int)syscall(SYS_getpid) != g.pid)
		return real_execve(path, argv, envp);
	char spec[160];
	char **env = exec_env(envp, spec, sizeof(spec));
	before_exec();
	int rc = real_execve(path, argv, env ? env : (char **)envp);
	int e = errno;
	after_failed_exec();
	errno = e;
	return rc;
}

EXPORT int execv(const char *path, char *const argv[])
{
	extern char **environ;
	return execve(path, argv, environ);
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe);
	if (!g.active || (int)syscall(SYS_getpid) != g.pid)
		return real_execvpe(file, argv, envp);
	char spec[160];
	char **env = exec_env(envp, spec, sizeof(spec));
	before_exec();
	int rc = real_execvpe(file, argv, env ? env : (char **)envp);
	int e = errno;
	after_failed_exec();
	errno = e;
	return rc;
}

EXPORT int execvp(const char *file, char *const argv[])
{
	extern char **environ;
	return execvpe(file, argv, environ);
}

/* The map: counted, so that the next stop of a thread says maps_changed
 * (a thread at full speed is not seen making the system call). The real
 * ones are libc's; ours (the int3 pages) go by raw system calls. */
/* A call of the program's: the checker's own (its libraries map the files
 * it reads) are made inside the handler and change no code of the
 * program's. */
static void count_map_call(void)
{
	if (!in_trap)
		atomic_fetch_add_explicit(&map_calls, 1, memory_order_relaxed);
}

/* Both names, each by its own symbol (with _FILE_OFFSET_BITS=64 the
 * header renames mmap to mmap64). */
static void *count_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "mmap");
	void *p = real(addr, len, prot, flags, fd, off);
	count_map_call();
	return p;
}

EXPORT void *ip_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__asm__("mmap");
void *ip_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return count_mmap(addr, len, prot, flags, fd, off);
}

EXPORT void *ip_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__asm__("mmap64");
void *ip_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return count_mmap(addr, len, prot, flags, fd, off);
}

EXPORT int munmap(void *addr, size_t len)
{
	REAL(munmap);
	int rc = real_munmap(addr, len);
	count_map_call();
	return rc;
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
	REAL(mprotect);
	int rc = real_mprotect(addr, len, prot);
	count_map_call();
	return rc;
}

EXPORT void *mremap(void *old, size_t old_len, size_t new_len, int flags, ...)
{
	REAL(mremap);
	void *new_addr = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		new_addr = va_arg(ap, void *);
		va_end(ap);
	}
	void *p = real_mremap(old, old_len, new_len, flags, new_addr);
	count_map_call();
	return p;
}
