/* backstep — a standalone stack-unwinding engine.
 *
 * This is the one public header. Every public name is bk_* / BK_*; nothing
 * else is exported from the library. Functions marked AS-safe neither
 * allocate, lock, print nor touch errno and may be called from a signal
 * handler; the others are "cold" and may allocate.
 *
 * Errors are negative BK_E_* codes returned directly; bk_strerror() names
 * them. 0 (BK_OK) is success.
 */
#ifndef BACKSTEP_H
#define BACKSTEP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BK_API __attribute__((visibility("default")))
#else
#define BK_API
#endif

#define BK_VERSION_MAJOR 0
#define BK_VERSION_MINOR 1

/* ---- Errors ------------------------------------------------------------- */

enum bk_error {
	BK_OK = 0,
	BK_E_INVAL = -1,       /* bad argument from the caller */
	BK_E_NOMEM = -2,       /* allocation failed (cold paths only) */
	BK_E_IO = -3,          /* a file could not be opened or read */
	BK_E_NOT_ELF = -4,     /* the input is not an ELF file */
	BK_E_CORRUPT = -5,     /* malformed data: truncated, out of range, inconsistent */
	BK_E_UNSUPPORTED = -6, /* well-formed but not handled (machine, version, augmentation) */
	BK_E_NOT_FOUND = -7,   /* no entry covers the address / no such section */
	BK_E_LIMIT = -8,       /* a fixed bound was exceeded (stack depth, step count, rules) */
	BK_E_MEMORY = -9,      /* a read of target memory failed */
	BK_E_DIV_ZERO = -10,   /* DWARF expression divided by zero */
	BK_E_BAD_OP = -11,     /* a DWARF operation not allowed in call-frame information */
	BK_E_NO_UNWIND = -12,  /* the file has no unwind sections at all */
	BK_E_LOOP = -13,       /* the walk made no progress */
	BK_E_BAD_REG = -14,    /* a register number the architecture does not have */
};

/* A static string naming the error; never NULL. AS-safe. */
BK_API const char *bk_strerror(int err);

/* ---- Architectures ------------------------------------------------------ */

enum bk_arch {
	BK_ARCH_UNKNOWN = 0,
	BK_ARCH_X86_64 = 1,
	BK_ARCH_AARCH64 = 2,
};

/* The name of DWARF register REGNO on ARCH ("rsp", "x29", "d8"), or NULL
 * when the architecture has no such register. AS-safe. */
BK_API const char *bk_reg_name(enum bk_arch arch, unsigned regno);

/* ---- ELF files and their unwind tables ---------------------------------- */

/* An opened ELF file: its segments, unwind sections and identity. */
struct bk_elf;

/* Open the ELF file at PATH. Cold. */
BK_API int bk_elf_open(const char *path, struct bk_elf **out);
/* Open an ELF image held in memory; the bytes are copied. Cold. */
BK_API int bk_elf_open_memory(const void *image, size_t len, struct bk_elf **out);
BK_API void bk_elf_close(struct bk_elf *elf);
BK_API enum bk_arch bk_elf_arch(const struct bk_elf *elf);
/* The GNU build-id; returns its length (0 if none) and sets *bytes. */
BK_API size_t bk_elf_build_id(const struct bk_elf *elf, const uint8_t **bytes);
/* Load bias for an image whose lowest PT_LOAD segment is mapped at RUNTIME_BASE. */
BK_API int64_t bk_elf_load_bias(const struct bk_elf *elf, uint64_t runtime_base);

/* How one register (or the CFA) is recovered in the caller's frame.
 * DWARF 5 §6.4.1 defines the rules; the value fields mean:
 *
 *   rule             offset          reg             expr / expr_len
 *   UNDEFINED        -               -               -
 *   SAME_VALUE       -               -               -
 *   OFFSET           N: at CFA+N     -               -
 *   VAL_OFFSET       N: is CFA+N     -               -
 *   REGISTER         -               in register R   -
 *   EXPRESSION       -               -               address = eval(expr, CFA)
 *   VAL_EXPRESSION   -               -               value = eval(expr, CFA)
 *   CFA_REG_OFFSET   N               CFA = R + N     -     (the CFA only)
 *   CFA_EXPRESSION   -               -               CFA = eval(expr) (the CFA only)
 */
enum bk_rule_kind {
	BK_RULE_NONE = 0, /* no rule: the row says nothing about the register */
	BK_RULE_UNDEFINED,
	BK_RULE_SAME_VALUE,
	BK_RULE_OFFSET,
	BK_RULE_VAL_OFFSET,
	BK_RULE_REGISTER,
	BK_RULE_EXPRESSION,
	BK_RULE_VAL_EXPRESSION,
	BK_RULE_CFA_REG_OFFSET,
	BK_RULE_CFA_EXPRESSION,
};

