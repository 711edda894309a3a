/* The in-process driver, the program's side: a library preloaded into the
 * program (LD_PRELOAD, by val_inproc.c) that single-steps it from inside.
 * Each step of a stepped thread ends in a SIGTRAP of the program itself
 * (an int3 planted where the instruction goes, or the trap flag), or is
 * made inside the handler without one (below, "Stepping by emulation");
 * the handler hands each stop to the one checker (val_run.c, through
 * val_checker_event) as a driver's event; the checker calls back into this
 * driver's ops (val.h, "Drivers") as it would into the ptrace driver's:
 *
 *   op           here
 *   start, wait  nothing: the events are pushed from the handlers
 *   resume       STEP emulates the instruction or plants int3s (or sets TF
 *                in the handler's ucontext), RUN and SYSCALLS clear TF; a
 *                thread on a breakpoint runs the instruction under it
 *                first, emulated or as a copy (below, "Off a breakpoint");
 *                with a signal: into the program's handler (below,
 *                "Signals")
 *   interrupt    tgkill(SIGTRAP), known by its sender
 *   regs         the handler's ucontext
 *   read         plain loads whose faults are taken back (below, "Reading
 *                memory"), our breakpoints hidden
 *   insert_bp    int3 written into the code page, made writable (and kept
 *                executable) once
 *   catches      the program's table of actions (below)
 *   space_*      modules from a ptrace-less target over our own pid
 *                (uw_target_adopt: /proc/self/maps), memory read as above
 *
 * What is not stepped: the kernel clears TF when it enters a signal
 * handler, so our handlers, the checker, and every libc call the checker
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
 * the program's own SIGTRAP: ignored where the program ignores it, else
 * the run ends with an error (it would have killed the program anyway).
 *
 * Threads: each thread's TF is its own (in its own context); one lock
 * serializes the checker. pthread_create is wrapped: the new thread tells
 * the checker it exists (a stop in our wrapper, unchecked code: it runs
 * free, its stack a gap below the wrapper's frame, as a ptrace-followed
 * thread's stack is below libc's start_thread) and that it is gone; it is
 * born with every signal blocked until then. Threads made by a raw clone
 * system call inherit the TF of the clone's context and are met at their
 * first trap. A process the program forks gets our breakpoints' original
 * bytes back and stops checking (pthread_atfork); a vfork child sharing
 * our memory steps over the breakpoints it meets, unchecked.
 *
 * Signals (below, "Signals"): the program's handlers are stepped into as
 * ptrace steps into them; only a handler of SIGTRAP sends a fallback
 * message and dies (val_inproc.c runs the program again under ptrace).
 * Blocking SIGTRAP would make the next step kill the program: SIGTRAP is
 * taken out of what the program blocks. The driver's own work runs with
 * every other signal blocked (SIGSEGV and SIGBUS excepted: our reads'
 * faults) and on a stack of its own, and allocates only from its private
 * heap (inproc_heap.c): it may run on top of the program interrupted
 * anywhere, inside malloc included.
 *
 * Maps: a free thread's system calls are not seen; the dynamic loader's
 * list of modules (_r_debug, read without its lock: a change is what is
 * looked for) and a count of the program's calls to mmap, munmap,
 * mprotect and mremap (wrapped below; calls made inside the handler are
 * the checker's and not counted) are compared at each breakpoint,
 * interrupt and signal stop, and a change is reported as maps_changed.
 * Stepped threads' system calls are seen by the checker itself.
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
#include <stddef.h>
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
#include "inproc.h"

#include "../insn/insn.h"
#include "../target/target.h"
#include "../unwind/unwind.h"

#define EXPORT __attribute__((visibility("default")))
#define TF 0x100ull
#define MAX_THREADS 4096
#define MAX_ONLY 64

/* The next definitions (the C library's) of what we interpose: found when
 * the library starts (resolve_reals: never in a handler), or by a call
 * made before that. */
static struct {
	void (*_exit)(int);
	sighandler_t (*signal)(int, sighandler_t);
	sighandler_t (*sysv_signal)(int, sighandler_t);
	sighandler_t (*sigset)(int, sighandler_t);
	int (*sigprocmask)(int, const sigset_t *, sigset_t *);
	int (*pthread_sigmask)(int, const sigset_t *, sigset_t *);
	int (*sigignore)(int);
	int (*siginterrupt)(int, int);
	int (*sighold)(int);
	int (*sigblock)(int);
	int (*sigsetmask)(int);
	long (*syscall)(long, ...);
	int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	void *(*mmap)(void *, size_t, int, int, int, off_t);
	int (*munmap)(void *, size_t);
	int (*mprotect)(void *, size_t, int);
	void *(*mremap)(void *, size_t, size_t, int, ...);
} real;

#define REAL(name) \
	do { \
		if (!real.name) \
			*(void **)&real.name = dlsym(RTLD_NEXT, #name); \
	} while (0)

static void hide_environment(void);

static void resolve_reals(void)
{
	REAL(_exit);
	REAL(signal);
	REAL(sysv_signal);
	REAL(sigset);
	REAL(sigprocmask);
	REAL(pthread_sigmask);
	REAL(sigignore);
	REAL(siginterrupt);
	REAL(sighold);
	REAL(sigblock);
	REAL(sigsetmask);
	REAL(syscall);
	REAL(pthread_create);
	REAL(execve);
	REAL(execvpe);
	REAL(mmap);
	REAL(munmap);
	REAL(mprotect);
	REAL(mremap);
}

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
	bool syscall;            /* NEXT: the syscall instruction (rt_sigreturn
				  * does not come back after it) */
	struct ip_emu emu;       /* NEXT: made here, without a trap, when kind */
};

/* JCC conditions: 0-15 as the opcode's low nibble (jo .. jg), then: */
enum { CC_LOOP = 16, CC_LOOPE, CC_LOOPNE, CC_JRCXZ, CC_NONE = 0xff };

struct ip_thread {
	int tid;
	ucontext_t *uc;          /* in the handler: the context it returns to */
	const struct bk_regs *fake; /* a stop outside the handler (the wrapper) */
	bool stepping;           /* TF was set by us */
	bool then_run;           /* stepping off a breakpoint, then at full speed */
	bool sys_stops;          /* at full speed with system-call stops asked
				  * (VAL_RESUME_SYSCALLS): its map calls are
				  * reported (below, "Maps") */
	bool interrupted;        /* an interrupt's tgkill is on its way */
	uint64_t lifted;         /* the breakpoint lifted for its step, or 0 */
	uint64_t step[2];        /* int3s planted for its step (where it may go) */
	unsigned nstep;
	uint64_t want[2];        /* ... planned, written when the checker is done */
	unsigned nwant;
	uint64_t step_pc;        /* the instruction the planted int3s step */
	uint64_t disp_from;      /* running a copy of the instruction there */
	uint8_t disp_len;
	bool emulated;           /* the instruction under an int3 was emulated: it
				  * stands at the next one, to be reported */
	unsigned chain;          /* steps emulated since the thread's last trap */
	/* errno as the program has it, while the driver works in this
	 * thread (its own calls may change the variable): what emulated
	 * instructions read and write, what the thread gets back. */
	int *errp, prog_errno;
	/* Where the driver's stop lives on the thread's stack (the kernel's
	 * frame, our frames below it): no emulated store goes there. */
	struct ip_emu_guard guard;
	/* Stepping rt_sigreturn: the frame's PC was made the thread's landing
	 * int3 (below, "Stepping"); LAND is where it really returns to. */
	uint64_t land;
	/* Signals (below, "Signals"): the stop reported is a signal's
	 * (SIGNALLED), and the checker's answer (DELIVER_SIG, 0: dropped;
	 * DELIVER_HOW); HOLD: a step reported just before a signal's stop,
	 * whose resume is not acted on (the signal comes first). */
	bool signalled, hold;
	int deliver_sig;
	enum val_resume deliver_how;
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
	int delivering;          /* the signal of the stop being reported */
} g = { .lock = ATOMIC_FLAG_INIT };

/* Calls of the program's to mmap, munmap, mprotect, mremap (below): the
 * map may have changed (code mapped from a file, a JIT). */
static _Atomic uint64_t map_calls;

static __thread struct ip_thread *self_th __attribute__((tls_model("initial-exec")));

static long raw_syscall0(long nr);

/* Taken only with every signal blocked but SIGTRAP (in a handler, or
 * around the few calls made outside one: lock_outside), so that no
 * handler of ours interrupts its holder; the wait makes no libc call (an
 * int3 planted for a step may sit at any libc function). */
static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&g.lock, memory_order_acquire))
		raw_syscall0(SYS_sched_yield);
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

static int gettid_raw(void)
{
	return (int)raw_syscall0(SYS_gettid);
}

static int getpid_raw(void)
{
	return (int)raw_syscall0(SYS_getpid);
}

/* What the driver blocks while it works: every signal but SIGTRAP (a trap
 * met inside, below "nested_trap"), SIGSEGV and SIGBUS (a fault of our
 * own memory reads, recovered: below, "Reading memory"). Bit SIG - 1 of the
 * kernel's 64-bit set. */
#define SIGBIT(sig) (1ull << ((sig) - 1))
#define FAULTS (SIGBIT(SIGSEGV) | SIGBIT(SIGBUS))
static const uint64_t all_but_trap = ~(SIGBIT(SIGTRAP) | FAULTS);

/* The driver's work outside its handlers (thread starts and ends, exit,
 * exec): signals blocked and the thread marked inside, as in a handler. */
static void lock_outside(uint64_t *old)
{
	ip_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all_but_trap, (long)old, 8, 0, 0);
	ip_inside++;
	lock();
}

static void unlock_outside(const uint64_t *old)
{
	unlock();
	ip_inside--;
	ip_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, 8, 0, 0);
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
static __thread int self_tid __attribute__((tls_model("initial-exec")));

