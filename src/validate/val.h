/* The validator: runs a program under a driver (below, "Drivers"),
 * single-steps every instruction of the checked code of every thread (code
 * elsewhere runs at full speed between a call into it and the return,
 * val_run.c "Stepping over"; opts.step_all steps it too) and keeps a shadow
 * stack per thread, the oracle of DESIGN.md "Proof of correctness". At
 * every instruction of the checked code it unwinds the stopped thread with
 * the ordinary cursor over the space the driver gives (the shadow stack
 * never helps the unwinder) and compares each frame the shadow stack knows:
 * return address, CFA and callee-saved registers.
 *
 * The shadow stack. At a call (x86-64 `call`, all forms; AArch64 `bl`,
 * `blr` and their authenticated forms) it records, after the step, the
 * return address (the address after the call), the CFA (the caller's SP
 * at the call: the callee's SP + 8 on x86-64, its SP on AArch64) and the
 * caller's callee-saved registers (x86-64: rbx, rbp, r12-r15; AArch64:
 * x19-x29, d8-d15) as they were at the call. An entry is dead once SP >=
 * its CFA (> on AArch64, or a `ret` back to it): that is a return, a
 * longjmp or a C++ exception landing in an outer frame. A tail call (jmp;
 * b, br) changes nothing: the callee inherits the caller's return
 * address. What differs per architecture is data (struct val_arch). Signal
 * delivery pushes a marker with the interrupted registers and an entry for
 * the handler's return into the sigreturn trampoline; rt_sigreturn pops
 * down to the marker. Frames made by code that ran at full speed are a
 * gap (VAL_FRAME_GAP): the walk crosses it to the frame below it by CFA.
 *
 * One checker (val_run.c: threads, shadow stacks, stepping over, the
 * comparison of val_check.c) over one driver per way of running a program
 * (val_ptrace.c; val_gdbremote.c over val_rsp.c's parser; val_inproc.c
 * with inproc_preload.c, which runs the checker inside the program).
 * Layers: uses src/unwind (spaces, cursor), src/sym through
 * bk_space_symbolize, Capstone for decoding, and, in the ptrace driver
 * only, src/target and the ptrace target (uw_target_adopt). Nothing below
 * calls it. Cold: it allocates freely and prints nothing (the CLI reports).
 */
#ifndef BK_VAL_H
#define BK_VAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backstep.h"
#include "../arch/arch.h"
#include "../base/base.h"

/* ---- Options and results ------------------------------------------------ */

struct val_stats;
struct val_driver_ops;
struct val_driver_opts;

struct val_opts {
	size_t size;              /* sizeof(struct val_opts) */
	/* What is checked. A name with a '/' is a module's path; a name with
	 * ".so", the executable's file name or "[vdso]" is a module's file
	 * name ("libc.so.6"); any other name is a function (as symbolized,
	 * or a C++ name without its parameter list). No names: the program's
	 * executable. Other code is single-stepped and its frames are
	 * compared when checked code calls through it, but no walk starts in
	 * it. */
	const char *const *only;
	size_t nonly;
	/* Start at the first instruction of this function of the executable
	 * (run at full speed until then: the frames above it are not known
	 * and not compared). NULL: the executable's entry point, where the
	 * shadow stack knows every frame. */
	const char *from;
	bool fp_only;             /* --method fp: the space ignores CFI */
	/* --method fast: also walk with the PC-only walk of bk_backtrace
	 * (src/unwind/fast.c, its hot loop reading a copy of the thread's
	 * stack) and require exactly the cursor's PCs. */
	bool fast_walk;
	unsigned max_frames;      /* compare at most this many frames (0: all) */
	/* Called about once a second from the stepping loop. */
	void (*progress)(void *ctx, const struct val_stats *st);
	void *progress_ctx;
	/* When set to non-zero (from a signal handler), the program is killed
	 * and the run ends with what was checked so far. */
	volatile sig_atomic_t *stop;
	/* Single-step every instruction, unchecked code too. Otherwise a
	 * thread that enters unchecked code runs at full speed until it comes
	 * back (val_run.c, "Stepping over"). */
	bool step_all;
	/* How the program is run: NULL is the ptrace driver; DRIVER_OPTS
	 * (may be NULL) says where a remote one finds its stub. */
	const struct val_driver_ops *driver;
	const struct val_driver_opts *driver_opts;
	/* Without DRIVER: in-process (val_inproc.c) where it applies, else
	 * ptrace with a note (AUTO); ptrace (NEVER); in-process or an error
	 * saying why not (ONLY). */
	enum val_inproc_choice { VAL_INPROC_AUTO = 0, VAL_INPROC_NEVER, VAL_INPROC_ONLY } inproc;
};