struct bk_rule {
	enum bk_rule_kind kind;
	unsigned reg;
	int64_t offset;
	const uint8_t *expr; /* points into the file's section data */
	size_t expr_len;
};

/* The unwind row in force at one PC, as public data. */
#define BK_MAX_ROW_REGS 48
struct bk_row {
	uint64_t loc;       /* first address the row covers */
	uint64_t loc_end;   /* first address it no longer covers */
	uint64_t fde_begin; /* the function (FDE) range */
	uint64_t fde_end;
	unsigned ra_reg;    /* return-address column of the CIE */
	int from_debug_frame; /* 1 if the row came from .debug_frame */
	int signal_frame;   /* CIE augmentation 'S' */
	int ra_sign_state;  /* AArch64 RA_SIGN_STATE: bit 0 the RA is signed by pointer
			     * authentication, bit 1 with the PC as a modifier */
	uint64_t args_size; /* DW_CFA_GNU_args_size */
	struct bk_rule cfa;
	unsigned nregs;     /* registers with a rule, ascending DWARF number */
	unsigned regno[BK_MAX_ROW_REGS];
	struct bk_rule regs[BK_MAX_ROW_REGS];
};

/* The row in force at link-time address PC of ELF (no load bias applied).
 * .eh_frame is consulted first, then .debug_frame. Cold (builds the FDE
 * index on first use). */
BK_API int bk_elf_row_at(struct bk_elf *elf, uint64_t pc, struct bk_row *row);


/* ---- Registers ---------------------------------------------------------- */

/* Register values of one frame, indexed by DWARF register number, each with a
 * valid bit. Only the registers an unwinder tracks are ever recovered: on
 * x86-64 rax..r15, rip (16) and rflags (49); on AArch64 x0..x30, sp (31),
 * pc (32) and d8..d15 (DWARF 72..79). */
#define BK_MAX_REGS 128
struct bk_regs {
	uint64_t val[BK_MAX_REGS];
	uint64_t valid[BK_MAX_REGS / 64];
};

static inline void bk_regs_set(struct bk_regs *r, unsigned regno, uint64_t value)
{
	if (regno < BK_MAX_REGS) {
		r->val[regno] = value;
		r->valid[regno / 64] |= (uint64_t)1 << (regno % 64);
	}
}

static inline int bk_regs_get(const struct bk_regs *r, unsigned regno, uint64_t *value)
{
	if (regno >= BK_MAX_REGS || !((r->valid[regno / 64] >> (regno % 64)) & 1))
		return 0;
	*value = r->val[regno];
	return 1;
}

/* ---- Address spaces and targets ----------------------------------------- */

/* An address space: an architecture, a way to read memory, and the modules
 * (ELF images) mapped in it with their unwind tables and a cache of rows.
 * Creating one and adding modules is cold; walking it is not. */
struct bk_space;

/* Memory of the target, supplied by the caller (snapshots, custom targets).
 * read_mem fills DST with LEN bytes at ADDR or returns a negative BK_E_*
 * code (BK_E_MEMORY when unreadable); it must not fault. */
struct bk_target_ops {
	size_t size; /* sizeof(struct bk_target_ops), so the struct can grow */
	int (*read_mem)(void *ctx, uint64_t addr, void *dst, size_t len);
};

BK_API int bk_space_create(enum bk_arch arch, const struct bk_target_ops *ops, void *ctx,
			   struct bk_space **out);
BK_API void bk_space_destroy(struct bk_space *space);
BK_API enum bk_arch bk_space_arch(const struct bk_space *space);

/* Options of a space, for measuring rather than for everyday walks. */
enum bk_space_flags {
	/* Never use call-frame information: walks see signal frames and
	 * frame pointers only (and, for an interrupted frame, the scan),
	 * which is what a frame-pointer unwinder would get. Used by
	 * `backstep validate --method fp`. */
	BK_SPACE_NO_CFI = 1u << 0,
};
/* Replace the space's flags (enum bk_space_flags, or-ed) and drop its cached
 * rows. BK_E_INVAL for unknown bits. Cold: no walk may run meanwhile. */
BK_API int bk_space_set_flags(struct bk_space *space, unsigned flags);

/* A snapshot: copies of some of a target's memory (typically its stack from
 * SP up, as a sampling profiler captures it), read back for an offline walk.
 * The regions are referenced, not copied: they must outlive the space. Reads
 * outside every region fail with BK_E_MEMORY. Add modules as for any space. */
struct bk_mem_region {
	uint64_t addr;     /* target address of bytes[0] */
	const void *bytes;
	size_t len;
};
BK_API int bk_space_create_snapshot(enum bk_arch arch, const struct bk_mem_region *regions,
				    size_t nregions, struct bk_space **out);

