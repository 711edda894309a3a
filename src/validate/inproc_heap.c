/* The in-process driver's private heap. The checker runs inside the
 * program (inproc_preload.c), in signal handlers that may interrupt the
 * program anywhere: inside malloc, holding its arena's lock or halfway
 * through a free list. So nothing the driver does may use the program's
 * allocator:
 *
 *  - the preload library's own code (libbackstep, the checker, the driver)
 *    allocates only here, wherever it runs: its references to malloc & co.
 *    are bound to the ip_wrap_* functions below at link time
 *    (-Wl,--wrap=..., meson.build);
 *  - any other allocation made while the thread is inside the driver
 *    (ip_inside) is ours too: libelf's, libdwarf's, Capstone's, libc's own
 *    (qsort, getline, fopen), through the malloc, free, ... this library
 *    exports, which the program's lookup finds first (after an executable
 *    that defines malloc itself: then those allocations go to the
 *    program's allocator, docs/validation.md "Not done");
 *  - everything else goes on to the next definition (libc's, or a
 *    preloaded allocator after ours). free and realloc go to whichever
 *    heap holds the block: ours is one reserved address range.
 *
 * The heap: one range reserved PROT_NONE and made readable and writable
 * as it fills, by raw system calls (the program's mmap and mprotect are
 * wrapped and counted); blocks of power-of-two sizes from 32 bytes, each
 * with a 16-byte header, one free list per size, never given back. One
 * spin lock, and whoever holds it has every signal blocked: inside the
 * driver they are already; a program thread freeing one of our blocks
 * (memory libc allocated on the driver's behalf and frees later) blocks
 * them for the call. So no handler ever interrupts the lock's holder, and
 * taking it never waits on anything but another thread's few instructions.
 */
#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inproc.h"

#define EXPORT __attribute__((visibility("default")))

__thread int ip_inside __attribute__((tls_model("initial-exec")));

#define HDR 16u
#define MIN_SHIFT 5u             /* the smallest block: 32 bytes */
#define NCLASS 40u
#define COMMIT_STEP (16u << 20)  /* made usable 16 MiB at a time */

struct hdr {
	uint32_t magic;
	uint32_t cls;
	uint64_t off;            /* this header's distance from its block's start */
};
#define MAGIC 0x6b737462u       /* "btsk" */

static struct {
	uint8_t *base, *top, *usable, *end;
	void *free_list[NCLASS];
	atomic_flag lock;
	atomic_int state;        /* 0 not reserved, 1 reserving, 2 ready, 3 failed */
} ph = { .lock = ATOMIC_FLAG_INIT };

/* Every signal blocked, the old mask into *OLD (8 bytes: the kernel's). */
static void block_all(uint64_t *old)
{
	uint64_t all = ~0ull;
	ip_syscall6(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)old, 8, 0, 0);
}

static void restore_mask(const uint64_t *old)
{
	ip_syscall6(SYS_rt_sigprocmask, SIG_SETMASK, (long)old, 0, 8, 0, 0);
}

static void lock(void)
{
	while (atomic_flag_test_and_set_explicit(&ph.lock, memory_order_acquire))
		ip_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&ph.lock, memory_order_release);
}

