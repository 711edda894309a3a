/* ELF images (libelf): identity, segments, load bias, the unwind sections
 * and separate debug files.
 *
 * An ldr_elf owns its bytes (a private read-only mapping of the file, or a
 * copy of a memory image) and every buffer it hands out; section data stays
 * valid until ldr_close. Sections flagged SHF_COMPRESSED are decompressed
 * once at open. Cold: everything here may allocate; nothing here is used on
 * an unwind step except reading already-extracted fields.
 */
#ifndef BK_LOADER_H
#define BK_LOADER_H

#include "../arch/arch.h"
#include "../base/base.h"

/* One section's contents as the unwinder needs them. */
struct ldr_section {
	bool present;
	const uint8_t *data; /* NULL for SHT_NOBITS or absent */
	size_t len;
	uint64_t addr;       /* sh_addr: link-time address (0 for non-alloc sections) */
	uint64_t file_off;   /* sh_offset in the file */
	bool was_compressed; /* SHF_COMPRESSED in the file; data is decompressed */
};

struct ldr_segment {
	uint64_t vaddr, memsz;
	uint64_t file_off, filesz;
	uint32_t flags;      /* PF_R | PF_W | PF_X */
};

#define LDR_MAX_BUILD_ID 64

struct ldr_elf {
	char *path;                 /* NULL when opened from memory */
	const struct arch_info *arch; /* NULL when e_machine is not supported */
	uint16_t machine;           /* e_machine */
	uint16_t type;              /* e_type: ET_EXEC, ET_DYN, ET_REL, ET_CORE */
	uint8_t elf_class;          /* ELFCLASS32 / ELFCLASS64 */
	uint8_t addr_size;          /* 4 or 8 */
	uint64_t entry;

	struct ldr_segment *segs;   /* PT_LOAD segments, in file order */
	size_t nsegs;
	uint64_t min_vaddr;         /* lowest PT_LOAD p_vaddr, rounded down to its p_align */
	bool has_eh_frame_hdr_seg;  /* PT_GNU_EH_FRAME present */
	uint64_t eh_frame_hdr_vaddr;
	uint64_t eh_frame_hdr_memsz;

	/* Unwind-related sections. When the file has no section headers, the
	 * .eh_frame_hdr and .eh_frame are found through PT_GNU_EH_FRAME (the
	 * .eh_frame then extends to the end of its segment). */
	struct ldr_section eh_frame;
	struct ldr_section eh_frame_hdr;
	struct ldr_section debug_frame;
	struct ldr_section text;    /* base for DW_EH_PE_textrel */
	struct ldr_section got;     /* .got: base for DW_EH_PE_datarel in .eh_frame */

	uint8_t build_id[LDR_MAX_BUILD_ID];
	size_t build_id_len;        /* 0: no NT_GNU_BUILD_ID */
	/* Unwind sections left absent because their compression (ch_type) is
	 * neither zlib nor zstd: say so, never leave them out in silence. */
	unsigned unknown_compression;
	char *debuglink;            /* .gnu_debuglink file name, or NULL */
	uint32_t debuglink_crc;

	/* Private to loader.c. */
	void *priv;
};

/* Open by path / from a memory image (the bytes are copied). Errors:
 * BK_E_IO (cannot open/read; directory), BK_E_NOT_ELF, BK_E_CORRUPT
 * (truncated or inconsistent headers), BK_E_UNSUPPORTED (big-endian),
 * BK_E_NOMEM. A supported ELF whose e_machine backstep does not know still
 * opens, with arch == NULL. */
BK_HIDDEN int ldr_open_path(const char *path, struct ldr_elf **out);
BK_HIDDEN int ldr_open_memory(const void *image, size_t len, struct ldr_elf **out);
BK_HIDDEN void ldr_close(struct ldr_elf *elf);
/* Open a file from its loaded image (src/loader/ldr_image.c): IMAGE holds
 * the runtime bytes from the lowest PT_LOAD page on, as a process maps them
 * (a core's memory, the vDSO); the file layout is rebuilt from the program
 * headers. ABSENT (may be NULL: all there) flags, per PAGE bytes of the
 * image, the pages it lacks (read as zeros). Errors as ldr_open_memory, and
 * BK_E_MEMORY when a byte of .eh_frame_hdr or .eh_frame is absent. */
