/* Unit tests for src/cfi: DW_EH_PE pointer encodings, CIE/FDE framing and
 * decoding, every DW_CFA instruction through the state machine, FDE lookup
 * through a built index and a hand-built .eh_frame_hdr.
 *
 * Sections are built by hand with a small byte builder (put_* below, then
 * put_cie / put_fde that patch the length fields), so each case reads as
 * the bytes it is about. Each row asserts the exact result or the exact
 * BK_E_* code. */
#include "check.h"

#include <stdbool.h>
#include <stdlib.h>

#include "base/dwarf.h"
#include "cfi/cfi.h"

/* A byte string and its length, for table rows and builder arguments. */
#define B(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })
/* B applied to a macro that expands to a parenthesized list. */
#define BX(list) B list
#define U16(v) (uint8_t)((v) & 0xff), (uint8_t)(((v) >> 8) & 0xff)
#define U32(v) U16((v) & 0xffff), U16(((v) >> 16) & 0xffff)
#define U64(v) U32((uint64_t)(v) & 0xffffffffu), U32(((uint64_t)(v) >> 32) & 0xffffffffu)

/* ---- Byte builder -------------------------------------------------------- */

struct bb {
	uint8_t d[8192];
	size_t n;
};

static void put_u8(struct bb *b, uint8_t v)
{
	if (b->n >= sizeof(b->d)) {
		fprintf(stderr, "builder overflow\n");
		abort();
	}
	b->d[b->n++] = v;
}

static void put_uN(struct bb *b, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		put_u8(b, (uint8_t)(v >> (8 * i)));
}

static void patch_uN(struct bb *b, size_t at, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		b->d[at + i] = (uint8_t)(v >> (8 * i));
}

static void put_uleb(struct bb *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		put_u8(b, (uint8_t)(byte | (v ? 0x80 : 0)));
	} while (v);
}

static void put_sleb(struct bb *b, int64_t v)
{
	for (;;) {
		uint8_t byte = (uint8_t)(v & 0x7f);
		v >>= 7; /* arithmetic shift on gcc and clang */
		bool done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
		put_u8(b, (uint8_t)(byte | (done ? 0 : 0x80)));
		if (done)
			return;
	}
}

static void put_bytes(struct bb *b, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		put_u8(b, p[i]);
}

static void put_str(struct bb *b, const char *s)
{
	put_bytes(b, (const uint8_t *)s, strlen(s) + 1);
}

/* An entry's length field, patched by close_entry once the body is done. */
static size_t open_entry(struct bb *b, bool is64)
{
	size_t at = b->n;
	if (is64) {
		put_uN(b, 0xffffffffu, 4);
		put_uN(b, 0, 8);
	} else {
		put_uN(b, 0, 4);
	}
	return at;
}

static void close_entry(struct bb *b, size_t at, bool is64)
{
	if (is64)
		patch_uN(b, at + 4, b->n - at - 12, 8);
	else
		patch_uN(b, at, b->n - at - 4, 4);
}

/* Encode VALUE under the DW_EH_PE encoding ENC at the current position of
 * a section starting at SEC_ADDR (absptr, pcrel and funcrel bases only). */
static void put_ptr(struct bb *b, uint8_t enc, uint64_t value, uint64_t sec_addr,
		    uint8_t addr_size, uint64_t func_addr)
{
	uint64_t base = 0;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		base = sec_addr + b->n;
	else if ((enc & 0x70) == DW_EH_PE_funcrel)
		base = func_addr;
	uint64_t raw = value - base;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr: put_uN(b, raw, addr_size); break;
	case DW_EH_PE_uleb128: put_uleb(b, raw); break;
	case DW_EH_PE_sleb128: put_sleb(b, (int64_t)raw); break;
	case DW_EH_PE_udata2: case DW_EH_PE_sdata2: put_uN(b, raw, 2); break;
	case DW_EH_PE_udata4: case DW_EH_PE_sdata4: put_uN(b, raw, 4); break;
	case DW_EH_PE_udata8: case DW_EH_PE_sdata8: put_uN(b, raw, 8); break;
	default: abort();
	}
}

/* What a CIE holds. Zero fields take the defaults of put_cie. */
struct cie_spec {
	uint8_t version;                /* 0: 1 */
	bool is64;                      /* 64-bit DWARF length and id */
	const char *aug;                /* NULL: "" */
	const uint8_t *eh_data;         /* bytes right after the string (legacy "eh") */
	size_t eh_data_len;
	uint8_t addr_size, seg_size;    /* written for version 4 */
	uint64_t code_align;            /* 0: 1 */
	int64_t data_align;             /* 0: -8 */
	uint64_t ra;                    /* written as a ubyte for version 1 */
	const uint8_t *aug_data;        /* after a ULEB length, when aug starts with 'z' */
	size_t aug_data_len;
	const uint8_t *insns;
	size_t insns_len;
};

/* The section under construction. */
struct sec_builder {
	struct bb b;
	bool is_eh;
	uint64_t addr;
	uint8_t addr_size;
};

static size_t put_cie(struct sec_builder *s, const struct cie_spec *c)
{
	struct bb *b = &s->b;
	size_t at = open_entry(b, c->is64);
	if (s->is_eh)
		put_uN(b, 0, c->is64 ? 8 : 4);
	else
		put_uN(b, UINT64_MAX, c->is64 ? 8 : 4);
	uint8_t version = c->version ? c->version : 1;
	const char *aug = c->aug ? c->aug : "";
	put_u8(b, version);
	put_str(b, aug);
	put_bytes(b, c->eh_data, c->eh_data_len);
	if (version == 4) {
		put_u8(b, c->addr_size);
		put_u8(b, c->seg_size);
	}
	put_uleb(b, c->code_align ? c->code_align : 1);
	put_sleb(b, c->data_align ? c->data_align : -8);
	if (version == 1)
		put_u8(b, (uint8_t)c->ra);
	else
		put_uleb(b, c->ra);
	if (aug[0] == 'z') {
		put_uleb(b, c->aug_data_len);
		put_bytes(b, c->aug_data, c->aug_data_len);
	}
	put_bytes(b, c->insns, c->insns_len);
	close_entry(b, at, c->is64);
	return at;
}

struct fde_spec {
	size_t cie_off;
	bool is64;
	uint8_t enc;                    /* .eh_frame: the CIE's 'R' encoding */
	uint8_t addr_size, seg_size;    /* .debug_frame: 0 takes the section's */
	uint64_t pc_begin, pc_len;
	bool z;                         /* write augmentation data (CIE has 'z') */
	const uint8_t *aug;
	size_t aug_len;
	const uint8_t *insns;
	size_t insns_len;
};

static size_t put_fde(struct sec_builder *s, const struct fde_spec *f)
{
	struct bb *b = &s->b;
	size_t at = open_entry(b, f->is64);
	unsigned idw = f->is64 ? 8 : 4;
	uint8_t asz = f->addr_size ? f->addr_size : s->addr_size;
	if (s->is_eh) {
		put_uN(b, b->n - f->cie_off, idw);
		put_ptr(b, f->enc, f->pc_begin, s->addr, asz, 0);
		put_ptr(b, f->enc & 0x0f, f->pc_len, s->addr, asz, 0);
	} else {
		put_uN(b, f->cie_off, idw);
		put_uN(b, 0, f->seg_size);
		put_uN(b, f->pc_begin, asz);
		put_uN(b, f->pc_len, asz);
	}
	if (f->z) {
		put_uleb(b, f->aug_len);
		put_bytes(b, f->aug, f->aug_len);
	}
	put_bytes(b, f->insns, f->insns_len);
	close_entry(b, at, f->is64);
	return at;
}

static struct cfi_section sec_of(const struct sec_builder *s)
{
	struct cfi_section sec = {
		.data = s->b.d,
		.len = s->b.n,
		.addr = s->addr,
		.is_eh = s->is_eh,
		.addr_size = s->addr_size,
		.text_addr = 0x600000,
		.data_addr = 0x700000,
	};
	return sec;
}

static void sb_init(struct sec_builder *s, bool is_eh, uint64_t addr, uint8_t addr_size)
{
	memset(s, 0, sizeof(*s));
	s->is_eh = is_eh;
	s->addr = addr;
	s->addr_size = addr_size;
}

/* Fake target memory for DW_EH_PE_indirect: 64 bytes at MEM_BASE, byte i =
 * 0x80 + i. Records the last request. */
#define MEM_BASE 0x9000u
static uint8_t mem_bytes[64];
static uint64_t mem_last_addr;
static size_t mem_last_len;
static int mem_calls;

static int mem_read(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	mem_calls++;
	mem_last_addr = addr;
	mem_last_len = len;
	if (addr < MEM_BASE || addr - MEM_BASE > sizeof(mem_bytes) ||
	    len > sizeof(mem_bytes) - (addr - MEM_BASE))
		return BK_E_MEMORY;
	memcpy(dst, mem_bytes + (addr - MEM_BASE), len);
	return 0;
}

static int mem_fail(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx, (void)addr, (void)dst, (void)len;
	mem_calls++;
	return BK_E_MEMORY;
}

/* ---- DW_EH_PE pointer encodings (LSB 5.0 §10.5) --------------------------- */

#define PTR_SEC 0x10004u  /* 4-aligned, not 8-aligned: aligned cases see it */
#define PTR_TEXT 0x20000u
#define PTR_DATA 0x30000u
#define PTR_FUNC 0x40000u

struct ptr_case {
	const char *name;
	uint8_t enc;
	uint8_t addr_size;
	size_t at;              /* offset of the field in the section */
	uint8_t bytes[16];      /* the field, placed at AT; the section ends after it */
	size_t len;
	int err;
	uint64_t want;
	size_t used;            /* bytes consumed, alignment padding included */
};

#define PB(...) { __VA_ARGS__ }, sizeof((uint8_t[]){ __VA_ARGS__ })
#define POK(name, enc, asz, at, bytes, want, used) { name, enc, asz, at, PB bytes, 0, want, used }
#define PERR(name, enc, asz, at, bytes, err) { name, enc, asz, at, PB bytes, err, 0, 0 }