struct val_stats {
	uint64_t insns_stepped;   /* single-steps of every thread */
	uint64_t insns_checked;   /* of these, walks compared (checked code) */
	uint64_t distinct_pcs;    /* distinct PCs checked */
	uint64_t frames_checked;  /* frames compared with a shadow entry */
	uint64_t regs_checked;    /* callee-saved registers compared */
	uint64_t walk_ends;       /* walks whose end was checked (shadow complete) */
	uint64_t bad_insns;       /* checked instructions with a mismatch where the
				   * culprit has CFI (or any, with fp_only) */
	uint64_t nocfi_insns;     /* ... where no CFI covers the culprit: the
				   * fallback guessed wrong (not counted above) */
	uint64_t frames_fallback; /* matching frames made without CFI (fp, scan) */
	uint64_t fast_walks;      /* --method fast: PC-only walks compared */
	uint64_t fast_frames;     /* ... their frames, each equal to the cursor's */
	uint64_t fast_handovers;  /* ... walks it handed to the cursor (-1) */
	uint64_t threads;         /* threads seen stepping */
	uint64_t signals;         /* handler entries */
	uint64_t execs;
	uint64_t anomalies;       /* returns to an address the shadow did not expect */
	uint64_t refreshes;       /* module list re-read after new code was mapped */
	uint64_t free_runs;       /* stretches of unchecked code run at full speed */
	uint64_t reentries;       /* checked code entered from such a stretch other
				   * than by the return it waited for (a callback,
				   * a signal, a longjmp or exception) */
	uint64_t breakpoints;     /* breakpoints on entries into checked code */
	double seconds;           /* wall time since the first step */
};

/* Why a walk disagreed with the shadow stack, first wrong frame only. */
enum val_kind {
	VAL_VALUES = 0,   /* the frame exists but PC, SP or a register is wrong */
	VAL_WALK_SHORT,   /* the walk ended (0 or an error) before the shadow stack */
	VAL_WALK_LONG,    /* the walk went past the outermost frame */
	VAL_WALK_ERROR,   /* the walk ended with an error at the outermost frame */
	VAL_FAST,         /* --method fast: the PC-only walk's PCs differ from the
			   * cursor's (diffs[0]: expected the cursor's PC, got
			   * the fast walk's; not valid when that walk ended) */
};

/* Besides DWARF numbers, a difference names the PC, the SP (the CFA) or
 * VAL_HOW, the "how" check of a signal frame. */
#define VAL_HOW 1000
#define VAL_REG_PC 1001
#define VAL_REG_SP 1002

struct val_diff {
	unsigned regno;           /* DWARF number, or VAL_HOW */
	uint64_t expected;
	uint64_t got;
	bool got_valid;           /* false: the cursor did not recover it */
};

#define VAL_MAX_DIFFS 20
#define VAL_SITE_UNKNOWN UINT64_MAX

/* One location where walks went wrong: the culprit is the frame whose step
 * produced the first wrong frame (frame - 1), at its lookup PC. Mismatches
 * are grouped by culprit; the first occurrence is kept in full. Strings are
 * made when it is first seen (a later exec drops the modules). */
struct val_mismatch {
	uint64_t culprit_pc;      /* lookup PC (PC for frame 0, RA - 1 above) */
	uint64_t culprit_site;    /* the instruction that made the culprit frame: 0
				   * the checked one, VAL_SITE_UNKNOWN a frame of
				   * code that ran at full speed */
	uint64_t image;           /* exec generation: 0 for the first image */
	uint64_t count;           /* checked instructions that showed it */
	uint64_t pcs;             /* distinct checked PCs among them (approximate) */
	uint64_t last_pc;
	/* The first occurrence. */
	int tid;
	uint64_t insn_pc;         /* the checked instruction */
	unsigned frame;           /* first wrong frame; 1 = caller of the innermost */
	enum val_kind kind;
	int step_result;          /* bk_cursor_step's return for WALK_* */
	enum bk_frame_how how;    /* how the cursor made the frame (VALUES) */
	bool nocfi;               /* no CFI covers culprit_pc: a fallback's guess */
	bool lazy;                /* wrong only when registers were read at the
				   * last frame, right when read at every frame */
	unsigned ndiffs;
	struct val_diff diffs[VAL_MAX_DIFFS];
	/* Descriptions. */
	char *module;             /* the culprit's module path, or NULL */
	char *function;           /* the culprit's function, or NULL */
	uint64_t offset;          /* culprit_pc - function start */
	char *culprit_insn;       /* the culprit's instruction ("call 0x1234") */
	char *row;                /* the CFI row in force at culprit_pc, or why none */
	char *insn_module, *insn_function;
	uint64_t insn_offset;
	char *insn_text;          /* the checked instruction */
};

