/* The unwinder layer: an ELF file with its call-frame tables (struct
 * bk_elf), composed from the loader (bytes, sections) and the CFI engine
 * (decoding, lookup, rows), which know nothing of each other; address spaces
 * (struct bk_space: memory, modules, a row cache) and the cursor that walks
 * them with a chain of steppers. */
#ifndef BK_UNWIND_H
#define BK_UNWIND_H

#include <stdatomic.h>
#include <stddef.h>

#include "../cfi/cfi.h"
#include "../loader/loader.h"

enum uw_section_kind { UW_EH_FRAME, UW_DEBUG_FRAME };

/* One call-frame section of a file and its lookup table (built on first use). */
struct uw_cfi {
	bool present;
	struct cfi_section sec;
	bool built;
	int build_err;
	struct cfi_table table;
};

/* A file may serve several modules, of one space or of many (a profile's
 * processes all map libc): each holds a reference, bk_elf_close drops one,
 * and the last frees the file, its tables and its debug file. What is built
 * on first use (tables, the debug file) is built by whoever adds a module
 * first: modules of one shared bk_elf are added from one thread at a time. */
struct bk_elf {
	struct ldr_elf *ldr;
	struct uw_cfi eh_frame;
	struct uw_cfi debug_frame;
	_Atomic unsigned refs;
	bool debug_tried;
	struct bk_elf *debug;  /* the separate debug file (uw_elf_debug) */
};

/* Describe section KIND of LDR as a cfi_section (link-time addresses;
 * DW_EH_PE_indirect reads come from the file's PT_LOAD contents). Returns
 * false when the file has no such section with contents. */
BK_HIDDEN bool uw_cfi_section(const struct ldr_elf *ldr, enum uw_section_kind kind,
			      struct cfi_section *out);
/* Wrap an opened loader object (taking ownership) as a bk_elf. */
BK_HIDDEN int uw_elf_wrap(struct ldr_elf *ldr, struct bk_elf **out);
/* One more reference to ELF (NULL: none); returns ELF. */
BK_HIDDEN struct bk_elf *uw_elf_ref(struct bk_elf *elf);
/* ELF's separate debug file (build-id, .gnu_debuglink), opened on the
 * first call and owned by ELF; NULL when there is none. Cold. */
BK_HIDDEN struct bk_elf *uw_elf_debug(struct bk_elf *elf);
/* The lookup table of section KIND, built on first use; NULL if absent or
 * building failed (*ERR says why). */
BK_HIDDEN const struct cfi_table *uw_elf_table(struct bk_elf *elf, enum uw_section_kind kind,
					       int *err);
/* Convert an internal row into the public form. */
BK_HIDDEN void uw_row_export(const struct cfi_section *sec, const struct cfi_cie *cie,
			     const struct cfi_fde *fde, const struct cfi_row *row,
			     struct bk_row *out);


/* ---- Address spaces ------------------------------------------------------ */

struct uw_module {
	uint64_t start, end;   /* runtime range */
	int64_t bias;          /* runtime = link-time + bias */
	char *path;
	struct bk_elf *elf;    /* NULL when the file could not be opened */
	struct bk_elf *debug;  /* separate debug file, for its .debug_frame */
	const struct cfi_table *eh_table, *debug_table, *debug_file_table;
};

/* A row compiled for fast application: only tracked registers, only the
 * rules that need no expression. Rows that do need one are marked SLOW and
 * recomputed from the tables at each use. */
#define UW_CROW_SAVED 20
enum uw_crow_kind {
	UW_KIND_NONE = 0,  /* no CFI covers the PC: fall back */
	UW_KIND_CFI,       /* rules below */
	UW_KIND_CFI_SLOW,  /* CFI with expressions or too many rules: recompute */
	UW_KIND_SIGNAL,    /* the sigreturn trampoline */
};
struct uw_crow {
	uint8_t kind;
	uint8_t cfa_slot;
	uint8_t nsaved;
	uint8_t ra_slot;       /* slot of the return-address column, or ARCH_NO_SLOT */
	uint8_t ra_index;      /* its entry in saved[], or 0xff when it has no rule */
	uint8_t ra_signed;     /* AArch64: strip pointer authentication from the RA */
	uint8_t ra_undefined;  /* outermost frame */
	int64_t cfa_off;
	uint64_t ruled;        /* slots with an explicit rule (the rest: ABI default) */
	struct {
		uint8_t slot;
		uint8_t kind;      /* BK_RULE_* except expressions */
		uint8_t reg_slot;  /* BK_RULE_REGISTER */
		int32_t off;       /* rows with larger offsets are SLOW */
	} saved[UW_CROW_SAVED];
};

