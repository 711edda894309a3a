/* Decoding one perf.data record (the bytes prof_reader.c hands over, header
 * included) into a struct prof_record, and the perf -> DWARF register maps.
 *
 * Layouts are those of include/uapi/linux/perf_event.h: a SAMPLE carries
 * the fields its event's sample_type names, in the kernel's fixed order;
 * other kernel records (types below 64) end with the sample_id trailer
 * when the event has sample_id_all; perf's own records (64 and up) have
 * none. Every field is read through the bounded reader, so a count or size
 * that does not fit the record is BK_E_CORRUPT, never a read beyond it;
 * and a sample must be used up exactly by its fields.
 *
 * Invariant: arrays the record points at (callchain, registers) are the
 * reader's, overwritten by the next record; everything else points into
 * the record's own bytes. Trusts its caller (prof_reader.c) for LEN >= 8
 * and for P holding LEN bytes.
 */
#include "profile/prof.h"

/* ---- Registers --------------------------------------------------------------- */

/* asm/perf_regs.h order (x86): AX BX CX DX SI DI BP SP IP FLAGS CS SS DS
 * ES FS GS R8..R15, to the x86-64 psABI DWARF numbers (rax 0, rdx 1,
 * rcx 2, rbx 3, rsi 4, rdi 5, rbp 6, rsp 7, r8-r15 8-15, rip 16,
 * rflags 49). The segment selectors are left out, as struct bk_regs keeps
 * only what an unwinder tracks; the XMM pairs (32 and up) are 128 bits. */
static const int8_t x86_64_dwarf[24] = {
	0, 3, 2, 1, 4, 5, 6, 7, 16, 49, -1, -1, -1, -1, -1, -1, 8, 9, 10, 11, 12, 13, 14, 15,
};

int prof_perf_reg_to_dwarf(enum bk_arch arch, unsigned perf_reg)
{
	switch (arch) {
	case BK_ARCH_X86_64:
		return perf_reg < BK_ARRAY_LEN(x86_64_dwarf) ? x86_64_dwarf[perf_reg] : -1;
	case BK_ARCH_AARCH64:
		/* X0-X29, LR (x30), SP, PC: DWARF 0-32 alike; VG is 46 in both. */
		return perf_reg <= 32 || perf_reg == 46 ? (int)perf_reg : -1;
	default:
		return -1;
	}
}

static enum bk_arch regs_arch(const struct prof_reader *r, const struct prof_attr_int *a)
{
	return r->arch_name ? r->arch : a->regs_arch;
}

/* { u64 abi; u64 regs[weight(mask)] } (no registers when abi is NONE). */
static int parse_regs(struct buf *b, uint64_t mask, uint64_t *vals, struct prof_regs *out)
{
	int err = buf_u64(b, &out->abi);
	if (err)
		return err;
	if (out->abi > PROF_REGS_ABI_64)
		return BK_CORRUPT;
	out->mask = mask;
	out->val = vals;
	if (out->abi == PROF_REGS_ABI_NONE)
		return 0;
	unsigned nr = (unsigned)__builtin_popcountll(mask);
	if (buf_left(b) / 8 < nr)
		return BK_CORRUPT;
	for (unsigned i = 0; i < nr; i++)
		vals[i] = base_rd_le(b->p + 8 * i, 8);
	b->p += 8 * (size_t)nr;
	out->nr = nr;
	return 0;
}

static void map_regs(struct prof_reader *r, enum bk_arch arch, struct prof_regs *regs)
{
	if (regs->abi != PROF_REGS_ABI_64 || arch == BK_ARCH_UNKNOWN)
		return;
	memset(r->dwarf.valid, 0, sizeof(r->dwarf.valid));
	uint64_t m = regs->mask;
	for (unsigned i = 0; m; i++, m &= m - 1) {
		int d = prof_perf_reg_to_dwarf(arch, (unsigned)__builtin_ctzll(m));
		if (d >= 0)
			bk_regs_set(&r->dwarf, (unsigned)d, regs->val[i]);
	}
	regs->dwarf = &r->dwarf;
}