static struct ip_thread *self(void)
{
	/* The thread's id, asked once (a vfork child, which shares our
	 * thread-local storage, never gets here: its pid is not ours). */
	if (!self_tid)
		self_tid = gettid_raw();
	int tid = self_tid;
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

/* ---- The program's signal actions ----------------------------------------
 *
 * The kernel holds our entry (ip_sig_entry, below "Signals") for every
 * signal the program catches; this table holds the program's own actions,
 * as the kernel would have held them (its struct k_sigaction: the mask's
 * 64 bits, SIGKILL and SIGSTOP out of it), and is what the program reads
 * back. Written under its lock with every signal blocked, read by the
 * signal entry without it (a sequence count: no handler may wait for a
 * lock its own thread holds). */

struct ksa {
	uint64_t handler;
	uint64_t flags;
	uint64_t restorer;
	uint64_t mask;
};

#define KSIG_MAX 64
#ifndef SA_RESTORER
#define SA_RESTORER 0x04000000
#endif

static struct {
	bool ready;              /* the table was filled (ip_init) */
	struct ksa act[KSIG_MAX + 1];
	uint64_t intr;           /* siginterrupt's signals (not SA_RESTART) */
	uint64_t restore_rt;     /* the C library's sa_restorer */
	atomic_flag lock;
	_Atomic unsigned seq;
} sigs = { .lock = ATOMIC_FLAG_INIT };

static bool is_fn(uint64_t handler)
{
	return handler != (uint64_t)(uintptr_t)SIG_DFL && handler != (uint64_t)(uintptr_t)SIG_IGN;
}


/* The program's action for SIG as it stands. */
static struct ksa sig_get(int sig)
{
	struct ksa a;
	for (unsigned tries = 0;; tries++) {
		unsigned seq = atomic_load_explicit(&sigs.seq, memory_order_acquire);
		if ((seq & 1) && tries < 100000) {
			ip_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
			continue;
		}
		a = sigs.act[sig];
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit(&sigs.seq, memory_order_relaxed) == seq || tries >= 100000)
			return a;
	}
}

static void sig_write_begin(uint64_t *old)
{
	ip_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&(uint64_t){ ~0ull }, (long)old, 8, 0, 0);
	while (atomic_flag_test_and_set_explicit(&sigs.lock, memory_order_acquire))
		ip_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
	atomic_fetch_add_explicit(&sigs.seq, 1, memory_order_acq_rel);
}

static void sig_write_end(const uint64_t *old)
{
	atomic_fetch_add_explicit(&sigs.seq, 1, memory_order_release);
	atomic_flag_clear_explicit(&sigs.lock, memory_order_release);
	ip_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, 8, 0, 0);
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
/* ---- Reading memory ------------------------------------------------------
 *
 * Every read of the program's memory (the unwinder's, the decoder's, the
 * stepping's) is a plain load that may fault: ip_probe_read copies, and a
 * SIGSEGV or SIGBUS at its loads (our entry is the kernel's action for
 * both while we check, below "Signals") resumes it at ip_probe_fail. A
 * system call per read (process_vm_readv: 1.2 us on the project's VM,
 * about one per checked instruction) costs more than the rest of a step's
 * reading together. SIGSEGV and SIGBUS are never blocked while the driver
 * works (all_but_trap), and unblocked at its entry where the program had
 * them blocked. */
