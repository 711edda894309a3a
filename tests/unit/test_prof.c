/* The perf.data reader (src/profile): hand-built recordings, each record
 * kind and sample_type combination asserting the exact decoded values or
 * the exact error.
 *
 *  - samples: every PERF_SAMPLE_* bit alone, all of them together, and 300
 *    seeded random combinations, each with every read_format, encoded here
 *    field by field in the kernel's order and decoded back; plus a sample
 *    copied byte for byte from a real `perf record -o -`, checked against
 *    what `perf report -D` printed for it;
 *  - other records: MMAP, MMAP2 (inode, build-id), COMM, FORK, EXIT, LOST,
 *    LOST_SAMPLES, FINISHED_ROUND, HEADER_BUILD_ID, skipped kinds, with and
 *    without sample_id trailers of several layouts;
 *  - the header: attrs older and newer than ours, several events told apart
 *    by IDENTIFIER or ID, HEADER_ARCH, HEADER_EVENT_DESC, HEADER_BUILD_ID,
 *    register mapping per machine and ABI;
 *  - errors: a table of damaged inputs, each with its error;
 *  - the same recording read from memory, through pread and through read()
 *    of 1..13 bytes at a time (file and pipe layouts), with payloads
 *    skipped and records straddling the 1 MiB window;
 *  - every prefix of a small file and of a small stream: an error or a
 *    clean end, never a crash; allocation failures while opening;
 *  - build-ids (prof_stack.c): a file whose build-id is not the one perf
 *    recorded (HEADER_BUILD_ID, the MMAP2 record's own, a stream's record
 *    after the mapping) is not used, and a walk ends at its frames.
 *
 *   test_prof --write-seeds DIR   also writes the hand-built recordings to
 *                                 DIR (fuzz/corpus/perfdata seeds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "profile/prof.h"
#include "profile/prof_stack.h"
#include "unwind/unwind.h"

static const char *seed_dir;

/* ---- A byte builder ------------------------------------------------------------- */

struct bb {
	uint8_t *p;
	size_t len, cap;
};

static void bb_bytes(struct bb *b, const void *p, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	if (n)
		memcpy(b->p + b->len, p, n);
	b->len += n;
}

static void bb_uN(struct bb *b, uint64_t v, unsigned n)
{
	uint8_t t[8];
	for (unsigned i = 0; i < n; i++)
		t[i] = (uint8_t)(v >> (8 * i));
	bb_bytes(b, t, n);
}

static void bb_u16(struct bb *b, uint64_t v) { bb_uN(b, v, 2); }
static void bb_u32(struct bb *b, uint64_t v) { bb_uN(b, v, 4); }
static void bb_u64(struct bb *b, uint64_t v) { bb_uN(b, v, 8); }

static void bb_zeros(struct bb *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		bb_uN(b, 0, 1);
}

/* A NUL-terminated string padded with zeros to a multiple of 8. */
static void bb_str8(struct bb *b, const char *s)
{
	size_t n = strlen(s) + 1;
	bb_bytes(b, s, n);
	bb_zeros(b, (8 - n % 8) % 8);
}

static void bb_patch(struct bb *b, size_t at, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		b->p[at + i] = (uint8_t)(v >> (8 * i));
}

static size_t rec_begin(struct bb *b, uint32_t type, uint16_t misc)
{
	size_t at = b->len;
	bb_u32(b, type);
	bb_u16(b, misc);
	bb_u16(b, 0);
	return at;
}

static void rec_end(struct bb *b, size_t at)
{
	bb_patch(b, at + 6, b->len - at, 2);
}

