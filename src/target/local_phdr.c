/* This process's objects as their program headers describe them, for what
 * _dl_find_object does not tell: the main program from the auxiliary
 * vector (AT_PHDR, AT_PHNUM), the vDSO (AT_SYSINFO_EHDR), and, for an
 * object without a usable PT_GNU_EH_FRAME, where its .eh_frame lies.
 *
 * Why: a static glibc program (gcc -static) has no PT_GNU_EH_FRAME (gcc
 * passes --eh-frame-hdr to the linker only for dynamic links; crtbeginT.o
 * registers __EH_FRAME_BEGIN__ with libgcc instead). In glibc 2.36 its
 * _dl_find_object succeeds but gives only the PT_LOAD segment holding the
 * address, and no .eh_frame. An object linked with --no-eh-frame-hdr is the
 * same: its .eh_frame is loaded, but nothing in memory points at it.
 * __EH_FRAME_BEGIN__ is a file-local symbol of crtbeginT.o (static
 * programs only) and libgcc keeps the registered objects behind its own
 * mutex: neither helps. The file's section headers do: the object's file
 * is opened (the main program through /proc/self/exe, else AT_EXECFN; a
 * library by its link_map name) and read with pread.
 *
 * Everything is async-signal-safe: getauxval reads the saved vector; the
 * program headers at AT_PHDR and the vDSO are plain loads (the kernel
 * mapped them), worked out once; files are read with raw
 * openat/pread64/close system calls (syscall(2): not cancellation points,
 * no stdio, no allocation); any other memory of the object is read through
 * tgt_local_read, which cannot fault; errno is preserved.
 * A file is trusted only if its program headers are byte for byte those in
 * memory, its notes (the build-id) are those in memory, and the first bytes
 * of its .eh_frame are those at the address it gives.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "target.h"

#if defined(__x86_64__)
#define HOST_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define HOST_MACHINE EM_AARCH64
#else
#define HOST_MACHINE EM_NONE
#endif

typedef ElfW(Ehdr) ehdr_t;
typedef ElfW(Phdr) phdr_t;
typedef ElfW(Shdr) shdr_t;

/* Bounds of the file reads (each exceeding one: the file is not used). */
#define MAX_PHDRS 256          /* program headers */
#define MAX_SHDRS 65535        /* section headers (read 8 at a time) */
#define NOTE_CHECK_LEN 256     /* bytes of each PT_NOTE compared */
#define EH_CHECK_LEN 16        /* bytes of .eh_frame compared: a CIE's header */

/* ---- The main program and the vDSO ----------------------------------------- */

struct image {
	uint64_t lo, hi;       /* the span of the PT_LOAD segments (lo page-aligned) */
	uint64_t bias;         /* runtime = link-time + bias */
	uint64_t eh_frame_hdr; /* runtime address of PT_GNU_EH_FRAME, or 0 */
};

/* Program header I of the NUM at PHDR, in memory the kernel mapped (the
 * program's headers at AT_PHDR, the vDSO): plain loads. */
static phdr_t mem_phdr(uint64_t phdr, uint64_t i)
{
	phdr_t p;
	memcpy(&p, (const void *)(uintptr_t)(phdr + i * sizeof(p)), sizeof(p));
	return p;
}

/* Describe the image whose NUM program headers are in memory at PHDR. */
static bool describe(uint64_t phdr, uint64_t num, uint64_t bias, struct image *im)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	im->eh_frame_hdr = 0;
	for (uint64_t i = 0; i < num; i++) {
		phdr_t p = mem_phdr(phdr, i);
		if (p.p_type == PT_LOAD && p.p_memsz) {
			if (p.p_vaddr < lo)
				lo = p.p_vaddr;
			if (p.p_vaddr + p.p_memsz > hi)
				hi = p.p_vaddr + p.p_memsz;
		} else if (p.p_type == PT_GNU_EH_FRAME) {
			im->eh_frame_hdr = bias + p.p_vaddr;
		}
	}
	if (lo >= hi)
		return false;
	im->lo = (bias + lo) & ~(uint64_t)4095;
	im->hi = bias + hi;
	im->bias = bias;
	return true;
}