int ip_probe_read(void *dst, const void *src, size_t len);
void ip_probe_begin(void);
void ip_probe_end(void);
void ip_probe_fail(void);
__asm__(".text\n"
	".p2align 4\n"
	".globl ip_probe_read\n"
	".hidden ip_probe_read\n"
	".type ip_probe_read,@function\n"
	"ip_probe_read:\n"
	"	.cfi_startproc\n"
	"	mov %rdx, %rcx\n"
	".globl ip_probe_begin\n"
	".hidden ip_probe_begin\n"
	"ip_probe_begin:\n"
	"	cmp $8, %rcx\n"
	"	jne 1f\n"
	"	mov (%rsi), %rax\n"
	"	mov %rax, (%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	"1:	rep movsb\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	/* ip_probe_load(addr, size, out): one load of SIZE bytes. */
	".globl ip_probe_load\n"
	".hidden ip_probe_load\n"
	"ip_probe_load:\n"
	"	cmp $8, %esi\n"
	"	je .Lload8\n"
	"	cmp $4, %esi\n"
	"	je .Lload4\n"
	"	cmp $2, %esi\n"
	"	je .Lload2\n"
	"	movzbl (%rdi), %eax\n"
	"	jmp .Lloaded\n"
	".Lload2:	movzwl (%rdi), %eax\n"
	"	jmp .Lloaded\n"
	".Lload4:	mov (%rdi), %eax\n"
	"	jmp .Lloaded\n"
	".Lload8:	mov (%rdi), %rax\n"
	".Lloaded:	mov %rax, (%rdx)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	/* ip_probe_store(addr, size, value): one store of SIZE bytes. */
	".globl ip_probe_store\n"
	".hidden ip_probe_store\n"
	"ip_probe_store:\n"
	"	cmp $8, %esi\n"
	"	je .Lstore8\n"
	"	cmp $4, %esi\n"
	"	je .Lstore4\n"
	"	cmp $2, %esi\n"
	"	je .Lstore2\n"
	"	mov %dl, (%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".Lstore2:	mov %dx, (%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".Lstore4:	mov %edx, (%rdi)\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".Lstore8:	mov %rdx, (%rdi)\n"
	".globl ip_probe_end\n"
	".hidden ip_probe_end\n"
	"ip_probe_end:\n"
	"	xor %eax, %eax\n"
	"	ret\n"
	".globl ip_probe_fail\n"
	".hidden ip_probe_fail\n"
	"ip_probe_fail:\n"
	"	mov $-1, %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size ip_probe_read, .-ip_probe_read\n");

/* Up to LEN bytes at ADDR, without faulting: how many (a prefix, page by
 * page where the whole does not read). */
/* Addresses no mapping can hold (below the kernel's lowest, mmap_min_addr,
 * 64 KiB by default; above user space): failed without a fault. Walks
 * guessing from leftover values (frame pointers, stack scans) ask for
 * them often. */
static bool never_mapped(uint64_t addr, size_t len)
{
	return addr < 0x10000 || addr >= 0x800000000000ull || len > 0x800000000000ull - addr;
}

static size_t raw_read(uint64_t addr, void *dst, size_t len)
{
	if (never_mapped(addr, len))
		return 0;
	if (!len || ip_probe_read(dst, (const void *)(uintptr_t)addr, len) == 0)
		return len;
	size_t k = 0;
	while (k < len) {
		size_t n = 4096 - ((addr + k) & 4095);
		if (n > len - k)
			n = len - k;
		if (ip_probe_read((uint8_t *)dst + k, (const void *)(uintptr_t)(addr + k), n) != 0)
			break;
		k += n;
	}
	return k;
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

/* Stepping by emulation. A control transfer (jmp, jcc, loop, call, ret,
 * direct or through a register or memory) changes nothing but the PC, SP
 * and, for a call, the word it pushes, and decides nothing from what it
 * does not read: made here on the trap's context, exactly as the CPU
 * would (a read or the push that would fault is left to the program), its
 * stop is reported at once, with no trap for it (a trap and its signal
 * are about half a step's cost). Nothing is left out: the stop is the
 * same as the trap's would be, and the checker walks it the same. At most
 * EMULATE_CHAIN such steps in a row before the thread runs again (a loop
 * of jumps must not keep it, and its pending signals and the other
 * threads, in the handler). Not in BACKSTEP_INPROC_STEP=tf (which
 * measures the trap flag). */
#define EMULATE_CHAIN 64

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
	if (cc < 16)
		return ip_emu_cond(cc, gr);
	bool zf = (uint64_t)gr[REG_EFL] & 0x40;
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
	ip_emu_decode(i, &s->emu);
	for (unsigned k = 0; k < x->op_count; k++)
		if (x->operands[k].type == X86_OP_MEM && x->operands[k].mem.base == X86_REG_RIP)
			s->rip_disp = x->encoding.disp_size == 4 && x->encoding.disp_offset ?
					      x->encoding.disp_offset : 0xff;
	if (i->id == X86_INS_SYSCALL) {
		s->how = STEP_NEXT;
		s->syscall = true;
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
	th->step_pc = pc;
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
		void *p = (void *)ip_syscall6(SYS_mmap, (long)hint, MAX_THREADS * 32,
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
			/* The push may fault (a stack overflow): then the call
			 * is the program's to make, and its fault with it. */
			uint64_t sp = (uint64_t)gr[REG_RSP] - 8;
			if (never_mapped(sp, 8) || (sp < th->guard.hi && sp + 8 > th->guard.lo) ||
			    ip_probe_store(sp, 8, next) != 0)
				return false;
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

/* Make S here, a control transfer or one of inproc_emu.c's: false when it
 * is the program's to run. */
static bool emulate_step(struct ip_thread *th, const struct ip_step *s, greg_t *gr)
{
	if (s->how == STEP_NEXT && s->emu.kind) {
		/* With the program's errno in the variable: the instruction
		 * may read or write it (errno = 0 before readdir), and ours
		 * may have changed it meanwhile. */
		if (th->errp)
			*th->errp = th->prog_errno;
		bool ok = ip_emu_run(&s->emu, s->pc + s->len, gr, &th->guard);
		if (th->errp)
			th->prog_errno = *th->errp;
		if (!ok)
			return false;
		th->emulated = true;
		return true;
	}
	return emulate(th, s, gr);
}

/* The decoded facts of the instruction at PC, or NULL. */
static struct ip_step *step_at(uint64_t pc)
{
	struct ip_step *s = step_slot(pc);
	if (s && !s->len && s->how == STEP_TF)
		decode_step(s);
	return s;
}

static bool run_under(struct ip_thread *th, uint64_t pc, greg_t *gr)
{
	if (g.step_tf)
		return false;
	struct ip_step *s = step_at(pc);
	if (!s)
		return false;
	if (s->how != STEP_TF && emulate_step(th, s, gr))
		return true;
	return s->how == STEP_NEXT && displace(th, s, gr);
}

/* Up to LEN bytes written at ADDR of our memory without faulting. */
static bool raw_write(uint64_t addr, const void *src, size_t len)
{
	struct iovec local = { (void *)(uintptr_t)src, len }, remote = { (void *)(uintptr_t)addr, len };
	return process_vm_writev(g.pid, &local, 1, &remote, 1, 0) == (ssize_t)len;
}

/* The thread's landing int3 (below) in its scratch slot, after the room
 * a displaced copy takes (16 bytes). */
static uint64_t landing(struct ip_thread *th)
{
	uint8_t *slot = scratch_of(th);
	return slot ? (uint64_t)(uintptr_t)slot + 31 : 0;
}

/* Stepping rt_sigreturn (the syscall instruction S, rax 15): the thread
 * goes on at the PC saved in the signal frame at its SP, where neither
 * an int3 planted (the code may be unwritable, or under another thread's
 * lifted int3) nor the trap flag (the kernel returns into the restored
 * context with the restored flags: it would stop one instruction late)
 * stops it exactly. So the frame's saved PC is made the thread's landing
 * int3 and its saved flags lose the trap flag; the landing's trap puts
 * the thread where it was to go, which is the step's stop (ptrace's step
 * over rt_sigreturn stops at the restored PC). The frame is consumed by
 * the system call: nothing else reads it. */
static bool sigreturn_step(struct ip_thread *th, const struct ip_step *s, const greg_t *gr)
{
	if (!s || !s->syscall || gr[REG_RAX] != SYS_rt_sigreturn)
		return false;
	uint64_t uc = (uint64_t)gr[REG_RSP];
	uint64_t rip_at = uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]);
	uint64_t efl_at = uc + offsetof(ucontext_t, uc_mcontext.gregs[REG_EFL]);
	uint64_t to, efl, land = landing(th);
	if (!land || raw_read(rip_at, &to, 8) != 8 || raw_read(efl_at, &efl, 8) != 8)
		return false;
	*(volatile uint8_t *)(uintptr_t)land = 0xcc;
	efl &= ~TF;
	if (!raw_write(efl_at, &efl, 8) || !raw_write(rip_at, &land, 8))
		return false;
	th->land = to;
	return true;
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
	th->step_pc = pc;
	struct ip_step *s = step_at(pc);
	if (how == VAL_RESUME_STEP && !on_bp && !g.step_tf && s && th->chain < EMULATE_CHAIN &&
	    emulate_step(th, s, gr)) {
		/* A control transfer made here: its stop comes next, without
		 * a trap (below, "Stepping by emulation"). */
		th->chain++;
		gr[REG_EFL] &= ~(greg_t)TF;
		return;
	}
	bool sigret = sigreturn_step(th, s, gr);
	if (on_bp && run_under(th, pc, gr)) {
		gr[REG_EFL] &= ~(greg_t)TF;
		return; /* the copy's int3, or an emulated stop, comes next */
	}
	if (on_bp && poke(b->addr, b->orig) == 0) {
		b->inserted = false;
		b->lifts++;
		th->lifted = b->addr;
	}
	if (sigret) {
		gr[REG_EFL] &= ~(greg_t)TF; /* the landing's int3 comes next */
		th->nwant = 0;
	} else if (plan(th, pc, gr)) {
		gr[REG_EFL] &= ~(greg_t)TF;
	} else {
		gr[REG_EFL] |= (greg_t)TF;
	}
}

static int ip_resume(struct val_driver *d, int tid, enum val_resume how, int sig)
{
	(void)d;
	struct ip_thread *th = find_th(tid);
	if (!th)
		return BK_E_NOT_FOUND;
	th->sys_stops = how == VAL_RESUME_SYSCALLS;
	if (th->hold)
		return 0; /* a signal's stop follows: the step is not made */
	if (th->signalled) {
		/* The answer to a signal's stop: on_signal delivers it. */
		th->deliver_sig = sig;
		th->deliver_how = how;
		if (sig)
			return 0;
	}
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
	if (!th || raw_syscall3(SYS_tgkill, g.pid, tid, SIGTRAP) != 0)
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

/* The signal being delivered is caught (its stop is reported only then,
 * and SA_RESETHAND may have reset the table already); any other by the
 * table. */
static bool ip_catches(struct val_driver *d, int sig)
{
	(void)d;
	if (sig == g.delivering)
		return true;
	return sig > 0 && sig <= KSIG_MAX && sig != SIGTRAP && is_fn(sig_get(sig).handler);
}

/* The space's reads: the walked thread is the one in the handler, so its
 * stack is read directly (src/target/local.c: bounds known per thread,
 * noted at each trap), anything else without faulting; breakpoints
 * hidden. */
static int space_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	if (never_mapped(addr, len) || ip_probe_read(dst, (const void *)(uintptr_t)addr, len) != 0)
		return BK_E_MEMORY;
	overlay(addr, dst, len);
	return 0;
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
	uint64_t old;
	lock_outside(&old);
	if (g.active) {
		send_snapshot(true);
		restore_all();
		g.active = false;
	}
	unlock_outside(&old);
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

/* Report stop EV of TH standing in context UC to the checker, and the
 * stops of what it emulated off a breakpoint meanwhile (the thread then
 * stands at the next instruction, which is the step's stop). */
static void push(struct ip_thread *th, ucontext_t *uc, struct val_event ev)
{
	th->uc = uc;
	th->chain = 0;
	th->stepping = false;
	val_checker_event(g.c, &ev);
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
}

/* Did the map change since the last stop that looked? */
static bool maps_changed(void)
{
	uint64_t gen = link_gen() + atomic_load_explicit(&map_calls, memory_order_relaxed);
	bool changed = gen != g.link_gen;
	g.link_gen = gen;
	if (changed && g.rwx) {
		/* Pages may have gone (dlclose) and come back read-only. */
		memset(g.rwx, 0, g.rwx_cap * sizeof(*g.rwx));
		g.nrwx = 0;
	}
	return changed;
}

void ip_on_signal(int sig, siginfo_t *si, ucontext_t *uc, uint64_t mask);

/* The program's own SIGTRAP (raise, kill, an int3 of its own, told from
 * ours by where it stopped and its si_code): what its disposition says.
 * Its handler (the kernel keeps ours, the table the program's) gets it
 * as any caught signal does, the checker stepping into it (ip_on_signal,
 * with the mask the kernel would have given it; the frame is where ours
 * was put: SA_ONSTACK of the program's is not followed). Ignored, it is
 * dropped; by default it ends the run, which the program's death would
 * anyway. Called with the lock held; releases it. */
static void own_trap(siginfo_t *si, ucontext_t *uc)
{
	struct ksa act = sig_get(SIGTRAP);
	if (act.handler == (uint64_t)(uintptr_t)SIG_IGN) {
		ip_inside--;
		unlock();
		return;
	}
	if (is_fn(act.handler)) {
		ip_inside--;
		unlock();
		uint64_t mask;
		memcpy(&mask, &uc->uc_sigmask, sizeof(mask));
		mask |= act.mask;
		if (!(act.flags & SA_NODEFER))
			mask |= SIGBIT(SIGTRAP);
		/* The frame returns where the program's would: its restorer
		 * (the C library's, which unwinders know), not ours. */
		*(uint64_t *)(void *)((char *)uc - 8) =
			act.flags & SA_RESTORER ? act.restorer : sigs.restore_rt;
		ip_on_signal(SIGTRAP, si, uc, mask);
		return;
	}
	if (!g.res.error)
		g.res.error = base_strdup("the program raised SIGTRAP itself: the in-process "
					  "driver cannot tell it from its own (--driver ptrace)");
	send_snapshot(true);
	restore_all();
	g.active = false;
	ip_inside--;
	unlock();
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	g.real_sigaction(SIGTRAP, &dfl, NULL);
	raise(SIGTRAP);
}

static void requeue_deferred(void);
static struct ksa kernel_action(int sig, const struct ksa *a);
void ip_sig_entry(void);
void ip_sig_end(void);

/* The checker's stack. The handlers run on whatever stack the thread was
 * on, which may be a program's alternate signal stack of a few KiB, or a
 * thread's stack near its end; the checker needs tens of KiB (a walk,
 * a module read). Only the lock's holder runs it, so one stack serves
 * every thread: switched to after lock() and back before unlock(). */
#define CSTACK_LEN (1u << 20)
static uint8_t *cstack_top;

void ip_call_on(void (*fn)(void *), void *arg, void *top);
__asm__(".text\n"
	".p2align 4\n"
	".globl ip_call_on\n"
	".hidden ip_call_on\n"
	".type ip_call_on,@function\n"
	"ip_call_on:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	mov %rdx, %rsp\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size ip_call_on, .-ip_call_on\n");

static void on_cstack(void (*fn)(void *), void *arg)
{
	if (cstack_top)
		ip_call_on(fn, arg, cstack_top);
	else
		fn(arg);
}

static void make_cstack(void)
{
	long p = ip_syscall6(SYS_mmap, 0, CSTACK_LEN + 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if ((unsigned long)p > -4096ul)
		return; /* the handlers' own stacks, then */
	raw_syscall3(SYS_mprotect, p, 4096, PROT_NONE); /* a guard below */
	cstack_top = (uint8_t *)p + 4096 + CSTACK_LEN;
}

/* A trap of checked process, thread TH, lock held (on the checker's
 * stack). */
struct trap_args {
	struct ip_thread *th;
	siginfo_t *si;
	ucontext_t *uc;
	bool errno_kept;         /* out: TH->prog_errno is the thread's errno */
	bool own;                /* out: the program's own SIGTRAP */
};

/* The kernel puts a handler's frame below the interrupted SP's red zone
 * (128 bytes), its ucontext UC 8 bytes above the frame's start; our
 * frames on that stack are below it, within STACK_SLACK. */
#define STACK_SLACK 8192

static void trap_stop(void *arg)
{
	struct trap_args *t = arg;
	struct ip_thread *th = t->th;
	siginfo_t *si = t->si;
	ucontext_t *uc = t->uc;
	greg_t *gr = uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)gr[REG_RIP];
	th->guard.lo = (uint64_t)(uintptr_t)uc - 8 - STACK_SLACK;
	th->guard.hi = (uint64_t)gr[REG_RSP] - 128;
	end_lift(th);
	struct val_event ev = { .tid = th->tid };
	struct ip_bp *b;
	if (th->land && si->si_code == SI_KERNEL && pc - 1 == landing(th)) {
		/* Out of rt_sigreturn (above, "Stepping"): where it returned. */
		gr[REG_RIP] = (greg_t)th->land;
		th->land = 0;
		th->disp_from = 0;
		if (th->then_run) {
			th->then_run = th->stepping = false;
			return;
		}
		ev.kind = VAL_EV_STEPPED;
		goto event;
	}
	if (th->disp_from && si->si_code == SI_KERNEL &&
	    pc - 1 == (uint64_t)(uintptr_t)scratch_of(th) + th->disp_len) {
		/* The copy ran (above, "Off a breakpoint"): as if the original had. */
		gr[REG_RIP] = (greg_t)(th->disp_from + th->disp_len);
		th->disp_from = 0;
		if (th->then_run) {
			th->then_run = th->stepping = false;
			return;
		}
		ev.kind = VAL_EV_STEPPED;
		goto event;
	}
	th->disp_from = 0;
	if (si->si_code == TRAP_TRACE && th->stepping) {
		if (th->then_run) {
			th->then_run = th->stepping = false;
			gr[REG_EFL] &= ~(greg_t)TF;
			return;
		}
		ev.kind = VAL_EV_STEPPED;
	} else if (si->si_code == SI_KERNEL && (b = bp_find(pc - 1)) != NULL && b->orig == 0xcc &&
		   th->stepping && th->step_pc == pc - 1) {
		/* The program's own int3 under our breakpoint, which its step
		 * ran: its trap (the step's stop is reported with it). */
		t->own = true;
		return;
	} else if (si->si_code == SI_KERNEL && (b = bp_find(pc - 1)) != NULL) {
		gr[REG_RIP] = (greg_t)(pc - 1);
		if (planted(th, pc - 1)) {
			unplant(th);
			if (th->then_run) {
				th->then_run = th->stepping = false;
				return;
			}
			ev.kind = VAL_EV_STEPPED;
		} else if (!b->wanted) {
			return; /* another thread's step, or taken out meanwhile */
		} else {
			ev.kind = VAL_EV_BREAKPOINT;
			ev.addr = pc - 1;
		}
	} else if (si->si_code == SI_TKILL && si->si_pid == g.pid && th->interrupted) {
		th->interrupted = false;
		ev.kind = VAL_EV_STOPPED;
	} else if (si->si_code == TRAP_TRACE) {
		gr[REG_EFL] &= ~(greg_t)TF; /* inherited through a clone */
		return;
	} else {
		t->own = true;
		return;
	}
event:
	th->errp = &errno;
	th->prog_errno = *th->errp;
	t->errno_kept = true;
	if (ev.kind != VAL_EV_STEPPED)
		ev.maps_changed = maps_changed();
	push(th, uc, ev);
	if (th->nwant && !commit(th))
		gr[REG_EFL] |= (greg_t)TF;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	ucontext_t *uc = ucv;
	if (ip_inside) {
		nested_trap(si, uc);
		return;
	}
	uint64_t at = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (at >= (uint64_t)(uintptr_t)ip_sig_entry && at < (uint64_t)(uintptr_t)ip_sig_end) {
		/* The trap flag's trap of a step whose instruction raised a
		 * signal (a step over tgkill): both were delivered at once, the
		 * signal's frame first, so this one stands at our entry. The
		 * entry reports the step as made (signal_stop). */
		uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TF;
		return;
	}
	/* No libc call until this thread's own int3s are out (trap_stop's
	 * unplant, end_lift): the step may have planted one at the entry of
	 * any libc function, errno's included. */
	if (!g.active || getpid_raw() != g.pid) {
		foreign_trap(si, uc);
		return;
	}
	uint64_t program_mask;
	memcpy(&program_mask, &uc->uc_sigmask, sizeof(program_mask));
	if (program_mask & FAULTS) {
		/* Blocked by the program (in its SIGSEGV handler): our reads
		 * need them (above, "Reading memory"); sigreturn blocks them
		 * again. */
		uint64_t faults = FAULTS;
		ip_syscall6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&faults, 0, 8, 0, 0);
	}
	ip_inside++;
	lock();
	struct ip_thread *th = g.active ? self() : NULL;
	if (!th) {
		/* Over, or more live threads than records: not checked. */
		ip_inside--;
		unlock();
		foreign_trap(si, uc);
		return;
	}
	struct trap_args t = { .th = th, .si = si, .uc = uc };
	on_cstack(trap_stop, &t);
	if (t.own) {
		own_trap(si, uc);
		return;
	}
	ip_inside--;
	unlock();
	requeue_deferred();
	if (t.errno_kept)
		*th->errp = th->prog_errno;
}

/* ---- Signals ---------------------------------------------------------------
 *
 * The program's handlers are stepped as ptrace steps them: a caught
 * signal is reported (VAL_EV_SIGNAL, the interrupted registers), and the
 * checker's step with it stops at the handler's first instruction with
 * the signal frame pushed (VAL_EV_STEPPED), from where the handler is
 * stepped, or run free where it is not checked code, like any code.
 *
 * The kernel holds our entry, ip_sig_entry, for every signal the program
 * catches, with the program's flags (SA_ONSTACK, SA_RESTART, SA_RESETHAND,
 * SA_NODEFER: the kernel does what they say), its mask and its restorer,
 * and SA_SIGINFO. So the kernel builds the very frame it would have built
 * for the program's handler, and blocks what it would have blocked. The
 * entry first blocks every other signal (the mask the kernel set is the
 * handler's, kept for it), then reports to the checker, then enters the
 * program's handler on that frame as the kernel would have: the
 * registers of the interrupted context but the handler's PC, SP at the
 * frame (its return address, the restorer), the signal number, siginfo
 * and ucontext in rdi, rsi, rdx, rax 0, the direction, trap and resume
 * flags clear, a fresh FPU state and the handler's mask, all made at once
 * by an rt_sigreturn of a context built below the frame. The frame stays
 * untouched for the handler (it may read or change the ucontext); its
 * rt_sigreturn returns where the signal interrupted.
 *
 * Where the thread was: a step by int3s that had run (the signal came
 * between the instruction and the trap after it), or a copy run off a
 * breakpoint, or a landing out of rt_sigreturn, is first reported as the
 * step it was (as ptrace reports the step before the signal); a step not
 * made yet is abandoned (the checker steps it again after rt_sigreturn).
 * The thread may be anywhere: in checked code, at full speed in the C
 * library (inside malloc, holding its lock), in our own wrappers. So
 * nothing here or in the checker uses the program's allocator or a lock
 * the program may hold (inproc_heap.c, and lock() above).
 *
 * Signals during the driver's own work wait: its handlers (SIGTRAP's and
 * this entry) run with every signal but SIGTRAP blocked, and are
 * delivered when the thread is back in the program. One window remains:
 * a second signal between the kernel's entry here and the block. That one
 * is taken by a nested entry that sees where it interrupted, keeps its
 * siginfo, blocks it in the interrupted entry's context, and leaves it
 * for the first to queue again once it has entered its handler, where the
 * kernel delivers it at the handler's first instruction (as it would
 * have, the two arriving together).
 *
 * SIGTRAP is never the program's to block: the step of a handler would
 * kill it. It is taken out of every handler's mask. */

void ip_sig_entry(void);
void ip_sig_blocked(void);
void ip_sig_end(void);
void ip_restore_rt(void);
void ip_on_signal(int sig, siginfo_t *si, ucontext_t *uc, uint64_t mask);

/* rdi, rsi, rdx: the kernel's; the stack at entry is 8 mod 16, the frame's
 * return address on top. 24 bytes: the old mask, and the alignment.
 *
 * Our own returns (a signal dropped, deferred, or delivered by default)
 * make the frame's rt_sigreturn here, as does our SIGTRAP handler's
 * restorer (ip_restore_rt): never through the C library's restorer, the
 * program's handlers' return, where the step of one of them may have
 * planted an int3 (or the checker a return breakpoint). */
__asm__(".text\n"
	".p2align 4\n"
	".globl ip_sig_entry\n"
	".hidden ip_sig_entry\n"
	".type ip_sig_entry,@function\n"
	"ip_sig_entry:\n"
	"	.cfi_startproc\n"
	/* A fault of one of our reads: resumed at ip_probe_fail at once. */
	"	cmp $11, %edi\n"                 /* SIGSEGV */
	"	je 2f\n"
	"	cmp $7, %edi\n"                  /* SIGBUS */
	"	jne 3f\n"
	"2:	cmpl $0, 8(%rsi)\n"              /* si_code: a fault's is > 0 */
	"	jle 3f\n"
	"	mov 168(%rdx), %rax\n"           /* uc_mcontext.gregs[REG_RIP] */
	"	lea ip_probe_begin(%rip), %rcx\n"
	"	cmp %rcx, %rax\n"
	"	jb 3f\n"
	"	lea ip_probe_end(%rip), %rcx\n"
	"	cmp %rcx, %rax\n"
	"	jae 3f\n"
	"	lea ip_probe_fail(%rip), %rcx\n"
	"	mov %rcx, 168(%rdx)\n"
	"	lea 8(%rsp), %rsp\n"             /* the frame's ucontext */
	"	mov $15, %eax\n"
	"	syscall\n"
	"	ud2\n"
	"3:	sub $24, %rsp\n"
	"	.cfi_def_cfa_offset 32\n"
	"	mov %rdi, %r12\n"
	"	mov %rsi, %r13\n"
	"	mov %rdx, %r14\n"
	"	mov $14, %eax\n"                  /* rt_sigprocmask */
	"	xor %edi, %edi\n"                 /* SIG_BLOCK */
	"	lea ip_all_but_trap(%rip), %rsi\n"
	"	mov %rsp, %rdx\n"
	"	mov $8, %r10d\n"
	"	syscall\n"
	".globl ip_sig_blocked\n"
	".hidden ip_sig_blocked\n"
	"ip_sig_blocked:\n"
	"	mov %r12d, %edi\n"
	"	mov %r13, %rsi\n"
	"	mov %r14, %rdx\n"
	"	mov (%rsp), %rcx\n"
	"	call ip_on_signal\n"
	"	add $32, %rsp\n"                /* the frame's ucontext */
	"	mov $15, %eax\n"                 /* rt_sigreturn */
	"	syscall\n"
	"	ud2\n"
	".globl ip_sig_end\n"
	".hidden ip_sig_end\n"
	"ip_sig_end:\n"
	"	.cfi_endproc\n"
	".size ip_sig_entry, .-ip_sig_entry\n"
	/* Our SIGTRAP handler's restorer: the same system call. */
	".p2align 4\n"
	".globl ip_restore_rt\n"
	".hidden ip_restore_rt\n"
	".type ip_restore_rt,@function\n"
	"ip_restore_rt:\n"
	"	mov $15, %eax\n"
	"	syscall\n"
	"	ud2\n"
	".size ip_restore_rt, .-ip_restore_rt\n");

_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]) == 168 &&
		       offsetof(siginfo_t, si_code) == 8,
	       "ip_sig_entry's offsets");

