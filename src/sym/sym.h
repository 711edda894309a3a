/* The symbol layer: link-time address -> function name (demangled), source
 * file:line:column and the chain of inlined calls at that address.
 *
 * Indexed lazily. sym_open reads the ELF symbol tables (names stay mangled
 * until a lookup returns them) and learns which compile unit covers which
 * addresses: from .debug_aranges when the file has it (checked against the
 * unit headers of .debug_info before it is trusted), else from each unit's
 * top DIE; it reads no line table and no DIE below a unit's top. The first
 * lookup that lands in a unit builds that unit's line rows and scopes and
 * keeps them (sym_dwarf.c); later lookups there are a few binary searches.
 * So a lookup may allocate and read the file, and its cost is that of the
 * units it touches; the answers are those of indexing everything up front
 * (sym_index_all, kept as the tests' reference). Strings handed out stay
 * valid until sym_close. Not AS-safe and never used on the unwind path.
 *
 * Threads: sym_lookup and sym_get_stats take a mutex inside the sym_file, so
 * several threads may look up in one sym_file at once (they are serialised);
 * sym_close must not overlap any other call on the file. The file named by a
 * sym_file (or its debug file) stays open, and must not change, until
 * sym_close.
 *
 * Sources, in order of preference:
 *   names      DWARF DW_TAG_subprogram / DW_TAG_inlined_subroutine (linkage
 *              name demangled, else DW_AT_name); otherwise the ELF symbol
 *              (.symtab of the file, else .symtab of its separate debug
 *              file, else .dynsym) with the greatest start <= ADDR < end
 *   file:line  DWARF .debug_line (libdwarf), the row with the greatest
 *              address <= ADDR inside its sequence
 *   inlining   DW_TAG_inlined_subroutine ranges, nested, with the call site
 *              (DW_AT_call_file / DW_AT_call_line / DW_AT_call_column)
 *
 * Addresses are link-time addresses of the file (subtract the load bias from
 * a runtime PC first). ET_REL objects are not relocated: their addresses are
 * section-relative and lookups in them mean little.
 */
#ifndef BK_SYM_H
#define BK_SYM_H

#include "../base/base.h"

struct sym_file;

/* One source-level frame at an address. */
struct sym_frame {
	const char *function; /* demangled when it was mangled (C++, Rust); NULL if unknown */
	const char *symbol;   /* the ELF symbol covering ADDR (demangled), or NULL; outermost
			       * frame only. Usually FUNCTION's own symbol, but not in a
			       * split-off part: function "f", symbol "f.cold" */
	uint64_t offset;      /* ADDR - start of SYMBOL (with no symbol: of the DWARF range
			       * covering ADDR); outermost frame only, 0 for inlined */
	const char *file;     /* source file (DWARF's name, comp_dir joined if relative), or NULL */
	unsigned line, column; /* 0 if unknown */
	int inlined;          /* 1: this frame is an inlined call inside the next one */
};

/* Open PATH. When DEBUG_PATH is non-NULL, that separate debug file's .symtab
 * and DWARF are used (PATH's own where it has none); otherwise, when PATH
 * lacks a .symtab or DWARF, its debug file is looked for (build-id, then
 * .gnu_debuglink, under /usr/lib/debug and next to PATH) and used for what
 * PATH lacks. Errors: BK_E_INVAL, BK_E_IO (PATH or DEBUG_PATH cannot be
 * read), BK_E_NOT_ELF, BK_E_CORRUPT (bad ELF headers), BK_E_UNSUPPORTED,
 * BK_E_NOMEM. Damaged DWARF is not an error: what cannot be read is left
 * out (see sym_stats), at open or when a lookup first reads it. */
BK_HIDDEN int sym_open(const char *path, const char *debug_path, struct sym_file **out);
/* Open the ELF file whose bytes are IMAGE (LEN; copied): a module read from
 * a target's memory, such as the vDSO, laid out as a file. Its symbol
 * tables by section headers, else by its dynamic segment (BIAS: the
 * module's runtime minus link-time addresses, see sym_dyn_symbols); its
 * separate debug file by build-id. */
BK_HIDDEN int sym_open_memory(const void *image, size_t len, int64_t bias, struct sym_file **out);
BK_HIDDEN void sym_close(struct sym_file *f);

