/* The bounded reader: LEB128 edge cases, fixed-size reads, checked
 * arithmetic, and the error table. Each row asserts the exact value or the
 * exact error and that a failed read leaves the reader where it was. */
#include "base/base.h"
#include "check.h"

struct leb_case {
	const char *name;
	uint8_t bytes[24];
	size_t len;
	int err;        /* expected error, 0 for success */
	uint64_t value; /* for ULEB; for SLEB the int64 bit pattern */
	size_t used;    /* bytes consumed on success */
};

static const struct leb_case uleb_cases[] = {
	{ "zero", { 0x00 }, 1, 0, 0, 1 },
	{ "127", { 0x7f }, 1, 0, 127, 1 },
	{ "128", { 0x80, 0x01 }, 2, 0, 128, 2 },
	{ "624485", { 0xe5, 0x8e, 0x26 }, 3, 0, 624485, 3 },
	{ "padded zero", { 0x80, 0x80, 0x00 }, 3, 0, 0, 3 },
	{ "UINT64_MAX", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 }, 10, 0,
	  UINT64_MAX, 10 },
	{ "2^63", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 }, 10, 0,
	  (uint64_t)1 << 63, 10 },
	{ "padded UINT64_MAX", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00 },
	  11, 0, UINT64_MAX, 11 },
	{ "2^64 overflows", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02 }, 10,
	  BK_E_CORRUPT, 0, 0 },
	{ "11 bytes with a high bit", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	  0x01 }, 11, BK_E_CORRUPT, 0, 0 },
	{ "empty", { 0 }, 0, BK_E_CORRUPT, 0, 0 },
	{ "truncated", { 0x80 }, 1, BK_E_CORRUPT, 0, 0 },
	{ "truncated long", { 0xff, 0xff, 0xff }, 3, BK_E_CORRUPT, 0, 0 },
};

static const struct leb_case sleb_cases[] = {
	{ "zero", { 0x00 }, 1, 0, 0, 1 },
	{ "2", { 0x02 }, 1, 0, 2, 1 },
	{ "-2", { 0x7e }, 1, 0, (uint64_t)-2, 1 },
	{ "127", { 0xff, 0x00 }, 2, 0, 127, 2 },
	{ "-127", { 0x81, 0x7f }, 2, 0, (uint64_t)-127, 2 },
	{ "128", { 0x80, 0x01 }, 2, 0, 128, 2 },
	{ "-128", { 0x80, 0x7f }, 2, 0, (uint64_t)-128, 2 },
	{ "-8 (data align)", { 0x78 }, 1, 0, (uint64_t)-8, 1 },
	{ "INT64_MAX", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00 }, 10, 0,
	  INT64_MAX, 10 },
	{ "INT64_MIN", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f }, 10, 0,
	  (uint64_t)INT64_MIN, 10 },
	{ "-1 padded", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f }, 11, 0,
	  UINT64_MAX, 11 },
	{ "INT64_MAX+1 overflows", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
	  10, BK_E_CORRUPT, 0, 0 },
	{ "bad sign copies", { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7e }, 10,
	  BK_E_CORRUPT, 0, 0 },
	{ "padding with wrong fill", { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
	  0x7f }, 11, BK_E_CORRUPT, 0, 0 },
	{ "truncated", { 0xff }, 1, BK_E_CORRUPT, 0, 0 },
	{ "empty", { 0 }, 0, BK_E_CORRUPT, 0, 0 },
};

static void test_leb(void)
{
	for (size_t i = 0; i < BK_ARRAY_LEN(uleb_cases); i++) {
		const struct leb_case *c = &uleb_cases[i];
		struct buf b = buf_make(c->bytes, c->len);
		uint64_t v = 0xdead;
		int err = buf_uleb(&b, &v);
		CHECK_INT(err, c->err, c->name);
		if (!c->err) {
			CHECK_U64(v, c->value, c->name);
			CHECK_INT(b.p - c->bytes, c->used, c->name);
		} else {
			CHECK(b.p == c->bytes, "%s: reader moved on error", c->name);
		}
	}
	for (size_t i = 0; i < BK_ARRAY_LEN(sleb_cases); i++) {
		const struct leb_case *c = &sleb_cases[i];
		struct buf b = buf_make(c->bytes, c->len);
		int64_t v = 0xdead;
		int err = buf_sleb(&b, &v);
		CHECK_INT(err, c->err, c->name);
		if (!c->err) {
			CHECK_U64((uint64_t)v, c->value, c->name);
			CHECK_INT(b.p - c->bytes, c->used, c->name);
		} else {
			CHECK(b.p == c->bytes, "%s: reader moved on error", c->name);
		}
	}
}

