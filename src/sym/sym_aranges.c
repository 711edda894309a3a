/* What sym_open reads of DWARF without libdwarf: the address ranges of each
 * compile unit from .debug_aranges (DWARF 5 §6.1.2, §7.21), and, before the
 * first lookup, the unit headers of .debug_info (§7.5.1.1-3) that
 * .debug_aranges is checked against. Both with the bounded reader: a length
 * past the end, an unknown version or a bad address size is an error, never
 * a read out of bounds. Neither recurses; each loop advances by at least a
 * header per step.
 */
#include "sym.h"

int sym_aranges(const uint8_t *sec, size_t len, const struct sym_aranges_cb *cb)
{
	struct buf b = buf_make(sec, len);
	while (buf_left(&b) > 0) {
		const uint8_t *set_start = b.p;
		uint64_t set_len;
		unsigned off_size;
		int err = buf_unit_length(&b, &set_len, &off_size);
		if (err)
			return err;
		if (set_len > buf_left(&b))
			return BK_CORRUPT;
		struct buf s = { b.p, b.p + set_len };
		b.p += set_len;

		uint16_t version;
		uint64_t cu_off;
		uint8_t addr_size, seg_size;
		if ((err = buf_u16(&s, &version)) || (err = buf_uN(&s, off_size, &cu_off)) ||
		    (err = buf_u8(&s, &addr_size)) || (err = buf_u8(&s, &seg_size)))
			return err;
		if (version != 2 || (addr_size != 4 && addr_size != 8) || seg_size > 8)
			return BK_CORRUPT;
		cb->set(cb->arg, cu_off);
		/* Tuples start at a multiple of their size from the set's start. */
		size_t tuple = (size_t)seg_size + 2u * addr_size;
		size_t used = (size_t)(s.p - set_start), pad = (tuple - used % tuple) % tuple;
		if ((err = buf_skip(&s, pad)))
			return err;
		while (buf_left(&s) > 0) {
			uint64_t lo, n;
			if ((err = buf_skip(&s, seg_size)) || (err = buf_uN(&s, addr_size, &lo)) ||
			    (err = buf_uN(&s, addr_size, &n)))
				return err;
			if (lo == 0 && n == 0)
				break; /* the terminating tuple */
			cb->range(cb->arg, cu_off, lo, n > UINT64_MAX - lo ? UINT64_MAX : lo + n);
		}
	}
	return 0;
}

int sym_units(const uint8_t *info, size_t len, int (*cb)(void *arg, const struct sym_cu *unit),
	      void *arg)
{
	struct buf b = buf_make(info, len);
	for (size_t n = 0; buf_left(&b) > 0; n++) {
		if (n >= SYM_MAX_CUS)
			return BK_E_LIMIT;
		struct sym_cu u = { .off = (uint64_t)(b.p - info) };
		uint64_t ulen;
		unsigned off_size;
		int err = buf_unit_length(&b, &ulen, &off_size);
		if (err)
			return err;
		if (ulen > buf_left(&b))
			return BK_CORRUPT;
		struct buf h = { b.p, b.p + ulen };
		b.p += ulen;
		u.end = (uint64_t)(b.p - info);
		u.off_size = (uint8_t)off_size;

		uint8_t ut = 1 /* DW_UT_compile */, asz;
		uint64_t abbrev;
		if ((err = buf_u16(&h, &u.version)))
			return err;
		if (u.version < 2 || u.version > 5)
			return BK_CORRUPT;
		if (u.version == 5) {
			if ((err = buf_u8(&h, &ut)) || (err = buf_u8(&h, &asz)) ||
			    (err = buf_uN(&h, off_size, &abbrev)))
				return err;
			/* DW_UT_compile .. DW_UT_split_type (DWARF 5 Table 7.2), and
			 * what their headers add: a dwo_id (skeleton, split_compile),
			 * a signature and a type offset (type, split_type). */
			if (ut < 1 || ut > 6)
				return BK_CORRUPT;
			uint64_t extra = ut == 2 || ut == 6 ? 8 + off_size : 0;
			if ((ut == 4 || ut == 5) && (err = buf_u64(&h, &u.dwo_id)))
				return err;
			if ((err = buf_skip(&h, extra)))
				return err;
		} else if ((err = buf_uN(&h, off_size, &abbrev)) || (err = buf_u8(&h, &asz))) {
			return err;
		}
		if (asz != 2 && asz != 4 && asz != 8)
			return BK_CORRUPT;
		if (buf_left(&h) == 0)
			return BK_CORRUPT; /* no room for the top DIE */
		u.unit_type = ut;
		u.addr_size = asz;
		u.die_off = (uint64_t)(h.p - info);
		int r = cb(arg, &u);
		if (r)
			return r;
	}
	return 0;
}
