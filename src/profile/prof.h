/* src/profile: reading perf.data, the files `perf record` writes, one
 * record at a time. Sits above src/base only; a later step walks each
 * sample's stack with src/unwind.
 *
 * Two layouts (tools/perf/Documentation/perf.data-file-format.txt):
 *   file mode  header, attrs (with their id lists), the data section of
 *              records, then feature sections named by the header's bitmap
 *              (HEADER_ARCH, HEADER_EVENT_DESC, HEADER_BUILD_ID, ...);
 *   pipe mode  (`perf record -o -`) a 16-byte header, then only records:
 *              the attrs and features arrive as PERF_RECORD_HEADER_ATTR and
 *              PERF_RECORD_HEADER_FEATURE records ahead of the data.
 * Both are read through one window of at most PROF_WINDOW_LEN bytes: a file
 * of any size costs the same memory, and a stream (prof_open_fd) is never
 * seeked. Records are decoded per include/uapi/linux/perf_event.h.
 *
 * Only little-endian files are read; a byte-swapped one (recorded on a
 * big-endian machine) is BK_E_UNSUPPORTED, as is the version-1 format
 * ("PERFFILE") and compressed data (perf record -z). Bytes that are not a
 * perf.data header are BK_E_CORRUPT.
 *
 * Cold: opening allocates (through base_alloc); prof_next allocates only
 * when a record carries header facts (an attr, a feature, an event name).
 */
#ifndef BK_PROF_H
#define BK_PROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/base.h"

/* ---- Bounds (each exceeded returns BK_E_LIMIT) ---------------------------- */

#define PROF_MAX_ATTRS 4096           /* events in one file */
#define PROF_MAX_IDS (1u << 20)       /* sample ids over all events */
#define PROF_MAX_BUILD_IDS (1u << 20) /* entries of HEADER_BUILD_ID */
#define PROF_MAX_FEATURE_LEN (64u << 20) /* one feature section read whole */
#define PROF_WINDOW_LEN (1u << 20)    /* bytes buffered from a file or stream */
#define PROF_MAX_RECORD 65535         /* perf_event_header.size is a u16 */

/* ---- Constants of the format (perf_event.h and perf's own records) ------- */

enum {
	PROF_RECORD_MMAP = 1,
	PROF_RECORD_LOST = 2,
	PROF_RECORD_COMM = 3,
	PROF_RECORD_EXIT = 4,
	PROF_RECORD_FORK = 7,
	PROF_RECORD_SAMPLE = 9,
	PROF_RECORD_MMAP2 = 10,
	PROF_RECORD_LOST_SAMPLES = 13,
	/* Types from 64 on are written by perf, not the kernel: no sample_id. */
	PROF_RECORD_USER_TYPE_START = 64,
	PROF_RECORD_HEADER_ATTR = 64,
	PROF_RECORD_HEADER_EVENT_TYPE = 65,
	PROF_RECORD_HEADER_TRACING_DATA = 66, /* followed by its u32 size of data */
	PROF_RECORD_HEADER_BUILD_ID = 67,
	PROF_RECORD_FINISHED_ROUND = 68,
	PROF_RECORD_AUXTRACE = 71,            /* followed by its u64 size of data */
	PROF_RECORD_EVENT_UPDATE = 78,
	PROF_RECORD_HEADER_FEATURE = 80,
	PROF_RECORD_COMPRESSED = 81,
	PROF_RECORD_COMPRESSED2 = 83,
};

/* Feature bits of the file header (and feat_id of HEADER_FEATURE records). */
enum {
	PROF_FEAT_BUILD_ID = 2,
	PROF_FEAT_ARCH = 6,
	PROF_FEAT_EVENT_DESC = 12,
};

/* perf_event_header.misc bits read here. */
#define PROF_MISC_MMAP_DATA (1u << 13)     /* MMAP: a non-executable mapping */
#define PROF_MISC_COMM_EXEC (1u << 13)     /* COMM: the name changed by exec */
#define PROF_MISC_MMAP_BUILD_ID (1u << 14) /* MMAP2: build-id instead of inode */
#define PROF_MISC_BUILD_ID_SIZE (1u << 15) /* build_id_event: byte 20 is the size */

