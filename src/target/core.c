/* The core-file target: an x86-64 or AArch64 ELF ET_CORE written by the
 * kernel, gdb's gcore or qemu-user, read on any host through a private
 * read-only mapping of the file.
 *
 * Threads: one per NT_PRSTATUS note ("CORE"), in note order; registers from
 * pr_reg (tgt_regs_x86_64 / tgt_regs_aarch64, the copies the ptrace target
 * uses too). A core keeps no per-thread name, so every thread is named
 * after NT_PRPSINFO's pr_fname. NT_FPREGSET: on AArch64 d8-d15 for the
 * thread before it; on x86-64 x87/SSE state, none of which is callee-saved
 * (skipped). NT_ARM_PAC_MASK ("LINUX"): the bits a signed return address
 * carries, for the space.
 *
 * Mappings: one per NT_FILE entry {start, end, file_ofs in pages} with its
 * name, flags from the PT_LOAD covering it (the kernel writes one per
 * mapping; gcore only for the ones it dumps), else from the module's own
 * program headers (in the core's copy of its ELF header page, else in the
 * file), else assumed r-x so the module keeps its name. Then every PT_LOAD
 * that NT_FILE does not name, as an anonymous mapping; the one at
 * AT_SYSINFO_EHDR (NT_AUXV) is the "[vdso]".
 *
 * Memory: the bytes a PT_LOAD holds in the core (p_filesz may be all of
 * p_memsz, only the ELF header page, or 0); past them, or where no PT_LOAD
 * covers the address (gcore writes none for untouched file mappings), the
 * file NT_FILE names at that address, opened once and read with pread.
 * Bytes a PT_LOAD claims but a truncated core no longer holds are
 * unreadable: they are never guessed from the mapped file.
 *
 * Without NT_FILE (qemu-user's cores, which also leave out read-only
 * pages), mappings come from the files the dynamic linker's list names, at
 * their load biases (link_map_files, below). Paths the core names are
 * looked for under the caller's sysroot first.
 *
 * Build-ids: for each mapped file, the GNU build-id of the copy the core
 * holds (its ELF header page, program headers, PT_NOTE) is compared with
 * the file's. When they differ the file is marked TGT_FILE_DIFFERS and is
 * never read, here or above.
 *
 * Invariant: every offset and size read from the core is checked against
 * the file's size before the bytes are touched; notes go through the
 * bounded reader. A core cut anywhere gives BK_E_CORRUPT (headers or notes
 * cut) or unreadable memory, never a fault. Trusts the caller for valid
 * pointers. Opening is cold; core_read neither allocates nor locks.
 */
#include <elf.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target.h"

#define MAX_THREADS 100000
#define MAX_OPEN_FILES 512        /* files kept open for reads; more are not read */
#define MAX_MODULE_PHNUM 256      /* program headers of one mapped ELF image */
#define MAX_MODULE_LOADS 32       /* PT_LOAD segments remembered per image */
#define MAX_NOTE_SCAN (64u << 10) /* bytes of one image PT_NOTE scanned for the build-id */
#define MAX_BUILD_ID 64

/* x86-64 layouts of the core notes (kernel include/uapi/linux/elfcore.h,
 * glibc <sys/procfs.h>), written out so any host reads them. */
#define PRSTATUS_PID_OFF 32
#define PRSTATUS_REG_OFF 112
#define PRPSINFO_FNAME_OFF 40
#define PRPSINFO_FNAME_LEN 16
#if defined(__x86_64__)
#include <sys/procfs.h>
_Static_assert(offsetof(struct elf_prstatus, pr_pid) == PRSTATUS_PID_OFF, "pr_pid");
_Static_assert(offsetof(struct elf_prstatus, pr_reg) == PRSTATUS_REG_OFF, "pr_reg");
_Static_assert(sizeof(elf_gregset_t) == TGT_X86_64_USER_REGS * 8, "elf_gregset_t");
_Static_assert(offsetof(struct elf_prpsinfo, pr_fname) == PRPSINFO_FNAME_OFF, "pr_fname");
#endif

#define PHDR64_SIZE 56u
#define NT_ARM_PAC_MASK_ 0x406 /* <elf.h> of older hosts lacks it */
#define EHDR64_SIZE 64u

/* One PT_LOAD of the core: [vaddr, end) in memory; the first `dumped`
 * bytes are in the core at file_off, of which the first `avail` are still
 * inside the file (fewer when it was cut). */
struct seg {
	uint64_t vaddr, end;
	uint64_t file_off;
	uint64_t dumped, avail;
	uint32_t flags;
};

struct core_priv {
	const uint8_t *img;  /* the core, mapped */
	size_t len;
	struct seg *segs;    /* sorted by vaddr */
	size_t nsegs;
	int *map_fd;         /* per t->maps entry: its file's descriptor, or -1 */
	int *fds;            /* every descriptor opened, for close */
	size_t nfds;
	uint64_t page_size;  /* from NT_FILE */
	uint16_t machine;    /* EM_X86_64 or EM_AARCH64 */
	const char *sysroot; /* files the core names are looked for under it first */
	tgt_fetch_fn *fetch; /* a file gone from disk, by build-id, or NULL */
};

/* ---- Small helpers -------------------------------------------------------- */

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* ---- Notes (ELF gABI "Note Section") ---------------------------------------- */

struct note {
	uint32_t type;
	const uint8_t *name;
	uint32_t namesz;
	const uint8_t *desc;
	uint32_t descsz;
};

/* The next note of the area AREA (read through B): 0 and *N, 1 at the end
 * (fewer bytes left than a note header), BK_E_CORRUPT when a note runs past
 * the area. Name and desc are padded to ALIGN; the last padding may be cut. */
static int note_next(struct buf *b, const uint8_t *area, size_t align, struct note *n)
{
	if (buf_left(b) < 12)
		return 1;
	uint32_t namesz = 0, descsz = 0;
	buf_u32(b, &namesz);
	buf_u32(b, &descsz);
	buf_u32(b, &n->type);
	n->name = b->p;
	n->namesz = namesz;
	if (buf_skip(b, namesz))
		return BK_CORRUPT;
	size_t pad = (align - (size_t)(b->p - area) % align) % align;
	buf_skip(b, min_u64(pad, buf_left(b)));
	n->desc = b->p;
	n->descsz = descsz;
	if (buf_skip(b, descsz))
		return BK_CORRUPT;
	pad = (align - (size_t)(b->p - area) % align) % align;
	buf_skip(b, min_u64(pad, buf_left(b)));
	return 0;
}