struct val_result {
	struct val_stats stats;
	int status;               /* the program's wait status */
	bool exited;              /* status is valid */
	bool interrupted;         /* opts->stop fired */
	bool started;             /* checking started (the entry or --from was reached) */
	enum bk_arch arch;        /* the program's (names of diffs' registers) */
	char *error;              /* why the run stopped early, or NULL */
	const char *driver;       /* the driver that ran it: "ptrace", "inproc" */
	char *note;               /* why the driver asked for was not used, or NULL */
	struct val_mismatch *mm;  /* grouped mismatches, in the order first seen */
	size_t nmm;
};

/* Run ARGV[0] (searched in PATH) with ARGV under the validator. Returns 0
 * when the program ran (RES filled; mismatches or not) or a BK_E_* code
 * with RES->error saying why. Free RES with val_result_free. */
BK_HIDDEN int val_run(char *const *argv, const struct val_opts *opts, struct val_result *res);
BK_HIDDEN void val_result_free(struct val_result *res);
/* The name of a DWARF register of ARCH, or of VAL_HOW ("how"), VAL_REG_PC,
 * VAL_REG_SP. */
BK_HIDDEN const char *val_reg_name(enum bk_arch arch, unsigned regno);

/* ---- Architectures --------------------------------------------------------
 *
 * What the checker must know of an architecture besides what src/arch says:
 * registers are kept in src/arch's slots (x86-64: DWARF 0..16 and rflags;
 * AArch64: x0..x30, sp, pc, d8..d15), masks are over slots. */
struct val_arch {
	enum bk_arch arch;
	const struct arch_info *ai;
	unsigned sp, pc;          /* slots of the SP and the PC */
	/* A call pushes RA_SIZE bytes of return address (x86-64: 8; the
	 * callee's SP is its CFA - 8) or none (AArch64: 0, the return address
	 * is in the link register, slot LR, and a callee's SP is its CFA). */
	unsigned ra_size;
	unsigned lr;
	uint64_t callee_saved;    /* slots a caller's frame must get back */
	uint64_t signal_known;    /* slots a signal frame must give back */
	uint64_t fp_saved;        /* --method fp: what a frame-pointer walk recovers */
	unsigned nr_reg;          /* slot of the system call number */
	unsigned sig_reg;         /* slot of a handler's first argument */
	unsigned restart_len;     /* a restarted system call: PC moved back so far */
	uint8_t syscall_insn[4];  /* the system call instruction (syscall; svc #0) */
	uint8_t syscall_len;
	uint64_t nr_mmap, nr_mprotect, nr_munmap, nr_mremap, nr_pkey_mprotect, nr_rt_sigreturn;
};
/* NULL when the validator does not know ARCH. */
BK_HIDDEN const struct val_arch *val_arch_get(enum bk_arch arch);