static void bb_free(struct bb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

static void write_seed(const char *name, const struct bb *b)
{
	if (!seed_dir)
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", seed_dir, name);
	FILE *f = fopen(path, "wb");
	if (f) {
		fwrite(b->p, 1, b->len, f);
		fclose(f);
	}
}

/* ---- Attrs and whole recordings ------------------------------------------------- */

struct attr_spec {
	uint32_t size; /* 0: 128 */
	uint32_t type;
	uint64_t config, period, sample_type, read_format, flags, branch_sample_type;
	uint64_t regs_user, regs_intr;
	uint32_t stack_user;
	uint64_t ids[4];
	unsigned nids;
};

#define FLAG_FREQ (1ull << 10)
#define FLAG_SAMPLE_ID_ALL (1ull << 18)

static void bb_attr(struct bb *b, const struct attr_spec *a)
{
	uint32_t size = a->size ? a->size : 128;
	size_t at = b->len;
	bb_zeros(b, size);
	uint8_t full[160] = { 0 };
#define PUT(off, v, n)                                          \
	do {                                                    \
		for (unsigned i_ = 0; i_ < (n); i_++)           \
			full[(off) + i_] = (uint8_t)((uint64_t)(v) >> (8 * i_)); \
	} while (0)
	PUT(0, a->type, 4);
	PUT(4, size, 4);
	PUT(8, a->config, 8);
	PUT(16, a->period, 8);
	PUT(24, a->sample_type, 8);
	PUT(32, a->read_format, 8);
	PUT(40, a->flags, 8);
	PUT(72, a->branch_sample_type, 8);
	PUT(80, a->regs_user, 8);
	PUT(88, a->stack_user, 4);
	PUT(96, a->regs_intr, 8);
#undef PUT
	memcpy(b->p + at, full, size < sizeof(full) ? size : sizeof(full));
	if (size > sizeof(full))
		memset(b->p + at + sizeof(full), 0xee, size - sizeof(full)); /* fields from the future */
}

/* A pipe-mode stream: header, one HEADER_ATTR per event, HEADER_FEATURE
 * ARCH (unless NULL), then the records. */
static void build_pipe(struct bb *out, const struct attr_spec *attrs, unsigned nattrs,
		       const char *arch, const struct bb *records)
{
	bb_bytes(out, "PERFILE2", 8);
	bb_u64(out, 16);
	for (unsigned i = 0; i < nattrs; i++) {
		size_t r = rec_begin(out, PROF_RECORD_HEADER_ATTR, 0);
		bb_attr(out, &attrs[i]);
		for (unsigned k = 0; k < attrs[i].nids; k++)
			bb_u64(out, attrs[i].ids[k]);
		rec_end(out, r);
	}
	if (arch) {
		size_t r = rec_begin(out, PROF_RECORD_HEADER_FEATURE, 0);
		bb_u64(out, PROF_FEAT_ARCH);
		bb_u32(out, 16);
		char s[16] = { 0 };
		snprintf(s, sizeof(s), "%s", arch);
		bb_bytes(out, s, 16);
		rec_end(out, r);
	}
	if (records)
		bb_bytes(out, records->p, records->len);
}

struct feature {
	unsigned bit;
	const struct bb *data;
};

/* A file-mode image: header, ids, attrs, data, feature table, features. */
static void build_file(struct bb *out, const struct attr_spec *attrs, unsigned nattrs,
		       const struct bb *records, const struct feature *feats, unsigned nfeats)
{
	uint32_t attr_size = attrs && nattrs ? (attrs[0].size ? attrs[0].size : 128) : 128;
	bb_bytes(out, "PERFILE2", 8);
	bb_u64(out, 104);
	bb_u64(out, attr_size + 16);
	size_t attrs_at = out->len;
	bb_zeros(out, 16 * 3); /* attrs, data, event_types: patched below */
	uint64_t flags[4] = { 0 };
	for (unsigned i = 0; i < nfeats; i++)
		flags[feats[i].bit / 64] |= 1ull << (feats[i].bit % 64);
	for (unsigned i = 0; i < 4; i++)
		bb_u64(out, flags[i]);
	size_t ids_at[8];
	for (unsigned i = 0; i < nattrs; i++) {
		ids_at[i] = out->len;
		for (unsigned k = 0; k < attrs[i].nids; k++)
			bb_u64(out, attrs[i].ids[k]);
	}
	size_t a0 = out->len;
	for (unsigned i = 0; i < nattrs; i++) {
		bb_attr(out, &attrs[i]);
		bb_u64(out, ids_at[i]);
		bb_u64(out, 8 * attrs[i].nids);
	}
	bb_patch(out, attrs_at, a0, 8);
	bb_patch(out, attrs_at + 8, out->len - a0, 8);
	size_t d0 = out->len;
	if (records)
		bb_bytes(out, records->p, records->len);
	bb_patch(out, attrs_at + 16, d0, 8);
	bb_patch(out, attrs_at + 24, out->len - d0, 8);
	/* features in bit order */
	size_t table = out->len;
	bb_zeros(out, 16 * nfeats);
	unsigned k = 0;
	for (unsigned bit = 0; bit < 256; bit++)
		for (unsigned i = 0; i < nfeats; i++)
			if (feats[i].bit == bit) {
				bb_patch(out, table + 16 * k, out->len, 8);
				bb_patch(out, table + 16 * k + 8, feats[i].data->len, 8);
				bb_bytes(out, feats[i].data->p, feats[i].data->len);
				k++;
			}
}

static void feat_string(struct bb *b, const char *s)
{
	size_t n = strlen(s) + 1, padded = (n + 7) / 8 * 8;
	bb_u32(b, padded);
	bb_bytes(b, s, n);
	bb_zeros(b, padded - n);
}

/* ---- Reading everything ----------------------------------------------------------- */

/* Opens DATA in memory and reads every record into RECS (copies; the
 * pointers of the last record only). Returns the final status. */
#define MAX_RECS 64
struct readout {
	int open_err;
	int end;               /* 0 or the error prof_next ended with */
	unsigned n;
	struct prof_record recs[MAX_RECS];
};

static void read_all_mem(const struct bb *img, struct readout *o)
{
	memset(o, 0, sizeof(*o));
	struct prof_reader *r;
	o->open_err = prof_open_memory(img->p, img->len, &r);
	if (o->open_err)
		return;
	struct prof_record rec;
	int res;
	while ((res = prof_next(r, &rec)) > 0)
		if (o->n < MAX_RECS)
			o->recs[o->n++] = rec;
	o->end = res;
	prof_close(r);
}

/* ---- Samples ---------------------------------------------------------------------- */

/* The values a sample is encoded with; what is decoded must equal them. */
struct sval {
	uint64_t identifier, ip, time, addr, id, stream_id, period;
	uint32_t pid, tid, cpu;
	uint64_t rd_te, rd_tr, rd_nr, rd[3][3]; /* value, id, lost */
	uint64_t chain_nr, chain[5];
	uint32_t raw_size;
	uint8_t raw[12];
	uint64_t br_nr, br_hw_idx, br[2][3];
	uint64_t ru_abi, ru[64];
	uint64_t stack_size, stack_dyn;
	uint8_t stack[24];
	uint64_t weight, data_src, transaction;
	uint64_t ri_abi, ri[64];
	uint64_t phys, cgroup, dps, cps;
	uint64_t aux_size;
	uint8_t aux[16];
};

static void sval_fill(struct sval *v, uint64_t seed)
{
	memset(v, 0, sizeof(*v));
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
#define NEXT() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	v->identifier = v->id = 7; /* matches the event's ids */
	v->ip = NEXT();
	v->pid = (uint32_t)NEXT();
	v->tid = (uint32_t)NEXT();
	v->time = NEXT();
	v->addr = NEXT();
	v->stream_id = NEXT();
	v->cpu = (uint32_t)NEXT() % 64;
	v->period = NEXT();
	v->rd_te = NEXT();
	v->rd_tr = NEXT();
	v->rd_nr = 1 + seed % 3;
	for (unsigned i = 0; i < 3; i++)
		for (unsigned k = 0; k < 3; k++)
			v->rd[i][k] = NEXT();
	v->chain_nr = seed % 6;
	v->chain[0] = (uint64_t)-128; /* PERF_CONTEXT_KERNEL */
	for (unsigned i = 1; i < 5; i++)
		v->chain[i] = NEXT();
	v->raw_size = 4 + (uint32_t)(seed % 2) * 8; /* 4 + size: 8-aligned, or not */
	for (unsigned i = 0; i < sizeof(v->raw); i++)
		v->raw[i] = (uint8_t)NEXT();
	v->br_nr = seed % 3;
	v->br_hw_idx = NEXT();
	for (unsigned i = 0; i < 2; i++)
		for (unsigned k = 0; k < 3; k++)
			v->br[i][k] = NEXT();
	v->ru_abi = seed % 3;
	v->ri_abi = (seed + 1) % 3;
	for (unsigned i = 0; i < 64; i++) {
		v->ru[i] = NEXT();
		v->ri[i] = NEXT();
	}
	v->stack_size = seed % 4 ? 24 : 0;
	v->stack_dyn = v->stack_size ? seed % 25 : 0;
	for (unsigned i = 0; i < sizeof(v->stack); i++)
		v->stack[i] = (uint8_t)NEXT();
	v->weight = NEXT();
	v->data_src = NEXT();
	v->transaction = NEXT();
	v->phys = NEXT();
	v->cgroup = NEXT();
	v->dps = NEXT();
	v->cps = NEXT();
	v->aux_size = seed % 2 ? 16 : 0;
	for (unsigned i = 0; i < sizeof(v->aux); i++)
		v->aux[i] = (uint8_t)NEXT();
#undef NEXT
}

static void encode_read(struct bb *b, uint64_t rf, const struct sval *v)
{
	if (rf & PROF_FORMAT_GROUP) {
		bb_u64(b, v->rd_nr);
		if (rf & PROF_FORMAT_TOTAL_TIME_ENABLED)
			bb_u64(b, v->rd_te);
		if (rf & PROF_FORMAT_TOTAL_TIME_RUNNING)
			bb_u64(b, v->rd_tr);
		for (unsigned i = 0; i < v->rd_nr; i++) {
			bb_u64(b, v->rd[i][0]);
			if (rf & PROF_FORMAT_ID)
				bb_u64(b, v->rd[i][1]);
			if (rf & PROF_FORMAT_LOST)
				bb_u64(b, v->rd[i][2]);
		}
		return;
	}
	bb_u64(b, v->rd[0][0]);
	if (rf & PROF_FORMAT_TOTAL_TIME_ENABLED)
		bb_u64(b, v->rd_te);
	if (rf & PROF_FORMAT_TOTAL_TIME_RUNNING)
		bb_u64(b, v->rd_tr);
	if (rf & PROF_FORMAT_ID)
		bb_u64(b, v->rd[0][1]);
	if (rf & PROF_FORMAT_LOST)
		bb_u64(b, v->rd[0][2]);
}

/* The kernel's order (perf_event.h, PERF_RECORD_SAMPLE; CGROUP and the
 * page sizes before AUX, as perf_output_sample writes them). */
static void encode_sample(struct bb *b, const struct attr_spec *a, const struct sval *v)
{
	uint64_t t = a->sample_type;
	size_t r = rec_begin(b, PROF_RECORD_SAMPLE, 2);
	if (t & PROF_SAMPLE_IDENTIFIER)
		bb_u64(b, v->identifier);
	if (t & PROF_SAMPLE_IP)
		bb_u64(b, v->ip);
	if (t & PROF_SAMPLE_TID) {
		bb_u32(b, v->pid);
		bb_u32(b, v->tid);
	}
	if (t & PROF_SAMPLE_TIME)
		bb_u64(b, v->time);
	if (t & PROF_SAMPLE_ADDR)
		bb_u64(b, v->addr);
	if (t & PROF_SAMPLE_ID)
		bb_u64(b, v->id);
	if (t & PROF_SAMPLE_STREAM_ID)
		bb_u64(b, v->stream_id);
	if (t & PROF_SAMPLE_CPU) {
		bb_u32(b, v->cpu);
		bb_u32(b, 0);
	}
	if (t & PROF_SAMPLE_PERIOD)
		bb_u64(b, v->period);
	if (t & PROF_SAMPLE_READ)
		encode_read(b, a->read_format, v);
	if (t & PROF_SAMPLE_CALLCHAIN) {
		bb_u64(b, v->chain_nr);
		for (unsigned i = 0; i < v->chain_nr; i++)
			bb_u64(b, v->chain[i]);
	}
	if (t & PROF_SAMPLE_RAW) {
		bb_u32(b, v->raw_size);
		bb_bytes(b, v->raw, v->raw_size);
	}
	if (t & PROF_SAMPLE_BRANCH_STACK) {
		bb_u64(b, v->br_nr);
		if (a->branch_sample_type & PROF_BRANCH_HW_INDEX)
			bb_u64(b, v->br_hw_idx);
		for (unsigned i = 0; i < v->br_nr; i++)
			for (unsigned k = 0; k < 3; k++)
				bb_u64(b, v->br[i][k]);
	}
	if (t & PROF_SAMPLE_REGS_USER) {
		bb_u64(b, v->ru_abi);
		if (v->ru_abi)
			for (int i = 0; i < __builtin_popcountll(a->regs_user); i++)
				bb_u64(b, v->ru[i]);
	}
	if (t & PROF_SAMPLE_STACK_USER) {
		bb_u64(b, v->stack_size);
		if (v->stack_size) {
			bb_bytes(b, v->stack, v->stack_size);
			bb_u64(b, v->stack_dyn);
		}
	}
	if (t & (PROF_SAMPLE_WEIGHT | PROF_SAMPLE_WEIGHT_STRUCT))
		bb_u64(b, v->weight);
	if (t & PROF_SAMPLE_DATA_SRC)
		bb_u64(b, v->data_src);
	if (t & PROF_SAMPLE_TRANSACTION)
		bb_u64(b, v->transaction);
	if (t & PROF_SAMPLE_REGS_INTR) {
		bb_u64(b, v->ri_abi);
		if (v->ri_abi)
			for (int i = 0; i < __builtin_popcountll(a->regs_intr); i++)
				bb_u64(b, v->ri[i]);
	}
	if (t & PROF_SAMPLE_PHYS_ADDR)
		bb_u64(b, v->phys);
	if (t & PROF_SAMPLE_CGROUP)
		bb_u64(b, v->cgroup);
	if (t & PROF_SAMPLE_DATA_PAGE_SIZE)
		bb_u64(b, v->dps);
	if (t & PROF_SAMPLE_CODE_PAGE_SIZE)
		bb_u64(b, v->cps);
	if (t & PROF_SAMPLE_AUX) {
		bb_u64(b, v->aux_size);
		bb_bytes(b, v->aux, v->aux_size);
	}
	rec_end(b, r);
}

/* Every field of REC against V, by the event's sample_type. */
static int check_sample(const char *ctx, const struct attr_spec *a, const struct sval *v,
			const struct prof_record *rec)
{
	int before = check_fail;
	uint64_t t = a->sample_type;
	const struct prof_sample *s = &rec->sample;
	CHECK_INT(rec->kind, PROF_SAMPLE, ctx);
	CHECK_INT(rec->attr, 0, ctx);
	CHECK_U64(s->ip, t & PROF_SAMPLE_IP ? v->ip : 0, ctx);
	CHECK_U64(rec->have & PROF_SAMPLE_TID, t & PROF_SAMPLE_TID, ctx);
	if (t & PROF_SAMPLE_TID) {
		CHECK_U64((uint32_t)rec->pid, v->pid, ctx);
		CHECK_U64((uint32_t)rec->tid, v->tid, ctx);
	}
	CHECK_U64(rec->time, t & PROF_SAMPLE_TIME ? v->time : 0, ctx);
	CHECK_U64(s->addr, t & PROF_SAMPLE_ADDR ? v->addr : 0, ctx);
	CHECK_U64(rec->id, t & (PROF_SAMPLE_ID | PROF_SAMPLE_IDENTIFIER) ? 7 : 0, ctx);
	CHECK_U64(!!(rec->have & PROF_SAMPLE_ID), !!(t & (PROF_SAMPLE_ID | PROF_SAMPLE_IDENTIFIER)),
		  ctx);
	CHECK_U64(rec->stream_id, t & PROF_SAMPLE_STREAM_ID ? v->stream_id : 0, ctx);
	CHECK_U64(rec->cpu, t & PROF_SAMPLE_CPU ? v->cpu : 0, ctx);
	CHECK_U64(s->period, t & PROF_SAMPLE_PERIOD ? v->period : a->period, ctx);
	if (t & PROF_SAMPLE_READ) {
		uint64_t rf = a->read_format;
		const struct prof_read *rd = &s->read;
		uint64_t nr = rf & PROF_FORMAT_GROUP ? v->rd_nr : 1;
		CHECK_U64(rd->nr, nr, ctx);
		CHECK_U64(rd->time_enabled, rf & PROF_FORMAT_TOTAL_TIME_ENABLED ? v->rd_te : 0, ctx);
		CHECK_U64(rd->time_running, rf & PROF_FORMAT_TOTAL_TIME_RUNNING ? v->rd_tr : 0, ctx);
		for (uint64_t i = 0; i < nr && i < rd->nr; i++) {
			uint64_t val, id, lost;
			prof_read_entry(rd, i, &val, &id, &lost);
			CHECK_U64(val, v->rd[i][0], ctx);
			CHECK_U64(id, rf & PROF_FORMAT_ID ? v->rd[i][1] : 0, ctx);
			CHECK_U64(lost, rf & PROF_FORMAT_LOST ? v->rd[i][2] : 0, ctx);
		}
	}
	CHECK_U64(s->callchain_nr, t & PROF_SAMPLE_CALLCHAIN ? v->chain_nr : 0, ctx);
	for (uint64_t i = 0; i < s->callchain_nr && i < 5; i++)
		CHECK_U64(s->callchain[i], v->chain[i], ctx);
	if (t & PROF_SAMPLE_RAW) {
		CHECK_U64(s->raw_size, v->raw_size, ctx);
		CHECK(s->raw && !memcmp(s->raw, v->raw, v->raw_size), "%s: raw bytes", ctx);
	}
	if (t & PROF_SAMPLE_BRANCH_STACK) {
		CHECK_U64(s->branch_nr, v->br_nr, ctx);
		bool hw = a->branch_sample_type & PROF_BRANCH_HW_INDEX;
		CHECK_INT(s->branch_has_hw_idx, hw, ctx);
		CHECK_U64(s->branch_hw_idx, hw ? v->br_hw_idx : 0, ctx);
		for (unsigned i = 0; i < v->br_nr; i++)
			for (unsigned k = 0; k < 3; k++)
				CHECK_U64(base_rd_le(s->branch_entries + 24 * i + 8 * k, 8), v->br[i][k], ctx);
	}
	if (t & PROF_SAMPLE_REGS_USER) {
		CHECK_U64(s->regs_user.abi, v->ru_abi, ctx);
		CHECK_U64(s->regs_user.mask, a->regs_user, ctx);
		unsigned nr = v->ru_abi ? (unsigned)__builtin_popcountll(a->regs_user) : 0;
		CHECK_INT(s->regs_user.nr, nr, ctx);
		for (unsigned i = 0; i < nr && i < s->regs_user.nr; i++)
			CHECK_U64(s->regs_user.val[i], v->ru[i], ctx);
	}
	if (t & PROF_SAMPLE_STACK_USER) {
		CHECK_U64(s->stack_size, v->stack_size, ctx);
		CHECK_U64(s->stack_dyn_size, v->stack_dyn, ctx);
		if (v->stack_size)
			CHECK(s->stack && !memcmp(s->stack, v->stack, v->stack_size), "%s: stack", ctx);
		else
			CHECK(!s->stack, "%s: no stack bytes", ctx);
	}
	CHECK_U64(s->weight, t & (PROF_SAMPLE_WEIGHT | PROF_SAMPLE_WEIGHT_STRUCT) ? v->weight : 0,
		  ctx);
	CHECK_U64(s->data_src, t & PROF_SAMPLE_DATA_SRC ? v->data_src : 0, ctx);
	CHECK_U64(s->transaction, t & PROF_SAMPLE_TRANSACTION ? v->transaction : 0, ctx);
	if (t & PROF_SAMPLE_REGS_INTR) {
		CHECK_U64(s->regs_intr.abi, v->ri_abi, ctx);
		unsigned nr = v->ri_abi ? (unsigned)__builtin_popcountll(a->regs_intr) : 0;
		CHECK_INT(s->regs_intr.nr, nr, ctx);
		for (unsigned i = 0; i < nr && i < s->regs_intr.nr; i++)
			CHECK_U64(s->regs_intr.val[i], v->ri[i], ctx);
		CHECK(!s->regs_intr.dwarf, "%s: interrupt registers are not mapped", ctx);
	}
	CHECK_U64(s->phys_addr, t & PROF_SAMPLE_PHYS_ADDR ? v->phys : 0, ctx);
	CHECK_U64(s->cgroup, t & PROF_SAMPLE_CGROUP ? v->cgroup : 0, ctx);
	CHECK_U64(s->data_page_size, t & PROF_SAMPLE_DATA_PAGE_SIZE ? v->dps : 0, ctx);
	CHECK_U64(s->code_page_size, t & PROF_SAMPLE_CODE_PAGE_SIZE ? v->cps : 0, ctx);
	if (t & PROF_SAMPLE_AUX) {
		CHECK_U64(s->aux_size, v->aux_size, ctx);
		if (v->aux_size)
			CHECK(s->aux && !memcmp(s->aux, v->aux, v->aux_size), "%s: aux", ctx);
	}
	return check_fail == before;
}

static const uint64_t sample_bits[] = {
	PROF_SAMPLE_IP, PROF_SAMPLE_TID, PROF_SAMPLE_TIME, PROF_SAMPLE_ADDR, PROF_SAMPLE_READ,
	PROF_SAMPLE_CALLCHAIN, PROF_SAMPLE_ID, PROF_SAMPLE_CPU, PROF_SAMPLE_PERIOD,
	PROF_SAMPLE_STREAM_ID, PROF_SAMPLE_RAW, PROF_SAMPLE_BRANCH_STACK, PROF_SAMPLE_REGS_USER,
	PROF_SAMPLE_STACK_USER, PROF_SAMPLE_WEIGHT, PROF_SAMPLE_DATA_SRC, PROF_SAMPLE_IDENTIFIER,
	PROF_SAMPLE_TRANSACTION, PROF_SAMPLE_REGS_INTR, PROF_SAMPLE_PHYS_ADDR, PROF_SAMPLE_AUX,
	PROF_SAMPLE_CGROUP, PROF_SAMPLE_DATA_PAGE_SIZE, PROF_SAMPLE_CODE_PAGE_SIZE,
	PROF_SAMPLE_WEIGHT_STRUCT,
};

/* One sample_type: every read_format when READ is in it, a few seeds
 * each (callchain, branch, ABI, stack and raw sizes vary with the seed),
 * in a pipe stream and in a file, and the sample cut at every byte. */
static void sample_case(uint64_t sample_type, uint64_t seed0, bool cut)
{
	unsigned nrf = sample_type & PROF_SAMPLE_READ ? 32 : 1;
	for (unsigned rf = 0; rf < nrf; rf++) {
		for (uint64_t seed = seed0; seed < seed0 + 4; seed++) {
			struct attr_spec a = {
				.type = 1, .period = 4000, .sample_type = sample_type, .read_format = rf,
				.flags = FLAG_SAMPLE_ID_ALL, .regs_user = 0xff0fff, .stack_user = 24,
				.regs_intr = seed % 2 ? 0x3 : 0xff0fff, .ids = { 7 }, .nids = 1,
				.branch_sample_type = seed % 2 ? PROF_BRANCH_HW_INDEX : 0,
			};
			struct sval v;
			sval_fill(&v, seed);
			struct bb recs = { 0 }, img = { 0 };
			encode_sample(&recs, &a, &v);
			char ctx[96];
			snprintf(ctx, sizeof(ctx), "sample_type %#llx read_format %#x seed %llu",
				 (unsigned long long)sample_type, rf, (unsigned long long)seed);
			for (int layout = 0; layout < 2; layout++) {
				img.len = 0;
				if (layout == 0)
					build_pipe(&img, &a, 1, "x86_64", &recs);
				else
					build_file(&img, &a, 1, &recs, NULL, 0);
				struct prof_reader *r;
				int err = prof_open_memory(img.p, img.len, &r);
				CHECK_INT(err, 0, ctx);
				if (err)
					continue;
				struct prof_record rec;
				CHECK_INT(prof_next(r, &rec), 1, ctx);
				if (check_sample(ctx, &a, &v, &rec) && (sample_type & PROF_SAMPLE_REGS_USER) &&
				    v.ru_abi == PROF_REGS_ABI_64 && layout == 0) {
					/* mapped by the x86-64 table: rip from IP (perf reg 8) */
					uint64_t ip = 0;
					CHECK(rec.sample.regs_user.dwarf &&
						      bk_regs_get(rec.sample.regs_user.dwarf, 16, &ip) &&
						      ip == v.ru[8],
					      "%s: rip mapped", ctx);
				}
				CHECK_INT(prof_next(r, &rec), 0, ctx);
				prof_close(r);
				if (cut && layout == 0 && seed == seed0 && rf == nrf - 1 && seed_dir) {
					char name[64];
					snprintf(name, sizeof(name), "sample-%llx",
						 (unsigned long long)sample_type);
					write_seed(name, &img);
				}
			}
			/* The record cut short at every byte (its size field kept): corrupt. */
			if (cut && seed == seed0 && rf == nrf - 1) {
				for (size_t len = 8; len < recs.len; len++) {
					struct bb c = { 0 }, ci = { 0 };
					bb_bytes(&c, recs.p, len);
					bb_patch(&c, 6, len, 2);
					build_pipe(&ci, &a, 1, NULL, &c);
					struct readout o;
					read_all_mem(&ci, &o);
					CHECK(o.open_err == 0 && o.n == 0 && o.end == BK_E_CORRUPT,
					      "%s cut to %zu: open %d, %u records, end %d", ctx, len, o.open_err,
					      o.n, o.end);
					bb_free(&c);
					bb_free(&ci);
				}
			}
			bb_free(&recs);
			bb_free(&img);
		}
	}
}

static void test_samples(void)
{
	uint64_t all = 0;
	for (unsigned i = 0; i < BK_ARRAY_LEN(sample_bits); i++) {
		sample_case(sample_bits[i], 1, true);
		all |= sample_bits[i];
	}
	sample_case(0, 1, false);
	sample_case(all, 1, true);
	sample_case(all & ~PROF_SAMPLE_WEIGHT, 5, true);
	uint64_t x = 12345;
	for (unsigned i = 0; i < 300; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		sample_case(x & PROF_SAMPLE_KNOWN, i, false);
	}
}

/* A sample and its HEADER_ATTR, byte for byte from `perf record -e cpu-clock
 * -c 100000 --call-graph dwarf,64 -o -` (perf 6.1, x86-64), and what
 * `perf report -D` printed for it. */
static const char real_attr_hex[] =
	"400000000000980001000000800000000000000000000000a0860100000000006fb00000000000001400"
	"0000000000000333d6610000000000000000000000000000000000000000000000000000000000000000"
	"00000000ff0fff0000000000400000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000050010000000000005101000000000000";
static const char real_sample_hex[] =
	"0900000002003801133809071d7f0000c16f0000c16f0000aa7f11f85603000000000000000000005101"
	"0000000000000000000000000000020000000000000071060a000000000000080201000000000332faff"
	"00000000fffb8b1f000000005ccd2081ff7f000058cd2081ff7f000088cd2081ff7f0000f0cc2081ff7f"
	"0000133809071d7f0000020200000000000033000000000000002b0000000000000088cd2081ff7f0000"
	"60cd2081ff7f00007f0300000000000046020000000000000000000000000000d02a0b071d7f000000f0"
	"07071d7f000000f507071d7f0000400000000000000047656e75000000000f5309071d7f000000000000"
	"00000000f1df2081ff7f0000000000000000000000d007071d7f00000000000000000000000000000000"
	"00004000000000000000210008051e000000";
static const char real_mmap2_hex[] =
	"0a00000002206800c16f0000c16f0000005007071d7f00000020000000000000005007071d7f00000000"
	"0000000000000000000000000000000000000000000003000000020000002f2f616e6f6e0000c16f0000"
	"c16f0000c1c118f8560300005101000000000000";

static void bb_hex(struct bb *b, const char *hex)
{
	for (size_t i = 0; hex[i] && hex[i + 1]; i += 2) {
		unsigned v;
		sscanf(hex + i, "%2x", &v);
		bb_uN(b, v, 1);
	}
}

static void test_real_sample(void)
{
	struct bb img = { 0 };
	bb_bytes(&img, "PERFILE2", 8);
	bb_u64(&img, 16);
	bb_hex(&img, real_attr_hex);
	size_t sample_at = img.len;
	bb_hex(&img, real_sample_hex);
	bb_hex(&img, real_mmap2_hex);
	write_seed("real-pipe-sample", &img);
	/* Checked while the reader is open: registers live in the reader. */
	struct prof_reader *rd;
	int err = prof_open_memory(img.p, img.len, &rd);
	CHECK_INT(err, 0, "real");
	if (err) {
		bb_free(&img);
		return;
	}
	struct prof_record rec0, rec1, rec2;
	CHECK_INT(prof_next(rd, &rec0), 1, "real sample");
	const struct prof_record *r = &rec0;
	CHECK_U64(r->offset, sample_at, "real offset");
	CHECK_INT(r->pid, 28609, "real pid");
	CHECK_INT(r->tid, 28609, "real tid");
	CHECK_U64(r->time, 3672063967146ull, "real time");
	CHECK_U64(r->sample.ip, 0x7f1d07093813ull, "real ip");
	CHECK_U64(r->sample.period, 100000, "real period (the attr's)");
	CHECK_U64(r->sample.addr, 0, "real addr");
	CHECK_U64(r->sample.callchain_nr, 0, "real callchain");
	CHECK_U64(r->id, 0x151, "real id");
	CHECK_U64(r->sample.regs_user.abi, PROF_REGS_ABI_64, "real abi");
	static const uint64_t regs[20] = {
		0xa0671, 0x1020800, 0xfffa3203, 0x1f8bfbff, 0x7fff8120cd5c, 0x7fff8120cd58,
		0x7fff8120cd88, 0x7fff8120ccf0, 0x7f1d07093813, 0x202, 0x33, 0x2b, 0x7fff8120cd88,
		0x7fff8120cd60, 0x37f, 0x246, 0, 0x7f1d070b2ad0, 0x7f1d0707f000, 0x7f1d0707f500,
	};
	CHECK_INT(r->sample.regs_user.nr, 20, "real regs");
	for (unsigned i = 0; i < 20 && i < r->sample.regs_user.nr; i++)
		CHECK_U64(r->sample.regs_user.val[i], regs[i], "real reg");
	/* DWARF: rax 0, rdx 1, rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8.. 8.., rip 16, rflags 49 */
	static const struct { unsigned dwarf; uint64_t v; } mapped[] = {
		{ 0, 0xa0671 }, { 1, 0x1f8bfbff }, { 2, 0xfffa3203 }, { 3, 0x1020800 },
		{ 4, 0x7fff8120cd5c }, { 5, 0x7fff8120cd58 }, { 6, 0x7fff8120cd88 },
		{ 7, 0x7fff8120ccf0 }, { 8, 0x7fff8120cd88 }, { 12, 0 }, { 15, 0x7f1d0707f500 },
		{ 16, 0x7f1d07093813 }, { 49, 0x202 },
	};
	for (unsigned i = 0; i < BK_ARRAY_LEN(mapped) && r->sample.regs_user.dwarf; i++) {
		uint64_t v = ~0ull;
		CHECK(bk_regs_get(r->sample.regs_user.dwarf, mapped[i].dwarf, &v) && v == mapped[i].v,
		      "real: DWARF reg %u = %#llx", mapped[i].dwarf, (unsigned long long)v);
	}
	unsigned nvalid = 0;
	for (unsigned d = 0; d < BK_MAX_REGS && r->sample.regs_user.dwarf; d++) {
		uint64_t v;
		nvalid += (unsigned)bk_regs_get(r->sample.regs_user.dwarf, d, &v);
	}
	CHECK_INT(nvalid, 18, "real: rax..r15, rip, rflags (no segment registers)");
	CHECK_U64(r->sample.stack_size, 64, "real stack size");
	CHECK_U64(r->sample.stack_dyn_size, 64, "real ustack size");
	/* perf -D: "ustack: size 64, offset 0xe0" (the offset of the size field) */
	CHECK_U64((uint64_t)(r->sample.stack - r->raw) - 8, 0xe0, "real ustack offset");
	CHECK_U64(r->sample.data_src, 0x1e05080021ull, "real data_src");

	CHECK_INT(prof_next(rd, &rec1), 1, "real mmap2");
	const struct prof_record *m = &rec1;
	CHECK_INT(m->kind, PROF_MMAP, "real mmap2");
	CHECK_INT(m->mmap.mmap2, 1, "real mmap2");
	CHECK_U64(m->mmap.addr, 0x7f1d07075000ull, "real mmap2 addr");
	CHECK_U64(m->mmap.len, 0x2000, "real mmap2 len");
	CHECK_U64(m->mmap.prot, 3, "real mmap2 prot");
	CHECK_U64(m->mmap.flags, 2, "real mmap2 flags");
	CHECK_STR(m->mmap.filename, "//anon", "real mmap2 file");
	CHECK_U64(m->time, 0x356f818c1c1ull, "real mmap2 time (sample_id)");
	CHECK_U64(m->id, 0x151, "real mmap2 id (sample_id)");
	CHECK_INT(prof_next(rd, &rec2), 0, "real end");
	prof_close(rd);
	bb_free(&img);
}

/* ---- Other records ------------------------------------------------------------------ */

/* A sample_id trailer for sample_type T. */
static void trailer(struct bb *b, uint64_t t, uint32_t pid, uint32_t tid, uint64_t time,
		    uint64_t id, uint32_t cpu)
{
	if (t & PROF_SAMPLE_TID) {
		bb_u32(b, pid);
		bb_u32(b, tid);
	}
	if (t & PROF_SAMPLE_TIME)
		bb_u64(b, time);
	if (t & PROF_SAMPLE_ID)
		bb_u64(b, id);
	if (t & PROF_SAMPLE_STREAM_ID)
		bb_u64(b, 0x5555);
	if (t & PROF_SAMPLE_CPU) {
		bb_u32(b, cpu);
		bb_u32(b, 0);
	}
	if (t & PROF_SAMPLE_IDENTIFIER)
		bb_u64(b, id);
}

static void test_records(void)
{
	static const uint64_t trailers[] = {
		0,
		PROF_SAMPLE_TID | PROF_SAMPLE_TIME,
		PROF_SAMPLE_TID | PROF_SAMPLE_TIME | PROF_SAMPLE_ID | PROF_SAMPLE_CPU,
		PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_TIME | PROF_SAMPLE_STREAM_ID | PROF_SAMPLE_CPU,
		PROF_SAMPLE_IP | PROF_SAMPLE_TID | PROF_SAMPLE_TIME | PROF_SAMPLE_ID |
			PROF_SAMPLE_STREAM_ID | PROF_SAMPLE_CPU | PROF_SAMPLE_IDENTIFIER |
			PROF_SAMPLE_CALLCHAIN,
	};
	for (unsigned ti = 0; ti < BK_ARRAY_LEN(trailers); ti++) {
		for (int id_all = 0; id_all < 2; id_all++) {
			uint64_t t = trailers[ti];
			struct attr_spec a = { .type = 1, .period = 1, .sample_type = t,
					       .flags = id_all ? FLAG_SAMPLE_ID_ALL : 0, .ids = { 9 },
					       .nids = 1 };
			uint64_t tt = id_all ? t : 0;
			struct bb r = { 0 };
			size_t at;
			/* MMAP */
			at = rec_begin(&r, PROF_RECORD_MMAP, 0x2001);
			bb_u32(&r, 100);
			bb_u32(&r, 101);
			bb_u64(&r, 0x400000);
			bb_u64(&r, 0x1000);
			bb_u64(&r, 0x2000);
			bb_str8(&r, "/bin/a");
			trailer(&r, tt, 100, 101, 1000, 9, 3);
			rec_end(&r, at);
			/* MMAP2 with an inode */
			at = rec_begin(&r, PROF_RECORD_MMAP2, 2);
			bb_u32(&r, 100);
			bb_u32(&r, 102);
			bb_u64(&r, 0x7f0000);
			bb_u64(&r, 0x3000);
			bb_u64(&r, 0x1000);
			bb_u32(&r, 8);
			bb_u32(&r, 1);
			bb_u64(&r, 1234567);
			bb_u64(&r, 42);
			bb_u32(&r, 5);
			bb_u32(&r, 2);
			bb_str8(&r, "/lib/libc.so.6");
			trailer(&r, tt, 100, 102, 1001, 9, 3);
			rec_end(&r, at);
			/* MMAP2 with a build-id (PERF_RECORD_MISC_MMAP_BUILD_ID) */
			at = rec_begin(&r, PROF_RECORD_MMAP2, 2 | PROF_MISC_MMAP_BUILD_ID);
			bb_u32(&r, 100);
			bb_u32(&r, 100);
			bb_u64(&r, 0x5000);
			bb_u64(&r, 0x1000);
			bb_u64(&r, 0);
			bb_uN(&r, 20, 1);
			bb_uN(&r, 0, 1);
			bb_u16(&r, 0);
			for (unsigned i = 0; i < 20; i++)
				bb_uN(&r, 0xa0 + i, 1);
			bb_u32(&r, 7);
			bb_u32(&r, 2);
			bb_str8(&r, "/usr/bin/x");
			trailer(&r, tt, 100, 100, 1002, 9, 3);
			rec_end(&r, at);
			/* COMM (exec) */
			at = rec_begin(&r, PROF_RECORD_COMM, PROF_MISC_COMM_EXEC);
			bb_u32(&r, 100);
			bb_u32(&r, 100);
			bb_str8(&r, "loop");
			trailer(&r, tt, 100, 100, 1003, 9, 3);
			rec_end(&r, at);
			/* FORK, EXIT */
			for (uint32_t type = PROF_RECORD_FORK; type; type = type == PROF_RECORD_FORK ? PROF_RECORD_EXIT : 0) {
				at = rec_begin(&r, type, 0);
				bb_u32(&r, 100);
				bb_u32(&r, 99);
				bb_u32(&r, 103);
				bb_u32(&r, 98);
				bb_u64(&r, 777);
				trailer(&r, tt, 100, 103, 1004, 9, 3);
				rec_end(&r, at);
			}
			/* LOST, LOST_SAMPLES */
			at = rec_begin(&r, PROF_RECORD_LOST, 0);
			bb_u64(&r, 9);
			bb_u64(&r, 55);
			trailer(&r, tt, 100, 100, 1005, 9, 3);
			rec_end(&r, at);
			at = rec_begin(&r, PROF_RECORD_LOST_SAMPLES, 0);
			bb_u64(&r, 66);
			trailer(&r, tt, 100, 100, 1006, 9, 3);
			rec_end(&r, at);
			/* FINISHED_ROUND, HEADER_BUILD_ID (with its size), a KSYMBOL, an unknown type */
			at = rec_begin(&r, PROF_RECORD_FINISHED_ROUND, 0);
			rec_end(&r, at);
			at = rec_begin(&r, PROF_RECORD_HEADER_BUILD_ID, PROF_MISC_BUILD_ID_SIZE | 2);
			bb_u32(&r, 100);
			for (unsigned i = 0; i < 20; i++)
				bb_uN(&r, i < 8 ? 0x10 + i : 0, 1);
			bb_uN(&r, 8, 1);
			bb_zeros(&r, 3);
			bb_str8(&r, "/usr/lib/libz.so");
			rec_end(&r, at);
			at = rec_begin(&r, 17, 0);
			bb_u64(&r, 0xffffffffa0000000ull);
			bb_u32(&r, 0x100);
			bb_u16(&r, 1);
			bb_u16(&r, 0);
			bb_str8(&r, "bpf_prog");
			trailer(&r, tt, 100, 100, 1007, 9, 3);
			rec_end(&r, at);
			at = rec_begin(&r, 200, 0);
			bb_u64(&r, 1);
			rec_end(&r, at);

			char ctx[64];
			snprintf(ctx, sizeof(ctx), "records trailer %#llx id_all %d",
				 (unsigned long long)t, id_all);
			struct bb img = { 0 };
			build_pipe(&img, &a, 1, NULL, &r);
			if (ti == 2 && id_all)
				write_seed("records-pipe", &img);
			struct readout o;
			read_all_mem(&img, &o);
			CHECK_INT(o.open_err, 0, ctx);
			CHECK_INT(o.end, 0, ctx);
			CHECK_INT(o.n, 12, ctx);
			if (o.n == 12) {
				static const enum prof_kind kinds[12] = {
					PROF_MMAP, PROF_MMAP, PROF_MMAP, PROF_COMM, PROF_FORK, PROF_EXIT,
					PROF_LOST, PROF_LOST, PROF_FINISHED_ROUND, PROF_BUILD_ID,
					PROF_OTHER, PROF_OTHER,
				};
				for (unsigned i = 0; i < 12; i++)
					CHECK_INT(o.recs[i].kind, kinds[i], ctx);
				const struct prof_record *m = &o.recs[0];
				CHECK_INT(m->pid, 100, ctx);
				CHECK_INT(m->tid, 101, ctx);
				CHECK_U64(m->mmap.addr, 0x400000, ctx);
				CHECK_U64(m->mmap.len, 0x1000, ctx);
				CHECK_U64(m->mmap.pgoff, 0x2000, ctx);
				CHECK_INT(m->mmap.mmap2, 0, ctx);
				CHECK_STR(m->mmap.filename, "/bin/a", ctx);
				CHECK_U64(m->time, tt & PROF_SAMPLE_TIME ? 1000 : 0, ctx);
				CHECK_U64(!!(m->have & PROF_SAMPLE_TIME), !!(tt & PROF_SAMPLE_TIME), ctx);
				CHECK_U64(m->cpu, tt & PROF_SAMPLE_CPU ? 3 : 0, ctx);
				CHECK_U64(m->id, tt & (PROF_SAMPLE_ID | PROF_SAMPLE_IDENTIFIER) ? 9 : 0, ctx);
				CHECK_U64(m->stream_id, tt & PROF_SAMPLE_STREAM_ID ? 0x5555 : 0, ctx);
				CHECK_INT(m->attr, 0, ctx);
				m = &o.recs[1];
				CHECK_INT(m->mmap.mmap2, 1, ctx);
				CHECK_INT(m->tid, 102, ctx);
				CHECK_U64(m->mmap.maj, 8, ctx);
				CHECK_U64(m->mmap.min, 1, ctx);
				CHECK_U64(m->mmap.ino, 1234567, ctx);
				CHECK_U64(m->mmap.ino_generation, 42, ctx);
				CHECK_U64(m->mmap.prot, 5, ctx);
				CHECK_U64(m->mmap.flags, 2, ctx);
				CHECK_INT(m->mmap.build_id_len, 0, ctx);
				CHECK_STR(m->mmap.filename, "/lib/libc.so.6", ctx);
				m = &o.recs[2];
				CHECK_INT(m->mmap.build_id_len, 20, ctx);
				CHECK(m->mmap.build_id && m->mmap.build_id[0] == 0xa0 &&
					      m->mmap.build_id[19] == 0xb3,
				      "%s: mmap2 build-id", ctx);
				CHECK_U64(m->mmap.ino, 0, ctx);
				CHECK_U64(m->mmap.prot, 7, ctx);
				CHECK_STR(m->mmap.filename, "/usr/bin/x", ctx);
				m = &o.recs[3];
				CHECK_STR(m->comm.comm, "loop", ctx);
				CHECK_INT(m->comm.exec, 1, ctx);
				CHECK_U64(m->time, tt & PROF_SAMPLE_TIME ? 1003 : 0, ctx);
				for (unsigned k = 4; k <= 5; k++) {
					m = &o.recs[k];
					CHECK_INT(m->task.pid, 100, ctx);
					CHECK_INT(m->task.ppid, 99, ctx);
					CHECK_INT(m->task.tid, 103, ctx);
					CHECK_INT(m->task.ptid, 98, ctx);
					CHECK_U64(m->task.time, 777, ctx);
					CHECK_U64(m->time, tt & PROF_SAMPLE_TIME ? 1004 : 777, ctx);
				}
				CHECK_U64(o.recs[6].lost.id, 9, ctx);
				CHECK_U64(o.recs[6].lost.lost, 55, ctx);
				CHECK_U64(o.recs[7].lost.lost, 66, ctx);
				m = &o.recs[9];
				CHECK_INT(m->build_id.pid, 100, ctx);
				CHECK_INT(m->build_id.len, 8, ctx);
				CHECK(m->build_id.bytes[0] == 0x10 && m->build_id.bytes[7] == 0x17,
				      "%s: build-id record bytes", ctx);
				CHECK_STR(m->build_id.filename, "/usr/lib/libz.so", ctx);
				CHECK_U64(o.recs[10].type, 17, ctx);
				CHECK_U64(o.recs[10].time, tt & PROF_SAMPLE_TIME ? 1007 : 0, ctx);
				CHECK_U64(o.recs[11].type, 200, ctx);
			}
			bb_free(&img);
			bb_free(&r);
		}
	}
}

/* ---- The header ------------------------------------------------------------------- */

static void test_header(void)
{
	/* File mode: ARCH, EVENT_DESC and BUILD_ID features; attrs of size 64
	 * (VER0: no register mask, which reads as 0) and 136 (from the future). */
	struct attr_spec attrs[2] = {
		{ .size = 64, .type = 0, .config = 1, .period = 1000,
		  .sample_type = PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP | PROF_SAMPLE_TID,
		  .flags = FLAG_SAMPLE_ID_ALL, .regs_user = 0x7, .ids = { 11, 12 }, .nids = 2 },
		{ .size = 136, .type = 1, .config = 0, .period = 4000,
		  .sample_type = PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP | PROF_SAMPLE_REGS_USER,
		  .flags = FLAG_SAMPLE_ID_ALL | FLAG_FREQ, .regs_user = 0x1ffffffffull,
		  .stack_user = 8192, .ids = { 13 }, .nids = 1 },
	};
	struct bb arch = { 0 }, desc = { 0 }, bids = { 0 }, recs = { 0 }, img = { 0 };
	feat_string(&arch, "aarch64");
	bb_u32(&desc, 2);
	bb_u32(&desc, 128);
	const char *names[2] = { "instructions", "cpu-clock" };
	for (unsigned i = 0; i < 2; i++) {
		/* in the opposite order to the attrs: matched by id */
		unsigned k = 1 - i;
		bb_zeros(&desc, 128);
		bb_u32(&desc, attrs[k].nids);
		feat_string(&desc, names[k]);
		for (unsigned j = 0; j < attrs[k].nids; j++)
			bb_u64(&desc, attrs[k].ids[j]);
	}
	size_t at = rec_begin(&bids, 0, 1);
	bb_u32(&bids, (uint32_t)-1);
	for (unsigned i = 0; i < 24; i++)
		bb_uN(&bids, i < 20 ? 0xc0 + i : 0, 1);
	bb_str8(&bids, "[kernel.kallsyms]");
	rec_end(&bids, at);
	at = rec_begin(&bids, 0, 2 | PROF_MISC_BUILD_ID_SIZE);
	bb_u32(&bids, 4242);
	for (unsigned i = 0; i < 20; i++)
		bb_uN(&bids, i < 16 ? 0xd0 + i : 0, 1);
	bb_uN(&bids, 16, 1);
	bb_zeros(&bids, 3);
	bb_str8(&bids, "/usr/lib/libm.so.6");
	rec_end(&bids, at);
	/* one sample of the second event: its x0..x30, sp, pc */
	at = rec_begin(&recs, PROF_RECORD_SAMPLE, 2);
	bb_u64(&recs, 13);
	bb_u64(&recs, 0x400123);
	bb_u64(&recs, PROF_REGS_ABI_64);
	for (unsigned i = 0; i < 33; i++)
		bb_u64(&recs, 0x1000 + i);
	rec_end(&recs, at);
	/* one of the first: no registers */
	at = rec_begin(&recs, PROF_RECORD_SAMPLE, 2);
	bb_u64(&recs, 12);
	bb_u64(&recs, 0x400456);
	bb_u32(&recs, 5);
	bb_u32(&recs, 6);
	rec_end(&recs, at);
	{
		/* By hand, as build_file gives every attr the first one's size:
		 * header, ids, attrs of sizes 64 and 136, each followed by its ids
		 * section (perf reads an entry as its attr's own size + 16; the
		 * header's attr_size only counts them). */
		struct bb h = { 0 };
		bb_bytes(&h, "PERFILE2", 8);
		bb_u64(&h, 104);
		bb_u64(&h, 0); /* attr_size: patched to (80 + 152) / 2 */
		size_t sec = h.len;
		bb_zeros(&h, 48);
		bb_u64(&h, (1ull << PROF_FEAT_BUILD_ID) | (1ull << PROF_FEAT_ARCH) |
				   (1ull << PROF_FEAT_EVENT_DESC));
		bb_zeros(&h, 24);
		size_t ids0 = h.len;
		bb_u64(&h, 11);
		bb_u64(&h, 12);
		size_t ids1 = h.len;
		bb_u64(&h, 13);
		size_t a0 = h.len;
		bb_attr(&h, &attrs[0]);
		bb_u64(&h, ids0);
		bb_u64(&h, 16);
		bb_attr(&h, &attrs[1]);
		bb_u64(&h, ids1);
		bb_u64(&h, 8);
		bb_patch(&h, sec, a0, 8);
		bb_patch(&h, sec + 8, h.len - a0, 8);
		bb_patch(&h, 16, (h.len - a0) / 2, 8);
		size_t d0 = h.len;
		bb_bytes(&h, recs.p, recs.len);
		bb_patch(&h, sec + 16, d0, 8);
		bb_patch(&h, sec + 24, recs.len, 8);
		size_t table = h.len;
		bb_zeros(&h, 48);
		const struct bb *secs[3] = { &bids, &arch, &desc }; /* bit order: 2, 6, 12 */
		for (unsigned i = 0; i < 3; i++) {
			bb_patch(&h, table + 16 * i, h.len, 8);
			bb_patch(&h, table + 16 * i + 8, secs[i]->len, 8);
			bb_bytes(&h, secs[i]->p, secs[i]->len);
		}
		img = h;
	}
	write_seed("file-aarch64-two-events", &img);
	struct prof_reader *r;
	int err = prof_open_memory(img.p, img.len, &r);
	CHECK_INT(err, 0, "header open");
	if (!err) {
		CHECK_INT(prof_arch(r), BK_ARCH_AARCH64, "header arch");
		CHECK_STR(prof_arch_name(r), "aarch64", "header arch name");
		CHECK_INT(prof_is_pipe(r), 0, "header file mode");
		CHECK_INT(prof_attr_count(r), 2, "header attrs");
		const struct prof_attr *a0 = prof_attr_at(r, 0), *a1 = prof_attr_at(r, 1);
		CHECK_INT(a0->size, 64, "attr 0 size");
		CHECK_U64(a0->config, 1, "attr 0 config");
		CHECK_U64(a0->sample_regs_user, 0, "attr 0: VER0 has no register mask");
		CHECK_INT(a0->nids, 2, "attr 0 ids");
		CHECK_U64(a0->ids[1], 12, "attr 0 ids");
		CHECK_STR(a0->name, "instructions", "attr 0 name");
		CHECK_INT(a1->size, 136, "attr 1 size");
		CHECK_U64(a1->sample_regs_user, 0x1ffffffffull, "attr 1 mask");
		CHECK_U64(a1->sample_stack_user, 8192, "attr 1 stack");
		CHECK_INT(a1->freq, 1, "attr 1 freq");
		CHECK_INT(a1->sample_id_all, 1, "attr 1 sample_id_all");
		CHECK_STR(a1->name, "cpu-clock", "attr 1 name");
		CHECK(prof_attr_at(r, 2) == NULL, "attr 2");
		CHECK_INT(prof_build_id_count(r), 2, "build-ids");
		const struct prof_build_id *b0 = prof_build_id_at(r, 0), *b1 = prof_build_id_at(r, 1);
		CHECK_INT(b0->pid, -1, "build-id 0 pid");
		CHECK_INT(b0->len, 20, "build-id 0 len (no size bit: 20)");
		CHECK(b0->bytes[0] == 0xc0 && b0->bytes[19] == 0xd3, "build-id 0 bytes");
		CHECK_STR(b0->filename, "[kernel.kallsyms]", "build-id 0 file");
		CHECK_INT(b1->pid, 4242, "build-id 1 pid");
		CHECK_INT(b1->len, 16, "build-id 1 len");
		CHECK_STR(b1->filename, "/usr/lib/libm.so.6", "build-id 1 file");
		struct prof_record rec;
		CHECK_INT(prof_next(r, &rec), 1, "aarch64 sample");
		CHECK_INT(rec.attr, 1, "aarch64 sample: by IDENTIFIER");
		CHECK_U64(rec.sample.ip, 0x400123, "aarch64 sample ip");
		CHECK(rec.sample.regs_user.dwarf != NULL, "aarch64 regs mapped");
		for (unsigned d = 0; d <= 32 && rec.sample.regs_user.dwarf; d++) {
			uint64_t v = 0;
			CHECK(bk_regs_get(rec.sample.regs_user.dwarf, d, &v) && v == 0x1000 + d,
			      "aarch64 DWARF %u (x0..x30 0..30, sp 31, pc 32)", d);
		}
		CHECK_INT(prof_next(r, &rec), 1, "sample of event 0");
		CHECK_INT(rec.attr, 0, "sample of event 0: by IDENTIFIER");
		CHECK_INT(rec.pid, 5, "sample of event 0 pid");
		CHECK(rec.sample.regs_user.abi == 0 && rec.sample.regs_user.nr == 0, "no registers");
		CHECK_INT(prof_next(r, &rec), 0, "header end");
		prof_close(r);
	}
	bb_free(&img);

	/* The machine from HEADER_ARCH, else from the register mask; ABI 32
	 * and unknown machines are not mapped. */
	static const struct {
		const char *arch;
		uint64_t mask, abi;
		enum bk_arch want;
		bool mapped;
	} archs[] = {
		{ "x86_64", 0xff0fff, 2, BK_ARCH_X86_64, true },
		{ NULL, 0xff0fff, 2, BK_ARCH_X86_64, true },
		{ NULL, 0x1ffffffffull, 2, BK_ARCH_AARCH64, true },
		{ NULL, 0x400000000000ull | 0x1ffffffffull, 2, BK_ARCH_AARCH64, true },
		{ NULL, 0xf, 2, BK_ARCH_UNKNOWN, false },
		{ "x86_64", 0xff0fff, 1, BK_ARCH_X86_64, false },
		{ "riscv64", 0xff0fff, 2, BK_ARCH_UNKNOWN, false },
		{ "aarch64", 0x1ffffffffull, 2, BK_ARCH_AARCH64, true },
	};
	for (unsigned i = 0; i < BK_ARRAY_LEN(archs); i++) {
		struct attr_spec a = { .type = 1, .period = 1, .sample_type = PROF_SAMPLE_REGS_USER,
				       .regs_user = archs[i].mask };
		struct bb rr = { 0 }, im = { 0 };
		at = rec_begin(&rr, PROF_RECORD_SAMPLE, 2);
		bb_u64(&rr, archs[i].abi);
		for (int k = 0; k < __builtin_popcountll(archs[i].mask); k++)
			bb_u64(&rr, 0x100 + (uint64_t)k);
		rec_end(&rr, at);
		build_pipe(&im, &a, 1, archs[i].arch, &rr);
		char ctx[48];
		snprintf(ctx, sizeof(ctx), "arch case %u", i);
		err = prof_open_memory(im.p, im.len, &r);
		CHECK_INT(err, 0, ctx);
		if (!err) {
			CHECK_INT(prof_arch(r), archs[i].want, ctx);
			struct prof_record rec;
			CHECK_INT(prof_next(r, &rec), 1, ctx);
			CHECK_INT(rec.sample.regs_user.dwarf != NULL, archs[i].mapped, ctx);
			if (rec.sample.regs_user.dwarf && archs[i].want == BK_ARCH_AARCH64) {
				uint64_t v = 0;
				bool vg = archs[i].mask >> 46 & 1;
				CHECK_INT(bk_regs_get(rec.sample.regs_user.dwarf, 46, &v), vg, ctx);
				if (vg)
					CHECK_U64(v, 0x100 + 33, ctx); /* VG: perf 46 -> DWARF 46 */
			}
			prof_close(r);
		}
		bb_free(&rr);
		bb_free(&im);
	}
	CHECK_INT(prof_perf_reg_to_dwarf(BK_ARCH_X86_64, 10), -1, "x86 CS unmapped");
	CHECK_INT(prof_perf_reg_to_dwarf(BK_ARCH_X86_64, 32), -1, "x86 XMM0 unmapped");
	CHECK_INT(prof_perf_reg_to_dwarf(BK_ARCH_X86_64, 3), 1, "x86 DX -> rdx 1");
	CHECK_INT(prof_perf_reg_to_dwarf(BK_ARCH_X86_64, 23), 15, "x86 R15 -> 15");
	CHECK_INT(prof_perf_reg_to_dwarf(BK_ARCH_AARCH64, 33), -1, "aarch64 33 unmapped");
	CHECK_INT(prof_perf_reg_to_dwarf(BK_ARCH_UNKNOWN, 0), -1, "unknown arch");
	bb_free(&arch);
	bb_free(&desc);
	bb_free(&bids);
	bb_free(&recs);
}

/* Several events: told apart by ID at a common offset, by IDENTIFIER, or
 * not at all. */
static void test_multi(void)
{
	static const struct {
		const char *name;
		uint64_t t0, t1;
		uint64_t sample_id;     /* the id the sample names */
		int err, attr;          /* prof_next's error, or the attr found */
	} cases[] = {
		{ "ID at the same offset", PROF_SAMPLE_IP | PROF_SAMPLE_ID,
		  PROF_SAMPLE_IP | PROF_SAMPLE_ID | PROF_SAMPLE_PERIOD, 21, 0, 1 },
		{ "IDENTIFIER", PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP,
		  PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_TID, 21, 0, 1 },
		{ "IDENTIFIER names the first", PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP,
		  PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP, 20, 0, 0 },
		{ "unknown id, same layout", PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP,
		  PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP, 99, 0, -1 },
		{ "unknown id, layouts differ", PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_IP,
		  PROF_SAMPLE_IDENTIFIER | PROF_SAMPLE_TID, 99, BK_E_CORRUPT, 0 },
		{ "no ids, same layout", PROF_SAMPLE_IP, PROF_SAMPLE_IP, 0, 0, -1 },
		{ "no ids, layouts differ", PROF_SAMPLE_IP, PROF_SAMPLE_IP | PROF_SAMPLE_TID, 0,
		  BK_E_UNSUPPORTED, 0 },
		{ "ID at different offsets", PROF_SAMPLE_ID, PROF_SAMPLE_IP | PROF_SAMPLE_ID, 21,
		  BK_E_UNSUPPORTED, 0 },
	};
	for (unsigned i = 0; i < BK_ARRAY_LEN(cases); i++) {
		struct attr_spec a[2] = {
			{ .type = 1, .period = 1, .sample_type = cases[i].t0, .ids = { 20 }, .nids = 1 },
			{ .type = 1, .period = 2, .sample_type = cases[i].t1, .ids = { 21 }, .nids = 1 },
		};
		int which = cases[i].attr < 0 ? 0 : cases[i].attr;
		struct sval v;
		sval_fill(&v, 3);
		v.id = v.identifier = cases[i].sample_id;
		struct bb r = { 0 }, img = { 0 };
		encode_sample(&r, &a[which], &v);
		build_pipe(&img, a, 2, NULL, &r);
		struct readout o;
		read_all_mem(&img, &o);
		CHECK_INT(o.open_err, 0, cases[i].name);
		if (cases[i].err) {
			CHECK_INT(o.n, 0, cases[i].name);
			CHECK_INT(o.end, cases[i].err, cases[i].name);
		} else {
			CHECK_INT(o.n, 1, cases[i].name);
			CHECK_INT(o.end, 0, cases[i].name);
			CHECK_INT(o.recs[0].attr, cases[i].attr, cases[i].name);
			CHECK_U64(o.recs[0].sample.ip, a[which].sample_type & PROF_SAMPLE_IP ? v.ip : 0,
				  cases[i].name);
		}
		bb_free(&r);
		bb_free(&img);
	}
}

/* ---- Errors --------------------------------------------------------------------------- */

enum damage {
	D_NONE, D_SWAPPED, D_V1, D_MAGIC, D_HSIZE, D_ATTR_SIZE0, D_HDR_ATTR_SIZE0, D_FUTURE_BIT,
	D_FUTURE_READ, D_REC_SIZE4, D_REC_PAST, D_COMPRESSED, D_DYN_GT_SIZE, D_CHAIN_NR, D_ABI3,
	D_LEFTOVER, D_MMAP_NO_NUL, D_BUILD_ID_21, D_FEATURE_PAST, D_DATA_PAST, D_SAMPLE_FIRST,
	D_FILE_ON_STREAM, D_ARCH_NO_NUL, D_EVENT_DESC_ATTR0, D_TRAILER_LONG, D_ATTR_SHORT,
	D_IDS_ODD, D_AUX_PAST, D_BRANCH_NR, D_READ_NR,
};

static const struct {
	const char *name;
	enum damage d;
	int open_err, next_err;
} damages[] = {
	{ "undamaged", D_NONE, 0, 0 },
	{ "byte-swapped (big-endian) file", D_SWAPPED, BK_E_UNSUPPORTED, 0 },
	{ "version 1 (PERFFILE)", D_V1, BK_E_UNSUPPORTED, 0 },
	{ "not perf.data", D_MAGIC, BK_E_CORRUPT, 0 },
	{ "header size 40", D_HSIZE, BK_E_CORRUPT, 0 },
	{ "attr.size 0", D_ATTR_SIZE0, BK_E_CORRUPT, 0 },
	{ "header attr_size 0", D_HDR_ATTR_SIZE0, BK_E_CORRUPT, 0 },
	{ "sample_type bit 25", D_FUTURE_BIT, BK_E_UNSUPPORTED, 0 },
	{ "read_format bit 5", D_FUTURE_READ, BK_E_UNSUPPORTED, 0 },
	{ "record size 4", D_REC_SIZE4, 0, BK_E_CORRUPT },
	{ "record past the data", D_REC_PAST, 0, BK_E_CORRUPT },
	{ "compressed record", D_COMPRESSED, 0, BK_E_UNSUPPORTED },
	{ "stack dyn_size > size", D_DYN_GT_SIZE, 0, BK_E_CORRUPT },
	{ "callchain nr past the record", D_CHAIN_NR, 0, BK_E_CORRUPT },
	{ "regs abi 3", D_ABI3, 0, BK_E_CORRUPT },
	{ "sample with bytes left over", D_LEFTOVER, 0, BK_E_CORRUPT },
	{ "mmap filename without NUL", D_MMAP_NO_NUL, 0, BK_E_CORRUPT },
	{ "build-id size 21", D_BUILD_ID_21, 0, BK_E_CORRUPT },
	{ "feature section past the file", D_FEATURE_PAST, BK_E_CORRUPT, 0 },
	{ "data section past the file", D_DATA_PAST, BK_E_CORRUPT, 0 },
	{ "sample before any attr", D_SAMPLE_FIRST, 0, BK_E_CORRUPT },
	{ "file mode on a stream", D_FILE_ON_STREAM, BK_E_UNSUPPORTED, 0 },
	{ "arch string without NUL", D_ARCH_NO_NUL, BK_E_CORRUPT, 0 },
	{ "event desc attr_size 0", D_EVENT_DESC_ATTR0, BK_E_CORRUPT, 0 },
	{ "trailer longer than the record", D_TRAILER_LONG, 0, BK_E_CORRUPT },
	{ "attr.size 63", D_ATTR_SHORT, BK_E_CORRUPT, 0 },
	{ "ids section of 12 bytes", D_IDS_ODD, BK_E_CORRUPT, 0 },
	{ "aux size past the record", D_AUX_PAST, 0, BK_E_CORRUPT },
	{ "branch nr past the record", D_BRANCH_NR, 0, BK_E_CORRUPT },
	{ "read group nr past the record", D_READ_NR, 0, BK_E_CORRUPT },
};

static void test_errors(void)
{
	for (unsigned i = 0; i < BK_ARRAY_LEN(damages); i++) {
		enum damage d = damages[i].d;
		struct attr_spec a = {
			.type = 1, .period = 1, .flags = FLAG_SAMPLE_ID_ALL, .ids = { 5 }, .nids = 1,
			.sample_type = PROF_SAMPLE_IP | PROF_SAMPLE_TID | PROF_SAMPLE_TIME |
				       PROF_SAMPLE_CALLCHAIN | PROF_SAMPLE_REGS_USER |
				       PROF_SAMPLE_STACK_USER,
			.regs_user = 0xff0fff, .stack_user = 16,
		};
		if (d == D_FUTURE_BIT)
			a.sample_type |= 1ull << 25;
		if (d == D_FUTURE_READ)
			a.read_format = 1ull << 5;
		if (d == D_AUX_PAST)
			a.sample_type |= PROF_SAMPLE_AUX;
		if (d == D_BRANCH_NR)
			a.sample_type |= PROF_SAMPLE_BRANCH_STACK;
		if (d == D_READ_NR) {
			a.sample_type |= PROF_SAMPLE_READ;
			a.read_format = PROF_FORMAT_GROUP | PROF_FORMAT_ID;
		}
		struct bb r = { 0 }, img = { 0 }, arch = { 0 }, desc = { 0 };
		size_t at;
		if (d == D_COMPRESSED) {
			at = rec_begin(&r, PROF_RECORD_COMPRESSED, 0);
			bb_u64(&r, 0);
			rec_end(&r, at);
		}
		/* one sample */
		at = rec_begin(&r, PROF_RECORD_SAMPLE, 2);
		bb_u64(&r, 0x1234);
		bb_u32(&r, 1);
		bb_u32(&r, 2);
		bb_u64(&r, 3);
		bb_u64(&r, d == D_CHAIN_NR ? 1000 : 1);
		bb_u64(&r, (uint64_t)-512);
		bb_u64(&r, d == D_ABI3 ? 3 : 2);
		for (unsigned k = 0; k < 20; k++)
			bb_u64(&r, k);
		bb_u64(&r, 16);
		bb_zeros(&r, 16);
		bb_u64(&r, d == D_DYN_GT_SIZE ? 17 : 16);
		if (d == D_LEFTOVER)
			bb_u64(&r, 0);
		if (d == D_AUX_PAST)
			bb_u64(&r, 9);
		if (d == D_BRANCH_NR) {
			/* inserted before REGS_USER would be right; here it only has to overflow */
		}
		rec_end(&r, at);
		if (d == D_BRANCH_NR || d == D_READ_NR) {
			/* rebuild: the huge count comes right where it is read */
			r.len = 0;
			at = rec_begin(&r, PROF_RECORD_SAMPLE, 2);
			bb_u64(&r, 0x1234);
			bb_u32(&r, 1);
			bb_u32(&r, 2);
			bb_u64(&r, 3);
			bb_u64(&r, 1ull << 61); /* READ group nr, or callchain nr then branch nr */
			if (d == D_BRANCH_NR) {
				r.len -= 8;
				bb_u64(&r, 0); /* callchain nr */
				bb_u64(&r, 1ull << 60);
			}
			bb_zeros(&r, 32);
			rec_end(&r, at);
		}
		/* an MMAP2 with a build-id */
		at = rec_begin(&r, PROF_RECORD_MMAP2, PROF_MISC_MMAP_BUILD_ID);
		bb_u32(&r, 1);
		bb_u32(&r, 1);
		bb_u64(&r, 0x1000);
		bb_u64(&r, 0x1000);
		bb_u64(&r, 0);
		bb_uN(&r, d == D_BUILD_ID_21 ? 21 : 20, 1);
		bb_zeros(&r, 23);
		bb_u32(&r, 5);
		bb_u32(&r, 2);
		if (d == D_MMAP_NO_NUL)
			bb_bytes(&r, "/bin/abc", 8);
		else
			bb_str8(&r, "/bin/ab");
		trailer(&r, a.sample_type, 1, 1, 4, 5, 0);
		rec_end(&r, at);
		if (d == D_TRAILER_LONG) {
			/* an EXIT whose body is shorter than its trailer */
			at = rec_begin(&r, PROF_RECORD_EXIT, 0);
			bb_u64(&r, 0);
			rec_end(&r, at);
		}
		if (d == D_REC_SIZE4) {
			at = rec_begin(&r, 200, 0);
			bb_patch(&r, at + 6, 4, 2);
		}
		if (d == D_REC_PAST) {
			at = rec_begin(&r, 200, 0);
			bb_patch(&r, at + 6, 64, 2);
		}
		if (d == D_ARCH_NO_NUL) {
			bb_u32(&arch, 8);
			bb_bytes(&arch, "x86_64xx", 8);
		} else {
			feat_string(&arch, "x86_64");
		}
		bb_u32(&desc, 1);
		bb_u32(&desc, d == D_EVENT_DESC_ATTR0 ? 0 : 128);
		if (d != D_EVENT_DESC_ATTR0)
			bb_zeros(&desc, 128);
		bb_u32(&desc, 0);
		feat_string(&desc, "ev");
		struct feature feats[2] = { { PROF_FEAT_ARCH, &arch }, { PROF_FEAT_EVENT_DESC, &desc } };

		bool file = d != D_COMPRESSED && d != D_SAMPLE_FIRST;
		if (d == D_SAMPLE_FIRST) {
			build_pipe(&img, NULL, 0, NULL, &r);
		} else if (file) {
			build_file(&img, &a, 1, &r, feats, 2);
		} else {
			build_pipe(&img, &a, 1, "x86_64", &r);
		}
		switch (d) {
		case D_SWAPPED: memcpy(img.p, "2ELIFREP", 8); break;
		case D_V1: memcpy(img.p, "PERFFILE", 8); break;
		case D_MAGIC: memcpy(img.p, "PERFILE3", 8); break;
		case D_HSIZE: bb_patch(&img, 8, 40, 8); break;
		case D_ATTR_SIZE0: bb_patch(&img, base_rd_le(img.p + 24, 8) + 4, 0, 4); break;
		case D_ATTR_SHORT: bb_patch(&img, base_rd_le(img.p + 24, 8) + 4, 63, 4); break;
		case D_HDR_ATTR_SIZE0: bb_patch(&img, 16, 0, 8); break;
		case D_IDS_ODD: bb_patch(&img, base_rd_le(img.p + 24, 8) + 128 + 8, 12, 8); break;
		case D_FEATURE_PAST: {
			uint64_t table = base_rd_le(img.p + 40, 8) + base_rd_le(img.p + 48, 8);
			bb_patch(&img, table + 8, img.len, 8);
			break;
		}
		case D_DATA_PAST: bb_patch(&img, 48, img.len, 8); break;
		default: break;
		}
		struct readout o;
		if (d == D_FILE_ON_STREAM) {
			memset(&o, 0, sizeof(o));
			int fd = memfd_create("prof", 0);
			if (fd >= 0 && write(fd, img.p, img.len) == (ssize_t)img.len &&
			    lseek(fd, 0, SEEK_SET) == 0) {
				struct prof_reader *rd;
				o.open_err = prof_open_fd(fd, &rd);
				if (!o.open_err)
					prof_close(rd);
			}
			if (fd >= 0)
				close(fd);
		} else {
			read_all_mem(&img, &o);
		}
		CHECK_INT(o.open_err, damages[i].open_err, damages[i].name);
		if (!o.open_err) {
			CHECK_INT(o.end, damages[i].next_err, damages[i].name);
			if (!damages[i].next_err)
				CHECK_INT(o.n, 2, damages[i].name);
		}
		if (o.open_err == 0 && o.end) {
			/* an error is final */
			struct prof_reader *rd;
			if (prof_open_memory(img.p, img.len, &rd) == 0) {
				struct prof_record rec;
				int e;
				while ((e = prof_next(rd, &rec)) > 0)
					;
				CHECK_INT(prof_next(rd, &rec), e, damages[i].name);
				CHECK_INT(prof_next(rd, &rec), e, damages[i].name);
				prof_close(rd);
			}
		}
		if (seed_dir && d != D_NONE) {
			char name[64];
			snprintf(name, sizeof(name), "damaged-%u", i);
			write_seed(name, &img);
		}
		bb_free(&r);
		bb_free(&img);
		bb_free(&arch);
		bb_free(&desc);
	}
}

/* ---- One recording, every way of reading it -------------------------------------------- */

struct digest {
	uint64_t n, h;
	int end;
};

static void mix(struct digest *g, uint64_t v)
{
	g->h = (g->h ^ v) * 0x100000001b3ull;
}

static void digest_record(struct digest *g, const struct prof_record *r)
{
	g->n++;
	mix(g, r->kind);
	mix(g, r->type);
	mix(g, r->offset);
	mix(g, (uint64_t)r->attr);
	mix(g, r->time);
	mix(g, (uint32_t)r->pid);
	for (size_t i = 0; i < r->size; i++)
		mix(g, r->raw[i]);
	if (r->kind == PROF_SAMPLE)
		for (uint64_t i = 0; i < r->sample.callchain_nr; i++)
			mix(g, r->sample.callchain[i]);
}

static struct digest digest_reader(struct prof_reader *r)
{
	struct digest g = { 0, 0xcbf29ce484222325ull, 0 };
	struct prof_record rec;
	int res;
	while ((res = prof_next(r, &rec)) > 0)
		digest_record(&g, &rec);
	g.end = res;
	mix(&g, prof_attr_count(r));
	mix(&g, prof_arch(r));
	return g;
}

/* Reads IMG from memory, from a memfd with pread, and (a pipe layout)
 * with read() of at most 1, 7 and 13 bytes: all the same. */
static void same_everywhere(const char *ctx, const struct bb *img, bool pipe, bool big,
			    struct digest *out)
{
	struct prof_reader *r;
	int err = prof_open_memory(img->p, img->len, &r);
	CHECK_INT(err, 0, ctx);
	if (err)
		return;
	struct digest want = digest_reader(r);
	prof_close(r);
	*out = want;
	int fd = memfd_create("prof", 0);
	CHECK(fd >= 0, "%s: memfd", ctx);
	if (fd < 0)
		return;
	size_t done = 0;
	while (done < img->len) {
		ssize_t n = write(fd, img->p + done, img->len - done);
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	static const size_t small_reads[] = { 0, 1, 7, 13 }, big_reads[] = { 0, 4093, 65539, 3 << 20 };
	const size_t *max_reads = big ? big_reads : small_reads;
	for (int way = -1; way < (pipe ? 4 : 0); way++) {
		lseek(fd, 0, SEEK_SET);
		err = prof_open_fd_opts(fd, way < 0, way < 0 ? 0 : max_reads[way], &r);
		CHECK_INT(err, 0, ctx);
		if (err)
			continue;
		struct digest got = digest_reader(r);
		CHECK(got.n == want.n && got.h == want.h && got.end == want.end,
		      "%s: way %d: %llu records %#llx end %d, memory %llu %#llx end %d", ctx, way,
		      (unsigned long long)got.n, (unsigned long long)got.h, got.end,
		      (unsigned long long)want.n, (unsigned long long)want.h, want.end);
		prof_close(r);
	}
	close(fd);
}

static void test_ways(void)
{
	struct attr_spec a = {
		.type = 1, .period = 100, .flags = FLAG_SAMPLE_ID_ALL, .ids = { 7 }, .nids = 1,
		.sample_type = PROF_SAMPLE_IP | PROF_SAMPLE_TID | PROF_SAMPLE_TIME | PROF_SAMPLE_ID |
			       PROF_SAMPLE_CALLCHAIN | PROF_SAMPLE_RAW | PROF_SAMPLE_STACK_USER,
		.stack_user = 24,
	};
	/* A small recording with payloads after AUXTRACE and TRACING_DATA. */
	struct bb r = { 0 };
	for (uint64_t seed = 0; seed < 6; seed++) {
		struct sval v;
		sval_fill(&v, seed);
		encode_sample(&r, &a, &v);
		if (seed == 2) {
			size_t at = rec_begin(&r, PROF_RECORD_AUXTRACE, 0);
			bb_u64(&r, 40); /* size of what follows */
			bb_u64(&r, 0);
			bb_u64(&r, 0);
			bb_u32(&r, 0);
			bb_u32(&r, 0);
			bb_u32(&r, 0);
			bb_u32(&r, 0);
			rec_end(&r, at);
			for (unsigned k = 0; k < 40; k++)
				bb_uN(&r, 0xab, 1);
		}
		if (seed == 4) {
			size_t at = rec_begin(&r, PROF_RECORD_HEADER_TRACING_DATA, 0);
			bb_u32(&r, 16);
			bb_u32(&r, 0);
			rec_end(&r, at);
			bb_zeros(&r, 16);
		}
	}
	struct bb pipe = { 0 }, file = { 0 };
	build_pipe(&pipe, &a, 1, "x86_64", &r);
	struct bb arch = { 0 };
	feat_string(&arch, "x86_64");
	struct feature f = { PROF_FEAT_ARCH, &arch };
	build_file(&file, &a, 1, &r, &f, 1);
	write_seed("payloads-pipe", &pipe);
	write_seed("payloads-file", &file);
	struct digest dp, df;
	same_everywhere("small pipe", &pipe, true, false, &dp);
	same_everywhere("small file", &file, false, false, &df);
	CHECK_INT(dp.n, 7, "small pipe: 6 samples and the AUXTRACE");
	CHECK_INT(dp.end, 0, "small pipe end");
	CHECK_INT(df.n, 7, "small file: 6 samples and the AUXTRACE");
	CHECK_INT(df.end, 0, "small file end");
	struct prof_reader *rd;
	if (prof_open_memory(pipe.p, pipe.len, &rd) == 0) {
		struct digest g = digest_reader(rd);
		(void)g;
		CHECK_U64(prof_stats(rd)->payload_bytes, 56, "payload bytes skipped");
		CHECK_U64(prof_stats(rd)->by_type[PROF_RECORD_HEADER_TRACING_DATA], 1, "tracing data");
		CHECK_U64(prof_stats(rd)->other, 1, "other (AUXTRACE)");
		prof_close(rd);
	}

	/* Every prefix: the pipe layout ends cleanly at a record boundary and
	 * is corrupt elsewhere; a cut file misses its features: corrupt. */
	size_t bound[64], nb = 0;
	for (size_t o = 16; o < pipe.len && nb < 64;) {
		bound[nb++] = o;
		size_t sz = (size_t)base_rd_le(pipe.p + o + 6, 2);
		uint32_t type = (uint32_t)base_rd_le(pipe.p + o, 4);
		if (type == PROF_RECORD_AUXTRACE)
			sz += 40;
		if (type == PROF_RECORD_HEADER_TRACING_DATA)
			sz += 16;
		o += sz;
	}
	for (size_t len = 0; len <= pipe.len; len++) {
		struct bb c = { pipe.p, len, len };
		struct readout o;
		read_all_mem(&c, &o);
		bool at_bound = len == pipe.len;
		for (size_t k = 0; k < nb; k++)
			at_bound |= bound[k] == len;
		/* cut inside the header records: open fails; else the end says */
		int res = o.open_err ? o.open_err : o.end;
		if (len < 16)
			CHECK(o.open_err == BK_E_CORRUPT, "pipe cut to %zu: %d", len, o.open_err);
		else if (at_bound)
			CHECK(res == 0, "pipe cut to %zu (a boundary): %d", len, res);
		else
			CHECK(res == BK_E_CORRUPT, "pipe cut to %zu: %d", len, res);
	}
	for (size_t len = 0; len < file.len; len++) {
		struct bb c = { file.p, len, len };
		struct readout o;
		read_all_mem(&c, &o);
		CHECK(o.open_err == BK_E_CORRUPT, "file cut to %zu: %d", len, o.open_err);
	}

	/* More than the window: records straddle its end, read in every way. */
	struct bb big = { 0 }, bigr = { 0 };
	uint64_t seed = 0;
	while (bigr.len < 3 * PROF_WINDOW_LEN + 12345) {
		struct sval v;
		sval_fill(&v, seed++);
		v.stack_size = 24;
		v.stack_dyn = 16;
		encode_sample(&bigr, &a, &v);
		if (seed % 1000 == 0) {
			/* a big AUXTRACE payload crossing the window */
			size_t at = rec_begin(&bigr, PROF_RECORD_AUXTRACE, 0);
			bb_u64(&bigr, 300000);
			bb_zeros(&bigr, 32);
			rec_end(&bigr, at);
			bb_zeros(&bigr, 300000);
		}
	}
	build_pipe(&big, &a, 1, NULL, &bigr);
	struct digest dbig;
	same_everywhere("big pipe", &big, true, true, &dbig);
	CHECK(dbig.n > 5000 && dbig.end == 0, "big pipe: %llu records, end %d",
	      (unsigned long long)dbig.n, dbig.end);
	bb_free(&big);
	build_file(&big, &a, 1, &bigr, &f, 1);
	struct digest dbigf;
	same_everywhere("big file", &big, false, true, &dbigf);
	CHECK(dbigf.n == dbig.n && dbigf.end == 0, "big file: %llu records",
	      (unsigned long long)dbigf.n);

	/* Allocation failures while opening: an error, or a good open. */
	for (unsigned long n = 1; n < 20; n++) {
		base_alloc_fail_after(n);
		int err = prof_open_memory(file.p, file.len, &rd);
		base_alloc_fail_after(0);
		CHECK(err == 0 || err == BK_E_NOMEM, "alloc fail %lu: %d", n, err);
		if (!err)
			prof_close(rd);
		base_alloc_fail_after(n);
		err = prof_open_memory(pipe.p, pipe.len, &rd);
		base_alloc_fail_after(0);
		CHECK(err == 0 || err == BK_E_NOMEM, "pipe alloc fail %lu: %d", n, err);
		if (!err)
			prof_close(rd);
	}
	/* More events than PROF_MAX_ATTRS: in a file's attrs section, in a stream. */
	{
		struct bb h = { 0 };
		bb_bytes(&h, "PERFILE2", 8);
		bb_u64(&h, 104);
		bb_u64(&h, 144);
		bb_u64(&h, 104);
		bb_u64(&h, 144ull * (PROF_MAX_ATTRS + 1));
		bb_u64(&h, 104); /* data: empty, in the file */
		bb_zeros(&h, 104 - h.len);
		CHECK_INT(prof_open_memory(h.p, h.len, &rd), BK_E_LIMIT, "too many attrs (file)");
		bb_free(&h);
		struct attr_spec one = { .type = 1, .period = 1 };
		struct attr_spec *many = calloc(PROF_MAX_ATTRS + 1, sizeof(*many));
		for (unsigned i = 0; many && i <= PROF_MAX_ATTRS; i++)
			many[i] = one;
		if (many) {
			build_pipe(&h, many, PROF_MAX_ATTRS + 1, NULL, NULL);
			CHECK_INT(prof_open_memory(h.p, h.len, &rd), BK_E_LIMIT, "too many attrs (pipe)");
			h.len = 0;
			build_pipe(&h, many, PROF_MAX_ATTRS, NULL, NULL);
			CHECK_INT(prof_open_memory(h.p, h.len, &rd), 0, "PROF_MAX_ATTRS attrs (pipe)");
			if (rd)
				prof_close(rd);
			free(many);
		}
		bb_free(&h);
	}
	CHECK_INT(prof_open_file("/nonexistent/perf.data", &rd), BK_E_IO, "missing file");
	CHECK_INT(prof_open_file("/", &rd), BK_E_IO, "a directory");
	CHECK_INT(prof_open_memory(NULL, 0, &rd), BK_E_CORRUPT, "empty");
	bb_free(&big);
	bb_free(&bigr);
	bb_free(&pipe);
	bb_free(&file);
	bb_free(&arch);
	bb_free(&r);
}

/* ---- Build-ids: files that are not the ones perf saw (prof_stack.c) ---------------- */

#define BID_SAMPLE_TYPE (PROF_SAMPLE_IP | PROF_SAMPLE_TID | PROF_SAMPLE_TIME | PROF_SAMPLE_REGS_USER)
#define BID_TRAILER (PROF_SAMPLE_TID | PROF_SAMPLE_TIME)

/* An executable MMAP2 of PATH at ADDR (0x1000 bytes, offset 0): with
 * build-id ID (20 bytes) of its own, or, ID NULL, an inode. */
static void bid_mmap(struct bb *r, uint32_t pid, uint64_t addr, const char *path,
		     const uint8_t *id, uint64_t time)
{
	size_t at = rec_begin(r, PROF_RECORD_MMAP2, 2 | (id ? PROF_MISC_MMAP_BUILD_ID : 0));
	bb_u32(r, pid);
	bb_u32(r, pid);
	bb_u64(r, addr);
	bb_u64(r, 0x1000);
	bb_u64(r, 0);
	if (id) {
		bb_uN(r, 20, 1);
		bb_zeros(r, 3);
		bb_bytes(r, id, 20);
	} else {
		bb_u32(r, 8);
		bb_u32(r, 1);
		bb_u64(r, 1234);
		bb_u64(r, 1);
	}
	bb_u32(r, 5); /* PROT_READ | PROT_EXEC */
	bb_u32(r, 2);
	bb_str8(r, path);
	trailer(r, BID_TRAILER, pid, pid, time, 0, 0);
	rec_end(r, at);
}

/* A sample at IP: rbp, rsp and rip, no stack copy. */
static void bid_sample(struct bb *r, uint32_t pid, uint64_t ip, uint64_t time)
{
	size_t at = rec_begin(r, PROF_RECORD_SAMPLE, 2);
	bb_u64(r, ip);
	bb_u32(r, pid);
	bb_u32(r, pid);
	bb_u64(r, time);
	bb_u64(r, PROF_REGS_ABI_64);
	bb_u64(r, 0);         /* BP */
	bb_u64(r, 0x7ff000);  /* SP */
	bb_u64(r, ip);        /* IP */
	rec_end(r, at);
}

/* A build_id_event (a HEADER_BUILD_ID entry or record) for PATH. */
static void bid_event(struct bb *r, int32_t pid, const char *path, const uint8_t *id)
{
	size_t at = rec_begin(r, PROF_RECORD_HEADER_BUILD_ID, 2);
	bb_u32(r, (uint32_t)pid);
	bb_bytes(r, id, 20);
	bb_zeros(r, 4);
	bb_str8(r, path);
	rec_end(r, at);
}

static void bid_fork(struct bb *r, uint32_t pid, uint32_t ppid, uint64_t time)
{
	size_t at = rec_begin(r, PROF_RECORD_FORK, 0);
	bb_u32(r, pid);
	bb_u32(r, ppid);
	bb_u32(r, pid);
	bb_u32(r, ppid);
	bb_u64(r, time);
	trailer(r, BID_TRAILER, pid, pid, time, 0, 0);
	rec_end(r, at);
}

/* How each sample of a recording went, read as backstep report reads it:
 * records queued and released in time order, HEADER_BUILD_ID records of a
 * stream too. */
#define BID_MAX 16
struct bid_walks {
	unsigned n;
	int frames[BID_MAX];
	const char *reason[BID_MAX];
	bool module[BID_MAX];  /* a module holds the sample's PC */
	uint64_t map[BID_MAX];
	const struct bk_elf *elf[BID_MAX]; /* the file of the module at the PC */
	uint64_t differs;
	const char *differing[3];
};

static void bid_release(struct prof_queue *q, struct prof_reader *r, struct prof_stacks *ps,
			bool end, struct bid_walks *o)
{
	size_t k = prof_queue_round(q, end);
	for (size_t i = 0; i < k; i++) {
		struct prof_record rec;
		if (prof_queue_get(q, r, i, &rec) < 0)
			continue;
		if (rec.kind != PROF_SAMPLE) {
			CHECK_INT(prof_stacks_event(ps, &rec), 0, "build-ids: event");
			continue;
		}
		uint64_t pcs[8];
		struct prof_walk w;
		int n = prof_stacks_walk(ps, &rec, pcs, NULL, 8, &w);
		struct bk_module_info mi;
		if (o->n < BID_MAX) {
			o->frames[o->n] = n;
			o->reason[o->n] = w.reason;
			o->module[o->n] = w.space && bk_space_module_at(w.space, rec.sample.ip, &mi) == 0;
			o->map[o->n] = w.map;
			const struct uw_module *m = w.space ? uw_space_find(w.space, rec.sample.ip)
							    : NULL;
			o->elf[o->n] = m ? m->elf : NULL;
			o->n++;
		}
	}
	prof_queue_drop_ready(q);
}

static void bid_read(const struct bb *img, struct bid_walks *o)
{
	memset(o, 0, sizeof(*o));
	struct prof_reader *r;
	struct prof_stacks *ps;
	struct prof_queue *q;
	CHECK_INT(prof_open_memory(img->p, img->len, &r), 0, "build-ids: open");
	CHECK_INT(prof_stacks_new(BK_ARCH_X86_64, &ps), 0, "build-ids: stacks");
	CHECK_INT(prof_queue_new(&q), 0, "build-ids: queue");
	struct prof_record rec;
	while (prof_next(r, &rec) == 1) {
		if (rec.kind == PROF_FINISHED_ROUND)
			bid_release(q, r, ps, false, o);
		else if (rec.kind != PROF_OTHER && rec.kind != PROF_LOST)
			CHECK_INT(prof_queue_push(q, r, &rec), 0, "build-ids: push");
	}
	bid_release(q, r, ps, true, o);
	o->differs = prof_stacks_stats(ps)->build_id_differs;
	for (size_t i = 0; i < 3; i++)
		o->differing[i] = prof_stacks_differing(ps, i);
	CHECK(prof_stacks_differing(ps, 3) == NULL, "build-ids: the list ends");
	/* (the strings die with the stacks: compared before) */
	static char keep[3][4096];
	for (size_t i = 0; i < 3; i++)
		if (o->differing[i]) {
			snprintf(keep[i], sizeof(keep[i]), "%s", o->differing[i]);
			o->differing[i] = keep[i];
		}
	prof_queue_free(q);
	prof_stacks_free(ps);
	prof_close(r);
}

/* The build-id of the ELF file PATH, zero-padded to 20 bytes: 0 if none. */
static size_t file_build_id(const char *path, uint8_t id[20])
{
	struct bk_elf *elf;
	memset(id, 0, 20);
	if (bk_elf_open(path, &elf))
		return 0;
	const uint8_t *b;
	size_t n = bk_elf_build_id(elf, &b);
	if (n > 20)
		n = 0;
	memcpy(id, b, n);
	bk_elf_close(elf);
	return n;
}

static void test_build_ids(void)
{
	/* A: this program, B: the C library (from the map: under ASan
	 * dladdr on a libc function names the interceptor in this program);
	 * their real build-ids, and one that is neither. */
	char a[4096], b[4096] = "", line[4096];
	ssize_t len = readlink("/proc/self/exe", a, sizeof(a) - 1);
	FILE *maps = fopen("/proc/self/maps", "r");
	while (maps && !b[0] && fgets(line, sizeof(line), maps)) {
		const char *path = strchr(line, '/');
		if (path && strstr(path, "/libc.so.6"))
			snprintf(b, sizeof(b), "%.*s", (int)strcspn(path, "\n"), path);
	}
	if (maps)
		fclose(maps);
	if (len <= 0 || !b[0]) {
		CHECK(0, "build-ids: this program's and libc's paths");
		return;
	}
	a[len] = 0;
	uint8_t id_a[20], id_b[20], wrong[20];
	memset(wrong, 0xab, sizeof(wrong));
	if (!file_build_id(a, id_a) || !file_build_id(b, id_b)) {
		CHECK(0, "build-ids: %s and %s have build-ids", a, b);
		return;
	}
	struct attr_spec attr = { .type = 1, .period = 1, .sample_type = BID_SAMPLE_TYPE,
				  .flags = FLAG_SAMPLE_ID_ALL, .regs_user = 0x1c0 /* BP SP IP */ };
	struct bid_walks o;

	/* File mode: HEADER_BUILD_ID gives A another build-id (the host's;
	 * a guest's entry with the right one does not count) and B its own. */
	{
		struct bb bids = { 0 }, arch = { 0 }, recs = { 0 }, img = { 0 };
		bid_event(&bids, -1, "[kernel.kallsyms]", wrong);
		bid_event(&bids, -1, a, wrong);
		bid_event(&bids, 4242, a, id_a);
		bid_event(&bids, -1, b, id_b);
		feat_string(&arch, "x86_64");
		bid_mmap(&recs, 100, 0x10000000, a, NULL, 10);
		bid_mmap(&recs, 100, 0x20000000, b, NULL, 11);
		bid_fork(&recs, 101, 100, 12);
		bid_sample(&recs, 100, 0x10000100, 20);                  /* 0: in A */
		bid_sample(&recs, 100, 0x20000100, 21);                  /* 1: in B */
		bid_sample(&recs, 101, 0x10000100, 22);                  /* 2: the child, in A */
		bid_mmap(&recs, 100, 0x30000000, a, id_a, 30);            /* A, its own id: right */
		bid_sample(&recs, 100, 0x30000100, 31);                  /* 3 */
		bid_mmap(&recs, 100, 0x20000000, b, wrong, 40);           /* over B, its own id wrong */
		bid_sample(&recs, 100, 0x20000100, 41);                  /* 4 */
		struct feature feats[2] = { { PROF_FEAT_BUILD_ID, &bids }, { PROF_FEAT_ARCH, &arch } };
		build_file(&img, &attr, 1, &recs, feats, 2);
		bid_read(&img, &o);
		CHECK_INT(o.n, 5, "file: samples");
		CHECK(o.frames[0] == 1 && o.reason[0] && !strcmp(o.reason[0], "build-id differs"),
		      "file: a sample in A ends there (%d frames, %s)", o.frames[0],
		      o.reason[0] ? o.reason[0] : "to the end");
		CHECK(!o.module[0], "file: no module for A");
		CHECK(o.module[1], "file: B, recorded with its own build-id, is used");
		CHECK(!o.reason[1] || strcmp(o.reason[1], "build-id differs"), "file: B's walk: %s",
		      o.reason[1]);
		CHECK(o.frames[2] == 1 && o.reason[2] && !strcmp(o.reason[2], "build-id differs") &&
		      !o.module[2], "file: the forked child has A's hole too");
		CHECK(o.module[3], "file: an MMAP2's own build-id before HEADER_BUILD_ID's");
		CHECK(!o.module[4] && o.reason[4] && !strcmp(o.reason[4], "build-id differs"),
		      "file: a mapping of B with the wrong build-id replaces B");
		CHECK(o.map[4] != o.map[1], "file: the map changed");
		CHECK_INT(o.differs, 2, "file: files that differ");
		CHECK_STR(o.differing[0], a, "file: the first, once");
		CHECK_STR(o.differing[1], b, "file: the second");
		CHECK(o.differing[2] == NULL, "file: no third");
		bb_free(&bids);
		bb_free(&arch);
		bb_free(&recs);
		bb_free(&img);
	}

	/* A stream (perf inject -b): A's HEADER_BUILD_ID record comes after
	 * A was mapped and sampled (records without a time are released
	 * first in their round: here the round after). */
	{
		struct bb recs = { 0 }, img = { 0 };
		size_t at;
		bid_mmap(&recs, 200, 0x10000000, a, NULL, 10);
		bid_mmap(&recs, 200, 0x20000000, b, NULL, 11);
		bid_sample(&recs, 200, 0x10000100, 20);                  /* 0: A, nothing recorded */
		for (int k = 0; k < 2; k++) {
			at = rec_begin(&recs, PROF_RECORD_FINISHED_ROUND, 0);
			rec_end(&recs, at);
		}
		bid_event(&recs, -1, a, wrong);
		bid_event(&recs, -1, b, id_b);
		bid_sample(&recs, 200, 0x10000100, 30);                  /* 1: A, now a hole */
		bid_sample(&recs, 200, 0x20000100, 31);                  /* 2: B */
		bid_mmap(&recs, 200, 0x40000000, a, NULL, 40);            /* A again */
		bid_sample(&recs, 200, 0x40000100, 41);                  /* 3 */
		build_pipe(&img, &attr, 1, "x86_64", &recs);
		bid_read(&img, &o);
		CHECK_INT(o.n, 4, "stream: samples");
		CHECK(o.module[0] && (!o.reason[0] || strcmp(o.reason[0], "build-id differs")),
		      "stream: before its record, A is used");
		CHECK(!o.module[1] && o.frames[1] == 1 && o.reason[1] &&
		      !strcmp(o.reason[1], "build-id differs"), "stream: after it, A is a hole");
		CHECK(o.map[1] != o.map[0], "stream: the map changed");
		CHECK(o.module[2], "stream: B, its record right, is used");
		CHECK(!o.module[3] && o.frames[3] == 1, "stream: a later mapping of A is a hole");
		CHECK_INT(o.differs, 1, "stream: files that differ");
		CHECK_STR(o.differing[0], a, "stream: A, once");
		bb_free(&recs);
		bb_free(&img);
	}

	/* Anonymous memory mapped where a file was (perf records no munmap:
	 * ld.so's ld.so.cache, then a JIT's code there): the file's module is
	 * gone there, and so is a hole; the child of a fork sees the same. */
	{
		struct bb recs = { 0 }, img = { 0 };
		bid_mmap(&recs, 300, 0x10000000, b, NULL, 10);            /* B */
		bid_mmap(&recs, 300, 0x20000000, a, wrong, 11);           /* a hole */
		bid_sample(&recs, 300, 0x10000100, 20);                  /* 0: in B */
		bid_sample(&recs, 300, 0x20000100, 21);                  /* 1: in the hole */
		bid_mmap(&recs, 300, 0x10000000, "//anon", NULL, 30);
		bid_mmap(&recs, 300, 0x20000000, "[anon:jit]", NULL, 31);
		bid_sample(&recs, 300, 0x10000100, 40);                  /* 2: anonymous */
		bid_sample(&recs, 300, 0x20000100, 41);                  /* 3: anonymous */
		bid_fork(&recs, 301, 300, 50);
		bid_sample(&recs, 301, 0x10000100, 60);                  /* 4: the child's */
		build_pipe(&img, &attr, 1, "x86_64", &recs);
		bid_read(&img, &o);
		CHECK_INT(o.n, 5, "anonymous: samples");
		CHECK(o.module[0] && !o.module[1] && o.frames[1] == 1 && o.reason[1] &&
		      !strcmp(o.reason[1], "build-id differs"), "anonymous: B, then the hole");
		CHECK(!o.module[2], "anonymous: B is gone where anonymous memory was mapped over it");
		CHECK(!o.module[3] && (!o.reason[3] || strcmp(o.reason[3], "build-id differs")),
		      "anonymous: the hole is gone too (%s)", o.reason[3] ? o.reason[3] : "-");
		CHECK(!o.module[4], "anonymous: the child's B is gone there too");
		CHECK(o.map[2] != o.map[0], "anonymous: the map changed");
		bb_free(&recs);
		bb_free(&img);
	}
}

/* A file mapped by several processes, and twice by one, is opened once:
 * every module of it has the same bk_elf (its tables, debug file and
 * their tables built once). */
static void test_shared_files(void)
{
	char a[4096];
	ssize_t len = readlink("/proc/self/exe", a, sizeof(a) - 1);
	if (len <= 0) {
		CHECK(0, "shared files: this program's path");
		return;
	}
	a[len] = 0;
	struct attr_spec attr = { .type = 1, .period = 1, .sample_type = BID_SAMPLE_TYPE,
				  .flags = FLAG_SAMPLE_ID_ALL, .regs_user = 0x1c0 };
	struct bb recs = { 0 }, img = { 0 };
	bid_mmap(&recs, 300, 0x10000000, a, NULL, 10);
	bid_mmap(&recs, 301, 0x50000000, a, NULL, 11);    /* another process */
	bid_mmap(&recs, 300, 0x30000000, a, NULL, 12);    /* the same, mapped again */
	bid_mmap(&recs, 302, 0x10000000, "/nonexistent/lib.so", NULL, 13);
	bid_mmap(&recs, 303, 0x10000000, "/nonexistent/lib.so", NULL, 14);
	bid_sample(&recs, 300, 0x10000100, 20);
	bid_sample(&recs, 301, 0x50000100, 21);
	bid_sample(&recs, 300, 0x30000100, 22);
	bid_sample(&recs, 302, 0x10000100, 23);
	bid_sample(&recs, 303, 0x10000100, 24);
	build_pipe(&img, &attr, 1, "x86_64", &recs);
	struct bid_walks o;
	bid_read(&img, &o);
	CHECK_INT(o.n, 5, "shared files: samples");
	CHECK(o.elf[0] != NULL, "shared files: the file is opened");
	CHECK(o.elf[1] == o.elf[0], "shared files: a second process has the same file");
	CHECK(o.elf[2] == o.elf[0], "shared files: a second mapping has the same file");
	CHECK(o.module[3] && o.elf[3] == NULL && o.module[4] && o.elf[4] == NULL,
	      "shared files: a file that cannot be opened is a module by name in each");
	bb_free(&recs);
	bb_free(&img);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-seeds"))
		seed_dir = argv[2];
	test_real_sample();
	test_samples();
	test_records();
	test_header();
	test_multi();
	test_errors();
	test_ways();
	test_build_ids();
	test_shared_files();
	return check_summary();
}