/* The first PT_LOAD mapping file offset 0 (where the ELF header is). */
static bool first_load(uint64_t phdr, uint64_t num, uint64_t *vaddr)
{
	for (uint64_t i = 0; i < num; i++) {
		phdr_t p = mem_phdr(phdr, i);
		if (p.p_type == PT_LOAD && p.p_offset == 0) {
			*vaddr = p.p_vaddr;
			return true;
		}
	}
	return false;
}

/* The main program: its program headers are at AT_PHDR. The bias is
 * AT_PHDR minus PT_PHDR's address; without PT_PHDR (a static non-PIE
 * program has none) the headers follow the ELF header, which the first
 * PT_LOAD maps. */
static bool main_compute(struct image *im)
{
	uint64_t phdr = getauxval(AT_PHDR), num = getauxval(AT_PHNUM), bias = 0;
	if (!phdr || !num || num > MAX_PHDRS)
		return false;
	bool have_bias = false;
	for (uint64_t i = 0; i < num && !have_bias; i++) {
		phdr_t p = mem_phdr(phdr, i);
		if (p.p_type == PT_PHDR) {
			bias = phdr - p.p_vaddr;
			have_bias = true;
		}
	}
	if (!have_bias) {
		ehdr_t eh;
		uint64_t vaddr;
		if (phdr < sizeof(eh) ||
		    tgt_local_read(NULL, phdr - sizeof(eh), &eh, sizeof(eh)) != 0 ||
		    memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_phoff != sizeof(eh) ||
		    !first_load(phdr, num, &vaddr))
			return false;
		bias = phdr - sizeof(eh) - vaddr;
	}
	return describe(phdr, num, bias, im);
}

/* The vDSO: mapped whole, its ELF header at AT_SYSINFO_EHDR. */
static bool vdso_compute(struct image *im)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), vaddr;
	ehdr_t eh;
	if (!base)
		return false;
	memcpy(&eh, (const void *)(uintptr_t)base, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_phentsize != sizeof(phdr_t) ||
	    eh.e_phnum == 0 || eh.e_phnum > MAX_PHDRS || !first_load(base + eh.e_phoff, eh.e_phnum, &vaddr))
		return false;
	return describe(base + eh.e_phoff, eh.e_phnum, base - vaddr, im);
}

/* Each image is worked out once and kept: 0 not yet, 1 being stored, 2
 * known, 3 not there. Racing callers compute the same answer; the first
 * to claim the store keeps it, the others just use theirs. */
struct image_cache {
	_Atomic int state;
	struct image im;
};
static struct image_cache main_cache, vdso_cache;
/* Identities (link_map stand-ins) of objects _dl_find_object did not give. */
static const char main_token, vdso_token;

static bool image(struct image_cache *c, bool (*compute)(struct image *), struct image *out)
{
	int st = atomic_load_explicit(&c->state, memory_order_acquire);
	if (st == 2) {
		*out = c->im;
		return true;
	}
	if (st == 3)
		return false;
	int saved = errno; /* getauxval sets it when an entry is missing */
	bool ok = compute(out);
	errno = saved;
	int zero = 0;
	if (atomic_compare_exchange_strong_explicit(&c->state, &zero, 1, memory_order_acquire,
						    memory_order_relaxed)) {
		if (ok)
			c->im = *out;
		atomic_store_explicit(&c->state, ok ? 2 : 3, memory_order_release);
	}
	return ok;
}

static bool object_of(struct image_cache *c, bool (*compute)(struct image *), uint64_t addr,
		      const void *token, const char *name, struct tgt_local_object *out)
{
	struct image im;
	if (!image(c, compute, &im) || addr < im.lo || addr >= im.hi)
		return false;
	out->start = im.lo;
	out->end = im.hi;
	out->eh_frame_hdr = im.eh_frame_hdr;
	out->bias = im.bias;
	out->handle = token;
	out->name = name;
	return true;
}

bool tgt_local_main_object(uint64_t addr, struct tgt_local_object *out)
{
	return object_of(&main_cache, main_compute, addr, &main_token, "", out);
}

bool tgt_local_vdso_object(uint64_t addr, struct tgt_local_object *out)
{
	return object_of(&vdso_cache, vdso_compute, addr, &vdso_token, "[vdso]", out);
}

/* ---- .eh_frame from the file's section headers ----------------------------- */

static int file_open(const char *path)
{
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -1 : (int)fd;
}