/* ---- Drivers ------------------------------------------------------------
 *
 * A driver runs the program and reports what its threads do, one stop at a
 * time; the checker (val_run.c) keeps the shadow stacks, decides how each
 * thread goes on and walks the space the driver gives. The checker knows
 * the program only through these ops, and every op is required. One file
 * per driver; how each maps them:
 *
 *   op           ptrace (val_ptrace.c)              GDB remote (qemu-user,
 *                                                   gdbserver)
 *   start        fork, PTRACE_SEIZE, exec           connect (start `qemu -g` first),
 *                                                   qSupported, ?, qXfer auxv
 *   wait         waitpid                            stop replies: T, W, X
 *   resume       PTRACE_SINGLESTEP, PTRACE_CONT,    vCont;s / vCont;c (a breakpoint
 *                PTRACE_SYSCALL                     on r_debug.r_brk stands in for
 *                                                   the system-call stops)
 *   interrupt    PTRACE_INTERRUPT                   \x03
 *   regs         PTRACE_GETREGS                     g and p, renumbered by the
 *                                                   target description's names
 *   read         process_vm_readv                   m
 *   insert_bp    int3 through /proc/PID/mem         Z0 (z0 to remove)
 *   catches      SigCgt of /proc/PID/status         cannot tell: true
 *   space_*      a ptrace target: /proc/PID/maps,   qXfer:libraries-svr4, or the
 *                the files by path                  linker's r_debug list; the
 *                                                   files under the sysroot
 *
 * The in-process driver (val_inproc.c, inproc_preload.c) has no wait: the
 * program steps itself (int3s planted where each instruction goes, the
 * trap flag where that cannot be told, the commonest instructions made by
 * the handler itself) and its SIGTRAP handler and signal entry push each
 * stop into the checker (below, "The checker, pushed to"); it takes
 * registers from the handler's ucontext, reads memory directly, writes
 * int3s into code pages made writable, and sees no system call of a thread
 * at full speed (it says maps_changed when the dynamic loader's list of
 * modules changed) but the exits of the C library's mmap, munmap,
 * mprotect and mremap called by the program, which it reports as
 * system-call stops to a thread resumed with VAL_RESUME_SYSCALLS.
 *
 * Threads are independent: each stops on its own, is reported once per
 * stop and stays stopped until the checker resumes it (an all-stop stub's
 * driver keeps the other threads going meanwhile). A stopped thread's
 * registers and the program's memory can be read at any time; reads never
 * show the driver's breakpoints (the overlay is the driver's).
 */

enum val_resume {
	/* One instruction, then VAL_EV_STEPPED; a signal to be delivered
	 * first is VAL_EV_SIGNAL. Stepping where a breakpoint is set runs the
	 * program's instruction. Stepping with a signal the program catches
	 * stops at the handler's first instruction, not yet run, the signal
	 * frame pushed. */
	VAL_RESUME_STEP,
	/* Full speed until a breakpoint, a signal, a new thread, exec or
	 * exit. */
	VAL_RESUME_RUN,
	/* The same, and a stop at each system call's entry and exit. */
	VAL_RESUME_SYSCALLS,
};

enum val_event_kind {
	VAL_EV_NONE = 0,    /* the wait was interrupted (a signal to the
			     * validator): nothing happened; look at opts.stop
			     * and wait again */
	VAL_EV_STEPPED,     /* the step is done: the thread stands at its next
			     * instruction */
	VAL_EV_BREAKPOINT,  /* a thread at full speed reached the breakpoint at
			     * ADDR: its PC is ADDR, the instruction there not run */
	VAL_EV_SIGNAL,      /* SIG is about to be delivered: the next resume passes
			     * it on (or 0 drops it) */
	VAL_EV_SYSCALL,     /* VAL_RESUME_SYSCALLS: system call NR enters (or, with
			     * EXIT, returns) */
	VAL_EV_STOPPED,     /* stopped with nothing to tell: a new thread's first
			     * stop, or after interrupt */
	VAL_EV_THREAD,      /* the thread made thread CHILD, already under the
			     * driver (CHILD's own stops may come first) */
	VAL_EV_EXEC,        /* the thread executed a new program and is its only
			     * thread: the others, every breakpoint and the space are
			     * gone. The first event of a run */
	VAL_EV_EXITED,      /* the thread is gone (nothing to resume); PROGRAM: the
			     * program is over (STATUS, and ERROR when it never ran) */
};

struct val_event {
	enum val_event_kind kind;
	int tid;
	int sig;                  /* SIGNAL */
	uint64_t addr;            /* BREAKPOINT */
	uint64_t nr;              /* SYSCALL: the system call number */
	bool exit;                /* SYSCALL: its exit, not its entry */
	int child;                /* THREAD */
	uint64_t entry;           /* EXEC: where the program starts (AT_ENTRY) */
	const char *exe;          /* EXEC: a path the checker can open the
				   * executable by (for --from) */
	bool program;             /* EXITED: the last of the program */
	int status;               /* EXITED with PROGRAM: the wait status */
	const char *error;        /* EXITED with PROGRAM: why the program could
				   * not be started, or NULL */
	/* The map may have changed since this thread's last stop: a driver
	 * that sees no system calls of threads at full speed says so at
	 * their next stop. */
	bool maps_changed;
};