/* ---- Samples ------------------------------------------------------------------ */

void prof_read_entry(const struct prof_read *rd, uint64_t i, uint64_t *value, uint64_t *id,
		     uint64_t *lost)
{
	const uint8_t *e = rd->entries + i * rd->stride;
	unsigned k = 8;
	*value = base_rd_le(e, 8);
	*id = *lost = 0;
	if (rd->read_format & PROF_FORMAT_ID) {
		*id = base_rd_le(e + k, 8);
		k += 8;
	}
	if (rd->read_format & PROF_FORMAT_LOST)
		*lost = base_rd_le(e + k, 8);
}

/* struct read_format (perf_event.h): a group's {nr, times, nr x {value,
 * id, lost}} or one {value, times, id, lost}, which is gathered into
 * read_one so both read alike. */
static int parse_read(struct prof_reader *r, struct buf *b, uint64_t rf, struct prof_read *out)
{
	int err;
	unsigned stride = 8 * (1 + !!(rf & PROF_FORMAT_ID) + !!(rf & PROF_FORMAT_LOST));
	out->read_format = rf;
	out->stride = stride;
	if (rf & PROF_FORMAT_GROUP) {
		if ((err = buf_u64(b, &out->nr)))
			return err;
	} else {
		uint64_t v;
		if ((err = buf_u64(b, &v)))
			return err;
		memcpy(r->read_one, b->p - 8, 8);
		out->nr = 1;
	}
	if ((rf & PROF_FORMAT_TOTAL_TIME_ENABLED) && (err = buf_u64(b, &out->time_enabled)))
		return err;
	if ((rf & PROF_FORMAT_TOTAL_TIME_RUNNING) && (err = buf_u64(b, &out->time_running)))
		return err;
	if (rf & PROF_FORMAT_GROUP) {
		if (out->nr > buf_left(b) / stride)
			return BK_CORRUPT;
		out->entries = b->p;
		b->p += out->nr * stride;
		return 0;
	}
	if (buf_left(b) < stride - 8)
		return BK_CORRUPT;
	memcpy(r->read_one + 8, b->p, stride - 8);
	b->p += stride - 8;
	out->entries = r->read_one;
	return 0;
}

/* Bytes of a field whose u64 SIZE (or u32, RAW) precedes them. */
static int sized_bytes(struct buf *b, uint64_t size, const uint8_t **out)
{
	if (size > buf_left(b))
		return BK_CORRUPT;
	*out = b->p;
	b->p += size;
	return 0;
}