/* Reserve the range, once: as much as the address-space limit allows. */
static bool reserve(void)
{
	int st = atomic_load_explicit(&ph.state, memory_order_acquire);
	if (st == 2)
		return true;
	if (st == 3)
		return false;
	int zero = 0;
	if (!atomic_compare_exchange_strong(&ph.state, &zero, 1)) {
		while ((st = atomic_load_explicit(&ph.state, memory_order_acquire)) == 1)
			ip_syscall6(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
		return st == 2;
	}
	static const uint64_t sizes[] = { 64ull << 30, 8ull << 30, 1ull << 30, 256ull << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		long p = ip_syscall6(SYS_mmap, 0, (long)sizes[i], PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if ((unsigned long)p > -4096ul)
			continue;
		ph.base = ph.top = ph.usable = (uint8_t *)p;
		ph.end = ph.base + sizes[i];
		atomic_store_explicit(&ph.state, 2, memory_order_release);
		return true;
	}
	atomic_store_explicit(&ph.state, 3, memory_order_release);
	return false;
}

bool ip_heap_owns(const void *p)
{
	return ph.base && (const uint8_t *)p >= ph.base && (const uint8_t *)p < ph.end;
}

void ip_heap_after_fork(void)
{
	unlock();
}

/* A block of class CLS (32 << CLS bytes), lock held: NULL when the range
 * is full. */
static uint8_t *take(unsigned cls)
{
	void *b = ph.free_list[cls];
	if (b) {
		memcpy(&ph.free_list[cls], b, sizeof(void *));
		return b;
	}
	size_t size = (size_t)1 << (cls + MIN_SHIFT);
	if ((size_t)(ph.end - ph.top) < size)
		return NULL;
	if (ph.top + size > ph.usable) {
		size_t need = (size_t)(ph.top + size - ph.usable);
		need = (need + COMMIT_STEP - 1) / COMMIT_STEP * COMMIT_STEP;
		if (need > (size_t)(ph.end - ph.usable))
			need = (size_t)(ph.end - ph.usable);
		if (ip_syscall6(SYS_mprotect, (long)ph.usable, (long)need, PROT_READ | PROT_WRITE, 0, 0, 0))
			return NULL;
		ph.usable += need;
	}
	uint8_t *p = ph.top;
	ph.top += size;
	return p;
}

/* LEN bytes aligned to ALIGN (a power of two, at most 4096). */
static void *heap_alloc(size_t len, size_t align)
{
	if (!reserve() || len > ((size_t)1 << 40))
		return NULL;
	if (align < HDR)
		align = HDR;
	size_t need = len + HDR + (align > HDR ? align : 0);
	unsigned cls = 0;
	while (((size_t)1 << (cls + MIN_SHIFT)) < need)
		cls++;
	if (cls >= NCLASS)
		return NULL;
	uint64_t old;
	bool outside = !ip_inside;
	if (outside)
		block_all(&old);
	lock();
	uint8_t *b = take(cls);
	unlock();
	if (outside)
		restore_mask(&old);
	if (!b)
		return NULL;
	uint8_t *user = b + HDR;
	if (align > HDR)
		user = (uint8_t *)(((uintptr_t)b + HDR + align - 1) & ~(uintptr_t)(align - 1));
	struct hdr *h = (struct hdr *)(void *)(user - HDR);
	h->magic = MAGIC;
	h->cls = cls;
	h->off = (uint64_t)((uint8_t *)h - b);
	return user;
}

static struct hdr *hdr_of(void *p)
{
	struct hdr *h = (struct hdr *)(void *)((uint8_t *)p - HDR);
	return h->magic == MAGIC && h->cls < NCLASS ? h : NULL;
}

static size_t usable_size(void *p)
{
	struct hdr *h = hdr_of(p);
	return h ? ((size_t)1 << (h->cls + MIN_SHIFT)) - HDR - h->off : 0;
}

static void heap_free(void *p)
{
	struct hdr *h = hdr_of(p);
	if (!h)
		return; /* not a block of ours (a double free): leave it */
	uint8_t *b = (uint8_t *)h - h->off;
	unsigned cls = h->cls;
	h->magic = 0;
	uint64_t old;
	bool outside = !ip_inside;
	if (outside)
		block_all(&old);
	lock();
	memcpy(b, &ph.free_list[cls], sizeof(void *));
	ph.free_list[cls] = b;
	unlock();
	if (outside)
		restore_mask(&old);
}

static void *heap_realloc(void *p, size_t len)
{
	size_t have = usable_size(p);
	if (len <= have && len >= have / 4)
		return p;
	void *n = heap_alloc(len, HDR);
	if (!n)
		return NULL;
	memcpy(n, p, have < len ? have : len);
	heap_free(p);
	return n;
}

/* ---- The next allocator --------------------------------------------------
 *
 * Found with dlsym(RTLD_NEXT) on first use; dlsym may allocate itself,
 * which the private heap serves meanwhile. */

static struct {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void *(*memalign)(size_t, size_t);
	size_t (*usable)(void *);
} next;
static atomic_int next_state; /* 0 unknown, 1 resolving, 2 known */
static __thread int resolving __attribute__((tls_model("initial-exec")));

static bool have_next(void)
{
	if (atomic_load_explicit(&next_state, memory_order_acquire) == 2)
		return true;
	if (resolving)
		return false;
	resolving = 1;
	*(void **)&next.malloc = dlsym(RTLD_NEXT, "malloc");
	*(void **)&next.free = dlsym(RTLD_NEXT, "free");
	*(void **)&next.calloc = dlsym(RTLD_NEXT, "calloc");
	*(void **)&next.realloc = dlsym(RTLD_NEXT, "realloc");
	*(void **)&next.memalign = dlsym(RTLD_NEXT, "memalign");
	*(void **)&next.usable = dlsym(RTLD_NEXT, "malloc_usable_size");
	resolving = 0;
	bool ok = next.malloc && next.free && next.calloc && next.realloc && next.memalign;
	if (ok)
		atomic_store_explicit(&next_state, 2, memory_order_release);
	return ok;
}

/* Is this allocation ours? */
static bool mine(void)
{
	return ip_inside || !have_next();
}

/* ---- The program's entry points ------------------------------------------ */

static void *do_malloc(size_t len)
{
	if (mine()) {
		void *p = heap_alloc(len, HDR);
		if (!p)
			errno = ENOMEM;
		return p;
	}
	return next.malloc(len);
}

static void do_free(void *p)
{
	if (!p)
		return;
	if (ip_heap_owns(p))
		heap_free(p);
	else if (have_next())
		next.free(p);
}

static void *do_calloc(size_t n, size_t len)
{
	if (!mine())
		return next.calloc(n, len);
	if (len && n > SIZE_MAX / len) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = heap_alloc(n * len, HDR);
	if (p)
		memset(p, 0, n * len);
	else
		errno = ENOMEM;
	return p;
}

static void *do_realloc(void *p, size_t len)
{
	if (!p)
		return do_malloc(len);
	if (ip_heap_owns(p)) {
		void *n = heap_realloc(p, len);
		if (!n)
			errno = ENOMEM;
		return n;
	}
	if (!have_next())
		return NULL;
	if (!ip_inside)
		return next.realloc(p, len);
	/* The program's block, grown by the driver (not done today): moved
	 * into ours, the program's heap left alone but for the free. */
	size_t have = next.usable ? next.usable(p) : 0;
	void *n = heap_alloc(len, HDR);
	if (n) {
		memcpy(n, p, have < len ? have : len);
		next.free(p);
	}
	return n;
}

static void *do_memalign(size_t align, size_t len)
{
	if (!mine())
		return next.memalign(align, len);
	if (!align || (align & (align - 1)) || align > 4096) {
		errno = EINVAL;
		return NULL;
	}
	void *p = heap_alloc(len, align);
	if (!p)
		errno = ENOMEM;
	return p;
}

static void *do_reallocarray(void *p, size_t n, size_t len)
{
	if (len && n > SIZE_MAX / len) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(p, n * len);
}

static int do_posix_memalign(void **out, size_t align, size_t len)
{
	if (!align || (align & (align - 1)) || align % sizeof(void *))
		return EINVAL;
	int saved = errno;
	void *p = do_memalign(align, len);
	int e = errno;
	errno = saved;
	if (!p)
		return e == EINVAL ? EINVAL : ENOMEM;
	*out = p;
	return 0;
}

static void *do_valloc(size_t len)
{
	return do_memalign(4096, len);
}

static void *do_pvalloc(size_t len)
{
	return do_memalign(4096, (len + 4095) & ~(size_t)4095);
}

static size_t do_usable(void *p)
{
	if (!p)
		return 0;
	if (ip_heap_owns(p))
		return usable_size(p);
	return have_next() && next.usable ? next.usable(p) : 0;
}

EXPORT void *malloc(size_t len)
{
	return do_malloc(len);
}

EXPORT void free(void *p)
{
	do_free(p);
}

EXPORT void *calloc(size_t n, size_t len)
{
	return do_calloc(n, len);
}

EXPORT void *realloc(void *p, size_t len)
{
	return do_realloc(p, len);
}

EXPORT void *reallocarray(void *p, size_t n, size_t len)
{
	return do_reallocarray(p, n, len);
}

EXPORT void *memalign(size_t align, size_t len)
{
	return do_memalign(align, len);
}

EXPORT void *aligned_alloc(size_t align, size_t len)
{
	return do_memalign(align, len);
}

EXPORT int posix_memalign(void **out, size_t align, size_t len)
{
	return do_posix_memalign(out, align, len);
}

EXPORT void *valloc(size_t len)
{
	return do_valloc(len);
}

EXPORT void *pvalloc(size_t len)
{
	return do_pvalloc(len);
}

EXPORT size_t malloc_usable_size(void *p)
{
	return do_usable(p);
}

/* ---- An executable that defines malloc ------------------------------------
 *
 * Then the program's malloc is its own, found first by every library
 * (the executable comes first in the lookup order), ours by none: libelf,
 * libdwarf, the compression libraries, Capstone and the C library itself
 * would allocate from the program's allocator inside the driver. So their
 * GOT slots for the allocator's functions are pointed at ours, which
 * forward to the program's outside the driver (what those slots held).
 * Libraries loaded later (dlopen) keep the program's: the driver uses
 * none of them. */

static const char *const alloc_names[] = {
	"malloc", "free", "calloc", "realloc", "reallocarray", "memalign", "aligned_alloc",
	"posix_memalign", "valloc", "pvalloc", "malloc_usable_size",
};

/* Ours for alloc_names[I]: the functions themselves, not the exported
 * names (which resolve to the program's here). */
static void *our_fn(size_t i)
{
	void *fns[] = { (void *)do_malloc, (void *)do_free, (void *)do_calloc, (void *)do_realloc,
			(void *)do_reallocarray, (void *)do_memalign, (void *)do_memalign,
			(void *)do_posix_memalign, (void *)do_valloc, (void *)do_pvalloc,
			(void *)do_usable };
	return fns[i];
}

static void patch_slot(uint64_t *slot, void *to, uint64_t relro_lo, uint64_t relro_hi)
{
	uint64_t page = (uint64_t)(uintptr_t)slot & ~(uint64_t)4095;
	bool ro = (uint64_t)(uintptr_t)slot >= relro_lo && (uint64_t)(uintptr_t)slot < relro_hi;
	if (ro && ip_syscall6(SYS_mprotect, (long)page, 4096, PROT_READ | PROT_WRITE, 0, 0, 0))
		return;
	*(volatile uint64_t *)slot = (uint64_t)(uintptr_t)to;
	if (ro)
		ip_syscall6(SYS_mprotect, (long)page, 4096, PROT_READ, 0, 0, 0);
}

static int patch_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const void *self = data;
	if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == (uintptr_t)self)
		return 0; /* the executable (its calls are its own), ourselves */
	const ElfW(Dyn) *dyn = NULL;
	uint64_t relro_lo = 0, relro_hi = 0, base = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(uintptr_t)(base + ph->p_vaddr);
		else if (ph->p_type == PT_GNU_RELRO) {
			relro_lo = base + ph->p_vaddr;
			relro_hi = relro_lo + ph->p_memsz;
		}
	}
	if (!dyn)
		return 0;
	uint64_t symtab = 0, strtab = 0, strsz = 0, jmprel = 0, pltrelsz = 0, rela = 0, relasz = 0;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		switch (d->d_tag) {
		case DT_SYMTAB: symtab = d->d_un.d_ptr; break;
		case DT_STRTAB: strtab = d->d_un.d_ptr; break;
		case DT_STRSZ: strsz = d->d_un.d_val; break;
		case DT_JMPREL: jmprel = d->d_un.d_ptr; break;
		case DT_PLTRELSZ: pltrelsz = d->d_un.d_val; break;
		case DT_RELA: rela = d->d_un.d_ptr; break;
		case DT_RELASZ: relasz = d->d_un.d_val; break;
		}
	}
	/* The dynamic linker relocated these pointers in place, where it
	 * could write them. */
	if (symtab && symtab < base)
		symtab += base;
	if (strtab && strtab < base)
		strtab += base;
	if (jmprel && jmprel < base)
		jmprel += base;
	if (rela && rela < base)
		rela += base;
	if (!symtab || !strtab)
		return 0;
	const uint64_t tables[2][2] = { { jmprel, pltrelsz }, { rela, relasz } };
	for (int t = 0; t < 2; t++) {
		const ElfW(Rela) *r = (const ElfW(Rela) *)(uintptr_t)tables[t][0];
		size_t n = r ? tables[t][1] / sizeof(*r) : 0;
		for (size_t k = 0; k < n; k++) {
			unsigned type = ELF64_R_TYPE(r[k].r_info), sym = ELF64_R_SYM(r[k].r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) || !sym)
				continue;
			const ElfW(Sym) *s = (const ElfW(Sym) *)(uintptr_t)symtab + sym;
			if (s->st_name >= strsz)
				continue;
			const char *name = (const char *)(uintptr_t)strtab + s->st_name;
			for (size_t i = 0; i < sizeof(alloc_names) / sizeof(*alloc_names); i++)
				if (!strcmp(name, alloc_names[i])) {
					patch_slot((uint64_t *)(uintptr_t)(base + r[k].r_offset), our_fn(i),
						   relro_lo, relro_hi);
					break;
				}
		}
	}
	return 0;
}