/* OWNER with its NUL (also accepted without). */
static bool note_owner_is(const struct note *n, const char *owner)
{
	size_t l = strlen(owner);
	return (n->namesz == l + 1 || n->namesz == l) && memcmp(n->name, owner, l) == 0 &&
	       (n->namesz == l || n->name[l] == 0);
}

/* ---- Memory ----------------------------------------------------------------- */

/* The PT_LOAD containing ADDR, or NULL; *NEXT is the start of the first one
 * above ADDR (UINT64_MAX if none). */
static const struct seg *seg_at(const struct core_priv *p, uint64_t addr, uint64_t *next)
{
	size_t lo = BASE_COUNT_LE(p->segs, p->nsegs, vaddr, addr);
	*next = lo < p->nsegs ? p->segs[lo].vaddr : UINT64_MAX;
	if (lo == 0 || addr >= p->segs[lo - 1].end)
		return NULL;
	return &p->segs[lo - 1];
}

/* The index of the mapping containing ADDR, or -1. */
static long map_at(const struct tgt *t, uint64_t addr)
{
	const struct tgt_mapping *m = tgt_mapping_at(t, addr);
	return m ? (long)(m - t->maps) : -1;
}

/* Only the bytes the core holds; no file is consulted. */
static int read_dumped(const struct core_priv *p, uint64_t addr, void *dst, size_t len)
{
	uint8_t *out = dst;
	while (len) {
		uint64_t next;
		const struct seg *s = seg_at(p, addr, &next);
		if (!s || addr - s->vaddr >= s->avail)
			return BK_E_MEMORY;
		uint64_t off = addr - s->vaddr;
		size_t take = (size_t)min_u64(len, s->avail - off);
		memcpy(out, p->img + s->file_off + off, take);
		out += take;
		addr += take;
		len -= take;
	}
	return 0;
}

/* Up to LEN bytes at ADDR from the file mapped there (not past its
 * mapping): *GOT bytes, or BK_E_MEMORY. */
static int read_mapped_file(const struct tgt *t, uint64_t addr, uint8_t *dst, size_t len,
			    size_t *got)
{
	const struct core_priv *p = t->priv;
	long i = map_at(t, addr);
	if (i < 0 || p->map_fd[i] < 0)
		return BK_E_MEMORY;
	const struct tgt_mapping *m = &t->maps[i];
	size_t take = (size_t)min_u64(len, m->end - addr);
	uint64_t pos = m->offset + (addr - m->start);
	if (pos < m->offset || pos > (uint64_t)INT64_MAX - take)
		return BK_E_MEMORY;
	ssize_t n = pread(p->map_fd[i], dst, take, (off_t)pos);
	if (n < 0 || (size_t)n != take)
		return BK_E_MEMORY;
	*got = take;
	return 0;
}

static int core_read(struct tgt *t, uint64_t addr, void *dst, size_t len)
{
	const struct core_priv *p = t->priv;
	uint8_t *out = dst;
	if (addr + len < addr)
		return BK_E_MEMORY;
	while (len) {
		uint64_t next;
		const struct seg *s = seg_at(p, addr, &next);
		uint64_t off = s ? addr - s->vaddr : 0;
		size_t take;
		if (s && off < s->avail) {
			take = (size_t)min_u64(len, s->avail - off);
			memcpy(out, p->img + s->file_off + off, take);
		} else if (s && off < s->dumped) {
			return BK_E_MEMORY; /* the core was cut here */
		} else {
			uint64_t region_end = s ? s->end : next;
			int err = read_mapped_file(t, addr, out, (size_t)min_u64(len, region_end - addr),
						   &take);
			if (err)
				return err;
		}
		out += take;
		addr += take;
		len -= take;
	}
	return 0;
}

static void core_close(struct tgt *t)
{
	struct core_priv *p = t->priv;
	if (!p)
		return;
	for (size_t i = 0; i < p->nfds; i++)
		close(p->fds[i]);
	base_free(p->fds);
	base_free(p->map_fd);
	base_free(p->segs);
	if (p->img)
		base_unmap_file(p->img, p->len);
	base_free(p);
	t->priv = NULL;
}

static const struct tgt_ops core_ops = { core_read, core_close };

/* ---- A mapped ELF image: its PT_LOADs and build-id ----------------------------- */

/* Reads bytes of one image at position POS (an offset in the file, or from
 * the image's first byte in memory). */
struct image_reader {
	int (*read)(const struct image_reader *r, uint64_t pos, void *dst, size_t len);
	const struct core_priv *core; /* in memory: the core ... */
	uint64_t base;                /* ... and where the image starts */
	int fd;                       /* in a file */
};

static int read_image_in_core(const struct image_reader *r, uint64_t pos, void *dst, size_t len)
{
	if (r->base + pos < r->base)
		return BK_E_MEMORY;
	return read_dumped(r->core, r->base + pos, dst, len);
}

static int read_image_in_file(const struct image_reader *r, uint64_t pos, void *dst, size_t len)
{
	if (pos > (uint64_t)INT64_MAX)
		return BK_E_MEMORY;
	ssize_t n = pread(r->fd, dst, len, (off_t)pos);
	return n >= 0 && (size_t)n == len ? 0 : BK_E_MEMORY;
}

struct image_look {
	bool is_elf;         /* a readable little-endian ELF64 with program headers */
	struct {
		uint64_t off, filesz;
		uint32_t flags;
	} loads[MAX_MODULE_LOADS];
	size_t nloads;
	uint8_t build_id[MAX_BUILD_ID];
	size_t build_id_len; /* 0: none found */
};

static void scan_build_id(const uint8_t *area, size_t len, size_t align, struct image_look *out)
{
	struct buf b = buf_make(area, len);
	struct note n;
	while (note_next(&b, area, align, &n) == 0) {
		if (n.type == NT_GNU_BUILD_ID && note_owner_is(&n, "GNU") && n.descsz > 0 &&
		    n.descsz <= MAX_BUILD_ID) {
			memcpy(out->build_id, n.desc, n.descsz);
			out->build_id_len = n.descsz;
			return;
		}
	}
}

/* Look at the image R reads: IN_MEMORY, its PT_NOTE are found at p_vaddr
 * relative to the lowest PT_LOAD (rounded down to PAGE), else at p_offset.
 * Returns false when it cannot (not ELF, unreadable, out of memory). */
