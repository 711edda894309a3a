/* gdbjit: code a JIT registered through the GDB JIT interface, as modules.
 *
 * A program whose JIT talks to debuggers defines (GDB manual, "JIT
 * Compilation Interface"):
 *   struct jit_descriptor { uint32_t version; uint32_t action_flag;
 *                           struct jit_code_entry *relevant_entry, *first_entry; };
 *   struct jit_code_entry { struct jit_code_entry *next, *prev;
 *                           const char *symfile_addr; uint64_t symfile_size; };
 * as the global __jit_debug_descriptor, and links an entry into the list
 * for each object file (the "symfile") it generates, then calls
 * __jit_debug_register_code, where a debugger has a breakpoint. We do not
 * stop there: a walk is of a stopped target, so the list is read as it is
 * when the caller asks (a JIT between two updates may show a list being
 * rewritten: what cannot be read ends the list).
 *
 * Each symfile becomes a module through bk_space_add_module_image with
 * START == END == 0: LLVM's objects are ET_REL with each section's load
 * address in sh_addr, linked there by ldr_rel_link; other JITs hand
 * complete images at their own addresses. The module's .eh_frame then
 * unwinds the JIT's frames by CFI and its symbols and DWARF name them.
 *
 * Bounded whatever the target's memory holds: at most GJ_MAX_ENTRIES entries
 * per descriptor (a cycle ends there), symfiles of at most GJ_MAX_SYMFILE
 * bytes, GJ_MAX_TOTAL bytes read in all, GJ_MAX_DESC descriptors. Cold:
 * reads the target and allocates; no walk may run meanwhile (modules are
 * added as bk_space_add_module's are).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "unwind.h"

#define GJ_MAX_DESC 8
#define GJ_DESC_SIZE 24 /* version, action_flag, two pointers */
#define GJ_MAX_ENTRIES 100000u
#define GJ_MAX_SYMFILE ((uint64_t)64 << 20)
#define GJ_MAX_TOTAL ((uint64_t)1 << 30)

static void note_failure(struct bk_gdb_jit_stats *st, int err)
{
	st->failed++;
	if (!st->first_error)
		st->first_error = err;
}

/* The starts of the objects this reading added (to forget those the JIT
 * took out of its list since the last one). */
struct listed {
	uint64_t *start;
	size_t n, cap;
};

/* Add the object of one entry (SYMFILE, SIZE bytes in the target). */
static void add_symfile(struct bk_space *s, uint64_t symfile, uint64_t size, uint64_t *total,
			struct bk_gdb_jit_stats *st, struct listed *listed)
{
	if (!size || size > GJ_MAX_SYMFILE || size > GJ_MAX_TOTAL - *total) {
		note_failure(st, BK_E_LIMIT);
		return;
	}
	*total += size;
	uint8_t *buf = base_alloc((size_t)size);
	if (!buf) {
		note_failure(st, BK_E_NOMEM);
		return;
	}
	int err = bk_space_read(s, symfile, buf, (size_t)size);
	struct uw_image im;
	if (!err) {
		struct bk_module_image d = { .size = sizeof(d), .image = buf, .len = (size_t)size };
		err = uw_image_open(&d, &im);
	}
	if (!err) {
		/* Named by where its code starts: each JIT object its own module
		 * (and its own entry in the symbol caches). */
		char name[40];
		snprintf(name, sizeof(name), "[jit 0x%" PRIx64 "]", im.start);
		uint64_t start = im.start;
		err = uw_image_add(s, &im, name);
		uint64_t *v = err ? NULL : base_grow(listed->start, &listed->cap, listed->n + 1,
						      sizeof(*v), 16);
		if (v) {
			listed->start = v;
			v[listed->n++] = start;
		}
	}
	base_free(buf);
	if (err)
		note_failure(st, err);
	else
		st->added++;
}

/* Read the list of the descriptor at DESC. */
static void read_descriptor(struct bk_space *s, uint64_t desc, uint64_t *total,
			    struct bk_gdb_jit_stats *st, struct listed *listed)
{
	uint8_t d[24];
	if (bk_space_read(s, desc, d, sizeof(d)) != 0 || base_rd_le(d, 4) != 1)
		return; /* not readable, or a version we do not know */
	st->descriptors++;
	uint64_t e = base_rd_le(d + 16, 8), prev = 0;
	for (unsigned n = 0; e; n++) {
		if (n == GJ_MAX_ENTRIES) {
			st->truncated = 1;
			return;
		}
		uint8_t ent[32];
		if (bk_space_read(s, e, ent, sizeof(ent)) != 0) {
			note_failure(st, BK_E_MEMORY);
			return;
		}
		/* A list being rewritten, or not a list: stop where it breaks. */
		if (base_rd_le(ent + 8, 8) != prev) {
			st->truncated = 1;
			return;
		}
		st->entries++;
		add_symfile(s, base_rd_le(ent + 16, 8), base_rd_le(ent + 24, 8), total, st, listed);
		prev = e;
		e = base_rd_le(ent, 8);
	}
}

int bk_space_add_gdb_jit(struct bk_space *s, struct bk_gdb_jit_stats *stats)
{
	if (!s || !stats || stats->size < sizeof(*stats))
		return BK_E_INVAL;
	size_t size = stats->size;
	memset(stats, 0, sizeof(*stats));
	stats->size = size;
	if (s->local)
		return BK_E_UNSUPPORTED;
	if (s->arch->addr_size != 8)
		return BK_E_UNSUPPORTED;
	/* The descriptors first: adding modules moves mods[]. */
	uint64_t desc[GJ_MAX_DESC];
	size_t nd = 0;
	for (size_t i = 0; i < s->nmods && nd < GJ_MAX_DESC; i++) {
		const struct uw_module *m = &s->mods[i];
		uint64_t v;
		if (!m->elf || ldr_find_symbol(m->elf->ldr, "__jit_debug_descriptor", GJ_DESC_SIZE,
					       &v) != 0)
			continue;
		uint64_t at = v + (uint64_t)m->bias;
		bool seen = false;
		for (size_t k = 0; k < nd; k++)
			seen |= desc[k] == at;
		if (!seen)
			desc[nd++] = at;
	}
	uint64_t total = 0;
	struct listed listed = { 0 };
	for (size_t k = 0; k < nd; k++)
		read_descriptor(s, desc[k], &total, stats, &listed);
	/* Objects read before and no longer listed (the JIT unregistered
	 * them, gdb unloads them then): their modules go. Not when the list
	 * broke: what lies past the break is not known to be gone. */
	for (size_t i = s->nmods; !stats->truncated && !stats->failed && i-- > 0;) {
		const struct uw_module *m = &s->mods[i];
		if (!m->path || strncmp(m->path, "[jit 0x", 7))
			continue;
		bool still = false;
		for (size_t k = 0; k < listed.n && !still; k++)
			still = listed.start[k] == m->start;
		if (!still && bk_space_remove_module_image(s, m->start) == 0)
			stats->removed++;
	}
	base_free(listed.start);
	return 0;
}