struct val_driver_opts {
	size_t size;              /* sizeof(struct val_driver_opts) */
	/* The checker will run threads at full speed (VAL_RESUME_SYSCALLS)
	 * and set breakpoints besides the one where checking starts: a driver
	 * whose breakpoints are bytes in the program's memory keeps them out
	 * of the processes the program forks. */
	bool run_free;
	/* The GDB remote driver: a stub listening at REMOTE ("HOST:PORT"),
	 * or, with QEMU, qemu-user started on the program (qemu-aarch64 for
	 * an AArch64 program) with -L SYSROOT and -cpu QEMU_CPU. The
	 * program's files are looked up under SYSROOT first (NULL: for an
	 * AArch64 program /usr/aarch64-linux-gnu). TIMEOUT_MS bounds every
	 * wait for the stub (0: 30 s). */
	const char *remote;
	bool qemu;
	const char *sysroot;
	const char *qemu_cpu;
	unsigned timeout_ms;
};

/* One program under a driver: the first member of the driver's state. */
struct val_driver {
	const struct val_driver_ops *ops;
	enum bk_arch arch;        /* the program's, set by start */
	const char *lost;         /* why wait failed (one line), or NULL */
};

/* Strings and events a driver returns stay valid until its next wait. */
struct val_driver_ops {
	size_t size;              /* sizeof(struct val_driver_ops) */
	/* Start ARGV[0] (searched in PATH) with ARGV; nothing is reported
	 * before its first VAL_EV_EXEC but its VAL_EV_EXITED. 0 or a BK_E_*
	 * code with WHY (one line) saying why. */
	int (*start)(char *const *argv, const struct val_driver_opts *opts,
		     struct val_driver **out, char *why, size_t whylen);
	/* Free D and its space; what is left of the program dies. */
	void (*close)(struct val_driver *d);
	/* The next event: 1 with *EV filled, 0 when nothing is left to
	 * report, or a BK_E_* code when the program was lost. */
	int (*wait)(struct val_driver *d, struct val_event *ev);
	/* Resume stopped thread TID, passing signal SIG (0: none).
	 * BK_E_NOT_FOUND: it is gone (its exit follows). */
	int (*resume)(struct val_driver *d, int tid, enum val_resume how, int sig);
	/* Stop thread TID, which runs: 0, and VAL_EV_STOPPED follows unless
	 * it stops otherwise first; BK_E_NOT_FOUND, and nothing follows. */
	int (*interrupt)(struct val_driver *d, int tid);
	/* Kill the program: the exits of its threads follow. */
	void (*kill)(struct val_driver *d);
	/* The registers of stopped thread TID under their DWARF numbers:
	 * every general register and the PC (x86-64: 0..16) and rflags.
	 * BK_E_NOT_FOUND: it is gone (its exit follows). */
	int (*regs)(struct val_driver *d, int tid, struct bk_regs *out);
	/* Up to LEN bytes of memory at ADDR, as the program reads them:
	 * how many could be read (a prefix; 0: none). */
	size_t (*read)(struct val_driver *d, uint64_t addr, void *dst, size_t len);
	/* A breakpoint at ADDR: a thread at full speed reaching it reports
	 * VAL_EV_BREAKPOINT. One that is set already stays (0). BK_E_MEMORY:
	 * no code there to set it in. */
	int (*insert_bp)(struct val_driver *d, uint64_t addr);
	/* Take it out. RESTORE false: the code under it is gone (unmapped or
	 * replaced) and must not be written. */
	void (*remove_bp)(struct val_driver *d, uint64_t addr, bool restore);
	/* Whether the program has a handler for SIG; true when it cannot be
	 * told (the checker then knows a handler by its first stop). */
	bool (*catches)(struct val_driver *d, int sig);
	/* The program's space, opened with thread TID stopped: modules from
	 * its map (the checker finds function entries in space->mods), memory
	 * read as read() reads it, owned by the driver until the next exec or
	 * close. Refresh after a system call may have mapped code
	 * (*ADDED: modules added; none are dropped). Invalidate before a walk:
	 * forget memory the program may have written since the last. */
	int (*space_open)(struct val_driver *d, int tid, struct bk_space **out);
	int (*space_refresh)(struct val_driver *d, size_t *added);
	void (*space_invalidate)(struct val_driver *d);
};

/* The program as a child of ours, under ptrace (x86-64 Linux). */
BK_HIDDEN extern const struct val_driver_ops val_ptrace_driver;
/* The program under a GDB remote stub: qemu-user's gdbstub, gdbserver
 * (val_gdbremote.c). */
BK_HIDDEN extern const struct val_driver_ops val_gdbremote_driver;