/* Bytes of R that matter: the header and its NSAVED entries. */
static inline size_t uw_crow_size(const struct uw_crow *r)
{
	unsigned n = r->nsaved < UW_CROW_SAVED ? r->nsaved : UW_CROW_SAVED;
	return offsetof(struct uw_crow, saved) + n * sizeof(r->saved[0]);
}

/* ---- The PC-only walk's rule table (src/unwind/fast.c) ---------------------
 *
 * bk_backtrace (and any walk that wants PCs only) keeps three registers
 * per frame: PC, SP and the frame pointer. How to step each frame is
 * compiled into a 22-bit rule and cached in a set-associative table of
 * single 64-bit words: key (module id, offset of the lookup PC in the
 * module) << 22 | rule. One word needs no lock and no sequence number: a
 * reader sees a whole old or a whole new entry. A rule too wide for 22
 * bits is an index into a pool of wider rules (struct uw_xrule), published
 * before the entry that names it.
 *
 *   rule & 3   meaning              other bits
 *   0          CFA inline           bit 2: CFA on FP (else SP); bits 3..12:
 *                                   CFA offset / 8; bits 13..16: RA at
 *                                   CFA - 8 * (k + 1); bits 17..21: FP at
 *                                   CFA - 8 * k, 0 = FP unchanged
 *   1          pool rule            index (bits 2..21); index 0: no fast
 *                                   form (the walk hands over to the cursor)
 *   2          outermost frame      (the return address is undefined)
 *   3          signal frame         (the sigreturn trampoline)
 */
#define UW_FT_SETS 1024         /* 64 KiB of 64-byte sets */
#define UW_FT_WAYS 8
#define UW_FT_XRULES 2048
#define UW_FT_RULE_BITS 22
#define UW_FT_RULE_MASK ((1u << UW_FT_RULE_BITS) - 1)
#define UW_FT_MAX_ID 1023       /* module ids fit 10 bits; 0: not cacheable */
#define UW_FT_XCHAIN 1          /* pool rule 1: the frame-pointer chain (no CFI) */

enum uw_xcfa {
	UW_X_CFA_SP,        /* CFA = SP + cfa_off */
	UW_X_CFA_FP,        /* CFA = FP + cfa_off */
	UW_X_CFA_FP_DEREF,  /* CFA = *(FP + cfa_off): DW_OP_bregFP N; DW_OP_deref (DRAP) */
	UW_X_CFA_SP_DEREF,  /* CFA = *(SP + cfa_off) */
	UW_X_CFA_CHAIN,     /* no CFI: the frame record at FP (end at FP 0) */
};
enum uw_xfp {
	UW_X_FP_SAME,       /* unchanged */
	UW_X_FP_AT_CFA,     /* at CFA + fp_off */
	UW_X_FP_AT_FP,      /* at FP + fp_off: DW_CFA_expression DW_OP_bregFP N */
	UW_X_FP_VAL_CFA,    /* is CFA + fp_off */
};
#define UW_X_RA_SIGNED 1    /* AArch64: strip pointer authentication */
struct uw_xrule {
	int32_t cfa_off;
	int32_t ra_off;     /* RA at CFA + ra_off */
	int32_t fp_off;
	uint8_t cfa, fp, flags, pad;
};

struct uw_ftab {
	_Alignas(64) _Atomic uint64_t set[UW_FT_SETS][UW_FT_WAYS];
	_Atomic uint32_t nx;      /* pool rules in use (0 and UW_FT_XCHAIN fixed) */
	_Atomic uint32_t victim;  /* spreads replacements over the ways */
	struct uw_xrule x[UW_FT_XRULES];
};

