/* FDE lookup by PC.
 *
 * Three ways to find the FDE covering a PC, all allocation-free per lookup:
 *   - the binary-search table of .eh_frame_hdr (LSB 5.0 §10.6.2), used only
 *     after it passes validation at init: version 1, a fixed-size encoding,
 *     the eh_frame_ptr naming this very section, at least one entry, entries
 *     sorted by initial location and each framing an FDE of the section
 *     (cfi_table_init; cfi_table_init_hdr, for this process's own modules,
 *     checks the header at init and the entries as lookups visit them);
 *   - otherwise an index of (pc_begin, pc_end, offset) built once by walking
 *     the whole section, sorted by pc_begin. FDEs that fail to decode are
 *     counted and left out; a broken length field ends the walk there. The
 *     index lives in allocated memory (cfi_table_init) or in memory the
 *     caller provides (cfi_table_init_mem, AS-safe: a signal handler may
 *     build it into a fresh mmap);
 *   - or, while such an index is being built elsewhere, a walk of the
 *     section per lookup (cfi_table_init_scan), bounded by a number of
 *     entries, that picks exactly the FDE the index would.
 * Building, counting and scanning share one loop over the section
 * (next_fde: cfi_entry_at frames, cfi_decode_fde decodes), so the three
 * agree by construction.
 *
 * Overlapping FDEs are not resolved here: the entry with the greatest
 * pc_begin not above the PC (ties: the one later in the section) is the one
 * consulted (`backstep check` reports overlaps).
 */
#include "cfi.h"

#include "../base/dwarf.h"

/* Entry I of the header's table: its initial location and FDE address. */
static int hdr_entry(const struct cfi_table *t, size_t i, uint64_t *loc, uint64_t *fde_addr)
{
	if (t->hdr_enc == (DW_EH_PE_datarel | DW_EH_PE_sdata4)) {
		/* What every linker emits: two signed 32-bit offsets from the
		 * header's start. Read directly; this is the lookup's inner loop. */
		const uint8_t *p = t->hdr_table + i * 8;
		int32_t l, f;
		memcpy(&l, p, 4); /* little-endian host and target */
		memcpy(&f, p + 4, 4);
		*loc = t->hdr_ctx.data_addr + (uint64_t)(int64_t)l;
		*fde_addr = t->hdr_ctx.data_addr + (uint64_t)(int64_t)f;
		if (t->hdr_ctx.addr_size == 4) {
			*loc &= 0xffffffffu;
			*fde_addr &= 0xffffffffu;
		}
		return 0;
	}
	int size = base_pointer_size(t->hdr_enc, t->hdr_ctx.addr_size);
	const uint8_t *p = t->hdr_table + i * 2 * (size_t)size;
	struct buf b = { p, p + 2 * size };
	int err = base_read_pointer(&b, t->hdr_enc, &t->hdr_ctx, loc);
	return err ? err : base_read_pointer(&b, t->hdr_enc, &t->hdr_ctx, fde_addr);
}

/* Adopt the .eh_frame_hdr table if it is usable; false leaves T unchanged.
 * LAZY: check the header only; lookups check the entries they visit. */
static bool try_hdr(struct cfi_table *t, const struct cfi_hdr *hdr, bool lazy)
{
	struct buf b = buf_make(hdr->data, hdr->len);
	uint8_t version, ptr_enc, count_enc, table_enc;
	struct base_ptr_ctx ctx = {
		.sec_data = hdr->data,
		.sec_addr = hdr->addr,
		.text_addr = t->sec.text_addr,
		.data_addr = hdr->addr, /* datarel is relative to the header itself */
		.addr_size = t->sec.addr_size,
		.mem = NULL,
	};
	uint64_t eh_frame_addr, count;

	if (buf_u8(&b, &version) || buf_u8(&b, &ptr_enc) || buf_u8(&b, &count_enc) ||
	    buf_u8(&b, &table_enc) || version != 1)
		return false;
	if (ptr_enc == DW_EH_PE_omit || count_enc == DW_EH_PE_omit ||
	    table_enc == DW_EH_PE_omit || (ptr_enc | count_enc | table_enc) & DW_EH_PE_indirect)
		return false;
	if (base_read_pointer(&b, ptr_enc, &ctx, &eh_frame_addr) ||
	    base_read_pointer(&b, count_enc, &ctx, &count))
		return false;
	int size = base_pointer_size(table_enc, ctx.addr_size);
	/* An empty table while the section has entries would hide them all. */
	if (eh_frame_addr != t->sec.addr || size <= 0 || count == 0 ||
	    count > buf_left(&b) / (2 * (size_t)size))
		return false;

	t->hdr_table = b.p;
	t->hdr_count = (size_t)count;
	t->hdr_enc = table_enc;
	t->hdr_ctx = ctx;
	t->hdr_lazy = lazy;
	if (lazy)
		return true;

	uint64_t prev = 0;
	for (size_t i = 0; i < t->hdr_count; i++) {
		uint64_t loc, fde_addr;
		struct cfi_entry e;
		if (hdr_entry(t, i, &loc, &fde_addr) || (i && loc < prev) ||
		    fde_addr < t->sec.addr || fde_addr - t->sec.addr >= t->sec.len ||
		    cfi_entry_at(&t->sec, fde_addr - t->sec.addr, &e) || e.kind != CFI_ENTRY_FDE) {
			t->hdr_table = NULL;
			t->hdr_count = 0;
			return false;
		}
		prev = loc;
	}
	return true;
}