/* For the entry's block (every signal but SIGTRAP and the faults). */
const uint64_t ip_all_but_trap __attribute__((visibility("hidden"))) = ~(SIGBIT(SIGTRAP) | FAULTS);

/* Signals a nested entry took in the window, for the interrupted entry to
 * queue again. */
#define MAX_DEFERRED 8
static __thread struct {
	unsigned n;
	int sig[MAX_DEFERRED];
	siginfo_t info[MAX_DEFERRED];
	uint64_t added;          /* bits blocked by us in the interrupted context */
} deferred __attribute__((tls_model("initial-exec")));

static void defer(int sig, const siginfo_t *si, ucontext_t *uc)
{
	uint64_t *mask = (uint64_t *)(void *)&uc->uc_sigmask;
	/* SIGSEGV and SIGBUS (sent by someone) are never blocked here: the
	 * interrupted context may be the driver's, whose reads catch their
	 * faults (a fault blocked is the kernel's kill). */
	if (!(SIGBIT(sig) & FAULTS) && !(*mask & SIGBIT(sig))) {
		*mask |= SIGBIT(sig);
		deferred.added |= SIGBIT(sig);
	}
	if (deferred.n < MAX_DEFERRED) {
		deferred.sig[deferred.n] = sig;
		deferred.info[deferred.n++] = *si;
	}
}

