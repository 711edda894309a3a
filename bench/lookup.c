/* Benchmark: FDE lookups per second for random PCs in one library.
 *
 *   build/bench/bench_lookup [FILE] [N]
 *
 * Measures, over N random PCs drawn uniformly from the range the FDEs cover:
 *   - cfi_table_find through .eh_frame_hdr's binary-search table;
 *   - cfi_table_find through the index backstep builds itself;
 *   - cfi_table_find + cfi_row_at (lookup and running the CFA program).
 * Prints one line per measurement. Not a test: nothing here asserts a time. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "unwind/unwind.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void run(const char *label, const struct cfi_table *t, const uint64_t *pcs, size_t n,
		bool rows)
{
	size_t found = 0;
	double t0 = now();
	for (size_t i = 0; i < n; i++) {
		struct cfi_fde fde;
		struct cfi_cie cie;
		struct cfi_row row;
		if (cfi_table_find(t, pcs[i], &fde, &cie) == 0) {
			if (!rows || cfi_row_at(&t->sec, &cie, &fde, pcs[i], &row) == 0)
				found++;
		}
	}
	double dt = now() - t0;
	printf("%-34s %10.0f lookups/s  %6.1f ns/lookup  (%zu of %zu PCs covered)\n", label,
	       n / dt, dt / n * 1e9, found, n);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "/lib/x86_64-linux-gnu/libc.so.6";
	size_t n = argc > 2 ? strtoul(argv[2], NULL, 0) : 2000000;
	struct ldr_elf *ldr;
	int err = ldr_open_path(path, &ldr);
	if (err) {
		fprintf(stderr, "bench_lookup: %s: %s\n", path, bk_strerror(err));
		return 1;
	}
	struct cfi_section sec;
	if (!uw_cfi_section(ldr, UW_EH_FRAME, &sec)) {
		fprintf(stderr, "bench_lookup: %s: no .eh_frame\n", path);
		return 1;
	}
	const struct ldr_section *h = &ldr->eh_frame_hdr;
	struct cfi_hdr hdr = { h->data, h->len, h->addr };
	struct cfi_table with_hdr, with_index;
	double t0 = now();
	if ((err = cfi_table_init(&with_hdr, &sec, h->data ? &hdr : NULL)))
		return 1;
	double t_hdr = now() - t0;
	t0 = now();
	if ((err = cfi_table_init(&with_index, &sec, NULL)))
		return 1;
	double t_index = now() - t0;

	uint64_t lo = UINT64_MAX, hi = 0;
	for (size_t i = 0; i < with_index.nindex; i++) {
		if (with_index.index[i].pc_begin < lo)
			lo = with_index.index[i].pc_begin;
		if (with_index.index[i].pc_end > hi)
			hi = with_index.index[i].pc_end;
	}
	if (hi <= lo) {
		fprintf(stderr, "bench_lookup: %s: no FDEs\n", path);
		return 1;
	}
	uint64_t *pcs = malloc(n * sizeof(*pcs));
	for (size_t i = 0; i < n; i++)
		pcs[i] = lo + rnd() % (hi - lo);

	printf("%s: %zu FDEs in .eh_frame, .eh_frame_hdr table %s\n", path, with_index.nindex,
	       cfi_table_uses_hdr(&with_hdr) ? "used" : "not usable");
	printf("%-34s %10.3f ms\n", "build (validate .eh_frame_hdr)", t_hdr * 1e3);
	printf("%-34s %10.3f ms\n", "build (own sorted index)", t_index * 1e3);
	run("find via .eh_frame_hdr", &with_hdr, pcs, n, false);
	run("find via own index", &with_index, pcs, n, false);
	run("find + row (CFA program)", &with_hdr, pcs, n / 4, true);
	free(pcs);
	cfi_table_free(&with_hdr);
	cfi_table_free(&with_index);
	ldr_close(ldr);
	return 0;
}
