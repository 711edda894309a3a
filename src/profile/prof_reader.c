/* The perf.data reader: opening (file header, attrs and their ids, feature
 * sections; or a pipe-mode stream's leading header records), the window
 * records are read through, and prof_next. Record bodies are decoded in
 * prof_decode.c.
 *
 * Invariant: the unread bytes of the source are [wp, wend) at source offset
 * woff, and wend - wp never exceeds win_cap (PROF_WINDOW_LEN; a whole
 * memory image in memory mode, which is not copied). A record is handed out
 * only when all its bytes are in the window, so the pointers in a decoded
 * record stay good until the next call, which is the only one that moves
 * or refills the window. Every section offset and length read from the
 * file is checked against the file's size before it is used, and every
 * allocation is bounded (PROF_MAX_*), so bad bytes cost an error, never a
 * read outside the input or an allocation the input merely asked for.
 *
 * Trusts its caller for: a valid fd or memory that outlives the reader, and
 * one thread per reader.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "profile/prof.h"

static const char magic2[8] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2' };
static const char magic2_swapped[8] = { '2', 'E', 'L', 'I', 'F', 'R', 'E', 'P' };
static const char magic1[8] = { 'P', 'E', 'R', 'F', 'F', 'I', 'L', 'E' };

#define PIPE_HEADER_LEN 16
#define FILE_HEADER_OLD_LEN 72 /* before the feature bitmap */
#define FILE_HEADER_LEN 104

/* ---- Source: memory, pread, or read ---------------------------------------- */