/* Describe ADDR: up to MAX frames, innermost first. For an address inside
 * inlined code: first the inlined function(s) (the innermost with the
 * file:line of ADDR, each outer one with the call site of the frame before
 * it), last the real function with its symbol offset. Returns the number of
 * frames: >= 1 when a symbol, a DWARF function or a line row covers ADDR
 * (a row alone gives one frame with function NULL), 0 when nothing is known,
 * BK_E_INVAL for bad arguments (MAX < 1), BK_E_NOMEM when indexing the unit
 * at ADDR (or demangling its symbol) ran out of memory: nothing is kept of
 * that attempt and a later lookup tries again. When MAX is smaller than the
 * chain, the MAX innermost frames are returned. Indexes the compile units
 * covering ADDR on first touch; see the top of this file for threads. */
BK_HIDDEN int sym_lookup(struct sym_file *f, uint64_t addr, struct sym_frame *frames, int max);

/* libdwarf 20210528 records every object it hands out in a hash tree, so
 * that dwarf_finish can free what its caller did not: a tree insert per
 * DIE, attribute and line context, the tree's fresh pages faulted in as
 * it grows (with several threads running, each such fault is a TLB
 * shootdown). Measured on `backstep report` of a C++ profile: 40% of the
 * time spent naming frames. src/sym frees every object it takes (the
 * AddressSanitizer run of the suite checks that no memory leaks with the
 * tree off), so it does not need the tree. The switch is process-wide,
 * and another libdwarf user in the process may rely on the tree: only an
 * application may turn it off, never the library for it. The backstep
 * tool does, at start. */
BK_HIDDEN void sym_dwarf_untracked(void);

/* ---- Files shared by spaces and threads ---------------------------------- */

/* Opened symbol files by path, each opened once for every space or thread
 * that asks: a profile's processes all map libc, whose debug information
 * is then read once, not once per process. Thread-safe (a mutex around
 * the table; the first opener of a path opens it while the others wait).
 * Files stay open until sym_files_free. */
struct sym_files;
BK_HIDDEN struct sym_files *sym_files_new(void);
BK_HIDDEN void sym_files_free(struct sym_files *fs);
/* The symbols of the file at PATH, or NULL when it cannot be opened
 * (learnt once, like a success). A name in brackets ("[vdso]") is no
 * path: NULL unless an image was added under it. */
BK_HIDDEN struct sym_file *sym_files_get(struct sym_files *fs, const char *path);
/* Add the ELF image IMAGE (LEN bytes, copied; BIAS as sym_open_memory's)
 * under NAME, for later gets; a NAME present already is kept. 0 or
 * sym_open_memory's error, BK_E_NOMEM. */
BK_HIDDEN int sym_files_add_image(struct sym_files *fs, const char *name, const void *image,
				  size_t len, int64_t bias);
/* bk_space_symbolize's answer for link-time address LINK of F: up to MAX
 * entries, innermost first, the strings F's (valid until sym_close). */
BK_HIDDEN int sym_describe(struct sym_file *f, uint64_t link, struct bk_symbol *out, int max);

/* What sym_open and the lookups so far found; for tests and `backstep`
 * diagnostics. The DWARF counts grow as lookups index units: a unit's
 * damage is counted when it is first read (sym_index_all reads them all). */