/* A module: the ELF file at PATH, mapped so that its lowest PT_LOAD segment
 * starts at runtime address BASE and its image spans [start, end). Cold. */
struct bk_module_desc {
	size_t size; /* sizeof(struct bk_module_desc) */
	const char *path;
	uint64_t base;
	uint64_t start, end;
};
BK_API int bk_space_add_module(struct bk_space *space, const struct bk_module_desc *m);

/* A module of the space, for display. */
struct bk_module_info {
	const char *path;   /* as given or found; never NULL ("" if unknown) */
	uint64_t start, end;
	int64_t bias;       /* runtime = link-time + bias */
	int has_cfi;        /* an .eh_frame or .debug_frame could be read */
};
/* A module from an ELF image in memory (a JIT's object file, a library read
 * from elsewhere): the bytes are copied, then it is a module as
 * bk_space_add_module's, mapped so that its lowest PT_LOAD segment starts at
 * BASE and spanning [start, end). START == END == 0: where the image says
 * it is, at its own addresses (BASE ignored), over its executable segments.
 * A relocatable object (ET_REL) is taken as the GDB JIT interface has it
 * (LLVM's JITs hand such objects to debuggers): each allocated section at
 * its sh_addr, where it was loaded; its relocations are applied there (the
 * .eh_frame's addresses and the DWARF's), it is placed at those addresses
 * (BASE ignored) and START == END == 0 means its executable sections. On a
 * space over this process
 * (bk_space_local, bk_space_create_local) it may be added and removed from
 * any thread while others walk, as bk_space_register_eh_frame's sections
 * are (same registry, same rules); on any other space, as modules are
 * added: no walk may run meanwhile. Cold. Errors: BK_E_INVAL, BK_E_NOT_ELF,
 * BK_E_CORRUPT, BK_E_NOMEM, BK_E_LIMIT (a local space holds at most 16384
 * registrations). */
struct bk_module_image {
	size_t size;        /* sizeof(struct bk_module_image) */
	const char *name;   /* for display (copied); NULL: "" */
	const void *image;  /* the ELF bytes */
	size_t len;
	uint64_t base;
	uint64_t start, end;
};
BK_API int bk_space_add_module_image(struct bk_space *space, const struct bk_module_image *m);
/* Remove the module image added at START (on a space that is not local:
 * whatever module starts there). BK_E_NOT_FOUND if none. On a local space
 * it returns once no walk uses the module any more (see
 * bk_space_deregister_eh_frame); elsewhere no walk may run meanwhile. Its
 * symbols are not read (bk_space_symbolize does not name registered code
 * of a local space). Cold. */
BK_API int bk_space_remove_module_image(struct bk_space *space, uint64_t start);

/* Code a JIT registered for debuggers (the GDB JIT interface), added as
 * modules. For each module of SPACE defining __jit_debug_descriptor
 * (version 1), the descriptor's list of jit_code_entry records is read from
 * the target's memory as it is now, and each entry's object file
 * ("symfile") is added as bk_space_add_module_image(START == END == 0)
 * adds it, named "[jit 0xADDR]" (ADDR: the start of its code). Its
 * .eh_frame unwinds the JIT's frames by CFI; bk_space_symbolize names them
 * from its symbols and DWARF (file:line). LLVM's JITs (lli, ORC, MCJIT)
 * register ET_REL objects whose sections carry their load addresses: they
 * are linked there. Called again after the JIT added code, it adds the
 * objects again (each replaces the module at its address) and removes the
 * modules of objects the JIT took out of its list since (when the whole
 * list could be read).
 * Bounded: at most 100000 entries per descriptor, 64 MiB per object, 1 GiB
 * in all; a list that breaks (a next entry whose prev is not the entry
 * before: a cycle, a list being rewritten) ends there, TRUNCATED set.
 * Spaces over another process or a core (BK_E_UNSUPPORTED on a local
 * space, where a JIT adds its objects with bk_space_add_module_image, and
 * for 32-bit targets). No descriptor, or one without entries: 0, STATS
 * say so. Cold; no walk may run meanwhile. Errors: BK_E_INVAL. */
struct bk_gdb_jit_stats {
	size_t size;          /* sizeof(struct bk_gdb_jit_stats) */
	unsigned descriptors; /* version-1 descriptors found */
	unsigned entries;     /* jit_code_entry records read */
	unsigned added;       /* objects added as modules */
	unsigned failed;      /* entries whose object could not be read or used */
	int truncated;        /* the list broke or was too long: entries past it unread */
	int first_error;      /* BK_E_* of the first failure, 0 if none */
	unsigned removed;     /* modules of objects read before that the list no
				 longer holds (unregistered): removed */
};
BK_API int bk_space_add_gdb_jit(struct bk_space *space, struct bk_gdb_jit_stats *stats);