/* Queue the deferred signals again (they are blocked until the thread
 * returns into the program). The context they were blocked in is left
 * now (after its mask was computed without them): ADDED is over. */
static void requeue_deferred(void)
{
	for (unsigned i = 0; i < deferred.n; i++)
		ip_syscall6(SYS_rt_tgsigqueueinfo, getpid_raw(), gettid_raw(), deferred.sig[i],
			     (long)&deferred.info[i], 0, 0);
	deferred.n = 0;
	deferred.added = 0;
}

/* Into the context GR (the handler's entry: above) with MASK, at once:
 * an rt_sigreturn of a frame built here, below the kernel's frame (whose
 * ucontext UC gives the flags). The FPU state starts afresh (no fpstate),
 * as the kernel starts a handler's. */
__attribute__((noreturn)) static void enter(const greg_t *gr, const ucontext_t *uc, uint64_t mask)
{
	static __thread ucontext_t f __attribute__((tls_model("initial-exec")));
	memset(&f, 0, sizeof(f));
	f.uc_flags = uc->uc_flags;
	/* The alternate stack as it is now, so that the return restores
	 * nothing (SS_AUTODISARM left it disarmed for the handler). */
	raw_syscall3(SYS_sigaltstack, 0, (long)&f.uc_stack, 0);
	memcpy(f.uc_mcontext.gregs, gr, sizeof(f.uc_mcontext.gregs));
	f.uc_mcontext.fpregs = NULL;
	mask &= ~SIGBIT(SIGTRAP);
	memcpy(&f.uc_sigmask, &mask, sizeof(mask));
	requeue_deferred();
	ip_inside--;
	__asm__ volatile("mov %0, %%rsp\n\t"
			 "mov $15, %%eax\n\t"
			 "syscall\n\t"
			 "ud2"
			 :
			 : "r"(&f)
			 : "memory");
	__builtin_unreachable();
}

/* The registers the kernel gives handler ACT of SIG: the interrupted
 * context UC's, but for the PC, SP at the frame, the arguments and the
 * flags. */
static void entry_regs(int sig, siginfo_t *si, ucontext_t *uc, const struct ksa *act, greg_t *out)
{
	memcpy(out, uc->uc_mcontext.gregs, sizeof(uc->uc_mcontext.gregs));
	out[REG_RIP] = (greg_t)act->handler;
	out[REG_RSP] = (greg_t)((uintptr_t)uc - 8); /* the frame: the restorer on top */
	out[REG_RDI] = sig;
	out[REG_RSI] = (greg_t)(uintptr_t)si;
	out[REG_RDX] = (greg_t)(uintptr_t)uc;
	out[REG_RAX] = 0;
	out[REG_EFL] &= ~(greg_t)(0x400 | TF | 0x10000); /* DF, TF, RF */
}

/* The default action of SIG, which the program's table says but our
 * entry got (another thread changed it meanwhile): the kernel's default
 * put back, and the signal queued again for it. */
static void default_action(int sig, siginfo_t *si)
{
	struct ksa dfl = { .handler = (uint64_t)(uintptr_t)SIG_DFL };
	ip_syscall6(SYS_rt_sigaction, sig, (long)&dfl, 0, 8, 0, 0);
	ip_syscall6(SYS_rt_tgsigqueueinfo, getpid_raw(), gettid_raw(), sig, (long)si, 0, 0);
}

/* A caught signal of thread TH, lock held (on the checker's stack): the
 * step it was making, the signal's stop, and the handler's entry, into
 * ENTRY. */
struct sig_args {
	struct ip_thread *th;
	int sig;
	ucontext_t *uc;
	greg_t *entry;
	bool deliver;            /* out: into the handler (else dropped) */
};

/* The end of the kernel's signal frame whose ucontext is UC: its FPU
 * state's (an XSAVE area can pass 8 KiB: AMX), or the interrupted
 * stack's red zone when the frame is on that stack. */
static uint64_t frame_top(const ucontext_t *uc)
{
	uint64_t at = (uint64_t)(uintptr_t)uc, top = at + STACK_SLACK;
	uint64_t fp = (uint64_t)(uintptr_t)uc->uc_mcontext.fpregs;
	if (fp > at && fp - at < STACK_SLACK) {
		/* struct _fpx_sw_bytes at 464 of the fxsave area: magic1,
		 * extended_size (the whole XSAVE area) */
		const uint32_t *sw = (const uint32_t *)(uintptr_t)(fp + 464);
		uint64_t size = sw[0] == 0x46505853u /* FP_XSTATE_MAGIC1 */ ? sw[1] : 512;
		if (fp + size > top)
			top = fp + size;
	}
	uint64_t sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	if (sp > at && sp - at < (1u << 20) && sp - 128 > top)
		top = sp - 128;
	return top;
}

