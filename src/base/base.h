/* Bottom layer shared by every directory of src/: the bounded byte reader,
 * the corruption macro, the allocation funnel and the DWARF constants.
 * Pure: no OS calls except in base_alloc (cold paths only).
 *
 * The reader never runs past `end`: every read either succeeds and advances
 * or fails with BK_E_CORRUPT and leaves the reader unchanged. A truncated
 * LEB128 or one that does not fit 64 bits is an error, never an abort.
 */
#ifndef BK_BASE_H
#define BK_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "backstep.h"

#define BK_HIDDEN __attribute__((visibility("hidden")))
#define BK_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
/* Not instrumented by AddressSanitizer: for the local unwinder's reads of
 * its own thread's stack, whose words belong to other frames (dead ones,
 * red zones) and are read on purpose. Keep such functions tiny. */
#define BK_NO_ASAN __attribute__((no_sanitize("address")))

/* Every corruption path goes through here so a debug build can say which
 * check fired (set a breakpoint on base_corrupt_at, or read the trace). */
#ifdef BK_DEBUG_CORRUPT
BK_HIDDEN int base_corrupt_at(int line, const char *file);
#define BK_CORRUPT base_corrupt_at(__LINE__, __FILE__)
#else
#define BK_CORRUPT BK_E_CORRUPT
#endif

/* ---- Allocation funnel (cold paths only) ------------------------------- */

/* All allocation in the library goes through these, so that tests can inject
 * failures. base_alloc(NULL-free semantics): returns NULL on failure. */
BK_HIDDEN void *base_alloc(size_t len);
BK_HIDDEN void *base_calloc(size_t n, size_t len);
BK_HIDDEN void *base_realloc(void *p, size_t len);
BK_HIDDEN void base_free(void *p);
/* Tests: fail the Nth allocation from now (0 = never). */
BK_HIDDEN void base_alloc_fail_after(unsigned long n);

/* ARR (an array of *CAP elements of SIZE bytes, or NULL) made to hold
 * NEED: its capacity doubled from MIN_CAP until it does. The array (moved
 * or not; *CAP updated), or NULL when memory ran out or the size would
 * overflow (ARR and *CAP untouched). Cold. */
BK_HIDDEN void *base_grow(void *arr, size_t *cap, size_t need, size_t size, size_t min_cap);

/* A copy of S through the allocation funnel, or NULL. Cold. */
BK_HIDDEN char *base_strdup(const char *s);

/* Little-endian N-byte value at P (N <= 8); the caller checked the bounds. */
static inline uint64_t base_rd_le(const uint8_t *p, unsigned n)
{
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		x |= (uint64_t)p[i] << (8 * i);
	return x;
}

/* ---- Sorted arrays -------------------------------------------------------- */

/* In the N elements of STRIDE bytes at BASE, sorted by the uint64_t at byte
 * KEY_OFF of each: how many have a key below KEY (OR_EQUAL: at most KEY).
 * That count is the index of the first element whose key is at least (above)
 * KEY, and the element before it, if any, the last one below (at most) KEY. */