/* Code a JIT described in a jitdump file (the format of Linux perf's
 * jitdump specification: jit-PID.dump, written by node/V8 --perf-prof, the
 * JVM's and .NET's perf agents, Wasmtime, ...): each JIT_CODE_LOAD names
 * its code, JIT_CODE_DEBUG_INFO gives its source lines, and
 * JIT_CODE_UNWINDING_INFO its .eh_frame, taken as placed where perf
 * places it (after the code, at its end rounded up to 8: where V8 emits
 * it) and used only if every FDE lies inside that code. Those .eh_frame
 * sections unwind the JIT's frames by CFI (before the space's modules, as
 * registered code); bk_space_symbolize names the code, with file:line,
 * for addresses outside every module (before a perf map). Records whose
 * timestamp is at most UNTIL are applied, in file order: code loaded (or
 * moved) over older code replaces it. UNTIL = UINT64_MAX: the whole file,
 * what is there now. A file still being written is read up to its last
 * whole record. Any space but a local one (BK_E_UNSUPPORTED there: a JIT
 * in this process registers with bk_space_register_eh_frame). STATS (may
 * be NULL) says what was read. Adding the same PATH again reads it anew
 * (a JIT appends to it) and replaces the earlier reading. A target opened
 * with bk_target_attach or bk_target_open_core adds the jitdumps its
 * process mapped (files named jit-PID.dump: a JIT maps its jitdump for
 * perf to see) by itself. Cold; no walk may run meanwhile. Errors:
 * BK_E_INVAL, BK_E_IO, BK_E_UNSUPPORTED (not a jitdump, written
 * big-endian, version above 2, code of another architecture),
 * BK_E_CORRUPT (its header), BK_E_NOMEM. A record that does not hold
 * together ends the reading: what came before is used, FIRST_ERROR says
 * so. */
struct bk_jitdump_stats {
	size_t size;            /* sizeof(struct bk_jitdump_stats) */
	uint32_t pid;           /* the JIT's, from the header */
	uint16_t machine;       /* e_machine */
	uint64_t time;          /* the header's timestamp: when the file was made */
	uint64_t flags;         /* the header's; bit 0: JITDUMP_FLAGS_ARCH_TIMESTAMP
				   (a clock of the machine's own, such as the TSC) */
	unsigned loads, moves;  /* JIT_CODE_LOAD and JIT_CODE_MOVE records */
	unsigned debug_info;    /* JIT_CODE_DEBUG_INFO records used */
	unsigned debug_info_dropped; /* ... that could not be read as written
				        (entries not filling the record, file
				        names that are not text): no lines */
	unsigned unwinding_info; /* loads with an .eh_frame */
	unsigned applied;       /* loads and moves in the view (timestamp <= UNTIL) */
	unsigned registered;    /* .eh_frame sections in use now */
	unsigned unwinding_failed; /* .eh_frame sections that did not decode or
				      described other code: not used */
	unsigned skipped;       /* records of unknown kinds, moves of unknown code */
	int truncated;          /* the file ends inside a record (being written),
				   or a bound was reached */
	int first_error;        /* BK_E_* of the first problem, 0 if none */
};
BK_API int bk_space_add_jitdump(struct bk_space *space, const char *path, uint64_t until,
				struct bk_jitdump_stats *stats);
/* Move the view of every jitdump of SPACE forward to the records with
 * timestamps at most UNTIL (a profile's samples in time order, when its
 * clock is the JIT's). Never backwards. Cold. */
BK_API void bk_space_jitdump_until(struct bk_space *space, uint64_t until);

/* Register one whole .eh_frame section at EH_FRAME, in this process's
 * memory, for the code range [START, END) of SPACE, as libgcc's
 * __register_frame(EH_FRAME) does for its unwinder: EH_FRAME is the first
 * entry (a CIE) of a sequence of CIEs and FDEs ended by a zero length word
 * (the terminator, 4 bytes of 0); its pointers are decoded at the
 * addresses the bytes have here (DW_EH_PE_pcrel is relative to them). The
 * bytes are not copied: they must stay until deregistered. START == END ==
 * 0: the range is the FDEs' (lowest pc_begin to highest pc_end). A section
 * that begins with its terminator registers nothing and returns 0, as
 * libgcc does. Frames whose lookup PC lies in the range are unwound by
 * these FDEs (by the CFI stepper, before the modules of the space: as
 * libgcc searches registered frames before the loaded objects); a PC in
 * the range that no FDE covers falls to the frame-pointer and scan
 * steppers. The section is checked now: every entry is framed and decoded
 * and the FDEs indexed (BK_E_CORRUPT, with nothing registered, when one
 * does not decode; BK_E_MEMORY when the bytes are not readable; BK_E_LIMIT
 * past 64 MiB or 2^21 FDEs). Registering the same EH_FRAME twice:
 * BK_E_INVAL. Any space; on one over another process the section's
 * pointers must be absolute (they are decoded here).
 *
 * Threads: registering and deregistering may happen from any thread while
 * other threads (and signal handlers) walk the space; walks find
 * registrations without locks (AS-safe). Both are cold (they allocate and
 * take a lock): not from a signal handler, not from a stepper. */