struct sym_stats {
	size_t symbols;        /* function symbols after merging aliases */
	int symbol_source;     /* 0 none, 1 .symtab, 2 debug file's .symtab, 3 .dynsym,
				* 4 .dynsym and .gnu_debugdata's .symtab (MiniDebugInfo) */
	bool used_debug_file;  /* a separate debug file was opened */
	bool used_alt_file;    /* a dwz supplementary file (.gnu_debugaltlink, .debug_sup)
				* was found and opened */
	bool alt_missing;      /* one is named but was not found (names from it are lost) */
	size_t splits_read;    /* split units read from .dwo / .dwp files (split DWARF) */
	size_t splits_missing; /* skeleton units whose split unit was not found: their
				* lines are known, their functions and inlined calls not */
	bool dwarf;            /* DWARF was found and is in use (libdwarf opens it on
				* first need; false again if that fails) */
	bool dwarf_compressed; /* ... from SHF_COMPRESSED or .zdebug sections */
	bool dwarf_rejected;   /* DWARF present but too damaged to open (sym_guard.c) */
	bool aranges;          /* the unit index came from .debug_aranges */
	size_t cus, cus_failed; /* CUs seen / CUs skipped (in part or whole) after an error;
				 * before the first lookup CUS counts .debug_aranges sets */
	size_t cus_indexed;    /* CUs whose lines and scopes have been read */
	size_t line_rows;      /* rows in the line index (incl. end-of-sequence marks) */
	size_t scopes, ranges; /* functions and inlined calls / their address ranges */
	size_t file_fixups;    /* DWARF 5 rows whose file libdwarf got wrong (see sym_line.c) */
};
BK_HIDDEN void sym_get_stats(struct sym_file *f, struct sym_stats *out);

/* Demangle a C++ (Itanium) or Rust (legacy or v0) symbol. Returns a string
 * from the allocation funnel (base_free it), or NULL when NAME is not a
 * mangled name this understands, is longer than SYM_MAX_MANGLED, or on
 * allocation failure. */
BK_HIDDEN char *sym_demangle(const char *name);
/* sym_demangle, telling allocation failure (*NOMEM) from "not mangled". */
BK_HIDDEN char *sym_demangle_ex(const char *name, bool *nomem);

/* ---- Internal to src/sym ------------------------------------------------ */

#include <pthread.h>

/* Bounds (exceeding one drops the item in question, never the file). */
#define SYM_MAX_DIE_DEPTH 256      /* DIE nesting followed in one CU */
#define SYM_MAX_REF_HOPS 16        /* abstract_origin / specification chain */
#define SYM_MAX_RANGES_PER_DIE 65536
#define SYM_MAX_MANGLED 4096       /* libiberty uses stack arrays sized by this */
#define SYM_MAX_CUS (1u << 24)     /* units followed in .debug_info */
#define SYM_NO_FILE UINT32_MAX

/* Interned strings in an arena: stable pointers, freed all at once. */
struct sym_chunk;
struct sym_strings {
	struct sym_chunk *chunks;
	const char **slots;   /* open addressing, NULL = empty */
	size_t nslots, nused;
};

struct sym_symbol {
	uint64_t start, end;  /* [start, end) */
	const char *name;     /* as in the table until a lookup first returns it,
			       * then demangled if it was mangled */
	bool shown;           /* NAME is the demangled form */
};

/* A line row; file == SYM_NO_FILE marks the end of a sequence. */
struct sym_line {
	uint64_t addr;
	uint32_t file;        /* index into sym_file.files */
	uint32_t line;
	uint32_t column;
	uint32_t ord;         /* order of appearance in its CU: ties keep the last row */
};

/* A function (depth 0) or an inlined call (depth > 0). */
struct sym_scope {
	const char *name;
	const char *call_file; /* of an inlined call: where it was called from */
	uint32_t call_line, call_column;
	int32_t parent;        /* enclosing scope (same CU), or -1 */
	uint32_t depth;
};

struct sym_range {
	uint64_t low, high;    /* [low, high) */
	uint32_t scope;
	uint32_t depth;
};

/* Growable array: sym_vec_push returns a zeroed slot or NULL on NOMEM. */
struct sym_vec {
	void *p;
	size_t n, cap, elem;
};

/* A compile unit of .debug_info and, once indexed, its lines (sorted by
 * address, end marks first, then order) and scopes (ranges sorted by low,
 * with the prefix maximum of high). Scope indexes are the unit's own. */
struct sym_cu {
	uint64_t off, end;     /* [header, end of unit) in .debug_info */
	uint64_t die_off;      /* its top DIE, right after the header */
	uint16_t version;
	uint8_t unit_type;     /* DW_UT_* (DWARF 2-4: DW_UT_compile) */
	uint8_t addr_size, off_size;
	uint64_t dwo_id;       /* DWARF 5 skeleton and split units: from the header */
	bool unplaced;         /* no address range known: indexed before any lookup */
	bool failed;           /* counted in cus_failed */
	bool indexed;
	struct sym_line *lines;
	size_t nlines;
	struct sym_scope *scopes;
	size_t nscopes;
	struct sym_range *ranges;
	uint64_t *range_max_high;
	size_t nranges;
};