/* The walk memo: table entries (the same self-checking words) remembered by
 * the stack position of the frame they stepped, (SP / 8) mod UW_MEMO_WORDS,
 * in a block per thread (chosen by the thread's stack). The SP of a frame is
 * known before its PC has been loaded, so on a memo hit the loads of
 * successive frames do not wait for one another; the key check, made when
 * the PC arrives, confirms the guess. Any block may be shared by threads
 * or overwritten: an entry is one word, right for its key or not used. */
#define UW_MEMO_WORDS 512       /* a 4 KiB block */
#define UW_MEMO_BLOCKS_LOCAL 32 /* the default local space's threads */
#define UW_MEMO_BLOCKS 4        /* any other space's */

/* Empty T (every entry, every pool rule). Cold: no walk may run. */
BK_HIDDEN void uw_ftab_clear(struct uw_ftab *t);
/* A table from the allocation funnel (aligned), or NULL; and its release. */
BK_HIDDEN struct uw_ftab *uw_ftab_new(void);
BK_HIDDEN void uw_ftab_free(struct uw_ftab *t);
/* The PCs of the walk from REGS, the first frame's registers (its PC, SP
 * and frame pointer must be known; the others are used for a frame
 * without a fast form), innermost first; AT_PC: the first frame was
 * interrupted (look it up at its PC), else the PC is a return address.
 * A frame whose rule needs more than the PC, SP and FP is stepped by the
 * cursor where all its registers are known (the first frame, the frame a
 * signal interrupted); elsewhere the walk returns -1 and the caller walks
 * again with the cursor, which makes the same frames (uw_fast_handovers
 * counts it). Returns how many PCs were stored, or -1. AS-safe. */
BK_HIDDEN int uw_walk_pcs(struct bk_space *s, const struct bk_regs *regs, bool at_pc, void **pcs,
			  int max);
/* Where the walk reads the stack with plain loads: target addresses
 * [addr, addr + len) held at HOST (this process's own stack: host = addr;
 * a snapshot's copy of a stack; a copy the validator makes). */
struct uw_window {
	uint64_t addr, len;
	const uint8_t *host;
};
/* uw_walk_pcs with the window WIN (NULL: this thread's stack for a local
 * space, else none: every read through read_mem). INTERRUPTED (may be
 * NULL; MAX entries): set to 1 for each PC to look up at the PC itself,
 * not PC - 1: a frame a signal interrupted, and the sigreturn trampoline
 * (entered by the handler's return, never called); 0 for the others. */
BK_HIDDEN int uw_walk_pcs_window(struct bk_space *s, const struct bk_regs *regs, bool at_pc,
				 void **pcs, int max, const struct uw_window *win,
				 uint8_t *interrupted);

/* The cursor's cache of compiled rows keyed by lookup PC, two-way
 * set-associative, safe against concurrent readers and writers without
 * locks: a writer claims an entry by moving its sequence number from even
 * to odd with compare-and-swap (and simply skips caching when it cannot), a
 * reader accepts an entry only when the sequence is even and unchanged
 * across its read. */
struct uw_cache_entry {
	_Atomic uint32_t seq;
	uint64_t pc;
	uint64_t tag;      /* identity of the module the row came from */
	struct uw_crow row;
};
#define UW_CACHE_ENTRIES 4096

/* A module of this process, found with _dl_find_object and described by its
 * in-memory .eh_frame_hdr; filled once, lock-free (state 0 empty, 1 being
 * filled, 2 ready). */
struct uw_local_slot {
	_Atomic uint32_t state;
	const void *handle;
	uint64_t start, hdr;
	struct uw_module mod;
	struct cfi_table table;
};
#define UW_LOCAL_SLOTS 512