/* ---- The GDB remote serial protocol (val_rsp.c) -------------------------
 *
 * Parsing only, bytes in: no I/O, no allocation, every input bounded, so a
 * fuzzer feeds it the same way the driver does (fuzz/fuzz_rsp.c). */

#define VAL_RSP_MAX 16384     /* the longest packet payload accepted, decoded */

enum val_rsp_item {
	VAL_RSP_NONE = 0,         /* the bytes fed so far make nothing yet */
	VAL_RSP_PACKET,           /* a packet, checksum right: data, len */
	VAL_RSP_BAD,              /* a packet with a wrong checksum, or longer
				   * than VAL_RSP_MAX (discarded) */
	VAL_RSP_ACK,              /* '+' */
	VAL_RSP_NACK,             /* '-' */
	VAL_RSP_JUNK,             /* a byte outside any packet (ignored) */
};

struct val_rsp_parser {
	uint8_t state;            /* private */
	uint8_t sum, csum;
	bool escape, overflow;
	size_t len;               /* PACKET: payload bytes in data */
	uint8_t data[VAL_RSP_MAX + 1]; /* PACKET: the payload, NUL-terminated */
};
BK_HIDDEN void val_rsp_init(struct val_rsp_parser *p);
/* Feed up to LEN bytes; stops after the first complete item (*ITEM, NONE
 * when none). Returns how many bytes were used. A packet's payload is
 * decoded: '}' escapes and '*' run-lengths undone. */
BK_HIDDEN size_t val_rsp_feed(struct val_rsp_parser *p, const uint8_t *in, size_t len,
			      enum val_rsp_item *item);
/* The packet "$DATA#cs" for the LEN bytes of DATA into OUT (OUTLEN bytes):
 * its length, or 0 when it does not fit ('$', '#', '}', '*' in DATA are
 * escaped). */
BK_HIDDEN size_t val_rsp_frame(const char *data, size_t len, char *out, size_t outlen);

/* HEX (LEN characters) to bytes in OUT (at most MAX): how many, or -1 when
 * a character is not a hex digit or the length is odd. */
BK_HIDDEN long val_rsp_unhex(const char *hex, size_t len, uint8_t *out, size_t max);
/* A hex number at *S (up to END), advancing *S: false when there is none
 * or it does not fit 64 bits. */
BK_HIDDEN bool val_rsp_hexnum(const char **s, const char *end, uint64_t *v);

/* A stop reply: T/S (stopped by signal SIG), W (exited with CODE), X
 * (killed by signal SIG), O (console output). Signal numbers are GDB's. */
struct val_rsp_stop {
	char kind;                /* 'T' (S too), 'W', 'X', 'O' */
	int sig;
	int code;
	bool have_thread;
	uint64_t pid, tid;        /* thread:[pPID.]TID (no pid: 0) */
	bool swbreak;
};
/* 0, or BK_E_CORRUPT when PKT (LEN bytes) is no stop reply. */
BK_HIDDEN int val_rsp_parse_stop(const char *pkt, size_t len, struct val_rsp_stop *out);
/* GDB's signal number to Linux's (0 when it has none), and back. */
BK_HIDDEN int val_rsp_gdb_to_linux_sig(int gdb);
BK_HIDDEN int val_rsp_linux_to_gdb_sig(int sig);

/* Registers of a target description (GDB's target.xml and the files it
 * includes): each <reg> element's name, size and number (default: the
 * previous one's + 1, across files, as GDB numbers them). */
#define VAL_RSP_MAX_REGS 2048
#define VAL_RSP_MAX_INCLUDES 8
struct val_rsp_tdesc {
	unsigned nregs, next;
	struct { char name[16]; unsigned bits, regnum; } reg[VAL_RSP_MAX_REGS];
	unsigned nincludes;
	char include[VAL_RSP_MAX_INCLUDES][64];
	char arch[32];            /* <architecture>, "" when absent */
};
/* Adds the registers of XML (LEN bytes) to TD; 0, BK_E_LIMIT (too many),
 * BK_E_CORRUPT (a <reg> without a name or size, or with an absurd one). */
BK_HIDDEN int val_rsp_tdesc_parse(const char *xml, size_t len, struct val_rsp_tdesc *td);

/* qXfer:libraries-svr4's list: FN for each <library name= lm= l_addr=
 * l_ld=> (the name with &amp; &lt; &gt; &quot; &apos; decoded, at most 4095
 * bytes); MAIN_LM gets main-lm (0: absent). 0 or BK_E_CORRUPT. */