BK_HIDDEN int ldr_open_loaded(const void *image, size_t len, const bool *absent, size_t page,
			      struct ldr_elf **out);

/* Bias to add to link-time addresses when the lowest PT_LOAD segment is
 * mapped at RUNTIME_BASE (for ET_EXEC mapped at its link address: 0). */
BK_HIDDEN int64_t ldr_load_bias(const struct ldr_elf *elf, uint64_t runtime_base);

/* The bytes of the file as opened (mapped, or the copy of a memory image);
 * valid until ldr_close. */
BK_HIDDEN void ldr_bytes(const struct ldr_elf *elf, const uint8_t **data, size_t *len);

/* Read LEN bytes at link-time address VADDR from the file's PT_LOAD contents
 * (bytes past p_filesz inside p_memsz read as zero); BK_E_MEMORY if not
 * mapped. Used for DW_EH_PE_indirect when dumping files. */
BK_HIDDEN int ldr_read_vaddr(const struct ldr_elf *elf, uint64_t vaddr, void *dst, size_t len);
/* The same, shaped as a base_mem callback (ctx is the ldr_elf). */
BK_HIDDEN int ldr_mem_read(void *ctx, uint64_t addr, void *dst, size_t len);

/* Relocatable objects (ldr_rel.c). Each section sits at its sh_addr (0 in
 * a compiler's .o, where a function then reads as its offset in its
 * section, as readelf shows it; a JIT's load address in the objects it
 * hands GDB).
 * ldr_rel_section: the bytes of ELF's section SEC (an ET_REL's) with the
 * relocations that target it applied, in a buffer the caller frees; *OUT
 * NULL (and 0) when the file is not ET_REL or nothing targets SEC.
 * APPLIED and SKIPPED count relocations (skipped: a type not applied, a
 * field outside the section, no symbol address). BK_E_NOMEM. */
BK_HIDDEN int ldr_rel_section(const struct ldr_elf *elf, const struct ldr_section *sec,
			      uint8_t **out, size_t *applied, size_t *skipped);
/* An ELF64 ET_REL image whose allocated sections carry their load
 * addresses, linked in place: its relocations applied (then turned into
 * SHT_NULL so that no reader applies them again), defined symbols given
 * their addresses, a PT_LOAD per allocated section with an address, and
 * e_type ET_EXEC. The result is a file read as any other, bias 0.
 * CODE_LO..CODE_HI spans its executable sections; BASE is the lowest
 * PT_LOAD address. Errors: BK_E_NOT_ELF, BK_E_UNSUPPORTED (not ET_REL,
 * not ELF64), BK_E_CORRUPT, BK_E_NOT_FOUND (no code section has an
 * address), BK_E_NOMEM. */
struct ldr_rel_linked {
	uint8_t *image; /* base_alloc'ed; the caller frees */
	size_t len;
	uint64_t base, code_lo, code_hi;
	size_t applied, skipped;
};
BK_HIDDEN int ldr_rel_link(const void *image, size_t len, struct ldr_rel_linked *out);
/* The st_value of the defined symbol NAME in ELF's .dynsym, else .symtab
 * (link-time); WANT_SIZE >= 0: only a symbol of that st_size (or none
 * given) is taken from a scanned table. BK_E_NOT_FOUND. .dynsym through
 * its .gnu.hash when it has one; otherwise, and .symtab, scanned (names
 * read only where the size fits). Cold. */
BK_HIDDEN int ldr_find_symbol(const struct ldr_elf *elf, const char *name, int64_t want_size,
			      uint64_t *value);

