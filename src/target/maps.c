/* /proc/PID/maps and /proc/PID/status, for the live targets. Cold. */
#include <stdio.h>
#include <stdlib.h>

#include "target.h"

#define MAX_MAPS 1000000

int tgt_read_maps(struct tgt *t)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", t->pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return BK_E_IO;
	size_t cap = 0;
	char *line = NULL;
	size_t line_cap = 0;
	int err = 0;
	while (getline(&line, &line_cap, f) > 0) {
		unsigned long long lo, hi, off;
		char perms[8];
		int name_at = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &off, &name_at) < 4)
			continue;
		char *name = line + name_at;
		name[strcspn(name, "\n")] = 0;
		if (t->nmaps == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			void *p = ncap <= MAX_MAPS ? base_realloc(t->maps, ncap * sizeof(*t->maps)) : NULL;
			if (!p) {
				err = BK_E_NOMEM;
				break;
			}
			t->maps = p;
			cap = ncap;
		}
		size_t n = strlen(name) + 1;
		char *copy = base_alloc(n);
		if (!copy) {
			err = BK_E_NOMEM;
			break;
		}
		memcpy(copy, name, n);
		struct tgt_mapping *m = &t->maps[t->nmaps++];
		m->start = lo;
		m->end = hi;
		m->offset = off;
		m->r = perms[0] == 'r';
		m->w = perms[1] == 'w';
		m->x = perms[2] == 'x';
		m->path = copy;
	}
	free(line);
	fclose(f);
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