/* LEN bytes at offset OFF of a memory or seekable source into DST. */
static int src_pread(struct prof_reader *r, uint64_t off, void *dst, size_t len)
{
	if (off > r->src_len || len > r->src_len - off)
		return BK_CORRUPT;
	if (r->fd < 0) {
		memcpy(dst, r->mem + off, len);
		return 0;
	}
	uint8_t *d = dst;
	while (len) {
		ssize_t n = pread(r->fd, d, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return BK_E_IO;
		}
		if (n == 0) /* the file shrank since it was opened */
			return BK_E_IO;
		d += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Make NEED (<= win_cap) bytes available at wp if the source still has
 * them; *AVAIL says how many there are (fewer only at the end). */
static int win_fill(struct prof_reader *r, size_t need, size_t *avail)
{
	size_t have = (size_t)(r->wend - r->wp);
	if (have >= need || !r->win) {
		*avail = have;
		return 0;
	}
	if (r->wp != r->win) {
		memmove(r->win, r->wp, have);
		r->wp = r->win;
		r->wend = r->win + have;
	}
	while (have < need) {
		size_t room = r->win_cap - have;
		ssize_t n;
		if (r->seekable) {
			uint64_t at = r->woff + have;
			if (at >= r->limit)
				break;
			if (room > r->limit - at)
				room = (size_t)(r->limit - at);
			n = pread(r->fd, r->win + have, room, (off_t)at);
			if (n == 0)
				return BK_E_IO; /* shrank */
		} else {
			if (r->eof)
				break;
			if (r->max_read && room > r->max_read)
				room = r->max_read;
			n = read(r->fd, r->win + have, room);
			if (n == 0) {
				r->eof = true;
				break;
			}
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return BK_E_IO;
		}
		have += (size_t)n;
		r->wend = r->win + have;
	}
	*avail = have;
	return 0;
}

/* Drop N bytes: the payload that follows an AUXTRACE or TRACING_DATA record. */
static int win_skip(struct prof_reader *r, uint64_t n)
{
	size_t have = (size_t)(r->wend - r->wp);
	r->stats.payload_bytes += n;
	if (n <= have) {
		r->wp += n;
		r->woff += n;
		return 0;
	}
	if (!r->win) /* memory: the window holds everything up to the limit */
		return BK_CORRUPT;
	n -= have;
	r->woff += have;
	r->wp = r->wend = r->win;
	if (r->seekable) {
		if (n > r->limit - r->woff)
			return BK_CORRUPT;
		r->woff += n;
		return 0;
	}
	while (n) {
		size_t want = n < r->win_cap ? (size_t)n : r->win_cap;
		if (r->max_read && want > r->max_read)
			want = r->max_read;
		ssize_t got = read(r->fd, r->win, want);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return BK_E_IO;
		}
		if (got == 0) {
			r->eof = true;
			return BK_CORRUPT; /* the payload is cut */
		}
		n -= (uint64_t)got;
		r->woff += (uint64_t)got;
	}
	return 0;
}

void prof_skip_after(struct prof_reader *r, uint64_t len)
{
	r->skip = len;
}

/* ---- Header facts ------------------------------------------------------------ */

static int cmp_id(const void *a, const void *b)
{
	const struct prof_id *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->attr < y->attr ? -1 : x->attr > y->attr;
}

int prof_attr_by_id(const struct prof_reader *r, uint64_t id)
{
	size_t i = BASE_COUNT_LT(r->ids, r->nids, id, id);
	if (i < r->nids && r->ids[i].id == id)
		return (int)r->ids[i].attr;
	return -1;
}

/* Little-endian field of LEN bytes at OFF of an attr of SIZE bytes: 0 when
 * the attr is too old to have it. */
static uint64_t attr_field(const uint8_t *a, uint32_t size, unsigned off, unsigned len)
{
	return off + len <= size ? base_rd_le(a + off, len) : 0;
}

/* The machine a user-register mask belongs to, when only one has it: the
 * AArch64 PC (bit 32) or any of x24-x31 (bits 24-31, none on x86-64);
 * an x86-64 mask lies in bits 0-23 and holds IP (bit 8). */
static enum bk_arch guess_arch(uint64_t mask)
{
	if (!mask)
		return BK_ARCH_UNKNOWN;
	if ((mask & ((1ull << 32) | 0xff000000ull)) && !(mask >> 34 & ~(1ull << 12)))
		return BK_ARCH_AARCH64;
	if (!(mask >> 24) && (mask & (1ull << 8)))
		return BK_ARCH_X86_64;
	return BK_ARCH_UNKNOWN;
}

/* Where a record says which event it is: the byte offset of the id from
 * the start of a sample's fields, or from the end of a kernel record's
 * sample_id trailer; -1 when it carries none. */
static int sample_id_off(uint64_t t)
{
	if (t & PROF_SAMPLE_IDENTIFIER)
		return 0;
	if (!(t & PROF_SAMPLE_ID))
		return -1;
	return 8 * (!!(t & PROF_SAMPLE_IP) + !!(t & PROF_SAMPLE_TID) + !!(t & PROF_SAMPLE_TIME) +
		    !!(t & PROF_SAMPLE_ADDR));
}

static int trailer_id_back(const struct prof_attr *a)
{
	uint64_t t = a->sample_type;
	if (!a->sample_id_all)
		return -1;
	if (t & PROF_SAMPLE_IDENTIFIER)
		return 8;
	if (!(t & PROF_SAMPLE_ID))
		return -1;
	return 8 * (1 + !!(t & PROF_SAMPLE_STREAM_ID) + !!(t & PROF_SAMPLE_CPU));
}

static bool same_layout(const struct prof_attr *a, const struct prof_attr *b)
{
	return a->sample_type == b->sample_type && a->read_format == b->read_format &&
	       (a->branch_sample_type & PROF_BRANCH_HW_INDEX) ==
		       (b->branch_sample_type & PROF_BRANCH_HW_INDEX) &&
	       a->sample_regs_user == b->sample_regs_user &&
	       a->sample_regs_intr == b->sample_regs_intr && a->sample_id_all == b->sample_id_all;
}

/* One perf_event_attr of at most AVAIL bytes at A (its own size field says
 * how many are its), with its NIDS sample ids (little-endian u64s at IDS). */
int prof_add_attr(struct prof_reader *r, const uint8_t *a, size_t avail, const uint8_t *ids,
		  size_t nids)
{
	if (avail < 8)
		return BK_CORRUPT;
	uint32_t size = (uint32_t)base_rd_le(a + 4, 4);
	/* 0 would mean PERF_ATTR_SIZE_VER0 to the kernel, but perf always
	 * writes the size: a zero here is damage. Below VER0 (64) the fields
	 * every reader needs are missing. */
	if (size < 64 || size > avail)
		return BK_CORRUPT;
	if (r->nattrs >= PROF_MAX_ATTRS || nids > PROF_MAX_IDS - r->nids)
		return BK_E_LIMIT;

	struct prof_attr p = { 0 };
	p.type = (uint32_t)base_rd_le(a, 4);
	p.size = size;
	p.config = attr_field(a, size, 8, 8);
	p.sample_period = attr_field(a, size, 16, 8);
	p.sample_type = attr_field(a, size, 24, 8);
	p.read_format = attr_field(a, size, 32, 8);
	p.flags = attr_field(a, size, 40, 8);
	p.freq = p.flags >> 10 & 1;
	p.sample_id_all = p.flags >> 18 & 1;
	p.branch_sample_type = attr_field(a, size, 72, 8);
	p.sample_regs_user = attr_field(a, size, 80, 8);
	p.sample_stack_user = (uint32_t)attr_field(a, size, 88, 4);
	p.clockid = p.flags >> 25 & 1 ? (int32_t)attr_field(a, size, 92, 4) : -1; /* use_clockid */
	p.sample_regs_intr = attr_field(a, size, 96, 8);
	/* Fields this reader cannot place make every later sample unreadable. */
	if ((p.sample_type & ~PROF_SAMPLE_KNOWN) || (p.read_format & ~PROF_FORMAT_KNOWN))
		return BK_E_UNSUPPORTED;

	struct prof_attr_int *na = base_realloc(r->attrs, (r->nattrs + 1) * sizeof(*na));
	if (!na)
		return BK_E_NOMEM;
	r->attrs = na;
	struct prof_id *nid = r->ids;
	uint64_t *own = NULL;
	if (nids) {
		nid = base_realloc(r->ids, (r->nids + nids) * sizeof(*nid));
		if (!nid)
			return BK_E_NOMEM;
		r->ids = nid;
		own = base_alloc(nids * sizeof(*own));
		if (!own)
			return BK_E_NOMEM;
	}
	for (size_t i = 0; i < nids; i++) {
		own[i] = base_rd_le(ids + 8 * i, 8);
		nid[r->nids + i] = (struct prof_id){ own[i], (uint32_t)r->nattrs };
	}
	r->nids += nids;
	if (nids)
		qsort(r->ids, r->nids, sizeof(*r->ids), cmp_id);

	struct prof_attr_int *ai = &r->attrs[r->nattrs];
	memset(ai, 0, sizeof(*ai));
	ai->pub = p;
	ai->ids = own;
	ai->pub.ids = own;
	ai->pub.nids = nids;
	ai->regs_arch = guess_arch(p.sample_regs_user);

	/* How records of several events are told apart (prof_decode.c). */
	if (r->nattrs == 0) {
		r->same_layout = true;
		r->sample_id_off = sample_id_off(p.sample_type);
		r->trailer_id_back = trailer_id_back(&p);
	} else {
		const struct prof_attr *first = &r->attrs[0].pub;
		r->same_layout = r->same_layout && same_layout(first, &p);
		if (sample_id_off(p.sample_type) != r->sample_id_off)
			r->sample_id_off = -1;
		if (trailer_id_back(&p) != r->trailer_id_back)
			r->trailer_id_back = -1;
	}
	r->nattrs++;
	return 0;
}

int prof_set_name(struct prof_reader *r, uint64_t id, const char *name, size_t len)
{
	int i = prof_attr_by_id(r, id);
	if (i < 0 && r->nattrs == 1)
		i = 0;
	if (i < 0 || r->attrs[i].name)
		return 0;
	char *s = base_alloc(len + 1);
	if (!s)
		return BK_E_NOMEM;
	memcpy(s, name, len);
	s[len] = 0;
	r->attrs[i].name = s;
	r->attrs[i].pub.name = s;
	return 0;
}

/* A perf_header_string: u32 len, then len bytes holding a NUL. */
static int read_string(struct buf *b, const char **s, size_t *len)
{
	uint32_t n;
	int err = buf_u32(b, &n);
	if (err)
		return err;
	if (n > buf_left(b))
		return BK_CORRUPT;
	const uint8_t *nul = memchr(b->p, 0, n);
	if (!nul)
		return BK_CORRUPT;
	*s = (const char *)b->p;
	*len = (size_t)(nul - b->p);
	b->p += n;
	return 0;
}

static int feat_arch(struct prof_reader *r, struct buf *b)
{
	const char *s;
	size_t len;
	int err = read_string(b, &s, &len);
	if (err)
		return err;
	char *name = base_alloc(len + 1);
	if (!name)
		return BK_E_NOMEM;
	memcpy(name, s, len);
	name[len] = 0;
	base_free(r->arch_name);
	r->arch_name = name;
	if (!strcmp(name, "x86_64"))
		r->arch = BK_ARCH_X86_64;
	else if (!strcmp(name, "aarch64") || !strcmp(name, "arm64"))
		r->arch = BK_ARCH_AARCH64;
	else
		r->arch = BK_ARCH_UNKNOWN;
	return 0;
}

/* HEADER_EVENT_DESC: u32 nr, u32 attr_size, then per event the attr,
 * u32 nr_ids, the name (perf_header_string) and the ids. */
static int feat_event_desc(struct prof_reader *r, struct buf *b)
{
	uint32_t nr, attr_size;
	int err;
	if ((err = buf_u32(b, &nr)) || (err = buf_u32(b, &attr_size)))
		return err;
	if (nr && attr_size == 0)
		return BK_CORRUPT;
	for (uint32_t i = 0; i < nr; i++) {
		uint32_t nr_ids;
		const char *name;
		size_t len;
		if ((err = buf_skip(b, attr_size)) || (err = buf_u32(b, &nr_ids)) ||
		    (err = read_string(b, &name, &len)))
			return err;
		if (nr_ids > buf_left(b) / 8)
			return BK_CORRUPT;
		const uint8_t *ids = b->p;
		b->p += 8 * (size_t)nr_ids;
		int idx = nr_ids ? prof_attr_by_id(r, base_rd_le(ids, 8)) : -1;
		if (idx < 0 && nr == r->nattrs)
			idx = (int)i; /* no ids: the same order as the attrs */
		if (idx >= 0 && !r->attrs[idx].name) {
			char *s = base_alloc(len + 1);
			if (!s)
				return BK_E_NOMEM;
			memcpy(s, name, len);
			s[len] = 0;
			r->attrs[idx].name = s;
			r->attrs[idx].pub.name = s;
		}
	}
	return 0;
}

static int feat_build_ids(struct prof_reader *r, struct buf *b)
{
	while (buf_left(b)) {
		if (buf_left(b) < 8)
			return BK_CORRUPT;
		size_t size = (size_t)base_rd_le(b->p + 6, 2);
		if (size > buf_left(b))
			return BK_CORRUPT;
		struct prof_build_id bid;
		int err = prof_parse_build_id(b->p, size, &bid);
		if (err)
			return err;
		b->p += size;
		if (r->nbuild_ids >= PROF_MAX_BUILD_IDS)
			return BK_E_LIMIT;
		if (r->nbuild_ids == r->cap_build_ids) {
			size_t cap = r->cap_build_ids ? 2 * r->cap_build_ids : 16;
			struct prof_build_id *n = base_realloc(r->build_ids, cap * sizeof(*n));
			if (!n)
				return BK_E_NOMEM;
			r->build_ids = n;
			r->cap_build_ids = cap;
		}
		char *fn = base_strdup(bid.filename);
		if (!fn)
			return BK_E_NOMEM;
		bid.filename = fn;
		r->build_ids[r->nbuild_ids++] = bid;
	}
	return 0;
}

int prof_feature(struct prof_reader *r, uint64_t feat, const uint8_t *p, size_t len)
{
	struct buf b = buf_make(p, len);
	switch (feat) {
	case PROF_FEAT_ARCH:
		return feat_arch(r, &b);
	case PROF_FEAT_EVENT_DESC:
		return feat_event_desc(r, &b);
	case PROF_FEAT_BUILD_ID:
		return feat_build_ids(r, &b);
	default:
		return 0; /* hostname, topology, ...: not needed to read samples */
	}
}

/* ---- Opening ----------------------------------------------------------------- */

/* A copy of LEN bytes at OFF (bounded by LIMIT: BK_E_LIMIT above it). */
static int read_section(struct prof_reader *r, uint64_t off, uint64_t len, uint64_t limit,
			uint8_t **out)
{
	if (off > r->src_len || len > r->src_len - off)
		return BK_CORRUPT;
	if (len > limit)
		return BK_E_LIMIT;
	uint8_t *p = base_alloc(len ? (size_t)len : 1);
	if (!p)
		return BK_E_NOMEM;
	int err = src_pread(r, off, p, (size_t)len);
	if (err) {
		base_free(p);
		return err;
	}
	*out = p;
	return 0;
}

/* The attrs section: attrs.size / attr_size entries, each the attr (its
 * own size field long: perf reads it so, whatever the header's attr_size)
 * followed by a perf_file_section of its ids. */
static int read_attrs(struct prof_reader *r, uint64_t attr_size, uint64_t off, uint64_t len)
{
	if (!len)
		return 0;
	if (attr_size < 16 + 64 || len % attr_size)
		return BK_CORRUPT;
	if (len / attr_size > PROF_MAX_ATTRS)
		return BK_E_LIMIT;
	uint8_t *sec;
	int err = read_section(r, off, len, PROF_MAX_FEATURE_LEN, &sec);
	if (err)
		return err;
	struct buf b = buf_make(sec, (size_t)len);
	uint64_t n = len / attr_size;
	for (uint64_t i = 0; i < n && !err; i++) {
		if (buf_left(&b) < 8) {
			err = BK_CORRUPT;
			break;
		}
		uint32_t size = (uint32_t)base_rd_le(b.p + 4, 4);
		if (size < 64 || size > buf_left(&b) || buf_left(&b) - size < 16) {
			err = BK_CORRUPT;
			break;
		}
		const uint8_t *attr = b.p;
		uint64_t ids_off = base_rd_le(b.p + size, 8);
		uint64_t ids_len = base_rd_le(b.p + size + 8, 8);
		b.p += size + 16;
		if (ids_len % 8) {
			err = BK_CORRUPT;
			break;
		}
		if (ids_len / 8 > PROF_MAX_IDS - r->nids) {
			err = BK_E_LIMIT;
			break;
		}
		uint8_t *ids;
		err = read_section(r, ids_off, ids_len, (uint64_t)PROF_MAX_IDS * 8, &ids);
		if (!err) {
			err = prof_add_attr(r, attr, size, ids, (size_t)(ids_len / 8));
			base_free(ids);
		}
	}
	base_free(sec);
	return err;
}

/* The feature sections: one perf_file_section per bit set in the header's
 * bitmap, in bit order, right after the data section. */
static int read_features(struct prof_reader *r, const uint64_t flags[4], uint64_t table_off)
{
	unsigned nsec = 0;
	for (unsigned i = 0; i < 4; i++)
		nsec += (unsigned)__builtin_popcountll(flags[i]);
	if (!nsec)
		return 0;
	uint8_t *table;
	int err = read_section(r, table_off, 16ull * nsec, 16ull * 256, &table);
	if (err)
		return err;
	unsigned k = 0;
	for (unsigned bit = 0; bit < 256 && !err; bit++) {
		if (!(flags[bit / 64] >> (bit % 64) & 1))
			continue;
		uint64_t off = base_rd_le(table + 16 * k, 8), len = base_rd_le(table + 16 * k + 8, 8);
		k++;
		if (off > r->src_len || len > r->src_len - off) {
			err = BK_CORRUPT;
			break;
		}
		if (bit != PROF_FEAT_ARCH && bit != PROF_FEAT_EVENT_DESC && bit != PROF_FEAT_BUILD_ID)
			continue;
		uint8_t *sec;
		err = read_section(r, off, len, PROF_MAX_FEATURE_LEN, &sec);
		if (!err) {
			err = prof_feature(r, bit, sec, (size_t)len);
			base_free(sec);
		}
	}
	base_free(table);
	return err;
}

static int open_file_mode(struct prof_reader *r, uint64_t hsize)
{
	uint8_t h[FILE_HEADER_LEN] = { 0 };
	int err = src_pread(r, 0, h, hsize >= FILE_HEADER_LEN ? FILE_HEADER_LEN : FILE_HEADER_OLD_LEN);
	if (err)
		return err == BK_E_IO ? err : BK_CORRUPT;
	uint64_t attr_size = base_rd_le(h + 16, 8);
	uint64_t attrs_off = base_rd_le(h + 24, 8), attrs_len = base_rd_le(h + 32, 8);
	uint64_t data_off = base_rd_le(h + 40, 8), data_len = base_rd_le(h + 48, 8);
	uint64_t flags[4];
	for (unsigned i = 0; i < 4; i++)
		flags[i] = base_rd_le(h + 72 + 8 * i, 8);
	if (data_off > r->src_len || data_len > r->src_len - data_off)
		return BK_CORRUPT;
	if ((err = read_attrs(r, attr_size, attrs_off, attrs_len)) ||
	    (err = read_features(r, flags, data_off + data_len)))
		return err;
	r->woff = data_off;
	r->limit = data_off + data_len;
	if (!r->win) {
		r->wp = r->mem + data_off;
		r->wend = r->mem + r->limit;
	}
	return 0;
}

static bool header_record(uint32_t type)
{
	return type == PROF_RECORD_HEADER_ATTR || type == PROF_RECORD_HEADER_FEATURE ||
	       type == PROF_RECORD_HEADER_TRACING_DATA || type == PROF_RECORD_EVENT_UPDATE;
}

/* One record: 1 (REC filled), 0 (consumed, or the end: *END), or an error.
 * With HEADER_ONLY, a record that carries no header facts is left unread. */
static int next_record(struct prof_reader *r, struct prof_record *rec, bool header_only,
		       bool *end)
{
	size_t avail;
	int err;
	*end = false;
	if (r->skip) {
		uint64_t n = r->skip;
		r->skip = 0;
		if ((err = win_skip(r, n)))
			return err;
	}
	if ((err = win_fill(r, 8, &avail)))
		return err;
	if (avail == 0) {
		*end = true;
		return 0;
	}
	if (avail < 8)
		return BK_CORRUPT; /* a record header cut short */
	uint32_t type = (uint32_t)base_rd_le(r->wp, 4);
	uint16_t misc = (uint16_t)base_rd_le(r->wp + 4, 2);
	uint16_t size = (uint16_t)base_rd_le(r->wp + 6, 2);
	if (header_only && !header_record(type)) {
		*end = true;
		return 0;
	}
	if (size < 8)
		return BK_CORRUPT;
	if ((err = win_fill(r, size, &avail)))
		return err;
	if (avail < size)
		return BK_CORRUPT; /* runs past the data */
	const uint8_t *p = r->wp;
	memset(rec, 0, sizeof(*rec));
	rec->type = type;
	rec->misc = misc;
	rec->size = size;
	rec->offset = r->woff;
	rec->raw = p;
	rec->attr = -1;
	r->wp += size;
	r->woff += size;
	r->stats.records++;
	r->stats.by_type[type < 127 ? type : 127]++;
	return prof_decode(r, p, size, rec);
}

/* Pipe mode: read the header records perf writes ahead of the data. */
static int read_pipe_header(struct prof_reader *r)
{
	struct prof_record rec;
	for (;;) {
		bool end;
		int err = next_record(r, &rec, true, &end);
		if (err < 0)
			return err;
		if (end)
			return 0;
	}
}

int prof_reader_new(struct prof_reader **out)
{
	struct prof_reader *r = base_calloc(1, sizeof(*r));
	if (!r)
		return BK_E_NOMEM;
	r->fd = -1;
	r->sample_id_off = -1;
	r->trailer_id_back = -1;
	*out = r;
	return 0;
}

/* After the source is set up: the header, and what it leads to. */
static int reader_start(struct prof_reader *r)
{
	uint8_t h[PIPE_HEADER_LEN];
	int err;
	if (r->fd >= 0 && !r->seekable) {
		size_t avail;
		if ((err = win_fill(r, PIPE_HEADER_LEN, &avail)))
			return err;
		if (avail < PIPE_HEADER_LEN)
			return BK_CORRUPT;
		memcpy(h, r->wp, PIPE_HEADER_LEN);
	} else if ((err = src_pread(r, 0, h, PIPE_HEADER_LEN))) {
		return err == BK_E_IO ? err : BK_CORRUPT;
	}
	if (!memcmp(h, magic2_swapped, 8) || !memcmp(h, magic1, 8))
		return BK_E_UNSUPPORTED; /* big-endian, or perf's version-1 format */
	if (memcmp(h, magic2, 8))
		return BK_CORRUPT; /* not perf.data */
	uint64_t hsize = base_rd_le(h + 8, 8);
	if (hsize == PIPE_HEADER_LEN) {
		r->pipe = true;
		r->woff = PIPE_HEADER_LEN;
		r->limit = r->fd >= 0 && !r->seekable ? UINT64_MAX : r->src_len;
		if (r->win) {
			if (!r->seekable)
				r->wp += PIPE_HEADER_LEN;
		} else {
			r->wp = r->mem + PIPE_HEADER_LEN;
			r->wend = r->mem + r->src_len;
		}
		return read_pipe_header(r);
	}
	if (hsize != FILE_HEADER_OLD_LEN && hsize < FILE_HEADER_LEN)
		return BK_CORRUPT;
	if (r->fd >= 0 && !r->seekable)
		return BK_E_UNSUPPORTED; /* a file-mode perf.data on a stream */
	return open_file_mode(r, hsize);
}

static int finish_open(struct prof_reader *r, struct prof_reader **out)
{
	int err = reader_start(r);
	if (err) {
		prof_close(r);
		return err;
	}
	*out = r;
	return 0;
}

int prof_open_fd_opts(int fd, bool seekable, size_t max_read, struct prof_reader **out)
{
	if (!out || fd < 0)
		return BK_E_INVAL;
	*out = NULL;
	struct prof_reader *r;
	int err = prof_reader_new(&r);
	if (err)
		return err;
	r->fd = fd;
	r->seekable = seekable;
	r->max_read = max_read;
	if (seekable) {
		struct stat st;
		if (fstat(fd, &st) != 0) {
			prof_close(r);
			return BK_E_IO;
		}
		r->src_len = (uint64_t)st.st_size;
	}
	r->win_cap = PROF_WINDOW_LEN;
	r->win = base_alloc(r->win_cap);
	if (!r->win) {
		prof_close(r);
		return BK_E_NOMEM;
	}
	r->wp = r->wend = r->win;
	return finish_open(r, out);
}

int prof_open_fd(int fd, struct prof_reader **out)
{
	return prof_open_fd_opts(fd, false, 0, out);
}

int prof_open_file(const char *path, struct prof_reader **out)
{
	if (!path || !out)
		return BK_E_INVAL;
	*out = NULL;
	/* A regular file only (a stream comes as a descriptor: prof_open_fd). */
	uint64_t size;
	int fd = base_open_regular(path, &size);
	if (fd < 0)
		return fd;
	int err = prof_open_fd_opts(fd, true, 0, out);
	if (err) {
		close(fd);
		return err;
	}
	(*out)->own_fd = true;
	return 0;
}

int prof_open_memory(const void *data, size_t len, struct prof_reader **out)
{
	if (!out || (!data && len))
		return BK_E_INVAL;
	*out = NULL;
	struct prof_reader *r;
	int err = prof_reader_new(&r);
	if (err)
		return err;
	static const uint8_t none;
	r->mem = data ? data : &none;
	r->src_len = len;
	r->seekable = true;
	r->wp = r->wend = r->mem;
	return finish_open(r, out);
}

void prof_close(struct prof_reader *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nattrs; i++) {
		base_free(r->attrs[i].name);
		base_free(r->attrs[i].ids);
	}
	base_free(r->attrs);
	base_free(r->ids);
	for (size_t i = 0; i < r->nbuild_ids; i++)
		base_free((char *)r->build_ids[i].filename);
	base_free(r->build_ids);
	base_free(r->arch_name);
	base_free(r->win);
	if (r->own_fd)
		close(r->fd);
	base_free(r);
}

