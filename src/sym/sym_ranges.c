/* Address range lists: DWARF 5 .debug_rnglists (§2.17.3, §7.25 Table 7.30)
 * and DWARF 2-4 .debug_ranges, decoded here with the bounded reader.
 *
 * Why not libdwarf: in 20210528, dwarf_rnglists_get_rle_head adds an offset
 * read from the file to the section start without checking it and reads
 * the entry code there (a wild read under ASan with one flipped byte in
 * .debug_info or .debug_rnglists). A range list is a few bytes per entry;
 * reading it ourselves costs less than guarding every way in.
 *
 * Every offset and index is checked against its section before use; an
 * entry that needs .debug_addr when the CU has no DW_AT_addr_base, or an
 * index past the section, fails the whole list (BK_E_CORRUPT) after the
 * ranges already delivered. At most SYM_MAX_RANGES_PER_DIE entries are read.
 */
#include "sym.h"

/* DWARF 5 §7.25, Table 7.30. */
enum {
	RLE_end_of_list, RLE_base_addressx, RLE_startx_endx, RLE_startx_length,
	RLE_offset_pair, RLE_base_address, RLE_start_end, RLE_start_length,
};

int sym_debug_addr(const struct sym_rng_ctx *c, uint64_t index, uint64_t *out)
{
	if (!c->has_addr_base || !c->addr)
		return BK_CORRUPT;
	uint64_t off = c->addr_base, skip = index * c->addr_size;
	if (index > UINT64_MAX / 8 || off > c->addr_len || skip > c->addr_len - off)
		return BK_CORRUPT;
	struct buf b = buf_make(c->addr + off + skip, c->addr_len - off - skip);
	return buf_uN(&b, c->addr_size, out);
}

int sym_rnglist(const struct sym_rng_ctx *c, bool is_index, uint64_t val,
		void (*cb)(void *arg, uint64_t lo, uint64_t hi), void *arg)
{
	if (!c->rnglists || (c->addr_size != 4 && c->addr_size != 8) ||
	    (c->off_size != 4 && c->off_size != 8))
		return BK_CORRUPT;
	uint64_t off = val;
	if (is_index) {
		/* DWARF 5 §7.28: offsets relative to rnglists_base, which
		 * points at the table's offset array. */
		if (!c->has_rnglists_base || val > UINT64_MAX / 8)
			return BK_CORRUPT;
		uint64_t at = c->rnglists_base, skip = val * c->off_size;
		if (at > c->rnglists_len || skip > c->rnglists_len - at)
			return BK_CORRUPT;
		struct buf t = buf_make(c->rnglists + at + skip, c->rnglists_len - at - skip);
		uint64_t rel;
		int err = buf_uN(&t, c->off_size, &rel);
		if (err)
			return err;
		if (rel > UINT64_MAX - at)
			return BK_CORRUPT;
		off = at + rel;
	}
	if (off >= c->rnglists_len)
		return BK_CORRUPT;

	struct buf b = buf_make(c->rnglists + off, c->rnglists_len - off);
	uint64_t base = c->cu_base;
	for (unsigned n = 0; n < SYM_MAX_RANGES_PER_DIE; n++) {
		uint8_t code;
		uint64_t a, b2, lo, hi;
		int err = buf_u8(&b, &code);
		if (err)
			return err;
		switch (code) {
		case RLE_end_of_list:
			return 0;
		case RLE_base_addressx:
			if ((err = buf_uleb(&b, &a)) || (err = sym_debug_addr(c, a, &base)))
				return err;
			break;
		case RLE_startx_endx:
			if ((err = buf_uleb(&b, &a)) || (err = buf_uleb(&b, &b2)) ||
			    (err = sym_debug_addr(c, a, &lo)) || (err = sym_debug_addr(c, b2, &hi)))
				return err;
			cb(arg, lo, hi);
			break;
		case RLE_startx_length:
			if ((err = buf_uleb(&b, &a)) || (err = buf_uleb(&b, &b2)) ||
			    (err = sym_debug_addr(c, a, &lo)))
				return err;
			if (b2 <= UINT64_MAX - lo)
				cb(arg, lo, lo + b2);
			break;
		case RLE_offset_pair:
			if ((err = buf_uleb(&b, &a)) || (err = buf_uleb(&b, &b2)))
				return err;
			if (a <= UINT64_MAX - base && b2 <= UINT64_MAX - base)
				cb(arg, base + a, base + b2);
			break;
		case RLE_base_address:
			if ((err = buf_uN(&b, c->addr_size, &base)))
				return err;
			break;
		case RLE_start_end:
			if ((err = buf_uN(&b, c->addr_size, &lo)) || (err = buf_uN(&b, c->addr_size, &hi)))
				return err;
			cb(arg, lo, hi);
			break;
		case RLE_start_length:
			if ((err = buf_uN(&b, c->addr_size, &lo)) || (err = buf_uleb(&b, &b2)))
				return err;
			if (b2 <= UINT64_MAX - lo)
				cb(arg, lo, lo + b2);
			break;
		default:
			return BK_CORRUPT;
		}
	}
	return BK_E_LIMIT;
}

/* DWARF 4 §2.17.3: pairs of addresses; (0, 0) ends the list, (max, x)
 * selects x as the base for the entries after it. */
int sym_ranges4(const struct sym_rng_ctx *c, uint64_t off,
		void (*cb)(void *arg, uint64_t lo, uint64_t hi), void *arg)
{
	if (!c->ranges || off >= c->ranges_len || (c->addr_size != 4 && c->addr_size != 8))
		return BK_CORRUPT;
	const uint64_t max = c->addr_size == 8 ? UINT64_MAX : UINT32_MAX;
	struct buf b = buf_make(c->ranges + off, c->ranges_len - off);
	uint64_t base = c->cu_base;
	for (unsigned n = 0; n < SYM_MAX_RANGES_PER_DIE; n++) {
		uint64_t a, e;
		int err = buf_uN(&b, c->addr_size, &a);
		if (!err)
			err = buf_uN(&b, c->addr_size, &e);
		if (err)
			return err;
		if (a == 0 && e == 0)
			return 0;
		if (a == max) {
			base = e;
			continue;
		}
		if (a <= max - base && e <= max - base)
			cb(arg, base + a, base + e);
	}
	return BK_E_LIMIT;
}