static const struct ptr_case ptr_cases[] = {
	/* Value formats, no base. */
	POK("absptr 8", DW_EH_PE_absptr, 8, 0, (0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11),
	    0x1122334455667788, 8),
	POK("absptr 4", DW_EH_PE_absptr, 4, 0, (0x78, 0x56, 0x34, 0x12), 0x12345678, 4),
	POK("absptr 4 high bit", DW_EH_PE_absptr, 4, 0, (0xff, 0xff, 0xff, 0xff), 0xffffffff, 4),
	POK("absptr 4 reads 4 of 8", DW_EH_PE_absptr, 4, 0, (1, 2, 3, 4, 5, 6, 7, 8), 0x04030201, 4),
	POK("uleb128", DW_EH_PE_uleb128, 8, 0, (0xe5, 0x8e, 0x26), 624485, 3),
	POK("uleb128 max", DW_EH_PE_uleb128, 8, 0,
	    (0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), UINT64_MAX, 10),
	POK("uleb128 addr4 masked", DW_EH_PE_uleb128, 4, 0, (0x80, 0x80, 0x80, 0x80, 0x10), 0, 5),
	POK("udata2", DW_EH_PE_udata2, 8, 0, (0xfe, 0xff), 0xfffe, 2),
	POK("udata4", DW_EH_PE_udata4, 8, 0, (0x78, 0x56, 0x34, 0xf2), 0xf2345678, 4),
	POK("udata8", DW_EH_PE_udata8, 8, 0, (1, 2, 3, 4, 5, 6, 7, 0x88), 0x8807060504030201, 8),
	POK("udata8 addr4 masked", DW_EH_PE_udata8, 4, 0, (1, 2, 3, 4, 5, 6, 7, 0x88), 0x04030201,
	    8),
	POK("sleb128 -1", DW_EH_PE_sleb128, 8, 0, (0x7f), UINT64_MAX, 1),
	POK("sleb128 -123456", DW_EH_PE_sleb128, 8, 0, (0xc0, 0xbb, 0x78), (uint64_t)-123456, 3),
	POK("sleb128 -1 addr4", DW_EH_PE_sleb128, 4, 0, (0x7f), 0xffffffff, 1),
	POK("sdata2", DW_EH_PE_sdata2, 8, 0, (0xfe, 0xff), (uint64_t)-2, 2),
	POK("sdata2 positive", DW_EH_PE_sdata2, 8, 0, (0xff, 0x7f), 0x7fff, 2),
	POK("sdata4", DW_EH_PE_sdata4, 8, 0, (0xfe, 0xff, 0xff, 0xff), (uint64_t)-2, 4),
	POK("sdata4 addr4", DW_EH_PE_sdata4, 4, 0, (0xfe, 0xff, 0xff, 0xff), 0xfffffffe, 4),
	POK("sdata8", DW_EH_PE_sdata8, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0x80), (uint64_t)INT64_MIN, 8),

	/* Bases. pcrel is the address of the field itself. */
	POK("pcrel|sdata4 at 0", DW_EH_PE_pcrel | DW_EH_PE_sdata4, 8, 0, (0x10, 0, 0, 0),
	    PTR_SEC + 0x10, 4),
	POK("pcrel|sdata4 at 6 negative", DW_EH_PE_pcrel | DW_EH_PE_sdata4, 8, 6,
	    (0xf0, 0xff, 0xff, 0xff), PTR_SEC + 6 - 0x10, 4),
	POK("pcrel|udata2 at 3", DW_EH_PE_pcrel | DW_EH_PE_udata2, 8, 3, (0x00, 0x01),
	    PTR_SEC + 3 + 0x100, 2),
	POK("pcrel|sleb128", DW_EH_PE_pcrel | DW_EH_PE_sleb128, 8, 2, (0x7c), PTR_SEC + 2 - 4, 1),
	POK("pcrel|absptr 8", DW_EH_PE_pcrel, 8, 1, (0x08, 0, 0, 0, 0, 0, 0, 0), PTR_SEC + 1 + 8, 8),
	POK("pcrel|sdata4 addr4 wraps", DW_EH_PE_pcrel | DW_EH_PE_sdata4, 4, 0,
	    (0x00, 0x00, 0xfe, 0xff), (PTR_SEC - 0x20000) & 0xffffffffu, 4),
	POK("pcrel|sdata8 wraps", DW_EH_PE_pcrel | DW_EH_PE_sdata8, 8, 0,
	    (0, 0, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff), (uint64_t)PTR_SEC - 0x20000, 8),
	POK("textrel|udata4", DW_EH_PE_textrel | DW_EH_PE_udata4, 8, 0, (0x34, 0x12, 0, 0),
	    PTR_TEXT + 0x1234, 4),
	POK("datarel|sdata4", DW_EH_PE_datarel | DW_EH_PE_sdata4, 8, 0, (0xfc, 0xff, 0xff, 0xff),
	    PTR_DATA - 4, 4),
	POK("datarel|udata2", DW_EH_PE_datarel | DW_EH_PE_udata2, 8, 5, (0x10, 0x00),
	    PTR_DATA + 0x10, 2),
	POK("funcrel|uleb128", DW_EH_PE_funcrel | DW_EH_PE_uleb128, 8, 0, (0x80, 0x01),
	    PTR_FUNC + 0x80, 2),
	POK("funcrel|sdata2", DW_EH_PE_funcrel | DW_EH_PE_sdata2, 8, 0, (0xff, 0xff), PTR_FUNC - 1,
	    2),
	POK("signed|pcrel|sdata4 (0x1b)", 0x1b, 8, 0, (0x00, 0x10, 0, 0), PTR_SEC + 0x1000, 4),

	/* aligned: an absptr at the next address_size boundary of the field's
	 * address (not of its offset: PTR_SEC is only 4-aligned). */
	POK("aligned 8 at offset 0 (address +4)", DW_EH_PE_aligned, 8, 0,
	    (0xaa, 0xaa, 0xaa, 0xaa, 1, 2, 3, 4, 5, 6, 7, 8), 0x0807060504030201, 12),
	POK("aligned 8 at offset 4 (aligned)", DW_EH_PE_aligned, 8, 4, (1, 2, 3, 4, 5, 6, 7, 8),
	    0x0807060504030201, 8),
	POK("aligned 8 at offset 1", DW_EH_PE_aligned, 8, 1,
	    (0xaa, 0xaa, 0xaa, 1, 2, 3, 4, 5, 6, 7, 8), 0x0807060504030201, 11),
	POK("aligned 4 at offset 0 (aligned)", DW_EH_PE_aligned, 4, 0, (1, 2, 3, 4), 0x04030201, 4),
	POK("aligned 4 at offset 1", DW_EH_PE_aligned, 4, 1, (0xaa, 0xaa, 0xaa, 1, 2, 3, 4),
	    0x04030201, 7),
	POK("aligned 4 at offset 3", DW_EH_PE_aligned, 4, 3, (0xaa, 1, 2, 3, 4), 0x04030201, 5),
	PERR("aligned with udata4", DW_EH_PE_aligned | DW_EH_PE_udata4, 8, 4, (1, 2, 3, 4),
	     BK_E_UNSUPPORTED),
	PERR("aligned padding truncated", DW_EH_PE_aligned, 8, 1, (0xaa, 0xaa),
	     BK_E_CORRUPT),
	PERR("aligned value truncated", DW_EH_PE_aligned, 8, 1, (0xaa, 0xaa, 0xaa, 1, 2, 3, 4),
	     BK_E_CORRUPT),

	/* Unknown value formats and applications. */
	PERR("format 0x05", 0x05, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("format 0x06", 0x06, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("format 0x07", 0x07, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("format 0x08 (signed alone)", 0x08, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("format 0x0d", 0x0d, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("format 0x0e", 0x0e, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("format 0x0f", 0x0f, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("pcrel|0x0d", DW_EH_PE_pcrel | 0x0d, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("application 0x60", 0x60 | DW_EH_PE_udata4, 8, 0, (0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("application 0x70", 0x70 | DW_EH_PE_udata4, 8, 0, (0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("application 0x60 absptr", 0x60, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),
	PERR("0x7f", 0x7f, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_UNSUPPORTED),

	/* Truncation. */
	PERR("absptr 8 of 7", DW_EH_PE_absptr, 8, 0, (1, 2, 3, 4, 5, 6, 7), BK_E_CORRUPT),
	PERR("absptr 4 of 3", DW_EH_PE_absptr, 4, 0, (1, 2, 3), BK_E_CORRUPT),
	PERR("udata2 of 1", DW_EH_PE_udata2, 8, 0, (1), BK_E_CORRUPT),
	PERR("udata4 of 3", DW_EH_PE_udata4, 8, 0, (1, 2, 3), BK_E_CORRUPT),
	PERR("udata8 of 7", DW_EH_PE_udata8, 8, 0, (1, 2, 3, 4, 5, 6, 7), BK_E_CORRUPT),
	PERR("sdata2 of 1", DW_EH_PE_sdata2, 8, 0, (1), BK_E_CORRUPT),
	PERR("sdata4 of 2", DW_EH_PE_sdata4, 8, 2, (1, 2), BK_E_CORRUPT),
	PERR("sdata8 of 4", DW_EH_PE_sdata8, 8, 0, (1, 2, 3, 4), BK_E_CORRUPT),
	PERR("pcrel|sdata4 of 3", DW_EH_PE_pcrel | DW_EH_PE_sdata4, 8, 0, (1, 2, 3), BK_E_CORRUPT),
	PERR("uleb128 truncated", DW_EH_PE_uleb128, 8, 0, (0x80, 0x80), BK_E_CORRUPT),
	PERR("sleb128 truncated", DW_EH_PE_sleb128, 8, 0, (0xff), BK_E_CORRUPT),
	PERR("uleb128 overflow", DW_EH_PE_uleb128, 8, 0,
	     (0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), BK_E_CORRUPT),
	/* Truncation is found before the application is looked at. */
	PERR("application 0x60 truncated", 0x60 | DW_EH_PE_udata4, 8, 0, (0, 0), BK_E_CORRUPT),

	/* omit is not a pointer. */
	PERR("omit", DW_EH_PE_omit, 8, 0, (0, 0, 0, 0, 0, 0, 0, 0), BK_E_INVAL),
};

static struct base_ptr_ctx ptr_ctx_at(const uint8_t *sec_data, uint8_t addr_size,
				     const struct base_mem *mem)
{
	struct base_ptr_ctx c = {
		.sec_data = sec_data,
		.sec_addr = PTR_SEC,
		.text_addr = PTR_TEXT,
		.data_addr = PTR_DATA,
		.func_addr = PTR_FUNC,
		.addr_size = addr_size,
		.mem = mem,
	};
	return c;
}

static void test_pointer_rows(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(ptr_cases); i++) {
		const struct ptr_case *c = &ptr_cases[i];
		uint8_t data[32];
		memset(data, 0x5a, sizeof(data));
		memcpy(data + c->at, c->bytes, c->len);
		struct buf b = buf_make(data + c->at, c->len);
		struct base_ptr_ctx ctx = ptr_ctx_at(data, c->addr_size, NULL);
		uint64_t v = 0xdeadbeef;
		int err = base_read_pointer(&b, c->enc, &ctx, &v);
		CHECK_INT(err, c->err, c->name);
		if (c->err) {
			CHECK(b.p == data + c->at, "%s: reader moved on error", c->name);
			CHECK_U64(v, 0xdeadbeef, c->name);
		} else {
			CHECK_U64(v, c->want, c->name);
			CHECK_INT(b.p - (data + c->at), c->used, c->name);
		}
	}
}

static void test_pointer_indirect(void)
{
	uint8_t data[16] = { 0 };
	struct base_mem mem = { mem_read, NULL };
	struct base_mem bad = { mem_fail, NULL };
	uint64_t v;

	/* indirect|udata4: the value read is the address of the pointer. */
	memcpy(data, (uint8_t[]){ U32(MEM_BASE + 8) }, 4);
	struct buf b = buf_make(data, 4);
	struct base_ptr_ctx ctx = ptr_ctx_at(data, 8, &mem);
	mem_calls = 0;
	CHECK_INT(base_read_pointer(&b, DW_EH_PE_indirect | DW_EH_PE_udata4, &ctx, &v), 0,
		  "indirect udata4");
	CHECK_U64(v, 0x8f8e8d8c8b8a8988, "indirect udata4");
	CHECK_U64(mem_last_addr, MEM_BASE + 8, "indirect udata4 address");
	CHECK_INT(mem_last_len, 8, "indirect udata4 reads address_size");
	CHECK_INT(mem_calls, 1, "indirect udata4 one read");
	CHECK(b.p == data + 4, "indirect udata4 consumed 4");

	/* addr_size 4: four bytes are read and the result is 32 bits. */
	b = buf_make(data, 4);
	ctx = ptr_ctx_at(data, 4, &mem);
	CHECK_INT(base_read_pointer(&b, DW_EH_PE_indirect | DW_EH_PE_udata4, &ctx, &v), 0,
		  "indirect addr4");
	CHECK_U64(v, 0x8b8a8988, "indirect addr4");
	CHECK_INT(mem_last_len, 4, "indirect addr4 reads 4");

	/* indirect|pcrel|sdata4 (0x9b), the usual personality encoding: the
	 * slot is at field address + offset. Field at offset 4 of PTR_SEC. */
	uint64_t slot = MEM_BASE + 16;
	int32_t rel = (int32_t)(slot - (PTR_SEC + 4));
	memcpy(data + 4, (uint8_t[]){ U32((uint32_t)rel) }, 4);
	b = buf_make(data + 4, 4);
	ctx = ptr_ctx_at(data, 8, &mem);
	CHECK_INT(base_read_pointer(&b, 0x9b, &ctx, &v), 0, "indirect pcrel");
	CHECK_U64(mem_last_addr, slot, "indirect pcrel slot");
	CHECK_U64(v, 0x9796959493929190, "indirect pcrel value");

	/* A failing read is BK_E_MEMORY and leaves the reader in place. */
	b = buf_make(data, 4);
	ctx = ptr_ctx_at(data, 8, &bad);
	mem_calls = 0;
	CHECK_INT(base_read_pointer(&b, DW_EH_PE_indirect | DW_EH_PE_udata4, &ctx, &v),
		  BK_E_MEMORY, "indirect read fails");
	CHECK_INT(mem_calls, 1, "indirect read fails: asked once");
	CHECK(b.p == data, "indirect read fails: reader unchanged");

	/* Outside the fake memory: the callback's own BK_E_MEMORY. */
	memcpy(data, (uint8_t[]){ U32(0x100) }, 4);
	b = buf_make(data, 4);
	ctx = ptr_ctx_at(data, 8, &mem);
	CHECK_INT(base_read_pointer(&b, DW_EH_PE_indirect | DW_EH_PE_udata4, &ctx, &v),
		  BK_E_MEMORY, "indirect unmapped");

	/* No callback at all, or an empty one. */
	b = buf_make(data, 4);
	ctx = ptr_ctx_at(data, 8, NULL);
	CHECK_INT(base_read_pointer(&b, DW_EH_PE_indirect | DW_EH_PE_udata4, &ctx, &v),
		  BK_E_MEMORY, "indirect without mem");
	struct base_mem empty = { NULL, NULL };
	ctx = ptr_ctx_at(data, 8, &empty);
	CHECK_INT(base_read_pointer(&b, DW_EH_PE_indirect | DW_EH_PE_udata4, &ctx, &v),
		  BK_E_MEMORY, "indirect with empty mem");
}

/* ---- Entry framing ------------------------------------------------------- */

static void test_entry_framing(void)
{
	struct sec_builder s;
	struct cfi_section sec;
	struct cfi_entry e;

	/* .eh_frame: CIE at 0, FDE after it, then a terminator. */
	sb_init(&s, true, 0x4000, 8);
	size_t cie = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata4),
						     .ra = 16 });
	size_t fde = put_fde(&s, &(struct fde_spec){ .cie_off = cie, .enc = DW_EH_PE_udata4,
						     .pc_begin = 0x1000, .pc_len = 0x10, .z = true });
	size_t term = s.b.n;
	put_uN(&s.b, 0, 4);
	sec = sec_of(&s);

	CHECK_INT(cfi_entry_at(&sec, cie, &e), 0, "eh CIE");
	CHECK_INT(e.kind, CFI_ENTRY_CIE, "eh CIE kind");
	CHECK_U64(e.off, cie, "eh CIE off");
	CHECK_U64(e.next_off, fde, "eh CIE next_off");
	CHECK_U64(e.cie_off, cie, "eh CIE cie_off");
	CHECK(!e.offset64, "eh CIE 32-bit");
	CHECK(e.body == sec.data + 8, "eh CIE body after the id");
	CHECK(e.end == sec.data + fde, "eh CIE end");

	CHECK_INT(cfi_entry_at(&sec, fde, &e), 0, "eh FDE");
	CHECK_INT(e.kind, CFI_ENTRY_FDE, "eh FDE kind");
	CHECK_U64(e.cie_off, cie, "eh FDE names its CIE");
	CHECK_U64(e.next_off, term, "eh FDE next_off");
	CHECK(e.body == sec.data + fde + 8, "eh FDE body");

	CHECK_INT(cfi_entry_at(&sec, term, &e), 0, "terminator");
	CHECK_INT(e.kind, CFI_ENTRY_TERMINATOR, "terminator kind");
	CHECK_U64(e.next_off, term + 4, "terminator next_off");
	CHECK(e.body == e.end, "terminator is empty");

	CHECK_INT(cfi_entry_at(&sec, sec.len, &e), BK_E_CORRUPT, "offset at the end");
	CHECK_INT(cfi_entry_at(&sec, sec.len + 100, &e), BK_E_CORRUPT, "offset past the end");

	/* .debug_frame, 32-bit: CIE id all ones, FDE CIE pointer absolute. */
	sb_init(&s, false, 0, 8);
	put_uN(&s.b, 0, 4); /* a terminator first: the CIE is not at 0 */
	cie = put_cie(&s, &(struct cie_spec){ .version = 3, .ra = 16 });
	fde = put_fde(&s, &(struct fde_spec){ .cie_off = cie, .pc_begin = 0x1000, .pc_len = 8 });
	sec = sec_of(&s);
	CHECK_INT(cfi_entry_at(&sec, cie, &e), 0, "debug CIE");
	CHECK_INT(e.kind, CFI_ENTRY_CIE, "debug CIE kind");
	CHECK_INT(cfi_entry_at(&sec, fde, &e), 0, "debug FDE");
	CHECK_INT(e.kind, CFI_ENTRY_FDE, "debug FDE kind");
	CHECK_U64(e.cie_off, 4, "debug FDE absolute CIE pointer");

	/* .debug_frame, 64-bit: length 0xffffffff + u64, 8-byte CIE id. */
	sb_init(&s, false, 0, 8);
	cie = put_cie(&s, &(struct cie_spec){ .version = 4, .is64 = true, .addr_size = 8,
					      .ra = 16 });
	fde = put_fde(&s, &(struct fde_spec){ .cie_off = cie, .is64 = true, .pc_begin = 0x1000,
					      .pc_len = 8 });
	sec = sec_of(&s);
	CHECK_INT(cfi_entry_at(&sec, cie, &e), 0, "debug64 CIE");
	CHECK_INT(e.kind, CFI_ENTRY_CIE, "debug64 CIE kind");
	CHECK(e.offset64, "debug64 CIE offset64");
	CHECK(e.body == sec.data + 20, "debug64 CIE body after 12 + 8");
	CHECK_U64(e.next_off, fde, "debug64 CIE next_off");
	CHECK_INT(cfi_entry_at(&sec, fde, &e), 0, "debug64 FDE");
	CHECK_INT(e.kind, CFI_ENTRY_FDE, "debug64 FDE kind");
	CHECK_U64(e.cie_off, cie, "debug64 FDE CIE pointer");
	CHECK_U64(e.next_off, sec.len, "debug64 FDE next_off");

	/* In 64-bit DWARF a 32-bit all-ones id is a CIE pointer (out of range). */
	sb_init(&s, false, 0, 8);
	size_t at = open_entry(&s.b, true);
	put_uN(&s.b, 0xffffffffu, 8);
	put_u8(&s.b, 1);
	close_entry(&s.b, at, true);
	sec = sec_of(&s);
	CHECK_INT(cfi_entry_at(&sec, 0, &e), BK_E_CORRUPT, "debug64 id 0xffffffff is a pointer");
}

/* Raw sections that fail framing, each at offset 0. */
struct frame_case {
	const char *name;
	bool is_eh;
	const uint8_t *bytes;
	size_t len;
	uint64_t off;
	int err;
};

static const struct frame_case frame_cases[] = {
	{ "empty section", true, (const uint8_t[1]){ 0 }, 0, 0, BK_E_CORRUPT },
	{ "truncated length", true, B(0x08, 0x00), 0, BK_E_CORRUPT },
	{ "truncated length 3", false, B(0x08, 0x00, 0x00), 0, BK_E_CORRUPT },
	{ "length past the end", true, B(U32(9), U32(0), 1, 0, 1, 0x78), 0, BK_E_CORRUPT },
	{ "length past the end by 1", false, B(U32(5), U32(0xffffffff)), 0, BK_E_CORRUPT },
	{ "reserved length 0xfffffff0", true, B(U32(0xfffffff0), U32(0), 0, 0, 0, 0), 0,
	  BK_E_CORRUPT },
	{ "reserved length 0xfffffffe", false, B(U32(0xfffffffe), U32(0), 0, 0, 0, 0), 0,
	  BK_E_CORRUPT },
	{ "64-bit length truncated", false, B(U32(0xffffffff), U32(4)), 0, BK_E_CORRUPT },
	{ "64-bit length past the end", false, B(U32(0xffffffff), U64(9), U64(UINT64_MAX)), 0,
	  BK_E_CORRUPT },
	{ "64-bit length huge", false, B(U32(0xffffffff), U64(UINT64_MAX), 0), 0, BK_E_CORRUPT },
	{ "truncated CIE id", true, B(U32(3), 0, 0, 0), 0, BK_E_CORRUPT },
	{ "truncated CIE id, debug", false, B(U32(2), 0xff, 0xff), 0, BK_E_CORRUPT },
	{ "truncated 64-bit CIE id", false, B(U32(0xffffffff), U64(4), U32(0xffffffff)), 0,
	  BK_E_CORRUPT },
	/* .eh_frame CIE pointers count back from their own field (at 4). */
	{ "eh CIE pointer before the section", true, B(U32(4), U32(5)), 0, BK_E_CORRUPT },
	{ "debug CIE pointer past the section", false, B(U32(4), U32(8)), 0, BK_E_CORRUPT },
	{ "debug CIE pointer far past", false, B(U32(4), U32(0x7fffffff)), 0, BK_E_CORRUPT },
};

static void test_frame_rows(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(frame_cases); i++) {
		const struct frame_case *c = &frame_cases[i];
		struct cfi_section sec = { .data = c->bytes, .len = c->len, .is_eh = c->is_eh,
					   .addr_size = 8 };
		struct cfi_entry e;
		CHECK_INT(cfi_entry_at(&sec, c->off, &e), c->err, c->name);
	}

	/* A CIE pointer of exactly its own offset names offset 0. */
	const uint8_t self[] = { U32(4), U32(4) };
	struct cfi_section sec = { .data = self, .len = sizeof(self), .is_eh = true,
				   .addr_size = 8 };
	struct cfi_entry e;
	CHECK_INT(cfi_entry_at(&sec, 0, &e), 0, "eh CIE pointer to offset 0");
	CHECK_INT(e.kind, CFI_ENTRY_FDE, "eh CIE pointer to offset 0: FDE");
	CHECK_U64(e.cie_off, 0, "eh CIE pointer to offset 0");
}


/* ---- CIE decoding and augmentations (DWARF 5 §6.4.1, LSB 5.0 §10.6.1.1) --- */

struct cie_case {
	const char *name;
	bool is_eh;
	uint8_t sec_addr_size;
	struct cie_spec spec;
	int err;
	/* On success: */
	uint8_t version;
	bool has_z, signal_frame, has_b_key, mte_tagged;
	uint8_t fde_enc, lsda_enc, personality_enc;
	uint64_t personality, eh_data;
	uint8_t addr_size, segment_size;
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra;
};

#define CIE_OK(name, is_eh, asz, spec, ...) { name, is_eh, asz, spec, 0, __VA_ARGS__ }
#define CIE_ERR(name_, is_eh_, asz, spec_, err_) \
	{ .name = name_, .is_eh = is_eh_, .sec_addr_size = asz, .spec = spec_, .err = err_ }
#define OMIT DW_EH_PE_omit

static const struct cie_case cie_cases[] = {
	/* version has_z S B G fde lsda pers personality eh_data asz ssz code data ra */
	CIE_OK("empty augmentation v1", true, 8, ((struct cie_spec){ .ra = 16 }),
	       1, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	/* 200 as a ubyte; as a ULEB it would be an unfinished byte. */
	CIE_OK("v1 ubyte RA 200", false, 8, ((struct cie_spec){ .ra = 200, .insns = B(0) }),
	       1, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 200),
	CIE_OK("v3 ULEB RA 200", false, 8, ((struct cie_spec){ .version = 3, .ra = 200 }),
	       3, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 200),
	CIE_OK("v3 RA 0xffff", false, 8, ((struct cie_spec){ .version = 3, .ra = 0xffff }),
	       3, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8,
	       0xffff),
	CIE_OK("v4 address_size 4", false, 8,
	       ((struct cie_spec){ .version = 4, .addr_size = 4, .code_align = 4, .data_align = -4,
				   .ra = 30 }),
	       4, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 4, 0, 4, -4, 30),
	CIE_OK("v4 segment selector 2", false, 4,
	       ((struct cie_spec){ .version = 4, .addr_size = 8, .seg_size = 2, .ra = 16 }),
	       4, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 2, 1, -8, 16),
	CIE_OK("v4 64-bit DWARF", false, 8,
	       ((struct cie_spec){ .version = 4, .is64 = true, .addr_size = 8, .ra = 16 }),
	       4, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("code_align 4, data_align 4", true, 8,
	       ((struct cie_spec){ .code_align = 4, .data_align = 4, .ra = 16 }),
	       1, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 4, 4, 16),
	CIE_OK("z, no data", true, 8, ((struct cie_spec){ .aug = "z", .ra = 16 }),
	       1, true, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zR", true, 8, ((struct cie_spec){ .aug = "zR", .aug_data = B(0x1b), .ra = 16 }),
	       1, true, false, false, false, 0x1b, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zR udata8", true, 8,
	       ((struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata8), .ra = 16 }),
	       1, true, false, false, false, DW_EH_PE_udata8, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	/* Augmentation data longer than its letters need: the rest is skipped. */
	CIE_OK("zR with spare data", true, 8,
	       ((struct cie_spec){ .aug = "zR", .aug_data = B(0x1b, 0xee, 0xee), .ra = 16 }),
	       1, true, false, false, false, 0x1b, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zPLR udata4 personality", true, 8,
	       ((struct cie_spec){ .version = 3, .aug = "zPLR",
				   .aug_data = B(DW_EH_PE_udata4, U32(0x12345678), 0x1b, 0x1b),
				   .ra = 16 }),
	       3, true, false, false, false, 0x1b, 0x1b, DW_EH_PE_udata4, 0x12345678, 0, 8, 0, 1,
	       -8, 16),
	CIE_OK("zPR udata8 personality", true, 8,
	       ((struct cie_spec){ .aug = "zPR",
				   .aug_data = B(DW_EH_PE_udata8, U64(0x1122334455667788), 0x03),
				   .ra = 16 }),
	       1, true, false, false, false, 0x03, OMIT, DW_EH_PE_udata8, 0x1122334455667788, 0, 8,
	       0, 1, -8, 16),
	CIE_OK("zP omit personality", true, 8,
	       ((struct cie_spec){ .aug = "zP", .aug_data = B(OMIT), .ra = 16 }),
	       1, true, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zL omit", true, 8, ((struct cie_spec){ .aug = "zL", .aug_data = B(OMIT), .ra = 16 }),
	       1, true, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zL aligned", true, 8,
	       ((struct cie_spec){ .aug = "zL", .aug_data = B(DW_EH_PE_aligned), .ra = 16 }),
	       1, true, false, false, false, DW_EH_PE_absptr, DW_EH_PE_aligned, OMIT, 0, 0, 8, 0, 1,
	       -8, 16),
	CIE_OK("zS signal frame", true, 8, ((struct cie_spec){ .aug = "zS", .ra = 16 }),
	       1, true, true, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zRS", true, 8, ((struct cie_spec){ .aug = "zRS", .aug_data = B(0x1b), .ra = 16 }),
	       1, true, true, false, false, 0x1b, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 16),
	CIE_OK("zRB (AArch64 B key)", true, 8,
	       ((struct cie_spec){ .aug = "zRB", .aug_data = B(0x1b), .code_align = 4,
				   .data_align = -8, .ra = 30 }),
	       1, true, false, true, false, 0x1b, OMIT, OMIT, 0, 0, 8, 0, 4, -8, 30),
	CIE_OK("zRG (AArch64 MTE)", true, 8,
	       ((struct cie_spec){ .aug = "zRG", .aug_data = B(0x1b), .ra = 30 }),
	       1, true, false, false, true, 0x1b, OMIT, OMIT, 0, 0, 8, 0, 1, -8, 30),
	CIE_OK("zPLRSBG", true, 8,
	       ((struct cie_spec){ .aug = "zPLRSBG",
				   .aug_data = B(DW_EH_PE_udata2, U16(0x4321), 0x1b, 0x1b),
				   .ra = 30 }),
	       1, true, true, true, true, 0x1b, 0x1b, DW_EH_PE_udata2, 0x4321, 0, 8, 0, 1, -8, 30),
	/* Legacy g++ 2: an address-sized pointer right after the string. */
	CIE_OK("eh, address size 8", true, 8,
	       ((struct cie_spec){ .aug = "eh", .eh_data = B(U64(0x1122334455667788)), .ra = 16 }),
	       1, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0x1122334455667788,
	       8, 0, 1, -8, 16),
	CIE_OK("eh, address size 4", true, 4,
	       ((struct cie_spec){ .aug = "eh", .eh_data = B(U32(0x8048000)), .code_align = 1,
				   .data_align = -4, .ra = 8 }),
	       1, false, false, false, false, DW_EH_PE_absptr, OMIT, OMIT, 0, 0x8048000, 4, 0, 1, -4,
	       8),

	/* Errors. */
	CIE_ERR("version 2", false, 8, ((struct cie_spec){ .version = 2, .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("version 5", false, 8, ((struct cie_spec){ .version = 5, .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("version 255", true, 8, ((struct cie_spec){ .version = 255, .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("v4 address_size 2", false, 8,
		((struct cie_spec){ .version = 4, .addr_size = 2, .ra = 16 }), BK_E_UNSUPPORTED),
	CIE_ERR("v4 address_size 0", false, 8,
		((struct cie_spec){ .version = 4, .addr_size = 0, .ra = 16 }), BK_E_UNSUPPORTED),
	CIE_ERR("v4 segment selector 9", false, 8,
		((struct cie_spec){ .version = 4, .addr_size = 8, .seg_size = 9, .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("RA 0x10000", false, 8, ((struct cie_spec){ .version = 3, .ra = 0x10000 }),
		BK_E_BAD_REG),
	CIE_ERR("unknown augmentation y", true, 8, ((struct cie_spec){ .aug = "y", .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("unknown letter after z", true, 8,
		((struct cie_spec){ .aug = "zRX", .aug_data = B(0x1b), .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("R not first after z", true, 8,
		((struct cie_spec){ .aug = "zx", .ra = 16 }), BK_E_UNSUPPORTED),
	CIE_ERR("eh followed by z", true, 8,
		((struct cie_spec){ .aug = "ehz", .eh_data = B(U64(0)), .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("eh pointer truncated", true, 8,
		((struct cie_spec){ .aug = "eh", .eh_data = B(1, 2, 3) }), BK_E_CORRUPT),
	CIE_ERR("R omit", true, 8, ((struct cie_spec){ .aug = "zR", .aug_data = B(OMIT), .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("R format 0x0d", true, 8,
		((struct cie_spec){ .aug = "zR", .aug_data = B(0x0d), .ra = 16 }), BK_E_UNSUPPORTED),
	CIE_ERR("L format 0x05", true, 8,
		((struct cie_spec){ .aug = "zL", .aug_data = B(0x05), .ra = 16 }), BK_E_UNSUPPORTED),
	CIE_ERR("P format 0x0d", true, 8,
		((struct cie_spec){ .aug = "zP", .aug_data = B(0x0d, 0, 0, 0, 0), .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("P application 0x70", true, 8,
		((struct cie_spec){ .aug = "zP", .aug_data = B(0x73, 0, 0, 0, 0), .ra = 16 }),
		BK_E_UNSUPPORTED),
	CIE_ERR("P pointer past the augmentation data", true, 8,
		((struct cie_spec){ .aug = "zP", .aug_data = B(DW_EH_PE_udata4, 1, 2), .ra = 16,
				    .insns = B(0, 0, 0, 0) }),
		BK_E_CORRUPT),
	CIE_ERR("R byte missing", true, 8, ((struct cie_spec){ .aug = "zR", .ra = 16 }),
		BK_E_CORRUPT),
	CIE_ERR("L byte missing", true, 8,
		((struct cie_spec){ .aug = "zRL", .aug_data = B(0x1b), .ra = 16 }), BK_E_CORRUPT),
};

static void check_cie(const struct cie_case *c, const struct cfi_cie *cie)
{
	const char *n = c->name;
	CHECK_INT(cie->version, c->version, n);
	CHECK_STR(cie->augmentation, c->spec.aug ? c->spec.aug : "", n);
	CHECK_INT(cie->has_z, c->has_z, n);
	CHECK_INT(cie->signal_frame, c->signal_frame, n);
	CHECK_INT(cie->has_b_key, c->has_b_key, n);
	CHECK_INT(cie->mte_tagged, c->mte_tagged, n);
	CHECK_INT(cie->fde_enc, c->fde_enc, n);
	CHECK_INT(cie->lsda_enc, c->lsda_enc, n);
	CHECK_INT(cie->personality_enc, c->personality_enc, n);
	CHECK_U64(cie->personality, c->personality, n);
	CHECK_U64(cie->eh_data, c->eh_data, n);
	CHECK_INT(cie->addr_size, c->addr_size, n);
	CHECK_INT(cie->segment_size, c->segment_size, n);
	CHECK_U64(cie->code_align, c->code_align, n);
	CHECK_INT(cie->data_align, c->data_align, n);
	CHECK_U64(cie->ra_reg, c->ra, n);
	CHECK_INT(cie->offset64, c->spec.is64, n);
	CHECK_INT(cie->insns_end - cie->insns, c->spec.insns_len, n);
	if (c->spec.insns_len)
		CHECK(memcmp(cie->insns, c->spec.insns, c->spec.insns_len) == 0,
		      "%s: initial instructions", n);
}

static void test_cie_rows(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(cie_cases); i++) {
		const struct cie_case *c = &cie_cases[i];
		struct sec_builder s;
		sb_init(&s, c->is_eh, 0x4000, c->sec_addr_size);
		put_u8(&s.b, 0xcc); /* the CIE is not at offset 0 */
		put_u8(&s.b, 0xcc);
		size_t off = put_cie(&s, &c->spec);
		struct cfi_section sec = sec_of(&s);
		struct cfi_cie cie;
		CHECK_INT(cfi_decode_cie(&sec, off, &cie), c->err, c->name);
		if (c->err)
			continue;
		CHECK_U64(cie.off, off, c->name);
		CHECK_U64(cie.end_off, sec.len, c->name);
		check_cie(c, &cie);
	}
}

/* Raw CIEs in .eh_frame at offset 0, malformed below the framing. */
struct raw_case {
	const char *name;
	const uint8_t *bytes;
	size_t len;
	int err;
};

static const struct raw_case raw_cie_cases[] = {
	{ "version missing", B(U32(4), U32(0)), BK_E_CORRUPT },
	{ "augmentation without NUL", B(U32(7), U32(0), 1, 'z', 'R'), BK_E_CORRUPT },
	{ "code_align missing", B(U32(6), U32(0), 1, 0), BK_E_CORRUPT },
	{ "code_align ULEB truncated", B(U32(7), U32(0), 1, 0, 0x81), BK_E_CORRUPT },
	{ "code_align 11-byte ULEB overflow",
	  B(U32(19), U32(0), 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
	    0x78, 16), BK_E_CORRUPT },
	{ "data_align SLEB truncated", B(U32(8), U32(0), 1, 0, 1, 0x80), BK_E_CORRUPT },
	{ "data_align SLEB overflow",
	  B(U32(18), U32(0), 1, 0, 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
	    16), BK_E_CORRUPT },
	{ "v1 RA missing", B(U32(8), U32(0), 1, 0, 1, 0x78), BK_E_CORRUPT },
	{ "v3 RA ULEB truncated", B(U32(9), U32(0), 3, 0, 1, 0x78, 0x90), BK_E_CORRUPT },
	{ "v4 segment size missing", B(U32(7), U32(0), 4, 0, 8), BK_E_CORRUPT },
	{ "augmentation length missing", B(U32(10), U32(0), 1, 'z', 0, 1, 0x78, 16), BK_E_CORRUPT },
	{ "augmentation length past the entry",
	  B(U32(12), U32(0), 1, 'z', 'R', 0, 1, 0x78, 16, 5, 0x1b), BK_E_CORRUPT },
	/* A well-formed 11-byte ULEB (high bits zero) is accepted. */
	{ "code_align 11-byte ULEB, zero high bits",
	  B(U32(19), U32(0), 1, 0, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00,
	    0x78, 16), 0 },
};

static void test_raw_cies(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(raw_cie_cases); i++) {
		const struct raw_case *c = &raw_cie_cases[i];
		struct cfi_section sec = { .data = c->bytes, .len = c->len, .is_eh = true,
					   .addr_size = 8 };
		struct cfi_cie cie;
		CHECK_INT(cfi_decode_cie(&sec, 0, &cie), c->err, c->name);
		if (!c->err)
			CHECK_U64(cie.code_align, 1, c->name);
	}
}

/* Personality pointers: pcrel is taken from the field's own address, and an
 * indirect one is kept as the address of its slot without reading memory. */
static void test_cie_personality(void)
{
	struct sec_builder s;
	sb_init(&s, true, 0x4000, 8);
	/* Layout: length 0-3, id 4-7, version 8, "zPR\0" 9-12, code 13,
	 * data 14, RA 15, aug length 16, P encoding 17, pointer 18-21. */
	size_t off = put_cie(&s, &(struct cie_spec){
		.aug = "zPR", .aug_data = B(0x9b, U32(0x100), 0x1b), .ra = 16 });
	struct cfi_section sec = sec_of(&s);
	struct base_mem mem = { mem_read, NULL };
	sec.mem = mem;
	struct cfi_cie cie;
	mem_calls = 0;
	CHECK_INT(cfi_decode_cie(&sec, off, &cie), 0, "indirect personality");
	CHECK_INT(cie.personality_enc, 0x9b, "indirect personality encoding kept");
	CHECK_U64(cie.personality, 0x4000 + 18 + 0x100, "indirect personality slot address");
	CHECK_INT(mem_calls, 0, "indirect personality: no memory read");
	CHECK_INT(cie.fde_enc, 0x1b, "indirect personality: R after P");

	sb_init(&s, true, 0x4000, 8);
	off = put_cie(&s, &(struct cie_spec){
		.aug = "zP", .aug_data = B(0x1b, U32(0xfffffff0)), .ra = 16 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_cie(&sec, off, &cie), 0, "pcrel personality");
	/* "zP\0" is one byte shorter than "zPR\0": the pointer is at 17. */
	CHECK_U64(cie.personality, 0x4000 + 17 - 0x10, "pcrel personality negative");

	/* aligned personality: the pointer sits at the next 8-byte address. */
	sb_init(&s, true, 0x4000, 8);
	/* P encoding at 17 (address 0x4011): value at 0x4018. */
	off = put_cie(&s, &(struct cie_spec){
		.aug = "zPR", .aug_data = B(DW_EH_PE_aligned, 0, 0, 0, 0, 0, 0,
					    U64(0xabcdef), 0x1b), .ra = 16 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_cie(&sec, off, &cie), 0, "aligned personality");
	CHECK_U64(cie.personality, 0xabcdef, "aligned personality");
	CHECK_INT(cie.fde_enc, 0x1b, "aligned personality: R after the padding");

	/* Decoding a CIE at an FDE's offset is corrupt. */
	size_t fde = put_fde(&s, &(struct fde_spec){ .cie_off = off, .enc = 0x1b, .pc_begin = 0x1000,
						     .pc_len = 4, .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_cie(&sec, fde, &cie), BK_E_CORRUPT, "CIE at an FDE");
}

/* ---- FDE decoding ---------------------------------------------------------- */

static void test_fde_decode(void)
{
	struct sec_builder s;
	struct cfi_section sec;
	struct cfi_fde fde;
	struct cfi_cie cie;
	size_t c, f, f2;

	/* .eh_frame, pcrel|sdata4 addresses and a pcrel LSDA. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zLR", .aug_data = B(0x1b, 0x1b), .ra = 16,
					    .insns = B(DW_CFA_def_cfa, 7, 8) });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x1000,
					    .pc_len = 0x40, .z = true, .aug = B(U32(0x20)),
					    .insns = B(DW_CFA_nop, DW_CFA_nop) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "eh FDE");
	CHECK_U64(fde.off, f, "eh FDE off");
	CHECK_U64(fde.end_off, sec.len, "eh FDE end_off");
	CHECK_U64(fde.cie_off, c, "eh FDE cie_off");
	CHECK_U64(fde.pc_begin, 0x1000, "eh FDE pc_begin");
	CHECK_U64(fde.pc_end, 0x1040, "eh FDE pc_end");
	CHECK(fde.has_lsda, "eh FDE has an LSDA");
	/* The LSDA field is after length, pointer, begin, range, aug length. */
	CHECK_U64(fde.lsda, 0x4000 + f + 17 + 0x20, "eh FDE pcrel LSDA");
	CHECK_INT(fde.insns_end - fde.insns, 2, "eh FDE instructions");
	CHECK(fde.insns == sec.data + f + 21, "eh FDE instructions start");
	CHECK_INT(cie.lsda_enc, 0x1b, "eh FDE's CIE");
	CHECK_INT(cie.insns_end - cie.insns, 3, "eh FDE's CIE instructions");

	/* An LSDA of zero (absolute) is no LSDA; an indirect LSDA is kept as
	 * the address of its slot. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zLR",
					    .aug_data = B(DW_EH_PE_udata4, DW_EH_PE_udata4),
					    .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata4,
					    .pc_begin = 0x1000, .pc_len = 0x40, .z = true,
					    .aug = B(U32(0)) });
	size_t c2 = put_cie(&s, &(struct cie_spec){ .aug = "zLR",
					    .aug_data = B(DW_EH_PE_indirect | DW_EH_PE_udata4,
							  DW_EH_PE_udata4),
					    .ra = 16 });
	f2 = put_fde(&s, &(struct fde_spec){ .cie_off = c2, .enc = DW_EH_PE_udata4,
					     .pc_begin = 0x2000, .pc_len = 0x40, .z = true,
					     .aug = B(U32(0x5000)) });
	sec = sec_of(&s);
	sec.mem = (struct base_mem){ mem_fail, NULL };
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "zero LSDA");
	CHECK(!fde.has_lsda, "zero LSDA: none");
	mem_calls = 0;
	CHECK_INT(cfi_decode_fde(&sec, f2, &fde, &cie), 0, "indirect LSDA");
	CHECK(fde.has_lsda, "indirect LSDA: has one");
	CHECK_U64(fde.lsda, 0x5000, "indirect LSDA: slot address");
	CHECK_INT(mem_calls, 0, "indirect LSDA: no memory read");

	/* A pcrel LSDA whose raw value is 0 is no LSDA (GCC writes that for a
	 * function without one sharing an 'L' CIE): the test is on the raw
	 * value, before the pcrel base is added. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zLR", .aug_data = B(0x1b, 0x1b), .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x1000,
					    .pc_len = 0x40, .z = true, .aug = B(U32(0)) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "raw zero pcrel LSDA");
	CHECK(!fde.has_lsda, "raw zero pcrel LSDA: none");
	CHECK_U64(fde.lsda, 0, "raw zero pcrel LSDA: value 0");

	/* A CIE without L: the FDE's augmentation data is skipped. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata8), .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata8,
					    .pc_begin = 0x123456789a, .pc_len = 0x10, .z = true,
					    .aug = B(1, 2, 3), .insns = B(DW_CFA_nop) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "udata8 FDE");
	CHECK_U64(fde.pc_begin, 0x123456789a, "udata8 FDE pc_begin");
	CHECK_U64(fde.pc_end, 0x123456789a + 0x10, "udata8 FDE pc_end");
	CHECK(!fde.has_lsda, "udata8 FDE no LSDA");
	CHECK_INT(fde.insns_end - fde.insns, 1, "udata8 FDE skips 3 bytes of aug data");

	/* No 'z': no augmentation length in the FDE; absptr of the section's
	 * address size. */
	sb_init(&s, true, 0x4000, 4);
	c = put_cie(&s, &(struct cie_spec){ .data_align = -4, .ra = 8 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_absptr,
					    .pc_begin = 0x8048000, .pc_len = 0x100,
					    .insns = B(DW_CFA_nop) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "absptr 4 FDE");
	CHECK_U64(fde.pc_begin, 0x8048000, "absptr 4 FDE pc_begin");
	CHECK_U64(fde.pc_end, 0x8048100, "absptr 4 FDE pc_end");
	CHECK_INT(fde.insns_end - fde.insns, 1, "absptr 4 FDE instructions");

	/* Indirect 'R': pc_begin is read from target memory. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR",
					    .aug_data = B(DW_EH_PE_indirect | DW_EH_PE_udata4),
					    .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata4,
					    .pc_begin = MEM_BASE, .pc_len = 0x10, .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_MEMORY, "indirect R without memory");
	sec.mem = (struct base_mem){ mem_read, NULL };
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "indirect R");
	CHECK_U64(fde.pc_begin, 0x8786858483828180, "indirect R pc_begin");
	CHECK_U64(fde.pc_end, 0x8786858483828190, "indirect R pc_end, range direct");

	/* .debug_frame v4 with a 2-byte segment selector before the address. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .addr_size = 8, .seg_size = 2, .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .seg_size = 2, .pc_begin = 0x401000,
					    .pc_len = 0x20, .insns = B(DW_CFA_nop) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "debug v4 segment");
	CHECK_U64(fde.pc_begin, 0x401000, "debug v4 segment pc_begin");
	CHECK_U64(fde.pc_end, 0x401020, "debug v4 segment pc_end");
	CHECK_INT(fde.insns_end - fde.insns, 1, "debug v4 segment instructions");

	/* .debug_frame v4 address_size 4 in an 8-byte section. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .addr_size = 4, .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .addr_size = 4, .pc_begin = 0x8048000,
					    .pc_len = 0x20 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "debug v4 address_size 4");
	CHECK_U64(fde.pc_begin, 0x8048000, "debug v4 address_size 4 pc_begin");
	CHECK_U64(fde.pc_end, 0x8048020, "debug v4 address_size 4 pc_end");
	CHECK(fde.insns == fde.insns_end, "debug v4 address_size 4: no instructions");

	/* .debug_frame, 64-bit DWARF, v3 CIE (the section's address size). */
	sb_init(&s, false, 0, 8);
	put_uN(&s.b, 0, 4);
	c = put_cie(&s, &(struct cie_spec){ .version = 3, .is64 = true, .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .is64 = true, .pc_begin = 0x401000,
					    .pc_len = 0x30, .insns = B(DW_CFA_nop, DW_CFA_nop) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "debug64 FDE");
	CHECK_U64(fde.cie_off, 4, "debug64 FDE cie_off");
	CHECK_U64(fde.pc_begin, 0x401000, "debug64 FDE pc_begin");
	CHECK_U64(fde.pc_end, 0x401030, "debug64 FDE pc_end");
	CHECK(cie.offset64, "debug64 FDE's CIE is 64-bit");
	CHECK_INT(fde.insns_end - fde.insns, 2, "debug64 FDE instructions");
	CHECK_INT(cfi_decode_fde(&sec, c, &fde, &cie), BK_E_CORRUPT, "FDE at a CIE");
}

/* FDEs that fail to decode: each case builds CIE + FDE and decodes the FDE. */
static void test_fde_errors(void)
{
	struct sec_builder s;
	struct cfi_section sec;
	struct cfi_fde fde;
	struct cfi_cie cie;
	size_t c, f;

	/* Range wrapping the address space, 8- and 4-byte. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata8), .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata8,
					    .pc_begin = 0xfffffffffffffff0, .pc_len = 0x20,
					    .z = true });
	size_t f_top = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata8,
					    .pc_begin = 0xfffffffffffffff0, .pc_len = 0x0f,
					    .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT, "range wraps 64");
	CHECK_INT(cfi_decode_fde(&sec, f_top, &fde, &cie), 0, "range just below the top");
	CHECK_U64(fde.pc_end, 0xffffffffffffffff, "range just below the top: pc_end");

	sb_init(&s, true, 0x4000, 4);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata4), .ra = 8 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata4,
					    .pc_begin = 0xfffffff0, .pc_len = 0x20, .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT, "range wraps 32");

	sb_init(&s, false, 0, 4);
	c = put_cie(&s, &(struct cie_spec){ .version = 3, .ra = 8 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .pc_begin = 0xffff0000,
					    .pc_len = 0x10000 + 1 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT, "debug range wraps 32");

	/* CIE pointer naming an FDE. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata4), .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata4,
					    .pc_begin = 0x1000, .pc_len = 0x10, .z = true });
	size_t bad = put_fde(&s, &(struct fde_spec){ .cie_off = f, .enc = DW_EH_PE_udata4,
						     .pc_begin = 0x2000, .pc_len = 0x10,
						     .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, bad, &fde, &cie), BK_E_CORRUPT, "CIE pointer at an FDE");
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "the good FDE beside it");

	/* CIE pointer into the middle of an entry (not a CIE id there). */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 3, .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c + 2, .pc_begin = 0x1000, .pc_len = 8 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT, "CIE pointer mid-entry");

	/* The CIE's own errors come through. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 2, .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .pc_begin = 0x1000, .pc_len = 8 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_UNSUPPORTED, "CIE version 2");

	/* The 'R' encoding carries an application the reader refuses. */
	sb_init(&s, true, 0x4000, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(0x63), .ra = 16 });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata4,
					    .pc_begin = 0x1000, .pc_len = 8, .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_UNSUPPORTED, "R application 0x60");

	/* Truncated FDE bodies, written raw after a good CIE at 0. */
	const struct {
		const char *name;
		const uint8_t *tail;
		size_t len;
	} raw[] = {
		/* CIE "zLR" R=udata4 L=udata4 is 4 + 15 bytes; the FDE's CIE
		 * pointer field is at 23. */
		{ "pc_begin truncated", B(U32(6), U32(23), 0x00, 0x10) },
		{ "range truncated", B(U32(10), U32(23), U32(0x1000), 0x10, 0) },
		{ "aug length missing", B(U32(12), U32(23), U32(0x1000), U32(0x10)) },
		{ "aug length past the entry", B(U32(13), U32(23), U32(0x1000), U32(0x10), 4) },
		{ "LSDA past the aug data",
		  B(U32(16), U32(23), U32(0x1000), U32(0x10), 2, 0, 0, 0) },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(raw); i++) {
		sb_init(&s, true, 0x4000, 8);
		c = put_cie(&s, &(struct cie_spec){ .aug = "zLR",
						    .aug_data = B(DW_EH_PE_udata4, DW_EH_PE_udata4),
						    .ra = 16 });
		CHECK_INT(s.b.n, 19, "raw FDE CIE size");
		f = s.b.n;
		put_bytes(&s.b, raw[i].tail, raw[i].len);
		sec = sec_of(&s);
		CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT, raw[i].name);
	}

	/* .debug_frame: pc_begin / range truncated, segment selector truncated. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .addr_size = 8, .seg_size = 8,
					    .ra = 16 });
	f = s.b.n;
	put_bytes(&s.b, B(U32(4 + 8 + 8 + 4), U32(c), U64(0), U64(0x1000), U32(0x10)));
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT, "debug range truncated");
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .addr_size = 8, .seg_size = 8,
					    .ra = 16 });
	f = s.b.n;
	put_bytes(&s.b, B(U32(4 + 4), U32(c), U32(0)));
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), BK_E_CORRUPT,
		  "debug segment selector truncated");
}

/* ---- cfi_decode_insn: one row per opcode (DWARF 5 §6.4.2, §7.24) ------------ */

struct insn_case {
	const char *name;
	const uint8_t *bytes;
	size_t len;
	uint64_t code_align;
	int64_t data_align;
	int err;
	uint8_t opcode;
	unsigned reg, reg2;
	uint64_t u;
	int64_t s;
	size_t block_off;       /* where the block starts in BYTES */
	uint32_t block_len;
	size_t used;
};

#define IN(name, bytes, ca, da, op, reg, reg2, u, s, boff, blen, used) \
	{ name, B bytes, ca, da, 0, op, reg, reg2, u, s, boff, blen, used }
#define IN_ERR(name, bytes, ca, da, err) { name, B bytes, ca, da, err, 0, 0, 0, 0, 0, 0, 0, 0 }

static const struct insn_case insn_cases[] = {
	/* §6.4.2.1 Row creation: deltas are multiplied by code_align. */
	IN("advance_loc 5", (0x45), 1, -8, DW_CFA_advance_loc, 0, 0, 5, 0, 0, 0, 1),
	IN("advance_loc 63 ca 4", (0x7f), 4, -8, DW_CFA_advance_loc, 0, 0, 252, 0, 0, 0, 1),
	IN("advance_loc 0", (0x40), 1, -8, DW_CFA_advance_loc, 0, 0, 0, 0, 0, 0, 1),
	IN("advance_loc1", (DW_CFA_advance_loc1, 0xff), 1, -8, DW_CFA_advance_loc1, 0, 0, 255, 0,
	   0, 0, 2),
	IN("advance_loc1 ca 4", (DW_CFA_advance_loc1, 0x10), 4, -8, DW_CFA_advance_loc1, 0, 0, 64,
	   0, 0, 0, 2),
	IN("advance_loc2", (DW_CFA_advance_loc2, U16(0x1234)), 1, -8, DW_CFA_advance_loc2, 0, 0,
	   0x1234, 0, 0, 0, 3),
	IN("advance_loc4", (DW_CFA_advance_loc4, U32(0x12345678)), 1, -8, DW_CFA_advance_loc4, 0, 0,
	   0x12345678, 0, 0, 0, 5),
	IN("advance_loc4 ca 2", (DW_CFA_advance_loc4, U32(0x80000000)), 2, -8, DW_CFA_advance_loc4,
	   0, 0, 0x100000000, 0, 0, 0, 5),
	IN("MIPS_advance_loc8", (DW_CFA_MIPS_advance_loc8, U64(0x1122334455667788)), 1, -8,
	   DW_CFA_MIPS_advance_loc8, 0, 0, 0x1122334455667788, 0, 0, 0, 9),

	/* §6.4.2.3 Register rules: offsets factored by data_align. */
	IN("offset r16 2", (DW_CFA_offset | 16, 2), 1, -8, DW_CFA_offset, 16, 0, 0, -16, 0, 0, 2),
	IN("offset r63 da -4", (DW_CFA_offset | 63, 3), 1, -4, DW_CFA_offset, 63, 0, 0, -12, 0, 0, 2),
	IN("offset r0 big", (DW_CFA_offset | 0, 0x80, 0x01), 1, -8, DW_CFA_offset, 0, 0, 0, -1024, 0,
	   0, 3),
	IN("offset_extended r200", (DW_CFA_offset_extended, 0xc8, 0x01, 3), 1, -8,
	   DW_CFA_offset_extended, 200, 0, 0, -24, 0, 0, 4),
	IN("offset_extended r0xffff", (DW_CFA_offset_extended, 0xff, 0xff, 0x03, 1), 1, -8,
	   DW_CFA_offset_extended, 0xffff, 0, 0, -8, 0, 0, 5),
	IN("offset_extended_sf -2", (DW_CFA_offset_extended_sf, 16, 0x7e), 1, -8,
	   DW_CFA_offset_extended_sf, 16, 0, 0, 16, 0, 0, 3),
	IN("offset_extended_sf +2 da -4", (DW_CFA_offset_extended_sf, 5, 2), 1, -4,
	   DW_CFA_offset_extended_sf, 5, 0, 0, -8, 0, 0, 3),
	IN("restore r6", (DW_CFA_restore | 6), 1, -8, DW_CFA_restore, 6, 0, 0, 0, 0, 0, 1),
	IN("restore_extended r70", (DW_CFA_restore_extended, 70), 1, -8, DW_CFA_restore_extended,
	   70, 0, 0, 0, 0, 0, 2),
	IN("undefined r16", (DW_CFA_undefined, 16), 1, -8, DW_CFA_undefined, 16, 0, 0, 0, 0, 0, 2),
	IN("same_value r3", (DW_CFA_same_value, 3), 1, -8, DW_CFA_same_value, 3, 0, 0, 0, 0, 0, 2),
	IN("register r16 r128", (DW_CFA_register, 16, 0x80, 0x01), 1, -8, DW_CFA_register, 16, 128,
	   0, 0, 0, 0, 4),
	IN("expression r16", (DW_CFA_expression, 16, 1, DW_OP_call_frame_cfa), 1, -8,
	   DW_CFA_expression, 16, 0, 0, 0, 3, 1, 4),
	IN("expression empty", (DW_CFA_expression, 16, 0), 1, -8, DW_CFA_expression, 16, 0, 0, 0,
	   3, 0, 3),
	IN("val_expression r7", (DW_CFA_val_expression, 7, 2, DW_OP_breg0 + 7, 8), 1, -8,
	   DW_CFA_val_expression, 7, 0, 0, 0, 3, 2, 5),
	IN("val_offset r16 2", (DW_CFA_val_offset, 16, 2), 1, -8, DW_CFA_val_offset, 16, 0, 0, -16,
	   0, 0, 3),
	IN("val_offset_sf -1", (DW_CFA_val_offset_sf, 16, 0x7f), 1, -8, DW_CFA_val_offset_sf, 16, 0,
	   0, 8, 0, 0, 3),
	/* GNU: the offset is negated after factoring. */
	IN("GNU_negative_offset_extended", (DW_CFA_GNU_negative_offset_extended, 16, 2), 1, -8,
	   DW_CFA_GNU_negative_offset_extended, 16, 0, 0, 16, 0, 0, 3),
	IN("GNU_negative_offset_extended da 4", (DW_CFA_GNU_negative_offset_extended, 65, 3), 1, 4,
	   DW_CFA_GNU_negative_offset_extended, 65, 0, 0, -12, 0, 0, 3),

	/* §6.4.2.2 CFA definition: def_cfa and def_cfa_offset are not
	 * factored, the _sf forms are. */
	IN("def_cfa r7 128", (DW_CFA_def_cfa, 7, 0x80, 0x01), 1, -8, DW_CFA_def_cfa, 7, 0, 0, 128, 0,
	   0, 4),
	IN("def_cfa_sf r7 -2", (DW_CFA_def_cfa_sf, 7, 0x7e), 1, -8, DW_CFA_def_cfa_sf, 7, 0, 0, 16,
	   0, 0, 3),
	IN("def_cfa_sf r31 da -4", (DW_CFA_def_cfa_sf, 31, 0x7c), 1, -4, DW_CFA_def_cfa_sf, 31, 0, 0,
	   16, 0, 0, 3),
	IN("def_cfa_register r6", (DW_CFA_def_cfa_register, 6), 1, -8, DW_CFA_def_cfa_register, 6,
	   0, 0, 0, 0, 0, 2),
	IN("def_cfa_offset 16", (DW_CFA_def_cfa_offset, 16), 1, -8, DW_CFA_def_cfa_offset, 0, 0, 0,
	   16, 0, 0, 2),
	IN("def_cfa_offset_sf -2", (DW_CFA_def_cfa_offset_sf, 0x7e), 1, -8,
	   DW_CFA_def_cfa_offset_sf, 0, 0, 0, 16, 0, 0, 2),
	IN("def_cfa_expression", (DW_CFA_def_cfa_expression, 2, DW_OP_breg0 + 7, 8), 1, -8,
	   DW_CFA_def_cfa_expression, 0, 0, 0, 0, 2, 2, 4),

	/* §6.4.2.4, §6.4.2.5 and GNU extensions. */
	IN("remember_state", (DW_CFA_remember_state), 1, -8, DW_CFA_remember_state, 0, 0, 0, 0, 0,
	   0, 1),
	IN("restore_state", (DW_CFA_restore_state), 1, -8, DW_CFA_restore_state, 0, 0, 0, 0, 0, 0,
	   1),
	IN("nop", (DW_CFA_nop, DW_CFA_nop), 1, -8, DW_CFA_nop, 0, 0, 0, 0, 0, 0, 1),
	IN("GNU_args_size 32", (DW_CFA_GNU_args_size, 0x20), 1, -8, DW_CFA_GNU_args_size, 0, 0, 32,
	   0, 0, 0, 2),
	IN("GNU_args_size unfactored", (DW_CFA_GNU_args_size, 0x80, 0x01), 4, -8,
	   DW_CFA_GNU_args_size, 0, 0, 128, 0, 0, 0, 3),
	IN("GNU_window_save", (DW_CFA_GNU_window_save), 1, -8, DW_CFA_GNU_window_save, 0, 0, 0, 0,
	   0, 0, 1),
	IN("AARCH64_negate_ra_state_with_pc", (DW_CFA_AARCH64_negate_ra_state_with_pc), 4, -8,
	   DW_CFA_AARCH64_negate_ra_state_with_pc, 0, 0, 0, 0, 0, 0, 1),

	/* Unknown opcodes. */
	IN_ERR("0x17", (0x17), 1, -8, BK_E_UNSUPPORTED),
	IN_ERR("lo_user 0x1c", (DW_CFA_lo_user), 1, -8, BK_E_UNSUPPORTED),
	IN_ERR("0x1e", (0x1e), 1, -8, BK_E_UNSUPPORTED),
	IN_ERR("0x2b", (0x2b), 1, -8, BK_E_UNSUPPORTED),
	IN_ERR("0x30", (0x30), 1, -8, BK_E_UNSUPPORTED),
	IN_ERR("hi_user 0x3f", (DW_CFA_hi_user), 1, -8, BK_E_UNSUPPORTED),

	/* Truncated operands. */
	IN_ERR("advance_loc1 truncated", (DW_CFA_advance_loc1), 1, -8, BK_E_CORRUPT),
	IN_ERR("advance_loc2 truncated", (DW_CFA_advance_loc2, 1), 1, -8, BK_E_CORRUPT),
	IN_ERR("advance_loc4 truncated", (DW_CFA_advance_loc4, 1, 2, 3), 1, -8, BK_E_CORRUPT),
	IN_ERR("MIPS_advance_loc8 truncated", (DW_CFA_MIPS_advance_loc8, 1, 2, 3, 4, 5, 6, 7), 1,
	       -8, BK_E_CORRUPT),
	IN_ERR("offset truncated", (DW_CFA_offset | 3), 1, -8, BK_E_CORRUPT),
	IN_ERR("offset LEB truncated", (DW_CFA_offset | 3, 0x80), 1, -8, BK_E_CORRUPT),
	IN_ERR("offset_extended truncated", (DW_CFA_offset_extended, 16), 1, -8, BK_E_CORRUPT),
	IN_ERR("restore_extended truncated", (DW_CFA_restore_extended), 1, -8, BK_E_CORRUPT),
	IN_ERR("register truncated", (DW_CFA_register, 16), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa truncated", (DW_CFA_def_cfa, 7), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa_sf truncated", (DW_CFA_def_cfa_sf, 7, 0xff), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa_offset truncated", (DW_CFA_def_cfa_offset), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa_offset_sf truncated", (DW_CFA_def_cfa_offset_sf, 0x80), 1, -8,
	       BK_E_CORRUPT),
	IN_ERR("val_offset truncated", (DW_CFA_val_offset, 16), 1, -8, BK_E_CORRUPT),
	IN_ERR("GNU_args_size truncated", (DW_CFA_GNU_args_size), 1, -8, BK_E_CORRUPT),
	IN_ERR("expression length missing", (DW_CFA_expression, 16), 1, -8, BK_E_CORRUPT),
	IN_ERR("expression block past the end", (DW_CFA_expression, 16, 3, 1, 2), 1, -8,
	       BK_E_CORRUPT),
	IN_ERR("def_cfa_expression block past the end", (DW_CFA_def_cfa_expression, 0x80, 0x01, 1),
	       1, -8, BK_E_CORRUPT),
	IN_ERR("val_expression huge block", (DW_CFA_val_expression, 16, 0xff, 0xff, 0xff, 0xff, 0x7f),
	       1, -8, BK_E_CORRUPT),

	/* Overflow. */
	IN_ERR("register ULEB 11 bytes", (DW_CFA_undefined, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x01), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa_offset ULEB 11 bytes", (DW_CFA_def_cfa_offset, 0x80, 0x80, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa offset above INT64_MAX", (DW_CFA_def_cfa, 7, 0x80, 0x80, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x80, 0x01), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa_offset above INT64_MAX", (DW_CFA_def_cfa_offset, 0x80, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x80, 0x80, 0x01), 1, -8, BK_E_CORRUPT),
	IN_ERR("offset factor overflows", (DW_CFA_offset | 1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x40), 1, -8, BK_E_CORRUPT),
	IN_ERR("offset_extended_sf factor overflows", (DW_CFA_offset_extended_sf, 1, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40), 1, -8, BK_E_CORRUPT),
	IN_ERR("def_cfa_offset_sf factor overflows", (DW_CFA_def_cfa_offset_sf, 0x80, 0x80, 0x80,
	       0x80, 0x80, 0x80, 0x80, 0x80, 0x40), 1, -8, BK_E_CORRUPT),
	IN_ERR("advance_loc4 code_align overflows", (DW_CFA_advance_loc4, U32(4)),
	       (uint64_t)1 << 62, -8, BK_E_CORRUPT),
	IN_ERR("advance_loc code_align overflows", (0x48), (uint64_t)1 << 62, -8, BK_E_CORRUPT),
	IN_ERR("GNU_negative_offset_extended of INT64_MIN", (DW_CFA_GNU_negative_offset_extended,
	       16, 1), 1, INT64_MIN, BK_E_CORRUPT),

	/* Register numbers above CFI_MAX_REGNO. */
	IN_ERR("offset_extended r0x10000", (DW_CFA_offset_extended, 0x80, 0x80, 0x04, 1), 1, -8,
	       BK_E_BAD_REG),
	IN_ERR("undefined r0x10000", (DW_CFA_undefined, 0x80, 0x80, 0x04), 1, -8, BK_E_BAD_REG),
	IN_ERR("register second r0x10000", (DW_CFA_register, 16, 0x80, 0x80, 0x04), 1, -8,
	       BK_E_BAD_REG),
	IN_ERR("def_cfa r0x10000", (DW_CFA_def_cfa, 0x80, 0x80, 0x04, 8), 1, -8, BK_E_BAD_REG),
	IN_ERR("def_cfa_register r2^32", (DW_CFA_def_cfa_register, 0x80, 0x80, 0x80, 0x80, 0x10), 1,
	       -8, BK_E_BAD_REG),
	IN_ERR("expression r0x10000", (DW_CFA_expression, 0x80, 0x80, 0x04, 0), 1, -8,
	       BK_E_BAD_REG),
	IN_ERR("val_offset_sf r0x10000", (DW_CFA_val_offset_sf, 0x80, 0x80, 0x04, 1), 1, -8,
	       BK_E_BAD_REG),
};

static struct cfi_cie cie_for(uint64_t code_align, int64_t data_align)
{
	struct cfi_cie cie = {
		.version = 1,
		.code_align = code_align,
		.data_align = data_align,
		.ra_reg = 16,
		.fde_enc = DW_EH_PE_udata4,
		.lsda_enc = DW_EH_PE_omit,
		.personality_enc = DW_EH_PE_omit,
		.addr_size = 8,
	};
	return cie;
}

static void test_insn_rows(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(insn_cases); i++) {
		const struct insn_case *c = &insn_cases[i];
		struct cfi_section sec = { .data = c->bytes, .len = c->len, .is_eh = true,
					   .addr_size = 8 };
		struct cfi_cie cie = cie_for(c->code_align, c->data_align);
		struct buf b = buf_make(c->bytes, c->len);
		struct cfi_insn in;
		CHECK_INT(cfi_decode_insn(&b, &sec, &cie, NULL, &in), c->err, c->name);
		if (c->err) {
			CHECK(b.p == c->bytes, "%s: reader moved on error", c->name);
			continue;
		}
		CHECK_INT(in.opcode, c->opcode, c->name);
		CHECK_INT(in.reg, c->reg, c->name);
		CHECK_INT(in.reg2, c->reg2, c->name);
		CHECK_U64(in.u, c->u, c->name);
		CHECK_INT(in.s, c->s, c->name);
		CHECK_INT(in.block_len, c->block_len, c->name);
		if (c->block_off)
			CHECK(in.block == c->bytes + c->block_off, "%s: block", c->name);
		else
			CHECK(in.block == NULL, "%s: no block", c->name);
		CHECK_INT(b.p - c->bytes, c->used, c->name);
	}

	/* Nothing left to decode. */
	static const uint8_t none[1];
	struct cfi_section sec = { .data = none, .len = 0, .is_eh = true, .addr_size = 8 };
	struct cfi_cie cie = cie_for(1, -8);
	struct buf b = buf_make(none, 0);
	struct cfi_insn in;
	CHECK_INT(cfi_decode_insn(&b, &sec, &cie, NULL, &in), BK_E_CORRUPT, "empty");
}

/* DW_CFA_set_loc: .debug_frame takes an address_size address, .eh_frame the
 * CIE's 'R' encoding (pcrel from the operand, funcrel from pc_begin). */
static void test_insn_set_loc(void)
{
	struct cfi_insn in;
	struct cfi_cie cie = cie_for(1, -8);
	struct cfi_fde fde = { .pc_begin = 0x401000, .pc_end = 0x401100 };

	const uint8_t dbg8[] = { DW_CFA_set_loc, U64(0x401020), 0xee };
	struct cfi_section sec = { .data = dbg8, .len = sizeof(dbg8), .addr = 0, .is_eh = false,
				   .addr_size = 8 };
	struct buf b = buf_make(dbg8, sizeof(dbg8));
	CHECK_INT(cfi_decode_insn(&b, &sec, &cie, &fde, &in), 0, "debug set_loc 8");
	CHECK_INT(in.opcode, DW_CFA_set_loc, "debug set_loc 8");
	CHECK_U64(in.u, 0x401020, "debug set_loc 8");
	CHECK_INT(b.p - dbg8, 9, "debug set_loc 8 used");

	/* The CIE's address_size (v4), not the section's. */
	struct cfi_cie cie4 = cie;
	cie4.version = 4;
	cie4.addr_size = 4;
	b = buf_make(dbg8, sizeof(dbg8));
	CHECK_INT(cfi_decode_insn(&b, &sec, &cie4, &fde, &in), 0, "debug set_loc 4");
	CHECK_U64(in.u, 0x401020, "debug set_loc 4");
	CHECK_INT(b.p - dbg8, 5, "debug set_loc 4 used");

	b = buf_make(dbg8, 5);
	CHECK_INT(cfi_decode_insn(&b, &sec, &cie, &fde, &in), BK_E_CORRUPT, "debug set_loc short");
	CHECK(b.p == dbg8, "debug set_loc short: reader unchanged");

	/* .eh_frame, udata4. */
	sec.is_eh = true;
	b = buf_make(dbg8, sizeof(dbg8));
	CHECK_INT(cfi_decode_insn(&b, &sec, &cie, &fde, &in), 0, "eh set_loc udata4");
	CHECK_U64(in.u, 0x401020, "eh set_loc udata4");
	CHECK_INT(b.p - dbg8, 5, "eh set_loc udata4 used");

	/* .eh_frame, pcrel|sdata4: relative to the operand's own address. */
	const uint8_t pcrel[] = { 0xee, 0xee, DW_CFA_set_loc, U32(0x100) };
	struct cfi_section esec = { .data = pcrel, .len = sizeof(pcrel), .addr = 0x400f00,
				    .is_eh = true, .addr_size = 8 };
	struct cfi_cie ciep = cie;
	ciep.fde_enc = DW_EH_PE_pcrel | DW_EH_PE_sdata4;
	b = buf_make(pcrel + 2, 5);
	CHECK_INT(cfi_decode_insn(&b, &esec, &ciep, &fde, &in), 0, "eh set_loc pcrel");
	CHECK_U64(in.u, 0x400f00 + 3 + 0x100, "eh set_loc pcrel");

	/* funcrel: from the FDE's pc_begin, or 0 with no FDE. */
	ciep.fde_enc = DW_EH_PE_funcrel | DW_EH_PE_udata4;
	b = buf_make(pcrel + 2, 5);
	CHECK_INT(cfi_decode_insn(&b, &esec, &ciep, &fde, &in), 0, "eh set_loc funcrel");
	CHECK_U64(in.u, 0x401000 + 0x100, "eh set_loc funcrel");
	b = buf_make(pcrel + 2, 5);
	CHECK_INT(cfi_decode_insn(&b, &esec, &ciep, NULL, &in), 0, "eh set_loc funcrel, no FDE");
	CHECK_U64(in.u, 0x100, "eh set_loc funcrel, no FDE");

	/* An unsupported 'R' application fails set_loc. */
	ciep.fde_enc = 0x70 | DW_EH_PE_udata4;
	b = buf_make(pcrel + 2, 5);
	CHECK_INT(cfi_decode_insn(&b, &esec, &ciep, &fde, &in), BK_E_UNSUPPORTED,
		  "eh set_loc application");
}

static void test_insn_names(void)
{
	static const struct {
		uint8_t opcode;
		const char *name;
	} names[] = {
		{ DW_CFA_advance_loc, "DW_CFA_advance_loc" },
		{ 0x45, "DW_CFA_advance_loc" },
		{ DW_CFA_offset, "DW_CFA_offset" },
		{ DW_CFA_offset | 16, "DW_CFA_offset" },
		{ DW_CFA_restore | 3, "DW_CFA_restore" },
		{ DW_CFA_nop, "DW_CFA_nop" },
		{ DW_CFA_set_loc, "DW_CFA_set_loc" },
		{ DW_CFA_advance_loc4, "DW_CFA_advance_loc4" },
		{ DW_CFA_def_cfa, "DW_CFA_def_cfa" },
		{ DW_CFA_def_cfa_sf, "DW_CFA_def_cfa_sf" },
		{ DW_CFA_def_cfa_offset_sf, "DW_CFA_def_cfa_offset_sf" },
		{ DW_CFA_val_expression, "DW_CFA_val_expression" },
		{ DW_CFA_MIPS_advance_loc8, "DW_CFA_MIPS_advance_loc8" },
		{ DW_CFA_GNU_window_save, "DW_CFA_GNU_window_save" },
		{ DW_CFA_AARCH64_negate_ra_state_with_pc, "DW_CFA_AARCH64_negate_ra_state_with_pc" },
		{ DW_CFA_GNU_args_size, "DW_CFA_GNU_args_size" },
		{ DW_CFA_GNU_negative_offset_extended, "DW_CFA_GNU_negative_offset_extended" },
	};
	for (size_t i = 0; i < BK_ARRAY_LEN(names); i++)
		CHECK_STR(cfi_insn_name(names[i].opcode), names[i].name, names[i].name);
	CHECK(cfi_insn_name(DW_CFA_lo_user) == NULL, "0x1c has no name");
	CHECK(cfi_insn_name(DW_CFA_hi_user) == NULL, "0x3f has no name");

	/* Every opcode the decoder accepts has a name, and only those. */
	for (unsigned op = 0; op < 0x40; op++) {
		uint8_t bytes[16] = { (uint8_t)op, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1 };
		struct cfi_section sec = { .data = bytes, .len = sizeof(bytes), .is_eh = false,
					   .addr_size = 8 };
		struct cfi_cie cie = cie_for(1, -8);
		struct buf b = buf_make(bytes, sizeof(bytes));
		struct cfi_insn in;
		int err = cfi_decode_insn(&b, &sec, &cie, NULL, &in);
		CHECK((err == BK_E_UNSUPPORTED) == (cfi_insn_name((uint8_t)op) == NULL),
		      "opcode 0x%02x: decode %d, name %s", op, err,
		      cfi_insn_name((uint8_t)op) ? cfi_insn_name((uint8_t)op) : "(null)");
	}
}

/* ---- The CFA state machine: rows per DW_CFA (DWARF 5 §6.4.2, §6.4.3) ------- */

struct want_rule {
	unsigned reg;           /* the register the rule is for */
	uint8_t kind;           /* BK_RULE_NONE ends a list */
	int64_t value;
	unsigned rreg;          /* REGISTER / CFA_REG_OFFSET: the register in the rule */
	const uint8_t *expr;    /* EXPRESSION kinds: the bytes */
	size_t expr_len;
};

struct want_row {
	uint64_t loc, loc_end;  /* relative to PC0 */
	struct want_rule cfa;
	uint8_t ra_sign_state;
	uint64_t args_size;
	struct want_rule rules[8];
};

struct machine_case {
	const char *name;
	uint64_t code_align;
	int64_t data_align;
	const uint8_t *cie;     /* the CIE's initial instructions */
	size_t cie_len;
	const uint8_t *fde;     /* the FDE's instructions */
	size_t fde_len;
	int init_err;           /* from cfi_machine_init */
	int err;                /* from cfi_machine_next after the rows */
	struct want_row rows[6]; /* until loc_end == 0 */
};

#define PC0 0x1000u
#define PCLEN 0x20u

#define CFA(r, off) { .kind = BK_RULE_CFA_REG_OFFSET, .rreg = (r), .value = (off) }
#define CFAX(bytes) { .kind = BK_RULE_CFA_EXPRESSION, .expr = B bytes }
#define NOCFA { .kind = BK_RULE_NONE }
#define OFF(r, v) { .reg = (r), .kind = BK_RULE_OFFSET, .value = (v) }
#define VOFF(r, v) { .reg = (r), .kind = BK_RULE_VAL_OFFSET, .value = (v) }
#define UNDEF(r) { .reg = (r), .kind = BK_RULE_UNDEFINED }
#define SAME(r) { .reg = (r), .kind = BK_RULE_SAME_VALUE }
#define REGR(r, r2) { .reg = (r), .kind = BK_RULE_REGISTER, .rreg = (r2) }
#define EXPR(r, bytes) { .reg = (r), .kind = BK_RULE_EXPRESSION, .expr = B bytes }
#define VEXPR(r, bytes) { .reg = (r), .kind = BK_RULE_VAL_EXPRESSION, .expr = B bytes }
#define NORULES { .kind = BK_RULE_NONE }

#define ROW(lo, hi, cfa_, ...) \
	{ .loc = (lo), .loc_end = (hi), .cfa = cfa_, .rules = { __VA_ARGS__ } }
#define ROWX(lo, hi, cfa_, sign, args, ...) \
	{ .loc = (lo), .loc_end = (hi), .cfa = cfa_, .ra_sign_state = (sign), \
	  .args_size = (args), .rules = { __VA_ARGS__ } }

#define MCA(name, ca, da, cie, fde, err, ...) \
	{ name, ca, da, B cie, B fde, 0, err, { __VA_ARGS__ } }
#define MC(name, cie, fde, err, ...) MCA(name, 1, -8, cie, fde, err, __VA_ARGS__)
#define MC_INIT(name, cie, err) { name, 1, -8, B cie, B(DW_CFA_nop), err, 0, { { 0 } } }

/* The usual x86-64 CIE: CFA = rsp + 8, return address (r16) at CFA - 8. */
#define STD (DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1)
#define STD_CFA CFA(7, 8)
#define STD_RA OFF(16, -8)
#define OP_BREG7 (DW_OP_breg0 + 7)

static const struct machine_case machine_cases[] = {
	MC("no FDE instructions", STD, (DW_CFA_nop), 0,
	   ROW(0, PCLEN, STD_CFA, STD_RA)),
	MC("nop only, twice", STD, (DW_CFA_nop, DW_CFA_nop), 0,
	   ROW(0, PCLEN, STD_CFA, STD_RA)),
	/* push %rbp; mov %rsp,%rbp: three rows. */
	MC("advance_loc", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2,
	    DW_CFA_advance_loc | 3, DW_CFA_def_cfa_register, 6), 0,
	   ROW(0, 1, STD_CFA, STD_RA),
	   ROW(1, 4, CFA(7, 16), OFF(6, -16), STD_RA),
	   ROW(4, PCLEN, CFA(6, 16), OFF(6, -16), STD_RA)),
	MC("advance_loc1", STD, (DW_CFA_advance_loc1, 0x10, DW_CFA_def_cfa_offset, 16), 0,
	   ROW(0, 0x10, STD_CFA, STD_RA),
	   ROW(0x10, PCLEN, CFA(7, 16), STD_RA)),
	MC("advance_loc2", STD, (DW_CFA_advance_loc2, U16(0x1f), DW_CFA_undefined, 16), 0,
	   ROW(0, 0x1f, STD_CFA, STD_RA),
	   ROW(0x1f, PCLEN, STD_CFA, UNDEF(16))),
	MC("advance_loc4", STD, (DW_CFA_advance_loc4, U32(8), DW_CFA_same_value, 3), 0,
	   ROW(0, 8, STD_CFA, STD_RA),
	   ROW(8, PCLEN, STD_CFA, SAME(3), STD_RA)),
	/* The last advance reaches the end: what follows makes no row. */
	MC("MIPS_advance_loc8", STD,
	   (DW_CFA_MIPS_advance_loc8, U64(4), DW_CFA_same_value, 3, DW_CFA_MIPS_advance_loc8,
	    U64(0x1c), DW_CFA_undefined, 3), 0,
	   ROW(0, 4, STD_CFA, STD_RA),
	   ROW(4, PCLEN, STD_CFA, SAME(3), STD_RA)),
	MC("advance to the end exactly", STD,
	   (DW_CFA_advance_loc | 0x20, DW_CFA_offset | 3, 1), 0,
	   ROW(0, PCLEN, STD_CFA, STD_RA)),
	MC("set_loc", STD,
	   (DW_CFA_set_loc, U32(PC0 + 8), DW_CFA_def_cfa_offset, 32, DW_CFA_set_loc, U32(PC0 + 0x10),
	    DW_CFA_offset_extended, 3, 2), 0,
	   ROW(0, 8, STD_CFA, STD_RA),
	   ROW(8, 0x10, CFA(7, 32), STD_RA),
	   ROW(0x10, PCLEN, CFA(7, 32), OFF(3, -16), STD_RA)),
	MC("set_loc to the current location: no empty row", STD,
	   (DW_CFA_set_loc, U32(PC0), DW_CFA_offset | 3, 1), 0,
	   ROW(0, PCLEN, STD_CFA, OFF(3, -8), STD_RA)),
	MC("set_loc to pc_end", STD,
	   (DW_CFA_advance_loc | 2, DW_CFA_set_loc, U32(PC0 + PCLEN), DW_CFA_offset | 3, 1), 0,
	   ROW(0, 2, STD_CFA, STD_RA),
	   ROW(2, PCLEN, STD_CFA, STD_RA)),
	MC("advance_loc 0: no empty row", STD,
	   (DW_CFA_advance_loc | 0, DW_CFA_offset | 3, 1, DW_CFA_advance_loc | 0,
	    DW_CFA_advance_loc1, 0, DW_CFA_advance_loc | 2, DW_CFA_advance_loc | 0,
	    DW_CFA_offset | 4, 1), 0,
	   ROW(0, 2, STD_CFA, OFF(3, -8), STD_RA),
	   ROW(2, PCLEN, STD_CFA, OFF(3, -8), OFF(4, -8), STD_RA)),
	MCA("code_align 4", 4, -8, STD,
	    (DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_advance_loc1, 2,
	     DW_CFA_def_cfa_offset, 24, DW_CFA_advance_loc2, U16(1), DW_CFA_def_cfa_offset, 8), 0,
	    ROW(0, 4, STD_CFA, STD_RA),
	    ROW(4, 0xc, CFA(7, 16), STD_RA),
	    ROW(0xc, 0x10, CFA(7, 24), STD_RA),
	    ROW(0x10, PCLEN, CFA(7, 8), STD_RA)),
	/* i386: data_align -4, CFA = esp + 4, RA (r8) at CFA - 4. */
	MCA("data_align -4", 1, -4, (DW_CFA_def_cfa, 4, 4, DW_CFA_offset | 8, 1),
	    (DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 8, DW_CFA_offset | 5, 2,
	     DW_CFA_offset_extended_sf, 3, 0x7d, DW_CFA_def_cfa_offset_sf, 0x7e), 0,
	    ROW(0, 1, CFA(4, 4), OFF(8, -4)),
	    ROW(1, PCLEN, CFA(4, 8), OFF(3, 12), OFF(5, -8), OFF(8, -4))),
	/* AArch64: code_align 4, data_align -8, CFA sp (31), x29/x30. */
	MCA("AArch64 prologue", 4, -8, (DW_CFA_def_cfa, 31, 0),
	    (DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 29, 2,
	     DW_CFA_offset | 30, 1, DW_CFA_advance_loc | 1, DW_CFA_def_cfa, 29, 16), 0,
	    ROW(0, 4, CFA(31, 0), NORULES),
	    ROW(4, 8, CFA(31, 16), OFF(29, -16), OFF(30, -8)),
	    ROW(8, PCLEN, CFA(29, 16), OFF(29, -16), OFF(30, -8))),

	/* §6.4.2.3 Register rules. */
	MC("offset", STD, (DW_CFA_offset | 3, 3, DW_CFA_offset | 63, 0), 0,
	   ROW(0, PCLEN, STD_CFA, OFF(3, -24), STD_RA, OFF(63, 0))),
	MC("offset_extended", STD, (DW_CFA_offset_extended, 0xc8, 0x01, 3), 0,
	   ROW(0, PCLEN, STD_CFA, STD_RA, OFF(200, -24))),
	MC("offset_extended replaces", STD, (DW_CFA_offset_extended, 16, 2), 0,
	   ROW(0, PCLEN, STD_CFA, OFF(16, -16))),
	MC("offset_extended_sf", STD, (DW_CFA_offset_extended_sf, 3, 0x7e), 0,
	   ROW(0, PCLEN, STD_CFA, OFF(3, 16), STD_RA)),
	MC("restore to the CIE's rule", STD,
	   (DW_CFA_offset | 16, 3, DW_CFA_advance_loc | 1, DW_CFA_restore | 16), 0,
	   ROW(0, 1, STD_CFA, OFF(16, -24)),
	   ROW(1, PCLEN, STD_CFA, STD_RA)),
	MC("restore to no rule", STD,
	   (DW_CFA_offset | 3, 1, DW_CFA_advance_loc | 1, DW_CFA_restore | 3), 0,
	   ROW(0, 1, STD_CFA, OFF(3, -8), STD_RA),
	   ROW(1, PCLEN, STD_CFA, STD_RA)),
	MC("restore of a register with no rule", STD, (DW_CFA_restore | 5), 0,
	   ROW(0, PCLEN, STD_CFA, STD_RA)),
	MC("restore_extended to the CIE's rule and to no rule", STD,
	   (DW_CFA_offset_extended, 16, 3, DW_CFA_offset_extended, 70, 2, DW_CFA_advance_loc | 1,
	    DW_CFA_restore_extended, 16, DW_CFA_advance_loc | 1, DW_CFA_restore_extended, 70), 0,
	   ROW(0, 1, STD_CFA, OFF(16, -24), OFF(70, -16)),
	   ROW(1, 2, STD_CFA, STD_RA, OFF(70, -16)),
	   ROW(2, PCLEN, STD_CFA, STD_RA)),
	MC("restore to a CIE undefined", (DW_CFA_def_cfa, 7, 8, DW_CFA_undefined, 16),
	   (DW_CFA_offset | 16, 1, DW_CFA_advance_loc | 1, DW_CFA_restore | 16), 0,
	   ROW(0, 1, STD_CFA, OFF(16, -8)),
	   ROW(1, PCLEN, STD_CFA, UNDEF(16))),
	MC("undefined", STD, (DW_CFA_undefined, 16, DW_CFA_undefined, 3), 0,
	   ROW(0, PCLEN, STD_CFA, UNDEF(3), UNDEF(16))),
	MC("same_value", STD, (DW_CFA_same_value, 16, DW_CFA_same_value, 0xff, 0x03), 0,
	   ROW(0, PCLEN, STD_CFA, SAME(16), SAME(511))),
	MC("register", STD, (DW_CFA_register, 16, 0x80, 0x01, DW_CFA_register, 6, 0), 0,
	   ROW(0, PCLEN, STD_CFA, REGR(6, 0), REGR(16, 128))),
	MC("expression", STD, (DW_CFA_expression, 16, 2, OP_BREG7, 0x78), 0,
	   ROW(0, PCLEN, STD_CFA, EXPR(16, (OP_BREG7, 0x78)))),
	MC("expression, empty block", STD, (DW_CFA_expression, 3, 0), 0,
	   ROW(0, PCLEN, STD_CFA, { .reg = 3, .kind = BK_RULE_EXPRESSION }, STD_RA)),
	MC("val_expression", STD,
	   (DW_CFA_val_expression, 7, 3, DW_OP_call_frame_cfa, DW_OP_plus_uconst, 8), 0,
	   ROW(0, PCLEN, STD_CFA, VEXPR(7, (DW_OP_call_frame_cfa, DW_OP_plus_uconst, 8)),
	       STD_RA)),
	MC("val_offset", STD, (DW_CFA_val_offset, 7, 0, DW_CFA_val_offset, 3, 3), 0,
	   ROW(0, PCLEN, STD_CFA, VOFF(3, -24), VOFF(7, 0), STD_RA)),
	MC("val_offset_sf", STD, (DW_CFA_val_offset_sf, 7, 0x7e), 0,
	   ROW(0, PCLEN, STD_CFA, VOFF(7, 16), STD_RA)),
	MC("GNU_negative_offset_extended", STD, (DW_CFA_GNU_negative_offset_extended, 3, 2), 0,
	   ROW(0, PCLEN, STD_CFA, OFF(3, 16), STD_RA)),
	MC("rules stay sorted", STD,
	   (DW_CFA_offset | 40, 1, DW_CFA_offset | 2, 1, DW_CFA_undefined, 0x64, DW_CFA_offset | 20, 1,
	    DW_CFA_same_value, 0, DW_CFA_advance_loc | 1, DW_CFA_restore | 20, DW_CFA_restore | 0),
	   0,
	   ROW(0, 1, STD_CFA, SAME(0), OFF(2, -8), STD_RA, OFF(20, -8), OFF(40, -8), UNDEF(100)),
	   ROW(1, PCLEN, STD_CFA, OFF(2, -8), STD_RA, OFF(40, -8), UNDEF(100))),

	/* §6.4.2.2 CFA definition. */
	MC("def_cfa", STD, (DW_CFA_def_cfa, 6, 0x80, 0x01), 0,
	   ROW(0, PCLEN, CFA(6, 128), STD_RA)),
	MC("def_cfa_sf", STD, (DW_CFA_def_cfa_sf, 6, 0x7e), 0,
	   ROW(0, PCLEN, CFA(6, 16), STD_RA)),
	MC("def_cfa_sf negative", STD, (DW_CFA_def_cfa_sf, 6, 1), 0,
	   ROW(0, PCLEN, CFA(6, -8), STD_RA)),
	MC("def_cfa_register", STD, (DW_CFA_def_cfa_register, 6), 0,
	   ROW(0, PCLEN, CFA(6, 8), STD_RA)),
	MC("def_cfa_offset", STD, (DW_CFA_def_cfa_offset, 0x80, 0x01), 0,
	   ROW(0, PCLEN, CFA(7, 128), STD_RA)),
	MC("def_cfa_offset_sf", STD, (DW_CFA_def_cfa_offset_sf, 0x7c), 0,
	   ROW(0, PCLEN, CFA(7, 32), STD_RA)),
	MC("def_cfa_expression", STD, (DW_CFA_def_cfa_expression, 2, OP_BREG7, 8), 0,
	   ROW(0, PCLEN, CFAX((OP_BREG7, 8)), STD_RA)),
	MC("def_cfa after def_cfa_expression", STD,
	   (DW_CFA_def_cfa_expression, 2, OP_BREG7, 8, DW_CFA_advance_loc | 1, DW_CFA_def_cfa, 7,
	    16), 0,
	   ROW(0, 1, CFAX((OP_BREG7, 8)), STD_RA),
	   ROW(1, PCLEN, CFA(7, 16), STD_RA)),
	MC("def_cfa_expression in the CIE", (DW_CFA_def_cfa_expression, 1, DW_OP_lit0 + 5),
	   (DW_CFA_nop), 0,
	   ROW(0, PCLEN, CFAX((DW_OP_lit0 + 5)), NORULES)),
	MC("no CFA rule at all", (DW_CFA_undefined, 16), (DW_CFA_nop), 0,
	   ROW(0, PCLEN, NOCFA, UNDEF(16))),

	/* §6.4.2.4 Row state: the CFA and the RA sign state are saved too. */
	MC("remember_state / restore_state", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_remember_state, DW_CFA_def_cfa_offset, 32,
	    DW_CFA_offset | 3, 2, DW_CFA_advance_loc | 1, DW_CFA_restore_state), 0,
	   ROW(0, 1, STD_CFA, STD_RA),
	   ROW(1, 2, CFA(7, 32), OFF(3, -16), STD_RA),
	   ROW(2, PCLEN, STD_CFA, STD_RA)),
	MC("restore_state restores a CFA expression's predecessor", STD,
	   (DW_CFA_remember_state, DW_CFA_def_cfa_expression, 2, OP_BREG7, 0x10,
	    DW_CFA_undefined, 16, DW_CFA_advance_loc | 1, DW_CFA_restore_state), 0,
	   ROW(0, 1, CFAX((OP_BREG7, 0x10)), UNDEF(16)),
	   ROW(1, PCLEN, STD_CFA, STD_RA)),
	MC("restore_state does not move the location", STD,
	   (DW_CFA_advance_loc | 4, DW_CFA_remember_state, DW_CFA_advance_loc | 4,
	    DW_CFA_def_cfa_offset, 16, DW_CFA_restore_state, DW_CFA_offset | 3, 1), 0,
	   ROW(0, 4, STD_CFA, STD_RA),
	   ROW(4, 8, STD_CFA, STD_RA),
	   ROW(8, PCLEN, STD_CFA, OFF(3, -8), STD_RA)),
	MC("nested remember_state", STD,
	   (DW_CFA_offset | 3, 1, DW_CFA_remember_state, DW_CFA_offset | 4, 2,
	    DW_CFA_def_cfa_offset, 16, DW_CFA_remember_state, DW_CFA_offset | 5, 3,
	    DW_CFA_def_cfa_offset, 24, DW_CFA_restore | 3, DW_CFA_advance_loc | 1,
	    DW_CFA_restore_state, DW_CFA_advance_loc | 1, DW_CFA_restore_state), 0,
	   ROW(0, 1, CFA(7, 24), OFF(4, -16), OFF(5, -24), STD_RA),
	   ROW(1, 2, CFA(7, 16), OFF(3, -8), OFF(4, -16), STD_RA),
	   ROW(2, PCLEN, CFA(7, 8), OFF(3, -8), STD_RA)),
	MC("remember an empty row, restore it", (DW_CFA_nop),
	   (DW_CFA_remember_state, DW_CFA_def_cfa, 7, 8, DW_CFA_offset | 16, 1,
	    DW_CFA_advance_loc | 3, DW_CFA_restore_state), 0,
	   ROW(0, 3, STD_CFA, STD_RA),
	   ROW(3, PCLEN, NOCFA, NORULES)),

	/* GNU extensions. */
	MC("GNU_args_size", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_GNU_args_size, 16, DW_CFA_advance_loc | 1,
	    DW_CFA_GNU_args_size, 0), 0,
	   ROWX(0, 1, STD_CFA, 0, 0, STD_RA),
	   ROWX(1, 2, STD_CFA, 0, 16, STD_RA),
	   ROWX(2, PCLEN, STD_CFA, 0, 0, STD_RA)),
	MC("GNU_args_size persists", STD,
	   (DW_CFA_GNU_args_size, 0x80, 0x01, DW_CFA_advance_loc | 1, DW_CFA_offset | 3, 1), 0,
	   ROWX(0, 1, STD_CFA, 0, 128, STD_RA),
	   ROWX(1, PCLEN, STD_CFA, 0, 128, OFF(3, -8), STD_RA)),
	MC("GNU_args_size in the CIE", (DW_CFA_def_cfa, 7, 8, DW_CFA_GNU_args_size, 8),
	   (DW_CFA_nop), 0,
	   ROWX(0, PCLEN, STD_CFA, 0, 8, NORULES)),
	MC("GNU_window_save toggles ra_sign_state", STD,
	   (DW_CFA_GNU_window_save, DW_CFA_advance_loc | 1, DW_CFA_GNU_window_save,
	    DW_CFA_advance_loc | 1, DW_CFA_GNU_window_save), 0,
	   ROWX(0, 1, STD_CFA, 1, 0, STD_RA),
	   ROWX(1, 2, STD_CFA, 0, 0, STD_RA),
	   ROWX(2, PCLEN, STD_CFA, 1, 0, STD_RA)),
	/* FEAT_PAuth_LR: signed with the PC (bits 0 and 1), then
	 * authenticated by a plain negate (bit 0 only: bit 1 stays, the RA
	 * is not signed), then signed again with the PC and restored. */
	MC("AARCH64_negate_ra_state_with_pc toggles bits 0 and 1", STD,
	   (DW_CFA_AARCH64_negate_ra_state_with_pc, DW_CFA_advance_loc | 1,
	    DW_CFA_GNU_window_save, DW_CFA_advance_loc | 1, DW_CFA_remember_state,
	    DW_CFA_AARCH64_negate_ra_state_with_pc, DW_CFA_advance_loc | 1,
	    DW_CFA_restore_state), 0,
	   ROWX(0, 1, STD_CFA, 3, 0, STD_RA),
	   ROWX(1, 2, STD_CFA, 2, 0, STD_RA),
	   ROWX(2, 3, STD_CFA, 1, 0, STD_RA),
	   ROWX(3, PCLEN, STD_CFA, 2, 0, STD_RA)),
	MC("GNU_window_save in the CIE, restore_state", (DW_CFA_def_cfa, 31, 0,
	   DW_CFA_GNU_window_save),
	   (DW_CFA_remember_state, DW_CFA_GNU_window_save, DW_CFA_advance_loc | 1,
	    DW_CFA_restore_state), 0,
	   ROWX(0, 1, CFA(31, 0), 0, 0, NORULES),
	   ROWX(1, PCLEN, CFA(31, 0), 1, 0, NORULES)),

	/* Errors in the FDE program: the rows before stay valid. */
	MC("advance past the FDE end", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_advance_loc | 0x20), BK_E_CORRUPT,
	   ROW(0, 1, STD_CFA, STD_RA)),
	MC("advance_loc4 past the FDE end", STD, (DW_CFA_advance_loc4, U32(0x21)), BK_E_CORRUPT,
	   { 0 }),
	MC("MIPS_advance_loc8 wraps", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_MIPS_advance_loc8, U64(UINT64_MAX)), BK_E_CORRUPT,
	   ROW(0, 1, STD_CFA, STD_RA)),
	MC("set_loc backwards", STD,
	   (DW_CFA_advance_loc | 4, DW_CFA_set_loc, U32(PC0 + 2)), BK_E_CORRUPT,
	   ROW(0, 4, STD_CFA, STD_RA)),
	MC("set_loc before pc_begin", STD, (DW_CFA_set_loc, U32(PC0 - 1)), BK_E_CORRUPT, { 0 }),
	MC("set_loc past the FDE end", STD, (DW_CFA_set_loc, U32(PC0 + PCLEN + 1)), BK_E_CORRUPT,
	   { 0 }),
	MC("restore_state on an empty stack", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_restore_state), BK_E_CORRUPT,
	   ROW(0, 1, STD_CFA, STD_RA)),
	MC("restore_state once too often", STD,
	   (DW_CFA_remember_state, DW_CFA_advance_loc | 1, DW_CFA_restore_state,
	    DW_CFA_restore_state), BK_E_CORRUPT,
	   ROW(0, 1, STD_CFA, STD_RA)),
	MC("unknown opcode 0x1c", STD, (DW_CFA_advance_loc | 1, DW_CFA_lo_user), BK_E_UNSUPPORTED,
	   ROW(0, 1, STD_CFA, STD_RA)),
	MC("unknown opcode 0x3f", STD, (DW_CFA_hi_user), BK_E_UNSUPPORTED, { 0 }),
	MC("def_cfa_offset while the CFA is an expression", STD,
	   (DW_CFA_def_cfa_expression, 1, DW_OP_lit0, DW_CFA_advance_loc | 1,
	    DW_CFA_def_cfa_offset, 16), BK_E_CORRUPT,
	   ROW(0, 1, CFAX((DW_OP_lit0)), STD_RA)),
	MC("def_cfa_offset_sf while the CFA is an expression", STD,
	   (DW_CFA_def_cfa_expression, 1, DW_OP_lit0, DW_CFA_def_cfa_offset_sf, 2), BK_E_CORRUPT,
	   { 0 }),
	/* Not DWARF (§6.4.2.2 wants a register+offset rule), but libgcc and
	 * gdb take the last register+offset rule's offset, and libgcrypt's
	 * assembly relies on it. */
	MC("def_cfa_register while the CFA is an expression: the last offset", STD,
	   (DW_CFA_def_cfa_offset, 16, DW_CFA_advance_loc | 1, DW_CFA_def_cfa_expression, 1,
	    DW_OP_lit0, DW_CFA_advance_loc | 1, DW_CFA_def_cfa_register, 6), 0,
	   ROW(0, 1, CFA(7, 16), STD_RA),
	   ROW(1, 2, CFAX((DW_OP_lit0)), STD_RA),
	   ROW(2, PCLEN, CFA(6, 16), STD_RA)),
	MC("def_cfa_register after an expression: the offset as remembered", STD,
	   (DW_CFA_def_cfa_offset, 16, DW_CFA_def_cfa_expression, 1, DW_OP_lit0,
	    DW_CFA_remember_state, DW_CFA_def_cfa, 7, 32, DW_CFA_def_cfa_expression, 1, DW_OP_lit0 + 1,
	    DW_CFA_advance_loc | 1, DW_CFA_restore_state, DW_CFA_def_cfa_register, 6), 0,
	   ROW(0, 1, CFAX((DW_OP_lit0 + 1)), STD_RA),
	   ROW(1, PCLEN, CFA(6, 16), STD_RA)),
	MC("def_cfa_register after an expression with no register+offset rule",
	   (DW_CFA_def_cfa_expression, 1, DW_OP_lit0 + 5), (DW_CFA_def_cfa_register, 6),
	   BK_E_CORRUPT, { 0 }),
	MC("def_cfa_offset with no CFA", (DW_CFA_nop), (DW_CFA_def_cfa_offset, 16), BK_E_CORRUPT,
	   { 0 }),
	MC("def_cfa_register with no CFA", (DW_CFA_nop), (DW_CFA_def_cfa_register, 6), BK_E_CORRUPT,
	   { 0 }),
	MC("expression block longer than the FDE", STD, (DW_CFA_expression, 16, 6, OP_BREG7),
	   BK_E_CORRUPT, { 0 }),
	MC("def_cfa_expression block longer than the FDE", STD,
	   (DW_CFA_advance_loc | 1, DW_CFA_def_cfa_expression, 2, OP_BREG7), BK_E_CORRUPT,
	   ROW(0, 1, STD_CFA, STD_RA)),
	MC("register number 0x10000", STD, (DW_CFA_offset_extended, 0x80, 0x80, 0x04, 1),
	   BK_E_BAD_REG, { 0 }),
	MC("truncated instruction", STD, (DW_CFA_advance_loc | 2, DW_CFA_offset_extended, 3),
	   BK_E_CORRUPT, ROW(0, 2, STD_CFA, STD_RA)),

	/* Errors in the CIE's initial instructions. */
	MC_INIT("advance_loc in the CIE", (DW_CFA_def_cfa, 7, 8, DW_CFA_advance_loc | 1),
		BK_E_CORRUPT),
	MC_INIT("advance_loc 0 in the CIE", (DW_CFA_advance_loc | 0), BK_E_CORRUPT),
	MC_INIT("advance_loc1 in the CIE", (DW_CFA_advance_loc1, 1), BK_E_CORRUPT),
	MC_INIT("advance_loc2 in the CIE", (DW_CFA_advance_loc2, U16(1)), BK_E_CORRUPT),
	MC_INIT("advance_loc4 in the CIE", (DW_CFA_advance_loc4, U32(1)), BK_E_CORRUPT),
	MC_INIT("MIPS_advance_loc8 in the CIE", (DW_CFA_MIPS_advance_loc8, U64(1)), BK_E_CORRUPT),
	MC_INIT("set_loc in the CIE", (DW_CFA_set_loc, U32(PC0)), BK_E_CORRUPT),
	MC_INIT("restore in the CIE", (DW_CFA_offset | 3, 1, DW_CFA_restore | 3), BK_E_CORRUPT),
	MC_INIT("restore_extended in the CIE", (DW_CFA_restore_extended, 3), BK_E_CORRUPT),
	MC_INIT("remember_state in the CIE", (DW_CFA_remember_state), BK_E_CORRUPT),
	MC_INIT("restore_state in the CIE", (DW_CFA_restore_state), BK_E_CORRUPT),
	MC_INIT("unknown opcode in the CIE", (DW_CFA_def_cfa, 7, 8, 0x3f), BK_E_UNSUPPORTED),
	MC_INIT("def_cfa_offset in the CIE with no CFA", (DW_CFA_def_cfa_offset, 8), BK_E_CORRUPT),
	MC_INIT("register 0x10000 in the CIE", (DW_CFA_undefined, 0x80, 0x80, 0x04), BK_E_BAD_REG),
	MC_INIT("truncated instruction in the CIE", (DW_CFA_def_cfa, 7), BK_E_CORRUPT),
};

/* One section with the case's CIE ("zR", udata4) and one FDE [PC0,
 * PC0+PCLEN), followed by a terminator and padding: so a block running past
 * the FDE still lies inside the section. */
struct built {
	struct sec_builder s;
	struct cfi_section sec;
	struct cfi_cie cie;
	struct cfi_fde fde;
	size_t fde_off;
};

static int build_one(struct built *o, uint64_t code_align, int64_t data_align,
		     const uint8_t *cie_insns, size_t cie_len, const uint8_t *fde_insns,
		     size_t fde_len)
{
	sb_init(&o->s, true, 0x4000, 8);
	size_t c = put_cie(&o->s, &(struct cie_spec){
		.aug = "zR", .aug_data = B(DW_EH_PE_udata4), .code_align = code_align,
		.data_align = data_align, .ra = 16, .insns = cie_insns, .insns_len = cie_len });
	o->fde_off = put_fde(&o->s, &(struct fde_spec){
		.cie_off = c, .enc = DW_EH_PE_udata4, .pc_begin = PC0, .pc_len = PCLEN, .z = true,
		.insns = fde_insns, .insns_len = fde_len });
	for (int i = 0; i < 16; i++)
		put_u8(&o->s.b, 0);
	o->sec = sec_of(&o->s);
	return cfi_decode_fde(&o->sec, o->fde_off, &o->fde, &o->cie);
}

static void check_rule(const struct cfi_section *sec, const struct cfi_rule *got,
		       const struct want_rule *w, const char *ctx)
{
	CHECK_INT(got->kind, w->kind, ctx);
	switch (w->kind) {
	case BK_RULE_EXPRESSION:
	case BK_RULE_VAL_EXPRESSION:
	case BK_RULE_CFA_EXPRESSION:
		CHECK_INT(got->expr_len, w->expr_len, ctx);
		CHECK_INT(got->reg, 0, ctx);
		CHECK(got->value >= 0 && (uint64_t)got->value + got->expr_len <= sec->len,
		      "%s: expression offset %lld out of the section", ctx, (long long)got->value);
		if (w->expr_len && got->expr_len == w->expr_len && got->value >= 0 &&
		    (uint64_t)got->value + got->expr_len <= sec->len)
			CHECK(memcmp(cfi_rule_expr(sec, got), w->expr, w->expr_len) == 0,
			      "%s: expression bytes", ctx);
		break;
	default:
		CHECK_INT(got->value, w->value, ctx);
		CHECK_INT(got->reg, w->rreg, ctx);
		CHECK_INT(got->expr_len, 0, ctx);
		break;
	}
}

static void check_row(const struct cfi_section *sec, const struct cfi_row *got,
		      const struct want_row *w, const char *name, size_t i)
{
	char ctx[160];
	snprintf(ctx, sizeof(ctx), "%s: row %zu", name, i);
	CHECK_U64(got->loc, PC0 + w->loc, ctx);
	CHECK_U64(got->loc_end, PC0 + w->loc_end, ctx);
	CHECK_INT(got->ra_sign_state, w->ra_sign_state, ctx);
	CHECK_U64(got->args_size, w->args_size, ctx);
	snprintf(ctx, sizeof(ctx), "%s: row %zu CFA", name, i);
	check_rule(sec, &got->cfa, &w->cfa, ctx);
	size_t n = 0;
	while (n < BK_ARRAY_LEN(w->rules) && w->rules[n].kind != BK_RULE_NONE)
		n++;
	snprintf(ctx, sizeof(ctx), "%s: row %zu nrules", name, i);
	CHECK_INT(got->nrules, n, ctx);
	for (size_t k = 0; k < n && k < got->nrules; k++) {
		snprintf(ctx, sizeof(ctx), "%s: row %zu r%u", name, i, w->rules[k].reg);
		CHECK_INT(got->regno[k], w->rules[k].reg, ctx);
		check_rule(sec, &got->rule[k], &w->rules[k], ctx);
		const struct cfi_rule *r = cfi_row_rule(got, w->rules[k].reg);
		CHECK(r == &got->rule[k], "%s: cfi_row_rule", ctx);
	}
}

static void test_machine_rows(void)
{
	static struct built o;
	for (size_t i = 0; i < BK_ARRAY_LEN(machine_cases); i++) {
		const struct machine_case *c = &machine_cases[i];
		int err = build_one(&o, c->code_align, c->data_align, c->cie, c->cie_len, c->fde,
				    c->fde_len);
		CHECK_INT(err, 0, c->name);
		if (err)
			continue;
		struct cfi_machine m;
		err = cfi_machine_init(&m, &o.sec, &o.cie, &o.fde);
		CHECK_INT(err, c->init_err, c->name);
		if (err)
			continue;
		struct cfi_row row;
		size_t n = 0;
		while (n < BK_ARRAY_LEN(c->rows) && c->rows[n].loc_end != 0)
			n++;
		for (size_t k = 0; k < n; k++) {
			char ctx[160];
			snprintf(ctx, sizeof(ctx), "%s: next %zu", c->name, k);
			err = cfi_machine_next(&m, &row);
			CHECK_INT(err, 1, ctx);
			if (err != 1)
				break;
			check_row(&o.sec, &row, &c->rows[k], c->name, k);
		}
		if (err != 1 && n)
			continue;
		CHECK_INT(cfi_machine_next(&m, &row), c->err, c->name);
		/* Done for good, after an error too. */
		CHECK_INT(cfi_machine_next(&m, &row), 0, c->name);
	}
}

/* DW_CFA_set_loc and expressions through the machine in .debug_frame, and
 * the exact section offsets of expression rules. */
static void test_machine_debug_frame(void)
{
	struct sec_builder s;
	struct cfi_section sec;
	struct cfi_fde fde;
	struct cfi_cie cie;
	struct cfi_machine m;
	struct cfi_row row;
	size_t c, f;

	/* 32-bit DWARF, v3 CIE, 8-byte addresses. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 3, .ra = 16, .insns = BX(STD) });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .pc_begin = 0x401000, .pc_len = 0x20,
		.insns = B(DW_CFA_set_loc, U64(0x401008), DW_CFA_def_cfa_offset, 16,
			   DW_CFA_set_loc, U64(0x401010), DW_CFA_expression, 3, 1, DW_OP_lit0) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "debug set_loc");
	CHECK_INT(cfi_machine_init(&m, &sec, &cie, &fde), 0, "debug set_loc");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "debug set_loc row 0");
	CHECK_U64(row.loc, 0x401000, "debug set_loc row 0");
	CHECK_U64(row.loc_end, 0x401008, "debug set_loc row 0");
	CHECK_INT(row.cfa.value, 8, "debug set_loc row 0 CFA");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "debug set_loc row 1");
	CHECK_U64(row.loc, 0x401008, "debug set_loc row 1");
	CHECK_U64(row.loc_end, 0x401010, "debug set_loc row 1");
	CHECK_INT(row.cfa.value, 16, "debug set_loc row 1 CFA");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "debug set_loc row 2");
	CHECK_U64(row.loc, 0x401010, "debug set_loc row 2");
	CHECK_U64(row.loc_end, 0x401020, "debug set_loc row 2");
	const struct cfi_rule *r = cfi_row_rule(&row, 3);
	CHECK(r && r->kind == BK_RULE_EXPRESSION, "debug set_loc row 2 r3");
	/* The block: FDE instructions + 9 + 2 + 9 + 3 (opcode, reg, length). */
	size_t want_off = (size_t)(fde.insns - sec.data) + 9 + 2 + 9 + 3;
	if (r) {
		CHECK_INT(r->value, want_off, "expression offset in the section");
		CHECK_INT(r->expr_len, 1, "expression length");
		CHECK_INT(cfi_rule_expr(&sec, r)[0], DW_OP_lit0, "expression byte");
	}
	CHECK_INT(cfi_machine_next(&m, &row), 0, "debug set_loc end");

	/* An expression in the CIE's initial instructions points into the CIE. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 3, .ra = 16,
		.insns = B(DW_CFA_def_cfa_expression, 2, OP_BREG7, 8, DW_CFA_val_expression, 16, 1,
			   DW_OP_lit0 + 3) });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .pc_begin = 0x401000, .pc_len = 0x20 });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "CIE expressions");
	CHECK_INT(cfi_row_at(&sec, &cie, &fde, 0x401000, &row), 0, "CIE expressions");
	CHECK_INT(row.cfa.kind, BK_RULE_CFA_EXPRESSION, "CIE def_cfa_expression");
	CHECK_INT(row.cfa.value, cie.insns - sec.data + 2, "CIE def_cfa_expression offset");
	CHECK_INT(row.cfa.expr_len, 2, "CIE def_cfa_expression length");
	r = cfi_row_rule(&row, 16);
	CHECK(r && r->kind == BK_RULE_VAL_EXPRESSION, "CIE val_expression");
	if (r) {
		CHECK_INT(r->value, cie.insns - sec.data + 7, "CIE val_expression offset");
		CHECK_INT(r->expr_len, 1, "CIE val_expression length");
	}

	/* 4-byte addresses (v4 CIE, address_size 4). */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .addr_size = 4, .data_align = -4,
					    .ra = 8, .insns = B(DW_CFA_def_cfa, 4, 4) });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .addr_size = 4, .pc_begin = 0x8048000,
		.pc_len = 0x10, .insns = B(DW_CFA_set_loc, U32(0x8048004), DW_CFA_def_cfa_offset, 8) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "debug set_loc 4");
	CHECK_INT(cfi_row_at(&sec, &cie, &fde, 0x8048003, &row), 0, "debug set_loc 4 before");
	CHECK_INT(row.cfa.value, 4, "debug set_loc 4 before");
	CHECK_U64(row.loc_end, 0x8048004, "debug set_loc 4 before");
	CHECK_INT(cfi_row_at(&sec, &cie, &fde, 0x8048004, &row), 0, "debug set_loc 4 after");
	CHECK_INT(row.cfa.value, 8, "debug set_loc 4 after");

	/* 64-bit DWARF. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .is64 = true, .addr_size = 8, .ra = 16,
					    .insns = BX(STD) });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .is64 = true, .pc_begin = 0x401000,
		.pc_len = 0x10, .insns = B(DW_CFA_advance_loc | 2, DW_CFA_def_cfa_offset, 16) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "debug64 rows");
	CHECK_INT(cfi_row_at(&sec, &cie, &fde, 0x401001, &row), 0, "debug64 row 0");
	CHECK_INT(row.cfa.value, 8, "debug64 row 0");
	CHECK_INT(cfi_row_at(&sec, &cie, &fde, 0x40100f, &row), 0, "debug64 row 1");
	CHECK_INT(row.cfa.value, 16, "debug64 row 1");

	/* §6.4.2.1: with a non-zero segment_selector_size, DW_CFA_set_loc's
	 * address is preceded by a segment selector, as the FDE's
	 * initial_location is. */
	sb_init(&s, false, 0, 8);
	c = put_cie(&s, &(struct cie_spec){ .version = 4, .addr_size = 8, .seg_size = 2, .ra = 16,
					    .insns = BX(STD) });
	f = put_fde(&s, &(struct fde_spec){ .cie_off = c, .seg_size = 2, .pc_begin = 0x401000,
		.pc_len = 0x20, .insns = B(DW_CFA_set_loc, U16(0), U64(0x401008),
					   DW_CFA_def_cfa_offset, 16) });
	sec = sec_of(&s);
	CHECK_INT(cfi_decode_fde(&sec, f, &fde, &cie), 0, "set_loc with segment selector");
	CHECK_INT(cfi_machine_init(&m, &sec, &cie, &fde), 0, "set_loc with segment selector");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "set_loc with segment selector row 0");
	CHECK_U64(row.loc_end, 0x401008, "set_loc with segment selector row 0");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "set_loc with segment selector row 1");
	CHECK_U64(row.loc, 0x401008, "set_loc with segment selector row 1");
	CHECK_INT(row.cfa.value, 16, "set_loc with segment selector row 1 CFA");
	CHECK_INT(cfi_machine_next(&m, &row), 0, "set_loc with segment selector end");
	/* Truncated selector. */
	struct cfi_insn in;
	const uint8_t short_sel[] = { DW_CFA_set_loc, 0 };
	struct buf b = buf_make(short_sel, sizeof(short_sel));
	CHECK_INT(cfi_decode_insn(&b, &sec, &cie, &fde, &in), BK_E_CORRUPT,
		  "set_loc segment selector truncated");
}

/* Fixed bounds: remember_state depth, the rules of a row, the shared pool. */
static void test_machine_limits(void)
{
	static struct built o;
	struct cfi_machine m;
	struct cfi_row row;
	uint8_t insns[512];
	size_t n;

	/* CFI_STATE_DEPTH nested levels work, one more is BK_E_LIMIT. */
	for (int extra = 0; extra <= 1; extra++) {
		n = 0;
		for (int i = 0; i < CFI_STATE_DEPTH + extra; i++) {
			insns[n++] = DW_CFA_remember_state;
			insns[n++] = DW_CFA_def_cfa_offset;
			insns[n++] = (uint8_t)(16 + 8 * i);
		}
		insns[n++] = DW_CFA_advance_loc | 1;
		for (int i = 0; i < CFI_STATE_DEPTH; i++)
			insns[n++] = DW_CFA_restore_state;
		CHECK_INT(build_one(&o, 1, -8, BX(STD), insns, n), 0, "depth");
		CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), 0, "depth");
		if (!extra) {
			CHECK_INT(cfi_machine_next(&m, &row), 1, "depth 8 row 0");
			CHECK_INT(row.cfa.value, 16 + 8 * (CFI_STATE_DEPTH - 1), "depth 8 row 0");
			CHECK_INT(cfi_machine_next(&m, &row), 1, "depth 8 row 1");
			CHECK_INT(row.cfa.value, 8, "depth 8 unwound to the CIE's CFA");
			CHECK_INT(cfi_machine_next(&m, &row), 0, "depth 8 end");
		} else {
			CHECK_INT(cfi_machine_next(&m, &row), BK_E_LIMIT, "depth 9");
		}
	}

	/* CFI_MAX_RULES registers in a row work (r16 from the CIE plus 47),
	 * one more is BK_E_LIMIT; replacing a rule at the limit is fine. */
	n = 0;
	for (unsigned r = 0; r < CFI_MAX_RULES; r++) {
		if (r == 16)
			continue;
		insns[n++] = DW_CFA_undefined;
		insns[n++] = (uint8_t)r;
	}
	insns[n++] = DW_CFA_offset | 3; /* replaces r3's rule */
	insns[n++] = 2;
	insns[n++] = DW_CFA_advance_loc | 1;
	insns[n++] = DW_CFA_restore | 3; /* back to no rule: 47 */
	insns[n++] = DW_CFA_undefined;
	insns[n++] = 100; /* 48 again */
	insns[n++] = DW_CFA_advance_loc | 1;
	insns[n++] = DW_CFA_undefined;
	insns[n++] = 101; /* 49 */
	CHECK_INT(build_one(&o, 1, -8, BX(STD), insns, n), 0, "rules");
	CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), 0, "rules");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "48 rules");
	CHECK_INT(row.nrules, CFI_MAX_RULES, "48 rules");
	CHECK_INT(row.regno[0], 0, "48 rules: first");
	CHECK_INT(row.regno[CFI_MAX_RULES - 1], CFI_MAX_RULES - 1, "48 rules: last");
	CHECK_INT(cfi_row_rule(&row, 3)->kind, BK_RULE_OFFSET, "48 rules: r3 replaced");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "48 rules after a restore");
	CHECK_INT(row.nrules, CFI_MAX_RULES, "48 rules after a restore");
	CHECK(cfi_row_rule(&row, 3) == NULL, "48 rules: r3 restored to none");
	CHECK_INT(cfi_machine_next(&m, &row), BK_E_LIMIT, "49 rules");

	/* The same in the CIE's initial instructions. */
	n = 0;
	for (unsigned r = 0; r <= CFI_MAX_RULES; r++) {
		insns[n++] = DW_CFA_same_value;
		insns[n++] = (uint8_t)r;
	}
	CHECK_INT(build_one(&o, 1, -8, insns, n - 2, B(DW_CFA_nop)), 0, "CIE rules");
	CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), 0, "CIE 48 rules");
	CHECK_INT(build_one(&o, 1, -8, insns, n, B(DW_CFA_nop)), 0, "CIE rules");
	CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), BK_E_LIMIT, "CIE 49 rules");

	/* The pool: two remembered rows of 48 rules fit in 128 slots, a third
	 * does not, whatever the depth. */
	n = 0;
	for (unsigned r = 0; r < CFI_MAX_RULES; r++) {
		insns[n++] = DW_CFA_same_value;
		insns[n++] = (uint8_t)r;
	}
	size_t base = n;
	insns[n++] = DW_CFA_remember_state;
	insns[n++] = DW_CFA_remember_state;
	insns[n++] = DW_CFA_advance_loc | 1;
	insns[n++] = DW_CFA_restore_state;
	insns[n++] = DW_CFA_restore_state;
	CHECK_INT(build_one(&o, 1, -8, insns, base, insns + base, n - base), 0, "pool");
	CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), 0, "pool 2 x 48");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "pool 2 x 48");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "pool 2 x 48 restored");
	CHECK_INT(row.nrules, CFI_MAX_RULES, "pool 2 x 48 restored");
	CHECK_INT(cfi_machine_next(&m, &row), 0, "pool 2 x 48 end");
	insns[base + 1] = DW_CFA_remember_state;
	n = base;
	for (int i = 0; i < 3; i++)
		insns[n++] = DW_CFA_remember_state;
	CHECK_INT(build_one(&o, 1, -8, insns, base, insns + base, n - base), 0, "pool");
	CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), 0, "pool 3 x 48");
	CHECK_INT(cfi_machine_next(&m, &row), BK_E_LIMIT, "pool 3 x 48");

	/* Restoring gives the pool back: remember/restore many times. */
	n = base;
	for (int i = 0; i < 40; i++) {
		insns[n++] = DW_CFA_remember_state;
		insns[n++] = DW_CFA_restore_state;
	}
	CHECK_INT(build_one(&o, 1, -8, insns, base, insns + base, n - base), 0, "pool reuse");
	CHECK_INT(cfi_machine_init(&m, &o.sec, &o.cie, &o.fde), 0, "pool reuse");
	CHECK_INT(cfi_machine_next(&m, &row), 1, "pool reuse");
	CHECK_INT(row.nrules, CFI_MAX_RULES, "pool reuse");
	CHECK_INT(cfi_machine_next(&m, &row), 0, "pool reuse end");
}

/* ---- FDE lookup: the built index and .eh_frame_hdr (LSB 5.0 §10.6.2) ------- */

#define EH_ADDR 0x5000u
#define AT_END INT64_MIN
#define AT_CIE (INT64_MIN + 1)
#define HDR_ADDR 0x4f00u

/* FDEs given out of order; B and D are adjacent. */
static const struct {
	uint64_t begin, len;
} tbl_fdes[] = {
	{ 0x3000, 0x100 }, /* A */
	{ 0x1000, 0x80 },  /* B */
	{ 0x2000, 0x40 },  /* C */
	{ 0x1080, 0x80 },  /* D */
};
#define NTBL BK_ARRAY_LEN(tbl_fdes)

struct tbl {
	struct sec_builder s;
	size_t cie;
	size_t fde[NTBL];
	struct cfi_section sec;
};

static void build_tbl(struct tbl *t)
{
	sb_init(&t->s, true, EH_ADDR, 8);
	t->cie = put_cie(&t->s, &(struct cie_spec){ .aug = "zR", .aug_data = B(0x1b), .ra = 16,
						    .insns = BX(STD) });
	for (size_t i = 0; i < NTBL; i++)
		t->fde[i] = put_fde(&t->s, &(struct fde_spec){
			.cie_off = t->cie, .enc = 0x1b, .pc_begin = tbl_fdes[i].begin,
			.pc_len = tbl_fdes[i].len, .z = true, .insns = B(DW_CFA_nop) });
	put_uN(&t->s.b, 0, 4);
	t->sec = sec_of(&t->s);
}

static const struct {
	uint64_t pc;
	int want; /* index in tbl_fdes, -1: BK_E_NOT_FOUND */
} tbl_lookups[] = {
	{ 0, -1 }, { 0xfff, -1 },
	{ 0x1000, 1 }, { 0x1001, 1 }, { 0x107f, 1 },
	{ 0x1080, 3 }, { 0x10ff, 3 },
	{ 0x1100, -1 }, { 0x1800, -1 }, { 0x1fff, -1 },
	{ 0x2000, 2 }, { 0x203f, 2 },
	{ 0x2040, -1 }, { 0x2fff, -1 },
	{ 0x3000, 0 }, { 0x30ff, 0 },
	{ 0x3100, -1 }, { 0xffffffff, -1 }, { UINT64_MAX, -1 },
};

static void check_lookups(const struct cfi_table *t, const struct tbl *b, const char *name)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(tbl_lookups); i++) {
		char ctx[160];
		snprintf(ctx, sizeof(ctx), "%s: pc 0x%" PRIx64, name, tbl_lookups[i].pc);
		struct cfi_fde fde;
		struct cfi_cie cie;
		int want = tbl_lookups[i].want;
		int err = cfi_table_find(t, tbl_lookups[i].pc, &fde, &cie);
		CHECK_INT(err, want < 0 ? BK_E_NOT_FOUND : 0, ctx);
		if (want < 0 || err)
			continue;
		CHECK_U64(fde.off, b->fde[want], ctx);
		CHECK_U64(fde.pc_begin, tbl_fdes[want].begin, ctx);
		CHECK_U64(fde.pc_end, tbl_fdes[want].begin + tbl_fdes[want].len, ctx);
		CHECK_U64(cie.off, b->cie, ctx);
	}
}

static void test_table_index(void)
{
	static struct tbl b;
	struct cfi_table t;
	build_tbl(&b);
	CHECK_INT(cfi_table_init(&t, &b.sec, NULL), 0, "index");
	CHECK(!cfi_table_uses_hdr(&t), "index: no header");
	CHECK_INT(t.nindex, NTBL, "index: every FDE");
	CHECK_INT(t.nbad, 0, "index: nbad");
	CHECK_INT(t.first_error, 0, "index: first_error");
	/* Sorted by pc_begin: B D C A. */
	static const int order[] = { 1, 3, 2, 0 };
	for (size_t i = 0; i < NTBL && i < t.nindex; i++) {
		CHECK_U64(t.index[i].pc_begin, tbl_fdes[order[i]].begin, "index sorted");
		CHECK_U64(t.index[i].pc_end, tbl_fdes[order[i]].begin + tbl_fdes[order[i]].len,
			  "index pc_end");
		CHECK_U64(t.index[i].fde_off, b.fde[order[i]], "index fde_off");
	}
	check_lookups(&t, &b, "index");
	cfi_table_free(&t);
	CHECK(t.index == NULL && t.nindex == 0, "cfi_table_free");

	/* A header with no data is no header. */
	struct cfi_hdr none = { NULL, 0, HDR_ADDR };
	CHECK_INT(cfi_table_init(&t, &b.sec, &none), 0, "empty header");
	CHECK(!cfi_table_uses_hdr(&t), "empty header: index");
	check_lookups(&t, &b, "empty header");
	cfi_table_free(&t);

	/* An empty section. */
	struct cfi_section empty = b.sec;
	empty.len = 0;
	CHECK_INT(cfi_table_init(&t, &empty, NULL), 0, "empty section");
	CHECK_INT(t.nindex, 0, "empty section");
	struct cfi_fde fde;
	struct cfi_cie cie;
	CHECK_INT(cfi_table_find(&t, 0x1000, &fde, &cie), BK_E_NOT_FOUND, "empty section");
	cfi_table_free(&t);

	/* Allocation failure while building is BK_E_NOMEM, nothing kept. */
	base_alloc_fail_after(1);
	CHECK_INT(cfi_table_init(&t, &b.sec, NULL), BK_E_NOMEM, "index allocation fails");
	CHECK(t.index == NULL && t.nindex == 0, "index allocation fails: nothing kept");
	base_alloc_fail_after(0);
}

/* A hand-built .eh_frame_hdr for the table above. */
struct hdr_opts {
	const char *name;
	uint8_t version, ptr_enc, count_enc, table_enc;
	int64_t ptr_adjust;     /* added to eh_frame_ptr */
	int64_t count_adjust;   /* added to fde_count */
	bool swap;              /* entries 1 and 2 exchanged */
	int64_t fde_adjust;     /* added to the last entry's FDE address; AT_END: the
				 * section's end */
	size_t cut;             /* bytes removed from the end */
	bool accepted;
};

static void put_hdr_value(struct bb *h, uint8_t enc, uint64_t v)
{
	if ((enc & 0x70) == DW_EH_PE_datarel)
		put_ptr(h, enc & 0x0f, v - HDR_ADDR, HDR_ADDR, 8, 0);
	else
		put_ptr(h, enc, v, HDR_ADDR, 8, 0);
}

static void build_hdr(struct bb *h, const struct tbl *b, const struct hdr_opts *o)
{
	static const int order[] = { 1, 3, 2, 0 };
	memset(h, 0, sizeof(*h));
	put_u8(h, o->version);
	put_u8(h, o->ptr_enc);
	put_u8(h, o->count_enc);
	put_u8(h, o->table_enc);
	put_hdr_value(h, o->ptr_enc == DW_EH_PE_omit ? 0x1b : o->ptr_enc,
		      EH_ADDR + (uint64_t)o->ptr_adjust);
	put_hdr_value(h, o->count_enc == DW_EH_PE_omit ? 0x03 : o->count_enc,
		      NTBL + (uint64_t)o->count_adjust);
	/* Encodings the reader must refuse are written as datarel|sdata4. */
	uint8_t tenc = o->table_enc;
	if (tenc == DW_EH_PE_omit || (tenc & 0x0f) == DW_EH_PE_uleb128 || (tenc & 0x0f) == 0x0d)
		tenc = 0x3b;
	for (size_t i = 0; i < NTBL; i++) {
		int k = order[o->swap && (i == 1 || i == 2) ? 3 - i : i];
		uint64_t fde_addr = EH_ADDR + b->fde[k];
		if (i == NTBL - 1)
			fde_addr += (uint64_t)o->fde_adjust;
		put_hdr_value(h, tenc & 0x7f, tbl_fdes[k].begin);
		put_hdr_value(h, tenc & 0x7f, fde_addr);
	}
	h->n -= o->cut;
}

static const struct hdr_opts hdr_cases[] = {
	/* What linkers emit. */
	{ "datarel|sdata4", 1, 0x1b, 0x03, 0x3b, 0, 0, false, 0, 0, true },
	/* Generic decoding paths. */
	{ "udata8 absptr", 1, 0x1b, 0x03, DW_EH_PE_udata8, 0, 0, false, 0, 0, true },
	{ "udata4", 1, DW_EH_PE_udata4, 0x03, DW_EH_PE_udata4, 0, 0, false, 0, 0, true },
	{ "pcrel|sdata4", 1, 0x1b, DW_EH_PE_uleb128, 0x1b, 0, 0, false, 0, 0, true },
	{ "sdata8, udata8 pointer", 1, DW_EH_PE_udata8, DW_EH_PE_udata2, DW_EH_PE_sdata8, 0, 0,
	  false, 0, 0, true },
	{ "datarel|sdata2", 1, 0x1b, 0x03, DW_EH_PE_datarel | DW_EH_PE_sdata2, 0, 0, false, 0, 0,
	  true },
	/* Fewer entries than the table holds is fine (count is what counts). */
	{ "count below the table", 1, 0x1b, 0x03, 0x3b, 0, -1, false, 0, 0, true },

	/* Rejected: the index is built instead. */
	{ "version 2", 2, 0x1b, 0x03, 0x3b, 0, 0, false, 0, 0, false },
	{ "version 0", 0, 0x1b, 0x03, 0x3b, 0, 0, false, 0, 0, false },
	{ "unsorted", 1, 0x1b, 0x03, 0x3b, 0, 0, true, 0, 0, false },
	{ "unsorted, udata8", 1, 0x1b, 0x03, DW_EH_PE_udata8, 0, 0, true, 0, 0, false },
	{ "entry past .eh_frame", 1, 0x1b, 0x03, 0x3b, 0, 0, false, 0x1000, 0, false },
	{ "entry at .eh_frame's end", 1, 0x1b, 0x03, 0x3b, 0, 0, false, AT_END, 0, false },
	{ "entry framing the CIE", 1, 0x1b, 0x03, 0x3b, 0, 0, false, AT_CIE, 0, false },
	{ "entry inside an FDE", 1, 0x1b, 0x03, 0x3b, 0, 0, false, 4, 0, false },
	{ "empty table", 1, 0x1b, 0x03, 0x3b, 0, -NTBL, false, 0, 0, false },
	{ "entry before .eh_frame", 1, 0x1b, 0x03, 0x3b, 0, 0, false, -0x2000, 0, false },
	{ "entry past .eh_frame, udata8", 1, 0x1b, 0x03, DW_EH_PE_udata8, 0, 0, false, 0x1000, 0,
	  false },
	{ "eh_frame_ptr off by 4", 1, 0x1b, 0x03, 0x3b, 4, 0, false, 0, 0, false },
	{ "eh_frame_ptr off by -1", 1, 0x1b, 0x03, 0x3b, -1, 0, false, 0, 0, false },
	{ "truncated table", 1, 0x1b, 0x03, 0x3b, 0, 0, false, 0, 1, false },
	{ "count beyond the table", 1, 0x1b, 0x03, 0x3b, 0, 1, false, 0, 0, false },
	{ "count huge", 1, 0x1b, 0x03, 0x3b, 0, 0xffffffffll - NTBL, false, 0, 0, false },
	{ "table omit", 1, 0x1b, 0x03, DW_EH_PE_omit, 0, 0, false, 0, 0, false },
	{ "table uleb128", 1, 0x1b, 0x03, DW_EH_PE_uleb128, 0, 0, false, 0, 0, false },
	{ "table indirect", 1, 0x1b, 0x03, 0x3b | DW_EH_PE_indirect, 0, 0, false, 0, 0, false },
	{ "table format 0x0d", 1, 0x1b, 0x03, DW_EH_PE_datarel | 0x0d, 0, 0, false, 0, 0, false },
	{ "eh_frame_ptr omit", 1, DW_EH_PE_omit, 0x03, 0x3b, 0, 0, false, 0, 0, false },
	{ "eh_frame_ptr indirect", 1, 0x9b, 0x03, 0x3b, 0, 0, false, 0, 0, false },
	{ "fde_count omit", 1, 0x1b, DW_EH_PE_omit, 0x3b, 0, 0, false, 0, 0, false },
};

static void test_table_hdr(void)
{
	static struct tbl b;
	static struct bb h;
	build_tbl(&b);
	for (size_t i = 0; i < BK_ARRAY_LEN(hdr_cases); i++) {
		const struct hdr_opts *o = &hdr_cases[i];
		struct hdr_opts oo = *o;
		if (o->fde_adjust == AT_END) /* the last entry is A's */
			oo.fde_adjust = (int64_t)b.sec.len - (int64_t)b.fde[0];
		if (o->fde_adjust == AT_CIE)
			oo.fde_adjust = (int64_t)b.cie - (int64_t)b.fde[0];
		build_hdr(&h, &b, &oo);
		struct cfi_hdr hdr = { h.d, h.n, HDR_ADDR };
		struct cfi_table t;
		CHECK_INT(cfi_table_init(&t, &b.sec, &hdr), 0, o->name);
		CHECK_INT(cfi_table_uses_hdr(&t), o->accepted, o->name);
		CHECK_INT(t.nindex, o->accepted ? 0 : NTBL, o->name);
		if (o->accepted && o->count_adjust == 0)
			CHECK_INT(t.hdr_count, NTBL, o->name);
		if (o->count_adjust >= 0 || !o->accepted) {
			check_lookups(&t, &b, o->name);
		} else {
			/* The last entry (A) is not in the table: its PCs find C's
			 * entry, whose FDE does not cover them. */
			struct cfi_fde fde;
			struct cfi_cie cie;
			CHECK_INT(cfi_table_find(&t, 0x3000, &fde, &cie), BK_E_NOT_FOUND, o->name);
			CHECK_INT(cfi_table_find(&t, 0x2000, &fde, &cie), 0, o->name);
			CHECK_U64(fde.off, b.fde[2], o->name);
		}
		cfi_table_free(&t);
	}

	/* Headers too short to hold their fields. */
	build_hdr(&h, &b, &hdr_cases[0]);
	for (size_t len = 0; len < 12; len++) {
		struct cfi_hdr hdr = { h.d, len, HDR_ADDR };
		struct cfi_table t;
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "header of %zu bytes", len);
		CHECK_INT(cfi_table_init(&t, &b.sec, &hdr), 0, ctx);
		CHECK(!cfi_table_uses_hdr(&t), "%s: index", ctx);
		CHECK_INT(t.nindex, NTBL, ctx);
		cfi_table_free(&t);
	}

	/* A header is for .eh_frame only. */
	static struct sec_builder d;
	sb_init(&d, false, EH_ADDR, 8);
	size_t c = put_cie(&d, &(struct cie_spec){ .version = 3, .ra = 16, .insns = BX(STD) });
	size_t f = put_fde(&d, &(struct fde_spec){ .cie_off = c, .pc_begin = 0x1000, .pc_len = 0x80 });
	struct cfi_section dsec = sec_of(&d);
	struct cfi_hdr hdr = { h.d, h.n, HDR_ADDR };
	struct cfi_table t;
	struct cfi_fde fde;
	struct cfi_cie cie;
	CHECK_INT(cfi_table_init(&t, &dsec, &hdr), 0, "header with .debug_frame");
	CHECK(!cfi_table_uses_hdr(&t), "header with .debug_frame: ignored");
	CHECK_INT(cfi_table_find(&t, 0x1010, &fde, &cie), 0, "header with .debug_frame");
	CHECK_U64(fde.off, f, "header with .debug_frame");
	cfi_table_free(&t);

	/* A 4-byte address space: the datarel entries wrap to 32 bits. The
	 * header sits above the code, so the offsets are negative. */
	static struct sec_builder s4;
	sb_init(&s4, true, 0xfffff000u, 4);
	c = put_cie(&s4, &(struct cie_spec){ .aug = "zR", .aug_data = B(0x1b), .data_align = -4,
					     .ra = 8, .insns = B(DW_CFA_def_cfa, 4, 4) });
	f = put_fde(&s4, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x8048000,
					     .pc_len = 0x100, .z = true });
	struct cfi_section sec4 = sec_of(&s4);
	static struct bb h4;
	memset(&h4, 0, sizeof(h4));
	uint64_t hdr4 = 0xffffe000u;
	put_bytes(&h4, B(1, 0x1b, 0x03, 0x3b));
	put_uN(&h4, (uint32_t)(sec4.addr - (hdr4 + 4)), 4);
	put_uN(&h4, 1, 4);
	put_uN(&h4, (uint32_t)(0x8048000u - hdr4), 4);
	put_uN(&h4, (uint32_t)(sec4.addr + f - hdr4), 4);
	struct cfi_hdr hdr_4 = { h4.d, h4.n, hdr4 };
	CHECK_INT(cfi_table_init(&t, &sec4, &hdr_4), 0, "32-bit header");
	CHECK(cfi_table_uses_hdr(&t), "32-bit header accepted");
	CHECK_INT(cfi_table_find(&t, 0x8048080, &fde, &cie), 0, "32-bit header lookup");
	CHECK_U64(fde.off, f, "32-bit header lookup");
	CHECK_U64(fde.pc_end, 0x8048100, "32-bit header lookup");
	CHECK_INT(cfi_table_find(&t, 0x8048100, &fde, &cie), BK_E_NOT_FOUND, "32-bit header end");
	CHECK_INT(cfi_table_find(&t, 0x8047fff, &fde, &cie), BK_E_NOT_FOUND,
		  "32-bit header before");
	cfi_table_free(&t);
}

/* Bad entries among good ones: counted, and the good ones still found. */
static void test_table_bad_entries(void)
{
	static struct sec_builder s;
	struct cfi_table t;
	struct cfi_fde fde;
	struct cfi_cie cie;

	sb_init(&s, true, EH_ADDR, 8);
	size_t c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(0x1b), .ra = 16,
						   .insns = BX(STD) });
	size_t c2 = put_cie(&s, &(struct cie_spec){ .version = 2, .ra = 16 });
	size_t a = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x3000,
						   .pc_len = 0x10, .z = true });
	size_t bad1 = put_fde(&s, &(struct fde_spec){ .cie_off = c2, .pc_begin = 0x4000,
						      .pc_len = 0x10 });
	size_t bb_ = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x1000,
						     .pc_len = 0x10, .z = true });
	/* Its CIE pointer names FDE A. */
	put_fde(&s, &(struct fde_spec){ .cie_off = a, .enc = 0x1b, .pc_begin = 0x5000,
					.pc_len = 0x10, .z = true });
	/* Zero-length FDE: decodes, but covers nothing. */
	put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x6000, .pc_len = 0,
					.z = true });
	size_t cc = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x2000,
						    .pc_len = 0x10, .z = true });
	put_uN(&s.b, 0, 4);
	struct cfi_section sec = sec_of(&s);

	CHECK_INT(cfi_table_init(&t, &sec, NULL), 0, "bad entries");
	CHECK_INT(t.nindex, 3, "bad entries: three good FDEs");
	CHECK_INT(t.nbad, 2, "bad entries: nbad");
	CHECK_INT(t.first_error, BK_E_UNSUPPORTED, "bad entries: first_error");
	CHECK_U64(t.first_error_off, bad1, "bad entries: first_error_off");
	CHECK_INT(cfi_table_find(&t, 0x3008, &fde, &cie), 0, "bad entries: A");
	CHECK_U64(fde.off, a, "bad entries: A");
	CHECK_INT(cfi_table_find(&t, 0x1000, &fde, &cie), 0, "bad entries: B");
	CHECK_U64(fde.off, bb_, "bad entries: B");
	CHECK_INT(cfi_table_find(&t, 0x200f, &fde, &cie), 0, "bad entries: C");
	CHECK_U64(fde.off, cc, "bad entries: C");
	CHECK_INT(cfi_table_find(&t, 0x4000, &fde, &cie), BK_E_NOT_FOUND, "bad entries: bad1");
	CHECK_INT(cfi_table_find(&t, 0x5000, &fde, &cie), BK_E_NOT_FOUND, "bad entries: bad2");
	CHECK_INT(cfi_table_find(&t, 0x6000, &fde, &cie), BK_E_NOT_FOUND, "bad entries: empty");
	cfi_table_free(&t);

	/* A broken length ends the walk there: what came before is kept. */
	sb_init(&s, true, EH_ADDR, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(0x1b), .ra = 16 });
	a = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x3000,
					    .pc_len = 0x10, .z = true });
	size_t broken = s.b.n;
	put_uN(&s.b, 0xfffffff0u, 4);
	put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x1000,
					.pc_len = 0x10, .z = true });
	sec = sec_of(&s);
	CHECK_INT(cfi_table_init(&t, &sec, NULL), 0, "broken length");
	CHECK_INT(t.nindex, 1, "broken length: FDEs before it");
	CHECK_INT(t.nbad, 1, "broken length: nbad");
	CHECK_INT(t.first_error, BK_E_CORRUPT, "broken length: first_error");
	CHECK_U64(t.first_error_off, broken, "broken length: first_error_off");
	CHECK_INT(cfi_table_find(&t, 0x3000, &fde, &cie), 0, "broken length: A");
	CHECK_INT(cfi_table_find(&t, 0x1000, &fde, &cie), BK_E_NOT_FOUND, "broken length: after");
	cfi_table_free(&t);

	/* .eh_frame stops at a zero terminator; .debug_frame steps over one. */
	for (int is_eh = 0; is_eh <= 1; is_eh++) {
		sb_init(&s, is_eh, EH_ADDR, 8);
		c = put_cie(&s, &(struct cie_spec){ .version = 3, .aug = is_eh ? "zR" : "",
						    .aug_data = B(0x1b), .ra = 16 });
		put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x1000,
						.pc_len = 0x10, .z = is_eh });
		put_uN(&s.b, 0, 4);
		put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = 0x1b, .pc_begin = 0x2000,
						.pc_len = 0x10, .z = is_eh });
		sec = sec_of(&s);
		const char *n = is_eh ? "eh terminator" : "debug terminator";
		CHECK_INT(cfi_table_init(&t, &sec, NULL), 0, n);
		CHECK_INT(t.nindex, is_eh ? 1 : 2, n);
		CHECK_INT(t.nbad, 0, n);
		CHECK_INT(cfi_table_find(&t, 0x2000, &fde, &cie), is_eh ? BK_E_NOT_FOUND : 0, n);
		cfi_table_free(&t);
	}

	/* Many FDEs: the index grows past its first allocation. */
	sb_init(&s, true, EH_ADDR, 8);
	c = put_cie(&s, &(struct cie_spec){ .aug = "zR", .aug_data = B(DW_EH_PE_udata4), .ra = 16 });
	size_t offs[200];
	for (unsigned i = 0; i < 200; i++) {
		unsigned k = (i * 37) % 200; /* a permutation: out of order */
		offs[k] = put_fde(&s, &(struct fde_spec){ .cie_off = c, .enc = DW_EH_PE_udata4,
							   .pc_begin = 0x10000 + 0x10 * k,
							   .pc_len = 0x10, .z = true });
	}
	sec = sec_of(&s);
	CHECK_INT(cfi_table_init(&t, &sec, NULL), 0, "200 FDEs");
	CHECK_INT(t.nindex, 200, "200 FDEs");
	int wrong = 0;
	for (unsigned k = 0; k < 200; k++) {
		if (cfi_table_find(&t, 0x10000 + 0x10 * k + (k % 16), &fde, &cie) ||
		    fde.off != offs[k])
			wrong++;
	}
	CHECK_INT(wrong, 0, "200 FDEs: every one found");
	CHECK_INT(cfi_table_find(&t, 0x10000 + 0x10 * 200, &fde, &cie), BK_E_NOT_FOUND,
		  "200 FDEs: past the last");
	cfi_table_free(&t);
}

