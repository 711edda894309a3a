/* The FDE index in caller memory (cfi_table_init_mem), the scan table
 * (cfi_table_init_scan) and the published-index view (cfi_table_init_index)
 * against the allocating index of cfi_table_init: the same entries in the
 * same order, the same answer for every PC, on a hand-built section whose
 * FDEs are shuffled, overlap, are empty or broken, and on real files (libc,
 * this test itself). The bounds: BK_E_LIMIT past the caller's capacity, the
 * count's maximum, the scan's budget. Prints the build time for libc's
 * .eh_frame (and libLLVM's when installed). */
#include <stdlib.h>
#include <time.h>

#include "check.h"

#include "base/dwarf.h"
#include "cfi/cfi.h"
#include "loader/loader.h"
#include "unwind/unwind.h"

/* ---- A hand-built .eh_frame ------------------------------------------------ */

#define NFDE 1000
static uint8_t sec_bytes[64 + NFDE * 32 + 64];
static uint64_t fde_off[NFDE + 2];

static size_t put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return 4;
}

static size_t put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return 8;
}

/* One CIE (augmentation "zR", absolute 8-byte FDE pointers), then NFDE FDEs
 * of 16-byte functions at 0x10000 + 32 * k in a shuffled order, the last
 * three changed: one empty, one overlapping the next, one whose CIE
 * pointer names an FDE (it fails to decode); then the terminator. */