/* CU covers [low, high): the index sym_open builds. */
struct sym_cu_range {
	uint64_t low, high;
	uint32_t cu;
};

struct sym_dwarf;

struct sym_file {
	pthread_mutex_t lock;    /* held by sym_lookup and sym_get_stats */
	struct sym_strings strings;
	struct sym_symbol *syms;
	uint64_t *sym_max_end;   /* prefix maximum of syms[..].end */
	size_t nsyms;
	struct sym_vec files;    /* const char *: every file name of the CUs indexed so far */

	/* DWARF (sym_dwarf.c); NULL when there is none to read. */
	struct sym_dwarf *dwarf;
	struct sym_cu *cus;      /* in .debug_info order; set up by sym_dwarf_ready */
	size_t ncus;
	struct sym_cu_range *cu_ranges;  /* sorted by low */
	uint64_t *cu_range_max_high;     /* prefix maximum of cu_ranges[..].high */
	size_t ncu_ranges;

	/* sym_index_all: one index over every CU, as sym_open built it before
	 * indexing became lazy (scopes renumbered, rows ordered by CU then
	 * order), answered by the lookups of that time. */
	bool merged;
	struct sym_line *lines;
	size_t nlines;
	struct sym_scope *scopes;
	size_t nscopes;
	struct sym_range *ranges;
	uint64_t *range_max_high;
	size_t nranges;

	struct sym_stats stats;
};

/* Index every CU now and answer lookups from one merged index from then on
 * (the way sym_open worked before lookups indexed lazily): the reference the
 * lazy path is tested against. 0 or BK_E_NOMEM. */
BK_HIDDEN int sym_index_all(struct sym_file *f);

BK_HIDDEN void sym_strings_free(struct sym_strings *s);
/* Intern LEN bytes of STR (need not be terminated); NULL on NOMEM. */
BK_HIDDEN const char *sym_intern(struct sym_strings *s, const char *str, size_t len);
/* Intern the demangled form of NAME when it is mangled, else NAME itself;
 * NULL on NOMEM (never NAME left mangled for want of memory). */
BK_HIDDEN const char *sym_intern_name(struct sym_strings *s, const char *name);

BK_HIDDEN void *sym_vec_push(struct sym_vec *v);
BK_HIDDEN void sym_vec_free(struct sym_vec *v);

/* Sort an indexed CU's rows and ranges and fill its range_max_high (sym.c).
 * 0 or BK_E_NOMEM. */
BK_HIDDEN int sym_cu_finish(struct sym_cu *cu);

/* ---- The symbol memo on disk (sym_cache.c) ---- */

/* What bk_space_symbolize answered per address of one file, kept in DIR
 * per build-id. SIG names the inputs (file identities, see sym_cache.c).
 * NULL when there is no memo to be had: lookups are then just not
 * memoized. */
struct sym_memo;
BK_HIDDEN struct sym_memo *sym_memo_open(const char *dir, const uint8_t *build_id, size_t id_len,
					 const char *sig);
/* The answer recorded for ADDR (link-time): how many frames (0: nothing is
 * known there), or -1 when there is none. */
BK_HIDDEN int sym_memo_get(struct sym_memo *m, uint64_t addr, struct bk_symbol *out, int max);
/* Record the N frames (at most 16) answered for ADDR: kept for this run and
 * appended to the file. The strings must outlive M. */
BK_HIDDEN void sym_memo_put(struct sym_memo *m, uint64_t addr, const struct bk_symbol *frames,
			    int n);
BK_HIDDEN void sym_memo_close(struct sym_memo *m);

/* An ELF file opened with libelf (ELF_C_READ_MMAP), for symbol tables and
 * raw section bytes. */
struct sym_inflated;
struct sym_elf {
	int fd;
	void *elf;             /* Elf * */
	size_t shstrndx;
	uint16_t machine;
	uint16_t type;         /* e_type */
	bool is64, msb;        /* ELFCLASS64; ELFDATA2MSB */
	struct sym_inflated *inflated; /* sections inflated so far (sym_elf.c) */
	void *owned;           /* the image's bytes, when the sym_elf keeps its own copy */
};
BK_HIDDEN int sym_elf_open(const char *path, struct sym_elf *out);
/* The same over an ELF file's bytes in memory (read, never written; they
 * must outlive OUT). */