/* Find and open the separate debug file of ELF:
 *   1. by build-id: DEBUG_ROOT/.build-id/xx/rest.debug
 *   2. by .gnu_debuglink NAME (CRC32 checked): DIR/NAME, DIR/.debug/NAME,
 *      DEBUG_ROOT/DIR/NAME, where DIR is the directory of elf->path;
 *   3. by build-id from debuginfod (ldr_debuginfod_fetch), when
 *      DEBUGINFOD_URLS is set.
 * DIR is the symlink-resolved directory of elf->path (a file opened from
 * memory has none, so only the build-id route applies). DEBUG_ROOT NULL
 * means "/usr/lib/debug". As elfutils does: when ELF has a build-id, a
 * candidate is accepted exactly when its build-id is equal (the CRC is then
 * not consulted); otherwise its CRC32 must match the debuglink's.
 * BK_E_NOT_FOUND when none is found. */
BK_HIDDEN int ldr_open_debug_file(const struct ldr_elf *elf, const char *debug_root,
				  struct ldr_elf **out);

/* The file with BUILD_ID (LEN bytes) from the debuginfod servers of
 * DEBUGINFOD_URLS (ldr_debuginfod.c): its debug file, or (EXECUTABLE) the
 * file itself. 0 and *PATH (from the funnel) naming it in debuginfod's
 * cache; BK_E_NOT_FOUND (not there, no server, turned off, or the server
 * failed: then ldr_debuginfod_problem says how), BK_E_NOMEM.
 * A hook, NULL until ldr_debuginfod.c's constructor sets it: that object
 * (and its dlopen) is in libbackstep.so and in programs that use its
 * functions (the CLI), not in every static program linking the archive,
 * where dlopen cannot work anyway. */
BK_HIDDEN extern int (*ldr_debuginfod_fetch)(const uint8_t *build_id, size_t len,
					     bool executable, char **path);
/* Never ask debuginfod in this process (the CLI's --no-debuginfod). */
BK_HIDDEN void ldr_debuginfod_off(void);
/* What went wrong with a server, once it did (a line for a warning), or NULL. */
BK_HIDDEN const char *ldr_debuginfod_problem(void);

/* The supplementary file dwz made for OWNER (a path, may be NULL), named
 * NAME by OWNER's .gnu_debugaltlink (or .debug_sup) with BUILD_ID (LEN
 * bytes; 0: not known, the name decides): NAME itself when absolute, else
 * in the symlink-resolved directory of OWNER; DEBUG_ROOT/.dwz/BASENAME;
 * then by build-id under DEBUG_ROOT (NULL: /usr/lib/debug). A candidate
 * is taken when its build-id is BUILD_ID. BK_E_NOT_FOUND when none is. */
BK_HIDDEN int ldr_open_alt_file(const char *owner, const char *name, const uint8_t *build_id,
				size_t build_id_len, const char *debug_root, struct ldr_elf **out);

/* Inflate a compressed section's contents as stored in the file: with
 * ZDEBUG false an SHF_COMPRESSED section (an Elf32/64_Chdr, by IS64, then
 * the stream), with ZDEBUG true a legacy .zdebug_* section ("ZLIB", an
 * 8-byte big-endian size, the stream). The size the header claims must come
 * out exactly. *OUT comes from the allocation funnel (base_free it). 0,
 * BK_E_NOMEM, BK_E_CORRUPT, or BK_E_UNSUPPORTED (not zlib). */
BK_HIDDEN int ldr_inflate(const uint8_t *p, size_t len, bool is64, bool zdebug, uint8_t **out,
			  size_t *out_len);

/* The GNU debuglink CRC32 (the same as zlib's crc32) of a buffer. */
BK_HIDDEN uint32_t ldr_crc32(uint32_t crc, const uint8_t *buf, size_t len);

/* jitdump files (ldr_jitdump.c): what a JIT says of the code it generated,
 * for profilers. Read through SOURCE (a file, or bytes); each load and each
 * move is one ldr_jd_code, in file order (SEQ). */
#define LDR_JD_MAX_CODE ((size_t)1 << 22)
#define LDR_JD_MAX_NAME 4096
#define LDR_JD_MAX_LINES ((uint64_t)1 << 20)
#define LDR_JD_MAX_ALL_LINES ((uint64_t)1 << 24)
#define LDR_JD_MAX_UNWIND ((uint64_t)16 << 20)
#define LDR_JD_MAX_SCAN 4096 /* entries a lookup looks back over */

