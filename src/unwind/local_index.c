/* The .eh_frame lookup index of a module of this process that has no usable
 * .eh_frame_hdr (a static program, an object linked with
 * --no-eh-frame-hdr), built once per process, from a walk (a signal handler
 * included), with no allocation and no lock.
 *
 * A fixed registry of entries, one per such module, each moving through
 *
 *   FREE -> CLAIMED -> LOCATING -> BUILDING -> READY
 *                              \-> NONE    <-/
 *
 * The first walk that meets the module claims a FREE entry with
 * compare-and-swap, writes the module's identity (link_map, range) and
 * publishes it (LOCATING); finds the .eh_frame from the file's section
 * headers (tgt_local_eh_frame) and publishes where it is (BUILDING); counts
 * the FDEs, reserves the index with mmap (a system call, AS-safe), builds it
 * there with cfi_table_init_mem (the decoder of every other table), makes it
 * read-only and publishes it (READY), each step with a release store.
 * Anything failing makes the module NONE: no CFI, frames by frame pointer.
 *
 * Nobody waits for a build: the builder may be the very thread a signal
 * handler interrupted. A walk meeting a module that is BUILDING looks its
 * PCs up with a scan table: a walk of the section per lookup that finds
 * exactly the FDE the index will (cfi_table_init_scan), at most
 * UW_EHIDX_SCAN_MAX entries; past that the lookup fails with BK_E_LIMIT
 * and the walk ends at that frame (nothing is cached). One meeting it
 * LOCATING finds the section itself (the same system calls) and scans.
 * Such answers are for one use: the caller keeps only READY and NONE.
 *
 * Two walks may claim two entries for one module in the few instructions
 * before an identity is published; the one with the higher index notices
 * the other and steps aside (DEAD) if it sees it, and at worst the module
 * is indexed twice. Entries and indexes are never freed: a module unloaded
 * keeps its entry (its identity cannot match a module loaded later unless
 * that one has the same link_map address and range). If the builder never
 * finishes (its thread was cancelled or longjmp'ed out of a handler in the
 * middle), the module stays BUILDING and is scanned: slower, still right.
 *
 * Bounds: UW_EHIDX_SLOTS modules (more: scanned at every use),
 * UW_EHIDX_MAX_FDES FDEs per module (more: NONE), that many times 24 bytes
 * of index. The build is two passes over the section and a sort (heapsort,
 * none when the linker left the FDEs in address order).
 */
#include <errno.h>
#include <sys/mman.h>

#include "unwind.h"

#include "../target/target.h"

#define UW_EHIDX_SLOTS 256
#define UW_EHIDX_MAX_FDES ((size_t)1 << 21) /* a 48 MiB index */
#define UW_EHIDX_SCAN_MAX 32768             /* entries one scan may visit */

enum { IDX_FREE, IDX_CLAIMED, IDX_LOCATING, IDX_BUILDING, IDX_READY, IDX_NONE, IDX_DEAD };

struct ehidx {
	_Atomic uint32_t state;
	/* Identity: written while CLAIMED, read from LOCATING on. */
	const void *handle;
	uint64_t start, end;
	/* The section: written while LOCATING, read from BUILDING on. */
	uint64_t eh_addr, eh_len;
	/* The index: written while BUILDING, read when READY. */
	const struct cfi_index_entry *index;
	size_t nindex;
};

static struct ehidx registry[UW_EHIDX_SLOTS];

void (*uw_local_index_hook)(void);

static bool same_module(const struct ehidx *e, const struct tgt_local_object *obj)
{
	return e->handle == obj->handle && e->start == obj->start && e->end == obj->end;
}

static bool published(uint32_t st)
{
	return st >= IDX_LOCATING && st <= IDX_NONE;
}

static void eh_section(uint64_t addr, uint64_t len, struct cfi_section *sec)
{
	*sec = (struct cfi_section){
		.data = (const uint8_t *)(uintptr_t)addr,
		.len = (size_t)len,
		.addr = addr, /* runtime addresses, as the .eh_frame_hdr path */
		.is_eh = true,
		.addr_size = 8,
		.mem = { tgt_local_read, NULL },
	};
}

/* The entry of OBJ, published, with its state in *ST; or NULL. */
static struct ehidx *find(const struct tgt_local_object *obj, size_t below, uint32_t *st)
{
	for (size_t i = 0; i < below; i++) {
		uint32_t s = atomic_load_explicit(&registry[i].state, memory_order_acquire);
		if (published(s) && same_module(&registry[i], obj)) {
			*st = s;
			return &registry[i];
		}
	}
	return NULL;
}