static int parse_sample(struct prof_reader *r, const struct prof_attr_int *ai, struct buf *b,
			struct prof_record *rec)
{
	const struct prof_attr *a = &ai->pub;
	uint64_t t = a->sample_type, v;
	struct prof_sample *s = &rec->sample;
	int err = 0;
	uint32_t u32;

#define U64(field) \
	do { if ((err = buf_u64(b, &(field)))) return err; } while (0)
	if (t & PROF_SAMPLE_IDENTIFIER)
		U64(rec->id);
	if (t & PROF_SAMPLE_IP)
		U64(s->ip);
	if (t & PROF_SAMPLE_TID) {
		U64(v);
		rec->pid = (int32_t)(uint32_t)v;
		rec->tid = (int32_t)(uint32_t)(v >> 32);
	}
	if (t & PROF_SAMPLE_TIME)
		U64(rec->time);
	if (t & PROF_SAMPLE_ADDR)
		U64(s->addr);
	if (t & PROF_SAMPLE_ID)
		U64(rec->id);
	if (t & PROF_SAMPLE_STREAM_ID)
		U64(rec->stream_id);
	if (t & PROF_SAMPLE_CPU) {
		U64(v);
		rec->cpu = (uint32_t)v;
	}
	if (t & PROF_SAMPLE_PERIOD)
		U64(s->period);
	else if (!a->freq)
		s->period = a->sample_period; /* a fixed period is not sampled */
	if ((t & PROF_SAMPLE_READ) && (err = parse_read(r, b, a->read_format, &s->read)))
		return err;
	if (t & PROF_SAMPLE_CALLCHAIN) {
		U64(s->callchain_nr);
		if (s->callchain_nr > buf_left(b) / 8)
			return BK_CORRUPT;
		for (uint64_t i = 0; i < s->callchain_nr; i++)
			r->callchain[i] = base_rd_le(b->p + 8 * i, 8);
		b->p += 8 * s->callchain_nr;
		s->callchain = r->callchain;
	}
	if (t & PROF_SAMPLE_RAW) {
		if ((err = buf_u32(b, &u32)) || (err = sized_bytes(b, u32, &s->raw)))
			return err;
		s->raw_size = u32;
	}
	if (t & PROF_SAMPLE_BRANCH_STACK) {
		U64(s->branch_nr);
		if (a->branch_sample_type & PROF_BRANCH_HW_INDEX) {
			s->branch_has_hw_idx = true;
			U64(s->branch_hw_idx);
		}
		if (s->branch_nr > buf_left(b) / 24)
			return BK_CORRUPT;
		s->branch_entries = b->p;
		b->p += 24 * s->branch_nr;
	}
	if (t & PROF_SAMPLE_REGS_USER) {
		if ((err = parse_regs(b, a->sample_regs_user, r->regs_user, &s->regs_user)))
			return err;
		map_regs(r, regs_arch(r, ai), &s->regs_user);
	}
	if (t & PROF_SAMPLE_STACK_USER) {
		/* A size of 0 (nothing could be copied) has no data and no dyn_size. */
		U64(s->stack_size);
		if (s->stack_size) {
			if ((err = sized_bytes(b, s->stack_size, &s->stack)))
				return err;
			U64(s->stack_dyn_size);
			if (s->stack_dyn_size > s->stack_size)
				return BK_CORRUPT;
		}
	}
	if (t & (PROF_SAMPLE_WEIGHT | PROF_SAMPLE_WEIGHT_STRUCT))
		U64(s->weight);
	if (t & PROF_SAMPLE_DATA_SRC)
		U64(s->data_src);
	if (t & PROF_SAMPLE_TRANSACTION)
		U64(s->transaction);
	if ((t & PROF_SAMPLE_REGS_INTR) &&
	    (err = parse_regs(b, a->sample_regs_intr, r->regs_intr, &s->regs_intr)))
		return err;
	if (t & PROF_SAMPLE_PHYS_ADDR)
		U64(s->phys_addr);
	if (t & PROF_SAMPLE_CGROUP)
		U64(s->cgroup);
	if (t & PROF_SAMPLE_DATA_PAGE_SIZE)
		U64(s->data_page_size);
	if (t & PROF_SAMPLE_CODE_PAGE_SIZE)
		U64(s->code_page_size);
	if (t & PROF_SAMPLE_AUX) {
		U64(s->aux_size);
		if ((err = sized_bytes(b, s->aux_size, &s->aux)))
			return err;
	}
#undef U64
	if (buf_left(b))
		return BK_CORRUPT; /* bytes no field of sample_type accounts for */
	rec->have = t & (PROF_SAMPLE_TID | PROF_SAMPLE_TIME | PROF_SAMPLE_ID | PROF_SAMPLE_STREAM_ID |
			 PROF_SAMPLE_CPU | PROF_SAMPLE_IDENTIFIER);
	if (rec->have & PROF_SAMPLE_IDENTIFIER)
		rec->have = (rec->have & ~PROF_SAMPLE_IDENTIFIER) | PROF_SAMPLE_ID;
	return 1;
}

/* ---- Which event ------------------------------------------------------------- */

/* The event whose layout decodes a sample at P (LEN bytes): *IDX is its
 * index, or -1 when every event lays samples out alike but the id named
 * none (then the first event's layout is used). */