struct ldr_jd_line {
	uint64_t addr;      /* where the line starts (at LINE_BASE's placement) */
	uint32_t line, column;
	const char *file;
};

struct ldr_jd_code {
	uint64_t start, end;   /* the code's range */
	uint64_t time;         /* the record's timestamp */
	uint64_t index;        /* code_index */
	const char *name;
	uint64_t code_off;     /* file offset of the code bytes (HAS_CODE) */
	bool has_code;
	const uint8_t *eh;     /* its .eh_frame, EH_LEN bytes (0: none), which */
	uint32_t eh_len;       /* were at EH_ADDR in the JIT's memory */
	uint64_t eh_addr;
	uint64_t line_base;    /* the start the debug entries were written for */
	uint32_t line0, nlines; /* its debug entries in lines[] */
	uint32_t seq;          /* in file order */
};

struct ldr_jitdump {
	uint16_t machine;      /* e_machine */
	uint32_t pid;
	uint64_t time, flags;  /* header's; flags bit 0: an arch-specific clock */
	struct ldr_jd_code *code;
	size_t ncode;
	struct ldr_jd_line *lines;
	size_t nlines;
	size_t nloads, nmoves, ndebug, nunwind; /* records used (unwind: with an .eh_frame) */
	size_t records, skipped;        /* read; of kinds not known */
	size_t moves_unknown, debug_dropped, unwind_dropped; /* records not used */
	bool truncated, closed, limit;  /* cut at the end; a CLOSE record; a count bound */
	int error;             /* the record that did not hold together (reading ended) */
	uint64_t end_off;      /* where the reading ended */
	uint64_t file_len;     /* the source's length when read */
	/* Private to ldr_jitdump.c. */
	size_t capcode, caplines, idxcap, idxn;
	uint32_t *idx, *by_start;
	uint64_t *max_end;
	struct jd_chunk *arena;
};

struct ldr_jd_source {
	int (*read)(void *ctx, uint64_t off, void *dst, size_t len);
	void *ctx;
	uint64_t len;
};
struct ldr_jd_mem {
	const uint8_t *bytes;
	size_t len;
};
BK_HIDDEN struct ldr_jd_source ldr_jd_memory(struct ldr_jd_mem *m);
/* Whether PATH names a jitdump: a file jit-PID.dump (perf's rule: a JIT
 * maps its jitdump, with PROT_EXEC, for perf to find it so); with
 * DELETED, also as a live process's map shows one removed since. */
BK_HIDDEN bool ldr_jitdump_name(const char *path, bool deleted);
/* Read a jitdump: 0 and *OUT (what could be read: a record that does not
 * hold together ends it, kept in ERROR); BK_E_UNSUPPORTED (not a jitdump,
 * byte-swapped, a version not 1 or 2), BK_E_CORRUPT (a header that does
 * not fit), BK_E_IO, BK_E_NOMEM. */
BK_HIDDEN int ldr_jitdump_read(const struct ldr_jd_source *source, struct ldr_jitdump **out);
/* The same from the file at PATH (its size when opened). */
BK_HIDDEN int ldr_jitdump_open(const char *path, struct ldr_jitdump **out);
BK_HIDDEN void ldr_jitdump_free(struct ldr_jitdump *jd);
/* Build the lookup index (after reading). BK_E_NOMEM. */
BK_HIDDEN int ldr_jitdump_index(struct ldr_jitdump *jd);
/* The code holding ADDR among the first VIEW entries (file order): the
 * latest that does, as it is what is there after them; NULL if none. */
BK_HIDDEN const struct ldr_jd_code *ldr_jitdump_at(const struct ldr_jitdump *jd, uint64_t addr,
						   size_t view);
/* C's debug entry for ADDR (the last at or below it), or NULL. */
BK_HIDDEN const struct ldr_jd_line *ldr_jitdump_line(const struct ldr_jitdump *jd,
						     const struct ldr_jd_code *c, uint64_t addr);

#endif