/* The index's order: by pc_begin, then by offset (a total order, so the
 * index is the same whatever sort made it). */
static bool entry_before(const struct cfi_index_entry *x, const struct cfi_index_entry *y)
{
	return x->pc_begin != y->pc_begin ? x->pc_begin < y->pc_begin : x->fde_off < y->fde_off;
}

/* Sort the index in place: nothing when it is already sorted (the linker
 * usually lays FDEs out in address order), else heapsort, O(n log n) with
 * no recursion, no allocation and no library call (qsort may allocate). */
static void sort_index(struct cfi_index_entry *a, size_t n)
{
	size_t i = 1;
	while (i < n && !entry_before(&a[i], &a[i - 1]))
		i++;
	if (i >= n)
		return;
	for (size_t start = n / 2, end = n;;) {
		/* Sift down from START into a max-heap of END entries. */
		size_t root;
		if (start > 0) {
			root = --start;
		} else {
			if (--end == 0)
				return;
			struct cfi_index_entry t = a[0];
			a[0] = a[end];
			a[end] = t;
			root = 0;
		}
		for (;;) {
			size_t child = 2 * root + 1;
			if (child >= end)
				break;
			if (child + 1 < end && entry_before(&a[child], &a[child + 1]))
				child++;
			if (!entry_before(&a[root], &a[child]))
				break;
			struct cfi_index_entry t = a[root];
			a[root] = a[child];
			a[child] = t;
			root = child;
		}
	}
}

static void note_error(struct cfi_table *t, int err, uint64_t off)
{
	if (!t)
		return;
	if (!t->first_error) {
		t->first_error = err;
		t->first_error_off = off;
	}
	t->nbad++;
}

/* The walk over SEC every index user shares. From *OFF, the next FDE the
 * index keeps (it decodes, with its CIE, and covers at least one byte):
 * 1 with *OUT set and *OFF moved past it; 0 at the end (the end of the
 * section, the terminator of .eh_frame, or an entry whose framing fails,
 * after which no later entry can be found); BK_E_LIMIT once *BUDGET entries
 * (of any kind) have been visited. Decode errors are noted in STATS (may be
 * NULL). */
static int next_fde(const struct cfi_section *sec, uint64_t *off, size_t *budget,
		    struct cfi_table *stats, struct cfi_index_entry *out)
{
	while (*off < sec->len) {
		struct cfi_entry e;
		if (*budget == 0)
			return BK_E_LIMIT;
		--*budget;
		int err = cfi_entry_at(sec, *off, &e);
		if (err) {
			note_error(stats, err, *off); /* cannot find the next entry */
			*off = sec->len;
			return 0;
		}
		if (e.kind == CFI_ENTRY_TERMINATOR && sec->is_eh) {
			*off = sec->len;
			return 0;
		}
		uint64_t at = *off;
		*off = e.next_off;
		if (e.kind != CFI_ENTRY_FDE)
			continue;
		struct cfi_fde fde;
		struct cfi_cie cie;
		err = cfi_decode_fde(sec, at, &fde, &cie);
		if (err) {
			note_error(stats, err, at);
		} else if (fde.pc_begin < fde.pc_end) {
			*out = (struct cfi_index_entry){ fde.pc_begin, fde.pc_end, at };
			return 1;
		}
	}
	return 0;
}

/* Build the index into allocated memory that grows as needed. */
static int build_index(struct cfi_table *t)
{
	size_t cap = 0, budget = SIZE_MAX;
	uint64_t off = 0;
	struct cfi_index_entry e;
	int r;

	while ((r = next_fde(&t->sec, &off, &budget, t, &e)) == 1) {
		if (t->nindex == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			void *p = base_realloc(t->index, ncap * sizeof(*t->index));
			if (!p)
				return BK_E_NOMEM;
			t->index = p;
			cap = ncap;
		}
		t->index[t->nindex++] = e;
	}
	sort_index(t->index, t->nindex);
	return r;
}

