/* The buffered stdout writer of out.h. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "out.h"

static char buf[1 << 16];
static size_t used;

static bool capturing, cap_failed;
static char *cap_buf;
static size_t cap_used, cap_size;

static void capture_mem(const void *p, size_t len)
{
	if (cap_used + len > cap_size) {
		size_t n = cap_size ? cap_size : 256;
		while (n < cap_used + len)
			n *= 2;
		char *b = realloc(cap_buf, n);
		if (!b) {
			cap_failed = true;
			return;
		}
		cap_buf = b;
		cap_size = n;
	}
	memcpy(cap_buf + cap_used, p, len);
	cap_used += len;
}

void out_capture(void)
{
	capturing = true;
	cap_failed = false;
	cap_used = 0;
}

const char *out_captured(size_t *len)
{
	capturing = false;
	*len = cap_used;
	return cap_failed ? NULL : cap_buf ? cap_buf : "";
}

void out_flush(void)
{
	size_t off = 0;
	while (off < used) {
		ssize_t n = write(STDOUT_FILENO, buf + off, used - off);
		if (n <= 0)
			break; /* a closed pipe: nothing more to say */
		off += (size_t)n;
	}
	used = 0;
}

void out_mem(const void *p, size_t len)
{
	if (capturing) {
		capture_mem(p, len);
		return;
	}
	if (used + len > sizeof(buf)) {
		out_flush();
		if (len > sizeof(buf)) {
			fflush(stdout);
			fwrite(p, 1, len, stdout);
			fflush(stdout);
			return;
		}
	}
	memcpy(buf + used, p, len);
	used += len;
}

void out_s(const char *s)
{
	out_mem(s, strlen(s));
}

void out_c(char c)
{
	if (capturing) {
		capture_mem(&c, 1);
		return;
	}
	if (used == sizeof(buf))
		out_flush();
	buf[used++] = c;
}

void out_u64(uint64_t v)
{
	char tmp[24];
	int i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	out_mem(tmp + i, sizeof(tmp) - i);
}

void out_s64(int64_t v)
{
	if (v < 0) {
		out_c('-');
		out_u64((uint64_t)0 - (uint64_t)v);
	} else {
		out_u64((uint64_t)v);
	}
}

void out_sgn(int64_t v)
{
	if (v >= 0)
		out_c('+');
	out_s64(v);
}

void out_x64(uint64_t v, int width)
{
	char tmp[16];
	int i = sizeof(tmp);
	do {
		tmp[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	for (int pad = width - ((int)sizeof(tmp) - i); pad > 0; pad--)
		out_c('0');
	out_mem(tmp + i, sizeof(tmp) - i);
}

void out_addr(uint64_t v)
{
	out_mem("0x", 2);
	out_x64(v, 0);
}

void out_pad(const char *s, int width)
{
	int n = (int)strlen(s);
	out_mem(s, (size_t)n);
	do
		out_c(' ');
	while (++n < width);
}

void out_fmt(const char *fmt, ...)
{
	char tmp[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	out_mem(tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}