static bool look_image(const struct image_reader *r, bool in_memory, uint64_t page,
		       struct image_look *out)
{
	memset(out, 0, sizeof(*out));
	uint8_t eh[EHDR64_SIZE];
	if (r->read(r, 0, eh, sizeof(eh)) || memcmp(eh, ELFMAG, SELFMAG) != 0 ||
	    eh[EI_CLASS] != ELFCLASS64 || eh[EI_DATA] != ELFDATA2LSB)
		return false;
	uint64_t phoff = base_rd_le(eh + offsetof(Elf64_Ehdr, e_phoff), 8);
	unsigned phentsize = (unsigned)base_rd_le(eh + offsetof(Elf64_Ehdr, e_phentsize), 2);
	unsigned phnum = (unsigned)base_rd_le(eh + offsetof(Elf64_Ehdr, e_phnum), 2);
	if (phentsize != PHDR64_SIZE || phnum == 0 || phnum > MAX_MODULE_PHNUM)
		return false;
	uint8_t *ph = base_alloc((size_t)phnum * PHDR64_SIZE);
	if (!ph)
		return false;
	if (r->read(r, phoff, ph, (size_t)phnum * PHDR64_SIZE)) {
		base_free(ph);
		return false;
	}
	out->is_elf = true;
	uint64_t min_vaddr = UINT64_MAX;
	for (unsigned i = 0; i < phnum; i++) {
		const uint8_t *q = ph + (size_t)i * PHDR64_SIZE;
		if (base_rd_le(q + offsetof(Elf64_Phdr, p_type), 4) != PT_LOAD)
			continue;
		uint64_t vaddr = base_rd_le(q + offsetof(Elf64_Phdr, p_vaddr), 8);
		if (vaddr < min_vaddr)
			min_vaddr = vaddr;
		if (out->nloads < MAX_MODULE_LOADS) {
			out->loads[out->nloads].off = base_rd_le(q + offsetof(Elf64_Phdr, p_offset), 8);
			out->loads[out->nloads].filesz = base_rd_le(q + offsetof(Elf64_Phdr, p_filesz), 8);
			out->loads[out->nloads].flags = (uint32_t)base_rd_le(q + offsetof(Elf64_Phdr, p_flags), 4);
			out->nloads++;
		}
	}
	if (min_vaddr != UINT64_MAX)
		min_vaddr &= ~(page - 1);
	for (unsigned i = 0; i < phnum && out->build_id_len == 0; i++) {
		const uint8_t *q = ph + (size_t)i * PHDR64_SIZE;
		if (base_rd_le(q + offsetof(Elf64_Phdr, p_type), 4) != PT_NOTE)
			continue;
		uint64_t pos = base_rd_le(q + offsetof(Elf64_Phdr, p_offset), 8);
		if (in_memory) {
			uint64_t vaddr = base_rd_le(q + offsetof(Elf64_Phdr, p_vaddr), 8);
			if (min_vaddr == UINT64_MAX || vaddr < min_vaddr)
				continue;
			pos = vaddr - min_vaddr;
		}
		size_t len = (size_t)min_u64(base_rd_le(q + offsetof(Elf64_Phdr, p_filesz), 8), MAX_NOTE_SCAN);
		size_t align = base_rd_le(q + offsetof(Elf64_Phdr, p_align), 8) == 8 ? 8 : 4;
		uint8_t *area = len ? base_alloc(len) : NULL;
		if (area && r->read(r, pos, area, len) == 0)
			scan_build_id(area, len, align, out);
		base_free(area);
	}
	base_free(ph);
	return true;
}

/* Flags of the image's PT_LOAD that maps file offset OFF: the one whose
 * first page is at OFF, else one whose file bytes cover OFF. */
static bool load_flags_at(const struct image_look *l, uint64_t off, uint64_t page, uint32_t *flags)
{
	for (int exact = 1; exact >= 0; exact--) {
		for (size_t i = 0; i < l->nloads; i++) {
			uint64_t lo = l->loads[i].off & ~(page - 1);
			uint64_t end = l->loads[i].off + l->loads[i].filesz;
			if (end < lo)
				end = UINT64_MAX;
			if (l->loads[i].filesz && (exact ? off == lo : off >= lo && off < end)) {
				*flags = l->loads[i].flags;
				return true;
			}
		}
	}
	return false;
}

/* ---- Parsing the core ------------------------------------------------------ */

struct core_info {
	const uint8_t *file_note; /* NT_FILE desc */
	size_t file_note_len;
	uint64_t entry, vdso;     /* AT_ENTRY, AT_SYSINFO_EHDR (0: unknown) */
	uint64_t execfn;          /* AT_EXECFN: the program's name, in its memory */
	char fname[PRPSINFO_FNAME_LEN];
	const uint8_t **note_areas;
	size_t *note_lens, *note_aligns;
	size_t nnote_areas;
};