/* Claim a free entry for OBJ and publish its identity: the entry to build
 * (*ST = IDX_LOCATING, ours), another one published for OBJ meanwhile
 * (*ST its state), or NULL when the registry is full. */
static struct ehidx *claim(const struct tgt_local_object *obj, bool *ours, uint32_t *st)
{
	*ours = false;
	for (size_t i = 0; i < UW_EHIDX_SLOTS; i++) {
		struct ehidx *e = &registry[i];
		uint32_t free_state = IDX_FREE;
		if (atomic_load_explicit(&e->state, memory_order_relaxed) != IDX_FREE ||
		    !atomic_compare_exchange_strong_explicit(&e->state, &free_state, IDX_CLAIMED,
							     memory_order_acquire,
							     memory_order_relaxed))
			continue;
		e->handle = obj->handle;
		e->start = obj->start;
		e->end = obj->end;
		atomic_store_explicit(&e->state, IDX_LOCATING, memory_order_release);
		/* A lower entry published for the same module wins. */
		struct ehidx *other = find(obj, i, st);
		if (other) {
			atomic_store_explicit(&e->state, IDX_DEAD, memory_order_release);
			return other;
		}
		*ours = true;
		*st = IDX_LOCATING;
		return e;
	}
	return NULL;
}

/* Locate, build and publish the index of E (ours, LOCATING); T is made a
 * table over it. */
static enum uw_eh_result build(struct ehidx *e, const struct tgt_local_object *obj,
			       struct cfi_table *t)
{
	uint64_t addr, len;
	if (tgt_local_eh_frame(obj, &addr, &len) != 0) {
		atomic_store_explicit(&e->state, IDX_NONE, memory_order_release);
		return UW_EH_NONE;
	}
	e->eh_addr = addr;
	e->eh_len = len;
	atomic_store_explicit(&e->state, IDX_BUILDING, memory_order_release);
	if (uw_local_index_hook)
		uw_local_index_hook(); /* tests: a signal arrives mid-build */

	struct cfi_section sec;
	eh_section(addr, len, &sec);
	int saved = errno;
	size_t n = 0, map_len = 0;
	void *mem = MAP_FAILED;
	if (cfi_index_count(&sec, UW_EHIDX_MAX_FDES, &n) == 0 && n > 0) {
		map_len = n * sizeof(struct cfi_index_entry);
		mem = mmap(NULL, map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	}
	enum uw_eh_result r = UW_EH_NONE;
	if (mem != MAP_FAILED && cfi_table_init_mem(t, &sec, mem, n) == 0 && t->nindex > 0) {
		mprotect(mem, map_len, PROT_READ);
		e->index = mem;
		e->nindex = t->nindex;
		atomic_store_explicit(&e->state, IDX_READY, memory_order_release);
		r = UW_EH_INDEXED;
	} else {
		if (mem != MAP_FAILED)
			munmap(mem, map_len);
		atomic_store_explicit(&e->state, IDX_NONE, memory_order_release);
	}
	errno = saved;
	return r;
}

enum uw_eh_result uw_local_eh_table(const struct tgt_local_object *obj, struct cfi_table *t)
{
	memset(t, 0, sizeof(*t));
	uint32_t st = IDX_FREE;
	struct ehidx *e = find(obj, UW_EHIDX_SLOTS, &st);
	if (!e) {
		bool ours;
		e = claim(obj, &ours, &st);
		if (e && ours)
			return build(e, obj, t);
	}
	struct cfi_section sec;
	uint64_t addr, len;
	switch (e ? st : IDX_LOCATING) {
	case IDX_READY:
		eh_section(e->eh_addr, e->eh_len, &sec);
		cfi_table_init_index(t, &sec, e->index, e->nindex);
		return UW_EH_INDEXED;
	case IDX_NONE:
		return UW_EH_NONE;
	case IDX_BUILDING:
		eh_section(e->eh_addr, e->eh_len, &sec);
		cfi_table_init_scan(t, &sec, UW_EHIDX_SCAN_MAX);
		return UW_EH_SCAN;
	default: /* LOCATING elsewhere, or no room to build: find it ourselves */
		if (tgt_local_eh_frame(obj, &addr, &len) != 0)
			return UW_EH_PENDING;
		eh_section(addr, len, &sec);
		cfi_table_init_scan(t, &sec, UW_EHIDX_SCAN_MAX);
		return UW_EH_SCAN;
	}
}