static void signal_stop(void *arg)
{
	struct sig_args *a = arg;
	struct ip_thread *th = a->th;
	greg_t *gr = a->uc->uc_mcontext.gregs;
	uint64_t pc = (uint64_t)gr[REG_RIP];
	/* The kernel's frame (with its FPU state, above the ucontext) and
	 * our frames below it. */
	th->guard.lo = (uint64_t)(uintptr_t)a->uc - 8 - STACK_SLACK;
	th->guard.hi = frame_top(a->uc);
	end_lift(th);
	bool done = false;
	if (th->land && pc == landing(th)) {
		gr[REG_RIP] = (greg_t)th->land;
		done = true;
	} else if (th->disp_from) {
		uint64_t slot = (uint64_t)(uintptr_t)scratch_of(th);
		if (pc == slot + th->disp_len) {
			gr[REG_RIP] = (greg_t)(th->disp_from + th->disp_len);
			done = true;
		} else if (pc >= slot && pc < slot + th->disp_len) {
			gr[REG_RIP] = (greg_t)th->disp_from; /* not run: run again later */
		}
	} else if (th->nstep && planted(th, pc) && pc != th->step_pc) {
		done = true;
	} else if (th->stepping && !th->nstep && pc != th->step_pc) {
		done = true; /* by the trap flag: the instruction ran */
	}
	th->land = 0;
	th->disp_from = 0;
	unplant(th);
	th->errp = &errno;
	th->prog_errno = *th->errp;
	if (done && th->then_run) {
		th->then_run = false;
	} else if (done) {
		/* Reported as the step it was; the checker's next step is not
		 * made: the signal's stop comes first. */
		th->hold = true;
		push(th, a->uc, (struct val_event){ .kind = VAL_EV_STEPPED, .tid = th->tid });
		th->hold = false;
	}
	th->nwant = 0;
	th->then_run = th->stepping = false;
	gr[REG_EFL] &= ~(greg_t)TF;
	/* The signal's stop. Without an answer (the checker is done with the
	 * thread) it is delivered, the handler run free. */
	th->signalled = true;
	th->deliver_sig = a->sig;
	th->deliver_how = VAL_RESUME_RUN;
	g.delivering = a->sig;
	push(th, a->uc, (struct val_event){ .kind = VAL_EV_SIGNAL, .tid = th->tid, .sig = a->sig,
					    .maps_changed = maps_changed() });
	th->signalled = false;
	a->deliver = th->deliver_sig != 0;
	if (!a->deliver) {
		/* Dropped: the thread goes on as the checker resumed it. */
		if (th->nwant && !commit(th))
			gr[REG_EFL] |= (greg_t)TF;
	} else if (th->deliver_how == VAL_RESUME_STEP) {
		/* Into the handler: its first instruction is the step's stop.
		 * Its stack is below the frame, where our entry's frames are
		 * for now. */
		th->guard.lo = (uint64_t)(uintptr_t)a->uc - 8 - STACK_SLACK;
		th->guard.hi = (uint64_t)(uintptr_t)a->uc - 8;
		static __thread ucontext_t at __attribute__((tls_model("initial-exec")));
		memcpy(at.uc_mcontext.gregs, a->entry, sizeof(at.uc_mcontext.gregs));
		push(th, &at, (struct val_event){ .kind = VAL_EV_STEPPED, .tid = th->tid });
		if (th->nwant && !commit(th))
			at.uc_mcontext.gregs[REG_EFL] |= (greg_t)TF;
		memcpy(a->entry, at.uc_mcontext.gregs, sizeof(at.uc_mcontext.gregs));
	}
	g.delivering = 0;
}

void ip_on_signal(int sig, siginfo_t *si, ucontext_t *uc, uint64_t mask)
{
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	bool fault = (sig == SIGSEGV || sig == SIGBUS) && si->si_code > 0;
	if (fault && pc >= (uint64_t)(uintptr_t)ip_probe_begin &&
	    pc < (uint64_t)(uintptr_t)ip_probe_end) {
		/* One of our reads (above, "Reading memory"): it fails. */
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)ip_probe_fail;
		return;
	}
	if (pc >= (uint64_t)(uintptr_t)ip_sig_entry && pc < (uint64_t)(uintptr_t)ip_sig_blocked) {
		defer(sig, si, uc);
		return;
	}
	if (ip_inside) {
		/* SIGSEGV or SIGBUS (nothing else is let through) while the
		 * driver works. Sent by someone: the program gets it when the
		 * thread is back in it. A fault of the driver's own: its end,
		 * as any crash (by the kernel's default action). */
		if (fault) {
			struct ksa dfl = { .handler = (uint64_t)(uintptr_t)SIG_DFL };
			ip_syscall6(SYS_rt_sigaction, sig, (long)&dfl, 0, 8, 0, 0);
		} else {
			defer(sig, si, uc);
		}
		return;
	}
	if (mask & FAULTS) {
		/* The handler's mask blocks them; our reads need them. */
		uint64_t faults = FAULTS;
		ip_syscall6(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&faults, 0, 8, 0, 0);
	}
	mask &= ~deferred.added;
	deferred.added = 0;
	ip_inside++;
	struct ksa act = sig > 0 && sig <= KSIG_MAX ? sig_get(sig) : (struct ksa){ 0 };
	if (!is_fn(act.handler)) {
		/* Default, or a fault (which the kernel kills with even when
		 * ignored): the kernel's action. Ignored: dropped. */
		if (act.handler != (uint64_t)(uintptr_t)SIG_IGN || fault)
			default_action(sig, si);
		requeue_deferred();
		ip_inside--;
		return;
	}
	if (act.flags & SA_RESETHAND) {
		/* The kernel reset its own action; the program's goes too. Ours
		 * of SIGSEGV and SIGBUS stays (our reads' faults: the kernel
		 * holds it without SA_RESETHAND, kernel_action). */
		uint64_t old;
		sig_write_begin(&old);
		sigs.act[sig].handler = (uint64_t)(uintptr_t)SIG_DFL;
		sig_write_end(&old);
	}
	static __thread greg_t entry[NGREG] __attribute__((tls_model("initial-exec")));
	entry_regs(sig, si, uc, &act, entry);
	if (!g.active || getpid_raw() != g.pid)
		enter(entry, uc, mask); /* not checked here: straight in */
	lock();
	struct ip_thread *th = g.active ? self() : NULL;
	if (!th) {
		unlock();
		enter(entry, uc, mask);
	}
	struct sig_args a = { .th = th, .sig = sig, .uc = uc, .entry = entry };
	on_cstack(signal_stop, &a);
	unlock();
	*th->errp = th->prog_errno;
	if (a.deliver)
		enter(entry, uc, mask);
	requeue_deferred();
	ip_inside--;
}

/* ---- Start and end ------------------------------------------------------ */

static bool parse_env(void)
{
	const char *spec = getenv("BACKSTEP_INPROC");
	int pid, fd;
	unsigned image, flags, max_frames;
	if (!spec || sscanf(spec, "%d,%d,%u,%u,%u", &pid, &fd, &image, &flags, &max_frames) != 5 ||
	    (pid != getpid_raw() && pid != 0))
		return false;
	if (pid == 0) /* by hand, for debugging: any process */
		pid = getpid_raw();
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
	self_tid = 0;
	self_th = NULL;
	/* Copies of locks another thread may have held at the fork. */
	atomic_flag_clear(&sigs.lock);
	ip_heap_after_fork();
	if (!g.active)
		return;
	g.active = false;
	restore_all();
	close(g.fd);
	unlock();
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

static long raw_rt_sigaction(int sig, const struct ksa *act, struct ksa *old)
{
	return ip_syscall6(SYS_rt_sigaction, sig, (long)act, (long)old, 8, 0, 0);
}

/* Our entry for the program's action A (a handler) of SIG, as the kernel
 * is to hold it: the program's flags, mask and restorer (the kernel
 * builds the frame and blocks what it would for the handler), siginfo for
 * us, and SIGTRAP never blocked. */
static struct ksa entry_action(const struct ksa *a)
{
	struct ksa k = *a;
	k.handler = (uint64_t)(uintptr_t)ip_sig_entry;
	k.flags |= SA_SIGINFO;
	k.mask &= ~SIGBIT(SIGTRAP);
	return k;
}

/* What the kernel is to hold for the program's action A of SIG: our entry
 * for a handler; for SIGSEGV and SIGBUS always (our reads' faults come to
 * it, above "Reading memory"; the program's default or ignore is done
 * there); anything else as the program has it. */
static struct ksa kernel_action(int sig, const struct ksa *a)
{
	if (is_fn(a->handler)) {
		struct ksa k = entry_action(a);
		/* Not reset by the kernel: every fault of our reads comes to
		 * this entry, and the program's SA_RESETHAND is done by the
		 * entry itself (ip_on_signal). */
		if (sig == SIGSEGV || sig == SIGBUS)
			k.flags &= ~(uint64_t)SA_RESETHAND;
		return k;
	}
	if (sig == SIGSEGV || sig == SIGBUS)
		return (struct ksa){ .handler = (uint64_t)(uintptr_t)ip_sig_entry,
				     .flags = SA_SIGINFO | SA_RESTORER,
				     .restorer = (uint64_t)(uintptr_t)ip_restore_rt };
	return *a;
}

/* Fill the table from the kernel, taking over the handlers installed
 * before us (the C library's own, another preloaded library's). SIGTRAP
 * is ours already (ip_init). */
static void take_over_handlers(void)
{
	for (int sig = 1; sig <= KSIG_MAX; sig++) {
		struct ksa k;
		if (sig == SIGTRAP || sig == SIGKILL || sig == SIGSTOP || raw_rt_sigaction(sig, NULL, &k))
			continue;
		sigs.act[sig] = k;
		struct ksa e = kernel_action(sig, &k);
		if (memcmp(&e, &k, sizeof(e)))
			raw_rt_sigaction(sig, &e, NULL);
	}
}

/* Capstone allocates through the functions CS_OPT_MEM gives it (one
 * option for the process, before its first handle): the private heap's,
 * so that the decoder stays off the program's allocator even where the
 * program's executable defines malloc (and our exported one is not the
 * one found). It is linked to this library and given to src/insn
 * (insn_provide): loaded at the program's start, not by a dlopen, whose
 * dynamic loader allocates with the program's malloc. */
void *__wrap_malloc(size_t len);
void *__wrap_calloc(size_t n, size_t len);
void *__wrap_realloc(void *p, size_t len);
void __wrap_free(void *p);

static void capstone_mem(void)
{
	static cs_opt_mem mem = {
		.malloc = __wrap_malloc,
		.calloc = __wrap_calloc,
		.realloc = __wrap_realloc,
		.free = __wrap_free,
		.vsnprintf = vsnprintf,
	};
	cs_option(0, CS_OPT_MEM, (size_t)(uintptr_t)&mem);
	static const struct insn_capstone fns = {
		.open = cs_open,
		.option = cs_option,
		.malloc = cs_malloc,
		.free = cs_free,
		.close = cs_close,
		.disasm_iter = cs_disasm_iter,
		.insn_group = cs_insn_group,
		.reg_name = cs_reg_name,
	};
	insn_provide(&fns);
}

__attribute__((constructor)) static void ip_init(void)
{
	resolve_reals();
	g.real_sigaction = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(
		RTLD_NEXT, "sigaction");
	if (!g.real_sigaction || !parse_env())
		return;
	hide_environment();
	uint64_t mask;
	ip_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all_but_trap, (long)&mask, 8, 0, 0);
	ip_inside++;
	ip_heap_take_over();
	make_cstack();
	fcntl(g.fd, F_SETFD, FD_CLOEXEC); /* our exec wrappers keep it for our own image */
	/* SIGTRAP: the program's action as it was, then ours, which blocks
	 * every other signal while the driver works (they wait for the
	 * program). */
	raw_rt_sigaction(SIGTRAP, NULL, &sigs.act[SIGTRAP]);
	struct sigaction sa = { .sa_sigaction = on_trap,
				.sa_flags = SA_SIGINFO | SA_RESTART | SA_NODEFER };
	sigfillset(&sa.sa_mask);
	sigdelset(&sa.sa_mask, SIGTRAP);
	sigdelset(&sa.sa_mask, SIGSEGV);
	sigdelset(&sa.sa_mask, SIGBUS);
	struct ksa k;
	if (g.real_sigaction(SIGTRAP, &sa, NULL) != 0 || raw_rt_sigaction(SIGTRAP, NULL, &k) != 0)
		goto out;
	sigs.restore_rt = k.restorer; /* the C library's, which its sigaction gives */
	/* Ours returns through our own restorer (above, ip_sig_entry). */
	k.restorer = (uint64_t)(uintptr_t)ip_restore_rt;
	if (raw_rt_sigaction(SIGTRAP, &k, NULL) != 0)
		goto out;
	take_over_handlers();
	sigs.ready = true;
	mask &= ~SIGBIT(SIGTRAP);
	pthread_atfork(NULL, NULL, on_fork_child);
	g.drv.ops = &ip_ops;
	g.drv.arch = BK_ARCH_X86_64;
	const char *how = getenv("BACKSTEP_INPROC_STEP");
	g.step_tf = how && !strcmp(how, "tf");
	capstone_mem();
	if (!g.step_tf && insn_open(BK_ARCH_X86_64, &g.dec) != 0)
		g.step_tf = true;
	if (val_checker_open(&g.opts, &ip_ops, &g.drv, &g.res, &g.c) != 0) {
		val_inproc_send_result(g.fd, &g.res, g.image, true);
		goto out;
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
out:
	ip_inside--;
	ip_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&mask, 0, 8, 0, 0);
}