int cfi_index_count(const struct cfi_section *sec, size_t max, size_t *n)
{
	uint64_t off = 0;
	*n = 0;
	while (off < sec->len) {
		struct cfi_entry e;
		if (cfi_entry_at(sec, off, &e) || (e.kind == CFI_ENTRY_TERMINATOR && sec->is_eh))
			break;
		if (e.kind == CFI_ENTRY_FDE && ++*n > max)
			return BK_E_LIMIT;
		off = e.next_off;
	}
	return 0;
}

int cfi_table_init_mem(struct cfi_table *t, const struct cfi_section *sec,
		       struct cfi_index_entry *mem, size_t cap)
{
	memset(t, 0, sizeof(*t));
	t->sec = *sec;
	t->index = mem;
	t->index_borrowed = true;
	size_t budget = SIZE_MAX;
	uint64_t off = 0;
	struct cfi_index_entry e;
	int r;
	while ((r = next_fde(&t->sec, &off, &budget, t, &e)) == 1) {
		if (t->nindex == cap)
			return BK_E_LIMIT;
		mem[t->nindex++] = e;
	}
	sort_index(mem, t->nindex);
	return r;
}

void cfi_table_init_index(struct cfi_table *t, const struct cfi_section *sec,
			  const struct cfi_index_entry *index, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->sec = *sec;
	t->index = (struct cfi_index_entry *)index; /* never written through */
	t->nindex = n;
	t->index_borrowed = true;
}

void cfi_table_init_scan(struct cfi_table *t, const struct cfi_section *sec, size_t max_entries)
{
	memset(t, 0, sizeof(*t));
	t->sec = *sec;
	t->scan_max = max_entries ? max_entries : 1;
}

int cfi_table_init_hdr(struct cfi_table *t, const struct cfi_section *sec, const struct cfi_hdr *hdr)
{
	memset(t, 0, sizeof(*t));
	t->sec = *sec;
	return sec->is_eh && hdr && hdr->data && try_hdr(t, hdr, true) ? 0 : BK_E_UNSUPPORTED;
}

int cfi_table_init(struct cfi_table *t, const struct cfi_section *sec, const struct cfi_hdr *hdr)
{
	memset(t, 0, sizeof(*t));
	t->sec = *sec;
	if (sec->is_eh && hdr && hdr->data && try_hdr(t, hdr, false))
		return 0;
	int err = build_index(t);
	if (err)
		cfi_table_free(t);
	return err;
}

void cfi_table_free(struct cfi_table *t)
{
	if (!t->index_borrowed)
		base_free(t->index);
	t->index = NULL;
	t->nindex = 0;
}

int cfi_table_find(const struct cfi_table *t, uint64_t pc, struct cfi_fde *fde,
		   struct cfi_cie *cie)
{
	uint64_t fde_off;
	size_t lo = 0, hi;
	int err;

	/* Find the last entry whose start is <= pc. A table adopted lazily
	 * must be sorted along the search's path: every entry visited lies
	 * between the nearest ones visited on either side. */
	if (t->hdr_table) {
		hi = t->hdr_count;
		uint64_t floor_loc = 0, ceil_loc = UINT64_MAX;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			uint64_t loc, addr;
			if ((err = hdr_entry(t, mid, &loc, &addr)))
				return err;
			if (t->hdr_lazy && (loc < floor_loc || loc > ceil_loc))
				return BK_CORRUPT;
			if (loc <= pc) {
				lo = mid + 1;
				floor_loc = loc;
			} else {
				hi = mid;
				ceil_loc = loc;
			}
		}
		if (lo == 0)
			return BK_E_NOT_FOUND;
		uint64_t loc, addr;
		if ((err = hdr_entry(t, lo - 1, &loc, &addr)))
			return err;
		fde_off = addr - t->sec.addr;
	} else if (t->scan_max) {
		/* What the index would answer: the last entry in (pc_begin, offset)
		 * order whose pc_begin is <= pc. */
		size_t budget = t->scan_max;
		uint64_t off = 0;
		struct cfi_index_entry e, best = { 0, 0, 0 };
		bool have = false;
		int r;
		while ((r = next_fde(&t->sec, &off, &budget, NULL, &e)) == 1)
			if (e.pc_begin <= pc && (!have || e.pc_begin >= best.pc_begin)) {
				best = e;
				have = true;
			}
		if (r < 0)
			return r;
		if (!have || pc >= best.pc_end)
			return BK_E_NOT_FOUND;
		fde_off = best.fde_off;
	} else {
		lo = BASE_COUNT_LE(t->index, t->nindex, pc_begin, pc);
		if (lo == 0 || pc >= t->index[lo - 1].pc_end)
			return BK_E_NOT_FOUND;
		fde_off = t->index[lo - 1].fde_off;
	}
	if ((err = cfi_decode_fde(&t->sec, fde_off, fde, cie)))
		return err;
	if (pc < fde->pc_begin || pc >= fde->pc_end)
		return BK_E_NOT_FOUND;
	return 0;
}