BK_HIDDEN int val_rsp_svr4_parse(const char *xml, size_t len, uint64_t *main_lm,
				 void (*fn)(void *ctx, const char *name, uint64_t lm,
					    uint64_t l_addr, uint64_t l_ld),
				 void *ctx);

/* ---- The checker, pushed to ---------------------------------------------
 *
 * val_run pulls events from a driver's wait and hands each to the checker.
 * A driver that runs inside the program (val_inproc.c) has no loop to be
 * pulled from: it opens a checker over itself and pushes each event as it
 * happens, the checker calling back into its ops as val_run's would. */
struct val_checker;
/* Zeroes RES; D is the driver the checker calls (it may be NULL until the
 * first event: it is not called before). */
BK_HIDDEN int val_checker_open(const struct val_opts *o, const struct val_driver_ops *dops,
			       struct val_driver *d, struct val_result *res,
			       struct val_checker **out);
/* Handle one event. False when the program is over. */
BK_HIDDEN bool val_checker_event(struct val_checker *c, const struct val_event *ev);
/* Bring RES's seconds up to date (for a snapshot of the result). */
BK_HIDDEN void val_checker_sync(struct val_checker *c);
/* Free the checker (not RES, not the driver). */
BK_HIDDEN void val_checker_close(struct val_checker *c);

/* The in-process driver (val_inproc.c), the validator's side: run ARGV
 * with the preload library (inproc_preload.c) that steps and checks the
 * program inside itself, and collect its result. BK_E_UNSUPPORTED with
 * NOTE saying why when it does not apply to this program and nothing was
 * run; the caller then uses the ptrace driver. */
BK_HIDDEN int val_inproc_run(char *const *argv, const struct val_opts *o, struct val_result *res,
			     char *note, size_t notelen);
/* The program's side of its pipe (val_inproc.c, "The wire format"): a
 * snapshot of RES for image IMAGE (FINAL: its last), or a text message
 * ('E': the exec's errno). 0 or a BK_E_* code. */
BK_HIDDEN int val_inproc_send_result(int fd, const struct val_result *res, uint32_t image,
				     bool final);
BK_HIDDEN int val_inproc_send_text(int fd, uint8_t type, const char *text);

/* ---- Internal ----------------------------------------------------------- */

/* Instruction classes that move the shadow stack. */
enum val_insn_kind {
	VAL_INSN_OTHER = 0,
	VAL_INSN_CALL,            /* call rel32, call r/m64 (pushes the RA);
				   * bl, blr, blraa... (sets x30) */
	VAL_INSN_RET,             /* ret, ret imm16; ret, retaa, retab */
	VAL_INSN_SYSCALL,         /* syscall; svc */
	VAL_INSN_UNKNOWN,         /* could not be read or decoded */
};

/* Per-PC facts, decoded once: the code is assumed not to change (the
 * cache is cleared on exec and when new code is mapped). */
struct val_code {
	uint64_t pc;
	uint8_t len;
	uint8_t kind;             /* enum val_insn_kind */
	uint8_t checked;          /* 0 no, 1 yes, 2 not yet decided */
	uint8_t seen;             /* checked at least once (distinct PCs) */
};

struct val_decoder;
BK_HIDDEN int val_decoder_open(enum bk_arch arch, struct val_decoder **out);
BK_HIDDEN void val_decoder_close(struct val_decoder *d);
/* Classify the instruction in BYTES (LEN bytes available) at PC. */
BK_HIDDEN void val_decode(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
			  struct val_code *out);
/* "mnemonic operands" of the instruction at PC, into BUF. */
BK_HIDDEN void val_disasm(struct val_decoder *d, const uint8_t *bytes, size_t len, uint64_t pc,
			  char *buf, size_t buflen);

/* The code cache: open addressing over PCs. */
struct val_code_cache {
	struct val_code *slots;
	size_t nslots, nused;
};
BK_HIDDEN struct val_code *val_code_get(struct val_code_cache *c, uint64_t pc, bool *fresh);
BK_HIDDEN void val_code_clear(struct val_code_cache *c);
BK_HIDDEN void val_code_free(struct val_code_cache *c);

/* A shadow frame. */
enum val_frame_kind {
	VAL_FRAME_CALL = 0,       /* made by a call instruction */
	VAL_FRAME_HANDLER,        /* a signal handler's return into the trampoline */
	VAL_FRAME_SIGNAL,         /* the interrupted context of a signal */
	/* Frames nobody saw made: code that ran at full speed. Its CFA is
	 * that of the frame below it (UINT64_MAX: none, the outermost frames
	 * are unknown). The walk crosses it by stepping until SP reaches that
	 * CFA; the frame there must be the one below (val_check.c). */
	VAL_FRAME_GAP,
};

