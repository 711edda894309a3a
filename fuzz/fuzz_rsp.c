/* Fuzz harness: the GDB remote protocol parser of the validator's remote
 * driver (src/validate/val_rsp.c): what a stub sends, byte by byte.
 *
 * Input: byte 0 sets how the rest is cut into reads (1 + byte0 % 61 bytes
 * per feed, as TCP may cut it anywhere); the rest is the stub's byte
 * stream. Every packet the parser completes is also handed to each
 * reader a packet may reach in the driver: the stop-reply parser, the
 * target-description parser, the svr4 library-list parser, hex decoding.
 *
 * abort() marks a broken documented invariant rather than a crash: feed
 * using no byte or more than it was given, a packet longer than
 * VAL_RSP_MAX or not NUL-terminated, a packet that framed again
 * (val_rsp_frame) and parsed back is not the same bytes, a target
 * description with more registers than its bound.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "validate/val.h"

static void on_lib(void *ctx, const char *name, uint64_t lm, uint64_t l_addr, uint64_t l_ld)
{
	(void)lm;
	(void)l_addr;
	(void)l_ld;
	if (strlen(name) >= 4096)
		abort();
	++*(unsigned *)ctx;
}

static struct val_rsp_parser p, back;
static struct val_rsp_tdesc td;

static void packet(const uint8_t *data, size_t len)
{
	if (len > VAL_RSP_MAX || data[len] != 0)
		abort();
	struct val_rsp_stop st;
	val_rsp_parse_stop((const char *)data, len, &st);
	memset(&td, 0, sizeof(td));
	if (val_rsp_tdesc_parse((const char *)data, len, &td) == 0 && td.nregs > VAL_RSP_MAX_REGS)
		abort();
	uint64_t main_lm;
	unsigned n = 0;
	val_rsp_svr4_parse((const char *)data, len, &main_lm, on_lib, &n);
	uint8_t bytes[64];
	val_rsp_unhex((const char *)data, len, bytes, sizeof(bytes));
	const char *s = (const char *)data;
	uint64_t v;
	val_rsp_hexnum(&s, (const char *)data + len, &v);
	if (s < (const char *)data || s > (const char *)data + len)
		abort();
	/* Framed again and parsed back: the same payload. */
	static char framed[2 * VAL_RSP_MAX + 8];
	size_t flen = val_rsp_frame((const char *)data, len, framed, sizeof(framed));
	if (!flen)
		abort();
	val_rsp_init(&back);
	enum val_rsp_item it = VAL_RSP_NONE;
	size_t used = val_rsp_feed(&back, (const uint8_t *)framed, flen, &it);
	if (used != flen || it != VAL_RSP_PACKET || back.len != len || memcmp(back.data, data, len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t step = 1 + data[0] % 61;
	data++;
	size--;
	val_rsp_init(&p);
	size_t at = 0;
	while (at < size) {
		size_t n = size - at < step ? size - at : step;
		size_t off = 0;
		while (off < n) {
			enum val_rsp_item it;
			size_t used = val_rsp_feed(&p, data + at + off, n - off, &it);
			if (used == 0 || used > n - off)
				abort();
			off += used;
			if (it == VAL_RSP_PACKET)
				packet(p.data, p.len);
		}
		at += n;
	}
	return 0;
}
