/* The validator: runs a program under ptrace, single-steps every
 * instruction of the checked code of every thread (code elsewhere runs at
 * full speed between a call into it and the return, val_run.c "Stepping
 * over"; opts.step_all steps it too) and keeps a shadow stack per thread, the
 * oracle of DESIGN.md "Proof of correctness". At every instruction of the
 * checked code it unwinds the stopped thread with the ordinary cursor over
 * the ptrace target (the shadow stack never helps the unwinder) and compares
 * each frame the shadow stack knows: return address, CFA and callee-saved
 * registers.
 *
 * The shadow stack. At a `call` (all forms) it records, after the step, the
 * return address (the address after the call), the CFA (the caller's SP
 * before the call = the callee's SP + 8) and the caller's callee-saved
 * registers (x86-64: rbx, rbp, r12-r15) as they were at the call. An entry
 * is dead once SP >= its CFA: that is a `ret` (SP = CFA, or CFA + imm16),
 * a longjmp or a C++ exception landing in an outer frame. A tail call (jmp)
 * changes nothing: the callee inherits the caller's return address. Signal
 * delivery pushes a marker with the interrupted registers and an entry for
 * the handler's return into the sigreturn trampoline; rt_sigreturn pops
 * down to the marker. Frames made by code that ran at full speed are a
 * gap (VAL_FRAME_GAP): the walk crosses it to the frame below it by CFA.
 *
 * Layers: uses src/unwind (spaces, cursor, the ptrace target through
 * uw_target_adopt), src/target, src/sym through bk_space_symbolize, and
 * Capstone for decoding. Nothing below calls it. Cold: it allocates freely
 * and prints nothing (the CLI reports).
 */
#ifndef BK_VAL_H
#define BK_VAL_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backstep.h"
#include "../base/base.h"

/* ---- Options and results ------------------------------------------------ */

struct val_stats;

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

/* DWARF numbers on x86-64; VAL_HOW names the "how" check of a signal frame. */
#define VAL_REG_SP 7
#define VAL_REG_PC 16
#define VAL_HOW 1000

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
	char *error;              /* why the run stopped early, or NULL */
	struct val_mismatch *mm;  /* grouped mismatches, in the order first seen */
	size_t nmm;
};

/* Run ARGV[0] (searched in PATH) with ARGV under the validator. Returns 0
 * when the program ran (RES filled; mismatches or not) or a BK_E_* code
 * with RES->error saying why. Free RES with val_result_free. */
BK_HIDDEN int val_run(char *const *argv, const struct val_opts *opts, struct val_result *res);
BK_HIDDEN void val_result_free(struct val_result *res);
/* The name of a DWARF register or VAL_HOW ("how"). */
BK_HIDDEN const char *val_reg_name(unsigned regno);

/* ---- Internal ----------------------------------------------------------- */

/* Instruction classes that move the shadow stack. */
enum val_insn_kind {
	VAL_INSN_OTHER = 0,
	VAL_INSN_CALL,            /* call rel32, call r/m64 (pushes the RA) */
	VAL_INSN_RET,             /* ret, ret imm16 */
	VAL_INSN_SYSCALL,         /* syscall */
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
BK_HIDDEN int val_decoder_open(struct val_decoder **out);
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

#define VAL_NREGS 17          /* DWARF 0..16: rax..r15, rip */

struct val_frame {
	uint64_t ra;              /* expected PC of the frame */
	uint64_t cfa;             /* expected SP of the frame */
	uint64_t site;            /* the call instruction (the interrupted one), or 0 */
	uint64_t regs[VAL_NREGS]; /* registers at the call */
	uint32_t known;           /* mask over regs[] that must be recovered */
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
 * never past a live signal marker). Returns how many were dropped. */
BK_HIDDEN size_t val_shadow_drop_dead(struct val_shadow *s, uint64_t sp);
/* rt_sigreturn: drop everything down to and including the top marker. */
BK_HIDDEN void val_shadow_sigreturn(struct val_shadow *s);
BK_HIDDEN void val_shadow_free(struct val_shadow *s);

/* Compare one walk with a thread's shadow stack. */
struct val_checker;
struct val_walk_in {
	struct bk_space *space;
	const struct bk_regs *regs;  /* the thread's registers now */
	const struct val_shadow *shadow;
	bool complete;               /* the shadow knows the outermost frame */
	unsigned max_frames;
	uint32_t call_regs;          /* registers compared in CALL and HANDLER
				      * frames (a mask over DWARF 0..16); a
				      * SIGNAL frame's are all compared */
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
