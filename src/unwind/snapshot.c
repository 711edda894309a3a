/* Snapshot spaces: memory is a set of caller-owned regions copied from a
 * target (a profiler's stack sample). The same cursor walks them; only
 * read_mem differs. Reads are AS-safe: a binary search over sorted regions.
 * The region holding the stack pointer is the PC-only walk's window: its
 * ordinary frames are read with plain loads from the copy. */
#include "unwind.h"

struct snapshot {
	size_t n;
	struct bk_mem_region r[]; /* sorted by addr */
};

static int snapshot_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	const struct snapshot *sn = ctx;
	size_t lo = BASE_COUNT_LE(sn->r, sn->n, addr, addr);
	if (lo == 0)
		return BK_E_MEMORY;
	const struct bk_mem_region *r = &sn->r[lo - 1];
	uint64_t off = addr - r->addr;
	if (off >= r->len || len > r->len - off)
		return BK_E_MEMORY;
	memcpy(dst, (const uint8_t *)r->bytes + off, len);
	return 0;
}

static bool snapshot_window(void *ctx, uint64_t addr, struct uw_window *out)
{
	const struct snapshot *sn = ctx;
	size_t lo = BASE_COUNT_LE(sn->r, sn->n, addr, addr);
	if (lo == 0 || addr - sn->r[lo - 1].addr >= sn->r[lo - 1].len)
		return false;
	const struct bk_mem_region *r = &sn->r[lo - 1];
	*out = (struct uw_window){ r->addr, r->len, r->bytes };
	return true;
}

int bk_space_create_snapshot(enum bk_arch arch, const struct bk_mem_region *regions,
			     size_t nregions, struct bk_space **out)
{
	if (!out || (nregions && !regions) || nregions > ((size_t)1 << 20))
		return BK_E_INVAL;
	struct snapshot *sn = base_alloc(sizeof(*sn) + nregions * sizeof(sn->r[0]));
	if (!sn)
		return BK_E_NOMEM;
	sn->n = nregions;
	for (size_t i = 0; i < nregions; i++) { /* insertion sort: few regions */
		size_t j = i;
		while (j > 0 && sn->r[j - 1].addr > regions[i].addr) {
			sn->r[j] = sn->r[j - 1];
			j--;
		}
		sn->r[j] = regions[i];
	}
	static const struct bk_target_ops ops = { sizeof(ops), snapshot_read };
	int err = bk_space_create(arch, &ops, sn, out);
	if (err) {
		base_free(sn);
		return err;
	}
	(*out)->owned_ctx = sn;
	(*out)->window = snapshot_window;
	return 0;
}