static inline size_t base_count_keys(const void *base, size_t n, size_t stride, size_t key_off,
				     uint64_t key, bool or_equal)
{
	const uint8_t *b = base;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		memcpy(&k, b + mid * stride + key_off, sizeof(k));
		if (k < key || (or_equal && k == key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
/* The elements of array ARR (N of them, sorted by the uint64_t FIELD) whose
 * FIELD is <= KEY, or < KEY. */
#define BASE_COUNT_LE(arr, n, field, key)                                          \
	base_count_keys((arr), (n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), \
			(key), true)
#define BASE_COUNT_LT(arr, n, field, key)                                          \
	base_count_keys((arr), (n), sizeof(*(arr)), offsetof(__typeof__(*(arr)), field), \
			(key), false)

/* ---- Files (cold) ------------------------------------------------------- */

/* Open the regular file PATH to read: a descriptor (close-on-exec) and
 * *SIZE, or BK_E_IO (cannot open; not a regular file: a FIFO is refused
 * without waiting for a writer). Cold. */
BK_HIDDEN int base_open_regular(const char *path, uint64_t *size);
/* Map the regular file PATH read-only and private. Errors: BK_E_IO (cannot
 * open; not a regular file), BK_E_NOT_ELF (empty: nothing to read as ELF),
 * BK_E_LIMIT (larger than the address space). */
BK_HIDDEN int base_map_file(const char *path, const uint8_t **data, size_t *len);
BK_HIDDEN void base_unmap_file(const void *data, size_t len);

/* ---- Target memory ------------------------------------------------------ */

/* Reads LEN bytes of the target at ADDR into DST; returns 0 or a negative
 * BK_E_* code (BK_E_MEMORY when the address is not readable). Must not fault.
 * Every read of target memory in the pure layers goes through one of these. */
struct base_mem {
	int (*read)(void *ctx, uint64_t addr, void *dst, size_t len);
	void *ctx;
};

static inline int base_mem_read(const struct base_mem *m, uint64_t addr, void *dst, size_t len)
{
	if (!m || !m->read)
		return BK_E_MEMORY;
	return m->read(m->ctx, addr, dst, len);
}

/* ---- Bounded reader ----------------------------------------------------- */

struct buf {
	const uint8_t *p;
	const uint8_t *end;
};

static inline struct buf buf_make(const void *p, size_t len)
{
	struct buf b = { (const uint8_t *)p, (const uint8_t *)p + len };
	return b;
}

static inline size_t buf_left(const struct buf *b)
{
	return (size_t)(b->end - b->p);
}

static inline int buf_skip(struct buf *b, uint64_t len)
{
	if (len > buf_left(b))
		return BK_CORRUPT;
	b->p += len;
	return 0;
}

static inline int buf_u8(struct buf *b, uint8_t *v)
{
	if (b->p >= b->end)
		return BK_CORRUPT;
	*v = *b->p++;
	return 0;
}

/* Little-endian fixed-size reads (the only byte order backstep supports). */
static inline int buf_uN(struct buf *b, unsigned n, uint64_t *v)
{
	if (buf_left(b) < n)
		return BK_CORRUPT;
	uint64_t x = 0;
	for (unsigned i = 0; i < n; i++)
		x |= (uint64_t)b->p[i] << (8 * i);
	b->p += n;
	*v = x;
	return 0;
}

static inline int buf_u16(struct buf *b, uint16_t *v)
{
	uint64_t x;
	int err = buf_uN(b, 2, &x);
	if (!err)
		*v = (uint16_t)x;
	return err;
}

static inline int buf_u32(struct buf *b, uint32_t *v)
{
	uint64_t x;
	int err = buf_uN(b, 4, &x);
	if (!err)
		*v = (uint32_t)x;
	return err;
}

static inline int buf_u64(struct buf *b, uint64_t *v)
{
	return buf_uN(b, 8, v);
}

/* Sign-extend the low BITS bits of X. */
static inline int64_t base_sext(uint64_t x, unsigned bits)
{
	if (bits >= 64)
		return (int64_t)x;
	uint64_t m = (uint64_t)1 << (bits - 1);
	x &= ((uint64_t)1 << bits) - 1;
	return (int64_t)((x ^ m) - m);
}

/* DWARF 5 §7.6. Bits beyond 64 must be zero (or sign copies for SLEB). */
static inline int buf_uleb(struct buf *b, uint64_t *v)
{
	const uint8_t *p = b->p;
	uint64_t x = 0;
	unsigned shift = 0;
	for (;;) {
		if (p >= b->end)
			return BK_CORRUPT;
		uint8_t byte = *p++;
		uint64_t low = byte & 0x7f;
		if (shift >= 64) {
			if (low != 0)
				return BK_CORRUPT;
		} else {
			if (shift > 57 && (low >> (64 - shift)) != 0)
				return BK_CORRUPT;
			x |= low << shift;
		}
		shift += 7;
		if (!(byte & 0x80))
			break;
		if (shift > 7 * 20) /* absurdly long padding */
			return BK_CORRUPT;
	}
	b->p = p;
	*v = x;
	return 0;
}

static inline int buf_sleb(struct buf *b, int64_t *v)
{
	const uint8_t *p = b->p;
	uint64_t x = 0;
	unsigned shift = 0;
	uint8_t byte;
	for (;;) {
		if (p >= b->end)
			return BK_CORRUPT;
		byte = *p++;
		uint64_t low = byte & 0x7f;
		if (shift < 63) {
			x |= low << shift;
		} else if (shift == 63) {
			/* Bit 63 and the six sign copies above it. */
			if (low != 0 && low != 0x7f)
				return BK_CORRUPT;
			x |= (low & 1) << 63;
		} else if (low != ((x >> 63) ? 0x7fu : 0u)) {
			return BK_CORRUPT;
		}
		shift += 7;
		if (!(byte & 0x80))
			break;
		if (shift > 7 * 20)
			return BK_CORRUPT;
	}
	if (shift < 64 && (byte & 0x40))
		x |= ~(uint64_t)0 << shift;
	b->p = p;
	*v = (int64_t)x;
	return 0;
}

/* ---- Pointer encodings (pointer.c) ------------------------------------- */

/* Where a DW_EH_PE-encoded pointer's relative forms are anchored. */
struct base_ptr_ctx {
	const uint8_t *sec_data; /* start of the section holding the pointer */
	uint64_t sec_addr;       /* its address: pcrel = sec_addr + (p - sec_data) */
	uint64_t text_addr;
	uint64_t data_addr;
	uint64_t func_addr;      /* DW_EH_PE_funcrel base (the FDE's pc_begin) */
	uint8_t addr_size;
	const struct base_mem *mem;
};

/* Read one pointer with encoding ENC (DW_EH_PE_*, not omit). With
 * DW_EH_PE_indirect the decoded value is the address where the pointer is
 * stored, and the result is read from there through ctx->mem. Errors:
 * BK_E_CORRUPT (truncated), BK_E_UNSUPPORTED (unknown format or
 * application), BK_E_MEMORY (indirect read failed). */
BK_HIDDEN int base_read_pointer(struct buf *b, uint8_t enc, const struct base_ptr_ctx *ctx,
			       uint64_t *out);

/* DWARF unit_length (DWARF 5 §7.4): 32 bits, or 0xffffffff then 64 bits
 * (*OFF_SIZE 8); the other values from 0xfffffff0 up are reserved
 * (BK_E_CORRUPT). */
static inline int buf_unit_length(struct buf *b, uint64_t *len, unsigned *off_size)
{
	struct buf r = *b;
	uint32_t l32;
	int err = buf_u32(&r, &l32);
	if (err)
		return err;
	*off_size = 4;
	if (l32 == 0xffffffffu) {
		*off_size = 8;
		if ((err = buf_u64(&r, len)))
			return err;
	} else if (l32 >= 0xfffffff0u) {
		return BK_CORRUPT;
	} else {
		*len = l32;
	}
	*b = r;
	return 0;
}

/* Bytes of a value with encoding ENC: 2, 4, 8 or ADDR_SIZE; 0 for the LEB128
 * forms; -1 for an unknown format. */
BK_HIDDEN int base_pointer_size(uint8_t enc, uint8_t addr_size);

/* ---- Checked arithmetic ------------------------------------------------- */

/* V reduced to an ADDR_SIZE-byte address. */
static inline uint64_t base_mask_addr(uint64_t v, uint8_t addr_size)
{
	return addr_size >= 8 ? v : v & (((uint64_t)1 << (8 * addr_size)) - 1);
}

static inline int base_add_s64(uint64_t a, int64_t off, uint64_t *out)
{
	if (off >= 0 ? a + (uint64_t)off < a : a < (uint64_t)-(off + 1) + 1)
		return BK_CORRUPT;
	*out = a + (uint64_t)off;
	return 0;
}

#endif