/* ---- Registered code (registry.c) ----------------------------------------
 *
 * Code described from memory rather than found as a module: .eh_frame
 * sections registered for a code range (bk_space_register_eh_frame) and, on
 * a local space, ELF images (bk_space_add_module_image). Walks find a
 * registration without locks and pin it while they use it; removal
 * unpublishes it, then waits until no walk pins it, then frees it. */
#define UW_REG_CHUNK 256
#define UW_REG_CHUNKS 64      /* 16384 registrations per space */
struct uw_reg {
	_Atomic uint64_t serial;       /* 0: not published; else never reused */
	_Atomic uint32_t users;        /* walks pinning it now */
	_Atomic uint64_t start, end;   /* the lookup PCs it covers */
	uint32_t state;                /* (under the lock) 0 free, 1 taken */
	uint32_t ftid;                 /* its module id in the PC-only walk's rule
					  table (local spaces), or 0: not cached */
	const void *key;               /* the .eh_frame registered, or NULL */
	struct uw_module mod;          /* its tables (bias 0 for an .eh_frame) */
	struct cfi_table table;        /* a registered .eh_frame's index (owned) */
};
struct uw_reg_chunk {
	_Atomic uint64_t lo, hi;       /* every live range of the chunk inside */
	_Atomic uint32_t used;         /* slots ever taken: lookups look below */
	struct uw_reg r[UW_REG_CHUNK];
};
struct uw_registry {
	void *lock;                    /* a pthread mutex (registry.c) */
	uint64_t next_serial;
	uint64_t ftids[8];             /* rule-table ids taken (bit i: UW_REG_FTID0 + i) */
	_Atomic uint64_t lo, hi;       /* every live range inside */
	_Atomic uint32_t nchunks;
	_Atomic(struct uw_reg_chunk *) chunk[UW_REG_CHUNKS];
};
/* Rule-table module ids of registered code on a local space: above the
 * local slots' (1..UW_LOCAL_SLOTS), up to UW_FT_MAX_ID. An id is given
 * back only after the registration is retired and the table purged of its
 * entries (rules are put while pinned), and the walk memo never holds
 * them, so a later registration under the same id meets no stale rule. */
#define UW_REG_FTID0 513
#define UW_REG_NFTIDS 510
/* Remove every rule-table entry of module id ID (fast.c). */
BK_HIDDEN void uw_ftab_purge(struct uw_ftab *t, unsigned id);
/* A registration a walk uses: pinned until uw_unpin. */
struct uw_pin {
	struct uw_reg *r;
	uint64_t serial;               /* the registration pinned */
};
/* The registration of S covering lookup PC, pinned (*PIN), its module and
 * *TAG (for the row cache: never that of another registration); NULL when
 * none. AS-safe, lock-free. */
static inline const struct uw_module *uw_reg_find(struct bk_space *s, uint64_t pc,
						  uint64_t *tag, struct uw_pin *pin);
BK_HIDDEN const struct uw_module *uw_reg_find_slow(struct bk_space *s, uint64_t pc,
						   uint64_t *tag, struct uw_pin *pin);
/* Pin R again if it is still registration SERIAL (never 0: a slot being
 * retired has serial 0). AS-safe. */
BK_HIDDEN bool uw_reg_pin(struct uw_reg *r, uint64_t serial, struct uw_pin *pin);
static inline void uw_unpin(struct uw_pin *pin)
{
	if (pin->r) {
		atomic_fetch_sub(&pin->r->users, 1);
		pin->r = NULL;
	}
}
/* Register an opened ELF image (taken over) of a local space for
 * [START, END), lowest PT_LOAD at BASE; remove the one at START. Cold. */
BK_HIDDEN int uw_reg_add_image(struct bk_space *s, struct bk_elf *elf, uint64_t start,
			       uint64_t end, uint64_t base, const char *name);
BK_HIDDEN int uw_reg_remove_image(struct bk_space *s, uint64_t start);
/* An ELF image from memory, opened and placed (space.c): an ET_REL one
 * linked at its sections' addresses (ldr_rel_link), START == END == 0
 * resolved to its code. uw_image_open fills IM (its elf owned by IM);
 * uw_image_add gives it to S as module NAME (taking the elf, whatever the
 * outcome). Cold. Errors as bk_space_add_module_image's. */