/* ---- What the program calls --------------------------------------------- */

EXPORT void _exit(int status)
{
	REAL(_exit);
	finish();
	real._exit(status);
	__builtin_unreachable();
}

EXPORT void _Exit(int status)
{
	_exit(status);
}

/* Signal actions: the kernel's rt_sigaction as the program sees it (its
 * own actions, ours hidden): 0 or -errno. A handler goes into the table
 * and our entry into the kernel (above, "Signals"); SIG_DFL and SIG_IGN go
 * to both. SIGTRAP stays ours in the kernel while we check, whatever the
 * program installs: the table says what the program's own SIGTRAPs get
 * (own_trap). */
static long prog_rt_sigaction(int sig, const struct ksa *act, struct ksa *old, size_t setsize)
{
	if (setsize != 8 || sig < 1 || sig > KSIG_MAX || (act && (sig == SIGKILL || sig == SIGSTOP)))
		return -EINVAL;
	struct ksa a = { 0 };
	if (act && raw_read((uint64_t)(uintptr_t)act, &a, sizeof(a)) != sizeof(a))
		return -EFAULT;
	uint64_t m;
	sig_write_begin(&m);
	struct ksa prev = sigs.act[sig];
	long rc = 0;
	if (act) {
		a.mask &= ~(SIGBIT(SIGKILL) | SIGBIT(SIGSTOP));
		bool ours = sig == SIGTRAP && g.active; /* stays ours */
		struct ksa k = kernel_action(sig, &a), held;
		if (!ours) {
			rc = raw_rt_sigaction(sig, &k, NULL);
			/* The flags as the kernel keeps them (it drops bits it
			 * does not know), where it keeps the program's. */
			if (!rc && (is_fn(a.handler) || !memcmp(&k, &a, sizeof(k))) &&
			    raw_rt_sigaction(sig, NULL, &held) == 0)
				a.flags = (held.flags & ~(uint64_t)(SA_SIGINFO | SA_RESETHAND)) |
					  (a.flags & (SA_SIGINFO | SA_RESETHAND));
		}
		if (!rc)
			sigs.act[sig] = a;
	}
	sig_write_end(&m);
	if (!rc && old && !raw_write((uint64_t)(uintptr_t)old, &prev, sizeof(prev)))
		rc = -EFAULT;
	return rc;
}

/* The C library's sigaction over it: its structure, its restorer, and its
 * own two signals (SIGCANCEL, SIGSETXID) refused as it refuses them. */
static int lib_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig == 32 || sig == 33) {
		errno = EINVAL;
		return -1;
	}
	struct ksa k = { 0 }, ko;
	if (act) {
		k.handler = (uint64_t)(uintptr_t)act->sa_handler;
		k.flags = (uint64_t)(unsigned)act->sa_flags | SA_RESTORER;
		k.restorer = sigs.restore_rt;
		memcpy(&k.mask, &act->sa_mask, sizeof(k.mask));
	}
	long rc = prog_rt_sigaction(sig, act ? &k : NULL, old ? &ko : NULL, 8);
	if (rc) {
		errno = (int)-rc;
		return -1;
	}
	if (old) {
		old->sa_handler = (sighandler_t)(uintptr_t)ko.handler;
		old->sa_flags = (int)ko.flags;
		old->sa_restorer = (void (*)(void))(uintptr_t)ko.restorer;
		memcpy(&old->sa_mask, &ko.mask, sizeof(ko.mask));
	}
	return 0;
}

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!sigs.ready) {
		if (!g.real_sigaction)
			*(void **)&g.real_sigaction = dlsym(RTLD_NEXT, "sigaction");
		return g.real_sigaction(sig, act, old);
	}
	return lib_sigaction(sig, act, old);
}

EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

/* A handler installed by one of the old interfaces: H for SIG with
 * FLAGS, SIG itself blocked in it or not. */
static sighandler_t install_old(int sig, sighandler_t h, bool block_self, int flags)
{
	if (h == SIG_ERR || sig < 1 || sig > KSIG_MAX) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (block_self)
		sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = flags;
	if (lib_sigaction(sig, &sa, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* signal(), bsd_signal(), ssignal(): the C library's BSD semantics (the
 * signal blocked in its handler, system calls restarted unless
 * siginterrupt said otherwise). */
static sighandler_t bsd_sig(int sig, sighandler_t h)
{
	bool intr = sig >= 1 && sig <= KSIG_MAX && (sigs.intr & SIGBIT(sig));
	return install_old(sig, h, true, intr ? 0 : SA_RESTART);
}

EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	if (!sigs.ready) {
		REAL(signal);
		return real.signal(sig, h);
	}
	return bsd_sig(sig, h);
}

EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return signal(sig, h);
}

EXPORT sighandler_t ssignal(int sig, sighandler_t h)
{
	return signal(sig, h);
}

/* System V's: reset to the default when delivered, not blocked in its
 * handler, no restart. */
EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	if (!sigs.ready) {
		REAL(sysv_signal);
		return real.sysv_signal(sig, h);
	}
	return install_old(sig, h, false,
			   (int)(SA_RESETHAND | SA_NODEFER | 0x20000000 /* SA_INTERRUPT */));
}

EXPORT sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	return sysv_signal(sig, h);
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
	return real.sigprocmask(how, keep_trap(how, set, &copy), old);
}

EXPORT int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(pthread_sigmask);
	sigset_t copy;
	return real.pthread_sigmask(how, keep_trap(how, set, &copy), old);
}

/* System V's sigset(): SIG_HOLD blocks SIG; anything else is its action,
 * and unblocks it. SIG_HOLD is returned when it was blocked. */
EXPORT sighandler_t sigset(int sig, sighandler_t disp)
{
	if (!sigs.ready) {
		REAL(sigset);
		return real.sigset(sig, disp);
	}
	sigset_t set, oset;
	sigemptyset(&set);
	if (sig < 1 || sig > KSIG_MAX || sigaddset(&set, sig) < 0) {
		errno = EINVAL;
		return SIG_ERR;
	}
	struct sigaction act, old;
	if (disp == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &set, &oset) < 0)
			return SIG_ERR;
		if (sigismember(&oset, sig))
			return SIG_HOLD;
		if (lib_sigaction(sig, NULL, &old) < 0)
			return SIG_ERR;
		return old.sa_handler;
	}
	memset(&act, 0, sizeof(act));
	act.sa_handler = disp;
	sigemptyset(&act.sa_mask);
	if (lib_sigaction(sig, &act, &old) < 0 || sigprocmask(SIG_UNBLOCK, &set, &oset) < 0)
		return SIG_ERR;
	return sigismember(&oset, sig) ? SIG_HOLD : old.sa_handler;
}

EXPORT int sigignore(int sig)
{
	if (!sigs.ready) {
		REAL(sigignore);
		return real.sigignore(sig);
	}
	struct sigaction act;
	memset(&act, 0, sizeof(act));
	act.sa_handler = SIG_IGN;
	sigemptyset(&act.sa_mask);
	return lib_sigaction(sig, &act, NULL);
}

EXPORT int siginterrupt(int sig, int interrupt)
{
	if (!sigs.ready) {
		REAL(siginterrupt);
		return real.siginterrupt(sig, interrupt);
	}
	struct sigaction act;
	if (lib_sigaction(sig, NULL, &act) < 0)
		return -1;
	uint64_t m;
	sig_write_begin(&m);
	if (interrupt)
		sigs.intr |= SIGBIT(sig);
	else
		sigs.intr &= ~SIGBIT(sig);
	sig_write_end(&m);
	if (interrupt)
		act.sa_flags &= ~SA_RESTART;
	else
		act.sa_flags |= SA_RESTART;
	return lib_sigaction(sig, &act, NULL);
}