BK_API int bk_space_register_eh_frame(struct bk_space *space, const void *eh_frame,
				      uint64_t start, uint64_t end);
/* Undo bk_space_register_eh_frame(SPACE, EH_FRAME, ...), as libgcc's
 * __deregister_frame: when it returns no walk reads the section any more
 * (it waits for walks that are using it to leave it), and the caller may
 * free the bytes. BK_E_NOT_FOUND if EH_FRAME is not registered (0 for a
 * section that begins with its terminator). Cold. */
BK_API int bk_space_deregister_eh_frame(struct bk_space *space, const void *eh_frame);

/* The module containing runtime address ADDR: 0, or BK_E_NOT_FOUND. Code
 * registered with bk_space_register_eh_frame is a module of path "" over
 * its range; its strings live until it is removed. Code a jitdump
 * describes (bk_space_add_jitdump) is a module named by the jitdump's
 * path over that code. AS-safe. */
BK_API int bk_space_module_at(const struct bk_space *space, uint64_t addr,
			      struct bk_module_info *info);

/* ---- Cursor ------------------------------------------------------------- */

/* How a frame's registers were recovered from the frame below it. */
enum bk_frame_how {
	BK_HOW_INITIAL = 0, /* the registers the walk started from */
	BK_HOW_CFI,         /* DWARF call-frame information */
	BK_HOW_SIGNAL,      /* a Linux signal frame: from the saved ucontext */
	BK_HOW_FP,          /* the frame-pointer chain (no CFI covered the callee) */
	BK_HOW_USER,        /* a stepper registered by the user */
	BK_HOW_SCAN,        /* an interrupted frame without CFI or frame pointer:
			       the first word above SP that is a return address
			       (inside a module, right after a call) */
};
BK_API const char *bk_how_name(enum bk_frame_how how);

/* Caller storage for a walk; its size is fixed for this ABI version. */
struct bk_cursor {
	uint64_t opaque[64];
};

#define BK_MAX_FRAMES 4096 /* a walk ends with BK_E_LIMIT after this many */

/* Start a walk at REGS (which must include the PC and SP). AS-safe. */
BK_API int bk_cursor_init(struct bk_cursor *c, struct bk_space *space, const struct bk_regs *regs);
/* Move to the caller: 1 stepped; 0 when the current frame is the outermost
 * (undefined return address, PC 0, the end of the frame-pointer chain); or a
 * negative BK_E_* (BK_E_NO_UNWIND: nothing describes this frame; BK_E_LOOP:
 * no progress; BK_E_MEMORY: the stack could not be read; ...). After 0 or an
 * error the walk is over and the current frame stays readable. AS-safe. */
BK_API int bk_cursor_step(struct bk_cursor *c);
/* The current frame. AS-safe. */
BK_API uint64_t bk_cursor_pc(const struct bk_cursor *c);
BK_API uint64_t bk_cursor_sp(const struct bk_cursor *c);
BK_API enum bk_frame_how bk_cursor_how(const struct bk_cursor *c);
BK_API unsigned bk_cursor_depth(const struct bk_cursor *c); /* 0 innermost */
/* 1 and *value when the register is recovered in this frame, 0 when not. */
BK_API int bk_cursor_reg(const struct bk_cursor *c, unsigned regno, uint64_t *value);
/* All recovered registers of the current frame. */
BK_API void bk_cursor_regs(const struct bk_cursor *c, struct bk_regs *out);
/* The address to look up symbols and line numbers for: the PC for the
 * innermost frame, a frame interrupted by a signal and the sigreturn
 * trampoline (the handler returned there; nothing called it), PC - 1
 * otherwise (the call may be the function's last instruction). */
BK_API uint64_t bk_cursor_lookup_pc(const struct bk_cursor *c);


/* ---- Steppers ----------------------------------------------------------- */