struct uw_image {
	struct bk_elf *elf;
	uint64_t start, end, base;
};
BK_HIDDEN int uw_image_open(const struct bk_module_image *d, struct uw_image *im);
BK_HIDDEN int uw_image_add(struct bk_space *s, struct uw_image *im, const char *name);
/* Register the .eh_frame DATA (LEN bytes; kept, not copied: it must outlive
 * the registration), whose bytes were at ADDR in the target (its pcrel
 * pointers are relative to there), for the code [START, END), under KEY
 * (any unique pointer), as a module named NAME (copied). Every FDE must
 * lie inside [START, END) (BK_E_NOT_FOUND); the terminator may be
 * missing. Remove it by KEY. Cold. Errors as bk_space_register_eh_frame's. */
BK_HIDDEN int uw_reg_add_eh(struct bk_space *s, const void *key, const uint8_t *data, size_t len,
			    uint64_t addr, uint64_t start, uint64_t end, const char *name);
BK_HIDDEN int uw_reg_remove_eh(struct bk_space *s, const void *key);
/* ---- jitdump files (jitdump.c) ---- */
/* What the jitdumps of S say of ADDR in their views: 1 and *OUT (strings
 * live as long as S), or 0. */
struct uw_jd_symbol {
	const char *path;      /* the jitdump's, as added */
	const char *name;
	uint64_t start, end;
	const char *file;      /* NULL: no debug entry */
	uint32_t line, column;
	uint32_t seq;          /* the entry's place in its file: which code it is */
};
BK_HIDDEN int uw_jitdump_symbol(const struct bk_space *s, uint64_t addr, struct uw_jd_symbol *out);
/* LEN bytes of the code at ADDR as a jitdump's load holds them (the code
 * its view has there), read from the file: 0 or BK_E_MEMORY. For spaces
 * whose memory holds no code (a profile's samples). Cold. */
BK_HIDDEN int uw_jitdump_code(const struct bk_space *s, uint64_t addr, void *dst, size_t len);
/* FN for each piece of code S's jitdumps describe now (in their views, not
 * replaced by later code at its start): its range and the jitdump's path. */
BK_HIDDEN void uw_jitdump_each(const struct bk_space *s,
			       void (*fn)(void *ctx, uint64_t start, uint64_t end, const char *path),
			       void *ctx);
/* bk_space_add_jitdump reading PATH for the jitdump named NAME (its
 * modules' path; the one an added jitdump replaces; one of the size the
 * file still has is not read again). *REREAD (may be NULL): the file was
 * read (new, or grown). */
BK_HIDDEN int uw_jitdump_add(struct bk_space *s, const char *path, const char *name,
			     uint64_t until, struct bk_jitdump_stats *stats, bool *reread);
/* Free S's jitdumps (after its registrations). */
BK_HIDDEN void uw_jitdump_destroy(struct bk_space *s);
/* The CFI row a walk would use at runtime address PC of S (registered
 * code first, then the module's tables in order): 0, BK_E_NOT_FOUND (no
 * module, or no FDE covers PC), BK_E_NO_UNWIND (the module has no
 * tables), or the decoder's error. Cold (a validator's report). */
BK_HIDDEN int uw_space_row_at(struct bk_space *s, uint64_t pc, struct bk_row *row);
/* Free every registration of S (cold: no walk may run). */
BK_HIDDEN void uw_reg_destroy(struct bk_space *s);

/* ---- User steppers (stepper.c) ---------------------------------------------
 *
 * A fixed table of user steppers per space and the chain order, published
 * in two buffers: a writer (under a lock) fills the one readers are not
 * told about, then advances the generation; a reader copies the buffer of
 * the generation it read and accepts the copy if the generation did not
 * move meanwhile (a writer interrupted by the reader, even in a signal
 * handler of its own thread, never holds it up: it writes the other
 * buffer). A call pins its stepper (users), so removal can wait for calls
 * in progress. */
