/* Pre-flight checks for damage libdwarf 20210528 does not survive.
 *
 * libdwarf reads every .debug_rnglists and .debug_loclists table header when
 * it first loads .debug_info. When a header fails its checks (a length past
 * the section, a version other than 5, an address size other than 2, 4 or
 * 8), that release frees the context it was building and the chain so far,
 * then goes on using both: a double free (seen under ASan with a flipped
 * byte in .debug_rnglists; fixed in later libdwarf releases). So the same
 * checks run here first, with a bounded reader, and a file whose lists
 * section would fail them is not handed to libdwarf at all: its symbols
 * still work, its DWARF is reported as failed.
 *
 * The walk is the one libdwarf does (DWARF 5 §7.28 / §7.29 header layout):
 * unit_length (with the 64-bit escape), version, address_size,
 * segment_selector_size, offset_entry_count, then the next header at the
 * end of the unit.
 */
#include "sym.h"

int sym_check_lists(const uint8_t *sec, size_t len)
{
	struct buf b = buf_make(sec, len);
	while (buf_left(&b) > 0) {
		uint64_t unit_len;
		unsigned off_size;
		int err = buf_unit_length(&b, &unit_len, &off_size);
		if (err)
			return err;
		if (unit_len > buf_left(&b) || unit_len < 8)
			return BK_CORRUPT;
		struct buf u = { b.p, b.p + unit_len };
		b.p += unit_len;
		uint16_t version;
		uint8_t addr_size, seg_size;
		uint32_t nofs;
		if ((err = buf_u16(&u, &version)) || (err = buf_u8(&u, &addr_size)) ||
		    (err = buf_u8(&u, &seg_size)) || (err = buf_u32(&u, &nofs)))
			return err;
		if (version != 5 || (addr_size != 2 && addr_size != 4 && addr_size != 8))
			return BK_CORRUPT;
		/* The offset array must lie inside the unit (libdwarf sizes it
		 * by address_size in places and by offset size in others). */
		uint64_t size = addr_size > off_size ? addr_size : off_size;
		if ((uint64_t)nofs * size > buf_left(&u))
			return BK_CORRUPT;
	}
	return 0;
}