/* The ELF header and program header table: *PHOFF and *PHNUM. */
static int check_header(const uint8_t *img, size_t len, uint64_t *phoff, uint64_t *phnum,
			uint16_t *machine)
{
	if (len < SELFMAG || memcmp(img, ELFMAG, SELFMAG) != 0)
		return BK_E_NOT_ELF;
	if (len < EI_NIDENT)
		return BK_CORRUPT;
	if (img[EI_CLASS] != ELFCLASS64 || img[EI_DATA] != ELFDATA2LSB)
		return BK_E_UNSUPPORTED;
	if (len < EHDR64_SIZE)
		return BK_CORRUPT;
	*machine = (uint16_t)base_rd_le(img + offsetof(Elf64_Ehdr, e_machine), 2);
	if (base_rd_le(img + offsetof(Elf64_Ehdr, e_type), 2) != ET_CORE ||
	    (*machine != EM_X86_64 && *machine != EM_AARCH64))
		return BK_E_UNSUPPORTED;
	*phoff = base_rd_le(img + offsetof(Elf64_Ehdr, e_phoff), 8);
	*phnum = base_rd_le(img + offsetof(Elf64_Ehdr, e_phnum), 2);
	if (*phnum == PN_XNUM) {
		/* More than 0xfffe segments: the count is sh_info of section 0. */
		uint64_t shoff = base_rd_le(img + offsetof(Elf64_Ehdr, e_shoff), 8);
		if (shoff == 0 || shoff > len || len - shoff < sizeof(Elf64_Shdr))
			return BK_CORRUPT;
		*phnum = base_rd_le(img + shoff + offsetof(Elf64_Shdr, sh_info), 4);
	}
	if (base_rd_le(img + offsetof(Elf64_Ehdr, e_phentsize), 2) != PHDR64_SIZE || *phnum == 0)
		return BK_CORRUPT;
	if (*phoff > len || *phnum > (len - *phoff) / PHDR64_SIZE)
		return BK_CORRUPT; /* the table is cut */
	return 0;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/* PT_LOAD into p->segs (sorted), PT_NOTE areas into INFO. */
static int read_phdrs(struct core_priv *p, uint64_t phoff, uint64_t phnum, struct core_info *info)
{
	size_t nload = 0, nnote = 0;
	for (uint64_t i = 0; i < phnum; i++) {
		uint32_t type = (uint32_t)base_rd_le(p->img + phoff + i * PHDR64_SIZE, 4);
		nload += type == PT_LOAD;
		nnote += type == PT_NOTE;
	}
	p->segs = nload ? base_calloc(nload, sizeof(*p->segs)) : NULL;
	info->note_areas = nnote ? base_calloc(nnote, sizeof(*info->note_areas)) : NULL;
	info->note_lens = nnote ? base_calloc(nnote, sizeof(size_t)) : NULL;
	info->note_aligns = nnote ? base_calloc(nnote, sizeof(size_t)) : NULL;
	if ((nload && !p->segs) || (nnote && (!info->note_areas || !info->note_lens || !info->note_aligns)))
		return BK_E_NOMEM;
	for (uint64_t i = 0; i < phnum; i++) {
		const uint8_t *q = p->img + phoff + i * PHDR64_SIZE;
		uint32_t type = (uint32_t)base_rd_le(q + offsetof(Elf64_Phdr, p_type), 4);
		uint64_t off = base_rd_le(q + offsetof(Elf64_Phdr, p_offset), 8);
		uint64_t vaddr = base_rd_le(q + offsetof(Elf64_Phdr, p_vaddr), 8);
		uint64_t filesz = base_rd_le(q + offsetof(Elf64_Phdr, p_filesz), 8);
		uint64_t memsz = base_rd_le(q + offsetof(Elf64_Phdr, p_memsz), 8);
		if (type == PT_NOTE) {
			if (filesz > p->len || off > p->len - filesz)
				return BK_CORRUPT; /* the notes are cut */
			size_t k = info->nnote_areas++;
			info->note_areas[k] = p->img + off;
			info->note_lens[k] = (size_t)filesz;
			info->note_aligns[k] = base_rd_le(q + offsetof(Elf64_Phdr, p_align), 8) == 8 ? 8 : 4;
		} else if (type == PT_LOAD) {
			if (memsz == 0)
				continue;
			if (vaddr + memsz < vaddr || off + filesz < off)
				return BK_CORRUPT;
			struct seg *s = &p->segs[p->nsegs++];
			s->vaddr = vaddr;
			s->end = vaddr + memsz;
			s->file_off = off;
			s->dumped = min_u64(filesz, memsz);
			s->avail = off >= p->len ? 0 : min_u64(s->dumped, p->len - off);
			s->flags = (uint32_t)base_rd_le(q + offsetof(Elf64_Phdr, p_flags), 4);
		}
	}
	if (p->nsegs > 1)
		qsort(p->segs, p->nsegs, sizeof(*p->segs), cmp_seg);
	return 0;
}

static int add_thread(struct tgt *t, uint16_t machine, size_t *cap, const struct note *n)
{
	if (t->nthreads == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		if (ncap > MAX_THREADS)
			return BK_E_LIMIT;
		void *a = base_realloc(t->threads, ncap * sizeof(*t->threads));
		if (!a)
			return BK_E_NOMEM;
		t->threads = a;
		*cap = ncap;
	}
	struct tgt_thread *th = &t->threads[t->nthreads++];
	memset(th, 0, sizeof(*th));
	if (n->descsz >= PRSTATUS_PID_OFF + 4)
		th->tid = (int)base_rd_le(n->desc + PRSTATUS_PID_OFF, 4);
	/* pr_reg follows the same 112 bytes on both: x86-64's
	 * user_regs_struct, AArch64's user_pt_regs. */
	unsigned nwords = machine == EM_AARCH64 ? TGT_AARCH64_USER_REGS : TGT_X86_64_USER_REGS;
	if (n->descsz < PRSTATUS_REG_OFF + 8 * nwords) {
		th->err = BK_CORRUPT; /* the note is too short for pr_reg */
		return 0;
	}
	uint64_t words[TGT_AARCH64_USER_REGS > TGT_X86_64_USER_REGS ? TGT_AARCH64_USER_REGS
								     : TGT_X86_64_USER_REGS];
	for (unsigned i = 0; i < nwords; i++)
		words[i] = base_rd_le(n->desc + PRSTATUS_REG_OFF + 8 * i, 8);
	if (machine == EM_AARCH64)
		tgt_regs_aarch64(words, &th->regs);
	else
		tgt_regs_x86_64(words, &th->regs);
	return 0;
}

/* A signal that ends a process (by default): what a crash's core says.
 * gcore's cores say the job-control stop the debugger made (SIGSTOP),
 * which ended nothing. */
static bool ending_signal(int signo)
{
	return signo > 0 && signo < 65 && signo != SIGSTOP && signo != SIGTSTP &&
	       signo != SIGTTIN && signo != SIGTTOU && signo != SIGCONT && signo != SIGCHLD &&
	       signo != SIGURG && signo != SIGWINCH;
}

/* NT_SIGINFO: the kernel's siginfo_t of the signal that dumped the core
 * (si_signo, si_errno, si_code, then for faults si_addr at offset 16). */
static void read_siginfo(struct tgt *t, const struct note *n)
{
	if (n->descsz < 24)
		return;
	int signo = (int)base_rd_le(n->desc, 4);
	if (!ending_signal(signo))
		return;
	t->signal.signo = signo;
	t->signal.err = (int32_t)base_rd_le(n->desc + 4, 4);
	t->signal.code = (int32_t)base_rd_le(n->desc + 8, 4);
	t->signal.has_code = 1;
	t->signal.has_addr = tgt_signal_has_addr(signo, t->signal.code);
	if (t->signal.has_addr)
		t->signal.addr = base_rd_le(n->desc + 16, 8);
}

static int read_notes(struct tgt *t, const struct core_priv *p, struct core_info *info)
{
	size_t cap = 0;
	int first_cursig = 0;
	for (size_t a = 0; a < info->nnote_areas; a++) {
		const uint8_t *area = info->note_areas[a];
		struct buf b = buf_make(area, info->note_lens[a]);
		struct note n;
		int rc;
		while ((rc = note_next(&b, area, info->note_aligns[a], &n)) == 0) {
			if (note_owner_is(&n, "LINUX") && n.type == NT_ARM_PAC_MASK_ &&
			    p->machine == EM_AARCH64 && n.descsz >= 16) {
				/* user_pac_mask {data_mask, insn_mask}: the bits a
				 * signed return address carries. */
				t->pac_mask = base_rd_le(n.desc + 8, 8);
				continue;
			}
			if (!note_owner_is(&n, "CORE"))
				continue; /* "LINUX" (XSAVE state), "GDB" (target description) */
			int err = 0;
			switch (n.type) {
			case NT_PRSTATUS:
				/* pr_cursig: after pr_info's three ints. */
				if (t->nthreads == 0 && n.descsz >= 14)
					first_cursig = (int)base_rd_le(n.desc + 12, 2);
				err = add_thread(t, p->machine, &cap, &n);
				break;
			case NT_FPREGSET:
				/* The thread whose NT_PRSTATUS came last: AArch64's
				 * d8..d15 (x86-64's x87/SSE state holds nothing
				 * callee-saved). */
				if (p->machine == EM_AARCH64 && t->nthreads &&
				    n.descsz >= TGT_AARCH64_FPSIMD_SIZE)
					tgt_fpsimd_aarch64(n.desc, &t->threads[t->nthreads - 1].regs);
				break;
			case NT_PRPSINFO:
				if (n.descsz >= PRPSINFO_FNAME_OFF + PRPSINFO_FNAME_LEN) {
					memcpy(info->fname, n.desc + PRPSINFO_FNAME_OFF, PRPSINFO_FNAME_LEN);
					info->fname[PRPSINFO_FNAME_LEN - 1] = 0;
				}
				break;
			case NT_AUXV:
				for (size_t i = 0; i + 16 <= n.descsz; i += 16) {
					uint64_t type = base_rd_le(n.desc + i, 8), val = base_rd_le(n.desc + i + 8, 8);
					if (type == AT_ENTRY)
						info->entry = val;
					else if (type == AT_EXECFN)
						info->execfn = val;
					else if (type == AT_SYSINFO_EHDR)
						info->vdso = val;
					else if (type == AT_NULL)
						break;
				}
				break;
			case NT_FILE:
				if (!info->file_note) {
					info->file_note = n.desc;
					info->file_note_len = n.descsz;
				}
				break;
			case NT_SIGINFO:
				read_siginfo(t, &n);
				break;
			default:
				break; /* NT_FPREGSET, ...: nothing the unwinder tracks */
			}
			if (err)
				return err;
		}
		if (rc < 0)
			return rc;
	}
	if (t->nthreads == 0)
		return BK_CORRUPT; /* no NT_PRSTATUS: nothing to walk */
	/* The kernel writes the thread that took the signal first; without
	 * NT_SIGINFO its pr_cursig still names the signal. */
	if (!t->signal.signo && ending_signal(first_cursig))
		t->signal.signo = first_cursig;
	if (t->signal.signo)
		t->signal.tid = t->threads[0].tid;
	for (size_t i = 0; i < t->nthreads; i++)
		memcpy(t->threads[i].name, info->fname, sizeof(t->threads[i].name));
	return 0;
}

/* A mapping being built, with whether its flags are known yet. */
struct map_build {
	struct tgt_mapping m;
	bool flags_known;
};

static void set_flags(struct tgt_mapping *m, uint32_t flags)
{
	m->r = flags & PF_R;
	m->w = flags & PF_W;
	m->x = flags & PF_X;
}

/* ---- Files the core names ------------------------------------------------------
 *
 * A path the core names (NT_FILE, the dynamic linker's list) is looked for
 * under the sysroot first (gdb's "set sysroot": the target's files on this
 * host), then as it is. */

static char *host_path(const struct core_priv *p, const char *path)
{
	if (p->sysroot && p->sysroot[0] && path[0] == '/') {
		size_t a = strlen(p->sysroot), b = strlen(path);
		char *c = base_alloc(a + b + 1);
		if (!c)
			return NULL;
		memcpy(c, p->sysroot, a);
		memcpy(c + a, path, b + 1);
		struct stat st;
		if (stat(c, &st) == 0 && S_ISREG(st.st_mode))
			return c;
		base_free(c);
	}
	return base_strdup(path);
}

/* ---- Modules from the dynamic linker's list (a core without NT_FILE) ----------
 *
 * qemu-user's cores (and old kernels') carry no NT_FILE and none of the
 * read-only pages, so nothing in them says which file is mapped where. As
 * gdb does: the program (named by the caller, else by AT_EXECFN) is
 * placed by AT_ENTRY against its e_entry; its PT_DYNAMIC, in the core's
 * writable pages, holds DT_DEBUG, the dynamic linker's r_debug, whose
 * r_map list gives every loaded object's load bias (l_addr) and name
 * (l_name). Each file's PT_LOADs, at its bias, become its mappings. All
 * reads are of bytes the core holds; the list is followed for at most
 * MAX_LINK_MAPS entries, a file only of the core's machine is used, and a
 * file whose segments would overlap another's is left out. */

#define MAX_LINK_MAPS 4096
#define MAX_DYN_ENTRIES 4096
#define MAX_CORE_STRING 4096

struct map_list {
	struct map_build *v;
	size_t n, cap;
};

/* The NUL-terminated string at ADDR in the core's memory, into BUF. */
static bool core_string(const struct core_priv *p, uint64_t addr, char *buf, size_t cap)
{
	for (size_t i = 0; i + 1 < cap; i++) {
		if (addr + i < addr || read_dumped(p, addr + i, &buf[i], 1) != 0)
			return false;
		if (!buf[i])
			return true;
	}
	return false;
}

static bool core_u64(const struct core_priv *p, uint64_t addr, uint64_t *v)
{
	uint8_t b[8];
	if (read_dumped(p, addr, b, 8) != 0)
		return false;
	*v = base_rd_le(b, 8);
	return true;
}

/* What placing one file needs from its headers. */
struct elf_facts {
	uint16_t type;
	uint64_t entry, dyn_vaddr;
	bool has_dyn;
};

/* FILE's PT_LOADs at BIAS into L (host path PATH, taken over), and FACTS.
 * false (PATH freed, L unchanged) when the file cannot be read, is not an
 * ELF file of the core's machine, or would overlap a file placed before. */
static bool place_file(const struct core_priv *p, char *path, bool have_bias, uint64_t bias,
		       const uint64_t *entry, struct map_list *l, struct elf_facts *facts, int *err)
{
	uint8_t eh[EHDR64_SIZE];
	uint8_t ph[MAX_MODULE_PHNUM * PHDR64_SIZE];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	bool ok = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
		  pread(fd, eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) &&
		  memcmp(eh, ELFMAG, SELFMAG) == 0 && eh[EI_CLASS] == ELFCLASS64 &&
		  eh[EI_DATA] == ELFDATA2LSB &&
		  base_rd_le(eh + offsetof(Elf64_Ehdr, e_machine), 2) == p->machine &&
		  base_rd_le(eh + offsetof(Elf64_Ehdr, e_phentsize), 2) == PHDR64_SIZE;
	uint64_t phoff = ok ? base_rd_le(eh + offsetof(Elf64_Ehdr, e_phoff), 8) : 0;
	uint64_t phnum = ok ? base_rd_le(eh + offsetof(Elf64_Ehdr, e_phnum), 2) : 0;
	ok = ok && phnum > 0 && phnum <= MAX_MODULE_PHNUM && phoff < (uint64_t)INT64_MAX &&
	     pread(fd, ph, phnum * PHDR64_SIZE, (off_t)phoff) == (ssize_t)(phnum * PHDR64_SIZE);
	if (fd >= 0)
		close(fd);
	if (!ok) {
		base_free(path);
		return false;
	}
	struct elf_facts f = {
		.type = (uint16_t)base_rd_le(eh + offsetof(Elf64_Ehdr, e_type), 2),
		.entry = base_rd_le(eh + offsetof(Elf64_Ehdr, e_entry), 8),
	};
	if (!have_bias) /* the program: where its entry point is */
		bias = f.type == ET_DYN && entry && *entry ? *entry - f.entry : 0;
	uint64_t page = p->page_size;
	size_t first = l->n;
	for (uint64_t i = 0; i < phnum && ok; i++) {
		const uint8_t *q = ph + i * PHDR64_SIZE;
		uint32_t type = (uint32_t)base_rd_le(q + offsetof(Elf64_Phdr, p_type), 4);
		uint64_t off = base_rd_le(q + offsetof(Elf64_Phdr, p_offset), 8);
		uint64_t vaddr = base_rd_le(q + offsetof(Elf64_Phdr, p_vaddr), 8);
		uint64_t filesz = base_rd_le(q + offsetof(Elf64_Phdr, p_filesz), 8);
		if (type == PT_DYNAMIC) {
			f.dyn_vaddr = vaddr + bias;
			f.has_dyn = true;
		}
		if (type != PT_LOAD || filesz == 0)
			continue;
		/* The file-backed part, page by page, as the loader maps it. */
		uint64_t start = vaddr + bias, end = start + filesz;
		if (end < start || end > UINT64_MAX - page || (off & (page - 1)) != (vaddr & (page - 1))) {
			ok = false;
			break;
		}
		start &= ~(page - 1);
		end = (end + page - 1) & ~(page - 1);
		for (size_t k = 0; k < first; k++)
			if (l->v[k].m.start < end && start < l->v[k].m.end)
				ok = false; /* another file's place: a hostile list */
		if (!ok)
			break;
		if (l->n == l->cap) {
			size_t cap = l->cap ? l->cap * 2 : 32;
			void *v = base_realloc(l->v, cap * sizeof(*l->v));
			if (!v) {
				*err = BK_E_NOMEM;
				ok = false;
				break;
			}
			l->v = v;
			l->cap = cap;
		}
		struct map_build *e = &l->v[l->n++];
		memset(e, 0, sizeof(*e));
		e->m.start = start;
		e->m.end = end;
		e->m.offset = off & ~(page - 1);
		set_flags(&e->m, (uint32_t)base_rd_le(q + offsetof(Elf64_Phdr, p_flags), 4));
		e->flags_known = true;
		if (!(e->m.path = base_strdup(path))) {
			*err = BK_E_NOMEM;
			ok = false;
		}
	}
	if (!ok || l->n == first) {
		while (l->n > first)
			base_free((void *)l->v[--l->n].m.path);
		base_free(path);
		return false;
	}
	base_free(path);
	*facts = f;
	return true;
}

/* Every loaded object the core's dynamic linker lists, placed into L. */
static int link_map_files(const struct core_priv *p, const struct core_info *info,
			  const char *exe_path, struct map_list *l)
{
	char name[MAX_CORE_STRING];
	char *exe = NULL;
	if (exe_path)
		exe = base_strdup(exe_path);
	else if (info->execfn && core_string(p, info->execfn, name, sizeof(name)))
		exe = host_path(p, name);
	else
		return 0;
	if (!exe)
		return BK_E_NOMEM;
	int err = 0;
	struct elf_facts prog;
	if (!place_file(p, exe, false, 0, &info->entry, l, &prog, &err) || !prog.has_dyn)
		return err;
	/* DT_DEBUG in the program's dynamic section: the r_debug address. */
	uint64_t r_debug = 0;
	for (unsigned i = 0; i < MAX_DYN_ENTRIES; i++) {
		uint64_t tag, val;
		if (!core_u64(p, prog.dyn_vaddr + 16 * i, &tag) ||
		    !core_u64(p, prog.dyn_vaddr + 16 * i + 8, &val) || tag == DT_NULL)
			break;
		if (tag == DT_DEBUG)
			r_debug = val;
	}
	uint64_t lm = 0;
	if (!r_debug || !core_u64(p, r_debug + 8, &lm)) /* r_map, after int r_version */
		return 0;
	/* struct link_map: l_addr, l_name, l_ld, l_next, l_prev. */
	for (unsigned k = 0; lm && k < MAX_LINK_MAPS && !err; k++) {
		uint64_t l_addr, l_name, next;
		if (!core_u64(p, lm, &l_addr) || !core_u64(p, lm + 8, &l_name) ||
		    !core_u64(p, lm + 24, &next))
			break;
		lm = next;
		if (!l_name || !core_string(p, l_name, name, sizeof(name)) || name[0] != '/')
			continue; /* the program itself (""), the vDSO (no file) */
		char *path = host_path(p, name);
		if (!path)
			return BK_E_NOMEM;
		struct elf_facts f;
		place_file(p, path, true, l_addr, NULL, l, &f, &err);
	}
	return err;
}

static int cmp_map_build(const void *a, const void *b)
{
	const struct map_build *x = a, *y = b;
	return x->m.start < y->m.start ? -1 : x->m.start > y->m.start;
}

/* Does [LO, HI) overlap one of MB[0..N), sorted by start? (The last one
 * starting below HI; file mappings of a sane core do not overlap.) */
static bool overlaps(const struct map_build *mb, size_t n, uint64_t lo, uint64_t hi)
{
	size_t l = 0, h = n;
	while (l < h) {
		size_t mid = l + (h - l) / 2;
		if (mb[mid].m.start < hi)
			l = mid + 1;
		else
			h = mid;
	}
	return l > 0 && mb[l - 1].m.end > lo;
}


/* t->maps from NT_FILE (count, page size, count * {start, end, file_ofs},
 * then count NUL-terminated names) and the PT_LOADs it does not name,
 * sorted by start. *KNOWN_OUT: per mapping, are its flags known. */
static int build_maps(struct tgt *t, struct core_priv *p, const struct core_info *info,
		      struct map_list *placed, bool **known_out)
{
	uint64_t count = 0, page = 4096;
	struct buf b = { NULL, NULL };
	const uint8_t *ents = NULL;
	if (info->file_note) {
		b = buf_make(info->file_note, info->file_note_len);
		if (buf_u64(&b, &count) || buf_u64(&b, &page))
			return BK_CORRUPT;
		if (page == 0 || (page & (page - 1)) || count > buf_left(&b) / 24)
			return BK_CORRUPT;
		ents = b.p;
		buf_skip(&b, count * 24);
	}
	p->page_size = page;
	size_t cap = (size_t)count + p->nsegs + placed->n;
	if (cap == 0)
		return 0;
	struct map_build *mb = base_calloc(cap, sizeof(*mb));
	if (!mb)
		return BK_E_NOMEM;
	size_t n = 0;
	int err = 0;
	for (uint64_t i = 0; i < count && !err; i++) {
		const uint8_t *nul = memchr(b.p, 0, buf_left(&b));
		if (!nul) {
			err = BK_CORRUPT; /* a name runs past the note */
			break;
		}
		const char *name = (const char *)b.p;
		buf_skip(&b, (size_t)(nul - b.p) + 1);
		uint64_t start = base_rd_le(ents + 24 * i, 8), end = base_rd_le(ents + 24 * i + 8, 8);
		uint64_t pgofs = base_rd_le(ents + 24 * i + 16, 8);
		if (start >= end || pgofs > UINT64_MAX / page) {
			err = BK_CORRUPT;
			break;
		}
		struct map_build *e = &mb[n];
		e->m.start = start;
		e->m.end = end;
		e->m.offset = pgofs * page;
		e->m.path = host_path(p, name);
		if (!e->m.path) {
			err = BK_E_NOMEM;
			break;
		}
		n++;
		uint64_t next;
		const struct seg *s = seg_at(p, start, &next);
		if (s) {
			set_flags(&e->m, s->flags);
			e->flags_known = true;
		}
	}
	/* Files placed from the dynamic linker's list (no NT_FILE). */
	for (size_t i = 0; i < placed->n; i++) {
		if (err) {
			base_free((void *)placed->v[i].m.path);
			continue;
		}
		mb[n++] = placed->v[i];
	}
	placed->n = 0;
	if (!err) {
		qsort(mb, n, sizeof(*mb), cmp_map_build);
		size_t nfile = n;
		for (size_t i = 0; i < p->nsegs && !err; i++) {
			const struct seg *s = &p->segs[i];
			if (overlaps(mb, nfile, s->vaddr, s->end))
				continue;
			struct map_build *e = &mb[n];
			e->m.start = s->vaddr;
			e->m.end = s->end;
			set_flags(&e->m, s->flags);
			e->flags_known = true;
			e->m.path = base_strdup(info->vdso && s->vaddr == info->vdso ? "[vdso]" : "");
			if (!e->m.path)
				err = BK_E_NOMEM;
			else
				n++;
		}
		qsort(mb, n, sizeof(*mb), cmp_map_build);
	}
	t->maps = base_calloc(n ? n : 1, sizeof(*t->maps));
	bool *known = base_calloc(n ? n : 1, sizeof(*known));
	if (!t->maps || !known)
		err = err ? err : BK_E_NOMEM;
	for (size_t i = 0; i < n; i++) {
		if (err) {
			base_free((void *)mb[i].m.path);
			continue;
		}
		t->maps[i] = mb[i].m;
		known[i] = mb[i].flags_known;
	}
	if (!err)
		t->nmaps = n;
	base_free(mb);
	*known_out = known;
	return err;
}

/* ---- Files of the mappings --------------------------------------------------- */

static bool is_file_map(const struct tgt_mapping *m)
{
	return m->path[0] && m->path[0] != '[';
}

/* The main executable: the file mapped at AT_ENTRY, else the first one. */
static const char *main_path(const struct tgt *t, uint64_t entry)
{
	if (entry) {
		long i = map_at(t, entry);
		if (i >= 0 && is_file_map(&t->maps[i]))
			return t->maps[i].path;
	}
	for (size_t i = 0; i < t->nmaps; i++)
		if (is_file_map(&t->maps[i]))
			return t->maps[i].path;
	return NULL;
}

static int replace_exe(struct tgt *t, uint64_t entry, const char *exe_path)
{
	const char *cur = main_path(t, entry);
	if (!cur)
		return 0; /* no NT_FILE: nothing names the executable */
	char *old = base_strdup(cur);
	if (!old)
		return BK_E_NOMEM;
	int err = 0;
	for (size_t i = 0; i < t->nmaps && !err; i++) {
		if (strcmp(t->maps[i].path, old) != 0)
			continue;
		char *d = base_strdup(exe_path);
		if (!d) {
			err = BK_E_NOMEM;
			break;
		}
		base_free((void *)t->maps[i].path);
		t->maps[i].path = d;
	}
	base_free(old);
	return err;
}

static int cmp_by_path(const void *a, const void *b, void *ctx)
{
	const struct tgt *t = ctx;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(t->maps[x].path, t->maps[y].path);
	return c ? c : (x > y) - (x < y);
}

/* One file, mapped by maps IDX[0..N) (ascending start): open it, compare
 * build-ids, settle unknown flags, record the verdict. */
static int check_file(struct tgt *t, struct core_priv *p, const size_t *idx, size_t n,
		      const bool *known)
{
	const char *path = t->maps[idx[0]].path;
	const struct tgt_mapping *hdr = NULL; /* the mapping of file offset 0 */
	for (size_t k = 0; k < n && !hdr; k++)
		if (t->maps[idx[k]].offset == 0)
			hdr = &t->maps[idx[k]];

	struct image_look in_core = { 0 }, in_file = { 0 };
	if (hdr) {
		struct image_reader r = { read_image_in_core, p, hdr->start, -1 };
		look_image(&r, true, p->page_size, &in_core);
	}
	int fd = -1;
	if (p->nfds < MAX_OPEN_FILES) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO: no waiting */
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
	}
	/* Gone from disk: the file by the build-id the core kept, from the
	 * caller's fetcher (debuginfod), in its place. */
	char *fetched = NULL;
	if (fd < 0 && in_core.build_id_len && p->fetch && p->nfds < MAX_OPEN_FILES &&
	    p->fetch(in_core.build_id, in_core.build_id_len, &fetched) == 0) {
		fd = open(fetched, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
			close(fd);
			fd = -1;
		}
		if (fd >= 0) { /* the mappings name the file fetched */
			for (size_t k = 0; k < n; k++) {
				char *d = base_strdup(fetched);
				if (!d) {
					close(fd);
					base_free(fetched);
					return BK_E_NOMEM;
				}
				base_free((void *)t->maps[idx[k]].path);
				t->maps[idx[k]].path = d;
			}
		}
		base_free(fetched);
	}
	if (fd >= 0) {
		struct image_reader r = { read_image_in_file, NULL, 0, fd };
		look_image(&r, false, p->page_size, &in_file);
	}
	uint8_t verdict = TGT_FILE_UNCHECKED;
	if (in_core.build_id_len && fd >= 0)
		verdict = in_file.build_id_len == in_core.build_id_len &&
				  memcmp(in_file.build_id, in_core.build_id, in_core.build_id_len) == 0
			  ? TGT_FILE_MATCHES
			  : TGT_FILE_DIFFERS;
	if (verdict == TGT_FILE_DIFFERS) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0)
		p->fds[p->nfds++] = fd;

	for (size_t k = 0; k < n; k++) {
		struct tgt_mapping *m = &t->maps[idx[k]];
		p->map_fd[idx[k]] = fd;
		t->map_check[idx[k]] = verdict;
		if (known[idx[k]])
			continue;
		uint32_t flags;
		if (in_core.is_elf && load_flags_at(&in_core, m->offset, p->page_size, &flags))
			set_flags(m, flags);
		else if (fd >= 0 && in_file.is_elf && load_flags_at(&in_file, m->offset, p->page_size, &flags))
			set_flags(m, flags);
		else if (fd >= 0 && !in_file.is_elf && !in_core.is_elf)
			set_flags(m, PF_R); /* a data file (locale archive, font) */
		else
			set_flags(m, PF_R | PF_X); /* unknown: keep it as a module, by name */
	}
	return 0;
}