EXPORT int sighold(int sig)
{
	REAL(sighold);
	return g.active && sig == SIGTRAP ? 0 : real.sighold(sig);
}

EXPORT int sigblock(int mask)
{
	REAL(sigblock);
	return real.sigblock(g.active ? mask & ~(1 << (SIGTRAP - 1)) : mask);
}

EXPORT int sigsetmask(int mask)
{
	REAL(sigsetmask);
	return real.sigsetmask(g.active ? mask & ~(1 << (SIGTRAP - 1)) : mask);
}

/* syscall(2) itself: rt_sigaction and rt_sigprocmask made through it are
 * the program's like the functions above. */
EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a[6];
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (nr == SYS_rt_sigaction && sigs.ready) {
		long rc = prog_rt_sigaction((int)a[0], (const struct ksa *)a[1], (struct ksa *)a[2],
					    (size_t)a[3]);
		if (rc < 0) {
			errno = (int)-rc;
			return -1;
		}
		return rc;
	}
	uint64_t set;
	if (nr == SYS_rt_sigprocmask && g.active && a[1] && (a[0] == SIG_BLOCK || a[0] == SIG_SETMASK) &&
	    raw_read((uint64_t)a[1], &set, 8) == 8 && (set & SIGBIT(SIGTRAP))) {
		set &= ~SIGBIT(SIGTRAP);
		a[1] = (long)&set;
	}
	REAL(syscall);
	return real.syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* Threads. */
struct start {
	void *(*fn)(void *);
	void *arg;
	uint64_t mask;           /* the creator's signal mask */
};

/* The new thread's stops outside any handler: it is in our code (unchecked),
 * so the checker lets it run free. */
static void thread_stop(void *arg)
{
	enum val_event_kind kind = *(enum val_event_kind *)arg;
	struct ip_thread *th = self();
	if (!th)
		return;
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
		bk_regs_set(&r, VAL_REG_PC, (uint64_t)(uintptr_t)&thread_stop);
		bk_regs_set(&r, VAL_REG_SP, (uint64_t)(uintptr_t)__builtin_frame_address(0));
		th->fake = &r;
		ev.kind = VAL_EV_STOPPED;
		val_checker_event(g.c, &ev);
		th->fake = NULL;
	}
}

static void thread_event(enum val_event_kind kind)
{
	uint64_t old;
	lock_outside(&old);
	if (g.active)
		on_cstack(thread_stop, &kind);
	unlock_outside(&old);
}

static void *thread_start(void *p)
{
	struct start s = *(struct start *)p;
	free(p);
	/* Born with every signal blocked (below): none comes before the
	 * checker knows the thread. */
	thread_event(VAL_EV_STOPPED);
	ip_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&s.mask, 0, 8, 0, 0);
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
		return real.pthread_create(t, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	/* The C library starts the thread with the mask it is created under,
	 * or the one ATTR gives (pthread_attr_setsigmask_np): every signal
	 * blocked either way, the mask it was to have given back by
	 * thread_start. ATTR's mask is set to that for the call (the C
	 * library reads it then) and put back after. */
	uint64_t all = all_but_trap, created_under;
	sigset_t amask, blocked;
	bool attr_mask = attr && pthread_attr_getsigmask_np(attr, &amask) == 0;
	ip_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&created_under, 8, 0, 0);
	s->mask = created_under;
	if (attr_mask) {
		memcpy(&s->mask, &amask, sizeof(s->mask));
		s->mask &= ~SIGBIT(SIGTRAP);
		sigfillset(&blocked);
		sigdelset(&blocked, SIGTRAP);
		pthread_attr_setsigmask_np((pthread_attr_t *)attr, &blocked);
	}
	int err = real.pthread_create(t, attr, thread_start, s);
	if (attr_mask)
		pthread_attr_setsigmask_np((pthread_attr_t *)attr, &amask);
	ip_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)&created_under, 0, 8, 0, 0);
	if (err)
		free(s);
	return err;
}

/* exec: this image's last snapshot, and the next image numbers itself one
 * more (in the environment it inherits, or is given). */
/* Ours in the environment (made by val_inproc.c): the program does not see
 * them (under ptrace it would not have them: a program that reads its
 * environment, a shell, Python's os.environ, would run differently), and
 * an exec of ours puts them back. */
static struct {
	char from[600], only[4200]; /* "BACKSTEP_INPROC_FROM=...", or "" */
	char lib[4096];             /* our path, LD_PRELOAD's first */
	char preload[4200];         /* "LD_PRELOAD=" the rest of it */
} ours;

static bool is_ours(const char *e)
{
	return !strncmp(e, "BACKSTEP_INPROC=", 16) || !strncmp(e, "BACKSTEP_INPROC_FROM=", 21) ||
	       !strncmp(e, "BACKSTEP_INPROC_ONLY=", 21);
}

/* Called once the environment was read (parse_env): no allocation, the
 * entries moved within the program's environ. */
static void hide_environment(void)
{
	extern char **environ;
	const char *from = getenv("BACKSTEP_INPROC_FROM"), *only = getenv("BACKSTEP_INPROC_ONLY");
	if (from)
		snprintf(ours.from, sizeof(ours.from), "BACKSTEP_INPROC_FROM=%s", from);
	if (only)
		snprintf(ours.only, sizeof(ours.only), "BACKSTEP_INPROC_ONLY=%s", only);
	size_t k = 0;
	for (size_t i = 0; environ && environ[i]; i++) {
		char *e = environ[i];
		if (is_ours(e))
			continue;
		if (!strncmp(e, "LD_PRELOAD=", 11) && !ours.lib[0]) {
			const char *v = e + 11;
			size_t n = strcspn(v, ": ");
			snprintf(ours.lib, sizeof(ours.lib), "%.*s", (int)n, v);
			v += n;
			v += strspn(v, ": ");
			if (!*v)
				continue;
			snprintf(ours.preload, sizeof(ours.preload), "LD_PRELOAD=%s", v);
			e = ours.preload;
		}
		environ[k++] = e;
	}
	if (environ)
		environ[k] = NULL;
}

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
	const char *theirs = NULL; /* the program's own LD_PRELOAD */
	for (size_t i = 0; i < n; i++) {
		if (!strncmp(envp[i], "LD_PRELOAD=", 11))
			theirs = envp[i] + 11;
		else if (!is_ours(envp[i]))
			out[k++] = envp[i];
	}
	if (ours.from[0])
		out[k++] = ours.from;
	if (ours.only[0])
		out[k++] = ours.only;
	size_t len = 11 + strlen(ours.lib) + (theirs ? strlen(theirs) + 1 : 0) + 1;
	char *pre = malloc(len);
	if (pre) {
		snprintf(pre, len, "LD_PRELOAD=%s%s%s", ours.lib, theirs && theirs[0] ? ":" : "",
			 theirs ? theirs : "");
		out[k++] = pre;
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
	if (!g.active || getpid_raw() != g.pid)
		return real.execve(path, argv, envp);
	char spec[160];
	char **env = exec_env(envp, spec, sizeof(spec));
	before_exec();
	int rc = real.execve(path, argv, env ? env : (char **)envp);
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
	if (!g.active || getpid_raw() != g.pid)
		return real.execvpe(file, argv, envp);
	char spec[160];
	char **env = exec_env(envp, spec, sizeof(spec));
	before_exec();
	int rc = real.execvpe(file, argv, env ? env : (char **)envp);
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
/* The exit of a map call of a thread at full speed, reported as the
 * ptrace driver's system-call stop is: the checker may read the map now,
 * before the thread runs what it mapped (a JIT's code). */
static void map_stop(void *arg)
{
	struct ip_thread *th = self_th;
	if (!th || th->tid != self_tid || !th->sys_stops)
		return;
	struct bk_regs r;
	memset(&r, 0, sizeof(r));
	bk_regs_set(&r, VAL_REG_PC, (uint64_t)(uintptr_t)&map_stop);
	bk_regs_set(&r, VAL_REG_SP, (uint64_t)(uintptr_t)__builtin_frame_address(0));
	th->fake = &r;
	struct val_event ev = { .kind = VAL_EV_SYSCALL, .tid = th->tid, .exit = true,
				.nr = *(const long *)arg, .maps_changed = maps_changed() };
	val_checker_event(g.c, &ev);
	th->fake = NULL;
}

/* After the program's call NR (SYS_mmap, ...; not the driver's own). */
static void count_map_call(long nr)
{
	if (ip_inside)
		return;
	atomic_fetch_add_explicit(&map_calls, 1, memory_order_relaxed);
	if (!g.active || !self_th || self_th->tid != self_tid || !self_th->sys_stops)
		return;
	uint64_t old;
	lock_outside(&old);
	if (g.active)
		on_cstack(map_stop, &nr);
	unlock_outside(&old);
}

/* Both names, each by its own symbol (with _FILE_OFFSET_BITS=64 the
 * header renames mmap to mmap64). */
static void *count_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	REAL(mmap);
	void *p = real.mmap(addr, len, prot, flags, fd, off);
	count_map_call(SYS_mmap);
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
	int rc = real.munmap(addr, len);
	count_map_call(SYS_munmap);
	return rc;
}

EXPORT int mprotect(void *addr, size_t len, int prot)
{
	REAL(mprotect);
	int rc = real.mprotect(addr, len, prot);
	count_map_call(SYS_mprotect);
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
	void *p = real.mremap(old, old_len, new_len, flags, new_addr);
	count_map_call(SYS_mremap);
	return p;
}
