/* This process's own mappings for unit tests, from /proc/self/maps (cold:
 * never from a signal handler). */
#ifndef BK_SELF_MAPS_H
#define BK_SELF_MAPS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "backstep.h"

/* The end of the mapping holding ADDR, or 0. */
static inline uint64_t self_mapping_end(uint64_t addr)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	uint64_t end = 0;
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
			end = hi;
	}
	if (f)
		fclose(f);
	return end;
}

/* Every file mapped into this process as a module of S: from its first
 * mapping (base: that mapping less its file offset) to its last. */
static inline void self_add_modules(struct bk_space *s)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096], path[4096], prev[4096] = "";
	struct bk_module_desc d = { sizeof(d), NULL, 0, 0, 0 };
	while (f && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, off;
		path[0] = 0;
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %4095s", &lo, &hi, &off, path) < 3 ||
		    path[0] != '/')
			continue;
		if (strcmp(path, prev) != 0) {
			if (prev[0])
				bk_space_add_module(s, &d);
			strcpy(prev, path);
			d.path = prev;
			d.start = lo;
			d.base = lo - off;
		}
		d.end = hi;
	}
	if (prev[0])
		bk_space_add_module(s, &d);
	if (f)
		fclose(f);
}

#endif