static void test_fixed(void)
{
	const uint8_t bytes[] = { 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09 };
	struct buf b = buf_make(bytes, sizeof(bytes));
	uint8_t u8 = 0;
	uint16_t u16 = 0;
	uint32_t u32 = 0;
	uint64_t u64;
	CHECK_INT(buf_u8(&b, &u8), 0, "u8");
	CHECK_INT(u8, 1, "u8 value");
	CHECK_INT(buf_u16(&b, &u16), 0, "u16");
	CHECK_INT(u16, 0x0302, "u16 little-endian");
	CHECK_INT(buf_u32(&b, &u32), 0, "u32");
	CHECK_U64(u32, 0x07060504, "u32 little-endian");
	CHECK_INT(buf_u64(&b, &u64), BK_E_CORRUPT, "u64 past end");
	CHECK_INT(buf_left(&b), 2, "u64 failure leaves the reader");
	CHECK_INT(buf_skip(&b, 3), BK_E_CORRUPT, "skip past end");
	CHECK_INT(buf_skip(&b, 2), 0, "skip to end");
	CHECK_INT(buf_u8(&b, &u8), BK_E_CORRUPT, "u8 at end");
	CHECK_INT(buf_skip(&b, UINT64_MAX), BK_E_CORRUPT, "huge skip");
	CHECK_INT(base_sext(0x80, 8), -128, "sext 8");
	CHECK_INT(base_sext(0x7f, 8), 127, "sext 8 positive");
	CHECK_INT(base_sext(0xfffffff8u, 32), -8, "sext 32");
	CHECK_U64(base_sext(0x8000000000000000ull, 64), 0x8000000000000000ull, "sext 64");
}

static void test_arith(void)
{
	uint64_t r;
	CHECK_INT(base_add_s64(100, -8, &r), 0, "100-8");
	CHECK_U64(r, 92, "100-8 value");
	CHECK_INT(base_add_s64(4, -8, &r), BK_E_CORRUPT, "4-8 underflows");
	CHECK_INT(base_add_s64(UINT64_MAX, 1, &r), BK_E_CORRUPT, "max+1 overflows");
	CHECK_INT(base_add_s64(UINT64_MAX - 1, 1, &r), 0, "max-1+1");
	CHECK_INT(base_add_s64((uint64_t)1 << 63, INT64_MIN, &r), 0, "2^63 + INT64_MIN");
	CHECK_U64(r, 0, "2^63 + INT64_MIN value");
	CHECK_INT(base_add_s64(((uint64_t)1 << 63) - 1, INT64_MIN, &r), BK_E_CORRUPT,
		  "2^63-1 + INT64_MIN underflows");
}

static void test_errors(void)
{
	for (int e = 0; e >= BK_E_BAD_REG; e--) {
		const char *s = bk_strerror(e);
		CHECK(s && *s && strcmp(s, "unknown error") != 0, "code %d has a message", e);
	}
	CHECK_STR(bk_strerror(BK_E_BAD_REG - 1), "unknown error", "below the table");
	CHECK_STR(bk_strerror(1), "unknown error", "positive");
	CHECK_STR(bk_strerror(-100000), "unknown error", "far below");
}

static void test_alloc_funnel(void)
{
	base_alloc_fail_after(2);
	void *a = base_alloc(8);
	void *b = base_alloc(8);
	void *c = base_alloc(8);
	CHECK(a != NULL, "first allocation succeeds");
	CHECK(b == NULL, "second allocation fails as injected");
	CHECK(c != NULL, "injection fires once");
	base_free(a);
	base_free(c);
}

/* base_count_keys: against a linear count, on every key around every
 * element, duplicates included, for both comparisons; empty arrays. */
static void test_count_keys(void)
{
	struct item {
		uint32_t pad;
		uint64_t key;
		char tag;
	} v[9] = { { 0, 3, 'a' }, { 0, 5, 'b' }, { 0, 5, 'c' }, { 0, 5, 'd' }, { 0, 9, 'e' },
		   { 0, 12, 'f' }, { 0, 12, 'g' }, { 0, 100, 'h' }, { 0, UINT64_MAX, 'i' } };
	for (size_t n = 0; n <= 9; n++) {
		for (uint64_t k = 0; k < 110; k++) {
			size_t le = 0, lt = 0;
			for (size_t i = 0; i < n; i++) {
				le += v[i].key <= k;
				lt += v[i].key < k;
			}
			CHECK(BASE_COUNT_LE(v, n, key, k) == le && BASE_COUNT_LT(v, n, key, k) == lt,
			      "count_keys n=%zu key=%" PRIu64, n, k);
		}
		CHECK(BASE_COUNT_LE(v, n, key, UINT64_MAX) == n, "n=%zu: all <= UINT64_MAX", n);
		CHECK(BASE_COUNT_LT(v, n, key, UINT64_MAX) == (n == 9 ? 8 : n), "n=%zu: < max", n);
	}
	const uint64_t plain[4] = { 1, 2, 2, 7 };
	CHECK(base_count_keys(plain, 4, sizeof(plain[0]), 0, 2, false) == 1 &&
	      base_count_keys(plain, 4, sizeof(plain[0]), 0, 2, true) == 3, "a plain uint64_t array");
	CHECK(base_count_keys(NULL, 0, 8, 0, 5, true) == 0, "an empty array");
}

int main(void)
{
	test_count_keys();
	test_leb();
	test_fixed();
	test_arith();
	test_errors();
	test_alloc_funnel();
	return check_summary();
}