#define VAL_NREGS ARCH_MAX_SLOTS /* registers by src/arch slot */

struct val_frame {
	uint64_t ra;              /* expected PC of the frame */
	uint64_t cfa;             /* expected SP of the frame */
	uint64_t site;            /* the call instruction (the interrupted one), or 0 */
	uint64_t regs[VAL_NREGS]; /* registers at the call */
	uint64_t known;           /* mask over regs[] that must be recovered */
	uint8_t kind;             /* enum val_frame_kind */
	bool altstack;            /* SIGNAL: the handler ran on another stack */
	uint64_t handler_sp;      /* SIGNAL: SP at the handler's entry */
};

struct val_shadow {
	struct val_frame *f;
	size_t n, cap;
};
BK_HIDDEN int val_shadow_push(struct val_shadow *s, const struct val_frame *f);
/* Drop the frames SP has passed (top down, stopping at the first live one,
 * never past a live signal marker). LIVE_AT_CFA: a frame is still live
 * with SP at its CFA (AArch64: a call pushes nothing). Returns how many
 * were dropped. */
BK_HIDDEN size_t val_shadow_drop_dead(struct val_shadow *s, uint64_t sp, bool live_at_cfa);
/* rt_sigreturn: drop everything down to and including the top marker. */
BK_HIDDEN void val_shadow_sigreturn(struct val_shadow *s);
BK_HIDDEN void val_shadow_free(struct val_shadow *s);

/* Compare one walk with a thread's shadow stack. */
struct val_checker;
struct val_walk_in {
	const struct val_arch *arch;
	struct bk_space *space;
	const struct bk_regs *regs;  /* the thread's registers now */
	const struct val_shadow *shadow;
	bool complete;               /* the shadow knows the outermost frame */
	unsigned max_frames;
	uint64_t call_regs;          /* registers compared in CALL and HANDLER
				      * frames (a mask over slots); a SIGNAL
				      * frame's are all compared */
	bool regs_last_only;         /* registers at the last compared frame
				      * only: values the cursor carries up
				      * unread (lazily) are checked too */
};
/* Returns true when the walk matched. On a mismatch *MM is filled (diffs,
 * frame, kind, culprit_pc; no strings). */
BK_HIDDEN bool val_check_walk(const struct val_walk_in *in, struct val_stats *st,
			      struct val_mismatch *mm);

/* --method fast: walk IN's thread with the PC-only walk, its stack window
 * WIN (may be NULL), and compare its PCs with the cursor's. True when they
 * are equal or the fast walk handed over (counted). */
struct uw_window;
BK_HIDDEN bool val_check_fast(const struct val_walk_in *in, const struct uw_window *win,
			      struct val_stats *st, struct val_mismatch *mm);

/* Find function NAME in the ELF file PATH (.symtab, else .dynsym; raw or
 * demangled name): its link-time address. 0 or BK_E_NOT_FOUND. */
BK_HIDDEN int val_find_function(const char *path, const char *name, uint64_t *addr);
/* The ELF header's e_entry of PATH. */
BK_HIDDEN int val_elf_entry(const char *path, uint64_t *entry);

/* A growable list of addresses. */
struct val_addrs {
	uint64_t *v;
	size_t n, cap;
};
BK_HIDDEN int val_addrs_push(struct val_addrs *a, uint64_t v);
/* Where code of the ELF file PATH may be entered from other code, as
 * link-time addresses appended to OUT: every defined function symbol
 * (.symtab and .dynsym) or, with NAMES, only those named (raw or demangled
 * name, or demangled up to its '('). Without NAMES also DT_INIT and
 * DT_FINI and the PLT's slots (.plt after its first, .plt.sec, .plt.got),
 * ARRAYS gets the link-time address and size in bytes of DT_PREINIT_ARRAY,
 * DT_INIT_ARRAY and DT_FINI_ARRAY (their pointers are relocated at run
 * time: read them from the process), zero when absent, and *PLT0 the
 * address of .plt's first slot (the lazy-binding stub, jumped to, never
 * called: not an entry), or 0. */
BK_HIDDEN int val_elf_entries(const char *path, const char *const *names, size_t nnames,
			      struct val_addrs *out, uint64_t arrays[3][2], uint64_t *plt0);

#endif
