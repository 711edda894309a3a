/* The GDB JIT interface (bk_space_add_gdb_jit) and relocatable images
 * (bk_space_add_module_image on an ET_REL object), over a target whose
 * memory is a few buffers of this process: the descriptor is this
 * program's own __jit_debug_descriptor (found in its .dynsym, as in lli's
 * libLLVM), the entries and the symfile are buffers, every other address
 * is unreadable.
 *
 * The symfile is gdbjit_obj.o (argv[1]) with load addresses written into
 * its section headers, as LLVM's RuntimeDyld hands objects to GDB:
 *   - added: one module "[jit 0x...]" over its .text; its functions named
 *     with file:line; a walk from the instruction after `push %rbp` in
 *     gj_outer steps by CFI (the .eh_frame's relocations were applied at
 *     the load addresses) to the return address on the stack;
 *   - two entries: two modules;
 *   - lists that lie: a cycle, a prev link that does not match, an entry
 *     that cannot be read, a symfile size of 1 TiB, garbage bytes, a list
 *     longer than the bound, an unknown version: bounded, counted, no
 *     crash;
 *   - the object cut at every length: an error or a module, nothing worse;
 *   - a local space: BK_E_UNSUPPORTED.
 */
#include <elf.h>
#include <link.h>
#include <stdlib.h>

#include <backstep.h>

#include "check.h"

struct jit_code_entry {
	struct jit_code_entry *next, *prev;
	const char *symfile_addr;
	uint64_t symfile_size;
};

struct jit_descriptor {
	uint32_t version, action_flag;
	struct jit_code_entry *relevant_entry, *first_entry;
};

/* The symbol a debugger looks for (exported: tests link with -rdynamic). */
struct jit_descriptor __jit_debug_descriptor = { 1, 0, NULL, NULL };

#define TEXT_AT 0x10000000u
#define DATA_AT 0x20000000u

/* ---- The target: readable buffers ------------------------------------- */

#define MAX_REGIONS 8
static struct region {
	const void *p;
	size_t len;
} regions[MAX_REGIONS];
static unsigned nregions;

static void readable(const void *p, size_t len)
{
	if (nregions < MAX_REGIONS)
		regions[nregions++] = (struct region){ p, len };
}

static int read_mem(void *ctx, uint64_t addr, void *dst, size_t len)
{
	(void)ctx;
	for (unsigned i = 0; i < nregions; i++) {
		uint64_t lo = (uint64_t)(uintptr_t)regions[i].p;
		if (addr >= lo && addr - lo <= regions[i].len && len <= regions[i].len - (addr - lo)) {
			memcpy(dst, (const void *)(uintptr_t)addr, len);
			return 0;
		}
	}
	return BK_E_MEMORY;
}

/* ---- The program itself as a module (it holds the descriptor) -------- */

static uint64_t self_lo, self_hi, self_base;

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		lo = ph->p_vaddr < lo ? ph->p_vaddr : lo;
		hi = ph->p_vaddr + ph->p_memsz > hi ? ph->p_vaddr + ph->p_memsz : hi;
	}
	self_base = info->dlpi_addr + (lo & ~(uint64_t)0xfff);
	self_lo = info->dlpi_addr + lo;
	self_hi = info->dlpi_addr + hi;
	return 1; /* the first object is the program */
}

static struct bk_space *new_space(void)
{
	struct bk_target_ops ops = { .size = sizeof(ops), .read_mem = read_mem };
	struct bk_space *s = NULL;
	CHECK_INT(bk_space_create(BK_ARCH_X86_64, &ops, NULL, &s), 0, "bk_space_create");
	struct bk_module_desc m = { .size = sizeof(m), .path = "/proc/self/exe", .base = self_base,
				    .start = self_lo, .end = self_hi };
	CHECK_INT(bk_space_add_module(s, &m), 0, "the program as a module");
	return s;
}

/* ---- The symfile ----------------------------------------------------- */

static uint8_t *obj;
static size_t obj_len;
static uint64_t outer_at; /* gj_outer's load address */