BK_HIDDEN int sym_elf_open_memory(const void *image, size_t len, struct sym_elf *out);
/* The same over a copy of the bytes, which OUT keeps until sym_elf_close
 * (for a sym_elf that outlives the image: sym_dwarf_open takes it over). */
BK_HIDDEN int sym_elf_open_copy(const void *image, size_t len, struct sym_elf *out);
BK_HIDDEN void sym_elf_close(struct sym_elf *e);
/* Whether section NAME (or .zNAME) has contents; *COMPRESSED: stored compressed. */
BK_HIDDEN bool sym_elf_has(struct sym_elf *e, const char *name, bool *compressed);
/* Size of section NAME (or its .zdebug_ form) once decompressed, without
 * decompressing it; false when absent, empty or unreadable. */
BK_HIDDEN bool sym_elf_section_size(struct sym_elf *e, const char *name, uint64_t *size);
/* Contents of section NAME (or its .zdebug_ form), decompressed; false when
 * absent or unreadable. The bytes live until sym_elf_close. */
BK_HIDDEN bool sym_elf_section(struct sym_elf *e, const char *name, const uint8_t **data,
			       size_t *len, bool *compressed);
/* Read the function symbols of section type SHT (SHT_SYMTAB / SHT_DYNSYM)
 * into F (merged, sorted; names as in the table). 0 and F->nsyms == 0 when
 * there are none. */
BK_HIDDEN int sym_elf_symbols(struct sym_file *f, struct sym_elf *e, uint32_t sht);
/* The same, with ALSO's .symtab merged in (may be NULL). */
BK_HIDDEN int sym_elf_symbols_with(struct sym_file *f, struct sym_elf *e, uint32_t sht,
				   struct sym_elf *also);
/* E's .gnu_debugdata (MiniDebugInfo) decoded: an ELF file in a buffer from
 * the funnel (*OUT; NULL, 0 when E has none). BK_E_CORRUPT (not xz, or cut
 * short), BK_E_LIMIT (over SYM_MAX_DEBUGDATA), BK_E_NOMEM. */
#define SYM_MAX_DEBUGDATA ((size_t)64 << 20)
BK_HIDDEN int sym_elf_debugdata(struct sym_elf *e, uint8_t **out, size_t *out_len);
/* The same from the dynamic segment of L, a file rebuilt from a loaded
 * image without section headers (a deleted library's image in a core):
 * .dynsym by DT_SYMTAB, DT_STRTAB and DT_HASH or DT_GNU_HASH, their
 * addresses as linked or as the dynamic loader relocated them in memory
 * (BIAS: runtime = link-time + BIAS). 64-bit little-endian images only. */
struct ldr_elf;
BK_HIDDEN int sym_dyn_symbols(struct sym_file *f, const struct ldr_elf *l, int64_t bias);
/* The name to show for symbol S: demangled on first use (a symbol version
 * suffix kept: "_ZN3foo3barEv@@V_1" -> "foo::bar()@@V_1"); NULL on NOMEM. */
BK_HIDDEN const char *sym_symbol_name(struct sym_file *f, struct sym_symbol *s);

/* Code ranges that count: a row sequence or function starting outside every
 * executable segment belongs to code the linker discarded (its address was
 * resolved to 0 or a tombstone). With no segments at all, everything counts. */
struct sym_code {
	const uint64_t (*seg)[2]; /* [vaddr, vaddr + memsz) of PF_X segments */
	size_t nseg;
};
BK_HIDDEN bool sym_code_has(const struct sym_code *c, uint64_t addr);

/* The DWARF of PATH for F (sym_dwarf.c); PATH NULL: ELF is an image from
 * memory (no ET_REL: those need libdwarf's own reader, and a file). ELF is PATH opened with libelf:
 * it is taken over (*ELF is left closed) and kept until sym_close; CODE is
 * copied. Runs the guards of sym_guard.c and reads the unit index from
 * .debug_aranges, or, without it, sets everything up at once
 * (sym_dwarf_ready). MAIN_PATH (may be NULL) is the file the code is in,
 * when PATH is its separate debug file: split DWARF packages are looked
 * for next to both. Only BK_E_NOMEM is an error: DWARF that cannot be used
 * is counted in F's stats and left out. */