static bool file_read(int fd, void *dst, size_t len, uint64_t off)
{
	uint8_t *d = dst;
	while (len) {
		long n = syscall(SYS_pread64, fd, d, len, (long)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		d += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return true;
}

/* Program header I of the file, read 8 at a time (small stack: this may
 * run on a signal stack). */
#define PH_CHUNK 8
struct ph_reader {
	int fd;
	uint64_t off;
	unsigned num, base, have;
	phdr_t buf[PH_CHUNK];
};

static bool ph_get(struct ph_reader *r, unsigned i, phdr_t *out)
{
	if (i < r->base || i >= r->base + r->have) {
		unsigned n = r->num - i < PH_CHUNK ? r->num - i : PH_CHUNK;
		if (!file_read(r->fd, r->buf, n * sizeof(phdr_t), r->off + (uint64_t)i * sizeof(phdr_t)))
			return false;
		r->base = i;
		r->have = n;
	}
	*out = r->buf[i - r->base];
	return true;
}

/* True when LEN bytes at file offset OFF equal those at ADDR in memory.
 * MEM_ERR_OK: memory that cannot be read counts as equal (not loaded). */
static bool same_bytes(int fd, uint64_t off, uint64_t addr, uint64_t len, bool mem_err_ok)
{
	uint8_t f[64], m[64];
	while (len) {
		size_t n = len < sizeof(f) ? (size_t)len : sizeof(f);
		if (!file_read(fd, f, n, off))
			return false;
		if (tgt_local_read(NULL, addr, m, n) != 0)
			return mem_err_ok;
		if (memcmp(f, m, n) != 0)
			return false;
		off += n;
		addr += n;
		len -= n;
	}
	return true;
}

/* Is the section header SH the .eh_frame? Its name is at NAME_OFF in the
 * file (the section-name table's offset plus sh_name). */
static bool is_eh_frame(int fd, const shdr_t *sh, uint64_t name_off)
{
	static const char want[] = ".eh_frame"; /* with its NUL */
	char name[sizeof(want)];
	/* x86-64: GNU ld marks it SHT_PROGBITS, lld SHT_X86_64_UNWIND. */
	if (!(sh->sh_flags & SHF_ALLOC) || sh->sh_size == 0 ||
	    (sh->sh_type != SHT_PROGBITS && sh->sh_type != 0x70000001 /* SHT_X86_64_UNWIND */))
		return false;
	return file_read(fd, name, sizeof(name), name_off) && memcmp(name, want, sizeof(want)) == 0;
}

/* Find OBJ's .eh_frame through the opened file FD: see the note at the top. */
static int locate(int fd, const struct tgt_local_object *obj, uint64_t *addr, uint64_t *len)
{
	ehdr_t eh;
	if (!file_read(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB ||
	    eh.e_machine != HOST_MACHINE || eh.e_phentsize != sizeof(phdr_t) || eh.e_phnum == 0 ||
	    eh.e_phnum > MAX_PHDRS || eh.e_shentsize != sizeof(shdr_t) || eh.e_shoff == 0)
		return BK_E_NOT_FOUND;
	struct ph_reader ph = { .fd = fd, .off = eh.e_phoff, .num = eh.e_phnum };
	uint64_t phdrs_len = (uint64_t)eh.e_phnum * sizeof(phdr_t);
	phdr_t p;

	/* 1. Where the program headers are in memory: the PT_LOAD holding them. */
	uint64_t at_phdr = 0;
	for (unsigned i = 0; i < eh.e_phnum && !at_phdr; i++) {
		if (!ph_get(&ph, i, &p))
			return BK_E_NOT_FOUND;
		if (p.p_type == PT_LOAD && p.p_offset <= eh.e_phoff &&
		    eh.e_phoff - p.p_offset <= p.p_filesz &&
		    phdrs_len <= p.p_filesz - (eh.e_phoff - p.p_offset))
			at_phdr = obj->bias + p.p_vaddr + (eh.e_phoff - p.p_offset);
	}
	if (!at_phdr)
		return BK_E_NOT_FOUND;

	/* 2. The file is the object: the same program headers (compared a
	 * chunk at a time), the same notes. */
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		if (!ph_get(&ph, i, &p))
			return BK_E_NOT_FOUND;
		if (i == ph.base) {
			phdr_t m[PH_CHUNK];
			size_t n = ph.have * sizeof(phdr_t);
			if (tgt_local_read(NULL, at_phdr + i * sizeof(phdr_t), m, n) != 0 ||
			    memcmp(ph.buf, m, n) != 0)
				return BK_E_NOT_FOUND;
		}
		if (p.p_type == PT_NOTE &&
		    !same_bytes(fd, p.p_offset, obj->bias + p.p_vaddr,
				p.p_filesz < NOTE_CHECK_LEN ? p.p_filesz : NOTE_CHECK_LEN, true))
			return BK_E_NOT_FOUND;
	}

	/* 3. The section named .eh_frame. */
	shdr_t sh, strtab;
	uint64_t shnum = eh.e_shnum, shstrndx = eh.e_shstrndx;
	if (shnum == 0 || shstrndx == SHN_XINDEX) { /* the real values are in section 0 */
		if (!file_read(fd, &sh, sizeof(sh), eh.e_shoff))
			return BK_E_NOT_FOUND;
		if (shnum == 0)
			shnum = sh.sh_size;
		if (shstrndx == SHN_XINDEX)
			shstrndx = sh.sh_link;
	}
	if (shnum > MAX_SHDRS || shstrndx >= shnum ||
	    !file_read(fd, &strtab, sizeof(strtab), eh.e_shoff + shstrndx * sizeof(shdr_t)))
		return BK_E_NOT_FOUND;
	bool found = false;
	for (uint64_t i = 0; i < shnum && !found; i += PH_CHUNK) {
		shdr_t chunk[PH_CHUNK];
		uint64_t n = shnum - i < PH_CHUNK ? shnum - i : PH_CHUNK;
		if (!file_read(fd, chunk, n * sizeof(shdr_t), eh.e_shoff + i * sizeof(shdr_t)))
			return BK_E_NOT_FOUND;
		for (uint64_t k = 0; k < n && !found; k++)
			if (chunk[k].sh_name < strtab.sh_size &&
			    is_eh_frame(fd, &chunk[k], strtab.sh_offset + chunk[k].sh_name)) {
				sh = chunk[k];
				found = true;
			}
	}
	if (!found)
		return BK_E_NOT_FOUND;

	/* 4. Loaded: inside a PT_LOAD's file contents, where the file has it,
	 * and inside the object's range. */
	bool loaded = false;
	for (unsigned i = 0; i < eh.e_phnum && !loaded; i++) {
		if (!ph_get(&ph, i, &p))
			return BK_E_NOT_FOUND;
		loaded = p.p_type == PT_LOAD && sh.sh_addr >= p.p_vaddr &&
			 sh.sh_addr - p.p_vaddr <= p.p_filesz &&
			 sh.sh_size <= p.p_filesz - (sh.sh_addr - p.p_vaddr) &&
			 sh.sh_offset >= p.p_offset && sh.sh_offset - p.p_offset == sh.sh_addr - p.p_vaddr;
	}
	uint64_t at = obj->bias + sh.sh_addr;
	if (!loaded || at < obj->start || at >= obj->end || sh.sh_size > obj->end - at)
		return BK_E_NOT_FOUND;

	/* 5. Its first bytes (a CIE's header, never relocated) are those there. */
	if (!same_bytes(fd, sh.sh_offset, at, sh.sh_size < EH_CHECK_LEN ? sh.sh_size : EH_CHECK_LEN,
			false))
		return BK_E_NOT_FOUND;
	*addr = at;
	*len = sh.sh_size;
	return 0;
}

int tgt_local_eh_frame(const struct tgt_local_object *obj, uint64_t *addr, uint64_t *len)
{
	const char *paths[2] = { NULL, NULL };
	if (!obj->name[0]) {
		/* The main program. /proc/self/exe survives a rename and a chdir;
		 * AT_EXECFN (the path given to execve) serves without /proc. */
		paths[0] = "/proc/self/exe";
		paths[1] = (const char *)(uintptr_t)getauxval(AT_EXECFN);
	} else if (strchr(obj->name, '/')) {
		/* A library, by the name the dynamic linker opened it by ("[vdso]"
		 * and "linux-vdso.so.1" have no file). */
		paths[0] = obj->name;
	}
	int saved = errno, err = BK_E_NOT_FOUND;
	for (unsigned i = 0; i < 2 && err && paths[i]; i++) {
		int fd = file_open(paths[i]);
		if (fd < 0)
			continue;
		err = locate(fd, obj, addr, len);
		syscall(SYS_close, fd);
	}
	errno = saved;
	return err;
}