static int sample_attr(const struct prof_reader *r, const uint8_t *p, size_t len, int *idx)
{
	if (r->nattrs == 0)
		return BK_CORRUPT; /* a sample before any event was described */
	if (r->nattrs == 1) {
		*idx = 0;
		return 0;
	}
	if (r->sample_id_off >= 0) {
		if (len < 8 + (size_t)r->sample_id_off + 8)
			return BK_CORRUPT;
		*idx = prof_attr_by_id(r, base_rd_le(p + 8 + r->sample_id_off, 8));
		if (*idx >= 0 || r->same_layout)
			return 0;
		return BK_CORRUPT; /* an id no event has, and layouts differ */
	}
	*idx = -1;
	return r->same_layout ? 0 : BK_E_UNSUPPORTED; /* events that cannot be told apart */
}

/* The event whose sample_id trailer ends a kernel record, as sample_attr;
 * NULL when the record's trailer cannot be placed (then it is ignored). */
static const struct prof_attr_int *trailer_attr(const struct prof_reader *r, const uint8_t *p,
						size_t len, int *idx)
{
	*idx = -1;
	if (r->nattrs == 0)
		return NULL;
	if (r->nattrs == 1) {
		*idx = 0;
		return &r->attrs[0];
	}
	if (r->trailer_id_back > 0 && len >= 8 + (size_t)r->trailer_id_back) {
		*idx = prof_attr_by_id(r, base_rd_le(p + len - r->trailer_id_back, 8));
		if (*idx >= 0)
			return &r->attrs[*idx];
	}
	return r->same_layout ? &r->attrs[0] : NULL;
}

/* The sample_id trailer (perf_event.h, struct sample_id): TID, TIME, ID,
 * STREAM_ID, CPU, IDENTIFIER, as the event's sample_type has them. Sets
 * *BODY_END to where the record's own fields end. */
static int parse_trailer(const struct prof_attr_int *ai, const uint8_t *p, size_t len,
			 struct prof_record *rec, size_t *body_end)
{
	*body_end = len;
	if (!ai || !ai->pub.sample_id_all)
		return 0;
	uint64_t t = ai->pub.sample_type;
	uint64_t bits = t & (PROF_SAMPLE_TID | PROF_SAMPLE_TIME | PROF_SAMPLE_ID |
			     PROF_SAMPLE_STREAM_ID | PROF_SAMPLE_CPU | PROF_SAMPLE_IDENTIFIER);
	size_t tlen = 8 * (size_t)__builtin_popcountll(bits);
	if (len - 8 < tlen)
		return BK_CORRUPT;
	struct buf b = buf_make(p + len - tlen, tlen);
	uint64_t v = 0;
	if (t & PROF_SAMPLE_TID) {
		buf_u64(&b, &v);
		rec->pid = (int32_t)(uint32_t)v;
		rec->tid = (int32_t)(uint32_t)(v >> 32);
	}
	if (t & PROF_SAMPLE_TIME)
		buf_u64(&b, &rec->time);
	if (t & PROF_SAMPLE_ID)
		buf_u64(&b, &rec->id);
	if (t & PROF_SAMPLE_STREAM_ID)
		buf_u64(&b, &rec->stream_id);
	if (t & PROF_SAMPLE_CPU) {
		buf_u64(&b, &v);
		rec->cpu = (uint32_t)v;
	}
	if (t & PROF_SAMPLE_IDENTIFIER)
		buf_u64(&b, &rec->id);
	rec->have = bits & ~PROF_SAMPLE_IDENTIFIER;
	if (bits & PROF_SAMPLE_IDENTIFIER)
		rec->have |= PROF_SAMPLE_ID;
	*body_end = len - tlen;
	return 0;
}

/* ---- Other records ------------------------------------------------------------- */

/* A NUL-terminated string filling the rest of B (padding after the NUL). */
static int rest_string(struct buf *b, const char **s)
{
	if (!memchr(b->p, 0, buf_left(b)))
		return BK_CORRUPT;
	*s = (const char *)b->p;
	b->p = b->end;
	return 0;
}