/* attr.sample_type bits (PERF_SAMPLE_*): the fields a SAMPLE carries, in
 * the order the kernel writes them (perf_event.h, PERF_RECORD_SAMPLE),
 * and, for the first six, the sample_id trailer of other kernel records. */
#define PROF_SAMPLE_IP (1ull << 0)
#define PROF_SAMPLE_TID (1ull << 1)
#define PROF_SAMPLE_TIME (1ull << 2)
#define PROF_SAMPLE_ADDR (1ull << 3)
#define PROF_SAMPLE_READ (1ull << 4)
#define PROF_SAMPLE_CALLCHAIN (1ull << 5)
#define PROF_SAMPLE_ID (1ull << 6)
#define PROF_SAMPLE_CPU (1ull << 7)
#define PROF_SAMPLE_PERIOD (1ull << 8)
#define PROF_SAMPLE_STREAM_ID (1ull << 9)
#define PROF_SAMPLE_RAW (1ull << 10)
#define PROF_SAMPLE_BRANCH_STACK (1ull << 11)
#define PROF_SAMPLE_REGS_USER (1ull << 12)
#define PROF_SAMPLE_STACK_USER (1ull << 13)
#define PROF_SAMPLE_WEIGHT (1ull << 14)
#define PROF_SAMPLE_DATA_SRC (1ull << 15)
#define PROF_SAMPLE_IDENTIFIER (1ull << 16)
#define PROF_SAMPLE_TRANSACTION (1ull << 17)
#define PROF_SAMPLE_REGS_INTR (1ull << 18)
#define PROF_SAMPLE_PHYS_ADDR (1ull << 19)
#define PROF_SAMPLE_AUX (1ull << 20)
#define PROF_SAMPLE_CGROUP (1ull << 21)
#define PROF_SAMPLE_DATA_PAGE_SIZE (1ull << 22)
#define PROF_SAMPLE_CODE_PAGE_SIZE (1ull << 23)
#define PROF_SAMPLE_WEIGHT_STRUCT (1ull << 24)
#define PROF_SAMPLE_KNOWN ((1ull << 25) - 1) /* other bits: BK_E_UNSUPPORTED */

/* attr.read_format bits (PERF_FORMAT_*). */
#define PROF_FORMAT_TOTAL_TIME_ENABLED (1ull << 0)
#define PROF_FORMAT_TOTAL_TIME_RUNNING (1ull << 1)
#define PROF_FORMAT_ID (1ull << 2)
#define PROF_FORMAT_GROUP (1ull << 3)
#define PROF_FORMAT_LOST (1ull << 4)
#define PROF_FORMAT_KNOWN ((1ull << 5) - 1)

#define PROF_BRANCH_HW_INDEX (1ull << 17) /* attr.branch_sample_type */

/* PERF_SAMPLE_REGS_ABI_* */
enum { PROF_REGS_ABI_NONE = 0, PROF_REGS_ABI_32 = 1, PROF_REGS_ABI_64 = 2 };

/* ---- The reader ------------------------------------------------------------ */

struct prof_reader;

/* One event of the recording (a perf_event_attr and what perf adds). Fields
 * past the attr's own `size` read as 0, as the kernel defines them. */
struct prof_attr {
	uint32_t type;     /* PERF_TYPE_* */
	uint32_t size;     /* the attr's own size field (>= 64: PERF_ATTR_SIZE_VER0) */
	uint64_t config;
	uint64_t sample_period; /* or sample_freq when `freq` */
	uint64_t sample_type;   /* PROF_SAMPLE_* */
	uint64_t read_format;   /* PROF_FORMAT_* */
	uint64_t flags;         /* the bit-field word: disabled, inherit, ... */
	bool freq, sample_id_all;
	uint64_t branch_sample_type;
	uint64_t sample_regs_user;
	uint32_t sample_stack_user;
	uint64_t sample_regs_intr;
	int32_t clockid;       /* the clock of its times (use_clockid), -1: perf's own */
	const char *name;      /* HEADER_EVENT_DESC or EVENT_UPDATE; NULL if none */
	const uint64_t *ids;   /* the sample ids that name this event */
	size_t nids;
};

