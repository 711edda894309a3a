/* A buffered writer for stdout that formats numbers without printf: the
 * dump's output is large (a JSON object per FDE, a table row per address
 * range) and printf dominated its run time. Call out_flush() before exit and
 * before writing to stdout by any other means. */
#ifndef BK_OUT_H
#define BK_OUT_H

#include <stddef.h>
#include <stdint.h>

void out_flush(void);
void out_mem(const void *p, size_t len);
void out_s(const char *s);
void out_c(char c);
void out_u64(uint64_t v);            /* decimal */
void out_s64(int64_t v);             /* decimal, '-' when negative */
void out_sgn(int64_t v);             /* decimal with an explicit sign: +8, -16 */
void out_x64(uint64_t v, int width); /* hex, zero-padded to WIDTH digits, no prefix */
void out_addr(uint64_t v);           /* 0x1234 */
void out_pad(const char *s, int width); /* s, then spaces up to WIDTH (one at least) */
void out_fmt(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Capture: from out_capture() to out_captured(), output goes to a growing
 * buffer instead of stdout (printers keep the text of a frame they will
 * print again). out_captured returns it, valid until the next
 * out_capture; NULL when memory ran out (the text is then lost). */
void out_capture(void);
const char *out_captured(size_t *len);

#endif