static int pid_tid(struct buf *b, struct prof_record *rec)
{
	uint32_t pid, tid;
	int err;
	if ((err = buf_u32(b, &pid)) || (err = buf_u32(b, &tid)))
		return err;
	rec->pid = (int32_t)pid;
	rec->tid = (int32_t)tid;
	rec->have |= PROF_SAMPLE_TID;
	return 0;
}

static int parse_mmap(struct buf *b, struct prof_record *rec)
{
	struct prof_mmap *m = &rec->mmap;
	int err;
	if ((err = pid_tid(b, rec)) || (err = buf_u64(b, &m->addr)) || (err = buf_u64(b, &m->len)) ||
	    (err = buf_u64(b, &m->pgoff)))
		return err;
	if (rec->type == PROF_RECORD_MMAP2) {
		m->mmap2 = true;
		if (buf_left(b) < 24 + 8)
			return BK_CORRUPT;
		if (rec->misc & PROF_MISC_MMAP_BUILD_ID) {
			/* u8 build_id_size, u8, u16, u8 build_id[20] */
			m->build_id_len = b->p[0];
			m->build_id = b->p + 4;
			if (m->build_id_len > 20)
				return BK_CORRUPT;
			b->p += 24;
		} else {
			uint32_t maj = 0, min = 0;
			buf_u32(b, &maj);
			buf_u32(b, &min);
			buf_u64(b, &m->ino);
			buf_u64(b, &m->ino_generation);
			m->maj = maj;
			m->min = min;
		}
		buf_u32(b, &m->prot);
		buf_u32(b, &m->flags);
	}
	return rest_string(b, &m->filename);
}

static int parse_task(struct buf *b, struct prof_record *rec)
{
	struct prof_task *k = &rec->task;
	uint32_t v[4];
	int err;
	for (unsigned i = 0; i < 4; i++)
		if ((err = buf_u32(b, &v[i])))
			return err;
	if ((err = buf_u64(b, &k->time)))
		return err;
	k->pid = (int32_t)v[0];
	k->ppid = (int32_t)v[1];
	k->tid = (int32_t)v[2];
	k->ptid = (int32_t)v[3];
	rec->pid = k->pid;
	rec->tid = k->tid;
	rec->have |= PROF_SAMPLE_TID;
	/* The body's time is when the task event was made; the record's is
	 * that of its sample_id, as for every other record (perf shows that). */
	if (!(rec->have & PROF_SAMPLE_TIME)) {
		rec->time = k->time;
		rec->have |= PROF_SAMPLE_TIME;
	}
	return 0;
}

int prof_parse_build_id(const uint8_t *p, size_t len, struct prof_build_id *out)
{
	/* header (8), pid (4), build_id[24] (byte 20 the size when the misc
	 * bit says so, else 20 bytes), filename to the end */
	if (len < 36 || len < base_rd_le(p + 6, 2))
		return BK_CORRUPT;
	len = (size_t)base_rd_le(p + 6, 2);
	memset(out, 0, sizeof(*out));
	out->misc = (uint16_t)base_rd_le(p + 4, 2);
	out->pid = (int32_t)base_rd_le(p + 8, 4);
	out->len = out->misc & PROF_MISC_BUILD_ID_SIZE ? p[12 + 20] : 20;
	if (out->len > 20)
		return BK_CORRUPT;
	memcpy(out->bytes, p + 12, out->len);
	struct buf b = buf_make(p + 36, len - 36);
	return rest_string(&b, &out->filename);
}