/* An ELF build-id of a file a process mapped (HEADER_BUILD_ID). */
struct prof_build_id {
	int32_t pid;           /* -1: the kernel and its modules */
	uint16_t misc;         /* PERF_RECORD_MISC_*: cpumode of the mapping */
	uint8_t len;           /* bytes of `bytes` used: 20 unless the record says */
	uint8_t bytes[20];
	const char *filename;
};

/* Registers as a sample carries them: the attr's mask says which, in bit
 * order (asm/perf_regs.h numbering); `dwarf` holds them again under their
 * DWARF numbers when the machine is known and the task was 64-bit. */
struct prof_regs {
	uint64_t abi;          /* PROF_REGS_ABI_*; NONE: no values (a kernel thread) */
	uint64_t mask;
	unsigned nr;           /* values: popcount(mask), 0 for ABI NONE */
	const uint64_t *val;
	const struct bk_regs *dwarf; /* NULL when not mapped */
};

/* PERF_SAMPLE_READ: one value (no PERF_FORMAT_GROUP) or a group's. */
struct prof_read {
	uint64_t time_enabled, time_running; /* 0 unless read_format has them */
	uint64_t nr;           /* entries: 1 without PERF_FORMAT_GROUP */
	const uint8_t *entries; /* nr x {value, id?, lost?}: use prof_read_entry */
	unsigned stride;       /* bytes per entry */
	uint64_t read_format;
};

struct prof_sample {
	uint64_t ip, addr;
	uint64_t period;       /* without PERF_SAMPLE_PERIOD: the fixed attr.sample_period */
	uint64_t weight;       /* PERF_SAMPLE_WEIGHT or _STRUCT (the u64 as read) */
	uint64_t data_src, transaction, phys_addr, cgroup;
	uint64_t data_page_size, code_page_size;
	/* PERF_SAMPLE_CALLCHAIN as perf writes it, PERF_CONTEXT_* markers included. */
	uint64_t callchain_nr;
	const uint64_t *callchain;
	struct prof_read read;
	uint32_t raw_size;
	const uint8_t *raw;
	/* PERF_SAMPLE_BRANCH_STACK: nr entries of {u64 from, to, flags}. */
	uint64_t branch_nr;
	bool branch_has_hw_idx;
	uint64_t branch_hw_idx;
	const uint8_t *branch_entries;
	struct prof_regs regs_user, regs_intr;
	/* PERF_SAMPLE_STACK_USER: `size` bytes were reserved and written from
	 * the user SP up; only `dyn_size` of them are the stack (0 when size is). */
	uint64_t stack_size;
	const uint8_t *stack;
	uint64_t stack_dyn_size;
	uint64_t aux_size;
	const uint8_t *aux;
};

struct prof_mmap {         /* MMAP and MMAP2 */
	uint64_t addr, len, pgoff;
	bool mmap2;
	/* MMAP2 only: the device and inode, or (PROF_MISC_MMAP_BUILD_ID) the build-id. */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint8_t build_id_len;  /* 0: none */
	const uint8_t *build_id;
	uint32_t prot, flags;
	const char *filename;
};

struct prof_comm {
	const char *comm;
	bool exec;             /* PROF_MISC_COMM_EXEC */
};