static void load_object(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: cannot open\n", path);
		exit(1);
	}
	obj = malloc(1 << 20);
	obj_len = fread(obj, 1, 1 << 20, f);
	fclose(f);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)obj;
	if (obj_len < sizeof(*eh) || eh->e_type != ET_REL || eh->e_shoff + (uint64_t)eh->e_shnum *
	    sizeof(Elf64_Shdr) > obj_len) {
		fprintf(stderr, "%s: not an ELF64 .o\n", path);
		exit(1);
	}
	Elf64_Shdr *sh = (Elf64_Shdr *)(obj + eh->e_shoff);
	const char *names = (const char *)obj + sh[eh->e_shstrndx].sh_offset;
	/* Load addresses, as RuntimeDyld writes them: code in one place,
	 * the other allocated sections in another. */
	uint64_t data = DATA_AT;
	unsigned text = 0;
	for (unsigned i = 1; i < eh->e_shnum; i++) {
		if (!(sh[i].sh_flags & SHF_ALLOC) || !sh[i].sh_size)
			continue;
		if (strcmp(names + sh[i].sh_name, ".text") == 0) {
			sh[i].sh_addr = TEXT_AT;
			text = i;
			continue;
		}
		uint64_t al = sh[i].sh_addralign ? sh[i].sh_addralign : 1;
		data = (data + al - 1) / al * al;
		sh[i].sh_addr = data;
		data += sh[i].sh_size;
	}
	for (unsigned i = 1; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		Elf64_Sym *sym = (Elf64_Sym *)(obj + sh[i].sh_offset);
		const char *str = (const char *)obj + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (sym[k].st_shndx == text && strcmp(str + sym[k].st_name, "gj_outer") == 0)
				outer_at = TEXT_AT + sym[k].st_value;
	}
	CHECK(text && outer_at, "gdbjit_obj.o has .text and gj_outer");
	/* -fno-omit-frame-pointer: push %rbp first */
	CHECK(text && obj[sh[text].sh_offset + (outer_at - TEXT_AT)] == 0x55,
	      "gj_outer starts with push %%rbp");
}

/* ---- Cases -------------------------------------------------------------- */

static void added_and_walked(void)
{
	struct jit_code_entry e = { NULL, NULL, (const char *)obj, obj_len };
	__jit_debug_descriptor.first_entry = &e;
	nregions = 0;
	readable(&__jit_debug_descriptor, sizeof(__jit_debug_descriptor));
	readable(&e, sizeof(e));
	readable(obj, obj_len);
	uint64_t stack[8] = { 0x1111, 0x2222, 0x3333 };
	readable(stack, sizeof(stack));
	struct bk_space *s = new_space();
	struct bk_gdb_jit_stats st = { .size = sizeof(st) };
	CHECK_INT(bk_space_add_gdb_jit(s, &st), 0, "add_gdb_jit");
	CHECK_INT(st.descriptors, 1, "descriptors");
	CHECK_INT(st.entries, 1, "entries");
	CHECK_INT(st.added, 1, "added");
	CHECK_INT(st.failed, 0, "failed");
	CHECK_INT(st.truncated, 0, "truncated");

	struct bk_module_info mi;
	CHECK_INT(bk_space_module_at(s, outer_at, &mi), 0, "a module at gj_outer");
	char want[40];
	snprintf(want, sizeof(want), "[jit 0x%x]", TEXT_AT);
	CHECK_STR(mi.path, want, "its name");
	CHECK_U64(mi.start, TEXT_AT, "it starts at .text");
	CHECK(mi.has_cfi, "it has CFI");
	CHECK_INT(bk_space_module_at(s, DATA_AT, &mi), BK_E_NOT_FOUND, "data is not code");

	struct bk_symbol sym[4];
	int n = bk_space_symbolize(s, outer_at + 1, sym, 4);
	CHECK(n >= 1 && sym[n - 1].function && strcmp(sym[n - 1].function, "gj_outer") == 0,
	      "gj_outer named (%d: %s)", n, n >= 1 && sym[n - 1].function ? sym[n - 1].function : "-");
	CHECK(n >= 1 && sym[0].file && strstr(sym[0].file, "gdbjit_obj.c") && sym[0].line >= 8 &&
	      sym[0].line <= 11, "file:line of gj_outer (%s:%u)", n >= 1 && sym[0].file ?
	      sym[0].file : "-", n >= 1 ? sym[0].line : 0);

	/* After push %rbp: CFA = rsp + 16, the return address at rsp + 8. */
	struct bk_regs regs = { 0 };
	bk_regs_set(&regs, 16, outer_at + 1);
	bk_regs_set(&regs, 7, (uint64_t)(uintptr_t)stack);
	bk_regs_set(&regs, 6, 0x7777);
	struct bk_cursor c;
	CHECK_INT(bk_cursor_init(&c, s, &regs), 0, "cursor");
	CHECK_INT(bk_cursor_step(&c), 1, "step out of gj_outer");
	CHECK_INT(bk_cursor_how(&c), BK_HOW_CFI, "by its .eh_frame");
	CHECK_U64(bk_cursor_pc(&c), 0x2222, "to the return address");
	CHECK_U64(bk_cursor_sp(&c), (uint64_t)(uintptr_t)&stack[2], "with the caller's SP");
	uint64_t rbp = 0;
	CHECK(bk_cursor_reg(&c, 6, &rbp) && rbp == 0x1111, "rbp restored from the push (%#lx)",
	      (unsigned long)rbp);

	/* Called again: the same object replaces its module. */
	CHECK_INT(bk_space_add_gdb_jit(s, &st), 0, "again");
	CHECK_INT(st.added, 1, "added again");
	CHECK_INT(bk_space_module_at(s, outer_at, &mi), 0, "still one module there");
	bk_space_destroy(s);
}

