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

struct bk_elf {
	struct ldr_elf *ldr;
	struct uw_cfi eh_frame;
	struct uw_cfi debug_frame;
};

/* Describe section KIND of LDR as a cfi_section (link-time addresses;
 * DW_EH_PE_indirect reads come from the file's PT_LOAD contents). Returns
 * false when the file has no such section with contents. */
BK_HIDDEN bool uw_cfi_section(const struct ldr_elf *ldr, enum uw_section_kind kind,
			      struct cfi_section *out);
/* Wrap an opened loader object (taking ownership) as a bk_elf. */
BK_HIDDEN int uw_elf_wrap(struct ldr_elf *ldr, struct bk_elf **out);
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

/* The same decision reduced to what a walk that wants only PCs needs (the
 * profiler's bk_backtrace): the CFA from the SP or the frame pointer plus an
 * offset, the return address in memory at the CFA plus an offset, the
 * caller's frame pointer unchanged or in memory. Anything else (expressions,
 * registers saved in registers, a CFA on another register, no CFI) is
 * UW_FAST_NONE: such a walk hands over to the cursor. Derived from the
 * compiled row when it is cached (uw_fast_form). */
enum uw_fast_kind {
	UW_FAST_NONE = 0,  /* use the cursor */
	UW_FAST_CFA,       /* the fields below */
	UW_FAST_END,       /* the return address is undefined: outermost frame */
	UW_FAST_SIGNAL,    /* the sigreturn trampoline */
};
struct uw_fast {
	int32_t cfa_off;
	int16_t ra_off;    /* return address at CFA + ra_off */
	int16_t fp_off;
	uint8_t kind;
	uint8_t cfa_fp;    /* CFA = FP + cfa_off, else SP + cfa_off */
	uint8_t fp_saved;  /* caller's FP at CFA + fp_off, else unchanged */
};

/* A direct-mapped cache of compiled rows keyed by lookup PC, safe against
 * concurrent readers and writers without locks: a writer claims an entry by
 * moving its sequence number from even to odd with compare-and-swap (and
 * simply skips caching when it cannot), a reader accepts an entry only when
 * the sequence is even and unchanged across its read. The key and the fast
 * form come first, in 32 bytes, and an entry is 256 bytes: in an array
 * aligned to 64 bytes (the default local space's) a PC-only walk touches one
 * cache line per frame. */
struct uw_cache_entry {
	_Atomic uint32_t seq;
	struct uw_fast fast;
	uint64_t pc;
	uint64_t tag;      /* identity of the module the row came from */
	struct uw_crow row;
	uint8_t pad[256 - 32 - sizeof(struct uw_crow)];
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

struct bk_space {
	const struct arch_info *arch;
	struct bk_target_ops ops;
	void *ctx;
	struct uw_module *mods; /* sorted by start, not overlapping */
	size_t nmods, cap;
	struct uw_cache_entry *cache;
	/* This process (bk_space_create_local, bk_backtrace): modules come from
	 * the dynamic linker instead of mods[]. */
	struct uw_local_slot *local;
	bool static_storage;   /* the default local space: nothing to free */
	void *owned_ctx;       /* freed with the space (a snapshot's regions) */
	/* Symbols opened by src/sym for this space, freed with it. The layer
	 * above owns the contents; the space only carries them. */
	void *sym_state;
	void (*sym_state_free)(void *);
	unsigned flags;        /* enum bk_space_flags */
};

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

/* Add a module spanning [START, END) whose lowest PT_LOAD is at BASE; ELF
 * (may be NULL: a module known by name only) is taken over. Cold. */
BK_HIDDEN int uw_space_add(struct bk_space *s, uint64_t start, uint64_t end, uint64_t base,
			   const char *name, struct bk_elf *elf);
/* The module containing runtime address PC, or NULL. AS-safe. */
BK_HIDDEN const struct uw_module *uw_space_find(const struct bk_space *s, uint64_t pc);
/* Cached rows carry a TAG naming the module they came from: a local space
 * passes the loaded object's identity, so a library unloaded and another
 * loaded at the same address never reuse each other's rows. */
BK_HIDDEN bool uw_cache_get(struct bk_space *s, uint64_t pc, uint64_t tag, struct uw_crow *row);
BK_HIDDEN void uw_cache_put(struct bk_space *s, uint64_t pc, uint64_t tag, const struct uw_crow *row);
static inline size_t uw_cache_slot(uint64_t pc)
{
	uint64_t h = pc * 0x9e3779b97f4a7c15ull;
	return (size_t)(h >> 52) & (UW_CACHE_ENTRIES - 1);
}
/* The fast form of the row cached for PC and TAG, if there is one. AS-safe;
 * inline because a PC-only walk does nothing else per frame. */
static inline bool uw_cache_get_fast(const struct bk_space *s, uint64_t pc, uint64_t tag,
				     struct uw_fast *out)
{
	const struct uw_cache_entry *e = &s->cache[uw_cache_slot(pc)];
	uint32_t seq = atomic_load_explicit(&e->seq, memory_order_acquire);
	if ((seq & 1) || seq == 0 || e->pc != pc || e->tag != tag)
		return false;
	*out = e->fast;
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&e->seq, memory_order_relaxed) == seq;
}
/* Reduce a compiled row to its fast form (kind UW_FAST_NONE if it has none). */
BK_HIDDEN void uw_fast_form(const struct arch_info *a, const struct uw_crow *r,
			    struct uw_fast *out);
/* Decide how the frame at PC of this process (module OBJ, cache tag TAG) is
 * unwound, the way a cursor step would, and cache the decision. LOOKUP is
 * PC or PC - 1. AS-safe. */
struct tgt_local_object;
BK_HIDDEN int uw_local_decide(struct bk_space *s, const struct tgt_local_object *obj,
			      uint64_t tag, uint64_t pc, uint64_t lookup, struct uw_crow *crow);

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
	int err;
};

/* Read every register of the current frame that is still only an address
 * (lazy) now; one that cannot be read becomes not recovered. AS-safe. */
BK_HIDDEN void uw_cursor_resolve_all(struct uw_cursor *c);

#endif