/* ---- Reading ------------------------------------------------------------------ */

int prof_next(struct prof_reader *r, struct prof_record *rec)
{
	if (!r || !rec)
		return BK_E_INVAL;
	if (r->err)
		return r->err;
	if (r->done)
		return 0;
	for (;;) {
		bool end;
		int res = next_record(r, rec, false, &end);
		if (res < 0) {
			r->err = res;
			return res;
		}
		if (end) {
			r->done = true;
			return 0;
		}
		if (res > 0)
			return 1;
	}
}

/* ---- Facts -------------------------------------------------------------------- */

bool prof_is_pipe(const struct prof_reader *r)
{
	return r->pipe;
}

enum bk_arch prof_arch(const struct prof_reader *r)
{
	if (r->arch_name)
		return r->arch;
	for (size_t i = 0; i < r->nattrs; i++)
		if (r->attrs[i].regs_arch != BK_ARCH_UNKNOWN)
			return r->attrs[i].regs_arch;
	return BK_ARCH_UNKNOWN;
}

const char *prof_arch_name(const struct prof_reader *r)
{
	return r->arch_name;
}

size_t prof_attr_count(const struct prof_reader *r)
{
	return r->nattrs;
}

const struct prof_attr *prof_attr_at(const struct prof_reader *r, size_t i)
{
	return i < r->nattrs ? &r->attrs[i].pub : NULL;
}

size_t prof_build_id_count(const struct prof_reader *r)
{
	return r->nbuild_ids;
}

const struct prof_build_id *prof_build_id_at(const struct prof_reader *r, size_t i)
{
	return i < r->nbuild_ids ? &r->build_ids[i] : NULL;
}

const struct prof_stats *prof_stats(const struct prof_reader *r)
{
	return &r->stats;
}