/* A step is made by the first stepper of the space's chain that takes the
 * frame. The chain is ordered by priority (lower first); the built-in
 * steppers have these, and a user stepper of equal priority comes after
 * the built-in one, user steppers of one priority in the order added:
 *
 *   priority              id  stepper
 *   BK_PRIO_SIGNAL  100    1  the sigreturn trampoline: registers from the
 *                             saved ucontext (BK_HOW_SIGNAL)
 *   BK_PRIO_CFI     200    2  DWARF call-frame information of the module or
 *                             registered .eh_frame covering the lookup PC
 *                             (BK_HOW_CFI)
 *   BK_PRIO_FP      300    3  no CFI: the frame-pointer chain for a frame that
 *                             called; for an interrupted one only the
 *                             prologue shapes (BK_HOW_FP)
 *   BK_PRIO_SCAN    400    4  no CFI, an interrupted frame: the stack scanned
 *                             for a return address (BK_HOW_SCAN; BK_HOW_FP
 *                             when it settles on the frame record)
 *
 * Each built-in stepper says "not mine" for a frame it does not describe
 * (CFI: no FDE covers the PC; FP and scan: a frame CFI covers). A frame no
 * stepper takes ends the walk with BK_E_NO_UNWIND. User stepper ids start
 * at 16. */
enum {
	BK_PRIO_SIGNAL = 100,
	BK_PRIO_CFI = 200,
	BK_PRIO_FP = 300,
	BK_PRIO_SCAN = 400,
};
enum {
	BK_STEPPER_SIGNAL = 1,
	BK_STEPPER_CFI = 2,
	BK_STEPPER_FP = 3,
	BK_STEPPER_SCAN = 4,
	BK_STEPPER_FIRST_USER = 16,
};

/* A frame as a stepper sees it (IN) and makes it (OUT). */
struct bk_frame {
	struct bk_space *space; /* IN: the space walked (read with bk_space_read) */
	struct bk_regs regs;    /* IN: the frame's recovered registers (PC and SP
				   always); OUT: the caller's (PC and SP required) */
	uint64_t lookup_pc;     /* IN: the address that names the frame's code:
				   its PC if interrupted, else PC - 1 */
	uint64_t cfa;           /* OUT: the caller's CFA; 0: its SP */
	unsigned depth;         /* IN: 0 for the innermost frame */
	int interrupted;        /* IN: the frame was interrupted, not calling (the
				   innermost, or after a signal frame); OUT: the
				   caller was interrupted (the stepper stepped over
				   a signal-like frame): it is looked up at its PC */
};

/* What a step function returns (or a negative BK_E_* code: the walk ends
 * with it). */
enum {
	BK_STEP_BOTTOM = 0,   /* IN is the outermost frame: the walk ends, no error */
	BK_STEP_STEPPED = 1,  /* OUT is the caller's frame */
	BK_STEP_NOT_MINE = 2, /* ask the next stepper of the chain */
};

/* A user stepper: an ops table, copied when added (NAME is not: it must
 * live as long as the registration).
 *
 * It is asked for frames whose lookup PC lies in [start, end), or for every
 * frame when start == end. OUT arrives zeroed. Whatever it returns, the
 * walk keeps its invariants: a stepped frame without a PC and SP ends the
 * walk with BK_E_INVAL; its CFA (OUT's cfa, else its SP) must exceed the
 * CFA of the frame before, unless that one was a signal frame, or the walk
 * ends with BK_E_LOOP; at most BK_MAX_FRAMES frames. Frames it makes say
 * BK_HOW_USER and bk_cursor_stepper gives its id.
 *
 * Contract: read the target's memory only with bk_space_read (fault-free
 * through the space's callback: never dereference target addresses). A
 * stepper runs inside whatever walk asks it: when that walk is a local one
 * in a signal handler (bk_backtrace from SIGPROF), the stepper must itself
 * be async-signal-safe (no malloc, locks, stdio; errno preserved); it must
 * not add or remove steppers or registrations. It may run on several
 * threads at once. A frame PC outside every range costs a range check per
 * module in bk_backtrace's walk; a stepper with no range sends every
 * bk_backtrace walk to the cursor (slower, same frames). A step that asks
 * a user stepper uses about 3 KiB more stack (two frames' registers and a
 * copy of the chain). */
struct bk_stepper {
	size_t size; /* sizeof(struct bk_stepper) */
	const char *name;
	int (*step)(void *ctx, const struct bk_frame *in, struct bk_frame *out);
	void *ctx;
	uint64_t start, end; /* lookup PCs claimed; start == end: every frame */
	int priority;        /* BK_PRIO_* ± n */
};

/* Add ST to SPACE's chain; *ID (may be NULL) receives its id. Any space,
 * the process-wide one included; from any thread while others walk. Cold.
 * BK_E_INVAL (no step function, END < START), BK_E_LIMIT (32 per space),
 * BK_E_NOMEM. */
BK_API int bk_space_add_stepper(struct bk_space *space, const struct bk_stepper *st,
				unsigned *id);