/* A copy of the object with every loaded address moved by DELTA. */
static uint8_t *moved(int64_t delta)
{
	uint8_t *o = malloc(obj_len);
	memcpy(o, obj, obj_len);
	Elf64_Ehdr *eh = (Elf64_Ehdr *)o;
	Elf64_Shdr *sh = (Elf64_Shdr *)(o + eh->e_shoff);
	for (unsigned i = 1; i < eh->e_shnum; i++)
		if (sh[i].sh_addr)
			sh[i].sh_addr += (uint64_t)delta;
	return o;
}

static void two_entries(void)
{
	uint8_t *other = moved(0x100000);
	struct jit_code_entry e[2] = { { &e[1], NULL, (const char *)obj, obj_len },
				       { NULL, &e[0], (const char *)other, obj_len } };
	__jit_debug_descriptor.first_entry = &e[0];
	nregions = 0;
	readable(&__jit_debug_descriptor, sizeof(__jit_debug_descriptor));
	readable(e, sizeof(e));
	readable(obj, obj_len);
	readable(other, obj_len);
	struct bk_space *s = new_space();
	struct bk_gdb_jit_stats st = { .size = sizeof(st) };
	CHECK_INT(bk_space_add_gdb_jit(s, &st), 0, "two: add");
	CHECK_INT(st.added, 2, "two: added");
	struct bk_module_info a, b;
	CHECK_INT(bk_space_module_at(s, outer_at, &a), 0, "two: the first");
	CHECK_INT(bk_space_module_at(s, outer_at + 0x100000, &b), 0, "two: the second");
	CHECK(strcmp(a.path, b.path) != 0, "two: named apart (%s, %s)", a.path, b.path);
	struct bk_symbol sym[4];
	int n = bk_space_symbolize(s, outer_at + 0x100000 + 1, sym, 4);
	CHECK(n >= 1 && sym[n - 1].function && strcmp(sym[n - 1].function, "gj_outer") == 0,
	      "two: the second's symbols at its own addresses");
	bk_space_destroy(s);
	free(other);
}

/* A descriptor whose list is E (NE entries readable), with the symfile. */
static struct bk_gdb_jit_stats run_list(struct jit_code_entry *e, size_t ne, uint32_t version)
{
	__jit_debug_descriptor.version = version;
	__jit_debug_descriptor.first_entry = e;
	nregions = 0;
	readable(&__jit_debug_descriptor, sizeof(__jit_debug_descriptor));
	readable(e, ne * sizeof(*e));
	readable(obj, obj_len);
	struct bk_space *s = new_space();
	struct bk_gdb_jit_stats st = { .size = sizeof(st) };
	CHECK_INT(bk_space_add_gdb_jit(s, &st), 0, "add_gdb_jit on a bad list");
	bk_space_destroy(s);
	__jit_debug_descriptor.version = 1;
	return st;
}