#define UW_MAX_STEPPERS 32
struct uw_user_stepper {
	_Atomic uint32_t id;           /* 0: free or being removed */
	_Atomic uint32_t users;
	struct bk_stepper st;
};
struct uw_chain_ent {
	uint32_t id;
	uint32_t slot;
	int32_t prio;
	uint64_t start, end;
};
struct uw_chain {
	uint32_t n;
	uint32_t nrangeless;
	uint64_t lo, hi;               /* every range inside */
	struct uw_chain_ent e[UW_MAX_STEPPERS]; /* user steppers, in chain order */
};
struct uw_steppers {
	void *lock;
	uint32_t next_id;
	_Atomic uint32_t gen;
	struct uw_chain buf[2];
	struct uw_user_stepper slot[UW_MAX_STEPPERS];
};
/* Copy S's user chain into *OUT: 0, or BK_E_LIMIT when writers kept it
 * moving. OUT->n is 0 when there are none. AS-safe. */
BK_HIDDEN int uw_steppers_view(struct bk_space *s, struct uw_chain *out);
/* Whether a user stepper of S may claim a lookup PC in [LO, LO + LEN): one
 * with no range, or a range meeting it. AS-safe; the cheap no-stepper case
 * is one load. */
BK_HIDDEN bool uw_steppers_claim_slow(struct uw_steppers *st, uint64_t lo, uint64_t len);
static inline bool uw_steppers_claim(struct bk_space *s, uint64_t lo, uint64_t len);
/* Call user stepper E (pinned for the call): its result, or
 * BK_STEP_NOT_MINE when it was removed meanwhile. AS-safe if it is. */
BK_HIDDEN int uw_stepper_call(struct bk_space *s, const struct uw_chain_ent *e,
			      const struct bk_frame *in, struct bk_frame *out);
BK_HIDDEN void uw_steppers_destroy(struct bk_space *s);

struct bk_space {
	const struct arch_info *arch;
	struct bk_target_ops ops;
	void *ctx;
	struct uw_module *mods; /* sorted by start, not overlapping */
	size_t nmods, cap;
	struct uw_cache_entry *cache;
	struct uw_ftab *ftab;   /* the PC-only walk's rules */
	_Atomic uint64_t *memo; /* memo_blocks blocks of UW_MEMO_WORDS */
	unsigned memo_blocks;
	/* Something was cached (a row, a rule, and so memo words) since the
	 * caches were last emptied: uw_space_forget_rows has work to do. A
	 * profile adds a process's modules one by one before its first
	 * sample; emptying 1 MiB of empty caches each time cost more than
	 * everything else. */
	_Atomic bool rows_kept;
	/* This process (bk_space_create_local, bk_backtrace): modules come from
	 * the dynamic linker instead of mods[]. */
	struct uw_local_slot *local;
	/* Modules of this process never unloaded (tgt_local_permanent), learned
	 * by the first walk: a PC in one needs no _dl_find_object. perm_state:
	 * 0 not learned, 1 being learned, 2 ready (nperm entries). */
	_Atomic uint32_t perm_state;
	uint32_t nperm;
	struct uw_perm {
		uint64_t start, len, keyhi;
	} perm[5];
	bool static_storage;   /* the default local space: nothing to free */
	void *owned_ctx;       /* freed with the space (a snapshot's regions) */
	/* The copy of target memory holding ADDR, if the space has one (a
	 * snapshot's regions): the PC-only walk's stack window. */
	bool (*window)(void *ctx, uint64_t addr, struct uw_window *out);
	/* Symbols opened by src/sym for this space, freed with it. The layer
	 * above owns the contents; the space only carries them. */
	void *sym_state;
	void (*sym_state_free)(void *);
	unsigned flags;        /* enum bk_space_flags */
	uint64_t pac_mask;     /* AArch64, not local: the bits a signed return address
				* carries (a core's NT_ARM_PAC_MASK); 0: above bit 47 */
	/* Allocated on first use, freed with the space (never for the
	 * process-wide one): user steppers, registered code. */
	_Atomic(struct uw_steppers *) steppers;
	_Atomic(struct uw_registry *) registry;
	struct uw_jitdump *jitdumps; /* bk_space_add_jitdump (jitdump.c) */
};