static int check_files(struct tgt *t, struct core_priv *p, const bool *known)
{
	size_t n = t->nmaps;
	p->map_fd = base_alloc((n ? n : 1) * sizeof(int));
	t->map_check = base_calloc(n ? n : 1, 1);
	p->fds = base_alloc(MAX_OPEN_FILES * sizeof(int));
	size_t *idx = base_alloc((n ? n : 1) * sizeof(size_t));
	if (!p->map_fd || !t->map_check || !p->fds || !idx) {
		base_free(idx);
		return BK_E_NOMEM;
	}
	size_t nidx = 0;
	for (size_t i = 0; i < n; i++) {
		p->map_fd[i] = -1;
		if (is_file_map(&t->maps[i]))
			idx[nidx++] = i;
	}
	/* Group by path; within a group the indexes stay ascending (by start). */
	qsort_r(idx, nidx, sizeof(*idx), cmp_by_path, t);
	int err = 0;
	for (size_t g = 0; g < nidx && !err;) {
		size_t e = g + 1;
		while (e < nidx && strcmp(t->maps[idx[e]].path, t->maps[idx[g]].path) == 0)
			e++;
		err = check_file(t, p, idx + g, e - g, known);
		g = e;
	}
	base_free(idx);
	return err;
}

/* ---- Open ---------------------------------------------------------------------- */