/* Remove stepper ID: no walk calls it once this returns (it waits for the
 * calls in progress). Not from a stepper or a signal handler. Cold.
 * BK_E_NOT_FOUND if there is no such user stepper. */
BK_API int bk_space_remove_stepper(struct bk_space *space, unsigned id);
/* The chain, in the order a step asks it, built-in steppers included. */
struct bk_stepper_info {
	unsigned id;
	const char *name;
	int priority;
	uint64_t start, end;
	int builtin;
};
/* Fill up to MAX entries of OUT; returns the chain's length. Cold. */
BK_API int bk_space_steppers(struct bk_space *space, struct bk_stepper_info *out, size_t max);
/* Read LEN bytes of SPACE's target memory at ADDR through its callback:
 * 0 or a BK_E_* code (BK_E_MEMORY: unreadable); never faults. AS-safe. */
BK_API int bk_space_read(struct bk_space *space, uint64_t addr, void *dst, size_t len);
/* The id of the stepper that made the current frame (BK_STEPPER_*, or a
 * user stepper's); 0 for the frame the walk started from. AS-safe. */
BK_API unsigned bk_cursor_stepper(const struct bk_cursor *c);


/* ---- Processes ---------------------------------------------------------- */

/* A stopped process or a core file: its threads with the registers they
 * had when it was stopped, and an address space over its memory and
 * modules. Cold. */
struct bk_target;

/* Attach to every thread of process PID with ptrace (they stop; the process
 * is not signalled), read their registers and build the space from
 * /proc/PID/maps (files opened from disk or /proc/PID/map_files, the vDSO read
 * from the process's memory). Errors: BK_E_NOT_FOUND (no such process),
 * BK_E_IO (permission denied, or it exited meanwhile). */
BK_API int bk_target_attach(int pid, struct bk_target **out);
/* Open the ELF core file CORE of an x86-64 or AArch64 Linux process
 * (kernel, gdb's gcore, qemu-user), on any host: a thread per NT_PRSTATUS
 * (AArch64: d8-d15 from NT_FPREGSET, the PAC mask from NT_ARM_PAC_MASK),
 * modules from NT_FILE opened from disk, or, in a core without NT_FILE
 * (qemu-user's), from the dynamic linker's list in the core's memory
 * (DT_DEBUG -> r_debug -> link_map), the program placed by AT_ENTRY.
 * Memory comes from the core, or, where the core did not keep it, from the
 * mapped file. EXE (may be NULL) replaces the path the core gives for the
 * main executable. A file whose GNU build-id differs from the one the core
 * kept is not used: its module stays, known by name only (see
 * bk_target_problem). Errors: BK_E_IO (cannot open or read CORE; a
 * directory), BK_E_NOT_ELF, BK_E_UNSUPPORTED (an ELF file that is not a
 * core, or a core of another machine), BK_E_CORRUPT (truncated: headers or
 * notes cut). Memory a truncated core lost reads as BK_E_MEMORY. */
BK_API int bk_target_open_core(const char *core, const char *exe, struct bk_target **out);
/* The same with options (size first, so the struct can grow). */
struct bk_core_options {
	size_t size;            /* sizeof(struct bk_core_options) */
	const char *exe;        /* as EXE above, or NULL */
	const char *sysroot;    /* a path the core names (/lib/...) is looked for
				 * under this directory first (gdb's set sysroot),
				 * or NULL */
};
BK_API int bk_target_open_core_opts(const char *core, const struct bk_core_options *opts,
				    struct bk_target **out);
/* Detach (the process runs on) and free. Always call it, also on error paths. */
BK_API void bk_target_close(struct bk_target *t);
/* Let an attached process run on now, keeping what was learned of it
 * (threads, registers, modules, symbols): walk every thread first, release,
 * then symbolize, and the process is stopped only for the walks. Memory
 * reads fail afterwards (BK_E_MEMORY), so walks do. A no-op for a core. */
BK_API void bk_target_release(struct bk_target *t);
BK_API struct bk_space *bk_target_space(struct bk_target *t);

struct bk_thread_info {
	int tid;
	const char *name; /* the thread's comm (a core keeps only the process's) */
	int err;          /* 0, or why its registers are unknown */
};
BK_API size_t bk_target_nthreads(const struct bk_target *t);
/* Thread I (0 <= I < nthreads): identity and registers (REGS may be NULL). */
BK_API int bk_target_thread(const struct bk_target *t, size_t i, struct bk_thread_info *info,
			    struct bk_regs *regs);
/* Problems met while building the target's modules, one line each, for the
 * user: "PATH: file not found", "PATH: build-id differs from the core's; not
 * used", ... Walks through such a module fall back to frame pointers.
 * The strings live as long as the target. */