static inline const struct uw_module *uw_reg_find(struct bk_space *s, uint64_t pc,
						  uint64_t *tag, struct uw_pin *pin)
{
	pin->r = NULL;
	if (!atomic_load_explicit(&s->registry, memory_order_relaxed))
		return NULL; /* nothing was ever registered: the common case */
	return uw_reg_find_slow(s, pc, tag, pin);
}

static inline bool uw_steppers_claim(struct bk_space *s, uint64_t lo, uint64_t len)
{
	struct uw_steppers *st = atomic_load_explicit(&s->steppers, memory_order_acquire);
	return st && uw_steppers_claim_slow(st, lo, len);
}

/* The module of this process holding PC: a slot, or TMP filled for this
 * use when every slot is taken; *TAG names it for the cache. AS-safe.
 * uw_local_identify is the cheap half (the dynamic linker's answer and the
 * tag); uw_local_module the other (the slot, filled on first use). */
struct tgt_local_object;
BK_HIDDEN bool uw_local_identify(uint64_t pc, struct tgt_local_object *obj, uint64_t *tag);
BK_HIDDEN const struct uw_module *uw_local_module(struct bk_space *s,
						  const struct tgt_local_object *obj,
						  struct uw_module *tmp, struct cfi_table *tmp_table);
BK_HIDDEN const struct uw_module *uw_local_find(struct bk_space *s, uint64_t pc,
						struct uw_module *tmp, struct cfi_table *tmp_table,
						uint64_t *tag);
/* A module of this process without a usable .eh_frame_hdr: its .eh_frame,
 * found from its file and indexed once per process into mmap'ed memory by
 * the first walk that meets it (local_index.c). T becomes the table:
 * INDEXED (keep it), SCAN (the index is being built elsewhere: a scan table
 * for this one use), PENDING (nothing yet, for this one use) or NONE (no
 * .eh_frame found: the module has no CFI). AS-safe. */
enum uw_eh_result { UW_EH_NONE, UW_EH_INDEXED, UW_EH_SCAN, UW_EH_PENDING };
BK_HIDDEN enum uw_eh_result uw_local_eh_table(const struct tgt_local_object *obj,
					      struct cfi_table *t);
/* Tests: called by the builder of an index once the section is found and
 * before it is indexed (a signal raised there meets a module being built). */
BK_HIDDEN extern void (*uw_local_index_hook)(void);

/* Add a module spanning [START, END) whose lowest PT_LOAD is at BASE; ELF
 * (may be NULL: a module known by name only) is taken over. Modules it
 * overlaps go; one that is the same image (file, start, bias) shares its
 * opened file and tables instead of their being opened again. Cold. */
BK_HIDDEN int uw_space_add(struct bk_space *s, uint64_t start, uint64_t end, uint64_t base,
			   const char *name, struct bk_elf *elf);
/* Drop every cached row and rule (cold: no walk may run). */
BK_HIDDEN void uw_space_forget_rows(struct bk_space *s);
/* Something is about to be cached in S. Read first: once set, the flag's
 * line is only read, not written, by walks on other threads. AS-safe. */
static inline void uw_space_note_kept(struct bk_space *s)
{
	if (!atomic_load_explicit(&s->rows_kept, memory_order_relaxed))
		atomic_store_explicit(&s->rows_kept, true, memory_order_relaxed);
}
/* The module containing runtime address PC, or NULL. AS-safe. */
BK_HIDDEN const struct uw_module *uw_space_find(const struct bk_space *s, uint64_t pc);
/* Cached rows carry a TAG naming the module they came from: a local space
 * passes the loaded object's identity, so a library unloaded and another
 * loaded at the same address never reuse each other's rows. */