BK_HIDDEN int sym_dwarf_open(struct sym_file *f, const char *path, const char *main_path,
			     struct sym_elf *elf, const struct sym_code *code);
/* Before the first lookup: open libdwarf, read the unit headers, check the
 * .debug_aranges index against them (units it lacks: their top DIE) and
 * fill F->cus and F->cu_ranges. Idempotent; 0 or BK_E_NOMEM (then nothing
 * is kept and a later call tries again). */
BK_HIDDEN int sym_dwarf_ready(struct sym_file *f);
/* ---- perf maps (sym_perfmap.c): JIT code names, /tmp/perf-PID.map ---- */

#define SYM_PERFMAP_MAX_BYTES (256u << 20)
#define SYM_PERFMAP_MAX_ENTRIES (16u << 20)
#define SYM_PERFMAP_MAX_SCAN 4096

struct sym_perfmap;
/* Read the perf map at PATH (a regular file): 0, BK_E_IO, BK_E_NOMEM. */
BK_HIDDEN int sym_perfmap_open(const char *path, struct sym_perfmap **out);
/* The same over TEXT (LEN bytes, TEXT[LEN] == 0; taken over, freed with
 * the map, written to). */
BK_HIDDEN int sym_perfmap_parse(char *text, size_t len, struct sym_perfmap **out);
/* The name of the code at runtime address ADDR: 1 with OUT (function and
 * offset; the string lives as long as M), or 0. */
BK_HIDDEN int sym_perfmap_lookup(const struct sym_perfmap *m, uint64_t addr, struct bk_symbol *out);
/* Lines skipped (unreadable, or past the bounds). */
BK_HIDDEN size_t sym_perfmap_skipped(const struct sym_perfmap *m);
BK_HIDDEN void sym_perfmap_close(struct sym_perfmap *m);

/* ---- Split DWARF (sym_split.c) ---- */

#define SYM_MAX_SPLIT_FILES 4096 /* .dwo / .dwp files tried per file */

struct sym_split_file;
/* The split files one file's skeleton units have named, opened or tried. */
struct sym_splits {
	struct sym_split_file **f;
	size_t n, cap;
};
/* A skeleton's split unit. */
struct sym_split_unit {
	void *dbg;                    /* Dwarf_Debug of its file, tied to the skeleton's */
	void *die;                    /* Dwarf_Die: its top DIE (the caller deallocates) */
	unsigned tag;                 /* 1 + its file's index in the sym_splits: tells its
				       * DIE offsets from those of other files */
	const uint8_t *rnglists;      /* its .debug_rnglists.dwo contribution, or NULL */
	size_t rnglists_len;
	uint64_t rnglists_base;       /* offset of the offset array in it */
};
/* Find the split unit of the skeleton with DWO_ID (named DWO_NAME under
 * COMP_DIR; either may be NULL) in S, opening split files of the file at
 * PATH (main file MAIN_PATH, may be NULL) tied to MAIN_DBG. 0,
 * BK_E_NOT_FOUND, or BK_E_NOMEM. */
BK_HIDDEN int sym_split_find(struct sym_splits *s, const char *path, const char *main_path,
			     void *main_dbg, const char *comp_dir, const char *dwo_name,
			     uint64_t dwo_id, struct sym_split_unit *out);
BK_HIDDEN void sym_splits_close(struct sym_splits *s);

/* Read unit CU's lines and scopes (once). 0 or BK_E_NOMEM, as above. */
BK_HIDDEN int sym_dwarf_index_cu(struct sym_file *f, size_t cu);
BK_HIDDEN void sym_dwarf_close(struct sym_dwarf *d);

