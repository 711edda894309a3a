/* A tiny assertion kit for table-driven unit tests. Every CHECK counts; main
 * ends with check_summary(), which prints "N passed, N failed" and returns
 * the exit status. */
#ifndef BK_CHECK_H
#define BK_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int check_pass, check_fail;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (cond) {                                                     \
			check_pass++;                                           \
		} else {                                                        \
			check_fail++;                                           \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__,  \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
		}                                                               \
	} while (0)

#define CHECK_INT(got, want, ctx)                                               \
	do {                                                                    \
		long long g_ = (long long)(got), w_ = (long long)(want);        \
		CHECK(g_ == w_, "%s: got %lld, want %lld", (ctx), g_, w_);      \
	} while (0)

#define CHECK_U64(got, want, ctx)                                               \
	do {                                                                    \
		uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);           \
		CHECK(g_ == w_, "%s: got 0x%" PRIx64 ", want 0x%" PRIx64,       \
		      (ctx), g_, w_);                                           \
	} while (0)

#define CHECK_STR(got, want, ctx)                                               \
	do {                                                                    \
		const char *g_ = (got), *w_ = (want);                           \
		CHECK(g_ && w_ && strcmp(g_, w_) == 0, "%s: got \"%s\", want \"%s\"", \
		      (ctx), g_ ? g_ : "(null)", w_ ? w_ : "(null)");           \
	} while (0)

static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", check_pass, check_fail);
	return check_fail ? 1 : 0;
}

#endif