/* ---- cfi_row_at agrees with iterating cfi_machine_next ------------------- */

static bool rows_equal(const struct cfi_row *a, const struct cfi_row *b)
{
	return a->loc == b->loc && a->loc_end == b->loc_end && a->args_size == b->args_size &&
	       cfi_row_same_rules(a, b);
}

static void test_row_at_everywhere(void)
{
	static struct built o;
	size_t cases = 0;
	for (size_t i = 0; i < BK_ARRAY_LEN(machine_cases); i++) {
		const struct machine_case *c = &machine_cases[i];
		if (c->init_err || build_one(&o, c->code_align, c->data_align, c->cie, c->cie_len,
					     c->fde, c->fde_len))
			continue;
		struct cfi_machine m;
		struct cfi_row rows[8], row;
		size_t n = 0;
		int end = 0;
		if (cfi_machine_init(&m, &o.sec, &o.cie, &o.fde))
			continue;
		while (n < BK_ARRAY_LEN(rows) && (end = cfi_machine_next(&m, &rows[n])) == 1)
			n++;
		cases++;
		int mismatches = 0;
		for (uint64_t pc = PC0 - 1; pc <= PC0 + PCLEN; pc++) {
			int err = cfi_row_at(&o.sec, &o.cie, &o.fde, pc, &row);
			const struct cfi_row *want = NULL;
			for (size_t k = 0; k < n; k++)
				if (rows[k].loc <= pc && pc < rows[k].loc_end)
					want = &rows[k];
			int want_err = pc < PC0 || pc >= PC0 + PCLEN ? BK_E_NOT_FOUND
				     : want ? 0 : end;
			if (err != want_err || (want && !rows_equal(&row, want))) {
				mismatches++;
				fprintf(stderr, "%s: pc 0x%" PRIx64 ": cfi_row_at %d, want %d\n",
					c->name, pc, err, want_err);
			}
		}
		CHECK_INT(mismatches, 0, c->name);
		/* Rows tile [pc_begin, pc_end) when the program is good. */
		if (!c->err) {
			bool tiled = n > 0 && rows[0].loc == PC0 && rows[n - 1].loc_end == PC0 + PCLEN;
			for (size_t k = 1; k < n; k++)
				tiled = tiled && rows[k].loc == rows[k - 1].loc_end &&
					rows[k].loc < rows[k].loc_end;
			CHECK(tiled, "%s: rows tile the FDE", c->name);
		}
	}
	CHECK(cases > 50, "row_at cases run: %zu", cases);
}