/* libdwarf over sections that sym_elf_section hands it (sym_dwobj.c):
 * .debug_info, .debug_abbrev, .debug_line, .debug_str, .debug_line_str,
 * .debug_str_offsets, .debug_addr and .debug_rnglists (and a split file's
 * .dwo forms of those, and a package's indexes), each decompressed on
 * first use, shared with our own readers; no other section (so libdwarf
 * never parses .debug_loclists, nor any frame section). *DBG: a
 * Dwarf_Debug. 0, BK_E_NOMEM, BK_E_NOT_FOUND (no DWARF for libdwarf) or
 * BK_E_CORRUPT (libdwarf refused it). */
struct sym_dwobj;
BK_HIDDEN int sym_dwobj_init(struct sym_elf *e, void **dbg, struct sym_dwobj **obj);
/* Held around every libdwarf init of ours (see sym_dwobj.c). */
BK_HIDDEN extern pthread_mutex_t sym_dwarf_init_lock;
BK_HIDDEN void sym_dwobj_finish(void *dbg, struct sym_dwobj *obj);

/* .debug_aranges (DWARF 5 §6.1.2): each set's CU offset (SET) and each of
 * its ranges (RANGE; empty ones included). 0, or BK_E_CORRUPT with what was
 * delivered so far (sym_aranges.c). */
struct sym_aranges_cb {
	void (*set)(void *arg, uint64_t cu_off);
	void (*range)(void *arg, uint64_t cu_off, uint64_t lo, uint64_t hi);
	void *arg;
};
BK_HIDDEN int sym_aranges(const uint8_t *sec, size_t len, const struct sym_aranges_cb *cb);

/* The unit headers of .debug_info (DWARF 5 §7.5.1), in order: each unit
 * whose header reads (version 2-5, address size 4 or 8, length inside the
 * section) goes to CB; stops at the first that does not (BK_E_CORRUPT),
 * after SYM_MAX_CUS units (BK_E_LIMIT), or when CB returns non-zero (that
 * value). */
BK_HIDDEN int sym_units(const uint8_t *info, size_t len,
			int (*cb)(void *arg, const struct sym_cu *unit), void *arg);

/* DWARF 5 line-table file registers, decoded from the raw program of the
 * table at TABLE_OFF in .debug_line, row by row, for cross-checking what
 * libdwarf reports (see sym_line.c). Fills ADDRS / FILES (NROWS each, the
 * caller's arrays) and returns 0 when the program has exactly NROWS rows;
 * BK_E_CORRUPT / BK_E_LIMIT otherwise. */
BK_HIDDEN int sym_line_files(const uint8_t *sec, size_t sec_len, uint64_t table_off,
			     size_t nrows, uint64_t *addrs, uint32_t *files);

/* What decoding a range list needs from its CU and the file. */
struct sym_rng_ctx {
	const uint8_t *rnglists, *ranges, *addr; /* sections, NULL if absent */
	size_t rnglists_len, ranges_len, addr_len;
	uint8_t addr_size, off_size;  /* of the CU */
	uint64_t cu_base;             /* the CU's DW_AT_low_pc, or 0 */
	bool has_rnglists_base, has_addr_base;
	uint64_t rnglists_base, addr_base;
};
/* Deliver each [lo, hi) of the list at VAL (an offset in .debug_rnglists, or
 * with IS_INDEX a DW_FORM_rnglistx index) / at offset OFF of .debug_ranges.
 * 0, or BK_E_CORRUPT / BK_E_LIMIT after the ranges delivered so far. */
BK_HIDDEN int sym_rnglist(const struct sym_rng_ctx *c, bool is_index, uint64_t val,
			  void (*cb)(void *arg, uint64_t lo, uint64_t hi), void *arg);
/* Entry INDEX of the CU's part of .debug_addr (DWARF 5 §7.27): 0 or
 * BK_E_CORRUPT. */
BK_HIDDEN int sym_debug_addr(const struct sym_rng_ctx *c, uint64_t index, uint64_t *out);
BK_HIDDEN int sym_ranges4(const struct sym_rng_ctx *c, uint64_t off,
			  void (*cb)(void *arg, uint64_t lo, uint64_t hi), void *arg);

/* 0 when every table header of a .debug_rnglists / .debug_loclists section
 * passes the checks libdwarf 20210528 makes (see sym_guard.c), else
 * BK_E_CORRUPT: then libdwarf must not see the file. */
BK_HIDDEN int sym_check_lists(const uint8_t *sec, size_t len);

#endif