void ip_heap_take_over(void)
{
	/* Where the lookup finds our malloc, every library's calls come here
	 * (the name in this file would resolve to the program's: compared by
	 * the library that defines it). */
	void *prog = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info self, found;
	if (!prog || !dladdr((void *)ip_heap_take_over, &self) || !dladdr(prog, &found) ||
	    found.dli_fbase == self.dli_fbase)
		return;
	/* The program's are what we forward to. */
	resolving = 1;
	*(void **)&next.malloc = prog;
	*(void **)&next.free = dlsym(RTLD_DEFAULT, "free");
	*(void **)&next.calloc = dlsym(RTLD_DEFAULT, "calloc");
	*(void **)&next.realloc = dlsym(RTLD_DEFAULT, "realloc");
	*(void **)&next.memalign = dlsym(RTLD_DEFAULT, "memalign");
	*(void **)&next.usable = dlsym(RTLD_DEFAULT, "malloc_usable_size");
	resolving = 0;
	if (!next.free || !next.calloc || !next.realloc || !next.memalign)
		return;
	atomic_store_explicit(&next_state, 2, memory_order_release);
	dl_iterate_phdr(patch_object, self.dli_fbase);
}

/* The preload library's own references (-Wl,--wrap): always ours. */
void *__wrap_malloc(size_t len);
void *__wrap_malloc(size_t len)
{
	void *p = heap_alloc(len, HDR);
	if (!p)
		errno = ENOMEM;
	return p;
}

void *__wrap_calloc(size_t n, size_t len);
void *__wrap_calloc(size_t n, size_t len)
{
	if (len && n > SIZE_MAX / len)
		return NULL;
	void *p = heap_alloc(n * len, HDR);
	if (p)
		memset(p, 0, n * len);
	return p;
}

void *__wrap_realloc(void *p, size_t len);
void *__wrap_realloc(void *p, size_t len)
{
	if (!p)
		return __wrap_malloc(len);
	if (ip_heap_owns(p))
		return heap_realloc(p, len);
	/* A block the program's heap gave (libc's getline buffer grown by
	 * our own realloc): never done by our code; handled as do_realloc. */
	return do_realloc(p, len);
}

void __wrap_free(void *p);
void __wrap_free(void *p)
{
	do_free(p);
}