BK_HIDDEN bool uw_cache_get(struct bk_space *s, uint64_t pc, uint64_t tag, struct uw_crow *row);
BK_HIDDEN void uw_cache_put(struct bk_space *s, uint64_t pc, uint64_t tag, const struct uw_crow *row);
/* The set of PC: 4-byte granules of code go to consecutive sets within an
 * 8 KiB region (the bits above are hashed in), so the rows of nearby code
 * share pages and a first walk faults in few of the cache's. Granules that
 * small keep the instructions of one function apart: the validator walks
 * from every instruction, and with 32-byte granules (eight instructions to
 * a set of two) the rows of a loop evicted each other at every iteration
 * (bench/README.md "backstep validate speed"). */
static inline size_t uw_cache_slot(uint64_t pc)
{
	uint64_t h = (pc >> 16) * 0x9e3779b97f4a7c15ull;
	return (size_t)((h >> 52) + (pc >> 2) * 2) & (UW_CACHE_ENTRIES - 2); /* even: a set of two */
}
/* How the frame at PC (looked up at LOOKUP) in module M (NULL: none known)
 * is unwound: the sigreturn trampoline, a CFI row (compiled into *CROW; the
 * full row in *T, *CIE, *ROW) or no CFI at all (kind UW_KIND_NONE). The
 * cursor's steps and the PC-only walk's rules both come from here. AS-safe. */
BK_HIDDEN int uw_decide(struct bk_space *s, const struct uw_module *m, uint64_t pc,
			uint64_t lookup, struct uw_crow *crow, const struct cfi_table **t,
			struct cfi_cie *cie, struct cfi_row *row);
/* The modules of a local space are slots; a slot's index + 1 names it in
 * the PC-only walk's table (0 for a module described for one use). */
BK_HIDDEN unsigned uw_local_module_id(const struct bk_space *s, const struct uw_module *m);

/* bk_backtrace walked by the cursor alone, never the fast walk: the
 * reference the fast walk is tested against. */
BK_HIDDEN int uw_backtrace_cursor(void **pcs, int max);
/* How many bk_backtrace walks the fast walk handed over to the cursor. */
BK_HIDDEN extern _Atomic unsigned long uw_fast_handovers;

/* A bk_target over threads the caller already traces and has stopped (the
 * tracer is `backstep run`); closing it detaches nothing. Cold. */
BK_HIDDEN int uw_target_adopt(int pid, const int *tids, size_t n, struct bk_target **out);
/* For a target kept across many walks of a live process that runs between
 * them (the validator). Refresh: re-read /proc/PID/maps and add the modules
 * that are new (new code was mapped); modules already there, with their
 * tables and cached rows, stay. Modules unmapped meanwhile stay too, until
 * a new one overlaps them. *ADDED counts the modules added. The caller
 * refreshes after every mmap, munmap, mprotect and mremap. Invalidate:
 * before a walk, forget the cached target memory that may have changed
 * (everything but read-only mappings). Neither touches the threads'
 * registers (the caller has fresher ones). Cold. */
BK_HIDDEN int uw_target_refresh(struct bk_target *bt, size_t *added);
BK_HIDDEN void uw_target_invalidate(struct bk_target *bt);

/* ---- Cursor --------------------------------------------------------------- */

struct uw_cursor {
	struct bk_space *space;
	uint64_t regs[ARCH_MAX_SLOTS];
	uint64_t valid;      /* mask over slots */
	uint64_t lazy;       /* valid slots whose regs[] still holds the address the
				value was saved at: read when first needed */
	uint64_t cfa;        /* of the current frame, once a step computed it */
	uint32_t depth;
	uint8_t how;         /* enum bk_frame_how */
	uint8_t at_pc;       /* look up the PC itself, not PC - 1 */
	uint8_t done;
	uint32_t stepper;    /* BK_STEPPER_* or a user stepper's id; 0 initial */
	int err;
};

/* RA with AArch64 pointer authentication stripped, as space S knows how
 * (this process: its CPU's way; others: 48-bit user addresses). AS-safe. */
BK_HIDDEN uint64_t uw_strip_pac(const struct bk_space *s, uint64_t ra);

/* Read every register of the current frame that is still only an address
 * (lazy) now; one that cannot be read becomes not recovered. AS-safe. */
BK_HIDDEN void uw_cursor_resolve_all(struct uw_cursor *c);

#endif
