/* The symbol layer: link-time address -> function name (demangled), source
 * file:line:column and the chain of inlined calls at that address.
 *
 * Everything is indexed once, at sym_open (cold: it allocates, reads whole
 * tables through libelf and libdwarf, copies every string it keeps and then
 * lets go of both libraries' handles). A lookup is a few binary searches over
 * the sorted arrays below and never allocates; strings handed out stay valid
 * until sym_close. Not AS-safe and never used on the unwind path. A sym_file
 * is read-only after sym_open, so lookups from several threads are fine.
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
 * out (see sym_stats). */
BK_HIDDEN int sym_open(const char *path, const char *debug_path, struct sym_file **out);
BK_HIDDEN void sym_close(struct sym_file *f);

/* Describe ADDR: up to MAX frames, innermost first. For an address inside
 * inlined code: first the inlined function(s) (the innermost with the
 * file:line of ADDR, each outer one with the call site of the frame before
 * it), last the real function with its symbol offset. Returns the number of
 * frames: >= 1 when a symbol, a DWARF function or a line row covers ADDR
 * (a row alone gives one frame with function NULL), 0 when nothing is known,
 * BK_E_INVAL for bad arguments (MAX < 1). When MAX is smaller than the chain,
 * the MAX innermost frames are returned. */
BK_HIDDEN int sym_lookup(const struct sym_file *f, uint64_t addr, struct sym_frame *frames,
			 int max);

/* What sym_open found; for tests and `backstep` diagnostics. */
struct sym_stats {
	size_t symbols;        /* function symbols after merging aliases */
	int symbol_source;     /* 0 none, 1 .symtab, 2 debug file's .symtab, 3 .dynsym */
	bool used_debug_file;  /* a separate debug file was opened */
	bool dwarf;            /* DWARF was found and opened by libdwarf */
	bool dwarf_compressed; /* ... from SHF_COMPRESSED or .zdebug sections */
	bool dwarf_rejected;   /* DWARF present but too damaged to open (sym_guard.c) */
	size_t cus, cus_failed; /* CUs seen / CUs skipped (in part or whole) after an error */
	size_t line_rows;      /* rows in the line index (incl. end-of-sequence marks) */
	size_t scopes, ranges; /* functions and inlined calls / their address ranges */
	size_t file_fixups;    /* DWARF 5 rows whose file libdwarf got wrong (see sym_line.c) */
};
BK_HIDDEN void sym_get_stats(const struct sym_file *f, struct sym_stats *out);

/* Demangle a C++ (Itanium) or Rust (legacy or v0) symbol. Returns a string
 * from the allocation funnel (base_free it), or NULL when NAME is not a
 * mangled name this understands, is longer than SYM_MAX_MANGLED, or on
 * allocation failure. */
BK_HIDDEN char *sym_demangle(const char *name);

/* ---- Internal to src/sym ------------------------------------------------ */

/* Bounds (exceeding one drops the item in question, never the file). */
#define SYM_MAX_DIE_DEPTH 256      /* DIE nesting followed in one CU */
#define SYM_MAX_REF_HOPS 16        /* abstract_origin / specification chain */
#define SYM_MAX_RANGES_PER_DIE 65536
#define SYM_MAX_MANGLED 4096       /* libiberty uses stack arrays sized by this */
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
	const char *name;     /* demangled if it was mangled */
};

/* A line row; file == SYM_NO_FILE marks the end of a sequence. */
struct sym_line {
	uint64_t addr;
	uint32_t file;        /* index into sym_file.files */
	uint32_t line;
	uint32_t column;
	uint32_t ord;         /* order of appearance: ties keep the last row */
};

/* A function (depth 0) or an inlined call (depth > 0). */
struct sym_scope {
	const char *name;
	const char *call_file; /* of an inlined call: where it was called from */
	uint32_t call_line, call_column;
	int32_t parent;        /* enclosing scope, or -1 */
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

struct sym_file {
	struct sym_strings strings;
	struct sym_symbol *syms;
	uint64_t *sym_max_end;   /* prefix maximum of syms[..].end */
	size_t nsyms;
	const char **files;
	size_t nfiles;
	struct sym_line *lines;
	size_t nlines;
	struct sym_scope *scopes;
	size_t nscopes;
	struct sym_range *ranges;
	uint64_t *range_max_high; /* prefix maximum of ranges[..].high */
	size_t nranges;
	struct sym_stats stats;
};

BK_HIDDEN void sym_strings_free(struct sym_strings *s);
/* Intern LEN bytes of STR (need not be terminated); NULL on NOMEM. */
BK_HIDDEN const char *sym_intern(struct sym_strings *s, const char *str, size_t len);
/* Intern the demangled form of NAME when it is mangled, else NAME itself. */
BK_HIDDEN const char *sym_intern_name(struct sym_strings *s, const char *name);

BK_HIDDEN void *sym_vec_push(struct sym_vec *v);
BK_HIDDEN void sym_vec_free(struct sym_vec *v);

/* An ELF file opened with libelf (ELF_C_READ_MMAP), for symbol tables and
 * raw section bytes. */
struct sym_elf {
	int fd;
	void *elf;             /* Elf * */
	size_t shstrndx;
	uint16_t machine;
};
BK_HIDDEN int sym_elf_open(const char *path, struct sym_elf *out);
BK_HIDDEN void sym_elf_close(struct sym_elf *e);
/* Whether section NAME (or .zNAME) has contents; *COMPRESSED: stored compressed. */
BK_HIDDEN bool sym_elf_has(struct sym_elf *e, const char *name, bool *compressed);
/* Contents of section NAME (or its .zdebug_ form), decompressed; false when
 * absent or unreadable. The bytes live until sym_elf_close. */
BK_HIDDEN bool sym_elf_section(struct sym_elf *e, const char *name, const uint8_t **data,
			       size_t *len, bool *compressed);
/* Read the function symbols of section type SHT (SHT_SYMTAB / SHT_DYNSYM)
 * into F (merged, sorted, demangled). 0 and F->nsyms == 0 when there are none. */
BK_HIDDEN int sym_elf_symbols(struct sym_file *f, struct sym_elf *e, uint32_t sht);

/* Code ranges that count: a row sequence or function starting outside every
 * executable segment belongs to code the linker discarded (its address was
 * resolved to 0 or a tombstone). With no segments at all, everything counts. */
struct sym_code {
	const uint64_t (*seg)[2]; /* [vaddr, vaddr + memsz) of PF_X segments */
	size_t nseg;
};
BK_HIDDEN bool sym_code_has(const struct sym_code *c, uint64_t addr);

/* Index the DWARF of PATH (lines, functions, inlined calls) into F. ELF is
 * the same file opened with libelf (for raw .debug_line). Only BK_E_NOMEM is
 * fatal; every libdwarf error skips what it spoils and is counted. */
BK_HIDDEN int sym_dwarf_index(struct sym_file *f, const char *path, struct sym_elf *elf,
			      const struct sym_code *code);

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
BK_HIDDEN int sym_ranges4(const struct sym_rng_ctx *c, uint64_t off,
			  void (*cb)(void *arg, uint64_t lo, uint64_t hi), void *arg);

/* 0 when every table header of a .debug_rnglists / .debug_loclists section
 * passes the checks libdwarf 20210528 makes (see sym_guard.c), else
 * BK_E_CORRUPT: then libdwarf must not see the file. */
BK_HIDDEN int sym_check_lists(const uint8_t *sec, size_t len);

#endif