static size_t build_section(unsigned seed)
{
	uint8_t *p = sec_bytes;
	size_t o = 0;
	static const uint8_t cie[] = { 1, 'z', 'R', 0, 1, 0x78, 16, 1, DW_EH_PE_absptr,
				       0x0c, 7, 8, 0x90, 1, 0, 0 };
	o += put32(p + o, 4 + sizeof(cie));
	o += put32(p + o, 0);
	memcpy(p + o, cie, sizeof(cie));
	o += sizeof(cie);
	unsigned order[NFDE];
	for (unsigned i = 0; i < NFDE; i++)
		order[i] = i;
	srand(seed);
	for (unsigned i = NFDE - 1; i > 0; i--) {
		unsigned j = (unsigned)rand() % (i + 1), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	for (unsigned i = 0; i < NFDE; i++) {
		uint64_t begin = 0x10000 + 32 * (uint64_t)order[i], len = 16;
		uint32_t cie_ptr = (uint32_t)(o + 4); /* back to offset 0 */
		if (i == NFDE - 3)
			len = 0;
		if (i == NFDE - 2)
			len = 64; /* overlaps the next two functions */
		if (i == NFDE - 1)
			cie_ptr = (uint32_t)(o + 4 - fde_off[0]); /* names an FDE */
		fde_off[i] = o;
		o += put32(p + o, 4 + 8 + 8 + 1 + 3);
		o += put32(p + o, cie_ptr);
		o += put64(p + o, begin);
		o += put64(p + o, len);
		p[o++] = 0;              /* augmentation data length */
		p[o++] = 0;              /* DW_CFA_nop x 3 */
		p[o++] = 0;
		p[o++] = 0;
	}
	o += put32(p + o, 0); /* terminator */
	o += put32(p + o, 0xdeadbeef); /* after it: never read */
	return o;
}

static struct cfi_section section_of(const uint8_t *data, size_t len, uint64_t addr)
{
	struct cfi_section s = { .data = data, .len = len, .addr = addr, .is_eh = true,
				 .addr_size = 8 };
	return s;
}

/* The answer of T for PC: the FDE's offset, or the error. */
static int64_t answer(const struct cfi_table *t, uint64_t pc)
{
	struct cfi_fde fde;
	struct cfi_cie cie;
	int err = cfi_table_find(t, pc, &fde, &cie);
	return err ? err : (int64_t)fde.off;
}

static void same_index(const struct cfi_table *a, const struct cfi_table *b, const char *what)
{
	CHECK_INT(a->nindex, b->nindex, what);
	size_t n = a->nindex < b->nindex ? a->nindex : b->nindex, differ = 0;
	for (size_t i = 0; i < n; i++)
		differ += memcmp(&a->index[i], &b->index[i], sizeof(a->index[i])) != 0;
	CHECK_INT(differ, 0, what);
	for (size_t i = 1; i < b->nindex; i++)
		if (b->index[i].pc_begin < b->index[i - 1].pc_begin) {
			CHECK(0, "%s: not sorted at %zu", what, i);
			break;
		}
}

static void test_synthetic(void)
{
	for (unsigned seed = 1; seed <= 3; seed++) {
		size_t len = build_section(seed);
		struct cfi_section sec = section_of(sec_bytes, len, 0x1000);
		struct cfi_table ref, mem, view, scan;
		CHECK_INT(cfi_table_init(&ref, &sec, NULL), 0, "allocating index");
		CHECK_INT(ref.nindex, NFDE - 2, "allocating index: empty and broken left out");
		CHECK_INT(ref.nbad, 1, "allocating index: one bad FDE");

		size_t n = 0;
		CHECK_INT(cfi_index_count(&sec, SIZE_MAX, &n), 0, "count");
		CHECK_INT(n, NFDE, "count: every FDE entry, before decoding");
		CHECK_INT(cfi_index_count(&sec, NFDE - 1, &n), BK_E_LIMIT, "count: past the maximum");

		struct cfi_index_entry *buf = calloc(NFDE, sizeof(*buf));
		CHECK_INT(cfi_table_init_mem(&mem, &sec, buf, NFDE), 0, "index in caller memory");
		same_index(&ref, &mem, "caller memory = allocated");
		CHECK_INT(mem.nbad, 1, "caller memory: one bad FDE");
		CHECK_INT(cfi_table_init_mem(&mem, &sec, buf, NFDE - 3), BK_E_LIMIT,
			  "caller memory: too small");
		CHECK_INT(cfi_table_init_mem(&mem, &sec, buf, NFDE), 0, "again");
		cfi_table_free(&mem); /* borrowed: frees nothing */
		CHECK(mem.index == NULL, "free of a borrowed index");
		cfi_table_init_index(&view, &sec, buf, ref.nindex);
		cfi_table_init_scan(&scan, &sec, NFDE + 2);

		/* Every 4th byte by the view; every 13th by scanning (a scan is
		 * O(n): this keeps the sanitized build quick). */
		size_t differ = 0;
		for (uint64_t pc = 0xff00; pc < 0x10000 + 32 * NFDE + 0x100; pc += 4) {
			int64_t want = answer(&ref, pc);
			differ += answer(&view, pc) != want;
			if (pc % 13 == 0)
				differ += answer(&scan, pc) != want;
		}
		CHECK_INT(differ, 0, "view and scan answer as the index");
		/* The overlapping FDE: the later start wins, as in the index. */
		CHECK_INT(answer(&scan, 0x10000 + 32 * (uint64_t)(NFDE - 1)) >= 0, 1, "scan finds");

		/* The scan's budget: CIE + NFDE FDEs + terminator are visited. */
		cfi_table_init_scan(&scan, &sec, NFDE);
		CHECK_INT(answer(&scan, 0x10000), BK_E_LIMIT, "scan past its budget");
		cfi_table_init_scan(&scan, &sec, NFDE + 2);
		CHECK(answer(&scan, 0x10000) != BK_E_LIMIT, "scan within its budget");
		free(buf);
		cfi_table_free(&ref);
	}

	/* A sorted section needs no sort; an empty one gives an empty index. */
	struct cfi_section empty = section_of(sec_bytes, 0, 0x1000);
	struct cfi_table t;
	struct cfi_index_entry one;
	CHECK_INT(cfi_table_init_mem(&t, &empty, &one, 1), 0, "empty section");
	CHECK_INT(t.nindex, 0, "empty section");
	CHECK_INT(answer(&t, 0x1000), BK_E_NOT_FOUND, "empty section");
}

/* ---- Real files ------------------------------------------------------------ */

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void test_file(const char *path, bool required)
{
	struct ldr_elf *ldr;
	if (ldr_open_path(path, &ldr) != 0) {
		CHECK(!required, "%s: cannot open", path);
		return;
	}
	struct cfi_section sec;
	if (!uw_cfi_section(ldr, UW_EH_FRAME, &sec)) {
		CHECK(0, "%s: no .eh_frame", path);
		ldr_close(ldr);
		return;
	}
	struct cfi_table ref, mem, scan;
	CHECK_INT(cfi_table_init(&ref, &sec, NULL), 0, path);
	size_t n = 0;
	CHECK_INT(cfi_index_count(&sec, SIZE_MAX, &n), 0, path);
	CHECK(n >= ref.nindex, "%s: count %zu < %zu entries", path, n, ref.nindex);
	struct cfi_index_entry *buf = calloc(n ? n : 1, sizeof(*buf));
	double best = 1e9;
	for (int rep = 0; rep < 5; rep++) {
		double t0 = now();
		int err = cfi_table_init_mem(&mem, &sec, buf, n);
		double dt = now() - t0;
		CHECK_INT(err, 0, path);
		if (dt < best)
			best = dt;
	}
	same_index(&ref, &mem, path);
	printf("%s: .eh_frame %zu bytes, %zu FDEs: index built in caller memory in %.2f ms\n",
	       path, sec.len, mem.nindex, best * 1e3);

	/* Every FDE's first, middle and last byte and the byte after it, by
	 * the index; a sample of them by scanning too (a scan is O(n)). */
	cfi_table_init_scan(&scan, &sec, SIZE_MAX);
	size_t differ = 0, scanned = 0, scan_every = ref.nindex / 48 + 1; /* ~48 FDEs */
	double scan_time = 0;
	for (size_t i = 0; i < ref.nindex; i++) {
		const struct cfi_index_entry *e = &ref.index[i];
		uint64_t pcs[4] = { e->pc_begin, e->pc_begin + (e->pc_end - e->pc_begin) / 2,
				    e->pc_end - 1, e->pc_end };
		for (int k = 0; k < 4; k++) {
			int64_t want = answer(&ref, pcs[k]);
			differ += answer(&mem, pcs[k]) != want;
			if (i % scan_every == 0) {
				double t0 = now();
				differ += answer(&scan, pcs[k]) != want;
				scan_time += now() - t0;
				scanned++;
			}
		}
	}
	CHECK_INT(differ, 0, path);
	if (scanned)
		printf("%s: %zu lookups by scan agree, %.3f ms each\n", path, scanned,
		       scan_time / (double)scanned * 1e3);
	free(buf);
	cfi_table_free(&ref);
	ldr_close(ldr);
}

int main(void)
{
	test_synthetic();
	test_file("/proc/self/exe", true);
	test_file("/lib/x86_64-linux-gnu/libc.so.6", false);
	if (getenv("BK_EHINDEX_BIG"))
		test_file("/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", false);
	return check_summary();
}
