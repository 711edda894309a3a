/* The allocation funnel, mapping whole files, and the debug-build
 * corruption trace.
 *
 * Every allocation of the library passes through base_alloc & co., so tests
 * can make the Nth one fail and check that each cold path reports BK_E_NOMEM
 * and leaks nothing. Nothing here is called on an unwind step. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"

static unsigned long fail_countdown; /* 0: never fail */

void base_alloc_fail_after(unsigned long n)
{
	fail_countdown = n;
}

static bool should_fail(void)
{
	if (fail_countdown == 0)
		return false;
	return --fail_countdown == 0;
}

void *base_alloc(size_t len)
{
	if (should_fail())
		return NULL;
	return malloc(len ? len : 1);
}

void *base_calloc(size_t n, size_t len)
{
	if (should_fail())
		return NULL;
	return calloc(n ? n : 1, len ? len : 1);
}

void *base_realloc(void *p, size_t len)
{
	if (should_fail())
		return NULL;
	return realloc(p, len ? len : 1);
}

void *base_grow(void *arr, size_t *cap, size_t need, size_t size, size_t min_cap)
{
	if (need <= *cap)
		return arr;
	size_t n = *cap ? *cap : min_cap ? min_cap : 1;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (size && n > SIZE_MAX / size)
		return NULL;
	void *p = base_realloc(arr, n * size);
	if (p)
		*cap = n;
	return p;
}

void base_free(void *p)
{
	free(p);
}

char *base_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = base_alloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

int base_open_regular(const char *path, uint64_t *size)
{
	/* O_NONBLOCK: a FIFO's open would wait for a writer; it is refused
	 * below like any file that is not regular. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return BK_E_IO;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
		close(fd);
		return BK_E_IO;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}

int base_map_file(const char *path, const uint8_t **data, size_t *len)
{
	uint64_t size;
	int fd = base_open_regular(path, &size);
	if (fd < 0)
		return fd;
	if (size == 0) {
		close(fd);
		return BK_E_NOT_ELF;
	}
	if (size > SIZE_MAX) {
		close(fd);
		return BK_E_LIMIT;
	}
	void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return BK_E_IO;
	*data = map;
	*len = (size_t)size;
	return 0;
}

void base_unmap_file(const void *data, size_t len)
{
	if (data)
		munmap((void *)data, len);
}

#ifdef BK_DEBUG_CORRUPT
int base_corrupt_at(int line, const char *file)
{
	if (getenv("BK_TRACE_CORRUPT"))
		fprintf(stderr, "backstep: corrupt input detected at %s:%d\n", file, line);
	return BK_E_CORRUPT;
}
#endif