/* A small multi-row FDE, checked address by address against hand-written
 * expectations rather than against the machine. */
static void test_row_at_small(void)
{
	static struct built o;
	/* [0,1) CFA rsp+8; [1,4) rsp+16, rbp at -16; [4,0x1c) rbp+16;
	 * [0x1c,0x1d) restored rsp+8 after remember/restore; [0x1d,0x20) same,
	 * args_size 8. */
	const uint8_t fde[] = {
		DW_CFA_advance_loc | 1, DW_CFA_def_cfa_offset, 16, DW_CFA_offset | 6, 2,
		DW_CFA_advance_loc | 3, DW_CFA_def_cfa_register, 6, DW_CFA_remember_state,
		DW_CFA_advance_loc1, 0x18, DW_CFA_def_cfa, 7, 8, DW_CFA_restore | 6,
		DW_CFA_advance_loc | 1, DW_CFA_GNU_args_size, 8,
	};
	CHECK_INT(build_one(&o, 1, -8, BX(STD), fde, sizeof(fde)), 0, "small FDE");
	for (uint64_t off = 0; off < PCLEN; off++) {
		struct cfi_row row;
		char ctx[64];
		snprintf(ctx, sizeof(ctx), "small FDE at +0x%" PRIx64, off);
		CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0 + off, &row), 0, ctx);
		uint64_t lo = off < 1 ? 0 : off < 4 ? 1 : off < 0x1c ? 4 : off < 0x1d ? 0x1c : 0x1d;
		uint64_t hi = off < 1 ? 1 : off < 4 ? 4 : off < 0x1c ? 0x1c : off < 0x1d ? 0x1d : PCLEN;
		CHECK_U64(row.loc, PC0 + lo, ctx);
		CHECK_U64(row.loc_end, PC0 + hi, ctx);
		CHECK_INT(row.cfa.reg, off >= 4 && off < 0x1c ? 6 : 7, ctx);
		CHECK_INT(row.cfa.value, off < 1 || off >= 0x1c ? 8 : 16, ctx);
		const struct cfi_rule *rbp = cfi_row_rule(&row, 6);
		CHECK_INT(rbp ? rbp->value : 0, off >= 1 && off < 0x1c ? -16 : 0, ctx);
		CHECK_U64(row.args_size, off >= 0x1d ? 8 : 0, ctx);
		CHECK_INT(cfi_row_rule(&row, 16)->value, -8, ctx);
	}
	struct cfi_row row;
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0 - 1, &row), BK_E_NOT_FOUND, "before");
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0 + PCLEN, &row), BK_E_NOT_FOUND, "at end");
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, UINT64_MAX, &row), BK_E_NOT_FOUND, "far");

	/* cfi_row_same_rules looks at rules, CFA and RA state, not at the
	 * location or args_size. */
	struct cfi_row a, b;
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0 + 0x1c, &a), 0, "same_rules a");
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0 + 0x1d, &b), 0, "same_rules b");
	CHECK(cfi_row_same_rules(&a, &b), "same rules despite loc and args_size");
	b.ra_sign_state = 1;
	CHECK(!cfi_row_same_rules(&a, &b), "ra_sign_state differs");
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0, &b), 0, "same_rules b");
	CHECK(cfi_row_same_rules(&a, &b), "row 0 and row 3 alike");
	b.cfa.value = 16;
	CHECK(!cfi_row_same_rules(&a, &b), "CFA offset differs");
	CHECK_INT(cfi_row_at(&o.sec, &o.cie, &o.fde, PC0 + 1, &b), 0, "same_rules b");
	CHECK(!cfi_row_same_rules(&a, &b), "a rule more");
	b = a;
	b.rule[0].value = -16;
	CHECK(!cfi_row_same_rules(&a, &b), "a rule's value differs");
	b = a;
	b.regno[0] = 17;
	CHECK(!cfi_row_same_rules(&a, &b), "a rule's register differs");
}

int main(void)
{
	for (size_t i = 0; i < sizeof(mem_bytes); i++)
		mem_bytes[i] = (uint8_t)(0x80 + i);

	test_pointer_rows();
	test_pointer_indirect();
	test_entry_framing();
	test_frame_rows();
	test_cie_rows();
	test_raw_cies();
	test_cie_personality();
	test_fde_decode();
	test_fde_errors();
	test_insn_rows();
	test_insn_set_loc();
	test_insn_names();
	test_machine_rows();
	test_machine_debug_frame();
	test_machine_limits();
	test_table_index();
	test_table_hdr();
	test_table_bad_entries();
	test_row_at_everywhere();
	test_row_at_small();
	return check_summary();
}