/* perf's records that carry header facts; 0 when consumed. */
static int user_record(struct prof_reader *r, const uint8_t *p, size_t len,
		       struct prof_record *rec)
{
	struct buf b = buf_make(p + 8, len - 8);
	uint64_t v, w;
	uint32_t u32;
	int err;
	switch (rec->type) {
	case PROF_RECORD_HEADER_ATTR: {
		/* the attr (its own size long), then u64 ids to the end */
		if (len < 16)
			return BK_CORRUPT;
		uint32_t size = (uint32_t)base_rd_le(p + 12, 4);
		if (size > len - 8 || (len - 8 - size) % 8)
			return BK_CORRUPT;
		return prof_add_attr(r, p + 8, len - 8, p + 8 + size, (len - 8 - size) / 8);
	}
	case PROF_RECORD_HEADER_FEATURE:
		if ((err = buf_u64(&b, &v)))
			return err;
		return prof_feature(r, v, b.p, buf_left(&b));
	case PROF_RECORD_EVENT_UPDATE:
		/* u64 type, u64 id, then per type; 2 is the event's name */
		if ((err = buf_u64(&b, &v)) || (err = buf_u64(&b, &w)))
			return err;
		if (v == 2) {
			const uint8_t *nul = memchr(b.p, 0, buf_left(&b));
			if (!nul)
				return BK_CORRUPT;
			return prof_set_name(r, w, (const char *)b.p, (size_t)(nul - b.p));
		}
		return 0;
	case PROF_RECORD_HEADER_TRACING_DATA:
		/* u32 size: that many bytes follow the record */
		if ((err = buf_u32(&b, &u32)))
			return err;
		prof_skip_after(r, u32);
		return 0;
	case PROF_RECORD_AUXTRACE:
		/* u64 size: that many bytes of trace follow the record */
		if ((err = buf_u64(&b, &v)))
			return err;
		prof_skip_after(r, v);
		break;
	case PROF_RECORD_HEADER_BUILD_ID:
		if ((err = prof_parse_build_id(p, len, &rec->build_id)))
			return err;
		rec->kind = PROF_BUILD_ID; /* its pid is build_id.pid; no tid */
		return 1;
	case PROF_RECORD_FINISHED_ROUND:
		rec->kind = PROF_FINISHED_ROUND;
		return 1;
	case PROF_RECORD_COMPRESSED:
	case PROF_RECORD_COMPRESSED2:
		return BK_E_UNSUPPORTED; /* perf record -z: zstd frames */
	default:
		break;
	}
	rec->kind = PROF_OTHER;
	r->stats.other++;
	return 1;
}

int prof_decode(struct prof_reader *r, const uint8_t *p, size_t len, struct prof_record *rec)
{
	int err, idx;
	if (rec->type >= PROF_RECORD_USER_TYPE_START)
		return user_record(r, p, len, rec);

	if (rec->type == PROF_RECORD_SAMPLE) {
		if ((err = sample_attr(r, p, len, &idx)))
			return err;
		rec->kind = PROF_SAMPLE;
		rec->attr = idx;
		struct buf b = buf_make(p + 8, len - 8);
		return parse_sample(r, &r->attrs[idx < 0 ? 0 : idx], &b, rec);
	}

	const struct prof_attr_int *ai = trailer_attr(r, p, len, &idx);
	size_t body_end;
	if ((err = parse_trailer(ai, p, len, rec, &body_end)))
		return err;
	rec->attr = idx;
	struct buf b = buf_make(p + 8, body_end - 8);
	switch (rec->type) {
	case PROF_RECORD_MMAP:
	case PROF_RECORD_MMAP2:
		rec->kind = PROF_MMAP;
		err = parse_mmap(&b, rec);
		break;
	case PROF_RECORD_COMM:
		rec->kind = PROF_COMM;
		rec->comm.exec = rec->misc & PROF_MISC_COMM_EXEC;
		if (!(err = pid_tid(&b, rec)))
			err = rest_string(&b, &rec->comm.comm);
		break;
	case PROF_RECORD_FORK:
	case PROF_RECORD_EXIT:
		rec->kind = rec->type == PROF_RECORD_FORK ? PROF_FORK : PROF_EXIT;
		err = parse_task(&b, rec);
		break;
	case PROF_RECORD_LOST:
		rec->kind = PROF_LOST;
		if (!(err = buf_u64(&b, &rec->lost.id)))
			err = buf_u64(&b, &rec->lost.lost);
		break;
	case PROF_RECORD_LOST_SAMPLES:
		rec->kind = PROF_LOST;
		err = buf_u64(&b, &rec->lost.lost);
		break;
	default:
		rec->kind = PROF_OTHER;
		r->stats.other++;
		break;
	}
	return err ? err : 1;
}
