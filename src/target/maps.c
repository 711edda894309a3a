/* /proc/PID/maps and /proc/PID/status, for the live targets. Cold. The
 * map is read without stdio and allocated through the funnel only (the
 * in-process validator reads its own from a signal handler). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "target.h"

#define MAX_MAPS 1000000

static const char *skip_spaces(const char *p, const char *end)
{
	while (p < end && *p == ' ')
		p++;
	return p;
}

static const char *skip_token(const char *p, const char *end)
{
	while (p < end && *p != ' ')
		p++;
	return p;
}

static bool hex(const char **pp, const char *end, uint64_t *v)
{
	const char *p = *pp;
	uint64_t x = 0;
	int digits = 0;
	for (; p < end; p++, digits++) {
		unsigned d = *p >= '0' && *p <= '9' ? (unsigned)(*p - '0')
			     : *p >= 'a' && *p <= 'f' ? (unsigned)(*p - 'a' + 10) : 16u;
		if (d == 16)
			break;
		x = x << 4 | d;
	}
	*pp = p;
	*v = x;
	return digits > 0 && digits <= 16;
}

/* One line of /proc/PID/maps, "lo-hi perms offset dev inode  path", into
 * *M; the path (may hold spaces, may be empty) is *NAME, *NAMELEN bytes,
 * not copied. False for a line that is not one. */
static bool parse_line(const char *p, const char *end, struct tgt_mapping *m, const char **name,
		       size_t *namelen)
{
	uint64_t lo, hi, off;
	if (!hex(&p, end, &lo) || p >= end || *p++ != '-' || !hex(&p, end, &hi))
		return false;
	p = skip_spaces(p, end);
	const char *perms = p;
	p = skip_token(p, end);
	if (p - perms < 3)
		return false;
	p = skip_spaces(p, end);
	if (!hex(&p, end, &off))
		return false;
	p = skip_token(skip_spaces(p, end), end); /* dev */
	p = skip_token(skip_spaces(p, end), end); /* inode */
	p = skip_spaces(p, end);
	m->start = lo;
	m->end = hi;
	m->offset = off;
	m->r = perms[0] == 'r';
	m->w = perms[1] == 'w';
	m->x = perms[2] == 'x';
	*name = p;
	*namelen = (size_t)(end - p);
	return true;
}

/* Read with open/read, parsed here, allocated through the funnel only: the
 * in-process validator reads its own process's map from inside a signal
 * handler that may have interrupted the program in stdio or malloc. */
int tgt_read_maps(struct tgt *t)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return BK_E_IO;
	size_t cap = 0, have = 0, bufcap = 1 << 16;
	char *buf = base_alloc(bufcap);
	int err = buf ? 0 : BK_E_NOMEM;
	bool eof = false;
	while (!err && !eof) {
		if (have == bufcap) {
			/* A line longer than the buffer: grow it (paths are at most
			 * PATH_MAX, but be safe). */
			char *nb = bufcap < (1u << 24) ? base_realloc(buf, bufcap * 2) : NULL;
			if (!nb) {
				err = BK_E_NOMEM;
				break;
			}
			buf = nb;
			bufcap *= 2;
		}
		ssize_t n = read(fd, buf + have, bufcap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = BK_E_IO;
			break;
		}
		eof = n == 0;
		have += (size_t)n;
		size_t start = 0;
		for (;;) {
			char *nl = memchr(buf + start, '\n', have - start);
			if (!nl && !(eof && start < have))
				break;
			const char *line = buf + start, *end = nl ? nl : buf + have;
			struct tgt_mapping m;
			const char *name;
			size_t namelen;
			start = (size_t)(end - buf) + (nl != NULL);
			if (!parse_line(line, end, &m, &name, &namelen)) {
				if (!nl)
					break;
				continue;
			}
			if (t->nmaps == cap) {
				size_t ncap = cap ? cap * 2 : 64;
				void *q = ncap <= MAX_MAPS ? base_realloc(t->maps, ncap * sizeof(*t->maps))
							   : NULL;
				if (!q) {
					err = BK_E_NOMEM;
					break;
				}
				t->maps = q;
				cap = ncap;
			}
			char *copy = base_alloc(namelen + 1);
			if (!copy) {
				err = BK_E_NOMEM;
				break;
			}
			memcpy(copy, name, namelen);
			copy[namelen] = 0;
			m.path = copy;
			t->maps[t->nmaps++] = m;
			if (!nl)
				break;
		}
		memmove(buf, buf + start, have - start);
		have -= start;
	}
	base_free(buf);
	close(fd);
	return err;
}

void tgt_free_maps(struct tgt *t)
{
	for (size_t i = 0; i < t->nmaps; i++)
		base_free((void *)t->maps[i].path);
	base_free(t->maps);
	t->maps = NULL;
	t->nmaps = 0;
}

uint64_t tgt_proc_status_field(int pid, const char *key, int base)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = fopen(path, "r");
	uint64_t v = 0;
	size_t klen = strlen(key);
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoull(line + klen + 1, NULL, base);
			break;
		}
	if (f)
		fclose(f);
	return v;
}

const struct tgt_mapping *tgt_mapping_at(const struct tgt *t, uint64_t addr)
{
	size_t lo = BASE_COUNT_LE(t->maps, t->nmaps, start, addr);
	if (lo == 0 || addr >= t->maps[lo - 1].end)
		return NULL;
	return &t->maps[lo - 1];
}