static void lists_that_lie(void)
{
	struct jit_code_entry e[3];
	/* A cycle: the second visit of e[0] has prev NULL, not e[0]. */
	e[0] = (struct jit_code_entry){ &e[0], NULL, (const char *)obj, obj_len };
	struct bk_gdb_jit_stats st = run_list(e, 1, 1);
	CHECK(st.entries == 1 && st.added == 1 && st.truncated, "cycle: %u entries, truncated %d",
	      st.entries, st.truncated);
	/* A prev that does not match. */
	e[0] = (struct jit_code_entry){ &e[1], NULL, (const char *)obj, obj_len };
	e[1] = (struct jit_code_entry){ NULL, &e[2], (const char *)obj, obj_len };
	st = run_list(e, 2, 1);
	CHECK(st.entries == 1 && st.truncated, "bad prev: %u entries", st.entries);
	/* An entry that cannot be read. */
	e[0] = (struct jit_code_entry){ (struct jit_code_entry *)(uintptr_t)0x42, NULL,
					(const char *)obj, obj_len };
	st = run_list(e, 1, 1);
	CHECK(st.entries == 1 && st.failed == 1 && st.first_error == BK_E_MEMORY,
	      "unreadable entry: failed %u, error %d", st.failed, st.first_error);
	/* A symfile of 1 TiB; one that is not there; garbage; empty. */
	uint8_t junk[256];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37);
	e[0] = (struct jit_code_entry){ &e[1], NULL, (const char *)obj, (uint64_t)1 << 40 };
	e[1] = (struct jit_code_entry){ &e[2], &e[0], (const char *)(uintptr_t)0x1000, 4096 };
	e[2] = (struct jit_code_entry){ NULL, &e[1], (const char *)obj + 64, 256 };
	st = run_list(e, 3, 1);
	CHECK(st.entries == 3 && st.failed == 3 && st.added == 0 && st.first_error == BK_E_LIMIT,
	      "huge, missing, garbage: %u entries, %u failed, error %d", st.entries, st.failed,
	      st.first_error);
	e[0] = (struct jit_code_entry){ NULL, NULL, (const char *)obj, 0 };
	st = run_list(e, 1, 1);
	CHECK(st.failed == 1 && st.added == 0, "empty symfile");
	/* Longer than the bound: 100001 entries of nothing. */
	size_t big = 100001;
	struct jit_code_entry *l = calloc(big, sizeof(*l));
	for (size_t i = 0; i < big; i++)
		l[i] = (struct jit_code_entry){ i + 1 < big ? &l[i + 1] : NULL, i ? &l[i - 1] : NULL,
						NULL, 0 };
	st = run_list(l, big, 1);
	CHECK(st.entries == 100000 && st.truncated, "bound: %u entries, truncated %d", st.entries,
	      st.truncated);
	free(l);
	/* A version this reader does not know: not read. */
	e[0] = (struct jit_code_entry){ NULL, NULL, (const char *)obj, obj_len };
	st = run_list(e, 1, 2);
	CHECK(st.descriptors == 0 && st.entries == 0, "version 2 not read");
}

static void cut_objects(void)
{
	/* Every prefix of the object (and the whole with bytes flipped in its
	 * headers) as a module image: an error or a module, nothing worse
	 * (ASan and UBSan builds run this too). */
	nregions = 0;
	struct bk_space *s = new_space();
	unsigned ok = 0, errors = 0;
	for (size_t n = 0;; n += n < 256 ? 1 : 61) {
		n = n < obj_len ? n : obj_len; /* the whole object last */
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, obj, n);
		struct bk_module_image im = { .size = sizeof(im), .name = "cut", .image = cut, .len = n };
		int err = bk_space_add_module_image(s, &im);
		err ? errors++ : ok++;
		CHECK(err <= 0, "cut at %zu: %d", n, err);
		free(cut);
		if (n == obj_len)
			break;
	}
	CHECK(ok >= 1 && errors >= 64, "cuts: %u added, %u refused", ok, errors);
	uint8_t *bad = malloc(obj_len);
	for (size_t at = 0; at < 64 + 16; at++) {
		memcpy(bad, obj, obj_len);
		bad[at] ^= 0xff;
		struct bk_module_image im = { .size = sizeof(im), .name = "flip", .image = bad,
					      .len = obj_len };
		CHECK(bk_space_add_module_image(s, &im) <= 0, "flipped byte %zu", at);
	}
	free(bad);
	bk_space_destroy(s);
}

static void local_space(void)
{
	struct bk_space *s = NULL;
	CHECK_INT(bk_space_create_local(&s), 0, "local space");
	struct bk_gdb_jit_stats st = { .size = sizeof(st) };
	CHECK_INT(bk_space_add_gdb_jit(s, &st), BK_E_UNSUPPORTED, "not on a local space");
	st.size = 3;
	CHECK_INT(bk_space_add_gdb_jit(s, &st), BK_E_INVAL, "stats too small");
	bk_space_destroy(s);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_gdbjit GDBJIT_OBJ.o\n");
		return 2;
	}
	dl_iterate_phdr(find_self, NULL);
	load_object(argv[1]);
	added_and_walked();
	two_entries();
	lists_that_lie();
	cut_objects();
	local_space();
	free(obj);
	return check_summary();
}