BK_API size_t bk_target_nproblems(const struct bk_target *t);
BK_API const char *bk_target_problem(const struct bk_target *t, size_t i); /* NULL past the end */
/* The signal that ended a core's process: its NT_SIGINFO (else the first
 * thread's NT_PRSTATUS pr_cursig), received by the thread the kernel wrote
 * first. 0, or BK_E_NOT_FOUND (a live process; a core that says nothing,
 * or names a job-control stop, as gcore's do: nothing ended). */
struct bk_signal_info {
	int signo;          /* SIGSEGV, ... */
	int code;           /* si_code (SEGV_MAPERR, SI_TKILL, ...), when HAS_CODE */
	int err;            /* si_errno */
	int has_addr;       /* ADDR is the faulting address (SIGSEGV, SIGBUS, SIGILL, SIGFPE) */
	uint64_t addr;
	int tid;            /* the thread that received it; 0: not known */
	int has_code;       /* CODE, ERR and ADDR are known (NT_SIGINFO, or the signal
			     * a traced process stopped with); 0: only the signal
			     * number is (a core's pr_cursig, as qemu-user writes) */
};
BK_API int bk_target_signal(const struct bk_target *t, struct bk_signal_info *out);


/* ---- This process ------------------------------------------------------- */

/* The PCs of the calling thread's stack, innermost first, starting with the
 * return address into the caller of bk_backtrace; returns how many were
 * stored (at most MAX). Uses a process-wide space in static storage.
 * AS-safe: callable from a signal handler, even the first time; no malloc,
 * locks, stdio or errno changes. Stack: about 4 KiB when the PCs were seen
 * before, about 10 KiB when it must decode new ones (tests/unit/
 * test_altstack.c prints both); with the kernel's signal frame (4 KiB and
 * more with AVX-512 state) a handler's alternate stack wants 24 KiB. */
BK_API int bk_backtrace(void **pcs, int max);
/* The process-wide space bk_backtrace uses (never destroy it). AS-safe. */
BK_API struct bk_space *bk_space_local(void);
/* A separate space over this process, with its own row cache. Cold. */
BK_API int bk_space_create_local(struct bk_space **out);
/* Start a walk at the caller of this function (a local space). AS-safe. */
BK_API int bk_cursor_init_local(struct bk_cursor *c, struct bk_space *space);
/* Start a walk at a signal handler's interrupted context: UCONTEXT is the
 * handler's third argument (a ucontext_t *). AS-safe. */
BK_API int bk_cursor_init_ucontext(struct bk_cursor *c, struct bk_space *space,
				   const void *ucontext);


/* ---- Symbols ------------------------------------------------------------ */

/* One source-level frame at an address. */
struct bk_symbol {
	const char *function; /* demangled; NULL when unknown */
	uint64_t offset;      /* from the function's symbol (the outermost entry only) */
	const char *file;     /* source file, or NULL */
	unsigned line, column; /* 0 when unknown */
	int inlined;          /* 1: an inlined call inside the next entry */
};

/* Describe runtime address ADDR of SPACE (for a frame: bk_cursor_lookup_pc):
 * up to MAX entries, innermost first — the inlined calls at ADDR, then the
 * function that contains them. Returns how many (0 when nothing is known) or
 * a BK_E_* code. Symbol tables and DWARF (.symtab, .dynsym, separate debug
 * files, .debug_line, inlined subroutines) are read on first use of each
 * module and kept with the space; strings live as long as the space. Cold:
 * not AS-safe; calls on one space must not overlap. */
BK_API int bk_space_symbolize(struct bk_space *space, uint64_t addr, struct bk_symbol *out,
			      int max);
/* Name code that no file holds (JIT code) from the perf map at PATH: lines
 * "START SIZE NAME" in hex, as /tmp/perf-PID.map is written by node
 * --perf-basic-prof, the JVM's perf agents, CPython 3.12's -X perf and
 * others; where ranges overlap, the line written last wins. Read now;
 * bk_space_symbolize then answers from it for addresses outside every
 * module. PATH NULL drops it. 0, BK_E_IO (cannot read it), BK_E_NOMEM. Cold. */
BK_API int bk_space_set_perf_map(struct bk_space *space, const char *path);
/* Keep what bk_space_symbolize answers in directory DIR (it must exist),
 * one file per build-id, and answer from there first: a later process
 * naming the same addresses of the same files reads no symbol table or
 * DWARF. The answer is reused only for the very same inputs (this build of
 * backstep, the file and its separate debug file unchanged); a damaged
 * cache file is never trusted. NULL or "": no cache (the default). Not for
 * a space of this process. Errors: BK_E_INVAL, BK_E_NOMEM. */
BK_API int bk_space_set_symbol_cache(struct bk_space *space, const char *dir);

#ifdef __cplusplus
}
#endif
#endif