struct prof_task {         /* FORK and EXIT; the record's time is its sample_id's */
	int32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct prof_lost {         /* LOST and LOST_SAMPLES */
	uint64_t id;           /* LOST only: the event that lost them */
	uint64_t lost;
};

enum prof_kind {
	PROF_SAMPLE = 1,
	PROF_MMAP,             /* MMAP and MMAP2 */
	PROF_COMM,
	PROF_FORK,
	PROF_EXIT,
	PROF_LOST,             /* LOST and LOST_SAMPLES */
	PROF_FINISHED_ROUND,
	PROF_BUILD_ID,         /* HEADER_BUILD_ID in the data (pipe mode) */
	PROF_OTHER,            /* not decoded; its bytes are in `raw` */
};

/* Which common fields are known: PROF_SAMPLE_* bits (TID, TIME, ID,
 * STREAM_ID, CPU for the sample_id trailer or the sample itself; the body
 * of MMAP, COMM, FORK and EXIT sets TID, that of FORK and EXIT TIME). */
struct prof_record {
	enum prof_kind kind;
	uint32_t type;         /* PERF_RECORD_* */
	uint16_t misc;
	uint16_t size;         /* of the record, its header included */
	uint64_t offset;       /* where the record starts in the file or stream */
	const uint8_t *raw;    /* the whole record: SIZE bytes */
	int attr;              /* index for prof_attr_at, -1 when not known */
	uint64_t have;
	int32_t pid, tid;
	uint64_t time;
	uint64_t id, stream_id;
	uint32_t cpu;
	union {
		struct prof_sample sample;
		struct prof_mmap mmap;
		struct prof_comm comm;
		struct prof_task task;
		struct prof_lost lost;
		struct prof_build_id build_id;
	};
};

struct prof_stats {
	uint64_t records;          /* every record read, header-carrying ones too */
	uint64_t by_type[128];     /* by PERF_RECORD_* type; [127]: 127 and above */
	uint64_t other;            /* returned as PROF_OTHER */
	uint64_t payload_bytes;    /* skipped after AUXTRACE and TRACING_DATA */
};

/* Open a perf.data file: file mode (header, attrs, data, features), or a
 * pipe-mode recording saved to a file, or a FIFO (read as a stream). The
 * reader keeps the file open. Errors: BK_E_IO (cannot open or read),
 * BK_E_CORRUPT (not perf.data, or inconsistent), BK_E_UNSUPPORTED
 * (byte-swapped, version 1, unknown sample_type bits), BK_E_LIMIT,
 * BK_E_NOMEM. */
BK_HIDDEN int prof_open_file(const char *path, struct prof_reader **out);
/* A pipe-mode stream on FD (`perf record -o -`), read sequentially, never
 * seeked; FD stays the caller's. A file-mode header on a stream is
 * BK_E_UNSUPPORTED (its features follow the data: open the file instead).
 * The header records perf writes first (attrs, features) are read here. */
BK_HIDDEN int prof_open_fd(int fd, struct prof_reader **out);
/* LEN bytes at DATA, either layout; DATA must outlive the reader. */
BK_HIDDEN int prof_open_memory(const void *data, size_t len, struct prof_reader **out);
BK_HIDDEN void prof_close(struct prof_reader *r);

/* Tests and fuzzing: FD read with read() (SEEKABLE false, at most MAX_READ
 * bytes per call, 0 = no limit) or pread() (true: the file's layouts both). */
BK_HIDDEN int prof_open_fd_opts(int fd, bool seekable, size_t max_read,
				struct prof_reader **out);

/* The next record, decoded: 1, 0 at the end, or a negative BK_E_*; an
 * error is final (every later call returns it). Pointers in *REC stay
 * valid until the next call. Records carrying header facts (HEADER_ATTR,
 * HEADER_FEATURE, EVENT_UPDATE, HEADER_TRACING_DATA) update the reader and
 * are not returned; records are in file order (perf sorts by time only
 * across FINISHED_ROUND). */
BK_HIDDEN int prof_next(struct prof_reader *r, struct prof_record *rec);

/* Facts from the header (pipe mode: so far). A prof_attr pointer stays
 * valid until the next prof_next (a HEADER_ATTR record may move the
 * array); its name and ids, and the build-ids, until prof_close. */
BK_HIDDEN bool prof_is_pipe(const struct prof_reader *r);
/* HEADER_ARCH ("x86_64", "aarch64"), else a guess from the events' user
 * register masks, else BK_ARCH_UNKNOWN. */
BK_HIDDEN enum bk_arch prof_arch(const struct prof_reader *r);
BK_HIDDEN const char *prof_arch_name(const struct prof_reader *r); /* NULL: no HEADER_ARCH */
BK_HIDDEN size_t prof_attr_count(const struct prof_reader *r);
BK_HIDDEN const struct prof_attr *prof_attr_at(const struct prof_reader *r, size_t i);
BK_HIDDEN size_t prof_build_id_count(const struct prof_reader *r);
BK_HIDDEN const struct prof_build_id *prof_build_id_at(const struct prof_reader *r, size_t i);
BK_HIDDEN const struct prof_stats *prof_stats(const struct prof_reader *r);

/* Entry I (< rd->nr) of a PERF_SAMPLE_READ: value, and id and lost when
 * read_format has them (else 0). */
BK_HIDDEN void prof_read_entry(const struct prof_read *rd, uint64_t i, uint64_t *value,
			       uint64_t *id, uint64_t *lost);

/* The DWARF number of perf register PERF_REG (asm/perf_regs.h) of ARCH,
 * or -1 when it has none in struct bk_regs. */
BK_HIDDEN int prof_perf_reg_to_dwarf(enum bk_arch arch, unsigned perf_reg);

/* ---- Live: records from perf_event_open's ring buffers (prof_live.c) ------ *
 *
 * `backstep record`: no perf.data in between. A live reader has no source;
 * it knows the one event the recorder opened (its attr, this machine), so
 * the bytes of a ring-buffer record decode exactly as a perf.data record's
 * and go through the same pipeline (samples, time order, walks). Linux
 * only; this machine's architecture and byte order (little-endian). */

struct perf_event_attr;

#define PROF_LIVE_STACK_USER 8192 /* bytes of user stack per sample, perf's default */

/* The attr of a DWARF profile on this machine: cpu-clock at FREQ_HZ
 * samples per second of each thread's CPU time; IP, TID, TIME, CPU,
 * PERIOD, user registers (the set perf takes for --call-graph dwarf),
 * PROF_LIVE_STACK_USER bytes of user stack, and the kernel callchain
 * when KERNEL_CALLCHAIN; MMAP2, COMM (exec), FORK/EXIT records with
 * sample_id_all; inherit. KERNEL false: exclude_kernel (samples only in
 * user mode: what perf_event_paranoid 2 allows). The caller sets
 * disabled / enable_on_exec. BK_E_UNSUPPORTED on a machine we have no
 * register set for. */
BK_HIDDEN int prof_live_attr(struct perf_event_attr *attr, uint64_t freq_hz, bool kernel,
			     bool kernel_callchain);
/* A reader for records of the event ATTR (ATTR_SIZE bytes, as given to
 * perf_event_open) with its NIDS sample ids (may be 0: one event).
 * prof_next on it returns 0; feed records through prof_decode_live. */
BK_HIDDEN int prof_open_live(const struct perf_event_attr *attr, size_t attr_size,
			     const uint64_t *ids, size_t nids, struct prof_reader **out);
/* Decode one record of LEN bytes at P (its perf_event_header first;
 * contiguous: see prof_ring_next): 1 (REC filled; pointers into P and the
 * reader, valid until the next decode), 0 (nothing to return), or a
 * negative BK_E_* (BK_E_CORRUPT: the size is not LEN). Counted in
 * prof_stats like a file's records. */
BK_HIDDEN int prof_decode_live(struct prof_reader *r, const uint8_t *p, size_t len,
			       struct prof_record *rec);

/* One event's ring buffer (the perf_event_mmap_page and DATA_LEN bytes of
 * data, a power of two times the page size), read in passes: a pass
 * hands out the records written before it began; each record's bytes
 * stay valid until the next call, after which the kernel may reuse them.
 * A record that wraps around the end is copied whole into the ring's
 * scratch buffer, so every record handed out is contiguous. */
struct prof_ring;
/* Map FD's buffer. BK_E_LIMIT: the kernel refused that much locked memory
 * (perf_event_mlock_kb, RLIMIT_MEMLOCK): try a smaller DATA_LEN;
 * BK_E_IO: any other failure; BK_E_NOMEM. */
BK_HIDDEN int prof_ring_map(int fd, size_t data_len, struct prof_ring **out);
BK_HIDDEN void prof_ring_unmap(struct prof_ring *g);
/* Begin a pass: the records written so far (the rest of the last pass
 * is given up). */
BK_HIDDEN void prof_ring_pass(struct prof_ring *g);
/* The next record of the pass: 1 (*P, *LEN), 0 (the pass is done), or
 * BK_E_CORRUPT (a record header that cannot be: the rest of the pass is
 * dropped). */
BK_HIDDEN int prof_ring_next(struct prof_ring *g, const uint8_t **p, size_t *len);

/* The records perf synthesizes for a process that already runs, as the
 * kernel would have written them had it been watched from its start: a
 * COMM per thread (/proc/PID/task/TID/comm) and an MMAP2 per executable
 * mapping (/proc/PID/maps), at time 0, each decoded with R and handed to
 * EMIT (a nonzero return stops and is returned). BK_E_NOT_FOUND: no such
 * process; BK_E_IO: it could not be read; BK_E_NOMEM. */
BK_HIDDEN int prof_live_synth(struct prof_reader *r, int pid,
			      int (*emit)(void *ctx, const struct prof_record *rec), void *ctx);

/* The threads of process PID (/proc/PID/task), the leader first: *N ids
 * in *TIDS (base_free it). BK_E_NOT_FOUND: no such process; BK_E_IO,
 * BK_E_NOMEM. */
BK_HIDDEN int prof_live_threads(int pid, int **tids, size_t *n);

/* A reader with no source yet (prof_reader.c), for the prof_open_*. */
BK_HIDDEN int prof_reader_new(struct prof_reader **out);

/* ---- Internal: shared by prof_reader.c and prof_decode.c ------------------ */

/* One event as kept: the public part plus what decoding needs. */
struct prof_attr_int {
	struct prof_attr pub;
	char *name;            /* owned; pub.name points here */
	uint64_t *ids;         /* owned */
	enum bk_arch regs_arch; /* guessed from sample_regs_user */
};

struct prof_id {
	uint64_t id;
	uint32_t attr;
};

/* Decoding of one record's bytes (prof_decode.c). Returns 1 (REC filled),
 * 0 (nothing to return: consumed), or a negative BK_E_*. */
BK_HIDDEN int prof_decode(struct prof_reader *r, const uint8_t *p, size_t len,
			  struct prof_record *rec);
/* Header-fact parsers shared by both layouts (prof_reader.c). */
BK_HIDDEN int prof_add_attr(struct prof_reader *r, const uint8_t *attr, size_t attr_len,
			    const uint8_t *ids, size_t nids);
BK_HIDDEN int prof_feature(struct prof_reader *r, uint64_t feat, const uint8_t *p, size_t len);
BK_HIDDEN int prof_set_name(struct prof_reader *r, uint64_t id, const char *name, size_t len);
/* The event a record belongs to: by its id (index, or -1 when unknown). */
BK_HIDDEN int prof_attr_by_id(const struct prof_reader *r, uint64_t id);
/* A build_id_event (HEADER_BUILD_ID: feature section entry or record) of
 * LEN bytes at P, its perf_event_header included; the filename points into P. */
BK_HIDDEN int prof_parse_build_id(const uint8_t *p, size_t len, struct prof_build_id *out);
/* Skip LEN bytes after the current record (AUXTRACE, TRACING_DATA). */
BK_HIDDEN void prof_skip_after(struct prof_reader *r, uint64_t len);

struct prof_reader {
	/* Source: memory (fd < 0, mem), a file read with pread (seekable),
	 * or a stream read with read(). */
	int fd;
	bool own_fd, seekable, pipe;
	const uint8_t *mem;
	uint64_t src_len;      /* memory or file size; stream: unknown */
	size_t max_read;
	/* Window: the unread bytes [wp, wend) start at source offset woff;
	 * records end at `limit` (file mode: the data section's end). */
	uint8_t *win;
	size_t win_cap;
	const uint8_t *wp, *wend;
	uint64_t woff, limit;
	bool eof;
	uint64_t skip;         /* payload to drop before the next record */
	int err;               /* sticky */
	bool done;
	/* Header facts. */
	struct prof_attr_int *attrs;
	size_t nattrs;
	struct prof_id *ids;   /* sorted by id */
	size_t nids;
	/* How records of several events are told apart: all events lay out
	 * samples alike; the byte offset of the id in every sample, and from
	 * the end of every sample_id trailer (-1: not the same in all). */
	bool same_layout;
	int sample_id_off, trailer_id_back;
	struct prof_build_id *build_ids; /* filename owned */
	size_t nbuild_ids, cap_build_ids;
	char *arch_name;
	enum bk_arch arch;
	struct prof_stats stats;
	/* What the current record's pointers point into. */
	uint64_t callchain[PROF_MAX_RECORD / 8];
	uint64_t regs_user[64], regs_intr[64];
	uint8_t read_one[24];  /* a PERF_SAMPLE_READ without PERF_FORMAT_GROUP */
	struct bk_regs dwarf;
};

#endif