static int parse(struct tgt *t, struct core_priv *p, const char *exe_path)
{
	uint64_t phoff, phnum;
	int err = check_header(p->img, p->len, &phoff, &phnum, &p->machine);
	if (err)
		return err;
	t->arch = arch_from_elf_machine(p->machine);
	if (!t->arch)
		return BK_E_UNSUPPORTED;
	struct core_info info;
	memset(&info, 0, sizeof(info));
	bool *known = NULL;
	struct map_list placed = { 0 };
	err = read_phdrs(p, phoff, phnum, &info);
	if (!err)
		err = read_notes(t, p, &info);
	if (!err && !info.file_note)
		err = link_map_files(p, &info, exe_path, &placed);
	if (!err)
		err = build_maps(t, p, &info, &placed, &known);
	for (size_t i = 0; i < placed.n; i++)
		base_free((void *)placed.v[i].m.path);
	base_free(placed.v);
	if (!err && exe_path)
		err = replace_exe(t, info.entry, exe_path);
	if (!err)
		err = check_files(t, p, known);
	base_free(known);
	base_free(info.note_areas);
	base_free(info.note_lens);
	base_free(info.note_aligns);
	return err;
}

int tgt_core_open(const char *core_path, const char *exe_path, const char *sysroot,
		  tgt_fetch_fn *fetch, struct tgt **out)
{
	if (!out)
		return BK_E_INVAL;
	*out = NULL;
	if (!core_path)
		return BK_E_INVAL;
	const uint8_t *img;
	size_t len;
	int map_err = base_map_file(core_path, &img, &len);
	if (map_err)
		return map_err;
	struct tgt *t = base_calloc(1, sizeof(*t));
	struct core_priv *p = t ? base_calloc(1, sizeof(*p)) : NULL;
	if (!p) {
		base_free(t);
		base_unmap_file(img, len);
		return BK_E_NOMEM;
	}
	p->img = img;
	p->len = len;
	p->page_size = 4096;
	p->sysroot = sysroot;
	p->fetch = fetch;
	t->ops = &core_ops;
	t->arch = arch_get(BK_ARCH_X86_64);
	t->pid = 0;
	t->priv = p;
	int err = parse(t, p, exe_path);
	p->sysroot = NULL; /* the caller's: not kept */
	if (err) {
		tgt_close(t);
		return err;
	}
	*out = t;
	return 0;
}
